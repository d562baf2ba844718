"""Helpers of tests/eks/test_eks_job_attribution.py that other test modules use too."""

from __future__ import annotations

import re
from typing import Any


# --- 3. application metrics: fm-app ----------------------------------------------------------------------------------------
def _relabel(rules: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, str] | None:
    """Prometheus relabelling (replace/keep/drop, anchored regexes), enough for these jobs."""
    out = dict(labels)
    for rule in rules:
        value = rule.get("separator", ";").join(out.get(s, "") for s in rule.get("source_labels", []))
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        action = rule.get("action", "replace")
        if action == "keep" and not match:
            return None
        if action == "drop" and match:
            return None
        if action == "replace" and match:
            out[rule["target_label"]] = match.expand(re.sub(r"\$(\d)", r"\\\1", rule.get("replacement", "$1")))
    return {k: v for k, v in out.items() if not k.startswith("__meta_")}
