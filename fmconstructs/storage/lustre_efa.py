"""The EFA clients of a Lustre file system: registration against the 1,024 EFA connection budget, and the security
group and zone checks that let them reach an EFA-enabled file system."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IConstruct, IValidation

from .._validate import (
    check_construct,
    check_count,
    check_sequence,
    check_str,
    check_subnet,
    known,
    same_zone,
    subnet_zone,
)
from ..errors import FmValidationError, WarningId, add_warning
from ..networking.security_group import EfaSecurityGroup
from .lustre_network import (
    _describe_group,
    _describe_subnet,
    _optional_security_group,
    _same_security_group,
)
from .sizing import MAX_EFA_CONNECTIONS

if TYPE_CHECKING:
    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object


@dataclass(frozen=True)
class EfaClientGroup:
    """Clients that mount a file system over EFA: a node group, its maximum node count and the EFA interfaces each
    node uses for LNet (``max_nodes`` may be a token: unknown at synthesis)."""

    consumer_path: str
    max_nodes: int | float
    efa_interfaces_per_node: int | float

    def __post_init__(self) -> None:
        """The checks :meth:`LustreFileSystemBase.register_efa_clients` makes, for a group built directly."""
        check_str("consumer_path", self.consumer_path, allowed="a construct path (a non-empty str)", min_length=1)
        check_count("max_nodes", self.max_nodes)
        check_count("efa_interfaces_per_node", self.efa_interfaces_per_node)

    @property
    def max_efa_connections(self) -> int | None:
        """``max_nodes x efa_interfaces_per_node``; None when either is a deploy-time value (a token)."""
        if not (known(self.max_nodes) and known(self.efa_interfaces_per_node)):
            return None
        return int(self.max_nodes) * int(self.efa_interfaces_per_node)

    def describe(self) -> str:
        nodes = f"{int(self.max_nodes)}" if known(self.max_nodes) else "? (a deploy-time value)"
        interfaces = (
            f"{int(self.efa_interfaces_per_node)}" if known(self.efa_interfaces_per_node) else "? (a deploy-time value)"
        )
        connections = self.max_efa_connections
        total = "?" if connections is None else f"{connections:,}"
        return f"{self.consumer_path} ({nodes} nodes x {interfaces} EFA interfaces = {total})"


@jsii.implements(IValidation)
class _EfaConnectionBudget:
    """Synthesis fails when the registered EFA clients of one file system can open more than 1,024 connections."""

    def __init__(self, file_system: _LustreEfaClients) -> None:
        self._file_system = file_system

    def validate(self) -> list[str]:
        groups = self._file_system.efa_client_groups
        total = sum(g.max_efa_connections or 0 for g in groups)
        if total <= MAX_EFA_CONNECTIONS:
            return []
        ranked = sorted(groups, key=lambda g: -(g.max_efa_connections or 0))
        error = FmValidationError(
            f"EFA connections to {self._file_system.node.path}",
            total,
            f'at most {MAX_EFA_CONNECTIONS:,} (FSx for Lustre User Guide "Configuring EFA clients": one file system '
            "accepts at most 1,024 EFA connections across all its clients, one per EFA interface a client uses for "
            "LNet)",
        )
        return [
            f"{error} from: {'; '.join(g.describe() for g in ranked)}. Lower max_nodes or "
            "efa_interfaces_for_lustre of these node groups, or mount the file system over TCP on some of them "
            "(efa_interfaces_for_lustre=0; ParallelCluster: SharedLustre(efa_clients=False))"
        ]


class _LustreEfaClients(_Construct):
    """The EFA client side of :class:`~fmconstructs.storage.lustre.LustreFileSystemBase` (a mixin)."""

    efa_enabled: bool
    efa_security_group: ec2.ISecurityGroup | None
    _efa_clients: dict[str, EfaClientGroup]
    _efa_client_security_groups: list[ec2.ISecurityGroup]

    if TYPE_CHECKING:

        @property
        def zone(self) -> str | None:
            raise NotImplementedError

    # --- the 1,024 EFA connection budget ----------------------------------------------------------------------
    def register_efa_clients(
        self,
        consumer: IConstruct,
        *,
        max_nodes: int | float,
        efa_interfaces_per_node: int | float,
        efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None = None,
        subnets: Sequence[ec2.ISubnet] = (),
    ) -> None:
        """Record that up to ``max_nodes`` nodes of ``consumer`` (a node group) mount this file system over EFA, each
        with ``efa_interfaces_per_node`` EFA interfaces for LNet (the count :meth:`mount_commands` used, see
        :func:`~fmconstructs.storage.client.lustre_efa_interfaces`), and check that they can reach it over EFA.

        - The 1,024 EFA connection budget: one file system accepts at most 1,024 EFA connections across all its
          clients, one per client EFA interface (FSx for Lustre User Guide "Configuring EFA clients"). When every
          registered count is known, the registration that exceeds it raises
          :class:`~fmconstructs.errors.FmValidationError` naming each group and its share; with a deploy-time (token)
          count, synthesis fails when the known groups alone exceed it, and the unknown share is a warning
          (``fmconstructs:lustre-efa-connections-unknown``).
        - ``efa_security_group`` (default None: not checked): the EFA security group of the clients. When it is known
          to differ from the file system's EFA group and was not opened with :meth:`allow_efa_clients_from`, raises
          :class:`~fmconstructs.errors.FmValidationError` naming both groups.
        - ``subnets`` (default none: not checked): the clients' subnets. When the zone of the file system and of a
          client subnet are both known and differ, raises :class:`~fmconstructs.errors.FmValidationError` (EFA
          traffic does not cross Availability Zones). Subnets without zone information are skipped.

        TCP clients (a file system that is not EFA-enabled, or 0 interfaces) use no EFA connection and are neither
        recorded nor checked. Registering the same consumer again replaces its entry (a node has one LNet
        configuration, whatever it mounts).
        """
        check_construct("consumer", consumer, attribute="node", expected="a construct (the node group)")
        max_nodes = check_count("max_nodes", max_nodes)
        efa_interfaces_per_node = check_count("efa_interfaces_per_node", efa_interfaces_per_node)
        client_group = _optional_security_group("efa_security_group", efa_security_group)
        client_subnets = check_sequence("subnets", subnets, check_subnet)
        if not self.efa_enabled or (known(efa_interfaces_per_node) and efa_interfaces_per_node == 0):
            return
        self._check_efa_client_group(consumer, client_group)
        self._check_efa_client_zones(consumer, client_subnets)
        group = EfaClientGroup(consumer.node.path, max_nodes, efa_interfaces_per_node)
        self._check_efa_connection_budget({**self._efa_clients, group.consumer_path: group}.values())
        if not self._efa_clients:
            self.node.add_validation(_EfaConnectionBudget(self))
        self._efa_clients[group.consumer_path] = group
        if group.max_efa_connections is None:
            add_warning(
                self,
                WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN,
                f"{group.describe()} mounts this file system over EFA, but its node count or EFA interfaces per node "
                "is a deploy-time value: the 1,024 EFA connections one file system accepts (FSx for Lustre User Guide "
                '"Configuring EFA clients") cannot be checked at synthesis',
            )

    def _check_efa_connection_budget(self, groups: Any) -> None:
        """Refuse, at construction, client groups whose counts are all known and exceed 1,024 EFA connections (with a
        deploy-time count the synthesis-time validation checks the known ones, and a warning says what is unknown)."""
        counts = [group.max_efa_connections for group in groups]
        if None in counts or sum(counts) <= MAX_EFA_CONNECTIONS:
            return
        ranked = sorted(groups, key=lambda g: -(g.max_efa_connections or 0))
        raise FmValidationError(
            f"EFA connections to {self.node.path}",
            f"{sum(counts):,}",
            f'at most {MAX_EFA_CONNECTIONS:,} (FSx for Lustre User Guide "Configuring EFA clients": one file system '
            "accepts at most 1,024 EFA connections across all its clients, one per EFA interface a client uses for "
            f"LNet); these node groups can open more: {'; '.join(g.describe() for g in ranked)}. Lower max_nodes or "
            "efa_interfaces_for_lustre of these node groups, or mount the file system over TCP on some of them "
            "(efa_interfaces_for_lustre=0; ParallelCluster: SharedLustre(efa_clients=False))",
        )

    def allow_efa_clients_from(self, *groups: ec2.ISecurityGroup | EfaSecurityGroup) -> None:
        """Let clients in another EFA security group reach this EFA-enabled file system: all traffic both ways between
        the file system's EFA group and each of ``groups`` (rules on both groups).

        The FSx for Lustre User Guide ("Creating an FSx for Lustre file system fails", cannot-create-fs) asks an EFA
        file system's group to allow all traffic "to and from the security group itself and the security group of
        the clients if clients reside in a different security group". Sharing one group
        (``LustreFileSystem(efa_security_group=<the nodes' EFA group>)``) needs no rules; this is for separate groups.
        """
        if not self.efa_enabled or self.efa_security_group is None:
            raise FmValidationError(
                "allow_efa_clients_from",
                self.node.path,
                "called on an EFA-enabled file system whose EFA security group is known (created here, or imported "
                "with efa_security_group=...)",
            )
        own = self.efa_security_group
        for index, given in enumerate(groups):
            group = _optional_security_group(f"groups[{index}]", given)
            assert group is not None
            if _same_security_group(own, group):
                continue
            own.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic from Lustre EFA clients")
            own.add_egress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic to Lustre EFA clients")
            group.add_ingress_rule(own, ec2.Port.all_traffic(), "EFA: all traffic from the Lustre file system")
            group.add_egress_rule(own, ec2.Port.all_traffic(), "EFA: all traffic to the Lustre file system")
            self._efa_client_security_groups.append(group)

    def _check_efa_client_group(self, consumer: IConstruct, client_group: ec2.ISecurityGroup | None) -> None:
        own = self.efa_security_group
        if client_group is None or own is None:
            return
        for allowed in (own, *self._efa_client_security_groups):
            if _same_security_group(allowed, client_group) is not False:
                return  # the same group, or unknown at synthesis (imported by a deploy-time id)
        raise FmValidationError(
            f"efa_security_group of {consumer.node.path}",
            _describe_group(client_group),
            f"the EFA security group of the EFA-enabled file system {self.node.path} ({_describe_group(own)}): EFA "
            "traffic between a Lustre client and the file system needs a group that allows all traffic to and from "
            "both (FSx for Lustre User Guide, cannot-create-fs and limit-access-security-groups). Share one group: "
            "pass the nodes' EFA group as LustreFileSystem(efa_security_group=...) or the file system's "
            "(fs.efa_security_group) to the node group; or keep both and call "
            "fs.allow_efa_clients_from(<the nodes' EFA group>) before adding the node group",
        )

    def _check_efa_client_zones(self, consumer: IConstruct, subnets: Sequence[ec2.ISubnet]) -> None:
        own_zone = self.zone
        for index, subnet in enumerate(subnets):
            client_zone = subnet_zone(subnet)
            if same_zone(own_zone, client_zone) is False:
                raise FmValidationError(
                    f"subnets[{index}] of {consumer.node.path}",
                    f"{_describe_subnet(subnet)} in {client_zone}",
                    f"a subnet in {own_zone}, the zone of the EFA-enabled file system {self.node.path}: EFA traffic "
                    'does not cross Availability Zones (EC2 User Guide "Elastic Fabric Adapter"; ParallelCluster User '
                    'Guide "Elastic Fabric Adapter": EFA is not supported over different availability zones). Put '
                    "the node group in a subnet of that zone, create the file system in the nodes' zone "
                    "(LustreFileSystem(subnet=...)), or mount it over TCP on this group (efa_interfaces_for_lustre=0)",
                )

    @property
    def efa_client_groups(self) -> tuple[EfaClientGroup, ...]:
        """The node groups registered with :meth:`register_efa_clients`."""
        return tuple(self._efa_clients.values())

    @property
    def max_efa_connections(self) -> int | None:
        """The EFA connections the registered groups can open (None when a group's node count is a token)."""
        counts = [g.max_efa_connections for g in self._efa_clients.values()]
        return None if None in counts else sum(c for c in counts if c is not None)
