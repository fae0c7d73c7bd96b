"""Set-valued contact with Moreau time stepping (jaxrod.system.contact, jaxrod.integrate.moreau)
against closed forms: static contact load, Coulomb sliding (isotropic and anisotropic), the
ellipse (maximum-dissipation) friction law, slip-to-roll of a sphere, Newton impacts, a pendulum
landing on the ground, and the contact solver's complementarity conditions.

Programs: one compiled time loop per model structure (a ball: 1 body, 1 sphere; a box: 1 body, 4
spheres; a pendulum: 1 body, 1 joint, 1 sphere); the values that change between tests (initial
state, friction, restitution) are array leaves, so each structure compiles once.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.integrate.moreau import ContactProblem, MoreauOptions, prox_ellipse, solve_contact_problem
from jaxrod.system import MultibodySystem, Revolute, RigidBody
from jaxrod.system.contact import Box, ContactSystem, Plane, SphereContact

G = 9.81
DT = 1e-3


def ball(position, velocity=(0.0, 0.0, 0.0), mu=0.3, e=0.0, m=2.0, r=0.1, mu_v=0.0, wall_x=100.0,
         angular_velocity=(0.0, 0.0, 0.0), box_centre=(-100.0, 0.0, 0.1), margin=0.0):
    """A solid ball on the ground z = 0 with a wall x = wall_x (normal -x) and a box 0.4 x 0.4 x
    0.2 m at box_centre (both far away by default): contact 0 the ground, 1 the wall, 2 the box."""
    b = RigidBody("ball", m, np.full(3, 0.4 * m * r * r), position=position, velocity=velocity,
                  angular_velocity=angular_velocity)
    return ContactSystem(MultibodySystem([b], gravity=(0, 0, -G)),
                         SphereContact("ball", position, r, mu=mu, restitution=e, rolling_friction=mu_v),
                         planes=[Plane(), Plane((wall_x, 0.0, 0.0), (-1.0, 0.0, 0.0))],
                         boxes=[Box(box_centre, (0.2, 0.2, 0.1))],
                         options=MoreauOptions(rtol=1e-12, active_margin=margin))


def box(velocity, mu_along, mu_across, m=1.0, a=0.1, c=0.05, rs=0.01, tilt=0.0):
    """A 2a x 2a x 2c box resting on four corner spheres of radius rs (principal direction: the
    box x axis) on a plane through the origin tilted by ``tilt`` [rad] about y (normal (-sin,
    0, cos): downhill is -x); starts 1e-9 m into the plane so every corner is active at once."""
    n = np.array([-np.sin(tilt), 0.0, np.cos(tilt)])
    R = np.array([[np.cos(tilt), 0.0, -np.sin(tilt)], [0.0, 1.0, 0.0], [np.sin(tilt), 0.0, np.cos(tilt)]])
    centre = (c + rs - 1e-9) * n
    b = RigidBody("box", m, (m * (a * a + c * c) / 3, m * (a * a + c * c) / 3, 2 * m * a * a / 3), position=centre,
                  orientation=(np.cos(-tilt / 2), 0.0, np.sin(-tilt / 2), 0.0), velocity=velocity)
    sph = [SphereContact("box", centre + R @ np.array([sx * a, sy * a, -c]), rs, mu_along=mu_along,
                         mu_across=mu_across, direction=R[:, 0])
           for sx in (-1, 1) for sy in (-1, 1)]
    return ContactSystem(MultibodySystem([b], gravity=(0, 0, -G)), sph, planes=[Plane((0.0, 0.0, 0.0), n)],
                         options=MoreauOptions(rtol=1e-12))


# ---- a ball --------------------------------------------------------------------------------------
def test_resting_ball_carries_its_weight_per_step_without_drift():
    m, r = 2.0, 0.1
    tr = jaxrod.simulate(ball((0.0, 0.0, r), m=m, r=r), dt=DT, n_steps=300)
    PN = np.asarray(tr.impulses[1:, 0, 0])
    np.testing.assert_allclose(PN, m * G * DT, rtol=1e-12)  # P_N = m g dt every step
    assert np.max(np.abs(np.asarray(tr.positions[:, 0]) - [0.0, 0.0, r])) < 1e-15  # no drift
    assert np.max(np.abs(np.asarray(tr.v))) < 1e-15
    assert np.all(np.asarray(tr.impulses[1:, 0, 1:]) == 0.0)


def test_sliding_ball_decelerates_at_mu_g_then_rolls_at_five_sevenths():
    """A solid sphere launched without spin: friction mu m g decelerates it and spins it up,
    slipping ends at t* = 2 v0 / (7 mu g) with v = omega r = 5 v0 / 7 (closed form), then it
    rolls without friction force."""
    v0, mu, r = 1.0, 0.3, 0.1
    tr = jaxrod.simulate(ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=mu, r=r), dt=DT, n_steps=200)
    t = np.asarray(tr.times)
    v, w = np.asarray(tr.v[:, 0, 0]), np.asarray(tr.v[:, 0, 4])
    t_star = 2 * v0 / (7 * mu * G)  # 0.0971 s
    slip = t < t_star - DT
    np.testing.assert_allclose(v[slip], v0 - mu * G * t[slip], atol=1e-12)
    np.testing.assert_allclose(w[slip] * r, 2.5 * mu * G * t[slip], atol=1e-12)  # torque mu m g r / (2/5 m r^2)
    after = t > t_star + DT
    np.testing.assert_allclose(v[after], 5 * v0 / 7, atol=1e-12)
    np.testing.assert_allclose(w[after] * r, 5 * v0 / 7, atol=1e-12)
    assert np.max(np.abs(np.asarray(tr.impulses[after, 0, 1:]))) < 1e-14  # rolling: no friction


def test_simulate_under_jit_and_vmap_over_friction():
    """The Moreau stepper is pure JAX: jax.jit(jax.vmap(...)) over the friction coefficient of
    the slide-to-roll ball gives, for each mu, the closed-form position at t = 0.15 s (sliding
    at mu g until t* = 2 v0 / (7 mu g), then rolling at 5/7 v0)."""
    v0, r, T = 1.0, 0.1, 0.15

    @jax.jit
    def run(mus):
        def one(mu):
            tr = jaxrod.simulate(ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=mu, r=r), dt=DT, n_steps=150, save_every=150)
            return tr.positions[-1, 0, 0], tr.v[-1, 0, 0]
        return jax.vmap(one)(mus)

    mus = np.array([0.2, 0.3, 0.5])
    x, v = (np.asarray(a) for a in run(jnp.asarray(mus)))
    ts = 2 * v0 / (7 * mus * G)
    exact = v0 * ts - 0.5 * mus * G * ts**2 + 5 / 7 * v0 * (T - ts)
    assert np.all(np.abs(x - exact) < v0 * DT)
    np.testing.assert_allclose(v, 5 / 7 * v0, rtol=1e-12)


@pytest.mark.parametrize("e", [0.0, 0.5])
def test_dropped_ball_impact_restitution(e):
    """Dropped from a gap h: contact at t = sqrt(2 h / g) (to one step); e = 0 stops it at
    impact, e = 0.5 rebounds to e^2 h (Newton's law; O(dt) error: 1.2 % measured at dt = 1 ms)."""
    h, r = 0.2, 0.1
    tr = jaxrod.simulate(ball((0.0, 0.0, r + h), mu=0.3, e=e, r=r), dt=DT, n_steps=600)
    gap = np.asarray(tr.gaps[:, 0])
    k = int(np.argmax(np.asarray(tr.active[:, 0])))
    assert abs(k * DT - np.sqrt(2 * h / G)) <= 1.5 * DT
    v_impact = np.sqrt(2 * G * h)
    assert gap.min() > -v_impact * DT  # penetration below one step of travel
    if e == 0.0:
        np.testing.assert_allclose(np.asarray(tr.v[k:, 0]), 0.0, atol=1e-12)
        assert gap[k:].max() - gap[k:].min() < 1e-15
    else:
        apex = gap[k + 5:].max()
        assert abs(apex - e * e * h) < 0.03 * e * e * h
        vz_after = float(tr.v[k, 0, 2])
        assert abs(vz_after - e * v_impact) < 0.02 * e * v_impact


def _tilted_gravity(cs, tilt, heading=0.0):
    """``cs`` with gravity tilted by ``tilt`` [rad] from -z towards the horizontal direction at
    ``heading`` [rad] from +x: on the flat ground this is an incline of angle ``tilt`` whose downhill
    direction is that heading (gravity is an array leaf: the program is the untilted one's)."""
    g = G * np.array([np.sin(tilt) * np.cos(heading), np.sin(tilt) * np.sin(heading), -np.cos(tilt)])
    return eqx.tree_at(lambda c: c.system.gravity, cs, jnp.asarray(g))


@pytest.mark.parametrize("mu,rolls", [(0.2, True), (0.1, False)])
def test_ball_on_a_30_degree_incline_rolls_or_slides(mu, rolls):
    """A solid ball released at rest on a 30 deg incline: with mu = 0.2 it rolls at
    a = 5/7 g sin 30 = 3.504 m/s^2 (the friction it needs, 2/7 m g sin 30 = 0.143 m g, is below
    mu N = 0.173 m g); with mu = 0.1 it slides at a = g (sin 30 - mu cos 30) = 4.055 m/s^2 while
    spinning up at 5/2 mu g cos 30 / r. Velocity-level impulses on a constant force: exact to
    round-off every step."""
    r, th = 0.1, np.radians(30.0)
    tr = jaxrod.simulate(_tilted_gravity(ball((0.0, 0.0, r), mu=mu, r=r), th), dt=DT, n_steps=200)
    t = np.asarray(tr.times)
    v, w = np.asarray(tr.v[:, 0, 0]), np.asarray(tr.v[:, 0, 4])
    acc = 5 / 7 * G * np.sin(th) if rolls else G * (np.sin(th) - mu * np.cos(th))
    np.testing.assert_allclose(acc, 3.504 if rolls else 4.055, atol=5e-4)  # the figures
    np.testing.assert_allclose(v[1:], acc * t[1:], rtol=1e-9)
    spin = acc if rolls else 2.5 * mu * G * np.cos(th)
    np.testing.assert_allclose(w[1:] * r, spin * t[1:], rtol=1e-9)
    np.testing.assert_allclose(np.asarray(tr.impulses[1:, 0, 0]), 2.0 * G * np.cos(th) * DT, rtol=1e-9)


def test_dropped_ball_apexes_energy_and_the_apex_derivative():
    """Dropped from 1 m (gap) with e = 0.9: the apexes after the first three impacts are
    e^2, e^4, e^6 m = 0.81, 0.656, 0.531 m (Newton's law; O(dt) error); the energy never increases
    (exactly conserved in flight by the midpoint rule, lost only at impacts); with e = 0 the ball
    stops at the impact, t = sqrt(2 / g) = 0.4515 s. d(first apex)/de = 2 e h = 1.8 m, by forward
    mode through the contact solves, against central differences of the same run."""
    h, r, m = 1.0, 0.1, 2.0
    cs = ball((0.0, 0.0, r + h), mu=0.3, e=0.9, m=m, r=r)
    tr = jaxrod.simulate(cs, dt=DT, n_steps=2500)
    gap = np.asarray(tr.gaps[:, 0])
    vz = np.asarray(tr.v[:, 0, 2])
    apexes = [gap[k] for k in range(1, gap.size - 1) if vz[k - 1] > 0 >= vz[k]][:3]
    np.testing.assert_allclose(apexes, [0.81, 0.6561, 0.531441], rtol=0.03)
    E = np.asarray(cs.energy(tr.q, tr.v))
    assert np.max(np.diff(E)) <= 1e-12 * abs(E[0])
    assert E[-1] < 0.6 * E[0]  # three impacts took 1 - e^6 = 47% of the drop energy

    stop = jaxrod.simulate(ball((0.0, 0.0, r + h), mu=0.3, e=0.0, m=m, r=r), dt=DT, n_steps=600)
    k = int(np.argmax(np.asarray(stop.active[:, 0])))
    assert abs(k * DT - 0.4515) <= 1.5 * DT + 1e-12  # the first frame after the impact
    np.testing.assert_allclose(np.asarray(stop.v[k:, 0]), 0.0, atol=1e-12)

    def first_apex(e):
        c = eqx.tree_at(lambda c: c.restitution, cs, jnp.broadcast_to(e, cs.restitution.shape))
        tr = jaxrod.simulate(c, dt=DT, n_steps=1200, save_every=1)
        return jnp.max(tr.gaps[500:, 0])  # after the impact at 0.45 s, before the next at ~1.3 s

    e0 = jnp.asarray(0.9)
    val, d = jax.jit(lambda e: jax.jvp(first_apex, (e,), (jnp.ones_like(e),)))(e0)
    run = jax.jit(first_apex)
    fd = float((run(e0 + 1e-4) - run(e0 - 1e-4)) / 2e-4)
    assert abs(float(d) - fd) < 1e-3 * abs(fd), (float(d), fd)
    assert abs(float(d) - 1.8) < 0.05 * 1.8, float(d)


def test_ball_rebounds_from_a_wall_with_newtons_law():
    """Frictionless ball sliding into the wall x = 0.5 at 2 m/s with e = 0.5: it leaves at -1 m/s
    (Newton's law is exact for a velocity not changed by other forces), the ground keeps
    carrying m g dt, and the wall's impulse is m (1 + e) v0 in that one step."""
    m, r, v0, e = 2.0, 0.1, 2.0, 0.5
    tr = jaxrod.simulate(ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=0.0, e=e, m=m, r=r, wall_x=0.5), dt=DT, n_steps=400)
    vx = np.asarray(tr.v[:, 0, 0])
    hit = np.flatnonzero(np.asarray(tr.impulses[:, 1, 0]) > 0)
    assert hit.size == 1  # one impact step
    np.testing.assert_allclose(vx[: hit[0]], v0, rtol=1e-14)
    np.testing.assert_allclose(vx[hit[0]:], -e * v0, rtol=1e-12)
    np.testing.assert_allclose(float(tr.impulses[hit[0], 1, 0]), m * (1 + e) * v0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.impulses[1:, 0, 0]), m * G * DT, rtol=1e-12)
    assert float(tr.gaps[hit[0], 1]) > -v0 * DT


