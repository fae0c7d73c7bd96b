"""Joint coordinates (:class:`jaxrod.system.JointSpaceSystem`, RK4 / semi-implicit Euler) against
the maximal-coordinate model and closed forms.

The maximal-coordinate runs (average vector field, Newton to 1e-12) are Richardson-extrapolated
from ``dt`` and ``dt / 2`` (the scheme is symmetric: its error has only even powers of ``dt``), so
both references are accurate to ~1e-11 and the two formulations are compared to 1e-8.
"""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.integrate import State
from jaxrod.integrate.explicit import RK4, SemiImplicitEuler
from jaxrod.system import (Fixed, JointSpaceSystem, MultibodySystem, Planar, PlanarPin, Prismatic, Revolute, RigidBody,
                           Spherical, Spring, Universal)

G = [0.0, 0.0, -9.81]
TIGHT = jaxrod.NewtonSolver(rtol=0.0, atol=1e-12)


def _quat_y(a):
    return [np.cos(a / 2), 0.0, np.sin(a / 2), 0.0]


def _chain(n, L=0.3, m=0.5, tilt=0.7):
    """Planar chain of n slender links hinged about y (benchmarks/chain_joint.py's chain)."""
    e = np.array([np.sin(tilt), 0.0, -np.cos(tilt)])
    i = m * L**2 / 12
    q = _quat_y(np.pi / 2 - tilt)  # body x along the link (a rotation by a about y maps x to (cos a, 0, -sin a))
    bodies = [RigidBody(f"l{k}", m, [0.01 * i, i, i], position=(k + 0.5) * L * e, orientation=q) for k in range(n)]
    joints = [Revolute(None if k == 0 else f"l{k - 1}", f"l{k}", point=k * L * e, axis=[0.0, 1.0, 0.0])
              for k in range(n)]
    return MultibodySystem(bodies, joints, gravity=G)


def _tree3d_forces():
    return [Spring(None, "d", point1=(0.6, 0.4, -1.0), point2=(0.45, 0.3, -1.2), stiffness=20.0)]


def _tree3d():
    """A 3-D tree with every supported joint: ball, cardan, spring-loaded slider, damped and driven
    hinge, planar, a welded body, a spring element to the world, constant and time-dependent body loads, and a free
    spinning body."""
    rot = [0.9, 0.2, -0.3, 0.25]
    bodies = [
        RigidBody("a", 1.0, [[0.02, 0.003, 0.0], [0.003, 0.03, 0.001], [0.0, 0.001, 0.025]],
                  position=(0.1, 0.05, -0.3), orientation=rot),
        RigidBody("b", 0.7, [0.01, 0.012, 0.015], position=(0.2, 0.1, -0.85), orientation=[1, 0.1, 0.2, 0.0]),
        RigidBody("c", 0.4, [0.004, 0.005, 0.006], position=(0.35, 0.15, -1.1), force=(0.2, -0.1, 0.3),
                  torque=(0.0, 0.01, -0.02)),
        RigidBody("d", 0.3, [0.002, 0.003, 0.0025], position=(0.45, 0.3, -1.2), orientation=[0.5, 0.5, 0.5, 0.5]),
        RigidBody("e", 0.8, [0.01, 0.02, 0.025], position=(1.0, 0.0, 0.0), orientation=rot),
        RigidBody("f", 0.5, [0.003, 0.004, 0.005], position=(0.35, -0.15, -0.85), orientation=[1, 0, 0.3, 0.1]),
        RigidBody("g", 0.2, [0.001, 0.002, 0.002], position=(0.5, 0.35, -1.3), orientation=[1, 0.2, 0, 0]),
    ]
    joints = [
        Spherical(None, "a", point=(0.0, 0.0, 0.0)),
        Universal("a", "b", point=(0.15, 0.05, -0.6), axis1=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0)),
        Prismatic("b", "c", point=(0.3, 0.1, -1.0), axis=(0.3, 0.2, -1.0), stiffness=40.0, damping=0.3,
                  rest_length=0.02),
        Revolute("c", "d", point=(0.4, 0.2, -1.15), axis=(0.0, 1.0, 1.0), damping=0.01, stiffness=0.5,
                 torque=lambda t: 0.05 * jnp.sin(3.0 * t)),
        Planar("b", "f", point=(0.3, -0.1, -0.8), axis=(0.2, 1.0, 0.1)),
        Fixed("d", "g", point=(0.48, 0.32, -1.25)),
    ]
    forces = _tree3d_forces()
    def loads(t):  # world forces at the centres of mass and torques, (n_bodies, 3) each
        f = jnp.zeros((7, 3)).at[1].set(jnp.stack([0.3 * jnp.sin(2.0 * t), 0.0, 0.5]))
        return f, jnp.zeros((7, 3)).at[3].set(jnp.stack([0.0, 0.02 * t, 0.01]))

    return MultibodySystem(bodies, joints, gravity=G, forces=forces, loads=loads)


