"""ParallelCluster configurations checked by aws-parallelcluster's own cluster schema, offline (issue 12 section 2).

aws-parallelcluster pins CDK v1 and jsii 1.85, so it lives in `.venv-pcluster` (Makefile, requirements-pcluster.txt);
tools/pcluster_validate.py runs `ClusterSchema(cluster_name=...).load(config)` there with no credentials, IMDS off,
sockets refused and pcluster's AWSApi replaced by one that raises. CloudFormation intrinsics are replaced by
well-formed placeholders first (`replace_intrinsics`), chosen by the key they sit under.

What the schema catches (aws-parallelcluster 3.16.1 pcluster/schemas/cluster_schema.py, common_schema.py): unknown
keys, types, enumerations (CapacityType, Os, StorageType), ranges (MaxCount >= 1, MinCount >= 0), id patterns
(subnet-, sg-, ami-, IAM ARNs; common_schema.py ALLOWED_VALUES), CapacityReservationTarget with exactly one of
CapacityReservationId / CapacityReservationResourceGroupArn, FsxLustreSettings with FileSystemId and other settings,
settings that do not match StorageType, /NONE mount directories, SecurityGroups with AdditionalSecurityGroups.
What only the semantic validators catch (pcluster/validators/*.py, run by `pcluster create-cluster`, most of them call
AWS): MinCount == MaxCount > 0 on CAPACITY_BLOCK and MaxCount >= MinCount (ComputeResourceSizeValidator, no AWS call:
run here with --offline-validators), explicit placement group on EFA queues (EfaPlacementGroupValidator, no AWS call:
run here), placement group on a CAPACITY_BLOCK queue (PlacementGroupCapacityTypeValidator: a WARNING only), EFA on a
type without EFA (cluster_validators.py EfaValidator: reads ec2 DescribeInstanceTypes), reservation id required on
CAPACITY_BLOCK and the instance type's usage classes (CapacityTypeValidator: DescribeInstanceTypes). Names, counts,
mount directories, head/compute architecture and head node memory (NameValidator, DuplicateNameValidator,
MaxCountValidator, Shared*Validator, InstanceArchitectureCompatibilityValidator, HeadNodeMemorySizeValidator) run
offline too: tests/parallelcluster/test_parallelcluster_validators.py.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from constructs import Construct

from fmconstructs import (
    CATALOG,
    CapacityBlock,
    CapacityReservation,
    FmValidationError,
    LustreFileSystem,
    UltraServerCapacityBlock,
)
from fmconstructs.parallelcluster import (
    CapacityType,
    ComputeResource,
    CustomAction,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
)

from tests.conftest import Scene, new_app, new_scene
from tests.support.parallelcluster import head_type_for
from tests.support.parallelcluster_schema import (
    LUSTRE,
    SUBNET,
    TIMEOUT_S,
    VALIDATOR,
    _cluster,
    _offline_env,
    _queue,
    check_configs,
    error_text,
    replace_intrinsics,
    require_pcluster,
)

# ---------------------------------------------------------------------------------------------------------------------
# CloudFormation intrinsics -> placeholders of the shape the key expects


class TestReplaceIntrinsics:
    def test_shapes_follow_the_key(self) -> None:
        config: dict[str, Any] = {
            "HeadNode": {"Networking": {"SubnetId": {"Ref": "Subnet"}}},
            "Image": {"CustomAmi": {"Fn::GetAtt": ["Image", "ImageId"]}},
            "Scheduling": {
                "SlurmQueues": [
                    {
                        "Networking": {
                            "SubnetIds": [{"Ref": "A"}, "subnet-aaaaaaaa"],
                            "AdditionalSecurityGroups": {"Fn::Split": [",", {"Fn::ImportValue": "Groups"}]},
                        },
                        "ComputeResources": [
                            {"CapacityReservationTarget": {"CapacityReservationId": {"Fn::ImportValue": "Block"}}}
                        ],
                        "CustomActions": {
                            "OnNodeStart": {"Script": {"Fn::Join": ["", ["s3://", {"Ref": "Bucket"}, "/a.sh"]]}}
                        },
                    }
                ]
            },
            "SharedStorage": [{"FsxLustreSettings": {"FileSystemId": {"Fn::Sub": "${Fs}"}}}],
            "Tags": [{"Key": "team", "Value": {"Fn::If": ["C", "a", "b"]}}],
        }
        out = replace_intrinsics(config)
        queue = out["Scheduling"]["SlurmQueues"][0]
        assert out["HeadNode"]["Networking"]["SubnetId"] == "subnet-0123456789abcdef0"
        assert out["Image"]["CustomAmi"] == "ami-0123456789abcdef0"
        assert queue["Networking"]["SubnetIds"] == ["subnet-0123456789abcdef0", "subnet-aaaaaaaa"]
        assert queue["Networking"]["AdditionalSecurityGroups"] == ["sg-0123456789abcdef0"]
        cr = queue["ComputeResources"][0]["CapacityReservationTarget"]
        assert cr["CapacityReservationId"] == "cr-0123456789abcdef0"
        assert queue["CustomActions"]["OnNodeStart"]["Script"].startswith("s3://")
        assert out["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == "fs-0123456789abcdef0"
        assert out["Tags"][0] == {"Key": "team", "Value": "placeholder"}
        assert config["HeadNode"]["Networking"]["SubnetId"] == {"Ref": "Subnet"}, "the input is not modified"

    def test_cdk_token_strings_are_intrinsics(self) -> None:
        assert replace_intrinsics({"SubnetId": "${Token[TOKEN.12]}"}) == {"SubnetId": "subnet-0123456789abcdef0"}

    def test_plain_mappings_with_one_key_are_kept(self) -> None:
        assert replace_intrinsics({"Efa": {"Enabled": True}}) == {"Efa": {"Enabled": True}}

    def test_unknown_key_is_an_error(self) -> None:
        with pytest.raises(KeyError, match="Mystery"):
            replace_intrinsics({"Mystery": {"Ref": "X"}})


# ---------------------------------------------------------------------------------------------------------------------
# Hand-written configurations (the shapes of the ParallelCluster 3 User Guide's cluster configuration file)

SUBNET_B = "subnet-0fedcba9876543210"
SG = "sg-0123456789abcdef0"


def _block_queue(min_count: int = 2, max_count: int = 2, **extra: Any) -> dict[str, Any]:
    resource = {
        "Name": "p5en",
        "InstanceType": "p5en.48xlarge",
        "MinCount": min_count,
        "MaxCount": max_count,
        "Efa": {"Enabled": True, "GdrSupport": True},
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"},
    }
    return _queue("gpu", resource, **{"CapacityType": "CAPACITY_BLOCK", **extra})


VALID: dict[str, dict[str, Any]] = {
    "imex-slurm-settings": _cluster(
        Scheduling={
            "Scheduler": "slurm",
            "SlurmSettings": {"CustomSlurmSettings": [{"PrologFlags": "Alloc,NoHold"}, {"MessageTimeout": 240}]},
            "SlurmQueues": [_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1})],
        },
    ),
    "on-demand-cpu": _cluster(
        _queue("cpu", {"Name": "c7i", "InstanceType": "c7i.4xlarge", "MinCount": 0, "MaxCount": 10})
    ),
    "capacity-block-p5en-lustre": _cluster(
        _block_queue(PlacementGroup={"Enabled": False}),
        SharedStorage=[LUSTRE],
        Monitoring={"Logs": {"CloudWatch": {"Enabled": True, "RetentionInDays": 14}}, "Dashboards": {"CloudWatch": {}}},
        Tags=[{"Key": "team", "Value": "ml"}],
    ),
    "spot-efa-placement-group": _cluster(
        _queue(
            "spot",
            {"Name": "g6e", "InstanceType": "g6e.48xlarge", "MaxCount": 4, "Efa": {"Enabled": True}},
            CapacityType="SPOT",
            PlacementGroup={"Enabled": True},
        )
    ),
    "odcr-resource-group": _cluster(
        _queue(
            "odcr",
            {
                "Name": "p5",
                "InstanceType": "p5.48xlarge",
                "MinCount": 1,
                "MaxCount": 1,
                "Efa": {"Enabled": True, "GdrSupport": True},
                "CapacityReservationTarget": {
                    "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/g"
                },
            },
            PlacementGroup={"Enabled": False},
        )
    ),
    "gb200-ultraserver-block": _cluster(
        _queue(
            "gb200",
            {
                "Name": "nvl72",
                "InstanceType": "p6e-gb200.36xlarge",
                "MinCount": 18,
                "MaxCount": 18,
                "Efa": {"Enabled": True, "GdrSupport": True},
                "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"},
            },
            CapacityType="CAPACITY_BLOCK",
            CustomActions={
                "OnNodeConfigured": {"Script": "s3://bucket/imex.sh", "Args": ["--nodes", "18"]},
            },
            Iam={"S3Access": [{"BucketName": "bucket"}]},
        ),
        Image={"Os": "alinux2023", "CustomAmi": "ami-0123456789abcdef0"},
        # an arm64 head node beside arm64 compute nodes (InstanceArchitectureCompatibilityValidator)
        HeadNode={"InstanceType": "c7g.2xlarge", "Networking": {"SubnetId": SUBNET}, "Imds": {"Secured": True}},
    ),
    "login-nodes-and-security-groups": _cluster(
        _queue(
            "cpu",
            {"Name": "c7i", "InstanceType": "c7i.4xlarge", "MaxCount": 2},
            AdditionalSecurityGroups=[SG],
        ),
        LoginNodes={
            "Pools": [
                {
                    "Name": "login",
                    "Count": 1,
                    "InstanceType": "m7i.xlarge",
                    "Networking": {"SubnetIds": [SUBNET], "AdditionalSecurityGroups": [SG]},
                }
            ]
        },
    ),
}

# Rejected by ClusterSchema.load itself; the text is part of the schema's message.
SCHEMA_INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "unknown-capacity-type": (
        _cluster(_block_queue(CapacityType="RESERVED")),
        "Must be one of: CAPACITY_BLOCK, ONDEMAND, SPOT",
    ),
    "max-count-zero": (
        _cluster(_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 0})),
        "greater than or equal to 1",
    ),
    "negative-min-count": (
        _cluster(_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MinCount": -1, "MaxCount": 1})),
        "greater than or equal to 0",
    ),
    "reservation-id-and-group": (
        _cluster(
            _queue(
                "q",
                {
                    "Name": "c",
                    "InstanceType": "p5.48xlarge",
                    "MaxCount": 1,
                    "CapacityReservationTarget": {
                        "CapacityReservationId": "cr-0123456789abcdef0",
                        "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:1:group/g",
                    },
                },
            )
        ),
        "either Capacity Reservation ID or Capacity Reservation Resource Group ARN",
    ),
    "intrinsic-left-in-subnet": (
        _cluster(
            {
                "Name": "q",
                "Networking": {"SubnetIds": [{"Ref": "Subnet"}]},
                "ComputeResources": [{"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}],
            }
        ),
        "Not a valid string",
    ),
    "unknown-key": (
        _cluster(_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1, "EfaEnabled": True})),
        "Unknown field",
    ),
    "efa-not-boolean": (
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "p5.48xlarge", "MaxCount": 1, "Efa": {"Enabled": "sometimes"}})
        ),
        "Not a valid boolean",
    ),
    "fsx-id-with-settings": (
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            SharedStorage=[
                {**LUSTRE, "FsxLustreSettings": {"FileSystemId": "fs-0123456789abcdef0", "StorageCapacity": 1200}}
            ],
        ),
        "storage_capacity cannot be specified when an existing Lustre file system is used",
    ),
    "none-mount-dir": (
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            SharedStorage=[{**LUSTRE, "MountDir": "/NONE"}],
        ),
        "cannot be used as a shared directory",
    ),
    "security-groups-and-additional": (
        _cluster(
            _queue(
                "q",
                {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1},
                SecurityGroups=[SG],
                AdditionalSecurityGroups=[SG],
            )
        ),
        "SecurityGroups and AdditionalSecurityGroups can not be configured together",
    ),
    "lustre-settings-on-efs": (
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            SharedStorage=[{**LUSTRE, "StorageType": "Efs"}],
        ),
        "not appropriate to the StorageType Efs",
    ),
    "malformed-subnet": (
        _cluster(
            {
                "Name": "q",
                "Networking": {"SubnetIds": ["subnet-123"]},
                "ComputeResources": [{"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}],
            }
        ),
        "String does not match expected pattern",
    ),
}

# The schema accepts these; the offline semantic validators (no AWS call) reject them.
VALIDATOR_INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "capacity-block-min-below-max": (
        _cluster(_block_queue(min_count=1, max_count=2)),
        "Max count must be set to the same value of min count when using Capacity Block reservation.",
    ),
    "capacity-block-zero-nodes": (
        _cluster(_block_queue(min_count=0, max_count=0)),
        "greater than or equal to 1",  # MaxCount 0 is already a schema error
    ),
    "max-below-min": (
        _cluster(_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MinCount": 3, "MaxCount": 2})),
        "Max count must be greater than or equal to min count.",
    ),
    "efa-without-placement-group-setting": (
        _cluster(_queue("q", {"Name": "p5", "InstanceType": "p5.48xlarge", "MaxCount": 2, "Efa": {"Enabled": True}})),
        "must be explicit",
    ),
    # ParallelCluster owns Prolog (Prolog=/opt/slurm/etc/scripts/prolog.d/*): the IMEX prolog goes into that directory
    # instead, and only PrologFlags/MessageTimeout are set (slurm_settings_validator.py SLURM_SETTINGS_DENY_LIST).
    "custom-slurm-prolog": (
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            Scheduling={
                "Scheduler": "slurm",
                "SlurmSettings": {"CustomSlurmSettings": [{"Prolog": "/opt/imex/prolog.sh"}]},
                "SlurmQueues": [_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1})],
            },
        ),
        "Using the following custom Slurm settings at SlurmConf level is not allowed: Prolog",
    ),
}


@pytest.fixture(scope="module")
def hand_written_results() -> dict[str, dict[str, Any]]:
    names = [f"valid:{n}" for n in VALID] + [f"schema:{n}" for n in SCHEMA_INVALID]
    names += [f"validator:{n}" for n in VALIDATOR_INVALID]
    configs = (
        list(VALID.values()) + [c for c, _ in SCHEMA_INVALID.values()] + [c for c, _ in VALIDATOR_INVALID.values()]
    )
    schema_only = check_configs(configs)
    with_validators = check_configs(configs, offline_validators=True)
    return {
        **{f"{name}#schema": result for name, result in zip(names, schema_only, strict=True)},
        **{f"{name}#validators": result for name, result in zip(names, with_validators, strict=True)},
    }


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_configuration_passes_schema_and_offline_validators(hand_written_results: Any, name: Any) -> None:
    for mode in ("schema", "validators"):
        result = hand_written_results[f"valid:{name}#{mode}"]
        assert result["ok"], (mode, result)


@pytest.mark.parametrize("name", sorted(SCHEMA_INVALID))
def test_schema_rejects(hand_written_results: Any, name: Any) -> None:
    result = hand_written_results[f"schema:{name}#schema"]
    assert not result["ok"], result
    assert SCHEMA_INVALID[name][1] in json.dumps(result["errors"]), result["errors"]


@pytest.mark.parametrize("name", sorted(VALIDATOR_INVALID))
def test_offline_validators_reject_what_the_schema_lets_through(hand_written_results: Any, name: Any) -> None:
    result = hand_written_results[f"validator:{name}#validators"]
    assert not result["ok"], result
    assert VALIDATOR_INVALID[name][1] in error_text(result), result


@pytest.mark.parametrize("name", sorted(n for n in VALIDATOR_INVALID if n not in ("capacity-block-zero-nodes",)))
def test_schema_alone_accepts_validator_level_rules(hand_written_results: Any, name: Any) -> None:
    """Documents the split: these rules live in pcluster/validators, not in the schema."""
    assert hand_written_results[f"validator:{name}#schema"]["ok"]


def test_placement_group_on_capacity_block_is_only_a_warning() -> None:
    """PlacementGroupCapacityTypeValidator (ec2_validators.py) is a WARNING registered by the cluster: not a schema rule."""
    (result,) = check_configs([_cluster(_block_queue(PlacementGroup={"Enabled": True}))], offline_validators=True)
    assert result["ok"], result


def test_nothing_reaches_the_network(hand_written_results: Any) -> None:
    """The only AWS read is the reservation cache in SlurmClusterConfig.__init__, refused offline; no socket opens."""
    for result in hand_written_results.values():
        assert all(not call.startswith("socket") for call in result["aws_calls_blocked"]), result
    blocked = hand_written_results["valid:capacity-block-p5en-lustre#schema"]["aws_calls_blocked"]
    assert blocked == ["ec2.describe_capacity_reservations"]


def test_intrinsics_pass_after_replacement() -> None:
    config = _cluster(
        {
            "Name": "gpu",
            "CapacityType": "CAPACITY_BLOCK",
            "Networking": {"SubnetIds": [{"Ref": "Subnet"}], "PlacementGroup": {"Enabled": False}},
            "ComputeResources": [
                {
                    "Name": "p5en",
                    "InstanceType": "p5en.48xlarge",
                    "MinCount": 2,
                    "MaxCount": 2,
                    "Efa": {"Enabled": True, "GdrSupport": True},
                    "CapacityReservationTarget": {"CapacityReservationId": {"Fn::ImportValue": "Block"}},
                }
            ],
        },
        SharedStorage=[{**LUSTRE, "FsxLustreSettings": {"FileSystemId": {"Fn::GetAtt": ["Fs", "Id"]}}}],
    )
    raw, replaced = check_configs([config, replace_intrinsics(config)], offline_validators=True)
    assert not raw["ok"]
    assert replaced["ok"], replaced


def test_yaml_on_stdin_and_usage() -> None:
    python = require_pcluster()
    text = "HeadNode: {}\n"
    done = subprocess.run(
        [str(python), str(VALIDATOR)], input=text, capture_output=True, text=True, timeout=TIMEOUT_S, env=_offline_env()
    )
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["source"] == "-" and "Scheduling" in result["errors"]


# ---------------------------------------------------------------------------------------------------------------------
# (b) Every configuration fmconstructs.parallelcluster generates passes the schema (and the offline validators)


BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")
GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/odcr"


def _head(scene: Scene, **extra: Any) -> HeadNode:
    return HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a, **extra)


def _pc(scene: Scene, *queues: SlurmQueue, **props: Any) -> ParallelCluster:
    props.setdefault("cluster_name", "train")
    # the head node's architecture is the compute nodes' (c7g.2xlarge beside p6e-gb200)
    props.setdefault("head_node", HeadNode(instance_type=head_type_for(list(queues)), subnet=scene.subnet_a))
    return ParallelCluster(scene.stack, "Cluster", queues=list(queues), **props)


def _one(scene: Scene, resource: ComputeResource, **queue: Any) -> SlurmQueue:
    return SlurmQueue(name=queue.pop("name", "gpu"), subnets=[scene.subnet_a], compute_resources=[resource], **queue)


def _case_block(scene: Scene) -> ParallelCluster:
    return _pc(scene, _one(scene, ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)))


def _case_created_network_lustre(scene: Scene) -> ParallelCluster:
    """A VPC, a security group and a Lustre file system created in the stack: every id is an intrinsic."""
    vpc = ec2.Vpc(scene.stack, "NewVpc", max_azs=2, nat_gateways=0)
    subnet = vpc.isolated_subnets[0] if vpc.isolated_subnets else vpc.public_subnets[0]
    group = ec2.SecurityGroup(scene.stack, "Nodes", vpc=vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=vpc, storage_capacity_gib=1200)
    queue = SlurmQueue(
        name="gpu",
        subnets=[subnet],
        compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2)],
        security_groups=[group],
    )
    return _pc(
        scene,
        queue,
        head_node=HeadNode(instance_type="c7i.2xlarge", subnet=subnet, security_groups=[group]),
        shared_storage=[SharedLustre(file_system=fs, name="scratch", mount_point="/scratch")],
        node_security_group=group,
    )


def _case_login_tags_monitoring(scene: Scene) -> ParallelCluster:
    action = CustomAction(script="s3://fm-bootstrap/head.sh", args=["--role", "head"])
    head = _head(scene, key_name="ops", on_node_configured=action, s3_read_buckets=["fm-bootstrap"], imds_secured=True)
    queue = SlurmQueue(
        name="cpu",
        subnets=[scene.subnet_a, scene.subnet_b],
        compute_resources=[
            ComputeResource(name="small", instance_type="c7i.4xlarge", max_nodes=8),
            ComputeResource(name="large", instance_type="c7i.48xlarge", min_nodes=1, max_nodes=2),
        ],
        on_node_start=CustomAction(script="https://example.com/start.sh"),
        s3_read_buckets=["fm-bootstrap"],
        custom_slurm_settings={"Weight": 10},
    )
    return _pc(
        scene,
        queue,
        head_node=head,
        login_nodes=[LoginNodePool(name="login", instance_type="c7i.xlarge", subnet=scene.subnet_a, nodes=2)],
        monitoring=Monitoring(log_retention_days=30, dashboards=False, detailed_monitoring=True),
        tags={"team": "ml", "cost-center": "42"},
    )


def _case_odcr_id(scene: Scene) -> ParallelCluster:
    odcr = CapacityReservation(reservation_id="cr-0fedcba9876543210", instance_count=2, zone="us-east-1a")
    return _pc(scene, _one(scene, ComputeResource(name="p5", instance_type="p5.48xlarge", capacity=odcr)))


def _case_odcr_group(scene: Scene) -> ParallelCluster:
    odcr = CapacityReservation(resource_group_arn=GROUP_ARN)
    return _pc(scene, _one(scene, ComputeResource(name="p5", instance_type="p5.48xlarge", capacity=odcr, max_nodes=2)))


def _case_spot(scene: Scene) -> ParallelCluster:
    resource = ComputeResource(name="g6e", instance_type="g6e.48xlarge", max_nodes=4)
    return _pc(scene, _one(scene, resource, capacity_type=CapacityType.SPOT))


def _case_gb200(scene: Scene) -> ParallelCluster:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a")
    imex = CustomAction(script="s3://fm-bootstrap/imex.sh")
    resource = ComputeResource(name="nvl72", instance_type="p6e-gb200.36xlarge", capacity=block)
    return _pc(scene, _one(scene, resource, on_node_configured=imex, s3_read_buckets=["fm-bootstrap"]))


def _case_amis(scene: Scene) -> ParallelCluster:
    queue_ami = cdk.Fn.import_value("QueueAmi")
    resource = ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2)
    return _pc(scene, _one(scene, resource, custom_ami=queue_ami), custom_ami="ami-0123456789abcdef0")


def _case_efa_off_and_override(scene: Scene) -> ParallelCluster:
    resource = ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2, efa=False, placement_group=False)
    cluster = _pc(scene, _one(scene, resource))
    cluster.add_override("Scheduling.SlurmQueues.0.JobExclusiveAllocation", True)
    cluster.add_override("Scheduling.SlurmSettings.ScaledownIdletime", 5)
    return cluster


def _case_two_queues(scene: Scene) -> ParallelCluster:
    return _pc(
        scene,
        _one(scene, ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK), name="block"),
        _one(scene, ComputeResource(name="c7i", instance_type="c7i.4xlarge", max_nodes=4), name="cpu"),
    )


def _case_head_login_bootstraps(scene: Scene) -> ParallelCluster:
    """Node bootstraps on the head node (every event the schema allows), a login pool and a queue (OnNodeStart)."""
    from fmconstructs.bootstrap import NodeBootstrap

    queue = _one(scene, ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK))
    login = LoginNodePool(name="login", instance_type="c7i.xlarge", subnet=scene.subnet_a)
    cluster = _pc(scene, queue, login_nodes=[login])
    for index, event in enumerate(CustomActionEvent):
        boot = NodeBootstrap(scene.stack, f"Head{index}", name=f"head-{index}")
        boot.add_commands(f"echo head {index}")
        cluster.add_head_node_bootstrap(boot, event=event)
        pool_boot = NodeBootstrap(scene.stack, f"Login{index}", name=f"login-{index}")
        pool_boot.add_commands(f"echo login {index}")
        cluster.add_login_node_bootstrap(pool_boot, event=event)
    queue_boot = NodeBootstrap(scene.stack, "QueueStart", name="queue-start")
    queue_boot.add_commands("echo queue")
    cluster.add_node_bootstrap(queue_boot, event=CustomActionEvent.ON_NODE_START)
    return cluster


def _case_head_pieces_composed(scene: Scene) -> ParallelCluster:
    """The head node's events composed from pieces (issue 29): its own OnNodeStart, the Slurm topology refresher and
    the job mapping at OnNodeStart (a Sequence of three), node health's prolog at OnNodeConfigured (one script)."""
    from fmconstructs.health import NodeHealthOptions
    from fmconstructs.observability.slurm_job_mapping import enable_parallelcluster_job_mapping

    head = HeadNode(
        instance_type="c7i.2xlarge", subnet=scene.subnet_a, on_node_start=CustomAction(script="s3://b/start.sh")
    )
    queue = _one(scene, ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK))
    cluster = _pc(scene, queue, head_node=head)
    cluster.enable_slurm_topology()
    enable_parallelcluster_job_mapping(cluster, event=CustomActionEvent.ON_NODE_START)
    cluster.enable_node_health(NodeHealthOptions())
    return cluster


