"""Lazy package exports (PEP 562): a package's public names are imported from their submodules on first use.

Importing aws_cdk starts the jsii Node.js runtime. Packages whose light modules (``catalog``, ``networking.interfaces``,
``storage.sizing``) serve the ``fmc`` command, which must run without Node.js, name their exports here instead of
importing every construct eagerly. ``from fmconstructs import LustreFileSystem`` and ``fmconstructs.LustreFileSystem``
work as before (the submodule is imported then); the package keeps ``__all__`` and an ``if TYPE_CHECKING:`` block with
the real imports, so type checkers and IDEs see the same names.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    :param package: the package's ``__name__``.
    :param namespace: the package's ``globals()``; a name is stored there once resolved.
    :param exports: relative submodule (``".storage"``) -> the names the package exports from it.
    """
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
            namespace[name] = value
            return value
        # A submodule not yet imported (``fmconstructs.observability`` after ``import fmconstructs``): the eager
        # package imported them all on its way; importing one sets it as the package's attribute.
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