def _maximal(system, js, v_joint, dt, n):
    """Body positions and frames after n steps of the maximal model (AVF, Richardson from dt, dt/2)."""
    s0 = system.initial_state()
    s0 = State(s0.q, js.maximal_velocity(js.zero_configuration(), v_joint), s0.aux)
    out = []
    for h, k in ((dt, n), (dt / 2, 2 * n)):
        tr = jaxrod.simulate(system, dt=h, n_steps=k, save_every=k, state0=s0, solver=TIGHT)
        out.append((np.asarray(tr.positions[-1]), np.asarray(tr.frames[-1])))
    return tuple((4 * b - a) / 3 for a, b in zip(*out)), out[1]


def _joint(js, v_joint, dt, n, scheme=None):
    st = State(js.zero_configuration(), v_joint, None)
    return jaxrod.simulate(js, dt=dt, n_steps=n, save_every=n, state0=st, scheme=scheme)


@pytest.mark.parametrize("case", ["double_pendulum", "chain10", "tree3d"])
def test_joint_coordinates_agree_with_maximal(case):
    if case == "tree3d":
        system = _tree3d()
        js = JointSpaceSystem(system)
        # ball, cardan, planar, slider, hinge, weld, free body
        assert js.kinds == "BRRPPRPRFPPPB" and js.n_v == 16 and js.n_q == 18
        v0 = jnp.asarray([0.5, -1.0, 0.4, 0.8, 0.3, 0.2, -0.3, 1.1, -0.2, 1.5, 0.1, -0.2, 0.3, 0.5, 6.0, 2.0])
        dt, n = 2e-3, 100
    else:
        system = _chain(2 if case == "double_pendulum" else 10)
        js = JointSpaceSystem(system)
        v0 = jnp.linspace(0.5, -0.5, js.n_v)
        dt, n = 2e-3, 100 if case == "double_pendulum" else 50
    (x_ref, F_ref), (x_half, _) = _maximal(system, js, v0, dt, n)
    tr = _joint(js, v0, dt / 2, 2 * n)
    x, F = np.asarray(tr.positions[-1]), np.asarray(tr.frames[-1])
    moved = np.max(np.abs(x - np.asarray(tr.positions[0])))
    assert moved > 0.01  # the bodies did move
    assert np.max(np.abs(x - x_ref)) < 1e-8, np.max(np.abs(x - x_ref))
    assert np.max(np.abs(F - F_ref)) < 1e-8, np.max(np.abs(F - F_ref))
    # and the plain AVF run at dt/2 is only second-order close (the test can tell the difference)
    assert np.max(np.abs(x - x_half)) > 1e-9
    # the same energy function of the maximal model on the joint-space state, and the own one
    q1, v1 = tr.q[-1], tr.v[-1]
    e_max = system.energy(tr.positions[-1], tr.frames[-1], js.maximal_velocity(q1, v1), t=float(tr.times[-1]))
    e_js = js.energy(q1, v1, t=float(tr.times[-1]))
    assert abs(float(e_max) - float(e_js)) < 1e-10 * (1 + abs(float(e_js)))


