package io.kraftcheck.harness.raft;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One seeded run (simulate mode): the Cluster, the Scheduler and the fault profile's events.
 * Everything random comes from one java.util.Random seeded with the run's seed (the Kafka
 * clients' Randoms are drawn from it), events are ordered by (time, insertion), and no iteration
 * depends on hashing: the same seed gives the same bytes.
 */
final class Simulation {
    final long seed;
    final Faults faults;
    final int maxSteps;
    final List<String> voters;
    final List<String> observers;
    final List<String> values;
    final RunBounds bounds;
    final String plant;
    final Long faultsUntil;

    /** Harness options of an unbounded run (bounded runs take them from the bounds). */
    List<String> misconfigured = new ArrayList<>();
    int readBatches = 1;

    private Random rnd;
    private Scheduler sched;
    private Cluster c;
    private final TreeSet<String> blocked = new TreeSet<>();
    private boolean partitioned;
    private int down;
    private int pendingRestarts;
    private int clientRequests;
    private String endReason;
    private String detail;
    private int kafkaErrors;      // polls in which Kafka threw (the replica then crashed)
    private long[] catchUpTarget;   // {leader id, epoch, hwm}

    Simulation(long seed, Faults faults, int maxSteps, List<String> voters, List<String> observers,
               List<String> values, RunBounds bounds, String plant, Long faultsUntil) {
        this.seed = seed;
        this.faults = faults;
        this.maxSteps = maxSteps;
        this.voters = voters;
        this.observers = observers;
        this.values = values;
        this.bounds = bounds;
        this.plant = plant;
        this.faultsUntil = faultsUntil;
    }

    static final double MISDELIVER = 0.05;
    /** A run in which no spec step happened for this long (virtual ms) has nothing left to do. */
    static final long QUIESCENT_MS = 30_000;

    private boolean faulty() {
        return faultsUntil == null || sched.now() < faultsUntil;
    }

    /** Run the seed, writing its raw stream through {@code out}. */
    void run(RawWriter out, Map<String, Object> meta) {
        rnd = new Random(seed);
        sched = new Scheduler();
        c = new Cluster(voters, observers, new Random(rnd.nextLong()), bounds, plant, out);
        if (bounds == null) {
            c.misconfigure(misconfigured);
            c.readBatches(readBatches);
        }
        c.messages = m -> fate(m, true);
        out.line(meta);
        try {
            c.init();
            for (Replica r : c.replicas) {
                sched.at(Faults.uniform(rnd, 1, 10), () -> tick(r));
            }
            if (faults.clientEveryMs > 0) {
                sched.after(Faults.exp(rnd, faults.clientEveryMs), this::client);
            }
            if (faults.crashEveryMs > 0) {
                sched.after(Faults.exp(rnd, faults.crashEveryMs), this::crash);
            }
            if (faults.partitionEveryMs > 0) {
                sched.after(Faults.exp(rnd, faults.partitionEveryMs), this::partition);
            }
            long timeCap = (long) maxSteps * 200L + 120_000L + (faultsUntil == null ? 0 : faultsUntil);
            while (endReason == null) {
                boolean more;
                try {
                    more = c.steps < maxSteps && sched.step();
                } catch (Cluster.KafkaFailure e) {
                    kafkaErrors++;
                    if (detail == null) {
                        detail = "t=" + sched.now() + " " + e.getMessage();
                    }
                    Replica r = e.replica;     // crashed by the Cluster: restart it later
                    down++;
                    pendingRestarts++;
                    sched.after(Faults.uniform(rnd, faults.downMin, faults.downMax), () -> restart(r));
                    more = true;
                }
                if (c.steps >= maxSteps) {
                    endReason = "max_steps";
                } else if (!more || sched.now() > timeCap
                        || sched.now() - c.lastStepMs > QUIESCENT_MS) {
                    endReason = "quiescent";
                } else if (faultsUntil != null && sched.now() >= faultsUntil && recovered()) {
                    endReason = "recovered";
                }
            }
        } catch (Cluster.BoundExceeded e) {
            endReason = "bound";
            detail = e.getMessage();
        }
        TreeMap<String, Object> end = new TreeMap<>();
        end.put("kind", "end");
        end.put("actions", c.actions);
        end.put("events", sched.events());
        end.put("end_reason", endReason);
        end.put("time_ms", sched.now());
        if (detail != null) {
            end.put("detail", detail);
        }
        end.put("kafka_errors", kafkaErrors);
        out.line(end);
    }

    long steps() {
        return c.steps;
    }

    long events() {
        return sched.events();
    }

    // ------------------------------------------------------------------ events

    private void tick(Replica r) {
        c.nowMs = sched.now();
        if (r.up) {
            c.settle(r);
        }
        sched.after(Faults.uniform(rnd, 5, 15), () -> tick(r));
    }

