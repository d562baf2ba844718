"""HyperPod's cross-property rules (fmconstructs.hyperpod.rules), each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import DeepHealthCheck, HyperPodLustreMount, rules
from fmconstructs.hyperpod.storage_rules import LUSTRE_MOUNT_POINT

PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p"
CHECKS = list(DeepHealthCheck)


@pytest.mark.parametrize(
    ("checks", "accelerated", "ok"), [(CHECKS, True, True), ([], False, True), (CHECKS, False, False)]
)
def test_deep_health_checks_need_an_accelerated_type(checks: list[Any], accelerated: bool, ok: bool) -> None:
    if ok:
        rules.deep_health_checks_need_an_accelerated_type(checks, "ml.m5.2xlarge", accelerated)
    else:
        with pytest.raises(FmValidationError, match=r"^deep_health_checks must be empty for ml\.m5\.2xlarge"):
            rules.deep_health_checks_need_an_accelerated_type(checks, "ml.m5.2xlarge", accelerated)


@pytest.mark.parametrize(("plan_type", "ok"), [(None, True), ("ml.p5.48xlarge", True), ("ml.p5en.48xlarge", False)])
def test_group_type_matches_the_training_plan(plan_type: str | None, ok: bool) -> None:
    if ok:
        rules.group_type_matches_the_training_plan("ml.p5.48xlarge", plan_type, PLAN)
    else:
        with pytest.raises(FmValidationError, match=r"^instance_type must be ml\.p5en\.48xlarge, the instance type"):
            rules.group_type_matches_the_training_plan("ml.p5.48xlarge", plan_type, PLAN)


@pytest.mark.parametrize(("nodes", "count", "ok"), [(4, None, True), (4, 4, True), (2, 4, True), (5, 4, False)])
def test_nodes_fit_the_training_plan(nodes: int, count: int | None, ok: bool) -> None:
    if ok:
        rules.nodes_fit_the_training_plan(nodes, count, PLAN)
    else:
        with pytest.raises(FmValidationError, match=r"^nodes must be at most 4, the instances reserved"):
            rules.nodes_fit_the_training_plan(nodes, count, PLAN)


@pytest.mark.parametrize(("names", "ok"), [(["a", "b"], True), (["a", "b", "a"], False)])
def test_instance_group_names_are_unique(names: list[str], ok: bool) -> None:
    if ok:
        rules.instance_group_names_are_unique(names)
    else:
        with pytest.raises(FmValidationError, match=r"unique group names \(repeated: a\)"):
            rules.instance_group_names_are_unique(names)


@pytest.mark.parametrize(
    ("controller", "login", "match"),
    [
        ("ctl", "login", None),
        ("ctl", None, None),
        ("x", None, r"^orchestrator\.controller_group must be one of the groups"),
        ("ctl", "x", r"^orchestrator\.login_group must be one of the groups"),
        ("ctl", "ctl", r"^orchestrator\.login_group must be a group other than the controller group"),
    ],
)
def test_slurm_groups_are_instance_groups(controller: str, login: str | None, match: str | None) -> None:
    names = ["ctl", "login", "gpu"]
    if match is None:
        rules.slurm_groups_are_instance_groups(controller, login, names)
    else:
        with pytest.raises(FmValidationError, match=match):
            rules.slurm_groups_are_instance_groups(controller, login, names)


@pytest.mark.parametrize(
    ("api", "base_config_dir", "match"),
    [
        (True, None, None),
        (False, "/tmp/base-config", None),  # nosec B108: a name, not a file
        (True, "/tmp/base-config", "None with SlurmConfiguration.API"),  # nosec B108
        (False, None, "a local copy of HyperPod's published lifecycle scripts"),
    ],
)
def test_base_config_dir_fits_the_slurm_configuration(api: bool, base_config_dir: str | None, match: str) -> None:
    if match is None:
        rules.base_config_dir_fits_the_slurm_configuration(api, base_config_dir)
    else:
        with pytest.raises(FmValidationError, match=rf"^base_config_dir must be {match}"):
            rules.base_config_dir_fits_the_slurm_configuration(api, base_config_dir)


@pytest.mark.parametrize(("given", "available", "ok"), [(True, True, True), (False, False, True), (True, False, False)])
def test_job_mapping_spec_needs_api_and_a_workspace(given: bool, available: bool, ok: bool) -> None:
    if ok:
        rules.job_mapping_spec_needs_api_and_a_workspace(given, available)
    else:
        with pytest.raises(FmValidationError, match=r"^job_mapping must be True, False or None without"):
            rules.job_mapping_spec_needs_api_and_a_workspace(given, available)


@pytest.mark.parametrize(
    ("group_vpc", "vpc_id", "ok"),
    [
        ("vpc-1", "vpc-1", True),
        (None, "vpc-1", True),
        ("${Token[TOKEN.1]}", "vpc-1", True),
        ("vpc-2", "vpc-1", False),
    ],
)
def test_efa_security_group_in_the_cluster_vpc(group_vpc: str | None, vpc_id: str, ok: bool) -> None:
    if ok:
        rules.efa_security_group_in_the_cluster_vpc("Stack/Efa", group_vpc, vpc_id)
    else:
        with pytest.raises(FmValidationError, match=r"an EfaSecurityGroup in the cluster's VPC \(vpc-1\)"):
            rules.efa_security_group_in_the_cluster_vpc("Stack/Efa", group_vpc, vpc_id)


@pytest.mark.parametrize(
    ("api", "other", "ok"), [(True, True, True), (False, True, False), (True, False, False), (False, False, False)]
)
def test_lustre_mount_and_exporter_source_need_api_and_their_resource(api: bool, other: bool, ok: bool) -> None:
    rules.lustre_mount_needs_api_and_a_file_system(None, api, other)  # not given: nothing to refuse
    rules.exporter_source_needs_api_and_a_workspace(None, api, other)
    mount = HyperPodLustreMount.NODE_BOOTSTRAP
    if ok:
        rules.lustre_mount_needs_api_and_a_file_system(mount, api, other)
        rules.exporter_source_needs_api_and_a_workspace("internet", api, other)
        return
    with pytest.raises(FmValidationError, match=r"^lustre_mount must be None unless"):
        rules.lustre_mount_needs_api_and_a_file_system(mount, api, other)
    with pytest.raises(FmValidationError, match=r"^exporter_source must be None unless"):
        rules.exporter_source_needs_api_and_a_workspace("internet", api, other)


@pytest.mark.parametrize(("has", "slurm", "ok"), [(True, True, True), (False, False, True), (True, False, False)])
def test_prometheus_workspace_needs_slurm(has: bool, slurm: bool, ok: bool) -> None:
    if ok:
        rules.prometheus_workspace_needs_slurm(has, slurm)
    else:
        with pytest.raises(FmValidationError, match=r"^prometheus_workspace must be None for EKS orchestration"):
            rules.prometheus_workspace_needs_slurm(has, slurm)


@pytest.mark.parametrize(
    ("point", "flags", "match"),
    [
        ("/fsx", {"has_file_system": False, "lifecycle_scripts": True, "eks": False}, None),
        ("/data", {"has_file_system": True, "lifecycle_scripts": False, "eks": False}, None),
        ("/data", {"has_file_system": False, "lifecycle_scripts": False, "eks": False}, "without a file_system"),
        ("/data", {"has_file_system": True, "lifecycle_scripts": True, "eks": False}, "with base_config_dir"),
        ("/data", {"has_file_system": True, "lifecycle_scripts": False, "eks": True}, "with EKS orchestration"),
    ],
)
def test_cluster_mount_point_fits_the_configuration(point: str, flags: dict[str, bool], match: str | None) -> None:
    if match is None:
        rules.cluster_mount_point_fits_the_configuration(point, **flags)
    else:
        with pytest.raises(FmValidationError, match=rf"^mount_point must be '/fsx'.*{match}"):
            rules.cluster_mount_point_fits_the_configuration(point, **flags)


def test_mount_point_constant_is_the_same_object_from_both_modules() -> None:
    assert rules.LUSTRE_MOUNT_POINT is LUSTRE_MOUNT_POINT == "/fsx"


@pytest.mark.parametrize(
    ("min_nodes", "nodes", "ok"), [(0, 4, True), (4, 4, True), (2, "${Token[TOKEN.9]}", True), (5, 4, False)]
)
def test_min_nodes_at_most_nodes(min_nodes: int, nodes: Any, ok: bool) -> None:
    if ok:
        rules.min_nodes_at_most_nodes(min_nodes, nodes)
    else:
        with pytest.raises(FmValidationError, match=r"^min_nodes must be at most nodes \(4\)"):
            rules.min_nodes_at_most_nodes(min_nodes, nodes)


@pytest.mark.parametrize(("has", "eks", "ok"), [(True, True, True), (False, False, True), (True, False, False)])
def test_kubernetes_config_needs_eks(has: bool, eks: bool, ok: bool) -> None:
    if ok:
        rules.kubernetes_config_needs_eks(3, has, eks)
    else:
        with pytest.raises(FmValidationError, match=r"^instance_groups\[3\]\.kubernetes must be None with Slurm"):
            rules.kubernetes_config_needs_eks(3, has, eks)


@pytest.mark.parametrize("ok", [True, False])
def test_autoscaling_needs_eks_continuous_provisioning_and_automatic_recovery(ok: bool) -> None:
    if ok:
        rules.autoscaling_needs_eks(True)
        rules.autoscaling_needs_continuous_provisioning("Continuous", True)
        rules.autoscaling_needs_automatic_node_recovery("Automatic", True)
        return
    with pytest.raises(FmValidationError, match=r"^auto_scaling must be None with Slurm"):
        rules.autoscaling_needs_eks(False)
    with pytest.raises(FmValidationError, match=r"^node_provisioning_mode must be NodeProvisioningMode\.CONTINUOUS"):
        rules.autoscaling_needs_continuous_provisioning(None, False)
    with pytest.raises(FmValidationError, match=r"^node_recovery must be NodeRecovery\.AUTOMATIC.*got 'None'"):
        rules.autoscaling_needs_automatic_node_recovery("None", False)


@pytest.mark.parametrize(("has", "enabled", "ok"), [(True, True, True), (False, False, True), (True, False, False)])
def test_cluster_role_needs_autoscaling(has: bool, enabled: bool, ok: bool) -> None:
    if ok:
        rules.cluster_role_needs_autoscaling(has, enabled)
    else:
        with pytest.raises(FmValidationError, match=r"^cluster_role must be None when autoscaling is disabled"):
            rules.cluster_role_needs_autoscaling(has, enabled)


@pytest.mark.parametrize(("percent", "enabled", "ok"), [(20, True, True), (None, False, True), (20, False, False)])
def test_memory_percent_needs_tiered_checkpointing(percent: int | None, enabled: bool, ok: bool) -> None:
    if ok:
        rules.memory_percent_needs_tiered_checkpointing(percent, enabled)
    else:
        with pytest.raises(FmValidationError, match=r"^instance_memory_percent must be None when tiered checkpointing"):
            rules.memory_percent_needs_tiered_checkpointing(percent, enabled)
