"""Continuum Stewart-Gough platform (Till et al. 2019 sec. 5.1, spec 7.1): statics against a hand
calculation and against a single cantilever of our shooting model, inverse kinematics round trip,
the plate's force and moment balance (eqs. 15-16) at every step recomputed from the leg end
loads, quasi-static tracking at slow actuation, the symmetric motion, and the stability
change along the paper's path (sign change of the static Jacobian's determinant).

The paper's discretisation (200 Euler points per leg: compile time does not grow with the
points, and the stability change sits where the paper shows it only at this resolution), short
runs; one compiled program each for the static solve (every length profile with 13 samples), the
inverse kinematics, the Jacobian and the time loop, called with new arrays.
"""

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod

from jaxrod.geometry import quat_to_rotation
from jaxrod.models.cosserat import CosseratModel, solve_static_cosserat
from jaxrod.models.cosserat.parallel import (
    LegLengths,
    StewartGough,
    solve_inverse_static,
    solve_static_parallel,
    static_state_from,
    stewart_gough_pattern,
)
from jaxrod.integrate.schemes import DifferenceFormula

N_POINTS = 200
DT = 1.0 / 120.0
N_STEPS = 48
L_HOME = 0.50424  # leg length that holds the level plate at z = 0.5 m (inverse statics: 0.504241)


def _robot(times, values, **kw):
    return StewartGough.paper(LegLengths(times, values), n_points=N_POINTS, **kw)


def _fixed(lengths, **kw):
    """The robot with fixed ``lengths (6,)`` [m], given as a 13-sample :class:`LegLengths` (as
    :func:`_ramp`'s profiles): every static solve of this file then has the same shapes and
    shares one compiled program (a 1-sample profile would compile another)."""
    return _robot(*_ramp(lengths, lengths, 1.0), **kw)


def _ramp(L0, L1, t_end, n=13):
    """``(times, values)``: smooth (cosine) change from ``L0`` to ``L1`` over ``[0, t_end]``;
    always ``n`` samples, so every profile has the same shapes (one compiled program)."""
    times = np.linspace(0.0, t_end, n)
    s = 0.5 - 0.5 * np.cos(np.pi * times / t_end)
    return times, np.asarray(L0)[None] + s[:, None] * (np.asarray(L1) - np.asarray(L0))[None]


def _static(robot, t, guess=None):
    state, res = solve_static_parallel(robot, t=t, guess=guess)
    assert bool(res.converged)
    return state


@pytest.fixture(scope="module")
def home():
    """Equal legs at the home length: static state."""
    robot = _fixed(np.full(6, L_HOME))
    return robot, _static(robot, 0.0)


def test_hole_pattern_matches_the_authors_angles():
    base, plate = stewart_gough_pattern(0.087, 100.0)
    ang = lambda p: np.sort(np.round(np.degrees(np.arctan2(p[:, 1], p[:, 0])) % 360, 9))
    np.testing.assert_allclose(ang(base), [10, 110, 130, 230, 250, 350])
    np.testing.assert_allclose(ang(plate), [50, 70, 170, 190, 290, 310])
    np.testing.assert_allclose(np.linalg.norm(base, axis=1), 0.087)


def test_symmetric_statics_centred_level_and_height_of_guided_beams(home):
    """Equal legs: by the pattern's D3 symmetry (with mirror planes) the plate stays centred,
    level and untwisted. Each leg is a guided beam (both ends vertical) whose end is offset by
    the chord d = 2 R sin 20 deg between its holes, so linear beam theory (S-curve
    w = d (3 x^2 - 2 x^3)) gives the height h = L - (3/5) d^2 / L; the plate weight shortens a leg
    by only m g L / (6 E A) ~ 1e-7 m."""
    robot, state = home
    p, R = np.asarray(state.plate_position), np.asarray(state.plate_rotation)
    assert np.abs(p[:2]).max() < 1e-12
    np.testing.assert_allclose(R, np.eye(3), atol=1e-12)
    d = 2 * 0.087 * np.sin(np.radians(20.0))
    drop_hand = 0.6 * d**2 / L_HOME  # 4.21 mm
    drop = L_HOME - p[2]
    # measured: drop 4.260 mm with 16 Euler points; the linear theory neglects O(slope^2) ~ 3 %
    assert abs(drop - drop_hand) < 0.03 * drop_hand, (drop, drop_hand)


