"""``fmc usage``'s query: GPU-hours per group (team, job, instance type) over a period, and their cost.

The formula, from raw dcgm-exporter series (no recording rule is needed, so it works on a workspace filled before any
was deployed): every GPU that dcgm-exporter watches is one ``DCGM_FI_DEV_GPU_UTIL`` series, and while a GPU is given
to a pod or a Slurm job that series carries the owner's label (``namespace`` from dcgm-exporter's Kubernetes pod
attribution, ``hpc_job`` from its HPC job mapping). A subquery evaluates the selector every ``step`` over the
period, so ``count_over_time`` counts, per GPU series, the steps it was present with the label set; x ``step`` /
3600 that is GPU-hours::

    sum by (<label>, instance_type) (
      count_over_time(DCGM_FI_DEV_GPU_UTIL{<label>!=""}[<period>s:<step>s])
    ) * <step> / 3600

evaluated as an instant query at ``time=<end>`` (Prometheus HTTP API ``/api/v1/query``).

It counts allocated GPUs, busy or idle (an idle allocated GPU is still paid for). Precision is one ``step`` per
allocation; a series counts as present up to Prometheus's 5-minute lookback after its last sample unless a staleness
marker ended it (Prometheus docs "Querying basics": subqueries, staleness).

Cost per row: with ``--price-per-gpu-hour USD``, GPU-hours x USD. Otherwise, with ``--price-per-hour TYPE=USD`` (the
same per-node-hour prices as ``fmc plan``), GPU-hours / the catalog's GPUs per node of TYPE x USD, which needs the
``instance_type`` label on the series (fmconstructs' Slurm node agents add it: observability/collection.py
NodeLabels); a row without it, or of a type without a price, has no cost and a note says why.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalog import CATALOG
from .health_queries import PrometheusQuery, QueryProblem, Sample, _snippet, parse_vector

#: One series per GPU (dcgm-exporter's default counters; fmconstructs collects it: observability/metrics.py).
GPU_SERIES = "DCGM_FI_DEV_GPU_UTIL"
#: dcgm-exporter's Kubernetes pod attribution label for the pod's namespace (NVIDIA/dcgm-exporter
#: internal/pkg/transformation: ``namespaceAttribute = "namespace"``). On EKS a team is a namespace.
NAMESPACE_LABEL = "namespace"
#: dcgm-exporter's HPC job mapping label for the Slurm job id (same file: ``hpcJobAttribute = "hpc_job"``).
HPC_JOB_LABEL = "hpc_job"
#: The instance type label fmconstructs' node agents put on every series (observability/collection.py NodeLabels).
INSTANCE_TYPE_LABEL = "instance_type"
#: ``--by`` choices whose label is on the GPU series -> that label. ``team``, ``user`` and ``account`` are not on
#: the DCGM series: they are joined at query time (:mod:`fmconstructs.cli.usage_joins`).
GROUP_LABELS = {
    "namespace": NAMESPACE_LABEL,
    "job": HPC_JOB_LABEL,
    "instance_type": INSTANCE_TYPE_LABEL,
}
#: Default subquery resolution in seconds (one sample per GPU per minute over the period).
DEFAULT_STEP_SECONDS = 60
#: Seconds to wait for the workspace's answer (a 30-day subquery is heavier than fmc health's instant queries).
USAGE_QUERY_TIMEOUT_SECONDS = 60.0
#: Label shown for the instance type of a series without one.
NO_TYPE = "-"

_DURATION = re.compile(r"^([1-9][0-9]{0,5})([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    """Seconds of ``<n><unit>`` (unit s, m, h, d or w: ``7d``, ``12h``); ValueError otherwise."""
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"{text!r}: a whole number and a unit s, m, h, d or w (e.g. 7d, 12h)")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def gpu_hours_query(label: str, *, period_seconds: int, step_seconds: int) -> str:
    """PromQL for GPU-hours per ``label`` (and instance type) over the ``period_seconds`` before the query's
    evaluation time (the API's ``time`` parameter: the period's end; no ``@`` modifier, which older engines lack)."""
    by = label if label == INSTANCE_TYPE_LABEL else f"{label}, {INSTANCE_TYPE_LABEL}"
    window = f"[{period_seconds}s:{step_seconds}s]"
    return f'sum by ({by}) (count_over_time({GPU_SERIES}{{{label}!=""}}{window})) * {step_seconds} / 3600'


class UsageQuery(PrometheusQuery):
    """One instant query at ``time`` against the workspace, signed with SigV4 for service ``aps``; HTTP 401/403 are
    :class:`CredentialsRefused`, anything else a :class:`QueryProblem`."""

    def _signed_at(self, promql: str, at: float) -> urllib.request.Request:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        body = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"}).encode()
        request = AWSRequest(
            method="POST", url=self.url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        SigV4Auth(self.credentials, "aps", self.region).add_auth(request)
        return urllib.request.Request(self.url, data=body, headers=dict(request.headers.items()), method="POST")

    def query_at(self, promql: str, at: float) -> list[Sample]:
        from botocore.exceptions import BotoCoreError, NoCredentialsError

        try:
            with urllib.request.urlopen(self._signed_at(promql, at), timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            if error.code in (401, 403):
                raise CredentialsRefused(f"the workspace refused the credentials (HTTP {error.code})") from None
            raise QueryProblem(f"the workspace answered HTTP {error.code} {error.reason}: {_snippet(error)}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise QueryProblem(f"the workspace is unreachable ({error})") from None
        except NoCredentialsError:
            raise NoCredentials("no AWS credentials to sign the query with") from None
        except BotoCoreError as error:
            raise QueryProblem(f"signing the query failed ({type(error).__name__}: {error})") from None
        return parse_vector(raw)


class CredentialsRefused(QueryProblem):
    """The workspace answered 401/403: missing ``aps:QueryMetrics`` or bad credentials."""


class NoCredentials(QueryProblem):
    """botocore found no credentials to sign the query with."""


@dataclass
class UsageRow:
    group: str
    instance_type: str
    gpu_hours: float
    gpus_per_node: int | None = None
    usd_per_node_hour: float | None = None
    usd_per_gpu_hour: float | None = None
    cost_usd: float | None = None


@dataclass
class Usage:
    by: str
    label: str
    start: float
    end: float
    step_seconds: int
    query: str
    rows: list[UsageRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The label that must be on a GPU series for it to count (``label`` itself unless the group is joined).
    series_label: str = ""
    #: For a joined group: the row name of GPU-hours without an owner, and why they have none.
    unknown: tuple[str, str] | None = None

    @property
    def total_gpu_hours(self) -> float:
        return sum(r.gpu_hours for r in self.rows)

    @property
    def total_cost_usd(self) -> float | None:
        """Sum of the priced rows; None when no row is priced."""
        costs = [r.cost_usd for r in self.rows if r.cost_usd is not None]
        return sum(costs) if costs else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["total_gpu_hours"] = self.total_gpu_hours
        data["total_cost_usd"] = self.total_cost_usd
        data["unpriced_rows"] = sum(1 for r in self.rows if r.cost_usd is None)
        clean: dict[str, Any] = json.loads(json.dumps(data))
        return clean


def _gpus_per_node(instance_type: str) -> int | None:
    """The catalog's GPUs per node; HyperPod's ``ml.`` names are looked up without the prefix."""
    name = instance_type.removeprefix("ml.")
    return CATALOG.get(name).gpu.count if name in CATALOG else None


def _price(prices: dict[str, float], instance_type: str) -> float | None:
    for name in (instance_type, instance_type.removeprefix("ml.")):
        if name in prices:
            return prices[name]
    return None


def build_rows(
    usage: Usage, samples: list[Sample], *, prices: dict[str, float], price_per_gpu_hour: float | None
) -> None:
    """Rows of ``usage`` from the query's samples (biggest first), priced as the module docstring says."""
    unpriced: set[str] = set()
    for sample in samples:
        if not math.isfinite(sample.value):
            continue
        labels = sample.labels
        missing = usage.unknown[0] if usage.unknown is not None else "-"
        group = labels.get(usage.label, "") or missing
        row = UsageRow(group, labels.get(INSTANCE_TYPE_LABEL) or NO_TYPE, sample.value)
        if row.instance_type != NO_TYPE:
            row.gpus_per_node = _gpus_per_node(row.instance_type)
        if price_per_gpu_hour is not None:
            row.usd_per_gpu_hour = price_per_gpu_hour
        else:
            row.usd_per_node_hour = _price(prices, row.instance_type)
            if row.usd_per_node_hour is not None and row.gpus_per_node:
                row.usd_per_gpu_hour = row.usd_per_node_hour / row.gpus_per_node
            elif prices:
                unpriced.add(row.instance_type)
        if row.usd_per_gpu_hour is not None:
            row.cost_usd = row.gpu_hours * row.usd_per_gpu_hour
        usage.rows.append(row)
    usage.rows.sort(key=lambda r: (-r.gpu_hours, r.group, r.instance_type))
    _notes(usage, unpriced, prices, price_per_gpu_hour)


