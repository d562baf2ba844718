"""Typed pieces of an AWS ParallelCluster 3 cluster configuration (``ClusterConfiguration``).

Every key is ParallelCluster's own: ``pcluster/schemas/cluster_schema.py`` of aws-parallelcluster 3.16.1 (PyPI; the
same file as aws/aws-parallelcluster ``cli/src/pcluster/schemas/cluster_schema.py``), its ``constants.py`` and the
validators in ``pcluster/validators/``.
Instance facts (EFA, GPUs) come from :mod:`fmconstructs.catalog`, capacity rules and reservation targets from
:mod:`fmconstructs.capacity`; nothing here re-states them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aws_cdk import aws_ec2 as ec2

from .._renames import RenamedAttribute, renamed_keywords
from .._validate import (
    check_bool,
    check_count,
    check_enum,
    check_instance,
    check_mount_point,
    check_optional_count,
    check_security_group,
    check_sequence,
    check_str,
    check_subnet,
    known,
)
from ..capacity import (
    Capacity,
    OnDemand,
    ReservationTargetForm,
    check_backend_capacity,
    default_min_nodes,
)
from ..catalog import CATALOG, InstanceSpec, check_instance_type, efa_max_interfaces
from ..errors import FmTypeError, FmValidationError
from ..storage import LustreFileSystemBase, LustreMount
from . import rules
from .limits import check_name_not_default, check_queue_limits

# cli/src/pcluster/validators/cluster_validators.py: NAME_MAX_LENGTH = 25, NAME_REGEX = r"^[a-z][a-z0-9\-]*$"
# (NameValidator: queue and compute resource names); SHARED_STORAGE_NAME_MAX_LENGTH = 30.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9\-]*")
NAME_MAX_LENGTH = 25
SHARED_STORAGE_NAME_MAX_LENGTH = 30
_NAME_TEXT = "a lowercase letter then lowercase letters, digits or '-', at most {} characters (ParallelCluster names)"

# cluster_schema.py FsxLustreSettingsSchema.file_system_id: r"^fs-[0-9a-z]{17}$".
_FILE_SYSTEM_ID = re.compile(r"fs-[0-9a-z]{17}")
# Script URLs of custom actions: "s3://" or "https://" (User Guide "custom-bootstrap-actions-v3").
_SCRIPT_URL = re.compile(r"(s3|https)://\S+")
# CloudWatchLogsSchema.retention_in_days OneOf.
LOG_RETENTION_DAYS = (0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653)
# HeadNodeSshSchema/LoginNodesSshSchema key_name: an EC2 key pair name (EC2 API KeyName: up to 255 ASCII characters).
_KEY_NAME = re.compile(r"[\x20-\x7e]{1,255}")


# aws-parallelcluster 3.16.1 schemas/common_schema.py ALLOWED_VALUES (SubnetIds, SubnetId, SecurityGroups and
# AdditionalSecurityGroups are checked against these; EC2 ids have 8 or 17 characters after the prefix).
_SUBNET_ID = re.compile(r"subnet-[0-9a-z]{8}|subnet-[0-9a-z]{17}")
_SECURITY_GROUP_ID = re.compile(r"sg-[0-9a-z]{8}|sg-[0-9a-z]{17}")


def _subnet(parameter: str, value: object) -> ec2.ISubnet:
    subnet: ec2.ISubnet = check_subnet(parameter, value)
    check_str(
        f"{parameter}.subnet_id",
        subnet.subnet_id,
        pattern=_SUBNET_ID,
        allowed="a subnet id like 'subnet-0123456789abcdef0' (ParallelCluster's subnet_id pattern)",
    )
    return subnet


def _security_group(parameter: str, value: object) -> ec2.ISecurityGroup:
    group: ec2.ISecurityGroup = check_security_group(parameter, value)
    check_str(
        f"{parameter}.security_group_id",
        group.security_group_id,
        pattern=_SECURITY_GROUP_ID,
        allowed="a security group id like 'sg-0123456789abcdef0' (ParallelCluster's security_group_id pattern)",
    )
    return group


def _name(parameter: str, value: object, max_length: int = NAME_MAX_LENGTH) -> str:
    checked: str = check_str(
        parameter, value, pattern=NAME_PATTERN, max_length=max_length, allowed=_NAME_TEXT.format(max_length)
    )
    if not known(checked):
        raise FmValidationError(parameter, value, "a name known at synthesis (ParallelCluster names queues with it)")
    check_name_not_default(parameter, checked)
    return checked


class CapacityType(str, Enum):
    """``SlurmQueues[].CapacityType`` (pcluster.config.common.CapacityType)."""

    ONDEMAND = "ONDEMAND"
    SPOT = "SPOT"
    CAPACITY_BLOCK = "CAPACITY_BLOCK"


class OperatingSystem(str, Enum):
    """``Image.Os``: aws-parallelcluster 3.16.1 ``constants.py`` SUPPORTED_OSES (alinux2 and ubuntu2004 are gone)."""

    ALINUX2023 = "alinux2023"
    UBUNTU2204 = "ubuntu2204"
    UBUNTU2404 = "ubuntu2404"
    RHEL8 = "rhel8"
    ROCKY8 = "rocky8"
    RHEL9 = "rhel9"
    ROCKY9 = "rocky9"


class QueueUpdateStrategy(str, Enum):
    """``Scheduling.SlurmSettings.QueueUpdateStrategy``: how ParallelCluster applies a change to a ``SlurmQueues``
    setting while compute nodes run (User Guide "Scheduling section", SlurmSettings; aws-parallelcluster 3.16.1
    ``pcluster.config.cluster_config.QueueUpdateStrategy``; the update policies that read it: ``pcluster/config/
    update_policy.py`` ``QUEUE_UPDATE_STRATEGY`` and ``RESIZE_UPDATE_STRATEGY_ON_REMOVE``).

    - ``DRAIN``: nodes of changed queues are drained (no new jobs) and replaced once their running jobs end.
    - ``COMPUTE_FLEET_STOP``: ParallelCluster's own default: a queue change is refused while compute nodes run
      (``pcluster update-compute-fleet --status STOP_REQUESTED`` first). From CloudFormation this fails the deploy.
    - ``TERMINATE``: nodes of changed queues are terminated at once (their running jobs are requeued or lost); the
      only strategy that also allows lowering ``MinCount``/``MaxCount`` or removing a queue or compute resource with
      nodes running (``RESIZE_UPDATE_STRATEGY_ON_REMOVE``).
    """

    DRAIN = "DRAIN"
    COMPUTE_FLEET_STOP = "COMPUTE_FLEET_STOP"
    TERMINATE = "TERMINATE"


#: aws-parallelcluster 3.16.1 constants.py UNSUPPORTED_OSES_FOR_P6E_GB200 (ec2_validators.py refuses them on
#: p6e-gb200).
UNSUPPORTED_OSES_FOR_P6E_GB200 = frozenset({OperatingSystem.RHEL8, OperatingSystem.ROCKY8, OperatingSystem.RHEL9})


class CustomActionEvent(str, Enum):
    """A node lifecycle event that runs ``CustomActions`` (aws-parallelcluster 3.16.1 cluster_schema.py:
    ``QueueCustomActionsSchema`` has OnNodeStart and OnNodeConfigured; ``HeadNodeCustomActionsSchema`` and
    ``LoginNodesCustomActionsSchema`` add OnNodeUpdated)."""

    ON_NODE_START = "OnNodeStart"
    ON_NODE_CONFIGURED = "OnNodeConfigured"
    ON_NODE_UPDATED = "OnNodeUpdated"


#: The events a Slurm queue's ``CustomActions`` accept (QueueCustomActionsSchema).
QUEUE_EVENTS = frozenset({CustomActionEvent.ON_NODE_START, CustomActionEvent.ON_NODE_CONFIGURED})

# User Guide "custom-bootstrap-actions-config-v3": "Using the Sequence setting (added in AWS ParallelCluster version
# 3.6.0)"; aws-parallelcluster 3.16.1 cluster_schema.py OneOrManyCustomActionField takes Script or Sequence.
SEQUENCE_MIN_VERSION = (3, 6, 0)


def version_tuple(version: str) -> tuple[int, ...]:
    """``"3.16.1"`` -> ``(3, 16, 1)`` (versions are checked against VERSION_PATTERN by the cluster)."""
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True, kw_only=True)
class CustomAction:
    """One ``CustomActions`` script (``OnNodeStart`` / ``OnNodeConfigured``): ``Script`` (an ``s3://`` or ``https://``
    URL) and ``Args`` (User Guide "custom-bootstrap-actions-v3"). Nodes read ``s3://`` scripts with their role: give
    the bucket in ``s3_read_buckets`` of the node group (``Iam.S3Access``)."""

    script: str
    args: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_str("script", self.script, pattern=_SCRIPT_URL, allowed="an s3:// or https:// URL of a script")
        check_sequence("args", self.args, lambda p, v: check_str(p, v))

    def to_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"Script": self.script}
        if self.args:
            out["Args"] = list(self.args)
        return out


def _actions(on_node_start: CustomAction | None, on_node_configured: CustomAction | None) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for key, name, action in (
        ("OnNodeStart", "on_node_start", on_node_start),
        ("OnNodeConfigured", "on_node_configured", on_node_configured),
    ):
        if action is not None:
            check_instance(name, action, CustomAction, "a CustomAction")
            out[key] = action.to_config()
    return out or None


def _iam(s3_read_buckets: Sequence[str]) -> dict[str, Any] | None:
    # S3AccessSchema.bucket_name: r"^[\*a-z0-9\-\.]+$" (tokens accepted).
    buckets = check_sequence(
        "s3_read_buckets",
        s3_read_buckets,
        lambda p, v: check_str(p, v, pattern=re.compile(r"[\*a-z0-9\-\.]+"), allowed="an S3 bucket name"),
    )
    if not buckets:
        return None
    return {"S3Access": [{"BucketName": b} for b in buckets]}


def _security_group_ids(parameter: str, groups: Sequence[ec2.ISecurityGroup]) -> list[str]:
    return [g.security_group_id for g in check_sequence(parameter, groups, _security_group)]


@dataclass(frozen=True, kw_only=True)
class HeadNode:
    """``HeadNode`` (HeadNodeSchema).

    :param instance_type: the head node's type (any EC2 type; not looked up in the GPU catalog).
    :param subnet: ``Networking.SubnetId``.
    :param key_name: ``Ssh.KeyName`` (optional: Session Manager needs none).
    :param imds_secured: ``Imds.Secured`` (default True: only root and the cluster admin reach IMDS on the head node).
    :param security_groups: security groups the head node joins in addition to the one ParallelCluster creates
        (``Networking.AdditionalSecurityGroups``; formerly ``additional_security_groups``, deprecated).
    :param on_node_start: / on_node_configured: ``CustomActions``.
    :param s3_read_buckets: ``Iam.S3Access`` bucket names the node may read (custom action scripts).
    """

    instance_type: str
    subnet: ec2.ISubnet
    key_name: str | None = None
    imds_secured: bool = True
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    additional_security_groups = RenamedAttribute("security_groups")  # not a field: no annotation
    on_node_start: CustomAction | None = None
    on_node_configured: CustomAction | None = None
    s3_read_buckets: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_instance_type("instance_type", self.instance_type)  # catalog or botocore's EC2 InstanceType enum
        _subnet("subnet", self.subnet)
        if self.key_name is not None:
            check_str("key_name", self.key_name, pattern=_KEY_NAME, allowed="an EC2 key pair name")
        check_bool("imds_secured", self.imds_secured)
        _security_group_ids("security_groups", self.security_groups)
        _actions(self.on_node_start, self.on_node_configured)
        _iam(self.s3_read_buckets)

    def to_config(self) -> dict[str, Any]:
        networking: dict[str, Any] = {"SubnetId": self.subnet.subnet_id}
        groups = _security_group_ids("security_groups", self.security_groups)
        if groups:
            networking["AdditionalSecurityGroups"] = groups
        out: dict[str, Any] = {
            "InstanceType": self.instance_type,
            "Networking": networking,
            "Imds": {"Secured": self.imds_secured},
        }
        if self.key_name is not None:
            out["Ssh"] = {"KeyName": self.key_name}
        actions = _actions(self.on_node_start, self.on_node_configured)
        if actions:
            out["CustomActions"] = actions
        iam_config = _iam(self.s3_read_buckets)
        if iam_config:
            out["Iam"] = iam_config
        return out


@dataclass(frozen=True, kw_only=True)
class LoginNodePool:
    """One ``LoginNodes.Pools[]`` entry (LoginNodesPoolSchema): ``Networking.SubnetIds`` takes exactly one subnet.

    :param security_groups: security groups the login nodes join in addition to the one ParallelCluster creates
        (``Networking.AdditionalSecurityGroups``; formerly ``additional_security_groups``, deprecated).
    """

    name: str
    instance_type: str
    subnet: ec2.ISubnet
    nodes: int | float = 1
    key_name: str | None = None
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    additional_security_groups = RenamedAttribute("security_groups")  # not a field: no annotation

    def __post_init__(self) -> None:
        _name("name", self.name)
        check_instance_type("instance_type", self.instance_type)  # catalog or botocore's EC2 InstanceType enum
        _subnet("subnet", self.subnet)
        check_count("nodes", self.nodes, minimum=0)  # LoginNodesPoolSchema.count: Range(min=0)
        if self.key_name is not None:
            check_str("key_name", self.key_name, pattern=_KEY_NAME, allowed="an EC2 key pair name")
        _security_group_ids("security_groups", self.security_groups)

    def to_config(self) -> dict[str, Any]:
        networking: dict[str, Any] = {"SubnetIds": [self.subnet.subnet_id]}
        groups = _security_group_ids("security_groups", self.security_groups)
        if groups:
            networking["AdditionalSecurityGroups"] = groups
        out: dict[str, Any] = {
            "Name": self.name,
            "InstanceType": self.instance_type,
            "Count": self.nodes,
            "Networking": networking,
        }
        if self.key_name is not None:
            out["Ssh"] = {"KeyName": self.key_name}
        return out


def _gpu_health_checks(enabled: object) -> dict[str, Any]:
    """``HealthChecks: {Gpu: {Enabled: ...}}`` (HealthChecksSchema / GpuHealthCheckSchema), or nothing for None."""
    if enabled is None:
        return {}
    return {"HealthChecks": {"Gpu": {"Enabled": check_bool("gpu_health_checks", enabled)}}}


@dataclass(frozen=True, kw_only=True)
class ComputeResource:
    """One ``SlurmQueues[].ComputeResources[]`` entry (SlurmComputeResourceSchema).

    :param name: 1-25 lowercase letters, digits or '-', starting with a letter.
    :param instance_type: looked up in the catalog when it is there (EFA and GPU facts); other types get no EFA.
    Counts may be number tokens (``CfnParameter.value_as_number``); the checks that need their value are skipped.

    :param min_nodes: ``MinCount`` (default: ``max_nodes`` on a Capacity Block, else 0).
    :param max_nodes: ``MaxCount`` (default: the reservation's size when known, else 1).
    :param capacity: :class:`fmconstructs.OnDemand` (default), ``CapacityReservation``, ``CapacityBlock`` or
        ``UltraServerCapacityBlock``; reserved capacity becomes ``CapacityReservationTarget`` (by reservation id:
        ParallelCluster's ``CapacityReservationValidator`` requires the id on CAPACITY_BLOCK).
    :param efa: ``Efa.Enabled`` (default: True when the type takes EFA: the catalog, else EC2 DescribeInstanceTypes
        data in ``fmconstructs._efa_instance_types``). ``Efa.GdrSupport`` is set
        with it on GPU types.
    :param placement_group: ``Networking.PlacementGroup.Enabled`` (default: True with EFA, except on Capacity
        Blocks, which are placed in UltraClusters already; ParallelCluster's ``PlacementGroupCapacityTypeValidator``
        warns against a placement group on a block).
    :param disable_simultaneous_multithreading: ``DisableSimultaneousMultithreading`` (default: not set,
        ParallelCluster's default; the User Guide's P6e-GB200 configuration sets True).
    :param gpu_health_checks: ``HealthChecks.Gpu.Enabled`` of this compute resource (ParallelCluster's DCGM check in
        the prolog; aws-parallelcluster 3.16.1 ``HealthChecksSchema``). Default: not set (the queue's setting).
    """

    name: str
    instance_type: str
    min_nodes: int | float | None = None
    max_nodes: int | float | None = None
    capacity: Capacity = field(default_factory=OnDemand)
    efa: bool | None = None
    placement_group: bool | None = None
    disable_simultaneous_multithreading: bool | None = None
    gpu_health_checks: bool | None = None

    def __post_init__(self) -> None:
        _name("name", self.name)
        _gpu_health_checks(self.gpu_health_checks)
        if self.disable_simultaneous_multithreading is not None:
            check_bool("disable_simultaneous_multithreading", self.disable_simultaneous_multithreading)
        check_instance_type("instance_type", self.instance_type)  # catalog or botocore's EC2 InstanceType enum
        check_instance("capacity", self.capacity, Capacity, "a Capacity (OnDemand, CapacityReservation, ...)")
        check_backend_capacity(self.capacity, backend="ParallelCluster")
        if self.efa is not None:
            check_bool("efa", self.efa)
        if self.placement_group is not None:
            check_bool("placement_group", self.placement_group)
        check_optional_count("min_nodes", self.min_nodes, minimum=0)
        check_optional_count("max_nodes", self.max_nodes, minimum=1)  # SlurmComputeResourceSchema.max_count min 1
        rules.min_nodes_at_most_max_nodes(self.resolved_min_nodes, self.resolved_max_nodes)
        spec = self.spec
        rules.capacity_block_needs_a_catalog_type(self.capacity, self.instance_type, spec)
        if spec is not None:
            # Capacity rules (fixed size on blocks, at most the reservation) live in fmconstructs.capacity;
            # ParallelCluster's ComputeResourceSizeValidator states the same block rule.
            self.capacity.validate_for(spec, min_nodes=self.resolved_min_nodes, max_nodes=self.resolved_max_nodes)
        rules.efa_needs_an_efa_type(self.efa, self.instance_type)
        rules.ultraserver_block_holds_one_ultraserver(self.capacity)
        rules.block_reservation_is_targeted_by_id(self.capacity)

    @property
    def spec(self) -> InstanceSpec | None:
        """The catalog's facts for the type, or None when the type is not in the catalog (or a token)."""
        if known(self.instance_type) and self.instance_type in CATALOG:
            return CATALOG.get(self.instance_type)
        return None

    @property
    def efa_supported(self) -> bool:
        return bool(efa_max_interfaces(self.instance_type))  # catalog, else EC2 DescribeInstanceTypes data

    @property
    def efa_enabled(self) -> bool:
        return self.efa if self.efa is not None else self.efa_supported

    @property
    def resolved_max_nodes(self) -> Any:
        if self.max_nodes is not None:
            return self.max_nodes
        if self.min_nodes is not None and self.capacity.is_capacity_block:
            return self.min_nodes
        limit = self.capacity.max_instances
        return limit if limit is not None else 1

    @property
    def resolved_min_nodes(self) -> Any:
        if self.min_nodes is not None:
            return self.min_nodes
        return default_min_nodes(self.capacity, self.resolved_max_nodes)

    @property
    def placement_group_enabled(self) -> bool | None:
        if self.placement_group is not None:
            return self.placement_group
        if not self.efa_enabled:
            return None
        return not self.capacity.is_capacity_block

    def to_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "Name": self.name,
            "InstanceType": self.instance_type,
            "MinCount": self.resolved_min_nodes,
            "MaxCount": self.resolved_max_nodes,
        }
        if self.efa_enabled:
            spec = self.spec
            efa: dict[str, Any] = {"Enabled": True}
            if spec is not None and spec.gpu.count > 0:
                # EfaSchema.gdr_support; User Guide Scheduling "Efa": GPUDirect RDMA is used when the type and OS
                # support it (the flag is kept for readers of the configuration).
                efa["GdrSupport"] = True
            out["Efa"] = efa
        elif self.efa is False:
            out["Efa"] = {"Enabled": False}
        enabled = self.placement_group_enabled
        if enabled is not None:
            out["Networking"] = {"PlacementGroup": {"Enabled": enabled}}
        if self.disable_simultaneous_multithreading is not None:
            out["DisableSimultaneousMultithreading"] = self.disable_simultaneous_multithreading
        out.update(_gpu_health_checks(self.gpu_health_checks))
        if self.capacity.reservation_target_forms:
            form = ReservationTargetForm.RESERVATION_ID if self.capacity.is_capacity_block else None
            target = self.capacity.reservation_target(form, consumer="ParallelCluster")
            assert target is not None
            if target.capacity_reservation_id is not None:
                out["CapacityReservationTarget"] = {"CapacityReservationId": target.capacity_reservation_id}
            else:
                out["CapacityReservationTarget"] = {
                    "CapacityReservationResourceGroupArn": target.capacity_reservation_resource_group_arn
                }
        return out


@dataclass(frozen=True, kw_only=True)
class SlurmQueue:
    """One ``Scheduling.SlurmQueues[]`` entry (SlurmQueueSchema).

    :param capacity_type: default: CAPACITY_BLOCK when the compute resources are on Capacity Blocks, else ONDEMAND.
        A queue mixes no blocks with other capacity (``CapacityType`` is per queue).
    :param subnets: ``Networking.SubnetIds`` (at least one; a block's subnet must be in its zone: checked when known).
    :param custom_ami: ``Image.CustomAmi`` of this queue (an AMI id or a deploy-time value).
    :param custom_slurm_settings: ``CustomSlurmSettings`` of the partition.
    :param job_exclusive_allocation: ``JobExclusiveAllocation`` (default: not set, ParallelCluster's default).
    :param gpu_health_checks: ``HealthChecks.Gpu.Enabled`` (ParallelCluster's GPU health check: DCGM level 2 in the
        prolog; aws-parallelcluster 3.16.1 ``HealthChecksSchema``; mind aws-parallelcluster#6777, long checks in the
        prolog hang jobs on p4d/p5). Default: not set (ParallelCluster's default, off).
    :param security_groups: security groups the queue's compute nodes join in addition to the one ParallelCluster
        creates (``Networking.AdditionalSecurityGroups``; formerly ``additional_security_groups``, deprecated).
    """

    name: str
    subnets: Sequence[ec2.ISubnet]
    compute_resources: Sequence[ComputeResource]
    capacity_type: CapacityType | None = None
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    additional_security_groups = RenamedAttribute("security_groups")  # not a field: no annotation
    on_node_start: CustomAction | None = None
    on_node_configured: CustomAction | None = None
    s3_read_buckets: Sequence[str] = ()
    custom_ami: str | None = None
    custom_slurm_settings: dict[str, Any] | None = None
    job_exclusive_allocation: bool | None = None
    gpu_health_checks: bool | None = None

    def __post_init__(self) -> None:
        _name("name", self.name)
        _gpu_health_checks(self.gpu_health_checks)
        if self.job_exclusive_allocation is not None:
            check_bool("job_exclusive_allocation", self.job_exclusive_allocation)
        subnets = check_sequence("subnets", self.subnets, _subnet)
        if not subnets:
            raise FmValidationError("subnets", list(self.subnets), "at least one subnet (Networking.SubnetIds)")
        resources = check_sequence(
            "compute_resources",
            self.compute_resources,
            lambda p, v: check_instance(p, v, ComputeResource, "a ComputeResource"),
        )
        if not resources:
            raise FmValidationError("compute_resources", [], "at least one ComputeResource")
        check_queue_limits(resources)
        rules.compute_resource_names_are_distinct([r.name for r in resources])
        if self.capacity_type is not None:
            check_enum("capacity_type", self.capacity_type, CapacityType)
        kind = self.resolved_capacity_type
        for index, resource in enumerate(resources):
            block_queue = kind is CapacityType.CAPACITY_BLOCK
            rules.capacity_matches_the_queue_type(index, resource.capacity, block_queue=block_queue, kind=kind.value)
            # A reservation (block or ODCR) lives in one zone: each queue subnet must be in it when both are known.
            for subnet in subnets:
                resource.capacity.check_subnet(subnet)
        _security_group_ids("security_groups", self.security_groups)
        _actions(self.on_node_start, self.on_node_configured)
        _iam(self.s3_read_buckets)
        if self.custom_ami is not None:
            check_str("custom_ami", self.custom_ami, pattern=_AMI_ID, allowed=_AMI_TEXT)
        if self.custom_slurm_settings is not None:
            check_instance("custom_slurm_settings", self.custom_slurm_settings, dict, "a dict")
            denied = sorted(k for k in self.custom_slurm_settings if str(k).lower() in QUEUE_SLURM_SETTINGS_DENY_LIST)
            if denied:
                raise FmValidationError(
                    "custom_slurm_settings",
                    denied,
                    "partition settings ParallelCluster leaves to you (it sets "
                    + ", ".join(QUEUE_SLURM_SETTINGS_DENY_LIST)
                    + " itself: CustomSlurmSettingsValidator); use job_exclusive_allocation for exclusive nodes",
                )

    @property
    def resolved_capacity_type(self) -> CapacityType:
        if self.capacity_type is not None:
            return self.capacity_type
        if any(r.capacity.is_capacity_block for r in self.compute_resources):
            return CapacityType.CAPACITY_BLOCK
        return CapacityType.ONDEMAND

    def to_config(self) -> dict[str, Any]:
        networking: dict[str, Any] = {"SubnetIds": [s.subnet_id for s in self.subnets]}
        groups = _security_group_ids("security_groups", self.security_groups)
        if groups:
            networking["AdditionalSecurityGroups"] = groups
        out: dict[str, Any] = {
            "Name": self.name,
            "CapacityType": self.resolved_capacity_type.value,
            "Networking": networking,
            "ComputeResources": [r.to_config() for r in self.compute_resources],
        }
        actions = _actions(self.on_node_start, self.on_node_configured)
        if actions:
            out["CustomActions"] = actions
        iam_config = _iam(self.s3_read_buckets)
        if iam_config:
            out["Iam"] = iam_config
        if self.custom_ami is not None:
            out["Image"] = {"CustomAmi": self.custom_ami}
        if self.custom_slurm_settings:
            out["CustomSlurmSettings"] = dict(self.custom_slurm_settings)
        if self.job_exclusive_allocation is not None:
            out["JobExclusiveAllocation"] = self.job_exclusive_allocation
        out.update(_gpu_health_checks(self.gpu_health_checks))
        return out


# aws-parallelcluster 3.16.1 validators/slurm_settings_validator.py SLURM_SETTINGS_DENY_LIST["Queue"]["Global"]
# (compared lowercased): a queue's CustomSlurmSettings may not set these.
QUEUE_SLURM_SETTINGS_DENY_LIST = ("nodes", "partitionname", "resumetimeout", "state", "suspendtime", "oversubscribe")

# constants.py PCLUSTER_AMI_ID_REGEX = r"^ami-[0-9a-z]{8}$|^ami-[0-9a-z]{17}$".
_AMI_ID = re.compile(r"ami-[0-9a-z]{8}|ami-[0-9a-z]{17}")
_AMI_TEXT = "an AMI id like 'ami-0123456789abcdef0' (or a deploy-time value)"


@dataclass(frozen=True, kw_only=True)
class SharedLustre:
    """A ``SharedStorage`` entry of ``StorageType: FsxLustre`` mounting an existing fmconstructs Lustre file system
    (``FsxLustreSettings.FileSystemId``; ParallelCluster then creates no file system and never deletes it).

    :param name: 1-30 lowercase letters, digits or '-' (SHARED_STORAGE_NAME_MAX_LENGTH).
    :param mount_point: where the nodes mount it, the config's ``MountDir`` (default ``/fsx``; formerly ``mount_dir``,
        deprecated until fmconstructs 0.4.0).
    :param efa_clients: when the file system is EFA-enabled, configure the Lustre client of the compute nodes for EFA
        (default True); False: every node mounts it over TCP (warning ``fmconstructs:parallelcluster-lustre-over-tcp``).

    **Lustre over EFA.** ParallelCluster itself mounts the file system over TCP: ``FsxLustreSettings`` has no EFA
    client setting (aws-parallelcluster 3.16.1 ``FsxLustreSettingsSchema``) and the cookbook mounts
    ``<dns name>@tcp:/<mount name>`` (aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-environment/
    resources/lustre/partial/_mount_unmount.rb). The User Guide tutorial "Creating a cluster with an EFA-enabled FSx
    Lustre" (tutorial-efa-enabled-fsx-lustre) makes compute nodes use EFA by configuring the Lustre client for EFA
    (the FSx for Lustre User Guide's ``configure-efa-fsx-lustre-client`` set-up) in the queue's ``OnNodeStart``
    custom action, with ``Efa.Enabled`` on the compute resources, nodes and file system in one zone and security
    groups that allow all traffic between them. :class:`ParallelCluster` does that for every queue that can: see
    its ``node_security_group``. ``OnNodeStart`` runs before ParallelCluster mounts (aws-parallelcluster 3.16.1
    pcluster/resources/compute_node/user_data.sh runs ``aws-parallelcluster-entrypoints::init``, then
    ``fetch_and_run -preinstall`` (OnNodeStart), then ``aws-parallelcluster-entrypoints::config``, whose
    environment recipe config.rb includes the ``fsx`` recipe that mounts ``FsxLustre`` storage).
    """

    file_system: LustreFileSystemBase
    name: str = "fsx"
    mount_point: str = "/fsx"
    mount_dir = RenamedAttribute("mount_point")  # not a field: no annotation
    efa_clients: bool = True

    def __post_init__(self) -> None:
        check_instance("file_system", self.file_system, LustreFileSystemBase, "an fmconstructs LustreFileSystem")
        _name("name", self.name, SHARED_STORAGE_NAME_MAX_LENGTH)
        if isinstance(self.mount_point, str) and known(self.mount_point) and not self.mount_point.startswith("/"):
            # ParallelCluster accepts a relative MountDir (aws-parallelcluster 3.16.1 schemas/common_schema.py
            # "file_path": r"^\/?..." makes the leading "/" optional; SharedStorageMountDirValidator compares after
            # prefixing it): the library keeps the absolute form it means, for its own checks and the config.
            object.__setattr__(self, "mount_point", "/" + self.mount_point)
        check_mount_point("mount_point", self.mount_point)  # the library's one mount-point rule (_validate)
        fs_id = self.file_system.file_system_id
        check_str("file_system.file_system_id", fs_id, pattern=_FILE_SYSTEM_ID, allowed="an id like 'fs-...'")
        check_bool("efa_clients", self.efa_clients)

    def to_config(self) -> dict[str, Any]:
        return {
            "Name": self.name,
            "StorageType": "FsxLustre",
            "MountDir": self.mount_point,
            "FsxLustreSettings": {"FileSystemId": self.file_system.file_system_id},
        }

    @classmethod
    def from_mount(cls, mount: LustreMount, *, name: str = "fsx") -> SharedLustre:
        """The ``SharedStorage`` entry for the one mount type, :class:`~fmconstructs.storage.LustreMount`, named
        ``name`` (default ``fsx``): its file system at its ``mount_point``; ``efa_interfaces`` None configures LNet
        over EFA on every queue that can (each queue's FSx for Lustre User Guide default), 0 mounts over TCP
        (``efa_clients=False``). Another count is refused: one ``OnNodeStart`` step per queue configures LNet once for
        every shared file system, with the count of the queue's instance type, so a per-mount count cannot be
        honoured."""
        if not isinstance(mount, LustreMount):
            raise FmTypeError("mount", mount, f"a LustreMount (got a {type(mount).__name__})")
        if mount.efa_interfaces not in (None, 0):
            raise FmValidationError(
                "efa_interfaces",
                mount.efa_interfaces,
                "None (each queue's FSx for Lustre User Guide default) or 0 (TCP) on ParallelCluster: one OnNodeStart "
                "step per queue configures LNet for every shared file system with the count of the queue's type",
            )
        return cls(
            file_system=mount.file_system,
            name=name,
            mount_point=mount.mount_point,
            efa_clients=mount.efa_interfaces is None,
        )


@dataclass(frozen=True, kw_only=True)
class Monitoring:
    """``Monitoring`` (MonitoringSchema): CloudWatch logs, dashboard and detailed monitoring."""

    logs: bool = True
    log_retention_days: int = 14
    dashboards: bool = True
    detailed_monitoring: bool = False

    def __post_init__(self) -> None:
        check_bool("logs", self.logs)
        check_count("log_retention_days", self.log_retention_days)
        if known(self.log_retention_days) and self.log_retention_days not in LOG_RETENTION_DAYS:
            raise FmValidationError(
                "log_retention_days", self.log_retention_days, f"one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
            )
        check_bool("dashboards", self.dashboards)
        check_bool("detailed_monitoring", self.detailed_monitoring)

    def to_config(self) -> dict[str, Any]:
        return {
            "DetailedMonitoring": self.detailed_monitoring,
            "Logs": {"CloudWatch": {"Enabled": self.logs, "RetentionInDays": self.log_retention_days}},
            "Dashboards": {"CloudWatch": {"Enabled": self.dashboards}},
        }


# One node-group vocabulary across the backends (``security_groups``): the old keyword keeps working, deprecated.
for _node_group in (HeadNode, LoginNodePool, SlurmQueue):
    _renamed = renamed_keywords(_node_group.__name__, additional_security_groups="security_groups")
    _node_group.__init__ = _renamed(_node_group.__init__)  # type: ignore[method-assign]
del _node_group, _renamed
SharedLustre.__init__ = renamed_keywords("SharedLustre", mount_dir="mount_point")(  # type: ignore[method-assign]
    SharedLustre.__init__
)