def test_ball_dropped_on_a_box_rests_on_its_top():
    """Dropped 0.1 m above the top face of a box (top at z = 0.2 m): it lands at t = sqrt(2 h / g)
    and rests on the box (the box carries m g dt per step, the ground nothing), centre at 0.2 + r."""
    m, r, h = 2.0, 0.1, 0.1
    tr = jaxrod.simulate(ball((0.05, 0.0, 0.2 + r + h), m=m, r=r, box_centre=(0.0, 0.0, 0.1)), dt=DT, n_steps=300)
    k = int(np.argmax(np.asarray(tr.active[:, 2])))
    assert abs(k * DT - np.sqrt(2 * h / G)) <= 1.5 * DT
    np.testing.assert_allclose(np.asarray(tr.impulses[k + 1:, 2, 0]), m * G * DT, rtol=1e-12)
    assert np.all(np.asarray(tr.impulses[:, 0, 0]) == 0.0)
    z = np.asarray(tr.positions[k:, 0, 2])
    assert np.all(np.abs(z - (0.2 + r)) < np.sqrt(2 * G * h) * DT)
    np.testing.assert_allclose(np.asarray(tr.positions[k:, 0, :2]), [[0.05, 0.0]] * (len(z)), atol=1e-12)


def test_ball_rebounds_from_a_box_side_face():
    """Frictionless ball sliding on the ground into the side face x = 0.3 of a box with e = 0.5:
    it leaves at -e v0 (the box normal there is -x; the ball centre is below the box top)."""
    m, r, v0, e = 2.0, 0.1, 2.0, 0.5
    tr = jaxrod.simulate(ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=0.0, e=e, m=m, r=r, box_centre=(0.5, 0.0, 0.1)),
                         dt=DT, n_steps=300)
    hit = np.flatnonzero(np.asarray(tr.impulses[:, 2, 0]) > 0)
    assert hit.size == 1
    np.testing.assert_allclose(np.asarray(tr.v[hit[0]:, 0, 0]), -e * v0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.v[hit[0]:, 0, 1:3]), 0.0, atol=1e-12)
    assert abs(float(tr.positions[hit[0], 0, 0]) - (0.3 - r)) < v0 * DT


