"""The time loops over an :class:`~jaxrod.integrate.base.AbstractStepper`.

Two ways to run the same steps:

* :func:`run_steps` (a plain call, with or without progress lines): the host calls ONE compiled
  program, :func:`_chunk`, again and again. It advances up to ``size`` steps per call in a
  ``lax.while_loop`` whose trip count, start time, ``dt`` and save interval are arguments, saving a
  frame after every ``save_every``-th step into a buffer of ``size`` frames. So a run of another
  duration, step count, save interval, ``dt``, load or material value reuses the compiled program
  (nothing recompiles), and a progress line costs nothing but a print between calls. The fallback
  of a failed step (:meth:`~jaxrod.integrate.base.AbstractStepper.retry`) is a second program,
  compiled only when a step has failed.
* :func:`scan_saves` (under ``jax.jit``/``jax.vmap``/``jax.grad``, where the caller fixes the
  shapes): a nested ``lax.scan`` over saves and the steps between them, reverse-differentiable.

Both stop advancing at the first step that does not converge (later steps are skipped and
reported as such).
"""

from __future__ import annotations

import math
import time as _time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..progress import activity, announced, eta, say
from ..validation import check_int

#: dtypes of the per-step statistics ``(converged, iterations, jacobians, residual_norm,
#: error_estimate, fallback_level)`` every stepper returns
STAT_DTYPES = (jnp.bool_, jnp.int32, jnp.int32, jnp.float64, jnp.float64, jnp.int32)
#: most steps (and so saved frames) one call of the chunk program advances
MAX_CHUNK = 256
#: the frame buffer of a chunk is kept below this size [bytes] (big models take fewer steps per call)
CHUNK_BYTES = 16 * 2**20


def _f(x):
    # floats passed to filter_jit as arrays, so a new dt or start time does not recompile
    return jnp.asarray(x, dtype=jnp.result_type(float))


def _cast_stats(stats):
    stats = tuple(stats) + (jnp.asarray(0, jnp.int32),) * (len(STAT_DTYPES) - len(stats))
    return tuple(jnp.asarray(s, d) for s, d in zip(stats, STAT_DTYPES))


def _is_traced(tree):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _check_positive(name, value):
    if isinstance(value, jax.core.Tracer):
        return
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


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


