"""Cosserat / Kirchhoff shooting model (Till, Aloi & Rucker 2019) against beam theory, the paper's
Table 3, our DER model, finite differences and itself (frames, Kirchhoff reduction).

Grids are small (Euler 20-40 points) so each compiled program builds in ~10 s; every program is
shared by the cases that need it (schemes are array leaves, so all difference formulas share one).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod import analysis
from jaxrod.models.cosserat import (
    CosseratModel,
    CosseratRod,
    Hat,
    PointLoad,
    ReleasedAt,
    solve_static_cosserat,
)
from jaxrod.scenes import get_scene
from jaxrod.integrate.schemes import BDFAlpha, DifferenceFormula, ImplicitMidpoint

STEEL = dict(youngs_modulus=207e9, shear_modulus=79e9, density=8000.0)
FAST = jaxrod.NewtonSolver(rtol=1e-10, atol=1e-10, max_steps=25, reuse_jacobian=True)


def steel_rod(length=0.4, radius=1e-3, **kw):
    return CosseratRod.circular(length, radius, **{**STEEL, **kw})


def tip_x(state):
    return float(state.y[-1, 0])


# ---- difference formulas -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, formula, order",
    [
        ("backward_euler", DifferenceFormula.backward_euler(), 1),
        ("bdf2", DifferenceFormula.bdf2(), 2),
        ("bdf_alpha(-0.2)", DifferenceFormula.bdf_alpha(-0.2), 2),
        ("trapezoid", DifferenceFormula.trapezoid(), 2),
        ("bdf3", DifferenceFormula.bdf3(), 3),
    ],
)
def test_difference_formula_exact_on_polynomials(name, formula, order):
    """y_t = c0 y + y^h is exact for polynomials up to the method's order once the history holds
    exact past values and derivatives."""
    dt = 0.01
    for k in range(order + 1):
        y = lambda t: t**k  # noqa: E731
        yd = lambda t: k * t ** (k - 1) if k else 0.0  # noqa: E731
        t = 0.3
        carrier = (y(t - dt), y(t - 2 * dt), y(t - 3 * dt), yd(t - dt))
        yh = formula.history(carrier, dt)
        got = float(formula.derivative(y(t), yh, dt))
        assert got == pytest.approx(yd(t), abs=1e-9), (name, k)
    # one order higher is not exact (the test can fail)
    k = order + 1
    carrier = ((0.3 - dt) ** k, (0.3 - 2 * dt) ** k, (0.3 - 3 * dt) ** k, k * (0.3 - dt) ** (k - 1))
    got = float(formula.derivative(0.3**k, formula.history(carrier, dt), dt))
    assert abs(got - k * 0.3 ** (k - 1)) > 1e-9


def test_difference_formula_rejects_bad_alpha():
    with pytest.raises(ValueError, match=r"alpha in \[-0.5, 0\]"):
        DifferenceFormula.bdf_alpha(0.1)
    with pytest.raises(ValueError, match=r"alpha in \[-0.5, 0\]"):
        DifferenceFormula.bdf_alpha(-0.6)
    # the second-order scheme and the first-order formula agree on the coefficients
    c = BDFAlpha(-0.3).coefficients(0.01)
    f = DifferenceFormula.bdf_alpha(-0.3)
    np.testing.assert_allclose([c[0], c[1], c[2]], np.asarray(f.gammas[:3]) / 0.01, rtol=1e-14)
    assert float(f.d1) == pytest.approx(c[3])


# ---- statics -------------------------------------------------------------------------------------
@pytest.mark.parametrize("integrator", ["euler", "rk4"])
@pytest.mark.parametrize("frame", ["global", "local"])
def test_static_small_tip_load_matches_beam_theory(integrator, frame):
    rod = steel_rod()
    EI, L, P = float(rod.bending_stiffness), 0.4, 5e-3
    model = CosseratModel(rod, n_points=40, integrator=integrator, frame=frame, tip_force=(-P, 0, 0))
    state, res = jaxrod.solve_static(model)
    assert bool(res.converged)
    ref = P * L**3 / (3 * EI)
    assert -tip_x(state) == pytest.approx(ref, rel=0.01)
    # RK4 is fourth order in ds: far inside the 1%
    if integrator == "rk4":
        assert -tip_x(state) == pytest.approx(ref, rel=1e-4)


def test_rolled_rk4_stages_equal_inlined():
    """``integrate(roll_stages=True)`` (RK4 stages as a loop over one rhs: the static solves, rods
    with tendons) gives the grid, grid variables and tip loads of the four inlined stages to
    round-off, here with damping, a nonzero history and a time step (c0 > 0)."""
    rod = steel_rod(damping_bt=1e-3)
    model = CosseratModel(rod, n_points=9, gravity=(0.0, 0.0, -9.81), tip_force=(0.3, 0.0, 0.0))
    P = model.step_constants(40.0)
    rng = np.random.default_rng(0)
    wh = tuple(jnp.asarray(0.1 * rng.standard_normal(a.shape)) for a in model.zero_history())
    x = jnp.array([0.2, -0.1, 0.5, 0.05, 0.3, 0.0])
    inlined = model.integrate(x, 0.1, P, wh)
    rolled = model.integrate(x, 0.1, P, wh, roll_stages=True)
    leaves = [(np.asarray(a), np.asarray(b)) for a, b in
              zip(jax.tree_util.tree_leaves(inlined), jax.tree_util.tree_leaves(rolled), strict=True)]
    assert sum(a.size for a, _ in leaves) > 9 * 19  # the grid and more were compared
    for a, b in leaves:
        if a.size:
            np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-13 * np.max(np.abs(a)))


def test_static_interior_point_load_piecewise():
    """A point force at s = a (jump in n): tip deflection P a^2 (3L - a) / (6 EI)."""
    rod = steel_rod()
    EI, L, P, a = float(rod.bending_stiffness), 0.4, 5e-3, 0.15
    model = CosseratModel(rod, n_points=41, integrator="rk4", point_loads=(PointLoad(a, force=(-P, 0, 0)),))
    assert np.isclose(model.grid(), a).any()
    state, _ = jaxrod.solve_static(model)
    assert -tip_x(state) == pytest.approx(P * a**2 * (3 * L - a) / (6 * EI), rel=1e-3)
    # a point moment at the tip region: pure bending, tip slope M s/EI: deflection M a (2L - a)/(2EI)
    M = 1e-3
    model_m = CosseratModel(rod, n_points=41, integrator="rk4", point_loads=(PointLoad(a, moment=(0, M, 0)),))
    state_m, _ = jaxrod.solve_static(model_m)
    assert tip_x(state_m) == pytest.approx(M * a * (2 * L - a) / (2 * EI), rel=1e-3)


def test_static_large_deflection_agrees_with_der():
    """Tip load P L^2/EI = 3 (about 0.6 L of deflection): Cosserat (RK4, 60 points) vs the DER
    cantilever of this repo (51 nodes, which matches the elastica within 0.05%). Measured
    difference 0.03% of L; asserted 0.3% of L."""
    der = get_scene("cantilever-static", n_nodes=51, load_parameter=3.0)
    der_state, _ = jaxrod.solve_static(der.model, load_steps=der.load_steps)
    der_tip = np.asarray(der_state.q[-1, :3])  # rod along +x, load along -z
    L, r, E = 1.0, 0.01, 1e7
    rod = CosseratRod.circular(L, r, youngs_modulus=E, density=1000.0, shear_modulus=1e3 * E)
    P = float(der.reference["load_N"])
    model = CosseratModel(rod, n_points=60, integrator="rk4", tip_force=(-P, 0, 0))
    state, res = jaxrod.solve_static(model, load_steps=3)
    assert bool(res.converged)
    tip = np.asarray(state.y[-1])
    deflection_c, axial_c = -tip[0], tip[2]
    deflection_d, axial_d = -der_tip[2], der_tip[0]
    assert deflection_c > 0.5 * L  # large deflection indeed
    assert abs(deflection_c - deflection_d) < 3e-3 * L
    assert abs(axial_c - axial_d) < 3e-3 * L


def test_kirchhoff_and_cosserat_agree_statically():
    """Slender steel rod: shear/extension changes the tip by ~(r/L)^2; asserted 1e-4 relative.
    The local-frame form of the same equations agrees with the global one to round-off (RK4)."""
    rod = steel_rod()
    kw = dict(n_points=40, integrator="rk4", gravity=(-9.81, 0, 0), tip_force=(-0.5, 0, 0))
    s_c, _ = jaxrod.solve_static(CosseratModel(rod, **kw))
    s_l, _ = jaxrod.solve_static(CosseratModel(rod, frame="local", **kw))
    np.testing.assert_allclose(np.asarray(s_l.y[:, :3]), np.asarray(s_c.y[:, :3]), atol=1e-7 * 0.07)
    s_k, _ = jaxrod.solve_static(CosseratModel(rod, kirchhoff=True, **kw))
    d_c, d_k = np.asarray(s_c.y[-1, :3]), np.asarray(s_k.y[-1, :3])
    assert np.linalg.norm(d_c - d_k) / abs(d_k[0]) < 1e-4
    assert np.linalg.norm(d_c - d_k) > 0  # the variants do differ (extension)


def test_levenberg_marquardt_fallback_rescues_a_hard_static_solve():
    rod = steel_rod()
    model = CosseratModel(rod, n_points=30, integrator="euler", tip_force=(-4.0, 0, 0))  # ~0.8 L linear deflection
    strict = jaxrod.NewtonSolver(rtol=1e-11, atol=1e-11, max_steps=3)
    _, res = solve_static_cosserat(model, solver=strict, throw=False)
    assert not bool(res.converged)
    rescued = jaxrod.NewtonSolver(rtol=1e-11, atol=1e-11, max_steps=3, fallback="levenberg_marquardt")
    state, res = solve_static_cosserat(model, solver=rescued, throw=False)
    assert bool(res.converged)
    ref, _ = solve_static_cosserat(model, load_steps=8)
    np.testing.assert_allclose(np.asarray(state.y[:, :3]), np.asarray(ref.y[:, :3]), atol=1e-9)


# ---- dynamics: numerical damping (Table 3) -------------------------------------------------------
@pytest.fixture(scope="module")
def benchmark_runs():
    """Till's benchmark (0.5 N released), Cosserat + Euler, 150 points (the paper's), dt 5 ms, 1 s,
    every scheme (one compiled program). Backward Euler's tau ~ 2/(omega^2 dt) is sensitive to the
    frequency, so coarse Euler grids (40 points: 0.146 s) miss the paper's 0.13 s."""
    sc = get_scene("till-benchmark", n_points=150, integrator="euler")
    model = sc.model
    eq_model = eqx.tree_at(lambda m: m.tip_force, model, jnp.zeros(3))
    eq, _ = jaxrod.solve_static(eq_model)
    e_eq = float(eq_model.energy(eq.y, eq.w))
    state0, _ = jaxrod.solve_static(model)
    runs = {}
    for name, f in [
        ("backward_euler", DifferenceFormula.backward_euler()),
        ("bdf2", DifferenceFormula.bdf2()),
        ("bdf_alpha(-0.2)", DifferenceFormula.bdf_alpha(-0.2)),
        ("trapezoid", DifferenceFormula.trapezoid()),
    ]:
        tr = jaxrod.simulate(model, dt=0.005, n_steps=200, scheme=f, state0=state0, solver=FAST, throw=False)
        energy = np.asarray(jax.vmap(model.energy)(tr.q, tr.v)) - e_eq
        runs[name] = (tr, energy)
    return sc, runs


