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
from typing import Any

from ..errors import FmValidationError
from ..storage.sizing import LUSTRE_EFA_METADATA_KEY

#: Marker for a value CloudFormation resolves at deploy time (a Ref, Fn::GetAtt, parameter, import...).
DEPLOY_TIME = "deploy-time"


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
    data = props.get("LaunchTemplateData") or {}
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
    crs = data.get("CapacityReservationSpecification") or {}
    target = crs.get("CapacityReservationTarget") or {} if isinstance(crs, dict) else {}
    market = data.get("InstanceMarketOptions") or {}
    placement = data.get("Placement") or {}
    subnets = tuple(ni["SubnetId"] for ni in raw or () if isinstance(ni, dict) and "SubnetId" in ni)
    return LaunchTemplate(
        logical_id=logical_id,
        instance_type=data.get("InstanceType"),
        image_id=data.get("ImageId"),
        interfaces=interfaces,
        reservation_id=target.get("CapacityReservationId") if isinstance(target, dict) else None,
        reservation_group_arn=target.get("CapacityReservationResourceGroupArn") if isinstance(target, dict) else None,
        reservation_preference=crs.get("CapacityReservationPreference") if isinstance(crs, dict) else None,
        market_type=market.get("MarketType") if isinstance(market, dict) else None,
        zone=placement.get("AvailabilityZone") if isinstance(placement, dict) else None,
        subnet_ids=subnets,
    )


def _template_ref(value: object) -> str | None:
    """The launch template logical id behind ``{"Ref": id}`` (its id) in a group's launch template reference."""
    return _ref(value)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _reservation_target(value: object) -> object:
    target = _dict(value)
    return target.get("CapacityReservationId", target.get("CapacityReservationResourceGroupArn"))


def _lustre_efa_marker(resource: dict[str, Any]) -> dict[str, Any] | None:
    """The resource's :data:`LUSTRE_EFA_METADATA_KEY` mapping, or None when it has none."""
    marker = _dict(resource.get("Metadata")).get(LUSTRE_EFA_METADATA_KEY)
    return marker if isinstance(marker, dict) else None


def _declare_lustre_efa(group: NodeGroup, marker: dict[str, Any] | None, name: object) -> None:
    """Set ``group``'s Lustre EFA interfaces from ``marker[name]``: a literal count, else (``"decided-on-node"``, or
    anything that is not a literal count) decided on the node (None)."""
    if marker is None or not isinstance(name, str) or name not in marker:
        return
    count = as_int(marker[name])
    group.lustre_efa_declared = True
    group.lustre_efa_interfaces = count if count is not None and count >= 0 else None


def _hyperpod_groups(name: str, logical_id: str, cfn_resource: dict[str, Any]) -> list[NodeGroup]:
    """One node group per ``InstanceGroups`` entry; ``ml.p5.48xlarge`` is planned as ``p5.48xlarge``."""
    props: dict[str, Any] = cfn_resource.get("Properties") or {}
    marker = _lustre_efa_marker(cfn_resource)
    subnets = _list(_dict(props.get("VpcConfig")).get("Subnets"))
    groups: list[NodeGroup] = []
    for entry in _list(props.get("InstanceGroups")):
        group = _dict(entry)
        itype = group.get("InstanceType")
        if isinstance(itype, str) and itype.startswith("ml."):
            itype = itype[len("ml.") :]
        count = group.get("InstanceCount")
        plan = group.get("TrainingPlanArn")
        groups.append(
            NodeGroup(
                stack=name,
                logical_id=f"{logical_id}/{describe(group.get('InstanceGroupName'))}",
                kind="hyperpod",
                instance_type=itype,
                min_nodes=group.get("MinInstanceCount", count),
                max_nodes=count,
                launch_template=None,
                purchase_option="TRAINING_PLAN" if plan is not None else "ON_DEMAND",
                subnet_ids=subnets,
                reservation=plan,
                efa_enabled=True,
                efa_decided_by="SageMaker HyperPod",
            )
        )
        _declare_lustre_efa(groups[-1], marker, group.get("InstanceGroupName"))
    return groups


