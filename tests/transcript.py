"""Interaction transcripts for the KIP-595 node, in the style of etcd raft's datadriven tests.

A transcript (tests/transcripts/*.txt) is a sequence of blocks:

    # comments start with '#'
    <directive> <arguments...>
    ----
    <the expected output: what the nodes did>
    <a blank line ends the block>

The runner feeds each directive to refimpl's pure node (refimpl.kraft.node.KRaftNode) and plays
the driver's part with a FIFO network and a disk per node: a transition's persistence effects
are applied first, then its state, then its messages are put in flight (the order KIP-595
"Quorum State" requires).  Timer changes are not printed (timer scheduling is the driver's
business; the transcripts fix the protocol's behaviour).

Directives:
    cluster voters=n1,n2,n3 [observers=o1] [cluster-id=C] [fetch-max-records=N]
    timer NODE election|fetch|request-timeout|resend|check-quorum|become-leader
    deliver SRC->DST [MessageType]   the oldest message in flight from SRC to DST (of the type)
    drop SRC->DST [MessageType]      the network loses it
    append NODE VALUE                a client record at NODE
    resign NODE                      graceful shutdown (EndQuorumEpoch)
    restart NODE                     crash and restart from the node's disk
    state [NODE...]                  the nodes' states
    network                          the messages in flight

Run `python tests/transcript.py --rewrite [FILES]` (or `pytest tests/test_transcripts.py
--rewrite`) to write the actual output in place of the expected one; review the diff.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.log import LeaderChange, Record
from refimpl.kraft.node import KRaftNode
from refimpl.kraft.state import LOG, META_PROPERTIES, NodeState, QuorumStateFile
from refimpl.sim.protocol import Envelope, Transition

TRANSCRIPTS = Path(__file__).parent / "transcripts"


class TranscriptError(ValueError):
    pass


@dataclass
class Block:
    line: int                  # 1-based line of the directive
    comments: list[str]
    directive: str
    expected: list[str]


def parse(text: str, name: str = "<transcript>") -> tuple[list[Block], list[str]]:
    """The blocks of a transcript and its trailing comment lines."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i, comments = 0, []
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            i += 1
            continue
        if ln.startswith("#"):
            comments.append(ln)
            i += 1
            continue
        start = i + 1
        if i + 1 >= len(lines) or lines[i + 1] != "----":
            raise TranscriptError(f"{name}:{start}: a directive must be followed by '----'")
        j = i + 2
        expected = []
        while j < len(lines) and lines[j].strip():
            expected.append(lines[j])
            j += 1
        blocks.append(Block(start, comments, ln.strip(), expected))
        comments = []
        i = j
    return blocks, comments


def render(blocks: list[Block], outputs: list[list[str]], trailing: list[str]) -> str:
    parts = []
    for b, out in zip(blocks, outputs):
        parts.append("\n".join(b.comments + [b.directive, "----"] + out))
    text = "\n\n".join(parts) + "\n"
    if trailing:
        text += "\n" + "\n".join(trailing) + "\n"
    return text


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------

def fmt_value(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, Enum):
        return v.name
    if isinstance(v, Record):
        return f"LC{v.epoch}" if v.control is not None else f"{v.value}@{v.epoch}"
    if isinstance(v, LeaderChange):
        return f"LeaderChange(leader={v.leader_id}, voters={','.join(v.voted_ids)})"
    if isinstance(v, tuple):
        if not v:
            return "[]"
        if all(isinstance(x, Record) for x in v):
            return "[" + " ".join(fmt_value(x) for x in v) + "]"
        if v and all(isinstance(x, str) for x in v):
            return ",".join(v)
        return "(" + ", ".join(fmt_value(x) for x in v) + ")"
    if isinstance(v, (set, frozenset)):
        return "{" + ",".join(sorted(map(str, v))) + "}"
    return str(v)


