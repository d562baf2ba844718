"""Helpers of tests/parallelcluster/test_parallelcluster_schema.py that other test modules use too."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from fmconstructs import (
    CATALOG,
)

ROOT = Path(__file__).resolve().parents[2]
PCLUSTER_PYTHON = ROOT / ".venv-pcluster" / "bin" / "python"
VALIDATOR = ROOT / "tools" / "pcluster_validate.py"
# One subprocess checks a whole batch in about a second; a hang would mean a network call that the validator failed
# to refuse.
TIMEOUT_S = 120


def require_pcluster() -> Path:
    """The .venv-pcluster interpreter, or skip with the reason (fail under CI=true, where `make test` creates it)."""
    if PCLUSTER_PYTHON.is_file() and os.access(PCLUSTER_PYTHON, os.X_OK):
        return PCLUSTER_PYTHON
    reason = f"{PCLUSTER_PYTHON.relative_to(ROOT)} is missing (aws-parallelcluster; `make test` creates it)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _offline_env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    return env


def _instance_types_in(value: Any) -> set[str]:
    """Every string under an ``InstanceType`` key of a configuration."""
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k == "InstanceType" and isinstance(v, str)}
        return found.union(*(_instance_types_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_instance_types_in(v) for v in value))
    return set()


def describe_instance_types(instance_types: set[str]) -> list[dict[str, Any]]:
    """DescribeInstanceTypes entries: moto's bundled EC2 data, else (p6e-gb200.36xlarge, absent from moto) the fmconstructs
    catalog's facts (architecture, memory, instance store) in the API's shape; unknown types are left out."""
    out: list[dict[str, Any]] = []
    with mock_aws():
        client = boto3.client("ec2", region_name="us-east-1")
        for instance_type in sorted(instance_types):
            try:
                out += client.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"]
            except ClientError:
                if instance_type in CATALOG:
                    spec = CATALOG.get(instance_type)
                    out.append(
                        {
                            "InstanceType": instance_type,
                            "ProcessorInfo": {"SupportedArchitectures": [spec.architecture.value]},
                            "MemoryInfo": {"SizeInMiB": spec.memory_mib},
                            "VCpuInfo": {"DefaultVCpus": spec.vcpus},
                            "InstanceStorageSupported": spec.instance_store is not None,
                        }
                    )
    return out


def check_configs(configs: list[Any], *, offline_validators: bool = False) -> list[dict[str, Any]]:
    """One JSON result per configuration from tools/pcluster_validate.py in .venv-pcluster. With offline_validators,
    the instance types of the configurations are described (describe_instance_types) for the architecture and head
    node memory validators."""
    python = require_pcluster()
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for index, config in enumerate(configs):
            path = Path(directory) / f"config-{index}.json"
            path.write_text(json.dumps(config), encoding="utf-8")
            paths.append(str(path))
        options = []
        if offline_validators:
            types_path = Path(directory) / "instance-types.json"
            described = describe_instance_types(_instance_types_in(configs))
            types_path.write_text(json.dumps({"InstanceTypes": described}, default=str), encoding="utf-8")
            options = ["--offline-validators", "--instance-types", str(types_path)]
        args = [str(python), str(VALIDATOR), *options, *paths]
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=TIMEOUT_S, env=_offline_env(), check=False, cwd=ROOT
        )
    assert done.returncode in (0, 1), done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(results) == len(configs), done.stdout + done.stderr
    for result in results:
        assert not any(call.startswith("socket") for call in result["aws_calls_blocked"]), result
    return results


def error_text(result: dict[str, Any]) -> str:
    """The schema's messages and the validators' ERROR failures of one result, as one string."""
    parts = [json.dumps(result["errors"])] if result["errors"] else []
    parts += [f["message"] for f in result.get("validator_failures", []) if f["level"] == "ERROR"]
    return "\n".join(parts)


_INTRINSIC_KEYS = frozenset(
    {
        "Ref",
        "Fn::GetAtt",
        "Fn::Join",
        "Fn::Sub",
        "Fn::ImportValue",
        "Fn::Select",
        "Fn::If",
        "Fn::Split",
        "Fn::GetAZs",
        "Fn::FindInMap",
        "Fn::Base64",
        "Fn::Cidr",
        "Fn::Length",
        "Fn::ToJsonString",
    }
)


_ACCOUNT = "123456789012"
# Placeholders by configuration key; each matches the pattern aws-parallelcluster's schema applies to the key
# (common_schema.py ALLOWED_VALUES subnet_id/security_group_id, constants.py PCLUSTER_AMI_ID_REGEX, IAM_*_REGEX).
_PLACEHOLDERS: dict[str, Any] = {
    "SubnetId": "subnet-0123456789abcdef0",
    "SubnetIds": "subnet-0123456789abcdef0",
    "SecurityGroups": "sg-0123456789abcdef0",
    "AdditionalSecurityGroups": "sg-0123456789abcdef0",
    "CustomAmi": "ami-0123456789abcdef0",
    "FileSystemId": "fs-0123456789abcdef0",
    "CapacityReservationId": "cr-0123456789abcdef0",
    "CapacityReservationResourceGroupArn": f"arn:aws:resource-groups:us-east-1:{_ACCOUNT}:group/placeholder",
    "InstanceRole": f"arn:aws:iam::{_ACCOUNT}:role/placeholder",
    "InstanceProfile": f"arn:aws:iam::{_ACCOUNT}:instance-profile/placeholder",
    "Policy": f"arn:aws:iam::{_ACCOUNT}:policy/placeholder",
    "PermissionsBoundary": f"arn:aws:iam::{_ACCOUNT}:policy/placeholder",
    "KmsKeyId": f"arn:aws:kms:us-east-1:{_ACCOUNT}:key/01234567-89ab-cdef-0123-456789abcdef",
    "Script": "s3://placeholder-bucket/placeholder/key.sh",
    "Args": "placeholder",
    "BucketName": "placeholder-bucket",
    "KeyName": "placeholder-key",
    "LaunchTemplateId": "lt-0123456789abcdef0",
    "MountDir": "/placeholder",
    "Name": "placeholder",
    "Id": "placeholder",
    "Key": "placeholder",
    "Value": "placeholder",
    "DomainAddr": "ldaps://placeholder.example.com",
    "PasswordSecretArn": f"arn:aws:secretsmanager:us-east-1:{_ACCOUNT}:secret:placeholder",
    "MungeKeySecretArn": f"arn:aws:secretsmanager:us-east-1:{_ACCOUNT}:secret:munge",
    "Uri": "db.example.internal:3306",  # SlurmSettings.Database.Uri: host:port, no scheme
    "Host": "slurmdbd.example.internal",  # SlurmSettings.ExternalSlurmdbd.Host
    "CustomS3Bucket": "placeholder-bucket",
    "AdditionalResources": "https://placeholder-bucket.s3.amazonaws.com/placeholder.yaml",
    "MinCount": 1,
    "MaxCount": 1,
    "RetentionInDays": 14,
    "Enabled": True,
}


_LIST_KEYS = frozenset({"SubnetIds", "SecurityGroups", "AdditionalSecurityGroups", "Args"})


def _is_intrinsic(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _INTRINSIC_KEYS


def _placeholder(key: str | None, path: str) -> Any:
    if key not in _PLACEHOLDERS:
        raise KeyError(f"no placeholder shape for an intrinsic under {key!r} at {path}: add one to _PLACEHOLDERS")
    return _PLACEHOLDERS[key]


def replace_intrinsics(value: Any, key: str | None = None, path: str = "") -> Any:
    """A copy of a ClusterConfiguration with every CloudFormation intrinsic replaced by a placeholder of the key's shape.

    An intrinsic standing for a list (SubnetIds: {"Fn::Split": ...}) becomes a one-item list; list items take the
    shape of the list's key. Unresolved CDK tokens as strings (``${Token[...]}``) are treated as intrinsics. An
    intrinsic under a key with no known shape raises KeyError, so a new key gets an explicit placeholder.
    """
    if _is_intrinsic(value) or (isinstance(value, str) and "${Token[" in value):
        placeholder = _placeholder(key, path)
        return [placeholder] if key in _LIST_KEYS and not path.endswith("]") else placeholder
    if isinstance(value, dict):
        return {name: replace_intrinsics(item, name, f"{path}.{name}") for name, item in value.items()}
    if isinstance(value, list):
        return [replace_intrinsics(item, key, f"{path}[{index}]") for index, item in enumerate(value)]
    return copy.deepcopy(value)


SUBNET = "subnet-0123456789abcdef0"


def _cluster(*queues: dict[str, Any], **top: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "Region": "us-east-1",
        "Image": {"Os": "alinux2023"},
        "HeadNode": {
            "InstanceType": "m7i.2xlarge",
            "Networking": {"SubnetId": SUBNET},
            "Imds": {"Secured": True},
        },
        "Scheduling": {"Scheduler": "slurm", "SlurmQueues": list(queues)},
    }
    config.update(top)
    return config


def _queue(name: str, *resources: dict[str, Any], **extra: Any) -> dict[str, Any]:
    queue: dict[str, Any] = {"Name": name, "Networking": {"SubnetIds": [SUBNET]}, "ComputeResources": list(resources)}
    for key, value in extra.items():
        if key in ("PlacementGroup", "AdditionalSecurityGroups", "SecurityGroups"):
            queue["Networking"][key] = value
        else:
            queue[key] = value
    return queue


LUSTRE = {
    "Name": "fsx",
    "StorageType": "FsxLustre",
    "MountDir": "/fsx",
    "FsxLustreSettings": {"FileSystemId": "fs-0123456789abcdef0"},
}
