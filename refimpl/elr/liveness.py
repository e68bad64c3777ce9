"""The liveness properties of spec/ELR.tla, judged on a simulated run once its faults have
stopped (refimpl/sim/simulator.py, `faults_until_ms`).  Pure functions of the controller's and
the brokers' states; the same names as the spec's properties (ELR.tla "LIVENESS"):

- ElrMemberEventuallyElected (KIP-966 §"Controller behaviors" 3, election order 2): a
  leaderless partition whose ISR is empty and which has an unfenced ELR member elects one.
- BalancedRecoveryEventuallyElects (§"Unclean recovery", Balanced): a leaderless Balanced
  recovery holding a fresh reply from every LastKnownELR member ends with an election.
- HwmEventuallyAdvances (§"Additional High Watermark advancement requirement"): while the
  committed ISR meets min ISR and the running leader has records above its HWM, the HWM moves.
- IsrEventuallyReexpands (§"ISR invariants", Kafka's ISR expansion): a running, unfenced
  replica outside the ISR of a running leader rejoins the ISR.

Recovery (`settled`) is what a partition owes once the faults stop and every broker is back: a
leader that knows it leads, every replica in the ISR, and every replica's HWM at the leader's
log end offset of the moment the ISR was full again (those records must be committed and every
replica must learn it; Kafka's tests wait for the same: a leader, the ISR back to full, the
replicas at the HWM).  A partition the election order leaves leaderless on purpose is settled
too: KIP-966 §"Unclean recovery" order 4c ("None: ... wait for the user"), once every ISR and
ELR member has stopped uncleanly; no property's premise holds there, and `offline_by_design`
names the case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import rules
from .types import BALANCED, NO_LEADER, ElrConfig

__all__ = ["ELR_ELECTED", "BALANCED_ELECTS", "HWM_ADVANCES", "ISR_REEXPANDS", "PROPERTIES",
           "OFFLINE_DECISIONS", "live_leader", "offline_by_design", "judge", "settled"]

ELR_ELECTED = "ElrMemberEventuallyElected"
BALANCED_ELECTS = "BalancedRecoveryEventuallyElects"
HWM_ADVANCES = "HwmEventuallyAdvances"
ISR_REEXPANDS = "IsrEventuallyReexpands"
PROPERTIES = (ELR_ELECTED, BALANCED_ELECTS, HWM_ADVANCES, ISR_REEXPANDS)

# rules.recovery_decision's outcomes that leave a partition leaderless on purpose when every
# replica is running and unfenced: KIP-966 order 4c only.  (With every replica unfenced the
# other waits cannot be legitimate: without ELR the ISR never empties (spec
# IsrNonEmptyWithoutElr), and the phase-1 LastKnownLeader is set whenever the last ISR member
# leaves and cleared only by an election, so it is a candidate; such a state is a bug, and
# it is reported as not recovered.)
OFFLINE_DECISIONS = frozenset({"WaitForOperator"})


def live_leader(config: ElrConfig, states: Mapping[str, Any], up: Mapping[str, bool]
                ) -> str | None:
    """The controller's leader when it runs, is unfenced and knows it leads in the controller's
    leader epoch (ELR.tla LeaderLive, plus the leader having learnt its election); else None."""
    cs = states[config.controller]
    p = cs.partition
    if p.leader == NO_LEADER or not up.get(p.leader):
        return None
    reg = cs.registration(p.leader)
    st = states[p.leader]
    if reg is None or reg.fenced or not st.is_leader \
            or st.metadata.leader_epoch != p.leader_epoch:
        return None
    return p.leader


def offline_by_design(config: ElrConfig, states: Mapping[str, Any]) -> str | None:
    """The election order's decision when it keeps the partition leaderless on purpose with
    every broker unfenced (OFFLINE_DECISIONS), else None."""
    cs = states[config.controller]
    p = cs.partition
    brokers = frozenset(config.brokers)
    if p.leader != NO_LEADER or cs.unfenced != brokers:
        return None
    if rules.clean_candidates(p.isr, p.elr, brokers, config.elr_enabled) or \
            rules.last_known_leader_candidates(p.isr, p.elr, p.last_known_leader, brokers,
                                               config.strategy, config.manager_enabled,
                                               config.elr_enabled):
        return None
    d = rules.recovery_decision(config.strategy, config.manager_enabled, config.elr_enabled,
                                p.isr, p.elr, p.last_known_elr, brokers)
    return d if d in OFFLINE_DECISIONS else None


def settled(config: ElrConfig, states: Mapping[str, Any], up: Mapping[str, bool],
            target_hwm: int | None) -> bool:
    """Every broker runs and is unfenced, and either the partition is offline by design or a
    live leader has every replica in its ISR and every replica (in its epoch) has an HWM of
    at least `target_hwm` (the adapter fixes it: the leader's log end offset when the ISR was
    first full again; the workload keeps appending)."""
    cs = states[config.controller]
    if not all(up.get(b) for b in config.brokers) or cs.unfenced != frozenset(config.brokers):
        return False
    if offline_by_design(config, states) is not None:
        return True
    lid = live_leader(config, states, up)
    if lid is None or target_hwm is None or cs.partition.isr != frozenset(config.brokers):
        return False
    epoch = cs.partition.leader_epoch
    return all(states[b].metadata is not None and states[b].metadata.leader_epoch == epoch
               and states[b].hwm >= target_hwm for b in config.brokers)


def judge(config: ElrConfig, states: Mapping[str, Any], up: Mapping[str, bool],
          hwm_watch: tuple[str, int, int, int] | None) -> dict[str, str | None]:
    """For each property, None if its premise does not hold now (or it held and was met),
    else why the partition is stuck.  `hwm_watch`: (leader, leader epoch, HWM, log end
    offset) of the live leader when first seen after the faults stopped; HwmEventuallyAdvances
    fails when that leader still leads that epoch, could advance (its ISR meets min ISR) and
    its HWM has not passed the HWM it had then, although it held records above it then."""
    cs = states[config.controller]
    p = cs.partition
    unfenced = cs.unfenced
    out: dict[str, str | None] = dict.fromkeys(PROPERTIES)
    if p.leader == NO_LEADER and not p.isr and p.elr & unfenced:
        out[ELR_ELECTED] = (f"the ISR is empty and ELR member(s) {', '.join(sorted(p.elr & unfenced))}"
                            " are unfenced, but no leader is elected")
    if p.leader == NO_LEADER and config.strategy == BALANCED and cs.recovery is not None:
        repliers = frozenset(r.broker_id for r in cs.valid_replies())
        if repliers and p.last_known_elr <= repliers:
            out[BALANCED_ELECTS] = (f"every LastKnownELR member ({', '.join(sorted(p.last_known_elr)) or 'none'}) "
                                    "has replied, but the Balanced recovery elected no leader")
    lid = live_leader(config, states, up)
    if lid is not None:
        ls = states[lid]
        if (hwm_watch is not None and hwm_watch[:2] == (lid, p.leader_epoch)
                and len(p.isr) >= cs.eff_min_isr and ls.hwm < ls.log.end_offset
                and ls.hwm <= hwm_watch[2] < hwm_watch[3]):
            out[HWM_ADVANCES] = (f"leader {lid} has records up to {ls.log.end_offset} and an ISR "
                                 f"of {len(p.isr)} >= min ISR {cs.eff_min_isr}, but its HWM is "
                                 f"still {ls.hwm}")
        outside = [b for b in config.brokers
                   if up.get(b) and b in unfenced and b not in p.isr]
        if outside:
            out[ISR_REEXPANDS] = (f"{', '.join(outside)} run(s) unfenced outside the ISR "
                                  f"{{{', '.join(sorted(p.isr))}}} of leader {lid}")
    return out
