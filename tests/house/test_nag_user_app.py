"""cdk-nag in a user's own app: a platform built only from the library (no ``examples/`` code) through
:class:`TrainingPlatform`, on every backend, with aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on,
has 0 unacknowledged cdk-nag errors and 0 cfn-lint errors. Each construct acknowledges the findings it owns, with its
reason; without ``access_logs_bucket`` the platform logs its buckets to a log bucket of its own (issue 30).

The user app imports its VPC (``ec2.Vpc.from_vpc_attributes``: no VPC resource, so no VPC7 flow-log finding to
acknowledge) and an existing access-logs bucket, as a team adopting the library would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks

from fmconstructs import CapacityBlock, UltraServerCapacityBlock
from fmconstructs.capacity import Capacity
from fmconstructs.hyperpod.eks_dependencies import HyperPodDependenciesChart
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    ParallelClusterOptions,
    PcsOptions,
    PlatformStorage,
    TrainingPlatform,
)

pytestmark = pytest.mark.validation

ENV = cdk.Environment(account="123456789012", region="us-east-1")
BLOCK = CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2)
GB200_BLOCK = UltraServerCapacityBlock(
    resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/my-gb200-block",
    ultraserver_type="u-p6e-gb200x72",
)


# HyperPod on EKS needs its dependencies chart (HyperPodOptions.dependencies_chart); a user's ECR copy of it.
_CHART = HyperPodDependenciesChart.from_oci(
    "oci://123456789012.dkr.ecr.us-east-1.amazonaws.com/helm-charts/hyperpod-helm-chart", version="0.1.0"
)


@dataclass(frozen=True)
class Case:
    instance_type: str
    nodes: int
    orchestrator: Any
    capacity: Capacity | None


CASES = {
    "pcs": Case("p5.48xlarge", 2, PcsOptions(ami=PcsAmi.from_image_id("ami-0123456789abcdef0")), BLOCK),
    "parallelcluster": Case("p5.48xlarge", 2, ParallelClusterOptions(cluster_name="user-pc"), BLOCK),
    "eks-p5": Case("p5.48xlarge", 2, EksOptions(), BLOCK),
    "eks-gb200": Case("p6e-gb200.36xlarge", 18, EksOptions(), GB200_BLOCK),
    "hyperpod-slurm": Case("p5.48xlarge", 2, HyperPodOptions(), None),
    "hyperpod-eks": Case(
        "p5.48xlarge", 2, HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=_CHART), None
    ),
}


def synth_user_app(outdir: Path, case: Case, *, access_logs: bool) -> Path:
    """The user's app: an imported VPC, an existing access-logs bucket (or none), one TrainingPlatform."""
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "UserPlatform", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    logs = s3.Bucket.from_bucket_name(stack, "AccessLogs", "my-org-access-logs") if access_logs else None
    TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type=case.instance_type,
        nodes=case.nodes,
        capacity=case.capacity,
        orchestrator=case.orchestrator,
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
        access_logs_bucket=logs,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except RuntimeError as error:  # ValidationFailed: the report below says what
        if "ValidationFailed" not in str(error):
            raise
    return outdir


def unacknowledged(outdir: Path) -> list[str]:
    """``<rule> <construct path>`` of every cdk-nag violation in the validation report."""
    report = json.loads((outdir / "validation-report.json").read_text())
    found = []
    for plugin in report["pluginReports"]:
        for violation in plugin.get("violations", []):
            for resource in violation.get("violatingConstructs", []):
                found.append(f"{violation['ruleName']} {resource.get('constructPath')}")
    return sorted(found)


def cfn_lint_errors(outdir: Path) -> dict[str, list[str]]:
    from cfnlint.api import lint_file

    return {
        template.name: [f"{m.rule.id} {m.message[:200]}" for m in lint_file(template) if m.rule.severity == "error"]
        for template in sorted(outdir.glob("*.template.json"))
    }


@pytest.fixture(scope="module", params=list(CASES), ids=list(CASES))
def assembly(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_user_app(tmp_path_factory.mktemp(request.param), CASES[request.param], access_logs=True)


def test_cdk_nag_reports_nothing_unacknowledged(assembly: Path) -> None:
    assert unacknowledged(assembly) == []


def test_cfn_lint_has_zero_errors(assembly: Path) -> None:
    errors = cfn_lint_errors(assembly)
    assert errors and errors == {name: [] for name in errors}


def test_every_acknowledgement_has_a_specific_reason(assembly: Path) -> None:
    reasons: dict[str, str] = {}
    for path in assembly.glob("*.metadata.json"):
        for entries in json.loads(path.read_text()).values():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    reasons.update(entry["data"])
    assert {rule: reason for rule, reason in reasons.items() if len(reason) < 30} == {}


@pytest.mark.parametrize("case", ["hyperpod-slurm", "pcs"])
def test_without_access_logs_the_platform_logs_to_a_bucket_of_its_own(tmp_path: Path, case: str) -> None:
    """Issue 30: without ``access_logs_bucket`` a user's app had AwsSolutions-S1 errors (the data bucket, HyperPod's
    lifecycle bucket). The platform now creates one server access log target for the buckets it creates, so the app
    is nag-clean, and every bucket it creates logs there (the target itself is exempt: cdk-nag S1 treats a bucket
    another bucket of the stack logs to as compliant)."""
    outdir = synth_user_app(tmp_path, CASES[case], access_logs=False)
    assert unacknowledged(outdir) == []
    template = json.loads((outdir / "UserPlatform.template.json").read_text())
    buckets = {k: v["Properties"] for k, v in template["Resources"].items() if v["Type"] == "AWS::S3::Bucket"}
    targets = [k for k in buckets if k.startswith("PlatformAccessLogs")]
    assert len(targets) == 1
    logged = {k for k, p in buckets.items() if p.get("LoggingConfiguration", {}).get("DestinationBucketName")}
    assert logged == set(buckets) - set(targets) and logged
    assert all(buckets[k]["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": targets[0]} for k in logged)
    target = buckets[targets[0]]
    assert target["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert target["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert template["Resources"][targets[0]]["DeletionPolicy"] == "Retain"
    policies = [v["Properties"] for v in template["Resources"].values() if v["Type"] == "AWS::S3::BucketPolicy"]
    assert any("logging.s3.amazonaws.com" in json.dumps(p) and targets[0] in json.dumps(p["Bucket"]) for p in policies)


def test_dependencies_chart_from_a_checkout_is_acknowledged(tmp_path: Path) -> None:
    """HyperPod's dependencies chart from a local checkout (a CDK asset): the kubectl handler's read on the asset
    bucket is acknowledged by HyperPodEksDependencies, in the user's own app."""
    from fmconstructs.eks import GpuEksCluster
    from fmconstructs.hyperpod.eks_dependencies import HyperPodDependenciesChart, HyperPodEksDependencies

    from tests.support.hyperpod_eks_dependencies import write_chart

    chart = HyperPodDependenciesChart.from_directory(str(write_chart(tmp_path / "checkout")))
    app = cdk.App(outdir=str(tmp_path / "cdk.out"), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "UserEks", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    HyperPodEksDependencies(stack, "Deps", cluster=cluster, chart=chart)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on an unacknowledged cdk-nag error
    assert unacknowledged(tmp_path / "cdk.out") == []
