"""Benchmark of the Spark stats job against a single-process pyarrow baseline computing the
same statistics: wall time, events per second, peak memory, and how memory grows with size.

    .venv/bin/python benchmarks/bench_spark.py                 # 1M and 10M events
    .venv/bin/python benchmarks/bench_spark.py --sizes 20000,40000 --json

For each size N (events = step lines) it generates a synthetic corpus of KRaft-shaped traces in
the trace format (kraftcheck-trace/1; states drawn from a random walk over a bounded space, so
states repeat as in bounded simulation; reused when present under --work), then runs each side
in a fresh subprocess, one after the other (neither inherits the other's heap or page cache
warm-up order; each size starts cold):

  * spark:    `run_stats` on local[2] without --graph/--verdicts: ingest (traces, steps by
              state key, states with fingerprints and observations, bad_rows), verdicts (form only),
              conformance, first_failure, actions, per-trace metrics, election and commit
              latencies, metrics_by_profile, summary.json and report.html.  Wall time is the
              job (the session is started before the clock; `process_wall_s` includes the JVM
              start); peak memory is the resident memory of the child's whole process tree
              (driver JVM, Python driver, Python workers), sampled every 0.2 s from /proc.
  * baseline: `baseline()` below, in one Python process: the same tables, computed with json,
              the same cached `observe.state_info` and pyarrow, written as Parquet (steps
              partitioned the same way), plus summary.json and report.html from the same
              `render_report`.  Peak memory is the child's ru_maxrss (the kernel's peak).

Then the parent compares the two outputs (`compare`): the summary's traces, steps, lines,
bad-row and verdict counts; the traces, bad_rows, verdicts, conformance, first_failure, actions,
metrics, election_latency, commit_latency, metrics_by_profile and the two latency histogram
tables row for row (floats to
12 significant digits); and the distinct state fingerprints of the two steps tables.  The one
statistic computed differently is the p50/p95 latency per profile: Spark's percentile_approx
(rank error at most n/10000) against the exact value; it is checked to lie within that rank
error.  The baseline streams: it finishes a trace at its footer (or at the end of its file)
and writes steps in chunks, so it assumes a trace's lines lie in one file and end with its
footer (it fails loudly otherwise; the generated corpora satisfy this, Spark needs neither).  Not compared: the `state` and
`params` text of steps (Spark re-serialises the JSON), the Parquet layout, the report's bytes.

Prints a table, or JSON with --json; the last lines give each side's peak memory at the
smallest and the largest size and their ratio (1.0 = flat).  Exit 1 when a comparison fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftcore.paths import work_dir  # noqa: E402

NODES = ("n1", "n2", "n3")
PROFILES = ("none", "lossy", "partitions", "crashes", "chaos")
BUGS = (None, None, None, "hwm-no-current-epoch-check", "vote-ignores-log")
STEPS_PER_TRACE = 200
TRACES_PER_FILE = 500


# --------------------------------------------------------------------------- generation

class _Walk:
    """A random walk over KRaft-shaped states; state JSON texts are memoised."""

    ACTIONS = ("Timeout", "ReceiveVoteRequest", "ReceiveVoteResponse", "ClientRequest",
               "ReceiveFetchRequest", "ReceiveFetchResponse", "Restart", "SendFetchRequest")

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.memo: dict[tuple, str] = {}

    def text(self, s: tuple) -> str:
        t = self.memo.get(s)
        if t is None:
            roles, epochs, leader, lens, hwms = s
            f = lambda xs: "{" + ",".join(f'"{n}":{x}' for n, x in zip(NODES, xs)) + "}"  # noqa
            q = lambda xs: f([f'"{x}"' for x in xs])  # noqa: E731
            logs = f(["[" + ",".join(f'{{"epoch":{min(e, 1 + i // 2)},"value":"v{i}"}}'
                                     for i in range(n)) + "]" for n, e in zip(lens, epochs)])
            t = ('{"currentEpoch":' + f(epochs) + ',"highWatermark":' + f(hwms)
                 + ',"leaderId":' + q(leader) + ',"log":' + logs + ',"role":' + q(roles)
                 + ',"votedId":' + q(leader) + "}")
            self.memo[s] = t
        return t

    def trace(self, n: int):
        rng = self.rng
        roles, epochs = ["Unattached"] * 3, [0, 0, 0]
        leader, lens, hwms = ["Nil"] * 3, [0, 0, 0], [0, 0, 0]
        out = [("Init", (tuple(roles), tuple(epochs), tuple(leader), tuple(lens), tuple(hwms)))]
        for _ in range(n - 1):
            i = rng.randrange(3)
            a = rng.choice(self.ACTIONS)
            lead = next((k for k in range(3) if roles[k] == "Leader"), None)
            if a == "Timeout" and lead is None and epochs[i] < 6:
                roles[i], epochs[i] = "Candidate", epochs[i] + 1
            elif a == "ReceiveVoteResponse" and roles[i] == "Candidate":
                roles[i] = "Leader"
                leader = [NODES[i]] * 3
            elif a == "ClientRequest" and lead is not None and lens[lead] < 4:
                lens[lead] += 1
            elif a == "ReceiveFetchResponse" and lead is not None and lens[i] < lens[lead]:
                lens[i] += 1
            elif a == "ReceiveFetchRequest" and lead is not None:
                hwms[lead] = min(lens[lead], sorted(lens)[1])
            elif a == "Restart":
                roles[i], hwms[i] = "Unattached", 0
                if leader[i] == NODES[i]:
                    leader = ["Nil"] * 3
                lens[i] = max(0, lens[i] - rng.randrange(2))
            else:
                a = "SendFetchRequest"
            out.append((a, (tuple(roles), tuple(epochs), tuple(leader), tuple(lens), tuple(hwms))))
        return out


def generate(n_events: int, folder: Path) -> Path:
    done = folder / "DONE"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(n_events)
    walk = _Walk(rng)
    variables = json.dumps(["currentEpoch", "highWatermark", "leaderId", "log", "role", "votedId"])
    n_traces = max(1, n_events // STEPS_PER_TRACE)
    t = 0
    for start in range(0, n_traces, TRACES_PER_FILE):
        lines = []
        for k in range(start, min(n_traces, start + TRACES_PER_FILE)):
            tid = f"bench-{k}"
            prof, bug = PROFILES[k % len(PROFILES)], BUGS[k % len(BUGS)]
            lines.append(json.dumps({
                "bounds": None, "bug": bug, "fault_profile": prof, "kind": "header",
                "model_values": ["Nil", *NODES], "protocol": "kraft",
                "schema": "kraftcheck-trace/1", "seed": k, "spec_module": "KRaft",
                "trace_id": tid, "variables": json.loads(variables)},
                sort_keys=True, separators=(",", ":")))
            tj = json.dumps(tid)
            time_ms = 0
            steps = walk.trace(STEPS_PER_TRACE)
            for i, (a, s) in enumerate(steps):
                params = "{}" if i == 0 else '{"node":"%s"}' % NODES[i % 3]
                lines.append('{"action":"' + a + '","kind":"step","params":' + params
                             + ',"state":' + walk.text(s) + ',"step":' + str(i)
                             + ',"time_ms":' + str(time_ms) + ',"trace_id":' + tj + "}")
                time_ms += 1 + (i * 7919 + k) % 40
            n = str(len(steps) - 1)
            lines.append('{"actions":' + n + ',"end_reason":"max_steps","invariants":{},'
                         '"kind":"footer","steps":' + n + ',"trace_id":' + tj
                         + ',"violations":[]}')
        (folder / f"part-{t:05d}.jsonl").write_text("\n".join(lines) + "\n")
        t += 1
    done.write_text(str(n_events))
    return folder


# --------------------------------------------------------------------------- measuring

def _tree_rss_kib(root: int) -> tuple[int, dict[str, int]]:
    """Resident memory of `root` and all its descendants (KiB), from /proc: the total and
    per role (`driver`: root itself; `jvm`: java processes; `python_workers`: the others, i.e.
    PySpark's daemon and workers)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            ppid = int(parts[1])
            with open(f"/proc/{d}/statm") as f:
                pages = int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
        rss[int(d)] = pages * page_kib
    roles: dict[str, int] = {"driver": 0, "jvm": 0, "python_workers": 0}
    stack = [root]
    while stack:
        p = stack.pop()
        if p == root:
            role = "driver"
        else:
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    exe = f.read().split(b"\0", 1)[0]
            except OSError:
                exe = b""
            role = "jvm" if exe.endswith(b"java") else "python_workers"
        roles[role] += rss.get(p, 0)
        stack += children.get(p, [])
    return sum(roles.values()), roles


class PeakSampler:
    """Samples the RSS of the process tree rooted at `root` (the total's peak, and each role's
    own peak); with `log_every` it also prints the running peak to stderr (a long run then
    leaves evidence even if it is stopped)."""

    def __init__(self, root: int, period: float = 0.2, log_every: float = 0, label: str = ""):
        self.root, self.period, self.peak, self.log_every = root, period, 0, log_every
        self.role_peaks: dict[str, int] = {}
        self.label = label
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        t0 = last = time.monotonic()
        while not self._stop.is_set():
            total, roles = _tree_rss_kib(self.root)
            self.peak = max(self.peak, total)
            for k, v in roles.items():
                self.role_peaks[k] = max(self.role_peaks.get(k, 0), v)
            now = time.monotonic()
            if self.log_every and now - last >= self.log_every:
                last = now
                print(f"[bench] {self.label} {now - t0:7.0f} s  peak RSS so far "
                      f"{self.peak // 1024} MiB", file=sys.stderr, flush=True)
            self._stop.wait(self.period)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def run_child(kind: str, corpus: Path, out: Path, old_code: Path | None = None) -> dict:
    """Run one side in a fresh interpreter; its result JSON is its last stdout line.
    `spark-old` runs the benchmark script of `old_code` (a checkout of an earlier commit),
    whose Spark job is then the one measured: the baseline of the speed-up, under the same
    load in the same run."""
    script = Path(__file__).resolve()
    if kind == "spark-old":
        if old_code is None:
            raise ValueError("spark-old needs --old-code")
        script = old_code / "benchmarks" / "bench_spark.py"
    cmd = [sys.executable, str(script), "--child", "spark" if kind == "spark-old" else kind,
           "--corpus", str(corpus), "--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    with PeakSampler(proc.pid, log_every=60, label=kind) as ps:
        stdout, _ = proc.communicate()
    process_wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"the {kind} run exited with status {proc.returncode}: "
                           f"{' '.join(cmd)}")
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"the {kind} run printed no result: {stdout[-2000:]!r}")
    r = json.loads(lines[-1])
    r["process_wall_s"] = round(process_wall, 1)
    r["tree_peak_rss_mib"] = round(ps.peak / 1024)   # sampled every 0.2 s
    r["role_peak_rss_mib"] = {k: round(v / 1024) for k, v in ps.role_peaks.items() if v}
    if kind in ("spark", "spark-old", "duckdb"):
        r["peak_rss_mib"] = r["tree_peak_rss_mib"]
    print(f"[bench] {kind} done: {json.dumps(r)}", file=sys.stderr, flush=True)
    return r