def test_rolling_friction_decelerates_a_rolling_ball_at_five_sevenths_mu_v_g():
    """A ball rolling without slip (v0 = omega r) with rolling friction mu_V (paper eqs. 33-37,
    59-60: a torque impulse up to mu_V P_N r): rolling is kept (the needed Coulomb force
    5/7 mu_V m g is below mu m g), so v' = -5/7 mu_V g (closed form for I = 2/5 m r^2) until it
    stops, at v0^2 / (2 a), and stays."""
    v0, r, mu_v = 0.5, 0.1, 0.05
    a = 5.0 / 7.0 * mu_v * G
    ts = v0 / a  # 1.43 s
    start = ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=0.3, r=r, mu_v=mu_v, angular_velocity=(0.0, v0 / r, 0.0))
    tr = jaxrod.simulate(start, dt=DT, n_steps=10 * (int(ts / DT) // 10 + 5), save_every=10)
    t = np.asarray(tr.times)
    v, w = np.asarray(tr.v[:, 0, 0]), np.asarray(tr.v[:, 0, 4])
    rolling = t < ts - DT
    np.testing.assert_allclose(v[rolling], v0 - a * t[rolling], atol=1e-12)
    np.testing.assert_allclose(w[rolling] * r, v[rolling], atol=1e-12)  # no slip
    assert abs(float(tr.positions[-1, 0, 0]) - v0 * v0 / (2 * a)) < v0 * DT
    assert np.max(np.abs(np.asarray(tr.v[-3:, 0]))) < 1e-12


def test_active_margin_takes_up_a_landing_contact_before_touching():
    """With active_margin = 5 mm the contact is active (at zero impulse) while the ball is still
    open, the step that closes the gap brakes the ball exactly onto the surface (end gap 0), and it
    then rests carrying m g dt; the sinking after it (the step closing the gap leaves the ball
    approaching) stays below one step of travel, less than without a margin (0.85 vs 1.13 mm)."""
    m, h, r = 2.0, 0.2, 0.1
    runs = [jaxrod.simulate(ball((0.0, 0.0, r + h), m=m, r=r, margin=mg), dt=DT, n_steps=300) for mg in (0.0, 5e-3)]
    gap0, gap = (np.asarray(tr.gaps[:, 0]) for tr in runs)
    tr = runs[1]
    first_active = int(np.argmax(np.asarray(tr.active[:, 0])))
    assert gap[first_active - 1] > 0.0 and gap[first_active] > 0.0  # active while open
    k = int(np.argmax(np.asarray(tr.impulses[:, 0, 0]) > 0))  # the braking step
    assert abs(gap[k]) < 1e-12
    assert -np.sqrt(2 * G * h) * DT < gap.min() and gap0.min() < gap.min() < 0.0
    np.testing.assert_allclose(np.asarray(tr.impulses[k + 3:, 0, 0]), m * G * DT, rtol=1e-12)


# ---- a box ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction,mu_along,mu_across,mu_expected", [
    ("x", 0.3, 0.3, 0.3),  # isotropic
    ("x", 0.1, 0.5, 0.1),  # along the principal direction
    ("y", 0.1, 0.5, 0.5),  # across it
])
def test_box_slides_as_coulomb_block_and_stops(direction, mu_along, mu_across, mu_expected):
    """x(t) = v0 t - mu g t^2 / 2 until t_s = v0 / (mu g), then it sticks at v0^2 / (2 mu g)."""
    v0 = 1.0
    vel = (v0, 0.0, 0.0) if direction == "x" else (0.0, v0, 0.0)
    ax = 0 if direction == "x" else 1
    ts = v0 / (mu_expected * G)
    tr = jaxrod.simulate(box(vel, mu_along, mu_across), dt=DT, n_steps=int(ts / DT) + 30)
    t = np.asarray(tr.times)
    s = np.asarray(tr.positions[:, 0, ax])
    slide = t < ts
    exact = v0 * t - 0.5 * mu_expected * G * t * t
    assert np.max(np.abs(s[slide] - exact[slide])) < v0 * DT  # O(dt) (midpoint positions)
    stop = v0 * v0 / (2 * mu_expected * G)
    assert abs(s[-1] - stop) < v0 * DT
    assert np.all(np.abs(np.asarray(tr.v[t > ts + 2 * DT, 0, :3])) < 1e-12)  # stuck
    # the four normal impulses carry the weight; no sideways drift
    np.testing.assert_allclose(np.asarray(tr.impulses[2:, :, 0]).sum(1), G * DT, rtol=1e-9)
    assert np.max(np.abs(np.asarray(tr.positions[:, 0, 1 - ax]))) < 1e-12


