"""Constructs that act on a cluster's metrics, and the scrapers that collect them: a warning at synthesis when a
consumer would be inert because nothing collects what it reads.

:class:`~fmconstructs.observability.eks.AmpEksScraper` registers itself on its
:class:`~fmconstructs.eks.GpuEksCluster` (:attr:`GpuEksCluster.metrics_scrapers`, with whether it collects the model
servers' metrics). A consumer calls :func:`warn_without_scraper` when it is built; an Aspect looks at the finished
tree during synthesis (scrapers added after the consumer count) and warns on the consumer when the cluster has no
scraper (``serving=True``: none that collects serving metrics). Consumers: node remediation on EKS
(``fmconstructs:eks-remediation-without-scraper``: its alerts come from the scraped metrics) and KEDA autoscaling of a
model server (``fmconstructs:serving-autoscaler-without-scraper``: it scales on vLLM series in the workspace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import jsii
from aws_cdk import Aspects, IAspect
from constructs import IConstruct

from ..errors import WarningId, add_warning

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

__all__ = ["MetricsScraper", "warn_without_scraper"]


class MetricsScraper(Protocol):
    """What a consumer asks of a scraper registered on the cluster."""

    @property
    def collects_serving(self) -> bool:
        """Whether it collects the model servers' metrics (job ``fm-serving``)."""
        ...


@jsii.implements(IAspect)
class _WithoutScraper:
    """Warns on ``owner`` at synthesis when ``cluster`` has no (serving) scraper."""

    def __init__(
        self, owner: IConstruct, cluster: GpuEksCluster, warning: WarningId, message: str, serving: bool
    ) -> None:
        self._owner_path = owner.node.path
        self._owner = owner
        self._cluster = cluster
        self._warning = warning
        self._message = message
        self._serving = serving
        self._done = False

    def visit(self, node: IConstruct) -> None:
        if self._done or node.node.path != self._owner_path:
            return
        self._done = True
        scrapers = [s for s in self._cluster.metrics_scrapers if s.collects_serving or not self._serving]
        if not scrapers:
            add_warning(self._owner, self._warning, self._message)


def warn_without_scraper(
    owner: IConstruct, cluster: GpuEksCluster, *, warning: WarningId, message: str, serving: bool = False
) -> None:
    """At synthesis, warn ``warning`` (``message``) on ``owner`` when no scraper collects ``cluster``'s metrics
    (``serving``: its model servers' metrics)."""
    Aspects.of(owner).add(_WithoutScraper(owner, cluster, warning, message, serving))
