"""VPC endpoints for a GPU cluster in subnets without an internet route (no NAT gateway, no internet gateway).

:class:`GpuClusterEndpoints` creates the S3 gateway endpoint (on the route tables of the given subnets) and one
interface endpoint per AWS service the chosen backends call from inside the VPC, with private DNS on (so the nodes'
SDKs and CLIs reach the usual Regional names) and a security group that accepts HTTPS from the VPC's CIDR block
(or the peers you give) only.

Which services each backend needs, and where that is written (each :class:`EndpointService` names its source):

- Every backend: ``ssm``, ``ssmmessages``, ``ec2messages`` (Session Manager, the login path of the PCS examples);
  ``logs`` and ``monitoring`` (CloudWatch Logs and metrics: node logs, the CloudWatch agent); ``ecr.api`` and
  ``ecr.dkr`` with the S3 gateway (container images from ECR: dcgm-exporter on Slurm nodes, every pod image on EKS;
  ECR stores layers in S3); ``sts`` (IAM roles for service accounts; the regional STS endpoint); ``aps-workspaces``
  (remote write to Amazon Managed Service for Prometheus). The S3 gateway endpoint also serves the exporter mirror
  and node scripts (:mod:`fmconstructs.observability.sources`).
- PCS: ``pcs``. PCS User Guide "vpc-interface-endpoints": "If your VPC doesn't have direct internet access, you must
  configure a VPC endpoint to enable your compute node group instances to call the AWS PCS
  RegisterComputeNodeGroupInstance API action" (service name ``com.amazonaws.region.pcs``).
- EKS: ``eks``, ``eks-auth``, ``ec2`` (EKS User Guide "private-clusters": the endpoint table lists ec2, ecr.api,
  ecr.dkr, s3, logs, sts, eks-auth (Pod Identity) and eks; "If you use the EKS Optimized AMI, you should enable the
  ec2 endpoint"), and ``lambda``: the kubectl handler that installs Helm charts runs in the VPC, and the custom
  resource provider framework function next to it invokes the handler through the Lambda API (aws-cdk-lib 2.275
  aws-eks-v2 ``KubectlProvider`` builds ``cr.Provider`` with the cluster's VPC and subnets).

Interface endpoints take at most one subnet per Availability Zone (AWS PrivateLink Guide): give one subnet per zone;
when zones are known at synthesis a second subnet in the same zone is refused. The VPC needs DNS support and DNS
hostnames for private DNS (``ec2.Vpc`` turns both on).

Service names are built by aws-cdk-lib's ``InterfaceVpcEndpointAwsService`` from the stack's Region
(``com.amazonaws.<Region>.<service>``, ``Ref AWS::Region`` in an environment-agnostic stack): no Region or partition
is written into the template.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import Any

import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from .._validate import (
    check_bool,
    check_enum,
    check_security_group,
    check_sequence,
    check_str,
    check_subnet,
    check_vpc,
    located,
    same_zone,
    subnet_zone,
)
from ..errors import FmTypeError, FmValidationError, is_token
from . import rules


class ClusterBackend(str, Enum):
    """The orchestrator whose nodes use the endpoints."""

    PCS = "pcs"
    EKS = "eks"


class EndpointService(str, Enum):
    """An AWS service reached through an interface endpoint; the value is the service's short name
    (``com.amazonaws.<Region>.<value>``)."""

    SSM = "ssm"
    SSM_MESSAGES = "ssmmessages"
    EC2_MESSAGES = "ec2messages"
    CLOUDWATCH_LOGS = "logs"
    CLOUDWATCH_MONITORING = "monitoring"
    ECR_API = "ecr.api"
    ECR_DOCKER = "ecr.dkr"
    STS = "sts"
    PROMETHEUS_WORKSPACES = "aps-workspaces"
    PCS = "pcs"
    EKS = "eks"
    EKS_AUTH = "eks-auth"
    EC2 = "ec2"
    LAMBDA = "lambda"
    SNS = "sns"

    @property
    def source(self) -> str:
        """Where AWS documents this endpoint (the page that lists its service name)."""
        return _SOURCES[self]

    @property
    def construct_id(self) -> str:
        """The endpoint's construct id under :class:`GpuClusterEndpoints` (public API: renaming replaces it)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


