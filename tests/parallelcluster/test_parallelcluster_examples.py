"""FmParallelClusterP5en and FmParallelClusterGb200 synthesized standalone with aws-cdk-lib's CloudFormation
validation and cdk-nag AwsSolutions on, then cfn-lint (the approach of tests/house/test_validation_tier.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from examples.parallelcluster_stacks import (
    DEFAULT_CAPACITY_BLOCK_ID,
    ParallelClusterGb200Stack,
    ParallelClusterP5enStack,
)
from fmconstructs.parallelcluster import CustomActionEvent

STACKS = ("FmParallelClusterP5en", "FmParallelClusterGb200")


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, cdk.Stack]]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stacks: dict[str, cdk.Stack] = {
        "FmParallelClusterP5en": ParallelClusterP5enStack(app, "FmParallelClusterP5en"),
        "FmParallelClusterGb200": ParallelClusterGb200Stack(app, "FmParallelClusterGb200"),
    }
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag error
    return outdir, stacks


def _config(template_path: Path) -> dict[str, Any]:
    resources = json.loads(template_path.read_text())["Resources"]
    (cluster,) = [r for r in resources.values() if r["Type"] == "Custom::PclusterCluster"]
    config: dict[str, Any] = cluster["Properties"]["ClusterConfiguration"]
    return config


def test_both_stacks_synthesized(assembly: tuple[Path, dict[str, cdk.Stack]]) -> None:
    outdir, _ = assembly
    assert {p.name.removesuffix(".template.json") for p in outdir.glob("*.template.json")} >= set(STACKS)


def test_cdk_nag_reports_nothing_unacknowledged(assembly: tuple[Path, dict[str, cdk.Stack]]) -> None:
    outdir, _ = assembly
    report = json.loads((outdir / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_cfn_lint_has_zero_errors(assembly: tuple[Path, dict[str, cdk.Stack]]) -> None:
    from cfnlint.api import lint_file

    outdir, _ = assembly
    findings = {
        name: [
            f"{m.rule.id} {m.message[:200]}"
            for m in lint_file(outdir / f"{name}.template.json")
            if m.rule.severity == "error"
        ]
        for name in STACKS
    }
    assert findings == {name: [] for name in STACKS}


def test_p5en_queue_is_a_capacity_block_with_catalog_efa(assembly: tuple[Path, dict[str, cdk.Stack]]) -> None:
    outdir, _ = assembly
    queue = _config(outdir / "FmParallelClusterP5en.template.json")["Scheduling"]["SlurmQueues"][0]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    (resource,) = queue["ComputeResources"]
    assert resource["InstanceType"] == "p5en.48xlarge"
    assert resource["MinCount"] == resource["MaxCount"] == 2
    assert resource["Efa"] == {"Enabled": True, "GdrSupport": True}
    assert resource["CapacityReservationTarget"] == {"CapacityReservationId": DEFAULT_CAPACITY_BLOCK_ID}
    assert resource["Networking"] == {"PlacementGroup": {"Enabled": False}}


def test_p5en_mounts_the_fmconstructs_lustre_and_shares_the_efa_group(
    assembly: tuple[Path, dict[str, cdk.Stack]],
) -> None:
    outdir, stacks = assembly
    config = _config(outdir / "FmParallelClusterP5en.template.json")
    (storage,) = config["SharedStorage"]
    assert storage["StorageType"] == "FsxLustre" and storage["MountDir"] == "/fsx"
    assert set(storage["FsxLustreSettings"]["FileSystemId"]) == {"Ref"}
    stack = stacks["FmParallelClusterP5en"]
    assert isinstance(stack, ParallelClusterP5enStack)
    efa_group = stack.resolve(stack.efa_group.security_group_id)
    for section in (config["HeadNode"], config["Scheduling"]["SlurmQueues"][0], config["LoginNodes"]["Pools"][0]):
        assert efa_group in section["Networking"]["AdditionalSecurityGroups"]


def test_gb200_is_one_ultraserver_block(assembly: tuple[Path, dict[str, cdk.Stack]]) -> None:
    outdir, _ = assembly
    config = _config(outdir / "FmParallelClusterGb200.template.json")
    queue = config["Scheduling"]["SlurmQueues"][0]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    assert queue["JobExclusiveAllocation"] is True
    (resource,) = queue["ComputeResources"]
    assert resource["InstanceType"] == "p6e-gb200.36xlarge"
    assert resource["MinCount"] == resource["MaxCount"] == 18
    assert resource["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0a1b2c3d4e5f60718"}
    # IMEX (User Guide support-nvidia-imex-p6e-gb200-instance): the prolog through the head node's OnNodeStart, from
    # the stack's asset bucket (no placeholder URL), and the page's Slurm settings.
    action = config["HeadNode"]["CustomActions"]["OnNodeStart"]
    assert "cdk-hnb659fds-assets" in json.dumps(action["Script"])
    (piece,) = assembly[1]["FmParallelClusterGb200"].cluster.head_node_actions(CustomActionEvent.ON_NODE_START)
    assert piece["Args"][0] == "parallelcluster-imex" and "cdk-hnb659fds-assets" in json.dumps(piece["Script"])
    assert config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"] == [
        {"PrologFlags": "Alloc,NoHold"},
        {"MessageTimeout": 240},
    ]


@pytest.mark.parametrize("name", STACKS)
def test_outputs_have_descriptions(assembly: tuple[Path, dict[str, cdk.Stack]], name: str) -> None:
    _, stacks = assembly
    outputs = Template.from_stack(stacks[name]).find_outputs("*")
    assert {
        "ClusterName",
        "HeadNodePrivateIp",
        "ValidationMessages",
        "ClusterLogGroupName",
        "ProviderLogGroupArn",
    } <= set(outputs)
    assert all(len(o.get("Description", "")) > 10 for o in outputs.values())
