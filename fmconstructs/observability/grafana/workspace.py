"""Amazon Managed Grafana workspace whose IAM role may query given Amazon Managed Prometheus workspaces.

Wraps ``AWS::Grafana::Workspace`` (aws-facts section 8: ``AccountAccessType`` CURRENT_ACCOUNT|ORGANIZATION,
``AuthenticationProviders`` [AWS_SSO|SAML] and ``PermissionType`` SERVICE_MANAGED|CUSTOMER_MANAGED are required) and
creates the workspace role itself, with only the four Amazon Managed Prometheus query actions of the AWS managed
policy ``AmazonPrometheusQueryAccess`` (``aps:QueryMetrics``, ``aps:GetSeries``, ``aps:GetLabels``,
``aps:GetMetricMetadata``) scoped to the given workspace ARNs.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Unpack

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_grafana as grafana
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from ..._validate import (
    check_bool,
    check_count,
    check_enum,
    check_instance,
    check_scope_id,
    check_sequence,
    check_str,
    check_str_sequence,
    located,
)
from ...errors import FmValidationError, WarningId, add_warning, is_token
from .._checks import check_aps_workspace_arn, check_topic

if TYPE_CHECKING:
    from .provisioner import GrafanaProvisioner, GrafanaProvisionerOptions

# Amazon Prometheus Service query actions (AWS managed policy AmazonPrometheusQueryAccess, minus discovery).
PROMETHEUS_QUERY_ACTIONS: tuple[str, ...] = (
    "aps:QueryMetrics",
    "aps:GetSeries",
    "aps:GetLabels",
    "aps:GetMetricMetadata",
)
#: botocore grafana 2020-08-18 ``WorkspaceName`` pattern (AWS::Grafana::Workspace Name: 1-255 characters).
_NAME = re.compile(r"[a-zA-Z0-9\-._~]{1,255}")
#: Grafana CreateWorkspace ``workspaceDescription``: 0-2048 characters, pattern ``^[\p{L}\p{Z}\p{N}\p{P}]{0,2048}$``
#: (botocore grafana ``Description`` and the request's documentation): letters, separators, numbers, punctuation.
_DESCRIPTION_CATEGORIES = ("L", "Z", "N", "P")
_DESCRIPTION_MAX = 2048
#: botocore grafana ``RoleValue``, ``AssertionAttribute``, ``AllowedOrganization``: 1-256 characters.
_SAML_VALUE_MAX = 256
#: botocore grafana ``IdpMetadataUrl``: 1-2048 characters (no pattern).
_IDP_URL_MAX = 2048
#: botocore grafana ``PrefixListId`` and ``VpceId``: 1-100 characters (no pattern; documented format ``pl-1a2b3c4d``).
_NETWORK_ID_MAX = 100


class GrafanaAuthentication(str, Enum):
    """How users sign in (``AuthenticationProviders``)."""

    AWS_SSO = "AWS_SSO"  # IAM Identity Center
    SAML = "SAML"


class GrafanaPermissionType(str, Enum):
    """Who manages the workspace's IAM permissions (``PermissionType``)."""

    CUSTOMER_MANAGED = "CUSTOMER_MANAGED"
    SERVICE_MANAGED = "SERVICE_MANAGED"


class GrafanaAccountAccess(str, Enum):
    """Which accounts' data sources the workspace may read (``AccountAccessType``)."""

    CURRENT_ACCOUNT = "CURRENT_ACCOUNT"
    ORGANIZATION = "ORGANIZATION"


class GrafanaVersion(str, Enum):
    """Grafana major.minor versions offered by Amazon Managed Grafana that support service accounts (9.4+)."""

    V9_4 = "9.4"
    V10_4 = "10.4"