def _parallelcluster_groups(name: str, logical_id: str, cfn_resource: dict[str, Any]) -> list[NodeGroup]:
    """The head node, login pools and every queue's compute resources of a ParallelCluster configuration."""
    props: dict[str, Any] = cfn_resource.get("Properties") or {}
    config = _dict(props.get("ClusterConfiguration"))
    marker = _lustre_efa_marker(cfn_resource)
    groups: list[NodeGroup] = []

    def add(path: str, itype: object, low: object, high: object, subnets: tuple[object, ...], **extra: Any) -> None:
        groups.append(
            NodeGroup(
                stack=name,
                logical_id=f"{logical_id}/{path}",
                kind="parallelcluster",
                instance_type=itype,
                min_nodes=low,
                max_nodes=high,
                launch_template=None,
                subnet_ids=subnets,
                efa_decided_by="AWS ParallelCluster",
                **extra,
            )
        )

    def over_tcp() -> None:
        # fmconstructs never configures LNet over EFA on the head node or login nodes: with the marker, they are TCP.
        if marker is not None:
            groups[-1].lustre_efa_declared = True
            groups[-1].lustre_efa_interfaces = 0

    head = _dict(config.get("HeadNode"))
    if head:
        add("head", head.get("InstanceType"), 1, 1, _list(_dict(head.get("Networking")).get("SubnetId")))
        over_tcp()
    for pool in _list(_dict(config.get("LoginNodes")).get("Pools")):
        pool = _dict(pool)
        count = pool.get("Count")
        subnets = _list(_dict(pool.get("Networking")).get("SubnetIds"))
        add(f"login/{describe(pool.get('Name'))}", pool.get("InstanceType"), count, count, subnets)
        over_tcp()
    for queue in _list(_dict(config.get("Scheduling")).get("SlurmQueues")):
        queue = _dict(queue)
        subnets = _list(_dict(queue.get("Networking")).get("SubnetIds"))
        for resource in _list(queue.get("ComputeResources")):
            resource = _dict(resource)
            itype = resource.get("InstanceType")
            if itype is None:  # the flexible form: Instances[].InstanceType (the first one is planned)
                itype = _dict((_list(resource.get("Instances")) or ({},))[0]).get("InstanceType")
            add(
                f"{describe(queue.get('Name'))}/{describe(resource.get('Name'))}",
                itype,
                resource.get("MinCount", 0),
                resource.get("MaxCount"),
                subnets,
                purchase_option=queue.get("CapacityType", "ONDEMAND"),
                reservation=_reservation_target(resource.get("CapacityReservationTarget"))
                or _reservation_target(queue.get("CapacityReservationTarget")),
                efa_enabled=_dict(resource.get("Efa")).get("Enabled", False),
            )
            _declare_lustre_efa(groups[-1], marker, queue.get("Name"))
    return groups


