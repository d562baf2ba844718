"""``fmc preflight``'s reservation topology check: EC2 ``DescribeCapacityReservationTopology``.

The call (botocore 1.44.8 ``ec2`` model; EC2 API Reference "DescribeCapacityReservationTopology") takes
``CapacityReservationIds`` (at most 10 per request; ``MaxResults`` may not be given with them) and pages with
``NextToken`` (botocore has no paginator for it: the pages are followed here). Each ``CapacityReservations`` entry
(``CapacityReservationTopology``) has ``CapacityReservationId``, ``CapacityBlockId`` (UltraServers), ``State``,
``InstanceType``, ``GroupName`` and ``NetworkNodes``: null or empty for an unsupported type or a reservation neither
``active`` nor ``pending``.

``NetworkNodes`` is a top-down node set, the last node being the one the instance connects to (EC2 User Guide "How
Amazon EC2 topology works": "a top-down view of the network hierarchy, with the bottom node connected to an
instance"; layers i, ii, iii in its diagram), so layer 3 is ``NetworkNodes[2]``. Four-layer types have a fourth node
below it; "depending on the type of Capacity Reservation, you might see only 1, 2, or 3 network nodes": a set shorter
than three names no layer-3 node (reported as such, never guessed).

An account without access (``UnauthorizedOperation``/``OperationNotPermitted``) gets a SKIP row; a response of the
wrong shape a FAIL row; any other AWS error a WARN row (the check is advisory: it cannot block a deploy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .plan import NodeGroupPlan, Plan

ACTION = "ec2:DescribeCapacityReservationTopology"

#: Error codes meaning the account or caller may not call the API (EC2 API Reference "Error codes":
#: UnauthorizedOperation, OperationNotPermitted; AccessDenied from an SCP or IAM policy).
NO_ACCESS = frozenset({"UnauthorizedOperation", "OperationNotPermitted", "AccessDenied", "AccessDeniedException"})

#: ``CapacityReservationIds`` per request (botocore ec2 model documentation: "Maximum 10 explicitly specified").
IDS_PER_REQUEST = 10

#: Layer 3 of a ``NetworkNodes`` set (0-based index of the third, top-down).
LAYER_3_INDEX = 2

#: Pages followed at most (a ``NextToken`` that never ends must not loop forever).
MAX_PAGES = 100

Row = tuple[str, str, str, str]


class MalformedTopology(ValueError):
    """The response does not have the ``DescribeCapacityReservationTopology`` shape."""


@dataclass(frozen=True)
class NoAccess:
    code: str


@dataclass(frozen=True)
class Malformed:
    reason: str


Fetched = list[dict[str, Any]] | NoAccess | Malformed


def _entries(page: object) -> Iterator[dict[str, Any]]:
    if not isinstance(page, dict):
        raise MalformedTopology(f"a response object, got {type(page).__name__}")
    entries = page.get("CapacityReservations", [])
    if not isinstance(entries, list):
        raise MalformedTopology(f"CapacityReservations must be a list, got {type(entries).__name__}")
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("CapacityReservationId"), str):
            raise MalformedTopology(f"a CapacityReservations entry without a CapacityReservationId: {entry!r:.80}")
        nodes = entry.get("NetworkNodes")
        if nodes is not None and not (isinstance(nodes, list) and all(isinstance(n, str) for n in nodes)):
            raise MalformedTopology(f"NetworkNodes of {entry['CapacityReservationId']} must be a list of strings")
        yield entry


def fetch_topology(*, ec2: Any, reservation_ids: list[str]) -> Fetched:
    """Every topology entry of ``reservation_ids`` (pages followed), :class:`NoAccess`, or :class:`Malformed` for a
    response of the wrong shape. Other AWS errors propagate (the caller's ``_call`` explains them)."""
    found: list[dict[str, Any]] = []
    for start in range(0, len(reservation_ids), IDS_PER_REQUEST):
        request: dict[str, Any] = {"CapacityReservationIds": reservation_ids[start : start + IDS_PER_REQUEST]}
        for _ in range(MAX_PAGES):
            try:
                page = ec2.describe_capacity_reservation_topology(**request)
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", ""))
                if code in NO_ACCESS:
                    return NoAccess(code)
                raise
            try:
                found.extend(_entries(page))
            except MalformedTopology as error:
                return Malformed(str(error))
            token = page.get("NextToken")
            if not token:
                break
            request["NextToken"] = token
    return found


def _reserved(g: NodeGroupPlan) -> bool:
    return g.kind != "hyperpod" and g.reservation is not None and g.reservation.startswith("cr-")


def _group_row(g: NodeGroupPlan, entries: list[dict[str, Any]]) -> Row:
    target = f"{g.stack}/{g.group} {g.reservation}"
    mine = [e for e in entries if e["CapacityReservationId"] == g.reservation]
    if not mine:
        return "topology", target, "SKIP", f"{g.reservation} is not in the {ACTION} response"
    sets = [e.get("NetworkNodes") or [] for e in mine]
    if not any(sets):
        return (
            "topology",
            target,
            "SKIP",
            "no network nodes: the instance type has no EC2 topology or the reservation is not active or pending",
        )
    layer3 = sorted({s[LAYER_3_INDEX] for s in sets if len(s) > LAYER_3_INDEX})
    short = sorted({len(s) for s in sets if 0 < len(s) <= LAYER_3_INDEX})
    tight = g.tight_placement
    if len(layer3) == 1 and not short:
        return "topology", target, "PASS" if tight else "INFO", "reserved instances span 1 layer-3 network node"
    if short:
        detail = f"the node set names only {max(short)} layer(s): no layer-3 network node is given"
        if layer3:
            detail += f" (and {len(layer3)} layer-3 node(s) elsewhere)"
    else:
        detail = f"reserved instances span {len(layer3)} layer-3 network nodes"
    if tight:
        return "topology", target, "WARN", f"{detail}, but the group asks for tight placement ({tight})"
    return "topology", target, "INFO", detail


def reservation_topology_rows(plan: Plan, fetch: Callable[[list[str]], Fetched]) -> list[Row]:
    """(check, target, status, detail) rows: one per group with a literal reservation id. ``fetch`` returns what
    :func:`fetch_topology` returns for the ids; it may raise for an AWS error."""
    groups = [g for g in plan.node_groups if _reserved(g)]
    if not groups:
        return []
    ids = sorted({str(g.reservation) for g in groups})
    result = fetch(ids)
    if isinstance(result, NoAccess):
        detail = f"the account or caller may not call {ACTION} ({result.code}): layer-3 spread not checked"
        return [("topology", ", ".join(ids), "SKIP", detail)]
    if isinstance(result, Malformed):
        return [("topology", ", ".join(ids), "FAIL", f"{ACTION} returned a malformed response: {result.reason}")]
    return [_group_row(g, result) for g in groups]
