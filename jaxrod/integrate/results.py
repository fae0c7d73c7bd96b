"""What a run returns and how it fails: :class:`Trajectory`, :class:`SolverStats`,
:class:`ConvergenceError` (raised on the host, or from inside a compiled program by a host
callback) and the masking of the frames after a failed step."""

from __future__ import annotations

import contextlib
import threading

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from .base import State

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
        final: :class:`~jaxrod.integrate.State` (implicit models) or
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


def newton_stats(res):
    """The per-step statistics tuple of a :class:`NewtonResult` (see :func:`scan_saves`)."""
    return (
        res.converged, res.iterations.astype(jnp.int32), res.jacobians.astype(jnp.int32),
        res.residual_norm, res.error_estimate,
    )


def _valid_frames(converged, n_frames):
    """``(T,)`` bool: frame 0 and every frame reached through converged steps only."""
    ok = jnp.cumprod(converged.astype(jnp.int32), axis=-1) > 0
    per = ok.shape[-1] // (n_frames - 1)
    return jnp.concatenate([jnp.ones(ok.shape[:-1] + (1,), bool), ok[..., per - 1 :: per]], axis=-1)


NEWTON_FAILURE = ("Newton", "residual max-norm", "Try a smaller dt, more max_steps or looser tolerances")


def _failure_report(conv, rn, t0, dt, failure=NEWTON_FAILURE):
    """:class:`ConvergenceError` for host arrays ``conv``/``rn`` of shape ``(..., n_steps)``
    (leading axes: batch members); ``None`` if every step converged. ``failure``: ``(name of the
    step's solver, what its stats' residual column measures, what to try)``, from the stepper's
    ``failure`` attribute."""
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
    solver, quantity, advice = failure
    where = f"{solver} did not converge at step {k} (t = {t:.6g} s): {quantity} {r:.3e}"
    if conv.ndim > 1:
        members = tuple(f[0] for f in failures)
        shown = ", ".join(str(m) for m in members[:20]) + (", ..." if len(members) > 20 else "")
        msg = (f"{len(members)} of {int(np.prod(conv.shape[:-1]))} batch members failed (members {shown}); "
               f"member {member}: {where}")
    else:
        members, msg = None, where
    msg += (f". The run stopped there (later frames are invalid). {advice}; pass throw=False to get the "
            "trajectory up to the failure.")
    return ConvergenceError(msg, step=k, time=t, residual=r, members=members, failures=failures)


class _LastError:
    # the callback runs on an XLA host thread: a plain shared slot, not a thread-local
    lock = threading.Lock()
    value = None


_last_error = _LastError()


def _poison(tree, bad):
    """``tree`` with every inexact array leaf NaN where ``bad`` (a traced scalar) holds."""
    return jax.tree_util.tree_map(
        lambda x: jnp.where(bad, jnp.nan, x) if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.inexact) else x,
        tree,
    )


def _raise_in_program(traj, t0, dt, failure=NEWTON_FAILURE):
    """Report a failed step from inside a compiled program (``simulate`` under ``jit``/``vmap``,
    where Python cannot see the values), as :func:`jaxrod.config.traced_errors` says: ``"raise"``
    threads a host callback into ``traj`` that raises :class:`ConvergenceError`; ``"nan"`` makes
    the run's arrays all NaN when a step failed (no callback, so the program can be cached)."""
    from ..config import traced_errors

    sg = jax.lax.stop_gradient
    if traced_errors() == "nan":
        flag = ~jnp.all(sg(traj.stats.converged))
    else:
        def callback(conv, rn, t0_, dt_):
            err = _failure_report(conv, rn, t0_, dt_, failure)
            if err is not None:
                with _last_error.lock:
                    _last_error.value = err
                raise err
            return np.zeros(np.asarray(conv).shape[:-1], bool)

        flag = jax.pure_callback(
            callback, jax.ShapeDtypeStruct((), jnp.bool_), sg(traj.stats.converged), sg(traj.stats.residual_norm),
            sg(jnp.asarray(traj.times[0])), sg(jnp.asarray(traj.dt)), vmap_method="expand_dims",
        )
    # the arrays depend on the flag (the callback's output is always False) so that it is never pruned
    guard = lambda x: None if x is None else jnp.where(flag, jnp.nan, x)
    return eqx.tree_at(
        lambda t: (t.positions, t.q, t.v, t.frames, t.twist),
        traj,
        (guard(traj.positions), guard(traj.q), guard(traj.v), guard(traj.frames), guard(traj.twist)),
        is_leaf=lambda x: x is None,
    )


def check_in_program(tree, ok, message):
    """``tree`` (a solve's result, traced) reported as failed where ``ok`` (a traced bool) is false,
    as :func:`jaxrod.config.traced_errors` says: ``eqx.error_if`` raising ``message`` (a host
    callback), or every inexact array of ``tree`` NaN (no callback, so the program can be cached)."""
    from ..config import traced_errors

    if traced_errors() == "nan":
        return _poison(tree, ~ok)
    return eqx.error_if(tree, ~ok, message)


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
