"""A bucket for S3 server access logs (and where a bucket the user gave none is acknowledged).

:func:`server_access_logs_bucket` is the target the library creates where the user passed none
(:class:`~fmconstructs.platform.TrainingPlatform`): S3-managed encryption (aws-cdk-lib's ``s3.Bucket`` refuses
``KMS_MANAGED`` on a log target, aws/aws-cdk#23514; a customer key works, aws/aws-cdk#24789, but would need a key
policy for the logging service), TLS only, every public access blocked, no ACLs (``BUCKET_OWNER_ENFORCED``: log
delivery is granted by a bucket policy to ``logging.s3.amazonaws.com``, aws-cdk-lib's
``@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy``, set on this bucket's own scope so a user's app needs no
feature flag), versioned and RETAIN. cdk-nag AwsSolutions-S1 (``S3BucketLoggingEnabled``, cdk-nag 3.0.2) treats a
bucket that another bucket of the stack logs to as compliant, so the target needs no log target of its own.

:func:`fmconstructs._nag.acknowledge_no_access_logs` is for a lower-level construct given no log target: it
acknowledges S1 on the bucket with the reason and adds the warning ``bucket-without-access-logs``, so the user sees
the decision at synth.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

__all__ = ["server_access_logs_bucket"]

#: aws-cdk-lib feature flag (cx-api ``S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY``): log delivery by bucket policy.
_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"


def server_access_logs_bucket(scope: Construct, id: str = "AccessLogs") -> s3.Bucket:
    """A server access log target under ``scope`` (``<scope>/<id>/Resource``); see the module notes."""
    holder = Construct(scope, id)
    holder.node.set_context(_USE_BUCKET_POLICY, True)
    return s3.Bucket(
        holder,
        "Resource",
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
    )
