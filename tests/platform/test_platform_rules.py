"""The cross-property rules of the training platform (fmconstructs.platform.rules), each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import FmValidationError
from fmconstructs.capacity import CapacityBlockScaling, CapacityKind
from fmconstructs.errors import WarningId
from fmconstructs.platform import EksGpuCapacity, rules
from fmconstructs.platform import _hyperpod_rules as legacy

KARPENTER = EksGpuCapacity.KARPENTER


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


def test_the_hyperpod_rules_keep_their_import_path():
    assert legacy.HYPERPOD_EKS_VOLUME == rules.HYPERPOD_EKS_VOLUME == "fsx"
    assert callable(legacy.check_hyperpod_storage) and callable(legacy.hyperpod_chart)


# --- HyperPod storage and chart -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mount_point", "base"), [("/fsx", "s3://b/base"), ("/data", None), ("/fsx", None)])
def test_base_config_dir_at_fsx_or_no_base_config_dir_passes(mount_point, base):
    rules.base_config_dir_mounts_at_fsx(mount_point=mount_point, base_config_dir=base)


@pytest.mark.parametrize("mount_point", ["/data", "/fsx/sub"])
def test_base_config_dir_elsewhere_than_fsx_is_refused(mount_point):
    _refused(
        lambda: rules.base_config_dir_mounts_at_fsx(mount_point=mount_point, base_config_dir="base"),
        "storage.mount_point",
        "the published lifecycle_script.py mounts the file system at /fsx",
    )


@pytest.mark.parametrize(("mount_point", "on_eks"), [("/fsx", True), ("/data", False)])
def test_hyperpod_eks_at_fsx_or_slurm_elsewhere_passes(mount_point, on_eks):
    rules.hyperpod_eks_mounts_through_the_claim(mount_point=mount_point, on_eks=on_eks)


def test_hyperpod_eks_elsewhere_than_fsx_is_refused():
    _refused(
        lambda: rules.hyperpod_eks_mounts_through_the_claim(mount_point="/data", on_eks=True),
        "storage.mount_point",
        "pods mount the PersistentVolumeClaim default/fsx",
    )


@pytest.mark.parametrize(("efa", "base"), [(False, "base"), (None, None), (True, None)])
def test_base_config_dir_over_tcp_passes(efa, base):
    rules.base_config_dir_mounts_over_tcp(efa_enabled=efa, base_config_dir=base)


@pytest.mark.parametrize("efa", [None, True])
def test_base_config_dir_without_efa_off_is_refused(efa):
    _refused(
        lambda: rules.base_config_dir_mounts_over_tcp(efa_enabled=efa, base_config_dir="base"),
        "storage.efa_enabled",
        "configures no LNet over EFA",
    )


def test_hyperpod_eks_without_a_chart_is_refused_and_with_one_passes():
    rules.hyperpod_eks_needs_a_dependencies_chart(object())
    _refused(
        lambda: rules.hyperpod_eks_needs_a_dependencies_chart(None),
        "orchestrator.dependencies_chart",
        "requires its dependencies chart",
    )


# --- elastic pool ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind", [CapacityKind.ON_DEMAND, CapacityKind.CAPACITY_BLOCK, CapacityKind.CAPACITY_RESERVATION]
)
def test_an_elastic_pool_outside_an_ultraserver_block_passes(kind):
    rules.elastic_pool_is_not_for_an_ultraserver_block(gpu_capacity=KARPENTER, capacity_kind=kind)


@pytest.mark.parametrize("pool", [EksGpuCapacity.KARPENTER, EksGpuCapacity.AUTO_MODE])
def test_an_elastic_pool_on_an_ultraserver_block_is_refused(pool):
    _refused(
        lambda: rules.elastic_pool_is_not_for_an_ultraserver_block(
            gpu_capacity=pool, capacity_kind=CapacityKind.ULTRASERVER_CAPACITY_BLOCK
        ),
        "orchestrator.gpu_capacity",
        "IMEX needs the NVIDIA DRA driver",
    )


def test_an_elastic_pool_scales_at_deploy_only():
    rules.elastic_pool_scales_at_deploy(gpu_capacity=KARPENTER, capacity_block_scaling=CapacityBlockScaling.AT_DEPLOY)
    _refused(
        lambda: rules.elastic_pool_scales_at_deploy(
            gpu_capacity=KARPENTER, capacity_block_scaling=CapacityBlockScaling.ON_BLOCK_EVENTS
        ),
        "orchestrator.capacity_block_scaling",
        r"CapacityBlockScaling.AT_DEPLOY with EksGpuCapacity.KARPENTER",
    )


@pytest.mark.parametrize(
    ("kind", "reservation_id"),
    [
        (CapacityKind.ON_DEMAND, None),
        (CapacityKind.CAPACITY_BLOCK, "cr-0abc"),
        (CapacityKind.CAPACITY_RESERVATION, "cr-1"),
    ],
)
def test_an_elastic_pool_on_demand_or_by_reservation_id_passes(kind, reservation_id):
    rules.elastic_pool_reserves_by_id(capacity_kind=kind, reservation_id=reservation_id)


@pytest.mark.parametrize("kind", [CapacityKind.CAPACITY_BLOCK, CapacityKind.CAPACITY_RESERVATION])
def test_an_elastic_pool_on_a_reservation_without_id_is_refused(kind):
    _refused(
        lambda: rules.elastic_pool_reserves_by_id(capacity_kind=kind, reservation_id=None),
        "capacity",
        "select by id or tags, not by resource group",
    )


def test_an_elastic_pool_without_checks_or_storage_gives_no_advice():
    assert rules.elastic_pool_limits(gpu_capacity=KARPENTER, node_checks_on=False, has_file_system=False) is None


@pytest.mark.parametrize(
    ("checks", "storage", "expected"),
    [(True, False, ["the node checks"]), (False, True, ["the host Lustre mount"]), (True, True, ["checks", "Lustre"])],
)
def test_an_elastic_pool_with_checks_or_storage_warns(checks, storage, expected):
    advice = rules.elastic_pool_limits(gpu_capacity=KARPENTER, node_checks_on=checks, has_file_system=storage)
    assert advice is not None and advice.warning is WarningId.EKS_ELASTIC_POOL_LIMITS
    assert advice.message.startswith("EksGpuCapacity.KARPENTER: the elastic pool's nodes do not get ")
    assert all(part in advice.message for part in expected)


# --- services subnet ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("backend", "zone"), [("pcs", "us-east-1a"), ("pcs", None), ("eks", "us-west-2-lax-1a"), ("parallelcluster", None)]
)
def test_no_services_subnet_passes_outside_pcs_in_a_local_zone(backend, zone):
    rules.pcs_in_a_local_zone_needs_a_services_subnet(backend=backend, node_zone=zone)


def test_pcs_in_a_local_zone_without_a_services_subnet_is_refused():
    _refused(
        lambda: rules.pcs_in_a_local_zone_needs_a_services_subnet(backend="pcs", node_zone="us-west-2-lax-1a"),
        "services_subnet",
        r"given with PCS when subnet is in a Local Zone or Wavelength Zone \(us-west-2-lax-1a\)",
    )


@pytest.mark.parametrize("zone", ["us-west-2a", None])
def test_a_services_subnet_in_the_parent_region_passes(zone):
    rules.services_subnet_is_in_the_parent_region(services="subnet-1", zone=zone)


@pytest.mark.parametrize("zone", ["us-west-2-lax-1a", "us-east-1-wl1-bos-wlz-1"])
def test_a_services_subnet_in_a_local_or_wavelength_zone_is_refused(zone):
    _refused(
        lambda: rules.services_subnet_is_in_the_parent_region(services="subnet-1", zone=zone),
        "services_subnet",
        "a subnet in a zone of the parent Region",
    )


@pytest.mark.parametrize(
    ("zone", "node_zone", "storage", "efa"),
    [
        ("us-east-1a", "us-east-1a", True, True),
        ("us-east-1b", "us-east-1a", True, False),  # over TCP across zones
        ("us-east-1b", "us-east-1a", False, True),  # no file system
        (None, "us-east-1a", True, True),  # zone unknown
    ],
)
def test_services_subnet_and_efa_storage_zones_that_pass(zone, node_zone, storage, efa):
    rules.efa_storage_keeps_services_in_the_node_zone(
        services="subnet-1", zone=zone, node_zone=node_zone, storage=storage, efa_storage=efa
    )


def test_an_efa_file_system_in_another_zone_is_refused():
    _refused(
        lambda: rules.efa_storage_keeps_services_in_the_node_zone(
            services="subnet-1", zone="us-east-1b", node_zone="us-east-1a", storage=True, efa_storage=True
        ),
        "services_subnet",
        "a subnet in us-east-1a, the GPU nodes' zone, while the file system is EFA-enabled",
    )


@pytest.mark.parametrize(
    ("zone", "node_zone", "parts"),
    [("us-east-1a", "us-east-1a", ["the login nodes"]), ("us-east-1b", "us-east-1a", []), (None, "us-east-1a", ["x"])],
)
def test_services_in_the_node_zone_or_nothing_there_give_no_advice(zone, node_zone, parts):
    assert rules.services_across_zones(services="subnet-1", zone=zone, node_zone=node_zone, parts=parts) is None


def test_services_across_zones_warn():
    advice = rules.services_across_zones(
        services="subnet-1", zone="us-east-1b", node_zone="us-east-1a", parts=["the login nodes", "the file system"]
    )
    assert advice is not None and advice.warning is WarningId.SERVICES_SUBNET_OTHER_ZONE
    assert advice.message.startswith(
        "services_subnet subnet-1 is in us-east-1b, the GPU nodes in us-east-1a: the login nodes, the file system "
    )


# --- add_model_server -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["pcs", "parallelcluster", "hyperpod"])
def test_model_servers_off_eks_are_refused(backend):
    rules.model_servers_need_eks(backend="eks")
    _refused(lambda: rules.model_servers_need_eks(backend=backend), "backend", "eks for add_model_server")


@pytest.mark.parametrize(("weights", "fsx_path"), [(object(), None), (None, "models/llama")])
def test_one_weights_source_passes(weights, fsx_path):
    rules.exactly_one_weights_source(weights=weights, fsx_path=fsx_path)


@pytest.mark.parametrize(("weights", "fsx_path"), [(None, None), (object(), "models/llama")])
def test_none_or_both_weights_sources_are_refused(weights, fsx_path):
    _refused(lambda: rules.exactly_one_weights_source(weights=weights, fsx_path=fsx_path), "weights", "exactly one of")


def test_fsx_path_needs_the_platform_storage():
    rules.fsx_path_needs_storage(fsx_path="models", has_file_system=True)
    rules.fsx_path_needs_storage(fsx_path=None, has_file_system=False)
    _refused(
        lambda: rules.fsx_path_needs_storage(fsx_path="models", has_file_system=False),
        "fsx_path",
        "None on a platform without storage",
    )


# --- platform health ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("image", "nccl"), [(None, False), (None, None), ("repo/nccl@sha256:ab", True)])
def test_nccl_image_with_nccl_on_passes(image, nccl):
    rules.nccl_image_needs_nccl(nccl_image=image, nccl=nccl)


@pytest.mark.parametrize("nccl", [False, None])
def test_nccl_image_with_nccl_off_is_refused(nccl):
    _refused(lambda: rules.nccl_image_needs_nccl(nccl_image="img", nccl=nccl), "nccl_image", "None when nccl is off")


def test_replace_nodes_needs_remediation():
    rules.replace_nodes_needs_remediation(replace_nodes=True, has_remediation=True)
    rules.replace_nodes_needs_remediation(replace_nodes=False, has_remediation=False)
    _refused(
        lambda: rules.replace_nodes_needs_remediation(replace_nodes=True, has_remediation=False),
        "replace_nodes",
        "nothing to replace with",
    )


@pytest.mark.parametrize(("dry_run", "replace"), [(True, False), (None, False), (False, True)])
def test_remediation_that_acts_with_replace_nodes_passes(dry_run, replace):
    rules.remediation_acts_only_with_replace_nodes(dry_run=dry_run, replace_nodes=replace)


def test_remediation_that_acts_without_replace_nodes_is_refused():
    _refused(
        lambda: rules.remediation_acts_only_with_replace_nodes(dry_run=False, replace_nodes=False),
        "remediation.dry_run",
        "the explicit opt-in",
    )


NCCL = {"gpus_per_node": 8, "nodes": 2, "state_dir": "/fsx/nccl", "instance_gpus": 8, "mount_point": "/fsx"}


@pytest.mark.parametrize("platform_nodes", [2, 4, float("-1.8881545897087626e+289")])  # the last: a number token
def test_an_nccl_spec_that_fits_passes(platform_nodes):
    rules.nccl_spec_fits_the_platform(**NCCL, platform_nodes=platform_nodes)


@pytest.mark.parametrize(
    ("change", "parameter", "message"),
    [
        ({"gpus_per_node": 16}, "health.nccl.gpus_per_node", "at most 8, the instance type's GPUs"),
        ({"nodes": 3}, "health.nccl.nodes", "at most the platform's 2 nodes"),
        ({"state_dir": "/data/nccl"}, "health.nccl.state_dir", "under the file system's mount point /fsx"),
        ({"state_dir": "/fsxother"}, "health.nccl.state_dir", "under the file system's mount point /fsx"),
    ],
)
def test_an_nccl_spec_that_does_not_fit_is_refused(change, parameter, message):
    _refused(lambda: rules.nccl_spec_fits_the_platform(**{**NCCL, **change}, platform_nodes=2), parameter, message)


# --- options --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("logs", "data"), [(None, True), ("Stack/Logs", False), (None, False)])
def test_access_logs_on_the_platform_bucket_pass(logs, data):
    rules.access_logs_only_for_the_platform_bucket(access_logs_bucket=logs, data_bucket_given=data)


def test_access_logs_with_your_data_bucket_are_refused():
    _refused(
        lambda: rules.access_logs_only_for_the_platform_bucket(access_logs_bucket="Stack/Logs", data_bucket_given=True),
        "access_logs_bucket",
        "None when data_bucket is given",
    )


@pytest.mark.parametrize(("grafana", "prometheus"), [(True, True), (False, False), (False, True)])
def test_an_existing_grafana_with_its_prometheus_passes(grafana, prometheus):
    rules.existing_grafana_needs_its_prometheus(grafana_given=grafana, prometheus_given=prometheus)


def test_an_existing_grafana_without_its_prometheus_is_refused():
    _refused(
        lambda: rules.existing_grafana_needs_its_prometheus(grafana_given=True, prometheus_given=False),
        "prometheus_workspace",
        "the Prometheus workspace the existing Grafana workspace reads",
    )


@pytest.mark.parametrize(("access", "create", "prometheus"), [("a", True, False), (None, False, True)])
def test_grafana_network_access_for_a_new_grafana_passes(access, create, prometheus):
    rules.grafana_network_access_needs_a_new_grafana(
        grafana_network_access=access, create_grafana=create, prometheus_given=prometheus
    )


@pytest.mark.parametrize(("create", "prometheus"), [(False, False), (True, True), (False, True)])
def test_grafana_network_access_without_a_new_grafana_is_refused(create, prometheus):
    _refused(
        lambda: rules.grafana_network_access_needs_a_new_grafana(
            grafana_network_access="a", create_grafana=create, prometheus_given=prometheus
        ),
        "grafana_network_access",
        "None unless the platform creates the Grafana workspace",
    )


@pytest.mark.parametrize(
    ("prometheus", "create", "alias"), [(False, True, "fm"), (True, False, None), (False, False, None)]
)
def test_new_workspace_options_for_new_workspaces_pass(prometheus, create, alias):
    rules.new_workspace_options_need_a_new_workspace(prometheus_given=prometheus, create_grafana=create, alias=alias)


@pytest.mark.parametrize(
    ("create", "alias", "parameter", "message"),
    [
        (True, None, "create_grafana", "False with an existing prometheus_workspace"),
        (True, "fm", "create_grafana", "False with an existing prometheus_workspace"),
        (False, "fm", "alias", "alias names a new workspace"),
    ],
)
def test_new_workspace_options_beside_an_existing_workspace_are_refused(create, alias, parameter, message):
    _refused(
        lambda: rules.new_workspace_options_need_a_new_workspace(
            prometheus_given=True, create_grafana=create, alias=alias
        ),
        parameter,
        message,
    )


@pytest.mark.parametrize(("base", "on_eks"), [("s3://b/base", False), (None, True), (None, False)])
def test_base_config_dir_with_slurm_passes(base, on_eks):
    rules.base_config_dir_is_for_slurm(base_config_dir=base, on_eks=on_eks)


def test_base_config_dir_on_eks_is_refused():
    _refused(
        lambda: rules.base_config_dir_is_for_slurm(base_config_dir="base", on_eks=True),
        "base_config_dir",
        r"None with EKS orchestration \(Slurm only\)",
    )


@pytest.mark.parametrize(("chart", "on_eks"), [(True, True), (False, False), (False, True)])
def test_a_dependencies_chart_on_eks_passes(chart, on_eks):
    rules.dependencies_chart_is_for_eks(chart_given=chart, on_eks=on_eks)


def test_a_dependencies_chart_with_slurm_is_refused():
    _refused(
        lambda: rules.dependencies_chart_is_for_eks(chart_given=True, on_eks=False),
        "dependencies_chart",
        r"None with Slurm orchestration \(EKS only\)",
    )
