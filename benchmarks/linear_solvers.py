"""Timings of the banded Jacobian path (colouring, block LU, solves) against dense LU.

Usage::

    python benchmarks/linear_solvers.py            # main table, N = 25 .. 1600 nodes
    python benchmarks/linear_solvers.py --sweep    # also block size x scan unroll at N = 1600

Problem: n = 4 N degrees of freedom, bandwidth lower = upper = 10, residual
``f(x) = x / h^2 + grad E(x)`` with ``E`` a sum of nonlinear terms over every window of 11
consecutive DOFs (the discrete-elastic-rod stencil), so ``linearize`` is forward-over-reverse
autodiff like the real model. Times are per call after compilation (``block_until_ready``);
the median over repeats, and separately the minimum, because the host may be shared.

OpenBLAS (behind jax's CPU LU) runs single-threaded here unless ``OPENBLAS_NUM_THREADS`` is set:
on a busy 2-core host its spinning worker threads made a 400 x 400 dense LU take 200+ ms instead
of 2 ms, which would fake the dense/banded crossover. The 10 x 10 block LUs are unaffected.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxrod  # noqa: E402, F401  (float64)
from jaxrod.solvers import BandedJacobianSolver, DenseJacobianSolver, linear  # noqa: E402

BAND = 10
WINDOW = BAND + 1


def make_residual(n, seed=0):
    """``f: (n,) -> (n,)`` whose Jacobian has exactly bandwidth 10 on each side."""
    rng = np.random.default_rng(seed)
    a = jnp.asarray(rng.uniform(-1, 1, WINDOW))
    c = jnp.asarray(rng.uniform(-1, 1, WINDOW))

    def energy(x):
        w = jnp.stack([x[d : n - WINDOW + 1 + d] for d in range(WINDOW)], axis=-1)  # (n-10, 11)
        s, t = w @ a, w @ c
        return jnp.sum(jnp.sqrt(1.0 + s**2) + 0.5 * t**2 * (1.0 + 0.1 * jnp.sin(s)))

    grad_e = jax.grad(energy)
    return lambda x: 1e2 * x + grad_e(x)


def timeit(fn, *args, repeats):
    """Compile seconds (lower + compile) and (median, min) seconds per call; also the result."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return (compile_s, float(np.median(times)), float(np.min(times))), out


