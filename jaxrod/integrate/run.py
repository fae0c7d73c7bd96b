"""The entry points: :func:`simulate` (one loop over any model's stepper), :func:`solve_static`
and :func:`simulate_adaptive`.

The time loop is a ``jax.lax`` loop over the steps of the model's
:class:`~jaxrod.integrate.base.AbstractStepper`; each step is one Newton solve, so a run is one
compiled XLA program that ``jax.vmap`` batches and ``jax.grad`` differentiates (the Newton solves by
the implicit function theorem, the time loop by reverse-mode through ``scan``). A plain call runs
the same program in chunks from the host (:func:`jaxrod.integrate.loop.run_steps`), so that the
number of steps, the save interval, ``dt``, loads and material values never force a recompile.

Failures cannot hide. Every step records ``converged``, iterations and residual. A step whose Newton
solve fails is first retried (one-step schemes, ``fallback=True``): with backward Euler at the same
step, then with two backward-Euler half steps; recovered steps are counted in
``SolverStats.fallbacks`` and reported. A step that still fails is not accepted: the run stops
advancing (later steps are skipped), keeps the last converged state in ``Trajectory.final`` and
marks every later frame invalid (``Trajectory.valid`` False, positions, frames, ``q`` and ``v`` NaN).
:func:`simulate` then raises :class:`ConvergenceError` with the step, time and residual
(``throw=True``) or hands the masked trajectory back (``throw=False``). Inside
``jax.jit``/``jax.vmap`` the error is raised from the compiled program by a host callback (it
reaches the caller wrapped in ``jax.errors.JaxRuntimeError``; :func:`convergence_errors` turns it
back into the :class:`ConvergenceError`, which lists the failed batch members under ``vmap``).
"""

from __future__ import annotations

import time as _time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..progress import announced, say
from ..solvers.newton import NewtonSolver
from .schemes import AbstractScheme, BackwardEuler
from ..validation import check_finite_scalar, check_int
from .schemes import resolve_scheme
from .base import State
from .implicit import AbstractImplicitModel, initial_state
from .loop import _check_positive, _f, _is_traced, run_steps, scan_saves_checked, validate_steps
from .results import (
    ConvergenceError,
    FallbackWarning,
    SolverStats,
    Trajectory,
    _failure_report,
    _raise_in_program,
    _valid_frames,
)


def _is_batched(tree):
    # simulate() called inside jax.vmap sees batch tracers (not under vmap(jit(...)))
    from jax._src.interpreters.batching import BatchTracer

    return any(isinstance(x, BatchTracer) for x in jax.tree_util.tree_leaves(tree))


def _stepper_of(model, scheme, solver, fallback):
    if not hasattr(model, "stepper"):
        raise TypeError(
            f"simulate() got an unsupported model type {type(model).__name__}: a model needs a "
            "stepper(scheme, solver) method (implement jaxrod.AbstractImplicitModel, or see "
            "jaxrod.integrate.AbstractStepper)"
        )
    return model.stepper(scheme, solver, fallback=fallback)


