"""The stepper of implicit models: one Newton solve of the scheme's residual per step
(:func:`implicit_step`), the consistent initial history, and the fallback ladder that retries a
failed step with backward Euler (:func:`fallback_ladder`)."""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp

from ..solvers.newton import NewtonSolver, newton_solve, placeholder_factorization
from .schemes import AbstractScheme, AverageVectorField, BackwardEuler, ImplicitMidpoint, NewmarkBeta, resolve_scheme
from ..validation import check_int
from .base import AbstractStepper, State
from .loop import _f, _is_traced, _static_host_loop, static_with_progress
from .results import ConvergenceError, check_in_program, newton_stats

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

    def init_aux(self, q):
        """Reference data for configuration ``q`` at the start of a run (a pytree the time loop
        carries, e.g. DER's reference frames). Default: ``None``, a model without any."""
        return None

    def update_aux(self, q, aux):
        """Reference data after a step has converged at ``q``. Default: ``aux`` unchanged."""
        return aux

    @abc.abstractmethod
    def default_linear_solver(self):
        """The :class:`~jaxrod.solvers.jacobian.AbstractJacobianSolver` suited to this model."""

    @abc.abstractmethod
    def initial_state(self):
        """:class:`State` the model starts from (its reference configuration, at rest)."""

    def has_newton_step_limit(self) -> bool:
        """Whether :meth:`newton_step_limit` can limit a step (decided from the model's structure,
        in Python). Default ``False``: the time step then traces no stage evaluations for it.
        Models that override :meth:`newton_step_limit` override this too."""
        return False

    def newton_step_limit(self, q, v, dq, dv, aux):
        """Largest fraction in (0, 1] of a Newton update ``(dq, dv)`` of the stage configuration
        ``q`` and velocity ``v`` that the time step's line search may start from, or ``None`` (no
        limit, the default). Models with stiff non-smooth-like forces (friction) use it to keep
        Newton from overshooting; it never changes the converged solution. Used only where
        :meth:`has_newton_step_limit` is true."""
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

    def supports_stage_jacobian(self, linear_solver) -> bool:
        """Whether :meth:`stage_jacobian` can build the Jacobian for ``linear_solver`` (static).
        Default ``False``: the Newton solver builds it from the residual (coloured JVPs)."""
        return False

    def stage_jacobian(self, points, slopes, aux, fixed, linear_solver):
        """The Jacobian of a time step's residual in ``q_next``, assembled by the model, in the
        operator form of ``linear_solver.linearize`` (only where :meth:`supports_stage_jacobian`).

        The step's residual is ``sum_k w_k residual(q_k, v_k, a_k, t_k, aux)`` on its free rows
        (:meth:`~jaxrod.integrate.schemes.AbstractScheme.residual_points`), with each point
        affine in ``q_next``: ``dq_k = cq_k * dq_next`` (element-wise), likewise ``cv_k``,
        ``ca_k``. The fixed DOFs are substituted before the residual is evaluated, and their rows
        are ``q_next - q_prescribed``: their columns vanish outside the identity on their rows.

        Args:
            points: ``(w (K,), q (K, ...), v (K, ...), a (K, ...), t (K,))``.
            slopes: ``(cq, cv, ca)``, each ``(K, ...)`` shaped like ``q``.
            aux: the step's reference data.
            fixed: boolean ``fixed_mask()``.
            linear_solver: the Newton solver's linear solver.
        """
        raise NotImplementedError(f"{type(self).__name__} does not assemble its Jacobian")

    def static_residual(self, q, t, aux):
        """Residual of static equilibrium at ``q`` (used by :func:`jaxrod.solve_static`).
        Default: ``residual(q, 0, 0, t, aux)``. Models whose unknowns include integrated
        multipliers (:class:`jaxrod.system.MultibodySystem`) read the constraint forces from
        ``q`` here, since their rates vanish at rest."""
        zeros = jax.numpy.zeros_like(q)
        return self.residual(q, zeros, zeros, t, aux)

    def static_start(self, q, t, aux):
        """The initial guess of :func:`jaxrod.solve_static` from ``q`` (fixed DOFs already set).
        Default: ``q`` itself. Multibody systems replace their multipliers by the least-squares
        balance of the loads (:meth:`jaxrod.system.MultibodySystem.static_start`)."""
        return q

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
        """Dict of outputs saved in a :class:`~jaxrod.integrate.Trajectory`; must contain
        ``positions`` ``(N, 3)`` [m]; may contain ``frames`` ``(N-1, 3, 3)`` and ``twist``."""


