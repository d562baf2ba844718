"""FmHyperPodSlurm and FmHyperPodEks, synthesized standalone with aws-cdk-lib's CloudFormation validation and
cdk-nag AwsSolutions on, then cfn-lint (the approach of tests/house/test_validation_tier.py); the lifecycle asset is read
back from cdk.out. FmHyperPodSlurm gets a Prometheus workspace (as the example app passes FmObservability's), and is
synthesized a second time with a base-config (``-c fmconstructs:hyperpod-base-config``): its provisioning parameters
are read back from that cloud assembly."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from fmconstructs.hyperpod import ON_CREATE, ON_INIT_COMPLETE, PROVISIONING_PARAMETERS, SETUP_SCRIPT

from tests.conftest import ENV

STACKS = ("FmHyperPodSlurm", "FmHyperPodEks")


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from examples.hyperpod_stacks import build
    from fmconstructs.observability.workspace import PrometheusWorkspace

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    workspace = PrometheusWorkspace(cdk.Stack(app, "FmHyperPodTestObservability", env=ENV), "Amp")
    build(app, env=ENV, workspace=workspace)
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


def test_slurm_example_uses_api_driven_slurm(assembly):
    props = _cluster(assembly, "FmHyperPodSlurm")
    assert props["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    slurm = {g["InstanceGroupName"]: g["SlurmConfig"] for g in props["InstanceGroups"]}
    assert slurm == {
        "controller": {"NodeType": "Controller"},
        "login": {"NodeType": "Login"},
        "gpu": {"NodeType": "Compute", "PartitionNames": ["gpu"]},
    }
    for group in props["InstanceGroups"]:
        assert group["LifeCycleConfig"]["OnInitComplete"] == ON_INIT_COMPLETE
        assert "OnCreate" not in group["LifeCycleConfig"]


def test_eks_example_orchestrator_and_p5en(assembly):
    props = _cluster(assembly, "FmHyperPodEks")
    assert "ClusterArn" in props["Orchestrator"]["Eks"]
    (group,) = props["InstanceGroups"]
    assert group["InstanceType"] == "ml.p5en.48xlarge"
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert props["NodeRecovery"] == "Automatic"


def _lifecycle_files(assembly: Path, stack: str) -> dict[str, str]:
    """Every file of the stack's BucketDeployment source assets (zip files in cdk.out), by path in the prefix."""
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
                    files[str(item.relative_to(path))] = item.read_text(errors="replace")
        elif Path(f"{path}.zip").exists() or path.exists():
            with zipfile.ZipFile(path if path.exists() else f"{path}.zip") as archive:
                for name in archive.namelist():
                    files[name] = archive.read(name).decode(errors="replace")
    return files


def _markers(assembly: Path, stack: str) -> dict[str, dict]:
    resources = template(assembly, stack)["Resources"]
    deployment = next(r for r in resources.values() if r["Type"] == "Custom::CDKBucketDeployment")
    return {k: v for m in deployment["Properties"].get("SourceMarkers", []) for k, v in m.items()}


def test_lifecycle_asset_per_group_in_cdk_out(assembly):
    files = _lifecycle_files(assembly, "FmHyperPodSlurm")
    for group in ("controller", "login", "gpu"):
        assert f"{group}/{ON_INIT_COMPLETE}" in files and f"{group}/{SETUP_SCRIPT}" in files
    # API-driven Slurm: no provisioning_parameters.json under SourceS3Uri (SageMaker Developer Guide
    # sagemaker-hyperpod-slurm-api-config-migration, Step 4 "Remove provisioning_parameters.json from Amazon S3").
    assert not any(name.endswith(PROVISIONING_PARAMETERS) for name in files)


def test_lifecycle_mounts_lustre_everywhere_and_collects_on_gpu_and_login(assembly):
    files = _lifecycle_files(assembly, "FmHyperPodSlurm")
    for group in ("controller", "login", "gpu"):
        assert "fmconstructs-lustre-mount" in files[f"{group}/{SETUP_SCRIPT}"]
    assert "fm-prometheus-agent" in files[f"gpu/{SETUP_SCRIPT}"]
    assert "fm-dcgm-exporter" in files[f"gpu/{SETUP_SCRIPT}"]
    assert "fm-slurm-textfile" in files[f"login/{SETUP_SCRIPT}"]
    assert "fm-prometheus-agent" not in files[f"controller/{SETUP_SCRIPT}"]


def _substitute(text: str, markers: dict[str, dict], *, quoted: bool) -> str:
    """Replace BucketDeployment markers (deploy-time values) by a placeholder naming the value."""
    for marker, value in markers.items():
        name = "value"
        join = value.get("Fn::Join") if isinstance(value, dict) else None
        if join:
            getatt = next((p["Fn::GetAtt"] for p in join[1] if isinstance(p, dict) and "Fn::GetAtt" in p), None)
            name = f"<{getatt[1]}>" if getatt else name
        text = text.replace(marker, json.dumps(name) if quoted else "fs-0123456789abcdef0.fsx.example")
    return text


def test_lifecycle_scripts_pass_shellcheck(assembly, tmp_path):
    for stack in STACKS:
        markers = _markers(assembly, stack)
        for name, text in _lifecycle_files(assembly, stack).items():
            if name.endswith(".sh"):
                script = tmp_path / f"{stack}-{name.replace('/', '-')}"
                script.write_text(_substitute(text, markers, quoted=False))
                result = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
                assert result.returncode == 0, f"{stack} {name}: {result.stdout}"


# --- the published lifecycle scripts (a base-config) -----------------------------------------------------------
@pytest.fixture(scope="module")
def legacy_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from examples.hyperpod_stacks import HyperPodSlurmStack

    base_config = tmp_path_factory.mktemp("base-config")
    (base_config / "lifecycle_script.py").write_text("print('published lifecycle script')\n")
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), context={"fmconstructs:hyperpod-base-config": str(base_config)})
    HyperPodSlurmStack(app, "FmHyperPodSlurm", env=ENV)
    app.synth()
    return outdir


def test_lifecycle_asset_and_parameters_in_cdk_out(legacy_assembly):
    files = _lifecycle_files(legacy_assembly, "FmHyperPodSlurm")
    assert ON_CREATE in files and "lifecycle_script.py" in files
    props = _cluster(legacy_assembly, "FmHyperPodSlurm")
    assert "Orchestrator" not in props
    assert all(g["LifeCycleConfig"]["OnCreate"] == ON_CREATE for g in props["InstanceGroups"])
    # Deploy-time values are BucketDeployment markers in the asset; the custom resource substitutes them (quoted).
    params = json.loads(_substitute(files[PROVISIONING_PARAMETERS], _markers(legacy_assembly, "FmHyperPodSlurm"),
                                    quoted=True))  # fmt: skip
    assert params == {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": "controller",
        "login_group": "login",
        "worker_groups": [{"instance_group_name": "gpu", "partition_name": "gpu"}],
        "fsx_dns_name": "<DNSName>",
        "fsx_mountname": "<LustreMountName>",
    }
    # The base-config mounts the file system (lifecycle_script.py: mount_fsx.sh): fmconstructs does not mount it again.
    assert "fmconstructs-lustre-mount" not in files.get(SETUP_SCRIPT, "")
