"""The discrete-elastic-rod scenes of DisMech's Table II: the tip-loaded static cantilever, the
dynamic cantilevers a1/a2 and the hanging helices b1/b2 (registered in
:mod:`jaxrod.scenes.registry`, built by :func:`jaxrod.scenes.get_scene`)."""

from __future__ import annotations

import numpy as np

from ..models.der import DERModel, DERRod, first_mode_velocity, helix_points
from ..models.der.rod import clamped_straight_points
from ..integrate.schemes import ImplicitMidpoint  # noqa: F401  (re-exported default)
from ..validation import check_int
from .scene import Scene

#: Euler-Bernoulli clamped-free eigenvalues beta_n L.
BETA_L = (1.8751040687119611, 4.694091132974175, 7.854757438237613, 10.995540734875467)


def straddled_cantilever_points(n_nodes: int, length: float):
    """Nodes of a cantilever along +x whose clamped edge 0 straddles the wall at ``x = 0``.

    With DER's clamped *edge*, the first free bending node sits one edge from the clamp, so a
    rod starting at the wall behaves as if it were ~half an edge shorter (tip deflection too small
    by ~1.5 dl/L). Centring edge 0 on the wall (node 0 at ``-dl/2``) puts the effective clamp at
    ``x = 0`` and the tip at ``x = length``.
    """
    n_nodes = check_int("n_nodes", n_nodes, min=3)
    return clamped_straight_points(n_nodes, length, clamped_ends="start")


def euler_bernoulli_frequency(E, radius, density, length, mode=1):
    """Cantilever bending frequency omega_n [rad/s] of a solid circular rod."""
    EI = E * np.pi * radius**4 / 4
    rhoA = density * np.pi * radius**2
    return BETA_L[mode - 1] ** 2 * np.sqrt(EI / (rhoA * length**4))


def cantilever_static(
    n_nodes: int = 51,
    *,
    length: float = 1.0,
    radius: float = 0.01,
    youngs_modulus: float = 1e7,
    density: float = 1000.0,
    load_parameter: float = 0.03,
    load_steps: int | None = None,
) -> Scene:
    """Straight cantilever along +x, clamped at x = 0, dead tip load ``P`` in -z with
    ``load_parameter = P L^2 / EI`` (0.03: small deflection; 1-10: large). No gravity."""
    rod = DERRod.from_polyline(
        straddled_cantilever_points(n_nodes, length), rest="straight", youngs_modulus=youngs_modulus, density=density,
        radius=radius,
    )
    EI = youngs_modulus * np.pi * radius**4 / 4
    P = load_parameter * EI / length**2
    forces = np.zeros((n_nodes, 3))
    forces[-1, 2] = -P
    model = DERModel(rod, clamped_edges=(0,), point_forces=forces)
    steps = load_steps if load_steps is not None else max(1, int(np.ceil(load_parameter / 0.5)))
    return Scene(
        "cantilever-static",
        f"static cantilever, L = {length} m, tip load P = {P:.4g} N (P L^2/EI = {load_parameter})",
        model,
        static=True,
        load_steps=steps,
        reference={"tip_deflection_small_m": P * length**3 / (3 * EI), "load_N": P, "EI_Nm2": EI},
    )


