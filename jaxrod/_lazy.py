"""Lazy attributes of a package (PEP 562): the one helper behind ``jaxrod`` and ``jaxrod.scenes``,
whose public names are imported on first use so that importing the package stays light."""

from __future__ import annotations

import importlib


def lazy_attributes(package: str, namespace: dict, names: dict, submodules=(), listed=()):
    """``(__getattr__, __dir__)`` for the package ``package`` (its ``__name__``).

    ``names`` maps a public name to the relative module that defines it, ``submodules`` lists
    submodules reachable as attributes; a resolved value is stored in ``namespace`` (the package's
    ``globals()``) so later lookups skip ``__getattr__``. ``__dir__`` lists ``namespace`` plus
    ``listed`` (default: every lazy name and submodule)."""

    def __getattr__(name):
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
        elif name in submodules:
            value = importlib.import_module(f".{name}", package)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    shown = set(listed) if listed else {*names, *submodules}

    def __dir__():
        return sorted({*namespace, *shown})

    return __getattr__, __dir__
