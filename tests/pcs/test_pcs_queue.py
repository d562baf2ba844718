"""PcsQueue: mapping node groups to Slurm partitions, factories, validation."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import FmValidationError, WarningId
from fmconstructs.pcs import ClusterSetting, PcsAmi, PcsCluster, PcsGpuNodeGroup, QueueSetting, SlurmVersion

from tests.conftest import new_scene

QUEUE = "AWS::PCS::Queue"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _cluster(stack_id: str = "Test", **props: object) -> PcsCluster:
    scene = new_scene(stack_id)
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)  # type: ignore[arg-type]


def _group(cluster: PcsCluster, id: str, instance_type: str = "p5.48xlarge") -> PcsGpuNodeGroup:
    return cluster.add_gpu_node_group(id, instance_type=instance_type, ami=AMI, max_nodes=2)


@pytest.fixture(scope="module")
def mapped() -> Template:
    cluster = _cluster()
    p5, p5en = _group(cluster, "P5"), _group(cluster, "P5en", "p5en.48xlarge")
    cluster.add_queue("Both", node_groups=[p5, p5en], queue_name="gpu", slurm_settings={QueueSetting.DEFAULT: "YES"})
    p5.add_queue("P5Only", queue_name="p5-only")
    return Template.from_stack(cdk.Stack.of(cluster))


def _node_group_ref(prefix: str) -> dict[str, object]:
    return {"ComputeNodeGroupId": {"Fn::GetAtt": [Match.string_like_regexp(f"^Cluster{prefix}[0-9A-F]{{8}}$"), "Id"]}}


def test_cluster_queue_maps_every_node_group(mapped):
    mapped.has_resource_properties(
        QUEUE,
        {
            "ClusterId": {"Fn::GetAtt": [Match.string_like_regexp("^Cluster"), "Id"]},
            "Name": "gpu",
            "ComputeNodeGroupConfigurations": [_node_group_ref("P5"), _node_group_ref("P5en")],
            "SlurmConfiguration": {"SlurmCustomSettings": [{"ParameterName": "Default", "ParameterValue": "YES"}]},
        },
    )


def test_node_group_factory_maps_that_group_alone(mapped):
    mapped.has_resource_properties(
        QUEUE, {"Name": "p5-only", "ComputeNodeGroupConfigurations": [_node_group_ref("P5")]}
    )
    mapped.resource_count_is(QUEUE, 2)


def test_queue_without_settings_has_no_slurm_configuration():
    cluster = _cluster()
    queue = _group(cluster, "P5").add_queue("Q")
    props = Template.from_stack(cdk.Stack.of(cluster)).find_resources(QUEUE)[
        cdk.Stack.of(cluster).get_logical_id(queue.resource)
    ]["Properties"]
    assert "SlurmConfiguration" not in props and "Name" not in props


def test_rejects_an_empty_queue():
    cluster = _cluster()
    with pytest.raises(FmValidationError, match=r"node_groups must be at least one compute node group, got \[\]"):
        cluster.add_queue("Q", node_groups=[])


def test_rejects_login_node_groups():
    cluster = _cluster()
    login = cluster.add_login_node_group("Login", ami=AMI)
    with pytest.raises(FmValidationError, match=r"node_groups\[0\] must be a compute node group \(login node groups"):
        cluster.add_queue("Q", node_groups=[login])  # type: ignore[list-item]


def test_rejects_node_groups_of_another_cluster():
    cluster = _cluster()
    other = PcsCluster(cdk.Stack.of(cluster), "Other", vpc=cluster.vpc)
    with pytest.raises(FmValidationError, match=r"node_groups must be node groups of cluster Test/Cluster"):
        cluster.add_queue("Q", node_groups=[_group(other, "P5")])


def test_rejects_a_node_group_twice():
    cluster = _cluster()
    group = _group(cluster, "P5")
    with pytest.raises(FmValidationError, match=r"node_groups must be each node group once"):
        cluster.add_queue("Q", node_groups=[group, group])


def test_rejects_duplicate_queue_names():
    cluster = _cluster()
    group = _group(cluster, "P5")
    group.add_queue("A", queue_name="gpu")
    with pytest.raises(FmValidationError, match=r"queue_name must be unique within the cluster .*got 'gpu'"):
        group.add_queue("B", queue_name="gpu")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"queue_name": "gpu_queue"}, r"queue_name must be 3-25 characters: a letter, then letters, digits or '-'"),
        ({"slurm_settings": {QueueSetting.DEFAULT: "maybe"}}, r"slurm_settings\[Default\] must be YES or NO"),
        ({"slurm_settings": {QueueSetting.EXCLUSIVE_USER: "1"}}, r"slurm_settings\[ExclusiveUser\] must be YES or NO"),
        ({"slurm_settings": {ClusterSetting.PROLOG: "/p"}}, r"slurm_settings name must be a QueueSetting"),
        ({"slurm_settings": {QueueSetting.ALLOW_ACCOUNTS: 3}}, r"slurm_settings\[AllowAccounts\] must be a str"),
    ],
)
def test_rejects_invalid_queue_props(kwargs, message):
    cluster = _cluster()
    with pytest.raises(FmValidationError, match=message):
        _group(cluster, "P5").add_queue("Q", **kwargs)


@pytest.mark.parametrize(("version", "warned"), [(SlurmVersion.V26_05, True), (SlurmVersion.V25_11, False)])
def test_exclusive_user_is_deprecated_from_slurm_26_05(version, warned):
    # PCS User Guide slurm-custom-settings-queue: Slurm deprecates ExclusiveUser from 26.05 in favour of Exclusive.
    cluster = _cluster(slurm_version=version)
    _group(cluster, "P5").add_queue("Q", slurm_settings={QueueSetting.EXCLUSIVE_USER: "YES"})
    found = Annotations.from_stack(cdk.Stack.of(cluster)).find_warning(
        "*", Match.string_like_regexp("ExclusiveUser is deprecated from Slurm 26.05")
    )
    assert bool(found) is warned
    if warned:
        assert WarningId.PCS_DEPRECATED_SLURM_SETTING.qualified in str(found)
