"""PrometheusWorkspace: an Amazon Managed Service for Prometheus workspace with fmconstructs' alert rules and an
Alertmanager that routes to an encrypted SNS topic.

One workspace per region is the common layout: several clusters and stacks remote-write into it (pass the
:class:`PrometheusWorkspace` to the cluster stacks, or its :attr:`~PrometheusWorkspace.workspace_arn` where a construct
takes an ARN, such as :class:`~fmconstructs.observability.eks.AmpEksScraper`). aws-cdk-lib has only L1 resources for
AMP (``aws_aps``), so this construct wraps them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml
from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_aps as aps
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from .._log_groups import encrypted_log_group
from .._validate import (
    check_bool,
    check_construct,
    check_enum,
    check_instance,
    check_scope_id,
    check_str,
    check_str_sequence,
    located,
)
from ..errors import FmTypeError
from ._checks import KMS_KEY_ARN, check_arn, check_topic
from .option_rules import group_names_fit_the_namespace
from .rules import AlertThresholds, RuleGroup, check_rule_groups, default_rule_groups, rules_yaml

#: AWS::APS::RuleGroupsNamespace ``Name``: 1-64 characters (CloudFormation resource reference); the AMP API's
#: ``RuleGroupsNamespaceName`` pattern (botocore amp 2020-08-01; 1-128 characters there).
_NAMESPACE = re.compile(r".*[0-9A-Za-z][-.0-9A-Z_a-z]*.*")
_NAMESPACE_MAX = 64
_CUSTOM_SUFFIX = "-custom"


def alertmanager_config(*, topic_arn: str, region: str, group_by: Sequence[str] = ("alertname", "cluster")) -> str:
    """The Alertmanager configuration (the part AMP nests under ``alertmanager_config``): every alert to SNS.

    AMP signs the SNS call with its service identity (``sigv4.region``); the topic policy and key policy must let
    ``aps.amazonaws.com`` publish (AMP User Guide "AMP-alertmanager-receiver-AMPpermission"). Deploy-time values
    (tokens) are fine for the topic ARN and region: CloudFormation joins them into the definition.
    """
    check_str("topic_arn", topic_arn, min_length=1, allowed="an SNS topic ARN")
    check_str("region", region, min_length=1, allowed="an AWS Region code")
    labels = check_str_sequence("group_by", group_by, item=lambda n, v: check_str(n, v, min_length=1))
    config = {
        "route": {
            "receiver": "sns",
            "group_by": list(labels),
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
        },
        "receivers": [
            {
                "name": "sns",
                "sns_configs": [
                    {
                        "topic_arn": topic_arn,
                        "sigv4": {"region": region},
                        "subject": "[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }}",
                        "attributes": {"severity": "{{ .CommonLabels.severity }}"},
                    }
                ],
            }
        ],
    }
    return str(yaml.safe_dump(config, sort_keys=False, width=200))


def alert_manager_definition(*, topic_arn: str, region: str) -> str:
    """``AWS::APS::Workspace.AlertManagerDefinition``: the config nested under ``alertmanager_config``."""
    return str(yaml.safe_dump({"alertmanager_config": alertmanager_config(topic_arn=topic_arn, region=region)}))


class PrometheusWorkspace(Construct):
    """An AMP workspace with alert rules (``AWS::APS::RuleGroupsNamespace``) and Alertmanager routing to SNS."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alias: str | None = None,
        encryption_key: kms.IKey | str | None = None,
        log_group: logs.ILogGroup | None = None,
        enable_logging: bool = True,
        alert_topic: sns.ITopic | str | None = None,
        thresholds: AlertThresholds | None = None,
        extra_rule_groups: Sequence[RuleGroup] = (),
        rule_namespace: str = "fmconstructs",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        """
        :param alias: workspace alias: 1-100 characters of any kind (AMP API ``WorkspaceAlias``; AMP trims blanks at
            either end). Default: none.
        :param encryption_key: customer-managed KMS key for the workspace, as an ``IKey`` or a key ARN (a deploy-time
            value is fine). Default: AWS-owned key. A create-time choice: ``KmsKeyArn`` is create-only (cfn-lint
            1.58.0 schema of AWS::APS::Workspace; aws-cdk's service spec marks it as replacing), so adding, changing
            or removing the key after the first deploy REPLACES the workspace: a new, empty workspace with a new id
            and URLs, and the metric history of the old one is lost to dashboards and queries (with RETAIN the old
            workspace stays, billed, under its old id). Nothing at synthesis can tell a first deploy from a later one:
            decide on the key before the first deploy, or check with ``fmc``'s replacement gate, which lists
            AWS::APS::Workspace as stateful.
        :param log_group: where AMP writes rule and alerting errors. Default: a new log group (the removal policy
            below, 1 year) with a name CloudFormation generates, so a destroyed and redeployed stack never collides
            with a retained one.
        :param enable_logging: default True.
        :param alert_topic: where alerts go, as an ``ITopic`` or a topic ARN (an imported topic's policy is yours to
            manage: it must let ``aps.amazonaws.com`` publish). Default: a new KMS-encrypted, TLS-only SNS topic.
        :param thresholds: alert thresholds and ``for`` durations. Default: :class:`AlertThresholds`.
        :param extra_rule_groups: your own rule groups (distinct names), added to a second namespace
            ``<rule_namespace>-custom``.
        :param rule_namespace: the rule groups namespace name (at most 57 characters, so that ``-custom`` fits the
            64 of AWS::APS::RuleGroupsNamespace ``Name``). Default "fmconstructs".
        :param removal_policy: default RETAIN (the workspace holds your metrics history).
        """
        check_scope_id(scope, id)
        if alias is not None:
            # botocore amp WorkspaceAlias: min 1, max 100, no pattern ("can include any type of characters",
            # AWS::APS::Workspace Alias).
            check_str("alias", alias, min_length=1, max_length=100, allowed="1-100 characters")
        key_arn = _key_arn(encryption_key)
        if log_group is not None:
            check_construct("log_group", log_group, attribute="log_group_arn", expected="a logs.ILogGroup")
        check_bool("enable_logging", enable_logging)
        if alert_topic is not None:
            check_topic("alert_topic", alert_topic)
        if thresholds is not None:
            check_instance("thresholds", thresholds, AlertThresholds, "an AlertThresholds or None")
        extra_rule_groups = check_rule_groups("extra_rule_groups", extra_rule_groups)
        _check_namespace(rule_namespace, suffix=_CUSTOM_SUFFIX)
        check_enum("removal_policy", removal_policy, RemovalPolicy)
        super().__init__(scope, id)
        self.encryption_key_arn: str | None = key_arn
        self.alert_topic: sns.ITopic = self._build_alert_topic(alert_topic, removal_policy)
        if enable_logging and log_group is None:
            log_group = encrypted_log_group(
                self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=removal_policy
            )
        self.log_group = log_group if enable_logging else None
        self.resource = self._build_workspace(alias, key_arn, removal_policy)
        self._allow_publishing(self.alert_topic)
        self.rule_groups: tuple[RuleGroup, ...] = default_rule_groups(thresholds)
        _check_group_name_lengths(rule_namespace, self.rule_groups)
        _check_group_name_lengths(f"{rule_namespace}{_CUSTOM_SUFFIX}", extra_rule_groups)
        self.rules, self.custom_rules = self._build_rules(rule_namespace, extra_rule_groups)

    def _build_alert_topic(self, alert_topic: sns.ITopic | str | None, removal_policy: RemovalPolicy) -> sns.ITopic:
        """The given topic, or a new KMS-encrypted, TLS-only one whose key AMP and CloudWatch may use."""
        stack = Stack.of(self)
        if alert_topic is None:
            topic_key = kms.Key(
                self,
                "AlertTopicKey",
                enable_key_rotation=True,
                description="fmconstructs: encrypts the AMP alert topic",
                removal_policy=removal_policy,
            )
            # AMP (alerts) and CloudWatch (alarms such as LustreFileSystem.add_saturation_alarms) publish to the
            # encrypted topic with their service identities.
            topic_key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[
                        iam.ServicePrincipal("aps.amazonaws.com"),
                        iam.ServicePrincipal("cloudwatch.amazonaws.com"),
                    ],
                    actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                    resources=["*"],  # in a key policy, "*" is this key
                    conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
                )
            )
            alert_topic = sns.Topic(self, "AlertTopic", master_key=topic_key, enforce_ssl=True)
        elif isinstance(alert_topic, str):
            alert_topic = sns.Topic.from_topic_arn(self, "AlertTopic", alert_topic)
        return alert_topic

    def _build_workspace(
        self, alias: str | None, key_arn: str | None, removal_policy: RemovalPolicy
    ) -> aps.CfnWorkspace:
        """The workspace: optional key and logging, alerts routed to the alert topic."""
        stack = Stack.of(self)
        resource = aps.CfnWorkspace(
            self,
            "Resource",
            alias=alias,
            kms_key_arn=key_arn,
            logging_configuration=(
                aps.CfnWorkspace.LoggingConfigurationProperty(log_group_arn=self.log_group.log_group_arn)
                if self.log_group
                else None
            ),
            alert_manager_definition=alert_manager_definition(
                topic_arn=self.alert_topic.topic_arn, region=stack.region
            ),
        )
        resource.apply_removal_policy(removal_policy)
        return resource

    def _allow_publishing(self, alert_topic: sns.ITopic) -> None:
        """AMP (from this workspace) and CloudWatch alarms (from this account) may publish to the alert topic."""
        stack = Stack.of(self)
        alert_topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("aps.amazonaws.com")],
                actions=["sns:Publish", "sns:GetTopicAttributes"],
                resources=[alert_topic.topic_arn],
                conditions={
                    "ArnEquals": {"aws:SourceArn": self.workspace_arn},
                    "StringEquals": {"AWS:SourceAccount": stack.account},
                },
            )
        )

        alert_topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[alert_topic.topic_arn],
                conditions={"StringEquals": {"AWS:SourceAccount": stack.account}},
            )
        )

    def _build_rules(
        self, rule_namespace: str, extra_rule_groups: tuple[RuleGroup, ...]
    ) -> tuple[aps.CfnRuleGroupsNamespace, aps.CfnRuleGroupsNamespace | None]:
        """The default rule groups' namespace, and ``<rule_namespace>-custom`` for the extra groups (if any)."""
        rules = aps.CfnRuleGroupsNamespace(
            self, "Rules", name=rule_namespace, workspace=self.workspace_arn, data=rules_yaml(self.rule_groups)
        )
        custom_rules = (
            aps.CfnRuleGroupsNamespace(
                self,
                "CustomRules",
                name=f"{rule_namespace}-custom",
                workspace=self.workspace_arn,
                data=rules_yaml(extra_rule_groups),
            )
            if extra_rule_groups
            else None
        )
        return rules, custom_rules

    @property
    def workspace_arn(self) -> str:
        return self.resource.attr_arn

    @property
    def workspace_id(self) -> str:
        return self.resource.attr_workspace_id

    @property
    def prometheus_endpoint(self) -> str:
        """The workspace's ``PrometheusEndpoint`` attribute (AWS::APS::Workspace return values; documented as
        ``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/``, returned by DescribeWorkspace as
        ``.../workspaces/<id>/``). Prefer :attr:`workspace_url`, :attr:`remote_write_url` and :attr:`query_url`,
        which do not depend on which of the two forms it takes."""
        return self.resource.attr_prometheus_endpoint

    @property
    def workspace_url(self) -> str:
        """``https://aps-workspaces.<region>.<url suffix>/workspaces/<id>/``: the base of the workspace's Prometheus
        HTTP API (``api/v1/...``) and the URL of a Grafana Prometheus data source (Grafana appends ``api/v1/query``).
        Built from the workspace id and the stack's Region, as the AMP User Guide writes the URLs
        ("AMP-find-workspace-details": ``https://aps-workspaces.us-east-1.amazonaws.com/workspaces/<id>/api/v1/
        remote_write``; API reference "RemoteWrite": ``/workspaces/<workspaceId>/api/v1/remote_write``)."""
        return f"https://aps-workspaces.{Aws.REGION}.{Aws.URL_SUFFIX}/workspaces/{self.workspace_id}/"

    @property
    def remote_write_url(self) -> str:
        """``.../workspaces/<id>/api/v1/remote_write``: where Prometheus agents and collectors send samples (SigV4)."""
        return f"{self.workspace_url}api/v1/remote_write"

    @property
    def query_url(self) -> str:
        """``.../workspaces/<id>/api/v1/query``: the Prometheus instant-query API (AMP API reference "QueryMetrics":
        ``/workspaces/<workspaceId>/api/v1/query``; SigV4, ``aps:QueryMetrics``)."""
        return f"{self.workspace_url}api/v1/query"

    def grant_remote_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """``aps:RemoteWrite`` on this workspace only (node agents, collectors)."""
        check_construct("grantee", grantee, attribute="grant_principal", expected="an iam.IGrantable")
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["aps:RemoteWrite"], resource_arns=[self.workspace_arn]
        )

    def grant_query(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read access for dashboards (Grafana) on this workspace only."""
        check_construct("grantee", grantee, attribute="grant_principal", expected="an iam.IGrantable")
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"],
            resource_arns=[self.workspace_arn],
        )


def _key_arn(encryption_key: object) -> str | None:
    """The KMS key ARN of an ``IKey`` or of a key ARN string (botocore amp ``KmsKeyArn``; a token is accepted)."""
    if encryption_key is None:
        return None
    if isinstance(encryption_key, str):
        arn: str = check_arn(
            "encryption_key", encryption_key, KMS_KEY_ARN, "a kms.IKey or a KMS key ARN (arn:aws:kms:...:key/...)"
        )
        return arn
    if not hasattr(encryption_key, "node") or not hasattr(encryption_key, "key_arn"):
        raise FmTypeError(
            "encryption_key", encryption_key, f"a kms.IKey or a KMS key ARN (got a {type(encryption_key).__name__})"
        )
    return str(encryption_key.key_arn)


def _check_namespace(name: object, *, suffix: str) -> None:
    maximum = _NAMESPACE_MAX - len(suffix)
    allowed = (
        f"1-{maximum} characters with a letter or digit and no line break (AWS::APS::RuleGroupsNamespace Name, "
        f"64 with '{suffix}')"
    )
    check_str("rule_namespace", name, pattern=_NAMESPACE, min_length=1, max_length=maximum, allowed=allowed)


def _check_group_name_lengths(namespace: str, groups: Sequence[RuleGroup]) -> None:
    group_names_fit_the_namespace(namespace=namespace, group_names=[group.name for group in groups])
