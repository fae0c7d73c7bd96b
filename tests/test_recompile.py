"""One compiled program per model structure: what users vary between runs (number of steps,
duration, save interval, dt, start time, loads, material values, progress lines, load steps of a
static solve) must not compile anything new.

Counted with JAX's own compile events: every program JAX lowers (a new program, whether XLA then
compiles it or the persistent cache supplies it) fires ``/jax/core/compile/jaxpr_to_mlir_module_duration``.
A call that reuses a program of this process fires nothing. The first run of each model is the
reference; it must compile, or the counter would be blind.
"""

import contextlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.cosserat import CosseratModel, CosseratRod
from jaxrod.scenes.der import dynamic_cantilever

LOWERING = "/jax/core/compile/jaxpr_to_mlir_module_duration"


class _Count:
    n = 0
    active = False


def _listener(event, duration, **kwargs):
    if _Count.active and event == LOWERING:
        _Count.n += 1


jax.monitoring.register_event_duration_secs_listener(_listener)


@contextlib.contextmanager
def lowered():
    """Counts the programs lowered inside the block: ``with lowered() as c: ...; c()``."""
    _Count.n, _Count.active = 0, True
    try:
        yield lambda: _Count.n
    finally:
        _Count.active = False


@pytest.fixture(scope="module")
def der():
    return dynamic_cantilever("a1", n_nodes=7).model


def test_der_runs_that_vary_steps_saves_dt_and_values_compile_nothing_new(der, capsys):
    with lowered() as first:
        ref = jaxrod.simulate(der, dt=0.5, n_steps=6)
    assert first() >= 1  # the counter sees the first run's programs
    stiffer = eqx.tree_at(lambda m: m.rod.youngs_modulus, der, der.rod.youngs_modulus * 3.0)
    runs = [
        dict(model=der, dt=0.5, n_steps=11),  # another step count
        dict(model=der, dt=0.5, n_steps=12, save_every=4),  # another save interval
        dict(model=der, dt=0.25, duration=2.0),  # another dt, by duration
        dict(model=der, dt=0.5, n_steps=6, t0=3.0),  # another start time
        dict(model=stiffer, dt=0.5, n_steps=6),  # another material value
        dict(model=der, dt=0.5, n_steps=6, progress=2),  # progress lines: the same programs
    ]
    for kw in runs:
        with lowered() as new:
            traj = jaxrod.simulate(**kw)
        assert new() == 0, f"simulate({ {k: v for k, v in kw.items() if k != 'model'} }) compiled {new()} programs"
        assert bool(np.all(np.asarray(traj.stats.converged)))
    assert "step" in capsys.readouterr().err  # the progress run printed its lines
    # the stiffer rod really is another rod (the program took the new value): it moves less
    soft = jaxrod.simulate(der, dt=0.5, n_steps=6)
    stiff = jaxrod.simulate(stiffer, dt=0.5, n_steps=6)
    amp = lambda tr: np.abs(np.asarray(tr.positions)[:, -1, 2] - np.asarray(tr.positions)[0, -1, 2]).max()
    assert amp(stiff) < 0.9 * amp(soft)
    np.testing.assert_array_equal(np.asarray(soft.positions), np.asarray(ref.positions))


def test_chunked_runs_agree_with_one_program_under_jit(der):
    """The host-chunked plain call and the one-scan program under ``jax.jit`` take the same steps."""
    plain = jaxrod.simulate(der, dt=0.5, n_steps=8, save_every=2)
    jitted = jax.jit(lambda m: jaxrod.simulate(m, dt=0.5, n_steps=8, save_every=2, fallback=False).positions)(der)
    np.testing.assert_allclose(np.asarray(plain.positions), np.asarray(jitted), rtol=0, atol=1e-13)


def test_static_solves_with_other_load_steps_and_loads_compile_nothing_new(der):
    g = eqx.tree_at(lambda m: m.gravity, der, jnp.asarray([0.0, 0.0, -9.81]))
    with lowered() as first:
        s1, _ = jaxrod.solve_static(g, load_steps=1)
    assert first() >= 1
    with lowered() as new:
        s3, _ = jaxrod.solve_static(g, load_steps=3)
        g2 = eqx.tree_at(lambda m: m.gravity, g, jnp.asarray([0.0, 0.0, -4.0]))
        s4, _ = jaxrod.solve_static(g2, load_steps=3, progress=True)
    assert new() == 0
    # continuation reaches the same equilibrium; a smaller load sags less
    np.testing.assert_allclose(np.asarray(s3.q), np.asarray(s1.q), atol=1e-8)
    assert abs(float(s4.q[-1, 2])) < abs(float(s1.q[-1, 2]))


def test_shooting_runs_that_vary_steps_dt_and_loads_compile_nothing_new():
    rod = CosseratRod.circular(0.4, 1e-3, youngs_modulus=200e9, shear_modulus=80e9, density=8000.0)
    model = CosseratModel(rod, n_points=12, integrator="euler", tip_force=(-0.05, 0.0, 0.0))
    state0, _ = jaxrod.solve_static(model)
    with lowered() as first:
        jaxrod.simulate(model, dt=0.005, n_steps=4, state0=state0)
    assert first() >= 1
    heavier = eqx.tree_at(lambda m: m.tip_force, model, jnp.asarray([-0.1, 0.0, 0.0]))
    for kw in (dict(model=model, dt=0.005, n_steps=9), dict(model=model, dt=0.002, n_steps=4, save_every=2),
               dict(model=heavier, dt=0.005, n_steps=4)):
        with lowered() as new:
            tr = jaxrod.simulate(state0=state0, **kw)
        assert new() == 0, f"compiled {new()} programs"
        assert bool(np.all(np.asarray(tr.stats.converged)))
