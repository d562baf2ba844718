"""The shape of a cross-property rule (each package's ``rules.py``), the way ParallelCluster writes its validators.

A rule is a pure function named for what it checks, taking plain values (numbers, enums, catalog entries, the
resolved options), never a construct or a scope, so that it is unit-tested without synthesizing a stack:

- a hard rule raises :class:`~fmconstructs.errors.FmValidationError` naming the parameter, the value and what is
  allowed;
- a soft rule returns an :class:`Advice` (a warning id and its text) or None; the construct attaches what its rules
  return with :func:`warn`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import WarningId, add_warning

if TYPE_CHECKING:
    from constructs import IConstruct

__all__ = ["Advice", "warn"]


@dataclass(frozen=True)
class Advice:
    """A soft rule's finding: the warning to attach (acknowledgeable by its id) and its text."""

    warning: WarningId
    message: str


def warn(scope: IConstruct, advice: Advice | Iterable[Advice | None] | None) -> None:
    """Attach ``advice`` (one, none, or several; None entries are rules that found nothing) to ``scope``."""
    items = (advice,) if isinstance(advice, Advice) or advice is None else advice
    for item in items:
        if item is not None:
            add_warning(scope, item.warning, item.message)