@dataclass(frozen=True)
class SamlOptions:
    """SAML sign-in (``SamlConfiguration``): the IdP metadata (URL or XML) and how assertions map to Grafana roles.

    ``admin_role_values``/``editor_role_values``: values of the ``role_attribute`` assertion attribute that make a user
    Grafana Admin/Editor (others are Viewers). ``login_validity_minutes``: session length (default: 120).
    """

    idp_metadata_url: str | None = None
    idp_metadata_xml: str | None = None
    role_attribute: str = "role"
    admin_role_values: tuple[str, ...] = ()
    editor_role_values: tuple[str, ...] = ()
    login_attribute: str | None = None
    email_attribute: str | None = None
    name_attribute: str | None = None
    groups_attribute: str | None = None
    org_attribute: str | None = None
    allowed_organizations: tuple[str, ...] = ()
    login_validity_minutes: int = 120

    def __post_init__(self) -> None:
        if (self.idp_metadata_url is None) == (self.idp_metadata_xml is None):
            raise FmValidationError(
                "saml", (self.idp_metadata_url, self.idp_metadata_xml), "given exactly one of idp_metadata_url or xml"
            )
        if self.idp_metadata_url is not None:
            check_str(
                "idp_metadata_url",
                self.idp_metadata_url,
                min_length=1,
                max_length=_IDP_URL_MAX,
                allowed=f"a URL of 1-{_IDP_URL_MAX} characters",
            )
        if self.idp_metadata_xml is not None:
            check_str("idp_metadata_xml", self.idp_metadata_xml, min_length=1, allowed="the IdP metadata XML")
        _saml_value("role_attribute", self.role_attribute)
        for name in ("login_attribute", "email_attribute", "name_attribute", "groups_attribute", "org_attribute"):
            if getattr(self, name) is not None:
                _saml_value(name, getattr(self, name))
        for name in ("admin_role_values", "editor_role_values", "allowed_organizations"):
            object.__setattr__(self, name, check_str_sequence(name, getattr(self, name), item=_saml_value))
        if not self.admin_role_values:
            raise FmValidationError(
                "admin_role_values", self.admin_role_values, "at least one role value (else nobody can administer)"
            )
        # botocore grafana LoginValidityDuration: an integer (minutes), no documented bounds; at least 1 here.
        check_count("login_validity_minutes", self.login_validity_minutes, minimum=1)

    def to_cfn(self) -> grafana.CfnWorkspace.SamlConfigurationProperty:
        """The L1 ``SamlConfiguration`` property."""
        return grafana.CfnWorkspace.SamlConfigurationProperty(
            idp_metadata=grafana.CfnWorkspace.IdpMetadataProperty(url=self.idp_metadata_url, xml=self.idp_metadata_xml),
            assertion_attributes=grafana.CfnWorkspace.AssertionAttributesProperty(
                role=self.role_attribute,
                login=self.login_attribute,
                email=self.email_attribute,
                name=self.name_attribute,
                groups=self.groups_attribute,
                org=self.org_attribute,
            ),
            role_values=grafana.CfnWorkspace.RoleValuesProperty(
                admin=list(self.admin_role_values), editor=list(self.editor_role_values) or None
            ),
            allowed_organizations=list(self.allowed_organizations) or None,
            login_validity_duration=self.login_validity_minutes,
        )


