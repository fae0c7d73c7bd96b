"""Tendon actuation of the Cosserat shooting model (Till et al. sec. 5.2, spec 7.2) against closed
forms: a straight tendon makes a circular arc, a tendon anchored at mid-length an arc then a
straight line; the base reaction of a helical tendon balances its pull; gradients vs finite
differences; a tension ramp through the time loop; the same tendons on DER and PCS (closed forms,
the three models against each other, PCS gradients); pressure chambers on DER; bad input.

Closed form used (derived here, not by the code under test): cut the rod and its straight tendon at
any ``s`` inside the tendon's span; the part beyond carries no external load, so the backbone's
internal force is ``-tau t`` (``t``: tendon tangent) and its moment ``tau r e2`` for a tendon at
``r e1``. The tendon stays parallel to the axis, so the curvature is ``u2 = tau r / EI`` exactly
(any load, not only small ones), the axial strain ``v3 = 1 - tau / EA`` (1 for Kirchhoff), and the
tip of a rod of length L bent in the (x, z) plane lies at
``(v3 (1 - cos(u2 L)) / u2, 0, v3 sin(u2 L) / u2)``. Beyond the termination the cut carries
nothing: straight, unstrained.

One compiled program serves the first three tests, the DER comparison and the grasped object:
the static solve of a two-tendon rod (A to the tip, a helical routing that is straight at rate 0;
B anchored at mid-length, sampled routing) with ``(tau_A, tau_B, offset_A, rate_A)`` and the tip
body's values as array leaves. The
gradient test has its own small program (forward-mode derivative and, for the finite
differences, its primal output): measured 65 s against 324 s for the same derivative of the
two-tendon RK4 rod, on this 2-core machine at load ~10.
"""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrod.models.cosserat import (
    CosseratModel,
    CosseratRod,
    HelicalRouting,
    SampledRouting,
    Samples,
    StraightRouting,
    Tendon,
    solve_static_cosserat,
)
from jaxrod.models.cosserat.stepper import DEFAULT_SOLVER
from jaxrod.models.cosserat.actuation import routing_derivatives

L = 0.2
RADIUS = 1e-3
OFFSET = 5e-3
DISK = 0.01  # spacer-disk radius holding the channels [m]
N = 9  # grid points; node 4 sits at L/2


def rod():
    return CosseratRod.circular(L, RADIUS, youngs_modulus=207e9, density=8000.0)


def two_tendon_model(**kw):
    tendons = (
        Tendon(HelicalRouting(OFFSET, 0.0), tension=0.0),
        Tendon(SampledRouting(L, np.tile([OFFSET, 0.0], (5, 1))), tension=0.0, termination=L / 2),
    )
    return CosseratModel(rod(), n_points=N, tendons=tendons, section_radius=DISK, **kw)


#: mass profile of a grasped tip body (released at 1 s), for the grasped-object test; the tip
#: mass is 0 for the other tests
GRASP = Samples([0.0, 1.0, 1.001], [1.0, 1.0, 0.0])


@pytest.fixture(scope="module")
def model():
    return two_tendon_model(tip_mass_profile=GRASP)


def with_values(m, params):
    """``m`` with ``params = (tau_A [N], tau_B [N], offset_A [m], rate_A [rad/m])``."""
    return eqx.tree_at(
        lambda m: (m.tendons[0].tension, m.tendons[1].tension, m.tendons[0].routing.radius,
                   m.tendons[0].routing.rate),
        m, tuple(params),
    )


@pytest.fixture(scope="module")
def solve(model):
    """``solve(tau_a=, tau_b=, offset=, rate=, mass=, tip_force=, com=, gravity=, density=, t=) ->
    (y (N, 19), w (N, 18))`` of the static solve at time ``t`` [s]; the tip body's ``mass`` [kg]
    (centre of mass ``com`` [m] along the tip's d1), ``tip_force``, ``gravity`` [m/s^2] (along x)
    and the rod's ``density`` [kg/m^3] are array leaves too, so the grasped-object test shares
    this compiled program (tip mass 0 and no gravity: the tendon tests' rod)."""

    @jax.jit
    def run(params, body, t):
        mass, f_x, com, g_x, rho = body
        x = lambda v: jnp.stack([v, 0.0, 0.0])  # noqa: E731
        mm = eqx.tree_at(lambda m: (m.tip_mass, m.tip_force, m.tip_com, m.gravity, m.rod.density),
                         with_values(model, params), (mass, x(f_x), x(com), x(g_x), rho))
        st, _ = solve_static_cosserat(mm, t=t)
        return st.y, st.w

    def call(tau_a=0.0, tau_b=0.0, offset=OFFSET, rate=0.0, mass=0.0, tip_force=0.0, com=0.0, gravity=0.0,
             density=8000.0, t=0.0):
        return run(jnp.array([tau_a, tau_b, offset, rate]), jnp.array([mass, tip_force, com, gravity, density]),
                   jnp.asarray(t, dtype=float))

    return call


def arc(u2, v3, s):
    """Points at reference arc lengths ``s`` of the closed-form arc (module docstring)."""
    th = u2 * s
    return np.stack([v3 * (1 - np.cos(th)) / u2, 0 * s, v3 * np.sin(th) / u2], axis=-1)


