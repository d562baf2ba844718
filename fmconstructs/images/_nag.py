"""cdk-nag acknowledgements of the image constructs (see :mod:`fmconstructs._nag`), each with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _nag

if TYPE_CHECKING:
    from .image import GpuNodeImage

# Image Builder User Guide, security-iam-awsmanpol (as cited where the role is made in image.py).
_MANAGED_POLICY_REASONS = {
    "EC2InstanceProfileForImageBuilder": (
        "the Image Builder User Guide (security-iam-awsmanpol) names this AWS managed policy as the minimum for an "
        "instance to work with Image Builder; it follows the service's needs (components, logs) as they change"
    ),
    "AmazonSSMManagedInstanceCore": (
        "Image Builder drives build and test instances through Systems Manager, which "
        "EC2InstanceProfileForImageBuilder does not cover (security-iam-awsmanpol); this is the SSM agent's policy"
    ),
}
_LOGS_REASON = (
    "build and test instances write log objects (s3:PutObject only) under this image's own prefix; the object keys "
    "(one per build and step) are made by Image Builder at run time"
)


def acknowledge_image(image: GpuNodeImage) -> None:
    """The build instances' role: its two AWS managed policies and its log prefix."""
    for policy, reason in _MANAGED_POLICY_REASONS.items():
        _nag.acknowledge(image.role, _nag.aws_managed_policy_finding(policy), reason)
    logs_objects = image.logs_bucket.arn_for_objects(f"{image.logs_prefix}*")
    _nag.acknowledge(image.role, _nag.iam5_resource(image, logs_objects), _LOGS_REASON)