def fmt_message(payload) -> str:
    if dataclasses.is_dataclass(payload):
        body = " ".join(f"{f.name}={fmt_value(getattr(payload, f.name))}"
                        for f in dataclasses.fields(payload))
        return f"{type(payload).__name__}({body})"
    return repr(payload)


def fmt_state(s: NodeState) -> str:
    out = (f"{s.node_id}: {s.role.value} epoch={s.epoch} leader={fmt_value(s.leader_id)} "
           f"voted={fmt_value(s.voted_id)} hwm={s.high_watermark} log={fmt_value(s.log)}")
    if s.role.value == "Candidate":
        out += f" granted={fmt_value(s.votes_granted)} rejected={fmt_value(s.votes_rejected)}"
    if s.role.value == "Leader":
        feo = s.follower_end_offset
        out += " endorsed={" + ",".join(f"{k}:{feo[k]}" for k in sorted(feo)) + "}"
    return out


def fmt_persist(key: str, value) -> str:
    if isinstance(value, QuorumStateFile):
        return (f"persist {key}: leader={fmt_value(value.leader_id)} epoch={value.leader_epoch} "
                f"voted={fmt_value(value.voted_id)}")
    if key == LOG:
        return f"persist {key}: {fmt_value(value)}"
    return f"persist {key}: {fmt_value(value)}"


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------

@dataclass
class Cluster:
    node: KRaftNode
    ids: tuple[str, ...]
    states: dict[str, NodeState]
    disks: dict[str, dict] = field(default_factory=dict)
    network: list[Envelope] = field(default_factory=list)
    halted: set[str] = field(default_factory=set)

    def apply(self, nid: str, t: Transition | None, out: list[str]) -> None:
        if t is None:
            out.append(f"{nid}: no transition")
            return
        before = self.states[nid]
        disk = self.disks.setdefault(nid, {})
        for p in t.persist:
            disk[p.key] = p.value
        self.states[nid] = t.state
        label = t.action or "(no spec action)"
        if t.split_sends and t.sends:
            label += f"; sends as {t.split_sends}"
        out.append(f"{nid} {label}")
        if fmt_state(t.state) != fmt_state(before):
            out.append("  " + fmt_state(t.state))
        for p in t.persist:
            out.append("  " + fmt_persist(p.key, p.value))
        for e in t.sends:
            out.append(f"  send {e.src}->{e.dst} {fmt_message(e.payload)}")
            self.network.append(e)
        if t.halt:
            self.halted.add(nid)
            out.append(f"  {nid} halts")
        for part_node, part in t.chain:
            self.apply(part_node, part, out)


def _node_arg(cluster: Cluster | None, name: str) -> str:
    if cluster is None:
        raise TranscriptError("no cluster yet: start with `cluster voters=...`")
    if name not in cluster.states:
        raise TranscriptError(f"unknown node {name!r} (nodes: {', '.join(cluster.ids)})")
    return name


def _pick(cluster: Cluster, route: str, mtype: str | None) -> Envelope:
    if "->" not in route:
        raise TranscriptError(f"{route!r}: expected SRC->DST")
    src, dst = route.split("->", 1)
    for e in cluster.network:
        if e.src == src and e.dst == dst and (mtype is None or type(e.payload).__name__ == mtype):
            cluster.network.remove(e)
            return e
    raise TranscriptError(f"no message {src}->{dst}" + (f" of type {mtype}" if mtype else "")
                          + " in flight")


