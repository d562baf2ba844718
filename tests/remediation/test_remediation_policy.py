"""RemediationPolicy and RemediationTarget: defaults, serialization for the handler, and bad input refused."""

from __future__ import annotations

import json

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.health.xid import XidClass
from fmconstructs.observability.rules import AlertRule, Severity, default_rule_groups
from fmconstructs.remediation import (
    DEFAULT_ALERT_TRIGGERS,
    XID_CLASS_TRIGGERS,
    Action,
    Backend,
    JobKill,
    RemediationPolicy,
    RemediationTarget,
    Trigger,
)


def test_defaults_are_a_dry_run_that_never_kills_jobs():
    policy = RemediationPolicy()
    assert policy.dry_run is True
    assert policy.job_kill is JobKill.NEVER
    assert policy.max_replacements_per_hour == 2
    assert policy.action_for(Trigger.FATAL_XID) is Action.REPLACE
    assert policy.action_for(Trigger.SCHEDULED_EVENT) is Action.DRAIN


def test_a_trigger_without_an_action_only_notifies():
    policy = RemediationPolicy(actions={Trigger.FATAL_XID: Action.DRAIN})
    assert policy.action_for(Trigger.EFA_ERROR) is Action.NOTIFY


def test_default_alert_triggers_name_the_critical_per_node_alerts_that_exist():
    severities: dict[str, set[Severity]] = {}
    for group in default_rule_groups():
        for rule in group.rules:
            if isinstance(rule, AlertRule):
                severities.setdefault(rule.name, set()).add(rule.severity)
    existing = {name: t for name, t in DEFAULT_ALERT_TRIGGERS.items() if not name.startswith("Fm")}
    assert set(existing) <= set(severities)
    policy = RemediationPolicy()
    # every alert that acts on a node is critical; the contained Xid (notify only) is a warning
    acting = {name for name, t in existing.items() if policy.action_for(t) is not Action.NOTIFY}
    assert all(severities[name] == {Severity.CRITICAL} for name in acting)
    assert severities["GpuContainedXid"] == {Severity.WARNING}
    assert policy.action_for(DEFAULT_ALERT_TRIGGERS["GpuContainedXid"]) is Action.NOTIFY
    assert {"GpuCriticalXid", "EfaRdmaWorkRequestErrors", "EfaUnresponsiveRemote"} <= acting
    # the double-bit counter cannot tell a contained error (94) from an uncontained one: it does not remediate
    assert "GpuDoubleBitEccErrors" not in DEFAULT_ALERT_TRIGGERS


def test_each_xid_class_has_its_trigger_and_default_action():
    assert XID_CLASS_TRIGGERS == {
        XidClass.CONTAINED: Trigger.CONTAINED_XID,
        XidClass.RESET: Trigger.RESET_XID,
        XidClass.FATAL: Trigger.FATAL_XID,
    }
    policy = RemediationPolicy()
    assert policy.action_for(Trigger.CONTAINED_XID) is Action.NOTIFY
    assert policy.action_for(Trigger.RESET_XID) is Action.REBOOT
    assert policy.action_for(Trigger.FATAL_XID) is Action.REPLACE
    assert json.loads(policy.to_json())["actions"]["reset-xid"] == "reboot"


def test_policy_json_is_what_the_handler_reads():
    policy = RemediationPolicy(
        actions={Trigger.FATAL_XID: Action.REPLACE},
        max_replacements_per_hour=3,
        dry_run=False,
        job_kill=JobKill.FATAL,
        alert_triggers={"MyXid": Trigger.FATAL_XID},
    )
    data = json.loads(policy.to_json())
    assert data == {
        "actions": {"fatal-xid": "replace"},
        "max_replacements_per_hour": 3,
        "dry_run": False,
        "job_kill": "fatal",
        "fatal_triggers": ["fatal-xid"],
        "alert_triggers": {"MyXid": "fatal-xid"},
    }


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"actions": {"fatal-xid": Action.DRAIN}}, "actions (key)"),
        ({"actions": {Trigger.FATAL_XID: "drain"}}, "actions[FATAL_XID]"),
        ({"actions": [Trigger.FATAL_XID]}, "actions"),
        ({"max_replacements_per_hour": -1}, "max_replacements_per_hour"),
        ({"max_replacements_per_hour": 1.5}, "max_replacements_per_hour"),
        ({"max_replacements_per_hour": 101}, "max_replacements_per_hour"),
        ({"max_replacements_per_hour": True}, "max_replacements_per_hour"),
        ({"dry_run": "no"}, "dry_run"),
        ({"job_kill": "fatal"}, "job_kill"),
        ({"fatal_triggers": "fatal-xid"}, "fatal_triggers"),
        ({"fatal_triggers": {"fatal-xid"}}, "fatal_triggers[]"),
        ({"alert_triggers": {"bad name": Trigger.FATAL_XID}}, "alert_triggers (key)"),
        ({"alert_triggers": {"GpuCriticalXid": "fatal-xid"}}, "alert_triggers[GpuCriticalXid]"),
    ],
)
def test_bad_policy_is_refused_naming_the_parameter(kwargs, parameter):
    with pytest.raises(FmValidationError) as info:
        RemediationPolicy(**kwargs)
    assert info.value.parameter == parameter