def child_spark(corpus: Path, out: Path) -> dict:
    from spark_trace_analysis.jobs import run_stats
    from spark_trace_analysis.session import get_session, stop_session
    get_session("local[2]", driver_memory="2g")
    t0 = time.monotonic()
    s = run_stats([str(corpus)], out, master="local[2]")
    wall = time.monotonic() - t0
    stop_session()
    return {"wall_s": round(wall, 1), "events": s["steps"], "traces": s["traces"],
            "events_per_s": round(s["steps"] / wall) if wall else None}


def child_duckdb(corpus: Path, out: Path) -> dict:
    import duckdb_peer
    t0 = time.monotonic()
    s = duckdb_peer.run(corpus, out)
    wall = time.monotonic() - t0
    return {"wall_s": round(wall, 1), "events": s["steps"], "traces": s["traces"],
            "events_per_s": round(s["steps"] / wall) if wall else None}


def child_baseline(corpus: Path, out: Path) -> dict:
    t0 = time.monotonic()
    s = baseline(corpus, out)
    wall = time.monotonic() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall_s": round(wall, 1), "events": s["steps"], "traces": s["traces"],
            "events_per_s": round(s["steps"] / wall) if wall else None,
            "peak_rss_mib": round(peak_kib / 1024)}


# --------------------------------------------------------------------------- the baseline

