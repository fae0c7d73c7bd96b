"""Finding measured data sets that jaxrod reads but never copies (their licences stay with them).

A data file is looked for, in order: at the path named by an environment variable; at a relative
path (``shared/data/...``) below the repository root or any of its ancestors (so ``../shared/data``
next to a checkout); the same below the current directory or any of its ancestors.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_shared_file"]


def find_shared_file(env_var: str | None, relpath: str | Path) -> Path | None:
    """The file named by ``$env_var`` (``None``: no variable), else the first
    ``<ancestor>/relpath`` found (see the module docstring), else ``None``. A set ``$env_var``
    naming no file gives ``None``: the variable wins, a stale one is not silently bypassed."""
    env = os.environ.get(env_var) if env_var else None
    if env:
        return Path(env) if Path(env).is_file() else None
    root = Path(__file__).resolve().parents[2]
    for base in (root, Path.cwd().resolve()):
        for d in (base, *base.parents):
            if (d / relpath).is_file():
                return d / relpath
    return None
