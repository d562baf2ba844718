"""What PCS GPU and login node groups share: the cluster, the instance profile, mounts, the MIME user data and the
user-data hook (:mod:`.node_group`, :mod:`.login_node_group`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Aws, Fn, IResolveContext, IStringProducer
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from .._validate import check_str_sequence
from ..bootstrap import NodeBootstrap, step_name
from ..errors import FmValidationError
from ..storage.lustre_clients import apply_lustre_client_plan, plan_lustre_client
from ._node_group_checks import _check_mount
from .iam import PcsInstanceProfile
from .user_data import pcs_mime_user_data

if TYPE_CHECKING:
    from .cluster import PcsCluster
    from .node_group import FileSystemMount

#: The tag PCS puts on every instance of a compute node group (PCS User Guide working-with_cng_find-instances).
NODE_GROUP_ID_TAG = "aws:pcs:compute-node-group-id"


def _mime_text(bootstrap: NodeBootstrap) -> str:
    """PCS's MIME archive around the bootstrap's script (the shebang alone when there are no steps)."""
    return pcs_mime_user_data(bootstrap.user_data_script() or "#!/bin/bash")


@jsii.implements(IStringProducer)
class _MimeUserDataProducer:
    """Renders the node's set-up as PCS's MIME archive at synthesis (later steps included)."""

    def __init__(self, bootstrap: NodeBootstrap) -> None:
        self._bootstrap = bootstrap

    def produce(self, context: IResolveContext) -> str:
        return Fn.base64(_mime_text(self._bootstrap))


class _PcsNodeGroupBase(Construct):
    """What GPU and login node groups share: the cluster, the instance profile, mounts and the user-data hook."""

    cluster: PcsCluster
    bootstrap: NodeBootstrap
    resource: pcs.CfnComputeNodeGroup
    instance_profile: PcsInstanceProfile
    subnet: ec2.ISubnet

    def _setup(self, cluster: PcsCluster, instance_profile: PcsInstanceProfile | None) -> None:
        self.cluster = cluster
        self.instance_profile = instance_profile or cluster.instance_profile

    def _add_mounts(self, mounts: Sequence[FileSystemMount]) -> None:
        points = [m.mount_point for m in mounts]
        if len(points) != len(set(points)):
            raise FmValidationError("mounts", points, "distinct mount points")
        for mount in mounts:
            self.add_mount(mount)

    def add_mount(self, mount: FileSystemMount) -> None:
        """Mount a Lustre file system on the nodes and open the Lustre ports between it and the cluster's group.

        GPU nodes mount an EFA-enabled file system over EFA (LNet with the FSx UG per-type interface count) and are
        registered with it (:meth:`~fmconstructs.storage.LustreFileSystemBase.register_efa_clients`), which fails
        when the cluster's EFA security group cannot reach the file system's, or when the group's subnet and the file
        system are in different zones (both checked when known; EFA traffic stays inside one group and one zone).
        Mount such a file system over TCP with ``LustreMount(efa_interfaces=0)``.
        """
        _check_mount("mount", mount)
        fs = mount.file_system
        # LNet over EFA with the FSx UG per-type interface count (capped by the node's EFA interfaces); login nodes
        # and nodes without EFA mount over TCP. EFA clients count against the file system's 1,024 EFA connections.
        plan = plan_lustre_client(
            efa_enabled=fs.efa_enabled,
            dns_name=fs.dns_name,
            mount_name=fs.mount_name,
            instance_spec=getattr(self, "instance_spec", None),
            max_nodes=self._max_nodes,
            node_efa_interfaces=self.efa_interface_count if self._uses_efa else 0,
            efa_interfaces=mount.efa_interfaces,
            mount_point=mount.mount_point,
        )
        apply_lustre_client_plan(
            plan,
            file_system=fs,
            consumer=self,
            bootstrap=self.bootstrap,
            step=step_name("lustre", mount.mount_point),
            lustre_clients=self.cluster.security_group,
            # Created with the first GPU node group: touched only by nodes that register as EFA clients.
            efa_security_group=self.cluster.efa_security_group.security_group if plan.registers_efa_clients else None,
            subnets=[self.subnet],
        )

    @property
    def _uses_efa(self) -> bool:
        return False

    @property
    def efa_interface_count(self) -> int:
        return 0

    @property
    def _max_nodes(self) -> int | float:
        raise NotImplementedError

    def add_user_data(self, *commands: str) -> None:
        """The hook for your own node set-up: shell commands appended after the built-in steps (run as root, after
        PCS registration and before ``slurmd`` starts; keep them idempotent, they run on every new node). With asset
        delivery they run with ``set -e``: a failing command fails the boot script."""
        self.bootstrap.add_commands(*check_str_sequence("commands", commands))

    @property
    def user_data(self) -> NodeBootstrap:
        """The node set-up (:attr:`bootstrap`); before 0.3 an ``ec2.UserData`` (``add_commands``, ``render`` kept)."""
        return self.bootstrap

    @property
    def node_group_id(self) -> str:
        """The compute node group id (``GetAtt Id``); PCS tags the group's instances with it
        (:data:`NODE_GROUP_ID_TAG`)."""
        return self.resource.attr_id

    @property
    def node_group_arn(self) -> str:
        return self.resource.attr_arn

    @property
    def find_instances_command(self) -> str:
        """An AWS CLI command listing the group's running instances (id and private address), by the tag PCS puts
        on them (PCS User Guide working-with_cng_find-instances)."""
        return (
            f"aws ec2 describe-instances --region {Aws.REGION} --filters "
            f"Name=tag:{NODE_GROUP_ID_TAG},Values={self.node_group_id} Name=instance-state-name,Values=running "
            "--query 'Reservations[].Instances[].[InstanceId,PrivateIpAddress]' --output text"
        )
