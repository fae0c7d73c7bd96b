"""Residuals and losses of a simulated :class:`~jaxrod.integrate.Trajectory` against measurements.

Predictions are interpolated to the measurement times (4-point Lagrange, i.e. cubic, in time by
default: error ``O(dt^4)``, so a 2 ms simulation matches 1 kHz camera frames to ~1e-7 m on a
6 Hz swing where linear interpolation is off by ~7e-5 m) and to the markers' reference arc
lengths (linear along the grid of saved nodes: exact at nodes, ``O(ds^2)`` between them).

Residuals are ``(predicted - measured) / scale`` with ``scale`` [m] a typical measurement error,
so that a good fit has residuals of order one; entries that are not measured (``mask`` False) are
exactly 0 and are returned with the mask, so a masked value never changes a loss. Losses are the
mean over measured entries of ``rho(r)``:

* ``"l2"``: ``rho = r^2 / 2``;
* ``"huber"``: ``r^2 / 2`` for ``|r| <= delta``, ``delta (|r| - delta / 2)`` beyond (outliers count
  linearly);
* ``"cauchy"``: ``delta^2 / 2 log(1 + (r / delta)^2)`` (outliers count logarithmically).

Everything is differentiable (``jax.grad`` / ``jax.jacfwd``) with respect to the trajectory.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .data import MarkerTracks

__all__ = [
    "block_index",
    "block_residuals",
    "interp_arc_length",
    "interp_time",
    "marker_loss",
    "marker_residuals",
    "predict_markers",
    "reference_arc_lengths",
    "robust_loss",
    "robust_rho",
    "tip_loss",
    "tip_residuals",
]

ROBUST_KINDS = ("l2", "huber", "cauchy")


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def interp_time(times, values, t_query, *, kind: str = "cubic"):
    """Interpolate samples ``values (T, ...)`` at ``times (T,)`` [s] to ``t_query (Q,)`` [s].

    ``kind="cubic"``: Lagrange polynomial through the 4 nearest samples (3 or 2 near the ends or
    for short series); ``"linear"``: between neighbours. Queries must lie inside
    ``[times[0], times[-1]]`` (checked when the times are concrete; clamped under tracing).

    Returns:
        ``(Q, ...)`` interpolated values.
    """
    if kind not in ("cubic", "linear"):
        raise ValueError(f"kind must be 'cubic' or 'linear', got {kind!r}")
    times = jnp.asarray(times, dtype=float)
    tq = jnp.asarray(t_query, dtype=float)
    T = times.shape[0]
    if _concrete(times) and _concrete(tq) and T > 0 and tq.size:
        lo, hi = float(times[0]), float(times[-1])
        tol = 1e-9 * max(1.0, abs(hi - lo))
        qmin, qmax = float(jnp.min(tq)), float(jnp.max(tq))
        if qmin < lo - tol or qmax > hi + tol:
            raise ValueError(
                f"measurement times [{qmin:.6g}, {qmax:.6g}] s reach outside the simulated interval "
                f"[{lo:.6g}, {hi:.6g}] s; simulate longer or drop those frames (MarkerTracks.window)"
            )
    if T == 1:
        return jnp.broadcast_to(values[0], (tq.shape[0], *values.shape[1:]))
    tq = jnp.clip(tq, times[0], times[-1])
    i = jnp.clip(jnp.searchsorted(times, tq, side="right") - 1, 0, T - 2)
    if kind == "linear" or T < 4:
        t0, t1 = times[i], times[i + 1]
        w = ((tq - t0) / (t1 - t0)).reshape(-1, *([1] * (values.ndim - 1)))
        return (1.0 - w) * values[i] + w * values[i + 1]
    start = jnp.clip(i - 1, 0, T - 4)
    idx = start[:, None] + jnp.arange(4)[None, :]  # (Q, 4)
    tn = times[idx]
    # Lagrange basis weights l_j(tq) on the 4-point stencil
    diff = tq[:, None] - tn  # (Q, 4)
    weights = []
    for j in range(4):
        num = jnp.ones_like(tq)
        den = jnp.ones_like(tq)
        for m in range(4):
            if m != j:
                num = num * diff[:, m]
                den = den * (tn[:, j] - tn[:, m])
        weights.append(num / den)
    W = jnp.stack(weights, axis=1)  # (Q, 4)
    V = values[idx]  # (Q, 4, ...)
    return jnp.einsum("qj,qj...->q...", W, V)


def interp_arc_length(grid, positions, s_query):
    """Linear interpolation of node positions ``(..., N, 3)`` on the reference grid ``(N,)`` [m] to
    arc lengths ``s_query (K,)`` [m] (must lie in ``[grid[0], grid[-1]]``). Returns ``(..., K, 3)``.

    Works under ``jit``/``grad``/``vmap`` in all three arguments (differentiable in ``positions``,
    ``s_query`` and ``grid``; the bracketing nodes are found by ``searchsorted``). The grid and
    the queries are checked when they are concrete; traced queries outside the grid are clamped
    to its ends.
    """
    grid = jnp.asarray(grid, dtype=float)
    s = jnp.asarray(s_query, dtype=float).reshape(-1)
    if grid.ndim != 1 or grid.shape[0] < 2:
        raise ValueError(f"grid must be a strictly increasing (N,) array with N >= 2, got shape {grid.shape}")
    if _concrete(grid):
        g = np.asarray(grid)
        if np.any(np.diff(g) <= 0) or not np.all(np.isfinite(g)):
            raise ValueError(f"grid must be a finite, strictly increasing (N,) array [m], got {g}")
        if _concrete(s):
            sq = np.asarray(s)
            tol = 1e-9 * (g[-1] - g[0])
            if np.any(~np.isfinite(sq)) or np.any(sq < g[0] - tol) or np.any(sq > g[-1] + tol):
                raise ValueError(
                    f"marker arc lengths {sq} m must lie on the rod, in [{g[0]:.6g}, {g[-1]:.6g}] m"
                )
    s = jnp.clip(s, grid[0], grid[-1])
    i = jnp.clip(jnp.searchsorted(grid, s, side="right") - 1, 0, grid.shape[0] - 2)
    w = (s - grid[i]) / (grid[i + 1] - grid[i])
    positions = jnp.asarray(positions)
    a = positions[..., i, :]
    b = positions[..., i + 1, :]
    return (1.0 - w)[:, None] * a + w[:, None] * b


def reference_arc_lengths(positions0):
    """``(N,)`` arc lengths [m] along a polyline ``(N, 3)`` (e.g. the first saved frame), a stand-in
    for the model's reference grid when none is given (exact for inextensible rods)."""
    p = np.asarray(positions0, dtype=float)
    return np.concatenate(
        [[0.0], np.cumsum(np.linalg.norm(np.diff(p, axis=0), axis=1))]
    )


