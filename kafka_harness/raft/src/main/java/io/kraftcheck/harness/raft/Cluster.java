package io.kraftcheck.harness.raft;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.raft.KraftAccess;
import org.apache.kafka.raft.QuorumState;
import org.apache.kafka.raft.RaftConfig;
import org.apache.kafka.raft.RaftRequest;
import org.apache.kafka.raft.RaftResponse;

/**
 * N KafkaRaftClients over the harness's network, driven one event at a time, and the step
 * recorder that turns what they do into spec steps (README.md "Steps").  Every Kafka event is one
 * poll() of one replica with at most one inbound message; inside a poll the harness observes
 * every send (NetworkChannel.send) and the end of the poll, and writes one line per spec step:
 * <ul>
 * <li>a state change before a send, or at the end of the poll, is the step of the poll's context
 *     (Timeout for a timer poll, Receive* for the delivered message, ClientRequest); in a
 *     delivery poll, a change before Kafka takes the message (its timer work) is a Timeout of its
 *     own, written first (beforeInbound);</li>
 * <li>each send is a Send* step (DuplicateMessage if the same spec message is already in
 *     flight: the spec's Send never adds a second copy);</li>
 * <li>composite step: a winning VoteResponse and the next poll's append of the LeaderChange
 *     record are one ReceiveVoteResponse (the intermediate Leader without its LeaderChange
 *     record is never written);</li>
 * <li>a leader's transition to Resigned is Resign (RaftClient.resign) or LeaderProgressTimeout
 *     (the check-quorum timer), its EndQuorumEpoch requests later SendEndQuorumEpoch steps;</li>
 * <li>a state that equals the last one written is a stutter and is not written.</li>
 * </ul>
 */
final class Cluster implements Network.SendListener {
    interface Sink {
        void step(String action, Map<String, Object> params, Map<String, Object> state, long timeMs);
    }

    interface MessageListener {
        void onNew(Network.Msg m);
    }

    /** The next step would leave the bounds of the TLC config (the run ends before it). */
    static final class BoundExceeded extends RuntimeException {
        BoundExceeded(String why) {
            super(why);
        }
    }

    /** Kafka threw while handling an event (the run ends; the raw stream says why). */
    static final class KafkaFailure extends RuntimeException {
        final Replica replica;

        KafkaFailure(Replica replica, String why, Throwable cause) {
            super(why, cause);
            this.replica = replica;
        }
    }

    final List<Replica> replicas = new ArrayList<>();
    final Map<String, Replica> byName = new TreeMap<>();
    final Map<Integer, Replica> byId = new TreeMap<>();
    final Network net = new Network(this);
    final Projection proj;
    final RaftConfig config;
    final Random random;
    final RunBounds bounds;     // null: unbounded
    final String plant;
    final Sink sink;
    MessageListener messages = m -> { };
    long nowMs;
    long steps;                 // spec steps written (Init excluded)
    long actions;               // harness actions (steps + stutters)
    long lastStepMs;            // virtual time of the last step written

    private Map<String, Projection.View> lastViews;
    /** The last state written (maps and lists built afresh by Projection.state, never changed
     *  afterwards): a new state equal to it is a stutter.  Comparing the maps rather than their
     *  canonical JSON saves two serializations per poll (most of serve mode's restore). */
    private Map<String, Object> lastState;

    // the context of the poll in progress
    private Replica ctxNode;
    private String ctxAction;
    private Map<String, Object> ctxParams;
    private Network.Msg ctxRequest;
    private int sendsThisPoll;
    private final Set<String> gracefulResign = new HashSet<>();

    Cluster(List<String> voters, List<String> observers, Random random, RunBounds bounds,
            String plant, Sink sink) {
        this.random = random;
        this.bounds = bounds;
        this.plant = plant;
        this.sink = sink;
        Map<Integer, RaftConfig.AddressSpec> addresses = new LinkedHashMap<>();
        int id = 1;
        for (String v : voters) {
            Replica r = new Replica(v, id, true, 0L, plant);
            addresses.put(id, new RaftConfig.InetAddressSpec(
                java.net.InetSocketAddress.createUnresolved("localhost", 9990 + id)));
            add(r);
            id++;
        }
        id = 101;
        for (String o : observers) {
            add(new Replica(o, id++, false, 0L, plant));
        }
        this.config = new RaftConfig(addresses, Replica.REQUEST_TIMEOUT_MS, Replica.RETRY_BACKOFF_MS,
            Replica.ELECTION_TIMEOUT_MS, Replica.ELECTION_BACKOFF_MAX_MS, Replica.FETCH_TIMEOUT_MS,
            Replica.LINGER_MS);
        this.proj = new Projection(replicas);
        for (Replica r : replicas) {
            r.log.listener = this::beforeHighWatermark;
        }
        if (bounds != null) {
            misconfigure(bounds.misconfigured);
            readBatches(bounds.fetchReturnsBatches ? BATCHES : 1);
        }
    }