def repeats_for(n):
    return max(10, min(200, 40000 // n))


def bench_banded(n, solver, repeats):
    # Fresh lambdas: jit caches on function identity, and the sweep patches module constants.
    f = make_residual(n)
    x = jnp.asarray(np.random.default_rng(1).standard_normal(n)) * 0.3
    b = jnp.asarray(np.random.default_rng(2).standard_normal(n))
    res = {}
    res["linearize"], op = timeit(lambda x: solver.linearize(f, x), x, repeats=repeats)
    res["factor"], fac = timeit(lambda op: solver.factor(op), op, repeats=repeats)
    res["solve"], y = timeit(lambda fac, b: solver.solve(fac, b), fac, b, repeats=repeats)
    res["solve_T"], _ = timeit(
        lambda fac, b: solver.solve_transpose(fac, b), fac, b, repeats=repeats
    )
    residual = float(jnp.max(jnp.abs(solver.matvec(op, y) - b)))
    return res, residual


def bench_dense(n, repeats):
    f = make_residual(n)
    solver = DenseJacobianSolver()
    x = jnp.asarray(np.random.default_rng(1).standard_normal(n)) * 0.3
    b = jnp.asarray(np.random.default_rng(2).standard_normal(n))
    res = {}
    res["linearize"], op = timeit(lambda x: solver.linearize(f, x), x, repeats=repeats)
    res["factor"], fac = timeit(lambda op: solver.factor(op), op, repeats=repeats)
    res["solve"], _ = timeit(lambda fac, b: solver.solve(fac, b), fac, b, repeats=repeats)
    return res


BANDED_COLS = ("linearize", "factor", "solve", "solve_T")
DENSE_COLS = ("linearize", "factor", "solve")


def row(cells, widths):
    return " ".join(f"{c:>{w}}" for c, w in zip(cells, widths))


def ms(t):
    return f"{t * 1e3:.3f}"


def print_table(title, rows, stat, per_row):
    """``rows``: (N, n, banded, dense | None) with ``{column: (compile, median, min)}`` dicts."""
    print(f"\n{title}")
    head = ["N", "n", "linearize", "factor", "solve", "solve_T", "lin+fac+sol"]
    head += ["us/row", "fac us/row"] if per_row else []
    head += ["|", "dense lin", "dense LU", "dense sol", "dense tot"]
    widths = [5, 5, 9, 8, 7, 7, 11] + ([6, 10] if per_row else []) + [1, 9, 9, 9, 9]
    print(row(head, widths))
    for N, n, res, dres in rows:
        t = {k: v[stat] for k, v in res.items()}
        total = t["linearize"] + t["factor"] + t["solve"]
        cells = [N, n] + [ms(t[k]) for k in BANDED_COLS] + [ms(total)]
        cells += [f"{total / n * 1e6:.2f}", f"{t['factor'] / n * 1e6:.3f}"] if per_row else []
        cells.append("|")
        if dres:
            d = {k: v[stat] for k, v in dres.items()}
            cells += [ms(d[k]) for k in DENSE_COLS] + [ms(sum(d.values()))]
        else:
            cells += ["-"] * 4
        print(row(cells, widths), flush=True)


def main_table(nodes, dense_max):
    print(f"n = 4 N, lower = upper = {BAND}")
    rows = []
    for N in nodes:
        n = 4 * N
        reps = repeats_for(n)
        res, resid = bench_banded(n, BandedJacobianSolver(BAND, BAND), reps)
        dres = bench_dense(n, max(5, reps // 4)) if n <= dense_max else None
        rows.append((N, n, res, dres))
        # Printed, not asserted: a wrong solve would make the timings meaningless.
        print(f"  N = {N} done (max |J x - b| = {resid:.1e})", flush=True)
    print_table("Median ms per call", rows, 1, per_row=True)
    print_table("Minimum ms per call", rows, 2, per_row=False)
    print("\nCompile (lower + compile), seconds")
    head = ["N", "n", "linearize", "factor", "solve", "solve_T", "|", "dense lin", "dense LU"]
    widths = [5, 5, 9, 8, 7, 7, 1, 9, 9]
    print(row(head + ["dense sol"], widths + [9]))
    for N, n, res, dres in rows:
        cells = [N, n] + [f"{res[k][0]:.2f}" for k in BANDED_COLS] + ["|"]
        cells += [f"{dres[k][0]:.2f}" for k in DENSE_COLS] if dres else []
        print(row(cells, widths + [9]))


def sweep(N):
    """Block size x scan unroll for factor and solve at one size (module constants patched)."""
    n = 4 * N
    print(f"\nSweep at N = {N} (n = {n}): ms per call, median [min]; compile s of factor")
    widths = [3, 6, 8, 8, 8, 8, 8]
    print(row(["m", "unroll", "factor", "[min]", "solve", "[min]", "compile"], widths))
    saved = linear.FACTOR_UNROLL, linear.SOLVE_UNROLL
    try:
        for m in (10, 12, 20):
            for unroll in (1, 2, 4, 8):
                linear.FACTOR_UNROLL = linear.SOLVE_UNROLL = unroll
                res, _ = bench_banded(n, BandedJacobianSolver(BAND, BAND, block_size=m), 30)
                fa, so = res["factor"], res["solve"]
                cells = [m, unroll, ms(fa[1]), ms(fa[2]), ms(so[1]), ms(so[2]), f"{fa[0]:.2f}"]
                print(row(cells, widths), flush=True)
    finally:
        linear.FACTOR_UNROLL, linear.SOLVE_UNROLL = saved


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[25, 50, 100, 200, 400, 800, 1600])
    parser.add_argument("--dense-max", type=int, default=1700, help="largest n for dense LU")
    parser.add_argument("--sweep", action="store_true", help="also sweep block size and unroll")
    parser.add_argument("--sweep-nodes", type=int, default=1600)
    args = parser.parse_args()
    print(
        f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPUs, "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    main_table(args.nodes, args.dense_max)
    if args.sweep:
        sweep(args.sweep_nodes)
