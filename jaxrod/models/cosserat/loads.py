"""Time profiles of loads and point loads at interior arc lengths.

A load is a constant vector (a differentiable array leaf) times a dimensionless time profile
``profile(t)``. Profiles are small Modules whose parameters are array leaves, so changing a
release time or an impulse duration does not recompile.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import check_finite, check_positive, check_shape, is_traced


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


class PointLoad(eqx.Module):
    """Force [N] and moment [N m] (global frame) applied at reference arc length ``s`` [m],
    ``0 < s < L``, scaled by ``profile(t)``. Integrated piecewise: the internal force and moment
    jump by ``-force`` and ``-moment`` at ``s`` (a grid node is moved onto ``s``)."""

    s: float = eqx.field(static=True)
    force: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    moment: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    profile: eqx.Module = Constant()

    def __check_init__(self):
        if not np.isfinite(self.s):
            raise ValueError(f"PointLoad.s must be finite, got {self.s}")
        check_shape("PointLoad.force", self.force, (3,))
        check_shape("PointLoad.moment", self.moment, (3,))
        check_finite("PointLoad.force", self.force)
        check_finite("PointLoad.moment", self.moment)


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
