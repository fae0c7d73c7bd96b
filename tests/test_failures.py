"""Failures that cannot hide (issue 12, item 6; fallback of item 5).

A first-order test model whose residual becomes NaN after a chosen time ``t_fail`` fails at a
step known in advance, so every check below has an exact expected value:

* ``throw=False``: the run stops advancing at the failed step, frames before it are finite and
  equal to an independent run, frames after it are NaN and ``valid`` is False; the steps after the
  failure do no Newton work (early stop);
* ``throw=True``: :class:`jaxrod.ConvergenceError` with the step, time and residual, also under
  ``jax.jit`` (through :func:`jaxrod.convergence_errors`) and under ``jax.vmap`` (failed members);
* the backward-Euler fallback recovers a step whose implicit-midpoint equation has no solution.

Compiles a handful of 1-DOF programs (dense 1x1 Jacobians): a few seconds each.
"""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.integrate import AbstractImplicitModel, State
from jaxrod.solvers.jacobian import DenseJacobianSolver


class Relaxation(AbstractImplicitModel):
    """``m a + c v + g(q) = 0`` with ``g(q) = k2 q^2 + k1 q + k0``; for ``t > t_fail`` the residual
    is ``1 + q^2``, which has no root (a model that breaks at a known time)."""

    t_fail: jax.Array
    m: float = 1.0
    c: float = 1.0
    k: tuple = (0.0, 1.0, 0.0)  # (k2, k1, k0): default a linear spring
    q0: float = 1.0

    def residual(self, q, v, a, t, aux):
        k2, k1, k0 = self.k
        r = self.m * a + self.c * v + k2 * q**2 + k1 * q + k0
        return jnp.where(t > self.t_fail, 1.0 + q**2, r)

    def fixed_mask(self):
        return jnp.zeros(1, bool)

    def prescribed(self, t):
        return jnp.zeros(1)

    def init_aux(self, q):
        return None

    def update_aux(self, q, aux):
        return aux

    def default_linear_solver(self):
        return DenseJacobianSolver()

    def initial_state(self):
        return State(jnp.array([self.q0]), jnp.zeros(1), None)

    def observe(self, q, v, aux):
        return {"positions": jnp.stack([q, v, jnp.zeros_like(q)], axis=-1)}


DT, N = 0.1, 12
SOLVER = jaxrod.NewtonSolver(rtol=1e-12, atol=1e-12, max_steps=20)
# backward Euler: the stage time is the step's end, so step k (0-based) evaluates t = (k + 1) dt;
# t_fail = 0.45 breaks step 4 (t = 0.5) and nothing before it
T_FAIL, K_FAIL = 0.45, 4


def run(t_fail, **kw):
    kw = {"dt": DT, "n_steps": N, "scheme": jaxrod.BackwardEuler(), "solver": SOLVER, "fallback": False, **kw}
    return jaxrod.simulate(Relaxation(jnp.asarray(t_fail)), **kw)


@pytest.fixture(scope="module")
def failed_run():
    return run(T_FAIL, throw=False)


def test_throw_false_stops_at_the_failed_step_and_masks_every_later_frame(failed_run):
    tr = failed_run
    ref = run(1e9)  # never fails: same program, another t_fail (a traced leaf: no recompile)
    conv = np.asarray(tr.stats.converged)
    assert conv[:K_FAIL].all() and not conv[K_FAIL:].any()
    assert tr.stats.first_failure() == K_FAIL
    valid = np.asarray(tr.valid)
    # frame j holds the state after step j - 1: frames 0..K_FAIL come from converged steps
    assert valid[: K_FAIL + 1].all() and not valid[K_FAIL + 1 :].any()
    q = np.asarray(tr.q)[:, 0]
    assert np.all(np.isfinite(q[: K_FAIL + 1])) and np.all(np.isnan(q[K_FAIL + 1 :]))
    assert np.all(np.isnan(np.asarray(tr.positions)[K_FAIL + 1 :]))
    np.testing.assert_allclose(q[: K_FAIL + 1], np.asarray(ref.q)[: K_FAIL + 1, 0], rtol=0, atol=1e-14)
    # backward Euler on c v + k q = 0 (m = 1): closed-form recursion, nothing like garbage
    np.testing.assert_allclose(float(tr.final.q[0]), float(ref.q[K_FAIL, 0]), rtol=0, atol=1e-14)
    # the times stay the nominal grid
    np.testing.assert_allclose(np.asarray(tr.times), DT * np.arange(N + 1), atol=1e-12)
    # early stop: the steps after the failure do no Newton work
    its, rn = np.asarray(tr.stats.iterations), np.asarray(tr.stats.residual_norm)
    assert its[K_FAIL] > 0 and np.all(its[K_FAIL + 1 :] == 0)
    assert rn[K_FAIL] >= 1.0 and np.all(np.isnan(rn[K_FAIL + 1 :]))


