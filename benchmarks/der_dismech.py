"""DER speed and accuracy on DisMech's Table II cases, side by side with PyElastica.

Usage::

    python benchmarks/der_dismech.py                      # tables 1-3, all four cases
    python benchmarks/der_dismech.py --peers              # + PyElastica on the same cases
    python benchmarks/der_dismech.py --peers --peer-duration-scale 0.1   # peers on 10% of T, extrapolated
    python benchmarks/der_dismech.py --cases a1,b2 --tables 1 --rtol 1e-6 --atol 1e-6
    python benchmarks/der_dismech.py --quick              # smoke test: short runs, small sizes

Tables (BENCHMARKS.md sections A, E, F), each printed as markdown as soon as it is ready:

1. Per case (a1, a2 cantilevers; b1, b2 helices) at DisMech's time step and full duration:
   Newton iterations per step, Jacobians built, compile time (``jax.jit(...).lower(...).compile()``
   of a function that calls :func:`jaxrod.simulate`, timed separately), run time (median of
   ``--repeats`` calls of the compiled program, ``jax.block_until_ready``), DisMech's paper time
   and the ratio. Then accuracy: a1/a2 period and tip amplitude against Euler-Bernoulli and the
   amplitude ratio last period / first period; b1/b2 the dominant tip-z frequency.
   With ``--peers``: PyElastica (``pip install pyelastica``, the ``peers`` extra) on the same
   case at its largest stable dt (BENCHMARKS.md F), wall time and our speed-up.
2. Time per step vs node count, dynamic cantilever a1 (25 ... 1600 nodes, fixed steps).
3. ``jax.vmap`` throughput: a batch of a1 cantilevers with different Young's moduli.
c. Case c, friction validation (``--tables c``): DisMech's 44 axial pushes of a rod lying on the
   floor (IMC contact + smooth Coulomb friction), T = 1.5 s, dt 5 ms, backward Euler, one after the
   other with ``jax.lax.map`` and Jacobian reuse (``--friction-batching map,vmap`` adds the
   ``jax.vmap`` batch, far slower on CPU: 123 s with implicit midpoint; ``--friction-scheme midpoint`` the scene's implicit
   midpoint); compile and run time, kinetic energy errors for every push.

Everything goes through jaxrod's public API. Timings are medians of several runs; the host may be
shared (2 cores), so the minimum is printed too.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxrod  # noqa: E402  (float64)
from _common import note, out, table  # noqa: E402  (helpers shared by the benchmark scripts)
from jaxrod import analysis  # noqa: E402

CASES = {"a1": "cantilever-a1", "a2": "cantilever-a2", "b1": "helix-b1", "b2": "helix-b2"}
# PyElastica's largest stable dt (DisMech Table II) and its wall time measured on this machine
# (BENCHMARKS.md F, quiet machine, single thread).
PEER_DT = {"a1": 2.5e-4, "a2": 3e-5, "b1": 4e-5, "b2": 1e-6}
PEER_F_WALL = {"a1": 39.7, "a2": 72.2, "b1": 21.5, "b2": 155.0}
PEER_PAPER_WALL = {"a1": 23.80, "a2": 40.01, "b1": 11.77, "b2": 89.24}
# Py-DiSMech (implicit midpoint, corrected) helix tip frequency measured here (BENCHMARKS.md F).
PYDISMECH_HZ = {"b1": 4.70, "b2": 8.98}
# Scaling / batching settings
SIZES = (25, 50, 100, 200, 400, 800, 1600)
BATCHES = (1, 4, 16, 64)


def fmt(x, spec=".3g"):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return format(x, spec)


def pct(x):
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:+.2f}%"


# ---------------------------------------------------------------------------------------------
# timing helpers
# ---------------------------------------------------------------------------------------------
def aot(fn, *args):
    """``(lower_s, compile_s, compiled)`` for ``jax.jit(fn)`` at ``args``."""
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, compiled


#: process CPU seconds (median) of the calls :func:`time_calls` timed last (all threads)
LAST_CPU = {"median": float("nan")}


def time_calls(compiled, *args, repeats, ok=None, slow_s=30.0):
    """Median and min wall seconds of ``repeats`` calls after a first (warm-up) call, and the
    result. When ``ok(result)`` is False or the first call took over ``slow_s`` seconds, the first
    call is the only one timed (a diverging run is not worth repeating). The median process CPU
    of the same calls is left in ``LAST_CPU["median"]``."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = jax.block_until_ready(compiled(*args))
    first = time.perf_counter() - t0
    if (ok is not None and not ok(res)) or first > slow_s:
        LAST_CPU["median"] = time.process_time() - c0
        return first, first, res, 1
    times, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        res = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    LAST_CPU["median"] = float(np.median(cpus))
    return float(np.median(times)), float(np.min(times)), res, repeats


def _all_converged(traj):
    return bool(np.all(np.asarray(traj.stats.converged)))


