"""Read a synthesized cloud assembly (``cdk.out``) without synthesizing or importing any app.

Only the files the CDK writes are read: ``manifest.json`` (artifacts of type ``aws:cloudformation:stack``, their
``environment`` and ``properties.templateFile``; cloud assembly schema, aws-cdk-lib ``cloud-assembly-schema``) and
each stack's ``*.template.json``. Resource properties are the CloudFormation ones:

- ``AWS::EC2::LaunchTemplate`` ``LaunchTemplateData``: ``InstanceType``, ``ImageId``, ``NetworkInterfaces``
  (``NetworkCardIndex``, ``DeviceIndex``, ``InterfaceType``, ``SubnetId``), ``CapacityReservationSpecification``
  (``CapacityReservationTarget.CapacityReservationId`` / ``CapacityReservationResourceGroupArn``,
  ``CapacityReservationPreference``), ``InstanceMarketOptions.MarketType`` (``capacity-block``, ``spot``),
  ``Placement.AvailabilityZone``;
- ``AWS::PCS::ComputeNodeGroup``: ``InstanceConfigs[].InstanceType``, ``ScalingConfiguration.Min/MaxInstanceCount``,
  ``CustomLaunchTemplate.TemplateId``, ``PurchaseOption``, ``SubnetIds``, ``AmiId``;
- ``AWS::EKS::Nodegroup``: ``InstanceTypes``, ``ScalingConfig.MinSize/MaxSize``, ``LaunchTemplate.Id``,
  ``CapacityType``, ``Subnets``;
- ``AWS::AutoScaling::AutoScalingGroup``: ``MinSize``/``MaxSize`` (strings), ``LaunchTemplate.LaunchTemplateId``,
  ``VPCZoneIdentifier``;
- ``AWS::FSx::FileSystem``: ``StorageCapacity``, ``LustreConfiguration.DeploymentType``,
  ``PerUnitStorageThroughput``, ``EfaEnabled``;
- ``AWS::SageMaker::Cluster`` (SageMaker HyperPod): ``InstanceGroups[]`` ``InstanceGroupName``, ``InstanceType``
  (``ml.`` + the EC2 type), ``InstanceCount``, ``MinInstanceCount``, ``TrainingPlanArn``; ``VpcConfig.Subnets``;
- ``Custom::PclusterCluster`` (AWS ParallelCluster's custom resource): ``ClusterConfiguration`` ``HeadNode``
  (``InstanceType``, ``Networking.SubnetId``), ``LoginNodes.Pools[]`` (``Name``, ``InstanceType``, ``Count``,
  ``Networking.SubnetIds``) and ``Scheduling.SlurmQueues[]`` (``Name``, ``CapacityType``, ``Networking.SubnetIds``,
  ``CapacityReservationTarget``; ``ComputeResources[]`` ``Name``, ``InstanceType``, ``MinCount``, ``MaxCount``,
  ``Efa.Enabled``, ``CapacityReservationTarget``), the ParallelCluster 3 configuration file format.

HyperPod and ParallelCluster create their instances' network interfaces themselves: the plan shows EFA as decided by
that service (an unknown), never a guessed interface count. How many EFA interfaces their nodes use for Lustre (LNet)
is fmconstructs' choice, not the service's: the constructs write it as the resource's ``Metadata`` key
:data:`LUSTRE_EFA_METADATA_KEY` (``fmconstructs.parallelcluster.ParallelCluster``: ``{queue name: interfaces}`` for
every Slurm queue, 0 for a queue that mounts over TCP, written when the cluster shares an EFA-enabled file system; the
head node and login nodes always mount over TCP. ``fmconstructs.hyperpod.HyperPodCluster``: ``{instance group name:
interfaces}``, 0 over TCP, ``"decided-on-node"`` for a type the catalog lacks, written when fmconstructs' node set-up
mounts an EFA-enabled file system). Without the key (another tool's template, or a mount the service or HyperPod's
published lifecycle scripts make) that count stays unknown. The count is not read from the custom action ``Args``
or the lifecycle files: the ``Args`` carry the bootstrap's name, archive and deploy-time values, not the count, and
the count sits in shell inside S3 asset archives.

Anything that is not a literal (``Ref``, ``Fn::*``) is a value CloudFormation decides at deploy time: it is kept
as :data:`DEPLOY_TIME` and listed among the plan's unknowns, never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import FmValidationError

# Re-exported (tests and older callers import it from here); read in cli.plan_readers.
from ..storage.sizing import LUSTRE_EFA_METADATA_KEY as LUSTRE_EFA_METADATA_KEY

#: Marker for a value CloudFormation resolves at deploy time (a Ref, Fn::GetAtt, parameter, import...).
DEPLOY_TIME = "deploy-time"

#: The file name ending of a StackSet's replicated template: cdk-stacksets' ``StackSetStack`` writes
#: ``<Names.uniqueId(stack)>.stackset.template.json`` into the assembly directory as a file asset of its parent stack,
#: not as a stack artifact of ``manifest.json`` (cdk-stacksets 0.0.157 lib/stackset-stack.js ``templateFile``).
STACKSET_TEMPLATE_SUFFIX = ".stackset.template.json"

#: Resource metadata key under which the CDK writes a resource's construct path (aws-cdk-lib cx-api
#: ``PATH_METADATA_KEY``); absent when synthesized with ``--no-path-metadata``.
PATH_METADATA_KEY = "aws:cdk:path"


class AssemblyError(FmValidationError):
    """A cloud assembly ``fmc`` cannot read: a missing or unreadable file, invalid JSON, or a file whose JSON does
    not have the cloud assembly / CloudFormation shape (names the file and the part)."""


_IP_CARRYING = frozenset({"interface", "efa"})
"""``InterfaceType`` values that carry IP traffic and take a private IP from the subnet (``efa-only`` takes none;
EC2 User Guide "Elastic Fabric Adapter" efa-only interfaces; a missing ``InterfaceType`` is an ENA ``interface``)."""


def literal(value: object) -> bool:
    """Whether a template value is a plain literal (not an intrinsic function)."""
    if isinstance(value, dict):
        return False
    if isinstance(value, list):
        return all(literal(v) for v in value)
    return True


def as_int(value: object) -> int | None:
    """A literal count (CloudFormation writes some as strings, e.g. ASG ``MinSize``); None for a deploy-time value."""
    if isinstance(value, bool) or not literal(value):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def describe(value: object) -> str:
    """A short text for a template value: the literal, or what the intrinsic refers to."""
    if literal(value):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), *_ = value.items()
        if fn == "Ref":
            return f"Ref {arg}"
        if fn == "Fn::GetAtt" and isinstance(arg, list):
            return "GetAtt " + ".".join(str(a) for a in arg)
        return str(fn)
    return DEPLOY_TIME


@dataclass(frozen=True)
class Interface:
    """One ``LaunchTemplateData.NetworkInterfaces`` entry."""

    network_card_index: int | None
    device_index: int | None
    interface_type: str

    @property
    def is_efa(self) -> bool:
        return self.interface_type in ("efa", "efa-only")

    @property
    def carries_ip(self) -> bool:
        return self.interface_type in _IP_CARRYING


@dataclass(frozen=True)
class LaunchTemplate:
    logical_id: str
    instance_type: object
    image_id: object
    interfaces: tuple[Interface, ...] | None
    """None when ``NetworkInterfaces`` itself is a deploy-time value."""
    reservation_id: object = None
    reservation_group_arn: object = None
    reservation_preference: object = None
    market_type: object = None
    zone: object = None
    subnet_ids: tuple[object, ...] = ()


@dataclass
class NodeGroup:
    """A group of nodes found in a template (or a launch template no group uses)."""

    stack: str
    logical_id: str
    kind: str
    """``pcs``, ``eks``, ``asg``, ``parallelcluster``, ``hyperpod`` or ``launch-template``."""
    instance_type: object
    min_nodes: object
    max_nodes: object
    launch_template: LaunchTemplate | None
    purchase_option: object = None
    """PCS ``PurchaseOption`` / EKS ``CapacityType``."""
    subnet_ids: tuple[object, ...] = ()
    image_id: object = None
    eks_ami_type: object = None
    reservation: object = None
    """A reservation the group targets outside a launch template (ParallelCluster ``CapacityReservationTarget``,
    HyperPod ``TrainingPlanArn``)."""
    efa_enabled: object = None
    """Whether EFA is on, for groups whose service lays out the interfaces (None: launch-template groups)."""
    efa_decided_by: str | None = None
    """The service that creates the EFA interfaces (``AWS ParallelCluster``, ``SageMaker HyperPod``), if not us."""
    lustre_efa_declared: bool = False
    """Whether the resource's :data:`LUSTRE_EFA_METADATA_KEY` covers this group (ParallelCluster, HyperPod)."""
    lustre_efa_interfaces: int | None = None
    """Its EFA interfaces per node for LNet when declared (0: over TCP; None: decided on the node or not a literal)."""
    path: str | None = None
    """The construct path inside its stack (``Cluster/P5``) from the resource's ``aws:cdk:path`` metadata; None when
    the template carries no path metadata (the logical id names the group then)."""

    @property
    def name(self) -> str:
        """What tables call the group: its construct path, else its logical id."""
        return self.path or self.logical_id