def test_straight_tendon_bends_a_circular_arc(model, solve):
    """Curvature tau r / EI along the whole rod and every node on the closed-form arc."""
    r = model.rod
    EI, EA = float(r.K_bt[1]), float(r.K_se[2])
    for tau in (2.0, 40.0):  # bend angle 0.012 and 0.25 rad
        y, w = solve(tau_a=tau)
        u2, v3 = tau * OFFSET / EI, 1.0 - tau / EA
        u = np.asarray(w[:, 9:12])
        # measured (RK4, 8 intervals): 3e-15 and 1.2e-8 (tau = 40 N); positions 6e-13 L and 9e-8 L
        assert np.max(np.abs(u[:, 1] / u2 - 1.0)) < 1e-7
        assert np.max(np.abs(u[:, [0, 2]])) < 1e-9 * u2
        err = np.max(np.linalg.norm(np.asarray(y[:, :3]) - arc(u2, v3, model.grid()), axis=1))
        assert err < 1e-6 * L, err
        # base reaction: the tendon's pull, straight down the axis
        assert np.allclose(np.asarray(y[0, 7:10]), [0.0, 0.0, -tau], atol=1e-9 * tau)


def test_mid_length_termination_gives_arc_then_straight(model, solve):
    r = model.rod
    EI, EA = float(r.K_bt[1]), float(r.K_se[2])
    tau = 40.0
    y, w = solve(tau_b=tau)
    u2, v3 = tau * OFFSET / EI, 1.0 - tau / EA
    s = model.grid()
    first, second = s < L / 2, s >= L / 2  # the node at L/2 holds the values just beyond the anchor
    u = np.asarray(w[:, 10])
    # measured: 3e-9; positions 1.3e-8 L (arc) and 7e-8 L (straight part)
    assert np.max(np.abs(u[first] / u2 - 1.0)) < 1e-7
    assert np.max(np.abs(u[second])) < 1e-9 * u2
    assert np.max(np.abs(np.asarray(y[second, 7:13]))) < 1e-9 * tau
    p = np.asarray(y[:, :3])
    th = u2 * L / 2
    p_mid = arc(u2, v3, np.array(L / 2))
    straight = p_mid + (s[second] - L / 2)[:, None] * np.array([np.sin(th), 0.0, np.cos(th)])
    assert np.max(np.linalg.norm(p[first] - arc(u2, v3, s[first]), axis=1)) < 1e-6 * L
    assert np.max(np.linalg.norm(p[second] - straight, axis=1)) < 1e-6 * L


def test_helical_tendon_base_reaction_balances_its_pull(solve):
    """Whole rod plus tendon as one free body: the base force is the tendon pull -tau t(0) and the
    base moment that of the pull at the channel, for any routing (here one helix turn: r_s, r_ss
    enter the distributed loads and must add up to the termination load)."""
    tau = 20.0
    y, w = solve(tau_a=tau, rate=2 * np.pi / L)
    y0, w0 = np.asarray(y[0]), np.asarray(w[0])
    assert np.abs(np.asarray(y[-1, 0:2])).max() > 1e-4  # it did bend out of the axis
    rt = HelicalRouting(OFFSET, 2 * np.pi / L)
    r0, rs0, _ = (np.asarray(x) for x in routing_derivatives(rt, 0.0))
    u0, v0 = w0[9:12], w0[6:9]
    t_b = np.cross(u0, r0) + rs0 + v0  # base frame is the identity
    t_b /= np.linalg.norm(t_b)
    # RK4 error at 8 intervals per turn (measured 3.1e-5 and 7.2e-4; at 16 intervals 1.0e-6 and
    # 4.4e-5: fourth order, so the distributed loads do add up to the anchor's)
    assert np.allclose(y0[7:10], -tau * t_b, atol=1e-4 * tau)
    assert np.allclose(y0[10:13], np.cross(r0, -tau * t_b), atol=2e-3 * tau * OFFSET)


def test_tip_gradient_wrt_tension_and_offset_matches_finite_differences():
    """d tip / d tau and d tip / d offset (forward mode through the shooting solve's implicit
    derivative) vs central differences, for a helical tendon (0.2 rad of twist along the rod, so
    the tip moves in x and y); a small Euler grid keeps the derivative program cheap."""
    m = CosseratModel(rod(), n_points=5, integrator="euler", section_radius=DISK,
                      tendons=(Tendon(HelicalRouting(OFFSET, 1.0), tension=0.0),))

    @jax.jit
    def tip(params, tangent):
        def f(p):
            mm = eqx.tree_at(lambda m: (m.tendons[0].tension, m.tendons[0].routing.radius), m, (p[0], p[1]))
            return solve_static_cosserat(mm)[0].y[-1, :3]

        return jax.jvp(f, (params,), (tangent,))

    check_tip_gradient(tip, in_plane=0, out_of_plane=1)


def check_tip_gradient(tip, in_plane, out_of_plane):
    """``tip(params, tangent) -> (tip, d tip)`` at ``params = (tau [N], offset [m])``: the forward
    derivative vs central differences (step 1e-4 relative), for both parameters; the tip must also
    move out of the offset's plane (coordinate ``out_of_plane`` vs ``in_plane``)."""
    p0 = jnp.array([20.0, OFFSET])
    for i in range(2):
        e = jnp.eye(2)[i]
        _, d = tip(p0, e)
        h = 1e-4 * float(p0[i])
        fd = (np.asarray(tip(p0 + h * e, e)[0]) - np.asarray(tip(p0 - h * e, e)[0])) / (2 * h)
        assert np.abs(fd[out_of_plane]) > 1e-3 * np.abs(fd[in_plane])
        assert np.linalg.norm(np.asarray(d) - fd) < 1e-6 * np.linalg.norm(fd), (i, np.asarray(d), fd)


