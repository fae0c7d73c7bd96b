"""Pressure chambers of fluidic soft robots on the shooting rod (Till, Aloi & Rucker 2019 sec. 5.3,
spec 7.3).

A chamber is a straight channel of cross-section area ``A`` [m^2] at constant offset ``r`` [m]
from the backbone (local frame, in the section plane), running from the base to the distal end,
where a flat cap closes it. A uniform gauge pressure ``P`` [Pa] loads the backbone

* along the rod with (eq. 18, local components; the model adds ``-f_P``, ``-l_P`` to ``n_s``,
  ``m_s``)::

      -f_P^b = P A u x e3,   -l_P^b = P A [(v + u x r) x e3 + r x (u x e3)];

* at the tip with the cap force ``F^b = P A e3`` and moment ``L^b = r x F^b``:
  ``n^b(L) = n^b(L-) - F^b``, ``m^b(L) = m^b(L-) - L^b``.

Equivalently, the section resultants that balance the external loads are the constitutive ones
minus ``P A d3`` and ``P A (R r) x d3``. With no other load the rod thus bends at the uniform
curvature ``u2 = P A d / EI`` about ``d2`` (chamber at ``r = -d e1``) and stretches to
``v3 = 1 + P A / EA`` (tests/test_pressure_cosserat.py).

Control (one per chamber, ``value * profile(t)``):

* ``pressure`` [Pa] gauge, prescribed;
* ``volume`` [m^3] (incompressible fluid, a positive-displacement pump): ``P`` is an extra
  shooting unknown with the residual ``(V_I - V_C) / (A L)``;
* ``moles`` [mol] (ideal gas): ``P`` is an extra unknown with the residual ``(V_I - V_G) / (A L)``,
  ``V_G = n R_gas T / (P + P_atm)``.

Chamber volume (paper): ``V_I = int_0^L A |v + u x r| ds``, integrated with the same quadrature the
shooting integrator applies to the state (RK4: the stage points; Euler: the left nodes), i.e. as
if ``V`` were one more integrated state.

Work conjugacy (derived here; the paper does not discuss it). The virtual work of eq. 18 and the
cap equals ``P dV_n`` with ``V_n = int_0^L A e3 . (v + u x r) ds``, the volume swept by the planar
chamber section (area A in the ``d1, d2`` plane) along its centre line: the resultants above are
``d/dv`` and ``d/du`` of ``W(v, u) - P A e3 . (v + u x r)`` (``e3 . (u x r) = u . (r x e3)``). The
paper's ``|v + u x r|`` equals ``e3 . (v + u x r)`` when the chamber line is normal to the section,
i.e. when ``v1 - u3 r2 = v2 + u3 r1 = 0`` (no transverse shear or torsion at the chamber): true for
the uniform planar bending above, second order in shear and twist otherwise (the norm is the
larger). The residual keeps the paper's norm, so with shear or twist the volume-controlled
equilibrium is not exactly the stationary point of the enclosed energy ``W - P V``.

Pressures act quasi-statically (no fluid mass, no pump dynamics), A is constant.

:class:`Chamber` is the one chamber class of the package: :class:`~jaxrod.models.pcs.PCSModel` and
:class:`~jaxrod.models.der.DERModel` take it too (``chambers=``, pressure control only: they read
:meth:`Chamber.pressure_at`), with :func:`check_chambers` against their ``section_radius``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import check_finite, check_positive, check_shape, is_traced
from .loads import Constant, Samples

CONTROLS = ("pressure", "volume", "moles")
#: Defaults of the ideal-gas chamber (spec 7.3 table): J/(mol K), K, Pa.
GAS_CONSTANT, ROOM_TEMPERATURE, ATMOSPHERE = 8.314, 293.15, 101325.0

_f64 = lambda x: jnp.asarray(x, dtype=float)  # noqa: E731


class Chamber(eqx.Module):
    """One pressure chamber (see the module docstring).

    Build it with exactly one control keyword::

        Chamber(offset=(-0.0103, 0.0), area=1.96e-5, pressure=8e4)      # gauge [Pa]
        Chamber(offset=..., area=..., pressure=1.0, profile=Samples(times, p))  # measured p [Pa]
        Chamber(offset=..., area=..., volume=2.65e-6)                    # [m^3], incompressible
        Chamber(offset=..., area=..., moles=2e-4, temperature=293.15)   # [mol], ideal gas

    Every time signal is ``value * profile(t)``: a constant, a shaped profile, or sampled data
    (:class:`~.loads.Samples`, whose times and values are array leaves: new data of the same
    length reuse the compiled program and gradients flow to the samples). The offset is in the
    model's section plane: ``(d1, d2)`` on :class:`CosseratModel`, ``(m1, m2)`` on DER, local
    ``(y, z)`` on PCS (all the same axes of the rod section).

    Attributes:
        offset: ``(2,)`` chamber centre in the ``(d1, d2)`` section plane, from the section's
            centroid (the rod axis) [m]; constant along the rod.
        area: chamber (cap) cross-section area A [m^2].
        control: ``"pressure"``, ``"volume"`` or ``"moles"`` (static: it sets the unknowns).
        value: amplitude of the controlled quantity (Pa gauge, m^3 or mol); the control is
            ``value * profile(t)``.
        profile: dimensionless time profile (:class:`~.loads.Constant`, :class:`~.loads.Samples`).
        temperature: T [K] (gas only); atmospheric_pressure: P_atm [Pa] (the zero of the gauge
            pressure; the absolute pressure ``P + P_atm`` must stay >= 0); gas_constant [J/(mol K)].
    """

    offset: jax.Array
    area: jax.Array
    control: str = eqx.field(static=True)
    value: jax.Array
    profile: eqx.Module
    temperature: jax.Array
    atmospheric_pressure: jax.Array
    gas_constant: jax.Array

    def __init__(self, offset, area, *, pressure=None, volume=None, moles=None, profile=None,
                 temperature=ROOM_TEMPERATURE, atmospheric_pressure=ATMOSPHERE, gas_constant=GAS_CONSTANT):
        given = {k: v for k, v in (("pressure", pressure), ("volume", volume), ("moles", moles)) if v is not None}
        if len(given) != 1:
            raise ValueError(
                f"Chamber needs exactly one control: pressure= [Pa gauge], volume= [m^3] or moles= [mol]; "
                f"got {sorted(given) or 'none'}"
            )
        (self.control, value), = given.items()
        self.offset = _f64(offset)
        self.area = _f64(area)
        self.value = _f64(value)
        self.profile = Constant() if profile is None else profile
        self.temperature = _f64(temperature)
        self.atmospheric_pressure = _f64(atmospheric_pressure)
        self.gas_constant = _f64(gas_constant)

    def __check_init__(self):
        check_shape("Chamber.offset", self.offset, (2,))
        check_finite("Chamber.offset", self.offset)
        check_positive("Chamber.area", self.area, "m^2")
        if np.shape(self.value) != ():
            raise ValueError(f"Chamber.{self.control} must be a scalar, got shape {np.shape(self.value)}")
        check_positive("Chamber.temperature", self.temperature, "K")
        check_positive("Chamber.gas_constant", self.gas_constant, "J/(mol K)")
        if not is_traced(self.atmospheric_pressure):
            pa = float(self.atmospheric_pressure)
            if not (np.isfinite(pa) and pa >= 0):
                raise ValueError(f"Chamber.atmospheric_pressure must be finite and >= 0 Pa, got {pa}")
        if is_traced((self.value, self.profile, self.atmospheric_pressure)):
            return
        amounts = float(self.value) * (np.asarray(self.profile.values) if isinstance(self.profile, Samples)
                                       else np.ones(1))
        if self.control == "pressure":
            low = -float(self.atmospheric_pressure)
            if not (np.all(np.isfinite(amounts)) and np.all(amounts >= low)):
                raise ValueError(
                    f"Chamber.pressure (times its profile) must be a gauge pressure >= -atmospheric_pressure "
                    f"= {low} Pa (absolute pressure >= 0), got {amounts.min():.6g} Pa"
                )
        else:
            unit = "m^3" if self.control == "volume" else "mol"
            if not (np.all(np.isfinite(amounts)) and np.all(amounts > 0)):
                raise ValueError(f"Chamber.{self.control} (times its profile) must be > 0 {unit}, got {amounts.min():.6g} {unit}")

    def pressure_at(self, t):
        """Gauge pressure [Pa] at time ``t`` [s] of a pressure-controlled chamber."""
        if self.unknown:
            raise ValueError(
                f"Chamber.pressure_at: this chamber is {self.control}-controlled, its pressure is an unknown "
                "of the shooting model (CosseratModel.chamber_pressures); pressure_at needs pressure="
            )
        return self.value * self.profile(t)

    @property
    def unknown(self) -> bool:
        """True when the pressure is solved for (volume or moles control)."""
        return self.control != "pressure"

    @property
    def r(self):
        """``(3,)`` offset in the local frame [m]."""
        return jnp.concatenate([self.offset, jnp.zeros(1)])

    def amount_at(self, t, load_factor=1.0, length=1.0):
        """Controlled quantity at time ``t`` [s]. A static load factor ``lf`` scales the pressure,
        or the excess of volume / moles over the straight chamber at zero gauge pressure
        (``A L``, ``P_atm A L / (R_gas T)``), so that ``lf = 0`` is the unloaded rod."""
        if self.control == "pressure":
            return load_factor * self.pressure_at(t)
        x = self.value * self.profile(t)
        x0 = self.area * length
        if self.control == "moles":
            x0 = self.atmospheric_pressure * x0 / (self.gas_constant * self.temperature)
        return x0 + load_factor * (x - x0)


def check_chambers(chambers, section_radius, pressure_only: str | None = None) -> None:
    """Eager check that every chamber lies inside the section: ``|r| + sqrt(A / pi) <= section_radius``.
    ``pressure_only``: the name of a model that takes pressure control only (PCS, DER), which
    refuses volume and moles control."""
    for i, ch in enumerate(chambers):
        if not isinstance(ch, Chamber):
            raise TypeError(f"chambers must hold Chamber objects, got {type(ch).__name__} at chambers[{i}]")
        if pressure_only and ch.unknown:
            raise ValueError(
                f"chambers[{i}]: {pressure_only} chambers are pressure-controlled (got control={ch.control!r}); "
                "volume and moles control (the pressure as an unknown) are on the shooting model (CosseratModel)"
            )
        if is_traced((ch.offset, ch.area, section_radius)):
            continue
        rho = float(np.sqrt(float(ch.area) / np.pi))
        d = float(np.linalg.norm(np.asarray(ch.offset)))
        R = float(section_radius)
        if d + rho > R * (1.0 + 1e-12):
            raise ValueError(
                f"chambers[{i}] does not fit in the cross-section: |offset| + chamber radius sqrt(area/pi) = "
                f"{d:.6g} + {rho:.6g} = {d + rho:.6g} m, allowed <= section_radius = {R:.6g} m"
            )


def pressure_scales(chambers, force_scale):
    """``(n_unknown,)`` scales [Pa] of the pressure unknowns: the pressure whose cap force is the
    shooting force scale ``EI / L^2``."""
    return jnp.stack([force_scale / ch.area for ch in chambers if ch.unknown])


def chamber_pressures(chambers, unknowns, t, load_factor, force_scale):
    """``(n_chambers,)`` gauge pressures [Pa]: prescribed ones from the controls at ``t``, solved
    ones from the scaled shooting ``unknowns (n_unknown,)`` (in the order of the chambers)."""
    scales = pressure_scales(chambers, force_scale) if unknowns.shape[0] else None
    out, k = [], 0
    for ch in chambers:
        if ch.unknown:
            out.append(unknowns[k] * scales[k])
            k += 1
        else:
            out.append(ch.amount_at(t, load_factor))
    return jnp.stack(out)


def _cross(a, b):
    return jnp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def pressure_loads(chambers, pressures, u, v):
    """``(-f_P^b, -l_P^b)`` (each ``(3,)``, local frame) of eq. 18: what the pressures add to the
    local ``n_s`` [N/m] and ``m_s`` [N m/m] at curvature ``u`` and strain ``v``."""
    e3 = jnp.array([0.0, 0.0, 1.0])
    ue3 = _cross(u, e3)
    f = jnp.zeros(3)
    l_ = jnp.zeros(3)
    for ch, P in zip(chambers, pressures):
        r = ch.r
        PA = P * ch.area
        f = f + PA * ue3
        l_ = l_ + PA * (_cross(v + _cross(u, r), e3) + _cross(r, ue3))
    return f, l_


def cap_wrench(chambers, pressures):
    """Local force ``sum P A e3`` [N] and moment ``sum r x P A e3`` [N m] of the caps at the tip."""
    F = jnp.zeros(3)
    M = jnp.zeros(3)
    for ch, P in zip(chambers, pressures):
        Fi = jnp.array([0.0, 0.0, 1.0]) * (P * ch.area)
        F, M = F + Fi, M + _cross(ch.r, Fi)
    return F, M


def volume_density(chambers, vu):
    """``(..., n_chambers)`` chamber volume per reference length ``A |v + u x r|`` [m^2] from
    ``vu (..., 6) = [v, u]``."""
    v, u = vu[..., 0:3], vu[..., 3:6]
    cols = []
    for ch in chambers:
        t = v + jnp.cross(u, jnp.broadcast_to(ch.r, u.shape))
        cols.append(ch.area * jnp.linalg.norm(t, axis=-1))
    return jnp.stack(cols, axis=-1)


def chamber_volumes(chambers, vu_nodes, vu_stages, ds):
    """``(n_chambers,)`` volumes [m^3] by the shooting integrator's own quadrature: RK4 weights
    ``(1, 2, 2, 1) / 6`` on the node and its three stage points, Euler the left node.
    ``vu_nodes (N, 6)``, ``vu_stages (N-1, n_stages, 6)``, ``ds (N-1,)``."""
    f0 = volume_density(chambers, vu_nodes[:-1])
    if vu_stages.shape[1] == 0:
        return jnp.sum(ds[:, None] * f0, axis=0)
    fs = volume_density(chambers, vu_stages)
    per = (f0 + 2.0 * fs[:, 0] + 2.0 * fs[:, 1] + fs[:, 2]) / 6.0
    return jnp.sum(ds[:, None] * per, axis=0)


def volume_residuals(chambers, volumes, pressures, t, load_factor, length):
    """``(n_unknown,)`` residuals ``(V_I - V_target) / (A L)`` of the chambers with solved pressure:
    ``V_target`` is the controlled volume, or the gas volume ``n R_gas T / (P + P_atm)``."""
    out = []
    for ch, V, P in zip(chambers, volumes, pressures):
        if not ch.unknown:
            continue
        x = ch.amount_at(t, load_factor, length)
        target = x if ch.control == "volume" else x * ch.gas_constant * ch.temperature / (P + ch.atmospheric_pressure)
        out.append((V - target) / (ch.area * length))
    return jnp.stack(out)
