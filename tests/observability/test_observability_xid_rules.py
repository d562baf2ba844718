"""The Xid alerts follow the one Xid policy (issue 29): a class per alert, its trigger as a label, proved with
``promtool test rules`` (119 fires the critical reset alert, 94 only the contained one), and a ``gpu-xid`` node-check
failure routed by the class the node names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fmconstructs.errors import FmTypeError
from fmconstructs.health.xid import DEFAULT_XID_POLICY, XidClass, XidPolicy
from fmconstructs.observability.rules import AlertRule, AlertThresholds, RuleGroup, default_rule_groups

from tests.support.promtool import case, expected_alert, rule_for, run_tests

GPU = {"gpu": "0", "Hostname": "gpu-node-1", "instance": "10.0.1.10:9400", "job": "dcgm"}
NODE = {"instance": "10.0.1.10:9100", "job": "node"}
XID_ALERTS = ("GpuCriticalXid", "GpuContainedXid", "GpuXidError")
CLASS_LABELS = {
    XidClass.FATAL: ("GpuCriticalXid", {"xid_class": "fatal", "fmconstructs_trigger": "fatal-xid"}),
    XidClass.RESET: ("GpuCriticalXid", {"xid_class": "reset", "fmconstructs_trigger": "reset-xid"}),
    XidClass.CONTAINED: ("GpuContainedXid", {"xid_class": "contained", "fmconstructs_trigger": "contained-xid"}),
}


def xid_case(groups: tuple[RuleGroup, ...], xid: int, xid_class: XidClass | None) -> dict[str, Any]:
    """DCGM's gauge turns to ``xid``: the class's alert fires (GpuXidError for APPLICATION or no class), no other."""
    name, extra = CLASS_LABELS.get(xid_class, ("GpuXidError", {})) if xid_class else ("GpuXidError", {})
    labels = {**GPU, **extra}
    expected: dict[str, list[dict[str, Any]]] = {alert: [] for alert in XID_ALERTS}
    expected[name] = [expected_alert(rule_for(groups, name, labels), labels, str(xid))]
    return case(f"xid {xid}", [("DCGM_FI_DEV_XID_ERRORS", GPU, f"0x10 {xid}x10")], "12m", expected)


@pytest.fixture(scope="module")
def groups() -> tuple[RuleGroup, ...]:
    return default_rule_groups()


def test_xid_119_fires_the_critical_reset_alert_and_94_only_the_contained_one(groups, tmp_path: Path) -> None:
    # 119 (GSP RPC timeout): NVIDIA RESET_GPU. 94 (contained ECC error): new work runs without a reset.
    tests = [xid_case(groups, 119, XidClass.RESET), xid_case(groups, 94, XidClass.CONTAINED)]
    critical = rule_for(groups, "GpuCriticalXid", {**GPU, **CLASS_LABELS[XidClass.RESET][1]})
    assert critical.severity.value == "critical"
    assert (
        rule_for(groups, "GpuContainedXid", {**GPU, **CLASS_LABELS[XidClass.CONTAINED][1]}).severity.value == "warning"
    )
    run_tests(groups, tests, tmp_path)


@pytest.mark.parametrize(
    ("xid", "xid_class"),
    [
        (79, XidClass.FATAL),
        (48, XidClass.RESET),
        (95, XidClass.RESET),
        (13, XidClass.APPLICATION),
        (63, None),  # catalog IGNORE: the generic warning only (it paged before issue 29)
        (92, None),
    ],
)
def test_each_class_fires_its_own_alert(groups, tmp_path: Path, xid: int, xid_class: XidClass | None) -> None:
    assert DEFAULT_XID_POLICY.class_of(xid) is xid_class
    run_tests(groups, [xid_case(groups, xid, xid_class)], tmp_path)


def node_check_case(groups: tuple[RuleGroup, ...], reason: str, extra: dict[str, str]) -> dict[str, Any]:
    check = {**NODE, "check": "gpu-xid", "mode": "prolog"}
    labels = {**check, "reason": reason, **extra}
    rule = rule_for(groups, "FmNodeCheckFailed", labels)
    return case(
        reason,
        [
            ("fm_node_check_status", check, "1x5 0x20"),
            ("fm_node_check_failure_info", {**check, "reason": reason}, "_x5 1x20"),
        ],
        "15m",
        {"FmNodeCheckFailed": [expected_alert(rule, labels, None)]},
    )


def test_a_gpu_xid_failure_carries_the_trigger_of_the_class_the_node_names(groups, tmp_path: Path) -> None:
    tests = [
        node_check_case(
            groups,
            "Xid 119 (reset) on PCI:0000:53:00 in the kernel log since boot",
            {"xid_class": "reset", "fmconstructs_trigger": "reset-xid"},
        ),
        node_check_case(
            groups,
            "Xid 79 (fatal) on PCI:0000:53:00 in the kernel log since boot",
            {"xid_class": "fatal", "fmconstructs_trigger": "fatal-xid"},
        ),
        # no Xid behind the failure: the check's own trigger
        node_check_case(
            groups, "dmesg exited 1: dmesg: read kernel buffer failed", {"fmconstructs_trigger": "node-check-failed"}
        ),
    ]
    run_tests(groups, tests, tmp_path)


def test_a_tuned_policy_moves_the_alert(tmp_path: Path) -> None:
    policy = DEFAULT_XID_POLICY.moved([94], to=XidClass.RESET)
    groups = default_rule_groups(AlertThresholds(xid_policy=policy))
    names = [r.name for g in groups for r in g.rules if isinstance(r, AlertRule)]
    assert "GpuContainedXid" not in names  # an empty class has no rule
    run_tests(groups, [xid_case(groups, 94, XidClass.RESET)], tmp_path)


def test_the_deprecated_critical_xids_choose_the_paging_xids(tmp_path: Path) -> None:
    thresholds = AlertThresholds(critical_xids=(79, 13))
    assert thresholds.critical_xids is None
    assert thresholds.xid_policy.node_check_xids == (13, 79)
    groups = default_rule_groups(thresholds)
    run_tests(groups, [xid_case(groups, 13, XidClass.FATAL), xid_case(groups, 119, None)], tmp_path)


@pytest.mark.parametrize("value", [None, (79,), "reset", XidPolicy])
def test_xid_policy_must_be_a_policy(value: object) -> None:
    with pytest.raises(FmTypeError) as error:
        AlertThresholds(xid_policy=value)  # type: ignore[arg-type]
    assert error.value.parameter == "xid_policy"
