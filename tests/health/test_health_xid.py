"""One Xid policy (issue 29): the classes from NVIDIA's catalog, tuning, bad input refused, and the node checks, the
alerts and remediation agreeing on every Xid the policy lists (the check's real failure line, fed to the rendered
rules in promtool, mapped to the remediation policy's action)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import CheckMode, CheckName, NodeCheckSpec, NodeHealthOptions, render_node_checks
from fmconstructs.health.xid import (
    DEFAULT_XID_POLICY,
    XID_SOURCES,
    XidClass,
    XidPolicy,
    node_check_reason_regex,
)
from fmconstructs.observability.rules import AlertThresholds, RuleGroup, default_rule_groups
from fmconstructs.remediation import XID_CLASS_ACTIONS, Action, RemediationPolicy, Trigger

from tests.support.health_checks import Sandbox
from tests.support.promtool import case, expected_alert, rule_for, run_tests

# --- the default policy is the catalog's -----------------------------------------------------------------------------
#: NVIDIA "Resolution Bucket (Immediate Action)" values each class may rest on (module docstring of health/xid.py).
BUCKETS = {
    XidClass.APPLICATION: {"RESTART_APP", "IGNORE", "WORKFLOW_XID_45"},
    XidClass.CONTAINED: {"RESTART_APP"},
    XidClass.RESET: {"RESET_GPU", "RESTART_VM", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR"},
    XidClass.FATAL: {"RESTART_BM", "CHECK_MECHANICALS"},
}


def test_the_default_classes_come_from_the_catalog_rows() -> None:
    assert len({s.xid for s in XID_SOURCES}) == len(XID_SOURCES)
    for source in XID_SOURCES:
        assert DEFAULT_XID_POLICY.class_of(source.xid) is source.xid_class, source
        assert source.nvidia_action in BUCKETS[source.xid_class], source
    assert sorted(x for x, _ in DEFAULT_XID_POLICY.items()) == sorted(s.xid for s in XID_SOURCES)


def test_the_issue_29_xids_land_where_nvidia_says() -> None:
    policy = DEFAULT_XID_POLICY
    assert policy.class_of(94) is XidClass.CONTAINED  # new work runs without a reset
    assert {policy.class_of(x) for x in (119, 120, 95, 48, 74, 64, 140)} == {XidClass.RESET}
    assert policy.class_of(79) is XidClass.FATAL
    assert {policy.class_of(x) for x in (13, 31, 43)} == {XidClass.APPLICATION}
    assert policy.class_of(63) is None and policy.class_of(92) is None  # catalog IGNORE
    assert 119 in policy.node_check_xids and 94 not in policy.node_check_xids


# --- tuning ---------------------------------------------------------------------------------------------------------
def test_moved_takes_an_xid_out_of_its_class() -> None:
    policy = DEFAULT_XID_POLICY.moved([94, 13], to=XidClass.RESET)
    assert policy.class_of(94) is XidClass.RESET and policy.class_of(13) is XidClass.RESET
    assert 94 not in policy.contained and 13 not in policy.application
    assert DEFAULT_XID_POLICY.class_of(94) is XidClass.CONTAINED  # frozen: a new policy
    assert policy.moved([94], to=None).class_of(94) is None
    assert policy.moved([200], to=XidClass.FATAL).fatal == (54, 79, 200)


def test_classes_given_outright() -> None:
    policy = XidPolicy(application=[13], contained=(), reset=frozenset({119, 48}), fatal=(79,))
    assert policy.reset == (48, 119) and policy.contained == ()
    assert policy.describe() == "application: 13; contained: -; reset: 48 119; fatal: 79"


def test_with_node_check_xids_is_what_fatal_xids_meant() -> None:
    policy = DEFAULT_XID_POLICY.with_node_check_xids([79, 48, 13])
    assert policy.node_check_xids == (13, 48, 79)
    assert policy.class_of(48) is XidClass.RESET  # kept its class
    assert policy.class_of(13) is XidClass.FATAL  # was application
    assert policy.class_of(119) is None  # no longer fails the checks


@given(
    st.lists(st.integers(min_value=1, max_value=999), unique=True, max_size=20),
    st.sampled_from([*XidClass, None]),
)
def test_moving_keeps_every_xid_in_at_most_one_class(xids: list[int], to: XidClass | None) -> None:
    policy = DEFAULT_XID_POLICY.moved(xids, to=to)
    listed = [x for c in XidClass for x in policy.xids(c)]
    assert len(listed) == len(set(listed))
    assert all(policy.class_of(x) is to for x in xids)
    untouched = [x for x, _ in DEFAULT_XID_POLICY.items() if x not in xids]
    assert all(policy.class_of(x) is DEFAULT_XID_POLICY.class_of(x) for x in untouched)
    assert set(policy.node_check_xids) == {x for x, c in policy.items() if c.fails_node_checks}


@given(st.lists(st.integers(min_value=1, max_value=999), unique=True, max_size=20))
def test_with_node_check_xids_fails_exactly_the_given_xids(xids: list[int]) -> None:
    assert DEFAULT_XID_POLICY.with_node_check_xids(xids).node_check_xids == tuple(sorted(xids))


def _number_token() -> Any:
    return cdk.CfnParameter(cdk.Stack(), "Xid", type="Number").value_as_number


@pytest.mark.parametrize(
    ("kwargs", "error", "parameter", "message"),
    [
        ({"reset": (0,)}, FmValidationError, "reset[0]", "at least 1"),
        ({"fatal": (1000,)}, FmValidationError, "fatal[0]", "at most 999"),
        ({"reset": (True,)}, FmTypeError, "reset[0]", "an integer"),
        ({"reset": (2.5,)}, FmValidationError, "reset[0]", "a whole number"),
        ({"application": ("13",)}, FmTypeError, "application[0]", "an integer"),
        ({"reset": "48"}, FmTypeError, "reset", "a list"),
        ({"reset": 48}, FmTypeError, "reset", "a list of Xid numbers"),
        ({"reset": {48: "x"}}, FmTypeError, "reset", "a list"),
        ({"reset": (48, 48)}, FmValidationError, "reset", "without repeats"),
        ({"reset": (94, 119)}, FmValidationError, "reset", r"no other class \(94 is in contained too"),
        ({"fatal": (79, 48)}, FmValidationError, "fatal", r"48 is in reset too"),
    ],
)
def test_bad_classes_are_refused(kwargs: dict[str, Any], error: type, parameter: str, message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        XidPolicy(**kwargs)
    assert raised.value.parameter == parameter


def test_a_token_xid_is_refused() -> None:
    with pytest.raises(FmValidationError, match="known at synth time") as raised:
        XidPolicy(fatal=(79, _number_token()))
    assert raised.value.parameter == "fatal[1]"


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: DEFAULT_XID_POLICY.moved([94], to="reset"), "to"),  # type: ignore[arg-type]
        (lambda: DEFAULT_XID_POLICY.moved([0], to=XidClass.RESET), "xids[0]"),
        (lambda: DEFAULT_XID_POLICY.moved(94, to=XidClass.RESET), "xids"),  # type: ignore[arg-type]
        (lambda: DEFAULT_XID_POLICY.with_node_check_xids(["79"]), "xids[0]"),  # type: ignore[list-item]
        (lambda: DEFAULT_XID_POLICY.xids("reset"), "xid_class"),  # type: ignore[arg-type]
        (lambda: NodeCheckSpec.for_instance_type("p5.48xlarge", xid_policy=(79,)), "xid_policy"),  # type: ignore[arg-type]
        (lambda: NodeHealthOptions(xid_policy=DEFAULT_XID_POLICY.describe()), "xid_policy"),  # type: ignore[arg-type]
        (lambda: NodeHealthOptions(fatal_xids=(79, 79)), "fatal_xids"),
    ],
)
def test_bad_arguments_name_their_parameter(call: Any, parameter: str) -> None:
    with pytest.raises(FmValidationError) as raised:
        call()
    assert raised.value.parameter == parameter


def test_node_health_options_carry_the_policy_and_the_deprecated_alias() -> None:
    tuned = DEFAULT_XID_POLICY.moved([94], to=XidClass.RESET)
    options = NodeHealthOptions(xid_policy=tuned)
    assert options.spec_for("p5.48xlarge").xid_policy == tuned
    assert options.without_dcgm().xid_policy == tuned
    legacy = NodeHealthOptions(fatal_xids=(79,))
    assert legacy.fatal_xids is None and legacy.xid_policy.node_check_xids == (79,)
    assert legacy.spec_for("p5.48xlarge").xid_policy.node_check_xids == (79,)


# --- checks, alerts and remediation agree on every Xid ----------------------------------------------------------------
GPU = {"gpu": "0", "Hostname": "gpu-node-1", "instance": "10.0.1.10:9400", "job": "dcgm"}
NODE = {"instance": "10.0.1.10:9100", "job": "node"}
XID_ALERTS = ("GpuCriticalXid", "GpuContainedXid", "GpuXidError")
TUNED = DEFAULT_XID_POLICY.moved([94, 13], to=XidClass.RESET).moved([119], to=XidClass.FATAL).moved([79], to=None)


def _xids(policy: XidPolicy) -> list[int]:
    return sorted({x for x, _ in policy.items()} | {63, 92, 154, 999})  # and some the policy does not list


def _check_reason(sandbox: Sandbox, script: str, xid: int) -> str | None:
    """What the rendered prolog check says of a kernel log with ``xid``: None (pass) or the failure's reason."""
    run = sandbox.run(script, FAKE_DMESG=rf"[ 1.0] NVRM: Xid (PCI:0000:53:00): {xid}, pid=7, text\n")
    line = run.line(CheckName.GPU_XID)
    return None if line.startswith("PASS") else line.removeprefix("FAIL gpu-xid: ").rsplit(" [", 1)[0]


