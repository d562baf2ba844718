"""Compact baselines for :mod:`.changes`: the part of a template that :func:`.changes.compare_templates` reads.

A baseline keeps every resource's logical id, ``Type``, ``DeletionPolicy`` and construct path, and of its properties
only those the comparison looks at: the create-only pointers (:func:`.changes.create_only_pointers`), the settings a
provider refuses to update (:data:`.changes.UPDATE_REFUSED`), the versions that may not move backwards
(:data:`.changes.NO_DOWNGRADE`), custom names (:data:`.changes.NAME_PROPERTIES`) and an FSx file system's
``StorageCapacity``. Every logical id is kept, stateful or not, because replacement cascades through references
(a replaced security group replaces the file system that names it). Comparing a baseline with a new template gives the
same findings as comparing the whole old template (tests/upgrade/test_upgrade_baseline_projection.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .changes import (
    MISSING,
    NAME_PROPERTIES,
    NO_DOWNGRADE,
    UPDATE_REFUSED,
    _is_intrinsic,
    create_only_pointers,
)

#: The format of :func:`project_template`'s output; bump it when the shape changes.
BASELINE_FORMAT = 1


def read_pointers(resource_type: str) -> tuple[str, ...]:
    """Every property pointer (``/properties/...``) the comparison reads for ``resource_type``."""
    pointers = [p for p, _ in create_only_pointers(resource_type) or ()]
    pointers += [p for p, _ in UPDATE_REFUSED.get(resource_type, ())]
    if resource_type in NO_DOWNGRADE:
        pointers.append(f"/properties/{NO_DOWNGRADE[resource_type][0]}")
    if resource_type in NAME_PROPERTIES:
        pointers.append(f"/properties/{NAME_PROPERTIES[resource_type]}")
    if resource_type == "AWS::FSx::FileSystem":
        pointers.append("/properties/StorageCapacity")
    return tuple(dict.fromkeys(pointers))


def _pick(value: object, parts: list[str]) -> object:
    """The part of ``value`` that ``parts`` selects, with the structure on the way (:data:`MISSING` if absent).

    Where a container on the way is an intrinsic function or not a container, its whole value is kept (as
    :func:`.changes.values_at` reads it)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if head == "*":
        if isinstance(value, list):
            return [_pick(item, rest) for item in value]
        return value
    if isinstance(value, dict) and not _is_intrinsic(value):
        if head not in value:
            return MISSING
        picked = _pick(value[head], rest)
        return MISSING if picked is MISSING else {head: picked}
    return value


def _merge(a: object, b: object) -> object:
    if a is MISSING:
        return b
    if b is MISSING:
        return a
    if isinstance(a, dict) and isinstance(b, dict) and not _is_intrinsic(a) and not _is_intrinsic(b):
        merged = dict(a)
        for key, value in b.items():
            merged[key] = _merge(merged.get(key, MISSING), value)
        return merged
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_merge(x, y) for x, y in zip(a, b, strict=True)]
    return b


def _unmissing(value: object) -> object:
    """Lists keep their length: an item a pointer found nothing in is kept as an empty object."""
    if value is MISSING:
        return {}
    if isinstance(value, list):
        return [_unmissing(v) for v in value]
    if isinstance(value, dict):
        return {k: _unmissing(v) for k, v in value.items() if v is not MISSING}
    return value


def project_resource(resource: Mapping[str, Any]) -> dict[str, Any]:
    """One resource as a baseline keeps it."""
    rtype = str(resource.get("Type"))
    out: dict[str, Any] = {"Type": rtype}
    props = resource.get("Properties")
    picked: object = MISSING
    if isinstance(props, dict):
        for pointer in read_pointers(rtype):
            picked = _merge(picked, _pick(props, pointer.split("/")[2:]))
    if isinstance(picked, dict) and picked:
        out["Properties"] = _unmissing(picked)
    if "DeletionPolicy" in resource:
        out["DeletionPolicy"] = resource["DeletionPolicy"]
    metadata = resource.get("Metadata")
    path = metadata.get("aws:cdk:path") if isinstance(metadata, dict) else None
    if isinstance(path, str):
        out["Metadata"] = {"aws:cdk:path": path}
    return out


def project_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """A template reduced to what :func:`.changes.compare_templates` reads (a valid input for it)."""
    resources = template.get("Resources")
    if not isinstance(resources, dict):
        return {"Resources": {}}
    return {
        "Resources": {
            str(lid): project_resource(res) for lid, res in sorted(resources.items()) if isinstance(res, dict)
        }
    }