    /** Under KafkaFetchReturnsBatches a read returns every record up to the log end (Kafka's
     *  fetch max bytes, 8 MiB, holds any log of a run). */
    static final int BATCHES = Integer.MAX_VALUE;

    /** Format these replicas with another cluster id (before init; MCKRaft MisconfiguredServers). */
    void misconfigure(List<String> names) {
        for (String n : names) {
            Replica r = byName.get(n);
            if (r == null) {
                throw new IllegalArgumentException("misconfigured replica " + n + " is not in the cluster");
            }
            r.clusterId = Replica.OTHER_CLUSTER_ID;
        }
    }

    /** How many batches (= records: one value per batch) a leader's read returns at most: 1 (the
     *  default, the spec's one-record FetchResponse) or more (KafkaFetchReturnsBatches). */
    void readBatches(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("read batches must be at least 1, not " + n);
        }
        for (Replica r : replicas) {
            r.readBatches = n;
            r.log.readLimit = n;
        }
    }

    private void add(Replica r) {
        replicas.add(r);
        byName.put(r.name, r);
        byId.put(r.id, r);
    }

    // ------------------------------------------------------------------ recording

    Map<String, Object> msgParams(Network.Msg m, Replica node) {
        TreeMap<String, Object> p = new TreeMap<>();
        p.put("msg", m.spec);
        if (node != null) {
            p.put("node", node.name);
        }
        return p;
    }

    static Map<String, Object> nodeParams(Replica r) {
        TreeMap<String, Object> p = new TreeMap<>();
        p.put("node", r.name);
        return p;
    }

    /** Write the current state as a step if it differs from the last one (or {@code force}). */
    boolean record(String action, Map<String, Object> params, Replica actor, boolean force) {
        actions++;
        Map<String, Projection.View> views = proj.views(lastViews);
        if (!force && proj.state(views, net).equals(lastState)) {
            return false;
        }
        checkBounds(views);
        lastViews = views;
        proj.afterStep(action, actor, views);
        if (!"Init".equals(action)) {
            steps++;
        }
        TreeMap<String, Object> state = proj.state(views, net);
        lastState = state;
        lastStepMs = nowMs;
        sink.step(action, params, state, nowMs);
        return true;
    }

    private void checkBounds(Map<String, Projection.View> views) {
        if (bounds == null) {
            return;
        }
        for (Map.Entry<String, Projection.View> e : views.entrySet()) {
            Projection.View v = e.getValue();
            if (bounds.maxEpoch != null && v.epoch > bounds.maxEpoch) {
                throw new BoundExceeded(e.getKey() + " would enter epoch " + v.epoch + " > MaxEpoch");
            }
            if (bounds.maxEpoch != null && bounds.maxLog != null
                    && v.log.size() > bounds.maxLog + bounds.maxEpoch) {
                throw new BoundExceeded(e.getKey() + "'s log would exceed MaxLogLength + MaxEpoch");
            }
        }
        if (bounds.maxInFlight != null && net.visibleCount() > bounds.maxInFlight) {
            throw new BoundExceeded("more than MaxInFlight messages in flight");
        }
    }

    // ------------------------------------------------------------------ Kafka events

    /** Init is the replicas' disks before Kafka starts (an empty log and quorum-state file: the
     *  spec's Init); KafkaRaftClient.initialize then runs, and what it does on its own (a lone
     *  voter becomes candidate and leader at once) is the first poll's Timeout step. */
    void init() {
        record("Init", new TreeMap<>(), null, true);
        for (Replica r : replicas) {
            r.start(net, config, new SteerableRandom(random.nextLong()), this::beforeInbound);
        }
        for (Replica r : replicas) {
            if (isPendingLeader(r)) {
                settle(r);      // a lone voter: its election and LeaderChange, before anyone acts
            }
        }
    }

    boolean isPendingLeader(Replica r) {
        QuorumState q = KraftAccess.quorum(r.client);
        return q.isLeader() && r.log.endOffset().offset == KraftAccess.epochStartOffset(q);
    }

    /** Simulate mode: a replica's clock follows the global time whenever it acts.  Serve mode:
     *  clocks move only when a command says so (timeout, advance). */
    boolean autoClock = true;

    /** Move the replica's clock to now; under bounds, hold the timers that would take it out. */
    void advanceClock(Replica r) {
        if (!autoClock) {
            return;
        }
        r.clock.advanceTo(nowMs);
        holdTimers(r);
    }

    /**
     * Bounded runs stay inside the bounds by never letting a voter's election (or, at MaxEpoch,
     * its leader's check-quorum) timer expire where the spec's step would leave them: a voter
     * outside TimeoutVoters, or one whose next election would enter MaxEpoch + 1 (refimpl
     * KRaftAdapter._timer_allowed / _within).  Everything else of the replica runs on its clock:
     * request time-outs and re-sends, back-offs, fetching, so the run goes on inside the bounds.
     * Called before every poll (ticks come every 5-15 ms, the timers are 1-3 s).
     */
    void holdTimers(Replica r) {
        if (bounds == null || !r.voter || !r.up) {
            return;
        }
        QuorumState q = KraftAccess.quorum(r.client);
        boolean atMax = bounds.maxEpoch != null && q.epoch() >= bounds.maxEpoch;
        boolean noTimeout = bounds.timeoutVoters != null && !bounds.timeoutVoters.contains(r.name);
        if (atMax || noTimeout) {
            KraftAccess.holdTimers(q, r.clock.milliseconds(), HOLD_MS, atMax);
        }
    }

    static final long HOLD_MS = 60_000;

    private void poll(Replica r, String action, Map<String, Object> params, Network.Msg request) {
        ctxNode = r;
        ctxAction = action;
        ctxParams = params;
        ctxRequest = request;
        sendsThisPoll = 0;
        try {
            r.client.poll();
        } catch (BoundExceeded e) {
            throw e;
        } catch (RuntimeException e) {
            // Kafka's raft thread is dead and the broker stops (its fault handler exits the
            // process): what the poll changed before the throw is written under the poll's
            // action, the crash itself is a stutter
            takeFromNetwork(ctxRequest);
            record(ctxAction, ctxParams, r, false);
            crash(r);
            ctxNode = null;
            throw new KafkaFailure(r, r.name + " threw " + e.getClass().getSimpleName() + ": "
                + e.getMessage(), e);
        }
        endOfPoll(r);
        ctxNode = null;
    }

    private void endOfPoll(Replica r) {
        if (isPendingLeader(r)) {
            return;         // composite: the LeaderChange append of the next poll belongs to it
        }
        record(resignedNow(r) ? resignAction(r) : ctxAction, resignedNow(r) ? nodeParams(r) : ctxParams,
            r, false);
    }

    /**
     * The poll in progress has done its timer work (pollCurrentState) and is about to handle the
     * delivered message: a state change so far is the timer's (e.g. a candidate's back-off or
     * election timer ending in transitionToCandidate, a leader's check-quorum resignation), its own
     * spec step, written before the message's Receive step.
     */
    private void beforeInbound(Replica r) {
        if (ctxNode != r || ctxRequest == null) {
            return;
        }
        if (!isPendingLeader(r)) {
            record(resignedNow(r) ? resignAction(r) : "Timeout", nodeParams(r), r, false);
        }
        takeFromNetwork(ctxRequest);
    }

    /**
     * A leader's high watermark moves in a poll that is not a voter's Fetch: its own flush
     * (KafkaRaftClient.flushLeaderLog -> LeaderState.updateLocalState; only a lone voter's
     * end offset is a majority).  The poll's step so far (the append: ClientRequest, or the
     * lone voter's election Timeout with its LeaderChange record) is written first, the advance
     * is the spec's AdvanceHighWatermarkOnFlush (KafkaLeaderFlushAdvancesHwm, F12).
     */
    private void beforeHighWatermark(Replica r, long offset) {
        if (ctxNode != r || "ReceiveFetchRequest".equals(ctxAction) || isPendingLeader(r)
                || !KraftAccess.quorum(r.client).isLeader() || offset <= r.log.highWatermark().offset) {
            return;
        }
        record(ctxAction, ctxParams, r, false);
        ctxAction = "AdvanceHighWatermarkOnFlush";
        ctxParams = nodeParams(r);
    }

    /** The delivered message leaves the spec's msgs when Kafka takes it (its Receive step). */
    private void takeFromNetwork(Network.Msg m) {
        if (m != null && net.contains(m)) {
            net.remove(m);
        }
    }

    /** Did this poll turn the leader into a Resigned replica (pollLeader.transitionToResigned)? */
    private boolean resignedNow(Replica r) {
        Projection.View old = lastViews.get(r.name);
        return "Leader".equals(old.role) && KraftAccess.quorum(r.client).isResigned();
    }

    /** RaftClient.resign (the harness's graceful resignation) is the spec's Resign; the check-quorum
     *  timer's expiry is LeaderProgressTimeout (KafkaCheckQuorumResigns: it resigns too). */
    private String resignAction(Replica r) {
        return gracefulResign.remove(r.name) ? "Resign" : "LeaderProgressTimeout";
    }

    @Override
    public void onSend(Replica from, RaftRequest.Outbound request) {
        Replica dest = byId.get(request.destinationId());
        if (!isPendingLeader(from) && ctxNode == from) {
            // the poll's state change comes first; before the poll took its inbound message
            // (still queued) it is the timer work's, a Timeout (see beforeInbound)
            boolean timerWork = ctxRequest != null && !from.queue.isEmpty();
            record(resignedNow(from) ? resignAction(from) : timerWork ? "Timeout" : ctxAction,
                resignedNow(from) || timerWork ? nodeParams(from) : ctxParams, from, false);
        }
        sendsThisPoll++;
        Map<String, Object> spec = proj.message(from.name, dest.name, request.data(), null);
        String specJson = Projection.json(spec);
        boolean dup = net.visibleInFlight(specJson);
        if (bounds != null && bounds.maxInFlight != null && net.visibleCount() >= bounds.maxInFlight) {
            actions++;          // lost at the source: a stutter
            return;
        }
        Network.Msg m = net.add(from, dest, true, request.correlationId(), request.data(), spec,
            specJson, true);
        messages.onNew(m);
        String type = (String) spec.get("type");
        if (dup) {
            record("DuplicateMessage", msgParams(m, null), from, false);
        } else {
            record(sendAction(type), msgParams(m, from), from, false);
        }
    }

    static String sendAction(String type) {
        switch (type) {
            case "VoteRequest":
                return "SendVoteRequest";
            case "BeginQuorumEpochRequest":
                return "SendBeginQuorumEpoch";
            case "FetchRequest":
                return "SendFetchRequest";
            case "EndQuorumEpochRequest":
                return "SendEndQuorumEpoch";     // spec: only under KafkaResignedRepeatsEndQuorumEpoch
            default:
                return "Send" + type;
        }
    }

    /** A response Kafka produced for {@code req} (inside the poll that handled it). */
    private void onReply(Replica responder, Network.Msg req, RaftResponse.Outbound resp, Throwable ex) {
        if (ex != null || resp == null) {
            return;
        }
        ApiMessage data = resp.data();
        Map<String, Object> spec = proj.message(responder.name, req.src.name, data, req.spec);
        Network.Msg m = net.add(responder, req.src, false, req.correlationId, data, spec,
            Projection.json(spec), visible(spec));
        messages.onNew(m);
    }

    /**
     * Kafka responses the spec does not model travel outside the bag: Fetch errors that
     * tell the fetcher nothing (KRaft.tla FetchErrorInformative: UNKNOWN_LEADER_EPOCH, or
     * NOT_LEADER_OR_FOLLOWER naming no leader or the fetcher itself).
     */
    static boolean visible(Map<String, Object> spec) {
        String type = (String) spec.get("type");
        if ("FetchResponse".equals(type)) {
            Object err = spec.get("error");
            if ("UNKNOWN_LEADER_EPOCH".equals(err)) {
                return false;
            }
            if ("NOT_LEADER_OR_FOLLOWER".equals(err)) {
                Object l = spec.get("leaderId");
                return !(Projection.NIL.equals(l) || spec.get("dest").equals(l));
            }
        }
        return true;
    }

    /** Poll the replica with no inbound message until it does nothing more (timers, sends). */
    void settle(Replica r) {
        if (!r.up) {
            return;
        }
        advanceClock(r);
        for (int i = 0; i < 12; i++) {
            long before = steps;
            poll(r, "Timeout", nodeParams(r), null);
            if (steps == before && sendsThisPoll == 0 && !isPendingLeader(r)) {
                return;
            }
        }
    }

    /** Deliver one message to {@code target} (its destination, unless the network misdelivers). */
    void deliver(Network.Msg m, Replica target) {
        if (!net.contains(m)) {
            return;
        }
        if (!target.up) {
            drop(m);
            return;
        }
        settle(target);
        if (!net.contains(m)) {
            return;
        }
        boolean misdelivered = target != m.dest;
        if (!m.request && !misdelivered
                && !KraftAccess.responseExpected(target.client, m.src.id, m.correlationId)) {
            drop(m);    // Kafka ignores a response it no longer expects: the network lost it
            return;
        }
        // m leaves the network when the poll takes it (beforeInbound), after the poll's timer work
        if (m.request) {
            RaftRequest.Inbound in = new RaftRequest.Inbound(m.correlationId, dup(m.data),
                target.clock.milliseconds());
            in.completion.whenComplete((resp, ex) -> onReply(target, m, resp, ex));
            target.queue.add(in);
        } else {
            target.queue.add(new RaftResponse.Inbound(m.correlationId, dup(m.data), m.src.id));
        }
        String action = "Receive" + m.spec.get("type");
        poll(target, action, msgParams(m, target), m);
        takeFromNetwork(m);
        for (int i = 0; i < 3 && isPendingLeader(target); i++) {
            poll(target, action, msgParams(m, target), m);
        }
        settle(target);
    }

    private static ApiMessage dup(ApiMessage data) {
        return (ApiMessage) data.duplicate();
    }

    void drop(Network.Msg m) {
        if (!net.contains(m)) {
            return;
        }
        net.remove(m);
        if (m.visible) {
            record("DropMessage", msgParams(m, null), null, false);
        }
    }

    /** One more copy of {@code m} in flight (null if the bounds forbid it). */
    Network.Msg duplicate(Network.Msg m) {
        if (!net.contains(m)) {
            return null;
        }
        if (m.visible && bounds != null && bounds.maxInFlight != null
                && net.visibleCount() >= bounds.maxInFlight) {
            return null;
        }
        Network.Msg c = net.copy(m);
        if (m.visible) {
            record("DuplicateMessage", msgParams(c, null), null, false);
        }
        return c;
    }

    /** The quorum state of a running replica that is an established leader (its LeaderChange
     *  record appended), after settling its pending work; null otherwise. */
    private QuorumState settledLeader(Replica r) {
        if (!r.up) {
            return null;
        }
        settle(r);
        QuorumState q = KraftAccess.quorum(r.client);
        return q.isLeader() && !isPendingLeader(r) ? q : null;
    }

    /** A client record appended by the leader (scheduleAppend, drained by the next poll). */
    boolean clientRequest(Replica r, String value) {
        QuorumState q = settledLeader(r);
        if (q == null) {
            return false;
        }
        r.client.scheduleAppend(q.epoch(), Collections.singletonList(value));
        TreeMap<String, Object> p = new TreeMap<>();
        p.put("node", r.name);
        p.put("value", value);
        poll(r, "ClientRequest", p, null);
        settle(r);
        return true;
    }

    /** Graceful resignation (RaftClient.resign): the next poll resigns, the one after sends
     *  EndQuorumEpoch; written as the spec's Resign. */
    boolean resign(Replica r) {
        QuorumState q = settledLeader(r);
        if (q == null) {
            return false;
        }
        gracefulResign.add(r.name);
        r.client.resign(q.epoch());
        settle(r);
        gracefulResign.remove(r.name);
        return true;
    }

    void crash(Replica r) {
        r.crash();
        actions++;      // a stutter: the spec's Restart is crash and recovery in one step
    }

    void restart(Replica r, boolean loseDisk) {
        if (loseDisk) {
            r.loseDisk(plant);
        } else {
            r.log.reopen();
            r.store.onRestart();
        }
        advanceClock(r);
        try {
            r.start(net, config, new SteerableRandom(random.nextLong()), this::beforeInbound);
        } catch (RuntimeException e) {
            r.crash();
            throw new KafkaFailure(r, r.name + " failed to restart: " + e, e);
        }
        record(loseDisk ? "LoseDisk" : "Restart", nodeParams(r), r, true);
        settle(r);
    }

    Map<String, Projection.View> views() {
        return lastViews;
    }

    String role(Replica r) {
        return lastViews.get(r.name).role;
    }
}
