"""HyperPodCluster: a SageMaker HyperPod cluster (``AWS::SageMaker::Cluster``) with Slurm or EKS orchestration.

Sources: CloudFormation ``AWS::SageMaker::Cluster`` (aws-cdk-lib ``aws_sagemaker.CfnCluster``), the botocore
``sagemaker`` model of ``CreateCluster``, SageMaker Developer Guide pages "sagemaker-hyperpod-prerequisites",
"sagemaker-hyperpod-prerequisites-iam", "sagemaker-hyperpod-eks-prerequisites" and the deep health check pages.
API-driven Slurm (``Orchestrator.Slurm``, ``InstanceGroups[].SlurmConfig``, ``LifeCycleConfig.OnInitComplete``,
``InstanceStorageConfigs[].FsxLustreConfig``): the botocore ``sagemaker`` model shipped with boto3 1.44.8 and
aws-cdk-lib 2.275 ``CfnCluster``; SageMaker API reference ClusterOrchestratorSlurmConfig and ClusterSlurmConfig;
SageMaker Developer Guide "sagemaker-hyperpod-slurm-api-config-migration" (only its introduction and table of
contents were readable); awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/Extensions (README files of
observability, add-users and detect-node; commit 0edaf15).

The constructor reads as validate (:mod:`~fmconstructs.hyperpod.cluster_inputs`), then build steps whose concerns live
in modules beside this one: the orchestrator (:mod:`~fmconstructs.hyperpod.orchestrator`), the lifecycle scripts and
their bucket (:mod:`~fmconstructs.hyperpod.cluster_lifecycle`), each group's node set-up with the API-driven
configuration (:mod:`~fmconstructs.hyperpod.cluster_node_setup`), Lustre over EFA
(:mod:`~fmconstructs.hyperpod.cluster_lustre`), the execution role (:mod:`~fmconstructs.hyperpod.cluster_role`) and
the instance groups' rendering (:mod:`~fmconstructs.hyperpod.cluster_groups`). This module re-exports their public
names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from aws_cdk import Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import RemovedAttribute, check_scope_id, located
from ..bootstrap import NodeBootstrap
from ..budgets import check_template_budgets
from ..errors import WarningId, add_warning
from ..health import NodeHealthOptions
from ..networking import EfaSecurityGroup
from ..observability.app_metrics import AppMetricsSpec
from ..observability.job_mapping import JobMappingSpec
from ..observability.sources import ExporterSource
from ..storage import LustreFileSystemBase
from . import _nag
from .access import session_command
from .cluster_groups import group_property, orchestrator_property
from .cluster_inputs import MAX_SECURITY_GROUPS as MAX_SECURITY_GROUPS
from .cluster_inputs import MAX_SUBNETS as MAX_SUBNETS
from .cluster_inputs import ClusterInputs, ClusterProps, check_cluster_inputs
from .cluster_lifecycle import LIFECYCLE_BUCKET_PREFIX as LIFECYCLE_BUCKET_PREFIX
from .cluster_lifecycle import LIFECYCLE_PREFIX as LIFECYCLE_PREFIX
from .cluster_lifecycle import (
    build_lifecycle_bucket,
    build_lifecycle_deployment,
    lifecycle_s3_uri,
    per_group_sources,
    shared_sources,
)
from .cluster_lustre import LUSTRE_EFA_DECIDED_ON_NODE as LUSTRE_EFA_DECIDED_ON_NODE
from .cluster_role import INSTANCE_ROLE_MANAGED_POLICY as INSTANCE_ROLE_MANAGED_POLICY
from .cluster_role import build_execution_role, grant_execution_role
from .data_safety import DEFAULT_REMOVAL_POLICY, warn_fixed_cluster_name
from .iam import VPC_DESCRIBE_ACTIONS, VPC_ENI_ACTIONS
from .orchestrator import HYPERPOD_EKS_AUTHENTICATION_MODES as HYPERPOD_EKS_AUTHENTICATION_MODES
from .orchestrator import HyperPodOrchestrator as HyperPodOrchestrator
from .orchestrator import OrchestratorKind as OrchestratorKind
from .provisioning import HyperPodAutoScaling, NodeProvisioningMode, TieredCheckpointing, cluster_properties
from .storage_rules import LUSTRE_MOUNT_POINT
from .types import HyperPodInstanceGroup, HyperPodLustreMount, NodeRecovery, SlurmConfiguration

#: VPC permissions of the execution role when the cluster has a VpcConfig ("sagemaker-hyperpod-prerequisites-iam";
#: statement list UNCONFIRMED verbatim: read from the page's summary, not its JSON). Since 0.2.x the interface
#: changes are scoped to the cluster's network (:func:`~fmconstructs.hyperpod.iam.vpc_statements`).
VPC_ACTIONS = (*VPC_ENI_ACTIONS, *VPC_DESCRIBE_ACTIONS)
#: Kubernetes versions SageMaker HyperPod documents for EKS orchestration: SageMaker Developer Guide "Getting started
#: with Amazon EKS support in SageMaker HyperPod" (sagemaker-hyperpod-eks-prerequisites,
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html), "Kubernetes version
#: support": "SageMaker HyperPod supports Kubernetes versions 1.30, 1.31, 1.32, 1.33, 1.34, and 1.35" (the page's
#: newest text seen, its Markdown source, 2026; older copies list 1.28-1.32, 1.28-1.33 and 1.28-1.34).
HYPERPOD_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")  # sagemaker-hyperpod-eks-prerequisites
#: The version ``TrainingPlatform`` gives HyperPod's EKS cluster: the newest one listed above, which aws-cdk-lib 2.275
#: offers (``aws_eks_v2.KubernetesVersion.V1_35``) with the kubectl layer package ``aws-cdk.lambda-layer-kubectl-v35``
#: (installed with fmconstructs; GpuEksCluster's own default, :data:`~fmconstructs.eks.versions.
#: DEFAULT_KUBERNETES_VERSION`).
HYPERPOD_DEFAULT_KUBERNETES_VERSION = "1.35"  # newest of the above; aws_eks_v2.KubernetesVersion.V1_35
#: The warning id for an EKS version HyperPod does not document (to be added to WarningId by the lead).
KUBERNETES_VERSION_WARNING = WarningId.HYPERPOD_KUBERNETES_VERSION.qualified


def _default_cluster_name(scope: Construct, id: str) -> str | None:
    stack_name = Stack.of(scope).stack_name
    if Token.is_unresolved(stack_name):
        return None
    name = re.sub(r"[^a-zA-Z0-9]+", "-", f"{stack_name}-{id}").strip("-")
    return name[:63].rstrip("-") or None


class HyperPodCluster(Construct):
    """A SageMaker HyperPod cluster on ``AWS::SageMaker::Cluster``.

    :param vpc: the nodes' VPC (``VpcConfig``); may be imported by id.
    :param instance_groups: :class:`HyperPodInstanceGroup` list (unique names).
    :param orchestrator: :class:`HyperPodOrchestrator`: ``.slurm(controller_group=..., login_group=...)`` or
        ``.eks(gpu_eks_cluster)``. Slurm defaults to HyperPod's API-driven configuration (``Orchestrator.Slurm``
        with ``SlurmConfigStrategy``, each group's ``SlurmConfig``, ``OnInitComplete`` under ``lifecycle/<group>/``):
        HyperPod configures and starts Slurm, and the cluster is complete without any published lifecycle script.
    :param subnets: ``VpcConfig.Subnets`` (1-16). Default: the VPC's private subnets. Subnets without a known zone
        are accepted.
    :param cluster_name: ``ClusterName`` (1-63, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``). Default: ``<stack>-<id>``.
    :param node_recovery: ``NodeRecovery``. Default: :attr:`NodeRecovery.AUTOMATIC`.
    :param file_system: an fmconstructs Lustre file system, mounted at ``/fsx`` on every node; the node security group
        may reach it. ``SlurmConfiguration.API``: mounted as ``lustre_mount`` says. ``LIFECYCLE_SCRIPTS``: the
        provisioning parameters carry ``fsx_dns_name``/``fsx_mountname`` and the published ``lifecycle_script.py``
        mounts it (``mount_fsx.sh``); fmconstructs does not mount it a second time. EKS orchestration: the FSx CSI
        driver mounts it in pods (``GpuEksCluster.add_lustre_volume``, whose node DaemonSet runs on HyperPod's nodes
        too), so it is not mounted at ``/fsx``; the node security group may reach it (TCP 988, 1018-1023), and when
        it is EFA-enabled every GPU group whose type the catalog holds configures LNet over EFA in its ``OnCreate``
        lifecycle (:func:`~fmconstructs.storage.lustre_lnet_commands`: Lustre client when missing, LNet over EFA on
        the group's ``efa_interfaces_for_lustre`` interfaces, a systemd unit that redoes it at every boot; no mount),
        so the CSI driver's ``<dns>@tcp:/<mount name>`` mounts go over EFA, as GpuEksCluster's own node groups do
        from their launch templates. Each of those groups is registered against the file system's 1,024 EFA
        connections (``nodes`` x interfaces; synthesis fails above it) and its EFA group is opened to the file
        system's (no rules when they share one). With an EFA-enabled file system every instance group gets a
        lifecycle prefix of its own (``lifecycle/<group>/``, as with ``SlurmConfiguration.API``).
    :param mount_point: where the nodes mount ``file_system`` with ``SlurmConfiguration.API`` (fmconstructs' mount
        step, or HyperPod's ``FsxLustreConfig.MountPath``). Default :data:`LUSTRE_MOUNT_POINT` (``/fsx``), the only one
        accepted with ``base_config_dir`` (the published ``lifecycle_script.py`` mounts at ``/fsx``) and with EKS
        orchestration (pods mount the claim at the path of their own ``volumeMounts``; nothing mounts on the node).
    :param lustre_mount: :class:`HyperPodLustreMount` (``SlurmConfiguration.API`` with a ``file_system`` only).
        Default: ``NODE_BOOTSTRAP`` (the storage module's mount steps in fmconstructs' lifecycle script).
    :param base_config_dir: a local copy of HyperPod's published lifecycle scripts (awsome-distributed-training
        ``LifecycleScripts/base-config``), for ``SlurmConfiguration.LIFECYCLE_SCRIPTS``: uploaded beside
        fmconstructs' files; its ``lifecycle_script.py`` then runs after the fmconstructs steps (it configures Slurm,
        mounts the file system and, with ``prometheus_workspace``, runs its own collectors). Default: none
        (``SlurmConfiguration.API``: HyperPod configures Slurm, fmconstructs mounts the file system and installs its
        collectors).
    :param setup_commands: shell lines run on every node (a :class:`~fmconstructs.bootstrap.NodeBootstrap` step,
        rendered at construction into ``fmconstructs_setup.sh``; before the base-config with ``LIFECYCLE_SCRIPTS``,
        after the Lustre mount and collectors with ``API``).
    :param security_groups: up to 4 more groups for ``VpcConfig.SecurityGroupIds``.
    :param efa_security_group: the nodes' EFA group (an :class:`~fmconstructs.networking.EfaSecurityGroup` in
        ``vpc``), first in ``VpcConfig.SecurityGroupIds``: share one with an EFA-enabled file system
        (``LustreFileSystem(efa_security_group=...)``, made before the cluster) or with a ``GpuEksCluster``
        (``gpu_eks_cluster.efa_security_group``). The cluster adds its HTTPS-out rule to it. Default: a new one
        (``HyperPod nodes: EFA within the group, HTTPS out``).
    :param access_logs_bucket: where the lifecycle bucket writes S3 server access logs. Default: none.
    :param lifecycle_bucket_name: the lifecycle bucket's name; it must start with ``sagemaker-`` (HyperPod's
        ``SourceS3Uri`` requirement). Default: ``sagemaker-fmc-<account>-<first 8 of the stack id's UUID>-<6 hex of
        this construct's path>``, unique per stack creation, so a deleted stack's retained bucket never blocks a new
        one and StackSet instances get their own.
    :param prometheus_workspace: an fmconstructs ``PrometheusWorkspace`` (Slurm; FmObservability's): the execution
        role gets ``aps:RemoteWrite`` on it. ``SlurmConfiguration.API``: GPU groups run fmconstructs' node collectors
        (the exporters, EFA collector and Prometheus agent PCS GPU nodes get,
        :func:`~fmconstructs.observability.collection.node_collection_commands`) and the login group (else the
        controller group) also collects Slurm node states, all remote-writing to the workspace with labels
        ``cluster`` (the cluster name, or the construct id when CloudFormation names it), ``node_group``,
        ``queue`` (the partition, ``login``) and ``instance_type``. ``LIFECYCLE_SCRIPTS``: a setup step turns on the
        published base-config's own observability instead (``config.py``: ``Config.enable_observability = True``,
        ``ObservabilityConfig.prometheus_remote_write_url`` = the workspace's remote-write URL), so a node never runs
        two collector sets. Default: none.
    :param exporter_source: where fmconstructs' collectors come from (an
        :class:`~fmconstructs.observability.sources.ExporterSource`; ``API`` with ``prometheus_workspace``).
        Default: ``ExporterSource.INTERNET``.
    :param job_mapping: ``SlurmConfiguration.API`` with ``prometheus_workspace``: label every GPU series with the Slurm
        job using the GPU (``hpc_job``, the numeric job id), as ``monitor_pcs_cluster`` does on PCS: each GPU compute
        group's set-up copies the dcgm-exporter job mapping pieces into the HyperPod AMI's ``/opt/slurm/etc/prolog.d``
        and ``epilog.d`` and its exporter reads the mapping; the controller group's set-up adds ``Alloc`` to
        ``PrologFlags`` in ``slurm.conf`` (:mod:`fmconstructs.hyperpod.slurm_scripts`). ``True`` (default): the
        default :class:`~fmconstructs.observability.job_mapping.JobMappingSpec`; a spec to choose its directory (refused
        without the API configuration and a workspace); ``False`` or None: off.
    :param app_metrics: with the job mapping, also install the pieces that turn a job's declared metrics ports
        (``sbatch --comment="fm_metrics_ports=9300-9307"``) into ``fm-app`` targets of the GPU node's agent
        (:mod:`~fmconstructs.observability.app_metrics`). ``True`` (default), an ``AppMetricsSpec``, or ``False``/None.
    :param removal_policy: what CloudFormation does with the ``AWS::SageMaker::Cluster`` when it leaves the stack or is
        replaced (``DeletionPolicy`` and ``UpdateReplacePolicy``): ``RemovalPolicy.DESTROY`` (default, as before this
        option: the cluster, its nodes and their local storage are deleted; the lifecycle bucket and a file system
        are retained by their own policies) or ``RemovalPolicy.RETAIN`` (the cluster keeps running, and billing,
        outside the stack; delete it yourself; its network interfaces keep the subnets and security groups in use).
        See :mod:`fmconstructs.hyperpod.data_safety`.
    :param node_provisioning_mode: ``NodeProvisioningMode`` (:class:`~fmconstructs.hyperpod.provisioning.
        NodeProvisioningMode`): ``CONTINUOUS`` keeps groups InService while HyperPod launches and retries instances
        towards each group's ``nodes``. Default: not set (HyperPod's standard provisioning).
    :param auto_scaling: ``AutoScaling`` and ``ClusterRole`` (:class:`~fmconstructs.hyperpod.provisioning.
        HyperPodAutoScaling`): HyperPod's managed Karpenter autoscaling; EKS only, with ``CONTINUOUS`` provisioning and
        ``NodeRecovery.AUTOMATIC``. Without a ``cluster_role`` the cluster creates one (:attr:`autoscaling_role`).
        Default: not set.
    :param tiered_checkpointing: ``TieredStorageConfig`` (:class:`~fmconstructs.hyperpod.provisioning.
        TieredCheckpointing`): managed tiered checkpointing. Default: not set.
    :param node_health: node checks on the GPU compute groups (:class:`~fmconstructs.health.NodeHealthOptions`,
        ``SlurmConfiguration.API`` only): the boot gate from each group's ``OnInitComplete`` set-up (it reserves the
        node while checking, drains it on failure and never fails the set-up), the prolog checks in the AMI's
        ``prolog.d`` and ``nohold_on_prolog_fail`` on the controller; DCGM only on groups without HyperPod's
        ``InstanceStress`` deep health check, which runs DCGM level 4 (:mod:`fmconstructs.hyperpod.node_health`).
        Default: None (off; HyperPod's own deep health checks and node recovery only).

    Create-time choices: ``cluster_name``, ``vpc``/``subnets``/``security_groups``/``efa_security_group``
    (``VpcConfig``) and the EKS cluster of ``orchestrator`` are create-only properties of the resource: changing one
    replaces the cluster (a new, empty one), which fails and rolls back because the name is fixed (the default name
    ``<stack>-<id>`` too). A given ``cluster_name`` warns ``fmconstructs:hyperpod-fixed-cluster-name``.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_groups: Sequence[HyperPodInstanceGroup],
        orchestrator: HyperPodOrchestrator,
        subnets: Sequence[ec2.ISubnet] | None = None,
        cluster_name: str | None = None,
        node_recovery: NodeRecovery = NodeRecovery.AUTOMATIC,
        file_system: LustreFileSystemBase | None = None,
        base_config_dir: str | None = None,
        setup_commands: Sequence[str] = (),
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        access_logs_bucket: s3.IBucket | None = None,
        lifecycle_bucket_name: str | None = None,
        prometheus_workspace: Any = None,
        lustre_mount: HyperPodLustreMount | None = None,
        exporter_source: ExporterSource | None = None,
        efa_security_group: EfaSecurityGroup | None = None,
        mount_point: str = LUSTRE_MOUNT_POINT,
        removal_policy: RemovalPolicy = DEFAULT_REMOVAL_POLICY,
        job_mapping: JobMappingSpec | bool | None = True,
        app_metrics: AppMetricsSpec | bool | None = True,
        node_provisioning_mode: NodeProvisioningMode | None = None,
        auto_scaling: HyperPodAutoScaling | None = None,
        tiered_checkpointing: TieredCheckpointing | None = None,
        node_health: NodeHealthOptions | None = None,
    ) -> None:
        check_scope_id(scope, id)
        inputs = check_cluster_inputs(ClusterProps.of(locals()))
        super().__init__(scope, id)
        self._set_attributes(inputs, scope, id)
        group_ids = self._build_network(inputs)
        self._build_lifecycle_scripts(inputs)
        self.execution_role = build_execution_role(self, inputs, group_ids)
        grant_execution_role(self, inputs)
        self._build_resource(inputs, group_ids)
        self._finish(inputs)
        check_template_budgets(self)  # CloudFormation's template limits, at synthesis (issue 30)

    def _set_attributes(self, inputs: ClusterInputs, scope: Construct, id: str) -> None:
        """The cluster's public attributes known before any resource (the build steps fill the others)."""
        mode, file_system = inputs.mode, inputs.file_system
        self.instance_groups: tuple[HyperPodInstanceGroup, ...] = inputs.groups
        self.orchestrator = inputs.orchestrator
        self.file_system = file_system
        #: The dcgm-exporter job mapping the GPU compute groups keep (None: off) and the application metrics' spec.
        self.job_mapping: JobMappingSpec | None = inputs.job_mapping
        self.app_metrics: AppMetricsSpec | None = inputs.app_metrics
        #: The GPU compute groups' node checks (None: off).
        self.node_health: NodeHealthOptions | None = inputs.node_health
        self.slurm_configuration: SlurmConfiguration | None = mode
        self.lustre_mount: HyperPodLustreMount | None = inputs.mount
        #: Where the nodes mount the file system (None without one, and with EKS orchestration: pods mount the claim).
        self.mount_point: str | None = (
            inputs.mount_point
            if file_system is not None and inputs.orchestrator.kind is OrchestratorKind.SLURM
            else None
        )
        self.cluster_name_given = inputs.cluster_name or _default_cluster_name(scope, id)
        #: Each instance group's node set-up (rendered at construction into its ``fmconstructs_setup.sh``). With
        #: ``SlurmConfiguration.API``, and with EKS and an EFA-enabled file system, every group has its own (and its
        #: own lifecycle prefix, ``lifecycle/<group>/``); otherwise all groups share one, under ``lifecycle/`` (beside
        #: the base-config with ``LIFECYCLE_SCRIPTS``).
        self.node_bootstraps: dict[str, NodeBootstrap] = {}
        self.provisioning_parameters: dict[str, Any] | None = None
        #: The instance groups that configure LNet over EFA for the cluster's EFA-enabled file system, and the EFA
        #: interfaces each of their nodes uses for it (None: decided on the node, for a type the catalog lacks).
        self.lustre_efa_interfaces: dict[str, int | None] = {}
        #: Whether each instance group has a lifecycle prefix of its own (``lifecycle/<group>/``):
        #: ``SlurmConfiguration.API``, or EKS with an EFA-enabled file system.
        self.per_group_lifecycle: bool = mode is SlurmConfiguration.API or inputs.eks_lustre_efa

    def _build_network(self, inputs: ClusterInputs) -> list[str]:
        """The nodes' EFA security group and ``VpcConfig.SecurityGroupIds``.

        The EFA rules HyperPod documents (sagemaker-hyperpod-prerequisites: the security group allows all inbound and
        outbound traffic to and from itself, for EFA) + HTTPS out for AWS APIs and S3. A given EfaSecurityGroup
        already has the EFA rules; it gets the HTTPS rule too."""
        self.efa_security_group = inputs.efa_security_group or EfaSecurityGroup(
            self, "EfaSecurityGroup", vpc=inputs.vpc, description="HyperPod nodes: EFA within the group, HTTPS out"
        )
        self.efa_security_group.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS APIs, S3 and ECR"
        )
        if inputs.file_system is not None:
            inputs.file_system.allow_clients_from(self.efa_security_group)
        group_ids = [self.efa_security_group.security_group_id, *(g.security_group_id for g in inputs.extra_groups)]
        if inputs.orchestrator.kind is OrchestratorKind.EKS:
            # Nodes join the EKS cluster: its cluster security group lets members reach the control plane
            # (UNCONFIRMED that HyperPod requires it in VpcConfig; EKS UG sec-group-reqs: the cluster security group).
            sg = getattr(inputs.orchestrator.eks_cluster, "cluster_security_group", None)
            if sg is not None and len(group_ids) < MAX_SECURITY_GROUPS:
                group_ids.append(sg.security_group_id)
        return group_ids

    def _build_lifecycle_scripts(self, inputs: ClusterInputs) -> None:
        """The lifecycle bucket, each group's node set-up (or the shared one) and their upload under ``lifecycle/``."""
        self.lifecycle_bucket = build_lifecycle_bucket(self, inputs)
        sources = per_group_sources(self, inputs) if self.per_group_lifecycle else shared_sources(self, inputs)
        self.lifecycle_deployment = build_lifecycle_deployment(self, self.lifecycle_bucket, sources)
        self.lifecycle_s3_uri: str = lifecycle_s3_uri(self.lifecycle_bucket)

    def _build_resource(self, inputs: ClusterInputs, group_ids: Sequence[str]) -> None:
        """The ``AWS::SageMaker::Cluster``, after the lifecycle upload, with its removal policy."""
        # Continuous provisioning, autoscaling (and its ClusterRole), tiered checkpointing (.provisioning).
        orchestrator = orchestrator_property(inputs)
        current_api, self.autoscaling_role = cluster_properties(
            self,
            node_provisioning_mode=inputs.node_provisioning_mode,
            auto_scaling=inputs.auto_scaling,
            tiered_checkpointing=inputs.tiered_checkpointing,
        )
        self.resource = sagemaker.CfnCluster(
            self,
            "Resource",
            **current_api,
            cluster_name=self.cluster_name_given,
            instance_groups=[group_property(self, g) for g in inputs.groups],
            node_recovery=inputs.node_recovery.value,
            orchestrator=orchestrator,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=group_ids, subnets=[s.subnet_id for s in inputs.subnets]
            ),
        )
        self.resource.node.add_dependency(self.lifecycle_deployment)
        self.resource.apply_removal_policy(inputs.removal_policy)
        self.removal_policy: RemovalPolicy = inputs.removal_policy

    def _finish(self, inputs: ClusterInputs) -> None:
        """Warnings, the plan record, the resource's wait on the role's policy, and the cdk-nag acknowledgements."""
        mode, file_system, mount = inputs.mode, inputs.file_system, inputs.mount
        if inputs.cluster_name is not None:
            warn_fixed_cluster_name(self, inputs.cluster_name)
        own_mount = inputs.eks_lustre_efa or (
            mode is SlurmConfiguration.API and mount is HyperPodLustreMount.NODE_BOOTSTRAP
        )
        efa_fs = file_system is not None and file_system.efa_enabled
        self._write_plan_record(inputs.groups, lustre_over_efa=efa_fs and own_mount)
        if inputs.orchestrator.kind is OrchestratorKind.EKS:
            self._check_kubernetes_version(inputs.orchestrator)
        policy = self.execution_role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            self.resource.node.add_dependency(policy)
        self.node_recovery = inputs.node_recovery
        _nag.acknowledge_cluster(self)

    def _check_kubernetes_version(self, orchestrator: HyperPodOrchestrator) -> None:
        """Warn when the EKS cluster runs a Kubernetes version HyperPod does not document."""
        version = getattr(getattr(orchestrator.eks_cluster, "version", None), "version", None)
        if isinstance(version, str) and version not in HYPERPOD_KUBERNETES_VERSIONS:
            add_warning(
                self,
                WarningId.HYPERPOD_KUBERNETES_VERSION,
                f"the EKS cluster runs Kubernetes {version}; SageMaker HyperPod documents "
                f"{', '.join(HYPERPOD_KUBERNETES_VERSIONS)} (sagemaker-hyperpod-eks-prerequisites)",
            )

    def _write_plan_record(self, groups: Sequence[HyperPodInstanceGroup], *, lustre_over_efa: bool) -> None:
        """The plan record ``fmc plan`` reads; with Lustre over EFA, each group's EFA interfaces for LNet (or
        :data:`LUSTRE_EFA_DECIDED_ON_NODE`)."""
        marker: dict[str, int | str] | None = None
        if lustre_over_efa:
            counts = {g.name: self.lustre_efa_interfaces.get(g.name, 0) for g in groups}
            marker = {name: LUSTRE_EFA_DECIDED_ON_NODE if n is None else n for name, n in counts.items()}
        write_plan_record(self.resource, PlanKind.NODE_GROUP, backend="hyperpod", lustre_efa_interfaces=marker)

    node_bootstrap = RemovedAttribute("node_bootstraps[<group name>] (one per instance group)")

    def lifecycle_s3_uri_of(self, group_name: str) -> str:
        """``LifeCycleConfig.SourceS3Uri`` of a group: ``lifecycle/<group>/`` with ``SlurmConfiguration.API`` or EKS
        with an EFA-enabled file system (:attr:`per_group_lifecycle`), else the shared ``lifecycle/``."""
        if not self.per_group_lifecycle:
            return self.lifecycle_s3_uri
        return Fn.join("", [self.lifecycle_s3_uri, group_name, "/"])

    @property
    def cluster_arn(self) -> str:
        """``Fn::GetAtt ClusterArn``."""
        return self.resource.attr_cluster_arn

    @property
    def cluster_name(self) -> str:
        """The cluster's name (given, or ``<stack>-<id>``; for an environment-agnostic stack name, the ARN)."""
        return self.cluster_name_given or self.resource.attr_cluster_arn

    @property
    def cluster_id(self) -> str:
        """The cluster id: the last part of ``ClusterArn`` (``arn:...:cluster/<12 characters>``, botocore sagemaker
        model ``ClusterArn`` pattern), the ``<cluster-id>`` of Session Manager targets."""
        return Fn.select(1, Fn.split("/", self.cluster_arn))

    @property
    def login_command(self) -> str | None:
        """Slurm: an AWS CLI command that opens a shell through Session Manager on a running node of the login group
        (else the controller group); None with EKS orchestration (:func:`~fmconstructs.hyperpod.access.
        session_command`)."""
        orchestrator = self.orchestrator
        if orchestrator.kind is not OrchestratorKind.SLURM:
            return None
        group = orchestrator.login_group or orchestrator.controller_group or ""
        return session_command(cluster_id=self.cluster_id, cluster_name=self.cluster_name, group=group)

    @property
    def security_group(self) -> ec2.ISecurityGroup:
        return self.efa_security_group.security_group

    @property
    def connections(self) -> ec2.Connections:
        return self.efa_security_group.connections
