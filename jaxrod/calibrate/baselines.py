"""Model-free baselines that every real-data error table should show beside a fitted model.

A fitted physical model's held-out error means little on its own: it has to beat what a model with
no physics at all achieves on the same samples, fitted on the same training data. Three kinds here
(NumPy only, no simulation, no compilation):

* :func:`constant_baseline`: predict the mean of the training targets, whatever the input;
* :func:`linear_map_baseline`: least squares ``y = W [u, 1]`` from the inputs ``u`` (for example the
  chamber pressures) to the targets ``y`` (for example the tip position), no dynamics;
* :func:`chord_extrapolation`: continue the chord between the last two measured points of a curve
  (for example the last two tags before a held-out tip tag) by a given length, or by its own.

Both fitted baselines see **only** the training samples handed to them: they return a predictor
that is then evaluated on held-out inputs. Nothing is normalised with statistics of the data (no
scale is estimated from any window); pass inputs in sensible units instead (bar, not Pa).

:func:`mean_distance` is the metric of the real-data tables (TMTDyn's "Err": the mean over samples
of the Euclidean distance between the predicted and the measured point) and :func:`window_error`
applies it to a predictor over selected rows.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = [
    "chord_extrapolation",
    "constant_baseline",
    "linear_map_baseline",
    "mean_distance",
    "window_error",
]


def _targets(train_y, name="train_y") -> np.ndarray:
    y = np.asarray(train_y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] < 1:
        raise ValueError(f"{name} must be (K, D) with K >= 1 samples, got shape {np.shape(train_y)}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} holds non-finite values")
    return y


def constant_baseline(train_y) -> tuple[Callable, np.ndarray]:
    """The constant predictor: the mean of the training targets ``train_y (K, D)``.

    Returns ``(predict, mean)``: ``predict(u)`` gives ``(len(u), D)`` copies of ``mean (D,)`` for
    any inputs ``u`` (only their number of rows is used; an int is taken as that number).
    """
    mean = _targets(train_y).mean(axis=0)

    def predict(u):
        n = int(u) if np.isscalar(u) else len(u)
        return np.broadcast_to(mean, (n, mean.size)).copy()

    return predict, mean


def linear_map_baseline(train_u, train_y) -> tuple[Callable, np.ndarray]:
    """Least-squares linear map with offset, ``y = W [u, 1]``, fitted on the training samples only.

    Args:
        train_u: ``(K, M)`` training inputs (one row per sample; ``(K,)`` for one input).
        train_y: ``(K, D)`` training targets, same ``K``.

    Returns ``(predict, W)``: ``W (D, M + 1)``, last column the offset; ``predict(u)`` maps
    ``(N, M)`` inputs to ``(N, D)`` predictions. ``numpy.linalg.lstsq`` (minimum-norm solution if
    the training inputs are rank deficient, e.g. an input that never changes in training).
    """
    u = _targets(train_u, "train_u")
    y = _targets(train_y)
    if u.shape[0] != y.shape[0]:
        raise ValueError(f"train_u has {u.shape[0]} samples, train_y {y.shape[0]}")
    X = np.concatenate([u, np.ones((u.shape[0], 1))], axis=1)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    W = coef.T  # (D, M + 1)
    m = u.shape[1]

    def predict(inputs):
        x = np.asarray(inputs, dtype=float)
        if x.ndim == 1:
            x = x[:, None] if m == 1 else x[None, :]
        if x.shape[-1] != m:
            raise ValueError(f"linear map fitted on {m} inputs, given {x.shape[-1]}")
        return x @ W[:, :m].T + W[:, m]

    return predict, W


def chord_extrapolation(previous, last, length=None) -> np.ndarray:
    """Continue the chord ``previous -> last`` beyond ``last``: ``last + d * (last - previous) /
    |last - previous|`` with ``d = length`` (scalar or per row), or ``|last - previous|`` (the
    chord's own length) when ``length`` is ``None``. Points ``(..., D)``; no fitting at all."""
    a = np.asarray(previous, dtype=float)
    b = np.asarray(last, dtype=float)
    c = b - a
    if length is None:
        return b + c
    n = np.linalg.norm(c, axis=-1, keepdims=True)
    d = np.asarray(length, dtype=float)
    return b + c / n * (d[..., None] if d.ndim else d)


def mean_distance(predicted, measured) -> float:
    """Mean over samples of the Euclidean distance between ``predicted`` and ``measured`` points
    ``(K, D)`` (TMTDyn's tip error; the soft limb's tip error), in their unit."""
    p = np.asarray(predicted, dtype=float)
    m = np.asarray(measured, dtype=float)
    if p.shape != m.shape or p.ndim != 2:
        raise ValueError(f"predicted and measured must both be (K, D), got {p.shape} and {m.shape}")
    return float(np.mean(np.linalg.norm(p - m, axis=1)))


def window_error(predict, inputs, targets, rows=None) -> float:
    """:func:`mean_distance` of ``predict(inputs[rows])`` against ``targets[rows]`` (all rows when
    ``rows`` is ``None``): a baseline's error over one evaluation window or set of times."""
    u = np.asarray(inputs, dtype=float)
    y = np.asarray(targets, dtype=float)
    if rows is not None:
        rows = np.asarray(rows)
        u, y = u[rows], y[rows]
    return mean_distance(predict(u), y)