_SOURCES: dict[EndpointService, str] = {
    EndpointService.SNS: "SNS DG sns-vpc-create-endpoint (com.amazonaws.us-east-1.sns; private DNS required)",
    EndpointService.SSM: "EKS UG private-clusters (ssm); Systems Manager UG systems-manager-setting-up-messageAPIs",
    EndpointService.SSM_MESSAGES: "Systems Manager UG systems-manager-setting-up-messageAPIs (ssmmessages endpoint)",
    EndpointService.EC2_MESSAGES: "Systems Manager UG systems-manager-setting-up-messageAPIs (ec2messages endpoint)",
    EndpointService.CLOUDWATCH_LOGS: "EKS UG private-clusters (logs)",
    # UNCONFIRMED: the CloudWatch UG page for the monitoring endpoint was not seen; the service name is aws-cdk-lib's
    # InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING (com.amazonaws.<Region>.monitoring).
    EndpointService.CLOUDWATCH_MONITORING: "aws-cdk-lib InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING",
    EndpointService.ECR_API: "EKS UG private-clusters (ecr.api, with ecr.dkr and the s3 gateway)",
    EndpointService.ECR_DOCKER: "EKS UG private-clusters (ecr.dkr)",
    EndpointService.STS: "EKS UG private-clusters (sts); IAM UG reference_interface_vpc_endpoints",
    EndpointService.PROMETHEUS_WORKSPACES: "AMP UG AMP-and-interface-VPC (aps-workspaces: Prometheus-compatible APIs)",
    EndpointService.PCS: "PCS UG vpc-interface-endpoints (com.amazonaws.region.pcs)",
    EndpointService.EKS: "EKS UG private-clusters (eks)",
    EndpointService.EKS_AUTH: "EKS UG private-clusters (eks-auth, Pod Identity)",
    EndpointService.EC2: "EKS UG private-clusters (ec2); EC2 UG interface-vpc-endpoints",
    EndpointService.LAMBDA: "aws-cdk-lib 2.275 provider-framework runtime/outbound.js lambda.invoke (in the VPC)",
}

#: What nodes of every backend call.
COMMON_SERVICES: tuple[EndpointService, ...] = (
    EndpointService.SSM,
    EndpointService.SSM_MESSAGES,
    EndpointService.EC2_MESSAGES,
    EndpointService.CLOUDWATCH_LOGS,
    EndpointService.CLOUDWATCH_MONITORING,
    EndpointService.ECR_API,
    EndpointService.ECR_DOCKER,
    EndpointService.STS,
    EndpointService.PROMETHEUS_WORKSPACES,
)
#: What each backend adds.
BACKEND_SERVICES: dict[ClusterBackend, tuple[EndpointService, ...]] = {
    ClusterBackend.PCS: (EndpointService.PCS,),
    ClusterBackend.EKS: (EndpointService.EKS, EndpointService.EKS_AUTH, EndpointService.EC2, EndpointService.LAMBDA),
}

#: HTTPS: every AWS API behind an interface endpoint.
HTTPS_PORT = 443

# EC2 API route table ids (botocore ec2 RouteTable.RouteTableId is a plain string; ids have the form rtb-<hex>).
_ROUTE_TABLE_ID = re.compile(r"rtb-[0-9a-f]+")


def services_for(backends: Sequence[ClusterBackend]) -> tuple[EndpointService, ...]:
    """The interface endpoints ``backends`` need: the common set, then each backend's, without repeats."""
    checked = _check_backends("backends", backends)
    ordered = list(COMMON_SERVICES)
    for backend in checked:
        ordered += [s for s in BACKEND_SERVICES[backend] if s not in ordered]
    return tuple(ordered)


