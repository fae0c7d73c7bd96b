"""Tendons, usable by every rod model: the routing ``r(s)`` of the channel (:class:`Routing` and
its family) and :class:`Tendon` (tension or motor-displacement control, termination, friction), with
the eager checks every model applies to its tendons. Definitions only: the loads a tendon puts on a
rod are each model's own (:mod:`jaxrod.models.cosserat.actuation`, :mod:`jaxrod.models.der.actuation`,
:mod:`jaxrod.models.pcs.actuation`).

A tendon runs in a channel at offset ``r(s)`` from the backbone, in the local cross-section frame,
from the base to its termination at reference arc length ``s_t``. It is driven by its tension or,
with ``control="displacement"`` (shooting model only), by its motor displacement (the tension then
becomes an unknown fixed by the tendon's length, with compliance); an optional friction-damping
coefficient ``beta`` adds the sliding-friction approximation of Till et al.'s experimental robot
(see :class:`Tendon`).

Routings are Modules whose parameters are array leaves: changing an offset, a helix rate or the
samples of an arbitrary routing does not recompile. The models differentiate ``r(s)`` in forward
mode, so any smooth routing works.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..signals import Constant, Samples
from ..validation import check_finite, check_nonnegative, check_positive, check_scalar, check_shape, is_traced

_f64 = lambda x: jnp.asarray(x, dtype=float)  # noqa: E731


class Routing(eqx.Module):
    """Tendon offset from the backbone: ``__call__(s) -> (3,)`` local-frame offset [m] at reference
    arc length ``s`` [m] (third component 0 for a channel in the cross-section plane). Subclass it
    with array-leaf parameters for a custom routing; it must be twice differentiable in ``s``."""

    @abc.abstractmethod
    def __call__(self, s):
        """``(3,)`` offset [m] at arc length ``s`` [m]."""


class StraightRouting(Routing):
    """Channel parallel to the backbone at constant ``offset (2,)`` [m] in the ``(d1, d2)`` plane."""

    offset: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        check_shape("StraightRouting.offset", self.offset, (2,))
        check_finite("StraightRouting.offset", self.offset)

    def __call__(self, s):
        del s
        return jnp.concatenate([self.offset, jnp.zeros(1)])


class HelicalRouting(Routing):
    """Helical channel ``radius (cos(phase + rate s), sin(phase + rate s), 0)``: ``radius`` [m],
    ``rate`` [rad/m] (``2 pi / pitch``), ``phase`` [rad] at the base."""

    radius: jax.Array = eqx.field(converter=_f64)
    rate: jax.Array = eqx.field(converter=_f64)
    phase: jax.Array = eqx.field(converter=_f64, default=0.0)

    def __check_init__(self):
        for name in ("radius", "rate", "phase"):
            check_scalar(f"HelicalRouting.{name}", getattr(self, name))
        check_nonnegative("HelicalRouting.radius", self.radius, "m")
        check_finite("HelicalRouting.rate", self.rate)
        check_finite("HelicalRouting.phase", self.phase)

    def __call__(self, s):
        a = self.phase + self.rate * s
        return self.radius * jnp.stack([jnp.cos(a), jnp.sin(a), jnp.zeros_like(a)])


class SampledRouting(Routing):
    """Arbitrary routing from ``offsets (K, 2)`` [m] at ``K >= 2`` equally spaced arc lengths
    ``0, length/(K-1), ..., length`` [m], joined by a natural cubic spline (continuous ``r_s`` and
    ``r_ss``, which enter the tendon loads). ``offsets`` is an array leaf; ``length`` is static."""

    length: float = eqx.field(static=True)
    offsets: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        if not (np.isfinite(self.length) and self.length > 0):
            raise ValueError(f"SampledRouting.length must be a finite number > 0 m, got {self.length}")
        check_shape("SampledRouting.offsets", self.offsets, (None, 2))
        if np.shape(self.offsets)[0] < 2:
            raise ValueError(f"SampledRouting.offsets needs >= 2 samples (rows), got shape {np.shape(self.offsets)}")
        check_finite("SampledRouting.offsets", self.offsets)

    def _second_derivatives(self):
        y = self.offsets
        k = y.shape[0]
        if k < 3:
            return jnp.zeros_like(y)
        h = self.length / (k - 1)
        # natural spline: M_0 = M_{K-1} = 0, M_{j-1} + 4 M_j + M_{j+1} = 6 (y_{j-1} - 2 y_j + y_{j+1}) / h^2
        T = 4.0 * np.eye(k - 2) + np.eye(k - 2, k=1) + np.eye(k - 2, k=-1)
        inner = jnp.linalg.solve(jnp.asarray(T), 6.0 * (y[:-2] - 2.0 * y[1:-1] + y[2:]) / h**2)
        z = jnp.zeros((1, 2))
        return jnp.concatenate([z, inner, z])

    def __call__(self, s):
        y, M = self.offsets, self._second_derivatives()
        k = y.shape[0]
        h = self.length / (k - 1)
        j = jnp.clip(jnp.floor(s / h).astype(int), 0, k - 2)
        a = (s - j * h) / h  # outside [0, length] the end cubic is extended
        b = 1.0 - a
        r = b * y[j] + a * y[j + 1] + h**2 / 6.0 * ((b**3 - b) * M[j] + (a**3 - a) * M[j + 1])
        return jnp.concatenate([r, jnp.zeros(1)])


class FunctionRouting(Routing):
    """Routing from a plain function ``fn(s) -> (2,) or (3,)`` [m]. The function is static:
    a different function recompiles (subclass :class:`Routing` with array leaves to avoid that)."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, s):
        r = jnp.asarray(self.fn(s), dtype=float)
        return jnp.concatenate([r, jnp.zeros(1)]) if r.shape == (2,) else r


