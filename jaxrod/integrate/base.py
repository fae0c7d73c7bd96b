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

import equinox as eqx
import jax


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
        from .results import Trajectory

        return Trajectory(
            times=times, positions=frames["positions"], frames=frames.get("frames"), twist=frames.get("twist"),
            q=frames["q"], v=frames.get("v"), stats=stats, final=final, dt=dt, valid=valid,
        )


class AbstractImplicitModel(eqx.Module):
    """A model whose time step is a Newton solve of its dynamics residual in the configuration
    (DER rods and networks, PCS, reduced rods, rigid-body systems): implement the abstract
    methods and :func:`jaxrod.simulate` integrates it with any implicit scheme."""

    def stepper(self, scheme=None, solver=None, *, fallback: bool = False):
        """:class:`~jaxrod.integrate.implicit.ImplicitStepper` for ``scheme`` (default
        :class:`~jaxrod.integrate.schemes.AverageVectorField`) and the Newton ``solver`` (default:
        chord steps reusing factorisations, tolerance 1e-9; ``linear_solver=None`` picks the
        model's structured solver). ``fallback``: compile the backward-Euler fallback ladder into
        every step (the loop otherwise calls it only after a failed step)."""
        from .implicit import ImplicitStepper

        return ImplicitStepper.build(self, scheme, solver, fallback=fallback)

    @abc.abstractmethod
    def residual(self, q, v, a, t, aux):
        """Dynamics residual, same shape as ``q``; zero on the equations of motion."""

    @abc.abstractmethod
    def fixed_mask(self):
        """Boolean array shaped like ``q``: True for DOFs prescribed by boundary conditions."""

    @abc.abstractmethod
    def prescribed(self, t):
        """Values of the prescribed DOFs at time ``t`` [s] (array shaped like ``q``)."""

    @abc.abstractmethod
    def init_aux(self, q):
        """Reference data for configuration ``q`` at the start of a run."""

    @abc.abstractmethod
    def update_aux(self, q, aux):
        """Reference data after a step has converged at ``q``."""

    @abc.abstractmethod
    def default_linear_solver(self):
        """The :class:`~jaxrod.solvers.jacobian.AbstractJacobianSolver` suited to this model."""

    @abc.abstractmethod
    def initial_state(self):
        """:class:`State` the model starts from (its reference configuration, at rest)."""

    def newton_step_limit(self, q, v, dq, dv, aux):
        """Largest fraction in (0, 1] of a Newton update ``(dq, dv)`` of the stage configuration
        ``q`` and velocity ``v`` that the time step's line search may start from, or ``None`` (no
        limit, the default). Models with stiff non-smooth-like forces (friction) use it to keep
        Newton from overshooting; it never changes the converged solution."""
        return None

    def end_of_step_residual(self, q_next, r, t, aux):
        """The step residual with the rows that must hold at the END of the step replaced.

        Time schemes evaluate ``residual`` at a stage point (the midpoint, or an average over the
        step); an algebraic constraint ``g(q) = 0`` imposed there would let ``g(q_{n+1})`` drift.
        Models with constraints (:class:`jaxrod.system.MultibodySystem`) overwrite their
        constraint rows of ``r`` with ``g(q_next)`` here, so the constraints hold to the Newton
        tolerance after every step whatever the scheme. Default: ``r`` unchanged.

        Args:
            q_next: end-of-step configuration, shaped like ``q``.
            r: the scheme's residual, shaped like ``q``.
            t: end-of-step time [s].
            aux: reference data of the step (as passed to ``residual``).
        """
        return r

    def static_residual(self, q, t, aux):
        """Residual of static equilibrium at ``q`` (used by :func:`jaxrod.solve_static`).
        Default: ``residual(q, 0, 0, t, aux)``. Models whose unknowns include integrated
        multipliers (:class:`jaxrod.system.MultibodySystem`) read the constraint forces from
        ``q`` here, since their rates vanish at rest."""
        zeros = jax.numpy.zeros_like(q)
        return self.residual(q, zeros, zeros, t, aux)

    def acceleration_residual(self, q, v, a, t, aux):
        """Residual whose root in ``a`` is the consistent acceleration at ``(q, v, t)`` (schemes
        with ``needs_acceleration``). Default: ``residual(q, v, a, t, aux)``. Constrained models
        replace their constraint rows by the constraints' second time derivative."""
        return self.residual(q, v, a, t, aux)

    def multiplier_mask(self):
        """Boolean array shaped like ``q``: True for Lagrange-multiplier coordinates, or ``None``.

        A model with algebraic constraints ``g(q) = 0`` (:class:`jaxrod.system.MultibodySystem`)
        carries integrated multipliers ``mu`` among its coordinates: the constraint force is their
        velocity ``v_mu`` and their residual rows are the constraints. Analyses that linearise the
        model at rest (:func:`jaxrod.modal`) need to know which entries these are, because at
        ``v = 0`` the constraint forces would vanish. Default ``None``: no multipliers.
        """
        return None

    @abc.abstractmethod
    def observe(self, q, v, aux):
        """Dict of outputs saved in a :class:`~jaxrod.simulate.Trajectory`; must contain
        ``positions`` ``(N, 3)`` [m]; may contain ``frames`` ``(N-1, 3, 3)`` and ``twist``."""
