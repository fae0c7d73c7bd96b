"""IMC contact and smooth Coulomb friction for DER rods (DisMech spec sections 4 and 7.4).

* Friction validation (BENCHMARKS.md case c, coarse mesh): kinetic energy at t = 1.5 s within 2%
  of ``Ek = t^2 (F - mu m g)^2 / (2m)`` for two pushes above the 3.92 N threshold, below 1e-3 of
  the frictionless sliding value for one push under it; the three runs and the gradient check
  share one ``jax.vmap`` (one compiled program).
* Derivative of the sliding distance at T with respect to mu (implicit differentiation of every
  contact-and-friction Newton solve, forward mode through the time loop) vs central differences.
* A tilted rod dropped on the floor comes to rest without penetrating more than delta.
* Self-contact: two straight parts of ONE rod cross (one above the other, joined by a slack
  connector whose ends are pinned) and are pressed together by opposite point forces: with
  contact they stop at the contact distance 2h, without it (stiffness ~0, same compiled program)
  they pass through each other. A DERModel is one rod, so "two crossing rods" is realised as two
  parts of one rod with self-contact between them.
* Pure functions (energy branches, segment distance, friction law, broad phase) and input errors.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.der import DERModel, DERRod, FloorContact, RodRodContact
from jaxrod.models.der.contact import (
    admissible_pairs,
    anisotropic_coulomb_friction,
    candidate_pairs,
    friction_step_limit,
    imc_energy,
    imc_energy_derivative,
    segment_distance,
    smooth_coulomb_friction,
)
from jaxrod.scenes.contact import analytic_kinetic_energy, friction_validation, kinetic_energy_x, rod_drop
from jaxrod.integrate import implicit_step
from jaxrod.solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver
from jaxrod.integrate.schemes import BackwardEuler
from long_runs import jit_long_run

FRESH = jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=False, rtol=1e-11, atol=1e-11)


# ---------------------------------------------------------------------------------------------
# friction validation + gradient (one vmapped program)
# ---------------------------------------------------------------------------------------------
MU0 = 0.4
H_MU = 1e-4
# (push [N], mu): two above the threshold, one below, then the finite-difference neighbours
CASES = [(6.0, MU0), (9.5, MU0), (3.0, MU0), (6.0, MU0 + H_MU), (6.0, MU0 - H_MU)]


@pytest.fixture(scope="module")
def friction_runs():
    """All five runs in one vmapped program; the derivative with respect to mu in forward mode
    (one parameter: a JVP through the time loop, each Newton solve differentiated implicitly)."""
    scene = friction_validation(n_nodes=6)
    base = scene.model
    n_steps = round(scene.duration / scene.dt)
    x0 = base.q0[:, 0]

    def run(mu, force):
        floor = eqx.tree_at(lambda c: (c.mu, c.mu_lateral), base.contacts[0], (mu, mu))
        f = jnp.stack([force / base.rod.length, 0.0 * force, 0.0 * force])
        model = eqx.tree_at(lambda m: (m.distributed_force, m.contacts), base, (f, (floor,)))
        traj = jaxrod.simulate(model, dt=scene.dt, n_steps=n_steps, solver=FRESH, save_every=n_steps, throw=False)
        slide = jnp.mean(traj.q[-1, :, 0] - x0)  # sliding distance at T [m]
        return slide, kinetic_energy_x(model, traj.v[-1]), jnp.all(traj.stats.converged)

    def with_derivative(mu, force):
        (slide, ek, conv), (dslide, _, _) = jax.jvp(lambda m: run(m, force), (mu,), (jnp.ones_like(mu),))
        return slide, ek, conv, dslide

    forces = jnp.asarray([c[0] for c in CASES])
    mus = jnp.asarray([c[1] for c in CASES])
    slide, ek, conv, grad = jax.jit(jax.vmap(with_derivative))(mus, forces)
    return scene, np.asarray(slide), np.asarray(ek), np.asarray(conv), np.asarray(grad)


def test_friction_kinetic_energy_matches_analytic(friction_runs):
    scene, _, ek, conv, _ = friction_runs
    assert conv.all()
    T, m = scene.duration, scene.reference["mass_kg"]
    assert abs(scene.reference["threshold_N"] - 3.92) < 1e-12
    for k in range(3):
        F = CASES[k][0]
        ref = float(analytic_kinetic_energy(F, T, mu=MU0, mass=m))
        if ref > 0:
            assert abs(ek[k] / ref - 1) < 0.02, (F, ek[k], ref)
        else:
            sliding = T * T * F * F / (2 * m)  # frictionless value
            assert ek[k] < 1e-3 * sliding, (F, ek[k], sliding)


def test_friction_gradient_wrt_mu_matches_central_differences(friction_runs):
    _, slide, _, _, grad = friction_runs
    fd = (slide[3] - slide[4]) / (2 * H_MU)
    # sliding: x(T) = (F/m - mu g) T^2 / 2, so d x / d mu = -g T^2 / 2 = -11.025 m
    assert abs(fd + 0.5 * 9.8 * 1.5**2) < 0.05
    assert abs(grad[0] - fd) <= 1e-4 * abs(fd), (grad[0], fd)


# ---------------------------------------------------------------------------------------------
# rod dropped on the floor
# ---------------------------------------------------------------------------------------------
def test_dropped_rod_comes_to_rest_without_penetrating_more_than_delta():
    scene = rod_drop(n_nodes=11)
    model = scene.model
    traj = jaxrod.simulate(model, dt=scene.dt, n_steps=300, scheme=scene.scheme)
    h, floor = float(model.rod.radius), model.contacts[0]
    delta = float(floor.delta)
    z = np.asarray(traj.positions[..., 2])
    assert z[0].min() > h + 0.015  # released in the air
    assert (h - z).max() <= delta  # never deeper than delta
    assert np.all(z[-1] < h + delta)  # every node on the floor at the end
    assert np.abs(np.asarray(traj.v[-1, :, :3])).max() < 1e-3  # at rest (m/s)


# ---------------------------------------------------------------------------------------------
# self-contact: two crossing parts of one rod pressed together
# ---------------------------------------------------------------------------------------------
def _crossing_rod(stiffness):
    span, gap, h, n_part = 0.1, 0.008, 0.005, 8
    s = np.linspace(-span, span, n_part)
    upper = np.stack([s, np.zeros(n_part), np.full(n_part, gap)], 1)  # along x, above
    lower = np.stack([np.zeros(n_part), s, np.full(n_part, -gap)], 1)  # along y, below
    connector = np.linspace(upper[-1], lower[0], 5)[1:-1]
    pts = np.concatenate([upper, connector, lower])
    n = len(pts)
    rod = DERRod.from_polyline(pts, rest="stress_free", youngs_modulus=1e6, density=1000.0, radius=h)
    i_up, i_lo = np.arange(n_part), np.arange(n - n_part, n)
    forces = np.zeros((n, 3))
    forces[i_up[3:5], 2] = -0.05
    forces[i_lo[3:5], 2] = 0.05
    contact = RodRodContact(stiffness=stiffness, delta=5e-4, mu=0.3, nu=1e-3)
    model = DERModel(
        rod, fixed_nodes=(0, n_part - 1, n - n_part, n - 1), point_forces=forces, damping=0.5, contacts=(contact,)
    )
    return model, i_up[3:5], i_lo[3:5]


@pytest.fixture(scope="module")
def crossing_runs():
    @jit_long_run  # 2 x 150 contact steps: XLA's default optimisation (tests/long_runs.py)
    def run(model):
        # fallback=False: every step converges with the fresh-Jacobian Newton itself
        traj = jaxrod.simulate(
            model, dt=2e-3, n_steps=150, scheme=jaxrod.BackwardEuler(), solver=FRESH, save_every=5, throw=False,
            fallback=False,
        )
        return traj.positions, traj.stats.converged

    out = {}
    for name, k in (("contact", 1e4), ("none", 1e-9)):  # same pytree structure: one compiled program
        model, up, lo = _crossing_rod(k)
        pos, conv = run(model)
        out[name] = (model, np.asarray(pos), np.asarray(conv), up, lo)
    return out


def test_self_contact_uses_dense_jacobian_and_candidate_list():
    model, _, _ = _crossing_rod(1e4)
    assert isinstance(model.default_linear_solver(), DenseJacobianSolver)
    aux = model.initial_state().aux
    assert isinstance(aux, jaxrod.models.der.ContactAux)
    n_edges = model.rod.n_nodes - 1
    assert aux.pairs.first.shape == (min(4 * n_edges, admissible_pairs(n_edges)[0].size),)
    no_contact = DERModel(model.rod, contacts=(FloorContact(offset=-1.0),))
    assert isinstance(no_contact.default_linear_solver(), BandedJacobianSolver)


def test_crossing_parts_pressed_together_do_not_pass_through(crossing_runs):
    model, pos, conv, up, lo = crossing_runs["contact"]
    assert conv.all()
    h = float(model.rod.radius)
    delta = float(model.contacts[0].delta)
    gap = pos[:, up, 2].mean(1) - pos[:, lo, 2].mean(1)
    assert gap[0] > 0.015 and gap.min() > 2 * h - delta
    dmin = min(model.contacts[0].min_distances(x)[0].min() for x in pos)
    assert dmin > 2 * h - delta
    assert gap[-1] < 2 * h + delta  # they really were pressed into contact


def test_crossing_parts_without_contact_pass_through(crossing_runs):
    _, pos, conv, up, lo = crossing_runs["none"]
    assert conv.all()
    assert pos[-1, up, 2].mean() < pos[-1, lo, 2].mean()


# ---------------------------------------------------------------------------------------------
# pure functions
# ---------------------------------------------------------------------------------------------
def test_imc_energy_branches_and_derivative():
    C, delta = 0.01, 5e-4
    D = jnp.linspace(-0.002, 0.012, 4001)
    e = imc_energy(D, C, delta)
    g = jax.vmap(jax.grad(imc_energy), (0, None, None))(D, C, delta)
    np.testing.assert_allclose(g, imc_energy_derivative(D, C, delta), rtol=0, atol=1e-15)
    assert float(imc_energy(C + delta, C, delta)) == 0.0 and float(imc_energy(C + 2 * delta, C, delta)) == 0.0
    for side in (-1e-12, 1e-12):  # value and slope continuous at D = C - delta (to ~e^-15)
        d = C - delta + side
        assert abs(float(imc_energy(d, C, delta)) - delta**2) < 1e-12
        assert abs(float(imc_energy_derivative(d, C, delta)) + 2 * delta) < 1e-9
    assert np.all(np.diff(np.asarray(e)) <= 1e-18)  # monotone: pushes apart only


def test_segment_distance_matches_brute_force_including_parallel():
    rng = np.random.default_rng(1)
    s = np.linspace(0, 1, 1001)
    for k in range(40):
        p = rng.normal(size=(4, 3))
        if k % 4 == 0:  # parallel
            p[3] = p[2] + rng.uniform(-2, 2) * (p[1] - p[0])
        if k % 4 == 1:  # collinear
            p[2] = p[0] + rng.uniform(-2, 2) * (p[1] - p[0])
            p[3] = p[0] + rng.uniform(-2, 2) * (p[1] - p[0])
        D = float(segment_distance(*map(jnp.asarray, p))[0])
        a = p[0] + s[:, None] * (p[1] - p[0])
        b = p[2] + s[:, None] * (p[3] - p[2])
        brute = np.linalg.norm(a[:, None] - b[None], axis=-1).min()
        assert D <= brute + 1e-12 and D > brute - 2e-3 * np.abs(p).max()


def test_segment_distance_gradient_and_no_nan_at_contact():
    p = jnp.asarray([[0.0, 0.0, 0.0], [1.0, 0.2, 0.0], [0.3, -0.5, 0.1], [0.6, 0.7, -0.05]])
    f = jax.jit(lambda p: segment_distance(p[0], p[1], p[2], p[3])[0])
    g = jax.grad(f)(p)
    eps = 1e-6
    fd = np.array(
        [[(f(p.at[i, j].add(eps)) - f(p.at[i, j].add(-eps))) / (2 * eps) for j in range(3)] for i in range(4)]
    )
    np.testing.assert_allclose(g, fd, atol=1e-8)
    crossing = jnp.asarray([[-1.0, 0, 0], [1.0, 0, 0], [0, -1.0, 0], [0, 1.0, 0]])  # D = 0
    assert np.all(np.isfinite(jax.jit(jax.hessian(f))(crossing)))


def test_friction_law_smooth_at_rest_and_anisotropic():
    fn, nu = 2.0, 1e-3
    jac0 = jax.jacfwd(lambda u: smooth_coulomb_friction(u, fn, 0.5, nu))(jnp.zeros(3))
    np.testing.assert_allclose(jac0, -0.5 * fn * 7.5 / nu * np.eye(3), rtol=1e-12)  # slope mu f_n K2/2
    fast = np.asarray(smooth_coulomb_friction(jnp.asarray([0.3, -0.4, 0.0]), fn, 0.5, nu))
    np.testing.assert_allclose(fast, -0.5 * fn * np.array([0.6, -0.8, 0.0]), rtol=1e-9)  # full Coulomb
    t = jnp.asarray([1.0, 0.0, 0.0])
    u = jnp.asarray([0.1, 0.1, 0.0])
    iso = smooth_coulomb_friction(u, fn, 0.3, nu)
    np.testing.assert_allclose(anisotropic_coulomb_friction(u, fn, t, 0.3, 0.3, nu), iso, rtol=1e-14)
    an = np.asarray(anisotropic_coulomb_friction(u, fn, t, 0.1, 0.5, nu))
    assert abs(an[0] / an[1] - 0.2) < 1e-12  # weaker along the rod than across it


def test_friction_step_limit_stops_a_reversing_slip_at_its_least_speed():
    fn = jnp.asarray([1.0, 1.0, 0.0, 1.0])
    u = jnp.asarray([[1.0, 0.0, 0.0], [0.0, 0.2, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    # node 0 reverses to 2 m/s the other way: cut at 1/3 (slip 0); node 1 keeps its direction;
    # node 2 carries no normal force; node 3 starts at rest
    du = jnp.asarray([[-3.0, 0.0, 0.0], [0.0, -0.1, 0.0], [-5.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert float(friction_step_limit(u, du, fn, 1e-3)) == pytest.approx(1.0 / 3.0, rel=1e-14)
    # a reversal that ends inside the slip tolerance is not cut
    small = jnp.asarray([[-1.0 - 5e-4, 0.0, 0.0]] + [[0.0, 0.0, 0.0]] * 3)
    assert float(friction_step_limit(u, small, fn, 1e-3)) == 1.0
    # oblique reversal: stops where |u + alpha du| is least
    u1, du1 = jnp.asarray([[1.0, 0.0, 0.0]]), jnp.asarray([[-2.0, 2.0, 0.0]])
    a = float(friction_step_limit(u1, du1, jnp.ones(1), 1e-3))
    ts = np.linspace(0, 1, 100001)
    assert a == pytest.approx(ts[np.argmin(np.linalg.norm(np.asarray(u1) + ts[:, None] * np.asarray(du1), axis=1))],
                              abs=2e-5)


def test_friction_step_limit_same_solution_fewer_newton_iterations(monkeypatch):
    """A rod sliding at 5 cm/s with no push decelerates at mu g and sticks within ~3 steps of
    5 ms. Newton with the friction step limit reaches the same states (the limit only shortens
    steps) in fewer iterations at the sticking steps than the plain damped Newton."""
    sc = friction_validation(force=0.0, n_nodes=6)
    st = sc.model.initial_state()
    v0 = jnp.zeros_like(st.q).at[:, 0].set(0.05)
    scheme, dt = BackwardEuler(), 5e-3

    def run():
        # a new jitted function per run: the monkeypatched method must be traced again
        step = eqx.filter_jit(lambda h, a, t: implicit_step(sc.model, scheme, FRESH, h, a, t, dt))
        hist, aux, out = scheme.init(st.q, v0, jnp.zeros_like(st.q), dt), st.aux, []
        for k in range(4):
            hist, aux, res = step(hist, aux, jnp.asarray(k * dt))
            assert bool(res.converged)
            out.append((int(res.iterations), np.asarray(hist[0])))
        return out

    limited = run()
    monkeypatch.setattr(DERModel, "newton_step_limit", lambda self, *args: None)
    plain = run()
    for (il, ql), (ip, qp) in zip(limited, plain):
        np.testing.assert_allclose(ql, qp, atol=1e-9)
    # sticking happens at steps 3-4: the plain Newton needs more iterations there
    assert sum(i for i, _ in limited[2:]) < sum(i for i, _ in plain[2:])
    v_end = (limited[-1][1][:, 0] - limited[-2][1][:, 0]) / dt
    assert np.max(np.abs(v_end)) < 1e-3 * 0.05  # stuck


def test_floor_contact_on_any_plane_and_anisotropic_friction_directions():
    rod = DERRod.straight(5, 0.4, start=(0.0, 0.0, 0.01), youngs_modulus=1e6, density=1000.0, radius=0.01)
    x = rod.rest_positions.at[:, 2].add(-2e-4)
    R = np.asarray(jaxrod.geometry.rotation_matrix(jnp.asarray([0.3, -0.5, 0.2])))
    xr = jnp.asarray(np.asarray(x) @ R.T)  # the same scene rotated, with the plane's normal rotated too
    flat = FloorContact(stiffness=1e4, delta=5e-4)
    tilted = FloorContact(R @ np.array([0.0, 0.0, 1.0]), 0.0, stiffness=1e4, delta=5e-4)
    snake = FloorContact(stiffness=1e4, delta=5e-4, mu=0.1, mu_lateral=0.5)
    v_axial = jnp.zeros((5, 3)).at[:, 0].set(0.2)
    v_lateral = jnp.zeros((5, 3)).at[:, 1].set(0.2)

    @jax.jit
    def quantities(x, xr):
        e, g = jax.value_and_grad(flat.energy)(x, 0.01)
        er, gr = jax.value_and_grad(tilted.energy)(xr, 0.01)
        fn = snake.normal_forces(x, 0.01)
        return (
            e,
            g,
            er,
            gr,
            flat.normal_forces(x, 0.01),
            fn,
            snake.friction(x, v_axial, 0.01),
            snake.friction(x, v_lateral, 0.01),
        )

    e, g, er, gr, fn_flat, fn, fa, fl = (np.asarray(a) for a in quantities(x, xr))
    assert e > 0
    np.testing.assert_allclose(er, e, rtol=1e-12)
    np.testing.assert_allclose(gr, g @ R.T, atol=1e-10)
    np.testing.assert_allclose(-g[:, 2], fn_flat, rtol=1e-12)  # normal force = -dE/dD
    np.testing.assert_allclose(fa[:, 0], -0.1 * fn, rtol=1e-6)  # along the rod: mu
    np.testing.assert_allclose(fl[:, 1], -0.5 * fn, rtol=1e-6)  # across: mu_lateral
    assert np.abs(fa[:, 1:]).max() == 0 and np.abs(fl[:, [0, 2]]).max() == 0


def test_candidate_list_finds_all_close_pairs():
    rng = np.random.default_rng(2)
    x = np.cumsum(rng.normal(scale=0.02, size=(40, 3)), axis=0)  # a random crumpled rod
    first, second = admissible_pairs(39, 3)
    D, _, _, _ = segment_distance(x[first], x[first + 1], x[second], x[second + 1])
    cutoff = 0.01
    near = np.asarray(D) < cutoff
    close = set(zip(first[near].tolist(), second[near].tolist(), strict=True))
    cand = candidate_pairs(jnp.asarray(x[:-1]), jnp.asarray(x[1:]), first, second, cutoff, 60)
    act = np.asarray(cand.active)
    found = set(zip(np.asarray(cand.first)[act].tolist(), np.asarray(cand.second)[act].tolist(), strict=True))
    assert 0 < len(close) and close <= found


def test_far_floor_adds_nothing_and_keeps_the_band():
    """``contacts=()`` is the old code path (the existing DER tests cover it); a floor out of reach
    adds exactly zero energy and friction and keeps the banded Jacobian and plain frames."""
    rod = DERRod.straight(6, 0.5, youngs_modulus=1e6, density=1000.0, radius=0.01)
    model = DERModel(rod, gravity=(0.0, 0.0, -9.8), clamped_edges=(0,), contacts=(FloorContact(offset=-1.0, mu=0.5),))
    q = model.q0.at[2:, 2].add(0.01)
    aux = model.init_aux(model.q0)
    assert isinstance(aux, jaxrod.models.der.ReferenceFrames)
    assert isinstance(model.default_linear_solver(), BandedJacobianSolver)
    assert float(model.contact_energy(q, aux)) == 0.0
    assert np.abs(np.asarray(model.friction_forces(q, 0.1 * q, aux))).max() == 0.0


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mu": -0.1}, "mu must be finite and >= 0"),
        ({"mu_lateral": -0.2}, "mu_lateral must be finite and >= 0"),
        ({"delta": 0.0}, "delta must be > 0 m"),
        ({"nu": -1e-3}, "nu must be > 0 m/s"),
        ({"stiffness": -1e4}, "stiffness must be > 0 N/m"),
        ({"normal": (0.0, 0.0, 0.0)}, "normal must be a finite non-zero 3-vector"),
    ],
)
def test_floor_contact_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FloorContact(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mu": -1.0}, "mu must be finite and >= 0"),
        ({"delta": -1e-4}, "delta must be > 0 m"),
        ({"nu": 0.0}, "nu must be > 0 m/s"),
        ({"stiffness": 0.0}, "stiffness must be > 0 N/m"),
        ({"exclude_neighbours": 1}, "exclude_neighbours must be >= 2"),
        ({"max_candidates": 0}, "max_candidates must be >= 1"),
        ({"margin": -1.0}, "margin must be a finite number >= 0"),
    ],
)
def test_rod_rod_contact_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RodRodContact(**kwargs)


def test_model_rejects_bad_contacts_and_initial_overlap():
    rod = DERRod.straight(8, 0.5, start=(0.0, 0.0, 0.01), youngs_modulus=1e6, density=1000.0, radius=0.01)
    with pytest.raises(ValueError, match="initial overlap: nodes"):
        DERModel(rod, contacts=(FloorContact(offset=0.005),))  # the rod is 5 mm into this floor
    DERModel(rod, contacts=(FloorContact(offset=0.0002),))  # within delta: accepted
    with pytest.raises(ValueError, match="must be a FloorContact or RodRodContact"):
        DERModel(rod, contacts=("floor",))
    with pytest.raises(ValueError, match="self_contact=False"):
        DERModel(rod, contacts=(RodRodContact(self_contact=False),))
    with pytest.raises(ValueError, match="at most one RodRodContact"):
        DERModel(rod, contacts=(RodRodContact(), RodRodContact()))
    short = DERRod.straight(4, 0.1, youngs_modulus=1e6, density=1000.0, radius=0.01)
    with pytest.raises(ValueError, match="self-contact needs edges"):
        DERModel(short, contacts=(RodRodContact(),))
    # a hairpin whose two legs are 5 mm apart with radius 10 mm: overlapping at the start
    pts = np.array(
        [[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [0.25, 0.0025, 0], [0.2, 0.005, 0], [0.1, 0.005, 0], [0.0, 0.005, 0]],
        float,
    )
    hairpin = DERRod.from_polyline(pts, rest="stress_free", youngs_modulus=1e6, density=1000.0, radius=0.01)
    with pytest.raises(ValueError, match="initial overlap: edge pairs"):
        DERModel(hairpin, contacts=(RodRodContact(),))