#: the Newton settings of a time step when the caller gives none: chord steps reusing the
#: factorisation while they contract, converged to 1e-9 in the unknowns (metres/radians for rods)
DEFAULT_SOLVER = NewtonSolver(linear_solver=None, reuse_jacobian=True, rtol=1e-9, atol=1e-9)

# Models whose residual is slow to trace (deep Python: shooting sweeps, PCS recursions) set
# ``trace_residual_once = True``: their residuals go through one cached jitted function each. A
# Newton solve traces its residual in several places (evaluation, Jacobian, line search, the
# implicit-differentiation tangent, the static solve and the time loop), and a cached inner
# program is traced once and transformed from its jaxpr (JAX caches the JVP/batching of a jitted
# function's jaxpr); the compiled program computes the same. Not the default: for DER rods the
# inner call made XLA compile 20 % longer and saved no tracing (cantilever a1, 21 nodes).
def _cached(fun):
    jitted = eqx.filter_jit(fun)
    return lambda model: jitted if getattr(model, "trace_residual_once", False) else fun


_scheme_residual = _cached(lambda scheme, model, q, hist, t, dt, aux: scheme.residual(model, q, hist, t, dt, aux))
_acceleration_residual = _cached(lambda model, q, v, a, t, aux: model.acceleration_residual(q, v, a, t, aux))
_static_residual = _cached(lambda model, q, t, aux: model.static_residual(q, t, aux))


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
        r = model.end_of_step_residual(q_sub, _scheme_residual(model)(scheme, model, q_sub, hist, _f(t), _f(dt), aux), t + dt, aux)
        return jnp.where(fixed, q_next - qb, r)

    def step_limit(q_next, dq):
        # velocities are affine in q_next for every scheme: dv from two stage evaluations
        qs, vs, _, _ = scheme.stage(jnp.where(fixed, qb, q_next), hist, dt)
        qs1, vs1, _, _ = scheme.stage(jnp.where(fixed, qb, q_next + dq), hist, dt)
        return model.newton_step_limit(qs, vs, qs1 - qs, vs1 - vs, aux)

    # a model without a limit gets none: no stage evaluations traced into the line search for nothing
    limit = step_limit if model.has_newton_step_limit() else None
    guess = jnp.where(fixed, qb, scheme.predict(hist, dt))
    result = newton_solve(
        residual, guess, None, solver, factorization=factorization, have_factorization=have_factorization,
        step_limit=limit, jacobian=_stage_jacobian(model, scheme, solver.linear_solver, hist, aux, t, dt, fixed, qb),
    )
    q1 = jnp.where(fixed, qb, result.value)
    return scheme.advance(q1, hist, dt), model.update_aux(q1, aux), result


def _stage_jacobian(model, scheme, linear_solver, hist, aux, t, dt, fixed, qb):
    """``jacobian(q_next, args)`` for :func:`newton_solve` from the model's own assembly
    (:meth:`AbstractImplicitModel.stage_jacobian`), or ``None`` where the model, the scheme or the
    linear solver cannot (decided while tracing)."""
    if not (
        model.supports_stage_jacobian(linear_solver)
        and scheme.has_residual_points()
        and type(model).end_of_step_residual is AbstractImplicitModel.end_of_step_residual
    ):
        return None

    def jacobian(q_next, _):
        q_sub = jnp.where(fixed, qb, q_next)

        def points(x):
            w, qk, vk, ak, tk = scheme.residual_points(x, hist, _f(t), _f(dt))
            return (qk, vk, ak), (w, tk)

        # every point is affine in q_next: one JVP along ones gives the element-wise slopes
        (qk, vk, ak), slopes, (w, tk) = jax.jvp(points, (q_sub,), (jnp.ones_like(q_sub),), has_aux=True)
        return model.stage_jacobian((w, qk, vk, ak, tk), slopes, aux, fixed, linear_solver)

    return jacobian


def _initial_acceleration(model, q, v, aux, t, solver):
    fixed = model.fixed_mask()

    def residual(a, _):
        return jnp.where(fixed, a, _acceleration_residual(model)(model, q, v, a, _f(t), aux))

    return newton_solve(residual, jnp.zeros_like(q), None, solver).value


