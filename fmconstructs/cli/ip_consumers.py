"""What takes private IPv4 addresses from which subnet, read from the templates (for ``fmc preflight``'s subnet check).

Sources of each count:

- node groups: max nodes x the launch template's IP-carrying interfaces (``interface`` and ``efa``; ``efa-only``
  takes none: EC2 User Guide "Elastic Fabric Adapter", EFA-only interfaces), the EFA layout the catalog gives per
  instance type; ParallelCluster and HyperPod nodes, whose interfaces the service creates, count 1 per node (a lower
  bound: how many IP-carrying interfaces those services give an EFA node is UNCONFIRMED). EKS pods take further
  addresses from the VPC CNI (warm pools per node): not counted.
- FSx for Lustre: at least 1 per file system. The FSx API Reference (``FileSystem.NetworkInterfaceIds``) says a Lustre
  file system "can have more than one" network interface; how many per storage capacity is UNCONFIRMED (no AWS page
  seen states it), so 1 is a lower bound and the detail says so.
- PCS controller: 1 per cluster in its subnet (AWS PCS API Reference ``Networking.subnetIds``: the subnet "where AWS
  PCS creates an Elastic Network Interface (ENI)"; "The subnet must have an available IP address").
- Interface (and Gateway Load Balancer) VPC endpoints: 1 per subnet they name (EC2 API Reference CreateVpcEndpoint
  ``SubnetId``: "The IDs of the subnets in which to create endpoint network interfaces").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .assembly import DEPLOY_TIME, Stack, describe

if TYPE_CHECKING:
    from .plan import NodeGroupPlan

#: Node group kinds whose nodes' interfaces the service creates (1 IP per node is counted, a lower bound).
_SERVICE_LAID_OUT = frozenset({"parallelcluster", "hyperpod"})


@dataclass
class IpConsumer:
    """One thing that takes private IPs from the subnets it names."""

    stack: str
    name: str
    kind: str
    """A node group kind (``pcs``, ``eks``, ``asg``, ``parallelcluster``, ``hyperpod``), ``fsx``,
    ``pcs-controller`` or ``vpc-endpoint``."""
    subnets: list[str]
    """The subnets as written in the template (``subnet-...`` literals, or what a deploy-time value refers to)."""
    ips: int | str
    """IPs taken: in every listed subnet when ``per_subnet``, else in total across them; :data:`DEPLOY_TIME` when
    a count is known only at deploy time."""
    per_subnet: bool
    basis: str
    """How the count was reached."""
    lower_bound: bool = False
    notes: list[str] = field(default_factory=list)


def _group_consumer(g: NodeGroupPlan) -> IpConsumer | None:
    if g.kind in ("launch-template", "plan") or not g.subnets:
        return None
    per_node = g.ip_interfaces_per_node
    nodes = g.max_nodes
    if isinstance(nodes, int) and isinstance(per_node, int):
        ips: int | str = nodes * per_node
        basis = f"{nodes} nodes x {per_node} IP-carrying interface{'s' if per_node != 1 else ''}"
    else:
        ips, basis = DEPLOY_TIME, "node or interface count known at deploy time"
    consumer = IpConsumer(g.stack, g.group, g.kind, list(g.subnets), ips, False, basis)
    if g.kind in _SERVICE_LAID_OUT:
        consumer.lower_bound = True
        consumer.notes.append("1 IP per node counted; the service lays out the interfaces (UNCONFIRMED count)")
    if g.kind == "eks":
        consumer.notes.append("pod IPs from the VPC CNI not counted")
    return consumer


def ip_consumers(stacks: list[Stack], groups: list[NodeGroupPlan]) -> list[IpConsumer]:
    """Every node group, FSx file system, PCS controller and interface endpoint of ``stacks`` that names subnets."""
    consumers = [c for g in groups if (c := _group_consumer(g)) is not None]
    for stack in stacks:
        for fs in stack.file_systems:
            subnets = [describe(s) for s in fs.subnet_ids]
            if subnets:
                consumers.append(
                    IpConsumer(
                        stack.name,
                        fs.name,
                        "fsx",
                        subnets,
                        1,
                        True,
                        "at least 1 network interface per FSx file system",
                        lower_bound=True,
                    )
                )
        for nc in stack.network_consumers:
            subnets = [describe(s) for s in nc.subnet_ids]
            if subnets:
                what = "1 controller network interface" if nc.kind == "pcs-controller" else "1 endpoint interface"
                consumers.append(IpConsumer(stack.name, nc.name, nc.kind, subnets, 1, True, f"{what} per subnet"))
    return consumers