@dataclass(frozen=True)
class FileSystem:
    stack: str
    logical_id: str
    file_system_type: object
    storage_capacity_gib: object
    deployment_type: object
    throughput_mbps_per_tib: object
    efa_enabled: object
    subnet_ids: tuple[object, ...] = ()
    path: str | None = None

    @property
    def name(self) -> str:
        return self.path or self.logical_id


@dataclass(frozen=True)
class NetworkConsumer:
    """A resource other than a node group that takes private IPs from the subnets it names (a PCS controller, an
    interface VPC endpoint)."""

    stack: str
    name: str
    kind: str
    """``pcs-controller`` or ``vpc-endpoint``."""
    subnet_ids: tuple[object, ...]


@dataclass
class Stack:
    name: str
    environment: str | None
    template: dict[str, Any]
    node_groups: list[NodeGroup] = field(default_factory=list)
    file_systems: list[FileSystem] = field(default_factory=list)
    parameters: tuple[str, ...] = ()
    subnet_zones: dict[str, object] = field(default_factory=dict)
    """Subnets created by the template: logical id -> ``AvailabilityZone`` (a literal or a deploy-time value)."""
    network_consumers: list[NetworkConsumer] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the readers could not use (a plan record of a version or kind they do not read), for the plan's notes."""
    stackset: bool = False
    """Whether the template is a StackSet's replicated template (``*.stackset.template.json``)."""

    @property
    def region(self) -> str | None:
        """The region of ``aws://account/region`` when the app pinned one (not ``unknown-region``)."""
        if not self.environment or not self.environment.startswith("aws://"):
            return None
        region = self.environment.rsplit("/", 1)[-1]
        return None if region.startswith("unknown") else region


