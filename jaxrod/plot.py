"""Figures and animations of rod trajectories and static shapes (matplotlib, Agg backend).

The functions build :class:`matplotlib.figure.Figure` objects on an Agg canvas directly, without
``pyplot``: nothing is shown, no global backend is switched and no figure is kept alive by
pyplot's figure manager, so they are safe on headless machines, in tests and in loops. In a
notebook, display the returned figure with ``IPython.display.display(fig)`` (after
``%matplotlib inline``) or open the saved file.

* :func:`plot_trajectory`: tip displacement vs time [mm] and the initial/final centerline.
* :func:`plot_static`: a static centerline (x-z projection and 3-D view).
* :func:`animate_trajectory`: a GIF of the centerline in the x-z plane.

Positions are in metres; shapes are drawn in metres, tip displacements in millimetres.
"""

from __future__ import annotations

import os

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["animate_trajectory", "plot_static", "plot_trajectory"]


def _new_figure(figsize):
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path, dpi=110):
    if path is not None:
        d = os.path.dirname(os.fspath(path))
        if d:
            os.makedirs(d, exist_ok=True)
        fig.savefig(path, dpi=dpi)


def _limits(points, margin=0.05):
    """Axis limits ``(lo, hi)`` per column of ``points (..., k)`` with a relative margin."""
    p = np.asarray(points, dtype=float).reshape(-1, points.shape[-1])
    lo, hi = p.min(axis=0), p.max(axis=0)
    span = max(float(np.max(hi - lo)), 1e-12)
    return lo - margin * span, hi + margin * span


def _fit_aspect(lo, hi, ratio):
    """Grow the smaller of the two spans of ``lo, hi (2,)`` so that width / height = ``ratio``."""
    c, w, h = 0.5 * (lo + hi), hi[0] - lo[0], hi[1] - lo[1]
    w, h = max(w, h * ratio), max(h, w / ratio)
    return c - 0.5 * np.array([w, h]), c + 0.5 * np.array([w, h])


def _shape_xz(ax, curves, labels, styles, title=None):
    for c, lab, st in zip(curves, labels, styles):
        ax.plot(c[:, 0], c[:, 2], st, label=lab, lw=1.8, ms=3)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")


def _shape_3d(ax, curves, styles):
    for c, st in zip(curves, styles):
        ax.plot(c[:, 0], c[:, 1], c[:, 2], st, lw=1.5)
    allp = np.concatenate(curves, axis=0)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    mid, half = 0.5 * (lo + hi), 0.5 * max(float(np.max(hi - lo)), 1e-12)
    ax.set_xlim(mid[0] - half, mid[0] + half)
    ax.set_ylim(mid[1] - half, mid[1] + half)
    ax.set_zlim(mid[2] - half, mid[2] + half)
    ax.set_box_aspect((1, 1, 1), zoom=0.85)
    ax.set_xlabel("x [m]", fontsize=8)
    ax.set_ylabel("y [m]", fontsize=8)
    ax.set_zlabel("z [m]", fontsize=8)
    ax.tick_params(labelsize=6)
    ax.set_title("3-D view", fontsize=10)


def plot_trajectory(traj, path=None, title=None, *, exaggeration=1.0, dpi=110):
    """Summary figure of a :class:`~jaxrod.Trajectory`.

    Panels: (1) tip displacement ``tip(t) - tip(0)`` components x, y, z [mm] vs time [s];
    (2) the initial (dashed) and final (solid) centerline projected on the x-z plane [m], equal
    aspect; (3) a small 3-D view of both.

    Args:
        traj: a :class:`~jaxrod.Trajectory` (or any object with ``times (T,)`` and
            ``positions (T, N, 3)``).
        path: if given, the figure is also saved there (format from the extension).
        title: figure title.
        exaggeration: the final shape is drawn with its displacement from the initial shape
            multiplied by this factor (for small vibrations; 1 draws the true shape).

    Returns:
        the :class:`matplotlib.figure.Figure`.
    """
    times = np.asarray(traj.times, dtype=float)
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3 or pos.shape[0] != times.shape[0]:
        raise ValueError(f"expected positions (T, N, 3) matching times (T,), got {pos.shape} and {times.shape}")
    tip = pos[:, -1, :]
    disp_mm = (tip - tip[0]) * 1e3

    fig = _new_figure((13, 4.2))
    gs = fig.add_gridspec(1, 3, width_ratios=[1.25, 1.25, 0.8])
    ax_t = fig.add_subplot(gs[0])
    for k, (name, col) in enumerate(zip("xyz", ("C0", "C1", "C2"))):
        ax_t.plot(times, disp_mm[:, k], color=col, lw=1.5, label=f"$u_{name}$")
    ax_t.set_xlabel("time [s]")
    ax_t.set_ylabel("tip displacement [mm]")
    ax_t.set_title("tip displacement from t = %.3g s" % times[0], fontsize=10)
    ax_t.grid(True, alpha=0.3)
    ax_t.legend(fontsize=8)

    curves = [pos[0], pos[0] + float(exaggeration) * (pos[-1] - pos[0])]
    ax_s = fig.add_subplot(gs[1])
    note = "" if exaggeration == 1.0 else f" (displacement x{exaggeration:g})"
    _shape_xz(
        ax_s, curves, [f"t = {times[0]:.3g} s", f"t = {times[-1]:.3g} s{note}"], ["k--", "C3-"],
        "centerline, x-z projection",
    )
    ax_3 = fig.add_subplot(gs[2], projection="3d")
    _shape_3d(ax_3, curves, ["k--", "C3-"])
    if title:
        fig.suptitle(title, fontsize=11)
    _save(fig, path, dpi)
    return fig