def parse_stack(name: str, template: dict[str, Any], environment: str | None = None) -> Stack:
    """The node groups and file systems of one template."""
    resources: dict[str, Any] = template.get("Resources") or {}
    stack = Stack(name=name, environment=environment, template=template)
    stack.parameters = tuple(sorted(p for p in (template.get("Parameters") or {}) if p != "BootstrapVersion"))
    templates = {
        lid: _launch_template(lid, r.get("Properties") or {})
        for lid, r in resources.items()
        if r.get("Type") == "AWS::EC2::LaunchTemplate"
    }
    used: set[str] = set()
    for lid, resource in resources.items():
        rtype = resource.get("Type")
        props: dict[str, Any] = resource.get("Properties") or {}
        if rtype == "AWS::EC2::Subnet":
            stack.subnet_zones[lid] = props.get("AvailabilityZone", DEPLOY_TIME)
        elif rtype == "AWS::PCS::ComputeNodeGroup":
            lt_id = _template_ref((props.get("CustomLaunchTemplate") or {}).get("TemplateId"))
            lt = templates.get(lt_id or "")
            configs = props.get("InstanceConfigs") or [{}]
            first = configs[0] if isinstance(configs, list) and configs and isinstance(configs[0], dict) else {}
            scaling = props.get("ScalingConfiguration") or {}
            stack.node_groups.append(
                NodeGroup(
                    stack=name,
                    logical_id=lid,
                    kind="pcs",
                    instance_type=first.get("InstanceType", lt.instance_type if lt else None),
                    min_nodes=scaling.get("MinInstanceCount"),
                    max_nodes=scaling.get("MaxInstanceCount"),
                    launch_template=lt,
                    purchase_option=props.get("PurchaseOption"),
                    subnet_ids=_list(props.get("SubnetIds")),
                    image_id=props.get("AmiId", lt.image_id if lt else None),
                )
            )
        elif rtype == "AWS::EKS::Nodegroup":
            lt_id = _template_ref((props.get("LaunchTemplate") or {}).get("Id"))
            lt = templates.get(lt_id or "")
            types = props.get("InstanceTypes")
            itype = types[0] if isinstance(types, list) and types else (lt.instance_type if lt else None)
            scaling = props.get("ScalingConfig") or {}
            stack.node_groups.append(
                NodeGroup(
                    stack=name,
                    logical_id=lid,
                    kind="eks",
                    instance_type=itype,
                    min_nodes=scaling.get("MinSize"),
                    max_nodes=scaling.get("MaxSize"),
                    launch_template=lt,
                    purchase_option=props.get("CapacityType", "ON_DEMAND"),
                    subnet_ids=_list(props.get("Subnets")),
                    image_id=lt.image_id if lt else None,
                    eks_ami_type=props.get("AmiType"),
                )
            )
        elif rtype == "AWS::AutoScaling::AutoScalingGroup":
            spec = props.get("LaunchTemplate") or {}
            lt_id = _template_ref(spec.get("LaunchTemplateId"))
            lt = templates.get(lt_id or "")
            stack.node_groups.append(
                NodeGroup(
                    stack=name,
                    logical_id=lid,
                    kind="asg",
                    instance_type=lt.instance_type if lt else None,
                    min_nodes=props.get("MinSize"),
                    max_nodes=props.get("MaxSize"),
                    launch_template=lt,
                    subnet_ids=_list(props.get("VPCZoneIdentifier")),
                    image_id=lt.image_id if lt else None,
                )
            )
        elif rtype == "AWS::SageMaker::Cluster":
            stack.node_groups.extend(_hyperpod_groups(name, lid, resource))
        elif rtype == "Custom::PclusterCluster":
            stack.node_groups.extend(_parallelcluster_groups(name, lid, resource))
        elif rtype == "AWS::FSx::FileSystem":
            lustre = props.get("LustreConfiguration") or {}
            stack.file_systems.append(
                FileSystem(
                    stack=name,
                    logical_id=lid,
                    file_system_type=props.get("FileSystemType"),
                    storage_capacity_gib=props.get("StorageCapacity"),
                    deployment_type=lustre.get("DeploymentType"),
                    throughput_mbps_per_tib=lustre.get("PerUnitStorageThroughput"),
                    efa_enabled=lustre.get("EfaEnabled", False),
                    subnet_ids=_list(props.get("SubnetIds")),
                )
            )
    for group in stack.node_groups:
        if group.launch_template is not None:
            used.add(group.launch_template.logical_id)
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
                )
            )
    return stack


def read_assembly(path: str | Path) -> list[Stack]:
    """Every CloudFormation stack of the cloud assembly at ``path`` (a ``cdk.out`` directory), in manifest order.

    Raises :class:`FmValidationError` naming ``cdk_out`` when the directory holds no readable cloud assembly.
    """
    root = Path(path)
    manifest_file = root / "manifest.json"
    if not manifest_file.is_file():
        raise FmValidationError(
            "cdk_out", str(root), "a cloud assembly directory with a manifest.json (run `cdk synth` first)"
        )
    try:
        manifest = json.loads(manifest_file.read_text())
    except (OSError, ValueError) as error:
        raise FmValidationError("cdk_out", str(manifest_file), f"a readable JSON manifest ({error})") from None
    stacks: list[Stack] = []
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        if not isinstance(artifact, dict) or artifact.get("type") != "aws:cloudformation:stack":
            continue
        props = artifact.get("properties") or {}
        template_file = props.get("templateFile")
        if not isinstance(template_file, str):
            continue
        try:
            template = json.loads((root / template_file).read_text())
        except (OSError, ValueError) as error:
            raise FmValidationError("cdk_out", str(root / template_file), f"a readable template ({error})") from None
        name = str(props.get("stackName") or artifact.get("displayName") or artifact_id)
        stacks.append(parse_stack(name, template, artifact.get("environment")))
    # Nested assemblies (CDK stages) are directories named assembly-* with their own manifest.
    for artifact in (manifest.get("artifacts") or {}).values():
        if isinstance(artifact, dict) and artifact.get("type") == "cdk:cloud-assembly":
            directory = (artifact.get("properties") or {}).get("directoryName")
            if isinstance(directory, str):
                stacks.extend(read_assembly(root / directory))
    return stacks