def dynamic_cantilever(
    case: str = "a1", *, n_nodes: int = 201, dt: float | None = None, duration: float | None = None
) -> Scene:
    """DisMech's dynamic cantilever (Table II, a1: E = 0.1 MPa, T = 100 s, dt 0.5 s; a2: E = 10 MPa,
    T = 20 s, dt 0.05 s): L = 1 m, h = 2 cm, rho = 500 kg/m^3, nu = 0.5, no gravity; initial
    velocity is the first mode with a 5 mm/s tip speed (along +z). Implicit midpoint."""
    params = {"a1": (1e5, 100.0, 0.5), "a2": (1e7, 20.0, 0.05)}
    if case not in params:
        raise ValueError(f"unknown cantilever case {case!r}; choose 'a1' or 'a2'")
    E, T, dt0 = params[case]
    L, h, rho, v_tip = 1.0, 0.02, 500.0, 5e-3
    pts = straddled_cantilever_points(n_nodes, L)
    rod = DERRod.from_polyline(pts, rest="straight", youngs_modulus=E, density=rho, radius=h, poisson_ratio=0.5)
    v0 = first_mode_velocity(rod, v_tip, s=np.clip(pts[:, 0], 0.0, None), length=L)
    model = DERModel(rod, clamped_edges=(0,), v0=v0)
    omega = euler_bernoulli_frequency(E, h, rho, L)
    return Scene(
        f"cantilever-{case}",
        f"DisMech dynamic cantilever {case}: E = {E:g} Pa, N = {n_nodes}, first-mode free vibration",
        model,
        dt=dt0 if dt is None else dt,
        duration=T if duration is None else duration,
        reference={
            "omega_rad_s": omega,
            "period_s": 2 * np.pi / omega,
            "tip_amplitude_m": v_tip / omega,
            "dismech_time_s": {"a1": 0.661, "a2": 1.24}[case],
            "dismech_dt_s": dt0,
        },
    )


def dismech_helix_points(n_helix: int = 100, *, helix_radius=0.02, pitch=0.05, contour_length=0.5):
    """DisMech's helix mesh: a 2.5 cm vertical stub (clamped), a radial arm of 5 edges out to the
    helix radius, then ``n_helix`` helix nodes descending about the z axis."""
    n_helix = check_int("n_helix", n_helix, min=2)
    stub = np.array([[0.0, 0.0, 0.025], [0.0, 0.0, 0.0]])
    arm = np.stack([np.linspace(0, helix_radius, 6)[1:], np.zeros(5), np.zeros(5)], axis=1)
    helix = helix_points(n_helix, helix_radius, pitch, contour_length)
    return np.concatenate([stub, arm[:-1], helix], axis=0)


def helix(
    case: str = "b1",
    *,
    n_helix: int = 100,
    dt: float | None = None,
    duration: float | None = None,
    damping: float = 0.0,
) -> Scene:
    """DisMech's oscillating helix under gravity (Table II b1: E = 10 MPa, h = 5 mm, T = 10 s,
    dt 6 ms; b2: E = 1 GPa, h = 1 mm, T = 2 s, dt 3 ms); rho = 1273.52 kg/m^3, helix radius 2 cm,
    pitch 5 cm, contour 0.5 m, top clamped, gravity -9.8 z. ``damping`` [N s/m^2] optional.

    Default time step 3 ms for both: with implicit midpoint at DisMech's 6 ms, b1's Newton
    solves stop converging at t ~ 8.9 s (the axial modes, omega dt ~ 150, are far from resolved
    and the midpoint rule does not damp them); ``reference['dismech_dt_s']`` keeps the paper's."""
    params = {"b1": (1e7, 0.005, 10.0, 3e-3, 7.30), "b2": (1e9, 0.001, 2.0, 3e-3, 3.18)}
    dismech_dt = {"b1": 6e-3, "b2": 3e-3}[case]
    if case not in params:
        raise ValueError(f"unknown helix case {case!r}; choose 'b1' or 'b2'")
    E, h, T, dt0, t_dismech = params[case]
    rod = DERRod.from_polyline(
        dismech_helix_points(n_helix), rest="stress_free", youngs_modulus=E, density=1273.52, radius=h,
        poisson_ratio=0.5,
    )
    model = DERModel(rod, clamped_edges=(0,), gravity=(0.0, 0.0, -9.8), damping=damping)
    return Scene(
        f"helix-{case}",
        f"DisMech helix {case}: E = {E:g} Pa, h = {h} m, {rod.n_nodes} nodes, hanging under gravity",
        model,
        dt=dt0 if dt is None else dt,
        duration=T if duration is None else duration,
        reference={"dismech_time_s": t_dismech, "dismech_dt_s": dismech_dt},
    )
