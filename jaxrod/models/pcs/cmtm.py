"""Analytic gradients of the PCS inverse dynamics with the comprehensive motion transformation
matrix (CMTM) of Ishigaki, Ayusawa & Yamamoto (RA-L 2024, sec. IV; spec ``seed003_pcs_cmtm.md``
sec. 5.1-5.7).

What lives here:

* the CMTM algebra: :func:`cmtm` ``X`` (eq. 30), :func:`cmtm_inv`, :func:`s_matrix` ``S`` (eq. 39)
  and :func:`s_matrix_inv`, and the PCS strain-variation matrix :func:`strain_variation_matrix`
  ``calC`` (eq. 44 with the corrected (3, 2) block);
* :func:`inverse_dynamics_gradients`: the recursive inverse dynamics of
  :func:`~jaxrod.models.pcs.model.inverse_dynamics` *and* its exact derivatives
  ``d tau / d xi``, ``d tau / d xidot``, ``d tau / d xiddot`` (the last one is the mass matrix),
  by the algorithm of spec sec. 5.7 (eqs. 53-65 with the spec's corrections: relative ``S`` in
  eq. 54, the ``S(s)^-1 jS(s)`` factor of eq. 58, the co-operator in eq. 62, ``T`` on the right in
  eq. 63). Same Gauss-Legendre quadrature as the inverse dynamics, so the result is the exact
  derivative of the discrete ``tau`` (equal to ``jax.jacfwd`` to round-off);
* the same for :class:`~jaxrod.models.pcs.model.PCSModel` in its reduced coordinates:
  :func:`cmtm_forces_and_jacobians`, :func:`cmtm_jacobians` (of ``generalized_forces``, gravity and
  the world-frame dead tip load included), :func:`residual_jacobians` (adds the constant
  stiffness and damping matrices) and :func:`newmark_jacobian` (the Newton matrix of eq. 28);
* :func:`cmtm_generalized_forces`: ``PCSModel.generalized_forces`` with a custom JVP that uses the
  CMTM Jacobians, so that any ``jax.jacfwd`` of a residual built on it (the dense Newton Jacobian
  of :func:`jaxrod.simulate`) gets them. ``PCSModel(..., jacobian="cmtm")`` selects it.

Notation and shapes (``n`` segments, ``nq`` Gauss points per segment): twists are angular-first,
``delta chi_i = [d xi_i; d xidot_i; d xiddot_i]`` (18) is the variation of segment ``i``'s strain,
strain rate and strain acceleration, ``delta chi`` (18 n) stacks them; ``delta x = [d alpha;
d eta; d etadot]`` (18) is the variation of a cross-section's pose (body frame), body velocity and
body acceleration and ``delta nu = S delta x`` the CMTM tangent (eqs. 32-38). Units: strains
``xi = [kappa (1/m); eps (-)]``, generalised forces ``tau = [N m^2 (angular rows); N m (linear
rows)]`` (the virtual work of ``d xi`` over a segment), so ``d tau / d xi`` has the units of
``tau`` times those of ``xi``^-1, ``d tau / d xidot`` the same times s, ``d tau / d xiddot`` times
s^2.

Cost: ``O(n nq)`` local 6x6 / 18x18 products, ``O(n^2)`` products of 6x18 or 18x18 blocks with
18 n-column matrices (two ``lax.scan`` over segments), versus ``18 n`` forward-mode passes through
the recursion for ``jax.jacfwd`` of the inverse dynamics (``6 n`` for one Newton Jacobian).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from .kinematics import _gauss_legendre, ad, coad, expA_inv, tangent_C_and_dot

if TYPE_CHECKING:  # annotations only: model.py imports this module
    from .model import PCSModel
    from .rod import PCSRod

__all__ = [
    "IDGradients",
    "cmtm",
    "cmtm_forces_and_jacobians",
    "cmtm_generalized_forces",
    "cmtm_inv",
    "cmtm_jacobians",
    "inverse_dynamics_gradients",
    "newmark_jacobian",
    "residual_jacobians",
    "s_matrix",
    "s_matrix_inv",
    "strain_variation_matrix",
]


# --------------------------------------------------------------------------------------------
# CMTM algebra (spec 5.1, 5.2, 5.4); every function broadcasts over leading axes
# --------------------------------------------------------------------------------------------


def _mv(M, v):
    return jnp.einsum("...ij,...j->...i", M, v)


def _block3(rows):
    """``(..., 18, 18)`` from a 3x3 nested list of ``(..., 6, 6)`` blocks."""
    return jnp.concatenate([jnp.concatenate(r, axis=-1) for r in rows], axis=-2)


def cmtm(A, eta, etadot):
    """CMTM ``X = [[A, 0, 0], [A ad(eta), A, 0], [A (ad(etadot) + ad(eta)^2) / 2, A ad(eta), A]]``
    (eq. 30), the jet of ``A`` carrying pose, velocity and acceleration together.

    Args:
        A: ``(..., 6, 6)`` adjoint of the pose.
        eta: ``(..., 6)`` body velocity ``[omega; v]`` [rad/s, m/s].
        etadot: ``(..., 6)`` body acceleration [rad/s^2, m/s^2].
    Returns:
        ``(..., 18, 18)``.
    """
    a1, a2 = ad(eta), ad(etadot)
    Z = jnp.zeros_like(A)
    Aa = A @ a1
    return _block3([[A, Z, Z], [Aa, A, Z], [0.5 * A @ (a2 + a1 @ a1), Aa, A]])


def cmtm_inv(A_inv, eta, etadot):
    """Inverse of :func:`cmtm`, from the inverse adjoint ``A^-1`` (spec 5.1):
    ``[[Ai, 0, 0], [-ad(eta) Ai, Ai, 0], [(ad(eta)^2 - ad(etadot)) Ai / 2, -ad(eta) Ai, Ai]]``.

    Args:
        A_inv: ``(..., 6, 6)``; eta, etadot: ``(..., 6)`` (those of the CMTM being inverted).
    Returns:
        ``(..., 18, 18)``.
    """
    a1, a2 = ad(eta), ad(etadot)
    Z = jnp.zeros_like(A_inv)
    aA = -a1 @ A_inv
    return _block3(
        [[A_inv, Z, Z], [aA, A_inv, Z], [0.5 * (a1 @ a1 - a2) @ A_inv, aA, A_inv]]
    )


def s_matrix(eta, etadot):
    """``S`` of eq. (39), ``delta nu = S delta x``:
    ``[[E, 0, 0], [-ad(eta), E, 0], [-(ad(etadot) - ad(eta)^2) / 2, -ad(eta) / 2, E / 2]]``.

    ``eta, etadot`` (``(..., 6)``) are those of the CMTM whose tangent is converted (relative ones
    for a relative tangent). Returns ``(..., 18, 18)``.
    """
    a1, a2 = ad(eta), ad(etadot)
    E = jnp.broadcast_to(jnp.eye(6, dtype=a1.dtype), a1.shape)
    Z = jnp.zeros_like(a1)
    return _block3(
        [[E, Z, Z], [-a1, E, Z], [-0.5 * (a2 - a1 @ a1), -0.5 * a1, 0.5 * E]]
    )


def s_matrix_inv(eta, etadot):
    """``S^-1 = [[E, 0, 0], [ad(eta), E, 0], [ad(etadot), ad(eta), 2 E]]`` (spec 5.2);
    ``(..., 6) -> (..., 18, 18)``."""
    a1, a2 = ad(eta), ad(etadot)
    E = jnp.broadcast_to(jnp.eye(6, dtype=a1.dtype), a1.shape)
    Z = jnp.zeros_like(a1)
    return _block3([[E, Z, Z], [a1, E, Z], [a2, a1, 2.0 * E]])


def _local_operators(xi, xidot, x):
    """``(C, Cdot, dC, dCdot)`` at one point: ``C = iC(x)``, ``Cdot = dC[xidot]`` and their
    derivatives with respect to ``xi`` (``(6, 6, 6)``, last axis = the strain component).

    Forward mode over the 6 strain components of the closed form (second order for ``Cdot``);
    the small-angle series keeps every value finite at ``kappa = 0``.
    """

    def f(z):
        out = tangent_C_and_dot(z, xidot, x)
        return out, out

    (dC, dCd), (C, Cd) = jax.jacfwd(f, has_aux=True)(xi)
    return C, Cd, dC, dCd


def _calC(C, Cd, dC, dCd, xidot, xiddot):
    """``calC`` (eq. 44, corrected) from the local operators; broadcasts."""
    dC_xid = jnp.einsum("...abk,...b->...ak", dC, xidot)  # (dC/dxi) xidot
    dC_xidd = jnp.einsum("...abk,...b->...ak", dC, xiddot)
    dCd_xid = jnp.einsum(
        "...abk,...b->...ak", dCd, xidot
    )  # (dCdot/dxi) xidot, xidot fixed
    Z = jnp.zeros_like(C)
    return _block3([[C, Z, Z], [dC_xid, C, Z], [dCd_xid + dC_xidd, dC_xid + Cd, C]])


def strain_variation_matrix(xi, xidot, xiddot, x):
    """PCS strain-variation matrix ``i calC(x)`` (eq. 44, (3, 2) block corrected as in spec 5.4):
    ``delta i x(x) = calC delta chi_i`` maps the variation of a segment's strain, strain rate and
    strain acceleration to the variation of the *relative* pose, velocity and acceleration of the
    cross-section at ``x`` with respect to the segment start,

    ``[[C, 0, 0], [dC/dxi xidot, C, 0], [dCdot/dxi xidot + dC/dxi xiddot, dC/dxi xidot + Cdot, C]]``.

    Args:
        xi, xidot, xiddot: ``(6,)`` strain of the segment and its time derivatives.
        x: scalar local coordinate [m].
    Returns:
        ``(18, 18)`` (use ``jax.vmap`` for batches).
    """
    C, Cd, dC, dCd = _local_operators(xi, xidot, x)
    return _calC(C, Cd, dC, dCd, xidot, xiddot)


# --------------------------------------------------------------------------------------------
# inverse dynamics and its CMTM gradients (spec 5.7)
# --------------------------------------------------------------------------------------------


class IDGradients(NamedTuple):
    """Inverse dynamics and its derivatives in full strain coordinates (``n`` segments).

    Attributes:
        tau: ``(n, 6)`` generalised forces (same as :func:`~jaxrod.models.pcs.inverse_dynamics`).
        dtau_dxi: ``(n, 6, n, 6)``: ``[j, a, i, b] = d tau_j[a] / d xi_i[b]``.
        dtau_dxidot: ``(n, 6, n, 6)``, same layout, derivative with respect to the strain rates.
        dtau_dxiddot: ``(n, 6, n, 6)``: the generalised mass matrix (symmetric positive definite).
    """

    tau: jax.Array
    dtau_dxi: jax.Array
    dtau_dxidot: jax.Array
    dtau_dxiddot: jax.Array


def inverse_dynamics_gradients(
    rod: PCSRod,
    xis,
    xidots,
    xiddots,
    *,
    gravity_body=None,
    tip_wrench=None,
    dead_tip_wrench=None,
    n_quad=4,
) -> IDGradients:
    """PCS inverse dynamics ``tau = ID(xi, xidot, xiddot)`` and its CMTM gradients (spec 5.7).

    ``tau`` is the same quantity as :func:`~jaxrod.models.pcs.model.inverse_dynamics` (with the
    same ``n_quad``-point Gauss-Legendre quadrature per segment), and the gradients are its exact
    derivatives. Algorithm:

    1. local operators at the ``nq`` Gauss points and at the segment end of every segment
       (vectorised): ``iA(x)^-1``, ``iC(x)``, ``iCdot(x)``, ``d iC / d xi``, ``d iCdot / d xi``,
       ``calC(x)`` (eq. 44), the relative motion ``(iA, iC xidot, iCdot xidot + iC xiddot)``, its
       inverse CMTM and its ``S``;
    2. forward ``lax.scan`` (base to tip): absolute frame twists ``eta_i, etadot_i`` (eqs. 11,
       14; gravity as base acceleration ``etadot_1 = [0; -g]``) and the CMTM tangent Jacobians
       ``V_{i+1} = d nu_{i+1} / d chi = iX_{i+1}^-1 V_i + iS_{i+1} icalC_{i+1} E_i`` (eq. 36);
    3. at the Gauss points (vectorised): twists, the wrench density
       ``F = M etadot - ad(eta)^T M eta`` (eq. 16) and ``H S(s)^-1`` with
       ``H = [0 | -coad(M eta) - ad(eta)^T M | M]`` (eq. 62), so that
       ``d F = H S(s)^-1 (iX(x)^-1 V_i + iS(x) icalC(x) E_i) d chi`` (eq. 58, corrected);
    4. backward ``lax.scan`` (tip to base): the RNEA wrenches ``f_i``, ``tau_i`` (eqs. 17, 18)
       together with ``Q_i = d f_i / d chi = N_i(A^-1) + iA_{i+1}^-T Q_{i+1}`` and
       ``F_i = d tau_i / d chi = N_i(C) + iC_{i+1}^T Q_{i+1}`` (eqs. 61-65), where the local terms
       ``d (iY^T w) / d xi_i`` are ``-iA^-T coad(w) iC`` (``Y = A^-1``) and the contraction of
       ``d iC / d xi`` with ``w`` (``Y = C``).

    Args:
        rod: :class:`~jaxrod.models.pcs.rod.PCSRod` (segment lengths, screw inertia).
        xis, xidots, xiddots: ``(n, 6)`` strains ``[1/m, -]``, strain rates (per s) and strain
            accelerations (per s^2).
        gravity_body: ``(3,)`` gravity in the base frame [m/s^2] (base-acceleration trick).
        tip_wrench: ``(6,)`` follower load ``[moment; force]`` on the tip, in the tip frame
            [N m, N] (as :func:`~jaxrod.models.pcs.model.inverse_dynamics`; state independent).
        dead_tip_wrench: ``(6,)`` dead load on the tip, components in the base frame ``{1}``; it is
            rotated into the tip frame (``R_tip^T``), which makes ``f_{n+1}`` depend on the tip
            orientation: ``Q_{n+1} = -[[m]_x, 0; [f]_x, 0] d alpha_{n+1}`` (``m, f`` in the tip frame).
        n_quad: Gauss-Legendre points per segment (static).
    Returns:
        :class:`IDGradients`.
    """
    xis = jnp.asarray(xis)
    dt = xis.dtype
    n = xis.shape[0]
    xidots = jnp.asarray(xidots, dt)
    xiddots = jnp.asarray(xiddots, dt)
    lengths = rod.segment_lengths.astype(dt)
    Mdiag = rod.screw_inertia.astype(dt)
    g = jnp.zeros(3, dt) if gravity_body is None else jnp.asarray(gravity_body, dt)
    etadot_base = jnp.concatenate([jnp.zeros(3, dt), -g])

    # ---- 1. local operators at the Gauss points and the segment end: (n, m) with m = nq + 1
    nodes, weights = _gauss_legendre(n_quad)
    nq = len(nodes)
    x = (
        lengths[:, None]
        * jnp.concatenate([jnp.asarray(nodes, dt), jnp.ones(1, dt)])[None, :]
    )
    wq = lengths[:, None] * jnp.asarray(weights, dt)[None, :]  # (n, nq)
    m = nq + 1

    def tile(a):
        return jnp.broadcast_to(a[:, None, :], (n, m, 6))

    xi_p, xid_p, xidd_p = tile(xis), tile(xidots), tile(xiddots)
    local = jax.vmap(jax.vmap(_local_operators))
    C, Cd, dC, dCd = local(xi_p, xid_p, x)  # (n, m, 6, 6), (n, m, 6, 6, 6)
    Ainv = expA_inv(xi_p, x)  # (n, m, 6, 6)
    calC = _calC(C, Cd, dC, dCd, xid_p, xidd_p)  # (n, m, 18, 18)
    r_eta = _mv(C, xid_p)  # relative velocity, eq. (46)
    r_etad = _mv(Cd, xid_p) + _mv(C, xidd_p)  # relative acceleration, eq. (47)
    Xinv = cmtm_inv(Ainv, r_eta, r_etad)  # (n, m, 18, 18)
    SC = s_matrix(r_eta, r_etad) @ calC  # d chi_i -> relative tangent d i nu(x)

    # ---- 2. forward scan: frame twists, CMTM tangent Jacobians V_i (18, 18 n)
    onehot = jnp.eye(n, dtype=dt)

    def fwd(carry, seg):
        eta, etad, V = carry
        Ai_e, re_e, red_e, Xi_e, SC_e, e_i = seg
        tr = Ai_e @ eta
        nxt_eta = tr + re_e
        nxt_etad = Ai_e @ etad + ad(tr) @ re_e + red_e
        V_next = (Xi_e @ V).reshape(18, n, 18) + SC_e[:, None, :] * e_i[None, :, None]
        return (nxt_eta, nxt_etad, V_next.reshape(18, 18 * n)), (eta, etad, V)

    init = (jnp.zeros(6, dt), etadot_base, jnp.zeros((18, 18 * n), dt))
    ends = (Ainv[:, -1], r_eta[:, -1], r_etad[:, -1], Xinv[:, -1], SC[:, -1], onehot)
    (_, _, V_tip), (eta_f, etad_f, V_f) = jax.lax.scan(fwd, init, ends)

    # ---- 3. Gauss points: twists (eqs. 11, 14), wrench density (16), H S^-1 (62)
    Aq, Cq, dCq = Ainv[:, :nq], C[:, :nq], dC[:, :nq]
    tr = _mv(Aq, eta_f[:, None, :])
    eta_q = tr + r_eta[:, :nq]
    etad_q = _mv(Aq, etad_f[:, None, :]) + _mv(ad(tr), r_eta[:, :nq]) + r_etad[:, :nq]
    Meta = Mdiag * eta_q
    ad_eta = ad(eta_q)
    F_q = Mdiag * etad_q - jnp.einsum("...ji,...j->...i", ad_eta, Meta)
    L = -coad(Meta) - jnp.swapaxes(ad_eta, -1, -2) * Mdiag  # ad(eta)^T M (M diagonal)
    Mmat = jnp.broadcast_to(jnp.diag(Mdiag), L.shape)
    Meta_ad = Mdiag[:, None] * ad_eta  # M ad(eta)
    HSinv = jnp.concatenate(
        [L @ ad_eta + Mdiag[:, None] * ad(etad_q), L + Meta_ad, 2.0 * Mmat], axis=-1
    )  # (n, nq, 6, 18)
    # weighted projections with A^-T (f rows) and C^T (tau rows)
    YA = wq[..., None, None] * jnp.swapaxes(Aq, -1, -2)
    YC = wq[..., None, None] * jnp.swapaxes(Cq, -1, -2)
    YAH, YCH = YA @ HSinv, YC @ HSinv  # (n, nq, 6, 18)
    # part through the parent frame's tangent V_i, and the segment's own block (d chi_i)
    PA = jnp.sum(YAH @ Xinv[:, :nq], axis=1)  # (n, 6, 18)
    PC = jnp.sum(YCH @ Xinv[:, :nq], axis=1)
    LA = jnp.sum(YAH @ SC[:, :nq], axis=1)
    LC = jnp.sum(YCH @ SC[:, :nq], axis=1)
    # d (Y^T F) / d xi at fixed F (eq. 63)
    locA = -jnp.sum(YA @ coad(F_q) @ Cq, axis=1)  # (n, 6, 6)
    locC = jnp.einsum("nqbak,nqb,nq->nak", dCq, F_q, wq)
    f_loc = jnp.einsum("nqab,nqb->na", YA, F_q)  # sum_g w A^-T F
    tau_loc = jnp.einsum("nqab,nqb->na", YC, F_q)
    NA0 = PA @ V_f  # (n, 6, 18 n)
    NC0 = PC @ V_f

    # ---- 4. backward scan: RNEA wrenches and their Jacobians Q_i, F_i
    Ae, Ce, dCe = Ainv[:, -1], C[:, -1], dC[:, -1]
    f_tip = jnp.zeros(6, dt) if tip_wrench is None else -jnp.asarray(tip_wrench, dt)
    Q_tip = jnp.zeros((6, 18 * n), dt)  # a follower load does not depend on the state
    if dead_tip_wrench is not None:
        # tip orientation relative to the base: product of the segment rotations iR_{i+1}
        R_rel = jnp.swapaxes(Ae[:, :3, :3], -1, -2)
        R_tip = jax.lax.associative_scan(jnp.matmul, R_rel)[-1]
        w = jnp.asarray(dead_tip_wrench, dt)
        wt = jnp.concatenate([R_tip.T @ w[:3], R_tip.T @ w[3:]])  # in the tip frame
        f_tip = f_tip - wt
        # d(R^T m) = [R^T m]_x d alpha_ang; d alpha rows of S^-1 V are those of V
        Z3 = jnp.zeros((3, 3), dt)
        P = jnp.block([[_skew(wt[:3]), Z3], [_skew(wt[3:]), Z3]])
        Q_tip = Q_tip - P @ V_tip[:6]

    def bwd(carry, seg):
        f_next, Q_next = carry
        A_e, C_e, dC_e, fl, tl, NA0_i, NC0_i, LA_i, LC_i, lA_i, lC_i, e_i = seg
        # local derivative blocks of segment i (d xi_i columns only: T E_i of eq. 63)
        lA = lA_i - A_e.T @ coad(f_next) @ C_e
        lC = lC_i + jnp.einsum("bak,b->ak", dC_e, f_next)
        blkA = LA_i.at[:, :6].add(lA)
        blkC = LC_i.at[:, :6].add(lC)
        NA = NA0_i + (blkA[:, None, :] * e_i[None, :, None]).reshape(6, 18 * n)
        NC = NC0_i + (blkC[:, None, :] * e_i[None, :, None]).reshape(6, 18 * n)
        F_i = NC + C_e.T @ Q_next  # eq. (65)
        Q_i = NA + A_e.T @ Q_next  # eq. (64)
        f_i = fl + A_e.T @ f_next  # eq. (17)
        tau_i = tl + C_e.T @ f_next  # eq. (18), corrected
        return (f_i, Q_i), (tau_i, F_i)

    segs = (Ae, Ce, dCe, f_loc, tau_loc, NA0, NC0, LA, LC, locA, locC, onehot)
    _, (tau, Fmat) = jax.lax.scan(bwd, (f_tip, Q_tip), segs, reverse=True)
    Fmat = Fmat.reshape(n, 6, n, 3, 6)
    return IDGradients(tau, Fmat[:, :, :, 0], Fmat[:, :, :, 1], Fmat[:, :, :, 2])


def _skew(v):
    z = jnp.zeros_like(v[0])
    return jnp.array([[z, -v[2], v[1]], [v[2], z, -v[0]], [-v[1], v[0], z]])


# --------------------------------------------------------------------------------------------
# PCSModel (reduced coordinates q = per-segment strain modes minus rest)
# --------------------------------------------------------------------------------------------


def _model_loads(model: PCSModel):
    """Gravity and the dead tip wrench in the base frame, scaled by the load factor."""
    Rb = model.base_rotation
    g_body = model.load_factor * (Rb.T @ model.gravity)
    w = model.load_factor * model.tip_wrench  # world components
    return g_body, jnp.concatenate([Rb.T @ w[:3], Rb.T @ w[3:]])


def _project(model: PCSModel, J):
    """``(n, 6, n, 6)`` full-strain Jacobian -> ``(n m, n m)`` in the model's coordinates."""
    B = model.basis.B.astype(J.dtype)
    n, k = J.shape[0], B.shape[1]
    return jnp.einsum("ax,jaib,by->jxiy", B, J, B).reshape(n * k, n * k)


