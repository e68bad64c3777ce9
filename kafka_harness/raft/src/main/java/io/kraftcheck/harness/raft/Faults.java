package io.kraftcheck.harness.raft;

import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The fault profiles of refimpl/sim/faults.py, under the same names and with the same numbers:
 * one-way latency (uniform; reordering comes from it), loss, duplication, occasional long delays,
 * partitions (symmetric or one-way), crashes (some graceful: the leader resigns first), downtime,
 * disk loss at restart, and the client workload.  Rates are mean intervals in virtual ms
 * (exponentially distributed); 0 disables.  The refimpl's "unclean" shutdown has no separate
 * meaning here: every Kafka crash loses what the log did not flush (MockLog.reopen).
 */
final class Faults {
    final String name;
    final int latencyMin;
    final int latencyMax;
    final double loss;
    final double duplication;
    final int partitionEveryMs;
    final int partitionMin;
    final int partitionMax;
    final double asymmetric;
    final int crashEveryMs;
    final int downMin;
    final int downMax;
    final double graceful;
    final int clientEveryMs;
    final double diskLoss;
    final double longDelay;
    final int longDelayMin;
    final int longDelayMax;

    private Faults(String name, int latMin, int latMax, double loss, double dup, int partEvery,
                   int partMin, int partMax, int crashEvery, int downMin, int downMax,
                   double graceful, int clientEvery, double diskLoss, double longDelay,
                   int longMin, int longMax) {
        this.name = name;
        this.latencyMin = latMin;
        this.latencyMax = latMax;
        this.loss = loss;
        this.duplication = dup;
        this.partitionEveryMs = partEvery;
        this.partitionMin = partMin;
        this.partitionMax = partMax;
        this.asymmetric = 0.5;
        this.crashEveryMs = crashEvery;
        this.downMin = downMin;
        this.downMax = downMax;
        this.graceful = graceful;
        this.clientEveryMs = clientEvery;
        this.diskLoss = diskLoss;
        this.longDelay = longDelay;
        this.longDelayMin = longMin;
        this.longDelayMax = longMax;
    }

    static final Map<String, Faults> PROFILES = new TreeMap<>();

    private static void p(Faults f) {
        PROFILES.put(f.name, f);
    }

    static {
        //            name         latency   loss  dup   part every/duration  crash every/down  grace client disk  long delay
        p(new Faults("none",       1, 10,    0,    0,    0, 500, 3000,        0, 100, 3000,     0.3, 150, 0,    0, 200, 3000));
        p(new Faults("lossy",      1, 60,    0.1,  0.05, 0, 500, 3000,        0, 100, 3000,     0.3, 150, 0,    0, 200, 3000));
        p(new Faults("partitions", 1, 20,    0.01, 0,    1500, 500, 3000,     0, 100, 3000,     0.3, 150, 0,    0, 200, 3000));
        p(new Faults("crashes",    1, 20,    0,    0,    0, 500, 3000,        1200, 50, 2500,   0.3, 150, 0,    0, 200, 3000));
        p(new Faults("chaos",      1, 80,    0.08, 0.05, 1500, 500, 3000,     1000, 50, 2500,   0.3, 80,  0,    0, 200, 3000));
        p(new Faults("delays",     1, 20,    0,    0.03, 2500, 300, 1500,     1500, 50, 1500,   0.3, 150, 0,    0.12, 150, 2500));
        p(new Faults("disk-loss",  1, 20,    0,    0,    0, 500, 3000,        1500, 50, 2500,   0.2, 150, 0.6,  0, 200, 3000));
    }

    static Faults get(String name) {
        Faults f = PROFILES.get(name);
        if (f == null) {
            throw new IllegalArgumentException("unknown fault profile " + name + "; choose one of: "
                + String.join(", ", PROFILES.keySet()));
        }
        return f;
    }

    static int uniform(Random rnd, int lo, int hi) {
        return hi <= lo ? lo : lo + rnd.nextInt(hi - lo + 1);
    }

    static long exp(Random rnd, int meanMs) {
        return Math.max(1L, Math.round(-Math.log(1.0 - rnd.nextDouble()) * meanMs));
    }
}
