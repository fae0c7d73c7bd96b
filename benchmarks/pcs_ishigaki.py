"""PCS rod model on Ishigaki, Ayusawa & Yamamoto (RA-L 2024): explicit vs implicit (Newmark-beta)
integration, Fig. 7 timings, the silicone and CFRP experiments (spec ``seed003_pcs_cmtm.md`` sec. 6).

Usage::

    python benchmarks/pcs_ishigaki.py                 # tables 1-4 (about 10-15 min on 2 shared cores)
    python benchmarks/pcs_ishigaki.py --tables 1      # silicone only
    python benchmarks/pcs_ishigaki.py --tol-i1 1e-7 --tol-i2 1e-3   # other stand-ins for the paper's eps
    python benchmarks/pcs_ishigaki.py --quick         # smoke test: short runs, 1 repeat, tables 1 and 3 (< 3 min)
    python benchmarks/pcs_ishigaki.py --tables 4      # Jacobian per call: autodiff vs CMTM (about 2-4 min)

Tables, each printed as markdown as soon as it is ready:

1. Silicone cantilever (scene ``pcs-silicone``: L 0.9 m, 3 segments, 18 DOF, 5 x 2 cm stand-in
   section) sagging under gravity for 10 s, the paper's Fig. 7 conditions: E1 (explicit Euler,
   4e-6 s; only a short run, its wall time scaled to 10 s), E2 (explicit, 4e-4 s), explicit at
   4e-3 s (the paper: diverges at once), I1 / I2 (Newmark beta = 1/4, gamma = 1/2 at 4e-3 s with a
   tight / loose Newton tolerance), I-A (``jaxrod.simulate_adaptive``, Newmark with dt in
   [4, 64] ms, both tolerances; the row says "not implemented" on a jaxrod without it). Wall time
   (compile separate), steps, Newton iterations and Jacobians per step, the residual max-norm
   reached, next to the paper's times. Then the root-segment strain agreement of every run with E2
   (the paper's Fig. 6 claim: "no significant differences"), a Newton tolerance sweep (residual
   reached and strain error per tolerance, to map the paper's eps) and the root strain at t = 2 s.
2. ``NewtonSolver(reuse_jacobian=True)`` (chord steps with an old factorisation; the default of
   ``simulate``) against ``reuse_jacobian=False`` (a fresh Jacobian every iteration, the paper's
   plain Newton-Raphson) on I1, I2 and the CFRP C1 run.
3. CFRP leaf-spring stand-in (scene ``pcs-cfrp``: 6 segments, 36 DOF, 0.65 kg, strain offset
   +1 angular / +0.01 linear released at t = 0): backward Euler at 1e-3 s for 10 s next to the
   paper's C1 (60 s), the same at 1e-4 s (C2) and 1e-5 s (C3) over a shorter window, the Newmark
   attempt at 1e-3 / 1e-4 / 1e-5 s (expected to fail: where), explicit Euler at 4e-6 s (the paper:
   diverges at once) and the initial generalised acceleration (the paper's Fig. 9).
4. Newton Jacobian per call on the silicone rod with 3, 6 and 12 segments (``--jac-segments``):
   ``jax.jacfwd`` of the Newmark-staged residual (what ``NewtonSolver`` builds) against the CMTM
   analytic gradients (``jaxrod.models.pcs.cmtm.newmark_jacobian``), against ``jax.jacfwd``
   through ``PCSModel(jacobian="cmtm")``'s custom JVP, and all three of ``d tau / d (q, v, a)``
   (autodiff vs ``cmtm_jacobians``); compile times, mean per call, ratio, agreement.

Newton tolerance. jaxrod's Newton stops when every component of the simplified Newton correction
of the unknown ``q_{n+1}`` (strains, 1/m and -) satisfies ``|corr_i| <= atol + rtol |q_i|``; the
paper stops when the residual of the equation of motion ``|h| < eps`` (eps = 0.001 for I1 and the
CFRP runs, 0.1 for I2; norm unstated). The two are not the same quantity: I1 and I2 are mapped to
``rtol = atol = --tol-i1`` (1e-8) and ``--tol-i2`` (1e-4), and the tables print the residual
max-norm ``|h|_inf`` actually reached at the accepted steps (``SolverStats.residual_norm``, in N m
and N) to compare with eps.

Jacobians: tables 1-3 use ``jax.jacfwd`` through the recursive inverse dynamics (the model's
default, including the mass matrix of the explicit step). Table 4 times one Newton Jacobian per
call against the paper's CMTM analytic gradients (``jaxrod.models.pcs.cmtm``, also selectable with
``PCSModel(jacobian="cmtm")``) for 3, 6 and 12 segments.
The adaptive step of condition I-A is ``jaxrod.simulate_adaptive`` (added in commit 61875cd; a
host-side loop, one compiled step per call), whose first call compiles.

How it measures: per configuration (model, scheme, ``reuse_jacobian``, steps, save interval) one
program is compiled, ``jax.jit(f).lower(...).compile()`` of a function that calls
:func:`jaxrod.simulate` with the model's arrays, the initial state, dt and the tolerances as
arguments (so the tolerances and the dt of C2/C3 and the Newmark attempts share a program); the
explicit runs compile ``simulate_explicit`` (dt static). Run time is the median (and min) of
``--repeats`` calls of the compiled program after one warm-up call, ``jax.block_until_ready``;
a run that fails or diverges, or whose first call takes over 30 s, is timed once. The script
puts its own checkout first on ``sys.path`` (an editable install may point at another one).
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")
# Benchmark the checkout this script lives in, whatever `pip install -e` points at (the header
# prints where jaxrod was imported from).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import argparse
import dataclasses
import math
import platform
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxrod  # (float64)
from _common import cpu_name, note, out  # noqa: E402  (helpers shared by the benchmark scripts)
from jaxrod.models.pcs.explicit import explicit_acceleration, simulate_explicit
from jaxrod.scenes import get_scene

# The paper's Fig. 7 (silicone, 10 s simulated) and sec. V-C (CFRP C1), wall seconds.
PAPER_S = {"E1": 790.0, "E2": 7.9, "I1": 5.6, "I2": 2.6, "I-A": 1.4, "C1": 60.0}
PAPER_EPS = {"I1": 0.001, "I2": 0.1, "C1": 0.001}
PAPER_HW = ("the paper's timings: AMD Ryzen 9 5950X (16 cores / 32 threads, 128 GB), language and thread "
            "count not stated; its explicit method runs the inverse-dynamics calls of the unit vector "
            "method in parallel on several cores. Ours: XLA CPU, these 2 cores, OPENBLAS_NUM_THREADS=1")
DT_E1, DT_E2, DT_I = 4e-6, 4e-4, 4e-3  # silicone time steps [s]
DT_IA_MAX = 0.064  # I-A's largest step [s]
IA_GROW = 3  # simulate_adaptive's default: double dt after this many accepted steps
DT_C = (1e-3, 1e-4, 1e-5)  # CFRP C1, C2, C3 [s]
DT_CFRP_EXPLICIT = 4e-6
SAVE_DT = 4e-3  # silicone frames compared every 4 ms
DIVERGED = 1e3  # |q| (strain minus rest: 1/m or -) above this counts as diverged
SETTLE_TOL = 1e-3  # CFRP settling: max |q(t) - q(T)| below this (strain units)
SLOW_S = 30.0
# Root-segment strain xi = (kx, ky, kz, ex, gy, gz) at t = 2 s from the spec author's prototype
# (spec sec. 6.4; same 5 x 2 cm stand-in, 3 segments; NOT the paper's numbers).
SPEC_T2 = {"implicit (spec prototype)": (0, 4.666, 0, 1.104, 0, -0.180),
           "explicit (spec prototype)": (0, 4.643, 0, 1.113, 0, -0.198)}


def start_table(header):
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))


def row(cells):
    out("| " + " | ".join(str(c) for c in cells) + " |")


def fmt(x, spec=".3g"):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return format(x, spec)


# ---------------------------------------------------------------------------------------------
# compiled programs
# ---------------------------------------------------------------------------------------------
def aot(fn, *args):
    """``(lower_s, compile_s, compiled)`` for ``jax.jit(fn)`` at ``args``."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, compiled


