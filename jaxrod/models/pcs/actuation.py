"""Actuation of a PCS rod: pressure chambers and tendons (the definitions,
:class:`~jaxrod.actuation.chambers.Chamber` and :class:`~jaxrod.actuation.tendons.Tendon`, are in
:mod:`jaxrod.actuation`).

Pressure chambers (fluidic actuation, spec seed004 section 6.3, seed000 section 7.3).

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
positive work when the volume grows). The chambers are :class:`~jaxrod.actuation.chambers.Chamber`
(pressure control; offset ``(r_y, r_z)``): their pressure signal is ``value * profile(t)`` with
array leaves (e.g. ``profile=Samples(times, p)`` of measured samples): new data of the same length
reuse the compiled program and gradients with respect to the samples and to ``A`` flow.

Tendons: the routed cable's length from the segment strains, its loads ``-tau dl/dq``.

The same :class:`~jaxrod.actuation.tendons.Tendon` (routing ``r(s)``, tension
``tau(t)``, termination ``s_t``) as on the shooting and DER models. The routing gives the channel
offset in the Cosserat section frame ``(d1, d2, d3 = axis)``; the PCS section frame has the rod
axis first, so ``r = (r1, r2, r3)`` sits at ``r3 x + r1 y + r2 z`` in the PCS local frame (``d1``
is local ``y``, ``d2`` local ``z``).

The channel point ``p + R r`` moves along the rod at the rate ``|d/ds (p + R r)| = |eps + kappa x
r + r_s|`` (local frame, ``xi = [kappa; eps]``: the Cosserat ``|v + u x r + r_s|``), so the tendon
length inside the rod, from the base to ``s_t``, is a sum over the segments of integrals of their
own constant strain only:

    ``l(q) = sum_i int_{[s_i, s_i+1] cap [0, s_t]} |eps_i + kappa_i x r(s) + r_s(s)| ds``,

by Gauss-Legendre quadrature (exact for a straight routing, whose integrand is constant in a
segment). A frictionless, massless cable at constant tension ``tau`` has the potential ``tau l``,
so its generalised force is ``-tau dl/dq`` (autodiff): the distributed tendon loads and the
termination load of spec 7.2 in one exact gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["chamber_forces", "tendon_forces", "tendon_length"]


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
    sequence of pressure-controlled :class:`~jaxrod.actuation.chambers.Chamber`) at time
    ``t`` [s] on segments of ``lengths (n,)`` [m]; zeros for no chamber."""
    lengths = jnp.asarray(lengths)
    if not chambers:
        return jnp.zeros((lengths.shape[0], 6), lengths.dtype)
    w = sum(wrench_density(c, t) for c in chambers)
    return lengths[:, None] * w[None, :]


def pcs_offset(r):
    """Cosserat-frame offset ``(..., 3)`` ``(d1, d2, axis)`` -> PCS local frame ``(axis, y, z)``."""
    return jnp.stack([r[..., 2], r[..., 0], r[..., 1]], axis=-1)


def _quadrature(length: float, n_segments: int, end: float, n_quad: int):
    """Static Gauss-Legendre rule over ``[0, end]`` split at the segment ends: ``(segment index
    (K,), arc length s (K,) [m], weight (K,) [m])``."""
    x, w = np.polynomial.legendre.leggauss(int(n_quad))
    seg, s, wt = [], [], []
    h = length / n_segments
    for i in range(n_segments):
        a, b = i * h, min((i + 1) * h, end)
        if b <= a:
            break
        seg.append(np.full(x.size, i))
        s.append(a + 0.5 * (b - a) * (x + 1.0))
        wt.append(0.5 * (b - a) * w)
    return np.concatenate(seg), np.concatenate(s), np.concatenate(wt)


def tendon_length(xis, length: float, routing, termination=None, n_quad: int = 4):
    """Length [m] of a tendon inside a PCS rod of ``length`` [m] with segment strains
    ``xis (n, 6)`` (equal segments), from the base to ``termination`` [m] (``None``: the tip)."""
    n = xis.shape[0]
    end = length if termination is None else float(termination)
    seg, s, w = _quadrature(float(length), n, end, n_quad)
    r, r_s = jax.vmap(lambda x: jax.jvp(routing, (x,), (jnp.ones_like(x),)))(jnp.asarray(s, dtype=xis.dtype))
    r, r_s = pcs_offset(r), pcs_offset(r_s)
    xi = xis[seg]
    rate = xi[:, 3:] + jnp.cross(xi[:, :3], r) + r_s
    return jnp.sum(jnp.asarray(w, dtype=xis.dtype) * jnp.linalg.norm(rate, axis=-1))


def tendon_forces(model, q, t):
    """``(n m,)`` generalised forces ``-tau(t) dl/dq`` [N, N m] of ``model.tendons`` at coordinates
    ``q`` and time ``t`` [s], scaled by the model's ``load_factor``."""

    def potential(q):
        xis = model.strains(q)
        return sum(
            td.tension_at(t) * tendon_length(xis, model.rod.length, td.routing, td.termination, model.n_quad)
            for td in model.tendons
        )

    return -model.load_factor * jax.grad(potential)(q)