def simulate(
    model,
    *,
    dt,
    n_steps: int | None = None,
    duration: float | None = None,
    state0=None,
    t0: float = 0.0,
    scheme=None,
    solver: NewtonSolver | None = None,
    save_every: int = 1,
    throw: bool = True,
    progress: bool | int = False,
    fallback: bool | None = None,
    checkpoint: bool = False,
):
    """Integrate ``model`` in time.

    Args:
        model: any model with a stepper: an :class:`~jaxrod.AbstractImplicitModel` (DER rods and
            networks, PCS, reduced rods, rigid-body and hybrid systems), a
            :class:`~jaxrod.models.cosserat.CosseratModel` (shooting; default scheme BDF2, initial
            state the static equilibrium at ``t0``) or a
            :class:`~jaxrod.models.cosserat.StewartGough` robot.
        dt: time step [s], > 0.
        n_steps: number of steps (an integer); or give ``duration`` [s] (rounded to a whole number
            of steps); given both, they must agree (``n_steps * dt == duration``).
        state0: initial state (:class:`State` for implicit models); default: the model's own.
        t0: initial time [s].
        scheme: time scheme or its name, e.g. ``"backward_euler"`` (:func:`~jaxrod.integrate.schemes.scheme_from_name`).
            Default :class:`~jaxrod.integrate.schemes.AverageVectorField` for implicit models (energy
            conserving; the same as implicit midpoint on linear problems, and unlike it stable on
            geometrically nonlinear rods at large steps); BDF2 for shooting models.
        solver: Newton configuration; ``linear_solver=None`` picks the model's structured solver.
            The default (``None``) reuses factorisations across steps (chord steps while they contract)
            and converges each step to 1e-9 in the unknowns (metres/radians for rods).
        save_every: save one frame every this many steps (must divide ``n_steps``).
        throw: raise :class:`ConvergenceError` (with ``step``, ``time``, ``residual``) when a step
            fails. With ``False`` the trajectory comes back with the failure in ``stats`` and every
            frame after it invalid (``Trajectory.valid`` False, arrays NaN). Either way the run
            stops advancing at the first failed step.
        progress: print progress lines to stderr while running (``True`` for ~20 step lines or an
            int count), with what is compiled and heartbeat lines while it lasts
            (:mod:`jaxrod.progress`). The compiled programs are the same as for a silent run.
        fallback: retry a failed step with backward Euler at ``dt``, then with two backward-Euler
            half steps (:func:`~jaxrod.integrate.implicit.fallback_ladder`; one-step schemes of
            implicit models). Recovered steps are counted in ``stats.fallbacks`` and reported by a
            :class:`FallbackWarning`. A plain call compiles the fallback program only when a step
            has failed. Under ``jax.jit``/``jax.grad`` the ladder is compiled into every step;
            default (``None``): on, except when ``simulate`` itself is called under ``jax.vmap``
            (a batched retry runs every attempt for every member, up to 4 solves per step; pass
            ``True`` to force it). ``jax.vmap(jax.jit(f))`` hides the batch from ``simulate``:
            pass ``fallback=False`` there.
        checkpoint: under ``jax.grad`` (reverse mode), recompute each step and each save interval
            in the backward pass instead of storing their intermediates (``jax.checkpoint``): the
            tape holds the states at the saved frames and one interval's states, instead of every
            step's linearisation (for long runs: choose ``save_every`` near ``sqrt(n_steps)``), at
            the cost of about one more forward pass. Same gradients; no effect on plain runs.

    Returns:
        :class:`Trajectory` (a subclass for some models) with ``n_steps // save_every + 1`` saved
        frames.

    Works under ``jax.jit``/``jax.vmap``/``jax.grad``; ``progress`` is then ignored and a failure
    (``throw=True``) is raised from the compiled program: wrap the call in
    :func:`convergence_errors` to catch it as :class:`ConvergenceError` (under ``vmap`` its
    ``members`` lists the failed batch members), or pass ``throw=False`` and read
    ``Trajectory.valid`` / ``stats`` per member. The host callback that raises keeps JAX from
    writing the enclosing program to the persistent compilation cache; ``throw=False`` or
    ``JAXROD_TRACED_ERRORS=nan`` (a failed run comes back all NaN) make it cacheable (see
    :mod:`jaxrod.config`).
    """
    check_finite_scalar("t0", t0, "s")
    scheme = resolve_scheme(scheme)
    n_steps, n_saves = validate_steps(dt, n_steps, duration, save_every)
    traced = _is_traced((model, state0, dt, t0))
    if fallback is None:
        fallback = not _is_batched((model, state0, dt, t0))
    fallback = bool(fallback)
    stepper = _stepper_of(model, scheme, solver, fallback and traced)
    state = stepper.start_state(state0, t0, throw=throw, progress=bool(progress) and not traced)
    if not isinstance(dt, jax.core.Tracer):
        stepper.check_dt(float(dt))
    if traced:
        return _simulate_traced(stepper, state, t0, dt, n_saves, save_every, throw, checkpoint=bool(checkpoint))

    what = f"the time loop ({stepper.describe()})"
    res = run_steps(stepper, state, t0=t0, dt=dt, n_steps=n_steps, save_every=save_every, progress=progress,
                    what=what, retry=fallback)
    # device_put, not jnp.asarray: the latter compiles a small program per array shape
    put = jax.device_put
    times = float(t0) + float(dt) * save_every * np.arange(n_saves + 1, dtype=np.float64)
    stats = SolverStats(*(put(s) for s in res.stats))
    frames = jax.tree_util.tree_map(put, res.frames)
    traj = stepper.trajectory(put(times), frames, stats, stepper.final(res.carry), put(np.float64(dt)),
                              put(res.valid))
    if throw:
        err = _failure_report(res.stats[0], res.stats[3], t0, dt, stepper.failure)
        if err is not None:
            raise err
    if fallback:
        _report_fallbacks(res.stats, stepper, t0, dt)
    return traj


