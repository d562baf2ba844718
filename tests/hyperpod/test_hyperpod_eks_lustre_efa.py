"""HyperPodCluster on EKS with an EFA-enabled LustreFileSystem: the GPU groups configure LNet over EFA in their OnCreate
lifecycle (storage.lustre_lnet_commands; no mount: the FSx CSI driver mounts in pods), each group has a lifecycle
prefix of its own, registers against the file system's 1,024 EFA connections and opens EFA to the file system's group.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match

from fmconstructs.catalog import get_instance_spec
from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import (
    ON_CREATE,
    ON_CREATE_SCRIPT,
    SETUP_SCRIPT,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
)
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.storage import (
    LNET_EFA_UNIT,
    LUSTRE_MOUNT_SCRIPT_PATH,
    LustreFileSystem,
    LustreMetadataConfiguration,
    lustre_lnet_commands,
)

from tests.conftest import Scene, new_scene


def _groups(gpu_nodes: Any = 4, **gpu: Any) -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=gpu_nodes, **gpu),
        HyperPodInstanceGroup(name="system", instance_type="m5.2xlarge", nodes=1),
    ]


def _efa_fs(scene: Scene, group: EfaSecurityGroup | None, id: str = "Fs") -> LustreFileSystem:
    assert group is not None
    return LustreFileSystem(scene.stack, id, vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=4800,
                            throughput_mbps_per_tib=1000, metadata_configuration=LustreMetadataConfiguration.automatic(),
                            efa_enabled=True, efa_security_group=group)  # fmt: skip


def _build(
    *, share_group: bool = True, fs_kind: str = "efa", groups: list[HyperPodInstanceGroup] | None = None, **kwargs: Any
) -> tuple[Scene, Any, LustreFileSystem, HyperPodCluster]:
    from fmconstructs.eks import GpuEksCluster

    scene = new_scene()
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    if fs_kind == "efa":
        own = EfaSecurityGroup(scene.stack, "FsEfa", vpc=scene.vpc) if not share_group else None
        fs = _efa_fs(scene, eks_cluster.efa_security_group if share_group else own)
    else:
        fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    eks_cluster.add_lustre_volume("Volume", fs, name="fsx")
    extra = {"efa_security_group": eks_cluster.efa_security_group} if share_group else {}
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a],
                              instance_groups=groups or _groups(), orchestrator=HyperPodOrchestrator.eks(eks_cluster),
                              file_system=fs, **extra, **kwargs)  # fmt: skip
    return scene, eks_cluster, fs, cluster


@pytest.fixture(scope="module")
def shared():
    """GIVEN HyperPod on EKS sharing the GpuEksCluster's EFA group with an EFA-enabled file system (4 x p5 + 1 m5)."""
    scene, eks_cluster, fs, cluster = _build(setup_commands=["echo fmconstructs-after-lnet"])
    return scene, eks_cluster, fs, cluster, scene.template()


def _instance_groups(template: Any) -> dict[str, dict[str, Any]]:
    (resource,) = template.find_resources("AWS::SageMaker::Cluster").values()
    return {g["InstanceGroupName"]: g for g in resource["Properties"]["InstanceGroups"]}


def _prefix_of(lifecycle: dict[str, Any]) -> str:
    parts = lifecycle["SourceS3Uri"]["Fn::Join"][1]
    return str(parts[-1])


# --- lifecycle -----------------------------------------------------------------------------------------------------
def test_gpu_group_configures_lnet_over_efa_and_mounts_nothing(shared):
    _, _, _, cluster, _ = shared
    text = cluster.node_bootstraps["gpu"].render()
    # THEN the GPU group's set-up is lustre_lnet_commands for p5 (8 EFA interfaces, --lnet-only), then the commands
    expected = lustre_lnet_commands(instance_spec=get_instance_spec("p5.48xlarge"))
    assert all(line in text for line in expected)
    assert "--lnet-only 8 p5" in text and LUSTRE_MOUNT_SCRIPT_PATH in text
    assert text.index("--lnet-only") < text.index("echo fmconstructs-after-lnet")
    # and nothing mounts the file system on the host (the CSI driver mounts in pods)
    assert "/fsx" not in text and "mount -t lustre" not in text
    assert cluster.lustre_efa_interfaces == {"gpu": 8}


def test_cpu_group_gets_no_lnet_step(shared):
    _, _, _, cluster, _ = shared
    text = cluster.node_bootstraps["system"].render()
    assert "--lnet-only" not in text and LUSTRE_MOUNT_SCRIPT_PATH not in text
    assert "echo fmconstructs-after-lnet" in text


