"""DisMech soft-limb real2sim (jaxrod.cases.soft_limb, calibration/real2sim_soft_limb.py; reader:
jaxrod.datasets.soft_limb):
the CSV reader's validation on small synthetic files, the exact gradient of a tip-position loss
through the static solve against central differences, and the script's fit on a few frames of
the real measured data (skipped when ../shared/data is absent; the GPL-3.0 file is never copied).

All rod evaluations use one small rod (21 nodes) so the test file compiles one program."""

import csv
import importlib.util
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrod.cases import soft_limb as sl
from jaxrod.datasets import soft_limb as sld

N_NODES = 21
DATA = sld.find_data_path() or Path("absent")
SCRIPT = Path(__file__).resolve().parents[1] / "calibration" / "real2sim_soft_limb.py"


# ---- (b) reader validation on synthetic CSVs ------------------------------------------------
def _header():
    return [
        "Timestamp (millisec since midnight today)",
        "Test time",
        "pwm_duty_limb0_fwd",
    ] + [f"tagid_{c}_{i}" for i in sld.TAG_IDS for c in ("x", "y")]


def _tag_row(k):
    """A synthetic arc of 9 tags (pixels, image y down), bending a little more with k."""
    s = np.linspace(0.0, 1.0, 9)
    ang = -0.2 - 0.3 * s * (1 + 0.1 * k)
    x = 30 + 60 * np.concatenate([[0], np.cumsum(np.cos(ang[:-1]))])
    y = 50 - 60 * np.concatenate([[0], np.cumsum(np.sin(ang[:-1]))])
    return [v for xy in zip(x, y) for v in xy]


def _write(path, rows, header=None):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(_header() if header is None else header)
        for r in rows:
            w.writerow(r)
    return path


def _good_rows(n=5, missing=2):
    rows = []
    for k in range(
        missing
    ):  # tags not yet detected: all zeros (and a repeated time, as in the real file)
        rows.append([1000 + 200 * k, 0.0, 0.0] + [0.0] * 18)
    for k in range(n):
        rows.append([2000 + 200 * k, 0.2 * (k + 1), 0.1] + _tag_row(k))
    return rows


def test_reader_accepts_valid_file_and_masks_missing_rows(tmp_path):
    rows = _good_rows() + [[""] * 21, [""] * 21]  # two trailing empty rows are dropped
    data = sld.read_soft_limb_csv(_write(tmp_path / "ok.csv", rows))
    assert data.tags_px.shape == (7, 9, 2)
    np.testing.assert_array_equal(
        data.valid, [False, False, True, True, True, True, True]
    )
    assert np.all(np.isnan(data.tags_px[:2]))
    np.testing.assert_array_equal(sld.select_frames(data, 2), [2, 3])
    np.testing.assert_array_equal(sld.select_frames(data, "1:5:2"), [3, 5])
    al = sl.derive_alignment(data)
    # by construction every synthetic polyline is 8 x 60 px long
    assert math.isclose(al.path_length_px, 480.0, rel_tol=1e-12)
    assert math.isclose(al.scale, 0.15 / 480.0, rel_tol=1e-12)
    np.testing.assert_allclose(al.tag_arclength, np.linspace(0, 0.15, 9), atol=1e-12)
    m = al.to_metres(data.tags_px[2])
    assert (
        np.allclose(m[0], 0.0) and m[1, 0] > 0 and m[1, 1] < 0
    )  # image y down -> z = -y


@pytest.mark.parametrize(
    "case, match",
    [
        ("columns", "has 20 columns, the header has 21"),
        ("time", "time is not monotonic"),
        ("all_missing", "no row has all 9 tags"),
        ("text", "not a number"),
        ("header", "header lacks column"),
        ("inner_empty", "is empty"),
        ("duplicate_valid_time", "have the same time"),
    ],
)
def test_reader_rejects_malformed_files(tmp_path, case, match):
    rows = _good_rows()
    header = None
    if case == "columns":
        rows[3] = rows[3][:-1]
    elif case == "time":
        rows[4][1] = 0.1  # earlier than the row before
    elif case == "all_missing":
        rows = [[1000 + 200 * k, 0.2 * k, 0.0] + [0.0] * 18 for k in range(4)]
    elif case == "text":
        rows[3][5] = "abc"
    elif case == "header":
        header = _header()[:-1] + ["tagid_y_110"]
    elif case == "inner_empty":
        rows.insert(3, [""] * 21)
    elif case == "duplicate_valid_time":
        rows[4][1] = rows[3][1]
    path = _write(tmp_path / f"{case}.csv", rows, header)
    with pytest.raises(ValueError, match=match):
        sld.read_soft_limb_csv(path)