def fitted_tau(times, energy, t_min=0.2):
    """Position time constant from E(t) - E_eq = E0 exp(-2 t / tau) (spec sec. 5.2)."""
    sel = (times >= t_min) & (energy > 0)
    slope = np.polyfit(times[sel], np.log(energy[sel]), 1)[0]
    return -2.0 / slope


@pytest.mark.slow
@pytest.mark.parametrize("name, paper_tau", [("backward_euler", 0.13), ("bdf2", 3.86), ("bdf_alpha(-0.2)", 7.57)])
def test_numerical_damping_matches_table3(benchmark_runs, name, paper_tau):
    _, runs = benchmark_runs
    tr, energy = runs[name]
    assert bool(np.all(tr.stats.converged))
    tau = fitted_tau(np.asarray(tr.times), energy)
    assert tau == pytest.approx(paper_tau, rel=0.05)


@pytest.mark.slow
def test_trapezoid_has_no_numerical_damping(benchmark_runs):
    """Euler sweep, 150 points (the paper's). BDF3's instability and the RK4 sweep's long-run
    energy are asserted in test_cosserat_numerics.py."""
    _, runs = benchmark_runs
    tr, energy = runs["trapezoid"]
    t = np.asarray(tr.times)
    # energy ripples within a period (discrete energy is not the conserved quantity): compare the
    # mean over the last 0.2 s with the mean over the first 0.2 s after release
    early, late = energy[(t > 0.0) & (t <= 0.2)].mean(), energy[t > 0.8].mean()
    assert bool(np.all(tr.stats.converged))
    assert abs(late / early - 1) < 0.005


