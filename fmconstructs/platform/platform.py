"""TrainingPlatform: one construct for a whole GPU training platform, composed from the library's own constructs.

- **Capacity**: a catalog instance type (:func:`~fmconstructs.catalog.get_instance_spec`), a node count and a capacity
  choice (:mod:`fmconstructs.capacity`); the backends apply the capacity rules (fixed size on blocks, at most the
  reservation, the reservation's zone).
- **Zone**: one subnet for the nodes and the file system (EFA traffic does not cross Availability Zones). Default: the
  VPC's private subnet (else isolated subnet, as ``LustreFileSystem`` chooses) in the reservation's zone when both are
  known, else the first; a VPC with none in the reservation's zone is refused (pass ``subnet=``). The storage
  module refuses EFA clients in another known zone (:meth:`~fmconstructs.storage.LustreFileSystemBase.
  register_efa_clients`).
  ``services_subnet`` moves the file system, the PCS controller, login nodes and the ParallelCluster head node to
  another subnet (GPU nodes in a Local Zone; :mod:`~fmconstructs.platform.placement`).
- **One EFA security group** shared by the GPU nodes and the EFA-enabled file system (:attr:`security_group`):
  PCS: the cluster's (:attr:`~fmconstructs.pcs.PcsCluster.efa_security_group`, which PCS node groups always use);
  ParallelCluster and EKS: one the platform creates and passes to the cluster (``node_security_group`` /
  ``efa_security_group``) and to the file system; HyperPod Slurm: one the platform creates and passes to
  ``HyperPodCluster(efa_security_group=...)`` and to the file system (EFA-enabled by default: fmconstructs' node
  set-up mounts it over EFA; ``base_config_dir``, whose published lifecycle scripts mount over TCP, needs
  ``PlatformStorage(efa_enabled=False)``);
  HyperPod on EKS: the ``GpuEksCluster``'s (:attr:`~fmconstructs.eks.GpuEksCluster.efa_security_group`), passed to
  ``HyperPodCluster`` and to the file system (EFA-enabled by default: the GPU group's ``OnCreate`` lifecycle configures
  LNet over EFA, :func:`~fmconstructs.storage.lustre_lnet_commands`, and the FSx CSI driver's mounts then go over EFA;
  the group is registered against the file system's 1,024 EFA connections).
- **Storage**: FSx for Lustre PERSISTENT_2 sized by :class:`~fmconstructs.platform.PlatformStorage` with the storage
  module's sizing functions, linked to a new :class:`~fmconstructs.storage.DataRepositoryBucket` or your bucket,
  mounted on every node by the backend's own mount mechanism (PCS ``FileSystemMount``, ParallelCluster
  ``SharedLustre``, EKS ``add_lustre_volume``, HyperPod ``file_system``).
- **Observability**: a new or existing Prometheus (and Grafana) workspace; collectors through each backend's own
  wiring (PCS :func:`~fmconstructs.observability.pcs.monitor_pcs_cluster`, ParallelCluster
  :meth:`~fmconstructs.parallelcluster.ParallelCluster.add_node_bootstrap` with the node collectors, EKS
  :class:`~fmconstructs.observability.eks.AmpEksScraper`, HyperPod Slurm ``prometheus_workspace``); FSx saturation
  alarms to the workspace's alert topic; on a Capacity Block, :class:`~fmconstructs.capacity_events.CapacityBlockEvents`
  (the block's events to the alert topic; PCS drains, EKS cordons the block's nodes before it ends).
- **Outputs**: ``CfnOutput``s with descriptions (cluster, login or kubeconfig command, FSx id/DNS/mount name, data
  bucket, Grafana URL) unless ``outputs=False``.

Every lower-level construct is an attribute (:attr:`cluster`, :attr:`node_group`, :attr:`file_system`,
:attr:`data_bucket`, :attr:`prometheus_workspace`, ...) for customization.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import CfnOutput, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_instance,
    check_optional_subnet,
    check_scope_id,
    check_str,
    check_vpc,
    is_local_zone,
    known,
    located,
    subnet_zone,
)
from ..bootstrap import NodeBootstrap
from ..budgets import check_template_budgets
from ..capacity import Capacity, CapacityBlockScaling, CapacityKind, OnDemand, subnet_label
from ..capacity_events import CapacityBlockEvents
from ..catalog import InstanceSpec, get_instance_spec
from ..eks import GpuEksCluster, GpuNodeGroup
from ..errors import FmValidationError, WarningId, add_warning, is_token
from ..health import NcclCheckSpec
from ..hyperpod import HyperPodCluster, HyperPodInstanceGroup
from ..hyperpod.eks_dependencies import HyperPodEksDependencies
from ..networking import EfaSecurityGroup
from ..observability.eks import AmpEksScraper
from ..observability.grafana import GrafanaWorkspace
from ..observability.workspace import PrometheusWorkspace
from ..parallelcluster import ParallelCluster, SlurmQueue
from ..pcs import PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup, PcsQueue
from ..remediation import NodeRemediation
from ..storage import (
    DataRepositoryAssociation,
    DataRepositoryBucket,
    LustreFileSystem,
    LustreMetadataConfiguration,
    LustreSizing,
    server_access_logs_bucket,
)
from ..teams import Team
from ..teams.rules import check_teams
from . import _health_wiring as _health
from . import elastic as _elastic
from ._hyperpod_rules import HYPERPOD_EKS_VOLUME, hyperpod_chart
from .backends import Backend as Backend  # re-exported: fmconstructs.platform.platform.Backend
from .backends import PlatformBackend, PlatformChoices, backend_for, refuse_unsupported
from .health import PlatformHealth
from .options import (
    EksOptions,
    Orchestrator,
    PlatformObservability,
    PlatformStorage,
)
from .placement import check_services_subnet, default_subnet, warn_cross_zone
from .scheduling import PlatformCapacityEvents, capacity_events_act_on_a_block, check_capacity_block_events
from .teams import build_platform_teams, check_platform_teams

if TYPE_CHECKING:
    from ..serving.model_server import ModelServer

#: ``cluster`` label values the collectors accept (1-128 letters, digits or ``_.:/+-``, observability._checks).
_LABEL_DROP = re.compile(r"[^A-Za-z0-9_.:/+-]+")


#: ``TrainingPlatform(health=...)``'s default: node checks, the NCCL check where it can run, remediation in dry run.
_DEFAULT_HEALTH = PlatformHealth()


class TrainingPlatform(Construct):
    """A GPU training platform: capacity, FSx for Lustre linked to S3, one orchestrator and observability.

    :param vpc: the VPC (may be imported).
    :param instance_type: a catalog GPU type (``p5.48xlarge``, ``p5en.48xlarge`` ...), known at synthesis (the EFA
        layout comes from it). HyperPod also needs a type SageMaker HyperPod accepts (``ml.`` + the type).
    :param nodes: GPU nodes (>= 1; a number token such as ``CfnParameter.value_as_number`` is accepted and its checks
        skipped). The maximum of the node group; Capacity Blocks make it fixed.
    :param orchestrator: :class:`PcsOptions`, :class:`ParallelClusterOptions`, :class:`EksOptions` or
        :class:`HyperPodOptions`.
    :param capacity: :class:`~fmconstructs.OnDemand` (default), ``CapacityReservation``, ``CapacityBlock`` or
        ``UltraServerCapacityBlock`` (PCS turns IMEX on for it). HyperPod: On-Demand only (a SageMaker training plan
        goes in :attr:`HyperPodOptions.capacity`).
    :param subnet: the one subnet of the nodes and the file system. Default: the VPC's private subnet (with egress;
        else its isolated subnet, as ``LustreFileSystem`` chooses) in the reservation's zone when both are known, else
        the first; refused when the VPC has none, or none in the reservation's zone.
    :param services_subnet: where the platform puts what is not a GPU node: the FSx for Lustre file system, the PCS
        controller's network interface, PCS and ParallelCluster login nodes, the ParallelCluster head node (EKS: the
        file system only; HyperPod: refused). For GPU nodes in a Local Zone: a subnet of the same VPC in a zone of the
        parent Region (PCS requires one then: its controller cannot be in a Local Zone). Refused when known to be in a
        Local Zone or another VPC, or in another zone than ``subnet`` with an EFA-enabled file system (EFA does not
        cross zones: ``PlatformStorage(efa_enabled=False)`` mounts over TCP); in another zone, a warning
        (``services-subnet-other-zone``). Default None: ``subnet`` (:mod:`~fmconstructs.platform.placement`).
    :param storage: :class:`PlatformStorage`, or None for no file system. Default None.
    :param observability: :class:`PlatformObservability`, or None for no metrics. Default None.
    :param access_logs_bucket: server access logs of the buckets the platform creates (the new data bucket, HyperPod's
        lifecycle bucket). Default: a bucket the platform creates for them (``AccessLogs``:
        :func:`~fmconstructs.storage.server_access_logs_bucket`, RETAIN), only when it creates a bucket.
    :param capacity_block_events: on a Capacity Block with observability (an alert topic), EC2's Capacity Block events
        (delivered, expiration warning) notify the workspace's alert topic, and before the block ends PCS drains the
        block's Slurm nodes (SSM Run Command on the login node group) and EKS cordons its nodes
        (:class:`~fmconstructs.capacity_events.CapacityBlockEvents`, as FmPcsP5 wires it); with
        ``EksOptions(capacity_block_scaling=CapacityBlockScaling.ON_BLOCK_EVENTS)`` it also scales the EKS GPU node
        group to ``nodes`` when the block is delivered and to 0 on the expiration warning. A
        :class:`~fmconstructs.platform.PlatformCapacityEvents` turns them on with its drain lead times and job
        warning (a signal to the block's Slurm jobs, a warning on its pods) and, on ParallelCluster, drains and warns
        on the head node too (:mod:`~fmconstructs.platform.scheduling` says what each backend does). Default True.
    :param slurm_topology: Slurm ``topology/tree`` from DescribeInstanceTopology (ParallelCluster on P5/P6 types:
        :meth:`~fmconstructs.parallelcluster.ParallelCluster.enable_slurm_topology`, a piece of the head node's
        OnNodeStart); refused on the other backends with the reason. Default False.
    :param health: cluster health (:class:`~fmconstructs.platform.PlatformHealth`, see
        :mod:`~fmconstructs.platform.health`): node-join checks, the scheduled NCCL check and node remediation (a dry
        run unless ``replace_nodes=True``).
        Default ``PlatformHealth()``; None turns them off.
    :param outputs: emit ``CfnOutput``s with descriptions. Default True.
    :param teams: teams sharing the GPUs (:class:`~fmconstructs.teams.Team`): Kueue queues on EKS, task governance on
        HyperPod on EKS, Slurm accounts and QoS on ParallelCluster with ``slurm_accounting``; refused on PCS and
        HyperPod Slurm for now (:mod:`~fmconstructs.platform.teams`). Default none.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_type: str,
        nodes: int | float,
        orchestrator: Orchestrator,
        capacity: Capacity | None = None,
        subnet: ec2.ISubnet | None = None,
        services_subnet: ec2.ISubnet | None = None,
        storage: PlatformStorage | None = None,
        observability: PlatformObservability | None = None,
        access_logs_bucket: s3.IBucket | None = None,
        capacity_block_events: bool | PlatformCapacityEvents = True,
        slurm_topology: bool = False,
        health: PlatformHealth | None = _DEFAULT_HEALTH,
        outputs: bool = True,
        teams: Sequence[Team] = (),
    ) -> None:
        check_scope_id(scope, id)
        props = _check_props(_Given.of(locals()))
        self._keep_choices(props, orchestrator, observability, capacity_block_events, slurm_topology)
        #: The teams (:class:`~fmconstructs.teams.Team`, :mod:`~fmconstructs.platform.teams`).
        self.teams: tuple[Team, ...] = check_teams(teams)
        plan = self._validate(props, orchestrator, storage, observability, health)
        self._hyperpod_chart = hyperpod_chart(scope, orchestrator)
        super().__init__(scope, id)  # after every check: a refused platform leaves nothing in the tree

        self._keep_plan(props.vpc, plan, storage, access_logs_bucket, health)
        self._declare_parts()
        self._observability(observability)
        self._build_backend(orchestrator)
        #: The teams' objects: the EKS ``KueueTeams`` manifest or the HyperPod task governance (None without teams).
        self.team_objects: Any = build_platform_teams(self, orchestrator, self._backend_result)
        self._finish(capacity_block_events=capacity_block_events, outputs=outputs)
        check_template_budgets(self)  # CloudFormation's template limits, at synthesis (issue 30)

    # --- choices -----------------------------------------------------------------------------------------------------
    def _keep_choices(
        self,
        props: _Props,
        orchestrator: Orchestrator,
        observability: PlatformObservability | None,
        capacity_block_events: bool | PlatformCapacityEvents,
        slurm_topology: bool,
    ) -> None:
        """What the checks need (kept before the construct exists)."""
        self.instance_spec: InstanceSpec = props.instance_spec
        self.nodes: Any = props.nodes
        self.capacity: Capacity = props.capacity
        self._adapter = props.adapter
        self.backend: Backend = props.adapter.backend
        self.orchestrator: Orchestrator = orchestrator
        self._observability_choice = observability
        self._events_on = capacity_block_events is not False
        #: ``capacity_block_events`` when it is a PlatformCapacityEvents (None for True/False).
        self.capacity_event_options: PlatformCapacityEvents | None = check_capacity_block_events(capacity_block_events)
        #: Whether the platform sets up Slurm topology (``slurm_topology``).
        self.slurm_topology: bool = slurm_topology

    def _keep_plan(
        self,
        vpc: ec2.IVpc,
        plan: _Plan,
        storage: PlatformStorage | None,
        access_logs_bucket: s3.IBucket | None,
        health: PlatformHealth | None,
    ) -> None:
        self.vpc = vpc
        self.subnet: ec2.ISubnet = plan.subnet
        #: The file system's, controller's, login and head nodes' subnet (``services_subnet``, else :attr:`subnet`).
        self.services_subnet: ec2.ISubnet = plan.services_subnet or plan.subnet
        self._efa_storage = plan.efa_storage
        self.storage = storage
        #: The sizing decision for the file system (None without storage).
        self.sizing: LustreSizing | None = plan.sizing
        self._access_logs_bucket = access_logs_bucket
        #: Where the buckets the platform creates write S3 server access logs: ``access_logs_bucket`` as given, else
        #: the bucket the platform creates for them the first time it creates a bucket (None until then).
        self.access_logs_bucket: s3.IBucket | None = access_logs_bucket
        self.cluster_label: str = _cluster_label(self)
        #: Cluster health as given (None: off), the NCCL check the platform runs (None: none) and the remediation
        #: handler (None without a policy or observability).
        self.health: PlatformHealth | None = health
        self.nccl_check: NcclCheckSpec | None = plan.nccl_check
        self.remediation: NodeRemediation | None = None

    # --- build steps ------------------------------------------------------------------------------------------------
    def _declare_parts(self) -> None:
        """What every backend fills in (None where a backend has no such part)."""
        self.security_group: EfaSecurityGroup
        self.file_system: LustreFileSystem | None = None
        self.data_bucket: s3.IBucket | None = None
        self.data_repositories: list[DataRepositoryAssociation] = []
        self.cluster: PcsCluster | ParallelCluster | GpuEksCluster | HyperPodCluster
        self.node_group: PcsGpuNodeGroup | SlurmQueue | GpuNodeGroup | HyperPodInstanceGroup | None = None
        #: EKS with ``EksOptions(gpu_capacity=KARPENTER or AUTO_MODE)``: the elastic GPU pool (no node_group then).
        self.elastic_pool: _elastic.ElasticPool | None = None
        self.login_node_group: PcsLoginNodeGroup | HyperPodInstanceGroup | None = None
        self.queue: PcsQueue | SlurmQueue | None = None
        self.eks_cluster: GpuEksCluster | None = None
        self.scraper: AmpEksScraper | None = None
        self.node_bootstrap: NodeBootstrap | None = None
        #: ParallelCluster: the head node's OnNodeConfigured bootstrap (prolog checks, NCCL check, collectors; None
        #: when empty or on another backend).
        self.head_bootstrap: NodeBootstrap | None = None
        self.prometheus_workspace: PrometheusWorkspace | None = None
        self.grafana_workspace: GrafanaWorkspace | None = None
        self.capacity_events: CapacityBlockEvents | None = None
        #: HyperPod on EKS: HyperPod's dependencies chart on the EKS cluster (None otherwise).
        self.hyperpod_dependencies: HyperPodEksDependencies | None = None
        self._outputs: dict[str, tuple[str, str]] = {}

    def _build_backend(self, orchestrator: Orchestrator) -> None:
        """The backend's parts (:mod:`~fmconstructs.platform.backends`), exposed as this platform's attributes."""
        result = self._adapter.build(self, orchestrator)
        self._backend_result = result
        self.cluster = result.cluster
        self.security_group = result.security_group
        self.node_group = result.node_group
        self.queue = result.queue
        self.login_node_group = result.login_node_group
        self.eks_cluster = result.eks_cluster
        self.elastic_pool = result.elastic_pool
        self.scraper = result.scraper
        self.node_bootstrap = result.node_bootstrap
        self.head_bootstrap = result.head_bootstrap
        self.hyperpod_dependencies = result.hyperpod_dependencies
        self._outputs.update(result.outputs)

    def _finish(self, *, capacity_block_events: bool | PlatformCapacityEvents, outputs: bool) -> None:
        """What every backend shares once its parts exist: warnings, alarms, events, remediation and outputs."""
        _warn_local_zone(self)
        alerts = self.prometheus_workspace.alert_topic if self.prometheus_workspace is not None else None
        if self.file_system is not None and self.file_system.sizing is not None:  # None: a deploy-time capacity
            self.file_system.add_saturation_alarms(topic=alerts)
        if self.file_system is not None:  # /checkpoints exports to S3: alarm on its backlog (failures need a log group)
            self.file_system.add_export_alarms(topic=alerts, export_failures=self.file_system.log_group is not None)
        if capacity_block_events is not False:
            self._capacity_block_events()
        self.remediation = _health.remediation(self)
        if outputs:
            self._emit_outputs()

    # --- validation: one small check per rule ---------------------------------------------------------------------
    def _validate(
        self,
        props: _Props,
        orchestrator: Orchestrator,
        storage: PlatformStorage | None,
        observability: PlatformObservability | None,
        health: PlatformHealth | None,
    ) -> _Plan:
        """Cross-choice rules: what the backend does not support (:class:`~fmconstructs.platform.backends.Unsupported`),
        its own rules (:meth:`~fmconstructs.platform.backends.PlatformBackend.check`), sizing, capacity, placement and
        the NCCL check."""
        choices = PlatformChoices(
            capacity=self.capacity,
            services_subnet=props.services_subnet,
            storage=storage,
            observability=observability,
            health=health,
            capacity_events=self.capacity_event_options,
            slurm_topology=self.slurm_topology,
            teams=self.teams,
        )
        refuse_unsupported(self._adapter, choices)
        check_platform_teams(self, orchestrator, self.teams)
        if self.capacity_event_options is not None:
            capacity_events_act_on_a_block(
                self.capacity_event_options, capacity=self.capacity, has_observability=observability is not None
            )
        self._adapter.check(self, orchestrator, storage)
        efa_storage = True if storage is None or storage.efa_enabled is None else storage.efa_enabled
        sizing = storage.size(efa_enabled=efa_storage) if storage is not None else None
        self.capacity.validate_for(self.instance_spec, max_nodes=self.nodes, parameters=("min_nodes", "nodes"))
        subnet = props.subnet or default_subnet(props.vpc, self.capacity)
        services = check_services_subnet(
            props.services_subnet,
            vpc=props.vpc,
            subnet=subnet,
            backend=self.backend.value,
            storage=storage is not None,
            efa_storage=efa_storage,
        )
        nccl_check = _health.nccl_spec(self, orchestrator, health, storage)
        return _Plan(efa_storage, sizing, subnet, services, nccl_check)

    # --- shared parts ------------------------------------------------------------------------------------------------
    def _observability(self, choice: PlatformObservability | None) -> None:
        if choice is None:
            return
        if not choice.is_new:
            self.prometheus_workspace = choice.prometheus_workspace
            self.grafana_workspace = choice.grafana_workspace
            return
        workspace = PrometheusWorkspace(
            self,
            "Prometheus",
            alias=choice.alias,
            extra_rule_groups=_health.rule_groups(self),
            thresholds=_health.alert_thresholds(self),
        )
        self.prometheus_workspace = workspace
        if choice.create_grafana:
            access = choice.grafana_network_access
            grafana = GrafanaWorkspace(
                self,
                "Grafana",
                prometheus_workspace_arns=[workspace.workspace_arn],
                notification_topics=[workspace.alert_topic],
                network_access=access,
            )
            # The data source URL: .../workspaces/<id>/ (Grafana appends api/v1/query), as FmObservability does. A
            # workspace behind network access control is provisioned from the platform's own subnet.
            grafana.provision(
                prometheus_workspace_arn=workspace.workspace_arn,
                prometheus_endpoint=workspace.workspace_url,
                vpc=self.vpc if access is not None else None,
                vpc_subnets=ec2.SubnetSelection(subnets=[self.services_subnet]) if access is not None else None,
            )
            self.grafana_workspace = grafana

    def _file_system(self, efa_group: EfaSecurityGroup | None) -> LustreFileSystem | None:
        """The file system in the nodes' subnet, EFA-enabled in ``efa_group`` when given, linked to the bucket."""
        storage, sizing = self.storage, self.sizing
        if storage is None:
            return None
        if sizing is not None:
            capacity, throughput, efa_storage = (
                sizing.storage_capacity_gib,
                sizing.throughput_mbps_per_tib,
                sizing.efa_enabled,
            )
        else:  # of_capacity with a deploy-time capacity (a number token checked by PlatformStorage), passed on
            capacity, throughput = cast(int, storage.storage_capacity_gib), storage.throughput_mbps_per_tib
            efa_storage = self._efa_storage
        efa = efa_group is not None and efa_storage
        file_system = LustreFileSystem(
            self,
            "FileSystem",
            vpc=self.vpc,
            subnet=self.services_subnet,
            storage_capacity_gib=capacity,
            throughput_mbps_per_tib=throughput,
            # FSx requires a metadata configuration on EFA-enabled file systems (checked by LustreFileSystem).
            metadata_configuration=LustreMetadataConfiguration.automatic() if efa else None,
            efa_enabled=efa,
            efa_security_group=efa_group if efa else None,
            encryption_key=storage.encryption_key,
            removal_policy=storage.removal_policy,
        )
        if storage.data_bucket is not None:
            bucket = storage.data_bucket
        else:
            # PlatformStorage's own access logs bucket first (it was validated and then ignored before issue 18).
            logs = storage.access_logs_bucket or self.access_logs_target()
            bucket = DataRepositoryBucket(
                self,
                "DataBucket",
                encryption_key=storage.encryption_key,
                server_access_logs_bucket=logs,
                server_access_logs_prefix="data/" if logs is not None else None,
                removal_policy=storage.removal_policy,
            ).bucket
        self.data_bucket = bucket
        self.data_repositories = file_system.add_data_repositories(bucket, storage.layout)
        self.file_system = file_system
        return file_system

    def access_logs_target(self) -> s3.IBucket:
        """The server access log target of a bucket the platform creates: ``access_logs_bucket`` as given, else one
        bucket the platform creates for every such bucket (``<platform>/AccessLogs``,
        :func:`~fmconstructs.storage.server_access_logs_bucket`), so a user's app is cdk-nag S1 clean by default."""
        if self.access_logs_bucket is None:
            self.access_logs_bucket = server_access_logs_bucket(self, "AccessLogs")
        return self.access_logs_bucket

    @property
    def mount_point(self) -> str | None:
        """Where the nodes mount the file system (None without storage)."""
        return self.storage.mount_point if self.storage is not None else None

    def add_model_server(self, id: str, **options: Any) -> ModelServer:
        """A vLLM model server on the platform's EKS cluster (EKS backend only; others raise FmValidationError naming
        ``backend``), the platform's scraper collecting its metrics. ``options``: ``name`` and those of
        :class:`~fmconstructs.serving.ModelServer` except ``cluster``; ``weights``, or ``fsx_path`` (a directory of the
        platform's file system); ``instance_type`` defaults to the platform's, and then ``node_group`` to the
        platform's GPU node group. See :func:`fmconstructs.platform.serving.add_model_server`."""
        from .serving import add_model_server

        return add_model_server(self, id, **options)

    def _capacity_block_events(self) -> None:
        """Capacity Block events to the alert topic; PCS drain through the login node group, EKS cordon. On an
        interruptible Capacity Reservation the same drain runs on its reclaim warning (the block rule then names only
        that reservation, which sends no block event)."""
        workspace = self.prometheus_workspace
        interruptible = self.capacity.kind is CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION
        if workspace is None or not (self.capacity.is_capacity_block or interruptible):
            return
        reservation_id: str | None = getattr(self.capacity, "reservation_id", None)
        login_id = getattr(self.login_node_group, "node_group_id", None) if self.backend is Backend.PCS else None
        options = self.capacity_event_options
        # ParallelCluster drains on its head node only with options (True keeps the notify-only handler of before).
        pc_name = (
            self.cluster.cluster_name
            if options is not None and isinstance(self.cluster, ParallelCluster) and known(self.cluster.cluster_name)
            else None
        )
        self.capacity_events = CapacityBlockEvents(
            self,
            "CapacityBlockEvents",
            alert_topic=workspace.alert_topic,
            pcs_login_node_group_id=login_id,
            parallelcluster_cluster_name=pc_name,
            **(options.construct_props() if options is not None else {}),
            capacity_reservation_ids=[reservation_id] if reservation_id is not None and known(reservation_id) else None,
            interruptible_reservation_ids=[reservation_id] if interruptible and reservation_id is not None else None,
            eks_cluster=self.eks_cluster if self.backend is Backend.EKS else None,
            scaling_targets=(
                [self.node_group]
                if isinstance(self.node_group, GpuNodeGroup)
                and isinstance(self.orchestrator, EksOptions)
                and self.orchestrator.capacity_block_scaling is CapacityBlockScaling.ON_BLOCK_EVENTS
                else None
            ),
        )
        if self.backend is Backend.PCS and login_id is None:
            add_warning(
                self.capacity_events,
                WarningId.CAPACITY_EVENTS_PCS_DRAIN_NO_LOGIN_NODES,
                "The PCS platform is on a Capacity Block but has no login node group (PcsOptions(login_nodes=0)): the "
                "Capacity Block events handler drains the block's Slurm nodes through SSM Run Command on a login "
                "node, so on the expiration warning they are NOT drained (the notice still goes out and says so) and "
                "Slurm keeps starting jobs that the block's end will kill. Keep at least one login node "
                "(login_nodes=1, the default), or drain the nodes yourself when the alert arrives "
                '(scontrol update nodename=<nodes> state=DRAIN reason="capacity block ends").',
            )

    # --- outputs -----------------------------------------------------------------------------------------------------
    def _emit_outputs(self) -> None:
        outputs = dict(self._outputs)
        fs = self.file_system
        if fs is not None:
            where = (
                f"mounted in pods through the PersistentVolumeClaim default/{HYPERPOD_EKS_VOLUME}"
                if self.backend is Backend.HYPERPOD and self.eks_cluster is not None
                else f"mounted at {self.mount_point}"
            )
            outputs["FileSystemId"] = (fs.file_system_id, f"FSx for Lustre file system {where}")
            outputs["FileSystemDnsName"] = (fs.dns_name, "FSx for Lustre DNS name (mount: <dns>@tcp:/<mount name>)")
            outputs["FileSystemMountName"] = (fs.mount_name, "FSx for Lustre mount name")
        if self.data_bucket is not None:
            outputs["DataBucketName"] = (
                self.data_bucket.bucket_name,
                "S3 bucket linked to the file system (datasets/ imported, checkpoints/ exported by default)",
            )
        if self.prometheus_workspace is not None:
            outputs["PrometheusRemoteWriteUrl"] = (
                self.prometheus_workspace.remote_write_url,
                "Amazon Managed Prometheus remote-write URL the collectors send to (SigV4)",
            )
        if self.grafana_workspace is not None:
            outputs["GrafanaUrl"] = (
                self.grafana_workspace.url,
                "Amazon Managed Grafana sign-in URL (dashboards in the fmconstructs folder)",
            )
        for output_id, (value, description) in outputs.items():
            CfnOutput(self, output_id, value=value, description=description)


