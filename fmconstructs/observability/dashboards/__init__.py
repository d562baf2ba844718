"""Grafana dashboards as code: versioned JSON files shipped inside the package.

Each ``*.json`` file in this folder is one Grafana dashboard model (schemaVersion 39, Grafana 10.x) with a stable
``uid`` (its identity in every workspace: re-uploading replaces it) and an integer ``version`` that is bumped on every
change. Every query uses the templated ``$datasource`` (type prometheus), ``$cluster`` and ``$instance`` variables and
names only metrics of :data:`fmconstructs.observability.metrics.ALL_METRICS` (checked by
``tests/observability/test_observability_dashboards.py``).

The :class:`~fmconstructs.observability.grafana.GrafanaProvisioner` custom resource uploads them; this module only
reads them. It is standard library only, because the provisioning Lambda also ships this folder's JSON files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DASHBOARD_DIR = Path(__file__).resolve().parent
"""The folder holding the dashboard JSON files (also bundled into the provisioning Lambda)."""


@dataclass(frozen=True)
class Dashboard:
    """One shipped dashboard: its identity (``uid``), ``title``, ``version`` and the full Grafana model."""

    uid: str
    title: str
    version: int
    file_name: str
    model: Mapping[str, Any]

    def to_json(self) -> str:
        """The dashboard model as JSON, as Grafana's ``POST /api/dashboards/db`` expects under ``dashboard``."""
        return json.dumps(self.model, sort_keys=True)


def _load(path: Path) -> Dashboard:
    model = json.loads(path.read_text(encoding="utf-8"))
    uid, title, version = model.get("uid"), model.get("title"), model.get("version")
    if not isinstance(uid, str) or not uid or not isinstance(title, str) or not isinstance(version, int):
        raise ValueError(f"{path.name}: a dashboard needs a string uid and title and an integer version")
    return Dashboard(uid=uid, title=title, version=version, file_name=path.name, model=model)


@cache
def load_dashboards() -> tuple[Dashboard, ...]:
    """Every shipped dashboard, ordered by file name. Raises ``ValueError`` on a malformed file or a duplicate uid."""
    dashboards = tuple(_load(path) for path in sorted(DASHBOARD_DIR.glob("*.json")))
    uids = [d.uid for d in dashboards]
    if len(set(uids)) != len(uids):
        raise ValueError(f"duplicate dashboard uids: {sorted(uids)}")
    return dashboards


def dashboards_digest() -> str:
    """SHA-256 over every dashboard file's name and bytes: changes whenever a dashboard does.

    The provisioner puts it in its custom resource properties so that CloudFormation sends an Update (and the
    dashboards are re-uploaded) exactly when a dashboard changed.
    """
    digest = hashlib.sha256()
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


__all__ = ["DASHBOARD_DIR", "Dashboard", "dashboards_digest", "load_dashboards"]
