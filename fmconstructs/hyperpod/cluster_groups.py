"""The ``AWS::SageMaker::Cluster`` properties a HyperPod cluster renders from its instance groups and orchestrator
(``InstanceGroups[]``, ``Orchestrator``); split out of :mod:`fmconstructs.hyperpod.cluster`.

Sources: aws-cdk-lib 2.275 ``aws_sagemaker.CfnCluster`` and the botocore ``sagemaker`` model of ``CreateCluster``
(``ClusterInstanceGroupSpecification``, ``ClusterSlurmConfig``, ``ClusterOrchestratorSlurmConfig``); see
:mod:`fmconstructs.hyperpod.cluster`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_sagemaker as sagemaker

from .instance_group_options import group_option_properties
from .lifecycle import ON_CREATE, ON_INIT_COMPLETE
from .orchestrator import OrchestratorKind
from .storage_rules import LUSTRE_MOUNT_POINT
from .types import (
    DEFAULT_SLURM_CONFIG_STRATEGY,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    SlurmConfiguration,
    SlurmNodeType,
)

if TYPE_CHECKING:
    from .cluster import HyperPodCluster
    from .cluster_inputs import ClusterInputs


def orchestrator_property(inputs: ClusterInputs) -> sagemaker.CfnCluster.OrchestratorProperty | None:
    """``Orchestrator``: ``Slurm.SlurmConfigStrategy`` with ``SlurmConfiguration.API``, ``Eks.ClusterArn`` with EKS,
    else none (the lifecycle scripts configure Slurm)."""
    orchestrator = inputs.orchestrator
    orchestrator_property = None
    if inputs.mode is SlurmConfiguration.API:
        strategy = orchestrator.slurm_config_strategy or DEFAULT_SLURM_CONFIG_STRATEGY
        orchestrator_property = sagemaker.CfnCluster.OrchestratorProperty(
            slurm=sagemaker.CfnCluster.ClusterOrchestratorSlurmConfigProperty(slurm_config_strategy=strategy.value)
        )
    if orchestrator.kind is OrchestratorKind.EKS:
        orchestrator_property = sagemaker.CfnCluster.OrchestratorProperty(
            eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                cluster_arn=orchestrator.eks_cluster.cluster_arn
            )
        )
    return orchestrator_property


def group_property(
    cluster: HyperPodCluster, group: HyperPodInstanceGroup
) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
    """``InstanceGroups[]`` of one group: storage (extra EBS, HyperPod's FSx mount), ``SlurmConfig`` and lifecycle."""
    checks = group.effective_deep_health_checks
    storage: list[sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty] = []
    if group.extra_ebs_gib is not None:
        storage.append(
            sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                    volume_size_in_gb=group.extra_ebs_gib
                )
            )
        )
    if cluster.lustre_mount is HyperPodLustreMount.HYPERPOD and cluster.file_system is not None:
        storage.append(
            sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                fsx_lustre_config=sagemaker.CfnCluster.ClusterFsxLustreConfigProperty(
                    dns_name=cluster.file_system.dns_name,
                    mount_name=cluster.file_system.mount_name,
                    mount_path=cluster.mount_point or LUSTRE_MOUNT_POINT,
                )
            )
        )
    slurm_config = None
    if cluster.slurm_configuration is SlurmConfiguration.API:
        node_type = cluster.orchestrator.slurm_node_type(group.name)
        slurm_config = sagemaker.CfnCluster.ClusterSlurmConfigProperty(
            node_type=node_type.value,
            partition_names=([group.partition_name or group.name] if node_type is SlurmNodeType.COMPUTE else None),
        )
        life_cycle = sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
            on_init_complete=ON_INIT_COMPLETE, source_s3_uri=cluster.lifecycle_s3_uri_of(group.name)
        )
    else:
        life_cycle = sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
            on_create=ON_CREATE, source_s3_uri=cluster.lifecycle_s3_uri_of(group.name)
        )
    return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
        execution_role=cluster.execution_role.role_arn,
        instance_count=group.nodes,
        instance_group_name=group.name,
        instance_type=group.instance_type,
        life_cycle_config=life_cycle,
        threads_per_core=group.threads_per_core,
        instance_storage_configs=storage or None,
        on_start_deep_health_checks=[c.value for c in checks] or None,
        training_plan_arn=group.capacity.training_plan_arn,
        slurm_config=slurm_config,
        **group_option_properties(group),
    )