@pytest.mark.slow
def test_kelvin_voigt_damping_time_constant(benchmark_runs):
    """Bending damping B_bt = beta K_bt gives modal damping ratio zeta = beta omega / 2, i.e. an
    energy decay exp(-2 t / tau) with tau = 2 / (beta omega^2); the trapezoid rule adds none."""
    sc, _ = benchmark_runs
    omega = 2 * math.pi * sc.reference["first_mode_hz"]
    tau_ref = 0.5
    beta = 2.0 / (tau_ref * omega**2)
    model = eqx.tree_at(lambda m: m.rod.damping_bt, sc.model, beta * sc.model.rod.K_bt)
    eq_model = eqx.tree_at(lambda m: m.tip_force, model, jnp.zeros(3))
    eq, _ = jaxrod.solve_static(eq_model)
    state0, _ = jaxrod.solve_static(model)
    tr = jaxrod.simulate(model, dt=0.005, n_steps=200, scheme=DifferenceFormula.trapezoid(), state0=state0,
                         solver=FAST)
    energy = np.asarray(jax.vmap(model.energy)(tr.q, tr.v)) - float(eq_model.energy(eq.y, eq.w))
    # strain energy includes no damping term; the 8.9 Hz mode dominates after 0.2 s
    assert fitted_tau(np.asarray(tr.times), energy) == pytest.approx(tau_ref, rel=0.05)


