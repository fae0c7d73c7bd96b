"""TMTDyn's fabric sleeve on a rigid pendulum (spec seed004 section 10) as a DER network whose two
clamped nodes follow a damped rigid pendulum (``sleeve-pendulum``).

The pendulum. A uniform link (m1 = 40 g, length l_m1 = 270 mm, centre of mass l_com1 = 135 mm
below the pivot) hinged about the world y axis at the origin, released at rest from
theta_h0 = 85 deg (angle from the downward vertical, positive toward -x), with viscous joint
damping ``joint_damping`` [N m s/rad]. Its motion is computed first from
:class:`~jaxrod.system.MultibodySystem` (a :class:`~jaxrod.system.Revolute` joint with damping),
integrated in joint coordinates (:class:`~jaxrod.system.JointSpaceSystem`, RK4), and then
*replayed* as the prescribed motion of the fabric's clamps,
as TMTDyn replays the recorded link trajectory (its constraint ``chi_c = rho_com``): the fabric
does not act back on the link (TMTDyn: "m1 and I_m1 are not important"). The paper's
mu_h = 1e2 "N s/m" is in garbled units and would hold the link still; the default 2e-4 N m s/rad
is a damping ratio of 1.4% of the small-amplitude swing (the amplitude falls to ~60% in 5 s).
The replay is TMTDyn's method, but here it replays a *bare* link, not a recording of the link
wearing the sleeve: the fabric (36 g on a 40 g link) matters. Measured with a fully coupled
variant (the pins as rod-to-body attachments of the i14-h1 branch's ``HybridSystem``, not on main
when this was written; backward Euler, dt = 5 ms): the period drops from 0.95 s to 0.84 s and the
swing decays to 24 deg within 3 s instead of 62 deg. Build that variant once the coupling lands.

The sleeve (link frame: the link along -z, the swing in the x-z plane, y out of it). A 3 x 5
grid, 15 nodes and 22 edges (2 x 5 + 3 x 4): 5 rows along the link from z = -l_cz = -30 mm (the
clamped row, next to the shoulder) down to -129 mm (l_m2z = 99 mm between the end rows), 3 columns
around the arm: the two side columns at x = -+l_cx = -+38 mm, y = 0 (where the sleeve touches the
arm) and the front column at x = 0, y = 110.3 mm, so that each across-edge is l_m2x / 3 = 116.7 mm
long (each node stands for a third of the 350 mm circumference, Eq. 45; the back third lies on the
arm and is not modelled, as the paper's open grid has no closing edges). Nodes are numbered as
TMTDyn's bodies 2-16, row by row from the free edge: label ``2 + 3 r + c`` for row ``r`` (0 free
edge .. 4 clamped) and column ``c`` (0 at -x, 1 front, 2 at +x); the clamps hold nodes 14 and 16
at ``(-+l_cx, 0, -l_cz)`` and the trackers sit on nodes 12 (s1) and 13 (s2).

The clamps are *pins*: the two nodes' positions follow the link; TMTDyn's clamps also fix the
nodes' orientations (six constraints each), which a DER node does not have. Two pins 76 mm apart
fix the clamped row's orientation except the rotation about the line through them, which gravity
and the fabric's bending settle. There is no arm inside the sleeve (no contact): in the default run
the front column swings from +y through the link to -y within the first swing.

Edges as ribbons, in DER's circular section. TMTDyn's ribbons have K_eps = a_c diag(G, G, E) and
K_alpha = diag(E, E, G) diag(J) with J = [t^3 b, t b^3, t^3 b + t b^3], t = l_m2y = 0.8 mm and
b = l_m2b = (l_m2x + l_m2z) / 2 = 224.5 mm, a_c = t b (spec 10.3: the 1/12 of a rectangle is
missing and b is wider than the grid spacing). E = 5 kPa was calibrated *with* those formulas, so
the calibrated products are kept: EA = E t b = 0.898 N. TMTDyn's ribbon bends out of its plane
with E t^3 b = 5.75e-7 N m^2 and in its plane with E t b^3 = 4.5e-2 N m^2; DER's section has one
EI. With the out-of-plane value alone the net shears in its plane until two edges at a node fold
onto each other (a 180 deg turn, where DER's bending is singular; measured: Newton failed at
t = 0.22 s, a joint stencil at 179.3 deg), so EI is the geometric mean E t^2 b^2 = 1.61e-4 N m^2
(out of plane 280x stiffer than TMTDyn's ribbon, in plane 280x softer; the gravito-bending length
(EI / w)^(1/3) is 87 mm for the fabric's 0.24 N/m of edge, against its 99 mm length: the sleeve
still drapes). A solid circle matches EA and EI with h = sqrt(4 EI / EA) = 26.8 mm and
E_eq = EA / (pi h^2) = 398 Pa; G = E_eq / 3 (nu = 0.5; TMTDyn: G ~ E/3), so GJ = (2/3) EI. The
density puts the fabric mass m2 = 36 g on the 22 edges (DER lumps half of each edge's mass on its
nodes, so nodes with more edges are heavier; TMTDyn gives every node m2 / 15).

Limbs. A :class:`~jaxrod.models.der.model.DERNetwork` joins limb *ends* to host nodes, so a
node may lie inside at most one limb. The grid is covered by the front column (5 nodes, through
the three inner front nodes) and, on each side, hooks ``(1, r) -> (0, r) -> (0, r + 1)`` for
r = 0..2 and ``(1, 3) -> (0, 3) -> (0, 4) -> (1, 4)`` (rest shapes stress free: the paper's beams
adopt the initial geometry, ``spring.init = nan``). Every pair of edges meeting at a node gets a
bending/twisting stencil, the frame rigidity of TMTDyn's beams clamped to rigid nodes.

A further limb draws the link (pivot, centre of mass, end; every DOF prescribed, not joined to
the fabric) so that figures show the pendulum.

Damping. TMTDyn damps beam strain rates (mu_eps = 1e2 N s/m, a quasi-static fabric); DER's
damping is absolute (``-eta V_i v_i``) and would also drag the whole sleeve through the swing, so
``damping`` defaults to a light 0.02 N s/m^2 and backward Euler's numerical dissipation damps the
fabric's stretching modes (~12 Hz; at dt = 5 ms about 19% of critical).

Results (the paper's two observations): the tracked nodes' z oscillates at twice the frequency of
their x (z follows cos theta, even in theta; x follows sin theta), and the fabric sags below the
shape it would keep if it moved rigidly with the link. Measured values: ``tests/test_sleeve.py``
and docs/papers/tmtdyn-stiff-flop.md.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..models.der import DERRod
from ..models.der.model import DERNetwork, Joint
from ..integrate.schemes import BackwardEuler
from .scene import Scene

__all__ = [
    "SLEEVE",
    "compound_pendulum_period",
    "grid_geometry",
    "link_rotation",
    "pendulum_angle",
    "pendulum_motion",
    "pendulum_system",
    "sleeve_pendulum",
]

G = 9.81

#: Spec section 10.2 (Table/Figure 10), SI units.
SLEEVE = {
    "link_mass_kg": 0.040,
    "fabric_mass_kg": 0.036,
    "link_length_m": 0.270,
    "link_com_m": 0.135,
    "fabric_width_m": 0.350,  # l_m2x, around the arm
    "fabric_thickness_m": 0.8e-3,  # l_m2y
    "fabric_length_m": 0.099,  # l_m2z, along the arm
    "clamp_x_m": 0.038,  # l_cx
    "clamp_z_m": 0.030,  # l_cz
    "release_angle_deg": 85.0,
    "youngs_modulus_Pa": 5e3,  # calibrated with TMTDyn's ribbon formulas
}
N_ROWS, N_COLS = 5, 3


def link_rotation(angle):
    """``(..., 3, 3)`` rotation about the world y axis by ``angle`` [rad] (NumPy or JAX input):
    the link frame's orientation at pendulum angle ``angle`` (0 hanging, positive toward -x)."""
    xp = jnp if not isinstance(angle, (float, int, np.ndarray, np.generic)) else np
    c, s = xp.cos(angle), xp.sin(angle)
    z, o = xp.zeros_like(c), xp.ones_like(c)
    return xp.stack(
        [xp.stack([c, z, s], -1), xp.stack([z, o, z], -1), xp.stack([-s, z, c], -1)], -2
    )


