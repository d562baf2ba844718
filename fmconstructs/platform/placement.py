"""Where :class:`~fmconstructs.platform.TrainingPlatform` puts its parts: the GPU nodes in ``subnet``, the services
(the FSx for Lustre file system, the PCS controller's network interface, PCS and ParallelCluster login nodes, the
ParallelCluster head node) in ``services_subnet`` (default: the nodes' subnet).

The option exists for GPU nodes in a Local Zone (or Wavelength Zone), whose parent Region's zones offer the services:

- **PCS**: the controller's subnet "cannot reside in AWS Outposts, AWS Wavelength, or an AWS Local Zone" (AWS PCS API
  Reference ``Networking.subnetIds`` / ``NetworkingRequest.subnetIds``; CloudFormation ``AWS::PCS::Cluster
  Networking``), and compute node groups take their own ``SubnetIds`` (PCS User Guide "Create compute node groups":
  "target VPC subnets" per node group). So a PCS platform with a known Local Zone node subnet needs ``services_subnet``.
- **ParallelCluster**: ``HeadNode/Networking/SubnetId`` and ``SlurmQueues/Networking/SubnetIds`` are separate settings
  (ParallelCluster User Guide "Network configurations" v3: one subnet for head and compute nodes, or two subnets;
  "HeadNode section"; the ``pcluster.lib`` example uses a HEAD_NODE_SUBNET and a COMPUTE_NODE_SUBNET).
- **EKS**: the library creates no controller node; ``services_subnet`` places the file system only (the control plane
  never runs in a Local Zone and is given the VPC's private subnets, EKS User Guide "local-zones").
- **HyperPod**: refused (one ``VpcConfig`` for every instance group of the cluster in this library).

**EFA does not cross zones** (EC2 User Guide "Elastic Fabric Adapter"; ParallelCluster User Guide "Elastic Fabric
Adapter": not supported over different availability zones; the storage module's ``register_efa_clients`` cites the
same). An EFA-enabled file system in another known zone than the GPU nodes is therefore refused here: pass
``PlatformStorage(efa_enabled=False)`` (the nodes mount it over TCP) or a ``services_subnet`` in the nodes' zone.
A TCP file system in another zone works but its traffic crosses zones, which is slower and billed as data transfer
between zones (stated for EFS in the EFS User Guide "Mounting One Zone file systems"; for FSx for Lustre
UNCONFIRMED from a page seen here): a warning says so.

Whether FSx for Lustre is offered in a given Local Zone is listed on "AWS Local Zones features" (Local Zones User
Guide "How Local Zones work" points there); that page was not readable here (UNCONFIRMED), so a file system in a
Local Zone node subnet is warned about, not refused. A known Local Zone ``services_subnet`` is refused (the option
exists to leave the Local Zone; PCS refuses it for the controller).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IConstruct

from .._rules import warn
from .._validate import check_optional_subnet, known, same_zone, subnet_zone
from ..capacity import Capacity, subnet_label
from ..errors import FmValidationError, is_token
from . import rules


def check_services_subnet(
    services_subnet: object,
    *,
    vpc: ec2.IVpc,
    subnet: ec2.ISubnet,
    backend: str,
    storage: bool,
    efa_storage: bool,
) -> ec2.ISubnet | None:
    """Validate ``services_subnet`` against the nodes' ``subnet`` (known values only); refuse a PCS platform whose
    node subnet is in a known Local Zone without one. Returns the checked subnet or None."""
    services: ec2.ISubnet | None = check_optional_subnet("services_subnet", services_subnet)
    if services is None:
        rules.pcs_in_a_local_zone_needs_a_services_subnet(backend=backend, node_zone=subnet_zone(subnet))
        return None
    _check_same_vpc(vpc, services)
    zone, label = subnet_zone(services), subnet_label(services)
    rules.services_subnet_is_in_the_parent_region(services=label, zone=zone)
    rules.efa_storage_keeps_services_in_the_node_zone(
        services=label, zone=zone, node_zone=subnet_zone(subnet), storage=storage, efa_storage=efa_storage
    )
    return services


def _check_same_vpc(vpc: ec2.IVpc, services: ec2.ISubnet) -> None:
    """Refuse a subnet known to be in another VPC: one of the VPC's own subnets passes; a subnet created in this app
    (``ec2.Subnet``) is compared by its ``VpcId`` when both ids are known (literal ids, or references in one stack)."""
    own = [*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets]
    if any(services is s for s in own) or _known_ids_equal(services.subnet_id, [s.subnet_id for s in own]):
        return
    child = services.node.default_child if isinstance(services, ec2.Subnet) else None
    if not isinstance(child, ec2.CfnSubnet):
        return  # an imported subnet carries no VPC id: not known
    same = _same_id(vpc, child.vpc_id, vpc.vpc_id)
    if same is False:
        raise FmValidationError(
            "services_subnet",
            subnet_label(services),
            "a subnet of the platform's vpc (its VpcId differs)",
        )


def _known_ids_equal(subnet_id: str, ids: list[str]) -> bool:
    return not is_token(subnet_id) and subnet_id in ids


def _same_id(scope: IConstruct, a: str, b: str) -> bool | None:
    """Whether two ids are equal: literals compared as text, tokens resolved in one stack (two ``Ref``s); else None."""
    if not is_token(a) and not is_token(b):
        return a == b
    if is_token(a) and is_token(b):
        stack = Stack.of(scope)
        left, right = stack.resolve(a), stack.resolve(b)
        if _is_ref(left) and _is_ref(right):
            return bool(left == right)
    return None


def _is_ref(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {"Ref"}


def warn_cross_zone(scope: Construct, *, subnet: ec2.ISubnet, services: ec2.ISubnet, parts: list[str]) -> None:
    """A warning when ``services`` is known to be in another zone than the nodes' ``subnet``: ``parts`` (what went
    there) talk to the GPU nodes across zones."""
    advice = rules.services_across_zones(
        services=subnet_label(services), zone=subnet_zone(services), node_zone=subnet_zone(subnet), parts=parts
    )
    warn(scope, advice)


def default_subnet(vpc: ec2.IVpc, capacity: Capacity) -> ec2.ISubnet:
    """The VPC's private subnets (with egress), then its isolated ones, as LustreFileSystem chooses: the first in the
    capacity's zone when that zone is known, else the first. Refused, naming what to pass, when there is none or when
    every candidate is known to be in another zone (EFA and the file system stay in the nodes' zone)."""
    pools = [
        (kind, tuple(subnets))
        for kind, subnets in (("private", vpc.private_subnets), ("isolated", vpc.isolated_subnets))
        if subnets
    ]
    if not pools:
        raise FmValidationError(
            "subnet",
            None,
            "given (subnet=ec2.Subnet.from_subnet_attributes(...)): the VPC has no private or isolated subnet to "
            "default to (public subnets are not used for GPU nodes and FSx)",
        )
    first = pools[0][1][0]
    zone = capacity.zone
    if not known(zone):
        return first
    unknown = False
    for _kind, subnets in pools:
        for subnet in subnets:
            match = same_zone(subnet_zone(subnet), zone)
            if match is True:
                return subnet
            unknown = unknown or match is None
    if unknown:
        return first  # zones unknown at synthesis: the first, as before
    kinds = " or ".join(kind for kind, _ in pools)
    raise FmValidationError(
        "subnet",
        None,
        f"given: the VPC has no {kinds} subnet in {zone}, the zone of the capacity ({type(capacity).__name__}); "
        f"pass subnet= a subnet in {zone}",
    )
