"""Figures of a rigid-body or hybrid run from a model file: the paths of the body centres (x-z
view), the rods of a hybrid system drawn at a few instants, the centre coordinates against time
and, given the model, the whole system in 3-D at the last saved instant (bodies as boxes from
their inertia, joints, rods, attachments: :mod:`jaxrod.plot.scene3d`); and a GIF of the run (the
3-D view beside the x-z view: rods as lines, bodies as dots with their trails). User-facing (the
command line), imports matplotlib."""

from __future__ import annotations

__all__ = ["animate_bodies", "plot_bodies"]


def plot_bodies(traj, names, path, title=None, model=None, snapshots=6):
    """Save a figure of ``traj`` to ``path``: the body centres' x-z paths and x, y, z against time;
    for a :class:`~jaxrod.system.HybridSystem` (``model``) also each rod's shape at ``snapshots``
    evenly spaced saved times (light to dark) in the x-z panel. Given ``model`` (a multibody,
    hybrid or contact system) a third panel draws the system in 3-D at the last valid saved time
    (:class:`~jaxrod.plot.scene3d.Scene3D`: boxes, joints, rods, attachments, paths; equal
    aspect), reachable as ``fig.scene3d``. Returns the figure.

    ``traj.positions`` is ``(T, n_bodies, 3)`` [m] for a multibody system; a hybrid system's
    positions hold its rods' nodes first and the bodies after them, which ``model`` tells apart
    (without it the first ``len(names)`` rows are taken as the bodies)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    t = np.asarray(traj.times)
    pos, rods = _split(traj, names, model)
    valid = np.ones(len(t), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    three_d = model is not None
    fig = plt.figure(figsize=(16.5 if three_d else 11, 4.8))
    ax0 = fig.add_subplot(1, 3 if three_d else 2, 1)
    ax1 = fig.add_subplot(1, 3 if three_d else 2, 2)
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
    xz = np.concatenate([pos.reshape(-1, 3)] + [r[shots].reshape(-1, 3) for r in rods])[:, [0, 2]]
    xz = xz[np.all(np.isfinite(xz), axis=1)]
    if len(xz):  # a square around what is drawn: a motion along z alone keeps an x range
        c, h = 0.5 * (xz.min(axis=0) + xz.max(axis=0)), 0.55 * max(float(np.max(np.ptp(xz, axis=0))), 1e-9)
        ax0.set(xlim=(c[0] - h, c[0] + h), ylim=(c[1] - h, c[1] + h))
    ax1.set(xlabel="t [s]", ylabel="position [m]", title="centre coordinates")
    ax0.legend(fontsize=8)
    ax1.legend(fontsize=7, ncol=2)
    fig.scene3d = None
    if three_d:
        from .scene3d import Scene3D, body_poses, system_layout

        last = int(np.flatnonzero(valid)[-1])
        ax2 = fig.add_subplot(1, 3, 3, projection="3d")
        x, R = body_poses(traj, model)
        scene = Scene3D(ax2, system_layout(model), x, R, np.asarray(traj.positions), valid_last=last)
        scene.update(last)
        ax2.set_title(f"3-D at t = {t[last]:g} s (boxes from the inertias)", fontsize=9)
        ax2.legend(fontsize=7, loc="upper left")
        fig.scene3d = scene
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig


def _split(traj, names, model):
    """``(body positions (T, nb, 3), [rod positions (T, N_i, 3)])`` of ``traj`` [m]."""
    import numpy as np

    from ..system import HybridSystem

    pos = np.asarray(traj.positions)
    rods = []
    if isinstance(model, HybridSystem):
        rods = [np.asarray(model.rod_positions(pos, i)) for i in range(len(model.rods))]
        pos = np.asarray(model.body_positions(pos))
    if pos.shape[1] != len(names):
        raise ValueError(f"names: {len(names)} body names for {pos.shape[1]} bodies in the trajectory")
    return pos, rods


def animate_bodies(traj, names, path, title=None, model=None, fps=20, max_frames=150, dpi=80):
    """Write a GIF of ``traj`` in the x-z plane (true scale): each rod of a hybrid ``model`` as a
    line, each body as a dot with the path it has travelled so far; given ``model``, the 3-D view
    of :class:`~jaxrod.plot.scene3d.Scene3D` (boxes, joints, rods, attachments) on the left.
    Frames are subsampled evenly to at most ``max_frames`` (first and last kept); frames after a
    failed step are not drawn. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if int(max_frames) < 1 or not fps > 0:
        raise ValueError(f"need max_frames >= 1 and fps > 0, got {max_frames}, {fps}")
    bodies, rods = _split(traj, names, model)
    t = np.asarray(traj.times)
    valid = np.ones(len(t), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    last = int(np.flatnonzero(valid)[-1])
    idx = np.unique(np.linspace(0, last, min(int(max_frames), last + 1)).round().astype(int))
    pts = np.concatenate([bodies[: last + 1].reshape(-1, 3)] + [r[: last + 1].reshape(-1, 3) for r in rods])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    half = 0.55 * max(float(np.max(hi - lo)), 1e-9)  # a square around everything: equal aspect, no sliver
    mid = 0.5 * (lo + hi)
    lo, hi, pad = mid - half, mid + half, 0.0
    scene = None
    if model is not None:
        from .scene3d import Scene3D, body_poses, system_layout

        fig = plt.figure(figsize=(11, 5))
        ax3 = fig.add_subplot(1, 2, 1, projection="3d")
        x, R = body_poses(traj, model)
        scene = Scene3D(ax3, system_layout(model), x, R, np.asarray(traj.positions), valid_last=last)
        ax = fig.add_subplot(1, 2, 2)
    else:
        fig, ax = plt.subplots(figsize=(6, 5))
    ax.set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[2] - pad, hi[2] + pad), xlabel="x [m]", ylabel="z [m]",
           aspect="equal")
    rod_lines = [ax.plot([], [], "-", color="tab:purple", lw=2)[0] for _ in rods]
    trails = [ax.plot([], [], "-", lw=0.8, alpha=0.6)[0] for _ in names]
    dots = [ax.plot([], [], "o", ms=7, color=tr.get_color(), label=n)[0] for tr, n in zip(trails, names)]
    ax.legend(fontsize=8, loc="upper right")
    frames = []
    for k in idx:
        if scene is not None:
            scene.update(k)
        for line, r in zip(rod_lines, rods):
            line.set_data(r[k, :, 0], r[k, :, 2])
        for b, (tr, dot) in enumerate(zip(trails, dots)):
            tr.set_data(bodies[: k + 1, b, 0], bodies[: k + 1, b, 2])
            dot.set_data([bodies[k, b, 0]], [bodies[k, b, 2]])
        ax.set_title(f"{title + ': ' if title else ''}t = {t[k]:.3f} s", fontsize=9)
        frames.append(canvas_frame(fig))
    plt.close(fig)
    return save_gif(frames, path, fps)


def canvas_frame(fig):
    """The figure drawn now, as an RGB :class:`PIL.Image.Image` (one GIF frame)."""
    from PIL import Image

    fig.canvas.draw()
    return Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba(), "raw", "RGBA", 0,
                            1).convert("RGB")


def save_gif(frames, path, fps):
    """Write ``frames`` (PIL images) to ``path`` as a looping GIF at ``fps`` frames/s; returns ``path``."""
    frames[0].save(str(path), save_all=True, append_images=frames[1:], duration=int(1000 / fps), loop=0)
    return path
