"""Figures of a set-valued contact run (:class:`~jaxrod.system.contact.ContactSystem`, a
:class:`~jaxrod.integrate.moreau.ContactTrajectory`): the bodies seen from above with the path of
one tracked body (the snake papers' figures of link 6), its coordinates against time and the number
of contacts touching; and a GIF with a top (x-y) and a side (x-z) view. Every body is drawn as the
segment through its contact-sphere centres (a snake link between its two spheres) or as a dot.
User-facing (the command line), imports matplotlib."""

from __future__ import annotations

__all__ = ["animate_contact_trajectory", "plot_contact_trajectory"]


def _body_segments(traj, model):
    """``(T, n_bodies, k, 3)`` [m]: per saved frame the contact-sphere centres of each body
    (``k`` = the most spheres on one body; bodies with fewer repeat their last, a body without any
    is its centre)."""
    import numpy as np

    from ..geometry import quat_to_rotation

    q = np.asarray(traj.q)
    x = q[..., :3]
    R = np.asarray(quat_to_rotation(q[..., 3:]))
    nb = x.shape[-2]
    body = np.asarray(getattr(model, "sphere_body", ()), int)
    local = np.asarray(getattr(model, "sphere_centre", np.zeros((0, 3))))
    per = [np.flatnonzero(body == b) for b in range(nb)]
    k = max([len(p) for p in per] + [1])
    out = np.repeat(x[:, :, None, :], k, axis=2)
    for b, idx in enumerate(per):
        for j in range(k):
            if len(idx):
                s = local[idx[min(j, len(idx) - 1)]]
                out[:, b, j] = x[:, b] + np.einsum("tij,j->ti", R[:, b], s)
    return out


def _track(traj, track, model=None):
    """``((T, 3) path [m], label)`` of body ``track`` (``None``: the mean of the body centres); the
    label is the body's name in ``model`` where it has one."""
    import numpy as np

    pos = np.asarray(traj.positions)
    if track is None:
        return pos.mean(axis=1), "centroid"
    track = int(track)
    if not 0 <= track < pos.shape[1]:
        raise ValueError(f"track must be a body index in [0, {pos.shape[1]}), got {track}")
    bodies = getattr(getattr(model, "system", None), "bodies", None)
    return pos[:, track], (bodies[track].name if bodies else f"body {track + 1}")


