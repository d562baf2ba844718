"""`fmc preflight`: read-only checks against moto (subnets, images, instance type offerings) and botocore's Stubber
(capacity reservations and blocks, Capacity Block offerings, Service Quotas, AWS errors)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from click.testing import CliRunner
from moto import mock_aws

from fmconstructs.cli import preflight as pf
from fmconstructs.cli.assembly import parse_stack
from fmconstructs.cli.main import cli
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.preflight import ReservationInfo, block_end_problem

from tests.support.fmc_preflight import (
    NOW,
    REGION,
    RID,
    _checks,
    _quotas,
    _reservation,
    _run,
    _run_stubbed,
    _stub_capacity,
    _stub_region_offering,
    _template,
    _write_assembly,
)


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def moto_ec2() -> Any:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        big = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", AvailabilityZone="us-east-1a")["Subnet"]
        small = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.16.0/28", AvailabilityZone="us-east-1a")["Subnet"]
        # moto's default Amazon images carry an Architecture (register_image records none).
        images = {
            arch: ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "architecture", "Values": [arch]}])[
                "Images"
            ][0]["ImageId"]
            for arch in ("x86_64", "arm64")
        }
        x86, arm = images["x86_64"], images["arm64"]
        yield {"vpc": vpc, "client": ec2, "big": big["SubnetId"], "small": small["SubnetId"], "x86": x86, "arm": arm}


def test_moto_every_check_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_ec2: dict[str, Any]) -> None:
    out = _write_assembly(tmp_path, _template(subnet=moto_ec2["big"], image=moto_ec2["x86"], efa_fsx=True))
    quotas, stub = _quotas(384)
    result = _run(monkeypatch, out, moto_ec2["client"], quotas)
    assert result.exit_code == 0, result.output
    checks = _checks(result)
    assert checks["offering"][0]["status"] == "PASS" and "us-east-1a" in checks["offering"][0]["detail"]
    assert checks["subnet IPs"][0]["status"] == "PASS"
    assert "2 IPs needed, " in checks["subnet IPs"][0]["detail"]
    assert "(2 nodes x 1 IP-carrying interface)" in checks["subnet IPs"][0]["detail"]
    assert checks["image"][0]["status"] == "PASS" and "x86_64" in checks["image"][0]["detail"]
    assert checks["quota"][0]["status"] == "PASS" and "planned 384 vCPUs" in checks["quota"][0]["detail"]
    assert checks["FSx EFA budget"][0]["status"] == "PASS" and "16 of 1,024" in checks["FSx EFA budget"][0]["detail"]
    stub.assert_no_pending_responses()


def test_moto_failures_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_ec2: dict[str, Any]) -> None:
    template = _template(max_nodes=200, subnet=moto_ec2["small"], image=moto_ec2["arm"], efa_fsx=True)
    out = _write_assembly(tmp_path, template)
    quotas, _ = _quotas(384)
    result = _run(monkeypatch, out, moto_ec2["client"], quotas)
    assert result.exit_code == 1, result.output
    checks = _checks(result)
    assert checks["subnet IPs"][0]["status"] == "FAIL"  # a /28 has 11 free addresses
    assert checks["image"][0]["status"] == "FAIL" and "needs x86_64" in checks["image"][0]["detail"]
    assert checks["quota"][0]["status"] == "FAIL" and "38,400" in checks["quota"][0]["detail"]
    assert checks["FSx EFA budget"][0]["status"] == "FAIL" and "1,600 of 1,024" in checks["FSx EFA budget"][0]["detail"]


def test_moto_type_not_offered_and_missing_ami(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_ec2: dict[str, Any]
) -> None:
    ec2 = moto_ec2["client"]
    vpc = moto_ec2["vpc"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.32.0/24", AvailabilityZone="us-east-1e")["Subnet"]
    # moto's offerings data (from EC2) has p5en.48xlarge in us-east-1a and us-east-1c only.
    template = _template(instance_type="p5en.48xlarge", subnet=subnet["SubnetId"], image="ami-0123456789abcdef0")
    out = _write_assembly(tmp_path, template)
    quotas, _ = _quotas(1000)
    result = _run(monkeypatch, out, ec2, quotas)
    assert result.exit_code == 1
    checks = _checks(result)
    assert checks["offering"][0]["status"] == "FAIL" and "not offered in us-east-1e" in checks["offering"][0]["detail"]
    assert checks["images"][0]["status"] == "FAIL" and "not found" in checks["images"][0]["detail"]
    assert "Traceback" not in result.output


def test_moto_missing_subnet_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_ec2: dict[str, Any]
) -> None:
    out = _write_assembly(tmp_path, _template(subnet="subnet-0123456789abcdef0"))
    quotas, _ = _quotas(1000)
    result = _run(monkeypatch, out, moto_ec2["client"], quotas)
    assert result.exit_code == 1
    checks = _checks(result)
    assert (
        checks["subnets"][0]["status"] == "FAIL"
        and "not found (InvalidSubnetID.NotFound)" in checks["subnets"][0]["detail"]
    )


def test_capacity_block_fits_and_ends_inside_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        _stub_capacity(stub, _reservation())
        _stub_region_offering(stub)
        offer = {
            "CapacityBlockOfferingId": "cbr-0123456789abcdef0",
            "InstanceType": "p5.48xlarge",
            "AvailabilityZone": "us-east-1a",
            "InstanceCount": 4,
            "StartDate": NOW + dt.timedelta(days=1),
            "CapacityBlockDurationHours": 168,
            "UpfrontFee": "1000.00",
            "CurrencyCode": "USD",
        }
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": [offer]},
            {"InstanceType": "p5.48xlarge", "InstanceCount": 4, "CapacityDurationHours": 168},
        )
        template = _template(reservation=RID, block=True)
        result = _run_stubbed(
            tmp_path, monkeypatch, template, ec2, "--training-window-hours", "24", "--find-block", "p5.48xlarge:4:7"
        )
        stub.assert_no_pending_responses()
    assert result.exit_code == 0, result.output
    checks = _checks(result)
    assert checks["capacity"][0]["status"] == "PASS"
    assert "capacity-block active, 2 x p5.48xlarge in us-east-1a" in checks["capacity"][0]["detail"]
    assert (
        checks["capacity end"][0]["status"] == "WARN"
        and "24.0 h training window" in checks["capacity end"][0]["detail"]
    )
    assert checks["quota"][0]["status"] == "SKIP"  # Capacity Block groups are not counted
    assert checks["offering"][0]["status"] == "PASS"
    assert (
        checks["block offerings"][0]["status"] == "INFO"
        and "cbr-0123456789abcdef0" in checks["block offerings"][0]["detail"]
    )


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"InstanceType": "p5en.48xlarge"}, "reserves p5en.48xlarge, not p5.48xlarge"),
        ({"TotalInstanceCount": 1}, "2 nodes exceed the 1 instances"),
        ({"State": "expired"}, "is expired"),
        ({"ReservationType": "default", "CapacityBlockId": None}, "configured for a Capacity Block"),
    ],
)
def test_capacity_mismatches_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict[str, Any], expected: str
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    reservation = {k: v for k, v in _reservation(**overrides).items() if v is not None}
    with Stubber(ec2) as stub:
        _stub_capacity(stub, reservation)
        _stub_region_offering(stub)
        result = _run_stubbed(tmp_path, monkeypatch, _template(reservation=RID, block=True), ec2)
    assert result.exit_code == 1, result.output
    (capacity,) = _checks(result)["capacity"]
    assert capacity["status"] == "FAIL" and expected in capacity["detail"]


def test_reservation_zone_against_subnet_zone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = "subnet-0123456789abcdef0"
    with Stubber(ec2) as stub:
        subnet_info = {"SubnetId": subnet, "AvailabilityZone": "us-east-1b", "AvailableIpAddressCount": 200}
        stub.add_response("describe_subnets", {"Subnets": [subnet_info]}, {"SubnetIds": [subnet]})
        reservation = _reservation(ReservationType="default")
        del reservation["CapacityBlockId"]
        _stub_capacity(stub, reservation)
        stub.add_response(
            "describe_instance_type_offerings",
            {"InstanceTypeOfferings": [{"InstanceType": "p5.48xlarge", "Location": "us-east-1b"}]},
            {"LocationType": "availability-zone", "Filters": ANY},
        )
        template = _template(reservation=RID, subnet=subnet)
        out = _write_assembly(tmp_path, template)
        quotas, _ = _quotas(400)
        result = _run(monkeypatch, out, ec2, quotas)
    assert result.exit_code == 1
    checks = _checks(result)
    assert "is in us-east-1a but the group's subnets are in us-east-1b" in checks["capacity"][0]["detail"]
    assert checks["quota"][0]["status"] == "PASS"  # ODCR instances are On-Demand instances


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("UnauthorizedOperation", "missing permission ec2:DescribeCapacityReservations"),
        ("RequestLimitExceeded", "throttled (RequestLimitExceeded)"),
        ("InvalidCapacityReservationId.NotFound", "not found (InvalidCapacityReservationId.NotFound)"),
    ],
)
def test_aws_errors_are_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, expected: str) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", service_error_code=code, service_message="nope")
        _stub_region_offering(stub)
        result = _run_stubbed(tmp_path, monkeypatch, _template(reservation=RID, block=True), ec2)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    (capacity,) = _checks(result)["capacity"]
    assert capacity["status"] == "FAIL" and expected in capacity["detail"]


def test_quota_access_denied_names_the_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        _stub_region_offering(stub)
        out = _write_assembly(tmp_path, _template())
        quotas, _ = _quotas(None, error="AccessDeniedException")
        result = _run(monkeypatch, out, ec2, quotas)
    assert result.exit_code == 1
    (quota,) = _checks(result)["quota"]
    assert "missing permission servicequotas:GetServiceQuota" in quota["detail"]


def test_table_output_and_no_offerings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        _stub_region_offering(stub)
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []})
        out = _write_assembly(tmp_path, _template())
        quotas, _ = _quotas(1000)
        monkeypatch.setattr(pf, "_session_clients", lambda region, profile: (ec2, quotas, REGION))
        result = CliRunner().invoke(cli, ["preflight", str(out), "--find-block", "p5.48xlarge:2:1"])
    assert result.exit_code == 0, result.output
    assert "fmc preflight (us-east-1)" in result.output and "preflight passed" in result.output
    assert "no Capacity Block offering matches" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--find-block", "p5.48xlarge:2"],
        ["--find-block", "p5.48xlarge:0:1"],
        ["--find-block", "p5.48xlarge:x:1"],
        ["--training-window-hours", "nan"],
        ["--training-window-hours", "-1"],
    ],
)
def test_bad_options(tmp_path: Path, args: list[str]) -> None:
    out = _write_assembly(tmp_path, _template())
    result = CliRunner().invoke(cli, ["preflight", str(out), *args])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_missing_assembly_and_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(cli, ["preflight", str(tmp_path / "nowhere")])
    assert result.exit_code == 3 and "manifest.json" in result.output  # ExitCode.ASSEMBLY
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    template = _template()
    out = tmp_path / "a"
    out.mkdir()
    (out / "t.json").write_text(json.dumps(template))
    manifest = {"artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "t.json"}}}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(cli, ["preflight", str(out)])
    assert result.exit_code == 5 and "give --region" in result.output  # ExitCode.AWS_SETUP


def test_unknown_profile_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    out = _write_assembly(tmp_path, _template())
    result = CliRunner().invoke(cli, ["preflight", str(out), "--profile", "nope"])
    # ExitCode.NO_CREDENTIALS: an unknown profile gives no credentials
    assert result.exit_code == 4 and "nope" in result.output and "Traceback" not in result.output


def test_resource_group_targets_are_skipped() -> None:
    template = _template()
    lt = template["Resources"]["Lt"]["Properties"]["LaunchTemplateData"]
    arn = "arn:aws:resource-groups:us-east-1:123456789012:group/blocks"
    lt["CapacityReservationSpecification"] = {"CapacityReservationTarget": {"CapacityReservationResourceGroupArn": arn}}
    plan = plan_stacks([parse_stack("S", template)])
    ec2 = boto3.client("ec2", region_name=REGION)
    quotas, _ = _quotas(10_000)
    with Stubber(ec2) as stub:
        _stub_region_offering(stub)
        report = pf.Preflight(plan, ec2=ec2, quotas=quotas, region=REGION).run()
    (capacity,) = [c for c in report.checks if c.check == "capacity"]
    assert capacity.status is pf.Status.SKIP and "resource-groups:ListGroupResources" in capacity.detail


def _info(**kw: Any) -> ReservationInfo:
    values: dict[str, Any] = {
        "reservation_id": RID,
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "total_instance_count": 2,
        "available_instance_count": 2,
        "state": "active",
        "reservation_type": "capacity-block",
        "end_date": NOW + dt.timedelta(hours=10),
    }
    values.update(kw)
    return ReservationInfo(**values)


def test_block_end_problem() -> None:
    assert block_end_problem(_info(), training_window_hours=5, now=NOW) is None
    warning = block_end_problem(_info(), training_window_hours=24, now=NOW)
    assert warning is not None and "10.0 h after now" in warning
    scheduled = _info(start_date=NOW + dt.timedelta(hours=5), end_date=NOW + dt.timedelta(hours=15))
    assert "10.0 h after it starts" in str(block_end_problem(scheduled, training_window_hours=12, now=NOW))
    assert block_end_problem(_info(end_date=None), training_window_hours=1000, now=NOW) is None


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"info": "cr-1", "training_window_hours": 1}, "info"),
        ({"training_window_hours": float("nan")}, "training_window_hours"),
        ({"training_window_hours": True}, "training_window_hours"),
        ({"training_window_hours": 0}, "training_window_hours"),
        ({"training_window_hours": "24"}, "training_window_hours"),
        ({"training_window_hours": 1, "now": "now"}, "now"),
    ],
)
def test_block_end_problem_bad_input(kwargs: dict[str, Any], parameter: str) -> None:
    args: dict[str, Any] = {"info": _info(), **kwargs}
    with pytest.raises(FmValidationError) as caught:
        block_end_problem(**args)
    assert parameter in str(caught.value)
    if parameter in ("info", "now"):
        assert isinstance(caught.value, FmTypeError)


class _FakeEc2:
    """Answers the read calls preflight makes, for the example app's reservations (neither moto nor Stubber
    models DescribeCapacityReservations/DescribeCapacityBlocks for many ids in any order)."""

    def __init__(self) -> None:
        end = NOW + dt.timedelta(days=3)
        self.reservations = {
            "cr-0fedcba9876543210": _reservation(InstanceType="p5.48xlarge", TotalInstanceCount=2, EndDate=end),
            "cr-0e5e5e5e5e5e5e5e5": _reservation(
                CapacityReservationId="cr-0e5e5e5e5e5e5e5e5",
                InstanceType="p5en.48xlarge",
                TotalInstanceCount=2,
                CapacityBlockId="cb-p5en",
                EndDate=end,
            ),
            "cr-0b300b300b300b300": {
                k: v
                for k, v in _reservation(
                    CapacityReservationId="cr-0b300b300b300b300",
                    InstanceType="p6-b300.48xlarge",
                    TotalInstanceCount=1,
                    ReservationType="default",
                ).items()
                if k not in ("CapacityBlockId", "EndDate")
            },
            "cr-0123456789abcdef0": {
                k: v
                for k, v in _reservation(
                    CapacityReservationId="cr-0123456789abcdef0",
                    InstanceType="p5.48xlarge",
                    TotalInstanceCount=4,
                    ReservationType="default",
                ).items()
                if k not in ("CapacityBlockId", "EndDate")
            },
            "cr-0a1b2c3d4e5f60718": _reservation(
                CapacityReservationId="cr-0a1b2c3d4e5f60718",
                InstanceType="p6e-gb200.36xlarge",
                TotalInstanceCount=18,
                CapacityBlockId="cb-gb200",
                EndDate=end,
            ),
        }
        self.calls: list[str] = []

    def describe_capacity_reservations(self, CapacityReservationIds: list[str]) -> dict[str, Any]:
        self.calls.append("DescribeCapacityReservations")
        return {
            "CapacityReservations": [self.reservations[i] for i in CapacityReservationIds if i in self.reservations]
        }

    def describe_capacity_blocks(self, CapacityBlockIds: list[str]) -> dict[str, Any]:
        self.calls.append("DescribeCapacityBlocks")
        ultra = "u-p6e-gb200x72" if CapacityBlockIds == ["cb-gb200"] else None
        block = {"CapacityBlockId": CapacityBlockIds[0], "AvailabilityZone": "us-east-1a", "State": "active"}
        return {"CapacityBlocks": [block | ({"UltraserverType": ultra} if ultra else {})]}

    def describe_instance_type_offerings(self, LocationType: str, Filters: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append("DescribeInstanceTypeOfferings")
        itype = Filters[0]["Values"][0]
        return {"InstanceTypeOfferings": [{"InstanceType": itype, "LocationType": LocationType, "Location": REGION}]}

    def describe_images(self, ImageIds: list[str]) -> dict[str, Any]:
        self.calls.append("DescribeImages")
        return {"Images": [{"ImageId": i, "Architecture": "x86_64", "State": "available"} for i in ImageIds]}


def test_example_app_assembly(monkeypatch: pytest.MonkeyPatch, example_assembly: Path) -> None:
    out = example_assembly  # the example app's cdk.out (tests/conftest.py: synthesized once per run, shared)
    ec2 = _FakeEc2()
    quotas, _ = _quotas(1000)
    result = _run(monkeypatch, out, ec2, quotas, "--training-window-hours", "96")
    checks = _checks(result)
    # The example app's placeholder reservations are per instance type (examples/reservations.py): against an account
    # holding each id with its type, every capacity check passes and nothing fails.
    failed = [c for group in checks.values() for c in group if c["status"] == "FAIL"]
    assert failed == []
    assert result.exit_code == 0
    targets = {c["target"]: c for c in checks["capacity"]}
    pcs = targets["FmPcsP5/ClusterP571BCBDA0 cr-0fedcba9876543210"]
    assert pcs["status"] == "PASS"
    for target in (
        "FmCompute/P5enFleet3053A6BA cr-0e5e5e5e5e5e5e5e5",
        "FmEksP5en/ClusterP5en7207CC32 cr-0e5e5e5e5e5e5e5e5",
        "FmEksP5en/ClusterP6B30025EA41B7 cr-0b300b300b300b300",
    ):
        assert targets[target]["status"] == "PASS", targets[target]
    gb200 = targets["FmPcsGb200/ClusterGb200BE473A41 cr-0a1b2c3d4e5f60718"]
    assert gb200["status"] == "PASS" and "18 x p6e-gb200.36xlarge" in gb200["detail"]
    skipped = [c for c in checks["capacity"] if c["status"] == "SKIP"]
    assert skipped and all("resource group" in c["detail"] for c in skipped)
    ends = [c for c in checks["capacity end"] if "Capacity Block" in c["detail"]]
    assert ends and all(c["status"] == "WARN" for c in ends)  # 3-day blocks against a 96 h window
    assert checks["quota"][0]["status"] == "PASS"  # the ODCR p6-b300 group on EKS
    assert {c["status"] for c in checks["offering"]} == {"PASS"}
    assert {c["status"] for c in checks["image"]} == {"PASS"}
    budget = checks["FSx EFA budget"]
    # ParallelCluster's queue is counted from the construct's Metadata marker (2 p5en nodes x 8 interfaces)
    assert {c["status"] for c in budget} == {"PASS"}
    (pcluster,) = [c for c in budget if c["target"].startswith("FmParallelClusterP5en/")]
    assert "16 of 1,024 EFA connections" in pcluster["detail"] and "gpu/p5en: 2 x 8 = 16" in pcluster["detail"]
    assert {c["status"] for c in checks.get("subnet IPs", [])} <= {"SKIP"}


def _price_entry(usd: str) -> str:
    dimension = {"unit": "Hrs", "pricePerUnit": {"USD": usd}, "description": "On Demand Linux"}
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": "p5.48xlarge"}},
            "terms": {"OnDemand": {"SKU.TERM": {"priceDimensions": {"SKU.TERM.DIM": dimension}}}},
        }
    )


@pytest.mark.parametrize(
    ("price_list", "status", "expected"),
    [
        ([_price_entry("10.5000000000")], "INFO", "10.5000 USD/hour/node On-Demand list price"),
        ([_price_entry("0.0000000000")], "WARN", "no On-Demand Linux price listed in us-east-1"),
        (["not json"], "WARN", "no On-Demand Linux price"),
    ],
)
def test_prices_from_the_price_list_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, price_list: list[str], status: str, expected: str
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(ec2) as stub, Stubber(pricing) as price_stub:
        _stub_region_offering(stub)
        price_stub.add_response("get_products", {"PriceList": price_list}, {"ServiceCode": "AmazonEC2", "Filters": ANY})
        out = _write_assembly(tmp_path, _template())
        quotas, _ = _quotas(1000)
        monkeypatch.setattr(pf, "_pricing_client", lambda profile: pricing)
        result = _run(monkeypatch, out, ec2, quotas, "--prices")
        price_stub.assert_no_pending_responses()
    assert result.exit_code == 0, result.output
    (price,) = _checks(result)["price"]
    assert price["status"] == status and expected in price["detail"]
    if status == "INFO":
        assert "2 nodes = 21.00 USD/hour" in price["detail"]


def test_prices_access_denied_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(ec2) as stub, Stubber(pricing) as price_stub:
        _stub_region_offering(stub)
        price_stub.add_client_error("get_products", service_error_code="AccessDeniedException")
        out = _write_assembly(tmp_path, _template())
        quotas, _ = _quotas(1000)
        monkeypatch.setattr(pf, "_pricing_client", lambda profile: pricing)
        result = _run(monkeypatch, out, ec2, quotas, "--prices")
    assert result.exit_code == 0
    (price,) = _checks(result)["price"]
    assert price["status"] == "WARN" and "missing permission pricing:GetProducts" in price["detail"]


def test_hyperpod_groups_skip_the_ec2_checks() -> None:
    # HyperPod instances are SageMaker's: no EC2 reservation lookup of a training plan ARN, no EC2 quota or offering.
    from fmconstructs.cli.assembly import parse_stack
    from fmconstructs.cli.plan import plan_stacks

    template = {
        "Resources": {
            "HP": {
                "Type": "AWS::SageMaker::Cluster",
                "Properties": {
                    "InstanceGroups": [
                        {
                            "InstanceGroupName": "gpu",
                            "InstanceType": "ml.p5.48xlarge",
                            "InstanceCount": 2,
                            "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/tp",
                        }
                    ]
                },
            }
        }
    }
    plan = plan_stacks([parse_stack("S", template)])
    preflight = pf.Preflight(plan, ec2=object(), quotas=object(), region=REGION)
    assert preflight.groups() == []
    preflight.check_capacity()
    assert [c for c in preflight.report.checks if c.check == "capacity"] == []
