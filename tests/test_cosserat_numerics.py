"""Numerical damping, energy and stability of the Cosserat shooting model (Till, Aloi & Rucker 2019)
with the RK4 arc-length sweep, against the paper's Table 3, the linear-oscillator roots of each
difference formula (spec sec. 5.6) and Euler-Bernoulli modal superposition.

The RK4 sweep evaluates the rod at three off-node stage points per interval; each of them carries
its own time history (:meth:`jaxrod.models.cosserat.CosseratModel.integrate`). With the node
histories interpolated to the stages instead (the paper's listing), the numerical damping depended
on the grid: at 10 points BDF2 *gained* energy (fitted tau -349 s instead of the paper's +3.88 s),
at 20 points tau was 5.0 s, at 40 points 4.1 s; the trapezoid rule gained +260% / +31% / +6.1%
energy in 2 s at 10 / 20 / 40 points (measured before the fix, same settings as below).

Grids are small (10-20 RK4 points: the RK4 sweep resolves the first modes to O(ds^4)), each grid
is compiled once and shared by every scheme (schemes are array leaves).
"""

import math
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import jaxrod
from jaxrod.models.cosserat import CosseratState
from jaxrod.scenes import get_scene
from jaxrod.integrate.schemes import DifferenceFormula

FAST = jaxrod.NewtonSolver(rtol=1e-10, atol=1e-10, max_steps=25, reuse_jacobian=True)
DT = 0.005
N_STEPS = 200  # 1 s, as in Table 3

#: Table 3, RK4 column (tau at dt = 5 ms, 150 points), and the linear 8.9 Hz oscillator's
#: prediction for each scheme (spec sec. 5.6).
TABLE3_RK4 = {"backward_euler": 0.13, "bdf2": 3.88, "bdf_alpha(-0.2)": 7.63}
SCHEMES = {
    "backward_euler": DifferenceFormula.backward_euler(),
    "bdf2": DifferenceFormula.bdf2(),
    "bdf_alpha(-0.2)": DifferenceFormula.bdf_alpha(-0.2),
    "bdf3": DifferenceFormula.bdf3(),
    "trapezoid": DifferenceFormula.trapezoid(),
    "bdf_alpha(-0.48)": DifferenceFormula.bdf_alpha(-0.48),
}


def fitted_tau(times, energy, t_min=0.2):
    """Position time constant from E(t) - E_eq = E0 exp(-2 t / tau) (spec sec. 5.2)."""
    sel = (times >= t_min) & (energy > 0)
    slope = np.polyfit(times[sel], np.log(energy[sel]), 1)[0]
    return -2.0 / slope


def principal_root(formula: DifferenceFormula, omega_dt: float) -> float:
    """|r| of the principal root of the formula applied to y' = i omega y (one step dt)."""
    g, d1 = np.asarray(formula.gammas, float), float(formula.d1)
    # y_i (g0 - i w dt) + g1 y_{i-1} + g2 y_{i-2} + g3 y_{i-3} + d1 (i w dt) y_{i-1} ... with the
    # derivative history y'_{i-1} = i w y_{i-1}:  (g0 - iwdt) r^3 + (g1 + d1 iwdt) r^2 + g2 r + g3 = 0
    z = 1j * omega_dt
    roots = np.roots([g[0] - z, g[1] + d1 * z, g[2], g[3]])
    return float(np.max(np.abs(roots)))


class Benchmark:
    """Till's benchmark (0.5 N tip load released, no physical damping) on an RK4 grid: one compiled
    program per grid (200 steps per call), run for every scheme and chained for long runs."""

    def __init__(self, n_points):
        sc = get_scene("till-benchmark", n_points=n_points, integrator="rk4")
        self.scene, self.model = sc, sc.model
        eq_model = eqx.tree_at(lambda m: m.tip_force, self.model, jnp.zeros(3))
        eq, _ = jaxrod.solve_static(eq_model)
        self.e_eq = float(eq_model.energy(eq.y, eq.w))
        st, _ = jaxrod.solve_static(self.model)
        # explicit rest-history carrier: the same pytree structure as Trajectory.final, so chained
        # calls reuse the program (the carrier layout does not depend on the formula)
        carrier = DifferenceFormula.bdf2().init(st.grid_variables)
        self.state0 = CosseratState(st.y, st.w, st.base_loads, carrier, st.w_stages)
        self._runs = {}

    def run(self, name, n_calls=1):
        """``(trajectories, times (T,), E - E_eq (T,))`` of ``n_calls`` chained 200-step calls."""
        key = (name, n_calls)
        if key not in self._runs:
            state, trs, t0 = self.state0, [], 0.0
            for _ in range(n_calls):
                tr = jaxrod.simulate(self.model, dt=DT, n_steps=N_STEPS, scheme=SCHEMES[name], state0=state,
                                     t0=t0, solver=FAST, throw=False)
                trs.append(tr)
                state, t0 = tr.final, t0 + N_STEPS * DT
            times = np.concatenate([np.asarray(trs[0].times[:1])] + [np.asarray(tr.times[1:]) for tr in trs])
            q = jnp.concatenate([trs[0].q[:1]] + [tr.q[1:] for tr in trs])
            v = jnp.concatenate([trs[0].v[:1]] + [tr.v[1:] for tr in trs])
            energy = np.asarray(jax.vmap(self.model.energy)(q, v)) - self.e_eq
            self._runs[key] = (trs, times, energy)
        return self._runs[key]


