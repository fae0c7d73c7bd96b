"""The tendon and pressure-chamber terms of the shooting rod's arc-length ODE (the definitions,
:class:`~jaxrod.actuation.tendons.Tendon` and :class:`~jaxrod.actuation.chambers.Chamber`, are in
:mod:`jaxrod.actuation`).

Tendons (Till, Aloi & Rucker 2019 sec. 5.2; Rucker & Webster 2011). A tendon runs in a channel at
offset ``r(s)`` from the backbone, in the local cross-section frame, from the base to its
termination at reference arc length ``s_t``. Frictionless and massless, it carries one tension ``tau`` along its whole length and loads the backbone

* over ``0 < s < s_t`` with the distributed force ``f_c = tau d/ds (p_si / |p_si|)`` (its pull
  toward the centre of curvature of its own path ``p_i = p + R r``) and the moment of that force
  about the backbone, which in backbone kinematics read ``f_c = R (a + A v_s + G u_s)``,
  ``l_c = R (b + G^T v_s + H u_s)`` (spec 7.2): they depend on the strain derivatives, so the
  model solves the symmetric 6x6 system ``Phi [v_s; u_s] = ...`` at every evaluation point;
* at ``s_t`` with the point force ``F^b = -tau p_si^b / |p_si^b|`` and moment ``r x F^b``
  (local frame), the pull of the anchored tendon back toward the base.

``r_s`` and ``r_ss`` come from forward-mode differentiation of ``r(s)``
(:func:`routing_derivatives`), so any smooth routing works.

Pressure chambers (sec. 5.3, spec 7.3). A uniform gauge pressure ``P`` [Pa] loads the backbone

* along the rod with (eq. 18, local components; the model adds ``-f_P``, ``-l_P`` to ``n_s``,
  ``m_s``)::

      -f_P^b = P A u x e3,   -l_P^b = P A [(v + u x r) x e3 + r x (u x e3)];

* at the tip with the cap force ``F^b = P A e3`` and moment ``L^b = r x F^b``:
  ``n^b(L) = n^b(L-) - F^b``, ``m^b(L) = m^b(L-) - L^b``.

Equivalently, the section resultants that balance the external loads are the constitutive ones
minus ``P A d3`` and ``P A (R r) x d3``. With no other load the rod thus bends at the uniform
curvature ``u2 = P A d / EI`` about ``d2`` (chamber at ``r = -d e1``) and stretches to
``v3 = 1 + P A / EA`` (tests/test_pressure_cosserat.py).

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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def routing_derivatives(routing, s):
    """``(r, r_s, r_ss)`` (each ``(3,)``) of ``routing`` at ``s`` by nested forward-mode JVPs."""
    s = jnp.asarray(s, dtype=float)

    def first(x):
        return jax.jvp(routing, (x,), (jnp.ones_like(x),))

    (r, rs), (_, rss) = jax.jvp(first, (s,), (jnp.ones_like(s),))
    return r, rs, rss


def _hat(x):
    z = jnp.zeros_like(x[0])
    return jnp.stack([
        jnp.stack([z, -x[2], x[1]]),
        jnp.stack([x[2], z, -x[0]]),
        jnp.stack([-x[1], x[0], z]),
    ])


def _one_tendon(r, rs, rss, tau, u, v):
    p = jnp.cross(u, r) + rs + v  # p_si^b: tangent of the tendon path, local frame
    ph = _hat(p)
    A = -tau * (ph @ ph) / jnp.linalg.norm(p) ** 3
    rh = _hat(r)
    G = -A @ rh
    a = A @ (jnp.cross(u, p + rs) + rss)
    return a, jnp.cross(r, a), A, G, rh @ G


def routing_table(routings, s):
    """``(r, r_s, r_ss)``, each ``(*s.shape, n_tendons, 3)``: every routing's offset and its first
    two arc-length derivatives at the arc lengths ``s`` (e.g. all evaluation points of a sweep).
    The routings depend on ``s`` only, so the shooting model evaluates them once per sweep, outside
    the arc-length loop, instead of differentiating every routing inside every rhs evaluation (a
    sampled routing's spline solve included); the loop body then no longer grows with them."""
    s = jnp.asarray(s, dtype=float)
    flat = s.reshape(-1)
    cols = [jax.vmap(lambda x, rt=rt: routing_derivatives(rt, x))(flat) for rt in routings]
    return tuple(jnp.stack([c[k] for c in cols], axis=1).reshape(*s.shape, len(routings), 3) for k in range(3))


def tendon_coefficients(routes, taus, u, v):
    """Sums over tendons of ``(a (3,), b (3,), A, G, H (3, 3))`` of spec 7.2 at one point for
    curvature ``u`` and strain ``v`` (local frame); ``routes = (r, r_s, r_ss)``, each ``(n, 3)``,
    the tendons' routings there (:func:`routing_table`); ``taus (n,)`` tensions [N] (0: inactive).
    One batched term for all tendons: the traced program does not grow with their number."""
    r, rs, rss = routes
    terms = jax.vmap(_one_tendon, in_axes=(0, 0, 0, 0, None, None))(r, rs, rss, taus, u, v)
    return tuple(jnp.sum(x, axis=0) for x in terms)


def termination_loads(routes, taus, u, v):
    """Local-frame point force ``sum F^b`` [N] and moment ``sum r x F^b`` [N m] of the tendons
    anchored at one arc length (``routes = (r, r_s, r_ss)``, each ``(n, 3)``, there; ``taus (n,)``:
    their tensions, 0 for the others), from the strains on the base side ``u(s^-)``, ``v(s^-)``."""
    r, rs, _ = routes
    p, pn = jax.vmap(path_tangent, in_axes=(0, 0, None, None))(r, rs, u, v)
    Fi = -taus[:, None] * p / pn[:, None]
    return jnp.sum(Fi, axis=0), jnp.sum(jnp.cross(r, Fi), axis=0)


def path_tangent(r, rs, u, v):
    """``(p_si^b (3,), |p_si^b|)``: the tendon path's tangent ``u x r + r_s + v`` (local frame) for
    the routing's offset ``r`` and derivative ``r_s`` at that point (:func:`routing_table`)."""
    p = jnp.cross(u, r) + rs + v
    return p, jnp.linalg.norm(p)


def friction_load(r, p, pn, u, tau, beta, nu):
    """Local-frame friction force [N/m] and moment [N m/m] per unit length on the backbone
    (:attr:`~jaxrod.actuation.tendons.Tendon.friction`): ``f = beta |tau| |u_xy| nu p/|p|``, ``l = r x f``;
    ``r`` the channel offset, ``(p, pn)`` the path tangent and its norm (:func:`path_tangent`),
    ``nu`` [m/s] the tendon's velocity relative to its channel, positive toward the anchor."""
    k2 = u[0] ** 2 + u[1] ** 2
    kxy = jnp.where(k2 > 0, jnp.sqrt(jnp.where(k2 > 0, k2, 1.0)), 0.0)  # |u_xy|, finite gradient at 0
    f = beta * jnp.abs(tau) * kxy * nu * p / pn
    return f, jnp.cross(r, f)


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