def test_kirchhoff_tendon_arc():
    tau = 40.0
    m = CosseratModel(rod(), n_points=5, kirchhoff=True, section_radius=DISK,
                      tendons=(Tendon(StraightRouting((0.0, OFFSET)), tension=tau),))
    st, _ = solve_static_cosserat(m)
    u1 = -tau * OFFSET / float(m.rod.K_bt[0])  # tendon at +d2 bends about -d1
    u = np.asarray(st.w[:, 9:12])
    # RK4 error at 4 intervals: measured 2.1e-7
    assert np.max(np.abs(u[:, 0] / u1 - 1.0)) < 1e-6
    k = abs(u1)
    p = np.asarray(st.y[-1, :3])
    err = np.linalg.norm(p - [0.0, (1 - np.cos(k * L)) / k, np.sin(k * L) / k])
    assert err < 1e-5 * L, err


# ---- routings ------------------------------------------------------------------------------------
def test_routing_derivatives_against_closed_forms():
    s = 0.07
    k, R0, ph = 30.0, 4e-3, 0.3
    r, rs, rss = (np.asarray(x) for x in routing_derivatives(HelicalRouting(R0, k, ph), s))
    a = ph + k * s
    assert np.allclose(r, R0 * np.array([np.cos(a), np.sin(a), 0]), atol=1e-15)
    assert np.allclose(rs, R0 * k * np.array([-np.sin(a), np.cos(a), 0]), atol=1e-13)
    assert np.allclose(rss, -R0 * k**2 * np.array([np.cos(a), np.sin(a), 0]), atol=1e-11)
    r, rs, rss = (np.asarray(x) for x in routing_derivatives(StraightRouting((1e-3, -2e-3)), s))
    assert np.allclose(r, [1e-3, -2e-3, 0]) and not rs.any() and not rss.any()
    # natural cubic spline through samples of a linear routing reproduces it and its slope exactly
    ss = np.linspace(0, L, 7)
    lin = SampledRouting(L, np.stack([1e-3 + 0.01 * ss, -0.02 * ss], axis=1))
    r, rs, rss = (np.asarray(x) for x in routing_derivatives(lin, s))
    assert np.allclose(r, [1e-3 + 0.01 * s, -0.02 * s, 0], atol=1e-15)
    assert np.allclose(rs, [0.01, -0.02, 0], atol=1e-13) and np.allclose(rss, 0, atol=1e-10)
    # and converges to a smooth routing (r_ss = 0 at both ends, as the natural spline assumes) at
    # O(h^4) in value, O(h^2) in r_ss (measured ratios 30 and 7 from 10 to 20 intervals)
    k = 2 * np.pi / L
    f = lambda x: 1e-3 * np.sin(k * x)  # noqa: E731
    errs = []
    for K in (11, 21):
        sp = SampledRouting(L, np.stack([f(np.linspace(0, L, K)), 0 * np.linspace(0, L, K)], axis=1))
        r, _, rss = (np.asarray(x) for x in routing_derivatives(sp, 0.105))  # mid-interval for both
        errs.append((abs(r[0] - f(0.105)), abs(rss[0] + k * k * f(0.105))))
    assert errs[1][0] < errs[0][0] / 10 and errs[1][1] < errs[0][1] / 3


# ---- bad input -----------------------------------------------------------------------------------
def test_bad_tendon_input_names_parameter_value_and_allowed():
    with pytest.raises(ValueError, match=r"tendons\[0\] leaves the cross-section.*0\.02.*section_radius = 0\.01"):
        CosseratModel(rod(), n_points=N, section_radius=DISK,
                      tendons=(Tendon(StraightRouting((0.02, 0.0)), tension=1.0),))
    with pytest.raises(ValueError, match=r"leaves the cross-section.*section_radius = 0\.001"):  # backbone radius
        CosseratModel(rod(), n_points=N, tendons=(Tendon(StraightRouting((OFFSET, 0.0)), tension=1.0),))
    with pytest.raises(ValueError, match=r"tendons\[1\]\.termination = 0\.3 m is outside the rod.*L = 0\.2"):
        CosseratModel(rod(), n_points=N, section_radius=DISK,
                      tendons=(Tendon(StraightRouting((OFFSET, 0.0))),
                               Tendon(StraightRouting((OFFSET, 0.0)), termination=0.3)))
    with pytest.raises(ValueError, match=r"Tendon\.tension must be finite and >= 0 N.*got -1\.0"):
        Tendon(StraightRouting((OFFSET, 0.0)), tension=-1.0)
    with pytest.raises(ValueError, match=r"Tendon\.profile\.values must be finite and >= 0"):
        Tendon(StraightRouting((OFFSET, 0.0)), tension=1.0, profile=Samples([0.0, 1.0], [0.0, -0.5]))


#: the time loops' shooting solver without its Levenberg-Marquardt fallback (which doubles the
#: compile time; these runs converge without it, and a step that did not would fail the tests)
NO_FALLBACK = dataclasses.replace(DEFAULT_SOLVER, fallback=None)


@pytest.mark.slow  # its own compiled time loop: the slowest test of this file
def test_tension_ramp_dynamics_settle_on_the_static_shape():
    """Through the time loop: a tension ramped in over 0.02 s (Samples profile), with Kelvin-Voigt
    damping (so the histories of v_s, u_s enter the Phi solve) and gravity (so u varies along s).
    Mid-ramp the rod moves; 0.3 s later it rests on the static solution at the final tension."""
    import jaxrod

    r = CosseratRod.circular(L, RADIUS, youngs_modulus=207e9, density=8000.0,
                             damping_bt=2e-3, damping_se=1e2)
    m = CosseratModel(r, n_points=5, integrator="euler", gravity=(-9.81, 0.0, 0.0), section_radius=DISK,
                      tendons=(Tendon(StraightRouting((OFFSET, 0.0)), tension=40.0,
                                      profile=Samples([0.0, 0.02], [0.0, 1.0])),))
    tr = jaxrod.simulate(m, dt=0.01, n_steps=30, solver=NO_FALLBACK)
    assert tr.v.shape[-1] == 18  # [q, w, v, u, v_s, u_s]
    static, _ = solve_static_cosserat(m, t=0.3)
    x0 = float(tr.positions[0, -1, 0])
    x_end = float(static.y[-1, 0])
    assert x_end - x0 > 1e-3  # the tendon lifts the tip by millimetres
    assert abs(float(tr.positions[-1, -1, 0]) - x_end) < 1e-6 * (x_end - x0)
    assert float(jnp.max(jnp.abs(tr.v[1, :, 0:3]))) > 1e-3  # moving during the ramp [m/s]
    assert float(jnp.max(jnp.abs(tr.v[-1, :, 0:3]))) < 1e-6


