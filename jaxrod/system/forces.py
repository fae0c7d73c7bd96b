"""Force elements of a :class:`~jaxrod.system.MultibodySystem`: springs, dampers, inputs, controllers.

TMTDyn's actions catalogue (spec 4.3, 6.2, 6.3) as elements attached to two bodies (or a body and
the world), passed as ``MultibodySystem(..., forces=[...])``:

* :class:`Spring`: coordinate ``d = P2 - P1`` (two points); energy ``E(e)``, ``e = |d| - rest_length``.
* :class:`Damper`: ``d = P2 - P1``; force ``-c |s|^p sign(s)`` (regularised), ``s`` the
  elongation rate (or the full relative velocity).
* :class:`PointForce`: ``(P1, P2)`` (one point on two bodies); ``f(t, P2, V2)`` on body 2, ``-f``
  on body 1.
* :class:`TorsionSpring`: ``theta`` about an axis; energy ``E(theta - rest_angle)``.
* :class:`TorsionDamper`: ``theta``; torque ``-c |theta'|^p sign(theta')`` (regularised).
* :class:`JointTorque`: ``theta``; torque ``tau(t, theta, theta')``.
* :class:`PDController`: ``theta``; torque ``gain (target - theta) + damping (target_rate - theta')``.

``P1``, ``P2`` are points fixed to ``body1`` and ``body2`` (given in the WORLD frame at the initial
configuration, like a joint's point); ``theta`` is the rotation of body 2 relative to body 1 about
``axis`` (world frame at assembly), zero at assembly, in ``(-pi, pi]``, computed like
:meth:`Revolute.angle <jaxrod.system.Revolute.angle>`: put it on a :class:`~jaxrod.system.Revolute`
joint's axis for a joint-coordinate element (about another axis it measures the rotation of the
attached frames' ``u`` vectors projected on the axis).

How they enter the equations (module docstring of :mod:`jaxrod.system.multibody`): every element
maps the body poses to its coordinate ``c``. CONSERVATIVE elements (springs) contribute an energy
``E(c)`` whose gradient enters the residual as a potential, exactly like gravity and the joint
springs, so with :class:`~jaxrod.integrate.schemes.AverageVectorField` kinetic + potential energy
(:meth:`MultibodySystem.energy` includes these energies) is conserved up to the Gauss quadrature
error of the potentials. DAMPERS and INPUTS give a generalised force ``f`` conjugate to ``c``,
evaluated at the scheme's stage point (``c`` and its rate ``c'``, the rate by forward-mode
differentiation of ``c`` along the body velocities) and applied through the virtual work
``f . delta c``. A damper's force is the negative gradient of a convex dissipation function of
``c'`` (:func:`power_law_force`), so it only removes energy.

Unilateral elements (``mode``, TMTDyn's ``dir``): ``'tension'`` acts only when ``e > 0`` (ropes,
tendons), ``'compression'`` only when ``e < 0`` (bump stops, soft contact), ``'both'`` always.
``smoothing = 0`` (default) is the EXACT switch: the spring energy is ``E(max(e, 0))`` (tension),
continuous with a continuous force for any energy law with ``E'(0) = 0`` (linear, polynomial), so
the residual is continuous and piecewise smooth and Newton converges (its Jacobian jumps by the
stiffness at contact; the exact switch also gives the closed-form contact time and an exactly
force-free slack rope). ``smoothing = w > 0`` [m] replaces ``max(e, 0)`` by the softplus
``w log(1 + exp(e / w))``: infinitely differentiable (use it where gradients through the moment of
contact matter), at the price of a force ``k w log 2`` at ``e = 0`` and ``~ k w exp(e / w)`` when
slack. A unilateral damper is multiplied by the derivative of the same switch (a step, or the
sigmoid ``1 / (1 + exp(-e / w))``), TMTDyn's activation; with the exact switch its force jumps at
contact (a Kelvin-Voigt contact with ``damping > 0`` wants ``smoothing > 0`` or small steps).

Power-law damping (TMTDyn's ``mu v^nu``, sign-preserving, spec 6.2): ``f = -c s (s^2 +
eps^2)^((p - 1) / 2)`` with ``eps = velocity_scale``. It equals ``-c |s|^p sign(s)`` to relative
``(p - 1) eps^2 / (2 s^2)`` for ``|s| >> eps`` and is linear with slope ``c eps^(p - 1)`` near
``s = 0``: without it the Newton Jacobian ``c p |s|^(p-1)`` is infinite at rest for ``p < 1`` (and
the force of a ``p < 1`` damper stops a body in finite time, where the regularised one creeps).
``p = 1`` is the exact linear damper whatever ``eps``. The dissipation function is
``c / (p + 1) ((s^2 + eps^2)^((p + 1) / 2) - eps^(p + 1))`` (convex: the force always dissipates).

Elements of one type and static configuration are stacked and evaluated by one ``vmap`` (as joints
are), so compile time does not grow with their number. Parameters are array leaves (stiffness,
damping, exponents, controller gains and targets): a new value reuses the compiled program, and
``jax.grad`` differentiates through them. Callables (``energy``, ``force``, ``torque``) are static
when plain functions; an ``equinox.Module`` with ``__call__`` keeps its arrays as leaves.
"""