@dataclass(frozen=True)
class GrafanaNetworkAccess:
    """Who may reach the workspace over the network (``NetworkAccessControl``): only these IP ranges and VPC endpoints.

    AWS::Grafana::Workspace ``NetworkAccessControl`` takes no CIDRs: ``PrefixListIds`` (managed prefix lists, "a list
    of CIDR ranges", format ``pl-1a2b3c4d``) and ``VpceIds`` (Grafana API reference ``NetworkAccessConfiguration``).
    ``allowed_cidrs`` are put in prefix lists created by the workspace (``AWS::EC2::PrefixList``, one per address
    family). Sign-in is still required from allowed networks.

    :param allowed_cidrs: IPv4/IPv6 networks in CIDR notation (``203.0.113.0/24``), known at synth time.
    :param prefix_list_ids: existing managed prefix lists (``pl-...``; deploy-time values are fine).
    :param vpc_endpoint_ids: interface VPC endpoints for Amazon Managed Grafana (``vpce-...``).
    """

    allowed_cidrs: Sequence[str] = ()
    prefix_list_ids: Sequence[str] = ()
    vpc_endpoint_ids: Sequence[str] = ()

    def __post_init__(self) -> None:
        networks = check_str_sequence("allowed_cidrs", self.allowed_cidrs, item=_cidr)
        object.__setattr__(self, "allowed_cidrs", tuple(str(n) for n in networks))
        for name in ("prefix_list_ids", "vpc_endpoint_ids"):
            ids = check_str_sequence(
                name,
                getattr(self, name),
                item=lambda n, v: check_str(
                    n, v, min_length=1, max_length=_NETWORK_ID_MAX, allowed=f"an id of 1-{_NETWORK_ID_MAX} characters"
                ),
            )
            object.__setattr__(self, name, ids)
        if not (self.allowed_cidrs or self.prefix_list_ids or self.vpc_endpoint_ids):
            raise FmValidationError(
                "network_access",
                "no CIDRs, prefix lists or VPC endpoints",
                "at least one CIDR, prefix list or VPC endpoint (with none, nothing can reach the workspace; leave "
                "network_access None to allow every network)",
            )

    @property
    def ipv4_cidrs(self) -> tuple[str, ...]:
        return tuple(c for c in self.allowed_cidrs if ipaddress.ip_network(c).version == 4)

    @property
    def ipv6_cidrs(self) -> tuple[str, ...]:
        return tuple(c for c in self.allowed_cidrs if ipaddress.ip_network(c).version == 6)


#: Ranges that are never a source address on the internet: RFC 1918 private, RFC 6598 shared (carrier-grade NAT),
#: link-local and loopback (RFC 3927, RFC 1122), IPv6 unique local, link-local and loopback (RFC 4193, RFC 4291).
#: Not ``ipaddress``'s ``is_private``: it also counts the documentation ranges (203.0.113.0/24 and others).
_INTERNAL_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "169.254.0.0/16",
        "127.0.0.0/8",
        "fc00::/7",
        "fe80::/10",
        "::1/128",
    )
)


def _never_on_the_internet(cidr: str) -> bool:
    network = ipaddress.ip_network(cidr)
    return any(
        network.version == internal.version and network.subnet_of(internal)  # type: ignore[arg-type]
        for internal in _INTERNAL_NETWORKS
    )


