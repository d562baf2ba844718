"""Amazon Managed Grafana workspace whose IAM role may query given Amazon Managed Prometheus workspaces.

Wraps ``AWS::Grafana::Workspace`` (aws-facts section 8: ``AccountAccessType`` CURRENT_ACCOUNT|ORGANIZATION,
``AuthenticationProviders`` [AWS_SSO|SAML] and ``PermissionType`` SERVICE_MANAGED|CUSTOMER_MANAGED are required) and
creates the workspace role itself, with only the four Amazon Managed Prometheus query actions of the AWS managed
policy ``AmazonPrometheusQueryAccess`` (``aps:QueryMetrics``, ``aps:GetSeries``, ``aps:GetLabels``,
``aps:GetMetricMetadata``) scoped to the given workspace ARNs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import aws_grafana as grafana
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from ...errors import FmValidationError, one_of

if TYPE_CHECKING:
    from .provisioner import GrafanaProvisioner

# Amazon Prometheus Service query actions (AWS managed policy AmazonPrometheusQueryAccess, minus discovery).
PROMETHEUS_QUERY_ACTIONS: tuple[str, ...] = (
    "aps:QueryMetrics",
    "aps:GetSeries",
    "aps:GetLabels",
    "aps:GetMetricMetadata",
)
# AWS::Grafana::Workspace Name: 1-255 characters of [a-zA-Z0-9-._~] (CloudFormation resource reference).
_NAME = re.compile(r"^[a-zA-Z0-9\-._~]{1,255}$")
_APS_WORKSPACE_ARN = re.compile(r"^arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[A-Za-z0-9-]+$")
_SERVICE_MANAGED_WARNING = "fmconstructs:grafana-service-managed-permissions"


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
        url = self.idp_metadata_url
        if url is not None and not cdk.Token.is_unresolved(url) and not url.startswith("https://"):
            raise FmValidationError("idp_metadata_url", url, "an https:// URL")
        if not self.admin_role_values:
            raise FmValidationError(
                "admin_role_values", self.admin_role_values, "at least one role value (else nobody can administer)"
            )
        if not 1 <= self.login_validity_minutes <= 525600:
            raise FmValidationError("login_validity_minutes", self.login_validity_minutes, "between 1 and 525600")

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


class GrafanaWorkspace(Construct):
    """An Amazon Managed Grafana workspace with a Prometheus data source role (``AWS::Grafana::Workspace``).

    The workspace role is created here (trust: ``grafana.amazonaws.com`` for this account's workspaces only) and may
    only query the Amazon Managed Prometheus workspaces passed in ``prometheus_workspace_arns`` (or added later with
    :meth:`allow_query`), and publish to the ``notification_topics`` if any. Dashboards and the data source itself are
    provisioned by :meth:`provision` (a custom resource), so no manual step is needed after ``cdk deploy``.
    """

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
        notification_topics: Sequence[sns.ITopic] = (),
        plugin_admin_enabled: bool = False,
        removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN,
    ) -> None:
        """
        :param prometheus_workspace_arns: Amazon Managed Prometheus workspaces the Grafana role may query (>= 1).
        :param workspace_name: default: a name derived from the construct path.
        :param authentication: sign-in providers; default: IAM Identity Center (AWS_SSO) only.
        :param saml: required when ``authentication`` includes SAML, refused otherwise.
        :param permission_type: default CUSTOMER_MANAGED (the only type the CreateWorkspace API documents for
            CloudFormation; SERVICE_MANAGED adds a warning).
        :param account_access: default CURRENT_ACCOUNT; ORGANIZATION needs ``organizational_units``.
        :param grafana_version: default 10.4.
        :param notification_topics: SNS topics Grafana alerting may publish to; default none (no SNS destination).
        :param plugin_admin_enabled: let Grafana admins install plugins; default False.
        :param removal_policy: default RETAIN (users' own dashboards live in the workspace).
        """
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        name = workspace_name or _default_name(self)
        _validate(
            prometheus_workspace_arns=prometheus_workspace_arns,
            workspace_name=name,
            description=description,
            authentication=authentication,
            saml=saml,
            permission_type=permission_type,
            account_access=account_access,
            organizational_units=organizational_units,
            grafana_version=grafana_version,
        )
        if permission_type is GrafanaPermissionType.SERVICE_MANAGED:
            cdk.Annotations.of(self).add_warning_v2(
                _SERVICE_MANAGED_WARNING,
                "permission_type SERVICE_MANAGED: the Amazon Managed Grafana CreateWorkspace API reference says to use "
                "CUSTOMER_MANAGED with CloudFormation; the role created here is passed either way",
            )
        self._query_arns: list[str] = []
        self.role = iam.Role(
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
        self._query_policy = iam.Policy(self, "PrometheusQuery", roles=[self.role])
        self._query_statement = iam.PolicyStatement(
            sid="QueryAmazonManagedPrometheus", actions=list(PROMETHEUS_QUERY_ACTIONS), resources=self._query_arns
        )
        self._query_policy.add_statements(self._query_statement)
        for arn in prometheus_workspace_arns:
            self.allow_query(arn)
        for topic in notification_topics:
            self._allow_publish(topic)

        self.resource = grafana.CfnWorkspace(
            self,
            "Resource",
            name=name,
            description=description,
            account_access_type=account_access.value,
            authentication_providers=[a.value for a in authentication],
            permission_type=permission_type.value,
            role_arn=self.role.role_arn,
            data_sources=["PROMETHEUS"],
            notification_destinations=["SNS"] if notification_topics else None,
            organizational_units=list(organizational_units) or None,
            grafana_version=grafana_version.value,
            plugin_admin_enabled=plugin_admin_enabled,
            saml_configuration=saml.to_cfn() if saml else None,
        )
        self.resource.apply_removal_policy(removal_policy)
        # The role's query policy must exist before Grafana validates the role.
        self.resource.node.add_dependency(self._query_policy)

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
        _check_aps_arn("prometheus_workspace_arn", prometheus_workspace_arn)
        if prometheus_workspace_arn not in self._query_arns:
            self._query_arns.append(prometheus_workspace_arn)
            self._query_statement.add_resources(prometheus_workspace_arn)

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

    def provision(
        self,
        *,
        prometheus_workspace_arn: str,
        prometheus_endpoint: str,
        id: str = "Provisioner",
        data_source_name: str = "Amazon Managed Prometheus",
        data_source_uid: str = "fm-amp",
        data_source_is_default: bool = True,
        folder_title: str = "fmconstructs",
        folder_uid: str = "fmconstructs",
        service_account_name: str = "fmconstructs-provisioner",
        log_retention: logs.RetentionDays = logs.RetentionDays.THREE_MONTHS,
    ) -> GrafanaProvisioner:
        """Add the custom resource that creates the data source and uploads the dashboards to this workspace.

        Same options as :class:`~.provisioner.GrafanaProvisioner` (``workspace=self``); returns the provisioner.
        """
        from .provisioner import GrafanaProvisioner

        return GrafanaProvisioner(
            self,
            id,
            workspace=self,
            prometheus_workspace_arn=prometheus_workspace_arn,
            prometheus_endpoint=prometheus_endpoint,
            data_source_name=data_source_name,
            data_source_uid=data_source_uid,
            data_source_is_default=data_source_is_default,
            folder_title=folder_title,
            folder_uid=folder_uid,
            service_account_name=service_account_name,
            log_retention=log_retention,
        )


def _default_name(scope: Construct) -> str:
    stack_name = cdk.Stack.of(scope).stack_name
    raw = scope.node.id if cdk.Token.is_unresolved(stack_name) else f"{stack_name}-{scope.node.id}"
    return re.sub(r"[^a-zA-Z0-9\-._~]", "-", raw)[:255]


def _check_aps_arn(parameter: str, arn: str) -> None:
    if not cdk.Token.is_unresolved(arn) and not _APS_WORKSPACE_ARN.match(arn):
        raise FmValidationError(
            parameter, arn, "an Amazon Managed Prometheus workspace ARN (arn:aws:aps:...:workspace/ws-...)"
        )


def _validate(
    *,
    prometheus_workspace_arns: Sequence[str],
    workspace_name: str,
    description: str,
    authentication: Sequence[GrafanaAuthentication],
    saml: SamlOptions | None,
    permission_type: GrafanaPermissionType,
    account_access: GrafanaAccountAccess,
    organizational_units: Sequence[str],
    grafana_version: GrafanaVersion,
) -> None:
    _validate_prometheus(prometheus_workspace_arns)
    _validate_name(workspace_name, description)
    _validate_authentication(authentication, saml)
    _validate_enums(permission_type, account_access, grafana_version)
    _validate_account_access(account_access, organizational_units)


def _validate_prometheus(arns: Sequence[str]) -> None:
    if isinstance(arns, str) or not arns:
        raise FmValidationError("prometheus_workspace_arns", arns, "a non-empty list of workspace ARNs")
    for arn in arns:
        _check_aps_arn("prometheus_workspace_arns", arn)


def _validate_name(name: str, description: str) -> None:
    if not cdk.Token.is_unresolved(name) and not _NAME.match(name):
        raise FmValidationError("workspace_name", name, "1-255 characters of letters, digits, '-', '.', '_' or '~'")
    if not cdk.Token.is_unresolved(description) and len(description) > 2048:
        raise FmValidationError("description", f"{len(description)} characters", "at most 2048 characters")


def _validate_authentication(authentication: Sequence[GrafanaAuthentication], saml: SamlOptions | None) -> None:
    if not authentication or len(set(authentication)) != len(authentication):
        raise FmValidationError("authentication", authentication, "a non-empty list without duplicates")
    for provider in authentication:
        if not isinstance(provider, GrafanaAuthentication):
            raise FmValidationError("authentication", provider, one_of(GrafanaAuthentication))
    if GrafanaAuthentication.SAML in authentication and saml is None:
        raise FmValidationError("saml", saml, "SamlOptions when authentication includes SAML")
    if saml is not None and GrafanaAuthentication.SAML not in authentication:
        raise FmValidationError("authentication", list(authentication), "a list including SAML when saml is given")


def _validate_enums(
    permission_type: GrafanaPermissionType, account_access: GrafanaAccountAccess, grafana_version: GrafanaVersion
) -> None:
    if not isinstance(permission_type, GrafanaPermissionType):
        raise FmValidationError("permission_type", permission_type, one_of(GrafanaPermissionType))
    if not isinstance(account_access, GrafanaAccountAccess):
        raise FmValidationError("account_access", account_access, one_of(GrafanaAccountAccess))
    if not isinstance(grafana_version, GrafanaVersion):
        raise FmValidationError("grafana_version", grafana_version, one_of(GrafanaVersion))


def _validate_account_access(account_access: GrafanaAccountAccess, organizational_units: Sequence[str]) -> None:
    if account_access is GrafanaAccountAccess.ORGANIZATION and not organizational_units:
        raise FmValidationError("organizational_units", list(organizational_units), "non-empty for ORGANIZATION access")
    if account_access is GrafanaAccountAccess.CURRENT_ACCOUNT and organizational_units:
        raise FmValidationError(
            "organizational_units", list(organizational_units), "empty for CURRENT_ACCOUNT access (use ORGANIZATION)"
        )
