"""Lustre on a group of nodes, planned once for every backend: :func:`plan_lustre_client` (pure: plain values in, a
frozen :class:`LustreClientPlan` out) and :func:`apply_lustre_client_plan` (the plan's security group rules,
registration against the file system's 1,024 EFA connections, and warnings, on a scope).

The sequence every backend follows (PCS ``add_mount``, EKS ``GpuNodeGroup.add_lustre_client``, ParallelCluster
queues, HyperPod instance groups):

1. the EFA interfaces each node uses for LNet (:func:`~fmconstructs.storage.client.lustre_efa_interfaces`: the FSx
   for Lustre User Guide "Configuring EFA clients" per-type count, capped by the node's EFA interfaces; 0: TCP;
   None: decided on the node);
2. the node-side commands: the whole mount (:attr:`LustreClientSteps.MOUNT`: client, LNet, fstab, mount; PCS and EKS
   node set-up) or LNet only (:attr:`LustreClientSteps.LNET_ONLY`: ParallelCluster's ``OnNodeStart`` and HyperPod's
   ``OnCreate``, where the service mounts);
3. the security groups: Lustre's ports to the nodes' group, EFA traffic both ways between the nodes' EFA group and
   the file system's;
4. the registration of ``max_nodes`` nodes x EFA interfaces against the file system's 1,024 EFA connections
   (:meth:`~fmconstructs.storage.LustreFileSystemBase.register_efa_clients`, which also checks the EFA security group
   and the zone);
5. the warning when the nodes mount an EFA-enabled file system over TCP because their EFA layout is unknown.

What stays in each backend is data: where the commands go (a ``NodeBootstrap`` step, a ParallelCluster custom
action, a HyperPod lifecycle script), which security groups, how many nodes, and the words of its warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from .._rules import Advice, warn
from .._validate import check_bool
from ..catalog import InstanceSpec
from ..errors import FmValidationError
from .client import MOUNT_NAME_MAX_BYTES, lustre_efa_interfaces, lustre_lnet_commands, lustre_mount_commands

if TYPE_CHECKING:
    from aws_cdk import aws_ec2 as ec2
    from constructs import IConstruct

    from ..bootstrap import NodeBootstrap
    from ..networking.security_group import EfaSecurityGroup
    from .lustre import LustreFileSystemBase

__all__ = ["LustreClientPlan", "LustreClientSteps", "apply_lustre_client_plan", "plan_lustre_client"]


class LustreClientSteps(Enum):
    """What the node-side commands of a Lustre client do."""

    #: Install the client, configure LNet (over EFA when the plan's count is not 0), add the fstab entry and mount.
    MOUNT = "mount"
    #: Install the client and configure LNet over EFA only; the service mounts afterwards (ParallelCluster
    #: ``SharedStorage``, HyperPod). Nodes whose EFA interfaces for LNet are unknown or 0 get no commands (TCP).
    LNET_ONLY = "lnet-only"


@dataclass(frozen=True)
class LustreClientPlan:
    """What one group of nodes does to use one FSx for Lustre file system (see :func:`plan_lustre_client`)."""

    efa_interfaces: int | None
    """EFA interfaces per node for LNet: 0 over TCP, None decided on the node (the count the commands pass)."""
    commands: tuple[str, ...]
    """The node-side shell commands (empty: nothing to run on the node, it mounts over TCP)."""
    bound_mount_name: bool
    """Whether the commands hold the file system's mount name, whose length the bootstrap must bound."""
    max_nodes: int | float
    """The nodes registered against the file system's EFA connections (may be a deploy-time value)."""
    advice: tuple[Advice, ...] = ()
    """Warnings to attach (:func:`fmconstructs._rules.warn`)."""

    @property
    def registers_efa_clients(self) -> bool:
        """Whether the nodes count against the file system's 1,024 EFA connections (a known, non-zero count)."""
        return bool(self.efa_interfaces)


