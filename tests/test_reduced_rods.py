"""TMTDyn's reduced rods (jaxrod.models.tmtdyn: ROM and EBA) against closed forms: the paper's
"simple example" (spec 5.9: linearised M, K, damping at q = 0), Euler-Bernoulli cantilever
frequencies and tip deflection, the EBR/PCS relation, and a gradient by implicit differentiation.

Every expected value below is a hand-derived formula, never an output of the models."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.tmtdyn import EBAModel, RodSection, ROMModel

L, R, E, RHO = 1.0, 0.005, 1.0e6, 1000.0
A, J = np.pi * R**2, np.pi * R**4 / 4
G = E / 3.0  # poisson_ratio 0.5 (TMTDyn: incompressible)
EI, MASS = E * J, RHO * np.pi * R**2 * L
#: clamped-free Euler-Bernoulli roots beta_n L of cos(bL) cosh(bL) = -1
BETA_L = np.array([1.8751040687119611, 4.694091132974175, 7.854757438237613])
OMEGA_EB = BETA_L**2 * np.sqrt(EI / (MASS / L) / L**4)
#: an end load giving a tip deflection of 1e-6 L: linear to ~1e-12
P = 1e-6 * 3 * EI / L**3
MU = np.array([0.11, 0.13, 0.17, 0.019, 0.023, 0.029])  # damping, all entries distinct


@pytest.fixture(scope="module")
def section():
    return RodSection.circular(L, R, youngs_modulus=E, density=RHO)


def _diag_block(M, idx):
    return np.asarray(M)[np.ix_(idx, idx)]


# ---- spec 5.9: the paper's simple example, one element / ROM order 1 ------------------------------


def test_simple_example_eba_matches_closed_forms(section):
    """EBA (= EBR) with one element: spec Eq. 18, 34-37 and 40 (corrected typos, spec 15 item 14).
    The spec's states are (x, z, theta); ours are TMTDyn's quaternion vector part Q_rho = theta / 2
    to first order, so the rotation rows and columns carry a factor 2 each (S below)."""
    model = EBAModel(section, n_nodes=1, damping=MU)
    res = jaxrod.modal(model, model.initial_state())
    M, C, K = (np.asarray(x) for x in (res.mass_matrix, res.damping_matrix, res.stiffness_matrix))
    l = L
    S = np.diag([1.0, 1, 1, 2, 2, 2])  # d(x, y, z, theta) / d(x, y, z, Q_rho) at q = 0
    M, C, K = (np.linalg.inv(S) @ X @ np.linalg.inv(S) for X in (M, C, K))
    # full 6x6: node 1 = [x, y, z, theta_x, theta_y, theta_z]; the planar example is (x, z, theta_y)
    M_ref = MASS * np.diag([1, 1, 1, (3 * R**2 + l**2) / 12, (3 * R**2 + l**2) / 12, R**2 / 2])
    K_ref = np.diag([G * A, G * A, E * A, E * J, E * J, G * 2 * J]) / l
    np.testing.assert_allclose(M, M_ref, rtol=1e-12, atol=1e-15 * M_ref.max())
    np.testing.assert_allclose(K, K_ref, rtol=1e-12, atol=1e-13 * K_ref.max())
    np.testing.assert_allclose(C, np.diag(MU), rtol=1e-12, atol=1e-15)
    planar = [0, 2, 4]
    np.testing.assert_allclose(_diag_block(M, planar), MASS * np.diag([1, 1, (3 * R**2 + l**2) / 12]), rtol=1e-12)
    np.testing.assert_allclose(
        _diag_block(K, planar), np.diag([G * A / l, E * A / l, E * np.pi * R**4 / (4 * l)]), rtol=1e-12
    )


def test_simple_example_rom_matches_closed_forms(section):
    """ROM order 1 (spec Eq. 14-16, 30, 38): M, K, V at q = 0 from the corrected strains
    xi_1 = 2 s (C1 - C3), xi_3 = 2 s C2, zeta_2 = 2 C3 (linear parts), dM = m/l diag(1, 1, r^2/4) ds.
    In TMTDyn's coefficients (dimensional s) T_b = [[2s, 0, -2s], [0, 2s, 0], [0, 0, 2]]; ours are
    q = L C, so every matrix is divided by L^2."""
    model = ROMModel(section, order=1, damping=MU)
    res = jaxrod.modal(model, model.initial_state())
    planar = [0, 2, 4]  # q (6, 1) flat: c_x, c_z, c_Qy
    c3 = 4 * L**3 / 3
    M_C = MASS / L * np.diag([L**5 / 5, L**5 / 5, R**2 * L**3 / 3])
    K_C = np.array([[G * A * c3, 0, -G * A * c3], [0, E * A * c3, 0], [-G * A * c3, 0, G * A * c3 + 4 * E * J * L]])
    V_C = np.array([[MU[0] * c3, 0, -MU[0] * c3], [0, MU[2] * c3, 0], [-MU[0] * c3, 0, MU[0] * c3 + 4 * MU[4] * L]])
    for got, want in ((res.mass_matrix, M_C), (res.stiffness_matrix, K_C), (res.damping_matrix, V_C)):
        np.testing.assert_allclose(_diag_block(got, planar), want / L**2, rtol=1e-11, atol=1e-14 * np.abs(want).max())
    # the planar example decouples from the out-of-plane coordinates at q = 0
    out = [1, 3, 5]
    assert np.abs(np.asarray(res.stiffness_matrix)[np.ix_(planar, out)]).max() < 1e-12 * K_C.max()


def test_rom_strains_match_corrected_eq16(section):
    """The exact ROM strains of the simple example at a finite configuration (spec 3.4, corrected:
    rotate rho' by Q^-1; the printed Eq. 16 rotates by Q and drops a square)."""
    model = ROMModel(section, order=1)
    C1, C2, C3 = 0.3, -0.2, 0.4  # TMTDyn coefficients [1/m]
    q = jnp.zeros((6, 1)).at[0, 0].set(C1 * L).at[2, 0].set(C2 * L).at[4, 0].set(C3 * L)
    for s in (0.3, 0.8):
        c0 = np.sqrt(1 - C3**2 * s**2)
        xi1 = 2 * s * (C1 - 2 * C1 * C3**2 * s**2 - 2 * C2 * C3 * c0 * s - C3 * c0)
        xi3 = 2 * s * (C2 - 2 * C2 * C3**2 * s**2 - C3**2 * s + 2 * C1 * C3 * c0 * s)
        zeta2 = 2 * C3 / c0
        chi = np.asarray(model.strains(q, jnp.asarray(s)))
        np.testing.assert_allclose(chi, [xi1, 0, xi3, 0, zeta2, 0], rtol=1e-12, atol=1e-14)


def test_pcs_is_ebr_in_stiffness_not_in_kinematics(section):
    """EBR vs PCS with one segment. Stiffness: PCS in its strain coordinates (eps = l nu,
    alpha = l kappa) has the EBR closed-form K of spec Eq. 34 (PCS's axis is local x, its modes
    ``[kappa_x, kappa_y, kappa_z, nu_x, nu_y, nu_z]``). Kinematics: its linear tip deflection
    under an end load P (modal superposition ``sum_i P d_i^2 / k_i`` of its six modes) is
    P L^3 / (4 E J) + P L / (G A), the n = 1 value of the midpoint formula; EBR's (node) formula
    gives P L / (G A) alone. M does not apply: PCS distributes the mass."""
    from jaxrod.models.pcs import PCSModel, PCSRod

    pcs = PCSModel(PCSRod.circular(L, 1, R, youngs_modulus=E, density=RHO, poisson_ratio=0.5))
    res = jaxrod.modal(pcs, pcs.initial_state())
    K_ebr = np.diag([G * 2 * J, E * J, E * J, E * A, G * A, G * A]) / L
    np.testing.assert_allclose(np.asarray(res.stiffness_matrix) / L**2, K_ebr, rtol=1e-12, atol=1e-13 * K_ebr.max())
    d_tip = np.asarray(res.displacements)[:, -1, 2]  # tip displacement along z per unit mode amplitude
    tip = P * np.sum(d_tip**2 / np.asarray(res.modal_stiffness))
    assert abs(tip / _eb_tip(1, "midpoint") - 1) < 1e-9, tip
    assert abs(tip / _eb_tip(1, "node") - 1) > 100


# ---- cantilever frequencies vs Euler-Bernoulli ----------------------------------------------------


@pytest.mark.parametrize(
    "kind, bounds",
    [
        # measured errors omega / omega_EB - 1 of the first three bending modes (r/L = 0.005).
        # EBA, TMTDyn's model (node frame, element lumping), 16 nodes: +0.121 / -0.435 / -1.97 %
        # (8 nodes: +0.48 / -1.86 / -7.96 %: ~second order, a first-order stiffness error and a
        # first-order mass-lumping error of opposite signs cancel at leading order).
        ("eba16", [(0.0011, 0.0013), (-0.0045, -0.0042), (-0.0200, -0.0193)]),
        # EBA midpoint frame + trapezoid lumping, 16 nodes: -0.185 / -0.657 / -1.10 % (8 nodes:
        # -0.72 / -2.44 / -3.88 %: second order, ratios 3.9 / 3.7 / 3.5)
        ("eba16_mid", [(-0.0020, -0.0017), (-0.0069, -0.0062), (-0.0115, -0.0105)]),
        # ROM order 6: -0.0057 / -0.037 / -0.061 % (order 5: -0.0056 / -0.035 / +2.4 %; order 7:
        # -0.0057 / -0.039 / -0.064 %): converged to the rod's shear and rotary-inertia lowering,
        # about -(beta L)^2 (r/L)^2 / 2, which Euler-Bernoulli leaves out
        ("rom6", [(-7e-5, -4e-5), (-4.5e-4, -3e-4), (-8e-4, -4e-4)]),
    ],
)
def test_cantilever_bending_frequencies(section, kind, bounds):
    if kind == "rom6":
        model = ROMModel(section, order=6)
    elif kind == "eba16":
        model = EBAModel(section, n_nodes=16)
    else:
        model = EBAModel(section, n_nodes=16, beam_frame="midpoint", lumping="trapezoid")
    res = jaxrod.modal(model, model.initial_state(), n_modes=6)
    om = np.asarray(res.omega).reshape(3, 2)
    np.testing.assert_allclose(om[:, 0], om[:, 1], rtol=1e-7)  # the two bending planes of a round rod
    err = om[:, 0] / OMEGA_EB - 1
    for e, (lo, hi) in zip(err, bounds):
        assert lo < e < hi, err


# ---- static tip deflection under a small end load P (along world x) -------------------------------


def _model(kind, section, **kw):
    if kind == "rom6":
        return ROMModel(section, order=6, **kw)
    frame = "node" if kind == "eba_node" else "midpoint"
    return EBAModel(section, n_nodes=8, beam_frame=frame, lumping="trapezoid", **kw)


def _tip_x(kind, section, youngs=E):
    sec = RodSection.circular(L, R, youngs_modulus=youngs, density=RHO)
    model = _model(kind, sec, tip_force=jnp.asarray([P, 0.0, 0.0]))
    state, _ = jaxrod.solve_static(model)
    return model.tip_position(state.q)[0]


def _eb_tip(n, frame):
    """Linear tip deflection of the 8-node EBA under P: bending from the rotations lumped at the
    nodes plus shear P L / (G A). "node" (= EBR): sum_k k^2 l^3; "midpoint" (= PCS): the chord
    leaves at half the segment's rotation, sum_k (k + 1/2)^2 l^3."""
    ks = np.arange(n) + (0.0 if frame == "node" else 0.5)
    return P * (L / n) ** 3 / EI * np.sum(ks**2) + P * L / (G * A)


@pytest.mark.slow  # one static solve to compile per model: 10-80 s
@pytest.mark.parametrize(
    "kind, formula_rtol, eb_bounds",
    [
        ("eba_node", 1e-9, (-0.18, -0.179)),  # = EBR: first order, -18 % at n = 8
        ("eba_mid", 1e-9, (-0.0039, -0.0038)),  # = PCS: -1/(4 n^2) + shear
        # ROM order 6: +0.0055 %, the shear compliance P L / (G A) = +0.0056 % of P L^3 / 3EJ that
        # Euler-Bernoulli leaves out (the basis forces zero shear at the base: 1e-6 short of it)
        ("rom6", None, (4e-5, 7e-5)),
    ],
)
def test_static_tip_deflection(section, kind, formula_rtol, eb_bounds):
    tip = float(_tip_x(kind, section))
    if formula_rtol is not None:
        frame = "node" if kind == "eba_node" else "midpoint"
        assert abs(tip / _eb_tip(8, frame) - 1) < formula_rtol, tip
    err = tip / (P * L**3 / (3 * EI)) - 1
    assert eb_bounds[0] < err < eb_bounds[1], err


@pytest.mark.slow  # a static solve and its implicit derivative to compile: 20-140 s
def test_tip_gradient_wrt_youngs_modulus(section):
    """d(tip x)/dE through solve_static (implicit differentiation, forward mode: cheaper to compile
    than reverse mode, 15 s vs 26 s CPU) vs central differences; the linear response is
    proportional to 1/E (G = E/3), so it also equals -tip/E."""
    tip, g = jax.jvp(lambda e: _tip_x("eba_mid", section, e), (jnp.asarray(E),), (jnp.asarray(1.0),))
    h = 1e-3 * E
    fd = (float(_tip_x("eba_mid", section, E + h)) - float(_tip_x("eba_mid", section, E - h))) / (2 * h)
    assert abs(float(g) / fd - 1) < 1e-5, (g, fd)
    assert abs(float(g) / (-float(tip) / E) - 1) < 1e-6


@pytest.mark.slow  # one simulate program to compile: 15-90 s
def test_eba_whirl_keeps_its_energy():
    """An undamped 3-node EBA rod (r/L = 0.02) set whirling, bending and twisting at once, 200
    implicit-midpoint steps over 2 s (about one bending period): the energy changes by 1.6e-4 of
    its initial value (6.3e-5 at half the step; midpoint's error on a nonlinear system); without
    the convective terms of the TMT inertia it changed by 3.7e-3. Runs the models through the
    unchanged jaxrod.simulate."""
    sec = RodSection.circular(L, 0.02, youngs_modulus=E, density=RHO)
    model = EBAModel(sec, n_nodes=3)
    q0 = model.initial_state().q
    k = jnp.arange(1, 4) / 3.0
    v0 = jnp.zeros_like(q0).at[:, 0].set(0.3 * k**2).at[:, 4].set(0.15 * k).at[:, 5].set(0.5 * k)
    traj = jaxrod.simulate(model, dt=0.01, n_steps=200, state0=jaxrod.State(q0, v0, None),
                           scheme=jaxrod.ImplicitMidpoint(), save_every=200)
    e0, e1 = (float(model.energy(traj.q[i], traj.v[i])) for i in (0, -1))
    assert abs(e1 / e0 - 1) < 3e-4, (e0, e1)
    assert float(jnp.max(jnp.abs(traj.positions[-1, -1, :2]))) > 0.05  # it did move


def test_bad_input_messages(section):
    with pytest.raises(ValueError, match="beam_frame must be one of"):
        EBAModel(section, beam_frame="tip")
    with pytest.raises(ValueError, match="lumping must be one of"):
        EBAModel(section, lumping="consistent")
    with pytest.raises(ValueError, match="n_nodes must be >= 1"):
        EBAModel(section, n_nodes=0)
    with pytest.raises(TypeError, match="order must be an integer"):
        ROMModel(section, order=2.0)
    with pytest.raises(ValueError, match=r"damping must have shape \(6,\)"):
        ROMModel(section, damping=(0.1, 0.2))
    with pytest.raises(ValueError, match="damping must be 6 finite numbers >= 0"):
        EBAModel(section, damping=(-1.0, 0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="RodSection.youngs_modulus must be > 0"):
        RodSection.circular(L, R, youngs_modulus=-1.0, density=RHO)
    with pytest.raises(TypeError, match="section must be a RodSection"):
        ROMModel("rod")