def simulate_fn(model, scheme, n_steps, solver):
    """``(run(params, dt) -> Trajectory, params)``: :func:`jaxrod.simulate` with the model's arrays
    and ``dt`` as traced arguments (as ``simulate`` itself passes them to its compiled core)."""
    params, static = eqx.partition(model, eqx.is_array)

    def run(p, dt):
        return jaxrod.simulate(
            eqx.combine(p, static), dt=dt, n_steps=n_steps, scheme=scheme, solver=solver, throw=False
        )

    return run, params


# ---------------------------------------------------------------------------------------------
# signal analysis
# ---------------------------------------------------------------------------------------------
def _parabolic_peak(y, i):
    """Vertex value of the parabola through samples i-1, i, i+1 (refines a sampled extremum)."""
    if i <= 0 or i >= len(y) - 1:
        return float(y[i])
    y0, y1, y2 = y[i - 1], y[i], y[i + 1]
    den = y0 - 2 * y1 + y2
    return float(y1 - (y0 - y2) ** 2 / (8 * den)) if den != 0 else float(y1)


def cantilever_accuracy(times, z, ref):
    """Period [s] from upward zero crossings, amplitude of the first and last full period (half
    peak-to-peak, extrema refined by a parabola through three samples), relative errors."""
    t, z = np.asarray(times), np.asarray(z)
    period = analysis.oscillation_period(t, z)
    tc = analysis.zero_crossings(t, z, direction="up")
    amps = []
    for lo, hi in zip(tc[:-1], tc[1:]):
        sel = np.flatnonzero((t >= lo) & (t <= hi))
        if sel.size < 3:
            continue
        imax, imin = sel[np.argmax(z[sel])], sel[np.argmin(z[sel])]
        amps.append(0.5 * (_parabolic_peak(z, imax) - _parabolic_peak(z, imin)))
    a_first = amps[0] if amps else math.nan
    a_last = amps[-1] if amps else math.nan
    return {
        "period": period,
        "period_err": analysis.relative_error(period, ref["period_s"]) if math.isfinite(period) else math.nan,
        "amp": a_first,
        "amp_err": analysis.relative_error(a_first, ref["tip_amplitude_m"]) if amps else math.nan,
        "ratio": a_last / a_first if len(amps) >= 2 else math.nan,
        "n_periods": len(amps),
    }


def dominant_frequency(times, z, fmin=0.5):
    """Dominant frequency [Hz] of ``z`` (mean removed, Hann window, 16x zero padding, parabolic
    refinement of the spectral peak above ``fmin``) and the zero-crossing frequency about the mean."""
    t, z = np.asarray(times), np.asarray(z)
    dt = float(np.mean(np.diff(t)))
    y = (z - z.mean()) * np.hanning(z.size)
    nfft = 16 * int(2 ** math.ceil(math.log2(z.size)))
    spec = np.abs(np.fft.rfft(y, nfft))
    freqs = np.fft.rfftfreq(nfft, dt)
    ok = np.flatnonzero(freqs >= fmin)
    k = ok[np.argmax(spec[ok])]
    if 0 < k < spec.size - 1:
        a, b, c = np.log(spec[k - 1 : k + 2] + 1e-300)
        shift = 0.5 * (a - c) / (a - 2 * b + c) if (a - 2 * b + c) != 0 else 0.0
    else:
        shift = 0.0
    f_fft = float((k + shift) * (freqs[1] - freqs[0]))
    period = analysis.oscillation_period(t, z, level=float(z.mean()))
    f_zc = 1.0 / period if math.isfinite(period) and period > 0 else math.nan
    return f_fft, f_zc