def test_leg_equals_single_cantilever_with_its_end_loads(home):
    """A leg of the robot (grid over its actual length L_i, integrated in the normalised arc
    length) against a plain CosseratModel cantilever of length L_i with the same grid, loaded at
    the tip by the leg's end force and moment: same end pose to solver tolerance. Unequal legs
    and an external plate force F_e, so the plate is tilted and shifted; the legs' end forces
    then carry F_e + m g (eq. 15 at rest)."""
    robot0, st0 = home
    L = np.array([0.49, 0.5, 0.52, 0.51, 0.505, 0.5])
    F_e = np.array([0.05, -0.02, 0.1])
    robot = _fixed(L, plate_force=F_e)
    state = _static(robot, 0.0, guess=st0.unknowns)
    p, R = np.asarray(state.plate_position), np.asarray(state.plate_rotation)
    assert np.degrees(np.arccos(R[2, 2])) > 0.5  # the plate really is tilted
    weight = 0.0921 * np.array([0.0, 0.0, -9.81])
    np.testing.assert_allclose(np.asarray(state.legs[:, -1, 7:10]).sum(0), F_e + weight, atol=1e-9)
    for i in (0, 2):
        y = state.legs[i]
        rod = robot.leg.rod
        single = CosseratModel(
            type(rod).circular(float(L[i]), 1e-3, youngs_modulus=207e9, shear_modulus=207e9 / 2.6, density=8000.0),
            n_points=N_POINTS, integrator="euler", gravity=(0.0, 0.0, -9.81), base_position=robot.base_points[i],
            tip_force=y[-1, 7:10], tip_moment=y[-1, 10:13],
        )
        s, _ = solve_static_cosserat(single, guess=single.unknowns_from_grid(None, state.unknowns[1][i] * jnp.array(
            [(0.5 / L[i]) ** 2] * 3 + [0.5 / L[i]] * 3)))
        tip = np.asarray(s.y[-1])
        np.testing.assert_allclose(tip[0:3], p + R @ np.asarray(robot.plate_points[i]), atol=1e-10)
        np.testing.assert_allclose(np.asarray(quat_to_rotation(tip[3:7])), R, atol=1e-9)


def _run(times, values, state0):
    robot = _robot(times, values)
    return robot, jaxrod.simulate(robot, dt=DT, n_steps=N_STEPS, state0=state0)


def _bdf_alpha_rates(x, dt, alpha=-0.2):
    """Reference BDF-alpha derivative of a sampled history ``x (T, ...)`` (rest before t0),
    written out here independently of jaxrod.integrate.schemes."""
    c0 = (1.5 + alpha) / (dt * (1 + alpha))
    c1 = -2.0 / dt
    c2 = (0.5 + alpha) / (dt * (1 + alpha))
    d1 = alpha / (1 + alpha)
    xd = np.zeros_like(x)
    for n in range(1, len(x)):
        xd[n] = c0 * x[n] + c1 * x[n - 1] + c2 * x[max(n - 2, 0)] + d1 * xd[n - 1]
    return xd


@pytest.fixture(scope="module")
def pushed(home):
    """Mirror pair (0, 1) lengthened by 6 mm in 0.1 s: a fast, asymmetric actuation (the plate
    moves 24 mm along -x)."""
    _, st0 = home
    L0 = np.full(6, L_HOME)
    L1 = L0 + np.array([6e-3, 6e-3, 0, 0, 0, 0])
    times, values = _ramp(L0, L1, 0.1)
    return _run(times, values, st0)


