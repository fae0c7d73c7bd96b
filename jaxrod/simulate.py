"""The one time-integration entry point (:func:`simulate`), static equilibrium
(:func:`solve_static`), single implicit steps (:func:`implicit_step`) and the :class:`Trajectory`.

The time loop is a ``jax.lax.scan`` over steps (nested: an outer scan over saved frames, an inner
one over the steps between saves); each step is one Newton solve of the scheme's residual, so the
whole run is one compiled XLA program that ``jax.vmap`` batches and ``jax.grad`` differentiates
(the Newton solves by the implicit function theorem, the time loop by reverse-mode through scan).

Failures never raise inside the compiled program: every step records ``converged``, iterations and
residual; :func:`simulate` then raises :class:`ConvergenceError` naming the first failed step
(``throw=True``) or hands the statistics back (``throw=False``).
"""

from __future__ import annotations

import math
import sys
import time as _time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .models.base import AbstractImplicitModel, State
from .solvers.newton import NewtonSolver, newton_solve, placeholder_factorization
from .timestepping import AbstractScheme, AverageVectorField


class ConvergenceError(RuntimeError):
    """A Newton solve inside a simulation or static solve did not converge."""


class SolverStats(eqx.Module):
    """Per-step Newton statistics, each of shape ``(n_steps,)``."""

    converged: jax.Array
    iterations: jax.Array
    jacobians: jax.Array
    residual_norm: jax.Array
    error_estimate: jax.Array

    def first_failure(self):
        """Index of the first non-converged step, or ``None`` (host-side helper)."""
        bad = np.flatnonzero(~np.asarray(self.converged).reshape(-1))
        return int(bad[0]) if bad.size else None


class Trajectory(eqx.Module):
    """Result of :func:`simulate`.

    Attributes:
        times: ``(T,)`` saved times [s] (the initial state included).
        positions: ``(T, N, 3)`` centerline node positions [m].
        frames: material frames, rows ``(d1, d2, axis)``: ``(T, N-1, 3, 3)`` on DER edges,
            ``(T, N, 3, 3)`` at the grid nodes of a shooting (Cosserat) model; or ``None``.
        twist: ``(T, N-1)`` edge twist angles [rad] (DER) or ``None``.
        q, v: ``(T, ...)`` generalised coordinates and velocities (DER); for a shooting model the
            state grids ``[p, h, n, m, q, w]`` ``(T, N, 19)`` and ``[q, w, v, u]`` ``(T, N, 12)``.
        stats: :class:`SolverStats` for every step.
        final: :class:`~jaxrod.models.base.State` (DER) or
            :class:`~jaxrod.models.cosserat.CosseratState` after the last step (for restarts).
        dt: time step [s].
    """

    times: jax.Array
    positions: jax.Array
    frames: jax.Array | None
    twist: jax.Array | None
    q: jax.Array
    v: jax.Array
    stats: SolverStats
    final: State
    dt: jax.Array

    @property
    def tip(self):
        """``(T, 3)`` position of the last node [m]."""
        return self.positions[..., -1, :]


def _with_model_solver(model, solver: NewtonSolver) -> NewtonSolver:
    if solver.linear_solver is None:
        return eqx.tree_at(
            lambda s: s.linear_solver, solver, model.default_linear_solver(), is_leaf=lambda x: x is None
        )
    return solver


def implicit_step(
    model: AbstractImplicitModel, scheme: AbstractScheme, solver: NewtonSolver, hist, aux, t, dt,
    factorization=None, have_factorization=False,
):
    """Advance one step of size ``dt`` [s] from time ``t`` [s].

    Returns ``(hist, aux, NewtonResult)``; the unknown of the Newton solve is ``q_{n+1}``, with
    prescribed DOFs substituted so that their Jacobian rows are the identity. With
    ``solver.reuse_jacobian`` the previous step's ``NewtonResult.factorization`` can be passed in.
    """
    solver = _with_model_solver(model, solver)
    fixed = model.fixed_mask()
    qb = model.prescribed(t + dt)

    def residual(q_next, _):
        q_sub = jnp.where(fixed, qb, q_next)
        r = scheme.residual(model, q_sub, hist, t, dt, aux)
        return jnp.where(fixed, q_next - qb, r)

    def step_limit(q_next, dq):
        # velocities are affine in q_next for every scheme: dv from two stage evaluations
        qs, vs, _, _ = scheme.stage(jnp.where(fixed, qb, q_next), hist, dt)
        qs1, vs1, _, _ = scheme.stage(jnp.where(fixed, qb, q_next + dq), hist, dt)
        return model.newton_step_limit(qs, vs, qs1 - qs, vs1 - vs, aux)

    guess = jnp.where(fixed, qb, scheme.predict(hist, dt))
    result = newton_solve(
        residual, guess, None, solver, factorization=factorization, have_factorization=have_factorization,
        step_limit=step_limit,
    )
    q1 = jnp.where(fixed, qb, result.value)
    return scheme.advance(q1, hist, dt), model.update_aux(q1, aux), result


