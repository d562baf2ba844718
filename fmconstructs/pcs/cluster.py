"""PcsCluster: an AWS PCS cluster (managed Slurm controller) with the network, IAM and IMEX set-up its nodes share.

aws-cdk-lib has only the L1 ``CfnCluster``; this construct validates every prop at construction and owns what all
node groups of the cluster share:

- **Security group** (:attr:`PcsCluster.security_group`): the rules the PCS API reference lists for the cluster's
  network interface (``Networking.securityGroupIds``): all traffic in from itself, all traffic out to itself and to
  0.0.0.0/0. Every node group puts the same group on its nodes, so the controller, login nodes and compute nodes
  reach each other on every Slurm port (slurmctld 6817, slurmd 6818, slurmdbd 6819, slurmrestd 6820, srun's
  ephemeral ports) and nothing else reaches them.
- **EFA security group** (:attr:`PcsCluster.efa_security_group`, created with the first GPU node group): shared by
  all GPU node groups and by an EFA-enabled FSx for Lustre file system, since EFA traffic only flows inside one group.
- **Instance profile** (:attr:`PcsCluster.instance_profile`, created on first use): see :mod:`.iam`.
- **Node health** (``node_health``): the cluster's ``Prolog`` runs the node checks before every job, its
  ``HealthCheckProgram`` re-checks idle nodes between jobs and the GPU node groups gate each node at boot
  (:mod:`.health`); with IMEX too, the IMEX prolog runs after the checks.
- **Prolog failures requeue, not hold**: whenever the library sets the cluster's ``Prolog`` (node health, IMEX,
  prolog pieces), ``SchedulerParameters`` gets ``nohold_on_prolog_fail``, merged with any options you give (Slurm
  "Prolog and Epilog Guide": otherwise a job whose prolog failed waits held until an administrator releases it).
- **Custom settings** (``slurm_settings``): names from the PCS User Guide's cluster list
  (:data:`~fmconstructs.pcs.slurm.CLUSTER_SETTINGS`), a :class:`ClusterSetting` or the name as a string;
  :attr:`PcsCluster.slurm_custom_settings` gives what the template renders, as ``(name, value)`` pairs.
- **Prolog and epilog pieces** (:meth:`PcsCluster.add_slurm_scripts`, :mod:`.slurm_scripts`): with a piece, the
  ``Prolog``/``Epilog`` become runners of ``/opt/fmconstructs/slurm/prolog.d``/``epilog.d`` that every GPU node group
  installs (``monitor_pcs_cluster`` registers the dcgm-exporter job mapping this way).
- **IMEX** (``enable_imex``): sets the cluster's Slurm ``Prolog`` to the IMEX prolog that every node group of the
  cluster installs (:mod:`.user_data`) and ``PrologFlags=Alloc,NoHold``, both as the PCS User Guide "Configure
  UltraServer instances" (capacity-blocks-nvidia-imex) deploys them; required for UltraServer node groups. Jobs on
  UltraServer queues are exclusive (the prolog restarts IMEX on the job's nodes): queues of UltraServer node groups
  get ``OverSubscribe=EXCLUSIVE`` (:class:`~fmconstructs.pcs.PcsQueue`), and users submit with ``--exclusive``.

**Any network.** The VPC, subnet and security group may be imported by id (``Vpc.from_vpc_attributes``,
``Subnet.from_subnet_id``, ``SecurityGroup.from_security_group_id``), also with ids known only at deploy time
(``CfnParameter``, ``Fn.import_value``): nothing here reads a subnet's zone, and node groups check zones only when
they are known. Names, counts, idle times and AMI ids may be deploy-time values too; their checks are skipped.

**What an operator needs** (properties, emitted as ``CfnOutput`` by the example stacks): :attr:`PcsCluster.cluster_id`,
:attr:`PcsCluster.cluster_arn`, :attr:`PcsCluster.slurm_endpoints` (``GetAtt Endpoints``: the Slurm controller's
private address and port, a list of objects that only the PCS API or a custom resource can read),
:attr:`PcsCluster.slurm_controller_endpoint_command` (the CLI command that prints it) and
:attr:`PcsCluster.login_command` (a Session Manager shell on a login node).

**Controller size** (``size``): the PCS API reference (``CreateCluster.size``) sizes the managed controller for a
number of compute nodes (login nodes included: PCS runs them as a compute node group) and jobs
(:data:`~fmconstructs.pcs.slurm.CONTROLLER_SIZE_LIMITS`: SMALL 32 nodes and 256 jobs, MEDIUM 512 and 8,192, LARGE
2,048 and 16,384). By default the cluster takes the smallest size that holds the sum of its node groups' maximum node
counts, resolved at synthesis from the groups added by then (:mod:`.controller_size`). A node group that would take
the sum past an explicit size, or past LARGE, is refused when it is created, naming every group and its count. A
deploy-time count cannot be checked: the cluster warns (``fmconstructs:pcs-size-unknown-node-count``) and the
automatic size is at least MEDIUM. **Changing the size replaces the cluster**: ``Size`` is in the
``createOnlyProperties`` of the CloudFormation registry schema of ``AWS::PCS::Cluster`` (with Name and Networking; the
schema as bundled by cfn-lint 1.58.0), i.e. "Update requires: Replacement", and the PCS User Guide "Updating a cluster
in AWS PCS" (working-with_clusters_update, Limitations) lists cluster size among what needs a new cluster.
``ClusterId`` is create-only in the schemas of ``AWS::PCS::ComputeNodeGroup`` and ``AWS::PCS::Queue``, so replacing
the cluster replaces every node group and queue (running jobs and nodes are lost). Adding nodes past a size boundary
changes the automatic size too: pin ``size=`` on a cluster in production.

**Removal policy** (``removal_policy``): what happens to the ``AWS::PCS::Cluster`` when CloudFormation stops managing
it (stack deleted, resource removed from the app, or replaced by a create-only change). With Slurm accounting
(``accounting=STANDARD``) the cluster holds the accounting database (job history, associations: PCS User Guide
"Slurm accounting in AWS PCS", slurm-accounting: PCS creates and manages it for the cluster; that it goes with the
cluster is UNCONFIRMED, not stated there), so the default is RETAIN; without accounting it holds nothing that outlives
its jobs, so the default is DESTROY. The trade-off: a retained cluster keeps billing (its controller, and accounting
"incurs additional charges", same page; the per-size hourly price is UNCONFIRMED here) until you delete it yourself
(``aws pcs delete-cluster --cluster-identifier <id>``); its network interface stays in its subnet and security group,
so the cluster's own security group is retained with it and a VPC in the same stack cannot be deleted until the
cluster is. Node groups and queues are never retained: they hold no data (``ClusterId`` is create-only in their
schemas, so they follow a replaced cluster) and retained GPU node groups would keep their instances running.

Slurm topology: PCS inspects an UltraServer Capacity Block and configures the Slurm topology plugin itself (PCS User
Guide "Configure UltraServer instances", "Automatic topology selection"), and offers topology/tree on a queue (PCS
User Guide "Network topology-aware scheduling in AWS PCS"; how a queue enables it is UNCONFIRMED, see
:mod:`fmconstructs.topology`); ``TopologyPlugin`` is not a setting PCS accepts, so this construct sets no topology.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import jsii
from aws_cdk import Aws, Duration, IAnyProducer, IResolvable, IResolveContext, IStringProducer, Lazy, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct, IValidation

from .._replacement import check_removal_policy, warn_fixed_name
from .._validate import check_bool, check_count, check_enum, check_str_sequence, known, located
from ..budgets import check_new_group_id, check_template_budgets, node_group_scope, node_groups_per_stack
from ..compute.slurm_scripts import SlurmHook, SlurmScriptPiece, check_pieces
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning
from ..health import NodeHealthOptions
from ..networking import EfaSecurityGroup
from . import rules
from ._checks import (
    CLUSTER_NAME_LENGTH,
    check_name,
    check_optional_subnet,
    check_scope_id,
    check_security_group,
    check_tags,
    check_vpc,
    idle_seconds,
)
from .controller_size import NodeCount, effective_size, room_for, size_problem
from .health import (
    PROLOG_RUNNER_PATH,
    check_node_health,
    cluster_runs_idle_checks,
    cluster_runs_prolog_checks,
    idle_check_settings,
)
from .iam import PcsInstanceProfile
from .slurm import (
    CLUSTER_SETTINGS,
    DEFAULT_SLURM_VERSION,
    AccountingMode,
    ClusterSetting,
    ClusterSettings,
    ControllerSize,
    QueueSettings,
    SlurmVersion,
    check_settings,
    coerce_slurm_version,
    merge_prolog_flags,
    settings_in_order,
    to_cfn_settings,
    without_prolog_holds,
)
from .slurm_scripts import EPILOG_RUNNER_PATH, RESERVED_PROLOG_NAMES, InstallSlurmScripts
from .user_data import IMEX_PROLOG_FLAGS, IMEX_PROLOG_PATH

if TYPE_CHECKING:
    from .node_group import PcsGpuNodeGroup, PcsGpuNodeGroupOptions, PcsLoginNodeGroup, PcsLoginNodeGroupOptions
    from .queue import PcsQueue

#: ``AccountingRequest.defaultPurgeTimeInDays`` (botocore PCS model): -1 (never purge) .. 10000; "0 isn't a valid
#: value".
_MAX_PURGE_DAYS = 10000


#: GPU node groups a PcsCluster keeps in its own stack (then nested stacks of as many: :func:`~fmconstructs.budgets.
#: node_group_scope`). A PCS GPU group is about 15.5 KB of template (benchmarks/templates.py: p5.48xlarge, 32 EFA
#: interfaces), so 48 groups are about 770 KB of CloudFormation's 1 MB. Context ``fmconstructs:node-groups-per-stack``
#: overrides it (an app deployed with more than 48 groups in one stack keeps them there with a larger value).
GPU_NODE_GROUPS_PER_STACK = 48


@jsii.implements(ec2.IConnectable)
class PcsCluster(Construct):
    """An AWS PCS cluster running Slurm (``AWS::PCS::Cluster``, child id "Resource").

    :param vpc: the VPC of the cluster and its nodes (may be imported by id).
    :param subnet: the one subnet PCS puts the controller's network interface in (PCS takes exactly one); may be
        imported without its zone. Default: the VPC's first private subnet.
    :param slurm_version: a :class:`SlurmVersion` (24.11, 25.05, 25.11, 26.05). Default: 25.11, pinned (see
        :data:`~fmconstructs.pcs.slurm.DEFAULT_SLURM_VERSION` for why not the newest); the node AMIs must carry the
        same Slurm version. Its value as a string (``"25.11"``) is refused from 0.3.0.
    :param size: controller size (:class:`ControllerSize`). Default None: the smallest size that holds the sum of the
        node groups' maximum node counts, login nodes included (at least MEDIUM when a count is a deploy-time value);
        see the module docstring. Changing it (also by adding nodes past a size's limit when automatic) **replaces
        the cluster, and with it every node group and queue** (CloudFormation: "Update requires: Replacement").
    :param accounting: Slurm accounting (``SlurmConfiguration.Accounting.Mode``); default NONE. STANDARD: PCS runs
        slurmdbd and an accounting database it manages (in an AWS-owned account; ``slurmdbd.conf`` is not yours), so
        ``sacct`` shows each job's user, account, duration and resources, and ``sacctmgr`` users, accounts and QOS give
        limits and fair-share (``AccountingStorageEnforce`` in ``slurm_settings``). Needs Slurm 24.11 or later (every
        :class:`SlurmVersion` is); accounting "incurs additional charges" and cannot be turned off on a cluster that
        has it: turning it off needs a new cluster (PCS User Guide "Slurm accounting in AWS PCS", slurm-accounting).
    :param accounting_purge_time_days: ``DefaultPurgeTimeInDays`` (-1 = keep forever, or 1 .. 10000); STANDARD only.
        Default: PCS's (-1).
    :param scale_down_idle_time: how long a dynamic node may idle before PCS terminates it (1 s .. 10,000,000 s, whole
        seconds; a deploy-time amount as ``Duration.seconds(token)``). Default: PCS's (600 s).
    :param slurm_settings: cluster-level custom settings, keyed by :class:`ClusterSetting` or by a name on the PCS
        User Guide's cluster list (:data:`~fmconstructs.pcs.slurm.CLUSTER_SETTINGS`; any case); other names are
        refused. ``SchedulerParameters`` you give are kept (``nohold_on_prolog_fail`` is added when the library sets
        the ``Prolog``); the ``HealthCheck*`` settings are the library's while ``node_health`` runs idle checks.
    :param enable_imex: install and run the NVIDIA IMEX prolog (needs Slurm >= 25.05; sets ``Prolog``, so
        ``slurm_settings`` must not, and ``PrologFlags=Alloc,NoHold``, merged with any flags ``slurm_settings``
        gives). Required before adding UltraServer node groups. Default False.
    :param node_health: node-join checks (:class:`~fmconstructs.health.NodeHealthOptions`): the default of every GPU
        node group (each may give its own); with ``prolog_checks`` the cluster's ``Prolog`` is the runner of
        :data:`~fmconstructs.pcs.health.PROLOG_DIR` (so ``slurm_settings`` must not set ``Prolog``); with
        ``idle_check_interval_seconds`` (the default) its ``HealthCheckProgram`` is the between-jobs check with
        ``HealthCheckInterval`` and ``HealthCheckNodeState`` from the options. Default None: no checks.
    :param security_group: default: a new group with the rules PCS documents (see the module docstring). A given
        group (may be imported by id) must already have them.
    :param cluster_name: 3-40 characters, a letter then letters, digits or '-' (PCS ``CreateCluster.clusterName``).
        Default: generated by CloudFormation.
    :param tags: tags of the cluster resource.
    :param removal_policy: RETAIN or DESTROY for the ``AWS::PCS::Cluster`` (and the security group this construct
        creates). Default: RETAIN with ``accounting=STANDARD``, DESTROY without (see the module docstring: a retained
        cluster keeps billing). A ``cluster_name`` warns ``fmconstructs:fixed-name-blocks-replacement``: Name,
        Networking and Size are create-only, and a replacement with the same name fails.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet | None = None,
        slurm_version: SlurmVersion = DEFAULT_SLURM_VERSION,
        size: ControllerSize | None = None,
        accounting: AccountingMode = AccountingMode.NONE,
        accounting_purge_time_days: int | None = None,
        scale_down_idle_time: Duration | None = None,
        slurm_settings: ClusterSettings | None = None,
        enable_imex: bool = False,
        security_group: ec2.ISecurityGroup | None = None,
        cluster_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        removal_policy: RemovalPolicy | None = None,
        node_health: NodeHealthOptions | None = None,
    ) -> None:
        check_scope_id(scope, id)
        vpc = check_vpc("vpc", vpc)
        subnet = check_optional_subnet("subnet", subnet)
        self.slurm_version = coerce_slurm_version(slurm_version)
        self.requested_size = None if size is None else check_enum("size", size, ControllerSize)
        self.accounting = check_enum("accounting", accounting, AccountingMode)
        self.imex_enabled = check_bool("enable_imex", enable_imex)
        self.node_health = check_node_health("node_health", node_health)
        if security_group is not None:
            security_group = check_security_group("security_group", security_group)
        cluster_name = check_name("cluster_name", cluster_name, CLUSTER_NAME_LENGTH)
        tag_map = check_tags("tags", tags)
        idle = idle_seconds("scale_down_idle_time", scale_down_idle_time)
        purge_days = check_accounting_purge_days(self.accounting, accounting_purge_time_days)
        if removal_policy is None:
            removal_policy = (
                RemovalPolicy.RETAIN if self.accounting is AccountingMode.STANDARD else RemovalPolicy.DESTROY
            )
        self.removal_policy = check_removal_policy("removal_policy", removal_policy)
        super().__init__(scope, id)
        self.vpc = vpc
        self._slurm_settings = self._build_slurm_settings(subnet=subnet, slurm_settings=slurm_settings)
        self.subnet: ec2.ISubnet = subnet or vpc.private_subnets[0]
        self.security_group: ec2.ISecurityGroup = self._build_security_group(security_group)
        self.connections = ec2.Connections(security_groups=[self.security_group])
        self.resource = self._build_resource(cluster_name=cluster_name, purge_days=purge_days, idle=idle, tags=tag_map)
        self._efa_security_group: EfaSecurityGroup | None = None
        self._instance_profile: PcsInstanceProfile | None = None
        self._queue_names: set[str] = set()
        self._login_node_groups: list[PcsLoginNodeGroup] = []
        self._gpu_node_group_ids: list[str] = []  # add_gpu_node_group's, in order (their stack placement)
        self._node_counts: list[NodeCount] = []
        self._slurm_script_pieces: list[SlurmScriptPiece] = []
        self.node.add_validation(_SizeCheck(self))
        check_template_budgets(self)  # CloudFormation's template limits, at synthesis (issue 30)

    # --- build steps ------------------------------------------------------------------------------------------------
    def _build_slurm_settings(
        self, *, subnet: ec2.ISubnet | None, slurm_settings: ClusterSettings | None
    ) -> dict[str, str]:
        """The checked ``slurm_settings`` with the IMEX prolog and flags, the node-health ``Prolog`` and idle checks,
        and ``nohold_on_prolog_fail`` when the library set the ``Prolog``."""
        settings = self._validate(subnet=subnet, slurm_settings=slurm_settings)
        self._given_settings = frozenset(settings)
        if self.imex_enabled:
            # PCS User Guide capacity-blocks-nvidia-imex, "Deploy the prolog script": Prolog AND PrologFlags.
            settings[ClusterSetting.PROLOG] = IMEX_PROLOG_PATH
            settings[ClusterSetting.PROLOG_FLAGS] = merge_prolog_flags(
                IMEX_PROLOG_FLAGS, settings.get(ClusterSetting.PROLOG_FLAGS), parameter="slurm_settings[PrologFlags]"
            )
        if self.runs_prolog_checks:
            settings[ClusterSetting.PROLOG] = PROLOG_RUNNER_PATH  # runs the checks, then IMEX (pcs/health.py)
        if self.runs_idle_checks and self.node_health is not None:
            settings.update(idle_check_settings(self.node_health))
        if ClusterSetting.PROLOG in settings and ClusterSetting.PROLOG not in self._given_settings:
            settings = without_prolog_holds(settings)
        return settings

    def _build_security_group(self, given: ec2.ISecurityGroup | None) -> ec2.ISecurityGroup:
        """The given group, or a new one with the rules PCS documents (see the module docstring)."""
        if given is not None:
            return given
        group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=self.vpc,
            description="AWS PCS cluster: controller, login and compute nodes reach each other; all outbound",
            allow_all_outbound=True,
        )
        # The group as its own peer: CDK writes a separate rule resource (an inline self-reference is a cycle).
        # Outbound to itself is covered by the all-traffic rule to 0.0.0.0/0.
        group.add_ingress_rule(group, ec2.Port.all_traffic(), "PCS: all traffic from cluster members")
        group.apply_removal_policy(self.removal_policy)
        return group

    def _build_resource(
        self, *, cluster_name: str | None, purge_days: Any, idle: int | float | None, tags: Mapping[str, str] | None
    ) -> pcs.CfnCluster:
        """The ``AWS::PCS::Cluster`` (size and custom settings resolved at synthesis), with its removal policy."""
        resource = pcs.CfnCluster(
            self,
            "Resource",
            name=cluster_name,
            size=Lazy.uncached_string(_SizeProducer(self)),
            scheduler=pcs.CfnCluster.SchedulerProperty(type="SLURM", version=self.slurm_version.value),
            networking=pcs.CfnCluster.NetworkingProperty(
                subnet_ids=[self.subnet.subnet_id], security_group_ids=[self.security_group.security_group_id]
            ),
            slurm_configuration=pcs.CfnCluster.SlurmConfigurationProperty(
                accounting=pcs.CfnCluster.AccountingProperty(
                    mode=self.accounting.value, default_purge_time_in_days=purge_days
                ),
                scale_down_idle_time_in_seconds=idle,
                # Lazy: add_slurm_scripts may set Prolog, Epilog and PrologFlags after construction.
                slurm_custom_settings=Lazy.uncached_any(_SettingsProducer(self), omit_empty_array=True),
            ),
            tags=tags or None,
        )
        resource.apply_removal_policy(self.removal_policy)
        if cluster_name is not None:
            # createOnlyProperties of AWS::PCS::Cluster (CloudFormation registry schema, as bundled by cfn-lint 1.58.0).
            warn_fixed_name(
                self,
                parameter="cluster_name",
                name=cluster_name,
                resource_type="AWS::PCS::Cluster",
                create_only=("Name", "Networking", "Size"),
            )
        return resource

    # --- validation: the cross-property rules (:mod:`.rules`) ---------------------------------------------------------
    def _validate(self, *, subnet: ec2.ISubnet | None, slurm_settings: ClusterSettings | None) -> dict[str, str]:
        rules.a_vpc_without_private_subnets_needs_a_subnet(
            subnet_given=subnet is not None, private_subnets=len(self.vpc.private_subnets)
        )
        settings = check_settings("slurm_settings", slurm_settings, CLUSTER_SETTINGS)
        rules.accounting_storage_enforce_needs_standard_accounting(settings, self.accounting)
        rules.imex_needs_a_slurm_that_runs_it(imex_enabled=self.imex_enabled, slurm_version=self.slurm_version)
        rules.imex_owns_the_prolog(imex_enabled=self.imex_enabled, settings=settings)
        rules.prolog_checks_own_the_prolog(runs_prolog_checks=self.runs_prolog_checks, settings=settings)
        rules.idle_checks_own_the_health_check(runs_idle_checks=self.runs_idle_checks, settings=settings)
        return settings

    @property
    def runs_prolog_checks(self) -> bool:
        """Whether the cluster's ``Prolog`` is the node-health runner (:mod:`.health`)."""
        return cluster_runs_prolog_checks(self.node_health)

    @property
    def runs_idle_checks(self) -> bool:
        """Whether the cluster's ``HealthCheckProgram`` is the between-jobs check (:mod:`.health`)."""
        return cluster_runs_idle_checks(self.node_health)

    # --- what node groups and operators need -----------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        """The PCS cluster id (``pcs_...``, ``GetAtt Id``), as the PCS API and CLI take it (--cluster-identifier)."""
        return self.resource.attr_id

    @property
    def cluster_arn(self) -> str:
        """The cluster's ARN (``GetAtt Arn``)."""
        return self.resource.attr_arn

    @property
    def slurm_endpoints(self) -> IResolvable:
        """``GetAtt Endpoints``: the scheduler's endpoints, a list of objects ``{Type, PrivateIpAddress, Port, ...}``
        with ``Type`` SLURMCTLD (the Slurm controller), SLURMDBD or SLURMRESTD (CloudFormation schema of
        ``AWS::PCS::Cluster``, definition ``Endpoint``). A list of objects is not a string: it cannot be a stack
        output; read it with :attr:`slurm_controller_endpoint_command` or pass it to a custom resource."""
        return self.resource.attr_endpoints

    @property
    def slurm_controller_endpoint_command(self) -> str:
        """An AWS CLI command that prints the Slurm controller's private address and port (PCS ``GetCluster``,
        ``cluster.endpoints[]`` of type ``SLURMCTLD``; botocore PCS model ``Endpoint``)."""
        return (
            f"aws pcs get-cluster --region {Aws.REGION} --cluster-identifier {self.cluster_id} "
            "--query \"cluster.endpoints[?type=='SLURMCTLD'].[privateIpAddress,port]\" --output text"
        )

    @property
    def login_node_groups(self) -> tuple[PcsLoginNodeGroup, ...]:
        """The login node groups of this cluster, in the order they were created."""
        return tuple(self._login_node_groups)

    @property
    def login_command(self) -> str | None:
        """A shell on a login node through Session Manager (the first login node group's
        :attr:`~PcsLoginNodeGroup.session_command`), or None when the cluster has no login node group."""
        return self._login_node_groups[0].session_command if self._login_node_groups else None

    @property
    def slurm_settings(self) -> dict[str, str]:
        """The cluster-level custom settings as rendered (including the library's ``Prolog``, ``PrologFlags``,
        ``SchedulerParameters`` and ``HealthCheck*``), keyed by :class:`ClusterSetting` for the typed names and by
        the list's spelling for the others (a :class:`ClusterSetting` equals its name as a string)."""
        return dict(self._slurm_settings)

    @property
    def slurm_custom_settings(self) -> tuple[tuple[str, str], ...]:
        """``SlurmConfiguration.SlurmCustomSettings`` as ``(name, value)`` pairs in the template's order (by name):
        the ``Name=value`` lines PCS writes into ``slurm.conf`` for this cluster. Read it after the last
        :meth:`add_slurm_scripts` (the template is resolved at synthesis); deploy-time values appear as tokens."""
        return settings_in_order(self._slurm_settings)

    @property
    def efa_security_group(self) -> EfaSecurityGroup:
        """The EFA group shared by the cluster's GPU node groups (created on first use)."""
        if self._efa_security_group is None:
            self._efa_security_group = EfaSecurityGroup(self, "EfaSecurityGroup", vpc=self.vpc)
        return self._efa_security_group

    @property
    def instance_profile(self) -> PcsInstanceProfile:
        """The default node instance profile of this cluster (created on first use)."""
        if self._instance_profile is None:
            self._instance_profile = PcsInstanceProfile(self, "InstanceProfile", cluster_arn=self.cluster_arn)
        return self._instance_profile

    @property
    def size(self) -> ControllerSize:
        """The controller size rendered into the template: ``size`` when given, else the smallest that holds the node
        groups added so far (final at synthesis)."""
        return effective_size(self.requested_size, self._node_counts)

    def _check_node_count(self, group: str, parameter: str, count: int | float) -> None:
        """Refuse a node group whose count takes the known sum past the size (or LARGE); called before it is built."""
        problem = size_problem(self.requested_size, [*self._node_counts, NodeCount(group, parameter, count)])
        if problem is not None:
            room = room_for(self.requested_size, self._node_counts)
            raise FmValidationError(parameter, count, f"at most {room} for {group}: {problem}")

    def _register_node_count(self, group: str, parameter: str, count: int | float) -> None:
        entry = NodeCount(group, parameter, count)
        self._node_counts.append(entry)
        if not entry.known:
            decided = (
                f"it stays {self.requested_size.value}"
                if self.requested_size is not None
                else "it is at least MEDIUM; pass size= to choose"
            )
            add_warning(
                self,
                WarningId.PCS_SIZE_UNKNOWN_NODE_COUNT,
                f"{parameter} of {group} is a deploy-time value: the controller size cannot be checked against the "
                f"node groups ({decided}; changing the size replaces the cluster)",
            )

    def _claim_queue_name(self, name: str) -> None:
        if name in self._queue_names:
            raise FmValidationError("queue_name", name, "unique within the cluster (a Slurm partition name)")
        self._queue_names.add(name)

    def _register_login_node_group(self, group: PcsLoginNodeGroup) -> None:
        self._login_node_groups.append(group)

    # --- prolog and epilog pieces (:mod:`.slurm_scripts`) -----------------------------------------------------------
    def add_slurm_scripts(self, *pieces: SlurmScriptPiece, prolog_flags: Sequence[str] = ()) -> None:
        """Run ``pieces`` around every job on the cluster's GPU nodes (:mod:`.slurm_scripts`): the cluster's
        ``Prolog`` (``Epilog``) becomes the runner of the prolog (epilog) directory, every GPU node group installs
        the runners and the pieces, and ``prolog_flags`` are merged into ``PrologFlags`` (a prolog piece also adds
        ``nohold_on_prolog_fail`` to ``SchedulerParameters``). Refused when you set
        ``slurm_settings[Prolog]`` (``[Epilog]``) yourself, for a name already registered, or for the cluster's own
        ``10-node-checks.sh`` and ``91-nvidia-imex.sh``."""
        checked = check_pieces("pieces", [*self._slurm_script_pieces, *pieces])[len(self._slurm_script_pieces) :]
        flags = check_str_sequence("prolog_flags", prolog_flags)
        for index, piece in enumerate(checked):
            setting = ClusterSetting(piece.hook.value)
            if setting in self._given_settings:
                raise FmValidationError(
                    f"slurm_settings[{setting.value}]",
                    self._slurm_settings[setting],
                    f"unset when the cluster runs {piece.hook.value} pieces ({piece.name}); run your script as a "
                    "piece instead",
                )
            if piece.hook is SlurmHook.PROLOG and piece.name in RESERVED_PROLOG_NAMES:
                raise FmValidationError(f"pieces[{index}].name", piece.name, "not a name the cluster uses itself")
        settings = dict(self._slurm_settings)
        if flags:
            settings[ClusterSetting.PROLOG_FLAGS] = merge_prolog_flags(
                flags, settings.get(ClusterSetting.PROLOG_FLAGS), parameter="slurm_settings[PrologFlags]"
            )
        hooks = {piece.hook for piece in checked}
        if SlurmHook.PROLOG in hooks:
            settings[ClusterSetting.PROLOG] = PROLOG_RUNNER_PATH
            settings = without_prolog_holds(settings)
        if SlurmHook.EPILOG in hooks:
            settings[ClusterSetting.EPILOG] = EPILOG_RUNNER_PATH
        if checked and not self._slurm_script_pieces:
            InstallSlurmScripts.register(self)
        self._slurm_settings = settings
        self._slurm_script_pieces += checked

    @property
    def slurm_script_pieces(self) -> tuple[SlurmScriptPiece, ...]:
        """The prolog and epilog pieces registered with :meth:`add_slurm_scripts`, in order."""
        return tuple(self._slurm_script_pieces)

    # --- factories -------------------------------------------------------------------------------------------------
    def add_gpu_node_group(self, id: str, **options: Unpack[PcsGpuNodeGroupOptions]) -> PcsGpuNodeGroup:
        """A GPU compute node group of this cluster; the options are those of :class:`PcsGpuNodeGroup`
        (:class:`~fmconstructs.pcs.node_group.PcsGpuNodeGroupOptions`)."""
        from .node_group import PcsGpuNodeGroup

        per_stack = node_groups_per_stack(self, GPU_NODE_GROUPS_PER_STACK)
        index = len(self._gpu_node_group_ids)
        check_new_group_id(id, self._gpu_node_group_ids)
        group = PcsGpuNodeGroup(node_group_scope(self, index, per_stack=per_stack), id, cluster=self, **options)
        self._gpu_node_group_ids.append(id)
        return group

    def add_login_node_group(self, id: str, **options: Unpack[PcsLoginNodeGroupOptions]) -> PcsLoginNodeGroup:
        """A login node group of this cluster; the options are those of :class:`PcsLoginNodeGroup`
        (:class:`~fmconstructs.pcs.node_group.PcsLoginNodeGroupOptions`)."""
        from .node_group import PcsLoginNodeGroup

        return PcsLoginNodeGroup(self, id, cluster=self, **options)

    def add_queue(
        self,
        id: str,
        *,
        node_groups: Sequence[PcsGpuNodeGroup],
        queue_name: str | None = None,
        slurm_settings: QueueSettings | None = None,
    ) -> PcsQueue:
        """A queue (Slurm partition) of this cluster mapping ``node_groups``; see :class:`PcsQueue`."""
        from .queue import PcsQueue

        return PcsQueue(
            self, id, cluster=self, node_groups=node_groups, queue_name=queue_name, slurm_settings=slurm_settings
        )