    /** Where a new message goes: delivered after the latency, lost, duplicated, held back. */
    private void fate(Network.Msg m, boolean mayDuplicate) {
        boolean f = faulty();
        long latency = Faults.uniform(rnd, faults.latencyMin, faults.latencyMax);
        if (f && faults.longDelay > 0 && rnd.nextDouble() < faults.longDelay) {
            latency += Faults.uniform(rnd, faults.longDelayMin, faults.longDelayMax);
        }
        if (f && faults.loss > 0 && rnd.nextDouble() < faults.loss) {
            sched.after(latency, () -> {
                c.nowMs = sched.now();
                c.drop(m);
            });
        } else {
            sched.after(latency, () -> deliver(m));
        }
        if (mayDuplicate && f && faults.duplication > 0 && rnd.nextDouble() < faults.duplication) {
            sched.after(Faults.uniform(rnd, 0, (int) latency), () -> {
                c.nowMs = sched.now();
                Network.Msg copy = c.duplicate(m);
                if (copy != null) {
                    fate(copy, false);
                }
            });
        }
    }

    private void deliver(Network.Msg m) {
        c.nowMs = sched.now();
        if (!c.net.contains(m)) {
            return;
        }
        if (blocked.contains(m.src.name + ">" + m.dest.name)) {
            c.drop(m);
            return;
        }
        Replica target = m.dest;
        if ("misdeliver".equals(plant) && rnd.nextDouble() < MISDELIVER) {
            List<Replica> others = new ArrayList<>();
            for (Replica r : c.replicas) {
                if (r != m.dest && r != m.src && r.up) {
                    others.add(r);
                }
            }
            if (!others.isEmpty()) {
                target = others.get(rnd.nextInt(others.size()));
            }
        }
        c.deliver(m, target);
    }

    private void client() {
        c.nowMs = sched.now();
        List<Replica> leaders = new ArrayList<>();
        for (Replica r : c.replicas) {
            if (r.up && r.voter && "Leader".equals(c.role(r))) {
                leaders.add(r);
            }
        }
        boolean allowed = bounds == null || bounds.maxClientRequests == null
            || clientRequests < bounds.maxClientRequests;
        if (!leaders.isEmpty() && allowed) {
            Replica r = leaders.get(rnd.nextInt(leaders.size()));
            String v = values.get(rnd.nextInt(values.size()));
            boolean fits = bounds == null || bounds.maxLog == null
                || c.views().get(r.name).log.size() < bounds.maxLog;
            if (fits && c.clientRequest(r, v)) {
                clientRequests++;
            }
        }
        sched.after(Faults.exp(rnd, faults.clientEveryMs), this::client);
    }

    private void crash() {
        c.nowMs = sched.now();
        if (faulty()) {
            maybeCrash();
        }
        sched.after(Faults.exp(rnd, faults.crashEveryMs), this::crash);
    }

    private void maybeCrash() {
        int maxDown = "disk-loss".equals(faults.name) ? 1 : Math.max(1, (voters.size() - 1) / 2);
        boolean restartsLeft = bounds == null || bounds.maxRestarts == null
            || c.proj.restartCount + pendingRestarts < bounds.maxRestarts;
        if (down >= maxDown || !restartsLeft) {
            return;
        }
        List<Replica> up = new ArrayList<>();
        for (Replica r : c.replicas) {
            if (r.up && crashAllowed(r)) {
                up.add(r);
            }
        }
        if (up.isEmpty()) {
            return;
        }
        if ("forgetful-store".equals(plant)) {
            // the planted store can only forget a vote that is persisted: prefer crashing a
            // replica that voted in an epoch whose leader it does not know (Voted, Candidate)
            List<Replica> voting = new ArrayList<>();
            for (Replica x : up) {
                String role = c.role(x);
                if ("Voted".equals(role) || "Candidate".equals(role)) {
                    voting.add(x);
                }
            }
            if (!voting.isEmpty()) {
                up = voting;
            }
        }
        Replica r = up.get(rnd.nextInt(up.size()));
        if (rnd.nextDouble() < faults.graceful && "Leader".equals(c.role(r)) && resignAllowed(r)) {
            c.resign(r);
        }
        c.crash(r);
        down++;
        pendingRestarts++;
        sched.after(Faults.uniform(rnd, faults.downMin, faults.downMax), () -> restart(r));
    }

    private boolean crashAllowed(Replica r) {
        if (r.voter && voters.size() == 1) {
            // a lone voter's restart is Resigned -> Candidate -> Leader inside
            // KafkaRaftClient.initialize: the Restart state is never observable apart
            return false;
        }
        if (bounds == null || bounds.maxEpoch == null) {
            return true;
        }
        Projection.View v = c.views().get(r.name);
        return !(r.name.equals(v.leaderId) && v.epoch >= bounds.maxEpoch);
    }

    private boolean resignAllowed(Replica r) {
        return bounds == null || bounds.maxEpoch == null || c.views().get(r.name).epoch < bounds.maxEpoch;
    }

    private void restart(Replica r) {
        c.nowMs = sched.now();
        boolean lose = faults.diskLoss > 0 && rnd.nextDouble() < faults.diskLoss && rejoinAllowed(r);
        down--;
        pendingRestarts--;
        c.restart(r, lose);
    }

