"""Tests of jaxrod.models.pcs.kinematics (PCS spec seed003 sections 0-2) against independent
references: scipy / jax matrix exponentials of ad built here from eq. (4), Gauss-Legendre
quadrature of eq. (12), the 12x12 block-exponential form of C, analytic Taylor terms at xi = 0,
central finite differences, time derivatives (jax.jvp) of expm-based trajectories, and the
analytic circle of a constant-curvature rod."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

import jaxrod  # noqa: F401  (enables float64)
from jaxrod import geometry
from jaxrod.models import pcs
from jaxrod.models.pcs import kinematics as _kin

RNG = np.random.default_rng(20240507)

# ------------------------------------------ references ------------------------------------------


def _skew(v):
    v = np.asarray(v, dtype=float)
    z = np.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return np.stack(
        [np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2
    )


def _ad_ref(x):
    """Eq. (4) built from blocks: [[ [x1]_x, 0 ], [ [x2]_x, [x1]_x ]] (numpy, batched)."""
    x = np.asarray(x, dtype=float)
    k1, k2 = _skew(x[..., :3]), _skew(x[..., 3:])
    out = np.zeros(x.shape[:-1] + (6, 6))
    out[..., :3, :3] = k1
    out[..., 3:, 3:] = k1
    out[..., 3:, :3] = k2
    return out


def _ad_jnp(x):
    """Same as _ad_ref, in jax.numpy (for references that are differentiated in time)."""
    def sk(v):
        return jnp.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])

    k1, k2 = sk(x[:3]), sk(x[3:])
    z = jnp.zeros((3, 3))
    return jnp.block([[k1, z], [k2, k1]])


def _vee_ref(M):
    """Twist of a matrix of the form (4): angular from the upper-left, linear from lower-left."""
    M = np.asarray(M)
    return np.stack(
        [M[..., 2, 1], M[..., 0, 2], M[..., 1, 0], M[..., 5, 1], M[..., 3, 2], M[..., 4, 0]], -1
    )


def _vee_jnp(M):
    return jnp.stack([M[2, 1], M[0, 2], M[1, 0], M[5, 1], M[3, 2], M[4, 0]])


def _hat4(xi):
    xi = np.asarray(xi, dtype=float)
    out = np.zeros(xi.shape[:-1] + (4, 4))
    out[..., :3, :3] = _skew(xi[..., :3])
    out[..., :3, 3] = xi[..., 3:]
    return out


def _C_block(xi, x):
    """Spec 1.3 reference: top-right 6x6 block of expm([[-x ad, x E], [0, 0]]) (scipy, batched)."""
    xi, x = np.asarray(xi, dtype=float), np.asarray(x, dtype=float)
    M = np.zeros(np.broadcast_shapes(xi.shape[:-1], x.shape) + (12, 12))
    M[..., :6, :6] = -x[..., None, None] * _ad_ref(xi)
    M[..., :6, 6:] = x[..., None, None] * np.eye(6)
    return expm(M)[..., :6, 6:]


def _C_quad(xi, x, n=40):
    """Eq. (12) by n-point Gauss-Legendre quadrature of expm(-y ad(xi)) over [0, x]."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    xi, x = np.asarray(xi, dtype=float), np.asarray(x, dtype=float)
    y = 0.5 * x[..., None] * (nodes + 1.0)  # (..., n)
    vals = expm(-y[..., None, None] * _ad_ref(xi)[..., None, :, :])
    return 0.5 * x[..., None, None] * np.einsum("k,...kij->...ij", weights, vals)


def _rel_err(a, ref):
    a, ref = np.asarray(a), np.asarray(ref)
    axes = tuple(range(ref.ndim - 2, ref.ndim))  # per case, over the last two axes
    scale = np.maximum(1.0, np.abs(ref).max(axis=axes, keepdims=True))
    return (np.abs(a - ref) / scale).max()


# ------------------------------------ functions under test ------------------------------------
# Jitted once at module level. The derivatives are compiled for a single case (xi (6,), x ()) and
# looped over the batch, so that every batch size reuses the same compiled program.

expA = jax.jit(pcs.expA)
expA_inv = jax.jit(pcs.expA_inv)
C = jax.jit(pcs.tangent_C)
exp_se3 = jax.jit(pcs.exp_se3)
Cdot = jax.jit(pcs.tangent_C_dot)