def _initial_acceleration(model, q, v, aux, t, solver):
    fixed = model.fixed_mask()

    def residual(a, _):
        return jnp.where(fixed, a, model.residual(q, v, a, t, aux))

    return newton_solve(residual, jnp.zeros_like(q), None, solver).value


def _initial_history(model, scheme, solver, state, t0, dt):
    """Scheme history at ``t0``; solves for the initial acceleration only if the scheme needs it."""
    a0 = (
        _initial_acceleration(model, state.q, state.v, state.aux, t0, solver)
        if scheme.needs_acceleration
        else jnp.zeros_like(state.q)
    )
    return scheme.init(state.q, state.v, a0, dt)


def _run(model, scheme, solver, state, t0, dt, n_saves, save_every, n_active):
    """Compiled core: ``n_saves`` saved frames, ``save_every`` steps each; saves with index
    ``>= n_active`` are skipped (so chunked runs compile once)."""
    solver = _with_model_solver(model, solver)
    hist0 = _initial_history(model, scheme, solver, state, t0, dt)
    return _run_from_hist(model, scheme, solver, hist0, state.aux, t0, dt, n_saves, save_every, n_active)


def scan_saves(one_step, observe, carry0, n_saves, save_every, n_active):
    """Nested time loop shared by all models: ``n_saves`` saved frames of ``save_every`` steps;
    saves with index ``>= n_active`` are skipped (so chunked runs reuse one compiled program).

    ``one_step(carry) -> (carry, stats)`` with ``stats = (converged, iterations, jacobians,
    residual_norm, error_estimate)``; ``observe(carry)`` returns the pytree saved per frame.
    Returns ``(carry, outs, stats)`` with leading axes ``(n_saves, ...)`` and ``(n_saves, save_every)``.
    """

    def step(c, _):
        return one_step(c)

    def one_save(carry, i):
        def active(c):
            return jax.lax.scan(step, c, jnp.arange(save_every))

        def idle(c):
            dummy = (
                jnp.ones(save_every, bool),
                jnp.zeros(save_every, jnp.int32),
                jnp.zeros(save_every, jnp.int32),
                jnp.zeros(save_every),
                jnp.zeros(save_every),
            )
            return c, dummy

        carry, stats = jax.lax.cond(i < n_active, active, idle, carry)
        return carry, (observe(carry), stats)

    carry, (outs, stats) = jax.lax.scan(one_save, carry0, jnp.arange(n_saves))
    return carry, outs, stats


def newton_stats(res):
    """The per-step statistics tuple of a :class:`NewtonResult` (see :func:`scan_saves`)."""
    return (
        res.converged, res.iterations.astype(jnp.int32), res.jacobians.astype(jnp.int32),
        res.residual_norm, res.error_estimate,
    )


def run_with_progress(run_chunk, carry, n_saves, save_every, n_steps, t0, dt, progress):
    """Run ``n_saves`` saves in chunks of one compiled program, printing a progress line per chunk.

    ``run_chunk(carry, t, chunk, n_active) -> (carry, outs, stats)`` runs ``chunk`` saves (the
    first ``n_active`` of them) from time ``t``. Returns ``(carry, outs, stats)`` like one call.
    """
    n_lines = 20 if progress is True else max(1, int(progress))
    chunk = max(1, math.ceil(n_saves / n_lines))
    pieces, stat_pieces = [], []
    start = _time.perf_counter()
    done = 0
    t = float(t0)
    while done < n_saves:
        n_act = min(chunk, n_saves - done)
        carry, outs_c, stats_c = run_chunk(carry, _f(t), chunk, jnp.asarray(n_act))
        jax.block_until_ready(outs_c)
        cut = lambda x: x[:n_act]
        pieces.append(jax.tree_util.tree_map(cut, outs_c))
        stat_pieces.append(jax.tree_util.tree_map(cut, stats_c))
        done += n_act
        t = float(t0) + done * save_every * float(dt)
        its = np.asarray(stats_c[1][:n_act])
        ok = bool(np.all(np.asarray(stats_c[0][:n_act])))
        print(
            f"  step {done * save_every:>8d}/{n_steps}  t = {t:9.4f} s  "
            f"Newton its/step {its.mean():5.2f}  {'ok' if ok else 'NOT CONVERGED'}  "
            f"wall {_time.perf_counter() - start:7.2f} s",
            file=sys.stderr,
            flush=True,
        )
    outs = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *pieces)
    stats = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *stat_pieces)
    return carry, outs, stats


