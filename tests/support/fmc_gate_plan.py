"""Helpers of tests/cli/test_fmc_gate_plan.py that other test modules use too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fmconstructs.catalog import get_instance_spec

A = "subnet-0aaaaaaaaaaaaaaaa"
B = "subnet-0bbbbbbbbbbbbbbbb"


def _interfaces(instance_type: str) -> list[dict[str, Any]]:
    efa = get_instance_spec(instance_type).maximum_efa_interfaces
    out: list[dict[str, Any]] = [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
    return out + [
        {"NetworkCardIndex": i, "DeviceIndex": 0 if i else 1, "InterfaceType": "efa-only"} for i in range(efa)
    ]


def _pcs_group(lid: str, path: str, instance_type: str, nodes: int, subnets: list[str]) -> dict[str, Any]:
    return {
        f"{lid}Lt": {
            "Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateData": {"NetworkInterfaces": _interfaces(instance_type)}},
            "Metadata": {"aws:cdk:path": f"Fm/{path}/LaunchTemplate/Resource"},
        },
        lid: {
            "Type": "AWS::PCS::ComputeNodeGroup",
            "Properties": {
                "InstanceConfigs": [{"InstanceType": instance_type}],
                "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": nodes},
                "CustomLaunchTemplate": {"TemplateId": {"Ref": f"{lid}Lt"}},
                "SubnetIds": subnets,
            },
            "Metadata": {"aws:cdk:path": f"Fm/{path}/Resource"},
        },
    }


def _template(*, p5_nodes: int = 2, login_subnets: list[str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    resources.update(_pcs_group("ClusterP5ABCD1234", "Cluster/P5", "p5.48xlarge", p5_nodes, [A]))
    resources.update(_pcs_group("ClusterP5enABCD1234", "Cluster/P5en", "p5en.48xlarge", 3, [A]))
    resources["ClusterLogin12345678"] = {
        "Type": "AWS::PCS::ComputeNodeGroup",
        "Properties": {
            "InstanceConfigs": [{"InstanceType": "m7i.xlarge"}],
            "ScalingConfiguration": {"MinInstanceCount": 1, "MaxInstanceCount": 1},
            "SubnetIds": login_subnets or [A],
        },
        "Metadata": {"aws:cdk:path": "Fm/Cluster/Login/Resource"},
    }
    resources["Cluster12345678"] = {
        "Type": "AWS::PCS::Cluster",
        "Properties": {"Networking": {"SubnetIds": [A]}},
        "Metadata": {"aws:cdk:path": "Fm/Cluster/Resource"},
    }
    resources["Lustre12345678"] = {
        "Type": "AWS::FSx::FileSystem",
        "Properties": {"FileSystemType": "LUSTRE", "StorageCapacity": 4800, "SubnetIds": [A]},
        "Metadata": {"aws:cdk:path": "Fm/Lustre/Resource"},
    }
    resources["Ssm12345678"] = {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {"VpcEndpointType": "Interface", "SubnetIds": [A, B]},
        "Metadata": {"aws:cdk:path": "Fm/Endpoints/Ssm/Resource"},
    }
    resources["S3Gateway12345678"] = {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {"VpcEndpointType": "Gateway"},
    }
    return {"Resources": resources}


def _write(tmp_path: Path, template: dict[str, Any]) -> Path:
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "Fm.template.json").write_text(json.dumps(template))
    manifest = {
        "artifacts": {
            "Fm": {
                "type": "aws:cloudformation:stack",
                "displayName": "Fm",
                "environment": "aws://123456789012/us-east-1",
                "properties": {"templateFile": "Fm.template.json"},
            }
        }
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out
