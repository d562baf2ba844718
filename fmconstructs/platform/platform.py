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
from enum import Enum
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import CfnOutput, Fn, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
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
from ..capacity import Capacity, CapacityBlockScaling, CapacityKind, OnDemand, UltraServerCapacityBlock, subnet_label
from ..capacity_events import CapacityBlockEvents
from ..catalog import InstanceSpec, get_instance_spec
from ..compute.user_data import nvme_raid_commands
from ..eks import GpuEksCluster
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from ..health import NcclCheckSpec
from ..hyperpod import LUSTRE_MOUNT_POINT, HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from ..hyperpod.cluster import HYPERPOD_DEFAULT_KUBERNETES_VERSION
from ..hyperpod.eks_dependencies import HyperPodEksDependencies
from ..hyperpod.types import hyperpod_type
from ..networking import EfaSecurityGroup
from ..observability.collection import NodeLabels, node_collection_commands
from ..observability.eks import AmpEksScraper
from ..observability.grafana import GrafanaWorkspace
from ..observability.job_mapping import JobMappingSpec
from ..observability.pcs import monitor_pcs_cluster
from ..observability.slurm_job_mapping import enable_parallelcluster_job_mapping
from ..observability.workspace import PrometheusWorkspace
from ..parallelcluster import (
    ComputeResource,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
    head_node_instance_type_for,
    login_node_instance_type_for,
)
from ..pcs import FileSystemMount, PcsCluster
from ..remediation import NodeRemediation
from ..storage import (
    DataRepositoryAssociation,
    DataRepositoryBucket,
    LustreFileSystem,
    LustreMetadataConfiguration,
    LustreSizing,
)
from . import _health_wiring as _health
from . import elastic as _elastic
from ._hyperpod_rules import HYPERPOD_EKS_VOLUME, check_hyperpod_storage, hyperpod_chart
from .health import PlatformHealth
from .options import (
    ORCHESTRATOR_TYPES,
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    Orchestrator,
    ParallelClusterOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
)
from .placement import check_services_subnet, default_subnet, warn_cross_zone

if TYPE_CHECKING:
    from ..serving.model_server import ModelServer

#: ``cluster`` label values the collectors accept (1-128 letters, digits or ``_.:/+-``, observability._checks).
_LABEL_DROP = re.compile(r"[^A-Za-z0-9_.:/+-]+")


#: ``TrainingPlatform(health=...)``'s default: node checks, the NCCL check where it can run, remediation in dry run.
_DEFAULT_HEALTH = PlatformHealth()


class Backend(str, Enum):
    """The orchestrator a :class:`TrainingPlatform` runs (from the type of its ``orchestrator`` options)."""

    PCS = "pcs"
    PARALLELCLUSTER = "parallelcluster"
    EKS = "eks"
    HYPERPOD = "hyperpod"


