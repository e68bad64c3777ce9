package io.kraftcheck.harness.raft;

import org.apache.kafka.common.utils.MockTime;

/**
 * One replica's own clock (Kafka's MockTime: every timer of a KafkaRaftClient reads it).  The
 * harness moves it to the global virtual time when the replica acts, unless it is frozen (bounded
 * runs freeze the clock of a replica whose next election would leave MaxEpoch, and of replicas
 * outside TimeoutVoters), so "replica i's timer fires" is one harness event.
 */
final class NodeClock extends MockTime {
    private boolean frozen;

    NodeClock(long startMs) {
        super(0L, startMs, startMs * 1_000_000L);
    }

    /** Advance to {@code nowMs} (never backwards; a frozen clock stays). */
    void advanceTo(long nowMs) {
        long cur = milliseconds();
        if (!frozen && nowMs > cur) {
            sleep(nowMs - cur);
        }
    }

    void freeze(boolean f) {
        frozen = f;
    }

    boolean frozen() {
        return frozen;
    }
}
