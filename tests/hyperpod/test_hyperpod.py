"""HyperPodCluster: instance groups, deep health checks, node recovery, training plans, VPC, role, lifecycle."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import (
    HYPERPOD_INSTANCE_TYPES,
    ON_CREATE,
    ON_CREATE_SCRIPT,
    DeepHealthCheck,
    HyperPodCapacity,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
    NodeRecovery,
    slurm_provisioning_parameters,
)

from tests.conftest import ENV, new_scene

PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/my-plan-0001"


def groups() -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="login", instance_type="ml.m5.4xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, extra_ebs_gib=500, threads_per_core=1),
    ]


def slurm() -> HyperPodOrchestrator:
    return HyperPodOrchestrator.slurm(controller_group="controller", login_group="login")


@pytest.fixture(scope="module")
def slurm_scene():
    """The default Slurm cluster: HyperPod's API-driven Slurm configuration."""
    scene = new_scene()
    cluster = HyperPodCluster(scene.stack, "HyperPod", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm())
    return scene, cluster


@pytest.fixture(scope="module")
def base_config(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A stand-in for a local copy of the published base-config (only its presence matters at synthesis)."""
    directory = tmp_path_factory.mktemp("base-config")
    (directory / "lifecycle_script.py").write_text("print('published lifecycle script')\n")
    return str(directory)


@pytest.fixture(scope="module")
def legacy_scene(base_config: str):
    """Slurm configured by the published lifecycle scripts (a base_config_dir: SlurmConfiguration.LIFECYCLE_SCRIPTS)."""
    scene = new_scene()
    cluster = HyperPodCluster(scene.stack, "HyperPod", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              base_config_dir=base_config)  # fmt: skip
    return scene, cluster


def group_props(template: Template, name: str) -> dict:
    cluster = next(iter(template.find_resources("AWS::SageMaker::Cluster").values()))
    return next(g for g in cluster["Properties"]["InstanceGroups"] if g["InstanceGroupName"] == name)


def test_instance_types_match_botocore_enum():
    model = botocore.session.get_session().get_service_model("sagemaker")
    assert set(model.shape_for("ClusterInstanceType").enum) == HYPERPOD_INSTANCE_TYPES


def test_groups_use_ml_names_counts_storage_threads(slurm_scene):
    template = slurm_scene[0].template()
    gpu = group_props(template, "gpu")
    assert gpu["InstanceType"] == "ml.p5.48xlarge"
    assert gpu["InstanceCount"] == 2
    assert gpu["ThreadsPerCore"] == 1
    assert gpu["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert group_props(template, "controller")["InstanceType"] == "ml.m5.2xlarge"


def test_gpu_groups_get_deep_health_checks_by_default_cpu_groups_none(slurm_scene):
    template = slurm_scene[0].template()
    assert group_props(template, "gpu")["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert "OnStartDeepHealthChecks" not in group_props(template, "controller")


def test_node_recovery_automatic_by_default(slurm_scene):
    slurm_scene[0].template().has_resource_properties("AWS::SageMaker::Cluster", {"NodeRecovery": "Automatic"})


def test_node_recovery_none_when_asked():
    scene = new_scene()
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                    node_recovery=NodeRecovery.NONE)  # fmt: skip
    scene.template().has_resource_properties("AWS::SageMaker::Cluster", {"NodeRecovery": "None"})


def test_lifecycle_scripts_cluster_has_no_orchestrator_property(legacy_scene):
    cluster = next(iter(legacy_scene[0].template().find_resources("AWS::SageMaker::Cluster").values()))
    assert "Orchestrator" not in cluster["Properties"]
    assert all("SlurmConfig" not in g for g in cluster["Properties"]["InstanceGroups"])


def test_lifecycle_config_points_at_prefix_and_on_create(legacy_scene):
    gpu = group_props(legacy_scene[0].template(), "gpu")
    assert gpu["LifeCycleConfig"]["OnCreate"] == ON_CREATE
    assert gpu["LifeCycleConfig"]["SourceS3Uri"]["Fn::Join"][1][-1] == "/lifecycle/"


def test_vpc_config_efa_self_referencing_rules(slurm_scene):
    template = slurm_scene[0].template()
    template.has_resource_properties(
        "AWS::SageMaker::Cluster",
        {"VpcConfig": {"SecurityGroupIds": [Match.any_value()], "Subnets": ["subnet-0aaaaaaaaaaaaaaa1",
                                                                            "subnet-0bbbbbbbbbbbbbbb2"]}},
    )  # fmt: skip
    template.has_resource_properties("AWS::EC2::SecurityGroupIngress", {"IpProtocol": "-1",
                                     "SourceSecurityGroupId": Match.any_value()})  # fmt: skip
    template.has_resource_properties("AWS::EC2::SecurityGroupEgress", {"IpProtocol": "-1",
                                     "DestinationSecurityGroupId": Match.any_value()})  # fmt: skip


def test_execution_role_managed_policy_and_scoped_lifecycle_read(slurm_scene):
    template = slurm_scene[0].template()
    template.has_resource_properties("AWS::IAM::Role", {
        "AssumeRolePolicyDocument": Match.object_like({"Statement": [Match.object_like(
            {"Principal": {"Service": "sagemaker.amazonaws.com"}})]}),
        "ManagedPolicyArns": [Match.object_like({"Fn::Join": Match.array_with([
            Match.array_with([":iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"])])})],
    })  # fmt: skip
    policies = template.find_resources("AWS::IAM::Policy")
    role_policy = next(p for k, p in policies.items() if k.startswith("HyperPodExecutionRole"))
    statements = role_policy["Properties"]["PolicyDocument"]["Statement"]
    s3 = [s for s in statements if str(s["Action"]).startswith("s3:")]
    assert {s["Action"] for s in s3} == {"s3:GetObject", "s3:ListBucket"}
    get = next(s for s in s3 if s["Action"] == "s3:GetObject")
    assert get["Resource"]["Fn::Join"][1][-1] == "/lifecycle/*"
    listing = next(s for s in s3 if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["lifecycle/*"]}}


def test_lifecycle_bucket_is_private_encrypted_ssl_only(slurm_scene):
    template = slurm_scene[0].template()
    template.has_resource_properties("AWS::S3::Bucket", {
        "BucketEncryption": Match.any_value(),
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
    })  # fmt: skip
    template.has_resource_properties("AWS::S3::BucketPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Effect": "Deny"})])}})  # fmt: skip


def test_cluster_waits_for_lifecycle_upload(slurm_scene):
    cluster = next(iter(slurm_scene[0].template().find_resources("AWS::SageMaker::Cluster").values()))
    assert any("LifecycleScripts" in d for d in cluster["DependsOn"])


def test_provisioning_parameters_structure(legacy_scene):
    params = legacy_scene[1].provisioning_parameters
    # awsome-distributed-training 5.sagemaker-hyperpod README example / base-config lifecycle_script.py keys
    assert params == {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": "controller",
        "login_group": "login",
        "worker_groups": [{"instance_group_name": "gpu", "partition_name": "gpu"}],
    }


def test_provisioning_parameters_fsx_and_partition():
    params = slurm_provisioning_parameters(controller_group="c", login_group=None, worker_groups=[("g", "dev")],
                                           fsx_dns_name="fs.example", fsx_mount_name="abcdefgh")  # fmt: skip
    assert params["fsx_dns_name"] == "fs.example" and params["fsx_mountname"] == "abcdefgh"
    assert "login_group" not in params
    assert params["worker_groups"] == [{"instance_group_name": "g", "partition_name": "dev"}]


def test_training_plan_arn_on_group():
    scene = new_scene()
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2,
                                capacity=HyperPodCapacity.training_plan(PLAN, instance_type="p5.48xlarge",
                                                                        instance_count=4))  # fmt: skip
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=[groups()[0], gpu],
                    orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"))  # fmt: skip
    assert group_props(scene.template(), "gpu")["TrainingPlanArn"] == PLAN
    assert "TrainingPlanArn" not in group_props(scene.template(), "controller")


def test_training_plan_type_mismatch_refused():
    plan = HyperPodCapacity.training_plan(PLAN, instance_type="p5en.48xlarge")
    with pytest.raises(FmValidationError, match="instance_type"):
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1, capacity=plan)


def test_training_plan_count_exceeded_refused():
    plan = HyperPodCapacity.training_plan(PLAN, instance_count=2)
    with pytest.raises(FmValidationError, match="nodes"):
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=3, capacity=plan)


def test_deep_health_checks_refused_on_cpu_types():
    with pytest.raises(FmValidationError, match="deep_health_checks"):
        HyperPodInstanceGroup(name="c", instance_type="m5.2xlarge", nodes=1,
                              deep_health_checks=[DeepHealthCheck.INSTANCE_STRESS])  # fmt: skip


def test_deep_health_checks_can_be_turned_off():
    scene = new_scene()
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1, deep_health_checks=())
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=[groups()[0], gpu],
                    orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"))  # fmt: skip
    assert "OnStartDeepHealthChecks" not in group_props(scene.template(), "gpu")


def test_catalog_spec_resolves():
    gpu = groups()[2]
    assert gpu.instance_spec is not None and gpu.instance_spec.hyperpod_instance_type == "ml.p5.48xlarge"
    assert groups()[0].instance_spec is None


def test_on_create_script_passes_shellcheck(tmp_path: Path):
    script = tmp_path / ON_CREATE
    script.write_text(ON_CREATE_SCRIPT)
    result = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_setup_commands_render_through_node_bootstrap():
    scene = new_scene()
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              setup_commands=["echo fmconstructs-setup"])  # fmt: skip
    assert all("echo fmconstructs-setup" in cluster.node_bootstraps[g.name].render() for g in groups())


def test_file_system_clients_and_parameters(base_config: str):
    from fmconstructs.storage import LustreFileSystem

    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              file_system=fs, base_config_dir=base_config)  # fmt: skip
    params = cluster.provisioning_parameters
    assert params is not None and params["fsx_dns_name"] == fs.dns_name and params["fsx_mountname"] == fs.mount_name
    scene.template().has_resource_properties("AWS::EC2::SecurityGroupIngress", {"FromPort": 988, "ToPort": 988})


def test_tokens_everywhere_synthesize():
    scene = new_scene()
    count = cdk.CfnParameter(scene.stack, "Count", type="Number").value_as_number
    size = cdk.CfnParameter(scene.stack, "Size", type="Number").value_as_number
    subnet_id = cdk.CfnParameter(scene.stack, "Subnet").value_as_string
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=count, extra_ebs_gib=size,
                                capacity=HyperPodCapacity.training_plan(PLAN, instance_count=2))  # fmt: skip
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=[groups()[0], gpu],
                    orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
                    subnets=[ec2.Subnet.from_subnet_id(scene.stack, "S", subnet_id)])  # fmt: skip
    scene.template().has_resource_properties("AWS::SageMaker::Cluster", {"VpcConfig": Match.object_like(
        {"Subnets": [{"Ref": "Subnet"}]})})  # fmt: skip


# --- input sweep ------------------------------------------------------------------------------------------------
TOKEN_STR = cdk.Token.as_string(cdk.Aws.ACCOUNT_ID)

BAD_GROUP = [
    ("name", 3),
    ("name", "bad_name"),
    ("name", "gpu\n"),
    ("name", "-gpu"),
    ("name", "a" * 64),
    ("name", TOKEN_STR),
    ("instance_type", "p5.48xlarge\n"),
    ("instance_type", "p99.48xlarge"),
    ("instance_type", None),
    ("instance_type", ["p5.48xlarge"]),
    ("nodes", True),
    ("nodes", math.nan),
    ("nodes", math.inf),
    ("nodes", -1),
    ("nodes", 6759),
    ("nodes", 1.5),
    ("nodes", "2"),
    ("threads_per_core", 3),
    ("threads_per_core", True),
    ("extra_ebs_gib", 0),
    ("extra_ebs_gib", 16385),
    ("extra_ebs_gib", math.nan),
    ("deep_health_checks", "InstanceStress"),
    ("deep_health_checks", ["InstanceStress"]),
    ("deep_health_checks", [DeepHealthCheck.INSTANCE_STRESS, DeepHealthCheck.INSTANCE_STRESS]),
    ("capacity", "on-demand"),
    ("partition_name", "a b"),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_GROUP)
def test_group_rejects_bad_input(parameter, value):
    kwargs = {"name": "gpu", "instance_type": "p5.48xlarge", "nodes": 1, parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        HyperPodInstanceGroup(**kwargs)


@pytest.mark.parametrize("arn", [3, "arn:aws:sagemaker:us-east-1:123:training-plan/x", PLAN + "\n", None])
def test_training_plan_rejects_bad_arn(arn):
    with pytest.raises(FmValidationError, match="arn"):
        HyperPodCapacity.training_plan(arn)


@pytest.mark.parametrize(("parameter", "value"), [("instance_type", "p99.1xlarge"), ("instance_count", 0),
                                                  ("instance_count", math.nan), ("instance_count", True)])  # fmt: skip
def test_training_plan_rejects_bad_details(parameter, value):
    with pytest.raises(FmValidationError, match=parameter):
        HyperPodCapacity.training_plan(PLAN, **{parameter: value})


@pytest.mark.parametrize(("kwargs", "parameter"), [
    ({"controller_group": 3}, "controller_group"),
    ({"controller_group": "c\n"}, "controller_group"),
    ({"controller_group": "c", "login_group": "bad_name"}, "login_group"),
])  # fmt: skip
def test_slurm_orchestrator_rejects_bad_input(kwargs, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        HyperPodOrchestrator.slurm(**kwargs)


def test_eks_orchestrator_rejects_non_cluster():
    with pytest.raises(FmTypeError, match="cluster"):
        HyperPodOrchestrator.eks("arn:aws:eks:us-east-1:123456789012:cluster/x")


BAD_CLUSTER = [
    ("vpc", "vpc-123"),
    ("instance_groups", []),
    ("instance_groups", "gpu"),
    ("instance_groups", [{"name": "gpu"}]),
    ("instance_groups", [groups()[0], groups()[0]]),
    ("orchestrator", "slurm"),
    ("orchestrator", HyperPodOrchestrator.slurm(controller_group="missing")),
    ("orchestrator", HyperPodOrchestrator.slurm(controller_group="controller", login_group="controller")),
    ("subnets", "subnet-1"),
    ("subnets", []),
    ("cluster_name", "bad_name"),
    ("cluster_name", "x\n"),
    ("cluster_name", 5),
    ("node_recovery", "Automatic"),
    ("file_system", "fs-123"),
    ("base_config_dir", "/does/not/exist"),
    ("base_config_dir", 3),
    ("setup_commands", "echo hi"),
    ("setup_commands", [3]),
    ("security_groups", "sg-1"),
    ("access_logs_bucket", "my-bucket"),
    ("prometheus_workspace", "ws-123"),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_CLUSTER)
def test_cluster_rejects_bad_input(parameter, value):
    scene = new_scene()
    kwargs = {"vpc": scene.vpc, "instance_groups": groups(), "orchestrator": slurm(), parameter: value}
    with pytest.raises(
        FmValidationError, match=parameter.split(".")[0] if parameter != "orchestrator" else "group|orch"
    ):
        HyperPodCluster(scene.stack, "H", **kwargs)


def test_cluster_name_default_from_stack(slurm_scene):
    slurm_scene[0].template().has_resource_properties("AWS::SageMaker::Cluster", {"ClusterName": "Test-HyperPod"})


def test_env_agnostic_stack_leaves_name_to_cloudformation():
    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "S")
    vpc = ec2.Vpc.from_vpc_attributes(stack, "V", vpc_id="vpc-1", availability_zones=["a"],
                                      private_subnet_ids=["subnet-1"])  # fmt: skip
    cluster = HyperPodCluster(stack, "H", vpc=vpc, instance_groups=groups(), orchestrator=slurm())
    assert cluster.cluster_name  # resolves; ENV unused here
    assert ENV.region == "us-east-1"


def test_provisioning_parameters_json_is_serializable(legacy_scene):
    assert json.loads(json.dumps(legacy_scene[1].provisioning_parameters))["workload_manager"] == "slurm"


# --- EKS orchestration ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def eks_scene():
    from fmconstructs.eks import GpuEksCluster

    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Eks", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    eks_cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=2)
    cluster = HyperPodCluster(stack, "H", vpc=vpc, instance_groups=[gpu],
                              orchestrator=HyperPodOrchestrator.eks(eks_cluster))  # fmt: skip
    return stack, eks_cluster, cluster


def test_eks_orchestrator_cluster_arn_and_cluster_security_group(eks_scene):
    stack, eks_cluster, _ = eks_scene
    template = Template.from_stack(stack)
    cluster_id = stack.resolve(eks_cluster.cluster.node.default_child.logical_id)
    template.has_resource_properties("AWS::SageMaker::Cluster", {
        "Orchestrator": {"Eks": {"ClusterArn": {"Fn::GetAtt": [cluster_id, "Arn"]}}},
        "VpcConfig": Match.object_like({"SecurityGroupIds": Match.array_with([
            {"Fn::GetAtt": [cluster_id, "ClusterSecurityGroupId"]}])}),
    })  # fmt: skip


def test_default_eks_version_is_documented_by_hyperpod(eks_scene):
    # GpuEksCluster's default (1.35) is in HyperPod's documented range (1.30-1.35) since the 2026 prerequisites page;
    # the warning for an undocumented version is tested in tests/hyperpod/test_hyperpod_platform_eks.py.
    from aws_cdk.assertions import Annotations

    from fmconstructs.hyperpod import HYPERPOD_KUBERNETES_VERSIONS, KUBERNETES_VERSION_WARNING

    stack, eks_cluster, _ = eks_scene
    assert eks_cluster.version.version in HYPERPOD_KUBERNETES_VERSIONS
    texts = [str(m.entry.data) for m in Annotations.from_stack(stack).find_warning("*", Match.any_value())]
    assert not any(KUBERNETES_VERSION_WARNING in t for t in texts)


def test_eks_config_map_authentication_refused():
    from aws_cdk import aws_eks_v2 as eks_l1

    from fmconstructs.eks import GpuEksCluster

    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "EksCm", env=ENV)
    eks_cluster = GpuEksCluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2))
    eks_cluster.cluster.node.default_child.access_config = eks_l1.CfnCluster.AccessConfigProperty(
        authentication_mode="CONFIG_MAP"
    )
    with pytest.raises(FmValidationError, match="authentication mode"):
        HyperPodOrchestrator.eks(eks_cluster)


# --- observability ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def observed(base_config: str):
    """Observability with the published lifecycle scripts: the base-config's own collectors are turned on."""
    from fmconstructs.observability.workspace import PrometheusWorkspace

    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Amp")
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              prometheus_workspace=workspace, base_config_dir=base_config)  # fmt: skip
    return scene, workspace, cluster


