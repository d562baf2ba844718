"""``fmc health``'s reads of the Prometheus workspace: node-join check results, Slurm node states, NCCL busbw.

Amazon Managed Service for Prometheus serves the Prometheus HTTP API under the workspace URL
(``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/query``); every request must be signed with
AWS Signature Version 4 (AMP User Guide "Query using Prometheus-compatible APIs", AMP-onboard-query-APIs; the
awscurl example of AMP-compatible-APIs signs for service ``aps`` and POSTs ``query=...`` form-encoded; IAM action
``aps:QueryMetrics``). The request is signed with botocore's ``SigV4Auth`` on an ``AWSRequest`` and sent with urllib
(no other HTTP library). The response is the Prometheus instant-query JSON: ``{"status": "success", "data":
{"resultType": "vector", "result": [{"metric": {...}, "value": [<unix time>, "<value>"]}]}}`` (same page's example).

Every failure (unreachable, an HTML error page, JSON of another shape) is a :class:`QueryProblem` whose text is one
line for an UNKNOWN row, never a traceback.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..health import metric_names as names
from .health_model import Health, HealthReport

# --- metric contract -------------------------------------------------------------------------------------------------
# The names are defined once, in fmconstructs.health.metric_names (the node checks, the NCCL job and the alert rules
# use the same module); the Slurm collector's name lives with it (observability/node/slurm_textfile.py).

#: Result of the last run of one node-join check on one node: 1 pass, 0 fail. Labels ``check``, ``mode`` (boot or
#: prolog) and ``instance`` (the node).
NODE_CHECK_STATUS = names.NODE_CHECK_STATUS
#: Unix time (seconds) the node's checks of one ``mode`` last finished; label ``instance``.
NODE_CHECK_LAST_RUN = names.NODE_CHECK_LAST_RUN
#: 1 per failing check, the failure in label ``reason`` (labels ``check``, ``mode``, ``instance``).
NODE_CHECK_FAILURE_INFO = names.NODE_CHECK_FAILURE_INFO
#: Slurm nodes per state (``state`` label), written today by fmconstructs/observability/node/slurm_textfile.py from
#: ``sinfo --format='%T %D'``. It carries counts only: per-node drain reasons are not exported.
SLURM_NODES = "fm_slurm_nodes"
#: All-reduce bus bandwidth (GB/s) at the largest message size of the latest healthy scheduled nccl-tests run.
NCCL_BUSBW = names.NCCL_MAX_SIZE_BUSBW
#: The cluster's own baseline bus bandwidth (GB/s): the rolling window's percentile, never below the floor.
NCCL_BASELINE = names.NCCL_BASELINE_BUSBW

#: Slurm states (slurm_textfile.KNOWN_STATES) that mean a node is not taking jobs because of a problem.
SLURM_PROBLEM_STATES = ("drained", "draining", "down", "fail", "failing")

#: Nodes named in the one row of nodes that passed (the failing ones each get their own row).
_NODES_SHOWN = 10
#: Seconds to wait for the workspace's answer to one query.
QUERY_TIMEOUT_SECONDS = 10.0

_AMP_HOST = re.compile(r"^aps-workspaces\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


class QueryProblem(Exception):
    """A query could not be answered; ``str()`` is one line for the report."""


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


def workspace_base(url: str) -> str:
    """The workspace URL ending in ``/`` (``.../workspaces/<id>/``), from any of the forms it is quoted in: the
    workspace URL itself, its ``api/v1/`` PrometheusEndpoint, a remote-write or query URL."""
    base = url.split("?", 1)[0]
    for tail in ("api/v1/remote_write", "api/v1/query", "api/v1/", "api/v1"):
        if base.endswith(tail):
            base = base[: -len(tail)]
            break
    return base if base.endswith("/") else base + "/"


def signing_region(url: str, fallback: str | None) -> str | None:
    """The region of an AMP URL's host (``aps-workspaces.<region>.amazonaws.com``), else ``fallback``."""
    host = urllib.parse.urlsplit(url).hostname or ""
    match = _AMP_HOST.match(host)
    return match.group(1) if match else fallback


