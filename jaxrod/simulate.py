"""The one time-integration entry point (:func:`simulate`), static equilibrium
(:func:`solve_static`), single implicit steps (:func:`implicit_step`) and the :class:`Trajectory`.

The time loop is a ``jax.lax.scan`` over steps (nested: an outer scan over saved frames, an inner
one over the steps between saves); each step is one Newton solve of the scheme's residual, so the
whole run is one compiled XLA program that ``jax.vmap`` batches and ``jax.grad`` differentiates
(the Newton solves by the implicit function theorem, the time loop by reverse-mode through scan).

Failures cannot hide. Every step records ``converged``, iterations and residual. A step whose Newton
solve fails is first retried (one-step schemes, ``fallback=True``): with backward Euler at the same
step, then with two backward-Euler half steps; recovered steps are counted in
``SolverStats.fallbacks`` and reported. A step that still fails is not accepted: the run stops
advancing (later steps are skipped at almost no cost), keeps the last converged state in
``Trajectory.final`` and marks every later frame invalid (``Trajectory.valid`` False, positions,
frames, ``q`` and ``v`` NaN). :func:`simulate` then raises :class:`ConvergenceError` with the step,
time and residual (``throw=True``) or hands the masked trajectory back (``throw=False``). Inside
``jax.jit``/``jax.vmap`` the error is raised from the compiled program by a host callback (it
reaches the caller wrapped in ``jax.errors.JaxRuntimeError``; :func:`convergence_errors` turns it
back into the :class:`ConvergenceError`, which lists the failed batch members under ``vmap``).
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time as _time
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .models.base import AbstractImplicitModel, State
from .progress import activity, announced, eta, say
from .solvers.newton import NewtonSolver, newton_solve, placeholder_factorization
from .timestepping import AbstractScheme, AverageVectorField, BackwardEuler, ImplicitMidpoint, NewmarkBeta
from .validation import check_finite_scalar, check_int, resolve_scheme


class ConvergenceError(RuntimeError):
    """A Newton solve inside a simulation or static solve did not converge.

    Attributes (``None`` where they do not apply, e.g. a static solve):
        step: index of the first failed time step (0-based; of the first failed member in a batch).
        time: time [s] the failed step was to reach.
        residual: max-norm of the residual at the failed step.
        members: under ``jax.vmap``: tuple of the indices of the failed batch members (tuples for
            nested ``vmap``); ``None`` for an unbatched run.
        failures: tuple of ``(member, step, time, residual)`` for every failed member.
    """

    def __init__(self, message, *, step=None, time=None, residual=None, members=None, failures=()):
        super().__init__(message)
        self.step, self.time, self.residual = step, time, residual
        self.members, self.failures = members, tuple(failures)

    def __reduce__(self):
        return (_rebuild_convergence_error, (str(self), self.step, self.time, self.residual, self.members,
                                             self.failures))


def _rebuild_convergence_error(message, step, time, residual, members, failures):
    return ConvergenceError(message, step=step, time=time, residual=residual, members=members, failures=failures)


class FallbackWarning(RuntimeWarning):
    """Some time steps failed with the requested scheme and were recovered by the fallback."""


class SolverStats(eqx.Module):
    """Per-step Newton statistics, each of shape ``(n_steps,)`` (with leading batch axes under ``vmap``).

    A step that did not converge has ``converged`` False and is not accepted; the steps after it
    are skipped (``converged`` False, ``iterations`` 0, ``residual_norm`` NaN).
    ``fallbacks``: the level of :func:`fallback_ladder` that was used: 0 when the requested scheme
    converged at the first try; for ``ImplicitMidpoint``/``NewmarkBeta`` 1 = backward Euler at
    ``dt``, 2 = two backward-Euler half steps; for ``BackwardEuler`` 1 = two half steps (``None``
    for models without the fallback). Iterations and Jacobians count every attempt.
    """

    converged: jax.Array
    iterations: jax.Array
    jacobians: jax.Array
    residual_norm: jax.Array
    error_estimate: jax.Array
    fallbacks: jax.Array | None = None

    def first_failure(self):
        """Index of the first non-converged step, or ``None`` (host-side helper; unbatched stats)."""
        conv = np.asarray(self.converged)
        if conv.ndim > 1:
            raise ValueError("first_failure() needs unbatched stats; use failed_members() for a vmapped run")
        bad = np.flatnonzero(~conv)
        return int(bad[0]) if bad.size else None

    def failed_members(self):
        """Host-side: list of batch indices (ints, tuples for nested ``vmap``) of the members with a
        failed step; ``[]`` when all converged. For unbatched stats: ``[()]`` or ``[]``."""
        conv = np.asarray(self.converged)
        bad = ~np.all(conv, axis=-1)
        idx = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(bad))] if bad.ndim else ([()] if bad else [])
        return [i[0] if len(i) == 1 else i for i in idx]


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
        valid: ``(T,)`` bool: frame computed from converged steps only. After the first failed
            step every frame is invalid and its positions, frames, twist, ``q`` and ``v`` are NaN
            (``final`` is the last converged state). ``None`` for :func:`simulate_adaptive`.
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
    valid: jax.Array | None = None

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
        r = model.end_of_step_residual(q_sub, scheme.residual(model, q_sub, hist, t, dt, aux), t + dt, aux)
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
        return jnp.where(fixed, a, model.acceleration_residual(q, v, a, t, aux))

    return newton_solve(residual, jnp.zeros_like(q), None, solver).value


def _initial_history(model, scheme, solver, state, t0, dt):
    """Scheme history at ``t0``; solves for the initial acceleration only if the scheme needs it."""
    a0 = (
        _initial_acceleration(model, state.q, state.v, state.aux, t0, solver)
        if scheme.needs_acceleration
        else jnp.zeros_like(state.q)
    )
    return scheme.init(state.q, state.v, a0, dt)


def _run(model, scheme, solver, state, t0, dt, n_saves, save_every, n_active, fallback=False):
    """Compiled core: ``n_saves`` saved frames, ``save_every`` steps each; saves with index
    ``>= n_active`` are skipped (so chunked runs compile once)."""
    solver = _with_model_solver(model, solver)
    hist0 = _initial_history(model, scheme, solver, state, t0, dt)
    return _run_from_hist(model, scheme, solver, hist0, state.aux, t0, dt, n_saves, save_every, n_active,
                          fallback=fallback)


class _Switched(AbstractScheme):
    """``primary`` or ``fallback`` chosen by a traced flag: one traced residual serves both (the
    schemes' stage formulas are cheap; the model residual is evaluated once at the selected point).
    Both schemes must keep the history ``(q, v, a)``; the fallback's Newton guess is ``q_n``."""

    primary: AbstractScheme
    fallback: AbstractScheme
    use_fallback: jax.Array

    def _pick(self, a, b):
        return jax.tree_util.tree_map(lambda x, y: jnp.where(self.use_fallback, y, x), a, b)

    def init(self, q0, v0, a0, dt):
        return self.primary.init(q0, v0, a0, dt)

    def stage(self, q_next, hist, dt):
        return self._pick(self.primary.stage(q_next, hist, dt), self.fallback.stage(q_next, hist, dt))

    def advance(self, q_next, hist, dt):
        return self._pick(self.primary.advance(q_next, hist, dt), self.fallback.advance(q_next, hist, dt))

    def residual(self, model, q_next, hist, t, dt, aux):
        if all(type(s).residual is AbstractScheme.residual for s in (self.primary, self.fallback)):
            # both evaluate the model at their stage point: pick the point, trace the model once
            # (a cond over two residuals doubled the compile time of every default run)
            return AbstractScheme.residual(self, model, q_next, hist, t, dt, aux)
        if isinstance(self.primary, AverageVectorField) and isinstance(self.fallback, BackwardEuler):
            # backward Euler is the average with every point moved to the step's end: one trace
            _, vs, acc, _ = self.stage(q_next, hist, dt)
            s = jnp.where(self.use_fallback, 1.0, jnp.asarray(self.primary.points()[0]))
            return self.primary.averaged_residual(model, hist[0], q_next, vs, acc, t, dt, aux, s)
        return jax.lax.cond(
            self.use_fallback,
            lambda: self.fallback.residual(model, q_next, hist, t, dt, aux),
            lambda: self.primary.residual(model, q_next, hist, t, dt, aux),
        )

    def predict(self, hist, dt):
        # a retry starts from the current configuration: the scheme's extrapolation may be what
        # failed (measured: Newmark on the pcs-cfrp scene, a0 ~ 1e10 makes q + dt^2 a0/2 useless)
        return jnp.where(self.use_fallback, hist[0], self.primary.predict(hist, dt))


def fallback_ladder(scheme):
    """Attempts for one step as ``(use backward Euler, step divisor)``, tried in order until one
    converges (static). Only one-step schemes with the history ``(q, v, a)`` have a fallback:
    ``AverageVectorField``/``ImplicitMidpoint``/``NewmarkBeta`` -> backward Euler at ``dt`` -> two
    backward-Euler steps of ``dt/2``; ``BackwardEuler`` -> two steps of ``dt/2``."""
    if isinstance(scheme, BackwardEuler):
        # the first attempt is the scheme itself, with its own predictor (the retries start from q_n)
        return ((False, 1), (True, 2))
    if isinstance(scheme, (AverageVectorField, ImplicitMidpoint, NewmarkBeta)):
        return ((False, 1), (True, 1), (True, 2))
    return ((False, 1),)


def _step_with_fallback(model, scheme, solver, hist, aux, t, dt, fac, have_fac, ladder):
    """One step of ``dt`` with the fallback ladder (see :func:`fallback_ladder`).

    A fixed number of attempt slots (enough for each level to fail once) runs in a ``lax.scan``;
    a slot after success is skipped by ``lax.cond``, so a step that converges at once costs one
    solve, and reverse-mode differentiation works (no data-dependent loop). Accepted sub-steps are
    kept when a later one fails; the step fails when the slots or levels run out.
    Returns ``(hist, aux, fac, have_fac, stats)`` with the stats of :func:`scan_saves` plus the
    fallback level used.
    """
    use_be = jnp.asarray([u for u, _ in ladder])
    frac_of = jnp.asarray([1.0 / d for _, d in ladder], dtype=jnp.result_type(float))
    n_slots = sum(d for _, d in ladder)
    n_levels = len(ladder)
    be = BackwardEuler()
    dtype = jnp.result_type(float)

    def slot(c, _):
        def attempt(c):
            hist, aux, frac, level, done, ok, fac, have_fac, its, jacs, rn, err = c
            sch = _Switched(scheme, be, use_be[level])
            # sub-steps are 1, 1/2 (, ...) of dt: the done fraction stays exact in binary
            h_frac = jnp.minimum(frac_of[level], 1.0 - frac)
            hist1, aux1, res = implicit_step(model, sch, solver, hist, aux, t + frac * dt, h_frac * dt, fac, have_fac)
            conv = res.converged
            pick = lambda new, old: jax.tree_util.tree_map(lambda x, y: jnp.where(conv, x, y), new, old)
            hist, aux = pick(hist1, hist), pick(aux1, aux)
            frac = jnp.where(conv, frac + h_frac, frac)
            finished = conv & (frac >= 1.0)
            give_up = ~conv & (level + 1 >= n_levels)
            level = jnp.where(conv, level, jnp.minimum(level + 1, n_levels - 1))
            if solver.reuse_jacobian:
                fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
            return (hist, aux, frac, level, finished | give_up, finished, fac, have_fac,
                    its + res.iterations.astype(jnp.int32), jacs + res.jacobians.astype(jnp.int32),
                    res.residual_norm, res.error_estimate)

        return jax.lax.cond(c[4], lambda c: c, attempt, c), None

    c0 = (hist, aux, jnp.asarray(0.0, dtype), jnp.asarray(0), jnp.asarray(False), jnp.asarray(False), fac,
          jnp.asarray(have_fac), jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32), jnp.asarray(jnp.nan, dtype),
          jnp.asarray(jnp.nan, dtype))
    c, _ = jax.lax.scan(slot, c0, None, length=n_slots)
    hist, aux, _, level, _, ok, fac, have_fac, its, jacs, rn, err = c
    used = level.astype(jnp.int32)
    if solver.reuse_jacobian:
        # a factorisation of the fallback (other scheme or step) would only mislead the next chord steps
        have_fac = have_fac & (level == 0)
    return hist, aux, fac, have_fac, (ok, its, jacs, rn, err, used)


