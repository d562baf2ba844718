"""`fmc` plan/preflight figures a CI gate relies on: subnet IPs summed per subnet over every consumer (node groups,
login nodes, FSx, PCS controller, interface endpoints), groups named by construct path, prices only for planned
types with a Stack column and totals, and storage sized the way TrainingPlatform sizes it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fmconstructs.cli.assembly import parse_stack
from fmconstructs.cli.main import cli
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.cli.subnet_ips import check_subnet_ips
from fmconstructs.storage.sizing import size_for_checkpoint

from tests.support.fmc_gate_plan import A, B, _interfaces, _template, _write

pf = importlib.import_module("fmconstructs.cli.preflight")


def _subnet(subnet: str, free: int) -> dict[str, Any]:
    return {"SubnetId": subnet, "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": free}


def _rows(template: dict[str, Any], free: dict[str, int]) -> dict[str, tuple[str, str]]:
    plan = plan_stacks([parse_stack("Fm", template, path_prefix="Fm")])
    rows = check_subnet_ips(plan, {s: _subnet(s, n) for s, n in free.items()})
    return {target: (status, detail) for _, target, status, detail in rows}


def _ips_per_node(instance_type: str) -> int:
    return sum(1 for i in _interfaces(instance_type) if i["InterfaceType"] != "efa-only")


def test_ips_are_summed_per_subnet_over_every_consumer() -> None:
    # GIVEN two GPU groups, login nodes, FSx, the PCS controller and an interface endpoint in subnet A
    need = 2 * _ips_per_node("p5.48xlarge") + 3 * _ips_per_node("p5en.48xlarge") + 1 + 1 + 1 + 1
    # WHEN subnet A has exactly one IP fewer than all of them together (each group alone fits)
    rows = _rows(_template(), {A: need - 1, B: 10})
    # THEN subnet A fails, naming every consumer
    status, detail = rows[A]
    assert status == "FAIL" and detail.startswith(f"{need:,} IPs needed, {need - 1:,} free")
    for name in ("Cluster/P5 ", "Cluster/P5en ", "Cluster/Login ", "Lustre ", "Cluster ", "Endpoints/Ssm "):
        assert name in detail
    assert "at least 1 (at least 1 network interface per FSx file system" in detail
    # AND the endpoint takes one IP in subnet B as well; the gateway endpoint takes none
    assert rows[B] == ("PASS", "1 IPs needed, 10 free: Endpoints/Ssm (Fm): 1 (1 endpoint interface per subnet)")
    assert _rows(_template(), {A: need, B: 10})[A][0] == "PASS"


def test_a_group_spread_over_subnets_is_checked_against_their_sum() -> None:
    rows = _rows(_template(login_subnets=[A, B]), {A: 100, B: 0})
    status, detail = rows[f"{A}, {B}"]
    assert status == "PASS" and "Cluster/Login" in detail and "100 free" in detail


def test_a_subnet_ec2_does_not_return_fails_once() -> None:
    plan = plan_stacks([parse_stack("Fm", _template(), path_prefix="Fm")])
    rows = check_subnet_ips(plan, {A: _subnet(A, 100)})
    (missing,) = [r for r in rows if r[1] == B]
    assert missing[2] == "FAIL" and "not found" in missing[3] and "Endpoints/Ssm" in missing[3]


def test_groups_are_named_by_construct_path() -> None:
    plan = plan_stacks([parse_stack("Fm", _template(), path_prefix="Fm")])
    names = {g.group for g in plan.node_groups}
    assert {"Cluster/P5", "Cluster/P5en", "Cluster/Login"} <= names
    assert not any(n.endswith("ABCD1234") for n in names)
    (fs,) = plan.file_systems
    assert fs.file_system == "Lustre"


def test_plan_tables_show_construct_paths(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(_write(tmp_path, _template()))])
    assert result.exit_code == 0, result.output
    assert "Cluster/P5en" in result.output and "ClusterP5ABCD1234" not in result.output


# --- prices -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "prices", [["p4d.24xlarge=30"], ["p5.48xlarge=55", "p5e.48xlarge=60"], ["p5.48xlarge=55", "P5EN.48xlarge=1"]]
)
def test_a_price_for_a_type_not_in_the_plan_is_an_error(tmp_path: Path, prices: list[str]) -> None:
    args = [arg for p in prices for arg in ("--price-per-hour", p)]
    result = CliRunner().invoke(cli, ["plan", str(_write(tmp_path, _template())), *args])
    assert result.exit_code == 2, result.output
    assert "not an instance type of the plan" in result.output and "Traceback" not in result.output


def test_a_price_for_another_type_than_instance_type_is_an_error() -> None:
    args = ["plan", "--instance-type", "p5.48xlarge", "--nodes", "2", "--price-per-hour", "p5en.48xlarge=3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "p5en.48xlarge" in result.output


def test_cost_table_has_a_stack_column_and_totals(tmp_path: Path) -> None:
    out = _write(tmp_path, _template())
    prices = ["--price-per-hour", "p5.48xlarge=55", "--price-per-hour", "p5en.48xlarge=60"]
    result = CliRunner().invoke(cli, ["plan", str(out), *prices])
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("Cost (prices you gave)") :]
    assert "Stack" in table and "Total" in table
    total = 2 * 55 + 3 * 60
    assert f"{total:,.2f}" in table
    data = json.loads(CliRunner().invoke(cli, ["plan", str(out), *prices, "--json"]).stdout)
    assert data["cost_per_hour_total"] == total


# --- storage sized as TrainingPlatform sizes it --------------------------------------------------------------------
def test_plan_without_an_app_sizes_efa_storage_by_default() -> None:
    args = ["plan", "--instance-type", "p5en.48xlarge", "--nodes", "16", "--checkpoint-bytes", "2e12"]
    args += ["--checkpoint-seconds", "60", "--json"]
    data = json.loads(CliRunner().invoke(cli, args).stdout)
    (fs,) = data["file_systems"]
    expected = size_for_checkpoint(2e12, 60, efa_enabled=True)
    assert fs["efa_enabled"] is True and fs["storage_capacity_gib"] == expected.storage_capacity_gib
    assert any("as TrainingPlatform does" in n and "EFA-enabled" in n for n in data["notes"])
    tcp = json.loads(CliRunner().invoke(cli, [*args, "--no-lustre-efa"]).stdout)
    assert tcp["file_systems"][0]["efa_enabled"] is False


def test_plan_without_an_app_says_why_no_storage_was_sized() -> None:
    result = CliRunner().invoke(cli, ["plan", "--instance-type", "p5.48xlarge", "--nodes", "2", "--json"])
    data = json.loads(result.stdout)
    assert data["file_systems"] == []
    assert any(n.startswith("No storage sized") and "--checkpoint-bytes" in n for n in data["notes"])
