"""Figure of a rigid-body run from a model file: the paths of the body centres (x-z view and 3-D)
and their coordinates against time. User-facing (the command line), imports matplotlib."""

from __future__ import annotations

__all__ = ["plot_bodies"]


def plot_bodies(traj, names, path, title=None):
    """Save a figure of the body centres of ``traj`` (positions ``(T, n_bodies, 3)`` [m]) to
    ``path``: their x-z paths and x, y, z against time. Returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    t = np.asarray(traj.times)
    pos = np.asarray(traj.positions)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.5))
    for k, name in enumerate(names):
        ax0.plot(pos[:, k, 0], pos[:, k, 2], lw=1, label=name)
        ax0.plot(pos[0, k, 0], pos[0, k, 2], "o", color=ax0.lines[-1].get_color(), ms=4)
        for axis, style in zip(range(3), ("-", ":", "--")):
            ax1.plot(t, pos[:, k, axis], style, lw=1, label=f"{name} {'xyz'[axis]}")
    ax0.set(xlabel="x [m]", ylabel="z [m]", title="centre paths (x-z; dots: start)", aspect="equal")
    ax1.set(xlabel="t [s]", ylabel="position [m]", title="centre coordinates")
    ax0.legend(fontsize=8)
    ax1.legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig
