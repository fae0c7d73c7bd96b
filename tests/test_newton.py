"""``newton_solve``'s implicit derivatives against closed forms, and what its programs contain.

The root of ``x^3 = k s`` (``s`` closed over, ``k`` an argument) is ``x = (k s)^(1/3)``, so every
derivative is known: first order in forward and reverse mode, under ``vmap``, and second order
(the implicit derivative differentiated again). The tangent system must be traced only when
something is differentiated (it was traced into every forward program before: 5.9 s of tracing
instead of 2.2 s for one DER static load step)."""

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from jaxrod.solvers.jacobian import ColouredJacobianSolver
from jaxrod.solvers import BandedJacobianSolver
from jaxrod.solvers.newton import NewtonSolver, newton_solve

SOLVER = NewtonSolver(rtol=0.0, atol=1e-14, max_steps=60, linear_solver=BandedJacobianSolver(0, 0))
N = 4


def root(k, s, solver=SOLVER):
    """``x`` with ``x_i^3 = k_i s``, from a guess of ones."""
    return newton_solve(lambda x, kk: x**3 - kk * s, jnp.ones(N), k, solver).value


K = jnp.asarray([0.5, 1.0, 2.0, 8.0])
S = 1.7


def test_value_and_first_derivatives_match_the_closed_form():
    x = jax.jit(root)(K, S)
    np.testing.assert_allclose(x, np.cbrt(np.asarray(K) * S), rtol=1e-13)
    # d x_i / d k_i = s / (3 x_i^2), through the argument; d x_i / d s = k_i / (3 x_i^2), closed over
    dk = jax.jit(lambda k: jax.jvp(lambda kk: root(kk, S), (k,), (jnp.ones(N),))[1])(K)
    np.testing.assert_allclose(dk, S / (3 * x**2), rtol=1e-12)
    ds = jax.jit(jax.grad(lambda s: jnp.sum(root(K, s))))(S)
    np.testing.assert_allclose(ds, np.sum(np.asarray(K) / (3 * x**2)), rtol=1e-12)
    batched = jax.jit(jax.vmap(jax.grad(lambda k: jnp.sum(root(k * jnp.ones(N), S)))))(K)
    np.testing.assert_allclose(batched, N * S / (3 * np.cbrt(np.asarray(K) * S) ** 2), rtol=1e-12)


def test_second_derivative_matches_the_closed_form():
    # x = (k s)^(1/3): d2x/dk2 = -(2/9) s^2 (k s)^(-5/3)
    d2 = jax.jit(jax.grad(jax.grad(lambda k: root(k * jnp.ones(N), S)[0])))(2.0)
    assert abs(float(d2) / (-(2 / 9) * S**2 * (2.0 * S) ** (-5 / 3)) - 1) < 1e-10


def test_a_linear_solver_with_traced_arrays_differentiates():
    # a coloured Jacobian's pattern arrays arrive as tracers when the solver is a jit argument:
    # the custom derivative rule must take them as arguments, not close over them
    rows = cols = np.arange(N)
    ls = ColouredJacobianSolver.from_pattern(rows, cols, N)

    @jax.jit
    def deriv(k, ls):
        solver = NewtonSolver(rtol=0.0, atol=1e-14, max_steps=60, linear_solver=ls)
        return jax.jvp(lambda kk: root(kk, S, solver), (k,), (jnp.ones(N),))

    x, dx = deriv(K, ls)
    np.testing.assert_allclose(dx, S / (3 * np.asarray(x) ** 2), rtol=1e-12)


def test_a_forward_solve_traces_the_residual_once():
    calls = []

    def residual(x, k):
        calls.append(1)
        return x**3 - k * S

    jax.make_jaxpr(lambda k: newton_solve(residual, jnp.ones(N), k, SOLVER).value)(K)
    # once, to hoist what it closes over: the line search and the Jacobian replay that jaxpr
    # (before: three times; with jax.lax.custom_root a fourth, for the tangent system nobody
    # differentiates)
    assert len(calls) == 1, len(calls)


def _count(jaxpr, name):
    """Occurrences of primitive ``name`` in a closed jaxpr, nested bodies included."""
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.primitive.name == name
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            n += _count(sub, name)
    return n


