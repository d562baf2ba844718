"""Lustre over EFA on :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster` queues: an ``OnNodeStart`` step
that configures LNet over EFA before ParallelCluster mounts, the 1,024 EFA connection registration, and the warnings
for what mounts over TCP instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import (
    CfnResource,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    known,
    same_zone,
    subnet_zone,
)
from ..bootstrap import NodeBootstrap, ScriptAction
from ..catalog import InstanceSpec
from ..errors import WarningId, add_warning
from ..storage.client import lustre_efa_interfaces
from ..storage.lustre_clients import LustreClientSteps, apply_lustre_client_plan, plan_lustre_client
from .config import (
    SharedLustre,
    SlurmQueue,
)

if TYPE_CHECKING:
    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object

#: The step of the per-queue bootstrap that configures the Lustre client for EFA (OnNodeStart, before the mount).
LUSTRE_EFA_STEP = "lustre-lnet-efa"
# LUSTRE_EFA_METADATA_KEY (_plan_metadata) on the ``Custom::PclusterCluster`` resource records, when the cluster shares
# an EFA-enabled file system, each Slurm queue's EFA interfaces per node for LNet (0: the queue mounts over TCP); the
# head node and login nodes always mount over TCP.


class _ClusterLustreEfa(_Construct):
    """The Lustre-over-EFA side of :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster` (a mixin)."""

    queues: tuple[SlurmQueue, ...]
    shared_storage: tuple[SharedLustre, ...]
    node_security_group: ec2.ISecurityGroup | None
    resource: CfnResource
    _lustre_efa: dict[str, tuple[ScriptAction, str]]
    _lustre_efa_policy: iam.ManagedPolicy | None
    lustre_efa_bootstraps: dict[str, NodeBootstrap]
    lustre_efa_interfaces: dict[str, int]

    if TYPE_CHECKING:

        def _policy_name(self, index: int | str) -> str:
            raise NotImplementedError

    # --- Lustre over EFA -------------------------------------------------------------------------------------------
    def _set_up_lustre_over_efa(self) -> None:
        """LNet over EFA in OnNodeStart on every queue that can use EFA for the EFA-enabled shared file systems (see
        the class docstring, ``node_security_group``); warnings for what mounts over TCP instead."""
        efa_storage = [s for s in self.shared_storage if s.file_system.efa_enabled]
        for shared in efa_storage:
            if not shared.efa_clients:
                self._warn_over_tcp([shared], "every compute node", "SharedLustre(efa_clients=False)")
        storage = [s for s in efa_storage if s.efa_clients]
        if not storage:
            return
        group = self.node_security_group
        if group is None:
            self._warn_over_tcp(
                storage,
                "every compute node",
                "LNet over EFA needs node_security_group (the file system's EFA security group, or one "
                "allow_efa_clients_from opens to it), so that the nodes and the file system exchange EFA traffic",
            )
            return
        for queue in self.queues:
            plan, reason = self._lustre_efa_plan(queue, storage)
            if plan is None:
                self._warn_over_tcp(storage, f"queue {queue.name}", reason)
                continue
            spec, _, max_nodes = plan
            client = plan_lustre_client(
                efa_enabled=True, instance_spec=spec, max_nodes=max_nodes, steps=LustreClientSteps.LNET_ONLY
            )
            bootstrap = NodeBootstrap(self, f"LustreEfa-{queue.name}", name=f"lustre-efa-{queue.name}")
            bootstrap.add_step(LUSTRE_EFA_STEP, list(client.commands))
            action = bootstrap.script_action()
            policy = self._lustre_efa_policy
            if policy is None:
                policy = iam.ManagedPolicy(
                    self,
                    "LustreEfaPolicy",
                    managed_policy_name=self._policy_name("lustre-efa"),
                    description="fmconstructs: Lustre client over EFA (OnNodeStart) on ParallelCluster queues",
                )
                self._lustre_efa_policy = policy
            policy.add_statements(action.log_statement())
            for shared in storage:
                # All traffic both ways between the nodes' group and the file system's EFA group (nothing when they
                # are one group), as the tutorial's "Create Security Groups" step does; then the registration.
                apply_lustre_client_plan(
                    client,
                    file_system=shared.file_system,
                    consumer=bootstrap,
                    efa_security_group=group,
                    open_efa_rules=True,
                    subnets=list(queue.subnets),
                )
            self.lustre_efa_bootstraps[queue.name] = bootstrap
            self._lustre_efa[queue.name] = (action, policy.managed_policy_arn)
            self.lustre_efa_interfaces[queue.name] = client.efa_interfaces or 0

    def _mark_lustre_efa(self) -> None:
        """With an EFA-enabled shared file system, :data:`LUSTRE_EFA_METADATA_KEY` on the resource: each queue's EFA
        interfaces per node for LNet, 0 for a queue that mounts over TCP (what ``fmc plan`` counts), in the plan record
        (:mod:`fmconstructs._plan_metadata`) the resource always carries."""
        self._write_plan_record()

    def _write_plan_record(self, *, slurm_topology: dict[str, str] | None = None) -> None:
        """The plan record, with ``slurm_topology`` once :meth:`enable_slurm_topology` configured it (it replaces the
        record written at construction)."""
        marker = None
        if any(shared.file_system.efa_enabled for shared in self.shared_storage):
            marker = {queue.name: self.lustre_efa_interfaces.get(queue.name, 0) for queue in self.queues}
        write_plan_record(
            self.resource,
            PlanKind.NODE_GROUP,
            backend="parallelcluster",
            lustre_efa_interfaces=marker,
            slurm_topology=slurm_topology,
        )

    def _lustre_efa_plan(
        self, queue: SlurmQueue, storage: Sequence[SharedLustre]
    ) -> tuple[tuple[InstanceSpec, int, int | float] | None, str]:
        """(instance spec, EFA interfaces per node, max nodes) when ``queue`` can use EFA for Lustre, else (None,
        why not)."""
        plans: set[tuple[InstanceSpec, int]] = set()
        for resource in queue.compute_resources:
            spec = resource.spec
            if spec is None:
                return None, (
                    f"compute resource {resource.name} ({resource.instance_type}) is not a catalog type, so its EFA "
                    "interfaces for Lustre are unknown"
                )
            if not resource.efa_enabled:
                return None, f"compute resource {resource.name} has Efa.Enabled false (the tutorial requires it)"
            interfaces = lustre_efa_interfaces(efa_enabled=True, instance_spec=spec)
            if not interfaces:
                return None, f"{spec.instance_type} uses no EFA interface for Lustre"
            plans.add((spec, interfaces))
        if len({(spec.family, interfaces) for spec, interfaces in plans}) > 1:
            return None, (
                "its compute resources are of several instance families or EFA interface counts, and one "
                "OnNodeStart step configures every node of a queue alike"
            )
        for shared in storage:
            fs_zone = shared.file_system.zone
            for subnet in queue.subnets:
                if same_zone(fs_zone, subnet_zone(subnet)) is False:
                    return None, (
                        f"subnet {subnet.subnet_id} is in {subnet_zone(subnet)}, not in {fs_zone} with file system "
                        f"{shared.name} (EFA traffic does not cross Availability Zones)"
                    )
        counts = [resource.resolved_max_nodes for resource in queue.compute_resources]
        unknown = [count for count in counts if not known(count)]
        # A deploy-time MaxCount: register that token, so the budget check warns lustre-efa-connections-unknown.
        max_nodes: int | float = unknown[0] if unknown else sum(counts)
        (spec, interfaces), *_ = sorted(plans, key=lambda plan: plan[0].instance_type)
        return (spec, interfaces, max_nodes), ""

    def _warn_over_tcp(self, storage: Sequence[SharedLustre], who: str, reason: str) -> None:
        names = ", ".join(f"{s.name} ({s.file_system.node.path})" for s in storage)
        add_warning(
            self,
            WarningId.PARALLELCLUSTER_LUSTRE_OVER_TCP,
            f"{who} mounts the EFA-enabled file system {names} over TCP, not EFA: {reason}",
        )
