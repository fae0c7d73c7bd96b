"""Tendon-driven continuum robots (Till, Aloi & Rucker 2019 sec. 5.2) for the shooting model.

* ``tendon-robot-step``: the single-tendon experimental robot of sec. 5.2.1 (spec 7.2): spring-steel
  backbone L 0.7144 m, d 1.35 mm, total mass 34 g (spacer disks included in rho), one tendon at
  0.0151 m along ``d1``, gravity ``-9.81 e1`` (so the tendon lifts the arm against gravity), drag
  C = 1e-4 kg/m^2, bending damping B_bt = 5e-4 N m^2 s, G = E / 2.6, BDF2, dt = 0.05 s, T = 25 s.
  As in the paper's repository, the tendon is driven by *displacement*: the motor reels in
  z = 0.01619 m over 0.31 s ramps (down at t = 3.652 s, back at t = 17.63 s); the tension is a
  shooting unknown, the tendon stretches 1.6e-3 per N and per metre of its unstretched length,
  the motor sits 0.0518 m beyond the base plate, and friction damping ``beta`` = 4 s/m (the
  repository's value; the paper prints 5). At z = 0 the tendon is just taut when the rod is
  straight (rest length L + 0.0518 m), as in the repository. ``control="tension"`` keeps the
  earlier tension-driven variant: the tension follows the same ramps between ``tau_0 = 2.546 N``
  and ``tau_1 = 6.590 N`` (static solves of this model for the paper's tangent-to-z initial
  state and the retraction of 16.19 mm), without friction. The spacer-disk radius is not given:
  ``section_radius = 1.5 r``.
* ``tendon-object-transfer``: the 4-tendon robot of Figs. 13-14 (spec 7.2): L 0.24 m, r 0.4 mm,
  E 207 GPa (G = E / 2.6, not given), rho 1.6e4 kg/m^3, C 0.03 kg/m^2, B_bt 1e-6 N m^2 s, four
  straight tendons 9.5 mm from the axis 90 deg apart, a 1 g object held at the tip, Euler 200
  points, BDF-alpha alpha = -0.03, dt = 1/60 s. The paper gives no tension trajectories, object
  inertia or gripper logic; the schedule here is ours (a reach-pick-lift-drop): the robot hangs
  from its base (axis -z, gravity -z); 0.5-1.5 s the +x tendon pulls to 2.5 N (reach), the object
  (point mass, no inertia) is attached at 2.0 s, 2.0-3.0 s the tension passes to the -x and +y
  tendons (2.5 N and 1.0 N: lift and carry across), the object is released at 3.5 s and the arm
  swings up; 5 s in all. All tendons keep 0.05 N of pretension.
"""

from __future__ import annotations

import numpy as np

from ..models.cosserat import CosseratModel, CosseratRod, Samples, StraightRouting, Tendon
from ..integrate.schemes import DifferenceFormula
from .scene import Scene

#: Spec 7.2 table (experimental tendon robot).
ROBOT = {
    "length_m": 0.7144, "diameter_m": 0.00135, "offset_m": 0.0151, "mass_kg": 0.034,
    "youngs_modulus_pa": 207e9, "drag_kg_m2": 1e-4, "damping_bt_nm2s": 5e-4,
    "retraction_m": 0.01619, "ramp_s": 0.31, "ramp_up_s": 3.652, "ramp_down_s": 17.63,
    "compliance_per_n": 1.6e-3, "motor_to_base_m": 0.0518, "friction_s_per_m": 4.0,
    "tension_low_n": 2.546, "tension_high_n": 6.590,  # tension variant: solved for, see the module docstring
}

#: Spec 7.2 table (4-tendon object-transfer robot) and our schedule (module docstring).
TRANSFER = {
    "length_m": 0.24, "radius_m": 4e-4, "offset_m": 9.5e-3, "density_kg_m3": 1.6e4,
    "youngs_modulus_pa": 207e9, "drag_kg_m2": 0.03, "damping_bt_nm2s": 1e-6, "object_kg": 1e-3,
    "alpha": -0.03, "dt_s": 1.0 / 60.0, "n_points": 200, "duration_s": 5.0,
    "attach_s": 2.0, "release_s": 3.5, "pretension_n": 0.05,
    # tension [N] of the tendons at +x, +y, -x, -y at the schedule times [s]
    "times_s": (0.0, 0.5, 1.5, 2.0, 3.0, 5.0),
    "tensions_n": ((0.05, 0.05, 0.05, 0.05), (0.05, 0.05, 0.05, 0.05), (2.5, 0.05, 0.05, 0.05),
                   (2.5, 0.05, 0.05, 0.05), (0.05, 1.0, 2.5, 0.05), (0.05, 1.0, 2.5, 0.05)),
}


