"""Contact solvers of the Moreau stepper on the snake robot (Transeth et al. 2008): the paper's Jacobi
iteration with its absolute r-factors (r_N, r_T, r_V) = (0.1, 0.01, 0.05) kg, Jacobi and projected
Gauss-Seidel with scaled r-factors (relaxation / D_kk), and over-relaxed Gauss-Seidel (SOR), all
warm-started from each contact's last impulses and stopped by the same criterion (energy norm, rtol
1e-6), and Gauss-Seidel on the contact problem made unique by a small compliance (another model:
MoreauOptions.compliance). Two problems: the resting snake (straight, gait amplitude 0: 22 sticking
contacts on 26 degrees of freedom, statically indeterminate) and lateral undulation on orthotropic
friction (curved start), at dt = 0.5 ms.

For each: contact sweeps per step (mean / max, over the converged steps), process CPU per simulated
second (a second, timed call after a call that compiles), and the largest distance over the run
between link 6's path and the default solver's (Gauss-Seidel, the first row), or the step where the
iteration failed (runs go on with ``throw=False`` and stop there). Where the rigid problem has one
solution the distance is at the level the tolerance allows; the sliding snake's rigid Coulomb
problem can have many (``MoreauOptions.compliance``), and solvers may then pick different ones.

    nice -n 10 python benchmarks/snake_solvers.py [--duration 1] [--no-write]

About 15 min at load 6 (the paper's Jacobi and the failing SOR 1.5 take most).

Writes ``results/snake_solvers.json``.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

import argparse
import time

import numpy as np

from _common import cpu_name, git_sha, load_average, out, table, write_result

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jaxrod  # noqa: E402
from jaxrod.integrate.moreau import MoreauOptions  # noqa: E402
from jaxrod.scenes.snake import SerpenoidGait, snake_model  # noqa: E402

SOLVERS = (  # the first is the reference of the distances
    ("Gauss-Seidel, scaled r (default)", dict(method="gauss_seidel", r_factors="scaled", relaxation=1.0)),
    ("Jacobi, absolute r (paper)", dict(method="jacobi", r_factors="absolute", r=(0.1, 0.01, 0.05))),
    ("Jacobi, scaled r, beta 0.05", dict(method="jacobi", r_factors="scaled", relaxation=0.05)),
    ("SOR, scaled r, beta 1.2", dict(method="gauss_seidel", r_factors="scaled", relaxation=1.2)),
    ("SOR, scaled r, beta 1.5", dict(method="gauss_seidel", r_factors="scaled", relaxation=1.5)),
    ("Gauss-Seidel + compliance 1e-3 (another model)", dict(compliance=1e-3)),
)
PROBLEMS = (
    ("resting (straight, A = 0)", dict(gait=SerpenoidGait(amplitude_h=0.0), posture="straight")),
    ("LU ortho (0.1 / 0.5, 30 deg)", dict(mu_along=0.1, mu_across=0.5)),
)
DT = 5e-4


def run(problem, solver, duration, rtol=1e-6):
    """``(trajectory, process CPU [s], wall [s])`` of the timed (second) run."""
    cs = snake_model(11, options=MoreauOptions(rtol=rtol, max_iterations=50000, **solver), **problem)
    n = int(round(duration / DT))
    save = int(round(0.05 / DT))
    jaxrod.simulate(cs, dt=DT, n_steps=n, save_every=save, throw=False)  # compiles
    c0, t0 = time.process_time(), time.perf_counter()
    tr = jaxrod.simulate(cs, dt=DT, n_steps=n, save_every=save, throw=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return tr, cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    out(f"{cpu_name()}, load before {load_average()}, dt = {DT * 1e3:g} ms, {args.duration:g} s per run")
    rows, result = [], {"dt": DT, "duration": args.duration, "commit": git_sha(), "cpu": cpu_name(), "runs": {}}
    for pname, problem in PROBLEMS:
        p_ref = None
        for sname, solver in SOLVERS:
            tr, cpu, wall = run(problem, solver, args.duration)
            if p_ref is None:
                p_ref = np.asarray(tr.positions[:, 5])
            ok = np.asarray(tr.stats.converged, bool)
            its = np.asarray(tr.stats.iterations)[ok] if ok.any() else np.zeros(1, int)
            valid = np.asarray(tr.valid, bool)
            diff = float(np.max(np.linalg.norm(np.asarray(tr.positions[valid, 5]) - p_ref[valid], axis=-1)))
            if not ok.all():
                k = int(np.argmin(ok))
                diff_txt = f"failed at step {k} (t = {(k + 1) * DT * 1e3:g} ms)"
            else:
                diff_txt = f"{diff:.1e}"
            load = load_average()
            rows.append([pname, sname, f"{its.mean():.1f} / {its.max()}", f"{cpu / args.duration:.2f}",
                         f"{wall / args.duration:.2f}", diff_txt, f"{load[0] if load else '-'}"])
            result["runs"][f"{pname} | {sname}"] = {"sweeps_mean": float(its.mean()), "sweeps_max": int(its.max()),
                                                   "cpu_s_per_sim_s": cpu / args.duration,
                                                   "wall_s_per_sim_s": wall / args.duration,
                                                   "link6_max_distance_m": diff, "failed_step": None if ok.all() else k,
                                                   "load1": load[0] if load else None}
            out(table(["problem", "solver", "sweeps / step mean / max", "CPU s / sim s", "wall s / sim s",
                       "link 6 max distance to ref [m]", "load"], rows[-1:]).splitlines()[-1])
    out("")
    out(table(["problem", "solver", "sweeps / step mean / max", "CPU s / sim s", "wall s / sim s",
               "link 6 max distance to Gauss-Seidel [m]", "load"], rows))
    if not args.no_write:
        write_result("snake_solvers.json", result)


if __name__ == "__main__":
    main()
