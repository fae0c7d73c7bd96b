"""Scenes of jointed multi-rod DER structures (:class:`~jaxrod.models.der.model.DERNetwork`).

* ``network-spider``: DisMech's four-legged spider (spec 8.1, code version): a vertical body
  (0.1 m), four horizontal arms (0.1 m, along +-x, +-y) joined to the body at a hub joint and four
  vertical legs (0.1 m) joined to the arm tips; h = 5 mm, E = 3 MPa, rho = 1180 kg/m^3, nu = 0.5.
  Default: dropped from 0.1 m onto a floor at z = -0.1 with the incline emulated by tilted gravity
  (DisMech's code: (1, 0, -9.8); the paper says (0.707, 0.707, -9.8)), IMC floor contact
  (k_c = 1e4 N/m, delta = 5 mm, nu = 1 cm/s: DisMech's "fast" settings) and friction mu = 0.4,
  backward Euler at 2.5 ms for 2 s, ``simulate``'s default Newton (Jacobian reuse, coloured
  Jacobian with 43 colours; 11 nodes per limb, 364 DOFs): over the 2 s, 4.6 Newton updates and
  0.25 Jacobians per step, all converged (the friction step limit of
  :func:`~jaxrod.models.der.contact.friction_step_limit` keeps the impact at t = 0.14 s to <= 16
  updates; without it that step did not converge). Time per step: ``benchmarks/contact_scenes.py``. Outcome:
  the legs splay at impact (a 1.4 m/s landing of a 3 MPa spider exceeds the legs' buckling load
  several times), the body comes down to the floor, slides 5 cm along the tilted gravity and
  sticks. ``floor=False``: the feet are pinned at z = 0 instead and the spider stands under
  gravity (the hub sags 7 mm).
* ``network-two-limb``: a two-limb soft finger: a stiffer limb clamped at the base and a softer
  one joined at its tip; each limb's natural curvature is ramped from zero to a uniform value
  (default 10 and 20 1/m, in the same material direction) over ``ramp_time``. Without gravity the
  end state is the stress-free polygon computed in ``reference`` (measured: within 0.3 mm at
  t = 3 s, 3.7 Newton iterations per step, 19 Jacobian colours).
"""

from __future__ import annotations

import numpy as np

from ..models.der import DERRod
from ..models.der.contact import FloorContact, RodRodContact
from ..models.der.model import DERNetwork, Joint
from ..signals import LinearRamp
from ..solvers.newton import NewtonSolver
from ..integrate.schemes import BackwardEuler
from ..validation import check_int
from .scene import Scene


def spider(
    *,
    n_nodes: int = 11,
    floor: bool = True,
    gravity=None,
    mu: float = 0.4,
    damping: float | None = None,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """DisMech's spider (see the module docstring). ``n_nodes`` per limb (DisMech: 25; the dense
    Jacobian has ``4 (9 n - 8)`` rows). ``gravity`` default: (1, 0, -9.8) with the floor,
    (0, 0, -9.8) standing; ``damping`` [N s/m^2] default 0 with the floor, 0.5 standing."""
    n = check_int("n_nodes", n_nodes, min=3)
    if gravity is None:
        gravity = (1.0, 0.0, -9.8) if floor else (0.0, 0.0, -9.8)
    if damping is None:
        damping = 0.0 if floor else 0.5
    mat = {
        "youngs_modulus": 3e6,
        "density": 1180.0,
        "radius": 0.005,
        "poisson_ratio": 0.5,
    }
    hub = np.array([0.0, 0.0, 0.1])
    dirs = np.array(
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]
    )
    pts = [np.linspace([0.0, 0.0, 0.2], hub, n)]
    pts += [np.linspace(hub, hub + 0.1 * d, n) for d in dirs]
    pts += [
        np.linspace(hub + 0.1 * d, hub + 0.1 * d - [0.0, 0.0, 0.1], n) for d in dirs
    ]
    limbs = [DERRod.from_polyline(p, rest="stress_free", **mat) for p in pts]
    joints = [Joint(host=(0, -1), attached=[(k, 0) for k in range(1, 5)])]
    joints += [Joint(host=(k, -1), attached=[(k + 4, 0)]) for k in range(1, 5)]
    if floor:
        contact = FloorContact(offset=-0.1, stiffness=1e4, delta=5e-3, mu=mu, nu=1e-2)
        model = DERNetwork(
            limbs, joints, gravity=gravity, damping=damping, contacts=(contact,)
        )
        what = "dropped on a floor (tilted gravity emulates the incline)"
    else:
        model = DERNetwork(
            limbs,
            joints,
            gravity=gravity,
            damping=damping,
            fixed_nodes=[(k, -1) for k in range(5, 9)],
        )
        what = "standing on pinned feet under gravity"
    mass = float(np.sum(np.asarray(model.node_masses())))
    return Scene(
        "network-spider",
        f"DisMech spider (9 limbs x {n} nodes, 5 joints) {what}",
        model,
        dt=2.5e-3 if dt is None else dt,
        duration=(2.0 if floor else 1.0) if duration is None else duration,
        scheme=BackwardEuler(),
        reference={
            "total_mass_kg": mass,
            "weight_N": mass * float(np.linalg.norm(np.asarray(gravity, dtype=float))),
            "dismech_dt_s": 1e-3,
            "dismech_n_nodes": 25,
        },
    )