def tendon_robot_step(
    *, n_points: int = 50, dt: float | None = None, duration: float | None = None,
    integrator: str = "rk4", kirchhoff: bool = False, control: str = "displacement",
    friction: float | None = None,
):
    """Single-tendon robot, ramped step of the motor (or, ``control="tension"``, of the tension)
    and back (see module docstring). ``friction``: beta [s/m] (default 4; displacement only)."""
    p = ROBOT
    L, r, off = p["length_m"], 0.5 * p["diameter_m"], p["offset_m"]
    E = p["youngs_modulus_pa"]
    area = np.pi * r**2
    rod = CosseratRod.circular(
        L, r, youngs_modulus=E, shear_modulus=E / 2.6, density=p["mass_kg"] / (L * area),
        drag=p["drag_kg_m2"], damping_bt=p["damping_bt_nm2s"],
    )
    up, down, ramp = p["ramp_up_s"], p["ramp_down_s"], p["ramp_s"]
    times = [0.0, up, up + ramp, down, down + ramp]
    if control == "displacement":
        beta = p["friction_s_per_m"] if friction is None else friction
        tendon = Tendon(
            StraightRouting((off, 0.0)), tension=p["tension_low_n"], control="displacement",
            displacement=-p["retraction_m"], profile=Samples(times, [0.0, 0.0, 1.0, 1.0, 0.0]),
            compliance=p["compliance_per_n"], extra_length=p["motor_to_base_m"], friction=beta,
        )
        what = f"motor displacement ramped 0 -> -{p['retraction_m'] * 1e3:.2f} mm -> 0, beta {beta:g} s/m"
        ref = {"retraction_m": p["retraction_m"], "friction_s_per_m": beta}
    elif control == "tension":
        tau0, tau1 = p["tension_low_n"], p["tension_high_n"]
        tendon = Tendon(StraightRouting((off, 0.0)), tension=1.0,
                        profile=Samples(times, [tau0, tau0, tau1, tau1, tau0]))
        what = f"tension ramped {tau0:.2f} -> {tau1:.2f} -> {tau0:.2f} N"
        ref = {"tension_low_N": tau0, "tension_high_N": tau1}
    else:
        raise ValueError(f"control must be 'displacement' or 'tension', got {control!r}")
    model = CosseratModel(
        rod, n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=(-9.81, 0.0, 0.0),
        tendons=(tendon,), section_radius=1.5 * off,
    )
    return Scene(
        "tendon-robot-step",
        f"Till et al. single-tendon robot, {what}, {'Kirchhoff' if kirchhoff else 'Cosserat'} + {integrator}, "
        f"{n_points} points",
        model,
        dt=0.05 if dt is None else dt,
        duration=25.0 if duration is None else duration,
        scheme=DifferenceFormula.bdf2(),
        reference={**ref, "tip_axis": 0},
    )


def tendon_object_transfer(
    *, n_points: int | None = None, dt: float | None = None, duration: float | None = None,
    integrator: str = "euler", kirchhoff: bool = False,
):
    """Four-tendon robot carrying a 1 g object from one side to the other (module docstring)."""
    p = TRANSFER
    L, r, off, E = p["length_m"], p["radius_m"], p["offset_m"], p["youngs_modulus_pa"]
    rod = CosseratRod.circular(
        L, r, youngs_modulus=E, shear_modulus=E / 2.6, density=p["density_kg_m3"],
        drag=p["drag_kg_m2"], damping_bt=p["damping_bt_nm2s"],
    )
    times, tens = np.array(p["times_s"]), np.array(p["tensions_n"])
    dirs = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))
    tendons = tuple(
        Tendon(StraightRouting((off * dx, off * dy)), tension=1.0, profile=Samples(times, tens[:, k]))
        for k, (dx, dy) in enumerate(dirs)
    )
    step = p["dt_s"] if dt is None else dt
    a, b = p["attach_s"], p["release_s"]
    held = Samples([0.0, a, a + step, b, b + step], [0.0, 0.0, 1.0, 1.0, 0.0])
    model = CosseratModel(
        rod, n_points=p["n_points"] if n_points is None else n_points, integrator=integrator,
        kirchhoff=kirchhoff, gravity=(0.0, 0.0, -9.81), base_quaternion=(0.0, 1.0, 0.0, 0.0),
        tendons=tendons, section_radius=1.05 * off, tip_mass=p["object_kg"], tip_mass_profile=held,
    )
    return Scene(
        "tendon-object-transfer",
        f"Till et al. 4-tendon robot: 1 g object picked at {a:g} s, carried, released at {b:g} s "
        f"({model.n_points} points, {integrator})",
        model,
        dt=step,
        duration=p["duration_s"] if duration is None else duration,
        scheme=DifferenceFormula.bdf_alpha(p["alpha"]),
        reference={"attach_s": a, "release_s": b, "object_kg": p["object_kg"]},
    )

