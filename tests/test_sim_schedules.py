"""The fault schedules of issue 11 that reach the windows between a request and the decision
that depends on it: `delays` (KIP-595 stale requests and responses, fencing; KIP-966
asynchronous GetReplicaLogInfo) and `disk-loss`; their traces stay behaviours of the specs."""

from __future__ import annotations

import collections

import pytest

from kraftcore.paths import REPO_ROOT
from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.types import ElrConfig
from refimpl.sim.faults import PROFILES, get_profile
from refimpl.sim.simulator import Simulator


class _CountingELR(ELRAdapter):
    """ELRAdapter counting the refimpl steps its handlers take."""

    def init(self):
        self.counts = collections.Counter()
        return super().init()

    def _handle(self, node, state, env, now_ms):
        t = super()._handle(node, state, env, now_ms)
        if t is not None:
            self.counts[t.action] += 1
        return t


def _log_info_counts(profile: str, seeds: int) -> collections.Counter:
    total = collections.Counter()
    for seed in range(seeds):
        a = _CountingELR(ElrConfig(strategy="Balanced", min_isr=2))
        r = Simulator(a, seed, get_profile(profile), 3000, trace=False).run()
        assert r.violations == [], (profile, seed, r.violations[:1])
        total += a.counts
    return total


def test_only_delays_makes_get_replica_log_info_asynchronous():
    assert PROFILES["delays"].async_log_info
    assert not any(p.async_log_info for n, p in PROFILES.items() if n != "delays")
    sync = _log_info_counts("chaos", 3)      # 13 replies over seeds 0-2
    # synchronous: every reply is taken by the recovery that asked for it
    assert sync["SendGetReplicaLogInfoResponse"] == sync["HandleGetReplicaLogInfoResponse"] > 0
    late = _log_info_counts("delays", 2)     # seeds 0, 1: 10 replies sent, 6 taken
    # asynchronous: some requests reach their broker after the controller has decided (or the
    # recovery was otherwise over), so their replies are not taken
    assert late["HandleGetReplicaLogInfoResponse"] > 0
    assert late["SendGetReplicaLogInfoResponse"] > late["HandleGetReplicaLogInfoResponse"]


def test_new_profiles_do_not_change_the_old_ones():
    # the old profiles' random draws are untouched by the new fields (same corpora bytes)
    for name in ("none", "lossy", "partitions", "crashes", "chaos"):
        p = PROFILES[name]
        assert (p.disk_loss, p.long_delay, p.async_log_info) == (0.0, 0.0, False)


@pytest.mark.tlc
def test_delays_traces_are_behaviours_of_both_specs(tlc_toolchain, tmp_path):
    from refimpl.sim.corpus import simulate_corpus
    from trace_checker.corpus import validate_corpus
    simulate_corpus(protocol="kraft", seeds=range(15), faults="delays", steps=300,
                    out=tmp_path / "kraft",
                    bounds=str(REPO_ROOT / "tlc_configs" / "kraft-graph-small.cfg"))
    s = validate_corpus([tmp_path / "kraft"], graph="kraft-graph-small")
    assert s["counts"] == {"valid": 15, "invalid": 0, "out_of_scope": 0, "malformed": 0}, [
        (r["file"], r.get("reason")) for r in s["results"] if r["verdict"] != "valid"]
    simulate_corpus(protocol="elr", seeds=range(12), faults="delays", steps=1500,
                    out=tmp_path / "elr",
                    bounds=str(REPO_ROOT / "tlc_configs" / "elr-graph-small.cfg"))
    s = validate_corpus([tmp_path / "elr"], graph="elr-graph-small")
    assert s["counts"] == {"valid": 12, "invalid": 0, "out_of_scope": 0, "malformed": 0}, [
        (r["file"], r.get("reason")) for r in s["results"] if r["verdict"] != "valid"]
