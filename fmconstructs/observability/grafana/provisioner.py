"""Custom resource that provisions a Grafana workspace: Prometheus data source (SigV4) and the shipped dashboards.

A Python Lambda (``handler/index.py``, standard library + boto3) behind ``aws_cdk.custom_resources.Provider``. The
Lambda asset holds only the handler and the dashboard JSON files of :mod:`fmconstructs.observability.dashboards`.
Its role may call the five service-account actions it needs on this one workspace, and write its own log group.
The Grafana token is created and revoked inside each invocation and never appears in the template, the logs or the
custom resource response.

Every call the handler makes is bounded (per-call timeouts and a deadline from the Lambda's remaining time), so
Create/Update fail with a message and Delete succeeds before the function times out; a Delete that cannot reach
Grafana logs why and succeeds (the dashboards belong to a workspace that is usually being deleted too), so the stack
never ends in DELETE_FAILED because of Grafana.

A workspace with ``network_access`` (network access control) accepts only "listed IP addresses and VPC endpoints"
(Amazon Managed Grafana API reference, NetworkAccessConfiguration), so a Lambda function outside a VPC is refused.
The provisioner then runs in the VPC given as ``vpc=`` (``vpc_subnets=``, ``security_groups=``), and without one the
construct refuses at synthesis (:class:`~fmconstructs.errors.FmValidationError`) instead of failing at deploy.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict, cast

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from ..._log_groups import encrypted_log_group
from ..._validate import (
    check_bool,
    check_enum,
    check_instance,
    check_scope_id,
    check_security_group,
    check_sequence,
    check_str,
    check_vpc,
    located,
)
from ...errors import FmValidationError, is_token
from .._checks import check_aps_workspace_arn
from ..dashboards import dashboards_digest, load_dashboards

if TYPE_CHECKING:
    from .workspace import GrafanaWorkspace

_OBSERVABILITY_DIR = Path(__file__).resolve().parents[1]
_HANDLER_FILE = Path(__file__).resolve().parent / "handler" / "index.py"
HANDLER = "grafana.handler.index.on_event"
"""Lambda handler: a module path inside the asset (``grafana/handler/index.py``; ``grafana`` is a namespace package
there because its ``__init__.py``, which imports aws_cdk, is left out)."""

# The asset is the observability folder filtered down to the handler and the dashboards (CDK glob excludes, applied
# in order; "!" re-includes; a bare pattern also matches base names).
ASSET_EXCLUDE: tuple[str, ...] = (
    "*",
    "!grafana",
    "!grafana/handler",
    "!grafana/handler/__init__.py",
    "!grafana/handler/index.py",
    "!dashboards",
    "!dashboards/*.json",
)

# Grafana actions the handler calls; all take the workspace resource type (Service Authorization Reference,
# "Actions, resources, and condition keys for Amazon Managed Grafana").
GRAFANA_ACTIONS: tuple[str, ...] = (
    "grafana:ListWorkspaceServiceAccounts",
    "grafana:CreateWorkspaceServiceAccount",
    "grafana:DeleteWorkspaceServiceAccount",
    "grafana:CreateWorkspaceServiceAccountToken",
    "grafana:DeleteWorkspaceServiceAccountToken",
)
# Grafana uids: at most 40 characters of letters, digits, '-' and '_' (Grafana pkg/util shortid_generator.go
# IsValidShortUID and MaxUIDLength = 40; UNCONFIRMED for the Grafana versions Amazon Managed Grafana runs).
_UID = re.compile(r"[a-zA-Z0-9\-_]{1,40}")
# botocore grafana ``ServiceAccountName``: 1-128 characters (no pattern).
_SERVICE_ACCOUNT_NAME_MAX = 128


class GrafanaProvisionerOptions(TypedDict, total=False):
    """The options of :class:`GrafanaProvisioner` but ``workspace``, as
    :meth:`~.workspace.GrafanaWorkspace.provision` takes them (one list: see the constructor for their meaning)."""

    prometheus_workspace_arn: Required[str]
    prometheus_endpoint: Required[str]
    data_source_name: str
    data_source_uid: str
    data_source_is_default: bool
    folder_title: str
    folder_uid: str
    service_account_name: str
    log_retention: logs.RetentionDays
    vpc: ec2.IVpc | None
    vpc_subnets: ec2.SubnetSelection | None
    security_groups: Sequence[ec2.ISecurityGroup] | None


class GrafanaProvisioner(Construct):
    """Creates the Prometheus data source and uploads every shipped dashboard into a Grafana workspace.

    On each deployment where the dashboards, the handler or any property changed, CloudFormation sends an Update
    and the handler re-applies everything (idempotent: data source by uid, dashboards with overwrite) and removes
    dashboards that are no longer shipped. On stack deletion it removes what it created (best effort).
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        workspace: GrafanaWorkspace,
        prometheus_workspace_arn: str,
        prometheus_endpoint: str,
        data_source_name: str = "Amazon Managed Prometheus",
        data_source_uid: str = "fm-amp",
        data_source_is_default: bool = True,
        folder_title: str = "fmconstructs",
        folder_uid: str = "fmconstructs",
        service_account_name: str = "fmconstructs-provisioner",
        log_retention: logs.RetentionDays = logs.RetentionDays.THREE_MONTHS,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
    ) -> None:
        """
        :param workspace: the Grafana workspace to provision; its role is also allowed to query
            ``prometheus_workspace_arn``.
        :param prometheus_workspace_arn: the Amazon Managed Prometheus workspace (its region signs the queries).
        :param prometheus_endpoint: its ``PrometheusEndpoint`` (``https://aps-workspaces.<region>.amazonaws.com/
            workspaces/<id>/``), the data source URL.
        :param data_source_name: default "Amazon Managed Prometheus".
        :param data_source_uid: stable uid the dashboards' ``$datasource`` variable is preset to; default "fm-amp".
        :param data_source_is_default: make it the workspace's default data source; default True.
        :param folder_title: Grafana folder of the dashboards; default "fmconstructs".
        :param folder_uid: default "fmconstructs".
        :param service_account_name: Grafana service account the tokens belong to; default "fmconstructs-provisioner".
        :param log_retention: of the handler and provider log groups (destroyed with the stack: they hold no data);
            default three months.
        :param vpc: run the provisioning Lambda in this VPC. Required when the workspace has ``network_access``:
            its subnets must reach the workspace through an interface VPC endpoint for
            ``com.amazonaws.<Region>.grafana-workspace`` listed in ``network_access.vpc_endpoint_ids``, or through a
            NAT gateway whose public addresses are in ``allowed_cidrs``, and reach the Amazon Managed Grafana API
            (service account tokens) through NAT or an endpoint for ``com.amazonaws.<Region>.grafana`` (Amazon
            Managed Grafana User Guide, "Interface VPC endpoints"). default: outside any VPC.
        :param vpc_subnets: with ``vpc``: the subnets (default: aws-cdk-lib's choice, the private subnets).
        :param security_groups: with ``vpc``: default one new group with all outbound traffic allowed.
        """
        check_scope_id(scope, id)
        from .workspace import GrafanaWorkspace

        check_instance("workspace", workspace, GrafanaWorkspace, "a GrafanaWorkspace")
        check_aps_workspace_arn("prometheus_workspace_arn", prometheus_workspace_arn)
        _validate(
            prometheus_endpoint=prometheus_endpoint,
            data_source_uid=data_source_uid,
            folder_uid=folder_uid,
            data_source_name=data_source_name,
            folder_title=folder_title,
            service_account_name=service_account_name,
        )
        check_bool("data_source_is_default", data_source_is_default)
        check_enum("log_retention", log_retention, logs.RetentionDays)
        _check_network(workspace, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups)
        super().__init__(scope, id)
        workspace.allow_query(prometheus_workspace_arn)
        self.dashboard_uids: tuple[str, ...] = tuple(d.uid for d in load_dashboards())

        self.log_group = self._build_log_group("HandlerLogs", log_retention)
        self.role = self._build_handler_role(workspace)
        self.function = self._build_handler(vpc, vpc_subnets, security_groups)
        self.provider = self._build_provider(log_retention)
        self.resource = self._build_custom_resource(
            workspace,
            {
                "PrometheusWorkspaceArn": prometheus_workspace_arn,
                "PrometheusUrl": prometheus_endpoint,
                "DataSourceUid": data_source_uid,
                "DataSourceName": data_source_name,
                "DataSourceIsDefault": data_source_is_default,
                "FolderUid": folder_uid,
                "FolderTitle": folder_title,
            },
            service_account_name=service_account_name,
        )
        self.data_source_uid = data_source_uid

    def _build_log_group(self, id: str, retention: logs.RetentionDays) -> logs.LogGroup:
        """A log group destroyed with the stack (it holds no data)."""
        return encrypted_log_group(self, id, retention=retention, removal_policy=cdk.RemovalPolicy.DESTROY)

    def _build_handler_role(self, workspace: GrafanaWorkspace) -> iam.Role:
        """The handler's role: service account tokens on this workspace only, and its own logs."""
        role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Grafana provisioning: service account tokens on one workspace, own logs",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="GrafanaServiceAccountTokens",
                actions=list(GRAFANA_ACTIONS),
                resources=[workspace.workspace_arn],
            )
        )
        self.log_group.grant_write(role)
        return role

    def _build_handler(
        self,
        vpc: ec2.IVpc | None,
        vpc_subnets: ec2.SubnetSelection | None,
        security_groups: Sequence[ec2.ISecurityGroup] | None,
    ) -> lambda_.Function:
        """The provisioning Lambda (the data source and the dashboards), in the VPC when one is given."""
        return lambda_.Function(
            self,
            "Handler",
            description="fmconstructs: Grafana data source and dashboards (custom resource)",
            # Latest Python the aws-cdk-lib 2.275 Runtime enum offers (cdk-nag AwsSolutions-L1).
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(_OBSERVABILITY_DIR), exclude=list(ASSET_EXCLUDE)),
            timeout=cdk.Duration.minutes(5),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            **self._network(vpc, vpc_subnets, security_groups),
        )

    def _build_provider(self, log_retention: logs.RetentionDays) -> cr.Provider:
        """The custom resource provider framework invoking the handler, with its own role and logs."""
        provider_logs = self._build_log_group("ProviderLogs", log_retention)
        provider_role = iam.Role(
            self,
            "ProviderRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Custom resource provider framework: invoke the Grafana provisioning handler, own logs",
        )
        provider_logs.grant_write(provider_role)
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            framework_on_event_role=provider_role,
            log_group=provider_logs,
        )
        handler_logical_id = cdk.Stack.of(self).get_logical_id(cast(cdk.CfnElement, self.function.node.default_child))
        cdk.Validations.of(provider_role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{handler_logical_id}.Arn>:*]",
                reason="The provider framework invokes the provisioning handler by function ARN, qualified or not "
                "(ARN and ARN:* for versions and aliases); the grant names that one function only",
            )
        )
        return provider

    def _build_custom_resource(
        self,
        workspace: GrafanaWorkspace,
        settings: dict[str, Any],
        *,
        service_account_name: str,
    ) -> cdk.CustomResource:
        """The provisioning custom resource; ``settings`` are the data source and folder properties."""
        return cdk.CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::FmGrafanaProvisioning",
            properties={
                "WorkspaceId": workspace.workspace_id,
                "GrafanaEndpoint": workspace.endpoint,
                **settings,
                "DashboardUids": list(self.dashboard_uids),
                "ServiceAccountName": service_account_name,
                # Not read by the handler: they change when a dashboard or the handler changes, so that
                # CloudFormation sends an Update and the new content is uploaded.
                "DashboardsDigest": dashboards_digest(),
                "HandlerDigest": hashlib.sha256(_HANDLER_FILE.read_bytes()).hexdigest(),
            },
        )

    def _network(
        self,
        vpc: ec2.IVpc | None,
        vpc_subnets: ec2.SubnetSelection | None,
        security_groups: Sequence[ec2.ISecurityGroup] | None,
    ) -> dict[str, Any]:
        """Function props that put the handler in ``vpc``, with ENI permissions on its role; {} without a VPC."""
        #: The handler's security group when this construct created it (``vpc`` given without ``security_groups``).
        self.security_group: ec2.SecurityGroup | None = None
        if vpc is None:
            return {}
        # A function in a VPC needs ENI permissions on its execution role (Lambda Developer Guide configuration-vpc);
        # AWSLambdaENIManagementAccess holds those only, as the Capacity Block events handler uses it.
        self.role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(_ENI_POLICY))
        cdk.Validations.of(self.role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{_ENI_POLICY}]",
                reason="the Grafana provisioner runs in the VPC to reach a workspace with network access control; "
                "Lambda creates its network interfaces with the execution role, and AWSLambdaENIManagementAccess "
                "holds only those ENI actions (their Resource must be *)",
            )
        )
        groups = list(security_groups or ())
        if not groups:
            self.security_group = ec2.SecurityGroup(
                self,
                "HandlerSecurityGroup",
                vpc=vpc,
                description="Grafana provisioner: HTTPS to the Grafana workspace and API",
                allow_all_outbound=True,
            )
            groups = [self.security_group]
        return {"vpc": vpc, "vpc_subnets": vpc_subnets, "security_groups": groups}


