"""Figures of robot runs: a parallel robot's plate (:func:`plot_plate_trajectory`) and a tendon
robot's inputs (:func:`plot_tendon_robot`). Matplotlib; drawn by the command line, never by the
scenes that build the robots."""

from __future__ import annotations

import numpy as np

from .rods import _legend_outside, _new_figure, _save, _wrap

__all__ = ["plot_plate_trajectory", "plot_tendon_robot"]


def plot_plate_trajectory(traj, path=None, title=None, *, actuated_s=None, dpi=110):
    """Summary of a parallel-robot run (:class:`~jaxrod.models.cosserat.parallel.ParallelTrajectory`):
    (1) plate centre displacement x, y, z [mm] vs time [s], (2) plate tilt (angle of its normal
    from ``+z``) [deg] vs time, (3) the plate centre's path in the x-z plane [mm], the actuated
    part (``t <= actuated_s`` [s]) and the free part in different colours. Returns the figure."""
    times = np.asarray(traj.times, dtype=float)
    p = np.asarray(traj.plate_position, dtype=float)
    tilt = np.degrees(np.asarray(traj.tilt, dtype=float))
    d = (p - p[0]) * 1e3
    fig = _new_figure((13, 4.0))
    axs = fig.subplots(1, 3)
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
    if title:
        fig.suptitle(_wrap(title, 13, 11), fontsize=11)
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