def _per_case(f):
    fj = jax.jit(f)

    def call(*args):
        args = [np.asarray(a, dtype=float) for a in args]
        return np.stack([np.asarray(fj(*(a[i] for a in args))) for i in range(len(args[0]))])

    return call


dA = _per_case(jax.jacfwd(pcs.expA))
dC = _per_case(jax.jacfwd(pcs.tangent_C))
dC_rev = _per_case(jax.jacrev(pcs.tangent_C))
d2A = _per_case(jax.jacfwd(jax.jacfwd(pcs.expA)))
d2C = _per_case(jax.jacfwd(jax.jacfwd(pcs.tangent_C)))
dCdot = _per_case(jax.jacfwd(pcs.tangent_C_dot))


def _unit(shape=()):
    v = RNG.normal(size=shape + (3,))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# x * |kappa| values: zero, the series branch, both sides of the switch, closed form up to 10.
T_VALUES = np.array([0.0, 1e-12, 1e-7, 1e-3, 1e-2, 0.1, 0.4999, 0.5001, 1.0, 2.0, 3.1, 6.6, 10.0])


@pytest.fixture(scope="module")
def cases():
    """Strains and local coordinates: random directions, |kappa| from T_VALUES, plus xi = 0 and
    the straight rod (kappa = 0 exactly, eps = e_x)."""
    x = RNG.uniform(0.3, 1.5, size=T_VALUES.size)
    kappa = (T_VALUES / x)[:, None] * _unit((T_VALUES.size,))
    eps = RNG.normal(size=(T_VALUES.size, 3)) + np.array([1.0, 0.0, 0.0])
    xi = np.concatenate([kappa, eps], axis=-1)
    xi = np.concatenate([xi, np.zeros((1, 6)), [pcs.XI_STRAIGHT]])
    x = np.concatenate([x, [0.8, 0.7]])
    return xi, x


# -------------------------------------------- tests --------------------------------------------


def test_ad_and_coad():
    x, y, f = RNG.normal(size=(3, 5, 6))
    ad_x = np.asarray(jax.jit(pcs.ad)(x))
    np.testing.assert_array_equal(ad_x, _ad_ref(x))
    np.testing.assert_array_equal(ad_x, np.asarray(geometry.se3_ad(x)))
    # ad(x) y is the se(3) bracket [hat x, hat y] in the angular-first ordering.
    hx, hy = _hat4(x), _hat4(y)
    bracket = hx @ hy - hy @ hx
    ref = np.concatenate([bracket[:, [2, 0, 1], [1, 2, 0]], bracket[:, :3, 3]], axis=-1)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", ad_x, y), ref, rtol=0, atol=1e-14)
    # co-operator: ad(v)^T f == coad(f) v, and the block form of spec section 0.
    co = np.asarray(pcs.coad(f))
    np.testing.assert_allclose(
        np.einsum("nji,nj->ni", _ad_ref(y), f), np.einsum("nij,nj->ni", co, y), rtol=0, atol=1e-14
    )
    np.testing.assert_array_equal(co[:, :3, :3], _skew(f[:, :3]))
    np.testing.assert_array_equal(co[:, :3, 3:], _skew(f[:, 3:]))
    np.testing.assert_array_equal(co[:, 3:, :3], _skew(f[:, 3:]))
    np.testing.assert_array_equal(co[:, 3:, 3:], 0.0)
    np.testing.assert_allclose(np.asarray(pcs.ad_vee(ad_x)), x, rtol=0, atol=0)


def test_expA_matches_expm(cases):
    xi, x = cases
    ref = expm(x[:, None, None] * _ad_ref(xi))
    assert _rel_err(expA(xi, x), ref) < 1e-12
    assert _rel_err(expA_inv(xi, x), expm(-x[:, None, None] * _ad_ref(xi))) < 1e-12
    assert _rel_err(expA_inv(xi, x) @ expA(xi, x), np.broadcast_to(np.eye(6), ref.shape)) < 1e-12
    R, p = exp_se3(xi, x)
    T = expm(x[:, None, None] * _hat4(xi))
    assert _rel_err(R, T[:, :3, :3]) < 1e-12
    assert np.abs(np.asarray(p) - T[:, :3, 3]).max() < 1e-12 * max(1.0, np.abs(T).max())
    # broadcasting one strain against several coordinates
    xs = np.linspace(0.0, 2.0, 5)
    np.testing.assert_allclose(
        np.asarray(pcs.expA(xi[9], xs)), expm(xs[:, None, None] * _ad_ref(xi[9])), rtol=0, atol=1e-12
    )


