"""Names renamed for one vocabulary across the backends: the old name keeps working, with a ``DeprecationWarning``,
until :data:`DEPRECATED_UNTIL` (CHANGELOG.md "Deprecated" lists every rename and its new name).

- :func:`renamed_keywords` decorates a function or ``__init__`` whose keyword ``old=`` is now ``new=``; giving both
  raises :class:`~fmconstructs.errors.FmTypeError` naming them.
- :class:`RenamedAttribute` is a class attribute ``old`` that reads ``new`` and warns.

The old keyword is not in the signature: a type checker flags it (the runtime still accepts it), which is the signal a
typed caller needs to migrate.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

from .errors import FmTypeError

__all__ = ["DEPRECATED_UNTIL", "RenamedAttribute", "renamed_keywords"]

P = ParamSpec("P")
T = TypeVar("T")

#: The fmconstructs version that removes the names deprecated in 0.3.x (CHANGELOG.md "Deprecated" of 0.3.1).
DEPRECATED_UNTIL = "0.4.0"


def renamed_keywords(owner: str, **renames: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate ``owner``'s function or ``__init__`` whose keywords ``old=`` are now ``new=`` (``renames`` maps old to
    new): an old keyword is passed on under its new name with a ``DeprecationWarning``; both given raise
    :class:`~fmconstructs.errors.FmTypeError`."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise FmTypeError(
                        old, kwargs[old], f"omitted when {new} is given ({old} is {new}'s deprecated name)"
                    )
                warnings.warn(
                    f"{owner}({old}=) is deprecated and will be removed in fmconstructs {DEPRECATED_UNTIL}: use {new}=",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        wrapper.__fm_renamed_keywords__ = dict(renames)  # type: ignore[attr-defined]
        return wrapper

    return decorate


class RenamedAttribute:
    """A class attribute renamed ``new``: reading the old name returns the new one's value, with a
    ``DeprecationWarning`` (``LustreFileSystem.kms_key is deprecated ...: use LustreFileSystem.encryption_key``)."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._owner = "?"
        self._old = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self._owner = owner.__name__
        self._old = name

    @overload
    def __get__(self, instance: None, owner: type) -> RenamedAttribute: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> Any: ...
    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:  # the class itself (introspection, documentation tools): the descriptor
            return self
        warnings.warn(
            f"{self._owner}.{self._old} is deprecated and will be removed in fmconstructs {DEPRECATED_UNTIL}: "
            f"use {self._owner}.{self._new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(instance, self._new)
