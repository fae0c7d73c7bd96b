"""Batches of shooting rods: ``vmap`` with the batch-uniform Newton equals single runs, a batch of
one takes the plain call's iterations, and a batch sharded over two (forced) host devices (by
``NamedSharding`` of the inputs, and by ``jax.shard_map``) equals the unsharded batch.

The problem is a small version of Till's C++ example (``benchmarks/cosserat_batch.py``): a steel
rod at rest under a tip weight that is removed at t = 0, tip masses differing per member."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

import jaxrod
from jaxrod.integrate.schemes import DifferenceFormula
from jaxrod.models.cosserat import CosseratModel, CosseratRod, CosseratState, ReleasedAt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEME = DifferenceFormula.bdf_alpha(-0.2)
MASSES = jnp.asarray([0.01, 0.02, 0.035])  # [kg]
TOL = 1e-8  # [m]: the shooting solver's tolerance (1e-10 on the scaled base loads) with margin


def model(mass, n_points=16):
    rod = CosseratRod.circular(0.5, 1e-3, youngs_modulus=200e9, shear_modulus=80e9, density=8000.0)
    force = jnp.stack([-9.81 * jnp.asarray(mass, float), jnp.zeros(()), jnp.zeros(())])
    return CosseratModel(rod, n_points=n_points, integrator="euler", gravity=(-9.81, 0.0, 0.0), tip_force=force,
                         tip_profile=ReleasedAt(0.0))


def state0(mass):
    st, _ = jaxrod.solve_static(model(mass), throw=False)
    return CosseratState(st.y, st.w, st.base_loads, SCHEME.init(st.grid_variables), st.w_stages)


def run(mass, s0):
    traj = jaxrod.simulate(model(mass), dt=0.005, n_steps=12, scheme=SCHEME, state0=s0, throw=False, fallback=False)
    return traj.positions[:, -1], traj.stats.iterations, traj.stats.jacobians, traj.stats.converged


def test_a_vmapped_batch_equals_single_runs_and_a_batch_of_one_takes_the_plain_iterations():
    states = jax.jit(jax.vmap(state0))(MASSES)
    tips, its, jacs, conv = jax.jit(jax.vmap(run))(MASSES, states)
    assert bool(conv.all())
    single = jax.jit(run)
    swings = []
    for i in range(MASSES.shape[0]):
        s_i = jax.tree_util.tree_map(lambda a: a[i], states)
        tip, it1, jac1, conv1 = single(MASSES[i], s_i)
        assert bool(conv1.all())
        np.testing.assert_allclose(tips[i], tip, rtol=0, atol=TOL)
        swings.append(float(tip[-1, 0] - tip[0, 0]))
        if i == 1:  # a batch of one: the very same iterations and Jacobians as the plain call
            one = jax.jit(jax.vmap(run))(MASSES[1:2], jax.tree_util.tree_map(lambda a: a[1:2], states))
            np.testing.assert_array_equal(one[1][0], it1)
            np.testing.assert_array_equal(one[2][0], jac1)
            np.testing.assert_allclose(one[0][0], tip, rtol=0, atol=1e-14)
    # the members differ (the released weight sets the swing), so equality is not trivial
    assert abs(swings[2] - swings[0]) > 1e-3, swings


_SHARDED = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import test_batching as tb

    assert jax.device_count() == 2, jax.devices()
    masses = jnp.asarray([0.01, 0.017, 0.025, 0.035])
    states = jax.jit(jax.vmap(tb.state0))(masses)
    batched = jax.jit(jax.vmap(tb.run))
    plain = batched(masses, states)
    mesh = Mesh(np.array(jax.devices()), ("rods",))
    rods = NamedSharding(mesh, P("rods"))  # the leading (batch) axis split over the devices
    m_s, s_s = jax.device_put((masses, states), rods)
    sharded = batched(m_s, s_s)
    assert len(sharded[0].sharding.device_set) == 2, sharded[0].sharding
    assert bool(sharded[3].all())
    np.testing.assert_allclose(np.asarray(sharded[0]), np.asarray(plain[0]), rtol=0, atol=tb.TOL)
    # shard_map: each device runs the vmap over its own members only, so the batch-uniform
    # decisions (batch_max) and the loops' stopping tests are per device, with no collectives
    # (check_vma=False: the Newton loop starts its counters as constants, the same on every device)
    local = jax.jit(jax.shard_map(jax.vmap(tb.run), mesh=mesh, in_specs=P("rods"), out_specs=P("rods"),
                                  check_vma=False))
    per_device = local(m_s, s_s)
    assert bool(per_device[3].all())
    np.testing.assert_allclose(np.asarray(per_device[0]), np.asarray(plain[0]), rtol=0, atol=tb.TOL)
    print("SHARDED-OK", float(np.max(np.abs(np.asarray(sharded[0]) - np.asarray(plain[0])))))
    """
)


def test_a_batch_sharded_over_two_host_devices_equals_the_unsharded_batch():
    # the device count must be set before jax initialises: a fresh interpreter
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "tests"), ROOT, env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", _SHARDED], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "SHARDED-OK" in res.stdout
