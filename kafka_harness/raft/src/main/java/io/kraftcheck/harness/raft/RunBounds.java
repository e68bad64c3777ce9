package io.kraftcheck.harness.raft;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The constants of a TLC config (BOUNDS.json, written by the Python side:
 * {"config": NAME, "constants": {...}}) that bound a run, as refimpl/sim/bounds.py and
 * refimpl/kraft/adapter.py (KRaftBounds) read them: servers, observers, values, MaxEpoch,
 * MaxLogLength, MaxRestarts, MaxInFlight, TimeoutVoters, MaxClientRequests.  Sets may be JSON
 * arrays or {"#set": [...]}.  Two more the harness honours: MisconfiguredServers (those replicas
 * are formatted with another cluster id, MCKRaft's MCClusterOf "cluster-B") and the switch
 * KafkaFetchReturnsBatches (TRUE: a leader's read returns what Kafka's MockLog returns, up to two
 * batches, where the spec's FetchResponse without the switch carries one record).  A config
 * without Max* constants bounds nothing but the cluster (an unbounded run of that topology).
 */
final class RunBounds {
    final String config;
    final TreeMap<String, Object> constants = new TreeMap<>();
    List<String> voters;
    List<String> observers = new ArrayList<>();
    List<String> values;
    TreeSet<String> timeoutVoters;
    Integer maxEpoch;
    Integer maxLog;
    Integer maxRestarts;
    Integer maxInFlight;
    Integer maxClientRequests;
    List<String> misconfigured = new ArrayList<>();
    boolean fetchReturnsBatches;

    private RunBounds(String config) {
        this.config = config;
    }

    static RunBounds read(File f) {
        JsonNode root;
        try {
            root = Projection.JSON.readTree(f);
        } catch (IOException e) {
            throw new IllegalArgumentException(f + ": not JSON: " + e.getMessage());
        }
        JsonNode c = root.get("constants");
        if (c == null || !c.isObject()) {
            throw new IllegalArgumentException(f + ": no \"constants\" object");
        }
        RunBounds b = new RunBounds(root.has("config") ? root.get("config").asText() : f.getName());
        Iterator<Map.Entry<String, JsonNode>> it = c.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            b.constants.put(e.getKey(), Projection.JSON.convertValue(e.getValue(), Object.class));
        }
        b.voters = names(f, c, "Voters", "Server", "Servers", "Replicas");
        if (b.voters == null || b.voters.isEmpty()) {
            throw new IllegalArgumentException(f + ": constants: no server set (Voters)");
        }
        List<String> obs = names(f, c, "Observers", "Observer");
        if (obs != null) {
            for (String o : obs) {
                if (!b.voters.contains(o)) {
                    b.observers.add(o);
                }
            }
        }
        b.values = names(f, c, "Values", "Value", "ClientValues");
        List<String> tv = names(f, c, "TimeoutVoters");
        b.timeoutVoters = tv == null ? null : new TreeSet<>(tv);
        b.maxEpoch = integer(f, c, "MaxEpoch", "MaxTerm");
        b.maxLog = integer(f, c, "MaxLogLength", "MaxLogLen", "MaxLog");
        b.maxRestarts = integer(f, c, "MaxRestarts", "MaxCrashes");
        b.maxInFlight = integer(f, c, "MaxInFlight", "MaxMessages", "MaxMsgs");
        b.maxClientRequests = integer(f, c, "MaxClientRequests", "MaxAppends");
        List<String> mis = names(f, c, "MisconfiguredServers");
        if (mis != null) {
            for (String m : mis) {
                if (!b.voters.contains(m) && !b.observers.contains(m)) {
                    throw new IllegalArgumentException(f + ": constants.MisconfiguredServers: " + m
                        + " is neither a voter nor an observer");
                }
                b.misconfigured.add(m);
            }
        }
        JsonNode batches = c.get("KafkaFetchReturnsBatches");
        if (batches != null && !batches.isBoolean()) {
            throw new IllegalArgumentException(f + ": constants.KafkaFetchReturnsBatches must be TRUE or FALSE");
        }
        b.fetchReturnsBatches = batches != null && batches.asBoolean();
        return b;
    }

    private static List<String> names(File f, JsonNode c, String... keys) {
        for (String k : keys) {
            JsonNode n = c.get(k);
            if (n == null) {
                continue;
            }
            JsonNode arr = n.isObject() && n.has("#set") ? n.get("#set") : n;
            if (!arr.isArray()) {
                throw new IllegalArgumentException(f + ": constants." + k + " must be a set of names");
            }
            TreeSet<String> s = new TreeSet<>();
            for (JsonNode x : arr) {
                if (!x.isTextual()) {
                    throw new IllegalArgumentException(f + ": constants." + k + ": " + x + " is not a name");
                }
                s.add(x.asText());
            }
            return new ArrayList<>(s);
        }
        return null;
    }

    private static Integer integer(File f, JsonNode c, String... keys) {
        for (String k : keys) {
            JsonNode n = c.get(k);
            if (n == null) {
                continue;
            }
            if (!n.isInt() || n.asInt() < 0) {
                throw new IllegalArgumentException(f + ": constants." + k + " must be an integer >= 0");
            }
            return n.asInt();
        }
        return null;
    }
}
