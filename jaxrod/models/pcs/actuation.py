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
positive work when the volume grows). The chambers are :class:`~jaxrod.models.cosserat.pressure.Chamber`
(pressure control; offset ``(r_y, r_z)``): their pressure signal is ``value * profile(t)`` with
array leaves (e.g. ``profile=Samples(times, p)`` of measured samples): new data of the same length
reuse the compiled program and gradients with respect to the samples and to ``A`` flow.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["chamber_forces"]


def wrench_density(chamber, t):
    """``(6,)`` ``[tau_u; f_u] = P A [r x e1; e1]`` [N m, N] of one pressure-controlled chamber at
    time ``t`` [s]: the generalised force per unit reference length conjugate to the strains
    (module docstring)."""
    PA = chamber.pressure_at(t) * chamber.area
    ry, rz = chamber.offset[0], chamber.offset[1]
    zero = jnp.zeros_like(PA)
    return jnp.stack([zero, PA * rz, -PA * ry, PA, zero, zero])


def chamber_forces(chambers, t, lengths):
    """``(n, 6)`` generalised forces ``ell_i sum_c P_c A_c [r_c x e1; e1]`` of ``chambers`` (a
    sequence of pressure-controlled :class:`~jaxrod.models.cosserat.pressure.Chamber`) at time
    ``t`` [s] on segments of ``lengths (n,)`` [m]; zeros for no chamber."""
    lengths = jnp.asarray(lengths)
    if not chambers:
        return jnp.zeros((lengths.shape[0], 6), lengths.dtype)
    w = sum(wrench_density(c, t) for c in chambers)
    return lengths[:, None] * w[None, :]