def _check_backends(parameter: str, backends: object) -> tuple[ClusterBackend, ...]:
    checked = check_sequence(parameter, backends, lambda n, v: check_enum(n, v, ClusterBackend))
    if not checked:
        raise FmValidationError(parameter, list(checked), "at least one ClusterBackend (PCS, EKS)")
    return checked


def _check_peer(parameter: str, peer: object) -> ec2.IPeer:
    # ec2.IPeer is a jsii interface (Peer.ipv4(...) returns a proxy, not a construct): check what a rule reads.
    if not (hasattr(peer, "to_ingress_rule_config") and hasattr(peer, "unique_id")):
        raise FmTypeError(parameter, peer, f"an ec2.IPeer such as ec2.Peer.ipv4(cidr) (got a {type(peer).__name__})")
    checked: ec2.IPeer = peer  # type: ignore[assignment]
    return checked


def _check_route_table(parameter: str, value: object) -> Any:
    return check_str(parameter, value, pattern=_ROUTE_TABLE_ID, allowed="a route table id such as 'rtb-0123abcd'")


def _vpc_cidr(vpc: ec2.IVpc) -> str:
    """The VPC's primary CIDR block. A VPC imported without it (``Vpc.from_vpc_attributes`` without
    ``vpc_cidr_block``) makes aws-cdk-lib raise ``CannotPerformOperationVpcCidr``."""
    # A VPC created in this app: its literal CidrBlock (the template then says which network may connect, and
    # cdk-nag's AwsSolutions-EC23 can evaluate the rule; it errors on a GetAtt). Otherwise the VpcCidrBlock reference.
    resource = vpc.node.default_child
    if isinstance(resource, ec2.CfnVPC) and isinstance(resource.cidr_block, str) and not is_token(resource.cidr_block):
        return resource.cidr_block
    try:
        cidr = vpc.vpc_cidr_block
    except RuntimeError:
        raise FmValidationError(
            "peers",
            None,
            "given (e.g. [ec2.Peer.ipv4('10.0.0.0/16')]) for a VPC imported without its CIDR block",
        ) from None
    return cidr


def _route_table_id(subnet: ec2.ISubnet) -> str | None:
    """The subnet's route table id, or None when it was imported without one (aws-cdk-lib's ImportedSubnet returns
    an undefined ``routeTableId``, which jsii refuses to serialize)."""
    try:
        table_id = subnet.route_table.route_table_id
    except RuntimeError:
        return None
    return table_id if isinstance(table_id, str) and table_id else None


