package io.kraftcheck.harness.raft;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Records;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.raft.Isolation;
import org.apache.kafka.raft.KraftAccess;
import org.apache.kafka.raft.LogAppendInfo;
import org.apache.kafka.raft.LogFetchInfo;
import org.apache.kafka.raft.LogOffsetMetadata;
import org.apache.kafka.raft.MockLog;
import org.apache.kafka.raft.OffsetAndEpoch;
import org.apache.kafka.raft.ReplicatedLog;
import org.apache.kafka.snapshot.RawSnapshotReader;
import org.apache.kafka.snapshot.RawSnapshotWriter;

/**
 * A replica's metadata log: Kafka's in-memory MockLog (kafka-raft test jar), kept across restarts;
 * {@link #reopen()} drops the unflushed suffix as a crash would.  Two harness choices:
 * <ul>
 * <li>a leader's read returns at most ONE batch (MockLog returns up to two): with linger 0 and one
 *     value per scheduleAppend every batch is one record, so every FetchResponse carries at most
 *     one record, as the spec's FetchResponse does (a log may always return less than asked);
 *     {@link #readLimit} raises it for one delivery (serve mode's {@code "read_limit"}: the
 *     records that fit in Kafka's fetch max bytes, KafkaMetadataLog's maxFetchSizeInBytes; the
 *     spec's switch KafkaFetchReturnsBatches);</li>
 * <li>planted fault {@code lying-flush}: flush() reports success without flushing, so a restart
 *     loses the suffix Kafka believes durable.</li>
 * </ul>
 * {@link #version()} counts every change of the records (the projection's cache key).
 */
final class HarnessLog implements ReplicatedLog {
    static final TopicPartition TOPIC = new TopicPartition("__cluster_metadata", 0);
    static final Uuid TOPIC_ID = Uuid.METADATA_TOPIC_ID;

    /** Hears a high-watermark update before it is applied (Cluster: the step recorder splits
     *  a leader's flush-driven advance into its own step, AdvanceHighWatermarkOnFlush). */
    interface Listener {
        void beforeHighWatermark(Replica r, long offset);
    }

    private final MockLog log;
    private final boolean lyingFlush;
    private final Replica owner;
    private long version;
    /** The batches one uncommitted read returns at most (1: the harness's default). */
    int readLimit = 1;
    Listener listener = (r, o) -> { };

    HarnessLog(String node, boolean lyingFlush, Replica owner) {
        this.log = new MockLog(TOPIC, TOPIC_ID, new LogContext("[" + node + "] "));
        this.lyingFlush = lyingFlush;
        this.owner = owner;
    }

    long version() {
        return version;
    }

    List<KraftAccess.Entry> entries() {
        return KraftAccess.entries(log);
    }

    /** Crash: unflushed records are lost, the high watermark (volatile) is reset. */
    void reopen() {
        long before = log.endOffset().offset;
        log.reopen();
        if (log.endOffset().offset != before) {
            version++;
        }
        version++;
    }

    @Override
    public LogAppendInfo appendAsLeader(Records records, int epoch) {
        version++;
        return log.appendAsLeader(records, epoch);
    }

    @Override
    public LogAppendInfo appendAsFollower(Records records) {
        version++;
        return log.appendAsFollower(records);
    }

    @Override
    public LogFetchInfo read(long startOffset, Isolation isolation) {
        LogFetchInfo info = log.read(startOffset, isolation);
        if (isolation != Isolation.UNCOMMITTED || !(info.records instanceof MemoryRecords)) {
            return info;
        }
        Iterator<MutableRecordBatch> it = ((MemoryRecords) info.records).batches().iterator();
        if (!it.hasNext()) {
            return info;
        }
        List<MutableRecordBatch> batches = new ArrayList<>();
        long next = startOffset;
        while (batches.size() < readLimit) {
            // MockLog returns at most two batches a read: read on from the last one's end
            Iterator<MutableRecordBatch> more = batches.isEmpty() ? it
                : ((MemoryRecords) log.read(next, isolation).records).batches().iterator();
            if (!more.hasNext()) {
                break;
            }
            while (more.hasNext() && batches.size() < readLimit) {
                MutableRecordBatch b = more.next();
                batches.add(b);
                next = b.lastOffset() + 1;
            }
        }
        int size = 0;
        for (MutableRecordBatch b : batches) {
            size += b.sizeInBytes();
        }
        ByteBuffer buf = ByteBuffer.allocate(size);
        for (MutableRecordBatch b : batches) {
            b.writeTo(buf);
        }
        buf.flip();
        return new LogFetchInfo(MemoryRecords.readableRecords(buf), info.startOffsetMetadata);
    }

    @Override
    public int lastFetchedEpoch() {
        return log.lastFetchedEpoch();
    }

    @Override
    public OffsetAndEpoch endOffsetForEpoch(int epoch) {
        return log.endOffsetForEpoch(epoch);
    }

    @Override
    public LogOffsetMetadata endOffset() {
        return log.endOffset();
    }

    @Override
    public LogOffsetMetadata highWatermark() {
        return log.highWatermark();
    }

    @Override
    public long startOffset() {
        return log.startOffset();
    }

    @Override
    public void initializeLeaderEpoch(int epoch) {
        log.initializeLeaderEpoch(epoch);
    }

    @Override
    public void truncateTo(long offset) {
        version++;
        log.truncateTo(offset);
    }

    @Override
    public boolean truncateToLatestSnapshot() {
        return log.truncateToLatestSnapshot();
    }

    @Override
    public void updateHighWatermark(LogOffsetMetadata offsetMetadata) {
        listener.beforeHighWatermark(owner, offsetMetadata.offset);
        log.updateHighWatermark(offsetMetadata);
    }

    @Override
    public boolean deleteBeforeSnapshot(OffsetAndEpoch snapshotId) {
        return log.deleteBeforeSnapshot(snapshotId);
    }

    @Override
    public void flush(boolean forceFlushActiveSegment) {
        if (!lyingFlush) {
            log.flush(forceFlushActiveSegment);
        }
    }

    @Override
    public boolean maybeClean() {
        return false;
    }

    @Override
    public TopicPartition topicPartition() {
        return TOPIC;
    }

    @Override
    public Uuid topicId() {
        return TOPIC_ID;
    }

    @Override
    public Optional<RawSnapshotWriter> createNewSnapshot(OffsetAndEpoch snapshotId) {
        return log.createNewSnapshot(snapshotId);
    }

    @Override
    public Optional<RawSnapshotWriter> storeSnapshot(OffsetAndEpoch snapshotId) {
        return log.storeSnapshot(snapshotId);
    }

    @Override
    public Optional<RawSnapshotReader> readSnapshot(OffsetAndEpoch snapshotId) {
        return log.readSnapshot(snapshotId);
    }

    @Override
    public Optional<RawSnapshotReader> latestSnapshot() {
        return log.latestSnapshot();
    }

    @Override
    public Optional<OffsetAndEpoch> latestSnapshotId() {
        return log.latestSnapshotId();
    }

    @Override
    public Optional<OffsetAndEpoch> earliestSnapshotId() {
        return log.earliestSnapshotId();
    }

    @Override
    public void onSnapshotFrozen(OffsetAndEpoch snapshotId) {
        log.onSnapshotFrozen(snapshotId);
    }
}