def run(blocks: list[Block]) -> list[list[str]]:
    """Each block's actual output (TranscriptError names the directive that cannot run)."""
    cluster: Cluster | None = None
    outputs = []
    for b in blocks:
        words = b.directive.split()
        cmd, args = words[0], words[1:]
        out: list[str] = []
        try:
            if cmd == "cluster":
                opts = dict(a.split("=", 1) for a in args)
                voters = tuple(opts.pop("voters").split(","))
                observers = tuple(x for x in opts.pop("observers", "").split(",") if x)
                cid = opts.pop("cluster-id", "cluster-A")
                cfg_kw = {}
                if "fetch-max-records" in opts:
                    cfg_kw["fetch_max_records"] = int(opts.pop("fetch-max-records"))
                if opts:
                    raise TranscriptError(f"unknown cluster option(s) {sorted(opts)}")
                node = KRaftNode(QuorumConfig(voters=voters, **cfg_kw))
                ids = voters + observers
                states = {n: node.initial_state(n, cid) for n in ids}
                cluster = Cluster(node, ids, states,
                                  {n: {META_PROPERTIES: cid} for n in ids})
                out += [fmt_state(states[n]) for n in ids]
            elif cmd == "timer":
                n = _node_arg(cluster, args[0])
                cluster.apply(n, cluster.node.handle_timer(cluster.states[n], args[1]), out)
            elif cmd in ("deliver", "drop"):
                e = _pick(cluster, args[0], args[1] if len(args) > 1 else None)
                if cmd == "drop":
                    out.append(f"dropped {e.src}->{e.dst} {type(e.payload).__name__}")
                elif e.dst in cluster.halted:
                    out.append(f"{e.dst} is down: {type(e.payload).__name__} lost")
                else:
                    cluster.apply(e.dst, cluster.node.handle_message(cluster.states[e.dst],
                                                                     e.src, e.payload), out)
            elif cmd == "append":
                n = _node_arg(cluster, args[0])
                cluster.apply(n, cluster.node.client_append(cluster.states[n], args[1]), out)
            elif cmd == "resign":
                n = _node_arg(cluster, args[0])
                cluster.apply(n, cluster.node.resign(cluster.states[n]), out)
            elif cmd == "restart":
                n = _node_arg(cluster, args[0])
                cluster.halted.discard(n)
                cluster.apply(n, cluster.node.restart(n, dict(cluster.disks.get(n, {}))), out)
            elif cmd == "state":
                names = args or list(cluster.ids)
                out += [fmt_state(cluster.states[_node_arg(cluster, x)]) for x in names]
            elif cmd == "network":
                if cluster is None:
                    raise TranscriptError("no cluster yet")
                out += [f"{e.src}->{e.dst} {fmt_message(e.payload)}" for e in cluster.network] \
                    or ["(empty)"]
            else:
                raise TranscriptError(f"unknown directive {cmd!r}")
        except (IndexError, KeyError, TypeError, ValueError) as e:
            if isinstance(e, TranscriptError):
                raise TranscriptError(f"line {b.line}: {b.directive}: {e}") from None
            raise TranscriptError(f"line {b.line}: {b.directive}: {type(e).__name__}: {e}") \
                from None
        outputs.append(out)
    return outputs


def check_file(path: Path, rewrite: bool = False) -> list[str]:
    """The differences between the expected and the actual outputs of one transcript
    (empty when they agree); with rewrite, the file is rewritten with the actual outputs."""
    text = path.read_text(encoding="utf-8")
    blocks, trailing = parse(text, str(path))
    try:
        outputs = run(blocks)
    except TranscriptError as e:
        raise TranscriptError(f"{path.name}: {e}") from None
    if rewrite:
        new = render(blocks, outputs, trailing)
        if new != text:
            path.write_text(new, encoding="utf-8")
        return []
    diffs = []
    for b, out in zip(blocks, outputs):
        if out != b.expected:
            import difflib
            d = "\n".join(difflib.unified_diff(b.expected, out, "expected", "actual",
                                               lineterm=""))
            diffs.append(f"{path.name}:{b.line}: {b.directive}\n{d}")
    return diffs


def main(argv: list[str]) -> int:
    rewrite = "--rewrite" in argv
    files = [Path(a) for a in argv if a != "--rewrite"] or sorted(TRANSCRIPTS.glob("*.txt"))
    bad = 0
    for f in files:
        diffs = check_file(f, rewrite)
        for d in diffs:
            print(d)
        bad += bool(diffs)
        print(f"{f}: {'rewritten' if rewrite else ('ok' if not diffs else 'DIFFERS')}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
