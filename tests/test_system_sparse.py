"""The structured (block-tridiagonal, reordered) Newton solver of multibody systems against the
dense one: same Jacobian entries (nothing outside the block pattern), same Newton step, same
trajectory and same reverse-mode gradient (implicit differentiation through the transposed
solve), on one system holding a 6-link revolute chain, the closed four-bar of
test_system_multibody and a branched tree (parts that do not interact, so one compiled program
serves all three); and the layout itself (numpy only)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_system_multibody import G, SOLVER, _four_bar, _quat_y, _ry, _slender  # noqa: E402  (tests/ is on sys.path)

import jaxrod
from jaxrod.solvers import BlockTridiagonalJacobianSolver, DenseJacobianSolver, PermutedJacobianSolver
from jaxrod.solvers.ordering import level_layout, prefer_dense
from jaxrod.system import MultibodySystem, Revolute, RigidBody, Spherical, Spring
from jaxrod.system.structure import multibody_layout, multibody_linear_solver

LINK, MASS = 0.3, 0.5
CHAIN = 6


def _link(name, start, end):
    """Slender link from ``start`` to ``end`` (in a plane y = const), body x axis along it."""
    e = (end - start) / np.linalg.norm(end - start)
    return RigidBody(name, MASS, _slender(MASS, LINK), position=0.5 * (start + end),
                     orientation=_quat_y(np.arctan2(-e[2], e[0])))


def _chain(origin):
    """CHAIN links hinged about y, released straight at 0.7 rad off the vertical."""
    e = _ry(0.7) @ [0.0, 0.0, -LINK]
    bodies = [_link(f"c{k}", origin + k * e, origin + (k + 1) * e) for k in range(CHAIN)]
    joints = [Revolute(None if k == 0 else f"c{k - 1}", f"c{k}", point=origin + k * e, axis=[0, 1, 0])
              for k in range(CHAIN)]
    return bodies, joints


def _tree(origin):
    """A trunk on a ball joint with three branches of two links each, hinged about different
    axes (a 3-D motion). Its pseudo-diameter runs through two branches; the third sits beside
    them, so two BFS levels hold two links each."""
    down = np.array([0.0, 0.0, -LINK])
    hip = origin + down
    bodies, joints = [_link("trunk", origin, hip)], [Spherical(None, "trunk", point=origin)]
    for side, s, axis in (("l", -1, [0, 1, 0]), ("r", 1, [0, 1, 0]), ("f", 0.3, [1, 0, 0.2])):
        knee = hip + _ry(s * 0.6) @ down
        foot = knee + _ry(s * 0.9) @ down
        bodies += [_link(f"{side}1", hip, knee), _link(f"{side}2", knee, foot)]
        joints += [Revolute("trunk", f"{side}1", point=hip, axis=axis),
                   Revolute(f"{side}1", f"{side}2", point=knee, axis=[1.0, s * 0.5, 0.0])]
    return bodies, joints


@pytest.fixture(scope="module")
def system():
    parts = [_chain(np.array([0.0, 3.0, 0.0])), _four_bar(), _tree(np.array([0.0, 6.0, 0.0]))]
    crank, _, rocker = parts[1][0]
    # a spring across the four-bar couples two bodies no joint joins (one more edge of the graph)
    spring = Spring("crank", "rocker", point1=crank.position, point2=rocker.position, stiffness=20.0)
    return MultibodySystem(sum((b for b, _ in parts), []), sum((j for _, j in parts), []), gravity=[0, 0, -G],
                           forces=[spring])


def test_layout_of_chain_loop_and_tree(system):
    lay = multibody_layout(system)
    # the four-bar with its spring is a triangle: from the crank, one level holds coupler and
    # rocker with three joints reaching back (2 x 6 + 5 + 5 + 2 = 24 unknowns), the largest unit
    # (the tree's widest level has 22); chain units (a link and its revolute: 11) go two a block
    assert lay.block_size == 24
    chain_slots = lay.slots[: 3 * CHAIN : 3]
    assert np.array_equal(np.sort(chain_slots // 24), np.repeat(np.arange(CHAIN // 2), 2))
    assert len(np.unique(lay.slots)) == system.n_coordinates
    assert isinstance(system.default_linear_solver(), PermutedJacobianSolver)
    # a star (one hub, 8 leaves) has a single wide level: dense is cheaper and is chosen
    hub = [RigidBody("hub", 1.0, [1.0, 1.0, 1.0])]
    leaves = [RigidBody(f"s{k}", 1.0, [1.0, 1.0, 1.0], position=[np.cos(k), np.sin(k), 0.0]) for k in range(8)]
    star = MultibodySystem(hub + leaves, [Spherical("hub", f"s{k}", point=[0.5 * np.cos(k), 0.5 * np.sin(k), 0.0])
                                          for k in range(8)])
    assert isinstance(multibody_linear_solver(star), DenseJacobianSolver)
    assert prefer_dense(star.n_coordinates, multibody_layout(star), dense_below=0)


def test_layout_rejects_unknowns_not_covered():
    with pytest.raises(ValueError, match="must cover the 5 unknowns exactly once, got 4 entries"):
        level_layout(5, [np.arange(2), np.arange(2, 4)], [(0, 1)])


def _stage_residual(system, q0, dt):
    """The system's residual as a function of the end-of-step ``q`` with midpoint-like stage
    velocity and acceleration (a Newton matrix with inertia, constraint and stiffness parts)."""
    aux = system.init_aux(q0)
    return lambda q: system.residual(0.5 * (q + q0), (q - q0) / dt, 4.0 * (q - q0) / dt**2, 0.0, aux)


def test_newton_step_and_pattern_equal_dense(system):
    ls = multibody_linear_solver(system, dense_below=0)
    q0 = system.initial_state().q
    n = q0.size
    rng = np.random.default_rng(0)
    q = q0 + 0.05 * jnp.asarray(rng.standard_normal(n))
    f = _stage_residual(system, q0, 0.01)

    @jax.jit
    def both(q, b):
        op = ls.linearize(f, q)
        fac = ls.factor(op)
        J = jax.jacfwd(f)(q)
        r = f(q)  # here, not eagerly below: op by op it compiled ~300 small programs
        return J, ls.matvec(op, b), ls.diagonal(op), ls.solve(fac, -r), ls.solve_transpose(fac, b), r

    b = jnp.asarray(rng.standard_normal(n))
    J, Jb, d, step, yt, r = both(q, b)
    J = np.asarray(J)
    # every Jacobian entry is recovered (an entry outside the block pattern would alias into
    # another and change J b), and the structure is real (J is 90% zeros)
    assert np.mean(J == 0) > 0.9
    assert np.max(np.abs(np.asarray(Jb) - J @ b)) < 1e-12 * np.max(np.abs(J @ b))
    # (JVPs of several columns at once round differently from one column at a time)
    assert np.max(np.abs(np.asarray(d) - np.diag(J))) < 1e-12 * np.max(np.abs(J))
    # the step solves J step = -f to rounding (backward error; measured 2.8e-17, dense LU 5.6e-18)
    # and so agrees with dense LU to the conditioning (cond(J) = 1.7e8 here; measured 4.5e-12,
    # 2.3e-15 at the unperturbed state)
    r = np.asarray(r)
    scale = np.max(np.abs(J))
    assert np.max(np.abs(J @ np.asarray(step) + r)) < 1e-15 * scale * np.max(np.abs(step))
    assert np.max(np.abs(J.T @ np.asarray(yt) - np.asarray(b))) < 1e-15 * scale * np.max(np.abs(yt))
    dense, dense_t = np.linalg.solve(J, -r), np.linalg.solve(J.T, np.asarray(b))
    assert np.max(np.abs(step - dense)) < 1e-10 * np.max(np.abs(dense))
    assert np.max(np.abs(yt - dense_t)) < 1e-10 * np.max(np.abs(dense_t))


STEPS, DT = 40, 0.005


@eqx.filter_jit
def _final(system, gravity, linear_solver):
    sys_g = eqx.tree_at(lambda s: s.gravity, system, gravity)
    solver = eqx.tree_at(lambda s: s.linear_solver, SOLVER, linear_solver, is_leaf=lambda x: x is None)
    traj = jaxrod.simulate(sys_g, dt=DT, n_steps=STEPS, solver=solver, fallback=False, save_every=STEPS)
    return traj.q[-1], traj.stats.converged


def test_trajectory_equals_dense(system):
    g = jnp.asarray([0.0, 0.0, -G])
    q_s, ok_s = _final(system, g, None)  # None: the system's default, the structured solver
    q_d, ok_d = _final(system, g, DenseJacobianSolver())
    assert bool(np.all(ok_s)) and bool(np.all(ok_d))
    nb = system.n_bodies
    moved = np.asarray(q_s[: 3 * nb] - system.initial_state().q[: 3 * nb])
    assert np.max(np.abs(moved)) > 0.01  # every part swings
    assert np.max(np.abs(np.asarray(q_s[: 6 * nb] - q_d[: 6 * nb]))) < 1e-12


def test_gradient_equals_dense(system):
    """Reverse mode through one implicit step (``newton_solve``, as simulate takes it): implicit
    differentiation with the transposed solve of each solver."""
    q0 = system.initial_state().q
    w = jnp.asarray(np.random.default_rng(1).standard_normal(q0.size))

    def step_output(gravity, ls):
        sys_g = eqx.tree_at(lambda s: s.gravity, system, gravity)
        f = _stage_residual(sys_g, q0, 0.01)
        solver = eqx.tree_at(lambda s: s.linear_solver, SOLVER, ls, is_leaf=lambda x: x is None)
        res = jaxrod.newton_solve(lambda q, _: f(q), q0, None, solver)
        return w @ res.value

    @jax.jit
    def grads(gravity):
        return [jax.grad(step_output)(gravity, ls) for ls in (system.default_linear_solver(), DenseJacobianSolver())]

    grad_s, grad_d = grads(jnp.asarray([0.3, 0.0, -G]))
    assert isinstance(system.default_linear_solver(), PermutedJacobianSolver)
    assert np.max(np.abs(np.asarray(grad_s))) > 1e-3
    assert np.max(np.abs(np.asarray(grad_s - grad_d))) < 1e-10 * np.max(np.abs(np.asarray(grad_d)))
