"""Joints beyond the hinge (jaxrod.system.joints): prismatic slider-crank, universal-joint
driveshaft, planar joint, joint limits, prescribed motion and its reported force, redundant
constraints, static solves with joints, and the schemes that start from a consistent acceleration.

One module-scoped simulation carries several independent mechanisms side by side (one compiled
program); expected values come from closed forms evaluated here with numpy."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.system import (
    MultibodySystem,
    Planar,
    PrescribedAngle,
    PrescribedDisplacement,
    Prismatic,
    RedundantConstraintWarning,
    Revolute,
    RigidBody,
    SampledTrajectory,
    Universal,
)

SOLVER = jaxrod.NewtonSolver(rtol=0.0, atol=1e-12)
G = 9.81
Y = np.array([0.0, 1.0, 0.0])
DT, STEPS = 0.005, 200  # 1 s


def _rotations(traj):
    return np.swapaxes(np.asarray(traj.frames), -1, -2)


def _solve(f, lo, hi):
    """Root of the scalar ``f`` in ``[lo, hi]`` by bisection (f(lo), f(hi) of opposite signs)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.sign(f(mid)) == np.sign(f(lo)) else (lo, mid)
    return 0.5 * (lo + hi)


# ------------------------------------------------------------ mechanisms in one system
CRANK_R, ROD_L, CRANK_W = 0.1, 0.3, 3.5          # slider-crank: crank radius, rod length [m], rad/s
BETA, SHAFT_W = np.radians(30.0), 1.5            # driveshaft angle, input rate [rad/s]
PEND_L, PEND_M, PEND_IC = 0.5, 1.2, 0.02         # prescribed-x pendulum: COM distance, mass, I about COM
X_AMP, X_W = 0.1, 3.0                            # its COM x(t) = X_AMP (1 - cos X_W t)
LIM_UPPER, LIM_K, LIM_W0 = 0.3, 4000.0, 3.0       # limited pendulum: stop [rad], N m/rad, initial rate
SL_M, SL_K, SL_UPPER, SL_KLIM, SL_V0 = 0.5, 20.0, 0.05, 5000.0, 0.8   # limited slider
DAMP_C = 0.5                                     # damped slider [N s/m]: damping ratio 0.079


class _Ramp(eqx.Module):
    """``t -> rate t`` with ``rate`` an array leaf: the two driven joints share one joint group
    (two plain lambdas would be two static configurations, two traced groups)."""

    rate: jax.Array

    def __call__(self, t):
        return self.rate * t


class _Constant(eqx.Module):
    """``t -> value`` (a motor torque as an array leaf)."""

    value: jax.Array

    def __call__(self, t):
        return self.value


def _bar(name, mass, center):
    return RigidBody(name, mass, np.full(3, mass * 0.01), position=center)


