"""The example app's reservation ids: placeholders, one per instance type, and the context keys that override them.

A Capacity Block or an On-Demand Capacity Reservation reserves ONE instance type, so the keys name it:
``-c fmconstructs:capacity-block-id:p5.48xlarge=cr-...`` and ``-c fmconstructs:odcr-id:p6-b300.48xlarge=cr-...``.
The keys without a type (``fmconstructs:capacity-block-id``, ``fmconstructs:odcr-id``) still apply to every stack
that has no typed key: right only when the stacks that read them use one instance type (``fmc preflight`` reports a
reservation of another type).
"""

from __future__ import annotations

from constructs import Construct

#: Placeholder Capacity Block reservation ids (well-formed, owned by nobody).
PLACEHOLDER_CAPACITY_BLOCK_IDS = {
    "p5.48xlarge": "cr-0fedcba9876543210",
    "p5en.48xlarge": "cr-0e5e5e5e5e5e5e5e5",
}
#: Placeholder On-Demand Capacity Reservation ids.
PLACEHOLDER_ODCR_IDS = {
    "p5.48xlarge": "cr-0123456789abcdef0",
    "p6-b300.48xlarge": "cr-0b300b300b300b300",
}


def _reservation(scope: Construct, key: str, instance_type: str, placeholders: dict[str, str]) -> str:
    ctx = scope.node.try_get_context
    value = ctx(f"{key}:{instance_type}") or ctx(key) or placeholders[instance_type]
    return str(value)


def capacity_block_id(scope: Construct, instance_type: str) -> str:
    """``fmconstructs:capacity-block-id:<type>``, else ``fmconstructs:capacity-block-id``, else the placeholder."""
    return _reservation(scope, "fmconstructs:capacity-block-id", instance_type, PLACEHOLDER_CAPACITY_BLOCK_IDS)


def odcr_id(scope: Construct, instance_type: str) -> str:
    """``fmconstructs:odcr-id:<type>``, else ``fmconstructs:odcr-id``, else the placeholder."""
    return _reservation(scope, "fmconstructs:odcr-id", instance_type, PLACEHOLDER_ODCR_IDS)
