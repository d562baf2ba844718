"""A HyperPod cluster's lifecycle scripts: their bucket, each instance group's node set-up (or the shared one) and the
upload under ``lifecycle/``, split out of :mod:`fmconstructs.hyperpod.cluster` (which re-exports the public names).

Sources: the SageMaker API reference ``ClusterLifeCycleConfig`` (``SourceS3Uri`` is a prefix and must start with
``s3://sagemaker-``) and :mod:`fmconstructs.hyperpod.lifecycle` for the files.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Fn, RemovalPolicy
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from .._nag import acknowledge_no_access_logs
from ..bootstrap import BootstrapDelivery, NodeBootstrap
from .cluster_lustre import eks_group_bootstrap
from .cluster_node_setup import api_group_bootstrap
from .lifecycle import (
    ON_CREATE,
    ON_INIT_COMPLETE,
    lifecycle_files,
    observability_commands,
    slurm_provisioning_parameters,
)
from .types import SlurmConfiguration, SlurmNodeType

if TYPE_CHECKING:
    from .cluster import HyperPodCluster
    from .cluster_inputs import ClusterInputs

#: The key prefix of the lifecycle scripts in the lifecycle bucket.
LIFECYCLE_PREFIX = "lifecycle/"
#: HyperPod reads lifecycle scripts from a bucket whose name starts with ``sagemaker-``: the API reference
#: (ClusterLifeCycleConfig.SourceS3Uri, "Important: Make sure that the S3 bucket path starts with s3://sagemaker-")
#: ties it to AmazonSageMakerClusterInstanceRolePolicy, which allows S3 access only on that prefix.
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"


def _source(name: str, value: Any) -> s3deploy.ISource:
    """A BucketDeployment source of one lifecycle file (JSON for mappings, text otherwise)."""
    return s3deploy.Source.json_data(name, value) if isinstance(value, dict) else s3deploy.Source.data(name, value)


def _lifecycle_bucket_name(scope: Construct) -> str:
    """``sagemaker-fmc-<account>-<stack UUID, first 8>-<path hash, 6>``: at most 42 characters, deploy-time parts as
    tokens (the stack id ``arn:...:stack/<name>/<uuid>`` is new for every stack creation)."""
    stack_uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    path_hash = hashlib.sha256(scope.node.path.encode()).hexdigest()[:6]
    return Fn.join(
        "",
        [LIFECYCLE_BUCKET_PREFIX, "fmc-", Aws.ACCOUNT_ID, "-", Fn.select(0, Fn.split("-", stack_uuid)), "-", path_hash],
    )


def build_lifecycle_bucket(cluster: HyperPodCluster, inputs: ClusterInputs) -> s3.Bucket:
    """The lifecycle scripts' bucket of their own, uploaded under one prefix (``SourceS3Uri`` is a prefix)."""
    access_logs_bucket = inputs.access_logs_bucket
    bucket = s3.Bucket(
        cluster,
        "LifecycleBucket",
        bucket_name=inputs.lifecycle_bucket_name or _lifecycle_bucket_name(cluster),
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        server_access_logs_bucket=access_logs_bucket,
        server_access_logs_prefix="hyperpod-lifecycle/" if access_logs_bucket is not None else None,
        removal_policy=RemovalPolicy.RETAIN,
    )
    if access_logs_bucket is None:
        acknowledge_no_access_logs(bucket, parameter="access_logs_bucket")
    return bucket


def per_group_sources(cluster: HyperPodCluster, inputs: ClusterInputs) -> list[s3deploy.ISource]:
    """Each group's node set-up under ``lifecycle/<group>/`` (``SlurmConfiguration.API``, or EKS with an EFA-enabled
    file system); fills ``cluster.node_bootstraps``."""
    mode = inputs.mode
    sources: list[s3deploy.ISource] = []
    entry = ON_INIT_COMPLETE if mode is SlurmConfiguration.API else ON_CREATE
    for instance_group in inputs.groups:
        if mode is SlurmConfiguration.API:
            bootstrap = api_group_bootstrap(
                cluster,
                instance_group,
                inputs.file_system,
                inputs.mount,
                inputs.prometheus_workspace,
                inputs.source,
                inputs.commands,
                inputs.subnets,
            )
        else:
            assert inputs.file_system is not None
            bootstrap = eks_group_bootstrap(
                cluster, instance_group, inputs.file_system, inputs.commands, inputs.subnets
            )
        cluster.node_bootstraps[instance_group.name] = bootstrap
        files = lifecycle_files(None if bootstrap.is_empty else bootstrap.render(), None, entry=entry)
        sources += [_source(f"{instance_group.name}/{name}", value) for name, value in files.items()]
    return sources


def shared_sources(cluster: HyperPodCluster, inputs: ClusterInputs) -> list[s3deploy.ISource]:
    """One node set-up for every group under ``lifecycle/`` (beside the base-config with ``LIFECYCLE_SCRIPTS``, with
    its ``provisioning_parameters.json``); fills ``cluster.node_bootstraps`` and ``cluster.provisioning_parameters``."""
    orchestrator, file_system, groups = inputs.orchestrator, inputs.file_system, inputs.groups
    bootstrap = NodeBootstrap(cluster, "Bootstrap", delivery=BootstrapDelivery.INLINE)
    if inputs.prometheus_workspace is not None:
        bootstrap.add_step("observability", observability_commands(inputs.prometheus_workspace.remote_write_url))
    if inputs.commands:
        bootstrap.add_commands(*inputs.commands)
    cluster.node_bootstraps = {g.name: bootstrap for g in groups}
    if inputs.mode is SlurmConfiguration.LIFECYCLE_SCRIPTS:
        workers = [
            (g.name, g.partition_name or g.name)
            for g in groups
            if orchestrator.slurm_node_type(g.name) is SlurmNodeType.COMPUTE
        ]
        cluster.provisioning_parameters = slurm_provisioning_parameters(
            controller_group=orchestrator.controller_group or "",
            login_group=orchestrator.login_group,
            worker_groups=workers,
            fsx_dns_name=file_system.dns_name if file_system is not None else None,
            fsx_mount_name=file_system.mount_name if file_system is not None else None,
        )
    files = lifecycle_files(
        None if bootstrap.is_empty else bootstrap.render(), cluster.provisioning_parameters, entry=ON_CREATE
    )
    sources = [_source(name, value) for name, value in files.items()]
    if inputs.base_config_dir is not None:
        sources.insert(0, s3deploy.Source.asset(inputs.base_config_dir))
    return sources


def build_lifecycle_deployment(
    cluster: HyperPodCluster, bucket: s3.IBucket, sources: list[s3deploy.ISource]
) -> s3deploy.BucketDeployment:
    """The upload of the lifecycle files under :data:`LIFECYCLE_PREFIX` (pruned, kept on delete)."""
    return s3deploy.BucketDeployment(
        cluster,
        "LifecycleScripts",
        sources=sources,
        destination_bucket=bucket,
        destination_key_prefix=LIFECYCLE_PREFIX,
        prune=True,
        retain_on_delete=True,
    )


def lifecycle_s3_uri(bucket: s3.IBucket) -> str:
    """``s3://<bucket>/lifecycle/``: the shared ``LifeCycleConfig.SourceS3Uri``."""
    return Fn.join("", ["s3://", bucket.bucket_name, "/", LIFECYCLE_PREFIX])
