"""jaxrod.analysis on synthetic signals whose period, amplitude and decay are known exactly."""

import math

import numpy as np
import pytest

from jaxrod import analysis


def test_zero_crossings_of_a_line_are_exact():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([-1.0, 1.0, 3.0, -3.0])  # up at t = 0.5, down at t = 2.5
    np.testing.assert_allclose(analysis.zero_crossings(t, y), [0.5])
    np.testing.assert_allclose(analysis.zero_crossings(t, y, direction="down"), [2.5])
    np.testing.assert_allclose(analysis.zero_crossings(t, y, direction="both"), [0.5, 2.5])
    np.testing.assert_allclose(analysis.zero_crossings(t, y + 2.0, level=2.0), [0.5])


@pytest.mark.parametrize("direction", ["up", "down", "both"])
def test_period_of_a_sampled_sinusoid(direction):
    period, dt = 2.5, 0.01
    t = np.arange(0.0, 11.0, dt)
    y = 0.3 * np.sin(2 * np.pi * t / period + 0.7)
    assert analysis.oscillation_period(t, y, direction=direction) == pytest.approx(period, rel=1e-4)
    assert analysis.oscillation_frequency(t, y, direction=direction) == pytest.approx(2 * np.pi / period, rel=1e-4)


def test_period_about_a_level_with_uneven_sampling():
    period = 1.7
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0.0, 12.0, 3000))
    y = 5.0 + 2.0 * np.cos(2 * np.pi * t / period)
    assert analysis.oscillation_period(t, y, level=5.0) == pytest.approx(period, rel=1e-3)
    # about zero the signal never crosses: no estimate
    assert math.isnan(analysis.oscillation_period(t, y))


def test_one_period_from_a_signal_starting_at_zero():
    """The cantilever case: displacement starts at exactly 0 and rises, ~one period recorded with
    coarse steps; t = 0 must count as the first upward crossing."""
    period, dt = 12.6, 0.5
    t = np.arange(0.0, 13.0 + dt / 2, dt)
    y = 0.01 * np.sin(2 * np.pi * t / period)
    assert y[0] == 0.0
    np.testing.assert_allclose(analysis.zero_crossings(t, y)[0], 0.0)
    assert analysis.oscillation_period(t, y) == pytest.approx(period, rel=2e-3)


def test_too_short_records_give_nan():
    t = np.linspace(0.0, 0.8, 50)
    y = np.sin(2 * np.pi * t)  # less than one period: one upward crossing
    assert math.isnan(analysis.oscillation_period(t, y))
    assert math.isnan(analysis.oscillation_frequency(t, y))


def test_amplitude():
    t = np.linspace(0.0, 10.0, 20001)
    y = 1.5 + 0.25 * np.sin(2 * np.pi * t / 3.0)
    assert analysis.oscillation_amplitude(y) == pytest.approx(0.25, rel=1e-6)
    assert analysis.oscillation_amplitude(y, about=1.5) == pytest.approx(0.25, rel=1e-6)
    assert analysis.oscillation_amplitude(y, about=0.0) == pytest.approx(1.75, rel=1e-6)


@pytest.mark.parametrize("tau", [4.0, 15.0])
def test_decay_time_constant(tau):
    t = np.arange(0.0, 20.0, 0.002)
    y = np.exp(-t / tau) * np.sin(2 * np.pi * t / 1.3 + 0.4)
    assert analysis.decay_time_constant(t, y) == pytest.approx(tau, rel=1e-2)


def test_decay_of_undamped_signal_is_infinite():
    t = np.arange(0.0, 20.0, 0.01)
    assert analysis.decay_time_constant(t, np.sin(2 * np.pi * t / 2.0)) > 1e6


def test_relative_error():
    assert analysis.relative_error(1.02, 1.0) == pytest.approx(0.02)
    assert analysis.relative_error(-0.98, -1.0) == pytest.approx(0.02)


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        analysis.zero_crossings([0.0, 1.0, 2.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="increasing"):
        analysis.zero_crossings([0.0, 1.0, 1.0], [0.0, 1.0, -1.0])
    with pytest.raises(ValueError, match="direction"):
        analysis.zero_crossings([0.0, 1.0], [-1.0, 1.0], direction="sideways")