    /** refimpl KRaftAdapter.rejoin_allowed (spec/KRaftHistory.tla "AfterNewLeaderCommitted"). */
    private boolean rejoinAllowed(Replica node) {
        Map<String, Projection.View> vs = c.views();
        int reached = vs.get(node.name).epoch;
        for (Replica l : c.replicas) {
            Projection.View lv = vs.get(l.name);
            if (l == node || !l.voter || !l.up || !"Leader".equals(lv.role) || lv.epoch <= reached) {
                continue;
            }
            boolean all = true;
            for (Replica v : c.replicas) {
                if (v == node) {
                    continue;
                }
                Projection.View w = vs.get(v.name);
                if (!v.up || w.epoch != lv.epoch || !l.name.equals(w.leaderId)) {
                    all = false;
                }
            }
            if (!all) {
                continue;
            }
            long hwm = lv.highWatermark;
            if (hwm > 0 && (Integer) lv.log.get((int) hwm - 1).get("epoch") == lv.epoch) {
                for (Network.Msg m : c.net.all()) {
                    if (m.dest == node && "VoteRequest".equals(m.spec.get("type"))) {
                        return false;
                    }
                }
                return true;
            }
        }
        return false;
    }

    private void partition() {
        c.nowMs = sched.now();
        if (faulty() && !partitioned && c.replicas.size() > 1) {
            List<Replica> side = new ArrayList<>();
            List<Replica> rest = new ArrayList<>();
            for (Replica r : c.replicas) {
                (rnd.nextBoolean() ? side : rest).add(r);
            }
            if (side.isEmpty() || rest.isEmpty()) {
                Replica r = c.replicas.get(rnd.nextInt(c.replicas.size()));
                side.clear();
                rest.clear();
                for (Replica x : c.replicas) {
                    (x == r ? side : rest).add(x);
                }
            }
            boolean oneWay = rnd.nextDouble() < faults.asymmetric;
            boolean forward = rnd.nextBoolean();
            for (Replica a : side) {
                for (Replica b : rest) {
                    if (!oneWay || forward) {
                        blocked.add(a.name + ">" + b.name);
                    }
                    if (!oneWay || !forward) {
                        blocked.add(b.name + ">" + a.name);
                    }
                }
            }
            partitioned = true;
            sched.after(Faults.uniform(rnd, faults.partitionMin, faults.partitionMax), () -> {
                blocked.clear();
                partitioned = false;
            });
        }
        sched.after(Faults.exp(rnd, faults.partitionEveryMs), this::partition);
    }

    /**
     * Liveness after the faults stop (refimpl KRaftAdapter.recovered): a leader that a majority
     * of the voters follows has committed a record of its epoch, and every other replica is up,
     * follows it in its epoch and has reached the HWM the leader had when this first held.
     */
    private boolean recovered() {
        if (!blocked.isEmpty()) {
            blocked.clear();
            partitioned = false;
        }
        Map<String, Projection.View> vs = c.views();
        for (Replica l : c.replicas) {
            Projection.View lv = vs.get(l.name);
            if (!l.up || !l.voter || !"Leader".equals(lv.role)) {
                continue;
            }
            int follow = 0;
            for (Replica v : c.replicas) {
                Projection.View w = vs.get(v.name);
                if (v.voter && v.up && w.epoch == lv.epoch && l.name.equals(w.leaderId)) {
                    follow++;
                }
            }
            if (follow * 2 <= voters.size()) {
                continue;
            }
            long hwm = lv.highWatermark;
            if (hwm == 0 || (Integer) lv.log.get((int) hwm - 1).get("epoch") != lv.epoch) {
                return false;
            }
            if (catchUpTarget == null || catchUpTarget[0] != l.id || catchUpTarget[1] != lv.epoch) {
                catchUpTarget = new long[] {l.id, lv.epoch, hwm};
            }
            for (Replica v : c.replicas) {
                Projection.View w = vs.get(v.name);
                if (v == l) {
                    continue;
                }
                if (!v.up || w.epoch != lv.epoch || !l.name.equals(w.leaderId)
                        || w.highWatermark < catchUpTarget[2]) {
                    return false;
                }
            }
            return true;
        }
        catchUpTarget = null;
        return false;
    }

    static Map<String, Object> constants(List<String> voters, List<String> observers,
                                         List<String> values, RunBounds b, List<String> misconfigured) {
        TreeMap<String, Object> m = new TreeMap<>();
        if (b != null) {
            m.putAll(b.constants);
        }
        m.put("Voters", setOf(voters));
        m.put("Observers", setOf(observers));
        m.put("Values", setOf(values));
        m.put("MisconfiguredServers", setOf(b != null ? b.misconfigured : misconfigured));
        return m;
    }

    private static Map<String, Object> setOf(List<String> names) {
        Map<String, Object> s = new HashMap<>();
        s.put("#set", new ArrayList<>(new TreeSet<>(names)));
        return s;
    }
}
