"""Shell access to HyperPod nodes through AWS Systems Manager Session Manager.

SageMaker Developer Guide "Accessing your SageMaker HyperPod cluster nodes" (sagemaker-hyperpod-run-jobs-slurm-access-
nodes): ``aws ssm start-session --target sagemaker-cluster:<cluster-id>_<instance-group-name>-<instance-id>``, with
the cluster id, the instance id and the instance group name from ``describe-cluster`` and ``list-cluster-nodes``;
the session starts as root (``sudo su - ubuntu`` before running jobs). The cluster id is the last part of the
cluster ARN (botocore sagemaker model, ``ClusterArn`` pattern ``arn:aws[a-z-]*:sagemaker:...:cluster/[a-z0-9]{12}``).
"""

from __future__ import annotations

from aws_cdk import Aws, Fn

#: The Session Manager target prefix of HyperPod nodes (same page).
TARGET_PREFIX = "sagemaker-cluster:"


def session_command(*, cluster_id: str, cluster_name: str, group: str) -> str:
    """An AWS CLI command that starts a Session Manager shell on a running node of instance group ``group``.

    The instance is found with ``aws sagemaker list-cluster-nodes`` (botocore ``ListClusterNodes``:
    ``InstanceGroupNameContains``; ``ClusterNodeSummaries[].InstanceGroupName``, ``InstanceId`` and
    ``InstanceStatus.Status`` ``Running``), filtered on the exact group name. Needs the Session Manager plugin and
    ``ssm:StartSession`` on the target. ``cluster_id`` and ``cluster_name`` may be deploy-time values."""
    query = f"ClusterNodeSummaries[?InstanceGroupName=='{group}' && InstanceStatus.Status=='Running'] | [0].InstanceId"
    return Fn.join(
        "",
        [
            f'aws ssm start-session --region {Aws.REGION} --target "{TARGET_PREFIX}',
            cluster_id,
            f"_{group}-$(aws sagemaker list-cluster-nodes --region {Aws.REGION} --cluster-name ",
            cluster_name,
            f' --instance-group-name-contains {group} --query "{query}" --output text)"',
        ],
    )