def _build():
    y = [0.0, 1.0, 0.0]
    bodies, joints = [], []
    # slider-crank in the xz-plane at y = 0: crank about y at the origin, pin B, rod to slider C
    # on the x axis. Four revolutes + one prismatic: 3 redundant rows (a planar loop of
    # 3D joints), dropped at assembly. The crank angle is prescribed: theta(t) = CRANK_W t
    # about +y (x -> -z), crank pin B = r (cos th, 0, -sin th).
    B = np.array([CRANK_R, 0.0, 0.0])
    C = np.array([CRANK_R + ROD_L, 0.0, 0.0])
    bodies += [_bar("crank", 0.2, B / 2), _bar("rod", 0.3, (B + C) / 2), _bar("slider", 0.5, C)]
    joints += [Revolute(None, "crank", point=[0, 0, 0], axis=y),
               PrescribedAngle(None, "crank", point=[0, 0, 0], axis=y, trajectory=_Ramp(jnp.asarray(CRANK_W))),
               Revolute("crank", "rod", point=B, axis=y),
               Revolute("rod", "slider", point=C, axis=y),
               Prismatic(None, "slider", point=C, axis=[1, 0, 0])]
    # driveshaft at y = 2: input shaft along x, output along d2 = (cos b, sin b, 0), each on a
    # revolute (with the cross's point: 3 more redundant rows); the cross: axis1 = e_y on the
    # input (in the shafts' plane), axis2 = e_z on the output. The input angle is prescribed.
    O = np.array([0.0, 2.0, 0.0])
    d2 = np.array([np.cos(BETA), np.sin(BETA), 0.0])
    bodies += [_bar("in", 1.0, O - [0.5, 0, 0]), _bar("out", 1.0, O + 0.5 * d2)]
    joints += [Revolute(None, "in", point=O - [0.5, 0, 0], axis=[1, 0, 0]),
               PrescribedAngle(None, "in", point=O, axis=[1, 0, 0], trajectory=_Ramp(jnp.asarray(SHAFT_W))),
               Universal("in", "out", point=O, axis1=[0, 1, 0], axis2=[0, 0, 1]),
               Revolute(None, "out", point=O + 0.5 * d2, axis=d2)]
    # pendulum at y = 4 whose COM x follows sampled data (the TMTDyn sleeve's drive)
    P = np.array([0.0, 4.0, 0.0])
    ts = np.linspace(0.0, DT * STEPS, 201)
    data = SampledTrajectory(ts, X_AMP * (1 - np.cos(X_W * ts)))
    bodies.append(RigidBody("pend", PEND_M, [PEND_IC, PEND_IC, PEND_IC], position=P - [0, 0, PEND_L]))
    joints += [Revolute(None, "pend", point=P, axis=y),
               PrescribedDisplacement(None, "pend", point=P - [0, 0, PEND_L], axis=[1, 0, 0], trajectory=data)]
    # pendulum at y = 6 thrown towards its upper stop; slider at y = 8 with spring and end stop
    Q = np.array([0.0, 6.0, 0.0])
    bodies.append(RigidBody("lim", 1.0, [0.01, 0.01, 0.01], position=Q - [0, 0, 1.0], velocity=[-LIM_W0, 0, 0],
                            angular_velocity=[0, LIM_W0, 0]))
    joints.append(Revolute(None, "lim", point=Q, axis=y, upper=LIM_UPPER, limit_stiffness=LIM_K))
    S = np.array([0.0, 8.0, 0.0])
    bodies.append(RigidBody("sl", SL_M, [0.01, 0.01, 0.01], position=S, velocity=[SL_V0, 0, 0]))
    joints.append(Prismatic(None, "sl", point=S, axis=[1, 0, 0], stiffness=SL_K, upper=SL_UPPER,
                            limit_stiffness=SL_KLIM))
    # a damped slider at y = 12 (spring SL_K, damper DAMP_C): the translational damper path
    D = np.array([0.0, 12.0, 0.0])
    bodies.append(RigidBody("damped", SL_M, [0.01, 0.01, 0.01], position=D, velocity=[SL_V0, 0, 0]))
    joints.append(Prismatic(None, "damped", point=D, axis=[1, 0, 0], stiffness=SL_K, damping=DAMP_C))
    # a puck on a planar joint (normal z) at y = 10: slides and spins in the plane under gravity
    bodies.append(RigidBody("puck", 0.7, [0.01, 0.02, 0.03], position=[0, 10.0, 0], velocity=[0.2, 0.1, 0],
                            angular_velocity=[0.0, 0.0, 1.0]))
    joints.append(Planar(None, "puck", point=[0, 10.0, 0], axis=[0, 0, 1]))
    return MultibodySystem(bodies, joints, gravity=[0, 0, -G])


