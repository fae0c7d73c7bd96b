"""Cosserat/Kirchhoff shooting model on Till, Aloi & Rucker (2019): Tables 3 and 4, Figs. 3 and 7.

Usage::

    python benchmarks/cosserat_till.py                    # tables 1, 3, 4 (about 20-40 min on 2 cores)
    python benchmarks/cosserat_till.py --min-dt           # + table 2 (minimum stable time step; slow)
    python benchmarks/cosserat_till.py --tables 1 --tau-duration 10   # tau from 10 s runs
    python benchmarks/cosserat_till.py --quick            # smoke test: small sizes, Euler only, a few minutes

Tables (spec ``seed000_till_cosserat.md`` sections 5 and 6.4), each printed as markdown as soon as
it is ready:

1. Tables 3 (Cosserat) and 4 (Kirchhoff) of the paper: the ``till-benchmark`` scene (steel
   cantilever at rest under a 0.5 N tip load that is released at t = 0, no physical damping,
   150 points, 5 ms) for {Euler, RK4} x {BE, BDF2, BDF-alpha -0.2, BDF-alpha -0.48, trapezoid,
   BDF3}: the numerical damping time constant tau (fit of ``log(E - E_eq) = a - 2 t / tau`` over
   t >= 0.2 s), the run time of 200 steps (median of ``--repeats`` calls of the compiled program;
   compile timed separately), Newton iterations and Jacobians per step, next to the paper's values
   and the linear-oscillator prediction of spec sec. 5.6 (each scheme's principal root at the
   first bending mode, 8.9 Hz).
2. (``--min-dt``) Minimum stable time step per row: the smallest dt of a log-spaced list for which
   a 1 s run converges at every step and the fitted tau is positive, next to the paper's.
3. Fig. 3: cost per step vs number of grid points, BDF2, 5 ms, 50 steps, for {Cosserat,
   Kirchhoff} x {Euler, RK4}; the cost ratio per doubling of points (O(n) target: <= ~2.5x).
4. Fig. 7: real-time ratio (simulated time / wall time of the compiled run, compile excluded) of
   the ``till-weight-release`` and ``till-impulse`` scenes (100 points, RK4, BDF-alpha -0.4).

How it runs: per model configuration (Cosserat/Kirchhoff x Euler/RK4, number of points) one
program is compiled, ``jax.jit(f).lower(...).compile()`` of a function that calls
:func:`jaxrod.simulate` for a fixed number of steps with the model's arrays, the initial state
(with its history carrier), the scheme's coefficients, dt and t0 as arguments. All six schemes and
every dt share it; longer runs (``--tau-duration``, table 2, table 4) are chains of calls, each
starting from the previous call's ``Trajectory.final`` (the shooting Jacobian kept across steps is
rebuilt at the start of each call). The static equilibrium (initial state) is solved once per
configuration, outside the timings.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse
import math
import platform
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxrod
from _common import cpu_name, note, out, table  # noqa: E402  (helpers shared by the benchmark scripts)
from jaxrod.models.cosserat import CosseratState
from jaxrod.scenes import get_scene
from jaxrod.integrate.schemes import DifferenceFormula as D

# (key, label, constructor)
SCHEMES = (
    ("be", "Backward Euler", D.backward_euler),
    ("bdf2", "BDF2", D.bdf2),
    ("a-0.2", "BDF-alpha -0.2", lambda: D.bdf_alpha(-0.2)),
    ("a-0.48", "BDF-alpha -0.48", lambda: D.bdf_alpha(-0.48)),
    ("trap", "Trapezoidal", D.trapezoid),
    ("bdf3", "BDF3", D.bdf3),
)
# Paper Tables 3 / 4: (tau [s] or "NA"/"Unstable", runtime [s] or "Unstable", min stable dt [ms]).
PAPER = {
    ("cosserat", "euler"): {
        "be": (0.13, 0.35, 0.8), "bdf2": (3.86, 0.46, 1.3), "a-0.2": (7.57, 0.48, 1.5),
        "a-0.48": (161.8, 0.56, 3.8), "trap": ("NA", 0.62, 4.2), "bdf3": ("Unstable", "Unstable", 48.2)},
    ("cosserat", "rk4"): {
        "be": (0.13, 1.31, 0.8), "bdf2": (3.88, 1.83, 1.4), "a-0.2": (7.63, 1.88, 1.6),
        "a-0.48": (201.6, 2.23, 4.1), "trap": ("NA", 2.46, 4.4), "bdf3": ("Unstable", "Unstable", 48.4)},
    ("kirchhoff", "euler"): {
        "be": (0.13, 0.20, 0.5), "bdf2": (3.87, 0.26, 1.0), "a-0.2": (7.58, 0.27, 1.1),
        "a-0.48": (161.8, 0.29, 1.7), "trap": ("NA", 0.30, 1.8), "bdf3": ("Unstable", "Unstable", 32.8)},
    ("kirchhoff", "rk4"): {
        "be": (0.13, 0.36, 0.5), "bdf2": (3.84, 0.50, 0.9), "a-0.2": (7.54, 0.51, 1.1),
        "a-0.48": (186.7, 0.54, 1.4), "trap": ("NA", 0.57, 1.5), "bdf3": ("Unstable", "Unstable", 40.3)},
}
MODELS = ("cosserat", "kirchhoff")
INTEGRATORS = ("euler", "rk4")
TAU_T_FIT = 0.2  # fit window start [s]
TAU_NO_DECAY = 1000.0  # |tau| above this: no discernible decay (or growth) [s]
TAU_FLOOR = 1e-5  # fit only while E - E_eq > TAU_FLOOR * (E(0) - E_eq)
GROWTH_STOP = 100.0  # a chain stops when E - E_eq exceeds this multiple of E(0) - E_eq
CHUNK = 200  # steps per compiled call (table 1's run: 200 steps at 5 ms = 1 s)
MIN_DT_MS = (50.0, 30.0, 20.0, 12.0, 8.0, 5.0, 3.0, 2.0, 1.2, 0.8, 0.5, 0.3, 0.2)
SIZES = (10, 20, 40, 80, 160, 320)
RT_DT_MS = (1.0, 2.0, 4.0, 8.0)
PAPER_HW = ("the paper's timings: C++/Eigen (hand-written shooting code) on an Intel Core i7-4790K @ 4.00 GHz "
            "(4-core Haswell, 2014), single-threaded for these benchmarks")


def start_table(header):
    out("| " + " | ".join(header) + " |")
    out("|" + "---|" * len(header))


def row(cells):
    out("| " + " | ".join(str(c) for c in cells) + " |")


# ---------------------------------------------------------------------------------------------
# the compiled run and chains of it
# ---------------------------------------------------------------------------------------------
class Runner:
    """One compiled ``jaxrod.simulate`` of ``n_steps`` steps for one model; the scheme's
    coefficients, dt, t0, the initial state and the model's arrays are arguments."""

    def __init__(self, model, n_steps, label=""):
        self.model = model
        self.n_steps = int(n_steps)
        self.params, static = eqx.partition(model, eqx.is_array)
        n = self.n_steps

        def run(p, state0, gammas, d1, dt, t0):
            m = eqx.combine(p, static)
            return jaxrod.simulate(m, dt=dt, n_steps=n, scheme=D(gammas, d1), state0=state0, t0=t0,
                                   throw=False)

        note(f"  solving the static equilibrium {label} ...")
        t0 = time.perf_counter()
        st, res = jaxrod.solve_static(model)
        self.static_s = time.perf_counter() - t0
        if not bool(res.converged):
            raise RuntimeError(f"static solve did not converge for {label}")
        # explicit rest-history carrier (what simulate builds from state0.w): the same pytree
        # structure as Trajectory.final, so chained calls reuse the program
        self.state0 = CosseratState(st.y, st.w, st.base_loads, D.bdf2().init(st.grid_variables), st.w_stages)
        s = D.bdf2()
        self.example = (self.params, self.state0, s.gammas, s.d1, jnp.asarray(0.005), jnp.asarray(0.0))
        note(f"  compiling {label} ({n} steps per call) ...")
        t0 = time.perf_counter()
        lowered = jax.jit(run).lower(*self.example)
        t1 = time.perf_counter()
        self.compiled = lowered.compile()
        t2 = time.perf_counter()
        self.lower_s, self.compile_s = t1 - t0, t2 - t1
        self._energy = jax.jit(jax.vmap(model.energy))

    def args(self, scheme, dt, state0=None, t0=0.0):
        return (self.params, self.state0 if state0 is None else state0, scheme.gammas, scheme.d1,
                jnp.asarray(float(dt)), jnp.asarray(float(t0)))

    def call(self, scheme, dt, state0=None, t0=0.0):
        return jax.block_until_ready(self.compiled(*self.args(scheme, dt, state0, t0)))

    def energy(self, traj):
        return np.asarray(self._energy(traj.q, traj.v))

    def chain(self, scheme, dt, duration, stop_on_failure=True, keep_energy=True, e_eq=None):
        """Run ``ceil(duration / (n_steps dt))`` calls back to back. Returns a dict with times and
        energies of every saved frame (if ``keep_energy``), per-step iterations, Jacobians and
        convergence, the wall time of the calls only and the simulated time. With
        ``stop_on_failure`` the chain stops after a call with a failed step, a non-finite state or
        (given ``e_eq``) an energy ``E - e_eq`` above ``GROWTH_STOP`` times its initial value."""
        n_calls = max(1, math.ceil(duration / (self.n_steps * dt) - 1e-9))
        state, t = self.state0, 0.0
        times, energies, its, jacs, conv = [np.zeros(1)], [], [], [], []
        wall = 0.0
        if keep_energy:
            energies.append(np.asarray(self._energy(self.state0.y[None], self.state0.w[None])))
        ok = True
        for _ in range(n_calls):
            w0 = time.perf_counter()
            traj = self.call(scheme, dt, state, t)
            wall += time.perf_counter() - w0
            c = np.asarray(traj.stats.converged)
            its.append(np.asarray(traj.stats.iterations))
            jacs.append(np.asarray(traj.stats.jacobians))
            conv.append(c)
            times.append(np.asarray(traj.times)[1:])
            if keep_energy:
                energies.append(self.energy(traj)[1:])
            state, t = traj.final, t + self.n_steps * dt
            finite = bool(np.all(np.isfinite(np.asarray(traj.final.y))))
            if keep_energy and e_eq is not None:
                finite = finite and bool(np.all(energies[-1] - e_eq < GROWTH_STOP * (energies[0][0] - e_eq)))
            if stop_on_failure and (not bool(np.all(c)) or not finite):
                ok = False
                break
        conv = np.concatenate(conv)
        return {
            "times": np.concatenate(times), "energy": np.concatenate(energies) if keep_energy else None,
            "iterations": np.concatenate(its), "jacobians": np.concatenate(jacs), "converged": conv,
            "wall": wall, "simulated": len(its) * self.n_steps * dt, "complete": ok, "calls": len(its),
        }