@pytest.mark.parametrize("tilt_deg", [10.0, 30.0])
def test_box_on_an_incline_sticks_below_the_friction_angle_and_slides_above(tilt_deg):
    """mu = 0.3 (friction angle 16.7 deg): at 10 deg the box stays at rest (true stiction, no
    creep); at 30 deg it slides down at a = g (sin - mu cos) = 2.356 m/s^2."""
    mu, th = 0.3, np.radians(tilt_deg)
    tr = jaxrod.simulate(box((0.0, 0.0, 0.0), mu, mu, tilt=th), dt=DT, n_steps=200)
    t = np.asarray(tr.times)
    down = -np.array([np.cos(th), 0.0, np.sin(th)])
    s = (np.asarray(tr.positions[:, 0]) - np.asarray(tr.positions[0, 0])) @ down
    v = np.asarray(tr.v[:, 0, :3]) @ down
    if np.tan(th) < mu:
        assert np.max(np.abs(np.asarray(tr.v))) < 1e-12 and np.max(np.abs(s)) < 1e-12
    else:
        acc = G * (np.sin(th) - mu * np.cos(th))
        np.testing.assert_allclose(v[2:], acc * t[2:], rtol=1e-9)
        assert np.max(np.abs(s - 0.5 * acc * t**2)) < acc * t[-1] * DT
    np.testing.assert_allclose(np.asarray(tr.impulses[2:, :, 0]).sum(1), G * np.cos(th) * DT, rtol=1e-9)


@pytest.mark.parametrize("factor", [0.97, 1.03])
def test_box_pushed_at_45_degrees_breaks_away_at_the_ellipse_limit(factor):
    """mu = (0.1 along x, 0.5 across): an in-plane load F at 45 deg to the principal axis is held
    while (F cos45 / 0.1)^2 + (F sin45 / 0.5)^2 <= N^2, i.e. up to F = 0.1387 N (F / N =
    1 / sqrt(0.5 / 0.01 + 0.5 / 0.25)); the load is the in-plane part of gravity tilted by
    atan(F / N). At 0.97 of the limit the box stays put (no creep), at 1.03 it slides."""
    limit = 1.0 / np.sqrt(0.5 / 0.1**2 + 0.5 / 0.5**2)
    assert abs(limit - 0.1387) < 5e-5
    th = np.arctan(factor * limit)
    tr = jaxrod.simulate(_tilted_gravity(box((0.0, 0.0, 0.0), 0.1, 0.5), th, np.pi / 4), dt=DT, n_steps=150)
    moved = np.max(np.abs(np.asarray(tr.positions[:, 0, :2]) - np.asarray(tr.positions[0, 0, :2])))
    if factor < 1.0:
        assert moved < 1e-12 and np.max(np.abs(np.asarray(tr.v))) < 1e-10  # round-off of the tilted load
    else:
        assert moved > 1e-4