def test_tangent_C_matches_quadrature_and_block_expm(cases):
    xi, x = cases
    C_val = np.asarray(C(xi, x))
    assert _rel_err(C_val, _C_quad(xi, x)) < 1e-12
    assert _rel_err(C_val, _C_block(xi, x)) < 1e-12


def test_series_coefficients_match_spec():
    # Spec 1.3: a1 = x^2/2 - x^6 t^4/720, a2 = x^3/6 - x^7 t^4/5040,
    # a3 = x^4/24 - x^6 t^2/360 + x^8 t^4/13440, a4 = x^5/120 - x^7 t^2/2520 + x^9 t^4/120960,
    # with C = x E - a1 ad + a2 ad^2 - a3 ad^3 + a4 ad^4 (signs alternate).
    spec = {
        1: (-1 / 2, 0.0, 1 / 720),
        2: (1 / 6, 0.0, -1 / 5040),
        3: (-1 / 24, 1 / 360, -1 / 13440),
        4: (1 / 120, -1 / 2520, 1 / 120960),
    }
    for j, coeffs in spec.items():
        np.testing.assert_allclose(_kin._C_SERIES[j][:3], coeffs, rtol=1e-15, atol=0)


def test_zero_strain_values_and_derivatives():
    x = np.array([0.4, 1.3])
    xi = np.zeros((2, 6))
    E = np.eye(6)
    np.testing.assert_array_equal(np.asarray(expA(xi, x)), np.broadcast_to(E, (2, 6, 6)))
    np.testing.assert_allclose(np.asarray(C(xi, x)), x[:, None, None] * E, rtol=0, atol=1e-16)
    ad_e = _ad_ref(E)  # ad(e_k), (k, 6, 6)
    sym = np.einsum("kij,ljm->imkl", ad_e, ad_e)
    sym = sym + np.swapaxes(sym, -1, -2)  # ad_k ad_l + ad_l ad_k, as (6, 6, k, l)
    for i, xv in enumerate(x):
        # first order: d expA/dxi_k = x ad(e_k), dC/dxi_k = -x^2/2 ad(e_k)
        ref_dA = xv * np.moveaxis(ad_e, 0, -1)
        ref_dC = -0.5 * xv**2 * np.moveaxis(ad_e, 0, -1)
        # second order: x^2/2 (ad_k ad_l + ad_l ad_k) and x^3/6 (ad_k ad_l + ad_l ad_k)
        for got, ref in [
            (dA(xi, x)[i], ref_dA),
            (dC(xi, x)[i], ref_dC),
            (dC_rev(xi, x)[i], ref_dC),
            (d2A(xi, x)[i], 0.5 * xv**2 * sym),
            (d2C(xi, x)[i], xv**3 / 6.0 * sym),
        ]:
            got = np.asarray(got)
            assert np.all(np.isfinite(got))
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)


