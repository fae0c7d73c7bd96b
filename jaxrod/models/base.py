"""The interface every implicitly integrated model implements, and the model state.

A model is an ``equinox.Module`` holding its parameters as array leaves (differentiable) and its
configuration as static fields. It exposes a *dynamics residual* ``r(q, v, a, t, aux)`` whose zero
is the equation of motion (for a rod with lumped masses ``r = M a - F(q, v, t)``), which boundary
conditions are fixed, and how its non-differentiable reference data ``aux`` (e.g. DER reference
frames) is initialised and carried from step to step. Everything else (time schemes, Newton,
the time loop) is generic and lives in :mod:`jaxrod.timestepping`, :mod:`jaxrod.solvers` and
:mod:`jaxrod.simulate`.

Shooting models (:class:`~jaxrod.models.cosserat.CosseratModel`) do not fit this interface (their
unknowns are boundary values, not a configuration): they share the difference formulas, the Newton
solver and the time-loop helpers of :mod:`jaxrod.simulate`, and :func:`jaxrod.simulate` dispatches
to them.
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


class AbstractImplicitModel(eqx.Module):
    """Interface used by :func:`jaxrod.simulate.simulate` and :func:`jaxrod.simulate.solve_static`."""

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