def test_generalised_forces_are_minus_the_potential_gradient():
    """At rest, ``M qdd = tau(q, 0)`` must be ``-dV/dx`` along the chart (gravity, joint springs,
    penetrated joint limits, the input's work, a spring element): the RNEA forces against the
    energy function, on the 3-D tree with limits added and its non-conservative loads removed."""
    base = _tree3d()
    joints = list(base.joints)
    joints[2] = Prismatic("b", "c", point=(0.3, 0.1, -1.0), axis=(0.3, 0.2, -1.0), stiffness=40.0, lower=-0.01,
                          upper=0.01, limit_stiffness=900.0, limit_damping=3.0)
    joints[3] = Revolute("c", "d", point=(0.4, 0.2, -1.15), axis=(0.0, 1.0, 1.0), stiffness=0.5, lower=-0.2,
                         upper=0.2, limit_stiffness=50.0, torque=lambda t: 0.05 + 0.1 * t)
    bodies = [RigidBody(b.name, b.mass, b.inertia, position=b.position, orientation=b.orientation) for b in base.bodies]
    js = JointSpaceSystem(MultibodySystem(bodies, joints, gravity=G, forces=_tree3d_forces()))
    x = jnp.linspace(-0.4, 0.5, js.n_v).at[9].set(0.35)  # slider travel 0.08 m (limit 0.01), hinge 0.35 rad (0.2)
    q = js.displace(js.zero_configuration(), x)
    t = 0.7

    @jax.jit
    def both(q):
        M, tau = js.dynamics(q, jnp.zeros(js.n_v), t)
        grad = jax.grad(lambda dx: js.energy(js.displace(q, dx), jnp.zeros(js.n_v), t))(jnp.zeros(js.n_v))
        return M, tau, grad

    M, tau, grad = both(q)
    s_slider, s_hinge = np.asarray(q)[[5, 6]]
    assert abs(s_slider) > 0.01 and abs(s_hinge) > 0.2  # both limits penetrated
    np.testing.assert_allclose(np.asarray(tau), -np.asarray(grad), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(M), np.asarray(M).T, atol=1e-14)
    assert np.linalg.eigvalsh(np.asarray(M))[0] > 0


def test_rk4_converges_at_fourth_order_and_euler_at_first():
    """Double pendulum, 1 s from a horizontal upper link: the position error against a dt/16 run
    falls 16x per halving of dt with RK4 (measured 16.2) and 2x with semi-implicit Euler (2.0)."""
    js = JointSpaceSystem(_chain(2, L=1.0, m=1.0, tilt=np.pi / 2))
    ref = np.asarray(jaxrod.simulate(js, dt=0.01 / 16, duration=1.0, save_every=32).positions)
    errs = {}
    for scheme in (RK4(), SemiImplicitEuler()):
        for dt in (0.01, 0.005):
            k = int(round(0.02 / dt))
            tr = jaxrod.simulate(js, dt=dt, duration=1.0, save_every=k, scheme=scheme)
            errs[type(scheme).__name__, dt] = np.max(np.abs(np.asarray(tr.positions) - ref))
    assert 13 < errs["RK4", 0.01] / errs["RK4", 0.005] < 19, errs
    assert 1.8 < errs["SemiImplicitEuler", 0.01] / errs["SemiImplicitEuler", 0.005] < 2.2, errs
    assert errs["RK4", 0.005] < 1e-7
    st = js.initial_state()
    tr = jaxrod.simulate(js, dt=0.005, duration=1.0, save_every=4)
    e = np.asarray(js.energy(tr.q, tr.v))
    assert np.max(np.abs(e - e[0])) < 1e-6  # [J], of m g L = 9.81 J
    assert float(js.energy(st.q, st.v)) == pytest.approx(e[0], abs=1e-14)