@pytest.fixture(scope="module")
def grids():
    return {n: Benchmark(n) for n in (10, 20)}


def all_converged(trs, n_steps=None):
    conv = np.concatenate([np.asarray(tr.stats.converged) for tr in trs])
    return bool(np.all(conv[:n_steps]))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TABLE3_RK4))
def test_numerical_damping_is_grid_independent_and_matches_table3(grids, name):
    """tau at 10 and 20 RK4 points within 3% of Table 3 (RK4, 150 points) and of the linear
    oscillator's prediction, and of each other within 1% (backward Euler 4%): the numerical
    damping comes from the time scheme only (the paper: "neither the Kirchhoff assumption nor
    the spatial method noticeably changes the numerical damping").
    Before the stage histories, BDF2 gave tau = -349 s (10 points) and 5.0 s (20 points)."""
    taus = {}
    for n, bench in grids.items():
        trs, t, energy = bench.run(name)
        assert all_converged(trs), (name, n)
        taus[n] = fitted_tau(t, energy)
    # the linear 8.9 Hz oscillator with the same scheme (spec sec. 5.6): an independent prediction
    omega = 2 * math.pi * grids[20].scene.reference["first_mode_hz"]
    tau_linear = -DT / math.log(principal_root(SCHEMES[name], omega * DT))
    print(f"tau {name}: {taus} (linear {tau_linear:.4g}, Table 3 {TABLE3_RK4[name]})")
    for n, tau in taus.items():
        # within 3% or the rounding of the printed value (0.13 s has two digits)
        assert tau == pytest.approx(TABLE3_RK4[name], rel=0.03, abs=0.005), (n, tau)
        assert tau == pytest.approx(tau_linear, rel=0.03), (n, tau, tau_linear)
    # backward Euler's energy falls by e^-12 between 0.2 and 1 s, so its fit reaches the level of
    # the grid's energy-quadrature error (measured 0.1345 / 0.1307 s at 10 / 20 points); the
    # low-damping schemes agree across grids to 0.1-0.2% (measured)
    assert taus[10] == pytest.approx(taus[20], rel=0.04 if name == "backward_euler" else 0.01), taus


@pytest.mark.slow
def test_bdf3_is_unstable_at_5ms(grids):
    """BDF3 is not A-stable: at dt = 5 ms the principal roots of the first two bending modes
    (8.9 Hz, 55.7 Hz) lie outside the unit circle (spec sec. 5.6; Table 3: "Unstable"); the first
    mode alone makes the energy grow by |r1|^(2 n). Asserted over the first 0.5 s, in which every
    step converges (the growth is the scheme's, not a solver failure)."""
    trs, t, energy = grids[20].run("bdf3")
    n = 100  # 0.5 s
    assert all_converged(trs, n)
    omega = 2 * math.pi * grids[20].scene.reference["first_mode_hz"]
    r1 = principal_root(SCHEMES["bdf3"], omega * DT)
    growth_mode1 = r1 ** (2 * 80)  # energy factor of the first mode from the first to the last 0.1 s
    early, late = energy[(t > 0.0) & (t <= 0.1)].mean(), energy[(t > 0.4) & (t <= 0.5)].mean()
    print(f"BDF3 energy growth 0.4-0.5 s over 0-0.1 s: {late / early:.4g} (first mode alone {growth_mode1:.4g})")
    assert growth_mode1 > 1.2
    assert late / early > growth_mode1
    # the same measure shows decay for a stable scheme on the same program
    _, tb, eb = grids[20].run("bdf2")
    assert eb[(tb > 0.4) & (tb <= 0.5)].mean() < eb[(tb > 0.0) & (tb <= 0.1)].mean()


