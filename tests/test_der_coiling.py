"""Rod coiling on a frictional floor (``rod-coiling`` scene; Jawed, Da, Joo, Grinspun & Reis,
PNAS 2014): a soft rod hanging from a clamp lowered at constant speed buckles on the floor and
lays down in coils of radius ``R ~ L_gb = (EI/(rho A g))^(1/3)``.

One small rod (L = 0.5 m, 61 nodes, h = 1 mm, rho = 1200 kg/m^3, feed 0.1 m/s, 3.5 s) is run
twice in one compiled program: E = 0.15 MPa (L_gb = 1.47 cm) and E x 8 (L_gb doubled). Checked:

* every Newton solve converges (touchdown is the hard event);
* (a) the rod never sinks into the floor by more than the contact tolerance delta;
* (b) material conservation: the laid-down rest length grows at the feed speed, and lags the fed
  length by the arc of the hanging boundary layer only (a few L_gb);
* (c) the laid-down curve coils: its tangent turns one way by more than a full turn, and keeps
  turning while rod is fed;
* (d) scaling: doubling L_gb (E x 8) doubles the coil radius (within the tolerance argued there),
  and both radii are O(L_gb);
* bad inputs raise ``ValueError``.
"""

import equinox as eqx
import jax
import numpy as np
import pytest

import jaxrod
from jaxrod.scenes import get_scene
from jaxrod.scenes.contact import rod_coiling
from long_runs import jit_long_run

SMALL = {"n_nodes": 61, "length": 0.5, "youngs_modulus": 1.5e5, "duration": 3.5}
SAVE_EVERY = 4  # 20 ms between frames at the scene dt of 5 ms
# the scene defaults the runs keep: radius h [m], density rho [kg/m^3], gravity g [m/s^2]
H, RHO, G = 1e-3, 1200.0, 9.81


def gravito_bending_length(E, h=H, rho=RHO, g=G):
    """``L_gb = (EI / (rho A g))^(1/3) = (E h^2 / (4 rho g))^(1/3)`` [m] of a solid circular rod
    (computed here, not taken from the scene's reference)."""
    return (E * np.pi * h**4 / 4 / (rho * np.pi * h**2 * g)) ** (1 / 3)


# ---------------------------------------------------------------------------------------------
# geometry of the laid-down curve (host-side, independent of the code under test)
# ---------------------------------------------------------------------------------------------
def laid_start(x, h, delta):
    """First node of the laid-down part: the run of nodes within the contact range ``z < h + delta``
    that ends at the free end (the rod is fed from node 0); ``N`` when the free end is off the floor."""
    on = x[:, 2] < h + delta
    j = len(on)
    while j > 0 and on[j - 1]:
        j -= 1
    return j


def laid_rest_length(x, rest_lengths, h, delta):
    """Rest (material) length [m] of the edges whose both ends lie on the floor."""
    return float(np.sum(rest_lengths[laid_start(x, h, delta) :]))


def laid_turning(x, h, delta, skip=0.0):
    """``(turning [rad], total |turning| [rad], arc [m])`` of the in-plane tangent along the laid
    part, leaving out its first-laid ``skip`` metres (measured from the free end)."""
    p = x[laid_start(x, h, delta) :, :2]
    e = np.diff(p, axis=0)
    if len(e) < 2:
        return 0.0, 0.0, 0.0
    le = np.linalg.norm(e, axis=1)
    keep = np.cumsum(le[::-1])[::-1] > skip
    th = np.unwrap(np.arctan2(e[keep, 1], e[keep, 0]))
    if th.size < 2:
        return 0.0, 0.0, 0.0
    return float(th[-1] - th[0]), float(np.sum(np.abs(np.diff(th)))), float(np.sum(le[keep][1:]))


@jit_long_run  # 700 contact steps: compiled at XLA's default optimisation (tests/long_runs.py)
def _simulate(model, dt, duration, scheme, solver):
    return jaxrod.simulate(
        model,
        dt=dt,
        duration=duration,
        scheme=scheme,
        solver=solver,
        save_every=SAVE_EVERY,
        throw=False,
        fallback=False,  # Newton converges at every step by itself (no backward-Euler retry)
    )


