"""``ParallelCluster``: an AWS ParallelCluster 3 cluster deployed through ParallelCluster's own CloudFormation
custom resource (ParallelCluster User Guide "cloudformation-v3": the provider stack and ``Custom::PclusterCluster``).

- The provider is a nested stack from ParallelCluster's template
  ``https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}/parallelcluster/<version>/
  templates/custom_resource/cluster.yaml`` (aws/aws-parallelcluster ``cloudformation/custom_resource/cluster.yaml``;
  outputs ``ServiceToken``, ``LogGroupArn``, ``LambdaLayerArn``).
- The cluster is ``Custom::PclusterCluster`` with ``ServiceToken``, ``ClusterName``, ``ClusterConfiguration`` and
  ``DeletionPolicy`` (``Retain`` | ``Delete``: the provider's handler rejects anything else and reads it from the
  resource's properties, cluster.yaml ``properties.get("DeletionPolicy", "Delete")``).
- The custom resource's handler (cluster.yaml) passes every property except ``ServiceToken`` and ``DeletionPolicy``
  to ParallelCluster's create/update API as snake_case arguments.
- ``Fn::GetAtt`` values (User Guide "cfn-cluster-resource"): the ``pcluster describe-cluster`` values
  ("ClusterProperties", flattened with dots by cluster.yaml ``flatten``: ``headNode.privateIpAddress``,
  ``headNode.publicIpAddress``, ``cloudformationStackArn``, ...), ``validationMessages`` and ``logGroupName`` (the log
  group of the cluster operations' Lambda; kept after the cluster is deleted).

Node-side set-up: :meth:`ParallelCluster.add_node_bootstrap` (queues), :meth:`ParallelCluster.add_head_node_bootstrap`
and :meth:`ParallelCluster.add_login_node_bootstrap` run fmconstructs' :class:`~fmconstructs.bootstrap.NodeBootstrap` as
``CustomActions``; :meth:`ParallelCluster.enable_imex` sets up NVIDIA IMEX on P6e-GB200 as the User Guide documents it
(:mod:`fmconstructs.parallelcluster.imex`).

Escape hatch: ``cluster.add_override("Scheduling.SlurmQueues.0.ComputeSettings.LocalStorage.RootVolume.Size", 200)``
sets any key the typed props do not model (list items by index); ``to_dict()``/``to_yaml()`` and the deployed
configuration include it.

Layout (every public name stays importable from this module): ``cluster`` holds the construct (validation and the
provider and resource); ``cluster_config`` renders the configuration (dict, YAML, overrides); ``cluster_bootstrap``
wires node bootstraps as custom actions (and IMEX, node health, topology, Slurm scripts on top); ``cluster_lustre``
sets up Lustre over EFA on the queues.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from aws_cdk import (
    Aspects,
    CfnResource,
    Fn,
    Lazy,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_cloudformation as cfn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from .._rules import warn
from .._validate import (
    check_enum,
    check_instance,
    check_scope_id,
    check_sequence,
    check_str,
    known,
    located,
)
from .._validate_tags import check_tags
from ..budgets import check_template_budgets
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning
from ..images import GpuNodeImage
from ..networking import EfaSecurityGroup
from ..storage.sizing import LUSTRE_EFA_METADATA_KEY as LUSTRE_EFA_METADATA_KEY  # the marker key (see cluster_lustre)
from .accounting import (
    CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING,
    AccountingSettingsCheck,
    SlurmAccounting,
    SlurmDatabase,
    check_accounting_cluster_name,
    check_accounting_version,
    check_slurm_accounting,
)

# The cluster's concerns, one module each; every public name stays importable from here.
from .cluster_bootstrap import IMEX_BOOTSTRAP_NAME as IMEX_BOOTSTRAP_NAME
from .cluster_bootstrap import IMEX_STEP as IMEX_STEP
from .cluster_bootstrap import POLICY_NAME_MAX_LENGTH as POLICY_NAME_MAX_LENGTH
from .cluster_bootstrap import POLICY_NAME_PREFIX as POLICY_NAME_PREFIX
from .cluster_bootstrap import _ClusterBootstraps
from .cluster_config import _ClusterConfig, _ConfigProducer, _WriteYaml
from .cluster_lustre import LUSTRE_EFA_STEP as LUSTRE_EFA_STEP
from .cluster_lustre import _ClusterLustreEfa
from .config import SEQUENCE_MIN_VERSION as SEQUENCE_MIN_VERSION
from .config import (
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    QueueUpdateStrategy,
    SharedLustre,
    SlurmQueue,
    _security_group,
)
from .limits import MAX_NUMBER_OF_QUEUES
from .rules import ULTRASERVER_MIN_VERSION as ULTRASERVER_MIN_VERSION
from .rules import (
    VERSION_PATTERN,
    check_cluster_limits,
    p6e_gb200_needs_a_supported_os,
    placement_group_on_capacity_block,
    queue_names_are_distinct,
    ultraservers_need_version_3_14,
)
from .updates import DeletionPolicy, create_time_settings, resolve_deletion_policy

# PyPI aws-parallelcluster: 3.16.1 is the newest 3.x (`pip index versions aws-parallelcluster`, 2026-11-30).
DEFAULT_VERSION = "3.16.1"
# constants.py PCLUSTER_NAME_REGEX = r"^([a-zA-Z][a-zA-Z0-9-]{0,%d})$" with PCLUSTER_NAME_MAX_LENGTH = 60
# (ClusterNameValidator; 40 with Slurm accounting: PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING).
CLUSTER_NAME_PATTERN = re.compile(r"[a-zA-Z][a-zA-Z0-9-]{0,59}")
# TagSchema: tag keys starting with "parallelcluster:" are reserved (validate_no_reserved_tag).
_RESERVED_TAG_PREFIX = "parallelcluster:"
RETAIN_WARNING = WarningId.PARALLELCLUSTER_RETAIN_DEPENDENCIES.qualified


@dataclass(frozen=True)
class _Props:
    """The keyword arguments of :class:`ParallelCluster` as given (checked by :meth:`ParallelCluster._validate`)."""

    head_node: HeadNode
    queues: Sequence[SlurmQueue]
    cluster_name: str | None
    os: OperatingSystem
    custom_ami: str | GpuNodeImage | None
    login_nodes: Sequence[LoginNodePool]
    shared_storage: Sequence[SharedLustre]
    monitoring: Monitoring | None
    tags: Mapping[str, str] | None
    version: str
    removal_policy: RemovalPolicy | None
    deletion_policy: DeletionPolicy | None
    queue_update_strategy: QueueUpdateStrategy
    node_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None
    slurm_accounting: SlurmAccounting | None
    stable_head_node_actions: bool

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Props:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


@dataclass(frozen=True)
class _CheckedProps:
    """The props :meth:`ParallelCluster._validate` re-types while checking them."""

    queues: tuple[SlurmQueue, ...]
    login_nodes: tuple[LoginNodePool, ...]
    shared_storage: tuple[SharedLustre, ...]
    tags: tuple[tuple[str, str], ...]
    deletion_policy: DeletionPolicy
    accounting: SlurmAccounting | None


class ParallelCluster(_ClusterConfig, _ClusterBootstraps, _ClusterLustreEfa, Construct):
    """An AWS ParallelCluster 3 cluster with the Slurm scheduler.

    :param cluster_name: ``ClusterName``: a letter then letters, digits or '-', at most 60 characters; must differ
        from the stack name (ParallelCluster creates its own stack of that name). Default: ``<stack name>-cluster``
        (trimmed to 60).
    :param head_node: :class:`HeadNode`.
    :param queues: :class:`SlurmQueue` list (1-50: constants.py MAX_NUMBER_OF_QUEUES = 50).
    :param os: ``Image.Os`` (default ALINUX2023).
    :param custom_ami: ``Image.CustomAmi``: an AMI id, or a :class:`fmconstructs.GpuNodeImage` (read through a stack
        parameter of type ``AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>``: CloudFormation resolves parameters
        before the custom resource's handler sees the configuration, so ParallelCluster gets a plain AMI id; a
        ``{{resolve:ssm:...}}`` dynamic reference would also be resolved by CloudFormation, UNCONFIRMED for custom
        resource properties, so it is not used). The image must be one ParallelCluster can configure (built from a
        ParallelCluster AMI, User Guide "building-custom-ami-v3"): a GpuNodeImage on a PCS parent is not.
    :param login_nodes: :class:`LoginNodePool` list.
    :param shared_storage: :class:`SharedLustre` list (existing fmconstructs file systems).
    :param monitoring: :class:`Monitoring` (default: CloudWatch logs 14 days and the dashboard).
    :param tags: ``Tags`` (keys must not start with ``parallelcluster:``).
    :param version: the ParallelCluster version of the provider (default 3.16.1).
    :param node_security_group: a security group every node joins (``AdditionalSecurityGroups`` of the head node,
        each queue and each login pool), opened to each shared Lustre file system (``allow_clients_from``: TCP 988
        and 1018-1023). Pass the :class:`fmconstructs.EfaSecurityGroup` the file system was created with
        (``LustreFileSystem(efa_security_group=...)``) to share one EFA group between nodes and storage.
        **Lustre over EFA**: ParallelCluster mounts ``FsxLustre`` storage over TCP (``FsxLustreSettings`` has no EFA
        client setting: aws-parallelcluster 3.16.1 FsxLustreSettingsSchema), so for each EFA-enabled
        :class:`SharedLustre` (``efa_clients=True``, the default) every queue whose compute resources take EFA for
        Lustre (catalog types with ``Efa.Enabled``, one instance type family and interface count per queue, subnets
        in the file system's zone when both are known) gets an ``OnNodeStart`` step that configures LNet over EFA
        before ParallelCluster mounts, as the User Guide tutorial "tutorial-efa-enabled-fsx-lustre" does
        (:func:`fmconstructs.storage.client.lustre_lnet_commands`, interfaces per node from the catalog); the queue is
        registered against the file system's 1,024 EFA connections (``register_efa_clients``: max nodes = the sum of
        its compute resources' ``MaxCount``) and, when the file system has its own EFA group, that group and this one
        are opened to each other (``allow_efa_clients_from``). This needs ``node_security_group``. Queues that cannot
        (and every queue without ``node_security_group``) mount over TCP, with warning
        ``fmconstructs:parallelcluster-lustre-over-tcp``; the head node and login nodes mount over TCP.
    :param removal_policy: RETAIN (default) or DESTROY: the provider's ``DeletionPolicy`` property ``Retain`` or
        ``Delete`` (:mod:`.updates`). RETAIN keeps the cluster, its head node and ``/home`` when the stack is deleted
        or the resource removed from the app; the cluster keeps running and billing until ``pcluster delete-cluster``.
        A warning names the storage and network the stack would delete under it. The cluster is never replaced:
        changing ``cluster_name`` fails the update (the provider refuses to rename).
    :param deletion_policy: :class:`DeletionPolicy`, the provider's own word for ``removal_policy`` (give one, or both
        alike). Default: RETAIN.
    :param queue_update_strategy: ``Scheduling.SlurmSettings.QueueUpdateStrategy`` (:class:`QueueUpdateStrategy`).
        Default DRAIN, so that a deploy changing a queue's settings is accepted while nodes run and running jobs
        finish (ParallelCluster's own default, COMPUTE_FLEET_STOP, refuses it). Every cluster warns
        ``fmconstructs:parallelcluster-create-time-settings`` with the settings ParallelCluster refuses to change once
        it exists or while its compute nodes run (:func:`.updates.create_time_settings`): the construct does not
        know the deployed values, so the warning lists create-time choices rather than detecting a change.
    :param slurm_accounting: Slurm accounting (:mod:`.accounting`): a :class:`~.accounting.SlurmDatabase`
        (``SlurmSettings.Database``; :class:`~.accounting.SlurmAccountingDatabase` creates one) or an
        :class:`~.accounting.ExternalSlurmdbd`; its ``client_security_group`` joins the head node. With accounting the
        cluster name has at most 40 characters (the default name is trimmed to fit). Default: none.
    :param stable_head_node_actions: run the head node's OnNodeStart/OnNodeConfigured pieces through one frozen entry
        point whose ``Script`` and ``Args`` never change, the pieces' loader URLs and arguments in SSM parameters
        under ``/fmconstructs/parallelcluster/<cluster name>/head/`` (:mod:`.head_entry`), so that ParallelCluster
        accepts an update made by a library upgrade that changes a piece (it refuses any change to those two events:
        UpdatePolicy UNSUPPORTED). The head node then needs a route to SSM (an ``ssm`` VPC endpoint in a subnet
        without internet access). False: each piece's ``{Script, Args}`` in the configuration, as before 0.4 (no
        SSM; any change to a piece is a create-time change). Clusters created before 0.4: docs/upgrading.md.
        Default: True.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        head_node: HeadNode,
        queues: Sequence[SlurmQueue],
        cluster_name: str | None = None,
        os: OperatingSystem = OperatingSystem.ALINUX2023,
        custom_ami: str | GpuNodeImage | None = None,
        login_nodes: Sequence[LoginNodePool] = (),
        shared_storage: Sequence[SharedLustre] = (),
        monitoring: Monitoring | None = None,
        tags: Mapping[str, str] | None = None,
        version: str = DEFAULT_VERSION,
        removal_policy: RemovalPolicy | None = None,
        deletion_policy: DeletionPolicy | None = None,
        queue_update_strategy: QueueUpdateStrategy = QueueUpdateStrategy.DRAIN,
        node_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None = None,
        slurm_accounting: SlurmAccounting | None = None,
        stable_head_node_actions: bool = True,
    ) -> None:
        check_scope_id(scope, id)
        checked = self._validate(_Props.of(locals()))
        if not isinstance(stable_head_node_actions, bool):
            raise FmTypeError("stable_head_node_actions", stable_head_node_actions, "True or False")
        super().__init__(scope, id)
        self.stable_head_node_actions = stable_head_node_actions
        self._head_entry = None
        cluster_name = self._check_cluster_name(cluster_name, checked.accounting)
        self._keep_props(
            cluster_name=cluster_name,
            version=version,
            head_node=head_node,
            checked=checked,
            monitoring=monitoring,
            os=os,
            queue_update_strategy=queue_update_strategy,
        )
        self._init_bootstrap_state(checked.accounting)
        self._join_node_security_group(node_security_group)
        self.custom_ami: str | None = self._read_custom_ami(custom_ami)
        self._build_provider_and_resource(cluster_name, version, checked.deletion_policy)
        self._warn_at_creation(checked.deletion_policy)
        self._set_up_lustre_over_efa()
        self._mark_lustre_efa()
        Aspects.of(self).add(_WriteYaml(self))
        check_template_budgets(self)  # CloudFormation's template limits, at synthesis (issue 30)

    # --- construction steps ---------------------------------------------------------------------------------------
    @classmethod
    def _validate(cls, props: _Props) -> _CheckedProps:
        """Raise on misuse before any construct is built; return the props the checks re-type."""
        head_node, queues, os, custom_ami = props.head_node, props.queues, props.os, props.custom_ami
        login_nodes, shared_storage, monitoring, tags = (
            props.login_nodes,
            props.shared_storage,
            props.monitoring,
            props.tags,
        )
        version, removal_policy, deletion_policy = props.version, props.removal_policy, props.deletion_policy
        queue_update_strategy, node_security_group = props.queue_update_strategy, props.node_security_group
        slurm_accounting = props.slurm_accounting
        check_instance("head_node", head_node, HeadNode, "a HeadNode")
        queue_list = check_sequence("queues", queues, lambda p, v: check_instance(p, v, SlurmQueue, "a SlurmQueue"))
        if not 1 <= len(queue_list) <= MAX_NUMBER_OF_QUEUES:
            raise FmValidationError("queues", len(queue_list), "1 to 50 SlurmQueue (MAX_NUMBER_OF_QUEUES)")
        queue_names_are_distinct([q.name for q in queue_list])
        check_enum("os", os, OperatingSystem)
        if custom_ami is not None and not isinstance(custom_ami, GpuNodeImage):
            from .config import _AMI_ID, _AMI_TEXT

            check_str("custom_ami", custom_ami, pattern=_AMI_ID, allowed=_AMI_TEXT + " or a GpuNodeImage")
        pools = check_sequence(
            "login_nodes", login_nodes, lambda p, v: check_instance(p, v, LoginNodePool, "a LoginNodePool")
        )
        storage = check_sequence(
            "shared_storage", shared_storage, lambda p, v: check_instance(p, v, SharedLustre, "a SharedLustre")
        )
        if monitoring is not None:
            check_instance("monitoring", monitoring, Monitoring, "a Monitoring")
        tag_items = cls._check_tags(tags)
        check_str("version", version, pattern=VERSION_PATTERN, allowed="a ParallelCluster 3 version such as '3.16.1'")
        if not known(version):
            raise FmValidationError("version", version, "a version known at synthesis (it names the template URL)")
        resolved_deletion_policy = resolve_deletion_policy(removal_policy, deletion_policy)
        check_enum("queue_update_strategy", queue_update_strategy, QueueUpdateStrategy)
        resources = [resource for queue in queue_list for resource in queue.compute_resources]
        ultraservers_need_version_3_14(resources, version)
        p6e_gb200_needs_a_supported_os(resources, os)
        # ParallelCluster's offline validators (architecture, counts, names, mount directories, head node memory).
        check_cluster_limits(head_node=head_node, queues=queue_list, login_nodes=pools, shared_storage=storage)
        accounting = check_slurm_accounting("slurm_accounting", slurm_accounting)
        if accounting is not None:
            check_accounting_version(accounting, version)
        if node_security_group is not None:
            _security_group(
                "node_security_group",
                node_security_group.security_group
                if isinstance(node_security_group, EfaSecurityGroup)
                else node_security_group,
            )
        return _CheckedProps(
            tuple(queue_list), tuple(pools), tuple(storage), tag_items, resolved_deletion_policy, accounting
        )

    def _check_cluster_name(self, cluster_name: str | None, accounting: SlurmAccounting | None) -> str:
        """``cluster_name``, or the default from the stack name; checked against ParallelCluster's rules."""
        stack = Stack.of(self)
        if cluster_name is None:
            cluster_name = self._default_name(
                stack, 60 if accounting is None else CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING
            )
        check_str(
            "cluster_name",
            cluster_name,
            pattern=CLUSTER_NAME_PATTERN,
            allowed="a letter then letters, digits or '-', at most 60 characters (PCLUSTER_NAME_REGEX)",
        )
        if known(cluster_name) and not Token.is_unresolved(stack.stack_name) and cluster_name == stack.stack_name:
            raise FmValidationError(
                "cluster_name",
                cluster_name,
                f"different from the stack name {stack.stack_name!r} (ParallelCluster "
                "creates a stack named after the cluster)",
            )
        if accounting is not None:
            check_accounting_cluster_name(cluster_name)
        return cluster_name

    def _keep_props(
        self,
        *,
        cluster_name: str,
        version: str,
        head_node: HeadNode,
        checked: _CheckedProps,
        monitoring: Monitoring | None,
        os: OperatingSystem,
        queue_update_strategy: QueueUpdateStrategy,
    ) -> None:
        self.cluster_name = cluster_name
        self.version = version
        self.head_node = head_node
        self.queues = checked.queues
        self.login_nodes = checked.login_nodes
        self.shared_storage = checked.shared_storage
        self.monitoring = monitoring or Monitoring()
        self.os = os
        self.tags = checked.tags
        self.deletion_policy = checked.deletion_policy
        self.removal_policy = (
            RemovalPolicy.RETAIN if checked.deletion_policy is DeletionPolicy.RETAIN else RemovalPolicy.DESTROY
        )
        self.queue_update_strategy = queue_update_strategy
        #: Slurm accounting (``SlurmSettings.Database`` or ``ExternalSlurmdbd``), or None.
        self.slurm_accounting = checked.accounting

    def _init_bootstrap_state(self, accounting: SlurmAccounting | None) -> None:
        """The overrides, bootstraps and Lustre-over-EFA steps that later calls add to (read when rendering)."""
        self._overrides = []
        # (section kind, name, event) -> (the bootstrap's script action, the ARN of the managed policy its nodes get)
        self._bootstraps = {}
        self._attached_bootstraps = []
        self._bootstrap_policies = []
        self._imex_bootstrap = None
        self._custom_slurm_settings = []
        if isinstance(accounting, SlurmDatabase):
            self.node.add_validation(AccountingSettingsCheck(self._custom_slurm_settings))
        # queue name -> the Lustre-over-EFA bootstrap's script action and the ARN of the policy its nodes get
        self._lustre_efa = {}
        self._lustre_efa_policy = None
        #: The per-queue bootstraps configuring the Lustre client for EFA (OnNodeStart), by queue name.
        self.lustre_efa_bootstraps = {}
        #: The queues that configure LNet over EFA, and the EFA interfaces each of their nodes uses for it.
        self.lustre_efa_interfaces = {}

    def _join_node_security_group(self, node_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None) -> None:
        """Every node joins ``node_security_group``, opened to each shared file system."""
        self.node_security_group = (
            node_security_group.security_group
            if isinstance(node_security_group, EfaSecurityGroup)
            else node_security_group
        )
        if node_security_group is not None:
            for shared in self.shared_storage:
                shared.file_system.allow_clients_from(node_security_group)

    def _read_custom_ami(self, custom_ami: str | GpuNodeImage | None) -> str | None:
        """An AMI id, or a GpuNodeImage's id read through a typed SSM stack parameter."""
        if isinstance(custom_ami, GpuNodeImage):
            return ssm.StringParameter.value_for_typed_string_parameter_v2(
                self, custom_ami.ssm_parameter_name, ssm.ParameterValueType.AWS_EC2_IMAGE_ID
            )
        return custom_ami

    def _build_provider_and_resource(self, cluster_name: str, version: str, deletion_policy: DeletionPolicy) -> None:
        """ParallelCluster's provider (a nested stack) and the ``Custom::PclusterCluster`` resource."""
        self.provider = cfn.CfnStack(
            self,
            "Provider",
            template_url=Fn.sub(
                "https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                f"/parallelcluster/{version}/templates/custom_resource/cluster.yaml"
            ),
        )
        self.resource = CfnResource(
            self,
            "Resource",
            type="Custom::PclusterCluster",
            properties={
                "ServiceToken": self.provider.get_att("Outputs.ServiceToken").to_string(),
                "ClusterName": cluster_name,
                "DeletionPolicy": deletion_policy.value,
                "ClusterConfiguration": Lazy.any(_ConfigProducer(self)),
            },
        )

    def _warn_at_creation(self, deletion_policy: DeletionPolicy) -> None:
        if deletion_policy is DeletionPolicy.RETAIN:
            self._warn_retained_dependencies()
        self._warn_placement_groups_on_blocks()
        add_warning(
            self,
            WarningId.PARALLELCLUSTER_CREATE_TIME_SETTINGS,
            create_time_settings(
                head_node=self.head_node,
                queues=self.queues,
                login_nodes=self.login_nodes,
                strategy=self.queue_update_strategy,
            ),
        )

    # --- names and tags -------------------------------------------------------------------------------------------
    @staticmethod
    def _default_name(stack: Stack, max_length: int = 60) -> str:
        if Token.is_unresolved(stack.stack_name):
            raise FmValidationError("cluster_name", None, "given when the stack name is a deploy-time value")
        name = re.sub(r"[^a-zA-Z0-9-]", "-", stack.stack_name)
        if not name[:1].isalpha():
            name = "c" + name
        return (name[: max_length - 8] + "-cluster")[:max_length]

    @staticmethod
    def _check_tags(tags: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
        if tags is None:
            return ()
        # The one tag checker (AWS tag naming rules) and ParallelCluster's own prefix.
        return tuple(check_tags("tags", tags, reserved_prefixes=(_RESERVED_TAG_PREFIX,)).items())

    def _warn_retained_dependencies(self) -> None:
        deleted = [
            f"file system {s.name} ({s.file_system.node.path})"
            for s in self.shared_storage
            if s.file_system.removal_policy is not RemovalPolicy.RETAIN
        ]
        subnets: list[ec2.ISubnet] = [self.head_node.subnet]
        for queue in self.queues:
            subnets.extend(queue.subnets)
        for subnet in subnets:
            child = subnet.node.default_child
            if isinstance(child, ec2.CfnSubnet) and child.cfn_options.deletion_policy is not None:
                continue
            if isinstance(child, ec2.CfnSubnet):
                deleted.append(f"subnet {subnet.node.path}")
        # The nodes' network interfaces keep using node_security_group: deleting it under them fails the stack delete.
        group = self.node_security_group.node.default_child if self.node_security_group is not None else None
        if isinstance(group, ec2.CfnSecurityGroup) and group.cfn_options.deletion_policy is None:
            deleted.append(f"security group {self.node_security_group.node.path}")  # type: ignore[union-attr]
        if deleted:
            add_warning(
                self,
                WarningId.PARALLELCLUSTER_RETAIN_DEPENDENCIES,
                "removal_policy/deletion_policy RETAIN keeps the cluster when the stack is deleted, but the stack "
                "would delete " + ", ".join(sorted(set(deleted))) + " under it: give them RemovalPolicy.RETAIN too",
            )

    def _warn_placement_groups_on_blocks(self) -> None:
        warn(self, (placement_group_on_capacity_block(q.name, r) for q in self.queues for r in q.compute_resources))

    # --- attributes -----------------------------------------------------------------------------------------------
    def attribute(self, name: str) -> str:
        """Any flattened describe-cluster key the provider returns (cluster.yaml ``flatten``)."""
        check_str("name", name, min_length=1)
        return self.resource.get_att(name).to_string()

    @property
    def head_node_private_ip(self) -> str:
        return self.attribute("headNode.privateIpAddress")

    @property
    def head_node_public_ip(self) -> str:
        """The head node's public IP address (the User Guide's GetAtt example; empty in a private subnet)."""
        return self.attribute("headNode.publicIpAddress")

    @property
    def log_group_name(self) -> str:
        """``logGroupName``: the log group of the cluster operations (User Guide cfn-cluster-resource)."""
        return self.attribute("logGroupName")

    @property
    def head_node_instance_id(self) -> str:
        return self.attribute("headNode.instanceId")

    @property
    def validation_messages(self) -> str:
        """JSON list of ParallelCluster's validation messages (truncated past 2,048 characters by the provider)."""
        return self.attribute("validationMessages")

    @property
    def cloudformation_stack_arn(self) -> str:
        return self.attribute("cloudformationStackArn")

    @property
    def provider_log_group_arn(self) -> str:
        """The provider function's log group (provider stack output ``LogGroupArn``)."""
        return self.provider.get_att("Outputs.LogGroupArn").to_string()

    @property
    def service_token(self) -> str:
        return self.provider.get_att("Outputs.ServiceToken").to_string()
