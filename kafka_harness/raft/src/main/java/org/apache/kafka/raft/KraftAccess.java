package org.apache.kafka.raft;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.memory.MemoryPool;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.serialization.RecordSerde;

/**
 * The harness's window on Kafka's package-private raft state (this class lives in Kafka's package
 * {@code org.apache.kafka.raft} so that it can call package-private constructors and methods; the
 * jars are plain classpath jars).  Read-only except {@link #newClient}.
 *
 * <p>Reflection is used for private fields that have no accessor in 3.7:
 * {@code KafkaRaftClient.requestManager} (to ask whether a response is still expected, i.e. its
 * correlation id is the outstanding one), {@code LeaderState.fetchedVoters} (the check-quorum
 * window, the spec's fetchedSinceCheck), and the election / check-quorum {@code Timer}s of the
 * epoch states, which {@link #holdTimers} pushes back (bounded runs; FollowerState has a public
 * {@code resetFetchTimeout}, used instead).
 */
public final class KraftAccess {
    private KraftAccess() { }

    private static final Field REQUEST_MANAGER = field(KafkaRaftClient.class, "requestManager");
    private static final Field FETCHED_VOTERS = field(LeaderState.class, "fetchedVoters");
    private static final Field UNATTACHED_TIMER = field(UnattachedState.class, "electionTimer");
    private static final Field VOTED_TIMER = field(VotedState.class, "electionTimer");
    private static final Field CANDIDATE_TIMER = field(CandidateState.class, "electionTimer");
    private static final Field CANDIDATE_BACKOFF = field(CandidateState.class, "backoffTimer");
    private static final Field RESIGNED_TIMER = field(ResignedState.class, "electionTimer");
    private static final Field CHECK_QUORUM_TIMER = field(LeaderState.class, "checkQuorumTimer");

