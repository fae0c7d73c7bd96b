"""The generic implicit machinery (schemes + Newton + simulate) on a model with a closed-form
solution: a nonlinear-free harmonic oscillator, and a Duffing oscillator for Newton.

Checks convergence orders (BE first, midpoint/BDF2/trapezoid/Newmark second), energy behaviour
(midpoint and trapezoid conserve, BE damps), prescribed DOFs, and that non-convergence is
reported with the step index."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrod.integrate import AbstractImplicitModel, State
from jaxrod.integrate import ConvergenceError, simulate
from jaxrod.solvers.jacobian import DenseJacobianSolver
from jaxrod.solvers.newton import NewtonSolver
from jaxrod.integrate.schemes import BDF2, BackwardEuler, BDFAlpha, ImplicitMidpoint, NewmarkBeta, Trapezoid


class Oscillator(AbstractImplicitModel):
    """Two uncoupled oscillators m x'' + k x + c x^3 = 0; the second DOF can be prescribed."""

    k: jax.Array
    c: jax.Array
    x0: jax.Array
    v0: jax.Array
    fix_second: bool = eqx.field(static=True, default=False)

    def residual(self, q, v, a, t, aux):
        return a + self.k * q + self.c * q**3

    def fixed_mask(self):
        return jnp.array([False, self.fix_second])

    def prescribed(self, t):
        return jnp.array([0.0, 0.1 * jnp.sin(t)])

    def init_aux(self, q):
        return jnp.zeros(())

    def update_aux(self, q, aux):
        return aux

    def default_linear_solver(self):
        return DenseJacobianSolver()

    def initial_state(self):
        return State(self.x0, self.v0, jnp.zeros(()))

    def observe(self, q, v, aux):
        return {"positions": jnp.stack([q, v, jnp.zeros_like(q)], axis=-1)}


def _osc(c=0.0, fix=False):
    return Oscillator(jnp.array([4.0, 4.0]), jnp.asarray(c), jnp.array([1.0, 0.0]), jnp.array([0.0, 0.0]), fix)


def _final_error(scheme, dt, T=1.0):
    traj = simulate(_osc(), dt=dt, duration=T, scheme=scheme)
    exact = np.cos(2.0 * T)
    return abs(float(traj.q[-1, 0]) - exact)


@pytest.mark.parametrize(
    "scheme, order",
    [(BackwardEuler(), 1), (ImplicitMidpoint(), 2), (BDF2(), 2), (Trapezoid(), 2), (NewmarkBeta(), 2), (BDFAlpha(-0.2), 2)],
)
def test_convergence_order(scheme, order):
    e1 = _final_error(scheme, 0.01)
    e2 = _final_error(scheme, 0.005)
    observed = np.log2(e1 / e2)
    assert abs(observed - order) < 0.25, observed


def test_energy_conservation_and_damping():
    def energy_ratio(scheme):
        traj = simulate(_osc(), dt=0.1, duration=20.0, scheme=scheme)
        x, v = np.asarray(traj.q[:, 0]), np.asarray(traj.v[:, 0])
        e = 0.5 * v**2 + 2.0 * x**2
        return e[-1] / e[0]

    assert abs(energy_ratio(ImplicitMidpoint()) - 1) < 1e-10
    assert abs(energy_ratio(NewmarkBeta()) - 1) < 1e-10
    assert energy_ratio(BackwardEuler()) < 0.5


def test_prescribed_dof_follows_motion_and_newton_on_nonlinear():
    traj = simulate(_osc(c=50.0, fix=True), dt=0.01, duration=1.0, scheme=ImplicitMidpoint())
    t = np.asarray(traj.times)
    np.testing.assert_allclose(np.asarray(traj.q[:, 1])[1:], 0.1 * np.sin(t[1:]), atol=1e-14)
    assert int(traj.stats.iterations.max()) >= 2  # the cubic term needs real Newton iterations
    # the midpoint rule is symplectic, not energy-exact for a quartic potential: the energy error
    # oscillates with an O(dt^2) amplitude instead of drifting
    def max_energy_error(dt):
        tr = simulate(_osc(c=50.0, fix=True), dt=dt, duration=1.0, scheme=ImplicitMidpoint())
        x, v = np.asarray(tr.q[:, 0]), np.asarray(tr.v[:, 0])
        e = 0.5 * v**2 + 2.0 * x**2 + 12.5 * x**4
        return np.max(np.abs(e / e[0] - 1))

    ratio = max_energy_error(0.01) / max_energy_error(0.005)
    assert 3.5 < ratio < 4.5, ratio


def test_nonconvergence_is_reported_with_step():
    solver = NewtonSolver(linear_solver=None, max_steps=1, rtol=1e-14, atol=1e-300)
    with pytest.raises(ConvergenceError, match=r"step 0 \(t = 0.5"):
        simulate(_osc(c=50.0), dt=0.5, n_steps=3, solver=solver)
    traj = simulate(_osc(c=50.0), dt=0.5, n_steps=3, solver=solver, throw=False)
    assert traj.stats.first_failure() == 0


def test_bad_time_arguments():
    with pytest.raises(ValueError, match="dt must be"):
        simulate(_osc(), dt=0.0, n_steps=3)
    with pytest.raises(ValueError, match="dt must be"):
        simulate(_osc(), dt=float("nan"), n_steps=3)
    with pytest.raises(ValueError, match="save_every"):
        simulate(_osc(), dt=0.1, n_steps=3, save_every=2)
    with pytest.raises(ValueError, match="alpha"):
        BDFAlpha(0.3)
