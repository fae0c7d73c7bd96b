"""Eager input validation shared by all models: clear errors that name the parameter, its value
and the allowed range. Checks are skipped for traced values (inside ``jit``/``vmap``/``grad``),
where values are unknown; models are meant to be built and checked outside transformations."""

from __future__ import annotations

import jax
import numpy as np



def is_traced(x) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


#: Numbers in Python are plain SI values: a unit string (``mass="1 kg"``) is refused with this
#: note, naming the parameter; unit strings are parsed in model files (:mod:`jaxrod.modelfile`) only.
UNIT_STRING_NOTE = (
    "unit strings such as '1 kg' are read in model files only; in Python give the number in SI units"
)


class NotANumberError(TypeError, ValueError):
    """A number was expected (raised by :func:`as_floats`): a ``TypeError``, and a ``ValueError``
    as NumPy's conversion error was, so callers (the command line) that catch ``ValueError`` still
    report it as a user error."""


def _has_str(value) -> bool:
    if isinstance(value, (str, bytes)):
        return True
    return isinstance(value, (list, tuple)) and any(_has_str(v) for v in value)


def as_floats(name: str, value, unit: str = ""):
    """``np.asarray(value, dtype=float)`` for a concrete ``value`` (``value`` itself when traced),
    or a ``TypeError`` naming the parameter ``name`` (a string, e.g. ``"1 kg"``: see
    :data:`UNIT_STRING_NOTE`; ``None``, an object or a ragged list)."""
    if is_traced(value):
        return value
    try:
        if _has_str(value):
            raise ValueError
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        u = f" [{unit}]" if unit else ""
        note = f"; {UNIT_STRING_NOTE}" if _has_str(value) else ""
        raise NotANumberError(f"{name}{u} must be a number or an array of numbers, got {_describe(value)}{note}") from None


def check_file(name: str, path, what: str = "a file") -> None:
    """``path`` must be an existing regular file: a one-line ``IsADirectoryError`` for a directory
    (not reported as missing) and ``FileNotFoundError`` for a missing path, naming ``name``."""
    import os

    p = os.fspath(path)
    if os.path.isdir(p):
        raise IsADirectoryError(f"{name} = {p!r} is a directory; expected {what}")
    if not os.path.isfile(p):
        raise FileNotFoundError(f"{name} = {p!r}: no such file (expected {what})")


def check_type(name: str, value, cls, what: str | None = None) -> None:
    """``value`` must be an instance of ``cls`` (a class or a tuple of classes); ``what``: how to
    name the allowed type(s) in the message (default: the class names)."""
    if not isinstance(value, cls):
        if what is None:
            names = [c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,))]
            what = " or ".join(names)
        raise TypeError(f"{name} must be a {what}, got {_describe(value)}")


