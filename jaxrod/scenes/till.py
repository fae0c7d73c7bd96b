"""Scenes of Till, Aloi & Rucker (2019) for the Cosserat/Kirchhoff shooting model.

Conventions (the paper leaves them open, spec sec. 8.2): the rod is clamped at the origin and
points along ``+z`` (identity base quaternion); gravity and every transverse load act along ``x``
(gravity ``-x``), so the motion is in the x-z plane.

* ``till-benchmark``: sec. 3 numerical benchmark: spring-steel rod (E 207 GPa, G 79 GPa, r 1 mm,
  L 0.4 m, rho 8000), at rest under a 0.5 N tip load (along -x) that is released at t = 0;
  150 points, dt 5 ms, 1 s, BDF2, no damping. First bending mode 8.9 Hz.
* ``till-weight-release``: sec. 4 weight release with the Table 5 values (EI 0.0380 N m^2,
  rho 7602 kg/m^3, C 2.09 g/m^2): 1.42 mm rod, L 0.408 m, a 20 g weight (0.196 N) released at t = 0.
* ``till-impulse``: sec. 4 impulse near the base: L 0.517 m, same rod, a hat-shaped point force
  (peak 5 N, duration 16 ms) along +x at s = 45.8 mm (location from the authors' later code);
  multiple shooting with 3 segments.
"""

from __future__ import annotations

import numpy as np

from ..models.cosserat import CosseratModel, CosseratRod, Hat, PointLoad, ReleasedAt
from ..integrate.schemes import DifferenceFormula
from .scene import Scene

#: Table 5 (Cosserat, RK4, N = 100) calibrated values.
TABLE5 = {"EI_Nm2": 0.0380, "density_kg_m3": 7602.0, "drag_kg_m2": 2.12e-3}
ROD_DIAMETER_M = 1.42e-3
GRAVITY = (-9.81, 0.0, 0.0)



def till_benchmark(
    *, n_points: int = 150, dt: float | None = None, duration: float | None = None,
    integrator: str = "rk4", kirchhoff: bool = False, tip_load: float = 0.5,
):
    """Till et al. sec. 3 benchmark (see module docstring)."""
    rod = CosseratRod.circular(0.4, 1e-3, youngs_modulus=207e9, shear_modulus=79e9, density=8000.0)
    model = CosseratModel(
        rod, n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=GRAVITY,
        tip_force=(-float(tip_load), 0.0, 0.0), tip_profile=ReleasedAt(0.0),
    )
    EI, rhoA = float(rod.bending_stiffness), float(rod.mass_per_length)
    f1 = 1.8751040687119611**2 / (2 * np.pi * 0.4**2) * np.sqrt(EI / rhoA)
    return Scene(
        "till-benchmark",
        f"Till et al. benchmark: steel cantilever, {tip_load} N tip load released, "
        f"{'Kirchhoff' if kirchhoff else 'Cosserat'} + {integrator}, {n_points} points",
        model,
        dt=0.005 if dt is None else dt,
        duration=1.0 if duration is None else duration,
        scheme=DifferenceFormula.bdf2(),
        reference={
            "first_mode_hz": f1,
            "tau_s_paper": {"backward_euler": 0.13, "bdf2": 3.86, "bdf_alpha_-0.2": 7.57, "bdf_alpha_-0.48": 161.8},
            "runtime_s_paper_bdf2": {("cosserat", "euler"): 0.46, ("cosserat", "rk4"): 1.83,
                                     ("kirchhoff", "euler"): 0.26, ("kirchhoff", "rk4"): 0.50},
            "tip_axis": 0,
        },
    )


def _table5_rod(length):
    r = 0.5 * ROD_DIAMETER_M
    I = np.pi * r**4 / 4
    return CosseratRod.circular(
        length, r, youngs_modulus=TABLE5["EI_Nm2"] / I, density=TABLE5["density_kg_m3"],
        drag=TABLE5["drag_kg_m2"],
    )


def till_weight_release(
    *, n_points: int = 100, dt: float | None = None, duration: float | None = None,
    integrator: str = "rk4", kirchhoff: bool = False, mass: float = 0.020, segments: int = 3,
):
    """Till et al. sec. 4 weight release (Table 5 parameters; Poisson 0.3 for G, not stated).

    Multiple shooting with 3 segments by default: measured 2x faster than simple shooting here
    (4.8 vs 7.8 Newton iterations per step; simple shooting needs the LM fallback on some steps)."""
    model = CosseratModel(
        _table5_rod(0.408), n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=GRAVITY,
        segments=segments,
        tip_force=(-float(mass) * 9.81, 0.0, 0.0), tip_profile=ReleasedAt(0.0),
    )
    return Scene(
        "till-weight-release",
        f"Till et al. weight release: 1.42 mm steel rod, L = 0.408 m, {1e3 * mass:g} g released, {n_points} points",
        model,
        dt=0.002 if dt is None else dt,
        duration=2.0 if duration is None else duration,
        scheme=DifferenceFormula.bdf_alpha(-0.4),
        reference={**TABLE5, "tip_axis": 0},
    )


def till_impulse(
    *, n_points: int = 100, dt: float | None = None, duration: float | None = None,
    integrator: str = "rk4", kirchhoff: bool = False, peak: float = 5.0, width: float = 0.016,
    location: float = 0.0458, segments: int = 3,
):
    """Till et al. sec. 4 impulse near the base: hat force of ``peak`` [N] over ``width`` [s].

    Simple shooting fails here at every dt tried (1-4 ms: the 5 N kick is 35 EI/L^2 and the
    shooting map amplifies errors by ~e^(kL), kL ~ 8-12); the paper used a modified shooting
    method. Default: multiple shooting with ``segments = 3``."""
    load = PointLoad(location, force=(float(peak), 0.0, 0.0), profile=Hat(width, 0.0))
    model = CosseratModel(
        _table5_rod(0.517), n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=GRAVITY,
        point_loads=(load,), segments=segments,
    )
    return Scene(
        "till-impulse",
        f"Till et al. impulse near the base: L = 0.517 m, {peak:g} N hat force over {1e3 * width:g} ms "
        f"at s = {1e3 * location:g} mm, {n_points} points",
        model,
        dt=0.002 if dt is None else dt,
        duration=1.0 if duration is None else duration,
        scheme=DifferenceFormula.bdf_alpha(-0.4),
        reference={**TABLE5, "tip_axis": 0},
    )
