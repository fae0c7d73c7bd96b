"""Implicit-differentiation solves by iterative refinement (``NewtonSolver.tangent_refinement``):
the tangent/adjoint systems at a Newton root are solved with the forward solve's (stale)
factorisation as preconditioner and exact products of the residual linearised at the root. The
gradients must equal those of the fresh factorisation at the root (``tangent_refinement=0``, the
previous path) to round-off, and central finite differences; a preconditioner that does not
converge must fall back to the fresh factorisation."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.solvers.jacobian import DenseJacobianSolver
from jaxrod.solvers.newton import TANGENT_RTOL, _refined_solve, _tangent_solve


def _rel(a, b):
    a, b = np.ravel(np.asarray(a)), np.ravel(np.asarray(b))
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


# ---- the refinement itself (dense 12 x 12, cheap) -------------------------------------------------
RNG = np.random.default_rng(3)
A = jnp.asarray(np.eye(12) * 4.0 + RNG.standard_normal((12, 12)))
B = jnp.asarray(RNG.standard_normal(12))


def _nan_solve(b):
    """A fallback that poisons the result: a finite answer proves it was not taken."""
    return b * jnp.nan


def test_refinement_converges_without_the_fallback_and_matches_the_direct_solve():
    ls = DenseJacobianSolver()
    near = ls.factor(A + 0.05 * jnp.asarray(RNG.standard_normal((12, 12))))  # a chord-like stale matrix
    x = _refined_solve(lambda v: A @ v, lambda r: ls.solve(near, r), _nan_solve, B, 20)
    xt = _refined_solve(lambda v: A.T @ v, lambda r: ls.solve_transpose(near, r), _nan_solve, B, 20)
    assert np.all(np.isfinite(np.asarray(x))) and np.all(np.isfinite(np.asarray(xt)))
    assert _rel(x, np.linalg.solve(A, B)) < 100 * TANGENT_RTOL
    assert _rel(xt, np.linalg.solve(A.T, B)) < 100 * TANGENT_RTOL


@pytest.mark.parametrize("which", ["diverging", "too_slow"])
def test_refinement_falls_back_to_the_fresh_solve(which):
    ls = DenseJacobianSolver()
    # diverging: a preconditioner of the wrong sign; too slow: contraction ~0.9 needs ~250 steps
    pre = ls.factor(-A) if which == "diverging" else ls.factor(10.0 * A)
    marker = jnp.full(12, 7.0)
    x = _refined_solve(lambda v: A @ v, lambda r: ls.solve(pre, r), lambda b: marker, B, 20)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(marker))


def test_tangent_solve_forward_and_reverse_equal_the_fresh_factorisation():
    """Through ``custom_linear_solve``: d/dc of ``w . x(c)`` with ``A x = c`` (reverse mode uses the
    transposed refinement), against the fresh-factorisation path."""
    ls = DenseJacobianSolver()
    near = ls.factor(A + 0.05 * jnp.asarray(RNG.standard_normal((12, 12))))
    w = jnp.asarray(RNG.standard_normal(12))

    def out(c, refine):
        return w @ _tangent_solve(ls, lambda v: A @ v, c, refine)

    g_new = jax.grad(out)(B, (near, True, 20))
    g_old = jax.grad(out)(B, None)
    assert _rel(g_new, g_old) < 100 * TANGENT_RTOL
    assert _rel(g_new, np.linalg.solve(A.T, w)) < 100 * TANGENT_RTOL
    t_new = jax.jvp(lambda c: _tangent_solve(ls, lambda v: A @ v, c, (near, True, 20)), (B,), (w,))[1]
    assert _rel(t_new, np.linalg.solve(A, w)) < 100 * TANGENT_RTOL


def test_tangent_refinement_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match="tangent_refinement"):
        jaxrod.NewtonSolver(tangent_refinement=-1)


# ---- through newton_solve (banded, chord factorisation carried between solves; cheap) ------------------
NC = 24


def _chain_residual(x, p):
    """A nonlinear chain (tridiagonal Jacobian): springs with a cubic term, loads ``p``."""
    xl = jnp.concatenate([jnp.zeros(1), x[:-1]])
    xr = jnp.concatenate([x[1:], jnp.zeros(1)])
    return 2.0 * x - xl - xr + 0.5 * x**3 + 0.1 * jnp.sin(xl * x) - p


@pytest.mark.parametrize("ls", [DenseJacobianSolver(), jaxrod.BandedJacobianSolver(1, 1)], ids=["dense", "banded"])
def test_newton_gradients_through_carried_factorisations_equal_the_fresh_path(ls):
    """Three solves in a scan, each starting from the previous solution and factorisation (chord
    steps, as time steps do): d/dp of a weighted sum of the solutions equals the fresh-factorisation
    path and central differences."""
    w = jnp.asarray(np.random.default_rng(5).standard_normal(NC))

    def loss(p, k):
        solver = jaxrod.NewtonSolver(rtol=1e-13, atol=1e-15, reuse_jacobian=True, linear_solver=ls,
                                     tangent_refinement=k)
        x0 = jnp.zeros(NC)

        def step(c, s):
            x, fac, have = c
            res = jaxrod.newton_solve(lambda x, a: _chain_residual(x, a), x, s * p, solver, factorization=fac,
                                      have_factorization=have)
            return (res.value, res.factorization, have | (res.jacobians > 0)), w @ res.value

        fac0 = jaxrod.newton_solve(lambda x, a: _chain_residual(x, a), x0, p, solver).factorization
        _, outs = jax.lax.scan(step, (x0, fac0, jnp.asarray(False)), jnp.asarray([1.0, 1.05, 1.1]))
        return jnp.sum(outs**2)

    p = jnp.asarray(np.linspace(0.5, 1.5, NC))
    g_new = jax.jit(jax.grad(loss), static_argnums=1)(p, 20)
    g_old = jax.jit(jax.grad(loss), static_argnums=1)(p, 0)
    assert np.max(np.abs(np.asarray(g_old))) > 1e-3
    assert _rel(g_new, g_old) < 1e-10
    f = jax.jit(loss, static_argnums=1)
    for i in (0, NC // 2, NC - 1):
        h = 1e-6
        fd = (f(p.at[i].add(h), 20) - f(p.at[i].add(-h), 20)) / (2 * h)
        assert float(g_new[i]) == pytest.approx(float(fd), rel=1e-6, abs=1e-9 * np.max(np.abs(np.asarray(g_new))))
    # forward mode (the tangent solve itself, not its transpose)
    t = jnp.asarray(np.random.default_rng(6).standard_normal(NC))
    d_new = jax.jit(lambda p: jax.jvp(lambda q: loss(q, 20), (p,), (t,))[1])(p)
    assert float(d_new) == pytest.approx(float(g_old @ t), rel=1e-10)

# Through whole simulations (DER, PCS, Cosserat) the refined gradients equal the default path's to
# 1e-8 (benchmarks/gradients.py, the 'gradient gap' column); those runs cost ~1 min CPU each, mostly
# compilation, for an option that is off by default, so they live in the benchmark, not here.
