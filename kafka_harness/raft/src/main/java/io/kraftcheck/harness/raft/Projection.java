package io.kraftcheck.harness.raft;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.kafka.common.message.BeginQuorumEpochRequestData;
import org.apache.kafka.common.message.BeginQuorumEpochResponseData;
import org.apache.kafka.common.message.EndQuorumEpochRequestData;
import org.apache.kafka.common.message.EndQuorumEpochResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.VoteRequestData;
import org.apache.kafka.common.message.VoteResponseData;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.BaseRecords;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.raft.ElectionState;
import org.apache.kafka.raft.KraftAccess;
import org.apache.kafka.raft.QuorumState;

/**
 * THE projection of the harness's Kafka state onto spec/KRaft.tla's variables.  Every spec
 * variable is computed here and nowhere else; each is documented with the Kafka class / field it
 * comes from (README.md has the same table).  Servers are named by the harness's names (voters
 * n1.., observers o1..), "no leader / no vote" is the model value Nil, and Kafka offset k-1 is the
 * spec's log index k (Kafka's exclusive end offsets and high watermark equal the spec's counts).
 *
 * <pre>
 * currentEpoch[i]    QuorumState.epoch() (client.quorum(), package-private)
 * votedId[i]         the quorum-state store's ElectionState.votedIdOpt (KIP-595 "VotedId of the
 *                    quorum-state file"); Kafka writes no VotedId once it knows the epoch's leader
 *                    (ElectionState.withElectedLeader) - see FINDINGS.md
 * leaderId[i]        the quorum-state store's ElectionState.leaderIdOpt (a Resigned leader keeps
 *                    itself: Resigned is a memory-only transition)
 * role[i]            QuorumState.isLeader/isCandidate/isFollower/isVoted/isUnattached/isResigned,
 *                    one to one (a CandidateState whose majority is out of reach stays Candidate:
 *                    FINDINGS.md, KafkaRejectedCandidateBacksOff); a crashed replica shows its
 *                    last state (the spec's Restart is crash and recovery in one step)
 * log[i]             the replica's MockLog batches (HarnessLog): each record [epoch |-> batch
 *                    partitionLeaderEpoch, value |-> its UTF-8 value], a control record of type
 *                    LEADER_CHANGE (LeaderChangeMessage) is the model value LeaderChange
 * highWatermark[i]   ReplicatedLog.highWatermark().offset (the log's HWM, which KafkaRaftClient
 *                    updates from FollowerState / LeaderState and which a new leader keeps; reset
 *                    to 0 by a restart, MockLog.reopen)
 * votesGranted[i]    CandidateState.grantingVoters() (the candidate itself included); {} otherwise
 * votesRejected[i]   CandidateState.rejectingVoters(); {} otherwise
 * followerEndOffset[i] LeaderState: for each voter v # i, -1 while v is in nonAcknowledgingVoters()
 *                    (BeginQuorumEpoch still to be sent), else its DescribeQuorum LogEndOffset
 *                    (the fetch offset of its last valid Fetch), 0 if it acknowledged by a
 *                    BeginQuorumEpoch response but has not fetched; -1 for i itself and for every
 *                    non-leader (the spec's NoEndOffsets)
 * fetchedSinceCheck[i] LeaderState.fetchedVoters (private: read by reflection, KraftAccess); {}
 *                    for non-leaders
 * msgs               the harness's Network: the visible copies in flight, each as the spec record
 *                    of its Kafka message (message(...) below), with multiplicity
 * restartCount       counted by the harness (Restart and LoseDisk steps)
 * ghostCommitted     computed by the harness as refimpl/kraft/spec_mapping.py History does: when a
 *                    Leader's highWatermark passes Len(ghostCommitted), the records of its log up
 *                    to the HWM are appended, tagged with its epoch
 * ghostVotes[i]      computed by the harness: the candidates i voted for in its current epoch
 *                    (a leader: itself too, as a lone voter's candidacy is never observed)
 *                    (votedId after each step, cleared when the epoch grows; survives a Restart,
 *                    cleared by a LoseDisk as KRaftHistory.tla's LoseDisk does)
 * ghostLeaders       (disk-loss runs only) computed by kafka_bridge/raft.py from these states
 * </pre>
 */
final class Projection {
    static final String NIL = "Nil";
    static final String LEADER_CHANGE = "LeaderChange";
    static final ObjectMapper JSON = new ObjectMapper()
        .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private final List<Replica> replicas;          // sorted by name
    private final Map<Integer, String> names = new HashMap<>();
    private final TreeSet<String> voters = new TreeSet<>();

