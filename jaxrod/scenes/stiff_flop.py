"""The STIFF-FLOP module (TMTDyn's first validation, spec seed004 sections 9.1-9.3, Table 2): its
passive structure as a PCS cantilever bending under its own weight (``stiff-flop-passive``), and
the actuated module driven by its measured recordings (``stiff-flop``), whose model lives here.

Geometry and material (Table 2, :data:`jaxrod.datasets.stiff_flop.PARAMETERS`): a silicone
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

The actuated module (``stiff-flop``, :func:`stiff_flop_actuated`; the PCS model built by
:func:`stiff_flop_model`) driven by its measured pressures (and tip pushes): a PCS model (TMTDyn
validation E1, spec seed004 sections 6.3, 9.2-9.3; data README: shared/data/stiff-flop/; the
recordings are read by :mod:`jaxrod.datasets.stiff_flop`).

Model (what is taken from where):

* the elastomer rod: paper Table 2 section (a_c, J of :func:`stiff_flop_section`),
  length l_m2 = 50 mm, density 1820 kg/m^3; PCS with all six strain modes (shear included, as
  TMTDyn's K_eps = a_c diag(G, G, E)), ``n_segments`` equal segments, Kelvin-Voigt viscosity;
* six pressure-controlled :class:`~jaxrod.models.pcs.Chamber` at r_o = 8.5 mm, cap area a_p = pi r_p^2, at
  the angles of Eq. 44 (psi_0 = acos(1 - r_p2^2 / (2 r_o^2)) = 20.3 deg, r_p2 = 3 mm); pairs p0,
  p1, p2 drive chambers (1, 2), (3, 4), (5, 6), with the measured gauge pressures smoothed as
  TMTDyn smooths them (9-sample centred moving average), linear in time between samples;
* the base frame of the data: z from base to tip, the module hangs (gravity +z, as TMTDyn); the
  rod's local x axis is the world z axis and local (y, z) are world (x, y), so a chamber at the
  angle psi sits at ``r_o (cos psi, sin psi)`` in both;
* the tip sensor and mount (m_3 = 13.47 g, l_m3 = 14.5 mm, r_f = 7.5 mm) as a rigid
  :class:`~jaxrod.models.pcs.TipBody` (a solid cylinder, centre of mass at l_m3 / 2): its inertia
  and weight;
* the tracked tip point at l_m3 beyond the rod tip on its axis; the measured tip load (Load1,
  Load2: force and moment in the base frame, smoothed like the pressures) acts there;
* options (off by default; :mod:`jaxrod.models.pcs.nonlinear`): TMTDyn's hyperelastic/braid
  "mid-step" update (section, modulus, length and chamber offsets scaled by the stretch, here
  implicit within the step), chambers whose cap area grows with pressure, power-law damping
  (TMTDyn's nu = 2); not modelled: the pneumatics' own dynamics.

The simulated tip is compared as a displacement from the model's own rest equilibrium (zero
pressure, no load), added to the data's rest tip (0, 0, 64.5 mm), since the data are zeroed at
t = 0 in the same way (README, preprocessing step 4).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

# paper Table 2 and the recordings
from ..datasets.stiff_flop import PARAMETERS, SAMPLE_DT, TIP_LENGTH, Recording, read_recording, smooth_moving_average, trailing_moving_average
from ..models.pcs import Chamber, NonlinearOptions, PCSModel, PCSRod, PointWrench, TipBody
from ..signals import SampledMotion, Samples
from ..integrate.schemes import NewmarkBeta
from ..validation import check_int
from .scene import Scene

__all__ = [
    "BASE_ROTATION",
    "CHAMBER_OUTER_RADIUS",
    "FITTED",
    "FITTED_COMMAND",
    "INITIAL",
    "chamber_angles_deg",
    "predict_tip",
    "recording_inputs",
    "rest_tip",
    "static_tips",
    "stiff_flop_actuated",
    "stiff_flop_model",
    "stiff_flop_passive",
    "stiff_flop_section",
]

G = 9.81

def stiff_flop_section():
    """``(area [m^2], (J_polar, J_x, J_y) [m^4])`` of the module's section (module docstring)."""
    s = PARAMETERS
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
    s = PARAMETERS
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


# ---- the actuated module ------------------------------------------------------------------------
#: chamber outer radius r_p2 [m] (repository), which sets the pair half-spread psi_0
CHAMBER_OUTER_RADIUS = 3e-3
#: world-from-rod rotation: columns are the rod's local (x, y, z) = world (z, x, y)
BASE_ROTATION = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])

