"""CMTM analytic gradients of the PCS inverse dynamics (jaxrod.models.pcs.cmtm, spec seed003
sec. 5) against independent references: ``jax.jacfwd`` through the recursive inverse dynamics of
``PCSModel.generalized_forces`` / ``inverse_dynamics`` (forward-mode autodiff, a different code
path; for ``PCSModel(jacobian="cmtm")`` the reference is the autodiff model with all six modes,
projected on the basis), the chain rule through ``NewmarkBeta.stage``, central finite
differences (follower tip load), direct matrix products and the absolute twists of
``segment_velocities``. Random states with realistic strains (curvatures up to ~10 rad/m,
stretch/shear ~5 %), near-zero and exactly zero curvature, rotated base, gravity, tip loads, all
six modes and reduced bases. Small problems (1-3 segments); jitted functions are shared."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import jaxrod
from jaxrod.models.pcs import (
    PCSModel,
    PCSRod,
    StrainBasis,
    ad_vee,
    cmtm,
    expA,
    expA_inv,
    inverse_dynamics,
    segment_velocities,
    tangent_C_and_dot,
)

RNG = np.random.default_rng(20240515)
TOL = 1e-8


def rel(a, b):
    """Relative Frobenius error of ``a`` against the reference ``b``."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def full_state(n, ang, lin, rng):
    s = np.tile([ang] * 3 + [lin] * 3, n)
    q = rng.normal(size=6 * n) * s
    v = rng.normal(size=6 * n) * np.tile([3.0] * 3 + [0.1] * 3, n)
    a = rng.normal(size=6 * n) * np.tile([30.0] * 3 + [1.0] * 3, n)
    return jnp.asarray(q), jnp.asarray(v), jnp.asarray(a)


DT, BETA, GAMMA = 4e-3, 0.25, 0.5


@eqx.filter_jit
def cmtm_all(model, q, v, a):
    """The module's API: forces and Jacobians, residual Jacobians, Newmark matrix (one program)."""
    return (
        cmtm.cmtm_forces_and_jacobians(model, q, v, a),
        cmtm.residual_jacobians(model, q, v, a),
        cmtm.newmark_jacobian(model, q, v, a, DT, BETA, GAMMA),
    )


@eqx.filter_jit
def autodiff_all(model, q, v, a, with_grad=False):
    """Reference: the model's own generalised forces and their forward-mode Jacobians with respect
    to q, v, a and the density (for ``jacobian="cmtm"`` this goes through the custom JVP), the
    Jacobians of the internal forces (stiffness and damping matrices) and, with ``with_grad``, the
    reverse-mode gradient in q of ``|generalized_forces|^2 / 2`` (to compare with ``Jq^T tau``)."""

    def f(q, v, a, rho):
        return eqx.tree_at(lambda m: m.rod.density, model, rho).generalized_forces(
            q, v, a
        )

    rho = model.rod.density
    Jq, Jv, Ja, Jrho = jax.jacfwd(f, argnums=(0, 1, 2, 3))(q, v, a, rho)
    K, D = jax.jacfwd(model.internal_forces, argnums=(0, 1))(q, v)
    out = (f(q, v, a, rho), Jq, Jv, Ja, Jrho, K, D)
    if with_grad:
        out += (
            jax.grad(lambda x: 0.5 * jnp.sum(model.generalized_forces(x, v, a) ** 2))(
                q
            ),
        )
    return out


def silicone_model(n, **kw):
    rod = PCSRod.rectangular(
        0.9,
        n,
        0.05,
        0.02,
        youngs_modulus=110e3,
        density=1080.0,
        poisson_ratio=0.5,
        viscosity=300.0,
    )
    return PCSModel(rod, **kw)


@pytest.fixture(scope="module")
def loaded_model():
    """3 segments, all six modes, rotated and offset base, oblique gravity, world dead tip wrench."""
    Rb = Rotation.from_rotvec([0.3, -0.7, 0.4]).as_matrix()
    return silicone_model(
        3,
        gravity=(0.5, -1.0, -9.81),
        base_rotation=Rb,
        base_position=(0.1, -0.2, 0.3),
        tip_wrench=(0.01, -0.02, 0.015, 0.2, -0.1, -0.3),
    )