def one_or_many(value) -> tuple:
    """A tuple from a list/tuple (or another iterable) of elements, or from ONE element (an object
    where a list is expected: ``tendons=Tendon(...)``), taken as a one-element list. Usable as an
    ``equinox`` field converter; the elements' types are checked by the caller."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__") or hasattr(value, "__jax_array__"):
        return (value,)
    if isinstance(value, np.ndarray) or isinstance(value, jax.Array):
        return (value,)
    return tuple(value)


def check_positive(name: str, value, unit: str = "") -> None:
    """``value`` (scalar or array) must be finite and > 0."""
    if is_traced(value):
        return
    arr = as_floats(name, value, unit)
    u = f" {unit}" if unit else ""
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (allowed: > 0{u}), got {value}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0{u}, got {value}")


def check_nonnegative(name: str, value, unit: str = "") -> None:
    """``value`` (scalar or array) must be finite and >= 0."""
    if is_traced(value):
        return
    arr = as_floats(name, value, unit)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        u = f" {unit}" if unit else ""
        raise ValueError(f"{name} must be finite and >= 0{u}, got {value}")


def check_range(name: str, value, lo: float, hi: float, *, lo_open=False, hi_open=False) -> None:
    """``value`` must be finite and in the interval (brackets as given)."""
    if is_traced(value):
        return
    arr = as_floats(name, value)
    lo_ok = arr > lo if lo_open else arr >= lo
    hi_ok = arr < hi if hi_open else arr <= hi
    if not (np.all(np.isfinite(arr)) and np.all(lo_ok) and np.all(hi_ok)):
        br = ("(" if lo_open else "[") + f"{lo}, {hi}" + (")" if hi_open else "]")
        raise ValueError(f"{name} must be finite and in {br}, got {value}")


def check_finite(name: str, value) -> None:
    if is_traced(value):
        return
    arr = as_floats(name, value)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        got = f", got {arr.tolist()}" if arr.size <= 9 else ""
        raise ValueError(f"{name} must be finite; non-finite entries at indices {bad[:5].tolist()}{got}")


def check_shape(name: str, value, shape: tuple) -> None:
    """``shape`` may contain ``None`` for 'any size'."""
    got = np.shape(value)
    if len(got) != len(shape) or any(s is not None and g != s for g, s in zip(got, shape)):
        want = str(tuple("any" if s is None else s for s in shape)).replace("'", "")
        raise ValueError(f"{name} must have shape {want}, got {got}")


def _describe(value) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_int(name: str, value, *, min: int | None = None) -> int:
    """``int(value)`` for a whole number given as an integer type (Python ``int``, a NumPy integer
    or a 0-d NumPy/JAX integer array); floats (even ``2.0``), bools and strings are refused rather than
    truncated. ``min``: smallest allowed value.

    Raises:
        TypeError: not an integer type; ValueError: below ``min``.
    """
    if isinstance(value, (bool, np.bool_)) or is_traced(value):
        ok = False
    elif isinstance(value, (int, np.integer)):
        ok = True
    else:  # a 0-d NumPy or (concrete) JAX integer array
        ok = np.shape(value) == () and np.dtype(getattr(value, "dtype", object)).kind in "iu"
    if not ok:
        allowed = "an integer" + (f" >= {min}" if min is not None else "")
        raise TypeError(f"{name} must be {allowed}, got {_describe(value)}")
    v = int(value)
    if min is not None and v < min:
        raise ValueError(f"{name} must be >= {min}, got {v}")
    return v


def check_int_sequence(name: str, values) -> tuple:
    """``tuple`` of ints from an int or a sequence/array of integer types (see :func:`check_int`)."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        return (int(values),)
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim > 1:
        raise ValueError(f"{name} must be an integer or a flat sequence of integers, got shape {arr.shape}")
    return tuple(check_int(f"{name}[{k}]", v.item() if isinstance(v, np.ndarray) else v)
                 for k, v in enumerate(np.atleast_1d(arr)))


def check_scalar(name: str, value, unit: str = "") -> None:
    """``value`` must be a scalar (shape ``()``); traced values are checked by shape too."""
    got = np.shape(value)
    if got != ():
        u = f" [{unit}]" if unit else ""
        shown = "" if is_traced(value) or np.size(value) > 6 else f" ({np.asarray(value).tolist()})"
        raise ValueError(f"{name}{u} must be a scalar (one value), got shape {got}{shown}")


def check_finite_scalar(name: str, value, unit: str = "") -> None:
    """``value`` must be one finite number (shape ``()``; NaN and inf refused)."""
    check_scalar(name, value, unit)
    if is_traced(value):
        return
    v = float(as_floats(name, value, unit))
    if not np.isfinite(v):
        u = f" [{unit}]" if unit else ""
        raise ValueError(f"{name}{u} must be a finite number, got {value}")


def check_polyline(name: str, points, *, columns: int = 3) -> None:
    """Consecutive nodes of the polyline ``points[:, :columns]`` must differ (a zero-length edge
    has no tangent) and must not turn back by 180 degrees (the curvature binormal
    ``2 t1 x t2 / (1 + t1 . t2)`` is singular there)."""
    if is_traced(points):
        return
    pos = np.asarray(points, dtype=float)[:, :columns]
    lengths = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    if np.any(lengths <= 1e-12):
        idx = np.flatnonzero(lengths <= 1e-12)[:5].tolist()
        raise ValueError(
            f"{name} has coincident consecutive nodes (zero-length edges at indices {idx}); "
            "consecutive nodes must differ"
        )
    t = np.diff(pos, axis=0) / lengths[:, None]
    back = np.flatnonzero(np.sum(t[:-1] * t[1:], axis=1) < -1 + 1e-9)
    if back.size:
        raise ValueError(f"{name} folds back on itself (180 degree turn) at nodes {(back + 1)[:5].tolist()}")
