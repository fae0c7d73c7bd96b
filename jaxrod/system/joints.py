"""Joints between rigid bodies (or a body and the world) as holonomic constraints.

A joint is specified in the WORLD frame at the initial (assembly) configuration: the joint point
``point`` [m] and, where it has one, the joint ``axis``. :class:`~jaxrod.system.MultibodySystem`
attaches a copy of the joint point and of an orthonormal joint frame ``(axis, u, w)`` to each of
the two bodies; the constraints say that the two copies still coincide (so every joint holds
exactly in the configuration it was assembled in). In the formulas below ``P1, P2`` are the two
copies of the point and ``F1, F2`` the two joint frames (columns ``axis, u, w``), all in the
world frame; for the world side ``P1 = point``, ``F1`` the assembly frame.

=================  ========  ======================================================================
joint              rows      constraint
=================  ========  ======================================================================
:class:`Spherical`  3        ``P1 - P2``
:class:`Revolute`   5        ``P1 - P2``; ``axis1 . u2``, ``axis1 . w2`` (axes stay parallel)
:class:`Fixed`      6        ``P1 - P2``; ``vee(skew(F1^T F2))`` (no relative rotation)
:class:`PlanarPin`  2        ``(P1 - P2) . u1``, ``(P1 - P2) . w1``: the in-plane part of a
                             revolute joint whose axis is the plane's normal
=================  ========  ======================================================================

:class:`PlanarPin` closes loops of planar mechanisms without redundant rows: a planar four-bar of
four revolute joints has 3 x 6 = 18 body coordinates and 20 constraint rows for one degree of
freedom, so three rows are redundant and the Newton matrix is singular; three revolutes and one
planar pin give 17 independent rows.

A :class:`Revolute` joint may carry a linear rotational spring-damper and a prescribed torque
``tau(t)`` acting on body 2 about the axis (and ``-tau`` on body 1).
"""

from __future__ import annotations

import abc
from typing import Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import unskew
from .bodies import _f64


def _frame_from_axis(axis):
    """``(3, 3)`` orthonormal frame with columns ``(axis, u, w)`` (host-side, numpy)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    e = np.eye(3)[int(np.argmin(np.abs(a)))]
    u = np.cross(a, e)
    u /= np.linalg.norm(u)
    return np.stack([a, u, np.cross(a, u)], axis=1)


def _check_side(owner, name, value, allow_world):
    if value is None and allow_world:
        return
    if not isinstance(value, str) or not value or (value == "world" and not allow_world):
        allowed = "a body name, or None / 'world'" if allow_world else "a body name (not the world)"
        raise ValueError(f"{owner}.{name} must be {allowed}, got {value!r}")


def _check_bodies(owner, body1, body2):
    """``body1``: a body name or the world; ``body2``: a body name; not the same body (joints and
    force elements)."""
    _check_side(owner, "body1", body1, True)
    _check_side(owner, "body2", body2, False)
    if body1 == body2:
        raise ValueError(f"{owner} connects body {body2!r} to itself; body1 and body2 must differ")


class AbstractJoint(eqx.Module):
    """A joint between ``body1`` (a body name, or ``None``/``'world'``) and ``body2`` (a body name).

    Attributes:
        body1: first body, or ``None`` / ``'world'`` for the fixed world frame (static).
        body2: second body (static).
        point: ``(3,)`` joint point in the world frame at the initial configuration [m].
    """

    body1: str | None = eqx.field(static=True)
    body2: str = eqx.field(static=True)
    point: jax.Array = eqx.field(converter=_f64)

    n_constraints: ClassVar[int]

    def __check_init__(self):
        owner = type(self).__name__
        _check_bodies(owner, self.body1, self.body2)
        if not isinstance(self.point, jax.core.Tracer):
            p = np.asarray(self.point, float)
            if p.shape != (3,) or not np.all(np.isfinite(p)):
                raise ValueError(f"{owner}.point must be 3 finite numbers [m], got {p.tolist()!r}")

    def frame(self):
        """``(3, 3)`` joint frame at assembly (columns ``axis, u, w``); the identity for joints
        without an axis."""
        return np.eye(3)

    @abc.abstractmethod
    def constraint(self, P1, P2, F1, F2):
        """``(n_constraints,)`` constraint values, zero when the joint holds (see module docstring)."""

    def potential(self, P1, P2, F1, F2, t):
        """Stored energy of the joint's springs minus the work of its input torque [J]."""
        return jnp.zeros((), P1.dtype)

    def dissipation(self, F1, F2, w1, w2):
        """Rayleigh dissipation function [W / 2] of the joint's dampers; ``w1``, ``w2`` the
        world-frame angular velocities of the two bodies [rad/s]."""
        return jnp.zeros((), F1.dtype)


