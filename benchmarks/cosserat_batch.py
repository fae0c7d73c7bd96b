"""Cosserat shooting against Till's C++: one rod and ``vmap`` batches, solver variants interleaved.

Usage::

    python benchmarks/cosserat_batch.py                      # single rod + batches 1, 4, 16, 64
    python benchmarks/cosserat_batch.py --batches 1,16 --repeats 3
    python benchmarks/cosserat_batch.py --variants new       # only the default solver
    python benchmarks/cosserat_batch.py --json benchmarks/results/cosserat_batch.json

The case is Till's public C++ example (ContinuumRobotExamples, 02_Dynamics/00_Cosserat_Rod_PDE,
with N = 150, dt = 5 ms, T = 1 s): steel rod E 200 GPa, G 80 GPa, radius 1 mm, rho 8000 kg/m^3,
L 0.5 m, gravity -9.81 m/s^2 along x, clamped at the origin along +z, at rest under the weight of a
0.02 kg tip mass (a force, ``m g``) that is removed at t = 0+, no damping; explicit Euler in arc
length on 150 points, BDF-alpha -0.2, 200 steps. A batch varies the tip mass (0.01 ... 0.03 kg).
The C++ example's own time on this machine (0.039 s process CPU for the 200 steps, quiet machine)
was measured by an earlier session and is quoted, not re-measured here.

Solver variants (``--variants``), run interleaved in the same process (repeat r of every variant,
then repeat r + 1, ...), so that a change of the machine's load hits all of them alike:

* ``old``: the solver as before this benchmark (``batch_uniform=False``: under ``vmap`` the
  chord/fresh-Jacobian choice and the fallback are ``select`` s that evaluate every branch);
* ``new``: the default solver (``batch_uniform=True``; see :class:`jaxrod.solvers.NewtonSolver`);
* ``new-seg2``: the default solver on the same rod with ``segments=2`` (multiple shooting: two
  75-point sweeps side by side, 25 unknowns; the Jacobian then changes less from step to step and
  is rebuilt 5x less often).

Every timing is process CPU time (``time.process_time``, all threads) next to wall time, with the
load average; compile time is excluded and reported separately. Rods per CPU-second = batch size /
CPU seconds of the compiled batched call (each rod simulates 1 s).
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxrod
from _common import cpu_name, git_sha, note, out, table  # noqa: E402
from jaxrod.integrate.schemes import DifferenceFormula
from jaxrod.models.cosserat import DEFAULT_SOLVER, CosseratModel, CosseratRod, CosseratState, ReleasedAt

CPP_SECONDS = 0.039  # Till's C++ example, 200 steps, process CPU on this machine (earlier session, quiet)
N_POINTS, DT, N_STEPS, ALPHA = 150, 0.005, 200, -0.2


def till_cpp_model(tip_mass=0.02, n_points=N_POINTS, segments=1):
    """The C++ example's rod (see the module docstring); ``tip_mass`` [kg] may be traced;
    ``segments``: shooting segments (1: simple shooting, as the C++ example)."""
    rod = CosseratRod.circular(0.5, 1e-3, youngs_modulus=200e9, shear_modulus=80e9, density=8000.0)
    force = jnp.stack([-9.81 * jnp.asarray(tip_mass, float), jnp.zeros(()), jnp.zeros(())])
    return CosseratModel(rod, n_points=n_points, integrator="euler", gravity=(-9.81, 0.0, 0.0),
                         tip_force=force, tip_profile=ReleasedAt(0.0), segments=segments)


SCHEME = DifferenceFormula.bdf_alpha(ALPHA)

def _with_batch_uniform(solver, flag):
    import dataclasses

    return dataclasses.replace(solver, batch_uniform=flag)  # a static field


def initial_state(mass, segments=1):
    """Static equilibrium under the weight, with the scheme's rest history (outside any timing)."""
    model = till_cpp_model(mass, segments=segments)
    st, _ = jaxrod.solve_static(model, throw=False)
    return CosseratState(st.y, st.w, st.base_loads, SCHEME.init(st.grid_variables), st.w_stages)


def runner(variant, batched):
    """Compiled 200-step run: ``f(mass, state0) -> (tip (3,), stats)``, vmapped when ``batched``."""
    solver, segments = variant

    def one(mass, state0):
        traj = jaxrod.simulate(till_cpp_model(mass, segments=segments), dt=DT, n_steps=N_STEPS, scheme=SCHEME, state0=state0,
                               solver=solver, throw=False, fallback=False)
        return traj.positions[-1, -1], traj.stats.iterations, traj.stats.jacobians, traj.stats.converged

    return jax.jit(jax.vmap(one) if batched else one)


