"""Generic Newton solver on pytrees with implicit differentiation.

``newton_solve(fn, x0, args, solver)`` finds ``x`` with ``fn(x, args) == 0``. The Jacobian comes
from forward-mode autodiff of ``fn`` through a :class:`~jaxrod.solvers.jacobian.AbstractJacobianSolver`
(dense ``jacfwd`` or a coloured banded Jacobian), the iteration is a ``jax.lax.while_loop`` with a
backtracking line search, and the derivative of the solution with respect to ``args`` (and anything
``fn`` closes over) comes from the implicit function theorem through ``jax.lax.custom_root``: the
iterations are never differentiated. Forward and reverse mode both work because the tangent solve
is a ``jax.lax.custom_linear_solve`` with an explicit transposed solve.

Convergence: after each Newton update ``x1 = x + alpha dx`` the solver estimates the remaining
error with one extra *chord* solve ``J(x)^{-1} F(x1)`` (reusing the factorisation, so it costs a
back-substitution, not a Jacobian) and stops when every component satisfies
``|err_i| <= atol + rtol |x1_i|``. For a nearly linear step (a small-amplitude vibration, say)
this stops after a single Jacobian. Non-finite residuals stop the loop with ``converged=False``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from .jacobian import AbstractJacobianSolver, DenseJacobianSolver


class NewtonSolver(eqx.Module):
    """Configuration of a damped Newton iteration.

    Attributes:
        rtol: relative tolerance on the estimated error of each unknown.
        atol: absolute tolerance on the estimated error of each unknown (units of the unknowns,
            e.g. metres and radians for a DER rod).
        max_steps: maximum number of Newton iterations (Jacobian evaluations).
        linear_solver: how the Jacobian is built and factorised (dense or banded).
        max_backtracks: maximum number of step halvings in the line search.
        armijo: sufficient-decrease constant of the line search on ``|F|^2``.
    """

    rtol: float = 1e-9
    atol: float = 1e-12
    max_steps: int = eqx.field(static=True, default=50)
    linear_solver: AbstractJacobianSolver = DenseJacobianSolver()
    max_backtracks: int = eqx.field(static=True, default=12)
    armijo: float = 1e-4

    def __check_init__(self):
        if self.max_steps < 1:
            raise ValueError(f"NewtonSolver.max_steps must be >= 1, got {self.max_steps}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and not (value >= 0):
                raise ValueError(f"NewtonSolver.{name} must be >= 0, got {value}")


class NewtonResult(eqx.Module):
    """Outcome of :func:`newton_solve`.

    Attributes:
        value: the solution, same pytree structure as ``x0``.
        converged: bool scalar, True when the tolerance was met with finite values.
        iterations: int scalar, number of Jacobian evaluations used.
        residual_norm: max-norm of ``fn`` at ``value``.
        error_estimate: max over unknowns of ``|err_i| / (atol + rtol |x_i|)`` (<= 1 when converged).
    """

    value: object
    converged: jax.Array
    iterations: jax.Array
    residual_norm: jax.Array
    error_estimate: jax.Array


def _scaled_max(err, x, solver):
    return jnp.max(jnp.abs(err) / (solver.atol + solver.rtol * jnp.abs(x)))


def _newton_loop(f, x0, solver: NewtonSolver):
    """Damped Newton iteration on flat vectors; returns ``(x, (converged, iterations, |F|, err))``.

    Written so that the residual ``f`` and its linearisation each appear once in the traced
    program (compile time grows with every copy): each pass of the loop body first line-searches
    along the previous Newton direction (the very first pass, with ``dx = 0``, just evaluates
    ``f(x0)``), then checks convergence with a chord solve on the previous factorisation, and only
    then builds and factorises a new Jacobian.
    """
    ls = solver.linear_solver
    dtype = x0.dtype
    fac0 = ls.factor(ls.linearize(lambda x: x, x0))  # placeholder with the right structure

    def cond(state):
        return (~state["done"]) & (state["it"] <= solver.max_steps)

    def body(state):
        x, dx, r, first = state["x"], state["dx"], state["r"], state["it"] == 0
        phi0 = jnp.sum(r * r)

        def ls_cond(c):
            alpha, _, r1, k = c
            phi1 = jnp.sum(r1 * r1)
            ok = first | (jnp.isfinite(phi1) & (phi1 <= (1.0 - 2.0 * solver.armijo * alpha) * phi0))
            return (k == 0) | ((~ok) & (k <= solver.max_backtracks))

        def ls_body(c):
            alpha, _, _, k = c
            alpha = jnp.where(k == 0, 1.0, 0.5 * alpha)
            x1 = x + alpha * dx
            return alpha, x1, f(x1), k + 1

        alpha, x1, r1, _ = jax.lax.while_loop(
            ls_cond, ls_body, (jnp.asarray(1.0, dtype), x, r, jnp.asarray(0))
        )
        # Chord estimate of the error left in x1, from the factorisation already in hand.
        err = ls.solve(state["fac"], -r1)
        scaled = jnp.where(first, jnp.inf, _scaled_max(err, x1, solver))
        step_scaled = _scaled_max(alpha * dx, x1, solver)
        finite = jnp.all(jnp.isfinite(r1)) & jnp.all(jnp.isfinite(x1))
        converged = finite & ~first & ((scaled <= 1.0) | ((alpha == 1.0) & (step_scaled <= 1.0)))
        done = converged | ~finite | (state["it"] == solver.max_steps)

        def newton_direction(_):
            fac = ls.factor(ls.linearize(f, x1))
            return ls.solve(fac, -r1), fac

        def keep(_):
            return jnp.zeros_like(dx), state["fac"]

        dx1, fac = jax.lax.cond(done, keep, newton_direction, None)
        return dict(x=x1, dx=dx1, r=r1, fac=fac, it=state["it"] + 1, done=done,
                    converged=converged, err=scaled)

    init = dict(
        x=x0, dx=jnp.zeros_like(x0), r=jnp.zeros_like(x0), fac=fac0, it=jnp.asarray(0),
        done=jnp.asarray(False), converged=jnp.asarray(False), err=jnp.asarray(jnp.inf, dtype),
    )
    out = jax.lax.while_loop(cond, body, init)
    # ``it`` counts passes; the first pass only evaluates f(x0), so Jacobians = passes - 1
    return out["x"], (out["converged"], out["it"] - 1, jnp.max(jnp.abs(out["r"])), out["err"])


def newton_solve(fn, x0, args=None, solver: NewtonSolver = NewtonSolver()) -> NewtonResult:
    """Solve ``fn(x, args) = 0`` for ``x`` by Newton's method, differentiably.

    Args:
        fn: residual function ``(x, args) -> r`` with ``r`` of the same pytree structure/size as ``x``.
        x0: initial guess (pytree of float arrays).
        args: parameters (pytree); derivatives of the solution with respect to them, and to any
            array ``fn`` closes over, come from the implicit function theorem.
        solver: :class:`NewtonSolver` configuration.

    Returns:
        :class:`NewtonResult`. The solver never raises inside ``jit``: check ``converged``.
    """
    flat0, unravel = ravel_pytree(x0)

    def f(flat):
        r, _ = ravel_pytree(fn(unravel(flat), args))
        return r

    ls = solver.linear_solver

    def solve(g, guess):
        return _newton_loop(g, guess, solver)

    def tangent_solve(g, y):
        fac = ls.factor(ls.linearize(g, y))
        return jax.lax.custom_linear_solve(
            g,
            y,
            solve=lambda _, b: ls.solve(fac, b),
            transpose_solve=lambda _, b: ls.solve_transpose(fac, b),
        )

    flat, (converged, iterations, rnorm, err) = jax.lax.custom_root(
        f, flat0, solve, tangent_solve, has_aux=True
    )
    aux = jax.lax.stop_gradient((converged, iterations, rnorm, err))
    return NewtonResult(unravel(flat), *aux)
