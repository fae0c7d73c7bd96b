"""The passive structure of one STIFF-FLOP module (TMTDyn's first validation, spec seed004 sections
9.1-9.3, Table 2) as a PCS cantilever bending under its own weight (``stiff-flop-passive``).

Geometry and material (Table 2, :data:`jaxrod.cases.stiff_flop.PARAMETERS`): a silicone
(Ecoflex 50) cylinder of outer radius r_a2 = 12.5 mm with a central lumen r_a1 = 4.5 mm and six
chambers of radius r_p = 2.5 mm at r_o = 8.5 mm from the axis, length l_m2 = 50 mm, density
1820 kg/m^3, E = 205 kPa (calibrated), G = E / 3 (the spec's G ~ E/3). The section (spec 9.3,
the garbled J reconstructed as the parallel-axis subtraction of the six holes, sum x_i^2 = sum y_i^2 = 3 r_o^2):

* a_c = pi (r_a2^2 - r_a1^2 - 6 r_p^2) = 3.094e-4 m^2 (sigma a_c l_m2 = 28.2 g, the measured 28 g);
* J_x = J_y = pi/4 (r_a2^4 - r_a1^4 - 6 r_p^4) - a_p 3 r_o^2 = 1.441e-8 m^4 (a_p = pi r_p^2);
* J_z (polar) = J_x + J_y = 2.883e-8 m^4.

The tip force sensor (m3 = 13.47 g, centre of mass l_m3 / 2 = 7.25 mm beyond the tip) is a dead
tip wrench (its weight and the moment of its offset); its inertia is left out (a rigid tip body
needs the rod-body coupling). The module is clamped horizontally (axis +x, gravity -z), released
straight at rest and settles under Kelvin-Voigt viscosity (``viscosity`` [Pa s]; TMTDyn's damping
is model dependent and given per element, not as a material viscosity). The pneumatic chambers
are unpressurised (the actuated module comes with the actuation issue).

PCS (piecewise constant strain, all six strain modes: shear included, stiffness a_c diag(G, G, E)
as TMTDyn's K_eps) with ``n_segments`` segments (TMTDyn's n_d = 1..5). Reference values: the
linear static tip deflection of the Timoshenko cantilever with shear coefficient 1,
w L^4 / (8 EI) + P L^3 / (3 EI) + M L^2 / (2 EI) + (w L^2 / 2 + P L) / (G a_c), in
``reference["tip_deflection_linear_m"]`` (4.37 mm, 8.7% of the length; shear 0.64 mm of it: the
module is short and thick).
"""

from __future__ import annotations

import math

import numpy as np

from ..cases.stiff_flop import PARAMETERS as STIFF_FLOP  # Table 2, shared with the recordings
from ..models.pcs import PCSModel, PCSRod
from ..timestepping import NewmarkBeta
from ..validation import check_int
from .scene import Scene

__all__ = ["stiff_flop_actuated", "stiff_flop_passive", "stiff_flop_section"]

G = 9.81

def stiff_flop_section():
    """``(area [m^2], (J_polar, J_x, J_y) [m^4])`` of the module's section (module docstring)."""
    s = STIFF_FLOP
    ra1, ra2, rp, ro = s["lumen_radius"], s["outer_radius"], s["chamber_radius"], s["chamber_offset"]
    # six holes: their own moments (in the pi/4 term) plus the parallel-axis term a_p sum(y_i^2)
    j = math.pi / 4 * (ra2**4 - ra1**4 - 6 * rp**4) - s["chamber_area"] * 3 * ro**2
    return float(s["section_area"]), (2 * j, j, j)