# the pyspark-free field lists (spark_trace_analysis.schema imports pyspark; the baseline
# process never loads it)
from spark_trace_analysis.fields import (  # noqa: E402
    REQUIRED, TRACE_SCHEMA, bounds_config, hist_grid)
PARTS = ["protocol", "bounds_config"]   # ingest.PARTITION_COLUMNS
LONG_FIELDS = ("seed", "step", "time_ms", "steps")
LIST_FIELDS = ("model_values", "variables", "violations")
MAP_FIELDS = ("invariants",)
PERCENTILE_ACCURACY = 10000     # Spark's percentile_approx default


# the baseline's tables partitioned like the Spark job's (ingest.PARTITION_COLUMNS)
PARTITIONED = ("traces", "metrics", "election_latency", "commit_latency")


class _Trace:
    __slots__ = ("tid", "headers", "footers", "steps", "bad", "unknown", "file")

    def __init__(self, tid):
        self.tid, self.headers, self.footers, self.steps = tid, [], [], []
        self.bad = self.unknown = 0
        self.file = None


def _trace(traces: dict, done: set, tid: str, f: str, lineno: int) -> _Trace:
    tr = traces.get(tid)
    if tr is None:
        if tid in done:
            raise RuntimeError(f"{f}:{lineno}: trace {tid} has a line after its footer or in "
                               "another file; the baseline needs each trace's lines in one "
                               "file, ending with its footer")
        tr = traces[tid] = _Trace(tid)
    return tr


def _line_reason(line: str):
    """(reason, parsed object): the checks of ingest.parse_lines, in the same order."""
    if not line.strip():
        return "blank line", None
    try:
        o = json.loads(line)
    except ValueError:
        return "not JSON", None
    if not isinstance(o, dict):
        return "not a JSON object", None
    for f in LONG_FIELDS:
        v = o.get(f)
        if v is not None and (type(v) is not int):
            return "a field has the wrong type", o
    for f in LIST_FIELDS:
        if o.get(f) is not None and not isinstance(o[f], list):
            return "a field has the wrong type", o
    for f in MAP_FIELDS:
        if o.get(f) is not None and not isinstance(o[f], dict):
            return "a field has the wrong type", o
    kind = o.get("kind")
    if kind is None:
        return "missing field kind", o
    if kind not in REQUIRED:
        return f"unknown kind {kind}", o
    for f in REQUIRED[kind]:
        if o.get(f) is None:
            return f"{kind}: missing field {f}", o
    if kind == "header" and o["schema"] != TRACE_SCHEMA:
        return f"unknown schema {o['schema']}", o
    return None, o


def _text(v) -> str | None:
    """A JSON value as Spark reads it into a string column: strings as they are, anything
    else as compact JSON."""
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def _first_reach(vals):
    """{offset: time} from [(time, value)] in step order: ingest's metrics._first_reach."""
    out, run = {}, None
    for t, v in vals:
        prev = run if run is not None else 0
        run = v if run is None else (run if v is None else max(run, v))
        if run is not None and run > prev:
            for o in range(prev + 1, run + 1):
                out[o] = t
    return out


def _trace_metrics(keys: tuple, rows: list):
    """metrics.per_step + trace_metrics + election/commit latencies for one trace's steps
    [(step, time_ms, obs)] with an observation, in step order."""
    tid, protocol, profile, bug, bcfg = keys
    n = len(rows)
    prev = None
    lost_at = None
    elections = trunc = trunc_rec = loss = unclean = leaderless = 0
    max_trunc = 0
    lag_num = lag_den = 0
    lag_rows = 0
    lag_max = None
    el = []
    for i, (k, t, o) in enumerate(rows):
        dt = rows[i + 1][1] - t if i + 1 < n else 0
        leader = o["leader"]
        pl = prev["leader"] if prev is not None else None
        if leader is None and (pl is not None or k == 0):
            lost_at = t
        pe = prev["epoch"] if prev is not None else None
        election = leader is not None and (
            pl is None or leader != pl
            or (o["epoch"] is not None and pe is not None and o["epoch"] != pe))
        if election:
            elections += 1
            lat = t - lost_at if (pl is None and lost_at is not None) else 0
            el.append((tid, protocol, profile, bug, bcfg, k, t, leader, o["epoch"], lat))
            pel = prev["eligible"] if prev is not None else None
            if pel is not None and leader not in pel:
                unclean += 1
        if leader is None:
            leaderless += dt
        lens = o["log_lens"]
        if prev is not None and prev["log_lens"] is not None:
            plens, phwms = prev["log_lens"], prev["hwms"] or {}
            for node, pv in plens.items():
                cur = lens.get(node, 0) if lens is not None else 0
                if cur < pv:
                    trunc += 1
                trunc_rec += max(pv - cur, 0)
                max_trunc = max(max_trunc, pv - cur)
            below = any((lens.get(node, 0) if lens is not None else 0) < phwms.get(node, 0)
                        for node in plens)
        else:
            below = False
        lost = o["lost_acked"]
        more = lost is not None and lost > ((prev["lost_acked"] if prev is not None else None)
                                            or 0)
        if below or more:
            loss += 1
        lag = o["hwm_lag"]
        if lag is not None:
            lag_rows += 1
            lag_num += lag * dt
            lag_den += dt
            lag_max = lag if lag_max is None else max(lag_max, lag)
        prev = o
    duration = max(t for _, t, _ in rows) - min(t for _, t, _ in rows)
    metric = {"trace_id": tid, "protocol": protocol, "fault_profile": profile, "bug": bug,
              "bounds_config": bcfg,
              "duration_ms": duration, "elections": elections, "leaderless_ms": leaderless,
              "truncations": trunc, "truncated_records": trunc_rec,
              "max_truncation_depth": max_trunc, "data_loss_events": loss,
              "unclean_recoveries": unclean,
              "hwm_lag_avg": lag_num / lag_den if lag_rows and lag_den else None,
              "hwm_lag_max": lag_max,
              "leaderless_share": leaderless / duration if duration > 0 else None}
    appended = _first_reach([(t, max(o["log_lens"].values(), default=0)
                              if o["log_lens"] is not None else None) for _, t, o in rows])
    committed = _first_reach([(t, o["hwm_max"]) for _, t, o in rows])
    cl = [(tid, protocol, profile, bug, bcfg, off, appended[off], committed[off],
           committed[off] - appended[off]) for off in sorted(appended) if off in committed]
    return metric, el, cl


