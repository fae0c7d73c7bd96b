"""Force elements of multibody systems (jaxrod.system.forces): springs, unilateral ropes and bump
stops, linear and power-law dampers, a PD controller, energy conservation with the average vector
field, gradients through element parameters, and input validation.

All dynamic checks share ONE compiled program: the elements act on separate bodies of one system
(they do not interact) run once in a module-scoped fixture. Expected values are closed forms
evaluated with numpy on the saved positions and velocities, never the model's own functions."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.system import (Damper, JointTorque, MultibodySystem, PDController, PointForce, Revolute, RigidBody, Spring,
                           TorsionDamper, TorsionSpring)

SOLVER = jaxrod.NewtonSolver(rtol=0.0, atol=1e-12)
G = 9.81
DT, STEPS = 0.002, 1500  # 3 s
SMALL = [1e-3, 1e-3, 1e-3]  # kg m^2: point-like bodies, attached at their centres of mass

# mass-spring oscillators (along x), period 0.5 s
M, K = 1.0, (2 * np.pi / 0.5) ** 2
OSC_AMP = 0.05
ZETA = 0.05
C_LIN = 2 * ZETA * np.sqrt(K * M)
# power-law dampers on a sliding body (no spring): p = 2 and p = 0.5
V0 = 1.0
POW = ((2.0, 2.0), (0.5, 1.0))  # (exponent, damping): the p = 0.5 body stops at t = 2 m sqrt(v0) / c = 2 s
# ropes: length L, axial stiffness K_ROPE (static stretch m g / k = 1e-3 L)
L, K_ROPE, ROPE_THETA = 1.0, 1e4, 0.05
SLACK_DROP = 0.5  # the slack rope's body starts this far below the anchor, at rest
# bump stops: contact time pi sqrt(m / k) = 0.1 s
K_BUMP, BUMP_V, BUMP_GAP, BUMP_W = np.pi**2 / 0.01, 0.5, 0.05, 1e-4
# PD link: hinge about z (no gravity torque), inertia about the pivot I_P
LINK_D, LINK_IZ = 0.2, 0.01
I_P = LINK_IZ + M * LINK_D**2
PD_W, PD_ZETA, PD_TARGET = 2 * np.pi / 0.5, 0.5, 0.5


def _weightless(name, position, velocity=(0.0, 0.0, 0.0)):
    """A body whose weight is cancelled by a constant upward force (1-D motion in a system with gravity)."""
    return RigidBody(name, M, SMALL, position=position, velocity=velocity, force=[0.0, 0.0, M * G])


def _system(k=K, c=C_LIN, target=PD_TARGET):
    """All elements on separate bodies (y offsets keep them apart); one body index per test."""
    bodies, forces, joints = [], [], []
    # 0: undamped oscillator along x, anchor 1 m to the left, stretched by OSC_AMP
    bodies.append(_weightless("osc", [1.0 + OSC_AMP, 0.0, 0.0]))
    forces.append(Spring(None, "osc", point1=[0.0, 0.0, 0.0], point2=[1.0 + OSC_AMP, 0.0, 0.0], stiffness=k,
                         rest_length=1.0))
    # 1: a body on a spring in 3-D under gravity (a swinging, stretching, orbiting spring pendulum)
    p = np.array([0.4, 3.0, -0.9])
    bodies.append(RigidBody("orbit", M, SMALL, position=p, velocity=[0.5, 0.8, -0.3]))
    forces.append(Spring(None, "orbit", point1=[0.0, 3.0, 0.0], point2=p, stiffness=0.5 * K, rest_length=0.8))
    # 2: damped oscillator
    bodies.append(_weightless("damped", [1.0 + OSC_AMP, 6.0, 0.0]))
    forces.append(Spring(None, "damped", point1=[0.0, 6.0, 0.0], point2=[1.0 + OSC_AMP, 6.0, 0.0], stiffness=k,
                         rest_length=1.0))
    forces.append(Damper(None, "damped", point1=[0.0, 6.0, 0.0], point2=[1.0 + OSC_AMP, 6.0, 0.0], damping=c))
    # 3, 4: power-law dampers, body sliding along x at V0 away from the anchor
    for n, (p_exp, c_pow) in enumerate(POW):
        y = 9.0 + 3.0 * n
        bodies.append(_weightless(f"pow{n}", [1.0, y, 0.0], velocity=[V0, 0.0, 0.0]))
        forces.append(Damper(None, f"pow{n}", point1=[0.0, y, 0.0], point2=[1.0, y, 0.0], damping=c_pow,
                             exponent=p_exp))
    # 5: rope pendulum, taut (released at ROPE_THETA with the static stretch)
    stretched = L + M * G / K_ROPE
    anchor5 = np.array([0.0, 15.0, 0.0])
    p5 = anchor5 + stretched * np.array([np.sin(ROPE_THETA), 0.0, -np.cos(ROPE_THETA)])
    bodies.append(RigidBody("rope_taut", M, SMALL, position=p5))
    forces.append(Spring(None, "rope_taut", point1=anchor5, point2=p5, stiffness=K_ROPE, rest_length=L,
                         mode="tension"))
    # 6: rope, slack: the body starts SLACK_DROP below the anchor at rest and falls freely until taut
    anchor6 = np.array([0.0, 18.0, 0.0])
    p6 = anchor6 + [0.0, 0.0, -SLACK_DROP]
    bodies.append(RigidBody("rope_slack", M, SMALL, position=p6))
    forces.append(Spring(None, "rope_slack", point1=anchor6, point2=p6, stiffness=K_ROPE, rest_length=L,
                         mode="tension"))
    # 7, 8: bump stops (exact and smooth switch): moving at BUMP_V towards a stop BUMP_GAP ahead
    for n, width in enumerate((0.0, BUMP_W)):
        y = 21.0 + 3.0 * n
        bodies.append(_weightless(f"bump{n}", [0.0, y, 0.0], velocity=[-BUMP_V, 0.0, 0.0]))
        forces.append(Spring(None, f"bump{n}", point1=[-1.0, y, 0.0], point2=[0.0, y, 0.0], stiffness=K_BUMP,
                             rest_length=1.0 - BUMP_GAP, mode="compression", smoothing=width))
    # 9: PD-controlled link on a hinge about z through (0, 27, 0)
    pivot = np.array([0.0, 27.0, 0.0])
    bodies.append(RigidBody("link", M, [LINK_IZ, LINK_IZ, LINK_IZ], position=pivot + [LINK_D, 0.0, 0.0]))
    joints.append(Revolute(None, "link", point=pivot, axis=[0.0, 0.0, 1.0]))
    forces.append(PDController(None, "link", axis=[0.0, 0.0, 1.0], gain=I_P * PD_W**2,
                               damping=2 * PD_ZETA * PD_W * I_P, target=target))
    return MultibodySystem(bodies, joints, gravity=[0.0, 0.0, -G], forces=forces)


@pytest.fixture(scope="module")
def run():
    system = _system()
    traj = jaxrod.simulate(system, dt=DT, n_steps=STEPS, solver=SOLVER, fallback=False)
    assert bool(np.all(traj.stats.converged))
    nb = system.n_bodies
    x = np.asarray(traj.positions)
    xd = np.asarray(traj.v)[:, : 3 * nb].reshape(-1, nb, 3)
    return system, np.asarray(traj.times), x, xd, traj


def _crossings(t, y):
    k = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])


def _peaks(t, y):
    """Local maxima of ``y``, refined by a parabola through three samples: (times, values)."""
    k = np.flatnonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:])) + 1
    y0, y1, y2 = y[k - 1], y[k], y[k + 1]
    shift = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2)
    return t[k] + shift * (t[1] - t[0]), y1 - 0.25 * (y0 - y2) * shift


def test_spring_frequency(run):
    _, t, x, _, _ = run
    period = np.mean(np.diff(_crossings(t, x[:, 0, 0] - 1.0)[::2]))
    exact = 2 * np.pi * np.sqrt(M / K)
    # the average vector field on a linear force is the midpoint rule: phase 2 atan(omega dt / 2) per step
    w = np.sqrt(K / M)
    midpoint = 2 * np.pi * DT / (2 * np.arctan(w * DT / 2))
    assert abs(period / exact - 1) < 1e-4  # measured 5.3e-5: the midpoint dispersion (omega dt)^2 / 12
    assert abs(period / midpoint - 1) < 1e-7  # measured 2.7e-9
    assert abs(np.max(x[:, 0, 0]) - (1 + OSC_AMP)) < 1e-9  # no energy gained or lost


def test_spring_in_3d_conserves_energy_with_avf(run):
    _, _, x, xd, _ = run
    p, v = x[:, 1], xd[:, 1]
    stretch = np.linalg.norm(p - [0.0, 3.0, 0.0], axis=-1) - 0.8
    energy = 0.5 * M * np.sum(v**2, -1) + M * G * p[:, 2] + 0.25 * K * stretch**2
    scale = 0.5 * K * 0.5 * np.ptp(stretch) ** 2
    assert np.ptp(stretch) > 0.05 and np.ptp(p[:, 1]) > 0.05  # a genuinely 3-D motion with stretching
    # conserved to the Gauss quadrature error of the non-polynomial spring energy and the Newton
    # tolerance: measured 3.0e-12 of the spring's energy swing over 1500 steps
    assert np.max(np.abs(energy - energy[0])) < 1e-9 * scale


def test_linear_damper_decay_rate(run):
    _, t, x, _, _ = run
    tp, peaks = _peaks(t, x[:, 2, 0] - 1.0)
    peaks, tp = peaks[peaks > 0], tp[peaks > 0]
    rate = -np.polyfit(tp, np.log(peaks), 1)[0]
    # envelope exp(-c t / (2 m)): measured 1.6e-4 relative at omega dt = 0.025
    assert abs(rate / (C_LIN / (2 * M)) - 1) < 1e-3
    assert len(peaks) >= 5


def test_power_law_damper_follows_closed_form(run):
    _, t, x, xd, _ = run
    for n, (p, c) in enumerate(POW):
        v, s = xd[:, 3 + n, 0], x[:, 3 + n, 0] - 1.0
        if p == 2.0:
            # m v' = -c v^2: v = v0 / (1 + c v0 t / m), s = m / c ln(1 + c v0 t / m)
            v_exact = V0 / (1 + c * V0 * t / M)
            s_exact = M / c * np.log1p(c * V0 * t / M)
            mask = np.ones_like(t, bool)
        else:
            # m v' = -c sqrt(v): sqrt(v) = sqrt(v0) - a t, a = c / (2 m); stops at t = sqrt(v0) / a
            a = c / (2 * M)
            v_exact = (np.sqrt(V0) - a * t) ** 2
            s_exact = V0 * t - np.sqrt(V0) * a * t**2 + a**2 * t**3 / 3
            mask = t < 0.8 * np.sqrt(V0) / a  # while v >> velocity_scale (regularisation 1.6e-4 there)
        # second-order time error: measured 1.2e-6 / 3.9e-6 m/s and 2.0e-6 / 1.3e-6 m (p = 2 / 0.5)
        assert np.max(np.abs(v - v_exact)[mask]) < 1e-5, p
        assert np.max(np.abs(s - s_exact)[mask]) < 1e-5, p
    # the regularised p = 0.5 damper stops the body near the closed-form time (no finite-time stop)
    a = POW[1][1] / (2 * M)
    v_end = xd[t > 1.2 * np.sqrt(V0) / a, 4, 0]
    assert np.all(v_end >= 0) and np.max(v_end) < 1e-6  # measured 5e-10 m/s


def test_rope_pendulum_swings_when_taut(run):
    _, t, x, _, _ = run
    p = x[:, 5] - [0.0, 15.0, 0.0]
    theta = np.arctan2(p[:, 0], -p[:, 2])
    c = _crossings(t, theta)
    length = L + M * G / K_ROPE
    exact = 2 * np.pi * np.sqrt(length / G) * (1 + ROPE_THETA**2 / 16)
    # the rope stays taut (tension-only spring stretched at every sample) and the bob swings with the
    # pendulum period of the statically stretched rope (measured 5e-6 relative)
    assert np.min(np.linalg.norm(p, axis=-1)) > L
    assert abs((c[2] - c[0]) / exact - 1) < 5e-5


def test_rope_is_force_free_when_slack(run):
    _, t, x, xd, _ = run
    z = x[:, 6, 2]
    t_taut = np.sqrt(2 * (L - SLACK_DROP) / G)
    free = t < t_taut - DT
    # free fall to the Newton tolerance while slack (the exact switch: not a trace of rope force)
    assert np.max(np.abs(z[free] - (-SLACK_DROP - 0.5 * G * t[free] ** 2))) < 1e-11  # measured 5e-14 m
    # then the rope catches it: it never falls further than the elastic stretch v sqrt(m / k) (+ the weight's)
    v_hit = G * t_taut
    assert np.min(z) > -L - 1.5 * v_hit * np.sqrt(M / K_ROPE)
    assert np.min(z) < -L - 0.5 * v_hit * np.sqrt(M / K_ROPE)
    assert np.max(xd[:, 6, 2]) > 0.5 * v_hit  # bounced back up (elastic rope, no damping)


def test_bump_stop_contact_time_and_rebound(run):
    _, t, x, xd, _ = run
    exact = np.pi * np.sqrt(M / K_BUMP)
    for n in (0, 1):
        compression = x[:, 7 + n, 0] + BUMP_GAP  # < 0 while in contact
        c = _crossings(t, compression)
        assert len(c) == 2, n  # one contact, then it flies away
        # contact time pi sqrt(m / k) to the step's error: measured 3.29e-4 (exact switch) and 3.29e-4
        # (smooth, width 1e-4 m against a 1.6 cm penetration) at 50 steps per contact
        assert abs((c[1] - c[0]) / exact - 1) < 1e-3, (n, (c[1] - c[0]) / exact - 1)
        assert abs(xd[-1, 7 + n, 0] - BUMP_V) < 1e-5 * BUMP_V  # elastic rebound: measured 9e-7
        assert abs(c[0] - BUMP_GAP / BUMP_V) < 1e-6 * exact  # no force before contact: measured 2e-8


def test_pd_controller_second_order_response(run):
    _, t, x, _, _ = run
    p = x[:, 9] - [0.0, 27.0, 0.0]
    theta = np.arctan2(p[:, 1], p[:, 0])
    wd = PD_W * np.sqrt(1 - PD_ZETA**2)
    sigma = PD_ZETA * PD_W
    exact = PD_TARGET * (1 - np.exp(-sigma * t) * (np.cos(wd * t) + sigma / wd * np.sin(wd * t)))
    # I theta'' = k_p (target - theta) - k_d theta': measured 3.6e-5 of the target at omega dt = 0.025
    assert np.max(np.abs(theta - exact)) < 2e-4 * PD_TARGET
    assert np.max(theta) > 1.1 * PD_TARGET  # the underdamped overshoot is there
    assert np.max(np.abs(np.linalg.norm(p, axis=-1) - LINK_D)) < 1e-10  # the hinge holds


def test_new_parameter_values_reuse_the_program(run):
    """A new PD target and spring stiffness are array values: the same program runs them."""
    system, *_ = run
    other = _system(k=2 * K, target=-0.3)
    assert jax.tree_util.tree_structure(other) == jax.tree_util.tree_structure(system)


GRAD_STEPS, GRAD_DT = 70, 0.005  # 0.35 s: 0.7 of a period, away from a turning point


def _final_position(params):
    k, c = params
    body = RigidBody("b", M, SMALL, position=[1.1, 0.0, 0.0])
    forces = [Spring(None, "b", point1=[0.0, 0.0, 0.0], point2=[1.1, 0.0, 0.0], stiffness=k, rest_length=1.0),
              Damper(None, "b", point1=[0.0, 0.0, 0.0], point2=[1.1, 0.0, 0.0], damping=c, exponent=1.5)]
    system = MultibodySystem([body], forces=forces)
    traj = jaxrod.simulate(system, dt=GRAD_DT, n_steps=GRAD_STEPS, solver=SOLVER, fallback=False)
    x = traj.positions[-1, 0, 0]
    return x, x


# ONE compiled program gives the value and the gradient, and serves the finite-difference runs (a
# forward-only program would be a second compilation). Forward mode (two parameters): measured
# 71 s cold against 109 s for jax.value_and_grad's reverse-mode program on the shared 2-core machine
grad_and_value = jax.jit(jax.jacfwd(_final_position, has_aux=True))


@pytest.mark.slow  # compiles the forward-mode program: 77 s cold on the shared CPU machine
def test_gradient_wrt_stiffness_and_damping():
    """Gradient of the final position of a spring + power-law damper (p = 1.5) oscillator with
    respect to the stiffness and the damping coefficient (implicit differentiation of every step)
    against central finite differences."""
    p0 = jnp.array([K, 0.8])
    grad, _ = grad_and_value(p0)
    for i in (0, 1):
        h = 1e-4 * float(p0[i])
        e = np.zeros(2)
        e[i] = h
        fd = (float(grad_and_value(p0 + e)[1]) - float(grad_and_value(p0 - e)[1])) / (2 * h)
        assert abs(fd) * float(p0[i]) > 1e-3  # a 1 % parameter change moves the output by > 1e-5 m
        # measured: 5e-9 (stiffness) and 4e-7 (damping, at a 1e-6 step) relative
        assert abs(grad[i] - fd) <= 1e-5 * abs(fd), (i, float(grad[i]), fd)


# ----------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Spring(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], stiffness=-1.0), "Spring.stiffness"),
        (lambda: Spring(None, "a", point1=[0, 0], point2=[1, 0, 0]), "Spring.point1"),
        (lambda: Spring(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], mode="slack"), "Spring.mode"),
        (lambda: Spring(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], coefficients=[[1.0]]), "Spring.coefficients"),
        (lambda: Spring(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], rest_length=-0.1), "Spring.rest_length"),
        (lambda: Spring("a", "a", point1=[0, 0, 0], point2=[1, 0, 0]), "connects body 'a' to itself"),
        (lambda: Damper(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], exponent=0.0), "Damper.exponent"),
        (lambda: Damper(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], velocity_scale=0.0), "Damper.velocity_scale"),
        (lambda: Damper(None, "a", point1=[0, 0, 0], point2=[1, 0, 0], direction="radial"), "Damper.direction"),
        (lambda: TorsionSpring(None, "a", axis=[0, 0, 0]), "TorsionSpring.axis"),
        (lambda: TorsionDamper(None, "a", axis=[0, 0, 1], damping=np.nan), "TorsionDamper.damping"),
        (lambda: PDController(None, "a", axis=[0, 0, 1], gain=-1.0), "PDController.gain"),
        (lambda: PointForce(None, "a", point=[0, 0, 0], force=3.0), "PointForce.force"),
        (lambda: MultibodySystem([RigidBody("a", 1.0, SMALL)], forces=[Spring(None, "b", point1=[0, 0, 0],
                                                                                point2=[1, 0, 0])]),
         r"forces\[0\] \(Spring\).body2 = 'b' names no body"),
        (lambda: MultibodySystem([RigidBody("a", 1.0, SMALL)], forces=["spring"]), r"forces\[0\] must be a force"),
    ],
)
def test_bad_input_messages(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ----------------------------------------------------------------------- element laws in the residual
def test_element_laws_in_the_residual():
    """The residual of a system at rest in acceleration (a = 0) is minus the net generalised force:
    compare it, row by row, with the closed-form force laws of the elements the dynamic tests do not
    run (nonlinear torsion spring, power-law torsion damper, joint torque, point force, polynomial and
    user-energy spring, full-velocity damper). One compiled residual evaluation."""
    theta, w, tau0 = 0.3, 0.7, 0.25  # rotation about z [rad], its rate [rad/s], input torque [N m]
    k_t, k3, c_t, p_t, eps = 2.0, 5.0, 0.4, 2.0, 1e-3
    half = [np.cos(theta / 2), 0.0, 0.0, np.sin(theta / 2)]
    spin = RigidBody("spin", M, [0.1, 0.2, 0.3], orientation=half, angular_velocity=[0.0, 0.0, w])
    pB, r, vB = np.array([0.0, 3.0, 0.0]), np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.1, -0.2])
    push = RigidBody("push", M, SMALL, position=pB, velocity=vB)
    F0, drag, t = np.array([1.0, -2.0, 0.5]), 0.6, 0.7
    pC, uC = np.array([1.3, 6.0, 0.4]), np.array([0.2, -0.5, 0.1])
    pair = RigidBody("pair", M, SMALL, position=pC, velocity=uC)
    anchor, k2, c2, a4, c_d, p_d = np.array([0.0, 6.0, 0.0]), 3.0, 4.0, 7.0, 0.9, 0.5
    # a smooth compression-only spring and damper in contact (e < 0), a tension-only damper (slack)
    pD, uD, anchorD = np.array([0.98, 9.0, 0.0]), np.array([-0.3, 0.2, 0.0]), np.array([0.0, 9.0, 0.0])
    w_s, k_c, c_c = 0.01, 50.0, 2.0
    contact = RigidBody("contact", M, SMALL, position=pD, velocity=uD)
    z = [0.0, 0.0, 1.0]
    forces = [
        # the angle is zero at assembly: a rest angle -theta puts the spring theta from rest
        TorsionSpring(None, "spin", axis=z, stiffness=k_t, coefficients=[0.0, k3], rest_angle=-theta),
        TorsionDamper(None, "spin", axis=z, damping=c_t, exponent=p_t, velocity_scale=eps),
        JointTorque(None, "spin", axis=z, torque=lambda t, angle, rate: tau0 + 0.0 * angle),
        PointForce(None, "push", point=pB + r, force=lambda t, p, v: jnp.asarray(F0) * t - drag * v),
        Spring(None, "pair", point1=anchor, point2=pC, stiffness=k2, rest_length=1.0, coefficients=[c2],
               energy=lambda e: a4 * e**4),
        Damper(None, "pair", point1=anchor, point2=pC, damping=c_d, exponent=p_d, direction="full",
               velocity_scale=eps),
        Spring(None, "contact", point1=anchorD, point2=pD, stiffness=k_c, rest_length=1.0, mode="compression",
               smoothing=w_s),
        Damper(None, "contact", point1=anchorD, point2=pD, damping=c_c, rest_length=1.0, mode="compression",
               smoothing=w_s),
        Damper(None, "contact", point1=anchorD, point2=pD, damping=100.0, rest_length=1.0, mode="tension"),
    ]
    system = MultibodySystem([spin, push, pair, contact], forces=forces)
    state = system.initial_state()
    residual = eqx.filter_jit(lambda s, st: s.residual(st.q, st.v, jnp.zeros_like(st.v), t, st.aux))
    res = np.asarray(residual(system, state))
    f_x, f_psi = res[:12].reshape(4, 3), res[12:24].reshape(4, 3)
    # torsion: k x + k3 x^3 + c w (w^2 + eps^2)^((p - 1) / 2) - tau0 about z; nothing else
    expected_spin = k_t * theta + k3 * theta**3 + c_t * w * (w * w + eps * eps) ** ((p_t - 1) / 2) - tau0
    assert np.allclose(f_psi[0], [0.0, 0.0, expected_spin], atol=1e-12, rtol=1e-12)
    assert np.allclose(f_x[0], 0.0, atol=1e-14)
    # point force f = F0 t - drag v at the offset point: -f on the translation rows, -r x f on rotation
    f = F0 * t - drag * vB
    assert np.allclose(f_x[1], -f, atol=1e-12) and np.allclose(f_psi[1], -np.cross(r, f), atol=1e-12)
    # spring tension k2 e + c2 e^2 + 4 a4 e^3 along the line, full-velocity power-law damper
    d = pC - anchor
    e, n = np.linalg.norm(d) - 1.0, d / np.linalg.norm(d)
    tension = k2 * e + c2 * e**2 + 4 * a4 * e**3
    damping = c_d * uC * (uC @ uC + eps * eps) ** ((p_d - 1) / 2)
    assert np.allclose(f_x[2], tension * n + damping, atol=1e-12, rtol=1e-12)
    assert np.allclose(f_psi[2], 0.0, atol=1e-12)  # attached at the centre of mass
    # smooth switch: energy k r^2 / 2 with r = -w softplus(-e / w), so the tension is k r sigmoid(-e / w);
    # the damper is scaled by the same sigmoid; the slack tension-only damper exerts nothing
    d = pD - anchorD
    e, n = np.linalg.norm(d) - 1.0, d / np.linalg.norm(d)
    sig = 1 / (1 + np.exp(e / w_s))
    r_c = -w_s * np.log1p(np.exp(-e / w_s))
    assert np.allclose(f_x[3], (k_c * r_c * sig + c_c * (uD @ n) * sig) * n, atol=1e-12, rtol=1e-12)
