"""Figure of a rigid-body or hybrid run from a model file: the paths of the body centres (x-z
view), the rods of a hybrid system drawn at a few instants, and the centre coordinates against
time. User-facing (the command line), imports matplotlib."""

from __future__ import annotations

__all__ = ["plot_bodies"]


def plot_bodies(traj, names, path, title=None, model=None, snapshots=6):
    """Save a figure of ``traj`` to ``path``: the body centres' x-z paths and x, y, z against time;
    for a :class:`~jaxrod.system.HybridSystem` (``model``) also each rod's shape at ``snapshots``
    evenly spaced saved times (light to dark) in the x-z panel. Returns the figure.

    ``traj.positions`` is ``(T, n_bodies, 3)`` [m] for a multibody system; a hybrid system's
    positions hold its rods' nodes first and the bodies after them, which ``model`` tells apart
    (without it the first ``len(names)`` rows are taken as the bodies)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ..system import HybridSystem

    t = np.asarray(traj.times)
    pos = np.asarray(traj.positions)
    rods = []
    if isinstance(model, HybridSystem):
        rods = [np.asarray(model.rod_positions(pos, i)) for i in range(len(model.rods))]
        pos = np.asarray(model.body_positions(pos))
    if pos.shape[1] != len(names):
        raise ValueError(f"names: {len(names)} body names for {pos.shape[1]} bodies in the trajectory")
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.5))
    valid = np.ones(len(t), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    shots = np.unique(np.linspace(0, int(np.flatnonzero(valid)[-1]), max(int(snapshots), 1)).round().astype(int))
    for i, r in enumerate(rods):
        for j, k in enumerate(shots):
            shade = 0.25 + 0.75 * (j + 1) / len(shots)
            ax0.plot(r[k, :, 0], r[k, :, 2], "-", color=(0.2, 0.3, 0.6, shade), lw=1.5,
                     label=f"rod {i} at t = {t[shots[0]]:g} ... {t[shots[-1]]:g} s" if j == len(shots) - 1 else None)
    for k, name in enumerate(names):
        ax0.plot(pos[:, k, 0], pos[:, k, 2], lw=1, label=name)
        ax0.plot(pos[0, k, 0], pos[0, k, 2], "o", color=ax0.lines[-1].get_color(), ms=4)
        for axis, style in zip(range(3), ("-", ":", "--")):
            ax1.plot(t, pos[:, k, axis], style, lw=1, label=f"{name} {'xyz'[axis]}")
    what = "centre paths" + (f" and rods at {len(shots)} times" if rods else "")
    ax0.set(xlabel="x [m]", ylabel="z [m]", title=f"{what} (x-z; dots: start)", aspect="equal")
    ax1.set(xlabel="t [s]", ylabel="position [m]", title="centre coordinates")
    ax0.legend(fontsize=8)
    ax1.legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig
