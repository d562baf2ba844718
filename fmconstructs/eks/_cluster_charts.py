"""Helm charts of a :class:`~fmconstructs.eks.cluster.GpuEksCluster`: install once per id, null-preserving values,
values rendered at synthesis for SageMaker HyperPod instance types.

The functions take the cluster as ``self``: :class:`GpuEksCluster` binds them as its private methods ``_chart``,
``_gpu_chart`` and ``_render_values_lazily`` (moved here from ``cluster.py`` unchanged).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import CfnResource, Duration, IStableStringProducer, Lazy, Stack, Token
from aws_cdk import aws_eks_v2 as eks

from ..errors import FmValidationError
from . import addons as _addons

if TYPE_CHECKING:
    from .cluster import GpuEksCluster


def chart(
    self: GpuEksCluster,
    id: str,
    pin: _addons.HelmChartPin,
    values: Mapping[str, Any],
    source: _addons.ChartSource | None = None,
    *,
    wait: bool = False,
) -> eks.HelmChart:
    """The chart ``id`` (installed once). ``source``: where the chart and its image come from (default the pin's
    public repository); a chart already added from another source is refused (add it with its source first).
    ``wait``: ``helm --wait`` (controllers whose webhooks must serve before their objects are applied)."""
    _addons.check_chart_source("source", source)
    if id in self._charts:
        if source is not None and source != self._chart_sources[id]:
            raise FmValidationError(
                "source", source.repository, f"the source {id} was first added with (add it with its source first)"
            )
        return self._charts[id]
    chosen = source or _addons.ChartSource.PUBLIC
    pin = chosen.pin(pin)
    values = chosen.apply(values)
    self._chart_sources[id] = chosen
    chart = self.cluster.add_helm_chart(
        id,
        chart=pin.chart,
        repository=pin.repository,
        version=pin.version,
        namespace=pin.namespace,
        release=pin.release,
        create_namespace=pin.namespace != "kube-system",
        values=dict(values),
        # DaemonSets on GPU nodes that may not exist yet (a Capacity Block not yet active): do not wait for pods.
        wait=wait,
        timeout=Duration.minutes(10),
    )
    if _addons.contains_null(values):
        _keep_null_values(chart, values)
    if self.system_node_group is not None:
        chart.node.add_dependency(self.system_node_group)
    self._charts[id] = chart
    return chart


def gpu_chart(
    self: GpuEksCluster,
    id: str,
    pin: _addons.HelmChartPin,
    build: Callable[[tuple[str, ...]], dict[str, Any]],
    source: _addons.ChartSource | None,
) -> eks.HelmChart:
    """A GPU DaemonSet chart whose values also cover the HyperPod instance types (now or added later)."""
    known_before = id in self._charts
    chart = self._chart(id, pin, build(self.hyperpod_instance_types), source)
    if not known_before:
        self._hyperpod_aware_values[id] = build
        if self._hyperpod_instance_types:
            self._render_values_lazily(id)
    return chart


def render_values_lazily(self: GpuEksCluster, id: str) -> None:
    """Write chart ``id``'s ``Values`` at synthesis, from the HyperPod types known then (escape hatch on the
    chart's CloudFormation resource, as :func:`_keep_null_values`; ``Stack.to_json_string`` keeps tokens)."""
    if id in self._lazy_values:
        return
    self._lazy_values.add(id)
    build = self._hyperpod_aware_values[id]
    source = self._chart_sources[id]
    stack = Stack.of(self)

    def render() -> str:
        return stack.to_json_string(source.apply(build(self.hyperpod_instance_types)))

    resource = self._charts[id].node.find_child("Resource").node.default_child
    if not isinstance(resource, CfnResource):  # pragma: no cover - aws-cdk-lib's HelmChart layout
        raise TypeError(f"{self._charts[id].node.path} has no CloudFormation resource for its values")
    resource.add_property_override("Values", Lazy.string(_StringProducer(render)))


@jsii.implements(IStableStringProducer)
class _StringProducer:
    """A ``Lazy.string`` producer from a Python callable (resolved once, at synthesis)."""

    def __init__(self, render: Callable[[], str]) -> None:
        self._render = render

    def produce(self) -> str | None:
        return self._render()


def _keep_null_values(chart: eks.HelmChart, values: Mapping[str, Any]) -> None:
    """Write ``values`` with their nulls into the chart's ``Values`` property.

    aws-cdk-lib serializes Helm values with ``Stack.toJsonString``, which drops ``None``/``null`` entries, so
    ``controller: {affinity: null}`` would reach Helm as ``controller: {}`` and the chart default would stay. A null
    is how Helm deletes a default key; the kubectl handler of ``aws_eks_v2`` loads ``Values`` with ``json.loads`` and
    writes it to the values file with ``json.dumps`` (aws-cdk-lib 2.275 custom-resource-handlers
    aws-eks-v2/kubectl-handler/helm), so a null in the property reaches Helm. Escape hatch on the chart's
    CloudFormation resource (``Values`` property).
    """
    rendered = json.dumps(values, separators=(",", ":"))
    if Token.is_unresolved(rendered):
        raise FmValidationError(
            "values", chart.node.path, "plain values (no CDK tokens) when a key is null (Helm default removal)"
        )
    custom_resource = chart.node.find_child("Resource")
    resource = custom_resource.node.default_child
    if not isinstance(resource, CfnResource):  # pragma: no cover - aws-cdk-lib's HelmChart layout
        raise TypeError(f"{chart.node.path} has no CloudFormation resource for its values")
    resource.add_property_override("Values", rendered)