def predict_markers(
    traj, times, arc_lengths, *, grid=None, time_interpolation: str = "cubic"
):
    """Simulated marker positions ``(Q, K, 3)`` [m] at ``times (Q,)`` [s] and reference
    ``arc_lengths (K,)`` [m].

    Arguments:
        traj: a :class:`~jaxrod.integrate.Trajectory` (``times (T,)``, ``positions (T, N, 3)``).
        grid: ``(N,)`` reference arc lengths of the saved nodes [m] (``model.grid()`` for a Cosserat
            model); default: the arc length along the first saved frame.

    Works under ``jit``/``grad``/``vmap`` (e.g. per-trial ``arc_lengths`` as data of an
    :class:`~jaxrod.calibrate.Objective`); see :func:`interp_arc_length` for the checks.
    """
    if grid is None:
        p0 = traj.positions[0]
        grid = jnp.concatenate([jnp.zeros(1), jnp.cumsum(jnp.linalg.norm(p0[1:] - p0[:-1], axis=1))])
    at_s = interp_arc_length(grid, traj.positions, arc_lengths)  # (T, K, 3)
    return interp_time(traj.times, at_s, times, kind=time_interpolation)


def _marker_arc_lengths(tracks: MarkerTracks, arc_lengths):
    if arc_lengths is not None:
        s = np.asarray(arc_lengths, dtype=float).reshape(-1)
    elif tracks.arc_lengths is not None:
        s = np.asarray(tracks.arc_lengths, dtype=float)
    else:
        raise ValueError(
            "marker arc lengths unknown: pass arc_lengths= or give them in the data file"
        )
    if s.shape != (tracks.n_markers,):
        raise ValueError(
            f"need one arc length per marker ({tracks.n_markers}), got {s.shape}"
        )
    return s