@pytest.fixture(scope="module")
def mechanisms():
    with pytest.warns(RedundantConstraintWarning,
                      match=r"6 redundant constraint rows.*joints\[4\] \(Prismatic\) rows \[0, 1, 4\]; "
                            r"joints\[8\] \(Revolute\) rows \[1, 3, 4\]"):
        system = _build()
    traj = jaxrod.simulate(system, dt=DT, n_steps=STEPS, save_every=1, solver=SOLVER, fallback=False)
    assert bool(np.all(traj.stats.converged))
    return system, traj


def _index(system, name):
    return [b.name for b in system.bodies].index(name)


def _joint(system, kind):
    return [type(j) for j in system.joints].index(kind)


def test_redundant_rows_dropped_and_still_hold(mechanisms):
    """The slider-crank's loop (18 body coordinates, 21 rows, 0 DOF) and the driveshaft (12
    coordinates, 15 rows, 0 DOF) have 3 redundant rows each; they are dropped (multipliers zero)
    and still hold: the slider neither turns nor leaves the x axis, the output shaft's hinge
    point stays put."""
    system, traj = mechanisms
    assert len(system.redundant_rows) == 6
    mu = np.asarray(traj.q)[:, 6 * system.n_bodies:]
    assert np.all(mu[:, list(system.redundant_rows)] == 0.0)
    R = _rotations(traj)[:, _index(system, "slider")]
    assert np.max(np.abs(R - np.eye(3))) < 1e-9
    assert np.max(np.abs(np.asarray(traj.positions)[:, _index(system, "slider"), 1:])) < 1e-9
    d2 = np.array([np.cos(BETA), np.sin(BETA), 0.0])
    out = np.asarray(traj.positions)[:, _index(system, "out")]
    assert np.max(np.abs(out - (np.array([0.0, 2.0, 0.0]) + 0.5 * d2))) < 1e-9


def test_slider_crank_follows_closed_form(mechanisms):
    """Slider position x = r cos th + sqrt(l^2 - r^2 sin^2 th) over 3.5 rad of crank angle."""
    system, traj = mechanisms
    t = np.asarray(traj.times)
    th = CRANK_W * t
    x = CRANK_R * np.cos(th) + np.sqrt(ROD_L**2 - (CRANK_R * np.sin(th)) ** 2)
    pos = np.asarray(traj.positions)[:, _index(system, "slider")]
    assert np.max(np.abs(pos[:, 0] - x)) < 1e-9
    assert np.max(np.abs(pos[:, 1:])) < 1e-9
    assert np.ptp(pos[:, 0]) > 0.19  # the slider really travelled (2 r)


def test_universal_joint_output_angle(mechanisms):
    """Cardan joint: tan(phi2) = tan(phi1) / cos(beta), non-uniform output speed."""
    system, traj = mechanisms
    R = _rotations(traj)[:, _index(system, "out")]
    d2 = np.array([np.cos(BETA), np.sin(BETA), 0.0])
    ez = np.array([0.0, 0.0, 1.0])
    a2 = R @ ez  # output cross-pin axis (e_z at assembly)
    phi2 = np.unwrap(np.arctan2(a2 @ np.cross(d2, ez), a2 @ ez))
    phi1 = SHAFT_W * np.asarray(traj.times)
    expected = np.unwrap(np.arctan2(np.sin(phi1), np.cos(phi1) * np.cos(BETA)))
    assert np.max(np.abs(phi2 - expected)) < 1e-9
    assert np.max(np.abs(phi2 - phi1)) > 0.05  # the two shafts really differ (about 0.08 rad at 30 deg)


