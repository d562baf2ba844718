"""What happens to a HyperPod cluster (``AWS::SageMaker::Cluster``) when CloudFormation replaces or deletes it.

- :data:`CREATE_ONLY_PROPERTIES`: the resource schema's ``createOnlyProperties`` (cfn-lint 1.58.0's bundled
  CloudFormation schema of ``AWS::SageMaker::Cluster``, schema date 2026-10-20: ``/properties/ClusterName``,
  ``/properties/VpcConfig``, ``/properties/Orchestrator/Eks``). Changing one replaces the cluster: CloudFormation
  creates the new cluster first and deletes the old one afterwards (CloudFormation User Guide "Update behaviors of
  stack resources", Replacement), so with a fixed ``ClusterName`` the creation fails on the name and the update rolls
  back; :func:`warn_fixed_cluster_name` says so when ``cluster_name`` is given.
- :func:`check_removal_policy`: ``RemovalPolicy.DESTROY`` (default) or ``RETAIN`` for the cluster resource
  (``DeletionPolicy`` and ``UpdateReplacePolicy``). A HyperPod cluster has no snapshot, so ``SNAPSHOT`` is refused.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from constructs import IConstruct

from .._validate import check_enum
from ..errors import FmValidationError, WarningId, add_warning, describe_value

#: ``createOnlyProperties`` of ``AWS::SageMaker::Cluster`` (see the module docstring), in template words.
CREATE_ONLY_PROPERTIES: tuple[str, ...] = ("ClusterName", "VpcConfig", "Orchestrator.Eks")
#: The removal policies a HyperPod cluster takes.
ALLOWED_REMOVAL_POLICIES: tuple[RemovalPolicy, ...] = (RemovalPolicy.DESTROY, RemovalPolicy.RETAIN)
#: Default: DESTROY, what the cluster had before the option existed (no ``DeletionPolicy``: Delete). A retained
#: cluster keeps its instances running and billed after ``cdk destroy``, keeps its network interfaces in the
#: VpcConfig subnets and security groups (so a stack that also owns them cannot delete them) and keeps its name, which
#: blocks a redeploy of the same stack until it is deleted by hand.
DEFAULT_REMOVAL_POLICY = RemovalPolicy.DESTROY


def check_removal_policy(parameter: str, value: object) -> RemovalPolicy:
    """A :class:`~aws_cdk.RemovalPolicy` a HyperPod cluster takes (DESTROY or RETAIN)."""
    policy: RemovalPolicy = check_enum(parameter, value, RemovalPolicy)
    if policy not in ALLOWED_REMOVAL_POLICIES:
        raise FmValidationError(
            parameter,
            policy.name,
            "RemovalPolicy.DESTROY or RemovalPolicy.RETAIN (a SageMaker HyperPod cluster has no snapshot)",
        )
    return policy


def warn_fixed_cluster_name(scope: IConstruct, name: object) -> None:
    """Warn ``fmconstructs:hyperpod-fixed-cluster-name`` for a ``cluster_name`` the user fixed."""
    add_warning(
        scope,
        WarningId.HYPERPOD_FIXED_CLUSTER_NAME,
        f"cluster_name {describe_value(name)} fixes ClusterName of the AWS::SageMaker::Cluster, whose create-only "
        f"properties are {', '.join(CREATE_ONLY_PROPERTIES)} (the subnets and security groups of VpcConfig, the EKS "
        "cluster): changing one needs a replacement, which CloudFormation creates before it deletes the old cluster, "
        "so the update fails on the name ('already exists') and rolls back. Change such a property together with a "
        "new cluster_name (a new, empty cluster; the old one is deleted after it), or keep them as they are. The "
        "default name (<stack>-<id>) is fixed too.",
    )
