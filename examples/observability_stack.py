"""FmObservability: the shared Amazon Managed Prometheus workspace (alert rules, Alertmanager to an encrypted SNS
topic) that FmPcsP5 and FmEksP5en send their metrics to, and an Amazon Managed Grafana workspace provisioned with
the Prometheus data source and fmconstructs' dashboards by a custom resource (no manual steps, no stored token).

Stack outputs (``cdk deploy FmObservability --outputs-file out.json``): ``GrafanaUrl`` (sign in there),
``PrometheusRemoteWriteUrl`` and ``PrometheusQueryUrl`` (SigV4, for your own agents and tools),
``PrometheusWorkspaceId`` and ``AlertTopicArn`` (subscribe to receive alerts).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace

#: Output id -> description: what an operator reads after ``cdk deploy``.
OUTPUT_DESCRIPTIONS: dict[str, str] = {
    "GrafanaUrl": "Amazon Managed Grafana sign-in URL (IAM Identity Center); dashboards are in the fmconstructs folder",
    "PrometheusRemoteWriteUrl": "Amazon Managed Prometheus remote-write URL (SigV4, aps:RemoteWrite) for more agents",
    "PrometheusQueryUrl": "Amazon Managed Prometheus instant-query URL (SigV4, aps:QueryMetrics), e.g. for awscurl",
    "PrometheusWorkspaceId": "Amazon Managed Prometheus workspace id (ws-...)",
    "AlertTopicArn": "SNS topic that receives every alert: subscribe an email address, chat or paging integration",
}


class ObservabilityStack(Stack):
    """One workspace per region, shared by the cluster stacks (passed to them as an object reference)."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.workspace = PrometheusWorkspace(self, "Prometheus", alias="fmconstructs")
        self.grafana = GrafanaWorkspace(
            self,
            "Grafana",
            prometheus_workspace_arns=[self.workspace.workspace_arn],
            notification_topics=[self.workspace.alert_topic],
        )
        self.provisioner = self.grafana.provision(
            prometheus_workspace_arn=self.workspace.workspace_arn,
            # The data source URL: .../workspaces/<id>/ (Grafana appends api/v1/query).
            prometheus_endpoint=self.workspace.workspace_url,
        )
        values = {
            "GrafanaUrl": self.grafana.url,
            "PrometheusRemoteWriteUrl": self.workspace.remote_write_url,
            "PrometheusQueryUrl": self.workspace.query_url,
            "PrometheusWorkspaceId": self.workspace.workspace_id,
            "AlertTopicArn": self.workspace.alert_topic.topic_arn,
        }
        self.outputs: dict[str, CfnOutput] = {
            name: CfnOutput(self, name, value=value, description=OUTPUT_DESCRIPTIONS[name])
            for name, value in values.items()
        }
