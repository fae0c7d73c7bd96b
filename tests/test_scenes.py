"""Scene reference values recomputed independently of the scene modules.

Other tests compare simulations with ``scene.reference[...]``; those values are computed by the
scene builders themselves, so a wrong formula or constant there would pass unnoticed. Here each
reference is recomputed from closed-form formulas and the published numbers of the specs
(DisMech: ``shared/specs/seed001_dismech.md``; Ishigaki et al.: ``seed003_pcs_cmtm.md``), and
the scene's model is checked to be the one the reference describes (material, load, mesh).
Nothing is simulated; the Cosserat (Till) scenes are covered in ``test_cosserat.py``.
"""

import numpy as np
import pytest

from jaxrod.scenes import get_scene
from jaxrod.scenes.contact import analytic_kinetic_energy

G = 9.8  # DisMech's gravity [m/s^2]


def beta_L_first_mode():
    """First root of ``cosh x cos x = -1`` (clamped-free beam), by bisection."""
    lo, hi = 1.5, 2.2
    f = lambda x: np.cosh(x) * np.cos(x) + 1.0  # noqa: E731
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(lo) * f(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


def test_cantilever_static_reference_is_euler_bernoulli():
    """``delta = P L^3 / (3 EI)`` with ``P = alpha EI / L^2`` is ``alpha L / 3``: 1 cm at the
    default alpha = 0.03, L = 1 m; the model carries that load at a tip at x = L."""
    for alpha in (0.03, 1.0):
        scene = get_scene("cantilever-static", n_nodes=21, load_parameter=alpha)
        ref, m = scene.reference, scene.model
        EI = 1e7 * np.pi * 0.01**4 / 4  # the documented defaults: E 10 MPa, r 1 cm
        assert ref["EI_Nm2"] == pytest.approx(EI, rel=1e-14)
        assert ref["load_N"] == pytest.approx(alpha * EI, rel=1e-14)
        assert ref["tip_deflection_small_m"] == pytest.approx(alpha / 3, rel=1e-14)
        assert float(m.rod.EI) == pytest.approx(EI, rel=1e-14)
        f = np.asarray(m.point_forces)
        assert f[-1, 2] == pytest.approx(-alpha * EI, rel=1e-14) and np.count_nonzero(f) == 1
        x = np.asarray(m.rod.rest_positions)[:, 0]
        # clamp edge 0 straddles the wall x = 0 and the tip is at x = L: the beam is L long
        assert x[-1] == pytest.approx(1.0, abs=1e-14) and x[0] == pytest.approx(-x[1], abs=1e-14)


@pytest.mark.parametrize(
    "case, E, omega_spec, period_spec, amp_spec, dismech_s",
    [("a1", 1e5, 0.4972, 12.64, 10.06e-3, 0.661), ("a2", 1e7, 4.972, 1.264, 1.006e-3, 1.24)],
)
def test_dynamic_cantilever_reference_matches_theory_and_spec(case, E, omega_spec, period_spec, amp_spec, dismech_s):
    scene = get_scene(f"cantilever-{case}", n_nodes=21)
    ref, m = scene.reference, scene.model
    L, h, rho, v_tip = 1.0, 0.02, 500.0, 5e-3
    EI, rhoA = E * np.pi * h**4 / 4, rho * np.pi * h**2
    bl = beta_L_first_mode()
    assert bl == pytest.approx(1.8751040687, abs=1e-9)
    omega = bl**2 * np.sqrt(EI / (rhoA * L**4))
    assert ref["omega_rad_s"] == pytest.approx(omega, rel=1e-12)
    assert ref["period_s"] == pytest.approx(2 * np.pi / omega, rel=1e-12)
    assert ref["tip_amplitude_m"] == pytest.approx(v_tip / omega, rel=1e-12)
    # the spec's rounded values (DisMech Fig. 3, Eq. 17) and Table II's timing and step
    assert ref["omega_rad_s"] == pytest.approx(omega_spec, rel=1e-3)
    assert ref["period_s"] == pytest.approx(period_spec, rel=1e-3)
    assert ref["tip_amplitude_m"] == pytest.approx(amp_spec, rel=1e-3)
    assert ref["dismech_time_s"] == dismech_s
    assert ref["dismech_dt_s"] == {"a1": 0.5, "a2": 0.05}[case] == scene.dt
    # the model: that rod, and a tip moving at v_tip along +z
    assert float(m.rod.youngs_modulus) == E and float(m.rod.density) == rho and float(m.rod.radius) == h
    assert float(m.v0[-1, 2]) == pytest.approx(v_tip, rel=1e-12)
    assert float(np.asarray(m.rod.rest_positions)[-1, 0]) == pytest.approx(L, abs=1e-14)


@pytest.mark.parametrize("case, E, h, dismech_s, dismech_dt", [("b1", 1e7, 0.005, 7.30, 6e-3), ("b2", 1e9, 0.001, 3.18, 3e-3)])
def test_helix_reference_and_mesh_match_dismech(case, E, h, dismech_s, dismech_dt):
    scene = get_scene(f"helix-{case}")
    ref, m = scene.reference, scene.model
    assert ref["dismech_time_s"] == dismech_s and ref["dismech_dt_s"] == dismech_dt
    assert float(m.rod.youngs_modulus) == E and float(m.rod.radius) == h
    assert float(m.rod.density) == 1273.52
    x = np.asarray(m.rod.rest_positions)
    # DisMech's helix_configuration.txt: 106 nodes (stub, radial arm, 100 helix nodes); helix
    # radius 2 cm, contour 0.5 m, pitch 5 cm: 0.5 / sqrt((2 pi 0.02)^2 + 0.05^2) = 3.697 turns,
    # axial length 0.1848 m
    assert x.shape == (106, 3)
    helix = x[6:]
    turns = 0.5 / np.hypot(2 * np.pi * 0.02, 0.05)
    assert turns == pytest.approx(3.697, abs=1e-3)
    assert -helix[-1, 2] == pytest.approx(0.05 * turns, rel=1e-12)
    np.testing.assert_allclose(np.hypot(helix[:, 0], helix[:, 1]), 0.02, rtol=1e-12)
    # 99 equal chords, each spanning 2 pi turns / 99 of azimuth: ~5.04 mm (spec)
    dphi = 2 * np.pi * turns / 99
    chord = np.hypot(2 * 0.02 * np.sin(dphi / 2), 0.05 * dphi / (2 * np.pi))
    np.testing.assert_allclose(np.linalg.norm(np.diff(helix, axis=0), axis=1), chord, rtol=1e-12)
    assert chord == pytest.approx(5.04e-3, abs=5e-6)


def test_friction_reference_is_dismech_eq18():
    scene = get_scene("friction-validation", force=10.5)
    ref, m = scene.reference, scene.model
    # rho = 1 / (pi h^2 L) (the paper's 509.3 kg/m^3) makes m = 1 kg, so mu m g = 3.92 N
    assert float(m.rod.density) == pytest.approx(1 / (np.pi * 0.025**2), rel=1e-14)
    assert float(m.rod.density) == pytest.approx(509.3, rel=1e-5)
    assert float(np.sum(m.rod.node_masses())) == pytest.approx(1.0, rel=1e-12)
    assert ref["mass_kg"] == pytest.approx(1.0, rel=1e-12)
    assert ref["threshold_N"] == pytest.approx(0.4 * 1.0 * G, rel=1e-12) == 3.92
    # E_k = t^2 (|F| - mu m g)^2 / (2 m) at t = 1.5 s: 48.7 J at 10.5 N (spec table)
    assert ref["kinetic_energy_J"] == pytest.approx(1.5**2 * (10.5 - 3.92) ** 2 / 2, rel=1e-12)
    assert ref["kinetic_energy_J"] == pytest.approx(48.7, abs=0.05)
    assert ref["dismech_time_s"] == 1.59 and ref["pyelastica_time_s"] == 7.42
    assert float(m.distributed_force[0]) == pytest.approx(10.5, rel=1e-12)  # 10.5 N over L = 1 m
    # under the threshold the rod sticks, either way of pushing
    assert float(analytic_kinetic_energy(3.9, 1.5, mu=0.4, mass=1.0)) == 0.0
    assert float(analytic_kinetic_energy(-5.0, 1.5, mu=0.4, mass=1.0)) == pytest.approx(1.5**2 * 1.08**2 / 2)


def test_rod_coiling_reference_is_recomputed():
    kw = dict(n_nodes=41, length=0.5, radius=1e-3, youngs_modulus=4e5, density=1200.0, feed_speed=0.1, gap=0.03)
    scene = get_scene("rod-coiling", **kw, duration=1.0)
    ref, g = scene.reference, 9.81
    E, h, rho, L, v = kw["youngs_modulus"], kw["radius"], kw["density"], kw["length"], kw["feed_speed"]
    EI, rhoA = E * np.pi * h**4 / 4, rho * np.pi * h**2
    lgb = (EI / (rhoA * g)) ** (1 / 3)
    assert lgb == pytest.approx(0.0204, abs=5e-5)  # "2.04 cm with the defaults"
    assert ref["gravito_bending_length_m"] == pytest.approx(lgb, rel=1e-12)
    assert ref["froude"] == pytest.approx(v * v / (g * lgb), rel=1e-12)
    # stretch of a rod hanging under its own weight: rho g L^2 / (2 E) for the continuum; the
    # lumped discrete rod (clamped first edge unstretched) differs by O(1/n)
    continuum = rho * g * L**2 / (2 * E)
    assert ref["stretch_m"] == pytest.approx(continuum, rel=3.0 / kw["n_nodes"])
    assert ref["touchdown_time_s"] == pytest.approx((kw["gap"] - ref["stretch_m"]) / v, rel=1e-12)
    assert ref["clamp_height_end_m"] == pytest.approx(h + kw["gap"] + L - v * 1.0, rel=1e-12)
    m = scene.model
    x0 = np.asarray(m.q0)
    assert x0[-1, 2] - h == pytest.approx(kw["gap"] - ref["stretch_m"], abs=1e-12)


def test_spider_reference_mass_and_weight():
    for floor, gravity in ((True, (1.0, 0.0, -9.8)), (False, (0.0, 0.0, -9.8))):
        scene = get_scene("network-spider", n_nodes=5, floor=floor)
        mass = 1180.0 * np.pi * 0.005**2 * 9 * 0.1  # nine limbs of 0.1 m
        assert scene.reference["total_mass_kg"] == pytest.approx(mass, rel=1e-12)
        assert scene.reference["weight_N"] == pytest.approx(mass * np.linalg.norm(gravity), rel=1e-12)
        np.testing.assert_array_equal(np.asarray(scene.model.gravity), gravity)


def test_two_limb_rest_shape_is_two_polygon_arcs():
    """Uniform discrete curvature ``k`` on edges ``dl`` turns the tangent by ``k dl`` per node: a
    regular polygon inscribed in a circle of radius ``dl / (2 sin(k dl / 2))``. Its vertices are
    the geometric series ``dl (1 - w^j) / (1 - w)``, ``w = exp(i k dl)`` (x-z plane as complex)."""
    n, L, k0, k1 = 11, 0.1, 10.0, 20.0
    scene = get_scene("network-two-limb", n_nodes=n, limb_length=L, kappa=(k0, k1))
    ref = scene.reference
    dl = L / (n - 1)
    j = np.arange(n)
    w0, w1 = np.exp(1j * k0 * dl), np.exp(1j * k1 * dl)
    limb0 = dl * (1 - w0**j) / (1 - w0)
    heading = w0 ** (n - 2)  # the last edge of limb 0; no turn at the joint
    limb1 = limb0[-1] + heading * dl * (1 - w1**j) / (1 - w1)
    z = np.concatenate([limb0, limb1[1:]])
    shape = ref["rest_shape_no_gravity_m"]
    np.testing.assert_allclose(shape[:, 0], z.real, atol=1e-14)
    np.testing.assert_allclose(shape[:, 2], z.imag, atol=1e-14)
    np.testing.assert_allclose(shape[:, 1], 0.0)
    np.testing.assert_allclose(ref["tip_no_gravity_m"], shape[-1])
    for k, pts, key in ((k0, limb0, "radius_limb0_m"), (k1, limb1, "radius_limb1_m")):
        R = dl / (2 * np.sin(k * dl / 2))
        assert ref[key] == pytest.approx(R, rel=1e-14)
        u = (pts[1] - pts[0]) / abs(pts[1] - pts[0])
        centre = 0.5 * (pts[0] + pts[1]) + 1j * u * np.sqrt(R**2 - dl**2 / 4)  # left of the first edge
        np.testing.assert_allclose(np.abs(pts - centre), R, rtol=1e-12)


def test_pcs_references_are_the_papers_timings():
    sil = get_scene("pcs-silicone")
    assert sil.reference["paper_wall_s"] == {"E1": 790.0, "E2": 7.9, "I1": 5.6, "I2": 2.6, "I-A": 1.4}
    rod = sil.model.rod
    assert (rod.length, rod.n_segments) == (0.9, 3)
    assert float(rod.youngs_modulus) == 110e3 and float(rod.density) == 1080.0 and float(rod.viscosity) == 300.0
    assert sil.dt == 4e-3 and sil.duration == 10.0  # the paper's I1/I2 step and its 10 s runs
    cfrp = get_scene("pcs-cfrp")
    assert cfrp.reference["paper_wall_s"] == {"C1": 60.0}
    assert cfrp.dt == 1e-3 and float(cfrp.model.rod.youngs_modulus) == 61.635e9
    # the stand-in geometry weighs what the paper's prosthesis does (655 g): 0.5 m x 6 cm x 1.2 cm
    assert 1810.0 * 0.5 * 0.06 * 0.012 == pytest.approx(0.655, abs=0.005)
    assert float(cfrp.model.rod.area) == pytest.approx(0.06 * 0.012, rel=1e-12)
