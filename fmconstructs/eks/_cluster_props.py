"""The checks of :class:`~fmconstructs.eks.cluster.GpuEksCluster`'s props (moved from ``cluster.py`` unchanged)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from .._replacement import check_removal_policy
from .._validate import (
    check_construct,
    check_enum,
    check_kms_key,
    check_sequence,
    check_str,
    check_str_sequence,
    check_subnet,
    check_vpc,
)
from .._validate_tags import check_tags
from ..errors import FmTypeError, FmValidationError, is_token
from ..networking import EfaSecurityGroup
from ._names import EKS_CLUSTER_NAME
from .versions import check_kubernetes_version

if TYPE_CHECKING:
    from .cluster import SystemNodeGroupOptions


def _check_role(parameter: str, role: object) -> iam.IRole:
    checked: iam.IRole = check_construct(parameter, role, attribute="role_arn", expected="an iam.IRole")
    return checked


def _check_cidr(parameter: str, value: object) -> Any:
    """An IPv4 or IPv6 CIDR block (``EndpointAccess.only_from``; EKS ``publicAccessCidrs``), or a string token.

    The EKS API documents no pattern: a block parses as an address and a prefix length (host bits may be set).
    """
    text = check_str(parameter, value, allowed="a CIDR block such as '203.0.113.0/24'")
    if is_token(text):
        return text
    try:
        if "/" not in text:
            raise ValueError(text)
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise FmValidationError(parameter, value, "a CIDR block such as '203.0.113.0/24'") from None
    return text


@dataclass(frozen=True)
class _ClusterProps:
    """The keyword arguments of :class:`~fmconstructs.eks.cluster.GpuEksCluster` as given (its signature is the one
    declaration: names, types and defaults), for :func:`check_cluster_props` and the construction steps."""

    vpc: ec2.IVpc
    version: eks.KubernetesVersion | str
    cluster_name: str | None
    subnets: Sequence[ec2.ISubnet] | None
    public_endpoint_cidrs: Sequence[str] | None
    admin_roles: Sequence[iam.IRole]
    secrets_encryption_key: kms.IKey | None
    control_plane_logging: Sequence[eks.ClusterLoggingTypes]
    system_node_group: SystemNodeGroupOptions | None
    node_role: iam.IRole | None
    kubectl_layer: lambda_.ILayerVersion | None
    efa_security_group: EfaSecurityGroup | None
    tags: Mapping[str, str] | None
    removal_policy: RemovalPolicy
    auto_mode: bool

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _ClusterProps:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


@dataclass(frozen=True)
class _CheckedClusterProps:
    """The props :func:`check_cluster_props` checked (or normalised)."""

    version: eks.KubernetesVersion
    subnets: tuple[ec2.ISubnet, ...]
    cidrs: tuple[str, ...] | None
    roles: tuple[iam.IRole, ...]
    logging_types: tuple[eks.ClusterLoggingTypes, ...]
    tags: dict[str, str] | None
    removal_policy: RemovalPolicy


def check_cluster_props(given: _ClusterProps) -> _CheckedClusterProps:
    """Each prop checked on its own, in the constructor's order (the first bad one raises)."""
    from .cluster import SystemNodeGroupOptions

    vpc = check_vpc("vpc", given.vpc)
    version = check_kubernetes_version("version", given.version)
    if given.cluster_name is not None:
        check_str(
            "cluster_name",
            given.cluster_name,
            pattern=EKS_CLUSTER_NAME,
            allowed="an EKS cluster name: 1-100 letters, digits, '-' or '_', starting with a letter or digit",
        )
    subnets = (
        check_sequence("subnets", given.subnets, check_subnet)
        if given.subnets is not None
        else tuple(vpc.private_subnets)
    )
    cidrs = (
        check_str_sequence("public_endpoint_cidrs", given.public_endpoint_cidrs, item=_check_cidr)
        if given.public_endpoint_cidrs is not None
        else None
    )
    roles = check_sequence("admin_roles", given.admin_roles, _check_role)
    if given.secrets_encryption_key is not None:
        check_kms_key("secrets_encryption_key", given.secrets_encryption_key)
    logging_types = check_sequence(
        "control_plane_logging",
        given.control_plane_logging,
        lambda name, item: check_enum(name, item, eks.ClusterLoggingTypes),
    )
    system_node_group = given.system_node_group
    if system_node_group is not None and not isinstance(system_node_group, SystemNodeGroupOptions):
        raise FmTypeError(
            "system_node_group",
            system_node_group,
            f"a SystemNodeGroupOptions or None (got a {type(system_node_group).__name__})",
        )
    if given.node_role is not None:
        _check_role("node_role", given.node_role)
    if given.kubectl_layer is not None:
        check_construct(
            "kubectl_layer", given.kubectl_layer, attribute="layer_version_arn", expected="a lambda_.ILayerVersion"
        )
    efa_security_group = given.efa_security_group
    if efa_security_group is not None and not isinstance(efa_security_group, EfaSecurityGroup):
        raise FmTypeError(
            "efa_security_group",
            efa_security_group,
            f"an EfaSecurityGroup (got a {type(efa_security_group).__name__})",
        )
    return _CheckedClusterProps(
        version=version,
        subnets=subnets,
        cidrs=cidrs,
        roles=roles,
        logging_types=logging_types,
        tags=check_tags("tags", given.tags) if given.tags is not None else None,
        removal_policy=check_removal_policy("removal_policy", given.removal_policy),
    )