def plot_static(positions, path=None, title=None, *, reference_positions=None, labels=None, dpi=110):
    """Figure of a static centerline: x-z projection (equal aspect) and a 3-D view.

    Args:
        positions: ``(N, 3)`` node positions [m] (e.g. ``state.q[:, :3]``).
        path: optional file to save the figure to.
        title: figure title.
        reference_positions: optional ``(N', 3)`` shape drawn dashed (e.g. the rest shape).
        labels: ``(label, reference_label)`` legend entries.

    Returns:
        the :class:`matplotlib.figure.Figure`.
    """
    p = np.asarray(positions, dtype=float)
    if p.ndim != 2 or p.shape[1] < 3:
        raise ValueError(f"positions must be (N, 3), got {p.shape}")
    p = p[:, :3]
    labels = labels or ("equilibrium", "rest")
    curves, labs, styles = [p], [labels[0]], ["C3-o"]
    if reference_positions is not None:
        r = np.asarray(reference_positions, dtype=float)[:, :3]
        curves, labs, styles = [r, p], [labels[1], labels[0]], ["k--", "C3-o"]
    fig = _new_figure((10, 4.2))
    gs = fig.add_gridspec(1, 2, width_ratios=[1.5, 1.0])
    _shape_xz(fig.add_subplot(gs[0]), curves, labs, styles, "centerline, x-z projection")
    _shape_3d(fig.add_subplot(gs[1], projection="3d"), curves, [s.replace("-o", "-") for s in styles])
    if title:
        fig.suptitle(title, fontsize=11)
    _save(fig, path, dpi)
    return fig


def animate_trajectory(traj, path, fps=20, max_frames=150, *, title=None, exaggeration=1.0, dpi=80):
    """Write a GIF of the centerline moving in the x-z plane.

    Frames are subsampled evenly to at most ``max_frames`` (the first and last saved frames are
    always included); axis limits are fixed from the whole trajectory and the aspect is equal.
    The title shows the simulated time.

    Args:
        traj: a :class:`~jaxrod.Trajectory` (``times (T,)``, ``positions (T, N, 3)``).
        path: output ``.gif`` file.
        fps: frames per second of the GIF.
        max_frames: largest number of frames written.
        title: optional prefix of the per-frame title.
        exaggeration: displacements from the initial shape are multiplied by this factor
            (for small vibrations; 1 draws the true shape).

    Returns:
        ``path``.
    """
    from matplotlib.animation import PillowWriter

    if int(max_frames) < 1 or not fps > 0:
        raise ValueError(f"need max_frames >= 1 and fps > 0, got {max_frames}, {fps}")
    times = np.asarray(traj.times, dtype=float)
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[0] != times.shape[0]:
        raise ValueError(f"expected positions (T, N, 3) matching times (T,), got {pos.shape} and {times.shape}")
    idx = np.unique(np.round(np.linspace(0, len(times) - 1, min(len(times), int(max_frames)))).astype(int))
    if exaggeration != 1.0:
        pos = pos[:1] + float(exaggeration) * (pos - pos[:1])
    lo, hi = _fit_aspect(*_limits(pos[..., [0, 2]]), 1.45)

    fig = _new_figure((6, 4))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(pos[0, :, 0], pos[0, :, 2], "k--", lw=1, alpha=0.5, label="initial")
    (line,) = ax.plot([], [], "C3-o", lw=2, ms=2.5, label="centerline")
    (tip,) = ax.plot([], [], "C0o", ms=5)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]" if exaggeration == 1.0 else f"z [m] (displacement x{exaggeration:g})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    prefix = f"{title}: " if title else ""
    ttl = ax.set_title("")

    # Lay the figure out once, then freeze it: the per-frame redraw is what PillowWriter pays for.
    ttl.set_text(f"{prefix}t = {times[-1]:.3f} s")
    fig.canvas.draw()
    fig.set_layout_engine("none")
    d = os.path.dirname(os.fspath(path))
    if d:
        os.makedirs(d, exist_ok=True)
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, os.fspath(path), dpi=dpi):
        for i in idx:
            line.set_data(pos[i, :, 0], pos[i, :, 2])
            tip.set_data(pos[i, -1:, 0], pos[i, -1:, 2])
            ttl.set_text(f"{prefix}t = {times[i]:.3f} s")
            writer.grab_frame()
    return path