def _warn_local_zone(platform: TrainingPlatform) -> None:
    """Where the services went (:mod:`~fmconstructs.platform.placement`): a warning when the nodes' subnet is known to
    be in a Local Zone (or Wavelength Zone) listing what the library put in it, naming ``services_subnet``; a warning
    when ``services_subnet`` is in another known zone than the nodes."""
    services = list(platform._adapter.services)
    if platform.login_node_group is not None or getattr(platform.cluster, "login_nodes", None):
        services.append("the login nodes")
    if platform.file_system is not None:
        services.append("the FSx for Lustre file system")
    apart = platform.services_subnet is not platform.subnet
    if apart:
        warn_cross_zone(platform, subnet=platform.subnet, services=platform.services_subnet, parts=services)
    zone = subnet_zone(platform.subnet)
    if not is_local_zone(zone):
        return
    parts = ["the GPU nodes", *([] if apart else services)]
    add_warning(
        platform,
        WarningId.LOCAL_ZONE_SUBNET,
        f"subnet {subnet_label(platform.subnet)} is in {zone}, a Local Zone or Wavelength Zone; the library puts "
        f"{', '.join(parts)} there. Check that each is offered in that zone"
        + (
            "."
            if apart
            else "; pass services_subnet= a subnet of the VPC in a zone of the parent Region to put everything but "
            "the GPU nodes there (an EFA-enabled file system there needs PlatformStorage(efa_enabled=False)), or "
            "subnet= in a zone of the parent Region."
        ),
    )