#: the starting values of the fit: Table 2 (E, G = E/3), no pressure gain, ~10% critical damping
INITIAL = {"youngs_modulus": 205e3, "shear_ratio": 1.0 / 3.0, "viscosity": 200.0, "pressure_gain": 1.0}

#: Fitted values: NoLoad 0-29 s, 3 PCS segments, dt 0.05 s, E and the viscosity free (G/E = 1/3
#: and the gain fixed), L-BFGS from :data:`INITIAL`, converged (|grad| 7e-7) after 18 iterations,
#: training loss 1.874 -> 0.578 mm^2 (mean squared tip-coordinate error); produced by FITTED_COMMAND.
FITTED = {"youngs_modulus": 130508.0, "shear_ratio": 1.0 / 3.0, "viscosity": 1192.58, "pressure_gain": 1.0}
FITTED_COMMAND = "jaxrod calibrate stiff-flop --out results/stiff_flop --max-iters 20"


def chamber_angles_deg(psi0_deg: float | None = None) -> np.ndarray:
    """``(6,)`` chamber angles [deg] of Eq. 44: ``psi_{2i-1,2i} = 90 - 120 (i - 1) -+ psi_0``,
    ``psi_0 = acos(1 - r_p2^2 / (2 r_o^2))`` (20.3 deg) unless given."""
    if psi0_deg is None:
        ro = PARAMETERS["chamber_offset"]
        psi0_deg = math.degrees(math.acos(1 - CHAMBER_OUTER_RADIUS**2 / (2 * ro**2)))
    centre = 90.0 - 120.0 * np.repeat(np.arange(3), 2)
    return centre + np.tile([-psi0_deg, psi0_deg], 3)


def recording_inputs(rec: Recording, *, smooth: bool | str = True):
    """``(times (T,), pressures (T, 3) [Pa], load (T, 6) [N m, N] or None)`` of a recording, the
    pressures and tip loads smoothed as TMTDyn does (``smooth=True`` or ``"centred"``:
    ``smooth_moving_average``, span 10, i.e. 9 centred samples: a 0.2 s preview of every step),
    causally (``"trailing"``: the mean of each sample and the 8 before it) or not at all
    (``False``); ``load`` is ``[moment; force]`` in the base frame at the tip point."""
    modes = {True: smooth_moving_average, "centred": smooth_moving_average, False: np.asarray, "none": np.asarray,
             "trailing": lambda x: trailing_moving_average(x, 9)}
    if not isinstance(smooth, (bool, str)) or smooth not in modes:
        raise ValueError(f"recording_inputs: smooth must be True/'centred', 'trailing' or False/'none', got {smooth!r}")
    f = modes[smooth]
    load = None
    if rec.tip_force is not None:
        load = np.concatenate([f(rec.tip_moment), f(rec.tip_force)], axis=1)
    return rec.times, f(rec.pressures), load