@pytest.mark.parametrize("which", ["plane", "box"])
def test_contact_jacobian_columns_are_the_derivatives_of_their_definitions(which):
    """For a sphere off-centre on a tilted, spinning body: the normal column of W times u equals
    the central difference of the gap along the motion ``displace(q, h u)``; the two tangential
    columns equal the material contact point's velocity along t1, t2; the two rolling columns
    equal the angular velocity along r (t_k x n). Against the ground plane (the box helper's four
    corner spheres, the plane tilted) and against a box obstacle (a ball beside the box's corner)."""
    from jaxrod.geometry import quat_to_rotation

    rng = np.random.default_rng(3)
    if which == "plane":
        cs = box((0.0, 0.0, 0.0), 0.1, 0.5, tilt=0.3)
    else:
        cs = ball((0.0, 0.0, 1.0), box_centre=(0.35, 0.3, 0.95))
    q0 = np.asarray(cs.initial_state().q)
    q = np.asarray(cs.displace(jnp.asarray(q0), jnp.asarray(0.3 * rng.standard_normal(q0.shape[:1] + (6,)))))
    u = rng.standard_normal((q.shape[0], 6))
    unilateral = eqx.filter_jit(lambda m, qq: m.unilateral(qq))

    def geo(qq):
        return unilateral(cs, qq)

    gaps, W = (np.asarray(a) for a in geo(jnp.asarray(q))[:2])
    if which == "box":
        W, gaps = W[:, 2:3], gaps[2:3]  # the box contact (0: ground, 1: wall, both far)
    h = 1e-6
    qp, qm = (np.asarray(cs.displace(jnp.asarray(q), jnp.asarray(s * h * u))) for s in (1.0, -1.0))
    gp, gm = (np.asarray(geo(jnp.asarray(a))[0]) for a in (qp, qm))
    if which == "box":
        gp, gm = gp[2:3], gm[2:3]
    wu = np.einsum("kcj,k->cj", W, u.ravel())  # (n_c, 5) contact velocities
    np.testing.assert_allclose(wu[:, 0], (gp - gm) / (2 * h), rtol=1e-7, atol=1e-9)

    # the material point of the body at the contact, rho = c - r n (c the sphere centre), moved
    # along the same motion: its velocity along t1, t2; the body's angular velocity along r t_k x n
    R = np.asarray(quat_to_rotation(jnp.asarray(q[:, 3:])))
    for c in range(W.shape[1]):
        sphere = c if which == "plane" else 0
        bd = int(np.asarray(cs.sphere_body)[sphere])
        rows = slice(6 * bd, 6 * bd + 3)
        n, t1, t2 = W[rows, c, 0], W[rows, c, 1], W[rows, c, 2]
        np.testing.assert_allclose([n @ t1, n @ t2, t1 @ t2, n @ n, t1 @ t1, t2 @ t2], [0, 0, 0, 1, 1, 1], atol=1e-12)
        r = float(np.asarray(cs.radius)[sphere])
        centre = q[bd, :3] + R[bd] @ np.asarray(cs.sphere_centre)[sphere]
        p_body = R[bd].T @ (centre - r * n - q[bd, :3])

        def point(qq):
            return qq[bd, :3] + np.asarray(quat_to_rotation(jnp.asarray(qq[bd, 3:]))) @ p_body

        v_point = (point(qp) - point(qm)) / (2 * h)
        np.testing.assert_allclose([wu[c, 1], wu[c, 2]], [v_point @ t1, v_point @ t2], rtol=1e-7, atol=1e-9)
        Rp, Rm = (np.asarray(quat_to_rotation(jnp.asarray(a[bd, 3:]))) for a in (qp, qm))
        Om = (Rp - Rm) / (2 * h) @ R[bd].T  # skew(omega) in the world frame
        omega = np.array([Om[2, 1], Om[0, 2], Om[1, 0]])
        for k, tk in ((3, t1), (4, t2)):
            np.testing.assert_allclose(wu[c, k], omega @ (r * np.cross(tk, n)), rtol=1e-7, atol=1e-9)


def test_oblique_slide_friction_lies_on_the_ellipse_law():
    """mu_along = 0.1, mu_across = 0.5, sliding at 53 deg to the principal axis: every sliding step
    each contact's friction impulse lies ON the ellipse (P_x/mu_x)^2 + (P_y/mu_y)^2 = P_N^2 along
    its outward normal -(mu_x^2 g_x, mu_y^2 g_y) / |(mu_x g_x, mu_y g_y)| P_N (maximum dissipation,
    g the end-of-step slip velocity), which is NOT anti-parallel to the slip."""
    mx, my = 0.1, 0.5
    tr = jaxrod.simulate(box((0.6, 0.8, 0.0), mx, my), dt=DT, n_steps=60)
    P = np.asarray(tr.impulses[1:])  # (steps, 4, 5)
    vE = np.asarray(tr.v[1:, 0, :2])  # end velocity (the box does not turn: omega ~ 1e-12)
    assert np.max(np.abs(np.asarray(tr.v[:, 0, 3:]))) < 1e-9
    for k in range(P.shape[0]):
        gx, gy = vE[k]
        law = -np.array([mx * mx * gx, my * my * gy]) / np.hypot(mx * gx, my * gy)
        for c in range(4):
            pn, pt = P[k, c, 0], P[k, c, 1:3]
            np.testing.assert_allclose(pt, law * pn, rtol=1e-7, atol=1e-14)
    gx, gy = vE[0]
    cos = -(P[0, 0, 1:3] @ vE[0]) / (np.linalg.norm(P[0, 0, 1:3]) * np.linalg.norm(vE[0]))
    assert cos < np.cos(np.radians(30))  # far from anti-parallel (isotropic Coulomb would give 1)
    # closed form at the start: total friction force -m g (mx^2 vx, my^2 vy)/|(mx vx, my vy)|
    F = P[0, :, 1:3].sum(0) / DT
    v0 = np.array([0.6, 0.8])
    np.testing.assert_allclose(F, -G * np.array([mx * mx, my * my]) * v0 / np.hypot(mx * v0[0], my * v0[1]),
                               rtol=2e-2)  # O(dt): the slip direction turns during the step