def time_calls(compiled, args, repeats, ok=None):
    """Median and min wall seconds of ``repeats`` calls after a warm-up call, the result and the
    number of timed calls (0: only the first call, timed, because it failed ``ok``, took over
    ``SLOW_S`` or ``repeats`` < 1)."""
    t0 = time.perf_counter()
    res = jax.block_until_ready(compiled(*args))
    first = time.perf_counter() - t0
    if (ok is not None and not ok(res)) or first > SLOW_S or repeats < 1:
        return first, first, res, 0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(np.min(times)), res, repeats


class Implicit:
    """``jaxrod.simulate`` compiled for one model / scheme / ``reuse_jacobian`` / step count / save
    interval; the model's arrays, the initial state, dt and ``rtol = atol`` are arguments."""

    def __init__(self, model, scheme, reuse, n_steps, save_every, max_steps, label):
        self.params, static = eqx.partition(model, eqx.is_array)
        self.n_steps, self.save_every = int(n_steps), int(save_every)
        n, se = self.n_steps, self.save_every

        def run(p, q0, v0, dt, tol):
            solver = jaxrod.NewtonSolver(rtol=tol, atol=tol, max_steps=max_steps, reuse_jacobian=reuse)
            return jaxrod.simulate(eqx.combine(p, static), dt=dt, n_steps=n, scheme=scheme,
                                   state0=jaxrod.State(q0, v0, None), solver=solver, save_every=se, throw=False)

        st = model.initial_state()
        note(f"  compiling {label} ({n} steps) ...")
        self.lower_s, self.compile_s, self.compiled = aot(run, *self.args(st, 1e-3, 1e-8))
        note(f"  ... {self.lower_s + self.compile_s:.1f} s")

    def args(self, state0, dt, tol):
        f = lambda x: jnp.asarray(x, dtype=float)
        return (self.params, f(state0.q), f(state0.v), f(dt), f(tol))

    @property
    def compile_total(self):
        return self.lower_s + self.compile_s

    def measure(self, state0, dt, tol, repeats):
        args = self.args(state0, dt, tol)
        med, mn, traj, n = time_calls(self.compiled, args, repeats, ok=lambda tr: bool(np.all(tr.stats.converged)))
        return summarize_implicit(traj, dt, self.n_steps, med, mn, n)


class Explicit:
    """``simulate_explicit`` (forward Euler) compiled for one model / dt / step count / save interval."""

    def __init__(self, model, dt, n_steps, save_every, label):
        self.params, static = eqx.partition(model, eqx.is_array)
        self.dt, self.n_steps, self.save_every = float(dt), int(n_steps), int(save_every)

        def run(p, q0, v0):
            return simulate_explicit(eqx.combine(p, static), dt=self.dt, n_steps=self.n_steps,
                                     state0=jaxrod.State(q0, v0, None), save_every=self.save_every)

        st = model.initial_state()
        note(f"  compiling {label} ({n_steps} steps) ...")
        self.lower_s, self.compile_s, self.compiled = aot(run, self.params, st.q, st.v)
        note(f"  ... {self.lower_s + self.compile_s:.1f} s")

    @property
    def compile_total(self):
        return self.lower_s + self.compile_s

    def measure(self, state0, repeats):
        args = (self.params, jnp.asarray(state0.q, float), jnp.asarray(state0.v, float))
        med, mn, (q, _v), n = time_calls(self.compiled, args, repeats,
                                        ok=lambda r: divergence(np.asarray(r[0])) is None)
        q = np.asarray(q)
        k = divergence(q)
        return {"wall": med, "wall_min": mn, "calls": n, "q": q, "steps": self.n_steps, "dt": self.dt,
                "simulated": self.n_steps * self.dt,
                "diverged_step": None if k is None else k * self.save_every}


def divergence(q):
    """First saved frame with a non-finite value or ``|q| > DIVERGED``, or None."""
    q = np.asarray(q)
    absq = np.where(np.isfinite(q), np.abs(q), np.inf)
    bad = np.flatnonzero(absq.max(axis=1) > DIVERGED)
    return int(bad[0]) if bad.size else None


def run_cell(r):
    """``median (min)`` of the timed calls, or the single call with how it was timed."""
    if r["calls"] > 1:
        return f"{r['wall']:.3f} ({r['wall_min']:.3f})"
    if r["calls"] == 1:
        return f"{r['wall']:.3f} (1 call after warm-up)"
    return f"{r['wall']:.3f} (1 call)"


def g2(x):
    return "n/a" if not math.isfinite(x) else f"{x:.2g}"


def summarize_implicit(traj, dt, n_steps, med, mn, calls):
    s = traj.stats
    conv = np.asarray(s.converged)
    its, jacs, rn = np.asarray(s.iterations), np.asarray(s.jacobians), np.asarray(s.residual_norm)
    bad = np.flatnonzero(~conv)
    ok = conv & np.isfinite(rn)
    return {
        "wall": med, "wall_min": mn, "calls": calls, "steps": n_steps, "dt": dt, "simulated": n_steps * dt,
        "its": float(its.mean()), "its_max": int(its.max()), "jacs": float(jacs.mean()), "jac_total": int(jacs.sum()),
        "converged": bool(conv.all()), "first_fail": int(bad[0]) if bad.size else None, "n_fail": int(bad.size),
        "res_med": float(np.median(rn[ok])) if ok.any() else math.nan,
        "res_max": float(rn[ok].max()) if ok.any() else math.nan,
        "res_first": float(rn[0]), "q": np.asarray(traj.q), "traj": traj,
    }