from __future__ import annotations

import abc
from typing import Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import rotation_matrix
from ..validation import one_or_many
from .bodies import RigidBody, _check_vector, _f64
from .joints import Revolute, _check_bodies, _group_joints
from .joints import _frame_from_axis as _frame

MODES = ("both", "tension", "compression")


def _check_number(owner, name, value, unit, minimum=0.0, strict=False):
    """Eager check of a scalar parameter (skipped under tracing)."""
    if isinstance(value, jax.core.Tracer):
        return
    x = np.asarray(value, float)
    bad = x.shape != () or not np.isfinite(x) or (x <= minimum if strict else x < minimum)
    if bad:
        rel = ">" if strict else ">="
        raise ValueError(f"{owner}.{name} must be a finite number {rel} {minimum:g} [{unit}], got {x.tolist()!r}")


def _check_law(owner, coefficients, energy, variable):
    """Checks of the energy-law parameters shared by :class:`Spring` and :class:`TorsionSpring`."""
    if not isinstance(coefficients, jax.core.Tracer):
        c = np.asarray(coefficients, float)
        if c.ndim != 1 or not np.all(np.isfinite(c)):
            raise ValueError(
                f"{owner}.coefficients must be a 1-D sequence of finite numbers (force terms in {variable}^2, "
                f"{variable}^3, ...), got {c.tolist()!r}"
            )
    if energy is not None and not callable(energy):
        raise ValueError(f"{owner}.energy must be None or a function {variable} -> energy [J], got {energy!r}")


def _ramp(e, width):
    """``max(e, 0)`` (``width == 0``, exact) or ``width * softplus(e / width)`` (smooth)."""
    w = jnp.where(width > 0, width, 1.0)  # no division by zero on the branch jnp.where discards
    return jnp.where(width > 0, w * jnp.logaddexp(0.0, e / w), jnp.where(e > 0, e, 0.0))


def _step(e, width):
    """Derivative of :func:`_ramp` in ``e``: the activation of unilateral dampers."""
    w = jnp.where(width > 0, width, 1.0)
    return jnp.where(width > 0, jax.nn.sigmoid(e / w), jnp.where(e > 0, 1.0, 0.0))


def _safe_norm(d):
    dd = jnp.sum(d * d)
    return jnp.where(dd > 0, jnp.sqrt(jnp.where(dd > 0, dd, 1.0)), 0.0)


def power_law_force(rate, damping, exponent, velocity_scale):
    """Regularised power-law damping force ``-c s (s^2 + eps^2)^((p - 1)/2)`` (module docstring):
    ``rate`` ``s`` [m/s or rad/s], ``damping`` ``c``, ``exponent`` ``p``, ``velocity_scale`` ``eps``."""
    return -damping * rate * (rate * rate + velocity_scale**2) ** (0.5 * (exponent - 1.0))


