"""The options of :class:`~fmconstructs.eks.node_group.GpuNodeGroup`, declared once (:class:`GpuNodeGroupOptions`),
their defaults (:class:`_NodeGroupProps`) and their checks (:meth:`_NodeGroupProps.resolve`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, Required, TypedDict

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_optional_count,
    check_sequence,
    check_str,
    check_subnet,
)
from .._validate_k8s import check_label_value
from .._validate_tags import check_tags
from ..bootstrap import BootstrapDelivery
from ..capacity import Capacity, CapacityBlockScaling
from ..compute._launch_template_inputs import LAUNCH_TEMPLATE_TAG_KEYS, MAX_TAGS_PER_RESOURCE
from ..compute.launch_template import DEFAULT_ROOT_VOLUME_SIZE_GIB
from ..errors import FmTypeError, FmValidationError, is_token
from ..health import NodeHealthOptions
from ..networking import ClusterPlacementGroup, EfaCardSelection
from ._names import EKS_NODEGROUP_NAME, check_node_label_key, check_node_labels

#: IMDSv2 hop limit of GPU nodes: 1, so that only host processes and ``hostNetwork`` pods reach the instance metadata
#: service and the node role's credentials; a pod on the pod network is one hop further and gets no IMDSv2 token.
#: EKS User Guide "Amazon EKS security best practices" (best-practices-security, "Restricting access to the IMDS and
#: Amazon EC2 instance profile credentials": block pod access to IMDS when pods that need AWS have their own roles and
#: "No pods in your cluster require access to IMDS for other reasons, such as retrieving the current Region"; the
#: option "block access to IMDSv2 for all containers that don't use host networking", for managed nodes with a custom
#: launch template: IMDSv2 required and hop limit 1; the AWS Load Balancer Controller then needs its VPC and Region
#: set) and the EKS User Guide cni-iam-role (the CNI's pods have the node role's permissions "unless you block access to
#: IMDS"). What runs on fmconstructs GPU nodes and needs no pod-network IMDS: ``aws-node`` (VPC CNI, its own role
#: through EKS Pod Identity), ``kube-proxy`` and ``eks-pod-identity-agent`` run on the host network; the FSx CSI node
#: plugin falls back to the Kubernetes API for its instance data when IMDS is unreachable (kubernetes-sigs/aws-fsx-
#: csi-driver pkg/cloud/metadata.go ``NewMetadataService``), and mounting needs no AWS call; the NVIDIA device plugin,
#: EFA device plugin, DCGM exporter, NVIDIA DRA driver and fmconstructs' node exporter read the host's devices only
#: (UNCONFIRMED for each chart's code: no IMDS use found in the values fmconstructs sets); the pre-bootstrap user data
#: (bootstrap loader, Lustre client) runs on the host. SageMaker HyperPod EKS nodes behave the same way ("Only Pods
#: with hostNetwork = true have access to the Amazon EC2 Instance Metadata Service (IMDS) by default", SageMaker
#: Developer Guide sagemaker-hyperpod-eks-prerequisites). Workloads that need AWS credentials use EKS Pod Identity or
#: IRSA; AWS SDKs that find their Region through IMDS (the Java and Go SDKs do) need ``AWS_REGION`` set in the pod.
#: Before 0.2.x the limit was 2.
EKS_IMDS_HOP_LIMIT = 1


class GpuNodeGroupOptions(TypedDict, total=False):
    """The options of :class:`~fmconstructs.eks.node_group.GpuNodeGroup` and
    :meth:`~fmconstructs.eks.cluster.GpuEksCluster.add_gpu_node_group` (everything but ``cluster``): their one
    declaration (:class:`_NodeGroupProps` holds the defaults and :meth:`_NodeGroupProps.resolve` the checks).

    :var instance_type: a catalog type (``p5en.48xlarge`` ...); sets the AMI type and the EFA layout.
    :var max_nodes: maximum nodes (required); at most the reservation's size when known. May be a number token.
    :var min_nodes: default: 0 (:func:`~fmconstructs.capacity.default_min_nodes`, as on PCS and
        ParallelCluster; it was ``max_nodes`` before), ``max_nodes`` on a Capacity Block deployed ``AT_DEPLOY``.
        On a Capacity Block: 0 (to create the group before the block starts) or ``max_nodes``; 0 with
        ``ON_BLOCK_EVENTS``.
    :var desired_nodes: default: ``max_nodes``; 0 with ``ON_BLOCK_EVENTS``. On a Capacity Block: 0 or
        ``max_nodes``; 0 with ``ON_BLOCK_EVENTS``.
    :var capacity: On-Demand (default), ``CapacityReservation``, ``CapacityBlock`` or
        ``UltraServerCapacityBlock``.
    :var subnets: default: the private subnet in the reservation's zone when known, else the VPC's first private
        subnet. EFA groups take exactly one subnet. Subnets without zone information are accepted (the zone check
        is skipped).
    :var placement_group: an existing placement group to launch the nodes into.
    :var use_placement_group: True creates a new cluster placement group when ``placement_group`` is not
        given. Default: False: a node group gets a placement group only when asked (0.2.0; before, EFA groups not
        on a Capacity Block got a new one by default). With an On-Demand Capacity Reservation a placement group
        warns (``fmconstructs:placement-group-with-capacity-reservation``) unless the reservation is known to be
        in that group: EC2 reserves capacity in a cluster placement group only for a reservation created in it
        (EC2 User Guide "cr-cpg"), so a new group is unrelated to an existing reservation.
    :var efa_interface_count: fewer EFA interfaces than the catalog's maximum. Default: the maximum.
    :var efa_cards: which EFA-capable cards get an EFA (see :class:`EfaCardSelection`). Default: RECOMMENDED.
    :var labels: extra node labels (merged over the fmconstructs labels); Kubernetes label keys and values.
    :var taints: default: ``nvidia.com/gpu=true:NoSchedule``; pass ``[]`` for none. With ``node_checks`` the
        node-checks taint is added to these.
    :var instance_store_raid0: assemble the NVMe disks into RAID0 for kubelet/containerd through nodeadm
        (AL2023 ``localStorage.strategy: RAID0``). Default: True (types without instance store skip it).
    :var root_volume_size_gib: encrypted gp3 root volume. Default: 200.
    :var node_group_name: the node group's name. Default: generated by CloudFormation. Renamed from
        ``nodegroup_name`` (deprecated, removed in 0.4.0).
    :var tags: tags on the node group (``AWS::EKS::Nodegroup`` ``Tags``) and on what its launch template
        launches: the instances, their volumes and network interfaces (the template's ``TagSpecifications``).
        Node group tags alone do not reach the instances (aws-cdk-lib 2.275 ``aws_eks_v2.NodegroupOptions.tags``:
        "Node group tags do not propagate to any other resources associated with the node group, such as the
        Amazon EC2 instances or subnets"). Keys and values as the EKS API ``TagMap`` takes them (at most 50). The
        launch template's own ``fmconstructs:eks-cluster`` and ``fmconstructs:instance-type`` tags win over the
        same keys here. Default: none.
    :var node_role: default: the cluster's node role.
    :var enable_node_auto_repair: EKS node auto repair (replaces or reboots nodes with GPU or EFA faults).
        Default: True. Also installs the ``eks-node-monitoring-agent`` add-on, which reports the GPU faults
        auto repair acts on, before the group (:mod:`fmconstructs.eks.health`).
    :var node_checks: nodes join with the taint ``fmconstructs.io/node-checks=pending:NoSchedule`` (added to
        ``taints``), which a DaemonSet removes once the node's BOOT checks pass (:mod:`fmconstructs.eks.health`).
        True: ``NodeHealthOptions()`` (the Slurm backends' default, DCGM diagnostics level 2 included); a
        :class:`~fmconstructs.health.NodeHealthOptions` for the same checks as a Slurm gate with those options
        (``NodeHealthOptions(dcgm_level=None)``: no DCGM; ``enabled=False`` or False: no checks). Default: True.
    :var efa_interfaces_for_lustre: EFA interfaces each node uses for LNet with EFA-enabled FSx for Lustre file
        systems (0: LNet over TCP). Default: the instance type's FSx default
        (``InstanceSpec.fsx_lustre_efa_interfaces``, FSx for Lustre User Guide "Configuring EFA clients"), capped
        by the EFA interfaces the node attaches.
    :var bootstrap_delivery: how pre-bootstrap steps (Lustre clients) reach the nodes: default None, an S3
        asset with a loader when the stack publishes file assets, else inline (see the module docstring).
    :var capacity_block_scaling: on a Capacity Block, ``AT_DEPLOY`` (default: a full-size group, deploy after
        the block starts) or ``ON_BLOCK_EVENTS`` (an empty group scaled by
        :class:`~fmconstructs.capacity_events.CapacityBlockEvents`, deploy before the block starts; see the module
        docstring). ``ON_BLOCK_EVENTS`` is refused on other capacity.
    :var imds_hop_limit: the launch template's IMDSv2 hop limit, 1-64 (EC2 allows 64). Default: 1
        (:data:`EKS_IMDS_HOP_LIMIT`: pods off the host network cannot reach the instance metadata or the node
        role). 2 is the limit before 0.2.x, for workloads that still read IMDS from the pod network. Changing it
        makes a new launch template version, which EKS rolls out by replacing the group's nodes.
    """

    instance_type: Required[str]
    max_nodes: Required[int | float]
    min_nodes: int | float | None
    desired_nodes: int | float | None
    capacity: Capacity | None
    subnets: Sequence[ec2.ISubnet] | None
    placement_group: ClusterPlacementGroup | None
    use_placement_group: bool
    efa_interface_count: int | None
    efa_cards: EfaCardSelection
    labels: Mapping[str, str] | None
    taints: Sequence[eks.TaintSpec] | None
    instance_store_raid0: bool
    root_volume_size_gib: int | float
    node_group_name: str | None
    tags: Mapping[str, str] | None
    node_role: iam.IRole | None
    enable_node_auto_repair: bool
    node_checks: bool | NodeHealthOptions
    efa_interfaces_for_lustre: int | None
    bootstrap_delivery: BootstrapDelivery | None
    capacity_block_scaling: CapacityBlockScaling
    imds_hop_limit: int


def _check_taint(parameter: str, taint: object) -> eks.TaintSpec:
    if not isinstance(taint, eks.TaintSpec):
        raise FmTypeError(parameter, taint, f"an aws_eks_v2.TaintSpec (got a {type(taint).__name__})")
    if taint.key is None:
        raise FmValidationError(f"{parameter}.key", None, "a taint key (Kubernetes requires one)")
    check_node_label_key(f"{parameter}.key", taint.key, kind="taint")
    if taint.value is not None:
        check_label_value(f"{parameter}.value", taint.value, allow_empty=True)
    if taint.effect is None:
        raise FmValidationError(f"{parameter}.effect", None, "a TaintEffect (the EKS API requires one)")
    check_enum(f"{parameter}.effect", taint.effect, eks.TaintEffect)
    return taint


def known_count(parameter: str, value: object) -> int | None:
    """A count that shapes the template (interfaces, LNet set-up): a whole number known at synthesis, or None."""
    if value is None:
        return None
    checked = check_count(parameter, value)
    if is_token(checked):
        raise FmValidationError(
            parameter, checked, "a number known at synthesis (it shapes the launch template and node set-up)"
        )
    return int(checked)


def refuse_unknown_options(owner: str, options: Mapping[str, object], declared: Iterable[str]) -> None:
    """Raise ``TypeError`` for the first key of ``options`` not ``declared``, as Python does for an unexpected keyword
    (``**options`` takes any keyword; its ``TypedDict`` only tells the type checker)."""
    allowed = set(declared)
    for key in options:
        if key not in allowed:
            raise TypeError(f"{owner}() got an unexpected keyword argument {key!r}")


#: What a missing required option must be, for the message of the FmTypeError naming it.
_MISSING_ALLOWED = {"instance_type": "a catalog instance type (required)", "max_nodes": "a number of nodes (required)"}


@dataclass(frozen=True)
class _NodeGroupProps:
    """:class:`GpuNodeGroupOptions` with their defaults, checked (normalised where the construct uses the checked
    value). The field names are the options' keys; the fields without a default are the required options."""

    instance_type: str
    max_nodes: Any  # int, or a number token
    min_nodes: Any = None
    desired_nodes: Any = None
    capacity: Capacity | None = None
    subnets: tuple[ec2.ISubnet, ...] | None = None
    placement_group: ClusterPlacementGroup | None = None
    use_placement_group: bool = False
    efa_interface_count: int | None = None
    efa_cards: EfaCardSelection = EfaCardSelection.RECOMMENDED
    labels: Mapping[str, str] | None = None  # checked: a dict, {} when not given
    taints: tuple[eks.TaintSpec, ...] | None = None
    instance_store_raid0: bool = True
    root_volume_size_gib: Any = DEFAULT_ROOT_VOLUME_SIZE_GIB  # int, or a number token
    node_group_name: str | None = None
    tags: dict[str, str] | None = None
    node_role: iam.IRole | None = None
    enable_node_auto_repair: bool = True
    node_checks: bool | NodeHealthOptions = True
    efa_interfaces_for_lustre: int | None = None
    bootstrap_delivery: BootstrapDelivery | None = None
    capacity_block_scaling: CapacityBlockScaling = CapacityBlockScaling.AT_DEPLOY
    imds_hop_limit: int = EKS_IMDS_HOP_LIMIT

    @classmethod
    def resolve(cls, owner: str, options: Mapping[str, object]) -> _NodeGroupProps:
        """``options`` (:class:`GpuNodeGroupOptions`) of ``owner``: an unknown key raises ``TypeError`` as Python does
        for an unexpected keyword, a missing required one :class:`~fmconstructs.errors.FmTypeError` naming it; then
        the defaults, then each option checked on its own in declaration order (the first bad one raises)."""
        known_keys = {field.name: field for field in fields(cls)}
        refuse_unknown_options(owner, options, known_keys)
        props: dict[str, Any] = {
            name: options.get(name, field.default)
            for name, field in known_keys.items()
            if name in options or field.default is not MISSING
        }
        for name in known_keys:
            if name not in props:  # a required option (no default)
                raise FmTypeError(name, None, _MISSING_ALLOWED.get(name, "given (required)"))
        checked = _check_layout(props)
        checked.update(_check_node_options(props))
        return cls(**{**props, **checked})


def _check_layout(props: Mapping[str, Any]) -> dict[str, Any]:
    """Node counts, instance type, capacity, placement group and EFA layout: the checked values that differ."""
    max_nodes = props["max_nodes"]
    if max_nodes is None:
        raise FmTypeError("max_nodes", None, "a number of nodes (required)")
    max_nodes = check_count("max_nodes", max_nodes, minimum=1)
    min_nodes = check_optional_count("min_nodes", props["min_nodes"])
    desired_nodes = check_optional_count("desired_nodes", props["desired_nodes"])
    check_str("instance_type", props["instance_type"], min_length=1, allowed="a catalog instance type")
    capacity = props["capacity"]
    if capacity is not None and not isinstance(capacity, Capacity):
        raise FmTypeError(
            "capacity",
            capacity,
            "an OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock "
            f"(got a {type(capacity).__name__})",
        )
    placement_group = props["placement_group"]
    if placement_group is not None and not isinstance(placement_group, ClusterPlacementGroup):
        raise FmTypeError(
            "placement_group", placement_group, f"a ClusterPlacementGroup (got a {type(placement_group).__name__})"
        )
    # None was the old default ("decide for me"); it now means no new placement group, like False.
    use_placement_group = props["use_placement_group"]
    use_placement_group = (
        False if use_placement_group is None else check_bool("use_placement_group", use_placement_group)
    )
    return {
        "max_nodes": max_nodes,
        "min_nodes": min_nodes,
        "desired_nodes": desired_nodes,
        "use_placement_group": use_placement_group,
        "efa_interface_count": known_count("efa_interface_count", props["efa_interface_count"]),
        "efa_cards": check_enum("efa_cards", props["efa_cards"], EfaCardSelection),
    }


def _check_node_options(props: Mapping[str, Any]) -> dict[str, Any]:
    """Labels, taints, disks, names, roles, health, Lustre, bootstrap and IMDS: the checked values that differ."""
    labels = props["labels"]
    taints = props["taints"]
    user_labels = check_node_labels("labels", labels) if labels is not None else {}
    user_taints = check_sequence("taints", taints, _check_taint) if taints is not None else None
    check_bool("instance_store_raid0", props["instance_store_raid0"])
    # The size range (gp3 limits) is the launch template's check.
    root_volume_size_gib = check_count("root_volume_size_gib", props["root_volume_size_gib"], minimum=1)
    node_group_name = props["node_group_name"]
    if node_group_name is not None:
        check_str(
            "node_group_name",
            node_group_name,
            pattern=EKS_NODEGROUP_NAME,
            allowed="a node group name: 1-63 letters, digits, '-' or '_', starting with a letter or digit",
        )
    tags = props["tags"]
    checked_tags = check_tags("tags", tags) if tags is not None else None
    if checked_tags is not None:
        _check_room_for_the_library_tags(checked_tags)
    node_role = props["node_role"]
    if node_role is not None:
        check_construct("node_role", node_role, attribute="role_arn", expected="an iam.IRole")
    check_bool("enable_node_auto_repair", props["enable_node_auto_repair"])
    if not isinstance(props["node_checks"], NodeHealthOptions):
        check_bool("node_checks", props["node_checks"])
    efa_interfaces_for_lustre = known_count("efa_interfaces_for_lustre", props["efa_interfaces_for_lustre"])
    subnets = props["subnets"]
    checked_subnets = check_sequence("subnets", subnets, check_subnet) if subnets is not None else None
    if props["bootstrap_delivery"] is not None:
        check_enum("bootstrap_delivery", props["bootstrap_delivery"], BootstrapDelivery)
    check_enum("capacity_block_scaling", props["capacity_block_scaling"], CapacityBlockScaling)
    # EC2 API LaunchTemplateInstanceMetadataOptionsRequest.HttpPutResponseHopLimit: "Integers from 1 to 64".
    check_count("imds_hop_limit", props["imds_hop_limit"], minimum=1, maximum=64)
    return {
        "labels": user_labels,
        "taints": user_taints,
        "root_volume_size_gib": root_volume_size_gib,
        "efa_interfaces_for_lustre": efa_interfaces_for_lustre,
        "subnets": checked_subnets,
        "tags": checked_tags,
    }


#: Keys the node group's launch template adds to its instances, volumes and network interfaces.
#: The tag an EKS node group's launch template puts on its instances, naming the cluster.
EKS_CLUSTER_TAG = "fmconstructs:eks-cluster"
_LIBRARY_INSTANCE_TAG_KEYS = LAUNCH_TEMPLATE_TAG_KEYS | {EKS_CLUSTER_TAG}


def _check_room_for_the_library_tags(tags: Mapping[str, str]) -> None:
    """The user's tags plus the library's fit the per-resource tag limit on the instances (see
    :data:`~fmconstructs.compute._launch_template_inputs.MAX_TAGS_PER_RESOURCE`)."""
    own = _LIBRARY_INSTANCE_TAG_KEYS - set(tags)
    if len(tags) + len(own) > MAX_TAGS_PER_RESOURCE:
        raise FmValidationError(
            "tags",
            f"{len(tags)} tags",
            f"at most {MAX_TAGS_PER_RESOURCE - len(own)} tags: the launch template adds {', '.join(sorted(own))} "
            f"to the instances, volumes and network interfaces, and AWS allows {MAX_TAGS_PER_RESOURCE} per resource",
        )