STATES = {
    # name: (angular scale [1/m], linear scale [-]) of q = xi - xi*
    "realistic": (3.0, 0.05),
    "large_curvature": (
        10.0,
        0.1,
    ),  # x |kappa| ~ 3 rad over a 0.3 m segment: closed forms
    "near_zero": (1e-7, 1e-7),  # series branch of every coefficient
    "straight": (0.0, 0.0),  # kappa = 0 exactly (the rest shape)
}


@pytest.mark.parametrize("name", list(STATES))
def test_cmtm_jacobians_match_jacfwd_full_basis(loaded_model, name):
    rng = np.random.default_rng(list(STATES).index(name))
    q, v, a = full_state(3, *STATES[name], rng)
    (tau, Jq, Jv, Ja), (h, Hq, Hv, Ha), _ = cmtm_all(loaded_model, q, v, a)
    tau_r, Jq_r, Jv_r, Ja_r, _, K_r, D_r = autodiff_all(loaded_model, q, v, a)
    errs = (rel(tau, tau_r), rel(Jq, Jq_r), rel(Jv, Jv_r), rel(Ja, Ja_r))
    assert max(errs) < TOL, errs
    assert np.all(np.isfinite(np.asarray(Jq)))
    # non-trivial: every block is populated, the mass matrix is symmetric positive definite
    assert min(np.linalg.norm(Jq_r), np.linalg.norm(Jv_r), np.linalg.norm(Ja_r)) > 1e-4
    Ja = np.asarray(Ja)
    assert np.max(np.abs(Ja - Ja.T)) < 1e-12 * np.max(np.abs(Ja))
    assert np.linalg.eigvalsh(0.5 * (Ja + Ja.T)).min() > 0
    # residual Jacobians (eq. 29) include stiffness and damping
    assert (
        rel(h, tau_r + K_r @ q + D_r @ v) < 1e-13
    )  # internal forces are linear: K q + D v
    assert max(rel(Hq, Jq_r + K_r), rel(Hv, Jv_r + D_r), rel(Ha, Ja_r)) < TOL


def test_each_load_is_differentiated(loaded_model):
    """At rest (v = a = 0) d tau / d q comes from the loads only: gravity and the dead tip wrench
    are checked separately, each large enough to fail the tolerance if its term were missing."""
    q, _, _ = full_state(3, 3.0, 0.05, RNG)
    z = jnp.zeros_like(q)
    only_gravity = eqx.tree_at(lambda m: m.tip_wrench, loaded_model, jnp.zeros(6))
    only_tip = eqx.tree_at(lambda m: m.gravity, loaded_model, jnp.zeros(3))
    no_loads = eqx.tree_at(lambda m: m.gravity, only_gravity, jnp.zeros(3))
    assert np.all(np.asarray(autodiff_all(no_loads, q, z, z)[1]) == 0)
    for m in (only_gravity, only_tip):
        Jq = cmtm_all(m, q, z, z)[0][1]
        Jq_r = autodiff_all(m, q, z, z)[1]
        assert np.linalg.norm(Jq_r) > 1e-2
        assert rel(Jq, Jq_r) < TOL


def test_newmark_jacobian_is_the_newton_matrix_of_the_newmark_step(loaded_model):
    """Eq. (28) with K and D. jaxrod's Newmark unknown is q_{n+1}: by the chain rule through
    ``NewmarkBeta.stage`` its Jacobian is J / (beta dt^2)."""
    scheme = jaxrod.NewmarkBeta(BETA, GAMMA)
    q0, v0, a0 = full_state(3, 3.0, 0.05, RNG)
    hist = (q0, v0, a0)
    q1 = q0 + DT * v0 + 0.4 * DT * DT * a0
    qs, vs, acc, _ = scheme.stage(q1, hist, DT)
    _, dv, da, _ = jax.jacfwd(lambda x: scheme.stage(x, hist, DT))(
        q1
    )  # d(v, a)/d q_{n+1}
    _, Jq_r, Jv_r, Ja_r, _, K_r, D_r = autodiff_all(loaded_model, qs, vs, acc)
    ref = (Jq_r + K_r) + (Jv_r + D_r) @ dv + Ja_r @ da
    Jn = cmtm_all(loaded_model, qs, vs, acc)[2]
    assert rel(Jn / (BETA * DT * DT), ref) < TOL