def _law_energy(stiffness, coefficients, energy, e):
    """Spring energy [J] of the extension ``e``: ``k e^2 / 2 + sum_j c_j e^(j+3) / (j+3)`` (force
    ``k e + c_0 e^2 + c_1 e^3 + ...``) plus ``energy(e)`` when given."""
    n = coefficients.shape[-1]
    # Horner in e (integer powers of a negative extension stay real)
    poly = jnp.concatenate([(coefficients / (jnp.arange(n) + 3.0))[::-1], jnp.zeros(3, e.dtype)])
    out = 0.5 * stiffness * e * e + jnp.polyval(poly, e)
    return out if energy is None else out + energy(e)


class AbstractForce(eqx.Module):
    """A force element between ``body1`` (a body, or ``None`` / ``'world'``) and ``body2`` (a body).

    Subclasses define :meth:`coordinates` and an energy (:meth:`potential`) and/or a generalised
    force (:meth:`generalised_force`) conjugate to those coordinates; ``has_potential`` / ``has_force`` say
    which, so that the system traces only what an element uses."""

    body1: str | None = eqx.field(static=True)
    body2: str = eqx.field(static=True)

    has_potential: ClassVar[bool] = False
    has_force: ClassVar[bool] = False

    def __check_init__(self):
        _check_bodies(type(self).__name__, self.body1, self.body2)

    @abc.abstractmethod
    def attachments(self):
        """``(points (2, 3), frame (3, 3))``: the world points fixed to body 1 and body 2 and the
        element frame (columns ``axis, u, w``) at assembly."""

    @abc.abstractmethod
    def coordinates(self, P, F):
        """The element coordinate from the attached points ``P`` ``(2, 3)`` and frames ``F``
        ``(2, 3, 3)`` (world frame; row 0 on body 1, row 1 on body 2)."""

    def potential(self, c):
        """Stored energy [J] at coordinate ``c``."""
        return jnp.zeros((), jnp.float64)

    def generalised_force(self, c, c_dot, t):
        """Generalised force conjugate to ``c`` (same shape) at coordinate ``c``, rate ``c_dot``
        and time ``t`` [s]."""
        return jnp.zeros_like(c)


class _TwoPoints(AbstractForce):
    """An element along the line from ``point1`` (on body 1) to ``point2`` (on body 2).

    Attributes:
        point1, point2: ``(3,)`` attachment points in the world frame at assembly [m].
        rest_length: rest length ``l0`` [m], >= 0; ``None`` (default) takes the initial distance.
        mode: ``'both'``, ``'tension'`` (acts only when longer than ``l0``: ropes) or
            ``'compression'`` (only when shorter: bump stops, soft contact); static.
        smoothing: width ``w`` [m] of the smooth switch of unilateral elements, 0 (default) for
            the exact switch (module docstring).
    """

    point1: jax.Array = eqx.field(converter=_f64)
    point2: jax.Array = eqx.field(converter=_f64)
    rest_length: jax.Array | None = eqx.field(converter=_f64, default=None)
    mode: str = eqx.field(static=True, default="both")
    smoothing: jax.Array = eqx.field(converter=_f64, default=0.0)

    def __post_init__(self):
        if self.rest_length is None:
            # jnp: the points may be tracers (a system built inside jax.jit); bad shapes are reported
            # by __check_init__
            ok = np.shape(self.point1) == np.shape(self.point2) == (3,)
            self.rest_length = jnp.linalg.norm(_f64(self.point2) - _f64(self.point1)) if ok else 0.0

    def __check_init__(self):
        owner = type(self).__name__
        _check_vector(owner, "point1", self.point1, 3)
        _check_vector(owner, "point2", self.point2, 3)
        _check_number(owner, "rest_length", self.rest_length, "m")
        _check_number(owner, "smoothing", self.smoothing, "m")
        if self.mode not in MODES:
            raise ValueError(f"{owner}.mode must be one of {MODES}, got {self.mode!r}")

    def attachments(self):
        return jnp.stack([self.point1, self.point2]), jnp.eye(3)

    def coordinates(self, P, F):
        return P[1] - P[0]

    def extension(self, d):
        """``(e, e_active)``: the extension ``|d| - rest_length`` [m] and its part the element
        sees (clipped by ``mode``, exactly or smoothly)."""
        e = _safe_norm(d) - self.rest_length
        if self.mode == "tension":
            return e, _ramp(e, self.smoothing)
        if self.mode == "compression":
            return e, -_ramp(-e, self.smoothing)
        return e, e

    def activation(self, e):
        """1 where the element acts, 0 where not (the switch's derivative when smoothed)."""
        if self.mode == "tension":
            return _step(e, self.smoothing)
        if self.mode == "compression":
            return _step(-e, self.smoothing)
        return jnp.ones_like(e)


