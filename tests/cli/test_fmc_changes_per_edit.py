"""`fmc changes` on every edit of issue 19 section 1 ("What replaces what today").

GIVEN a small app built with the library's constructs before and after one edit of the list, WHEN `fmc changes NEW
--against OLD` runs, THEN the gate names the change (kind, resource type, property) and exits 1; where the library
now prevents the replacement, the edit produces none (or is refused at synthesis); the safe edits exit 0.
Apps are synthesized once per edit (module-scoped cache) with aws-cdk-lib's CloudFormation validation off.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from click.testing import CliRunner

from fmconstructs import CapacityReservation, GpuNodeImage
from fmconstructs.cli.changes import MAY_REPLACE, REFUSED, RENAME, REPLACE, SHRINK, compare_templates
from fmconstructs.cli.main import cli
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.observability import PrometheusWorkspace
from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmQueue
from fmconstructs.pcs import ControllerSize, PcsAmi, PcsCluster
from fmconstructs.platform import (
    HyperPodOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import ENV

Build = Callable[[cdk.Stack, ec2.IVpc], None]
AMI = "ami-0123456789abcdef0"


# --- the apps: one small builder per construct, keyword edits -------------------------------------------------------
def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )


def fsx(
    *,
    efa: bool = False,
    capacity: int = 4800,
    tier: int = 1000,
    kms_key: bool = False,
    backups: bool = True,
    own_sg: str | None = None,
    log_group_id: str | None = None,
    dra: tuple[str, str] | None = None,
) -> Build:
    """A LustreFileSystem; ``own_sg``: the description of a security group the user passes; ``log_group_id``: the id
    of a user's log group with a fixed name; ``dra``: (bucket, prefix) of one data repository association."""

    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        group = (
            ec2.SecurityGroup(stack, "Own", vpc=vpc, description=own_sg, allow_all_outbound=False) if own_sg else None
        )
        log_group = (
            logs.LogGroup(stack, log_group_id, log_group_name="/aws/fsx/lustre-team-a") if log_group_id else None
        )
        fs = LustreFileSystem(
            stack,
            "Fs",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            storage_capacity_gib=capacity,
            throughput_mbps_per_tib=tier,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_enabled=efa,
            efa_security_group=EfaSecurityGroup(stack, "Efa", vpc=vpc) if efa else None,
            kms_key=kms.Key(stack, "Key", enable_key_rotation=True) if kms_key else None,
            automatic_backup_retention=None if backups else cdk.Duration.days(0),
            security_group=group,
            log_group=log_group,
        )
        if dra is not None:
            fs.add_data_repository("Data", bucket=dra[0], file_system_path="/data", data_repository_prefix=dra[1])

    return build


def pcs(*, id: str = "Cluster", size: ControllerSize | None = None, own_sg: bool = False, subnet: int = 0) -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        group = ec2.SecurityGroup(stack, "Own", vpc=vpc, description="PCS cluster") if own_sg else None
        cluster = PcsCluster(stack, id, vpc=vpc, subnet=vpc.private_subnets[subnet], size=size, security_group=group)
        node_group = cluster.add_gpu_node_group(
            "P5", instance_type="p5.48xlarge", ami=PcsAmi.from_image_id(AMI), max_nodes=2
        )
        node_group.add_queue("Q")

    return build


def eks(*, name: str | None = None, own_key: bool = False) -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        key = kms.Key(stack, "SecretsKey", enable_key_rotation=True) if own_key else None
        GpuEksCluster(stack, "Eks", vpc=vpc, cluster_name=name, secrets_encryption_key=key)

    return build


def hyperpod(*, subnet: int = 0) -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        HyperPodCluster(
            stack,
            "HyperPod",
            vpc=vpc,
            cluster_name="team-a",
            subnets=[vpc.private_subnets[subnet]],
            instance_groups=[
                HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
                HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
            ],
            orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        )

    return build


def parallelcluster(*, head: str = "c7i.4xlarge") -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        subnet = vpc.private_subnets[0]
        ParallelCluster(
            stack,
            "Cluster",
            cluster_name="train",
            head_node=HeadNode(instance_type=head, subnet=subnet),
            queues=[
                SlurmQueue(
                    name="gpu",
                    subnets=[subnet],
                    compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge")],
                )
            ],
        )

    return build


