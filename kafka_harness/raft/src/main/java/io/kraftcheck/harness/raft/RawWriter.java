package io.kraftcheck.harness.raft;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes one run as the raw step stream of ../PROTOCOL.md (meta line, one line per spec step, end
 * line), each line canonical JSON (sorted keys, compact), atomically: a temporary file in the same
 * folder renamed over DIR/<seed>.raw.jsonl when the run is complete.
 */
final class RawWriter implements Cluster.Sink, AutoCloseable {
    private final Path target;
    private final Path tmp;
    private final BufferedWriter out;
    private boolean done;

    RawWriter(Path dir, long seed) {
        try {
            Files.createDirectories(dir);
            this.target = dir.resolve(seed + ".raw.jsonl");
            this.tmp = Files.createTempFile(dir, "." + seed + ".", ".tmp");
            this.out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write in " + dir + ": " + e.getMessage(), e);
        }
    }

    void line(Map<String, Object> obj) {
        try {
            out.write(Projection.json(obj));
            out.write('\n');
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void step(String action, Map<String, Object> params, Map<String, Object> state, long timeMs) {
        TreeMap<String, Object> l = new TreeMap<>();
        l.put("kind", "step");
        l.put("action", action);
        l.put("params", params);
        l.put("state", state);
        l.put("time_ms", timeMs);
        line(l);
    }

    /** Close and rename into place. */
    void commit() {
        try {
            out.close();
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            done = true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (!done) {
            try {
                out.close();
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // best effort: the temporary file is hidden and never read
            }
        }
    }
}
