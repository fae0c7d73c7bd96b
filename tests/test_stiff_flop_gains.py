"""STIFF-FLOP's optional pressure gain per chamber pair (``stiff_flop_model(pressure_gain=(3,))``,
``jaxrod calibrate stiff-flop --fit-chamber-gains``): a gain on pair k is the same physics as
multiplying pair k's measured pressure by it, and only pair k's."""

import numpy as np
import pytest

from jaxrod.integrate import solve_static
from jaxrod.scenes.stiff_flop import stiff_flop_model

TIMES = np.array([0.0, 1.0])
P = np.array([[0.0, 0.0, 0.0], [0.6e5, 0.25e5, 0.4e5]])  # [Pa]: all three pairs active, unequal


def _tip(model):
    state, _ = solve_static(model, t=1.0)
    return np.asarray(model.tip_point(state.q))


def test_gain_per_pair_equals_scaled_pressures_of_that_pair():
    g = np.array([1.3, 0.7, 1.1])
    with_gains = _tip(stiff_flop_model(TIMES, P, n_segments=1, pressure_gain=g))
    scaled = _tip(stiff_flop_model(TIMES, P * g, n_segments=1))
    unscaled = _tip(stiff_flop_model(TIMES, P, n_segments=1))
    np.testing.assert_allclose(with_gains, scaled, rtol=0, atol=1e-10)
    # the gains matter (a gain applied to the wrong pair, or to all, would not give `scaled`)
    assert np.linalg.norm(with_gains - unscaled) > 1e-3
    wrong = _tip(stiff_flop_model(TIMES, P * g[[1, 2, 0]], n_segments=1))
    assert np.linalg.norm(with_gains - wrong) > 1e-3


def test_gain_shape_is_checked():
    with pytest.raises(ValueError, match="pressure_gain must be a scalar or \\(3,\\)"):
        stiff_flop_model(TIMES, P, n_segments=1, pressure_gain=np.ones(2))


def test_one_gain_and_gains_per_pair_exclude_each_other():
    import argparse

    from jaxrod.cases import stiff_flop_calibration as cal

    args = cal.add_arguments(argparse.ArgumentParser()).parse_args(["--fit-gain", "--fit-chamber-gains"])
    with pytest.raises(ValueError, match="--fit-gain .* --fit-chamber-gains"):
        cal.run_from_args(args)
