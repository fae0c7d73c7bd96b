"""Anisotropic floor friction laws of the DER floor and the continuum snake (issue 23 item 6).

Friction laws against closed forms (sliding at 45 deg with mu = 0.1 along, 0.5 across: force
angle and dissipation of each law; the ellipse law's force is the maximiser of the dissipation on
the friction ellipse; forward/backward asymmetry); the ``der-snake`` scene: it moves toward its
head with PyElastica's anisotropic coefficients, does not move (to a stated tolerance) with
isotropic friction, and a new gait (wave amplitudes, period) reuses the compiled program.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.der.contact import (
    FRICTION_LAWS,
    FloorContact,
    anisotropic_coulomb_friction,
    smooth_coulomb_friction,
)
from jaxrod.models.der.waves import CurvatureWave, bspline_basis

FN, NU = 2.0, 1e-3
T = jnp.asarray([1.0, 0.0, 0.0])
U45 = jnp.asarray([1.0, 1.0, 0.0]) / np.sqrt(2.0)  # 1 m/s at 45 deg to the rod: full slip (>> nu)


def _force(law, u=U45, mu_a=0.1, mu_l=0.5, **kw):
    return np.asarray(anisotropic_coulomb_friction(u, FN, T, mu_a, mu_l, NU, law=law, **kw))


@pytest.mark.parametrize(
    "law, angle_deg, dissipation",
    [
        ("projected", np.degrees(np.arctan(5.0)), 0.5 * (0.1 + 0.5)),  # 78.69 deg, 0.300
        ("ellipse", np.degrees(np.arctan(25.0)), np.sqrt(0.5 * (0.01 + 0.25))),  # 87.71 deg, 0.3606
        ("componentwise", np.degrees(np.arctan(5.0)), (0.1 + 0.5) / np.sqrt(2.0)),  # 78.69 deg, 0.4243
    ],
)
def test_friction_law_angle_and_dissipation_at_45_degrees(law, angle_deg, dissipation):
    F = _force(law)
    assert np.degrees(np.arctan2(-F[1], -F[0])) == pytest.approx(angle_deg, abs=1e-9)
    # dissipation -F.u in units of f_n |u|
    assert -F @ np.asarray(U45) / FN == pytest.approx(dissipation, rel=1e-9)
    assert F[2] == 0.0
    assert {"projected": 78.69, "ellipse": 87.71, "componentwise": 78.69}[law] == pytest.approx(angle_deg, abs=5e-3)


def test_ellipse_law_maximises_dissipation_on_the_friction_ellipse():
    """The ellipse law's force lies on the ellipse (F_a/mu_a)^2 + (F_l/mu_l)^2 = f_n^2 and is the
    point of it that dissipates most (so it lies on the ellipse's normal at that point), for
    several slip directions and an asymmetric pair; the other laws dissipate less or leave it."""
    mu_a, mu_l = 0.1, 0.5
    phi = np.linspace(0.0, 2 * np.pi, 200001)
    ell = FN * np.stack([mu_a * np.cos(phi), mu_l * np.sin(phi)], axis=1)  # the whole ellipse
    for deg in (10.0, 45.0, 80.0, 135.0):
        u = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
        F = _force("ellipse", jnp.asarray(u))
        assert (F[0] / mu_a) ** 2 + (F[1] / mu_l) ** 2 == pytest.approx(FN**2, rel=1e-12)
        best = np.max(-ell @ u[:2])
        assert -F @ u == pytest.approx(best, rel=1e-9)
        # normal of the ellipse at F: grad of (F_a/mu_a)^2 + (F_l/mu_l)^2, parallel to -u
        n = np.array([F[0] / mu_a**2, F[1] / mu_l**2])
        assert abs(n[0] * u[1] - n[1] * u[0]) < 1e-9 * np.linalg.norm(n)
        assert -_force("projected", jnp.asarray(u)) @ u <= best + 1e-12


def test_isotropic_limits_asymmetry_and_zero_slip():
    u = jnp.asarray([0.3, -0.2, 0.0])
    iso = np.asarray(smooth_coulomb_friction(u, FN, 0.4, NU))
    for law in ("projected", "ellipse"):
        np.testing.assert_allclose(_force(law, u, 0.4, 0.4), iso, rtol=1e-12)
    # componentwise with equal mu: each component its own Coulomb law, |F| = mu f_n sqrt(2)
    # at 45 deg, not mu f_n
    assert np.linalg.norm(_force("componentwise", U45, 0.4, 0.4)) == pytest.approx(0.4 * FN * np.sqrt(2.0))
    # forward/backward: mu_axial sliding toward +tangent, mu_backward toward -tangent
    for law in FRICTION_LAWS:
        fwd = _force(law, jnp.asarray([0.5, 0.0, 0.0]), 0.1, 0.5, mu_backward=0.3)
        back = _force(law, jnp.asarray([-0.5, 0.0, 0.0]), 0.1, 0.5, mu_backward=0.3)
        np.testing.assert_allclose(fwd, [-0.1 * FN, 0.0, 0.0], rtol=1e-9)
        np.testing.assert_allclose(back, [0.3 * FN, 0.0, 0.0], rtol=1e-9)
        # smooth (finite Jacobian) and zero at zero slip, also with the asymmetry
        J = jax.jacfwd(lambda v: anisotropic_coulomb_friction(v, FN, T, 0.1, 0.5, NU, law=law, mu_backward=0.3))(
            jnp.zeros(3)
        )
        assert np.all(np.isfinite(np.asarray(J)))
        assert np.all(_force(law, jnp.zeros(3), mu_backward=0.3) == 0.0)


def test_floor_contact_law_options_and_bad_input():
    floor = FloorContact(mu=0.1, mu_lateral=0.5, mu_backward=0.2, law="ellipse")
    assert floor.anisotropic and floor.asymmetric and floor.law == "ellipse"
    assert not FloorContact(mu=0.1, mu_lateral=0.5).asymmetric  # the default law is unchanged
    assert FloorContact(mu=0.1, mu_lateral=0.5).law == "projected"
    fn = jnp.asarray([FN])
    F = np.asarray(floor.anisotropic_friction(U45[None], fn, T[None]))[0]
    np.testing.assert_allclose(F, _force("ellipse"), rtol=1e-12)
    with pytest.raises(ValueError, match="law must be one of .*'projected', 'ellipse', 'componentwise'.*got 'box'"):
        FloorContact(mu=0.1, law="box")
    with pytest.raises(ValueError, match="mu_backward must be finite and >= 0"):
        FloorContact(mu=0.1, mu_backward=-0.2)


def test_curvature_wave_formula_and_bad_input():
    sigma = np.array([0.0, 0.25, 0.5, 1.0])
    B = bspline_basis(sigma, 6)
    np.testing.assert_allclose(B.sum(axis=1), 1.0, atol=1e-14)  # partition of unity
    np.testing.assert_allclose(B[0], np.eye(6)[0], atol=1e-14)  # A(0) = c_0, A(1) = c_5
    np.testing.assert_allclose(B[-1], np.eye(6)[-1], atol=1e-14)
    direction = np.tile([0.0, 1.0], (4, 1))
    w = CurvatureWave(coefficients=np.full(6, 2.0), period=2.0, wave_length=1.0, phase=0.0, ramp_time=1.0,
                      sigma=sigma, basis=B, voronoi=np.full(4, 0.01), direction=direction)
    t = 1.3  # after the ramp: kappa = 2 sin(2 pi (t/2 - sigma))
    kappa = 2.0 * np.sin(2 * np.pi * (t / 2.0 - sigma))
    np.testing.assert_allclose(w.curvature(t), kappa, rtol=1e-12)
    kb = np.asarray(w(t, jnp.zeros((4, 2))))
    np.testing.assert_allclose(kb[:, 1], 2 * np.tan(0.5 * kappa * 0.01), rtol=1e-12)
    np.testing.assert_allclose(w.curvature(0.5), 0.5 * 2.0 * np.sin(2 * np.pi * (0.25 - sigma)), rtol=1e-12)
    with pytest.raises(ValueError, match="period"):
        CurvatureWave(coefficients=np.ones(6), period=-1.0, wave_length=1.0, phase=0.0, ramp_time=1.0,
                      sigma=sigma, basis=B, voronoi=np.full(4, 0.01), direction=direction)
    with pytest.raises(ValueError, match="coefficients"):
        CurvatureWave(coefficients=np.array([1.0, np.nan, 1, 1, 1, 1]), period=1.0, wave_length=1.0, phase=0.0,
                      ramp_time=1.0, sigma=sigma, basis=B, voronoi=np.full(4, 0.01), direction=direction)
    with pytest.raises(ValueError, match="natural_curvature_fn must be a callable eqx.Module"):
        from jaxrod.models.der import DERModel, DERRod

        rod = DERRod.straight(4, 0.1, youngs_modulus=1e6, density=1000.0, radius=0.005)
        DERModel(rod, natural_curvature_fn=lambda t, kb: kb)


# ---- the der-snake scene ---------------------------------------------------------------------------
SNAKE_DT, SNAKE_T = 2e-3, 6.0  # three periods of 2 s (the first ramps the wave in)
# the runs compared with the PyElastica one (other friction, other gait): two periods, their end
# compared with that run at the same time (saves every 0.5 s); a third period changes no sign
COMPARE_T = 4.0
COMPARE_SAVE = int(round(COMPARE_T / (250 * SNAKE_DT)))  # index of the save at COMPARE_T


@pytest.fixture(scope="module")
def snake_runs():
    """The scene at 21 nodes with PyElastica's coefficients over SNAKE_T, then (same compiled
    program: only array leaves change) isotropic friction, lateral < axial friction, and another
    gait over COMPARE_T; the number of traces of the wave after each run."""
    from jaxrod.scenes.der_snake import der_snake, forward_distance

    traces = [0]
    original = CurvatureWave.__call__

    def counting(self, t, kappa_bar):
        traces[0] += 1  # runs only while JAX traces
        return original(self, t, kappa_bar)

    CurvatureWave.__call__ = counting
    try:
        sc = der_snake(n_nodes=21, dt=SNAKE_DT)
        floor = sc.model.contacts[0]
        mu = float(floor.mu)

        def with_floor(model, fwd, back, lat):
            return eqx.tree_at(lambda m: (m.contacts[0].mu, m.contacts[0].mu_backward, m.contacts[0].mu_lateral),
                               model, tuple(jnp.asarray(v, dtype=float) for v in (fwd, back, lat)))

        def run(model, duration=COMPARE_T):
            tr = jaxrod.simulate(model, dt=SNAKE_DT, n_steps=int(round(duration / SNAKE_DT)), save_every=250,
                                 scheme=sc.scheme)
            assert bool(np.asarray(tr.stats.converged).all())
            x = np.asarray(tr.positions)
            return np.asarray(forward_distance(tr.positions)), x.mean(axis=1)[:, 1] - x[0].mean(axis=0)[1], traces[0]

        wave = sc.model.natural_curvature_fn
        gait2 = eqx.tree_at(lambda m: (m.natural_curvature_fn.coefficients, m.natural_curvature_fn.period),
                            sc.model, (0.5 * wave.coefficients, jnp.asarray(1.5, dtype=float)))
        runs = {
            "pyelastica": run(sc.model, SNAKE_T),
            "isotropic": run(with_floor(sc.model, mu, mu, mu)),
            "lateral_weaker": run(with_floor(sc.model, 2 * mu, 2 * mu, mu)),
            "gait2": run(gait2),
        }
    finally:
        CurvatureWave.__call__ = original
    return runs


def test_snake_moves_toward_its_head_and_new_gaits_do_not_recompile(snake_runs):
    fwd, lat, count = snake_runs["pyelastica"]
    assert count > 0
    assert [snake_runs[k][2] for k in snake_runs] == [count] * 4, "a new gait or friction recompiled"
    # forward (+x, toward the last node, where the wave starts) and steadily: every period gains
    per_period = np.diff(fwd[::4])  # saves every 0.5 s: one per period
    assert fwd[-1] > 0.05 and np.all(per_period[1:] > 0.02)
    assert abs(lat[-1]) < 0.5 * fwd[-1]
    # another gait (half the amplitude, period 1.5 s) reaches the program and moves differently
    # (measured at COMPARE_T = 4 s: 0.0282 m against 0.0745 m)
    assert abs(snake_runs["gait2"][0][-1] - fwd[COMPARE_SAVE]) > 0.01


def test_snake_direction_is_set_by_the_friction_anisotropy(snake_runs):
    fwd = snake_runs["pyelastica"][0][COMPARE_SAVE]
    iso, weak = snake_runs["isotropic"][0][-1], snake_runs["lateral_weaker"][0][-1]
    print(f"forward distance in {COMPARE_T} s: PyElastica's coefficients {fwd:.4f} m, isotropic {iso:.4f} m, "
          f"sideways weaker {weak:.4f} m")
    # isotropic friction: a slow backward drift (measured at 4 s -0.0042 m against +0.0745 m; at 6 s
    # -0.0087 m against +0.132 m), as Transeth et al. report for their isotropic snake; not the zero
    # of resistive-force theory (Coulomb friction is not linear in the slip)
    assert -0.15 * fwd < iso < 0.0
    # sideways friction weaker than axial: the snake goes the other way (tail first; measured -0.0714 m)
    assert weak < -0.02


@pytest.mark.slow
def test_gradient_of_travelled_distance_wrt_wave_amplitude_matches_finite_differences():
    """d(distance travelled in 2 s)/d(amplitude scale) of an 11-node snake: the forward derivative
    (implicit differentiation of every Newton step, through floor contact and friction) against
    central differences with step 1e-4 (measured 0.0359227 m per unit scale; FD truncation and
    Newton noise, with rtol 1e-13, are below 1e-6 relative: steps 1e-3 and 1e-4 differ by 1.1e-5
    relative, 1e-2 and 1e-3 by 1.7e-4).

    One parameter: forward mode, and one compiled program (the JVP, whose primal output is the
    distance) serves the derivative and both finite-difference runs: cold, ``jax.grad`` plus a
    separate forward program took 52 s CPU, reverse mode without the fallback ladder 41 s, this
    JVP 36 s (2026-11-27, one core, load ~9). Both modes use the same implicit-function rule;
    reverse mode through the DER time loop is checked in test_der_gradients.py, through the
    fallback ladder in test_failures.py."""
    from jaxrod.scenes.der_snake import der_snake, forward_distance

    dt, n = 2e-3, 1000
    sc = der_snake(n_nodes=11, dt=dt)
    solver = jaxrod.NewtonSolver(rtol=1e-13, atol=1e-15)
    c0 = sc.model.natural_curvature_fn.coefficients

    def distance(scale):
        model = eqx.tree_at(lambda m: m.natural_curvature_fn.coefficients, sc.model, scale * c0)
        # fallback=False: under jit the backward-Euler retry would be compiled into every step;
        # a step that does not converge raises instead
        tr = jaxrod.simulate(model, dt=dt, n_steps=n, save_every=n, scheme=sc.scheme, solver=solver,
                             fallback=False)
        return forward_distance(tr.positions)[-1]

    value_and_slope = jax.jit(lambda s: jax.jvp(distance, (s,), (jnp.ones_like(s),)))
    g = float(value_and_slope(jnp.asarray(1.0))[1])
    eps = 1e-4
    fd = float((value_and_slope(jnp.asarray(1.0 + eps))[0] - value_and_slope(jnp.asarray(1.0 - eps))[0]) / (2 * eps))
    assert g > 0.03  # a larger wave goes further
    assert g == pytest.approx(fd, rel=1e-5)
