"""Time signals ``t -> value``: dimensionless profiles that scale loads, tendon tensions and
chamber controls (``value * profile(t)``).

Profiles are small Modules whose parameters are array leaves, so changing a release time, an
impulse duration or the samples of a history does not recompile.

* :class:`Constant`: ``1``;
* :class:`ReleasedAt`: ``1`` up to a release time, ``0`` after;
* :class:`Hat`: a triangular pulse of unit peak;
* :class:`Samples`: piecewise linear through sampled values.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .validation import check_finite, check_positive, check_shape, is_traced

__all__ = ["Constant", "Hat", "ReleasedAt", "Samples"]


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