def test_batch_max_is_one_unbatched_value_under_nested_vmap():
    from jaxrod.solvers.newton import batch_max

    x = jnp.asarray([[0, 2, 1], [1, 0, 0]])
    assert int(batch_max(jnp.asarray(3))) == 3  # no vmap: the value itself
    out = jax.vmap(lambda r: batch_max(r) + 0 * r)(x[0])  # broadcast back to show the value per member
    np.testing.assert_array_equal(out, [2, 2, 2])
    out = jax.jit(jax.vmap(jax.vmap(lambda v: batch_max(v) + 0 * v)))(x)
    np.testing.assert_array_equal(out, [[2, 2, 2], [2, 2, 2]])
    assert bool(jax.vmap(lambda b: batch_max(b) | b)(jnp.asarray([False, True])).all())


def test_batch_uniform_newton_keeps_its_branches_under_vmap_and_agrees_with_single_solves():
    chord = NewtonSolver(rtol=0.0, atol=1e-13, max_steps=60, reuse_jacobian=True)
    old = NewtonSolver(rtol=0.0, atol=1e-13, max_steps=60, reuse_jacobian=True, batch_uniform=False)

    def solve(k, solver):
        return newton_solve(lambda x, kk: x**3 - kk * S, jnp.ones(N), k, solver)

    ks = jnp.stack([K, 2 * K, K + 0.1])
    # the chord / fresh-Jacobian / stop switch and the loop stay branches (cond) under vmap with
    # batch_uniform; without it vmap turns them into selects that evaluate every branch
    new_jaxpr = jax.make_jaxpr(jax.vmap(lambda k: solve(k, chord).value))(ks).jaxpr
    old_jaxpr = jax.make_jaxpr(jax.vmap(lambda k: solve(k, old).value))(ks).jaxpr
    assert _count(new_jaxpr, "cond") >= 1
    assert _count(old_jaxpr, "cond") == 0
    batched = jax.jit(jax.vmap(lambda k: solve(k, chord)))(ks)
    assert bool(batched.converged.all())
    for i in range(ks.shape[0]):
        single = jax.jit(lambda k: solve(k, chord))(ks[i])
        np.testing.assert_allclose(batched.value[i], single.value, rtol=0, atol=1e-12)
        np.testing.assert_allclose(batched.value[i], np.cbrt(np.asarray(ks[i]) * S), rtol=1e-12)
    # a lone member through vmap takes the very same iterations as a plain call
    one = jax.jit(jax.vmap(lambda k: solve(k, chord)))(ks[:1])
    single = jax.jit(lambda k: solve(k, chord))(ks[0])
    assert int(one.iterations[0]) == int(single.iterations) and int(one.jacobians[0]) == int(single.jacobians)
    np.testing.assert_array_equal(one.value[0], single.value)


def test_a_differentiated_solve_takes_the_jacobian_at_the_root_from_its_own_loop():
    # the tangent rule reuses the Newton loop's Jacobian branch at the root instead of linearising
    # the residual again: a reverse-mode program holds the residual's `sin` once more than the
    # forward one (the JVP in the parameters), not twice (that and jax.linearize in x)
    def solve(k, solver=SOLVER):
        return newton_solve(lambda x, kk: x**3 + 0.1 * jnp.sin(x) - kk * S, jnp.ones(N), k, solver)

    fwd = _count(jax.make_jaxpr(lambda k: solve(k).value)(K).jaxpr, "sin")
    rev = _count(jax.make_jaxpr(jax.grad(lambda k: jnp.sum(solve(k).value)))(K).jaxpr, "sin")
    assert rev == fwd + 1, (fwd, rev)
    # the extra Jacobian at the root changes nothing the forward solve returns, under vmap too
    # (batch-uniform chord steps: a member at its root must not push the others to a fresh Jacobian)
    chord = NewtonSolver(rtol=0.0, atol=1e-13, max_steps=60, reuse_jacobian=True)
    ks = jnp.stack([K, 2 * K, K + 0.1, 30 * K])

    def value_and_counts(k):
        r = solve(k, chord)
        return jnp.sum(r.value), (r.value, r.iterations, r.jacobians, r.factorization)

    plain = jax.jit(jax.vmap(value_and_counts))(ks)[1]
    (_, diff), g = jax.jit(jax.vmap(jax.value_and_grad(value_and_counts, has_aux=True)))(ks)
    for a, b in zip(jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(diff)):
        np.testing.assert_array_equal(a, b)
    assert len(set(np.asarray(plain[1]).tolist())) > 1  # the members stop at different passes
    x = np.asarray(diff[0])
    np.testing.assert_allclose(g, S / (3 * x**2 + 0.1 * np.cos(x)), rtol=1e-12)
