"""Figures of a calibration: fitted simulation against the data, and the loss history.

Built on an Agg canvas without ``pyplot`` (no global backend switch, nothing shown), like
:mod:`jaxrod.plot`. Positions are plotted in millimetres, times in seconds.
"""

from __future__ import annotations

import os

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["plot_fit", "plot_loss_history"]


def _new_figure(figsize):
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path):
    path = os.fspath(path)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def _loss_axes(ax, history, label=None):
    h = np.asarray(history, dtype=float)
    ax.semilogy(np.arange(h.size), np.where(h > 0, h, np.nan), "o-", ms=3, label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss")
    ax.grid(True, which="both", alpha=0.3)


def plot_fit(
    path,
    data_times,
    data,
    model_times,
    model,
    *,
    labels=None,
    mask=None,
    start=None,
    residuals=None,
    history=None,
    title=None,
    synthetic=False,
):
    """Save a figure of data vs fitted model (one panel per channel), residuals and loss history.

    Arguments:
        path: output image path (``.png``/``.pdf``/``.svg``); parent folders are created.
        data_times: ``(T,)`` [s]; data: ``(T, C)`` measured channels [m] (or ``(T,)``).
        model_times: ``(S,)`` [s]; model: ``(S, C)`` fitted simulation [m].
        labels: ``C`` channel names; mask: ``(T, C)`` bool (unmeasured points are not drawn).
        start: optional ``(S, C)`` simulation at the start values (drawn dashed).
        residuals: optional ``(T, C)`` data minus fit at the data times [m] (default: the model
            linearly interpolated to the data times, which adds its interpolation error).
        history: optional loss history (adds a panel).
        title: figure title; synthetic: label the data as synthetic.

    Returns:
        the path written.
    """
    td = np.asarray(data_times, dtype=float)
    y = np.asarray(data, dtype=float)
    y = y[:, None] if y.ndim == 1 else y
    tm = np.asarray(model_times, dtype=float)
    ym = np.asarray(model, dtype=float)
    ym = ym[:, None] if ym.ndim == 1 else ym
    C = y.shape[1]
    if ym.shape[1] != C:
        raise ValueError(f"data has {C} channels but model has {ym.shape[1]}")
    mask = (
        np.ones(y.shape, bool)
        if mask is None
        else np.asarray(mask, bool).reshape(y.shape)
    )
    labels = [f"channel {c}" for c in range(C)] if labels is None else list(labels)
    ys = None if start is None else np.asarray(start, dtype=float).reshape(ym.shape)
    n_rows = C + 1 + (history is not None)
    fig = _new_figure((9, 2.3 * n_rows))
    axes = fig.subplots(n_rows, 1, squeeze=False)[:, 0]
    dlabel = "data (SYNTHETIC)" if synthetic else "data"
    for c in range(C):
        ax = axes[c]
        m = mask[:, c]
        ax.plot(td[m], 1e3 * y[m, c], ".", ms=2, color="0.4", label=dlabel)
        if ys is not None:
            ax.plot(tm, 1e3 * ys[:, c], "--", lw=1, color="tab:orange", label="start")
        ax.plot(tm, 1e3 * ym[:, c], "-", lw=1.2, color="tab:blue", label="fit")
        ax.set_ylabel(f"{labels[c]} [mm]")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    ax = axes[C]
    res = (
        None
        if residuals is None
        else np.asarray(residuals, dtype=float).reshape(y.shape)
    )
    for c in range(C):
        m = mask[:, c]
        rc = y[m, c] - np.interp(td[m], tm, ym[:, c]) if res is None else res[m, c]
        ax.plot(td[m], 1e3 * rc, ".", ms=2, label=labels[c])
    ax.set_ylabel("data - fit [mm]")
    ax.set_xlabel("time [s]")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    if history is not None:
        _loss_axes(axes[C + 1], history)
    if title:
        fig.suptitle(
            title
            + (
                "  [SYNTHETIC DATA]"
                if synthetic and "SYNTHETIC" not in title.upper()
                else ""
            )
        )
    return _save(fig, path)


def plot_loss_history(path, history, *, title=None):
    """Save the loss history (log scale) of a fit; returns the path."""
    fig = _new_figure((6, 3.5))
    ax = fig.subplots()
    _loss_axes(ax, history)
    if title:
        ax.set_title(title)
    return _save(fig, path)
