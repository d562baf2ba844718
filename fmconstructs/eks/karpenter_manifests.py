"""Karpenter ``EC2NodeClass`` and ``NodePool`` manifests for GPU nodes (Karpenter 1.14.1, ``karpenter.k8s.aws/v1`` and
``karpenter.sh/v1``): pure functions returning dicts, validated in tests against the CRDs of the pinned version
(tests/data/karpenter_crds). :class:`~fmconstructs.eks.karpenter.Karpenter` applies them to a cluster.

Sources (aws/karpenter-provider-aws; docs under ``website/content/en/v1.14`` at commit 1d927085, code at tag v1.14.1):

- AMI: ``amiSelectorTerms: [{alias: al2023@<version>}]`` (concepts/nodeclasses.md "spec.amiSelectorTerms": family
  ``al2023``, version ``latest`` or an amazon-eks-ami release tag such as ``v20240807``). For the ``al2023`` alias
  Karpenter resolves the standard, ``nvidia`` and ``neuron`` variants from SSM
  (``/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<variant>/...``) and gives GPU instance types the
  ``nvidia`` one (pkg/providers/amifamily/al2023.go ``DescribeImageQuery``; types.go ``VariantNvidia`` requires
  ``karpenter.k8s.aws/instance-gpu-count`` to exist): the "AL2023 x86_64 NVIDIA" / "AL2023 ARM NVIDIA" EKS-optimized
  accelerated AMIs of the EKS User Guide "ml-eks-optimized-ami" (p5, p5e, p5en, p6-b200, p6-b300, g5, g6, g6e, ...).
- IMDS: ``metadataOptions`` (nodeclasses.md "spec.metadataOptions"; default ``httpTokens: required``, hop limit 1).
  Written out here: IMDSv2 only, hop limit 1 by default (pods on the pod network cannot reach the node role), as
  :data:`~fmconstructs.eks.node_group.EKS_IMDS_HOP_LIMIT` for managed node groups.
- Root volume: AL2023's root device is ``/dev/xvda`` (amifamily/al2023.go ``EphemeralBlockDevice``); encrypted gp3.
- Capacity reservations: ``spec.capacityReservationSelectorTerms`` (nodeclasses.md; terms ORed; a term is an ``id``
  alone, or ``tags`` and/or ``instanceMatchCriteria`` with an optional ``ownerID``) and tasks/odcrs.md: "Capacity
  blocks are modeled as on-demand capacity reservations in EC2. To select capacity blocks, specify them in your
  ``capacityReservationSelectorTerms`` in the same way you would for a default ODCR"; the NodePool must allow
  ``karpenter.sh/capacity-type: reserved``; reserved nodes carry ``karpenter.k8s.aws/capacity-reservation-type``
  (``default`` or ``capacity-block``) and ``karpenter.k8s.aws/capacity-reservation-id``, usable as NodePool
  requirements; "Karpenter does not support open matching for ODCRs": every reservation to use must be selected.
  Karpenter drains capacity-block nodes 10 minutes before EC2 starts terminating them (odcrs.md "Capacity Blocks").
  The ``ReservedCapacity`` feature gate is beta and on by default in the chart (values.yaml
  ``settings.featureGates.reservedCapacity: true``).

Multi-EFA layouts (P5/P5e/P5en: 32/32/16 EFA interfaces, one per network card; P6-B200/B300): can Karpenter launch
them? Yes, with limits, read in the v1.14.1 code:

- Without ``spec.networkInterfaces``, a NodeClaim whose pods request ``vpc.amazonaws.com/efa`` gets
  ``MaximumEfaInterfaces`` interfaces of type ``efa`` (ENA + EFA, one IP address each) on network cards ``0 ..
  N-1`` (pkg/providers/launchtemplate/launchtemplate.go ``generateNetworkInterfaces``; amifamily/resolver.go sets
  ``efaCount`` to the type's ``vpc.amazonaws.com/efa`` capacity, instancetype/types.go ``efas``:
  ``EfaInfo.MaximumEfaInterfaces``). That is all of P5/P5e/P5en/P6-B200's EFA, at one IP per card (32 IPs per P5
  node), but not the EC2 User Guide's layout (``interface`` + ``efa-only``, efa-acc-inst-types); on P6-B300 (and
  P6e-GB200) card 0 takes no EFA, so the launch asks for EFA where EC2 has none and misses the last card.
- ``spec.networkInterfaces`` (added in v1.11.0, "feat: support network interface configuration (#9027)";
  nodeclasses.md "spec.networkInterfaces"; CRD ``interfaceType`` enum ``interface`` | ``efa-only``) lays the
  interfaces out explicitly; the type's ``vpc.amazonaws.com/efa`` capacity becomes the number of ``efa-only``
  entries (instancetype/types.go ``efas``), and types whose cards cannot hold the layout are filtered out
  (instancetype/compatibility/compatibility.go). fmconstructs renders the layout of
  :func:`~fmconstructs.networking.interfaces.plan_network_interfaces` there (the managed node groups' layout), so a
  NodePool of p5/p5e/p5en/p6-b200/p6-b300 gets every EFA at one IP per node. The layout is per instance type: a
  multi-EFA type is the only type of its NodePool.
- Refused (:class:`~fmconstructs.errors.FmValidationError`; use a managed node group,
  ``GpuEksCluster.add_gpu_node_group``): UltraServer types (p6e-gb200: IMEX through the NVIDIA DRA driver, which the
  chart's Karpenter ignores by default, ``settings.ignoreDRARequests: true``, and UltraServer Capacity Blocks, which the
  v1.14 docs do not cover), a multi-EFA type mixed with other types in one NodePool, and a layout that would need
  ``efa`` (ENA + EFA) interfaces beyond the primary (not in the CRD's enum).

Runtime behaviour on real P5/P6 capacity was not exercised (UNCONFIRMED): the above is read from the code and CRDs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from .._validate import check_bool, check_count, check_enum, check_str, check_str_sequence
from .._validate_ids import CAPACITY_RESERVATION_ID, check_service_id
from .._validate_k8s import check_karpenter_labels
from .._validate_tags import check_karpenter_node_tags
from ..catalog import CATALOG, InstanceSpec, InterfaceType
from ..errors import FmTypeError, FmValidationError, is_token
from ._node_group_props import refuse_unknown_options
from .addons import EFA_PRESENT_LABEL, GPU_PRESENT_LABEL, GPU_TAINT_KEY
from .manifests import check_name

if TYPE_CHECKING:
    from ..capacity import Capacity

__all__ = [
    "CapacityReservationTerm",
    "ConsolidationPolicy",
    "KarpenterCapacityType",
    "NodePoolDisruption",
    "NodePoolOptions",
    "ReservationType",
    "check_karpenter_instance_types",
    "ec2_node_class_manifest",
    "node_pool_manifest",
]

#: API versions at Karpenter 1.14.1 (pkg/apis/crds: ``karpenter.sh_nodepools.yaml``, ``karpenter.k8s.aws_ec2nodeclasses
#: .yaml``, served and stored version ``v1``).
NODE_POOL_API_VERSION = "karpenter.sh/v1"
EC2_NODE_CLASS_API_VERSION = "karpenter.k8s.aws/v1"
#: Well-known labels (concepts/scheduling.md, tasks/odcrs.md at v1.14).
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
CAPACITY_RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: AL2023's root device (pkg/providers/amifamily/al2023.go ``EphemeralBlockDevice``).
AL2023_ROOT_DEVICE = "/dev/xvda"
#: ``family@version`` with family ``al2023`` (the only family fmconstructs renders: the NVIDIA variant of the
#: EKS-optimized AL2023 AMI); version ``latest`` or an amazon-eks-ami release tag (``v20240807``).
_AMI_VERSION = re.compile(r"latest|v[0-9]{8}")
#: CRD patterns (karpenter.k8s.aws_ec2nodeclasses.yaml at v1.14.1).
_OWNER_ID = re.compile(r"[0-9]{12}")
_SUBNET_ID = re.compile(r"subnet-[0-9a-z]+")
_SECURITY_GROUP_ID = re.compile(r"sg-[0-9a-z]+")
#: The CRD's ``disruption.consolidateAfter`` / ``expireAfter`` pattern.
_DURATION = re.compile(r"([0-9]+(s|m|h))+|Never")
#: ``disruption.budgets[].nodes``: a percentage or a count.
_BUDGET_NODES = re.compile(r"((100|[0-9]{1,2})%|[0-9]+)")
#: EBS gp3 root volume sizes the CRD accepts as ``<n>Gi`` (1-59000 Gi; the library uses whole GiB).
_MAX_VOLUME_GIB = 59000
_MAX_SELECTOR_TAGS = 20


class KarpenterCapacityType(str, Enum):
    """``karpenter.sh/capacity-type`` values (concepts/nodepools.md; ``reserved``: tasks/odcrs.md)."""

    RESERVED = "reserved"
    ON_DEMAND = "on-demand"
    SPOT = "spot"


class ReservationType(str, Enum):
    """``karpenter.k8s.aws/capacity-reservation-type`` (tasks/odcrs.md): an ODCR or a Capacity Block."""

    DEFAULT = "default"
    CAPACITY_BLOCK = "capacity-block"


class ConsolidationPolicy(str, Enum):
    """``disruption.consolidationPolicy`` (concepts/disruption.md)."""

    WHEN_EMPTY = "WhenEmpty"
    WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"


def _check_selector_tags(parameter: str, tags: object) -> dict[str, str]:
    """Selector tags: at most 20, non-empty keys and values (CRD ``maxProperties: 20``, "empty tag keys or values
    aren't supported")."""
    if not isinstance(tags, Mapping):
        raise FmTypeError(parameter, tags, f"a mapping of tag key to value (got a {type(tags).__name__})")
    if not tags or len(tags) > _MAX_SELECTOR_TAGS:
        raise FmValidationError(parameter, dict(tags), f"1 to {_MAX_SELECTOR_TAGS} tags")
    for key, value in tags.items():
        check_str(f"{parameter} key", key, min_length=1, allowed="a non-empty tag key")
        check_str(f"{parameter}[{key!r}]", value, min_length=1, allowed="a non-empty tag value")
    return dict(tags)


def _check_id(parameter: str, value: object, pattern: re.Pattern[str], example: str) -> Any:
    return check_str(parameter, value, pattern=pattern, allowed=f"an id such as {example!r}")


@dataclass(frozen=True)
class CapacityReservationTerm:
    """One ``capacityReservationSelectorTerms`` entry: an ODCR or Capacity Block by ``id``, or by ``tags`` and/or
    ``instance_match_criteria`` (``open`` | ``targeted``), optionally owned by ``owner_id`` (CRD v1.14.1: an ``id``
    excludes the other fields; a term names at least one of id, tags, instanceMatchCriteria)."""

    id: str | None = None
    tags: Mapping[str, str] | None = None
    owner_id: str | None = None
    instance_match_criteria: str | None = None

    def __post_init__(self) -> None:
        if self.id is not None:
            check_service_id("id", self.id, CAPACITY_RESERVATION_ID)
            others = {
                "tags": self.tags,
                "owner_id": self.owner_id,
                "instance_match_criteria": self.instance_match_criteria,
            }
            for name, value in others.items():
                if value is not None:
                    raise FmValidationError(name, value, "None with id (an id term selects that reservation only)")
            return
        if self.tags is None and self.instance_match_criteria is None:
            raise FmValidationError("id", None, "a reservation id, or tags and/or instance_match_criteria")
        if self.tags is not None:
            _check_selector_tags("tags", self.tags)
        if self.owner_id is not None:
            _check_id("owner_id", self.owner_id, _OWNER_ID, "123456789012")
        if self.instance_match_criteria is not None and self.instance_match_criteria not in ("open", "targeted"):
            raise FmValidationError("instance_match_criteria", self.instance_match_criteria, "'open' or 'targeted'")

    @classmethod
    def for_capacity(cls, capacity: Capacity) -> CapacityReservationTerm:
        """The term for an fmconstructs reservation with a ``reservation_id`` (``CapacityBlock``,
        ``CapacityReservation``). Karpenter selects by id or tags, not by resource group (refused)."""
        from ..capacity import Capacity

        if not isinstance(capacity, Capacity):
            raise FmTypeError("capacity", capacity, f"a Capacity (got a {type(capacity).__name__})")
        reservation_id = getattr(capacity, "reservation_id", None)
        if reservation_id is None:
            raise FmValidationError(
                "capacity",
                capacity,
                "a reservation with a reservation_id (Karpenter's capacityReservationSelectorTerms select by id or "
                "tags, not by resource group; On-Demand needs no term)",
            )
        return cls(id=reservation_id)

    def to_manifest(self, *, owner_key: str = "ownerID") -> dict[str, Any]:
        """The ``capacityReservationSelectorTerms`` entry; ``owner_key`` names the owner account: Karpenter's
        ``ownerID`` (default), or ``owner`` for EKS Auto Mode's NodeClass (automode/auto-odcr.adoc)."""
        if self.id is not None:
            return {"id": self.id}
        out: dict[str, Any] = {}
        if self.tags is not None:
            out["tags"] = dict(self.tags)
        if self.owner_id is not None:
            out[owner_key] = self.owner_id
        if self.instance_match_criteria is not None:
            out["instanceMatchCriteria"] = self.instance_match_criteria
        return out


@dataclass(frozen=True)
class NodePoolDisruption:
    """``spec.disruption`` and ``expireAfter`` of a GPU NodePool (concepts/disruption.md at v1.14).

    :param consolidation_policy: default ``WhenEmpty``: GPU pods are never moved to pack nodes tighter (a training
        or serving pod restarts on a move); ``WhenEmptyOrUnderutilized`` is Karpenter's default.
    :param consolidate_after: how long a node stays empty before it goes; default ``10m``.
    :param expire_after: node lifetime; default ``720h`` (Karpenter's default, 30 days); ``Never`` keeps nodes.
    :param budget_nodes: at most this many nodes disrupted at once (``budgets[].nodes``, a count or a percentage);
        default ``10%`` (Karpenter's default budget).
    """

    consolidation_policy: ConsolidationPolicy = ConsolidationPolicy.WHEN_EMPTY
    consolidate_after: str = "10m"
    expire_after: str = "720h"
    budget_nodes: str = "10%"

    def __post_init__(self) -> None:
        check_enum("consolidation_policy", self.consolidation_policy, ConsolidationPolicy)
        for name in ("consolidate_after", "expire_after"):
            check_str(
                name, getattr(self, name), pattern=_DURATION, allowed="a duration such as '10m', '720h' or 'Never'"
            )
        check_str("budget_nodes", self.budget_nodes, pattern=_BUDGET_NODES, allowed="a node count or '<0-100>%'")


def _multi_efa(spec: InstanceSpec) -> bool:
    return spec.maximum_efa_interfaces > 1


def check_pool_gpu_type(
    parameter: str, value: object, *, deploy_time: str, unknown: str, ultraserver: str
) -> InstanceSpec:
    """A GPU pool's instance type: a catalog type with GPUs, known at synthesis (a NodePool requirement), not sold as
    UltraServers. The messages for a deploy-time value, a type the catalog does not list and an UltraServer type are
    the pool kind's (Karpenter, Auto Mode)."""
    text = check_str(parameter, value, allowed="a GPU instance type of the fmconstructs catalog")
    if is_token(text):
        raise FmValidationError(parameter, value, deploy_time)
    if text not in CATALOG:
        raise FmValidationError(parameter, value, unknown)
    spec = CATALOG.get(text)
    if spec.gpu.count < 1:
        raise FmValidationError(parameter, value, "a GPU instance type (the catalog lists no GPU for it)")
    if spec.ultraserver_types:
        raise FmValidationError(parameter, value, ultraserver)
    return spec


def _check_gpu_type(parameter: str, value: object) -> InstanceSpec:
    return check_pool_gpu_type(
        parameter,
        value,
        deploy_time="an instance type known at synthesis (a NodePool requirement)",
        unknown="a GPU instance type of the fmconstructs catalog (fmconstructs.BUILTIN_INSTANCE_TYPES; add others, "
        "e.g. g6e.12xlarge, with fmconstructs.register_instance_type)",
        ultraserver="a type Karpenter can launch: UltraServer types need IMEX through the NVIDIA DRA driver "
        "(Karpenter's chart ignores DRA requests by default) and UltraServer Capacity Blocks (not in Karpenter's "
        "v1.14 docs); use a managed node group (GpuEksCluster.add_gpu_node_group)",
    )


def check_karpenter_instance_types(parameter: str, value: object) -> tuple[InstanceSpec, ...]:
    """GPU catalog types for one NodePool (a bare ``str`` is refused), without repeats. A type with EFA on several
    network cards must be the only type (its interface layout goes into the pool's EC2NodeClass); see the module
    docstring for what Karpenter can launch."""
    names = check_str_sequence(parameter, value, min_items=1)
    specs = [_check_gpu_type(f"{parameter}[{i}]", name) for i, name in enumerate(names)]
    unique = tuple({spec.instance_type: spec for spec in specs}.values())
    multi = [spec.instance_type for spec in unique if _multi_efa(spec)]
    if multi and len(unique) > 1:
        raise FmValidationError(
            parameter,
            list(names),
            f"one instance type when it has EFA on several network cards ({', '.join(multi)}): the EC2NodeClass "
            "carries that type's interface layout (Karpenter filters out types it does not fit); add one NodePool "
            "per type, or use a managed node group (GpuEksCluster.add_gpu_node_group)",
        )
    return unique


def network_interfaces(spec: InstanceSpec) -> list[dict[str, Any]] | None:
    """``spec.networkInterfaces`` for a multi-EFA type: the EKS managed node group layout of
    :func:`~fmconstructs.networking.interfaces.plan_network_interfaces` (ENA ``interface`` primary, ``efa-only`` on
    every EFA card); None for other types (Karpenter's default interfaces)."""
    from ..networking.interfaces import InterfacePolicy, plan_network_interfaces

    if not _multi_efa(spec):
        return None
    layout = plan_network_interfaces(spec, policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP)
    names = {InterfaceType.ENA: "interface", InterfaceType.EFA_ONLY: "efa-only"}
    out = []
    for planned in layout.interfaces:
        if planned.interface_type not in names:
            raise FmValidationError(
                "instance_types",
                spec.instance_type,
                f"a type whose EFA layout Karpenter can express (card {planned.network_card_index} needs an "
                f"'{planned.interface_type.value}' interface; Karpenter 1.14 takes 'interface' or 'efa-only'); use a "
                "managed node group (GpuEksCluster.add_gpu_node_group)",
            )
        out.append(
            {
                "networkCardIndex": planned.network_card_index,
                "deviceIndex": planned.device_index,
                "interfaceType": names[planned.interface_type],
            }
        )
    return out


def _id_terms(parameter: str, ids: Sequence[str], pattern: re.Pattern[str], example: str) -> list[dict[str, Any]]:
    checked = check_str_sequence(parameter, ids, item=lambda p, v: _check_id(p, v, pattern, example))
    return [{"id": value} for value in checked]


def _selector_terms(
    what: str, ids: Sequence[str], tags: Mapping[str, str] | None, pattern: re.Pattern[str], example: str
) -> list[dict[str, Any]]:
    terms = _id_terms(f"{what}_ids", ids, pattern, example)
    if tags is not None:
        terms.append({"tags": _check_selector_tags(f"{what}_tags", tags)})
    if not terms:
        raise FmValidationError(f"{what}_ids", list(ids), f"at least one {what} id, or {what}_tags")
    return terms


def ec2_node_class_manifest(
    *,
    name: str,
    role: str | None = None,
    instance_profile: str | None = None,
    subnet_ids: Sequence[str] = (),
    subnet_tags: Mapping[str, str] | None = None,
    security_group_ids: Sequence[str] = (),
    security_group_tags: Mapping[str, str] | None = None,
    ami_version: str = "latest",
    root_volume_size_gib: int = 200,
    kms_key_id: str | None = None,
    imds_hop_limit: int = 1,
    capacity_reservations: Sequence[CapacityReservationTerm] = (),
    efa_instance_type: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An ``EC2NodeClass`` for GPU nodes: the EKS-optimized AL2023 AMI (its NVIDIA variant on GPU types), IMDSv2 only,
    an encrypted gp3 root volume, subnets and security groups by id and/or tags, the reservations to use, and, for
    ``efa_instance_type`` with EFA on several cards, that type's EFA interface layout.

    :param role: the node role's name (Karpenter makes the instance profile), or
    :param instance_profile: an instance profile's name (Karpenter does not touch IAM; the way for VPCs without an
        IAM endpoint, Getting Started "Private Clusters"). Exactly one of the two (CRD rule).
    :param ami_version: ``latest`` (default: new AMIs drift nodes, within the NodePool's disruption budget) or an
        amazon-eks-ami release tag (``v20240807``) to pin.
    :param imds_hop_limit: IMDSv2 hop limit, 1 (default) to 64 (containers need 2).
    """
    check_name("name", name)
    if (role is None) == (instance_profile is None):
        raise FmValidationError("role", role, "given, or instance_profile given instead (exactly one of the two)")
    identity = (
        {"role": check_str("role", role, min_length=1, allowed="the node role's name")}
        if role is not None
        else {"instanceProfile": check_str("instance_profile", instance_profile, min_length=1, allowed="a name")}
    )
    check_str("ami_version", ami_version, pattern=_AMI_VERSION, allowed="'latest' or an AMI release tag 'vYYYYMMDD'")
    size = check_count("root_volume_size_gib", root_volume_size_gib, minimum=1, maximum=_MAX_VOLUME_GIB)
    # karpenter.k8s.aws EC2NodeClass v1 CRD metadataOptions.httpPutResponseHopLimit: minimum 1, maximum 64
    # (tests/data/karpenter_crds), as EC2's HttpPutResponseHopLimit.
    check_count("imds_hop_limit", imds_hop_limit, minimum=1, maximum=64)
    terms = [_check_term(f"capacity_reservations[{i}]", t).to_manifest() for i, t in enumerate(capacity_reservations)]
    ebs: dict[str, Any] = {
        "volumeSize": f"{size}Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if kms_key_id is not None:
        ebs["kmsKeyID"] = check_str("kms_key_id", kms_key_id, min_length=1, allowed="a KMS key id or ARN")
    spec: dict[str, Any] = {
        **identity,
        "amiSelectorTerms": [{"alias": f"al2023@{ami_version}"}],
        "subnetSelectorTerms": _selector_terms("subnet", subnet_ids, subnet_tags, _SUBNET_ID, "subnet-0123abcd"),
        "securityGroupSelectorTerms": _selector_terms(
            "security_group", security_group_ids, security_group_tags, _SECURITY_GROUP_ID, "sg-0123abcd"
        ),
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": imds_hop_limit,
            "httpTokens": "required",
        },
        "blockDeviceMappings": [{"deviceName": AL2023_ROOT_DEVICE, "rootVolume": True, "ebs": ebs}],
    }
    if terms:
        spec["capacityReservationSelectorTerms"] = terms
    if efa_instance_type is not None:
        (efa_spec,) = check_karpenter_instance_types("efa_instance_type", [efa_instance_type])
        interfaces = network_interfaces(efa_spec)
        if interfaces is not None:
            spec["networkInterfaces"] = interfaces
    if tags is not None:
        spec["tags"] = check_karpenter_node_tags("tags", tags)
    return {"apiVersion": EC2_NODE_CLASS_API_VERSION, "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}


def _check_term(parameter: str, term: object) -> CapacityReservationTerm:
    if not isinstance(term, CapacityReservationTerm):
        raise FmTypeError(parameter, term, f"a CapacityReservationTerm (got a {type(term).__name__})")
    return term


def _capacity_requirements(
    capacity_types: Sequence[KarpenterCapacityType], reservation_type: ReservationType | None, reserved_terms: bool
) -> list[dict[str, Any]]:
    types = [check_enum(f"capacity_types[{i}]", t, KarpenterCapacityType) for i, t in enumerate(capacity_types)]
    if not types:
        raise FmValidationError("capacity_types", list(capacity_types), "at least one capacity type")
    from .rules import (  # here: rules imports this module
        reservation_type_needs_reserved_only,
        reserved_capacity_needs_reservations,
    )

    reserved_capacity_needs_reservations(capacity_types=types, has_reservations=reserved_terms)
    out = [{"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [t.value for t in dict.fromkeys(types)]}]
    if reservation_type is not None:
        check_enum("reservation_type", reservation_type, ReservationType)
        reservation_type_needs_reserved_only(reservation_type=reservation_type, capacity_types=types)
        out.append({"key": CAPACITY_RESERVATION_TYPE_LABEL, "operator": "In", "values": [reservation_type.value]})
    return out


def _limits(max_gpus: int | None, max_nodes: int | None) -> dict[str, Any]:
    from .rules import a_node_pool_has_a_limit  # here: rules imports this module

    a_node_pool_has_a_limit(max_gpus=max_gpus, max_nodes=max_nodes)
    limits: dict[str, Any] = {}
    if max_gpus is not None:
        gpus = check_count("max_gpus", max_gpus, minimum=1)
        limits[GPU_TAINT_KEY] = gpus if is_token(gpus) else str(gpus)
    if max_nodes is not None:
        nodes = check_count("max_nodes", max_nodes, minimum=1)
        limits["nodes"] = nodes if is_token(nodes) else str(nodes)
    return limits


class NodePoolOptions(TypedDict, total=False):
    """The ``NodePool`` options of :func:`node_pool_manifest` and
    :func:`~fmconstructs.eks.auto_mode.auto_mode_node_pool_manifest` (besides the names and instance types).

    :var max_gpus: ``limits["nvidia.com/gpu"]``; with ``max_nodes``, at least one of the two, each >= 1.
    :var max_nodes: ``limits.nodes``.
    :var capacity_types: ``karpenter.sh/capacity-type`` values; ``RESERVED`` needs ``reserved=True`` (the node
        class selects reservations). Default: ``[ON_DEMAND]``.
    :var reservation_type: only Capacity Blocks or only ODCRs (with ``capacity_types=[RESERVED]``).
    :var reserved: the node class selects reservations. Default: False.
    :var labels: extra node labels; the pool always sets ``nvidia.com/gpu.present=true`` (and
        ``vpc.amazonaws.com/efa.present=true`` for EFA types), the labels the GPU add-ons select nodes by.
    :var gpu_taint: taint nodes ``nvidia.com/gpu=true:NoSchedule`` (default True, as GPU node groups).
    :var disruption: consolidation, expiry and budget (:class:`NodePoolDisruption`). Default: its defaults.
    """

    max_gpus: int | None
    max_nodes: int | None
    capacity_types: Sequence[KarpenterCapacityType]
    reservation_type: ReservationType | None
    reserved: bool
    labels: Mapping[str, str] | None
    gpu_taint: bool
    disruption: NodePoolDisruption | None


def node_pool_manifest(
    *,
    name: str,
    node_class_name: str,
    instance_types: Sequence[str],
    weight: int | None = None,
    **options: Unpack[NodePoolOptions],
) -> dict[str, Any]:
    """A ``NodePool`` of GPU ``instance_types`` (catalog types; see :func:`check_karpenter_instance_types`), with the
    :class:`NodePoolOptions`; ``weight`` (1-100) orders it among pools."""
    refuse_unknown_options("node_pool_manifest", options, NodePoolOptions.__annotations__)
    max_gpus, max_nodes = options.get("max_gpus"), options.get("max_nodes")
    capacity_types = options.get("capacity_types", (KarpenterCapacityType.ON_DEMAND,))
    reservation_type, reserved = options.get("reservation_type"), options.get("reserved", False)
    labels, gpu_taint, disruption = options.get("labels"), options.get("gpu_taint", True), options.get("disruption")
    check_name("name", name)
    check_name("node_class_name", node_class_name)
    specs = check_karpenter_instance_types("instance_types", instance_types)
    check_bool("reserved", reserved)
    check_bool("gpu_taint", gpu_taint)
    limits = _limits(max_gpus, max_nodes)
    requirements = [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [s.instance_type for s in specs]},
        *_capacity_requirements(capacity_types, reservation_type, reserved),
    ]
    node_labels = {GPU_PRESENT_LABEL: "true"}
    if any(s.maximum_efa_interfaces > 0 for s in specs):
        node_labels[EFA_PRESENT_LABEL] = "true"
    if labels is not None:
        node_labels.update(check_karpenter_labels("labels", labels))
    disruption = NodePoolDisruption() if disruption is None else disruption
    if not isinstance(disruption, NodePoolDisruption):
        raise FmTypeError("disruption", disruption, f"a NodePoolDisruption (got a {type(disruption).__name__})")
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class_name},
        "requirements": requirements,
        "expireAfter": disruption.expire_after,
    }
    if gpu_taint:
        template_spec["taints"] = [{"key": GPU_TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": node_labels}, "spec": template_spec},
        "limits": limits,
        "disruption": {
            "consolidationPolicy": disruption.consolidation_policy.value,
            "consolidateAfter": disruption.consolidate_after,
            "budgets": [{"nodes": disruption.budget_nodes}],
        },
    }
    if weight is not None:
        spec["weight"] = check_count("weight", weight, minimum=1, maximum=100)
    return {"apiVersion": NODE_POOL_API_VERSION, "kind": "NodePool", "metadata": {"name": name}, "spec": spec}
