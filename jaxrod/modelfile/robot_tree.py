"""A robot's kinematic tree as read from URDF or MJCF, turned into model-file tables.

The readers (:mod:`~jaxrod.modelfile.urdf`, :mod:`~jaxrod.modelfile.mjcf`) describe a robot in
one neutral form, a :class:`RobotTree`: every link with its mass properties at the initial
configuration in the WORLD frame, every joint with its world point and axis. :func:`to_tables`
then does what both formats need:

* links welded by fixed joints (URDF ``fixed``, an MJCF body without joints) are merged into one
  rigid body (masses added, inertias moved to the joint centre of mass by the parallel-axis
  theorem); links welded to the world are dropped (they do not move);
* every remaining moving link must have a mass and an inertia (a mesh-only link has neither):
  otherwise the error names it and the joint that moves it;
* the result is the ``bodies`` and ``joints`` lists that :mod:`~jaxrod.modelfile.mechanism`
  builds a :class:`~jaxrod.system.MultibodySystem` from (the same as a TOML file's tables).

Pure Python and NumPy: nothing here imports JAX.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .errors import ModelFileError
from .topology import WORLD

__all__ = ["RobotLink", "RobotJoint", "RobotTree", "RobotFileWarning", "to_tables", "quaternion"]


class RobotFileWarning(UserWarning):
    """Something in a URDF/MJCF file that jaxrod reads but does not model (joint friction,
    joint limits without a stop stiffness, armature)."""


@dataclass
class RobotLink:
    """One link (URDF) or body (MJCF) at the initial configuration.

    Attributes:
        name: the link's name.
        mass: [kg] (0 when the file gives none).
        com: ``(3,)`` centre of mass, world frame [m].
        inertia: ``(3, 3)`` inertia about the centre of mass in the WORLD frame [kg m^2].
        where: where the file defines it (for messages).
    """

    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    where: str


@dataclass
class RobotJoint:
    """One joint at the initial configuration.

    Attributes:
        name: the joint's name.
        kind: ``"revolute"``, ``"prismatic"``, ``"spherical"``, ``"planar"``, ``"fixed"`` or
            ``"free"`` (no joint: the child moves freely).
        parent, child: link names; ``parent`` is ``"world"`` for the ground.
        point: ``(3,)`` joint point, world frame [m]; axis: ``(3,)`` unit axis, world frame.
        keys: extra keys of the jaxrod joint (``stiffness``, ``damping``, ``lower``...).
        where: where the file defines it.
    """

    name: str
    kind: str
    parent: str
    child: str
    point: np.ndarray
    axis: np.ndarray
    keys: dict = field(default_factory=dict)
    where: str = ""


@dataclass
class RobotTree:
    """A robot read from a file: ``links`` (by name) and ``joints`` (parents before children)."""

    path: str
    links: dict
    joints: list
    gravity: tuple | None = None
    timestep: float | None = None


def quaternion(R):
    """Scalar-first unit quaternion ``(w, x, y, z)`` of the rotation matrix ``R`` (Shepperd's
    method: the largest of the four squared components first, so it is exact for any ``R``)."""
    R = np.asarray(R, float)
    t = np.trace(R)
    d = np.array([t, R[0, 0], R[1, 1], R[2, 2]])
    k = int(np.argmax(d))
    if k == 0:
        w = np.sqrt(1.0 + t) / 2
        q = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)]
    else:
        i, j, l = k - 1, k % 3, (k + 1) % 3
        v = np.zeros(3)
        v[i] = np.sqrt(max(1.0 + 2 * R[i, i] - t, 0.0)) / 2
        w = (R[l, j] - R[j, l]) / (4 * v[i])
        v[j] = (R[j, i] + R[i, j]) / (4 * v[i])
        v[l] = (R[l, i] + R[i, l]) / (4 * v[i])
        q = [w, *v]
    q = np.asarray(q)
    return (q if q[0] >= 0 else -q).tolist()


def _merge(a: RobotLink, b: RobotLink) -> RobotLink:
    """One rigid body of two welded links (``a`` keeps its name)."""
    m = a.mass + b.mass
    if m <= 0:
        return RobotLink(a.name, 0.0, a.com, np.zeros((3, 3)), a.where)
    c = (a.mass * a.com + b.mass * b.com) / m

    def moved(link):
        d = link.com - c
        return link.inertia + link.mass * (d @ d * np.eye(3) - np.outer(d, d))

    return RobotLink(a.name, m, c, moved(a) + moved(b), a.where)


def _body_table(link: RobotLink, path) -> dict:
    """``read_body``-style keyword arguments: the body frame is the principal frame of the
    inertia (a diagonal tensor, and the quaternion of its axes), as URDF's own inertial frames
    usually are."""
    inertia = 0.5 * (link.inertia + link.inertia.T)
    moments, axes = np.linalg.eigh(inertia)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    zero = [0.0, 0.0, 0.0]
    return {"name": link.name, "mass": float(link.mass), "inertia": moments.tolist(), "position": link.com.tolist(),
            "orientation": quaternion(axes), "velocity": zero, "angular_velocity": zero, "force": zero,
            "torque": zero, "where": link.where, "path": str(path)}


def to_tables(tree: RobotTree):
    """``(bodies, joints)``: the table lists of :mod:`~jaxrod.modelfile.mechanism` for ``tree``
    (welded links merged, the world's welded links dropped; see the module docstring).

    Raises:
        ModelFileError: a moving link without mass or inertia (naming the link and the joint that
            moves it), or a link whose merged inertia is not positive definite.
    """
    owner = {WORLD: WORLD}          # link -> the body (or the world) it is welded into
    merged = {}                      # body name -> RobotLink (merged)
    moved_by = {}
    for name in tree.links:
        owner.setdefault(name, None)
    for j in tree.joints:
        if j.kind == "fixed":
            root = owner[j.parent]
            owner[j.child] = root
            if root != WORLD:
                merged[root] = _merge(merged[root], tree.links[j.child])
        else:
            owner[j.child] = j.child
            merged[j.child] = tree.links[j.child]
            moved_by[j.child] = j
    for name, link in tree.links.items():  # links no joint names: the root(s)
        if owner[name] is None:
            raise ModelFileError(tree.path, link.where, "is not connected to the root link: its joints form a loop "
                                                        "(a robot file describes a tree)")
    bodies = []
    for name, link in merged.items():
        j = moved_by[name]
        if link.mass <= 0 or not np.any(link.inertia):
            raise ModelFileError(
                tree.path, link.where,
                f"has no mass or inertia but moves (joint {j.name!r}, {j.kind}); every moving link needs "
                "an <inertial> with mass > 0 and an inertia tensor (a mesh-only or frame-only link has none: "
                "add one, or weld the link to a massive one with a fixed joint)")
        moments = np.linalg.eigvalsh(0.5 * (link.inertia + link.inertia.T))
        if moments[0] <= 0:
            raise ModelFileError(tree.path, link.where, f"inertia is not positive definite: principal moments "
                                                        f"{moments.tolist()} kg m^2")
        bodies.append(_body_table(link, tree.path))
    joints = []
    for j in tree.joints:
        if j.kind in ("fixed", "free"):
            continue
        keys = {"point": np.asarray(j.point, float).tolist()}
        if j.kind != "spherical":
            keys["axis"] = np.asarray(j.axis, float).tolist()
        keys.update(j.keys)
        joints.append({"name": j.name, "type": j.kind, "body1": owner[j.parent], "body2": j.child, "keys": keys,
                       "where": j.where, "path": str(tree.path)})
    return bodies, joints


def limit_keys(name, lower, upper, q0, limit_stiffness, limit_damping, unit, path):
    """``lower``/``upper``/``limit_*`` keys of a jaxrod joint from a file's limits, measured from
    the initial coordinate ``q0`` (jaxrod's joint coordinates are zero at assembly). Without a stop
    stiffness the limits are not enforced: a :class:`RobotFileWarning` says so."""
    if lower is None and upper is None:
        return {}
    if limit_stiffness <= 0:
        warnings.warn(f"{path}: joint {name!r} has limits [{lower}, {upper}] {unit} that are not enforced: jaxrod's "
                      "joint limits are penalty stops; pass limit_stiffness > 0 to enforce them",
                      RobotFileWarning, stacklevel=3)
        return {}
    return {"lower": -np.inf if lower is None else float(lower) - q0,
            "upper": np.inf if upper is None else float(upper) - q0,
            "limit_stiffness": float(limit_stiffness), "limit_damping": float(limit_damping)}
