"""Rods driven by measured motion (issue 12, item 5, and the clamp placement of item 7).

One rod structure (11 nodes, clamped at both ends by :class:`ClampMotion` poses with 21 samples,
a counting zero ``force_fn``) serves every static and dynamic check here, so each program is
compiled once for the whole module:

* data are traced: two trials x two Young's moduli run through ONE compiled ``simulate``
  (counted: the Python body of ``force_fn`` runs only while tracing);
* absolute clamp orientations: a clamp turned by 1.5 pi about its axis gives the uniform twist
  ``phi / (N - 2)`` per stencil (static, and dynamically after the motion), unwrapped past pi; a
  clamp tilted by ``alpha`` gives the clamped-clamped beam shape ``w = -alpha x (1 - x/L)^2``;
* the clamped nodes and frames follow the data exactly at the sample times;
* a driven, damped run settles on the static equilibrium of its final poses, with backward Euler
  and with implicit midpoint;
* clamp placement: :meth:`DERRod.cantilever` matches ``P L^3 / (3 EI)``, clamping edge 0 of
  :meth:`DERRod.straight` is ~15% stiff at 11 nodes;
* ``from_polyline`` requires ``rest=``; ``interp_arc_length`` / ``predict_markers`` under
  ``jit``/``grad``/``vmap``.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod import ClampMotion, DERModel, DERRod, SampledMotion
from jaxrod.calibrate import interp_arc_length, predict_markers
from jaxrod.models.der import clamp_frame, quaternion_to_matrix

N, L, H, RHO, E1 = 11, 0.5, 5e-3, 1000.0, 1e7
TS = np.linspace(0.0, 1.0, 21)  # sample times [s] of every clamp in this module
DT, N_STEPS, SAVE = 0.01, 100, 5  # saved frames fall on the sample times
RAMP = 0.3  # the grippers move during [0, RAMP] s and then hold still
TRACES = [0]


def counting_zero_force(t):
    """A static ``force_fn`` (the same object in every model): its body runs once per trace."""
    TRACES[0] += 1
    return jnp.zeros((N, 3))


def at(t):
    """A time [s] as a float64 array (not weakly typed), so every static solve shares one program."""
    return jnp.asarray(t, dtype=jnp.float64)


def rot(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def rod_with(E):
    return DERRod.cantilever(N, L, clamped_ends="both", youngs_modulus=E, density=RHO, radius=H)


ROD = rod_with(E1)
Q0 = jnp.concatenate([ROD.rest_positions, jnp.zeros((N, 1))], axis=1)
F_START, F_END = np.asarray(clamp_frame(Q0, 0)), np.asarray(clamp_frame(Q0, N - 2))


def clamps(*, end_shift=(0.0, 0.0, 0.0), end_rot=None, start_rot=None, ramp=RAMP):
    """Clamp poses: the start clamp at the origin, the end clamp at ``(L, 0, 0)``; over
    ``[0, ramp]`` (smoothstep) the end clamp moves by ``end_shift`` and turns by
    ``end_rot(s)`` ``(3, 3)``, the start clamp turns by ``start_rot(s)``."""
    s = np.clip(TS / ramp, 0.0, 1.0)
    s = s * s * (3 - 2 * s)
    ident = lambda u: np.eye(3)  # noqa: E731
    R0 = np.stack([(start_rot or ident)(u) @ F_START for u in s])
    R1 = np.stack([(end_rot or ident)(u) @ F_END for u in s])
    p1 = np.array([L, 0.0, 0.0]) + s[:, None] * np.asarray(end_shift)[None, :]
    return ClampMotion(0, TS, np.zeros((TS.size, 3)), R0), ClampMotion(-1, TS, p1, R1)


def model_with(cl, *, E=E1, gravity=(0.0, 0.0, 0.0), damping=0.0):
    return DERModel(
        rod_with(E), clamps=cl, gravity=gravity, damping=damping, force_fn=counting_zero_force
    )


PHI = 1.5 * np.pi  # end clamp turned about its axis (beyond pi: the angle must unwrap)
TWIST = clamps(end_rot=lambda u: rot([1, 0, 0], PHI * u))
LIFT = clamps(end_shift=(0.0, 0.01, 0.03), end_rot=lambda u: rot([0, 1, 0], -0.3 * u) @ rot([1, 0, 0], 0.4 * u))
DRIVEN = {"gravity": (0.0, 0.0, -9.81), "damping": 3.5}  # ~critical for the first bending mode


def uniform_twist_error(q):
    """Largest deviation of the edge twist increments from ``PHI / (N - 2)`` [rad] (the rod stays
    straight, so its reference twist is zero and ``theta`` carries the whole twist)."""
    return float(np.abs(np.diff(np.asarray(q[:-1, 3])) - PHI / (N - 2)).max())


@pytest.fixture(scope="module")
def lift_static():
    """Static equilibrium under gravity at the LIFT trial's final poses."""
    state, res = jaxrod.solve_static(model_with(LIFT, **DRIVEN), t=at(TS[-1]))
    assert bool(res.converged)
    return np.asarray(state.q)