@pytest.mark.slow
def test_benchmark_vibrates_at_first_bending_mode(benchmark_runs):
    sc, runs = benchmark_runs
    tr, _ = runs["trapezoid"]
    x = np.asarray(tr.tip[:, 0])
    omega = analysis.oscillation_frequency(np.asarray(tr.times), x - x.mean(), direction="up")
    # 5 ms steps (trapezoid phase error ~ (omega dt)^2/12 = 0.7%) and a 16% of L amplitude
    assert omega / (2 * math.pi) == pytest.approx(sc.reference["first_mode_hz"], rel=0.03)


# ---- dynamics: variants, boundary conditions ----------------------------------------------------
@pytest.mark.slow
def test_frames_and_kirchhoff_agree_in_dynamics():
    rod = steel_rod()
    kw = dict(n_points=20, integrator="euler", gravity=(-9.81, 0, 0), tip_force=(-0.5, 0, 0),
              tip_profile=ReleasedAt(0.0))
    tips = {}
    for key, extra in [("global", {}), ("local", {"frame": "local"}), ("kirchhoff", {"kirchhoff": True})]:
        tr = jaxrod.simulate(CosseratModel(rod, **kw, **extra), dt=0.005, n_steps=30, solver=FAST)
        tips[key] = np.asarray(tr.tip)
    scale = np.max(np.abs(tips["global"][:, 0] - tips["global"][0, 0]))
    # global and local components are different variables for explicit Euler in s, so they differ
    # by the O(ds) discretisation error (measured 3.4e-4 of the amplitude at 20 points); a wrong
    # term in either form would show at O(1)
    assert np.max(np.abs(tips["local"] - tips["global"])) < 1e-3 * scale
    assert np.max(np.abs(tips["kirchhoff"] - tips["global"])) < 1e-4 * scale