def test_progress_run_stops_launching_chunks_after_a_failure(capsys):
    tr = run(T_FAIL, throw=False, progress=4)
    err = capsys.readouterr().err
    assert f"FAILED at step {K_FAIL}" in err
    steps = [ln for ln in err.splitlines() if ln.lstrip().startswith("step ")]  # not the compile lines
    assert len(steps) == 2  # chunks of 3 steps: the second one fails, no more run
    assert np.asarray(tr.valid).tolist() == [True] * (K_FAIL + 1) + [False] * (N - K_FAIL)


def test_throw_true_raises_convergence_error_with_step_time_residual():
    with pytest.raises(jaxrod.ConvergenceError) as info:
        run(T_FAIL)
    e = info.value
    assert e.step == K_FAIL
    assert e.time == pytest.approx((K_FAIL + 1) * DT)
    assert math.isfinite(e.residual) and e.residual >= 1.0  # |1 + q^2| >= 1 there
    assert e.members is None
    assert f"step {K_FAIL} (t = 0.5 s)" in str(e)


def test_under_jit_the_error_is_a_convergence_error_with_its_values():
    @jax.jit
    def final(t_fail):
        return run(t_fail).q[-1, 0]

    assert np.isfinite(float(final(1e9)))
    with pytest.raises(jaxrod.ConvergenceError) as info:
        with jaxrod.convergence_errors():
            final(T_FAIL)
    assert info.value.step == K_FAIL and info.value.time == pytest.approx(0.5)
    with pytest.raises(jaxrod.ConvergenceError) as host:  # the same failure outside jit
        run(T_FAIL)
    assert info.value.residual == pytest.approx(host.value.residual, rel=1e-12)
    # without the context manager JAX's own error (JaxRuntimeError, or ValueError from the cached
    # dispatch path) carries the same message
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match=f"ConvergenceError: Newton did not converge at step {K_FAIL}"):
        final(T_FAIL)


@pytest.fixture
def traced_errors_nan():
    """``jaxrod.config.set_traced_errors("nan")`` while a test runs; reset afterwards."""
    jaxrod.config.set_traced_errors("nan")
    yield
    jaxrod.config.set_traced_errors(None)


def test_traced_errors_nan_runs_without_a_host_callback_and_a_failed_run_is_all_nan(traced_errors_nan):
    """``JAXROD_TRACED_ERRORS=nan``: no host callback in the program (so JAX can cache it), a good
    run unchanged, a failed one NaN in every saved array (not only after the failed step); under
    ``vmap`` only the failed members."""

    def final(t_fail):
        tr = run(t_fail)
        return tr.q, tr.positions

    jaxpr = str(jax.make_jaxpr(final)(1e9))
    assert "callback" not in jaxpr
    good, bad = jax.jit(final)(1e9), jax.jit(final)(T_FAIL)
    ref = run(1e9)  # the host path: same values
    np.testing.assert_array_equal(np.asarray(good[0]), np.asarray(ref.q))
    assert np.all(np.isnan(np.asarray(bad[0]))) and np.all(np.isnan(np.asarray(bad[1])))
    q = np.asarray(jax.vmap(lambda tf: final(tf)[0])(jnp.array([1e9, T_FAIL, 1e9, 0.25])))
    assert np.all(np.isfinite(q[[0, 2]])) and np.all(np.isnan(q[[1, 3]]))
    # the host path still raises with its values whatever the mode
    with pytest.raises(jaxrod.ConvergenceError):
        run(T_FAIL)


def test_traced_errors_nan_poisons_an_unconverged_static_solve(traced_errors_nan):
    """A static solve under ``jit`` that does not converge: NaN instead of ``eqx.error_if``."""
    model = Relaxation(jnp.asarray(-1.0))  # residual 1 + q^2 at t = 0 > t_fail: no root

    def static_q(t_fail):
        st, res = jaxrod.solve_static(Relaxation(t_fail), solver=SOLVER)
        return st.q, res.converged

    assert "callback" not in str(jax.make_jaxpr(static_q)(jnp.asarray(-1.0)))
    q_bad, conv_bad = jax.jit(static_q)(jnp.asarray(-1.0))
    q_ok, conv_ok = jax.jit(static_q)(jnp.asarray(1e9))
    assert not bool(conv_bad) and np.all(np.isnan(np.asarray(q_bad)))
    assert bool(conv_ok) and np.allclose(np.asarray(q_ok), 0.0, atol=1e-10)  # k1 q = 0
    with pytest.raises(jaxrod.ConvergenceError):  # eager: raised, mode or not
        jaxrod.solve_static(model, solver=SOLVER)