def test_zero_replacements_is_allowed():
    assert RemediationPolicy(max_replacements_per_hour=0).max_replacements_per_hour == 0


def test_targets_carry_the_backend_specifics():
    pcs = RemediationTarget.pcs(cluster_id="pcs_abc", login_node_group_id="pcs_l", compute_node_group_ids=["pcs_g"])
    assert pcs.backend is Backend.PCS
    assert json.loads(pcs.to_json()) == {
        "backend": "pcs",
        "cluster": "pcs_abc",
        "login_node_group_id": "pcs_l",
        "compute_node_group_ids": ["pcs_g"],
    }
    assert json.loads(RemediationTarget.parallelcluster(cluster_name="train").to_json())["backend"] == "parallelcluster"
    assert RemediationTarget.auto_scaling_group(group_name="gpu").cluster == "gpu"


@pytest.mark.parametrize(
    ("factory", "kwargs", "parameter"),
    [
        (
            "pcs",
            {"cluster_id": "", "login_node_group_id": "pcs_l1", "compute_node_group_ids": ["pcs_g1"]},
            "cluster_id",
        ),
        # botocore pcs ClusterIdentifier: an id or a name of 3-41 characters
        (
            "pcs",
            {"cluster_id": "c", "login_node_group_id": "pcs_l1", "compute_node_group_ids": ["pcs_g1"]},
            "cluster_id",
        ),
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "a b", "compute_node_group_ids": ["pcs_g1"]},
            "login_node_group_id",
        ),
        # a node group name is not its id (the handler matches the tag aws:pcs:compute-node-group-id)
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "login", "compute_node_group_ids": ["pcs_g1"]},
            "login_node_group_id",
        ),
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "pcs_l1", "compute_node_group_ids": ["gpu"]},
            "compute_node_group_ids[0]",
        ),
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "pcs_l1", "compute_node_group_ids": []},
            "compute_node_group_ids",
        ),
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "pcs_l1", "compute_node_group_ids": "pcs_g1"},
            "compute_node_group_ids",
        ),
        (
            "pcs",
            {"cluster_id": "pcs_c1", "login_node_group_id": "pcs_l1", "compute_node_group_ids": ["pcs_l1"]},
            "compute_node_group_ids",
        ),
        ("parallelcluster", {"cluster_name": "1train"}, "cluster_name"),
        ("parallelcluster", {"cluster_name": "a_b"}, "cluster_name"),
        ("auto_scaling_group", {"group_name": ""}, "group_name"),
        ("auto_scaling_group", {"group_name": 3}, "group_name"),
        ("eks", {"cluster": "my-cluster"}, "cluster"),
    ],
)
def test_bad_target_is_refused_naming_the_parameter(factory, kwargs, parameter):
    with pytest.raises(FmValidationError) as info:
        getattr(RemediationTarget, factory)(**kwargs)
    assert info.value.parameter == parameter


HYPERPOD_ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"


def test_a_hyperpod_target_names_the_cluster_and_keeps_its_arn_for_iam():
    target = RemediationTarget.hyperpod(cluster_name="train", cluster_arn=HYPERPOD_ARN)
    assert target.backend is Backend.HYPERPOD and target.cluster_arn == HYPERPOD_ARN
    assert json.loads(target.to_json())["cluster"] == "train"
    # the API takes the cluster's ARN as its name too
    assert RemediationTarget.hyperpod(cluster_name=HYPERPOD_ARN, cluster_arn=HYPERPOD_ARN).cluster == HYPERPOD_ARN


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"cluster_name": "", "cluster_arn": HYPERPOD_ARN}, "cluster_name"),
        ({"cluster_name": "-train", "cluster_arn": HYPERPOD_ARN}, "cluster_name"),
        ({"cluster_name": "train-", "cluster_arn": HYPERPOD_ARN}, "cluster_name"),
        ({"cluster_name": "a_b", "cluster_arn": HYPERPOD_ARN}, "cluster_name"),
        ({"cluster_name": "x" * 64, "cluster_arn": HYPERPOD_ARN}, "cluster_name"),
        ({"cluster_name": "train", "cluster_arn": "train"}, "cluster_arn"),
        ({"cluster_name": "train", "cluster_arn": HYPERPOD_ARN.replace("abcdef012345", "ABCDEF012345")}, "cluster_arn"),
        (
            {"cluster_name": "train", "cluster_arn": "arn:aws:sagemaker:us-east-1:1234:cluster/abcdef012345"},
            "cluster_arn",
        ),
    ],
)
def test_bad_hyperpod_target_is_refused_naming_the_parameter(kwargs, parameter):
    with pytest.raises(FmValidationError) as info:
        RemediationTarget.hyperpod(**kwargs)
    assert info.value.parameter == parameter


def test_cluster_arn_belongs_to_hyperpod_only_and_hyperpod_needs_it():
    with pytest.raises(FmValidationError) as info:
        RemediationTarget(Backend.PARALLELCLUSTER, "train", cluster_arn=HYPERPOD_ARN)
    assert info.value.parameter == "cluster_arn"
    with pytest.raises(FmValidationError) as info:
        RemediationTarget(Backend.HYPERPOD, "train")
    assert info.value.parameter == "cluster_arn"
