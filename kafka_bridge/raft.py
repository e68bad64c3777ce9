"""`kraftcheck simulate --impl kafka` for KIP-595: Apache Kafka's raft client (kafka_harness/raft).

One JVM runs every seed (`java -jar kafka-harness-raft.jar simulate --seeds ...`, PROTOCOL.md);
each seed's raw step file becomes a `kraftcheck-trace/1` trace (wrap.py) with the refimpl's
writer, spec module KRaft, header `impl` {"name": "kafka", "version": ...}, and the same
manifest.json and footer as the refimpl's `kraftcheck simulate` (refimpl.sim.runner), checked
online by the spec's invariants on the projected states (kraft_invariants.py).  A run that may
lose a disk (loses_disks: the disk-loss profile, unless MaxRestarts = 0) writes LoseDisk steps,
an action of spec/KRaftHistory.tla: its traces are of module KRaftHistory, with that module's
ghost map ghostLeaders computed here from the projected states (add_ghost_leaders), and are
judged by kraft-deep-kafka-3.7-disk-loss / kraft-deep-3voters-disk-loss
(docs/kafka-conformance.md §1).

Trace ids: `kafka-kraft-<faults>-<seed>`, with a planted environment fault
`kafka-kraft-<faults>-<plant>-<seed>`, under --bounds `...@<config>` (refimpl.sim.runner.trace_id
with the protocol `kafka-kraft`), so they never collide with the refimpl's in one corpus.

Under `--bounds CFG` the config's constants are handed to the harness as BOUNDS.json
({"config": NAME, "file": PATH, "constants": {...}}), which keeps the run inside them (holding the
election timers that would leave MaxEpoch / TimeoutVoters, so a run lasts its --steps) and takes
the cluster from them: any number of Voters (one: Kafka's single-node quorum), Observers,
MisconfiguredServers (formatted with cluster-B, MCKRaft's MCClusterOf; the online invariants use
the same cluster ids) and KafkaFetchReturnsBatches (TRUE: a leader's read is not cut to one
record).  A config without Max* constants bounds only the cluster: kafka_harness/raft/bounds/ has
the four the findings F4, F10, F11, F12 need (docs/kafka-conformance.md).

Planted environment faults (`--plant`, faults Kafka is not built to survive; the harness plants
them): lying-flush (the log reports a flush it did not do and loses the suffix on restart),
forgetful-store (the quorum-state store forgets the vote on restart), misdeliver (the network
delivers a message to a node other than its destination).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraftcore.output import OutputError, write_atomic
from kraftcore.values import Fn, ValueError_, from_itf, to_itf
from refimpl.kraft import spec_mapping as sm
from refimpl.kraft.adapter import KRaftBounds
from refimpl.sim.bounds import BoundsError, parse_cfg
from refimpl.sim.faults import PROFILES
from refimpl.sim.runner import (UsageError, bounds_label, finish_manifest, folder_lock,
                                seed_label, trace_id)
from refimpl.sim.simulator import DEFAULT_LIVENESS_BOUND_MS

from kafka_bridge import RAFT_PLANTS
from kafka_bridge.kraft_invariants import (INVARIANTS, Recovery, StateMonitor,
                                           cluster_of_constants, stable_leader)
from kafka_bridge.toolchain import HarnessError, find_harness, run_harness
from kafka_bridge.wrap import RawFormatError, RawRun, read_raw, wrap

__all__ = ["PLANTS", "PROTOCOL", "KafkaRunSpec", "KRaftJudge", "run", "wrap_raw_file",
           "loses_disks", "add_ghost_leaders", "HISTORY_MODULE", "HISTORY_VARIABLES",
           "harness_args", "IMPL"]

PROTOCOL = "kraft"
IMPL = "kafka"
PLANTS = RAFT_PLANTS
DEFAULT_VOTERS = ("n1", "n2", "n3")        # the refimpl's unbounded cluster (KRaftAdapter)
DEFAULT_VALUES = ("v1", "v2")
# A run that may lose a disk writes LoseDisk steps, an action of spec/KRaftHistory.tla: its
# traces are of that module, with its ghost map ghostLeaders (computed here: add_ghost_leaders)
HISTORY_MODULE = "KRaftHistory"
GHOST_LEADERS = "ghostLeaders"
HISTORY_VARIABLES = sm.VARIABLES + (GHOST_LEADERS,)


def loses_disks(faults: str, b: KRaftBounds) -> bool:
    """May a run of this fault profile under these bounds lose a disk (write LoseDisk steps)?
    The profile's disk loss takes effect at a restart, so not under MaxRestarts = 0."""
    return PROFILES[faults].disk_loss > 0 and b.limits.max_restarts != 0