def test_plate_force_and_moment_balance_every_step(pushed):
    """Eqs. 15-16 from the recorded leg end loads n_i(L_i), m_i(L_i) and the plate pose, with the
    plate's acceleration and angular velocity/acceleration recomputed from its recorded history
    by the BDF-alpha(-0.2) formula; and the attachment conditions eq. 13-14."""
    robot, tr = pushed
    m, J, g = 0.0921, np.array([1.91e-4, 1.91e-4, 3.81e-4]), np.array([0.0, 0.0, -9.81])
    p, R = np.asarray(tr.plate_position), np.asarray(tr.plate_rotation)
    nL, mL = np.asarray(tr.tip_force), np.asarray(tr.tip_moment)
    a = _bdf_alpha_rates(_bdf_alpha_rates(p, DT), DT)
    Rdot = _bdf_alpha_rates(R, DT)
    W = np.einsum("tij,tkj->tik", Rdot, R)
    w = 0.5 * np.stack([W[:, 2, 1] - W[:, 1, 2], W[:, 0, 2] - W[:, 2, 0], W[:, 1, 0] - W[:, 0, 1]], axis=1)
    wt = _bdf_alpha_rates(w, DT)
    r = np.einsum("tij,kj->tki", R, np.asarray(robot.plate_points))
    Jg = np.einsum("tij,j,tkj->tik", R, J, R)
    EF = m * g - nL.sum(1) - m * a
    EM = -(mL + np.cross(r, nL)).sum(1) - np.einsum("tij,tj->ti", Jg, wt) - np.cross(w, np.einsum("tij,tj->ti", Jg, w))
    assert np.abs(m * a).max() > 0.02 * m * 9.81  # the plate really accelerates
    assert np.abs(EF).max() < 1e-9, np.abs(EF).max()  # N (loads ~1 N)
    assert np.abs(EM).max() < 1e-9, np.abs(EM).max()  # N m
    tips = np.asarray(tr.q[:, :, -1, 0:3])
    np.testing.assert_allclose(tips, p[:, None] + r, atol=1e-10)
    RL = np.asarray(quat_to_rotation(tr.q[:, :, -1, 3:7]))
    np.testing.assert_allclose(RL, np.broadcast_to(R[:, None], RL.shape), atol=1e-9)


def test_slow_actuation_tracks_quasi_static_fast_does_not(home, pushed):
    """The same 6 mm change of legs 0, 1 (plate moves 24 mm) over 0.4 s (slow) and over 0.1 s
    then held (fast). At every 12th frame the dynamic plate is compared with the forward static
    solution at that instant's lengths."""
    _, st0 = home
    L0 = np.full(6, L_HOME)
    L1 = L0 + np.array([6e-3, 6e-3, 0, 0, 0, 0])
    robot_slow, slow = _run(*_ramp(L0, L1, 0.4), st0)

    def lag(robot, tr):
        errs, span = [], []
        guess = st0.unknowns
        for k in range(0, N_STEPS + 1, 12):
            st = _static(robot, float(tr.times[k]), guess)
            guess = st.unknowns
            errs.append(np.linalg.norm(np.asarray(tr.plate_position[k] - st.plate_position)))
            span.append(np.linalg.norm(np.asarray(st.plate_position - st0.plate_position)))
        return max(errs), max(span)

    e_slow, span = lag(robot_slow, slow)
    e_fast, _ = lag(*pushed)
    assert span > 1e-3  # the plate moves by millimetres
    # measured: slow 41 um = 0.17 % of the 24.5 mm motion, fast 0.64 mm = 2.6 %
    assert e_slow < 0.005 * span, (e_slow, span)
    assert e_fast > 5.0 * e_slow, (e_fast, e_slow)


def test_equal_extension_stays_centred_and_level(home):
    """All legs extended equally: the plate rises, centred, level and untwisted at every step,
    and ends (after the ramp, nearly at rest) at the static height of the new lengths."""
    _, st0 = home
    times, values = _ramp(np.full(6, L_HOME), np.full(6, L_HOME + 0.01), 0.25)
    robot, tr = _run(times, values, st0)
    p, R = np.asarray(tr.plate_position), np.asarray(tr.plate_rotation)
    assert np.abs(p[:, :2]).max() < 1e-12
    np.testing.assert_allclose(R, np.broadcast_to(np.eye(3), R.shape), atol=1e-12)
    rise = p[:, 2] - p[0, 2]
    assert rise[-1] > 9e-3
    st = _static(robot, float(tr.times[-1]), st0.unknowns)
    assert abs(p[-1, 2] - float(st.plate_position[2])) < 0.05 * rise[-1]


@pytest.fixture(scope="module")
def path(home):
    """Inverse statics along the authors' path: level plate from (0, 0, 0.5) to (-0.2, 0, 0.5) m
    in 1 cm steps (each solve starts from the previous)."""
    robot, _ = home
    P = np.linspace([0.0, 0.0, 0.5], [-0.2, 0.0, 0.5], 21)
    lengths, loads, conv = solve_inverse_static(robot, P)
    assert bool(np.all(conv))
    return P, np.asarray(lengths), loads