ALERT_OF_CLASS = {
    XidClass.FATAL: "GpuCriticalXid",
    XidClass.RESET: "GpuCriticalXid",
    XidClass.CONTAINED: "GpuContainedXid",
    XidClass.APPLICATION: "GpuXidError",
    None: "GpuXidError",
}


def _expected(groups: tuple[RuleGroup, ...], xid: int, xid_class: XidClass | None, reason: str | None) -> Any:
    """The promtool case of ``xid``: the class's Xid alert and no other and, when the check failed,
    FmNodeCheckFailed; both carry the class and its trigger (none for APPLICATION or no class)."""
    trigger = xid_class.trigger if xid_class is not None else None
    routed = {"xid_class": xid_class.value, "fmconstructs_trigger": trigger} if xid_class and trigger else {}
    alert, labels = ALERT_OF_CLASS[xid_class], {**GPU, **routed}
    expected: dict[str, list[Any]] = {a: [] for a in (*XID_ALERTS, "FmNodeCheckFailed")}
    expected[alert] = [expected_alert(rule_for(groups, alert, labels), labels, str(xid))]
    inputs: list[Any] = [("DCGM_FI_DEV_XID_ERRORS", GPU, f"0x10 {xid}x10")]
    if reason is not None:
        check = {**NODE, "check": "gpu-xid", "mode": "prolog"}
        inputs.append(("fm_node_check_status", check, "0x20"))
        inputs.append(("fm_node_check_failure_info", {**check, "reason": reason}, "1x20"))
        fired = {**check, "reason": reason, **routed}
        expected["FmNodeCheckFailed"] = [expected_alert(rule_for(groups, "FmNodeCheckFailed", fired), fired, None)]
    return case(f"xid {xid}", inputs, "12m", expected)