# ---- the same tendon on DER --------------------------------------------------------------------
def test_der_tendon_matches_cosserat_tip(model, solve):
    """The 1-tendon robot on a 21-node DER cantilever (cable polyline through the edge frames,
    loads = -tau dl/dq) against the shooting model (exact arc to 1e-8, tests above). DER bends
    along +y (its first material director for an x-axis rod); the Cosserat rod along +x with its
    axis z. Measured tip mismatch / deflection: 3e-4 at 2 N, 5.8e-3 at 40 N (1.4e-3 and 2.5e-2 at
    11 nodes: second order in the edge length)."""
    import jaxrod
    from jaxrod.models.der import DERModel, DERRod

    rod_d = DERRod.cantilever(21, L, radius=RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3)
    base = DERModel(rod_d, clamped_edges=(0,), section_radius=DISK,
                    tendons=(Tendon(StraightRouting((OFFSET, 0.0)), tension=1.0),))
    for tau, tol in ((2.0, 1e-3), (40.0, 1e-2)):
        st, _ = jaxrod.solve_static(eqx.tree_at(lambda m: m.tendons[0].tension, base, jnp.asarray(tau)))
        axial, lateral, out = np.asarray(st.q[-1, :3])
        y, _ = solve(tau_a=tau)
        cx, _, cz = np.asarray(y[-1, :3])
        assert abs(out) < 1e-12
        assert abs(lateral - cx) < tol * cx and abs(axial - cz) < tol * cx, (tau, lateral, cx, axial, cz)



# ---- the same tendons on DER and PCS -----------------------------------------------------------
# DER and PCS rods lie along world x with the section directions d1 = y, d2 = z; the Cosserat
# rod along z with d1 = x, d2 = y: a Cosserat point (x, y, z) is the DER/PCS point (z, x, y).
N_DER = 9  # cantilever nodes: 7.5 edges over L, s_t = L/2 at a quarter of an edge
N_PCS = 4  # segments: L/2 is a segment end
XI_REST = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])


def der_pcs_models():
    from jaxrod.models.der import DERModel, DERRod
    from jaxrod.models.pcs import Chamber, PCSModel, PCSRod

    tendons = two_tendon_model().tendons
    rod_d = DERRod.cantilever(N_DER, L, radius=RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3)
    rod_p = PCSRod.circular(L, N_PCS, RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3)
    chambers = (Chamber(jnp.zeros(2), CHAMBER_AREA, pressure=0.0),
                Chamber(jnp.array([OFFSET, 0.0]), CHAMBER_AREA, pressure=0.0))
    return (DERModel(rod_d, clamped_edges=(0,), section_radius=DISK, tendons=tendons, chambers=chambers),
            PCSModel(rod_p, section_radius=DISK, tendons=tendons))


CHAMBER_AREA = np.pi * 2e-3**2  # chamber radius 2 mm: inside the 10 mm disk at 5 mm offset


@pytest.fixture(scope="module")
def der_pcs_program():
    """``run(params, tangent) -> (DER q (N, 4), PCS strains (n, 6), PCS tip (3,), d PCS tip)``: the
    two-tendon robot of :func:`two_tendon_model` on DER and PCS at ``params = (tau_a, tau_b,
    offset_a, rate_a)``, with the forward derivative of the PCS tip along ``tangent``; one
    compiled program for all the DER/PCS tests."""
    import jaxrod

    der, pcs = der_pcs_models()

    def pcs_solve(params):
        mp = with_values(pcs, params)
        qp = jaxrod.solve_static(mp)[0].q
        return mp.segment_end_poses(qp)[1][-1], mp.strains(qp)

    @jax.jit
    def run(params, tangent):
        """``params = (tau_a, tau_b, offset_a, rate_a, P_axis, P_offset)``, ``tangent (4,)``."""
        md = eqx.tree_at(lambda m: (m.chambers[0].value, m.chambers[1].value),
                         with_values(der, params[:4]), (params[4], params[5]))
        qd = jaxrod.solve_static(md)[0].q
        (tip, xi), (dtip, _) = jax.jvp(pcs_solve, (params[:4],), (tangent,))
        return qd, xi, tip, dtip

    return run


@pytest.fixture(scope="module")
def solve_der_pcs(der_pcs_program):
    """``solve(tau_a=, tau_b=, offset=, rate=) -> (DER q (N, 4), PCS strains (n, 6), PCS tip (3,))``."""

    def call(tau_a=0.0, tau_b=0.0, offset=OFFSET, rate=0.0, p_axis=0.0, p_offset=0.0):
        out = der_pcs_program(jnp.array([tau_a, tau_b, offset, rate, p_axis, p_offset]), jnp.zeros(4))
        return tuple(np.asarray(x) for x in out[:3])

    return call


def arc_x(u2, v3, s):
    """:func:`arc` in the DER/PCS frame (axis x, bending toward +y)."""
    return arc(u2, v3, s)[..., [2, 0, 1]]