def _polygon(turning, dl, start=(0.0, 0.0, 0.0)):
    """Nodes of a planar (x-z) polyline with edge length ``dl`` that starts along +x and turns by
    ``turning[i]`` [rad] (toward +z) at interior node ``i + 1``."""
    angles = np.concatenate([[0.0], np.cumsum(turning)])
    steps = dl * np.stack(
        [np.cos(angles), np.zeros_like(angles), np.sin(angles)], axis=1
    )
    return np.asarray(start, dtype=float) + np.concatenate(
        [np.zeros((1, 3)), np.cumsum(steps, axis=0)]
    )


def two_limb_actuated(
    *,
    n_nodes: int = 11,
    limb_length: float = 0.1,
    kappa=(10.0, 20.0),
    ramp_time: float = 1.0,
    gravity=(0.0, 0.0, 0.0),
    damping: float = 0.3,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """Two limbs along +x joined end to end at a joint, the first clamped at its base (edge 0):
    limb 0 E = 2 MPa, limb 1 E = 1 MPa (h = 5 mm, rho = 1200 kg/m^3, nu = 0.5). Limb ``k`` gets
    the uniform natural curvature ``kappa[k]`` [1/m] (material direction 2, bending toward +z),
    ramped linearly from 0 over ``ramp_time`` [s] (:class:`LinearRamp`)."""
    n, L = check_int("n_nodes", n_nodes, min=3), float(limb_length)
    k0, k1 = (float(k) for k in kappa)
    mat = {"density": 1200.0, "radius": 0.005, "poisson_ratio": 0.5}
    l0 = DERRod.straight(n, L, **mat, youngs_modulus=2e6)
    l1 = DERRod.straight(n, L, start=(L, 0.0, 0.0), **mat, youngs_modulus=1e6)
    model = DERNetwork(
        [l0, l1],
        [Joint(host=(0, -1), attached=[(1, 0)])],
        gravity=gravity,
        damping=damping,
        clamped_edges=[(0, 0)],
        natural_curvature_fn=LinearRamp(float(ramp_time)),
    )
    model = model.with_limb_curvature(0, (0.0, k0)).with_limb_curvature(1, (0.0, k1))
    dl = L / (n - 1)
    turning = np.concatenate([np.full(n - 2, k0 * dl), [0.0], np.full(n - 2, k1 * dl)])
    shape = _polygon(turning, dl)
    return Scene(
        "network-two-limb",
        f"two-limb soft finger, natural curvature ramped to {k0:g} and {k1:g} 1/m over {ramp_time:g} s",
        model,
        dt=0.01 if dt is None else dt,
        duration=3.0 if duration is None else duration,
        scheme=BackwardEuler(),
        reference={
            "rest_shape_no_gravity_m": shape,
            "tip_no_gravity_m": shape[-1],
            "radius_limb0_m": dl / (2 * np.sin(k0 * dl / 2)) if k0 else np.inf,
            "radius_limb1_m": dl / (2 * np.sin(k1 * dl / 2)) if k1 else np.inf,
        },
    )


#: DisMech's gripper mesh (nodes per finger); curvature angles are defined on its edges.
GRIPPER_DISMECH_NODES = 60
#: Largest natural turning angle of one stencil the gripper accepts [deg] (2 tan(phi/2) blows up
#: at 180 deg; beyond ~150 deg a polygon no longer resolves the coil).
MAX_STENCIL_TURNING_DEG = 150.0


def _gripper_bend_components(model, n_fingers, tops, bend, dismech_code):
    """``(n_fingers, 2)`` material-frame weights of the natural curvature of each finger.

    ``"diagonal"``: (1, 1) / sqrt(2), the direction of DisMech's code, which sets both components
    (``dismech_code``: (1, 1), the code's magnitude too). ``"inward"``: the unit curvature
    that turns the finger toward the gripper axis. With ``kappa_b = 2 t_{i-1} x t_i / (1 + t.t)``,
    ``kappa_1 = kappa_b . m2`` and ``kappa_2 = -kappa_b . m1``, a straight finger of tangent ``t``
    turning toward the unit vector ``u`` has ``kappa_b`` along ``t x u``; the material frame of a
    straight finger is the same on every edge, so edge 0's frame serves the whole finger."""
    if bend == "diagonal":
        return np.ones((n_fingers, 2)) / (1.0 if dismech_code else np.sqrt(2.0))
    state = model.initial_state()
    frames = np.asarray(model.observe(state.q, state.v, state.aux)["frames"])
    out = np.zeros((n_fingers, 2))
    for k in range(n_fingers):
        m1, m2, t = frames[model.edge_index(k, 0)]
        r = np.array([tops[k, 0], tops[k, 1], 0.0])
        if np.linalg.norm(r) == 0.0:  # a single finger on the axis: curl toward +x
            r = np.array([-1.0, 0.0, 0.0])
        b = np.cross(t, -r / np.linalg.norm(r))
        out[k] = (b @ m2, -(b @ m1))
    return out


def gripper(
    *,
    n_fingers: int = 5,
    n_nodes: int = 20,
    length: float = 0.3,
    side: float = 0.015,
    radius: float = 0.005,
    youngs_modulus: float = 0.3e6,
    density: float = 1200.0,
    poisson_ratio: float = 0.5,
    phi_range_deg=(0.0, 40.0),
    phi_deg=None,
    dismech_code: bool = False,
    bend: str = "diagonal",
    seed: int = 0,
    ramp_time: float = 10.0,
    contact: bool = True,
    self_contact: bool = True,
    stiffness: float = 1e5,
    delta: float = 5e-4,
    mu: float = 0.0,
    nu: float = 1e-3,
    margin: float | None = None,
    max_candidates: int | None = None,
    damping: float = 5.0,
    gravity=(0.0, 0.0, -9.8),
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """DisMech's active entanglement gripper (spec 8.2, 5.1 and 10.13): ``n_fingers`` vertical
    rods hanging from z = 0 to z = -``length`` [m], their tops on a regular polygon of side
    ``side`` [m] (five fingers: the pentagon of side 15 mm, circumradius 12.76 mm), edge 0 of each
    clamped, gravity, viscous damping ``damping`` [N s/m^2] (DisMech's eta = 5: the same unit and
    law ``-eta V_i v_i`` as :class:`DERNetwork`; DisMech leaves each finger's last node undamped,
    here every node is damped), self-contact and finger-finger IMC contact
    (:class:`RodRodContact`: ``stiffness`` k_c [N/m] = 1e5, ``delta`` [m] = 5e-4, slip tolerance
    ``nu`` [m/s] = 1e-3, friction ``mu`` = 0; the paper's second run has ``mu = 0.5``, for which
    DisMech's example advises dt = 1 ms). h = ``radius`` 5 mm, E = 0.3 MPa, rho = 1200 kg/m^3.

    Actuation: every interior node (bending stencil) of every finger gets a random natural
    turning angle ``phi`` [deg] (``np.random.default_rng(seed)``), ramped in linearly over
    ``ramp_time`` [s] (:class:`LinearRamp`) and then held. Default: the paper's reading, ``phi``
    uniform in ``phi_range_deg`` = [0, 40] deg. ``dismech_code=True`` follows DisMech's code
    instead: integer degrees ``rand() % 40`` (0..39) of which only half is reached at the end of
    the ramp (final <= 19.5 deg). ``phi_deg`` ``(n_fingers, n_nodes - 2)`` [deg] gives the angles
    directly (no sampling, no halving). Direction, ``bend``: ``"diagonal"`` (default) bends along
    the material direction (m1 + m2)/sqrt(2), DisMech's direction: its code sets both components
    ``kappa_bar_1 = kappa_bar_2 = 2 tan(phi/2)``, which turns by ~sqrt(2) phi; here the turning
    is ``phi`` (the paper's reading), and ``dismech_code=True`` uses the code's values. Every
    vertical finger has the same material frame, so all fingers curl toward the same side;
    ``"inward"`` turns each finger by ``phi`` toward the gripper axis (rotationally
    symmetric). Two further differences to DisMech: the ramp scales ``kappa_bar``, DisMech scales
    ``phi`` (the same at the end, O(phi^2) apart during the ramp); and since an angle per node
    means a curvature ``phi / dl`` that grows with the node count, the angles are taken per edge of
    DisMech's 60-node finger (dl_60 = L/59): a stencil of Voronoi length V gets
    ``phi V / dl_60``, so the mean curvature does not depend on ``n_nodes`` (at 60 nodes the values
    are DisMech's exactly).

    ``n_nodes`` per finger (DisMech: 60). Default 20 (5 fingers: 100 nodes, 400 DOFs); rod-rod
    contact makes the Jacobian dense (``jax.jacfwd``, one JVP per DOF, and a dense LU), so the cost
    per Newton iteration grows like ``n_nodes^2`` to ``^3``; measured times are in
    ``benchmarks/contact_scenes.py``. Backward Euler, dt = 2.5 ms, T = 15 s, fresh Jacobians
    (``NewtonSolver(reuse_jacobian=False)``): through finger collisions the default chord Newton
    converges too (its restart rule) but needs ~2x the updates and is ~20% slower (small gripper:
    57 vs 47 ms per step, 12.7 vs 5.5 updates per step).
    ``contact=False`` leaves out all contact (fingers pass through each other).

    Raises:
        ValueError: ``n_fingers < 1``, ``n_nodes < 3``, non-positive lengths or material values,
            a ``phi_range_deg`` that is not ``0 <= low <= high < 180``, ``phi_deg`` of the wrong
            shape or outside [0, 180), an unknown ``bend``, fingers closer than ``2 radius +
            delta`` at the top, ``ramp_time <= 0``, negative ``damping``.
    """
    nf, n = int(n_fingers), int(n_nodes)
    if nf != n_fingers or nf < 1:
        raise ValueError(f"gripper: n_fingers must be an integer >= 1, got {n_fingers!r}")
    if n != n_nodes or n < 3:
        raise ValueError(f"gripper: n_nodes must be an integer >= 3 per finger, got {n_nodes!r}")
    for name, value, unit in (
        ("length", length, "m"),
        ("side", side, "m"),
        ("radius", radius, "m"),
        ("youngs_modulus", youngs_modulus, "Pa"),
        ("density", density, "kg/m^3"),
        ("ramp_time", ramp_time, "s"),
    ):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"gripper: {name} must be a finite number > 0 {unit}, got {value!r}")
    if not (np.isfinite(damping) and damping >= 0):
        raise ValueError(f"gripper: damping must be >= 0 N s/m^2, got {damping!r}")
    if bend not in ("diagonal", "inward"):
        raise ValueError(f"gripper: bend must be 'diagonal' or 'inward', got {bend!r}")
    lo, hi = (float(v) for v in phi_range_deg)
    if not (0.0 <= lo <= hi < 180.0):
        raise ValueError(
            f"gripper: phi_range_deg must satisfy 0 <= low <= high < 180 deg, got {tuple(phi_range_deg)}"
        )
    # circumradius of the regular polygon of side `side`; adjacent tops are `side` apart
    R = 0.0 if nf == 1 else side / (2.0 * np.sin(np.pi / nf))
    if contact and nf > 1 and side < 2 * radius + delta:
        raise ValueError(
            f"gripper: side = {side} m puts neighbouring fingers closer than 2 radius + delta = "
            f"{2 * radius + delta} m (initial overlap)"
        )
    ang = 2 * np.pi * np.arange(nf) / nf
    tops = np.stack([R * np.cos(ang), R * np.sin(ang)], axis=1)
    limbs = [
        DERRod.from_polyline(
            np.linspace([x, y, 0.0], [x, y, -length], n),
            rest="straight",
            youngs_modulus=youngs_modulus,
            density=density,
            radius=radius,
            poisson_ratio=poisson_ratio,
        )
        for x, y in tops
    ]
    if phi_deg is None:
        rng = np.random.default_rng(seed)
        if dismech_code:  # rand() % 40, ramped to r(t_e) = 0.5
            phi = 0.5 * rng.integers(0, 40, size=(nf, n - 2)).astype(float)
        else:
            phi = rng.uniform(lo, hi, size=(nf, n - 2))
    else:
        phi = np.asarray(phi_deg, dtype=float)
        if phi.shape != (nf, n - 2):
            raise ValueError(
                f"gripper: phi_deg must have shape (n_fingers, n_nodes - 2) = {(nf, n - 2)}, got {phi.shape}"
            )
        if not np.all((phi >= 0) & (phi < 180)):
            raise ValueError("gripper: phi_deg must lie in [0, 180) deg")
    contacts = ()
    if contact:
        contacts = (
            RodRodContact(
                stiffness=stiffness,
                delta=delta,
                mu=mu,
                nu=nu,
                margin=margin,
                max_candidates=max_candidates,
                self_contact=self_contact,
            ),
        )
    model = DERNetwork(
        limbs,
        (),
        gravity=gravity,
        damping=damping,
        clamped_edges=[(k, 0) for k in range(nf)],
        contacts=contacts,
        natural_curvature_fn=LinearRamp(float(ramp_time)),
    )
    # angles per DisMech edge (dl_60): scale by V / dl_60 so the curvature is mesh independent
    dl_ref = length / (GRIPPER_DISMECH_NODES - 1)
    weights = _gripper_bend_components(model, nf, tops, bend, dismech_code and phi_deg is None)
    turning = np.zeros((nf, n - 2))
    for k in range(nf):
        vor = np.asarray(limbs[k].voronoi_lengths)[1:-1]
        turning[k] = np.deg2rad(phi[k]) * vor / dl_ref  # rad, per stencil
    if turning.size and turning.max() > np.deg2rad(MAX_STENCIL_TURNING_DEG):
        raise ValueError(
            f"gripper: n_nodes = {n} is too coarse for phi up to {phi.max():.3g} deg per DisMech edge: "
            f"a stencil would turn by {np.rad2deg(turning.max()):.0f} deg > {MAX_STENCIL_TURNING_DEG} deg; "
            "use more nodes or smaller angles"
        )
    for k in range(nf):
        kb = 2.0 * np.tan(0.5 * turning[k])
        model = model.with_limb_natural_curvature(k, kb[:, None] * weights[k][None, :])
    mass = float(np.sum(np.asarray(model.node_masses())))
    return Scene(
        "network-gripper",
        f"DisMech active entanglement gripper ({nf} fingers x {n} nodes, "
        f"{'contact' if contact else 'no contact'}, mu = {mu:g})",
        model,
        dt=2.5e-3 if dt is None else dt,
        duration=15.0 if duration is None else duration,
        scheme=BackwardEuler(),
        solver=NewtonSolver(linear_solver=None, reuse_jacobian=False, rtol=1e-9, atol=1e-9),
        reference={
            "total_mass_kg": mass,
            "circumradius_m": R,
            "finger_tops_m": np.concatenate([tops, np.zeros((nf, 1))], axis=1),
            "contact_distance_m": 2.0 * radius,
            "min_distance_bound_m": 2.0 * radius - delta,
            "phi_deg": phi,
            "turning_rad": turning,
            "bend_weights": weights,
            "dismech_n_nodes": GRIPPER_DISMECH_NODES,
            "dismech_dt_s": 2.5e-3,
            "dismech_duration_s": 15.0,
        },
    )
