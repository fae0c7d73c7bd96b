"""DER rods pinned and clamped to rigid bodies and to the world (jaxrod.system.HybridSystem):
a cantilever carrying a tip body (spring-mass frequency, static deflection under gravity with a
tip moment), rod pendulums (pinned to the world; clamped to a body on a revolute joint), a
three-rod Stewart-Gough plate (lateral and axial stiffness, force balance of the multipliers),
a PCS cantilever whose tip frame is welded to a body (static sag and frequency vs the PCS closed
forms, the plain PCS model with a tip force), gradients against central differences, and the
attachment errors.

Each mechanism compiles one program (module-scoped fixtures). Expected values are closed forms
computed here with numpy; constraint checks use the saved positions and frames."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.pcs import PCSModel, PCSRod
from jaxrod.system import HybridSystem, Revolute, RigidBody, RodClamp, RodPin

SOLVER = jaxrod.NewtonSolver(rtol=0.0, atol=1e-12)
G = 9.81


def _crossings(t, y):
    """Times where ``y`` changes sign, linearly interpolated."""
    k = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])


def _rotations(frames):
    return np.swapaxes(np.asarray(frames), -1, -2)


def _clamp_errors(system, traj, rod, edge, body, r_nodes, b2):
    """Max over saved frames of the clamp's node offsets [m] and twist cosine ``m1 . R b2``, from
    the saved positions/frames; ``r_nodes`` ``(2, 3)`` and ``b2`` ``(3,)`` in the body frame."""
    pos = np.asarray(traj.positions)
    x = np.asarray(system.rod_positions(pos, rod))
    xb = np.asarray(system.body_positions(pos))[:, body]
    R = _rotations(system.body_frames(traj.frames))[:, body]
    off = np.concatenate([[0], np.cumsum([m.rod.n_nodes - 1 for m in system.rods])])
    m1 = np.asarray(traj.frames)[:, off[rod] + edge % (off[rod + 1] - off[rod]), 0]
    e = edge % (x.shape[1] - 1)
    gap = max(np.abs(x[:, e + j] - xb - np.einsum("tij,j->ti", R, r_nodes[j])).max() for j in (0, 1))
    return gap, np.abs(np.einsum("ti,tij,j->t", m1, R, b2)).max()


# --------------------------------------------------------------- cantilevers carrying a tip body
E_STEEL, RHO, RADIUS, LENGTH, N_NODES = 2e11, 1000.0, 0.01, 0.5, 6
TIP_MASS, OFFSET = 2.0, 0.1  # kg (12.7 rod masses); the second body's centre beyond the tip [m]


def _tip_body_system(mass=TIP_MASS, youngs_modulus=E_STEEL, n_nodes=N_NODES, bodies_=("a", "b")):
    """Two cantilevers along x (clamped to the world at edge 0, to a body at edge -1), gravity -z:
    body 'a' centred on the tip clamp point, body 'b' centred OFFSET beyond it (a tip moment).
    ``bodies_=("b",)``: only the second (one rod, one body)."""
    rods, bodies, att = [], [], []
    for k, (name, c) in enumerate((n, c) for n, c in (("a", 0.0), ("b", OFFSET)) if n in bodies_):
        y = 0.5 * k
        rod = jaxrod.DERRod.cantilever(n_nodes, LENGTH, clamped_ends="both", start=(0.0, y, 0.0),
                                       youngs_modulus=youngs_modulus, density=RHO, radius=RADIUS)
        rods.append(jaxrod.DERModel(rod))
        # small rotary inertia: the tip body acts as a point mass
        bodies.append(RigidBody(name, mass, [1e-6] * 3, position=[LENGTH + c, y, 0.0]))
        att += [RodClamp(k, 0), RodClamp(k, -1, name)]
    return HybridSystem(rods, bodies, attachments=att, gravity=(0.0, 0.0, -G))


def _cantilever_constants(n_nodes=N_NODES):
    EI = E_STEEL * np.pi * RADIUS**4 / 4
    w = RHO * np.pi * RADIUS**2  # rod mass per length [kg/m]
    return EI, w


@pytest.fixture(scope="module")
def tip_bodies():
    """The static equilibrium under gravity (:func:`jaxrod.solve_static`: the attachment
    multipliers are the clamp forces) and the linear modes about it (:func:`jaxrod.modal`: static
    multipliers first, modes on the constraint manifold)."""
    system = _tip_body_system()
    state, _ = jaxrod.solve_static(system)
    return system, state, jaxrod.modal(system, state, n_modes=4)


def test_tip_body_frequency_matches_spring_mass(tip_bodies):
    """f = sqrt(k / (M + 33/140 m_rod)) / (2 pi), k = 3 EI / L^3 (Rayleigh, M >> m_rod): body 'a'
    (centred on the tip) moves alone in its vertical bending mode."""
    system, _, res = tip_bodies
    EI, w = _cantilever_constants()
    expected = np.sqrt(3 * EI / LENGTH**3 / (TIP_MASS + 33 / 140 * w * LENGTH))
    d = np.asarray(system.body_positions(res.displacements))  # (modes, bodies, 3)
    mode = int(np.argmax(np.abs(d[:, 0, 2]) - np.abs(d[:, 1, 2])))  # the mode moving body 'a' vertically
    assert abs(float(res.omega[mode]) / expected - 1) < 3e-3, (float(res.omega[mode]), expected)  # measured +1.6e-3


def test_tip_body_static_deflection_and_clamp(tip_bodies):
    """Static deflection of a cantilever under its weight w and a tip load P = M g (body 'a'),
    plus the tip moment P c (body 'b', measured at its centre); the welds hold."""
    system, state, _ = tip_bodies
    EI, w = _cantilever_constants()
    P, L, c = TIP_MASS * G, LENGTH, OFFSET
    tip = P * L**3 / (3 * EI) + w * G * L**4 / (8 * EI)
    slope = P * L**2 / (2 * EI) + w * G * L**3 / (6 * EI)
    expected = [tip, tip + P * c * L**2 / (2 * EI) + c * (slope + P * c * L / EI)]
    obs = system.observe(state.q, state.v, state.aux)
    z = np.asarray(system.body_positions(obs["positions"]))[:, 2]
    for j in range(2):
        assert expected[j] / LENGTH < 1e-2  # small loads: linear beam theory applies
        assert abs(-z[j] / expected[j] - 1) < 1e-2, (j, -z[j], expected[j])  # measured -0.58 %, -0.16 %
    dl = LENGTH / (N_NODES - 2)
    pos, frames = np.asarray(obs["positions"])[None], np.asarray(obs["frames"])[None]
    saved = type("Saved", (), {"positions": pos, "frames": frames})
    s0 = system.initial_state()
    obs0 = system.observe(s0.q, s0.v, s0.aux)  # bodies unrotated: body and world frames agree
    for j, c in enumerate((0.0, OFFSET)):
        r_nodes = np.array([[-c - dl / 2, 0, 0], [-c + dl / 2, 0, 0]])
        m2_0 = np.asarray(obs0["frames"])[(j + 1) * (N_NODES - 1) - 1, 1]  # the weld's twist reference
        gap, twist = _clamp_errors(system, saved, j, -1, j, r_nodes, m2_0)
        assert gap < 1e-10 and twist < 1e-10, (gap, twist)


def test_multipliers_are_the_clamp_forces(tip_bodies):
    """At rest the tip clamp of body 'a' carries its weight: the vertical rows of its multiplier
    (force of the rod on the body) sum to +M g (up); the rod pulls the world clamp down by M g plus
    its own weight."""
    system, state, _ = tip_bodies
    _, _, lam = system.split(state.q)  # static multipliers ARE the forces
    lam = np.asarray(lam)
    rows = system.attachment_rows()
    tip, root = lam[rows[1]], lam[rows[0]]
    m_rod = RHO * np.pi * RADIUS**2 * LENGTH * (N_NODES - 1) / (N_NODES - 2)  # nodes span L + dl
    assert abs((tip[2] + tip[5]) / (TIP_MASS * G) - 1) < 1e-9
    assert abs((root[2] + root[5]) / (-(TIP_MASS + m_rod) * G) - 1) < 1e-9


# ------------------------------------------------------------- a PCS cantilever carrying a tip body
PCS_L, PCS_R, PCS_E, PCS_SEGMENTS = 1.0, 0.01, 1e9, 2
PCS_TIP_MASS = 1e-3  # kg: deflection 4e-4 L (geometric nonlinearity ~1e-7)
PCS_RHO = 1e-5  # kg/m^3: rod mass 3e-6 M, its weight shifts the tip by ~1e-6 of the body's
PCS_TIP_J = 1e-9  # kg m^2: the body's rotary inertia (lowers the frequency by 1.3e-6)


def _pcs_rod():
    return PCSRod.circular(PCS_L, PCS_SEGMENTS, PCS_R, youngs_modulus=PCS_E, density=PCS_RHO)


@pytest.fixture(scope="module")
def pcs_tip_body():
    """A PCS cantilever along x (base clamped by the model at the origin) whose tip frame is
    welded (RodClamp(0, -1)) to a near point mass centred on it, gravity -z: static equilibrium;
    the same rod with the body's weight as its own dead tip wrench; and the modes of the system
    without gravity about its reference state (the loaded linearisation of this near-massless rod
    is conditioned to ~1e-5 only: measured -1.7e-5 and -8.8e-6)."""
    body = RigidBody("tip", PCS_TIP_MASS, [PCS_TIP_J] * 3, position=[PCS_L, 0.0, 0.0])

    def build(g):
        return HybridSystem([PCSModel(_pcs_rod())], [body], attachments=[RodClamp(0, -1, "tip")], gravity=(0.0, 0.0, g))

    system = build(-G)
    solver = jaxrod.NewtonSolver(rtol=0.0, atol=1e-13)
    state, _ = jaxrod.solve_static(system, solver=solver)
    plain = PCSModel(_pcs_rod(), gravity=(0.0, 0.0, -G), tip_wrench=(0, 0, 0, 0, 0, -PCS_TIP_MASS * G))
    plain_state, _ = jaxrod.solve_static(plain, solver=solver)
    free = build(0.0)
    return system, state, jaxrod.modal(free, free.initial_state(), n_modes=2), plain, plain_state


def _pcs_tip_stiffness():
    """PCS tip stiffness of n constant-strain segments (bending 1 - 1/(4 n^2) of Euler-Bernoulli's
    compliance, plus shear)."""
    EI = PCS_E * np.pi * PCS_R**4 / 4
    GA = PCS_E / 3 * np.pi * PCS_R**2  # G = E / 3 (the default Poisson ratio 0.5)
    return 1 / (PCS_L**3 / (3 * EI) * (1 - 1 / (4 * PCS_SEGMENTS**2)) + PCS_L / GA)


def test_pcs_tip_body_static_deflection_and_weld(pcs_tip_body):
    """The body sags by M g / k (PCS closed form), exactly as the plain PCS model with the weight
    as a dead tip force; the clamp multipliers are the weight (force up on the body, no torque:
    the body is centred on the tip) and the weld holds in position and rotation."""
    system, state, _, plain, plain_state = pcs_tip_body
    P = PCS_TIP_MASS * G
    obs = system.observe(state.q, state.v, state.aux)
    xb = np.asarray(system.body_positions(obs["positions"]))[0]
    assert abs(-xb[2] / (P / _pcs_tip_stiffness()) - 1) < 1e-5, (xb, P / _pcs_tip_stiffness())  # measured 1e-6
    q_rod = np.asarray(system.split(state.q)[0][0])
    np.testing.assert_allclose(q_rod, np.asarray(plain_state.q), rtol=0, atol=1e-9 * np.abs(q_rod).max())
    R_tip, p_tip = (np.asarray(v)[-1] for v in plain.segment_end_poses(jnp.asarray(q_rod)))
    assert np.abs(xb - p_tip).max() < 1e-12
    R_body = _rotations(system.body_frames(obs["frames"]))[0]
    assert np.abs(R_body - R_tip).max() < 1e-12  # both frames started as the identity
    lam = np.asarray(system.split(state.q)[2])
    np.testing.assert_allclose(lam[:3], [0.0, 0.0, P], rtol=0, atol=1e-9 * P)
    assert np.abs(lam[3:]).max() < 1e-9 * P * PCS_L


def test_pcs_tip_body_frequency_matches_spring_mass(pcs_tip_body):
    """The two bending modes (y and z, a round section) of the near-massless PCS spring carrying
    the body: omega^2 = k / (M + J (theta / delta)^2) (Rayleigh), where the tip turns by
    theta = P L^2 / (2 EI) (the mean curvatures of the 2 segments, 3 P L / 4 EI and P L / 4 EI)
    while the bending deflection is 15/16 P L^3 / (3 EI): theta / delta = 1.6 / L."""
    _, _, res, _, _ = pcs_tip_body
    assert PCS_SEGMENTS == 2  # the ratio 1.6 / L below is for 2 segments
    expected = np.sqrt(_pcs_tip_stiffness() / (PCS_TIP_MASS + PCS_TIP_J * (1.6 / PCS_L) ** 2))
    np.testing.assert_allclose(np.asarray(res.omega), expected, rtol=3e-6)  # measured -3.6e-7 for both (eigh alone: -1.4e-5, +1e-7)


@pytest.fixture(scope="module")
def pcs_propped():
    """The PCS cantilever with the tip body welded to its tip and its segment end 1 (mid-span)
    pinned to the world (RodPin(0, 1)): static equilibrium under gravity."""
    body = RigidBody("tip", PCS_TIP_MASS, [PCS_TIP_J] * 3, position=[PCS_L, 0.0, 0.0])
    system = HybridSystem([PCSModel(_pcs_rod())], [body], attachments=[RodClamp(0, -1, "tip"), RodPin(0, 1)],
                          gravity=(0.0, 0.0, -G))
    state, _ = jaxrod.solve_static(system, solver=jaxrod.NewtonSolver(rtol=0.0, atol=1e-13))
    return system, state


def test_pcs_mid_span_pin_closed_form(pcs_propped):
    """Linear PCS statics of 2 segments of length l (curvature k_i, shear g_i, energy
    sum l (EI k_i^2 + GA g_i^2) / 2), tip load P, mid-span held by an upward pin force F: the
    mid-span deflection k_1 l^2 / 2 + g_1 l = 0 and stationarity give
    k_1 = P l / (EI + GA l^2 / 4), F = P + GA l k_1 / 2 (3 P with shear locking), and the tip sags by
    k_1 l^2 + P l^3 / (4 EI) + P l / GA. The pin multiplier is the force of the rod on the world."""
    system, state = pcs_propped
    EI = PCS_E * np.pi * PCS_R**4 / 4
    GA = PCS_E / 3 * np.pi * PCS_R**2
    P, ell = PCS_TIP_MASS * G, PCS_L / 2
    k1 = P * ell / (EI + GA * ell**2 / 4)
    sag = k1 * ell**2 + P * ell**3 / (4 * EI) + P * ell / GA
    obs = system.observe(state.q, state.v, state.aux)
    xb = np.asarray(system.body_positions(obs["positions"]))[0]
    assert abs(-xb[2] / sag - 1) < 1e-5, (xb, sag)  # measured 5e-7
    mid = np.asarray(system.rods[0].segment_end_poses(system.split(state.q)[0][0])[1])[1]
    assert np.abs(mid - [ell, 0.0, 0.0]).max() < 1e-12
    lam = np.asarray(system.split(state.q)[2])
    pin, weld = (lam[r] for r in system.attachment_rows()[::-1])
    np.testing.assert_allclose(pin, [0.0, 0.0, -(P + GA * ell * k1 / 2)], rtol=0, atol=1e-5 * P)  # measured 4e-6 P
    np.testing.assert_allclose(weld[:3], [0.0, 0.0, P], rtol=0, atol=1e-9 * P)


# ----------------------------------------------------------------------------- rod pendulums
PEND_L, THETA0 = 0.5, 0.1
HUB_J = 2e-3  # kg m^2 about the hinge


def _lumped_omega2(rod, s, extra_inertia=0.0):
    """omega^2 = g sum(m_i s_i) / (sum(m_i s_i^2) + J) of the rod's lumped node masses at signed
    distances ``s`` from the pivot (a rigid compound pendulum)."""
    m = np.asarray(rod.node_masses())
    return G * np.sum(m * s) / (np.sum(m * s * s) + extra_inertia)


@pytest.fixture(scope="module")
def pendulums():
    """Rod 0 pinned by node 0 to the world; rod 1 clamped (edge 0) to a hub body hinged to the
    world (Revolute about y). Both stiff, released at THETA0 from hanging."""
    d = (np.sin(THETA0), 0.0, -np.cos(THETA0))
    mat = dict(youngs_modulus=1e9, density=1000.0, radius=0.01)
    pinned = jaxrod.DERRod.straight(6, PEND_L, direction=d, **mat)
    hub_at = np.array([1.0, 0.0, 0.0])
    clamped = jaxrod.DERRod.cantilever(6, PEND_L, start=hub_at, direction=d, **mat)
    hub = RigidBody("hub", 0.1, [HUB_J, HUB_J, HUB_J], position=hub_at)
    system = HybridSystem(
        [jaxrod.DERModel(pinned), jaxrod.DERModel(clamped)], [hub],
        joints=[Revolute(None, "hub", point=hub_at, axis=(0.0, 1.0, 0.0))],
        attachments=[RodPin(0, 0), RodClamp(1, 0, "hub")], gravity=(0.0, 0.0, -G),
    )
    m = 1000.0 * np.pi * 0.01**2 * PEND_L
    omega = [np.sqrt(G * m * PEND_L / 2 / (m * PEND_L**2 / 3 + J)) for J in (0.0, HUB_J)]
    dt = 2 * np.pi / omega[0] / 100
    traj = jaxrod.simulate(system, dt=dt, n_steps=250, solver=SOLVER, fallback=False)
    s_pin = np.linalg.norm(np.asarray(pinned.rest_positions), axis=1)
    s_clamp = (np.asarray(clamped.rest_positions) - hub_at) @ np.asarray(d)
    w2 = [_lumped_omega2(pinned, s_pin), _lumped_omega2(clamped, s_clamp, HUB_J)]
    return system, traj, dt, w2, omega


def test_rod_pendulums_swing_at_the_compound_frequency(pendulums):
    system, traj, dt, w2, omega = pendulums
    assert bool(np.all(traj.stats.converged))
    t = np.asarray(traj.times)
    for j, x_pivot in enumerate((0.0, 1.0)):
        tip_x = np.asarray(system.rod_positions(traj.positions, j))[:, -1, 0] - x_pivot
        period = 2 * np.mean(np.diff(_crossings(t, tip_x)))
        w_lumped = np.sqrt(w2[j])
        # amplitude (1 + theta0^2/16) and midpoint-rule (1 + (w dt)^2/12) period corrections
        expected = 2 * np.pi / w_lumped * (1 + THETA0**2 / 16) * (1 + (w_lumped * dt) ** 2 / 12)
        assert abs(period / expected - 1) < 1e-3, (j, period, expected)
        # the lumped 5-edge rods vs the continuous rods, omega^2 = g (m L/2) / (m L^2/3 + J):
        # -1.0 % pinned, -1.8 % clamped (the cantilever geometry puts a ghost half edge behind the hinge)
        assert abs(w_lumped / omega[j] - 1) < 2e-2, (j, w_lumped, omega[j])
    # the pin holds node 0 at the origin (saved data)
    assert np.abs(np.asarray(system.rod_positions(traj.positions, 0))[:, 0]).max() < 1e-10


# ---------------------------------------------------------------------- Stewart-Gough plate
SG_L, SG_R, SG_RADIUS, SG_E = 0.2, 0.1, 0.002, 2e9
# two load cases on one compiled program (the force is an array leaf): lateral, and axial. Combined,
# the compression would soften the lateral stiffness (27 % of the rods' buckling load: measured
# -24 %), a beam-column effect, not what these closed forms describe.
SG_FORCES = (np.array([0.05, 0.0, 0.0]), np.array([0.0, 0.0, -5.0]), np.zeros(3))  # N on the plate
SG_TORQUE = 1e-3  # N m about z on the plate in the third load case (twists the rods)


def _stewart(force, torque=(0.0, 0.0, 0.0)):
    rods, att = [], []
    for k in range(3):
        a = 2 * np.pi * k / 3
        base = (SG_R * np.cos(a), SG_R * np.sin(a), 0.0)
        rod = jaxrod.DERRod.cantilever(6, SG_L, clamped_ends="both", start=base, direction=(0.0, 0.0, 1.0),
                                       youngs_modulus=SG_E, density=1000.0, radius=SG_RADIUS)
        rods.append(jaxrod.DERModel(rod))
        att += [RodClamp(k, 0), RodClamp(k, -1, "plate")]
    plate = RigidBody("plate", 0.5, [1.25e-3, 1.25e-3, 2.5e-3], position=(0.0, 0.0, SG_L), force=force,
                      torque=torque)
    return HybridSystem(rods, [plate], attachments=att)


@pytest.fixture(scope="module")
def stewart():
    """Three vertical rods clamped to the world at the bottom and to one plate at the top; a
    constant force on the plate; 4 backward-Euler steps much longer than every period (statics)."""
    # mu = dt lambda is large at these steps: an absolute tolerance of 1e-12 is below its round-off
    solver = jaxrod.NewtonSolver(rtol=0.0, atol=1e-9)
    out = []
    for k, force in enumerate(SG_FORCES):
        system = _stewart(force, (0.0, 0.0, SG_TORQUE if k == 2 else 0.0))
        out.append((system, jaxrod.simulate(system, dt=10.0, n_steps=4, scheme=jaxrod.BackwardEuler(),
                                            solver=solver, fallback=False)))
    return out


def test_stewart_plate_stiffness(stewart):
    """Lateral: three fixed-guided beams. Euler-Bernoulli gives k = 3 * 12 EI / L^3; DER with 4
    edges between the clamps (lateral node offsets 0, 0, a, d - a, d, d; bending energy
    sum EI kappa_i^2 / (2 dl), kappa_i the second differences / dl) gives a = 0.3 d and
    k = 3 * 0.2 EI / dl^3 = 3 * 12.8 EI / L^3 (6.7 % stiffer). Axial: three bars whose stretchable
    length is L - dl (the clamped end edges are rigid, as in a DER clamp), k = 3 EA / (L - dl)."""
    (lat_sys, lat), (ax_sys, ax), _ = stewart
    EI = SG_E * np.pi * SG_RADIUS**4 / 4
    EA = SG_E * np.pi * SG_RADIUS**2
    dl = SG_L / 4
    home = np.array([0.0, 0.0, SG_L])
    d = np.asarray(lat_sys.body_positions(lat.positions))[-1, 0] - home
    assert abs(d[0] / (SG_FORCES[0][0] / (3 * 0.2 * EI / dl**3)) - 1) < 2e-3, d
    assert abs(d[0] / (SG_FORCES[0][0] * SG_L**3 / (36 * EI)) - 1) < 8e-2, d  # vs Euler-Bernoulli
    assert abs(d[1]) < 1e-3 * abs(d[0]) and abs(d[2]) < 1e-2 * abs(d[0])
    R = _rotations(lat_sys.body_frames(lat.frames))[-1, 0]
    assert np.abs(R - np.eye(3)).max() < 1e-2 * abs(d[0]) / SG_L  # no tilt or yaw (symmetry, stiff bars)
    dz = np.asarray(ax_sys.body_positions(ax.positions))[-1, 0] - home
    assert abs(dz[2] / (SG_FORCES[1][2] * (SG_L - dl) / (3 * EA)) - 1) < 1e-3, dz
    assert bool(np.all(lat.stats.converged)) and bool(np.all(ax.stats.converged))


def test_stewart_plate_yaw_twists_the_rods(stewart):
    """A torque about z yaws the plate by phi: each rod's top edge turns by phi about its own axis
    (torsion, GJ / L: 4 twist stencils of Voronoi length dl = L / 4) and moves by rho phi
    sideways (the discrete fixed-guided bending of test_stewart_plate_stiffness):
    k = 3 (GJ / L + 0.2 EI / dl^3 rho^2). Without the clamp's twist row the torsion share
    (17 %) would be missing."""
    system, traj = stewart[2]
    assert bool(np.all(traj.stats.converged))
    R = _rotations(system.body_frames(traj.frames))[-1, 0]
    phi = np.arctan2(R[1, 0], R[0, 0])
    EI = SG_E * np.pi * SG_RADIUS**4 / 4
    GJ = SG_E / 3 * np.pi * SG_RADIUS**4 / 2  # G = E / (2 (1 + 0.5)), the default Poisson ratio
    dl = SG_L / 4
    k = 3 * (GJ / SG_L + 0.2 * EI / dl**3 * SG_R**2)
    assert abs(phi / (SG_TORQUE / k) - 1) < 2e-3, (phi, SG_TORQUE / k)
    # each rod's top edge carries the plate's rotation as twist: m1 . R b2 = 0 (saved frames)
    frames = np.asarray(traj.frames)
    for rod in range(3):
        e = (rod + 1) * 5 - 1  # the last edge of rod `rod` (5 edges per rod)
        assert abs(frames[-1, e, 0] @ R @ frames[0, e, 1]) < 1e-10
        assert abs(frames[-1, e, 0] @ R @ frames[0, e, 0] - 1) < 1e-10


def test_stewart_clamp_forces_balance_the_load(stewart):
    """The plate is at rest: the forces the three rods exert on it (multiplier rows of the top
    clamps) sum to minus the applied force; the rods pull the world clamps with the load."""
    for (system, traj), force in zip(stewart[:2], SG_FORCES):
        lam = np.asarray(system.multipliers(traj.q, traj.dt))[-1]
        rows = system.attachment_rows()
        top = sum(lam[rows[2 * k + 1]][:3] + lam[rows[2 * k + 1]][3:6] for k in range(3))
        bottom = sum(lam[rows[2 * k]][:3] + lam[rows[2 * k]][3:6] for k in range(3))
        np.testing.assert_allclose(top, -force, atol=1e-6 * np.abs(force).max())
        np.testing.assert_allclose(bottom, force, atol=1e-6 * np.abs(force).max())


# -------------------------------------------------------------------------------- gradients
# one cantilever clamped to body 'a' (the rod-body coupling of the two-rod system, whose program
# compiled 132 s XLA at load 2 against ~45 s for this one; with body 'b' alone Newton stalls at
# 1.2e-8 > atol 1e-12 at step 6, a round-off floor, so 'a' it is)
GRAD_SYSTEM = _tip_body_system(n_nodes=5, bodies_=("a",))


def _grad_loss(params):
    """Deflection of the tip body after 12 AVF steps, as a function of the tip mass [kg] and the
    rod's Young's modulus [Pa]."""
    s = eqx.tree_at(lambda m: [b.mass for b in m.multibody.bodies], GRAD_SYSTEM, [params["mass"]])
    s = eqx.tree_at(lambda m: [r.rod.youngs_modulus for r in m.rods], s, [params["E"]])
    traj = jaxrod.simulate(s, dt=2e-3, n_steps=12, solver=SOLVER, fallback=False)
    return jnp.sum(s.body_positions(traj.positions)[-1, :, 2])


# forward mode (one JVP per parameter direction; the direction is an array argument, so one
# compiled program serves both derivatives and, through its primal output, every finite-difference
# run). Reverse mode through the time loop is checked on DER rods in test_der_gradients.py; here
# it compiled for 236 s CPU against 143 s for this JVP (same derivative to 1e-15; load ~10).
loss_jvp = jax.jit(lambda p, t: jax.jvp(_grad_loss, (p,), (t,)))
P0 = {"mass": jnp.asarray(TIP_MASS), "E": jnp.asarray(E_STEEL)}


@pytest.mark.parametrize("name", ["mass", "E"])
def test_gradient_matches_central_differences(name):
    unit = {k: jnp.asarray(float(k == name)) for k in P0}
    g = float(loss_jvp(P0, unit)[1])
    h = 1e-4 * float(P0[name])
    fd = (float(loss_jvp({**P0, name: P0[name] + h}, unit)[0])
          - float(loss_jvp({**P0, name: P0[name] - h}, unit)[0])) / (2 * h)
    assert abs(fd) > 0
    assert abs(g - fd) <= 1e-5 * abs(fd), (g, fd)


# ------------------------------------------------------------------------------- bad inputs
def _rod(n=5):
    return jaxrod.DERModel(jaxrod.DERRod.straight(n, 1.0, youngs_modulus=1e6, density=1000.0, radius=0.01))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(attachments=[RodPin(0, 0, "plat")]), r"attachments\[0\] \(RodPin\)\.body = 'plat' names no body; bodies are \['plate'\]"),
        (dict(attachments=[RodPin(0, 7, "plate")]), r"RodPin\)\.node = 7 is out of range: rods\[0\] has 5 nodes \(allowed 0\.\.4"),
        (dict(attachments=[RodClamp(0, 4, "plate")]), r"RodClamp\)\.edge = 4 is out of range: rods\[0\] has 4 edges"),
        (dict(attachments=[RodPin(1, 0)]), r"RodPin\)\.rod = 1 is out of range: there are 1 rods"),
        (dict(attachments=[RodClamp(0, -1, "plate"), RodPin(0, -1)]), r"node 4 of rods\[0\] is already attached by attachments\[0\]"),
        (dict(rods=[jaxrod.DERModel(_rod().rod, clamped_edges=(0,))], attachments=[RodPin(0, 1)]),
         r"node 1 of rods\[0\] is already fixed by the rod's own boundary conditions"),
        (dict(rods=[jaxrod.DERModel(_rod().rod, gravity=(0, 0, -1.0))], gravity=(0, 0, -G)),
         r"rods\[0\]\.gravity = \[0\.0, 0\.0, -1\.0\] differs from HybridSystem\.gravity"),
        (dict(attachments=["pin"]), r"attachments\[0\] must be a RodPin or RodClamp, got str"),
        (dict(rods=[PCSModel(_pcs_rod())], attachments=[RodClamp(0, 0, "plate")]),
         r"RodClamp\)\.edge = 0 is the base \(segment end 0\) of rods\[0\], a PCSModel: its base is clamped at "
         r"base_position / base_rotation by the model and cannot ride on a body; attach a segment end 1\.\.2"),
        (dict(rods=[PCSModel(_pcs_rod())], attachments=[RodPin(0, -3)]), r"RodPin\)\.node = -3 is the base"),
        (dict(rods=[PCSModel(_pcs_rod())], attachments=[RodPin(0, 3)]),
         r"node = 3 is out of range: rods\[0\] is a PCSModel of 2 segments, ends 0\.\.2"),
    ],
)
def test_bad_attachments_are_refused(kwargs, message):
    args = dict(rods=[_rod()], bodies=[RigidBody("plate", 1.0, [1.0, 1.0, 1.0])])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        HybridSystem(**args)
