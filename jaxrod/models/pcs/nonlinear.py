"""Optional nonlinear effects of a PCS rod, after TMTDyn (spec seed004 sections 6.2-6.4, 9.3), as
pure functions of the segment strains (used by :class:`jaxrod.scenes.stiff_flop.StiffFlopModel`;
the linear PCS model of :mod:`jaxrod.models.pcs.model` is unchanged).

Strains are PCS strains per unit *reference* length, ``xi = [u; v]`` (angular first, local x the
rod axis), so ``lambda = v_1`` is the axial stretch (1 at rest).

* **Stretch update** (TMTDyn's hyperelastic / braid "mid-step", spec 6.4 and 9.3), evaluated at
  the current strains inside the residual (implicit: no one-step lag): the elastomer's radii
  shrink as ``r / sqrt(lambda)`` (incompressible), the moduli as ``E / lambda``, ``G / lambda``,
  and the element length grows to ``lambda l``; the braid keeps the chamber radius (cap area)
  constant while the chamber *offset* shrinks as ``r_o / sqrt(lambda)``. For PCS, whose stiffness
  per reference length is ``K / l`` with ``K`` the section stiffness, the rule scales

  - the forces (``E A``, ``G A``: modulus ``1/lambda``, area ``1/lambda``, length ``1/lambda``)
    by ``lambda^-3``,
  - the moments (``E J``, ``G J``: modulus ``1/lambda``, ``J ~ r^4`` by ``1/lambda^2``, length
    ``1/lambda``) by ``lambda^-4``,
  - the chamber moment arms by ``lambda^-1/2`` (their axial force ``P a_p`` is unchanged).

  Closed forms (no gravity, no tip load; one chamber at offset ``d`` with gauge pressure ``P``
  and cap area ``a_p``): the stretch solves ``E A (lambda - 1) lambda^-3 = P a_p`` and the
  curvature (per reference length) is ``u = P a_p d lambda^(7/2) / (E J)``.
  The law is TMTDyn's secant rule: the internal force is ``K(lambda) (xi - xi*)``, not the gradient
  of an energy (the Newton Jacobian is not symmetric). Its axial force ``E A (lambda - 1) /
  lambda^3`` peaks at ``4/27 E A`` (``lambda = 1.5``): beyond that chamber force there is no
  equilibrium (two STIFF-FLOP pairs at 1 bar, 7.9 N, reach it for E below ~170 kPa).
* **Neo-Hookean stretch update** (``law="neo-hookean"``; ours, not TMTDyn's): an incompressible
  neo-Hookean material (shear modulus E/3) instead of TMTDyn's scaling, with the same shrinking
  moment arms ``r_o / sqrt(lambda)``. The axial force is the exact uniaxial one,
  ``N = (E A / 3)(lambda - lambda^-2)`` (monotone: no limit point), i.e. the secant factor
  ``(lambda^2 + lambda + 1) / (3 lambda^2)`` on ``E A (lambda - 1)``; bending, torsion and shear
  use the incremental axial modulus of the stretched material ``E_t = (E/3)(2 lambda^2 +
  lambda^-1)`` on the current section ``J / lambda^2`` per current length (curvature ``u /
  lambda``): the factor ``(2 lambda^-1 + lambda^-4) / 3`` on the moments (and, for simplicity, the
  shear forces). Closed forms as above: ``(E A / 3)(lambda - lambda^-2) = P a_p`` and
  ``u = 3 P a_p d lambda^(-1/2) / (E J (2 lambda^-1 + lambda^-4))``.
* **Chambers that expand with pressure**: cap area ``a_p (1 + beta P)`` [``beta``: 1/Pa] (a
  compliant chamber wall; the braid of STIFF-FLOP limits it). Closed form: the linear PCS answer
  with ``P a_p`` replaced by ``P a_p (1 + beta P)``.
* **Power-law damping** (TMTDyn's ``f = mu v^nu``, sign-preserving, elementwise, spec 6.2, Table 2
  nu = 2): the Kelvin-Voigt force ``D xidot`` becomes ``D xidot |c xidot / (1 s^-1)|^(nu - 1)``
  elementwise, with ``c = (L, L, L, 1, 1, 1)`` (the rod length ``L`` [m] makes the angular rates
  rad/s over the rod, the linear ones stretch per second); ``nu = 1`` is the linear law.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["STRETCH_LAWS", "chamber_area_factor", "power_law_rates", "stretch_factors"]


STRETCH_LAWS = ("tmtdyn", "neo-hookean")


def stretch_factors(lam, law: str = "tmtdyn"):
    """``((..., 6) stiffness factors, (...,) chamber moment-arm factor)`` of the stretch update at
    the axial stretch ``lam (...)`` [-] (module docstring): ``"tmtdyn"``: ``(lam^-4 x3, lam^-3
    x3)``; ``"neo-hookean"``: ``(2/lam + lam^-4)/3`` on the angular and shear modes and
    ``(lam^2 + lam + 1) / (3 lam^2)`` on the axial one; the moment arms ``lam^-1/2`` in both."""
    lam = jnp.asarray(lam, dtype=float)
    if law == "tmtdyn":
        ang, ax, sh = lam**-4, lam**-3, lam**-3
    elif law == "neo-hookean":
        ang = (2.0 / lam + lam**-4) / 3.0
        ax, sh = (lam**2 + lam + 1.0) / (3.0 * lam**2), ang
    else:
        raise ValueError(f"stretch_factors: law must be one of {STRETCH_LAWS}, got {law!r}")
    k = jnp.stack([ang, ang, ang, ax, sh, sh], axis=-1)
    return k, lam**-0.5


def chamber_area_factor(pressure, growth):
    """``1 + beta P`` [-]: the cap area of a chamber at gauge pressure ``P`` [Pa] relative to its
    unpressurised area, ``growth = beta`` [1/Pa]."""
    return 1.0 + growth * pressure


def power_law_rates(xid, power, length):
    """``(n, 6)`` sign-preserving power-law rates ``xid |c xid|^(nu - 1)`` [same units as ``xid``]
    for the strain rates ``xid (n, 6)`` [1/(m s), 1/s], ``power = nu >= 1`` and the rod ``length``
    [m] (``c``: module docstring). ``nu = 1`` returns ``xid``."""
    c = jnp.asarray([length, length, length, 1.0, 1.0, 1.0])
    mag = jnp.abs(c * xid)
    # |x|^(nu-1) with a safe gradient at x = 0 (nu >= 1): exp((nu-1) log|x|), 0 where x = 0
    safe = jnp.where(mag > 0, mag, 1.0)
    scale = jnp.where(mag > 0, jnp.exp((power - 1.0) * jnp.log(safe)), jnp.where(power == 1.0, 1.0, 0.0))
    return xid * scale