def _prescribed_pendulum_closed_form(t):
    """Closed-form horizontal drive force F and pivot reaction (Rx, Rz) on the pendulum whose
    COM x is X_AMP (1 - cos X_W t): COM p = (x, 0, -sqrt(L^2 - x^2)), angle about +y
    theta = -asin(x / L); Newton-Euler about the COM."""
    x, xd, xdd = X_AMP * (1 - np.cos(X_W * t)), X_AMP * X_W * np.sin(X_W * t), X_AMP * X_W**2 * np.cos(X_W * t)
    L = PEND_L
    s = np.sqrt(L**2 - x**2)
    z = -s
    zd = x * xd / s
    zdd = (xd**2 + x * xdd) / s + x**2 * xd**2 / s**3
    th_d = -xd / s                       # d/dt (-asin(x/L))
    th_dd = -(xdd / s + x * xd**2 / s**3)
    Rz = PEND_M * (zdd + G)
    # I th'' = (r x R)_y with r = pivot - COM = (-x, 0, -z): (r x R)_y = r_z R_x - r_x R_z
    Rx = (PEND_IC * th_dd - x * Rz) / (-z)
    F = PEND_M * xdd - Rx
    return F, Rx, Rz, zd, th_d


def test_prescribed_displacement_follows_data_and_reports_force(mechanisms):
    """The COM x follows the sampled trajectory to the Newton tolerance; the reported constraint
    force (mean of two consecutive steps' multipliers, midpoint kinematics) equals the closed-form
    m a - m g - pivot reaction, and the revolute's multiplier equals the pivot reaction."""
    system, traj = mechanisms
    k = _index(system, "pend")
    t = np.asarray(traj.times)
    x = np.asarray(traj.positions)[:, k, 0]
    data = system.joints[10].trajectory
    assert np.max(np.abs(x - np.asarray(jax.vmap(data)(jnp.asarray(t))))) < 1e-10
    assert np.max(np.abs(x - X_AMP * (1 - np.cos(X_W * t)))) < 2e-6  # spline through 201 samples
    lam = np.asarray(system.multipliers(traj.q, DT))
    rows = system.constraint_rows()
    mean = 0.5 * (lam[1:] + lam[:-1])  # at t_1 ... t_{N-1}
    F, Rx, Rz, _, _ = _prescribed_pendulum_closed_form(t[1:-1])
    scale = PEND_M * G
    assert np.max(np.abs(mean[:, rows[10]][:, 0] - F)) < 1e-4 * scale  # measured 1.1e-5
    assert np.max(np.abs(mean[:, rows[9]][:, 0] - Rx)) < 1e-4 * scale
    assert np.max(np.abs(mean[:, rows[9]][:, 2] - Rz)) < 1e-4 * scale
    assert np.ptp(F) > 0.5  # a force that varies (N), not just the weight


def test_revolute_limit_stops_the_pendulum(mechanisms):
    """Thrown at 3 rad/s, the free pendulum would reach 1.0 rad; the stop at 0.3 rad (penalty
    4000 N m/rad) holds it at the angle where gravity and the stop have taken the kinetic energy."""
    system, traj = mechanisms
    R = _rotations(traj)[:, _index(system, "lim")]
    theta = np.arctan2(R[:, 0, 2], R[:, 0, 0])  # rotation about +y
    m, L = 1.0, 1.0
    I = m * L**2 + 0.01
    E0 = 0.5 * I * LIM_W0**2
    free = np.arccos(1 - E0 / (m * G * L))
    stop = _solve(lambda a: m * G * L * (1 - np.cos(a)) + 0.5 * LIM_K * (a - LIM_UPPER) ** 2 - E0, LIM_UPPER, 1.0)
    assert free > 0.9 and stop < LIM_UPPER + 0.07
    assert abs(np.max(theta) - stop) < 2e-3 * stop
    assert np.min(theta) > -free - 1e-3  # it bounced back (and swings on the other side)