def _central_fd(f, xi, h):
    cols = []
    for k in range(6):
        e = np.zeros(6)
        e[k] = h
        cols.append((np.asarray(f(xi + e)) - np.asarray(f(xi - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def test_straight_rod_derivatives_match_finite_differences():
    """kappa = 0 exactly, eps = e_x (the initial state of every experiment)."""
    xi = np.array([pcs.XI_STRAIGHT, pcs.XI_STRAIGHT])
    x = np.array([0.9, 0.9])
    h = 1e-6
    fd_A = _central_fd(lambda z: expm(0.9 * _ad_ref(z)), xi[0], h)
    fd_C = _central_fd(lambda z: _C_block(z, 0.9), xi[0], h)
    fd_C_self = _central_fd(lambda z: C(z, 0.9), xi[0], h)
    for got, ref in [(dA(xi, x)[0], fd_A), (dC(xi, x)[0], fd_C), (dC_rev(xi, x)[0], fd_C),
                     (dC(xi, x)[0], fd_C_self)]:
        got = np.asarray(got)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-8)
    # second derivatives (needed by the CMTM / dynamic gradients) against FD of the jacobian
    fd2 = _central_fd(lambda z: dC(np.stack([z, z]), x)[0], xi[0], 1e-5)
    got = np.asarray(d2C(xi, x)[0])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, fd2, rtol=0, atol=1e-8)
    # Cdot and its jacobian at the straight rod
    xidot = RNG.normal(size=6)
    cd = np.asarray(Cdot(xi[0], xidot, 0.9))
    fd_cd = (_C_block(xi[0] + h * xidot, 0.9) - _C_block(xi[0] - h * xidot, 0.9)) / (2 * h)
    np.testing.assert_allclose(cd, fd_cd, rtol=0, atol=1e-8)
    jd = np.asarray(dCdot(xi, np.stack([xidot, xidot]), x)[0])
    assert np.all(np.isfinite(jd))
    np.testing.assert_allclose(
        jd, _central_fd(lambda z: Cdot(z, xidot, 0.9), xi[0], 1e-5), rtol=0, atol=1e-8
    )


def test_jacobians_match_expm_reference():
    """jacfwd of the closed forms vs jacfwd of jax.scipy.linalg.expm references over a range of
    x|kappa| (catches badly conditioned closed forms near the series switch)."""

    def C_ref(z, x):
        M = jnp.zeros((12, 12)).at[:6, :6].set(-x * _ad_jnp(z)).at[:6, 6:].set(x * jnp.eye(6))
        return jax.scipy.linalg.expm(M)[:6, 6:]

    def A_ref(z, x):
        return jax.scipy.linalg.expm(x * _ad_jnp(z))

    t = np.array([1e-3, 1e-2 * (1 - 1e-6), 1e-2 * (1 + 1e-6), 0.1, 0.4999, 0.5001, 1.0, 3.0])
    x = np.full(t.size, 0.7)
    xi = np.concatenate([(t / 0.7)[:, None] * _unit(), np.tile([1.0, 0.2, -0.3], (t.size, 1))], 1)
    ref_C = np.asarray(jax.jit(jax.vmap(jax.jacfwd(C_ref)))(xi, x))
    ref_A = np.asarray(jax.jit(jax.vmap(jax.jacfwd(A_ref)))(xi, x))
    scale_C = np.abs(ref_C).max(axis=(1, 2, 3), keepdims=True)
    scale_A = np.abs(ref_A).max(axis=(1, 2, 3), keepdims=True)
    assert (np.abs(np.asarray(dC(xi, x)) - ref_C) / scale_C).max() < 1e-13
    assert (np.abs(np.asarray(dA(xi, x)) - ref_A) / scale_A).max() < 1e-13


def test_continuity_across_series_switch():
    """Values and jacobians on both sides of the series/closed-form switch, t = x |kappa| =
    t0 (1 -+ 1e-6): the jump minus the trapezoidal prediction 0.5 (f'(-) + f'(+)) dxi is round-off."""
    t0 = np.sqrt(_kin._SERIES_T2)
    x = 0.6
    n = _unit()
    eps = np.array([1.0, -0.4, 0.3])
    xi = np.stack([np.concatenate([t0 * (1 + s) / x * n, eps]) for s in (-1e-6, 1e-6)])
    xs = np.full(2, x)
    delta = xi[1] - xi[0]
    for f, df, d2f in [(expA, dA, d2A), (C, dC, d2C)]:
        v, j, h = np.asarray(f(xi, xs)), np.asarray(df(xi, xs)), np.asarray(d2f(xi, xs))
        jump = v[1] - v[0] - 0.5 * (j[0] + j[1]) @ delta
        assert np.abs(jump).max() < 1e-14 * np.abs(v).max()
        jump_j = j[1] - j[0] - 0.5 * (h[0] + h[1]) @ delta
        assert np.abs(jump_j).max() < 1e-13 * np.abs(j).max()
    # both sides against the independent references
    assert _rel_err(C(xi, xs), _C_block(xi, xs)) < 1e-13
    assert _rel_err(expA(xi, xs), expm(x * _ad_ref(xi))) < 1e-13


def test_eq51_pose_variation(cases):
    """vee(A^-1 dA/dxi_k) == C e_k (eq. 51)."""
    xi, x = cases
    A = expA(xi, x)
    tangent = np.einsum("nij,njmk->nimk", np.linalg.inv(np.asarray(A)), np.asarray(dA(xi, x)))
    cols = _vee_ref(np.moveaxis(tangent, -1, 1))  # (n, k, 6)
    assert _rel_err(np.swapaxes(cols, 1, 2), C(xi, x)) < 1e-12


def _body_twists(A_of_t):
    """Body velocity vee(A^-1 dA/dt) and its time derivative at t = 0 (nested jax.jvp); A_of_t
    returns a stack (..., 6, 6) of adjoint matrices."""

    def vel(t):
        A, Ad = jax.jvp(A_of_t, (t,), (jnp.ones_like(t),))
        M = jnp.linalg.solve(A, Ad)
        return jax.vmap(_vee_jnp)(M.reshape(-1, 6, 6))

    return jax.jvp(vel, (jnp.zeros(()),), (jnp.ones(()),))


@jax.jit
def _point_reference(xi0, xid, xidd, w1, w2, A0, x):
    """Body twists of A(t) = A0 expm(ad(w(t))) expm(x ad(xi(t))) and of its base A0 expm(ad(w(t))),
    with xi(t) = xi0 + t xid + t^2/2 xidd and w(t) = t w1 + t^2/2 w2."""

    def A_of_t(t):
        base = A0 @ jax.scipy.linalg.expm(_ad_jnp(t * w1 + 0.5 * t**2 * w2))
        point = base @ jax.scipy.linalg.expm(x * _ad_jnp(xi0 + t * xid + 0.5 * t**2 * xidd))
        inv_seg = jax.scipy.linalg.expm(-x * _ad_jnp(xi0 + t * xid + 0.5 * t**2 * xidd))
        return jnp.stack([base, point, inv_seg])

    (eta, etadot) = _body_twists(lambda t: A_of_t(t)[:2])
    # d/dt of iA^-1 for eq. (15)
    inv_seg, inv_seg_dot = jax.jvp(lambda t: A_of_t(t)[2], (jnp.zeros(()),), (jnp.ones(()),))
    return eta, etadot, inv_seg, inv_seg_dot


def test_velocity_and_acceleration_eqs_11_14_15():
    twists = jax.jit(pcs.point_twists)
    vel = jax.jit(pcs.point_velocity)
    acc = jax.jit(pcs.point_acceleration)
    A0 = expm(_ad_ref(RNG.normal(size=6)))
    for kappa_scale, moving_base in [(1.3, False), (1.3, True), (0.0, True), (1e-4, True)]:
        xi0 = np.concatenate([kappa_scale * RNG.normal(size=3), [1.0, 0.0, 0.0] + 0.2 * RNG.normal(size=3)])
        xid, xidd = RNG.normal(size=(2, 6))
        w1, w2 = RNG.normal(size=(2, 6)) * (1.0 if moving_base else 0.0)
        x = 0.85
        eta_ref, etadot_ref, Ainv, Ainv_dot = (
            np.asarray(a) for a in _point_reference(xi0, xid, xidd, w1, w2, A0, x)
        )
        eta_i, etadot_i = eta_ref[0], etadot_ref[0]
        eta, etadot = (np.asarray(a) for a in twists(eta_i, etadot_i, xi0, xid, xidd, x))
        np.testing.assert_allclose(eta, eta_ref[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(etadot, etadot_ref[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(vel(eta_i, xi0, xid, x)), eta, rtol=0, atol=1e-15)
        np.testing.assert_allclose(
            np.asarray(acc(eta_i, etadot_i, xi0, xid, xidd, x)), etadot, rtol=0, atol=1e-15
        )
        # The Cdot term is not negligible here, so dropping it would fail the test above.
        if kappa_scale > 0:
            assert np.abs(np.asarray(Cdot(xi0, xid, x)) @ xid).max() > 1e-2
        # eq. (15): d/dt iA^-1 = -ad(C xidot) iA^-1
        Cx = np.asarray(C(xi0, x)) @ xid
        np.testing.assert_allclose(Ainv_dot, -_ad_ref(Cx) @ Ainv, rtol=0, atol=1e-12)


@jax.jit
def _chain_reference(xis, xids, xidds, lengths, fractions, w1, w2, A0):
    """Body twists of every segment frame and of the points x = f ell_i of the chain
    A0 expm(ad(w(t))) prod_i expm(ell_i ad(xi_i(t)))."""
    n = xis.shape[0]

    def A_of_t(t):
        xi_t = xis + t * xids + 0.5 * t**2 * xidds
        ads = jax.vmap(_ad_jnp)(xi_t)  # (n, 6, 6)
        xs = lengths[:, None] * jnp.append(fractions, 1.0)[None, :]  # (n, m + 1)
        gens = jnp.concatenate(
            [_ad_jnp(t * w1 + 0.5 * t**2 * w2)[None], (xs[..., None, None] * ads[:, None]).reshape(-1, 6, 6)]
        )
        exps = jax.vmap(jax.scipy.linalg.expm)(gens)  # one expm trace for all generators
        m = fractions.shape[0]
        A = A0 @ exps[0]
        frames, points = [A], []
        for i in range(n):
            local = exps[1 + i * (m + 1) : 1 + (i + 1) * (m + 1)]
            points += [A @ local[j] for j in range(m)]
            A = A @ local[m]
            frames.append(A)
        return jnp.stack(frames + points)

    return _body_twists(A_of_t)


def test_segment_velocity_recursion():
    n = 3
    xis = np.concatenate([RNG.normal(size=(n, 3)), np.array([1.0, 0, 0]) + 0.2 * RNG.normal(size=(n, 3))], 1)
    xis[1, :3] = 0.0  # a straight segment in the middle
    xids, xidds = RNG.normal(size=(2, n, 6))
    lengths = np.array([0.3, 0.5, 0.4])
    fractions = np.array([0.0, 0.35, 1.0])
    w1, w2 = RNG.normal(size=(2, 6))
    A0 = expm(_ad_ref(RNG.normal(size=6)))
    eta_ref, etadot_ref = (
        np.asarray(a) for a in _chain_reference(xis, xids, xidds, lengths, fractions, w1, w2, A0)
    )
    eta, etadot = jax.jit(pcs.segment_velocities)(xis, lengths, xids, xidds, eta_ref[0], etadot_ref[0])
    np.testing.assert_allclose(np.asarray(eta), eta_ref[: n + 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(etadot), etadot_ref[: n + 1], rtol=0, atol=1e-12)
    eta_p, etadot_p = jax.jit(pcs.velocities_at)(
        xis, lengths, xids, fractions, xidds, eta_ref[0], etadot_ref[0]
    )
    np.testing.assert_allclose(np.asarray(eta_p).reshape(-1, 6), eta_ref[n + 1 :], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(etadot_p).reshape(-1, 6), etadot_ref[n + 1 :], rtol=0, atol=1e-12
    )


_fk = jax.jit(pcs.forward_kinematics, static_argnames="points_per_segment")


def test_forward_kinematics_constant_curvature_circle():
    k = 2.0  # curvature about the local z axis [1/m]
    lengths = np.array([0.3, 0.5, 0.4])
    xis = np.tile([0.0, 0.0, k, 1.0, 0.0, 0.0], (3, 1))
    R0 = Rotation.from_rotvec([0.3, -0.5, 0.9]).as_matrix()
    p0 = np.array([0.1, -0.2, 0.7])
    T0 = np.eye(4)
    T0[:3, :3], T0[:3, 3] = R0, p0
    out = _fk(xis, lengths, T0, points_per_segment=5)
    for got, ref in zip(pcs.base_pose((R0, p0)), pcs.base_pose(T0)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    s = np.asarray(out.s)
    assert s.shape == (16,) and out.p.shape == (16, 3) and out.R.shape == (16, 3, 3)
    assert out.R_frames.shape == (4, 3, 3) and out.p_frames.shape == (4, 3)
    starts = np.array([0.0, 0.3, 0.8])
    s_ref = (starts[:, None] + lengths[:, None] * np.arange(5)[None] / 5).ravel()
    np.testing.assert_allclose(s, np.append(s_ref, 1.2), rtol=0, atol=1e-15)
    local = np.stack([np.sin(k * s) / k, (1.0 - np.cos(k * s)) / k, np.zeros_like(s)], -1)
    np.testing.assert_allclose(np.asarray(out.p), p0 + local @ R0.T, rtol=0, atol=1e-14)
    centre = p0 + R0 @ np.array([0.0, 1.0 / k, 0.0])
    np.testing.assert_allclose(np.linalg.norm(np.asarray(out.p) - centre, axis=-1), 1.0 / k, atol=1e-14)
    Rz = Rotation.from_rotvec(k * s[:, None] * np.array([0.0, 0.0, 1.0])).as_matrix()
    np.testing.assert_allclose(np.asarray(out.R), R0 @ Rz, rtol=0, atol=1e-14)
    tip = p0 + R0 @ np.array([np.sin(2.4) / k, (1 - np.cos(2.4)) / k, 0.0])
    np.testing.assert_allclose(np.asarray(out.p_frames[-1]), tip, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(out.p[::5]), np.asarray(out.p_frames), rtol=0, atol=0)
    # straight, stretched rod: p(s) = 1.1 s e_x
    straight = _fk(np.tile([0, 0, 0, 1.1, 0, 0.0], (3, 1)), lengths, np.eye(4), points_per_segment=5)
    np.testing.assert_allclose(
        np.asarray(straight.p), 1.1 * np.asarray(straight.s)[:, None] * np.eye(3)[0], atol=1e-15
    )


def test_forward_kinematics_general_chain():
    n, k = 3, 5  # the shapes of the circle test: the compiled _fk is reused
    xis = RNG.normal(size=(n, 6)) + pcs.XI_STRAIGHT
    lengths = RNG.uniform(0.1, 0.6, size=n)
    T0 = expm(_hat4(RNG.normal(size=6)))
    out = _fk(xis, lengths, T0, points_per_segment=k)
    T = T0
    for i in range(n):
        for j in range(k):
            Tj = T @ expm(lengths[i] * j / k * _hat4(xis[i]))
            np.testing.assert_allclose(np.asarray(out.p[k * i + j]), Tj[:3, 3], atol=1e-13)
            np.testing.assert_allclose(np.asarray(out.R[k * i + j]), Tj[:3, :3], atol=1e-13)
        T = T @ expm(lengths[i] * _hat4(xis[i]))
        np.testing.assert_allclose(np.asarray(out.p_frames[i + 1]), T[:3, 3], atol=1e-13)
    np.testing.assert_allclose(np.asarray(pcs.homogeneous(out.R[-1], out.p[-1])), T, atol=1e-13)
    # pose jacobian at the straight configuration is finite
    J = jax.jit(jax.jacfwd(lambda z: _fk(z, lengths, T0, points_per_segment=k).p))(
        np.tile(pcs.XI_STRAIGHT, (n, 1))
    )
    assert np.all(np.isfinite(np.asarray(J)))


def test_strain_basis():
    b = pcs.StrainBasis.kirchhoff()
    assert b.n_modes == 4
    q = np.array([0.1, -0.2, 0.3, 0.05])
    np.testing.assert_array_equal(np.asarray(b.strain(q)), [0.1, -0.2, 0.3, 1.05, 0.0, 0.0])
    np.testing.assert_allclose(np.asarray(b.coordinates(b.strain(q))), q, atol=1e-15)
    np.testing.assert_array_equal(np.asarray(b.strain_rate(q)), [0.1, -0.2, 0.3, 0.05, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(b.project_force(np.arange(6.0))), [0, 1, 2, 3])
    assert pcs.StrainBasis.full().n_modes == 6
    assert pcs.StrainBasis.inextensible().n_modes == 3
    np.testing.assert_array_equal(np.asarray(pcs.StrainBasis.bending().B), np.eye(6)[:, [1, 2]])
    np.testing.assert_array_equal(np.asarray(pcs.StrainBasis.planar().B), np.eye(6)[:, [2, 3, 4]])
    np.testing.assert_array_equal(
        np.asarray(pcs.StrainBasis.select(["kz", 3]).B), np.asarray(pcs.StrainBasis.select([2, "ex"]).B)
    )
    with pytest.raises(ValueError):
        pcs.StrainBasis.select(["kx", "kx"])
    # a pytree: usable as a jit argument, batched coordinates
    xi = jax.jit(lambda basis, qq: basis.strain(qq))(b, np.tile(q, (3, 1)))
    assert xi.shape == (3, 6)
