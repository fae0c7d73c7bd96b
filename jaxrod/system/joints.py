"""Joints between rigid bodies (or a body and the fixed world), as position constraints.

Every joint attaches a copy of the joint point and of an orthonormal joint frame ``(axis, u, w)`` to
each of the two bodies; the constraints say that the two copies still coincide in the directions
the joint locks (so every joint holds exactly in the configuration it was assembled in). In the
formulas below ``P1, P2`` are the two copies of the point and ``F1, F2`` the two joint frames
(columns ``axis, u, w``), all in the world frame; for the world side ``P1 = point``, ``F1`` the
assembly frame; ``d = P2 - P1``.

======================  ====  =================================================================
joint                   rows  constraint
======================  ====  =================================================================
:class:`Spherical`      3     ``P1 - P2``
:class:`Revolute`       5     ``P1 - P2``; ``axis1 . u2``, ``axis1 . w2`` (axes stay parallel)
:class:`Prismatic`      5     ``vee(skew(F1^T F2))`` (no relative rotation); ``-d . u1``, ``-d . w1``
:class:`Universal`      4     ``P1 - P2``; ``axis1 . axis2'`` (``axis2'`` = 2nd column: the
                              cross-pin axes stay perpendicular)
:class:`Planar`         3     ``-d . axis1`` (in the plane); ``axis1 . u2``, ``axis1 . w2``
:class:`Fixed`          6     ``P1 - P2``; ``vee(skew(F1^T F2))`` (no relative rotation)
:class:`PlanarPin`      2     ``(P1 - P2) . u1``, ``(P1 - P2) . w1``: the in-plane part of a
                              revolute joint whose axis is the plane's normal
:class:`PrescribedDisplacement`  1  ``s(t) - d . axis1``: a point follows a trajectory
:class:`PrescribedAngle`         1  ``wrap(theta(t) - theta)``: a relative angle follows one
======================  ====  =================================================================

Redundant rows (a planar four-bar of four revolute joints: 3 x 6 = 18 body coordinates, 20 rows,
one degree of freedom, so three rows are implied by the others) are found when the system is
assembled and tolerated (see :class:`~jaxrod.system.MultibodySystem`, ``redundant``);
:class:`PlanarPin` closes such loops without redundant rows in the first place.

Joint coordinates, springs, dampers, inputs and limits. :class:`Revolute` (angle ``theta``
[rad]) and :class:`Prismatic` (travel ``s`` [m]) carry an optional linear spring-damper on their
coordinate, an input ``tau(t)`` / ``f(t)`` (a motor; on body 2, the reaction on body 1) and joint
limits. Limits are one-sided stiff spring-dampers (penalty), not unilateral constraints: energy
``limit_stiffness max(0, s - upper)^2 / 2`` (and likewise below ``lower``), and a damper
``limit_damping`` acting only while the limit is penetrated. Why: a unilateral constraint needs a
complementarity (active-set or semismooth) solve that the smooth Newton iteration, the implicit
schemes and implicit differentiation do not have; the penalty keeps the residual a smooth (C1)
function of ``q``, stores and returns energy like a stiff stop, and is differentiable. The price:
the stop is penetrated by ``load / limit_stiffness`` and a very stiff stop needs steps that
resolve its contact time ``~ pi sqrt(m_eff / limit_stiffness)``.

Prescribed motion (:class:`PrescribedDisplacement`, :class:`PrescribedAngle`): a rheonomic
constraint whose trajectory is a callable ``t [s] -> value``; :class:`~jaxrod.signals.SampledTrajectory` turns
sampled data ``(times, values)`` into one (a C2 cubic spline whose arrays are differentiable
leaves: new data reuse the compiled program). The multiplier of the row is the force [N] (torque
[N m]) the constraint exerts on body 2 along (about) its axis: how measured data drives a model
and what force it took.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import unskew
from .bodies import _f64


def _frame_from_axis(axis):
    """``(3, 3)`` orthonormal frame with columns ``(axis, u, w)``, traceable (the axis may be a
    tracer when a system is built inside ``jax.jit``): ``u`` is normal to the axis and to the
    coordinate axis least aligned with it. Shared by joints and force elements."""
    a = jnp.asarray(axis, dtype=float)
    a = a / jnp.linalg.norm(a)
    u = jnp.cross(a, jnp.eye(3)[jnp.argmin(jnp.abs(a))])
    u = u / jnp.linalg.norm(u)
    return jnp.stack([a, u, jnp.cross(a, u)], axis=1)


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
    def constraint(self, P1, P2, F1, F2, t):
        """``(n_constraints,)`` constraint values at time ``t`` [s], zero when the joint holds
        (see module docstring)."""

    def potential(self, P1, P2, F1, F2, t):
        """Stored energy of the joint's springs minus the work of its input torque [J]."""
        return jnp.zeros((), P1.dtype)

    def dissipation(self, P1, P2, F1, F2, v1, v2, w1, w2):
        """Rayleigh dissipation function [W / 2] of the joint's dampers; ``v1``, ``v2`` the
        world-frame velocities of the two copies of the joint point [m/s], ``w1``, ``w2`` the
        world-frame angular velocities of the two bodies [rad/s]."""
        return jnp.zeros((), F1.dtype)


