"""Validate ParallelCluster cluster configurations with aws-parallelcluster's own schema, offline.

Run by the interpreter of `.venv-pcluster` (Makefile; requirements-pcluster.txt pins aws-parallelcluster, which pins
CDK v1 and jsii 1.85 and so cannot share the main virtual environment):

    .venv-pcluster/bin/python tools/pcluster_validate.py [--cluster-name NAME] [--offline-validators]
        [--instance-types FILE] [FILE ...]

Each FILE (or stdin when none is given, or "-") holds YAML or JSON; every YAML document in it is one cluster
configuration. For each configuration one JSON line is printed:

    {"source": ..., "index": ..., "ok": true|false, "errors": <marshmallow messages or null>,
     "validator_failures": [...], "aws_calls_blocked": [...]}

The check is `ClusterSchema(cluster_name=...).load(config)`, the call ParallelCluster's own `Cluster._load_config`
makes (pcluster/models/cluster.py) before its semantic validators: it checks keys, types, enumerations, ranges,
regular expressions and the schema's `@validates`/`@validates_schema` rules. Its post_load hooks build the config
model; `SlurmClusterConfig.__init__` (pcluster/config/cluster_config.py) calls ec2.describe_capacity_reservations and
tolerates AWSClientError, which is what the offline AWSApi below raises.

With --offline-validators, the semantic validators that never call AWS and that fmconstructs mirrors are also run
(OFFLINE_VALIDATORS below); their ERROR failures make the configuration fail. The cluster-level ones, which
ParallelCluster registers in SlurmClusterConfig next to AWS reads, are called here with the arguments
pcluster/config/cluster_config.py gives them (_cluster_level_validators). --instance-types FILE (a JSON
DescribeInstanceTypes response, {"InstanceTypes": [...]}) answers ec2.get_instance_type_info offline, for the validators
that need the head node's and the compute types' architecture and memory; types not in it skip those validators
(reported in validator_registration_skipped). All other validators (subnets, reservations, AMIs, ...) need AWS and
are not run.

Offline guarantees: AWS_DEFAULT_REGION defaults to us-east-1, credentials from the environment and shared files are
removed, IMDS is disabled, pcluster's AWSApi singleton is replaced by one whose every call raises AWSClientError, and
sockets refuse to connect (any attempt is reported in aws_calls_blocked). Exit status: 0 when every configuration
passes, 1 when one fails, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from typing import Any

_BLOCKED: list[str] = []


def _offline_environment() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        os.environ.pop(name, None)
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    os.environ["AWS_CONFIG_FILE"] = os.devnull

    def refuse_connect(self: socket.socket, address: Any) -> None:
        _BLOCKED.append(f"socket.connect {address!r}")
        raise OSError(f"pcluster_validate: network disabled (connect to {address!r})")

    def refuse_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _BLOCKED.append(f"socket.create_connection {address!r}")
        raise OSError(f"pcluster_validate: network disabled (connect to {address!r})")

    socket.socket.connect = refuse_connect  # type: ignore[method-assign,assignment]
    socket.create_connection = refuse_create_connection


_INSTANCE_TYPES: dict[str, dict[str, Any]] = {}


class _OfflineClient:
    """Stands for one pcluster AWS client wrapper (AWSApi.instance().ec2, ...): every call raises AWSClientError,
    except ec2.get_instance_type_info for the types given with --instance-types."""

    def __init__(self, service: str, error: type[Exception]) -> None:
        self._service = service
        self._error = error

    def __getattr__(self, name: str) -> Any:
        if name.endswith("_cache") or name == "additional_instance_types_data":
            return {}
        service, error = self._service, self._error
        if (service, name) == ("ec2", "get_subnets_az_mapping"):
            # Offline stand-in: every subnet in the Region's first zone (only validator registration reads it).
            return lambda subnet_ids: dict.fromkeys(subnet_ids, os.environ["AWS_DEFAULT_REGION"] + "a")
        if (service, name) == ("ec2", "get_instance_type_info"):
            return self._instance_type_info

        def call(*args: Any, **kwargs: Any) -> Any:
            _BLOCKED.append(f"{service}.{name}")
            raise error(function_name=name, message=f"offline: {service}.{name} was not called")  # type: ignore[call-arg]

        return call

    def _instance_type_info(self, instance_type: str) -> Any:
        from pcluster.aws.aws_resources import InstanceTypeInfo

        if instance_type not in _INSTANCE_TYPES:
            _BLOCKED.append(f"ec2.get_instance_type_info {instance_type}")
            raise self._error(  # type: ignore[call-arg]
                function_name="get_instance_type_info", message=f"offline: no facts for {instance_type}"
            )
        return InstanceTypeInfo(_INSTANCE_TYPES[instance_type])


class _OfflineAWSApi:
    def __init__(self, error: type[Exception]) -> None:
        self.aws_region = os.environ["AWS_DEFAULT_REGION"]
        self._error = error

    def __getattr__(self, service: str) -> _OfflineClient:
        return _OfflineClient(service, self._error)


# Semantic validators that read only the configuration (no AWSApi call in their _validate) and whose rules
# fmconstructs also enforces at construction; both are registered by SlurmQueue._register_validators
# (aws-parallelcluster 3.16.1 pcluster/config/cluster_config.py), whose only AWS read is the subnets' zones
# (answered offline above). Validators registered by the cluster or compute resources read instance type facts from
# EC2 during registration and are not run (reported in validator_registration_skipped).
OFFLINE_VALIDATORS = frozenset(
    {
        # pcluster/validators/cluster_validators.py: MaxCount >= MinCount; CAPACITY_BLOCK needs MinCount == MaxCount > 0
        "ComputeResourceSizeValidator",
        # pcluster/validators/cluster_validators.py: an EFA queue (not CAPACITY_BLOCK, not multi-AZ) needs an explicit
        # placement group setting (ERROR when absent, WARNING when disabled)
        "EfaPlacementGroupValidator",
        # pcluster/validators/slurm_settings_validator.py: CustomSlurmSettings keys on SLURM_SETTINGS_DENY_LIST
        # (Prolog, Epilog, ... at SlurmConf level; OverSubscribe per queue; ...) are ERRORs. Registered by
        # SlurmSettings (cluster level), SlurmQueue and its compute resources; reads only the configuration.
        "CustomSlurmSettingsValidator",
        # pcluster/validators/cluster_validators.py: constants.py MAX_COMPUTE_RESOURCES_PER_QUEUE (SlurmQueue),
        # MAX_NUMBER_OF_QUEUES and MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER (SlurmScheduling)
        "MaxCountValidator",
        # cluster_validators.py: compute resource names per queue (SlurmQueue), queue names (SlurmScheduling), login
        # pool names (LoginNodes)
        "DuplicateNameValidator",
        # cluster_validators.py: queue, compute resource and login pool names: pattern, 25 characters, not "default"
        "NameValidator",
        # database_validators.py: SlurmSettings.Database.Uri without scheme or leading '/' (registered by Database)
        "DatabaseUriValidator",
        # slurm_settings_validator.py: not both Database and ExternalSlurmdbd; ExternalSlurmdbd needs
        # MungeKeySecretArn (registered by SlurmSettings; read only the configuration)
        "ExternalSlurmdbdVsDatabaseIncompatibility",
        "ExternalSlurmdbdRequiresCustomMungeKey",
    }
)


def _offline_validator_failures(config: Any) -> tuple[list[dict[str, str]], list[str]]:
    """Failures of OFFLINE_VALIDATORS over the loaded config, and the resources whose registration needed AWS.

    Every resource of the model registers its validators (pcluster/config/common.py Resource._register_validators);
    only OFFLINE_VALIDATORS are kept and run. A resource whose registration itself reads AWS facts (for example the
    head node's instance type memory) is reported and skipped.
    """
    from pcluster.config.common import Resource

    failures: list[dict[str, str]] = []
    skipped: list[str] = []
    seen: set[int] = set()

    def visit(resource: Any) -> None:
        if id(resource) in seen:
            return
        seen.add(id(resource))
        for nested in resource._nested_resources():
            visit(nested)
        if resource is config:
            return  # the cluster's own validators: _cluster_level_validators
        kept: list[tuple[type, dict[str, Any]]] = []

        def register_offline_only(validator_class: type, **validator_args: Any) -> None:
            if validator_class.__name__ in OFFLINE_VALIDATORS:
                kept.append((validator_class, validator_args))

        resource._register_validator = register_offline_only
        try:
            resource._register_validators(None)
        except Exception as error:
            skipped.append(f"{type(resource).__name__}: {error}")
        finally:
            del resource._register_validator
        for validator_class, validator_args in kept:
            for result in validator_class().execute(**validator_args):
                failures.append(
                    {"level": result.level.name, "validator": validator_class.__name__, "message": result.message}
                )

    assert isinstance(config, Resource)
    visit(config)
    for validator_class, validator_args in _cluster_level_validators(config, skipped):
        for result in validator_class().execute(**validator_args):
            failures.append(
                {"level": result.level.name, "validator": validator_class.__name__, "message": result.message}
            )
    return failures, skipped


def _cluster_level_validators(config: Any, skipped: list[str]) -> list[tuple[type, dict[str, Any]]]:
    """The validators SlurmClusterConfig / BaseClusterConfig register (pcluster/config/cluster_config.py
    _register_validators, _register_login_node_validators, _register_storage_validators, _validate_mount_dirs,
    _validate_max_storage_count) that read only the configuration and, through ec2.get_instance_type_info (answered by
    --instance-types), the instance types' architecture and memory. Same arguments as ParallelCluster gives them."""
    from pcluster.config.cluster_config import SharedFsxLustre
    from pcluster.constants import MAX_EXISTING_STORAGE_COUNT, MAX_NUMBER_OF_LOGIN_NODE_POOLS
    from pcluster.validators import cluster_validators as cv

    out: list[tuple[type, dict[str, Any]]] = []
    if config.login_nodes:
        pools = config.login_nodes.pools
        out.append(
            (
                cv.MaxCountValidator,
                {
                    "resources_length": len(pools),
                    "max_length": MAX_NUMBER_OF_LOGIN_NODE_POOLS,
                    "resource_name": "LoginNodePools",
                },
            )
        )
    storage = config.shared_storage or []
    if storage:
        out.append(
            (cv.DuplicateNameValidator, {"name_list": [s.name for s in storage], "resource_name": "Shared Storage"})
        )
        out.append(
            (
                cv.DuplicateNameValidator,
                {"name_list": config.existing_storage_id_list, "resource_name": "Shared Storage IDs"},
            )
        )
        for item in storage:
            out.append((cv.SharedStorageNameValidator, {"name": item.name}))
            out.append((cv.SharedStorageMountDirValidator, {"mount_dir": item.mount_dir}))
        existing_fsx = sum(1 for s in storage if isinstance(s, SharedFsxLustre) and s.file_system_id)
        out.append(
            (
                cv.NumberOfStorageValidator,
                {
                    "storage_type": "existing FSx",
                    "max_number": MAX_EXISTING_STORAGE_COUNT["fsx"],
                    "storage_count": existing_fsx,
                },
            )
        )
    out.extend(_mount_dir_validators(config, skipped))
    out.extend(_instance_type_validators(config, skipped))
    return out


def _mount_dir_validators(config: Any, skipped: list[str]) -> list[tuple[type, dict[str, Any]]]:
    from pcluster.validators import cluster_validators as cv

    shared = config.shared_storage_name_mount_dir_tuple_list
    try:
        local = config.local_mount_dir_instance_types_dict  # reads instance store support of every type
    except Exception as error:
        skipped.append(f"local mount directories (instance store): {error}")
        local = {}
    return [
        (
            cv.DuplicateMountDirValidator,
            {"shared_storage_name_mount_dir_tuple_list": shared, "local_mount_dir_instance_types_dict": local},
        ),
        (
            cv.OverlappingMountDirValidator,
            {"shared_mount_dir_list": [d for _, d in shared], "local_mount_dir_list": list(local.keys())},
        ),
    ]


def _instance_type_validators(config: Any, skipped: list[str]) -> list[tuple[type, dict[str, Any]]]:
    """InstanceArchitectureCompatibilityValidator per compute resource and HeadNodeMemorySizeValidator
    (SlurmClusterConfig._register_validators), when every type involved is in --instance-types."""
    from pcluster.validators import cluster_validators as cv

    head_type = config.head_node.instance_type
    if head_type not in _INSTANCE_TYPES:
        skipped.append(f"head node {head_type}: not in --instance-types (architecture and memory not checked)")
        return []
    from pcluster.aws.aws_resources import InstanceTypeInfo

    architecture = InstanceTypeInfo(_INSTANCE_TYPES[head_type]).supported_architecture()[0]
    out: list[tuple[type, dict[str, Any]]] = []
    total_max_compute_nodes = 0
    for queue in config.scheduling.queues:
        for resource in queue.compute_resources:
            total_max_compute_nodes += resource.max_count
            missing = [t for t in resource.instance_types if t not in _INSTANCE_TYPES]
            if missing:
                skipped.append(f"compute resource {resource.name}: {missing} not in --instance-types")
                continue
            infos = [InstanceTypeInfo(_INSTANCE_TYPES[t]) for t in resource.instance_types]
            out.append(
                (
                    cv.InstanceArchitectureCompatibilityValidator,
                    {"instance_type_info_list": infos, "architecture": architecture},
                )
            )
    out.append(
        (
            cv.HeadNodeMemorySizeValidator,
            {"head_node_instance_type": head_type, "total_max_compute_nodes": total_max_compute_nodes},
        )
    )
    return out


def _check(config: Any, cluster_name: str, offline_validators: bool) -> dict[str, Any]:
    from marshmallow import ValidationError
    from pcluster.schemas.cluster_schema import ClusterSchema

    if not isinstance(config, dict):
        return {"ok": False, "errors": {"_schema": [f"configuration is not a mapping: {type(config).__name__}"]}}
    try:
        loaded = ClusterSchema(cluster_name=cluster_name).load(config)
    except ValidationError as error:
        return {"ok": False, "errors": error.messages}
    result: dict[str, Any] = {"ok": True, "errors": None}
    if offline_validators:
        failures, skipped = _offline_validator_failures(loaded)
        result["validator_failures"] = failures
        result["validator_registration_skipped"] = skipped
        if any(failure["level"] == "ERROR" for failure in failures):
            result["ok"] = False
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cluster-name", default="fmconstructs-check")
    parser.add_argument("--offline-validators", action="store_true")
    parser.add_argument("--instance-types", help="JSON DescribeInstanceTypes response answering get_instance_type_info")
    parser.add_argument("files", nargs="*", default=["-"])
    args = parser.parse_args(argv)

    _offline_environment()
    # SlurmClusterConfig logs a warning when it cannot cache reservations; the blocked call is in aws_calls_blocked.
    logging.disable(logging.WARNING)
    from pcluster.aws.aws_api import AWSApi
    from pcluster.aws.common import AWSClientError
    from pcluster.utils import yaml_load

    AWSApi._instance = _OfflineAWSApi(AWSClientError)
    if args.instance_types:
        with open(args.instance_types, encoding="utf-8") as handle:
            _INSTANCE_TYPES.update({t["InstanceType"]: t for t in json.load(handle)["InstanceTypes"]})

    status = 0
    for source in args.files:
        try:
            if source == "-":
                text = sys.stdin.read()
            else:
                with open(source, encoding="utf-8") as handle:
                    text = handle.read()
            import yaml

            documents = [yaml_load(text)] if "\n---" not in text else list(yaml.safe_load_all(text))
        except (OSError, ValueError) as error:
            print(json.dumps({"source": source, "ok": False, "errors": {"_input": [str(error)]}}), flush=True)
            return 2
        for index, document in enumerate(documents):
            del _BLOCKED[:]
            result = {"source": source, "index": index, **_check(document, args.cluster_name, args.offline_validators)}
            result["aws_calls_blocked"] = list(_BLOCKED)
            print(json.dumps(result, sort_keys=True, default=str), flush=True)
            if not result["ok"]:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