@pytest.fixture(scope="module")
def driven_runs():
    """Two trials x two moduli through simulate with backward Euler; trace counts after each."""
    runs, counts = {}, []
    for name, cl, kw in (("twist", TWIST, {"damping": 0.0}), ("lift", LIFT, DRIVEN)):
        for E in (E1, 2 * E1):
            model = model_with(cl, E=E, **kw)
            runs[name, E] = jaxrod.simulate(
                model, dt=DT, n_steps=N_STEPS, save_every=SAVE, scheme=jaxrod.BackwardEuler()
            )
            counts.append(TRACES[0])
    return runs, counts


# ---- data are traced: one compiled program -------------------------------------------------------
def test_two_trials_and_two_moduli_compile_once(driven_runs):
    runs, counts = driven_runs
    assert counts[0] > 0
    assert counts == [counts[0]] * 4, f"simulate retraced for new data or a new modulus: {counts}"
    # and the runs differ (the data and the modulus did reach the program)
    tw, li = runs["twist", E1], runs["lift", E1]
    assert float(jnp.abs(tw.positions[-1] - li.positions[-1]).max()) > 0.01
    d_E = float(jnp.abs(runs["lift", E1].positions[5] - runs["lift", 2 * E1].positions[5]).max())
    assert d_E > 1e-3


def test_clamped_nodes_and_frames_follow_the_data(driven_runs):
    runs, _ = driven_runs
    for name, cl in (("twist", TWIST), ("lift", LIFT)):
        traj = runs[name, E1]
        np.testing.assert_allclose(np.asarray(traj.times), TS, atol=1e-12)
        for c, edge in zip(cl, (0, N - 2), strict=True):
            R = np.asarray(c.orientations)
            t_axis = R[:, :, 2]
            l_e = float(ROD.rest_lengths[edge])
            half = np.array([-0.5, 0.5])[None, :, None] * l_e * t_axis[:, None, :]
            nodes = np.asarray(c.positions)[:, None, :] + half
            np.testing.assert_allclose(np.asarray(traj.positions[:, edge : edge + 2]), nodes, atol=1e-12)
            # observe()'s frames are rows (m1, m2, t); the clamp's orientation has them as columns
            frames = np.swapaxes(np.asarray(traj.frames[:, edge]), 1, 2)
            np.testing.assert_allclose(frames, R, atol=1e-12)


def test_dynamic_twist_settles_to_uniform_twist(driven_runs):
    runs, _ = driven_runs
    for E in (E1, 2 * E1):
        traj = runs["twist", E]
        assert uniform_twist_error(traj.q[-1]) < 1e-6
        assert float(jnp.abs(traj.positions[-1, :, 1:]).max()) < 1e-9  # no gravity: stays straight


def test_driven_backward_euler_settles_on_static_equilibrium(driven_runs, lift_static):
    traj = driven_runs[0]["lift", E1]
    sag = float(np.abs(lift_static[:, 2] - np.linspace(0, 0.03, N)).max())
    assert sag > 5e-3  # gravity and the lift bend the rod visibly
    np.testing.assert_allclose(np.asarray(traj.positions[-1]), lift_static[:, :3], atol=1e-4)


def test_driven_implicit_midpoint_settles_on_static_equilibrium(lift_static):
    traj = jaxrod.simulate(
        model_with(LIFT, **DRIVEN), dt=DT, n_steps=N_STEPS, save_every=SAVE, scheme=jaxrod.ImplicitMidpoint()
    )
    np.testing.assert_allclose(np.asarray(traj.positions[-1]), lift_static[:, :3], atol=1e-4)