def marker_residuals(
    traj,
    tracks: MarkerTracks,
    *,
    arc_lengths=None,
    grid=None,
    scale=1.0,
    time_interpolation: str = "cubic",
):
    """Residuals ``(predicted - measured) / scale`` of every marker coordinate.

    Arguments:
        traj: simulated :class:`~jaxrod.integrate.Trajectory`.
        tracks: :class:`~jaxrod.calibrate.data.MarkerTracks` (times inside the simulated interval).
        arc_lengths: ``(K,)`` [m], default ``tracks.arc_lengths``.
        grid: reference arc lengths of the trajectory's nodes [m] (see :func:`predict_markers`).
        scale: measurement scale [m] (scalar or broadcastable to ``(T, K, 3)``).

    Returns:
        ``(r, mask)``, both ``(T * K * 3,)``: residuals (0 where not measured) and the bool mask.
    """
    s = _marker_arc_lengths(tracks, arc_lengths)
    pred = predict_markers(
        traj, tracks.times, s, grid=grid, time_interpolation=time_interpolation
    )
    mask = jnp.asarray(tracks.mask)
    r = jnp.where(mask, (pred - jnp.asarray(tracks.positions)) / scale, 0.0)
    return r.reshape(-1), mask.reshape(-1)


def tip_residuals(
    traj,
    tracks: MarkerTracks,
    *,
    marker=0,
    scale=1.0,
    time_interpolation: str = "cubic",
):
    """Residuals of the rod tip (the last node) against marker ``marker`` (index or name) of
    ``tracks``: ``(r, mask)``, both ``(T * 3,)``, as :func:`marker_residuals`."""
    k = tracks.marker(marker) if isinstance(marker, str) else int(marker)
    if not 0 <= k < tracks.n_markers:
        raise ValueError(
            f"marker index {k} out of range for {tracks.n_markers} markers"
        )
    pred = interp_time(
        traj.times, traj.positions[:, -1, :], tracks.times, kind=time_interpolation
    )
    mask = jnp.asarray(tracks.mask)[:, k, :]
    r = jnp.where(mask, (pred - jnp.asarray(tracks.positions)[:, k, :]) / scale, 0.0)
    return r.reshape(-1), mask.reshape(-1)


def block_index(n_frames: int, width: int) -> np.ndarray:
    """``(T,)`` block number of every frame for blocks of ``width`` consecutive frames (``width``
    1 gives ``arange(T)``: no blocks). Passed to :func:`block_residuals` as ``index=``, the block
    size is data rather than program structure, so one compiled program serves every width."""
    width = int(width)
    if width < 1:
        raise ValueError(f"block width must be >= 1 frame, got {width}")
    return np.arange(int(n_frames)) // width