class Tendon(eqx.Module):
    """One tendon: routing, control input and termination.

    Attributes:
        routing: :class:`Routing` (or any differentiable ``s -> (3,)`` callable, then static).
        tension: tension amplitude tau [N] (>= 0), an array leaf. With displacement control it is
            only the initial guess of the first static solve.
        profile: dimensionless time profile (``profile(t)``, e.g. :class:`~jaxrod.signals.Constant`,
            :class:`~jaxrod.signals.Samples` for a sampled history): the tension is
            ``tension * profile(t)``, or with displacement control the displacement is
            ``displacement * profile(t)``.
        termination: reference arc length s_t [m] where the tendon is anchored (static: it moves
            a grid node onto s_t); ``None`` for the tip.
        control: ``"tension"`` (the tension is the input) or ``"displacement"`` (static): the motor
            displacement ``z(t)`` [m] is the input (negative: reeled in, pulls) and the tension
            becomes an extra shooting unknown with the residual (spec 7.2 [REPO])
            ``(extra_length + int_0^s_t |p_si^b| ds) / (1 + compliance tau) = rest_length + z(t)``:
            the unstretched tendon between motor and anchor is ``rest_length + z``.
        displacement: displacement amplitude [m] (displacement control).
        compliance: tendon stretch per unit length and newton [1/N] (>= 0), displacement control.
        extra_length: tendon length from the motor to the base plate [m] (>= 0).
        rest_length: unstretched tendon length [m] from motor to anchor at ``z = 0``; ``None``:
            ``extra_length + s_t`` (a straight channel on the straight rod, just taut).
        friction: friction-damping coefficient beta [s/m] (>= 0) or ``None`` (term not compiled):
            the backbone is loaded per unit length by ``f^b = beta |tau| |u_xy| nu p_si^b/|p_si^b|``,
            ``l^b = r x f^b`` (local frame; spec 7.2, Cpp_simple_friction), ``nu`` [m/s] the
            velocity of the tendon relative to its channel, toward the anchor:
            ``nu(s) = d/dt [S(s_t) - S(s)]`` with ``S(s)`` the unstretched tendon length from the
            motor to ``s``, differentiated by the time scheme (the tendon is fixed at its anchor,
            so ``nu(s_t) = 0`` and ``nu(0) = dz/dt`` under displacement control). The force drags
            the channel along with the tendon; its reaction on the tendon changes the tension
            along the channel, ``T_s = f . t`` (``tension`` is then the motor-side value), so the
            anchor is pulled by ``T(s_t)`` and the friction forces on the robot sum to zero (with a
            constant tension they would push the whole robot along its tendons: measured energy
            growth on the ``tendon-robot-step`` scene).
    """

    routing: Routing | Callable
    tension: jax.Array = eqx.field(converter=_f64, default=0.0)
    profile: eqx.Module = Constant()
    termination: float | None = eqx.field(static=True, default=None)
    control: str = eqx.field(static=True, default="tension")
    displacement: jax.Array = eqx.field(converter=_f64, default=0.0)
    compliance: jax.Array = eqx.field(converter=_f64, default=0.0)
    extra_length: jax.Array = eqx.field(converter=_f64, default=0.0)
    rest_length: jax.Array | None = eqx.field(converter=lambda x: None if x is None else _f64(x), default=None)
    friction: jax.Array | None = eqx.field(converter=lambda x: None if x is None else _f64(x), default=None)

    def __check_init__(self):
        if np.shape(self.tension) != ():
            raise ValueError(f"Tendon.tension must be a scalar [N], got shape {np.shape(self.tension)}")
        check_nonnegative("Tendon.tension", self.tension, "N (a tendon can only pull)")
        if self.control not in ("tension", "displacement"):
            raise ValueError(f"Tendon.control must be 'tension' or 'displacement', got {self.control!r}")
        if (self.control == "tension" and isinstance(self.profile, Samples)
                and not is_traced(self.profile.values)):
            check_nonnegative("Tendon.profile.values", self.profile.values, "(a tendon can only pull)")
        for name, unit in (("displacement", "m"), ("compliance", "1/N"), ("extra_length", "m"),
                           ("rest_length", "m"), ("friction", "s/m")):
            x = getattr(self, name)
            if x is None:
                continue
            if np.shape(x) != ():
                raise ValueError(f"Tendon.{name} must be a scalar [{unit}], got shape {np.shape(x)}")
            if name == "displacement":
                check_finite("Tendon.displacement", x)
            elif name == "rest_length":
                check_positive("Tendon.rest_length", x, unit)
            else:
                check_nonnegative(f"Tendon.{name}", x, unit)
        if self.termination is not None and not np.isfinite(self.termination):
            raise ValueError(f"Tendon.termination must be a finite arc length [m] or None, got {self.termination}")
        if not callable(self.routing):
            raise TypeError(f"Tendon.routing must be a Routing (or a callable s -> (3,)), got {type(self.routing).__name__}")

    @property
    def needs_length(self) -> bool:
        """Whether the model integrates this tendon's length (displacement control or friction)."""
        return self.control == "displacement" or self.friction is not None

    def tension_at(self, t):
        """Tension [N] at time ``t`` [s] (tension control)."""
        return self.tension * self.profile(t)

    def displacement_at(self, t):
        """Motor displacement z [m] at time ``t`` [s] (displacement control; < 0 pulls)."""
        return self.displacement * self.profile(t)


