"""The versioned plan-metadata record the constructs write for ``fmc plan``, and its reading (no aws_cdk import).

Each node-group and file-system construct writes one record as the resource's CloudFormation ``Metadata`` key
:data:`PLAN_METADATA_KEY`::

    {"version": 1, "kind": "node-group", "backend": "parallelcluster", "lustre_efa_interfaces": {"gpu": 8}}

- ``version``: :data:`PLAN_RECORD_VERSION`; a reader that meets a version it does not know says so in the plan and
  reads the resource's properties as it would without the record (never a crash).
- ``kind``: a :class:`PlanKind` (what ``fmc plan`` should treat the resource as).
- ``backend``: which construct wrote it (``pcs``, ``eks``, ``parallelcluster``, ``hyperpod``, ``fsx-lustre``).
- ``slurm_topology`` (ParallelCluster, only with :meth:`~fmconstructs.parallelcluster.ParallelCluster.
  enable_slurm_topology`): ``{"plugin": "topology/tree", "source": "fmconstructs"}``: the head node writes
  topology.conf from a piece of a creation event (checked at synthesis), so ``fmc plan`` reports it as configured.
- ``lustre_efa_interfaces`` (ParallelCluster, HyperPod, only when they share an EFA-enabled file system): the EFA
  interfaces per node for LNet of each queue / instance group, 0 over TCP, ``"decided-on-node"`` when the node
  decides. The same mapping is also written under the older key :data:`LUSTRE_EFA_METADATA_KEY` (also importable
  from :mod:`fmconstructs.storage.sizing`), so an older ``fmc`` reading a newer template still counts it.

The CLI side (:mod:`fmconstructs.cli.plan_readers`) reads the record with :func:`read_plan_record`; templates without
it (older synths, other tools) are read from their resource types and properties as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

#: Resource ``Metadata`` key of the record.
PLAN_METADATA_KEY = "fmconstructs:plan"

#: The record version this release writes and reads.
PLAN_RECORD_VERSION = 1

#: The resource ``Metadata`` key in which fmconstructs' ParallelCluster and HyperPod constructs record each queue's or
#: instance group's EFA interfaces per node for LNet (their share of
#: :data:`fmconstructs.storage.sizing.MAX_EFA_CONNECTIONS`; 0: over TCP), which ``fmc plan`` reads from a cloud
#: assembly. Defined once, here, below storage (floor 0), so that neither the reader nor this module imports a
#: construct module; :mod:`fmconstructs.storage.sizing` re-exports it.
LUSTRE_EFA_METADATA_KEY = "fmconstructs:lustre-efa-interfaces"

#: The older Metadata key of the Lustre EFA counts.
_LEGACY_LUSTRE_EFA_KEY = LUSTRE_EFA_METADATA_KEY


class PlanKind(Enum):
    """What a resource is for ``fmc plan``."""

    NODE_GROUP = "node-group"
    """One or more groups of nodes (a ParallelCluster or HyperPod resource holds several)."""
    FILE_SYSTEM = "file-system"


class _HasMetadata(Protocol):
    def add_metadata(self, key: str, value: Any) -> None: ...


def plan_record(
    kind: PlanKind,
    *,
    backend: str,
    lustre_efa_interfaces: Mapping[str, int | str] | None = None,
    slurm_topology: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record's JSON value (version :data:`PLAN_RECORD_VERSION`)."""
    record: dict[str, Any] = {"version": PLAN_RECORD_VERSION, "kind": kind.value, "backend": backend}
    if lustre_efa_interfaces is not None:
        record["lustre_efa_interfaces"] = dict(lustre_efa_interfaces)
    if slurm_topology is not None:
        record["slurm_topology"] = dict(slurm_topology)
    return record


def write_plan_record(
    resource: _HasMetadata,
    kind: PlanKind,
    *,
    backend: str,
    lustre_efa_interfaces: Mapping[str, int | str] | None = None,
    slurm_topology: Mapping[str, Any] | None = None,
) -> None:
    """Write the record on ``resource`` (a ``CfnResource``; a later call replaces it), and the Lustre EFA counts
    under the older key too."""
    resource.add_metadata(
        PLAN_METADATA_KEY,
        plan_record(kind, backend=backend, lustre_efa_interfaces=lustre_efa_interfaces, slurm_topology=slurm_topology),
    )
    if lustre_efa_interfaces is not None:
        resource.add_metadata(_LEGACY_LUSTRE_EFA_KEY, dict(lustre_efa_interfaces))


@dataclass(frozen=True)
class PlanRecord:
    """A record read from a template: ``supported`` False when its version is not :data:`PLAN_RECORD_VERSION` (or
    it is not an object with an int ``version``); its fields are then not used."""

    version: object
    supported: bool
    kind: str | None = None
    backend: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def lustre_efa_interfaces(self) -> dict[str, Any] | None:
        value = self.fields.get("lustre_efa_interfaces") if self.supported else None
        return value if isinstance(value, dict) else None


def read_plan_record(resource: dict[str, Any]) -> PlanRecord | None:
    """The record on a template resource (``{"Type": ..., "Metadata": {...}}``), or None when it carries none."""
    metadata = resource.get("Metadata")
    if not isinstance(metadata, dict) or PLAN_METADATA_KEY not in metadata:
        return None
    raw = metadata[PLAN_METADATA_KEY]
    if not isinstance(raw, dict):
        return PlanRecord(version=None, supported=False)
    version = raw.get("version")
    if isinstance(version, bool) or version != PLAN_RECORD_VERSION:
        return PlanRecord(version=version, supported=False)
    kind, backend = raw.get("kind"), raw.get("backend")
    return PlanRecord(
        version=version,
        supported=True,
        kind=kind if isinstance(kind, str) else None,
        backend=backend if isinstance(backend, str) else None,
        fields={k: v for k, v in raw.items() if k not in ("version", "kind", "backend")},
    )
