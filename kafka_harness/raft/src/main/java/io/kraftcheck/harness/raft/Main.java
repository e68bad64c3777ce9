package io.kraftcheck.harness.raft;

import java.io.File;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The command line (../PROTOCOL.md):
 * <pre>
 *   simulate --seeds 0,1,2|A:B --faults P --steps N --voters n1,n2,n3 [--observers o1]
 *            [--values v1,v2] [--misconfigured n3] [--fetch-batches N]
 *            [--bounds BOUNDS.json] [--plant NAME] [--faults-until MS] --out DIR
 *   serve    [--voters ...] [--observers ...] [--plant NAME]   (JSON commands on stdin; README.md)
 * </pre>
 * Any failure of the harness itself: one line on stderr and exit 2.
 */
public final class Main {
    static final List<String> PLANTS = Arrays.asList("lying-flush", "forgetful-store", "misdeliver");

    private Main() { }

    public static void main(String[] args) {
        try {
            if (args.length == 0) {
                throw new IllegalArgumentException("usage: simulate ... | serve ... (see PROTOCOL.md)");
            }
            Map<String, String> opts = options(Arrays.copyOfRange(args, 1, args.length));
            switch (args[0]) {
                case "simulate":
                    simulate(opts);
                    break;
                case "serve":
                    new Serve(opts).run();
                    break;
                case "version":
                    System.out.println(kafkaVersion());
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + args[0] + " (simulate, serve)");
            }
            System.exit(0);
        } catch (Throwable t) {
            String msg = t.getMessage() == null ? t.toString() : t.getMessage();
            System.err.println("kafka-harness-raft: " + t.getClass().getSimpleName() + ": "
                + msg.replace('\n', ' '));
            System.exit(2);
        }
    }

    static String kafkaVersion() {
        return AppInfoParser.getVersion();
    }

    static Map<String, String> options(String[] args) {
        Map<String, String> m = new TreeMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + args[i]);
            }
            String k = args[i].substring(2);
            if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
                m.put(k, "");
            } else {
                m.put(k, args[++i]);
            }
        }
        return m;
    }

    static List<String> list(String s) {
        List<String> out = new ArrayList<>();
        if (s == null || s.isEmpty()) {
            return out;
        }
        for (String x : s.split(",")) {
            if (!x.trim().isEmpty()) {
                out.add(x.trim());
            }
        }
        return out;
    }

    static List<Long> seeds(String s) {
        List<Long> out = new ArrayList<>();
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("--seeds is required");
        }
        for (String part : s.split(",")) {
            if (part.contains(":")) {
                String[] ab = part.split(":");
                long a = Long.parseLong(ab[0].trim());
                long b = Long.parseLong(ab[1].trim());
                for (long x = a; x <= b; x++) {
                    out.add(x);
                }
            } else {
                out.add(Long.parseLong(part.trim()));
            }
        }
        return out;
    }

    static String plant(Map<String, String> o) {
        String p = o.get("plant");
        if (p == null || p.isEmpty() || "none".equals(p)) {
            return null;
        }
        if (!PLANTS.contains(p)) {
            throw new IllegalArgumentException("unknown --plant " + p + "; choose one of " + PLANTS);
        }
        return p;
    }

    static void simulate(Map<String, String> o) {
        List<Long> seeds = seeds(o.get("seeds"));
        Faults faults = Faults.get(o.getOrDefault("faults", "chaos"));
        int steps = Integer.parseInt(o.getOrDefault("steps", "1000"));
        if (!o.containsKey("out") || o.get("out").isEmpty()) {
            throw new IllegalArgumentException("--out DIR is required");
        }
        Path out = Paths.get(o.get("out"));
        RunBounds bounds = o.containsKey("bounds") ? RunBounds.read(new File(o.get("bounds"))) : null;
        List<String> voters = bounds != null ? bounds.voters : list(o.getOrDefault("voters", "n1,n2,n3"));
        List<String> observers = bounds != null ? bounds.observers : list(o.get("observers"));
        List<String> values = bounds != null && bounds.values != null ? bounds.values
            : list(o.getOrDefault("values", "v1,v2"));
        if (voters.isEmpty()) {
            throw new IllegalArgumentException("no voters");
        }
        if (values.isEmpty()) {
            throw new IllegalArgumentException("no client values");
        }
        String plant = plant(o);
        Long faultsUntil = o.containsKey("faults-until") ? Long.parseLong(o.get("faults-until")) : null;
        if (bounds != null && (o.containsKey("misconfigured") || o.containsKey("fetch-batches"))) {
            throw new IllegalArgumentException("--misconfigured / --fetch-batches come from the bounds "
                + "(MisconfiguredServers, KafkaFetchReturnsBatches) under --bounds");
        }
        List<String> misconfigured = list(o.get("misconfigured"));
        int readBatches = Integer.parseInt(o.getOrDefault("fetch-batches", "1"));
        for (long seed : seeds) {
            TreeMap<String, Object> meta = new TreeMap<>();
            meta.put("kind", "meta");
            meta.put("impl", "kafka");
            meta.put("impl_version", kafkaVersion());
            meta.put("protocol", "kraft");
            meta.put("seed", seed);
            meta.put("fault_profile", faults.name);
            meta.put("plant", plant);
            meta.put("steps_budget", steps);
            meta.put("faults_until", faultsUntil);
            meta.put("bounds_config", bounds == null ? null : bounds.config);
            meta.put("constants", Simulation.constants(voters, observers, values, bounds, misconfigured));
            Simulation sim = new Simulation(seed, faults, steps, voters, observers, values, bounds,
                plant, faultsUntil);
            sim.misconfigured = misconfigured;
            sim.readBatches = readBatches;
            try (RawWriter w = new RawWriter(out, seed)) {
                sim.run(w, meta);
                w.commit();
            }
        }
    }
}