class Spring(_TwoPoints):
    """Spring between two points: energy ``E(e)`` of the extension ``e = |P2 - P1| - rest_length``.

    ``E(e) = stiffness e^2 / 2 + sum_j coefficients[j] e^(j+3) / (j+3) + energy(e)``, i.e. tension
    ``k e + c_0 e^2 + c_1 e^3 + ...`` plus ``energy'(e)``. For a unilateral ``mode`` keep
    ``E(0) = E'(0) = 0`` (true of the polynomial) so the force is continuous at the switch.

    Attributes (besides :class:`_TwoPoints`'):
        stiffness: linear stiffness ``k`` [N/m], >= 0.
        coefficients: ``(n,)`` coefficients of the higher powers ``e^2, e^3, ...`` of the tension
            [N/m^2, N/m^3, ...] (array leaves: new values reuse the compiled program).
        energy: ``None`` or a function ``e [m] -> energy [J]`` (traceable), added to the above.
    """

    stiffness: jax.Array = eqx.field(converter=_f64, default=0.0)
    coefficients: jax.Array = eqx.field(converter=_f64, default=())
    energy: Callable | None = None

    has_potential: ClassVar[bool] = True

    def __check_init__(self):
        _check_number("Spring", "stiffness", self.stiffness, "N/m")
        _check_law("Spring", self.coefficients, self.energy, "e")

    def potential(self, c):
        return _law_energy(self.stiffness, self.coefficients, self.energy, self.extension(c)[1])


class Damper(_TwoPoints):
    """Damper between two points, linear (``exponent = 1``) or power law (TMTDyn, spec 6.2).

    ``direction = 'axial'`` (default, a dashpot): the force on ``P2`` is ``f(s) n`` with ``n`` the
    unit vector from ``P1`` to ``P2``, ``s = n . (V2 - V1)`` the elongation rate and ``f`` the
    regularised power law (module docstring). ``'full'`` (TMTDyn's axial damper, Eq. 28) damps the
    whole relative velocity ``u = V2 - V1``: ``-c u (|u|^2 + eps^2)^((p-1)/2)`` (isotropic; TMTDyn
    applies the power elementwise in its frame). ``-f`` acts on ``P1``. A unilateral ``mode``
    multiplies the force by the activation of the extension (module docstring).

    Attributes (besides :class:`_TwoPoints`'):
        damping: ``c`` [N (s/m)^p], >= 0.
        exponent: ``p`` (dimensionless), > 0: < 1 rate thinning, > 1 rate thickening.
        velocity_scale: regularisation ``eps`` [m/s], > 0 (default 1e-3).
        direction: ``'axial'`` or ``'full'`` (static).
    """

    damping: jax.Array = eqx.field(converter=_f64, default=0.0)
    exponent: jax.Array = eqx.field(converter=_f64, default=1.0)
    velocity_scale: jax.Array = eqx.field(converter=_f64, default=1e-3)
    direction: str = eqx.field(static=True, default="axial")

    has_force: ClassVar[bool] = True

    def __check_init__(self):
        _check_number("Damper", "damping", self.damping, "N (s/m)^exponent")
        _check_number("Damper", "exponent", self.exponent, "-", strict=True)
        _check_number("Damper", "velocity_scale", self.velocity_scale, "m/s", strict=True)
        if self.direction not in ("axial", "full"):
            raise ValueError(f"Damper.direction must be 'axial' or 'full', got {self.direction!r}")

    def generalised_force(self, c, c_dot, t):
        e, _ = self.extension(c)
        if self.direction == "axial":
            length = _safe_norm(c)
            n = c / jnp.where(length > 0, length, 1.0)
            f = power_law_force(n @ c_dot, self.damping, self.exponent, self.velocity_scale) * n
        else:
            speed = _safe_norm(c_dot)
            f = power_law_force(speed, self.damping, self.exponent, self.velocity_scale) * (
                c_dot / jnp.where(speed > 0, speed, 1.0))
        return self.activation(e) * f