class Spherical(AbstractJoint):
    """Ball joint: the joint point is shared, rotations are free (3 rows)."""

    n_constraints: ClassVar[int] = 3

    def constraint(self, P1, P2, F1, F2):
        return P1 - P2


class _AxisJoint(AbstractJoint):
    """A joint with an axis (unit-normalised ``(3,)`` world vector at assembly)."""

    axis: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        if not isinstance(self.axis, jax.core.Tracer):
            a = np.asarray(self.axis, float)
            if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
                raise ValueError(
                    f"{type(self).__name__}.axis must be a finite non-zero 3-vector, got {a.tolist()!r}"
                )

    def frame(self):
        return _frame_from_axis(self.axis)


class Revolute(_AxisJoint):
    """Hinge about ``axis`` through ``point`` (5 rows), with an optional spring-damper and input.

    The joint angle ``theta`` [rad] is the rotation of body 2 relative to body 1 about the axis
    (right-hand rule), zero at assembly, in ``(-pi, pi]`` (the spring energy jumps when the
    joint passes ``pi`` from the rest angle: keep ``|theta - rest_angle| < pi``).

    Attributes:
        axis: ``(3,)`` hinge axis in the world frame at assembly (any non-zero length).
        stiffness: rotational stiffness ``k`` [N m/rad], >= 0; energy ``k (theta - rest_angle)^2 / 2``.
        damping: rotational damping ``c`` [N m s/rad], >= 0; torque ``-c theta'`` on body 2.
        rest_angle: spring rest angle [rad].
        torque: ``None`` or a callable ``t [s] -> tau [N m]`` (traceable JAX code): torque on
            body 2 about the axis, ``-tau`` on body 1 (a motor). A plain function is static (a new
            one compiles a new program); an ``equinox.Module`` with ``__call__`` keeps its array
            fields as differentiable leaves (one program for all their values).
    """

    stiffness: jax.Array = eqx.field(converter=_f64, default=0.0)
    damping: jax.Array = eqx.field(converter=_f64, default=0.0)
    rest_angle: jax.Array = eqx.field(converter=_f64, default=0.0)
    torque: Callable | None = None

    n_constraints: ClassVar[int] = 5

    def __check_init__(self):
        for name in ("stiffness", "damping"):
            val = getattr(self, name)
            if not isinstance(val, jax.core.Tracer):
                x = np.asarray(val, float)
                if x.shape != () or not np.isfinite(x) or x < 0:
                    unit = "N m/rad" if name == "stiffness" else "N m s/rad"
                    raise ValueError(f"Revolute.{name} must be a finite number >= 0 [{unit}], got {x.tolist()!r}")
        if self.torque is not None and not callable(self.torque):
            raise ValueError(f"Revolute.torque must be None or a function t -> torque [N m], got {self.torque!r}")

    def constraint(self, P1, P2, F1, F2):
        return jnp.concatenate([P1 - P2, jnp.stack([F1[:, 0] @ F2[:, 1], F1[:, 0] @ F2[:, 2]])])

    @staticmethod
    def angle(F1, F2):
        """Joint angle [rad] from the two joint frames (columns ``axis, u, w``)."""
        return jnp.arctan2(jnp.cross(F1[:, 1], F2[:, 1]) @ F1[:, 0], F1[:, 1] @ F2[:, 1])

    def potential(self, P1, P2, F1, F2, t):
        theta = self.angle(F1, F2)
        e = 0.5 * self.stiffness * (theta - self.rest_angle) ** 2
        if self.torque is not None:
            e = e - self.torque(t) * theta
        return e

    def dissipation(self, F1, F2, w1, w2):
        rate = (w2 - w1) @ F1[:, 0]
        return 0.5 * self.damping * rate**2


class Fixed(AbstractJoint):
    """Weld: no relative motion (6 rows)."""

    n_constraints: ClassVar[int] = 6

    def constraint(self, P1, P2, F1, F2):
        return jnp.concatenate([P1 - P2, unskew(F1.T @ F2)])


class PlanarPin(_AxisJoint):
    """The in-plane part of a revolute joint whose ``axis`` is the plane normal (2 rows): closes
    the loop of a planar mechanism without redundant constraints (see the module docstring)."""

    n_constraints: ClassVar[int] = 2

    def constraint(self, P1, P2, F1, F2):
        d = P1 - P2
        return jnp.stack([d @ F1[:, 1], d @ F1[:, 2]])
