"""What happens to a cluster when CloudFormation stops managing it: removal policies and fixed names.

Shared by the backends (PCS, EKS, ParallelCluster; HyperPod later) so that each documents the same rules:

- :func:`check_removal_policy`: the ``removal_policy`` a cluster takes (aws-cdk-lib ``RemovalPolicy``).
- :func:`warn_fixed_name`: a name given for a resource whose name is a create-only property. CloudFormation replaces
  such a resource by creating the new one first, then deleting the old one ("Update requires: Replacement"); with a
  fixed name the new one collides with the old one and the update fails ("already exists"), so the edit that needed
  the replacement cannot be deployed until the name changes too.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from constructs import IConstruct

from ._validate import check_enum
from .errors import FmValidationError, WarningId, add_warning, describe_value


def check_removal_policy(
    parameter: str, value: object, *, allowed: Sequence[RemovalPolicy] = (RemovalPolicy.RETAIN, RemovalPolicy.DESTROY)
) -> RemovalPolicy:
    """A :class:`~aws_cdk.RemovalPolicy` among ``allowed`` (clusters have no snapshot: SNAPSHOT is refused)."""
    policy: RemovalPolicy = check_enum(parameter, value, RemovalPolicy)
    if policy not in allowed:
        raise FmValidationError(
            parameter, policy.name, "RemovalPolicy." + " or RemovalPolicy.".join(p.name for p in allowed)
        )
    return policy


def warn_fixed_name(
    scope: IConstruct, *, parameter: str, name: object, resource_type: str, create_only: Sequence[str]
) -> None:
    """Warn ``fmconstructs:fixed-name-blocks-replacement`` that ``name`` fixes the name of ``resource_type``, whose
    ``create_only`` properties (CloudFormation resource schema ``createOnlyProperties``) replace it when changed."""
    add_warning(
        scope,
        WarningId.FIXED_NAME_BLOCKS_REPLACEMENT,
        f"{parameter} {describe_value(name)} fixes the name of the {resource_type}: a change to a create-only "
        f"property ({', '.join(create_only)}) replaces it, and CloudFormation creates the replacement before it "
        "deletes the old one, so the update fails with 'already exists' instead; leave the name unset (CloudFormation "
        "generates one) or change the name together with such an edit",
    )