    // history (ghost) variables
    int restartCount;
    private final List<Map<String, Object>> ghostCommitted = new ArrayList<>();
    private final Map<String, Integer> ghostEpoch = new HashMap<>();
    private final Map<String, TreeSet<String>> ghostVotes = new HashMap<>();

    // per-replica cache of the projected log
    private final Map<String, Object[]> logCache = new HashMap<>();

    Projection(List<Replica> replicas) {
        List<Replica> sorted = new ArrayList<>(replicas);
        sorted.sort((a, b) -> a.name.compareTo(b.name));
        this.replicas = sorted;
        for (Replica r : replicas) {
            names.put(r.id, r.name);
            if (r.voter) {
                voters.add(r.name);
            }
            ghostEpoch.put(r.name, 0);
            ghostVotes.put(r.name, new TreeSet<>());
        }
    }

    String name(int id) {
        return id < 0 ? NIL : names.getOrDefault(id, "node" + id);
    }

    static String json(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------ one replica

    /** The per-replica spec variables of one replica. */
    static final class View {
        int epoch;
        String votedId;
        String leaderId;
        String role;
        List<Map<String, Object>> log;
        long highWatermark;
        TreeSet<String> granted = new TreeSet<>();
        TreeSet<String> rejected = new TreeSet<>();
        TreeMap<String, Long> endOffsets = new TreeMap<>();
        TreeSet<String> fetched = new TreeSet<>();
    }

    View view(Replica r) {
        if (r.client == null) {
            return diskView(r);
        }
        QuorumState q = KraftAccess.quorum(r.client);
        View v = new View();
        v.epoch = q.epoch();
        ElectionState e = r.store.peek();
        v.votedId = e != null && e.votedIdOpt.isPresent() ? name(e.votedIdOpt.getAsInt()) : NIL;
        v.leaderId = e != null && e.leaderIdOpt.isPresent() ? name(e.leaderIdOpt.getAsInt()) : NIL;
        if (q.isLeader()) {
            v.role = "Leader";
        } else if (q.isCandidate()) {
            v.role = "Candidate";
        } else if (q.isFollower()) {
            v.role = "Follower";
        } else if (q.isVoted()) {
            v.role = "Voted";
        } else if (q.isUnattached()) {
            v.role = "Unattached";
        } else if (q.isResigned()) {
            v.role = "Resigned";
        } else {
            v.role = "Unknown";
        }
        v.log = log(r);
        v.highWatermark = r.log.highWatermark().offset;
        if ("Candidate".equals(v.role)) {
            for (int id : KraftAccess.granting(q)) {
                v.granted.add(name(id));
            }
            for (int id : KraftAccess.rejecting(q)) {
                v.rejected.add(name(id));
            }
        }
        for (String n : voters) {
            v.endOffsets.put(n, -1L);
        }
        if (q.isLeader()) {
            Set<Integer> unacked = KraftAccess.nonAcknowledging(q);
            for (Map.Entry<Integer, Long> eo : KraftAccess.voterEndOffsets(q, r.clock.milliseconds()).entrySet()) {
                int id = eo.getKey();
                if (id == r.id || unacked.contains(id)) {
                    continue;
                }
                v.endOffsets.put(name(id), Math.max(eo.getValue(), 0L));
            }
            for (int id : KraftAccess.fetchedVoters(q)) {
                v.fetched.add(name(id));
            }
        }
        return v;
    }

    /** A replica whose KafkaRaftClient has not started yet (the Init line): its disks, an empty
     *  log and quorum-state file, which KafkaRaftClient.initialize reads as Unattached in epoch 0
     *  (QuorumState.initialize: ElectionState.withUnknownLeader(0, voters)). */
    private View diskView(Replica r) {
        ElectionState e = r.store.peek();
        if (e != null || r.log.endOffset().offset != 0) {
            throw new IllegalStateException(r.name + " has state on disk before its first start");
        }
        View v = new View();
        v.epoch = 0;
        v.votedId = NIL;
        v.leaderId = NIL;
        v.role = "Unattached";
        v.log = log(r);
        v.highWatermark = r.log.highWatermark().offset;
        for (String n : voters) {
            v.endOffsets.put(n, -1L);
        }
        return v;
    }

    /** The log as the spec's sequence of [epoch, value] records (cached per log version). */
    List<Map<String, Object>> log(Replica r) {
        Object[] c = logCache.get(r.name);
        if (c != null && c[0] == r.log && (Long) c[1] == r.log.version()) {
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> l = (List<Map<String, Object>>) c[2];
            return l;
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (KraftAccess.Entry en : r.log.entries()) {
            String value = en.leaderChange ? LEADER_CHANGE
                : en.controlType != null ? "Control:" + en.controlType
                : new String(en.value, StandardCharsets.UTF_8);
            out.add(record(en.epoch, value));
        }
        List<Map<String, Object>> l = Collections.unmodifiableList(out);
        logCache.put(r.name, new Object[] {r.log, r.log.version(), l});
        return l;
    }

    static Map<String, Object> record(int epoch, String value) {
        TreeMap<String, Object> m = new TreeMap<>();
        m.put("epoch", epoch);
        m.put("value", value);
        return m;
    }

    // ------------------------------------------------------------------ messages

    static String errorName(short code) {
        Errors e = Errors.forCode(code);
        return e == Errors.INCONSISTENT_CLUSTER_ID ? "INVALID_CLUSTER_ID" : e.name();
    }

    private String cluster(String c) {
        return c == null ? NIL : c;
    }

    /**
     * A Kafka message as the spec's message record (KRaft.tla "MESSAGES").  {@code req} is the
     * request a response answers (a FetchResponse echoes its fetchOffset / lastFetchedEpoch, as
     * the spec's does; Kafka matches by correlation id instead).
     */
    Map<String, Object> message(String src, String dest, ApiMessage data, Map<String, Object> req) {
        TreeMap<String, Object> m = new TreeMap<>();
        m.put("src", src);
        m.put("dest", dest);
        if (data instanceof VoteRequestData) {
            VoteRequestData d = (VoteRequestData) data;
            VoteRequestData.PartitionData p = d.topics().get(0).partitions().get(0);
            m.put("type", "VoteRequest");
            m.put("epoch", p.candidateEpoch());
            m.put("lastOffsetEpoch", p.lastOffsetEpoch());
            m.put("lastOffset", p.lastOffset());
            m.put("clusterId", cluster(d.clusterId()));
        } else if (data instanceof VoteResponseData) {
            VoteResponseData d = (VoteResponseData) data;
            m.put("type", "VoteResponse");
            if (d.errorCode() != 0 || d.topics().isEmpty()) {
                m.put("epoch", req == null ? -1 : req.get("epoch"));
                m.put("leaderId", NIL);
                m.put("voteGranted", false);
                m.put("error", errorName(d.errorCode()));
            } else {
                VoteResponseData.PartitionData p = d.topics().get(0).partitions().get(0);
                m.put("epoch", p.leaderEpoch());
                m.put("leaderId", name(p.leaderId()));
                m.put("voteGranted", p.voteGranted());
                m.put("error", errorName(p.errorCode()));
            }
        } else if (data instanceof BeginQuorumEpochRequestData) {
            BeginQuorumEpochRequestData d = (BeginQuorumEpochRequestData) data;
            m.put("type", "BeginQuorumEpochRequest");
            m.put("epoch", d.topics().get(0).partitions().get(0).leaderEpoch());
            m.put("clusterId", cluster(d.clusterId()));
        } else if (data instanceof BeginQuorumEpochResponseData) {
            BeginQuorumEpochResponseData d = (BeginQuorumEpochResponseData) data;
            m.put("type", "BeginQuorumEpochResponse");
            if (d.errorCode() != 0 || d.topics().isEmpty()) {
                m.put("epoch", req == null ? -1 : req.get("epoch"));
                m.put("leaderId", NIL);
                m.put("error", errorName(d.errorCode()));
            } else {
                BeginQuorumEpochResponseData.PartitionData p = d.topics().get(0).partitions().get(0);
                m.put("epoch", p.leaderEpoch());
                m.put("leaderId", name(p.leaderId()));
                m.put("error", errorName(p.errorCode()));
            }
        } else if (data instanceof EndQuorumEpochRequestData) {
            EndQuorumEpochRequestData d = (EndQuorumEpochRequestData) data;
            EndQuorumEpochRequestData.PartitionData p = d.topics().get(0).partitions().get(0);
            m.put("type", "EndQuorumEpochRequest");
            m.put("epoch", p.leaderEpoch());
            List<String> succ = new ArrayList<>();
            for (int id : p.preferredSuccessors()) {
                succ.add(name(id));
            }
            m.put("preferredSuccessors", succ);
            m.put("clusterId", cluster(d.clusterId()));
        } else if (data instanceof EndQuorumEpochResponseData) {
            EndQuorumEpochResponseData d = (EndQuorumEpochResponseData) data;
            m.put("type", "EndQuorumEpochResponse");
            if (d.errorCode() != 0 || d.topics().isEmpty()) {
                m.put("epoch", req == null ? -1 : req.get("epoch"));
                m.put("leaderId", NIL);
                m.put("error", errorName(d.errorCode()));
            } else {
                EndQuorumEpochResponseData.PartitionData p = d.topics().get(0).partitions().get(0);
                m.put("epoch", p.leaderEpoch());
                m.put("leaderId", name(p.leaderId()));
                m.put("error", errorName(p.errorCode()));
            }
        } else if (data instanceof FetchRequestData) {
            FetchRequestData d = (FetchRequestData) data;
            FetchRequestData.FetchPartition p = d.topics().get(0).partitions().get(0);
            m.put("type", "FetchRequest");
            m.put("epoch", p.currentLeaderEpoch());
            m.put("fetchOffset", p.fetchOffset());
            m.put("lastFetchedEpoch", p.lastFetchedEpoch());
            m.put("clusterId", cluster(d.clusterId()));
        } else if (data instanceof FetchResponseData) {
            FetchResponseData d = (FetchResponseData) data;
            m.put("type", "FetchResponse");
            TreeMap<String, Object> div = new TreeMap<>();
            if (d.errorCode() != 0 || d.responses().isEmpty()) {
                m.put("epoch", req == null ? -1 : req.get("epoch"));
                m.put("leaderId", NIL);
                m.put("error", errorName(d.errorCode()));
                m.put("highWatermark", -1L);
                m.put("records", new ArrayList<>());
                div.put("epoch", -1);
                div.put("endOffset", -1L);
            } else {
                FetchResponseData.PartitionData p = d.responses().get(0).partitions().get(0);
                m.put("epoch", p.currentLeader().leaderEpoch());
                m.put("leaderId", name(p.currentLeader().leaderId()));
                m.put("error", errorName(p.errorCode()));
                m.put("highWatermark", p.highWatermark());
                m.put("records", records(p.records()));
                div.put("epoch", p.divergingEpoch().epoch());
                div.put("endOffset", p.divergingEpoch().endOffset());
            }
            m.put("divergingEpoch", div);
            boolean echo = "NONE".equals(m.get("error")) && req != null;
            m.put("fetchOffset", echo ? req.get("fetchOffset") : -1L);
            m.put("lastFetchedEpoch", echo ? req.get("lastFetchedEpoch") : -1);
        } else {
            m.put("type", data.getClass().getSimpleName());
            m.put("epoch", -1);
        }
        return m;
    }

    private static List<Map<String, Object>> records(BaseRecords records) {
        List<Map<String, Object>> out = new ArrayList<>();
        if (!(records instanceof MemoryRecords)) {
            return out;
        }
        for (RecordBatch b : ((MemoryRecords) records).batches()) {
            for (Record rec : b) {
                String value;
                if (b.isControlBatch()) {
                    ControlRecordType t = ControlRecordType.parse(rec.key());
                    value = t == ControlRecordType.LEADER_CHANGE ? LEADER_CHANGE : "Control:" + t.name();
                } else {
                    ByteBuffer v = rec.value();
                    byte[] bytes = new byte[v == null ? 0 : v.remaining()];
                    if (v != null) {
                        v.duplicate().get(bytes);
                    }
                    value = new String(bytes, StandardCharsets.UTF_8);
                }
                out.add(record(b.partitionLeaderEpoch(), value));
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ history

    /** Update the ghost variables after a step of {@code actor} (null: no replica changed). */
    void afterStep(String action, Replica actor, Map<String, View> views) {
        boolean restart = "Restart".equals(action) || "LoseDisk".equals(action);
        if (restart) {
            restartCount++;
        }
        for (Replica r : replicas) {
            View v = views.get(r.name);
            int ge = ghostEpoch.get(r.name);
            if ("LoseDisk".equals(action) && r == actor) {
                // spec/KRaftHistory.tla LoseDisk: ghostVotes'[i] = {} (its votes were of an
                // epoch it no longer knows)
                ghostEpoch.put(r.name, v.epoch);
                ghostVotes.put(r.name, new TreeSet<>());
                ge = v.epoch;
            }
            if (v.epoch > ge) {
                ghostEpoch.put(r.name, v.epoch);
                ghostVotes.put(r.name, new TreeSet<>());
            }
            if (!NIL.equals(v.votedId) && !(restart && r == actor)) {
                ghostVotes.get(r.name).add(v.votedId);
            }
            if ("Leader".equals(v.role)) {
                // a leader voted for itself in its epoch (transitionToCandidate); a lone voter's
                // candidacy happens inside one poll and its votedId is never observed
                ghostVotes.get(r.name).add(r.name);
            }
            if ("Leader".equals(v.role) && v.highWatermark > ghostCommitted.size()) {
                for (int k = ghostCommitted.size(); k < v.highWatermark && k < v.log.size(); k++) {
                    TreeMap<String, Object> g = new TreeMap<>();
                    g.put("entry", v.log.get(k));
                    g.put("epoch", v.epoch);
                    ghostCommitted.add(g);
                }
            }
        }
    }

    // ------------------------------------------------------------------ the state

    Map<String, View> views(Map<String, View> lastViews) {
        TreeMap<String, View> out = new TreeMap<>();
        for (Replica r : replicas) {
            if (r.up || lastViews == null || !lastViews.containsKey(r.name)) {
                out.put(r.name, view(r));
            } else {
                out.put(r.name, lastViews.get(r.name));
            }
        }
        return out;
    }

    /** Every spec variable, as the ITF JSON objects of docs/trace-format.md. */
    TreeMap<String, Object> state(Map<String, View> views, Network net) {
        TreeMap<String, Object> currentEpoch = new TreeMap<>();
        TreeMap<String, Object> votedId = new TreeMap<>();
        TreeMap<String, Object> leaderId = new TreeMap<>();
        TreeMap<String, Object> log = new TreeMap<>();
        TreeMap<String, Object> role = new TreeMap<>();
        TreeMap<String, Object> hwm = new TreeMap<>();
        TreeMap<String, Object> granted = new TreeMap<>();
        TreeMap<String, Object> rejected = new TreeMap<>();
        TreeMap<String, Object> feo = new TreeMap<>();
        TreeMap<String, Object> fetched = new TreeMap<>();
        TreeMap<String, Object> gv = new TreeMap<>();
        for (Map.Entry<String, View> e : views.entrySet()) {
            String n = e.getKey();
            View v = e.getValue();
            currentEpoch.put(n, v.epoch);
            votedId.put(n, v.votedId);
            leaderId.put(n, v.leaderId);
            log.put(n, v.log);
            role.put(n, v.role);
            hwm.put(n, v.highWatermark);
            granted.put(n, set(v.granted));
            rejected.put(n, set(v.rejected));
            feo.put(n, v.endOffsets);
            fetched.put(n, set(v.fetched));
            gv.put(n, set(ghostVotes.get(n)));
        }
        TreeMap<String, Object> s = new TreeMap<>();
        s.put("currentEpoch", currentEpoch);
        s.put("votedId", votedId);
        s.put("leaderId", leaderId);
        s.put("log", log);
        s.put("role", role);
        s.put("highWatermark", hwm);
        s.put("votesGranted", granted);
        s.put("votesRejected", rejected);
        s.put("followerEndOffset", feo);
        s.put("fetchedSinceCheck", fetched);
        s.put("msgs", bag(net));
        s.put("restartCount", restartCount);
        s.put("ghostCommitted", new ArrayList<>(ghostCommitted));
        s.put("ghostVotes", gv);
        return s;
    }

    private static Map<String, Object> set(Set<String> names) {
        TreeMap<String, Object> m = new TreeMap<>();
        m.put("#set", new ArrayList<>(names));
        return m;
    }

    private static Object bag(Network net) {
        TreeMap<String, Integer> counts = new TreeMap<>();
        Map<String, Object> records = new HashMap<>();
        for (Network.Msg m : net.all()) {
            if (m.visible) {
                counts.merge(m.specJson, 1, Integer::sum);
                records.put(m.specJson, m.spec);
            }
        }
        if (counts.isEmpty()) {
            return new ArrayList<>();
        }
        List<Object> pairs = new ArrayList<>();
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            List<Object> pair = new ArrayList<>();
            pair.add(records.get(e.getKey()));
            pair.add(e.getValue());
            pairs.add(pair);
        }
        TreeMap<String, Object> m = new TreeMap<>();
        m.put("#map", pairs);
        return m;
    }

    int ghostCommittedLength() {
        return ghostCommitted.size();
    }
}
