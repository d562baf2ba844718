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
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsii
import yaml
from aws_cdk import (
    Aspects,
    CfnResource,
    Fn,
    IAspect,
    IStableAnyProducer,
    Lazy,
    RemovalPolicy,
    Stack,
    Stage,
    Token,
)
from aws_cdk import aws_cloudformation as cfn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct, IValidation

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    check_enum,
    check_instance,
    check_scope_id,
    check_sequence,
    check_str,
    check_tag_key,
    known,
    located,
    same_zone,
    subnet_zone,
)
from ..bootstrap import NodeBootstrap, ScriptAction
from ..catalog import InstanceSpec
from ..compute.slurm_scripts import SlurmScriptPiece
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning
from ..health import NodeHealthOptions
from ..images import GpuNodeImage
from ..networking import EfaSecurityGroup
from ..storage.client import lustre_efa_interfaces, lustre_lnet_commands
from .accounting import (
    CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING,
    AccountingSettingsCheck,
    SlurmAccounting,
    SlurmDatabase,
    apply_slurm_accounting,
    check_accounting_cluster_name,
    check_accounting_version,
    check_slurm_accounting,
)
from .config import (
    QUEUE_EVENTS,
    UNSUPPORTED_OSES_FOR_P6E_GB200,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    QueueUpdateStrategy,
    SharedLustre,
    SlurmQueue,
    _security_group,
)
from .imex import IMEX_CUSTOM_SLURM_SETTINGS, imex_prolog_files
from .limits import MAX_NUMBER_OF_QUEUES, check_cluster_limits
from .review import review_header
from .slurm_scripts import merge_prolog_flag_settings
from .updates import DeletionPolicy, create_time_settings, resolve_deletion_policy

# PyPI aws-parallelcluster: 3.16.1 is the newest 3.x (`pip index versions aws-parallelcluster`, 2026-11-30).
DEFAULT_VERSION = "3.16.1"
_VERSION = re.compile(r"3\.\d+\.\d+")
# constants.py PCLUSTER_NAME_REGEX = r"^([a-zA-Z][a-zA-Z0-9-]{0,%d})$" with PCLUSTER_NAME_MAX_LENGTH = 60
# (ClusterNameValidator; 40 with Slurm accounting: PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING).
CLUSTER_NAME_PATTERN = re.compile(r"[a-zA-Z][a-zA-Z0-9-]{0,59}")
# TagSchema: tag keys starting with "parallelcluster:" are reserved (validate_no_reserved_tag).
_RESERVED_TAG_PREFIX = "parallelcluster:"
RETAIN_WARNING = WarningId.PARALLELCLUSTER_RETAIN_DEPENDENCIES.qualified
# The provider's role may attach customer managed policies whose ARN matches policy/parallelcluster* (aws/
# aws-parallelcluster cloudformation/policies/parallelcluster-policies.yaml DefaultParallelClusterIamAdminPolicy, Sid
# IamPolicy, ArnLike iam:PolicyARN). IAM ManagedPolicyName: at most 128 characters (IAM API CreatePolicy PolicyName).
POLICY_NAME_PREFIX = "parallelcluster"
POLICY_NAME_MAX_LENGTH = 128
#: The bootstrap :meth:`ParallelCluster.enable_imex` creates, and its step.
IMEX_BOOTSTRAP_NAME = "parallelcluster-imex"
IMEX_STEP = "nvidia-imex-prolog"
# Kinds of node sections a bootstrap targets (the head node's name is its kind).
_QUEUE, _HEAD, _LOGIN = "queue", "head", "login"
# The HeadNode/SlurmQueue fields holding a user's own action for an event.
_EVENT_FIELDS = {
    CustomActionEvent.ON_NODE_START: "on_node_start",
    CustomActionEvent.ON_NODE_CONFIGURED: "on_node_configured",
}
#: The step of the per-queue bootstrap that configures the Lustre client for EFA (OnNodeStart, before the mount).
LUSTRE_EFA_STEP = "lustre-lnet-efa"
# LUSTRE_EFA_METADATA_KEY (storage.sizing) on the ``Custom::PclusterCluster`` resource records, when the cluster shares
# an EFA-enabled file system, each Slurm queue's EFA interfaces per node for LNet (0: the queue mounts over TCP); the
# head node and login nodes always mount over TCP.
# User Guide "custom-bootstrap-actions-config-v3": "Using the Sequence setting (added in AWS ParallelCluster version
# 3.6.0)"; aws-parallelcluster 3.16.1 cluster_schema.py OneOrManyCustomActionField takes Script or Sequence.
SEQUENCE_MIN_VERSION = (3, 6, 0)


