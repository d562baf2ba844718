"""The docs' StackSets and CDK Pipelines samples (docs/concepts/accounts.md) run as written, with only the library
(nothing from examples/), and the Install section (docs/getting-started.md), the backend table (the front page and the
docs index) and the EKS guide say what pyproject.toml, package.json and the code say."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.eks.versions import DEFAULT_KUBERNETES_VERSION

from tests.house.docs_pages import FRONT_PAGE, page, run_program

ROOT = Path(__file__).resolve().parents[2]
ACCOUNTS = page("concepts/accounts.md")
FRONT = FRONT_PAGE.read_text()


def sample(name: str) -> str:
    """The fenced python block right after ``<!-- sample: name -->``."""
    block = re.search(rf"<!-- sample: {name} -->\n```python\n(.*?)```", ACCOUNTS, re.S)
    assert block is not None, f"docs/concepts/accounts.md has no sample marked {name}"
    return block.group(1)


def run_sample(code: str, outdir: Path) -> dict[str, Any]:
    """Execute a sample (it builds its own ``cdk.App``) into ``outdir``; return its globals."""
    return run_program(code, "docs/concepts/accounts.md", outdir)


@pytest.mark.parametrize("name", ["stackset", "pipeline"])
def test_sample_needs_nothing_from_examples(name):
    code = sample(name)
    assert not re.search(r"^\s*(from|import)\s+examples\b", code, re.M)
    assert "app.synth()" in code  # a whole app, not a fragment
    assert max(len(line) for line in code.splitlines()) <= 120


# --- StackSets ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stackset(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    outdir = tmp_path_factory.mktemp("readme-stackset")
    return run_sample(sample("stackset"), outdir), outdir


def _replicated(stackset: tuple[dict[str, Any], Path]) -> dict[str, Any]:
    scope, outdir = stackset
    training = scope["admin"].node.find_child("Training")
    template: dict[str, Any] = json.loads((outdir / training.template_file).read_text())
    return template


def test_stackset_replicates_the_platform_with_no_lambda_no_asset_no_bootstrap_rule(stackset):
    body = _replicated(stackset)
    template = Template.from_json(body)
    for resource_type in ("AWS::PCS::Cluster", "AWS::FSx::FileSystem", "AWS::APS::Workspace"):
        template.resource_count_is(resource_type, 1)
    template.resource_count_is("AWS::Lambda::Function", 0)
    assert not [r for r in body["Resources"].values() if r["Type"].startswith("Custom::")]
    assert "BootstrapVersion" not in body.get("Parameters", {})
    assert "CheckBootstrapVersion" not in body.get("Rules", {})
    assert "SubnetInVpc" in body["Rules"]


def test_stackset_parameters_reach_the_resources(stackset):
    body = _replicated(stackset)
    template = Template.from_json(body)
    template.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 4800})
    template.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "ScalingConfiguration": Match.object_like({"MaxInstanceCount": {"Ref": "GpuNodes"}}),
            "CustomLaunchTemplate": Match.any_value(),
        },
    )
    template.has_resource_properties("AWS::PCS::Cluster", {"Networking": {"SubnetIds": [{"Ref": "SubnetId"}]}})
    resources = json.dumps(body["Resources"])
    unused = [name for name in body["Parameters"] if json.dumps({"Ref": name}) not in resources]
    assert unused == []


def test_stackset_sets_every_parameter_at_the_stackset_level_and_targets_one_account(stackset):
    scope, _ = stackset
    parameters = set(_replicated(stackset)["Parameters"])
    admin = Template.from_stack(scope["admin"])
    (stack_set,) = admin.find_resources("AWS::CloudFormation::StackSet").values()
    props = stack_set["Properties"]
    assert {p["ParameterKey"] for p in props["Parameters"]} == parameters
    assert props["PermissionModel"] == "SERVICE_MANAGED"
    assert props["Capabilities"] == ["CAPABILITY_IAM"]
    (group,) = props["StackInstancesGroup"]
    assert group["Regions"] == ["us-east-1"]
    assert {p["ParameterKey"] for p in group["ParameterOverrides"]} <= parameters


def test_stackset_warns_about_what_a_deploy_time_node_count_leaves_unchecked(stackset):
    """The accounts page says: the PCS controller size and the file system's 1,024 EFA connections (warnings, not errors)."""
    scope, _ = stackset
    training = scope["admin"].node.find_child("Training")
    warnings = {
        child.node.path: str(entry.data)
        for child in training.node.find_all()
        for entry in child.node.metadata
        if entry.type == "aws:cdk:warning" and "deploy-time value" in str(entry.data)
    }
    assert any(path.endswith("/Platform/Cluster") for path in warnings), warnings
    assert any(path.endswith("/Platform/FileSystem") and "1,024" in text for path, text in warnings.items()), warnings


