"""Shipped Grafana dashboards: structure, templating, and every PromQL query names only metrics our collectors
produce (ALL_METRICS)."""

from __future__ import annotations

import re
from itertools import combinations

import pytest

from fmconstructs.observability.dashboards import DASHBOARD_DIR, Dashboard, dashboards_digest, load_dashboards
from fmconstructs.observability.job_rules import RECORD_NAMES
from fmconstructs.observability.metrics import ALL_METRICS, KUEUE_METRICS
from fmconstructs.serving.observability import KSM_RESTARTS, SERVING_RECORD_NAMES

DASHBOARDS = load_dashboards()
EXPECTED_UIDS = {
    "fm-gpu-health",
    "fm-efa",
    "fm-fsx-lustre",
    "fm-cluster-overview",
    "fm-training-job",
    "fm-queue",
    "fm-team-usage",
    "fm-serving",
}
# Collector metrics, the fm_job:* recording layer, Kueue's own metrics (the Queue dashboard) and the fm_serving:*
# layer with kube-state-metrics' restart counter (the Serving dashboard).
KNOWN_METRICS = ALL_METRICS | set(RECORD_NAMES) | KUEUE_METRICS | set(SERVING_RECORD_NAMES) | {KSM_RESTARTS}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# PromQL keywords and modifiers that look like identifiers (Prometheus docs, "Querying basics" and "Operators").
PROMQL_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "atan2",
}
_IDENT = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)")


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not function calls or keywords, once strings,
    label matchers ``{...}``, ranges ``[...]`` and grouping label lists ``by (...)`` are removed.

    Stricter than "identifier followed by ``{``, ``[`` or whitespace": a bare ``up`` before ``)`` counts too.
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in _IDENT.finditer(text):
        name = match.group(1)
        following = text[match.end() :].lstrip()
        if following.startswith("(") or name in PROMQL_KEYWORDS:
            continue  # a function or aggregation call, or a keyword
        names.add(name)
    return names


def panels(dashboard: Dashboard) -> list[dict]:
    return [p for p in dashboard.model["panels"] if p["type"] != "row"]


def exprs(dashboard: Dashboard) -> list[str]:
    return [t["expr"] for p in panels(dashboard) for t in p["targets"]]


def variable_queries(dashboard: Dashboard) -> list[str]:
    return [v["query"]["query"] for v in dashboard.model["templating"]["list"] if v["type"] == "query"]


# ---------------------------------------------------------------------------------------------------------------
# The parser itself
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('rate(fm_efa_tx_bytes_total{cluster=~"$cluster"}[$__rate_interval])', {"fm_efa_tx_bytes_total"}),
        ("count(up)", {"up"}),
        ('sum by (instance, gpu) (DCGM_FI_DEV_GPU_UTIL{gpu="0"}) / 1e6', {"DCGM_FI_DEV_GPU_UTIL"}),
        ("a unless on (instance) b offset 5m", {"a", "b"}),
        ("up == 0 or vector(0)", {"up"}),
        ("deriv(min by (m) (node_load1)[1h:5m])", {"node_load1"}),
    ],
)
def test_metric_name_parser(expr, expected):
    assert metric_names(expr) == expected


# ---------------------------------------------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------------------------------------------


def test_the_eight_dashboards_are_shipped_with_unique_uids():
    assert {d.uid for d in DASHBOARDS} == EXPECTED_UIDS
    assert len({d.title for d in DASHBOARDS}) == len(DASHBOARDS)


def test_dashboard_files_are_package_data_next_to_the_loader():
    assert sorted(p.name for p in DASHBOARD_DIR.glob("*.json")) == sorted(d.file_name for d in DASHBOARDS)


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=lambda d: d.uid)
class TestDashboard:
    def test_identity_and_version(self, dashboard):
        model = dashboard.model
        assert re.fullmatch(r"[a-z0-9-]{1,40}", model["uid"])
        assert model["title"].startswith("fmconstructs / ")
        assert isinstance(model["version"], int) and model["version"] >= 1
        assert "fmconstructs" in model["tags"]
        assert model["schemaVersion"] >= 36
        assert "id" not in model  # Grafana assigns ids; the uid is the identity

    def test_templated_datasource_cluster_and_instance_variables(self, dashboard):
        variables = {v["name"]: v for v in dashboard.model["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == "prometheus"
        for name in ("cluster", "instance"):
            assert variables[name]["type"] == "query"
            assert variables[name]["datasource"] == DATASOURCE
            assert variables[name]["includeAll"] is True
        assert "$cluster" in variables["instance"]["query"]["query"]

    def test_panels_have_targets_on_the_templated_datasource(self, dashboard):
        assert len(panels(dashboard)) >= 6
        for panel in panels(dashboard):
            assert panel["title"] and panel["description"]
            assert panel["datasource"] == DATASOURCE
            assert panel["targets"], panel["title"]
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
            for target in panel["targets"]:
                assert target["datasource"] == DATASOURCE
                assert target["expr"].strip()

    def test_panel_ids_are_unique(self, dashboard):
        ids = [p["id"] for p in dashboard.model["panels"]]
        assert len(ids) == len(set(ids))

    def test_grid_positions_fit_and_do_not_overlap(self, dashboard):
        boxes = []
        for panel in dashboard.model["panels"]:
            pos = panel["gridPos"]
            assert set(pos) == {"h", "w", "x", "y"}
            assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["y"] >= 0
            assert pos["x"] + pos["w"] <= 24, panel["title"]
            boxes.append((pos["x"], pos["y"], pos["x"] + pos["w"], pos["y"] + pos["h"], panel["title"]))
        for a, b in combinations(boxes, 2):
            overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, f"{a[4]!r} overlaps {b[4]!r}"

    def test_queries_filter_on_the_cluster_variable(self, dashboard):
        for expr in exprs(dashboard):
            assert "$cluster" in expr, expr

    def test_every_query_names_only_known_metrics(self, dashboard):
        queries = exprs(dashboard) + [
            re.fullmatch(r"label_values\((.*),\s*\w+\)", q).group(1)  # type: ignore[union-attr]
            for q in variable_queries(dashboard)
        ]
        unknown = {name: q for q in queries for name in metric_names(q) if name not in KNOWN_METRICS}
        assert unknown == {}
        # a training job's own series (Prometheus job fm-app) have names only the job knows
        assert all(metric_names(q) or 'job="fm-app"' in q for q in queries)


def test_lustre_dashboard_reads_only_lustre_filesystems():
    (fsx,) = [d for d in DASHBOARDS if d.uid == "fm-fsx-lustre"]
    for expr in exprs(fsx):
        if "node_filesystem" in expr:
            assert 'fstype="lustre"' in expr


def test_dashboards_cover_their_metric_families():
    by_uid = {d.uid: {n for q in exprs(d) for n in metric_names(q)} for d in DASHBOARDS}
    assert {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ROW_REMAP_FAILURE"} <= by_uid[
        "fm-gpu-health"
    ]
    assert {"fm_efa_tx_bytes_total", "fm_efa_retrans_pkts_total", "fm_efa_unresponsive_remote_events_total"} <= by_uid[
        "fm-efa"
    ]
    assert {"node_filesystem_avail_bytes", "node_filesystem_size_bytes"} <= by_uid["fm-fsx-lustre"]
    assert {"fm_slurm_nodes", "up"} <= by_uid["fm-cluster-overview"]


def test_digest_is_stable_and_hex():
    assert dashboards_digest() == dashboards_digest()
    assert re.fullmatch(r"[0-9a-f]{64}", dashboards_digest())
