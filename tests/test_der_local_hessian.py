"""The DER rod's Newton Jacobian assembled from element-local Hessians (jaxrod.models.der.hessian)
is the Jacobian of the implicit step's residual, and a simulation with it follows the one with the
coloured Jacobian to the Newton tolerance."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.integrate.implicit import _stage_jacobian, _Switched
from jaxrod.models.der import DERModel, DERRod
from jaxrod.models.der.contact import FloorContact
from jaxrod.models.der.hessian import element_elastic_force
from jaxrod.solvers.jacobian import BandedJacobianSolver

N = 11
RADIUS = 0.01


def _model(floor_kwargs=None, **kwargs):
    pts = np.stack([np.linspace(0.0, 0.5, N), np.zeros(N), np.full(N, RADIUS)], axis=1)
    rod = DERRod.from_polyline(pts, rest="straight", youngs_modulus=1e6, density=1000.0, radius=RADIUS)
    rng = np.random.default_rng(3)
    rod = rod.with_natural_curvature(rng.normal(0.0, 0.05, (N - 2, 2)))
    rod = eqx.tree_at(lambda r: r.natural_twist, rod, jnp.asarray(rng.normal(0.0, 0.02, N - 2)))
    floor = FloorContact(stiffness=1e4, delta=5e-4, mu=0.3, **(floor_kwargs or {}))
    return DERModel(rod, gravity=(0.0, 0.0, -9.8), damping=0.7, clamped_edges=(0,), contacts=(floor,), **kwargs)


def _moving_state(model):
    """A bent, twisted, moving state near the floor, with transported frames and a non-zero
    reference twist: the reference data are those of a converged step at a nearby configuration."""
    rng = np.random.default_rng(7)
    q0 = np.asarray(model.q0)
    q_prev = q0.copy()
    q_prev[2:, :3] += rng.normal(0.0, 0.01, (N - 2, 3))
    q_prev[2:, 2] = RADIUS + rng.uniform(-2e-4, 2e-3, N - 2)  # some nodes within h + delta of the floor
    q_prev[1:-1, 3] += rng.normal(0.0, 0.3, N - 2)
    aux = model.update_aux(jnp.asarray(q_prev), model.init_aux(model.q0))
    assert float(jnp.max(jnp.abs(aux.ref_twist))) > 1e-4
    v = np.zeros_like(q0)
    v[2:] = rng.normal(0.0, 0.05, (N - 2, 4))
    a = rng.normal(0.0, 0.1, q0.shape)
    q_next = q_prev.copy()
    q_next[2:, :3] += rng.normal(0.0, 2e-3, (N - 2, 3))
    q_next[1:-1, 3] += rng.normal(0.0, 0.05, N - 2)
    return (jnp.asarray(q_prev), jnp.asarray(v), jnp.asarray(a)), aux, jnp.asarray(q_next)


def _jacobians(model, scheme, hist, aux, q_next, t=0.3, dt=0.01):
    fixed = model.fixed_mask()
    qb = model.prescribed(t + dt)

    def residual(qn):
        q_sub = jnp.where(fixed, qb, qn)
        r = scheme.residual(model, q_sub, hist, t, dt, aux)
        return jnp.where(fixed, qn - qb, r).reshape(-1)

    ls = model.default_linear_solver()
    jac = _stage_jacobian(model, scheme, ls, hist, aux, t, dt, fixed, qb)
    assert jac is not None
    assembled = jax.jit(lambda q: jac(q, None).to_dense())(q_next)
    dense = jax.jit(jax.jacfwd(lambda q: residual(q.reshape(q_next.shape))))(q_next.reshape(-1))
    return np.asarray(assembled), np.asarray(dense)


@pytest.mark.parametrize(
    "scheme, floor",
    [
        (jaxrod.BackwardEuler(), None),
        (jaxrod.ImplicitMidpoint(), None),
        (jaxrod.AverageVectorField(), None),
        (jaxrod.BackwardEuler(), {"mu_lateral": 0.6}),  # anisotropic floor: the 21-colour remainder
        # the fallback ladder's retry: the average vector field switched to backward Euler
        (_Switched(jaxrod.AverageVectorField(), jaxrod.BackwardEuler(), jnp.asarray(True)), None),
    ],
    ids=["backward-euler", "midpoint", "average-vector-field", "anisotropic-floor", "fallback"],
)
def test_assembled_jacobian_is_the_residual_jacobian(scheme, floor):
    model = _model(floor)
    hist, aux, q_next = _moving_state(model)
    assembled, dense = _jacobians(model, scheme, hist, aux, q_next)
    scale = np.abs(dense).max()
    # the floor acts on some nodes (its stiffness shows on their diagonal), not on all
    x = np.asarray(q_next)[:, :3]
    active = x[:, 2] < RADIUS + 5e-4
    assert 0 < active[2:].sum() < N - 2
    assert np.abs(assembled - dense).max() <= 1e-10 * scale
    # the clamp: identity rows and zero columns on the fixed DOFs
    fixed = np.asarray(model.fixed_mask()).reshape(-1)
    np.testing.assert_array_equal(assembled[fixed][:, fixed], np.eye(fixed.sum()))
    assert np.all(assembled[~fixed][:, fixed] == 0.0)


def test_simulation_matches_coloured_jacobian():
    model = _model()
    n_steps, dt = 30, 2e-3
    coloured = jaxrod.NewtonSolver(linear_solver=BandedJacobianSolver(10, 10, model_jacobian=False),
                                   reuse_jacobian=True, rtol=1e-10, atol=1e-10)
    local = jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=True, rtol=1e-10, atol=1e-10)
    runs = [jaxrod.simulate(model, dt=dt, n_steps=n_steps, scheme=jaxrod.ImplicitMidpoint(), solver=s) for s in (coloured, local)]
    q_c, q_l = (np.asarray(r.q) for r in runs)
    assert np.all(np.asarray(runs[1].stats.converged))
    # same trajectory to the Newton tolerance (a few 1e-10 m per step, accumulated over the run)
    np.testing.assert_allclose(q_l, q_c, rtol=0, atol=1e-8)
    # (in the same test, to keep the suite's count) the element-assembled elastic force whose JVP
    # HybridSystem takes as its DER rods' force derivative: grad E to round-off, and its JVP in q,
    # the reference frames, t and the rod's stiffness and natural curvature that of grad E
    (q_prev, _, _), aux, q_next = _moving_state(model)

    def forces(p, q, frames, t):
        m = eqx.tree_at(lambda m: (m.rod.youngs_modulus, m.rod.natural_curvature), model, p)
        return jax.grad(m.elastic_energy)(q, frames, t), element_elastic_force(m, q, frames, t)

    rng = np.random.default_rng(11)
    primals = ((model.rod.youngs_modulus, model.rod.natural_curvature), q_next, aux, jnp.asarray(0.3))
    tangents = jax.tree_util.tree_map(lambda x: jnp.asarray(rng.normal(0.0, 1.0, np.shape(x)) * (np.abs(x).max() + 1e-3)), primals)
    (f_auto, f_elem), (df_auto, df_elem) = jax.jit(lambda p, d: jax.jvp(forces, p, d))(primals, tangents)
    assert np.abs(f_elem - f_auto).max() <= 1e-13 * np.abs(f_auto).max()
    assert np.abs(df_elem - df_auto).max() <= 1e-12 * np.abs(df_auto).max()

