"""Cost of a reverse-mode gradient through a simulation, relative to the forward run (issue 24:
"gradient <= 3x forward for DER, Cosserat, PCS and a hybrid system").

Every case is a scalar loss of a ``jaxrod.simulate`` trajectory with respect to model parameters.
Three compiled programs per case: the forward loss, and ``jax.value_and_grad`` of it with the
implicit-differentiation solves of every Newton solve done two ways (``NewtonSolver.tangent_refinement``):

* ``refactor`` (``tangent_refinement=0``, the default): a fresh Jacobian of the residual at the
  root (one JVP per colour) and its factorisation, per Newton solve;
* ``refine`` (``tangent_refinement=20``): iterative refinement preconditioned by the
  factorisation the forward Newton built in the same solve, exact products with the residual
  linearised at the root (the fresh factorisation when there is none or it does not converge).

Process CPU (``time.process_time``, all threads) is reported, not wall time: the machine may be
shared (the load average is printed). Each program is timed in interleaved rounds (forward,
refactor, refine, forward, ...) and the minimum per program is kept. Compile CPU is
``jit(...).lower(...).compile()`` with jaxrod's persistent compilation cache off.

Usage: ``PYTHONPATH=. python benchmarks/gradients.py [--cases der,cosserat,pcs,hybrid] [--rounds 3]``
Results: ``benchmarks/results/gradients.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

os.environ.setdefault("JAXROD_CACHE_DIR", "off")  # compile times are measured: no cache hits

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_sha, note, out, table  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.integrate.implicit import DEFAULT_SOLVER  # noqa: E402

VARIANTS = {"refactor": 0, "refine": 20}


def solver_with(base, refinement):
    return dataclasses.replace(base, tangent_refinement=refinement)


# ------------------------------------------------------------------------------------------ cases
def der_case(solver):
    """The issue's case: 41-node DER cantilever (gravity, tip force, natural curvature), 100
    backward-Euler steps of 10 ms, loss on the tip; d/d(E, rho, kappa, tip force)."""
    n = 41

    def loss(p):
        pts = np.stack([np.linspace(0, 0.5, n), np.zeros(n), np.zeros(n)], axis=1)
        rod = jaxrod.DERRod.from_polyline(pts, rest="stress_free", youngs_modulus=p["E"], density=p["rho"], radius=0.01)
        rod = rod.with_natural_curvature(jnp.zeros((n - 2, 2)).at[:, 1].set(p["kappa"]))
        model = jaxrod.DERModel(rod, clamped_edges=(0,), gravity=(0.0, 0.0, -9.8),
                                point_forces=jnp.zeros((n, 3)).at[-1].set(p["force"]))
        tr = jaxrod.simulate(model, dt=0.01, n_steps=100, scheme="backward_euler", solver=solver, save_every=10)
        return jnp.sum(tr.tip[:, 2]) + 0.3 * jnp.sum(tr.tip[:, 0])

    p0 = {"E": jnp.asarray(2e6), "rho": jnp.asarray(1200.0), "kappa": jnp.asarray(0.02),
          "force": jnp.asarray([0.01, 0.02, -0.05])}
    return loss, p0


def cosserat_case(solver):
    """Till's weight release (shooting), 30 points, 40 BDF-alpha(-0.2) steps of 5 ms; d/d(E, rho,
    released weight)."""
    from jaxrod.integrate.schemes import DifferenceFormula
    from jaxrod.scenes import get_scene

    m0 = get_scene("till-weight-release", n_points=30, integrator="euler").model

    def loss(p):
        m = eqx.tree_at(lambda m: (m.rod.youngs_modulus, m.rod.density, m.tip_force), m0,
                        (p["E"], p["rho"], jnp.stack([-p["W"], 0.0, 0.0])))
        tr = jaxrod.simulate(m, dt=0.005, n_steps=40, scheme=DifferenceFormula.bdf_alpha(-0.2), solver=solver)
        return jnp.sum((tr.tip[:, 0] - tr.tip[0, 0]) ** 2)

    p0 = {"E": jnp.asarray(m0.rod.youngs_modulus), "rho": jnp.asarray(m0.rod.density),
          "W": jnp.asarray(-m0.tip_force[0])}
    return loss, p0


def pcs_case(solver):
    """PCS rod (3 segments, viscous), 50 Newmark steps of 4 ms under gravity; d/d(E, rho)."""
    from jaxrod.models.pcs import PCSModel, PCSRod

    rod = PCSRod.rectangular(0.9, 3, 0.05, 0.02, youngs_modulus=110e3, density=1080.0, poisson_ratio=0.5,
                             viscosity=300.0)
    m0 = PCSModel(rod, gravity=(0, 0, -9.81), points_per_segment=2)

    def loss(p):
        model = eqx.tree_at(lambda m: (m.rod.youngs_modulus, m.rod.shear_modulus, m.rod.density), m0,
                            (p["E"], p["E"] / 3.0, p["rho"]))
        tr = jaxrod.simulate(model, dt=0.004, n_steps=50, scheme=jaxrod.NewmarkBeta(), solver=solver)
        return jnp.sum(tr.tip[:, 2] ** 2)

    return loss, {"E": jnp.asarray(110e3), "rho": jnp.asarray(1080.0)}


def hybrid_case(solver):
    """Hybrid system: a 6-node DER cantilever clamped to the world and to a 2 kg tip body, 50
    backward-Euler steps of 5 ms, loss on the body's height; d/d(gravity vector)."""
    from jaxrod.system import HybridSystem, RigidBody, RodClamp

    rod = jaxrod.DERRod.cantilever(6, 0.5, clamped_ends="both", youngs_modulus=2e9, density=1000.0, radius=0.01)
    body = RigidBody("tip", 2.0, [1e-4] * 3, position=[0.6, 0.0, 0.0])

    def loss(p):
        system = HybridSystem([jaxrod.DERModel(rod)], [body], attachments=[RodClamp(0, 0), RodClamp(0, -1, "tip")],
                              gravity=p["g"])
        tr = jaxrod.simulate(system, dt=0.005, n_steps=50, scheme="backward_euler", solver=solver)
        return jnp.sum(system.body_positions(tr.positions)[:, 0, 2] ** 2)  # the tip body's height

    return loss, {"g": jnp.asarray([0.3, 0.0, -9.81])}