class PointForce(AbstractForce):
    """A force at ``point``: ``force(t, position, velocity)`` on body 2 and its reaction on body 1
    (``None`` / ``'world'``: an external load). ``position`` [m] and ``velocity`` [m/s] are body
    2's copy of the point in the world frame; the force [N] is in the world frame.

    Attributes:
        point: ``(3,)`` point of application in the world frame at assembly [m] (fixed to both
            bodies).
        force: callable ``(t, position (3,), velocity (3,)) -> (3,)`` (traceable; a plain
            function is static, an ``equinox.Module`` keeps its arrays as leaves).
    """

    point: jax.Array = eqx.field(converter=_f64)
    force: Callable = None

    has_force: ClassVar[bool] = True

    def __check_init__(self):
        _check_vector("PointForce", "point", self.point, 3)
        if not callable(self.force):
            raise ValueError(
                f"PointForce.force must be a function (t, position, velocity) -> force (3,) [N], got {self.force!r}"
            )

    def attachments(self):
        return jnp.stack([self.point, self.point]), jnp.eye(3)

    def coordinates(self, P, F):
        return P

    def generalised_force(self, c, c_dot, t):
        f = jnp.asarray(self.force(t, c[1], c_dot[1]), dtype=c.dtype)
        if f.shape != (3,):
            raise ValueError(f"PointForce.force must return a (3,) force [N], got shape {f.shape}")
        return jnp.stack([-f, f])


class _AxisElement(AbstractForce):
    """An element on the relative rotation ``theta`` [rad] of body 2 about ``axis`` (module
    docstring).

    Attributes:
        axis: ``(3,)`` axis in the world frame at assembly (any non-zero length).
    """

    axis: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        if not isinstance(self.axis, jax.core.Tracer):
            a = np.asarray(self.axis, float)
            if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
                raise ValueError(f"{type(self).__name__}.axis must be a finite non-zero 3-vector, got {a.tolist()!r}")

    def attachments(self):
        return jnp.zeros((2, 3)), _frame(self.axis)

    def coordinates(self, P, F):
        return Revolute.angle(F[0], F[1])


class TorsionSpring(_AxisElement):
    """Rotational spring: energy ``E(theta - rest_angle)`` with the law of :class:`Spring`
    (``stiffness`` [N m/rad], ``coefficients`` of ``x^2, x^3, ...`` in the torque, ``energy(x)``).
    Keep ``|theta - rest_angle| < pi`` (the angle wraps there)."""

    stiffness: jax.Array = eqx.field(converter=_f64, default=0.0)
    rest_angle: jax.Array = eqx.field(converter=_f64, default=0.0)
    coefficients: jax.Array = eqx.field(converter=_f64, default=())
    energy: Callable | None = None

    has_potential: ClassVar[bool] = True

    def __check_init__(self):
        _check_number("TorsionSpring", "stiffness", self.stiffness, "N m/rad")
        _check_number("TorsionSpring", "rest_angle", self.rest_angle, "rad", minimum=-np.inf)
        _check_law("TorsionSpring", self.coefficients, self.energy, "x")

    def potential(self, c):
        return _law_energy(self.stiffness, self.coefficients, self.energy, c - self.rest_angle)