def test_der_pcs_straight_tendon_arc(model, solve_der_pcs):
    """Curvature tau r / EI and the closed-form arc: exact on PCS (constant strain, exact tendon
    length), second order in the edge length on DER."""
    r = model.rod
    EI, EA = float(r.K_bt[1]), float(r.K_se[2])
    for tau, der_tol in ((2.0, 3e-3), (40.0, 5e-2)):
        u2, v3 = tau * OFFSET / EI, 1.0 - tau / EA
        qd, xi, tip = solve_der_pcs(tau_a=tau)
        # PCS: measured 2e-16 relative curvature error at both tensions
        assert np.max(np.abs(xi[:, 2] / u2 - 1.0)) < 1e-12
        assert np.max(np.abs(xi[:, 3] - v3)) < 1e-12 and np.max(np.abs(xi[:, [0, 1, 4, 5]])) < 1e-12 * u2
        ex = arc_x(u2, v3, np.array(L))
        assert np.linalg.norm(tip - ex) < 1e-12 * L
        # DER tip, error / deflection: measured 2.3e-3 at 2 N, 4.1e-2 at 40 N (9 nodes; 7.9e-2, 4.1e-2,
        # 1.7e-2, 9.2e-3 at 7, 9, 13, 17 nodes: second order)
        err = np.linalg.norm(qd[-1, :3] - ex) / ex[1]
        assert err < der_tol, (tau, err)


def test_der_pcs_mid_length_termination(model, solve_der_pcs):
    """Tendon anchored at L/2: an arc of curvature tau r / EI, then a straight, unloaded part."""
    r = model.rod
    EI, EA = float(r.K_bt[1]), float(r.K_se[2])
    tau = 40.0
    u2, v3 = tau * OFFSET / EI, 1.0 - tau / EA
    qd, xi, tip = solve_der_pcs(tau_b=tau)
    th = u2 * L / 2
    ex = arc_x(u2, v3, np.array(L / 2)) + L / 2 * np.array([np.cos(th), np.sin(th), 0.0])
    # PCS, two segments each side of the anchor: exact
    assert np.allclose(xi[:2, 2], u2, rtol=1e-12, atol=0) and np.allclose(xi[2:], XI_REST, atol=1e-12 * u2)
    assert np.linalg.norm(tip - ex) < 1e-12 * L
    # DER: measured tip error / deflection 3.8e-2 at 9 nodes, 1.6e-2 at 13 (second order; 8.7e-2
    # and 4.7e-2 with the anchor offset in the holding edge's frame only)
    assert np.linalg.norm(qd[-1, :3] - ex) / ex[1] < 5e-2
    # beyond the anchor's edges no load acts: the nodes there lie on one straight line (4.8e-15 L)
    x = qd[5:, :3]
    d = (x[-1] - x[0]) / np.linalg.norm(x[-1] - x[0])
    off = (x - x[0]) - np.outer((x - x[0]) @ d, d)
    assert np.max(np.linalg.norm(off, axis=1)) < 1e-9 * L


def test_pcs_tip_gradient_wrt_tension_and_offset_matches_finite_differences(der_pcs_program):
    """d tip / d tau and d tip / d offset through the PCS static solve (implicit derivative of the
    autodiff tendon force) vs central differences, helical tendon so the tip leaves the plane."""

    def tip(p, e):
        out = der_pcs_program(jnp.array([p[0], 0.0, p[1], 5.0, 0.0, 0.0]), jnp.array([e[0], 0.0, e[1], 0.0]))
        return out[2], out[3]

    check_tip_gradient(tip, in_plane=1, out_of_plane=2)  # measured 1.7e-11 (tension), 2.2e-11 (offset)


def test_bad_tendon_input_on_der_and_pcs():
    from jaxrod.models.der import DERModel
    from jaxrod.models.pcs import PCSModel

    der, pcs = der_pcs_models()
    bad_r = (Tendon(StraightRouting((0.02, 0.0)), tension=1.0),)
    bad_s = (Tendon(StraightRouting((OFFSET, 0.0))), Tendon(StraightRouting((OFFSET, 0.0)), termination=0.3))
    with pytest.raises(ValueError, match=r"tendons\[0\] leaves the cross-section.*0\.02.*section_radius = 0\.01"):
        PCSModel(pcs.rod, section_radius=DISK, tendons=bad_r)
    with pytest.raises(ValueError, match=r"tendons\[0\] leaves the cross-section.*section_radius = 0\.001"):
        PCSModel(pcs.rod, tendons=(Tendon(StraightRouting((OFFSET, 0.0))),))  # backbone radius
    with pytest.raises(ValueError, match=r"tendons\[1\]\.termination = 0\.3 m is outside the rod.*L = 0\.2"):
        PCSModel(pcs.rod, section_radius=DISK, tendons=bad_s)
    with pytest.raises(ValueError, match=r"tendons\[1\]\.termination = 0\.3 m is outside the rod"):
        DERModel(der.rod, clamped_edges=(0,), section_radius=DISK, tendons=bad_s)
    with pytest.raises(ValueError, match=r"tendons\[0\] leaves the cross-section.*0\.02"):
        DERModel(der.rod, clamped_edges=(0,), section_radius=DISK, tendons=bad_r)


def test_cosserat_der_pcs_agree_on_one_tendon_robot(solve, solve_der_pcs):
    """One robot on all three models: tendon A half a helical turn to the tip (10 N), tendon B
    straight, anchored at L/2 (20 N); the tip bends out of every plane. Reference: the shooting
    model (RK4, error ~1e-5 of the deflection at 8 intervals, test above). PCS (4 segments) and DER
    (9 nodes) converge to it at second order: measured tip error / deflection 1.04e-2 and 2.54e-3
    at 4 and 8 PCS segments, 2.53e-2 and 5.93e-3 at 9 and 17 DER nodes; tolerances 1.5x the
    measured errors at the sizes tested."""
    params = dict(tau_a=10.0, tau_b=20.0, rate=np.pi / L)
    y, _ = solve(**params)
    ref = np.asarray(y[-1, :3])[[2, 0, 1]]
    defl = np.linalg.norm(ref[1:])
    qd, _, tip = solve_der_pcs(**params)
    assert min(abs(ref[1]), abs(ref[2])) > 0.2 * defl  # out of both section planes
    assert np.linalg.norm(tip - ref) < 1.5e-2 * defl
    assert np.linalg.norm(qd[-1, :3] - ref) < 3.8e-2 * defl


