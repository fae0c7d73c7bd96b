"""The snake robot of Transeth et al. (2008): cost of the paper's 15 s runs, larger steps with the
linear-implicit PD, a dt study, and batched throughput (issue 23's benchmark).

Sections (``--sections``, default all):

* ``paper``: 15 s of each gait at the paper's dt = 0.25 ms with the paper's explicit PD
  (lateral undulation on orthotropic 0.1 / 0.5 friction, the isotropic 0.2 experiment with A_h =
  40 deg, sidewinding on 0.2): process CPU per simulated second next to the paper's 78 s
  (undulation) and 426 s (sidewinding) per simulated second (Matlab on a 1.8 GHz Pentium-M, 2008:
  not comparable hardware, and another language), and the same runs with the linear-implicit PD
  at larger steps (0.5, 1, 2 ms) with link 6's end point against the 0.25 ms explicit run.
* ``dt``: the dt study, 3 s of lateral undulation (orthotropic) and of sidewinding at dt = 0.25,
  0.5, 1, 2, 5 ms, explicit vs linear-implicit PD: link 6's displacement and its distance to the
  0.25 ms explicit reference (a run that fails or leaves the ground is marked).
* ``batch``: ``jax.vmap`` over the gait amplitude (batch 1, 4, 16; lateral undulation, orthotropic,
  linear-implicit PD, dt 1 ms, 1 s): CPU per simulated snake-second.

Every row gives process CPU (this process, all threads) and wall; the header gives the load average
(the host is shared). ``--pin CORE`` restricts this process to one core BEFORE jax starts (XLA then
sizes its thread pool to 1): on this 2-core host shared with other sessions the unpinned runs
measured 10-30x more CPU per step (tiny ops handed between two threads that each wait for a busy
core), so the default is ``--pin 0``; ``--pin -1`` leaves the affinity alone.

    python benchmarks/snake.py [--sections paper,dt,batch] [--duration 15] [--pin 0] [--no-write]

Writes ``results/snake.json`` (one entry per section; a run of some sections keeps the others).
"""

from __future__ import annotations

import argparse
import os
import sys


def _early_pin():
    """Apply ``--pin`` before jax is imported (XLA's thread pool is sized from the affinity)."""
    core = 0
    for k, a in enumerate(sys.argv):
        if a == "--pin" and k + 1 < len(sys.argv):
            core = int(sys.argv[k + 1])
        elif a.startswith("--pin="):
            core = int(a.split("=", 1)[1])
    if core >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    return core


PINNED = _early_pin()
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # XLA's default flags: the fastest code (docs/speed.md)

import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from _common import load_average, out, table  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.integrate.moreau import StabilityWarning  # noqa: E402
from jaxrod.scenes.snake import SerpenoidGait, snake_model, snake_sidewinding  # noqa: E402

#: (linear-implicit PD, dt [s]) of the paper section: the paper's explicit 0.25 ms first (the reference)
PAPER_RUNS = ((False, 2.5e-4), (True, 1e-3), (True, 2e-3))
PAPER_CPU = {"undulation": 78.0, "sidewinding": 426.0}  # s per simulated second (Matlab, Pentium-M)
GAITS = {
    "LU ortho 0.1/0.5, 30 deg": ("undulation", lambda imp: snake_model(11, mu_along=0.1, mu_across=0.5,
                                                                       implicit_pd=imp)),
    "LU iso 0.2, 40 deg": ("undulation", lambda imp: snake_model(
        11, mu_along=0.2, mu_across=0.2, gait=SerpenoidGait.lateral_undulation(40.0), implicit_pd=imp)),
    "sidewinding 0.2": ("sidewinding", lambda imp: snake_sidewinding(implicit_pd=imp).model),
}


def _load():
    return " / ".join(f"{x:.1f}" for x in load_average()) if load_average() else "?"