def test_model_option_cmtm_reduced_basis_curved_rest():
    """``PCSModel(jacobian="cmtm")`` with a reduced basis (torsion, two bendings, extension), a
    curved, twisted, stretched rest shape and load factor 0.7. Its forward-mode Jacobians (custom
    JVP: the CMTM gradients), the derivative with respect to a material parameter (density, through
    autodiff) and the reverse-mode gradient of a loss against the autodiff Jacobians of the same rod
    with all six modes, projected on the basis here: ``J_red = P^T J_full P``, ``P = blkdiag(B)``."""
    n = 3
    rest = np.array(
        [
            [0.5, 2.0, -1.0, 1.0, 0.0, 0.0],
            [-0.3, 0.0, 4.0, 1.02, 0.01, 0.0],
            [0.0, -3.0, 0.5, 0.98, 0.0, -0.02],
        ]
    )
    rod = silicone_model(n).rod
    rod = eqx.tree_at(lambda r: r.rest_strain, rod, jnp.asarray(rest))
    kw = {
        "gravity": (0.0, 0.0, -9.81),
        "load_factor": 0.7,
        "tip_wrench": (0.0, 0.001, 0.0, 0.0, 0.05, -0.1),
        "base_rotation": Rotation.from_rotvec([0.0, 1.0, 0.2]).as_matrix(),
    }
    basis = StrainBasis.kirchhoff()
    m_cm, m_full = (
        PCSModel(rod, basis=basis, jacobian="cmtm", **kw),
        PCSModel(rod, **kw),
    )
    B = np.asarray(basis.B)
    P = np.kron(np.eye(n), B)  # q_full = P q
    k = 4 * n
    q, v, a = (RNG.normal(size=k) * s for s in (2.0, 2.0, 20.0))
    got = autodiff_all(m_cm, q, v, a, with_grad=True)
    ref = autodiff_all(m_full, P @ q, P @ v, P @ a)
    tau_r, Jq_r, Jv_r, Ja_r, Jrho_r, K_r, D_r = (np.asarray(x) for x in ref)
    proj = (
        [P.T @ tau_r]
        + [P.T @ J @ P for J in (Jq_r, Jv_r, Ja_r)]
        + [P.T @ Jrho_r]
        + [P.T @ J @ P for J in (K_r, D_r)]
    )
    errs = [rel(x, y) for x, y in zip(got[:7], proj)]
    assert max(errs) < TOL, errs
    assert got[1].shape == (k, k) and np.linalg.norm(Jrho_r) > 0
    assert (
        rel(got[7], proj[1].T @ proj[0]) < TOL
    )  # reverse mode: grad |tau|^2/2 = Jq^T tau
    with pytest.raises(ValueError, match="jacobian must be"):
        PCSModel(rod, jacobian="fd")


def test_inverse_dynamics_gradients_follower_tip_wrench():
    """Core function in full strain coordinates with a body-frame follower tip wrench (one segment,
    n_quad = 3): tau equals ``inverse_dynamics``; the Jacobians match central finite differences
    of ``inverse_dynamics`` (the only reference here that does not need another autodiff compile)."""
    rod = PCSRod.circular(0.3, 1, 0.02, youngs_modulus=1e6, density=1000.0)
    xi = np.array([[1.5, -4.0, 2.5, 1.03, 0.02, -0.01]])
    xid, xidd = RNG.normal(size=(1, 6)), RNG.normal(size=(1, 6)) * 10
    kw = {
        "gravity_body": jnp.asarray([0.0, 3.0, -9.0]),
        "tip_wrench": jnp.asarray([0.1, 0.2, -0.1, 1.0, -2.0, 0.5]),
        "n_quad": 3,
    }
    chi = np.concatenate([xi, xid, xidd], axis=1)[0]
    h = 1e-5 * np.maximum(np.abs(chi), 1.0)

    @jax.jit
    def both(chi):
        def f(c):
            return inverse_dynamics(
                rod, c[None, :6], c[None, 6:12], c[None, 12:], **kw
            )[0]

        fd = jax.vmap(lambda e, hk: (f(chi + e) - f(chi - e)) / (2 * hk), out_axes=1)(
            jnp.diag(h), h
        )
        got = cmtm.inverse_dynamics_gradients(
            rod, chi[None, :6], chi[None, 6:12], chi[None, 12:], **kw
        )
        return got, fd, f(chi)

    got, J_fd, tau_r = both(jnp.asarray(chi))
    J = np.concatenate([np.asarray(x)[0, :, 0] for x in got[1:]], axis=1)  # (6, 18)
    assert rel(got.tau[0], tau_r) < 1e-13
    assert rel(J, J_fd) < 1e-8