def add_ghost_leaders(raw: RawRun) -> None:
    """spec/KRaftHistory.tla's ghost map, computed from the projected states and added to each
    raw step's state: ghostLeaders[e] is every replica that was Leader in epoch e after some step
    (RecordLeaders: the state after each step, from step 1; HistoryInit's map is empty; the
    domain is the epochs that had a leader).  A history variable: Kafka has no counterpart."""
    leaders: dict[int, frozenset[str]] = {}
    for k, obj in enumerate(raw.steps):
        st = obj["state"]
        if k:
            try:
                for node, role in st["role"].items():
                    if role == "Leader":
                        e = st["currentEpoch"][node]
                        if type(e) is not int:
                            raise TypeError(f"currentEpoch of {node} is {e!r}")
                        leaders[e] = leaders.get(e, frozenset()) | {node}
            except (AttributeError, KeyError, TypeError) as e:
                raise RawFormatError(raw.path, obj["_line"], "state.role",
                                     f"cannot compute {GHOST_LEADERS}: {e}") from None
        st[GHOST_LEADERS] = to_itf(Fn(leaders))


class KRaftJudge:
    """The online checks of a KIP-595 run on its projected spec states (wrap.Judge)."""

    names = INVARIANTS

    def __init__(self, voters: tuple[str, ...], cluster_of: dict[str, str]):
        self.voters = voters
        self.monitor = StateMonitor(voters, cluster_of, tuple(sorted(cluster_of)))
        self.recovery = Recovery(voters)

    def check(self, state, action, node, changed):
        return self.monitor.check(state, action, node, changed)

    def has_leader(self, state) -> bool:
        return stable_leader(state, self.voters) is not None

    def recovered(self, state) -> bool:
        return self.recovery.recovered(state)

    def describe(self, state) -> str:
        if not state:
            return "no state"
        return " ".join(f"{n}:{state['role'][n]},e{state['currentEpoch'][n]},"
                        f"hwm{state['highWatermark'][n]}" for n in sorted(state["role"]))


@dataclass
class KafkaRunSpec:
    """The options of `kraftcheck simulate --impl kafka` (those of refimpl.sim.runner.RunSpec,
    with --plant instead of --bug)."""

    seeds: list[int]
    faults: str
    steps: int
    bounds_path: str | None = None
    plant: str | None = None
    faults_until_ms: int | None = None
    liveness_bound_ms: int = DEFAULT_LIVENESS_BOUND_MS
    timeout_s: float = 3600

    def validate(self) -> KRaftBounds:
        if self.steps <= 0:
            raise UsageError("--steps must be positive")
        if self.faults not in PROFILES:
            raise UsageError(f"unknown fault profile {self.faults!r}; choose one of: "
                             f"{', '.join(PROFILES)}")
        if self.plant is not None and self.plant not in PLANTS:
            raise UsageError(f"unknown planted fault {self.plant!r} for --impl kafka; choose "
                             f"one of: {', '.join(PLANTS)}")
        if self.faults_until_ms is not None and self.faults_until_ms < 0:
            raise UsageError("--faults-until must be >= 0 ms")
        if self.liveness_bound_ms <= 0:
            raise UsageError("--liveness-bound must be positive")
        if self.bounds_path is None:
            return KRaftBounds(voters=DEFAULT_VOTERS, values=DEFAULT_VALUES)
        if self.faults_until_ms is not None:
            raise UsageError("--faults-until checks liveness, which a TLC config's bounds "
                             "(MaxEpoch, MaxRestarts, ...) can forbid: run it unbounded")
        try:
            return KRaftBounds.from_cfg(parse_cfg(self.bounds_path))
        except BoundsError as e:
            raise UsageError(str(e)) from None


def harness_args(spec: KafkaRunSpec, b: KRaftBounds, out: Path, bounds_json: Path | None) -> list[str]:
    """The `simulate` command line of kafka_harness/PROTOCOL.md."""
    args = ["--seeds", ",".join(map(str, spec.seeds)), "--faults", spec.faults,
            "--steps", str(spec.steps), "--voters", ",".join(b.voters)]
    if b.observers:
        args += ["--observers", ",".join(b.observers)]
    args += ["--values", ",".join(b.values or DEFAULT_VALUES)]
    if bounds_json is not None:
        args += ["--bounds", str(bounds_json)]
    if spec.plant is not None:
        args += ["--plant", spec.plant]
    if spec.faults_until_ms is not None:
        args += ["--faults-until", str(spec.faults_until_ms)]
    return args + ["--out", str(out)]