def test_prismatic_spring_and_end_stop(mechanisms):
    """Slider with a spring (20 N/m) thrown at 0.8 m/s: without the stop it would reach
    v0 sqrt(m/k) = 0.126 m; the stop at 0.05 m (5000 N/m) holds it where the spring and the stop
    have stored the kinetic energy; on the far side (no stop) it reaches the spring amplitude."""
    system, traj = mechanisms
    s = np.asarray(traj.positions)[:, _index(system, "sl"), 0] - 0.0
    E0 = 0.5 * SL_M * SL_V0**2
    stop = _solve(lambda a: 0.5 * SL_K * a**2 + 0.5 * SL_KLIM * (a - SL_UPPER) ** 2 - E0, SL_UPPER, 0.2)
    assert abs(np.max(s) - stop) < 2e-3 * stop
    assert abs(np.min(s) + np.sqrt(2 * E0 / SL_K)) < 2e-3 * np.sqrt(2 * E0 / SL_K)


def test_planar_joint_keeps_the_puck_in_its_plane(mechanisms):
    """Planar joint (normal z): the puck slides uniformly, spins about z at its initial rate, and
    the joint carries its weight."""
    system, traj = mechanisms
    k = _index(system, "puck")
    t = np.asarray(traj.times)
    pos = np.asarray(traj.positions)[:, k]
    assert np.max(np.abs(pos - (np.array([0, 10.0, 0]) + np.outer(t, [0.2, 0.1, 0])))) < 1e-9
    R = _rotations(traj)[:, k]
    spin = np.unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
    assert np.max(np.abs(spin - t)) < 1e-9
    lam = np.asarray(system.multipliers(traj.q, DT))[:, system.constraint_rows()[_joint(system, Planar)]]
    assert np.max(np.abs(0.5 * (lam[1:, 0] + lam[:-1, 0]) - 0.7 * G)) < 1e-6


def test_prismatic_damper_matches_damped_oscillator(mechanisms):
    """Slider with spring 20 N/m and damper 0.5 N s/m (zeta = 0.079) from x = 0 at 0.8 m/s:
    x(t) = v0 / wd exp(-zeta wn t) sin(wd t)."""
    system, traj = mechanisms
    t = np.asarray(traj.times)
    x = np.asarray(traj.positions)[:, _index(system, "damped"), 0]
    wn = np.sqrt(SL_K / SL_M)
    zeta = DAMP_C / (2 * np.sqrt(SL_K * SL_M))
    wd = wn * np.sqrt(1 - zeta**2)
    expected = SL_V0 / wd * np.exp(-zeta * wn * t) * np.sin(wd * t)
    assert np.max(np.abs(x - expected)) < 2e-3 * SL_V0 / wd
    assert expected[-1] < 0.75 * SL_V0 / wd  # decayed noticeably over the run


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Revolute(None, "b", point=[0, 0, 0], axis=[0, 1, 0], upper=0.5),
         r"Revolute: joint limits \(lower = -inf, upper = 0\.5 \[rad\]\) need limit_stiffness > 0 \[N m/rad\], got 0\.0"),
        (lambda: Prismatic(None, "b", point=[0, 0, 0], axis=[1, 0, 0], lower=0.2, upper=0.1, limit_stiffness=1.0),
         r"Prismatic: lower = 0\.2 must be below upper = 0\.1 \[m\]"),
        (lambda: Prismatic(None, "b", point=[0, 0, 0], axis=[1, 0, 0], stiffness=-2.0),
         r"Prismatic\.stiffness must be a finite number >= 0 \[N/m\], got -2\.0"),
        (lambda: Prismatic(None, "b", point=[0, 0, 0], axis=[1, 0, 0], force=3.0),
         r"Prismatic\.force must be None or a function t \[s\] -> force \[N\], got 3\.0"),
        (lambda: Universal(None, "b", point=[0, 0, 0], axis1=[1, 0, 0], axis2=[1, 1, 0]),
         r"Universal\.axis1 \[1\.0, 0\.0, 0\.0\] and axis2 .* must be perpendicular"),
        (lambda: Planar(None, "b", point=[0, 0, 0], axis=[0, 0, 0]),
         r"Planar\.axis must be a finite non-zero 3-vector"),
        (lambda: PrescribedDisplacement(None, "b", point=[0, 0, 0], axis=[1, 0, 0], trajectory=[0.0, 1.0]),
         r"PrescribedDisplacement\.trajectory must be a function t \[s\] -> value"),
        (lambda: SampledTrajectory([0.0, 1.0, 1.0], [0.0, 1.0, 2.0]),
         r"SampledTrajectory\.times must be a 1-D strictly increasing array"),
        (lambda: SampledTrajectory([0.0, 1.0], [0.0, 1.0, 2.0]),
         r"SampledTrajectory\.values must be finite with the shape of times \(2,\), got shape \(3,\)"),
    ],
)
def test_joint_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_sampled_trajectory_is_the_natural_cubic_spline():
    """Through samples of a cubic's nodes the natural spline has zero end curvature; checked
    against the textbook value at a midpoint (and exact at the samples)."""
    ts = np.array([0.0, 1.0, 2.0, 3.0])
    ys = np.array([0.0, 1.0, 0.0, 1.0])
    f = SampledTrajectory(ts, ys)
    assert np.allclose([float(f(t)) for t in ts], ys, atol=1e-14)
    # natural spline, equal spacing: M1, M2 from [4 1; 1 4] M = 6 [y0 - 2 y1 + y2, y1 - 2 y2 + y3]
    M = np.linalg.solve([[4.0, 1.0], [1.0, 4.0]], 6 * np.array([-2.0, 2.0]))
    mid = 0.5 * (ys[1] + ys[2]) - (M[0] + M[1]) / 16  # S(1.5) = mean - (M1 + M2) h^2 / 16
    assert abs(float(f(1.5)) - mid) < 1e-14
    assert float(f(-1.0)) == 0.0 and float(f(5.0)) == 1.0  # held at the end values