def _exact_percentile(sorted_vals: list, p: float):
    """The value percentile_approx converges to: the smallest v with rank >= ceil(p * n)."""
    if not sorted_vals:
        return None
    return sorted_vals[max(0, math.ceil(p * len(sorted_vals)) - 1)]


def _avg(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def baseline(corpus: Path, out: Path) -> dict:
    """The Spark job's tables (run_stats without --graph/--verdicts) in one Python process;
    writes them under `out` (replaced) and returns the summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from spark_trace_analysis.observe import STATE_INFO_ARROW, state_info
    from spark_trace_analysis.report import render_report
    from spark_trace_analysis.vocabulary import known_actions
    from kraftcore.output import write_atomic

    t0 = time.monotonic()
    if out.exists():
        shutil.rmtree(out)
    (out / "steps").mkdir(parents=True)
    files = sorted(str(f.resolve()) for f in corpus.rglob("*.jsonl") if f.is_file())
    vocab: dict[str, frozenset] = {}
    obs_type = STATE_INFO_ARROW.field("obs").type
    n_lines = 0
    bad_rows: list[dict] = []
    done: set[str] = set()
    trace_rows: list[dict] = []
    metrics: list[dict] = []
    impl_of: dict[str, str] = {}      # trace_id -> implementation (refimpl, kafka)
    elections: list[tuple] = []
    commits: list[tuple] = []
    actions: dict[tuple, list] = defaultdict(lambda: [0, 0])       # steps, traces
    conf: dict[tuple, dict] = {}
    # the layout of Spark's tables: `steps` refer to their state by key (here the
    # fingerprint), `states` hold each distinct state's text, fingerprint and observation once
    step_cols = ("trace_id", "step", "time_ms", "action", "params", "fp", "unknown_action",
                 "bug", "bounds", "file", "protocol", "fault_profile", "bounds_config")
    cols: dict[str, list] = {c: [] for c in step_cols}
    state_cols: dict[str, list] = {"state": [], "fp": [], "obs": []}
    seen_fps: set[str | None] = set()
    part = [0]
    (out / "states").mkdir()

    def flush_steps() -> None:
        if cols["trace_id"]:
            pq.write_to_dataset(pa.table(cols), str(out / "steps"), partition_cols=PARTS,
                                basename_template=f"part-{part[0]:05d}-{{i}}.parquet")
        if state_cols["fp"]:
            pq.write_table(pa.table({"state": state_cols["state"], "fp": state_cols["fp"],
                                     "obs": pa.array(state_cols["obs"], type=obs_type)}),
                           str(out / "states" / f"part-{part[0]:05d}.parquet"))
        part[0] += 1
        for v in (*cols.values(), *state_cols.values()):
            v.clear()

    def finish(tr: _Trace, f: str) -> None:
        """Add one trace, all its lines read, to every table."""
        h = tr.headers[0] if tr.headers else {}
        protocol, profile, bug = h.get("protocol"), h.get("fault_profile"), h.get("bug")
        bounds = _text(h.get("bounds"))
        bcfg = bounds_config(bounds)
        known = frozenset()     # an unknown protocol's actions are not judged (as ingest)
        if protocol is not None:
            known = vocab.get(protocol)
            if known is None:
                known = vocab[protocol] = known_actions(protocol)
        p_out = protocol if protocol is not None else "unknown"
        f_out = profile if profile is not None else "unknown"
        bug_out = bug if bug is not None else "none"
        obs_rows, step_nums, times, acts = [], [], [], set()
        for k, t_ms, action, params, text, fp, obs, lineno, line in tr.steps:
            unknown = bool(known) and action not in known
            if unknown:
                tr.unknown += 1
                tr.bad += 1
                bad_rows.append({"file": f, "line": lineno, "trace_id": tr.tid,
                                 "reason": f"unknown action {action}", "text": line,
                                 "in_steps": True})
            for c, v in (("trace_id", tr.tid), ("step", k), ("time_ms", t_ms),
                         ("action", action), ("params", params), ("fp", fp),
                         ("unknown_action", unknown), ("bug", bug), ("bounds", bounds),
                         ("file", f), ("protocol", p_out), ("fault_profile", f_out),
                         ("bounds_config", bcfg)):
                cols[c].append(v)
            if fp not in seen_fps:
                seen_fps.add(fp)
                state_cols["state"].append(text)
                state_cols["fp"].append(fp)
                state_cols["obs"].append(None if obs is None else dict(
                    obs, log_lens=list(obs["log_lens"].items()), hwms=list(obs["hwms"].items())))
            step_nums.append(k)
            times.append(t_ms)
            acts.add(action)
            actions[(p_out, action)][0] += 1
            if obs is not None:
                obs_rows.append((k, t_ms, obs))
        if len(cols["trace_id"]) >= 50_000:
            flush_steps()
        for a in acts:
            actions[(p_out, a)][1] += 1
        n = len(step_nums)
        footer = tr.footers[0] if tr.footers else None
        footer_steps = footer.get("steps") if footer else None
        problems = []
        if not tr.headers:
            problems.append("no header")
        if len(tr.headers) > 1:
            problems.append("more than one header")
        if not tr.footers:
            problems.append("no footer")
        if len(tr.footers) > 1:
            problems.append("more than one footer")
        if n == 0:
            problems.append("no steps")
        if n > 0 and (min(step_nums) != 0 or len(set(step_nums)) != n
                      or max(step_nums) != n - 1):
            problems.append("steps are not 0..n")
        if footer_steps is not None and n > 0 and footer_steps != n - 1:
            problems.append("footer step count differs")
        if tr.bad > tr.unknown:
            problems.append("has bad rows")
        inv = (footer or {}).get("invariants") or {}
        trace_rows.append({
            "trace_id": tr.tid, "file": tr.file, "protocol": p_out, "bounds_config": bcfg,
            "seed": h.get("seed"), "fault_profile": f_out, "bug": bug, "bounds": bounds,
            "spec_module": h.get("spec_module"), "n_steps": n,
            "duration_ms": max(times) - min(times) if times else None,
            "footer_steps": footer_steps, "end_reason": (footer or {}).get("end_reason"),
            "violated": [k for k, v in inv.items() if v == "violated"],
            "bad_rows": tr.bad, "unknown_actions": tr.unknown, "problems": problems,
            "complete": not problems})
        verdict = "unchecked" if not problems else "malformed"
        impl_out = (h.get("impl") or {}).get("name") or "refimpl"
        c = conf.setdefault((p_out, impl_out, f_out, bug_out), {
            "traces": 0, "traces_unchecked": 0, "traces_malformed": 0, "steps_unchecked": 0,
            "steps_malformed": 0})
        c["traces"] += 1
        c[f"traces_{verdict}"] += 1
        c[f"steps_{verdict}"] += n
        if obs_rows:
            obs_rows.sort(key=lambda r: r[0])
            m, el, cl = _trace_metrics((tr.tid, p_out, f_out, bug_out, bcfg), obs_rows)
            # the implementation, as ingest reads it: the header's impl.name, else the refimpl
            m["impl"] = impl_out
            impl_of[tr.tid] = m["impl"]
            metrics.append(m)
            elections.extend(el)
            commits.extend(cl)
        done.add(tr.tid)

    for f in files:
        traces: dict[str, _Trace] = {}
        with open(f, encoding="utf-8", errors="replace", newline="") as fh:
            for lineno, raw in enumerate(fh, 1):
                line = raw.rstrip("\r\n")
                n_lines += 1
                reason, o = _line_reason(line)
                info = text = None
                if reason is None and o["kind"] == "step":
                    st = o["state"]
                    i = line.find(',"state":')
                    j = line.rfind(',"step":')
                    text = (line[i + 9:j] if isinstance(st, dict) and 0 <= i < j
                            and line.startswith("{", i + 9) else _text(st))
                    info = state_info(text)
                    reason = info[1]
                tid = _text(o.get("trace_id")) if o is not None else None
                if reason is not None:
                    bad_rows.append({"file": f, "line": lineno, "trace_id": tid,
                                     "reason": reason, "text": line[:300], "in_steps": False})
                    if tid is not None:
                        _trace(traces, done, tid, f, lineno).bad += 1
                    continue
                tr = _trace(traces, done, tid, f, lineno)
                kind = o["kind"]
                if kind == "header":
                    tr.headers.append(o)
                    if tr.file is None:
                        tr.file = f
                elif kind == "footer":
                    tr.footers.append(o)
                    finish(traces.pop(tid), f)    # a trace ends with its footer
                else:
                    tr.steps.append((o["step"], o["time_ms"], o["action"], _text(o["params"]),
                                     text, info[0], info[2], lineno, line[:300]))
        for tr in list(traces.values()):    # no footer: ends with its file
            finish(tr, f)
    flush_steps()

    def write(name: str, rows: list[dict], schema: pa.Schema | None = None) -> None:
        tbl = (pa.Table.from_pylist(rows, schema=schema) if rows or schema is None
               else schema.empty_table())
        (out / name).mkdir()
        if name in PARTITIONED and tbl.num_rows:
            pq.write_to_dataset(tbl, str(out / name), partition_cols=PARTS)
        else:
            pq.write_table(tbl, str(out / name / "part-00000.parquet"))

    verdict_rows = [{"trace_id": r["trace_id"],
                     "verdict": "unchecked" if r["complete"] else "malformed",
                     "failing_step": None, "claimed_action": None,
                     "detail": "; ".join(r["problems"])} for r in trace_rows]
    conformance = []
    for (p, impl, fp_, b), c in sorted(conf.items()):
        conformance.append({"protocol": p, "impl": impl, "fault_profile": fp_, "bug": b,
                            "traces": c["traces"], "traces_valid": 0, "traces_invalid": 0,
                            "traces_out_of_scope": 0, "traces_malformed": c["traces_malformed"],
                            "traces_unchecked": c["traces_unchecked"], "steps_valid": 0,
                            "steps_invalid": 0, "steps_unchecked": c["steps_unchecked"],
                            "steps_out_of_scope": 0, "steps_malformed": c["steps_malformed"]})
    action_rows = [{"protocol": p, "action": a, "steps": v[0], "traces": v[1], "failures": 0}
                   for (p, a), v in sorted(actions.items(), key=lambda kv: (kv[0][0], -kv[1][0],
                                                                            kv[0][1]))]
    el_rows = [dict(zip(("trace_id", "protocol", "fault_profile", "bug", "bounds_config",
                         "step", "time_ms",
                         "leader", "epoch", "latency_ms"), e)) for e in elections]
    cl_rows = [dict(zip(("trace_id", "protocol", "fault_profile", "bug", "bounds_config",
                         "offset",
                         "appended_ms", "committed_ms", "latency_ms"), c)) for c in commits]
    for r in el_rows + cl_rows:
        r["impl"] = impl_of.get(r["trace_id"], "refimpl")
    by: dict[tuple, dict] = defaultdict(lambda: {"m": [], "el": [], "cl": []})
    for m in metrics:
        by[(m["protocol"], m["impl"], m["fault_profile"])]["m"].append(m)
    for e in el_rows:
        by[(e["protocol"], e["impl"], e["fault_profile"])]["el"].append(e["latency_ms"])
    for c in cl_rows:
        by[(c["protocol"], c["impl"], c["fault_profile"])]["cl"].append(c["latency_ms"])
    mbp = []
    for (p, impl, fp_), d in sorted(by.items()):
        ms = d["m"]
        if not ms:
            continue
        el, cl = sorted(d["el"]), sorted(d["cl"])
        lag_max = [m["hwm_lag_max"] for m in ms if m["hwm_lag_max"] is not None]
        mbp.append({
            "protocol": p, "impl": impl, "fault_profile": fp_, "traces": len(ms),
            "elections_per_trace": _avg(m["elections"] for m in ms),
            "leaderless_share_avg": _avg(m["leaderless_share"] for m in ms),
            "leaderless_ms": sum(m["leaderless_ms"] for m in ms),
            "truncations_per_trace": _avg(m["truncations"] for m in ms),
            "max_truncation_depth": max(m["max_truncation_depth"] for m in ms),
            "hwm_lag_avg": _avg(m["hwm_lag_avg"] for m in ms),
            "hwm_lag_max": max(lag_max) if lag_max else None,
            "unclean_recoveries": sum(m["unclean_recoveries"] for m in ms),
            "data_loss_events": sum(m["data_loss_events"] for m in ms),
            "elections": len(el) if el else None,
            "election_latency_p50": _exact_percentile(el, 0.5),
            "election_latency_p95": _exact_percentile(el, 0.95),
            "election_latency_max": el[-1] if el else None,
            "committed_offsets": len(cl) if cl else None,
            "commit_latency_p50": _exact_percentile(cl, 0.5),
            "commit_latency_p95": _exact_percentile(cl, 0.95),
            "commit_latency_max": cl[-1] if cl else None})
    el_hist, cl_hist = _histogram(el_rows), _histogram(cl_rows)
    bad_rows.sort(key=lambda r: (r["file"], r["line"]))
    write("traces", trace_rows)
    write("bad_rows", bad_rows, pa.schema([("file", pa.string()), ("line", pa.int64()),
                                           ("trace_id", pa.string()), ("reason", pa.string()),
                                           ("text", pa.string()), ("in_steps", pa.bool_())]))
    write("verdicts", verdict_rows)
    write("conformance", conformance)
    write("first_failure", [], pa.schema([("protocol", pa.string()),
                                          ("fault_profile", pa.string()), ("bug", pa.string()),
                                          ("failing_step", pa.int64()),
                                          ("claimed_action", pa.string()),
                                          ("traces", pa.int64())]))
    write("actions", action_rows)
    write("metrics", metrics)
    write("election_latency", el_rows)
    write("commit_latency", cl_rows)
    write("metrics_by_profile", mbp)
    write("election_latency_hist", el_hist)
    write("commit_latency_hist", cl_hist)
    vcount: dict[str, int] = defaultdict(int)
    for v in verdict_rows:
        vcount[v["verdict"]] += 1
    summary = {"files": len(files), "master": "baseline (one Python process)",
               "traces": len(trace_rows), "steps": sum(a[0] for a in actions.values()),
               "lines": n_lines,
               "bad_rows": len(bad_rows), "graph": None, "agreement": None,
               "verdict_source": "none (no --graph or --verdicts): traces are only checked "
                                 "for form",
               "verdicts": dict(vcount), "conformance": conformance, "metrics_by_profile": mbp}
    summary["seconds"] = round(time.monotonic() - t0, 1)
    summary["report"] = str(out / "report.html")
    tables = {"conformance": conformance, "first_failure": [], "actions": action_rows,
              "metrics_by_profile": mbp,
              "election_latency_hist": el_hist, "commit_latency_hist": cl_hist,
              "bad_rows": bad_rows[:50]}
    write_atomic(out / "report.html", render_report(summary, tables))
    write_atomic(out / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _histogram(rows: list[dict]) -> list[dict]:
    """metrics.latency_histogram in plain Python: the same grid (fields.hist_grid)."""
    if not rows:
        return []
    lats = [r["latency_ms"] for r in rows]
    origin, width = hist_grid(min(lats), max(lats))
    counts: dict[tuple, int] = defaultdict(int)
    for r in rows:
        counts[(r["protocol"], r["impl"], r["fault_profile"],
                (r["latency_ms"] - origin) // width)] += 1
    return [{"protocol": p, "impl": i, "fault_profile": f, "bin": b, "lo": b * width + origin,
             "hi": (b + 1) * width + origin, "count": n}
            for (p, i, f, b), n in sorted(counts.items())]


# --------------------------------------------------------------------------- comparing

PERCENTILES = {"election_latency_p50": ("election_latency", 0.5),
               "election_latency_p95": ("election_latency", 0.95),
               "commit_latency_p50": ("commit_latency", 0.5),
               "commit_latency_p95": ("commit_latency", 0.95)}
COMPARED = {   # table -> columns compared row for row
    "traces": ("trace_id", "protocol", "seed", "fault_profile", "bug", "bounds", "spec_module",
               "n_steps", "duration_ms", "footer_steps", "end_reason", "violated", "bad_rows",
               "unknown_actions", "problems", "complete"),
    "bad_rows": ("file", "line", "trace_id", "reason", "in_steps"),
    "verdicts": ("trace_id", "verdict", "failing_step", "claimed_action", "detail"),
    "conformance": None, "first_failure": None, "actions": None,
    "metrics": None,
    "election_latency": ("trace_id", "protocol", "fault_profile", "bug", "step", "time_ms",
                         "leader", "epoch", "latency_ms"),
    "commit_latency": ("trace_id", "protocol", "fault_profile", "bug", "offset", "appended_ms",
                       "committed_ms", "latency_ms"),
    "metrics_by_profile": "all but percentiles",
    "election_latency_hist": None, "commit_latency_hist": None,
}


def _norm(v):
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    return v


def _read_rows(path: Path, columns) -> list[tuple]:
    import pyarrow.dataset as ds
    t = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
    cols = list(columns) if columns else sorted(t.column_names)
    missing = [c for c in cols if c not in t.column_names]
    if missing:
        raise KeyError(f"{path}: no column {missing}")
    rows = [tuple(_norm(r[c]) for c in cols) for r in t.select(cols).to_pylist()]
    return sorted(rows, key=repr)


def _distinct_fps(steps: Path) -> set:
    import pyarrow.dataset as ds
    out: set = set()
    for b in ds.dataset(str(steps), format="parquet", partitioning="hive").to_batches(
            columns=["fp"]):
        out.update(b.column(0).unique().to_pylist())
    return out


def compare(spark_out: Path, base_out: Path) -> dict:
    """{check: true/false} for every compared statistic, plus `diff` notes for failures."""
    checks: dict[str, bool] = {}
    notes: list[str] = []
    ss = json.loads((spark_out / "summary.json").read_text())
    bs = json.loads((base_out / "summary.json").read_text())
    for k in ("traces", "steps", "lines", "bad_rows", "verdicts"):
        checks[f"summary.{k}"] = ss[k] == bs[k]
        if not checks[f"summary.{k}"]:
            notes.append(f"summary {k}: spark {ss[k]} baseline {bs[k]}")
    for table, cols in COMPARED.items():
        if cols == "all but percentiles":
            import pyarrow.parquet as pq
            names = [c for c in pq.read_schema(next((spark_out / table).glob("*.parquet")))
                     .names if c not in PERCENTILES]
            cols = sorted(names)
        a, b = _read_rows(spark_out / table, cols), _read_rows(base_out / table, cols)
        checks[f"table.{table}"] = a == b
        if a != b:
            diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            notes.append(f"{table}: {len(a)} vs {len(b)} rows; first difference at sorted row "
                         f"{diff}: spark {a[diff] if diff < len(a) else None} baseline "
                         f"{b[diff] if diff < len(b) else None}")
    fa, fb = _distinct_fps(spark_out / "steps"), _distinct_fps(base_out / "steps")
    checks["steps.distinct_fingerprints"] = fa == fb
    if fa != fb:
        notes.append(f"distinct fingerprints: spark {len(fa)} baseline {len(fb)}")
    # percentiles: Spark's percentile_approx is within a rank error n/accuracy of exact
    import pyarrow.dataset as ds
    sp = {(r["protocol"], r["fault_profile"]): r for r in
          ds.dataset(str(spark_out / "metrics_by_profile"), format="parquet").to_table()
          .to_pylist()}
    lat: dict[str, dict] = {}
    for name in ("election_latency", "commit_latency"):
        d: dict[tuple, list] = defaultdict(list)
        for r in ds.dataset(str(base_out / name), format="parquet",
                            partitioning="hive").to_table(
                columns=["protocol", "fault_profile", "latency_ms"]).to_pylist():
            d[(r["protocol"], r["fault_profile"])].append(r["latency_ms"])
        lat[name] = {k: sorted(v) for k, v in d.items()}
    ok = True
    for key, row in sp.items():
        for col, (name, p) in PERCENTILES.items():
            vals = lat[name].get(key, [])
            got = row[col]
            if not vals:
                ok &= got is None
                continue
            n = len(vals)
            e = math.ceil(n / PERCENTILE_ACCURACY)
            r = max(0, math.ceil(p * n) - 1)
            lo, hi = vals[max(0, r - e)], vals[min(n - 1, r + e)]
            if got is None or not lo <= got <= hi:
                ok = False
                notes.append(f"{col} {key}: spark {got}, exact {vals[r]} (allowed {lo}..{hi})")
    checks["metrics_by_profile.percentiles_within_rank_error"] = ok
    return {"agree": all(checks.values()), "checks": checks, "notes": notes,
            "distinct_states": len(fb)}


def compare_duckdb(spark_out: Path, duck_out: Path) -> dict:
    """The DuckDB peer's statistics against the Spark job's: summary counts and verdicts,
    traces (form columns), conformance, actions, election and commit latencies row for row,
    and coverage (distinct states, distinct transitions of Spark's steps table)."""
    import duckdb
    checks: dict[str, bool] = {}
    notes: list[str] = []
    ss = json.loads((spark_out / "summary.json").read_text())
    ds_ = json.loads((duck_out / "summary.json").read_text())
    for k in ("traces", "steps", "lines", "verdicts"):
        checks[f"summary.{k}"] = ss[k] == ds_[k]
        if not checks[f"summary.{k}"]:
            notes.append(f"summary {k}: spark {ss[k]} duckdb {ds_[k]}")
    tables = {
        "traces": ("trace_id", "protocol", "fault_profile", "bug", "bounds_config", "n_steps",
                   "duration_ms", "problems", "complete"),
        "conformance": None, "actions": None,
        "election_latency": COMPARED["election_latency"] + ("bounds_config",),
        "commit_latency": COMPARED["commit_latency"] + ("bounds_config",),
    }
    for t, cols in tables.items():
        dpath = duck_out / t if (duck_out / t).is_dir() else duck_out / f"{t}.parquet"
        if cols is None:
            import pyarrow.parquet as pq
            cols = sorted(pq.read_schema(dpath).names)
        a, b = _read_rows(spark_out / t, cols), _read_rows(dpath, cols)
        checks[f"table.{t}"] = a == b
        if a != b:
            notes.append(f"{t}: spark {len(a)} rows, duckdb {len(b)}; first differing "
                         f"{next(((x, y) for x, y in zip(a, b) if x != y), None)}")
    con = duckdb.connect()
    n_states, n_edges = con.execute(f"""
        WITH s AS (SELECT * FROM read_parquet('{spark_out / 'steps'}/**/*.parquet',
                                              hive_partitioning = true)),
             e AS (SELECT lag(fp) OVER (PARTITION BY trace_id ORDER BY step) AS src, action,
                          fp FROM s)
        SELECT (SELECT count(DISTINCT fp) FROM s),
               (SELECT count(*) FROM (SELECT DISTINCT src, action, fp FROM e
                                      WHERE src IS NOT NULL))""").fetchone()
    con.close()
    checks["coverage.distinct_states"] = n_states == ds_["distinct_states"]
    checks["coverage.distinct_transitions"] = n_edges == ds_["distinct_transitions"]
    if not (checks["coverage.distinct_states"] and checks["coverage.distinct_transitions"]):
        notes.append(f"coverage: spark {n_states} states {n_edges} transitions, duckdb "
                     f"{ds_['distinct_states']} / {ds_['distinct_transitions']}")
    return {"agree": all(checks.values()), "checks": checks, "notes": notes,
            "distinct_transitions": n_edges}


# --------------------------------------------------------------------------- main

def _flatness(results: list[dict]) -> dict | None:
    """Peak memory at the smallest and the largest size, and their ratio (1.0 = flat)."""
    if len(results) < 2:
        return None
    lo, hi = results[0], results[-1]
    out = {"events": [lo["events_requested"], hi["events_requested"]]}
    for side in ("spark_old", "spark", "duckdb", "baseline"):
        if side in lo and side in hi:
            a, b = lo[side]["peak_rss_mib"], hi[side]["peak_rss_mib"]
            out[side] = {"peak_rss_mib": [a, b], "ratio": round(b / a, 2) if a else None}
            ra, rb = lo[side].get("role_peak_rss_mib", {}), hi[side].get("role_peak_rss_mib", {})
            if side.startswith("spark") and ra and rb:
                out[side]["by_role_mib"] = {k: [ra.get(k), rb.get(k)] for k in sorted(ra | rb)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000",
                    help="comma-separated event counts, ascending (default 1M and 10M)")
    ap.add_argument("--work", default=str(work_dir() / "bench_spark"))
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--baseline-max-events", type=int, default=None,
                    help="run the pyarrow baseline (and its 19 checks) only up to this many "
                         "events (a long run that must fit a time window)")
    ap.add_argument("--old-code", type=Path,
                    help="a checkout of an earlier commit (git worktree add DIR COMMIT): its "
                         "Spark job runs too, first, as the baseline of the speed-up")
    ap.add_argument("--no-duckdb", action="store_true",
                    help="leave out the DuckDB peer (the `bench` extra)")
    ap.add_argument("--keep-outputs", action="store_true",
                    help="keep both sides' output tables (removed after the comparison)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=("spark", "baseline", "duckdb"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        run = {"spark": child_spark, "baseline": child_baseline,
               "duckdb": child_duckdb}[a.child]
        print(json.dumps(run(Path(a.corpus), Path(a.out))), flush=True)
        return 0
    try:
        sizes = [int(x) for x in a.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes {a.sizes!r}: expected comma-separated integers")
    if sizes != sorted(sizes) or min(sizes) <= 0:
        ap.error("--sizes: positive event counts in ascending order")
    work = Path(a.work)
    results = []
    for n in sizes:
        t0 = time.monotonic()
        corpus = generate(n, work / f"corpus-{n}")
        gen_s = round(time.monotonic() - t0, 1)
        size = sum(f.stat().st_size for f in corpus.glob("*.jsonl"))
        r = {"events_requested": n, "generate_s": gen_s, "corpus_mib": round(size / 2**20, 1)}
        spark_out, base_out = work / f"out-spark-{n}", work / f"out-baseline-{n}"
        r["corpus_bytes"] = size
        if a.old_code:
            old_out = work / f"out-spark-old-{n}"
            r["spark_old"] = run_child("spark-old", corpus, old_out, a.old_code)
            shutil.rmtree(old_out, ignore_errors=True)
        r["spark"] = run_child("spark", corpus, spark_out)
        if not a.no_duckdb:
            duck_out = work / f"out-duckdb-{n}"
            r["duckdb"] = run_child("duckdb", corpus, duck_out)
            dc = compare_duckdb(spark_out, duck_out)
            r["duckdb_agree"], r["duckdb_checks"], r["duckdb_notes"] = (
                dc["agree"], dc["checks"], dc["notes"])
            print(f"[bench] {n} events: DuckDB agrees with Spark on "
                  f"{sum(dc['checks'].values())}/{len(dc['checks'])} checks {dc['notes']}",
                  file=sys.stderr, flush=True)
            if not a.keep_outputs:
                shutil.rmtree(duck_out, ignore_errors=True)
        if a.old_code:
            r["speedup_vs_old"] = round(r["spark_old"]["wall_s"] / r["spark"]["wall_s"], 2)
        if not a.no_baseline and (a.baseline_max_events is None or n <= a.baseline_max_events):
            r["baseline"] = run_child("baseline", corpus, base_out)
            cmp = compare(spark_out, base_out)
            r["agree"], r["checks"], r["notes"] = cmp["agree"], cmp["checks"], cmp["notes"]
            print(f"[bench] {n} events: the pyarrow baseline agrees with Spark on "
                  f"{sum(cmp['checks'].values())}/{len(cmp['checks'])} checks {cmp['notes']}",
                  file=sys.stderr, flush=True)
            r["distinct_states"] = cmp["distinct_states"]
            b, s = r["baseline"], r["spark"]
            # a ratio of different work would mislead: only when the statistics agree
            r["speed_ratio"] = (round(b["wall_s"] / s["wall_s"], 2)
                                if s["wall_s"] and r["agree"] else None)
        for side in ("spark_old", "spark", "duckdb", "baseline"):
            if side in r and r[side]["wall_s"]:
                r[side]["mb_per_s"] = round(size / 1e6 / r[side]["wall_s"], 1)
        if not a.keep_outputs:
            shutil.rmtree(spark_out, ignore_errors=True)
            shutil.rmtree(base_out, ignore_errors=True)
        results.append(r)
        if a.json:  # one line per size as soon as it is measured (long runs)
            print(json.dumps(r), file=sys.stderr, flush=True)
        else:
            _print(r)
    flat = _flatness(results)
    if a.json:
        print(json.dumps({"cores": os.cpu_count(), "master": "local[2]", "results": results,
                          "memory_flatness": flat}, indent=2))
    elif flat:
        print(f"peak memory from {flat['events'][0]:,} to {flat['events'][1]:,} events:")
        for side in ("spark_old", "spark", "duckdb", "baseline"):
            if side in flat:
                f = flat[side]
                print(f"  {side:8} {f['peak_rss_mib'][0]} -> {f['peak_rss_mib'][1]} MiB "
                      f"(ratio {f['ratio']})")
                for role, (a, b) in f.get("by_role_mib", {}).items():
                    print(f"    {role:15} {a} -> {b} MiB (each role's own peak)")
    return 0 if all(r.get("agree", True) and r.get("duckdb_agree", True)
                    for r in results) else 1


def _print(r: dict) -> None:
    print(f"{r['events_requested']:>11,} events  ({r['corpus_mib']} MiB, generated in "
          f"{r['generate_s']} s)")
    for side, label in (("spark_old", "spark (old code)"), ("spark", "spark local[2]"),
                        ("duckdb", "duckdb 2 threads")):
        if side in r:
            s = r[side]
            print(f"  {label:17} {s['wall_s']:>8} s  {s['events_per_s']:>9,} events/s  "
                  f"{s.get('mb_per_s')} MB/s  peak RSS {s['peak_rss_mib']} MiB "
                  f"(whole process tree)")
    if "speedup_vs_old" in r:
        print(f"  speed-up of the Spark job over the old code: {r['speedup_vs_old']}x")
    if "duckdb_agree" in r:
        print(f"  duckdb computes the same statistics as spark: {r['duckdb_agree']}")
        for note in r["duckdb_notes"]:
            print(f"    differs: {note}")
    if "baseline" in r:
        b = r["baseline"]
        print(f"  {'baseline 1 proc':17} {b['wall_s']:>8} s  {b['events_per_s']:>9,} events/s  "
              f"{b.get('mb_per_s')} MB/s  peak RSS {b['peak_rss_mib']} MiB")
        print(f"  wall time baseline/spark {r['speed_ratio']} (above 1: Spark is faster); "
              f"same statistics: {r['agree']}")
        for note in r["notes"]:
            print(f"    differs: {note}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