def _ref(value: object) -> str | None:
    if isinstance(value, dict) and set(value) == {"Ref"} and isinstance(value["Ref"], str):
        return value["Ref"]
    return None


def _list(value: object) -> tuple[object, ...]:
    if isinstance(value, list):
        return tuple(value)
    return () if value is None else (value,)


def _launch_template(logical_id: str, props: dict[str, Any]) -> LaunchTemplate:
    data = _dict(props.get("LaunchTemplateData"))
    raw = data.get("NetworkInterfaces")
    interfaces: tuple[Interface, ...] | None
    if raw is None:
        interfaces = ()
    elif isinstance(raw, list):
        interfaces = tuple(
            Interface(
                network_card_index=as_int(ni.get("NetworkCardIndex", 0)),
                device_index=as_int(ni.get("DeviceIndex", 0)),
                interface_type=str(ni.get("InterfaceType", "interface")) if literal(ni.get("InterfaceType")) else "?",
            )
            for ni in raw
            if isinstance(ni, dict)
        )
    else:
        interfaces = None
    crs = _dict(data.get("CapacityReservationSpecification"))
    target = _dict(crs.get("CapacityReservationTarget"))
    entries = raw if isinstance(raw, list) else []
    subnets = tuple(ni["SubnetId"] for ni in entries if isinstance(ni, dict) and "SubnetId" in ni)
    return LaunchTemplate(
        logical_id=logical_id,
        instance_type=data.get("InstanceType"),
        image_id=data.get("ImageId"),
        interfaces=interfaces,
        reservation_id=target.get("CapacityReservationId"),
        reservation_group_arn=target.get("CapacityReservationResourceGroupArn"),
        reservation_preference=crs.get("CapacityReservationPreference"),
        market_type=_dict(data.get("InstanceMarketOptions")).get("MarketType"),
        zone=_dict(data.get("Placement")).get("AvailabilityZone"),
        subnet_ids=subnets,
    )


def _template_ref(value: object) -> str | None:
    """The launch template logical id behind ``{"Ref": id}`` (its id) in a group's launch template reference."""
    return _ref(value)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def construct_path(resource: dict[str, Any], prefix: str | None = None) -> str | None:
    """The resource's construct path inside its stack (``Cluster/P5``): its ``aws:cdk:path`` metadata without the
    stack's own path (``prefix``, else the first segment) and without a trailing ``Resource``/``Default`` (the L1
    child ids of aws-cdk-lib L2 constructs); None when the resource carries no path metadata."""
    raw = _dict(resource.get("Metadata")).get(PATH_METADATA_KEY)
    if not isinstance(raw, str) or not raw.strip("/"):
        return None
    if prefix and raw.startswith(prefix + "/"):
        parts = raw[len(prefix) + 1 :].split("/")
    else:
        parts = raw.split("/")
        parts = parts[1:] if len(parts) > 1 else parts
    while len(parts) > 1 and parts[-1] in ("Resource", "Default"):
        parts.pop()
    return "/".join(parts)


