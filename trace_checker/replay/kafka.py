"""The Kafka driver: Kafka 3.7's raft client driven through the Kafka harness's `serve` mode.

Contract (kafka_harness/PROTOCOL.md): `java -jar kafka-harness-raft.jar serve ...` reads one JSON
command per line on stdin and answers one JSON line per command on stdout (commands init,
deliver, timeout, drop, duplicate, restart, client, state; the module's README documents
them).  The harness cannot branch from a saved state (Kafka's raft client is not a pure value),
so `snapshot()` is the list of commands that led to the current state and `restore()` replays
them from `init` -- paths are "replayed from Init where the driver cannot branch".

A spec step becomes one command by the difference between the state before and the state the
spec expects (`spec_event`): the message a Receive* step consumes, the request a Send* step
adds, the node whose epoch a Timeout bumps, the client value appended, ...

Until the harness's serve mode is built and documented (kafka_harness/raft/README.md), `open`
fails closed: DriverError naming what is missing (the CLI exits 2).
"""

from __future__ import annotations

import re
from typing import Any

from kraftcore.tlc.manifest import ConfigEntry
from trace_checker.graph import StateGraph
from trace_checker.replay.driver import DriverError

__all__ = ["KafkaDriver", "spec_event", "serve_documented"]

_SERVE_DOC = re.compile(r"^#+\s*.*\bserve\b", re.I | re.M)


def serve_documented() -> str | None:
    """None when the harness jar exists and its README documents the serve mode; else why
    not."""
    from kafka_bridge.toolchain import JARS
    from kraftcore.paths import REPO_ROOT

    jar = JARS["raft"]
    readme = REPO_ROOT / "kafka_harness" / "raft" / "README.md"
    if not jar.is_file():
        return (f"the Kafka harness is not built ({jar.relative_to(REPO_ROOT)} is missing; "
                "`make setup` builds it)")
    if not readme.is_file() or not _SERVE_DOC.search(readme.read_text(encoding="utf-8")):
        return (f"the harness's scripted `serve` mode is not documented in "
                f"{readme.relative_to(REPO_ROOT)} (kafka_harness/PROTOCOL.md: serve mode for "
                "kraftcheck replay), so no Kafka driver can speak it yet")
    return ("the Kafka driver does not speak this harness's serve mode yet "
            "(trace_checker/replay/kafka.py)")


class KafkaDriver:
    impl = "kafka"

    @classmethod
    def open(cls, entry: ConfigEntry, g: StateGraph, bug: str | None) -> "KafkaDriver":
        if bug is not None:
            raise DriverError("--bug plants a refimpl bug; the Kafka harness has its own plants")
        why = serve_documented()
        raise DriverError(f"--impl kafka cannot run: {why}")


def _bag(v: Any) -> dict:
    return dict(v.items()) if hasattr(v, "items") else {}


def spec_event(before: dict, action: str, after: dict) -> dict:
    """The driver event a spec step stands for, from the states before and after it:
    {"kind": deliver | send | drop | duplicate | timeout | client | restart | resign,
     "node": ..., "msg": ..., "value": ...} (the fields the kind needs)."""
    b, a = _bag(before.get("msgs")), _bag(after.get("msgs"))
    gone = [m for m in b if a.get(m, 0) < b[m]]
    new = [m for m in a if a[m] > b.get(m, 0)]
    if action.startswith("Receive"):
        m = gone[0] if gone else None
        return {"kind": "deliver", "msg": m, "node": m["dest"] if m is not None else None}
    if action.startswith("Send"):
        m = new[0] if new else None
        return {"kind": "send", "msg": m, "node": m["src"] if m is not None else None}
    if action == "DropMessage":
        return {"kind": "drop", "msg": gone[0] if gone else None}
    if action == "DuplicateMessage":
        return {"kind": "duplicate", "msg": new[0] if new else None}
    changed = sorted(n for n in (after.get("currentEpoch") or {})
                     if any((before.get(v) or {}).get(n) != (after.get(v) or {}).get(n)
                            for v in ("currentEpoch", "role", "log", "votedId", "highWatermark")))
    node = changed[0] if changed else None
    if action == "ClientRequest" and node is not None:
        return {"kind": "client", "node": node, "value": after["log"][node][-1]["value"]}
    if action in ("Timeout", "LeaderProgressTimeout"):
        return {"kind": "timeout", "node": node}
    if action in ("Restart", "LoseDisk"):
        return {"kind": "restart", "node": node, "lose_disk": action == "LoseDisk"}
    if action == "Resign":
        return {"kind": "resign", "node": node}
    return {"kind": "unknown", "action": action}
