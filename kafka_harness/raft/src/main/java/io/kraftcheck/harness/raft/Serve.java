package io.kraftcheck.harness.raft;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.raft.KraftAccess;
import org.apache.kafka.raft.QuorumState;

/**
 * Scripted mode (README.md "serve"): one JSON command per line on stdin, one JSON answer per line
 * on stdout: {"ok": true, "steps": [{"action", "params", "state", "time_ms"}...], "state": {...}}
 * (the spec steps the command produced, in order, and the projected state after it), or
 * {"ok": false, "error": "..."}; the session goes on after an error.  Commands: init, deliver,
 * timeout, drop, duplicate, restart, lose-disk, client, resign, advance, state, restore.  Every
 * answer carries "state_sha": the SHA-256 (hex) of the projected state's canonical JSON, so a
 * restore (a whole command log replayed in one command, its steps not answered) can be checked
 * against the state the individual commands reached.
 */
final class Serve {
    private final Map<String, String> opts;
    private Cluster cluster;
    private final List<Map<String, Object>> steps = new ArrayList<>();
    private Map<String, Object> lastState;
    /** Inside a restore: steps are not collected (only the last state is kept). */
    private boolean quiet;

    Serve(Map<String, String> opts) {
        this.opts = opts;
    }

    void run() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            TreeMap<String, Object> answer = new TreeMap<>();
            steps.clear();
            try {
                JsonNode cmd = Projection.JSON.readTree(line);
                handle(cmd);
                answer.put("ok", true);
                answer.put("steps", new ArrayList<>(steps));
                if (!"restore".equals(cmd.path("cmd").asText())) {
                    answer.put("state", lastState);
                }
                answer.put("state_sha", sha(lastState));
            } catch (Cluster.KafkaFailure | Cluster.BoundExceeded | IllegalArgumentException
                     | IllegalStateException | com.fasterxml.jackson.core.JsonProcessingException e) {
                answer.put("ok", false);
                answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
                answer.put("steps", new ArrayList<>(steps));
            }
            out.println(Projection.json(answer));
        }
    }

    private static String text(JsonNode cmd, String field) {
        JsonNode n = cmd.get(field);
        if (n == null || !n.isTextual()) {
            throw new IllegalArgumentException("command needs a string field \"" + field + "\"");
        }
        return n.asText();
    }

    private static List<String> names(JsonNode cmd, String field, String dflt) {
        JsonNode n = cmd.get(field);
        if (n == null) {
            return Main.list(dflt);
        }
        List<String> out = new ArrayList<>();
        n.forEach(x -> out.add(x.asText()));
        return out;
    }

    private Replica node(JsonNode cmd) {
        Replica r = cluster.byName.get(text(cmd, "node"));
        if (r == null) {
            throw new IllegalArgumentException("no replica " + cmd.get("node"));
        }
        return r;
    }

    private Network.Msg msg(JsonNode cmd) {
        JsonNode m = cmd.get("msg");
        if (m == null || !m.isObject()) {
            throw new IllegalArgumentException("command needs a \"msg\" object (a spec message record)");
        }
        String key = Projection.json(Projection.JSON.convertValue(m, Object.class));
        Network.Msg found = cluster.net.find(key);
        if (found == null) {
            throw new IllegalArgumentException("no message in flight equals " + key);
        }
        return found;
    }

    private void need() {
        if (cluster == null) {
            throw new IllegalStateException("send init first");
        }
    }

    private void handle(JsonNode cmd) {
        String c = text(cmd, "cmd");
        if (!"init".equals(c) && !"restore".equals(c)) {
            need();     // a restore starts from its log's init
        }
        switch (c) {
            case "init": {
                long seed = cmd.has("seed") ? cmd.get("seed").asLong() : 0L;
                String plant = cmd.has("plant") && !cmd.get("plant").isNull()
                    ? Main.plant(Map.of("plant", cmd.get("plant").asText())) : Main.plant(opts);
                cluster = new Cluster(names(cmd, "voters", opts.getOrDefault("voters", "n1,n2,n3")),
                    names(cmd, "observers", opts.getOrDefault("observers", "")),
                    new Random(seed), null, plant, this::onStep);
                cluster.autoClock = false;
                cluster.init();
                break;
            }
            case "deliver": {
                Network.Msg m = msg(cmd);
                Replica to = cmd.has("to") ? cluster.byName.get(cmd.get("to").asText()) : m.dest;
                if (to == null) {
                    throw new IllegalArgumentException("no replica " + cmd.get("to"));
                }
                // "read_limit": the batches the receiver's log read returns while it handles
                // this message (a leader answering a Fetch with that many records: Kafka's fetch
                // max bytes; HarnessLog.readLimit), for this delivery only
                int limit = cmd.has("read_limit") ? cmd.get("read_limit").asInt() : 1;
                if (limit < 1) {
                    throw new IllegalArgumentException("read_limit must be at least 1");
                }
                HarnessLog log = to.log;
                int before = log.readLimit;
                if (cmd.has("read_limit")) {
                    log.readLimit = limit;
                }
                try {
                    cluster.deliver(m, to);
                } finally {
                    log.readLimit = before;
                }
                break;
            }
            case "drop":
                cluster.drop(msg(cmd));
                break;
            case "duplicate":
                cluster.duplicate(msg(cmd));
                break;
            case "timeout":
                timeout(node(cmd));
                break;
            case "advance": {
                Replica r = node(cmd);
                SteerableRandom steer = fetchTo(cmd, r);
                try {
                    r.clock.advanceTo(r.clock.milliseconds() + cmd.get("ms").asLong());
                    cluster.nowMs = Math.max(cluster.nowMs, r.clock.milliseconds());
                    cluster.settle(r);
                } finally {
                    if (steer != null) {
                        steer.unsteer();
                    }
                }
                break;
            }
            case "restart": {
                Replica r = node(cmd);
                cluster.crash(r);
                cluster.restart(r, false);
                break;
            }
            case "lose-disk": {
                Replica r = node(cmd);
                cluster.crash(r);
                cluster.restart(r, true);
                break;
            }
            case "client": {
                Replica r = node(cmd);
                if (!cluster.clientRequest(r, text(cmd, "value"))) {
                    throw new IllegalStateException(r.name + " is not a leader that can append");
                }
                break;
            }
            case "resign": {
                Replica r = node(cmd);
                if (!cluster.resign(r)) {
                    throw new IllegalStateException(r.name + " is not a leader");
                }
                break;
            }
            case "state":
                break;
            case "restore":
                restore(cmd);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + c);
        }
        if (lastState == null) {
            lastState = new TreeMap<>();
        }
    }

    /**
     * {@code {"cmd":"restore","log":[init, cmd, ...]}}: a new cluster from the log's init command,
     * then every command of the log, exactly as if each had been sent on its own line (the same
     * code, the same seeded Randoms and clocks), but without collecting the steps: the answer
     * carries no steps and no state, only {@code state_sha} of the state reached (the driver
     * compares it with the one it saw when it took the snapshot).  A command the log's replay
     * refuses is an error naming its index (the cluster is then left where it stopped).
     */
    private void restore(JsonNode cmd) {
        JsonNode log = cmd.get("log");
        if (log == null || !log.isArray() || log.size() == 0
                || !"init".equals(log.get(0).path("cmd").asText())) {
            throw new IllegalArgumentException("restore needs a \"log\" array starting with an init command");
        }
        quiet = true;
        try {
            for (int i = 0; i < log.size(); i++) {
                JsonNode c = log.get(i);
                if ("restore".equals(c.path("cmd").asText())) {
                    throw new IllegalArgumentException("restore: log[" + i + "] is a restore");
                }
                try {
                    handle(c);
                } catch (RuntimeException e) {
                    throw new IllegalStateException("restore: log[" + i + "] (" + c.path("cmd").asText()
                        + ") failed: " + e.getClass().getSimpleName() + ": " + e.getMessage(), e);
                }
            }
        } finally {
            quiet = false;
        }
    }

    /** SHA-256 (hex) of the state's canonical JSON (Projection.json: sorted keys, compact). */
    static String sha(Map<String, Object> state) {
        if (state == null) {
            return null;
        }
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256")
                .digest(Projection.json(state).getBytes(StandardCharsets.UTF_8));
            StringBuilder b = new StringBuilder(64);
            for (byte x : d) {
                b.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
            }
            return b.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code "fetch_to": VOTER} of an advance at an observer: its next random voter choice
     *  (RequestManager.findReadyVoter draws {@code nextInt(voters)} and, every voter ready, takes
     *  the voter before the drawn index) is steered to that voter -- one of the "any of the voters
     *  at random" (KIP-595 "BeginQuorumEpoch") that the seeded Random might have drawn. */
    private SteerableRandom fetchTo(JsonNode cmd, Replica r) {
        if (!cmd.has("fetch_to") || cmd.get("fetch_to").isNull()) {
            return null;
        }
        Replica to = cluster.byName.get(cmd.get("fetch_to").asText());
        if (to == null || !to.voter) {
            throw new IllegalArgumentException("fetch_to: no voter " + cmd.get("fetch_to"));
        }
        if (r.voter || !(r.random instanceof SteerableRandom)) {
            throw new IllegalArgumentException("fetch_to: " + r.name + " is not an observer");
        }
        List<Integer> ids = new ArrayList<>();
        for (Replica x : cluster.byName.values()) {
            if (x.voter) {
                ids.add(x.id);
            }
        }
        java.util.Collections.sort(ids);   // Kafka's voter list: the ids of a HashSet, ascending
        SteerableRandom steer = (SteerableRandom) r.random;
        steer.steer(ids.size(), (ids.indexOf(to.id) + 1) % ids.size());
        return steer;
    }

    /** Fire the replica's current timer: move its clock forward 50 ms at a time (at most 10 s)
     *  until its epoch or role changes. */
    private void timeout(Replica r) {
        if (!r.up) {
            throw new IllegalStateException(r.name + " is down");
        }
        QuorumState q = KraftAccess.quorum(r.client);
        int epoch = q.epoch();
        String role = cluster.views().get(r.name).role;
        long start = r.clock.milliseconds();
        while (r.clock.milliseconds() - start < 10_000) {
            r.clock.advanceTo(r.clock.milliseconds() + 50);
            cluster.nowMs = Math.max(cluster.nowMs, r.clock.milliseconds());
            cluster.settle(r);
            if (q != KraftAccess.quorum(r.client) || KraftAccess.quorum(r.client).epoch() != epoch
                    || !role.equals(cluster.views().get(r.name).role)) {
                return;
            }
        }
        throw new IllegalStateException(r.name + "'s timer did not fire within 10 s");
    }

    private void onStep(String action, Map<String, Object> params, Map<String, Object> state, long timeMs) {
        lastState = state;
        if (quiet) {
            return;
        }
        TreeMap<String, Object> s = new TreeMap<>();
        s.put("action", action);
        s.put("params", params);
        s.put("state", state);
        s.put("time_ms", timeMs);
        steps.add(s);
        lastState = state;
    }
}