def _resources(template: object, where: str) -> dict[str, dict[str, Any]]:
    """The template's ``Resources``, each checked to have CloudFormation's shape (an object with a string ``Type``
    and, when present, object ``Properties`` and ``Metadata``); raises :class:`AssemblyError` naming ``where``."""
    if not isinstance(template, dict):
        raise AssemblyError("cdk_out", where, f"a CloudFormation template (a JSON object), got {_kind(template)}")
    resources = template.get("Resources", {})
    if not isinstance(resources, dict):
        raise AssemblyError("cdk_out", where, f"a template whose Resources is an object, got {_kind(resources)}")
    parameters = template.get("Parameters", {})
    if not isinstance(parameters, dict):
        raise AssemblyError("cdk_out", where, f"a template whose Parameters is an object, got {_kind(parameters)}")
    for lid, resource in resources.items():
        if not isinstance(resource, dict) or not isinstance(resource.get("Type"), str):
            raise AssemblyError("cdk_out", where, f"resource {lid} as an object with a string Type")
        for key in ("Properties", "Metadata"):
            if not isinstance(resource.get(key, {}), dict):
                got = _kind(resource[key])
                raise AssemblyError("cdk_out", where, f"resource {lid} with {key} as an object, got {got}")
    return resources


def _kind(value: object) -> str:
    """A JSON value's kind for error messages."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def parse_stack(
    name: str, template: dict[str, Any], environment: str | None = None, *, path_prefix: str | None = None
) -> Stack:
    """The node groups, file systems and other IP consumers of one template, each resource read by the reader
    :mod:`fmconstructs.cli.plan_readers` registers for its type.

    Raises :class:`AssemblyError` when the template does not have CloudFormation's shape; inside ``Properties``
    any JSON is accepted (a value that is not what CloudFormation expects is read as unknown, never guessed).
    """
    resources = _resources(template, name)
    stack = Stack(name=name, environment=environment, template=template)
    stack.parameters = tuple(sorted(str(p) for p in template.get("Parameters", {}) if p != "BootstrapVersion"))
    paths = {lid: construct_path(r, path_prefix) for lid, r in resources.items()}
    templates = {
        lid: _launch_template(lid, _dict(r.get("Properties")))
        for lid, r in resources.items()
        if r["Type"] == "AWS::EC2::LaunchTemplate"
    }
    from .plan_readers import READERS, ReadContext  # the readers build this module's records

    for lid, resource in resources.items():
        READERS.read(ReadContext(stack, lid, resource, paths[lid], templates))
    used = {g.launch_template.logical_id for g in stack.node_groups if g.launch_template is not None}
    for lid, lt in templates.items():
        if lid not in used:
            stack.node_groups.append(
                NodeGroup(
                    stack=name,
                    logical_id=lid,
                    kind="launch-template",
                    instance_type=lt.instance_type,
                    min_nodes=None,
                    max_nodes=None,
                    launch_template=lt,
                    subnet_ids=lt.subnet_ids,
                    image_id=lt.image_id,
                    path=paths[lid],
                )
            )
    return stack


def _read_json(file: Path, what: str) -> object:
    """The JSON in ``file``; raises :class:`AssemblyError` naming it when it is missing, unreadable or not JSON."""
    if not file.is_file():
        raise AssemblyError("cdk_out", str(file), f"{what} (the file is missing: run `cdk synth` again)")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise AssemblyError("cdk_out", str(file), f"{what} in valid JSON ({type(error).__name__}: {error})") from None


def _stack_artifact(root: Path, artifact_id: str, artifact: dict[str, Any], manifest: Path) -> Stack:
    props = artifact.get("properties", {})
    template_file = props.get("templateFile") if isinstance(props, dict) else None
    if not isinstance(template_file, str) or not template_file:
        raise AssemblyError("cdk_out", str(manifest), f"artifact {artifact_id} with properties.templateFile")
    environment = artifact.get("environment")
    if environment is not None and not isinstance(environment, str):
        raise AssemblyError("cdk_out", str(manifest), f"artifact {artifact_id} with a string environment")
    file = root / template_file
    template = _read_json(file, "a CloudFormation template")
    display = artifact.get("displayName")
    name = str(props.get("stackName") or display or artifact_id)
    prefix = display if isinstance(display, str) and display else artifact_id
    _resources(template, str(file))  # the shape, with the file's name in the error
    return parse_stack(name, cast(dict[str, Any], template), environment, path_prefix=prefix)


def _stackset_prefix(unique_id: str, resources: dict[str, Any]) -> str | None:
    """The StackSet stack's own construct path, found from its ``Names.uniqueId`` (the path's components, letters
    and digits only, followed by an 8-character hash): the prefix of a resource path whose components spell it."""
    head = unique_id[:-8] if len(unique_id) > 8 else unique_id
    for resource in resources.values():
        raw = _dict(resource.get("Metadata")).get(PATH_METADATA_KEY) if isinstance(resource, dict) else None
        if not isinstance(raw, str):
            continue
        parts = raw.split("/")
        for k in range(1, len(parts)):
            if "".join(c for c in "".join(parts[:k]) if c.isalnum()) == head:
                return "/".join(parts[:k])
    return None


def _stackset_stacks(root: Path) -> list[Stack]:
    """The replicated templates of cdk-stacksets' StackSet stacks in the assembly directory ``root``."""
    stacks: list[Stack] = []
    for file in sorted(root.glob("*" + STACKSET_TEMPLATE_SUFFIX)):
        template = _read_json(file, "a StackSet template")
        unique_id = file.name[: -len(STACKSET_TEMPLATE_SUFFIX)]
        resources = _resources(template, str(file))
        prefix = _stackset_prefix(unique_id, resources)
        stack = parse_stack(f"{unique_id} (StackSet)", cast(dict[str, Any], template), None, path_prefix=prefix)
        stack.stackset = True
        stacks.append(stack)
    return stacks


