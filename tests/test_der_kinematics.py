"""DER kinematics and energies against the closed-form expressions of the DisMech spec
(sections 1.6, 2.2, 2.3) and against invariances that any correct rod energy has."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxrod
from jaxrod.geometry import rotation_matrix
from jaxrod.models.der.frames import initial_frames, kinematics, material_directors, transport_directors, edges


def _random_stencil(seed):
    rng = np.random.default_rng(seed)
    pos = np.array([[0.0, 0.0, 0.0], [0.3, 0.05, 0.02], [0.55, 0.2, -0.07]]) + 0.02 * rng.normal(size=(3, 3))
    theta = rng.normal(size=2) * 0.3
    q = np.zeros((3, 4))
    q[:, :3] = pos
    q[:2, 3] = theta
    return jnp.asarray(q)


def test_curvature_and_twist_gradients_match_der_formulas():
    q = _random_stencil(0)
    aux = initial_frames(q[:, :3])  # reference frames at q itself: no holonomy terms

    def k(qq):
        kin = kinematics(qq, aux)
        return jnp.stack([kin.kappa1[0], kin.kappa2[0], kin.twist[0]])

    J = np.asarray(jax.jacfwd(k)(q))  # (3, 3 nodes, 4)
    # closed forms (Bergou et al. / DisMech spec 2.2-2.3)
    e_vec, lengths, t = (np.asarray(a) for a in edges(q[:, :3]))
    d1, d2 = transport_directors(aux.d1, aux.tangent, jnp.asarray(t))
    m1, m2 = (np.asarray(a) for a in material_directors(d1, d2, q[:2, 3]))
    te, tf = t[0], t[1]
    le, lf = lengths
    chi = 1 + te @ tf
    tt = (te + tf) / chi
    m1t, m2t = (m1[0] + m1[1]) / chi, (m2[0] + m2[1]) / chi
    kb = 2 * np.cross(te, tf) / chi
    k1 = 0.5 * kb @ (m2[0] + m2[1])
    k2 = -0.5 * kb @ (m1[0] + m1[1])
    dk1_de = (-k1 * tt + np.cross(tf, m2t)) / le
    dk1_df = (-k1 * tt - np.cross(te, m2t)) / lf
    dk2_de = (-k2 * tt - np.cross(tf, m1t)) / le
    dk2_df = (-k2 * tt + np.cross(te, m1t)) / lf
    for row, (de, df) in enumerate([(dk1_de, dk1_df), (dk2_de, dk2_df)]):
        np.testing.assert_allclose(J[row, 0, :3], -de, atol=1e-12)
        np.testing.assert_allclose(J[row, 1, :3], de - df, atol=1e-12)
        np.testing.assert_allclose(J[row, 2, :3], df, atol=1e-12)
    # twist angle parts of kappa
    np.testing.assert_allclose(J[0, 0, 3], -0.5 * kb @ m1[0], atol=1e-12)
    np.testing.assert_allclose(J[0, 1, 3], -0.5 * kb @ m1[1], atol=1e-12)
    np.testing.assert_allclose(J[1, 0, 3], -0.5 * kb @ m2[0], atol=1e-12)
    np.testing.assert_allclose(J[1, 1, 3], -0.5 * kb @ m2[1], atol=1e-12)
    # reference twist gradient: -kb/(2|e|) at node i-1, +kb/(2|f|) at node i+1; dtau/dtheta = -1, +1
    np.testing.assert_allclose(J[2, 0, :3], -kb / (2 * le), atol=1e-12)
    np.testing.assert_allclose(J[2, 2, :3], kb / (2 * lf), atol=1e-12)
    np.testing.assert_allclose(J[2, 1, :3], kb / (2 * le) - kb / (2 * lf), atol=1e-12)
    np.testing.assert_allclose(J[2, 0, 3], -1.0, atol=1e-12)
    np.testing.assert_allclose(J[2, 1, 3], 1.0, atol=1e-12)
    # |kb| = 2 tan(phi/2) with phi the turning angle
    phi = np.arccos(np.clip(te @ tf, -1, 1))
    np.testing.assert_allclose(np.linalg.norm(kb), 2 * np.tan(phi / 2), rtol=1e-12)


def test_energy_is_invariant_under_rigid_motion():
    rod = jaxrod.DERRod.helix(12, helix_radius=0.05, pitch=0.03, contour_length=0.4, youngs_modulus=1e6, density=1e3, radius=0.005)
    model = jaxrod.DERModel(rod)
    q = model.q0 + 0.01 * jax.random.normal(jax.random.PRNGKey(1), model.q0.shape)
    aux = model.init_aux(q)
    energy = float(model.elastic_energy(q, aux))
    assert energy > 1e-6
    R = rotation_matrix(jnp.array([0.3, -1.1, 0.7]))
    q_moved = q.at[:, :3].set(q[:, :3] @ R.T + jnp.array([1.0, -2.0, 0.5]))
    # rotate the reference data too (the frames are carried with the rod)
    aux_moved = type(aux)(aux.d1 @ R.T, aux.tangent @ R.T, aux.ref_twist)
    np.testing.assert_allclose(float(model.elastic_energy(q_moved, aux_moved)), energy, rtol=1e-12)


def test_uniform_twist_energy_matches_closed_form():
    n, L, G, h = 11, 1.0, 4e5, 0.01
    rod = jaxrod.DERRod.straight(n, L, youngs_modulus=1e6, density=1e3, radius=h, shear_modulus=G)
    model = jaxrod.DERModel(rod)
    total = 0.7  # rad, end-to-end twist
    q = model.q0.at[:-1, 3].set(jnp.linspace(0, total, n - 1))
    energy = float(model.elastic_energy(q, model.init_aux(model.q0)))
    GJ = G * np.pi * h**4 / 2
    # the twist is measured between edge midpoints: length L - dl
    dl = L / (n - 1)
    np.testing.assert_allclose(energy, 0.5 * GJ * total**2 / (L - dl), rtol=1e-12)
