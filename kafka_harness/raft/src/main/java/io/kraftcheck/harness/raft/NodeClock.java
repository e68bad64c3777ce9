package io.kraftcheck.harness.raft;

import org.apache.kafka.common.utils.MockTime;

/**
 * One replica's own clock (Kafka's MockTime: every timer of a KafkaRaftClient reads it).  The
 * harness moves it to the global virtual time when the replica acts (simulate mode) or when a
 * command says so (serve mode), so "replica i's timer fires" is one harness event.  Bounded runs
 * do not stop the clock: they hold the timers that would leave the bounds (Cluster.holdTimers).
 */
final class NodeClock extends MockTime {
    NodeClock(long startMs) {
        super(0L, startMs, startMs * 1_000_000L);
    }

    /** Advance to {@code nowMs} (never backwards). */
    void advanceTo(long nowMs) {
        long cur = milliseconds();
        if (nowMs > cur) {
            sleep(nowMs - cur);
        }
    }
}