def stiff_flop_passive(
    *,
    n_segments: int = 5,
    tip_sensor: bool = True,
    viscosity: float = 200.0,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """One STIFF-FLOP module clamped horizontally, bending under its weight (module docstring).

    Args:
        n_segments: PCS segments (>= 1).
        tip_sensor: add the tip force sensor's weight and offset moment as a dead tip wrench.
        viscosity: Kelvin-Voigt shear viscosity [Pa s] >= 0 (200: the first mode, ~13 Hz, is
            damped to ~10% of critical).
        dt, duration: time step and simulated time [s] (default 2 ms, 1 s).
    """
    n = check_int("n_segments", n_segments, min=1)
    if not (np.isfinite(viscosity) and viscosity >= 0):
        raise ValueError(f"stiff_flop_passive: viscosity must be a finite number >= 0 Pa s, got {viscosity!r}")
    s = STIFF_FLOP
    area, moments = stiff_flop_section()
    E, rho, L = s["youngs_modulus"], s["density"], s["length"]
    Gm = E / 3.0
    rod = PCSRod(
        length=L,
        n_segments=n,
        area=np.asarray(area),
        second_moments=np.asarray(moments),
        youngs_modulus=np.asarray(E),
        shear_modulus=np.asarray(Gm),
        density=np.asarray(rho),
        viscosity=np.asarray(float(viscosity)),
        rest_strain=np.tile([0.0, 0.0, 0.0, 1.0, 0.0, 0.0], (n, 1)),
    )
    P = s["sensor_mass"] * G if tip_sensor else 0.0
    M = P * s["sensor_length"] / 2  # the sensor's weight acts 7.25 mm beyond the tip
    # world-frame [moment; force]: -z weight at +x offset r has moment r x F = +r P about y
    model = PCSModel(rod, gravity=(0.0, 0.0, -G), tip_wrench=(0.0, M, 0.0, 0.0, 0.0, -P))
    EI, w = E * moments[1], rho * area * G
    linear = w * L**4 / (8 * EI) + P * L**3 / (3 * EI) + M * L**2 / (2 * EI) + (w * L**2 / 2 + P * L) / (Gm * area)
    return Scene(
        "stiff-flop-passive",
        f"STIFF-FLOP module (passive, {n} PCS segments) bending under its weight"
        + (" with the tip sensor" if tip_sensor else ""),
        model,
        dt=2e-3 if dt is None else dt,
        duration=1.0 if duration is None else duration,
        scheme=NewmarkBeta(),
        reference={
            "tip_axis": 2,
            "area_m2": area,
            "second_moments_m4": moments,
            "EI_Nm2": EI,
            "weight_per_length_N_m": w,
            "tip_force_N": P,
            "tip_moment_Nm": M,
            "tip_deflection_linear_m": linear,
        },
    )


def stiff_flop_actuated(
    *,
    recording: str = "NoLoad",
    n_segments: int = 3,
    fitted: bool = True,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """The actuated module driven by a measured recording (``stiff-flop``): the PCS model of
    :mod:`jaxrod.cases.stiff_flop_model` (six chambers fed the smoothed measured pressures, the tip
    sensor as a rigid body, the measured tip load in Load1/Load2), hanging (gravity +z from base
    to tip), starting from its rest equilibrium, Newmark-beta at the data rate (0.05 s).

    Args:
        recording: ``"NoLoad"``, ``"Load1"``, ``"Load2"`` or a CSV path (the data are read from
            ``shared/data/stiff-flop/``, see :mod:`jaxrod.cases.stiff_flop`).
        n_segments: PCS segments (>= 1).
        fitted: use the fitted E, G/E and viscosity (``FITTED``) instead of Table 2's values.
        dt, duration: time step and simulated time [s] (default 0.05 s and the whole recording).
    """
    from ..cases import stiff_flop as sf
    from ..cases import stiff_flop_model as sm
    from ..integrate import solve_static

    rec = sf.read_recording(recording)
    times, p, load = sm.recording_inputs(rec)
    values = sm.FITTED if fitted else sm.INITIAL
    model = sm.stiff_flop_model(times, p, load, n_segments=n_segments, **values)
    rest, _ = solve_static(model, t=0.0)
    return Scene(
        "stiff-flop",
        f"STIFF-FLOP module ({n_segments} PCS segments, {'fitted' if fitted else 'Table 2'} parameters) "
        f"driven by the measured {rec.name} pressures" + ("" if load is None else " and tip load"),
        model,
        dt=sf.SAMPLE_DT if dt is None else dt,
        duration=float(rec.times[-1]) if duration is None else duration,
        scheme=NewmarkBeta(),
        state0=rest,
        reference={"tip_axis": 2, "recording": rec.name, "measured_times_s": rec.times, "measured_tip_m": rec.tip},
    )
