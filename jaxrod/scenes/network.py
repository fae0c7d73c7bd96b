"""Scenes of jointed multi-rod DER structures (:class:`~jaxrod.models.der.network.DERNetwork`).

* ``network-spider``: DisMech's four-legged spider (spec 8.1, code version): a vertical body
  (0.1 m), four horizontal arms (0.1 m, along +-x, +-y) joined to the body at a hub joint and four
  vertical legs (0.1 m) joined to the arm tips; h = 5 mm, E = 3 MPa, rho = 1180 kg/m^3, nu = 0.5.
  Default: dropped from 0.1 m onto a floor at z = -0.1 with the incline emulated by tilted gravity
  (DisMech's code: (1, 0, -9.8); the paper says (0.707, 0.707, -9.8)), IMC floor contact
  (k_c = 1e4 N/m, delta = 5 mm, nu = 1 cm/s: DisMech's "fast" settings) and friction mu = 0.4,
  backward Euler at 2.5 ms for 2 s. Measured (11 nodes per limb, 364 DOFs, 43 Jacobian colours,
  2 CPU cores): 38 ms per step, 1.6 Newton iterations per step with
  ``NewtonSolver(reuse_jacobian=False)``; with ``simulate``'s default (Jacobian reuse) the step at
  impact (t = 0.14 s) does not converge: use the fresh-Jacobian solver for this scene. Outcome:
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
from ..models.der.contact import FloorContact
from ..models.der.network import DERNetwork, Joint, LinearRamp
from ..solvers.newton import NewtonSolver
from ..timestepping import BackwardEuler
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
    n = int(n_nodes)
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
    limbs = [DERRod.from_polyline(p, **mat) for p in pts]
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
        # the chord (reused-Jacobian) default stalls at the floor impact; fresh Jacobians converge
        solver=NewtonSolver(reuse_jacobian=False),
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
    n, L = int(n_nodes), float(limb_length)
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
