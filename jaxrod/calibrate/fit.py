"""Fitting loops on ``optax``: an :class:`Objective` compiled once and :func:`fit` (L-BFGS with
optax's zoom line search, or Adam) with early stopping, progress lines and a :class:`FitReport`.

The objective is a function of the physical parameter values (a dict, see
:class:`~jaxrod.calibrate.params.ParamSet`) and of a data pytree passed as an *argument* of the
compiled program (so new measurements of the same shape, e.g. the next video frame, reuse it)::

    def residuals(values, data):          # -> r (M,) or (r, mask)
        traj = jaxrod.simulate(params.apply(model, values), dt=..., n_steps=..., throw=False)
        return losses.tip_residuals(traj, data, scale=1e-4)

    obj = Objective(residuals, params, data=tracks)      # robust="huber" for outliers
    report = fit(obj, method="lbfgs")                    # FitReport
    print(report.summary())

Gradients: with few parameters (``mode="forward"``, the default up to 16 free entries) the
compiled program returns the residuals and their Jacobian ``J = d r / d theta`` by forward-mode
differentiation (one ``jax.jacfwd``: the cost of ~``n`` tangent passes through the simulation,
measured on the weight release with 3 parameters: 1.2-4x cheaper to run and ~2x cheaper to
compile than reverse mode through the Cosserat time loop); the loss gradient is ``J^T psi(r)`` and the same program gives the Gauss-Newton
matrix for :func:`~jaxrod.calibrate.identify.identify`. With many parameters use
``mode="reverse"`` (``jax.value_and_grad``).

L-BFGS runs optax's ``lbfgs`` with its zoom line search inside a small compiled program that calls
the (already compiled) objective through ``jax.pure_callback``, so the simulation is compiled
exactly once however many line-search trials there are.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..progress import activity
from ..progress import say as _say
from .losses import ROBUST_KINDS, robust_loss
from .params import ParamSet

__all__ = ["FitReport", "Objective", "fit"]

#: free-parameter count up to which ``mode="auto"`` differentiates in forward mode
FORWARD_MODE_MAX_PARAMS = 16


class Objective:
    """A (robust) least-squares or scalar loss over a :class:`ParamSet`, compiled once.

    Arguments:
        residual_fn: ``(values: dict, data) -> r (M,)`` or ``(r, mask)`` (``mask (M,)`` bool;
            masked entries must not depend on the parameters, e.g. be 0). Residuals should be
            scaled to order one at a good fit (divide by the measurement error).
        params: the :class:`ParamSet`.
        data: default data pytree (arrays are arguments of the compiled program, non-arrays static).
        robust: ``"l2"`` (default), ``"huber"`` or ``"cauchy"`` (see :mod:`~jaxrod.calibrate.losses`).
        delta: robust threshold in residual units.
        mode: ``"forward"``, ``"reverse"`` or ``"auto"`` (forward for <= 16 free entries).

    The loss is the mean of ``rho(r)`` over measured entries. Use :meth:`from_loss` for a scalar
    loss function (reverse mode, no identifiability analysis).
    """

    def __init__(
        self,
        residual_fn: Callable,
        params: ParamSet,
        data=None,
        *,
        robust: str = "l2",
        delta: float = 1.0,
        mode: str = "auto",
    ):
        if not isinstance(params, ParamSet):
            raise TypeError(f"params must be a ParamSet, got {type(params).__name__}")
        if robust not in ROBUST_KINDS:
            raise ValueError(f"robust must be one of {ROBUST_KINDS}, got {robust!r}")
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(f"delta must be a finite number > 0, got {delta}")
        if mode == "auto":
            mode = "forward" if params.size <= FORWARD_MODE_MAX_PARAMS else "reverse"
        if mode not in ("forward", "reverse"):
            raise ValueError(
                f"mode must be 'forward', 'reverse' or 'auto', got {mode!r}"
            )
        self.params = params
        self.data = data
        self.robust = robust
        self.delta = float(delta)
        self.mode = mode
        self.n_evaluations = 0
        #: wall time [s] of the first evaluation (compilation + one run)
        self.compile_time = None
        #: process CPU time [s] of the first evaluation (on a shared machine the figure to compare)
        self.compile_cpu = None
        self._residual_fn = residual_fn
        self._scalar_fn = None

        def res(theta, data):
            out = residual_fn(params.from_vector(theta), data)
            r, m = (
                out if isinstance(out, tuple) else (out, jnp.ones(jnp.shape(out), bool))
            )
            r = jnp.ravel(r)
            return r, jnp.ravel(jnp.asarray(m, bool)) & jnp.ones(r.shape, bool)

        def res_jac(theta, data):
            def f(th):
                r, m = res(th, data)
                return r, (r, m)

            J, (r, m) = jax.jacfwd(f, has_aux=True)(theta)
            return r, m, J

        def value_grad(theta, data):
            def loss(th):
                r, m = res(th, data)
                return robust_loss(r, m, kind=robust, delta=delta), (r, m)

            (v, (r, m)), g = jax.value_and_grad(loss, has_aux=True)(theta)
            return v, g, r, m

        def from_jac(r, m, J):
            v, psi = jax.value_and_grad(
                lambda rr: robust_loss(rr, m, kind=robust, delta=delta)
            )(r)
            return v, J.T @ psi

        self._res = eqx.filter_jit(res)
        self._res_jac = eqx.filter_jit(res_jac)
        self._value_grad_rev = eqx.filter_jit(value_grad)
        self._from_jac = jax.jit(from_jac)

    @classmethod
    def from_loss(cls, loss_fn: Callable, params: ParamSet, data=None) -> Objective:
        """An objective from a scalar ``loss_fn(values, data)`` (reverse mode)."""
        obj = cls(lambda v, d: jnp.zeros(1), params, data, mode="reverse")
        obj._scalar_fn = loss_fn
        obj._value_grad_rev = eqx.filter_jit(
            lambda th, d: (
                *jax.value_and_grad(lambda t: loss_fn(params.from_vector(t), d))(th),
                None,
                None,
            )
        )
        return obj

    @property
    def has_residuals(self) -> bool:
        return self._scalar_fn is None

    def _data(self, data):
        return self.data if data is None else data

    def _timed(self, fn, *args):
        t0, c0 = time.perf_counter(), time.process_time()
        out = jax.block_until_ready(fn(*args))
        if self.compile_time is None:
            self.compile_time = time.perf_counter() - t0
            self.compile_cpu = time.process_time() - c0
        self.n_evaluations += 1
        return out

    # ---- evaluations (host-side results as numpy) -------------------------------------------------
    def residuals(self, theta, data=None):
        """``(r, mask)`` at the unconstrained ``theta`` (numpy arrays)."""
        if not self.has_residuals:
            raise ValueError(
                "this objective was built from a scalar loss (Objective.from_loss); it has no residuals"
            )
        theta = jnp.asarray(theta, dtype=float)
        if self.mode == "forward":
            r, m, _ = self._timed(self._res_jac, theta, self._data(data))
        else:
            r, m = self._timed(self._res, theta, self._data(data))
        return np.asarray(r), np.asarray(m)

    def residuals_and_jacobian(self, theta, data=None):
        """``(r (M,), mask (M,), J (M, n))`` with ``J = d r / d theta`` (forward mode)."""
        if not self.has_residuals:
            raise ValueError(
                "this objective was built from a scalar loss (Objective.from_loss); it has no residuals"
            )
        r, m, J = self._timed(
            self._res_jac, jnp.asarray(theta, dtype=float), self._data(data)
        )
        return np.asarray(r), np.asarray(m), np.asarray(J)

    def value_and_grad(self, theta, data=None):
        """``(loss, grad (n,))`` at the unconstrained ``theta`` (a float and a numpy array)."""
        theta = jnp.asarray(theta, dtype=float)
        if self.mode == "forward" and self.has_residuals:
            r, m, J = self._timed(self._res_jac, theta, self._data(data))
            v, g = self._from_jac(r, m, J)
        else:
            v, g, _, _ = self._timed(self._value_grad_rev, theta, self._data(data))
        return float(v), np.asarray(g, dtype=float)

    def loss(self, theta, data=None) -> float:
        return self.value_and_grad(theta, data)[0]


@dataclass
class FitReport:
    """Result of :func:`fit`.

    Attributes:
        values: fitted physical values ``{name: value}`` (fixed parameters included).
        initial_values: the start.
        theta: ``(n,)`` fitted unconstrained vector.
        loss: final loss; grad_norm: max-norm of its gradient in unconstrained units.
        iterations: optimiser iterations; evaluations: objective evaluations (incl. line search).
        wall_time: wall time of the fit [s] (including compilation in the first evaluation);
        compile_time: wall time of the objective's first evaluation (compile + run) [s] if it
            happened during this fit, else ``None``; compile_cpu: its process CPU time [s].
        cpu_time: process CPU time of the fit [s] (all threads).
        history: ``(iterations + 1,)`` loss at every iterate.
        converged: a stopping tolerance was met; reason: why the loop stopped.
        method: ``"lbfgs"`` or ``"adam"``.
    """

    values: dict
    initial_values: dict
    theta: np.ndarray
    loss: float
    grad_norm: float
    iterations: int
    evaluations: int
    wall_time: float
    compile_time: float | None
    history: np.ndarray
    converged: bool
    reason: str
    method: str
    labels: list = field(default_factory=list)
    units: dict = field(default_factory=dict)
    compile_cpu: float | None = None
    cpu_time: float | None = None

    def summary(self, true_values: Mapping | None = None) -> str:
        """Table of start, fitted (and, given ``true_values``, true values and relative errors)."""
        lines = [
            f"fit ({self.method}): {'converged' if self.converged else 'NOT converged'} ({self.reason}); "
            f"{self.iterations} iterations, {self.evaluations} evaluations, loss {self.loss:.6g}, "
            f"wall {self.wall_time:.1f} s"
            + (f", {self.cpu_time:.1f} s CPU" if self.cpu_time is not None else "")
            + (
                f" (first evaluation incl. compile {self.compile_time:.1f} s"
                + (f", {self.compile_cpu:.1f} s CPU)" if self.compile_cpu is not None else ")")
                if self.compile_time
                else ""
            ),
        ]
        head = f"  {'parameter':<12s} {'start':>12s} {'fitted':>12s}"
        if true_values is not None:
            head += f" {'true':>12s} {'rel. error':>11s}"
        lines.append(head + "  unit")
        for name, v in self.values.items():
            v = np.asarray(v)
            v0 = np.asarray(self.initial_values[name])
            if v.shape != ():
                lines.append(f"  {name:<12s} (array of shape {v.shape})")
                continue
            row = f"  {name:<12s} {float(v0):12.6g} {float(v):12.6g}"
            if true_values is not None and name in true_values:
                t = float(true_values[name])
                row += f" {t:12.6g} {100 * (float(v) - t) / t:+10.3f}%"
            lines.append(row + f"  {self.units.get(name, '')}")
        return "\n".join(lines)


def _start_theta(objective: Objective, start):
    ps = objective.params
    if start is None:
        return np.asarray(ps.to_vector(), dtype=float)
    if isinstance(start, Mapping):
        unknown = sorted(set(start) - set(ps.names))
        fixed = sorted(p.name for p in ps.parameters if p.fixed and p.name in start
                       and not np.array_equal(np.asarray(start[p.name], dtype=float), np.asarray(p.value, dtype=float)))
        if unknown or fixed:
            what = (f"unknown parameter names {unknown}" if unknown
                    else f"new values for the fixed parameters {fixed} (fixed parameters keep their value)")
            raise ValueError(
                f"start gives {what}; known parameters: {list(ps.names)} (free: {[p.name for p in ps.free]})"
            )
        vals = ps.initial_values()
        vals.update({k: jnp.asarray(v, dtype=float) for k, v in start.items()})
        return np.asarray(ps.to_vector(vals), dtype=float)
    theta = np.asarray(start, dtype=float)
    if theta.shape != (ps.size,):
        raise ValueError(
            f"start must be a dict of values or an unconstrained vector of shape ({ps.size},), got {theta.shape}"
        )
    return theta


def _fmt_values(ps: ParamSet, theta, max_items=6):
    vals = ps.from_vector(jnp.asarray(theta))
    parts = []
    for p in ps.free[:max_items]:
        v = np.asarray(vals[p.name])
        parts.append(
            f"{p.name}={float(v):.6g}"
            if v.shape == ()
            else f"{p.name}=<{v.size} values>"
        )
    if len(ps.free) > max_items:
        parts.append("...")
    return " ".join(parts)


#: compiled L-BFGS steps, keyed by (n, memory_size, max_linesearch_steps); the objective and its
#: data are looked up at call time, so every objective of the same size shares one program
_LBFGS_STEPS: dict = {}


def _lbfgs_step(n: int, memory_size: int, max_linesearch_steps: int):
    """A compiled L-BFGS step (optax ``lbfgs`` + zoom line search) whose objective is evaluated on
    the host through ``jax.pure_callback`` (``holder["objective"]`` with ``holder["data"]``).
    Not re-entrant: one fit at a time per process."""
    key = (n, memory_size, max_linesearch_steps)
    if key in _LBFGS_STEPS:
        return _LBFGS_STEPS[key]
    holder = {"objective": None, "data": None, "device": None}

    def host_vg(theta):
        # JAX runs callbacks under a default-device context; restore the caller's so that the
        # objective's compiled program is found in the cache instead of being traced again
        with jax.default_device(holder["device"]):
            v, g = holder["objective"].value_and_grad(np.asarray(theta), holder["data"])
        return np.asarray(v, dtype=np.float64), np.asarray(g, dtype=np.float64)

    shapes = (
        jax.ShapeDtypeStruct((), jnp.float64),
        jax.ShapeDtypeStruct((n,), jnp.float64),
    )

    @jax.custom_vjp
    def fn(theta):
        return jax.pure_callback(host_vg, shapes, theta)[0]

    def fn_fwd(theta):
        v, g = jax.pure_callback(host_vg, shapes, theta)
        return v, g

    def fn_bwd(g, ct):
        return (ct * g,)

    fn.defvjp(fn_fwd, fn_bwd)
    opt = optax.lbfgs(
        memory_size=memory_size,
        linesearch=optax.scale_by_zoom_linesearch(
            max_linesearch_steps=max_linesearch_steps, initial_guess_strategy="one"
        ),
    )
    vg_state = optax.value_and_grad_from_state(fn)

    @jax.jit
    def step(theta, state):
        v, g = vg_state(theta, state=state)
        updates, state = opt.update(g, state, theta, value=v, grad=g, value_fn=fn)
        return optax.apply_updates(theta, updates), state, v, g

    out = (opt, step, holder)
    _LBFGS_STEPS[key] = out
    return out


class _StoppingRule:
    """Early stopping shared by the optimisers: gradient max-norm <= ``gtol``, or a relative loss
    change <= ``ftol`` for ``patience`` consecutive iterations. Called once per iterate with the
    loss history (this iterate last) and the gradient max-norm; returns the reason or ``""``."""

    def __init__(self, gtol, ftol, patience):
        self.gtol, self.ftol, self.patience, self.small = gtol, ftol, patience, 0

    def __call__(self, history, gn):
        if math.isfinite(gn) and gn <= self.gtol:
            return f"gradient max-norm {gn:.2e} <= gtol {self.gtol:g}"
        v = history[-1]
        if len(history) > 1 and abs(history[-2] - v) <= self.ftol * max(abs(v), 1e-30):
            self.small += 1
            if self.small >= self.patience:
                return f"loss changed by <= ftol {self.ftol:g} (relative) for {self.patience} iterations"
        else:
            self.small = 0
        return ""


def fit(
    objective: Objective,
    start=None,
    *,
    method: str = "lbfgs",
    data=None,
    max_iters: int = 100,
    gtol: float = 1e-6,
    ftol: float = 1e-10,
    patience: int = 3,
    learning_rate: float = 0.02,
    memory_size: int = 10,
    max_linesearch_steps: int = 20,
    print_every: int = 1,
    verbose: bool = True,
    stream=None,
) -> FitReport:
    """Minimise ``objective`` from ``start``.

    Arguments:
        objective: an :class:`Objective`.
        start: ``None`` (the parameters' initial values), a dict of physical values, or an
            unconstrained vector.
        method: ``"lbfgs"`` (optax L-BFGS with zoom line search) or ``"adam"``.
        data: data pytree for this fit (default ``objective.data``).
        max_iters: maximum optimiser iterations.
        gtol: stop when ``max |d loss / d theta| <= gtol`` (unconstrained units: for log
            parameters, per relative change).
        ftol: stop when the loss changes by at most ``ftol * max(|loss|, 1e-30)`` (relative)
            for ``patience`` consecutive iterations.
        learning_rate: Adam step size in unconstrained units (0.02 = 2% for log parameters).
        memory_size, max_linesearch_steps: L-BFGS settings.
        print_every: progress line every this many iterations (to ``stream``, default stderr).
        verbose: ``False`` prints nothing.

    Returns:
        :class:`FitReport` at the best iterate seen.

    Raises:
        ValueError: bad options, or a non-finite loss at the start.
    """
    if method not in ("lbfgs", "adam"):
        raise ValueError(f"method must be 'lbfgs' or 'adam', got {method!r}")
    if int(max_iters) < 0:
        raise ValueError(f"max_iters must be >= 0, got {max_iters}")
    for name, v in (("gtol", gtol), ("ftol", ftol)):
        if not (v >= 0):
            raise ValueError(f"{name} must be >= 0, got {v}")
    if int(patience) < 1:
        raise ValueError(f"patience must be >= 1, got {patience}")
    if method == "adam" and not (learning_rate > 0):
        raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
    stream = sys.stderr if stream is None else stream
    ps = objective.params
    data = objective.data if data is None else data
    theta = _start_theta(objective, start)
    n = theta.size
    compiled_before = objective.compile_time is not None
    evals0 = objective.n_evaluations
    t_start, cpu_start = time.perf_counter(), time.process_time()

    def say(msg):
        if verbose:
            _say(msg, stream)

    say(
        f"fit: {method}, {n} free parameter(s) {ps.labels()}, {objective.mode}-mode derivatives"
    )
    history: list[float] = []
    best = (math.inf, theta.copy(), math.inf)
    reason, converged = "max_iters reached", False
    should_stop = _StoppingRule(gtol, ftol, patience)
    it = 0

    def progress(k, v, gn, th, force=False):
        if verbose and print_every and (force or k % int(print_every) == 0):
            say(
                f"  iter {k:4d}  loss {v:.8e}  |grad| {gn:.2e}  {_fmt_values(ps, th)}  "
                f"({objective.n_evaluations - evals0} evals, {time.perf_counter() - t_start:.1f} s)"
            )

    def check_start(k, v):
        if k == 0 and not math.isfinite(v):
            raise ValueError(f"the loss is not finite at the start ({v}); check the start values and the data")

    def record(k, v, g, th):
        """Book-keeping shared by both optimisers; returns the stopping reason or None."""
        nonlocal best
        gn = float(np.max(np.abs(g))) if g.size else 0.0
        history.append(v)
        if v <= best[0]:
            best = (v, np.asarray(th), gn)
        progress(k, v, gn, np.asarray(th))
        return should_stop(history, gn)

    if not compiled_before:
        say("fit: the first evaluation compiles the simulation and its derivatives "
            "(first run of this shape; cached afterwards)")

    def doing():
        if objective.compile_time is None:
            return "compiling and running the first evaluation of the objective"
        return f"fitting (iteration {it}, {objective.n_evaluations - evals0} evaluations so far)"

    with activity(doing, enabled=verbose, stream=stream):
        if method == "lbfgs":
            opt, step, holder = _lbfgs_step(n, int(memory_size), int(max_linesearch_steps))
            holder.update(
                objective=objective, data=data, device=jax.config.jax_default_device
            )
            state = opt.init(jnp.asarray(theta))
            th = jnp.asarray(theta)
            while True:
                th_new, state_new, v, g = step(th, state)
                v, g = float(v), np.asarray(g)
                check_start(it, v)
                stop = record(it, v, g, th)
                if stop:
                    reason, converged = stop, True
                    break
                if it >= max_iters:
                    break
                th, state = th_new, state_new
                it += 1
            holder.update(objective=None, data=None)
        else:
            opt = optax.adam(learning_rate)
            state = opt.init(jnp.asarray(theta))
            update = jax.jit(opt.update)
            th = jnp.asarray(theta)
            while True:
                v, g = objective.value_and_grad(th, data)
                check_start(it, v)
                if not math.isfinite(v):
                    reason = (
                        "non-finite loss (simulation failed?); returning the best iterate"
                    )
                    break
                stop = record(it, v, np.asarray(g), th)
                if stop:
                    reason, converged = stop, True
                    break
                if it >= max_iters:
                    break
                updates, state = update(jnp.asarray(g), state, th)
                th = optax.apply_updates(th, updates)
                it += 1

    wall = time.perf_counter() - t_start
    v_best, th_best, g_best = best
    progress(it, v_best, g_best, th_best, force=True)
    report = FitReport(
        values={
            k: np.asarray(v) for k, v in ps.from_vector(jnp.asarray(th_best)).items()
        },
        initial_values={
            k: np.asarray(v) for k, v in ps.from_vector(jnp.asarray(theta)).items()
        },
        theta=np.asarray(th_best),
        loss=float(v_best),
        grad_norm=float(g_best),
        iterations=it,
        evaluations=objective.n_evaluations - evals0,
        wall_time=wall,
        compile_time=None if compiled_before else objective.compile_time,
        compile_cpu=None if compiled_before else objective.compile_cpu,
        cpu_time=time.process_time() - cpu_start,
        history=np.asarray(history),
        converged=converged,
        reason=reason,
        method=method,
        labels=ps.labels(),
        units={p.name: p.unit for p in ps.parameters},
    )
    say(
        f"fit: {reason}; {it} iterations, {report.evaluations} evaluations, loss {v_best:.6e}, wall {wall:.1f} s"
    )
    return report