# ------------------------------------------ building blocks ------------------------------------------


@jax.jit
def _composition(xis, xid, xidd, ell, eta0, etad0, xi0):
    n = xis.shape[0]
    eta, etad = segment_velocities(xis, ell, xid, xidd, eta0, etad0)
    C, Cd = tangent_C_and_dot(xis, xid, ell)
    r_eta = jnp.einsum("nij,nj->ni", C, xid)
    r_etad = jnp.einsum("nij,nj->ni", Cd, xid) + jnp.einsum("nij,nj->ni", C, xidd)
    A_rel = expA(xis, ell)
    A = [expA(xi0, 1.0)]  # arbitrary base pose
    for i in range(n):
        A.append(A[-1] @ A_rel[i])
    X = jnp.stack([cmtm.cmtm(A[i], eta[i], etad[i]) for i in range(n + 1)])
    X_rel = cmtm.cmtm(A_rel, r_eta, r_etad)
    X_rel_inv = cmtm.cmtm_inv(expA_inv(xis, ell), r_eta, r_etad)
    return X, X_rel, X_rel_inv, cmtm.s_matrix(eta, etad), cmtm.s_matrix_inv(eta, etad)


def test_cmtm_algebra_and_composition():
    """X^-1 X = I, S^-1 S = I, and X_{i+1} = X_i iX_{i+1} (eq. 31) with the absolute twists of
    ``segment_velocities`` and the relative motion (eqs. 45-47)."""
    n = 2
    xis = RNG.normal(size=(n, 6)) * np.array([3, 3, 3, 0.1, 0.1, 0.1]) + [
        0,
        0,
        0,
        1,
        0,
        0,
    ]
    args = (
        xis,
        RNG.normal(size=(n, 6)),
        RNG.normal(size=(n, 6)),
        np.array([0.3, 0.2]),
        RNG.normal(size=6),
        RNG.normal(size=6),
        RNG.normal(size=6),
    )
    X, X_rel, X_rel_inv, S, S_inv = (np.asarray(x) for x in _composition(*args))
    eye = np.eye(18)
    for i in range(n):
        assert rel(X[i] @ X_rel[i], X[i + 1]) < 1e-13
        assert np.allclose(X_rel_inv[i] @ X_rel[i], eye, atol=1e-13)
        assert np.allclose(S_inv[i] @ S[i], eye, atol=1e-13)
    assert not np.allclose(X_rel[0], eye)


@jax.jit
def _calC_and_refs(xi, xid, xidd, x):
    def rel_motion(chi):
        z, zd, zdd = chi[:6], chi[6:12], chi[12:]
        C, Cd = tangent_C_and_dot(z, zd, x)
        return jnp.concatenate([C @ zd, Cd @ zd + C @ zdd])

    rows = jax.jacfwd(rel_motion)(jnp.concatenate([xi, xid, xidd]))
    dA = jax.jacfwd(lambda z: expA(z, x))(xi)  # (6, 6, 6)
    alpha = jax.vmap(lambda M: ad_vee(expA_inv(xi, x) @ M), in_axes=2, out_axes=1)(dA)
    return cmtm.strain_variation_matrix(xi, xid, xidd, x), rows, alpha


@pytest.mark.parametrize("kappa_scale", [4.0, 1e-8, 0.0])
def test_strain_variation_matrix(kappa_scale):
    """calC (eq. 44): alpha rows are vee(iA^-1 d iA) (eq. 51); velocity and acceleration rows are the
    Jacobian of (C xidot, Cdot xidot + C xiddot) with respect to (xi, xidot, xiddot)."""
    xi = np.r_[RNG.normal(size=3) * kappa_scale, 1.0 + RNG.normal(size=3) * 0.05]
    calC, rows, alpha = _calC_and_refs(
        xi, RNG.normal(size=6), RNG.normal(size=6) * 5, 0.27
    )
    assert rel(calC[6:], rows) < 1e-12
    assert rel(calC[:6, :6], alpha) < 1e-12
    assert np.all(np.asarray(calC[:6, 6:]) == 0)