class TorsionDamper(_AxisElement):
    """Rotational damper, torque ``-c theta' (theta'^2 + eps^2)^((p-1)/2)`` on body 2 (module
    docstring): ``damping`` ``c`` [N m (s/rad)^p], ``exponent`` ``p`` > 0, ``velocity_scale``
    ``eps`` [rad/s] > 0."""

    damping: jax.Array = eqx.field(converter=_f64, default=0.0)
    exponent: jax.Array = eqx.field(converter=_f64, default=1.0)
    velocity_scale: jax.Array = eqx.field(converter=_f64, default=1e-3)

    has_force: ClassVar[bool] = True

    def __check_init__(self):
        _check_number("TorsionDamper", "damping", self.damping, "N m (s/rad)^exponent")
        _check_number("TorsionDamper", "exponent", self.exponent, "-", strict=True)
        _check_number("TorsionDamper", "velocity_scale", self.velocity_scale, "rad/s", strict=True)

    def generalised_force(self, c, c_dot, t):
        return power_law_force(c_dot, self.damping, self.exponent, self.velocity_scale)


class JointTorque(_AxisElement):
    """Torque input ``torque(t, theta, theta_dot)`` [N m] on body 2 about the axis (``-torque`` on
    body 1): a motor driven by time and/or the joint state (traceable callable)."""

    torque: Callable = None

    has_force: ClassVar[bool] = True

    def __check_init__(self):
        if not callable(self.torque):
            raise ValueError(
                f"JointTorque.torque must be a function (t, angle, rate) -> torque [N m], got {self.torque!r}"
            )

    def generalised_force(self, c, c_dot, t):
        tau = jnp.asarray(self.torque(t, c, c_dot), dtype=c.dtype)
        if tau.shape != ():
            raise ValueError(f"JointTorque.torque must return a scalar torque [N m], got shape {tau.shape}")
        return tau


class PDController(_AxisElement):
    """PD control torque on body 2 about the axis: ``gain (target - theta) + damping
    (target_rate - theta')`` (``-`` that on body 1). Gains and targets are array leaves: new
    targets (a set-point sequence, an optimiser's step) reuse the compiled program.

    Attributes:
        gain: proportional gain ``k_p`` [N m/rad], >= 0.
        damping: derivative gain ``k_d`` [N m s/rad], >= 0.
        target: target angle [rad] (``|target - theta| < pi``).
        target_rate: target angular rate [rad/s] (default 0).
    """

    gain: jax.Array = eqx.field(converter=_f64, default=0.0)
    damping: jax.Array = eqx.field(converter=_f64, default=0.0)
    target: jax.Array = eqx.field(converter=_f64, default=0.0)
    target_rate: jax.Array = eqx.field(converter=_f64, default=0.0)

    has_force: ClassVar[bool] = True

    def __check_init__(self):
        _check_number("PDController", "gain", self.gain, "N m/rad")
        _check_number("PDController", "damping", self.damping, "N m s/rad")
        _check_number("PDController", "target", self.target, "rad", minimum=-np.inf)
        _check_number("PDController", "target_rate", self.target_rate, "rad/s", minimum=-np.inf)

    def generalised_force(self, c, c_dot, t):
        return self.gain * (self.target - c) + self.damping * (self.target_rate - c_dot)