# ---- a pendulum on a joint -----------------------------------------------------------------------
def test_pendulum_lands_on_the_ground_keeping_its_joint():
    """A ball on a hinge released horizontally lands at 45 degrees (e = 0, frictionless). The hinge
    holds to round-off, the landing speed is sqrt(2 g dh) (energy), the impact stops it (a 1-DOF
    system whose only admissible velocity enters the ground), and at rest the ground carries the
    whole weight (the contact lies below the centre of mass: N = m g, zero hinge force)."""
    m, r, L = 2.0, 0.1, 0.5
    piv = np.array([0.0, 0.0, L * np.cos(np.pi / 4) + r])
    b = RigidBody("bob", m, np.full(3, 0.4 * m * r * r), position=piv + np.array([L, 0.0, 0.0]))
    sys = MultibodySystem([b], [Revolute(None, "bob", piv, axis=(0, 1, 0))], gravity=(0, 0, -G))
    cs = ContactSystem(sys, SphereContact("bob", b.position, r, mu=0.0))
    tr = jaxrod.simulate(cs, dt=DT, n_steps=500)
    assert np.max(np.abs(np.asarray(cs.joint_violation(tr.q)))) < 1e-13
    k = int(np.argmax(np.asarray(tr.active[:, 0])))
    dh = L * np.cos(np.pi / 4)
    speed = np.linalg.norm(np.asarray(tr.v[k - 1, 0, :3]))
    assert abs(speed - np.sqrt(2 * G * dh)) < 0.02 * np.sqrt(2 * G * dh)
    # energy before the impact: the velocity-level joint at the midpoint dissipates O(dt)
    # (measured 1.7e-3 m g dh at dt = 1 ms); the impact takes the rest
    E = np.asarray(cs.energy(tr.q, tr.v))
    assert np.max(np.abs(E[:k] - E[0])) < 3e-3 * m * G * dh
    np.testing.assert_allclose(np.asarray(tr.v[k + 1:, 0]), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.impulses[k + 2:, 0, 0]), m * G * DT, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(tr.joint_impulses[k + 2:]), 0.0, atol=1e-12)
    assert float(tr.gaps[-1, 0]) > -np.sqrt(2 * G * dh) * DT


# ---- the contact solver ----------------------------------------------------------------------------
def _random_problem(seed, n=3):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(5 * n, 5 * n + 2))
    D = (A @ A.T / (5 * n) + 0.2 * np.eye(5 * n)).reshape(n, 5, n, 5)
    b = rng.normal(size=(n, 5))
    b[:, 0] = -np.abs(b[:, 0]) - 0.5  # approaching contacts
    return ContactProblem(jnp.asarray(b), jnp.asarray(D), jnp.zeros((n, 5)), jnp.ones(n, bool),
                          jnp.asarray([[0.2, 0.6], [0.4, 0.1], [0.3, 0.3]]), jnp.asarray([0.05, 0.0, 0.1]))


def test_contact_solver_satisfies_the_laws_for_every_method():
    """Converged impulses satisfy the set-valued laws (Signorini complementarity, friction on the
    ellipse with the slip along its outward normal or sticking inside, rolling disk likewise),
    and Gauss-Seidel, the paper's Jacobi with absolute r, the scaled friction prox and friction
    sets sized by the previous P_N agree."""
    prob = _random_problem(0)
    sols = []
    for opts in (MoreauOptions(rtol=1e-12), MoreauOptions(friction_prox="scaled", rtol=1e-12),
                 MoreauOptions(method="jacobi", r_factors="absolute", r=(0.05, 0.05, 0.05), max_iterations=20000,
                               criterion="impulses", rtol=1e-12),
                 MoreauOptions(friction_bound="old", rtol=1e-12)):
        P, its, err, ok = eqx.filter_jit(solve_contact_problem)(prob, jnp.zeros((3, 5)), opts)
        assert bool(ok), (opts, int(its), float(err))
        sols.append(np.asarray(P))
    for s in sols[1:]:
        np.testing.assert_allclose(s, sols[0], atol=1e-8)
    P = sols[0]
    gam = np.asarray(prob.b) + np.einsum("aibj,bj->ai", np.asarray(prob.D), P)
    mu, mv = np.asarray(prob.mu), np.asarray(prob.mu_v)
    assert np.all(P[:, 0] >= 0) and np.all(gam[:, 0] >= -1e-9)
    assert np.max(np.abs(P[:, 0] * gam[:, 0])) < 1e-9
    for a in range(3):
        pn, pt, gt = P[a, 0], P[a, 1:3], gam[a, 1:3]
        s = np.sum((pt / (mu[a] * pn)) ** 2)
        if np.linalg.norm(gt) > 1e-8:  # slipping: on the ellipse, slip along -normal
            assert abs(s - 1) < 1e-7
            normal = pt / (mu[a] * pn) ** 2
            cross = normal[0] * gt[1] - normal[1] * gt[0]
            assert abs(cross) < 1e-6 * np.linalg.norm(normal) * np.linalg.norm(gt) and normal @ gt < 0
        else:
            assert s <= 1 + 1e-9
        pv, gv = P[a, 3:5], gam[a, 3:5]
        if np.linalg.norm(gv) > 1e-8:
            assert abs(np.linalg.norm(pv) - mv[a] * pn) < 1e-9
    assert np.any(np.linalg.norm(gam[:, 1:3], axis=1) > 1e-3)  # the problem exercises slip