class Spherical(AbstractJoint):
    """Ball joint: the joint point is shared, rotations are free (3 rows)."""

    n_constraints: ClassVar[int] = 3

    def constraint(self, P1, P2, F1, F2, t):
        return P1 - P2


class _AxisJoint(AbstractJoint):
    """A joint with an axis (unit-normalised ``(3,)`` world vector at assembly)."""

    axis: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        _check_axis(type(self).__name__, "axis", self.axis)

    def frame(self):
        return _frame_from_axis(self.axis)


def _check_axis(owner, name, value):
    if not isinstance(value, jax.core.Tracer):
        a = np.asarray(value, float)
        if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
            raise ValueError(f"{owner}.{name} must be a finite non-zero 3-vector, got {a.tolist()!r}")


def _check_scalar(owner, name, value, unit, lower=0.0, allow_inf=False):
    if isinstance(value, jax.core.Tracer):
        return
    x = np.asarray(value, float)
    ok = x.shape == () and not np.isnan(x) and (allow_inf or np.isfinite(x)) and (lower is None or x >= lower)
    if not ok:
        what = "a number" if allow_inf else "a finite number"
        bound = "" if lower is None else f" >= {lower:g}"
        raise ValueError(f"{owner}.{name} must be {what}{bound} [{unit}], got {x.tolist()!r}")


class _CoordinateJoint(_AxisJoint):
    """A joint with one coordinate ``s`` along/about its axis (revolute angle, prismatic travel),
    carrying a linear spring-damper, an input and one-sided limits (module docstring).

    Subclasses define :meth:`coordinate`, :meth:`rate` and the names of the rest value and input
    fields (``_rest``, ``_input``); ``_units`` = (coordinate unit, generalised force unit)."""

    stiffness: jax.Array = eqx.field(converter=_f64, default=0.0)
    damping: jax.Array = eqx.field(converter=_f64, default=0.0)
    lower: jax.Array = eqx.field(converter=_f64, default=-np.inf)
    upper: jax.Array = eqx.field(converter=_f64, default=np.inf)
    limit_stiffness: jax.Array = eqx.field(converter=_f64, default=0.0)
    limit_damping: jax.Array = eqx.field(converter=_f64, default=0.0)

    _rest: ClassVar[str]
    _input: ClassVar[str]
    _units: ClassVar[tuple]

    def __check_init__(self):
        owner = type(self).__name__
        s, f = self._units
        _check_scalar(owner, "stiffness", self.stiffness, f"{f}/{s}")
        _check_scalar(owner, "damping", self.damping, f"{f} s/{s}")
        _check_scalar(owner, "limit_stiffness", self.limit_stiffness, f"{f}/{s}")
        _check_scalar(owner, "limit_damping", self.limit_damping, f"{f} s/{s}")
        _check_scalar(owner, "lower", self.lower, s, lower=None, allow_inf=True)
        _check_scalar(owner, "upper", self.upper, s, lower=None, allow_inf=True)
        _check_scalar(owner, self._rest, getattr(self, self._rest), s, lower=None)
        if not any(isinstance(v, jax.core.Tracer) for v in (self.lower, self.upper, self.limit_stiffness)):
            lo, hi = float(self.lower), float(self.upper)
            if not lo < hi:
                raise ValueError(f"{owner}: lower = {lo} must be below upper = {hi} [{s}]")
            if (np.isfinite(lo) or np.isfinite(hi)) and not float(self.limit_stiffness) > 0:
                raise ValueError(
                    f"{owner}: joint limits (lower = {lo}, upper = {hi} [{s}]) need limit_stiffness > 0 "
                    f"[{f}/{s}], got {float(self.limit_stiffness)}"
                )
        fn = getattr(self, self._input)
        if fn is not None and not callable(fn):
            raise ValueError(f"{owner}.{self._input} must be None or a function t [s] -> {self._input} [{f}], got {fn!r}")

    @abc.abstractmethod
    def coordinate(self, P1, P2, F1, F2):
        """The joint coordinate (zero at assembly)."""

    @abc.abstractmethod
    def rate(self, P1, P2, F1, F2, v1, v2, w1, w2):
        """Time derivative of :meth:`coordinate` from the point and angular velocities."""

    def _penetration(self, s):
        return jnp.maximum(s - self.upper, 0.0) + jnp.minimum(s - self.lower, 0.0)

    def potential(self, P1, P2, F1, F2, t):
        s = self.coordinate(P1, P2, F1, F2)
        e = 0.5 * self.stiffness * (s - getattr(self, self._rest)) ** 2
        e = e + 0.5 * self.limit_stiffness * self._penetration(s) ** 2
        fn = getattr(self, self._input)
        if fn is not None:
            e = e - fn(t) * s
        return e

    def dissipation(self, P1, P2, F1, F2, v1, v2, w1, w2):
        rate = self.rate(P1, P2, F1, F2, v1, v2, w1, w2)
        in_limit = self._penetration(jax.lax.stop_gradient(self.coordinate(P1, P2, F1, F2))) != 0
        c = self.damping + jnp.where(in_limit, self.limit_damping, 0.0)
        return 0.5 * c * rate**2


