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

from ..bootstrap import BootstrapDelivery, NodeBootstrap
from ..errors import WarningId, add_warning
from ..storage import LustreFileSystemBase
from ..storage.client import lustre_efa_interfaces, lustre_lnet_commands
from .types import HyperPodInstanceGroup

if TYPE_CHECKING:
    from .cluster import HyperPodCluster

# LUSTRE_EFA_METADATA_KEY (storage.sizing) on the ``AWS::SageMaker::Cluster`` resource records, when fmconstructs'
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
    spec = group.instance_spec
    if group.gpu and spec is not None:
        count = lustre_efa_interfaces(
            efa_enabled=True, instance_spec=spec, efa_interfaces_for_lustre=group.efa_interfaces_for_lustre
        )
        if count:
            bootstrap.add_step(
                "lustre-lnet",
                lustre_lnet_commands(instance_spec=spec, efa_interfaces_for_lustre=group.efa_interfaces_for_lustre),
            )
            cluster.lustre_efa_interfaces[group.name] = count
            register_lustre_efa_clients(cluster, bootstrap, group, file_system, count, subnets)
    elif group.gpu:
        warn_lustre_over_tcp(cluster, group)
    if commands:
        bootstrap.add_commands(*commands)
    return bootstrap


def warn_lustre_over_tcp(cluster: HyperPodCluster, group: HyperPodInstanceGroup) -> None:
    add_warning(
        cluster,
        WarningId.HYPERPOD_LUSTRE_OVER_TCP,
        f"instance group {group.name!r} ({group.instance_type}) mounts the EFA-enabled file system over TCP: the "
        "instance catalog does not hold its type, so its EFA layout for Lustre is unknown (register it with "
        "fmconstructs.register_instance_type to use EFA)",
    )


def register_lustre_efa_clients(
    cluster: HyperPodCluster,
    bootstrap: NodeBootstrap,
    group: HyperPodInstanceGroup,
    file_system: LustreFileSystemBase,
    efa_interfaces: int,
    subnets: Sequence[ec2.ISubnet],
) -> None:
    """EFA rules between the nodes' group and the file system's, and the group against the 1,024 budget."""
    if file_system.efa_security_group is not None:
        # Open EFA traffic between the nodes' group and the file system's (no rules when the file system shares
        # the nodes' group: allow_efa_clients_from skips its own group).
        file_system.allow_efa_clients_from(cluster.efa_security_group)
    # The file system's 1,024 EFA connection budget (FSx for Lustre User Guide "Configuring EFA clients": at most
    # 1,024 EFA connections per file system, one per client EFA interface used for LNet; every node of the group
    # counts) and the EFA security group / zone checks.
    file_system.register_efa_clients(
        bootstrap,
        max_nodes=group.nodes,
        efa_interfaces_per_node=efa_interfaces,
        efa_security_group=cluster.efa_security_group,
        subnets=subnets,
    )