def _notes(usage: Usage, unpriced: set[str], prices: dict[str, float], price_per_gpu_hour: float | None) -> None:
    label = usage.series_label or usage.label
    if not usage.rows:
        usage.notes.append(
            f'no {GPU_SERIES}{{{label}!=""}} series in the period: no GPU was allocated, or the GPU series do '
            f"not carry the {label} label"
        )
    if usage.unknown is not None:
        name, why = usage.unknown
        hours = sum(r.gpu_hours for r in usage.rows if r.group == name)
        if hours:
            usage.notes.append(f"{name}: {hours:,.1f} GPU-hours of {why}")
    for name in sorted(unpriced):
        if name == NO_TYPE:
            usage.notes.append(
                f"rows without an {INSTANCE_TYPE_LABEL} label are not priced: give --price-per-gpu-hour instead"
            )
        elif _price(prices, name) is None:
            usage.notes.append(f"{name} has no --price-per-hour: its rows are not priced")
        else:
            usage.notes.append(f"{name} is not in the catalog (GPUs per node unknown): give --price-per-gpu-hour")
    seen = {r.instance_type for r in usage.rows} | {r.instance_type.removeprefix("ml.") for r in usage.rows}
    stray = sorted(t for t in prices if t not in seen)
    if stray and price_per_gpu_hour is None:
        usage.notes.append(f"--price-per-hour for {', '.join(stray)}: no GPU-hours of that type in the period")