class Revolute(_CoordinateJoint):
    """Hinge about ``axis`` through ``point`` (5 rows), with an optional spring-damper, input
    torque and angle limits.

    The joint angle ``theta`` [rad] is the rotation of body 2 relative to body 1 about the axis
    (right-hand rule), zero at assembly, in ``(-pi, pi]`` (the spring energy jumps when the
    joint passes ``pi`` from the rest angle: keep ``|theta - rest_angle| < pi``).

    Attributes:
        axis: ``(3,)`` hinge axis in the world frame at assembly (any non-zero length).
        stiffness: rotational stiffness ``k`` [N m/rad], >= 0; energy ``k (theta - rest_angle)^2 / 2``.
        damping: rotational damping ``c`` [N m s/rad], >= 0; torque ``-c theta'`` on body 2.
        lower, upper: angle limits [rad] (default none, ``-inf``/``inf``), inside ``(-pi, pi)``.
        limit_stiffness: stiffness of the limit stops [N m/rad], > 0 when a limit is set.
        limit_damping: damping of the stops while penetrated [N m s/rad], >= 0.
        rest_angle: spring rest angle [rad].
        torque: ``None`` or a callable ``t [s] -> tau [N m]`` (traceable JAX code): torque on
            body 2 about the axis, ``-tau`` on body 1 (a motor). A plain function is static (a new
            one compiles a new program); an ``equinox.Module`` with ``__call__`` keeps its array
            fields as differentiable leaves (one program for all their values).
    """

    rest_angle: jax.Array = eqx.field(converter=_f64, default=0.0)
    torque: Callable | None = None

    n_constraints: ClassVar[int] = 5
    _rest: ClassVar[str] = "rest_angle"
    _input: ClassVar[str] = "torque"
    _units: ClassVar[tuple] = ("rad", "N m")

    def constraint(self, P1, P2, F1, F2, t):
        return jnp.concatenate([P1 - P2, jnp.stack([F1[:, 0] @ F2[:, 1], F1[:, 0] @ F2[:, 2]])])

    @staticmethod
    def angle(F1, F2):
        """Joint angle [rad] from the two joint frames (columns ``axis, u, w``)."""
        return jnp.arctan2(jnp.cross(F1[:, 1], F2[:, 1]) @ F1[:, 0], F1[:, 1] @ F2[:, 1])

    def coordinate(self, P1, P2, F1, F2):
        return self.angle(F1, F2)

    def rate(self, P1, P2, F1, F2, v1, v2, w1, w2):
        return (w2 - w1) @ F1[:, 0]


