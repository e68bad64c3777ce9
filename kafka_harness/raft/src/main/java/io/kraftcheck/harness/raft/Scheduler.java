package io.kraftcheck.harness.raft;

import java.util.PriorityQueue;

/**
 * The seeded discrete-event scheduler: events ordered by (virtual time, insertion number), so the
 * order never depends on anything but the seed.  Virtual time jumps to the next event's time.
 */
final class Scheduler {
    interface Action {
        void run();
    }

    private static final class Event implements Comparable<Event> {
        final long timeMs;
        final long seq;
        final Action action;

        Event(long timeMs, long seq, Action action) {
            this.timeMs = timeMs;
            this.seq = seq;
            this.action = action;
        }

        @Override
        public int compareTo(Event o) {
            int c = Long.compare(timeMs, o.timeMs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private long seq;
    private long nowMs;
    private long events;

    long now() {
        return nowMs;
    }

    long events() {
        return events;
    }

    void at(long timeMs, Action a) {
        queue.add(new Event(Math.max(timeMs, nowMs), seq++, a));
    }

    void after(long delayMs, Action a) {
        at(nowMs + delayMs, a);
    }

    /** Run the next event; false when there is none. */
    boolean step() {
        Event e = queue.poll();
        if (e == null) {
            return false;
        }
        nowMs = e.timeMs;
        events++;
        e.action.run();
        return true;
    }
}
