"""Post-processing of sampled signals: oscillation period, frequency, amplitude and decay.

Host-side NumPy helpers (not differentiable) used by the CLI, tests, benchmarks and notebooks to
compare a simulated response (e.g. the tip displacement of a cantilever, ``traj.tip[:, 2] -
traj.tip[0, 2]``) with analytic values. Units follow the inputs: ``times`` in seconds gives
periods in seconds and angular frequencies in rad/s; the signal's unit (usually metres) carries
over to amplitudes.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "decay_time_constant",
    "oscillation_amplitude",
    "oscillation_frequency",
    "oscillation_period",
    "relative_error",
    "zero_crossings",
]


def _as_series(times, signal):
    t = np.asarray(times, dtype=float).reshape(-1)
    y = np.asarray(signal, dtype=float).reshape(-1)
    if t.shape != y.shape:
        raise ValueError(f"times and signal must have the same length, got {t.shape[0]} and {y.shape[0]}")
    if t.size < 2:
        raise ValueError("need at least two samples")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        raise ValueError("times and signal must be finite")
    if np.any(np.diff(t) <= 0):
        raise ValueError("times must be strictly increasing")
    return t, y


def zero_crossings(times, signal, *, level: float = 0.0, direction: str = "up"):
    """Times [s] at which ``signal`` crosses ``level``, by linear interpolation between samples.

    An upward crossing is a pair of samples with ``y[i] <= level < y[i+1]`` (so a signal that
    starts exactly at the level and rises counts a crossing at ``times[0]``); a downward one has
    ``y[i] >= level > y[i+1]``.

    Args:
        times: ``(T,)`` strictly increasing sample times [s].
        signal: ``(T,)`` samples.
        level: the crossing level (same unit as ``signal``).
        direction: ``"up"``, ``"down"`` or ``"both"``.

    Returns:
        sorted ``(K,)`` array of crossing times [s].
    """
    t, y = _as_series(times, signal)
    y = y - float(level)
    a, b = y[:-1], y[1:]
    if direction == "up":
        idx = np.flatnonzero((a <= 0) & (b > 0))
    elif direction == "down":
        idx = np.flatnonzero((a >= 0) & (b < 0))
    elif direction == "both":
        idx = np.flatnonzero(((a <= 0) & (b > 0)) | ((a >= 0) & (b < 0)))
    else:
        raise ValueError(f"direction must be 'up', 'down' or 'both', got {direction!r}")
    frac = a[idx] / (a[idx] - b[idx])
    return t[idx] + frac * (t[idx + 1] - t[idx])


def oscillation_period(times, signal, *, level: float = 0.0, direction: str = "up") -> float:
    """Mean oscillation period [s] from the zero crossings of ``signal`` (see :func:`zero_crossings`).

    With ``direction="up"`` (or ``"down"``) the period is ``(t_last - t_first) / (K - 1)`` over the
    ``K`` crossings; with ``"both"`` consecutive crossings are half a period apart. Returns
    ``nan`` when there are too few crossings (fewer than two, or fewer than three for ``"both"``,
    i.e. less than about one full period in the record).
    """
    tc = zero_crossings(times, signal, level=level, direction=direction)
    if direction == "both":
        if tc.size < 3:
            return math.nan
        return float(2.0 * (tc[-1] - tc[0]) / (tc.size - 1))
    if tc.size < 2:
        return math.nan
    return float((tc[-1] - tc[0]) / (tc.size - 1))


def oscillation_frequency(times, signal, *, level: float = 0.0, direction: str = "up") -> float:
    """Angular frequency ``2 pi / period`` [rad/s] (``nan`` if the period cannot be estimated)."""
    period = oscillation_period(times, signal, level=level, direction=direction)
    return 2.0 * math.pi / period if math.isfinite(period) and period > 0 else math.nan


def oscillation_amplitude(signal, *, about: float | None = None) -> float:
    """Amplitude of an oscillating signal (same unit as ``signal``).

    With ``about=None`` it is half the peak-to-peak range ``(max - min) / 2``; otherwise the
    largest distance from ``about`` (e.g. ``about=0`` for a displacement from equilibrium).
    Sampling underestimates peaks by up to ``1 - cos(pi dt / period)``.
    """
    y = np.asarray(signal, dtype=float).reshape(-1)
    if y.size == 0:
        raise ValueError("signal is empty")
    if about is None:
        return float(0.5 * (y.max() - y.min()))
    return float(np.max(np.abs(y - float(about))))


def decay_time_constant(times, signal, *, level: float = 0.0) -> float:
    """Exponential decay time ``tau`` [s] of an oscillation ``~ exp(-t/tau) cos(omega t)``.

    Takes the extreme value of ``|signal - level|`` between consecutive crossings of ``level``
    (one peak per half cycle) and fits ``log(peak) = c - t / tau`` by least squares. Returns
    ``inf`` for a non-decaying (or growing) envelope and ``nan`` with fewer than two complete half
    cycles.
    """
    t, y = _as_series(times, signal)
    y = y - float(level)
    tc = zero_crossings(t, y, direction="both")
    if tc.size < 3:
        return math.nan
    pt, pv = [], []
    for lo, hi in zip(tc[:-1], tc[1:]):
        sel = np.flatnonzero((t > lo) & (t < hi))
        if sel.size == 0:
            continue
        k = sel[np.argmax(np.abs(y[sel]))]
        if abs(y[k]) > 0:
            pt.append(t[k])
            pv.append(abs(y[k]))
    if len(pt) < 2:
        return math.nan
    slope = np.polyfit(np.asarray(pt), np.log(np.asarray(pv)), 1)[0]
    return float(-1.0 / slope) if slope < 0 else math.inf


def relative_error(measured, reference) -> float:
    """``(measured - reference) / |reference|`` (signed, dimensionless)."""
    return float((float(measured) - float(reference)) / abs(float(reference)))