def amp(*, own_key: bool = False) -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        key = kms.Key(stack, "Cmk", enable_key_rotation=True) if own_key else None
        PrometheusWorkspace(stack, "Prometheus", encryption_key=key)

    return build


def platform(
    *, zone: str = "us-east-1a", target_gbytes_per_s: float = 10.0, nodes: int = 2, ami: str = AMI, obs: bool = False
) -> Build:
    """A PCS TrainingPlatform on a capacity reservation whose zone picks the subnet (the VPC's zones are known)."""

    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        TrainingPlatform(
            stack,
            "Platform",
            vpc=vpc,
            instance_type="p5.48xlarge",
            nodes=nodes,
            orchestrator=PcsOptions(ami=PcsAmi.from_image_id(ami), login_nodes=0),
            capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0", zone=zone),
            storage=PlatformStorage.for_throughput(target_gbytes_per_s=target_gbytes_per_s),
            observability=PlatformObservability.new(grafana=False) if obs else None,
            capacity_block_events=False,
            outputs=False,
        )

    return build


def image(*, efa_installer_version: str = "1.50.0") -> Build:
    def build(stack: cdk.Stack, vpc: ec2.IVpc) -> None:
        GpuNodeImage(
            stack,
            "Image",
            instance_types=["p5.48xlarge"],
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            efa_installer_version=efa_installer_version,
        )

    return build


