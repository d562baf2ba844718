"""The managed scraper's ``kueue`` job: Kueue's own metrics for the Queue dashboard (opt-in, see below).

What Kueue 0.19.2 serves (kubernetes-sigs/kueue tag v0.19.2, commit 8eab687):

- cmd/kueue/main.go lines 184-192: the metrics server is controller-runtime's with ``SecureServing: true`` and
  ``FilterProvider: filters.WithAuthenticationAndAuthorization``, on ``Configuration.metrics.bindAddress`` (``:8443``,
  :func:`fmconstructs.eks.scheduling.kueue_configuration`). So it is HTTPS only, and every request needs a bearer
  token that a ``TokenReview`` accepts and whose user a ``SubjectAccessReview`` allows ``get`` on the non-resource
  URL ``/metrics`` (charts/kueue/templates/rbac/metrics_reader_role.yaml: ``kueue-metrics-reader``). There is no
  plain-HTTP switch: ``ControllerMetrics`` has ``bindAddress`` ("0" turns serving off),
  ``enableClusterQueueResources``, ``customLabels`` and ``localQueueMetrics`` only
  (apis/config/v1beta2/configuration_types.go lines 174-195).
- Its certificate: with the chart's default internal certificate management, controller-runtime's self-signed one
  (main.go lines 215-233 load ``/etc/kueue/metrics/certs`` only without it), so a scraper skips verification, as
  Kueue's own ServiceMonitor does (config/components/prometheus/monitor.yaml: ``scheme: https``,
  ``bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token``, ``tlsConfig.insecureSkipVerify: true``).
- Where: the chart's Service ``<fullname>-controller-manager-metrics-service`` (templates/manager/
  auth_proxy_service.yaml), port ``https`` 8443 (values.yaml ``metricsService.ports``); fullname ``kueue`` for the
  release ``kueue`` in ``kueue-system`` that :class:`~fmconstructs.eks.KueueScheduling` installs.

What the AMP managed scraper does: it authenticates to the cluster as the Kubernetes user ``aps-collector-user``
(an access entry for its role), whose ``aps-collector-role`` already allows ``get`` on ``/metrics``
(:func:`~fmconstructs.observability.eks.scraper_rbac_manifests`), the permission ``kueue-metrics-reader`` grants.
Scrape configurations for it present that identity with ``bearer_token_file:
/var/run/secrets/kubernetes.io/serviceaccount/token`` (the AMP scraper example of hashicorp/terraform-provider-aws
website/docs/r/prometheus_scraper.html.markdown, job ``kubernetes-apiservers``; the same file as
``authorization.credentials_file`` for cAdvisor through the API server). UNCONFIRMED, hence opt-in
(``AmpEksScraper(scrape_kueue=True)``): (1) that the managed scraper sends that token to an in-cluster pod target
and that Kueue's ``TokenReview`` accepts it (the examples only send it to the API server); (2) that CreateScraper
accepts ``tls_config.insecure_skip_verify`` (Amazon CloudWatch's "Scraper configuration" page for its managed
Prometheus collectors lists ``tls_config`` among the supported fields, without its sub-fields; the AMP User Guide's
list was not readable). If either fails, the Queue dashboard's Kueue panels stay empty (1) or the scraper is not
created (2).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "KUEUE_METRICS_NAMESPACE",
    "KUEUE_METRICS_PORT_NAME",
    "KUEUE_METRICS_SERVICE",
    "SCRAPER_TOKEN_FILE",
    "kueue_job",
]

#: See the module notes (Kueue v0.19.2 chart, release ``kueue`` in ``kueue-system``).
KUEUE_METRICS_NAMESPACE = "kueue-system"
KUEUE_METRICS_SERVICE = "kueue-controller-manager-metrics-service"
KUEUE_METRICS_PORT_NAME = "https"
#: The managed scraper's own credentials in a scrape configuration (terraform-provider-aws AMP scraper example).
SCRAPER_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def kueue_job(cluster_label: str) -> dict[str, Any]:
    """The ``kueue`` scrape job: HTTPS to the controller's metrics Service with the scraper's token, certificate not
    verified (self-signed), series labelled ``cluster``. ``cluster_label`` is checked by the caller."""
    return {
        "job_name": "kueue",
        "scheme": "https",
        "bearer_token_file": SCRAPER_TOKEN_FILE,
        "tls_config": {"insecure_skip_verify": True},
        "kubernetes_sd_configs": [{"role": "endpoints"}],
        "relabel_configs": [
            {
                "source_labels": [
                    "__meta_kubernetes_namespace",
                    "__meta_kubernetes_service_name",
                    "__meta_kubernetes_endpoint_port_name",
                ],
                "action": "keep",
                "regex": f"{KUEUE_METRICS_NAMESPACE};{KUEUE_METRICS_SERVICE};{KUEUE_METRICS_PORT_NAME}",
            },
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"target_label": "cluster", "replacement": cluster_label},
        ],
    }
