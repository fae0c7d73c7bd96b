"""Long-run energy of the time schemes on a geometrically nonlinear rod, and backward Euler's
numerical damping against its analytical factor.

The rod (issue 12): DER cantilever, 11 nodes, L = 1 m, radius 0.02 m, E = 1e5 Pa, rho = 500 kg/m^3,
no gravity, clamped edge 0, released from straight with the first Euler-Bernoulli mode's velocity
shape, 0.05 m/s at the tip (tip amplitude ~0.1 m: bending couples to the stiff axial modes, whose
omega dt is ~100 at the step used). ``T`` is the Euler-Bernoulli first period 12.636 s, ``dt = T/20``.

* :class:`AverageVectorField` (the default) keeps ``K + E`` within 1e-4 over 60 periods
  (measured 1.1e-5), also when the rod whirls and twists so that its reference frames are
  transported every step (6.4e-6); the old default, implicit midpoint, gains 14 % in 10 periods and blows up
  (x34 after 15): asserted too, since the schemes' docstrings state that limit.
* With only quartic potential energy, 2-point AVF conserves energy to round-off at any step, while
  midpoint's error is O(dt^2) (Duffing oscillator).
* Backward Euler on a linear oscillator: ``|(x, x'/omega)|`` shrinks by ``(1 + (omega dt)^2)^(-n/2)``
  over ``n`` steps (the rod version, with the measured frequency, is in ``test_der_dynamics.py``;
  on this rod's first bending mode, projected with the Hessian's eigenvector, it held to 1e-4).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.integrate import AbstractImplicitModel, State
from jaxrod.models.der.frames import update_frames
from jaxrod.solvers.jacobian import DenseJacobianSolver

N_NODES = 11
TIGHT = jaxrod.NewtonSolver(linear_solver=None, rtol=1e-13, atol=1e-13)
T_EB = 2 * np.pi / (1.8751040687119611**2 * np.sqrt(1e5 * 0.02**2 / 4 / 500.0))  # 12.636 s


def _cantilever(tip_speed):
    rod = jaxrod.DERRod.straight(N_NODES, 1.0, youngs_modulus=1e5, density=500.0, radius=0.02)
    return jaxrod.DERModel(rod, clamped_edges=(0,), v0=jaxrod.first_mode_velocity(rod, tip_speed))


@eqx.filter_jit
def _energies(model, q, v):
    """``K + E`` at every saved frame, with the reference frames carried along as in the run."""

    def step(aux, qv):
        aux = update_frames(qv[0], aux)
        return aux, model.total_energy(qv[0], qv[1], aux)

    return jax.lax.scan(step, model.init_aux(q[0]), (q, v))[1]


def _run(model, scheme, periods, per_period=20):
    traj = jaxrod.simulate(model, dt=T_EB / per_period, n_steps=periods * per_period, scheme=scheme, throw=False)
    e = np.asarray(_energies(model, traj.q, traj.v))
    return traj, e / e[0]


@pytest.fixture(scope="module")
def nonlinear_rod():
    return _cantilever(0.05)


def _whirling(model):
    """The same rod also swinging sideways and twisting: the reference frames move every step."""
    v0 = model.v0 + jaxrod.first_mode_velocity(model.rod, 0.03, direction=(0.0, 1.0, 0.0))
    return eqx.tree_at(lambda m: m.v0, model, v0.at[1:-1, 3].set(0.5))


@pytest.mark.parametrize("motion", ["planar", "whirling"])
def test_average_vector_field_conserves_energy_60_periods(nonlinear_rod, motion):
    model = nonlinear_rod if motion == "planar" else _whirling(nonlinear_rod)
    traj, e = _run(model, jaxrod.AverageVectorField(), periods=60)  # one compiled program for both
    assert bool(np.all(np.asarray(traj.stats.converged)))
    # really nonlinear: the tip swings by ~10 % of the length
    assert np.max(np.abs(np.asarray(traj.tip[:, 2]))) > 0.08
    if motion == "whirling":  # out of plane and twisting, so the frame update is exercised
        assert np.max(np.abs(np.asarray(traj.tip[:, 1]))) > 0.03
        assert np.max(np.abs(np.asarray(traj.twist))) > 0.03
    drift = np.max(np.abs(e - 1))
    assert drift < 1e-4, drift  # measured 1.1e-5 planar, 6.4e-6 whirling (Newton tolerance 1e-9)


@pytest.mark.slow
def test_implicit_midpoint_blows_up_at_T_over_20(nonlinear_rod):
    # the documented limit of the old default (and the reason it is no longer the default): every
    # step converges, yet the energy is pumped into the unresolved axial modes
    traj, e = _run(nonlinear_rod, jaxrod.ImplicitMidpoint(), periods=12)
    assert bool(np.all(np.asarray(traj.stats.converged)))
    assert e[10 * 20] > 1.05, e[10 * 20]  # measured +14 % after 10 periods


class _Duffing(AbstractImplicitModel):
    """``x'' + k x + c x^3 = 0`` (unit mass): energy ``v^2/2 + k x^2/2 + c x^4/4``, a quartic."""

    k: jax.Array
    c: jax.Array

    def residual(self, q, v, a, t, aux):
        return a + self.k * q + self.c * q**3

    def fixed_mask(self):
        return jnp.zeros(1, dtype=bool)

    def prescribed(self, t):
        return jnp.zeros(1)

    def init_aux(self, q):
        return jnp.zeros(())

    def update_aux(self, q, aux):
        return aux

    def default_linear_solver(self):
        return DenseJacobianSolver()

    def initial_state(self):
        return State(jnp.ones(1), jnp.zeros(1), jnp.zeros(()))

    def observe(self, q, v, aux):
        return {"positions": jnp.stack([q, v, jnp.zeros_like(q)], axis=-1)}


def test_average_vector_field_exact_energy_for_quartic_potential():
    model = _Duffing(jnp.asarray(4.0), jnp.asarray(50.0))

    def energy_error(scheme):
        # tight Newton: an error dq in q_{n+1} is an error 2 dq/dt in v_{n+1}, which the energy keeps
        tr = jaxrod.simulate(model, dt=0.05, duration=20.0, scheme=scheme, solver=TIGHT)
        x, v = np.asarray(tr.q[:, 0]), np.asarray(tr.v[:, 0])
        e = 0.5 * v**2 + 2.0 * x**2 + 12.5 * x**4
        return np.max(np.abs(e / e[0] - 1))

    # 2-point Gauss integrates the cubic force along the step exactly: round-off and Newton only
    assert energy_error(jaxrod.AverageVectorField(2)) < 1e-9
    # 1 point is the midpoint rule (not energy exact for a quartic)
    assert energy_error(jaxrod.AverageVectorField(1)) > 1e-3


def test_average_vector_field_bad_points():
    for bad in (0, 2.5, True, "2"):
        with pytest.raises(ValueError, match="n_points"):
            jaxrod.AverageVectorField(bad)
    assert isinstance(jaxrod.scheme_from_name("average_vector_field"), jaxrod.AverageVectorField)


def test_backward_euler_damping_matches_analytical_factor():
    # linear oscillator, omega = 2 rad/s: backward Euler's amplification |1/(1 - i omega dt)| per step
    # acts on |(x, v/omega)| exactly, so n = 20 steps per period shrink it by (1 + (omega dt)^2)^(-10)
    model, omega, per_period = _Duffing(jnp.asarray(4.0), jnp.asarray(0.0)), 2.0, 20
    dt = 2 * np.pi / omega / per_period
    tr = jaxrod.simulate(model, dt=dt, n_steps=3 * per_period, scheme=jaxrod.BackwardEuler(), solver=TIGHT)
    amp = np.hypot(np.asarray(tr.q[:, 0]), np.asarray(tr.v[:, 0]) / omega)
    measured = amp[per_period::per_period] / amp[:-per_period:per_period]
    predicted = (1.0 + (omega * dt) ** 2) ** (-per_period / 2)  # 0.390
    np.testing.assert_allclose(measured, predicted, rtol=1e-6)