def scan_saves(one_step, observe, carry0, n_saves, save_every, n_active):
    """Nested time loop shared by all models: ``n_saves`` saved frames of ``save_every`` steps;
    saves with index ``>= n_active`` are skipped (so chunked runs reuse one compiled program).

    ``one_step(carry) -> (carry, stats)`` with ``stats = (converged, iterations, jacobians,
    residual_norm, error_estimate, ...)``; ``observe(carry)`` returns the pytree saved per frame.
    A step that does not converge is not accepted and every later step is skipped (see
    :func:`scan_saves_checked`). Returns ``(carry, outs, stats)`` with leading axes
    ``(n_saves, ...)`` and ``(n_saves, save_every)``.
    """
    carry, _, outs, stats = scan_saves_checked(one_step, observe, carry0, n_saves, save_every, n_active)
    return carry, outs, stats


def _skipped_stats(shapes):
    # a step not attempted because an earlier one failed: not converged, no work, NaN residual
    def fill(s):
        if s.dtype == jnp.bool_:
            return jnp.zeros(s.shape, bool)
        if jnp.issubdtype(s.dtype, jnp.integer):
            return jnp.zeros(s.shape, s.dtype)
        return jnp.full(s.shape, jnp.nan, s.dtype)

    return jax.tree_util.tree_map(fill, shapes)


