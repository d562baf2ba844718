"""The handler's time budget (standard library only; split from index.py, which re-exports these names).

It runs in the handler's Lambda next to index.py: the whole ``handler`` folder is the asset.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Kept back from the Lambda's remaining time for the notice (sns:Publish with its retries) and the final log line.
NOTICE_RESERVE_S = 15.0
# Without a Lambda context (tests, local runs): this much time for the work.
DEFAULT_BUDGET_S = 45.0


class Budget:
    """A deadline for the work, shorter than the Lambda timeout so that the notice still goes out.

    ``remaining_s``: the seconds left; in Lambda ``context.get_remaining_time_in_millis()`` / 1000 minus
    :data:`NOTICE_RESERVE_S` (Lambda Developer Guide, "Using the Lambda context object to retrieve Python function
    information": get_remaining_time_in_millis "Returns the number of milliseconds left before the execution times
    out")."""

    def __init__(self, remaining_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.deadline = clock() + remaining_s

    @classmethod
    def from_context(cls, context: object) -> Budget:
        remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining_ms):
            return cls(DEFAULT_BUDGET_S)
        return cls(max(0.0, float(remaining_ms()) / 1000.0 - NOTICE_RESERVE_S))

    def left(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def expired(self) -> bool:
        return self.left() <= 0.0