_BACKENDS: dict[type, Backend] = {
    PcsOptions: Backend.PCS,
    ParallelClusterOptions: Backend.PARALLELCLUSTER,
    EksOptions: Backend.EKS,
    HyperPodOptions: Backend.HYPERPOD,
}


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
        lifecycle bucket). Default: none.
    :param capacity_block_events: on a Capacity Block with observability (an alert topic), EC2's Capacity Block events
        (delivered, expiration warning) notify the workspace's alert topic, and before the block ends PCS drains the
        block's Slurm nodes (SSM Run Command on the login node group) and EKS cordons its nodes
        (:class:`~fmconstructs.capacity_events.CapacityBlockEvents`, as FmPcsP5 wires it); with
        ``EksOptions(capacity_block_scaling=CapacityBlockScaling.ON_BLOCK_EVENTS)`` it also scales the EKS GPU node
        group to ``nodes`` when the block is delivered and to 0 on the expiration warning. Default True.
    :param health: cluster health (:class:`~fmconstructs.platform.PlatformHealth`, see
        :mod:`~fmconstructs.platform.health`): node-join checks, the scheduled NCCL check and node remediation (a dry
        run unless ``replace_nodes=True``).
        Default ``PlatformHealth()``; None turns them off.
    :param outputs: emit ``CfnOutput``s with descriptions. Default True.
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
        capacity_block_events: bool = True,
        health: PlatformHealth | None = _DEFAULT_HEALTH,
        outputs: bool = True,
    ) -> None:
        check_scope_id(scope, id)
        vpc = check_vpc("vpc", vpc)
        check_str("instance_type", instance_type)
        if is_token(instance_type):
            raise FmValidationError("instance_type", instance_type, "an instance type known at synthesis")
        self.instance_spec: InstanceSpec = get_instance_spec(instance_type)
        self.nodes: Any = check_count("nodes", nodes, minimum=1)
        if not isinstance(orchestrator, ORCHESTRATOR_TYPES):
            raise FmTypeError(
                "orchestrator",
                orchestrator,
                "PcsOptions, ParallelClusterOptions, EksOptions or HyperPodOptions "
                f"(got a {type(orchestrator).__name__})",
            )
        self.capacity: Capacity = (
            OnDemand()
            if capacity is None
            else check_instance("capacity", capacity, Capacity, "a Capacity (OnDemand, CapacityBlock, ...)")
        )
        subnet = check_optional_subnet("subnet", subnet)
        if storage is not None:
            check_instance("storage", storage, PlatformStorage, "a PlatformStorage (for_throughput, ...) or None")
        if observability is not None:
            check_instance(
                "observability", observability, PlatformObservability, "a PlatformObservability (new, existing)"
            )
        if access_logs_bucket is not None:
            check_construct("access_logs_bucket", access_logs_bucket, attribute="bucket_name", expected="an s3.IBucket")
        check_bool("capacity_block_events", capacity_block_events)
        if health is not None:
            check_instance("health", health, PlatformHealth, "a PlatformHealth or None")
        check_bool("outputs", outputs)
        self.backend: Backend = _BACKENDS[type(orchestrator)]
        self.orchestrator: Orchestrator = orchestrator
        self._observability_choice = observability
        self._events_on = capacity_block_events
        efa_storage = self._validate(orchestrator, storage)
        self._hyperpod_chart = hyperpod_chart(scope, orchestrator)
        #: The sizing decision for the file system (None without storage).
        self.sizing: LustreSizing | None = storage.size(efa_enabled=efa_storage) if storage is not None else None
        self.capacity.validate_for(self.instance_spec, max_nodes=self.nodes, parameters=("min_nodes", "nodes"))
        subnet = subnet or default_subnet(vpc, self.capacity)
        services = check_services_subnet(
            services_subnet,
            vpc=vpc,
            subnet=subnet,
            backend=self.backend.value,
            storage=storage is not None,
            efa_storage=efa_storage,
        )
        nccl_check = _health.nccl_spec(self, orchestrator, health, storage)
        super().__init__(scope, id)  # after every check: a refused platform leaves nothing in the tree

        self.vpc = vpc
        self.subnet: ec2.ISubnet = subnet
        #: The file system's, controller's, login and head nodes' subnet (``services_subnet``, else :attr:`subnet`).
        self.services_subnet: ec2.ISubnet = services or subnet
        self._efa_storage = efa_storage
        self.storage = storage
        self._access_logs_bucket = access_logs_bucket
        self.cluster_label: str = _cluster_label(self)
        #: Cluster health as given (None: off), the NCCL check the platform runs (None: none) and the remediation
        #: handler (None without a policy or observability).
        self.health: PlatformHealth | None = health
        self.nccl_check: NcclCheckSpec | None = nccl_check
        self.remediation: NodeRemediation | None = None

        self._declare_parts()
        self._observability(observability)
        self._build_backend(orchestrator)
        self._finish(capacity_block_events=capacity_block_events, outputs=outputs)

    # --- build steps ------------------------------------------------------------------------------------------------
    def _declare_parts(self) -> None:
        """What every backend fills in (None where a backend has no such part)."""
        self.security_group: EfaSecurityGroup
        self.file_system: LustreFileSystem | None = None
        self.data_bucket: s3.IBucket | None = None
        self.data_repositories: list[DataRepositoryAssociation] = []
        self.cluster: PcsCluster | ParallelCluster | GpuEksCluster | HyperPodCluster
        self.node_group: Any = None
        #: EKS with ``EksOptions(gpu_capacity=KARPENTER or AUTO_MODE)``: the elastic GPU pool (no node_group then).
        self.elastic_pool: _elastic.ElasticPool | None = None
        self.login_node_group: Any = None
        self.queue: Any = None
        self.eks_cluster: GpuEksCluster | None = None
        self.scraper: AmpEksScraper | None = None
        self.node_bootstrap: NodeBootstrap | None = None
        self.prometheus_workspace: PrometheusWorkspace | None = None
        self.grafana_workspace: GrafanaWorkspace | None = None
        self.capacity_events: CapacityBlockEvents | None = None
        #: HyperPod on EKS: HyperPod's dependencies chart on the EKS cluster (None otherwise).
        self.hyperpod_dependencies: HyperPodEksDependencies | None = None
        self._outputs: dict[str, tuple[str, str]] = {}

    def _build_backend(self, orchestrator: Orchestrator) -> None:
        if isinstance(orchestrator, PcsOptions):
            self._pcs(orchestrator)
        elif isinstance(orchestrator, ParallelClusterOptions):
            self._parallelcluster(orchestrator)
        elif isinstance(orchestrator, EksOptions):
            self._eks(orchestrator)
        else:
            self._hyperpod(orchestrator)

    def _finish(self, *, capacity_block_events: bool, outputs: bool) -> None:
        """What every backend shares once its parts exist: warnings, alarms, events, remediation and outputs."""
        _warn_local_zone(self)
        alerts = self.prometheus_workspace.alert_topic if self.prometheus_workspace is not None else None
        if self.file_system is not None and self.file_system.sizing is not None:  # None: a deploy-time capacity
            self.file_system.add_saturation_alarms(topic=alerts)
        if self.file_system is not None:  # /checkpoints exports to S3: alarm on its backlog (failures need a log group)
            self.file_system.add_export_alarms(topic=alerts, export_failures=self.file_system.log_group is not None)
        if capacity_block_events:
            self._capacity_block_events()
        self.remediation = _health.remediation(self)
        if outputs:
            self._emit_outputs()

    # --- validation: one small check per rule ---------------------------------------------------------------------
    def _validate(self, orchestrator: Orchestrator, storage: PlatformStorage | None) -> bool:
        """Cross-choice rules; returns whether the file system is EFA-enabled."""
        if isinstance(orchestrator, EksOptions):
            self._check_block_scaling(orchestrator)
            if orchestrator.gpu_capacity.elastic:
                _elastic.check_elastic(orchestrator, instance_spec=self.instance_spec, capacity=self.capacity)
        if self.backend is Backend.HYPERPOD:
            self._check_hyperpod_capacity()
            hyperpod_type("instance_type", self.instance_spec.instance_type)
        if isinstance(orchestrator, HyperPodOptions):
            check_hyperpod_storage(orchestrator, storage)
        if storage is None or storage.efa_enabled is None:
            return True
        return storage.efa_enabled

    def _check_block_scaling(self, options: EksOptions) -> None:
        """ON_BLOCK_EVENTS needs the events construct: a block by reservation id, observability and the events on."""
        if options.capacity_block_scaling is not CapacityBlockScaling.ON_BLOCK_EVENTS:
            return
        problem = None
        if not self.capacity.is_capacity_block:
            problem = f"a Capacity Block (capacity is {self.capacity.kind.value})"
        elif getattr(self.capacity, "reservation_id", None) is None:
            problem = "a Capacity Block given by reservation_id (its events name the block by it)"
        elif self._observability_choice is None:
            problem = "observability= (the Capacity Block events construct notifies its alert topic)"
        elif not self._events_on:
            problem = "capacity_block_events=True (it scales the group)"
        if problem is not None:
            raise FmValidationError(
                "orchestrator.capacity_block_scaling",
                options.capacity_block_scaling.name,
                f"CapacityBlockScaling.AT_DEPLOY, or ON_BLOCK_EVENTS with {problem}",
            )

    def _check_hyperpod_capacity(self) -> None:
        if self.capacity.kind is not CapacityKind.ON_DEMAND:
            raise FmValidationError(
                "capacity",
                type(self.capacity).__name__,
                "OnDemand with HyperPod (HyperPod takes no EC2 reservation; give a SageMaker training plan as "
                "HyperPodOptions(capacity=HyperPodCapacity.training_plan(...)))",
            )

    # --- shared parts ------------------------------------------------------------------------------------------------
    def _observability(self, choice: PlatformObservability | None) -> None:
        if choice is None:
            return
        if not choice.is_new:
            self.prometheus_workspace = choice.prometheus_workspace
            self.grafana_workspace = choice.grafana_workspace
            return
        workspace = PrometheusWorkspace(
            self, "Prometheus", alias=choice.alias, extra_rule_groups=_health.rule_groups(self)
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
            kms_key=storage.kms_key,
            removal_policy=storage.removal_policy,
        )
        if storage.data_bucket is not None:
            bucket = storage.data_bucket
        else:
            # PlatformStorage's own access logs bucket first (it was validated and then ignored before issue 18).
            logs = storage.access_logs_bucket or self._access_logs_bucket
            bucket = DataRepositoryBucket(
                self,
                "DataBucket",
                encryption_key=storage.kms_key,
                server_access_logs_bucket=logs,
                server_access_logs_prefix="data/" if logs is not None else None,
                removal_policy=storage.removal_policy,
            ).bucket
        self.data_bucket = bucket
        self.data_repositories = file_system.add_data_repositories(bucket, storage.layout)
        self.file_system = file_system
        return file_system

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

    # --- backends ----------------------------------------------------------------------------------------------------
    def _pcs(self, options: PcsOptions) -> None:
        cluster = PcsCluster(
            self,
            "Cluster",
            vpc=self.vpc,
            subnet=self.services_subnet,  # the controller's; login nodes default to it, GPU nodes get subnet below
            slurm_version=options.slurm_version,
            # PCS UltraServer node groups need the IMEX prolog (PcsCluster enable_imex).
            enable_imex=isinstance(self.capacity, UltraServerCapacityBlock),
            scale_down_idle_time=options.scale_down_idle_time,
            size=options.size,
            accounting=options.accounting,
            accounting_purge_time_days=options.accounting_purge_time_days,
            removal_policy=options.removal_policy,
            node_health=_health.pcs_node_health(self),
        )
        self.cluster = cluster
        # PCS GPU node groups always use the cluster's EFA group: the file system joins it.
        self.security_group = cluster.efa_security_group
        file_system = self._file_system(cluster.efa_security_group)
        mounts = [FileSystemMount(file_system, options_mount(self))] if file_system is not None else []
        if options.login_nodes:
            self.login_node_group = cluster.add_login_node_group(
                "Login",
                ami=options.login_ami or options.ami,
                instance_type=options.login_instance_type,
                nodes=options.login_nodes,
                mounts=mounts,
            )
        gpu = cluster.add_gpu_node_group(
            "Gpu",
            instance_type=self.instance_spec.instance_type,
            ami=options.ami,
            capacity=self.capacity,
            max_nodes=self.nodes,
            subnet=self.subnet,
            mounts=mounts,
        )
        self.node_group = gpu
        self.queue = gpu.add_queue("Queue", queue_name=options.queue_name)
        _health.pcs_nccl(self, options)
        if self.prometheus_workspace is not None:
            monitor_pcs_cluster(
                cluster,
                self.prometheus_workspace,
                cluster_label=self.cluster_label,
                exporter_source=options.exporter_source,
            )
        self._outputs.update(
            {
                "ClusterId": (cluster.cluster_id, "AWS PCS cluster id (aws pcs get-cluster --cluster-identifier <id>)"),
                "SlurmControllerEndpointCommand": (
                    cluster.slurm_controller_endpoint_command,
                    "Prints the Slurm controller's private address and port",
                ),
                "GpuNodesCommand": (gpu.find_instances_command, "Lists the GPU node group's running instances"),
            }
        )
        if cluster.login_command is not None:
            self._outputs["LoginCommand"] = (
                cluster.login_command,
                f"Opens a shell on a login node with Session Manager; then sbatch -p {options.queue_name} job.sh",
            )

    def _parallelcluster(self, options: ParallelClusterOptions) -> None:
        efa = EfaSecurityGroup(self, "EfaSecurityGroup", vpc=self.vpc)
        self.security_group = efa
        file_system = self._file_system(efa)
        spec = self.instance_spec
        resource = ComputeResource(
            # ParallelCluster names: lowercase letters, digits and '-' (NameValidator); "p5en", "p6-b200" ...
            name=spec.instance_type.split(".")[0],
            instance_type=spec.instance_type,
            capacity=self.capacity,
            max_nodes=self.nodes,
        )
        queue = SlurmQueue(name=options.queue_name, subnets=[self.subnet], compute_resources=[resource])
        cluster = ParallelCluster(
            self,
            "Cluster",
            cluster_name=options.cluster_name,
            os=options.os,
            custom_ami=options.custom_ami,
            version=options.version,
            monitoring=options.monitoring,
            removal_policy=options.removal_policy,
            queue_update_strategy=options.queue_update_strategy,
            slurm_accounting=options.slurm_accounting,
            head_node=HeadNode(
                instance_type=options.head_node_instance_type or head_node_instance_type_for(spec.architecture),
                subnet=self.services_subnet,
            ),
            login_nodes=(
                [
                    LoginNodePool(
                        name="login",
                        instance_type=options.login_instance_type or login_node_instance_type_for(spec.architecture),
                        subnet=self.services_subnet,
                        nodes=options.login_nodes,
                    )
                ]
                if options.login_nodes
                else []
            ),
            queues=[queue],
            shared_storage=(
                [SharedLustre(file_system=file_system, mount_dir=options_mount(self))]
                if file_system is not None
                else []
            ),
            # Every node joins the platform's EFA group, which is the file system's (one EFA group).
            node_security_group=efa,
        )
        self.cluster = cluster
        self.node_group = queue
        self.queue = queue
        # The GPU queue's node-side set-up (NVMe RAID0 scratch, collectors) as its OnNodeConfigured action.
        bootstrap = NodeBootstrap(self, "GpuBootstrap", name=f"{_bootstrap_name(self)}-gpu")
        bootstrap.add_step("nvme-scratch", nvme_raid_commands("/scratch"))
        statements: list[iam.PolicyStatement] = []
        workspace = self.prometheus_workspace
        if workspace is not None:
            labels = NodeLabels(
                cluster=cluster.cluster_name, queue=options.queue_name, instance_type=spec.instance_type
            )
            bootstrap.add_step(
                "observability",
                node_collection_commands(
                    remote_write_url=workspace.remote_write_url,
                    region=Stack.of(self).region,
                    labels=labels,
                    job_mapping=JobMappingSpec(),
                ),
            )
            statements.append(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.workspace_arn]))
        #: The head node's OnNodeConfigured bootstrap (prolog checks, NCCL check, collectors; None when empty).
        self.head_bootstrap = _health.parallelcluster(self, cluster, bootstrap, options)
        if workspace is not None:
            # GPU series labelled hpc_job: the job mapping's prolog/epilog from the head node's OnNodeStart.
            enable_parallelcluster_job_mapping(cluster, JobMappingSpec(), event=CustomActionEvent.ON_NODE_START)
        cluster.add_node_bootstrap(bootstrap, queues=[options.queue_name], statements=statements)
        self.node_bootstrap = bootstrap
        self._outputs.update(
            {
                "ClusterName": (cluster.cluster_name, "ParallelCluster cluster name (pcluster describe-cluster -n)"),
                "HeadNodePrivateIp": (cluster.head_node_private_ip, "Private IP address of the Slurm head node"),
                "ValidationMessages": (
                    cluster.validation_messages,
                    "ParallelCluster's configuration validation messages from the last create or update",
                ),
            }
        )

    def _eks(self, options: EksOptions) -> None:
        efa = EfaSecurityGroup(self, "EfaSecurityGroup", vpc=self.vpc)
        self.security_group = efa
        cluster = self._gpu_eks_cluster(
            "Cluster",
            options.version,
            options.admin_roles,
            options.cluster_name,
            efa,
            options.removal_policy,
            auto_mode=options.gpu_capacity is _elastic.EksGpuCapacity.AUTO_MODE,
        )
        self.cluster = cluster
        self.eks_cluster = cluster
        file_system = self._file_system(efa)
        self.elastic_pool = _elastic.add_elastic_pool(self, cluster, options) if options.gpu_capacity.elastic else None
        if self.elastic_pool is None:
            self.node_group = cluster.add_gpu_node_group(
                "Gpu",
                instance_type=self.instance_spec.instance_type,
                capacity=self.capacity,
                max_nodes=self.nodes,
                subnets=[self.subnet],
                capacity_block_scaling=options.capacity_block_scaling,
                node_checks=self.health is not None and self.health.node_checks_on,
            )
        if options.gpu_addons:
            cluster.add_gpu_addons()
        if file_system is not None:
            # Registers the GPU nodes as Lustre (EFA) clients and mounts on the hosts; pods use the claim.
            volume = cluster.add_lustre_volume(
                "FsxVolume",
                file_system,
                name=options.volume_name,
                namespace=options.namespace,
                create_namespace=options.create_namespace,
                host_mount_point=options_mount(self),
            )
            self._outputs["VolumeClaim"] = (
                f"{options.namespace}/{options.volume_name}",
                "PersistentVolumeClaim (namespace/name) that pods mount for the file system",
            )
            _health.eks_nccl(self, cluster, volume, options)
        if options.scheduling:
            scheduling = cluster.add_topology_scheduling(
                namespaces=[options.namespace], create_namespaces=options.create_namespace and file_system is None
            )
            if file_system is not None:
                scheduling.queues.node.add_dependency(volume)  # the volume's manifest may create the namespace
            if self.elastic_pool is not None:
                _elastic.add_elastic_flavor(
                    scheduling, self.elastic_pool, instance_spec=self.instance_spec, max_nodes=self.nodes
                )
        self._eks_scraper(cluster)
        self._eks_outputs(cluster)

    def _hyperpod(self, options: HyperPodOptions) -> None:
        # One EFA group for the nodes and the file system. Slurm: the platform's; EKS: the GpuEksCluster's, so no
        # second group. Either way it is passed to HyperPodCluster and to the file system (EFA-enabled unless the
        # storage says otherwise); HyperPodCluster opens the Lustre ports from it and, for EFA, registers each group
        # that configures LNet over EFA as EFA clients (Slurm: its node set-up mounts over EFA; EKS: its OnCreate
        # lifecycle configures LNet over EFA and the FSx CSI driver, add_lustre_volume below, mounts).
        eks_cluster: GpuEksCluster | None = None
        if options.orchestrator is HyperPodOrchestration.SLURM:
            efa = EfaSecurityGroup(
                self, "EfaSecurityGroup", vpc=self.vpc, description="HyperPod nodes: EFA within the group, HTTPS out"
            )
        else:
            version = options.eks_version or eks.KubernetesVersion.of(HYPERPOD_DEFAULT_KUBERNETES_VERSION)
            eks_cluster = self._gpu_eks_cluster("EksCluster", version, options.admin_roles, None, None)
            efa = eks_cluster.efa_security_group
        self.security_group = efa
        file_system = self._file_system(efa)
        gpu = HyperPodInstanceGroup(
            name=options.gpu_group_name,
            instance_type=self.instance_spec.instance_type,
            nodes=self.nodes,
            capacity=options.capacity,
            extra_ebs_gib=options.extra_ebs_gib,
            efa_interfaces_for_lustre=options.efa_interfaces_for_lustre,
        )
        self.node_group = gpu
        common: dict[str, Any] = {
            "vpc": self.vpc,
            "subnets": [self.subnet],
            "file_system": file_system,
            "access_logs_bucket": self._access_logs_bucket,
            "efa_security_group": efa,
            "removal_policy": options.removal_policy,
        }
        if eks_cluster is None:
            cluster = self._hyperpod_slurm(options, gpu, common)
        else:
            cluster = self._hyperpod_eks(eks_cluster, gpu, common)
        self.cluster = cluster
        self._outputs.update(
            {
                "HyperPodClusterArn": (cluster.cluster_arn, "SageMaker HyperPod cluster ARN"),
                "HyperPodClusterName": (cluster.cluster_name, "aws sagemaker describe-cluster --cluster-name <name>"),
                "ClusterHealthCommand": (
                    Fn.join("", ["aws sagemaker list-cluster-nodes --cluster-name ", cluster.cluster_name]),
                    "Node status per instance group (or fmconstructs.hyperpod.describe_cluster_health)",
                ),
            }
        )

    def _hyperpod_slurm(
        self, options: HyperPodOptions, gpu: HyperPodInstanceGroup, common: dict[str, Any]
    ) -> HyperPodCluster:
        groups = [HyperPodInstanceGroup(name="controller", instance_type=options.controller_instance_type, nodes=1)]
        if options.login_instance_type is not None:
            groups.append(HyperPodInstanceGroup(name="login", instance_type=options.login_instance_type, nodes=1))
            self.login_node_group = groups[-1]
        cluster = HyperPodCluster(
            self,
            "Cluster",
            orchestrator=HyperPodOrchestrator.slurm(
                controller_group="controller",
                login_group="login" if options.login_instance_type is not None else None,
            ),
            instance_groups=[*groups, gpu],
            base_config_dir=options.base_config_dir,
            prometheus_workspace=self.prometheus_workspace,
            mount_point=self.mount_point or LUSTRE_MOUNT_POINT,
            **common,
        )
        if cluster.login_command is not None:
            node = "login" if options.login_instance_type is not None else "controller"
            self._outputs["LoginCommand"] = (
                cluster.login_command,
                f"Opens a shell on the {node} node with Session Manager (as root: sudo su - ubuntu); then "
                f"sbatch -p {options.gpu_group_name} job.sh",
            )
        return cluster

    def _hyperpod_eks(
        self, eks_cluster: GpuEksCluster, gpu: HyperPodInstanceGroup, common: dict[str, Any]
    ) -> HyperPodCluster:
        self.eks_cluster = eks_cluster
        cluster = HyperPodCluster(
            self, "Cluster", orchestrator=HyperPodOrchestrator.eks(eks_cluster), instance_groups=[gpu], **common
        )
        # The NVIDIA and EFA device plugins once: GpuEksCluster's (the dependencies chart's own are off,
        # eks_dependencies.dependencies_values), with the DCGM exporter and the FSx CSI driver; add_dependent below
        # registers the ml. types with them.
        eks_cluster.add_gpu_addons()
        assert self._hyperpod_chart is not None  # resolved (or refused) before the platform was built
        self.hyperpod_dependencies = HyperPodEksDependencies(
            self, "HyperPodDependencies", cluster=eks_cluster, chart=self._hyperpod_chart
        )
        self.hyperpod_dependencies.add_dependent(cluster)
        if common["file_system"] is not None:
            eks_cluster.add_lustre_volume("FsxVolume", common["file_system"], name=HYPERPOD_EKS_VOLUME)
            self._outputs["VolumeClaim"] = (
                f"default/{HYPERPOD_EKS_VOLUME}",
                "PersistentVolumeClaim (namespace/name) that pods mount for the file system",
            )
        self._eks_scraper(eks_cluster)
        self._eks_outputs(eks_cluster)
        return cluster

    # --- EKS helpers (EKS and HyperPod on EKS) ------------------------------------------------------------------------
    def _gpu_eks_cluster(
        self,
        id: str,
        version: Any,
        admin_roles: Any,
        cluster_name: str | None,
        efa: EfaSecurityGroup | None,
        removal_policy: Any = None,
        auto_mode: bool = False,
    ) -> GpuEksCluster:
        extra: dict[str, Any] = {} if version is None else {"version": version}
        if auto_mode:
            extra["auto_mode"] = True
        if removal_policy is not None:
            extra["removal_policy"] = removal_policy
        return GpuEksCluster(
            self,
            id,
            vpc=self.vpc,
            cluster_name=cluster_name,
            admin_roles=list(admin_roles),
            efa_security_group=efa,
            **extra,
        )

    def _eks_scraper(self, cluster: GpuEksCluster) -> None:
        if self.prometheus_workspace is not None:
            self.scraper = AmpEksScraper(
                self, "Scraper", cluster=cluster, workspace=self.prometheus_workspace, cluster_label=self.cluster_label
            )

    def _eks_outputs(self, cluster: GpuEksCluster) -> None:
        self._outputs.update(
            {
                "EksClusterName": (cluster.cluster_name, "EKS cluster name"),
                "UpdateKubeconfigCommand": (
                    cluster.update_kubeconfig_command,
                    "Writes a kubeconfig entry for the cluster (as an admin role, from a host that reaches the "
                    "private endpoint)",
                ),
            }
        )

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
        self.capacity_events = CapacityBlockEvents(
            self,
            "CapacityBlockEvents",
            alert_topic=workspace.alert_topic,
            pcs_login_node_group_id=login_id,
            capacity_reservation_ids=[reservation_id] if reservation_id is not None and known(reservation_id) else None,
            interruptible_reservation_ids=[reservation_id] if interruptible and reservation_id is not None else None,
            eks_cluster=self.eks_cluster if self.backend is Backend.EKS else None,
            scaling_targets=(
                [self.node_group]
                if isinstance(self.orchestrator, EksOptions)
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


def options_mount(platform: TrainingPlatform) -> str:
    """The storage mount point (only called when there is storage)."""
    point = platform.mount_point
    assert point is not None
    return point


def _warn_local_zone(platform: TrainingPlatform) -> None:
    """Where the services went (:mod:`~fmconstructs.platform.placement`): a warning when the nodes' subnet is known to
    be in a Local Zone (or Wavelength Zone) listing what the library put in it, naming ``services_subnet``; a warning
    when ``services_subnet`` is in another known zone than the nodes."""
    services = [
        *{
            Backend.PCS: ["the PCS controller's network interface"],
            Backend.PARALLELCLUSTER: ["the ParallelCluster head node"],
            Backend.EKS: [],
            Backend.HYPERPOD: [],
        }[platform.backend]
    ]
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


def _bootstrap_name(scope: Construct) -> str:
    """A node bootstrap name (1-64 letters, digits, '.', '_' or '-') from the construct id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", scope.node.id)[:56] or "platform"
