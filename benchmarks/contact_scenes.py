"""Cost of the contact-rich network scenes: time per step, Newton iterations and Jacobians per step.

Usage::

    python benchmarks/contact_scenes.py                 # the table below
    python benchmarks/contact_scenes.py --repeats 3 --spider-duration 0.3 --gripper-steps 40
    python benchmarks/contact_scenes.py --repeats 3 --json contact_scenes.json   # also writes benchmarks/results/NAME

Rows (each through :func:`jaxrod.simulate` with the scene's own scheme and Newton solver):

* ``network-spider``: default settings (9 limbs x 11 nodes, floor impact at t = 0.14 s), the
  first ``--spider-duration`` s (default 0.3 s, so the impact is included).
* ``network-gripper``: default settings (5 fingers x 20 nodes, DisMech's 10 s ramp), the first
  ``--gripper-steps`` steps. The fingers do not touch yet this early (they need seconds of the
  ramp), so the row measures the cost of a step with the rod-rod contact machinery on (dense
  Jacobian, candidate list) but no contact force.
* ``network-gripper (small, contact)``: the test suite's small gripper (3 fingers x 10 nodes,
  0.1 m, curling inward with a 0.1 s ramp) for 0.25 s: the fingers collide at ~0.05 s and stay in
  contact, so this row shows the Newton behaviour through contact events.

Columns: DOFs (``4 x max(nodes, edges)``, padding included), compile (first call minus one run,
wall and process CPU), run time per step (median of ``--repeats`` calls after the first, wall and
process CPU), Newton iterations and
Jacobians per step (mean and max), failed steps, and the smallest edge-edge distance over the run
against the non-penetration bound ``2h - delta`` (gripper rows). The host may be shared (2 cores):
timings are medians, the minimum is printed too.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse
import platform
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxrod
from jaxrod.models.der.contact import segment_distance
from jaxrod.scenes import get_scene

from _common import cpu_name, git_sha, load_average, write_result

RECORD = []  # one dict per row, for --json


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


@eqx.filter_jit
def _run(model, scheme, solver, dt, n_steps):
    traj = jaxrod.simulate(model, dt=dt, n_steps=n_steps, scheme=scheme, solver=solver, throw=False)
    return traj.positions, traj.stats


def min_edge_distance(model, positions):
    """Smallest distance [m] over all admissible rod-rod contact pairs and saved frames."""
    en = np.asarray(model.topology.edge_nodes)
    f, g = np.asarray(model.contact_first), np.asarray(model.contact_second)
    x = jnp.asarray(positions)
    return float(segment_distance(x[:, en[f, 0]], x[:, en[f, 1]], x[:, en[g, 0]], x[:, en[g, 1]])[0].min())


def bench(label, scene, n_steps, repeats):
    model = scene.model
    solver = scene.solver if scene.solver is not None else jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=True)
    args = (model, scene.scheme, solver, scene.dt, int(n_steps))
    load_before = load_average()
    t0, c0 = time.perf_counter(), time.process_time()
    pos, stats = jax.block_until_ready(_run(*args))
    first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    times, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        pos, stats = jax.block_until_ready(_run(*args))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    run, run_cpu = float(np.median(times)), float(np.median(cpus))
    its, jacs = np.asarray(stats.iterations), np.asarray(stats.jacobians)
    failed = int(np.sum(~np.asarray(stats.converged)))
    dmin = bound = "n/a"
    if model.contact_first is not None:
        dmin = f"{1e3 * min_edge_distance(model, pos):.3f}"
        c = model.contacts[0]
        bound = f"{1e3 * (2 * float(model.limbs[0].radius) - float(c.delta)):.3f}"
    RECORD.append({
        "scene": label, "dofs": int(4 * model.topology.n_rows), "steps": int(n_steps), "dt_s": float(scene.dt),
        "first_call_wall_s": first, "first_call_cpu_s": first_cpu,
        "compile_wall_s": max(first - run, 0.0), "compile_cpu_s": max(first_cpu - run_cpu, 0.0),
        "run_wall_s_all": times, "run_cpu_s_all": cpus,
        "ms_per_step_wall": 1e3 * run / n_steps, "ms_per_step_cpu": 1e3 * run_cpu / n_steps,
        "newton_mean": float(its.mean()), "newton_max": int(its.max()),
        "jacobians_mean": float(jacs.mean()), "jacobians_max": int(jacs.max()), "failed_steps": failed,
        "min_edge_distance_mm": None if dmin == "n/a" else float(dmin),
        "bound_2h_minus_delta_mm": None if bound == "n/a" else float(bound),
        "load_before": load_before, "load_after": load_average()})
    return [
        label,
        4 * model.topology.n_rows,
        f"{n_steps} x {scene.dt:g}",
        f"{max(first - run, 0.0):.1f} ({max(first_cpu - run_cpu, 0.0):.1f} CPU)",
        f"{1e3 * run / n_steps:.1f} (min {1e3 * min(times) / n_steps:.1f}; CPU {1e3 * run_cpu / n_steps:.1f})",
        f"{its.mean():.2f} / {its.max()}",
        f"{jacs.mean():.2f} / {jacs.max()}",
        failed,
        dmin,
        bound,
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--spider-duration", type=float, default=0.3)
    p.add_argument("--gripper-steps", type=int, default=40)
    p.add_argument("--small-steps", type=int, default=100)
    p.add_argument("--json", default=None, help="also write the rows to benchmarks/results/NAME")
    a = p.parse_args()
    load_start = load_average()
    print(f"jax {jax.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, backend {jax.default_backend()}\n")
    rows = []
    spider = get_scene("network-spider")
    rows.append(bench("network-spider (default)", spider, round(a.spider_duration / spider.dt), a.repeats))
    print(table(HEADER, rows), flush=True)
    rows.append(bench("network-gripper (default, no touch yet)", get_scene("network-gripper"), a.gripper_steps, a.repeats))
    print(table(HEADER, rows[-1:]), flush=True)
    small = get_scene(
        "network-gripper", n_fingers=3, n_nodes=10, length=0.1, bend="inward", phi_range_deg=(3.0, 9.0), ramp_time=0.1, seed=1
    )
    rows.append(bench("network-gripper (small, contact)", small, a.small_steps, a.repeats))
    print()
    print(table(HEADER, rows))
    if a.json:
        write_result(a.json, {
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "commit": git_sha(),
            "machine": f"{cpu_name()}, {os.cpu_count()} CPUs", "jax": jax.__version__,
            "xla_flags": os.environ.get("JAXROD_XLA_FLAGS"), "load_average_start": load_start,
            "load_average_end": load_average(),
            "command": "python benchmarks/contact_scenes.py " + " ".join(sys.argv[1:]),
            "note": "compile = first call minus the median run (wall and process CPU); run = median of the "
                    "repeats after the first call; process CPU counts every thread",
            "rows": RECORD})


HEADER = [
    "scene",
    "DOFs",
    "steps x dt [s]",
    "compile [s] wall (CPU)",
    "run [ms/step] wall median (min; CPU)",
    "Newton its/step (mean / max)",
    "Jacobians/step (mean / max)",
    "failed steps",
    "min edge distance [mm]",
    "2h - delta [mm]",
]

if __name__ == "__main__":
    main()
