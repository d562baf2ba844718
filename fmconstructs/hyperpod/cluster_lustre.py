"""Lustre over EFA on a HyperPod cluster's nodes: each group's ``OnCreate`` LNet set-up with EKS orchestration, the EFA
rules to the file system and the groups' registration against its 1,024 EFA connections; split out of
:mod:`fmconstructs.hyperpod.cluster` (which re-exports :data:`LUSTRE_EFA_DECIDED_ON_NODE`).

Sources: the FSx for Lustre User Guide "Configuring EFA clients", the EKS User Guide "fsx-csi-tuning-efa" and
awsome-distributed-training's HyperPod EKS base-config (cited on :func:`eks_group_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import aws_ec2 as ec2

from .._rules import Advice, warn
from ..bootstrap import BootstrapDelivery, NodeBootstrap
from ..errors import WarningId
from ..storage import LustreFileSystemBase
from ..storage.lustre_clients import (
    LustreClientSteps,
    apply_lustre_client_plan,
    plan_lustre_client,
)
from .types import HyperPodInstanceGroup

if TYPE_CHECKING:
    from .cluster import HyperPodCluster

# LUSTRE_EFA_METADATA_KEY (_plan_metadata) on the ``AWS::SageMaker::Cluster`` resource records, when fmconstructs'
# node set-up mounts an EFA-enabled file system (``SlurmConfiguration.API`` with ``HyperPodLustreMount.NODE_BOOTSTRAP``,
# or EKS), each instance group's EFA interfaces per node for LNet (0: over TCP; :data:`LUSTRE_EFA_DECIDED_ON_NODE`: a
# type the catalog lacks, whose node picks the count).
#: The marker's value for a group whose node decides its EFA interfaces for LNet (a string: CDK drops null values
#: from Metadata when it resolves the template).
LUSTRE_EFA_DECIDED_ON_NODE = "decided-on-node"


def eks_group_bootstrap(
    cluster: HyperPodCluster,
    group: HyperPodInstanceGroup,
    file_system: LustreFileSystemBase,
    commands: Sequence[str],
    subnets: Sequence[ec2.ISubnet],
) -> NodeBootstrap:
    """One group's ``OnCreate`` set-up with EKS orchestration and an EFA-enabled file system: LNet over EFA (GPU
    groups the catalog holds, unless ``efa_interfaces_for_lustre=0``), then ``setup_commands``.

    What this mirrors, and why in ``OnCreate``:

    - EKS User Guide "fsx-csi-tuning-efa" (Optimize Amazon FSx for Lustre performance on nodes (EFA)) sets EFA
      for Lustre up on the node itself, in the node group's eksctl ``preBootstrapCommands`` (EFA driver at least
      2.12.1, then the Lustre client's EFA configuration), before the node joins the cluster; the FSx CSI driver
      then mounts in pods. fmconstructs' EKS node groups do the same from their launch templates
      (``GpuNodeGroup.add_lustre_client``). HyperPod nodes have no launch template: their node set-up is the
      lifecycle script (SageMaker Developer Guide "sagemaker-hyperpod-eks-operate-cli-command-create-cluster":
      prepare a lifecycle script such as the sample ``on_create.sh``, upload it to S3, and add further set-up
      commands "to be executed during the HyperPod cluster provisioning stage"; ``LifeCycleConfig.OnCreate``
      runs "during cluster creation", botocore ``ClusterLifeCycleConfig``).
    - awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/
      on_create_main.sh (commit ef3d0b1) does exactly this in OnCreate: when ``fi_info -p efa`` finds EFA it runs
      AWS's configure-efa-fsx-lustre-client ``setup.sh`` (the bundle the storage module's script mirrors), and
      falls back to standard (TCP) Lustre otherwise; the same file (and its ``on_create.sh``) rewrites the
      containerd configuration and moves ``/var/lib/kubelet`` in OnCreate, which suggests OnCreate runs before
      kubelet serves pods, hence before the CSI driver's first mount (UNCONFIRMED: no HyperPod page states the
      order; a node whose CSI mount came first would keep that mount's TCP path until it is remounted).
    - Whether HyperPod's EKS AMI ships the Lustre client and an EFA driver new enough for kefalnd is
      UNCONFIRMED (the sample only ``modprobe``s lnet/lustre); the storage script installs the client when it is
      missing and falls back to LNet over TCP, with a log line, on any EFA problem.

    The count (:func:`~fmconstructs.storage.lustre_efa_interfaces`: the type's FSx default or the group's
    ``efa_interfaces_for_lustre``) is registered against the file system's 1,024 EFA connections for ``nodes``
    nodes. Groups whose type the catalog does not hold (its EFA layout unknown) and CPU groups stay on TCP.
    """
    bootstrap = NodeBootstrap(cluster, f"Bootstrap-{group.name}", delivery=BootstrapDelivery.INLINE)
    if group.gpu:
        plan = plan_lustre_client(
            efa_enabled=True,
            dns_name=file_system.dns_name,
            mount_name=file_system.mount_name,
            instance_spec=group.instance_spec,
            max_nodes=group.nodes,
            efa_interfaces=group.efa_interfaces_for_lustre if group.instance_spec is not None else None,
            steps=LustreClientSteps.LNET_ONLY,
            unknown_layout=lustre_over_tcp_advice(group),
        )
        if plan.registers_efa_clients:
            cluster.lustre_efa_interfaces[group.name] = plan.efa_interfaces or 0
        # The file system's 1,024 EFA connection budget (FSx for Lustre User Guide "Configuring EFA clients": at most
        # 1,024 EFA connections per file system, one per client EFA interface used for LNet; every node of the group
        # counts), EFA rules between the nodes' group and the file system's (none when the file system shares the
        # nodes' group: allow_efa_clients_from skips its own group) and the EFA security group / zone checks.
        apply_lustre_client_plan(
            plan,
            file_system=file_system,
            consumer=bootstrap,
            bootstrap=bootstrap,
            step="lustre-lnet",
            efa_security_group=cluster.efa_security_group,
            open_efa_rules=True,
            subnets=subnets,
            warnings_on=cluster,
        )
    if commands:
        bootstrap.add_commands(*commands)
    return bootstrap


def lustre_over_tcp_advice(group: HyperPodInstanceGroup) -> Advice:
    """The warning for a GPU group whose type the catalog lacks (its EFA layout for Lustre unknown: TCP)."""
    return Advice(
        WarningId.HYPERPOD_LUSTRE_OVER_TCP,
        f"instance group {group.name!r} ({group.instance_type}) mounts the EFA-enabled file system over TCP: the "
        "instance catalog does not hold its type, so its EFA layout for Lustre is unknown (register it with "
        "fmconstructs.register_instance_type to use EFA)",
    )


def warn_lustre_over_tcp(cluster: HyperPodCluster, group: HyperPodInstanceGroup) -> None:
    warn(cluster, lustre_over_tcp_advice(group))