def test_workspace_remote_write_granted_to_execution_role(observed):
    scene, workspace, _ = observed
    workspace_id = scene.stack.resolve(workspace.node.default_child.logical_id)
    policies = scene.template().find_resources("AWS::IAM::Policy")
    role_policy = next(p for k, p in policies.items() if k.startswith("HExecutionRole"))
    statements = role_policy["Properties"]["PolicyDocument"]["Statement"]
    assert {"Action": "aps:RemoteWrite", "Effect": "Allow", "Resource": {"Fn::GetAtt": [workspace_id, "Arn"]}} in (
        statements
    )


def test_observability_step_turns_on_base_config_observability(observed, tmp_path: Path):
    _, _, cluster = observed
    (step,) = [s for s in cluster.node_bootstraps["gpu"].steps if s.name == "observability"]
    url = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
    from fmconstructs.hyperpod.lifecycle import observability_commands

    (tmp_path / "config.py").write_text(
        "class Config:\n    enable_observability = False\n"
        'class ObservabilityConfig:\n    prometheus_remote_write_url = "https://example/api/v1/remote_write"\n'
    )
    script = tmp_path / "s.sh"
    script.write_text("\n".join(["#!/bin/bash", "set -e", *observability_commands(url)]) + "\n")
    assert subprocess.run(["shellcheck", str(script)], capture_output=True).returncode == 0
    subprocess.run(["bash", str(script)], cwd=tmp_path, check=True)
    text = (tmp_path / "config.py").read_text()
    assert "enable_observability = True" in text
    assert f'prometheus_remote_write_url = "{url}"' in text
    assert any("prometheus_remote_write_url" in line for line in step.commands)


def test_observability_step_without_config_py_is_a_no_op(tmp_path: Path):
    from fmconstructs.hyperpod.lifecycle import observability_commands

    script = tmp_path / "s.sh"
    script.write_text("\n".join(["#!/bin/bash", "set -e", *observability_commands("https://x")]) + "\n")
    subprocess.run(["bash", str(script)], cwd=tmp_path, check=True)
    assert not (tmp_path / "config.py").exists()


def test_workspace_refused_for_eks(eks_scene):
    stack, eks_cluster, _ = eks_scene
    from fmconstructs.observability.workspace import PrometheusWorkspace

    workspace = PrometheusWorkspace(stack, "Amp2")
    vpc = eks_cluster.cluster.vpc
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=1)
    with pytest.raises(FmValidationError, match="prometheus_workspace"):
        HyperPodCluster(stack, "H2", vpc=vpc, instance_groups=[gpu], orchestrator=HyperPodOrchestrator.eks(eks_cluster),
                        prometheus_workspace=workspace)  # fmt: skip
