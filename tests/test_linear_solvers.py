"""Banded Jacobians by colouring and the block-tridiagonal factor/solve, checked against dense
references (``jax.jacfwd``, ``numpy.linalg.solve``) and finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod  # noqa: F401  (float64)
from jaxrod.solvers import (
    BandedJacobianSolver,
    BlockTridiagonal,
    DenseJacobianSolver,
    block_tridiagonal_factor,
    block_tridiagonal_solve,
    block_tridiagonal_solve_transpose,
)


def banded_matrix(rng, n, lower, upper, spd=False):
    """Random banded ``(n, n)`` matrix: diagonally dominant, or SPD but not dominant."""
    i, j = np.indices((n, n))
    outside = (i - j > lower) | (j - i > upper)
    a = rng.standard_normal((n, n))
    a[outside] = 0.0
    if spd:
        # Symmetric positive definite with a Gershgorin bound well below the off-diagonal mass,
        # so block LU without diagonal dominance is exercised.
        a = a @ a.T
        a[(np.abs(i - j) > max(lower, upper))] = 0.0
        return a + (np.abs(np.linalg.eigvalsh(a)).min() + 0.5) * np.eye(n)
    return a + np.diag(np.abs(a).sum(axis=1) + 1.0)


def stencil_residual(lower, upper, seed=0):
    """Nonlinear residual ``(n,) -> (n,)`` whose row i depends exactly on x[i-lower .. i+upper]."""
    w = jnp.asarray(np.random.default_rng(seed).uniform(0.5, 1.5, lower + upper + 1))

    def f(x):
        n = x.shape[0]
        xp = jnp.pad(x, (lower, upper))
        windows = jnp.stack([xp[d : d + n] for d in range(lower + upper + 1)])  # (c, n)
        return x**3 + jnp.sin(x) * jnp.einsum("d,dn->n", w, jnp.tanh(windows)) + 4.0 * x

    return f


@pytest.mark.parametrize(
    "n, lower, upper, block_size",
    [(47, 10, 10, None), (47, 10, 10, 12), (26, 3, 6, None), (13, 0, 2, None), (7, 10, 10, None)],
)
def test_colouring_jacobian_matches_jacfwd(n, lower, upper, block_size):
    f = stencil_residual(lower, upper)
    x = jnp.asarray(np.random.default_rng(1).standard_normal(n))
    solver = BandedJacobianSolver(lower, upper, block_size)
    v = jnp.asarray(np.random.default_rng(2).standard_normal(n))

    @jax.jit
    def run(x, v):
        op = solver.linearize(f, x)
        return op.to_dense(), solver.diagonal(op), solver.matvec(op, v), jax.jacfwd(f)(x)

    dense, diag, mv, ref = run(x, v)
    # The reference really is banded with exactly this bandwidth, so the check is not vacuous.
    i, j = np.indices((n, n))
    band = (i - j <= lower) & (j - i <= upper)
    assert np.all(np.asarray(ref)[~band] == 0.0)
    assert np.count_nonzero(np.asarray(ref)[band]) == band.sum()
    np.testing.assert_allclose(dense, ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(diag, jnp.diagonal(ref), rtol=1e-13)
    np.testing.assert_allclose(mv, ref @ v, rtol=1e-12, atol=1e-12)


def test_colouring_of_a_linear_function_under_jit():
    # custom_root's tangent_solve hands the solver an already-linear function.
    rng = np.random.default_rng(3)
    a = jnp.asarray(banded_matrix(rng, 31, 4, 2))
    solver = BandedJacobianSolver(4, 2)
    op = jax.jit(lambda x: solver.linearize(lambda y: a @ y, x))(jnp.zeros(31))
    np.testing.assert_allclose(op.to_dense(), a, rtol=0, atol=0)


@pytest.mark.parametrize(
    "n, lower, upper, spd",
    [(43, 10, 10, False), (43, 10, 10, True), (29, 2, 7, False), (29, 7, 2, True),
     (20, 1, 1, False), (17, 0, 4, False), (6, 10, 10, False)],
)
def test_block_tridiagonal_solve_matches_numpy(n, lower, upper, spd):
    rng = np.random.default_rng(n + 100 * lower + upper)
    a = banded_matrix(rng, n, lower, upper, spd)
    b = rng.standard_normal(n)

    @jax.jit
    def run(a, b):
        mat = BlockTridiagonal.from_dense(a, max(lower, upper, 1))
        # The unused corner blocks are documented as ignored: fill them with finite junk.
        junk = jnp.full_like(mat.diag_blocks[0], 3.7)
        lo_junk, up_junk = mat.lower_blocks.at[0].set(junk), mat.upper_blocks.at[-1].set(junk)
        fac = block_tridiagonal_factor(BlockTridiagonal(lo_junk, mat.diag_blocks, up_junk, n))
        x = block_tridiagonal_solve(fac, b)
        xt = block_tridiagonal_solve_transpose(fac, b)
        return x, xt, mat.to_dense(), mat.matvec(b), mat.transpose().to_dense()

    x, xt, dense, mv, dense_t = run(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_array_equal(dense, a)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xt, np.linalg.solve(a.T, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mv, a @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(dense_t, a.T)


def test_banded_solver_under_vmap_and_jit():
    n, lower, upper, batch = 33, 5, 3, 4
    rng = np.random.default_rng(7)
    mats = np.stack([banded_matrix(rng, n, lower, upper) for _ in range(batch)])
    bs = rng.standard_normal((batch, n))
    solver = BandedJacobianSolver(lower, upper)

    @jax.jit
    @jax.vmap
    def solve_both(a, b):
        fac = solver.factor(solver.linearize(lambda y: a @ y, jnp.zeros(n)))
        return solver.solve(fac, b), solver.solve_transpose(fac, b)

    x, xt = solve_both(jnp.asarray(mats), jnp.asarray(bs))
    for k in range(batch):
        np.testing.assert_allclose(x[k], np.linalg.solve(mats[k], bs[k]), rtol=1e-10)
        np.testing.assert_allclose(xt[k], np.linalg.solve(mats[k].T, bs[k]), rtol=1e-10)

    # One factorisation, a batch of right-hand sides.
    fac = jax.jit(lambda a: solver.factor(solver.linearize(lambda y: a @ y, jnp.zeros(n))))(
        jnp.asarray(mats[0])
    )
    xs = jax.jit(jax.vmap(solver.solve, in_axes=(None, 0)))(fac, jnp.asarray(bs))
    np.testing.assert_allclose(xs, np.linalg.solve(mats[0], bs.T).T, rtol=1e-10)


@pytest.mark.parametrize("solver", [BandedJacobianSolver(4, 4), DenseJacobianSolver()])
def test_derivatives_of_solve_wrt_rhs(solver):
    n = 26
    rng = np.random.default_rng(11)
    a = banded_matrix(rng, n, 4, 4)
    b = jnp.asarray(rng.standard_normal(n))
    w = rng.standard_normal(n)
    d = jnp.asarray(rng.standard_normal(n))
    eps = 1e-6

    @jax.jit
    def run(a, b, d):
        fac = solver.factor(solver.linearize(lambda y: a @ y, jnp.zeros(n)))

        def loss(b):
            return jnp.sum(jnp.sin(solver.solve(fac, b)) ** 2)

        g = jax.grad(lambda b: jnp.dot(w, solver.solve(fac, b)))(b)
        gt = jax.grad(lambda b: jnp.dot(w, solver.solve_transpose(fac, b)))(b)
        fd = (loss(b + eps * d) - loss(b - eps * d)) / (2 * eps)
        return g, gt, fd, jnp.dot(jax.grad(loss)(b), d), jax.jvp(loss, (b,), (d,))[1]

    g, gt, fd, rev, fwd = run(jnp.asarray(a), b, d)
    # Linear functional: the gradient is exactly J^{-T} w (and J^{-1} w for the transpose solve).
    np.testing.assert_allclose(g, np.linalg.solve(a.T, w), rtol=1e-10)
    np.testing.assert_allclose(gt, np.linalg.solve(a, w), rtol=1e-10)
    # Nonlinear loss: central finite differences along a random direction.
    np.testing.assert_allclose(rev, fd, rtol=1e-6)
    np.testing.assert_allclose(fwd, fd, rtol=1e-6)


def test_gradient_wrt_matrix_blocks():
    n, lower, upper = 23, 3, 3
    rng = np.random.default_rng(5)
    a = banded_matrix(rng, n, lower, upper)
    b, w = rng.standard_normal(n), rng.standard_normal(n)
    mat = BlockTridiagonal.from_dense(jnp.asarray(a), 3)

    grad = jax.jit(
        jax.grad(lambda m: jnp.dot(w, block_tridiagonal_solve(block_tridiagonal_factor(m), b)))
    )(mat)
    x, lam = np.linalg.solve(a, b), np.linalg.solve(a.T, w)
    i, j = np.indices((n, n))
    pattern = np.abs(i // 3 - j // 3) <= 1  # every entry the block-tridiagonal layout stores
    expected = np.where(pattern, -np.outer(lam, x), 0.0)
    np.testing.assert_allclose(grad.to_dense(), expected, rtol=1e-9, atol=1e-12)


def test_end_to_end_derivative_matches_dense():
    # d/dp of J(x; p)^{-1} b through linearize -> factor -> solve: second derivatives of f flow
    # through the colouring JVPs and the custom_linear_solve matvec.
    n, lower, upper = 24, 2, 2
    f0 = stencil_residual(lower, upper)
    x = jnp.asarray(np.random.default_rng(9).standard_normal(n))
    b = jnp.asarray(np.random.default_rng(10).standard_normal(n))

    def objective(solver, p):
        fac = solver.factor(solver.linearize(lambda y: f0(y) + p * y**2, x))
        return jnp.sum(solver.solve(fac, b) ** 2)

    def derivatives(solver):
        obj = lambda p: objective(solver, p)  # noqa: E731
        return jax.grad(obj)(0.3), jax.jvp(obj, (0.3,), (1.0,))[1]

    banded = jax.jit(lambda: derivatives(BandedJacobianSolver(lower, upper)))()
    dense = jax.jit(lambda: derivatives(DenseJacobianSolver()))()
    np.testing.assert_allclose(banded, dense, rtol=1e-10)
    np.testing.assert_allclose(banded[0], banded[1], rtol=1e-10)  # reverse == forward mode
    assert abs(float(banded[0])) > 1e-3  # the derivative is not trivially zero


def test_dense_solver_agrees_with_banded():
    n, lower, upper = 35, 10, 10
    f = stencil_residual(lower, upper, seed=4)
    x = jnp.asarray(np.random.default_rng(12).standard_normal(n))
    b = jnp.asarray(np.random.default_rng(13).standard_normal(n))

    @jax.jit
    def run(x, b):
        out = []
        for solver in (DenseJacobianSolver(), BandedJacobianSolver(lower, upper)):
            op = solver.linearize(f, x)
            fac = solver.factor(op)
            out.append(
                dict(
                    x=solver.solve(fac, b),
                    xt=solver.solve_transpose(fac, b),
                    diag=solver.diagonal(op),
                    mv=solver.matvec(op, b),
                )
            )
        return out, jax.jacfwd(f)(x)

    (dense, banded), j = run(x, b)
    j = np.asarray(j)
    np.testing.assert_allclose(dense["x"], np.linalg.solve(j, b), rtol=1e-10)
    np.testing.assert_allclose(dense["xt"], np.linalg.solve(j.T, b), rtol=1e-10)
    np.testing.assert_allclose(dense["diag"], np.diagonal(j), rtol=1e-14)
    np.testing.assert_allclose(dense["mv"], j @ b, rtol=1e-12)
    for key, rtol in [("x", 1e-10), ("xt", 1e-10), ("diag", 1e-14), ("mv", 1e-12)]:
        np.testing.assert_allclose(banded[key], dense[key], rtol=rtol, err_msg=key)


def test_block_size_smaller_than_bandwidth_is_rejected():
    with pytest.raises(ValueError):
        BandedJacobianSolver(10, 4, block_size=8)
