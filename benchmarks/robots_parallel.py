"""Real-time ratio of the continuum Stewart-Gough platform (Till, Aloi & Rucker 2019 sec. 5.1;
spec 7.1), and the stability transition on the authors' path.

Usage::

    python benchmarks/robots_parallel.py            # 200 Euler points (paper), 20 and 10 RK4, 100 Euler
    python benchmarks/robots_parallel.py --quick    # 10 RK4 points only

Rows (:func:`rows`, collected by ``benchmarks/robots.py``): the ``stewart-gough`` scene (six legs,
42 unknowns, BDF-alpha -0.2, dt = 1/120 s; plate driven from (0, 0, 0.5) m to (-0.2, 0, 0.5) m
over 300 steps by inverse statics, then 300 free steps: 5 s simulated). Paper: real-time ratio
7-8 with 200 Euler points per leg on three threads (C++).

Real-time ratio = simulated seconds / wall seconds of the time loop. The compile is excluded: the
same :func:`jaxrod.simulate` call is run twice and the second is timed (the first, cold, is
reported as "first call, compile included"); the inverse statics of the path (``ik_wall_s``,
compile included) and the initial static solve are outside both. CPU seconds are the process's
(all threads); load average is the 1-minute value at the end. Also reported: the largest plate
tilt [deg] and the plate's x [m] when the tilt first exceeds 2 deg (the stability transition;
``None``: it stays on the line).
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

import argparse
import time

import numpy as np

import jaxrod
from robots import timed_twice  # benchmarks/ is on sys.path (script directory)
from jaxrod.models.cosserat.parallel import solve_static_parallel
from jaxrod.scenes import get_scene
from jaxrod.integrate import ConvergenceError

CASES = (
    {"n_points": 200, "integrator": "euler"},
    {"n_points": 20, "integrator": "rk4"},
    {"n_points": 10, "integrator": "rk4"},
    {"n_points": 100, "integrator": "euler"},
)


def _row(kw):
    w0 = time.perf_counter()
    try:
        sc = get_scene("stewart-gough", **kw)
    except ConvergenceError as e:  # coarse Euler legs: the inverse-statics branch folds before the end
        return {"robot": "stewart-gough", **kw, "inverse_statics": f"failed: {e}"}
    ik_wall = time.perf_counter() - w0
    state0, _ = solve_static_parallel(sc.model)

    def run():
        tr = jaxrod.simulate(sc.model, dt=sc.dt, duration=sc.duration, scheme=sc.scheme, state0=state0, throw=False)
        tr.positions.block_until_ready()
        return tr

    tr, first, wall, cpu = timed_twice(run)
    its = np.asarray(tr.stats.iterations)
    tilt = np.degrees(np.asarray(tr.tilt))
    p = np.asarray(tr.plate_position)
    over = np.flatnonzero(tilt > 2.0)
    return {
        "robot": "stewart-gough", "points": sc.model.n_points, "integrator": sc.model.leg.integrator,
        "sim_s": float(sc.duration), "steps": int(round(sc.duration / sc.dt)),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "real_time_ratio": round(sc.duration / wall, 3),
        "paper_ratio": "7-8 (200 Euler points, 3 threads, C++)", "compile": "excluded",
        "first_call_wall_s": round(first, 1), "ik_wall_s": round(ik_wall, 1),
        "newton_iterations_per_step": round(float(its.mean()), 2),
        "jacobians_per_step": round(float(np.asarray(tr.stats.jacobians).mean()), 3),
        "converged": bool(np.all(np.asarray(tr.stats.converged))),
        "max_tilt_deg": round(float(np.nanmax(tilt)), 2),
        "x_at_tilt_2deg_m": round(float(p[over[0], 0]), 4) if over.size else None,
        "load_average": round(os.getloadavg()[0], 2),
    }


def rows(quick: bool = False, report=None):
    """One dict per resolution (see the module docstring); ``report(row)`` is called as each is ready."""
    out = []
    for kw in CASES[2:3] if quick else CASES:
        out.append(_row(kw))
        if report is not None:
            report(out[-1])
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 RK4 points only")
    rows(ap.parse_args().quick, report=lambda r: print(r, flush=True))