def scan_saves_checked(one_step, observe, carry0, n_saves, save_every, n_active, failed0=False):
    """:func:`scan_saves` that also carries the failure flag: returns ``(carry, failed, outs, stats)``.

    A step whose ``converged`` is False leaves the carry unchanged (the last converged state) and
    sets ``failed``; while ``failed``, steps are skipped by a ``lax.cond`` (no Newton work; under
    ``vmap`` the cond becomes a select and the work is done but discarded). ``failed0`` continues
    a chunked run.
    """
    shapes = {}

    def stat_shapes():
        # known once `run` has been traced (switch traces its branches in order); tracing a
        # step costs seconds, so the fallback eval_shape is only a safeguard
        if "stats" not in shapes:
            shapes["stats"] = jax.eval_shape(lambda c: one_step(c)[1], carry0)
        return shapes["stats"]

    def step(c, _):
        carry, failed = c

        def run(carry):
            new, stats = one_step(carry)
            shapes.setdefault("stats", jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), stats))
            ok = stats[0]
            new = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, carry)
            return new, stats

        def skip(carry):
            return carry, _skipped_stats(stat_shapes())

        carry, stats = jax.lax.switch(failed.astype(jnp.int32), (run, skip), carry)
        return (carry, failed | ~stats[0]), stats

    def one_save(c, i):
        def active(c):
            return jax.lax.scan(step, c, jnp.arange(save_every))

        def idle(c):
            dummy = jax.tree_util.tree_map(
                lambda s: jnp.zeros((save_every,) + s.shape, s.dtype), stat_shapes()
            )
            dummy = (jnp.ones(save_every, bool),) + tuple(dummy[1:])
            return c, dummy

        c, stats = jax.lax.cond(i < n_active, active, idle, c)
        return c, (observe(c[0]), stats)

    (carry, failed), (outs, stats) = jax.lax.scan(
        one_save, (carry0, jnp.asarray(failed0)), jnp.arange(n_saves)
    )
    return carry, failed, outs, stats


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
    After a chunk with a failed step no further chunk runs (early stop): the remaining saves repeat
    the last frame (masked as invalid later) and their steps are reported skipped. The lines give
    the wall time since the loop started (the first chunk includes any compilation) and an ETA
    from the pace of the chunks after the first; a heartbeat line is printed while a chunk takes
    longer than :data:`jaxrod.progress.HEARTBEAT_S`.
    """
    n_lines = 20 if progress is True else max(1, int(progress))
    chunk = max(1, math.ceil(n_saves / n_lines))
    pieces, stat_pieces = [], []
    start = _time.perf_counter()
    done = 0
    t = float(t0)
    first = None  # (saves, time) when the first chunk (which may have compiled) ended

    with activity(lambda: f"running the time loop (step {done * save_every}/{n_steps})"):
        while done < n_saves:
            n_act = min(chunk, n_saves - done)
            carry, outs_c, stats_c = run_chunk(carry, _f(t), chunk, jnp.asarray(n_act))
            jax.block_until_ready(outs_c)
            cut = lambda x: x[:n_act]
            pieces.append(jax.tree_util.tree_map(cut, outs_c))
            stat_pieces.append(jax.tree_util.tree_map(cut, stats_c))
            done += n_act
            now = _time.perf_counter()
            first = (done, now) if first is None else first
            t = float(t0) + done * save_every * float(dt)
            its = np.asarray(stats_c[1][:n_act])
            conv = np.asarray(stats_c[0][:n_act]).reshape(-1)
            ok = bool(np.all(conv))
            if ok:
                status = "ok"
            else:
                k = (done - n_act) * save_every + int(np.flatnonzero(~conv)[0])
                status = f"FAILED at step {k} (t = {float(t0) + (k + 1) * float(dt):.6g} s): stopping"
            left = eta(done - first[0], n_saves - first[0], now - first[1]) if ok else ""
            say(
                f"  step {done * save_every:>8d}/{n_steps}  t = {t:9.4f} s  "
                f"Newton its/step {its.mean():5.2f}  {status}  "
                f"wall {now - start:7.2f} s" + (f"  {left}" if left else "")
            )
            if not ok and done < n_saves:
                rest = n_saves - done
                last = jax.tree_util.tree_map(lambda x: jnp.repeat(x[-1:], rest, axis=0), pieces[-1])
                skipped = _skipped_stats(jax.tree_util.tree_map(
                    lambda x: jax.ShapeDtypeStruct((rest,) + x.shape[1:], x.dtype), stat_pieces[-1]
                ))
                pieces.append(last)
                stat_pieces.append(skipped)
                break
    outs = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *pieces)
    stats = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *stat_pieces)
    return carry, outs, stats


def _valid_frames(converged, n_frames):
    """``(T,)`` bool: frame 0 and every frame reached through converged steps only."""
    ok = jnp.cumprod(converged.astype(jnp.int32), axis=-1) > 0
    per = ok.shape[-1] // (n_frames - 1)
    return jnp.concatenate([jnp.ones(ok.shape[:-1] + (1,), bool), ok[..., per - 1 :: per]], axis=-1)


def _mask_invalid(traj):
    """Trajectory with ``valid`` set and the invalid frames' positions/frames/twist/q/v NaN, times
    on the nominal grid (a frozen run would repeat the last converged time)."""
    conv = traj.stats.converged
    n_frames = traj.positions.shape[0]
    valid = _valid_frames(conv, n_frames)
    n_steps = conv.shape[-1]
    per = n_steps // (n_frames - 1)
    times = traj.times[0] + traj.dt * per * jnp.arange(n_frames, dtype=traj.times.dtype)

    def mask(x):
        if x is None:
            return None
        v = valid.reshape(valid.shape + (1,) * (x.ndim - 1))
        return jnp.where(v, x, jnp.nan)

    return eqx.tree_at(
        lambda t: (t.times, t.positions, t.frames, t.twist, t.q, t.v, t.valid),
        traj,
        (times, mask(traj.positions), mask(traj.frames), mask(traj.twist), mask(traj.q), mask(traj.v), valid),
        is_leaf=lambda x: x is None,
    )


def _failure_report(conv, rn, t0, dt):
    """:class:`ConvergenceError` for host arrays ``conv``/``rn`` of shape ``(..., n_steps)``
    (leading axes: batch members); ``None`` if every step converged."""
    conv = np.asarray(conv, bool)
    rn = np.asarray(rn, float)
    t0 = np.broadcast_to(np.asarray(t0, float), conv.shape[:-1])
    dt = np.broadcast_to(np.asarray(dt, float), conv.shape[:-1])
    failures = []
    for ix in np.ndindex(conv.shape[:-1]):
        bad = np.flatnonzero(~conv[ix])
        if bad.size:
            k = int(bad[0])
            failures.append((ix[0] if len(ix) == 1 else ix, k, float(t0[ix] + (k + 1) * dt[ix]), float(rn[ix][k])))
    if not failures:
        return None
    member, k, t, r = failures[0]
    where = f"Newton did not converge at step {k} (t = {t:.6g} s): residual max-norm {r:.3e}"
    if conv.ndim > 1:
        members = tuple(f[0] for f in failures)
        shown = ", ".join(str(m) for m in members[:20]) + (", ..." if len(members) > 20 else "")
        msg = (f"{len(members)} of {int(np.prod(conv.shape[:-1]))} batch members failed (members {shown}); "
               f"member {member}: {where}")
    else:
        members, msg = None, where
    msg += (". The run stopped there (later frames are invalid). Try a smaller dt, more max_steps or "
            "looser tolerances; pass throw=False to get the trajectory up to the failure.")
    return ConvergenceError(msg, step=k, time=t, residual=r, members=members, failures=failures)


class _LastError:
    # the callback runs on an XLA host thread: a plain shared slot, not a thread-local
    lock = threading.Lock()
    value = None


_last_error = _LastError()


def _raise_in_program(traj, t0, dt):
    """Thread a host callback into ``traj`` that raises :class:`ConvergenceError` when a step failed
    (used when ``simulate`` runs under ``jit``/``vmap``, where Python cannot see the values)."""
    sg = jax.lax.stop_gradient

    def callback(conv, rn, t0_, dt_):
        err = _failure_report(conv, rn, t0_, dt_)
        if err is not None:
            with _last_error.lock:
                _last_error.value = err
            raise err
        return np.zeros(np.asarray(conv).shape[:-1], bool)

    flag = jax.pure_callback(
        callback, jax.ShapeDtypeStruct((), jnp.bool_), sg(traj.stats.converged), sg(traj.stats.residual_norm),
        sg(jnp.asarray(traj.times[0])), sg(jnp.asarray(traj.dt)), vmap_method="expand_dims",
    )
    # the arrays depend on the callback's (always False) output so that it is never pruned
    guard = lambda x: None if x is None else jnp.where(flag, jnp.nan, x)
    return eqx.tree_at(
        lambda t: (t.positions, t.q, t.v, t.frames, t.twist),
        traj,
        (guard(traj.positions), guard(traj.q), guard(traj.v), guard(traj.frames), guard(traj.twist)),
        is_leaf=lambda x: x is None,
    )


@contextlib.contextmanager
def convergence_errors():
    """Context manager: a :class:`ConvergenceError` raised inside a compiled program (``simulate``
    called under ``jax.jit``/``jax.vmap``, which JAX reports as ``jax.errors.JaxRuntimeError`` or,
    from an already compiled program, ``ValueError``) is re-raised as the original :class:`ConvergenceError` with its ``step``, ``time``,
    ``residual`` and ``members``::

        with jaxrod.convergence_errors():
            out = jax.jit(run)(params)
    """
    import logging

    with _last_error.lock:
        _last_error.value = None
    # JAX logs every exception raised in a callback with its traceback: that one is expected here
    log = logging.getLogger("jax._src.callback")
    was_disabled, log.disabled = log.disabled, True
    try:
        yield
    except Exception as e:
        # JAX reports it as JaxRuntimeError (ValueError from its cached-dispatch path): match by message
        with _last_error.lock:
            err, _last_error.value = _last_error.value, None
        if err is not None and str(err) in str(e):
            raise err from None
        raise
    finally:
        log.disabled = was_disabled


def check_trajectory(traj, *, throw, traced, t0, dt):
    """Mask the frames after the first failed step (see :attr:`Trajectory.valid`), then raise
    :class:`ConvergenceError` at the first non-converged step (``throw``; from inside the compiled
    program when traced). Returns the trajectory."""
    traj = _mask_invalid(traj)
    if not throw:
        return traj
    if traced or _is_traced(traj.stats.converged):
        return _raise_in_program(traj, t0, dt)
    err = _failure_report(traj.stats.converged, traj.stats.residual_norm, t0, dt)
    if err is not None:
        raise err
    return traj


def validate_steps(dt, n_steps, duration, save_every):
    """Checked ``(n_steps, n_saves)`` from the user's ``dt``/``n_steps``/``duration``/``save_every``:
    whole numbers must be integers (never truncated), and ``n_steps`` and ``duration`` given
    together must agree (``n_steps dt = duration``), since one of them would otherwise be ignored."""
    _check_positive("dt", dt)
    save_every = check_int("save_every", save_every, min=1)
    if n_steps is not None:
        n_steps = check_int("n_steps", n_steps, min=1)
    if duration is None and n_steps is None:
        raise ValueError("give either n_steps or duration")
    if duration is not None:
        _check_positive("duration", duration)
        if _is_traced((dt, duration)):
            if n_steps is None:
                raise ValueError("duration needs a concrete dt and duration (one is traced here); pass n_steps instead")
        else:
            ratio = float(duration) / float(dt)
            if n_steps is None:
                n_steps = int(round(ratio))
                if n_steps < 1:
                    raise ValueError(
                        f"duration = {duration} s is less than half a step (dt = {dt} s): no step to take"
                    )
            elif abs(n_steps - ratio) > 1e-9 * max(1.0, ratio):
                raise ValueError(
                    f"n_steps = {n_steps} and duration = {duration} s disagree at dt = {dt} s "
                    f"(n_steps * dt = {n_steps * float(dt):.6g} s); give only one of them"
                )
    if n_steps % save_every:
        raise ValueError(f"save_every must be >= 1 and divide n_steps={n_steps}, got {save_every}")
    return n_steps, n_steps // save_every


def _run_from_hist(model, scheme, solver, hist0, aux0, t0, dt, n_saves, save_every, n_active, failed0=False,
                   fallback=False):
    """Time loop from a scheme history; returns ``((hist, aux), failed, outs, stats)``."""
    ladder = fallback_ladder(scheme) if fallback else ((False, 1),)

    def one_step(carry):
        hist, aux, t, fac, have_fac = carry
        if len(ladder) == 1:
            hist, aux, res = implicit_step(model, scheme, solver, hist, aux, t, dt, fac, have_fac)
            if solver.reuse_jacobian:
                fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
            stats = newton_stats(res) + (jnp.asarray(0, jnp.int32),)
        else:
            hist, aux, fac, have_fac, stats = _step_with_fallback(
                model, scheme, solver, hist, aux, t, dt, fac, have_fac, ladder
            )
        return (hist, aux, t + dt, fac, have_fac), stats

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
    carry, failed, outs, stats = scan_saves_checked(one_step, observe, carry0, n_saves, save_every, n_active, failed0)
    return (carry[0], carry[1]), failed, outs, stats


_run_jit = eqx.filter_jit(_run)
_run_from_hist_jit = eqx.filter_jit(_run_from_hist)
_initial_history_jit = eqx.filter_jit(_initial_history)


def _f(x):
    # floats passed to filter_jit as arrays, so a new dt or start time does not recompile
    return jnp.asarray(x, dtype=jnp.result_type(float))


def _is_traced(tree):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _is_batched(tree):
    # simulate() called inside jax.vmap sees batch tracers (not under vmap(jit(...)))
    from jax._src.interpreters.batching import BatchTracer

    return any(isinstance(x, BatchTracer) for x in jax.tree_util.tree_leaves(tree))


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
    fallback: bool | None = None,
) -> Trajectory:
    """Integrate ``model`` in time with an implicit scheme.

    Args:
        model: an :class:`~jaxrod.models.base.AbstractImplicitModel` (e.g. a DER rod model) or a
            :class:`~jaxrod.models.cosserat.CosseratModel` (shooting; see
            :func:`jaxrod.models.cosserat.simulate_cosserat` for its defaults).
        dt: time step [s], > 0.
        n_steps: number of steps (an integer); or give ``duration`` [s] (rounded to a whole number
            of steps); given both, they must agree (``n_steps * dt == duration``).
        state0: initial :class:`State`; default ``model.initial_state()``.
        t0: initial time [s].
        scheme: time scheme or its name, e.g. ``"backward_euler"`` (:func:`~jaxrod.timestepping.scheme_from_name`).
            Default :class:`~jaxrod.timestepping.AverageVectorField` (energy conserving; the same as
            implicit midpoint on linear problems, and unlike it stable on geometrically nonlinear
            rods at large steps); BDF2 for shooting models.
        solver: Newton configuration; ``linear_solver=None`` picks the model's structured solver.
            The default (``None``) reuses factorisations across steps (chord steps while they contract)
            and converges each step to 1e-9 in the unknowns (metres/radians for rods).
        save_every: save one frame every this many steps (must divide ``n_steps``).
        throw: raise :class:`ConvergenceError` (with ``step``, ``time``, ``residual``) when a step
            fails. With ``False`` the trajectory comes back with the failure in ``stats`` and every
            frame after it invalid (``Trajectory.valid`` False, arrays NaN). Either way the run
            stops advancing at the first failed step.
        progress: print progress lines to stderr while running (``True`` for ~20 step lines or an
            int count): each program is compiled ahead of its first call, announced as "compiling
            ..." with heartbeat lines while it lasts (:mod:`jaxrod.progress`), then the steps run
            in chunks that reuse one compiled program (lines with the wall time and an ETA); no
            chunk runs after a failure.
        fallback: retry a failed step with backward Euler at ``dt``, then with two backward-Euler
            half steps (:func:`fallback_ladder`; one-step schemes only). Recovered steps are
            counted in ``stats.fallbacks`` and reported by a :class:`FallbackWarning`. Default
            (``None``): on, except when ``simulate`` itself is called under ``jax.vmap`` (a batched
            retry runs every attempt for every member, up to 4 solves per step; pass ``True`` to
            force it). ``jax.vmap(jax.jit(f))`` hides the batch from ``simulate``: pass
            ``fallback=False`` there. Unbatched, it costs nothing at run time while steps converge at
            the first try (compile time: +9 % CPU on the 21-node a1 cantilever CLI run).

    Returns:
        :class:`Trajectory` with ``n_steps // save_every + 1`` saved frames.

    Works under ``jax.jit``/``jax.vmap``/``jax.grad``; ``progress`` is then ignored and a failure
    (``throw=True``) is raised from the compiled program: wrap the call in
    :func:`convergence_errors` to catch it as :class:`ConvergenceError` (under ``vmap`` its
    ``members`` lists the failed batch members), or pass ``throw=False`` and read
    ``Trajectory.valid`` / ``stats`` per member.
    """
    scheme = resolve_scheme(scheme)
    check_finite_scalar("t0", t0, "s")
    if not isinstance(model, AbstractImplicitModel):
        from .models.cosserat.parallel import StewartGough, simulate_parallel
        from .models.cosserat.simulate import simulate_cosserat

        if isinstance(model, StewartGough):
            return simulate_parallel(
                model, dt=dt, n_steps=n_steps, duration=duration, state0=state0, t0=t0, scheme=scheme,
                solver=solver, save_every=save_every, throw=throw, progress=progress,
            )

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
    if fallback is None:
        fallback = not _is_batched((model, state, dt, t0))
    fallback = bool(fallback) and len(fallback_ladder(scheme)) > 1

    if not progress or traced:
        (hist_f, aux_f), _, outs, stats = _run_jit(
            model, scheme, solver, state, _f(t0), _f(dt), n_saves, save_every, jnp.asarray(n_saves), fallback
        )
    else:
        solver_m = _with_model_solver(model, solver)
        name = type(scheme).__name__
        init = announced(_initial_history_jit, f"the initial history of {name}")
        hist0 = init(model, scheme, solver_m, state, _f(t0), _f(dt))
        run = announced(_run_from_hist_jit, f"the time loop ({name}{' with its fallback ladder' if fallback else ''}, "
                                            f"{jnp.size(state.q)} unknowns)")

        def run_chunk(c, t, chunk, n_act):
            carry, failed, outs_c, stats_c = run(
                model, scheme, solver_m, c[0], c[1], t, _f(dt), chunk, save_every, n_act, c[2], fallback
            )
            return (*carry, failed), outs_c, stats_c

        (hist_f, aux_f, _), outs, stats = run_with_progress(
            run_chunk, (hist0, state.aux, jnp.asarray(False)), n_saves, save_every, n_steps, t0, dt, progress
        )

    # cold, the eager array operations below compile dozens of small programs (seconds)
    with activity("assembling the trajectory", enabled=bool(progress) and not traced):
        times, qs, vs, obs = outs
        obs0 = model.observe(state.q, state.v, state.aux)
        cat = lambda first, rest: jnp.concatenate([jnp.asarray(first)[None], rest])
        conv, its, jacs, rn, err, fb = (x.reshape(-1) for x in stats)
        traj = Trajectory(
            times=cat(jnp.asarray(t0, dtype=times.dtype), times),
            positions=cat(obs0["positions"], obs["positions"]),
            frames=cat(obs0["frames"], obs["frames"]) if "frames" in obs else None,
            twist=cat(obs0["twist"], obs["twist"]) if "twist" in obs else None,
            q=cat(state.q, qs),
            v=cat(state.v, vs),
            stats=SolverStats(conv, its, jacs, rn, err, fb),
            final=State(*scheme.current(hist_f), aux_f),
            dt=jnp.asarray(dt),
        )
        traj = check_trajectory(traj, throw=throw, traced=traced, t0=t0, dt=dt)
    if fallback and not traced:
        _report_fallbacks(traj.stats, scheme, t0, dt)
    return traj


def _report_fallbacks(stats, scheme, t0, dt):
    fb = np.asarray(stats.fallbacks)
    conv = np.asarray(stats.converged)
    rescued = np.flatnonzero((fb > 0) & conv)
    if rescued.size:
        k = int(rescued[0])
        warnings.warn(
            f"simulate(): {rescued.size} of {fb.size} steps did not converge with {type(scheme).__name__} and were "
            f"recovered by the backward-Euler fallback (first at step {k}, t = {float(t0) + (k + 1) * float(dt):.6g} s; "
            f"{int(np.sum(fb[rescued] > 1 - isinstance(scheme, BackwardEuler)))} needed half steps); those steps are "
            f"first order and damp. Pass fallback=False to fail instead, or use a smaller dt.",
            FallbackWarning,
            stacklevel=3,
        )


def solve_static(
    model: AbstractImplicitModel,
    *,
    state0: State | None = None,
    t: float = 0.0,
    solver: NewtonSolver | None = None,
    load_steps: int = 1,
    throw: bool = True,
    progress: bool = False,
):
    """Static equilibrium ``r(q, 0, 0, t) = 0`` (zero velocity and acceleration).

    Loads are applied in ``load_steps`` equal increments (continuation), each solved by Newton
    from the previous one; the model's ``with_load_factor(s)`` scales its external loads.
    Gradients with respect to model parameters come from the implicit function theorem.

    ``progress=True`` prints to stderr what is being compiled and solved, a heartbeat while it
    lasts and, with ``load_steps > 1``, one line per load step (the increments then run one
    compiled call each from the host, instead of one ``lax.scan``; same increments, same
    result). Ignored under ``jax.jit``/``jax.vmap``/``jax.grad``.

    Returns:
        ``(State, NewtonResult)`` of the last increment.
    """
    if not isinstance(model, AbstractImplicitModel):
        from .models.cosserat.simulate import solve_static_cosserat

        if state0 is not None:
            raise ValueError("solve_static(): shooting models take no state0 (pass guess= to solve_static_cosserat)")
        return solve_static_cosserat(model, t=t, solver=solver, load_steps=load_steps, throw=throw, progress=progress)
    if solver is None:
        solver = NewtonSolver(linear_solver=None, max_steps=100)
    load_steps = check_int("load_steps", load_steps, min=1)
    state = model.initial_state() if state0 is None else state0
    solver = _with_model_solver(model, solver)
    if progress and not _is_traced((model, state, t)):
        result, q = static_with_progress(
            _static_increment_jit, (model, state, _f(t), solver), _static_start_jit(model, state, _f(t)),
            int(load_steps), "static equilibrium",
            describe=lambda r: f"residual {float(r.residual_norm):.2e}",
        )
    else:
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


def static_with_progress(increment, args, x0, load_steps, what, *, describe, stream=None):
    """Host loop over the load increments of a static solve, with progress lines (shared by the
    DER and the shooting statics; their compiled path is a ``lax.scan`` over the same increment).

    ``increment(*args, x, s, scaled) -> (x, NewtonResult)`` (a jitted function) solves at load
    factor ``s`` from ``x`` (``scaled``: the model's loads are scaled, i.e. ``load_steps > 1``);
    ``what`` names the solve in the messages; ``describe(result)`` adds to a load step's line.
    Returns ``(NewtonResult of the last increment with converged over all of them, x)``.
    """
    scaled = load_steps > 1
    call = announced(increment, f"the Newton solve of {what}", stream=stream)
    say(f"{what}: solving, {load_steps} load step{'s' if scaled else ''}", stream)
    ok, x, res, paced = True, x0, None, None
    with activity(f"solving {what}", stream=stream) as phase:
        for k in range(1, load_steps + 1):
            x, res = call(*args, x, _f(k / load_steps), scaled)
            jax.block_until_ready(x)
            conv = bool(res.converged)
            ok = ok and conv
            now = _time.perf_counter()
            paced = now if paced is None else paced  # the pace excludes step 1 (it may have compiled)
            if scaled:
                left = eta(k - 1, load_steps - 1, now - paced) if conv else ""
                say(f"  load step {k:3d}/{load_steps}  factor {k / load_steps:.3f}  "
                    f"Newton its {int(res.iterations):3d}  {describe(res)}  {'ok' if conv else 'NOT CONVERGED: stopping'}  wall {phase.elapsed:7.2f} s"
                    + (f"  {left}" if left else ""), stream)
            if not conv:
                break
    say(f"{what}: {'done' if ok else 'FAILED'} in {phase.elapsed:.1f} s ({int(res.iterations)} Newton iterations"
        f"{' in the last load step' if scaled else ''}, {describe(res)})", stream)
    res = eqx.tree_at(lambda r: r.factorization, res, None, is_leaf=lambda v: v is None)
    return eqx.tree_at(lambda r: r.converged, res, jnp.asarray(ok)), x


def _static_start(model, state, t):
    return jnp.where(model.fixed_mask(), model.prescribed(t), state.q)


def _static_increment(model, state, t, solver, q, s, scaled):
    """One load increment at load factor ``s`` from ``q``: ``(q, NewtonResult)``."""
    fixed = model.fixed_mask()
    qb = model.prescribed(t)
    m = model.with_load_factor(s) if scaled else model

    def residual(qn, _):
        q_sub = jnp.where(fixed, qb, qn)
        r = m.static_residual(q_sub, t, state.aux)
        return jnp.where(fixed, qn - qb, r)

    res = newton_solve(residual, q, None, solver)
    return jnp.where(fixed, qb, res.value), res


def _static(model, state, t, solver, load_steps):
    factors = jnp.arange(1, load_steps + 1) / load_steps
    q, results = jax.lax.scan(
        lambda q, s: _static_increment(model, state, t, solver, q, s, load_steps > 1),
        _static_start(model, state, t), factors,
    )
    last = jax.tree_util.tree_map(lambda x: x[-1], results)
    ok = jnp.all(results.converged)
    last = eqx.tree_at(lambda r: r.factorization, last, None, is_leaf=lambda x: x is None)
    return eqx.tree_at(lambda r: r.converged, last, ok), q


_static_start_jit = eqx.filter_jit(_static_start)
_static_increment_jit = eqx.filter_jit(_static_increment)
_static_jit = eqx.filter_jit(_static)


_implicit_step_jit = eqx.filter_jit(implicit_step)


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
    solver = _with_model_solver(model, solver)
    state = model.initial_state() if state0 is None else state0
    report = bool(progress) and not _is_traced((model, state, dt, t0))
    name = type(scheme).__name__
    hist = announced(_initial_history_jit, f"the initial history of {name}", enabled=report)(
        model, scheme, solver, state, _f(t0), _f(dt)
    )
    step_jit = announced(_implicit_step_jit, f"one {name} step", enabled=report)
    aux = state.aux
    t, t_end, h = float(t0), float(t0) + float(duration), float(dt)
    times, positions, qs, vs, steps = [t], [_observe_jit(model, state.q, state.v, aux)], [state.q], [state.v], []
    stats = []
    easy = rejected = 0
    wall0 = _time.perf_counter()
    next_report = t0 + duration / 20
    while t < t_end * (1 - 1e-12):
        step = min(h, t_end - t)
        hist1, aux1, res = step_jit(model, scheme, solver, hist, aux, _f(t), _f(step))
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
                say(f"  t = {t:9.4f} s  dt = {h:.3g} s  accepted {len(steps)}  rejected {rejected}  "
                    f"wall {_time.perf_counter() - wall0:7.2f} s")
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
