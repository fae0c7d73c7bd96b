"""Pressure chambers on a PCS rod (fluidic actuation, spec seed004 section 6.3, seed000 section 7.3).

A chamber is a straight channel running the whole rod parallel to the centreline, at the offset
``r = (0, r_y, r_z)`` [m] from it in the cross-section (local axes: the rod axis is local x), with
cap area ``A`` [m^2] and gauge pressure ``P(t)`` [Pa].

Work of the pressure. A material line at offset ``r`` has the tangent ``R (v + u x r)`` per unit
reference arc length ``X`` (``u``, ``v``: the angular and linear strains, ``xi = [u; v]``). The
chamber volume, counted as the cap area times the length of the channel measured along the
cross-section normal ``e1`` (the braided chambers of STIFF-FLOP keep their section, so the cap
area is fixed and the channel cannot bulge), is

    ``V = int_0^L A e1 . (v + u x r) dX = int_0^L A (v_1 + u . (r x e1)) dX``,

linear in the strains. The gauge pressure does the virtual work ``P dV``, so the generalised
force conjugate to the strain of segment ``i`` (length ``ell_i``) is

    ``Q_i = dV/dxi_i P = ell_i P A [r x e1; e1]``  (angular first)  ``= ell_i [tau_u; f_u]``

with ``f_u = P A e1`` and ``tau_u = P A r x e1 = P A (0, r_z, -r_y)``: exactly TMTDyn's internal
actuation (spec 6.3, there with the rod axis e3). It does not depend on the configuration: a
constant-section chamber acts as a pair of equal and opposite follower loads at the two caps,
transmitted through the material as a uniform internal force. At equilibrium of a straight
Kirchhoff-like rod it gives the elongation ``eps = P A / (E A_c)`` and the uniform curvature
``kappa = P A d / (E J)`` about the axis perpendicular to the offset ``d`` (the bend is away from
the chamber), with ``A_c`` and ``J`` of the elastomer section.

The residual of :class:`~jaxrod.models.pcs.PCSModel` subtracts ``B^T Q`` (a force that does
positive work when the volume grows). The pressure is a time profile with array leaves (e.g.
:class:`~jaxrod.models.der.SampledMotion` of measured samples): new data of the same length reuse
the compiled program and gradients with respect to the samples and to ``A`` flow.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import check_finite, check_positive, check_shape, is_traced

__all__ = ["ATMOSPHERIC_PRESSURE", "PressureChamber", "chamber_forces"]

#: standard atmosphere [Pa]: the gauge pressure may not go below minus this (absolute < 0)
ATMOSPHERIC_PRESSURE = 101325.0


def _f64(x):
    return jnp.asarray(x, dtype=float)


class PressureChamber(eqx.Module):
    """One pressure chamber along the whole PCS rod (module docstring).

    Attributes:
        offset: ``(2,)`` position ``(r_y, r_z)`` [m] of the chamber centre in the cross-section
            (local axes y, z; the rod axis is local x).
        area: cap area A [m^2] > 0 (the chamber's inner section; ``pi r_p^2`` for a round one).
        pressure: gauge pressure [Pa]: a scalar (constant) or a callable ``t [s] -> P`` whose
            values are array leaves (e.g. ``SampledMotion(times, values)``: linear in time,
            held at the ends).
        section_radius: outer radius of the rod's cross-section [m]; the chamber (of radius
            ``sqrt(A / pi)``) must lie inside it.
        atmospheric: ambient pressure [Pa]; gauge samples below ``-atmospheric`` (a negative
            absolute pressure) are rejected.
    """

    offset: jax.Array = eqx.field(converter=_f64)
    area: jax.Array = eqx.field(converter=_f64)
    pressure: Callable | jax.Array
    section_radius: float = eqx.field(static=True)
    atmospheric: float = eqx.field(static=True, default=ATMOSPHERIC_PRESSURE)

    def __init__(self, offset, area, pressure, section_radius, atmospheric=ATMOSPHERIC_PRESSURE):
        self.offset = _f64(offset)
        self.area = _f64(area)
        self.pressure = pressure if callable(pressure) else _f64(pressure)
        self.section_radius = float(section_radius)
        self.atmospheric = float(atmospheric)

    def __check_init__(self):
        check_shape("PressureChamber.offset", self.offset, (2,))
        check_finite("PressureChamber.offset", self.offset)
        if not (np.isfinite(self.section_radius) and self.section_radius > 0):
            raise ValueError(f"PressureChamber.section_radius must be a finite number > 0 m, got {self.section_radius}")
        if not (np.isfinite(self.atmospheric) and self.atmospheric >= 0):
            raise ValueError(f"PressureChamber.atmospheric must be a finite number >= 0 Pa, got {self.atmospheric}")
        if is_traced(self.area) or is_traced(self.offset):
            return
        check_positive("PressureChamber.area", self.area, "m^2")
        radius = float(np.sqrt(np.asarray(self.area) / np.pi))
        reach = float(np.linalg.norm(np.asarray(self.offset))) + radius
        if reach > self.section_radius * (1 + 1e-12):
            raise ValueError(
                f"PressureChamber: the chamber (offset {np.asarray(self.offset).tolist()} m, radius sqrt(A/pi) = "
                f"{radius:.4g} m) reaches {reach:.4g} m from the axis, outside the section of radius "
                f"{self.section_radius:.4g} m; |offset| + sqrt(area/pi) must be <= section_radius"
            )
        samples = self._pressure_samples()
        if samples is not None and not is_traced(samples):
            s = np.asarray(samples, dtype=float)
            if not np.all(np.isfinite(s)):
                raise ValueError("PressureChamber.pressure must be finite [Pa]")
            if np.any(s < -self.atmospheric):
                k = int(np.argmin(s))
                raise ValueError(
                    f"PressureChamber.pressure: gauge pressure {s.ravel()[k]:.6g} Pa (sample {k}) is below "
                    f"-{self.atmospheric:g} Pa, a negative absolute pressure; gauge pressures must be >= -atmospheric"
                )

    def _pressure_samples(self):
        if not callable(self.pressure):
            return self.pressure
        values = getattr(self.pressure, "values", None)  # sampled profiles (SampledMotion, ...)
        return values

    def pressure_at(self, t):
        """Gauge pressure [Pa] at time ``t`` [s]."""
        return self.pressure(t) if callable(self.pressure) else self.pressure

    def wrench_density(self, t):
        """``(6,)`` ``[tau_u; f_u] = P A [r x e1; e1]`` [N m, N]: the generalised force per unit
        reference length conjugate to the strains (module docstring)."""
        PA = self.pressure_at(t) * self.area
        ry, rz = self.offset[0], self.offset[1]
        zero = jnp.zeros_like(PA)
        return jnp.stack([zero, PA * rz, -PA * ry, PA, zero, zero])


def chamber_forces(chambers, t, lengths):
    """``(n, 6)`` generalised forces ``ell_i sum_c P_c A_c [r_c x e1; e1]`` of ``chambers`` (a
    sequence of :class:`PressureChamber`) at time ``t`` [s] on segments of ``lengths (n,)`` [m];
    zeros for no chamber."""
    lengths = jnp.asarray(lengths)
    if not chambers:
        return jnp.zeros((lengths.shape[0], 6), lengths.dtype)
    w = sum(c.wrench_density(t) for c in chambers)
    return lengths[:, None] * w[None, :]