_ENI_POLICY = "service-role/AWSLambdaENIManagementAccess"


def _check_network(
    workspace: GrafanaWorkspace,
    *,
    vpc: object,
    vpc_subnets: object,
    security_groups: object,
) -> None:
    """A VPC is required for a workspace with network access control; subnets and groups only with a VPC."""
    if vpc is not None:
        check_vpc("vpc", vpc)
    if vpc_subnets is not None:
        check_instance("vpc_subnets", vpc_subnets, ec2.SubnetSelection, "an ec2.SubnetSelection")
    if security_groups is not None:
        check_sequence("security_groups", security_groups, check_security_group)
    if vpc is None and (vpc_subnets is not None or security_groups is not None):
        raise FmValidationError("vpc", None, "a VPC when vpc_subnets or security_groups are given")
    if vpc is None and getattr(workspace, "network_access", None) is not None:
        raise FmValidationError(
            "vpc",
            None,
            "the VPC to run the provisioner in, because the workspace has network_access: Grafana accepts only the "
            "listed IP ranges and VPC endpoints, so a provisioner outside the VPC would be refused at deploy (HTTP "
            "403). Pass vpc= (and vpc_subnets=) whose subnets reach the workspace through an interface VPC endpoint "
            "for com.amazonaws.<Region>.grafana-workspace listed in network_access.vpc_endpoint_ids, or through a "
            "NAT gateway whose public IPs are in network_access.allowed_cidrs, and reach the Grafana API (NAT, or "
            "an endpoint for com.amazonaws.<Region>.grafana)",
        )