def compound_pendulum_period(amplitude, *, mass=None, com=None, inertia_pivot=None, g=G):
    """Undamped period [s] of a compound pendulum swinging with ``amplitude`` [rad]:
    ``4 sqrt(I_pivot / (m g d)) K(sin(amplitude / 2))``, K the complete elliptic integral of the
    first kind (by the arithmetic-geometric mean). Defaults: the sleeve's link (uniform rod,
    ``I_pivot = m l^2 / 3``)."""
    m = SLEEVE["link_mass_kg"] if mass is None else mass
    d = SLEEVE["link_com_m"] if com is None else com
    if inertia_pivot is None:
        inertia_pivot = m * SLEEVE["link_length_m"] ** 2 / 3.0
    k = math.sin(0.5 * amplitude)
    a, b = 1.0, math.sqrt(1.0 - k * k)
    for _ in range(40):
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return 4.0 * math.sqrt(inertia_pivot / (m * g * d)) * math.pi / (2.0 * a)


def pendulum_system(theta0: float, joint_damping: float):
    """The sleeve's bare link as a :class:`~jaxrod.system.MultibodySystem`: a uniform rod
    (40 g, 270 mm, inertia ``m l^2 / 12`` about its centre across the rod, a thin-rod value along
    it) hinged at the origin about y with damping ``joint_damping`` [N m s/rad], released at rest
    at ``theta0`` [rad]."""
    from ..system import MultibodySystem, Revolute, RigidBody

    m, L, d = SLEEVE["link_mass_kg"], SLEEVE["link_length_m"], SLEEVE["link_com_m"]
    ic = m * L**2 / 12.0
    # a 15 mm radius along the axis keeps the inertia physical (triangle inequality) and does not
    # enter the planar swing
    inertia = [ic, ic, m * 0.015**2 / 2.0]
    body = RigidBody(
        "link",
        m,
        inertia,
        position=link_rotation(float(theta0)) @ np.array([0.0, 0.0, -d]),
        orientation=[math.cos(theta0 / 2), 0.0, math.sin(theta0 / 2), 0.0],
    )
    hinge = Revolute(None, "link", point=[0.0, 0.0, 0.0], axis=[0.0, 1.0, 0.0], damping=joint_damping)
    return MultibodySystem([body], [hinge], gravity=[0.0, 0.0, -G])


