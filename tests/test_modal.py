"""Linear modal analysis (jaxrod.modal): DER and PCS cantilevers against Euler-Bernoulli and
torsion theory, modal damping against the damping law and a simulated decay, gradients against
finite differences, massless DOFs, unsymmetric stiffness, bad input.

Compile time dominates: each rod model is linearised by one compiled program, shared by the
tests through module-scoped fixtures (array leaves such as E and damping change without
recompiling)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.analysis import decay_time_constant
from jaxrod.integrate import AbstractImplicitModel, State
from jaxrod.solvers.jacobian import DenseJacobianSolver

L, H, E, RHO = 1.0, 0.01, 1e7, 1000.0
G = E / 3.0
AREA, I2 = np.pi * H**2, np.pi * H**4 / 4
#: clamped-free Euler-Bernoulli roots beta_n L of cos(bL) cosh(bL) = -1
BETA_L = np.array([1.8751040687119611, 4.694091132974175, 7.854757438237613])
OMEGA_EB = BETA_L**2 * np.sqrt(E * I2 / (RHO * AREA)) / L**2  # 1.758, 11.02, 30.85 rad/s
N_DER = 21

#: DER discretisation error of the first three bending frequencies is second order,
#: omega / omega_EB - 1 = -c_n (dl / L)^2, measured at 11, 21 and 41 nodes (cantilever() spacing
#: dl = L / (N - 1.5)): errors -0.177/-2.09/-5.56 %, -0.0416/-0.500/-1.34 %, -0.0101/-0.122/-0.329 %
#: (ratios 4.25/4.18/4.14 for a spacing ratio^2 of 4.21), so c = (0.158, 1.90, 5.13).
C_DER = np.array([0.158, 1.90, 5.13])
#: same for the torsion mode: -0.114 %, -0.0270 %, -0.00659 % at 11, 21, 41 nodes.
C_DER_TWIST = 0.103


def der_model(n=N_DER, damping=0.0, youngs_modulus=E):
    rod = jaxrod.DERRod.cantilever(n, L, radius=H, youngs_modulus=youngs_modulus, shear_modulus=G, density=RHO)
    return jaxrod.DERModel(rod, clamped_edges=(0,), damping=damping)


@pytest.fixture(scope="module")
def der_result():
    model = der_model()
    # the unloaded cantilever's equilibrium is its rest state: skip solve_static's compile here
    return jaxrod.modal(model, model.initial_state())


def _bending_pairs(res):
    om = np.asarray(res.omega)
    moving = np.abs(np.asarray(res.displacements)).max(axis=(1, 2)) > 0.5
    # the lowest six displacement modes are the three y/z bending pairs of the round rod
    return om[moving][:6].reshape(3, 2)


def test_der_cantilever_bending_frequencies(der_result):
    pairs = _bending_pairs(der_result)
    np.testing.assert_allclose(pairs[:, 0], pairs[:, 1], rtol=1e-9)  # the two planes of a round rod
    err = pairs[:, 0] / OMEGA_EB - 1
    bound = 1.2 * C_DER * (L / (N_DER - 1.5)) ** 2  # measured convergence, 20 % headroom
    assert np.all(np.abs(err) < bound), (err, bound)
    assert float(der_result.stiffness_asymmetry) < 1e-12  # the Hessian of an energy
    assert float(der_result.equilibrium_residual) < 1e-12


def test_der_modal_mass_and_shape(der_result):
    # mode 1 scaled to a unit tip displacement: Euler-Bernoulli modal mass m L / 4; the
    # lumped-mass rod is within 2 % at 21 nodes (the tip node carries half a Voronoi cell)
    m1 = float(der_result.modal_mass[0])
    assert abs(m1 / (0.25 * RHO * AREA * L) - 1) < 0.03, m1
    d = np.asarray(der_result.displacements[0])
    tip = np.linalg.norm(d[-1])
    assert abs(tip - 1.0) < 1e-12  # the largest node displacement is the tip's
    assert np.abs(d[:, 0]).max() < 1e-9  # bending: no axial motion at first order
    k1 = float(der_result.modal_stiffness[0])
    assert abs(k1 / (m1 * float(der_result.omega[0]) ** 2) - 1) < 1e-9


def test_der_torsion_frequency(der_result):
    # DER edge twist inertia rho A l h^2 / 2 = rho I_p l: the clamped-free torsion mode is
    # (pi / 2L) sqrt(G J / (rho I_p)) = (pi / 2L) sqrt(G / rho)
    shapes = np.asarray(der_result.mode_shapes)
    twist_only = np.abs(shapes[:, :, :3]).max(axis=1).max(axis=1) < 1e-9
    omega_t = float(np.asarray(der_result.omega)[twist_only][0])
    expected = np.pi / (2 * L) * np.sqrt(G / RHO)
    err = omega_t / expected - 1
    assert abs(err) < 1.2 * C_DER_TWIST * (L / (N_DER - 1.5)) ** 2, err


def test_der_damping_ratio_matches_damping_law(der_result):
    # DER damping force -eta V_i v_i on nodes of mass rho A V_i: C = (eta / rho A) M on positions,
    # so every bending mode has zeta = eta / (2 rho A omega); twist is undamped
    eta = 0.02
    model = der_model(damping=eta)
    res = jaxrod.modal(model, model.initial_state())
    pairs = _bending_pairs(res)
    np.testing.assert_allclose(pairs, _bending_pairs(der_result), rtol=1e-12)  # undamped modes unchanged
    moving = np.abs(np.asarray(res.displacements)).max(axis=(1, 2)) > 0.5
    zeta = np.asarray(res.damping_ratio)[moving][:6:2]
    expected = eta / (2 * RHO * AREA * OMEGA_EB)  # 0.0181, 0.00289, 0.00103
    # zeta differs from the expected value only through the frequency's discretisation error
    bound = 1.2 * C_DER * (L / (N_DER - 1.5)) ** 2
    assert np.all(np.abs(zeta / expected - 1) < bound), (zeta, expected)
    assert np.abs(np.asarray(res.damping_ratio)[~moving]).max() < 1e-12
    assert float(res.damping_coupling) < 1e-9  # proportional on the bending modes


@pytest.mark.slow  # the reverse pass through third derivatives of the DER energy: 25-70 s to compile
def test_der_frequency_gradient(der_result):
    def omega1(E_):
        model = der_model(youngs_modulus=E_)
        return jaxrod.modal(model, model.initial_state()).omega[0]

    g = float(jax.grad(omega1)(jnp.asarray(E)))
    h = 1e-4 * E
    fd = (float(omega1(E + h)) - float(omega1(E - h))) / (2 * h)
    assert abs(g / fd - 1) < 1e-6, (g, fd)
    # bending frequencies scale as sqrt(E): d omega / dE = omega / (2E)
    assert abs(g / (float(der_result.omega[0]) / (2 * E)) - 1) < 1e-9


@pytest.mark.slow  # one more model to compile: 15-45 s
def test_pcs_cantilever_bending_frequencies():
    from jaxrod.models.pcs import PCSModel, PCSRod

    # PCS (all six strains, rotary inertia): errors vs Euler-Bernoulli measured at 10 and 20
    # segments +0.171/+1.20/+2.92 % and +0.025/+0.176/+0.422 % (ratio ~6.9: the discretisation
    # error is second order, less a small rotary-inertia/shear lowering of ~(r/L)^2)
    rod = PCSRod.circular(L, 10, H, youngs_modulus=E, density=RHO, poisson_ratio=0.5)
    model = PCSModel(rod)
    res = jaxrod.modal(model, model.initial_state(), n_modes=6)
    om = np.asarray(res.omega).reshape(3, 2)
    # eigh's absolute error is round-off of the largest eigenvalue (the shear and axial modes,
    # ~1e9 times omega_1^2 here): the two bending planes agree to ~5e-9, not to 1e-15
    np.testing.assert_allclose(om[:, 0], om[:, 1], rtol=1e-7)
    err = om[:, 0] / OMEGA_EB - 1
    assert np.all(err > 0) and np.all(err < 1.2 * np.array([0.00171, 0.0120, 0.0292])), err
    # tip displacement of mode 1 in the plane normal to the axis, scaled to 1 m
    tip = np.asarray(res.displacements[0, -1])
    assert abs(np.linalg.norm(tip) - 1) < 1e-12 and abs(tip[0]) < 1e-9


# ---- a small linear(ised) model: damped oscillators, massless DOFs, unsymmetric stiffness --------


class Lumped(AbstractImplicitModel):
    """``M a + C v + K q + cubic q_0^3 e_0 = force`` on ``n`` DOFs (node ``i`` at ``x = i + q_i``)."""

    M: jax.Array
    C: jax.Array
    K: jax.Array
    force: jax.Array
    cubic: jax.Array = eqx.field(default_factory=lambda: jnp.zeros(()))

    def residual(self, q, v, a, t, aux):
        hard = jnp.zeros_like(q).at[0].set(self.cubic * q[0] ** 3)
        return self.M @ a + self.C @ v + self.K @ q + hard - self.force

    def fixed_mask(self):
        return jnp.zeros(self.M.shape[0], bool)

    def prescribed(self, t):
        return jnp.zeros(self.M.shape[0])

    def init_aux(self, q):
        return None

    def update_aux(self, q, aux):
        return aux

    def default_linear_solver(self):
        return DenseJacobianSolver()

    def initial_state(self):
        z = jnp.zeros(self.M.shape[0])
        return State(z, z, None)

    def observe(self, q, v, aux):
        x = jnp.arange(q.shape[0]) + q
        return {"positions": jnp.stack([x, jnp.zeros_like(x), jnp.zeros_like(x)], axis=1)}


def _lumped(M, C, K, force=None, cubic=0.0):
    M, C, K = (jnp.asarray(x, dtype=float) for x in (M, C, K))
    f = jnp.zeros(M.shape[0]) if force is None else jnp.asarray(force, dtype=float)
    return Lumped(M, C, K, f, jnp.asarray(cubic, dtype=float))


def test_damped_oscillator_decay_matches_modal_damping_ratio():
    # two masses, three springs, Rayleigh damping C = a M + b K: start in mode 2 and compare the
    # simulated envelope decay (implicit midpoint: no numerical damping on a linear problem) with
    # zeta_2 * omega_2 from the modal projections
    M = np.diag([1.0, 2.0])
    K = np.array([[300.0, -100.0], [-100.0, 100.0]])
    C = 0.05 * M + 0.002 * K
    model = _lumped(M, C, K)
    res = jaxrod.modal(model, model.initial_state())
    lam = np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real)  # independent reference
    np.testing.assert_allclose(np.asarray(res.omega) ** 2, lam, rtol=1e-12)
    assert float(res.damping_coupling) < 1e-12
    w2, z2 = float(res.omega[1]), float(res.damping_ratio[1])
    state0 = State(0.01 * res.mode_shapes[1], jnp.zeros(2), None)
    period = 2 * np.pi / w2
    traj = jaxrod.simulate(model, dt=period / 200, n_steps=1200, state0=state0, scheme="implicit_midpoint")
    q = np.asarray(traj.q)
    tau = decay_time_constant(np.asarray(traj.times), q[:, 0])
    assert abs(1 / (tau * z2 * w2) - 1) < 0.01, (1 / tau, z2 * w2)
    # and mode 2 stays mode 2: the DOF ratio of the shape holds throughout
    ratio = np.asarray(res.mode_shapes[1, 1] / res.mode_shapes[1, 0])
    big = np.abs(q[:, 0]) > 0.3 * np.abs(q[:, 0]).max()
    np.testing.assert_allclose(q[big, 1] / q[big, 0], ratio, rtol=1e-3)


def test_massless_dof_is_condensed():
    # mass m on spring k1 to a massless node tied to the wall by k2: one mode, the series spring
    m, k1, k2 = 2.0, 300.0, 600.0
    M = np.diag([m, 0.0])
    K = np.array([[k1, -k1], [-k1, k1 + k2]])
    res = jaxrod.modal(_lumped(M, np.zeros((2, 2)), K), State(jnp.zeros(2), jnp.zeros(2), None))
    assert res.n_modes == 1 and np.asarray(res.massless_dofs).tolist() == [1]
    np.testing.assert_allclose(float(res.omega[0]), np.sqrt(k1 * k2 / (k1 + k2) / m), rtol=1e-12)
    # the massless node follows statically: x_1 = k1 x_0 / (k1 + k2)
    np.testing.assert_allclose(np.asarray(res.mode_shapes[0]), [1.0, k1 / (k1 + k2)], rtol=1e-12)


def test_unsymmetric_stiffness_uses_general_solver():
    # a non-conservative (follower-like) coupling: K = [[2k, k], [0, k]], M = I: omega^2 = k, 2k
    k = 50.0
    K = np.array([[2 * k, k], [0.0, k]])
    res = jaxrod.modal(_lumped(np.eye(2), np.zeros((2, 2)), K), State(jnp.zeros(2), jnp.zeros(2), None))
    assert float(res.stiffness_asymmetry) == pytest.approx(0.5)
    np.testing.assert_allclose(np.asarray(res.omega), np.sqrt([k, 2 * k]), rtol=1e-12)
    phi = np.asarray(res.mode_shapes)
    for i, w in enumerate(np.asarray(res.omega)):
        np.testing.assert_allclose(K @ phi[i], w**2 * phi[i], atol=1e-9)


def test_default_state_is_the_static_equilibrium():
    # hardening spring k q + c q^3 = F: the default linearises at the equilibrium q*, K = k + 3 c q*^2
    k, c, F, m = 100.0, 4e4, 5.0, 0.5
    model = _lumped([[m]], [[0.0]], [[k]], force=[F], cubic=c)
    res = jaxrod.modal(model)
    roots = np.roots([c, 0.0, k, -F])
    qs = float(roots[np.abs(roots.imag) < 1e-12].real[0])
    assert abs(float(res.state.q[0]) - qs) < 1e-10
    np.testing.assert_allclose(float(res.omega[0]), np.sqrt((k + 3 * c * qs**2) / m), rtol=1e-9)
    assert float(res.equilibrium_residual) < 1e-9

    # the gradient flows through the equilibrium (implicit differentiation of solve_static)
    def omega(c_):
        return jaxrod.modal(_lumped([[m]], [[0.0]], [[k]], force=[F], cubic=c_)).omega[0]

    g = float(jax.grad(omega)(jnp.asarray(c)))
    h = 1e-4 * c
    fd = (float(omega(c + h)) - float(omega(c - h))) / (2 * h)
    assert abs(g / fd - 1) < 1e-6, (g, fd)


def test_plot_modes(der_result, tmp_path):
    from jaxrod.plot import plot_modes

    fig = plot_modes(der_result, tmp_path / "modes.png", modes=4)
    assert (tmp_path / "modes.png").stat().st_size > 0
    titles = [ax.get_title() for ax in fig.axes]
    assert len(titles) == 4 and titles[0].startswith(f"mode 1: {float(der_result.omega[0]) / (2 * np.pi):.4g} Hz")
    with pytest.raises(ValueError, match=r"modes: indices must be in \[0, "):
        plot_modes(der_result, modes=[10_000])


def test_bad_input_messages(der_result):
    model = der_model()
    n_free = int(np.asarray(der_result.free_dofs).size)
    with pytest.raises(ValueError, match=rf"n_modes must be in \[1, {n_free}\]"):
        jaxrod.modal(model, model.initial_state(), n_modes=n_free + 1)
    with pytest.raises(ValueError, match="n_modes must be"):
        jaxrod.modal(model, model.initial_state(), n_modes=0)
    bad = model.initial_state()
    bad = State(bad.q.at[3, 1].set(jnp.nan), bad.v, bad.aux)
    with pytest.raises(ValueError, match=r"state.q must be finite; non-finite entries at indices \[\[3, 1\]\]"):
        jaxrod.modal(model, bad)
    with pytest.raises(TypeError, match="model must be an implicit model .*DERModel.*PCSModel.*got CosseratModel"):
        jaxrod.modal(_cosserat_model())
    with pytest.raises(TypeError, match="state must be a jaxrod.State"):
        jaxrod.modal(model, model.initial_state().q)


def _cosserat_model():
    return object.__new__(jaxrod.CosseratModel)


# ----------------------------------------------------------------------- jointed systems
GRAV = 9.81


def _link(name, mass, length, start, ic_extra=0.0):
    """A slender link along -z from ``start`` (inertia about its centre m L^2 / 12 + ic_extra)."""
    ic = mass * length**2 / 12 + ic_extra
    return jaxrod.system.RigidBody(name, mass, [ic, ic, 1e-4], position=np.asarray(start) + [0, 0, -length / 2])


@pytest.fixture(scope="module")
def jointed():
    """Three mechanisms hanging at rest in one system (disconnected, so their frequencies are the
    union of each one's): a compound pendulum, a double pendulum, and a pendulum hinged by TWO
    coaxial revolutes (redundant constraint rows); one compiled linearisation."""
    from jaxrod.system import MultibodySystem, Revolute

    y = [0.0, 1.0, 0.0]
    bodies = [_link("single", 0.7, 0.4, [0, 0, 0]), _link("upper", 1.0, 0.5, [2, 0, 0]),
              _link("lower", 0.6, 0.3, [2, 0, -0.5]), _link("twice", 0.5, 0.8, [4, 0, 0])]
    joints = [Revolute(None, "single", point=[0, 0, 0], axis=y), Revolute(None, "upper", point=[2, 0, 0], axis=y),
              Revolute("upper", "lower", point=[2, 0, -0.5], axis=y),
              Revolute(None, "twice", point=[4, -0.1, 0], axis=y), Revolute(None, "twice", point=[4, 0.1, 0], axis=y)]
    with pytest.warns(jaxrod.system.RedundantConstraintWarning, match=r"joints\[4\] \(Revolute\) rows \[0, 1, 2, 3, 4\]"):
        system = MultibodySystem(bodies, joints, gravity=[0, 0, -GRAV])
    return system, jaxrod.modal(system, system.initial_state())


def _pendulum_omega(m, length):
    return np.sqrt(m * GRAV * length / 2 / (m * length**2 / 3))


def _double_pendulum_omegas(m1, l1, m2, l2):
    """Small oscillations of two slender links in absolute angles: M = [[m1 l1^2/3 + m2 l1^2,
    m2 l1 l2/2], [., m2 l2^2/3]], K = g diag(m1 l1/2 + m2 l1, m2 l2/2)."""
    M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, m2 * l1 * l2 / 2], [m2 * l1 * l2 / 2, m2 * l2**2 / 3]])
    K = GRAV * np.diag([m1 * l1 / 2 + m2 * l1, m2 * l2 / 2])
    return np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real))


def test_jointed_system_frequencies(jointed):
    system, res = jointed
    expected = np.sort(np.concatenate([[_pendulum_omega(0.7, 0.4)], _double_pendulum_omegas(1.0, 0.5, 0.6, 0.3),
                                       [_pendulum_omega(0.5, 0.8)]]))
    # 4 bodies x 6 coordinates - 5 x 5 constraint rows of which 5 are redundant = 4 motions
    assert res.n_modes == 4
    np.testing.assert_allclose(np.asarray(res.omega), expected, rtol=1e-9)
    # modes keep the joints: the hinge points do not move in any mode (x_com + R r_pivot)
    d = np.asarray(res.displacements)  # (modes, bodies, 3) centre displacements
    assert np.max(np.abs(d[..., 1])) < 1e-12  # planar mechanisms: nothing moves along the axes
    assert float(res.equilibrium_residual) < 1e-12


def test_jointed_frequency_gradient():
    """d omega / d mass of a compound pendulum with fixed centroidal inertia Ic: omega^2 =
    m g d / (Ic + m d^2), differentiated through the traced pivoting path."""
    from jaxrod.system import MultibodySystem, Revolute

    m, d, ic = 0.7, 0.2, 0.003
    body = jaxrod.system.RigidBody("p", m, [ic, ic, 1e-4], position=[0, 0, -d])
    system = MultibodySystem([body], [Revolute(None, "p", point=[0, 0, 0], axis=[0, 1, 0])], gravity=[0, 0, -GRAV])

    def omega(mass):
        s = eqx.tree_at(lambda s: s.bodies[0].mass, system, mass)
        return jaxrod.modal(s, s.initial_state()).omega[0]

    value, slope = jax.value_and_grad(omega)(jnp.asarray(m))
    w = np.sqrt(m * GRAV * d / (ic + m * d**2))
    dw = 0.5 / w * GRAV * d * ic / (ic + m * d**2) ** 2
    assert abs(float(value) / w - 1) < 1e-10
    assert abs(float(slope) / dw - 1) < 1e-8