def timed(f, *args):
    c0, w0 = time.process_time(), time.perf_counter()
    res = jax.block_until_ready(f(*args))
    return time.process_time() - c0, time.perf_counter() - w0, res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", default="1,4,16,64", help="vmap batch sizes (comma-separated; 0: none)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per entry (min and median reported)")
    p.add_argument("--variants", default="old,new,new-seg2", help="subset of old,new,new-seg2")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    args = p.parse_args(argv)
    variants = {"old": (_with_batch_uniform(DEFAULT_SOLVER, False), 1), "new": (DEFAULT_SOLVER, 1),
                "new-seg2": (DEFAULT_SOLVER, 2)}
    names = [v for v in args.variants.split(",") if v]
    batches = [int(b) for b in args.batches.split(",") if b.strip() and int(b) > 0]

    out(f"# Cosserat shooting vs Till's C++: {N_POINTS} Euler points, BDF-alpha {ALPHA}, dt {DT * 1e3:g} ms, "
        f"{N_STEPS} steps (1 s)")
    out()
    out(f"- machine: {cpu_name()}, {os.cpu_count()} cores; jax {jax.__version__}; commit {git_sha()}")
    out(f"- load average at start: {os.getloadavg()[0]:.2f}")
    out()

    state_single = {v: initial_state(0.02, variants[v][1]) for v in names}
    results = {"single": {}, "batch": {}, "load_start": os.getloadavg()[0], "cpp_seconds": CPP_SECONDS}

    # ---- single rod -------------------------------------------------------------------------------
    progs = {}
    for v in names:
        f = runner(variants[v], False)
        c0 = time.perf_counter()
        f.lower(jnp.asarray(0.02), state_single[v]).compile()
        progs[v] = (f, time.perf_counter() - c0)
        timed(f, jnp.asarray(0.02), state_single[v])  # warm-up
    samples = {v: [] for v in names}
    loads = []
    for _ in range(args.repeats):
        for v in names:
            samples[v].append(timed(progs[v][0], jnp.asarray(0.02), state_single[v]))
        loads.append(os.getloadavg()[0])
    rows = []
    ref_tip = np.asarray(samples[names[0]][0][2][0])
    for v in names:
        cpu = np.array([s[0] for s in samples[v]])
        wall = np.array([s[1] for s in samples[v]])
        tip, its, jacs, conv = (np.asarray(a) for a in samples[v][-1][2])
        results["single"][v] = dict(cpu_min=cpu.min(), cpu_median=float(np.median(cpu)), wall_min=wall.min(),
                                    wall_median=float(np.median(wall)), iterations=its.mean(),
                                    jacobians=jacs.mean(), converged=bool(conv.all()), tip=tip.tolist(),
                                    compile_s=progs[v][1])
        rows.append([v, f"{cpu.min():.4f} ({np.median(cpu):.4f})", f"{wall.min():.4f} ({np.median(wall):.4f})",
                     f"{cpu.min() / CPP_SECONDS:.2f}x", f"{its.mean():.2f}", f"{jacs.mean():.3f}",
                     f"{np.max(np.abs(tip - ref_tip)):.1e}", f"{1.0 / cpu.min():.1f}", f"{progs[v][1]:.1f}"])
    out(f"## Single rod (plain `jit`), {args.repeats} interleaved repeats, load {min(loads):.2f}-{max(loads):.2f}")
    out()
    out(table(["solver", "CPU [s] min (median)", "wall [s] min (median)", "vs C++ 0.039 s", "Newton it/step",
               "Jacobians/step", f"tip vs {names[0]} [m]", "rods per CPU-s", "compile [s]"], rows))
    out()

    # ---- batches ----------------------------------------------------------------------------------
    brows = []
    for b in batches:
        masses = jnp.linspace(0.01, 0.03, b) if b > 1 else jnp.asarray([0.02])
        states = {k: jax.jit(jax.vmap(lambda m, k=k: initial_state(m, k)))(masses)
                  for k in {variants[v][1] for v in names}}
        progs = {}
        for v in names:
            f = runner(variants[v], True)
            c0 = time.perf_counter()
            f.lower(masses, states[variants[v][1]]).compile()
            progs[v] = (f, time.perf_counter() - c0)
            timed(f, masses, states[variants[v][1]])
        samples = {v: [] for v in names}
        loads = []
        for _ in range(args.repeats):
            for v in names:
                samples[v].append(timed(progs[v][0], masses, states[variants[v][1]]))
            loads.append(os.getloadavg()[0])
        for v in names:
            cpu = np.array([s[0] for s in samples[v]])
            wall = np.array([s[1] for s in samples[v]])
            tip, its, jacs, conv = (np.asarray(a) for a in samples[v][-1][2])
            # each member against its own single run (plain jit, same solver)
            k = b // 2
            member = jax.tree_util.tree_map(lambda a: a[k], states[variants[v][1]])
            single_tip = np.asarray(progs_single_tip(v, variants[v], masses[k], member))
            results["batch"].setdefault(str(b), {})[v] = dict(
                cpu_min=cpu.min(), cpu_median=float(np.median(cpu)), wall_min=wall.min(),
                rods_per_cpu_s=b / cpu.min(), iterations=its.mean(), iterations_max_member_mean=its.mean(axis=1).max(),
                jacobians=jacs.mean(), converged=bool(conv.all()), tip_vs_single=float(np.max(np.abs(tip[k] - single_tip))),
                compile_s=progs[v][1], load=[min(loads), max(loads)])
            brows.append([b, v, f"{cpu.min():.3f} ({np.median(cpu):.3f})", f"{wall.min():.3f}", f"{b / cpu.min():.2f}",
                          f"{b / cpu.min() * CPP_SECONDS:.2f}x", f"{its.mean():.2f}", f"{jacs.mean():.3f}",
                          f"{np.max(np.abs(tip[k] - single_tip)):.1e}", f"{min(loads):.1f}-{max(loads):.1f}",
                          f"{progs[v][1]:.1f}"])
        note(f"batch {b} done")
    if brows:
        out(f"## `jax.jit(jax.vmap(simulate))` over tip masses, {args.repeats} interleaved repeats")
        out()
        out(table(["batch", "solver", "CPU [s] min (median)", "wall [s] min", "rods per CPU-s",
                   "vs C++ (25.6 rods/CPU-s)", "Newton it/step", "Jacobians/step", "member b//2 vs its single run [m]",
                   "load", "compile [s]"], brows))
        out()
    results["load_end"] = os.getloadavg()[0]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=float)


_single_cache = {}


def progs_single_tip(name, variant, mass, state0):
    if name not in _single_cache:
        _single_cache[name] = runner(variant, False)
    return _single_cache[name](mass, state0)[0]


if __name__ == "__main__":
    main()