def _cidr(parameter: str, value: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """A CIDR block (``ipaddress.ip_network``, host bits unset as EC2 prefix-list entries are written)."""
    text = check_str(parameter, value, allowed="a CIDR block such as '203.0.113.0/24'")
    if is_token(text):
        raise FmValidationError(
            parameter,
            text,
            "a CIDR known at synth time (its address family picks the prefix list; pass a "
            "deploy-time prefix list in prefix_list_ids instead)",
        )
    try:
        return ipaddress.ip_network(text, strict=True)
    except ValueError:
        raise FmValidationError(
            parameter, text, "a CIDR block with its host bits unset, such as '203.0.113.0/24' or '2001:db8::/32'"
        ) from None


def _saml_value(parameter: str, value: object) -> Any:
    return check_str(
        parameter,
        value,
        min_length=1,
        max_length=_SAML_VALUE_MAX,
        allowed=f"1-{_SAML_VALUE_MAX} characters",
    )


@dataclass(frozen=True)
class _WorkspaceProps:
    """The keyword arguments of :class:`GrafanaWorkspace` as given (checked by ``_validate``), for its steps."""

    prometheus_workspace_arns: Sequence[str]
    workspace_name: str | None
    description: str
    authentication: Sequence[GrafanaAuthentication]
    saml: SamlOptions | None
    permission_type: GrafanaPermissionType
    account_access: GrafanaAccountAccess
    organizational_units: Sequence[str]
    grafana_version: GrafanaVersion
    notification_topics: Sequence[sns.ITopic | str]
    plugin_admin_enabled: bool
    network_access: GrafanaNetworkAccess | None
    removal_policy: cdk.RemovalPolicy

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _WorkspaceProps:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


class GrafanaWorkspace(Construct):
    """An Amazon Managed Grafana workspace with a Prometheus data source role (``AWS::Grafana::Workspace``).

    The workspace role is created here (trust: ``grafana.amazonaws.com`` for this account's workspaces only) and may
    only query the Amazon Managed Prometheus workspaces passed in ``prometheus_workspace_arns`` (or added later with
    :meth:`allow_query`), and publish to the ``notification_topics`` if any. Dashboards and the data source itself are
    provisioned by :meth:`provision` (a custom resource), so no manual step is needed after ``cdk deploy``.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        prometheus_workspace_arns: Sequence[str],
        workspace_name: str | None = None,
        description: str = "fmconstructs GPU cluster observability",
        authentication: Sequence[GrafanaAuthentication] = (GrafanaAuthentication.AWS_SSO,),
        saml: SamlOptions | None = None,
        permission_type: GrafanaPermissionType = GrafanaPermissionType.CUSTOMER_MANAGED,
        account_access: GrafanaAccountAccess = GrafanaAccountAccess.CURRENT_ACCOUNT,
        organizational_units: Sequence[str] = (),
        grafana_version: GrafanaVersion = GrafanaVersion.V10_4,
        notification_topics: Sequence[sns.ITopic | str] = (),
        plugin_admin_enabled: bool = False,
        network_access: GrafanaNetworkAccess | None = None,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        """
        :param prometheus_workspace_arns: Amazon Managed Prometheus workspace ARNs the Grafana role may query (>= 1;
            deploy-time values such as ``Fn.import_value`` are fine).
        :param workspace_name: default: a name derived from the construct path.
        :param authentication: sign-in providers; default: IAM Identity Center (AWS_SSO) only.
        :param saml: required when ``authentication`` includes SAML, refused otherwise.
        :param permission_type: default CUSTOMER_MANAGED (the only type the CreateWorkspace API documents for
            CloudFormation; SERVICE_MANAGED adds a warning).
        :param account_access: default CURRENT_ACCOUNT; ORGANIZATION needs ``organizational_units``.
        :param grafana_version: default 10.4.
        :param notification_topics: SNS topics (``ITopic`` or topic ARNs) Grafana alerting may publish to; default none
            (no SNS destination).
        :param plugin_admin_enabled: let Grafana admins install plugins; default False.
        :param network_access: allow only these networks (:class:`GrafanaNetworkAccess`); default None (every
            network, sign-in still required).
        :param removal_policy: default RETAIN (users' own dashboards live in the workspace).
        """
        props = _WorkspaceProps.of(locals())
        check_scope_id(scope, id)
        arns = _validate(props)
        topics = check_sequence("notification_topics", notification_topics, check_topic)
        check_bool("plugin_admin_enabled", plugin_admin_enabled)
        if network_access is not None:
            check_instance("network_access", network_access, GrafanaNetworkAccess, "a GrafanaNetworkAccess or None")
        check_enum("removal_policy", removal_policy, cdk.RemovalPolicy)
        super().__init__(scope, id)
        name = workspace_name or _default_name(self)
        props = replace(
            props,
            authentication=tuple(authentication),
            organizational_units=check_str_sequence("organizational_units", organizational_units),
        )
        if permission_type is GrafanaPermissionType.SERVICE_MANAGED:
            self._warn_service_managed()
        self._query_arns: list[str] = []
        self.role = self._build_role()
        self._build_query_policy(arns)
        self.notification_topics: tuple[sns.ITopic, ...] = self._import_notification_topics(topics)
        self.prefix_lists: tuple[ec2.PrefixList, ...] = ()
        #: The networks allowed to reach the workspace (None: every network); the provisioner checks it.
        self.network_access = network_access
        self.resource = self._build_workspace(props, name=name, network=self._network_access(network_access))
        self._warn_unreachable(network_access)

    def _warn_unreachable(self, access: GrafanaNetworkAccess | None) -> None:
        """Warn when only private networks are allowed and no VPC endpoint is listed. The workspace's endpoint is
        public; a private address reaches it only through an interface VPC endpoint for
        ``com.amazonaws.<Region>.grafana-workspace`` (Amazon Managed Grafana User Guide "Interface VPC endpoints"),
        and traffic that leaves a VPC through NAT carries the NAT's public address. Access is granted to "a caller
        that is in either the IP address list or the VPC endpoint list" (API reference NetworkAccessConfiguration),
        so with private ranges alone and no endpoint nothing matches: the provisioner gets HTTP 403 at deploy and
        users cannot sign in. Existing prefix lists (contents unknown at synth) silence the warning."""
        if access is None or access.vpc_endpoint_ids or access.prefix_list_ids or not access.allowed_cidrs:
            return
        if not all(_never_on_the_internet(c) for c in access.allowed_cidrs):
            return
        add_warning(
            self,
            WarningId.GRAFANA_PRIVATE_NETWORKS_WITHOUT_ENDPOINT,
            f"network_access allows only private networks ({', '.join(access.allowed_cidrs)}) and lists no VPC "
            "endpoint: the workspace endpoint is public and a private address reaches it only through an interface "
            "VPC endpoint for com.amazonaws.<Region>.grafana-workspace, so nothing can reach it (the provisioner "
            "gets HTTP 403 at deploy). Add the endpoint to network_access.vpc_endpoint_ids, or allow the public "
            "addresses (NAT gateways, office ranges) your traffic leaves from.",
        )

    def _warn_service_managed(self) -> None:
        add_warning(
            self,
            WarningId.GRAFANA_SERVICE_MANAGED_PERMISSIONS,
            "permission_type SERVICE_MANAGED: the Amazon Managed Grafana CreateWorkspace API reference says to use "
            "CUSTOMER_MANAGED with CloudFormation; the role created here is passed either way",
        )

    def _build_role(self) -> iam.Role:
        """The workspace role, assumable by Grafana for workspaces of this account only."""
        stack = cdk.Stack.of(self)
        return iam.Role(
            self,
            "Role",
            description="Amazon Managed Grafana workspace role: query Amazon Managed Prometheus",
            assumed_by=iam.ServicePrincipal(
                "grafana.amazonaws.com",
                conditions={
                    # Confused-deputy guard (Amazon Managed Grafana user guide, customer-managed permissions).
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "StringLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="grafana",
                            resource="/workspaces",
                            resource_name="*",
                            arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
                        )
                    },
                },
            ),
        )

    def _build_query_policy(self, arns: Sequence[str]) -> None:
        """The role's query policy; ``allow_query`` adds a workspace ARN to its one statement."""
        self._query_policy = iam.Policy(self, "PrometheusQuery", roles=[self.role])
        self._query_statement = iam.PolicyStatement(
            sid="QueryAmazonManagedPrometheus", actions=list(PROMETHEUS_QUERY_ACTIONS), resources=self._query_arns
        )
        self._query_policy.add_statements(self._query_statement)
        for arn in arns:
            self.allow_query(arn)

    def _import_notification_topics(self, topics: Sequence[sns.ITopic | str]) -> tuple[sns.ITopic, ...]:
        """The topics (ARNs imported), each one the role may publish to."""
        imported: tuple[sns.ITopic, ...] = tuple(
            sns.Topic.from_topic_arn(self, f"NotificationTopic{index}", topic) if isinstance(topic, str) else topic
            for index, topic in enumerate(topics)
        )
        for topic in imported:
            self._allow_publish(topic)
        return imported

    def _build_workspace(
        self,
        props: _WorkspaceProps,
        *,
        name: str,
        network: grafana.CfnWorkspace.NetworkAccessControlProperty | None,
    ) -> grafana.CfnWorkspace:
        """The workspace, from the checked props (``authentication`` and ``organizational_units`` as tuples)."""
        resource = grafana.CfnWorkspace(
            self,
            "Resource",
            name=name,
            description=props.description,
            account_access_type=props.account_access.value,
            authentication_providers=[a.value for a in props.authentication],
            permission_type=props.permission_type.value,
            role_arn=self.role.role_arn,
            data_sources=["PROMETHEUS"],
            notification_destinations=["SNS"] if self.notification_topics else None,
            organizational_units=list(props.organizational_units) or None,
            grafana_version=props.grafana_version.value,
            plugin_admin_enabled=props.plugin_admin_enabled,
            saml_configuration=props.saml.to_cfn() if props.saml else None,
            network_access_control=network,
        )
        resource.apply_removal_policy(props.removal_policy)
        # The role's query policy must exist before Grafana validates the role.
        resource.node.add_dependency(self._query_policy)
        return resource

    @property
    def workspace_id(self) -> str:
        """Workspace id, ``g-...``."""
        return self.resource.attr_id

    @property
    def endpoint(self) -> str:
        """Host name of the workspace, ``g-....grafana-workspace.<region>.amazonaws.com``."""
        return self.resource.attr_endpoint

    @property
    def url(self) -> str:
        """Sign-in URL of the workspace."""
        return f"https://{self.endpoint}"

    @property
    def workspace_arn(self) -> str:
        """``arn:<partition>:grafana:<region>:<account>:/workspaces/<id>`` (Service Authorization Reference)."""
        return cdk.Stack.of(self).format_arn(
            service="grafana",
            resource="/workspaces",
            resource_name=self.workspace_id,
            arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
        )

    @property
    def prometheus_workspace_arns(self) -> tuple[str, ...]:
        """The Amazon Managed Prometheus workspaces the role may query."""
        return tuple(self._query_arns)

    def allow_query(self, prometheus_workspace_arn: str) -> None:
        """Let the workspace role query one more Amazon Managed Prometheus workspace (idempotent)."""
        check_aps_workspace_arn("prometheus_workspace_arn", prometheus_workspace_arn)
        if prometheus_workspace_arn not in self._query_arns:
            self._query_arns.append(prometheus_workspace_arn)
            self._query_statement.add_resources(prometheus_workspace_arn)

    def _network_access(
        self, access: GrafanaNetworkAccess | None
    ) -> grafana.CfnWorkspace.NetworkAccessControlProperty | None:
        if access is None:
            return None
        lists = []
        for family, cidrs in (
            (ec2.AddressFamily.IP_V4, access.ipv4_cidrs),
            (ec2.AddressFamily.IP_V6, access.ipv6_cidrs),
        ):
            if cidrs:
                lists.append(
                    ec2.PrefixList(
                        self,
                        "AllowedIpv4" if family is ec2.AddressFamily.IP_V4 else "AllowedIpv6",
                        address_family=family,
                        entries=[ec2.CfnPrefixList.EntryProperty(cidr=c) for c in cidrs],
                        max_entries=len(cidrs),
                    )
                )
        self.prefix_lists = tuple(lists)
        return grafana.CfnWorkspace.NetworkAccessControlProperty(
            prefix_list_ids=[p.prefix_list_id for p in lists] + list(access.prefix_list_ids),
            vpce_ids=list(access.vpc_endpoint_ids),
        )

    def _allow_publish(self, topic: sns.ITopic) -> None:
        # Explicit rather than topic.grant_publish(), whose KMS grant uses the wildcard kms:GenerateDataKey*:
        # publishing to an SSE-KMS topic needs kms:GenerateDataKey and kms:Decrypt on its key (Amazon SNS developer
        # guide, "Encryption at rest"; the key policy must let account IAM policies grant, as KMS default policies do).
        self.role.add_to_principal_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn]))
        if topic.master_key is not None:
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[topic.master_key.key_arn]
                )
            )

    def provision(self, *, id: str = "Provisioner", **options: Unpack[GrafanaProvisionerOptions]) -> GrafanaProvisioner:
        """Add the custom resource that creates the data source and uploads the dashboards to this workspace.

        Same options as :class:`~.provisioner.GrafanaProvisioner` (``workspace=self``; listed once, in
        :class:`~.provisioner.GrafanaProvisionerOptions`); returns the provisioner. With ``network_access`` on this
        workspace, ``vpc=`` is required (the provisioner must call Grafana from an allowed network).
        """
        from .provisioner import GrafanaProvisioner

        return GrafanaProvisioner(self, id, workspace=self, **options)


