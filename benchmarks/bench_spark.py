"""Benchmark of the Spark stats job: throughput and memory over a generated corpus.

    .venv/bin/python benchmarks/bench_spark.py                 # 1M and 10M events
    .venv/bin/python benchmarks/bench_spark.py --sizes 200000 --json

For each size N (events = step lines) it generates a synthetic corpus of KRaft-shaped traces in
the trace format (kraftcheck-trace/1; states drawn from a random walk over a bounded space, so
states repeat as in bounded simulation), then measures:

  * spark:    `run_stats` on local[2] (ingest, conformance, actions, metrics, report): wall time,
              events per second, peak resident memory of the whole process tree (driver JVM,
              Python driver and Python workers, sampled every 0.2 s from /proc);
  * baseline: the same counts computed in one process (json + pyarrow.compute group_by, state
              fingerprints through the same cached `observe.state_info`): wall time, events per
              second, peak RSS; and checks both agree (traces, steps, per-action counts,
              distinct states).

Prints a table, or JSON with --json.  The corpus is generated under --work (default
.kraftcheck-work/bench_spark) and reused when present.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftcheck.paths import work_dir  # noqa: E402

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

def _tree_rss_kib(root: int) -> int:
    """Resident memory of `root` and all its descendants (KiB), from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
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
        rss[int(d)] = pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack += children.get(p, [])
    return total


class PeakSampler:
    """Samples the process tree's RSS; with `log_every` it also prints the running peak to
    stderr (a long run then leaves evidence even if it is stopped)."""

    def __init__(self, period: float = 0.2, log_every: float = 0):
        self.period, self.peak, self.log_every = period, 0, log_every
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        t0 = last = time.monotonic()
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_kib(os.getpid()))
            now = time.monotonic()
            if self.log_every and now - last >= self.log_every:
                last = now
                print(f"[bench] {now - t0:7.0f} s  peak RSS so far {self.peak // 1024} MiB",
                      file=sys.stderr, flush=True)
            self._stop.wait(self.period)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def bench_spark(corpus: Path, out: Path) -> dict:
    from spark_trace_analysis.jobs import run_stats
    from spark_trace_analysis.session import get_session, stop_session
    stop_session()
    get_session("local[2]", driver_memory="2g")
    with PeakSampler(log_every=60) as ps:
        t0 = time.monotonic()
        s = run_stats([str(corpus)], out, master="local[2]")
        wall = time.monotonic() - t0
    spark = get_session("local[2]")
    acts = {r.action: r["steps"] for r in spark.read.parquet(str(out / "actions")).collect()}
    distinct = spark.read.parquet(str(out / "steps")).select("fp").distinct().count()
    stop_session()
    return {"wall_s": round(wall, 1), "events": s["steps"], "traces": s["traces"],
            "events_per_s": round(s["steps"] / wall), "peak_rss_mib": round(ps.peak / 1024),
            "bad_rows": s["bad_rows"], "actions": acts, "distinct_states": distinct}


def bench_baseline(corpus: Path) -> dict:
    """One process: json per line, cached state fingerprints, pyarrow group_by for counts."""
    import pyarrow as pa
    from spark_trace_analysis.observe import state_info
    t0 = time.monotonic()
    traces = set()
    fps = set()
    cols = {"protocol": [], "fault_profile": [], "bug": [], "action": []}
    batches = []
    for f in sorted(corpus.glob("*.jsonl")):
        hdr: dict = {}
        with open(f) as fh:
            for line in fh:
                o = json.loads(line)
                kind = o.get("kind")
                if kind == "header":
                    hdr[o["trace_id"]] = (o["protocol"], o["fault_profile"], o["bug"] or "none")
                    traces.add(o["trace_id"])
                elif kind == "step":
                    i = line.index(',"state":') + 9
                    j = line.rindex(',"step":')
                    fp, _err, _obs = state_info(line[i:j])
                    fps.add(fp)
                    p, fpr, bug = hdr[o["trace_id"]]
                    cols["protocol"].append(p)
                    cols["fault_profile"].append(fpr)
                    cols["bug"].append(bug)
                    cols["action"].append(o["action"])
        batches.append(pa.table(cols))
        cols = {k: [] for k in cols}
    t = pa.concat_tables(batches)
    by_profile = t.group_by(["protocol", "fault_profile", "bug"]).aggregate([("action", "count")])
    by_action = t.group_by(["action"]).aggregate([("action", "count")])
    wall = time.monotonic() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall_s": round(wall, 1), "events": t.num_rows, "traces": len(traces),
            "events_per_s": round(t.num_rows / wall), "peak_rss_mib": round(peak / 1024),
            "groups": by_profile.num_rows,
            "actions": dict(zip(by_action["action"].to_pylist(),
                                by_action["action_count"].to_pylist())),
            "distinct_states": len(fps)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000",
                    help="comma-separated event counts (default 1M and 10M)")
    ap.add_argument("--work", default=str(work_dir() / "bench_spark"))
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    work = Path(a.work)
    results = []
    for n in (int(x) for x in a.sizes.split(",")):
        t0 = time.monotonic()
        corpus = generate(n, work / f"corpus-{n}")
        gen_s = round(time.monotonic() - t0, 1)
        size = sum(f.stat().st_size for f in corpus.glob("*.jsonl"))
        r = {"events_requested": n, "generate_s": gen_s, "corpus_mib": round(size / 2**20)}
        r["spark"] = bench_spark(corpus, work / f"out-{n}")
        if not a.no_baseline:
            r["baseline"] = bench_baseline(corpus)
            b, s = r["baseline"], r["spark"]
            r["agree"] = (b["events"] == s["events"] and b["traces"] == s["traces"]
                          and b["actions"] == s["actions"]
                          and b["distinct_states"] == s["distinct_states"])
            r["speedup"] = round(b["wall_s"] / s["wall_s"], 2)
        results.append(r)
        if a.json:  # one line per size as soon as it is measured (long runs)
            print(json.dumps(r), file=sys.stderr, flush=True)
        else:
            _print(r)
    if a.json:
        print(json.dumps({"cores": os.cpu_count(), "master": "local[2]", "results": results},
                         indent=2))
    return 0 if all(r.get("agree", True) for r in results) else 1


def _print(r: dict) -> None:
    s = r["spark"]
    print(f"{r['events_requested']:>11,} events  ({r['corpus_mib']} MiB, generated in "
          f"{r['generate_s']} s)")
    print(f"  spark local[2]: {s['wall_s']:>8} s  {s['events_per_s']:>9,} events/s  "
          f"peak RSS {s['peak_rss_mib']} MiB (whole process tree)")
    if "baseline" in r:
        b = r["baseline"]
        print(f"  baseline 1 proc: {b['wall_s']:>7} s  {b['events_per_s']:>9,} events/s  "
              f"peak RSS {b['peak_rss_mib']} MiB   spark/baseline speed ratio {r['speedup']}x  "
              f"results agree: {r['agree']}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