@pytest.mark.slow
def test_tip_mass_oscillates_at_spring_mass_frequency():
    """Light rod with a tip mass m: omega^2 = 3 EI / (L^3 (m + 33/140 rho A L)) (Rayleigh)."""
    rod = steel_rod(density=80.0)
    EI, L, rhoA = float(rod.bending_stiffness), 0.4, float(rod.mass_per_length)
    m = 0.05
    model = CosseratModel(rod, n_points=20, integrator="euler", tip_mass=m, tip_force=(-0.05, 0, 0),
                          tip_profile=ReleasedAt(0.0))
    omega_ref = math.sqrt(3 * EI / (L**3 * (m + 33 / 140 * rhoA * L)))
    dt = 2 * math.pi / omega_ref / 100
    tr = jaxrod.simulate(model, dt=dt, n_steps=300, scheme=DifferenceFormula.trapezoid(), solver=FAST)
    x = np.asarray(tr.tip[:, 0])
    omega = analysis.oscillation_frequency(np.asarray(tr.times), x, direction="up")
    assert omega == pytest.approx(omega_ref, rel=0.01)


@pytest.mark.slow
def test_accelerating_base_pulls_rod_with_mass_times_acceleration():
    """Base moved along the rod axis with p0 = a t^2 / 2 (no gravity): the rod follows rigidly and
    the base pushes it with the rod's mass times a, i.e. the internal force at the base is a
    compression n3(0) = -rho A L a (after the BDF2 start-up transient)."""
    rod = steel_rod()
    acc = 2.0

    def motion(t):
        return jnp.stack([0.0 * t, 0.0 * t, 0.5 * acc * t**2]), jnp.array([1.0, 0.0, 0.0, 0.0]) + 0.0 * t

    model = CosseratModel(rod, n_points=20, integrator="euler", base_motion=motion)
    tr = jaxrod.simulate(model, dt=0.002, n_steps=40, solver=FAST)
    n_base = np.asarray(tr.q[-1, 0, 7:10])
    mass = float(rod.mass_per_length) * 0.4
    assert n_base[2] == pytest.approx(-mass * acc, rel=1e-3)
    # the tip moved with the base
    assert float(tr.tip[-1, 2]) - 0.4 == pytest.approx(0.5 * acc * float(tr.times[-1]) ** 2, rel=1e-3)


