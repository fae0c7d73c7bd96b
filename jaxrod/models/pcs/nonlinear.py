"""Optional nonlinear effects of a PCS rod, after TMTDyn (spec seed004 sections 6.2-6.4, 9.3), as
pure functions of the segment strains, switched on in a :class:`~jaxrod.models.pcs.PCSModel` by
``nonlinear=NonlinearOptions(...)`` (:class:`NonlinearOptions`; the STIFF-FLOP scene's options).

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

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import is_traced

__all__ = ["STRETCH_LAWS", "NonlinearOptions", "chamber_area_factor", "power_law_rates", "stretch_factors"]


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


class NonlinearOptions(eqx.Module):
    """The nonlinear options of a :class:`~jaxrod.models.pcs.PCSModel` (module docstring); all off:
    the linear model.

    Attributes:
        stretch_update: ``False``, ``True``/``"tmtdyn"`` (TMTDyn's hyperelastic/braid stretch
            update) or ``"neo-hookean"`` (static).
        chamber_growth: beta [1/Pa]: cap area ``a_p (1 + beta P)``; ``None``: constant area.
        damping_power: nu >= 1 of the power-law damping; ``None``: linear Kelvin-Voigt.
    """

    stretch_update: bool | str = eqx.field(static=True, default=False)
    chamber_growth: jax.Array | None = eqx.field(
        converter=lambda x: None if x is None else jnp.asarray(x, dtype=float), default=None)
    damping_power: jax.Array | None = eqx.field(
        converter=lambda x: None if x is None else jnp.asarray(x, dtype=float), default=None)

    def __check_init__(self):
        if self.stretch_update not in (False, True) + STRETCH_LAWS:
            raise ValueError(f"NonlinearOptions: stretch_update must be False, True (= 'tmtdyn') or one of "
                             f"{STRETCH_LAWS}, got {self.stretch_update!r}")
        for name in ("chamber_growth", "damping_power"):
            x = getattr(self, name)
            if x is None or is_traced(x):
                continue
            x = float(np.asarray(x))
            if not np.isfinite(x):
                raise ValueError(f"NonlinearOptions: {name} must be finite, got {x}")
            if name == "damping_power" and x < 1.0:
                raise ValueError(f"NonlinearOptions: damping_power (nu) must be >= 1 (the power law's "
                                 f"derivative at rest is singular below 1), got {x}")

    @property
    def active(self) -> bool:
        """True when an option is on (static)."""
        return bool(self.stretch_update) or self.chamber_growth is not None or self.damping_power is not None

    def residual(self, model, q, v, a, t):
        """The residual of ``model`` (a ``PCSModel`` with chambers, no tendons) with these options:
        inertia, gravity and external loads as in ``PCSModel.residual``; elastic, viscous and
        chamber forces with the stretch update, power-law damping and pressure-grown chambers."""
        rod = model.rod
        n = int(rod.n_segments)
        ell = rod.segment_lengths
        xis, xid = model.strains(q), model.strain_rates(v)
        if self.stretch_update:
            law = "tmtdyn" if self.stretch_update is True else self.stretch_update
            k_fac, arm = stretch_factors(xis[:, 3], law)
        else:
            k_fac, arm = jnp.ones((n, 6)), jnp.ones(n)
        rate = xid if self.damping_power is None else power_law_rates(xid, self.damping_power, rod.length)
        w = ell[:, None] * (k_fac * rod.stiffness_density * (xis - rod.rest_strain) + rod.damping_density * rate)
        r = model.generalized_forces(q, v, a, t) + (w @ model.basis.B).reshape(-1)
        if model.chambers:
            tau = jnp.zeros(3)
            f = jnp.zeros(())
            for c in model.chambers:
                P = c.pressure_at(t)
                PA = P * c.area
                if self.chamber_growth is not None:
                    PA = PA * chamber_area_factor(P, self.chamber_growth)
                tau = tau + PA * jnp.stack([jnp.zeros(()), c.offset[1], -c.offset[0]])
                f = f + PA
            # per segment: the moment arms shrink with the stretch (arm), the axial force does not
            Q = ell[:, None] * jnp.concatenate(
                [arm[:, None] * tau[None, :], jnp.broadcast_to(jnp.stack([f, 0.0 * f, 0.0 * f]), (n, 3))], axis=1)
            r = r - model.load_factor * (Q @ model.basis.B).reshape(-1)
        return r
