"""Which edits replace, remove or shrink a stateful resource: compare two versions of each stack's template.

A CloudFormation update replaces a resource when a create-only property changes (the resource provider schema's
``createOnlyProperties``, shipped by cfn-lint and copied into :mod:`.create_only_data`), when its ``Type`` changes,
or when its logical id disappears (the resource is deleted, or orphaned under ``DeletionPolicy: Retain``, and a new
empty one is created under the new id). Replacement cascades: a replaced security group gets a new id, so a file
system whose create-only ``SecurityGroupIds`` refers to it is replaced too. This module follows references
(``Ref``, ``Fn::GetAtt``, ``Fn::Sub``) to a fixed point.

How values are compared (a decision, documented in ``fmc changes --help``):

- literals are compared after normalizing scalars (``4800`` equals ``"4800"``, ``true`` equals ``"true"``, as
  CloudFormation passes every scalar as a string) and ``Fn::GetAtt: "A.B"`` to ``["A", "B"]``;
- objects and same-length lists are compared member by member, and a finding names the changed member
  (``Networking/SubnetIds/0``);
- intrinsic functions are compared structurally: the same expression is the same value unless it refers to a resource
  that is new or replaced (then it is a definite change);
- a create-only property set on one side only is a definite change;
- any other difference that involves an intrinsic function on either side is reported as ``may-replace``: fmc cannot
  know what CloudFormation resolves it to, so it never calls it equal. It gates like a replacement.

Two more ways a deploy fails rather than replaces, reported as gating (``fails``) whatever the resource:

- a custom resource whose provider refuses an update (:data:`UPDATE_REFUSED`: ParallelCluster's create-time settings)
  is reported as ``refused``;
- a resource that keeps its custom name (:data:`NAME_PROPERTIES`) while it is replaced or moved to a new logical id:
  CloudFormation cannot replace a custom-named resource, and the new one collides with the old one's name.

Limits: an attribute (``Fn::GetAtt``) of a resource updated in place is taken as unchanged, which holds for ids and
ARNs but not for, e.g., a launch template's ``LatestVersionNumber``; what a custom resource's provider does on update is
its own business (only its ``ServiceToken`` is create-only) except for the refusals fmc knows; resources inside
nested stacks are not compared.

Nothing here calls AWS; :mod:`.changes_aws` adds the deployed templates and change sets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from .create_only_data import CFN_LINT_VERSION, CREATE_ONLY

REPLACE = "replace"
MAY_REPLACE = "may-replace"
REMOVE = "remove"
RENAME = "rename"
SHRINK = "shrink"
REFUSED = "refused"

#: Resources whose replacement or removal loses data or running work: file systems and their data repository links,
#: buckets, keys (data encrypted under a replaced key is unreadable), metric and dashboard workspaces, clusters, node
#: groups and queues with running nodes and jobs, databases (the Slurm accounting database: job history), the secrets
#: a retained database needs, tables (the remediation ledger) and queues (failure queues holding undelivered events).
#: ``tests/house/test_house_stateful_types.py`` fails when a resource type the library synthesizes is in neither this
#: set nor its reviewed list of stateless types.
STATEFUL_TYPES: frozenset[str] = frozenset(
    {
        "AWS::FSx::FileSystem",
        "AWS::FSx::DataRepositoryAssociation",
        "AWS::S3::Bucket",
        "AWS::KMS::Key",
        "AWS::APS::Workspace",
        "AWS::Grafana::Workspace",
        "AWS::PCS::Cluster",
        "AWS::PCS::ComputeNodeGroup",
        "AWS::PCS::Queue",
        "AWS::EKS::Cluster",
        "AWS::EKS::Nodegroup",
        "AWS::SageMaker::Cluster",
        "AWS::AutoScaling::AutoScalingGroup",
        "Custom::PclusterCluster",
        "AWS::RDS::DBCluster",
        "AWS::RDS::DBInstance",
        "AWS::SecretsManager::Secret",
        "AWS::DynamoDB::Table",
        "AWS::SQS::Queue",
    }
)

#: Create-time settings the resource schema does not list as create-only, with where that is documented.
DOCUMENTED_CREATE_ONLY: dict[str, tuple[tuple[str, str], ...]] = {
    "AWS::FSx::FileSystem": (
        (
            "/properties/LustreConfiguration/DeploymentType",
            "CloudFormation template reference, AWS::FSx::FileSystem LustreConfiguration: DeploymentType "
            "'Update requires: Replacement'",
        ),
        (
            "/properties/LustreConfiguration/CopyTagsToBackups",
            "CloudFormation template reference, AWS::FSx::FileSystem LustreConfiguration: CopyTagsToBackups "
            "'Update requires: Replacement'",
        ),
        (
            "/properties/LustreConfiguration/EfaEnabled",
            "FSx API: CreateFileSystemLustreConfiguration takes EfaEnabled, UpdateFileSystemLustreConfiguration does "
            "not (FSx API Reference); the template reference says 'No interruption', so the update may fail instead",
        ),
    ),
}

#: Properties of a custom resource whose change its provider refuses (the update fails and the stack rolls back).
UPDATE_REFUSED: dict[str, tuple[tuple[str, str], ...]] = {
    "Custom::PclusterCluster": (
        (
            "/properties/ClusterName",
            "aws-parallelcluster cloudformation/custom_resource/cluster.yaml: 'Cannot update the ClusterName in the "
            "properties'",
        ),
        *(
            (
                f"/properties/ClusterConfiguration/{key}",
                "aws-parallelcluster pcluster/schemas/cluster_schema.py: update_policy UpdatePolicy.UNSUPPORTED "
                "(as fmconstructs.parallelcluster.updates lists for 3.16.1)",
            )
            for key in (
                "Image",
                "HeadNode/InstanceType",
                "HeadNode/DisableSimultaneousMultithreading",
                "HeadNode/Networking",
                "HeadNode/Imds",
                "HeadNode/CustomActions/OnNodeStart",
                "HeadNode/CustomActions/OnNodeConfigured",
            )
        ),
        *(
            (
                f"/properties/ClusterConfiguration/LoginNodes/Pools/*/CustomActions/{event}",
                "aws-parallelcluster 3.16.1 pcluster/schemas/cluster_schema.py: LoginNodesCustomActionsSchema "
                f"{event} update_policy UpdatePolicy.UNSUPPORTED",
            )
            for event in ("OnNodeStart", "OnNodeConfigured")
        ),
    ),
    "AWS::RDS::DBCluster": (
        (
            "/properties/MasterUsername",
            "RDS API (botocore rds service-2.json): CreateDBClusterMessage takes MasterUsername, "
            "ModifyDBClusterMessage has no such member; the database keeps its first admin user",
        ),
    ),
}

#: Properties that may only move forward: a change to a lower literal version is refused by the service.
NO_DOWNGRADE: dict[str, tuple[str, str]] = {
    "AWS::EKS::Cluster": (
        "Version",
        "Amazon EKS User Guide, update-cluster: 'Once you upgrade a cluster, you can't downgrade to a previous "
        "version'",
    ),
}

#: The property holding a resource's own custom name. CloudFormation Template Reference, "CloudFormation resource
#: custom naming" (aws-properties-name): "You can't perform an update that causes a custom-named resource to be
#: replaced. If you must replace the resource, specify a new name." The same name under a new logical id collides too
#: (the new resource is created before the old one is deleted).
NAME_PROPERTIES: dict[str, str] = {
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::EKS::Cluster": "Name",
    "AWS::SageMaker::Cluster": "ClusterName",
}

_SCHEMA_SOURCE = f"resource schema, cfn-lint {CFN_LINT_VERSION}"
_RETAINED = frozenset({"Retain", "RetainExceptOnCreate"})


class _Missing:
    def __repr__(self) -> str:
        return "(not set)"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Finding:
    """One change to a resource that a deploy of the new assembly would make."""

    stack: str
    logical_id: str
    resource_type: str
    path: str
    """The construct path (``aws:cdk:path`` metadata without the trailing ``/Resource``), else ``stack/logical id``."""
    kind: str
    """``replace``, ``may-replace``, ``remove``, ``rename``, ``shrink`` or ``refused`` (the provider refuses)."""
    detail: str
    prop: str | None = None
    """The create-only property (path under ``Properties``) or ``Type`` / ``StorageCapacity``."""
    old: str | None = None
    new: str | None = None
    new_path: str | None = None
    """For ``rename``: the construct path of the resource that takes its place."""
    stateful: bool = True
    acknowledged: bool = False
    source: str = "template"
    """``template`` (fmc's comparison) or ``change-set`` (CloudFormation's DescribeChangeSet answer)."""
    fails: bool = False
    """The deploy fails (and rolls back): a provider refuses the update, or a custom name collides."""

    @property
    def gating(self) -> bool:
        """A stateful resource, or a change whose deploy fails: acknowledged with ``--allow`` or the gate fails."""
        return self.stateful or self.fails

    @property
    def blocking(self) -> bool:
        return self.gating and not self.acknowledged

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "logical_id": self.logical_id,
            "type": self.resource_type,
            "path": self.path,
            "kind": self.kind,
            "property": self.prop,
            "old": self.old,
            "new": self.new,
            "new_path": self.new_path,
            "detail": self.detail,
            "stateful": self.stateful,
            "acknowledged": self.acknowledged,
            "blocking": self.blocking,
            "fails": self.fails,
            "source": self.source,
        }


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking]

    def to_json(self) -> dict[str, Any]:
        return {
            "findings": [f.to_json() for f in self.findings],
            "blocking": len(self.blocking),
            "notes": self.notes,
            "create_only_source": f"cfn-lint {CFN_LINT_VERSION}",
        }


def resource_path(stack: str, logical_id: str, resource: Mapping[str, Any]) -> str:
    """The construct path of a template resource (``aws:cdk:path`` metadata, without a trailing ``/Resource``)."""
    metadata = resource.get("Metadata")
    path = metadata.get("aws:cdk:path") if isinstance(metadata, dict) else None
    if not isinstance(path, str) or not path:
        return f"{stack}/{logical_id}"
    return path.removesuffix("/Resource")


def create_only_pointers(resource_type: str) -> tuple[tuple[str, str], ...] | None:
    """``(JSON pointer, source)`` of every create-only property of ``resource_type``; None when fmc has no data."""
    key = "AWS::CloudFormation::CustomResource" if resource_type.startswith("Custom::") else resource_type
    schema = CREATE_ONLY.get(key)
    if schema is None:
        return None
    return tuple((p, _SCHEMA_SOURCE) for p in schema) + DOCUMENTED_CREATE_ONLY.get(key, ())


def _is_intrinsic(value: object) -> bool:
    if not isinstance(value, dict) or len(value) != 1:
        return False
    (key,) = value
    return key in ("Ref", "Condition") or str(key).startswith("Fn::")


def _literal(value: object) -> bool:
    if isinstance(value, dict):
        return not _is_intrinsic(value) and all(_literal(v) for v in value.values())
    if isinstance(value, list):
        return all(_literal(v) for v in value)
    return True


def normalize(value: object) -> object:
    """Scalars as CloudFormation passes them (strings), ``Fn::GetAtt`` in list form, recursively."""
    if value is MISSING or value is None:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"Fn::GetAtt"} and isinstance(value["Fn::GetAtt"], str):
            return {"Fn::GetAtt": value["Fn::GetAtt"].split(".", 1)}
        return {str(k): normalize(v) for k, v in value.items()}
    return value


_SUB_REF = re.compile(r"\$\{(?!!)([A-Za-z0-9:]+)(?:\.[A-Za-z0-9.]+)?\}")


def references(value: object) -> set[str]:
    """Logical ids (and parameters) a value refers to through ``Ref``, ``Fn::GetAtt`` and ``Fn::Sub``."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= references(item)
    elif isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" and isinstance(arg, str):
                return {arg}
            if key == "Fn::GetAtt":
                target = arg.split(".", 1)[0] if isinstance(arg, str) else arg[0] if isinstance(arg, list) else None
                return {target} if isinstance(target, str) else set()
            if key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0] if isinstance(arg, list) and arg else ""
                found |= set(_SUB_REF.findall(text)) if isinstance(text, str) else set()
                if isinstance(arg, list) and len(arg) > 1:
                    found |= references(arg[1])
                return found
        for item in value.values():
            found |= references(item)
    return found