class ForceSet(eqx.Module):
    """The force elements of a system, attached to its bodies and grouped by type (one ``vmap``
    per group). Built by :class:`~jaxrod.system.MultibodySystem`; ``ends`` holds each element's
    ``(i1, i2)`` body indices (``-1`` the world), ``anchors`` ``(n, 2, 3)`` the attachment points
    and ``frames`` ``(n, 2, 3, 3)`` the element frames in the body frames (world for the world)."""

    groups: tuple
    members: tuple = eqx.field(static=True)
    ends: tuple = eqx.field(static=True)
    anchors: jax.Array
    frames: jax.Array

    def __init__(self, forces, bodies):
        forces, names = one_or_many(forces), [b.name for b in bodies]
        index = {n: i for i, n in enumerate(names)}
        ends, anchors, frames = [], [], []
        for k, el in enumerate(forces):
            if not isinstance(el, AbstractForce):
                raise ValueError(f"MultibodySystem.forces[{k}] must be a force element, got {type(el).__name__}")
            points, E = el.attachments()
            ids, a, f = [], [], []
            for side, p in zip(("body1", "body2"), points):
                name = getattr(el, side)
                if name in (None, "world"):
                    ids.append(-1)
                    a.append(p)
                    f.append(E)
                elif name in index:
                    b: RigidBody = bodies[index[name]]
                    R = b.rotation()
                    ids.append(index[name])
                    a.append(R.T @ (p - b.position))
                    f.append(R.T @ E)
                else:
                    raise ValueError(
                        f"MultibodySystem.forces[{k}] ({type(el).__name__}).{side} = {name!r} names no body; "
                        f"bodies are {names} (or None / 'world' for body1)"
                    )
            ends.append(tuple(ids))
            anchors.append(jnp.stack(a))
            frames.append(jnp.stack(f))
        self.ends = tuple(ends)
        self.anchors = jnp.stack(anchors) if anchors else jnp.zeros((0, 2, 3))
        self.frames = jnp.stack(frames) if frames else jnp.zeros((0, 2, 3, 3))
        self.groups, self.members = _group_joints(forces)

    def _coordinates(self, x, R, only_forces=False):
        """Per group, the stacked element coordinates at body positions ``x`` ``(n_bodies, 3)``
        and rotations ``R`` ``(n_bodies, 3, 3)`` (``None`` for groups without a generalised force
        when ``only_forces``)."""
        x_ext = jnp.concatenate([x, jnp.zeros((1, 3), x.dtype)])  # the world: index -1, at rest
        R_ext = jnp.concatenate([R, jnp.eye(3, dtype=R.dtype)[None]])
        out = []
        for g, members in zip(self.groups, self.members):
            if only_forces and not type(g).has_force:
                out.append(None)
                continue
            idx = np.asarray(members, dtype=int)
            ends = np.asarray(self.ends, dtype=int).reshape(-1, 2)[idx]
            P = x_ext[ends] + jnp.einsum("nsij,nsj->nsi", R_ext[ends], self.anchors[idx])
            F = R_ext[ends] @ self.frames[idx]
            out.append(eqx.filter_vmap(lambda el, P, F: el.coordinates(P, F))(g, P, F))
        return out

    def potential(self, x, R):
        """Total stored energy of the springs [J]."""
        return self._energy(self._coordinates(x, R), x.dtype)

    def _energy(self, coords, dtype):
        total = jnp.zeros((), dtype)
        for g, c in zip(self.groups, coords):
            if type(g).has_potential:
                total = total + jnp.sum(eqx.filter_vmap(lambda el, c: el.potential(c))(g, c))
        return total

    def work(self, x, R, xd, omega, t):
        """The function ``(x', R') -> E(x', R') - f . c(x', R')`` whose gradient in the
        configuration, at ``(x, R)``, is the elements' contribution to the residual: the
        springs' energy gradient minus the generalised forces ``f`` of dampers and inputs,
        evaluated here at the stage point (``xd`` world velocities, ``omega`` body-frame angular
        velocities, ``t`` time) and held fixed under the variation (virtual work)."""
        if not any(type(g).has_force for g in self.groups):
            return lambda xx, RR: self.potential(xx, RR)
        # coordinate rates: forward derivative along the body velocities (R' = R exp(theta), theta' = omega)
        c, c_dot = jax.jvp(lambda xx, th: self._coordinates(xx, R @ rotation_matrix(th), only_forces=True),
                           (x, jnp.zeros_like(omega)), (xd, omega))
        f = [None if ci is None else eqx.filter_vmap(lambda el, c, cd: el.generalised_force(c, cd, t))(g, ci, cdi)
             for g, ci, cdi in zip(self.groups, c, c_dot)]

        def work(xx, RR):
            coords = self._coordinates(xx, RR)
            total = self._energy(coords, xx.dtype)
            for fi, ci in zip(f, coords):
                if fi is not None:
                    total = total - jnp.sum(fi * ci)
            return total

        return work