def test_small_pendulum_period_and_free_body():
    """A compound pendulum released at 1e-3 rad follows theta0 cos(w t), w^2 = m g d / I_pivot
    (relative error of the linearisation ~theta0^2/16); a free body falls exactly as x0 + v0 t +
    g t^2 / 2 and keeps its world angular momentum."""
    m, L, th0 = 2.0, 0.8, 1e-3
    i = m * L**2 / 12
    d = L / 2
    e = np.array([np.sin(th0), 0.0, -np.cos(th0)])
    free = RigidBody("free", 0.8, [0.01, 0.02, 0.025], position=(1.0, 0.0, 0.0), velocity=(0.3, -0.1, 2.0),
                     angular_velocity=(0.5, 7.0, 0.2), orientation=[0.9, 0.2, -0.3, 0.25])
    bob = RigidBody("bob", m, [0.01 * i, i, i], position=d * e, orientation=_quat_y(th0 - np.pi / 2))
    js = JointSpaceSystem(MultibodySystem([bob, free], [Revolute(None, "bob", point=(0, 0, 0), axis=(0, 1, 0))],
                                          gravity=G))
    w = np.sqrt(m * 9.81 * d / (i + m * d * d))
    T = 2 * np.pi / w
    tr = jaxrod.simulate(js, dt=T / 400, n_steps=400, save_every=100)
    ts = np.asarray(tr.times)
    x = np.asarray(tr.positions)
    theta = np.arctan2(x[:, 0, 0], -x[:, 0, 2])
    assert np.max(np.abs(theta - th0 * np.cos(w * ts))) < 2e-6 * th0
    x_free = x[:, 1]
    exact = np.array([1.0, 0.0, 0.0]) + np.outer(ts, [0.3, -0.1, 2.0]) + 0.5 * np.outer(ts**2, G)
    assert np.max(np.abs(x_free - exact)) < 1e-12
    R = np.swapaxes(np.asarray(tr.frames[:, 1]), -1, -2)
    _, om = jax.jit(jax.vmap(js.body_velocities))(tr.q, tr.v)
    Lw = np.einsum("tij,jk,tk->ti", R, np.diag([0.01, 0.02, 0.025]), np.asarray(om[:, 1]))
    assert np.max(np.abs(Lw - Lw[0])) < 1e-8 * np.linalg.norm(Lw[0])