def check_trajectory(traj, *, throw, traced, t0, dt):
    """Raise :class:`ConvergenceError` (or attach ``eqx.error_if`` when traced) at the first
    non-converged step; returns the trajectory."""
    if not throw:
        return traj
    if traced or _is_traced(traj.stats.converged):
        return eqx.error_if(
            traj, ~jnp.all(traj.stats.converged),
            "a Newton solve did not converge during simulate(); rerun with throw=False and "
            "inspect Trajectory.stats (first_failure()) for the step",
        )
    k = traj.stats.first_failure()
    if k is not None:
        raise ConvergenceError(
            f"Newton did not converge at step {k} (t = {float(t0) + (k + 1) * float(dt):.6g} s): "
            f"residual max-norm {float(traj.stats.residual_norm[k]):.3e}, scaled error "
            f"estimate {float(traj.stats.error_estimate[k]):.3e} after "
            f"{int(traj.stats.iterations[k])} iterations. Try a smaller dt, more "
            f"max_steps, or looser tolerances; pass throw=False to get the trajectory anyway."
        )
    return traj


def validate_steps(dt, n_steps, duration, save_every):
    """Checked ``(n_steps, n_saves)`` from the user's ``dt``/``n_steps``/``duration``/``save_every``."""
    _check_positive("dt", dt)
    if n_steps is None:
        if duration is None:
            raise ValueError("give either n_steps or duration")
        _check_positive("duration", duration)
        n_steps = int(round(float(duration) / float(dt)))
    if int(n_steps) < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    n_steps = int(n_steps)
    if save_every < 1 or n_steps % save_every:
        raise ValueError(f"save_every must be >= 1 and divide n_steps={n_steps}, got {save_every}")
    return n_steps, n_steps // save_every


def _run_from_hist(model, scheme, solver, hist0, aux0, t0, dt, n_saves, save_every, n_active):
    def one_step(carry):
        hist, aux, t, fac, have_fac = carry
        hist, aux, res = implicit_step(model, scheme, solver, hist, aux, t, dt, fac, have_fac)
        if solver.reuse_jacobian:
            fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
        return (hist, aux, t + dt, fac, have_fac), newton_stats(res)

    def observe(carry):
        hist, aux, t, _, _ = carry
        q, v = scheme.current(hist)
        return (t, q, v, model.observe(q, v, aux))

    q_flat = jnp.ravel(scheme.current(hist0)[0])
    carry0 = (
        hist0, aux0, jnp.asarray(t0, dtype=jnp.result_type(float)),
        placeholder_factorization(solver, q_flat) if solver.reuse_jacobian else None,
        jnp.asarray(False),
    )
    return scan_saves(one_step, observe, carry0, n_saves, save_every, n_active)


_run_jit = eqx.filter_jit(_run)
_run_from_hist_jit = eqx.filter_jit(_run_from_hist)


def _f(x):
    # floats passed to filter_jit as arrays, so a new dt or start time does not recompile
    return jnp.asarray(x, dtype=jnp.result_type(float))