@pytest.mark.slow
def test_trapezoid_rk4_conserves_energy(grids):
    """Undamped rod, trapezoid rule (no numerical damping), RK4 sweep, 20 points, dt = 5 ms, 2 s
    (18 periods of the 8.9 Hz mode): the energy neither grows nor decays. The discrete energy
    ripples within a period, so two-period windows are compared (measured: within 5e-5 of the
    first window; before the stage histories the same run gained +31% in 2 s, +260% at 10 points).

    The trapezoid rule damps nothing, so any grid-scale mode of the shooting discretisation that
    is not exactly neutral grows from round-off: at 20 points one appears after ~2.7 s (x5.6 per
    two periods, the shooting fails at step 832 = 4.2 s), at 10 points after ~0.7 s (fails at
    step 181); explicit-Euler sweeps, which have no stage points, fail the same way at 10 and 20
    points within 2 s. Long near-conservative runs: BDF-alpha(-0.48) (next test)."""
    trs, t, energy = grids[20].run("trapezoid", n_calls=2)
    assert all_converged(trs)
    period = 1.0 / grids[20].scene.reference["first_mode_hz"]
    n_windows = int(t[-1] / (2 * period))
    means = np.array([energy[(t > 2 * k * period) & (t <= 2 * (k + 1) * period)].mean() for k in range(n_windows)])
    drifts = means / means[0] - 1
    print(f"trapezoid RK4 20 points, 2 s: two-period window drift max |.| {np.max(np.abs(drifts)):.3e}, "
          f"last {drifts[-1]:+.3e}")
    assert np.max(np.abs(drifts)) < 2e-4, drifts


@pytest.mark.slow
def test_bdf_alpha_048_long_run_loses_energy_at_the_predicted_rate(grids):
    """BDF-alpha(-0.48), 20 RK4 points, 5 s (44 periods): the numerical damping of the 8.9 Hz mode
    is the linear oscillator's (tau = 164.7 s; Table 3: Euler 161.8 s, RK4 201.6 s) and nothing
    grows (its damping of large omega dt removes the grid-scale modes the trapezoid rule keeps)."""
    trs, t, energy = grids[20].run("bdf_alpha(-0.48)", n_calls=5)
    assert all_converged(trs)
    omega = 2 * math.pi * grids[20].scene.reference["first_mode_hz"]
    tau_linear = -DT / math.log(principal_root(SCHEMES["bdf_alpha(-0.48)"], omega * DT))
    tau = fitted_tau(t, energy, t_min=1.0)  # after the second mode has decayed
    print(f"BDF-alpha(-0.48) RK4 20 points, 5 s: tau {tau:.4g} s (linear {tau_linear:.4g} s)")
    assert tau == pytest.approx(tau_linear, rel=0.05)


# ---- impulse near the base against Euler-Bernoulli modal superposition ---------------------------------
def cantilever_modes(L, n_modes):
    """Clamped-free Euler-Bernoulli modes: wavenumbers beta_k [1/m] (roots of 1 + cos cosh = 0) and
    the shapes phi_k(x) = cosh - cos - sigma (sinh - sin) (normalised: int phi^2 = L, phi(L) = +-2)."""
    f = lambda b: 1.0 + math.cos(b) * math.cosh(b)  # noqa: E731
    beta = np.array([brentq(f, (k + 0.5) * math.pi - 0.9, (k + 0.5) * math.pi + 0.9) for k in range(n_modes)])
    beta = beta / L

    def shape(x):
        b, bL = beta, beta * L
        sig = (np.cosh(bL) + np.cos(bL)) / (np.sinh(bL) + np.sin(bL))
        return np.cosh(b * x) - np.cos(b * x) - sig * (np.sinh(b * x) - np.sin(b * x))

    return beta, shape


def modal_tip_response(formula, dt, n_steps, EI, rhoA, L, a, force):
    """Tip deflection of a linear cantilever under a transverse point force ``force(t)`` [N] at
    ``s = a``, by 10 modes, each stepped with the same difference formula as the rod: the modal
    displacement eta and velocity nu both obey ``x_t = c0 x + x^h`` (in the shooting model the
    strains and the velocities do), ``nu = eta_t``, ``nu_t = -omega^2 eta + phi(a) F / (rho A L)``."""
    beta, shape = cantilever_modes(L, 10)
    omega2 = EI / rhoA * beta**4
    phi_a, phi_L = shape(a), shape(L)
    c0 = float(formula.c0(dt))
    carrier = formula.init((np.zeros(10), np.zeros(10)))
    tips = [0.0]
    for i in range(1, n_steps + 1):
        eta_h, nu_h = (np.asarray(x) for x in formula.history(carrier, dt))
        f = phi_a * force(i * dt) / (rhoA * L)
        eta = (f - c0 * eta_h - nu_h) / (c0**2 + omega2)
        nu = c0 * eta + eta_h
        carrier = formula.advance(carrier, (eta, nu), (eta_h, nu_h), dt)
        tips.append(float(phi_L @ eta))
    return np.array(tips)


