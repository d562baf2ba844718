"""PcsCluster: resource properties, the security group PCS documents, settings validation, the instance profile."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.pcs import (
    DEFAULT_SLURM_VERSION,
    PCS_IAM_PATH,
    AccountingMode,
    ClusterSetting,
    ControllerSize,
    NodeGroupSetting,
    PcsCluster,
    SlurmVersion,
)

from tests.conftest import new_scene

CLUSTER = "AWS::PCS::Cluster"


@pytest.fixture(scope="module")
def built() -> tuple[PcsCluster, Template]:
    scene = new_scene()
    cluster = PcsCluster(
        scene.stack,
        "Cluster",
        vpc=scene.vpc,
        size=ControllerSize.MEDIUM,
        accounting=AccountingMode.STANDARD,
        accounting_purge_time_days=30,
        scale_down_idle_time=cdk.Duration.minutes(10),
        slurm_settings={ClusterSetting.SELECT_TYPE_PARAMETERS: "CR_Core_Memory"},
        cluster_name="training",
    )
    bucket = s3.Bucket.from_bucket_name(scene.stack, "Data", "example-data")
    cluster.instance_profile.grant_read_bucket(bucket, prefix="datasets")
    cluster.instance_profile.grant_read_write_bucket(bucket, prefix="checkpoints/")
    return cluster, Template.from_stack(scene.stack)


def test_slurm_versions_are_those_pcs_accepts():
    # botocore PCS model, SchedulerRequest.version: "Valid Values: 24.11 | 25.05 | 25.11 | 26.05".
    assert [v.value for v in SlurmVersion] == ["24.11", "25.05", "25.11", "26.05"]


def test_default_slurm_version_is_pinned_to_25_11_not_the_newest():
    # A default that followed the newest version would upgrade deployed clusters in place, away from their AMIs.
    assert DEFAULT_SLURM_VERSION is SlurmVersion.V25_11
    assert not DEFAULT_SLURM_VERSION.at_least(SlurmVersion.V26_05)
    assert _make().slurm_version is SlurmVersion.V25_11


@pytest.mark.parametrize("version", [SlurmVersion.V26_05])
def test_slurm_26_05_is_accepted(version):
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, slurm_version=version, enable_imex=True)
    assert cluster.slurm_version is SlurmVersion.V26_05
    Template.from_stack(scene.stack).has_resource_properties(
        CLUSTER, {"Scheduler": {"Type": "SLURM", "Version": "26.05"}}
    )


def test_cluster_properties(built):
    _, template = built
    template.has_resource_properties(
        CLUSTER,
        {
            "Name": "training",
            "Size": "MEDIUM",
            "Scheduler": {"Type": "SLURM", "Version": "25.11"},
            "Networking": {
                "SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1"],
                "SecurityGroupIds": [Match.object_like({"Fn::GetAtt": Match.any_value()})],
            },
            "SlurmConfiguration": {
                "Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": 30},
                "ScaleDownIdleTimeInSeconds": 600,
                "SlurmCustomSettings": [{"ParameterName": "SelectTypeParameters", "ParameterValue": "CR_Core_Memory"}],
            },
        },
    )


def test_security_group_has_the_rules_pcs_documents(built):
    # PCS API reference "Networking": inbound all from self; outbound all to self and to 0.0.0.0/0.
    _, template = built
    template.has_resource_properties(
        "AWS::EC2::SecurityGroup",
        {
            "GroupDescription": Match.string_like_regexp("AWS PCS cluster"),
            "SecurityGroupEgress": [Match.object_like({"CidrIp": "0.0.0.0/0", "IpProtocol": "-1"})],
        },
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "-1", "Description": Match.string_like_regexp("^PCS: all traffic from cluster members")},
    )
    # Outbound to the group itself is part of the all-traffic rule to 0.0.0.0/0.
    assert template.find_resources("AWS::EC2::SecurityGroupEgress") == {}


def test_instance_profile_uses_the_pcs_path_and_generated_names(built):
    _, template = built
    for resource_type in ("AWS::IAM::Role", "AWS::IAM::InstanceProfile"):
        resources = template.find_resources(resource_type)
        assert len(resources) == 1
        props = next(iter(resources.values()))["Properties"]
        assert props["Path"] == PCS_IAM_PATH == "/aws-pcs/"
        assert "RoleName" not in props and "InstanceProfileName" not in props


def test_register_permission_is_scoped_to_the_cluster(built):
    _, template = built
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "RegisterWithCluster",
                            "Effect": "Allow",
                            "Action": "pcs:RegisterComputeNodeGroupInstance",
                            "Resource": {"Fn::GetAtt": [Match.string_like_regexp("^Cluster"), "Arn"]},
                        }
                    ]
                )
            }
        },
    )


def test_node_registration_is_never_granted_on_every_resource(built):
    # Service Authorization Reference (pcs): RegisterComputeNodeGroupInstance has resource type cluster*, so the
    # statement names the cluster's ARN; no statement of the node role may fall back to the PCS guide's "*".
    _, template = built
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "pcs:RegisterComputeNodeGroupInstance" in json.dumps(statement["Action"]):
                assert statement["Resource"] != "*" and "Fn::GetAtt" in statement["Resource"]


def test_ssm_managed_instance_core_for_operators(built):
    _, template = built
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "ManagedPolicyArns": [
                {"Fn::Join": ["", Match.array_with([":iam::aws:policy/AmazonSSMManagedInstanceCore"])]}
            ]
        },
    )


def test_no_wildcard_actions(built):
    _, template = built
    actions: list[str] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            action = statement["Action"]
            actions += action if isinstance(action, list) else [action]
    assert actions, "expected policy statements"
    assert [a for a in actions if "*" in a] == []
    assert set(actions) == {
        "pcs:RegisterComputeNodeGroupInstance",
        "s3:GetObject",
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
    }


def test_bucket_grants_are_limited_to_their_prefix(built):
    _, template = built
    text = json.dumps(template.to_json())
    assert "/datasets/*" in text and "/checkpoints/*" in text
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Action": "s3:ListBucket", "Condition": {"StringLike": {"s3:prefix": ["datasets/*"]}}}
                        )
                    ]
                )
            }
        },
    )


# --- validation: every rule, one message each ------------------------------------------------------------------------


def _make(**props: object) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["23.11", "24.05", "26.11", "25.5", "25.11\n", 25.11])
def test_rejects_versions_pcs_does_not_accept(version):
    with pytest.raises(
        FmTypeError,
        match=r"slurm_version must be a SlurmVersion \(SlurmVersion.V24_11, SlurmVersion.V25_05, SlurmVersion.V25_11, "
        r"SlurmVersion.V26_05: the versions PCS accepts\)",
    ):
        _make(slurm_version=version)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"size": "SMALL"}, r"size must be a ControllerSize \(ControllerSize.SMALL, .*got 'SMALL'"),
        ({"accounting": "STANDARD"}, r"accounting must be an? AccountingMode \(AccountingMode.STANDARD"),
        ({"accounting_purge_time_days": 30}, r"accounting_purge_time_days must be None unless accounting is STANDARD"),
        (
            {"accounting": AccountingMode.STANDARD, "accounting_purge_time_days": 10001},
            r"accounting_purge_time_days must be at most 10000, got 10001",
        ),
        ({"scale_down_idle_time": cdk.Duration.millis(500)}, r"scale_down_idle_time must be a whole number of seconds"),
        ({"cluster_name": "1cluster"}, r"cluster_name must be 3-40 characters: a letter, then letters, digits"),
        ({"cluster_name": "a" * 41}, r"cluster_name must be 3-40 characters: a letter, then letters, digits"),
        ({"cluster_name": "ab"}, r"cluster_name must be 3-40 characters"),
        ({"cluster_name": "training\n"}, r"cluster_name must be 3-40 characters"),
        (
            {"accounting": AccountingMode.STANDARD, "accounting_purge_time_days": 0},
            r"accounting_purge_time_days must be -1 \(never purge\) or 1 to 10000 days \(0 is not valid\), got 0",
        ),
        ({"scale_down_idle_time": cdk.Duration.seconds(10_000_001)}, r"scale_down_idle_time must be at most 10000000"),
        (
            {"slurm_settings": {"TopologyPlugin": "topology/block"}},
            r"slurm_settings name must be a ClusterSetting or a name on the PCS cluster list \(PCS User Guide "
            r"slurm-custom-settings-cluster: AccountingStorageEnforce, .*\), got 'TopologyPlugin'",
        ),
        (
            {"slurm_settings": {NodeGroupSetting.WEIGHT: "1"}},
            r"slurm_settings name must be a ClusterSetting .*got <NodeGroupSetting.WEIGHT",
        ),
        ({"slurm_settings": {ClusterSetting.PROLOG: "prolog.sh"}}, r"slurm_settings\[Prolog\] must be absolute paths"),
        ({"slurm_settings": {ClusterSetting.EPILOG: ""}}, r"slurm_settings\[Epilog\] must be one non-empty line"),
        (
            {"slurm_settings": {ClusterSetting.SELECT_TYPE_PARAMETERS: "CR_Core\nFoo=1"}},
            r"slurm_settings\[SelectTypeParameters\] must be one non-empty line",
        ),
        (
            {"slurm_settings": {ClusterSetting.ACCOUNTING_STORAGE_ENFORCE: "limits"}},
            r"slurm_settings\[AccountingStorageEnforce\] must be unset unless accounting is STANDARD",
        ),
        (
            {"enable_imex": True, "slurm_version": SlurmVersion.V24_11},
            r"slurm_version must be 25.05 or later when enable_imex is True .*got '24.11'",
        ),
        (
            {"enable_imex": True, "slurm_settings": {ClusterSetting.PROLOG: "/opt/prolog.sh"}},
            r"slurm_settings\[Prolog\] must be unset when enable_imex is True",
        ),
    ],
)
def test_rejects_invalid_props(props, message):
    with pytest.raises(FmValidationError, match=message):
        _make(**props)


def test_accepts_comma_separated_prolog_paths():
    cluster = _make(slurm_settings={ClusterSetting.PROLOG: "/opt/a.sh,/opt/b.sh"})
    assert cluster.slurm_settings[ClusterSetting.PROLOG] == "/opt/a.sh,/opt/b.sh"


@pytest.mark.parametrize("prefix", ["datasets\n", "a\x00b"])
def test_rejects_bad_bucket_prefix(prefix):
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    bucket = s3.Bucket.from_bucket_name(scene.stack, "Data", "example-data")
    with pytest.raises(FmValidationError, match=r"^prefix must be '' or an S3 key prefix"):
        cluster.instance_profile.grant_read_bucket(bucket, prefix=prefix)
