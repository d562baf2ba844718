"""Amazon Managed Grafana: the workspace (:class:`GrafanaWorkspace`) and its no-manual-step provisioning
(:class:`GrafanaProvisioner`: Prometheus data source with SigV4 and the dashboards shipped in
:mod:`fmconstructs.observability.dashboards`)."""

from .provisioner import GrafanaProvisioner
from .workspace import (
    GrafanaAccountAccess,
    GrafanaAuthentication,
    GrafanaNetworkAccess,
    GrafanaPermissionType,
    GrafanaVersion,
    GrafanaWorkspace,
    SamlOptions,
)

__all__ = [
    "GrafanaAccountAccess",
    "GrafanaAuthentication",
    "GrafanaNetworkAccess",
    "GrafanaPermissionType",
    "GrafanaProvisioner",
    "GrafanaVersion",
    "GrafanaWorkspace",
    "SamlOptions",
]