def cmtm_forces_and_jacobians(model: PCSModel, q, v, a):
    """``PCSModel.generalized_forces(q, v, a)`` and its Jacobians from the CMTM recursion.

    Args:
        model: :class:`~jaxrod.models.pcs.model.PCSModel` (gravity, base rotation, world-frame
            dead tip wrench and ``load_factor`` are taken into account, as in the model).
        q, v, a: ``(n m,)`` coordinates (strain modes minus rest), their rates and accelerations.
    Returns:
        ``(tau (n m,), dtau_dq, dtau_dv, dtau_da)``, the Jacobians ``(n m, n m)``;
        ``dtau_da`` is the mass matrix. Units as in the module docstring (reduced by the basis).
    """
    g_body, dead = _model_loads(model)
    r = inverse_dynamics_gradients(
        model.rod,
        model.strains(q),
        model.strain_rates(v),
        model.strain_rates(a),
        gravity_body=g_body,
        dead_tip_wrench=dead,
        n_quad=model.n_quad,
    )
    B = model.basis.B.astype(r.tau.dtype)
    tau = (r.tau @ B).reshape(-1)
    return (
        tau,
        _project(model, r.dtau_dxi),
        _project(model, r.dtau_dxidot),
        _project(model, r.dtau_dxiddot),
    )