# ------------------------------------------------------------ redundancy as an error
def test_redundant_constraints_error_names_the_rows():
    """Two coaxial revolutes on one body: the second joint's 5 rows are implied by the first."""
    b = RigidBody("b", 1.0, [0.1, 0.1, 0.1], position=[0.0, 0.0, 0.0])
    joints = [Revolute(None, "b", point=[-1, 0, 0], axis=[1, 0, 0]), Revolute(None, "b", point=[1, 0, 0], axis=[1, 0, 0])]
    with pytest.raises(ValueError, match=r"5 redundant constraint rows.*joints\[1\] \(Revolute\) rows \[0, 1, 2, 3, 4\]"):
        MultibodySystem([b], joints, redundant="error")
    with pytest.raises(ValueError, match=r"redundant must be 'drop' or 'error', got 'ignore'"):
        MultibodySystem([b], joints, redundant="ignore")


# ------------------------------------------------------------ statics
def test_static_pendulum_with_torsion_spring():
    """A pendulum with a torsion spring (30 N m/rad) and a motor torque (5 N m) under gravity:
    k theta + m g L sin(theta) = tau; the hinge reaction equals the weight; and the gradient of
    the angle with respect to the spring stiffness (implicit differentiation of the static solve)
    equals -theta / (k + m g L cos(theta))."""
    m, L, k, tau = 2.0, 1.0, 30.0, 5.0

    def solve(stiffness):
        body = RigidBody("p", m, [0.01, 0.01, 0.01], position=[0, 0, -L])
        hinge = Revolute(None, "p", point=[0, 0, 0], axis=Y, stiffness=stiffness, torque=_Constant(jnp.asarray(tau)))
        system = MultibodySystem([body], [hinge], gravity=[0, 0, -G])
        state, _ = jaxrod.solve_static(system, solver=SOLVER)
        x, psi, mu = system.unpack(state.q)
        return psi[0, 1], (x, mu)

    # one parameter: forward mode (compiles cheaper than the reverse pass)
    angle, dangle, (x, mu) = jax.jvp(solve, (jnp.asarray(k),), (jnp.asarray(1.0),), has_aux=True)
    theta = _solve(lambda a: k * a + m * G * L * np.sin(a) - tau, 0.0, 1.0)
    assert abs(float(angle) - theta) < 1e-10
    assert np.allclose(np.asarray(x[0]), [-L * np.sin(theta), 0, -L * np.cos(theta)], atol=1e-10)
    assert np.allclose(np.asarray(mu[:3]), [0, 0, m * G], atol=1e-9)  # force on the body: carries its weight
    assert abs(float(dangle) + theta / (k + m * G * L * np.cos(theta))) < 1e-9