class PrometheusQuery:
    """Instant queries against one workspace, signed with SigV4 for service ``aps``."""

    def __init__(
        self, workspace_url: str, *, credentials: Any, region: str, timeout: float = QUERY_TIMEOUT_SECONDS
    ) -> None:
        self.url = workspace_base(workspace_url) + "api/v1/query"
        self.credentials = credentials
        self.region = region
        self.timeout = timeout

    def _signed(self, promql: str) -> urllib.request.Request:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        body = urllib.parse.urlencode({"query": promql}).encode()
        request = AWSRequest(
            method="POST", url=self.url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        SigV4Auth(self.credentials, "aps", self.region).add_auth(request)
        return urllib.request.Request(self.url, data=body, headers=dict(request.headers.items()), method="POST")

    def query(self, promql: str) -> list[Sample]:
        """The instant vector of ``promql``; :class:`QueryProblem` for anything but a Prometheus success answer."""
        try:
            with urllib.request.urlopen(self._signed(promql), timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise QueryProblem(f"the workspace answered HTTP {error.code} {error.reason}: {_snippet(error)}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise QueryProblem(f"the workspace is unreachable ({error})") from None
        return parse_vector(raw)


def _snippet(error: urllib.error.HTTPError) -> str:
    try:
        text = error.read().decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("error") or data.get("message"), str):
            return str(data.get("error") or data.get("message"))[:200]
    except ValueError:
        pass
    return " ".join(re.sub(r"<[^>]*>", " ", text).split())[:120] or "(empty body)"


def parse_vector(raw: bytes) -> list[Sample]:
    """Samples of a Prometheus instant-vector answer; :class:`QueryProblem` for any other shape."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise QueryProblem(f"the workspace answered something that is not JSON: {raw[:80]!r}") from None
    if not isinstance(data, dict) or data.get("status") != "success":
        error = data.get("error") if isinstance(data, dict) else None
        raise QueryProblem(f"the query failed: {error or 'not a Prometheus success answer'}")
    body = data.get("data")
    result = body.get("result") if isinstance(body, dict) else None
    if not isinstance(result, list):
        raise QueryProblem("the answer has no data.result list")
    samples: list[Sample] = []
    for item in result:
        metric = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2:
            raise QueryProblem("a result without metric and value")
        try:
            number = float(value[1])
        except (TypeError, ValueError):
            raise QueryProblem(f"a result whose value is not a number: {value[1]!r}") from None
        samples.append(Sample({str(k): str(v) for k, v in metric.items()}, number))
    return samples


# --- judgements ------------------------------------------------------------------------------------------------------
def check_node_checks(prom: PrometheusQuery, report: HealthReport, *, now: float | None = None) -> None:
    """One row per node with a failing node-join check (DEGRADED, naming node and checks), else one HEALTHY row."""
    what = "node-join checks"
    try:
        status = prom.query(NODE_CHECK_STATUS)
        last = prom.query(f"max by (instance) ({NODE_CHECK_LAST_RUN})")
        info = prom.query(NODE_CHECK_FAILURE_INFO)
    except QueryProblem as problem:
        report.add(what, "workspace", Health.UNKNOWN, str(problem))
        return
    if not status:
        report.add(what, "workspace", Health.SKIP, f"no {NODE_CHECK_STATUS} series: no node has reported checks yet")
        return
    ran = {s.labels.get("instance", "?"): s.value for s in last}
    reasons = {_check_key(s.labels): s.labels["reason"] for s in info if s.labels.get("reason")}
    clock = time.time() if now is None else now
    failing: dict[str, list[str]] = {}
    for sample in status:
        node = sample.labels.get("instance", "?")
        failing.setdefault(node, [])
        if sample.value < 1:
            reason = sample.labels.get("reason") or reasons.get(_check_key(sample.labels))
            name = sample.labels.get("check", "?")
            failing[node].append(f"{name} ({reason})" if reason else name)
    for node, checks in sorted(failing.items()):
        if checks:
            shown = ", ".join(sorted(set(checks)))
            report.add(what, node, Health.DEGRADED, f"failing: {shown}{_age(ran.get(node), clock)}")
    passed = sorted(n for n, c in failing.items() if not c)
    if passed:
        shown = ", ".join(passed[:_NODES_SHOWN]) + (
            f" and {len(passed) - _NODES_SHOWN} more" if len(passed) > _NODES_SHOWN else ""
        )
        report.add(what, "workspace", Health.HEALTHY, f"{len(passed)} node(s) passed every check: {shown}")


def _check_key(labels: dict[str, str]) -> tuple[str, str, str]:
    return (labels.get("instance", "?"), labels.get("check", "?"), labels.get("mode", ""))


def _age(timestamp: float | None, now: float) -> str:
    if timestamp is None or not math.isfinite(timestamp):
        return ""
    minutes = max(0.0, now - timestamp) / 60
    return f"; last run {minutes:,.0f} min ago"


def check_slurm_nodes(prom: PrometheusQuery, report: HealthReport) -> None:
    """Drained / down Slurm nodes by state (DEGRADED); the reasons are not in the metrics (counts only)."""
    what = "slurm nodes"
    try:
        samples = prom.query(f"sum by (state) ({SLURM_NODES})")
    except QueryProblem as problem:
        report.add(what, "workspace", Health.UNKNOWN, str(problem))
        return
    if not samples:
        report.add(what, "workspace", Health.SKIP, f"no {SLURM_NODES} series (not a Slurm cluster, or not collected)")
        return
    counts = {s.labels.get("state", "?"): int(s.value) for s in samples if math.isfinite(s.value)}
    bad = {state: counts[state] for state in SLURM_PROBLEM_STATES if counts.get(state, 0) > 0}
    summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()) if n > 0) or "no nodes"
    if bad:
        report.add(
            what,
            "workspace",
            Health.DEGRADED,
            f"{summary}; the reasons are not exported as metrics: run `sinfo -R` on a login node",
        )
    else:
        report.add(what, "workspace", Health.HEALTHY, summary)


def check_nccl(prom: PrometheusQuery, report: HealthReport, *, tolerance_percent: float) -> None:
    """Latest NCCL all-reduce busbw against the cluster's baseline: DEGRADED when more than ``tolerance_percent``
    below it (matched on identical labels)."""
    what = "nccl busbw"
    try:
        latest = prom.query(NCCL_BUSBW)
        baseline = prom.query(NCCL_BASELINE)
    except QueryProblem as problem:
        report.add(what, "workspace", Health.UNKNOWN, str(problem))
        return
    if not latest:
        report.add(what, "workspace", Health.SKIP, f"no {NCCL_BUSBW} series: no NCCL check has run yet")
        return
    bases = {_key(s.labels): s.value for s in baseline}
    for sample in latest:
        target = _target(sample.labels)
        base = bases.get(_key(sample.labels))
        if base is None or not base > 0:
            report.add(what, target, Health.SKIP, f"{sample.value:,.1f} GB/s; no baseline recorded yet")
            continue
        below = (base - sample.value) / base * 100
        where = f"{below:.1f}% below" if below >= 0 else f"{-below:.1f}% above"
        detail = f"{sample.value:,.1f} GB/s vs baseline {base:,.1f} GB/s ({where})"
        if below > tolerance_percent:
            report.add(what, target, Health.DEGRADED, f"{detail}: more than {tolerance_percent:g}% below")
        else:
            report.add(what, target, Health.HEALTHY, detail)


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _target(labels: dict[str, str]) -> str:
    shown = [f"{k}={v}" for k, v in _key(labels) if k not in ("job", "instance")]
    return ",".join(shown) or "workspace"