def _simulate_traced(stepper, state, t0, dt, n_saves, save_every, throw, checkpoint=False):
    """The run as one ``lax.scan`` program (under ``jit``/``vmap``/``grad``, whose caller fixes the shapes)."""
    t0, dt = _f(t0), _f(dt)
    carry0 = stepper.init(state, t0, dt)
    frame0 = stepper.observe(carry0)

    def one_step(c):
        carry, t = c
        new, stats = stepper.step(carry, t, dt)
        return (new, t + dt), stats

    (carry, _), _, frames, stats = scan_saves_checked(
        one_step, lambda c: stepper.observe(c[0]), (carry0, t0), n_saves, save_every, n_saves,
        cheap_steps=stepper.cheap_steps, checkpoint=checkpoint,
    )
    stats = tuple(s.reshape(-1) for s in stats)
    stats = stats + (jnp.zeros(stats[0].shape, jnp.int32),) * (6 - len(stats))
    valid = _valid_frames(stats[0], n_saves + 1)

    def cat_mask(first, rest):
        x = jnp.concatenate([jnp.asarray(first)[None], rest])
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            return x
        return jnp.where(valid.reshape(valid.shape + (1,) * (x.ndim - 1)), x, jnp.nan)

    frames = jax.tree_util.tree_map(cat_mask, frame0, frames)
    times = t0 + dt * save_every * jnp.arange(n_saves + 1, dtype=t0.dtype)
    traj = stepper.trajectory(times, frames, SolverStats(*stats), stepper.final(carry), dt, valid)
    if throw:
        traj = _raise_in_program(traj, t0, dt, stepper.failure)
    return traj


def _report_fallbacks(stats, stepper, t0, dt):
    fb = np.asarray(stats[5])
    conv = np.asarray(stats[0])
    rescued = np.flatnonzero((fb > 0) & conv)
    if rescued.size:
        k = int(rescued[0])
        scheme = stepper.scheme
        warnings.warn(
            f"simulate(): {rescued.size} of {fb.size} steps did not converge with {type(scheme).__name__} and were "
            f"recovered by the backward-Euler fallback (first at step {k}, t = {float(t0) + (k + 1) * float(dt):.6g} s; "
            f"{int(np.sum(fb[rescued] > 1 - isinstance(scheme, BackwardEuler)))} needed half steps); those steps are "
            f"first order and damp. Pass fallback=False to fail instead, or use a smaller dt.",
            FallbackWarning,
            stacklevel=3,
        )


def solve_static(
    model,
    *,
    state0=None,
    t: float = 0.0,
    solver: NewtonSolver | None = None,
    load_steps: int = 1,
    throw: bool = True,
    progress: bool = False,
):
    """Static equilibrium of ``model`` at time ``t`` [s] (zero velocity and acceleration).

    Loads are applied in ``load_steps`` equal increments (continuation), each solved by Newton
    from the previous one; the model's ``with_load_factor(s)`` scales its external loads.
    Gradients with respect to model parameters come from the implicit function theorem.

    ``progress=True`` prints to stderr what is being compiled and solved, a heartbeat while it
    lasts and, with ``load_steps > 1``, one line per load step. A plain call runs the increments
    from the host, one compiled increment for any ``load_steps`` (with or without progress);
    under ``jax.jit``/``jax.vmap``/``jax.grad`` they are one ``lax.scan`` (progress ignored).

    Returns:
        ``(state, NewtonResult)`` of the last increment: a :class:`State` for implicit models, a
        :class:`~jaxrod.models.cosserat.CosseratState` for shooting models. Shooting models take
        no ``state0`` (see :func:`jaxrod.models.cosserat.solve_static_cosserat` for a guess).
    """
    stepper = _stepper_of(model, None, None, False)
    return stepper.solve_static(state0=state0, t=t, solver=solver, load_steps=load_steps, throw=throw,
                                progress=progress)