def _case_gb200_imex(scene: Scene) -> ParallelCluster:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a")
    resource = ComputeResource(name="nvl72", instance_type="p6e-gb200.36xlarge", capacity=block)
    cluster = _pc(scene, _one(scene, resource, job_exclusive_allocation=True))
    cluster.enable_imex()
    return cluster


UNIT_CASES = {
    "head-login-bootstraps": _case_head_login_bootstraps,
    "gb200-imex": _case_gb200_imex,
    "head-pieces-composed": _case_head_pieces_composed,
    "capacity-block-p5en": _case_block,
    "created-network-and-lustre": _case_created_network_lustre,
    "login-tags-monitoring-actions": _case_login_tags_monitoring,
    "odcr-by-id": _case_odcr_id,
    "odcr-by-resource-group": _case_odcr_group,
    "spot-g6e": _case_spot,
    "gb200-ultraserver-block": _case_gb200,
    "custom-amis": _case_amis,
    "efa-off-and-overrides": _case_efa_off_and_override,
    "two-queues": _case_two_queues,
}

# Every EFA type of the catalog as an On-Demand compute resource (EFA, GDR and placement group from the catalog).
EFA_TYPES = sorted(spec.instance_type for spec in CATALOG if spec.maximum_efa_interfaces > 0)
# aws-parallelcluster 3.16.1 ClusterSchema ImageSchema.os: alinux2023, ubuntu2204, ubuntu2404, rhel8, rocky8, rhel9,
# rocky9 (its own error message, seen in test_schema_rejects output).
OS_REJECTED_BY_3_16_1 = {"alinux2", "ubuntu2004"}