@pytest.fixture(scope="module")
def coiling_runs():
    """Both stiffnesses in one compiled program: the stiff rod's array leaves (rod, start) are
    swapped into the soft model, whose static parts (clamp path, contacts) are the same."""
    soft = rod_coiling(**SMALL)
    stiff = rod_coiling(**{**SMALL, "youngs_modulus": 8 * SMALL["youngs_modulus"]})
    model_stiff = eqx.tree_at(lambda m: (m.rod, m.q0), soft.model, (stiff.model.rod, stiff.model.q0))
    out = []
    for scene, model in ((soft, soft.model), (stiff, model_stiff)):
        traj = _simulate(model, soft.dt, soft.duration, soft.scheme, soft.solver)
        out.append(
            {
                "scene": scene,
                "lgb": gravito_bending_length(float(model.rod.youngs_modulus)),
                "x": np.asarray(traj.positions),
                "t": np.asarray(traj.times),
                "converged": np.asarray(traj.stats.converged),
                "iterations": np.asarray(traj.stats.iterations),
                "jacobians": np.asarray(traj.stats.jacobians),
            }
        )
    return out


def test_newton_converges_through_touchdown_and_coiling(coiling_runs):
    for run in coiling_runs:
        bad = np.flatnonzero(~run["converged"])
        dt = run["scene"].dt
        assert bad.size == 0, f"Newton failed at steps {bad[:5]} (t = {(bad[:5] + 1) * dt} s)"
        assert run["iterations"].mean() < 20


def test_a_rod_never_penetrates_floor_by_more_than_delta(coiling_runs):
    for run in coiling_runs:
        ref = run["scene"].reference
        depth = ref["radius_m"] - run["x"][..., 2]  # > 0: surface below z = 0
        assert depth.max() <= ref["delta_m"]
        # ... and it does rest on the floor (the contact range is reached)
        assert depth.max() > -ref["delta_m"]


def test_b_laid_down_length_grows_like_fed_length(coiling_runs):
    """Material conservation: the rest length on the floor, ``laid``, follows the fed length
    ``v (t - t_touch)``. They differ by (i) the excess arc of the hanging boundary layer (the
    curve from vertical to the floor) over its height, which scales with L_gb (a few L_gb; larger
    during the first fold), (ii) the weight-stretch the shortening hanging part gives back,
    ``sag (1 - (S/L)^2)`` for hanging rest length S (removed here), (iii) one edge of resolution of
    the 'on the floor' test. So the corrected lag lies in (-1 edge, 3 L_gb) once 5 L_gb are fed,
    and ``laid`` grows at the feed speed (10 %: the lag still breathes by ~L_gb over the window)."""
    for run in coiling_runs:
        scene, x, t = run["scene"], run["x"], run["t"]
        ref = scene.reference
        h, delta, v, lgb = ref["radius_m"], ref["delta_m"], ref["feed_speed_m_s"], run["lgb"]
        rest = np.asarray(scene.model.rod.rest_lengths)
        L = rest.sum()
        laid = np.array([laid_rest_length(xi, rest, h, delta) for xi in x])
        fed = np.clip(v * (t - ref["touchdown_time_s"]), 0.0, None)
        assert laid[0] == 0.0 and laid[-1] > 0.5 * fed[-1]
        late = fed > 5 * lgb
        given_back = ref["stretch_m"] * (1.0 - ((L - laid) / L) ** 2)
        lag = (fed - laid - given_back)[late]
        assert lag.min() > -rest.max()
        assert lag.max() < 3 * lgb
        rate = np.polyfit(t[late], laid[late], 1)[0]
        assert rate == pytest.approx(v, rel=0.1)


def test_c_laid_down_curve_coils(coiling_runs):
    """Coiling, not folding: the tangent of the laid curve turns one way, by more than a turn,
    and the turning keeps growing as rod is fed (2 L_gb of the first-laid fold left out)."""
    for run in coiling_runs[:1]:  # the soft rod lays ~1.7 turns in 3.5 s; the stiff one < 1
        ref = run["scene"].reference
        h, delta, lgb = ref["radius_m"], ref["delta_m"], run["lgb"]
        x = run["x"]
        mid = len(x) // 2
        turn_mid, _, _ = laid_turning(x[mid], h, delta, skip=2 * lgb)
        turn_end, total_end, _ = laid_turning(x[-1], h, delta, skip=2 * lgb)
        assert abs(turn_end) > 2 * np.pi
        assert abs(turn_end) > abs(turn_mid) + np.pi
        assert np.sign(turn_end) == np.sign(turn_mid)
        assert abs(turn_end) > 0.9 * total_end  # one sense of rotation (folding would cancel)


