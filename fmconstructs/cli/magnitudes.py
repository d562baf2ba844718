"""Bounded numbers for ``fmc`` options: a finite number within the bounds of what the answer can mean.

Without bounds, ``--nodes 1e12`` or ``--model-params 1e300`` print numbers no platform has, or ``Infinity`` (which is
not JSON). The bounds are this library's, chosen well above anything EC2 offers today, not an AWS rule:

- nodes: at most 100,000 (an EC2 UltraCluster holds up to about 20,000 GPUs; UNCONFIRMED as a hard limit);
- model parameters: at most 1e15; training tokens: at most 1e18;
- checkpoint bytes: at most 1e18 (an exabyte); checkpoint seconds: 1 second to 1 year;
- throughput: at most 1e6 GB/s; prices: at most 1e5 USD per node-hour or GPU-hour;
- MFU 0.001-1; percentages 0 to under 100; hours: at most 1 year (8,784 hours).
"""

from __future__ import annotations

import math
from typing import Any

import click

MAX_NODES = 100_000
MAX_MODEL_PARAMS = 1e15
MAX_TOKENS = 1e18
MAX_CHECKPOINT_BYTES = 1e18
MAX_CHECKPOINT_SECONDS = 366 * 24 * 3600
MAX_THROUGHPUT_GBYTES_PER_S = 1e6
MAX_PRICE_USD = 1e5
MAX_HOURS = 366 * 24


class Magnitude(click.ParamType[float]):
    """A finite float in ``[low, high]`` (``low`` excluded with ``exclusive_low``); anything else is a usage error
    (exit 2) naming the option and the bounds."""

    name = "number"

    def __init__(self, low: float, high: float, *, exclusive_low: bool = False, unit: str = "") -> None:
        self.low, self.high, self.exclusive_low, self.unit = low, high, exclusive_low, unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not bounded(number, self.low, self.high, exclusive_low=self.exclusive_low):
            self.fail(f"{value!r} is not {self.describe()}", param, ctx)
        return number

    def describe(self) -> str:
        low = f"greater than {self.low:g}" if self.exclusive_low else f"at least {self.low:g}"
        return f"a finite number {low} and at most {self.high:g}{' ' + self.unit if self.unit else ''}"


def bounded(number: float, low: float, high: float, *, exclusive_low: bool = False) -> bool:
    """Whether ``number`` is finite and within the bounds."""
    if not math.isfinite(number) or number > high:
        return False
    return number > low if exclusive_low else number >= low
