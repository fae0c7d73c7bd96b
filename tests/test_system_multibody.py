"""Rigid bodies and joints (jaxrod.system): free rigid-body rotation, pendulum periods against the
closed forms, a chaotic double pendulum's energy, a four-bar linkage's loop closure, joint
dampers and torque inputs, and input validation.

Each mechanism compiles one program (module-scoped fixtures); runs with other parameter values
reuse it. Checks use numpy on the saved positions/frames/velocities, not the model's own
energy/constraint functions."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.system import Fixed, MultibodySystem, PlanarPin, Revolute, RigidBody, Spherical
from long_runs import jit_long_run

# The rotation coordinates psi and the integrated multipliers mu grow with time (psi by omega t),
# so a relative Newton tolerance on them loosens as a run goes on (measured: free body energy
# 1e-5 after 1000 steps with the default rtol = 1e-9); an absolute one does not.
SOLVER = jaxrod.NewtonSolver(rtol=0.0, atol=1e-12)
G = 9.81


def _ry(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _quat_y(angle):
    return [np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0]


def _rotations(traj):
    """(T, n_bodies, 3, 3) body -> world rotations from the saved frames (rows are body axes)."""
    return np.swapaxes(np.asarray(traj.frames), -1, -2)


def _crossings(t, y):
    """Times where ``y`` changes sign, linearly interpolated."""
    k = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])


def _ellipk(k):
    """Complete elliptic integral of the first kind, K(k) = pi / (2 AGM(1, sqrt(1 - k^2)))."""
    a, b = 1.0, np.sqrt(1.0 - k * k)
    for _ in range(40):
        a, b = 0.5 * (a + b), np.sqrt(a * b)
    return np.pi / (2.0 * a)


# ----------------------------------------------------------------------- free rigid bodies
INERTIA = np.array([1.0, 2.0, 3.0])  # kg m^2, principal moments: minor, intermediate, major
SPIN_DT, SPIN_STEPS = 0.05, 1000  # |omega| dt = 0.05; 50 s = 8 spin periods


@pytest.fixture(scope="module")
def spinning():
    """Four torque-free bodies side by side (no gravity): spin about the minor, intermediate and
    major axes with a 1 % perturbation, and a body with a full (non-diagonal) inertia tensor in a
    tilted initial orientation spinning about a general axis."""
    eps = 0.01
    spins = ([1.0, eps, eps], [eps, 1.0, eps], [eps, eps, 1.0])
    bodies = [RigidBody(f"b{k}", 2.0, INERTIA, position=[3.0 * k, 0, 0], angular_velocity=w)
              for k, w in enumerate(spins)]
    Q = np.linalg.qr(np.array([[1.0, 0.3, -0.2], [0.1, 1.0, 0.4], [0.5, -0.3, 1.0]]))[0]
    full = Q @ np.diag([1.5, 2.0, 3.0]) @ Q.T
    bodies.append(RigidBody("full", 1.0, full, position=[9.0, 0, 0], orientation=[0.9, 0.2, -0.3, 0.1],
                            angular_velocity=[0.7, -0.4, 0.9]))
    system = MultibodySystem(bodies)
    traj = jaxrod.simulate(system, dt=SPIN_DT, n_steps=SPIN_STEPS, save_every=5, solver=SOLVER, fallback=False)
    J = np.stack([np.diag(INERTIA)] * 3 + [full])
    omega = np.asarray(traj.v)[:, 12:24].reshape(-1, 4, 3)  # body-frame angular velocities
    return traj, J, omega, system


def test_free_body_conserves_energy_and_angular_momentum(spinning):
    traj, J, omega, system = spinning
    assert bool(np.all(traj.stats.converged))
    energy = 0.5 * np.einsum("tbi,bij,tbj->tb", omega, J, omega)
    L = np.einsum("tbij,bjk,tbk->tbi", _rotations(traj), J, omega)  # world-frame angular momentum
    # energy and |L| are quadratic invariants of the midpoint kinematics: exact up to the Newton
    # tolerance (measured 2e-10 relative over 1000 steps)
    assert np.max(np.abs(energy / energy[0] - 1)) < 1e-8
    assert np.max(np.abs(np.linalg.norm(L, axis=-1) / np.linalg.norm(L[0], axis=-1) - 1)) < 1e-8
    # the direction of L drifts at O(dt^2): measured 2.1e-5 (intermediate axis, |omega| dt = 0.05),
    # 5.4e-6 at dt/2
    drift = np.linalg.norm(L - L[0], axis=-1) / np.linalg.norm(L[0], axis=-1)
    assert np.max(drift) < 5e-4
    assert np.all(np.isfinite(traj.positions)) and np.allclose(traj.positions, traj.positions[0], atol=1e-12)
    # the system's own diagnostics agree with these sums (the bodies do not translate)
    assert np.allclose(system.energy(traj.positions, traj.frames, traj.v), energy.sum(1), rtol=1e-12)
    assert np.allclose(system.angular_momentum(traj.positions, traj.frames, traj.v), L.sum(1), rtol=1e-12, atol=1e-12)


def test_intermediate_axis_instability(spinning):
    _, _, omega, _ = spinning
    w_minor, w_mid, w_major = omega[:, 0, 0], omega[:, 1, 1], omega[:, 2, 2]
    # about the minor and major axes the spin stays (the 1 % wobble only)
    assert np.min(w_minor) > 0.99 and np.min(w_major) > 0.99
    # about the intermediate axis it flips over and back (Dzhanibekov effect)
    assert np.min(w_mid) < -0.95


# ----------------------------------------------------------------------- pendulum
MASS, DIST, IC = 1.0, 0.5, 0.02  # kg, pivot-to-centre distance m, centroidal inertia kg m^2
I_PIVOT = IC + MASS * DIST**2
T_SMALL = 2 * np.pi * np.sqrt(I_PIVOT / (MASS * G * DIST))
PEND_STEPS = 600


class SmoothStep(eqx.Module):
    """Joint torque ``amplitude (1 - exp(-t / rise))`` [N m] (a differentiable time input)."""

    amplitude: jnp.ndarray
    rise: float = 0.05

    def __call__(self, t):
        return self.amplitude * (1.0 - jnp.exp(-t / self.rise))


def _pendulum(theta0, damping=0.0, torque=0.0):
    """Physical pendulum hinged at the origin about y, released at rest at angle ``theta0``."""
    R = _ry(theta0)
    body = RigidBody("p", MASS, [IC, IC, IC], position=R @ [0.0, 0.0, -DIST], orientation=_quat_y(theta0))
    hinge = Revolute(None, "p", point=[0.0, 0.0, 0.0], axis=[0.0, 1.0, 0.0], damping=damping,
                     torque=SmoothStep(jnp.asarray(torque, dtype=float)))
    return MultibodySystem([body], [hinge], gravity=[0.0, 0.0, -G])


def _angle(traj):
    x = np.asarray(traj.positions)[:, 0]
    return np.arctan2(-x[:, 0], -x[:, 2])


def _pivot_error(traj):
    """Distance of the body's copy of the pivot (body point (0, 0, DIST) for this pendulum's
    frame) from the world pivot, at every saved step."""
    piv = np.asarray(traj.positions)[:, 0] + _rotations(traj)[:, 0] @ np.array([0.0, 0.0, DIST])
    return np.max(np.linalg.norm(piv, axis=-1))


@pytest.fixture(scope="module")
def pendulum_runs():
    """Same compiled program for every run: only array values (pose, damping, torque, dt) change."""
    runs = {}
    for name, theta0 in (("small", 0.02), ("large", 2.0)):
        k = np.sin(theta0 / 2)
        period = 4 * np.sqrt(I_PIVOT / (MASS * G * DIST)) * _ellipk(k)
        traj = jaxrod.simulate(_pendulum(theta0), dt=period / 400, n_steps=PEND_STEPS, solver=SOLVER, fallback=False)
        runs[name] = (traj, period)
    return runs


def test_pendulum_small_amplitude_period(pendulum_runs):
    traj, _ = pendulum_runs["small"]
    c = _crossings(np.asarray(traj.times), _angle(traj))
    period = c[2] - c[0]
    # 2 pi sqrt(I_pivot / (m g d)); the amplitude (theta0^2/16 = 2.5e-5) and the step
    # ((omega dt)^2 / 12 = 2e-5) shift it by less than 1e-4 (measured 4.6e-5)
    assert abs(period / T_SMALL - 1) < 1e-4
    assert _pivot_error(traj) < 1e-10


def test_pendulum_large_amplitude_period(pendulum_runs):
    traj, expected = pendulum_runs["large"]
    theta = _angle(traj)
    c = _crossings(np.asarray(traj.times), theta)
    period = c[2] - c[0]
    # T = 4 sqrt(I_pivot / (m g d)) K(sin(theta0 / 2)), 1.29 x the small-amplitude period at 2 rad
    assert expected / T_SMALL > 1.25
    assert abs(period / expected - 1) < 1e-4
    assert abs(np.max(np.abs(theta)) - 2.0) < 1e-3  # swings back to the release angle (no damping)
    assert _pivot_error(traj) < 1e-10


def test_damped_pendulum_decay_rate():
    zeta = 0.05
    omega0 = 2 * np.pi / T_SMALL
    c = 2 * zeta * omega0 * I_PIVOT  # rotational damping N m s/rad
    traj = jaxrod.simulate(_pendulum(0.02, damping=c), dt=T_SMALL / 400, n_steps=PEND_STEPS, solver=SOLVER,
                           fallback=False)
    theta, t = _angle(traj), np.asarray(traj.times)
    # the next maximum after release (a maximum at t = 0), refined by a parabola through 3 samples
    k = int(np.argmax(np.where(t > 0.5 * T_SMALL, theta, -np.inf)))
    y0, y1, y2 = theta[k - 1 : k + 2]
    peak = y1 + 0.125 * (y0 - y2) ** 2 / (2 * y1 - y0 - y2)
    sigma = c / (2 * I_PIVOT)
    t_damped = 2 * np.pi / np.sqrt(omega0**2 - sigma**2)
    measured = -np.log(peak / 0.02) / t_damped
    # linear theory: amplitude ratio exp(-sigma T_d) per period
    assert abs(measured / sigma - 1) < 2e-3


def test_joint_torque_input_reaches_static_deflection():
    # a smoothly rising constant torque on a critically damped hinge: the pendulum settles where
    # m g d sin(theta) = tau (the exact nonlinear equilibrium)
    omega0 = 2 * np.pi / T_SMALL
    tau = 0.3 * MASS * G * DIST
    traj = jaxrod.simulate(_pendulum(0.0, damping=2 * omega0 * I_PIVOT, torque=tau), dt=T_SMALL / 60,
                           n_steps=PEND_STEPS, solver=SOLVER, fallback=False)
    theta = _angle(traj)
    assert abs(theta[-1] - np.arcsin(0.3)) < 1e-8
    assert _pivot_error(traj) < 1e-10
    # at rest the hinge carries the weight: its force on the pendulum is m g upwards. Each step's
    # multiplier alternates by +-4.7e-5 N around it (the undamped (-1)^n velocity mode normal to the
    # constraint, see the multibody docstring); the mean of two consecutive steps is exact
    system = _pendulum(0.0)
    lam = np.asarray(system.multipliers(traj.q, T_SMALL / 60))[-2:, system.constraint_rows()[0]]
    assert np.allclose(lam.mean(0), [0.0, 0.0, MASS * G, 0.0, 0.0], atol=1e-9)
    assert np.max(np.abs(lam - lam.mean(0))) < 1e-4


@pytest.mark.slow  # compiles the JVP program (the reverse-mode one took 85 s cold on the shared machine)
def test_gradient_through_joint_parameters(pendulum_runs):
    """The derivatives of the final angle with respect to the hinge damping and the torque amplitude
    (implicit differentiation of every Newton solve, forward mode through the time loop) against
    central finite differences; reuses the pendulum program for the forward runs."""
    import jax

    dt = T_SMALL / 100

    def final_angle(params):
        c, tau = params
        traj = jaxrod.simulate(_pendulum(0.3, damping=c, torque=tau), dt=dt, n_steps=PEND_STEPS, solver=SOLVER,
                               fallback=False)
        x = traj.positions[-1, 0]
        return jnp.arctan2(-x[0], -x[2])

    p0 = jnp.array([0.05, 0.4])
    # forward mode along each parameter (the direction an array argument): one JVP program, which
    # compiles cheaper than the reverse-mode one
    derivative = jax.jit(lambda p, t: jax.jvp(final_angle, (p,), (t,))[1])
    for i, h in ((0, 1e-6), (1, 1e-6)):
        e = np.zeros(2)
        e[i] = h
        grad_i = float(derivative(p0, jnp.asarray(e / h)))
        fd = (float(final_angle(p0 + e)) - float(final_angle(p0 - e))) / (2 * h)
        assert abs(grad_i - fd) <= 1e-5 * abs(fd) + 1e-9, (i, grad_i, fd)


# ----------------------------------------------------------------------- double pendulum, four-bar
def _slender(mass, length):
    """Principal inertias [kg m^2] of a thin bar along its body x axis (a small axial moment)."""
    i = mass * length**2 / 12
    return [0.01 * i, i, i]


DP_LENGTH, DP_MASS = 0.4, 0.5
FOUR_BAR = (0.2, 0.6, 0.5, 0.6)  # crank, coupler, rocker, ground [m]


def _double_pendulum():
    L, m = DP_LENGTH, DP_MASS
    th1, th2 = 2.0, -1.0  # rad, both links released far from the vertical: chaotic motion
    e1, e2 = _ry(th1) @ [0, 0, -1.0], _ry(th2) @ [0, 0, -1.0]
    elbow = L * e1
    # body x axis along each link: R_y(theta + pi/2) maps x to the link direction
    b1 = RigidBody("upper", m, _slender(m, L), position=0.5 * L * e1, orientation=_quat_y(th1 + np.pi / 2))
    b2 = RigidBody("lower", m, _slender(m, L), position=elbow + 0.5 * L * e2, orientation=_quat_y(th2 + np.pi / 2))
    joints = [Revolute(None, "upper", point=[0, 0, 0], axis=[0, 1, 0]),
              Revolute("upper", "lower", point=elbow, axis=[0, 1, 0])]
    return [b1, b2], joints


def _four_bar():
    """Crank-rocker (Grashof: 0.2 + 0.6 <= 0.6 + 0.5) in the x-z plane, hinges about y, driven
    by a crank torque under gravity. Three revolutes and one planar pin: 17 independent
    constraint rows for 18 body coordinates (four revolutes would give 3 redundant rows)."""
    a, b, c, d = FOUR_BAR
    A, D = np.zeros(3), np.array([d, 0.0, 0.0])
    phi = 1.0
    B = a * np.array([np.cos(phi), 0.0, np.sin(phi)])
    # C: intersection of the circles |C - B| = b and |C - D| = c (upper branch)
    BD = D - B
    dist = np.linalg.norm(BD)
    along = (b**2 - c**2 + dist**2) / (2 * dist)
    h = np.sqrt(b**2 - along**2)
    perp = np.cross(BD / dist, [0.0, 1.0, 0.0])
    C = max((B + along * BD / dist + s * h * perp for s in (1, -1)), key=lambda p: p[2])

    def link(name, p, q, m):
        e = (q - p) / np.linalg.norm(q - p)
        return RigidBody(name, m, _slender(m, np.linalg.norm(q - p)), position=0.5 * (p + q),
                         orientation=_quat_y(np.arctan2(-e[2], e[0])))

    bodies = [link("crank", A, B, 0.2), link("coupler", B, C, 0.6), link("rocker", D, C, 0.5)]
    y = [0.0, 1.0, 0.0]
    # crank torque 0.4 N m against a 0.02 N m s/rad damper: the crank spins up towards ~20 rad/s
    joints = [Revolute(None, "crank", point=A, axis=y, damping=0.02, torque=SmoothStep(jnp.asarray(0.4))),
              Revolute("crank", "coupler", point=B, axis=y),
              Revolute("coupler", "rocker", point=C, axis=y),
              PlanarPin(None, "rocker", point=D, axis=y)]
    return bodies, joints


SPH_PIVOT, SPH_LENGTH, SPH_MASS, SPH_INERTIA = np.array([0.0, 2.0, 0.0]), 0.5, 1.0, [0.01, 0.01, 0.02]


def _spherical_pendulum():
    """A body on a ball joint, tilted 0.5 rad in the y-z plane and pushed along x, spinning about
    its own axis: a three-dimensional swing with gyroscopic coupling."""
    alpha, speed, spin = 0.5, 1.0, 2.0
    c, s = np.cos(alpha), np.sin(alpha)
    R = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])  # about x: (0, 0, -1) -> (0, s, -c)
    x0 = SPH_PIVOT + R @ [0.0, 0.0, -SPH_LENGTH]
    # the body's copy of the pivot (body point (0, 0, L)) must not move: omega x (0, 0, L) = -R^T v
    body = RigidBody("ball", SPH_MASS, SPH_INERTIA, position=x0,
                     orientation=[np.cos(alpha / 2), np.sin(alpha / 2), 0, 0],
                     velocity=[speed, 0.0, 0.0], angular_velocity=[0.0, -speed / SPH_LENGTH, spin])
    return [body], [Spherical(None, "ball", point=SPH_PIVOT)]


WELD_PIVOT, WELD_THETA0 = np.array([0.0, 4.0, 0.0]), 0.02
WELD_PARTS = ((0.6, [0.004, 0.005, 0.006], 0.3), (0.9, [0.01, 0.02, 0.015], 0.6))  # mass, inertia, depth


def _welded_pendulum():
    """Two bodies welded (Fixed) into one rigid pendulum hinged about y at WELD_PIVOT, released at
    rest at WELD_THETA0: it must swing like one body with the combined inertia."""
    R = _ry(WELD_THETA0)
    bodies = [RigidBody(f"weld{k}", m, inertia, position=WELD_PIVOT + R @ [0, 0, -depth],
                        orientation=_quat_y(WELD_THETA0))
              for k, (m, inertia, depth) in enumerate(WELD_PARTS)]
    joints = [Revolute(None, "weld0", point=WELD_PIVOT, axis=[0, 1, 0]),
              Fixed("weld0", "weld1", point=WELD_PIVOT + R @ [0, 0, -0.45])]
    return bodies, joints


@pytest.fixture(scope="module")
def mechanisms():
    """Disconnected parts of one system, so that one compiled program serves them all (they do
    not interact): the double pendulum (bodies 0, 1), the four-bar (2-4), a spherical pendulum
    (5) and a welded pendulum (6, 7)."""
    parts = [_double_pendulum(), _four_bar(), _spherical_pendulum(), _welded_pendulum()]
    system = MultibodySystem(sum((b for b, _ in parts), []), sum((j for _, j in parts), []), gravity=[0, 0, -G])
    return _run_mechanisms(system)


@jit_long_run  # 2000 steps: compiled at XLA's default optimisation (tests/long_runs.py)
def _run_mechanisms(system):
    # fallback=False: every step must converge with the energy-conserving scheme itself
    return jaxrod.simulate(system, dt=0.004, n_steps=2000, solver=SOLVER, fallback=False)


def test_double_pendulum_energy_and_joints(mechanisms):
    traj, L, m = mechanisms, DP_LENGTH, DP_MASS
    assert bool(np.all(traj.stats.converged))
    x, R, v = np.asarray(traj.positions)[:, :2], _rotations(traj)[:, :2], np.asarray(traj.v)
    J = np.diag(_slender(m, L))
    kin = 0.5 * m * np.sum(v[:, :6].reshape(-1, 2, 3) ** 2, axis=(1, 2))
    w = v[:, 24:30].reshape(-1, 2, 3)  # body-frame angular velocities (after 8 bodies' x)
    kin += 0.5 * np.einsum("tbi,ij,tbj->t", w, J, w)
    energy = kin + m * G * np.sum(x[..., 2], axis=1)
    # average vector field: conserved to the quadrature error of the constraint potentials and
    # the Newton tolerance; measured 4e-11 J relative to the 1.96 J swing energy over 8 s
    scale = m * G * L
    assert np.max(np.abs(energy - energy[0])) / scale < 1e-8
    # the motion is large: the lower link turns over
    assert np.ptp(w[:, 1, 1]) > 10.0
    # joints hold at every step: shoulder at the origin, elbow shared, axes parallel to y
    shoulder = x[:, 0] + R[:, 0] @ [-0.5 * L, 0, 0]
    elbow1 = x[:, 0] + R[:, 0] @ [0.5 * L, 0, 0]
    elbow2 = x[:, 1] + R[:, 1] @ [-0.5 * L, 0, 0]
    assert np.max(np.abs(shoulder)) < 1e-10 and np.max(np.abs(elbow1 - elbow2)) < 1e-10
    assert np.max(np.abs(R[:, :, 1, 1] - 1)) < 1e-10


def test_four_bar_closes_its_loop(mechanisms):
    traj, (a, b, c, d) = mechanisms, FOUR_BAR
    assert bool(np.all(traj.stats.converged))
    x, R = np.asarray(traj.positions)[:, 2:5], _rotations(traj)[:, 2:5]
    half = lambda k, s, length: x[:, k] + R[:, k] @ [s * 0.5 * length, 0, 0]  # link ends
    A, B1 = half(0, -1, a), half(0, 1, a)
    B2, C1 = half(1, -1, b), half(1, 1, b)
    D, C2 = half(2, -1, c), half(2, 1, c)
    err = max(np.max(np.abs(A)), np.max(np.abs(B1 - B2)), np.max(np.abs(C1 - C2)),
              np.max(np.abs(D - [d, 0, 0])), np.max(np.abs(x[..., 1])))
    assert err < 1e-10
    # the crank is driven round several times (the loop closes through the whole cycle)
    crank = np.unwrap(np.arctan2(B1[:, 2], B1[:, 0]))
    assert abs(crank[-1] - crank[0]) > 4 * np.pi


def test_spherical_pendulum_conserves_energy_and_vertical_momentum(mechanisms):
    traj = mechanisms
    x, R, v = np.asarray(traj.positions)[:, 5], _rotations(traj)[:, 5], np.asarray(traj.v)
    xd, w = v[:, 15:18], v[:, 39:42]
    J = np.diag(SPH_INERTIA)
    energy = 0.5 * SPH_MASS * np.sum(xd**2, -1) + 0.5 * np.einsum("ti,ij,tj->t", w, J, w) + SPH_MASS * G * x[:, 2]
    # gravity and the joint force exert no torque about the vertical through the pivot
    Lz = (SPH_MASS * np.cross(x - SPH_PIVOT, xd) + np.einsum("tij,jk,tk->ti", R, J, w))[:, 2]
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * SPH_MASS * G * SPH_LENGTH
    # L_z is not a discrete invariant: measured drift (dt^2 order) against its -0.21 value
    assert np.max(np.abs(Lz - Lz[0])) < 1e-4 * abs(Lz[0])
    assert abs(Lz[0]) > 0.05 and np.ptp(x[:, 0]) > 0.3  # a genuinely 3-D swing
    pivot = x + R @ np.array([0.0, 0.0, SPH_LENGTH])
    assert np.max(np.abs(pivot - SPH_PIVOT)) < 1e-10


def test_welded_pendulum_swings_as_one_body(mechanisms):
    traj = mechanisms
    x, R = np.asarray(traj.positions)[:, 6:8], _rotations(traj)[:, 6:8]
    # the weld holds: relative orientation and the distance of the centres of mass stay fixed
    rel = np.einsum("tji,tjk->tik", R[:, 0], R[:, 1])
    assert np.max(np.abs(rel - np.eye(3))) < 1e-10
    assert np.max(np.abs(np.linalg.norm(x[:, 1] - x[:, 0], axis=-1) - 0.3)) < 1e-10
    # period of the combined rigid pendulum: I_pivot = sum(I_yy + m depth^2), m g d = g sum(m depth)
    i_pivot = sum(inertia[1] + m * depth**2 for m, inertia, depth in WELD_PARTS)
    mgd = G * sum(m * depth for m, _, depth in WELD_PARTS)
    d0 = x[:, 0] - WELD_PIVOT
    c = _crossings(np.asarray(traj.times), np.arctan2(-d0[:, 0], -d0[:, 2]))
    period = (c[-1] - c[0]) / ((len(c) - 1) / 2)
    # amplitude (theta0^2/16 = 2.5e-5) and step ((omega dt)^2/12 = 2.6e-5) effects are below 1e-4
    assert len(c) >= 5 and abs(period / (2 * np.pi * np.sqrt(i_pivot / mgd)) - 1) < 1e-4


# ----------------------------------------------------------------------- bad input
def _body(**kw):
    args = dict(name="b", mass=1.0, inertia=[1.0, 1.0, 1.0])
    args.update(kw)
    return RigidBody(**args)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(mass=-1.0), r"RigidBody\('b'\)\.mass must be a finite number > 0 \[kg\], got -1\.0"),
        (dict(inertia=[[1.0, 0, 0], [0, -1.0, 0], [0, 0, 1.0]]), r"inertia must be positive definite.*-1\.0"),
        (dict(inertia=[1.0, 1.0, 3.0]), r"triangle inequality"),
        (dict(inertia=[[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]]), r"inertia must be a finite symmetric"),
        (dict(orientation=[0.0, 0.0, 0.0, 0.0]),
         r"orientation must be a finite non-zero quaternion.*\[0\.0, 0\.0, 0\.0, 0\.0\]"),
        (dict(name="world"), r"RigidBody\.name must be a non-empty string other than 'world'"),
        (dict(velocity=[1.0, 2.0]), r"RigidBody\('b'\)\.velocity must be 3 finite numbers"),
    ],
)
def test_body_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        _body(**kw)


def test_system_and_joint_validation():
    b = _body()
    missing = r"joints\[0\] \(Spherical\)\.body2 = 'missing' names no body; bodies are \['b'\]"
    with pytest.raises(ValueError, match=missing):
        MultibodySystem([b], [Spherical(None, "missing", point=[0, 0, 0])])
    with pytest.raises(ValueError, match=r"body names must be unique, repeated: \['b'\]"):
        MultibodySystem([b, _body()])
    zero_axis = r"Revolute\.axis must be a finite non-zero 3-vector, got \[0\.0, 0\.0, 0\.0\]"
    with pytest.raises(ValueError, match=zero_axis):
        Revolute(None, "b", point=[0, 0, 0], axis=[0, 0, 0])
    with pytest.raises(ValueError, match=r"Revolute\.damping must be a finite number >= 0 \[N m s/rad\], got -1\.0"):
        Revolute(None, "b", point=[0, 0, 0], axis=[0, 0, 1], damping=-1.0)
    with pytest.raises(ValueError, match=r"Fixed connects body 'b' to itself"):
        Fixed("b", "b", point=[0, 0, 0])
    with pytest.raises(ValueError, match=r"gravity must be 3 finite numbers"):
        MultibodySystem([b], gravity=[0, 0])