def check_tension_controlled(tendons, model: str) -> None:
    """Refuse tendons that need the integrated tendon length (displacement control, friction) on a
    model (``model``: its name for the message) that takes a cable's loads as ``-tau dl/dq``."""
    for i, td in enumerate(tendons):
        if getattr(td, "needs_length", False):
            raise ValueError(
                f"tendons[{i}]: {model} tendons are tension-controlled and frictionless (got control={td.control!r}, "
                f"friction={td.friction}); displacement control and friction are on the shooting model (CosseratModel)"
            )


def check_tendons(tendons, length: float, section_radius, grid) -> None:
    """Eager checks of a model's tendons against the rod: termination in ``(0, length]``, offset
    ``|r(s)| <= section_radius`` at the grid nodes up to the termination and 64 points between."""
    for i, td in enumerate(tendons):
        if not isinstance(td, Tendon):
            raise TypeError(f"tendons must hold Tendon objects, got {type(td).__name__} at tendons[{i}]")
        end = length if td.termination is None else td.termination
        if not (0.0 < end <= length * (1.0 + 1e-12)):  # the rounding of a summed rod length
            raise ValueError(
                f"tendons[{i}].termination = {td.termination} m is outside the rod: allowed 0 < s_t <= L = {length} m"
            )
        if is_traced(td.routing) or section_radius is None or is_traced(section_radius):
            continue
        s = np.unique(np.concatenate([grid[grid <= end], np.linspace(0.0, end, 64)]))
        r = np.asarray(jax.vmap(td.routing)(jnp.asarray(s)))
        dist = np.linalg.norm(r[:, :2], axis=1)
        k = int(np.argmax(dist))
        R = float(section_radius)
        if not np.all(np.isfinite(dist)) or dist[k] > R * (1.0 + 1e-12):
            raise ValueError(
                f"tendons[{i}] leaves the cross-section: |r(s)| = {dist[k]:.6g} m at s = {s[k]:.6g} m, allowed "
                f"|r| <= section_radius = {R:.6g} m (set CosseratModel.section_radius to the spacer-disk radius)"
            )


def section_radius_default(rod):
    """Equivalent radius ``sqrt(A / pi)`` [m] of the backbone section."""
    check_positive("area", rod.area, "m^2")
    return jnp.sqrt(rod.area / jnp.pi)
