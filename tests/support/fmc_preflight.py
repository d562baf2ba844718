"""Helpers of tests/cli/test_fmc_preflight.py that other test modules use too."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner

from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli import preflight as pf
from fmconstructs.cli.main import cli

REGION = "us-east-1"
NOW = dt.datetime.now(dt.UTC)  # preflight compares reservation end dates with the real clock
RID = "cr-0fedcba9876543210"


def _interfaces(efa: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
    out += [{"NetworkCardIndex": i, "DeviceIndex": 0 if i else 1, "InterfaceType": "efa-only"} for i in range(efa)]
    return out


def _template(
    *,
    instance_type: str = "p5.48xlarge",
    max_nodes: int = 2,
    subnet: str | None = None,
    image: str | None = None,
    reservation: str | None = None,
    block: bool = False,
    efa_fsx: bool = False,
) -> dict[str, Any]:
    efa = get_instance_spec(instance_type).maximum_efa_interfaces
    data: dict[str, Any] = {"InstanceType": instance_type, "NetworkInterfaces": _interfaces(efa)}
    if image:
        data["ImageId"] = image
    if reservation:
        data["CapacityReservationSpecification"] = {"CapacityReservationTarget": {"CapacityReservationId": reservation}}
    if block:
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    resources: dict[str, Any] = {
        "Lt": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": data}},
        "Fleet": {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "Properties": {
                "MinSize": "0",
                "MaxSize": str(max_nodes),
                "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}},
                **({"VPCZoneIdentifier": [subnet]} if subnet else {}),
            },
        },
    }
    if efa_fsx:
        resources["Fs"] = {
            "Type": "AWS::FSx::FileSystem",
            "Properties": {
                "FileSystemType": "LUSTRE",
                "StorageCapacity": 4800,
                "LustreConfiguration": {
                    "DeploymentType": "PERSISTENT_2",
                    "PerUnitStorageThroughput": 1000,
                    "EfaEnabled": True,
                },
            },
        }
    return {"Resources": resources}


def _write_assembly(root: Path, template: dict[str, Any]) -> Path:
    out = root / "cdk.out"
    out.mkdir()
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


def _quotas(value: float | None, error: str | None = None) -> tuple[Any, Stubber]:
    client = boto3.client("service-quotas", region_name=REGION)
    stub = Stubber(client)
    params = {"ServiceCode": "ec2", "QuotaCode": pf.ON_DEMAND_P_QUOTA_CODE}
    if error:
        stub.add_client_error("get_service_quota", service_error_code=error, expected_params=params)
    elif value is not None:
        response = {"Quota": {"ServiceCode": "ec2", "QuotaCode": pf.ON_DEMAND_P_QUOTA_CODE, "Value": value}}
        stub.add_response("get_service_quota", response, params)
    stub.activate()
    return client, stub


def _run(monkeypatch: pytest.MonkeyPatch, out: Path, ec2: Any, quotas: Any, *args: str) -> Any:
    monkeypatch.setattr(pf, "_session_clients", lambda region, profile: (ec2, quotas, region or REGION))
    return CliRunner().invoke(cli, ["preflight", str(out), "--json", *args])


def _checks(result: Any) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(result.output)
    by: dict[str, list[dict[str, Any]]] = {}
    for c in data["checks"]:
        by.setdefault(c["check"], []).append(c)
    return by


def _reservation(**overrides: Any) -> dict[str, Any]:
    r = {
        "CapacityReservationId": RID,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "StartDate": NOW - dt.timedelta(hours=1),
        "EndDate": NOW + dt.timedelta(hours=10),
        "CapacityBlockId": "cb-0123456789abcdef0",
    }
    r.update(overrides)
    return r


def _stub_capacity(stub: Stubber, reservation: dict[str, Any]) -> None:
    stub.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [reservation]},
        {"CapacityReservationIds": [RID]},
    )
    if reservation.get("CapacityBlockId"):
        block = {
            "CapacityBlockId": reservation["CapacityBlockId"],
            "AvailabilityZone": reservation["AvailabilityZone"],
            "CapacityReservationIds": [RID],
            "State": "active",
        }
        stub.add_response(
            "describe_capacity_blocks",
            {"CapacityBlocks": [block]},
            {"CapacityBlockIds": [reservation["CapacityBlockId"]]},
        )


def _stub_region_offering(stub: Stubber, instance_type: str = "p5.48xlarge") -> None:
    stub.add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": [{"InstanceType": instance_type, "LocationType": "region", "Location": REGION}]},
        {"LocationType": "region", "Filters": [{"Name": "instance-type", "Values": [instance_type]}]},
    )


def _run_stubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], stub_ec2: Any, *args: str
) -> Any:
    out = _write_assembly(tmp_path, template)
    quotas, _ = _quotas(None)
    return _run(monkeypatch, out, stub_ec2, quotas, *args)