# ---------------------------------------------------------------------------------------------
# machine
# ---------------------------------------------------------------------------------------------
def git_describe():
    import subprocess

    root = ROOT
    try:
        head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %s"], capture_output=True, check=False,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "jaxrod"], capture_output=True,
                               check=False, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    if not head:
        return "unknown commit"
    return f"commit {head[:72]}" + (" (+ uncommitted changes in jaxrod/)" if dirty else "")


def machine_header():
    dev = jax.devices()[0]
    try:
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    out("# jaxrod PCS benchmarks (Ishigaki, Ayusawa & Yamamoto, RA-L 2024)")
    out()
    out(f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    out(f"- machine: {platform.platform()}, CPU {cpu_name()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}")
    out(f"- jax {jax.__version__}, device {dev.platform}: {dev.device_kind}, x64 {jax.config.jax_enable_x64}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    out(f"- jaxrod {jaxrod.__version__} imported from {os.path.dirname(os.path.abspath(jaxrod.__file__))}, "
        f"checkout at {git_describe()}")
    out(f"- load average at start (1/5/15 min): {load}")
    out(f"- command: python {' '.join(sys.argv)}")
    out(f"- {PAPER_HW}")
    out()


# ---------------------------------------------------------------------------------------------
# shared runs (tables 1 and 2 share the silicone runs, 2 and 3 the CFRP C1 run)
# ---------------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args):
        self.args = args
        self.programs, self.results = {}, {}
        self.adaptive_compiled = False
        self.sil = get_scene("pcs-silicone")
        self.cfrp = get_scene("pcs-cfrp")
        self.n_impl = round(args.duration / DT_I)
        self.n_cfrp = round(args.cfrp_duration / DT_C[0])
        if self.n_cfrp % 10:
            raise SystemExit("--cfrp-duration must be a multiple of 10 ms")

    def program(self, key, make):
        if key not in self.programs:
            self.programs[key] = make()
        return self.programs[key]

    def sil_implicit(self, cond, reuse):
        key = ("sil", cond, reuse)
        if key not in self.results:
            m = self.sil.model
            prog = self.program(("sil-nm", reuse), lambda: Implicit(
                m, jaxrod.NewmarkBeta(), reuse, self.n_impl, 1, self.args.max_steps,
                f"silicone Newmark, reuse_jacobian={reuse}"))
            tol = self.args.tol_i1 if cond == "I1" else self.args.tol_i2
            note(f"  running silicone {cond}, reuse_jacobian={reuse} ...")
            r = prog.measure(m.initial_state(), DT_I, tol, self.args.repeats)
            r["compile"], r["tol"] = prog.compile_total, tol
            self.results[key] = r
        return self.results[key]

    def cfrp_c(self, dt, reuse=True):
        key = ("cfrp", dt, reuse)
        if key not in self.results:
            m = self.cfrp.model
            prog = self.program(("cfrp-be", reuse), lambda: Implicit(
                m, jaxrod.BackwardEuler(), reuse, self.n_cfrp, 10, self.args.max_steps,
                f"CFRP backward Euler, reuse_jacobian={reuse}"))
            note(f"  running CFRP backward Euler dt {dt:g}, reuse_jacobian={reuse} ...")
            r = prog.measure(self.cfrp.state0, dt, self.args.tol_i1, self.args.repeats if dt == DT_C[0] else 0)
            r["compile"], r["tol"] = prog.compile_total, self.args.tol_i1
            self.results[key] = r
        return self.results[key]


# ---------------------------------------------------------------------------------------------
# table 1: silicone
# ---------------------------------------------------------------------------------------------
def root_agreement(q, ref, n_frames):
    """Max |q - ref| over the first ``n_frames`` frames of the root segment's angular (0:3) and
    linear (3:6) strains, and which component."""
    d = np.abs(q[:n_frames, :6] - ref[:n_frames, :6])
    names = ("kx", "ky", "kz", "ex", "gy", "gz")
    ia, il = int(np.argmax(d[:, :3].max(0))), 3 + int(np.argmax(d[:, 3:].max(0)))
    return float(d[:, :3].max()), names[ia], float(d[:, 3:].max()), names[il]


def table1(args, bench):
    sc = bench.sil
    T = bench.n_impl * DT_I
    n_e2 = bench.n_impl * 10
    n_e1 = round(args.e1_duration / DT_E1) // 1000 * 1000
    if n_e1 < 1000:
        raise SystemExit("--e1-duration must be >= 4 ms")
    out(f"## Table 1: silicone cantilever (pcs-silicone, 3 segments, 18 DOF), {T:g} s simulated (paper: 10 s, Fig. 7)")
    out()
    out(f"Explicit = forward Euler (`simulate_explicit`: `qdd = M^-1 (tau_int - b)` per step, `M` by `jax.jacfwd` of "
        "the inverse dynamics over the accelerations, i.e. the unit vector method in one batched pass, LU solve). "
        f"Implicit = `jaxrod.simulate` with `NewmarkBeta()` (beta 1/4, gamma 1/2), `NewtonSolver(rtol = atol = tol, "
        f"max_steps = {args.max_steps}, reuse_jacobian=True)` (simulate's default Newton mode), Jacobian of the "
        "residual by `jax.jacfwd` through the recursive inverse dynamics (the paper's CMTM analytic gradients are "
        f"not implemented). Tolerance mapping (see the module docstring): I1 (paper eps 0.001) -> tol "
        f"{args.tol_i1:g}, I2 (eps 0.1) -> tol {args.tol_i2:g} on the Newton correction of q; column "
        "'max-norm h' is the residual actually left at the accepted steps [N m, N], median (max). "
        f"E1 runs {n_e1 * DT_E1:g} s only ({n_e1} steps); its 10 s figure is that wall time x "
        f"{10.0 / (n_e1 * DT_E1):.4g}. Run: median (min) of {args.repeats} calls of the compiled program after a "
        "warm-up call; per 10 s = run x 10 s / simulated. "
        f"Diverged = a non-finite strain or |q| > {DIVERGED:g}. "
        + ("I-A: `jaxrod.simulate_adaptive` (host-side loop over one compiled Newmark step; a step whose Newton "
           f"solve fails is retried at half dt, dt doubles after {IA_GROW} accepted steps; `reuse_jacobian` is "
           "forced off there), dt in [4, 64] ms as the paper, with both tolerances (the paper does not give I-A's "
           "eps); its compile is estimated as first call minus the median of the later calls. "
           if hasattr(jaxrod, "simulate_adaptive") else
           "I-A (adaptive dt in [4, 64] ms) is not implemented in this jaxrod (fixed steps only). ")
        + PAPER_HW[0].upper() + PAPER_HW[1:] + ".")
    out()
    header = ["cond.", "method", "dt [s]", "simulated [s]", "steps", "compile [s]", "run [s] median (min)",
              "per 10 s [s]", "us/step", "Newton it/step (max)", "Jacobians/step (total)", "all converged",
              "max-norm h median (max)", "paper 10 s [s]", "paper / ours"]
    start_table(header)

    def paper_cells(cond, per10):
        p = PAPER_S.get(cond)
        if p is None:
            return ["-", "-"]
        return [f"{p:g}", f"{p / per10:.2f}x" if per10 and math.isfinite(per10) else "n/a"]

    res = {}
    # E1 (short), E2, explicit at 4e-3
    m = sc.model
    st0 = m.initial_state()
    for cond, dt, n, se in (("E1", DT_E1, n_e1, 1000), ("E2", DT_E2, n_e2, 10), ("E@4ms", DT_I, bench.n_impl, 1)):
        prog = Explicit(m, dt, n, se, f"silicone explicit dt {dt:g}")
        note(f"  running silicone {cond} ...")
        r = prog.measure(st0, args.repeats)
        r["compile"] = prog.compile_total
        r["save_every"] = se
        res[cond] = r
        per10 = r["wall"] * 10.0 / r["simulated"]
        if r["diverged_step"] is not None:
            k = r["diverged_step"]
            status = f"**diverged** by step {k} (t = {k * dt:.3g} s)"
            run = run_cell(r)
            per10_s, us = "n/a", "n/a"
        else:
            status = "stable"
            run = run_cell(r)
            per10_s = f"{per10:.3g}" + (" (extrapolated)" if cond == "E1" else "")
            us = f"{1e6 * r['wall'] / n:.1f}"
        label = cond if cond != "E@4ms" else "explicit at I's dt"
        row([label, f"explicit Euler, {status}", f"{dt:g}", f"{r['simulated']:g}", n, f"{r['compile']:.1f}", run,
             per10_s, us, "-", "-", "-", "-"]
            + (["diverges at once (paper)", "-"] if cond == "E@4ms" else paper_cells(cond, per10)))
    for cond in ("I1", "I2"):
        r = bench.sil_implicit(cond, True)
        res[cond] = r
        per10 = r["wall"] * 10.0 / r["simulated"]
        conv = "yes" if r["converged"] else f"**no**: {r['n_fail']} steps, first {r['first_fail']}"
        row([cond, f"Newmark, tol {r['tol']:g} (paper eps {PAPER_EPS[cond]:g})", f"{DT_I:g}", f"{r['simulated']:g}",
             r["steps"], f"{r['compile']:.1f}", run_cell(r), f"{per10:.3g}",
             f"{1e6 * r['wall'] / r['steps']:.1f}", f"{r['its']:.2f} ({r['its_max']})", f"{r['jacs']:.3f} ({r['jac_total']})", conv,
             f"{g2(r['res_med'])} ({g2(r['res_max'])})"] + paper_cells(cond, per10))
    if hasattr(jaxrod, "simulate_adaptive"):
        for tol in (args.tol_i1, args.tol_i2):
            r = adaptive_run(args, bench, tol)
            res[f"I-A {tol:g}"] = r
            per10 = r["wall"] * 10.0 / r["simulated"]
            dts = r["dts"]
            conv = "yes" if r["converged"] else "**no** (stopped at dt_min)"
            row([f"I-A (tol {tol:g})",
                 (f"`simulate_adaptive`, Newmark, dt in [{DT_I:g}, {DT_IA_MAX:g}] (dt median {np.median(dts):g}, "
                  f"{np.count_nonzero(np.isclose(dts, DT_IA_MAX))}/{dts.size} steps at the maximum)"),
                 f"{dts.min():g}-{dts.max():g}", f"{r['simulated']:g}", dts.size,
                 f"~{r['compile']:.1f}" if math.isfinite(r["compile"]) else "(shared)", run_cell(r),
                 f"{per10:.3g}", f"{1e6 * r['wall'] / dts.size:.1f}", f"{r['its']:.2f} ({r['its_max']})",
                 f"{r['jacs']:.3f} ({r['jac_total']})", conv, f"{g2(r['res_med'])} ({g2(r['res_max'])})"]
                + paper_cells("I-A", per10))
    else:
        row(["I-A", "adaptive Newmark, dt in [0.004, 0.064]: **not implemented** in this jaxrod", "-", "-", "-", "-",
             "-", "-", "-", "-", "-", "-", "-", f"{PAPER_S['I-A']:g}", "-"])
    out()
    e2, i1, i2 = res["E2"], res["I1"], res["I2"]
    if e2["diverged_step"] is None:
        ratios = [f"E2 / I1 = {e2['wall'] / i1['wall']:.2f} (paper {PAPER_S['E2'] / PAPER_S['I1']:.2f})",
                  f"E2 / I2 = {e2['wall'] / i2['wall']:.2f} (paper {PAPER_S['E2'] / PAPER_S['I2']:.2f})",
                  f"I1 / I2 = {i1['wall'] / i2['wall']:.2f} (paper {PAPER_S['I1'] / PAPER_S['I2']:.2f})"]
        e1_10 = res["E1"]["wall"] * 10.0 / res["E1"]["simulated"]
        e2_10 = e2["wall"] * 10.0 / e2["simulated"]
        ratios.append(f"E1 / E2 (per 10 s) = {e1_10 / e2_10:.0f} (paper {PAPER_S['E1'] / PAPER_S['E2']:.0f})")
        out("Ratios of run times: " + "; ".join(ratios) + ".")
        out()

    # agreement of the root-segment strains with E2 on the 4 ms grid
    out(f"Root-segment strain agreement with E2 (frames every {SAVE_DT * 1e3:g} ms; q = strain minus rest: "
        "angular kx, ky, kz [1/m], linear ex, gy, gz [-]). The paper's Fig. 6 shows E1, E2, I1, I2 'without "
        "significant differences' (no numbers).")
    out()
    ref = e2["q"]  # E2 frames every 10 steps = 4 ms
    rng = np.ptp(ref[:, :6], axis=0)
    start_table(["run", "window [s]", "max abs diff angular [1/m] (component)", "max abs diff linear [-] (component)",
                 "E2 range over the window: ky [1/m], ex [-]"])
    pairs = [("I1 vs E2", i1["q"], None), ("I2 vs E2", i2["q"], None), ("E1 vs E2", res["E1"]["q"], None),
             ("I1 vs I2", i1["q"], i2["q"])]
    for key, r in res.items():
        if key.startswith("I-A"):
            # compare at the adaptive run's own times (all multiples of 4 ms) on E2's frames
            idx = np.rint(r["times"] / SAVE_DT).astype(int)
            keep = idx < len(ref)
            da, ca, dl, cl = root_agreement(r["q"][keep], ref[idx[keep]], int(keep.sum()))
            r_w = np.ptp(ref[: idx[keep].max() + 1, :6], axis=0)
            extra = (f"{da:.3g} ({ca})", f"{dl:.3g} ({cl})", f"{r_w[1]:.3g}, {r_w[3]:.3g}")
            pairs.append((f"{key.replace('I-A ', 'I-A (tol ')}) vs E2, at its {int(keep.sum())} step times",
                          None, extra))
    for name, q, other in pairs:
        if q is None:
            row([name, f"{(res['E2']['q'].shape[0] - 1) * SAVE_DT:g}", *other])
            continue
        base = ref if other is None else other
        n = min(len(q), len(base))
        if divergence(q[:n]) is not None or divergence(base[:n]) is not None:
            row([name, "-", "diverged", "-", "-"])
            continue
        da, ca, dl, cl = root_agreement(q, base, n)
        r_w = np.ptp(ref[:n, :6], axis=0)
        row([name, f"{(n - 1) * SAVE_DT:g}", f"{da:.3g} ({ca})", f"{dl:.3g} ({cl})", f"{r_w[1]:.3g}, {r_w[3]:.3g}"])
    out()
    if args.tol_sweep:
        tol_sweep(args, bench, ref)
    k2 = round(2.0 / SAVE_DT)
    if len(ref) > k2:
        out("Root-segment strain xi = q + xi* (kx, ky, kz [1/m], ex, gy, gz [-]) at t = 2 s, next to the spec "
            "author's prototype (spec sec. 6.4, same 5 x 2 cm stand-in; not the paper's numbers). "
            f"E2's full-run range: ky {rng[1]:.3g} 1/m, ex {rng[3]:.3g}.")
        out()
        start_table(["run", "kx", "ky", "kz", "ex", "gy", "gz"])
        rest = np.asarray(sc.model.rod.rest_strain)[0]
        for name, q in (("E2", ref), ("I1", i1["q"]), ("I2", i2["q"])):
            row([name] + [f"{x:.4g}" for x in q[k2, :6] + rest])
        for name, xi in SPEC_T2.items():
            row([name] + [f"{x:g}" for x in xi])
        out()
    return res


def tol_sweep(args, bench, ref):
    """Newmark at 4 ms with several tolerances on the warm I1/I2 program (one call each)."""
    out("Newton tolerance sweep (Newmark, 4 ms, reuse_jacobian=True, the I1/I2 program, one call each after its "
        "warm-up): what each tolerance on the correction of q buys in residual (the paper's eps: 0.001 for I1, 0.1 "
        f"for I2, norm unstated) and in root-segment strain. Reference for the last column: tol {min(args.tol_sweep):g}.")
    out()
    prog = bench.programs[("sil-nm", True)]
    st0 = bench.sil.model.initial_state()
    runs = []
    for tol in sorted(args.tol_sweep):
        note(f"  running silicone Newmark tol {tol:g} ...")
        runs.append((tol, prog.measure(st0, DT_I, tol, 0)))
    tight = runs[0][1]["q"]
    start_table(["tol", "run [s]", "per 10 s [s]", "Newton it/step (max)", "Jacobians/step (total)", "all converged",
                 "max-norm h median (max)", "max abs diff ky vs E2 [1/m]", "max abs diff ky vs tightest [1/m]"])
    for tol, r in runs:
        q = r["q"]
        n = min(len(q), len(ref))
        ok = divergence(q) is None
        d_e2 = float(np.max(np.abs(q[:n, 1] - ref[:n, 1]))) if ok else math.nan
        d_t = float(np.max(np.abs(q[:, 1] - tight[:, 1]))) if ok else math.nan
        row([f"{tol:g}", f"{r['wall']:.3f}", f"{r['wall'] * 10.0 / r['simulated']:.3g}",
             f"{r['its']:.2f} ({r['its_max']})", f"{r['jacs']:.3f} ({r['jac_total']})", "yes" if r["converged"] else f"**no** ({r['n_fail']})",
             f"{g2(r['res_med'])} ({g2(r['res_max'])})", fmt(d_e2), fmt(d_t)])
    out()


def adaptive_run(args, bench, tol):
    """Silicone with ``jaxrod.simulate_adaptive`` (Newmark, dt in [4, 64] ms): first call (with
    compile) then ``repeats`` timed calls."""
    m = bench.sil.model
    f = lambda x: jnp.asarray(x, dtype=float)  # traced tolerances: no recompile per tol
    solver = jaxrod.NewtonSolver(rtol=f(tol), atol=f(tol), max_steps=args.max_steps)
    T = bench.n_impl * DT_I

    def call():
        tr = jaxrod.simulate_adaptive(m, duration=T, dt=DT_I, dt_min=DT_I, dt_max=DT_IA_MAX, scheme=jaxrod.NewmarkBeta(),
                                      solver=solver, grow_after=IA_GROW, throw=False)
        return jax.block_until_ready(tr)

    note(f"  running silicone I-A, tol {tol:g} ...")
    t0 = time.perf_counter()
    tr = call()
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        tr = call()
        times.append(time.perf_counter() - t0)
    med = float(np.median(times)) if times else first
    r = summarize_implicit(tr, DT_I, int(np.asarray(tr.dt).size), med, float(np.min(times)) if times else first,
                           len(times))
    r["dts"] = np.asarray(tr.dt)
    r["times"] = np.asarray(tr.times)
    r["simulated"] = float(r["times"][-1] - r["times"][0])
    # the compiled step is shared by later calls (tolerances are traced): only the first run compiles
    r["compile"] = first - med if times and not bench.adaptive_compiled else math.nan
    bench.adaptive_compiled = True
    return r


# ---------------------------------------------------------------------------------------------
# table 2: Jacobian reuse
# ---------------------------------------------------------------------------------------------
def table2(args, bench):
    out("## Table 2: Newton with Jacobian reuse (chord steps) vs a fresh Jacobian every iteration")
    out()
    out("`reuse_jacobian=True`: the factorisation of an earlier iteration or step is kept while the simplified "
        "Newton corrections contract (simulate's default); `False`: a new `jax.jacfwd` Jacobian and LU at every "
        "iteration (the paper's Newton-Raphson). Same compiled program per mode for I1 and I2 (the tolerance is an "
        f"argument). Run: median (min) of {args.repeats} calls (CFRP: one call when the first takes > {SLOW_S:g} s).")
    out()
    start_table(["case", "reuse_jacobian", "dt [s]", "simulated [s]", "compile [s]", "run [s] median (min)",
                 "ms/step", "Newton it/step (max)", "Jacobians/step (total)", "all converged", "max-norm h median (max)",
                 "fresh / reuse"])
    cases = [(f"silicone {c} (tol {getattr(args, 'tol_i1' if c == 'I1' else 'tol_i2'):g})",
              lambda c=c, reuse=True: bench.sil_implicit(c, reuse)) for c in ("I1", "I2")]
    cases.append((f"CFRP C1 stand-in, backward Euler (tol {args.tol_i1:g})",
                   lambda reuse=True: bench.cfrp_c(DT_C[0], reuse)))
    for name, get in cases:
        rs = {}
        for reuse in (True, False):
            rs[reuse] = r = get(reuse=reuse)
            conv = "yes" if r["converged"] else f"**no** (first {r['first_fail']})"
            ratio = f"{rs[False]['wall'] / rs[True]['wall']:.2f}" if not reuse else "-"
            row([name, reuse, f"{r['dt']:g}", f"{r['simulated']:g}", f"{r['compile']:.1f}", run_cell(r),
                 f"{1e3 * r['wall'] / r['steps']:.3f}", f"{r['its']:.2f} ({r['its_max']})", f"{r['jacs']:.3f} ({r['jac_total']})", conv,
                 f"{g2(r['res_med'])} ({g2(r['res_max'])})", ratio])
    out()


# ---------------------------------------------------------------------------------------------
# table 3: CFRP
# ---------------------------------------------------------------------------------------------
def settling_time(q, frame_dt):
    """First time after which max_i |q_i(t) - q_i(T)| stays below SETTLE_TOL."""
    d = np.max(np.abs(q - q[-1]), axis=1)
    above = np.flatnonzero(d > SETTLE_TOL)
    return 0.0 if not above.size else (above[-1] + 1) * frame_dt


def table3(args, bench):
    sc = bench.cfrp
    m = sc.model
    st0 = sc.state0
    n = bench.n_cfrp
    out(f"## Table 3: CFRP leaf-spring stand-in (pcs-cfrp, 6 segments, 36 DOF), strain offset released, "
        f"{n * DT_C[0]:g} s at 1 ms (paper C1: 10 s)")
    out()
    out("Stand-in geometry (the paper's comes from another paper): L 0.5 m, 6 x 1.2 cm, 0.652 kg, J-shaped rest "
        "curvature; E 61.635 GPa, mu 20.5 MPa s; base = ground contact; gravity on. Initial state: +1 on every "
        "angular and +0.01 on every linear strain of every segment, at rest. The paper runs C1-C3 with Newmark "
        "(eps 0.001); jaxrod's `NewmarkBeta()` with its consistent start (a0 from the equations, RMS ~1.6e10) fails here "
        "(below; the pcs-cfrp scene runs `NewmarkBeta(start='rest')` since issue 12, not timed here), so C1-C3 use "
        "`BackwardEuler()` ("
        f"first order, L-stable, numerically damped) with tol {args.tol_i1:g} and reuse_jacobian=True. C2 and C3 "
        f"reuse C1's compiled {n}-step program, so they cover {n * DT_C[1]:g} s and {n * DT_C[2]:g} s, timed once; "
        "their 'per 10 s' is extrapolated linearly. "
        + (f"Newmark attempts: {args.newmark_steps} steps each, one compiled program. " if args.cfrp_newmark else
           "Newmark attempts skipped (--quick or --no-cfrp-newmark). ")
        + "Jacobians by `jax.jacfwd` (no CMTM gradients).")
    out()
    a0 = np.asarray(eqx.filter_jit(explicit_acceleration)(m, jnp.asarray(st0.q, float), jnp.asarray(st0.v, float)))
    header = ["cond.", "method", "dt [s]", "simulated [s]", "steps", "compile [s]", "run [s] median (min)",
              "per 10 s [s]", "ms/step", "Newton it/step (max)", "Jacobians/step (total)", "all converged",
              "max-norm h median (max)", "paper"]
    start_table(header)
    res = {}
    for cond, dt in zip(("C1", "C2", "C3"), DT_C):
        if cond != "C1" and not args.cfrp_small_dt:
            continue
        r = bench.cfrp_c(dt, True)
        res[cond] = r
        per10 = r["wall"] * 10.0 / r["simulated"]
        conv = "yes" if r["converged"] else f"**no**: {r['n_fail']} steps, first {r['first_fail']}"
        paper = (f"{PAPER_S['C1']:g} s (Newmark, eps 0.001); paper / ours {PAPER_S['C1'] / per10:.2f}x"
                 if cond == "C1" else "no time given")
        row([cond + ("" if cond == "C1" else " (short)"), "backward Euler", f"{dt:g}", f"{r['simulated']:g}",
             r["steps"], f"{r['compile']:.1f}", run_cell(r),
             f"{per10:.3g}" + ("" if cond == "C1" else " (extrapolated)"), f"{1e3 * r['wall'] / r['steps']:.3f}",
             f"{r['its']:.2f} ({r['its_max']})", f"{r['jacs']:.3f} ({r['jac_total']})", conv,
             f"{g2(r['res_med'])} ({g2(r['res_max'])})", paper])
    # Newmark attempts (one program; dt is an argument)
    for cond, dt in zip(("C1", "C2", "C3"), DT_C) if args.cfrp_newmark else ():
        nm = bench.program(("cfrp-nm", True), lambda: Implicit(m, jaxrod.NewmarkBeta(), True, args.newmark_steps, 1,
                                                               args.max_steps, "CFRP Newmark"))
        note(f"  running CFRP Newmark dt {dt:g} ...")
        r = nm.measure(st0, dt, args.tol_i1, 0)
        q = r["q"]
        k = divergence(q)
        if r["converged"]:
            status = "converged at every step"
        else:
            status = (f"**fails from step {r['first_fail'] + 1}** ({r['n_fail']}/{r['steps']} steps not converged; "
                      f"residual max-norm after step 1: {r['res_first']:.2g}"
                      + (f"; max abs q {np.nanmax(np.abs(q[k])):.2g} at step {k}" if k is not None else "") + ")")
        row([cond + " Newmark", f"Newmark beta 1/4, gamma 1/2: {status}", f"{dt:g}", f"{r['simulated']:g}",
             r["steps"], f"{nm.compile_total:.1f}", run_cell(r), "n/a", "n/a",
             f"{r['its']:.2f} ({r['its_max']})", f"{r['jacs']:.3f} ({r['jac_total']})", "yes" if r["converged"] else "no",
             f"{g2(r['res_med'])} ({g2(r['res_max'])})", "runs (Newmark, eps 0.001)"])
    # explicit
    ne = args.cfrp_explicit_steps
    ex = Explicit(m, DT_CFRP_EXPLICIT, ne, 1, "CFRP explicit")
    note("  running CFRP explicit ...")
    r = ex.measure(st0, 0)
    k = r["diverged_step"]
    status = f"**diverged** by step {k} (t = {k * DT_CFRP_EXPLICIT:.3g} s)" if k is not None else "stable"
    row(["explicit", f"explicit Euler, {status}", f"{DT_CFRP_EXPLICIT:g}", f"{r['simulated']:g}", ne,
         f"{ex.compile_total:.1f}", run_cell(r), "n/a", "n/a", "-", "-", "-", "-",
         "diverges at once (paper)"])
    out()
    out(f"Initial generalised acceleration (`M^-1 (tau_int - b)` at the offset state; the paper's Fig. 9 plots its "
        f"RMS, values not given): RMS {np.sqrt(np.mean(a0 ** 2)):.3g}, max abs {np.max(np.abs(a0)):.3g} "
        "(1/(m s^2) and 1/s^2).")
    c1 = res["C1"]
    if c1["converged"]:
        q = c1["q"]
        frame_dt = 10 * DT_C[0]
        ts = settling_time(q, frame_dt)
        k1 = min(len(q) - 1, round(0.1 / frame_dt))
        out(f"C1 relaxation: max abs q = {np.max(np.abs(q[0])):.3g} at t = 0, {np.max(np.abs(q[k1])):.3g} at t = "
            f"{k1 * frame_dt:g} s, {np.max(np.abs(q[-1])):.3g} at t = {(len(q) - 1) * frame_dt:g} s (gravity sag); "
            f"settled (max abs(q(t) - q(end)) < {SETTLE_TOL:g}) from t = {ts:.3g} s.")
    lines = []
    for cond in ("C2", "C3"):
        if cond not in res or not res[cond]["converged"] or not c1["converged"]:
            continue
        qc = res[cond]["q"]
        stride = round(DT_C[0] / res[cond]["dt"])  # both save every 10 steps
        sub = qc[::stride]
        nn = min(len(sub), len(c1["q"]))
        da, ca, dl, cl = root_agreement(sub, c1["q"], nn)
        lines.append(f"{cond} vs C1 over {(nn - 1) * 10 * DT_C[0]:g} s: max abs diff {da:.3g} 1/m ({ca}), "
                     f"{dl:.3g} ({cl})")
    if lines:
        out("Grounded-segment strain agreement (paper: C1-C3 'nearly the same'; frames every 10 ms): "
            + "; ".join(lines) + ".")
    out()
    return res


# ---------------------------------------------------------------------------------------------
# table 4: Newton Jacobian, autodiff (jax.jacfwd) vs the CMTM analytic gradients
# ---------------------------------------------------------------------------------------------
JAC_SEGMENTS = (3, 6, 12)  # silicone rod (L 0.9 m, 5 x 2 cm) with 3 (the paper's), 6 and 12 segments
JAC_MIN_S = 1.0  # time each Jacobian for at least this long (and at least JAC_MIN_CALLS calls)
JAC_MIN_CALLS = 20


def mean_call_s(compiled, args, min_s=JAC_MIN_S, min_calls=JAC_MIN_CALLS):
    """Mean wall seconds per call of ``compiled(*args)`` after 2 warm-up calls (batches of calls
    until ``min_s`` and ``min_calls`` are both reached), and the number of timed calls."""
    for _ in range(2):
        jax.block_until_ready(compiled(*args))
    calls, total = 0, 0.0
    while total < min_s or calls < min_calls:
        batch = max(1, min(1000, calls or 5))
        t0 = time.perf_counter()
        for _ in range(batch):
            res = compiled(*args)
        jax.block_until_ready(res)
        total += time.perf_counter() - t0
        calls += batch
    return total / calls, calls


def jacobian_programs(model, dt, beta, gamma):
    """The Jacobian programs of table 4 for ``model``, each ``(name, fn, params)``; ``fn`` takes
    the model's arrays ``params``, ``q_{n+1}`` and the Newmark history.

    * ``autodiff Newton``: what ``NewtonSolver`` builds for ``jaxrod.simulate`` with Newmark:
      ``jax.jacfwd`` (6 n forward-mode passes) of the staged residual with respect to ``q_{n+1}``;
    * ``CMTM Newton``: the same matrix from :func:`jaxrod.models.pcs.cmtm.newmark_jacobian`
      (eq. 28; divided by ``beta dt^2`` for the unknown ``q_{n+1}``);
    * ``custom JVP``: ``jax.jacfwd`` of the staged residual of ``PCSModel(jacobian="cmtm")`` (the
      CMTM Jacobians through the custom JVP, i.e. what ``simulate`` uses with that option);
    * ``autodiff all three`` / ``CMTM all three``: ``d tau / d (q, v, a)`` of the generalised
      forces (18 n passes) vs :func:`~jaxrod.models.pcs.cmtm.cmtm_jacobians`.
    """
    from jaxrod.models.pcs import cmtm

    scheme = jaxrod.NewmarkBeta(beta, gamma)
    params, static = eqx.partition(model, eqx.is_array)

    def staged(m, qn, hist):
        qs, vs, acc, _ = scheme.stage(qn, hist, dt)
        return qs, vs, acc

    def ad_newton(p, qn, hist):
        m = eqx.combine(p, static)
        return jax.jacfwd(lambda x: m.residual(*staged(m, x, hist), 0.0, None))(qn)

    def cmtm_newton(p, qn, hist):
        m = eqx.combine(p, static)
        return cmtm.newmark_jacobian(m, *staged(m, qn, hist), dt, beta, gamma) / (beta * dt * dt)

    def custom_jvp(p, qn, hist):
        m = eqx.combine(p, static_cmtm)
        return jax.jacfwd(lambda x: m.residual(*staged(m, x, hist), 0.0, None))(qn)

    def ad_all(p, qn, hist):
        m = eqx.combine(p, static)
        return jax.jacfwd(m.generalized_forces, argnums=(0, 1, 2))(*staged(m, qn, hist))

    def cmtm_all(p, qn, hist):
        m = eqx.combine(p, static)
        return cmtm.cmtm_jacobians(m, *staged(m, qn, hist))

    params_cmtm, static_cmtm = eqx.partition(dataclasses.replace(model, jacobian="cmtm"), eqx.is_array)
    return [("autodiff Newton", ad_newton, params), ("CMTM Newton", cmtm_newton, params),
            ("custom JVP", custom_jvp, params_cmtm), ("autodiff all three", ad_all, params),
            ("CMTM all three", cmtm_all, params)]


def table4(args):
    from jaxrod.scenes.pcs import pcs_silicone

    out("## Table 4: Newton Jacobian per call, autodiff (`jax.jacfwd`) vs the CMTM analytic gradients")
    out()
    out("Silicone rod (L 0.9 m, 5 x 2 cm, gravity, all 6 modes) with n segments at a random sagging-size state "
        "(curvatures ~3 1/m, strains ~5 %, rates ~1, Newmark history), Newmark beta = 1/4, gamma = 1/2, dt = 4 ms. "
        "`autodiff Newton`: `jax.jacfwd` of the Newmark-staged residual with respect to q_{n+1} (6 n forward-mode "
        "passes; what `NewtonSolver` builds now); `CMTM Newton`: the same matrix from "
        "`jaxrod.models.pcs.cmtm.newmark_jacobian` (spec sec. 5.7 + eq. 28); `custom JVP`: `jax.jacfwd` of the "
        "staged residual of `PCSModel(jacobian=\"cmtm\")` (the CMTM Jacobians through a custom JVP, the path "
        "`simulate` takes with that option); `all three`: d tau/d(q, v, a) of the generalised forces (18 n passes) "
        "vs `cmtm_jacobians`. Each program jitted alone (`jax.jit(f).lower(...).compile()`, arguments: the model's "
        f"arrays, q_(n+1), history); per call: mean over >= {JAC_MIN_CALLS} calls and >= {JAC_MIN_S:g} s after 2 "
        "warm-up calls. `max rel. diff`: Frobenius-relative difference from the autodiff matrix of the same row "
        "pair.")
    out()
    start_table(["n segments", "DOF", "Jacobian", "compile [s]", "per call [us]", "calls", "autodiff / this",
                 "max rel. diff"])
    rng = np.random.default_rng(3)
    dt, beta, gamma = DT_I, 0.25, 0.5
    for n in args.jac_segments:
        model = pcs_silicone(n_segments=n).model
        k = 6 * n
        scale = np.tile([3.0, 3.0, 3.0, 0.05, 0.05, 0.05], n)
        q0 = jnp.asarray(rng.normal(size=k) * scale)
        hist = (q0, jnp.asarray(rng.normal(size=k) * scale), jnp.asarray(rng.normal(size=k) * 10 * scale))
        qn = q0 + dt * hist[1] + 0.5 * dt * dt * hist[2]
        ref, base_t = {}, {}
        for name, fn, params in jacobian_programs(model, dt, beta, gamma):
            note(f"  table 4: n = {n}, {name}: compiling ...")
            lower_s, compile_s, compiled = aot(fn, params, qn, hist)
            t, calls = mean_call_s(compiled, (params, qn, hist))
            val = [np.asarray(x) for x in jax.tree_util.tree_leaves(compiled(params, qn, hist))]
            group = "all" if "all three" in name else "newton"
            if name.startswith("autodiff"):
                ref[group], base_t[group] = val, t
                diff, ratio = "-", "1"
            else:
                diff = fmt(max(float(np.linalg.norm(a - b) / np.linalg.norm(b)) for a, b in zip(val, ref[group])), ".1e")
                ratio = f"{base_t[group] / t:.2f}"
            row([n, k, name, f"{lower_s + compile_s:.1f}", f"{1e6 * t:.1f}", calls, ratio, diff])
    out()


# ---------------------------------------------------------------------------------------------
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=None,
                   help="comma-separated subset of 1,2,3,4 (default 1,2,3,4; 1,3 with --quick); 4 = Jacobian timings")
    p.add_argument("--jac-segments", default=",".join(map(str, JAC_SEGMENTS)),
                   help="table 4: segment counts of the silicone rod (comma-separated)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: silicone 2 s, CFRP 0.5 s, E1 16 ms, 1 repeat, no C2/C3, no CFRP Newmark, "
                        "no tolerance sweep, tables 1 and 3")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per measurement (median)")
    p.add_argument("--tol-i1", type=float, default=1e-8, help="rtol = atol standing in for the paper's eps 0.001 "
                   "(I1, CFRP)")
    p.add_argument("--tol-i2", type=float, default=1e-4, help="rtol = atol standing in for the paper's eps 0.1 (I2)")
    p.add_argument("--tol-sweep", default="1e-10,1e-8,1e-7,1e-6,1e-5,1e-4,1e-3",
                   help="tolerances of the Newmark tolerance sweep in table 1 (comma-separated; '' = none; "
                        "none with --quick)")
    p.add_argument("--max-steps", type=int, default=30, help="Newton iteration cap per step")
    p.add_argument("--duration", type=float, default=None, help="silicone simulated time [s] (default 10)")
    p.add_argument("--e1-duration", type=float, default=None,
                   help="E1's simulated time [s] (multiple of 4 ms; default 0.048, scaled to 10 s)")
    p.add_argument("--cfrp-duration", type=float, default=None, help="CFRP C1 simulated time [s] (default 10)")
    p.add_argument("--no-cfrp-small-dt", dest="cfrp_small_dt", action="store_false",
                   help="skip C2 (1e-4 s) and C3 (1e-5 s)")
    p.add_argument("--newmark-steps", type=int, default=None, help="steps of each CFRP Newmark attempt (default 20)")
    p.add_argument("--cfrp-newmark", action=argparse.BooleanOptionalAction, default=None,
                   help="run the CFRP Newmark attempts (default on; off with --quick: one more ~30-60 s compile)")
    p.add_argument("--cfrp-explicit-steps", type=int, default=250, help="steps of the CFRP explicit run at 4e-6 s")
    args = p.parse_args(argv)
    if args.tables is None:
        args.tables = "1,3" if args.quick else "1,2,3,4"
    tables = {t.strip() for t in args.tables.split(",") if t.strip()}
    if tables - {"1", "2", "3", "4"}:
        p.error(f"--tables: unknown {sorted(tables - {'1', '2', '3', '4'})}")
    args.jac_segments = [int(x) for x in args.jac_segments.split(",") if x.strip()]
    if args.quick and "--tol-sweep" not in " ".join(sys.argv if argv is None else argv):
        args.tol_sweep = ""
    args.tol_sweep = [float(x) for x in args.tol_sweep.split(",") if x.strip()]
    if args.quick:
        args.repeats = 1
        args.duration = args.duration or 2.0
        args.e1_duration = args.e1_duration or 0.016
        args.cfrp_duration = args.cfrp_duration or 0.5
        args.newmark_steps = args.newmark_steps or 5
        args.cfrp_small_dt = False
        args.cfrp_newmark = False if args.cfrp_newmark is None else args.cfrp_newmark
    args.cfrp_newmark = True if args.cfrp_newmark is None else args.cfrp_newmark
    args.duration = args.duration or 10.0
    args.e1_duration = args.e1_duration or 0.048
    args.cfrp_duration = args.cfrp_duration or 10.0
    args.newmark_steps = args.newmark_steps or 20

    machine_header()
    t_all = time.perf_counter()
    bench = Bench(args) if tables & {"1", "2", "3"} else None
    if "1" in tables:
        table1(args, bench)
    if "2" in tables:
        table2(args, bench)
    if "3" in tables:
        table3(args, bench)
    if "4" in tables:
        table4(args)
    out(f"Total wall time of this script: {time.perf_counter() - t_all:.0f} s.")


if __name__ == "__main__":
    main()