def test_hold_out_tags_are_checked():
    assert sl._parse_hold_out("none") == () and sl._parse_hold_out(None) == ()
    assert sl._parse_hold_out("109,108") == (108, 109) and sl._parse_hold_out(109) == (109,)
    with pytest.raises(ValueError, match="101 is the clamped origin"):
        sl._parse_hold_out("101")
    with pytest.raises(ValueError, match="not a tag id"):
        sl._parse_hold_out("tip")
    with pytest.raises(ValueError, match="fewer than 2 tags"):
        sl._parse_hold_out(list(range(102, 109)))
    with pytest.raises(ValueError, match="nothing to fit"):
        sl.run_real2sim("unused.csv", hold_out=None, in_sample_fit=False)


def test_reader_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        sld.read_soft_limb_csv(tmp_path / "nope.csv")


# ---- (c) exact gradient vs central differences ----------------------------------------------
@pytest.fixture(scope="module")
def problem():
    al = sl.Alignment(
        scale=1.0,
        tag_arclength=np.linspace(0.0, 0.15, 9),
        length=0.15,
        path_length_px=0.15,
        path_length_std_px=0.0,
        spacing="uniform",
    )
    return sl.SoftLimbProblem(al, n_nodes=N_NODES, beta=-0.18)


def test_limb_curvature_is_in_plane_component(problem):
    """Positive kappa bends the rod towards +z (relative to its base direction) and stays planar."""
    state = problem.initial_state()
    target = np.zeros((9, 2))
    # loss_and_grad (not tag_positions) so that the whole file compiles one rod program
    *_, (q_up, _, ok_up, _, up) = problem.loss_and_grad(
        np.array([5.0, 5.0]), target, state
    )
    *_, (q_down, _, ok_down, _, down) = problem.loss_and_grad(
        np.array([-5.0, -5.0]), target, state
    )
    assert bool(ok_up) and bool(ok_down)
    assert (
        float(jnp.max(jnp.abs(q_up[:, 1]))) < 1e-12
        and float(jnp.max(jnp.abs(q_down[:, 1]))) < 1e-12
    )
    assert float(up[-1, 1]) > float(down[-1, 1]) + 0.02


def test_tip_loss_gradient_matches_central_differences(problem):
    state = problem.initial_state()
    weights = np.zeros(9)
    weights[-1] = 1.0  # tip-position loss |x_tip - x*|^2 [mm^2]
    theta0 = np.array([-8.0, 1.5])
    reach = problem.loss_and_grad(np.array([-6.0, -2.0]), np.zeros((9, 2)), state)
    target = np.asarray(reach[3][4]) + np.array(
        [0.002, -0.003]
    )  # a reachable shape, shifted
    value, g_theta, g_nuis, out = problem.loss_and_grad(theta0, target, state, weights)
    assert bool(out[2]) and float(value) > 1.0
    warm = (out[0], out[1])

    def loss(theta, nuis=None):
        v, _, _, o = problem.loss_and_grad(theta, target, warm, weights, nuis=nuis)
        assert bool(o[2])
        return float(v)

    h = 1e-3  # [1/m]
    for i in range(2):
        e = np.zeros(2)
        e[i] = h
        fd = (loss(theta0 + e) - loss(theta0 - e)) / (2 * h)
        assert abs(float(g_theta[i]) - fd) <= 1e-5 * abs(fd), (i, float(g_theta[i]), fd)
    # and with respect to the base angle (gravity direction and rotation of the shape)
    hb = 1e-5
    nu = np.asarray(problem.nuis)
    fd = (loss(theta0, nu + [hb, 0]) - loss(theta0, nu - [hb, 0])) / (2 * hb)
    assert abs(float(g_nuis[0]) - fd) <= 1e-5 * abs(fd), (float(g_nuis[0]), fd)


