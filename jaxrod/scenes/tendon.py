"""Tendon-driven continuum robots (Till, Aloi & Rucker 2019 sec. 5.2) for the shooting model.

* ``tendon-robot-step``: the single-tendon experimental robot of sec. 5.2.1 (spec 7.2): spring-steel
  backbone L 0.7144 m, d 1.35 mm, total mass 34 g (spacer disks included in rho), one tendon at
  0.0151 m along ``d1``, gravity ``-9.81 e1`` (so the tendon lifts the arm against gravity), drag
  C = 1e-4 kg/m^2, bending damping B_bt = 5e-4 N m^2 s, G = E / 2.6, BDF2, dt = 0.05 s, T = 25 s.
  The paper drives the tendon by displacement (tension as an extra shooting unknown); here the
  *tension* follows the same ramps (0.31 s up at t = 3.652 s, down at t = 17.63 s) between two
  levels found once by static solves of this model (50 RK4 points, secant iterations):
  ``tau_0 = 2.546 N`` holds the tip tangent to z (paper's initial state; the tip then sits at
  x = -0.143 m), and ``tau_1 = 6.590 N`` shortens the tendon path ``int |u x r + v| ds`` by the
  16.19 mm retraction net of the tendon's compliance stretch (1.6e-3 per N over L + 0.0518 m);
  the tip then sits at (0.311, 0, 0.568) m. Other resolutions keep these tensions. Tendon friction
  (beta) is not modelled. The spacer-disk radius is not given: ``section_radius = 1.5 r``.
"""

from __future__ import annotations

import numpy as np

from ..models.cosserat import CosseratModel, CosseratRod, Samples, StraightRouting, Tendon
from ..timestepping import DifferenceFormula
from .scene import Scene

#: Spec 7.2 table (experimental tendon robot).
ROBOT = {
    "length_m": 0.7144, "diameter_m": 0.00135, "offset_m": 0.0151, "mass_kg": 0.034,
    "youngs_modulus_pa": 207e9, "drag_kg_m2": 1e-4, "damping_bt_nm2s": 5e-4,
    "retraction_m": 0.01619, "ramp_s": 0.31, "ramp_up_s": 3.652, "ramp_down_s": 17.63,
    "tension_low_n": 2.546, "tension_high_n": 6.590,  # solved for, see the module docstring
}


def tendon_robot_step(
    *, n_points: int = 50, dt: float | None = None, duration: float | None = None,
    integrator: str = "rk4", kirchhoff: bool = False,
):
    """Single-tendon robot, ramped tension step up and back (see module docstring)."""
    p = ROBOT
    L, r, off = p["length_m"], 0.5 * p["diameter_m"], p["offset_m"]
    E = p["youngs_modulus_pa"]
    area = np.pi * r**2
    rod = CosseratRod.circular(
        L, r, youngs_modulus=E, shear_modulus=E / 2.6, density=p["mass_kg"] / (L * area),
        drag=p["drag_kg_m2"], damping_bt=p["damping_bt_nm2s"],
    )
    tau0, tau1 = p["tension_low_n"], p["tension_high_n"]
    up, down, ramp = p["ramp_up_s"], p["ramp_down_s"], p["ramp_s"]
    profile = Samples([0.0, up, up + ramp, down, down + ramp], [tau0, tau0, tau1, tau1, tau0])
    model = CosseratModel(
        rod, n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=(-9.81, 0.0, 0.0),
        tendons=(Tendon(StraightRouting((off, 0.0)), tension=1.0, profile=profile),),
        section_radius=1.5 * off,
    )
    return Scene(
        "tendon-robot-step",
        f"Till et al. single-tendon robot, tension ramped {tau0:.2f} -> {tau1:.2f} -> {tau0:.2f} N, "
        f"{'Kirchhoff' if kirchhoff else 'Cosserat'} + {integrator}, {n_points} points",
        model,
        dt=0.05 if dt is None else dt,
        duration=25.0 if duration is None else duration,
        scheme=DifferenceFormula.bdf2(),
        reference={"tension_low_N": tau0, "tension_high_N": tau1, "tip_axis": 0},
    )