def scan_saves_checked(one_step, observe, carry0, n_saves, save_every, n_active, failed0=False, cheap_steps=False,
                       checkpoint=False):
    """:func:`scan_saves` that also carries the failure flag: returns ``(carry, failed, outs, stats)``.

    A step whose ``converged`` is False leaves the carry unchanged (the last converged state) and
    sets ``failed``; while ``failed``, steps are skipped by a ``lax.cond`` (no Newton work; under
    ``vmap`` the cond becomes a select and the work is done but discarded). ``failed0`` continues
    a chunked run. ``cheap_steps`` (explicit steppers): the step is always computed and its result
    discarded by a select while ``failed``, the same results without the conditional, which costs
    more than a cheap step on XLA-CPU (RK4 on a 10-link chain: 48 us per step with the
    conditional, 34 without). ``checkpoint``: ``jax.checkpoint`` around each step and each save
    interval, so reverse mode stores the states at the saves only and recomputes the rest (two-level
    checkpointing: memory of ``n_saves + save_every`` states instead of every step's intermediates).
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
        if cheap_steps:
            new, stats = one_step(carry)
            ok = stats[0] & ~failed
            new = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, carry)
            skipped = _skipped_stats(jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), stats))
            stats = jax.tree_util.tree_map(lambda x, k: jnp.where(failed, k, x), stats, skipped)
            return (new, failed | ~stats[0]), stats

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

    if checkpoint:
        step = jax.checkpoint(step, prevent_cse=False)

    def one_save(c, i):
        def active(c):
            return jax.lax.scan(step, c, jnp.arange(save_every))

        def idle(c):
            dummy = jax.tree_util.tree_map(
                lambda s: jnp.zeros((save_every,) + s.shape, s.dtype), stat_shapes()
            )
            dummy = (jnp.ones(save_every, bool),) + tuple(dummy[1:])
            return c, dummy

        if isinstance(n_active, int) and n_active >= n_saves:
            c, stats = active(c)  # every save active (a traced run): no conditional around the steps
        else:
            c, stats = jax.lax.cond(i < n_active, active, idle, c)
        return c, (observe(c[0]), stats)

    if checkpoint:
        one_save = jax.checkpoint(one_save, prevent_cse=False)
    (carry, failed), (outs, stats) = jax.lax.scan(
        one_save, (carry0, jnp.asarray(failed0)), jnp.arange(n_saves)
    )
    return carry, failed, outs, stats



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



def static_with_progress(increment, args, x0, load_steps, what, *, describe, stream=None):
    """Host loop over the load increments of a static solve, with progress lines (shared by the
    DER and the shooting statics; their compiled path is a ``lax.scan`` over the same increment).

    ``increment(*args, x, s, scaled) -> (x, NewtonResult)`` (a jitted function) solves at load
    factor ``s`` from ``x`` (``scaled``: always True here, so that any number of load steps shares one program);
    ``what`` names the solve in the messages; ``describe(result)`` adds to a load step's line.
    Returns ``(NewtonResult of the last increment with converged over all of them, x)``.
    """
    scaled = load_steps > 1
    call = announced(increment, f"the Newton solve of {what}", stream=stream)
    say(f"{what}: solving, {load_steps} load step{'s' if scaled else ''}", stream)
    ok, x, res, paced = True, x0, None, None
    with activity(f"solving {what}", stream=stream) as phase:
        for k in range(1, load_steps + 1):
            x, res = call(*args, x, _f(k / load_steps), True)  # one program for any load_steps
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


# ---- the chunked loop of a plain call ---------------------------------------------------------
def chunk_size(frame_shapes) -> int:
    """Steps per call of :func:`_chunk` for frames of these shapes: :data:`MAX_CHUNK`, halved while
    the frame buffer would exceed :data:`CHUNK_BYTES` (at least 8). Depends on the model's
    structure only, so it never causes a recompile between runs of one model."""
    nbytes = sum(math.prod(s.shape) * np.dtype(s.dtype).itemsize for s in jax.tree_util.tree_leaves(frame_shapes))
    size = MAX_CHUNK
    while size > 8 and size * nbytes > CHUNK_BYTES:
        size //= 2
    return size


def _start(stepper, state, t0, dt):
    carry = stepper.init(state, t0, dt)
    return carry, stepper.observe(carry)


def _chunk(stepper, carry, t, dt, failed, step0, n, save_every, size):
    """Up to ``n <= size`` steps from ``carry`` at time ``t``; stops early at a failed step.

    Returns ``(carry, t, failed, steps_taken, frames, n_frames, stats)``: ``frames`` holds
    ``size`` slots of which the first ``n_frames`` are the frames after the steps whose global index
    ``step0 + k + 1`` is a multiple of ``save_every``; ``stats`` holds ``size`` slots of per-step
    statistics, the first ``steps_taken`` filled (the last of them the failed step, if any).
    """
    frame_shapes = jax.eval_shape(stepper.observe, carry)
    frames0 = jax.tree_util.tree_map(lambda s: jnp.zeros((size,) + s.shape, s.dtype), frame_shapes)
    stats0 = tuple(jnp.zeros((size,), d) for d in STAT_DTYPES)

    def cond(c):
        k, _, _, failed = c[:4]
        return (k < n) & ~failed

    def body(c):
        k, carry, t, failed, frames, nf, stats = c
        new, st = stepper.step(carry, t, dt)
        st = _cast_stats(st)
        ok = st[0]
        carry = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, carry)
        t = jnp.where(ok, t + dt, t)
        stats = tuple(b.at[k].set(x) for b, x in zip(stats, st))
        save = ok & ((step0 + k + 1) % save_every == 0)
        frames = jax.lax.cond(
            save,
            lambda fr: jax.tree_util.tree_map(lambda b, x: b.at[nf].set(x), fr, stepper.observe(carry)),
            lambda fr: fr,
            frames,
        )
        return k + 1, carry, t, ~ok, frames, nf + save.astype(jnp.int32), stats

    c0 = (jnp.asarray(0, jnp.int32), carry, t, failed, frames0, jnp.asarray(0, jnp.int32), stats0)
    k, carry, t, failed, frames, nf, stats = jax.lax.while_loop(cond, body, c0)
    return carry, t, failed, k, frames, nf, stats


def _retry(stepper, carry, t, dt):
    new, st = stepper.retry(carry, t, dt)
    st = _cast_stats(st)
    carry = jax.tree_util.tree_map(lambda a, b: jnp.where(st[0], a, b), new, carry)
    return carry, st, stepper.observe(carry)


_start_jit = eqx.filter_jit(_start)
_chunk_jit = eqx.filter_jit(_chunk)
_retry_jit = eqx.filter_jit(_retry)


class StepsResult(eqx.Module):
    """Host-side (NumPy) outcome of :func:`run_steps`."""

    frames: dict  # (n_saves + 1, ...) per entry; frames after a failure are NaN
    stats: tuple  # per-step statistics, each (n_steps,)
    valid: np.ndarray  # (n_saves + 1,) bool
    carry: object  # the carry after the last converged step
    t: float  # its time [s]


def _nan_like(a):
    a = np.asarray(a)
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating):
        return np.full_like(a, np.nan)
    return np.zeros_like(a)


def run_steps(stepper, state, *, t0, dt, n_steps, save_every, progress=False, what="the time loop",
              retry=True) -> StepsResult:
    """Run ``n_steps`` steps of ``stepper`` from ``state`` (a plain, untraced call).

    Saves the frame of the initial state and one every ``save_every`` steps. With ``progress``
    (``True`` for about 20 lines, or a count) prints a line per stretch of steps; the compiled
    programs are the same as for a silent run. ``retry``: after a failed step call the stepper's
    :meth:`~jaxrod.integrate.base.AbstractStepper.retry` (compiled then, the first time it is needed).
    """
    report = bool(progress)
    n_lines = 0 if not report else (20 if progress is True else max(1, int(progress)))
    # progress lines after these step counts; each ends a call of the chunk program (same program)
    marks = sorted({max(1, math.ceil(j * n_steps / n_lines)) for j in range(1, n_lines + 1)}) if report else []
    t0f, dtf = _f(t0), _f(dt)
    start = announced(_start_jit, f"the initial step history ({what})", enabled=report)
    carry, frame0 = start(stepper, state, t0f, dtf)
    size = chunk_size(jax.eval_shape(lambda: frame0))
    chunk = announced(_chunk_jit, what, enabled=report)
    frames = [jax.tree_util.tree_map(lambda x: np.asarray(x)[None], frame0)]
    stats = []
    t, failed, done = t0f, jnp.asarray(False), 0
    n_saves = n_steps // save_every
    wall0 = _time.perf_counter()
    paced = None
    line_its = []
    with activity(lambda: f"running {what} (step {done}/{n_steps})", enabled=report):
        while done < n_steps:
            n = min(size, n_steps - done)
            if marks:
                n = min(n, next(m for m in marks if m > done) - done)
            carry, t, failed, k, fr, nf, st = chunk(
                stepper, carry, t, dtf, failed, jnp.asarray(done, jnp.int32), jnp.asarray(n, jnp.int32),
                jnp.asarray(save_every, jnp.int32), size,
            )
            k, nf, failed_h = int(k), int(nf), bool(failed)
            st = [np.array(np.asarray(x)[:k]) for x in st]
            frames.append(jax.tree_util.tree_map(lambda x: np.asarray(x)[:nf], fr))
            if failed_h and retry:
                out = _retry_once(stepper, carry, t, dtf, report)
                if out is not None and bool(out[1][0]):
                    carry, st_r, frame = out
                    for j, x in enumerate(st_r):
                        x = np.asarray(x)
                        st[j][-1] = x + st[j][-1] if j in (1, 2) else x  # iterations count every attempt
                    t = t + dtf
                    failed, failed_h = jnp.asarray(False), False
                    if (done + k) % save_every == 0:
                        frames.append(jax.tree_util.tree_map(lambda x: np.asarray(x)[None], frame))
            stats.append(st)
            line_its.append(st[1])
            done += k
            if report and (failed_h or done in marks):
                now = _time.perf_counter()
                paced = (done, now) if paced is None else paced  # the pace excludes the first stretch (compile)
                its = np.concatenate(line_its)
                line_its = []
                tt = float(t0) + done * float(dt)
                status = f"FAILED at step {done - 1} (t = {tt:.6g} s): stopping" if failed_h else "ok"
                left = "" if failed_h else eta(done - paced[0], n_steps - paced[0], now - paced[1])
                say(f"  step {done:>8d}/{n_steps}  t = {tt:9.4f} s  Newton its/step {its.mean():5.2f}  {status}  "
                    f"wall {now - wall0:7.2f} s" + (f"  {left}" if left else ""))
            if failed_h:
                break
    stats = tuple(np.concatenate([s[j] for s in stats]) for j in range(len(STAT_DTYPES)))
    if stats[0].size < n_steps:  # skipped after a failure
        pad = n_steps - stats[0].size
        fill = (np.zeros(pad, bool), np.zeros(pad, np.int32), np.zeros(pad, np.int32), np.full(pad, np.nan),
                np.full(pad, np.nan), np.zeros(pad, np.int32))
        stats = tuple(np.concatenate([s, f]) for s, f in zip(stats, fill))
    frames = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *frames)
    n_have = jax.tree_util.tree_leaves(frames)[0].shape[0]
    if n_have < n_saves + 1:
        frames = jax.tree_util.tree_map(
            lambda x: np.concatenate([x, _nan_like(np.repeat(x[-1:], n_saves + 1 - n_have, axis=0))]), frames
        )
    valid = np.arange(n_saves + 1) < n_have
    return StepsResult(frames, stats, valid, carry, float(t))


def _retry_once(stepper, carry, t, dt, report):
    if not stepper.can_retry():
        return None
    retry = announced(_retry_jit, "the fallback step", enabled=report)
    return retry(stepper, carry, t, dt)


def _static_host_loop(increment, args, x0, load_steps):
    """The increments of a static solve called one by one (one compiled increment for any number
    of load steps); stops at the first that fails. Returns ``(NewtonResult, x)`` like :func:`_static`."""
    ok, x, res = True, x0, None
    for k in range(1, load_steps + 1):
        x, res = increment(*args, x, _f(k / load_steps), True)
        if not bool(res.converged):
            ok = False
            break
    res = eqx.tree_at(lambda r: r.factorization, res, None, is_leaf=lambda v: v is None)
    return eqx.tree_at(lambda r: r.converged, res, jnp.asarray(ok)), x