@jsii.implements(ec2.IConnectable)
class GpuClusterEndpoints(Construct):
    """The VPC endpoints a GPU cluster needs with no internet route: the S3 gateway and interface endpoints.

    :param vpc: the VPC (may be imported by id; give ``peers`` when it was imported without its CIDR block).
    :param backends: the orchestrators whose nodes run here (``ClusterBackend.PCS``, ``ClusterBackend.EKS``); they
        choose the interface endpoints (:func:`services_for`, the module docstring lists why and where AWS says so).
    :param subnets: where the interface endpoints' network interfaces go, one per Availability Zone, and whose route
        tables get the S3 gateway route. Default: the VPC's private subnets, else its isolated subnets. Subnets
        imported without a zone or route table are accepted (give ``route_tables`` for the S3 gateway).
    :param services: the interface endpoints to create instead of the backends' set (same enum); default
        ``services_for(backends)``.
    :param extra_services: interface endpoints to add to the set (e.g. ``EndpointService.EC2`` for PCS nodes that
        call the EC2 API). Default none.
    :param route_tables: route table ids for the S3 gateway endpoint. Default: the route tables of ``subnets``
        (each must be known: subnets imported with ``Subnet.from_subnet_id`` carry none).
    :param s3_gateway: create the S3 gateway endpoint. Default True (a VPC may have one already: set False).
    :param peers: who may reach the endpoints on TCP 443. Default: the VPC's primary CIDR block.
    :param security_group: use this group for the interface endpoints instead of a new one (its rules are yours).
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        backends: Sequence[ClusterBackend],
        subnets: Sequence[ec2.ISubnet] | None = None,
        services: Sequence[EndpointService] | None = None,
        extra_services: Sequence[EndpointService] = (),
        route_tables: Sequence[str] | None = None,
        s3_gateway: bool = True,
        peers: Sequence[ec2.IPeer] | None = None,
        security_group: ec2.ISecurityGroup | None = None,
    ) -> None:
        check_vpc("vpc", vpc)
        self.backends = _check_backends("backends", backends)
        chosen = (
            check_sequence("services", services, lambda n, v: check_enum(n, v, EndpointService))
            if services is not None
            else services_for(self.backends)
        )
        extra = check_sequence("extra_services", extra_services, lambda n, v: check_enum(n, v, EndpointService))
        checked_subnets = (
            check_sequence("subnets", subnets, check_subnet) if subnets is not None else self._default_subnets(vpc)
        )
        tables = check_sequence("route_tables", route_tables, _check_route_table) if route_tables is not None else None
        check_bool("s3_gateway", s3_gateway)
        checked_peers = check_sequence("peers", peers, _check_peer) if peers is not None else None
        if security_group is not None:
            check_security_group("security_group", security_group)
        self.services: tuple[EndpointService, ...] = tuple(dict.fromkeys([*chosen, *extra]))
        self._validate(subnets=checked_subnets, peers=checked_peers, security_group=security_group)
        if checked_peers is None and security_group is None:
            checked_peers = (ec2.Peer.ipv4(_vpc_cidr(vpc)),)
        super().__init__(scope, id)
        self.vpc = vpc
        self.subnets: tuple[ec2.ISubnet, ...] = checked_subnets

        self.security_group: ec2.ISecurityGroup = self._build_security_group(security_group, checked_peers)
        self._connections = ec2.Connections(
            security_groups=[self.security_group], default_port=ec2.Port.tcp(HTTPS_PORT)
        )
        self._build_interface_endpoints()
        self._build_s3_gateway(s3_gateway, tables)

    def _build_security_group(
        self, security_group: ec2.ISecurityGroup | None, checked_peers: Sequence[ec2.IPeer] | None
    ) -> ec2.ISecurityGroup:
        """The given group, or a new one open on HTTPS to ``checked_peers`` only."""
        if security_group is None:
            group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=self.vpc,
                description="fmconstructs VPC interface endpoints: HTTPS from the cluster network only",
                allow_all_outbound=False,
            )
            for index, peer in enumerate(checked_peers or ()):
                group.add_ingress_rule(
                    peer, ec2.Port.tcp(HTTPS_PORT), f"HTTPS to AWS APIs from the cluster network ({index})"
                )
            security_group = group
        return security_group

    def _build_interface_endpoints(self) -> None:
        """One interface endpoint per service, with private DNS, in :attr:`subnets`."""
        self.interface_endpoints: dict[EndpointService, ec2.CfnVPCEndpoint] = {}
        for service in self.services:
            self.interface_endpoints[service] = ec2.CfnVPCEndpoint(
                self,
                service.construct_id,
                vpc_id=self.vpc.vpc_id,
                # com.amazonaws.<Region>.<name>, the Region a reference to the stack's (aws-cdk-lib
                # InterfaceVpcEndpointAwsService); never a literal Region or partition.
                service_name=ec2.InterfaceVpcEndpointAwsService(service.value).name,
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=[subnet.subnet_id for subnet in self.subnets],
                security_group_ids=[self.security_group.security_group_id],
            )

    def _build_s3_gateway(self, s3_gateway: bool, tables: Sequence[str] | None) -> None:
        """The S3 gateway endpoint on ``tables`` (default: the route tables of :attr:`subnets`), unless turned off."""
        self.s3_gateway_endpoint: ec2.CfnVPCEndpoint | None = None
        if s3_gateway:
            table_ids = tables if tables is not None else self._route_tables(self.subnets)
            self.s3_gateway_endpoint = ec2.CfnVPCEndpoint(
                self,
                "S3Gateway",
                vpc_id=self.vpc.vpc_id,
                service_name=ec2.GatewayVpcEndpointAwsService.S3.name,
                vpc_endpoint_type="Gateway",
                route_table_ids=list(table_ids),
            )

    # --- validation: one small check per rule ---------------------------------------------------------------------
    @staticmethod
    def _default_subnets(vpc: ec2.IVpc) -> tuple[ec2.ISubnet, ...]:
        subnets = tuple(vpc.private_subnets) or tuple(vpc.isolated_subnets)
        if not subnets:
            raise FmValidationError(
                "subnets", [], "given when the VPC has no private or isolated subnets known at synthesis"
            )
        return subnets

    def _validate(
        self,
        *,
        subnets: tuple[ec2.ISubnet, ...],
        peers: tuple[ec2.IPeer, ...] | None,
        security_group: ec2.ISecurityGroup | None,
    ) -> None:
        self._check_subnets(subnets)
        self._check_services()
        if peers is not None and not peers:
            raise FmValidationError("peers", [], "None (the VPC's CIDR block) or at least one peer")
        rules.peers_or_a_security_group(peers_given=peers is not None, security_group_given=security_group is not None)

    @staticmethod
    def _check_subnets(subnets: tuple[ec2.ISubnet, ...]) -> None:
        if not subnets:
            raise FmValidationError("subnets", [], "at least one subnet")
        # AWS PrivateLink Guide: an interface endpoint takes at most one subnet per Availability Zone.
        zones: list[str] = []
        for index, subnet in enumerate(subnets):
            zone = subnet_zone(subnet)
            if zone is None:
                continue
            if any(same_zone(zone, other) for other in zones):
                raise FmValidationError(
                    f"subnets[{index}]",
                    zone,
                    "one subnet per Availability Zone (an interface endpoint takes one per zone)",
                )
            zones.append(zone)

    def _check_services(self) -> None:
        if not self.services:
            raise FmValidationError("services", [], "at least one EndpointService")

    def _route_tables(self, subnets: tuple[ec2.ISubnet, ...]) -> tuple[str, ...]:
        ids: list[str] = []
        for index, subnet in enumerate(subnets):
            table_id = _route_table_id(subnet)
            if table_id is None:
                raise FmValidationError(
                    "route_tables",
                    None,
                    f"given (route table ids such as 'rtb-0123abcd') when a subnet has no route table known at "
                    f"synthesis (subnets[{index}] was imported without route_table_id), or s3_gateway=False",
                )
            if table_id not in ids:
                ids.append(table_id)
        return tuple(ids)

    # --- what callers need ------------------------------------------------------------------------------------------
    @property
    def connections(self) -> ec2.Connections:
        """The endpoints' security group (HTTPS); ``endpoints.connections.allow_default_port_from(nodes)`` opens it
        to a node group whose addresses are outside ``peers``."""
        return self._connections

    @property
    def endpoint_ids(self) -> dict[EndpointService, str]:
        """Interface endpoint ids (``vpce-...``, ``Ref``) by service."""
        return {service: endpoint.ref for service, endpoint in self.interface_endpoints.items()}

    @property
    def s3_gateway_endpoint_id(self) -> str | None:
        """The S3 gateway endpoint id (``Ref``), or None when ``s3_gateway=False``."""
        return self.s3_gateway_endpoint.ref if self.s3_gateway_endpoint is not None else None
