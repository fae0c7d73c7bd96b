"""Travelling waves of natural curvature: the muscles of a continuum snake on a DER rod.

:class:`CurvatureWave` is a ``natural_curvature_fn`` of :class:`~jaxrod.models.der.DERModel`: at
time ``t`` [s] it adds to the stored natural curvature of every bending stencil ``i`` (interior
node ``i + 1``) the turning angle ``phi_i = kappa_i(t) V_i`` of a curvature [1/m]

    ``kappa_i(t) = r(t) A(sigma_i) sin(2 pi t / T - 2 pi sigma_i / lambda + phase)``,
    ``r(t) = min(t / t_ramp, 1)``,

as DER's integrated curvature ``2 tan(phi_i / 2)`` along the stencil's ``direction`` (its two
material components per unit curvature). ``sigma_i`` is a dimensionless position along the body
(fraction of its length), ``A`` a cubic B-spline of the array ``coefficients`` [1/m] over
``sigma`` in [0, 1] (:func:`bspline_basis`, PyElastica's ``_bspline`` knots: ``n - 2`` equally
spaced control points, the end knots repeated), ``lambda`` the wave length in body lengths and
``T`` the period [s].

Why a natural curvature and not a torque: a pair of opposite couples ``+-m`` on the two sides of
an interior node (PyElastica's ``MuscleTorques``) enters the moment balance exactly as a change
``m / EI`` of the natural curvature (the internal moment ``EI (kappa - kappa_bar)`` absorbs it), so
a muscle torque wave of amplitude ``tau(s)`` [N m] is the curvature wave ``tau(s) / EI``.

Every parameter (coefficients, period, wave length, phase, ramp time) is an array leaf: a new gait
reuses the compiled program and ``jax.grad`` of a travelled distance reaches them.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import check_finite, check_positive, check_shape


def bspline_basis(sigma, n_coefficients: int):
    """``(S, n)`` cubic B-spline basis at positions ``sigma`` ``(S,)`` in [0, 1] for ``n >= 4``
    coefficients: ``A(sigma) = basis @ coefficients``. Knots as PyElastica's ``_bspline``: the
    ``n - 2`` control points ``linspace(0, 1, n - 2)`` with the end knots repeated three more
    times (``A(0) = c_0``, ``A(1) = c_{n-1}``). Host-side (NumPy/SciPy), built once."""
    from scipy.interpolate import BSpline

    n = int(n_coefficients)
    if n < 4:
        raise ValueError(f"a cubic B-spline needs n_coefficients >= 4, got {n_coefficients}")
    sigma = np.asarray(sigma, dtype=float)
    if np.any(sigma < 0) or np.any(sigma > 1) or not np.all(np.isfinite(sigma)):
        raise ValueError(f"sigma must lie in [0, 1] (fractions of the body length), got {sigma.min()} .. {sigma.max()}")
    ctrl = np.linspace(0.0, 1.0, n - 2)
    knots = np.concatenate([np.zeros(3), ctrl, np.ones(3)])
    return np.stack([BSpline(knots, np.eye(n)[j], 3, extrapolate=False)(sigma) for j in range(n)], axis=1)


def _f(x):
    return jnp.asarray(x, dtype=float)


class CurvatureWave(eqx.Module):
    """A travelling wave of natural curvature (see the module docstring for the formula).

    Attributes (array leaves, differentiable; none recompiles when changed):
        coefficients: ``(n,)`` B-spline coefficients of the amplitude ``A(sigma)`` [1/m].
        period: ``T`` [s] > 0.
        wave_length: ``lambda`` [body lengths] > 0.
        phase: phase shift [rad].
        ramp_time: ``t_ramp`` [s] > 0 over which the amplitude grows linearly from 0.
        sigma: ``(S,)`` position of every bending stencil along the body [fraction of length].
        basis: ``(S, n)`` :func:`bspline_basis` at ``sigma``.
        voronoi: ``(S,)`` Voronoi lengths ``V_i`` [m] of the stencils.
        direction: ``(S, 2)`` material components ``(kappa_1, kappa_2)`` of a unit integrated
            curvature in the bending plane (e.g. a turn to the left seen from above).

    Raises:
        ValueError: non-positive ``period``, ``wave_length`` or ``ramp_time``; non-finite
            ``coefficients`` or ``phase``; shapes that do not match.
    """

    coefficients: jax.Array = eqx.field(converter=_f)
    period: jax.Array = eqx.field(converter=_f)
    wave_length: jax.Array = eqx.field(converter=_f)
    phase: jax.Array = eqx.field(converter=_f)
    ramp_time: jax.Array = eqx.field(converter=_f)
    sigma: jax.Array = eqx.field(converter=_f)
    basis: jax.Array = eqx.field(converter=_f)
    voronoi: jax.Array = eqx.field(converter=_f)
    direction: jax.Array = eqx.field(converter=_f)

    def __check_init__(self):
        n, S = self.coefficients.shape[0], self.sigma.shape[0]
        check_shape("coefficients", self.coefficients, (None,))
        check_shape("basis", self.basis, (S, n))
        check_shape("voronoi", self.voronoi, (S,))
        check_shape("direction", self.direction, (S, 2))
        for name in ("coefficients", "phase"):
            check_finite(name, getattr(self, name))
        check_positive("period", self.period, "s")
        check_positive("wave_length", self.wave_length, "body lengths")
        check_positive("ramp_time", self.ramp_time, "s")

    def curvature(self, t):
        """``(S,)`` curvature ``kappa_i(t)`` [1/m] of the wave at time ``t`` [s]."""
        ramp = jnp.clip(t / self.ramp_time, 0.0, 1.0)
        arg = 2.0 * jnp.pi * (t / self.period - self.sigma / self.wave_length) + self.phase
        return ramp * (self.basis @ self.coefficients) * jnp.sin(arg)

    def __call__(self, t, kappa_bar):
        """Natural curvature ``(S, 2)`` at time ``t`` [s]: the stored ``kappa_bar`` plus the wave."""
        phi = self.curvature(t) * self.voronoi
        return kappa_bar + (2.0 * jnp.tan(0.5 * phi))[:, None] * self.direction