def _cluster_label(scope: Construct) -> str:
    """``<stack name>-<id>`` (or the id when the stack name is a token), as the collectors' ``cluster`` label."""
    stack_name = Stack.of(scope).stack_name
    base = scope.node.id if Token.is_unresolved(stack_name) else f"{stack_name}-{scope.node.id}"
    return _LABEL_DROP.sub("-", base)[:128] or "platform"


@dataclass(frozen=True)
class _Props:
    """The constructor's props, each checked on its own."""

    vpc: ec2.IVpc
    instance_spec: InstanceSpec
    nodes: Any  # int, or a number token
    adapter: PlatformBackend[Any]
    capacity: Capacity
    subnet: ec2.ISubnet | None
    services_subnet: ec2.ISubnet | None


@dataclass(frozen=True)
class _Plan:
    """What the cross-choice rules decided."""

    efa_storage: bool
    sizing: LustreSizing | None
    subnet: ec2.ISubnet
    services_subnet: ec2.ISubnet | None
    nccl_check: NcclCheckSpec | None


@dataclass(frozen=True)
class _Given:
    """The keyword arguments of :class:`TrainingPlatform` as given (checked by :func:`_check_props`)."""

    vpc: object
    instance_type: object
    nodes: object
    orchestrator: object
    capacity: object
    subnet: object
    services_subnet: object
    storage: object
    observability: object
    access_logs_bucket: object
    capacity_block_events: object
    slurm_topology: object
    health: object
    outputs: object
    teams: object

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Given:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


