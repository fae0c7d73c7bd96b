"""The continuum Stewart-Gough platform of Till, Aloi & Rucker (2019) sec. 5.1 (spec 7.1).

``stewart-gough``: six steel legs (E 207 GPa, G = E/2.6, r 1 mm, rho 8000 kg/m^3, 200 Euler points
each), hole pattern radius 87 mm with major angle 100 deg (swapped on the plate), acrylic plate
92.1 g with ``J = diag(1.91, 1.91, 3.81) 10^-4 kg m^2``, gravity ``-9.81 e_z``, no damping,
BDF-alpha(-0.2), dt = 1/120 s. The authors' public trajectory: the leg lengths that hold the level
plate on the straight line from (0, 0, 0.5) m to (-0.2, 0, 0.5) m are found by inverse statics
(300 frames, the first one is the home pose), played over 300 steps, then held for 300 free steps.

Result at the default resolution (see docs/papers/till.md): the straight-line branch loses stability between
x = -0.19 and -0.20 m (the forward static Jacobian's determinant changes sign,
``tests/test_parallel_robot.py``); the plate follows the line to the end of the actuation, then
leaves it (tilt > 2 deg at x = -0.2035 m), tilts by up to ~17 deg, drops by several mm and sways,
while a quasi-static model stays on the line. With RK4 (a converged arc-length discretisation) the
change of stability moves to x ~ -0.215 m, just beyond the path's end, and the plate stays on the
line: the transition the paper shows depends on the 200-point Euler discretisation's ~0.3 % error
in the leg lengths.
"""

from __future__ import annotations

import numpy as np

from ..models.cosserat.parallel import PAPER, LegLengths, StewartGough, solve_inverse_static, static_state_from
from ..integrate.schemes import DifferenceFormula
from .scene import Scene


def stewart_gough(
    *, n_points: int = PAPER["n_points"], integrator: str = "euler", kirchhoff: bool = False, dt: float | None = None,
    duration: float | None = None, actuated_frames: int = PAPER["actuated_frames"],
    end=PAPER["end_m"],
):
    """Till et al. sec. 5.1 robot on the authors' path (see the module docstring).

    ``actuated_frames``: steps over which the plate is driven from the start to ``end`` [m]
    (inverse statics at each); ``duration`` [s] default: the paper's 600 frames (the steps after
    the actuated ones are free swaying)."""
    dt = PAPER["dt_s"] if dt is None else float(dt)
    n_act = int(actuated_frames)
    if n_act < 1:
        raise ValueError(f"actuated_frames must be >= 1, got {actuated_frames}")
    frames = PAPER["actuated_frames"] + PAPER["free_frames"]
    duration = frames * dt if duration is None else float(duration)
    grid = {"n_points": n_points, "integrator": integrator, "kirchhoff": kirchhoff}
    home = StewartGough.paper(np.full(6, PAPER["start_m"][2]), **grid)
    path = np.linspace(PAPER["start_m"], np.asarray(end, dtype=float), n_act + 1)
    lengths, loads, _ = solve_inverse_static(home, path)
    robot = StewartGough.paper(LegLengths(np.arange(n_act + 1) * dt, lengths), **grid)
    # the start state: the inverse statics of the first pose is already the static equilibrium
    # at the first lengths (plate level at the start, its base loads); a forward static solve
    # would find it again at the cost of a second Newton program (a first run's process CPU, cache
    # off, load ~8: 23.7 -> 21.1 s; same trajectory to 1e-15 m and the same Newton counts over 60 steps)
    plate0 = np.concatenate([path[0] / robot.reference_length, np.zeros(3)])
    state0 = static_state_from(robot, (plate0, loads[0]), 0.0)
    return Scene(
        "stewart-gough",
        f"Till et al. continuum Stewart-Gough platform: plate driven along x to {float(end[0]):g} m in "
        f"{n_act * dt:g} s, then free; 6 {'Kirchhoff' if kirchhoff else 'Cosserat'} legs x {n_points} "
        f"{integrator} points",
        robot,
        dt=dt,
        duration=duration,
        scheme=DifferenceFormula.bdf_alpha(PAPER["alpha"]),
        reference={"tip_axis": 0, "path_m": path, "lengths_m": np.asarray(lengths), "actuated_s": n_act * dt},
        state0=state0,
    )