def _run(model, dt, duration, save=0.1):
    """One run: ``(link 6 path (T, 3), times, CPU s, wall s, failed step or None, sweeps mean)``; a
    short warm-up run of the same program first, so compilation is not counted."""
    n = int(round(duration / dt))
    every = max(1, int(round(save / dt)))
    while n % every:
        every -= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        jaxrod.simulate(model, dt=dt, n_steps=every, save_every=every, throw=False)
        c0, w0 = time.process_time(), time.time()
        tr = jaxrod.simulate(model, dt=dt, n_steps=n, save_every=every, throw=False)
        p6 = np.asarray(tr.positions[:, 5])
        cpu, wall = time.process_time() - c0, time.time() - w0
    ok = np.asarray(tr.stats.converged)
    failed = None if ok.all() else int(np.argmin(ok))
    return p6, np.asarray(tr.times), cpu, wall, failed, float(np.asarray(tr.stats.iterations).mean())


def _status(p6, failed, dt):
    if failed is not None:
        return f"contact solve failed at step {failed} (t = {failed * dt:.3f} s)"
    if not np.all(np.isfinite(p6)) or np.max(np.abs(p6[:, 2] - p6[0, 2])) > 0.3:
        return "blew up (link 6 left the ground by > 0.3 m)"
    return "ok"


def section_paper(args, result):
    rows, rec = [], {}
    for name, (kind, build) in GAITS.items():
        ref = None
        for imp, dt in PAPER_RUNS:
            p6, t, cpu, wall, failed, sweeps = _run(build(imp), dt, args.duration)
            d = p6[-1, :2] - p6[0, :2]
            if ref is None:
                ref = p6
            dist = float(np.linalg.norm(p6[-1, :2] - ref[-1, :2]))
            status = _status(p6, failed, dt)
            paper = f"{PAPER_CPU[kind]:g}" if (not imp and dt == 2.5e-4) else ""
            good = status == "ok"
            rows.append([name, "implicit" if imp else "explicit (paper)", f"{dt * 1e3:g}",
                         f"{d[0]:+.3f}, {d[1]:+.3f}" if good else "-", f"{dist:.4f}" if good else "-",
                         f"{sweeps:.1f}", f"{cpu / args.duration:.2f}", paper,
                         f"{wall / args.duration:.2f}", status])
            rec[f"{name} | {'implicit' if imp else 'explicit'} | {dt}"] = {
                "gait": name, "implicit_pd": imp, "dt": dt, "duration": args.duration,
                "link6_dx": float(d[0]), "link6_dy": float(d[1]), "link6_end_distance_to_explicit_0.25ms": dist,
                "sweeps_mean": sweeps, "cpu_s": cpu, "wall_s": wall, "cpu_per_sim_s": cpu / args.duration,
                "paper_cpu_per_sim_s": PAPER_CPU[kind], "status": status}
            out(f"  {rows[-1]}")
    out(table(["gait", "PD", "dt [ms]", "link 6 dx, dy [m]", "link 6 end vs explicit 0.25 ms [m]", "sweeps/step",
               "CPU s / sim s", "paper (Matlab, Pentium-M) s / sim s", "wall s / sim s", "status"], rows))
    result["paper"] = {"duration": args.duration, "load": _load(), "pinned_core": PINNED, "runs": rec}


