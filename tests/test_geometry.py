"""Tests of jaxrod.geometry against independent references (scipy Rotation, scipy.linalg.expm)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm, logm
from scipy.spatial.transform import Rotation

import jaxrod  # noqa: F401  (enables float64)
from jaxrod import geometry as _geometry


class _Jitted:
    """``jaxrod.geometry`` with every function jitted: op-by-op dispatch makes the tests slow."""

    def __getattr__(self, name):
        f = jax.jit(getattr(_geometry, name))
        setattr(self, name, f)
        return f


g = _Jitted()

# assert_allclose's default rtol=1e-7 would hide errors in series coefficients: absolute only.
_close = functools.partial(np.testing.assert_allclose, rtol=0.0)
RNG = np.random.default_rng(1234)
# Rotation-vector norms covering the zero point, the series branch (< 0.5), its edge and the
# closed-form branch up to just below pi.
NORMS = [0.0, 1e-12, 1e-7, 1e-3, 0.1, 0.4999, 0.5001, 1.0, 2.0, 3.0, np.pi - 1e-6]


def _unit(n=None):
    v = RNG.normal(size=(3,) if n is None else (n, 3))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _rotvecs():
    return np.stack([s * _unit() for s in NORMS] + list(RNG.normal(size=(10, 3))))


def _quat_close(q, ref, atol=1e-12):
    """Quaternions equal up to the global sign (q and -q are the same rotation)."""
    q, ref = np.asarray(q), np.asarray(ref)
    err = np.minimum(np.abs(q - ref).max(-1), np.abs(q + ref).max(-1))
    assert err.max() < atol, err.max()


def _central_fd(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def _is_rotation(R, atol=1e-12):
    R = np.asarray(R)
    eye = np.broadcast_to(np.eye(3), R.shape)
    _close(np.swapaxes(R, -1, -2) @ R, eye, atol=atol)
    _close(np.linalg.det(R), 1.0, atol=atol)


# ------------------------------------------- SO(3) -------------------------------------------


def test_rotation_matrix_matches_scipy_and_expm():
    w = _rotvecs()
    R = np.asarray(g.rotation_matrix(w))  # batched
    _close(R, Rotation.from_rotvec(w).as_matrix(), atol=1e-14)
    for wi, Ri in zip(w, R):
        _close(Ri, expm(np.asarray(g.skew(wi))), atol=1e-14)
    _is_rotation(R)
    np.testing.assert_array_equal(g.rotation_matrix(jnp.zeros(3)), np.eye(3))
    assert g.rotation_matrix(jnp.zeros((2, 5, 3))).shape == (2, 5, 3, 3)


def test_rotation_matrix_jacobian_at_zero_is_generators():
    generators = np.stack([np.asarray(g.skew(e)) for e in np.eye(3)], axis=-1)  # (3, 3, 3)
    for jac in (jax.jacfwd, jax.jacrev):
        J = np.asarray(jax.jit(jac(g.rotation_matrix))(jnp.zeros(3)))
        assert np.isfinite(J).all()
        _close(J, generators, atol=1e-15)
    # Second derivatives too (the series branch is a polynomial): d2R/dw_i dw_j at 0 is
    # (K_i K_j + K_j K_i) / 2.
    H = np.asarray(jax.jit(jax.jacfwd(jax.jacfwd(g.rotation_matrix)))(jnp.zeros(3)))
    K = np.moveaxis(generators, -1, 0)
    ref = 0.5 * (np.einsum("iab,jbc->acij", K, K) + np.einsum("jab,ibc->acij", K, K))
    _close(H, ref, atol=1e-14)


@pytest.mark.parametrize("f, n", [("rotation_matrix", 3), ("se3_exp", 6), ("se3_log_exp", 6)])
def test_second_derivatives_continuous_near_zero(f, n):
    """Hessians at tiny nonzero arguments match those at 0: closed forms such as
    (t - sin t) / t^3 lose all accuracy there (and their derivatives more so), the series do not."""
    fun = (lambda x: g.se3_log(g.se3_exp(x))) if f == "se3_log_exp" else getattr(g, f)
    hess = jax.jit(jax.jacfwd(jax.jacfwd(fun)))
    H0 = np.asarray(hess(jnp.zeros(n)))
    assert np.isfinite(H0).all()
    for scale in [1e-8, 1e-6, 1e-4]:
        x = np.zeros(n)
        x[:3] = scale * _unit()
        # Third derivatives are O(1) here, so |H(x) - H(0)| <~ |x|.
        _close(hess(jnp.asarray(x)), H0, atol=2 * scale)


@pytest.mark.parametrize("norm", [1e-4, 1e-2, 0.3, 0.4999, 0.5001, 1.5])
def test_rotation_matrix_jacobian_matches_finite_differences(norm):
    w = norm * _unit()
    J = np.asarray(jax.jacfwd(g.rotation_matrix)(jnp.asarray(w)))
    _close(J, _central_fd(g.rotation_matrix, w), atol=1e-9)
    _close(
        J, _central_fd(lambda x: Rotation.from_rotvec(x).as_matrix(), w), atol=1e-9
    )


def test_rotation_log_matches_scipy_and_round_trips():
    w = _rotvecs()
    R = Rotation.from_rotvec(w).as_matrix()
    _close(g.rotation_log(R), w, atol=1e-12)
    # Round trip from random rotations (scipy's rotvec has angle in [0, pi], as does ours).
    Rr = Rotation.random(50, random_state=7)
    _close(g.rotation_log(Rr.as_matrix()), Rr.as_rotvec(), atol=1e-12)
    _close(g.rotation_matrix(g.rotation_log(Rr.as_matrix())), Rr.as_matrix(),
                               atol=1e-14)


@pytest.mark.parametrize("angle", [np.pi, np.pi - 1e-10, np.pi - 1e-5, 2.2])
def test_rotation_log_near_pi(angle):
    axes = np.concatenate([np.eye(3), _unit(5)])
    for n in axes:
        R = Rotation.from_rotvec(angle * n).as_matrix()
        w = np.asarray(g.rotation_log(R))
        _close(np.linalg.norm(w), angle, atol=1e-12)
        _close(g.rotation_matrix(w), R, atol=1e-12)
        if angle < np.pi:  # unique log below pi
            _close(w, angle * n, atol=1e-10)


def test_rotation_log_derivative_at_and_near_zero():
    f = lambda w: g.rotation_log(g.rotation_matrix(w))  # noqa: E731
    for jac in (jax.jacfwd, jax.jacrev):
        J = np.asarray(jax.jit(jac(f))(jnp.zeros(3)))
        _close(J, np.eye(3), atol=1e-15)
    jf = jax.jit(jax.jacfwd(f))
    for norm in [1e-6, 0.05, 0.099, 0.11, 1.0, 2.5]:
        _close(jf(norm * _unit()), np.eye(3), atol=1e-10)


def test_rotation_from_two_vectors():
    a, b, v = _unit(20), _unit(20), RNG.normal(size=(20, 3))
    R = np.asarray(g.rotation_from_two_vectors(a, b))
    _is_rotation(R)
    _close(np.einsum("nij,nj->ni", R, a), b, atol=1e-13)
    _close(np.einsum("nij,nj->ni", R, v), g.parallel_transport(v, a, b),
                               atol=1e-13)
    # The minimal rotation: angle acos(a.b) about a x b.
    c = np.cross(a, b)
    angle = np.arccos(np.clip(np.sum(a * b, -1), -1, 1))
    rotvec = c / np.linalg.norm(c, axis=-1, keepdims=True) * angle[:, None]
    _close(R, Rotation.from_rotvec(rotvec).as_matrix(), atol=1e-12)
    _close(g.rotation_from_two_vectors(a[0], a[0]), np.eye(3), atol=1e-15)


# ----------------------------------------- quaternions -----------------------------------------


def _scipy_quat(rot):
    return rot.as_quat(scalar_first=True)


def test_quat_to_rotation_matches_scipy_and_is_scale_invariant():
    rot = Rotation.random(30, random_state=3)
    q = _scipy_quat(rot)
    _close(g.quat_to_rotation(q), rot.as_matrix(), atol=1e-14)
    for s in [0.3, 2.0, -1.7, 1e3, 1e-3]:
        R = np.asarray(g.quat_to_rotation(s * q))
        _close(R, rot.as_matrix(), atol=1e-13)
        _is_rotation(R, atol=1e-13)
    # A generic non-unit quaternion still gives a proper rotation.
    _is_rotation(g.quat_to_rotation(RNG.normal(size=(30, 4)) * 5.0), atol=1e-13)


def test_rotation_to_quat_matches_scipy_including_half_turns():
    rots = [Rotation.random(30, random_state=5)]
    half_axes = np.concatenate([np.eye(3), _unit(4), np.array([[1.0, 1, 0], [0, 1, 1]]) / 2**0.5])
    rots.append(Rotation.from_rotvec(np.pi * half_axes))  # w = 0
    rots.append(Rotation.from_rotvec(np.array([[0.0, 0, 0], [1e-9, 0, 0], [0, 3.14159, 0]])))
    for rot in rots:
        q = np.asarray(g.rotation_to_quat(rot.as_matrix()))
        _quat_close(q, _scipy_quat(rot))
        _close(np.linalg.norm(q, axis=-1), 1.0, atol=1e-14)
        assert (q[..., 0] >= 0).all()
        _close(g.quat_to_rotation(q), rot.as_matrix(), atol=1e-14)


def test_quat_multiply_and_conjugate():
    p_rot, q_rot = Rotation.random(20, random_state=11), Rotation.random(20, random_state=12)
    p, q = _scipy_quat(p_rot), _scipy_quat(q_rot)
    _quat_close(g.quat_multiply(p, q), _scipy_quat(p_rot * q_rot))
    _close(
        g.quat_to_rotation(g.quat_multiply(p, q)),
        np.asarray(g.quat_to_rotation(p)) @ np.asarray(g.quat_to_rotation(q)),
        atol=1e-14,
    )
    r = RNG.normal(size=(20, 4))
    prod = np.asarray(g.quat_multiply(r, g.quat_conjugate(r)))
    _close(prod[:, 0], np.sum(r * r, -1), rtol=1e-14)
    _close(prod[:, 1:], 0.0, atol=1e-14)
    _quat_close(g.quat_conjugate(p), _scipy_quat(p_rot.inv()))


def test_quat_from_axis_angle():
    w = _rotvecs()
    q = np.asarray(g.quat_from_axis_angle(w))
    _close(q, _scipy_quat(Rotation.from_rotvec(w)), atol=1e-14)
    _close(g.quat_to_rotation(q), g.rotation_matrix(w), atol=1e-14)
    J = np.asarray(jax.jacfwd(g.quat_from_axis_angle)(jnp.zeros(3)))
    _close(J, np.concatenate([np.zeros((1, 3)), 0.5 * np.eye(3)]), atol=1e-15)
    assert np.isfinite(jax.jacrev(g.quat_from_axis_angle)(jnp.zeros(3))).all()
    for norm in [1e-3, 0.4999, 0.5001, 2.0]:
        x = norm * _unit()
        _close(jax.jacfwd(g.quat_from_axis_angle)(x),
                                   _central_fd(g.quat_from_axis_angle, x), atol=1e-9)


def test_quat_rotate():
    rot = Rotation.random(20, random_state=13)
    q, v = _scipy_quat(rot), RNG.normal(size=(20, 3))
    _close(g.quat_rotate(q, v), rot.apply(v), atol=1e-13)
    _close(g.quat_rotate(3.7 * q, v), rot.apply(v), atol=1e-13)  # non-unit


def test_quat_derivative_is_body_frame():
    q0 = _scipy_quat(Rotation.random(random_state=17)) * 1.3  # non-unit on purpose
    omega = RNG.normal(size=3)
    dq = np.asarray(g.quat_derivative(q0, omega))
    # q(t) = q0 ⊗ exp(omega t / 2) for a constant body angular velocity.
    qt = lambda t: g.quat_multiply(q0, g.quat_from_axis_angle(omega * t))  # noqa: E731
    _close(dq, (np.asarray(qt(1e-6)) - np.asarray(qt(-1e-6))) / 2e-6,
                               atol=1e-9)
    # dR/dt = R [omega]_x.
    R, dR = jax.jvp(g.quat_to_rotation, (jnp.asarray(q0),), (jnp.asarray(dq),))
    _close(dR, np.asarray(R) @ np.asarray(g.skew(omega)), atol=1e-13)


# -------------------------------------------- SE(3) --------------------------------------------


def _twists():
    ws = [s * _unit() for s in NORMS] + list(RNG.normal(size=(8, 3)))
    return np.stack([np.concatenate([w, RNG.normal(size=3)]) for w in ws])


def _random_T(n):
    T = np.zeros((n, 4, 4))
    T[:, :3, :3] = Rotation.random(n, random_state=19).as_matrix()
    T[:, :3, 3] = RNG.normal(size=(n, 3))
    T[:, 3, 3] = 1.0
    return T


def test_se3_hat_vee():
    xi = _twists()
    X = np.asarray(g.se3_hat(xi))
    np.testing.assert_array_equal(X[:, 3], 0.0)
    _close(X[:, :3, :3] @ xi[:, 3:, None], np.cross(xi[:, :3], xi[:, 3:])[..., None],
           atol=1e-14)
    np.testing.assert_array_equal(X[:, :3, 3], xi[:, 3:])
    np.testing.assert_array_equal(g.se3_vee(X), xi)


def test_se3_exp_matches_expm():
    xi = _twists()
    T = np.asarray(g.se3_exp(xi))
    for xii, Ti in zip(xi, T):
        _close(Ti, expm(np.asarray(g.se3_hat(xii))), atol=1e-13)
    _close(T[:, :3, :3], g.rotation_matrix(xi[:, :3]), atol=1e-15)
    # Pure translation.
    v = RNG.normal(size=3)
    _close(g.se3_exp(np.concatenate([np.zeros(3), v]))[:3, 3], v, atol=0)


def test_se3_exp_jacobian_at_zero_is_generators():
    generators = np.stack([np.asarray(g.se3_hat(e)) for e in np.eye(6)], axis=-1)
    for jac in (jax.jacfwd, jax.jacrev):
        J = np.asarray(jax.jit(jac(g.se3_exp))(jnp.zeros(6)))
        assert np.isfinite(J).all()
        _close(J, generators, atol=1e-15)


@pytest.mark.parametrize("norm", [1e-4, 0.2, 0.4999, 0.5001, 2.0])
def test_se3_exp_jacobian_matches_finite_differences(norm):
    xi = np.concatenate([norm * _unit(), RNG.normal(size=3)])
    J = np.asarray(jax.jacfwd(g.se3_exp)(jnp.asarray(xi)))
    _close(J, _central_fd(g.se3_exp, xi), atol=1e-9)
    _close(J, _central_fd(lambda x: expm(np.asarray(g.se3_hat(x))), xi),
                               atol=1e-8)


def test_se3_log_round_trips_and_matches_logm():
    xi = _twists()
    _close(g.se3_log(g.se3_exp(xi)), xi, atol=1e-9)  # near-pi entry limits
    T = _random_T(20)
    _close(g.se3_exp(g.se3_log(T)), T, atol=1e-13)
    for Ti, xii in zip(T, np.asarray(g.se3_log(T))):
        _close(xii, np.asarray(g.se3_vee(np.real(logm(Ti)))), atol=1e-10)
    J = jax.jacfwd(lambda x: g.se3_log(g.se3_exp(x)))(jnp.zeros(6))
    _close(J, np.eye(6), atol=1e-15)


def test_se3_inverse():
    T = _random_T(10)
    Ti = np.asarray(g.se3_inverse(T))
    _close(Ti, np.linalg.inv(T), atol=1e-13)
    _close(T @ Ti, np.broadcast_to(np.eye(4), T.shape), atol=1e-13)


def test_se3_adjoint_and_ad_identities():
    T = _random_T(10)
    xi, eta = RNG.normal(size=(10, 6)), RNG.normal(size=(10, 6))
    Ad = np.asarray(g.se3_adjoint(T))
    Ti = np.linalg.inv(T)
    mv = lambda M, x: np.einsum("nij,nj->ni", M, x)  # noqa: E731
    # hat(Ad_T xi) = T hat(xi) T^-1
    _close(g.se3_hat(mv(Ad, xi)), T @ np.asarray(g.se3_hat(xi)) @ Ti,
                               atol=1e-13)
    _close(g.se3_adjoint(g.se3_inverse(T)), np.linalg.inv(Ad), atol=1e-12)
    # ad_xi eta = vee([hat xi, hat eta])
    Xi, Eta = np.asarray(g.se3_hat(xi)), np.asarray(g.se3_hat(eta))
    _close(mv(np.asarray(g.se3_ad(xi)), eta), g.se3_vee(Xi @ Eta - Eta @ Xi),
                               atol=1e-13)
    # Ad_g ad_xi Ad_g^-1 = ad_{Ad_g xi}
    _close(
        Ad @ np.asarray(g.se3_ad(xi)) @ np.linalg.inv(Ad), g.se3_ad(mv(Ad, xi)), atol=1e-12
    )
    # Ad_{exp(xi)} = expm(ad_xi)
    for x in xi[:3]:
        _close(g.se3_adjoint(g.se3_exp(x)), expm(np.asarray(g.se3_ad(x))),
                                   atol=1e-12)


# ------------------------------- existing helpers (regressions) -------------------------------


def test_parallel_transport():
    a, b = _unit(20), _unit(20)
    u, v = RNG.normal(size=(20, 3)), RNG.normal(size=(20, 3))
    _close(g.parallel_transport(a, a, b), b, atol=1e-14)
    pu, pv = np.asarray(g.parallel_transport(u, a, b)), np.asarray(g.parallel_transport(v, a, b))
    _close(np.linalg.norm(pu, axis=-1), np.linalg.norm(u, axis=-1), rtol=1e-13)
    _close(np.sum(pu * pv, -1), np.sum(u * v, -1), atol=1e-12)
    # Vectors along a x b are unchanged; a == b is the identity.
    c = np.cross(a, b)
    _close(g.parallel_transport(c, a, b), c, atol=1e-14)
    _close(g.parallel_transport(u, a, a), u, atol=1e-14)
    # Jacobian at a == b is finite and matches finite differences.
    f = lambda ab: g.parallel_transport(v[0], ab[:3], ab[3:])  # noqa: E731
    ab = np.concatenate([a[0], a[0]])
    J = np.asarray(jax.jacfwd(f)(jnp.asarray(ab)))
    assert np.isfinite(J).all()
    assert np.isfinite(jax.jacrev(f)(jnp.asarray(ab))).all()
    _close(J, _central_fd(f, ab), atol=1e-8)


def test_signed_angle_conventions():
    x, y, z = np.eye(3)
    _close(g.signed_angle(x, y, z), np.pi / 2)
    _close(g.signed_angle(y, x, z), -np.pi / 2)
    _close(g.signed_angle(x, y, -z), -np.pi / 2)
    _close(g.signed_angle(x, -x, z), np.pi)  # (-pi, pi]: +pi
    _close(g.signed_angle(x, x, z), 0.0)
    n = _unit(1)[0]
    u = np.cross(n, _unit(1)[0])
    for theta in np.linspace(-np.pi + 1e-3, np.pi - 1e-3, 9):
        v = g.rotate_about_axis(u, n, theta)
        _close(g.signed_angle(u, v, n), theta, atol=1e-12)
        _close(v, Rotation.from_rotvec(theta * n).apply(u), atol=1e-14)
    # Finite gradient at zero angle.
    grad = jax.grad(g.signed_angle)(jnp.asarray(u), jnp.asarray(u), jnp.asarray(n))
    assert np.isfinite(grad).all()