def test_der_pressure_chamber_curvature_and_elongation(model, solve_der_pcs):
    """DER chambers (:class:`~jaxrod.actuation.chambers.Chamber`: volume A l of the
    channel polyline, force +P A dl/dq) against spec 7.3's
    closed form: cap force P A and moment P A r x e3 give the uniform axial strain P A / EA and the
    curvature P A d / EI, bending away from the chamber. An axial chamber only stretches the rod:
    exact on DER (uniform edge strain); an offset one bends it: second order, as the tendon."""
    r = model.rod
    EI, EA = float(r.K_bt[1]), float(r.K_se[2])
    P = 40.0 / CHAMBER_AREA  # cap force 40 N, 14 deg bend at 5 mm
    qd, _, _ = solve_der_pcs(p_axis=P)
    stretch = P * CHAMBER_AREA / EA
    # the axial channel's length is x_tip - (midpoint of the clamped edge 0): the pressure pulls
    # the tip node only, every free edge stretches by P A / EA, and the clamped edge's free half
    # (h / 2) stays put
    h = L / (N_DER - 1.5)
    tip = h / 2 + (L - h / 2) * (1 + stretch)
    # measured 2.3e-12 of the elongation
    assert np.linalg.norm(qd[-1, :3] - [tip, 0.0, 0.0]) < 1e-6 * L * stretch
    qd, _, _ = solve_der_pcs(p_offset=P)
    ex = arc_x(-P * CHAMBER_AREA * OFFSET / EI, 1.0 + stretch, np.array(L))
    err = np.linalg.norm(qd[-1, :3] - ex) / abs(ex[1])
    # measured 4.7e-2, 2.0e-2, 1.1e-2 at 9, 13, 17 nodes: second order (the 40 N tendon: 4.1e-2)
    assert err < 7e-2, err
    from jaxrod.models.der import DERModel

    from jaxrod.models.cosserat import Chamber

    rod_d = der_pcs_models()[0].rod
    with pytest.raises(TypeError, match=r"chambers must hold Chamber objects, got Tendon at chambers\[0\]"):
        DERModel(rod_d, clamped_edges=(0,), chambers=(Tendon(StraightRouting((0.0, 0.0))),))
    with pytest.raises(ValueError, match=r"chambers\[0\] does not fit in the cross-section.*section_radius = 0\.01 m"):
        DERModel(rod_d, clamped_edges=(0,), section_radius=DISK, chambers=(Chamber((0.009, 0.0), CHAMBER_AREA, pressure=1.0),))
    with pytest.raises(ValueError, match=r"chambers\[0\]: DER chambers are pressure-controlled.*'moles'.*CosseratModel"):
        DERModel(rod_d, clamped_edges=(0,), section_radius=DISK, chambers=(Chamber((0.0, 0.0), CHAMBER_AREA, moles=1e-4),))


# ---- displacement control, friction, grasped object (spec 7.2) -------------------------------------
def _rot_integral(u, L_):
    """``int_0^L exp(s u^) ds`` (closed form, Rodrigues) for a constant curvature ``u``."""
    k = np.linalg.norm(u)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]]) / k
    return L_ * np.eye(3) + (1 - np.cos(k * L_)) / k * K + (L_ - np.sin(k * L_) / k) * K @ K


def test_displacement_control_round_trip_and_gradient():
    """Mixed control: tendon A (tension 20 N at +d1) and tendon B (displacement control at +d2,
    compliance 1e-3 /N, 50 mm from motor to base). Both stay parallel to the axis, so (closed form,
    module docstring) the curvature is uniform, ``u = (-tau_B r, tau_A r, 0) / EI``, ``v3 = 1 -
    (tau_A + tau_B) / EA``, B's path is ``L (v3 - tau_B r^2 / EI)``, and the motor displacement
    that holds tau_B = 30 N is ``z = (0.05 + path) / (1 + 1e-3 tau_B) - (L + 0.05)``. Driven by that
    z, the solve must return tau_B = 30 N and the tip of the closed-form arc; d tip / d z (implicit
    derivative through the 7-unknown shooting solve) vs central differences.

    Euler on a fine grid, not RK4 on a coarse one: the forward derivative of the RK4 solve took
    ~100 s to compile (cold, 2-core machine at load 5), of the Euler solve 33 s CPU; the grid size
    does not change the compiled program (a scan), only the (first-order) error and the run time
    (a few seconds at 4000 intervals)."""
    tau_a, tau_b, c, extra = 20.0, 30.0, 1e-3, 0.05
    m = CosseratModel(rod(), n_points=4001, integrator="euler", section_radius=DISK, tendons=(
        Tendon(StraightRouting((OFFSET, 0.0)), tension=tau_a),
        Tendon(StraightRouting((0.0, OFFSET)), tension=1.0, control="displacement", displacement=0.0,
               compliance=c, extra_length=extra)))
    assert m.n_unknowns == 7
    EI, EA = float(m.rod.K_bt[0]), float(m.rod.K_se[2])
    u = np.array([-tau_b * OFFSET / EI, tau_a * OFFSET / EI, 0.0])
    v3 = 1.0 - (tau_a + tau_b) / EA
    z = (extra + L * (v3 - tau_b * OFFSET**2 / EI)) / (1.0 + c * tau_b) - (L + extra)

    @jax.jit
    def tip(zz, dz):
        def f(zz):
            st, _ = solve_static_cosserat(eqx.tree_at(lambda m: m.tendons[1].displacement, m, zz))
            return st.y[-1, :3], m.tendon_tensions(st)[1]

        return jax.jvp(f, (zz,), (dz,))

    (p, tau), (dp, _) = tip(jnp.asarray(z), jnp.asarray(1.0))
    # Euler error (rotation of n, m into the frame), first order: measured tension 8.3e-4
    # relative and tip 2.67e-2 L at 4 intervals, 3.5e-6 and 2.71e-4 L at 400, 3.5e-7 and
    # 2.71e-5 L at 4000 (RK4 at 4: 1.4e-6, 1.25e-6 L). 4000 intervals so that the tip tolerance
    # stays below the axial strain's share of the tip, (tau_A + tau_B) / EA L = 7.7e-5 L
    assert abs(float(tau) / tau_b - 1.0) < 1e-6, float(tau)
    assert np.linalg.norm(np.asarray(p) - _rot_integral(u, L) @ [0, 0, v3]) < 5e-5 * L
    h = 1e-6
    fd = (np.asarray(tip(jnp.asarray(z + h), 1.0)[0][0]) - np.asarray(tip(jnp.asarray(z - h), 1.0)[0][0])) / (2 * h)
    assert np.linalg.norm(fd) > 1.0  # reeling in 1 mm moves the tip by more than 1 mm
    assert np.linalg.norm(np.asarray(dp) - fd) < 1e-5 * np.linalg.norm(fd), (np.asarray(dp), fd)