def simulate_adaptive(
    model: AbstractImplicitModel,
    *,
    duration: float,
    dt: float,
    dt_min: float,
    dt_max: float,
    state0: State | None = None,
    t0: float = 0.0,
    scheme: AbstractScheme | None = None,
    solver: NewtonSolver | None = None,
    grow_after: int = 3,
    throw: bool = True,
    progress: bool = False,
) -> Trajectory:
    """Integrate with an adaptive step (Ishigaki et al.'s condition I-A): a step whose Newton
    solve does not converge is rejected and retried with half the step (down to ``dt_min``); after
    ``grow_after`` accepted steps in a row the step doubles (up to ``dt_max``).

    The loop runs on the host, one compiled step per call (the step size is a traced argument, so
    nothing recompiles); use it for long runs whose difficulty varies, :func:`simulate` otherwise.
    Only one-step schemes (``BackwardEuler``, ``ImplicitMidpoint``, ``NewmarkBeta``; default
    Newmark) can change the step: multistep BDF histories assume a constant step.

    Returns:
        :class:`Trajectory` of every accepted step; ``times`` is non-uniform and ``dt`` holds the
        accepted step sizes ``(n_steps,)``. ``stats`` are per accepted step (the last attempt's).
        Raises :class:`ConvergenceError` when a step fails at ``dt_min`` (``throw=False``: stops
        there and returns what was computed).
    """
    from .schemes import BDFAlpha, NewmarkBeta

    scheme = resolve_scheme(scheme)
    check_finite_scalar("t0", t0, "s")
    grow_after = check_int("grow_after", grow_after, min=1)
    for name, value in (("duration", duration), ("dt", dt), ("dt_min", dt_min), ("dt_max", dt_max)):
        _check_positive(name, value)
    if not (dt_min <= dt <= dt_max):
        raise ValueError(f"need dt_min <= dt <= dt_max, got {dt_min}, {dt}, {dt_max}")
    if int(grow_after) < 1:
        raise ValueError(f"grow_after must be >= 1, got {grow_after}")
    scheme = NewmarkBeta() if scheme is None else scheme
    if isinstance(scheme, BDFAlpha):
        raise ValueError("simulate_adaptive needs a one-step scheme (BackwardEuler, ImplicitMidpoint, NewmarkBeta)")
    solver = NewtonSolver(linear_solver=None, rtol=1e-9, atol=1e-9) if solver is None else solver
    if solver.reuse_jacobian:
        solver = eqx.tree_at(lambda s: s.reuse_jacobian, solver, False)
    if not isinstance(model, AbstractImplicitModel):
        raise TypeError(f"simulate_adaptive needs an implicit model (AbstractImplicitModel), got {type(model).__name__}: "
                        "shooting models keep a constant step (their difference formulas assume one)")
    # the same stepper as simulate(): the step size is an argument of its compiled step
    stepper = model.stepper(scheme, solver)
    state = initial_state(model) if state0 is None else state0
    report = bool(progress) and not _is_traced((model, state, dt, t0))
    name = type(stepper.scheme).__name__
    carry = announced(_start_adaptive_jit, f"the initial history of {name}", enabled=report)(
        stepper, state, _f(t0), _f(dt)
    )
    step_jit = announced(_step_adaptive_jit, f"one {name} step", enabled=report)
    t, t_end, h = float(t0), float(t0) + float(duration), float(dt)
    frame = _observe_adaptive_jit(stepper, carry)
    times, positions, qs, vs, steps = [t], [frame["positions"]], [frame["q"]], [frame["v"]], []
    stats = []
    easy = rejected = 0
    wall0 = _time.perf_counter()
    next_report = t0 + duration / 20
    while t < t_end * (1 - 1e-12):
        step = min(h, t_end - t)
        carry1, st, frame1 = step_jit(stepper, carry, _f(t), _f(step))
        if bool(st[0]):
            carry, t, frame = carry1, t + step, frame1
            times.append(t)
            positions.append(frame["positions"])
            qs.append(frame["q"])
            vs.append(frame["v"])
            steps.append(step)
            stats.append(st[:5])
            easy += 1
            if easy >= grow_after and h < dt_max:
                h, easy = min(2 * h, float(dt_max)), 0
            if progress and t >= next_report:
                next_report += duration / 20
                say(f"  t = {t:9.4f} s  dt = {h:.3g} s  accepted {len(steps)}  rejected {rejected}  "
                    f"wall {_time.perf_counter() - wall0:7.2f} s")
            continue
        rejected += 1
        easy = 0
        if step <= dt_min * (1 + 1e-12):
            if throw:
                raise ConvergenceError(
                    f"adaptive step failed at t = {t:.6g} s with the minimum step dt_min = {dt_min:g} s "
                    f"(residual max-norm {float(st[3]):.3e}); lower dt_min or loosen the tolerances"
                )
            break
        h = max(0.5 * step, float(dt_min))
    # assembled in NumPy: a jnp.stack of k frames would compile a program for every k
    put = jax.device_put
    dtypes = (bool, np.int32, np.int32, np.float64, np.float64)
    conv, its, jacs, rn, err = (put(np.array([np.asarray(s[k]) for s in stats], dtype=d)) for k, d in enumerate(dtypes))
    stack = lambda xs: put(np.stack([np.asarray(x) for x in xs]))
    return Trajectory(
        times=put(np.asarray(times, dtype=np.float64)), positions=stack(positions), frames=None, twist=None,
        q=stack(qs), v=stack(vs), stats=SolverStats(conv, its, jacs, rn, err),
        final=stepper.final(carry), dt=put(np.asarray(steps, dtype=np.float64)),
    )


def _step_adaptive(stepper, carry, t, dt):
    carry, stats = stepper.step(carry, t, dt)
    return carry, stats, stepper.observe(carry)


_start_adaptive_jit = eqx.filter_jit(lambda stepper, state, t0, dt: stepper.init(state, t0, dt))
_step_adaptive_jit = eqx.filter_jit(_step_adaptive)
_observe_adaptive_jit = eqx.filter_jit(lambda stepper, carry: stepper.observe(carry))
