"""Topology in ``fmc``: the mechanism per node group in ``fmc plan`` (cli.topology) and the layer-3 spread of a
reservation in ``fmc preflight`` (cli.topology_aws, EC2 DescribeCapacityReservationTopology, botocore Stubber)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner

from fmconstructs.cli import preflight as pf
from fmconstructs.cli import topology as topo
from fmconstructs.cli.assembly import parse_stack
from fmconstructs.cli.main import cli
from fmconstructs.cli.plan import Plan, plan_stacks

REGION = "us-east-1"
RID = "cr-0fedcba9876543210"
RID2 = "cr-0123456789abcdef0"


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)


def _lt(*, reservation: str | None = RID, placement: bool = False, block: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"InstanceType": "p5.48xlarge"}
    if reservation:
        data["CapacityReservationSpecification"] = {"CapacityReservationTarget": {"CapacityReservationId": reservation}}
    if placement:
        data["Placement"] = {"GroupName": {"Ref": "Pg"}}
    if block:
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": data}}


def _asg_template(
    *, reservation: str | None = RID, placement: bool = False, strategy: str = "cluster", block: bool = False
) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "Lt": _lt(reservation=reservation, placement=placement, block=block),
        "Fleet": {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "Properties": {"MinSize": "0", "MaxSize": "4", "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}}},
        },
    }
    if placement:
        resources["Pg"] = {"Type": "AWS::EC2::PlacementGroup", "Properties": {"Strategy": strategy}}
    return {"Resources": resources}


def _plan(template: dict[str, Any]) -> Plan:
    return plan_stacks([parse_stack("S", template)])


def _pcluster(
    settings: list[dict[str, Any]] | None,
    itype: str = "p5en.48xlarge",
    pg: bool | None = None,
    record: dict[str, Any] | None = None,
) -> Any:
    queue: dict[str, Any] = {
        "Name": "gpu",
        "ComputeResources": [{"Name": "nodes", "InstanceType": itype, "MinCount": 0, "MaxCount": 2}],
    }
    if pg is not None:
        queue["Networking"] = {"SubnetIds": ["subnet-1"], "PlacementGroup": {"Enabled": pg}}
    scheduling: dict[str, Any] = {"Scheduler": "slurm", "SlurmQueues": [queue]}
    if settings is not None:
        scheduling["SlurmSettings"] = {"CustomSlurmSettings": settings}
    config = {"HeadNode": {"InstanceType": "m7i.2xlarge"}, "Scheduling": scheduling}
    cluster: dict[str, Any] = {"Type": "Custom::PclusterCluster", "Properties": {"ClusterConfiguration": config}}
    if record is not None:
        cluster["Metadata"] = {"fmconstructs:plan": record}
    return {"Resources": {"Cluster": cluster}}


#: The plan record enable_slurm_topology writes (fmconstructs._plan_metadata).
TREE_RECORD = {
    "version": 1,
    "kind": "node-group",
    "backend": "parallelcluster",
    "slurm_topology": {"plugin": "topology/tree", "source": "fmconstructs"},
}


def _by_group(plan: Plan) -> dict[str, Any]:
    return {g.group: g for g in plan.node_groups}


# -- fmc plan: the mechanism ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "itype", "expected"),
    [
        ([{"TopologyPlugin": "topology/tree"}], "p5en.48xlarge", topo.PCLUSTER_TREE),
        ([{"SlurmctldDebug": "info"}, {"TopologyPlugin": "topology/tree"}], "p5.48xlarge", topo.PCLUSTER_TREE),
        ([{"TopologyPlugin": "topology/block"}], "p5en.48xlarge", "topology/block (CustomSlurmSettings)"),
        ([{"TopologyPlugin": {"Ref": "Plugin"}}], "p5en.48xlarge", "TopologyPlugin set at deploy time"),
        (None, "p6e-gb200.36xlarge", topo.PCLUSTER_BLOCK),
        (None, "p5en.48xlarge", "none"),
        ("not-a-list", "p5en.48xlarge", "none"),
    ],
)
def test_parallelcluster_topology(settings: Any, itype: str, expected: str) -> None:
    groups = _by_group(_plan(_pcluster(settings, itype, record=TREE_RECORD)))
    assert groups["Cluster/gpu/nodes"].topology == expected
    assert groups["Cluster/head"].topology == "-"


@pytest.mark.parametrize(
    "record",
    [None, {"version": 1, "kind": "node-group", "backend": "parallelcluster"}, {**TREE_RECORD, "version": 99}],
)
def test_a_tree_setting_without_fmconstructs_topology_is_not_reported_as_it(record: Any) -> None:
    # e.g. add_custom_slurm_settings({"TopologyPlugin": "topology/tree"}) with no refresher writing topology.conf
    groups = _by_group(_plan(_pcluster([{"TopologyPlugin": "topology/tree"}], record=record)))
    assert groups["Cluster/gpu/nodes"].topology == topo.PCLUSTER_TREE_SETTING_ONLY


def _eks(chart: object | None) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "Ng": {
            "Type": "AWS::EKS::Nodegroup",
            "Properties": {"InstanceTypes": ["p5.48xlarge"], "ScalingConfig": {"MinSize": 0, "MaxSize": 2}},
        }
    }
    if chart is not None:
        resources["Kueue"] = {"Type": topo.HELM_CHART_TYPE, "Properties": {"Chart": chart, "Release": "kueue"}}
    return {"Resources": resources}


@pytest.mark.parametrize(
    ("chart", "expected"),
    [
        ("kueue", topo.KUEUE_TAS),
        ("oci://registry.k8s.io/kueue/charts/kueue", topo.KUEUE_TAS),
        ("aws-load-balancer-controller", "none"),
        ({"Ref": "Chart"}, "none"),
        (None, "none"),
    ],
)
def test_eks_topology(chart: object, expected: str) -> None:
    (group,) = _plan(_eks(chart)).node_groups
    assert group.topology == expected


def test_pcs_hyperpod_and_asg_topology_and_json(tmp_path: Path) -> None:
    pcs = {
        "Type": "AWS::PCS::ComputeNodeGroup",
        "Properties": {
            "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
            "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 2},
        },
    }

    def hyperpod(orchestrator: dict[str, Any] | None) -> dict[str, Any]:
        props: dict[str, Any] = {
            "InstanceGroups": [{"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}]
        }
        if orchestrator:
            props["Orchestrator"] = orchestrator
        return {"Type": "AWS::SageMaker::Cluster", "Properties": props}

    template = {
        "Resources": {
            "Pcs": pcs,
            "HpEks": hyperpod({"Eks": {"ClusterArn": "arn:aws:eks:us-east-1:123456789012:cluster/x"}}),
            "HpSlurm": hyperpod(None),
            **_asg_template(reservation=None)["Resources"],
        }
    }
    groups = _by_group(_plan(template))
    assert groups["Pcs"].topology == topo.PCS_TOPOLOGY
    assert groups["HpEks/gpu"].topology == topo.HYPERPOD_EKS
    assert groups["HpSlurm/gpu"].topology.startswith("none")
    assert groups["Fleet"].topology == "none"
    # --json carries it; the table has a Topology column
    out = _write_assembly(tmp_path, template)
    data = json.loads(CliRunner().invoke(cli, ["plan", str(out), "--json"]).output)
    assert {g["group"]: g["topology"] for g in data["node_groups"]}["Pcs"] == topo.PCS_TOPOLOGY
    table = CliRunner().invoke(cli, ["plan", str(out)], terminal_width=400).output
    assert "Topology" in table


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (_asg_template(placement=True), "cluster placement group Pg"),
        (_asg_template(placement=True, strategy="spread"), None),
        (_asg_template(placement=False), None),
        (_asg_template(block=True), "Capacity Block"),
        (_pcluster(None, pg=True), "ParallelCluster placement group"),
        (_pcluster(None, pg=False), None),
    ],
)
def test_tight_placement(template: dict[str, Any], expected: str | None) -> None:
    groups = [g for g in _plan(template).node_groups if not g.group.endswith("head")]
    assert groups[0].tight_placement == expected


# -- fmc preflight: the reservation's layer-3 spread ----------------------------------------------------------------
def _entry(rid: str, nodes: list[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "CapacityReservationId": rid,
        "State": "active",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
    }
    if nodes is not None:
        entry["NetworkNodes"] = nodes
    return entry


def _preflight(template: dict[str, Any], ec2: Any) -> list[pf.Check]:
    check = pf.Preflight(_plan(template), ec2=ec2, quotas=None, region=REGION)
    check.check_topology()
    return check.report.checks


def _stubbed(*pages: dict[str, Any]) -> tuple[Any, Stubber]:
    ec2 = boto3.client("ec2", region_name=REGION)
    stub = Stubber(ec2)
    for i, page in enumerate(pages):
        params: dict[str, Any] = {"CapacityReservationIds": [RID]}
        if i:
            params["NextToken"] = f"t{i}"
        stub.add_response("describe_capacity_reservation_topology", page, params)
    stub.activate()
    return ec2, stub


@pytest.mark.parametrize(("placement", "status"), [(True, pf.Status.PASS), (False, pf.Status.INFO)])
def test_one_layer3_node(placement: bool, status: pf.Status) -> None:
    ec2, stub = _stubbed({"CapacityReservations": [_entry(RID, ["nn-1", "nn-2", "nn-3"])]})
    (row,) = _preflight(_asg_template(placement=placement), ec2)
    stub.assert_no_pending_responses()
    assert (row.check, row.status) == ("topology", status)
    assert "span 1 layer-3 network node" in row.detail and RID in row.target


def test_spread_over_pages_warns_with_tight_placement() -> None:
    """Two pages (NextToken) whose entries for the reservation name two layer-3 nodes (the third of each set; the
    fourth layer of a 4-layer type does not count)."""
    ec2, stub = _stubbed(
        {"CapacityReservations": [_entry(RID, ["nn-1", "nn-2", "nn-3", "nn-4a"])], "NextToken": "t1"},
        {"CapacityReservations": [_entry(RID, ["nn-1", "nn-2", "nn-3b", "nn-4b"])]},
    )
    (row,) = _preflight(_asg_template(placement=True), ec2)
    stub.assert_no_pending_responses()
    assert row.status is pf.Status.WARN
    assert "span 2 layer-3 network nodes" in row.detail and "cluster placement group Pg" in row.detail


def test_same_layer3_over_pages_passes() -> None:
    ec2, stub = _stubbed(
        {"CapacityReservations": [_entry(RID, ["a", "b", "c", "d1"])], "NextToken": "t1"},
        {"CapacityReservations": [_entry(RID, ["a", "b", "c", "d2"])]},
    )
    (row,) = _preflight(_asg_template(block=True), ec2)
    stub.assert_no_pending_responses()
    assert row.status is pf.Status.PASS and "Capacity Block" not in row.detail


@pytest.mark.parametrize(
    ("nodes", "status", "text"),
    [
        (["nn-1", "nn-2"], pf.Status.WARN, "names only 2 layer(s)"),
        ([], pf.Status.SKIP, "no network nodes"),
        (None, pf.Status.SKIP, "no network nodes"),
    ],
)
def test_short_or_empty_node_sets(nodes: list[str] | None, status: pf.Status, text: str) -> None:
    ec2, _ = _stubbed({"CapacityReservations": [_entry(RID, nodes)]})
    (row,) = _preflight(_asg_template(placement=True), ec2)
    assert row.status is status and text in row.detail


def test_reservation_missing_from_response_is_skipped() -> None:
    ec2, _ = _stubbed({"CapacityReservations": [_entry(RID2, ["a", "b", "c"])]})
    (row,) = _preflight(_asg_template(placement=True), ec2)
    assert row.status is pf.Status.SKIP and "not in the" in row.detail


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "OperationNotPermitted"])
def test_no_access_is_a_skip(code: str) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservation_topology", service_error_code=code, http_status_code=403)
        (row,) = _preflight(_asg_template(placement=True), ec2)
    assert row.status is pf.Status.SKIP and code in row.detail and "DescribeCapacityReservationTopology" in row.detail


def test_other_aws_error_is_a_warning() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservation_topology", service_error_code="RequestLimitExceeded")
        (row,) = _preflight(_asg_template(), ec2)
    assert row.status is pf.Status.WARN and "throttled" in row.detail


def test_no_reservation_no_call() -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2):
        assert _preflight(_asg_template(reservation=None), ec2) == []


def test_more_than_ten_reservations_are_batched() -> None:
    ids = [f"cr-{i:017x}" for i in range(12)]
    template: dict[str, Any] = {"Resources": {}}
    for i, rid in enumerate(ids):
        template["Resources"][f"Lt{i}"] = _lt(reservation=rid)
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        for batch in (sorted(ids)[:10], sorted(ids)[10:]):
            entries = [_entry(r, ["a", "b", "c"]) for r in batch]
            stub.add_response(
                "describe_capacity_reservation_topology",
                {"CapacityReservations": entries},
                {"CapacityReservationIds": batch},
            )
        rows = _preflight(template, ec2)
        stub.assert_no_pending_responses()
    assert len(rows) == 12 and all(r.status is pf.Status.INFO for r in rows)


def _write_assembly(root: Path, template: dict[str, Any]) -> Path:
    out = root / "cdk.out"
    out.mkdir(exist_ok=True)
    (out / "Fm.template.json").write_text(json.dumps(template))
    manifest = {
        "version": "48.0.0",
        "artifacts": {
            "Fm": {
                "type": "aws:cloudformation:stack",
                "environment": f"aws://123456789012/{REGION}",
                "properties": {"templateFile": "Fm.template.json"},
            }
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.mark.parametrize(
    "response",
    [
        {"CapacityReservations": "oops"},
        {"CapacityReservations": [{"NetworkNodes": ["a"]}]},
        {"CapacityReservations": [{"CapacityReservationId": RID, "NetworkNodes": "a,b,c"}]},
        {"CapacityReservations": [{"CapacityReservationId": RID, "NetworkNodes": [1, 2, 3]}]},
        {"CapacityReservations": ["x"]},
    ],
)
def test_malformed_response_is_a_fail_row_without_traceback(tmp_path: Path, response: dict[str, Any]) -> None:
    """Through the CLI, answered from a --responses file: types checked on replay, missing members by the parser."""
    out = _write_assembly(tmp_path, _asg_template(placement=True))
    recorded = tmp_path / "responses.json"
    recorded.write_text(json.dumps({"ec2": {"DescribeCapacityReservationTopology": response}}))
    result = CliRunner().invoke(cli, ["preflight", str(out), "--responses", str(recorded), "--json"])
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    rows = [c for c in json.loads(result.output)["checks"] if c["check"] == "topology"]
    assert len(rows) == 1 and rows[0]["status"] in {"FAIL", "WARN"}
    # Wrong types stop at the replay layer (botocore's validator, as Stubber); a missing id reaches the parser.
    assert "malformed" in rows[0]["detail"] or "not of the API's output shape" in rows[0]["detail"]
    assert result.exit_code == 1


def test_cli_replay_pass_row(tmp_path: Path) -> None:
    out = _write_assembly(tmp_path, _asg_template(placement=True))
    recorded = tmp_path / "responses.json"
    page = {"CapacityReservations": [_entry(RID, ["a", "b", "c"])]}
    recorded.write_text(json.dumps({"ec2": {"DescribeCapacityReservationTopology": page}}))
    result = CliRunner().invoke(cli, ["preflight", str(out), "--responses", str(recorded), "--json"])
    rows = [c for c in json.loads(result.output)["checks"] if c["check"] == "topology"]
    assert [r["status"] for r in rows] == ["PASS"]