@pytest.mark.slow
def test_impulse_near_base_matches_modal_superposition():
    """Till's impulse (5 N hat over 16 ms at s = 45.8 mm, L = 0.517 m, BDF-alpha(-0.4), dt 4 ms):
    simple shooting fails at the first step; three segments converge at every step, and the tip
    deflection follows 10-mode Euler-Bernoulli superposition stepped by the same formula (no
    drag here; gravity sag 5% of L, geometric nonlinearity ~(4 cm / L)^2). Measured agreement:
    3.3% of the amplitude (24.7 mm) at most over 0.24 s; a 5% change of EI moves the reference
    by 23%."""
    kw = dict(n_points=31, segments=3)
    sc1 = get_scene("till-impulse", n_points=31, integrator="euler", segments=1)
    tr1 = jaxrod.simulate(sc1.model, dt=0.004, n_steps=10, scheme=sc1.scheme, throw=False)
    assert not bool(np.all(tr1.stats.converged))
    sc = get_scene("till-impulse", integrator="rk4", **kw)
    model = eqx.tree_at(lambda m: m.rod.drag, sc.model, jnp.zeros(3))
    dt, n = 0.004, 60
    tr = jaxrod.simulate(model, dt=dt, n_steps=n, scheme=sc.scheme, solver=FAST)
    x = np.asarray(tr.tip[:, 0] - tr.tip[0, 0])
    load = model.point_loads[0]
    rod = model.rod
    args = (sc.scheme, dt, n, float(rod.bending_stiffness), float(rod.mass_per_length), rod.length, load.s)
    force = lambda t: float(load.force[0]) * float(load.profile(t))  # noqa: E731
    ref = modal_tip_response(*args, force)
    amp = np.abs(ref).max()
    assert 0.01 < amp < 0.2
    err = np.abs(x - ref).max() / amp
    print(f"impulse: max |x - modal| / max |modal| = {err:.4f}, amplitude {amp * 1e3:.2f} mm")
    assert err < 0.05, err  # measured 3.3% of the amplitude over 0.24 s
    # the comparison can fail: 5% stiffer beam theory is 23% of the amplitude off
    args_stiff = (*args[:3], 1.05 * args[3], *args[4:])
    assert np.abs(modal_tip_response(*args_stiff, force) - ref).max() / amp > 0.15


# ---- weight-release calibration from a finer data model -----------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("JAXROD_LONG_TESTS"),
    reason="full default weight-release fit (40-point RK4 fit model, 100-point data model, 0.6 s at 1 ms): "
    "tens of CPU minutes; run with JAXROD_LONG_TESTS=1",
)
def test_weight_release_fit_from_finer_data_recovers_drag():
    """Default settings of jaxrod.cases.weight_release: SYNTHETIC data from the 100-point RK4 model
    at the Table 5 values (0.1 mm noise), fitted with the default 40-point RK4 model from 30% off.
    The drag C is the parameter the amplitude decay alone determines, so it is the one a
    grid-dependent numerical damping biases (before the stage histories: C +35%, EI -0.07%,
    rho -0.10%). Asserted: all three within 5% of the truth."""
    from jaxrod.cases import weight_release as wr

    res = wr.run(wr.WeightReleaseSettings(), plot=False, identifiability=False, verbose=False)
    assert res.tracks.synthetic and res.settings.data_n_points > res.settings.n_points
    for name in ("EI", "rho", "C"):
        assert abs(res.relative_errors[name]) < 0.05, (name, res.relative_errors)


def test_history_carrier_must_cover_the_stage_points():
    """A carrier built over the node grid only (the layout before stage histories) is refused with
    a message that says what to pass; a state without stage values cannot start a run."""
    from jaxrod.models.cosserat import CosseratModel, CosseratRod

    rod = CosseratRod.circular(0.4, 1e-3, youngs_modulus=207e9, density=8000.0)
    model = CosseratModel(rod, n_points=5, integrator="rk4")
    st, _ = jaxrod.solve_static(model)
    assert st.w_stages.shape == (4, 3, 12)
    old = CosseratState(st.y, st.w, st.base_loads, DifferenceFormula.bdf2().init(st.w), st.w_stages)
    with pytest.raises(ValueError, match=r"grid_variables = \(w, w_stages\)"):
        jaxrod.simulate(model, dt=0.01, n_steps=2, state0=old)
    with pytest.raises(ValueError, match="w_stages is None"):
        jaxrod.simulate(model, dt=0.01, n_steps=2, state0=CosseratState(st.y, st.w, st.base_loads))
