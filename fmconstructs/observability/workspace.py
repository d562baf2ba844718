"""PrometheusWorkspace: an Amazon Managed Service for Prometheus workspace with fmconstructs' alert rules and an
Alertmanager that routes to an encrypted SNS topic.

One workspace per region is the common layout: several clusters and stacks remote-write into it (pass
:attr:`PrometheusWorkspace.workspace_arn` across stacks, or import it with :meth:`from_workspace_attributes`).
aws-cdk-lib has only L1 resources for AMP (``aws_aps``), so this construct wraps them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml
from aws_cdk import RemovalPolicy, Stack, Token
from aws_cdk import aws_aps as aps
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from ..errors import FmValidationError
from .rules import AlertThresholds, RuleGroup, default_rule_groups, rules_yaml

_ALIAS = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")  # AWS::APS::Workspace Alias: 1-100 characters
_NAMESPACE = re.compile(r"^[0-9A-Za-z][-.0-9A-Z_a-z]{0,63}$")  # RuleGroupsNamespace Name pattern (CFN schema)


def alertmanager_config(*, topic_arn: str, region: str, group_by: Sequence[str] = ("alertname", "cluster")) -> str:
    """The Alertmanager configuration (the part AMP nests under ``alertmanager_config``): every alert to SNS.

    AMP signs the SNS call with its service identity (``sigv4.region``); the topic policy and key policy must let
    ``aps.amazonaws.com`` publish (AMP User Guide "AMP-alertmanager-receiver-AMPpermission").
    """
    config = {
        "route": {
            "receiver": "sns",
            "group_by": list(group_by),
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

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alias: str | None = None,
        encryption_key: kms.IKey | None = None,
        log_group: logs.ILogGroup | None = None,
        enable_logging: bool = True,
        alert_topic: sns.ITopic | None = None,
        thresholds: AlertThresholds | None = None,
        extra_rule_groups: Sequence[RuleGroup] = (),
        rule_namespace: str = "fmconstructs",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        """
        :param alias: workspace alias (1-100 letters, digits, ``_.-``). Default: none.
        :param encryption_key: customer-managed KMS key for the workspace. Default: AWS-owned key.
        :param log_group: where AMP writes rule and alerting errors. Default: a new log group (RETAIN, 1 year).
        :param enable_logging: default True.
        :param alert_topic: where alerts go. Default: a new KMS-encrypted, TLS-only SNS topic.
        :param thresholds: alert thresholds and ``for`` durations. Default: :class:`AlertThresholds`.
        :param extra_rule_groups: your own rule groups, added to a second namespace ``<rule_namespace>-custom``.
        :param removal_policy: default RETAIN (the workspace holds your metrics history).
        """
        super().__init__(scope, id)
        if alias is not None and not Token.is_unresolved(alias) and not _ALIAS.match(alias):
            raise FmValidationError("alias", alias, "1-100 letters, digits, '_', '.' or '-'")
        if not _NAMESPACE.match(rule_namespace) or len(rule_namespace) > 56:
            raise FmValidationError("rule_namespace", rule_namespace, "1-56 letters, digits, '-', '.' or '_'")
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
        self.alert_topic = alert_topic

        if enable_logging and log_group is None:
            log_group = logs.LogGroup(
                self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=removal_policy
            )
        self.log_group = log_group if enable_logging else None

        self.resource = aps.CfnWorkspace(
            self,
            "Resource",
            alias=alias,
            kms_key_arn=encryption_key.key_arn if encryption_key else None,
            logging_configuration=(
                aps.CfnWorkspace.LoggingConfigurationProperty(log_group_arn=self.log_group.log_group_arn)
                if self.log_group
                else None
            ),
            alert_manager_definition=alert_manager_definition(topic_arn=alert_topic.topic_arn, region=stack.region),
        )
        self.resource.apply_removal_policy(removal_policy)

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

        self.rule_groups: tuple[RuleGroup, ...] = default_rule_groups(thresholds)
        self.rules = aps.CfnRuleGroupsNamespace(
            self, "Rules", name=rule_namespace, workspace=self.workspace_arn, data=rules_yaml(self.rule_groups)
        )
        self.custom_rules = (
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

    @property
    def workspace_arn(self) -> str:
        return self.resource.attr_arn

    @property
    def workspace_id(self) -> str:
        return self.resource.attr_workspace_id

    @property
    def prometheus_endpoint(self) -> str:
        """``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/``."""
        return self.resource.attr_prometheus_endpoint

    @property
    def remote_write_url(self) -> str:
        return f"{self.prometheus_endpoint}api/v1/remote_write"

    @property
    def query_url(self) -> str:
        return f"{self.prometheus_endpoint}api/v1/query"

    def grant_remote_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """``aps:RemoteWrite`` on this workspace only (node agents, collectors)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["aps:RemoteWrite"], resource_arns=[self.workspace_arn]
        )

    def grant_query(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read access for dashboards (Grafana) on this workspace only."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"],
            resource_arns=[self.workspace_arn],
        )
