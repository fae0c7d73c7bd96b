"""Cost of multibody systems vs size: dense Jacobian against the structured (block-tridiagonal) one.

Usage::

    python benchmarks/hybrid.py                        # chains of 10, 30, 100, 300, 1000 bodies
    python benchmarks/hybrid.py --sizes 10,30 --dense-max 30 --steps 20 --joint spherical
    python benchmarks/hybrid.py --sizes 10,30,100,300,1000 --dense-max 100 --steps 10 --repeats 1  # the docs' run
    python benchmarks/hybrid.py --sizes '' --rod-chains 10x10 --steps 10 --repeats 1 --dt 1e-3  # rods and bodies

Problem: a pendulum chain of ``n`` slender links (0.3 m, 0.5 kg each), hinged end to end by
revolute joints about y (5 constraint rows each; ``--joint spherical``: ball joints, 3 rows) and to
the world at its top, released at rest from a straight line 0.7 rad off the vertical under gravity;
``--steps`` steps of ``--dt`` with the default scheme (average vector field) and
``NewtonSolver(rtol=--rtol, atol=--atol)`` (default 1e-9 / 1e-9, simulate's), Jacobian reuse on.
A pure absolute tolerance stalls on long chains: the integrated multipliers reach ``|mu| ~ 25``
at 1000 links and the Newton matrix has condition ~1e12, so ``atol = 1e-10`` is below what the
solve resolves (measured: 9 of 10 steps failed at 1000 links, 12 iterations per step at 300). ``n_coordinates = 6 n + rows n``.

Columns, per system size and linear solver (``dense``: ``jax.jacfwd`` + LU, the default before;
``structured``: :func:`jaxrod.system.structure.multibody_linear_solver` forced on, ``3 m`` JVPs
and block LU in the body-by-body order of :func:`jaxrod.system.structure.multibody_layout`):

* compile [s]: ``jax.jit(run).lower(...).compile()`` of a function calling :func:`jaxrod.simulate`
  (no persistent cache: ``JAXROD_CACHE_DIR=off`` unless set), separate from run time;
* wall and CPU ms per step: median over ``--repeats`` calls of the compiled program after one
  warm-up call (CPU = process CPU time, all threads; wall < CPU means XLA used both cores);
* Newton iterations and Jacobians per step (mean), CPU ms per Newton iteration (the figure that
  should be O(n): the iteration count depends on the motion), failed steps;
* one Newton linear algebra (build the Jacobian, factor, solve) at the initial state, wall and
  CPU ms, and its compile time: the part of a step that is O(n^3) dense and O(n) structured.

Rods and bodies (``--rod-chains 10x10``, the issue's "10 x 10 rod grid" row): a chain of ``R``
DER rods of ``N`` nodes each (0.2 m, E 1e8 Pa, radius 3 mm, 1000 kg/m^3) joined end to end
through ``R`` rigid blocks (0.05 kg): rod 0 clamped to the world at its start, rod ``k`` clamped
to block ``k`` at its end and rod ``k + 1`` clamped to block ``k`` at its start (:class:`RodClamp`,
7 rows each), the last block free; a horizontal chain sagging under gravity. ``n_coordinates = 4
R N + 6 R + 14 R``. Same columns; ``structured`` is
:func:`jaxrod.system.hybrid.hybrid_linear_solver` forced on, in the :func:`hybrid_layout` order
(rod chunks of 2 nodes, blocks, clamp rows). ``--sizes ''`` skips the pendulum chains.

A second table times the parts of one structured iteration (residual, Jacobian, block LU, solve)
each compiled alone, CPU ms, median of 20 calls (skip with ``--no-parts``).

The host may be shared (2 cores; load average printed at start and end): medians, min in brackets.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.geometry import quat_to_rotation  # noqa: E402
from jaxrod.solvers import DenseJacobianSolver  # noqa: E402
from jaxrod.system import MultibodySystem, Revolute, RigidBody, Spherical  # noqa: E402
from jaxrod.system import HybridSystem, RodClamp  # noqa: E402
from jaxrod.system.hybrid import hybrid_layout, hybrid_linear_solver  # noqa: E402
from jaxrod.system.structure import multibody_layout, multibody_linear_solver  # noqa: E402

LINK_LENGTH, LINK_MASS, TILT = 0.3, 0.5, 0.7  # m, kg, rad


def pendulum_chain(n: int, joint: str = "revolute") -> MultibodySystem:
    """``n`` slender links end to end from the world pivot at the origin, in the x-z plane."""
    L, m = LINK_LENGTH, LINK_MASS
    e = np.array([np.sin(TILT), 0.0, -np.cos(TILT)])
    # body x axis along the link: a rotation about y by pi/2 - TILT maps x to e (a rotation by a
    # about y maps x to (cos a, 0, -sin a); the earlier TILT - pi/2 put x at (sin TILT, 0, +cos TILT),
    # 100 degrees away from the link, harmless for the planar motion since I_yy = i either way)
    half = 0.5 * (np.pi / 2 - TILT)
    quat = [np.cos(half), 0.0, np.sin(half), 0.0]
    x_axis = np.asarray(quat_to_rotation(jnp.asarray(quat)))[:, 0]
    if not np.allclose(x_axis, e, atol=1e-12):
        raise AssertionError(f"pendulum_chain: body x axis {x_axis} is not along the link {e}")
    i = m * L**2 / 12
    bodies = [RigidBody(f"link{k}", m, [0.01 * i, i, i], position=(k + 0.5) * L * e, orientation=quat) for k in range(n)]
    joints = []
    for k in range(n):
        parent = None if k == 0 else f"link{k - 1}"
        if joint == "revolute":
            joints.append(Revolute(parent, f"link{k}", point=k * L * e, axis=[0.0, 1.0, 0.0]))
        else:
            joints.append(Spherical(parent, f"link{k}", point=k * L * e))
    return MultibodySystem(bodies, joints, gravity=[0.0, 0.0, -9.81])


ROD_LENGTH, BLOCK_GAP = 0.2, 0.05  # m


def rod_body_chain(n_rods: int, n_nodes: int) -> HybridSystem:
    """``n_rods`` DER rods of ``n_nodes`` nodes along x, each welded to the next through a block."""
    rods, blocks, att = [], [], [RodClamp(0, 0)]
    pitch = ROD_LENGTH + BLOCK_GAP
    for k in range(n_rods):
        rod = jaxrod.DERRod.cantilever(n_nodes, ROD_LENGTH, clamped_ends="both", start=(k * pitch, 0.0, 0.0),
                                       youngs_modulus=1e8, density=1000.0, radius=3e-3)
        rods.append(jaxrod.DERModel(rod))
        blocks.append(RigidBody(f"block{k}", 0.05, [1e-5, 1e-5, 1e-5],
                                position=(k * pitch + ROD_LENGTH + 0.5 * BLOCK_GAP, 0.0, 0.0)))
        att.append(RodClamp(k, -1, f"block{k}"))
        if k > 0:
            att.append(RodClamp(k, 0, f"block{k - 1}"))
    return HybridSystem(rods, blocks, attachments=att, gravity=(0.0, 0.0, -9.81))


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def load():
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def timed(fn, *args, repeats):
    """``(compile s, [(wall s, cpu s)] per call, result)`` of ``jax.jit(fn)``: compile is
    lower + compile; calls after one warm-up call."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))
    calls = []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = jax.block_until_ready(compiled(*args))
        calls.append((time.perf_counter() - w, time.process_time() - c))
    return compile_s, calls, out