def values_at(props: object, parts: list[str], prefix: str = "") -> dict[str, object]:
    """The values a create-only pointer (``parts`` after ``/properties``) selects: path -> value (:data:`MISSING`).

    Where a container on the way is an intrinsic function, its whole value stands for the leaf."""
    if not parts:
        return {prefix: props}
    head, rest = parts[0], parts[1:]
    here = f"{prefix}/{head}" if prefix else head
    if props is MISSING:
        return {"/".join([prefix, *parts]).lstrip("/"): MISSING}
    if head == "*":
        if isinstance(props, list):
            found: dict[str, object] = {}
            for index, item in enumerate(props):
                found.update(values_at(item, rest, f"{prefix}/{index}" if prefix else str(index)))
            return found
        return {here: props}
    if isinstance(props, dict) and not _is_intrinsic(props):
        return values_at(props.get(head, MISSING), rest, here)
    return {"/".join([prefix, *parts]).lstrip("/"): props}


def _short(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    if _is_intrinsic(value):
        plain = normalize(value)
        assert isinstance(plain, dict)
        ((key, arg),) = plain.items()
        if key == "Ref":
            return f"Ref {arg}"
        if key == "Fn::GetAtt" and isinstance(arg, list):
            return "GetAtt " + ".".join(str(a) for a in arg)
    plain = normalize(value)
    return plain if isinstance(plain, str) else json.dumps(plain, sort_keys=True, default=str)


def show(value: object) -> str:
    """A short text for a template value: the literal, ``Ref X``, ``GetAtt X.Attr`` or compact JSON."""
    if value is MISSING:
        return "(not set)"
    text = _short(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Verdict(NamedTuple):
    """How a create-only value changes: ``kind`` (:data:`REPLACE` or :data:`MAY_REPLACE`), why, and where inside
    the value (``path``, empty for the value itself) with the old and new values found there."""

    kind: str
    why: str
    path: str
    old: object
    new: object


def compare(old: object, new: object, renewed: set[str]) -> Verdict | None:
    """None when a create-only value stays the same, else the :class:`Verdict`.

    Objects and same-length lists are compared member by member (the worst verdict wins), so a literal that changes
    next to an unchanged intrinsic is a definite change. ``renewed``: logical ids of resources that are new or
    replaced (their ``Ref`` and attributes get new values)."""
    return _compare(normalize(old), normalize(new), renewed, "")


def _compare(old: object, new: object, renewed: set[str], path: str) -> Verdict | None:
    def sub(key: object) -> str:
        return f"{path}/{key}" if path else str(key)

    if old is MISSING and new is MISSING:
        return None
    if old is MISSING or new is MISSING:
        return Verdict(REPLACE, "set on one side only", path, old, new)
    if isinstance(old, dict) and isinstance(new, dict) and not _is_intrinsic(old) and not _is_intrinsic(new):
        keys = sorted({*old, *new})
        return _worst(_compare(old.get(k, MISSING), new.get(k, MISSING), renewed, sub(k)) for k in keys)
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return _worst(_compare(a, b, renewed, sub(i)) for i, (a, b) in enumerate(zip(old, new, strict=True)))
    moved = sorted(references(new) & renewed)
    if old == new:
        return (
            Verdict(REPLACE, f"refers to {', '.join(moved)}, which is new or replaced", path, old, new)
            if moved
            else None
        )
    if moved:
        return Verdict(REPLACE, f"now refers to {', '.join(moved)}, which is new or replaced", path, old, new)
    if _literal(old) and _literal(new):
        return Verdict(REPLACE, "the value changed", path, old, new)
    why = "a deploy-time value (intrinsic function) changed: fmc cannot tell whether it resolves equal"
    return Verdict(MAY_REPLACE, why, path, old, new)


def _worst(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    found = [v for v in verdicts if v is not None]
    return next((v for v in found if v.kind == REPLACE), found[0] if found else None)


@dataclass(frozen=True)
class _Cause:
    kind: str
    pointer: str
    old: object
    new: object
    why: str
    source: str
    basis: str = "create-only per"


def _causes(old_res: Mapping[str, Any], new_res: Mapping[str, Any], renewed: set[str]) -> list[_Cause]:
    old_type, new_type = old_res.get("Type"), new_res.get("Type")
    if old_type != new_type:
        return [_Cause(REPLACE, "Type", old_type, new_type, "the resource type changed", "CloudFormation")]
    pointers = create_only_pointers(str(new_type)) or ()
    old_props = old_res.get("Properties") if isinstance(old_res.get("Properties"), dict) else {}
    new_props = new_res.get("Properties") if isinstance(new_res.get("Properties"), dict) else {}
    causes: list[_Cause] = []
    for pointer, source in pointers:
        parts = pointer.split("/")[2:]
        old_values, new_values = values_at(old_props, parts), values_at(new_props, parts)
        for key in sorted(set(old_values) | set(new_values)):
            ov, nv = old_values.get(key, MISSING), new_values.get(key, MISSING)
            verdict = compare(ov, nv, renewed)
            if verdict is not None:
                where = f"{key}/{verdict.path}" if verdict.path else key
                causes.append(_Cause(verdict.kind, where, verdict.old, verdict.new, verdict.why, source))
    return (
        causes
        + _refusals(str(new_type), old_props, new_props, renewed)
        + _downgrades(str(new_type), old_props, new_props)
    )


def _refusals(rtype: str, old_props: object, new_props: object, renewed: set[str]) -> list[_Cause]:
    """Changes to the properties whose update the provider refuses (:data:`UPDATE_REFUSED`)."""
    causes: list[_Cause] = []
    for pointer, source in UPDATE_REFUSED.get(rtype, ()):
        parts = pointer.split("/")[2:]
        old_values, new_values = values_at(old_props, parts), values_at(new_props, parts)
        for key in sorted(set(old_values) | set(new_values)):
            verdict = compare(old_values.get(key, MISSING), new_values.get(key, MISSING), renewed)
            if verdict is None:
                continue
            where = f"{key}/{verdict.path}" if verdict.path else key
            kind, why = (REFUSED, f"{verdict.why}: the provider refuses this update, the deploy fails and rolls back")
            if verdict.kind != REPLACE:
                kind, why = MAY_REPLACE, f"{verdict.why}; if it changes, the provider refuses the update"
            causes.append(_Cause(kind, where, verdict.old, verdict.new, why, source, "refused per"))
    return causes


def _version(value: object) -> tuple[int, ...] | None:
    """A literal dotted version (``"1.31"``) as numbers, else None (a token, an intrinsic or no value)."""
    if not isinstance(value, str) or not re.fullmatch(r"\d+(\.\d+)*", value):
        return None
    return tuple(int(part) for part in value.split("."))


def _downgrades(rtype: str, old_props: object, new_props: object) -> list[_Cause]:
    """A version moved backwards where the service refuses it (:data:`NO_DOWNGRADE`); literal versions only."""
    rule = NO_DOWNGRADE.get(rtype)
    if rule is None:
        return []
    prop, source = rule
    old = old_props.get(prop, MISSING) if isinstance(old_props, dict) else MISSING
    new = new_props.get(prop, MISSING) if isinstance(new_props, dict) else MISSING
    old_v, new_v = _version(old), _version(new)
    if old_v is None or new_v is None or new_v >= old_v:
        return []
    why = "the version moves backwards: the service refuses a downgrade, the deploy fails and rolls back"
    return [_Cause(REFUSED, prop, old, new, why, source, "refused per")]


def fixed_name(resource: Mapping[str, Any]) -> str | None:
    """The resource's own custom name (:data:`NAME_PROPERTIES`) when it is a literal, else None."""
    prop = NAME_PROPERTIES.get(str(resource.get("Type")))
    props = resource.get("Properties")
    value = props.get(prop) if prop is not None and isinstance(props, dict) else None
    return value if isinstance(value, str) and value else None


def _collision(old_res: Mapping[str, Any], new_res: Mapping[str, Any]) -> str | None:
    """Why a replacement (or a move to a new logical id) of a resource keeping its custom name fails, else None."""
    name = fixed_name(new_res)
    if name is None or fixed_name(old_res) != name:
        return None
    return (
        f"it keeps its custom name {name!r}: CloudFormation cannot create the new one beside the old one, so the "
        "deploy fails and rolls back (change the name with this edit, or leave it unset)"
    )


def _replacements(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[_Cause]]:
    """Causes per kept logical id, with replacements propagated through references to a fixed point."""
    common = sorted(set(old) & set(new))
    renewed = set(new) - set(old)
    changed = True
    while changed:
        changed = False
        for lid in common:
            if lid not in renewed and any(c.kind == REPLACE for c in _causes(old[lid], new[lid], renewed)):
                renewed.add(lid)
                changed = True
    return {lid: causes for lid in common if (causes := _causes(old[lid], new[lid], renewed))}


def _removals(stack: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Finding]:
    added = [lid for lid in new if lid not in old]
    new_by_path = {resource_path(stack, lid, new[lid]): lid for lid in added}
    findings: list[Finding] = []
    for lid in old:
        if lid in new:
            continue
        resource = old[lid]
        rtype = str(resource.get("Type"))
        path = resource_path(stack, lid, resource)
        fate = (
            "CloudFormation leaves the old one in the account (DeletionPolicy Retain: orphaned, still billed)"
            if resource.get("DeletionPolicy") in _RETAINED
            else "CloudFormation deletes the old one"
        )
        twin = new_by_path.get(path)
        candidates = [a for a in added if new[a].get("Type") == rtype]
        if twin is None and len(candidates) == 1:
            twin = candidates[0]
        if twin is not None and new[twin].get("Type") == rtype:
            new_path = resource_path(stack, twin, new[twin])
            how = "same construct path" if new_path == path else "construct renamed or moved"
            detail = f"logical id {lid} -> {twin} ({how}): a new, empty resource is created and {fate}"
            collision = _collision(resource, new[twin])
            if collision is not None:
                detail = f"{detail}; {collision}"
            findings.append(
                Finding(
                    stack,
                    lid,
                    rtype,
                    path,
                    RENAME,
                    detail,
                    None,
                    lid,
                    twin,
                    new_path,
                    rtype in STATEFUL_TYPES,
                    fails=collision is not None,
                )
            )
        else:
            detail = f"logical id {lid} is no longer in the template: {fate}"
            findings.append(Finding(stack, lid, rtype, path, REMOVE, detail, stateful=rtype in STATEFUL_TYPES))
    return findings


def _shrinks(stack: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Finding]:
    # FSx for Lustre User Guide, "Managing storage capacity": you can only increase storage capacity.
    findings: list[Finding] = []
    for lid, resource in new.items():
        before = old.get(lid)
        if resource.get("Type") != "AWS::FSx::FileSystem" or not isinstance(before, dict):
            continue
        old_gib = normalize((before.get("Properties") or {}).get("StorageCapacity"))
        new_gib = normalize((resource.get("Properties") or {}).get("StorageCapacity"))
        numbers = isinstance(old_gib, str) and isinstance(new_gib, str) and old_gib.isdigit() and new_gib.isdigit()
        if numbers and int(str(new_gib)) < int(str(old_gib)):
            detail = "FSx can only increase storage capacity: the update fails (and the stack rolls back)"
            path = resource_path(stack, lid, resource)
            findings.append(
                Finding(
                    stack,
                    lid,
                    "AWS::FSx::FileSystem",
                    path,
                    SHRINK,
                    detail,
                    "StorageCapacity",
                    str(old_gib),
                    str(new_gib),
                )
            )
    return findings


def _resources(template: Mapping[str, Any]) -> dict[str, Any]:
    resources = template.get("Resources")
    if not isinstance(resources, dict):
        return {}
    return {str(k): v for k, v in resources.items() if isinstance(v, dict)}


def compare_templates(stack: str, old_template: Mapping[str, Any], new_template: Mapping[str, Any]) -> Report:
    """Findings for one stack deployed with ``old_template`` and updated to ``new_template``."""
    old, new = _resources(old_template), _resources(new_template)
    report = Report()
    for lid, causes in _replacements(old, new).items():
        rtype = str(new[lid].get("Type"))
        collision = _collision(old[lid], new[lid]) if any(c.kind == REPLACE for c in causes) else None
        for cause in causes:
            collides = collision is not None and cause.kind == REPLACE
            detail = f"{cause.why}; {cause.basis} {cause.source}"
            detail += f"; {collision}" if collides else ""
            report.findings.append(
                Finding(
                    stack,
                    lid,
                    rtype,
                    resource_path(stack, lid, new[lid]),
                    cause.kind,
                    detail,
                    cause.pointer,
                    show(cause.old),
                    show(cause.new),
                    stateful=rtype in STATEFUL_TYPES,
                    fails=cause.kind == REFUSED or collides,
                )
            )
    report.findings += _removals(stack, old, new) + _shrinks(stack, old, new)
    unknown = sorted({str(r.get("Type")) for r in new.values() if create_only_pointers(str(r.get("Type"))) is None})
    if unknown:
        report.notes.append(f"{stack}: no create-only data for {', '.join(unknown)}: only removals checked there")
    return report


def compare_stacks(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> Report:
    """Compare stacks by name: ``{stack name: template}`` before and after."""
    report = Report()
    for name, template in new.items():
        if name not in old:
            report.notes.append(f"{name}: not in the previous version (a new stack): nothing to replace")
            continue
        part = compare_templates(name, old[name], template)
        report.findings += part.findings
        report.notes += part.notes
    for name in old:
        if name not in new:
            report.notes.append(f"{name}: no longer in the assembly; cdk deploy leaves a deployed stack as it is")
    return report


def acknowledge(report: Report, allowed: Iterable[str]) -> Report:
    """Mark findings whose construct path (or ``stack/logical id``) is, or lies under, an ``--allow`` path."""
    allowed = [a.rstrip("/") for a in allowed if a.strip("/")]
    used: set[str] = set()

    def match(finding: Finding) -> bool:
        keys = [finding.path, f"{finding.stack}/{finding.logical_id}"] + (
            [finding.new_path] if finding.new_path else []
        )
        hits = [a for a in allowed if any(k == a or k.startswith(a + "/") for k in keys)]
        used.update(hits)
        return bool(hits)

    findings = [replace(f, acknowledged=True) if match(f) else f for f in report.findings]
    notes = list(report.notes) + [f"--allow {a} matched no finding" for a in allowed if a not in used]
    return Report(findings, notes)
