"""Helpers that create a child with a fixed id, called twice: the library's error naming the method, the child id and
what to do (check_first_call), never jsii's "There is already a Construct with name ..."; idempotent helpers return
what the first call made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration

from fmconstructs import FmValidationError, LustreFileSystem
from fmconstructs._validate import check_first_call
from fmconstructs.eks import GpuEksCluster
from fmconstructs.health import NodeHealthOptions
from fmconstructs.storage.export_alarm import add_export_alarms, check_export_alarm_settings
from fmconstructs.storage.target_alarm import add_storage_target_alarm

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster import make_cluster


def _file_system(scene: Scene) -> LustreFileSystem:
    return LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2400, throughput_mbps_per_tib=500)


def _export_alarms(scene: Scene) -> Callable[[], Any]:
    settings = check_export_alarm_settings(
        topic=None, backlog_age_seconds=3600, period=Duration.minutes(5), evaluation_periods=3, failures=False,
        log_group=None,
    )  # fmt: skip
    return lambda: add_export_alarms(
        scene.stack, file_system_id="fs-0123456789abcdef0", settings=settings, log_level=None, paths=("/a",)
    )


def _node_health(cluster: Any) -> Callable[[], Any]:
    return lambda: cluster.enable_node_health(NodeHealthOptions())


def _eks(scene: Scene) -> GpuEksCluster:
    return GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)


#: (method, the child id the second call finds, a factory returning the call to make twice)
TWICE: list[tuple[str, str, Callable[[Scene], Callable[[], Any]]]] = [
    ("add_saturation_alarms", "ThroughputSaturationAlarm", lambda s: _file_system(s).add_saturation_alarms),
    (
        "add_storage_target_alarm",
        "StorageTargetFullAlarm",
        lambda s: lambda: add_storage_target_alarm(s.stack, file_system_id="fs-0123456789abcdef0"),
    ),
    ("add_export_alarms", "ExportBacklogAlarm", _export_alarms),
    ("add_karpenter", "Karpenter", lambda s: _eks(s).add_karpenter),
    ("add_topology_scheduling", "TopologyScheduling", lambda s: _eks(s).add_topology_scheduling),
    ("enable_slurm_topology", "SlurmTopology", lambda s: make_cluster(s).enable_slurm_topology),
    ("enable_node_health", "NodeHealth", lambda s: _node_health(make_cluster(s))),
]


@pytest.mark.parametrize(("method", "child", "factory"), TWICE, ids=[t[0] for t in TWICE])
def test_a_second_call_raises_the_librarys_error_naming_the_method_and_the_id(
    method: str, child: str, factory: Callable[[Scene], Callable[[], Any]]
) -> None:
    # GIVEN a helper called once
    call = factory(new_scene())
    call()
    # WHEN it is called again THEN the library's error names the method, the existing child and what to do
    with pytest.raises(FmValidationError, match=rf"^{method} must be called once: the first call created its child "
                       rf"'{child}\w*' \(.+\), got 'a second call on \S+'"):  # fmt: skip
        call()


def test_the_saturation_alarms_stay_as_the_first_call_made_them() -> None:
    scene = new_scene()
    fs = _file_system(scene)
    first = fs.add_saturation_alarms()
    with pytest.raises(FmValidationError):
        fs.add_saturation_alarms()
    alarms = [c.node.path for c in fs.node.children if isinstance(c, cdk.aws_cloudwatch.Alarm)]
    assert len(alarms) == 3 and {a.node.path for a in first} <= set(alarms)  # throughput, free capacity, target


@pytest.mark.parametrize("method", ["add_compute_domain", "add_lustre_volume"])
def test_a_manifest_id_used_twice_is_refused_by_the_library(method: str) -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, auto_mode=False)
    fs = _file_system(scene)
    calls = {
        "add_compute_domain": lambda: cluster.add_compute_domain("Domain", name="domain"),
        "add_lustre_volume": lambda: cluster.add_lustre_volume("Domain", fs, name="data"),
    }
    cluster.add_compute_domain("Domain", name="first")
    with pytest.raises(FmValidationError, match=r"^id must be an id no other manifest of this cluster has"):
        calls[method]()


@pytest.mark.parametrize(
    "helper",
    ["add_nvidia_device_plugin", "add_efa_device_plugin", "add_dcgm_exporter", "add_fsx_csi_driver",
     "add_node_monitoring_agent", "add_nvidia_dra_driver"],
)  # fmt: skip
def test_add_on_helpers_are_idempotent(helper: str) -> None:
    cluster = _eks(new_scene())
    first = getattr(cluster, helper)()
    assert getattr(cluster, helper)() is first


def test_check_first_call_refuses_a_non_construct_scope() -> None:
    with pytest.raises(FmValidationError, match=r"^scope must be a Construct"):
        check_first_call("not a construct", "Child", method="m", remedy="r")