def time_repeats(fn, repeats):
    """Median and min wall seconds of ``repeats`` calls of ``fn`` (after one untimed call), and the
    last result."""
    res = fn()
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(np.min(times)), res


# ---------------------------------------------------------------------------------------------
# damping time constant
# ---------------------------------------------------------------------------------------------
def equilibrium_energy(model):
    """Energy of the static equilibrium without the tip load (the level the energy decays to)."""
    eq_model = eqx.tree_at(lambda m: m.tip_force, model, jnp.zeros(3))
    st, _ = jaxrod.solve_static(eq_model)
    return float(eq_model.energy(st.y, st.w))


def fit_tau(times, energy, e_eq, t_fit=TAU_T_FIT):
    """Fit ``log(E - E_eq) = a - 2 t / tau`` over ``t >= t_fit`` up to the first point where
    ``E - E_eq`` falls below ``TAU_FLOOR`` times its initial value (round-off and solver-tolerance
    floor; when it gets there before ``t_fit`` the fit starts at t = 0). Returns ``(tau [s],
    significance)``: ``tau`` is ``math.inf`` for a zero slope, negative when the energy grows, 0
    when the energy reaches the floor within two steps; ``significance`` is the trend's change over the window divided
    by the peak-to-peak scatter of ``log(E - E_eq)`` about it (< 1: the decay or growth is smaller
    than the energy's oscillation, i.e. not discernible in this window)."""
    t, e = np.asarray(times), np.asarray(energy) - e_eq
    if not np.all(np.isfinite(e)) or e[0] <= 0:
        return math.nan, math.nan
    low = np.flatnonzero(e <= TAU_FLOOR * e[0])
    stop = int(low[0]) if low.size else t.size
    start = int(np.searchsorted(t, t_fit - 1e-12))
    if stop - start < 3:  # decayed to the floor before t_fit: fit from t = 0
        start = 0
    if stop - start < 3:  # decayed within two steps
        return 0.0, math.inf
    x, y = t[start:stop], np.log(e[start:stop])
    slope, a = np.polyfit(x, y, 1)
    resid = y - (a + slope * x)
    spread = float(resid.max() - resid.min())
    change = abs(slope) * float(x[-1] - x[0])
    tau = -2.0 / slope if slope != 0 else math.inf
    return tau, (change / spread if spread > 0 else math.inf)


