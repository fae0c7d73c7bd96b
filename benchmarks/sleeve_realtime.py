"""Real-time ratio of TMTDyn's fabric sleeve on a pendulum (``sleeve-pendulum``).

Usage::

    python benchmarks/sleeve_realtime.py                  # default scene: dt = 5 ms, 5 s
    python benchmarks/sleeve_realtime.py --dt 0.01 --duration 3 --repeats 3
    python benchmarks/sleeve_realtime.py --json sleeve_realtime.json   # also writes benchmarks/results/NAME

Prints: the scene build (import excluded; it includes the pendulum's MultibodySystem simulation and
its compilation), the sleeve's compile time (first call minus the median run), and for the runs
after the first the median wall and CPU time, the real-time ratio (simulated seconds per wall and
per CPU second; > 1 is faster than real time), the time per step against TMTDyn's floor of 1 s of
CPU per step or frame (spec 12 item 9), and the load average (the host may be shared).
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# the compile column measures compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse
import sys
import time

import jax
import numpy as np

import jaxrod
from jaxrod.scenes import get_scene

from _common import cpu_name, git_sha, load_average, write_result


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dt", type=float, default=5e-3, help="time step [s]")
    ap.add_argument("--duration", type=float, default=5.0, help="simulated time [s]")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs after the compiling one")
    ap.add_argument("--json", default=None, help="also write the figures to benchmarks/results/NAME")
    args = ap.parse_args(argv)
    load_start = load_average()

    scene, build_wall, build_cpu = _timed(lambda: get_scene("sleeve-pendulum", dt=args.dt, duration=args.duration))

    def run():
        traj = jaxrod.simulate(scene.model, dt=scene.dt, duration=scene.duration, scheme=scene.scheme)
        jax.block_until_ready(traj.positions)
        return traj

    traj, first_wall, first_cpu = _timed(run)
    timed = [_timed(run)[1:] for _ in range(args.repeats)]
    wall = float(np.median([t[0] for t in timed]))
    cpu = float(np.median([t[1] for t in timed]))
    n_steps = int(round(scene.duration / scene.dt))
    its = np.asarray(traj.stats.iterations)
    print(f"sleeve-pendulum: {scene.model.n_nodes} nodes, {4 * scene.model.topology.n_rows} unknowns, "
          f"dt = {scene.dt:g} s, {n_steps} steps ({scene.duration:g} s), "
          f"Newton {its.mean():.2f}/step (max {its.max()})")
    print(f"build (pendulum simulation and its compile): wall {build_wall:.2f} s, CPU {build_cpu:.2f} s")
    print(f"compile (first call - median run): wall {first_wall - wall:.2f} s, CPU {first_cpu - cpu:.2f} s")
    fastest = min(t[0] for t in timed)
    print(f"run (median of {args.repeats}; min wall {fastest:.3f} s): wall {wall:.3f} s, CPU {cpu:.3f} s")
    print(f"real-time ratio: {scene.duration / wall:.2f} (wall), {scene.duration / cpu:.2f} (CPU) simulated s per s")
    print(f"per step: {1e3 * wall / n_steps:.2f} ms wall, {1e3 * cpu / n_steps:.2f} ms CPU "
          "(TMTDyn's floor: 1000 ms CPU)")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if args.json:
        write_result(args.json, {
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "commit": git_sha(),
            "machine": f"{cpu_name()}, {os.cpu_count()} CPUs", "jax": jax.__version__,
            "xla_flags": os.environ.get("JAXROD_XLA_FLAGS"), "load_average_start": load_start,
            "load_average_end": load_average(), "command": "python benchmarks/sleeve_realtime.py " + " ".join(argv or sys.argv[1:]),
            "scene": "sleeve-pendulum", "n_nodes": int(scene.model.n_nodes),
            "unknowns": int(4 * scene.model.topology.n_rows), "dt_s": scene.dt, "sim_s": scene.duration,
            "steps": n_steps, "newton_mean": float(its.mean()), "newton_max": int(its.max()),
            "build_wall_s": build_wall, "build_cpu_s": build_cpu,
            "compile_wall_s": first_wall - wall, "compile_cpu_s": first_cpu - cpu,
            "first_call_wall_s": first_wall, "first_call_cpu_s": first_cpu,
            "repeats": args.repeats, "run_wall_s_all": [t[0] for t in timed], "run_cpu_s_all": [t[1] for t in timed],
            "run_wall_s_median": wall, "run_cpu_s_median": cpu,
            "real_time_ratio_wall": scene.duration / wall, "real_time_ratio_cpu": scene.duration / cpu,
            "note": "compile = first call minus the median run; run = the compiled simulate call; "
                    "build = scene construction incl. the pendulum's own simulation and compile"})


if __name__ == "__main__":
    main()