def _check_props(given: _Given) -> _Props:
    """One check per prop (types, known values), in the constructor's order."""
    vpc, instance_type, nodes, orchestrator = given.vpc, given.instance_type, given.nodes, given.orchestrator
    capacity, subnet, services_subnet, storage = given.capacity, given.subnet, given.services_subnet, given.storage
    observability, access_logs_bucket, health = given.observability, given.access_logs_bucket, given.health
    checked_vpc = check_vpc("vpc", vpc)
    check_str("instance_type", instance_type)
    if is_token(instance_type):
        raise FmValidationError("instance_type", instance_type, "an instance type known at synthesis")
    instance_spec = get_instance_spec(cast(str, instance_type))
    checked_nodes = check_count("nodes", nodes, minimum=1)
    adapter = backend_for(orchestrator)
    checked_capacity: Capacity = (
        OnDemand()
        if capacity is None
        else check_instance("capacity", capacity, Capacity, "a Capacity (OnDemand, CapacityBlock, ...)")
    )
    checked_subnet = check_optional_subnet("subnet", subnet)
    checked_services = check_optional_subnet("services_subnet", services_subnet)
    if storage is not None:
        check_instance("storage", storage, PlatformStorage, "a PlatformStorage (for_throughput, ...) or None")
    if observability is not None:
        check_instance("observability", observability, PlatformObservability, "a PlatformObservability (new, existing)")
    if access_logs_bucket is not None:
        check_construct("access_logs_bucket", access_logs_bucket, attribute="bucket_name", expected="an s3.IBucket")
    check_capacity_block_events(given.capacity_block_events)
    check_bool("slurm_topology", given.slurm_topology)
    if health is not None:
        check_instance("health", health, PlatformHealth, "a PlatformHealth or None")
    check_bool("outputs", given.outputs)
    return _Props(
        checked_vpc, instance_spec, checked_nodes, adapter, checked_capacity, checked_subnet, checked_services
    )
