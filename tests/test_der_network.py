"""Multi-rod DER networks (:class:`jaxrod.models.der.model.DERNetwork`): elastic joints and
natural-curvature actuation.

* A single limb is exactly :class:`DERModel` (trajectory and static solution, to round-off).
* Two collinear limbs joined end to end are exactly the continuous rod, also when the second limb
  is numbered backwards (sign flips of tangents and twist at the joint).
* A jointed, curved, non-planar star at rest stays at rest.
* A T-joint transmits bending and torsion: the host beam deflects as a propped cantilever under
  half the branch moment, and twists linearly with the torque M / (2 GJ / L); a symmetric star
  under a symmetric load responds symmetrically to round-off and its hub deflection lies between
  the clamped-guided beam values for L - dl/2 and L.
* Uniform natural curvature settles a clamped limb into a circle of radius
  l / (2 sin(kappa l / 2)); gradient of the tip w.r.t. kappa vs central differences.
* Bad input raises clear errors.

Compilation dominates the cost of these small problems, so the physics cases share programs: a
network may hold several disconnected structures, and one *dynamic* network (a loaded limb next to
a star at rest) and one *static* network (a loaded limb, an actuated limb, two jointed rods, a
T-joint and a symmetric star) cover everything with one simulate and one static solve.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod.models.der.model import DERNetwork, Joint, integrated_curvature
from jaxrod.scenes import straddled_cantilever_points

E, RHO, H = 1e6, 1000.0, 0.01
MAT = {"youngs_modulus": E, "density": RHO, "radius": H}
EI = E * np.pi * H**4 / 4
GJ = E / 3 * np.pi * H**4 / 2  # nu = 0.5
TIGHT = jaxrod.NewtonSolver(linear_solver=None, rtol=1e-12, atol=1e-14, max_steps=100)
N = 11  # nodes of the single limbs and of the continuous rod (one DERModel program each)
STAR_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
ARC_KAPPA = 3.0  # 1/m; the arc limb is 0.5 m long: total turning 1.5 rad


def rod(points, **kw):
    return jaxrod.DERRod.from_polyline(np.asarray(points, dtype=float), **{"rest": "stress_free", **MAT, **kw})


def line(start, end, n):
    return np.linspace(np.asarray(start, float), np.asarray(end, float), n)


class Builder:
    """Collects limbs, joints, boundary conditions and loads of several structures."""

    def __init__(self):
        self.limbs, self.joints, self.clamps, self.loads = [], [], [], {}

    def add(self, points, **kw):
        self.limbs.append(rod(points, **kw))
        return len(self.limbs) - 1

    def build(self, **kw):
        return DERNetwork(
            self.limbs,
            self.joints,
            clamped_edges=self.clamps,
            point_loads=self.loads,
            **kw,
        )


def loaded_limb():
    """A cantilever with non-uniform 3D natural curvature and a 3D tip load, as a DERRod and load."""
    r = rod(line((0, 0, 0), (0.5, 0, 0), N))
    s = np.linspace(0, 1, N - 2)
    kappa = np.stack([-0.01 + 0.02 * s, 0.02 - 0.01 * s**2], axis=1)
    return r.with_natural_curvature(jnp.asarray(kappa)), np.array([0.002, 0.004, -0.01])


def der_model(r, tip, **kw):
    forces = np.zeros((r.n_nodes, 3))
    forces[-1] = tip
    return jaxrod.DERModel(r, clamped_edges=(0,), point_forces=forces, **kw)


# ---- dynamics: a loaded limb (== DERModel) next to a curved star at rest --------------------------


def curved_star(b, offset):
    hub = np.asarray(offset, dtype=float)
    body = line(hub + (0.0, -0.2, 0.1), hub, 5)  # the body's last node hosts the joint
    leg0 = line(hub, hub + (0.3, 0.0, 0.05), 7)
    leg1 = line(hub, hub + (-0.15, 0.25, -0.1), 6)
    t = np.linspace(0, 2.0, 8)  # a helical leg (natural curvature and twist != 0)
    leg2 = hub + np.stack(
        [0.05 * np.sin(t), -0.05 * (1 - np.cos(t)), -0.04 * t], axis=1
    )
    ids = [b.add(p) for p in (body, leg0, leg1, leg2)]
    b.joints.append(Joint(host=(ids[0], -1), attached=[(k, 0) for k in ids[1:]]))
    return ids


@pytest.fixture(scope="module")
def dynamic():
    r, tip = loaded_limb()
    v0 = np.zeros((N, 4))
    v0[:, 2] = np.linspace(
        0, 0.5, N
    )  # initial velocity, and the tip load, set it in motion
    v0[:, 3] = 2.0 * np.linspace(0, 1, N)
    v0[0], v0[1], v0[:, 3][[0, -1]] = 0.0, 0.0, 0.0
    der = der_model(r, tip, damping=0.05, v0=v0)
    b = Builder()
    b.limbs.append(r)
    b.clamps.append((0, 0))
    b.loads[(0, -1)] = tip
    star = curved_star(b, (0.0, 2.0, 0.0))
    net0 = b.build(damping=0.05)
    v0_net = np.zeros((net0.topology.n_rows, 4))
    v0_net[:N, :3] = v0[:, :3]
    v0_net[: N - 1, 3] = v0[:-1, 3]
    net = b.build(damping=0.05, v0=v0_net)
    a = jaxrod.simulate(der, dt=0.01, n_steps=50, solver=TIGHT)
    z = jaxrod.simulate(net, dt=0.01, n_steps=50, solver=TIGHT)
    return der, a, net, z, star


def test_single_limb_trajectory_equals_dermodel(dynamic):
    _, a, _, b, _ = dynamic
    moved = float(jnp.max(jnp.abs(a.q[-1] - a.q[0])))
    assert moved > 0.05  # large motion, twist included
    np.testing.assert_allclose(
        np.asarray(b.q[:, :N, :3]), np.asarray(a.q[:, :, :3]), rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(
        np.asarray(b.q[:, : N - 1, 3]), np.asarray(a.q[:, :-1, 3]), rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(
        np.asarray(b.frames[:, : N - 1]), np.asarray(a.frames), rtol=0, atol=1e-10
    )


def test_one_limb_network_has_dermodel_layout(dynamic):
    der = dynamic[0]
    r, tip = loaded_limb()
    net = DERNetwork(
        [r], clamped_edges=[(0, 0)], point_loads={(0, -1): tip}, damping=0.05, v0=der.v0
    )
    np.testing.assert_array_equal(
        np.asarray(net.fixed_mask()), np.asarray(der.fixed_mask())
    )
    np.testing.assert_array_equal(np.asarray(net.q0), np.asarray(der.q0))
    np.testing.assert_allclose(
        np.asarray(net.mass()), np.asarray(der.mass()), rtol=1e-15
    )
    q = der.q0 + 0.01 * jnp.sin(jnp.arange(der.q0.size).reshape(der.q0.shape))
    v = jnp.cos(q)

    @jax.jit
    def quantities(q):  # energies, not their gradients: compiles in seconds
        sa, sb = der.initial_state(), net.initial_state()
        return (
            jnp.stack([der.elastic_energy(q, sa.aux), net.elastic_energy(q, sb.aux)]),
            jnp.stack([der.external_forces(q, v, 0.0), net.external_forces(q, v, 0.0)]),
        )

    energies, forces = quantities(q)
    assert float(energies[0]) > 1e-3
    np.testing.assert_allclose(float(energies[1]), float(energies[0]), rtol=1e-13)
    np.testing.assert_allclose(
        np.asarray(forces[1]), np.asarray(forces[0]), rtol=0, atol=1e-15
    )


def test_curved_star_at_rest_stays_at_rest(dynamic):
    _, _, net, traj, star = dynamic
    nodes = np.concatenate([net.limb_node_indices(k) for k in star])
    edges = np.concatenate(
        [net.edge_index(k, 0) + np.arange(net.limbs[k].n_nodes - 1) for k in star]
    )
    assert (
        net.n_stencils == (N - 2) + (3 + 5 + 4 + 6) + 6
    )  # the hub joins 4 edges: 6 pairs
    assert float(jnp.max(jnp.abs(net.joint_natural_curvature))) > 0.1
    disp = float(jnp.max(jnp.abs(traj.positions[:, nodes] - traj.positions[0, nodes])))
    assert disp < 1e-12, disp
    assert float(jnp.max(jnp.abs(traj.twist[:, edges]))) < 1e-10


# ---- statics: one solve for a zoo of disconnected structures ------------------------------------


def _static_zoo():
    b, parts = Builder(), {}
    # the loaded limb (== DERModel) and the actuated limb (uniform natural curvature)
    r, tip = loaded_limb()
    b.limbs.append(r)
    b.clamps.append((0, 0))
    b.loads[(0, -1)] = tip
    parts["arc"] = b.add(line((0, 1, 0), (0.5, 1, 0), N))
    b.clamps.append((parts["arc"], 0))
    # two collinear limbs joined end to end; in the second pair the second limb is numbered
    # backwards; both carry the tip load of the continuous cantilever (P L^2 / EI = 0.3)
    pts = straddled_cantilever_points(N, 1.0)
    tip_load = np.array([0.0, 0.06 * EI, -0.3 * EI])
    for name, reverse, y in (
        ("same-direction", False, 2.5),
        ("second-limb-reversed", True, 5.0),
    ):
        offset = np.array([0.0, y, 0.0])
        a = b.add(pts[:6] + offset)
        c = b.add((pts[5:][::-1] if reverse else pts[5:]) + offset)
        b.joints.append(Joint(host=(a, -1), attached=[(c, -1 if reverse else 0)]))
        b.clamps.append((a, 0))
        b.loads[(c, 0 if reverse else -1)] = tip_load
        parts[name] = (a, c, reverse, offset)
    # T-joint: host along x over [-L, L], clamped at both ends (clamped edges straddle x = +-L),
    # joint at x = 0; branch along +y of length Lb with a small tip force (P, 0, P)
    m, L, Lb = 11, 0.5, 0.5
    dl = L / (m - 0.5)
    x = -L - dl / 2 + dl * np.arange(2 * m + 1)
    offset = np.array([0.0, -3.0, 0.0])
    h = b.add(np.stack([x, 0 * x, 0 * x], axis=1) + offset)
    br = b.add(line((0, 0, 0), (0, Lb, 0), 11) + offset)
    b.joints.append(Joint(host=(h, m), attached=[(br, 0)]))
    b.clamps += [(h, 0), (h, -1)]
    P = 1e-4 * EI / Lb**2
    b.loads[(br, -1)] = (P, 0.0, P)
    parts["T"] = {"host": h, "m": m, "L": L, "Lb": Lb, "x": x, "offset": offset, "P": P}
    # symmetric star: four legs along +-x, +-y from a free hub, outer ends clamped (straddling
    # r = L), vertical force on the hub
    n, L = 9, 0.5
    s = L / (n - 1.5) * np.arange(n)
    offset = np.array([3.0, 0.0, 0.0])
    legs = [
        b.add(np.stack([c * s, d * s, 0 * s], axis=1) + offset) for c, d in STAR_DIRS
    ]
    b.joints.append(Joint(host=(legs[0], 0), attached=[(k, 0) for k in legs[1:]]))
    b.clamps += [(k, -1) for k in legs]
    P = 1e-3 * EI / L**2
    b.loads[(legs[0], 0)] = (0.0, 0.0, -P)
    parts["star"] = {"legs": legs, "s": s, "L": L, "offset": offset, "P": P}
    return b.build(), parts


@pytest.fixture(scope="module")
def zoo():
    net, parts = _static_zoo()
    net = net.with_limb_curvature(parts["arc"], (0.0, ARC_KAPPA))
    st, res = jaxrod.solve_static(net, solver=TIGHT)
    assert bool(res.converged)
    r, tip = loaded_limb()
    single, _ = jaxrod.solve_static(der_model(r, tip), solver=TIGHT)
    pts = straddled_cantilever_points(N, 1.0)
    cont, _ = jaxrod.solve_static(
        der_model(rod(pts), np.array([0.0, 0.06 * EI, -0.3 * EI])), solver=TIGHT
    )
    parts["state"] = st  # the converged state: a warm start for the gradient test
    return net, np.asarray(st.q), np.asarray(single.q), np.asarray(cont.q[:, :3]), parts


def test_single_limb_static_equals_dermodel(zoo):
    _, q, single, _, _ = zoo
    assert (
        np.max(np.abs(single[:, :3] - np.asarray(loaded_limb()[0].rest_positions)))
        > 1e-3
    )
    np.testing.assert_allclose(q[:N, :3], single[:, :3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(q[: N - 1, 3], single[:-1, 3], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["same-direction", "second-limb-reversed"])
def test_two_collinear_limbs_equal_continuous_rod(zoo, name):
    net, q, _, cont, parts = zoo
    a, b, reverse, offset = parts[name]
    limb_b = net.limb_node_indices(b)
    order = np.concatenate(
        [net.limb_node_indices(a), (limb_b[::-1] if reverse else limb_b)[1:]]
    )
    joined = q[order, :3] - offset
    deflection = np.max(np.abs(cont[:, 2]))
    assert deflection > 0.05  # large deflection, with an out-of-plane component too
    assert np.max(np.abs(cont[:, 1])) > 1e-3
    assert np.max(np.abs(joined - cont)) <= 1e-8 * deflection


def test_t_joint_transmits_bending_and_torsion(zoo):
    net, q, _, _, parts = zoo
    p = parts["T"]
    m, L, x, P = p["m"], p["L"], p["x"], p["P"]
    M0 = P * p["Lb"]  # moment of each tip-force component about the joint
    # bending (about -z): each half is a propped cantilever (pinned at the joint by antisymmetry,
    # clamped at the wall) loaded by M0/2: y(s) = -M0/2 s (L - s)^2 / (4 EI L), s = |x|
    y = q[net.limb_node_indices(p["host"]), 1] - p["offset"][1]
    # antisymmetric up to the second-order coupling with the out-of-plane load
    np.testing.assert_allclose(y, -y[::-1], rtol=0, atol=1e-3 * np.max(np.abs(y)))
    s = np.abs(x)
    y_beam = np.where(
        s < L, np.sign(x) * -0.5 * M0 * s * (L - s) ** 2 / (4 * EI * L), 0.0
    )
    free = slice(2, -2)  # the nodes of the clamped end edges are fixed
    err = np.max(np.abs(y[free] - y_beam[free])) / np.max(np.abs(y_beam))
    assert err < 0.025, err  # first-order discretisation error, dl / L = 0.095
    # torsion: torque M0 about +x shared by the two halves: theta(s) = M0 L / (2 GJ) (1 - s / L)
    e0 = net.edge_index(p["host"], 0)
    theta = q[e0 : e0 + 2 * m, 3]  # host edges; the clamped end edges have theta = 0
    mid = 0.5 * (x[:-1] + x[1:])
    theta_beam = np.clip(M0 * L / (2 * GJ) * (1 - np.abs(mid) / L), 0.0, None)
    theta_beam[[0, -1]] = 0.0
    np.testing.assert_allclose(
        theta, theta_beam, rtol=0, atol=2e-3 * np.max(theta_beam)
    )


def test_symmetric_star_symmetric_response_and_hub_deflection(zoo):
    net, q, _, _, parts = zoo
    p = parts["star"]
    pos = q[: net.n_nodes, :3] - p["offset"]
    z = [pos[net.limb_node_indices(k), 2] for k in p["legs"]]
    scale = np.max(np.abs(z[0]))
    for k in range(1, 4):
        np.testing.assert_allclose(z[k], z[0], rtol=0, atol=1e-10 * scale)
    # in-plane: leg k's radial/lateral positions equal leg 0's rotated by 90 k degrees
    radial = []
    for k, (c, d) in zip(p["legs"], STAR_DIRS):
        r = pos[net.limb_node_indices(k)]
        radial.append(r[:, 0] * c + r[:, 1] * d)
        assert np.max(np.abs(-r[:, 0] * d + r[:, 1] * c)) < 1e-12 * scale
    for k in range(1, 4):
        np.testing.assert_allclose(radial[k], radial[0], rtol=0, atol=1e-10 * scale)
    # four clamped-guided legs in parallel: delta = P L^3 / (48 EI) in the continuum. The joint
    # pairs hold each leg's first edge nearly level, so the guided end sits between the hub node
    # and the first edge's midpoint: L - dl/2 <= L_eff <= L (first-order discretisation error)
    delta = -z[0][0]
    L, dl = p["L"], p["s"][1]
    ratio = delta / (p["P"] * L**3 / (48 * EI))
    assert (1 - dl / (2 * L)) ** 3 <= ratio <= 1.0, ratio


def test_uniform_natural_curvature_gives_circular_arc(zoo):
    net, q, _, _, parts = zoo
    pos = q[net.limb_node_indices(parts["arc"]), :3] - np.array([0.0, 1.0, 0.0])
    dl, kappa = 0.05, ARC_KAPPA
    phi = kappa * dl  # natural turning angle per node: kappa_bar = 2 tan(phi / 2)
    np.testing.assert_allclose(
        np.asarray(net.natural_curvature[net.limb_stencil_indices(parts["arc"]), 1]),
        float(integrated_curvature(kappa, dl)),
        rtol=1e-14,
    )
    radius = dl / (
        2 * np.sin(phi / 2)
    )  # the circle through the vertices of the polygon
    center = np.array(
        [dl / 2, 0.0, np.sqrt(radius**2 - dl**2 / 4)]
    )  # bends toward +z (d2)
    np.testing.assert_allclose(np.linalg.norm(pos - center, axis=1), radius, rtol=1e-10)
    assert (
        abs(radius * kappa - 1) < (kappa * dl) ** 2 / 20
    )  # = 1 + (kappa l)^2 / 24 + ...
    assert np.max(np.abs(pos[:, 1])) < 1e-12  # planar


def test_gradient_wrt_natural_curvature_matches_central_differences(zoo):
    net, _, _, _, parts = zoo
    arc = parts["arc"]
    tip_node = net.node_index(arc, -1)

    def loss(k):
        model = net.with_limb_curvature(arc, jnp.stack([0.0 * k, k]))
        st, _ = jaxrod.solve_static(
            model, state0=parts["state"], solver=TIGHT
        )  # warm start
        return st.q[tip_node, 0] + 0.5 * st.q[tip_node, 2]

    k0 = ARC_KAPPA
    # one scalar parameter: forward mode, one compiled program whose primal output also serves the
    # finite differences (cold CPU 49 s; reverse mode plus a separate value program: 56 s)
    value_and_derivative = jax.jit(lambda k: jax.jvp(loss, (k,), (jnp.ones_like(k),)))
    g = float(value_and_derivative(jnp.asarray(k0))[1])
    h = 1e-4
    fd = (float(value_and_derivative(jnp.asarray(k0 + h))[0])
          - float(value_and_derivative(jnp.asarray(k0 - h))[0])) / (2 * h)
    assert abs(fd) > 1e-3
    assert abs(g - fd) < 1e-5 * abs(fd), (g, fd)


# ---- topology, scenes, bad input ---------------------------------------------------------------


def test_every_pair_of_edges_at_a_node_has_exactly_one_stencil():
    host = rod(line((-1, 0, 0), (1, 0, 0), 5))
    branch = rod(line((0, 0, 0), (0, 1, 0), 4))
    t = DERNetwork([host, branch], [Joint(host=(0, 2), attached=[(1, 0)])])
    # host interior node: the pair (previous, next) stays the host's own stencil (DisMech counts
    # it a second time); the joint adds (previous, branch) and (next, branch)
    assert t.n_stencils == 3 + 2 + 2
    np.testing.assert_array_equal(
        np.asarray(t.topology.stencil_edges[-2:]), [[1, 4], [2, 4]]
    )
    np.testing.assert_array_equal(
        np.asarray(t.topology.stencil_signs[-2:]), [[1, 1], [-1, 1]]
    )
    assert t.n_nodes == 5 + 3 and t.n_edges == 4 + 3
    # joint stencils see the limbs' material frames aligned at rest (twist offset), so the rest
    # twist is zero and the 90 degree turns have kappa_bar = 2 tan(45 deg) = 2
    np.testing.assert_allclose(np.asarray(t.joint_natural_twist), 0.0, atol=1e-14)
    np.testing.assert_allclose(
        np.linalg.norm(np.asarray(t.joint_natural_curvature), axis=1), 2.0, rtol=1e-14
    )
    # masses: half of every incident edge
    m = np.asarray(t.node_masses())
    edge_mass = RHO * np.pi * H**2 * np.array([0.5, 1.0 / 3])
    np.testing.assert_allclose(m[2], edge_mass[0] + 0.5 * edge_mass[1], rtol=1e-14)
    np.testing.assert_allclose(
        float(np.sum(m)), 4 * edge_mass[0] + 3 * edge_mass[1], rtol=1e-14
    )


def test_scenes_build():
    from jaxrod.scenes.network import spider, two_limb_actuated

    sp = spider(n_nodes=5)
    net = sp.model
    assert len(net.limbs) == 9 and len(net.joints) == 5
    assert net.n_nodes == 9 * 5 - 8 and net.n_edges == 9 * 4
    # hub: body + 4 arms = 5 incident edges, 10 pairs; each arm tip: 1 pair
    assert net.n_stencils == 9 * 3 + 10 + 4
    assert abs(sp.reference["total_mass_kg"] - 1180 * np.pi * 0.005**2 * 0.9) < 1e-12
    tl = two_limb_actuated(n_nodes=6)
    assert tl.model.natural_curvature_at(0.0).shape == (2 * 4 + 1, 2)
    np.testing.assert_allclose(np.asarray(tl.model.natural_curvature_at(0.0)), 0.0)
    kb = np.asarray(tl.model.natural_curvature_at(5.0))
    np.testing.assert_allclose(kb[:4, 1], 2 * np.tan(10.0 * 0.02 / 2), rtol=1e-14)
    np.testing.assert_allclose(kb[4:8, 1], 2 * np.tan(20.0 * 0.02 / 2), rtol=1e-14)
    assert tl.reference["rest_shape_no_gravity_m"].shape == (11, 3)


@pytest.mark.slow
def test_spider_falls_freely_then_lands_on_the_floor():
    """The ``network-spider`` scene simulated (5 nodes per limb, the scene's backward Euler at
    2.5 ms, 0.2 s: the fall and the landing at ~0.14 s).

    * Free fall: in uniform gravity the spider translates rigidly (internal forces cancel and the
      stress-free shape stays stress-free), so its centre of mass follows backward Euler's exact
      discrete free fall ``x_n = x_0 + g dt^2 n (n + 1) / 2`` (``g t^2 / 2`` plus the scheme's
      ``g t dt / 2``), until the first foot enters the floor's contact range ``h + delta``, at
      the step this formula predicts.
    * Landing: vertical momentum balance at every step, ``M (vz_{n+1} - vz_n) = dt (sum_i f_i -
      M g_z)`` with the floor's normal forces ``f_i`` at the new positions (the elastic and joint
      forces are internal; friction is horizontal; no damping), and no node sinks more than
      ``delta`` into the floor's surface.
    """
    from jaxrod.scenes import get_scene

    scene = get_scene("network-spider", n_nodes=5)
    model, dt, n_steps = scene.model, scene.dt, 80
    traj = jaxrod.simulate(model, dt=dt, n_steps=n_steps, scheme=scene.scheme)
    x, v = np.asarray(traj.positions), np.asarray(traj.v)
    mass = np.asarray(model.node_masses())
    M = mass.sum()
    assert M == pytest.approx(1180.0 * np.pi * 0.005**2 * 0.9, rel=1e-12)  # nine limbs of 0.1 m
    floor = model.contacts[0]
    h, delta, z_floor = 0.005, float(floor.delta), -0.1
    g = np.array([1.0, 0.0, -9.8])  # the scene's tilted gravity

    # free fall: the feet start at z = 0, 0.1 m above the floor
    n = np.arange(n_steps + 1)
    fall = g[2] * dt**2 * n * (n + 1) / 2
    onset_pred = int(np.argmax(x[0, :, 2].min() + fall < z_floor + h + delta))
    onset = int(np.argmax(x[:, :, 2].min(axis=1) < z_floor + h + delta))
    assert onset == onset_pred and 0.13 < onset * dt < 0.14
    com = np.einsum("i,tij->tj", mass, x) / M
    free = slice(0, onset)
    com_pred = com[0] + g * (dt**2 * n[free] * (n[free] + 1) / 2)[:, None]
    np.testing.assert_allclose(com[free], com_pred, rtol=0, atol=1e-10)
    rigid = x[free] - (com[free] - com[0])[:, None, :]
    np.testing.assert_allclose(rigid, np.broadcast_to(x[0], rigid.shape), rtol=0, atol=1e-10)

    # landing: the floor's impulse is what changes the vertical momentum
    radius = model.node_radius()
    f_floor = np.asarray(jax.vmap(lambda xi: floor.normal_forces(xi, radius))(jnp.asarray(x[1:])))
    dp = M * np.diff(np.einsum("i,ti->t", mass, v[:, :, 2]) / M)
    impulse = dt * (f_floor.sum(axis=1) + M * g[2])
    weight_impulse = M * abs(g[2]) * dt
    # to the Newton tolerance (measured: <= 2e-6 of the weight's impulse; impact steps ~0.6 of it)
    np.testing.assert_allclose(dp, impulse, rtol=0, atol=2e-5 * weight_impulse)
    assert f_floor[onset:].sum() * dt > M * np.sqrt(2 * abs(g[2]) * 0.09)  # the floor stopped the fall
    assert x[:, :, 2].min() >= z_floor + h - delta


def test_contacts_use_the_contact_module():
    from jaxrod.models.der.contact import FloorContact, RodRodContact, imc_energy

    # a V of two limbs joined at the bottom, its lowest node 1 mm above the rod radius over the
    # floor, and a third limb crossing the V's first arm 1.3 mm closer than h_a + h_c (rod-rod)
    a = rod(line((0.0, 0.0, 0.011), (-0.1, 0.0, 0.1), 6))
    b = rod(line((0.0, 0.0, 0.011), (0.1, 0.0, 0.1), 6), radius=0.005)
    c = rod(line((-0.05, -0.1, 0.0555 + 0.025), (-0.05, 0.1, 0.0555 + 0.025), 7))
    floor = FloorContact(offset=0.0, stiffness=1e3, delta=2e-3, mu=0.3, nu=1e-3)
    touch = RodRodContact(stiffness=1e3, delta=1e-2, mu=0.2, self_contact=False)
    net = DERNetwork([a, b, c], [Joint((0, 0), [(1, 0)])], contacts=(floor, touch))
    assert isinstance(net.default_linear_solver(), jaxrod.DenseJacobianSolver)
    # admissible pairs: different limbs only, never two edges meeting at the joint
    first, second = np.asarray(net.contact_first), np.asarray(net.contact_second)
    limb_of_edge = np.repeat([0, 1, 2], [5, 5, 6])
    assert np.all(limb_of_edge[first] != limb_of_edge[second])
    assert (0, 5) not in set(
        zip(first.tolist(), second.tolist())
    )  # both leave the joint node
    state = net.initial_state()
    x = state.q[: net.n_nodes, :3]
    radius = np.asarray(net.node_radius())
    assert (
        radius[0] == 0.01 and radius[net.node_index(1, -1)] == 0.005
    )  # joint: largest radius
    e_floor = 1e3 * np.sum(np.asarray(imc_energy(x[:, 2], radius, 2e-3)))
    pairs = state.aux.pairs
    assert bool(jnp.any(pairs.active))
    e_total = float(net.contact_energy(state.q, state.aux))
    assert e_floor > 0 and e_total > e_floor  # floor and rod-rod both active
    v = jnp.zeros_like(state.q).at[: net.n_nodes, 0].set(0.01)
    f = np.asarray(net.friction_forces(state.q, v, state.aux))
    assert f[0, 0] < 0 and np.all(
        f[:, 1:] == 0.0
    )  # floor friction opposes the sliding; rod-rod: none
    with pytest.raises(
        ValueError, match=r"initial overlap: nodes \[0\] penetrate contacts\[0\]"
    ):
        DERNetwork(
            [a, b],
            [Joint((0, 0), [(1, 0)])],
            contacts=(FloorContact(offset=0.008, delta=1e-3),),
        )
    with pytest.raises(
        TypeError, match=r"contacts\[0\] must be a FloorContact or RodRodContact"
    ):
        DERNetwork([a, b], [Joint((0, 0), [(1, 0)])], contacts=("floor",))


# ---- 6. bad input -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def limbs():
    return [rod(line((0, 0, 0), (1, 0, 0), 5)), rod(line((1, 0, 0), (1, 1, 0), 4))]


@pytest.mark.parametrize(
    "joints, match",
    [
        (
            [Joint((2, 0), [(1, 0)])],
            r"joints\[0\]\.host: limb 2 does not exist \(the network has limbs 0..1\)",
        ),
        (
            [Joint((0, 5), [(1, 0)])],
            r"joints\[0\]\.host: node 5 does not exist on limb 0 \(valid: 0..4",
        ),
        ([Joint((0, -1), [(3, 0)])], r"joints\[0\]\.attached: limb 3 does not exist"),
        (
            [Joint((0, -1), [(1, 1)])],
            r"node 1 of limb 1 is not an end; only the first \(0\) or last",
        ),
        ([Joint((0, -1), [])], r"joints\[0\] attaches no limb end"),
        (
            [Joint((0, 2), [(1, 0)])],
            r"node 0 of limb 1 at \[1.0, 0.0, 0.0\] does not coincide with the joint",
        ),
        (
            [Joint((0, -1), [(1, 0)]), Joint((0, -1), [(1, -1)])],
            r"already hosts joint 0",
        ),
        (
            [Joint((0, -1), [(1, 0)]), Joint((0, 0), [(1, 0)])],
            r"attached to more than one joint",
        ),
        ([Joint((0, -1), [(0, -1)])], r"attaches node 4 of limb 0 to itself"),
    ],
)
def test_bad_joints_raise(limbs, joints, match):
    with pytest.raises(ValueError, match=match):
        DERNetwork(limbs, joints)


def test_bad_input_raises(limbs):
    j = [Joint((0, -1), [(1, 0)])]
    with pytest.raises(TypeError, match=r"limbs\[1\] must be a DERRod"):
        DERNetwork([limbs[0], np.zeros((4, 3))], j)
    with pytest.raises(TypeError, match=r"joints\[0\] must be a Joint"):
        DERNetwork(limbs, [((0, -1), [(1, 0)])])
    with pytest.raises(ValueError, match=r"needs at least one limb"):
        DERNetwork([])
    with pytest.raises(ValueError, match=r"at least 3 nodes \(n_nodes >= 3\), got 2"):
        rod(line((0, 0, 0), (1, 0, 0), 2))
    with pytest.raises(ValueError, match=r"youngs_modulus must be > 0 Pa"):
        rod(line((0, 0, 0), (1, 0, 0), 4), youngs_modulus=-1.0)
    with pytest.raises(ValueError, match=r"density must be finite"):
        rod(line((0, 0, 0), (1, 0, 0), 4), density=float("nan"))
    with pytest.raises(
        ValueError,
        match=r"clamped_edges: edge 3 does not exist on limb 1 \(valid: 0..2",
    ):
        DERNetwork(limbs, j, clamped_edges=[(1, 3)])
    with pytest.raises(ValueError, match=r"fixed_nodes: limb 4 does not exist"):
        DERNetwork(limbs, j, fixed_nodes=[(4, 0)])
    with pytest.raises(
        ValueError, match=r"point_loads: node 9 does not exist on limb 0"
    ):
        DERNetwork(limbs, j, point_loads={(0, 9): (0, 0, 1)})
    with pytest.raises(ValueError, match=r"damping must be >= 0"):
        DERNetwork(limbs, j, damping=-1.0)
    with pytest.raises(ValueError, match=r"fold-back"):
        DERNetwork(
            limbs + [rod(line((1, 0, 0), (0.5, 0, 0), 3))],
            [Joint((0, -1), [(1, 0), (2, 0)])],
        )
    with pytest.raises(ValueError, match=r"must be a \(limb, index\) pair of integers"):
        Joint((0, 1.5), [(1, 0)])
