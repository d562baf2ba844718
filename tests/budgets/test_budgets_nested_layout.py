"""GPU node groups in nested stacks (``fmconstructs:node-groups-per-stack`` = 1, three groups: two nested stacks) in
a user's TrainingPlatform app: cdk-nag AwsSolutions has nothing unacknowledged, cfn-lint finds no error in any
template, and each nested group still gets what a group in the parent gets (its node-checks DaemonSet, the stack's one
bootstrap log group)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from cdk_nag import AwsSolutionsChecks

from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import EksOptions, PcsOptions, PlatformStorage, TrainingPlatform

pytestmark = pytest.mark.validation

ENV = cdk.Environment(account="123456789012", region="us-east-1")
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _synth(backend: str, outdir: Path) -> Path:
    app = cdk.App(
        outdir=str(outdir), builtin_cloud_formation_validation=True, context={"fmconstructs:node-groups-per-stack": 1}
    )
    stack = cdk.Stack(app, "Nested", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    orchestrator: Any = EksOptions() if backend == "eks" else PcsOptions(ami=AMI)
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=orchestrator,
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )
    extra: dict[str, Any] = {"ami": AMI} if backend == "pcs" else {}
    for i in (1, 2):
        platform.cluster.add_gpu_node_group(f"Gpu{i}", instance_type="p5.48xlarge", max_nodes=2, **extra)  # type: ignore[union-attr]
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except RuntimeError as error:  # ValidationFailed: the report says what
        if "ValidationFailed" not in str(error):
            raise
    return outdir


@pytest.fixture(scope="module", params=["eks", "pcs"])
def assembly(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return request.param, _synth(request.param, tmp_path_factory.mktemp(request.param))


def test_cdk_nag_reports_nothing_unacknowledged(assembly: tuple[str, Path]) -> None:
    _backend, outdir = assembly
    report = json.loads((outdir / "validation-report.json").read_text())
    found = [
        f"{v['ruleName']} {c.get('constructPath')}"
        for plugin in report["pluginReports"]
        for v in plugin.get("violations", [])
        for c in v.get("violatingConstructs", [])
    ]
    assert found == []


def test_cfn_lint_has_zero_errors_in_parent_and_nested_templates(assembly: tuple[str, Path]) -> None:
    from cfnlint.api import lint_file

    _backend, outdir = assembly
    templates = sorted(outdir.glob("*.template.json"))
    assert len([t for t in templates if ".nested." in t.name]) == 2
    errors = {
        t.name: [f"{m.rule.id} {m.message[:160]}" for m in lint_file(t) if m.rule.severity == "error"]
        for t in templates
    }
    assert errors == {name: [] for name in errors}


def test_nested_groups_get_their_gate_and_log_where_the_others_do(assembly: tuple[str, Path]) -> None:
    backend, outdir = assembly
    nested = [json.loads(p.read_text()) for p in sorted(outdir.glob("*.nested.template.json"))]
    parent = json.loads((outdir / "Nested.template.json").read_text())
    log_groups = [r for t in [parent, *nested] for r in t["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
    bootstrap_logs = [r for r in log_groups if "node-bootstrap" in json.dumps(r["Properties"].get("LogGroupName"))]
    assert len(bootstrap_logs) <= 1  # one per deployed stack, in the parent (PCS: its groups' bootstrap)
    for template in nested:
        kinds = {r["Type"] for r in template["Resources"].values()}
        if backend == "eks":
            assert {"AWS::EKS::Nodegroup", "AWS::EC2::LaunchTemplate", "Custom::AWSCDK-EKS-KubernetesResource"} <= kinds
            (manifest,) = [
                json.loads(r["Properties"]["Manifest"])
                for r in template["Resources"].values()
                if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
            ]
            assert [m["kind"] for m in manifest] == ["DaemonSet"]
        else:
            assert {"AWS::PCS::ComputeNodeGroup", "AWS::EC2::LaunchTemplate"} <= kinds
