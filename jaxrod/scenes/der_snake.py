"""A continuum snake on a DER rod: PyElastica's continuum-snake example (``examples/
ContinuumSnakeCase/continuum_snake.py``, after Zhang et al., Nat. Commun. 2021) rebuilt from the
public API.

The rod (50 edges, 0.35 m, radius 0.011 L, 1000 kg/m^3, E = 1 MPa, G = E/1.5 as the example sets
it) lies on a floor (IMC contact) under gravity; its muscles are a travelling wave of natural
curvature (:class:`~jaxrod.models.der.waves.CurvatureWave`) equivalent to the example's
``MuscleTorques``: the torque spline coefficients ``tau_j`` [N m] become curvature coefficients
``tau_j / EI`` [1/m] (module docstring of :mod:`jaxrod.models.der.waves`), period 2 s, one wave per
body length, ramped in over one period, on the same body positions (PyElastica evaluates the
wave at ``1 - s/L`` for the interface at ``s``: the wave runs from the last node, the head, to
node 0). Friction: kinetic coefficients ``mu = L / (T^2 g Fr)`` with Froude number 0.1 forward
(toward the head, +x), ``1.5 mu`` backward and ``2 mu`` sideways, with the anisotropic law named
by ``law`` (default ``"projected"``: the kinetic law of PyElastica 1.0's
``RodPlaneContactWithAnisotropicFriction``, ``-f_n (mu_a (u_hat . t) t + mu_side (u_hat . r) r)``,
smoothed over the slip tolerance ``nu``).

What differs from PyElastica (said again wherever the two are compared): DER (inextensible-ish,
unshearable) instead of a shearable Cosserat rod; contact and friction on the nodes (the example:
on the elements) with the IMC floor instead of PyElastica's linear spring plane; no rolling term
(PyElastica adds the surface velocity of the rod's spin to the lateral slip); no static friction
in either; backward Euler at ``dt`` (default 1 ms) instead of position Verlet at 0.1 ms.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..integrate.schemes import BackwardEuler
from ..models.der import DERModel, DERRod
from ..models.der.contact import FloorContact
from ..models.der.frames import initial_frames
from ..models.der.waves import CurvatureWave, bspline_basis
from .contact import settle_on_floor
from .scene import Scene

#: PyElastica's example: muscle torque B-spline coefficients [N m] and wave length [body lengths]
PYELASTICA_TORQUES = (3.4e-3, 3.3e-3, 4.2e-3, 2.6e-3, 3.6e-3, 3.5e-3)
PYELASTICA_GRAVITY = 9.80665
#: PyElastica's example: rod and gait
PYELASTICA_SNAKE = {"n_elements": 50, "length": 0.35, "radius": 0.35 * 0.011, "density": 1000.0,
                    "youngs_modulus": 1e6, "shear_modulus": 1e6 / 1.5, "period": 2.0, "wave_length": 1.0,
                    "froude": 0.1, "backward_ratio": 1.5, "lateral_ratio": 2.0, "damping_rate": 2e-3}


def lateral_bending_direction(points):
    """``(N-2, 2)`` material components of a unit integrated curvature that turns the rod to its
    left seen from above (curvature binormal ``+z``) in the rest frames of ``points`` ``(N, 3)``
    (``kappa_1 = kb . m2``, ``kappa_2 = -kb . m1``, averaged over the stencil's two edges)."""
    fr = initial_frames(jnp.asarray(points, float))
    d1 = np.asarray(fr.d1)
    d2 = np.cross(np.asarray(fr.tangent), d1)
    z = np.array([0.0, 0.0, 1.0])
    k1 = 0.5 * (d2[:-1] + d2[1:]) @ z
    k2 = -0.5 * (d1[:-1] + d1[1:]) @ z
    return np.stack([k1, k2], axis=1)


def snake_wave(rod: DERRod, torques=PYELASTICA_TORQUES, *, period=2.0, wave_length=1.0, phase=0.0,
               ramp_time=None) -> CurvatureWave:
    """The :class:`CurvatureWave` equivalent to PyElastica's ``MuscleTorques`` with B-spline torque
    coefficients ``torques`` [N m] on ``rod`` (straight, along any horizontal line): curvature
    coefficients ``torques / EI`` [1/m], stencil ``k`` at body position ``sigma = 1 - (k + 1)/n``
    (``n`` edges), ``ramp_time`` default one period."""
    n = rod.n_nodes - 1
    sigma = 1.0 - np.arange(1, n) / n
    torques = np.asarray(torques, float)
    return CurvatureWave(
        coefficients=jnp.asarray(torques) / rod.EI,
        period=period,
        wave_length=wave_length,
        phase=phase,
        ramp_time=period if ramp_time is None else ramp_time,
        sigma=sigma,
        basis=bspline_basis(sigma, torques.size),
        voronoi=rod.voronoi_lengths[1:-1],
        direction=lateral_bending_direction(rod.rest_positions),
    )


def der_snake(
    *,
    n_nodes: int = 51,
    torques=PYELASTICA_TORQUES,
    period: float = 2.0,
    wave_length: float = 1.0,
    law: str = "projected",
    mu: float | None = None,
    backward_ratio: float = 1.5,
    lateral_ratio: float = 2.0,
    nu: float = 1e-3,
    stiffness: float = 1e2,
    delta: float = 5e-4,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """PyElastica's continuum snake on a DER rod (module docstring); all friction coefficients
    from ``mu`` (forward; default ``L / (T^2 g 0.1)`` = 0.892 for ``T = period``), ``backward_ratio``
    and ``lateral_ratio``; ``law`` one of :data:`~jaxrod.models.der.contact.FRICTION_LAWS`.
    ``stiffness`` [N/m] and ``delta`` [m] of the IMC floor (a node weighs 3.3 mN: 100 N/m keeps it
    within ~0.1 delta of contact), ``nu`` [m/s] the slip tolerance. Defaults: dt 1 ms, T = 5 periods.
    The model's ``natural_curvature_fn`` is the wave (:func:`snake_wave`): replace its leaves with
    ``eqx.tree_at`` for another gait without recompiling."""
    p = PYELASTICA_SNAKE
    L, h = p["length"], p["radius"]
    if mu is None:
        mu = L / (period * period * PYELASTICA_GRAVITY * p["froude"])
    rod = DERRod.straight(n_nodes, L, start=(0.0, 0.0, h), youngs_modulus=p["youngs_modulus"],
                          shear_modulus=p["shear_modulus"], density=p["density"], radius=h)
    floor = FloorContact((0.0, 0.0, 1.0), 0.0, stiffness=stiffness, delta=delta, mu=mu, nu=nu,
                         mu_backward=backward_ratio * mu, mu_lateral=lateral_ratio * mu, law=law)
    q0 = settle_on_floor(rod, floor, PYELASTICA_GRAVITY)
    # PyElastica's AnalyticalLinearDamper: velocities decay at damping_constant [1/s]
    eta = p["density"] * float(rod.area) * p["damping_rate"]
    model = DERModel(rod, gravity=(0.0, 0.0, -PYELASTICA_GRAVITY), damping=eta, q0=q0, contacts=(floor,),
                     natural_curvature_fn=snake_wave(rod, torques, period=period, wave_length=wave_length))
    return Scene(
        "der-snake",
        f"continuum snake (PyElastica's example) on DER, {law} friction mu = {mu:.3g}",
        model,
        dt=1e-3 if dt is None else dt,
        duration=5.0 * period if duration is None else duration,
        scheme=BackwardEuler(),
        reference={"mu_forward": mu, "period_s": period, "length_m": L},
    )


def forward_distance(positions, axis=(1.0, 0.0, 0.0)):
    """``(T,)`` displacement [m] along ``axis`` of the centre of mass of equally spaced nodes
    ``positions`` ``(T, N, 3)`` (end nodes weigh half) from the first saved frame."""
    n = positions.shape[-2]
    w = jnp.ones(n).at[0].set(0.5).at[-1].set(0.5) / (n - 1)
    c = jnp.einsum("n,...nk->...k", w, positions)
    return (c - c[0]) @ jnp.asarray(axis, float)