def _model_values(b: KRaftBounds) -> tuple[str, ...]:
    """As the refimpl's KRaftAdapter.model_values: servers, Nil, LeaderChange, the values."""
    return tuple(sorted(b.voters + b.observers + (sm.NIL, sm.LEADER_CHANGE)
                        + (b.values or DEFAULT_VALUES)))


def wrap_raw_file(path: Path, spec: KafkaRunSpec, b: KRaftBounds, label: dict | None,
                  seed: int):
    """One seed's raw file -> wrap.Wrapped (the trace text and its manifest entry)."""
    raw = read_raw(path, sm.VARIABLES)
    m = raw.meta
    for key, want in (("protocol", PROTOCOL), ("seed", seed), ("fault_profile", spec.faults),
                      ("plant", spec.plant), ("impl", IMPL)):
        if m.get(key) != want:
            raise RawFormatError(str(path), 1, key, f"is {m.get(key)!r}, the run asked for "
                                 f"{want!r}")
    nodes = list(b.voters + b.observers)
    try:
        constants = label["constants"] if label else {
            k: from_itf(v, f"constants.{k}") for k, v in m["constants"].items()}
    except ValueError_ as e:
        raise RawFormatError(str(path), 1, "constants", str(e)) from None
    judge = KRaftJudge(tuple(b.voters), cluster_of_constants(constants, nodes))
    tid = trace_id(f"{IMPL}-{PROTOCOL}", spec.faults, seed, spec.plant, spec.bounds_path)
    history = loses_disks(spec.faults, b)
    if history:
        add_ghost_leaders(raw)
    return wrap(raw, trace_id=tid, protocol=PROTOCOL,
                spec_module=HISTORY_MODULE if history else sm.SPEC_MODULE,
                variables=HISTORY_VARIABLES if history else sm.VARIABLES,
                model_values=_model_values(b), bounds=label,
                bug=spec.plant, judge=judge, faults_until_ms=spec.faults_until_ms,
                liveness_bound_ms=spec.liveness_bound_ms)


def run(spec: KafkaRunSpec, out_dir: Path | None,
        on_done: Callable[[dict], None] | None = None) -> dict:
    """Run the harness once for every seed, wrap and check each run, write the traces and
    manifest.json into out_dir (when given); return the manifest.  UsageError: bad options;
    HarnessError: the harness could not run (no Java, jar not built, the harness failed).  A
    seed whose raw file breaks the protocol is listed in the manifest's `errors` (the other
    seeds are still written)."""
    b = spec.validate()
    label = bounds_label(spec.bounds_path, parse_cfg(spec.bounds_path)) if spec.bounds_path else None
    h = find_harness("raft")
    with folder_lock(out_dir), tempfile.TemporaryDirectory(prefix="kraftcheck-kafka-") as tmp:
        tmp = Path(tmp)
        bounds_json = None
        if label is not None:
            bounds_json = tmp / "BOUNDS.json"
            bounds_json.write_text(json.dumps(
                {"config": label.get("config", Path(spec.bounds_path).stem),
                 "file": label["file"], "constants": label["constants"]}, sort_keys=True))
        raw_dir = tmp / "raw"
        raw_dir.mkdir()
        run_harness(h, "simulate", harness_args(spec, b, raw_dir, bounds_json),
                    timeout_s=spec.timeout_s)
        traces, errors = [], []
        version = None
        for seed in spec.seeds:
            path = raw_dir / f"{seed}.raw.jsonl"
            if not path.is_file():
                errors.append(f"seed {seed}: the harness wrote no {path.name}")
                continue
            try:
                w = wrap_raw_file(path, spec, b, label, seed)
            except RawFormatError as e:
                errors.append(f"seed {seed}: {e}".replace(str(raw_dir) + "/", ""))
                continue
            entry = w.entry
            version = entry["impl"]["version"]
            if out_dir is not None:
                fname = f"{entry['trace_id']}.jsonl"
                try:
                    write_atomic(out_dir / fname, w.data)
                except OutputError as e:
                    raise HarnessError(str(e)) from None
                entry["file"] = fname
            traces.append(entry)
            if on_done:
                on_done(entry)
    arguments = {"protocol": PROTOCOL, "impl": IMPL, "seeds": seed_label(spec.seeds),
                 "faults": spec.faults, "steps": spec.steps, "bounds": spec.bounds_path,
                 "bug": None, "plant": spec.plant}
    extra = {"impl": {"name": IMPL, "version": version}}
    if errors:
        extra["errors"] = errors
    return finish_manifest(out_dir, arguments, spec.plant, traces, extra)
