"""``fmc health``'s report: one row per thing looked at, a health per row and one verdict for the whole cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import ExitCode


class Health(str, Enum):
    """A row's finding. ``SKIP`` rows (nothing to look at, e.g. no metrics exported yet) never change the verdict."""

    HEALTHY = "HEALTHY"
    DEGRADED = "DEGRADED"
    UNHEALTHY = "UNHEALTHY"
    UNKNOWN = "UNKNOWN"
    SKIP = "SKIP"


#: Which finding wins the verdict: a definite problem over "could not tell", "could not tell" over healthy.
_PRECEDENCE = (Health.UNHEALTHY, Health.DEGRADED, Health.UNKNOWN)


@dataclass(frozen=True)
class Row:
    check: str
    target: str
    health: Health
    detail: str


@dataclass
class HealthReport:
    region: str | None
    rows: list[Row] = field(default_factory=list)
    workspace_url: str | None = None

    def add(self, check: str, target: str, health: Health, detail: str) -> None:
        self.rows.append(Row(check, target, health, detail))

    @property
    def verdict(self) -> Health:
        """UNHEALTHY if any row is, else DEGRADED if any row is, else UNKNOWN if any row could not be read, else
        HEALTHY (also when every row is SKIP: nothing found wrong)."""
        found = {r.health for r in self.rows}
        for health in _PRECEDENCE:
            if health in found:
                return health
        return Health.HEALTHY

    @property
    def exit_code(self) -> ExitCode:
        """0 only for HEALTHY; DEGRADED, UNHEALTHY and UNKNOWN all exit 1 (a CI gate must not pass on "unknown")."""
        return ExitCode.OK if self.verdict is Health.HEALTHY else ExitCode.CHECKS_FAILED

    def to_json(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "verdict": self.verdict.value,
            "ok": self.verdict is Health.HEALTHY,
            "exit_code": int(self.exit_code),
            "workspace_url": self.workspace_url,
            "rows": [
                {"check": r.check, "target": r.target, "health": r.health.value, "detail": r.detail} for r in self.rows
            ],
        }