def med(calls, k, scale):
    v = [c[k] * scale for c in calls]
    return f"{np.median(v):.2f} ({min(v):.2f})"


def bench(system, linear_solver, dt, steps, repeats, rtol, atol):
    solver = jaxrod.NewtonSolver(rtol=rtol, atol=atol, reuse_jacobian=True, linear_solver=linear_solver)

    def run(model):
        traj = jaxrod.simulate(model, dt=dt, n_steps=steps, solver=solver, throw=False)
        return traj.positions[-1], traj.stats

    comp, calls, (_, stats) = timed(run, system, repeats=repeats)
    st = system.initial_state()

    def newton_linear_algebra(model, q):
        # the Newton matrix of a step from rest, without the time-stepping scheme's machinery:
        # M/dt^2-like inertia plus the configuration-dependent parts, through the same residual
        def f(qq):
            return model.residual(qq, 2.0 * (qq - q) / dt, 4.0 * (qq - q) / dt**2, 0.0, st.aux)

        fac = linear_solver.factor(linear_solver.linearize(f, q))
        return linear_solver.solve(fac, -f(q))

    comp_la, calls_la, _ = timed(newton_linear_algebra, system, st.q, repeats=repeats)
    its, jacs = np.asarray(stats.iterations), np.asarray(stats.jacobians)
    return [
        f"{comp:.1f}",
        med(calls, 0, 1e3 / steps),
        med(calls, 1, 1e3 / steps),
        f"{its.mean():.2f}",
        f"{jacs.mean():.2f}",
        f"{np.median([c[1] for c in calls]) * 1e3 / its.sum():.2f}",
        int(np.sum(~np.asarray(stats.converged))),
        med(calls_la, 0, 1e3),
        med(calls_la, 1, 1e3),
        f"{comp_la:.1f}",
    ]