def _is_traced(tree):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _check_positive(name, value):
    if isinstance(value, jax.core.Tracer):
        return
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def simulate(
    model: AbstractImplicitModel,
    *,
    dt,
    n_steps: int | None = None,
    duration: float | None = None,
    state0: State | None = None,
    t0: float = 0.0,
    scheme=None,
    solver: NewtonSolver | None = None,
    save_every: int = 1,
    throw: bool = True,
    progress: bool | int = False,
) -> Trajectory:
    """Integrate ``model`` in time with an implicit scheme.

    Args:
        model: an :class:`~jaxrod.models.base.AbstractImplicitModel` (e.g. a DER rod model) or a
            :class:`~jaxrod.models.cosserat.CosseratModel` (shooting; see
            :func:`jaxrod.models.cosserat.simulate_cosserat` for its defaults).
        dt: time step [s], > 0.
        n_steps: number of steps; or give ``duration`` [s] (rounded to a whole number of steps).
        state0: initial :class:`State`; default ``model.initial_state()``.
        t0: initial time [s].
        scheme: time scheme. Default :class:`~jaxrod.timestepping.AverageVectorField` (energy
            conserving; the same as implicit midpoint on linear problems, and unlike it stable on
            geometrically nonlinear rods at large steps); BDF2 for shooting models.
        solver: Newton configuration; ``linear_solver=None`` picks the model's structured solver.
            The default (``None``) reuses factorisations across steps (chord steps while they contract)
            and converges each step to 1e-9 in the unknowns (metres/radians for rods).
        save_every: save one frame every this many steps (must divide ``n_steps``).
        throw: raise :class:`ConvergenceError` at the first non-converged step (after the run);
            with ``False`` the per-step statistics are returned in ``Trajectory.stats``.
        progress: print progress lines while running (``True`` for ~20 lines or an int count).
            Runs in chunks that reuse one compiled program.

    Returns:
        :class:`Trajectory` with ``n_steps // save_every + 1`` saved frames.

    Works under ``jax.jit``/``jax.vmap``/``jax.grad`` (then ``throw`` uses ``eqx.error_if`` and
    ``progress`` is ignored).
    """
    if not isinstance(model, AbstractImplicitModel):
        from .models.cosserat.simulate import simulate_cosserat

        return simulate_cosserat(
            model, dt=dt, n_steps=n_steps, duration=duration, state0=state0, t0=t0, scheme=scheme,
            solver=solver, save_every=save_every, throw=throw, progress=progress,
        )
    if scheme is None:
        scheme = AverageVectorField()
    if solver is None:
        solver = NewtonSolver(linear_solver=None, reuse_jacobian=True, rtol=1e-9, atol=1e-9)
    n_steps, n_saves = validate_steps(dt, n_steps, duration, save_every)
    state = model.initial_state() if state0 is None else state0
    traced = _is_traced((model, state, dt, t0))

    if not progress or traced:
        carry, outs, stats = _run_jit(
            model, scheme, solver, state, _f(t0), _f(dt), n_saves, save_every, jnp.asarray(n_saves)
        )
    else:
        solver_m = _with_model_solver(model, solver)
        hist0 = _initial_history(model, scheme, solver_m, state, t0, dt)

        def run_chunk(c, t, chunk, n_act):
            return _run_from_hist_jit(model, scheme, solver_m, c[0], c[1], t, _f(dt), chunk, save_every, n_act)

        carry, outs, stats = run_with_progress(
            run_chunk, (hist0, state.aux), n_saves, save_every, n_steps, t0, dt, progress
        )

    hist_f, aux_f = carry[0], carry[1]
    times, qs, vs, obs = outs
    obs0 = model.observe(state.q, state.v, state.aux)
    cat = lambda first, rest: jnp.concatenate([jnp.asarray(first)[None], rest])
    conv, its, jacs, rn, err = (s.reshape(-1) for s in stats)
    traj = Trajectory(
        times=cat(jnp.asarray(t0, dtype=times.dtype), times),
        positions=cat(obs0["positions"], obs["positions"]),
        frames=cat(obs0["frames"], obs["frames"]) if "frames" in obs else None,
        twist=cat(obs0["twist"], obs["twist"]) if "twist" in obs else None,
        q=cat(state.q, qs),
        v=cat(state.v, vs),
        stats=SolverStats(conv, its, jacs, rn, err),
        final=State(*scheme.current(hist_f), aux_f),
        dt=jnp.asarray(dt),
    )
    return check_trajectory(traj, throw=throw, traced=traced, t0=t0, dt=dt)


def solve_static(
    model: AbstractImplicitModel,
    *,
    state0: State | None = None,
    t: float = 0.0,
    solver: NewtonSolver | None = None,
    load_steps: int = 1,
    throw: bool = True,
):
    """Static equilibrium ``r(q, 0, 0, t) = 0`` (zero velocity and acceleration).

    Loads are applied in ``load_steps`` equal increments (continuation), each solved by Newton
    from the previous one; the model's ``with_load_factor(s)`` scales its external loads.
    Gradients with respect to model parameters come from the implicit function theorem.

    Returns:
        ``(State, NewtonResult)`` of the last increment.
    """
    if not isinstance(model, AbstractImplicitModel):
        from .models.cosserat.simulate import solve_static_cosserat

        if state0 is not None:
            raise ValueError("solve_static(): shooting models take no state0 (pass guess= to solve_static_cosserat)")
        return solve_static_cosserat(model, t=t, solver=solver, load_steps=load_steps, throw=throw)
    if solver is None:
        solver = NewtonSolver(linear_solver=None, max_steps=100)
    if int(load_steps) < 1:
        raise ValueError(f"load_steps must be >= 1, got {load_steps}")
    state = model.initial_state() if state0 is None else state0
    solver = _with_model_solver(model, solver)
    result, q = _static_jit(model, state, t, solver, int(load_steps))
    if throw:
        if _is_traced(result.converged):
            q = eqx.error_if(q, ~result.converged, "static equilibrium solve did not converge")
        elif not bool(result.converged):
            raise ConvergenceError(
                f"static equilibrium did not converge: residual max-norm {float(result.residual_norm):.3e}, "
                f"scaled error {float(result.error_estimate):.3e} after {int(result.iterations)} "
                f"iterations; try load_steps > {load_steps}"
            )
    return State(q, jnp.zeros_like(q), model.update_aux(q, state.aux)), result


