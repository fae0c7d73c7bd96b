"""The structured (block-tridiagonal, reordered) Newton solver of a HybridSystem against the dense
one: every Jacobian entry recovered (nothing outside the block pattern of
``jaxrod.system.hybrid.hybrid_layout``), the same Newton step and the same trajectory, on two DER
rods clamped to a hub that hangs from one rod's tip pinned to the world and carries an arm on a
revolute joint (rod chunks, bodies, a joint, clamps and a world pin in one graph)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.solvers import DenseJacobianSolver, PermutedJacobianSolver
from jaxrod.system import HybridSystem, Revolute, RigidBody, RodClamp, RodPin
from jaxrod.system.hybrid import hybrid_layout, hybrid_linear_solver

G, DT, STEPS = 9.81, 2e-3, 6
SOLVER = jaxrod.NewtonSolver(rtol=0.0, atol=1e-11)


@pytest.fixture(scope="module")
def system():
    rods = [jaxrod.DERModel(jaxrod.DERRod.cantilever(5, 0.3, clamped_ends="both", start=(0.05, y, 0.0),
                                                     youngs_modulus=2e7, density=1000.0, radius=4e-3))
            for y in (0.0, 0.1)]
    bodies = [RigidBody("hub", 0.2, [1e-4, 1e-4, 1e-4], position=(0.0, 0.05, 0.0)),
              RigidBody("arm", 0.1, [1e-4, 1e-4, 1e-4], position=(0.0, 0.05, -0.15))]
    joints = [Revolute("hub", "arm", point=(0.0, 0.05, -0.05), axis=(0.0, 1.0, 0.0))]
    # rod 1's tip stays free; the hub hangs from rod 0's tip (a world pin) and swings down
    att = [RodClamp(0, 0, "hub"), RodClamp(1, 0, "hub"), RodPin(0, -1)]
    return HybridSystem(rods, bodies, joints, att, gravity=(0.0, 0.0, -G))


def test_layout_is_structured(system):
    lay = hybrid_layout(system)
    assert lay is not None and lay.n_blocks > 2
    assert len(np.unique(lay.slots)) == system.n_coordinates
    # levels start at the world pin (rod 0's last node, unknowns 16-19) and its 3 rows: each
    # leading block is then a sub-system held by the world, nonsingular without mass (static
    # Jacobians)
    pin = system.n_coordinates - system.n_attachment_rows + np.arange(3)
    assert np.all(lay.slots[16:20] // lay.block_size == 0) and np.all(lay.slots[pin] // lay.block_size == 0)
    # 90 unknowns: above DENSE_BELOW, the default is the structured solver
    assert isinstance(system.default_linear_solver(), PermutedJacobianSolver)
    assert isinstance(hybrid_linear_solver(system, dense_below=10**6), DenseJacobianSolver)


@eqx.filter_jit
def _compare(system, structured, q, b):
    """One program: the dense Jacobian, the structured operator's ``J b`` and Newton step at ``q``,
    and the end of a short run with each solver."""
    st = system.initial_state()
    q0 = st.q

    def f(qq):
        return system.residual(0.5 * (qq + q0), (qq - q0) / DT, 4.0 * (qq - q0) / DT**2, 0.0, st.aux)

    op = structured.linearize(f, q)
    ends = []
    for ls in (structured, DenseJacobianSolver()):
        solver = eqx.tree_at(lambda s: s.linear_solver, SOLVER, ls, is_leaf=lambda x: x is None)
        traj = jaxrod.simulate(system, dt=DT, n_steps=STEPS, solver=solver, fallback=False, save_every=STEPS)
        ends.append((traj.q[-1], jnp.all(traj.stats.converged)))
    return jax.jacfwd(f)(q), f(q), structured.matvec(op, b), structured.solve(structured.factor(op), -f(q)), ends


@pytest.fixture(scope="module")
def compared(system):
    n = system.n_coordinates
    rng = np.random.default_rng(0)
    # a perturbed state (1e-3 in every unknown) keeps every coupling term non-zero
    q = system.initial_state().q + 1e-3 * jnp.asarray(rng.standard_normal(n))
    b = jnp.asarray(rng.standard_normal(n))
    return b, _compare(system, hybrid_linear_solver(system, dense_below=0), q, b)


def test_operator_and_newton_step_equal_dense(compared):
    b, (J, r, Jb, step, _) = compared
    J, r, Jb, step, b = (np.asarray(x) for x in (J, r, Jb, step, b))
    assert np.mean(J == 0) > 0.7  # the structure is real
    # an entry outside the block pattern would alias into another and change J b
    assert np.max(np.abs(Jb - J @ b)) < 1e-12 * np.max(np.abs(J @ b))
    dense = np.linalg.solve(J, -r)
    assert np.max(np.abs(step - dense)) < 1e-10 * np.max(np.abs(dense))


def test_trajectory_equals_dense(system, compared):
    (q_s, ok_s), (q_d, ok_d) = compared[1][-1]
    assert bool(ok_s) and bool(ok_d)
    q0 = np.asarray(system.initial_state().q)
    keep = ~np.asarray(system.multiplier_mask())
    assert np.max(np.abs(np.asarray(q_d)[keep] - q0[keep])) > 1e-4  # the system moves
    assert np.max(np.abs(np.asarray(q_s - q_d)[keep])) < 1e-10