APPS: dict[str, Callable[..., Build]] = {
    f.__name__: f for f in (fsx, pcs, eks, hyperpod, parallelcluster, amp, platform, image)
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``assembly(app, **edit)``: the cdk.out of ``APPS[app](**edit)``, synthesized once per edit."""
    root = tmp_path_factory.mktemp("section1")
    built: dict[str, Path] = {}

    def get(app: str, **edit: Any) -> Path:
        key = json.dumps([app, edit], sort_keys=True)
        if key not in built:
            out = root / f"a{len(built)}"
            cdk_app = cdk.App(
                outdir=str(out),
                builtin_cloud_formation_validation=False,
                context={"aws:cdk:enable-path-metadata": True},
            )
            stack = cdk.Stack(cdk_app, "Gate", env=ENV)
            APPS[app](**edit)(stack, _vpc(stack))
            cdk_app.synth()
            built[key] = out
        return built[key]

    return get


def _gate(
    assembly: Callable[..., Path], app: str, before: dict[str, Any], after: dict[str, Any]
) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(
        cli, ["changes", str(assembly(app, **after)), "--against", str(assembly(app, **before)), "--json"]
    )
    assert "Traceback" not in result.output
    report = json.loads(result.output)
    return result.exit_code, [f for f in report["findings"] if f["blocking"]]


def _has(findings: list[dict[str, Any]], kind: str, resource_type: str, prop: str | None) -> bool:
    return any(
        f["kind"] == kind
        and f["type"] == resource_type
        and (prop is None or f["property"] == prop or str(f["property"]).startswith(prop + "/"))
        for f in findings
    )


# --- the edits of section 1 that the gate reports ---------------------------------------------------------------------
REPORTED = [
    # FSx file system
    ("fsx", {}, {"efa": True}, REPLACE, "AWS::FSx::FileSystem", "LustreConfiguration/EfaEnabled"),
    ("fsx", {"efa": True}, {}, REPLACE, "AWS::FSx::FileSystem", "LustreConfiguration/EfaEnabled"),
    ("fsx", {}, {"kms_key": True}, REPLACE, "AWS::FSx::FileSystem", "KmsKeyId"),
    ("fsx", {}, {"own_sg": "Lustre"}, REPLACE, "AWS::FSx::FileSystem", "SecurityGroupIds"),
    # GroupDescription is create-only: the user's group is replaced, its new id replaces the file system.
    ("fsx", {"own_sg": "Lustre"}, {"own_sg": "Lustre clients"}, REPLACE, "AWS::FSx::FileSystem", "SecurityGroupIds"),
    ("platform", {}, {"zone": "us-east-1b"}, REPLACE, "AWS::FSx::FileSystem", "SubnetIds"),
    ("platform", {}, {"target_gbytes_per_s": 5.0}, SHRINK, "AWS::FSx::FileSystem", "StorageCapacity"),
    ("fsx", {}, {"capacity": 2400}, SHRINK, "AWS::FSx::FileSystem", "StorageCapacity"),
    # data repository association
    (
        "fsx",
        {"dra": ("fmc-gate-a", "data/")},
        {"dra": ("fmc-gate-a", "datasets/")},
        REPLACE,
        "AWS::FSx::DataRepositoryAssociation",
        "DataRepositoryPath",
    ),
    (
        "fsx",
        {"dra": ("fmc-gate-a", "data/")},
        {"dra": ("fmc-gate-b", "data/")},
        REPLACE,
        "AWS::FSx::DataRepositoryAssociation",
        "DataRepositoryPath",
    ),
    # PCS cluster (its node groups and queues follow: ClusterId)
    ("pcs", {}, {"size": ControllerSize.LARGE}, REPLACE, "AWS::PCS::Cluster", "Size"),
    ("pcs", {}, {"own_sg": True}, REPLACE, "AWS::PCS::Cluster", "Networking/SecurityGroupIds"),
    ("pcs", {}, {"subnet": 1}, REPLACE, "AWS::PCS::Cluster", "Networking/SubnetIds"),
    ("platform", {}, {"zone": "us-east-1b"}, REPLACE, "AWS::PCS::Cluster", "Networking/SubnetIds"),
    ("pcs", {}, {"id": "Slurm"}, RENAME, "AWS::PCS::Cluster", None),
    # EKS cluster
    ("eks", {}, {"name": "team-a"}, REPLACE, "AWS::EKS::Cluster", "Name"),
    ("eks", {"name": "team-a"}, {"name": "team-b"}, REPLACE, "AWS::EKS::Cluster", "Name"),
    ("eks", {}, {"own_key": True}, REPLACE, "AWS::EKS::Cluster", "EncryptionConfig"),
    # HyperPod: VpcConfig is create-only and the name is fixed: the replacement cannot be created (see below)
    ("hyperpod", {}, {"subnet": 1}, REPLACE, "AWS::SageMaker::Cluster", "VpcConfig/Subnets"),
    # ParallelCluster: the provider refuses a head node change (UpdatePolicy.UNSUPPORTED); nothing is replaced
    ("parallelcluster", {}, {"head": "c7i.8xlarge"}, REFUSED, "Custom::PclusterCluster", "ClusterConfiguration"),
    # AMP workspace: KmsKeyArn is create-only (metric history lost)
    ("amp", {}, {"own_key": True}, REPLACE, "AWS::APS::Workspace", "KmsKeyArn"),
    # a retained log group with a fixed name moved to a new logical id: the new one collides with the old one's name
    ("fsx", {"log_group_id": "FsxLogs"}, {"log_group_id": "LustreLogs"}, RENAME, "AWS::Logs::LogGroup", None),
]


@pytest.mark.parametrize(
    ("app", "before", "after", "kind", "resource_type", "prop"),
    REPORTED,
    ids=[
        "fsx-efa-on",
        "fsx-efa-off",
        "fsx-kms-key-added",
        "fsx-own-security-group",
        "fsx-security-group-description",
        "fsx-reservation-zone-moves-subnet",
        "fsx-sizing-objective-lowered",
        "fsx-capacity-lowered",
        "dra-prefix",
        "dra-bucket",
        "pcs-controller-size",
        "pcs-security-group",
        "pcs-subnet",
        "pcs-reservation-zone-moves-subnet",
        "pcs-construct-renamed",
        "eks-cluster-name-set",
        "eks-cluster-name-changed",
        "eks-own-secrets-key",
        "hyperpod-vpc-config",
        "parallelcluster-head-node-type",
        "amp-customer-managed-key",
        "fsx-log-group-fixed-name-moved",
    ],
)
def test_the_gate_reports_each_section_1_edit(assembly, app, before, after, kind, resource_type, prop):
    code, blocking = _gate(assembly, app, before, after)
    assert code == 1
    assert _has(blocking, kind, resource_type, prop), blocking


def test_a_pcs_controller_change_names_the_node_groups_and_queues_that_go_with_it(assembly):
    _, blocking = _gate(assembly, "pcs", {}, {"size": ControllerSize.LARGE})
    assert _has(blocking, REPLACE, "AWS::PCS::ComputeNodeGroup", "ClusterId")
    assert _has(blocking, REPLACE, "AWS::PCS::Queue", "ClusterId")


def test_a_renamed_pcs_construct_renames_its_node_groups_and_queues_too(assembly):
    _, blocking = _gate(assembly, "pcs", {}, {"id": "Slurm"})
    paths = {(f["type"], f["path"], f["new_path"]) for f in blocking if f["kind"] == RENAME}
    assert ("AWS::PCS::Cluster", "Gate/Cluster", "Gate/Slurm") in paths
    assert ("AWS::PCS::Queue", "Gate/Cluster/Q", "Gate/Slurm/Q") in paths


def test_a_fixed_hyperpod_name_makes_the_replacement_fail_and_the_gate_says_so(assembly):
    _, blocking = _gate(assembly, "hyperpod", {}, {"subnet": 1})
    (cluster,) = [f for f in blocking if f["type"] == "AWS::SageMaker::Cluster"]
    assert (cluster["old"], cluster["new"], cluster["fails"]) == (
        "subnet-0aaaaaaaaaaaaaaa1",
        "subnet-0bbbbbbbbbbbbbbb2",
        True,
    )
    assert "custom name 'team-a'" in cluster["detail"]


def test_a_changed_eks_name_is_a_replacement_that_can_deploy(assembly):
    # The name changes with the edit: CloudFormation can create the new cluster (the old one is deleted: the gate
    # still blocks, the cluster is stateful), so the finding is not a failing deploy.
    _, blocking = _gate(assembly, "eks", {"name": "team-a"}, {"name": "team-b"})
    (cluster,) = [f for f in blocking if f["type"] == "AWS::EKS::Cluster"]
    assert (cluster["old"], cluster["new"], cluster["fails"]) == ("team-a", "team-b", False)


def test_the_parallelcluster_refusal_is_a_failing_deploy_not_a_replacement(assembly):
    _, blocking = _gate(assembly, "parallelcluster", {}, {"head": "c7i.8xlarge"})
    (refusal,) = blocking
    assert refusal["property"] == "ClusterConfiguration/HeadNode/InstanceType"
    assert (refusal["old"], refusal["new"], refusal["fails"]) == ("c7i.4xlarge", "c7i.8xlarge", True)
    assert "UNSUPPORTED" in refusal["detail"]


def test_the_moved_fixed_name_log_group_is_a_failing_deploy_although_not_stateful(assembly):
    _, blocking = _gate(assembly, "fsx", {"log_group_id": "FsxLogs"}, {"log_group_id": "LustreLogs"})
    (moved,) = blocking
    assert (moved["stateful"], moved["fails"]) == (False, True)
    assert "'/aws/fsx/lustre-team-a'" in moved["detail"]


def test_the_security_group_description_change_lists_the_group_itself_as_not_gating(assembly):
    result = CliRunner().invoke(
        cli,
        [
            "changes",
            str(assembly("fsx", own_sg="Lustre clients")),
            "--against",
            str(assembly("fsx", own_sg="Lustre")),
            "--json",
        ],
    )
    findings = json.loads(result.output)["findings"]
    (group,) = [f for f in findings if f["type"] == "AWS::EC2::SecurityGroup"]
    assert (group["kind"], group["property"], group["blocking"]) == (REPLACE, "GroupDescription", False)


# --- edits the library now prevents ----------------------------------------------------------------------------------
def test_automatic_backups_off_no_longer_replaces_the_file_system(assembly):
    # The library always emits CopyTagsToBackups (create-only per the template reference), whatever the backups: turning
    # automatic backups off only changes AutomaticBackupRetentionDays, an in-place update.
    code, blocking = _gate(assembly, "fsx", {}, {"backups": False})
    assert (code, blocking) == (0, [])


def test_hyperpod_base_config_dir_refuses_an_implicit_efa_flip(scene):
    # base_config_dir (the published lifecycle scripts mount over TCP) used to flip the platform's file system to TCP,
    # replacing it; now the platform refuses unless PlatformStorage(efa_enabled=False) is given explicitly, so the
    # edit cannot silently change EfaEnabled.
    with pytest.raises(FmValidationError, match=r"^storage.efa_enabled must be False, given explicitly"):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            orchestrator=HyperPodOptions(base_config_dir="/tmp/base-config"),
            storage=PlatformStorage.of_capacity(storage_capacity_gib=4800),
        )


# --- safe edits ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("app", "before", "after"),
    [
        ("fsx", {}, {"capacity": 9600}),
        ("platform", {}, {"target_gbytes_per_s": 20.0}),
        ("fsx", {}, {"tier": 500}),
        ("fsx", {}, {"dra": ("fmc-gate-a", "data/")}),
        ("platform", {}, {"nodes": 4}),
        ("platform", {}, {"ami": "ami-0fedcba9876543210"}),
        ("image", {}, {"efa_installer_version": "1.51.0"}),
        ("platform", {}, {"obs": True}),
    ],
    ids=[
        "capacity-increase",
        "sizing-objective-raised",
        "throughput-tier",
        "add-a-repository",
        "node-count",
        "pcs-ami-image-id",
        "gpu-node-image-version",
        "add-observability",
    ],
)
def test_safe_edits_pass(assembly, app, before, after):
    code, blocking = _gate(assembly, app, before, after)
    assert (code, blocking) == (0, [])


# --- how the failing deploys read and are acknowledged ---------------------------------------------------------------
def test_text_output_lists_a_failing_deploy_of_a_resource_that_is_not_stateful(assembly):
    new, old = assembly("fsx", log_group_id="LustreLogs"), assembly("fsx", log_group_id="FsxLogs")
    result = CliRunner().invoke(cli, ["changes", str(new), "--against", str(old)])
    assert result.exit_code == 1
    assert "AWS::Logs::LogGroup" in result.output
    assert "--allow PATH" in result.output


@pytest.mark.parametrize(
    ("app", "before", "after", "allow"),
    [
        ("parallelcluster", {}, {"head": "c7i.8xlarge"}, "Gate/Cluster"),
        ("fsx", {"log_group_id": "FsxLogs"}, {"log_group_id": "LustreLogs"}, "Gate/LustreLogs"),
    ],
    ids=["refused-update", "fixed-name-collision"],
)
def test_a_failing_deploy_is_acknowledged_by_path_like_any_finding(assembly, app, before, after, allow):
    new, old = assembly(app, **after), assembly(app, **before)
    result = CliRunner().invoke(cli, ["changes", str(new), "--against", str(old), "--json", "--allow", allow])
    assert result.exit_code == 0
    assert json.loads(result.output)["blocking"] == 0


# --- the ParallelCluster refusals at template level -----------------------------------------------------------------
def _pcluster(name: object = "train", head: object = "c7i.4xlarge", max_count: int = 1) -> dict[str, Any]:
    configuration = {
        "HeadNode": {"InstanceType": head},
        "Scheduling": {"SlurmQueues": [{"Name": "gpu", "ComputeResources": [{"Name": "p5", "MaxCount": max_count}]}]},
    }
    properties = {"ServiceToken": "arn:token", "ClusterName": name, "ClusterConfiguration": configuration}
    return {"Resources": {"Cluster": {"Type": "Custom::PclusterCluster", "Properties": properties}}}


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ({"name": "train-2"}, (REFUSED, "ClusterName", True)),
        ({"head": {"Ref": "HeadType"}}, (MAY_REPLACE, "ClusterConfiguration/HeadNode/InstanceType", False)),
        ({"max_count": 8}, None),  # a queue's node count: ParallelCluster updates it (QueueUpdateStrategy)
    ],
    ids=["cluster-name", "head-type-deploy-time-value", "node-count"],
)
def test_parallelcluster_refusals(after, expected):
    report = compare_templates("S", _pcluster(), _pcluster(**after))
    found = [(f.kind, f.prop, f.fails) for f in report.findings]
    assert found == ([] if expected is None else [expected])
