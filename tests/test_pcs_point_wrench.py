"""PCSModel point wrenches (jaxrod.models.pcs.loads.PointWrench): closed forms of PCS statics (a
pure moment gives exact constant curvature, at the tip or inside a segment; a small dead force
at a lever beyond the tip gives the PCS Galerkin beam answer), the generalised force of a wrench
at a body-fixed point against the virtual work of that point's motion at a large deformation
(world and body frame, tip and interior), a sampled signal, the tip point, and the input checks."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.pcs import PCSModel, PCSRod, PointWrench
from jaxrod.models.pcs.kinematics import poses_at
from jaxrod.signals import SampledMotion

E, R, L = 1e7, 0.01, 1.0
EI = E * math.pi * R**4 / 4
GA = E / 3 * math.pi * R**2  # nu = 0.5


def _rod(n):
    return PCSRod.circular(L, n, R, youngs_modulus=E, density=1000.0, poisson_ratio=0.5)


@eqx.filter_jit
def _static_residual(model, xi):
    """The residual at rest (v = a = 0) in the configuration of strains ``xi (n, 6)``."""
    q = ((xi - model.rod.rest_strain) @ model.basis.B).reshape(-1)
    z = jnp.zeros_like(q)
    return model.residual(q, z, z, 0.0, None)


def _constant_bend(n, u_y):
    """``(n, 6)`` strains of segments bent about local y by ``u_y (n,)`` [1/m], unstretched."""
    xi = np.tile([0.0, 0.0, 0.0, 1.0, 0.0, 0.0], (n, 1))
    xi[:, 1] = u_y
    return jnp.asarray(xi)


@pytest.mark.parametrize("frame", ["world", "body"])
def test_pure_tip_moment_gives_constant_curvature(frame):
    """A moment M about local y at the tip (0.8 rad of bending): u_y = M / (E J) in every segment
    is an exact equilibrium (the moment stays along y as the rod bends in the x-z plane), and 1%
    more curvature is not."""
    M = 0.8 * EI / L
    model = PCSModel(_rod(3), point_wrenches=PointWrench((0.0, M, 0.0, 0.0, 0.0, 0.0), frame=frame))
    scale = M * L  # the generalised forces of the moment
    assert float(jnp.abs(_static_residual(model, _constant_bend(3, np.full(3, M / EI)))).max()) < 1e-12 * scale
    assert float(jnp.abs(_static_residual(model, _constant_bend(3, np.full(3, 1.01 * M / EI)))).max()) > 1e-3 * scale


@pytest.mark.parametrize("frame", ["world", "body"])
def test_interior_moment_closed_form(frame):
    """A moment M about y at arc length s: inside a one-segment rod its virtual work is M s du_y,
    so u_y = M s / (L E J); on the boundary of two segments the first bends by M / (E J) and the
    second stays straight (both exact for planar bending)."""
    M = 0.5 * EI / L
    s = 0.3 * L
    one = PCSModel(_rod(1), point_wrenches=PointWrench((0.0, M, 0.0, 0.0, 0.0, 0.0), s=s, frame=frame))
    assert float(jnp.abs(_static_residual(one, _constant_bend(1, [M * s / (L * EI)]))).max()) < 1e-12 * M * L
    assert float(jnp.abs(_static_residual(one, _constant_bend(1, [M / EI]))).max()) > 0.1 * M * L
    two = PCSModel(_rod(2), point_wrenches=PointWrench((0.0, M, 0.0, 0.0, 0.0, 0.0), s=L / 2, frame=frame))
    assert float(jnp.abs(_static_residual(two, _constant_bend(2, [M / EI, 0.0]))).max()) < 1e-12 * M * L
    assert float(jnp.abs(_static_residual(two, _constant_bend(2, [M / EI, 0.01 * M / EI]))).max()) > 1e-4 * M * L


def test_small_dead_force_at_a_lever():
    """A small world force P (-z) at a point d beyond the tip on its axis: the tip load P plus the
    moment P d. Linear PCS theory (n constant-curvature segments, shear compliance P L / (G A)):
    tip deflection P L^3/(3 EI) (1 - 1/(4 n^2)) + P L / (G A) + P d L^2 / (2 EI), tip rotation
    P L^2 / (2 EI) + P d L / (EI) (Euler-Bernoulli's, exact for PCS), and the point moves by the
    deflection plus d times the rotation."""
    n = 3
    P, d = 1e-4 * EI / L**2, 0.2 * L
    model = PCSModel(_rod(n), point_wrenches=PointWrench((0.0, 0.0, 0.0, 0.0, 0.0, -P), offset=(d, 0.0, 0.0)),
                     tip_offset=(d, 0.0, 0.0))
    state, res = jaxrod.solve_static(model)
    assert bool(res.converged)
    q = state.q
    Rs, ps = model.segment_end_poses(q)
    w = P * L**3 / (3 * EI) * (1 - 1 / (4 * n**2)) + P * L / GA + P * d * L**2 / (2 * EI)
    theta = P * L**2 / (2 * EI) + P * d * L / EI
    assert -float(ps[-1, 2]) == pytest.approx(w, rel=1e-6)  # geometric nonlinearity ~1e-8
    assert -float(Rs[-1][2, 0]) == pytest.approx(theta, rel=1e-6)
    assert -float(model.tip_point(q)[2]) == pytest.approx(w + d * theta, rel=1e-6)
    # the saved positions end with the tip point (Trajectory.tip)
    obs = np.asarray(model.observe(q, q, None)["positions"])
    assert obs.shape == (n * model.points_per_segment + 2, 3)
    np.testing.assert_array_equal(obs[-1], np.asarray(model.tip_point(q)))


@pytest.mark.parametrize("s", [None, 0.35 * L, 0.5 * L])
@pytest.mark.parametrize("frame", ["world", "body"])
def test_generalised_force_is_the_virtual_work(frame, s):
    """At a large deformation, the residual's change by a wrench [m; f] at the body-fixed point r =
    p(s) + R(s) d is minus its virtual work: -(J_r^T f_w + J_w^T m_w) with the world components
    f_w, m_w (R f, R m for a body-frame wrench) and J_r, J_w the point's translational and angular
    Jacobians (from differentiating the kinematics, not from the inverse-dynamics recursion)."""
    n = 2
    W = jnp.asarray([0.3, -0.2, 0.5, 1.5, -2.0, 0.7])
    d = jnp.asarray([0.05, 0.02, -0.03])
    base = PCSModel(_rod(n), gravity=(0.0, 0.0, -9.81))
    model = PCSModel(_rod(n), gravity=(0.0, 0.0, -9.81), point_wrenches=PointWrench(W, offset=d, s=s, frame=frame))
    q = jnp.asarray(np.random.default_rng(1).normal(scale=0.4, size=6 * n))
    xi = model.strains(q)
    diff = _static_residual(model, xi) - _static_residual(base, xi)
    i, f = (n - 1, 1.0) if s is None else (min(math.ceil(s / (L / n) - 1e-9) - 1, n - 1), s / (L / n) % 1.0 or 1.0)

    def pose(q):
        Rq, pq = poses_at(model.strains(q), model.rod.segment_lengths, jnp.asarray([f]))
        return Rq[i, 0], pq[i, 0]

    def point(q):
        Rq, pq = pose(q)
        return pq + Rq @ d

    R0, _ = pose(q)
    Jr = jax.jit(jax.jacfwd(point))(q)
    dR = jax.jit(jax.jacfwd(lambda q: pose(q)[0]))(q)  # (3, 3, nq)
    Om = jnp.einsum("ijk,lj->kil", dR, R0)  # dR/dq_k R^T: skew, omega_k = its vee
    Jw = jnp.stack([Om[:, 2, 1], Om[:, 0, 2], Om[:, 1, 0]], axis=0)
    m, fo = (W[:3], W[3:]) if frame == "world" else (R0 @ W[:3], R0 @ W[3:])
    np.testing.assert_allclose(np.asarray(diff), -np.asarray(Jr.T @ fo + Jw.T @ m), rtol=1e-9, atol=1e-12)


def test_sampled_wrench_and_load_factor():
    """A SampledMotion wrench is read at the residual's time (linear between samples), and the
    load factor scales it like gravity and the tip wrench."""
    times = jnp.asarray([0.0, 1.0, 2.0])
    values = jnp.asarray([[0.0] * 6, [0.0, 2.0, 0.0, 0.0, 0.0, -1.0], [0.0] * 6])
    sampled = PCSModel(_rod(2), point_wrenches=PointWrench(SampledMotion(times, values), offset=(0.1, 0.0, 0.0)))
    q = jnp.asarray(np.random.default_rng(2).normal(scale=0.3, size=12))
    jitted = eqx.filter_jit(lambda m, t: m.residual(q, jnp.zeros_like(q), jnp.zeros_like(q), t, None))
    res = lambda m, t: jitted(m, jnp.asarray(t))  # noqa: E731
    for t, c in ((0.5, 0.5), (1.25, 0.75)):
        const = PCSModel(_rod(2), point_wrenches=PointWrench(c * values[1], offset=(0.1, 0.0, 0.0)))
        np.testing.assert_allclose(np.asarray(res(sampled, t)), np.asarray(res(const, t)), rtol=1e-12, atol=1e-15)
    bare = PCSModel(_rod(2))
    half = sampled.with_load_factor(0.5)
    r = lambda m: np.asarray(res(m, 1.0) - res(bare, 1.0))  # noqa: E731
    np.testing.assert_allclose(r(half), 0.5 * r(sampled), rtol=1e-10, atol=1e-15)


def test_point_wrench_checks():
    with pytest.raises(ValueError, match="PointWrench.wrench"):
        PointWrench((1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="PointWrench.wrench: the signal must return a \\(6,\\)"):
        PointWrench(SampledMotion([0.0, 1.0], np.zeros((2, 3))))
    with pytest.raises(ValueError, match="PointWrench.offset"):
        PointWrench(np.zeros(6), offset=(0.0, 1.0))
    with pytest.raises(ValueError, match="PointWrench.s"):
        PointWrench(np.zeros(6), s=-0.1)
    with pytest.raises(ValueError, match="PointWrench.frame"):
        PointWrench(np.zeros(6), frame="tip")
    with pytest.raises(ValueError, match=r"point_wrenches\[0\].s = 1.5 m is beyond"):
        PCSModel(_rod(2), point_wrenches=PointWrench(np.zeros(6), s=1.5))
    with pytest.raises(TypeError, match=r"point_wrenches\[0\] must be a PointWrench"):
        PCSModel(_rod(2), point_wrenches=(np.zeros(6),))
    with pytest.raises(ValueError, match="point_wrenches are supported with jacobian='autodiff' only"):
        PCSModel(_rod(2), jacobian="cmtm", point_wrenches=PointWrench(np.zeros(6)))
    with pytest.raises(ValueError, match="tip_offset"):
        PCSModel(_rod(2), tip_offset=(0.0, 1.0))
