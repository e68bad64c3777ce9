package io.kraftcheck.harness.raft;

import java.util.Map;

/** Placeholder replaced below. */
final class Serve {
    Serve(Map<String, String> o) { }

    void run() {
        throw new UnsupportedOperationException("serve: not yet");
    }
}
