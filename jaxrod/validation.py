"""Eager input validation shared by all models: clear errors that name the parameter, its value
and the allowed range. Checks are skipped for traced values (inside ``jit``/``vmap``/``grad``),
where values are unknown; models are meant to be built and checked outside transformations."""

from __future__ import annotations

import jax
import numpy as np


def is_traced(x) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def check_positive(name: str, value, unit: str = "") -> None:
    """``value`` (scalar or array) must be finite and > 0."""
    if is_traced(value):
        return
    arr = np.asarray(value, dtype=float)
    u = f" {unit}" if unit else ""
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (allowed: > 0{u}), got {value}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0{u}, got {value}")


def check_nonnegative(name: str, value, unit: str = "") -> None:
    """``value`` (scalar or array) must be finite and >= 0."""
    if is_traced(value):
        return
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        u = f" {unit}" if unit else ""
        raise ValueError(f"{name} must be finite and >= 0{u}, got {value}")


def check_range(name: str, value, lo: float, hi: float, *, lo_open=False, hi_open=False) -> None:
    """``value`` must be finite and in the interval (brackets as given)."""
    if is_traced(value):
        return
    arr = np.asarray(value, dtype=float)
    lo_ok = arr > lo if lo_open else arr >= lo
    hi_ok = arr < hi if hi_open else arr <= hi
    if not (np.all(np.isfinite(arr)) and np.all(lo_ok) and np.all(hi_ok)):
        br = ("(" if lo_open else "[") + f"{lo}, {hi}" + (")" if hi_open else "]")
        raise ValueError(f"{name} must be finite and in {br}, got {value}")


def check_finite(name: str, value) -> None:
    if is_traced(value):
        return
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        raise ValueError(f"{name} must be finite; non-finite entries at indices {bad[:5].tolist()}")


def check_shape(name: str, value, shape: tuple) -> None:
    """``shape`` may contain ``None`` for 'any size'."""
    got = np.shape(value)
    if len(got) != len(shape) or any(s is not None and g != s for g, s in zip(got, shape)):
        want = str(tuple("any" if s is None else s for s in shape)).replace("'", "")
        raise ValueError(f"{name} must have shape {want}, got {got}")