@jsii.implements(IAspect)
class _WriteYaml:
    """Writes ``<outdir>/<stack artifact id>.<construct id>.pcluster.yaml`` at synthesis (``pcluster`` CLI users)."""

    def __init__(self, cluster: ParallelCluster) -> None:
        self._cluster = cluster

    def visit(self, node: IConstruct) -> None:
        if node is not self._cluster:
            return
        stage = Stage.of(node)
        if stage is not None and stage.outdir:
            self._cluster.write_yaml(Path(stage.outdir) / self._cluster.yaml_file_name)


@jsii.implements(IValidation)
class _ImexOnHeadNode:
    """The bootstrap holding the IMEX prolog must run on the head node (``enable_imex(bootstrap=...)``)."""

    def __init__(self, cluster: ParallelCluster) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        imex = self._cluster._imex_bootstrap
        on_head = any(
            bootstrap is imex and any(kind == _HEAD for kind, _ in targets)
            for bootstrap, targets, _ in self._cluster._attached_bootstraps
        )
        if imex is None or on_head:
            return []
        return [
            f"enable_imex: bootstrap {imex.node.path} holds the IMEX prolog but does not run on the head node: "
            "attach it with add_head_node_bootstrap"
        ]


@jsii.implements(IStableAnyProducer)
class _ConfigProducer:
    def __init__(self, cluster: ParallelCluster) -> None:
        self._cluster = cluster

    def produce(self) -> Any:
        return self._cluster._raw_config()


