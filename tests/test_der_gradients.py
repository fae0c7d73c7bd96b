"""Exact gradients through implicit DER time steps (implicit differentiation of every Newton
solve, reverse mode through the time loop) against central finite differences, plus batching."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod

N = 11
STEPS = 24
DT = 0.01
TIGHT = jaxrod.NewtonSolver(linear_solver=None, rtol=1e-13, atol=1e-15, max_steps=60, reuse_jacobian=True)


def build(E, rho, kappa_scale, force):
    """Cantilever with gravity, a tip force and a uniform natural curvature (all traced)."""
    pts = np.stack([np.linspace(0, 0.5, N), np.zeros(N), np.zeros(N)], axis=1)
    rod = jaxrod.DERRod.from_polyline(pts, rest="stress_free", youngs_modulus=E, density=rho, radius=0.01)
    kappa = jnp.zeros((N - 2, 2)).at[:, 1].set(kappa_scale)
    rod = rod.with_natural_curvature(kappa)
    forces = jnp.zeros((N, 3)).at[-1].set(force)
    return jaxrod.DERModel(rod, clamped_edges=(0,), gravity=(0.0, 0.0, -9.8), point_forces=forces)


def loss(params):
    model = build(params["E"], params["rho"], params["kappa"], params["force"])
    # fallback=False: no step may need the backward-Euler retry (it would fail the run); under
    # jax.grad the retry ladder would otherwise be compiled into every step (XLA 34 -> 25 s CPU).
    # Reverse mode through that ladder is checked in test_failures.py.
    traj = jaxrod.simulate(model, dt=DT, n_steps=STEPS, solver=TIGHT, fallback=False)
    tip = traj.tip[-1]
    return tip[2] + 0.3 * tip[0] + 0.1 * tip[1]


P0 = {
    "E": jnp.asarray(2e6),
    "rho": jnp.asarray(1200.0),
    "kappa": jnp.asarray(0.02),
    "force": jnp.asarray([0.01, 0.02, -0.05]),
}


# one compiled program (reverse mode, its primal output is the loss) serves the gradient and every
# finite-difference run (a separate forward-only program would be a second compilation)
loss_and_grad = jax.jit(jax.value_and_grad(loss))


@pytest.fixture(scope="module")
def grads():
    return loss_and_grad(P0)[1]


@pytest.mark.parametrize(
    "name, idx, rel_step",
    [("E", None, 1e-5), ("rho", None, 1e-5), ("kappa", None, 1e-4), ("force", 0, 1e-3), ("force", 2, 1e-3)],
)
def test_gradient_matches_central_differences(grads, name, idx, rel_step):
    base = P0[name]
    h = rel_step * float(jnp.max(jnp.abs(base)))

    def shifted(delta):
        p = dict(P0)
        p[name] = base + delta if idx is None else base.at[idx].add(delta)
        return float(loss_and_grad(p)[0])

    fd = (shifted(h) - shifted(-h)) / (2 * h)
    g = float(grads[name] if idx is None else grads[name][idx])
    assert abs(fd) > 0
    assert abs(g - fd) <= 1e-5 * abs(fd), (g, fd)


def test_vmap_over_moduli_matches_separate_runs():
    """A vmapped batch equals separate runs. Under vmap the Newton solver takes its chord/Jacobian
    decisions once per batch (NewtonSolver.batch_uniform), so a member may iterate differently
    from its single run: both are converged far below the 1e-9 m asserted (rtol = atol = 1e-12;
    at the default 1e-9 they differed by 4.5e-9 m over the run)."""
    moduli = jnp.asarray([1e6, 2e6, 5e6])
    solver = jaxrod.NewtonSolver(rtol=1e-12, atol=1e-12)

    def tip_history(E):
        model = build(E, P0["rho"], P0["kappa"], P0["force"])
        return jaxrod.simulate(model, dt=DT, n_steps=STEPS, solver=solver).tip

    batched = jax.jit(jax.vmap(tip_history))(moduli)
    for i, E in enumerate(moduli):
        single = jaxrod.simulate(build(E, P0["rho"], P0["kappa"], P0["force"]), dt=DT, n_steps=STEPS,
                                 solver=solver).tip
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(single), rtol=0, atol=1e-9)
    # different moduli really give different motions
    assert float(jnp.max(jnp.abs(batched[0] - batched[2]))) > 1e-4


def test_banded_jacobian_equals_dense_on_random_state():
    model = build(P0["E"], P0["rho"], P0["kappa"], P0["force"])
    state = model.initial_state()
    key = jax.random.PRNGKey(3)
    q = state.q + 0.02 * jax.random.normal(key, state.q.shape)
    v = 0.1 * jax.random.normal(jax.random.PRNGKey(4), state.q.shape)

    def f(x):
        return model.residual(x.reshape(q.shape), v, jnp.zeros_like(q), 0.0, state.aux).reshape(-1)

    x = q.reshape(-1)
    # one compiled program for both (op-by-op dispatch of the two Jacobians costs more than compiling)
    dense, banded = jax.jit(
        lambda x: (jax.jacfwd(f)(x), jaxrod.BandedJacobianSolver(lower=10, upper=10).linearize(f, x).to_dense())
    )(x)
    assert float(jnp.max(jnp.abs(dense))) > 1.0
    np.testing.assert_allclose(np.asarray(banded), np.asarray(dense), rtol=0, atol=1e-9 * float(jnp.max(jnp.abs(dense))))
    # outside the band the dense Jacobian is exactly zero, which is what makes colouring valid
    i, j = np.indices(dense.shape)
    assert np.all(np.asarray(dense)[np.abs(i - j) > 10] == 0)
