"""The snake robot of Transeth et al. (2008) (jaxrod.scenes.snake) on set-valued contact: the
resting snake carries its weight, and lateral undulation with orthotropic friction (0.1 along /
0.5 across) moves it forward (toward its head, +x) while isotropic friction does not (it drifts
slowly backward), the paper's central claim (section VIII-B). One compiled program (11 links,
22 spheres, 10 cardan joints, linear-implicit PD at dt = 1 ms) serves the 11-link tests: friction,
gait, posture and dt are array leaves. The paper's explicit PD is unstable at 1 ms (the PD tests at
the end), so the tests take the linear-implicit controller (``implicit_pd=True``)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.geometry import quat_to_rotation
from jaxrod.scenes.snake import AIKO, SerpenoidGait, cardan_angles, snake_model

DT = 1e-3
G = 9.81


def test_resting_snake_carries_its_weight_without_drift():
    """Straight, gait amplitude 0: every step the normal impulses sum to the weight times dt
    (7.5 kg x 9.81 m/s^2 x 1 ms = 73.6 mN s), nothing moves."""
    cs = snake_model(11, gait=SerpenoidGait(amplitude_h=0.0), posture="straight", implicit_pd=True)
    tr = jaxrod.simulate(cs, dt=DT, n_steps=60)
    total = np.asarray(tr.impulses[2:, :, 0]).sum(1)
    np.testing.assert_allclose(total, AIKO["total_mass"] * G * DT, rtol=1e-6)
    assert np.max(np.abs(np.asarray(tr.positions[-1] - tr.positions[0]))) < 1e-9
    assert np.all(np.asarray(tr.active[2:]))  # all 22 spheres in contact


def test_orthotropic_friction_drives_lateral_undulation_forward_isotropic_does_not():
    """0.5 s of the paper's LU gait (A_h = 30 deg, 80 deg/s, -50 deg) from the curved start.
    Measured (dt = 1 ms, linear-implicit PD): centre of mass +4.63 cm (orthotropic 0.1/0.5), -0.46 cm
    (isotropic 0.2) (explicit PD, which is marginal at 1 ms on this start: +4.63 and -0.31 cm)."""
    moved = {}
    for mu in ((0.1, 0.5), (0.2, 0.2)):
        cs = snake_model(11, mu_along=mu[0], mu_across=mu[1], implicit_pd=True)
        tr = jaxrod.simulate(cs, dt=DT, n_steps=500, save_every=50)
        com = np.asarray(tr.positions).mean(1)
        moved[mu] = com[-1] - com[0]
        assert np.max(np.abs(np.asarray(cs.joint_violation(tr.q)))) < 1e-12  # joints hold
        assert float(np.min(tr.gaps)) > -1e-3  # no sinking
        # the PD loops track the gait (sign of eq. 62 and the gains): yaw within 3 degrees
        q = np.asarray(tr.q[-1])
        ah, av, _, _ = cardan_angles(quat_to_rotation(q[:, 3:]), np.zeros((11, 3)))
        ref = cs.controller.gait(float(tr.times[-1]), 10)[0]
        assert np.max(np.abs(np.degrees(np.asarray(ah - ref)))) < 3.0
        assert np.max(np.abs(np.degrees(np.asarray(av)))) < 1.0
    assert moved[(0.1, 0.5)][0] > 0.03  # forward, 6 cm/s
    assert -0.01 < moved[(0.2, 0.2)][0] < 0.0  # slowly backward
    assert abs(moved[(0.1, 0.5)][1]) < 0.01


def test_snake_model_refuses_bad_options_naming_them():
    for kw, msg in ((dict(n_links=1), "snake_model.n_links"),
                    (dict(posture="coiled"), "snake_model.posture must be 'curved' or 'straight', got 'coiled'"),
                    (dict(inertia_order="xyz"), "snake_model.inertia_order must be 'physical' or 'printed'"),
                    (dict(gains={"kp": 1.0}), "snake_model.gains: unknown keys ['kp']"),
                    (dict(projection="x"), "snake_model.projection must be 'mass' or 'chain', got 'x'"),
                    (dict(mu_along=-0.1), "snake_model.mu_along must be a finite number >= 0 [-], got -0.1"),
                    (dict(mu_across=float("nan")), "snake_model.mu_across must be a finite number >= 0 [-], got nan"),
                    (dict(rolling_friction=float("inf")), "snake_model.rolling_friction must be a finite number >= 0"),
                    (dict(restitution=1.5),
                     "snake_model.restitution must be a finite number >= 0 and <= 1 [-], got 1.5"),
                    (dict(restitution=-0.1), "snake_model.restitution must be a finite number >= 0 and <= 1"),
                    (dict(geometry={"radius": 0.07}),
                     "snake_model.geometry: a contact sphere larger than its link: 2 radius = 0.14 m > link_length"),
                    (dict(geometry={"sphere_offset": 0.07}), "sphere_offset = 0.07 m puts the sphere centres beyond"),
                    (dict(geometry={"link_length": -1.0}),
                     "snake_model.geometry['link_length'] must be a finite number > 0 [m], got -1.0"),
                    (dict(geometry={"width": 1.0}), "snake_model.geometry: unknown keys ['width']"),
                    (dict(implicit_pd="yes"), "snake_model.implicit_pd must be True or False, got 'yes'"),
                    (dict(gains={"kp_v": float("nan")}),
                     "CardanPD.kp_v must be a finite number >= 0 [N m/rad], got nan")):
        with pytest.raises(ValueError) as info:
            snake_model(**kw)
        assert msg in str(info.value), (msg, str(info.value))


def test_cardan_angles_invert_the_joint_rotations_and_rates():
    """Spec 6.1: R_{i+1} = R_i R_z(alpha_h) R_y(alpha_v) -> (alpha_h, alpha_v) back to round-off;
    rates: omega_h = alpha_h' cos(alpha_v), omega_v = alpha_v' (finite differences of a motion)."""
    from jaxrod.geometry import rotation_matrix

    rng = np.random.default_rng(0)
    ah, av = rng.uniform(-1.2, 1.2, 5), rng.uniform(-0.7, 0.7, 5)
    dah, dav = rng.normal(size=5), rng.normal(size=5)

    def chain(s):
        R = [np.asarray(rotation_matrix(np.array([0.3, -0.2, 1.0])))]
        for k in range(5):
            Rz = np.asarray(rotation_matrix(np.array([0.0, 0.0, ah[k] + s * dah[k]])))
            Ry = np.asarray(rotation_matrix(np.array([0.0, av[k] + s * dav[k], 0.0])))
            R.append(R[-1] @ Rz @ Ry)
        return np.stack(R)

    R0 = chain(0.0)
    h = 1e-6
    Rdot = (chain(h) - chain(-h)) / (2 * h)
    omega = np.stack([np.array([(R.T @ Rd)[2, 1], (R.T @ Rd)[0, 2], (R.T @ Rd)[1, 0]]) for R, Rd in zip(R0, Rdot)])
    a_h, a_v, w_h, w_v = (np.asarray(v) for v in cardan_angles(R0, omega))
    np.testing.assert_allclose(a_h, ah, atol=1e-12)
    np.testing.assert_allclose(a_v, av, atol=1e-12)
    np.testing.assert_allclose(w_h, dah * np.cos(av), atol=1e-7)
    np.testing.assert_allclose(w_v, dav, atol=1e-7)


def test_gait_reference_hold_samples_the_serpenoid():
    """hold = 0.1 s (Aiko's 10 Hz references): between samples the references and rates are the
    continuous gait's values at the last sample time; hold = 0 is the continuous gait (eq. 70)."""
    cont, held = SerpenoidGait(), SerpenoidGait(hold=0.1)
    for t in (0.0, 0.05, 0.1, 0.234, 1.99):
        got = np.asarray(held(t, 10))
        want = np.asarray(cont(np.floor(t / 0.1) * 0.1, 10))
        np.testing.assert_allclose(got, want, atol=1e-15)
    k = np.arange(10)
    np.testing.assert_allclose(np.asarray(cont(0.7, 10)[0]),
                               np.radians(30) * np.sin(np.radians(80) * 0.7 + k * np.radians(-50)), atol=1e-15)


def test_chain_projection_restores_the_joints_keeping_link_one_and_the_link_axes():
    """The paper's correction (section VII-C): from a perturbed posture (1 mm, 0.01 rad) the
    joints close to round-off, link 1 does not move and every link keeps its axis e_x; a short
    run with it keeps the joints closed."""
    from jaxrod.geometry import quat_from_axis_angle, quat_multiply

    cs = snake_model(5, projection="chain")
    q = np.asarray(cs.initial_state().q)
    rng = np.random.default_rng(1)
    x = q[:, :3] + 1e-3 * rng.normal(size=(5, 3))
    quat = np.asarray(quat_multiply(q[:, 3:], quat_from_axis_angle(0.01 * rng.normal(size=(5, 3)))))
    bad = np.concatenate([x, quat], 1)

    @jax.jit  # one program: evaluated op by op, these compiled ~150 small programs
    def project(bad):
        fixed = cs.correct(bad, 0.0)
        return (cs.joint_violation(bad), fixed, cs.joint_violation(fixed), quat_to_rotation(bad[:, 3:]),
                quat_to_rotation(fixed[:, 3:]))

    gap0, fixed, gap1, R0, R1 = (np.asarray(a) for a in project(jnp.asarray(bad)))
    assert np.max(np.abs(gap0)) > 1e-4
    assert np.max(np.abs(gap1)) < 1e-15
    np.testing.assert_array_equal(fixed[0, :3], bad[0, :3])
    np.testing.assert_allclose(R1[:, :, 0], R0[:, :, 0], atol=1e-15)
    np.testing.assert_allclose(R1[0], R0[0], atol=1e-15)
    small = snake_model(3, projection="chain", implicit_pd=True)
    tr = jaxrod.simulate(small, dt=DT, n_steps=50)
    assert np.max(np.abs(np.asarray(jax.jit(lambda q: small.joint_violation(q))(tr.q)))) < 1e-14


def test_soft_start_switches_each_joint_on_where_its_sine_is_small():
    """Spec 6.5: joint i's reference stays 0 until, for the first time, |A sin(omega t + phase_i)|
    < 3 deg; the closed-form switch times equal a brute-force scan (0.1 ms grid), the references are
    0 (rates 0) before and eq. 70-71 after, so each switch jumps by less than 3 deg."""
    g = SerpenoidGait.sidewinding()
    th, tv = (np.asarray(x) for x in g.start_times(10))
    t = np.arange(0.0, 6.0, 1e-4)
    k = np.arange(10)
    w, d, a3 = np.radians(80.0), np.radians(-50.0), np.radians(3.0)
    for amp, phase, got in ((np.radians(30.0), k * d, th), (np.radians(10.0), k * d + np.radians(90.0), tv)):
        below = np.abs(amp * np.sin(w * t[:, None] + phase[None, :])) < a3
        np.testing.assert_allclose(got, t[np.argmax(below, axis=0)], atol=1.01e-4)
    assert th[0] == 0.0 and tv[2] == 0.0 and tv[9] == 0.0  # already below at t = 0
    cont = SerpenoidGait.sidewinding(soft_start=0.0)
    for tt in (0.0, 0.3, 0.9, 1.6, 2.1):
        ref, full = np.asarray(g(tt, 10)), np.asarray(cont(tt, 10))
        on = np.stack([tt >= th, tt >= tv, tt >= th, tt >= tv])
        np.testing.assert_allclose(ref, np.where(on, full, 0.0), atol=1e-15)
    eps = 1e-9
    jump_h = np.abs(np.asarray(jax.vmap(lambda s: g(s + eps, 10)[0])(th))[np.arange(10), np.arange(10)])
    jump_v = np.abs(np.asarray(jax.vmap(lambda s: g(s + eps, 10)[1])(tv))[np.arange(10), np.arange(10)])
    assert np.all(jump_h < a3 + 1e-8) and np.all(jump_v < a3 + 1e-8)


def test_serpenoid_gait_refuses_non_finite_parameters_naming_them():
    for kw, msg in ((dict(amplitude_h=np.nan), "SerpenoidGait.amplitude_h must be a finite number [rad], got nan"),
                    (dict(omega_v=np.inf), "SerpenoidGait.omega_v must be a finite number [rad/s], got inf"),
                    (dict(soft_start=-0.1), "SerpenoidGait.soft_start must be a finite number >= 0 [rad]"),
                    (dict(hold=-1.0), "SerpenoidGait.hold must be a finite number >= 0 [s], got -1.0")):
        with pytest.raises(ValueError) as info:
            SerpenoidGait(**kw)
        assert msg in str(info.value), (msg, str(info.value))


def test_sidewinding_lifts_most_of_the_body_and_moves_sideways():
    """The paper's sidewinding (section VIII-E: A_h = 30, A_v = 10, delta = 90 deg, soft start,
    mu = 0.2) from the straight posture along y, its first 0.75 s at dt = 1 ms with the linear-implicit
    PD (the compiled program of the tests above, 3 chunks of 250 steps; the explicit PD blows up at
    1 ms here, with every contact solve converged): all 22 spheres touch at the start; once the
    vertical wave is on, most of the body is lifted (the paper: "most of the body was lifted"), and
    the centre of mass moves sideways, along -x (perpendicular to the body), not along the body.
    Measured: at most 4 of 22 spheres in contact from 0.25 s on; centre of mass -1.24 cm in x, -0.23
    cm in y at 0.75 s (explicit PD at 0.5 ms: -1.61 and -0.10 cm; the 15 s run in
    benchmarks/snake_paper.py: about 1.4 m along -x)."""
    from jaxrod.scenes.snake import snake_sidewinding

    cs = snake_sidewinding(implicit_pd=True).model
    state, t0, chunks = None, 0.0, []
    for _ in range(3):
        tr = jaxrod.simulate(cs, dt=DT, n_steps=250, save_every=50, state0=state, t0=t0)
        chunks.append(tr)
        state, t0 = tr.final, float(tr.times[-1])
    assert np.all(np.asarray(chunks[0].gaps[0]) <= 0.0)  # the straight start lies on all spheres
    touching = np.concatenate([np.asarray(c.active[1:]).sum(1) for c in chunks[1:]])
    assert touching.max() <= 5, touching  # most of the body lifted from 0.25 s on
    com0 = np.asarray(chunks[0].positions[0]).mean(0)
    com1 = np.asarray(chunks[-1].positions[-1]).mean(0)
    assert -0.03 < com1[0] - com0[0] < -0.01
    assert abs(com1[1] - com0[1]) < 0.005
    assert np.max(np.abs(np.asarray(cs.joint_violation(chunks[-1].q)))) < 1e-12


@pytest.mark.slow
def test_travelled_distance_derivative_wrt_gait_amplitude_matches_finite_differences():
    """d(mean x displacement of the links)/d(A_h) through 100 steps of 1 ms of a 4-link snake's
    lateral undulation on orthotropic friction, forward mode (jax.jvp; the contact solves
    differentiated implicitly), against central differences (h = 1e-5 rad) of the same run.
    With a compliance (MoreauOptions(compliance=...)): rigid Coulomb contact on two spheres per link has, when it
    slides, a continuum of solutions with different velocities (the iteration's start picks one),
    where no derivative exists (measured: the rigid runs' gradients and differences disagreed by 0.7 %
    with 2 links and 89 % with 4);
    the compliance makes the solution unique. Compliance 1e-2 (not 1e-3): the indeterminate directions
    converge at a rate ~ 1 - c per sweep, so 1e-3 took ~6900 sweeps a step (15 s CPU a run), 1e-2
    ~800. Linear-implicit PD (1 ms is above the explicit loop's limit). Measured: see the assert."""
    from jaxrod.integrate.moreau import MoreauOptions

    cs = snake_model(4, options=MoreauOptions(rtol=1e-12, max_iterations=100000, compliance=1e-2), implicit_pd=True)

    @jax.jit
    def dx(a):
        c = eqx.tree_at(lambda c: c.controller.gait.amplitude_h, cs, a)
        tr = jaxrod.simulate(c, dt=DT, n_steps=100, save_every=100)
        return jnp.mean(tr.positions[-1, :, 0] - tr.positions[0, :, 0])

    a = jnp.asarray(np.radians(30.0))
    _, d = jax.jit(lambda a: jax.jvp(dx, (a,), (jnp.ones_like(a),)))(a)
    h = 1e-5
    fd = float((dx(a + h) - dx(a - h)) / (2 * h))
    assert abs(fd) > 0.01
    assert abs(float(d) - fd) < 2e-5 * abs(fd), (float(d), fd)


def _floating_pair(implicit, reference):
    """Two Aiko links on one cardan joint, straight, in zero gravity with the ground 10 m below
    (no contact), the pitch reference a step to ``reference`` [rad] from 0 (gait amplitude 0,
    ``offset_v``)."""
    cs = snake_model(2, gait=SerpenoidGait(amplitude_h=0.0, offset_v=reference), posture="straight",
                     implicit_pd=implicit)
    return eqx.tree_at(lambda c: (c.system.gravity, c.plane_point), cs,
                       (jnp.zeros(3), jnp.array([[0.0, 0.0, -10.0]])))


def _pitch(tr):
    q, u = np.asarray(tr.q), np.asarray(tr.v)
    out = [cardan_angles(quat_to_rotation(qk[:, 3:]), uk[:, 3:]) for qk, uk in zip(q, u)]
    return np.array([[float(o[1][0]), float(o[3][0])] for o in out])  # (alpha_v, omega_v)


def test_pd_step_response_in_zero_gravity_follows_the_closed_form_amplification():
    """PD step response of the pitch loop (kp_v = 800 N m/rad, kd_v = 0.2 N m s/rad) of two free
    links: at linear order the relative pitch obeys (Theta_1 / 2) alpha'' = -kp (alpha - ref) - kd
    alpha' (each link turns by alpha / 2 about its transverse axis, Theta_1 = 9.63e-4 kg m^2), and one
    Moreau step is the 2 x 2 map of pd_step_matrix. omega_n = 1289 rad/s: the explicit loop's limit is
    1.32 ms (pd_stable_dt). At dt = 2 ms the linear-implicit loop converges (spectral radius 0.44) and
    the run equals its closed form to 1e-6 of the step; the explicit loop grows by 5.45 a step, as
    its closed form says, and simulate warns naming dt and kp_v."""
    from jaxrod.integrate.moreau import StabilityWarning, pd_stable_dt, pd_step_matrix

    m_eff = AIKO["inertia_transverse"] / 2
    assert abs(pd_stable_dt(m_eff, 800.0, 0.2) - 1.3216e-3) < 1e-7
    dt = 2e-3
    for implicit, ref, n, radius in ((True, 1e-3, 20, 0.4405), (False, 1e-9, 6, 5.4456)):
        T = pd_step_matrix(dt, m_eff, 800.0, 0.2, implicit)
        assert abs(np.max(np.abs(np.linalg.eigvals(T))) - radius) < 1e-4
        z, want = np.array([-ref, 0.0]), []
        for _ in range(n + 1):
            want.append(z)
            z = T @ z
        want = np.array(want)
        cs = _floating_pair(implicit, ref)
        if implicit:
            tr = jaxrod.simulate(cs, dt=dt, n_steps=n)
        else:
            with pytest.warns(StabilityWarning, match=r"dt = 0.002 s is above .*kp_v = 800 N m/rad"):
                tr = jaxrod.simulate(cs, dt=dt, n_steps=n)
        got = _pitch(tr)
        err = got[:, 0] - ref
        np.testing.assert_allclose(err, want[:, 0], atol=1e-6 * np.max(np.abs(want[:, 0])))
        np.testing.assert_allclose(got[:, 1], want[:, 1], atol=1e-6 * np.max(np.abs(want[:, 1])))
        if implicit:
            assert abs(err[-1]) < 1e-6 * ref  # converged to the reference
        else:
            assert abs(err[-1]) > 1e3 * ref  # diverging


def test_pd_stability_check_is_silent_where_the_explicit_loop_is_stable_and_for_implicit_pd():
    """No StabilityWarning at the scenes' 0.5 ms (the estimate on the snake: half the axial inertia
    2.35e-4 kg m^2, kd 0.2: 0.556 ms) nor for the linear-implicit PD at 5 ms; a warning at 1 ms
    explicit (where sidewinding blows up)."""
    import warnings

    from jaxrod.integrate.moreau import StabilityWarning

    cs = snake_model(11)
    limit, loop = cs.controller.stable_dt(cs.system)
    assert loop == "v" and 5.5e-4 < limit < 5.6e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        cs.check_dt(5e-4)
        snake_model(11, implicit_pd=True).check_dt(5e-3)
    with pytest.warns(StabilityWarning, match="dt = 0.001 s .* CardanPD\\(implicit=True\\)"):
        cs.check_dt(1e-3)


def test_model_file_snake_equals_the_scene_snake_step_for_step():
    """jaxrod/modelfile/examples/snake_undulation.toml (the scene snake-undulation-ortho with its
    options written out: friction, posture, gait, gains, geometry, linear-implicit PD) builds the
    same model as snake_undulation(implicit_pd=True): 30 steps of 1 ms agree to 1e-12 m (the
    compiled program of the 11-link tests). A key the scene does not know is refused naming it."""
    from jaxrod.modelfile import load_model
    from jaxrod.scenes.snake import snake_undulation

    loaded = load_model("snake_undulation.toml")
    assert (loaded.dt, loaded.duration, loaded.kind) == (1e-3, 15.0, "scene")
    scene = snake_undulation(implicit_pd=True)
    a = loaded.simulate(n_steps=30)
    b = jaxrod.simulate(scene.model, dt=1e-3, n_steps=30)
    assert float(np.max(np.abs(np.asarray(a.positions[-1] - a.positions[0])))) > 1e-4  # it moves (0.5 mm)
    np.testing.assert_allclose(np.asarray(a.q), np.asarray(b.q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.impulses), np.asarray(b.impulses), rtol=0, atol=1e-12)


def test_model_file_snake_refuses_unknown_options_naming_them(tmp_path):
    from jaxrod.modelfile import ModelFileError, load_model

    path = tmp_path / "snake.toml"
    path.write_text('[rods.snake]\nscene = "snake-undulation-ortho"\nmu_sideways = 0.3\n'
                    '[simulation]\ndt = 0.001\nduration = 1.0\n')
    with pytest.raises(ModelFileError, match="rods.snake: scene 'snake-undulation-ortho' rejected the options "
                                             ".*mu_sideways"):
        load_model(path)
    path.write_text('[rods.snake]\nscene = "snake-undulation-ortho"\n[rods.snake.gait]\namp = 0.3\n'
                    '[simulation]\ndt = 0.001\nduration = 1.0\n')
    with pytest.raises(ModelFileError, match=r"snake_model.gait: unknown keys \['amp'\]"):
        load_model(path)
