"""`fmc stack-policy`: a CloudFormation stack policy generated from the assembly that allows every update and denies
Update:Replace and Update:Delete on exactly the stateful resources, by logical id (CloudFormation User Guide,
"Prevent updates to stack resources")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from click.testing import CliRunner, Result

from fmconstructs.cli.changes import STATEFUL_TYPES
from fmconstructs.cli.main import cli
from fmconstructs.cli.stack_policy import ALLOW_ALL, STACK_POLICY_MAX_BYTES, stack_policy
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.storage import LustreFileSystem

from tests.conftest import ENV

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
ALLOW = {"Effect": "Allow", "Action": "Update:*", "Principal": "*", "Resource": "*"}


@pytest.fixture(scope="module")
def cdk_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two stacks: "Platform" (file system + repository, bucket, key, PCS cluster, group, queue, security groups,
    roles, a launch template) and "Empty" (a security group only)."""
    out = tmp_path_factory.mktemp("policy") / "cdk.out"
    app = cdk.App(
        outdir=str(out), builtin_cloud_formation_validation=False, context={"aws:cdk:enable-path-metadata": True}
    )
    stack = cdk.Stack(app, "Platform", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    fs = LustreFileSystem(stack, "FileSystem", vpc=vpc, storage_capacity_gib=2400, throughput_mbps_per_tib=250)
    fs.add_data_repository("Data", bucket="fmc-policy-training-data", file_system_path="/data")
    s3.Bucket(stack, "Checkpoints")
    kms.Key(stack, "Key", enable_key_rotation=True)
    cluster = PcsCluster(stack, "Cluster", vpc=vpc)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2).add_queue("Q")
    empty = cdk.Stack(app, "Empty", env=ENV)
    ec2.SecurityGroup(
        empty, "Group", vpc=ec2.Vpc.from_vpc_attributes(empty, "Vpc", vpc_id="vpc-1", availability_zones=["us-east-1a"])
    )
    app.synth()
    return out


def _template(cdk_out: Path, stack: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((cdk_out / f"{stack}.template.json").read_text())
    return data


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["stack-policy", *[str(a) for a in args]])


def _policy(cdk_out: Path, *args: str) -> dict[str, Any]:
    result = _run(cdk_out, *args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _stateful_ids(template: dict[str, Any], *, exclude: str = "^$") -> list[str]:
    import re

    return sorted(
        f"LogicalResourceId/{lid}"
        for lid, r in template["Resources"].items()
        if r["Type"] in STATEFUL_TYPES and not re.search(exclude, r["Metadata"]["aws:cdk:path"])
    )


def test_allows_every_update_and_denies_replace_and_delete_on_exactly_the_stateful_resources(cdk_out):
    policy = _policy(cdk_out, "--stack", "Platform")
    allow, deny = policy["Statement"]
    assert allow == ALLOW
    assert (deny["Effect"], deny["Action"], deny["Principal"]) == ("Deny", ["Update:Replace", "Update:Delete"], "*")
    template = _template(cdk_out, "Platform")
    assert deny["Resource"] == _stateful_ids(template)
    denied_types = {template["Resources"][r.split("/", 1)[1]]["Type"] for r in deny["Resource"]}
    assert denied_types == {
        "AWS::FSx::FileSystem",
        "AWS::FSx::DataRepositoryAssociation",
        "AWS::S3::Bucket",
        "AWS::KMS::Key",
        "AWS::PCS::Cluster",
        "AWS::PCS::ComputeNodeGroup",
        "AWS::PCS::Queue",
    }


def test_security_groups_roles_and_launch_templates_stay_unprotected(cdk_out):
    deny = _policy(cdk_out, "--stack", "Platform")["Statement"][1]
    template = _template(cdk_out, "Platform")
    for lid in (r.split("/", 1)[1] for r in deny["Resource"]):
        assert template["Resources"][lid]["Type"] not in (
            "AWS::EC2::SecurityGroup",
            "AWS::IAM::Role",
            "AWS::EC2::LaunchTemplate",
        )


def test_allow_leaves_a_construct_and_everything_under_it_unprotected(cdk_out):
    deny = _policy(cdk_out, "--stack", "Platform", "--allow", "Platform/FileSystem")["Statement"][1]
    assert deny["Resource"] == _stateful_ids(_template(cdk_out, "Platform"), exclude=r"^Platform/FileSystem/")
    assert len(deny["Resource"]) == len(_stateful_ids(_template(cdk_out, "Platform"))) - 2  # file system + repository


def test_a_stack_without_stateful_resources_gets_the_allow_statement_only(cdk_out):
    assert _policy(cdk_out, "--stack", "Empty") == ALLOW_ALL


def test_the_document_fits_set_stack_policy(cdk_out):
    policy = _policy(cdk_out, "--stack", "Platform")
    assert len(json.dumps(policy, separators=(",", ":")).encode()) <= STACK_POLICY_MAX_BYTES


def test_the_only_stack_needs_no_stack_option(tmp_path):
    out = tmp_path / "cdk.out"
    out.mkdir()
    template = {"Resources": {"Fs": {"Type": "AWS::FSx::FileSystem"}, "Sg": {"Type": "AWS::EC2::SecurityGroup"}}}
    (out / "S.template.json").write_text(json.dumps(template))
    artifact = {"type": "aws:cloudformation:stack", "properties": {"templateFile": "S.template.json"}}
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"S": artifact}}))
    assert _policy(out)["Statement"][1]["Resource"] == ["LogicalResourceId/Fs"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--stack must name one stack"),
        (("--stack", "Nope"), "--stack Nope is not in"),
        (("--missing",), "manifest.json"),
    ],
    ids=["two-stacks", "unknown-stack", "no-assembly"],
)
def test_bad_input_is_one_error_line_and_status_3(cdk_out, tmp_path, args, message):
    path = tmp_path / "missing" if args == ("--missing",) else cdk_out
    result = _run(path, *[a for a in args if a != "--missing"])
    assert result.exit_code == 3
    assert message in result.output
    assert "Traceback" not in result.output