class Prismatic(_CoordinateJoint):
    """Slider along ``axis`` (5 rows): no relative rotation, the joint point of body 2 moves on
    the line through body 1's copy of ``point`` along ``axis``; with an optional spring-damper,
    input force and travel limits.

    The travel ``s = (P2 - P1) . axis1`` [m] is zero at assembly.

    Attributes:
        axis: ``(3,)`` slide direction in the world frame at assembly (any non-zero length).
        stiffness: spring stiffness [N/m], >= 0; energy ``k (s - rest_length)^2 / 2``.
        damping: damping [N s/m], >= 0; force ``-c s'`` on body 2 along the axis.
        lower, upper: travel limits [m] (default none).
        limit_stiffness: stiffness of the end stops [N/m], > 0 when a limit is set.
        limit_damping: damping of the stops while penetrated [N s/m], >= 0.
        rest_length: spring rest travel [m].
        force: ``None`` or a callable ``t [s] -> f [N]``: force on body 2 along the axis, ``-f``
            on body 1 (an actuator); as :attr:`Revolute.torque`.

    Multipliers (:meth:`~jaxrod.system.MultibodySystem.multipliers`): rows 0-2 the constraint
    moment of the orientation rows [N m], rows 3-4 the force on body 2 along ``u1``, ``w1`` [N].
    """

    rest_length: jax.Array = eqx.field(converter=_f64, default=0.0)
    force: Callable | None = None

    n_constraints: ClassVar[int] = 5
    _rest: ClassVar[str] = "rest_length"
    _input: ClassVar[str] = "force"
    _units: ClassVar[tuple] = ("m", "N")

    def constraint(self, P1, P2, F1, F2, t):
        d = P1 - P2
        return jnp.concatenate([unskew(F1.T @ F2), jnp.stack([d @ F1[:, 1], d @ F1[:, 2]])])

    def coordinate(self, P1, P2, F1, F2):
        return (P2 - P1) @ F1[:, 0]

    def rate(self, P1, P2, F1, F2, v1, v2, w1, w2):
        return (v2 - v1) @ F1[:, 0] + (P2 - P1) @ jnp.cross(w1, F1[:, 0])


class Universal(AbstractJoint):
    """Universal (cardan, Hooke) joint (4 rows): the point is shared; body 1 turns about
    ``axis1`` (fixed in body 1), body 2 about ``axis2`` (fixed in body 2), and the two cross-pin
    axes stay perpendicular. Two rotational degrees of freedom.

    Attributes:
        axis1: ``(3,)`` cross-pin axis fixed in body 1, world frame at assembly.
        axis2: ``(3,)`` cross-pin axis fixed in body 2, world frame at assembly; perpendicular
            to ``axis1``.

    Driveshaft: input shaft along ``a`` with ``axis1`` in the plane of the two shafts (meeting
    at angle ``beta``): the output angle is ``tan(phi2) = tan(phi1) / cos(beta)``.
    """

    axis1: jax.Array = eqx.field(converter=_f64)
    axis2: jax.Array = eqx.field(converter=_f64)

    n_constraints: ClassVar[int] = 4

    def __check_init__(self):
        _check_axis("Universal", "axis1", self.axis1)
        _check_axis("Universal", "axis2", self.axis2)
        if not any(isinstance(a, jax.core.Tracer) for a in (self.axis1, self.axis2)):
            a, b = (np.asarray(v, float) / np.linalg.norm(v) for v in (self.axis1, self.axis2))
            if abs(a @ b) > 1e-9:
                raise ValueError(
                    f"Universal.axis1 {a.tolist()} and axis2 {b.tolist()} must be perpendicular "
                    f"(|cos| <= 1e-9), got cos = {a @ b:.3g}"
                )

    def frame(self):
        a = np.asarray(self.axis1, float) / np.linalg.norm(self.axis1)
        b = np.asarray(self.axis2, float) / np.linalg.norm(self.axis2)
        return np.stack([a, b, np.cross(a, b)], axis=1)

    def constraint(self, P1, P2, F1, F2, t):
        return jnp.concatenate([P1 - P2, (F1[:, 0] @ F2[:, 1])[None]])


class Planar(_AxisJoint):
    """Planar joint (3 rows): body 2 slides in the plane through ``point`` normal to ``axis``
    (fixed in body 1) and turns only about the normal. Three degrees of freedom. The first row's
    multiplier is the force [N] on body 2 along the normal."""

    n_constraints: ClassVar[int] = 3

    def constraint(self, P1, P2, F1, F2, t):
        return jnp.stack([(P1 - P2) @ F1[:, 0], F1[:, 0] @ F2[:, 1], F1[:, 0] @ F2[:, 2]])


