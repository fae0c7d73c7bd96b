"""Kinematics of the piecewise-constant-strain (PCS) rod (Ishigaki, Ayusawa, Yamamoto, RA-L 2024;
spec ``seed003_pcs_cmtm.md`` sections 0-2).

Conventions (the paper's, and the same as :mod:`jaxrod.geometry`):

* Twists and wrenches put the **angular part first**: a strain is ``xi = [kappa; eps]``
  (``kappa`` [rad/m] curvature/torsion, ``eps`` [-] stretch/shear), a body velocity is
  ``eta = [omega; v]`` ([rad/s], [m/s]), a wrench is ``[moment; force]``.
* The rod axis is the local ``x`` axis: the straight, unstretched reference strain is
  ``XI_STRAIGHT = [0, 0, 0, 1, 0, 0]``.
* ``A = Ad_g = [[R, 0], [[p]_x R, R]]`` (6x6) is the adjoint of the pose ``g = (R, p)``. Segment
  ``i`` has the constant strain ``xi_i``; at the local coordinate ``x`` (distance [m] from the
  segment start) its pose relative to the segment start is ``exp(x hat(xi_i))`` and
  ``iA(x) = expm(x ad(xi_i))``.
* ``ad(x)`` is the paper's ``[x_bullet]`` (eq. 4), which is exactly :func:`jaxrod.geometry.se3_ad`.

Functions of ``t = x |kappa|`` such as ``sin(t)/t`` are evaluated from ``t**2`` and switch to their
Taylor series for ``t**2 < 0.25`` with the "double where", so every value and every derivative
(``jacfwd``, ``jacrev``, higher order) is finite and accurate at ``kappa = 0``, including
``xi = 0`` and the straight rod ``xi = XI_STRAIGHT``.

Every function broadcasts over leading axes unless its docstring says otherwise.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...geometry import se3_ad, se3_exp, skew, unskew

#: Straight, unstretched reference strain (rod axis = local x).
XI_STRAIGHT = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])

#: Names of the six strain modes, in the order of ``xi``.
STRAIN_MODES = ("kx", "ky", "kz", "ex", "ey", "ez")

# ---------------------------------------------------------------------------------------------
# Series for the tangent operator C.
#
# With X = x ad(xi) and t = x |kappa|, X satisfies X^5 = -2 t^2 X^3 - t^4 X (ad has the
# eigenvalues 0, +-i|kappa|, each +-i|kappa| with a 2x2 Jordan block). So every power series
# sum_k c_k X^k reduces to a polynomial of degree 4 in X whose coefficients are power series in
# u = t^2. _reduced_series does the reduction in exact rational arithmetic.
#
# C(x) = int_0^x exp(-y ad) dy = x sum_k (-1)^k X^k / (k+1)!, so C/x = I + sum_{j=1..4} c_j(u) X^j
# with the closed forms (s = sin t, h = 1 - cos t = 2 sin^2(t/2))
#   c_1 = -(4h - t s) / (2 t^2),        c_2 = (5 (t - s) - t h) / (2 t^3),
#   c_3 = -(2h - t s) / (2 t^4),        c_4 = (3 (t - s) - t h) / (2 t^5),
# i.e. the spec's a_k = x^(k+1) |c_k| with alternating signs (spec 1.3).
#
# Switch: the spec suggests t < 1e-2 with 3 series terms. There the closed forms still lose
# (eps / t^2 .. eps / t^4) relative accuracy by cancellation: values stay ~1e-15 accurate, but the
# jacobian d C / d xi is only ~3e-12 accurate just above t = 1e-2 (checked against a 60-digit
# mpmath evaluation). Switching at t^2 < 0.25 (as jaxrod.geometry does) with 8 series terms keeps
# the values and first derivatives accurate to ~1e-16 relative on both sides of the switch, and
# the second derivatives to ~3e-15 (same mpmath check).
# ---------------------------------------------------------------------------------------------

_SERIES_T2 = 0.25
_N_TERMS = 8


def _reduced_series(coeff, n_terms):
    """Coefficients of ``sum_k coeff(k) X^k`` reduced with ``X^5 = -2 u X^3 - u^2 X``.

    Returns a tuple of 5 tuples: entry ``j`` holds the first ``n_terms`` Taylor coefficients (in
    ``u``) of the coefficient of ``X^j``.
    """
    zero = [Fraction(0)] * n_terms
    power = [list(zero) for _ in range(5)]  # X^k as 5 polynomials in u
    power[0][0] = Fraction(1)
    total = [list(zero) for _ in range(5)]
    for k in range(2 * n_terms + 8):  # X^k only reaches degree (k - 1) // 2 in u
        ck = Fraction(coeff(k))
        for j in range(5):
            for d in range(n_terms):
                total[j][d] += ck * power[j][d]
        top = power[4]
        power = [list(zero)] + [list(power[j]) for j in range(4)]
        for d in range(n_terms):
            if d + 1 < n_terms:
                power[3][d + 1] -= 2 * top[d]
            if d + 2 < n_terms:
                power[1][d + 2] -= top[d]
    return tuple(tuple(float(v) for v in total[j]) for j in range(5))


_C_SERIES = _reduced_series(lambda k: Fraction((-1) ** k, math.factorial(k + 1)), _N_TERMS)


def _horner(u, coeffs):
    out = jnp.full_like(u, coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * u + c
    return out


def _c_coefficients(u):
    """Signed coefficients ``(c_1, c_2, c_3, c_4)`` of ``X^j`` in ``C / x``; ``u = (x |kappa|)^2``."""
    small = u < _SERIES_T2
    u_series = jnp.where(small, u, 0.0)
    u_exact = jnp.where(small, 1.0, u)  # double where: no 0/0 in the discarded branch
    t = jnp.sqrt(u_exact)
    s = jnp.sin(t)
    h = 2.0 * jnp.sin(0.5 * t) ** 2
    tms = t - s
    t3 = u_exact * t
    t4 = u_exact * u_exact
    exact = (
        -(4.0 * h - t * s) / (2.0 * u_exact),
        (5.0 * tms - t * h) / (2.0 * t3),
        -(2.0 * h - t * s) / (2.0 * t4),
        (3.0 * tms - t * h) / (2.0 * t4 * t),
    )
    return tuple(
        jnp.where(small, _horner(u_series, _C_SERIES[j]), exact[j - 1]) for j in range(1, 5)
    )


# ------------------------------------------ operators ------------------------------------------

def _as_float(a):
    a = jnp.asarray(a)
    return a if jnp.issubdtype(a.dtype, jnp.floating) else a.astype(float)


def _mv(M, v):
    return jnp.einsum("...ij,...j->...i", M, v)


def ad(x):
    """The paper's ``[x_bullet]`` (eq. 4): ``[[ [x1]_x, 0 ], [ [x2]_x, [x1]_x ]]``.

    Identical to :func:`jaxrod.geometry.se3_ad` (same angular-first ordering). ``ad(x) @ y`` is
    the motion cross product (Lie bracket) ``[x, y]``.

    Args:
        x: ``(..., 6)`` twist ``[angular; linear]``.
    Returns:
        ``(..., 6, 6)``.
    """
    return se3_ad(_as_float(x))


def coad(f):
    """Co-operator ``[f_circ] = [[ [f1]_x, [f2]_x ], [ [f2]_x, 0 ]]`` (spec section 0).

    Defined by ``ad(v).T @ f == coad(f) @ v`` for every twist ``v``. (``ad(v).T @ f`` is minus
    Featherstone's force cross product ``crf(v) @ f``.) Needed by the dynamics (spec eq. 62).

    Args:
        f: ``(..., 6)`` wrench ``[moment; force]``.
    Returns:
        ``(..., 6, 6)``.
    """
    f = _as_float(f)
    k1, k2 = skew(f[..., :3]), skew(f[..., 3:])
    top = jnp.concatenate([k1, k2], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([k2, jnp.zeros_like(k2)], axis=-1)], axis=-2)


def ad_vee(M):
    """Inverse of :func:`ad`: the twist ``x`` of a 6x6 matrix of the form ``ad(x)``.

    Reads the angular part from the upper-left block and the linear part from the lower-left
    block (antisymmetric parts). Use it to extract tangents such as ``vee(A^-1 dA)`` (eq. 3).

    Args:
        M: ``(..., 6, 6)``.
    Returns:
        ``(..., 6)``.
    """
    return jnp.concatenate([unskew(M[..., :3, :3]), unskew(M[..., 3:, :3])], axis=-1)


def adjoint(R, p):
    """Adjoint ``A = [[R, 0], [[p]_x R, R]]`` (eq. 1) of the pose ``(R, p)``.

    Args:
        R: ``(..., 3, 3)`` rotation.
        p: ``(..., 3)`` position [m].
    Returns:
        ``(..., 6, 6)``.
    """
    pR = skew(p) @ R
    top = jnp.concatenate([R, jnp.zeros_like(R)], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([pR, R], axis=-1)], axis=-2)


def homogeneous(R, p):
    """4x4 homogeneous transform ``[[R, p], [0, 1]]`` of the pose ``(R, p)``; broadcasts."""
    top = jnp.concatenate([R, p[..., :, None]], axis=-1)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0], dtype=R.dtype), R.shape[:-2] + (1, 4))
    return jnp.concatenate([top, bottom], axis=-2)


# --------------------------------------- exponentials -----------------------------------------


def exp_se3(xi, x):
    """Pose ``(R, p)`` of ``exp(x hat(xi))``: the frame at local coordinate ``x`` of a segment with
    constant strain ``xi``, relative to the segment start (spec 1.2, "cheapest route").

    ``R = I + sin(t)/theta [k]_x + (1 - cos t)/theta^2 [k]_x^2`` and
    ``p = (x I + (1 - cos t)/theta^2 [k]_x + (t - sin t)/theta^3 [k]_x^2) eps`` with
    ``theta = |kappa|``, ``t = x theta`` (via :func:`jaxrod.geometry.se3_exp` of ``x xi``).

    Args:
        xi: ``(..., 6)`` strain ``[kappa; eps]`` ([rad/m], [-]).
        x: ``(...)`` local coordinate [m] (broadcasts against ``xi[..., 0]``).
    Returns:
        ``(R (..., 3, 3), p (..., 3) [m])``.
    """
    xi = _as_float(xi)
    x = jnp.asarray(x, dtype=xi.dtype)
    T = se3_exp(x[..., None] * xi)
    return T[..., :3, :3], T[..., :3, 3]


def expA(xi, x):
    """``iA(x) = expm(x ad(xi)) = Ad(exp(x hat(xi)))`` (eq. 9), built from :func:`exp_se3`.

    Args:
        xi: ``(..., 6)`` strain.
        x: ``(...)`` local coordinate [m].
    Returns:
        ``(..., 6, 6)``.
    """
    return adjoint(*exp_se3(xi, x))


def expA_inv(xi, x):
    """``iA(x)^-1 = expm(-x ad(xi)) = expA(-xi, x)``; same shapes as :func:`expA`."""
    return expA(-_as_float(xi), x)


# -------------------------------------- tangent operator ---------------------------------------


def tangent_C(xi, x):
    """Tangent operator ``iC(x) = int_0^x iA(y)^-1 dy`` (eq. 12) in closed form (spec 1.3).

    ``C = x I - a1 ad + a2 ad^2 - a3 ad^3 + a4 ad^4`` with ``ad = ad(xi)`` (note the alternating
    signs); the coefficients switch to exact-rational Taylor series for ``(x |kappa|)^2 < 0.25``.
    ``C`` maps the strain rate to the body velocity (eq. 11) and a strain variation to the body
    pose variation (eq. 51): ``vee(iA^-1 d iA) = C d xi``. Its lower-left block has units [m^2],
    the diagonal blocks [m].

    Args:
        xi: ``(..., 6)`` strain ``[kappa; eps]``.
        x: ``(...)`` local coordinate [m].
    Returns:
        ``(..., 6, 6)``.
    """
    xi = _as_float(xi)
    x = jnp.asarray(x, dtype=xi.dtype)
    X = ad(x[..., None] * xi)
    u = x**2 * jnp.sum(xi[..., :3] ** 2, axis=-1)
    c1, c2, c3, c4 = (c[..., None, None] for c in _c_coefficients(u))
    X2 = X @ X
    eye = jnp.eye(6, dtype=xi.dtype)
    # I + c1 X + c2 X^2 + c3 X^3 + c4 X^4, with X^3, X^4 grouped through X^2.
    poly = eye + c1 * X + X2 @ (c2 * eye + c3 * X + c4 * X2)
    return x[..., None, None] * poly


def tangent_C_and_dot(xi, xidot, x):
    """``(C, Cdot)``: :func:`tangent_C` and its time derivative along ``xidot`` (one ``jax.jvp``).

    ``Cdot = sum_k dC/dxi_k xidot_k`` (spec 2.3, route 1).

    Args:
        xi: ``(..., 6)`` strain.
        xidot: ``(..., 6)`` strain rate (units of ``xi`` per second); broadcast against ``xi``.
        x: ``(...)`` local coordinate [m].
    Returns:
        ``(C (..., 6, 6), Cdot (..., 6, 6))``.
    """
    xi = _as_float(xi)
    xidot = jnp.asarray(xidot, dtype=xi.dtype)
    shape = jnp.broadcast_shapes(xi.shape, xidot.shape)
    xi, xidot = jnp.broadcast_to(xi, shape), jnp.broadcast_to(xidot, shape)
    return jax.jvp(lambda z: tangent_C(z, x), (xi,), (xidot,))


def tangent_C_dot(xi, xidot, x):
    """Directional derivative ``dC/dxi [xidot]`` (= ``iCdot`` of eq. 14); ``(..., 6, 6)``.

    ``xidot`` broadcasts against ``xi``. See :func:`tangent_C_and_dot`.
    """
    return tangent_C_and_dot(xi, xidot, x)[1]


# -------------------------------------- forward kinematics -------------------------------------


class PCSPoses(NamedTuple):
    """Poses along a PCS rod (world frame).

    Attributes:
        s: ``(N,)`` arclength [m] of the sample points, ``N = n k + 1``.
        R: ``(N, 3, 3)`` cross-section orientations at the sample points.
        p: ``(N, 3)`` centreline positions [m] at the sample points.
        R_frames: ``(n + 1, 3, 3)`` orientations of the segment frames ``{1}..{n+1}``.
        p_frames: ``(n + 1, 3)`` positions [m] of the segment frames (``p_frames[-1]`` = tip).
    """

    s: jax.Array
    R: jax.Array
    p: jax.Array
    R_frames: jax.Array
    p_frames: jax.Array


def base_pose(base=None, dtype=float):
    """Normalise a base pose: ``None`` (identity), a 4x4 homogeneous matrix or a tuple ``(R, p)``.

    Returns:
        ``(R (3, 3), p (3,))``.
    """
    if base is None:
        return jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype=dtype)
    if isinstance(base, tuple):
        R, p = base
        return jnp.asarray(R, dtype=dtype), jnp.asarray(p, dtype=dtype)
    T = jnp.asarray(base, dtype=dtype)
    if T.shape != (4, 4):
        raise ValueError(f"base must be None, (R, p) or a 4x4 matrix; got shape {T.shape}")
    return T[:3, :3], T[:3, 3]


def segment_frames(xis, lengths, base=None):
    """Poses of the segment frames ``{1}..{n+1}`` (eqs. 2, 45), by ``lax.scan`` over segments.

    The ``n`` relative transforms ``exp(ell_i hat(xi_i))`` are evaluated in one batch; the scan
    only composes them: ``R_{i+1} = R_i R_loc``, ``p_{i+1} = p_i + R_i p_loc``.

    Args:
        xis: ``(n, 6)`` segment strains.
        lengths: ``(n,)`` segment lengths [m].
        base: pose of frame ``{1}`` (see :func:`base_pose`); identity if ``None``.
    Returns:
        ``(R (n + 1, 3, 3), p (n + 1, 3))``; index 0 is the base, index ``n`` the tip.
    """
    xis = _as_float(xis)
    lengths = jnp.asarray(lengths, dtype=xis.dtype)
    return compose_frames(*exp_se3(xis, lengths), base)


def compose_frames(R_loc, p_loc, base=None):
    """Segment frames ``{1}..{n+1}`` from the relative transforms ``exp(ell_i hat(xi_i)) = (R_loc,
    p_loc)`` of the segments (``lax.scan``): ``R_{i+1} = R_i R_loc``, ``p_{i+1} = p_i + R_i p_loc``.

    Args:
        R_loc: ``(n, 3, 3)``; p_loc: ``(n, 3)`` [m].
        base: pose of frame ``{1}`` (see :func:`base_pose`).
    Returns:
        ``(R (n + 1, 3, 3), p (n + 1, 3) [m])``; index 0 is the base.
    """
    R0, p0 = base_pose(base, R_loc.dtype)

    def step(carry, loc):
        R, p = carry
        Rl, pl = loc
        nxt = (R @ Rl, p + R @ pl)
        return nxt, nxt

    _, (Rs, ps) = jax.lax.scan(step, (R0, p0), (R_loc, p_loc))
    return jnp.concatenate([R0[None], Rs]), jnp.concatenate([p0[None], ps])


def poses_at(xis, lengths, fractions, base=None, frames=None):
    """Poses at interior points ``x = f ell_i`` of every segment (eq. 8), vectorised.

    Args:
        xis: ``(n, 6)`` segment strains.
        lengths: ``(n,)`` segment lengths [m].
        fractions: ``(m,)`` relative positions ``f`` in ``[0, 1]`` inside each segment.
        base: pose of frame ``{1}`` (see :func:`base_pose`).
        frames: optional precomputed ``segment_frames(xis, lengths, base)``.
    Returns:
        ``(R (n, m, 3, 3), p (n, m, 3))``.
    """
    xis = _as_float(xis)
    lengths = jnp.asarray(lengths, dtype=xis.dtype)
    fractions = jnp.asarray(fractions, dtype=xis.dtype)
    frames = segment_frames(xis, lengths, base) if frames is None else frames
    return _in_world(frames, *exp_se3(xis[:, None, :], lengths[:, None] * fractions[None, :]))


def _in_world(frames, R_loc, p_loc):
    """World poses ``(R (n, m, 3, 3), p (n, m, 3))`` of the local poses ``R_loc (n, m, 3, 3),
    p_loc (n, m, 3)`` relative to the segment start frames ``frames = (R (n + 1, 3, 3), p (n + 1,
    3))``."""
    Rf, pf = frames
    return Rf[:-1, None] @ R_loc, pf[:-1, None] + jnp.einsum("nij,nmj->nmi", Rf[:-1], p_loc)


def forward_kinematics(xis, lengths, base=None, points_per_segment=1):
    """Centreline and frames of a PCS rod sampled uniformly inside each segment.

    Segment ``i`` contributes the points ``x = ell_i j / k``, ``j = 0..k-1``
    (``k = points_per_segment``); the tip is appended, so there are ``N = n k + 1`` points and the
    segment frames are ``p[::k]``.

    Args:
        xis: ``(n, 6)`` segment strains.
        lengths: ``(n,)`` segment lengths [m].
        base: pose of frame ``{1}``: ``None`` (identity), 4x4 matrix or ``(R, p)``.
        points_per_segment: ``k >= 1`` (static Python int).
    Returns:
        :class:`PCSPoses`.
    """
    k = int(points_per_segment)
    if k < 1:
        raise ValueError("points_per_segment must be >= 1")
    xis = _as_float(xis)
    lengths = jnp.asarray(lengths, dtype=xis.dtype)
    n = xis.shape[0]
    # one batch of exponentials at x = ell_i j / k, j = 0..k: the last column (j = k) is the
    # segment's own transform, which the frames compose (a second exponential would be traced
    # and compiled again)
    R_loc, p_loc = exp_se3(xis[:, None, :], lengths[:, None] * (jnp.arange(k + 1, dtype=xis.dtype) / k)[None, :])
    frames = compose_frames(R_loc[:, -1], p_loc[:, -1], base)
    R, p = _in_world(frames, R_loc[:, :-1], p_loc[:, :-1])
    fractions = jnp.arange(k, dtype=xis.dtype) / k
    s_start = jnp.concatenate([jnp.zeros(1, xis.dtype), jnp.cumsum(lengths)])
    s = (s_start[:-1, None] + lengths[:, None] * fractions[None, :]).reshape(n * k)
    return PCSPoses(
        s=jnp.concatenate([s, s_start[-1:]]),
        R=jnp.concatenate([R.reshape(n * k, 3, 3), frames[0][-1:]]),
        p=jnp.concatenate([p.reshape(n * k, 3), frames[1][-1:]]),
        R_frames=frames[0],
        p_frames=frames[1],
    )


# ------------------------------------ differential kinematics ----------------------------------


class SegmentOperators(NamedTuple):
    """The local operators of every segment at local coordinates ``x (n, m)`` (one batch).

    Attributes:
        R: ``(n, m, 3, 3)``, p: ``(n, m, 3)`` [m]: the pose ``exp(x hat(xi_i))`` (:func:`exp_se3`).
        Ai: ``(n, m, 6, 6)``: ``iA(x)^-1`` (:func:`expA_inv`), the adjoint of the inverse pose.
        C: ``(n, m, 6, 6)``: ``iC(x)`` (:func:`tangent_C`); Cd: its derivative along ``xidot``.
    """

    R: jax.Array
    p: jax.Array
    Ai: jax.Array
    C: jax.Array
    Cd: jax.Array


def segment_operators(xis, xidots, x):
    """:class:`SegmentOperators` of segments with strains and rates ``xis, xidots (n, 6)`` at the
    local coordinates ``x (n, m)`` [m]: one exponential and one ``jax.jvp`` of the tangent
    operator for all points, instead of one per use (the recursion needs them at the quadrature
    nodes and at the segment ends; each separate evaluation is traced and compiled again).
    ``Ai`` is the adjoint of the inverse pose ``(R^T, -R^T p)``, equal to ``expA_inv(xi, x)`` to
    round-off."""
    xis = _as_float(xis)
    shape = x.shape + (6,)
    xi_t = jnp.broadcast_to(xis[:, None, :], shape)
    R, p = exp_se3(xi_t, x)
    Rt = jnp.swapaxes(R, -1, -2)
    C, Cd = tangent_C_and_dot(xi_t, jnp.broadcast_to(jnp.asarray(xidots, xis.dtype)[:, None, :], shape), x)
    return SegmentOperators(R, p, adjoint(Rt, -_mv(Rt, p)), C, Cd)


def point_twists(eta_i, etadot_i, xi, xidot, xiddot, x):
    """Body velocity and acceleration at local coordinate ``x`` of a segment (eqs. 11, 14).

    ``eta = Ai eta_i + C xidot`` and
    ``etadot = Ai etadot_i + C xiddot + (ad(Ai eta_i) C + Cdot) xidot`` with ``Ai = iA(x)^-1``,
    ``C = iC(x)``, ``Cdot = dC/dxi[xidot]`` (the ``Cdot`` term that Renda et al. drop is kept).

    Args:
        eta_i: ``(..., 6)`` body velocity ``[omega; v]`` of the segment frame ``{i}``.
        etadot_i: ``(..., 6)`` its body acceleration.
        xi, xidot, xiddot: ``(..., 6)`` strain of the segment and its first two time derivatives.
        x: ``(...)`` local coordinate [m].
    Returns:
        ``(eta (..., 6), etadot (..., 6))`` in the local frame at ``x``.
    """
    xi = _as_float(xi)
    C, Cd = tangent_C_and_dot(xi, xidot, x)
    return twists_from_operators(expA_inv(xi, x), C, Cd, eta_i, etadot_i, xidot, xiddot)


def twists_from_operators(Ai, C, Cd, eta_i, etadot_i, xidot, xiddot):
    """:func:`point_twists` from precomputed operators ``Ai = iA(x)^-1``, ``C = iC(x)`` and
    ``Cd = dC/dxi[xidot]`` (``(..., 6, 6)``), so that one batch of operators serves several uses.

    Returns:
        ``(eta (..., 6), etadot (..., 6))``.
    """
    transported = _mv(Ai, eta_i)
    C_xidot = _mv(C, xidot)
    eta = transported + C_xidot
    etadot = (
        _mv(Ai, etadot_i) + _mv(C, xiddot) + _mv(ad(transported), C_xidot) + _mv(Cd, xidot)
    )
    return eta, etadot


def point_velocity(eta_i, xi, xidot, x):
    """Body velocity ``eta(x) = iA(x)^-1 eta_i + iC(x) xidot`` (eq. 11); ``(..., 6)``.

    Args as in :func:`point_twists`.
    """
    return _mv(expA_inv(xi, x), eta_i) + _mv(tangent_C(xi, x), xidot)


def point_acceleration(eta_i, etadot_i, xi, xidot, xiddot, x):
    """Body acceleration ``etadot(x)`` of eq. (14), including the ``Cdot xidot`` term; ``(..., 6)``.

    Args as in :func:`point_twists`.
    """
    return point_twists(eta_i, etadot_i, xi, xidot, xiddot, x)[1]


def segment_velocities(xis, lengths, xidots, xiddots=None, eta_base=None, etadot_base=None):
    """Body velocities and accelerations of the segment frames ``{1}..{n+1}`` (spec 2.4, 2.5).

    ``eta_{i+1} = iA_{i+1}^-1 eta_i + iC_{i+1} xidot_i`` and eq. (14) at ``x = ell_i``; the
    per-segment operators are evaluated in one batch, a ``lax.scan`` propagates.

    Args:
        xis, xidots: ``(n, 6)`` strains and strain rates.
        lengths: ``(n,)`` segment lengths [m].
        xiddots: ``(n, 6)`` strain accelerations (zero if ``None``).
        eta_base: ``(6,)`` body velocity of frame ``{1}`` (zero if ``None``: clamped base).
        etadot_base: ``(6,)`` body acceleration of frame ``{1}`` (zero if ``None``; pass
            ``[0; -R_1^T g]`` for the base-acceleration gravity trick).
    Returns:
        ``(eta (n + 1, 6), etadot (n + 1, 6))``; index 0 is the base.
    """
    xis = _as_float(xis)
    dt = xis.dtype
    lengths = jnp.asarray(lengths, dtype=dt)
    xidots = jnp.asarray(xidots, dtype=dt)
    xiddots = jnp.zeros_like(xis) if xiddots is None else jnp.asarray(xiddots, dtype=dt)
    eta0 = jnp.zeros(6, dt) if eta_base is None else jnp.asarray(eta_base, dtype=dt)
    etadot0 = jnp.zeros(6, dt) if etadot_base is None else jnp.asarray(etadot_base, dtype=dt)

    C, Cd = tangent_C_and_dot(xis, xidots, lengths)
    return propagate_velocities(expA_inv(xis, lengths), C, Cd, xidots, xiddots, eta0, etadot0)


def propagate_velocities(Ai, C, Cd, xidots, xiddots, eta0, etadot0):
    """:func:`segment_velocities` from the segment-end operators ``Ai = iA(ell_i)^-1``,
    ``C = iC(ell_i)``, ``Cd = dC/dxi[xidot_i]`` (``(n, 6, 6)``), strain rates and accelerations
    ``(n, 6)`` and the base twists ``eta0, etadot0 (6,)``.

    Returns:
        ``(eta (n + 1, 6), etadot (n + 1, 6))``; index 0 is the base.
    """
    rel_eta = _mv(C, xidots)  # i eta_{i+1}, eq. (46)
    rel_etadot = _mv(Cd, xidots) + _mv(C, xiddots)  # i etadot_{i+1}, eq. (47)

    def step(carry, seg):
        eta, etadot = carry
        A, r_eta, r_etadot = seg
        transported = A @ eta
        nxt = (transported + r_eta, A @ etadot + ad(transported) @ r_eta + r_etadot)
        return nxt, nxt

    _, (etas, etadots) = jax.lax.scan(step, (eta0, etadot0), (Ai, rel_eta, rel_etadot))
    return jnp.concatenate([eta0[None], etas]), jnp.concatenate([etadot0[None], etadots])


def velocities_at(xis, lengths, xidots, fractions, xiddots=None, eta_base=None, etadot_base=None):
    """Body velocities and accelerations at ``x = f ell_i`` inside every segment (eqs. 11, 14).

    Args:
        xis, lengths, xidots, xiddots, eta_base, etadot_base: as in :func:`segment_velocities`.
        fractions: ``(m,)`` relative positions in ``[0, 1]``.
    Returns:
        ``(eta (n, m, 6), etadot (n, m, 6))``.
    """
    xis = _as_float(xis)
    dt = xis.dtype
    lengths = jnp.asarray(lengths, dtype=dt)
    xidots = jnp.asarray(xidots, dtype=dt)
    xiddots = jnp.zeros_like(xis) if xiddots is None else jnp.asarray(xiddots, dtype=dt)
    fractions = jnp.asarray(fractions, dtype=dt)
    eta, etadot = segment_velocities(xis, lengths, xidots, xiddots, eta_base, etadot_base)
    m = fractions.shape[0]

    def tile(a):
        return jnp.broadcast_to(a[:, None, :], (a.shape[0], m, 6))

    return point_twists(
        tile(eta[:-1]), tile(etadot[:-1]), tile(xis), tile(xidots), tile(xiddots),
        lengths[:, None] * fractions[None, :],
    )


# ----------------------------------------- strain basis ----------------------------------------


class StrainBasis(eqx.Module):
    """Reduced strain parametrisation ``xi = B q + xi_ref`` of one segment (spec 1.5, optional).

    Attributes:
        B: ``(6, m)`` constant basis (columns are strain directions).
        xi_ref: ``(6,)`` reference strain (default :data:`XI_STRAIGHT`).

    Build with :meth:`full` (all six modes, the paper's choice), :meth:`kirchhoff` (3 angular +
    extension), :meth:`inextensible` (3 angular), :meth:`bending` (``ky, kz``), :meth:`planar`
    (``kz, ex, ey``: motion in the local x-y plane) or :meth:`select`.
    """

    B: jax.Array
    xi_ref: jax.Array

    @classmethod
    def select(cls, modes, xi_ref=XI_STRAIGHT):
        """Basis of unit columns picking ``modes`` (names from :data:`STRAIN_MODES` or indices)."""
        idx = [STRAIN_MODES.index(m) if isinstance(m, str) else int(m) for m in modes]
        if len(set(idx)) != len(idx) or not all(0 <= i < 6 for i in idx):
            raise ValueError(f"invalid or repeated strain modes: {modes}")
        # NumPy, then one device_put per array: jnp.eye()[:, idx] compiled ~12 tiny programs per model
        return cls(B=jax.device_put(np.eye(6)[:, idx]), xi_ref=jax.device_put(np.asarray(xi_ref, dtype=float)))

    @classmethod
    def full(cls, xi_ref=XI_STRAIGHT):
        """All six modes: ``q = xi - xi_ref``."""
        return cls.select(range(6), xi_ref)

    @classmethod
    def kirchhoff(cls, xi_ref=XI_STRAIGHT):
        """Torsion, two bendings and extension (no shear): ``kx, ky, kz, ex``."""
        return cls.select(("kx", "ky", "kz", "ex"), xi_ref)

    @classmethod
    def inextensible(cls, xi_ref=XI_STRAIGHT):
        """Angular strains only (unshearable, inextensible): ``kx, ky, kz``."""
        return cls.select(("kx", "ky", "kz"), xi_ref)

    @classmethod
    def bending(cls, xi_ref=XI_STRAIGHT):
        """The two bending curvatures only: ``ky, kz``."""
        return cls.select(("ky", "kz"), xi_ref)

    @classmethod
    def planar(cls, xi_ref=XI_STRAIGHT):
        """Planar motion in the local x-y plane: ``kz, ex, ey``."""
        return cls.select(("kz", "ex", "ey"), xi_ref)

    @property
    def n_modes(self):
        """Number of reduced coordinates ``m`` per segment."""
        return self.B.shape[1]

    def strain(self, q):
        """``xi = B q + xi_ref``; ``(..., m) -> (..., 6)``."""
        return jnp.einsum("ij,...j->...i", self.B, q) + self.xi_ref

    def strain_rate(self, qdot):
        """``xidot = B qdot`` (also for accelerations); ``(..., m) -> (..., 6)``."""
        return jnp.einsum("ij,...j->...i", self.B, qdot)

    def coordinates(self, xi):
        """Least-squares ``q`` with ``B q + xi_ref ~ xi`` (exact in the span); ``(..., 6) -> (..., m)``."""
        return jnp.einsum("ij,...j->...i", jnp.linalg.pinv(self.B), xi - self.xi_ref)

    def project_force(self, tau):
        """Reduced generalized force ``B^T tau``; ``(..., 6) -> (..., m)``."""
        return jnp.einsum("ji,...j->...i", self.B, tau)


def _gauss_legendre(n_quad):
    """Gauss-Legendre ``(nodes, weights)`` of ``n_quad`` points on ``[0, 1]`` (NumPy, static)."""
    x, w = np.polynomial.legendre.leggauss(int(n_quad))
    return 0.5 * (x + 1.0), 0.5 * w  # on [0, 1]
