"""The STIFF-FLOP recordings reader (jaxrod.datasets.stiff_flop): checks against facts stated in the
data README (row counts, sampling, the preprocessed rest tip, the chamber-pair directions) and the
paper's derived section values; numpy only, no compilation. Skipped without the data."""

import numpy as np
import pytest

from jaxrod.datasets import stiff_flop as sf

pytestmark = pytest.mark.skipif(sf.find_data_dir() is None, reason="STIFF-FLOP data not found (shared/data/stiff-flop)")


@pytest.fixture(scope="module")
def recordings():
    return {n: sf.read_recording(n) for n in sf.RECORDINGS}


def test_rows_sampling_and_rest_tip(recordings):
    # README table: 1094 / 1109 / 795 rows, 0-54.65 / 0-55.4 / 0-39.7 s, tip (0, 0, 0.0645) at t = 0
    for name, rows, end in (("NoLoad", 1094, 54.65), ("Load1", 1109, 55.4), ("Load2", 795, 39.7)):
        r = recordings[name]
        assert r.times.size == rows and abs(r.times[-1] - end) < 1e-9
        np.testing.assert_allclose(r.tip[0], [0, 0, 0.0645], atol=1e-12)
        assert (r.tip_force is None) == (name == "NoLoad")


def test_pressurised_pairs_bend_away_from_their_chambers(recordings):
    """README: under one pressurised pair the tip moves directly away from it (pairs at +90, -30
    and 210 deg): at each of NoLoad's nine static times one pair is pressurised (0.27-1.11 bar)
    and the tip azimuth lies within 4 deg of the pair's angle + 180 (measured: within 2.3 deg)."""
    r = recordings["NoLoad"]
    for t in sf.STATIC_TIMES["NoLoad"]:
        p = r.pressures[r.rows(t)[0]]
        pair = int(np.argmax(p))
        assert p[pair] > 0.25e5 and np.all(np.delete(p, pair) < 0.01e5)
        tip = r.tip[r.rows(t)[0]]
        a = np.degrees(np.arctan2(tip[1], tip[0]))
        away = sf.PARAMETERS["pair_angles_deg"][pair] + 180.0
        assert abs((a - away + 180) % 360 - 180) < 4.0, (t, pair, a)
        assert np.hypot(tip[0], tip[1]) > 0.005  # a clear bend (5 mm or more sideways)


def test_derived_parameters():
    # README: a_c = 3.094e-4 m^2, a_p = 1.963e-5 m^2 (1.96 N per chamber per bar)
    assert abs(sf.PARAMETERS["section_area"] - 3.094e-4) < 5e-8
    assert abs(sf.PARAMETERS["chamber_area"] * 1e5 - 1.963) < 1e-3


def test_smoothing_is_matlab_moving_average():
    x = np.arange(15.0) ** 2
    s = sf.smooth_moving_average(x, 10)  # MATLAB: span 10 -> 9, shrinking symmetric windows at the ends
    expected = [x[:1].mean(), x[:3].mean(), x[:5].mean(), x[:7].mean(), x[0:9].mean(), x[1:10].mean()]
    np.testing.assert_allclose(s[:6], expected, rtol=1e-14)
    np.testing.assert_allclose(s[-1], x[-1])
    np.testing.assert_allclose(s[-2], x[-3:].mean())


def test_metric_and_baseline(recordings):
    r = recordings["NoLoad"]
    rows = r.rows(sf.STATIC_TIMES["NoLoad"])
    e, rel = sf.constant_shape_error(r, rows)
    # the rest-shape baseline at the nine static times: mean tip displacement from rest
    assert abs(e - np.mean(np.linalg.norm(r.tip[rows] - r.tip[0], axis=1))) < 1e-15 and abs(rel - e / 0.0645) < 1e-15
    assert 0.015 < e < 0.03  # measured 21.8 mm: TMTDyn's fitted models reach 6 mm here
    with pytest.raises(ValueError, match="outside the recording"):
        r.rows([60.0])


def test_bad_files(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("time_s,p0_Pa\n0,1\n")
    with pytest.raises(ValueError, match="missing column"):
        sf.read_recording(p)
    good = sf.read_recording("NoLoad").path.read_text().splitlines()
    good[5] = good[5].replace(",", ",x", 1)
    p.write_text("\n".join(good))
    with pytest.raises(ValueError, match=r"bad.csv:6: column 'p0_Pa' is not a number"):
        sf.read_recording(p)
    with pytest.raises(FileNotFoundError, match="TMTDyn"):
        sf.read_recording(tmp_path / "none.csv")


def test_trailing_smoothing_is_causal_and_a_mean():
    """The causal option never looks ahead: a step at sample k changes nothing before k, reaches
    its full height after the window (9 samples), and equals the mean of the last 9 samples."""
    x = np.zeros((40, 2))
    x[20:] = 1.0
    y = sf.trailing_moving_average(x, 9)
    assert np.all(y[:20] == 0.0)
    assert np.allclose(y[20:29, 0], np.arange(1, 10) / 9) and np.all(y[28:] == 1.0)
    r = np.random.default_rng(1).standard_normal((30, 3))
    assert np.allclose(sf.trailing_moving_average(r, 9)[15], r[7:16].mean(axis=0), rtol=0, atol=1e-15)
    assert np.allclose(sf.trailing_moving_average(r, 9)[2], r[:3].mean(axis=0), rtol=0, atol=1e-15)
    # the centred TMTDyn smoothing does look ahead: it moves before the step
    assert sf.smooth_moving_average(x, 10)[19, 0] > 0.0
