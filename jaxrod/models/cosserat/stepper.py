"""The stepper and static solves of the shooting model (:class:`~.model.CosseratModel`).

Per step (Till et al. fig. 1): the history ``w^h`` of the grid variables is formed once from the
stored past (:class:`~jaxrod.integrate.schemes.DifferenceFormula`), the six scaled base loads are found
by the shared Newton solver (Jacobian by ``jax.jacfwd`` through the arc-length scan, optional
Levenberg-Marquardt fallback, warm start from the previous step), and the grid is re-integrated
at the converged loads before it enters the history. Gradients flow through every shooting solve by
the implicit function theorem (:func:`jaxrod.solvers.newton.newton_solve`) and through the time loop
by reverse-mode ``scan``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp

from ...integrate.base import AbstractStepper
from ...integrate.loop import _f, _is_traced, _static_host_loop, static_with_progress
from ...integrate.results import ConvergenceError, check_in_program, newton_stats
from ...progress import announced
from ...solvers.jacobian import DenseJacobianSolver
from ...solvers.newton import (
    NewtonResult,
    NewtonSolver,
    newton_solve,
    placeholder_factorization,
)
from ...integrate.schemes import DifferenceFormula

if TYPE_CHECKING:  # annotations only: model.py imports this module in CosseratModel.stepper
    from .model import CosseratModel

#: Default shooting solver: unknowns are dimensionless base loads (force / (EI/L^2), moment / (EI/L)).
#: Chord steps with the Jacobian carried across time steps (measured 1.6x faster than a fresh
#: ``jacfwd`` per iteration on the Till benchmark). Under ``jax.vmap`` the chord/Jacobian choice is
#: taken once per batch (``NewtonSolver.batch_uniform``): a batch of 1 costs a plain call.
DEFAULT_SOLVER = NewtonSolver(
    rtol=1e-10, atol=1e-10, max_steps=25, linear_solver=DenseJacobianSolver(), reuse_jacobian=True,
    fallback="levenberg_marquardt",
)
#: Static solves may start far from the solution: more steps (for hard cases use ``load_steps`` or
#: ``fallback="levenberg_marquardt"``, which adds the LM loop to the program; the first attempt and
#: the polish after LM are one Newton loop, so the residual is compiled once: a static solve with
#: the fallback has 6951 HLO instructions, 9131 when they were two loops).
DEFAULT_STATIC_SOLVER = NewtonSolver(rtol=1e-11, atol=1e-11, max_steps=100, linear_solver=DenseJacobianSolver())


class CosseratState(eqx.Module):
    """State of a shooting rod at one instant.

    Attributes:
        y: ``(N, 19)`` grid of ``[p, h, n, m, q, w]`` (``n``, ``m`` global).
        w: ``(N, 12)`` grid of ``[q, w, v, u]`` (velocities and strains).
        base_loads: the shooting unknowns: ``(6,)`` scaled base force and moment, followed
            with multiple shooting by the scaled states at the segment starts.
        carrier: history carrier of the difference formula over :attr:`grid_variables`
            (``None`` before the first step: a rest history is then assumed, ``w_t = 0``).
        w_stages: ``(N-1, n_stages, 12)`` ``[q, w, v, u]`` at the off-node RK4 stage points
            (:meth:`CosseratModel.integrate`); each stage point has its own time history.
    """

    y: jax.Array
    w: jax.Array
    base_loads: jax.Array
    carrier: object = None
    w_stages: jax.Array | None = None

    @property
    def grid_variables(self):
        """``(w, w_stages)``: the variables whose time derivatives enter, at every evaluation
        point of the arc-length integrator (the pytree the difference formula works on)."""
        if self.w_stages is None:
            raise ValueError(
                "CosseratState.w_stages is None: the stage-point grid variables are needed for the "
                "history; build the state with solve_static_cosserat or take Trajectory.final"
            )
        return self.w, self.w_stages

    @property
    def positions(self):
        return self.y[:, 0:3]


def _as_formula(scheme) -> DifferenceFormula:
    if scheme is None:
        return DifferenceFormula.bdf2()
    if isinstance(scheme, DifferenceFormula):
        return scheme
    if hasattr(scheme, "difference_formula"):
        return scheme.difference_formula()
    raise TypeError(
        f"the shooting (Cosserat) model needs a first-order difference formula "
        f"(jaxrod.integrate.schemes.DifferenceFormula, BackwardEuler() or BDFAlpha(alpha)); "
        f"{type(scheme).__name__} discretises a second-order system and is not supported"
    )


# ---- statics -------------------------------------------------------------------------------------
def _static_increment(model: CosseratModel, t, solver, G, lf, scaled):
    """One load increment at load factor ``lf`` from the loads ``G``: ``(G, NewtonResult)``;
    ``NewtonResult.aux`` holds the grids ``(y, (w, w_stages))`` of the solution (at ``lf``)."""
    del scaled  # the shooting model's step constants take the load factor in any case
    wh = model.zero_history()
    P = model.step_constants(0.0, lf)
    res = newton_solve(lambda g, _: model.shooting_residual(g, t, P, wh, lf, roll_stages=True, with_grid=True),
                       G, None, solver, has_aux=True)
    return res.value, res


def _static_state(model: CosseratModel, t, G):
    """The :class:`CosseratState` at rest for the converged base loads ``G``."""
    P = model.step_constants(0.0)
    y, (w, w_stages), _, _ = model.integrate(G, t, P, model.zero_history(), roll_stages=True)
    return CosseratState(y, w, G, w_stages=w_stages)


def _state_from_grids(G, grids):
    """The :class:`CosseratState` at rest from a static increment's grids (``NewtonResult.aux``
    of the full load, factor 1): the sweep that accepted ``G``, no sweep again (for the host
    loop: the separate ``_static_state`` program of 0.44 s XLA on the Till benchmark is not built)."""
    y, (w, w_stages) = grids
    return CosseratState(y, w, G, w_stages=w_stages)


def _static(model: CosseratModel, t, guess, solver, load_steps):
    factors = jnp.arange(1, load_steps + 1) / load_steps
    G, results = jax.lax.scan(lambda G, lf: _static_increment(model, t, solver, G, lf, True), guess, factors)
    last = jax.tree_util.tree_map(lambda x: x[-1], results)
    last = eqx.tree_at(lambda r: r.factorization, last, None, is_leaf=lambda x: x is None)
    last = eqx.tree_at(lambda r: r.converged, last, jnp.all(results.converged))
    # every increment runs in the scan: the last one's grids are those of G at the full load
    state = _state_from_grids(G, last.aux)
    return state, eqx.tree_at(lambda r: r.aux, last, None, is_leaf=lambda x: x is None)


def _rest_guess(model, t):
    return model.unknowns_from_grid(model.rest_grid(t), jnp.zeros(6))


_static_jit = eqx.filter_jit(_static)
_rest_guess_jit = eqx.filter_jit(_rest_guess)
_static_increment_jit = eqx.filter_jit(_static_increment)
_static_state_jit = eqx.filter_jit(_static_state)


def solve_static_cosserat(
    model: CosseratModel, *, t: float = 0.0, guess=None, solver: NewtonSolver | None = None,
    load_steps: int = 1, throw: bool = True, progress: bool | str = False,
) -> tuple[CosseratState, NewtonResult]:
    """Static equilibrium (Till et al. eq. 8: the infinite-time-step limit) at time ``t`` [s].

    Loads (gravity, distributed, tip and point loads) are applied in ``load_steps`` increments.
    ``progress``: print what is compiled and solved (stderr), a heartbeat while it lasts and a
    line per load step when there are several (they then run one compiled call each; same
    increments, same result); a string names the solve in the messages (default "static
    equilibrium"). Ignored under ``jax.jit``/``jax.vmap``/``jax.grad``.
    Returns ``(CosseratState, NewtonResult)``; raises :class:`~jaxrod.integrate.ConvergenceError`
    when the shooting solve fails (``throw=True``).
    """
    if int(load_steps) < 1:
        raise ValueError(f"load_steps must be >= 1, got {load_steps}")
    solver = DEFAULT_STATIC_SOLVER if solver is None else solver
    if guess is None:
        guess = _rest_guess(model, t) if _is_traced((model, t)) else _rest_guess_jit(model, _f(t))
    guess = jnp.asarray(guess, dtype=float)
    if guess.shape != (model.n_unknowns,):
        raise ValueError(f"guess must have shape ({model.n_unknowns},) (the shooting unknowns), got {guess.shape}")
    if not _is_traced((model, t, guess)):
        # one compiled increment for any number of load steps, with or without progress lines
        what = progress if isinstance(progress, str) else "static equilibrium"
        if progress:
            res, G = static_with_progress(
                _static_increment_jit, (model, _f(t), solver), guess, int(load_steps), what,
                describe=lambda r: f"scaled residual {float(r.residual_norm):.2e}",
            )
        else:
            res, G = _static_host_loop(_static_increment_jit, (model, _f(t), solver), guess, int(load_steps))
        if bool(res.converged):  # then the last increment was the full load: its grids are the state's
            state = _state_from_grids(G, res.aux)
        else:  # stopped early at a partial load: the grids of G at the full load, as documented
            state = announced(_static_state_jit, f"the state grid of {what}", enabled=bool(progress))(model, _f(t), G)
        res = eqx.tree_at(lambda r: r.aux, res, None, is_leaf=lambda x: x is None)
    else:
        state, res = _static_jit(model, _f(t), guess, solver, int(load_steps))
    if throw:
        if _is_traced(res.converged):
            state = check_in_program(state, res.converged, "static shooting solve did not converge")
        elif not bool(res.converged):
            raise ConvergenceError(
                f"static shooting solve did not converge: scaled tip residual {float(res.residual_norm):.3e} "
                f"after {int(res.iterations)} iterations; try load_steps > {load_steps} or more n_points"
            )
    return state, res


# ---- dynamics ------------------------------------------------------------------------------------
def shooting_step(
    model: CosseratModel, formula: DifferenceFormula, solver: NewtonSolver, carrier, G, t_new, dt,
    factorization=None, have_factorization=False,
):
    """One implicit step to time ``t_new`` [s]: returns ``(carrier, G, y, w, NewtonResult)``
    (``w = (w_nodes, w_stages)``, see :meth:`CosseratModel.integrate`).

    With ``solver.reuse_jacobian`` the previous step's ``NewtonResult.factorization`` may be
    passed in: the shooting Jacobian then changes little from step to step and chord steps with
    it replace most ``jacfwd`` passes.
    """
    wh = formula.history(carrier, dt)
    P = model.step_constants(formula.c0(dt))
    res = newton_solve(
        lambda g, _: model.shooting_residual(g, t_new, P, wh, with_grid=True), G, None, solver,
        factorization=factorization, have_factorization=have_factorization, has_aux=True,
    )
    # the grids of the sweep that accepted the solution (no sweep after the solve: one of the
    # three sweep copies of a step program and one sweep per step fewer)
    y, w = res.aux
    res = eqx.tree_at(lambda r: r.aux, res, None)
    return formula.advance(carrier, w, wh, dt), res.value, y, w, res


class ShootingStepper(AbstractStepper):
    """:class:`~jaxrod.integrate.base.AbstractStepper` of a :class:`CosseratModel`: one
    :func:`shooting_step` per step, the base loads extrapolated linearly from the last two steps
    (an O(dt^2) initial guess instead of O(dt)).

    ``extrapolation``: polynomial order of the initial guess from the last steps' unknowns (1:
    linear through two steps, 2: quadratic through three; see :func:`cosserat_stepper`).

    Carry: ``(history carrier, scaled base loads G, state grid y, factorisation,
    have_factorisation, (previous G, G before that))``. Frames: ``q`` the state grid ``(N, 19)`` ``[p, h, n, m, q, w]``,
    ``v`` the grid ``(N, 12)`` ``[q, w, v, u]``, ``positions`` ``(N, 3)``, ``frames`` ``(N, 3, 3)``.
    """

    model: CosseratModel
    formula: DifferenceFormula
    solver: NewtonSolver
    rescue: NewtonSolver | None = None
    extrapolation: int = eqx.field(static=True, default=1)

    def init(self, state, t0, dt):
        carrier = self.formula.init(state.grid_variables) if state.carrier is None else state.carrier
        G = state.base_loads
        fac = placeholder_factorization(self.solver, G) if self.solver.reuse_jacobian else None
        return carrier, G, state.y, fac, jnp.asarray(False), (G, G)

    def _step(self, carry, t, dt, solver):
        carrier, G, y, fac, have_fac, (G_prev, G_prev2) = carry
        if self.extrapolation == 2:  # quadratic through the last three steps' unknowns
            guess = 3.0 * (G - G_prev) + G_prev2
        else:
            guess = 2.0 * G - G_prev
        carrier, G1, y, _, res = shooting_step(self.model, self.formula, solver, carrier, guess, t + dt, dt,
                                               fac, have_fac)
        if solver.reuse_jacobian:
            fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
        return (carrier, G1, y, fac, have_fac, (G, G_prev)), newton_stats(res)

    def step(self, carry, t, dt):
        return self._step(carry, t, dt, self.solver)

    def can_retry(self):
        return self.rescue is not None

    def retry(self, carry, t, dt):
        """The same step with the Levenberg-Marquardt rescue of the caller's solver (compiled only
        after a step has failed: it roughly doubles the traced step)."""
        if self.rescue is None:
            return None
        return self._step(carry, t, dt, self.rescue)

    def observe(self, carry):
        carrier, _, y = carry[:3]
        return {"q": y, "v": carrier[0][0], "positions": y[:, 0:3], "frames": self.model.frames(y)}

    def final(self, carry):
        carrier, G, y = carry[:3]
        return CosseratState(y, carrier[0][0], G, carrier, carrier[0][1])

    def describe(self):
        return f"{self.formula.describe()}, {self.model.n_unknowns} shooting unknowns"

    def start_state(self, state0, t0, *, throw=True, progress=False):
        if state0 is None:
            # a prescribed tendon length makes the first Newton step from the straight rest guess
            # overshoot under large loads (measured: NaN for the tendon-robot-step scene in one
            # increment, 4 iterations per increment in 4)
            state0, _ = solve_static_cosserat(
                self.model, t=t0, throw=throw, progress=progress and "static equilibrium at t0 (initial state)",
                load_steps=4 if self.model._length_tendons() else 1,
            )
        if state0.carrier is not None and not (
            isinstance(state0.carrier, tuple) and isinstance(state0.carrier[0], tuple) and len(state0.carrier[0]) == 2
        ):
            raise ValueError(
                "state0.carrier must be a history carrier over CosseratState.grid_variables = (w, w_stages), "
                "e.g. formula.init(state.grid_variables) or Trajectory.final.carrier; got one over "
                f"{type(state0.carrier[0]).__name__ if isinstance(state0.carrier, tuple) else type(state0.carrier).__name__}"
            )
        state0.grid_variables  # noqa: B018  (raises a clear error when w_stages is missing)
        return state0

    def solve_static(self, *, state0=None, t=0.0, solver=None, load_steps=1, throw=True, progress=False):
        if state0 is not None:
            raise ValueError("solve_static(): shooting models take no state0 (pass guess= to solve_static_cosserat)")
        return solve_static_cosserat(self.model, t=t, solver=solver, load_steps=load_steps, throw=throw,
                                     progress=progress)


def cosserat_stepper(model: CosseratModel, scheme=None, solver: NewtonSolver | None = None, *,
                     fallback: bool = False, extrapolation: int = 1) -> ShootingStepper:
    """The :class:`ShootingStepper` of ``model`` (``CosseratModel.stepper``): ``scheme`` a
    :class:`~jaxrod.integrate.schemes.DifferenceFormula` (default BDF2) or ``BackwardEuler()`` /
    ``BDFAlpha(alpha)``; ``solver`` default :data:`DEFAULT_SOLVER` (tolerance 1e-10 on the scaled
    base loads, Levenberg-Marquardt fallback).

    A solver's Levenberg-Marquardt fallback is compiled into every step only with ``fallback``
    (what :func:`jaxrod.simulate` asks for under ``jit``/``grad``); otherwise the steps run plain
    Newton and :meth:`ShootingStepper.retry` repeats a failed step with the fallback, a program
    compiled only when a step has failed. Either way a step gets the same answer.

    ``extrapolation``: order of the initial guess of each step (:class:`ShootingStepper`). 2
    (quadratic) measured 6-9% less CPU than 1 (linear, the default) on the Till benchmark (150
    Euler points, 200 steps, BDF-alpha -0.2 / BDF2: fewer fresh Jacobians, 0.53 vs 0.85 per step),
    tips within 5e-10 m of it (the solver tolerance); with ``segments=2`` no gain."""
    if extrapolation not in (1, 2):
        raise ValueError(f"extrapolation must be 1 (linear) or 2 (quadratic), got {extrapolation!r}")
    solver = DEFAULT_SOLVER if solver is None else solver
    if solver.fallback is None or fallback:
        return ShootingStepper(model, _as_formula(scheme), solver, extrapolation=extrapolation)
    plain = dataclasses.replace(solver, fallback=None)  # a static field: not reachable by tree_at
    return ShootingStepper(model, _as_formula(scheme), plain, solver, extrapolation=extrapolation)