# ---- gradients ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_gradients_match_finite_differences_weight_release():
    """d loss / d (E, rho, C, B_bt, released weight) through every shooting solve (implicit
    differentiation) and the initial static solve, vs central finite differences."""
    sc = get_scene("till-weight-release", n_points=20, integrator="euler")
    solver = jaxrod.NewtonSolver(rtol=1e-12, atol=1e-12, max_steps=25, reuse_jacobian=True)
    m0 = sc.model

    def loss(params):
        E, rho, C, B, W = params
        m = eqx.tree_at(
            lambda m: (m.rod.youngs_modulus, m.rod.density, m.rod.drag, m.rod.damping_bt, m.tip_force),
            m0, (E, rho, C * jnp.ones(3), B * jnp.ones(3), jnp.stack([-W, 0.0, 0.0])),
        )
        tr = jaxrod.simulate(m, dt=0.004, n_steps=15, scheme=DifferenceFormula.bdf_alpha(-0.4), solver=solver)
        return jnp.sum((tr.tip[:, 0] - tr.tip[0, 0]) ** 2)

    p0 = tuple(jnp.asarray(p) for p in (m0.rod.youngs_modulus, m0.rod.density, m0.rod.drag[0], 1e-5,
                                        -m0.tip_force[0]))
    # forward mode, one parameter direction per call (an array argument): ONE compiled program gives
    # each partial derivative and, through its primal output, the finite-difference runs (reverse
    # mode plus a separate forward program compiled twice)
    value_and_derivative = jax.jit(lambda p, t: jax.jvp(loss, (p,), (t,)))
    h = 1e-5
    for i in range(5):
        unit = tuple(jnp.asarray(float(j == i)) for j in range(5))
        grad_i = value_and_derivative(p0, unit)[1]
        pp, pm = list(p0), list(p0)
        pp[i], pm[i] = p0[i] * (1 + h), p0[i] * (1 - h)
        fd = (value_and_derivative(tuple(pp), unit)[0] - value_and_derivative(tuple(pm), unit)[0]) / (2 * h * p0[i])
        assert float(grad_i) == pytest.approx(float(fd), rel=1e-5), i
        assert abs(float(grad_i)) > 0


# ---- bad input and failures ---------------------------------------------------------------------------
def test_bad_parameters_raise_clear_errors():
    with pytest.raises(ValueError, match="youngs_modulus must be > 0"):
        CosseratRod.circular(0.4, 1e-3, youngs_modulus=-1.0, density=8000.0)
    with pytest.raises(ValueError, match="density"):
        CosseratRod.circular(0.4, 1e-3, youngs_modulus=1e9, density=float("nan"))
    with pytest.raises(ValueError, match="drag must be finite and >= 0"):
        CosseratRod.circular(0.4, 1e-3, youngs_modulus=1e9, density=8000.0, drag=-1.0)
    rod = steel_rod()
    with pytest.raises(ValueError, match="n_points must be >= 2"):
        CosseratModel(rod, n_points=1)
    with pytest.raises(ValueError, match="integrator must be"):
        CosseratModel(rod, integrator="rk45")
    with pytest.raises(ValueError, match="strictly inside the rod"):
        CosseratModel(rod, point_loads=(PointLoad(0.4, force=(1, 0, 0)),))
    with pytest.raises(ValueError, match="own interior grid node"):
        CosseratModel(rod, n_points=5, point_loads=(PointLoad(0.1, force=(1, 0, 0)), PointLoad(0.11)))
    with pytest.raises(ValueError, match="tip_force must have shape"):
        CosseratModel(rod, tip_force=(1.0, 0.0))
    with pytest.raises(ValueError, match="Hat.duration"):
        Hat(0.0)
    model = CosseratModel(rod, n_points=10, integrator="euler")
    with pytest.raises(ValueError, match="dt must be a finite number > 0"):
        jaxrod.simulate(model, dt=0.0, n_steps=3)
    with pytest.raises(TypeError, match="first-order difference formula"):
        jaxrod.simulate(model, dt=0.01, n_steps=3, scheme=ImplicitMidpoint())