CASES = {
    "der": ("DER 41 nodes, 100 BE steps", der_case),
    "cosserat": ("Cosserat 30 pts, 40 BDF-a steps", cosserat_case),
    "pcs": ("PCS 3 segments, 50 Newmark steps", pcs_case),
    "hybrid": ("hybrid DER+body, 50 BE steps", hybrid_case),
}


# ------------------------------------------------------------------------------------------ timing
def cpu(fn, *a):
    t = time.process_time()
    r = jax.block_until_ready(fn(*a))
    return time.process_time() - t, r


def compiled(fn, p0):
    t = time.process_time()
    c = jax.jit(fn).lower(p0).compile()
    return c, time.process_time() - t


def run_case(key, rounds, base_solver):
    label, make = CASES[key]
    loss_fwd, p0 = make(base_solver)
    progs, compile_s = {}, {}
    progs["forward"], compile_s["forward"] = compiled(loss_fwd, p0)
    for name, k in VARIANTS.items():
        loss_k, _ = make(solver_with(base_solver, k))
        progs[name], compile_s[name] = compiled(jax.value_and_grad(loss_k), p0)
    note(f"{key}: compiled {compile_s}")
    times = {n: [] for n in progs}
    results = {}
    for _ in range(rounds):
        for n, prog in progs.items():
            dt, r = cpu(prog, p0)
            times[n].append(dt)
            results[n] = r
    fwd = float(results["forward"])
    vals = {n: float(results[n][0]) for n in VARIANTS}
    grads = {n: np.concatenate([np.ravel(np.asarray(g)) for g in jax.tree_util.tree_leaves(results[n][1])])
             for n in VARIANTS}
    g_ref, g_new = grads["refactor"], grads["refine"]
    # norm-wise: a component that is zero by symmetry (out-of-plane gravity) has no relative error
    rel = float(np.max(np.abs(g_new - g_ref)) / np.max(np.abs(g_ref)))
    best = {n: min(t) for n, t in times.items()}
    return dict(
        case=key, label=label, forward_cpu_s=best["forward"],
        grad_cpu_s={n: best[n] for n in VARIANTS}, ratio={n: best[n] / best["forward"] for n in VARIANTS},
        compile_cpu_s=compile_s, all_cpu_s=times, loss=fwd, grad={n: g.tolist() for n, g in grads.items()}, loss_in_grad=vals, max_rel_grad_diff=rel,
        load_average=os.getloadavg(),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="der,cosserat,pcs,hybrid")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                   "gradients.json"))
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    note(f"jaxrod from {jaxrod.__file__}, load {load0}")
    rows, records = [], []

    def save():
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(commit=git_sha(), load_start=load0, load_end=os.getloadavg(), rounds=args.rounds,
                           cases=records), f, indent=1)

    for key in args.cases.split(","):
        r = run_case(key, args.rounds, DEFAULT_SOLVER)
        records.append(r)
        save()  # after every case: a long run that fails later keeps what it measured
        rows.append([
            r["label"], f"{r['forward_cpu_s']:.3f}", f"{r['grad_cpu_s']['refactor']:.3f}",
            f"**{r['ratio']['refactor']:.2f}x**", f"{r['grad_cpu_s']['refine']:.3f}", f"{r['ratio']['refine']:.2f}x",
            f"{r['compile_cpu_s']['forward']:.1f} / {r['compile_cpu_s']['refactor']:.1f} / {r['compile_cpu_s']['refine']:.1f}",
            f"{r['max_rel_grad_diff']:.1e}", "%.1f" % r["load_average"][0],
        ])
        out(table(["case", "forward CPU s", "grad CPU s, refactor", "ratio", "grad CPU s, refine", "ratio",
                   "compile CPU s fwd / refactor / refine", "max rel. grad diff", "load"], rows[-1:]))
    out()
    out(table(["case", "forward CPU s", "grad CPU s, refactor", "ratio", "grad CPU s, refine", "ratio",
               "compile CPU s fwd / refactor / refine", "max rel. grad diff", "load"], rows))
    note(f"wrote {args.json}")


if __name__ == "__main__":
    main()
