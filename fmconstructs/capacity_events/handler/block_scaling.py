"""Scaling on Capacity Block events: EKS managed node groups and Auto Scaling groups (standard library + boto3).

Split from index.py (which re-exports these names): the block's fleets go to their size when the block is delivered
and to 0 when its expiry actions run. Also the throttling backoff (:func:`with_backoff`) the other handler actions use.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import traceback
from collections.abc import Callable
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

# --- scaling on block events: EKS managed node groups and Auto Scaling groups -----------------------------------

# botocore "standard" retry mode: exponential backoff with jitter on throttling and transient errors (botocore
# retryhandler/standard.py; boto3 guide "Retries"); the handler's own loop below adds a few slower attempts for
# throttling that outlasts it.
# Each call is bounded too: connect and read timeouts (botocore Config connect_timeout / read_timeout, 60 s by
# default) far below the handler's timeout, so that one hung call cannot eat the time the notice needs.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=10)
# Throttling error codes (botocore retries/standard.py ThrottledRetryableChecker._THROTTLED_ERROR_CODES, a subset).
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded", "ThrottledException"}
)
SCALING_ATTEMPTS = 4
SCALING_BASE_DELAY_S = 2.0
SCALING_MAX_DELAY_S = 20.0
EKS_NODEGROUP = "eks-nodegroup"
AUTO_SCALING_GROUP = "auto-scaling-group"


def with_backoff(
    call: Callable[[], Any],
    *,
    attempts: int = SCALING_ATTEMPTS,
    base_delay_s: float = SCALING_BASE_DELAY_S,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """``call()``, retried on throttling errors with exponential backoff and jitter (other errors raise at once)."""
    for attempt in range(attempts):
        try:
            return call()
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code not in THROTTLING_CODES or attempt == attempts - 1:
                raise
            sleep(min(SCALING_MAX_DELAY_S, base_delay_s * 2**attempt) * random.uniform(0.5, 1.0))
    raise AssertionError("unreachable")  # pragma: no cover


def request_token(event_id: str, target: dict[str, Any], size: int) -> str:
    """An idempotency token for one event, target and size: a redelivered event (same ``id``) sends the same token
    (EKS UpdateNodegroupConfig clientRequestToken: "A unique, case-sensitive identifier that you provide to ensure
    the idempotency of the request")."""
    key = json.dumps([event_id, target.get("cluster"), target.get("name"), size])
    return hashlib.sha256(key.encode()).hexdigest()[:64]


def scale_nodegroup(
    eks: Any, target: dict[str, Any], size: int, *, event_id: str, sleep: Callable[[float], None] = time.sleep
) -> str:
    """Set a managed node group's minSize and desiredSize to ``size`` (maxSize stays); returns what was done.

    Read first (eks:DescribeNodegroup): a group already at ``size`` is left alone, so a duplicate delivery changes
    nothing. Min and desired change in one call (EKS checks min <= desired <= max; max is the block size)."""
    cluster, name = str(target["cluster"]), str(target["name"])
    group = with_backoff(lambda: eks.describe_nodegroup(clusterName=cluster, nodegroupName=name), sleep=sleep)
    current = (group.get("nodegroup") or {}).get("scalingConfig") or {}
    if current.get("minSize") == size and current.get("desiredSize") == size:
        return f"EKS node group {name}: already at {size} node(s)"
    response = with_backoff(
        lambda: eks.update_nodegroup_config(
            clusterName=cluster,
            nodegroupName=name,
            scalingConfig={"minSize": size, "desiredSize": size},
            clientRequestToken=request_token(event_id, target, size),
        ),
        sleep=sleep,
    )
    update_id = (response.get("update") or {}).get("id", "")
    return f"EKS node group {name}: min and desired {current.get('desiredSize', '?')} -> {size} (update {update_id})"


def scale_auto_scaling_group(
    autoscaling: Any, target: dict[str, Any], size: int, *, sleep: Callable[[float], None] = time.sleep
) -> str:
    """Set an Auto Scaling group's MinSize and DesiredCapacity to ``size`` (absolute values: idempotent)."""
    name = str(target["name"])
    with_backoff(
        lambda: autoscaling.update_auto_scaling_group(AutoScalingGroupName=name, MinSize=size, DesiredCapacity=size),
        sleep=sleep,
    )
    return f"Auto Scaling group {name}: min and desired -> {size}"


def scale_targets(
    targets: list[dict[str, Any]],
    *,
    reservation_id: str,
    starting: bool,
    event_id: str,
    eks: Any,
    autoscaling: Any,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[str], list[str]]:
    """Scale the targets of ``reservation_id``: to their size when the block starts, to 0 when it ends. Returns
    (what was done, failures as text); one target's failure does not stop the others."""
    done: list[str] = []
    failed: list[str] = []
    for target in targets:
        if str(target.get("reservation")) != reservation_id:
            continue
        size = int(target.get("size") or 0) if starting else 0
        label = f"{target.get('kind')} {target.get('name')}"
        try:
            if target.get("kind") == EKS_NODEGROUP:
                done.append(scale_nodegroup(eks, target, size, event_id=event_id, sleep=sleep))
            elif target.get("kind") == AUTO_SCALING_GROUP:
                done.append(scale_auto_scaling_group(autoscaling, target, size, sleep=sleep))
            else:
                failed.append(f"{label}: unknown target kind")
        except Exception as error:  # the notice goes out whatever failed
            traceback.print_exc()
            failed.append(f"{label} to {size}: {error}")
    return done, failed


def _scaling_lines(
    event: dict[str, Any],
    targets: list[dict[str, Any]],
    *,
    reservation_id: str,
    starting: bool,
    eks: Any,
    autoscaling: Any,
    result: dict[str, Any],
    sleep: Callable[[float], None],
) -> list[str]:
    event_id = str(event.get("id") or f"{reservation_id}-{'start' if starting else 'end'}")
    done, failed = scale_targets(
        targets,
        reservation_id=reservation_id,
        starting=starting,
        event_id=event_id,
        eks=eks,
        autoscaling=autoscaling,
        sleep=sleep,
    )
    result["scaled"] = done
    lines = [f"Scaled: {line}." for line in done]
    if failed:
        result["scaling_failures"] = failed
        print(json.dumps({"scaling_failures": failed}))
        lines.append("Scaling FAILED for: " + "; ".join(failed)[:1000])
    return lines