def _initial_history(model, scheme, solver, state, t0, dt):
    """Scheme history at ``t0``; solves for the initial acceleration only if the scheme needs it."""
    a0 = (
        _initial_acceleration(model, state.q, state.v, state.aux, t0, solver)
        if scheme.needs_acceleration
        else jnp.zeros_like(state.q)
    )
    return scheme.init(state.q, state.v, a0, dt)



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

    def _pair(self):
        if all(type(s).residual is AbstractScheme.residual for s in (self.primary, self.fallback)):
            return "stage"
        if isinstance(self.primary, AverageVectorField) and isinstance(self.fallback, BackwardEuler):
            return "average"
        return None

    def has_residual_points(self) -> bool:
        return self._pair() is not None

    def residual_points(self, q_next, hist, t, dt):
        if self._pair() == "stage":
            return AbstractScheme.residual_points(self, q_next, hist, t, dt)
        _, vs, acc, _ = self.stage(q_next, hist, dt)
        s = jnp.where(self.use_fallback, 1.0, jnp.asarray(self.primary.points()[0]))
        return self.primary.averaged_points(hist[0], q_next, vs, acc, t, dt, s)

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


class ImplicitStepper(AbstractStepper):
    """:class:`~jaxrod.integrate.base.AbstractStepper` of an
    :class:`~jaxrod.integrate.base.AbstractImplicitModel`: one :func:`implicit_step` per step.

    Carry: ``(scheme history, aux, factorisation, have_factorisation)``. ``ladder`` is the part of
    :func:`fallback_ladder` compiled into :meth:`step` (``((False, 1),)``: the scheme alone); the
    loop calls :meth:`retry` (the rest of the ladder, a separate program compiled only when a
    step has failed) otherwise.
    """

    model: AbstractImplicitModel
    scheme: AbstractScheme
    solver: NewtonSolver
    ladder: tuple = eqx.field(static=True, default=((False, 1),))

    @classmethod
    def build(cls, model, scheme=None, solver=None, *, fallback=False):
        scheme = resolve_scheme(scheme)
        scheme = AverageVectorField() if scheme is None else scheme
        from .explicit import AbstractExplicitScheme

        if isinstance(scheme, AbstractExplicitScheme):
            raise ValueError(
                f"{type(model).__name__} is an implicit model: scheme must be an implicit scheme "
                f"(e.g. jaxrod.AverageVectorField()), got {type(scheme).__name__}(); explicit schemes run "
                "models such as jaxrod.system.JointSpaceSystem"
            )
        solver = _with_model_solver(model, DEFAULT_SOLVER if solver is None else solver)
        ladder = fallback_ladder(scheme) if fallback else ((False, 1),)
        return cls(model, scheme, solver, ladder)

    def init(self, state, t0, dt):
        hist0 = _initial_history(self.model, self.scheme, self.solver, state, t0, dt)
        q_flat = jnp.ravel(self.scheme.current(hist0)[0])
        fac = placeholder_factorization(self.solver, q_flat) if self.solver.reuse_jacobian else None
        return hist0, state.aux, fac, jnp.asarray(False)

    def _attempt(self, carry, t, dt, ladder):
        hist, aux, fac, have_fac = carry
        if len(ladder) == 1 and ladder[0] == (False, 1):
            hist, aux, res = implicit_step(self.model, self.scheme, self.solver, hist, aux, t, dt, fac, have_fac)
            if self.solver.reuse_jacobian:
                fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
            stats = newton_stats(res) + (jnp.asarray(0, jnp.int32),)
        else:
            hist, aux, fac, have_fac, stats = _step_with_fallback(
                self.model, self.scheme, self.solver, hist, aux, t, dt, fac, have_fac, ladder
            )
        return (hist, aux, fac, have_fac), stats

    def step(self, carry, t, dt):
        return self._attempt(carry, t, dt, self.ladder)

    def start_state(self, state0, t0, *, throw=True, progress=False):
        return initial_state(self.model) if state0 is None else state0

    def describe(self):
        return f"{type(self.model).__name__}, {type(self.scheme).__name__}"

    def solve_static(self, **kwargs):
        return solve_static_implicit(self.model, **kwargs)

    def can_retry(self):
        return len(fallback_ladder(self.scheme)) > 1 and len(self.ladder) == 1

    def retry(self, carry, t, dt):
        full = fallback_ladder(self.scheme)
        if len(full) == 1 or len(self.ladder) > 1:
            return None
        carry, stats = self._attempt(carry, t, dt, full[1:])
        # levels count from the requested scheme (level 0, the attempt that failed)
        return carry, stats[:5] + (stats[5] + 1,)

    def observe(self, carry):
        hist, aux = carry[0], carry[1]
        q, v = self.scheme.current(hist)
        return {"q": q, "v": v, **self.model.observe(q, v, aux)}

    def final(self, carry):
        return State(*self.scheme.current(carry[0]), carry[1])


def initial_state(model):
    """``model.initial_state()``, compiled when it can be: eager set-up (reference frames by
    parallel transport, ...) would otherwise compile a small program per call."""
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(model)):
        return model.initial_state()
    try:
        return _initial_state_jit(model)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
            jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError):
        return model.initial_state()


