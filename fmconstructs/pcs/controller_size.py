"""The PCS controller size a cluster needs: the sum of its node groups' maximum node counts against
:data:`~fmconstructs.pcs.slurm.CONTROLLER_SIZE_LIMITS` (pure functions; no aws_cdk).

- Every node group counts, login groups included (see :data:`~fmconstructs.pcs.slurm.CONTROLLER_SIZE_LIMITS`).
- Automatic size (``PcsCluster(size=None)``): the smallest size that holds the sum. When a count is a deploy-time
  value, the smallest size that holds the known counts, and at least MEDIUM (:data:`UNKNOWN_COUNT_FLOOR`): the size
  cannot change without replacing the cluster and, with it, every node group and queue, so a deploy-time fleet size
  (the usual reason for a token) gets room for up to 512 nodes rather than 32. Pass ``size=`` to decide yourself.
- An explicit size smaller than the known sum, or a known sum above LARGE's 2,048 nodes, is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import is_token
from .slurm import ControllerSize

#: The automatic size's floor when a node count is a deploy-time value (see the module docstring for why).
UNKNOWN_COUNT_FLOOR = ControllerSize.MEDIUM
_LARGEST = list(ControllerSize)[-1]


@dataclass(frozen=True)
class NodeCount:
    """One node group's maximum node count as the caller gave it."""

    group: str
    """The node group's construct path."""
    parameter: str
    """The caller's name for the count: ``max_nodes`` (GPU groups) or ``nodes`` (login groups)."""
    count: int | float
    """A whole number, or a number token (deploy-time)."""

    @property
    def known(self) -> bool:
        return not is_token(self.count)


def known_total(counts: Sequence[NodeCount]) -> int:
    """The sum of the counts known at synthesis."""
    return sum(int(c.count) for c in counts if c.known)


def has_unknown(counts: Sequence[NodeCount]) -> bool:
    return any(not c.known for c in counts)


def _at_least(size: ControllerSize, floor: ControllerSize) -> ControllerSize:
    order = list(ControllerSize)
    return size if order.index(size) >= order.index(floor) else floor


def automatic_size(counts: Sequence[NodeCount]) -> ControllerSize:
    """The smallest size that holds the known counts; at least :data:`UNKNOWN_COUNT_FLOOR` when one is unknown.
    LARGE when even LARGE is too small (:func:`size_problem` reports that)."""
    size = ControllerSize.smallest_for(known_total(counts)) or _LARGEST
    return _at_least(size, UNKNOWN_COUNT_FLOOR) if has_unknown(counts) else size


def effective_size(requested: ControllerSize | None, counts: Sequence[NodeCount]) -> ControllerSize:
    """The size rendered into ``AWS::PCS::Cluster.Size``: the requested one, else :func:`automatic_size`."""
    return requested if requested is not None else automatic_size(counts)


def describe_counts(counts: Sequence[NodeCount]) -> str:
    """``Cluster/Login: 1, Cluster/Gpu: 39`` (a deploy-time count as ``deploy-time``)."""
    return ", ".join(f"{c.group}: {int(c.count) if c.known else 'deploy-time'}" for c in counts)


def size_problem(requested: ControllerSize | None, counts: Sequence[NodeCount]) -> str | None:
    """Why the known counts do not fit (None when they do): the groups with their counts, the size's limit and the
    smallest size that fits. Deploy-time counts are listed but not summed."""
    total = known_total(counts)
    limit = requested or _LARGEST
    if total <= limit.max_nodes:
        return None
    groups = describe_counts(counts)
    fits = ControllerSize.smallest_for(total)
    if fits is None:
        return (
            f"PCS controllers hold at most {_LARGEST.max_nodes:,} compute nodes ({_LARGEST.value}), and the node "
            f"groups of this cluster would hold {total:,} ({groups}); split them over several clusters"
        )
    return (
        f"controller size {limit.value} holds {limit.max_nodes:,} compute nodes (login nodes included), and the node "
        f"groups of this cluster would hold {total:,} ({groups}); pass size=ControllerSize.{fits.value} (the smallest "
        f"that holds {total:,}) or size=None (automatic), or give the groups fewer nodes"
    )


def room_for(requested: ControllerSize | None, counts: Sequence[NodeCount]) -> int:
    """How many more nodes a new group may have: the size's limit (LARGE's when automatic) minus the known sum."""
    return max((requested or _LARGEST).max_nodes - known_total(counts), 0)