def _static(model, state, t, solver, load_steps):
    fixed = model.fixed_mask()
    qb = model.prescribed(t)
    zeros = jnp.zeros_like(state.q)

    def increment(q, s):
        m = model.with_load_factor(s) if load_steps > 1 else model

        def residual(qn, _):
            q_sub = jnp.where(fixed, qb, qn)
            r = m.residual(q_sub, zeros, zeros, t, state.aux)
            return jnp.where(fixed, qn - qb, r)

        res = newton_solve(residual, q, None, solver)
        return jnp.where(fixed, qb, res.value), res

    factors = jnp.arange(1, load_steps + 1) / load_steps
    q, results = jax.lax.scan(increment, jnp.where(fixed, qb, state.q), factors)
    last = jax.tree_util.tree_map(lambda x: x[-1], results)
    ok = jnp.all(results.converged)
    last = eqx.tree_at(lambda r: r.factorization, last, None, is_leaf=lambda x: x is None)
    return eqx.tree_at(lambda r: r.converged, last, ok), q


_static_jit = eqx.filter_jit(_static)


_implicit_step_jit = eqx.filter_jit(implicit_step)
_initial_history_jit = eqx.filter_jit(_initial_history)


@eqx.filter_jit
def _observe_jit(model, q, v, aux):
    return model.observe(q, v, aux)["positions"]


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
    from .timestepping import BDFAlpha, NewmarkBeta

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
    solver = _with_model_solver(model, solver)
    state = model.initial_state() if state0 is None else state0
    hist = _initial_history_jit(model, scheme, solver, state, _f(t0), _f(dt))
    aux = state.aux
    t, t_end, h = float(t0), float(t0) + float(duration), float(dt)
    times, positions, qs, vs, steps = [t], [_observe_jit(model, state.q, state.v, aux)], [state.q], [state.v], []
    stats = []
    easy = rejected = 0
    wall0 = _time.perf_counter()
    next_report = t0 + duration / 20
    while t < t_end * (1 - 1e-12):
        step = min(h, t_end - t)
        hist1, aux1, res = _implicit_step_jit(model, scheme, solver, hist, aux, _f(t), _f(step))
        if bool(res.converged):
            hist, aux, t = hist1, aux1, t + step
            q, v = scheme.current(hist)
            times.append(t)
            positions.append(_observe_jit(model, q, v, aux))
            qs.append(q)
            vs.append(v)
            steps.append(step)
            stats.append(newton_stats(res))
            easy += 1
            if easy >= grow_after and h < dt_max:
                h, easy = min(2 * h, float(dt_max)), 0
            if progress and t >= next_report:
                next_report += duration / 20
                print(f"  t = {t:9.4f} s  dt = {h:.3g} s  accepted {len(steps)}  rejected {rejected}  "
                      f"wall {_time.perf_counter() - wall0:7.2f} s", file=sys.stderr, flush=True)
            continue
        rejected += 1
        easy = 0
        if step <= dt_min * (1 + 1e-12):
            if throw:
                raise ConvergenceError(
                    f"adaptive step failed at t = {t:.6g} s with the minimum step dt_min = {dt_min:g} s "
                    f"(residual max-norm {float(res.residual_norm):.3e}); lower dt_min or loosen the tolerances"
                )
            break
        h = max(0.5 * step, float(dt_min))
    conv, its, jacs, rn, err = (jnp.asarray(np.array([s[k] for s in stats])) for k in range(5)) if stats else (
        jnp.zeros(0, bool), jnp.zeros(0, jnp.int32), jnp.zeros(0, jnp.int32), jnp.zeros(0), jnp.zeros(0))
    return Trajectory(
        times=jnp.asarray(times), positions=jnp.stack(positions), frames=None, twist=None,
        q=jnp.stack(qs), v=jnp.stack(vs), stats=SolverStats(conv, its, jacs, rn, err),
        final=State(*scheme.current(hist), aux), dt=jnp.asarray(steps),
    )