def test_traced_errors_rejects_other_modes(monkeypatch):
    with pytest.raises(ValueError, match=r"set_traced_errors: mode = 'quiet': allowed are 'raise' .* or 'nan'"):
        jaxrod.config.set_traced_errors("quiet")
    monkeypatch.setenv("JAXROD_TRACED_ERRORS", "ignore")
    with pytest.raises(ValueError, match=r"JAXROD_TRACED_ERRORS = 'ignore': allowed are 'raise'"):
        jaxrod.config.traced_errors()
    monkeypatch.setenv("JAXROD_TRACED_ERRORS", " NaN ")
    assert jaxrod.config.traced_errors() == "nan"
    monkeypatch.delenv("JAXROD_TRACED_ERRORS")
    assert jaxrod.config.traced_errors() == "raise"


def test_under_vmap_the_error_names_the_failed_members():
    t_fail = jnp.array([1e9, T_FAIL, 1e9, 0.25])  # members 1 and 3 fail, at steps 4 and 2

    def final(tf):
        return run(tf).q[-1, 0]

    with pytest.raises(jaxrod.ConvergenceError) as info:
        with jaxrod.convergence_errors():
            jax.vmap(final)(t_fail)
    e = info.value
    assert e.members == (1, 3)
    assert [(m, k) for m, k, _, _ in e.failures] == [(1, K_FAIL), (3, 2)]
    assert "2 of 4 batch members failed (members 1, 3)" in str(e)
    # throw=False: per-member masks and stats
    tr = jax.vmap(lambda tf: run(tf, throw=False))(t_fail)
    assert tr.stats.failed_members() == [1, 3]
    valid = np.asarray(tr.valid)
    assert valid[0].all() and valid[2].all() and valid[1].sum() == K_FAIL + 1 and valid[3].sum() == 3


def test_gradient_through_a_run_with_the_failure_machinery_matches_finite_differences():
    """The skip/mask machinery (lax.cond, jnp.where) must not disturb reverse-mode gradients:
    d q_N / d c of backward Euler on m a + c v + k q = 0 against central differences."""

    def final(c):
        return jaxrod.simulate(Relaxation(jnp.asarray(1e9), c=c), dt=DT, n_steps=N, scheme=jaxrod.BackwardEuler(),
                               solver=SOLVER).q[-1, 0]

    g = jax.grad(final)(1.0)
    f = jax.jit(final)
    h = 1e-6
    fd = (f(1.0 + h) - f(1.0 - h)) / (2 * h)
    assert float(g) == pytest.approx(float(fd), rel=1e-6)


def test_fallback_recovers_a_step_whose_midpoint_equation_has_no_solution():
    """First-order system (m = 0, c = 1) with g(q) = q^2 - 4 q + 3.1, q0 = 1, dt = 1: the midpoint
    equation 2 (x - 1) + g(x) = 0 for x = (q0 + q1)/2 has discriminant 4 - 4.4 < 0 (no solution);
    the backward-Euler one, q1 - 1 + g(q1) = q1^2 - 3 q1 + 2.1 = 0, has the root (3 - sqrt(0.6))/2."""
    model = Relaxation(jnp.asarray(1e9), m=0.0, c=1.0, k=(1.0, -4.0, 3.1), q0=1.0)
    kw = dict(dt=1.0, n_steps=1, scheme=jaxrod.ImplicitMidpoint(), solver=SOLVER)
    with pytest.raises(jaxrod.ConvergenceError, match="step 0"):
        jaxrod.simulate(model, fallback=False, **kw)
    with pytest.warns(jaxrod.FallbackWarning, match="1 of 1 steps .* ImplicitMidpoint .* backward-Euler"):
        tr = jaxrod.simulate(model, **kw)
    assert int(tr.stats.fallbacks[0]) == 1 and bool(tr.stats.converged[0])
    assert float(tr.q[-1, 0]) == pytest.approx((3 - math.sqrt(0.6)) / 2, rel=1e-10)
    # a step that converges needs no fallback and pays nothing for it
    with warnings.catch_warnings():
        warnings.simplefilter("error", jaxrod.FallbackWarning)
        ok = jaxrod.simulate(Relaxation(jnp.asarray(1e9)), dt=DT, n_steps=3, scheme=jaxrod.ImplicitMidpoint(),
                             solver=SOLVER)
    assert np.all(np.asarray(ok.stats.fallbacks) == 0)