def test_help_says_how_to_apply_and_lift_it():
    result = CliRunner().invoke(cli, ["stack-policy", "--help"])
    text = " ".join(result.output.split())
    assert "aws cloudformation set-stack-policy" in text
    assert "--stack-policy-during-update-body" in text
    assert "cannot be deleted" in text


def test_function_ignores_malformed_resources():
    template = {"Resources": {"A": "not a resource", "B": {"Type": "AWS::S3::Bucket"}}}
    assert stack_policy("S", template)["Statement"][1]["Resource"] == ["LogicalResourceId/B"]


def _assembly_with_file_systems(tmp_path: Path, count: int, id_length: int = 40) -> Path:
    out = tmp_path / "cdk.out"
    out.mkdir()
    resources = {f"{'F' * (id_length - 6)}{i:06d}": {"Type": "AWS::FSx::FileSystem"} for i in range(count)}
    (out / "S.template.json").write_text(json.dumps({"Resources": resources}))
    artifact = {"type": "aws:cloudformation:stack", "properties": {"templateFile": "S.template.json"}}
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"S": artifact}}))
    return out


def test_a_policy_over_the_limit_fails_with_one_line_and_a_nonzero_status(tmp_path):
    """SetStackPolicy StackPolicyBody takes at most 16,384 characters (botocore cloudformation StackPolicyBody):
    a policy CloudFormation would refuse is not printed with status 0."""
    result = CliRunner().invoke(cli, ["stack-policy", str(_assembly_with_file_systems(tmp_path, 400))])
    assert result.exit_code == 1
    assert "over CloudFormation's 16,384" in result.output and "--allow PATH" in result.output
    assert "Traceback" not in result.output and "Statement" not in result.output


def test_a_policy_that_fits_only_compact_is_printed_compact_and_says_so(tmp_path):
    # 250 ids of 40 characters: about 17 KB indented, 15.3 KB without spaces
    result = CliRunner().invoke(cli, ["stack-policy", str(_assembly_with_file_systems(tmp_path, 250))])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().encode()) <= STACK_POLICY_MAX_BYTES
    assert len(json.loads(result.stdout)["Statement"][1]["Resource"]) == 250
    assert "printed without spaces" in result.stderr
