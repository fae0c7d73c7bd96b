"""The MuJoCo peer of the Aiko snake (benchmarks/snake_mujoco.py, issue 23 item 7): the MJCF
generated from jaxrod's scene model is the same snake (mass, inertias, link length, sphere
centres, start pose), its contacts carry the paper's body-fixed friction ellipse, and MuJoCo's
soft contact creeps on an incline below the friction angle by a bounded amount.

MuJoCo only (the ``mjcf`` extra; skipped without it): the jaxrod model is built, not simulated
(no compiled time loop)."""

import os
import sys

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import snake_mujoco as sm  # noqa: E402

from jaxrod.scenes.snake import AIKO, SerpenoidGait, snake_model  # noqa: E402


@pytest.fixture(scope="module")
def ortho():
    cs = snake_model(AIKO["n_links"])  # the scene snake-undulation-ortho's model (curved start)
    spec = sm.snake_spec(cs)
    m = mujoco.MjModel.from_xml_string(sm.snake_mjcf(spec))
    d = mujoco.MjData(m)
    d.qpos[:] = sm.initial_qpos(m, spec)
    mujoco.mj_forward(m, d)
    return cs, spec, m, d


def test_mjcf_is_jaxrods_snake(ortho):
    cs, spec, m, d = ortho
    n = AIKO["n_links"]
    assert m.nbody == n + 1 and m.njnt == 1 + 2 * (n - 1) and m.nu == 2 * (n - 1)
    np.testing.assert_allclose(m.body_subtreemass[1], AIKO["total_mass"], rtol=1e-12)
    np.testing.assert_allclose(m.body_mass[1:], [float(b.mass) for b in cs.system.bodies], rtol=1e-12)
    np.testing.assert_allclose(m.body_inertia[1:], [np.diag(np.asarray(b.inertia)) for b in cs.system.bodies],
                               rtol=1e-12)
    # the start pose: every link where jaxrod has it (curved posture through the hinge angles)
    np.testing.assert_allclose(d.xpos[1:], [np.asarray(b.position) for b in cs.system.bodies], atol=1e-12)
    np.testing.assert_allclose(d.xmat[1:].reshape(-1, 3, 3), spec["R0"], atol=1e-12)
    # link length: joint anchor to joint anchor
    anchors = np.array([d.xanchor[m.joint(f"h{i}").id] for i in range(1, n)])
    np.testing.assert_allclose(np.linalg.norm(np.diff(anchors, axis=0), axis=1), AIKO["link_length"], rtol=1e-12)
    np.testing.assert_allclose(anchors, [np.asarray(j.point) for j in cs.system.joints], atol=1e-12)
    # contact spheres: the capsules' end-sphere centres are jaxrod's sphere centres (world, at start)
    R, x = spec["R0"], spec["x0"]
    sb = np.asarray(cs.sphere_body)
    jr = x[sb] + np.einsum("kij,kj->ki", R[sb], np.asarray(cs.sphere_centre))
    ends = []
    for k, i in enumerate(sb):
        g = m.geom(f"cap{i + 1}").id
        half = m.geom_size[g, 1]
        axis = d.geom_xmat[g].reshape(3, 3)[:, 2]
        s = 1.0 if np.asarray(cs.sphere_centre)[k, 0] > 0 else -1.0
        ends.append(d.geom_xpos[g] + s * half * axis * np.sign(axis @ R[i][:, 0]))
    np.testing.assert_allclose(ends, jr, atol=1e-12)
    np.testing.assert_allclose(m.geom_size[[m.geom(f"cap{i}").id for i in range(1, n + 1)], 0], AIKO["radius"])


def test_contact_friction_is_the_body_fixed_ellipse(ortho):
    """22 contacts at the start, one per sphere; each with (mu_along, mu_across) = (0.1, 0.5) on
    an elliptic cone, its first tangent along its link's axis (horizontal projection): the paper's
    Pi frame, body-fixed (sphere geoms would give world-fixed tangents)."""
    cs, spec, m, d = ortho
    assert m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert d.ncon == 2 * AIKO["n_links"]
    for c in d.contact[:d.ncon]:
        link = int(m.geom_bodyid[c.geom1 if m.geom(c.geom1).name.startswith("cap") else c.geom2])
        ex = d.xmat[link].reshape(3, 3)[:, 0]
        ex_h = ex[:2] / np.linalg.norm(ex[:2])
        frame = c.frame.reshape(3, 3)
        np.testing.assert_allclose(frame[0], [0.0, 0.0, 1.0], atol=1e-12)
        assert abs(abs(frame[1, :2] @ ex_h) - 1.0) < 1e-12 and abs(frame[1, 2]) < 1e-12
        np.testing.assert_allclose(c.friction[:2], [0.1, 0.5])
        assert c.dim == 3


def test_resting_snake_carries_its_weight_and_creeps_on_an_incline():
    """The straight snake at rest (PD holding zero references), 0.2 s at the paper's dt with
    MuJoCo's default contact: on flat ground the contact normal forces carry the weight and it
    does not move; on a 10 deg incline at mu 0.2 (below the friction angle 11.3 deg: jaxrod and
    the paper stick exactly) MuJoCo's soft friction creeps downhill, by a bounded amount."""
    cs = snake_model(AIKO["n_links"], mu_along=0.2, mu_across=0.2, gait=SerpenoidGait(amplitude_h=0.0),
                     posture="straight")
    spec = sm.snake_spec(cs)
    weight = AIKO["total_mass"] * np.linalg.norm(spec["gravity"])
    th = np.radians(10.0)
    for tilt in (0.0, th):
        grav = np.linalg.norm(spec["gravity"]) * np.array([np.sin(tilt), 0.0, -np.cos(tilt)])
        m = mujoco.MjModel.from_xml_string(sm.snake_mjcf(spec, gravity=grav))
        d = mujoco.MjData(m)
        d.qpos[:] = sm.initial_qpos(m, spec)
        mujoco.mj_forward(m, d)
        x0 = d.xpos[1:].mean(0)
        mujoco.mj_step(m, d, nstep=int(round(0.2 / m.opt.timestep)))
        f = np.zeros(6)
        fn = 0.0
        for k in range(d.ncon):
            mujoco.mj_contactForce(m, d, k, f)
            fn += f[0]
        np.testing.assert_allclose(fn, weight * np.cos(tilt), rtol=1e-3)
        dx = d.xpos[1:].mean(0) - x0
        if tilt == 0.0:
            assert np.max(np.abs(dx[:2])) < 1e-8, dx  # measured 2.6e-10 m (settling into the ground)
        else:
            assert 1e-5 < dx[0] < 5e-4, dx  # creeps steadily: measured 8.0e-5 m in 0.2 s (0.42 mm/s)
            assert abs(dx[1]) < 1e-8, dx
