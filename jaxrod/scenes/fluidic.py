"""Fluidic soft finger (Till, Aloi & Rucker 2019 sec. 5.3, figs. 18-19; spec 7.3) on the shooting model.

``fluidic-finger`` (air) and ``fluidic-finger-water``: a soft cylinder (L 0.1 m, outer radius 15 mm, rho 300 kg/m^3) with one chamber
of radius 2.5 mm whose centre is 10 mm from the cylinder's axis. From straight (zero gauge
pressure) the control ramps at a constant rate over 2 s, then is held for a 2.5 s free response:
``fluid="air"`` (ideal gas, moles to 2e-4 mol at 293.15 K, P_atm 101325 Pa) or ``fluid="water"``
(incompressible, volume to 2.65e-6 m^3). BDF-alpha (alpha = -0.3), dt = 0.01 s, N = 50 RK4
points, no gravity and no physical damping (neither is given by the paper).

Deviations from the printed values (spec 7.3 [D], both flagged there as typos): E = **20 kPa**
(printed 20 MPa, which could not bend the finger visibly nor make the two fluids "equivalent at
steady state") and the chamber at **d = 0.010286 m** from the centroid of the hollow section
(printed r_1 = -0.013 e1; the hole moves the centroid 0.286 mm away from the chamber). The section
properties are those of the hollow section (A = 6.872e-4 m^2, I_yy = 3.771e-8 m^4 about the
centroid); G = E / 3 (incompressible rubber; the paper gives none).
"""

from __future__ import annotations

import numpy as np

from ..models.cosserat import Chamber, CosseratModel, CosseratRod, Samples
from ..integrate.schemes import DifferenceFormula
from .scene import Scene

#: Spec 7.3 table, with E and d as reconstructed there.
FINGER = {
    "length_m": 0.1, "outer_radius_m": 0.015, "chamber_radius_m": 0.0025, "chamber_centre_m": 0.01,
    "youngs_modulus_pa": 20e3, "density_kg_m3": 300.0, "ramp_s": 2.0, "free_s": 2.5,
    "moles_mol": 2e-4, "volume_m3": 2.65e-6, "temperature_k": 293.15, "p_atm_pa": 101325.0,
}
FLUIDS = ("air", "water")


def finger_section(outer_radius=FINGER["outer_radius_m"], chamber_radius=FINGER["chamber_radius_m"],
                   chamber_centre=FINGER["chamber_centre_m"]):
    """Hollow circular section with one round chamber at ``-chamber_centre e1`` from the disk's
    centre [m]: ``(area [m^2], (Ixx, Iyy, Izz) [m^4] about the centroid, chamber offset from the
    centroid d [m], chamber area [m^2])`` (the chamber is at ``-d e1``, bending about ``d2``)."""
    R, a, c = outer_radius, chamber_radius, chamber_centre
    A_out, A_ch = np.pi * R**2, np.pi * a**2
    area = A_out - A_ch
    shift = A_ch * c / area  # centroid moves away from the hole, to +x
    d = c + shift
    i_out, i_ch = np.pi * R**4 / 4, np.pi * a**4 / 4
    Iyy = i_out + A_out * shift**2 - (i_ch + A_ch * d**2)  # about d2 (x offsets)
    Ixx = i_out - i_ch  # about d1 (the hole is on the x axis)
    return area, (Ixx, Iyy, Ixx + Iyy), d, A_ch


def finger_rod(youngs_modulus=FINGER["youngs_modulus_pa"], density=FINGER["density_kg_m3"]):
    """:class:`CosseratRod` of the finger's hollow section and the chamber's ``(d, area)``."""
    area, I, d, A_ch = finger_section()
    vec = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (3,))  # noqa: E731
    rod = CosseratRod(
        length=FINGER["length_m"], area=np.asarray(area), second_moments=np.asarray(I),
        youngs_modulus=np.asarray(float(youngs_modulus)), shear_modulus=np.asarray(youngs_modulus / 3.0),
        density=np.asarray(float(density)), drag=vec(0.0), damping_se=vec(0.0), damping_bt=vec(0.0),
        v_star=np.array([0.0, 0.0, 1.0]), u_star=np.zeros(3),
    )
    return rod, d, A_ch


def finger_chamber(fluid: str, *, d, area, ramp_s=FINGER["ramp_s"], length=FINGER["length_m"]):
    """The finger's chamber at ``-d e1``: ``"air"`` (moles) or ``"water"`` (volume), ramped at a
    constant rate over ``ramp_s`` from the straight chamber at zero gauge pressure."""
    p = FINGER
    V0 = area * length
    if fluid == "water":
        return Chamber((-d, 0.0), area, volume=p["volume_m3"],
                       profile=Samples([0.0, ramp_s], [V0 / p["volume_m3"], 1.0]))
    if fluid == "air":
        n0 = p["p_atm_pa"] * V0 / (8.314 * p["temperature_k"])
        return Chamber((-d, 0.0), area, moles=p["moles_mol"], temperature=p["temperature_k"],
                       atmospheric_pressure=p["p_atm_pa"],
                       profile=Samples([0.0, ramp_s], [n0 / p["moles_mol"], 1.0]))
    raise ValueError(f"fluid must be one of {FLUIDS}, got {fluid!r}")


def fluidic_finger(*, fluid: str = "air", n_points: int = 50, dt: float | None = None,
                   duration: float | None = None, integrator: str = "rk4", kirchhoff: bool = False):
    """The soft finger inflated with air or water (module docstring)."""
    rod, d, A_ch = finger_rod()
    model = CosseratModel(
        rod, n_points=n_points, integrator=integrator, kirchhoff=kirchhoff,
        chambers=(finger_chamber(fluid, d=d, area=A_ch),), section_radius=FINGER["outer_radius_m"],
    )
    what = "moles to 2e-4 mol" if fluid == "air" else "volume to 2.65e-6 m^3"
    return Scene(
        "fluidic-finger" if fluid == "air" else f"fluidic-finger-{fluid}",
        f"Till et al. fluidic finger ({fluid}: {what} over 2 s, then free), E = 20 kPa, "
        f"{'Kirchhoff' if kirchhoff else 'Cosserat'} + {integrator}, {n_points} points",
        model,
        dt=0.01 if dt is None else dt,
        duration=FINGER["ramp_s"] + FINGER["free_s"] if duration is None else duration,
        scheme=DifferenceFormula.bdf_alpha(-0.3),
        reference={"tip_axis": 0},
    )