def test_inverse_kinematics_round_trip(home, path):
    """The forward static solve with the inverse-statics lengths of a pose puts the plate back
    there, level; the mirror pairs (0, 1), (2, 5), (3, 4) get equal lengths."""
    _, st0 = home
    P, lengths, _ = path
    k = 10  # x = -0.1 m
    moved = _fixed(lengths[k])
    state = _static(moved, 0.0, guess=st0.unknowns)
    np.testing.assert_allclose(np.asarray(state.plate_position), P[k], atol=1e-10)
    np.testing.assert_allclose(np.asarray(state.plate_rotation), np.eye(3), atol=1e-9)
    L = lengths[k]
    np.testing.assert_allclose(L[[1, 5, 4]], L[[0, 2, 3]], rtol=1e-9)
    assert L[0] - L[2] > 5e-3  # the legs on the -x side... really differ from the others
    # the pose and base loads of the inverse statics, evaluated at rest without a solve (the
    # stewart-gough scene's start state), are that forward static state
    plate = np.concatenate([P[k] / moved.reference_length, np.zeros(3)])
    direct = static_state_from(moved, (plate, path[2][k]))
    np.testing.assert_allclose(np.asarray(direct.legs), np.asarray(state.legs), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(direct.unknowns[1]), np.asarray(state.unknowns[1]), rtol=0, atol=1e-9)


def test_static_jacobian_changes_sign_along_path(home, path):
    """Stability transition (sec. 5.1): along the path the forward static Jacobian (plate pose
    and base loads free, lengths fixed) on the inverse-statics branch keeps the sign of its
    determinant up to x = -0.19 m and flips it by -0.20 m: an eigenvalue crosses zero and the
    straight-line branch stops being the stable one (the dynamic run of the stewart-gough scene
    leaves the line as the actuation ends: tilt > 2 deg at x = -0.2035 m, up to 17 deg, see
    benchmarks/robots_parallel.py). The smallest |eigenvalue| dips towards the crossing.
    (With RK4 the crossing moves to x ~ -0.215 m: 200 Euler points err by ~0.3 % in the lengths.)"""
    robot, _ = home
    P, lengths, loads = path
    ell = robot.reference_length

    @jax.jit
    def sign_and_smallest(L, p, ld):
        r = StewartGough.paper(L, n_points=N_POINTS)
        x0 = (jnp.concatenate([p / ell, jnp.zeros(3)]), ld)
        flat, unravel = jax.flatten_util.ravel_pytree(x0)
        J = jax.jacfwd(lambda z: jax.flatten_util.ravel_pytree(r.static_residual(unravel(z)))[0])(flat)
        return jnp.linalg.slogdet(J)[0], jnp.min(jnp.abs(jnp.linalg.eigvals(J)))

    out = [sign_and_smallest(lengths[k], jnp.asarray(P[k]), loads[k]) for k in (0, 10, 17, 18, 19, 20)]
    signs = [float(s) for s, _ in out]
    smallest = [float(e) for _, e in out]
    assert signs[:5] == [signs[0]] * 5 and signs[5] == -signs[0], signs
    # measured: 5.5e-4 at x = 0, 1.6e-3 at -0.18, 4.6e-4 at -0.20
    assert smallest[5] < 0.5 * smallest[3], smallest


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="LegLengths.times must be strictly increasing"):
        LegLengths([0.0, 0.0], np.full((2, 6), 0.5))
    with pytest.raises(ValueError, match="LegLengths.values"):
        LegLengths([0.0, 1.0], np.full((2, 5), 0.5))
    with pytest.raises(ValueError, match="major_angle_deg"):
        stewart_gough_pattern(0.087, 130.0)
    r = StewartGough.paper(np.full(6, 0.5), n_points=N_POINTS)
    with pytest.raises(ValueError, match="plate_mass"):
        StewartGough(r.leg, r.base_points, r.plate_points, -1.0, r.plate_inertia, r.lengths)
    with pytest.raises(ValueError, match="base_points"):
        StewartGough(r.leg, r.base_points[:5], r.plate_points, 0.1, r.plate_inertia, r.lengths)