# ---------------------------------------------------------------------------------------------
# machine
# ---------------------------------------------------------------------------------------------
def _git_describe():
    """Commit of the checkout (read-only git calls) and whether jaxrod/ has uncommitted changes."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "jaxrod"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    if not head:
        return "unknown commit"
    return f"commit {head[:72]}" + (" (+ uncommitted changes in jaxrod/)" if dirty else "")


def machine_header(args):
    dev = jax.devices()[0]
    try:
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    out("# jaxrod DER benchmarks (DisMech Table II cases)")
    out()
    out(f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    out(f"- machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    out(f"- jax {jax.__version__}, device {dev.platform}: {dev.device_kind}, "
        f"x64 {jax.config.jax_enable_x64}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    out(f"- jaxrod {jaxrod.__version__} at {_git_describe()}")
    out(f"- load average at start (1/5/15 min): {load}")
    out(f"- command: python {' '.join(sys.argv)}")
    out()


# ---------------------------------------------------------------------------------------------
# table 1
# ---------------------------------------------------------------------------------------------
def table1(args, cases, solver):
    out("## Table 1: DisMech Table II cases at DisMech's time step")
    out()
    out(f"Newton: implicit midpoint, banded Jacobian, Jacobian reuse, rtol {args.rtol:g}, atol {args.atol:g} "
        f"(simulate's default is 1e-9/1e-9). Compile = `jax.jit(simulate).lower().compile()`; run = median "
        f"(min) of {args.repeats} calls of the compiled program"
        + (f"; durations x{args.duration_scale:g}" if args.duration_scale != 1 else "")
        + ". Each case runs at DisMech's dt (`scene.reference['dismech_dt_s']`) and, where the scene's "
        "default dt differs, at that dt too.")
    out()
    header = ["case", "nodes", "dt [s]", "steps", "Newton it/step", "Jacobians", "compile [s] (lower+compile)",
              "run [s] median (min)", "ms/step", "DisMech paper [s]", "DisMech / ours"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    runs = []
    for case in cases:
        scene = jaxrod.scenes.get_scene(CASES[case])
        dts = [scene.reference["dismech_dt_s"]]
        if not math.isclose(scene.dt, dts[0], rel_tol=1e-9):
            dts.append(scene.dt)
        for k, dt in enumerate(dts):
            runs.append((case if k == 0 else f"{case} (scene dt)", case, scene, float(dt)))
    results = {}
    for label, case, scene, dt_f in runs:
        duration = scene.duration * args.duration_scale
        n_steps = int(round(duration / dt_f))
        run, params = simulate_fn(scene.model, scene.scheme, n_steps, solver)
        dt = jnp.asarray(dt_f)
        note(f"[table 1] {label}: compiling ({n_steps} steps) ...")
        lower_s, compile_s, compiled = aot(run, params, dt)
        note(f"[table 1] {label}: compiled in {lower_s + compile_s:.1f} s; running x{args.repeats + 1} ...")
        med, mn, traj, nrep = time_calls(compiled, params, dt, repeats=args.repeats, ok=_all_converged)
        its = np.asarray(traj.stats.iterations)
        jacs = np.asarray(traj.stats.jacobians)
        fail = traj.stats.first_failure()
        ref = scene.reference
        dis = ref["dismech_time_s"] * args.duration_scale
        # analyse only the part before the first failed step (a diverged run's tail is garbage)
        n_valid = n_steps + 1 if fail is None else fail + 1
        results[label] = dict(case=case, scene=scene, dt=dt_f, traj=traj, run=med, steps=n_steps,
                              duration=duration, fail=fail, n_valid=n_valid)
        status = "" if fail is None else (
            f" **diverged: Newton failed from step {fail} (t = {(fail + 1) * dt_f:.3f} s)**")
        before = fail is not None and fail > 0
        out("| " + " | ".join([
            label + status,
            str(scene.model.rod.n_nodes),
            f"{dt_f:g}",
            str(n_steps),
            f"{its.mean():.2f}" + (f" ({its[:fail].mean():.2f} before the failure)" if before else ""),
            str(int(jacs.sum())) + (f" ({int(jacs[:fail].sum())} before)" if before else ""),
            f"{lower_s + compile_s:.1f} ({lower_s:.1f}+{compile_s:.1f})",
            f"{med:.3f} ({mn:.3f})" + ("" if nrep > 1 else " (1 run)"),
            f"{1e3 * med / n_steps:.2f}",
            f"{dis:.3g}" + (" (scaled)" if args.duration_scale != 1 else ""),
            f"{dis / med:.2f}x",
        ]) + " |")
    out()

    # accuracy
    cant = [lab for lab, r in results.items() if r["case"].startswith("a")]
    hel = [lab for lab, r in results.items() if r["case"].startswith("b")]
    if cant:
        rows = []
        for lab in cant:
            r = results[lab]
            ref = r["scene"].reference
            nv = r["n_valid"]
            tip = np.asarray(r["traj"].tip)[:nv]
            acc = cantilever_accuracy(np.asarray(r["traj"].times)[:nv], tip[:, 2] - tip[0, 2], ref)
            r["acc"] = acc
            rows.append([
                lab, f"{acc['period']:.4f}", f"{ref['period_s']:.4f}", pct(acc["period_err"]),
                f"{1e3 * acc['amp']:.4f}", f"{1e3 * ref['tip_amplitude_m']:.4f}", pct(acc["amp_err"]),
                f"{acc['ratio']:.4f}", str(acc["n_periods"]),
            ])
        out("Accuracy, cantilevers (tip z vs Euler-Bernoulli first mode; amplitude = half peak-to-peak of a "
            "full period, extrema refined by a 3-point parabola):")
        out()
        out(table(["case", "period [s]", "EB period [s]", "error", "amplitude 1st period [mm]", "EB [mm]",
                   "error", "amplitude last/first period", "full periods"], rows))
        out()
    if hel:
        rows = []
        for lab in hel:
            r = results[lab]
            c = r["case"]
            nv = r["n_valid"]
            times = np.asarray(r["traj"].times)[:nv]
            tip = np.asarray(r["traj"].tip)[:nv]
            f_fft, f_zc = dominant_frequency(times, tip[:, 2])
            r["freq"] = (f_fft, f_zc)
            rows.append([lab, f"{times[-1]:.3f}" + ("" if r["fail"] is None else " (up to the failure)"),
                         f"{f_fft:.3f}", f"{f_zc:.3f}", f"{PYDISMECH_HZ[c]:.2f}", pct(f_fft / PYDISMECH_HZ[c] - 1),
                         f"{1e3 * tip[:, 2].min():.2f} / {1e3 * tip[:, 2].max():.2f}"])
        out("Accuracy, helices (tip z signal; no closed form: compared with Py-DiSMech implicit midpoint at "
            "DisMech's dt, BENCHMARKS.md F):")
        out()
        out(table(["case", "analysed up to t [s]", "dominant freq (FFT) [Hz]", "zero-crossing freq [Hz]",
                   "Py-DiSMech [Hz]", "diff", "tip z min / max [mm]"], rows))
        out()
    return results


# ---------------------------------------------------------------------------------------------
# peers: PyElastica
# ---------------------------------------------------------------------------------------------
def _psi1(x, L):
    bl = jaxrod.scenes.BETA_L[0]
    b = bl / L
    sig = (np.cosh(bl) + np.cos(bl)) / (np.sinh(bl) + np.sin(bl))
    f = lambda s: np.cosh(b * s) - np.cos(b * s) - sig * (np.sinh(b * s) - np.sin(b * s))  # noqa: E731
    return f(x) / f(L)


def _transported_directors(pos):
    """``(3, 3, n_elems)`` PyElastica directors (rows d1, d2, d3) by parallel transport."""
    t = np.diff(pos, axis=0)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    a = np.array([0.0, 1.0, 0.0]) if abs(t[0, 1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    d1 = a - np.dot(a, t[0]) * t[0]
    d1 /= np.linalg.norm(d1)
    out_ = np.zeros((3, 3, t.shape[0]))
    for i in range(t.shape[0]):
        if i > 0:
            b = np.cross(t[i - 1], t[i])
            s, c = np.linalg.norm(b), np.dot(t[i - 1], t[i])
            if s > 1e-14:
                k = b / s
                d1 = d1 * c + np.cross(k, d1) * s + k * np.dot(k, d1) * (1 - c)
            d1 -= np.dot(d1, t[i]) * t[i]
            d1 /= np.linalg.norm(d1)
        out_[0, :, i], out_[1, :, i], out_[2, :, i] = d1, np.cross(t[i], d1), t[i]
    return out_


def elastica_case(ea, case, scene, n_steps, dt, sample_every):
    """Build the PyElastica system for ``case``; returns ``(sim, samples list)``."""
    from elastica.rod.cosserat_rod import _compute_sigma_kappa_for_blockstructure

    class Sim(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.CallBacks):
        pass

    class Tip(ea.CallBackBaseClass):
        def __init__(self, store, every):
            super().__init__()
            self.store, self.every = store, every

        def make_callback(self, system, time, current_step):
            if current_step % self.every == 0:
                self.store.append((time, system.position_collection[2, -1]))

    rod_m = scene.model.rod
    E, rho, h = float(rod_m.youngs_modulus), float(rod_m.density), float(rod_m.radius)
    sim = Sim()
    if case.startswith("a"):
        n_el, L = rod_m.n_nodes - 1, 1.0
        rod = ea.CosseratRod.straight_rod(
            n_el, np.zeros(3), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), L, h, rho,
            youngs_modulus=E, shear_modulus=E / 3,
        )
        x = rod.position_collection[0].copy()
        rod.velocity_collection[2, :] = 5e-3 * _psi1(x, L)
    else:
        pos = np.asarray(rod_m.rest_positions)
        dirs = _transported_directors(pos)
        L = float(np.sum(np.linalg.norm(np.diff(pos, axis=0), axis=1)))
        rod = ea.CosseratRod.straight_rod(
            pos.shape[0] - 1, pos[0], dirs[2, :, 0], dirs[0, :, 0], L, h, rho,
            youngs_modulus=E, shear_modulus=E / 3, position=pos.T.copy(), directors=dirs,
        )
        _compute_sigma_kappa_for_blockstructure(rod)  # rest shape = the helix
        rod.rest_kappa[:] = rod.kappa
        rod.rest_sigma[:] = rod.sigma
    sim.append(rod)
    sim.constrain(rod).using(ea.OneEndFixedBC, constrained_position_idx=(0,), constrained_director_idx=(0,))
    if case.startswith("b"):
        sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -9.8]))
    samples = []
    sim.collect_diagnostics(rod).using(Tip, store=samples, every=sample_every)
    sim.finalize()
    return sim, samples


def peers(args, cases, results):
    out("## Table 1, peers: PyElastica on the same cases")
    out()
    try:
        import elastica as ea
    except ImportError:
        out("PyElastica is not importable: skipped (install the optional extra: `pip install -e .[peers]` "
            "or `pip install pyelastica`).")
        out()
        return
    import importlib.metadata

    try:
        ver = importlib.metadata.version("pyelastica")
    except importlib.metadata.PackageNotFoundError:
        ver = "?"
    scale = args.peer_duration_scale
    out(f"PyElastica {ver}, PositionVerlet at its largest stable dt (DisMech Table II), same geometry, material, "
        f"initial velocity / gravity and clamp; tip z recorded at jaxrod's dt. Wall = `integrate()` only (numba "
        f"compiled by a 10-step warm-up first), {args.peer_repeats} run(s), median."
        + (f" **Runs cover {scale:g} of the duration; full-duration walls are extrapolated linearly "
           f"(wall / {scale:g})**." if scale != 1 else ""))
    out()
    header = ["case", "dt [s]", "steps run", "wall run [s]", "wall full T [s]", "us/step",
              "BENCHMARKS.md F wall [s]", "jaxrod run [s]", "speed-up (PyElastica / jaxrod)"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    acc_rows = []
    for case in cases:
        jr_runs = [(lab, x) for lab, x in results.items() if x["case"] == case]
        r = jr_runs[0][1]  # the run at DisMech's dt
        scene, duration = r["scene"], r["duration"]
        dt = PEER_DT[case]
        n_full = int(round(duration / dt))
        n_run = max(1, int(round(n_full * scale)))
        every = max(1, int(round(r["dt"] / dt)))
        note(f"[peers] {case}: PyElastica warm-up ...")
        sim, _ = elastica_case(ea, case, scene, 10, dt, every)
        with contextlib.redirect_stdout(io.StringIO()):  # integrate() prints the final time
            ea.integrate(ea.PositionVerlet(), sim, 10 * dt, 10, progress_bar=False)
        walls = []
        for k in range(args.peer_repeats):
            note(f"[peers] {case}: PyElastica {n_run} steps (run {k + 1}/{args.peer_repeats}) ...")
            sim, samples = elastica_case(ea, case, scene, n_run, dt, every)
            with contextlib.redirect_stdout(io.StringIO()):
                t0 = time.perf_counter()
                ea.integrate(ea.PositionVerlet(), sim, n_run * dt, n_run, progress_bar=False)
                walls.append(time.perf_counter() - t0)
        wall = float(np.median(walls))
        wall_full = wall * n_full / n_run
        extrap = n_run != n_full
        smp = np.asarray(samples).reshape(-1, 2)
        bad = np.flatnonzero(~np.isfinite(smp[:, 1]) | (np.abs(smp[:, 1]) > 10.0))
        peer_fail_t = float(smp[bad[0], 0]) if bad.size else None
        smp = smp[: bad[0]] if bad.size else smp
        flags = []
        if peer_fail_t is not None:
            flags.append(f"PyElastica diverged at t = {peer_fail_t:.2f} s")
        many = len(jr_runs) > 1
        jr_cells, su_cells = [], []
        for _, x in jr_runs:
            at = f" at dt {x['dt']:g}" if many else ""
            bad_jr = " (diverged)" if x["fail"] is not None else ""
            jr_cells.append(f"{x['run']:.3f}{at}{bad_jr}")
            su_cells.append(f"**{wall_full / x['run']:.1f}x**{at}{bad_jr}")
        out("| " + " | ".join([
            case + (f" ({'; '.join(flags)})" if flags else ""), f"{dt:g}",
            f"{n_run}" + (f" of {n_full}" if extrap else ""), f"{wall:.2f}",
            f"{wall_full:.1f}" + (" (extrapolated)" if extrap else ""), f"{1e6 * wall / n_run:.1f}",
            f"{PEER_F_WALL[case] * args.duration_scale:.1f}", "; ".join(jr_cells), "; ".join(su_cells),
        ]) + " |")
        # accuracy of the peer run (only the finite part, and only if it covers enough signal)
        if smp.shape[0] > 8:
            tt, zz = smp[:, 0], smp[:, 1]
            if case.startswith("a"):
                acc = cantilever_accuracy(tt, zz - zz[0], scene.reference)
                if acc["n_periods"] >= 1:
                    acc_rows.append([case, f"{tt[-1]:.2f}",
                                     f"period {pct(acc['period_err'])}, amplitude {pct(acc['amp_err'])} vs EB, "
                                     f"last/first {acc['ratio']:.4f} ({acc['n_periods']} periods)",
                                     f"period {pct(r['acc']['period_err'])}, amplitude {pct(r['acc']['amp_err'])}, "
                                     f"last/first {r['acc']['ratio']:.4f}", "n/a"])
            else:
                for lab, x in jr_runs:
                    t_jr = np.asarray(x["traj"].times)[: x["n_valid"]]
                    z_jr = np.asarray(x["traj"].tip)[: x["n_valid"], 2]
                    t_end = min(tt[-1], t_jr[-1])  # common window where both runs are finite
                    sel, sel_jr = tt <= t_end + 1e-12, t_jr <= t_end + 1e-12
                    f_pe = dominant_frequency(tt[sel], zz[sel])[0]
                    f_jr = dominant_frequency(t_jr[sel_jr], z_jr[sel_jr])[0]
                    dz = float(np.max(np.abs(np.interp(tt[sel], t_jr, z_jr) - zz[sel])))
                    sel1 = tt <= min(1.0, t_end) + 1e-12
                    dz1 = float(np.max(np.abs(np.interp(tt[sel1], t_jr, z_jr) - zz[sel1])))
                    acc_rows.append([f"{lab} (jaxrod dt {x['dt']:g})", f"{t_end:.2f}", f"{f_pe:.3f} Hz (FFT)",
                                     f"{f_jr:.3f} Hz (FFT)",
                                     f"{1e3 * dz1:.2f} mm over the first {tt[sel1][-1]:.2f} s; {1e3 * dz:.2f} mm "
                                     f"over {t_end:.2f} s"])
    out()
    if acc_rows:
        out("Peer accuracy (PyElastica's run analysed like jaxrod's, over the window where both are finite):")
        out()
        out(table(["case", "window [s]", "PyElastica", "jaxrod", "max tip-z difference"], acc_rows))
        out()


# ---------------------------------------------------------------------------------------------
# table 2: scaling in node count
# ---------------------------------------------------------------------------------------------
def table2(args, solver):
    sizes = [n for n in SIZES if n <= args.max_nodes]
    n_steps, dt = args.scaling_steps, 0.5
    out(f"## Table 2: cost per step vs nodes (dynamic cantilever a1, dt {dt} s, {n_steps} steps)")
    out()
    out(f"Run = median (min) of {args.repeats} calls, wall; us/node-step = run / (steps x nodes); "
        "run CPU = median process CPU of the same calls (all threads).")
    out()
    header = ["nodes", "DOFs", "compile [s]", "run [ms] median (min)", "ms/step", "Newton it/step",
              "Jacobians/step", "us/node-step", "ms/Newton it", "run CPU [ms] median", "CPU us/node-step"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    for n in sizes:
        scene = jaxrod.scenes.get_scene("cantilever-a1", n_nodes=n)
        run, params = simulate_fn(scene.model, scene.scheme, n_steps, solver)
        dtj = jnp.asarray(dt)
        note(f"[table 2] N = {n}: compiling ...")
        lo, co, compiled = aot(run, params, dtj)
        med, mn, traj, _ = time_calls(compiled, params, dtj, repeats=args.repeats)
        cpu = LAST_CPU["median"]
        its = np.asarray(traj.stats.iterations)
        jacs = np.asarray(traj.stats.jacobians)
        ok = "" if bool(np.all(np.asarray(traj.stats.converged))) else " (NOT CONVERGED)"
        out("| " + " | ".join([
            f"{n}{ok}", str(4 * n), f"{lo + co:.1f}", f"{1e3 * med:.1f} ({1e3 * mn:.1f})",
            f"{1e3 * med / n_steps:.3f}", f"{its.mean():.2f}", f"{jacs.mean():.3f}",
            f"{1e6 * med / (n_steps * n):.2f}", f"{1e3 * med / max(its.sum(), 1):.3f}",
            f"{1e3 * cpu:.1f}", f"{1e6 * cpu / (n_steps * n):.2f}",
        ]) + " |")
    out()


# ---------------------------------------------------------------------------------------------
# table 3: vmap throughput
# ---------------------------------------------------------------------------------------------
def table3(args, solver):
    batches = [b for b in BATCHES if b <= args.max_batch]
    n_nodes, n_steps, dt = 51, 20, 0.5
    out(f"## Table 3: `jax.vmap` throughput (a1 cantilever, {n_nodes} nodes, {n_steps} steps, dt {dt} s, "
        f"E log-spaced in [0.5e5, 2e5] Pa)")
    out()
    out(f"Each rod's model is built inside the vmapped function (`DERRod.from_polyline` + `DERModel`, E traced). "
        f"Run = median (min) of {args.repeats} calls. Two Newton variants: the default (`reuse_jacobian=True`, "
        f"chord steps) and `reuse_jacobian=False` (a fresh Jacobian every iteration).")
    out()
    scene = jaxrod.scenes.get_scene("cantilever-a1", n_nodes=n_nodes)
    pts = np.asarray(scene.model.rod.rest_positions)
    v0 = np.asarray(scene.model.v0)

    def make_one(slv):
        def one(E):
            rod = jaxrod.DERRod.from_polyline(
                pts, rest="straight", youngs_modulus=E, density=500.0, radius=0.02, poisson_ratio=0.5
            )
            model = jaxrod.DERModel(rod, clamped_edges=(0,), v0=v0)
            traj = jaxrod.simulate(model, dt=dt, n_steps=n_steps, solver=slv, throw=False)
            return traj.tip, traj.stats.iterations, traj.stats.jacobians, traj.stats.converged

        return one

    header = ["Newton", "batch", "compile [s]", "run [ms] median (min)", "rod-steps/s", "ms per rod-step",
              "Newton it/step (mean, max)", "Jacobians/rod-step", "all converged"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    fresh = jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=False, rtol=args.rtol, atol=args.atol)
    variants = [("reuse (default)", solver), ("fresh", fresh)]
    for vname, slv in variants:
        one = make_one(slv)
        runs = [("1 (plain jit, no vmap)", 1, one, jnp.asarray(1e5))]
        runs += [(str(b), b, jax.vmap(one), jnp.asarray(np.geomspace(0.5e5, 2e5, b) if b > 1 else [1e5]))
                 for b in batches]
        for label, b, fn, Es in runs:
            note(f"[table 3] {vname}, batch {label}: compiling ...")
            lo, co, compiled = aot(fn, Es)
            med, mn, (tip, its, jacs, conv), _ = time_calls(compiled, Es, repeats=args.repeats)
            its, jacs = np.asarray(its), np.asarray(jacs)
            out("| " + " | ".join([
                vname, label, f"{lo + co:.1f}", f"{1e3 * med:.1f} ({1e3 * mn:.1f})", f"{b * n_steps / med:.0f}",
                f"{1e3 * med / (b * n_steps):.3f}", f"{its.mean():.2f}, {its.max()}", f"{jacs.mean():.2f}",
                str(bool(np.all(conv))),
            ]) + " |")
    out()
    out("Note: under `vmap` the Newton `while_loop` runs until the slowest rod of the batch converges "
        "(every rod pays the batch's maximum iteration count), and a `lax.cond` on a batched predicate "
        "(build a fresh Jacobian or reuse the old one) becomes a `select` that evaluates both branches, so "
        "chord steps cost as much as full Newton steps.")
    out()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="a1,a2,b1,b2", help="comma-separated subset of a1,a2,b1,b2")
    p.add_argument("--tables", default="1,2,3,c", help="comma-separated subset of 1,2,3,c")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 10%% durations, 1 repeat, nodes <= 100, batches <= 4, 10 scaling steps, "
                        "peers on 1%%")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per measurement (median)")
    p.add_argument("--rtol", type=float, default=1e-9, help="Newton rtol (simulate's default 1e-9)")
    p.add_argument("--atol", type=float, default=1e-9, help="Newton atol [m, rad] (simulate's default 1e-9)")
    p.add_argument("--peers", action="store_true", help="also run PyElastica (pip install pyelastica)")
    p.add_argument("--duration-scale", type=float, default=None,
                   help="scale the simulated durations of table 1 (default 1; 0.1 with --quick)")
    p.add_argument("--peer-duration-scale", type=float, default=None,
                   help="run PyElastica on this fraction of table 1's duration and extrapolate linearly "
                        "(default 1; 0.01 with --quick)")
    p.add_argument("--peer-repeats", type=int, default=1, help="PyElastica runs per case (median)")
    p.add_argument("--scaling-steps", type=int, default=40, help="steps per run in table 2")
    p.add_argument("--max-nodes", type=int, default=1600, help="largest node count in table 2")
    p.add_argument("--max-batch", type=int, default=64, help="largest batch in table 3")
    p.add_argument("--friction-batching", default="map",
                   help="table c: comma-separated subset of map,vmap (vmap: ~2 min on the 2-core host)")
    p.add_argument("--friction-dt", type=float, default=5e-3,
                   help="table c: time step [s] (DisMech's 5 ms by default)")
    p.add_argument("--friction-scheme", default="backward-euler", choices=("backward-euler", "midpoint"),
                   help="table c: time scheme (backward Euler: fastest and most accurate here)")
    args = p.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        p.error(f"unknown cases {bad}; choose from {', '.join(CASES)}")
    tables = {t.strip() for t in args.tables.split(",") if t.strip()}
    if args.duration_scale is None:
        args.duration_scale = 0.1 if args.quick else 1.0
    if args.peer_duration_scale is None:
        args.peer_duration_scale = 0.01 if args.quick else 1.0
    if args.quick:
        args.repeats = 1
        args.max_nodes = min(args.max_nodes, 100)
        args.max_batch = min(args.max_batch, 4)
        args.scaling_steps = min(args.scaling_steps, 10)
    solver = jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=True, rtol=args.rtol, atol=args.atol)

    machine_header(args)
    t_all = time.perf_counter()
    if "1" in tables and cases:
        results = table1(args, cases, solver)
        if args.peers:
            peers(args, cases, results)
    if "2" in tables:
        table2(args, solver)
    if "3" in tables:
        table3(args, solver)
    if "c" in tables:
        table_c(args)
    out(f"Total wall time of this script: {time.perf_counter() - t_all:.0f} s.")



# ---------------------------------------------------------------------------------------------
# table c: friction validation (DisMech Table II case c)
# ---------------------------------------------------------------------------------------------
def table_c(args):
    """DisMech's friction validation: 44 pushes, T = 1.5 s (x ``--duration-scale``), dt ``--friction-dt``."""
    from jaxrod.scenes import contact as cs

    forces = jnp.asarray(cs.FRICTION_FORCES)
    duration = 1.5 * args.duration_scale
    out(f"## Table c: friction validation (DisMech case c), {forces.size} pushes, T = {duration:g} s, "
        f"dt {1e3 * args.friction_dt:g} ms")
    out()
    scheme = jaxrod.BackwardEuler() if args.friction_scheme == "backward-euler" else jaxrod.ImplicitMidpoint()
    out("Rod N = 26 on the floor (IMC floor contact k_c 1e4 N/m, delta 5e-4 m; mu 0.4, nu 1e-3 m/s), "
        f"{args.friction_scheme}, banded Jacobian. `vmap`: all pushes advance together (fresh Jacobian every Newton "
        "iteration; each Newton solve runs as long as the slowest push). `map`: one push after the other "
        f"in one program (`lax.map`, Jacobian reuse). Newton rtol {args.rtol:g}, atol {args.atol:g}. Compile = "
        f"`jax.jit(...).lower().compile()`; run = median (min) of {args.repeats} calls, wall; run CPU = "
        "their median process CPU (all threads). DisMech: 1.59 s for the "
        "44 runs on 8 cores (i7-9700K, paper); PyElastica 7.42 s (paper) and 52.2 s serial / 33.0 s on 2 "
        "processes on this machine (BENCHMARKS.md F).")
    out()
    header = ["batching", "compile [s]", "run [s] median (min)", "run CPU [s] median", "ms per rod-step",
              "Newton it/step (mean, max)", "max rel. error Ek (|F| > 3.92 N)", "max Ek below threshold [J]",
              "all converged", "DisMech / ours (wall)"]
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))
    results = {}
    for batch, reuse in (("map", True), ("vmap", False)):
        if batch not in args.friction_batching.split(","):
            continue
        solver = jaxrod.NewtonSolver(linear_solver=None, reuse_jacobian=reuse, rtol=args.rtol, atol=args.atol)
        fn, scene = cs.friction_batch_fn(solver=solver, batch=batch, scheme=scheme, duration=duration,
                                         dt=args.friction_dt)
        note(f"[table c] {batch}: compiling ...")
        lo, co, compiled = aot(fn, forces)
        note(f"[table c] {batch}: compiled in {lo + co:.1f} s; running x{args.repeats + 1} ...")
        med, mn, (ek, conv, its), nrep = time_calls(compiled, forces, repeats=args.repeats, slow_s=120.0)
        cpu = LAST_CPU["median"]
        ek, its = np.asarray(ek), np.asarray(its)
        n_steps = its.shape[-1]
        T = n_steps * scene.dt
        ref = cs.analytic_kinetic_energy(np.asarray(forces), T, mu=0.4, mass=scene.reference["mass_kg"])
        above = ref > 0
        rel = np.abs(ek[above] / ref[above] - 1)
        results[batch] = (ek, ref, its)
        out("| " + " | ".join([
            batch, f"{lo + co:.1f}", f"{med:.2f} ({mn:.2f})" + ("" if nrep > 1 else " (1 run)"), f"{cpu:.2f}",
            f"{1e3 * med / (forces.size * n_steps):.2f}", f"{its.mean():.2f}, {its.max()}",
            f"{100 * rel.max():.3f}% (at {float(np.asarray(forces)[above][np.argmax(rel)]):+g} N)",
            f"{ek[~above].max():.2e}", str(bool(np.all(np.asarray(conv)))), f"{1.59 * args.duration_scale / med:.2f}x",
        ]) + " |")
    out()
    batch = "map" if "map" in results else next(iter(results))
    ek, ref, its = results[batch]
    out(f"Kinetic energy at t = {T:g} s for every push ({batch} run) against Ek = t^2 (|F| - mu m g)^2 / (2m):")
    out()
    rows = []
    for f_, e, r, it in zip(np.asarray(forces), ek, ref, its.mean(axis=-1)):
        err = f"{100 * (e / r - 1):+.4f}%" if r > 0 else "(stick)"
        rows.append([f"{f_:+.1f}", f"{e:.6g}", f"{r:.6g}", err, f"{it:.2f}"])
    out(table(["F [N]", "Ek [J]", "analytic [J]", "error", "Newton it/step"], rows))
    out()


if __name__ == "__main__":
    main()