def pendulum_motion(theta0: float, joint_damping: float, *, dt: float, n_steps: int):
    """Simulate :func:`pendulum_system` in joint coordinates
    (:class:`~jaxrod.system.JointSpaceSystem`, RK4: one angle, no Newton solve) and return
    ``(times (T,) [s], angle (T,) [rad], stats)``: the link's angle at every step.

    Joint coordinates rather than the maximal-coordinate model's average vector field and Newton:
    cheaper (cold, 1000 steps of 5 ms: 3.9 s CPU against 8.5 s, mostly the Newton steps' run
    time, not compilation) and a more accurate period at the scene's step (6e-8 against 1.3e-4 of
    the elliptic-integral period, measured; tests/test_sleeve.py bounds it by 2e-3)."""
    from ..integrate import simulate
    from ..system import JointSpaceSystem

    traj = simulate(JointSpaceSystem(pendulum_system(theta0, joint_damping)), dt=dt, n_steps=n_steps)
    angle = np.unwrap(pendulum_angle(np.asarray(traj.positions)[:, 0]))
    return np.asarray(traj.times), angle, traj.stats


def pendulum_angle(positions):
    """Pendulum angle [rad] from the link's centre of mass ``(..., 3)`` [m] (pivot at the
    origin): ``atan2(-x, -z)``."""
    p = np.asarray(positions)
    return np.arctan2(-p[..., 0], -p[..., 2])


def grid_geometry():
    """``(5, 3, 3)`` node positions [m] of the clamped sleeve in the link frame (row ``r`` 0 the
    free edge .. 4 the clamped row, column ``c``; see the module docstring)."""
    s = SLEEVE
    across = s["fabric_width_m"] / N_COLS
    front = math.sqrt(across**2 - s["clamp_x_m"] ** 2)
    dz = s["fabric_length_m"] / (N_ROWS - 1)
    cols = [(-s["clamp_x_m"], 0.0), (0.0, front), (s["clamp_x_m"], 0.0)]
    pts = np.zeros((N_ROWS, N_COLS, 3))
    for r in range(N_ROWS):
        z = -s["clamp_z_m"] - (N_ROWS - 1 - r) * dz
        for c, (x, y) in enumerate(cols):
            pts[r, c] = (x, y, z)
    return pts


