"""FmObservability: the shared Amazon Managed Prometheus workspace (alert rules, Alertmanager to an encrypted SNS
topic) that FmPcsP5 and FmEksP5en send their metrics to, and an Amazon Managed Grafana workspace provisioned with
the Prometheus data source and fmconstructs' dashboards by a custom resource (no manual steps, no stored token)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace


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
            prometheus_endpoint=self.workspace.prometheus_endpoint,
        )
        CfnOutput(self, "GrafanaUrl", value=self.grafana.url)
        CfnOutput(self, "WorkspaceId", value=self.workspace.workspace_id)
        CfnOutput(self, "RemoteWriteUrl", value=self.workspace.remote_write_url)