def test_each_group_has_its_own_on_create_prefix(shared):
    _, _, _, cluster, template = shared
    groups = _instance_groups(template)
    # THEN OnCreate (EKS lifecycle), under lifecycle/<group>/
    for name in ("gpu", "system"):
        lifecycle = groups[name]["LifeCycleConfig"]
        assert lifecycle["OnCreate"] == ON_CREATE and "OnInitComplete" not in lifecycle
        assert _prefix_of(lifecycle) == f"/lifecycle/{name}/"
    assert cluster.per_group_lifecycle
    # and the cluster is still EKS-orchestrated, with no FsxLustreConfig (HyperPod does not mount it)
    assert "InstanceStorageConfigs" not in groups["gpu"]
    (resource,) = template.find_resources("AWS::SageMaker::Cluster").values()
    assert "Eks" in resource["Properties"]["Orchestrator"]


def test_lifecycle_upload_holds_each_groups_files(shared):
    _, _, _, _, template = shared
    (deployment,) = template.find_resources("Custom::CDKBucketDeployment").values()
    # THEN one source per file: gpu/{OnCreate, setup}, system/{OnCreate, setup}, under the lifecycle/ prefix
    assert len(deployment["Properties"]["SourceObjectKeys"]) == 4
    assert deployment["Properties"]["DestinationBucketKeyPrefix"] == "lifecycle/"


def test_generated_shell_passes_shellcheck(shared, tmp_path: Path):
    _, _, _, cluster, _ = shared
    files = {ON_CREATE: ON_CREATE_SCRIPT}
    for name, bootstrap in cluster.node_bootstraps.items():
        files[f"{name}-{SETUP_SCRIPT}"] = re.sub(r"\$\{Token\[[^\]]+\]\}", "fs-0123456789abcdef0", bootstrap.render())
    files["lustre-mount-script.sh"] = _embedded_mount_script()
    for name, text in files.items():
        script = tmp_path / name
        script.write_text(text if text.endswith("\n") else text + "\n")
        result = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}: {result.stdout}"


def _embedded_mount_script() -> str:
    from fmconstructs.storage.client import lustre_mount_script

    return lustre_mount_script()


def test_the_lnet_unit_is_the_storage_modules():
    # The step installs the storage script whose --lnet-only mode installs this boot unit.
    assert LNET_EFA_UNIT in _embedded_mount_script()


# --- EFA budget and security groups -------------------------------------------------------------------------------
def test_gpu_group_registered_against_the_efa_budget(shared):
    _, _, fs, _, _ = shared
    # THEN 4 p5 nodes x 8 interfaces = 32 connections, under the GPU group's bootstrap
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [("Test/H/Bootstrap-gpu", 32)]


def test_shared_group_needs_no_efa_rules_and_is_first_in_vpc_config(shared):
    scene, eks_cluster, fs, _, template = shared
    group = scene.stack.resolve(eks_cluster.efa_security_group.security_group_id)
    (resource,) = template.find_resources("AWS::SageMaker::Cluster").values()
    assert resource["Properties"]["VpcConfig"]["SecurityGroupIds"][0] == group
    assert fs.efa_security_group is eks_cluster.efa_security_group.security_group
    template.has_resource_properties("AWS::FSx::FileSystem", {
        "LustreConfiguration": Match.object_like({"EfaEnabled": True}),
        "SecurityGroupIds": Match.array_with([group]),
    })  # fmt: skip
    rules = [
        r for r in template.find_resources("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("Description") == "EFA: all traffic from Lustre EFA clients"
    ]  # fmt: skip
    assert rules == []


def test_separate_groups_get_efa_rules_both_ways():
    # GIVEN the file system in its own EFA group and HyperPod in a group of its own
    scene, _, fs, cluster = _build(share_group=False)
    template = scene.template()
    own = scene.stack.resolve(cluster.efa_security_group.security_group_id)
    fs_group = scene.stack.resolve(fs.efa_security_group.security_group_id)  # type: ignore[union-attr]
    # THEN all traffic both ways between the file system's EFA group and the nodes'
    template.has_resource_properties("AWS::EC2::SecurityGroupIngress", {
        "IpProtocol": "-1", "GroupId": fs_group, "SourceSecurityGroupId": own,
        "Description": "EFA: all traffic from Lustre EFA clients",
    })  # fmt: skip
    template.has_resource_properties("AWS::EC2::SecurityGroupIngress", {
        "IpProtocol": "-1", "GroupId": own, "SourceSecurityGroupId": fs_group,
        "Description": "EFA: all traffic from the Lustre file system",
    })  # fmt: skip
    assert [g.consumer_path for g in fs.efa_client_groups] == ["Test/H/Bootstrap-gpu"]


def test_over_the_budget_is_refused_at_construction():
    # GIVEN 129 p5 nodes x 8 interfaces = 1,032 > 1,024 (issue 18: refused at construction, every count is known)
    with pytest.raises(FmValidationError) as raised:
        _build(groups=_groups(129))
    assert "Test/H/Bootstrap-gpu (129 nodes x 8 EFA interfaces = 1,032)" in str(raised.value)


def test_fewer_interfaces_fit_the_budget():
    # GIVEN the same 129 nodes with 4 EFA interfaces each for Lustre (516 connections)
    scene, _, fs, cluster = _build(groups=_groups(129, efa_interfaces_for_lustre=4))
    scene.app.synth()
    assert fs.max_efa_connections == 516
    assert "--lnet-only 4 p5" in cluster.node_bootstraps["gpu"].render()


def test_zero_interfaces_keep_the_group_on_tcp():
    _, _, fs, cluster = _build(groups=_groups(4, efa_interfaces_for_lustre=0))
    assert "--lnet-only" not in cluster.node_bootstraps["gpu"].render()
    assert fs.efa_client_groups == () and cluster.lustre_efa_interfaces == {}


def test_token_node_count_warns_instead_of_failing():
    scene, _, fs, _ = _build(groups=[HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=_token())])
    assert fs.max_efa_connections is None
    messages = [str(m.entry.data) for m in cdk.assertions.Annotations.from_stack(scene.stack).find_warning(
        "*", cdk.assertions.Match.string_like_regexp("deploy-time value"))]  # fmt: skip
    assert messages


