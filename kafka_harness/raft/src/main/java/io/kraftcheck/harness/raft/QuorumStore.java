package io.kraftcheck.harness.raft;

import org.apache.kafka.raft.ElectionState;
import org.apache.kafka.raft.QuorumStateStore;

/**
 * The in-memory quorum-state file (Kafka's FileBasedStateStore without the disk): every write is
 * durable and survives restart.  Planted fault {@code forgetful-store}: on restart the store
 * forgets the vote (the election is re-read with no VotedId), a store Kafka is not built to survive.
 */
final class QuorumStore implements QuorumStateStore {
    private ElectionState state;
    private final boolean forgetful;

    QuorumStore(boolean forgetful) {
        this.forgetful = forgetful;
    }

    @Override
    public ElectionState readElectionState() {
        return state;
    }

    @Override
    public void writeElectionState(ElectionState latest) {
        state = latest;
    }

    @Override
    public void clear() {
        state = null;
    }

    /** Called by the harness when the replica restarts. */
    void onRestart() {
        if (forgetful && state != null && state.hasVoted()) {
            state = state.hasLeader()
                ? ElectionState.withElectedLeader(state.epoch, state.leaderId(), state.voters())
                : ElectionState.withUnknownLeader(state.epoch, state.voters());
        }
    }

    ElectionState peek() {
        return state;
    }
}