def classify(tau, significance, converged, finite):
    """``"ok"``, ``"weak"`` (a decay smaller than the energy's oscillation over the window),
    ``"no decay"`` (``|tau| > TAU_NO_DECAY`` or a growth within the oscillation) or ``"unstable"``
    (a failed solve, a non-finite state, or a growth larger than the oscillation)."""
    if not converged or not finite or math.isnan(tau):
        return "unstable"
    if tau < 0 and abs(tau) <= TAU_NO_DECAY and significance >= 1:
        return "unstable"
    if abs(tau) > TAU_NO_DECAY or tau < 0:
        return "no decay"
    return "ok" if significance >= 1 else "weak"


def linear_tau(scheme, freq_hz, dt):
    """Position-decay time constant of ``scheme`` on a linear oscillator at ``freq_hz`` (spec sec.
    5.6): ``-dt / ln|r|``, r the principal root of ``(g0 - z) r^3 + (g1 + d1 z) r^2 + g2 r + g3``,
    ``z = i omega dt``."""
    g = np.asarray(scheme.gammas, float)
    d1 = float(np.asarray(scheme.d1))
    z = 1j * 2 * np.pi * freq_hz * dt
    roots = np.roots([g[0] - z, g[1] + d1 * z, g[2], g[3]])
    r = roots[np.argmin(np.abs(roots - np.exp(z)))]
    lr = math.log(abs(r))
    return -dt / lr if lr != 0 else math.inf


