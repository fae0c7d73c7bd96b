"""Real-time ratio of the tendon robots (Till, Aloi & Rucker 2019 sec. 5.2; spec 7.2).

Usage::

    python benchmarks/robots_tendon.py                 # both robots at the paper's resolution
    python benchmarks/robots_tendon.py --quick         # 40 points, 1 s each: a smoke test

Rows (:func:`rows`, collected by ``benchmarks/robots.py``):

* ``tendon-object-transfer``: 4 tendons, 1 g object attached at 2 s and released at 3.5 s, Euler
  200 points, BDF-alpha -0.03, dt = 1/60 s, 5 s simulated. Paper: real-time ratio > 3.5 (C++).
* ``tendon-robot-step``: 1 tendon under displacement control (tension a shooting unknown),
  friction beta = 4 s/m, compliance 1.6e-3 /N, Euler 200 points (the paper's), BDF2,
  dt = 0.05 s, the first 6 s (the ramp up at 3.652 s included). The paper gives no ratio.

Real-time ratio = simulated seconds / wall seconds of the time loop. The compile is excluded:
the same :func:`jaxrod.simulate` call is run twice and the second is timed (the first, cold,
is reported as "first call, compile included"); the initial static solve is done once, outside
both. CPU seconds are the process's (all threads); load average is the 1-minute value at the end.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

import argparse

import numpy as np

import jaxrod
from robots import timed_twice  # benchmarks/ is on sys.path (script directory)
from jaxrod.models.cosserat import solve_static_cosserat
from jaxrod.scenes import get_scene

CASES = (
    ("tendon-object-transfer", {"n_points": 200, "integrator": "euler"}, 5.0, "> 3.5"),
    ("tendon-robot-step", {"n_points": 200, "integrator": "euler"}, 6.0, "not given"),
)


def _row(name, kw, duration, paper):
    sc = get_scene(name, duration=duration, **kw)
    state0, _ = solve_static_cosserat(sc.model, load_steps=4)

    def run():
        tr = jaxrod.simulate(sc.model, dt=sc.dt, duration=sc.duration, scheme=sc.scheme, state0=state0)
        tr.positions.block_until_ready()
        return tr

    tr, first, wall, cpu = timed_twice(run)
    its = np.asarray(tr.stats.iterations)
    return {
        "robot": name, "points": sc.model.n_points, "integrator": sc.model.integrator,
        "sim_s": float(sc.duration), "steps": int(round(sc.duration / sc.dt)),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "real_time_ratio": round(sc.duration / wall, 3),
        "paper_ratio": paper, "compile": "excluded", "first_call_wall_s": round(first, 1),
        "newton_iterations_per_step": round(float(its.mean()), 2),
        "converged": bool(np.all(np.asarray(tr.stats.converged))),
        "load_average": round(os.getloadavg()[0], 2),
    }


def rows(quick: bool = False):
    """One dict per robot (see the module docstring)."""
    out = []
    for name, kw, duration, paper in CASES:
        if quick:
            kw, duration = {**kw, "n_points": 40}, 1.0
        out.append(_row(name, kw, duration, paper))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="40 points, 1 s per robot")
    for r in rows(ap.parse_args().quick):
        print(r, flush=True)