    private static Field field(Class<?> c, String name) {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException("Kafka class " + c.getName() + " has no field " + name
                + " (not the Kafka version this harness was written for)", e);
        }
    }

    /** KafkaRaftClient's package-private constructor (the one RaftEventSimulationTest uses). */
    public static <T> KafkaRaftClient<T> newClient(RecordSerde<T> serde, NetworkChannel channel,
            RaftMessageQueue queue, ReplicatedLog log, QuorumStateStore store, MemoryPool pool,
            Time time, Metrics metrics, ExpirationService expiration, int fetchMaxWaitMs,
            String clusterId, int nodeId, LogContext logContext, Random random, RaftConfig config) {
        return new KafkaRaftClient<>(serde, channel, queue, log, store, pool, time, metrics,
            expiration, fetchMaxWaitMs, clusterId, OptionalInt.of(nodeId), logContext, random, config);
    }

    public static QuorumState quorum(KafkaRaftClient<?> client) {
        return client.quorum();
    }

    /** Is a response with this correlation id from {@code sourceId} still expected by the client? */
    public static boolean responseExpected(KafkaRaftClient<?> client, int sourceId, int correlationId) {
        try {
            RequestManager rm = (RequestManager) REQUEST_MANAGER.get(client);
            return rm.getOrCreate(sourceId).isResponseExpected(correlationId);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** CandidateState: granting and rejecting voters, and whether a majority is out of reach. */
    public static Set<Integer> granting(QuorumState q) {
        return new TreeSet<>(q.candidateStateOrThrow().grantingVoters());
    }

    public static Set<Integer> rejecting(QuorumState q) {
        return new TreeSet<>(q.candidateStateOrThrow().rejectingVoters());
    }

    public static boolean voteRejected(QuorumState q) {
        return q.candidateStateOrThrow().isVoteRejected();
    }

    /** LeaderState: voters that have not acknowledged the leader (BeginQuorumEpoch or Fetch). */
    public static Set<Integer> nonAcknowledging(QuorumState q) {
        return new TreeSet<>(q.leaderStateOrThrow().nonAcknowledgingVoters());
    }

    /** LeaderState: each voter's end offset as DescribeQuorum reports it (-1: none yet). */
    public static TreeMap<Integer, Long> voterEndOffsets(QuorumState q, long nowMs) {
        TreeMap<Integer, Long> out = new TreeMap<>();
        LeaderState<?> s = q.leaderStateOrThrow();
        s.describeQuorum(nowMs).currentVoters().forEach(r -> out.put(r.replicaId(), r.logEndOffset()));
        return out;
    }

    @SuppressWarnings("unchecked")
    public static Set<Integer> fetchedVoters(QuorumState q) {
        try {
            return new TreeSet<>((Set<Integer>) FETCHED_VOTERS.get(q.leaderStateOrThrow()));
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Hold a voter's timers that would start an election (or resign a leader): each is restarted
     * from {@code nowMs} with {@code holdMs}, as if the replica had just heard from its quorum.
     * The harness calls it before every poll of a replica whose next election would leave the
     * bounds (MaxEpoch reached, or not in TimeoutVoters); its request timers, back-offs and
     * fetches run on (refimpl/kraft/adapter.py: the bounded simulator never fires such a timer).
     * A leader's check-quorum timer only when {@code leaderToo}.
     */
    public static void holdTimers(QuorumState q, long nowMs, long holdMs, boolean leaderToo) {
        try {
            if (q.isFollower()) {
                q.followerStateOrThrow().resetFetchTimeout(nowMs);
            } else if (q.isUnattached()) {
                restart(UNATTACHED_TIMER.get(q.unattachedStateOrThrow()), nowMs, holdMs);
            } else if (q.isVoted()) {
                restart(VOTED_TIMER.get(q.votedStateOrThrow()), nowMs, holdMs);
            } else if (q.isCandidate()) {
                restart(CANDIDATE_TIMER.get(q.candidateStateOrThrow()), nowMs, holdMs);
                restart(CANDIDATE_BACKOFF.get(q.candidateStateOrThrow()), nowMs, holdMs);
            } else if (q.isResigned()) {
                restart(RESIGNED_TIMER.get(q.resignedStateOrThrow()), nowMs, holdMs);
            } else if (q.isLeader() && leaderToo) {
                restart(CHECK_QUORUM_TIMER.get(q.leaderStateOrThrow()), nowMs, holdMs);
            }
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void restart(Object timer, long nowMs, long holdMs) {
        org.apache.kafka.common.utils.Timer t = (org.apache.kafka.common.utils.Timer) timer;
        t.update(nowMs);
        t.reset(holdMs);
    }

    public static long epochStartOffset(QuorumState q) {
        return q.leaderStateOrThrow().epochStartOffset();
    }

    public static boolean leaderHasHighWatermark(QuorumState q) {
        return q.leaderStateOrThrow().highWatermark().isPresent();
    }

    /** One record of a MockLog: its batch's epoch, whether it is a LeaderChange control record,
     *  and its value bytes (data records). */
    public static final class Entry {
        public final int epoch;
        public final boolean leaderChange;
        public final String controlType;   // null for data records
        public final byte[] value;

        Entry(int epoch, boolean leaderChange, String controlType, byte[] value) {
            this.epoch = epoch;
            this.leaderChange = leaderChange;
            this.controlType = controlType;
            this.value = value;
        }
    }

    /** Every record of a MockLog in offset order (MockLog.LogBatch / LogEntry are package-private). */
    public static List<Entry> entries(MockLog log) {
        List<Entry> out = new ArrayList<>();
        for (MockLog.LogBatch b : log.readBatches(log.startOffset(), java.util.OptionalLong.empty())) {
            for (MockLog.LogEntry e : b.entries) {
                if (b.isControlBatch) {
                    ControlRecordType t = ControlRecordType.parse(e.record.key());
                    out.add(new Entry(b.epoch, t == ControlRecordType.LEADER_CHANGE, t.name(), null));
                } else {
                    java.nio.ByteBuffer v = e.record.value();
                    byte[] bytes = new byte[v == null ? 0 : v.remaining()];
                    if (v != null) v.duplicate().get(bytes);
                    out.add(new Entry(b.epoch, false, null, bytes));
                }
            }
        }
        return out;
    }

}