def _default_name(scope: Construct) -> str:
    stack_name = cdk.Stack.of(scope).stack_name
    raw = scope.node.id if cdk.Token.is_unresolved(stack_name) else f"{stack_name}-{scope.node.id}"
    return re.sub(r"[^a-zA-Z0-9\-._~]", "-", raw)[:255]


def _validate(props: _WorkspaceProps) -> tuple[str, ...]:
    """Check the props up to ``grafana_version`` (the constructor checks the rest); the workspace ARNs."""
    arns = check_sequence("prometheus_workspace_arns", props.prometheus_workspace_arns, check_aps_workspace_arn)
    if not arns:
        raise FmValidationError("prometheus_workspace_arns", [], "a non-empty list of workspace ARNs")
    _validate_name(props.workspace_name, props.description)
    _validate_authentication(props.authentication, props.saml)
    check_enum("permission_type", props.permission_type, GrafanaPermissionType)
    check_enum("account_access", props.account_access, GrafanaAccountAccess)
    check_enum("grafana_version", props.grafana_version, GrafanaVersion)
    units = check_str_sequence("organizational_units", props.organizational_units)
    _validate_account_access(props.account_access, units)
    return arns


def _validate_name(name: object, description: object) -> None:
    if name is not None:
        check_str(
            "workspace_name", name, pattern=_NAME, allowed="1-255 characters of letters, digits, '-', '.', '_' or '~'"
        )
    text = check_str("description", description, allowed="a description")
    if is_token(text):
        return
    if len(text) > _DESCRIPTION_MAX:
        raise FmValidationError("description", f"{len(text)} characters", f"at most {_DESCRIPTION_MAX} characters")
    bad = sorted({c for c in text if unicodedata.category(c)[0] not in _DESCRIPTION_CATEGORIES})
    if bad:
        raise FmValidationError(
            "description", text, f"letters, spaces, digits and punctuation only (not {', '.join(map(repr, bad))})"
        )


def _validate_authentication(authentication: object, saml: object) -> None:
    providers = check_sequence("authentication", authentication, lambda n, v: check_enum(n, v, GrafanaAuthentication))
    if not providers or len(set(providers)) != len(providers):
        raise FmValidationError("authentication", list(providers), "a non-empty list without duplicates")
    if saml is not None:
        check_instance("saml", saml, SamlOptions, "a SamlOptions or None")
    if GrafanaAuthentication.SAML in providers and saml is None:
        raise FmValidationError("saml", saml, "SamlOptions when authentication includes SAML")
    if saml is not None and GrafanaAuthentication.SAML not in providers:
        raise FmValidationError("authentication", list(providers), "a list including SAML when saml is given")


def _validate_account_access(account_access: GrafanaAccountAccess, organizational_units: Sequence[str]) -> None:
    if account_access is GrafanaAccountAccess.ORGANIZATION and not organizational_units:
        raise FmValidationError("organizational_units", list(organizational_units), "non-empty for ORGANIZATION access")
    if account_access is GrafanaAccountAccess.CURRENT_ACCOUNT and organizational_units:
        raise FmValidationError(
            "organizational_units", list(organizational_units), "empty for CURRENT_ACCOUNT access (use ORGANIZATION)"
        )