def stiff_flop_model(
    times,
    pressures,
    load=None,
    *,
    youngs_modulus=INITIAL["youngs_modulus"],
    shear_ratio=INITIAL["shear_ratio"],
    viscosity=INITIAL["viscosity"],
    pressure_gain=INITIAL["pressure_gain"],
    n_segments: int = 3,
    tip_body: bool = True,
    chamber_growth=None,
    damping_power=None,
    stretch_update: bool | str = False,
) -> PCSModel:
    """The actuated module (module docstring): a :class:`~jaxrod.models.pcs.PCSModel` with six
    chambers, the tip sensor as a tip body, the tracked tip point ``sensor_length`` beyond the rod
    tip on its axis (``tip_offset``: ``Trajectory.tip``, ``model.tip_point``) and there the
    measured load as a world-frame :class:`~jaxrod.models.pcs.PointWrench` (dead: fixed in the
    world; its lever turns with the tip).

    Args:
        times: ``(T,)`` sample times [s]; pressures: ``(T, 3)`` gauge pressures of pairs p0, p1, p2
            [Pa]; load: ``(T, 6)`` ``[moment; force]`` on the tip point [N m, N] or ``None``.
        youngs_modulus: E [Pa]; shear_ratio: G / E; viscosity: Kelvin-Voigt mu [Pa s];
        pressure_gain: factor on the cap area (equivalently on the pressures) [-]: a scalar, or
            ``(3,)`` one factor per chamber pair p0, p1, p2 (chambers made or reinforced unequally;
            ``jaxrod calibrate stiff-flop --fit-chamber-gains``). All may be traced (fitting).
        n_segments: PCS segments (>= 1); tip_body: include the tip sensor's inertia and weight.
        chamber_growth: beta [1/Pa]: cap area ``a_p (1 + beta P)`` (chambers that expand with
            pressure), ``None``: constant area; damping_power: nu >= 1 of the power-law damping
            (``None``: linear Kelvin-Voigt); stretch_update: ``True``/``"tmtdyn"``: TMTDyn's
            hyperelastic/braid stretch update, ``"neo-hookean"``: the neo-Hookean one (static).
            See :mod:`jaxrod.models.pcs.nonlinear`; all off: the linear model.
    """
    n = check_int("n_segments", n_segments, min=1)
    s = PARAMETERS
    times = jnp.asarray(times, dtype=float)
    pressures = jnp.asarray(pressures, dtype=float)
    if pressures.ndim != 2 or pressures.shape != (times.shape[0], 3):
        raise ValueError(f"pressures must be (T, 3) with T = {times.shape[0]} samples, got {pressures.shape}")
    area, moments = stiff_flop_section()
    E = jnp.asarray(youngs_modulus, dtype=float)
    rod = PCSRod(
        length=s["length"],
        n_segments=n,
        area=jnp.asarray(area),
        second_moments=jnp.asarray(moments),
        youngs_modulus=E,
        shear_modulus=E * jnp.asarray(shear_ratio, dtype=float),
        density=jnp.asarray(s["density"]),
        viscosity=jnp.asarray(viscosity, dtype=float),
        rest_strain=jnp.tile(jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]), (n, 1)),
    )
    ro, ap = s["chamber_offset"], s["chamber_area"]
    gain = jnp.asarray(pressure_gain, dtype=float)
    if gain.shape not in ((), (3,)):
        raise ValueError(f"pressure_gain must be a scalar or (3,) (one per chamber pair), got shape {gain.shape}")
    cap = ap * jnp.broadcast_to(gain, (3,))
    chambers = tuple(
        Chamber(
            (ro * math.cos(math.radians(psi)), ro * math.sin(math.radians(psi))),
            cap[k // 2],
            pressure=1.0,  # [Pa] times the measured samples in Pa
            profile=Samples(times, pressures[:, k // 2]),
        )
        for k, psi in enumerate(chamber_angles_deg())
    )
    body = None
    if tip_body:
        m3, l3, rf = s["sensor_mass"], s["sensor_length"], s["sensor_radius"]
        # solid cylinder about its centre; local x is its axis
        I_axial, I_trans = m3 * rf**2 / 2, m3 * (3 * rf**2 + l3**2) / 12
        body = TipBody(m3, (l3 / 2, 0.0, 0.0), np.diag([I_axial, I_trans, I_trans]))
    tip_point = jnp.asarray([float(s["sensor_length"]), 0.0, 0.0])
    wrenches = () if load is None else (PointWrench(SampledMotion(times, load), offset=tip_point),)
    options = NonlinearOptions(stretch_update, chamber_growth, damping_power)
    return PCSModel(rod, gravity=s["gravity"], base_rotation=BASE_ROTATION, tip_body=body, chambers=chambers,
                    section_radius=s["outer_radius"], point_wrenches=wrenches, tip_offset=tip_point,
                    nonlinear=options if options.active else None)


def rest_tip() -> np.ndarray:
    """The data's rest tip point (0, 0, 64.5 mm) [m]."""
    return np.array([0.0, 0.0, TIP_LENGTH])


def predict_tip(values, times, pressures, load, *, t0: float, n_steps: int, n_segments: int = 3, substeps: int = 1,
                stretch_update: bool | str = False):
    """Simulated tip point ``(n_steps + 1, 3)`` [m] at ``t0, t0 + 0.05, ...`` [s] and the
    ``(n_steps + 1,)`` validity flags, for parameter ``values`` (a dict with the keys of
    :data:`INITIAL`; arrays may be traced).

    The run starts from the static equilibrium at ``t0`` (the inputs held at their ``t0`` values)
    and steps with Newmark-beta (average acceleration) at ``0.05 / substeps`` s. The tip is
    reported as a displacement from the model's rest equilibrium (inputs at t = 0: zero by the
    data's construction) added to the data's rest tip (0, 0, 64.5 mm). Jit-able with ``t0``,
    ``n_steps``, ``n_segments`` and ``substeps`` static. ``values`` may also hold
    ``chamber_growth`` and ``damping_power`` (:func:`stiff_flop_model`); ``stretch_update`` (static)
    turns on the stretch update.
    """
    from ..integrate import simulate, solve_static
    from ..integrate.schemes import NewmarkBeta

    model = stiff_flop_model(times, pressures, load, n_segments=n_segments, stretch_update=stretch_update, **values)
    rest, start = _rest_and_start(model, t0)
    k = int(substeps)
    traj = simulate(
        # start="rest": ``start`` is the static equilibrium at t0 (v = 0), where the consistent
        # acceleration is 0 to the static solve's tolerance; solving for it would compile a third
        # Newton program into every run
        model, dt=SAMPLE_DT / k, n_steps=int(n_steps) * k, state0=start, t0=t0, scheme=NewmarkBeta(start="rest"),
        save_every=k, throw=False, fallback=False,  # one scheme compiled: the fit differentiates it
    )
    return traj.tip - model.tip_point(rest.q) + rest_tip(), traj.valid


def _rest_and_start(model, t0):
    """The static equilibria at t = 0 and at ``t0`` (traced or not) [s]: one traced solve run twice
    by a ``lax.scan`` (two calls of ``solve_static`` put two copies of its program, a quarter of a
    :func:`predict_tip` program, into every compiled run); the second starts from the first."""
    from ..integrate import solve_static

    def solve(state, t):
        st, _ = solve_static(model, t=t, state0=state, throw=False)
        return st, st

    ts = jnp.stack([jnp.zeros(()), jnp.asarray(t0, dtype=float)])
    _, states = jax.lax.scan(solve, model.initial_state(), ts)
    rest = jax.tree_util.tree_map(lambda x: x[0], states)
    start = jax.tree_util.tree_map(lambda x: x[1], states)
    return rest, start


def static_tips(values, times, pressures, load, at_times, *, n_segments: int = 3, stretch_update: bool | str = False):
    """``(K, 3)`` tip points [m] of the static equilibria with the inputs at ``at_times (K,)`` [s]
    (TMTDyn's "Equil." study), displacement-based as :func:`predict_tip`."""
    from ..integrate import solve_static

    model = stiff_flop_model(times, pressures, load, n_segments=n_segments, stretch_update=stretch_update, **values)
    rest, _ = solve_static(model, t=0.0, throw=False)
    base = model.tip_point(rest.q)

    def one(t):
        st, _ = solve_static(model, t=t, state0=rest, throw=False)
        return model.tip_point(st.q)

    return jax.lax.map(one, jnp.asarray(at_times, dtype=float)) - base + rest_tip()


def stiff_flop_actuated(
    *,
    recording: str = "NoLoad",
    n_segments: int = 3,
    fitted: bool = True,
    dt: float | None = None,
    duration: float | None = None,
) -> Scene:
    """The actuated module driven by a measured recording (``stiff-flop``): the PCS model of
    :func:`stiff_flop_model` (six chambers fed the smoothed measured pressures, the tip
    sensor as a rigid body, the measured tip load in Load1/Load2), hanging (gravity +z from base
    to tip), starting from its rest equilibrium, Newmark-beta at the data rate (0.05 s).

    Args:
        recording: ``"NoLoad"``, ``"Load1"``, ``"Load2"`` or a CSV path (the data are read from
            ``shared/data/stiff-flop/``, see :mod:`jaxrod.datasets.stiff_flop`).
        n_segments: PCS segments (>= 1).
        fitted: use the fitted E and viscosity, G/E = 1/3 (``FITTED``) instead of Table 2's values.
        dt, duration: time step and simulated time [s] (default 0.05 s and the whole recording).
    """
    from ..integrate import solve_static

    rec = read_recording(recording)
    times, p, load = recording_inputs(rec)
    values = FITTED if fitted else INITIAL
    model = stiff_flop_model(times, p, load, n_segments=n_segments, **values)
    rest, _ = solve_static(model, t=0.0)
    return Scene(
        "stiff-flop",
        f"STIFF-FLOP module ({n_segments} PCS segments, {'fitted' if fitted else 'Table 2'} parameters) "
        f"driven by the measured {rec.name} pressures" + ("" if load is None else " and tip load"),
        model,
        dt=SAMPLE_DT if dt is None else dt,
        duration=float(rec.times[-1]) if duration is None else duration,
        # it starts at rest in the static equilibrium of the inputs at t = 0, where the consistent
        # acceleration is 0 (to the static tolerance): no acceleration solve to compile
        scheme=NewmarkBeta(start="rest"),
        state0=rest,
        reference={"tip_axis": 2, "recording": rec.name, "measured_times_s": rec.times, "measured_tip_m": rec.tip},
    )