def _generated() -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}
    for name, build in UNIT_CASES.items():
        configs[f"case:{name}"] = build(new_scene()).to_dict()
    for instance_type in EFA_TYPES:
        scene = new_scene()
        resource = ComputeResource(name="gpu", instance_type=instance_type, max_nodes=2)
        configs[f"efa-type:{instance_type}"] = _pc(scene, _one(scene, resource)).to_dict()
    for os_value in OperatingSystem:
        scene = new_scene()
        resource = ComputeResource(name="cpu", instance_type="c7i.large")
        configs[f"os:{os_value.value}"] = _pc(scene, _one(scene, resource, name="cpu"), os=os_value).to_dict()
    return configs


@pytest.fixture(scope="module")
def generated_results() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each generated configuration (intrinsics replaced) and its result with the schema and offline validators."""
    configs = {name: replace_intrinsics(config) for name, config in _generated().items()}
    results = check_configs(list(configs.values()), offline_validators=True)
    return {name: (configs[name], result) for name, result in zip(configs, results, strict=True)}


@pytest.mark.parametrize("name", sorted(UNIT_CASES))
def test_generated_configuration_passes_parallelcluster_schema(generated_results: Any, name: Any) -> None:
    config, result = generated_results[f"case:{name}"]
    assert result["ok"], (result, config)
    assert not [f for f in result["validator_failures"] if f["level"] == "ERROR"]


@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_every_efa_type_of_the_catalog_passes(generated_results: Any, instance_type: Any) -> None:
    config, result = generated_results[f"efa-type:{instance_type}"]
    assert result["ok"], (result, config)
    resource = config["Scheduling"]["SlurmQueues"][0]["ComputeResources"][0]
    assert resource["Efa"]["Enabled"] is True
    # EfaPlacementGroupValidator ran on it: an EFA queue names its placement group explicitly.
    assert resource["Networking"]["PlacementGroup"] == {"Enabled": True}
    assert result["validator_failures"] == []


@pytest.mark.parametrize(
    "os_value",
    [
        pytest.param(
            o.value,
            marks=pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason=f"fmconstructs offers {o.value}, aws-parallelcluster 3.16.1's schema no longer accepts it",
            ),
        )
        if o.value in OS_REJECTED_BY_3_16_1
        else o.value
        for o in OperatingSystem
    ],
)
def test_every_operating_system_passes(generated_results: Any, os_value: Any) -> None:
    _, result = generated_results[f"os:{os_value}"]
    assert result["ok"], result


def test_generated_configurations_had_intrinsics_to_replace() -> None:
    """The created-network case really exercises the placeholders (Ref/GetAtt of subnet, group, file system)."""
    raw = _case_created_network_lustre(new_scene()).to_dict()
    text = json.dumps(raw)
    assert '"Ref"' in text or '"Fn::GetAtt"' in text
    replaced = json.dumps(replace_intrinsics(raw))
    assert '"Ref"' not in replaced and "Fn::" not in replaced


# ---------------------------------------------------------------------------------------------------------------------
# Agreement: fmconstructs rejects at construction what ParallelCluster rejects (schema or offline validators)


def _with(**resource: Any) -> dict[str, Any]:
    base = {"Name": "gpu", "InstanceType": "p5.48xlarge", "MinCount": 0, "MaxCount": 2}
    return _cluster(_queue("gpu", {**base, **resource}, PlacementGroup={"Enabled": False}))


AGREEMENT: dict[str, tuple[Any, dict[str, Any], str]] = {
    "capacity-block-min-below-max": (
        lambda s: ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK, min_nodes=2, max_nodes=4),
        _cluster(_block_queue(min_count=2, max_count=4)),
        "Max count must be set to the same value of min count when using Capacity Block reservation.",
    ),
    "max-nodes-zero": (
        lambda s: ComputeResource(name="c", instance_type="c7i.large", max_nodes=0),
        _with(MaxCount=0),
        "greater than or equal to 1",
    ),
    "min-nodes-negative": (
        lambda s: ComputeResource(name="c", instance_type="c7i.large", min_nodes=-1),
        _with(MinCount=-1),
        "greater than or equal to 0",
    ),
    "max-below-min-catalog-type": (
        lambda s: ComputeResource(name="p5", instance_type="p5.48xlarge", min_nodes=3, max_nodes=2),
        _with(MinCount=3, MaxCount=2),
        "Max count must be greater than or equal to min count.",
    ),
    "unknown-capacity-type": (
        lambda s: _one(s, ComputeResource(name="c", instance_type="c7i.large"), capacity_type="RESERVED"),
        _cluster(_block_queue(CapacityType="RESERVED")),
        "Must be one of: CAPACITY_BLOCK, ONDEMAND, SPOT",
    ),
    "reservation-id-and-group": (
        lambda s: ComputeResource(
            name="p5",
            instance_type="p5.48xlarge",
            capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0", resource_group_arn=GROUP_ARN),
        ),
        _with(
            CapacityReservationTarget={
                "CapacityReservationId": "cr-0123456789abcdef0",
                "CapacityReservationResourceGroupArn": GROUP_ARN,
            }
        ),
        "either Capacity Reservation ID or Capacity Reservation Resource Group ARN",
    ),
    "malformed-custom-ami": (
        lambda s: _one(s, ComputeResource(name="c", instance_type="c7i.large"), custom_ami="ami-123"),
        _cluster(
            _queue("gpu", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}, Image={"CustomAmi": "ami-123"})
        ),
        "String does not match expected pattern",
    ),
    "log-retention-not-offered": (
        lambda s: Monitoring(log_retention_days=10),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            Monitoring={"Logs": {"CloudWatch": {"Enabled": True, "RetentionInDays": 10}}},
        ),
        "Must be one of: 0, 1, 3, 5, 7, 14",
    ),
    "s3-bucket-name": (
        lambda s: _head(s, s3_read_buckets=["Bad_Bucket"]),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            HeadNode={
                "InstanceType": "c7i.large",
                "Networking": {"SubnetId": SUBNET},
                "Iam": {"S3Access": [{"BucketName": "Bad_Bucket"}]},
            },
        ),
        "String does not match expected pattern",
    ),
    "login-pool-negative-count": (
        lambda s: LoginNodePool(name="login", instance_type="c7i.large", subnet=s.subnet_a, nodes=-1),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            LoginNodes={
                "Pools": [
                    {"Name": "login", "Count": -1, "InstanceType": "c7i.large", "Networking": {"SubnetIds": [SUBNET]}}
                ]
            },
        ),
        "greater than or equal to 0",
    ),
    "reserved-tag-prefix": (
        lambda s: _pc(
            s,
            _one(s, ComputeResource(name="c", instance_type="c7i.large"), name="cpu"),
            tags={"parallelcluster:owner": "x"},
        ),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            Tags=[{"Key": "parallelcluster:owner", "Value": "x"}],
        ),
        "The tag key prefix 'parallelcluster:' is reserved",
    ),
    # Found by this check: fmconstructs accepted these until fc5fbe7.
    "max-below-min-non-catalog-type": (
        lambda s: ComputeResource(name="c", instance_type="c7i.large", min_nodes=3, max_nodes=2),
        _cluster(_queue("q", {"Name": "c", "InstanceType": "c7i.large", "MinCount": 3, "MaxCount": 2})),
        "Max count must be greater than or equal to min count.",
    ),
    "malformed-subnet-id": (
        lambda s: SlurmQueue(
            name="q",
            subnets=[
                ec2.Subnet.from_subnet_attributes(
                    s.stack, "Bad", subnet_id="subnet-123", availability_zone="us-east-1a"
                )
            ],
            compute_resources=[ComputeResource(name="c", instance_type="c7i.large")],
        ),
        _cluster(
            {
                "Name": "q",
                "Networking": {"SubnetIds": ["subnet-123"]},
                "ComputeResources": [{"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}],
            }
        ),
        "String does not match expected pattern",
    ),
    "queue-custom-slurm-oversubscribe": (
        lambda s: _one(
            s,
            ComputeResource(name="c", instance_type="c7i.large"),
            custom_slurm_settings={"OverSubscribe": "EXCLUSIVE"},
        ),
        _cluster(
            _queue(
                "q",
                {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1},
                CustomSlurmSettings={"OverSubscribe": "EXCLUSIVE"},
            )
        ),
        "Using the following custom Slurm settings at Queue level is not allowed: OverSubscribe",
    ),
    "malformed-security-group-id": (
        lambda s: _head(s, security_groups=[ec2.SecurityGroup.from_security_group_id(s.stack, "Bad", "sg-12")]),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 1}),
            HeadNode={
                "InstanceType": "c7i.large",
                "Networking": {"SubnetId": SUBNET, "AdditionalSecurityGroups": ["sg-12"]},
            },
        ),
        "String does not match expected pattern",
    ),
}

# fmconstructs rejects these; ParallelCluster's check is a validator that reads AWS (or is registered next to AWS
# reads), so it cannot be shown offline. Source of ParallelCluster's rule in the comment.
FMCONSTRUCTS_ONLY: dict[str, Any] = {
    # validators/cluster_validators.py EfaValidator (DescribeInstanceTypes: is_efa_supported)
    "efa-on-type-without-efa": lambda s: ComputeResource(name="c", instance_type="c7i.large", efa=True),
    # validators/cluster_validators.py NameValidator (registered by the cluster, whose registration reads EC2)
    "uppercase-queue-name": lambda s: _one(s, ComputeResource(name="c", instance_type="c7i.large"), name="GPU"),
    # validators/s3_validators.py UrlValidator (reads the URL)
    "ftp-script": lambda s: CustomAction(script="ftp://example.com/a.sh"),
    # validators/ec2_validators.py CapacityTypeValidator (DescribeInstanceTypes: supported usage classes)
    "cpu-type-on-capacity-block": lambda s: ComputeResource(name="c", instance_type="c7i.large", capacity=BLOCK),
}


@pytest.fixture(scope="module")
def agreement_results() -> dict[str, dict[str, Any]]:
    table = AGREEMENT
    results = check_configs([raw for _, raw, _ in table.values()], offline_validators=True)
    return dict(zip(table, results, strict=True))


@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_fmconstructs_rejects_what_parallelcluster_rejects(agreement_results: Any, name: Any) -> None:
    build, _, message = AGREEMENT[name]
    with pytest.raises(FmValidationError):
        build(new_scene())
    result = agreement_results[name]
    assert not result["ok"], result
    assert message in error_text(result), result


@pytest.mark.parametrize("name", sorted(FMCONSTRUCTS_ONLY))
def test_fmconstructs_rejects_what_only_aws_validators_check(name: Any) -> None:
    with pytest.raises(FmValidationError):
        FMCONSTRUCTS_ONLY[name](new_scene())


# ---------------------------------------------------------------------------------------------------------------------
# The example stacks: the ClusterConfiguration in each synthesized template and cluster.to_dict() pass


def _parallel_clusters(root: Construct) -> list[ParallelCluster]:
    return [c for c in root.node.find_all() if isinstance(c, ParallelCluster)]


@pytest.fixture(scope="module")
def example_configs(example_stacks: dict[str, cdk.Stack]) -> dict[str, dict[str, Any]]:
    """Both ParallelCluster examples, and any ParallelCluster in the example app (examples/app.py build; the session's
    ``example_stacks``)."""
    from examples.parallelcluster_stacks import ParallelClusterGb200Stack, ParallelClusterP5enStack

    app = new_app()
    stacks = [
        ParallelClusterP5enStack(app, "FmParallelClusterP5en"),
        ParallelClusterGb200Stack(app, "FmParallelClusterGb200"),
    ]
    stacks += [s for s in example_stacks.values() if _parallel_clusters(s)]
    configs: dict[str, dict[str, Any]] = {}
    for stack in stacks:
        clusters = _parallel_clusters(stack)
        assert clusters, stack.stack_name
        for cluster in clusters:
            configs[f"{stack.stack_name}/{cluster.node.path}:to_dict"] = cluster.to_dict()
        template = Template.from_stack(stack).find_resources("Custom::PclusterCluster")
        for logical_id, resource in template.items():
            configs[f"{stack.stack_name}/{logical_id}:template"] = resource["Properties"]["ClusterConfiguration"]
    return configs


@pytest.fixture(scope="module")
def example_results(example_configs: Any) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    configs = {name: replace_intrinsics(config) for name, config in example_configs.items()}
    results = check_configs(list(configs.values()), offline_validators=True)
    return {name: (configs[name], result) for name, result in zip(configs, results, strict=True)}


def test_both_examples_are_checked(example_configs: Any) -> None:
    stacks = {name.split("/", 1)[0] for name in example_configs}
    assert {"FmParallelClusterP5en", "FmParallelClusterGb200"} <= stacks
    assert any(name.endswith(":template") for name in example_configs)


def test_example_configurations_pass_parallelcluster_schema(example_results: Any) -> None:
    failures = {name: result for name, (_, result) in example_results.items() if not result["ok"]}
    assert not failures, failures
    for name, (_, result) in example_results.items():
        assert not [f for f in result["validator_failures"] if f["level"] == "ERROR"], name


def test_example_gpu_queues_keep_catalog_efa_and_capacity_targets(example_results: Any) -> None:
    for name, (config, _) in example_results.items():
        for queue in config["Scheduling"]["SlurmQueues"]:
            assert queue["CapacityType"] == "CAPACITY_BLOCK", name
            for resource in queue["ComputeResources"]:
                assert resource["Efa"] == {"Enabled": True, "GdrSupport": True}, name
                assert resource["MinCount"] == resource["MaxCount"] > 0, name
                assert resource["CapacityReservationTarget"]["CapacityReservationId"].startswith("cr-"), name