def section_dt(args, result):
    rows, rec = [], {}
    dur = args.dt_duration
    for name in ("LU ortho 0.1/0.5, 30 deg", "sidewinding 0.2"):
        build = GAITS[name][1]
        ref = None
        for imp in (False, True):
            for dt in (2.5e-4, 5e-4, 1e-3, 2e-3, 5e-3):
                p6, t, cpu, wall, failed, sweeps = _run(build(imp), dt, dur)
                if ref is None:
                    ref = p6
                status = _status(p6, failed, dt)
                d = p6[-1, :2] - p6[0, :2]
                dist = float(np.linalg.norm(p6[-1, :2] - ref[-1, :2])) if np.all(np.isfinite(p6[-1])) else float("nan")
                good = status == "ok"
                rows.append([name, "implicit" if imp else "explicit", f"{dt * 1e3:g}",
                             f"{d[0]:+.4f}, {d[1]:+.4f}" if good else "-", f"{dist:.4f}" if good else "-",
                             f"{cpu / dur:.2f}", status])
                rec[f"{name} | {'implicit' if imp else 'explicit'} | {dt}"] = {
                    "gait": name, "implicit_pd": imp, "dt": dt, "duration": dur, "link6_dx": float(d[0]),
                    "link6_dy": float(d[1]), "link6_distance_to_explicit_0.25ms": dist, "cpu_per_sim_s": cpu / dur,
                    "status": status}
                out(f"  {rows[-1]}")
    out(table(["gait", "PD", "dt [ms]", f"link 6 dx, dy at {dur:g} s [m]", "distance to explicit 0.25 ms [m]",
               "CPU s / sim s", "status"], rows))
    result["dt"] = {"duration": dur, "load": _load(), "pinned_core": PINNED, "runs": rec}


def section_batch(args, result):
    base = snake_model(11, mu_along=0.1, mu_across=0.5, implicit_pd=True)
    dt, dur = 1e-3, args.batch_duration
    n = int(round(dur / dt))

    def travel(a):
        m = eqx.tree_at(lambda c: c.controller.gait.amplitude_h, base, a)
        tr = jaxrod.simulate(m, dt=dt, n_steps=n, save_every=n, fallback=False)
        return jnp.mean(tr.positions[-1, :, 0] - tr.positions[0, :, 0])

    f = jax.jit(jax.vmap(travel))
    rows, rec = [], {}
    for b in args.batches:
        a = jnp.radians(jnp.linspace(20.0, 40.0, b))
        c0, w0 = time.process_time(), time.time()
        jax.block_until_ready(f(a))
        first = time.process_time() - c0
        c0, w0 = time.process_time(), time.time()
        x = np.asarray(jax.block_until_ready(f(a)))
        cpu, wall = time.process_time() - c0, time.time() - w0
        rows.append([b, f"{first:.1f}", f"{cpu:.2f}", f"{cpu / (b * dur):.2f}", f"{wall / (b * dur):.2f}",
                     f"{x.min():+.4f} .. {x.max():+.4f}"])
        rec[str(b)] = {"batch": b, "first_call_cpu_s": first, "cpu_s": cpu, "wall_s": wall,
                       "cpu_per_snake_s": cpu / (b * dur), "travel_m": x.tolist()}
        out(f"  {rows[-1]}")
    out(table(["batch (A_h 20-40 deg)", "first call CPU [s] (compile + run)", "CPU [s]", "CPU s / snake-s",
               "wall s / snake-s", "CoM travel [m]"], rows))
    result["batch"] = {"dt": dt, "duration": dur, "load": _load(), "pinned_core": PINNED, "runs": rec}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="paper,dt,batch")
    ap.add_argument("--duration", type=float, default=15.0, help="length of the paper section's runs [s]")
    ap.add_argument("--dt-duration", type=float, default=3.0, help="length of the dt study's runs [s]")
    ap.add_argument("--batch-duration", type=float, default=1.0)
    ap.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16])
    ap.add_argument("--pin", type=int, default=0, help="core to pin this process to (-1: none); see above")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "snake.json")
    result = {}
    out(f"load average at start {_load()}; pinned to core {PINNED if PINNED >= 0 else 'none'}; "
        f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} core(s) visible")
    for s in args.sections.split(","):
        {"paper": section_paper, "dt": section_dt, "batch": section_batch}[s](args, result)
        out(f"load average after {s}: {_load()}")
        if not args.no_write:  # re-read: another run may have written other sections meanwhile
            old = {}
            if os.path.exists(path):
                with open(path) as fh:
                    old = json.load(fh)
            old[s] = result[s]
            with open(path, "w") as fh:
                json.dump(old, fh, indent=1)
    if not args.no_write:
        out(f"wrote {path}")


if __name__ == "__main__":
    main()
