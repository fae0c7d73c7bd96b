"""Figures of robot runs: a parallel robot's plate and legs (:func:`plot_plate_trajectory`), a
tendon robot's inputs (:func:`plot_tendon_robot`) and its tendons' paths (:func:`tendon_paths`,
drawn on the robot by :func:`~jaxrod.plot.plot_trajectory` and
:func:`~jaxrod.plot.animate_trajectory`). Matplotlib; drawn by the command line, never by the
scenes that build the robots."""

from __future__ import annotations

import numpy as np

from .rods import _legend_outside, _new_figure, _save, _wrap
from .tendons import tendon_paths

__all__ = ["plot_plate_trajectory", "plot_tendon_robot", "tendon_paths"]


def _plate_parts(pos):
    """``(legs (T, 6, N, 3), plate corners (T, 6, 3) in order around the plate)`` of a
    Stewart-Gough trajectory's positions ``(T, 6 N + 1, 3)`` (legs, then the plate centre)."""
    n = (pos.shape[1] - 1) // 6
    legs = pos[:, : 6 * n].reshape(pos.shape[0], 6, n, 3)
    ends = legs[:, :, -1]
    rel = ends[0] - pos[0, -1]
    order = np.argsort(np.arctan2(rel[:, 1], rel[:, 0]))
    return legs, ends[:, order]


def plot_plate_trajectory(traj, path=None, title=None, *, actuated_s=None, dpi=110):
    """Summary of a parallel-robot run (:class:`~jaxrod.models.cosserat.parallel.ParallelTrajectory`):
    (1) plate centre displacement x, y, z [mm] vs time [s], (2) plate tilt (angle of its normal
    from ``+z``) [deg] vs time, (3) the plate centre's path in the x-z plane [mm], the actuated
    part (``t <= actuated_s`` [s]) and the free part in different colours, (4) the robot in 3-D
    (true scale, equal aspect): the six legs and the plate (the hexagon through the leg ends) at
    the start (grey, dashed) and at the last valid saved time, with the plate centre's path.
    Returns the figure; ``fig.robot3d`` holds the drawn 3-D artists (``legs``: 6 lines,
    ``plate``: the plate polygon and ``corners`` ``(6, 3)`` its corners [m], at the last time)."""
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    times = np.asarray(traj.times, dtype=float)
    p = np.asarray(traj.plate_position, dtype=float)
    tilt = np.degrees(np.asarray(traj.tilt, dtype=float))
    d = (p - p[0]) * 1e3
    fig = _new_figure((17, 4.2))
    gs = fig.add_gridspec(1, 4, width_ratios=[1, 1, 1, 1.1])
    axs = [fig.add_subplot(gs[k]) for k in range(3)]
    for k, name in enumerate("xyz"):
        axs[0].plot(times, d[:, k], lw=1.3, label=f"$p_{name}$")
    axs[0].set(xlabel="time [s]", ylabel="plate displacement [mm]")
    _legend_outside(axs[0], fontsize=8)
    axs[1].plot(times, tilt, color="C3", lw=1.3)
    axs[1].set(xlabel="time [s]", ylabel="plate tilt [deg]")
    act = np.ones_like(times, bool) if actuated_s is None else times <= float(actuated_s) + 1e-12
    axs[2].plot(p[act, 0] * 1e3, p[act, 2] * 1e3, color="C0", lw=1.3, label="actuated")
    if not act.all():
        free = np.flatnonzero(~act)
        seg = np.concatenate([free[:1] - 1, free])
        axs[2].plot(p[seg, 0] * 1e3, p[seg, 2] * 1e3, color="C1", lw=1.0, label="free")
    axs[2].set(xlabel="x [mm]", ylabel="z [mm]", title="plate centre path")
    _legend_outside(axs[2], fontsize=8)
    for ax in axs:
        ax.grid(True, alpha=0.3)
    pos = np.asarray(traj.positions, dtype=float)
    valid = np.all(np.isfinite(pos), axis=(1, 2))
    last = int(np.flatnonzero(valid)[-1]) if valid.any() else 0
    legs, corners = _plate_parts(pos)
    ax3 = fig.add_subplot(gs[3], projection="3d")
    for leg in legs[0]:
        ax3.plot(leg[:, 0], leg[:, 1], leg[:, 2], "--", color="0.6", lw=0.8)
    ax3.add_collection3d(Poly3DCollection([corners[0]], facecolor="0.85", edgecolor="0.6", alpha=0.3))
    leg_lines = [ax3.plot(leg[:, 0], leg[:, 1], leg[:, 2], "-", color="C0", lw=1.6,
                          label="legs" if i == 0 else None)[0] for i, leg in enumerate(legs[last])]
    plate = Poly3DCollection([corners[last]], facecolor="C1", edgecolor="k", alpha=0.5, label="plate")
    ax3.add_collection3d(plate)
    ax3.plot(legs[last, :, 0, 0], legs[last, :, 0, 1], legs[last, :, 0, 2], "ks", ms=4, label="base holes")
    ax3.plot(p[: last + 1, 0], p[: last + 1, 1], p[: last + 1, 2], "-", color="C3", lw=1, label="plate centre")
    pts = pos[: last + 1].reshape(-1, 3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    c, r = 0.5 * (lo + hi), 0.55 * float(np.max(hi - lo))
    ax3.set(xlim=(c[0] - r, c[0] + r), ylim=(c[1] - r, c[1] + r), zlim=(c[2] - r, c[2] + r),
            xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
    ax3.set_box_aspect((1, 1, 1))
    ax3.set_title(f"robot at t = {times[last]:.3g} s (grey: start)", fontsize=10)
    ax3.legend(fontsize=7, loc="upper left")
    fig.robot3d = {"legs": leg_lines, "plate": plate, "corners": corners[last]}
    if title:
        fig.suptitle(_wrap(title, 17, 11), fontsize=11)
    _save(fig, path, dpi)
    return fig


def plot_tendon_robot(traj, model, path, title=None):
    """Second figure of a tendon robot's run, saved next to ``path`` as ``<stem>-tendons<ext>``:
    the tip path (projections on the x-z and x-y planes [m]), the tendon tensions [N] and the
    motor displacements [mm] (displacement-controlled tendons) against time [s]. Returns its path."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = np.asarray(traj.times)
    tip = np.asarray(traj.positions[:, -1, :])
    tens, disp = (np.asarray(a) for a in model.tendon_histories(traj.times, traj.v))
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    ax[0].plot(tip[:, 0], tip[:, 2], label="x-z")
    ax[0].plot(tip[:, 0], tip[:, 1], label="x-y")
    ax[0].plot(tip[:1, 0], tip[:1, 2], "ko", ms=4)
    ax[0].set(xlabel="x [m]", ylabel="z or y [m]", title="tip path")
    for k in range(tens.shape[1]):
        ax[1].plot(times, tens[:, k], label=f"tendon {k}")
        if np.all(np.isfinite(disp[:, k])):
            ax[2].plot(times, 1e3 * disp[:, k], label=f"tendon {k}")
    ax[1].set(xlabel="time [s]", ylabel="tension [N]", title="tensions")
    ax[2].set(xlabel="time [s]", ylabel="motor displacement [mm]", title="displacement control")
    for a in ax:
        a.grid(True, alpha=0.3)
        if a.lines:
            a.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    stem, ext = os.path.splitext(path)
    out = f"{stem}-tendons{ext or '.png'}"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
