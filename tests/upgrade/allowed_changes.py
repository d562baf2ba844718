"""The reviewed allow-list of the upgrade test: gating changes an upgrade from a release to today's library makes to an
example stack, each with its migration note (a ``### <note id>: ...`` heading of docs/upgrading.md, which CHANGELOG.md
names). Add an entry only with its note: tests/upgrade/test_upgrade_examples.py fails on a gating finding that no
entry covers, on an entry that covers no finding, and on a note missing from docs/upgrading.md or CHANGELOG.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AllowedChange:
    """Findings of ``fmc changes``' comparison (fmconstructs.cli.changes) accepted for an upgrade from ``version``."""

    version: str
    stack: str
    logical_id: str
    kind: str
    """``refused``, ``replace``, ``may-replace``, ``remove``, ``rename`` or ``shrink``."""
    prop_prefix: str
    """The finding's property starts with this (``ClusterConfiguration/HeadNode/CustomActions``)."""
    note: str
    """The migration note's id in docs/upgrading.md."""

    def covers(self, version: str, finding: object) -> bool:
        return (
            version == self.version
            and getattr(finding, "stack", None) == self.stack
            and getattr(finding, "logical_id", None) == self.logical_id
            and getattr(finding, "kind", None) == self.kind
            and str(getattr(finding, "prop", None) or "").startswith(self.prop_prefix)
        )


_HEAD_ACTIONS = "ClusterConfiguration/HeadNode/CustomActions"
_NOTE_HEAD = "pc-head-node-actions"

#: Every 0.3.x ParallelCluster example: the head node's actions move behind the stable entry point (0.4), a change to
#: HeadNode.CustomActions.OnNodeStart/OnNodeConfigured that ParallelCluster refuses; the note keeps the deployed ones.
ALLOWED: tuple[AllowedChange, ...] = tuple(
    AllowedChange(version, stack, "ClusterEB0386A7", "may-replace", f"{_HEAD_ACTIONS}/{event}", _NOTE_HEAD)
    for version in ("0.3.0", "0.3.1")
    for stack, events in (
        ("FmParallelClusterP5en", ("OnNodeStart", "OnNodeConfigured")),
        ("FmParallelClusterGb200", ("OnNodeStart",)),
    )
    for event in events
)