class Fixed(AbstractJoint):
    """Weld: no relative motion (6 rows)."""

    n_constraints: ClassVar[int] = 6

    def constraint(self, P1, P2, F1, F2, t):
        return jnp.concatenate([P1 - P2, unskew(F1.T @ F2)])


class PlanarPin(_AxisJoint):
    """The in-plane part of a revolute joint whose ``axis`` is the plane normal (2 rows): closes
    the loop of a planar mechanism without redundant constraints (see the module docstring)."""

    n_constraints: ClassVar[int] = 2

    def constraint(self, P1, P2, F1, F2, t):
        d = P1 - P2
        return jnp.stack([d @ F1[:, 1], d @ F1[:, 2]])


# ----------------------------------------------------------------------------- prescribed motion
def _check_trajectory(owner, fn):
    if not callable(fn):
        raise ValueError(
            f"{owner}.trajectory must be a function t [s] -> value (e.g. a SampledTrajectory), got {fn!r}"
        )


class PrescribedDisplacement(_AxisJoint):
    """Prescribed motion of a point (1 row): the displacement of body 2's copy of ``point``
    relative to body 1's copy, along ``axis`` (fixed in body 1; the world for ``body1=None``),
    follows ``trajectory(t)`` [m]: ``g = trajectory(t) - (P2 - P1) . axis1``.

    The displacement is zero at assembly, so ``trajectory(t0)`` should be 0 (otherwise the first
    step jumps to it). One row per direction: add one element per prescribed component (three
    for a point that follows a 3-D path).

    The row's multiplier (:meth:`~jaxrod.system.MultibodySystem.multipliers`) is the force [N]
    the constraint exerts on body 2 along ``axis`` (``-`` that on body 1).

    Attributes:
        axis: ``(3,)`` direction in the world frame at assembly.
        trajectory: callable ``t [s] -> displacement [m]`` (traceable; a
            :class:`~jaxrod.signals.SampledTrajectory` or an ``equinox.Module`` keeps its arrays as leaves).
    """

    trajectory: Callable = None

    n_constraints: ClassVar[int] = 1

    def __check_init__(self):
        _check_trajectory("PrescribedDisplacement", self.trajectory)

    def constraint(self, P1, P2, F1, F2, t):
        return (self.trajectory(t) - (P2 - P1) @ F1[:, 0])[None]


class PrescribedAngle(_AxisJoint):
    """Prescribed motion of a relative rotation (1 row): the angle [rad] of body 2 relative to
    body 1 about ``axis`` (measured as :meth:`Revolute.angle`, zero at assembly) follows
    ``trajectory(t)``: ``g = wrap(trajectory(t) - theta)`` with ``wrap`` to ``(-pi, pi]``.

    Together with a :class:`Revolute` on the same bodies and axis it drives the joint angle (a
    servo); alone it locks one rotation. ``point`` is not used (any point will do).

    The row's multiplier is the torque [N m] the constraint exerts on body 2 about ``axis``.

    Attributes:
        axis: ``(3,)`` rotation axis in the world frame at assembly.
        trajectory: callable ``t [s] -> angle [rad]`` (as :class:`PrescribedDisplacement`).
    """

    trajectory: Callable = None

    n_constraints: ClassVar[int] = 1

    def __check_init__(self):
        _check_trajectory("PrescribedAngle", self.trajectory)

    def constraint(self, P1, P2, F1, F2, t):
        e = self.trajectory(t) - Revolute.angle(F1, F2)
        return jnp.arctan2(jnp.sin(e), jnp.cos(e))[None]


def _group_joints(joints):
    """Joints of the same type and static configuration stacked into one Module each (array
    fields with a leading joint axis), so the residual traces one vmapped evaluation per type.

    Returns ``(groups, members)``: the stacked joints and, for each, the indices of its joints."""
    keyed = {}
    for k, j in enumerate(joints):
        # body names only select anchors; dropping them lets joints between different bodies share a group
        n = dataclasses.replace(j, body1=None, body2="_")
        dyn, static = eqx.partition(n, eqx.is_array)
        key = (type(j), jax.tree_util.tree_structure(dyn), static)
        keyed.setdefault(key, (static, [], []))
        keyed[key][1].append(dyn)
        keyed[key][2].append(k)
    groups, members = [], []
    for static, dyns, idx in keyed.values():
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *dyns)
        groups.append(eqx.combine(stacked, static))
        members.append(tuple(idx))
    return tuple(groups), tuple(members)
