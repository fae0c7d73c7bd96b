"""Pressure chambers (Chamber, jaxrod.models.pcs.actuation) and a rigid tip body on the PCS rod (TipBody):
closed-form constant curvature and elongation, the pressure gradient against central finite
differences, the tip body against a dead load and the closed-form generalised inertia, bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.cosserat import Samples
from jaxrod.models.pcs import Chamber, PCSModel, PCSRod, TipBody

L, R, E, RHO = 0.05, 0.0125, 205e3, 1820.0
A_CAP, D = math.pi * 0.0025**2, 0.0085


def rod(n=2):
    return PCSRod.circular(L, n, R, youngs_modulus=E, density=RHO)


def chamber(offset, pressure, profile=None):
    return Chamber(offset, A_CAP, pressure=pressure, profile=profile)


@pytest.fixture(scope="module")
def solve():
    """One compiled static solve of a 2-segment rod with chambers at +z (P1) and +y (P2)."""

    def f(p1, p2):
        m = PCSModel(rod(), chambers=(chamber((0.0, D), p1), chamber((D, 0.0), p2)), section_radius=R)
        st, res = jaxrod.solve_static(m, throw=False)
        return m.strains(st.q), m.observe(st.q, st.v, None)["positions"][-1], res.converged

    return jax.jit(f)


def test_uniform_curvature_and_elongation(solve):
    """Cap force P A and moment P A d: every segment takes the curvature P A d / (E J) about the axis
    perpendicular to the offset and the stretch P A / (E A_c) (both chambers add their axial force);
    the tip lies on the closed-form arc, bent away from the pressurised chamber."""
    p1, p2 = 240e3, 100e3
    xi, tip, ok = solve(p1, p2)
    assert bool(ok)
    J, Ac = math.pi * R**4 / 4, math.pi * R**2
    ky, kz = p1 * A_CAP * D / (E * J), -p2 * A_CAP * D / (E * J)
    eps = (p1 + p2) * A_CAP / (E * Ac)
    expect = np.array([0.0, ky, kz, 1.0 + eps, 0.0, 0.0])
    np.testing.assert_allclose(np.asarray(xi), np.tile(expect, (2, 1)), rtol=0, atol=1e-9 * max(ky, 1))
    # closed-form arc of curvature k in the plane spanned by x and the bending direction
    k = math.hypot(ky, kz)
    lam = (1 + eps) / k
    along = lam * math.sin(k * L)
    side = lam * (1 - math.cos(k * L))
    # d t/ds = u x t at s = 0: (0, ky, kz) x (1, 0, 0) = (0, kz, -ky): away from both chambers
    away = np.array([0.0, kz, -ky]) / k
    np.testing.assert_allclose(np.asarray(tip), [along, *(side * away[1:])], atol=1e-9)
    assert tip[2] < 0 and tip[1] < 0  # away from +z and +y chambers
    assert k * L > 0.5  # a large bend (> 28 deg): the arc is not a small-deflection check


def test_tip_gradient_wrt_pressure_vs_central_fd():
    """d tip_z / d P through the static solve (implicit differentiation) under gravity, with a
    tip body, against central differences (nonlinear regime: the rod is bent ~40 deg)."""
    body = TipBody(0.0135, (0.007, 0.0, 0.0), np.diag([3.8e-7, 4e-7, 4e-7]))

    def tip_z(p):
        m = PCSModel(rod(3), gravity=(0.0, 0.0, -9.81), tip_body=body, chambers=(chamber((0.0, D), p),),
                     section_radius=R)
        st, _ = jaxrod.solve_static(m, throw=False)
        return m.observe(st.q, st.v, None)["positions"][-1, 2]

    # one compiled program (the jvp; its primal output is the value) gives the slope and both FD runs
    value_and_slope = jax.jit(lambda p: jax.jvp(tip_z, (p,), (jnp.ones_like(p),)))
    p0, h = jnp.asarray(50e3), 50.0
    fd = (value_and_slope(p0 + h)[0] - value_and_slope(p0 - h)[0]) / (2 * h)
    assert float(value_and_slope(p0)[1]) == pytest.approx(float(fd), rel=1e-5)
    assert abs(float(fd)) > 2e-8  # m/Pa (measured 5.4e-8: 5.4 mm per bar)


def test_tip_body_weight_matches_dead_tip_force():
    """A tip body with its centre of mass at the tip frame origin loads the rod statically like the
    dead tip force -m g (horizontal cantilever, large deflection). One compiled program: the weight
    moves from the body (mass m) to the dead wrench (body mass 1e-12 kg, i.e. ~1e-11 N left)."""
    m3, g = 0.05, 9.81

    @jax.jit
    def tip(m_body, w_dead):
        body = TipBody(m_body, (0.0, 0.0, 0.0), jnp.eye(3) * 1e-6)
        wrench = jnp.zeros(6).at[5].set(w_dead)
        m = PCSModel(rod(3), gravity=(0.0, 0.0, -g), tip_body=body, tip_wrench=wrench)
        st, res = jaxrod.solve_static(m, throw=False)
        return m.observe(st.q, st.v, None)["positions"][-1], res.converged

    (a, ok_a), (b, ok_b) = tip(m3, 0.0), tip(1e-12, -m3 * g)
    assert bool(ok_a) and bool(ok_b)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-11)
    assert a[2] < -0.005  # m (measured 7.6 mm sag): the load matters


def test_tip_body_generalised_inertia_closed_form():
    """Straight one-segment rod: the tip body adds to the mass matrix its kinetic-energy
    coefficients, torsion I_a L^2, axial m L^2, bending about y m (L^2/2 + c L)^2 + I_t L^2 (tip
    displacement kappa L^2 / 2, rotation kappa L, centre of mass c along the axis)."""
    m3, c, Ia, It = 0.0135, 0.00725, 3.8e-7, 4.2e-7
    body = TipBody(m3, (c, 0.0, 0.0), np.diag([Ia, It, It]))
    model, plain = PCSModel(rod(1), tip_body=body), PCSModel(rod(1))

    @jax.jit  # one program: evaluated op by op, these compiled ~300 small programs
    def quantities(q, v):
        z = jnp.zeros(6)
        return (model.mass_matrix(z), plain.mass_matrix(z), model.energy(q, v) - model.energy(q, z),
                v @ model.mass_matrix(q) @ v)

    q = jnp.array([0.3, 8.0, -5.0, 0.05, 0.02, -0.01])
    v = jnp.array([1.0, -20.0, 30.0, 0.5, 0.3, -0.2])
    M1, M0, kinetic, vMv = (np.asarray(x) for x in quantities(q, v))
    dM = M1 - M0
    assert dM[0, 0] == pytest.approx(Ia * L**2, rel=1e-10)
    assert dM[3, 3] == pytest.approx(m3 * L**2, rel=1e-10)
    assert dM[1, 1] == pytest.approx(m3 * (L**2 / 2 + c * L) ** 2 + It * L**2, rel=1e-10)
    np.testing.assert_allclose(dM, dM.T, atol=1e-18)
    # bent and moving: the kinetic energy (tip body included) is v^T M(q) v / 2 with the mass matrix
    # of the inverse dynamics (two code paths: twist quadrature vs the recursion's d h / d qdd)
    assert float(kinetic) == pytest.approx(0.5 * float(vMv), rel=1e-9)


def test_bad_chamber_input():
    with pytest.raises(ValueError, match=r"chambers\[0\] does not fit in the cross-section.*section_radius = 0\.0125"):
        PCSModel(rod(), section_radius=R, chambers=(chamber((0.0, 0.011), 1e4),))  # 11 mm + 2.5 mm > 12.5 mm
    with pytest.raises(ValueError, match=r"absolute pressure >= 0.*got -120000 Pa"):
        chamber((0.0, D), 1.0, Samples(jnp.array([0.0, 1.0]), jnp.array([0.0, -1.2e5])))
    with pytest.raises(ValueError, match="area"):
        Chamber((0.0, D), 0.0, pressure=1e4)
    # a list (or one Chamber) is taken as a tuple; an element of another type is refused
    assert isinstance(PCSModel(rod(), chambers=[chamber((0.0, D), 1e4)]).chambers, tuple)
    with pytest.raises(TypeError, match=r"chambers must hold Chamber objects, got str at chambers\[0\]"):
        PCSModel(rod(), chambers=["chamber"])
    with pytest.raises(ValueError, match=r"chambers\[0\]: PCS chambers are pressure-controlled.*'volume'.*CosseratModel"):
        PCSModel(rod(), chambers=(Chamber((0.0, D), A_CAP, volume=1e-6),))
    with pytest.raises(ValueError, match=r"volume-controlled.*pressure_at needs pressure="):
        Chamber((0.0, D), A_CAP, volume=1e-6).pressure_at(0.0)