def fmt_tau(tau, status):
    if status == "unstable":
        return "unstable" + (f" (energy grows, tau = {tau:.3g} s)" if math.isfinite(tau) and tau < 0 else "")
    if status == "no decay":
        return f"no decay ({tau:.3g} s)" if math.isfinite(tau) else "no decay"
    if tau == 0:
        return "0 (decayed within 2 steps)"
    return f"{tau:.4g}" + (" (weak)" if status == "weak" else "")


def fmt_paper(x, unit=""):
    return x if isinstance(x, str) else f"{x:g}{unit}"


# ---------------------------------------------------------------------------------------------
# machine
# ---------------------------------------------------------------------------------------------
def git_describe():
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %s"], capture_output=True, check=False,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "jaxrod"], capture_output=True, check=False,
                               text=True, timeout=10).stdout.strip()
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
    out("# jaxrod Cosserat shooting benchmarks (Till, Aloi & Rucker 2019)")
    out()
    out(f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    out(f"- machine: {platform.platform()}, CPU {cpu_name()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}")
    out(f"- jax {jax.__version__}, device {dev.platform}: {dev.device_kind}, x64 {jax.config.jax_enable_x64}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    out(f"- jaxrod {jaxrod.__version__} at {git_describe()}")
    out(f"- load average at start (1/5/15 min): {load}")
    out(f"- command: python {' '.join(sys.argv)}")
    out(f"- {PAPER_HW}")
    out()


# ---------------------------------------------------------------------------------------------
# runners, one per configuration (built lazily, shared by tables 1 and 2)
# ---------------------------------------------------------------------------------------------
class Configs:
    def __init__(self, args):
        self.args = args
        self.cache = {}

    def get(self, model_kind, integ):
        key = (model_kind, integ)
        if key not in self.cache:
            sc = get_scene("till-benchmark", n_points=self.args.points, integrator=integ,
                           kirchhoff=(model_kind == "kirchhoff"))
            label = f"{model_kind}/{integ}/{self.args.points} pts"
            r = Runner(sc.model, CHUNK, label)
            r.scene = sc
            r.e_eq = equilibrium_energy(sc.model)
            self.cache[key] = r
        return self.cache[key]


# ---------------------------------------------------------------------------------------------
# table 1: Tables 3 and 4
# ---------------------------------------------------------------------------------------------
def table1(args, configs):
    dt = 0.005
    long = args.tau_duration > CHUNK * dt + 1e-9
    out(f"## Table 1: Tables 3 (Cosserat) and 4 (Kirchhoff), dt = 5 ms, {args.points} points, "
        f"{CHUNK} steps (1 s)")
    out()
    out(f"tau: least-squares fit of `log(E - E_eq) = a - 2 t / tau` over t >= {TAU_T_FIT} s (E: total energy, "
        "strain + kinetic + gravity, at every step; E_eq: energy of the unloaded static equilibrium), up to where "
        f"E - E_eq falls below {TAU_FLOOR:g} of its initial value (round-off floor; only backward Euler gets "
        "there), from the 1 s run"
        + (f" and from a {args.tau_duration:g} s run" if long else "") + ". "
        f"'no decay': |tau| > {TAU_NO_DECAY:g} s, or a growth smaller than the energy's oscillation about the "
        "fitted trend; 'unstable': a failed shooting solve, or an energy growth larger than that oscillation; "
        "'(weak)': the fitted decay over the window is smaller than the oscillation (tau imprecise). "
        "'linear 8.9 Hz': the scheme's decay on a linear oscillator at the Euler-Bernoulli first mode "
        "(spec sec. 5.6). tau diff compares "
        + (f"the {args.tau_duration:g} s tau" if long else "the 1 s tau") + " with the paper's. Run: median "
        f"(min) of {args.repeats} calls of the compiled 200-step program after one warm-up call (static solve "
        "and compile excluded; BDF3: 1 call); compile = `jax.jit(simulate).lower().compile()`, once per model "
        "(all schemes share it). Newton: jaxrod's default shooting solver (`DEFAULT_SOLVER`: rtol = atol = "
        "1e-10 on the scaled base loads, Jacobian by `jacfwd` reused across steps, LM fallback). "
        + PAPER_HW[0].upper() + PAPER_HW[1:] + ".")
    out()
    header = ["model", "spatial", "time scheme", "tau 1 s [s]"]
    if long:
        header.append(f"tau {args.tau_duration:g} s [s]")
    header += ["paper tau [s]", "tau diff", "linear 8.9 Hz [s]", "run 200 steps [s] median (min)",
               "paper runtime [s]", "paper / ours", "Newton it/step", "Jacobians/step", "all converged",
               "compile [s]"]
    start_table(header)
    results = {}
    for model_kind in args.models:
        for integ in args.integrators:
            r = configs.get(model_kind, integ)
            f1 = r.scene.reference["first_mode_hz"]
            for key, label, make in SCHEMES:
                if key not in args.schemes:
                    continue
                scheme = make()
                note(f"[table 1] {model_kind}/{integ}/{label}: running ...")
                slow = key == "bdf3"
                med, mn, traj = time_repeats(lambda r=r, s=scheme: r.call(s, dt), 1 if slow else args.repeats)
                conv = np.asarray(traj.stats.converged)
                its = np.asarray(traj.stats.iterations)
                jacs = np.asarray(traj.stats.jacobians)
                e = r.energy(traj)
                tau1, sig1 = fit_tau(np.asarray(traj.times), e, r.e_eq)
                st1 = classify(tau1, sig1, bool(np.all(conv)), bool(np.all(np.isfinite(e))))
                taus = [fmt_tau(tau1, st1)]
                tau, status = tau1, st1
                if long:
                    note(f"[table 1] {model_kind}/{integ}/{label}: {args.tau_duration:g} s run for tau ...")
                    ch = r.chain(scheme, dt, args.tau_duration, e_eq=r.e_eq)
                    tau, sig = fit_tau(ch["times"], ch["energy"], r.e_eq)
                    status = classify(tau, sig, bool(np.all(ch["converged"])) and ch["complete"],
                                      bool(np.all(np.isfinite(ch["energy"]))))
                    taus.append(fmt_tau(tau, status))
                p_tau, p_run, _ = PAPER[(model_kind, integ)][key]
                diff = (f"{100 * (tau / p_tau - 1):+.1f}%" if status in ("ok", "weak") and not isinstance(p_tau, str)
                        else "")
                lin = linear_tau(scheme, f1, dt)
                results[(model_kind, integ, key)] = {"tau": tau, "status": status, "run": med}
                row([
                    model_kind, integ, label, *taus, fmt_paper(p_tau), diff,
                    "grows" if lin < 0 else (f"{lin:.4g}" if abs(lin) < 1e6 else "no decay"),
                    f"{med:.3f} ({mn:.3f})" + (" (1 run)" if slow else ""),
                    fmt_paper(p_run), "" if isinstance(p_run, str) else f"{p_run / med:.2f}x",
                    f"{its.mean():.2f}", f"{jacs.mean():.3f}", str(bool(np.all(conv))),
                    f"{r.lower_s + r.compile_s:.1f}",
                ])
    out()
    return results


# ---------------------------------------------------------------------------------------------
# table 2: minimum stable time step
# ---------------------------------------------------------------------------------------------
def table2(args, configs):
    dts = sorted(args.min_dt_list, reverse=True)
    out(f"## Table 2: minimum stable time step, {args.points} points, >= {args.min_dt_duration:g} s runs")
    out()
    out(f"dt list [ms]: {', '.join(f'{x:g}' for x in dts)}, scanned from the largest down for each row; the "
        "scan stops at the first unstable dt. Stable = every step converged, the state stayed finite and the "
        "energy did not grow (tau as in table 1: positive, or 'no decay'; a growth larger than the energy's "
        f"oscillation is unstable) over a run of >= {args.min_dt_duration:g} s (whole 200-step calls: dt >= "
        f"{1e3 * args.min_dt_duration / CHUNK:g} ms runs 200 steps). A row whose largest dt is already unstable "
        "reports '> largest'. The runs are chains of table 1's 200-step program (no recompilation per dt).")
    out()
    header = ["model", "spatial", "time scheme", "min stable dt [ms]", "paper [ms]", "first unstable dt [ms] (why)",
              "tau at min dt [s]", "Newton it/step at min dt", "wall [s]"]
    start_table(header)
    for model_kind in args.models:
        for integ in args.integrators:
            r = configs.get(model_kind, integ)
            for key, label, make in SCHEMES:
                if key not in args.schemes:
                    continue
                scheme = make()
                best, first_bad, tau_best, its_best = None, None, None, None
                w0 = time.perf_counter()
                for dt_ms in dts:
                    dt = dt_ms * 1e-3
                    note(f"[table 2] {model_kind}/{integ}/{label}: dt {dt_ms:g} ms ...")
                    ch = r.chain(scheme, dt, args.min_dt_duration, e_eq=r.e_eq)
                    conv = bool(np.all(ch["converged"]))
                    finite = bool(np.all(np.isfinite(ch["energy"]))) and ch["complete"]
                    tau, sig = fit_tau(ch["times"], ch["energy"], r.e_eq)
                    status = classify(tau, sig, conv, finite)
                    if status == "unstable":
                        if not conv:
                            why = f"solve failed at t = {(np.flatnonzero(~ch['converged'])[0] + 1) * dt:.3g} s"
                        elif not finite:
                            why = f"energy x{GROWTH_STOP:g} or non-finite by t = {ch['simulated']:.3g} s"
                        elif math.isnan(tau):
                            why = "no energy fit"
                        else:
                            why = f"energy grows, tau = {tau:.3g} s"
                        first_bad = f"{dt_ms:g} ({why})"
                        break
                    best, tau_best, its_best = dt_ms, fmt_tau(tau, status), ch["iterations"].mean()
                p_min = PAPER[(model_kind, integ)][key][2]
                row([
                    model_kind, integ, label,
                    f"{best:g}" if best is not None else f"> {dts[0]:g}", f"{p_min:g}",
                    first_bad or f"none down to {dts[-1]:g}",
                    tau_best or "", "" if its_best is None else f"{its_best:.2f}",
                    f"{time.perf_counter() - w0:.1f}",
                ])
    out()


# ---------------------------------------------------------------------------------------------
# table 3: Fig. 3, cost vs points
# ---------------------------------------------------------------------------------------------
def table3(args):
    dt, n_steps = 0.005, args.scaling_steps
    out(f"## Table 3 (Fig. 3): cost per step vs grid points, BDF2, dt = 5 ms, {n_steps} steps")
    out()
    out(f"Run = median (min) of {args.scaling_repeats} calls of the compiled program (one per size and series, "
        "compile excluded); ratio = ms/step over the previous size's, from the minima (the host is shared and "
        "noise only adds time; the sizes double: O(n) means ~2x, the target is <= ~2.5x); the summary's fits "
        "use the minima too. The paper's Fig. 3 (n = 5 ... 500) is linear in n; its per-step cost at 150 points "
        "from Tables 3/4 (BDF2 runtime / 200): Cosserat Euler 2.3, RK4 9.2; Kirchhoff Euler 1.3, RK4 2.5 ms "
        f"({PAPER_HW}).")
    out()
    header = ["model", "spatial", "points", "compile [s]", "ms/step median (min)", "ratio to previous",
              "Newton it/step", "Jacobians/step", "all converged"]
    start_table(header)
    ratios = {}
    paper_150 = {("cosserat", "euler"): 2.3, ("cosserat", "rk4"): 9.2, ("kirchhoff", "euler"): 1.3,
                 ("kirchhoff", "rk4"): 2.5}
    per_step = {}
    for model_kind in args.models:
        for integ in args.integrators:
            prev = None
            for n in args.sizes:
                sc = get_scene("till-benchmark", n_points=n, integrator=integ, kirchhoff=(model_kind == "kirchhoff"))
                r = Runner(sc.model, n_steps, f"{model_kind}/{integ}/{n} pts")
                scheme = D.bdf2()
                med, mn, traj = time_repeats(lambda r=r, s=scheme: r.call(s, dt), args.scaling_repeats)
                its = np.asarray(traj.stats.iterations)
                jacs = np.asarray(traj.stats.jacobians)
                ms, ms_min = 1e3 * med / n_steps, 1e3 * mn / n_steps
                per_step[(model_kind, integ, n)] = ms_min
                ratio = ms_min / prev if prev else None
                if ratio is not None:
                    ratios.setdefault((model_kind, integ), []).append(ratio)
                prev = ms_min
                row([model_kind, integ, n, f"{r.lower_s + r.compile_s:.1f}", f"{ms:.3f} ({ms_min:.3f})",
                     "" if ratio is None else f"{ratio:.2f}x", f"{its.mean():.2f}", f"{jacs.mean():.3f}",
                     str(bool(np.all(np.asarray(traj.stats.converged))))])
    out()
    rows = []
    for (model_kind, integ), rs in ratios.items():
        ns = [n for n in args.sizes if (model_kind, integ, n) in per_step]
        x = np.asarray(ns, float)
        y = np.asarray([per_step[(model_kind, integ, n)] for n in ns])
        slope = np.polyfit(np.log(x), np.log(y), 1)[0] if len(ns) > 1 else math.nan
        a, b = np.polyfit(x, y, 1) if len(ns) > 1 else (math.nan, math.nan)
        at150 = a * 150 + b
        rows.append([model_kind, integ, f"{max(rs):.2f}x", f"{np.prod(rs) ** (1 / len(rs)):.2f}x",
                     f"{slope:.2f}", f"{1e3 * a:.2f} us/point + {b:.3f} ms", f"{at150:.2f}",
                     f"{paper_150[(model_kind, integ)]:g}", "yes" if max(rs) <= 2.5 else "**no**"])
    if rows:
        out("Summary: log-log slope of ms/step against points (1 = linear), linear fit, and whether every "
            "doubling costs <= 2.5x:")
        out()
        out(table(["model", "spatial", "max ratio per doubling", "geometric mean ratio", "log-log slope",
                   "linear fit", "fit at 150 points [ms/step]", "paper at 150 [ms/step]", "<= 2.5x per doubling"],
                  rows))
        out()


# ---------------------------------------------------------------------------------------------
# table 4: Fig. 7, real-time ratio
# ---------------------------------------------------------------------------------------------
def table4(args):
    out(f"## Table 4 (Fig. 7): real-time ratio, weight release and impulse, {args.rt_points} points, RK4, "
        "BDF-alpha -0.4")
    out()
    out("Real-time ratio = simulated time / wall time of the compiled calls (compile and static solve excluded; "
        f"median of {args.rt_repeats} chains). Each scene runs its default duration (weight release 2 s, impulse "
        f"1 s{'; scaled' if args.rt_duration_scale != 1 else ''}) as a chain of calls of one compiled "
        f"{args.rt_chunk}-step program per scene (the simulated time is rounded up to whole calls). "
        "Paper (Fig. 7, " + PAPER_HW + "): most runs real-time; the impulse is soft real-time at dt = 4 ms; its "
        "smallest dt is 2 ms (convergence problems below), slower than real time; the weight release is "
        "much cheaper. 'seg.': shooting segments (1 = simple shooting; the scenes default to multiple "
        "shooting with 3 segments, `--rt-segments`). A run with a failed shooting solve is not a simulation: its ratio is shown in brackets "
        "only (after the failure the state is NaN and the steps cost nothing).")
    out()
    header = ["scene", "dt [ms]", "steps", "simulated [s]", "wall [s] median", "real-time ratio", "real time?",
              "Newton it/step (mean, max)", "Jacobians/step", "all converged", "compile [s]"]
    start_table(header)
    seg = {} if args.rt_segments is None else {"segments": args.rt_segments}
    runs = [("till-weight-release", "till-weight-release", dict(seg))]
    runs += [("till-impulse" + ("" if peak == 5.0 else f" (peak {peak:g} N)"), "till-impulse", {"peak": peak, **seg})
             for peak in args.impulse_peaks]
    for label, name, kw in runs:
        sc = get_scene(name, n_points=args.rt_points, **kw)
        label = f"{label}, {getattr(sc.model, 'segments', 1)} seg."
        r = Runner(sc.model, args.rt_chunk, f"{label}/{args.rt_points} pts")
        scheme = sc.scheme
        duration = sc.duration * args.rt_duration_scale
        for dt_ms in args.rt_dts:
            dt = dt_ms * 1e-3
            note(f"[table 4] {label}: dt {dt_ms:g} ms ...")
            r.call(scheme, dt)  # warm-up
            walls, ch = [], None
            for _ in range(max(1, args.rt_repeats)):
                ch = r.chain(scheme, dt, duration, stop_on_failure=False, keep_energy=False)
                walls.append(ch["wall"])
            wall = float(np.median(walls))
            ratio = ch["simulated"] / wall
            its, jacs, conv = ch["iterations"], ch["jacobians"], ch["converged"]
            fail = np.flatnonzero(~conv)
            failed = fail.size > 0
            row([label, f"{dt_ms:g}", len(its), f"{ch['simulated']:.3f}", f"{wall:.3f}",
                 f"n/a (failed; {ratio:.2f})" if failed else f"{ratio:.2f}",
                 "failed" if failed else ("yes" if ratio >= 1 else "no"), f"{its.mean():.2f}, {its.max()}", f"{jacs.mean():.3f}",
                 "True" if fail.size == 0 else f"**False** ({fail.size} steps, first at t = {(fail[0] + 1) * dt:.3f} s)",
                 f"{r.lower_s + r.compile_s:.1f}"])
    out()


def floats(text):
    return tuple(float(x) for x in text.split(",") if x.strip())


def ints(text):
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", default=None, help="comma-separated subset of 1,2,3,4 (default 1,3,4; 1,2,3,4 with "
                   "--min-dt or --quick)")
    p.add_argument("--min-dt", action="store_true", help="also run table 2 (minimum stable dt; slow)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 30 points, Euler only, 1 repeat, 3 sizes, 2 dts in tables 2 and 4, short runs")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per measurement (median)")
    p.add_argument("--scaling-repeats", type=int, default=5, help="timed calls per size in table 3 (median, min)")
    p.add_argument("--points", type=int, default=150, help="grid points in tables 1 and 2 (paper: 150)")
    p.add_argument("--models", default="cosserat,kirchhoff", help="subset of cosserat,kirchhoff")
    p.add_argument("--integrators", default=None, help="subset of euler,rk4 (default both; euler with --quick)")
    p.add_argument("--schemes", default=",".join(k for k, _, _ in SCHEMES),
                   help="subset of " + ",".join(k for k, _, _ in SCHEMES))
    p.add_argument("--tau-duration", type=float, default=1.0,
                   help="simulated time [s] of the tau fit in table 1 (default 1 s, as the paper's table; tau for "
                        "alpha = -0.48 from 1 s is imprecise: try 10)")
    p.add_argument("--min-dt-list", type=floats, default=None, help="table 2's dt list [ms] (comma-separated)")
    p.add_argument("--min-dt-duration", type=float, default=1.0, help="simulated time [s] per table 2 run")
    p.add_argument("--sizes", type=ints, default=None, help="table 3's point counts (comma-separated)")
    p.add_argument("--scaling-steps", type=int, default=50, help="steps per run in table 3")
    p.add_argument("--rt-points", type=int, default=100,
                   help="grid points in table 4 (n - 1 must be divisible by the segments, 3 by default)")
    p.add_argument("--rt-dts", type=floats, default=None, help="table 4's time steps [ms] (default 1,2,4,8)")
    p.add_argument("--rt-chunk", type=int, default=125, help="steps per compiled call in table 4")
    p.add_argument("--rt-repeats", type=int, default=None, help="timed chains per table 4 entry (default 1)")
    p.add_argument("--impulse-peaks", type=floats, default=(5.0,),
                   help="peak force(s) [N] of the impulse in table 4 (scene default 5 N; e.g. 5,1)")
    p.add_argument("--rt-segments", type=int, default=None,
                   help="shooting segments of the table 4 scenes (default: the scenes' 3; 1 = simple shooting; "
                        "must divide --rt-points - 1)")
    p.add_argument("--rt-duration-scale", type=float, default=None, help="scale the scenes' durations in table 4")
    args = p.parse_args(argv)

    if args.tables is None:
        args.tables = "1,2,3,4" if (args.min_dt or args.quick) else "1,3,4"
    tables = {t.strip() for t in args.tables.split(",") if t.strip()}
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.schemes = [s.strip() for s in args.schemes.split(",") if s.strip()]
    if args.integrators is None:
        args.integrators = "euler" if args.quick else "euler,rk4"
    args.integrators = [s.strip() for s in args.integrators.split(",") if s.strip()]
    for name, vals, allowed in (("--models", args.models, MODELS), ("--integrators", args.integrators, INTEGRATORS),
                                ("--schemes", args.schemes, [k for k, _, _ in SCHEMES])):
        bad = [v for v in vals if v not in allowed]
        if bad:
            p.error(f"{name}: unknown {bad}; choose from {', '.join(allowed)}")
    if args.quick:
        args.repeats = 1
        args.scaling_repeats = 1
        if args.points == 150:
            args.points = 30
        args.sizes = args.sizes or (10, 20, 40)
        args.min_dt_list = args.min_dt_list or (50.0, 5.0)
        args.rt_dts = args.rt_dts or (4.0, 8.0)
        args.rt_points = min(args.rt_points, 31)  # n - 1 divisible by the scenes' 3 segments
        args.rt_duration_scale = 0.25 if args.rt_duration_scale is None else args.rt_duration_scale
        args.scaling_steps = min(args.scaling_steps, 20)
        args.rt_chunk = min(args.rt_chunk, 31)
    args.sizes = args.sizes or SIZES
    args.min_dt_list = args.min_dt_list or MIN_DT_MS
    args.rt_dts = args.rt_dts or RT_DT_MS
    args.rt_repeats = args.rt_repeats or 1
    args.rt_duration_scale = 1.0 if args.rt_duration_scale is None else args.rt_duration_scale

    machine_header()
    t_all = time.perf_counter()
    configs = Configs(args)
    if "1" in tables:
        table1(args, configs)
    if "2" in tables:
        table2(args, configs)
    if configs.cache:
        out("Per-configuration setup (not in any timing): " + "; ".join(
            f"{m}/{i}: static solve {r.static_s:.1f} s, compile {r.lower_s + r.compile_s:.1f} s "
            f"(lower {r.lower_s:.1f} + compile {r.compile_s:.1f})" for (m, i), r in configs.cache.items()) + ".")
        out()
    if "3" in tables:
        table3(args)
    if "4" in tables:
        table4(args)
    out(f"Total wall time of this script: {time.perf_counter() - t_all:.0f} s.")


if __name__ == "__main__":
    main()