# ------------------------------------------------------------ schemes with a consistent start
def _released_pendulum(theta0):
    L = 1.0
    body = RigidBody("p", 1.0, [1e-4, 1e-4, 1e-4], position=[-L * np.sin(theta0), 0, -L * np.cos(theta0)])
    return MultibodySystem([body], [Revolute(None, "p", point=[0, 0, 0], axis=Y)], gravity=[0, 0, -G])


def test_consistent_initial_acceleration_with_joints():
    """The initial acceleration solve that NewmarkBeta(), BDF2 and Trapezoid use: a pendulum
    released from rest at 0.4 rad has angular acceleration m g L sin(theta0) / I_pivot and rod
    tension m g cos(theta0) (before: a singular solve)."""
    from jaxrod.integrate.implicit import _initial_acceleration

    th = 0.4
    system = _released_pendulum(th)
    s0 = system.initial_state()
    a = eqx.filter_jit(_initial_acceleration)(system, s0.q, s0.v, s0.aux, 0.0, SOLVER)
    acc, _, lam = system.unpack(a)
    Ieff = 1.0 + 1e-4
    ang = G * np.sin(th) / Ieff  # about +y the bob moves back: angle decreases
    expected = ang * np.array([np.cos(th), 0.0, -np.sin(th)])  # d^2/dt^2 (-L sin, 0, -L cos) at rest
    assert np.allclose(np.asarray(acc[0]), expected, atol=1e-10)
    # the hinge force on the bob is m a - m g: the rod tension m g cos(theta0) along the rod plus
    # the small tangential force that spins the bob's own inertia (1e-4 kg m^2)
    force = np.asarray(lam[:3])
    assert np.allclose(force, expected - np.array([0.0, 0.0, -G]), rtol=0, atol=1e-10)
    assert abs(force @ [np.sin(th), 0, np.cos(th)] - G * np.cos(th)) < 1e-10


# Trapezoid is BDFAlpha(-0.5): the same code path as BDF2 (one compile saved)
@pytest.mark.parametrize("scheme", [jaxrod.NewmarkBeta(), jaxrod.BDF2()], ids=["newmark", "bdf2"])
def test_consistent_start_schemes_swing_a_pendulum(scheme):
    """A pendulum released at 0.2 rad under each scheme: the joint holds and the first zero
    crossing comes at a quarter of the elliptic-integral period."""
    th = 0.2
    system = _released_pendulum(th)
    Ieff = 1.0 + 1e-4
    kk = np.sin(th / 2)
    a, b = 1.0, np.sqrt(1 - kk * kk)
    for _ in range(40):
        a, b = 0.5 * (a + b), np.sqrt(a * b)
    period = 4 * np.sqrt(Ieff / G) * np.pi / (2 * a)
    dt = period / 200
    traj = jaxrod.simulate(system, dt=dt, n_steps=60, save_every=1, scheme=scheme, solver=SOLVER, fallback=False)
    assert bool(np.all(traj.stats.converged))
    x = np.asarray(traj.positions)[:, 0, 0]
    t = np.asarray(traj.times)
    k = int(np.flatnonzero(np.sign(x[1:]) != np.sign(x[:-1]))[0])
    crossing = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    assert abs(crossing - period / 4) < 2e-3 * period
    r = np.linalg.norm(np.asarray(traj.positions)[:, 0], axis=-1)
    assert np.max(np.abs(r - 1.0)) < 1e-9