def read_assembly(path: str | Path) -> list[Stack]:
    """Every CloudFormation stack of the cloud assembly at ``path`` (a ``cdk.out`` directory), in manifest order,
    then the StackSet templates (``*.stackset.template.json``) of each assembly directory, then nested assemblies.

    Raises :class:`AssemblyError` (an :class:`FmValidationError` naming ``cdk_out``) when the directory holds no
    readable cloud assembly: a missing or invalid file, JSON of the wrong shape, or a nested assembly that points at
    an assembly already read or outside the top-level directory.
    """
    root = Path(path)
    return _read(root, root.resolve(), set())


def _read(root: Path, top: Path, seen: set[Path]) -> list[Stack]:
    here = root.resolve()
    if here in seen:
        raise AssemblyError(
            "cdk_out", str(root), "nested assemblies that do not point back at an assembly already read"
        )
    seen.add(here)
    manifest_file = root / "manifest.json"
    if not manifest_file.is_file():
        raise AssemblyError(
            "cdk_out", str(root), "a cloud assembly directory with a manifest.json (run `cdk synth` first)"
        )
    manifest = _read_json(manifest_file, "a cloud assembly manifest")
    if not isinstance(manifest, dict):
        raise AssemblyError("cdk_out", str(manifest_file), f"a manifest that is a JSON object, got {_kind(manifest)}")
    artifacts = manifest.get("artifacts", {})
    if not isinstance(artifacts, dict):
        raise AssemblyError("cdk_out", str(manifest_file), f"artifacts as a JSON object, got {_kind(artifacts)}")
    stacks: list[Stack] = []
    nested: list[Path] = []
    for artifact_id, artifact in artifacts.items():
        if not isinstance(artifact, dict):
            raise AssemblyError("cdk_out", str(manifest_file), f"artifact {artifact_id} as a JSON object")
        if artifact.get("type") == "aws:cloudformation:stack":
            stacks.append(_stack_artifact(root, artifact_id, artifact, manifest_file))
        elif artifact.get("type") == "cdk:cloud-assembly":
            directory = _dict(artifact.get("properties")).get("directoryName")
            if not isinstance(directory, str) or not directory:
                raise AssemblyError("cdk_out", str(manifest_file), f"artifact {artifact_id} with a directoryName")
            target = (root / directory).resolve()
            if target != top and top not in target.parents:
                raise AssemblyError("cdk_out", str(manifest_file), f"artifact {artifact_id} inside {top}")
            nested.append(root / directory)
    stacks.extend(_stackset_stacks(root))
    for directory in nested:
        stacks.extend(_read(directory, top, seen))
    return stacks
