"""The interfaces the time loop consumes: :class:`AbstractStepper` (one way in for every model),
:class:`AbstractImplicitModel` (models whose step is a Newton solve of a dynamics residual in the
configuration) and the model :class:`State`.

A model is an ``equinox.Module`` holding its parameters as array leaves (differentiable) and its
configuration as static fields. Every model answers ``model.stepper(scheme, solver)`` with an
:class:`AbstractStepper`; :func:`jaxrod.simulate` and the manual-stepping API are written once over
that interface (``init``, ``step``, ``observe``, ``final``), as diffrax's loop is over its solvers.
Implicit models get :class:`~jaxrod.integrate.implicit.ImplicitStepper` for free by implementing
the residual interface below; shooting models (:class:`~jaxrod.models.cosserat.CosseratModel`,
:class:`~jaxrod.models.cosserat.StewartGough`) bring their own steppers.
"""

from __future__ import annotations

import abc
import functools

import equinox as eqx
import jax

from .results import NEWTON_FAILURE, Trajectory


def jit_when_eager(method):
    """Decorator for a model method of array arguments (``observe``): called with concrete values
    it runs as one cached compiled program (:func:`equinox.filter_jit`) instead of dispatching
    each array operation as a program of its own (a PCS ``observe`` was ~80 tiny programs);
    called while tracing it is inlined as before."""
    jitted = eqx.filter_jit(method)

    @functools.wraps(method)
    def wrapper(self, *args):
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((self, args))):
            return method(self, *args)
        return jitted(self, *args)

    return wrapper


class State(eqx.Module):
    """Model state at one instant.

    Attributes:
        q: generalised coordinates (model-specific shape, e.g. ``(N, 4)`` for DER).
        v: generalised velocities, same shape as ``q``.
        aux: model-specific reference data carried between steps (pytree).
    """

    q: jax.Array
    v: jax.Array
    aux: object


class AbstractStepper(eqx.Module):
    """One time step of a model, as the generic loop (:func:`jaxrod.simulate`) sees it.

    The loop only ever calls these four methods (plus :meth:`retry` after a failed step and
    :meth:`trajectory` once at the end), so every model, implicit or shooting, runs through the
    same compiled program structure: a ``lax.while_loop``/``lax.scan`` over ``step``. The *carry*
    is any pytree of arrays whose structure does not change from step to step.

    Manual stepping (what :func:`jaxrod.simulate` does, without saving)::

        stepper = model.stepper(scheme, solver)
        carry = stepper.init(state0, t0, dt)
        t = t0
        for _ in range(n):
            carry, stats = stepper.step(carry, t, dt)   # stats[0]: converged
            t += dt
        state = stepper.final(carry)
    """

    @abc.abstractmethod
    def init(self, state, t0, dt):
        """The carry at time ``t0`` [s] for steps of ``dt`` [s] (scheme history, warm starts)."""

    @abc.abstractmethod
    def step(self, carry, t, dt):
        """Advance the carry from ``t`` to ``t + dt`` [s]. Returns ``(carry, stats)`` with
        ``stats = (converged, iterations, jacobians, residual_norm, error_estimate, fallback_level)``
        (scalars; see :class:`~jaxrod.integrate.results.SolverStats`). A step that did not
        converge returns an arbitrary carry: the loop keeps the previous one."""

    @abc.abstractmethod
    def observe(self, carry):
        """The frame saved for the carry: a dict of arrays, with at least ``q`` and ``positions``
        ``(N, 3)`` [m]; optionally ``v``, ``frames``, ``twist`` and model-specific entries."""

    @abc.abstractmethod
    def final(self, carry):
        """The state after the last step (a restart point: ``simulate(..., state0=final)``)."""

    def start_state(self, state0, t0, *, throw=True, progress=False):
        """The state a run starts from: ``state0`` checked, or the model's default initial state
        at ``t0`` [s] when ``state0`` is ``None``."""
        return state0

    #: steps cheap enough that computing and discarding one beats a conditional (explicit
    #: steppers): the compiled loop then skips the steps after a failure by a select
    cheap_steps = False

    #: ``(solver name, what the stats' residual column measures, what to try)`` for the
    #: ConvergenceError of a failed step (:func:`jaxrod.integrate.results._failure_report`)
    failure = NEWTON_FAILURE

    def check_dt(self, dt) -> None:
        """Warn or raise when the step ``dt`` [s] (a concrete number) is beyond what the stepper
        can take (default: nothing; :func:`jaxrod.simulate` calls it before a run)."""
        return None

    def describe(self) -> str:
        """A few words naming the model and the scheme (progress lines)."""
        return type(self).__name__

    def solve_static(self, *, state0=None, t=0.0, solver=None, load_steps=1, throw=True, progress=False):
        """Static equilibrium at ``t`` [s] (see :func:`jaxrod.solve_static`)."""
        raise NotImplementedError(f"{type(self).__name__} has no static solve")

    def can_retry(self) -> bool:
        """Whether :meth:`retry` exists (the loop compiles it only after a failed step)."""
        return False

    def retry(self, carry, t, dt):
        """A second attempt at a step that failed (e.g. a backward-Euler fallback), or ``None``
        when the stepper has none. Same return as :meth:`step`; ``fallback_level`` counts from 1."""
        return None

    def trajectory(self, times, frames, stats, final, dt, valid):
        """Assemble the result from the stacked ``frames`` (dict of ``(T, ...)`` arrays, already
        masked after a failure), ``times`` ``(T,)``, :class:`SolverStats` and the final state."""
        return Trajectory(
            times=times, positions=frames["positions"], frames=frames.get("frames"), twist=frames.get("twist"),
            q=frames["q"], v=frames.get("v"), stats=stats, final=final, dt=dt, valid=valid,
        )