# ---- absolute orientations: static known answers ------------------------------------------------
def test_clamp_turned_about_its_axis_gives_uniform_twist():
    # t as a (strongly typed) array: solve_static treats a Python float as static, one program per value
    state, res = jaxrod.solve_static(model_with(TWIST), t=at(1.0))
    assert bool(res.converged)
    assert uniform_twist_error(state.q) < 1e-9
    # halfway through the ramp (smoothstep(0.1/0.3) = 7/27 of the turn), interpolated in time
    state, _ = jaxrod.solve_static(model_with(TWIST), t=at(0.1))
    frac = (1 / 3) ** 2 * (3 - 2 / 3)
    np.testing.assert_allclose(np.diff(np.asarray(state.q[:-1, 3])), frac * PHI / (N - 2), atol=1e-9)


def test_tilted_clamp_gives_clamped_clamped_beam_shape():
    """Start clamp tilted by ``alpha`` about +y, end clamp level: Euler-Bernoulli
    ``w(x) = -alpha x (1 - x/L)^2``; measured at 11 nodes: 4.1% of the peak, peak within 1%."""
    alpha = 0.01
    state, res = jaxrod.solve_static(
        model_with(clamps(start_rot=lambda u: rot([0, 1, 0], alpha * u))), t=at(1.0)
    )
    assert bool(res.converged)
    x, z = np.asarray(state.q[:, 0]), np.asarray(state.q[:, 2])
    w = -alpha * x * (1 - x / L) ** 2
    peak = 4 * alpha * L / 27
    assert np.abs(z - w)[1:-1].max() < 0.06 * peak
    assert abs(z.min() / -peak - 1) < 0.02


# ---- clamp placement ---------------------------------------------------------------------------
def test_cantilever_constructor_puts_the_clamp_at_the_free_length():
    E, h = 1e6, 0.01
    EI = E * np.pi * h**4 / 4
    P = 3e-3 * EI / L**2  # tip deflection 1e-3 L: linear regime
    forces = np.zeros((N, 3))
    forces[-1, 2] = -P
    out = {}
    for ctor in ("cantilever", "straight"):
        rod = getattr(DERRod, ctor)(N, L, youngs_modulus=E, density=1000.0, radius=h)
        state, res = jaxrod.solve_static(DERModel(rod, clamped_edges=(0,), point_forces=forces))
        assert bool(res.converged)
        out[ctor] = -float(state.q[-1, 2]) / (P * L**3 / (3 * EI)) - 1
    assert abs(out["cantilever"]) < 0.01  # measured -0.28%
    assert -0.20 < out["straight"] < -0.11  # measured -14.5%: the beam is dl/2 short
    rod = DERRod.cantilever(N, L, youngs_modulus=E, density=1000.0, radius=h)
    p = np.asarray(rod.rest_positions)
    np.testing.assert_allclose(0.5 * (p[0] + p[1]), 0.0, atol=1e-15)  # clamp point at start
    np.testing.assert_allclose(p[-1], [L, 0, 0], atol=1e-15)
    both = np.asarray(rod_with(E).rest_positions)
    np.testing.assert_allclose(0.5 * (both[-2] + both[-1]), [L, 0, 0], atol=1e-15)


def test_cantilever_rejects_bad_input():
    mat = {"youngs_modulus": 1e6, "density": 1000.0, "radius": 0.01}
    with pytest.raises(ValueError, match="clamped_ends must be 'start' or 'both'"):
        DERRod.cantilever(5, 1.0, clamped_ends="end", **mat)
    with pytest.raises(ValueError, match="n_nodes must be an integer"):
        DERRod.cantilever(5.5, 1.0, **mat)
    with pytest.raises(ValueError, match="n_nodes >= 4"):
        DERRod.cantilever(3, 1.0, clamped_ends="both", **mat)


