"""HyperPodCluster: a SageMaker HyperPod cluster (``AWS::SageMaker::Cluster``) with Slurm or EKS orchestration.

Sources: CloudFormation ``AWS::SageMaker::Cluster`` (aws-cdk-lib ``aws_sagemaker.CfnCluster``), the botocore
``sagemaker`` model of ``CreateCluster``, SageMaker Developer Guide pages "sagemaker-hyperpod-prerequisites",
"sagemaker-hyperpod-prerequisites-iam", "sagemaker-hyperpod-eks-prerequisites" and the deep health check pages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from aws_cdk import Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .._validate import (
    check_construct,
    check_enum,
    check_scope_id,
    check_sequence,
    check_str,
    check_str_sequence,
    check_subnet,
    check_vpc,
)
from ..bootstrap import BootstrapDelivery, NodeBootstrap
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from ..networking import EfaSecurityGroup
from ..storage import LustreFileSystemBase
from .lifecycle import ON_CREATE, lifecycle_files, observability_commands, slurm_provisioning_parameters
from .types import NAME_ALLOWED, NAME_PATTERN, HyperPodInstanceGroup, NodeRecovery

#: The managed policy HyperPod documents for the cluster instance (execution) role (SageMaker Developer Guide
#: "sagemaker-hyperpod-prerequisites-iam", IAM role for SageMaker HyperPod).
INSTANCE_ROLE_MANAGED_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
#: VPC permissions of the execution role when the cluster has a VpcConfig ("sagemaker-hyperpod-prerequisites-iam";
#: statement list UNCONFIRMED verbatim: read from the page's summary, not its JSON).
VPC_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DetachNetworkInterface",
)
#: Kubernetes versions SageMaker HyperPod documents for EKS orchestration (SageMaker Developer Guide
#: "sagemaker-hyperpod-eks-prerequisites", newest text seen (docs.amazonaws.cn, 2026): 1.28-1.34; other copies list
#: up to 1.32 or 1.33).
HYPERPOD_KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
#: EKS authentication modes HyperPod supports (same page): API and API_AND_CONFIG_MAP.
HYPERPOD_EKS_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
#: The warning id for an EKS version HyperPod does not document (to be added to WarningId by the lead).
KUBERNETES_VERSION_WARNING = WarningId.HYPERPOD_KUBERNETES_VERSION.qualified
#: The key prefix of the lifecycle scripts in the lifecycle bucket.
LIFECYCLE_PREFIX = "lifecycle/"
#: ``VpcConfig.Subnets``: 1-16; ``VpcConfig.SecurityGroupIds``: 1-5 (botocore sagemaker model).
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5


class OrchestratorKind(str, Enum):
    SLURM = "slurm"
    EKS = "eks"


@dataclass(frozen=True)
class HyperPodOrchestrator:
    """Slurm (``Orchestrator`` omitted, lifecycle scripts configure Slurm) or EKS (``Orchestrator.Eks.ClusterArn``)."""

    kind: OrchestratorKind
    controller_group: str | None = None
    login_group: str | None = None
    eks_cluster: Any = None

    @classmethod
    def slurm(cls, *, controller_group: str, login_group: str | None = None) -> HyperPodOrchestrator:
        """Slurm: ``controller_group`` and ``login_group`` name instance groups (provisioning parameters)."""
        check_str("controller_group", controller_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
        if login_group is not None:
            check_str("login_group", login_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
        return cls(OrchestratorKind.SLURM, controller_group, login_group)

    @classmethod
    def eks(cls, cluster: Any) -> HyperPodOrchestrator:
        """EKS: an fmconstructs ``GpuEksCluster`` (anything with ``cluster_arn``)."""
        check_construct("cluster", cluster, attribute="cluster_arn", expected="an fmconstructs.eks.GpuEksCluster")
        mode = _authentication_mode(cluster)
        if mode is not None and mode not in HYPERPOD_EKS_AUTHENTICATION_MODES:
            raise FmValidationError(
                "cluster",
                f"an EKS cluster with authentication mode {mode}",
                "an EKS cluster whose authentication mode is API or API_AND_CONFIG_MAP "
                "(SageMaker Developer Guide, sagemaker-hyperpod-eks-prerequisites)",
            )
        return cls(OrchestratorKind.EKS, eks_cluster=cluster)


def _authentication_mode(cluster: Any) -> str | None:
    """``AccessConfig.AuthenticationMode`` of the EKS cluster when known at synthesis (its L1), else None."""
    inner = getattr(cluster, "cluster", None)
    resource = getattr(getattr(inner, "node", None), "default_child", None)
    access = getattr(resource, "access_config", None)
    mode = getattr(access, "authentication_mode", None) if access is not None else None
    if mode is None and isinstance(access, dict):
        mode = access.get("authenticationMode")
    return mode if isinstance(mode, str) and not is_token(mode) else None


def _check_group(parameter: str, value: object) -> HyperPodInstanceGroup:
    if not isinstance(value, HyperPodInstanceGroup):
        raise FmTypeError(parameter, value, f"a HyperPodInstanceGroup (got a {type(value).__name__})")
    return value


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
        ``.eks(gpu_eks_cluster)``.
    :param subnets: ``VpcConfig.Subnets`` (1-16). Default: the VPC's private subnets. Subnets without a known zone
        are accepted.
    :param cluster_name: ``ClusterName`` (1-63, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``). Default: ``<stack>-<id>``.
    :param node_recovery: ``NodeRecovery``. Default: :attr:`NodeRecovery.AUTOMATIC`.
    :param file_system: an fmconstructs Lustre file system: Slurm gets ``fsx_dns_name``/``fsx_mountname`` in the
        provisioning parameters (the published scripts mount it); the node security group may reach it.
    :param base_config_dir: a local copy of HyperPod's published lifecycle scripts (awsome-distributed-training
        ``LifecycleScripts/base-config``): uploaded beside fmconstructs' files; its ``lifecycle_script.py`` then runs
        after the fmconstructs steps. Default: none (only fmconstructs' OnCreate and setup run).
    :param setup_commands: shell lines run on every node before the base-config (a
        :class:`~fmconstructs.bootstrap.NodeBootstrap` step, rendered inline into ``fmconstructs_setup.sh``).
    :param security_groups: up to 4 more groups for ``VpcConfig.SecurityGroupIds``.
    :param access_logs_bucket: where the lifecycle bucket writes S3 server access logs. Default: none.
    :param prometheus_workspace: an fmconstructs ``PrometheusWorkspace`` (Slurm): the execution role gets
        ``aps:RemoteWrite`` on it, and a setup step turns on the published base-config's observability
        (``config.py``: ``Config.enable_observability = True``, ``ObservabilityConfig.prometheus_remote_write_url`` =
        the workspace's remote-write URL; its OpenTelemetry collector signs with SigV4 as the instance role) when
        ``config.py`` is in the lifecycle prefix. Default: none.
    """

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
        prometheus_workspace: Any = None,
    ) -> None:
        check_scope_id(scope, id)
        check_vpc("vpc", vpc)
        groups = check_sequence("instance_groups", instance_groups, _check_group)
        if not groups:
            raise FmValidationError("instance_groups", [], "at least one HyperPodInstanceGroup")
        names = [g.name for g in groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise FmValidationError("instance_groups", names, f"unique group names (repeated: {', '.join(duplicates)})")
        if not isinstance(orchestrator, HyperPodOrchestrator):
            raise FmTypeError("orchestrator", orchestrator, "a HyperPodOrchestrator (.slurm(...) or .eks(cluster))")
        if orchestrator.kind is OrchestratorKind.SLURM:
            for parameter, group in (
                ("controller_group", orchestrator.controller_group),
                ("login_group", orchestrator.login_group),
            ):
                if group is not None and group not in names:
                    raise FmValidationError(
                        f"orchestrator.{parameter}", group, f"one of the groups ({', '.join(names)})"
                    )
            if orchestrator.controller_group == orchestrator.login_group:
                raise FmValidationError(
                    "orchestrator.login_group", orchestrator.login_group, "a group other than the controller group"
                )
        chosen_subnets = (
            check_sequence("subnets", subnets, check_subnet) if subnets is not None else tuple(vpc.private_subnets)
        )
        if not 1 <= len(chosen_subnets) <= MAX_SUBNETS:
            raise FmValidationError("subnets", len(chosen_subnets), f"1-{MAX_SUBNETS} subnets (VpcConfig.Subnets)")
        if cluster_name is not None:
            check_str(
                "cluster_name", cluster_name, pattern=NAME_PATTERN, min_length=1, max_length=63, allowed=NAME_ALLOWED
            )
        check_enum("node_recovery", node_recovery, NodeRecovery)
        if file_system is not None and not isinstance(file_system, LustreFileSystemBase):
            raise FmTypeError("file_system", file_system, "an fmconstructs LustreFileSystemBase")
        if base_config_dir is not None:
            check_str("base_config_dir", base_config_dir, min_length=1, allowed="a local directory")
            if is_token(base_config_dir) or not Path(base_config_dir).is_dir():
                raise FmValidationError("base_config_dir", base_config_dir, "an existing local directory")
        commands = check_str_sequence("setup_commands", setup_commands)
        extra_groups = check_sequence(
            "security_groups",
            security_groups,
            lambda p, v: check_construct(p, v, attribute="security_group_id", expected="an ec2.ISecurityGroup"),
        )
        if access_logs_bucket is not None:
            check_construct("access_logs_bucket", access_logs_bucket, attribute="bucket_name", expected="an s3.IBucket")
        if prometheus_workspace is not None:
            check_construct(
                "prometheus_workspace",
                prometheus_workspace,
                attribute="remote_write_url",
                expected="an fmconstructs PrometheusWorkspace",
            )
            if orchestrator.kind is not OrchestratorKind.SLURM:
                raise FmValidationError(
                    "prometheus_workspace",
                    "a PrometheusWorkspace",
                    "None for EKS orchestration (scrape the EKS cluster with fmconstructs.observability.eks)",
                )
        if len(extra_groups) > MAX_SECURITY_GROUPS - 1:
            raise FmValidationError("security_groups", len(extra_groups), f"at most {MAX_SECURITY_GROUPS - 1} groups")
        super().__init__(scope, id)
        self.instance_groups: tuple[HyperPodInstanceGroup, ...] = groups
        self.orchestrator = orchestrator
        self.file_system = file_system

        # --- network: the EFA rules HyperPod documents (sagemaker-hyperpod-prerequisites: the security group allows
        # all inbound and outbound traffic to and from itself, for EFA) + HTTPS out for AWS APIs and S3.
        self.efa_security_group = EfaSecurityGroup(
            self, "EfaSecurityGroup", vpc=vpc, description="HyperPod nodes: EFA within the group, HTTPS out"
        )
        self.efa_security_group.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS APIs, S3 and ECR"
        )
        if file_system is not None:
            file_system.allow_clients_from(self.efa_security_group)
        group_ids = [self.efa_security_group.security_group_id, *(g.security_group_id for g in extra_groups)]
        if orchestrator.kind is OrchestratorKind.EKS:
            # Nodes join the EKS cluster: its cluster security group lets members reach the control plane
            # (UNCONFIRMED that HyperPod requires it in VpcConfig; EKS UG sec-group-reqs: the cluster security group).
            sg = getattr(orchestrator.eks_cluster, "cluster_security_group", None)
            if sg is not None and len(group_ids) < MAX_SECURITY_GROUPS:
                group_ids.append(sg.security_group_id)

        # --- lifecycle scripts: a bucket of their own, uploaded under one prefix (SourceS3Uri is a prefix).
        self.lifecycle_bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs_bucket,
            server_access_logs_prefix="hyperpod-lifecycle/" if access_logs_bucket is not None else None,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.node_bootstrap = NodeBootstrap(self, "Bootstrap", delivery=BootstrapDelivery.INLINE)
        if prometheus_workspace is not None:
            self.node_bootstrap.add_step("observability", observability_commands(prometheus_workspace.remote_write_url))
        if commands:
            self.node_bootstrap.add_commands(*commands)
        parameters = None
        if orchestrator.kind is OrchestratorKind.SLURM:
            workers = [
                (g.name, g.partition_name or g.name)
                for g in groups
                if g.name not in (orchestrator.controller_group, orchestrator.login_group)
            ]
            parameters = slurm_provisioning_parameters(
                controller_group=orchestrator.controller_group or "",
                login_group=orchestrator.login_group,
                worker_groups=workers,
                fsx_dns_name=file_system.dns_name if file_system is not None else None,
                fsx_mount_name=file_system.mount_name if file_system is not None else None,
            )
        self.provisioning_parameters: dict[str, Any] | None = parameters
        files = lifecycle_files(None if self.node_bootstrap.is_empty else self.node_bootstrap.render(), parameters)
        sources = [
            s3deploy.Source.json_data(name, value) if isinstance(value, dict) else s3deploy.Source.data(name, value)
            for name, value in files.items()
        ]
        if base_config_dir is not None:
            sources.insert(0, s3deploy.Source.asset(base_config_dir))
        self.lifecycle_deployment = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            sources=sources,
            destination_bucket=self.lifecycle_bucket,
            destination_key_prefix=LIFECYCLE_PREFIX,
            prune=True,
            retain_on_delete=True,
        )
        self.lifecycle_s3_uri: str = Fn.join("", ["s3://", self.lifecycle_bucket.bucket_name, "/", LIFECYCLE_PREFIX])

        # --- execution role (least privilege: the documented managed policy, VPC ENI actions, lifecycle read).
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_MANAGED_POLICY)],
            description="SageMaker HyperPod instance groups",
        )
        self.execution_role.add_to_policy(iam.PolicyStatement(actions=list(VPC_ACTIONS), resources=["*"]))
        if prometheus_workspace is not None:
            prometheus_workspace.grant_remote_write(self.execution_role)
        self.execution_role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[self.lifecycle_bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}*")]
            )
        )
        self.execution_role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.lifecycle_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{LIFECYCLE_PREFIX}*"]}},
            )
        )

        # --- the cluster.
        self.cluster_name_given = cluster_name or _default_cluster_name(scope, id)
        orchestrator_property = None
        if orchestrator.kind is OrchestratorKind.EKS:
            orchestrator_property = sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=orchestrator.eks_cluster.cluster_arn
                )
            )
        self.resource = sagemaker.CfnCluster(
            self,
            "Resource",
            cluster_name=self.cluster_name_given,
            instance_groups=[self._group_property(g) for g in groups],
            node_recovery=node_recovery.value,
            orchestrator=orchestrator_property,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=group_ids, subnets=[s.subnet_id for s in chosen_subnets]
            ),
        )
        self.resource.node.add_dependency(self.lifecycle_deployment)
        if orchestrator.kind is OrchestratorKind.EKS:
            version = getattr(getattr(orchestrator.eks_cluster, "version", None), "version", None)
            if isinstance(version, str) and version not in HYPERPOD_KUBERNETES_VERSIONS:
                add_warning(
                    self,
                    WarningId.HYPERPOD_KUBERNETES_VERSION,
                    f"the EKS cluster runs Kubernetes {version}; SageMaker HyperPod documents "
                    f"{', '.join(HYPERPOD_KUBERNETES_VERSIONS)} (sagemaker-hyperpod-eks-prerequisites)",
                )
        policy = self.execution_role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            self.resource.node.add_dependency(policy)
        self.node_recovery = node_recovery

    def _group_property(self, group: HyperPodInstanceGroup) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
        checks = group.effective_deep_health_checks
        storage = (
            [
                sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                    ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                        volume_size_in_gb=group.extra_ebs_gib
                    )
                )
            ]
            if group.extra_ebs_gib is not None
            else None
        )
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            execution_role=self.execution_role.role_arn,
            instance_count=group.nodes,
            instance_group_name=group.name,
            instance_type=group.instance_type,
            life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                on_create=ON_CREATE, source_s3_uri=self.lifecycle_s3_uri
            ),
            threads_per_core=group.threads_per_core,
            instance_storage_configs=storage,
            on_start_deep_health_checks=[c.value for c in checks] or None,
            training_plan_arn=group.capacity.training_plan_arn,
        )

    @property
    def cluster_arn(self) -> str:
        """``Fn::GetAtt ClusterArn``."""
        return self.resource.attr_cluster_arn

    @property
    def cluster_name(self) -> str:
        """The cluster's name (given, or ``<stack>-<id>``; for an environment-agnostic stack name, the ARN)."""
        return self.cluster_name_given or self.resource.attr_cluster_arn

    @property
    def security_group(self) -> ec2.ISecurityGroup:
        return self.efa_security_group.security_group

    @property
    def connections(self) -> ec2.Connections:
        return self.efa_security_group.connections
