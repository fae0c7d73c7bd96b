"""3-D drawing of rigid-body and hybrid systems (matplotlib ``mpl_toolkits.mplot3d``): each body
as the box of uniform density with its principal moments of inertia, posed by its frame; joints
as markers at their points; rods as polylines; rod-to-body attachments as markers; contact
spheres (a :class:`~jaxrod.system.contact.ContactSystem`) as markers on their bodies. Used by
:func:`~jaxrod.plot.plot_bodies` and :func:`~jaxrod.plot.animate_bodies` (and so by ``jaxrod
simulate FILE --plot/--animate``); the drawing reads a finished trajectory, nothing is simulated.

* :func:`system_layout`: what there is to draw of a model (boxes, joint anchors, rod rows,
  attachment rows), read once.
* :func:`body_poses`: the bodies' centres ``(T, nb, 3)`` and rotations ``(T, nb, 3, 3)``
  (body -> world) of a trajectory.
* :func:`inertia_box`: half sizes and axes of a body's box from its mass and inertia.
* :class:`Scene3D`: the artists of one system on a 3-D axes, moved to any saved instant by
  :meth:`Scene3D.update` (figures draw it once, GIFs once per frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Scene3D", "SystemLayout", "body_poses", "inertia_box", "system_layout"]

#: the 12 edges of a box, as pairs of corner indices (corners: the sign patterns of _CORNERS)
_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
_FACES = np.array([[0, 1, 3, 2], [4, 5, 7, 6], [0, 1, 5, 4], [2, 3, 7, 6], [0, 2, 6, 4], [1, 3, 7, 5]])


def inertia_box(mass, inertia, min_half=0.0):
    """``(half sizes (3,) [m], axes (3, 3))`` of the uniform box with the body's mass [kg] and
    inertia ``(3, 3)`` about its centre of mass [kg m^2] (body frame): the principal moments
    ``I1 = m (b^2 + c^2) / 3`` (and cyclic) give the half sizes ``a, b, c`` along the principal
    axes (the columns of ``axes``, body frame). A degenerate direction (a slender link,
    ``I2 + I3 - I1 ~ 0``) is clipped to ``min_half`` [m]."""
    inertia = np.asarray(inertia, float)
    if inertia.ndim == 1:
        inertia = np.diag(inertia)
    ev, axes = np.linalg.eigh(inertia)
    s = ev.sum()
    half_sq = 3.0 * (s - 2.0 * ev) / (2.0 * float(mass))
    half = np.sqrt(np.clip(half_sq, 0.0, None))
    return np.maximum(half, float(min_half)), axes


@dataclass
class SystemLayout:
    """What to draw of a system, independent of time (see :func:`system_layout`).

    Attributes:
        names: body names.
        half: ``(nb, 3)`` box half sizes [m] (unclipped; :class:`Scene3D` clips them).
        axes: ``(nb, 3, 3)`` principal axes (columns) in the body frames.
        joints: ``(body index, anchor (3,) in that body's frame [m])`` per joint (the second
            body's side; the world side of a joint to the world is fixed and drawn there too).
        joint_world: ``(n, 3)`` fixed joint points of joints to the world [m].
        rods: ``[(first row, last row + 1)]`` of each rod in ``Trajectory.positions``.
        attachments: rows of ``Trajectory.positions`` where a rod is pinned or clamped to a body
            (a clamp: both nodes of its edge).
        spheres: ``(body index, centre (3,) in the body frame [m], radius [m])`` contact spheres.
    """

    names: list
    half: np.ndarray
    axes: np.ndarray
    joints: list = field(default_factory=list)
    joint_world: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    rods: list = field(default_factory=list)
    attachments: list = field(default_factory=list)
    spheres: list = field(default_factory=list)


def _multibody(model):
    """``(MultibodySystem or None, contact system or None)`` of ``model``."""
    from ..system import HybridSystem, MultibodySystem

    if isinstance(model, MultibodySystem):
        return model, None
    if isinstance(model, HybridSystem):
        return model.multibody, None
    inner = getattr(model, "system", None)  # a ContactSystem wraps its MultibodySystem
    if isinstance(inner, MultibodySystem):
        return inner, model
    return None, None


def system_layout(model, n_rows=None):
    """The :class:`SystemLayout` of ``model``: a :class:`~jaxrod.system.MultibodySystem`, a
    :class:`~jaxrod.system.HybridSystem` or a contact system wrapping a multibody system (its
    ``system`` attribute). ``n_rows``: rows of ``Trajectory.positions`` (for the rods of a hybrid
    system). Raises ``ValueError`` for any other model."""
    from ..system import HybridSystem
    from ..system.hybrid import _n_observed

    mb, contact = _multibody(model)
    if mb is None and not isinstance(model, HybridSystem):
        raise ValueError(f"model: expected a MultibodySystem, HybridSystem or contact system, got {type(model).__name__}")
    bodies = [] if mb is None else list(mb.bodies)
    boxes = [inertia_box(float(b.mass), np.asarray(b.inertia)) for b in bodies]
    lay = SystemLayout(names=[b.name for b in bodies],
                       half=np.array([h for h, _ in boxes]).reshape(-1, 3),
                       axes=np.array([a for _, a in boxes]).reshape(-1, 3, 3))
    if mb is not None:
        anchors = np.asarray(mb.anchors)
        world = []
        for j, (i1, i2) in enumerate(mb.body_index):
            lay.joints.append((int(i2), anchors[j, 1]))
            if i1 < 0:
                world.append(anchors[j, 0])
            else:
                lay.joints.append((int(i1), anchors[j, 0]))
        lay.joint_world = np.array(world).reshape(-1, 3)
    if contact is not None:
        for b, c, r in zip(contact.sphere_body, np.asarray(contact.sphere_centre), np.asarray(contact.radius)):
            lay.spheres.append((int(b), c, float(r)))
    if isinstance(model, HybridSystem):
        off = np.concatenate([[0], np.cumsum([_n_observed(m) for m in model.rods])]).astype(int)
        lay.rods = [(int(off[i]), int(off[i + 1])) for i in range(len(model.rods))]
        for rod, node, _ in model.pin_index:
            lay.attachments.append(int(off[rod] + _observed_row(model.rods[rod], node)))
        for rod, edge, _ in model.clamp_index:
            lay.attachments += [int(off[rod] + edge), int(off[rod] + edge + 1)]
        for rod, end, _ in model.weld_index:
            lay.attachments.append(int(off[rod] + _observed_row(model.rods[rod], end)))
    return lay


def _observed_row(rod, k):
    """Row of attachment point ``k`` among the observed positions of ``rod`` (a PCS segment end
    ``k`` is sample ``k * points_per_segment``; a DER node is itself)."""
    from ..models.pcs import PCSModel

    return int(k) * int(rod.points_per_segment) if isinstance(rod, PCSModel) else int(k)


def body_poses(traj, model):
    """``(centres (T, nb, 3) [m], rotations (T, nb, 3, 3))`` of the bodies of ``model`` in
    ``traj``: rotations map body-frame vectors to the world (``Trajectory.frames`` holds their
    transposes: rows are the body axes). Identity rotations where the trajectory has no frames."""
    from ..system import HybridSystem

    pos = np.asarray(traj.positions, float)
    frames = None if traj.frames is None else np.asarray(traj.frames, float)
    if isinstance(model, HybridSystem):
        x = np.asarray(model.body_positions(pos))
        f = None if frames is None else np.asarray(model.body_frames(frames))
    else:
        x, f = pos, frames
    if f is None or f.shape[:2] != x.shape[:2]:
        R = np.broadcast_to(np.eye(3), x.shape[:2] + (3, 3))
    else:
        R = np.swapaxes(f, -1, -2)
    return x, R


class Scene3D:
    """A system drawn on a 3-D axes ``ax`` at one saved instant, movable to another.

    Arguments:
        ax: a matplotlib ``Axes3D``.
        layout: the :class:`SystemLayout`.
        x, R: body centres ``(T, nb, 3)`` [m] and rotations ``(T, nb, 3, 3)`` (:func:`body_poses`).
        positions: ``(T, rows, 3)`` ``Trajectory.positions`` [m] (rod nodes of a hybrid system).
        min_half: smallest box half size drawn [m] (default 2 % of the extent of everything drawn).
        trails: draw each body centre's path up to the current instant.

    Attributes: ``boxes`` (one ``Poly3DCollection`` per body), ``rod_lines`` (one line per rod),
    ``joint_marks`` (one line of markers: the joint points), ``attachment_marks``,
    ``sphere_marks``, ``trail_lines``, ``half`` ``(nb, 3)`` the drawn half sizes.
    """

    def __init__(self, ax, layout, x, R, positions, *, min_half=None, trails=True, valid_last=None):
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        self.ax, self.layout, self.x, self.R = ax, layout, np.asarray(x), np.asarray(R)
        self.positions = np.asarray(positions)
        last = len(self.x) - 1 if valid_last is None else int(valid_last)
        pts = [self.x[: last + 1].reshape(-1, 3)] + [self.positions[: last + 1, a:b].reshape(-1, 3)
                                                      for a, b in layout.rods]
        pts = np.concatenate(pts) if pts else np.zeros((1, 3))
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        extent = float(np.max(np.ptp(pts, axis=0))) if len(pts) else 1.0
        big = float(np.max(layout.half)) if layout.half.size else 0.0
        extent = max(extent, 2.0 * big, 1e-6)
        self.min_half = 0.02 * extent if min_half is None else float(min_half)
        # a box no larger than the scene: a body whose inertia implies a huge box is shrunk
        self.half = np.clip(layout.half, self.min_half, 0.5 * extent + self.min_half)
        colours = [f"C{i % 10}" for i in range(len(layout.names))]
        self.boxes = []
        for i, name in enumerate(layout.names):
            poly = Poly3DCollection(self._box_faces(0, i), facecolor=colours[i], edgecolor="k", linewidths=0.4,
                                    alpha=0.25)
            poly.set_label(name)
            ax.add_collection3d(poly)
            self.boxes.append(poly)
        self.rod_lines = [ax.plot([], [], [], "-", color="tab:purple", lw=2)[0] for _ in layout.rods]
        self.joint_marks = ax.plot([], [], [], "o", color="k", ms=5, mfc="w", label="joints")[0] if (
            layout.joints or len(layout.joint_world)) else None
        self.attachment_marks = ax.plot([], [], [], "s", color="tab:red", ms=5, label="rod attachments")[0] if (
            layout.attachments) else None
        self.sphere_marks = ax.plot([], [], [], "o", color="tab:gray", ms=4, alpha=0.8, label="contact spheres")[0] if (
            layout.spheres) else None
        self.trail_lines = [ax.plot([], [], [], "-", color=c, lw=0.8, alpha=0.7)[0] for c in colours] if trails else []
        # the cube around everything drawn until the last valid time: points and box corners
        if len(layout.names):
            M = np.einsum("tbij,bjk->tbik", self.R[: last + 1], layout.axes)  # box axes in the world
            corners = self.x[: last + 1, :, None] + np.einsum("cj,bj,tbij->tbci", _CORNERS, self.half, M)
            corners = corners.reshape(-1, 3)
            pts = np.concatenate([pts, corners[np.all(np.isfinite(corners), axis=1)]])
        lo, hi = (pts.min(axis=0), pts.max(axis=0)) if len(pts) else (np.zeros(3), np.zeros(3))
        centre, r = 0.5 * (lo + hi), max(0.55 * float(np.max(hi - lo)), 1e-6)
        ax.set(xlim=(centre[0] - r, centre[0] + r), ylim=(centre[1] - r, centre[1] + r),
               zlim=(centre[2] - r, centre[2] + r), xlabel="x [m]", ylabel="y [m]", zlabel="z [m]")
        ax.set_box_aspect((1, 1, 1))  # equal aspect: the limits are a cube
        self.update(0)

    def _box_faces(self, k, i):
        """``(6, 4, 3)`` face corners [m] of body ``i``'s box at saved instant ``k``."""
        corners = self.x[k, i] + (_CORNERS * self.half[i]) @ (self.R[k, i] @ self.layout.axes[i]).T
        return corners[_FACES]

    def joint_points(self, k):
        """``(n, 3)`` joint points [m] at saved instant ``k``, from the body poses (and the fixed
        world side of joints to the world)."""
        moving = [self.x[k, i] + self.R[k, i] @ a for i, a in self.layout.joints]
        return np.concatenate([np.array(moving).reshape(-1, 3), self.layout.joint_world])

    def sphere_points(self, k):
        """``(n, 3)`` contact-sphere centres [m] at saved instant ``k``."""
        return np.array([self.x[k, i] + self.R[k, i] @ c for i, c, _ in self.layout.spheres]).reshape(-1, 3)

    def update(self, k):
        """Move every artist to saved instant ``k``."""
        for i, poly in enumerate(self.boxes):
            poly.set_verts(self._box_faces(k, i))
        for line, (a, b) in zip(self.rod_lines, self.layout.rods):
            p = self.positions[k, a:b]
            line.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
        for mark, p in ((self.joint_marks, self.joint_points(k) if self.joint_marks else None),
                        (self.attachment_marks, self.positions[k, self.layout.attachments]
                         if self.attachment_marks else None),
                        (self.sphere_marks, self.sphere_points(k) if self.sphere_marks else None)):
            if mark is not None:
                mark.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
        for i, line in enumerate(self.trail_lines):
            p = self.x[: k + 1, i]
            line.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
