"""cdk-nag acknowledgements of the observability pieces (see :mod:`fmconstructs._nag`), each with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam
from constructs import Construct

from .. import _nag

if TYPE_CHECKING:
    from .sources import ExporterSource

_MIRROR_REASON = (
    "nodes read the exporter release files (s3:GetObject only) under the mirror prefix the caller gave "
    "(ExporterSource.s3_mirror); the keys, one per exporter, version and architecture, are filled by the caller"
)


def acknowledge_source_read(source: ExporterSource, grantee: iam.IGrantable) -> None:
    """The mirror prefix :meth:`ExporterSource.grant_read` grants ``grantee`` (a role or another construct).

    Not acknowledged: ``ecr:GetAuthorizationToken`` on ``*`` (aws-cdk-lib ``Repository.grantPull``) with an ECR
    dcgm-exporter repository, since cdk-nag's ``Resource::*`` id would also hide any other ``*`` on a role that may
    be the caller's own."""
    scope = grantee if isinstance(grantee, Construct) else None
    if scope is None:
        return
    if source.bucket is not None:
        objects = source.bucket.arn_for_objects(f"{source.prefix}*")
        _nag.acknowledge(scope, _nag.iam5_resource(scope, objects), _MIRROR_REASON)
