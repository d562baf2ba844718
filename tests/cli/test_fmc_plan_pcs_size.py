"""``fmc plan`` shows each PCS cluster's controller size, the nodes its node groups may launch (login included) and the
headroom; unknown when a count is a deploy-time value. Before: the size was not shown at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from click.testing import CliRunner

from fmconstructs.cli.assembly import DEPLOY_TIME
from fmconstructs.cli.main import cli
from fmconstructs.cli.pcs_size import plan_pcs_clusters, table_rows
from fmconstructs.pcs import ControllerSize, PcsAmi
from fmconstructs.platform import PcsOptions, TrainingPlatform

from tests.conftest import ENV

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _synth(tmp: Path, build: Any) -> Path:
    out = tmp / "cdk.out"
    app = cdk.App(outdir=str(out), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "PcsSize", env=ENV)
    build(stack)
    app.synth()
    return out


def _platform(nodes: int | float, size: ControllerSize | None = None) -> Any:
    def build(stack: cdk.Stack) -> None:
        from aws_cdk import aws_ec2 as ec2

        vpc = ec2.Vpc.from_vpc_attributes(
            stack,
            "Vpc",
            vpc_id="vpc-0123456789abcdef0",
            availability_zones=["us-east-1a"],
            private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
        )
        count = cdk.CfnParameter(stack, "Nodes", type="Number").value_as_number if nodes == -1 else nodes
        TrainingPlatform(
            stack,
            "Platform",
            vpc=vpc,
            instance_type="p5.48xlarge",
            nodes=count,
            orchestrator=PcsOptions(ami=AMI, size=size),
        )

    return build


@pytest.fixture(scope="module")
def plan_200(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = _synth(tmp_path_factory.mktemp("p200"), _platform(200))
    result = CliRunner().invoke(cli, ["plan", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_json_shows_size_nodes_and_headroom(plan_200: dict[str, Any]) -> None:
    # GIVEN a 200-node PCS platform with one login node
    (cluster,) = plan_200["pcs_clusters"]
    # THEN the controller is MEDIUM (512 nodes), the node groups hold 201, 311 to spare
    assert cluster["size"] == "MEDIUM"
    assert cluster["size_max_nodes"] == 512
    assert sorted(cluster["node_groups"].values()) == [1, 200]
    assert cluster["max_nodes"] == 201
    assert cluster["headroom"] == 311
    assert cluster["fits"] is True


def test_table_shows_the_pcs_controller(tmp_path: Path) -> None:
    out = _synth(tmp_path, _platform(40, ControllerSize.LARGE))
    result = CliRunner().invoke(cli, ["plan", str(out)])
    assert result.exit_code == 0, result.output
    assert "PCS controller size" in result.output
    line = next(line for line in result.output.splitlines() if "LARGE" in line)
    assert "2,048" in line and "41" in line and "2,007" in line


def test_deploy_time_count_makes_the_headroom_unknown(tmp_path: Path) -> None:
    out = _synth(tmp_path, _platform(-1))
    result = CliRunner().invoke(cli, ["plan", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (cluster,) = data["pcs_clusters"]
    assert cluster["size"] == "MEDIUM"  # the automatic floor for a deploy-time count
    assert cluster["max_nodes"] == DEPLOY_TIME and cluster["headroom"] == DEPLOY_TIME and cluster["fits"] is None
    assert any("PCS controller headroom" in u for u in data["unknowns"])


# --- the pure function, on hand-written templates --------------------------------------------------------------------
def _template(size: object, *counts: object, ref: str = "getatt") -> dict[str, Any]:
    resources: dict[str, Any] = {"Cluster": {"Type": "AWS::PCS::Cluster", "Properties": {"Size": size}}}
    cluster_id: object = {"Fn::GetAtt": ["Cluster", "Id"]} if ref == "getatt" else {"Ref": "Cluster"}
    for i, count in enumerate(counts):
        resources[f"Group{i}"] = {
            "Type": "AWS::PCS::ComputeNodeGroup",
            "Properties": {
                "ClusterId": cluster_id,
                "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": count},
            },
        }
    resources["Elsewhere"] = {
        "Type": "AWS::PCS::ComputeNodeGroup",
        "Properties": {"ClusterId": "pcs_other1234", "ScalingConfiguration": {"MaxInstanceCount": 999}},
    }
    return {"Resources": resources}


@pytest.mark.parametrize(
    ("size", "counts", "total", "headroom", "fits"),
    [
        ("SMALL", (1, 31), 32, 0, True),
        ("SMALL", (1, 32), 33, -1, False),
        ("MEDIUM", (200,), 200, 312, True),
        ("LARGE", (), 0, 2048, True),
        ({"Ref": "Size"}, (4,), 4, DEPLOY_TIME, None),
        ("SMALL", (4, {"Ref": "Nodes"}), DEPLOY_TIME, DEPLOY_TIME, None),
    ],
)
def test_headroom(size: object, counts: tuple[object, ...], total: object, headroom: object, fits: object) -> None:
    (plan,) = plan_pcs_clusters("S", _template(size, *counts))
    assert plan.max_nodes == total and plan.headroom == headroom and plan.fits is fits
    assert "Elsewhere" not in plan.node_groups  # another cluster's node group is not counted


def test_ref_to_the_cluster_counts_too() -> None:
    (plan,) = plan_pcs_clusters("S", _template("SMALL", 3, ref="ref"))
    assert plan.max_nodes == 3


def test_over_is_marked_in_the_table() -> None:
    (row,) = table_rows(plan_pcs_clusters("S", _template("SMALL", 40)))
    assert row[2:] == ("SMALL", "32", "Group0: 40", "40", "-8 OVER")


@pytest.mark.parametrize("template", [{}, {"Resources": []}, {"Resources": {"X": "nope"}}, []])
def test_odd_templates_give_no_cluster(template: Any) -> None:
    assert plan_pcs_clusters("S", template) == []


def test_unknown_size_value_is_shown_as_given() -> None:
    (plan,) = plan_pcs_clusters("S", _template("HUGE", 1))
    assert plan.size == "HUGE" and plan.size_max_nodes is None and plan.headroom is None