def test_contact_solve_derivatives_by_implicit_differentiation_match_finite_differences():
    """The converged impulses of a well-posed problem (D positive definite: unique solution, with
    sticking, slipping and rolling contacts) differentiated through the fixed point of the prox map
    (not the iterations): forward mode along a random direction of (b, D, mu, mu_v) against
    central differences of the solve (h = 1e-6, rtol 1e-13), and reverse mode against forward mode
    (the transposed tangent solve)."""
    prob = _random_problem(0)
    rng = np.random.default_rng(5)
    direction = jax.tree_util.tree_map(
        lambda x: jnp.asarray(rng.normal(size=x.shape)) if jnp.issubdtype(x.dtype, jnp.inexact) else x, prob)
    direction = eqx.tree_at(lambda p: p.D, direction, (direction.D + jnp.einsum("aibj->bjai", direction.D)) / 2)
    direction = eqx.tree_at(lambda p: p.offset, direction, jnp.zeros_like(prob.offset))
    # mu_v = 0 (contact 1) is the edge of its range (a one-sided derivative): keep it there
    direction = eqx.tree_at(lambda p: p.mu_v, direction, jnp.where(prob.mu_v > 0, direction.mu_v, 0.0))
    opts = MoreauOptions(rtol=1e-13, max_iterations=20000)

    @jax.jit
    def solve(s):
        moved = jax.tree_util.tree_map(lambda x, d: x + s * d if jnp.issubdtype(x.dtype, jnp.inexact) else x,
                                       prob, direction)
        return solve_contact_problem(moved, jnp.zeros((3, 5)), opts)[0]

    _, dP = jax.jit(lambda s: jax.jvp(solve, (s,), (jnp.ones_like(s),)))(jnp.asarray(0.0))
    h = 1e-6
    fd = (solve(jnp.asarray(h)) - solve(jnp.asarray(-h))) / (2 * h)
    np.testing.assert_allclose(np.asarray(dP), np.asarray(fd), atol=1e-6 * float(jnp.max(jnp.abs(fd))))
    assert float(jnp.max(jnp.abs(fd))) > 0.1
    weights = jnp.asarray(rng.normal(size=(3, 5)))
    g = jax.jit(jax.grad(lambda s: jnp.sum(weights * solve(s))))(jnp.asarray(0.0))
    np.testing.assert_allclose(float(g), float(jnp.sum(weights * dP)), rtol=1e-10)


@pytest.mark.slow
def test_block_stop_distance_gradient_by_implicit_differentiation():
    """Gradients through a whole run (the issue's analytic case): a block (a box on four corner
    spheres, statically indeterminate in its normal impulses) sliding from 1 m/s with mu = 0.2
    stops after v0^2 / (2 mu g) = 0.2548 m, so d(stop)/d(mu) = -v0^2 / (2 mu^2 g) = -1.274 m.
    jax.grad through 300 steps of 2 ms (implicit differentiation at every step's contact solve)
    matches central differences of the same discrete run to 1e-6 and the closed form to O(dt)."""
    v0, dt, n = 1.0, 2e-3, 300
    cs = box((v0, 0.0, 0.0), 0.2, 0.2)

    @jax.jit
    def stop(mu):
        c = eqx.tree_at(lambda c: c.mu, cs, jnp.full_like(cs.mu, 1.0) * mu)
        return jaxrod.simulate(c, dt=dt, n_steps=n, save_every=n).positions[-1, 0, 0]

    mu = jnp.asarray(0.2)
    g = float(jax.jit(jax.grad(stop))(mu))
    h = 1e-6
    fd = float((stop(mu + h) - stop(mu - h)) / (2 * h))
    assert abs(g - fd) < 1e-6 * abs(fd), (g, fd)
    exact = -v0 * v0 / (2 * 0.2**2 * G)
    assert abs(g - exact) < 0.01 * abs(exact), (g, exact)


def test_prox_ellipse_is_the_euclidean_projection():
    """Outside points: against a brute-force nearest point on a 200k-point parametrisation of the
    ellipse (disk and segment included); inside points stay."""
    th = np.linspace(0, 2 * np.pi, 200001)
    for x, a in (([3.0, 1.0], [2.0, 0.5]), ([0.1, -4.0], [0.3, 1.5]), ([1e-4, 2e-4], [1e-4, 5e-5]),
                 ([1.5, 0.2], [1.0, 1.0]), ([2.0, 3.0], [1.0, 0.0])):
        x, a = np.asarray(x), np.asarray(a)
        y = np.asarray(prox_ellipse(jnp.asarray(x), jnp.asarray(a)))
        pts = np.stack([a[0] * np.cos(th), a[1] * np.sin(th)], 1)
        best = pts[np.argmin(np.sum((pts - x) ** 2, 1))]
        np.testing.assert_allclose(y, best, atol=1e-5 * max(a))
    inside = np.asarray(prox_ellipse(jnp.asarray([0.1, 0.1]), jnp.asarray([1.0, 0.5])))
    np.testing.assert_array_equal(inside, [0.1, 0.1])
    # strongly anisotropic (ratio 25 to 1000; a looser Newton start failed here): the projection
    # lies on the ellipse with x - y along the outward normal y / a^2 (the optimality condition)
    rng = np.random.default_rng(3)
    project = jax.jit(jax.vmap(prox_ellipse, in_axes=(0, None)))
    for ratio in (25.0, 1000.0):
        a = np.array([1.0, 1.0 / ratio])
        x = rng.normal(size=(400, 2)) * 10.0 ** rng.uniform(-2, 2, (400, 1))
        x = x[np.sum((x / a) ** 2, 1) > 1]
        y = np.asarray(project(jnp.asarray(x), jnp.asarray(a)))
        nrm, d = y / a**2, x - y
        np.testing.assert_allclose(np.sum((y / a) ** 2, 1), 1.0, atol=1e-12)
        cross = nrm[:, 0] * d[:, 1] - nrm[:, 1] * d[:, 0]
        assert np.all(np.abs(cross) < 1e-9 * np.linalg.norm(nrm, axis=1) * np.linalg.norm(d, axis=1) + 1e-15)
        assert np.all(np.sum(nrm * d, 1) >= 0)


