"""The STIFF-FLOP model's nonlinear options (jaxrod.models.pcs.nonlinear): each against its closed
form on a one-segment rod without gravity (the static equilibrium is then the uniform internal
wrench balancing the chamber's), the neutral settings against the linear model, and the checks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

from jaxrod.integrate import solve_static
from jaxrod.models.pcs import Chamber, NonlinearOptions, PCSModel, PCSRod
from jaxrod.scenes.stiff_flop import recording_inputs, stiff_flop_model
from jaxrod.datasets.stiff_flop import read_recording

E, A, J, L, D = 2.0e5, 3.0e-4, 1.5e-8, 0.05, 8.5e-3
AP = 2.0e-5  # cap area [m^2]


def _rod(viscosity=0.0):
    return PCSRod(length=L, n_segments=1, area=jnp.asarray(A), second_moments=jnp.asarray([2 * J, J, J]),
                  youngs_modulus=jnp.asarray(E), shear_modulus=jnp.asarray(E / 3), density=jnp.asarray(1000.0),
                  viscosity=jnp.asarray(viscosity), rest_strain=jnp.asarray([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0]]))


def _model(P, **options):
    # one chamber on local +z at distance D: it bends the rod about local y (u_y = P a_p D / E J)
    return PCSModel(_rod(), chambers=(Chamber((0.0, D), AP, pressure=P),), section_radius=0.0125,
                    nonlinear=NonlinearOptions(**options))


def _strain(model):
    st, _ = solve_static(model, t=0.0)
    return np.asarray(model.strains(st.q))[0]


def test_chamber_growth_closed_form():
    P, beta = 1.0e5, 2.0e-6  # the cap area grows by 20% at 1 bar
    xi = _strain(_model(P, chamber_growth=beta))
    F = P * AP * (1 + beta * P)
    assert xi[1] == pytest.approx(F * D / (E * J), rel=1e-9)
    assert xi[3] - 1.0 == pytest.approx(F / (E * A), rel=1e-9)
    np.testing.assert_allclose(xi[[0, 2, 4, 5]], 0.0, atol=1e-12)
    # and it differs from the constant-area answer by the factor 1 + beta P
    assert _strain(_model(P))[1] == pytest.approx(P * AP * D / (E * J), rel=1e-9)


def test_stretch_update_closed_form():
    P = 3.0e5  # F / (E A) = 0.1 (the law's force peaks at 4/27 = 0.148 E A, lambda = 1.5)
    xi = _strain(_model(P, stretch_update=True))
    F = P * AP
    lam = brentq(lambda x: E * A * (x - 1) / x**3 - F, 1.0, 1.5)  # E A (lambda - 1) lambda^-3 = P a_p
    assert xi[3] == pytest.approx(lam, rel=1e-9)
    assert xi[1] == pytest.approx(F * D * lam**3.5 / (E * J), rel=1e-9)
    assert lam > 1.14  # the linear answer (1.1) is well away
    np.testing.assert_allclose(xi[[0, 2, 4, 5]], 0.0, atol=1e-12)


def test_neo_hookean_stretch_closed_form():
    # incompressible neo-Hookean (shear modulus E/3): N = (E A / 3)(lambda - lambda^-2) = P a_p and
    # M = E_t (J / lambda^2) (u / lambda) with E_t = (E/3)(2 lambda^2 + 1/lambda), arm D / sqrt(lambda)
    P = 6.0e5  # F / (E A) = 0.2: beyond TMTDyn's limit point (4/27), still an equilibrium here
    xi = _strain(_model(P, stretch_update="neo-hookean"))
    F = P * AP
    lam = brentq(lambda x: E * A / 3 * (x - x**-2) - F, 1.0, 2.0)
    Et = E / 3 * (2 * lam**2 + 1 / lam)
    assert xi[3] == pytest.approx(lam, rel=1e-9)
    assert xi[1] == pytest.approx(F * D / math.sqrt(lam) / (Et * J / lam**3), rel=1e-9)
    assert lam > 1.21  # the linear answer 1.2
    np.testing.assert_allclose(xi[[0, 2, 4, 5]], 0.0, atol=1e-12)


@pytest.mark.parametrize("nu", [1.0, 2.0, 1.5])
def test_power_law_damping_force(nu):
    # at rest shape and zero acceleration the residual with viscosity minus the one without is
    # the viscous force ell D xidot |c xidot|^(nu - 1), D = mu (Jx, 3 Jy, 3 Jz, 3 A, A, A)
    mu = 50.0
    v = jnp.asarray([0.3, -2.0, 1.5, 0.04, -0.01, 0.02])
    q = jnp.zeros(6)
    models = []
    for visc in (mu, 0.0):
        models.append(PCSModel(_rod(visc), nonlinear=NonlinearOptions(damping_power=nu)))
    diff = np.asarray(models[0].residual(q, v, q, 0.0, None) - models[1].residual(q, v, q, 0.0, None))
    Dd = mu * np.array([2 * J, 3 * J, 3 * J, 3 * A, A, A])
    c = np.array([L, L, L, 1, 1, 1])
    vv = np.asarray(v)
    np.testing.assert_allclose(diff, L * Dd * vv * np.abs(c * vv) ** (nu - 1), rtol=1e-10)


def test_neutral_options_reproduce_linear_model():
    # beta = 0, nu = 1, no stretch update: the extended residual is the linear one (Load1: with the
    # measured tip load), at an arbitrary state and time
    rec = read_recording("Load1")
    times, p, load = recording_inputs(rec)
    base = stiff_flop_model(times, p, load, youngs_modulus=1.3e5, viscosity=1000.0)
    ext = stiff_flop_model(times, p, load, youngs_modulus=1.3e5, viscosity=1000.0, chamber_growth=0.0,
                           damping_power=1.0)
    assert ext.nonlinear.active and base.nonlinear is None
    rng = np.random.default_rng(0)
    q, v, a = (jnp.asarray(rng.normal(scale=s, size=18)) for s in (0.5, 2.0, 20.0))
    # one program: evaluated op by op, the two residuals compiled ~200 small programs
    both = jax.jit(lambda q, v, a: (base.residual(q, v, a, 18.1, None), ext.residual(q, v, a, 18.1, None)))
    r0, r1 = (np.asarray(r) for r in both(q, v, a))
    np.testing.assert_allclose(r1, r0, rtol=1e-10, atol=1e-12 * np.abs(r0).max())


def test_option_checks():
    with pytest.raises(ValueError, match="damping_power"):
        _model(1e4, damping_power=0.5)
    with pytest.raises(ValueError, match="chamber_growth"):
        _model(1e4, chamber_growth=math.inf)
    with pytest.raises(ValueError, match="stretch_update"):
        _model(1e4, stretch_update="mooney")


@pytest.mark.skipif(__import__("jaxrod.datasets.stiff_flop", fromlist=["find_data_dir"]).find_data_dir() is None,
                    reason="STIFF-FLOP data not found (shared/data/stiff-flop)")
def test_calibrate_cli_option_errors():
    """`jaxrod calibrate stiff-flop`: the model options refuse --no-fit (FITTED is the default model's)
    and a damping power below 1, before anything is compiled."""
    import argparse

    from jaxrod.cases import stiff_flop_calibration as cal

    for argv, match in ((["--no-fit", "--stretch", "neo-hookean"], "no model option"),
                        (["--no-fit", "--fit-chamber-growth"], "no model option"),
                        (["--damping-power", "0.5"], "damping-power")):
        args = cal.add_arguments(argparse.ArgumentParser()).parse_args(argv)
        with pytest.raises(ValueError, match=match):
            cal.run_from_args(args)
