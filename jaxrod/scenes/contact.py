"""Contact and friction scenes for the DER model (DisMech spec 4 and 7.4).

* ``friction-validation``: DisMech's friction validation (Table II case c, spec 7.4): a 1 kg rod
  lying on the floor, pushed along its axis by a uniform force; kinetic energy at T = 1.5 s
  against ``Ek = t^2 (|F| - mu m g)^2 / (2 m)`` (0 below the threshold ``mu m g = 3.92 N``).
  :func:`friction_validation_batch` runs DisMech's 44 pushes in one compiled program (``lax.map``,
  backward Euler, Jacobian reuse by default; ``jax.vmap`` on request).
* ``rod-drop``: a tilted rod dropped on a frictional floor; it bounces, slides and comes to rest
  (backward Euler, light damping).
* ``rod-coiling``: a soft rod hanging from a clamp that is lowered at constant speed onto a
  frictional floor: it buckles at touchdown and lays down in coils whose radius scales with the
  gravito-bending length ``L_gb = (EI/(rho A g))^(1/3)`` (Jawed, Da, Joo, Grinspun & Reis, PNAS
  111, 14663, 2014; :func:`rod_coiling`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..models.der import DERModel, DERRod, FloorContact, RodRodContact
from ..models.der.contact import imc_energy_derivative
from ..integrate import simulate
from ..solvers.newton import NewtonSolver
from ..integrate.schemes import BackwardEuler, ImplicitMidpoint
from ..validation import check_int, check_nonnegative, check_positive
from .scene import Scene

#: DisMech's 44 pushes [N] (spec 7.4): {0, 0.5, ..., 10.5} and {-0.1, -0.6, ..., -10.6}.
FRICTION_FORCES = np.concatenate([np.arange(22) * 0.5, -(0.1 + np.arange(22) * 0.5)])
GRAVITY = 9.8


def _settled_distance(weight, radius, contact: FloorContact):
    """Distance ``D`` [m] from the plane at which the floor's normal force equals ``weight`` [N]
    (bisection on the monotone normal force; host-side)."""
    k, delta = float(contact.stiffness), float(contact.delta)

    def fn(D):
        return -k * float(imc_energy_derivative(jnp.asarray(D), radius, delta))

    lo, hi = radius - 1.0, radius + delta  # fn(lo) huge, fn(hi) = 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fn(mid) > weight else (lo, mid)
    return 0.5 * (lo + hi)


def settle_on_floor(rod: DERRod, contact: FloorContact, gravity: float = GRAVITY):
    """``(N, 4)`` configuration of ``rod`` (rest shape) lowered onto the plane of ``contact`` so that
    every node's normal force carries its own weight ``m_i g`` (twist 0).

    The rest shape is moved along the plane normal node by node (the end nodes, half as heavy,
    sit ~1e-5 m higher than the others with DisMech's floor); this removes the vertical ringing
    a start exactly at ``D = h`` would cause (the contact is stiff and implicit midpoint does not
    damp it)."""
    x = np.asarray(rod.rest_positions, float)
    n = np.asarray(contact.normal, float)
    h = float(rod.radius)
    m = np.asarray(rod.node_masses(), float)
    d_now = x @ n - float(contact.offset)
    d_want = np.array([_settled_distance(mi * gravity, h, contact) for mi in m])
    x = x + (d_want - d_now)[:, None] * n[None, :]
    return np.concatenate([x, np.zeros((x.shape[0], 1))], axis=1)


def friction_validation(
    *,
    force: float = 5.0,
    n_nodes: int = 26,
    dt: float | None = None,
    duration: float | None = None,
    mu: float = 0.4,
    delta: float = 5e-4,
    nu: float = 1e-3,
    stiffness: float = 1e4,
) -> Scene:
    """DisMech's friction validation (spec 7.4): rod L = 1 m, h = 2.5 cm, E = 0.1 MPa, Poisson 0.5,
    density ``1/(pi h^2 L)`` (m = 1 kg), lying on the floor z = 0 along +x, gravity -9.8 z; IMC
    floor contact (k_c 1e4, delta 5e-4 m) with mu = 0.4, nu = 1e-3 m/s; uniform axial push
    ``force`` [N] along +x (a distributed force ``force/L``: DisMech's split ``F/(N-1)`` on interior
    nodes, half on the ends); implicit midpoint, dt 5 ms, T 1.5 s. The rod starts settled on the
    floor (:func:`settle_on_floor`)."""
    L, h = 1.0, 0.025
    rho = 1.0 / (np.pi * h * h * L)
    rod = DERRod.straight(n_nodes, L, start=(0.0, 0.0, h), youngs_modulus=1e5, density=rho, radius=h)
    floor = FloorContact((0.0, 0.0, 1.0), 0.0, stiffness=stiffness, delta=delta, mu=mu, nu=nu)
    q0 = settle_on_floor(rod, floor)
    model = DERModel(
        rod, gravity=(0.0, 0.0, -GRAVITY), distributed_force=(force / L, 0.0, 0.0), q0=q0, contacts=(floor,)
    )
    T = 1.5 if duration is None else duration
    mass = float(rho * np.pi * h * h * L)
    return Scene(
        "friction-validation",
        f"DisMech friction validation: 1 kg rod on the floor, mu = {mu}, axial push {force:g} N",
        model,
        dt=5e-3 if dt is None else dt,
        duration=T,
        scheme=ImplicitMidpoint(),
        reference={
            "threshold_N": mu * mass * GRAVITY,
            "kinetic_energy_J": analytic_kinetic_energy(force, T, mu=mu, mass=mass),
            "mass_kg": mass,
            "dismech_time_s": 1.59,
            "pyelastica_time_s": 7.42,
            "tip_axis": 0,
        },
    )


def analytic_kinetic_energy(force, t, *, mu=0.4, mass=1.0, g=GRAVITY):
    """DisMech Eq. 18: ``Ek = t^2 (|F| - mu m g)^2 / (2m)`` for ``|F| > mu m g``, else 0 [J]."""
    excess = np.maximum(np.abs(np.asarray(force, float)) - mu * mass * g, 0.0)
    return t * t * excess**2 / (2.0 * mass)


def kinetic_energy_x(model: DERModel, v):
    """``sum_i m_i v_{x,i}^2 / 2`` [J] (DisMech's measure) of velocities ``v`` ``(..., N, 4)``."""
    m = model.rod.node_masses()
    return 0.5 * jnp.sum(m * v[..., :, 0] ** 2, axis=-1)


def friction_batch_fn(
    scene: Scene | None = None,
    *,
    solver: NewtonSolver | None = None,
    batch: str = "map",
    scheme=None,
    **scene_kwargs,
):
    """``(fn, scene)``: ``fn(forces (B,)) -> (Ek (B,), converged (B,), iterations (B, steps))``, the
    friction validation for a batch of pushes [N] (not jitted: wrap it in ``jax.jit``;
    :func:`friction_validation_batch` does).

    Only the push is batched; model, settled start and step count are shared; only the final state
    is saved.

    Args:
        scene: a :func:`friction_validation` scene (default: built from ``scene_kwargs``).
        solver: Newton configuration. Default: with ``batch="map"`` Jacobian reuse (chord steps,
            simulate's default), with ``batch="vmap"`` a fresh Jacobian every Newton iteration
            (``reuse_jacobian=False``: under ``vmap`` the chord/fresh switch evaluates both
            branches); banded Jacobian, tolerance 1e-9.
        batch: ``"map"`` (default; ``jax.lax.map``: one push after the other in one compiled
            program, with Jacobian reuse) or ``"vmap"`` (all pushes advance together; every Newton
            solve of the batch runs as many iterations as its slowest member, each with a fresh
            Jacobian).
        scheme: time scheme; default :class:`~jaxrod.integrate.schemes.BackwardEuler` (not the scene's
            implicit midpoint): for this constant-acceleration sliding problem backward Euler is
            both more accurate (Ek within 0.08 % vs 0.5 % for implicit midpoint, dt 5 ms) and much
            cheaper (it damps the stiff contact's ringing, so its constant-acceleration predictor
            is nearly exact for the sliding rod: 0.66 Newton updates per step vs 3.5 with implicit
            midpoint). Pass ``scene.scheme`` for the scene's own scheme.

    Measured on the 2-core CPU host (44 pushes, N = 26, T = 1.5 s, dt 5 ms, loaded machine;
    ``benchmarks/der_dismech.py --tables c``): ``"map"`` + backward Euler 4 s (0.30 ms per
    rod-step), ``"map"`` + implicit midpoint 10-11 s, ``"vmap"`` + implicit midpoint 123 s. ``vmap``
    loses on CPU because a Newton iteration is flop/memory bound (a banded Jacobian is 21 JVPs of
    a ~40k-instruction residual, ~6.6 MFLOP per rod and iteration): batching removes no work, it
    only makes the working set leave the caches (per rod-step 2 ms at batch 1, 6 ms at 4, 7-12 ms
    at 16-44, same flops per rod) and forbids Jacobian reuse.
    """
    if batch not in ("vmap", "map"):
        raise ValueError(f"batch must be 'vmap' or 'map', got {batch!r}")
    scene = friction_validation(**scene_kwargs) if scene is None else scene
    if solver is None:
        solver = NewtonSolver(linear_solver=None, reuse_jacobian=batch == "map", rtol=1e-9, atol=1e-9)
    scheme = BackwardEuler() if scheme is None else scheme
    base = scene.model
    n_steps = round(scene.duration / scene.dt)
    length = base.rod.length
    dt = scene.dt

    def one(force):
        f = jnp.stack([force / length, jnp.zeros_like(force), jnp.zeros_like(force)])
        model = eqx.tree_at(lambda m: m.distributed_force, base, f)
        traj = simulate(model, dt=dt, n_steps=n_steps, scheme=scheme, solver=solver, save_every=n_steps, throw=False)
        return kinetic_energy_x(model, traj.v[-1]), jnp.all(traj.stats.converged), traj.stats.iterations

    if batch == "vmap":
        return jax.vmap(one), scene
    return (lambda forces: jax.lax.map(one, forces)), scene


def friction_validation_batch(
    forces=None, *, solver: NewtonSolver | None = None, batch: str = "map", scheme=None, **scene_kwargs
):
    """Run the friction validation for all ``forces`` [N] (default: DisMech's 44,
    :data:`FRICTION_FORCES`) in one compiled program, by default one push after the other
    (``batch="map"``, Jacobian reuse, backward Euler: the fastest on CPU, see
    :func:`friction_batch_fn`; ``batch="vmap"`` batches with ``jax.vmap``); host-side summary.
    ``scene_kwargs`` go to :func:`friction_validation` (``n_nodes``, ``dt``, ``duration``, ``mu``, ...).

    Returns:
        dict of numpy arrays: ``forces``, ``kinetic_energy`` (simulated, J, at T), ``analytic``
        (Eq. 18, J), ``relative_error`` (NaN where the analytic value is 0), ``converged``, and
        ``newton_iterations`` (mean per step), plus ``threshold_N`` and ``time_s`` (T).
    """
    forces = FRICTION_FORCES if forces is None else np.asarray(forces, float)
    fn, scene = friction_batch_fn(solver=solver, batch=batch, scheme=scheme, **scene_kwargs)
    ek, conv, its = jax.jit(fn)(jnp.asarray(forces))
    ek = np.asarray(ek)
    T = round(scene.duration / scene.dt) * scene.dt
    ref = analytic_kinetic_energy(forces, T, mu=float(scene.model.contacts[0].mu), mass=scene.reference["mass_kg"])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ref > 0, ek / ref - 1.0, np.nan)
    return {
        "forces": forces,
        "kinetic_energy": ek,
        "analytic": ref,
        "relative_error": rel,
        "converged": np.asarray(conv),
        "newton_iterations": np.asarray(its).mean(axis=-1),
        "threshold_N": scene.reference["threshold_N"],
        "time_s": T,
    }


def rod_drop(
    *,
    n_nodes: int = 21,
    dt: float | None = None,
    duration: float | None = None,
    height: float = 0.02,
    tilt_deg: float = 10.0,
    mu: float = 0.4,
    stiffness: float = 1e5,
    delta: float = 5e-4,
    damping: float = 0.05,
) -> Scene:
    """A rod (L = 0.5 m, h = 5 mm, E = 1 MPa, rho = 1000 kg/m^3) released at rest with its lower end
    ``height`` [m] above the floor z = 0 and tilted by ``tilt_deg`` about y; gravity -9.81 z, floor
    contact (k_c 1e5 N/m, delta 0.5 mm, mu 0.4, nu 1 mm/s), viscous damping ``damping`` [N s/m^2].
    Backward Euler, dt 2 ms, 1 s: the rod lands on its low end, slaps down and comes to rest."""
    L, h = 0.5, 0.005
    a = np.deg2rad(tilt_deg)
    direction = (np.cos(a), 0.0, np.sin(a))
    rod = DERRod.straight(
        n_nodes, L, start=(0.0, 0.0, h + height), direction=direction, youngs_modulus=1e6, density=1000.0, radius=h
    )
    floor = FloorContact((0.0, 0.0, 1.0), 0.0, stiffness=stiffness, delta=delta, mu=mu, nu=1e-3)
    model = DERModel(rod, gravity=(0.0, 0.0, -9.81), damping=damping, contacts=(floor,))
    return Scene(
        "rod-drop",
        f"rod dropped on a frictional floor from {1e3 * height:g} mm, tilted {tilt_deg:g} deg, mu = {mu}",
        model,
        dt=2e-3 if dt is None else dt,
        duration=1.0 if duration is None else duration,
        scheme=BackwardEuler(),
        reference={"delta_m": delta, "tip_axis": 2},
    )


def rod_coiling(
    *,
    n_nodes: int = 101,
    length: float = 1.0,
    radius: float = 1e-3,
    youngs_modulus: float = 4e5,
    density: float = 1200.0,
    feed_speed: float = 0.1,
    mu: float = 0.3,
    nu: float = 1e-3,
    stiffness: float = 100.0,
    delta: float = 2e-4,
    gap: float = 0.03,
    imperfection: float = 2e-3,
    self_contact: bool = False,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """A soft rod coiling on a frictional floor (Jawed, Da, Joo, Grinspun & Reis, PNAS 2014).

    A straight rod (``length`` [m], ``n_nodes`` nodes, circular section ``radius`` [m],
    ``youngs_modulus`` [Pa], ``density`` [kg/m^3], Poisson 0.5) hangs vertically under gravity
    -9.81 z from a clamped top edge whose lower node starts at height ``h + gap + L - dl`` above
    the floor z = 0; stretched by its weight (by ``reference['stretch_m']``), the free end starts
    ``gap - stretch`` above the floor. The clamp descends at ``feed_speed`` [m/s] (the same as
    feeding the rod through a fixed nozzle onto a rising floor, except that the hanging height
    falls from ~``length`` to ``reference['clamp_height_end_m']``). At touchdown the rod buckles and
    lays down in coils: after a transient (a straight run of a few ``L_gb`` while the first fold
    falls over) the laid-down curve winds one way with radius ``R ~ L_gb``, the gravito-bending
    length ``(EI/(rho A g))^(1/3) = (E h^2 / (4 rho g))^(1/3)`` (2.04 cm with the defaults), for a
    hanging height of many ``L_gb`` and a slow feed (``feed_speed^2 / (g L_gb)`` = 0.05 here).

    Floor: IMC contact (``stiffness`` [N/m], ``delta`` [m]) with smooth Coulomb friction ``mu``,
    slip tolerance ``nu`` [m/s]. Optional self-contact (``self_contact=True``:
    :class:`~jaxrod.models.der.RodRodContact` with the same ``stiffness``, ``delta``, ``mu``,
    ``nu``) keeps stacked turns from passing through each other; it makes the Jacobian dense and
    costs ~25x more per step (115 vs 4.6 ms at 61 nodes), so by default successive turns overlap
    (the radius is set at touchdown, where the rod meets the floor, not the previous turn, during
    the first turn; later turns are laid through the earlier ones).

    Start: the hanging equilibrium (each edge stretched by the weight below it), moving down
    rigidly at ``feed_speed``. Symmetry breaking: the rest shape is the twisted cubic
    ``imperfection * ((s/L)^2, (s/L)^3)`` off the vertical (a straight vertical rod has no
    preferred buckling direction, and a planar seed would fold in its plane rather than coil); its
    curvature, at most ``~6 imperfection / L^2`` (0.013 /m, at the free end), is far below ``1 / L_gb``, the scale at
    which natural curvature changes the coiling (Jawed et al.).

    Run settings: backward Euler (it damps the stiff axial and contact modes), ``dt`` 5 ms (0.5 mm
    of feed per step), ``duration`` (default) the time to feed 70 % of the rod; ``simulate``'s
    default Newton (Jacobian reuse; the friction step limit keeps touchdown to <= 24 updates:
    before it, stiffer rods failed there at 5 ms). Defaults: 1400 steps, 8.1 updates and 0.97
    Jacobians per step on average, all converged; 2-core CPU: ~25 s including compilation (the
    CLI run). Measured coil radius (arc length per turn of the laid curve, its first-laid 3
    ``L_gb`` left out, defaults): 1.72 ``L_gb`` after 1.1 turns, 1.65 ``L_gb`` after 2.75 turns
    as the hanging height drops (``tests/test_der_coiling.py`` checks ``R ~ L_gb`` and the
    doubling of ``R`` with ``L_gb``).

    Args:
        n_nodes: nodes (>= 3); keep the edge ``length/(n_nodes-1)`` below ``L_gb/2``.
        length: rod length L [m] > 0.
        radius, youngs_modulus, density: cross-section radius h [m], E [Pa], rho [kg/m^3], > 0.
        feed_speed: descent speed of the clamp [m/s] > 0.
        mu: floor friction coefficient >= 0; nu: slip tolerance [m/s] > 0.
        stiffness, delta: floor contact stiffness [N/m] and tolerance [m].
        gap: height [m] of the unstretched rod's free end above the floor's contact level;
            must exceed the weight-stretch.
        imperfection: amplitude of the out-of-plane rest-shape seed [m] >= 0.
        self_contact: add rod-rod self-contact (dense Jacobian; slow).
        dt, duration: time step and simulated time [s]; ``feed_speed * duration`` must leave at
            least two edges hanging.

    Raises:
        ValueError: non-positive ``length``, ``feed_speed``, ``radius``, ``youngs_modulus``,
            ``density``, ``dt`` or ``duration``; ``n_nodes < 3``; negative ``gap`` or
            ``imperfection``; a ``gap`` smaller than the weight-stretch; a feed
            (``feed_speed * duration``) that would drive the clamp into the floor.

    ``reference``: ``gravito_bending_length_m`` and ``coil_radius_scale_m`` (both ``L_gb``: the
    coil radius scales as ``L_gb``), ``touchdown_time_s`` (``(gap - stretch) / feed_speed``),
    ``stretch_m``, ``feed_speed_m_s``, ``froude`` (``feed_speed^2 / (g L_gb)``),
    ``clamp_height_end_m``, ``delta_m``, ``radius_m``.
    """
    g = 9.81
    check_positive("length", length, "m")
    check_positive("feed_speed", feed_speed, "m/s")
    check_positive("radius", radius, "m")
    check_positive("youngs_modulus", youngs_modulus, "Pa")
    check_positive("density", density, "kg/m^3")
    check_nonnegative("gap", gap, "m")
    check_nonnegative("imperfection", imperfection, "m")
    check_int("n_nodes", n_nodes, min=3)
    n, L, h, v = int(n_nodes), float(length), float(radius), float(feed_speed)
    dl = L / (n - 1)
    dt = 5e-3 if dt is None else dt
    check_positive("dt", dt, "s")
    T = 0.7 * L / v if duration is None else duration
    check_positive("duration", T, "s")
    if v * T > L - 2.0 * dl:
        raise ValueError(
            f"feed_speed * duration = {v * T:.4g} m would lower the clamp into the floor: it must stay "
            f"below length - 2 edges = {L - 2.0 * dl:.4g} m"
        )

    u = np.linspace(0.0, 1.0, n)
    rest = np.stack([imperfection * u**2, imperfection * u**3, h + gap + L * (1.0 - u)], axis=1)
    rod = DERRod.from_polyline(rest, rest="stress_free", youngs_modulus=youngs_modulus, density=density, radius=h)
    # hanging equilibrium: edge i carries the weight of the nodes below it; edge 0 is clamped at
    # both ends, so its length is prescribed and left at rest
    weight_below = g * np.cumsum(np.asarray(rod.node_masses())[::-1])[::-1]
    strain = np.concatenate([[0.0], weight_below[2:] / (float(youngs_modulus) * np.pi * h * h)])
    e = np.diff(rest, axis=0) * (1.0 + strain)[:, None]
    x = np.concatenate([rest[:1], rest[:1] + np.cumsum(e, axis=0)])
    sag = float(rest[-1, 2] - x[-1, 2])
    if sag >= gap:
        raise ValueError(
            f"gap = {gap} m is smaller than the rod's stretch under its own weight ({sag:.4g} m): the free "
            "end would start inside the floor; increase gap or youngs_modulus"
        )
    q0 = np.concatenate([x, np.zeros((n, 1))], axis=1)
    vel = np.zeros((n, 4))
    vel[:, 2] = -v
    # the clamp path depends on the geometry only (not on E or the load): models that differ in
    # array leaves only (e.g. E swapped in with eqx.tree_at) share one compiled program
    top = np.zeros((n, 4))
    top[:2, :3] = rest[:2]
    top_j, vel_j = jnp.asarray(top), jnp.asarray(vel)

    def lowered_clamp(t):
        return top_j + t * vel_j

    floor = FloorContact((0.0, 0.0, 1.0), 0.0, stiffness=stiffness, delta=delta, mu=mu, nu=nu)
    contacts = (floor,)
    if self_contact:
        contacts += (RodRodContact(stiffness=stiffness, delta=delta, mu=mu, nu=nu, self_contact=True),)
    model = DERModel(
        rod, clamped_edges=(0,), gravity=(0.0, 0.0, -g), q0=q0, v0=vel, motion=lowered_clamp, contacts=contacts
    )
    l_gb = (float(youngs_modulus) * h * h / (4.0 * float(density) * g)) ** (1.0 / 3.0)
    return Scene(
        "rod-coiling",
        f"rod (L = {L:g} m, L_gb = {100 * l_gb:.3g} cm) lowered at {v:g} m/s onto a floor with mu = {mu:g}: coiling",
        model,
        dt=dt,
        duration=T,
        scheme=BackwardEuler(),
        solver=NewtonSolver(linear_solver=None, reuse_jacobian=True, rtol=1e-9, atol=1e-9),
        reference={
            "gravito_bending_length_m": l_gb,
            "coil_radius_scale_m": l_gb,
            "touchdown_time_s": (gap - sag) / v,
            "stretch_m": sag,
            "feed_speed_m_s": v,
            "froude": v * v / (g * l_gb),
            "clamp_height_end_m": h + gap + L - v * T,
            "delta_m": float(delta),
            "radius_m": h,
        },
    )