@pytest.mark.parametrize("kirchhoff", [True, False])
def test_friction_load_on_a_uniformly_bent_rod_matches_closed_form(kirchhoff):
    """One evaluation of the arc-length ODE on a rod bent uniformly (u = kappa e2) by a straight
    tendon at r e1 under tension tau, with the tendon sliding toward its anchor at nu = 0.3 m/s
    (set through the history of its length S: nu = dS_end/dt - (c0 S + S^h)). Closed form: the
    friction force per length beta tau kappa nu along the tendon tangent (here e3, as the tendon
    is parallel to the axis) and its moment r e1 x f; they enter n_s, m_s as -f, -l, and shift no
    other tendon term (A e3 = 0, so the Phi solve adds -K^-1 f and -K^-1 l only); the tendon's
    tension grows toward the anchor by f per length. The length integrand is
    |u x r + v| / (1 + c tau) = (v3 - kappa r) / (1 + c tau)."""
    tau, kappa, beta, nu, c, c0 = 12.0, 3.0, 5.0, 0.3, 2e-3, 40.0
    td = Tendon(StraightRouting((OFFSET, 0.0)), tension=tau, control="displacement", compliance=c, friction=0.0)
    m0 = CosseratModel(rod(), n_points=5, integrator="euler", kirchhoff=kirchhoff, section_radius=DISK, tendons=(td,))
    m1 = eqx.tree_at(lambda m: m.tendons[0].friction, m0, jnp.asarray(beta))
    P = m0.step_constants(c0)
    EI = float(m0.rod.K_bt[1])
    S, S_end_t = 0.1, 0.05
    y = np.zeros(21)  # [p, h, n, m, q, w, S, T]
    y[3] = 1.0
    y[9] = -tau  # n = -tau e3: the tendon's pull (R = I, global = local)
    y[11] = EI * kappa
    y[19], y[20] = S, tau
    wh = np.zeros(m0.w_size)
    wh[18] = S_end_t - nu - c0 * S
    lengths = (jnp.ones(1), jnp.array([S_end_t]))
    out = [np.asarray(mm.rhs(jnp.asarray(y), jnp.asarray(wh), P, 0.05, jnp.array([tau]), lengths)[0])
           for mm in (m0, m1)]
    f = beta * tau * kappa * nu
    d = out[1] - out[0]
    assert np.allclose(d[7:10], [0.0, 0.0, -f], rtol=1e-12, atol=1e-12 * f)
    assert np.allclose(d[10:13], [0.0, OFFSET * f, 0.0], rtol=1e-12, atol=1e-12 * f * OFFSET)
    assert np.allclose(d[:7], 0.0) and np.allclose(d[13:20], 0.0, atol=1e-12)
    assert d[20] == pytest.approx(f, rel=1e-12)  # the tendon feels -f: its tension grows by f per length
    v3 = 1.0 if kirchhoff else 1.0 - tau / float(m0.rod.K_se[2])
    assert out[0][19] == pytest.approx((v3 - kappa * OFFSET) / (1 + c * tau), rel=1e-13)


def test_grasped_object_weight_moment_and_release(model, solve):
    """A tip body of mass 50 g (nearly massless rod, lateral gravity; the two tendons slack): statically
    its weight is the tip force m g (same tip to 1e-10 L); with its centre of mass 1 cm off the tip
    (tip frame) the base moment is (p_L + R_L c) x m g (free-body balance of rod and body);
    released (mass profile 1 -> 0 at 1 s) the rod carries nothing: base loads zero, straight. The
    static solve of the tendon tests (fixture ``solve``), with the body's values as arguments."""
    mass, g = 0.05, np.array([-9.81, 0.0, 0.0])
    grasp = dict(gravity=g[0], density=1e-3)
    body = np.asarray(solve(mass=mass, t=0.5, **grasp)[0])
    force = np.asarray(solve(tip_force=mass * g[0], t=0.5, **grasp)[0])
    assert np.linalg.norm(body[-1, :3] - [0, 0, L]) > 1e-3  # it bends by millimetres
    assert np.linalg.norm(body[:, :3] - force[:, :3]) < 1e-10 * L
    off = np.asarray(solve(mass=mass, com=0.01, t=0.5, **grasp)[0])
    RL = np.asarray(model.frames(jnp.asarray(off))[-1]).T  # columns d1, d2, d3
    assert np.allclose(off[0, 7:10], mass * g, rtol=1e-7)  # rod weight 2e-8 of the body's
    expect = np.cross(off[-1, :3] + RL @ [0.01, 0, 0], mass * g)
    assert np.allclose(off[0, 10:13], expect, rtol=1e-6, atol=1e-9), (off[0, 10:13], expect)
    released = np.asarray(solve(mass=mass, com=0.01, t=2.0, **grasp)[0])
    assert np.abs(released[0, 7:13]).max() < 1e-7 and abs(released[-1, 0]) < 1e-9