# ---- from_polyline rest shape ------------------------------------------------------------------
def test_from_polyline_requires_a_rest_shape():
    pts = np.stack([np.linspace(0, 1, 6), 0.1 * np.linspace(0, 1, 6) ** 2, np.zeros(6)], axis=1)
    mat = {"youngs_modulus": 1e6, "density": 1000.0, "radius": 0.01}
    with pytest.raises(ValueError, match="needs rest=.*'stress_free'.*'straight'"):
        DERRod.from_polyline(pts, **mat)
    with pytest.raises(ValueError, match="rest must be one of"):
        DERRod.from_polyline(pts, rest="natural", **mat)
    with pytest.raises(ValueError, match="not both"):
        DERRod.from_polyline(pts, rest="straight", natural_curvature=np.zeros((4, 2)), **mat)
    with pytest.raises(ValueError, match="rest"):
        DERRod.from_polyline(pts, rest=np.zeros((3, 2)), **mat)
    straight = DERRod.from_polyline(pts, rest="straight", **mat)
    free = DERRod.from_polyline(pts, rest="stress_free", **mat)
    given = DERRod.from_polyline(pts, rest=np.full((4, 2), 0.01), **mat)
    assert float(jnp.abs(straight.natural_curvature).max()) == 0.0
    np.testing.assert_allclose(np.asarray(given.natural_curvature), 0.01)
    # stress-free: the polyline's own integrated curvature 2 tan(phi/2), phi the turning angle
    e = np.diff(pts, axis=0)
    phi = np.arccos(np.sum(e[:-1] * e[1:], axis=1) / np.linalg.norm(e[:-1], axis=1) / np.linalg.norm(e[1:], axis=1))
    kappa = np.linalg.norm(np.asarray(free.natural_curvature), axis=1)
    np.testing.assert_allclose(kappa, 2 * np.tan(phi / 2), rtol=1e-12)
    assert phi.min() > 0.01


# ---- ClampMotion / SampledMotion input -----------------------------------------------------------
def test_clamp_motion_validation():
    R = np.tile(F_END, (TS.size, 1, 1))
    pos = np.tile([L, 0.0, 0.0], (TS.size, 1))
    with pytest.raises(ValueError, match=r"orientations\[3\] is not a rotation matrix"):
        ClampMotion(-1, TS, pos, R.copy() * np.where(np.arange(TS.size) == 3, 2.0, 1.0)[:, None, None])
    with pytest.raises(ValueError, match="times must be strictly increasing"):
        ClampMotion(-1, TS[::-1], pos, R)
    with pytest.raises(ValueError, match="quaternion_to_matrix"):
        ClampMotion(-1, TS, pos, np.tile([1.0, 0, 0, 0], (TS.size, 1)))
    start = ClampMotion(0, TS, np.zeros((TS.size, 3)), np.tile(F_START, (TS.size, 1, 1)))
    with pytest.raises(ValueError, match=r"clamps\[1\] \(edge 9\): the first pose puts the edge's nodes"):
        DERModel(ROD, clamps=(start, ClampMotion(-1, TS, pos + 0.01, R)))
    with pytest.raises(ValueError, match="both hold edge 9"):
        DERModel(ROD, clamps=(ClampMotion(-1, TS, pos, R), ClampMotion(N - 2, TS, pos, R)))
    flipped = np.stack([F_END] + [rot([0, 0, 1], np.pi) @ F_END] * (TS.size - 1))
    with pytest.raises(ValueError, match="may turn at most"):
        DERModel(ROD, clamps=(start, ClampMotion(-1, TS, pos, flipped)))
    q0 = np.asarray(Q0).copy()
    q0[0, 3] = 0.3
    with pytest.raises(ValueError, match=r"q0's twist angle .* differs .* by 0.3"):
        DERModel(ROD, clamps=(start,), q0=q0)
    # clamp_frame: edge -1 is the last edge (not q0's padding row); m1 turned by the twist angle
    q = np.asarray(Q0).copy()
    q[N - 2, 3] = 0.4
    np.testing.assert_allclose(np.asarray(clamp_frame(q, -1)), F_END @ rot([0, 0, 1], 0.4), atol=1e-15)
    # from_gripper: the cable turns with the gripper, whatever the gripper's body convention B
    ang = 0.2 + TS
    B = rot([1, 2, 3], 0.7)
    G = np.stack([rot([0, 0, 1], a) @ B for a in ang])
    c = ClampMotion.from_gripper(-1, TS, pos, G, F_END)
    want = np.stack([rot([0, 0, 1], a - ang[0]) @ F_END for a in ang])
    np.testing.assert_allclose(np.asarray(c.orientations), want, atol=1e-14)
    # quaternions: a turn by a about +x is (cos a/2, sin a/2, 0, 0)
    a = 0.7
    np.testing.assert_allclose(
        np.asarray(quaternion_to_matrix(np.array([np.cos(a / 2), np.sin(a / 2), 0, 0]))), rot([1, 0, 0], a), atol=1e-15
    )
    # the model stores data as traced leaves, a plain callable as a static field
    model = DERModel(ROD, clamps=(start,))
    assert any(x is model.clamps[0].orientations for x in jax.tree_util.tree_leaves(model))
    sm = SampledMotion(TS, np.asarray(Q0)[None] + TS[:, None, None] * np.ones((1, N, 4)))
    m2 = DERModel(ROD, clamped_edges=(-1,), motion=sm)
    assert m2.motion is None and m2.motion_data is sm
    np.testing.assert_allclose(np.asarray(m2.prescribed(0.125)), np.asarray(Q0) + 0.125, atol=1e-14)
    np.testing.assert_allclose(np.asarray(m2.prescribed(-1.0)), np.asarray(Q0), atol=1e-14)  # held
    sampled = SampledMotion.from_function(lambda t: Q0 + t, TS)
    np.testing.assert_allclose(np.asarray(sampled.values), np.asarray(sm.values), atol=1e-14)


