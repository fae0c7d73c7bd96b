"""DisMech's active entanglement gripper (:func:`jaxrod.scenes.network.gripper`): dynamic rod-rod
contact in a :class:`~jaxrod.models.der.model.DERNetwork` whose fingers curl by natural-curvature
actuation.

A small gripper (3 fingers x 10 nodes, 0.1 m long, curling toward the axis so they collide within
a few hundred steps) runs three times through ONE compiled program (only array leaves differ:
contact stiffness, damping, natural curvatures), with :func:`jaxrod.simulate`'s default Newton
solver (Jacobian reuse with its restart rule):

* ``contact``: random, different curvature per finger, DisMech's damping. No edge pair ever comes
  closer than ``2h - delta`` (the IMC force grows like ``2 k_c (C - D)`` beyond ``C - delta``, so a
  deeper overlap would need a force far above the curling forces).
* ``ghost``: the same with ``k_c = 1e-9`` N/m: the fingers pass through each other.
* ``symmetric``: the same curvature profile on the three fingers (120 deg apart), no damping,
  mu = 0: positions stay related by the rotation, and after the ramp (a conservative system:
  elastic + contact + gravity potential, no friction, no damping) backward Euler's total energy
  never increases (it only dissipates, -|v_{n+1} - v_n|^2_M / 2 per step up to the O(dt^2)
  curvature term of the potential).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.der.contact import segment_distance
from jaxrod.scenes import get_scene
from jaxrod.scenes.network import gripper
from long_runs import jit_long_run

NF, N, L = 3, 10, 0.1
N_STEPS, DT, RAMP = 100, 2.5e-3, 0.1  # 0.25 s: ramp 0.1 s, then 0.15 s free
PHI = (3.0, 9.0)  # deg per DisMech edge (L/59): ~20 1/m, ~120 deg of total turning


def small(**kw):
    kw = {
        "n_fingers": NF,
        "n_nodes": N,
        "length": L,
        "bend": "inward",
        "phi_range_deg": PHI,
        "ramp_time": RAMP,
        **kw,
    }
    return gripper(**kw)


def min_distances(model, positions):
    """``(T,)`` smallest distance [m] over all admissible edge pairs (self and finger-finger)."""
    en = np.asarray(model.topology.edge_nodes)
    f, g = np.asarray(model.contact_first), np.asarray(model.contact_second)
    x = jnp.asarray(positions)
    D = segment_distance(x[:, en[f, 0]], x[:, en[f, 1]], x[:, en[g, 0]], x[:, en[g, 1]])[0]
    return np.asarray(D.min(axis=1))


@jit_long_run  # 3 runs of 100 contact steps: XLA's default optimisation (long_runs.py)
def _run(model, solver):
    # fallback=False: every step converges with the Newton solver itself (no backward-Euler half
    # steps behind it; under jit they would be compiled into every step)
    traj = jaxrod.simulate(
        model, dt=DT, n_steps=N_STEPS, scheme=jaxrod.BackwardEuler(), solver=solver, throw=False, fallback=False
    )
    return traj.positions, traj.q, traj.v, traj.stats


@eqx.filter_jit
def _energies(model, q, v, aux0, t):
    """Kinetic, elastic + contact, and gravity energies [J] at every saved step, rebuilding the
    step's reference frames and candidate pairs with the model's own update (as simulate does)."""

    def body(aux, qv):
        qk, vk, tk = qv
        aux = model.update_aux(qk, aux)
        kin = 0.5 * jnp.sum(model.mass() * vk * vk * ~model.fixed_mask())
        pot = model.potential_energy(qk, aux, tk)
        grav = -jnp.sum(model.node_masses()[:, None] * model.gravity[None, :] * qk[: model.n_nodes, :3])
        return aux, (kin, pot, grav, model.contact_energy(qk, aux))

    return jax.lax.scan(body, aux0, (q, v, t))[1]


@pytest.fixture(scope="module")
def runs():
    base = small(seed=1)
    phi0 = base.reference["phi_deg"][0]
    scenes = {
        "contact": base,
        "ghost": small(seed=1, stiffness=1e-9),
        "symmetric": small(phi_deg=np.tile(phi0, (NF, 1)), damping=0.0, mu=0.0),
    }
    out = {}
    for name, sc in scenes.items():
        # simulate's default Newton (Jacobian reuse), not the scene's fresh-Jacobian solver: the
        # default must get through contact events too (its chord restart; without it 54 of the
        # 100 steps of the contact run failed)
        pos, q, v, stats = _run(sc.model, None)
        out[name] = (sc, np.asarray(pos), q, v, jax.tree.map(np.asarray, stats))
    return out


def test_contact_keeps_fingers_apart_and_ghosts_pass_through(runs):
    sc, pos, _, _, stats = runs["contact"]
    assert stats.converged.all(), f"first failure at step {stats.first_failure()}"
    bound = sc.reference["min_distance_bound_m"]
    d = min_distances(sc.model, pos)
    assert d[0] > 2 * 0.005 + 1e-3  # apart at the start
    assert d.min() > bound  # never deeper than delta
    assert d.min() < sc.reference["contact_distance_m"] + 5e-4  # and they really touched
    _, gpos, _, _, gstats = runs["ghost"]
    assert gstats.converged.all()
    assert min_distances(sc.model, gpos).min() < 0.5 * sc.reference["contact_distance_m"]


def test_symmetric_fingers_stay_symmetric(runs):
    sc, pos, _, _, stats = runs["symmetric"]
    assert stats.converged.all(), f"first failure at step {stats.first_failure()}"
    model = sc.model
    f0 = pos[:, model.limb_node_indices(0)]
    d = min_distances(model, pos)
    apart = d > sc.reference["contact_distance_m"] + float(model.contacts[0].delta)
    for k in range(1, NF):
        a = 2 * np.pi * k / NF
        rot = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
        fk = pos[:, model.limb_node_indices(k)]
        # the symmetry holds to the scene's 1e-9 Newton tolerance accumulated over the steps
        # (measured ~1e-7 m, before and through the collision), not to round-off
        np.testing.assert_allclose(fk, f0 @ rot.T, atol=1e-6)
    assert not apart[-1]  # in contact at the end


def test_energy_never_increases_after_the_ramp_without_friction_or_damping(runs):
    sc, _, q, v, _ = runs["symmetric"]
    model = sc.model
    t = jnp.arange(N_STEPS + 1) * DT
    kin, pot, grav, con = (np.asarray(e) for e in _energies(model, q, v, model.initial_state().aux, t))
    total = kin + pot + grav
    free = np.asarray(t) >= RAMP
    dE = np.diff(total[free])
    scale = np.max(np.abs(kin[free])) + np.max(np.abs(pot[free]))
    assert con[free].max() > 0  # contact is active in the free phase
    assert dE.max() < 1e-6 * scale, (dE.max(), scale)
    assert total[free][-1] < total[free][0]  # backward Euler dissipates


def test_full_gripper_scene_builds_with_dismech_values():
    sc = get_scene("network-gripper")
    m = sc.model
    assert len(m.limbs) == 5 and m.n_edges == 5 * 19
    np.testing.assert_allclose(sc.reference["circumradius_m"], 0.015 / (2 * np.sin(np.pi / 5)), rtol=1e-14)
    tops = sc.reference["finger_tops_m"]
    d = np.linalg.norm(tops - np.roll(tops, 1, axis=0), axis=1)
    np.testing.assert_allclose(d, 0.015, rtol=1e-12)  # regular pentagon of side 15 mm
    np.testing.assert_allclose(sc.reference["total_mass_kg"], 5 * 1200 * np.pi * 0.005**2 * 0.3, rtol=1e-12)
    phi = sc.reference["phi_deg"]
    assert phi.shape == (5, 18) and phi.min() >= 0 and phi.max() <= 40
    assert float(m.damping) == 5.0 and sc.dt == 2.5e-3 and sc.duration == 15.0
    # stored integrated curvature: both components 2 tan(phi V / (2 dl_60)) / sqrt(2); none at t = 0
    kb = np.asarray(m.natural_curvature_at(20.0))[m.limb_stencil_indices(2)]
    vor = 0.3 / 19
    expect = 2 * np.tan(np.deg2rad(phi[2]) * vor / (0.3 / 59) / 2) / np.sqrt(2)
    np.testing.assert_allclose(kb, np.stack([expect, expect], 1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(m.natural_curvature_at(0.0)), 0.0)
    np.testing.assert_allclose(np.asarray(m.natural_curvature_at(5.0)), 0.5 * np.asarray(m.natural_curvature_at(10.0)))
    # DisMech's code: integer degrees 0..39, halved, both components at full 2 tan(phi/2)
    code = gripper(n_nodes=60, dismech_code=True, seed=3)
    phi_c = code.reference["phi_deg"]
    assert np.all(2 * phi_c == np.round(2 * phi_c)) and phi_c.max() <= 19.5
    kb = np.asarray(code.model.natural_curvature_at(10.0))[code.model.limb_stencil_indices(0)]
    np.testing.assert_allclose(kb[:, 0], 2 * np.tan(np.deg2rad(phi_c[0]) / 2), rtol=1e-12)
    np.testing.assert_allclose(kb[:, 1], kb[:, 0])
    # friction option and seeds
    assert float(gripper(mu=0.5).model.contacts[0].mu) == 0.5
    assert not np.array_equal(gripper(seed=1).reference["phi_deg"], phi)
    np.testing.assert_array_equal(gripper(seed=0).reference["phi_deg"], phi)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_fingers": 0}, "n_fingers must be an integer >= 1"),
        ({"n_fingers": 2.5}, "n_fingers must be an integer >= 1"),
        ({"n_nodes": 2}, "n_nodes must be an integer >= 3"),
        ({"phi_range_deg": (-5.0, 40.0)}, "phi_range_deg must satisfy 0 <= low <= high < 180"),
        ({"phi_range_deg": (30.0, 10.0)}, "phi_range_deg must satisfy"),
        ({"phi_deg": np.zeros((5, 3))}, r"phi_deg must have shape \(n_fingers, n_nodes - 2\)"),
        ({"phi_deg": np.full((5, 18), -1.0)}, r"phi_deg must lie in \[0, 180\)"),
        ({"length": -0.3}, "length must be a finite number > 0 m"),
        ({"ramp_time": 0.0}, "ramp_time must be a finite number > 0 s"),
        ({"damping": -1.0}, "damping must be >= 0"),
        ({"bend": "up"}, "bend must be 'diagonal' or 'inward'"),
        ({"side": 0.008}, "closer than 2 radius \\+ delta"),
        ({"n_nodes": 8}, "too coarse"),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gripper(**kwargs)
