"""The Kafka driver: Kafka 3.7's raft client driven through the Kafka harness's `serve` mode.

Contract (kafka_harness/PROTOCOL.md): `java -jar kafka-harness-raft.jar serve ...` reads one JSON
command per line on stdin and answers one JSON line per command on stdout (commands init,
deliver, timeout, drop, duplicate, restart, client, state; the module's README documents
them).  The harness cannot branch from a saved state (Kafka's raft client is not a pure value),
so `snapshot()` is the list of commands that led to the current state and `restore()` replays
them from `init` -- paths are "replayed from Init where the driver cannot branch".  The replay is
one harness command (`restore`: the whole log in one JSON array, replayed inside the JVM without
answering its steps); its answer's `state_sha` (SHA-256 of the projected state) must equal the
one the driver saw when it took the snapshot, else DriverError (fail closed: a replay that does
not reach the same state would judge edges from another state).

A spec step becomes one command by the difference between the state before and the state the
spec expects (`spec_event`): the message a Receive* step consumes, the request a Send* step
adds, the node whose epoch a Timeout bumps, the client value appended, ...

When the harness is not built or its serve mode not documented (kafka_harness/raft/README.md),
`open` fails closed: DriverError naming what is missing (the CLI exits 2).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from kraftcore.tlc.manifest import ConfigEntry
from trace_checker.graph import StateGraph
from kraftcore.values import from_itf, make_fn, to_itf
from trace_checker.replay.driver import Applied, DriverError, SpecStep

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
    return None


@dataclass(frozen=True)
class _KSnap:
    log: tuple          # the commands sent since init (JSON texts)
    pending: tuple      # steps of the last answer not yet matched: (action, state, params)
    state: Any          # the spec state the driver is in (a dict)
    held: tuple = ()    # the outbox: requests Kafka sent that the spec has not sent yet
    kstate: Any = None  # Kafka's projected state, the held requests included
    sha: str | None = None  # the harness's state_sha after the log (restore checks it)


class KafkaDriver:
    """Kafka 3.7's raft client through `kafka-harness-raft.jar serve` (see the module doc).

    A command may answer with several spec steps (a replica finishes its work at that instant:
    a Timeout's Vote requests are sent in the same answer); they are matched one by one against
    the following spec steps of the path (`pending`).  A spec step the answer already went past
    with another step diverges: Kafka took that step at once, the spec let it wait.

    The outbox (`held`), as the refimpl driver's: the requests an answer sends after its first
    step (a Timeout's VoteRequests, a new leader's BeginQuorumEpochs) are in Kafka's network but
    held out of the projected `msgs` until the spec's Send* of an equal message releases them
    (no harness command).  Nothing is delivered, dropped or duplicated while held (the spec
    cannot name it), so holding only moves the Send* later, as network latency would; a held
    request the spec never sends is one the network lost."""

    impl = "kafka"
    ADVANCE_MS, ADVANCE_TRIES = 100, 40

    @classmethod
    def check(cls) -> None:
        """DriverError unless the harness can be driven (fail closed)."""
        why = serve_documented()
        if why is not None:
            raise DriverError(f"--impl kafka cannot run: {why}")

    @classmethod
    def open(cls, entry: ConfigEntry, g: StateGraph, bug: str | None) -> "KafkaDriver":
        if bug is not None:
            raise DriverError("--bug plants a refimpl bug; the Kafka harness has its own plants")
        cls.check()
        from kafka_bridge.toolchain import HarnessError, find_harness
        from refimpl.sim.bounds import parse_cfg

        b = parse_cfg(entry.cfg_path)
        voters = sorted(b.set("Voters") or ())
        observers = sorted(b.set("Observers") or ())
        if not voters:
            raise DriverError(f"{entry.cfg}: no Voters: the Kafka driver needs a KRaft config")
        try:
            h = find_harness("raft")
        except HarnessError as e:
            raise DriverError(f"--impl kafka cannot run: {e}") from None
        d = cls(h.command("serve", "--voters", ",".join(voters),
                          *(("--observers", ",".join(observers)) if observers else ())),
                voters, observers, g.codec.variables)
        try:
            version = subprocess.run(h.command("version"), capture_output=True, text=True,
                                     timeout=120).stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DriverError(f"--impl kafka: the harness does not tell its version: {e}") from None
        # the divergence traces' header (kraftcheck-trace/1 `impl`, as the harness's own traces)
        d.impl_header = {"name": "kafka", "version": version or "unknown"}
        return d

    def __init__(self, command: list[str], voters: list[str], observers: list[str],
                 variables: tuple[str, ...]):
        self.command, self.voters, self.observers = command, voters, observers
        self.variables = tuple(variables)
        self.proc: subprocess.Popen | None = None
        self.events_applied = 0
        self._snap: _KSnap | None = None
        self.log: list[str] = []
        self.pending: list = []
        self.held: list = []
        self.state: dict = {}
        self.kstate: dict = {}
        self.sha: str | None = None
        self.restores = 0             # restore commands sent
        self.commands_replayed = 0    # commands they replayed inside the harness
        self.impl_header: dict | None = None

    def fork(self) -> "KafkaDriver":
        """Another driver on its own harness process, with the same cluster (the engine's
        parallel workers: any driver restores any snapshot, a command log from init)."""
        d = KafkaDriver(self.command, self.voters, self.observers, self.variables)
        d.impl_header = self.impl_header
        return d

    def merge_counts(self, other: "KafkaDriver") -> None:
        """Add a fork's counters (commands sent, restores) to this driver's."""
        self.events_applied += other.events_applied
        self.restores += other.restores
        self.commands_replayed += other.commands_replayed

    # ---- the harness process ------------------------------------------------------
    def _start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, bufsize=1)
        except OSError as e:
            raise DriverError(f"--impl kafka: cannot start the harness: {e}") from None

    def _send(self, cmd: dict | str) -> dict:
        """One command (a dict, or its JSON text) and its answer; `state_sha` of an answer that
        is ok is kept (the state the harness is in)."""
        self._start()
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        text = cmd if isinstance(cmd, str) else json.dumps(cmd, sort_keys=True)
        try:
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise DriverError(f"the Kafka harness stopped: {e}") from None
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise DriverError(f"the Kafka harness stopped: {err.strip()[-500:]}")
        self.events_applied += 1
        ans = json.loads(line)
        if ans.get("ok"):
            self.sha = ans.get("state_sha")
        return ans

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @staticmethod
    def _decode(state: dict) -> dict:
        return {k: from_itf(v) for k, v in state.items()}

    # ---- Driver protocol ----------------------------------------------------------
    def _init_cmd(self) -> str:
        return json.dumps({"cmd": "init", "voters": self.voters, "observers": self.observers,
                           "seed": 0, "plant": None}, sort_keys=True)

    def reset(self) -> dict:
        ans = self._send(self._init_cmd())
        if not ans.get("ok"):
            raise DriverError(f"the Kafka harness refused init: {ans.get('error')}")
        steps = ans.get("steps") or []
        self.log, self.state = [], self._decode(steps[0]["state"] if steps else ans["state"])
        self.pending = [_decoded(x) for x in steps[1:]]
        self.held, self.kstate = [], self.state
        self._snap = None
        return self.state

    def snapshot(self) -> _KSnap:
        if self._snap is None:
            self._snap = _KSnap(tuple(self.log), tuple(self.pending), self.state,
                                tuple(self.held), self.kstate, self.sha)
        return self._snap

    def restore(self, snap: _KSnap) -> None:
        if snap is self._snap:
            return
        # one round trip: the harness rebuilds the cluster from init and replays the log
        # (Serve.restore), answering only the state's hash
        ans = self._send('{"cmd": "restore", "log": [' + ", ".join((self._init_cmd(),) + snap.log)
                         + "]}")
        self.restores += 1
        self.commands_replayed += len(snap.log) + 1
        if not ans.get("ok"):
            raise DriverError(f"the Kafka harness did not replay a snapshot's {len(snap.log)} "
                              f"commands (restore): {ans.get('error')} (a harness built before "
                              "`restore` existed? `make setup` rebuilds it)")
        if snap.sha is None or ans.get("state_sha") != snap.sha:
            raise DriverError(self._restore_mismatch(snap, ans.get("state_sha")))
        self.log, self.pending, self.state = list(snap.log), list(snap.pending), snap.state
        self.held, self.kstate = list(snap.held), snap.kstate
        self._snap = snap

    def _restore_mismatch(self, snap: _KSnap, got: str | None) -> str:
        """Why a restore did not reach the snapshot's state (the variables that differ)."""
        why = (f"the Kafka harness's restore of {len(snap.log)} commands reached another state "
               f"(state_sha {got}) than the commands did one by one ({snap.sha}): the harness is "
               "not deterministic, so no edge from this state can be judged")
        try:
            now = self._send({"cmd": "state"}).get("state") or {}
            reached = self._decode(now)
            last = (snap.pending[-1][1] if snap.pending else snap.kstate) or {}
            diff = sorted(v for v in set(reached) | set(last) if reached.get(v) != last.get(v))
            why += f"; differing variables: {', '.join(diff) or 'none (another encoding)'}"
        except DriverError:
            pass
        return why

    def apply(self, step: SpecStep) -> Applied:
        self._snap = None
        if self.pending:
            action, kst, params = self.pending.pop(0)
            self.kstate = kst
            st = self.state = _unheld(kst, self.held)
            if action == step.action and st == step.expected:
                return Applied(True, "the previous command's next step", st, action, params)
            return Applied(False, "the previous command's next step", st, action, params,
                           reason=f"Kafka went on with {action} within the previous command "
                                  f"(a replica finishes its work at once); the spec expected "
                                  f"{step.action}")
        ev = spec_event(self.state, step.action, step.expected)
        if ev.get("kind") == "send" and ev.get("msg") in self.held:
            self.held.remove(ev["msg"])
            st = self.state = _unheld(self.kstate, self.held)
            ok = st == step.expected
            return Applied(ok, "release the held request", st, step.action,
                           {"msg": ev["msg"], "node": ev["node"]},
                           reason=None if ok else "releasing the held request reaches another "
                                                  "state")
        if ev.get("kind") == "send" and ev.get("node") in self.observers and \
                ev["msg"]["type"] == "FetchRequest":
            # an observer's Fetch: the voter it asks is Kafka's random choice (KIP-595
            # "BeginQuorumEpoch": "to any of the voters at random"), steered to this one
            ev = {**ev, "fetch_to": ev["msg"]["dest"]}
        cmds = _commands(ev)
        if cmds is None:
            return Applied(False, drivable=False, reason=(
                f"no harness command for {step.action} ({ev.get('kind')})"))
        steps: list = []
        ans: dict = {}
        for cmd in cmds:
            ans = self._send(cmd)
            if not ans.get("ok"):
                return Applied(False, json.dumps(cmd, sort_keys=True), self.state, None,
                               reason=f"the harness refused {cmd['cmd']}: {ans.get('error')}")
            self.log.append(json.dumps(cmd, sort_keys=True))
            steps = ans.get("steps") or []
            if steps:
                break
        if not steps:
            return Applied(False, json.dumps(cmds[0], sort_keys=True), self.state, None,
                           reason=f"{cmds[0]['cmd']} produced no step")
        dec = [_decoded(x) for x in steps]
        # requests Kafka (re)sent before the step the spec takes (a leader re-sending
        # BeginQuorumEpoch while its check-quorum timer runs) go to the outbox too
        while len(dec) > 1 and not _sends(step.action) and _sends(dec[0][0], dec[0][2]):
            self.held.append(dec.pop(0)[2]["msg"])
        first, rest = dec[0], dec[1:]
        if rest and all(_sends(a, p) for a, _, p in rest):
            # the requests the step made go to the outbox (class doc)
            self.held += [p["msg"] for _, _, p in rest]
            self.kstate, self.pending = rest[-1][1], []
        else:
            self.kstate, self.pending = first[1], rest
        st = self.state = _unheld(self.kstate, self.held)
        desc = json.dumps(cmds[0], sort_keys=True)
        label, params = first[0], first[2]
        if st == step.expected and (label == step.action or (
                label == "DropMessage" and step.action.startswith("Receive"))):
            # DropMessage for a Receive*: a response Kafka no longer expects is dropped by
            # the harness (README "Steps"); the spec's Receive* that only consumes it is the
            # same state change
            return Applied(True, desc, st, label, params)
        return Applied(False, desc, st, label, params,
                       reason=f"{cmds[0]['cmd']} gave {label} reaching another state")


def _decoded(step: dict) -> tuple[str, dict, dict]:
    """(action, state, params) of a harness answer's step, as canonical values."""
    params = {k: v if v is None else from_itf(v) for k, v in (step.get("params") or {}).items()}
    return step["action"], KafkaDriver._decode(step["state"]), params


def _sends(action: str, params: dict | None = None) -> bool:
    """A step that only puts a request in flight (with `params`: one naming its message)."""
    return ((action.startswith("Send") or action == "DuplicateMessage")
            and (params is None or params.get("msg") is not None))


def _unheld(state: dict, held: list) -> dict:
    """`state` with the held requests taken out of its `msgs` bag (zero counts removed)."""
    if not held:
        return state
    bag = dict(_bag(state.get("msgs")))
    for m in held:
        if bag.get(m, 0) > 0:
            bag[m] -= 1
            if bag[m] == 0:
                del bag[m]
    return {**state, "msgs": make_fn(bag)}


def _commands(ev: dict) -> list[dict] | None:
    """The harness command(s) of a spec event (a Send: advance the sender's clock until it
    sends)."""
    k = ev.get("kind")
    if k in ("deliver", "drop", "duplicate"):
        if ev.get("msg") is None:
            return None
        cmd = {"cmd": k, "msg": to_itf(ev["msg"])}
        if ev.get("read_limit"):
            cmd["read_limit"] = ev["read_limit"]
        return [cmd]
    if k == "timeout" and ev.get("node"):
        return [{"cmd": "timeout", "node": ev["node"]}]
    if k == "client" and ev.get("node"):
        return [{"cmd": "client", "node": ev["node"], "value": ev["value"]}]
    if k == "resign" and ev.get("node"):
        return [{"cmd": "resign", "node": ev["node"]}]
    if k == "restart" and ev.get("node"):
        return [{"cmd": "lose-disk" if ev.get("lose_disk") else "restart", "node": ev["node"]}]
    if k == "send" and ev.get("node"):
        cmd = {"cmd": "advance", "node": ev["node"], "ms": KafkaDriver.ADVANCE_MS}
        if ev.get("fetch_to"):
            cmd["fetch_to"] = ev["fetch_to"]
        return [cmd for _ in range(KafkaDriver.ADVANCE_TRIES)]
    return None


def _bag(v: Any) -> dict:
    return dict(v.items()) if hasattr(v, "items") else {}


def spec_event(before: dict, action: str, after: dict) -> dict:
    """The driver event a spec step stands for, from the states before and after it:
    {"kind": deliver | send | drop | duplicate | timeout | client | restart | resign,
     "node": ..., "msg": ..., "value": ..., "read_limit": ...} (the fields the kind needs;
    read_limit: the records of the FetchResponse a delivery must produce, when more than one)."""
    b, a = _bag(before.get("msgs")), _bag(after.get("msgs"))
    gone = [m for m in b if a.get(m, 0) < b[m]]
    new = [m for m in a if a[m] > b.get(m, 0)]
    if action.startswith("Receive"):
        m = gone[0] if gone else None
        ev = {"kind": "deliver", "msg": m, "node": m["dest"] if m is not None else None}
        # a leader's FetchResponse may carry several records (KafkaFetchReturnsBatches): the
        # harness's log read returns as many (its read_limit, Kafka's fetch max bytes)
        n = max((len(x.get("records") or ()) for x in new
                 if x.get("type") == "FetchResponse"), default=0)
        if n > 1:
            ev["read_limit"] = n
        return ev
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