def cmtm_jacobians(model: PCSModel, q, v, a):
    """``(d tau/d q, d tau/d v, d tau/d a)`` of ``PCSModel.generalized_forces`` (each ``(n m, n m)``;
    the last is the mass matrix); see :func:`cmtm_forces_and_jacobians`."""
    return cmtm_forces_and_jacobians(model, q, v, a)[1:]


def _stiffness_damping(model: PCSModel):
    """Diagonal blocks ``B^T ell Sigma B`` and ``B^T ell Upsilon B`` as ``(n m, n m)`` matrices."""
    rod = model.rod
    n = int(rod.n_segments)
    ell = rod.length / n
    B = model.basis.B
    eye = jnp.eye(n, dtype=B.dtype)
    K = jnp.kron(eye, B.T @ (ell * rod.stiffness_density[:, None] * B))
    D = jnp.kron(eye, B.T @ (ell * rod.damping_density[:, None] * B))
    return K, D


def residual_jacobians(model: PCSModel, q, v, a):
    """``(h, dh/dq, dh/dv, dh/da)`` of ``PCSModel.residual`` ``h = tau + K (xi - xi*) + D xidot``
    (eq. 29: ``dh/dq = dtau/dq + K``, ``dh/dv = dtau/dv + D``, ``dh/da = M``)."""
    tau, Jq, Jv, Ja = cmtm_forces_and_jacobians(model, q, v, a)
    K, D = _stiffness_damping(model)
    return tau + model.internal_forces(q, v), Jq + K, Jv + D, Ja