# ---- marker mapping under jit / grad / vmap ------------------------------------------------------
def test_interp_arc_length_under_jit_grad_vmap():
    rng = np.random.default_rng(0)
    grid = np.concatenate([[0.0], np.cumsum(rng.uniform(0.05, 0.15, 7))])
    pos = rng.normal(size=(3, 8, 3))
    s = np.array([0.0, 0.21, 0.37, grid[-1]])
    eager = interp_arc_length(grid, pos, s)
    np.testing.assert_allclose(np.asarray(jax.jit(interp_arc_length)(grid, pos, s)), np.asarray(eager), atol=1e-15)
    # exact at nodes; linear between them
    np.testing.assert_allclose(np.asarray(eager[:, 0]), pos[:, 0], atol=1e-15)
    np.testing.assert_allclose(np.asarray(eager[:, -1]), pos[:, -1], atol=1e-15)
    # gradients in s, grid and positions against central differences
    f = lambda g, p, q: jnp.sum(jnp.sin(interp_arc_length(g, p, q)))  # noqa: E731
    gg, gp, gs = jax.jit(jax.grad(f, argnums=(0, 1, 2)))(grid, pos, s[1:3])
    eps = 1e-6
    for k in range(2):
        d = np.zeros(2)
        d[k] = eps
        fd = (f(grid, pos, s[1:3] + d) - f(grid, pos, s[1:3] - d)) / (2 * eps)
        np.testing.assert_allclose(float(gs[k]), float(fd), rtol=1e-7)
    for j in (1, 2, 3):
        d = np.zeros_like(grid)
        d[j] = eps
        fd = (f(grid + d, pos, s[1:3]) - f(grid - d, pos, s[1:3])) / (2 * eps)
        np.testing.assert_allclose(float(gg[j]), float(fd), rtol=1e-6, atol=1e-9)
    d = np.zeros_like(pos)
    d[1, 2, 0] = eps
    fd = (f(grid, pos + d, s[1:3]) - f(grid, pos - d, s[1:3])) / (2 * eps)
    np.testing.assert_allclose(float(gp[1, 2, 0]), float(fd), rtol=1e-7)
    # per-trial marker arc lengths, vmapped
    S = np.stack([s, s[::-1]])
    batched = jax.vmap(interp_arc_length, in_axes=(None, None, 0))(grid, pos, S)
    np.testing.assert_allclose(np.asarray(batched[1]), np.asarray(eager[:, ::-1]), atol=1e-15)
    with pytest.raises(ValueError, match="must lie on the rod"):
        interp_arc_length(grid, pos, [grid[-1] + 0.1])


def test_predict_markers_under_jit_and_grad(driven_runs):
    traj = driven_runs[0]["lift", E1]
    grid = np.concatenate([[0.0], np.cumsum(np.asarray(ROD.rest_lengths))])
    t_q = np.array([0.12, 0.5, 0.93])

    def pred(s):
        return predict_markers(traj, t_q, s, grid=grid)

    s = jnp.array([0.1, 0.25, 0.4])
    np.testing.assert_allclose(np.asarray(jax.jit(pred)(s)), np.asarray(pred(s)), atol=1e-15)
    g = jax.grad(lambda s: jnp.sum(pred(s)[..., 2]))(s)
    eps = 1e-6
    fd = [
        (jnp.sum(pred(s.at[k].add(eps))[..., 2]) - jnp.sum(pred(s.at[k].add(-eps))[..., 2])) / (2 * eps)
        for k in range(3)
    ]
    np.testing.assert_allclose(np.asarray(g), np.asarray(fd), rtol=1e-6)
    # the default grid (arc length along the first frame) also works under jit
    np.testing.assert_allclose(
        np.asarray(eqx.filter_jit(lambda tr: predict_markers(tr, t_q, s))(traj)), np.asarray(pred(s)), atol=1e-9
    )