def block_residuals(r, mask, width: int | None = None, *, index=None):
    """Low-pass observation operator: normalised sums of residuals over blocks of ``width``
    consecutive frames, ``r_b = sum(m r) / sqrt(sum(m))`` per block and channel.

    Prediction and data pass through the same linear operator, so nothing is biased; a block of
    ``width`` frames spanning one period of an oscillation removes it completely (e.g. a rod's
    second bending mode when only the first is modelled accurately), while slower motion passes
    (a mode at ``f`` keeps ``sinc(f width dt)`` of its amplitude). White noise of standard
    deviation ``sigma`` per frame stays white with ``sigma`` per block, so the noise estimate of
    :func:`~jaxrod.calibrate.identify.identify` keeps its meaning.

    Arguments:
        r: ``(T, ...)`` residuals (0 where not measured); mask: ``(T, ...)`` bool.
        width: frames per block (the last, partial block is kept); or
        index: ``(T,)`` block number of every frame (:func:`block_index`), may be traced.

    Returns:
        ``(r_b, mask_b)`` of shape ``(ceil(T / width), ...)``, or ``(T, ...)`` with ``index``
        (rows past the last block are unmeasured zeros); a block is measured if any of its
        frames is.
    """
    r = jnp.asarray(r)
    m = jnp.asarray(mask, bool)
    T = r.shape[0]
    if (width is None) == (index is None):
        raise ValueError("give exactly one of width= and index=")
    n_out = T if width is None else -(-T // int(width))
    if index is None:
        index = block_index(T, width)
    rb = jax.ops.segment_sum(jnp.where(m, r, 0.0), index, num_segments=n_out)
    count = jax.ops.segment_sum(m.astype(r.dtype), index, num_segments=n_out)
    mb = count > 0
    return jnp.where(mb, rb / jnp.sqrt(jnp.maximum(count, 1.0)), 0.0), mb


def robust_rho(r, kind: str = "l2", delta: float = 1.0):
    """Elementwise ``rho(r)`` of the loss ``kind`` (``"l2"``, ``"huber"``, ``"cauchy"``) with
    threshold ``delta`` (in residual units)."""
    if kind not in ROBUST_KINDS:
        raise ValueError(
            f"robust loss kind must be one of {ROBUST_KINDS}, got {kind!r}"
        )
    if _concrete(delta) and not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"robust delta must be a finite number > 0, got {delta}")
    r = jnp.asarray(r)
    if kind == "l2":
        return 0.5 * r**2
    if kind == "huber":
        a = jnp.abs(r)
        return jnp.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta))
    return 0.5 * delta**2 * jnp.log1p((r / delta) ** 2)


def robust_loss(r, mask=None, *, kind: str = "l2", delta: float = 1.0):
    """Mean of ``robust_rho(r)`` over measured entries (``mask`` True; all when ``None``)."""
    rho = robust_rho(r, kind, delta)
    if mask is None:
        return jnp.mean(rho)
    mask = jnp.asarray(mask)
    return jnp.sum(jnp.where(mask, rho, 0.0)) / jnp.maximum(jnp.sum(mask), 1)


def marker_loss(
    traj,
    tracks: MarkerTracks,
    *,
    arc_lengths=None,
    grid=None,
    scale=1.0,
    robust: str = "l2",
    delta: float = 1.0,
    time_interpolation: str = "cubic",
):
    """Scalar loss of :func:`marker_residuals` (see :func:`robust_loss`)."""
    r, m = marker_residuals(
        traj,
        tracks,
        arc_lengths=arc_lengths,
        grid=grid,
        scale=scale,
        time_interpolation=time_interpolation,
    )
    return robust_loss(r, m, kind=robust, delta=delta)


def tip_loss(
    traj,
    tracks: MarkerTracks,
    *,
    marker=0,
    scale=1.0,
    robust: str = "l2",
    delta: float = 1.0,
    time_interpolation: str = "cubic",
):
    """Scalar loss of :func:`tip_residuals` (see :func:`robust_loss`)."""
    r, m = tip_residuals(
        traj, tracks, marker=marker, scale=scale, time_interpolation=time_interpolation
    )
    return robust_loss(r, m, kind=robust, delta=delta)