def plan_lustre_client(
    *,
    efa_enabled: bool,
    dns_name: str | None = None,
    mount_name: str | None = None,
    instance_spec: InstanceSpec | None,
    max_nodes: int | float,
    node_efa_interfaces: int | None = None,
    efa_interfaces: int | None = None,
    mount_point: str = "/fsx",
    steps: LustreClientSteps = LustreClientSteps.MOUNT,
    unknown_layout: Advice | None = None,
    gpudirect_storage: bool | None = None,
) -> LustreClientPlan:
    """Plan Lustre on ``max_nodes`` nodes of ``instance_spec`` (None: a type the catalog lacks) with
    ``node_efa_interfaces`` EFA interfaces (None: unknown, the type's), for a file system that is ``efa_enabled``,
    reachable at ``dns_name``/``mount_name`` (needed by :attr:`LustreClientSteps.MOUNT`), mounted at ``mount_point``.

    ``efa_interfaces`` (None: the type's FSx default; 0: TCP) is the requested count for LNet; it is refused above
    the type's or the node's EFA interfaces (:func:`~fmconstructs.storage.client.lustre_efa_interfaces`).
    :attr:`LustreClientSteps.MOUNT` loads the GPUDirect Storage prerequisites only where the nodes use a known,
    non-zero EFA count (``gpudirect_storage`` default None; False: never, for nodes without NVIDIA GPUs): the FSx for
    Lustre User Guide "Working with EFA-enabled file systems" builds GDS support on EFA, so nodes whose EFA use is
    decided on the node (no catalog entry) do not load it. With :attr:`LustreClientSteps.LNET_ONLY` and an
    EFA-enabled file system whose nodes' EFA layout is unknown (no catalog entry), the nodes stay on TCP and the plan
    carries ``unknown_layout`` (the backend's own warning). Pure: no construct, no scope.
    """
    if gpudirect_storage is not None:
        check_bool("gpudirect_storage", gpudirect_storage)
    count = lustre_efa_interfaces(
        efa_enabled=efa_enabled,
        instance_spec=instance_spec,
        efa_interfaces_for_lustre=efa_interfaces,
        node_efa_interfaces=node_efa_interfaces,
    )
    if steps is LustreClientSteps.MOUNT:
        if dns_name is None or mount_name is None:
            raise FmValidationError(
                "dns_name" if dns_name is None else "mount_name",
                None,
                "the file system's value when the nodes mount it (LustreClientSteps.MOUNT)",
            )
        commands = lustre_mount_commands(
            dns_name=dns_name,
            mount_name=mount_name,
            mount_point=mount_point,
            efa_enabled=efa_enabled,
            # GPUDirect Storage only where there is EFA for Lustre (a known, non-zero count); off otherwise.
            gpudirect_storage=None if count and gpudirect_storage is not False else False,
            instance_spec=instance_spec,
            efa_interfaces_for_lustre=efa_interfaces,
            node_efa_interfaces=node_efa_interfaces,
        )
        return LustreClientPlan(count, tuple(commands), bound_mount_name=True, max_nodes=max_nodes)
    if efa_enabled and count is None:
        advice = () if unknown_layout is None else (unknown_layout,)
        return LustreClientPlan(0, (), bound_mount_name=False, max_nodes=max_nodes, advice=advice)
    if not count:
        return LustreClientPlan(0, (), bound_mount_name=False, max_nodes=max_nodes)
    commands = lustre_lnet_commands(
        instance_spec=instance_spec, efa_interfaces_for_lustre=efa_interfaces, node_efa_interfaces=node_efa_interfaces
    )
    return LustreClientPlan(count, tuple(commands), bound_mount_name=False, max_nodes=max_nodes)


def apply_lustre_client_plan(
    plan: LustreClientPlan,
    *,
    file_system: LustreFileSystemBase,
    consumer: IConstruct,
    bootstrap: NodeBootstrap | None = None,
    step: str = "",
    lustre_clients: ec2.IConnectable | EfaSecurityGroup | None = None,
    efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None = None,
    open_efa_rules: bool = False,
    subnets: Sequence[ec2.ISubnet] = (),
    warnings_on: IConstruct | None = None,
) -> None:
    """Carry out ``plan`` for ``consumer`` (the node group; its warnings and its entry in the file system's EFA
    client registry), in this order:

    - ``lustre_clients`` (default None: none): open the file system's Lustre ports to that group;
    - ``bootstrap`` (default None: the caller places the commands itself): the plan's commands as its step ``step``
      (with the mount name bounded to the bootstrap's limit when the commands hold it);
    - ``open_efa_rules``: all traffic both ways between ``efa_security_group`` and the file system's EFA group, when
      the file system's EFA group is known (:meth:`~fmconstructs.storage.LustreFileSystemBase.allow_efa_clients_from`);
    - with a known, non-zero EFA count: the registration of ``plan.max_nodes`` nodes against the 1,024 EFA
      connections, which checks ``efa_security_group`` and ``subnets`` against the file system's;
    - the plan's warnings on ``warnings_on`` (default: ``consumer``).
    """
    if lustre_clients is not None:
        file_system.allow_clients_from(lustre_clients)
    if bootstrap is not None and plan.commands:
        if plan.bound_mount_name:
            bootstrap.bound_value(file_system.mount_name, MOUNT_NAME_MAX_BYTES)
        bootstrap.add_step(step, list(plan.commands))
    if plan.registers_efa_clients:
        if open_efa_rules and efa_security_group is not None and file_system.efa_security_group is not None:
            file_system.allow_efa_clients_from(efa_security_group)
        file_system.register_efa_clients(
            consumer,
            max_nodes=plan.max_nodes,
            efa_interfaces_per_node=plan.efa_interfaces or 0,
            efa_security_group=efa_security_group,
            subnets=subnets,
        )
    warn(consumer if warnings_on is None else warnings_on, plan.advice)
