"""Running seeds of Kafka's KIP-966 controller (`kraftcheck simulate --impl kafka --protocol
elr`): the refimpl's deterministic simulator (refimpl/sim) over KafkaELRAdapter (elr.py), one
trace per seed in `kraftcheck-trace/1` with the refimpl's writer, spec module ELR, the header's
`impl` {"name": "kafka", "version": <kafka-metadata version>}, and the refimpl's manifest.

Trace ids: `kafka-elr-<faults>-<seed>`, under --bounds `...@<config>` (refimpl.sim.runner.trace_id
with the protocol `kafka-elr`), so they never collide with the refimpl's in one corpus.
A seed whose run Kafka's state cannot be projected for (elr.ProjectionError) is listed in the
manifest's `errors` (the CLI exits 2); the other seeds are still written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraftcore.output import OutputError, write_atomic
from refimpl.sim.bounds import Bounds, parse_cfg
from refimpl.sim.faults import PROFILES, get_profile
from refimpl.sim.protocol import dumps
from refimpl.sim.runner import (UsageError, bounds_label, finish_manifest, folder_lock,
                                seed_label, trace_id)
from refimpl.sim.simulator import DEFAULT_LIVENESS_BOUND_MS, Simulator
from refimpl.trace.format import header_obj

from kafka_bridge.elr import IMPL, PROTOCOL, KafkaELRAdapter, ProjectionError, harness
from kafka_bridge.toolchain import HarnessError

__all__ = ["KafkaElrRunSpec", "run", "run_seed"]


@dataclass
class KafkaElrRunSpec:
    """The options of `kraftcheck simulate --impl kafka --protocol elr`."""

    seeds: list[int]
    faults: str
    steps: int
    bounds_path: str | None = None
    faults_until_ms: int | None = None
    liveness_bound_ms: int = DEFAULT_LIVENESS_BOUND_MS

    def validate(self) -> Bounds | None:
        if self.steps <= 0:
            raise UsageError("--steps must be positive")
        if self.faults not in PROFILES:
            raise UsageError(f"unknown fault profile {self.faults!r}; choose one of: "
                             f"{', '.join(PROFILES)}")
        if self.faults_until_ms is not None and self.faults_until_ms < 0:
            raise UsageError("--faults-until must be >= 0 ms")
        if self.liveness_bound_ms <= 0:
            raise UsageError("--liveness-bound must be positive")
        if self.bounds_path is None:
            return None
        if self.faults_until_ms is not None:
            raise UsageError("--faults-until checks liveness, which a TLC config's bounds "
                             "can forbid: run it unbounded")
        try:
            bounds = parse_cfg(self.bounds_path)
            KafkaELRAdapter.check_options(bounds)
        except ValueError as e:
            raise UsageError(str(e)) from None
        return bounds


def _with_impl(text: str, version: str) -> str:
    """The trace text with the header naming the implementation (header_obj's `impl`)."""
    head, _, rest = text.partition("\n")
    h = json.loads(head)
    fields = {k: h[k] for k in ("trace_id", "protocol", "seed", "fault_profile", "bug", "bounds",
                                "spec_module", "model_values", "variables")}
    return dumps(header_obj(**fields, impl={"name": IMPL, "version": version})) + "\n" + rest


def run_seed(spec: KafkaElrRunSpec, bounds: Bounds | None, seed: int, trace: bool = True):
    """One seed: (SimResult, trace text with the impl header, trace id)."""
    label = None if bounds is None else bounds_label(spec.bounds_path, bounds)
    adapter = KafkaELRAdapter.from_options(bounds, None)
    tid = trace_id(f"{IMPL}-{PROTOCOL}", spec.faults, seed, None, spec.bounds_path)
    r = Simulator(adapter, seed, get_profile(spec.faults), spec.steps, trace=trace,
                  trace_id=tid, bounds_label=label, bug=None,
                  faults_until_ms=spec.faults_until_ms,
                  liveness_bound_ms=spec.liveness_bound_ms).run()
    text = _with_impl(r.text(), adapter.controller.h.version) if trace else ""
    return r, text, tid


def run(spec: KafkaElrRunSpec, out_dir: Path | None,
        on_done: Callable[[dict], None] | None = None) -> dict:
    """Run every seed through Kafka's controller, write each trace and manifest.json into
    out_dir (when given); return the manifest.  UsageError: bad options; HarnessError: the
    harness could not run."""
    bounds = spec.validate()
    version = harness().version
    traces, errors = [], []
    with folder_lock(out_dir):
        for seed in spec.seeds:
            try:
                r, text, tid = run_seed(spec, bounds, seed, trace=out_dir is not None)
            except ProjectionError as e:
                errors.append(f"seed {seed}: {e}")
                continue
            entry = {"trace_id": tid, "seed": seed, "actions": r.steps,
                     "steps": r.trace_steps if out_dir is not None else r.steps,
                     "events": r.events, "end_reason": r.end_reason, "time_ms": r.time_ms,
                     "invariants": r.invariants, "violations": r.violations,
                     "impl": {"name": IMPL, "version": version}}
            if spec.faults_until_ms is not None and r.liveness is not None:
                entry["liveness"] = r.liveness
            if out_dir is not None:
                data = text.encode("utf-8")
                fname = f"{tid}.jsonl"
                try:
                    write_atomic(out_dir / fname, data)
                except OutputError as e:
                    raise HarnessError(str(e)) from None
                entry.update(file=fname, bytes=len(data),
                             sha256=hashlib.sha256(data).hexdigest())
            traces.append(entry)
            if on_done:
                on_done(entry)
    arguments = {"protocol": PROTOCOL, "impl": IMPL, "seeds": seed_label(spec.seeds),
                 "faults": spec.faults, "steps": spec.steps, "bounds": spec.bounds_path,
                 "bug": None, "plant": None}
    extra: dict = {"impl": {"name": IMPL, "version": version}}
    if errors:
        extra["errors"] = errors
    return finish_manifest(out_dir, arguments, None, traces, extra)