def parts(system, dt, repeats=20):
    """CPU ms (median of ``repeats``) of the pieces of one structured Newton iteration, each
    compiled on its own: residual, Jacobian (``3 m`` JVPs), block LU, one solve."""
    ls = multibody_linear_solver(system, dense_below=0)
    st = system.initial_state()
    q0 = st.q

    def f(q):
        return system.residual(0.5 * (q + q0), (q - q0) / dt, 4.0 * (q - q0) / dt**2, 0.0, st.aux)

    def cpu(fn, *args):
        fn = jax.jit(fn)
        out = jax.block_until_ready(fn(*args))
        ts = []
        for _ in range(repeats):
            c = time.process_time()
            jax.block_until_ready(fn(*args))
            ts.append(time.process_time() - c)
        return 1e3 * float(np.median(ts)), out

    t_res, _ = cpu(f, q0)
    t_lin, op = cpu(lambda q: ls.linearize(f, q), q0)
    t_fac, fac = cpu(lambda o: ls.factor(o), op)
    t_sol, _ = cpu(lambda fa, b: ls.solve(fa, b), fac, q0)
    return [f"{t_res:.3f}", f"{t_lin:.3f}", f"{t_fac:.3f}", f"{t_sol:.3f}"]


HEADER = [
    "bodies", "unknowns", "solver", "blocks x size", "compile [s]", "wall ms/step", "CPU ms/step",
    "Newton it/step", "Jacobians/step", "CPU ms/iteration", "failed", "Jacobian+factor+solve wall [ms]",
    "its CPU [ms]", "its compile [s]",
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10,30,100,300,1000")
    p.add_argument("--dense-max", type=int, default=300, help="largest chain run with the dense solver")
    p.add_argument("--joint", choices=("revolute", "spherical"), default="revolute")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--dt", type=float, default=0.005)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rtol", type=float, default=1e-9)
    p.add_argument("--atol", type=float, default=1e-9)
    p.add_argument("--rod-chains", default="", help="rod-body chains RxN (R rods of N nodes), e.g. 10x10,3x10")
    p.add_argument("--no-parts", action="store_true", help="skip the table of the parts of one iteration")
    p.add_argument("--json", default=None, help="also write the tables to benchmarks/results/NAME")
    a = p.parse_args()
    load_start = load()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "n/a"
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, jaxrod at commit {commit}")
    print(f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, jax {jax.__version__}, "
          f"backend {jax.default_backend()}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"- load average at start (1/5/15 min): {load()}")
    print(f"- chain: {a.joint} joints, dt {a.dt} s, {a.steps} steps, Newton rtol {a.rtol} atol {a.atol}, "
          f"{a.repeats} timed calls (median (min))\n")
    sizes = [int(s) for s in a.sizes.split(",") if s]
    rows = []

    def run_rows(label, system, layout, structured, with_dense):
        choices = [("dense", DenseJacobianSolver())] * with_dense + [("structured", structured)]
        for name, ls in choices:
            n = system.n_coordinates
            blocks = f"{layout.n_blocks} x {layout.block_size}" if name == "structured" else f"1 x {n}"
            rows.append([label, system.n_coordinates, name, blocks]
                        + bench(system, ls, a.dt, a.steps, a.repeats, a.rtol, a.atol))
            print(table(HEADER, rows[-1:]).splitlines()[-1], flush=True)

    for spec in [s for s in a.rod_chains.split(",") if s]:
        n_rods, n_nodes = (int(x) for x in spec.split("x"))
        system = rod_body_chain(n_rods, n_nodes)
        run_rows(f"{n_rods} rods x {n_nodes} nodes + {n_rods}", system, hybrid_layout(system),
                 hybrid_linear_solver(system, dense_below=0), True)
    for n in sizes:
        system = pendulum_chain(n, a.joint)
        run_rows(n, system, multibody_layout(system), multibody_linear_solver(system, dense_below=0), n <= a.dense_max)
    print()
    print(table(HEADER, rows))
    if not a.no_parts and sizes:
        print("\nParts of one structured Newton iteration, CPU ms (median of 20 calls, each piece compiled alone):\n")
        head = ["bodies", "unknowns", "residual", "Jacobian (3m JVPs)", "block LU", "solve"]
        prow = []
        for n in sizes:
            system = pendulum_chain(n, a.joint)
            prow.append([n, system.n_coordinates] + parts(system, a.dt))
            print(table(head, prow[-1:]).splitlines()[-1], flush=True)
        print()
        print(table(head, prow))
    print(f"\n- load average at end (1/5/15 min): {load()}")
    if a.json:
        import json
        import sys

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", a.json)
        with open(path, "w") as f:
            json.dump({
                "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "commit": commit,
                "machine": f"{platform.platform()}, {os.cpu_count()} CPUs", "jax": jax.__version__,
                "load_average_start": load_start, "load_average_end": load(),
                "command": "python benchmarks/hybrid.py " + " ".join(sys.argv[1:]),
                "note": "table cells as printed: 'median (min)' of the timed calls after one warm-up call; "
                        "CPU = process CPU time (all threads), wall = perf_counter",
                "header": HEADER, "rows": rows,
                "parts_header": ["bodies", "unknowns", "residual", "Jacobian (3m JVPs)", "block LU", "solve"],
                "parts_rows": prow if not a.no_parts and sizes else []}, f, indent=1, default=str)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