def _set_path(config: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node: Any = config
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise FmValidationError("path", path, f"an existing list index at {'.'.join(parts[: index + 1])}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
            continue
        if last:
            node[part] = value
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, dict | list):
                raise FmValidationError("path", path, f"a path through mappings, {part} holds a value")


# ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance": version 3.14.0 installs the NVIDIA stack
# (driver, CUDA, EFA, IMEX) for p6e-gb200, writes the nvidia-imex configuration, starts nvidia-imex and makes each
# UltraServer (one Capacity Block) a Slurm topology block.
ULTRASERVER_MIN_VERSION = (3, 14, 0)


def _check_gb200_os(queues: Sequence[SlurmQueue], os: OperatingSystem) -> None:
    for queue in queues:
        for resource in queue.compute_resources:
            spec = resource.spec
            if spec is not None and spec.family == "p6e-gb200" and os in UNSUPPORTED_OSES_FOR_P6E_GB200:
                allowed = [o.value for o in OperatingSystem if o not in UNSUPPORTED_OSES_FOR_P6E_GB200]
                raise FmValidationError(
                    "os", os.value, f"one of {', '.join(allowed)} for {spec.instance_type} (ParallelCluster 3.16.1)"
                )


def _check_ultraserver_version(queues: Sequence[SlurmQueue], version: str) -> None:
    if not known(version) or not _VERSION.fullmatch(version):
        return
    parsed = tuple(int(part) for part in version.split("."))
    for queue in queues:
        for resource in queue.compute_resources:
            spec = resource.spec
            if spec is not None and spec.ultraserver_types and parsed < ULTRASERVER_MIN_VERSION:
                raise FmValidationError(
                    "version",
                    version,
                    f"3.14.0 or later for {spec.instance_type} (UltraServer support: ParallelCluster User Guide "
                    "support-nvidia-imex-p6e-gb200-instance)",
                )


class ParallelCluster(Construct):
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
    ) -> None:
        check_scope_id(scope, id)
        check_instance("head_node", head_node, HeadNode, "a HeadNode")
        queue_list = check_sequence("queues", queues, lambda p, v: check_instance(p, v, SlurmQueue, "a SlurmQueue"))
        if not 1 <= len(queue_list) <= MAX_NUMBER_OF_QUEUES:
            raise FmValidationError("queues", len(queue_list), "1 to 50 SlurmQueue (MAX_NUMBER_OF_QUEUES)")
        names = [q.name for q in queue_list]
        if len(set(names)) != len(names):
            raise FmValidationError("queues", names, "queues with distinct names")
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
        tag_items = self._check_tags(tags)
        check_str("version", version, pattern=_VERSION, allowed="a ParallelCluster 3 version such as '3.16.1'")
        if not known(version):
            raise FmValidationError("version", version, "a version known at synthesis (it names the template URL)")
        deletion_policy = resolve_deletion_policy(removal_policy, deletion_policy)
        check_enum("queue_update_strategy", queue_update_strategy, QueueUpdateStrategy)
        _check_ultraserver_version(queue_list, version)
        _check_gb200_os(queue_list, os)
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
        super().__init__(scope, id)
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

        self.cluster_name: str = cluster_name
        self.version = version
        self.head_node = head_node
        self.queues: tuple[SlurmQueue, ...] = tuple(queue_list)
        self.login_nodes: tuple[LoginNodePool, ...] = tuple(pools)
        self.shared_storage: tuple[SharedLustre, ...] = tuple(storage)
        self.monitoring = monitoring or Monitoring()
        self.os = os
        self.tags: tuple[tuple[str, str], ...] = tag_items
        self.deletion_policy = deletion_policy
        self.removal_policy = (
            RemovalPolicy.RETAIN if deletion_policy is DeletionPolicy.RETAIN else RemovalPolicy.DESTROY
        )
        self.queue_update_strategy = queue_update_strategy
        #: Slurm accounting (``SlurmSettings.Database`` or ``ExternalSlurmdbd``), or None.
        self.slurm_accounting = accounting
        self._overrides: list[tuple[str, Any]] = []
        # (section kind, name, event) -> (the bootstrap's script action, the ARN of the managed policy its nodes get)
        self._bootstraps: dict[tuple[str, str, CustomActionEvent], tuple[ScriptAction, str]] = {}
        self._attached_bootstraps: list[tuple[NodeBootstrap, list[tuple[str, str]], CustomActionEvent]] = []
        self._bootstrap_policies: list[iam.ManagedPolicy] = []
        self._imex_bootstrap: NodeBootstrap | None = None
        self._custom_slurm_settings: list[dict[str, Any]] = []
        if isinstance(accounting, SlurmDatabase):
            self.node.add_validation(AccountingSettingsCheck(self._custom_slurm_settings))
        # queue name -> the Lustre-over-EFA bootstrap's script action and the ARN of the policy its nodes get
        self._lustre_efa: dict[str, tuple[ScriptAction, str]] = {}
        self._lustre_efa_policy: iam.ManagedPolicy | None = None
        #: The per-queue bootstraps configuring the Lustre client for EFA (OnNodeStart), by queue name.
        self.lustre_efa_bootstraps: dict[str, NodeBootstrap] = {}
        #: The queues that configure LNet over EFA, and the EFA interfaces each of their nodes uses for it.
        self.lustre_efa_interfaces: dict[str, int] = {}
        self.node_security_group: ec2.ISecurityGroup | None = (
            node_security_group.security_group
            if isinstance(node_security_group, EfaSecurityGroup)
            else node_security_group
        )
        if node_security_group is not None:
            for shared in self.shared_storage:
                shared.file_system.allow_clients_from(node_security_group)
        self.custom_ami: str | None = None
        if isinstance(custom_ami, GpuNodeImage):
            self.custom_ami = ssm.StringParameter.value_for_typed_string_parameter_v2(
                self, custom_ami.ssm_parameter_name, ssm.ParameterValueType.AWS_EC2_IMAGE_ID
            )
        else:
            self.custom_ami = custom_ami

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
        if deletion_policy is DeletionPolicy.RETAIN:
            self._warn_retained_dependencies()
        self._warn_placement_groups_on_blocks()
        add_warning(
            self,
            WarningId.PARALLELCLUSTER_CREATE_TIME_SETTINGS,
            create_time_settings(
                head_node=head_node, queues=self.queues, login_nodes=self.login_nodes, strategy=queue_update_strategy
            ),
        )
        self._set_up_lustre_over_efa()
        self._mark_lustre_efa()
        Aspects.of(self).add(_WriteYaml(self))

    @property
    def yaml_file_name(self) -> str:
        """The configuration file written next to the templates at synthesis: ``<stack>.<id>.pcluster.yaml``, a
        review artifact (:meth:`write_yaml`: its header lists the CloudFormation references, as YAML mappings, to
        replace with values before ``pcluster create-cluster``)."""
        return f"{Stack.of(self).artifact_id}.{self.node.id}.pcluster.yaml"

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
        if not isinstance(tags, Mapping):
            raise FmTypeError("tags", tags, "a mapping of tag key to value")
        out = []
        for key, value in tags.items():
            check_tag_key("tags (key)", key)  # 1-128 characters, no reserved 'aws:' prefix
            check_str(f"tags[{key!r}]", value, max_length=256, allowed="a tag value of up to 256 characters")
            if known(key) and key.startswith(_RESERVED_TAG_PREFIX):
                raise FmValidationError("tags (key)", key, f"a key not starting with {_RESERVED_TAG_PREFIX!r}")
            out.append((key, value))
        return tuple(out)

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
        for queue in self.queues:
            for resource in queue.compute_resources:
                if resource.capacity.is_capacity_block and resource.placement_group is True:
                    # validators/ec2_validators.py PlacementGroupCapacityTypeValidator (a WARNING in ParallelCluster).
                    add_warning(
                        self,
                        WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK,
                        f"queue {queue.name} compute resource {resource.name} sets a placement group on a Capacity "
                        "Block: insufficient capacity errors may occur from placement constraints outside the "
                        "reservation (ParallelCluster PlacementGroupCapacityTypeValidator); blocks are placed in "
                        "UltraClusters already",
                    )

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
            spec, interfaces, max_nodes = plan
            bootstrap = NodeBootstrap(self, f"LustreEfa-{queue.name}", name=f"lustre-efa-{queue.name}")
            bootstrap.add_step(LUSTRE_EFA_STEP, lustre_lnet_commands(instance_spec=spec))
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
                fs = shared.file_system
                if fs.efa_security_group is not None:
                    # All traffic both ways between the nodes' group and the file system's EFA group (nothing when
                    # they are one group), as the tutorial's "Create Security Groups" step does.
                    fs.allow_efa_clients_from(group)
                fs.register_efa_clients(
                    bootstrap,
                    max_nodes=max_nodes,
                    efa_interfaces_per_node=interfaces,
                    efa_security_group=group,
                    subnets=list(queue.subnets),
                )
            self.lustre_efa_bootstraps[queue.name] = bootstrap
            self._lustre_efa[queue.name] = (action, policy.managed_policy_arn)
            self.lustre_efa_interfaces[queue.name] = interfaces

    def _mark_lustre_efa(self) -> None:
        """With an EFA-enabled shared file system, :data:`LUSTRE_EFA_METADATA_KEY` on the resource: each queue's EFA
        interfaces per node for LNet, 0 for a queue that mounts over TCP (what ``fmc plan`` counts), in the plan record
        (:mod:`fmconstructs._plan_metadata`) the resource always carries."""
        marker = None
        if any(shared.file_system.efa_enabled for shared in self.shared_storage):
            marker = {queue.name: self.lustre_efa_interfaces.get(queue.name, 0) for queue in self.queues}
        write_plan_record(self.resource, PlanKind.NODE_GROUP, backend="parallelcluster", lustre_efa_interfaces=marker)

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

    # --- configuration --------------------------------------------------------------------------------------------
    def add_override(self, path: str, value: Any) -> None:
        """Set any configuration key the typed props lack: ``path`` is dot-separated keys of the
        ``ClusterConfiguration`` (list items by index, e.g. ``"Scheduling.SlurmQueues.0.JobExclusiveAllocation"``).
        Applied in order, after the typed configuration is built."""
        check_str("path", path, pattern=re.compile(r"[A-Za-z0-9]+(\.[A-Za-z0-9]+)*"), allowed="dot-separated keys")
        self._overrides.append((path, value))

    # --- node bootstrap -------------------------------------------------------------------------------------------
    def add_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        queues: Sequence[str] | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` (fmconstructs' node-side steps) on the compute nodes of ``queues`` (default: every queue)
        as their ``CustomActions.<event>`` (default OnNodeConfigured; queues also take OnNodeStart: User Guide
        "custom-bootstrap-actions-v3": OnNodeStart runs before the node's own configuration, OnNodeConfigured after
        it, both as root; "custom-bootstrap-actions-config-v3": ``Script`` is an ``s3://`` URL, ``Args`` its
        arguments, ``Iam.S3Access`` lets the node read it).

        The action is :meth:`NodeBootstrap.script_action`: the static loader's URL and, as ``Args``, the archive's
        URL, sha256 and deploy-time values. ParallelCluster runs the script with ``Args`` as its positional arguments
        in order (aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-environment/files/
        custom_action_executor/custom_action_executor.py at f75d84c, lines 712 and 314; the file has since moved to
        cookbooks/aws-parallelcluster-platform/files/custom_action_executor/ with the same code:
        ``ScriptDefinition(url=s["Script"], args=s["Args"])`` and ``subprocess.run([exe_script.path] +
        (exe_script.args or []), ...)``, no shell), which
        is what the static loader reads. Each queue gets ``Iam.S3Access`` entries for exactly the loader and the
        archive objects (``BucketName`` + ``KeyName``: aws-parallelcluster 3.16.1 ``S3Access.resource_regex`` grants
        ``s3:Get*``/``s3:List*`` on ``<bucket>/<key>`` only, cdk_builder_utils.py ``_add_s3_access_policies_to_role``)
        and ``Iam.AdditionalIamPolicies`` with one customer managed policy created here: log writes to the
        bootstrap's log group plus ``statements`` (e.g. ``aps:RemoteWrite`` for the observability collectors). The
        policy is named ``parallelcluster-<cluster name>-<Region>-bootstrap<n>``: the provider's role may attach only
        customer managed policies whose ARN matches ``policy/parallelcluster*`` or ``policy/parallelcluster/*``
        (aws/aws-parallelcluster cloudformation/policies/parallelcluster-policies.yaml,
        ``DefaultParallelClusterIamAdminPolicy`` Sid ``IamPolicy``: ``iam:AttachRolePolicy`` with ``ArnLike
        iam:PolicyARN``; cloudformation/custom_resource/cluster.yaml gives the provider's Lambda role that policy
        through its nested policies stack, ``EnableIamAdminAccess: true``).

        Returns that policy. Add the bootstrap's steps before calling this (the archive is built now). A queue takes
        one bootstrap per event and no ``on_node_start``/``on_node_configured`` of its own for that event. A failing
        step fails the node's bootstrap ("If a custom action fails, the instance bootstrap also fails": the loader
        exits non-zero).
        """
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        if event not in QUEUE_EVENTS:
            raise FmValidationError(
                "event", event.value, "OnNodeStart or OnNodeConfigured for queues (QueueCustomActionsSchema)"
            )
        names = [q.name for q in self.queues]
        targets = self._targets("queues", queues, names, "queue")
        for name in targets:
            queue = self.queues[names.index(name)]
            own = queue.on_node_start if event is CustomActionEvent.ON_NODE_START else queue.on_node_configured
            if own is not None:
                field_name = _EVENT_FIELDS[event]
                raise FmValidationError(
                    "queues", name, f"a queue without its own {field_name} (the bootstrap is its {event.value})"
                )
            if (_QUEUE, name, event) in self._bootstraps:
                raise FmValidationError(
                    "queues", name, "a queue without a node bootstrap already (one per queue and event)"
                )
        return self._attach(
            bootstrap, [(_QUEUE, n) for n in targets], event, statements, f"ParallelCluster queues {', '.join(targets)}"
        )

    def add_head_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` on the head node as its ``HeadNode.CustomActions.<event>`` (OnNodeStart,
        OnNodeConfigured or OnNodeUpdated: HeadNodeCustomActionsSchema; OnNodeUpdated runs on ``pcluster
        update-cluster``). Same delivery and IAM as :meth:`add_node_bootstrap`: ``HeadNode.Iam.S3Access`` on the two
        objects (HeadNodeIamSchema has S3Access) and the managed policy in ``HeadNode.Iam.AdditionalIamPolicies``.
        One bootstrap per event; not with the head node's own ``on_node_start``/``on_node_configured`` for that
        event. Returns the policy."""
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        field_name = _EVENT_FIELDS.get(event)
        if field_name is not None and getattr(self.head_node, field_name) is not None:
            raise FmValidationError("event", event.value, f"an event the head node has no {field_name} of its own for")
        if (_HEAD, _HEAD, event) in self._bootstraps:
            raise FmValidationError("event", event.value, "an event without a head node bootstrap already")
        return self._attach(bootstrap, [(_HEAD, _HEAD)], event, statements, "the ParallelCluster head node")

    def add_login_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        pools: Sequence[str] | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` on the login nodes of ``pools`` (default: every pool) as their
        ``LoginNodes.Pools[].CustomActions.<event>`` (OnNodeStart, OnNodeConfigured or OnNodeUpdated:
        LoginNodesCustomActionsSchema). Login pools have no ``Iam.S3Access`` (LoginNodesIamSchema: InstanceRole and
        AdditionalIamPolicies only), so the managed policy also grants ``s3:GetObject`` on exactly the loader and the
        archive objects. One bootstrap per pool and event. Returns the policy."""
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        names = [p.name for p in self.login_nodes]
        if not names:
            raise FmValidationError("pools", pools, "a cluster with login_nodes")
        targets = self._targets("pools", pools, names, "login node pool")
        for name in targets:
            if (_LOGIN, name, event) in self._bootstraps:
                raise FmValidationError(
                    "pools", name, "a pool without a node bootstrap already (one per pool and event)"
                )
        return self._attach(
            bootstrap,
            [(_LOGIN, n) for n in targets],
            event,
            statements,
            f"ParallelCluster login pools {', '.join(targets)}",
            read_in_policy=True,
        )

    @staticmethod
    def _targets(parameter: str, given: Sequence[str] | None, names: list[str], noun: str) -> list[str]:
        if given is None:
            return list(names)
        targets = list(check_sequence(parameter, given, lambda p, v: check_str(p, v)))
        if not targets:
            raise FmValidationError(parameter, [], f"at least one {noun} name (or None for every {noun})")
        for name in targets:
            if name not in names:
                raise FmValidationError(parameter, name, f"a {noun} of this cluster: {', '.join(names)}")
        return targets

    def _attach(
        self,
        bootstrap: NodeBootstrap,
        targets: list[tuple[str, str]],
        event: CustomActionEvent,
        statements: Sequence[iam.PolicyStatement],
        where: str,
        *,
        read_in_policy: bool = False,
    ) -> iam.ManagedPolicy:
        extra = check_sequence(
            "statements", statements, lambda p, v: check_instance(p, v, iam.PolicyStatement, "an iam.PolicyStatement")
        )
        action = bootstrap.script_action()
        index = len(self._bootstrap_policies) + 1
        own = [action.read_statement()] if read_in_policy else []
        policy = iam.ManagedPolicy(
            self,
            f"NodeBootstrapPolicy{index}",
            managed_policy_name=self._policy_name(index),
            description=f"fmconstructs node bootstrap {bootstrap.name} ({event.value}) on {where}",
            statements=[action.log_statement(), *own, *extra],
        )
        self._bootstrap_policies.append(policy)
        for kind, name in targets:
            self._bootstraps[(kind, name, event)] = (action, policy.managed_policy_arn)
        self._attached_bootstraps.append((bootstrap, targets, event))
        return policy

    def _policy_name(self, index: int | str) -> str:
        """``parallelcluster-<cluster name>-<Region>-bootstrap<n>`` (``-<index>`` for a str index such as
        ``lustre-efa``): the prefix the provider's role may attach (see :meth:`add_node_bootstrap`); cluster names are
        unique per Region and IAM names per account."""
        suffix = f"bootstrap{index}" if isinstance(index, int) else index
        name = f"{POLICY_NAME_PREFIX}-{self.cluster_name}-{Stack.of(self).region}-{suffix}"
        # 15 + 1 + at most 60 (CLUSTER_NAME_PATTERN) + 1 + a Region name + "-bootstrapN": far below 128 characters.
        if known(name) and len(name) > POLICY_NAME_MAX_LENGTH:
            raise FmValidationError("managed_policy_name", name, f"at most {POLICY_NAME_MAX_LENGTH} characters")
        return name

    def enable_imex(self, *, bootstrap: NodeBootstrap | None = None) -> NodeBootstrap:
        """NVIDIA IMEX for the cluster's P6e-GB200 UltraServer queues, as the ParallelCluster User Guide
        "support-nvidia-imex-p6e-gb200-instance" documents it (:mod:`fmconstructs.parallelcluster.imex`): the
        ``91_nvidia_imex_prolog.sh`` Slurm prolog installed in ``/opt/slurm/etc/scripts/prolog.d/`` by a head node
        custom action, and ``Scheduling.SlurmSettings.CustomSlurmSettings`` ``PrologFlags: "Alloc,NoHold"`` and
        ``MessageTimeout: 240``. Jobs that need IMEX run exclusively (``--exclusive``, or a queue with
        ``job_exclusive_allocation=True``): the prolog skips other jobs.

        ``bootstrap`` (default: a new one run as the head node's OnNodeStart, as the page does): the head node
        bootstrap that gets the ``nvidia-imex-prolog`` step; when you give one, attach it to the head node with
        :meth:`add_head_node_bootstrap` after this call (checked at synthesis). Returns the bootstrap."""
        if self._imex_bootstrap is not None:
            raise FmValidationError("enable_imex", "called twice", "one call per cluster")
        ultra = [
            queue.name
            for queue in self.queues
            if any(r.spec is not None and r.spec.ultraserver_types for r in queue.compute_resources)
        ]
        if not ultra:
            raise FmValidationError(
                "enable_imex", [q.name for q in self.queues], "a cluster with an UltraServer (p6e-gb200) queue"
            )
        own = bootstrap is None
        if bootstrap is None:
            bootstrap = NodeBootstrap(self, "ImexBootstrap", name=IMEX_BOOTSTRAP_NAME)
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        bootstrap.add_step(IMEX_STEP, files=imex_prolog_files())
        self._imex_bootstrap = bootstrap
        self._custom_slurm_settings.extend(dict(setting) for setting in IMEX_CUSTOM_SLURM_SETTINGS)
        if own:
            self.add_head_node_bootstrap(bootstrap, event=CustomActionEvent.ON_NODE_START)
        self.node.add_validation(_ImexOnHeadNode(self))
        return bootstrap

    def enable_node_health(
        self,
        options: NodeHealthOptions | None = None,
        *,
        queues: Sequence[str] | None = None,
        head_bootstrap: NodeBootstrap | None = None,
        node_bootstrap: NodeBootstrap | None = None,
    ) -> list[NodeBootstrap]:
        """Node-join checks on the GPU queues ``queues`` (default: every queue), :mod:`.health`: each node runs the
        boot gate as its queue's OnNodeConfigured action (never drained while healthy; a failing node fails its
        bootstrap, drained with the failing check as reason, and is replaced) and, with ``options.prolog_checks``,
        the PROLOG checks before every job from ``/opt/slurm/etc/scripts/prolog.d/`` (installed by
        ``head_bootstrap``, default: a new one run as the head node's OnNodeConfigured; give your own to share it,
        then attach it with :meth:`add_head_node_bootstrap`). ``options`` default: ``NodeHealthOptions()``. Each
        queue takes no other OnNodeConfigured bootstrap. ``node_bootstrap``: for one queue, add the ``node-health``
        step to this bootstrap (the queue's OnNodeConfigured, which you attach with :meth:`add_node_bootstrap` after
        this call) instead of a new one, so the checks run after your own steps. Returns the bootstraps created or
        extended."""
        from .health import enable_node_health

        return enable_node_health(
            self,
            options or NodeHealthOptions(),
            queues=queues,
            head_bootstrap=head_bootstrap,
            node_bootstrap=node_bootstrap,
        )

    def enable_slurm_topology(
        self,
        *,
        bootstrap: NodeBootstrap | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_START,
        interval_minutes: int = 5,
    ) -> NodeBootstrap:
        """Slurm ``topology/tree`` for the P5/P6 queues, refreshed every ``interval_minutes`` on the head node from
        EC2 DescribeInstanceTopology (:mod:`.topology`): ``TopologyPlugin: topology/tree`` in CustomSlurmSettings, a
        head node bootstrap (default: a new one run as the head node's ``event``, OnNodeStart) installing a systemd
        timer that rewrites ``/opt/slurm/etc/topology.conf`` and runs ``scontrol reconfigure`` when nodes join or
        leave. Refused on clusters with p6e-gb200 queues (ParallelCluster writes their topology/block itself). With
        your own ``bootstrap``, attach it with :meth:`add_head_node_bootstrap` after this call, giving
        ``statements=fmconstructs.parallelcluster.topology.topology_statements()``. Returns the bootstrap."""
        from .topology import enable_slurm_topology

        return enable_slurm_topology(self, bootstrap=bootstrap, event=event, interval_minutes=interval_minutes)

    def add_custom_slurm_settings(self, settings: Mapping[str, str]) -> None:
        """Add ``Scheduling.SlurmSettings.CustomSlurmSettings`` entries (one ``{name: value}`` item each), e.g.
        :data:`fmconstructs.health.SCRONTAB_SLURM_SETTINGS`. ParallelCluster refuses the settings of its deny list
        (aws-parallelcluster pcluster/validators/slurm_settings_validator.py ``SLURM_SETTINGS_DENY_LIST``)."""
        if not isinstance(settings, Mapping):
            raise FmTypeError("settings", settings, "a mapping of Slurm setting name to value")
        for name, value in settings.items():
            check_str("settings (name)", name, pattern=re.compile(r"[A-Za-z][A-Za-z0-9]*"), allowed="a Slurm name")
            check_str(f"settings[{name!r}]", value, pattern=re.compile(r"[^\n]*"), allowed="one line")
            self._custom_slurm_settings.append({name: value})

    def add_slurm_scripts(
        self,
        *pieces: SlurmScriptPiece,
        prolog_flags: Sequence[str] = (),
        bootstrap: NodeBootstrap | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
    ) -> NodeBootstrap:
        """Run ``pieces`` around every job (:mod:`.slurm_scripts`): a head node bootstrap (default: a new one run as
        the head node's ``event``, OnNodeConfigured; give your own, then attach it with
        :meth:`add_head_node_bootstrap`) copies
        them into ``/opt/slurm/etc/scripts/prolog.d/`` and ``epilog.d/``, which ParallelCluster's ``slurm.conf``
        runs on every compute node; ``prolog_flags`` are merged into one ``PrologFlags`` custom setting. Returns the
        bootstrap."""
        from .slurm_scripts import add_slurm_scripts

        return add_slurm_scripts(self, pieces, prolog_flags=prolog_flags, bootstrap=bootstrap, event=event)

    def _apply_bootstraps(self, config: dict[str, Any]) -> None:
        sections: dict[tuple[str, str], dict[str, Any]] = {(_HEAD, _HEAD): config["HeadNode"]}
        for queue in config["Scheduling"]["SlurmQueues"]:
            sections[(_QUEUE, queue["Name"])] = queue
        for pool in config.get("LoginNodes", {}).get("Pools", []):
            sections[(_LOGIN, pool["Name"])] = pool
        for (kind, name, event), (action, policy_arn) in self._bootstraps.items():
            section = sections[(kind, name)]
            section.setdefault("CustomActions", {})[event.value] = {
                "Script": action.script_url,
                "Args": list(action.args),
            }
            self._grant(section, kind, action, policy_arn)
        for name, (action, policy_arn) in self._lustre_efa.items():
            # First in the queue's OnNodeStart, before its own action or bootstrap (a Sequence runs in order, before
            # ParallelCluster's own bootstrap: User Guide custom-bootstrap-actions-config-v3).
            section = sections[(_QUEUE, name)]
            actions = section.setdefault("CustomActions", {})
            lnet = {"Script": action.script_url, "Args": list(action.args)}
            start = actions.get(CustomActionEvent.ON_NODE_START.value)
            if start is None:
                actions[CustomActionEvent.ON_NODE_START.value] = lnet
            else:
                self._check_sequence_version(name)
                rest = start.get("Sequence", [start])
                actions[CustomActionEvent.ON_NODE_START.value] = {"Sequence": [lnet, *rest]}
            self._grant(section, _QUEUE, action, policy_arn)

    def _check_sequence_version(self, queue: str) -> None:
        if tuple(int(part) for part in self.version.split(".")) < SEQUENCE_MIN_VERSION:
            raise FmValidationError(
                "version",
                self.version,
                f"3.6.0 or later: queue {queue} runs the Lustre-over-EFA step and another OnNodeStart action as a "
                "CustomActions Sequence (User Guide custom-bootstrap-actions-config-v3)",
            )

    @staticmethod
    def _grant(section: dict[str, Any], kind: str, action: ScriptAction, policy_arn: str) -> None:
        """``Iam.S3Access`` on the action's objects (not on login pools) and its policy in AdditionalIamPolicies."""
        iam_config = section.setdefault("Iam", {})
        if kind != _LOGIN:
            access = iam_config.setdefault("S3Access", [])
            for key in action.object_keys:
                entry = {"BucketName": action.bucket.bucket_name, "KeyName": key}
                if entry not in access:
                    access.append(entry)
        policies = iam_config.setdefault("AdditionalIamPolicies", [])
        if {"Policy": policy_arn} not in policies:
            policies.append({"Policy": policy_arn})

    def _raw_config(self) -> dict[str, Any]:
        image: dict[str, Any] = {"Os": self.os.value}
        if self.custom_ami is not None:
            image["CustomAmi"] = self.custom_ami
        config: dict[str, Any] = {
            "Image": image,
            "HeadNode": self.head_node.to_config(),
            "Scheduling": {"Scheduler": "slurm", "SlurmQueues": [q.to_config() for q in self.queues]},
            "Monitoring": self.monitoring.to_config(),
        }
        if self.login_nodes:
            config["LoginNodes"] = {"Pools": [p.to_config() for p in self.login_nodes]}
        if self.shared_storage:
            config["SharedStorage"] = [s.to_config() for s in self.shared_storage]
        slurm_settings: dict[str, Any] = {"QueueUpdateStrategy": self.queue_update_strategy.value}
        if self._custom_slurm_settings:
            slurm_settings["CustomSlurmSettings"] = merge_prolog_flag_settings(self._custom_slurm_settings)
        config["Scheduling"]["SlurmSettings"] = slurm_settings
        if self.slurm_accounting is not None:
            apply_slurm_accounting(self.slurm_accounting, config)
        self._apply_bootstraps(config)
        if self.node_security_group is not None:
            group_id = self.node_security_group.security_group_id
            sections = [config["HeadNode"], *config["Scheduling"]["SlurmQueues"]]
            sections += config.get("LoginNodes", {}).get("Pools", [])
            for section in sections:
                section["Networking"].setdefault("AdditionalSecurityGroups", []).append(group_id)
        if self.tags:
            config["Tags"] = [{"Key": k, "Value": v} for k, v in self.tags]
        for path, value in self._overrides:
            _set_path(config, path, value)
        return config

    def to_dict(self) -> dict[str, Any]:
        """The ``ClusterConfiguration`` as deployed (deploy-time values as CloudFormation intrinsics)."""
        resolved: dict[str, Any] = Stack.of(self).resolve(self._raw_config())
        return resolved

    def to_yaml(self) -> str:
        """:meth:`to_dict` as YAML (for the ``pcluster`` CLI, after replacing intrinsics with values)."""
        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    def write_yaml(self, path: str | Path) -> Path:
        """Write :meth:`to_yaml` to ``path`` under a header of comments that labels it a review artifact and lists
        the CloudFormation references it holds (:func:`fmconstructs.parallelcluster.review.review_header`); returns
        the path."""
        if not isinstance(path, str | Path):
            raise FmTypeError("path", path, "a str or pathlib.Path")
        target = Path(path)
        config = self.to_dict()
        target.write_text(review_header(self.node.path, config) + str(yaml.safe_dump(config, sort_keys=False)))
        return target

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