def newmark_jacobian(model: PCSModel, q, v, a, dt, beta=0.25, gamma=0.5):
    """Newton matrix of the Newmark-beta step, eq. (28):
    ``J = dh/da + gamma dt dh/dv + beta dt^2 dh/dq`` at ``(q, v, a)``, with ``h`` the residual
    (:func:`residual_jacobians`).

    This is the derivative of ``h`` with respect to the acceleration increment (the paper's
    unknown). :func:`jaxrod.simulate` solves for ``q_{n+1}`` instead, whose Jacobian is this
    matrix divided by ``beta dt^2``.

    Args:
        model: :class:`~jaxrod.models.pcs.model.PCSModel`.
        q, v, a: ``(n m,)`` state at the current Newton iterate.
        dt: time step [s]; beta, gamma: Newmark parameters.
    Returns:
        ``(n m, n m)``.
    """
    _, Jq, Jv, Ja = residual_jacobians(model, q, v, a)
    return Ja + (gamma * dt) * Jv + (beta * dt * dt) * Jq


# --------------------------------------------------------------------------------------------
# generalised forces whose forward-mode derivative uses the CMTM Jacobians
# --------------------------------------------------------------------------------------------


@eqx.filter_custom_jvp
def _gf_cmtm(model, q, v, a):
    return model._generalized_forces_autodiff(q, v, a)


