"""PCS dynamics (Ishigaki et al. 2024): statics against beam theory and the PCS Galerkin error,
cross-model agreement with the Cosserat shooting model, energy conservation of Newmark-beta and
gradients through the implicit steps vs finite differences. Small problems (1-10 segments)."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.cosserat import CosseratModel, CosseratRod
from jaxrod.models.pcs import PCSModel, PCSRod
from jaxrod.models.pcs.kinematics import StrainBasis

E, R, L = 1e7, 0.01, 1.0
EI = E * math.pi * R**4 / 4
GA = E / 3 * math.pi * R**2  # nu = 0.5


def tip(model, state):
    return np.asarray(model.observe(state.q, state.v, None)["positions"][-1])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_small_tip_load_matches_pcs_beam_theory(n):
    """Linear theory for n constant-curvature segments: the curvature of segment i is the segment
    mean of M(s)/EI (Galerkin projection), which gives the tip deflection
    P L^3/(3 EI) (1 - 1/(4 n^2)) (one segment: P L^3/(4 EI)), plus the shear compliance P L/(G A)."""
    P = 0.005 * EI / L**2
    rod = PCSRod.circular(L, n, R, youngs_modulus=E, density=1000.0, poisson_ratio=0.5)
    model = PCSModel(rod, tip_wrench=(0, 0, 0, 0, 0, -P))
    state, res = jaxrod.solve_static(model)
    assert bool(res.converged)
    ref = P * L**3 / (3 * EI) * (1 - 1 / (4 * n**2)) + P * L / GA
    assert -tip(model, state)[2] == pytest.approx(ref, rel=2e-3)  # geometric nonlinearity ~1e-4
    if n == 1:  # the constant-curvature error against Euler-Bernoulli is -25 %
        assert -tip(model, state)[2] / (P * L**3 / (3 * EI)) == pytest.approx(0.75, abs=0.01)


def test_ten_segments_agree_with_cosserat_large_deflection():
    """P L^2/EI = 1 (deflection ~0.3 L): 10 PCS segments vs the Cosserat shooting model (RK4, 60
    points, converged to ~1e-7). PCS discretisation error ~1/(4 n^2) of the linear part: 0.25 %."""
    P = 1.0 * EI / L**2
    pcs = PCSModel(PCSRod.circular(L, 10, R, youngs_modulus=E, density=1000.0, poisson_ratio=0.5),
                   tip_wrench=(0, 0, 0, 0, 0, -P))
    s_p, _ = jaxrod.solve_static(pcs, load_steps=2)
    cos = CosseratModel(CosseratRod.circular(L, R, youngs_modulus=E, density=1000.0, poisson_ratio=0.5),
                        n_points=60, tip_force=(-P, 0, 0))  # Cosserat axis +z, load -x
    s_c, _ = jaxrod.solve_static(cos, load_steps=2)
    tp, tc = tip(pcs, s_p), np.asarray(s_c.y[-1, :3])
    deflection_p, axial_p = -tp[2], tp[0]
    deflection_c, axial_c = -tc[0], tc[2]
    assert deflection_c > 0.25 * L
    assert deflection_p == pytest.approx(deflection_c, rel=5e-3)
    assert axial_p == pytest.approx(axial_c, rel=5e-3)


@pytest.mark.slow
def test_newmark_conserves_energy_without_damping_and_gravity():
    """Average-acceleration Newmark on a released bent rod: total energy within 0.5 % over 1000 steps."""
    rod = PCSRod.rectangular(0.5, 2, 0.03, 0.01, youngs_modulus=1e6, density=1000.0, poisson_ratio=0.5)
    model = PCSModel(rod, basis=StrainBasis.kirchhoff())
    q0 = jnp.array([0.2, 0.5, 1.0, 0.0, -0.1, -0.3, 0.5, 0.0])  # twist, two bendings, extension
    state0 = jaxrod.State(q0, jnp.zeros_like(q0), None)
    # first bending mode ~1.3 rad/s (period ~5 s); the run covers one period of it with 1000 steps
    tr = jaxrod.simulate(model, dt=0.005, n_steps=1000, state0=state0, scheme=jaxrod.NewmarkBeta(), save_every=10,
                         solver=jaxrod.NewtonSolver(rtol=1e-10, atol=1e-10, max_steps=30))
    # jitted: the eager vmap dispatched (and compiled) ~200 single-operation programs
    energy = np.asarray(jax.jit(jax.vmap(model.energy))(tr.q, tr.v))
    assert np.max(np.abs(energy / energy[0] - 1)) < 5e-3
    moved = np.max(np.abs(np.asarray(tr.q) - np.asarray(q0)))
    assert moved > 0.3  # it really moved


@pytest.mark.slow
def test_gradient_of_trajectory_loss_wrt_youngs_modulus_matches_fd():
    """d loss / dE through 20 Newmark steps (each Newton solve differentiated implicitly) against a
    central difference. One parameter: forward mode, and one compiled program (the jvp, whose primal
    output is the loss) serves the derivative and both finite-difference runs. Reverse mode through
    the time loop is checked in test_der_gradients.py, through the fallback machinery in
    test_failures.py; both modes use the same implicit-function-theorem rule."""
    rod = PCSRod.rectangular(0.9, 3, 0.05, 0.02, youngs_modulus=110e3, density=1080.0, poisson_ratio=0.5,
                             viscosity=300.0)
    model = PCSModel(rod, gravity=(0, 0, -9.81), points_per_segment=2)
    solver = jaxrod.NewtonSolver(rtol=1e-12, atol=1e-12, max_steps=30)

    def loss(E_):
        m = eqx.tree_at(lambda m: m.rod.youngs_modulus, model, E_)
        m = eqx.tree_at(lambda m: m.rod.shear_modulus, m, E_ / 3.0)
        # fallback=False: under jit the retry ladder would be compiled into every step
        tr = jaxrod.simulate(m, dt=0.004, n_steps=20, scheme=jaxrod.NewmarkBeta(), solver=solver, fallback=False)
        return jnp.sum(tr.tip[:, 2] ** 2)

    value_and_slope = jax.jit(lambda E_: jax.jvp(loss, (E_,), (jnp.ones_like(E_),)))
    E0 = 110e3
    _, g = value_and_slope(E0)
    h = 1e-5 * E0
    fd = (value_and_slope(E0 + h)[0] - value_and_slope(E0 - h)[0]) / (2 * h)
    assert float(g) == pytest.approx(float(fd), rel=1e-5)
    assert abs(float(g)) > 0


def test_bad_input():
    with pytest.raises(ValueError, match="youngs_modulus must be > 0"):
        PCSRod.circular(1.0, 2, 0.01, youngs_modulus=-1.0, density=1000.0)
    with pytest.raises(ValueError, match="n_segments must be >= 1"):
        PCSRod.circular(1.0, 0, 0.01, youngs_modulus=1e6, density=1000.0)
    with pytest.raises(ValueError, match="viscosity"):
        PCSRod.circular(1.0, 2, 0.01, youngs_modulus=1e6, density=1000.0, viscosity=-1.0)
    rod = PCSRod.circular(1.0, 2, 0.01, youngs_modulus=1e6, density=1000.0)
    with pytest.raises(ValueError, match="tip_wrench must have shape"):
        PCSModel(rod, tip_wrench=(0.0, 1.0))
    with pytest.raises(ValueError, match="base_rotation must be a rotation"):
        PCSModel(rod, base_rotation=2 * np.eye(3))


@pytest.mark.slow
def test_explicit_euler_agrees_with_newmark_at_small_steps_and_diverges_at_large():
    """Paper sec. V-B: explicit Euler is stable at 4e-4 s and diverges at 4e-3 s on the silicone
    rod, where Newmark runs; at a small step both agree on the sagging motion."""
    from jaxrod.models.pcs.explicit import simulate_explicit
    from jaxrod.scenes import get_scene

    sc = get_scene("pcs-silicone")
    model = sc.model
    qs, _ = simulate_explicit(model, dt=4e-4, n_steps=500, save_every=50)  # 0.2 s
    tr = jaxrod.simulate(model, dt=4e-3, n_steps=50, save_every=5, scheme=jaxrod.NewmarkBeta(),
                         solver=jaxrod.NewtonSolver(rtol=1e-9, atol=1e-9, max_steps=30))
    tip_e = np.asarray(model.observe(qs[-1], qs[-1], None)["positions"][-1])
    tip_n = np.asarray(tr.tip[-1])
    assert tip_n[2] < -0.01  # it sags
    assert np.linalg.norm(tip_e - tip_n) < 0.05 * abs(tip_n[2])
    q_big, _ = simulate_explicit(model, dt=4e-3, n_steps=250, save_every=250)
    assert not np.all(np.isfinite(np.asarray(q_big[-1]))) or np.max(np.abs(np.asarray(q_big[-1]))) > 1e3


@pytest.mark.slow
def test_adaptive_step_grows_and_matches_fixed_step_newmark():
    """Condition I-A of the paper: the step doubles after easy steps up to dt_max; the result
    follows the fixed-step (4 ms) Newmark run."""
    from jaxrod.scenes import get_scene

    model = get_scene("pcs-silicone").model
    solver = jaxrod.NewtonSolver(rtol=1e-9, atol=1e-9, max_steps=30)
    fixed = jaxrod.simulate(model, dt=4e-3, n_steps=50, save_every=5, scheme=jaxrod.NewmarkBeta(), solver=solver)
    adaptive = jaxrod.simulate_adaptive(model, duration=0.2, dt=4e-3, dt_min=4e-3, dt_max=1.6e-2, solver=solver)
    steps = np.asarray(adaptive.dt)
    assert steps.max() == pytest.approx(1.6e-2) and steps.shape[0] < 50
    assert float(adaptive.times[-1]) == pytest.approx(0.2)
    sag = abs(float(fixed.tip[-1, 2]))
    assert sag > 0.01
    assert np.linalg.norm(np.asarray(adaptive.tip[-1] - fixed.tip[-1])) < 0.05 * sag
    with pytest.raises(ValueError, match="one-step scheme"):
        jaxrod.simulate_adaptive(model, duration=0.1, dt=4e-3, dt_min=4e-3, dt_max=1.6e-2, scheme=jaxrod.BDF2())


@pytest.mark.slow
def test_cfrp_scene_runs_newmark_from_the_first_step_and_is_nearly_step_independent():
    """Paper sec. V-C (spec seed003 sec. 6.3, rows 11-12): the CFRP leaf spring released from the
    strain offset (+1.0 angular, +0.01 linear) runs with Newmark (beta 1/4, gamma 1/2) at C1's
    dt = 1e-3 s, and the grounded segment's strain history is "nearly the same" at smaller steps,
    oscillating about the y-axis (Fig. 8). 20 ms here, every step pure Newmark (no fallback), against
    dt = 2.5e-4 s (measured: max |d ky| 0.10 over the 5 frames; dt 2.5e-4 vs 1e-4 differ by <= 0.02,
    second-order convergence). The consistent start (a0 from the equation of motion, |a0| ~ 1.6e10)
    fails at step 0 here; the scene starts from a0 = 0 (see jaxrod.scenes.pcs)."""
    from jaxrod.scenes import get_scene

    sc = get_scene("pcs-cfrp")
    assert isinstance(sc.scheme, jaxrod.NewmarkBeta) and sc.scheme.start == "rest"
    assert (sc.scheme.beta, sc.scheme.gamma) == (0.25, 0.5)
    solver = jaxrod.NewtonSolver(rtol=1e-9, atol=1e-9, max_steps=30)
    runs = {}
    for dt, n in ((1e-3, 20), (2.5e-4, 80)):
        tr = jaxrod.simulate(sc.model, dt=dt, n_steps=n, save_every=n // 4, state0=sc.state0, scheme=sc.scheme,
                             solver=solver, fallback=False)  # throw=True: any failed step raises
        assert np.all(np.asarray(tr.stats.converged)) and np.asarray(tr.stats.iterations).max() <= 8
        runs[dt] = (np.asarray(tr.q)[:, 1], np.asarray(tr.tip))  # grounded segment, bending about y
    (ky1, tip1), (ky2, tip2) = runs[1e-3], runs[2.5e-4]
    assert ky1[0] == ky2[0] == 1.0
    # the offset relaxes through an oscillation about y: + at 5 ms, - at 10 and 15 ms, + at 20 ms
    for ky in (ky1, ky2):
        assert np.array_equal(np.sign(ky[1:]), [1, -1, -1, 1])
        assert np.all(np.abs(ky[1:]) < 0.8)
    assert np.max(np.abs(ky1 - ky2)) < 0.15
    # m, on a 0.5 m spring whose tip moves ~0.16 m: measured 10.1 mm at 5 ms (the fast out-of-plane
    # relaxation of the initial twist offset), <= 5.3 mm afterwards
    d_tip = np.linalg.norm(tip1 - tip2, axis=1)
    assert d_tip.max() < 0.015 and d_tip[2:].max() < 0.008


@pytest.mark.slow
def test_cfrp_consistent_newmark_start_fails_and_the_backward_euler_fallback_recovers_it():
    """A real case for simulate's fallback: with the consistent start (|a0| ~ 1.6e10) Newmark's
    first step on the CFRP scene does not converge (its predictor q + dt v + dt^2 a0/2 is ~1e4 off);
    the fallback retries it with backward Euler from q_n, and Newmark then runs every later step
    itself (measured: 34 Newton updates on step 0, then 3 per step)."""
    from jaxrod.scenes import get_scene

    sc = get_scene("pcs-cfrp")
    solver = jaxrod.NewtonSolver(rtol=1e-9, atol=1e-9, max_steps=30)
    with pytest.warns(jaxrod.FallbackWarning, match="1 of 20 steps .*NewmarkBeta.*first at step 0"):
        tr = jaxrod.simulate(sc.model, dt=1e-3, n_steps=20, save_every=5, state0=sc.state0,
                             scheme=jaxrod.NewmarkBeta(), solver=solver)
    fb = np.asarray(tr.stats.fallbacks)
    assert fb[0] == 1 and np.all(fb[1:] == 0)  # step 0: backward Euler at dt; then Newmark
    assert np.all(np.asarray(tr.stats.converged)) and np.asarray(tr.stats.iterations)[1:].max() <= 8
    ky = np.asarray(tr.q)[:, 1]
    assert np.all(np.abs(ky[1:]) < 0.8) and ky[2] < 0  # relaxing through the bending oscillation
