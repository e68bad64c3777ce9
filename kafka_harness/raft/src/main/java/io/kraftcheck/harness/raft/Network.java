package io.kraftcheck.harness.raft;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.raft.NetworkChannel;
import org.apache.kafka.raft.RaftConfig;
import org.apache.kafka.raft.RaftRequest;

/**
 * The harness's network: every message in flight, in send order (a LinkedHashMap keyed by a
 * sequence number, so iteration never depends on hashing).  Each entry is one copy of a Kafka
 * message (its ApiMessage, correlation id, source and destination) with its spec record
 * (Projection.message).  "Visible" entries are the spec's msgs bag; the others are Kafka messages
 * the spec does not model (the EndQuorumEpoch response, Fetch errors that carry nothing), which
 * the harness still carries to Kafka, outside the bag.
 */
final class Network {
    static final class Msg {
        final long id;
        final Replica src;
        final Replica dest;
        final boolean request;
        final int correlationId;
        final ApiMessage data;
        final Map<String, Object> spec;     // the spec's message record
        final String specJson;              // its canonical JSON
        final boolean visible;

        Msg(long id, Replica src, Replica dest, boolean request, int correlationId, ApiMessage data,
            Map<String, Object> spec, String specJson, boolean visible) {
            this.id = id;
            this.src = src;
            this.dest = dest;
            this.request = request;
            this.correlationId = correlationId;
            this.data = data;
            this.spec = spec;
            this.specJson = specJson;
            this.visible = visible;
        }
    }

    interface SendListener {
        void onSend(Replica from, RaftRequest.Outbound request);
    }

    private final LinkedHashMap<Long, Msg> inFlight = new LinkedHashMap<>();
    private long nextId;
    private int nextCorrelationId;
    private final SendListener listener;

    Network(SendListener listener) {
        this.listener = listener;
    }

    /** The NetworkChannel a replica's client sends through (correlation ids are global, so a
     *  response from before a restart never matches a request after it). */
    NetworkChannel channel(Replica r) {
        return new NetworkChannel() {
            @Override
            public int newCorrelationId() {
                return nextCorrelationId++;
            }

            @Override
            public void send(RaftRequest.Outbound request) {
                listener.onSend(r, request);
            }

            @Override
            public void updateEndpoint(int id, RaftConfig.InetAddressSpec address) {
            }
        };
    }

    Msg add(Replica src, Replica dest, boolean request, int corr, ApiMessage data,
            Map<String, Object> spec, String specJson, boolean visible) {
        Msg m = new Msg(nextId++, src, dest, request, corr, data, spec, specJson, visible);
        inFlight.put(m.id, m);
        return m;
    }

    Msg copy(Msg m) {
        return add(m.src, m.dest, m.request, m.correlationId, m.data, m.spec, m.specJson, m.visible);
    }

    boolean contains(Msg m) {
        return inFlight.containsKey(m.id);
    }

    void remove(Msg m) {
        inFlight.remove(m.id);
    }

    int visibleCount() {
        int n = 0;
        for (Msg m : inFlight.values()) {
            if (m.visible) {
                n++;
            }
        }
        return n;
    }

    boolean visibleInFlight(String specJson) {
        for (Msg m : inFlight.values()) {
            if (m.visible && m.specJson.equals(specJson)) {
                return true;
            }
        }
        return false;
    }

    List<Msg> all() {
        return new ArrayList<>(inFlight.values());
    }

    /** The first in-flight copy whose spec record is {@code specJson} (serve mode). */
    Msg find(String specJson) {
        for (Msg m : inFlight.values()) {
            if (m.specJson.equals(specJson)) {
                return m;
            }
        }
        return null;
    }
}