# ---- (a) the script on a few frames of the real data -----------------------------------------
@pytest.mark.skipif(
    not DATA.is_file(),
    reason=f"measured soft-limb data not found at {DATA} (GPL-3.0, kept outside the repository in "
    "../shared/data/dismech-soft-limb/; not distributed with jaxrod)",
)
def test_script_fits_a_few_real_frames(tmp_path):
    spec = importlib.util.spec_from_file_location("real2sim_soft_limb", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    result, summary = script.run(
        [
            "--data",
            str(DATA),
            "--frames",
            "0:170:42",
            "--nodes",
            str(N_NODES),
            "--base-frames",
            "3",
            "--quiet",
            "--out",
            str(tmp_path),
        ]
    )
    held, full = result["fits"]["held_out"], result["fits"]["all_tags"]
    assert result["fit"] is held["fit"] and len(held["fit"].rows) == 5
    assert np.all(held["fit"].converged) and np.all(full["fit"].converged)
    ev_h, ev_f = held["evaluation"], full["evaluation"]
    # the tip really was out of the held-out fit's loss: its error is a prediction, larger than
    # the in-sample tag errors of the same fit and than the tip residual of the all-tags fit
    assert list(ev_h.held_out) == ["held-out markers"] and not ev_f.held_out
    tip_pred = ev_h.per_marker[-1]
    assert tip_pred == pytest.approx(float(np.mean(held["fit"].tip_error_mm)), rel=1e-12)
    assert tip_pred > ev_h.in_sample.mean and tip_pred > ev_f.per_marker[-1]
    assert tip_pred < 4.0 and ev_h.in_sample.mean < 1.5, ev_h.summary()
    assert 0.25 < summary["scale_mm_per_px"] < 0.31
    text = sl.format_summary(summary)
    assert "never in the loss: prediction" in text and "not comparable" in text
    assert summary["alignment"] == "tip-free" and not summary["alignment_uses_tag_109"]
    assert "held out, tip-free alignment: prediction" in text and "USES tag 109" in text
    assert "compile" in text and "in-sample residual" in text
    with open(tmp_path / "real2sim_soft_limb_frames.csv") as fh:
        assert "tip_error_held_out_mm" in fh.readline()
    for name in (
        "real2sim_soft_limb.png",
        "real2sim_soft_limb_frames.csv",
        "real2sim_soft_limb_summary.json",
    ):
        assert (tmp_path / name).is_file()


# ---- (d) the tip-free alignment: nothing derived from tag 109 ---------------------------------
def _uneven_rows(n=5):
    """Synthetic frames with unequal tag spacing (px): 60, 50, 70, 60, 40, 80, 55 between tags
    101-108 (sum 415) and 45 to the tip, bending a little more with k."""
    steps = np.array([60.0, 50, 70, 60, 40, 80, 55, 45])
    rows = []
    for k in range(n):
        ang = -0.1 - 0.05 * (1 + 0.2 * k) * np.arange(8)
        x = 30 + np.concatenate([[0], np.cumsum(steps * np.cos(ang))])
        y = 50 - np.concatenate([[0], np.cumsum(steps * np.sin(ang))])
        rows.append([2000 + 200 * k, 0.2 * (k + 1), 0.1] + [v for xy in zip(x, y) for v in xy])
    return rows


def test_tip_free_alignment_values_and_tag_109_invariance(tmp_path):
    """Tip-free: the 101 -> 108 polyline (415 px) is 7/8 x 0.15 m; tags 102-108 at their cumulative
    polyline x scale; tag 109 at 0.15 m (rod end) or 108 + the 55-px interval (last-interval).
    Moving tag 109's pixels in every frame changes none of it (and the to-metre map of tags
    101-108), while it does change the all-tags alignment."""
    rows = _uneven_rows()
    data = sld.read_soft_limb_csv(_write(tmp_path / "a.csv", rows))
    moved_rows = [r[:-2] + [r[-2] + 37.0 * (1 + i), r[-1] - 23.0] for i, r in enumerate(rows)]
    moved = sld.read_soft_limb_csv(_write(tmp_path / "b.csv", moved_rows))
    scale = 0.13125 / 415.0  # m/px, by hand
    cum = np.array([0, 60, 110, 180, 240, 280, 360, 415.0])
    for tip, s109 in (("rod-end", 0.15), ("last-interval", (415 + 55) * scale)):
        a = sl.derive_alignment(data, alignment="tip-free", tip_arclength=tip)
        b = sl.derive_alignment(moved, alignment="tip-free", tip_arclength=tip)
        assert not a.uses_tip and a.reference_tag == 108
        assert math.isclose(a.scale, scale, rel_tol=1e-12)
        np.testing.assert_allclose(a.tag_arclength, np.append(cum * scale, s109), rtol=1e-12)
        assert a.scale == b.scale
        np.testing.assert_array_equal(a.tag_arclength, b.tag_arclength)
        np.testing.assert_array_equal(a.to_metres(data.tags_px)[:, :8], b.to_metres(moved.tags_px)[:, :8])
        assert "no tag 109" in a.provenance["scale"] and "no tag 109" in a.provenance["tag 109 arc length"]
    full_a = sl.derive_alignment(data, alignment="all-tags")
    full_b = sl.derive_alignment(moved, alignment="all-tags")
    assert full_a.uses_tip and full_a.scale != full_b.scale  # the original definition reads tag 109
    assert math.isclose(full_a.scale, 0.15 / 460.0, rel_tol=1e-12)


def test_alignment_options_are_checked(tmp_path):
    data = sld.read_soft_limb_csv(_write(tmp_path / "a.csv", _uneven_rows(2)))
    with pytest.raises(ValueError, match="alignment must be one of"):
        sl.derive_alignment(data, alignment="no-tip")
    with pytest.raises(ValueError, match="tip_arclength must be one of"):
        sl.derive_alignment(data, alignment="tip-free", tip_arclength="end")
    with pytest.raises(ValueError, match="applies to alignment='tip-free' only"):
        sl.derive_alignment(data, alignment="all-tags", tip_arclength="last-interval")
    with pytest.raises(ValueError, match="length must be a positive"):
        sl.derive_alignment(data, alignment="tip-free", length=-0.15)


def test_tip_free_held_out_fit_does_not_see_tag_109(tmp_path):
    """End to end (synthetic frames, the file's 21-node program): the held-out fit with the
    tip-free alignment gives bit-identical curvatures, base angle and tags 102-108 when tag 109's
    pixels are moved by tens of px in every frame; only the tip error changes."""
    rows = _uneven_rows(3)
    moved = [r[:-2] + [r[-2] + 25.0, r[-1] + 30.0] for r in rows]
    kw = dict(frames=None, n_nodes=N_NODES, base_frames=2, in_sample_fit=False, progress=False)
    a = sl.run_real2sim(_write(tmp_path / "a.csv", rows), **kw)
    b = sl.run_real2sim(_write(tmp_path / "b.csv", moved), **kw)
    fa, fb = a["fits"]["held_out"], b["fits"]["held_out"]
    assert a["alignment"].alignment == "tip-free"  # the default
    assert fa["base_fit"]["beta_deg"] == fb["base_fit"]["beta_deg"]
    np.testing.assert_array_equal(fa["fit"].theta, fb["fit"].theta)
    np.testing.assert_array_equal(fa["fit"].tags[:, :8], fb["fit"].tags[:, :8])
    assert np.all(fa["fit"].tip_error_mm != fb["fit"].tip_error_mm)


def test_tip_extrapolation_baselines_by_hand():
    """A straight rod along x: tags every 18.75 mm to 108 (131.25 mm), the tip 16 mm beyond 108.
    Own-length and nominal chords put it 18.75 mm beyond: 2.75 mm off; the mean measured gap
    (uses tag 109) is exact."""
    from jaxrod.cases import real_data_baselines as rb

    x = np.append(np.arange(8) * 18.75, 131.25 + 16.0) * 1e-3
    T = np.zeros((4, 9, 2))
    T[..., 0] = x
    al = sl.Alignment(scale=1.0, tag_arclength=np.linspace(0, 0.15, 9), length=0.15,
                      path_length_px=1.0, path_length_std_px=0.0, spacing="uniform",
                      alignment="tip-free", reference_tag=108, reference_length=0.13125)
    got = {r["key"]: r for r in rb.tip_extrapolation_baselines(T, al)}
    for key in ("chord_own", "chord_nominal", "chord_model_gap"):
        assert got[key]["mean_mm"] == pytest.approx(2.75, abs=1e-9) and not got[key]["uses_tip"]
    assert got["chord_mean_tip_gap"]["mean_mm"] == pytest.approx(0.0, abs=1e-9)
    assert got["chord_mean_tip_gap"]["uses_tip"]
    with pytest.raises(ValueError, match=r"targets must be \(F, 9, 2\)"):
        rb.tip_extrapolation_baselines(T[:, :8], al)
