"""Counterexamples as message-sequence charts (matplotlib): one lifeline per replica, time down.

`kraftcheck tlc run NAME --diagram OUT.svg|OUT.png` draws the counterexample TLC found:

- KRaft.tla (KIP-595): an arrow per message from the state it is sent in (it appears in `msgs`)
  to the state it is received in (it leaves `msgs` by a handler), a cross where the network
  loses it (DropMessage), a dashed arrow to the bottom for messages still in flight; each
  replica's role and epoch changes, log and high-watermark changes are boxes on its lifeline.
- ELR.tla (KIP-966): the brokers and the controller as lifelines; the steps that move data or
  metadata between them (a follower's fetch, AlterPartition, a broker's registration, the
  unclean-recovery log query) are arrows; liveness, fencing, broker epochs, logs and the
  partition state (leader, epoch, ISR, ELR, HWM) are boxes.

The input is a counterexample in its JSON form (TLCResult.to_json()["counterexample"]: states
in ITF JSON), so a saved `--json` result can be drawn again.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMATS = (".svg", ".png", ".pdf")


class DiagramError(ValueError):
    """The counterexample cannot be drawn (no steps, unknown spec, bad output name)."""


@dataclass
class Arrow:
    src: str
    dst: str
    sent: int              # row (0-based step) of the send
    received: int | None   # row of the receipt; None: in flight at the end
    label: str
    lost: bool = False


@dataclass
class Chart:
    title: str
    lifelines: list[str]
    rows: list[str]                                   # "k  Action" per state
    notes: dict[tuple[int, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    arrows: list[Arrow] = field(default_factory=list)
    footer: str = ""


# ---------------------------------------------------------------------------------------------
# ITF JSON helpers
# ---------------------------------------------------------------------------------------------

def _set(v: Any) -> list:
    return sorted(v["#set"], key=json.dumps) if isinstance(v, dict) and "#set" in v else []


def _bag(v: Any) -> dict[str, tuple[dict, int]]:
    """A bag (function record -> count) as {canonical JSON: (record, count)}."""
    pairs = v.get("#map", []) if isinstance(v, dict) else []
    return {json.dumps(k, sort_keys=True): (k, n) for k, n in pairs}


def _record(r: dict) -> str:
    value = r.get("value")
    if value == "LeaderChange":
        return f"LC{r.get('epoch')}"
    if value == "VoterAssignment":         # KRaftReassign.tla: CurrentVoters -> TargetVoters
        target = _set(r.get("targetVoters"))
        return (f"VA{r.get('epoch')}{{{','.join(_set(r.get('currentVoters')))}}}"
                + (f"->{{{','.join(target)}}}" if target else ""))
    return f"{value}@{r.get('epoch')}"


def _log(entries: list) -> str:
    return "[" + ", ".join(_record(e) for e in entries) + "]"


# ---------------------------------------------------------------------------------------------
# KIP-595 (KRaft.tla)
# ---------------------------------------------------------------------------------------------

_SHORT = {"VoteRequest": "Vote", "VoteResponse": "Vote resp",
          "BeginQuorumEpochRequest": "BeginQuorumEpoch", "BeginQuorumEpochResponse": "BeginQE resp",
          "EndQuorumEpochRequest": "EndQuorumEpoch", "FetchRequest": "Fetch",
          "FetchResponse": "Fetch resp",
          "AlterPartitionReassignmentsRequest": "AlterReassignments",
          "AlterPartitionReassignmentsResponse": "AlterReassignments resp"}


def _message_label(m: dict) -> str:
    t = m.get("type", "?")
    if t.startswith("AlterPartitionReassignments"):     # the administrator's, no epoch
        target = m.get("targetVoters")
        s = f"{_SHORT[t]} {{{','.join(_set(target))}}}" if isinstance(target, dict) \
            else f"{_SHORT[t]} {target}"
        err = m.get("error")
        return s + (f" {err}" if err and err != "NONE" else "")
    s = f"{_SHORT.get(t, t)} e{m.get('epoch')}"
    if t == "VoteRequest":
        s += f" last {m.get('lastOffset')}@{m.get('lastOffsetEpoch')}"
    elif t == "VoteResponse":
        s += " granted" if m.get("voteGranted") else " rejected"
    elif t == "FetchRequest":
        s += f" off {m.get('fetchOffset')} lfe {m.get('lastFetchedEpoch')}"
    elif t == "FetchResponse":
        div = m.get("divergingEpoch")
        if isinstance(div, dict) and div.get("epoch", -1) not in (-1, None):
            s += f" Diverging {div.get('epoch')}@{div.get('endOffset')}"
        recs = m.get("records") or []
        if recs:
            s += f" {_log(recs)}"
        s += f" hwm {m.get('highWatermark')}"
    err = m.get("error")
    if err and err != "NONE":
        s += f" {err}"
    return s


def _kraft_chart(name: str, steps: list[dict], violated: str | None) -> Chart:
    first = steps[0]["state"]
    replicas = sorted(first["role"])
    # other endpoints of messages (KRaftReassign's administrator) get lanes after the replicas
    others = sorted({str(e) for step in steps
                     for m, _ in _bag(step["state"].get("msgs")).values()
                     for e in (m.get("src"), m.get("dest")) if str(e) not in replicas})
    chart = Chart(name, replicas + others, [])
    pending: dict[str, list[int]] = defaultdict(list)    # message key -> rows of its sends
    arrows_by_key: dict[str, list[Arrow]] = defaultdict(list)
    prev = None
    for row, step in enumerate(steps):
        st, action = step["state"], step["action"]
        chart.rows.append(f"{step['index']}  {action}")
        for i in replicas:
            role, epoch = st["role"][i], st["currentEpoch"][i]
            if prev is None or role != prev["role"][i] or epoch != prev["currentEpoch"][i] \
                    or st["leaderId"][i] != prev["leaderId"][i]:
                leader = st["leaderId"][i]
                who = f" (leader {leader})" if role in ("Follower", "Voted", "Unattached") \
                    and leader in replicas else ""
                chart.notes[(row, i)].append(f"{role} e{epoch}{who}")
            if prev is not None and st["log"][i] != prev["log"][i]:
                chart.notes[(row, i)].append(f"log {_log(st['log'][i])}")
            if prev is not None and st["highWatermark"][i] != prev["highWatermark"][i]:
                chart.notes[(row, i)].append(f"HWM {st['highWatermark'][i]}")
            if "voterSet" in st and (prev is None or st["voterSet"][i] != prev["voterSet"][i]):
                # KRaftReassign.tla: the voter set the replica acts on
                chart.notes[(row, i)].append(f"voters {{{','.join(_set(st['voterSet'][i]))}}}")
        now = _bag(st.get("msgs"))
        before = _bag(prev.get("msgs")) if prev is not None else {}
        for key in sorted(set(now) | set(before)):
            n_now = now.get(key, (None, 0))[1]
            n_before = before.get(key, (None, 0))[1]
            msg = (now.get(key) or before.get(key))[0]
            for _ in range(n_now - n_before):              # sent (or duplicated)
                pending[key].append(row)
                a = Arrow(str(msg["src"]), str(msg["dest"]), row, None,
                          _message_label(msg) + (" (dup)" if prev is not None
                                                 and action == "DuplicateMessage" else ""))
                arrows_by_key[key].append(a)
                chart.arrows.append(a)
            for _ in range(n_before - n_now):              # received or lost
                open_ = [a for a in arrows_by_key[key] if a.received is None and not a.lost]
                if not open_:       # in flight since Init: draw it from the top
                    a = Arrow(str(msg["src"]), str(msg["dest"]), 0, None, _message_label(msg))
                    chart.arrows.append(a)
                    open_ = [a]
                a = open_[0]
                a.received = row
                a.lost = action == "DropMessage"
        prev = st
    chart.footer = (f"{violated} is violated in state {steps[-1]['index']}" if violated
                    else f"{len(steps)} states")
    return chart


# ---------------------------------------------------------------------------------------------
# KIP-966 (ELR.tla)
# ---------------------------------------------------------------------------------------------

CONTROLLER = "controller"


def _changed_brokers(prev: dict, st: dict, brokers: list[str]) -> list[str]:
    per = ("alive", "fenced", "log", "brokerEpoch", "shutdownFile", "replies", "flushed")
    return [b for b in brokers if any(v in st and st[v][b] != prev[v][b] for v in per)]


def _elr_chart(name: str, steps: list[dict], violated: str | None) -> Chart:
    first = steps[0]["state"]
    brokers = sorted(first["alive"])
    chart = Chart(name, brokers + [CONTROLLER], [])
    prev = None
    for row, step in enumerate(steps):
        st, action = step["state"], step["action"]
        chart.rows.append(f"{step['index']}  {action}")
        if prev is None:
            chart.notes[(row, CONTROLLER)].append(
                f"leader {st['leader']} e{st['leaderEpoch']}, min ISR {st['minIsr']}")
            chart.notes[(row, CONTROLLER)].append(
                f"ISR {{{', '.join(_set(st['isr']))}}} ELR {{{', '.join(_set(st['elr']))}}}")
            prev = st
            continue
        for b in brokers:
            if st["alive"][b] != prev["alive"][b]:
                if st["alive"][b]:
                    chart.notes[(row, b)].append(f"restarts (broker epoch {st['brokerEpoch'][b]})")
                else:
                    kind = "unclean" if action.startswith("Unclean") else "clean"
                    chart.notes[(row, b)].append(f"shuts down ({kind})")
            if st["fenced"][b] != prev["fenced"][b]:
                chart.notes[(row, b)].append("fenced" if st["fenced"][b] else "unfenced")
            if st["log"][b] != prev["log"][b]:
                chart.notes[(row, b)].append(f"log {_log(st['log'][b])}")
        if (st["leader"], st["leaderEpoch"]) != (prev["leader"], prev["leaderEpoch"]):
            chart.notes[(row, CONTROLLER)].append(f"leader {st['leader']} e{st['leaderEpoch']}")
        if (st["isr"], st["elr"]) != (prev["isr"], prev["elr"]):
            chart.notes[(row, CONTROLLER)].append(
                f"ISR {{{', '.join(_set(st['isr']))}}} ELR {{{', '.join(_set(st['elr']))}}}")
        if st["hwm"] != prev["hwm"]:
            chart.notes[(row, CONTROLLER)].append(f"HWM {st['hwm']}")
        if st.get("minIsr") != prev.get("minIsr"):
            chart.notes[(row, CONTROLLER)].append(f"min ISR {st['minIsr']}")
        if _set(st.get("acked")) != _set(prev.get("acked")):
            chart.notes[(row, prev["leader"] if prev["leader"] in brokers else CONTROLLER)] \
                .append("acks " + ", ".join(_record(a[1]) for a in
                                           (x["#tup"] if isinstance(x, dict) else x
                                            for x in _set(st["acked"]))))
        # The interactions the action stands for (KIP-966 §"Proposed Changes").
        moved = _changed_brokers(prev, st, brokers)
        leader = prev["leader"]
        if action == "FollowerFetch":
            for b in moved:
                if leader in brokers:
                    chart.arrows.append(Arrow(leader, b, row, row, "Fetch: records"))
        elif action.removesuffix("Step") in ("ShrinkIsr", "ProposeIsrExpand",
                                             "CommitAlterPartition", "HandleAlterPartition") \
                and leader in brokers:
            chart.arrows.append(Arrow(leader, CONTROLLER, row, row, "AlterPartition"))
        elif action in ("CleanShutdown", "RestartBroker", "SendReplicaLogInfo",
                        "SendReplicaLogInfoStep"):
            label = {"CleanShutdown": "controlled shutdown",
                     "RestartBroker": "register (broker epoch)"}.get(action, "ReplicaLogInfo")
            for b in moved:
                chart.arrows.append(Arrow(b, CONTROLLER, row, row, label))
        elif action in ("FenceBroker", "UnfenceBroker"):
            for b in moved:
                chart.arrows.append(Arrow(CONTROLLER, b, row, row, action))
        prev = st
    chart.footer = (f"{violated} is violated in state {steps[-1]['index']}" if violated
                    else f"{len(steps)} states")
    return chart


def build_chart(name: str, spec: str, steps: list[dict], violated: str | None) -> Chart:
    """The chart of a counterexample of `spec` (a module path; KRaft, KRaftReassign or ELR
    specs)."""
    if not steps:
        raise DiagramError(f"{name}: no counterexample to draw (TLC found no violation)")
    state = steps[0]["state"]
    if "msgs" in state and "role" in state:
        return _kraft_chart(name, steps, violated)
    if "alive" in state and "isr" in state:
        return _elr_chart(name, steps, violated)
    raise DiagramError(f"{name}: no diagram for the variables of {spec} "
                       f"(KRaft.tla and ELR.tla counterexamples can be drawn)")


# ---------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------

def draw(chart: Chart, out: Path) -> Path:
    """Draw `chart` into `out` (.svg, .png or .pdf), written atomically; returns out."""
    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise DiagramError(f"{out}: the diagram must be .svg, .png or .pdf")
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "kraftcheck"   # the same chart, byte-identical SVG
    matplotlib.rcParams["svg.fonttype"] = "none"         # text stays text: small, searchable
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    n_rows = len(chart.rows)
    col_w, row_h, left = 3.1, 0.62, 2.6
    width = left + col_w * len(chart.lifelines) + 0.4
    height = row_h * (n_rows + 2.2) + 0.6
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    top = 1.0
    x_of = {name: left + col_w * (k + 0.5) for k, name in enumerate(chart.lifelines)}

    def y(row: float) -> float:
        return top + row_h * (row + 0.5)

    ax.text(0.15, 0.35, chart.title, fontsize=12, weight="bold", va="center")
    for name, x in x_of.items():
        ax.plot([x, x], [top - 0.1, y(n_rows - 0.5) + 0.1], color="#999", lw=1, zorder=1)
        ax.text(x, top - 0.25, name, ha="center", va="center", fontsize=10, weight="bold",
                bbox=dict(boxstyle="round,pad=0.3", fc="#e8eef7", ec="#557"), zorder=3)
    for row, label in enumerate(chart.rows):
        yy = y(row)
        if row % 2:
            ax.axhspan(yy - row_h / 2, yy + row_h / 2, color="#f6f6f6", zorder=0)
        ax.text(0.15, yy, label, fontsize=8, va="center", family="monospace")
    for (row, name), notes in chart.notes.items():
        role = notes[0].split()[0] if notes else ""
        colour = {"Leader": "#ffe0a8", "Candidate": "#f4d4f4", "Shutdown": "#f8c0c0"}.get(
            role, "#fffbe6")
        ax.text(x_of[name], y(row), "\n".join(notes), ha="center", va="center", fontsize=7,
                bbox=dict(boxstyle="round,pad=0.25", fc=colour, ec="#bb9"), zorder=4)
    for a in chart.arrows:
        x0, x1 = x_of[a.src], x_of[a.dst]
        y0 = y(a.sent)
        in_flight = a.received is None
        y1 = y(n_rows - 0.5) if in_flight else y(a.received)
        if a.received == a.sent:         # an interaction within one step: a flat arrow
            y0 = y1 = y(a.sent) + row_h * 0.3
        if a.lost:
            x1 = (x0 + x1) / 2
            y1 = (y0 + y1) / 2
        colour = "#c0392b" if a.lost else ("#888" if in_flight else "#1f4e8c")
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=10,
                                     lw=1.1, color=colour, linestyle="--" if in_flight else "-",
                                     zorder=2))
        if a.lost:
            ax.text(x1, y1, f" ✕ lost (to {a.dst})", color=colour, fontsize=7, ha="left",
                    va="center", zorder=5,
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.85))
        xm, ym = x0 + (x1 - x0) * 0.35, y0 + (y1 - y0) * 0.35
        ax.text(xm, ym, a.label + (" (in flight)" if in_flight else ""), fontsize=6.2,
                ha="center", va="center", color=colour, zorder=3,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.85))
    ax.text(0.15, y(n_rows - 0.5) + row_h * 0.9, chart.footer, fontsize=10, color="#c0392b",
            weight="bold", va="center")
    from kraftcore.output import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=out.suffix.lower().lstrip("."), dpi=110,
                metadata={"Date": None} if out.suffix.lower() == ".svg" else None)
    plt.close(fig)
    write_atomic(out, buf.getvalue())
    return out


def draw_counterexample(result_json: dict, out: Path) -> Path:
    """Draw a TLC result's counterexample (TLCResult.to_json()) into out."""
    chart = build_chart(result_json["name"], result_json.get("spec", ""),
                        result_json.get("counterexample") or [], result_json.get("violated"))
    return draw(chart, out)