def test_bad_input_is_refused_naming_the_parameter():
    b = RigidBody("b", 1.0, (1.0, 1.0, 1.0))
    sys = MultibodySystem([b])
    cases = [
        (lambda: SphereContact("b", (0, 0, 0), -0.1), "SphereContact('b').radius must be a finite number > 0"),
        (lambda: SphereContact("b", (0, 0, 0), 0.1, restitution=1.5),
         "restitution must be a finite number >= 0 and <= 1"),
        (lambda: SphereContact("b", (0, 0, 0), 0.1, mu=0.2, mu_along=0.1),
         "give mu (isotropic) or mu_along/mu_across"),
        (lambda: SphereContact("b", (0, 0, 0), 0.1, mu_across=-1.0), "mu_across must be a finite number >= 0"),
        (lambda: SphereContact("b", (0, 0, 0), 0.1, direction=(0, 0, 0)),
         "direction must be a finite non-zero 3-vector"),
        (lambda: Plane(normal=(0, 0, 0)), "Plane.normal must be a finite non-zero 3-vector"),
        (lambda: ContactSystem(sys, SphereContact("c", (0, 0, 0), 0.1)), "spheres[0].body = 'c' names no body"),
        (lambda: ContactSystem(sys, []), "at least one SphereContact"),
        (lambda: Box((0, 0, 0), (0.1, -0.1, 0.1)), "Box.half_extents must be 3 numbers > 0"),
        (lambda: ContactSystem(sys, SphereContact("b", (0, 0, 0), 0.1), planes=()), "at least one obstacle"),
        (lambda: MoreauOptions(forces_at="end"), "MoreauOptions.forces_at must be one of ['midpoint', 'start']"),
        (lambda: MoreauOptions(active_margin=-1.0), "MoreauOptions.active_margin must be a finite number >= 0"),
        (lambda: MoreauOptions(compliance=-1e-3), "MoreauOptions.compliance must be a finite number >= 0 [-], got -0.001"),
        (lambda: MoreauOptions(implicit_regularization=float("nan")),
         "MoreauOptions.implicit_regularization must be a finite number >= 0 [-], got nan"),
        (lambda: MoreauOptions(method="newton"), "MoreauOptions.method must be one of ['gauss_seidel', 'jacobi']"),
        (lambda: MoreauOptions(relaxation=2.5), "MoreauOptions.relaxation must be a finite number > 0 and <= 2"),
        (lambda: MoreauOptions(r=(0.1, -1, 0.1)), "MoreauOptions.r must be 3 finite numbers > 0"),
        (lambda: ContactSystem(sys, SphereContact("b", (0, 0, 0), 0.1)).stepper("backward_euler"),
         "scheme must be None or 'moreau'"),
    ]
    for make, msg in cases:
        with pytest.raises(ValueError) as info:
            make()
        assert msg in str(info.value), (msg, str(info.value))


def test_a_step_whose_contact_iteration_fails_names_that_solver():
    # the same program as the resting ball (tolerances are array leaves): tolerances no change can
    # meet make the prox iteration run out of sweeps in the first step
    model = ball((0.0, 0.0, 0.1), (1.0, 0.0, 0.0))
    model = eqx.tree_at(lambda s: (s.options.rtol, s.options.atol), model, (jnp.asarray(-1.0), jnp.asarray(-1.0)))
    with pytest.raises(jaxrod.ConvergenceError) as info:
        jaxrod.simulate(model, dt=DT, n_steps=3)
    msg = str(info.value)
    assert msg.startswith("the contact (prox) iteration did not converge at step 0"), msg
    assert "last impulse change [N s]" in msg and "MoreauOptions.max_iterations" in msg and "Newton" not in msg
    assert info.value.step == 0


def test_checkpointed_reverse_mode_gives_the_same_gradient_with_a_small_tape():
    """jax.grad of the slide-to-roll ball's position at 0.4 s w.r.t. mu, through 400 Moreau steps
    (each contact solve differentiated implicitly, reverse mode): with ``simulate(checkpoint=True)``
    the gradient is the same to 1e-12 and XLA's temporary buffers shrink (only the states at the 20
    saves and one interval's are kept; measured 10 MB -> 72 kB); both match the closed form
    dx/dmu = -v0 t* / (7 mu) with t* = 2 v0 / (7 mu g) (x = v0 t* / 7 + 5/7 v0 T) to O(dt)."""
    v0, r, mu0 = 1.0, 0.1, 0.3

    def x_end(mu, checkpoint):
        cs = ball((0.0, 0.0, r), (v0, 0.0, 0.0), mu=mu0, r=r)
        cs = eqx.tree_at(lambda c: c.mu, cs, jnp.broadcast_to(mu, cs.mu.shape))
        return jaxrod.simulate(cs, dt=DT, n_steps=400, save_every=20, checkpoint=checkpoint).positions[-1, 0, 0]

    out = {}
    for ck in (False, True):
        compiled = jax.jit(jax.grad(lambda m, ck=ck: x_end(m, ck))).lower(jnp.asarray(mu0)).compile()
        mem = compiled.memory_analysis()
        out[ck] = (float(compiled(jnp.asarray(mu0))), None if mem is None else mem.temp_size_in_bytes)
    assert abs(out[True][0] - out[False][0]) <= 1e-12 * abs(out[False][0])
    ts = 2 * v0 / (7 * mu0 * G)
    assert abs(out[False][0] - (-v0 * ts / (7 * mu0))) < 0.02 * v0 * ts / (7 * mu0)
    if out[False][1] is not None:
        assert out[True][1] < 0.1 * out[False][1], out
