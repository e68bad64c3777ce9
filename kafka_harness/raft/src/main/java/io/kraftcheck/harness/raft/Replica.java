package io.kraftcheck.harness.raft;

import java.util.Random;

import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.raft.KafkaRaftClient;
import org.apache.kafka.raft.KraftAccess;
import org.apache.kafka.raft.MockExpirationService;
import org.apache.kafka.raft.RaftConfig;
import org.apache.kafka.raft.internals.BatchMemoryPool;

/**
 * One replica: its persistent part (log and quorum-state store, kept across restarts, as in
 * RaftEventSimulationTest's PersistentState), its own clock, and the running KafkaRaftClient with
 * its inbound queue (rebuilt on restart).
 */
final class Replica {
    /** Kafka's quorum.* defaults, except linger 0 (one value per batch) and fetch max wait 0 (a
     *  Fetch is answered in the poll that handles it, as the spec's ReceiveFetchRequest replies). */
    static final int REQUEST_TIMEOUT_MS = 2000;
    static final int RETRY_BACKOFF_MS = 20;
    static final int ELECTION_TIMEOUT_MS = 1000;
    static final int ELECTION_BACKOFF_MAX_MS = 1000;
    static final int FETCH_TIMEOUT_MS = 2000;
    static final int LINGER_MS = 0;
    static final int FETCH_MAX_WAIT_MS = 0;
    static final String CLUSTER_ID = "cluster-A";   // MCKRaft!MCClusterOf of a correct server
    static final String OTHER_CLUSTER_ID = "cluster-B";   // ... of a MisconfiguredServers member

    final String name;
    final int id;
    final boolean voter;
    final NodeClock clock;
    /** The cluster id the replica was formatted with (meta.properties; a disk loss keeps it, as
     *  refimpl KRaftAdapter.lose_disk: the operator re-formats with the same id). */
    String clusterId = CLUSTER_ID;
    /** Batches a leader's read returns at most (HarnessLog.readLimit; kept across disk loss). */
    int readBatches = 1;
    HarnessLog log;
    QuorumStore store;
    InboundQueue queue;
    /** The client's Random (serve mode steers an observer's voter choice: SteerableRandom). */
    Random random;
    /**
     * The batch buffers of every client of this JVM.  Kafka's BatchMemoryPool hands out buffers of
     * KafkaRaftClient.MAX_BATCH_SIZE_BYTES (8 MiB) and keeps released ones for reuse, cleared
     * (release: {@code ByteBuffer.clear}); a pool per client start allocated (and zeroed) 8 MiB at
     * each new leader's first append, most of serve mode's CPU once `restore` rebuilds clusters
     * over and over.  Which buffer a batch gets changes nothing a client does: the batch is
     * written from the buffer's start and only its own bytes are read.
     */
    static final BatchMemoryPool BUFFERS = new BatchMemoryPool(8, KafkaRaftClient.MAX_BATCH_SIZE_BYTES);
    KafkaRaftClient<String> client;
    Metrics metrics;
    boolean up;

    Replica(String name, int id, boolean voter, long nowMs, String plant) {
        this.name = name;
        this.id = id;
        this.voter = voter;
        this.clock = new NodeClock(nowMs);
        this.log = new HarnessLog(name, "lying-flush".equals(plant), this);
        this.store = new QuorumStore("forgetful-store".equals(plant));
    }

    /** Disk loss: a freshly formatted replica (empty log, no quorum-state file). */
    void loseDisk(String plant) {
        HarnessLog old = log;
        this.log = new HarnessLog(name, "lying-flush".equals(plant), this);
        this.log.listener = old.listener;
        this.log.readLimit = readBatches;
        this.store = new QuorumStore("forgetful-store".equals(plant));
    }

    /** Start (or restart) the Kafka client over the kept log and store; {@code taken} hears
     *  each inbound message the client takes from its queue (after the poll's timer work). */
    void start(Network net, RaftConfig config, Random random, InboundQueue.TakeListener taken) {
        this.random = random;
        queue = new InboundQueue(this, taken);
        metrics = new Metrics(clock);
        client = KraftAccess.newClient(new StringSerde(), net.channel(this), queue, log, store,
            BUFFERS, clock, metrics,
            new MockExpirationService(clock), FETCH_MAX_WAIT_MS, clusterId, id,
            new LogContext("[" + name + "] "), random, config);
        client.initialize();
        up = true;
    }

    void crash() {
        up = false;
        if (metrics != null) {
            metrics.close();
        }
    }
}
