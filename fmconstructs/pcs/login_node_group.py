"""PCS login node groups (:class:`PcsLoginNodeGroup`): static node groups that no queue maps, reached with Session
Manager. Mounts, delivery and the user-data hook are those of the GPU node groups (:mod:`.node_group`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Required, TypedDict, Unpack, cast

import jsii
from aws_cdk import Aws, Lazy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    RemovedAttribute,
    located,
    removed_keywords,
)
from ..bootstrap import BootstrapDelivery, NodeBootstrap, default_bootstrap_name
from ..compute.launch_template import UserDataSizeCheck
from ._checks import (
    check_scope_id,
)
from ._node_group_base import NODE_GROUP_ID_TAG, _mime_text, _MimeUserDataProducer, _PcsNodeGroupBase
from ._node_group_checks import _group_path, _LoginNodeProps
from .ami import PcsAmi
from .cluster import check_cluster
from .iam import PcsInstanceProfile
from .slurm import PurchaseOption

if TYPE_CHECKING:
    from .cluster import PcsCluster
    from .node_group import FileSystemMount


class PcsLoginNodeGroupOptions(TypedDict, total=False):
    """The options of :class:`PcsLoginNodeGroup` and :meth:`PcsCluster.add_login_node_group` (all but ``cluster``).

    :var ami: :class:`PcsAmi` with the PCS agent and Slurm (the sample AMIs work here).
    :var instance_type: default ``m7i.xlarge`` (any type; login nodes are not in the GPU catalog; may be a
        deploy-time value).
    :var nodes: static number of login nodes (min == max, >= 1 or a number token), default 1. Was
        ``instance_count`` (removed in 0.3.0).
    :var subnet: the nodes' subnet (``SubnetIds``). Default: the cluster's subnet.
    :var mounts: Lustre file systems to mount (:class:`~fmconstructs.pcs.FileSystemMount`), over TCP.
    :var user_data_commands: your own steps, run after the mounts (see also :meth:`PcsLoginNodeGroup.add_user_data`).
    :var instance_profile: default: the cluster's.
    :var security_groups: more groups for the launch template, besides the cluster's.
    :var root_volume_size_gib: encrypted gp3 root volume. Default 100.
    :var node_group_name: 3-25 characters, a letter then letters, digits or '-'. Default: generated.
    :var tags: tags of the node group and of its launch template's instances and volumes.
    :var bootstrap_delivery: how the node set-up (mounts, your commands, collectors) reaches the nodes: default
        None, an S3 asset with a loader when the stack publishes file assets, else inline (see the
        :mod:`.node_group` module docstring).
    """

    ami: Required[PcsAmi]
    instance_type: str
    nodes: int | float
    subnet: ec2.ISubnet | None
    mounts: Sequence[FileSystemMount]
    user_data_commands: Sequence[str]
    instance_profile: PcsInstanceProfile | None
    security_groups: Sequence[ec2.ISecurityGroup]
    root_volume_size_gib: int | float
    node_group_name: str | None
    tags: Mapping[str, str] | None
    bootstrap_delivery: BootstrapDelivery | None


@jsii.implements(ec2.IConnectable)
class PcsLoginNodeGroup(_PcsNodeGroupBase):
    """Login nodes: a static PCS compute node group that no queue maps (users reach it with Session Manager:
    :attr:`session_command`).

    Its launch template is a plain ``AWS::EC2::LaunchTemplate`` (no GPU, no EFA): IMDSv2 required, encrypted gp3
    root volume, the cluster's security group, MIME user data with the same mount and hook steps as GPU groups.

    :param cluster: the :class:`PcsCluster`.
    :param options: :class:`PcsLoginNodeGroupOptions` (the same keywords as :meth:`PcsCluster.add_login_node_group`).
    """

    @located
    @removed_keywords("PcsLoginNodeGroup", instance_count="nodes")
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: PcsCluster,
        **options: Unpack[PcsLoginNodeGroupOptions],
    ) -> None:
        check_scope_id(scope, id)
        cluster = check_cluster("cluster", cluster)
        props = _LoginNodeProps.resolve("PcsLoginNodeGroup", options)
        nodes = props.nodes
        # Login nodes count against the controller size too (PcsCluster "Controller size").
        cluster._check_node_count(_group_path(scope, id), "nodes", nodes)
        super().__init__(scope, id)
        self._setup(cluster, props.instance_profile)
        self.instance_type = props.instance_type
        self.nodes = nodes
        self.subnet = props.subnet or cluster.subnet
        groups = [cluster.security_group, *props.security_groups]
        self.connections = ec2.Connections(security_groups=groups)
        self._build_bootstrap(props.bootstrap_delivery, props.mounts, props.user_data_commands)
        root_gib = cast(int, props.root_volume_size_gib)  # checked: a whole number or a number token
        self.launch_template = self._build_launch_template(groups, root_gib=root_gib, tag_map=props.tags)
        self.resource = self._build_resource(props.ami, node_group_name=props.node_group_name, tag_map=props.tags)
        self.resource.node.add_dependency(self.instance_profile.policy)
        write_plan_record(self.resource, PlanKind.NODE_GROUP, backend="pcs")  # what `fmc plan` reads
        cluster._register_login_node_group(self)
        cluster._register_node_count(self.node.path, "nodes", nodes)

    # --- build steps ----------------------------------------------------------------------------------------------
    def _build_bootstrap(
        self,
        delivery: BootstrapDelivery | None,
        mounts: Sequence[FileSystemMount],
        commands: Sequence[str],
    ) -> None:
        """The node set-up: the mount steps, then ``user_data_commands``."""
        self.bootstrap = NodeBootstrap(
            self,
            "Bootstrap",
            name=default_bootstrap_name(self),
            delivery=delivery,
            role=self.instance_profile.role,
        )
        self._add_mounts(mounts)
        if commands:
            self.bootstrap.add_commands(*commands)

    def _build_launch_template(
        self, groups: Sequence[ec2.ISecurityGroup], *, root_gib: int, tag_map: Mapping[str, str] | None
    ) -> ec2.CfnLaunchTemplate:
        """A plain launch template: IMDSv2, encrypted gp3 root volume, the groups, PCS's MIME user data."""
        launch_template = ec2.CfnLaunchTemplate(
            self,
            "LaunchTemplate",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                instance_type=self.instance_type,
                security_group_ids=[g.security_group_id for g in groups],
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_tokens="required", http_endpoint="enabled", http_put_response_hop_limit=1
                ),
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name="/dev/xvda",
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            volume_type="gp3",
                            volume_size=root_gib,
                            encrypted=True,
                            delete_on_termination=True,
                        ),
                    )
                ],
                user_data=Lazy.uncached_string(_MimeUserDataProducer(self.bootstrap)),
                tag_specifications=[
                    ec2.CfnLaunchTemplate.TagSpecificationProperty(
                        resource_type=resource_type,
                        tags=[{"key": "fmconstructs:role", "value": "pcs-login"}]
                        + [{"key": k, "value": v} for k, v in (tag_map or {}).items()],
                    )
                    for resource_type in ("instance", "volume")
                ],
            ),
        )
        # EC2's 16 KB, from the Python-side text (no read-back of the template through jsii).
        launch_template.node.add_validation(UserDataSizeCheck(lambda: _mime_text(self.bootstrap), self.bootstrap))
        return launch_template

    def _build_resource(
        self, ami: PcsAmi, *, node_group_name: str | None, tag_map: Mapping[str, str] | None
    ) -> pcs.CfnComputeNodeGroup:
        """The static ``AWS::PCS::ComputeNodeGroup`` (min == max == ``nodes``, On-Demand)."""
        return pcs.CfnComputeNodeGroup(
            self,
            "Resource",
            cluster_id=self.cluster.cluster_id,
            name=node_group_name,
            ami_id=ami.resolve(self),
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=self.launch_template.ref, version=self.launch_template.attr_latest_version_number
            ),
            iam_instance_profile_arn=self.instance_profile.instance_profile_arn,
            instance_configs=[pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=self.instance_type)],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=self.nodes, max_instance_count=self.nodes
            ),
            subnet_ids=[self.subnet.subnet_id],
            purchase_option=PurchaseOption.ONDEMAND.value,
            tags=tag_map or None,
        )

    @property
    def _max_nodes(self) -> int | float:
        return self.nodes

    instance_count = RemovedAttribute("nodes")

    @property
    def session_command(self) -> str:
        """An AWS CLI command that opens a shell on a running login node through Session Manager: it finds the
        instance by the tag PCS puts on it (PCS User Guide working-with_cng_find-instances) and starts a session
        (``aws ssm start-session``; needs the Session Manager plugin and the node role's
        ``AmazonSSMManagedInstanceCore``, on by default)."""
        return (
            f'aws ssm start-session --region {Aws.REGION} --target "$(aws ec2 describe-instances --region '
            f"{Aws.REGION} --filters Name=tag:{NODE_GROUP_ID_TAG},Values={self.node_group_id} "
            "Name=instance-state-name,Values=running --query 'Reservations[0].Instances[0].InstanceId' "
            '--output text)"'
        )
