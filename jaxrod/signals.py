"""Time signals ``t -> value``: dimensionless profiles that scale loads, tendon tensions and
chamber controls (``value * profile(t)``).

Profiles are small Modules whose parameters are array leaves, so changing a release time, an
impulse duration or the samples of a history does not recompile.

* :class:`Constant`: ``1``;
* :class:`ReleasedAt`: ``1`` up to a release time, ``0`` after;
* :class:`Hat`: a triangular pulse of unit peak;
* :class:`Samples`: piecewise linear through sampled values.

Signals of other shapes (not profiles):

* :class:`SampledMotion`: values of any shape ``(T, ...)`` sampled in time, linear between samples
  (prescribed DOFs of a model, a measured load);
* :class:`SampledTrajectory`: a scalar natural C2 cubic spline through samples (prescribed joint
  coordinates of a multibody system: continuous velocities and accelerations);
* :class:`OfTime`: a signal of time as an input that is also handed the state
  (``(t, *state) -> signal(t)``: a sampled motor torque for :class:`~jaxrod.system.JointTorque`);
* :class:`LinearRamp`: the actuation map ``(t, stored) -> clip((t - start) / duration, 0, 1) *
  stored`` of a DER network's natural curvature.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .validation import check_finite, check_positive, check_shape, is_traced

__all__ = [
    "Constant",
    "Hat",
    "LinearRamp",
    "OfTime",
    "ReleasedAt",
    "SampledMotion",
    "SampledTrajectory",
    "Samples",
    "interp_linear",
]

_f64 = lambda x: jnp.asarray(x, dtype=jnp.float64)  # noqa: E731


class Constant(eqx.Module):
    """``profile(t) = 1``."""

    def __call__(self, t):
        return jnp.ones_like(jnp.asarray(t, dtype=float))


class ReleasedAt(eqx.Module):
    """``1`` up to and including ``time`` [s], ``0`` after: a load released at ``time``.

    With ``time = t0`` the load shapes the initial static equilibrium and is gone for every step.
    """

    time: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=0.0)

    def __call__(self, t):
        return jnp.where(t <= self.time, 1.0, 0.0)


class Hat(eqx.Module):
    """Triangular pulse of unit peak: rises linearly from ``start`` to ``start + duration/2``,
    falls back to zero at ``start + duration`` [s] (Till et al. sec. 4, impulse near the base)."""

    duration: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    start: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=0.0)

    def __check_init__(self):
        check_positive("Hat.duration", self.duration, "s")

    def __call__(self, t):
        x = (t - self.start) / (0.5 * self.duration)
        return jnp.clip(1.0 - jnp.abs(x - 1.0), 0.0, 1.0)


class Samples(eqx.Module):
    """Piecewise-linear profile through ``values (K,)`` at increasing ``times (K,)`` [s], held
    constant outside ``[times[0], times[-1]]`` (e.g. a measured or planned tendon tension history
    normalised by its amplitude). Both are array leaves: a new history does not recompile."""

    times: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    values: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))

    def __check_init__(self):
        check_shape("Samples.times", self.times, (None,))
        check_shape("Samples.values", self.values, (np.shape(self.times)[0],))
        check_finite("Samples.times", self.times)
        check_finite("Samples.values", self.values)
        if np.shape(self.times)[0] < 1:
            raise ValueError("Samples.times needs at least one sample")
        if is_traced(self.times):
            return
        t = np.asarray(self.times)
        if np.any(np.diff(t) <= 0):
            raise ValueError(f"Samples.times must be strictly increasing [s], got {t.tolist()}")

    def __call__(self, t):
        return jnp.interp(t, self.times, self.values)


def interp_linear(times, values, t):
    """Piecewise-linear interpolation of ``values (T, ...)`` sampled at increasing ``times (T,)``
    [s] at the scalar time ``t`` [s]; the end values are held outside ``[times[0], times[-1]]``."""
    T = times.shape[0]
    if T == 1:
        return values[0]
    i = jnp.clip(jnp.searchsorted(times, t, side="right") - 1, 0, T - 2)
    w = jnp.clip((t - times[i]) / (times[i + 1] - times[i]), 0.0, 1.0)
    return (1.0 - w) * values[i] + w * values[i + 1]


def _check_times(name, times):
    times = jnp.asarray(times, dtype=float)
    check_shape(name, times, (None,))
    if times.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one sample time, got shape {times.shape}")
    check_finite(name, times)
    if not is_traced(times):
        bad = np.flatnonzero(np.diff(np.asarray(times)) <= 0)
        if bad.size:
            raise ValueError(
                f"{name} must be strictly increasing [s]; it is not after sample(s) {bad[:5].tolist()}"
            )
    return times


class SampledMotion(eqx.Module):
    """Prescribed values of a model's fixed DOFs sampled in time (array leaves: traced).

    Attributes:
        times: ``(T,)`` strictly increasing sample times [s].
        values: ``(T, *shape)`` the model's ``q`` at those times (``(T, N, 4)`` for a DER rod:
            positions [m] and edge twist angles [rad] relative to the reference frame); only the
            entries of fixed DOFs are used.
    """

    times: jax.Array
    values: jax.Array

    def __init__(self, times, values):
        self.times = _check_times("times", times)
        self.values = jnp.asarray(values, dtype=float)
        if self.values.ndim < 1 or self.values.shape[0] != self.times.shape[0]:
            raise ValueError(
                f"values must have one entry per sample time ({self.times.shape[0]}) along axis 0, "
                f"got shape {self.values.shape}"
            )
        check_finite("values", self.values)

    @classmethod
    def from_function(cls, fn, times) -> SampledMotion:
        """Sample ``fn(t) -> q`` at ``times (T,)`` [s]."""
        times = _check_times("times", times)
        return cls(times, jax.vmap(lambda t: jnp.asarray(fn(t), dtype=float))(times))

    def __call__(self, t):
        """Values at time ``t`` [s] (linear in time between samples)."""
        return interp_linear(self.times, self.values, t)


class SampledTrajectory(eqx.Module):
    """A trajectory ``t [s] -> value`` through sampled data: the natural C2 cubic spline through
    ``(times, values)`` (so velocities and accelerations, hence constraint forces, are
    continuous), held constant at the end values outside ``[times[0], times[-1]]``.

    ``times`` and ``values`` are array leaves: new data of the same length reuse the compiled
    program, and gradients with respect to ``values`` flow through the spline (its second
    derivatives are one tridiagonal solve per evaluation, ``O(K)``).

    Attributes:
        times: ``(K,)`` strictly increasing sample times [s], ``K >= 2``.
        values: ``(K,)`` samples (the unit of the constraint that uses it: m or rad).
    """

    times: jax.Array = eqx.field(converter=_f64)
    values: jax.Array = eqx.field(converter=_f64)

    def __check_init__(self):
        if isinstance(self.times, jax.core.Tracer) or isinstance(self.values, jax.core.Tracer):
            return
        t, y = np.asarray(self.times), np.asarray(self.values)
        if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or not np.all(np.diff(t) > 0):
            raise ValueError(f"SampledTrajectory.times must be a 1-D strictly increasing array of >= 2 finite "
                             f"times [s], got shape {t.shape}")
        if y.shape != t.shape or not np.all(np.isfinite(y)):
            raise ValueError(f"SampledTrajectory.values must be finite with the shape of times {t.shape}, "
                             f"got shape {y.shape}")

    def _second_derivatives(self):
        t, y = self.times, self.values
        h = jnp.diff(t)
        k = t.shape[0]
        slope = jnp.diff(y) / h
        # natural spline: M_0 = M_{K-1} = 0, interior rows h_{i-1} M_{i-1} + 2 (h_{i-1} + h_i) M_i + h_i M_{i+1}
        rhs = jnp.zeros(k).at[1:-1].set(6.0 * jnp.diff(slope))
        diag = jnp.ones(k).at[1:-1].set(2.0 * (h[:-1] + h[1:]))
        lower = jnp.zeros(k).at[1:-1].set(h[:-1])
        upper = jnp.zeros(k).at[1:-1].set(h[1:])
        return jax.lax.linalg.tridiagonal_solve(lower, diag, upper, rhs[:, None])[:, 0]

    def __call__(self, t):
        ts, y = self.times, self.values
        M = self._second_derivatives()
        tc = jnp.clip(t, ts[0], ts[-1])
        i = jnp.clip(jnp.searchsorted(ts, tc, side="right") - 1, 0, ts.shape[0] - 2)
        h = ts[i + 1] - ts[i]
        a, b = (ts[i + 1] - tc) / h, (tc - ts[i]) / h
        return a * y[i] + b * y[i + 1] + ((a**3 - a) * M[i] + (b**3 - b) * M[i + 1]) * h * h / 6.0


class OfTime(eqx.Module):
    """``(t, *state) -> signal(t)``: a signal of time only, where the caller also passes the
    state (``JointTorque.torque(t, angle, rate)``). ``signal`` is any traceable ``t -> value``
    (a :class:`Samples`, a :class:`SampledTrajectory`...); its arrays stay leaves."""

    signal: eqx.Module

    def __call__(self, t, *state):
        return self.signal(t)


class LinearRamp(eqx.Module):
    """Actuation map ``(t, stored) -> clip((t - start) / duration, 0, 1) * stored``: ramps the
    stored natural curvature (or twist) from zero to its value over ``[start, start + duration]``
    [s]. Hashable, so two equal ramps share compiled programs; use it as
    ``natural_curvature_fn=LinearRamp(1.0)``. (Scaling the integrated curvature scales
    ``tan(phi/2)``, not the turning angle ``phi``; the two differ by O(phi^2).)"""

    duration: float = eqx.field(static=True)
    start: float = eqx.field(static=True, default=0.0)

    def __check_init__(self):
        if not (float(self.duration) > 0):
            raise ValueError(f"LinearRamp.duration must be > 0 s, got {self.duration}")

    def __call__(self, t, stored):
        return jnp.clip((t - self.start) / self.duration, 0.0, 1.0) * stored