def _validate(
    *,
    prometheus_endpoint: object,
    data_source_uid: object,
    folder_uid: object,
    data_source_name: object,
    folder_title: object,
    service_account_name: object,
) -> None:
    endpoint = check_str("prometheus_endpoint", prometheus_endpoint, allowed="an https:// URL")
    # Grafana signs the data source's requests with SigV4 and sends them to this URL: plain http is refused.
    if not is_token(endpoint) and (not endpoint.startswith("https://") or any(c.isspace() for c in endpoint)):
        raise FmValidationError("prometheus_endpoint", endpoint, "an https:// URL")
    for name, uid in (("data_source_uid", data_source_uid), ("folder_uid", folder_uid)):
        check_str(name, uid, pattern=_UID, allowed="1-40 characters of letters, digits, '-' or '_'")
        if is_token(uid):
            raise FmValidationError(name, uid, "a uid known at synth time (the dashboards refer to it)")
    for name, text in (("data_source_name", data_source_name), ("folder_title", folder_title)):
        checked = check_str(name, text, allowed="a non-blank name of at most 190 characters")
        if not is_token(checked) and (not checked.strip() or len(checked) > 190 or "\n" in checked):
            raise FmValidationError(name, text, "a non-blank name of at most 190 characters on one line")
    check_str(
        "service_account_name",
        service_account_name,
        min_length=1,
        max_length=_SERVICE_ACCOUNT_NAME_MAX,
        allowed=f"1-{_SERVICE_ACCOUNT_NAME_MAX} characters (Grafana API ServiceAccountName)",
    )