def test_d_coil_radius_scales_with_gravito_bending_length(coiling_runs):
    """R = arc / turning of the laid curve at the end, its first-laid 3 L_gb (the fold that falls
    over at touchdown) left out. Expected ratio 2 for E x 8. Tolerance 25 %: R ~ L_gb holds for a
    hanging height >> L_gb and a slow feed, while here the height falls to ~6 L_gb of the stiff
    rod and the feed is v^2/(g L_gb) = 0.07 / 0.035 (so the two runs are not exactly similar);
    the soft rod has only ~2 edges per L_gb; and the stiff rod has laid less than a turn.
    L_gb is computed here from its formula (:func:`gravito_bending_length`), and the scene's
    reference is checked against it. Measured (2-core CPU, this run): R = 1.67 L_gb (soft, 1.7
    turns) and 1.40 L_gb (stiff, 0.74 turn), ratio 1.67."""
    radii = []
    assert coiling_runs[0]["lgb"] == pytest.approx(1.47e-2, abs=5e-5)  # E = 0.15 MPa (module docstring)
    for run in coiling_runs:
        ref = run["scene"].reference
        h, delta, lgb = ref["radius_m"], ref["delta_m"], run["lgb"]
        turn, _, arc = laid_turning(run["x"][-1], h, delta, skip=3 * lgb)
        assert abs(turn) > np.pi  # at least half a turn to measure on
        R = arc / abs(turn)
        assert 0.5 * lgb < R < 4 * lgb  # R ~ L_gb
        radii.append(R)
    lgb_ratio = coiling_runs[1]["lgb"] / coiling_runs[0]["lgb"]
    assert lgb_ratio == pytest.approx(2.0, rel=1e-12)  # E x 8: L_gb ~ E^(1/3)
    for run in coiling_runs:  # the scene's reference is that same length
        assert run["scene"].reference["gravito_bending_length_m"] == pytest.approx(run["lgb"], rel=1e-12)
    assert radii[1] / radii[0] == pytest.approx(lgb_ratio, rel=0.25)


def test_scene_is_registered_and_consistent():
    scene = get_scene("rod-coiling", n_nodes=21, length=0.4, duration=1.0, imperfection=0.0)
    ref = scene.reference
    m = scene.model
    # the straight hanging start is in equilibrium: each edge's stretch carries the weight below it
    q0, aux = m.q0, m.init_aux(m.q0)
    zero = jax.numpy.zeros_like(q0)
    r = np.asarray(jax.jit(lambda q: m.residual(q, zero, zero, 0.0, aux))(q0))
    free = ~np.asarray(m.fixed_mask())
    weight = float(m.rod.node_masses()[1]) * 9.81
    assert np.abs(r[free]).max() < 1e-9 * weight
    assert ref["gravito_bending_length_m"] == pytest.approx((4e5 * 1e-6 / (4 * 1200 * 9.81)) ** (1 / 3))
    assert float(m.q0[-1, 2]) == pytest.approx(ref["radius_m"] + ref["feed_speed_m_s"] * ref["touchdown_time_s"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"feed_speed": -0.1}, "feed_speed must be > 0"),
        ({"feed_speed": 0.0}, "feed_speed must be > 0"),
        ({"length": 0.0}, "length must be > 0"),
        ({"length": -1.0}, "length must be > 0"),
        ({"youngs_modulus": -1.0}, "youngs_modulus must be > 0"),
        ({"gap": -1e-3}, "gap must be finite and >= 0"),
        ({"duration": 10.0}, "lower the clamp into the floor"),
        ({"gap": 1e-3}, "stretch under its own weight"),
        ({"n_nodes": 2}, "n_nodes must be >= 3"),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rod_coiling(**kwargs)
