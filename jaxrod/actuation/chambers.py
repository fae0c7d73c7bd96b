"""Pressure chambers of fluidic soft robots, usable by every rod model (Till, Aloi & Rucker 2019
sec. 5.3, spec 7.3): :class:`Chamber` and the eager :func:`check_chambers`. Definitions only: the
loads are each model's own (:mod:`jaxrod.models.cosserat.actuation`,
:mod:`jaxrod.models.der.actuation`, :mod:`jaxrod.models.pcs.actuation`).

A chamber is a straight channel of cross-section area ``A`` [m^2] at constant offset ``r`` [m]
from the backbone (local frame, in the section plane), running from the base to the distal end,
where a flat cap closes it.

Control (one per chamber, ``value * profile(t)``):

* ``pressure`` [Pa] gauge, prescribed;
* ``volume`` [m^3] (incompressible fluid, a positive-displacement pump): ``P`` is an extra
  shooting unknown with the residual ``(V_I - V_C) / (A L)``;
* ``moles`` [mol] (ideal gas): ``P`` is an extra unknown with the residual ``(V_I - V_G) / (A L)``,
  ``V_G = n R_gas T / (P + P_atm)``.

Pressures act quasi-statically (no fluid mass, no pump dynamics), A is constant.

:class:`Chamber` is the one chamber class of the package: :class:`~jaxrod.models.cosserat.CosseratModel`
takes every control, :class:`~jaxrod.models.pcs.PCSModel` and :class:`~jaxrod.models.der.DERModel`
take pressure control only (``chambers=``: they read :meth:`Chamber.pressure_at`); each checks its
chambers with :func:`check_chambers` against its ``section_radius``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..signals import Constant, Samples
from ..validation import check_finite, check_positive, check_shape, is_traced

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
    (:class:`~jaxrod.signals.Samples`, whose times and values are array leaves: new data of the same
    length reuse the compiled program and gradients flow to the samples). The offset is in the
    model's section plane: ``(d1, d2)`` on :class:`~jaxrod.models.cosserat.CosseratModel`, ``(m1, m2)`` on DER, local
    ``(y, z)`` on PCS (all the same axes of the rod section).

    Attributes:
        offset: ``(2,)`` chamber centre in the ``(d1, d2)`` section plane, from the section's
            centroid (the rod axis) [m]; constant along the rod.
        area: chamber (cap) cross-section area A [m^2].
        control: ``"pressure"``, ``"volume"`` or ``"moles"`` (static: it sets the unknowns).
        value: amplitude of the controlled quantity (Pa gauge, m^3 or mol); the control is
            ``value * profile(t)``.
        profile: dimensionless time profile (:class:`~jaxrod.signals.Constant`,
            :class:`~jaxrod.signals.Samples`).
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