def _token() -> Any:
    return cdk.Token.as_number({"Ref": "Nodes"})


# --- unchanged paths ----------------------------------------------------------------------------------------------
def test_tcp_file_system_keeps_the_shared_lifecycle():
    # GIVEN a TCP file system WHEN HyperPod on EKS gets it THEN the shared lifecycle/ prefix, no LNet step, no budget
    scene, _, _, cluster = _build(fs_kind="tcp", share_group=False)
    assert not cluster.per_group_lifecycle and cluster.lustre_efa_interfaces == {}
    groups = _instance_groups(scene.template())
    assert {_prefix_of(g["LifeCycleConfig"]) for g in groups.values()} == {"/lifecycle/"}
    assert all("--lnet-only" not in b.render() for b in cluster.node_bootstraps.values())
    scene.template().has_resource_properties("AWS::EC2::SecurityGroupIngress", {
        "FromPort": 988, "SourceSecurityGroupId": scene.stack.resolve(cluster.efa_security_group.security_group_id),
    })  # fmt: skip


def test_file_system_in_another_zone_is_refused():
    from fmconstructs.eks import GpuEksCluster

    scene = new_scene()
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    fs = _efa_fs(scene, eks_cluster.efa_security_group)
    with pytest.raises(FmValidationError, match=r"subnets\[0\] of Test/H/Bootstrap-gpu"):
        HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_b], instance_groups=_groups(),
                        orchestrator=HyperPodOrchestrator.eks(eks_cluster), file_system=fs,
                        efa_security_group=eks_cluster.efa_security_group)  # fmt: skip


# --- invalid input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, FmValidationError), (2.5, FmValidationError), (33, FmValidationError), ("8", Exception), (True, Exception)],
    ids=["negative", "fraction", "above-p5-efa-interfaces", "string", "bool"],
)
def test_group_rejects_bad_efa_interfaces_for_lustre(value: Any, error: type[Exception]):
    with pytest.raises(error, match="efa_interfaces_for_lustre"):
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, efa_interfaces_for_lustre=value)


def test_group_rejects_a_token_efa_interfaces_for_lustre():
    with pytest.raises(FmValidationError, match=r"efa_interfaces_for_lustre .*known at synthesis"):
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, efa_interfaces_for_lustre=_token())


def test_gpu_group_of_a_type_outside_the_catalog_warns_lustre_over_tcp() -> None:
    # ml.g5.48xlarge is a HyperPod GPU type the catalog does not hold: its EFA layout for Lustre is unknown -> TCP.
    from aws_cdk.assertions import Annotations, Match

    groups = [
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2),
        HyperPodInstanceGroup(name="g5", instance_type="g5.48xlarge", nodes=1),
    ]
    scene, _, _, cluster = _build(groups=groups)
    assert "g5" not in cluster.lustre_efa_interfaces and cluster.lustre_efa_interfaces["gpu"] == 8
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/H", Match.string_like_regexp("'g5' \\(ml.g5.48xlarge\\) mounts the EFA-enabled file system over TCP")
    )


def test_catalog_gpu_groups_do_not_warn(shared) -> None:
    from aws_cdk.assertions import Annotations, Match

    scene = shared[0]
    Annotations.from_stack(scene.stack).has_no_warning("*", Match.string_like_regexp("over TCP"))