@jsii.implements(IStringProducer)
class _SizeProducer:
    """``AWS::PCS::Cluster.Size`` at synthesis, from the node groups added by then."""

    def __init__(self, cluster: PcsCluster) -> None:
        self._cluster = cluster

    def produce(self, context: IResolveContext) -> str:
        return self._cluster.size.value


@jsii.implements(IAnyProducer)
class _SettingsProducer:
    """``SlurmConfiguration.SlurmCustomSettings`` at synthesis (pieces may set Prolog, Epilog and PrologFlags)."""

    def __init__(self, cluster: PcsCluster) -> None:
        self._cluster = cluster

    def produce(self, context: IResolveContext) -> Any:
        # The L1's own (camelCase) shape: CfnCluster checks the resolved value against its props, then renders it.
        settings = to_cfn_settings(self._cluster._slurm_settings)
        return [{"parameterName": s["ParameterName"], "parameterValue": s["ParameterValue"]} for s in settings] or None


@jsii.implements(IValidation)
class _SizeCheck:
    """At synthesis, the final node groups against the size (each group was also checked when it was created)."""

    def __init__(self, cluster: PcsCluster) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        problem = size_problem(self._cluster.requested_size, self._cluster._node_counts)
        return [] if problem is None else [f"PcsCluster {self._cluster.node.path}: {problem}"]


def check_cluster(parameter: str, value: object) -> PcsCluster:
    """A :class:`PcsCluster` (node groups and queues belong to one)."""
    if not isinstance(value, PcsCluster):
        raise FmTypeError(parameter, value, f"a PcsCluster (got a {type(value).__name__})")
    return value


def check_accounting_purge_days(accounting: AccountingMode, days: object) -> Any:
    """``accounting_purge_time_days``: None, or -1 / 1 .. 10000 with ``accounting=STANDARD`` (PCS API reference
    ``AccountingRequest.defaultPurgeTimeInDays``)."""
    if days is None:
        return None
    days = check_count("accounting_purge_time_days", days, minimum=-1, maximum=_MAX_PURGE_DAYS)
    rules.purge_days_need_standard_accounting(days, accounting)
    if known(days) and days == 0:
        raise FmValidationError(
            "accounting_purge_time_days", days, f"-1 (never purge) or 1 to {_MAX_PURGE_DAYS} days (0 is not valid)"
        )
    return days
