"""Reading TLC's -tool output, .cfg files and the manifest, without running TLC."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.cfg import CfgError, parse_cfg_text
from kraftcore.tlc.manifest import ManifestError, load_manifest
from kraftcore.tlc.tool_output import ToolOutputReader


def msg(code: int, body: str, severity: int = 0) -> str:
    return f"@!@!@STARTMSG {code}:{severity} @!@!@\n{body}\n@!@!@ENDMSG {code} @!@!@\n"


def read(text: str, props=None):
    r = ToolOutputReader(temporal_properties=props)
    for line in text.splitlines(keepends=True):
        r.feed(line)
    return r.finish()


OK_RUN = (msg(2262, "TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)")
          + msg(2200, "Progress(3) at 2026-11-22 04:00:00: 12 states generated (1 s/min), "
                      "9 distinct states found (1 ds/min), 2 states left on queue.")
          + msg(2199, "1,234 states generated, 1,000 distinct states found, 0 states left on queue.")
          + msg(2193, "Model checking completed. No error has been found.")
          + msg(2194, "The depth of the complete state graph search is 17.")
          + msg(2186, "Finished in 1s at (2026-11-22 04:00:01)"))


def test_successful_run():
    o = read(OK_RUN)
    assert (o.status, o.tlc_version, o.distinct_states, o.generated_states, o.depth) == \
        ("ok", "2.15", 1000, 1234, 17)


def test_nested_error_message_fails_closed():
    # TLC frames the evaluation error that explains "cannot handle the temporal formula"
    # (2213, severity 1) inside it (2280); the run then ends normally.  Reading only the
    # innermost message once reported such a run as ok with no states.
    inner = msg(2280, "In evaluation, the identifier progressWindow is either undefined or not "
                      "an operator.\nline 133, col 55 to line 133, col 68 of module KRaftProgress")
    text = (msg(2262, "TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)")
            + "@!@!@STARTMSG 2213:1 @!@!@\nTLC cannot handle the temporal formula line 131, "
              "col 5 to line 133, col 82 of module KRaftProgress:\n" + inner
            + "@!@!@ENDMSG 2213 @!@!@\n"
            + msg(2186, "Finished in 13060ms at (2026-11-23 17:43:39)"))
    o = read(text)
    assert o.status == "error"
    assert "cannot handle the temporal formula" in o.errors[0].message
    assert "progressWindow" in o.errors[0].message


def test_invariant_violation_with_counterexample():
    text = (msg(2110, "Invariant LogMatching is violated.", 1)
            + msg(2121, "The behavior up to this point is:", 1)
            + msg(2217, "1: <Initial predicate>\n/\\ x = 0\n/\\ log = <<>>\n", 4)
            + msg(2217, "2: <BecomeLeader line 5, col 8 to line 5, col 41 of module KRaft>\n"
                        "/\\ x = 1\n/\\ log = <<[epoch |-> 1, value |-> v1]>>\n", 4)
            + msg(2186, "Finished in 1s"))
    o = read(text)
    assert (o.status, o.violated, o.violation_kind) == ("violation", "LogMatching", "invariant")
    assert [s.action for s in o.counterexample] == ["Init", "BecomeLeader"]
    assert o.counterexample[1].location == "KRaft:5:8"
    assert o.counterexample[1].state["log"][0]["value"] == "v1"


def test_temporal_violation_is_named_when_the_config_has_one_property():
    text = (msg(2116, "Temporal properties were violated.", 1)
            + msg(2264, "The following behavior constitutes a counter-example:", 1)
            + msg(2217, "1: <Initial predicate>\nx = 0\n", 4)
            + msg(2122, "2: Back to state: <Next line 5, col 9 to line 5, col 27 of module P>", 4)
            + msg(2186, "Finished"))
    o = read(text, props=["EventuallyLeader"])
    assert (o.violated, o.violation_kind, o.loop_back_to) == ("EventuallyLeader", "temporal", 2)


def test_deadlock_and_action_property():
    assert read(msg(2114, "Deadlock reached.", 1) + msg(2186, "x")).status == "deadlock"
    o = read(msg(2112, "Action property HighWatermarkMonotonic is violated.", 1) + msg(2186, "x"))
    assert (o.violated, o.violation_kind) == ("HighWatermarkMonotonic", "action-property")


def test_semantic_error_names_module_and_line():
    text = ("Parsing file /x/KRaft.tla\nSemantic errors:\n\n*** Errors: 1\n\n"
            "line 12, col 5 to line 12, col 9 of module KRaft\n\nUnknown operator: `foo'.\n"
            + msg(3002, "Parsing or semantic analysis failed.", 1) + msg(2186, "Finished"))
    o = read(msg(2220, "Starting SANY...") + text)
    assert o.status == "error"
    e = o.errors[0]
    assert (e.module, e.line, e.column) == ("KRaft", 12, 5) and "foo" in e.message


def test_parse_error_names_line():
    text = (msg(2220, "Starting SANY...") + "Parsing file /x/E.tla\n***Parse Error***\n"
            'Encountered "====" at line 6, column 1 and token "+"\n'
            + msg(3002, "Parsing or semantic analysis failed.", 1))
    e = read(text).errors[0]
    assert (e.module, e.line, e.column) == ("E", 6, 1) and "parse error" in e.message


def test_truncated_output_is_an_error_not_a_crash():
    o = read(OK_RUN.split("@!@!@STARTMSG 2186")[0])
    assert o.status == "error" and "stopped before it finished" in o.errors[0].message


def test_unreadable_state_is_reported():
    o = read(msg(2110, "Invariant I is violated.", 1) + msg(2217, "1: <Initial predicate>\n/\\ x = [\n", 4)
             + msg(2186, "x"))
    assert o.violated == "I" and "unreadable counterexample state 1" in o.errors[0].message


@given(st.lists(st.sampled_from([
    "@!@!@STARTMSG 2217:4 @!@!@", "@!@!@ENDMSG 2217 @!@!@", "1: <Initial predicate>",
    "/\\ x = {1, <<", "@!@!@STARTMSG 2110:1 @!@!@", "Invariant X is violated.",
    "@!@!@ENDMSG 2110 @!@!@", "garbage", "@!@!@STARTMSG 2199:0 @!@!@", "1 states generated",
    "@!@!@ENDMSG 2199 @!@!@"]), max_size=30))
def test_malformed_tool_output_never_crashes(lines):
    read("\n".join(lines))


def test_cfg_constants_and_sections():
    cfg = parse_cfg_text("CONSTANTS Voters = {n1, n2} n1 = n1 n2 = n2\n  MaxEpoch = 3\n"
                         "  Cluster = [n1 |-> \"c1\", n2 |-> \"c2\"]\n"
                         "INIT Init NEXT Next\nINVARIANTS TypeOK\n  LogMatching\n"
                         "PROPERTY Live \\* comment\nSYMMETRY Perms\n")
    assert cfg.constants["Voters"] == frozenset({"n1", "n2"})
    assert cfg.constants["MaxEpoch"] == 3 and cfg.model_values == {"n1", "n2"}
    assert cfg.constants["Cluster"]["n2"] == "c2"
    assert cfg.invariants == ["TypeOK", "LogMatching"] and cfg.properties == ["Live"]


def test_cfg_errors_name_file_and_line():
    with pytest.raises(CfgError) as e:
        parse_cfg_text("INIT Init\nCONSTANTS\n  X = {1,\n", "bad.cfg")
    assert str(e.value).startswith("bad.cfg:3:")
    with pytest.raises(CfgError) as e:
        parse_cfg_text("X = 1\n", "bad.cfg")
    assert str(e.value).startswith("bad.cfg:1:")


def test_the_project_manifest_is_valid():
    entries = load_manifest()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    for e in entries:
        assert e.name == Path(e.cfg).stem, e.name
        if e.profile == "ci" and e.expect == "ok" and e.mode == "bfs":
            assert e.distinct_states is not None, f"{e.name}: ci configs pin their state count"
        if e.profile == "bugs":
            assert e.expect != "ok" or "finding" in e.description.lower(), e.name


def test_manifest_errors_name_the_file_and_config(tmp_path):
    (tmp_path / "m.toml").write_text('[[config]]\nname = "x"\nmodule = "nope.tla"\n')
    with pytest.raises(ManifestError) as e:
        load_manifest(tmp_path)
    assert "m.toml" in str(e.value) and "(x)" in str(e.value) and "missing key" in str(e.value)
    (tmp_path / "m.toml").write_text(
        '[[config]]\nname = "x"\nmodule = "tests/fixtures/tlc/Counter.tla"\n'
        'cfg = "tests/fixtures/tlc/counter-ok.cfg"\nprofile = "nightly"\nexpect = "ok"\n'
        'description = "d"\nkip = "k"\n')
    with pytest.raises(ManifestError, match="profile must be one of"):
        load_manifest(tmp_path)
    assert REPO_ROOT.is_dir()


def test_cfg_keeps_constant_statements_for_generated_configs():
    """trace_checker/tlagen.py repeats a config's CONSTANT statements from TLCConfig (strings stay
    strings, model values model values), raising only the integer constants it is asked to."""
    from trace_checker.tlagen import Unwritable, cfg_constants
    cfg = parse_cfg_text('CONSTANTS\n  Server = {n1,\n    n2}  \\* voters\n  MaxEpoch = 2 Name = "n1"\n'
                         '  n1 = n1 n2 = n2\n  Quorum <- QuorumDef\n(* a (* nested *) note *)\n'
                         'INVARIANT TypeOK\n', "c.cfg")
    assert [(a.name, a.line) for a in cfg.assignments] == \
        [("Server", 2), ("MaxEpoch", 4), ("Name", 4), ("n1", 5), ("n2", 5), ("Quorum", 6)]
    assert cfg_constants(cfg, {"MaxEpoch": 5}) == [
        "Server = {n1, n2}", "MaxEpoch = 5", 'Name = "n1"', "n1 = n1", "n2 = n2",
        "Quorum <- QuorumDef"]
    again = parse_cfg_text("CONSTANTS\n" + "\n".join(cfg_constants(cfg)), "again.cfg")
    assert again.constants == cfg.constants and again.substitutions == cfg.substitutions
    assert again.model_values == cfg.model_values == {"n1", "n2"}
    with pytest.raises(Unwritable, match="c.cfg: cannot find the assignment of Name"):
        cfg_constants(cfg, {"Name": 3})
    with pytest.raises(CfgError, match="c.cfg:3: constant A is assigned twice"):
        parse_cfg_text("CONSTANTS\n  A = 1\n  A = 2\n", "c.cfg")
