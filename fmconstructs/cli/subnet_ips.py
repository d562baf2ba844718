"""``fmc preflight``'s subnet check: the private IPs every consumer takes, summed per subnet, against what is free.

Consumers (:mod:`fmconstructs.cli.ip_consumers`) that name one subnet, or take an IP in every subnet they name
(FSx, PCS controllers, interface endpoints), are added to each such subnet. A node group spread over several subnets
may put its nodes in any of them: it is checked against the free IPs of those subnets together, with everything else
pinned there.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ip_consumers import IpConsumer
    from .plan import Plan

Row = tuple[str, str, str, str]
"""(check, target, status name, detail) for the preflight report."""

CHECK = "subnet IPs"


def _is_subnet_id(value: str) -> bool:
    return value.startswith("subnet-")


def subnets_to_load(plan: Plan) -> list[str]:
    """Every literal subnet id the plan's node groups and IP consumers name."""
    ids = {s for g in plan.node_groups for s in g.subnets if _is_subnet_id(s)}
    ids |= {s for c in plan.ip_consumers for s in c.subnets if _is_subnet_id(s)}
    return sorted(ids)


def _term(c: IpConsumer, ips: int) -> str:
    at_least = "at least " if c.lower_bound else ""
    notes = f"; {'; '.join(c.notes)}" if c.notes else ""
    return f"{c.name} ({c.stack}): {at_least}{ips:,} ({c.basis}{notes})"


def _row(target: str, need: list[tuple[IpConsumer, int]], free: int) -> Row:
    total = sum(n for _, n in need)
    status = "PASS" if total <= free else "FAIL"
    detail = f"{total:,} IPs needed, {free:,} free: " + "; ".join(_term(c, n) for c, n in need)
    return (CHECK, target, status, detail)


def _place(
    consumers: list[IpConsumer], rows: list[Row]
) -> tuple[dict[str, list[tuple[IpConsumer, int]]], dict[tuple[str, ...], list[IpConsumer]]]:
    pinned: dict[str, list[tuple[IpConsumer, int]]] = defaultdict(list)
    pools: dict[tuple[str, ...], list[IpConsumer]] = defaultdict(list)
    for c in consumers:
        target = f"{c.stack}/{c.name}"
        literal = [s for s in c.subnets if _is_subnet_id(s)]
        if not literal or len(literal) != len(c.subnets):
            rows.append((CHECK, target, "SKIP", f"subnets known only at deploy time ({', '.join(c.subnets)})"))
        elif not isinstance(c.ips, int):
            rows.append((CHECK, target, "SKIP", f"{c.basis} ({', '.join(literal)})"))
        elif c.per_subnet or len(set(literal)) == 1:
            for subnet in dict.fromkeys(literal):
                pinned[subnet].append((c, c.ips))
        else:
            pools[tuple(sorted(set(literal)))].append(c)
    return pinned, pools


def check_subnet_ips(plan: Plan, subnets: dict[str, dict[str, Any] | None]) -> list[Row]:
    """One row per subnet (and per set of subnets a spread group may use): the IPs needed against
    ``AvailableIpAddressCount`` of DescribeSubnets. ``subnets`` maps each id to its DescribeSubnets entry, to None
    when the lookup failed (no row: the failure has its own), and lacks ids EC2 did not return (not found)."""
    rows: list[Row] = []
    pinned, pools = _place(plan.ip_consumers, rows)

    def free(subnet: str) -> int | None:
        info = subnets.get(subnet)
        return None if info is None else int(info.get("AvailableIpAddressCount", 0))

    for subnet in sorted(set(pinned) | {s for pool in pools for s in pool}):
        if subnet not in subnets:
            users = sorted({c.name for c, _ in pinned.get(subnet, [])} | {c.name for p in pools for c in pools[p]})
            rows.append((CHECK, subnet, "FAIL", f"subnet not found in this region (used by {', '.join(users)})"))
    for subnet, need in sorted(pinned.items()):
        available = free(subnet)
        if available is not None:
            rows.append(_row(subnet, need, available))
    for pool, groups in sorted(pools.items()):
        frees = [free(s) for s in pool]
        if any(f is None for f in frees):
            continue
        need = [(c, c.ips) for c in groups if isinstance(c.ips, int)]
        need += [entry for s in pool for entry in pinned.get(s, [])]
        rows.append(_row(", ".join(pool), need, sum(f for f in frees if f is not None)))
    return rows