def _limb_paths():
    """Grid paths ``[(r, c), ...]`` of the limbs: the front column, then the hooks of the left
    and right sides (see the module docstring)."""
    paths = [[(r, 1) for r in range(N_ROWS)]]
    for c in (0, 2):
        for r in range(N_ROWS - 2):
            paths.append([(r, 1), (r, c), (r + 1, c)])
        paths.append([(3, 1), (3, c), (4, c), (4, 1)])
    return paths


def _joints(paths):
    """Joints merging the limb ends of :func:`_limb_paths` into their host nodes."""
    host = {}
    for limb, path in enumerate(paths):
        for k, node in enumerate(path[1:-1], start=1):
            host[node] = (limb, k)
    for limb, path in enumerate(paths):  # nodes with no limb passing through: a front-column end
        for k in (0, len(path) - 1):
            host.setdefault(path[k], (limb, k))
    attached = {}
    for limb, path in enumerate(paths):
        for k in (0, len(path) - 1):
            if host[path[k]] != (limb, k):
                attached.setdefault(path[k], []).append((limb, -1 if k else 0))
    return [Joint(host=host[node], attached=att) for node, att in attached.items()]


def sleeve_pendulum(
    *,
    theta0_deg: float | None = None,
    joint_damping: float = 2e-4,
    damping: float = 0.02,
    youngs_modulus: float | None = None,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """TMTDyn's fabric sleeve on a rigid pendulum (module docstring): the pendulum is simulated
    with :class:`~jaxrod.system.JointSpaceSystem` (dt and duration of the scene) and replayed as the
    motion of the sleeve's clamps.

    Args:
        theta0_deg: release angle [deg] (default 85).
        joint_damping: the hinge's viscous damping [N m s/rad] >= 0.
        damping: the fabric's DER damping eta [N s/m^2] >= 0.
        youngs_modulus: TMTDyn's fabric modulus [Pa] used with its ribbon formulas (default the
            calibrated 5 kPa); the DER section's E_eq scales with it.
        dt: time step [s] of both simulations (default 5 ms).
        duration: simulated time [s] (default 5 s).

    Reference values (``scene.reference``): ``grid_nodes`` ``(5, 3)`` global node ids by row and
    column, ``labels`` TMTDyn's body number of each global fabric node, ``tracked_nodes`` (s1, s2),
    ``clamp_nodes``, ``fabric_nodes``, ``link_nodes``, ``pendulum_times_s`` / ``pendulum_angle_rad``
    (the replayed motion), ``rest_positions_link_m`` ``(M, 3)`` node positions in the link frame,
    ``pendulum_period_s`` (the compound-pendulum period at the release amplitude), the equivalent
    section (``radius_m``, ``youngs_modulus_eq_Pa``, ``EA_N``, ``EI_Nm2``), ``pendulum_stats``.
    """
    s = SLEEVE
    theta0_deg = s["release_angle_deg"] if theta0_deg is None else float(theta0_deg)
    for name, value in (("joint_damping", joint_damping), ("damping", damping)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"sleeve_pendulum: {name} must be a finite number >= 0, got {value!r}")
    if not (0.0 < abs(theta0_deg) < 180.0):
        raise ValueError(f"sleeve_pendulum: theta0_deg must be in (-180, 180) deg and not 0, got {theta0_deg!r}")
    E = s["youngs_modulus_Pa"] if youngs_modulus is None else float(youngs_modulus)
    if not (np.isfinite(E) and E > 0):
        raise ValueError(f"sleeve_pendulum: youngs_modulus must be a finite number > 0 Pa, got {youngs_modulus!r}")
    dt = 5e-3 if dt is None else float(dt)
    duration = 5.0 if duration is None else float(duration)
    n_steps = int(round(duration / dt))
    if n_steps < 1:
        raise ValueError(f"sleeve_pendulum: duration {duration} s is shorter than one step of {dt} s")
    theta0 = math.radians(theta0_deg)

    times, angle, pstats = pendulum_motion(theta0, joint_damping, dt=dt, n_steps=n_steps)

    # the equivalent circular section of TMTDyn's ribbons (module docstring)
    t, b = s["fabric_thickness_m"], 0.5 * (s["fabric_width_m"] + s["fabric_length_m"])
    EA, EI = E * t * b, E * t**2 * b**2  # EI: geometric mean of t^3 b and t b^3
    h = math.sqrt(4.0 * EI / EA)
    E_eq = EA / (math.pi * h * h)
    grid_link = grid_geometry()
    paths = _limb_paths()
    R0 = link_rotation(theta0)
    total = sum(
        np.linalg.norm(np.diff([grid_link[rc] for rc in p], axis=0), axis=1).sum() for p in paths
    )
    rho = s["fabric_mass_kg"] / (math.pi * h * h * total)
    mat = {"youngs_modulus": E_eq, "density": rho, "radius": h, "poisson_ratio": 0.5}
    limbs = [
        DERRod.from_polyline(np.array([R0 @ grid_link[rc] for rc in p]), rest="stress_free", **mat)
        for p in paths
    ]
    link_pts = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -s["link_com_m"]], [0.0, 0.0, -s["link_length_m"]]])
    limbs.append(DERRod.from_polyline(link_pts @ R0.T, rest="stress_free", **mat))
    link = len(limbs) - 1
    clamps = [(len(paths) // 2, 2), (len(paths) - 1, 2)]  # grid (4, 0) and (4, 2): node 2 of the top hooks
    probe = DERNetwork(limbs, _joints(paths))
    fixed_ids = np.array(sorted({probe.node_index(l, k) for l, k in clamps} | set(probe.limb_node_indices(link))))
    q0 = np.asarray(probe.q0)
    rest_link = q0[: probe.n_nodes, :3] @ R0  # link-frame positions (rows: R0^T x)
    fixed_link = jnp.asarray(rest_link[fixed_ids])
    q_template = jnp.asarray(q0)
    ts, th = jnp.asarray(times), jnp.asarray(angle)

    def clamp_motion(tt):
        # q with the fixed nodes carried rigidly by the link at the replayed angle
        R = link_rotation(jnp.interp(tt, ts, th))
        return q_template.at[fixed_ids, :3].set(fixed_link @ R.T)

    model = DERNetwork(
        limbs,
        _joints(paths),
        gravity=(0.0, 0.0, -G),
        damping=damping,
        fixed_nodes=clamps,
        clamped_edges=[(link, 0), (link, 1)],
        motion=clamp_motion,
    )
    grid_nodes = np.array(
        [[model.node_index(*_grid_owner(paths, (r, c))) for c in range(N_COLS)] for r in range(N_ROWS)]
    )
    labels = {int(grid_nodes[r, c]): 2 + 3 * r + c for r in range(N_ROWS) for c in range(N_COLS)}
    fabric = np.sort(grid_nodes.ravel())
    return Scene(
        "sleeve-pendulum",
        f"TMTDyn fabric sleeve (3 x 5 grid, 22 edges) on a pendulum released from {theta0_deg:g} deg",
        model,
        dt=dt,
        duration=n_steps * dt,
        scheme=BackwardEuler(),
        reference={
            "grid_nodes": grid_nodes,
            "labels": labels,
            "tracked_nodes": (int(grid_nodes[3, 1]), int(grid_nodes[3, 2])),
            "clamp_nodes": (int(grid_nodes[4, 0]), int(grid_nodes[4, 2])),
            "fabric_nodes": fabric,
            "link_nodes": np.asarray(model.limb_node_indices(link)),
            "pendulum_times_s": times,
            "pendulum_angle_rad": angle,
            "pendulum_period_s": compound_pendulum_period(theta0),
            "pendulum_stats": pstats,
            "rest_positions_link_m": rest_link,
            "radius_m": h,
            "youngs_modulus_eq_Pa": E_eq,
            "EA_N": EA,
            "EI_Nm2": EI,
            "fabric_mass_kg": float(np.sum(np.asarray(model.node_masses())[fabric])),
        },
    )


def _grid_owner(paths, node):
    """A ``(limb, index)`` of grid node ``node`` (any limb through or ending at it)."""
    for limb, path in enumerate(paths):
        if node in path:
            return limb, path.index(node)
    raise ValueError(f"grid node {node} is on no limb")