@_gf_cmtm.def_jvp
def _gf_cmtm_jvp(primals, tangents):
    model, q, v, a = primals
    t_model, tq, tv, ta = tangents
    tau, Jq, Jv, Ja = cmtm_forces_and_jacobians(model, q, v, a)
    t_out = jnp.zeros_like(tau)
    for J, t in ((Jq, tq), (Jv, tv), (Ja, ta)):
        if t is not None:
            t_out = t_out + J @ t
    if t_model is not None and jax.tree_util.tree_leaves(t_model):
        # derivatives with respect to the model's parameters (sensitivities) by autodiff
        # (split by the tangents: a primal may be a Python float under jax.jvp)
        none = lambda x: x is None
        diff = jax.tree_util.tree_map(
            lambda t, p: None if t is None else p, t_model, model, is_leaf=none
        )
        rest = jax.tree_util.tree_map(
            lambda t, p: p if t is None else None, t_model, model, is_leaf=none
        )
        t_out = (
            t_out
            + jax.jvp(
                lambda d: eqx.combine(d, rest)._generalized_forces_autodiff(q, v, a),
                (diff,),
                (t_model,),
            )[1]
        )
    return tau, t_out


def cmtm_generalized_forces(model: PCSModel, q, v, a):
    """``PCSModel.generalized_forces`` (same values) whose JVP with respect to ``q, v, a`` is the
    CMTM Jacobian applied to the tangents: ``jax.jacfwd`` of anything built on it (the dense
    Newton Jacobian) evaluates the CMTM recursion once instead of pushing one tangent per column
    through the inverse dynamics. Tangents of the model's parameters go through autodiff."""
    return _gf_cmtm(model, q, v, a)