def _last_valid(traj):
    import numpy as np

    t = np.asarray(traj.times)
    valid = np.ones(len(t), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    return int(np.flatnonzero(valid)[-1])


def plot_contact_trajectory(traj, path, title=None, *, model=None, track=None, snapshots=5, dpi=110):
    """Save a figure of a contact run to ``path``: (left) top view, x-y [m], of the bodies at
    ``snapshots`` evenly spaced saved times (light to dark) and the path of the tracked body (start
    triangle, end circle, as the paper's Fig. 10); (middle) the tracked body's x and y [m] against
    time (Figs. 6, 7, 11); (right) the number of contacts active in each saved step.

    Args:
        traj: :class:`~jaxrod.integrate.moreau.ContactTrajectory` (``positions`` ``(T, n_bodies,
            3)``, ``q`` ``(T, n_bodies, 7)``, ``active`` ``(T, n_c)``).
        path: output file (PNG, PDF, SVG...).
        title: figure title.
        model: the :class:`~jaxrod.system.contact.ContactSystem` (draws bodies through their
            sphere centres; without it, through their centres only).
        track: index of the body whose path is drawn (the snake scenes: 5, link 6); ``None``: the
            centroid of the bodies.
        snapshots: how many body configurations to draw.
    Returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    t = np.asarray(traj.times)
    last = _last_valid(traj)
    seg = _body_segments(traj, model)
    p, label = _track(traj, track, model)
    fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(14, 4.3), gridspec_kw={"width_ratios": [1.3, 1.2, 0.8]})
    shots = np.unique(np.linspace(0, last, max(int(snapshots), 1)).round().astype(int))
    for j, k in enumerate(shots):
        shade = min(0.2 + 0.8 * (j + 1) / len(shots), 1.0)
        chain = seg[k].reshape(-1, 3)
        ax0.plot(chain[:, 0], chain[:, 1], "-", color=(0.35, 0.35, 0.35, shade), lw=2.5, solid_capstyle="round",
                 label=f"bodies at t = {', '.join(f'{t[i]:g}' for i in shots)} s" if j == len(shots) - 1 else None)
    ax0.plot(p[: last + 1, 0], p[: last + 1, 1], "-", color="tab:red", lw=1.2, label=f"{label} path")
    ax0.plot(p[0, 0], p[0, 1], "^", color="tab:red", ms=7)
    ax0.plot(p[last, 0], p[last, 1], "o", color="tab:red", ms=7)
    ax0.set(xlabel="x [m]", ylabel="y [m]", title="top view (triangle: start, circle: end)", aspect="equal")
    ax0.legend(fontsize=7, loc="best")
    ax1.plot(t[: last + 1], p[: last + 1, 0] - p[0, 0], "-", label=f"{label} x - x(0)")
    ax1.plot(t[: last + 1], p[: last + 1, 1] - p[0, 1], "--", label=f"{label} y - y(0)")
    ax1.set(xlabel="t [s]", ylabel="displacement [m]", title=f"{label} against time")
    ax1.legend(fontsize=8)
    if getattr(traj, "active", None) is not None:
        act = np.asarray(traj.active).sum(axis=1)
        ax2.step(t[1 : last + 1], act[1 : last + 1], where="pre", color="tab:green")
        ax2.set(ylim=(-0.5, np.asarray(traj.active).shape[1] + 0.5))
    ax2.set(xlabel="t [s]", ylabel="contacts active", title="contacts touching")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return fig


def animate_contact_trajectory(traj, path, title=None, *, model=None, track=None, fps=20, max_frames=150, dpi=80):
    """Write a GIF of a contact run, top view (x-y, true scale) and side view (x-z or y-z, across the
    longer horizontal extent of the run; z not to scale): every body as the segment through its
    contact-sphere centres, and the tracked body's path so far (``track``: body index, ``None``: the centroid). Frames are
    subsampled evenly to at most ``max_frames`` (first and last kept); frames after a failed step
    are not drawn. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .bodies import canvas_frame, save_gif

    if int(max_frames) < 1 or not fps > 0:
        raise ValueError(f"need max_frames >= 1 and fps > 0, got {max_frames}, {fps}")
    t = np.asarray(traj.times)
    last = _last_valid(traj)
    seg = _body_segments(traj, model)[: last + 1]
    p, label = _track(traj, track, model)
    idx = np.unique(np.linspace(0, last, min(int(max_frames), last + 1)).round().astype(int))
    pts = seg.reshape(-1, 3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    pad = 0.08 * max(float(np.max(hi[:2] - lo[:2])), 1e-9)
    zr = float(np.max(getattr(model, "radius", np.zeros(1)))) if model is not None else 0.0
    h = 0 if hi[0] - lo[0] >= hi[1] - lo[1] else 1  # the side view looks across the longer extent
    fig, (top, side) = plt.subplots(2, 1, figsize=(6.5, 7.5), gridspec_kw={"height_ratios": [2.2, 1]})
    top.set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[1] - pad, hi[1] + pad), xlabel="x [m]", ylabel="y [m]",
            aspect="equal", title="top view")
    side.set(xlim=(lo[h] - pad, hi[h] + pad), ylim=(min(lo[2], 0.0) - zr - 0.01, hi[2] + zr + 0.01),
             xlabel=f"{'xy'[h]} [m]", ylabel="z [m]", title=f"side view, {'xy'[h]}-z (z not to scale)")
    side.axhline(0.0, color="0.6", lw=0.8)
    bodies_top = top.plot([], [], "-o", color="0.3", lw=3, ms=3)[0]
    trail = top.plot([], [], "-", color="tab:red", lw=1, label=f"{label} path")[0]
    bodies_side = side.plot([], [], "-o", color="0.3", lw=3, ms=3)[0]
    top.legend(fontsize=8, loc="upper right")
    frames = []
    for k in idx:
        chain = seg[k].reshape(-1, 3)
        bodies_top.set_data(chain[:, 0], chain[:, 1])
        bodies_side.set_data(chain[:, h], chain[:, 2])
        trail.set_data(p[: k + 1, 0], p[: k + 1, 1])
        fig.suptitle(f"{title + ': ' if title else ''}t = {t[k]:.2f} s", fontsize=9)
        frames.append(canvas_frame(fig))
    plt.close(fig)
    return save_gif(frames, path, fps)
