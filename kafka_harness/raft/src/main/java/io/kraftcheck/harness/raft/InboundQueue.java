package io.kraftcheck.harness.raft;

import org.apache.kafka.raft.MockMessageQueue;
import org.apache.kafka.raft.RaftMessage;

/**
 * A replica's inbound queue (Kafka's non-blocking MockMessageQueue) that tells the step recorder
 * when a poll takes a message.  KafkaRaftClient.poll() runs its timer work
 * ({@code pollCurrentState}) first and only then takes the inbound message
 * ({@code messageQueue.poll}) and handles it, so this is the point that separates a timer-driven
 * state change of the poll (a spec Timeout) from the handling of the message (a spec Receive).
 */
final class InboundQueue extends MockMessageQueue {
    interface TakeListener {
        /** Called with a message about to be handed to Kafka, before Kafka handles it. */
        void beforeHandle(Replica to);
    }

    private final Replica owner;
    private final TakeListener listener;

    InboundQueue(Replica owner, TakeListener listener) {
        this.owner = owner;
        this.listener = listener;
    }

    @Override
    public RaftMessage poll(long timeoutMs) {
        if (!isEmpty()) {
            listener.beforeHandle(owner);
        }
        return super.poll(timeoutMs);
    }
}
