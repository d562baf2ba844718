"""FmHyperPodSlurm and FmHyperPodEks, synthesized standalone with aws-cdk-lib's CloudFormation validation and
cdk-nag AwsSolutions on, then cfn-lint (the approach of tests/test_validation_tier.py); the lifecycle asset and its
provisioning parameters are read back from cdk.out."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from fmconstructs.hyperpod import ON_CREATE, PROVISIONING_PARAMETERS
from tests.conftest import ENV

STACKS = ("FmHyperPodSlurm", "FmHyperPodEks")


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from examples.hyperpod_stacks import build

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    build(app, env=ENV)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    return outdir


def template(assembly: Path, stack: str) -> dict:
    return json.loads((assembly / f"{stack}.template.json").read_text())


def test_both_stacks_synthesized(assembly):
    assert all((assembly / f"{s}.template.json").exists() for s in STACKS)


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_nag_acknowledgements_have_reasons(assembly):
    for stack in STACKS:
        for entries in json.loads((assembly / f"{stack}.metadata.json").read_text()).values():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    assert all(len(reason) >= 30 for reason in entry["data"].values())


def test_cfn_lint_has_zero_errors(assembly):
    from cfnlint.api import lint_file

    findings = {
        stack: [f"{m.rule.id} {m.message[:200]}" for m in lint_file(assembly / f"{stack}.template.json")
                if m.rule.severity == "error"]
        for stack in STACKS
    }  # fmt: skip
    assert findings == {stack: [] for stack in STACKS}


def _cluster(assembly: Path, stack: str) -> dict:
    resources = template(assembly, stack)["Resources"]
    return next(r["Properties"] for r in resources.values() if r["Type"] == "AWS::SageMaker::Cluster")


def test_slurm_example_groups(assembly):
    props = _cluster(assembly, "FmHyperPodSlurm")
    groups = {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}
    assert set(groups) == {"controller", "login", "gpu"}
    assert groups["gpu"]["InstanceType"] == "ml.p5.48xlarge"
    assert groups["gpu"]["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert props["NodeRecovery"] == "Automatic"
    assert "Orchestrator" not in props


def test_eks_example_orchestrator_and_p5en(assembly):
    props = _cluster(assembly, "FmHyperPodEks")
    assert "ClusterArn" in props["Orchestrator"]["Eks"]
    (group,) = props["InstanceGroups"]
    assert group["InstanceType"] == "ml.p5en.48xlarge"
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert props["NodeRecovery"] == "Automatic"


def _lifecycle_files(assembly: Path, stack: str) -> dict[str, str]:
    """Every file of the stack's BucketDeployment source assets (zip files in cdk.out)."""
    resources = template(assembly, stack)["Resources"]
    deployment = next(r for r in resources.values() if r["Type"] == "Custom::CDKBucketDeployment")
    keys = [k if isinstance(k, str) else k.get("Fn::Sub", "") for k in deployment["Properties"]["SourceObjectKeys"]]
    files: dict[str, str] = {}
    for key in keys:
        digest = key.split(".")[0]
        path = assembly / f"asset.{digest}"
        if path.is_dir():
            for item in path.rglob("*"):
                if item.is_file():
                    files[item.name] = item.read_text(errors="replace")
        elif Path(f"{path}.zip").exists() or path.exists():
            with zipfile.ZipFile(path if path.exists() else f"{path}.zip") as archive:
                for name in archive.namelist():
                    files[name] = archive.read(name).decode(errors="replace")
    return files


def test_lifecycle_asset_and_parameters_in_cdk_out(assembly):
    files = _lifecycle_files(assembly, "FmHyperPodSlurm")
    assert ON_CREATE in files
    resources = template(assembly, "FmHyperPodSlurm")["Resources"]
    deployment = next(r for r in resources.values() if r["Type"] == "Custom::CDKBucketDeployment")
    markers = {k: v for m in deployment["Properties"]["SourceMarkers"] for k, v in m.items()}
    # Deploy-time values are BucketDeployment markers in the asset; the custom resource substitutes them (quoted).
    text = files[PROVISIONING_PARAMETERS]
    for marker, value in markers.items():
        attribute = value["Fn::Join"][1][1]["Fn::GetAtt"][1]
        text = text.replace(marker, json.dumps(f"<{attribute}>"))
    params = json.loads(text)
    assert params == {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": "controller",
        "login_group": "login",
        "worker_groups": [{"instance_group_name": "gpu", "partition_name": "gpu"}],
        "fsx_dns_name": "<DNSName>",
        "fsx_mountname": "<LustreMountName>",
    }


def test_lifecycle_scripts_pass_shellcheck(assembly, tmp_path):
    for stack in STACKS:
        for name, text in _lifecycle_files(assembly, stack).items():
            if name.endswith(".sh"):
                script = tmp_path / f"{stack}-{name}"
                script.write_text(text)
                result = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
                assert result.returncode == 0, f"{stack} {name}: {result.stdout}"
