"""The instance profile of PCS nodes: a role PCS accepts, with least-privilege policies.

PCS only passes roles whose name starts with ``AWSPCS`` or whose path is ``/aws-pcs/`` (PCS User Guide "IAM instance
profiles for AWS PCS"). This construct uses the path, on the role and on the instance profile, and leaves both names
to CloudFormation, so two clusters (or two copies of one stack) in an account never collide.

Policies:

- ``pcs:RegisterComputeNodeGroupInstance`` on the cluster's ARN only: what a node needs to join its cluster. The
  Service Authorization Reference lists the resource type ``cluster*`` (required) for this action, ARN
  ``arn:${Partition}:pcs:${Region}:${Account}:cluster/${ClusterIdentifier}`` (as mirrored in iann0036/iam-dataset
  ``aws/iam_definition.json``, commit 08eff2d; the docs page list_awsparallelcomputingservice could not be read row by
  row here), so the statement is scoped to it. The PCS User Guide's instance-profile policy and the AWS managed policy
  ``AWSPCSComputeNodePolicy`` grant it on ``Resource: "*"``; scoping is narrower and, per the reference, sufficient.
- ``AmazonSSMManagedInstanceCore`` (default on) so operators reach nodes through Session Manager instead of SSH.
- :meth:`grant_read_bucket` / :meth:`grant_read_write_bucket`: object access to S3 prefixes the nodes read or write
  directly, with explicit actions (no ``s3:Get*``-style wildcards) and the bucket key's decrypt/encrypt if it has one.

Lustre mounts need no IAM permission: FSx for Lustre access is network-level (security groups).
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from .._validate import check_bool, check_construct, check_str, is_token, located
from ..errors import FmValidationError
from ..storage.data_repository import normalize_prefix
from . import _nag
from ._checks import check_scope_id
from .identifiers import PcsResourceType, check_pcs_arn

#: The IAM path PCS accepts for node roles (the alternative is a name starting with ``AWSPCS``).
PCS_IAM_PATH = "/aws-pcs/"
SSM_MANAGED_POLICY = "AmazonSSMManagedInstanceCore"

_S3_READ_ACTIONS = ("s3:GetObject",)
_S3_WRITE_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload")


class PcsInstanceProfile(Construct):
    """An EC2 role and instance profile under ``/aws-pcs/`` for the nodes of one PCS cluster.

    :param cluster_arn: the cluster's ARN (``PcsCluster.cluster_arn``): the only resource of
        ``pcs:RegisterComputeNodeGroupInstance``.
    :param enable_ssm: attach ``AmazonSSMManagedInstanceCore`` (default True).
    """

    @located
    def __init__(self, scope: Construct, id: str, *, cluster_arn: str, enable_ssm: bool = True) -> None:
        check_scope_id(scope, id)
        # A cluster id (pcs_...) or a node group ARN is refused with the fix (.identifiers).
        check_pcs_arn("cluster_arn", cluster_arn, PcsResourceType.CLUSTER)
        check_bool("enable_ssm", enable_ssm)
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            path=PCS_IAM_PATH,
            description="AWS PCS nodes: register with their cluster; Session Manager; granted S3 prefixes",
        )
        # Service Authorization Reference: RegisterComputeNodeGroupInstance takes resource type cluster* (see above).
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="RegisterWithCluster",
                actions=["pcs:RegisterComputeNodeGroupInstance"],
                resources=[cluster_arn],
            )
        )
        self.ssm_enabled = enable_ssm
        if enable_ssm:
            self.role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(SSM_MANAGED_POLICY))
        self.instance_profile = iam.InstanceProfile(self, "Resource", role=self.role, path=PCS_IAM_PATH)
        _nag.acknowledge_instance_profile(self)

    @property
    def policy(self) -> IConstruct:
        """The role's inline policy: node groups depend on it, since nodes register as soon as they boot."""
        return self.role.node.find_child("DefaultPolicy")

    @property
    def instance_profile_arn(self) -> str:
        return self.instance_profile.instance_profile_arn

    def grant_read_bucket(self, bucket: s3.IBucket, *, prefix: str = "") -> None:
        """Read objects under ``s3://bucket/prefix`` and list that prefix (``s3:GetObject``, ``s3:ListBucket``)."""
        self._grant_bucket(bucket, prefix=prefix, actions=_S3_READ_ACTIONS, write=False)

    def grant_read_write_bucket(self, bucket: s3.IBucket, *, prefix: str = "") -> None:
        """Read and write objects under ``s3://bucket/prefix`` (adds ``s3:PutObject``, ``s3:AbortMultipartUpload``)."""
        self._grant_bucket(bucket, prefix=prefix, actions=_S3_READ_ACTIONS + _S3_WRITE_ACTIONS, write=True)

    def _grant_bucket(self, bucket: s3.IBucket, *, prefix: str, actions: tuple[str, ...], write: bool) -> None:
        check_construct("bucket", bucket, attribute="bucket_arn", expected="an s3.IBucket")
        check_str("prefix", prefix)
        if is_token(prefix):
            normalized = prefix  # deploy-time: granted as given ("<prefix>*")
        else:
            try:
                normalized = normalize_prefix(prefix)
            except FmValidationError as error:
                raise FmValidationError("prefix", prefix, error.allowed) from None
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[bucket.arn_for_objects(f"{normalized}*")])
        )
        list_statement = iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket.bucket_arn])
        if normalized:
            list_statement.add_condition("StringLike", {"s3:prefix": [f"{normalized}*"]})
        self.role.add_to_principal_policy(list_statement)
        _nag.acknowledge_bucket_grant(self, bucket, normalized)
        if bucket.encryption_key is not None:
            # Explicit KMS actions: grant_encrypt_decrypt would add kms:ReEncrypt* and kms:GenerateDataKey*.
            kms_actions = ["kms:Decrypt", "kms:GenerateDataKey"] if write else ["kms:Decrypt"]
            bucket.encryption_key.grant(self.role, *kms_actions)