def test_refused_inputs_name_the_problem():
    a = RigidBody("a", 1.0, [0.01, 0.01, 0.01], position=(0.5, 0, 0))
    b = RigidBody("b", 1.0, [0.01, 0.01, 0.01], position=(0.5, 0, -0.5))
    y = (0.0, 1.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = MultibodySystem([a, b], [Revolute(None, "a", point=(0, 0, 0), axis=y),
                                        Revolute("a", "b", point=(0.5, 0, 0), axis=y),
                                        Revolute(None, "b", point=(0, 0, -0.5), axis=y)])
    with pytest.raises(ValueError, match="closed kinematic loop.*maximal coordinates"):
        JointSpaceSystem(loop)
    pin = MultibodySystem([a], [PlanarPin(None, "a", point=(0, 0, 0), axis=(0, 0, 1))])
    with pytest.raises(ValueError, match="joints\\[0\\] is a PlanarPin.*maximal coordinates"):
        JointSpaceSystem(pin)
    with pytest.raises(ValueError, match="must be a MultibodySystem"):
        JointSpaceSystem([a])
    pend = MultibodySystem([a], [Revolute(None, "a", point=(0, 0, 0), axis=y)], gravity=G)
    tr = jaxrod.simulate(JointSpaceSystem(pend), dt=0.01, n_steps=2, scheme="semi_implicit_euler")  # by name
    assert tr.positions.shape == (3, 1, 3) and bool(tr.valid[-1])
    with pytest.raises(NotImplementedError, match="no static solve.*solve_static"):
        jaxrod.solve_static(JointSpaceSystem(pend))
    with pytest.raises(ValueError, match="explicit scheme"):
        jaxrod.simulate(JointSpaceSystem(pend), dt=0.01, n_steps=2, scheme=jaxrod.BackwardEuler())
    with pytest.raises(ValueError, match="solver must be None"):
        jaxrod.simulate(JointSpaceSystem(pend), dt=0.01, n_steps=2, solver=TIGHT)
    with pytest.raises(ValueError, match="implicit model"):
        jaxrod.simulate(pend, dt=0.01, n_steps=2, scheme=RK4())
    with pytest.raises(ValueError, match="outside jax.jit"):
        jax.jit(lambda g: JointSpaceSystem(MultibodySystem([a], [Revolute(None, "a", point=g, axis=y)])))(
            jnp.zeros(3))
    moving = RigidBody("a", 1.0, [0.01, 0.01, 0.01], position=(0.5, 0, 0), velocity=(1.0, 0, 0))
    with pytest.raises(ValueError, match="not compatible with the"):
        JointSpaceSystem(MultibodySystem([moving], [Revolute(None, "a", point=(0, 0, 0), axis=y)])).initial_state()


def test_gradient_through_rk4_run_matches_finite_differences():
    """d(upper link tip x after 0.3 s)/d(lower mass) through the jitted RK4 run (reverse mode
    through the scan) against central differences."""
    js = JointSpaceSystem(_chain(2, L=1.0, m=1.0, tilt=np.pi / 2))

    def tip_x(mass):
        m = eqx.tree_at(lambda s: s.system.bodies[1].mass, js, mass)
        tr = jaxrod.simulate(m, dt=0.01, n_steps=30, save_every=30, throw=False)
        return tr.positions[-1, 1, 0]

    vg = jax.jit(jax.value_and_grad(tip_x))  # one program for the gradient and the differences
    g = float(vg(1.0)[1])
    h = 1e-5
    fd = (float(vg(1.0 + h)[0]) - float(vg(1.0 - h)[0])) / (2 * h)
    assert abs(g) > 1e-3 and abs(g - fd) < 1e-6 * abs(fd), (g, fd)


def test_unstable_explicit_run_is_reported_and_masked():
    """RK4 at dt ~ 3.5 / omega on a stiff hinge spring diverges to inf: the plain call raises
    ConvergenceError naming the explicit step; the jitted run (no conditional around its steps)
    masks every frame after the failure and keeps the last finite state."""
    a = RigidBody("a", 1.0, [0.01, 0.01, 0.01], position=(0.5, 0, 0))
    stiff = MultibodySystem([a], [Revolute(None, "a", point=(0, 0, 0), axis=(0, 1, 0), stiffness=1e4)], gravity=G)
    js = JointSpaceSystem(stiff)
    st = State(js.zero_configuration(), jnp.asarray([1.0]), None)
    with pytest.raises(jaxrod.ConvergenceError, match="explicit step"):
        jaxrod.simulate(js, dt=0.02, n_steps=400, state0=st)
    tr = jax.jit(lambda m: jaxrod.simulate(m, dt=0.02, n_steps=400, save_every=10, state0=st, throw=False))(js)
    valid = np.asarray(tr.valid)
    assert valid[0] and not valid[-1] and np.all(np.diff(valid.astype(int)) <= 0)
    assert np.all(np.isnan(np.asarray(tr.positions)[~valid]))
    assert np.all(np.isfinite(np.asarray(tr.final.q))) and not np.all(np.asarray(tr.stats.converged))


def test_vmap_batch_equals_single_runs():
    """A batch of initial velocities through jax.vmap of a jitted run equals the runs one by one."""
    js = JointSpaceSystem(_chain(3))
    v0 = jnp.asarray([[0.0, 0.0, 0.0], [1.0, -0.5, 0.2], [-2.0, 0.3, 0.0]])

    @jax.jit
    def run(v):
        st = State(js.zero_configuration(), v, None)
        return jaxrod.simulate(js, dt=0.01, n_steps=20, save_every=20, state0=st, throw=False).positions[-1]

    batch = np.asarray(jax.vmap(run)(v0))
    single = np.stack([np.asarray(run(v)) for v in v0])
    np.testing.assert_allclose(batch, single, rtol=0, atol=1e-13)
    assert np.max(np.abs(batch[1] - batch[0])) > 1e-3