@pytest.mark.parametrize("policy", [DEFAULT_XID_POLICY, TUNED], ids=["default", "tuned"])
def test_checks_alerts_and_remediation_agree_on_every_xid(policy: XidPolicy, tmp_path: Path) -> None:
    (tmp_path / "node").mkdir()
    sandbox = Sandbox(tmp_path / "node")
    spec = NodeHealthOptions(xid_policy=policy).spec_for("p5.48xlarge", efa_interfaces=0)  # no EFA stub: faster
    script = render_node_checks(spec, CheckMode.PROLOG)
    # the groups with the Xid and node-check alerts (the others read metrics these cases do not have)
    groups = tuple(
        g
        for g in default_rule_groups(AlertThresholds(xid_policy=policy))
        if g.name in ("fmconstructs-gpu-health", "fmconstructs-node-checks")
    )
    remediation = RemediationPolicy()
    tests = []
    for xid in _xids(policy):
        xid_class = policy.class_of(xid)
        reason = _check_reason(sandbox, script, xid)
        # the node checks: fail exactly on the classes that need the node acted on, naming the class
        assert (reason is not None) is bool(xid_class and xid_class.fails_node_checks), (xid, reason)
        if reason is not None:
            assert xid_class is not None and f"Xid {xid} ({xid_class.value}) on " in reason
        # remediation: the trigger the alerts carry gets the class's action; no trigger, no action
        if xid_class is not None and xid_class.trigger is not None:
            assert remediation.action_for(Trigger(xid_class.trigger)) is XID_CLASS_ACTIONS[xid_class]
        tests.append(_expected(groups, xid, xid_class, reason))
    # the alerts: the class's alert and no other, and the node-check alert with the same trigger
    run_tests(groups, tests, tmp_path)


def test_the_default_actions_per_class() -> None:
    assert XID_CLASS_ACTIONS == {
        XidClass.CONTAINED: Action.NOTIFY,
        XidClass.RESET: Action.REBOOT,
        XidClass.FATAL: Action.REPLACE,
    }
    assert XidClass.APPLICATION.trigger is None and not XidClass.APPLICATION.fails_node_checks
    assert not XidClass.CONTAINED.fails_node_checks


def test_the_reason_regex_matches_the_checks_own_words() -> None:
    assert re.fullmatch(node_check_reason_regex(XidClass.RESET), "Xid 119 (reset) on PCI:0000:53:00 in the kernel log")
    assert not re.fullmatch(node_check_reason_regex(XidClass.RESET), "Xid 79 (fatal) on PCI:0000:53:00")