# --- CDK Pipelines -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_sample(sample("pipeline"), tmp_path_factory.mktemp("readme-pipeline"))


def test_pipeline_deploys_the_stage_after_synth_and_self_mutation(pipeline):
    template = Template.from_stack(pipeline["tooling"])
    (codepipeline,) = template.find_resources("AWS::CodePipeline::Pipeline").values()
    names = [stage["Name"] for stage in codepipeline["Properties"]["Stages"]]
    assert names[:3] == ["Source", "Build", "UpdatePipeline"]
    assert names[-1] == "Research"
    assert "cdk-hnb659fds-deploy-role-222222222222-us-east-1" in json.dumps(codepipeline)


def test_pipeline_stage_holds_the_platform_in_its_own_account(pipeline):
    stage = pipeline["tooling"].node.find_child("Research")
    stack = stage.node.find_child("Training")
    assert (stack.account, stack.region) == ("222222222222", "us-east-1")
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 4800})
    template.resource_count_is("AWS::PCS::Cluster", 1)
    template.resource_count_is("AWS::Grafana::Workspace", 1)


def test_pipeline_stage_values_are_checked_at_synth(tmp_path):
    code = sample("pipeline")
    assert code.count("gpu_nodes=2,") == 1
    with pytest.raises(FmValidationError, match="reservation"):
        run_sample(code.replace("gpu_nodes=2,", "gpu_nodes=4,"), tmp_path)


# --- Install section and backend table ---------------------------------------------------------------------------------


def _section(title: str) -> str:
    text = page("getting-started.md")
    assert f"\n## {title}\n" in text
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("text", [FRONT, page("index.md")], ids=["front page", "docs index"])
def test_which_backend_is_the_first_table_and_names_every_backend(text):
    first_table = text.index("\n|")
    assert text.rindex("\n## ", 0, first_table) == text.index("\n## Which backend\n")
    header = text[first_table:].split("\n")[1]
    for backend in ("AWS PCS", "AWS ParallelCluster", "Amazon EKS", "HyperPod (Slurm)", "HyperPod (EKS)"):
        assert backend in header


def test_install_names_the_pinned_cli_python_and_extras():
    install = _section("Install")
    cli = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert f"**{cli} or newer**" in install
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"Python {project['requires-python'].replace('>=', '>= ')}" in install
    for extra in project["optional-dependencies"]:
        assert f"fmconstructs[{extra}]" in install
    for requirement in project["optional-dependencies"]["hyperpod"]:
        assert requirement.split(">")[0] in install
    assert "py3-none-any.whl" in install and "git+https://" in install and "placeholder" in install


def test_kubectl_layer_table_matches_the_default_version_and_the_hyperpod_extra():
    eks = page("backends/eks.md")
    minor = DEFAULT_KUBERNETES_VERSION.version.split(".")[1]
    assert f"| 1.{minor} (the default, `DEFAULT_KUBERNETES_VERSION`) | `aws-cdk.lambda-layer-kubectl-v{minor}` |" in eks
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (hyperpod_layer,) = project["optional-dependencies"]["hyperpod"]
    assert f'`{hyperpod_layer.split(">")[0]}` | `pip install "fmconstructs[hyperpod]"` |' in eks
    assert f"`{hyperpod_layer.split('>')[0]}`" not in str(project["dependencies"])
    assert "aws_eks_v2" in eks


@pytest.mark.parametrize("name", ["backends/platform.md", "backends/pcs.md"])
def test_pcs_ami_note_comes_before_the_first_pcs_sample(name):
    text = page(name)
    note = text.index("**PCS GPU nodes need your own AMI.**")
    pcs_samples = [m.start() for m in re.finditer(r"```python\n(.*?)```", text, re.S) if "Pcs" in m.group(1)]
    assert pcs_samples and note < pcs_samples[0]
