"""cdk-nag acknowledgements of the PCS constructs (see :mod:`fmconstructs._nag`), each with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_s3 as s3

from .. import _nag

if TYPE_CHECKING:
    from .iam import PcsInstanceProfile

# AWS Managed Policy Reference, AmazonSSMManagedInstanceCore: "The policy for Amazon EC2 Role to enable AWS Systems
# Manager service core functionality".
_SSM_REASON = (
    "AmazonSSMManagedInstanceCore is the AWS-maintained policy that enables the SSM agent (AWS Managed Policy "
    "Reference); Session Manager replaces SSH to the nodes, and enable_ssm=False removes it"
)
_PREFIX_REASON = (
    "grant_read_bucket/grant_read_write_bucket: object actions on the keys under the prefix the caller named; the "
    "keys are not known at synthesis, so the resource ends in *"
)


def acknowledge_instance_profile(profile: PcsInstanceProfile) -> None:
    """The node role's AWS managed Session Manager policy (when ``enable_ssm``)."""
    if profile.ssm_enabled:
        _nag.acknowledge(profile.role, _nag.aws_managed_policy_finding("AmazonSSMManagedInstanceCore"), _SSM_REASON)


def acknowledge_bucket_grant(profile: PcsInstanceProfile, bucket: s3.IBucket, prefix: str) -> None:
    """The ``<bucket>/<prefix>*`` object resource of a grant the caller asked for."""
    _nag.acknowledge(profile.role, _nag.iam5_resource(profile, bucket.arn_for_objects(f"{prefix}*")), _PREFIX_REASON)
