package io.kraftcheck.harness.raft;

import java.util.Random;

/**
 * A replica's seeded Random whose next draw of one bound can be scripted (serve mode's
 * {@code "fetch_to"}, Serve.fetchTo).  Unsteered it is {@code java.util.Random} itself; a steered
 * draw still consumes the seeded draw, so every later draw is the one the seed gives.
 */
final class SteerableRandom extends Random {
    private int bound = -1;
    private int value;

    SteerableRandom(long seed) {
        super(seed);
    }

    /** The next {@code nextInt(bound)} returns {@code value} (once). */
    void steer(int bound, int value) {
        if (value < 0 || value >= bound) {
            throw new IllegalArgumentException("steered draw " + value + " outside [0, " + bound + ")");
        }
        this.bound = bound;
        this.value = value;
    }

    void unsteer() {
        bound = -1;
    }

    @Override
    public int nextInt(int b) {
        int drawn = super.nextInt(b);
        if (b == bound) {
            bound = -1;
            return value;
        }
        return drawn;
    }
}