def test_bad_displacement_friction_input():
    rt = StraightRouting((OFFSET, 0.0))
    with pytest.raises(ValueError, match=r"Tendon\.control must be 'tension' or 'displacement', got 'length'"):
        Tendon(rt, control="length")
    with pytest.raises(ValueError, match=r"Tendon\.compliance must be finite and >= 0 1/N.*-0\.001"):
        Tendon(rt, control="displacement", compliance=-1e-3)
    with pytest.raises(ValueError, match=r"Tendon\.friction must be finite and >= 0 s/m"):
        Tendon(rt, friction=-1.0)
    with pytest.raises(ValueError, match=r"Tendon\.rest_length must be"):
        Tendon(rt, control="displacement", rest_length=0.0)
    with pytest.raises(ValueError, match=r"Tendon\.displacement must be finite"):
        Tendon(rt, control="displacement", displacement=np.nan)
    Tendon(rt, control="displacement", profile=Samples([0.0, 1.0], [0.0, -1.0]))  # a profile may go negative
    with pytest.raises(ValueError, match=r"segments = 2: tendons under displacement control or with friction"):
        CosseratModel(rod(), n_points=N, segments=2, section_radius=DISK,
                      tendons=(Tendon(rt, control="displacement"),))
    from jaxrod.models.der import DERModel, DERRod

    rod_d = DERRod.cantilever(5, L, radius=RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3)
    with pytest.raises(ValueError, match=r"tendons\[0\]: DER tendons are tension-controlled and frictionless"):
        DERModel(rod_d, clamped_edges=(0,), section_radius=DISK, tendons=(Tendon(rt, control="displacement"),))
    from jaxrod.models.pcs import PCSModel, PCSRod

    rod_p = PCSRod.circular(L, 2, RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3)
    with pytest.raises(ValueError, match=r"tendons\[0\]: PCS tendons are tension-controlled and frictionless"):
        PCSModel(rod_p, section_radius=DISK, tendons=(Tendon(rt, friction=1.0),))


@pytest.mark.slow  # its own compiled time loop
def test_friction_damps_the_bent_robot_more():
    """Through the time loop: a tendon under displacement control (at +d1) with friction beta, and
    an antagonist under tension control at -d1. From rest the motor reels in 0.2 mm more in one
    step and the rod rings. Bent state (antagonist slack, 1 mm reeled in: kappa ~ 1 /m): friction
    must damp the ringing clearly; straight state (antagonist at 32 N balancing the tendon: kappa
    stays ~ 0.2 /m): friction ~ tau |u_xy| nu, so its damping is ~5x smaller. Measured as the
    tip's ringing amplitude over the last third of the run relative to the first third."""
    import jaxrod

    dt, steps = 2e-3, 60
    m = CosseratModel(rod(), n_points=5, integrator="euler", section_radius=DISK, tendons=(
        Tendon(StraightRouting((OFFSET, 0.0)), tension=1.0, control="displacement", displacement=1.0,
               profile=Samples([0.0, dt], [0.0, 0.0]), friction=0.0),
        Tendon(StraightRouting((-OFFSET, 0.0)), tension=0.0)))

    @jax.jit
    def ringing(z0, dz, tau_b, beta):
        mm = eqx.tree_at(lambda m: (m.tendons[0].profile.values, m.tendons[1].tension, m.tendons[0].friction,
                                    m.tendons[0].tension),
                         m, (jnp.stack([z0, z0 + dz]), tau_b, beta, tau_b + 1.0))
        tr = jaxrod.simulate(mm, dt=dt, n_steps=steps, throw=False, solver=NO_FALLBACK)
        x = tr.tip[1:, 0]
        d = jnp.abs(x - x[-1])
        return jnp.max(d[steps // 3: 2 * steps // 3]) / jnp.max(d[: steps // 3]), x, jnp.all(tr.stats.converged)

    EA = float(rod().K_se[2])
    decay = {}
    for state, z0, tau_b in (("bent", -1e-3, 0.0), ("straight", -L * 2 * 32.0 / EA, 32.0)):
        r0, x0, ok0 = ringing(z0, -2e-4, tau_b, 0.0)
        # beta 5: damping ratio ~0.03 bent (measured decay 0.52 of the frictionless one); at
        # beta 30 s/m this 0.1 m/s reel-in in one 2 ms step does not converge (friction halves the
        # tension along the rod)
        r1, x1, ok1 = ringing(z0, -2e-4, tau_b, 5.0)
        assert bool(ok0) and bool(ok1), state  # every step converged (no fallback solver)
        assert np.all(np.isfinite(np.asarray(x1))) and np.ptp(np.asarray(x0)) > 1e-5
        decay[state] = float(r1) / float(r0)
    assert decay["bent"] < 0.8, decay
    assert abs(1.0 - decay["straight"]) < 0.5 * abs(1.0 - decay["bent"]), decay