_initial_state_jit = eqx.filter_jit(lambda model: model.initial_state())


# ---- statics ----------------------------------------------------------------------------------
def solve_static_implicit(model, *, state0=None, t=0.0, solver=None, load_steps=1, throw=True, progress=False):
    """:func:`solve_static` of an :class:`AbstractImplicitModel`."""
    if solver is None:
        solver = NewtonSolver(linear_solver=None, max_steps=100)
    load_steps = check_int("load_steps", load_steps, min=1)
    if load_steps > 1 and not hasattr(model, "with_load_factor"):
        raise ValueError(f"load_steps = {load_steps}: {type(model).__name__} cannot scale its loads "
                         "(no with_load_factor); use load_steps=1")
    state = initial_state(model) if state0 is None else state0
    solver = _with_model_solver(model, solver)
    if not _is_traced((model, state, t)):
        x0 = _static_start_jit(model, state, _f(t))
        if progress:
            result, q = static_with_progress(
                _static_increment_jit, (model, state, _f(t), solver), x0, int(load_steps), "static equilibrium",
                describe=lambda r: f"residual {float(r.residual_norm):.2e}",
            )
        else:
            result, q = _static_host_loop(_static_increment_jit, (model, state, _f(t), solver), x0, int(load_steps))
    else:
        result, q = _static_jit(model, state, t, solver, int(load_steps))
    if throw:
        if _is_traced(result.converged):
            q = check_in_program(q, result.converged, "static equilibrium solve did not converge")
        elif not bool(result.converged):
            raise ConvergenceError(
                f"static equilibrium did not converge: residual max-norm {float(result.residual_norm):.3e}, "
                f"scaled error {float(result.error_estimate):.3e} after {int(result.iterations)} "
                f"iterations; {_static_advice(model, load_steps)}"
            )
    return State(q, jnp.zeros_like(q), _update_aux_jit(model, q, state.aux)), result


@eqx.filter_jit
def _update_aux_jit(model, q, aux):
    return model.update_aux(q, aux)


def _static_start(model, state, t):
    return model.static_start(jnp.where(model.fixed_mask(), model.prescribed(t), state.q), t, state.aux)


def _static_increment(model, state, t, solver, q, s, scaled):
    """One load increment at load factor ``s`` from ``q``: ``(q, NewtonResult)``."""
    fixed = model.fixed_mask()
    qb = model.prescribed(t)
    # with_load_factor(1.0) is the model itself: scaling whenever the model can keeps one program
    # for any number of load steps
    m = model.with_load_factor(s) if (scaled and hasattr(model, "with_load_factor")) else model

    def residual(qn, _):
        q_sub = jnp.where(fixed, qb, qn)
        r = _static_residual(m)(m, q_sub, _f(t), state.aux)
        return jnp.where(fixed, qn - qb, r)

    jacobian = _static_jacobian(m, solver.linear_solver, state.aux, t, fixed, qb)
    res = newton_solve(residual, q, None, solver, jacobian=jacobian)
    return jnp.where(fixed, qb, res.value), res


def _static_jacobian(model, linear_solver, aux, t, fixed, qb):
    """``jacobian(q, args)`` of the static residual for :func:`newton_solve` from the model's own
    assembly (:meth:`AbstractImplicitModel.stage_jacobian` at one point, ``v = a = 0``, slopes
    ``(1, 0, 0)``), or ``None`` where the model cannot or has its own static residual (decided
    while tracing)."""
    if not (
        model.supports_stage_jacobian(linear_solver)
        and type(model).static_residual is AbstractImplicitModel.static_residual
    ):
        return None

    def jacobian(q, _):
        q_sub = jnp.where(fixed, qb, q)[None]
        zeros = jnp.zeros_like(q_sub)
        points = (jnp.ones((1,), q.dtype), q_sub, zeros, zeros, jnp.full((1,), _f(t), q.dtype))
        return model.stage_jacobian(points, (jnp.ones_like(q_sub), zeros, zeros), aux, fixed, linear_solver)

    return jacobian


def _static_advice(model, load_steps):
    """What to try after a failed static solve: more load steps where the model can scale its loads;
    otherwise (multibody systems) the usual cause, a coordinate that nothing holds."""
    if hasattr(model, "with_load_factor"):
        return f"try load_steps > {load_steps}"
    return ("the model cannot scale its loads (no load_steps); check that every coordinate is held "
            "(a joint with no spring or limit along gravity has no static equilibrium) or pass a closer state0")


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