@pytest.mark.slow
def test_non_convergence_is_reported_with_step_and_time():
    rod = steel_rod()
    model = CosseratModel(rod, n_points=20, integrator="euler", tip_force=(-0.5, 0, 0), tip_profile=ReleasedAt(0.0))
    hopeless = jaxrod.NewtonSolver(rtol=1e-14, atol=1e-14, max_steps=1, reuse_jacobian=True)
    with pytest.raises(jaxrod.ConvergenceError, match=r"step 0 \(t = 0.005 s\)"):
        jaxrod.simulate(model, dt=0.005, n_steps=30, solver=hopeless)
    tr = jaxrod.simulate(model, dt=0.005, n_steps=30, solver=hopeless, throw=False)
    assert tr.stats.first_failure() == 0


def test_difference_formula_names():
    names = [f.describe() for f in (DifferenceFormula.backward_euler(), DifferenceFormula.bdf2(),
                                    DifferenceFormula.bdf3(), DifferenceFormula.trapezoid(),
                                    DifferenceFormula.bdf_alpha(-0.2))]
    assert names == ["backward Euler", "BDF2", "BDF3", "trapezoid", "BDF-alpha(-0.2)"]


# ---- multiple shooting ------------------------------------------------------------------------------
@pytest.mark.slow
def test_multiple_shooting_solves_the_same_discrete_problem():
    """Segments only change how the arc-length BVP is solved, not its solution (29 intervals in 3
    segments: the last one is padded with zero-length intervals)."""
    rod = steel_rod()
    kw = dict(n_points=30, integrator="euler", gravity=(-9.81, 0, 0), tip_force=(-0.5, 0, 0),
              tip_profile=ReleasedAt(0.0))
    single, multi = CosseratModel(rod, **kw), CosseratModel(rod, segments=3, **kw)
    s1, _ = jaxrod.solve_static(single)
    s3, r3 = jaxrod.solve_static(multi)
    assert bool(r3.converged) and s3.base_loads.shape == (6 + 2 * 19,)
    np.testing.assert_allclose(np.asarray(s3.y[:, :3]), np.asarray(s1.y[:, :3]), atol=1e-9)
    t1 = jaxrod.simulate(single, dt=0.005, n_steps=20, solver=FAST)
    t3 = jaxrod.simulate(multi, dt=0.005, n_steps=20, solver=FAST)
    np.testing.assert_allclose(np.asarray(t3.positions), np.asarray(t1.positions), atol=1e-8)


# Till's impulse near the base (multiple shooting) against modal superposition: test_cosserat_numerics.py


def test_quadratic_extrapolation_gives_the_same_steps_with_fewer_jacobians():
    """``model.stepper(..., extrapolation=2)``: the initial guess of each step from the last three
    steps' base loads (quadratic) instead of two (linear). The solved steps must agree to the
    solver tolerance, and the better guess must need fewer fresh Jacobians."""
    sc = get_scene("till-benchmark", n_points=30, integrator="euler")
    scheme = DifferenceFormula.bdf_alpha(-0.2)
    st, _ = jaxrod.solve_static(sc.model)
    dt, n = 0.005, 40

    def run(order):
        stepper = sc.model.stepper(scheme, extrapolation=order)
        carry = stepper.init(stepper.start_state(st, 0.0), 0.0, dt)

        def body(c, k):
            c, stats = stepper.step(c, k * dt, dt)
            return c, (stepper.observe(c)["positions"][-1], stats[0], stats[2])

        return jax.lax.scan(body, carry, jnp.arange(n))[1]

    (tip1, conv1, jac1), (tip2, conv2, jac2) = jax.jit(lambda: (run(1), run(2)))()
    assert bool(conv1.all()) and bool(conv2.all())
    np.testing.assert_allclose(tip2, tip1, rtol=0, atol=1e-8)
    assert float(jnp.ptp(tip1[:, 0])) > 1e-3  # it swings: the guesses matter
    assert int(jac2.sum()) < int(jac1.sum()), (int(jac2.sum()), int(jac1.sum()))
    with pytest.raises(ValueError, match="extrapolation must be 1"):
        sc.model.stepper(scheme, extrapolation=3)
