"""Generic Newton solver on pytrees with implicit differentiation.

``newton_solve(fn, x0, args, solver)`` finds ``x`` with ``fn(x, args) == 0``. The Jacobian comes
from forward-mode autodiff of ``fn`` through a :class:`~jaxrod.solvers.jacobian.AbstractJacobianSolver`
(dense ``jacfwd`` or a coloured banded Jacobian), the iteration is a ``jax.lax.while_loop`` with a
backtracking line search, and the derivative of the solution with respect to ``args`` (and anything
``fn`` closes over) comes from the implicit function theorem (a ``jax.custom_jvp``): the
iterations are never differentiated. Forward and reverse mode both work because the tangent solve
is a ``jax.lax.custom_linear_solve`` with an explicit transposed solve. (Our own ``custom_jvp``
instead of ``jax.lax.custom_root``: the tangent system is traced only when differentiated.)

Convergence: after each update ``x1 = x + alpha dx`` the solver computes the *simplified Newton
correction* ``J^{-1} F(x1)`` with the factorisation already in hand (a back-substitution, not a
Jacobian) and stops when every component satisfies ``|corr_i| <= atol + rtol |x1_i|``. The same
correction drives the line search (Deuflhard's affine-invariant monotonicity test) and, with
``reuse_jacobian=True``, becomes the next step itself (a chord step) as long as it contracts by
at least ``max_contraction``; a fresh Jacobian is built only when it does not. A factorisation can
be handed in from a previous solve (time steps), so slowly changing problems need few Jacobians;
a chord-started solve that has not converged after ``chord_restart`` updates starts over from its
initial guess as plain Newton. An optional ``step_limit(x, dx)`` caps the first trial step of the
line search (models use it to keep friction from overshooting through sticking). Non-finite
values stop the loop with ``converged=False``.
"""

from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.extend
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from .jacobian import AbstractJacobianSolver, DenseJacobianSolver


class NewtonSolver(eqx.Module):
    """Configuration of a damped Newton iteration.

    Attributes:
        rtol: relative tolerance on the estimated error of each unknown.
        atol: absolute tolerance on the estimated error of each unknown (units of the unknowns,
            e.g. metres and radians for a DER rod).
        max_steps: maximum number of Newton/chord iterations.
        linear_solver: how the Jacobian is built and factorised (dense, banded, coloured);
            ``None`` (default): :func:`jaxrod.integrate.simulate` and ``solve_static`` use the
            model's structured solver (``model.default_linear_solver()``), a bare
            :func:`newton_solve` the dense one. (A default of dense silently replaced structured
            Jacobians whenever a user passed ``NewtonSolver(rtol=...)``: 40x slower on the spider.)
        max_backtracks: maximum number of step halvings in the line search.
        reuse_jacobian: take chord steps with an old factorisation while they contract.
            Under ``jax.vmap`` the choice "chord step or fresh Jacobian" is taken once for the
            batch (``batch_uniform``); without that it becomes a ``select`` that evaluates both
            branches (measured then: 8 ms vs 4 ms per rod-step with ``reuse_jacobian=False``,
            51-node cantilever, CPU).
        max_contraction: a chord step must shrink the correction at least by this factor,
            otherwise a new Jacobian is built.
        chord_budget: ... and the chord iteration must be predicted to converge within this
            many further steps at the observed contraction rate.
        chord_restart: with ``reuse_jacobian``, a solve not converged after this many updates (or
            one that produced non-finite values) starts again from its initial guess as plain
            Newton (fresh Jacobians, no chord steps) with a budget of ``max_steps`` more updates:
            a chord step from an outdated factorisation can lead far from the solution at contact
            events, where the Jacobian changes by orders of magnitude within a step (measured:
            colliding fingers, 54 of 100 steps failed without it, none with it).
        free_steps: number of initial updates taken as full steps (only non-finite values make
            them backtrack) before the monotonicity test is enforced.
        tangent_refinement: how the implicit-differentiation (tangent and adjoint) systems
            ``J dx = b`` / ``J^T w = b`` at the root are solved. ``0`` (default): a fresh Jacobian
            of the residual at the root and its factorisation, per Newton solve of a
            differentiated program, built by the Newton loop's own Jacobian code in the pass that
            ends the loop (so a gradient program holds no second linearisation of the residual;
            a linear solver whose ``operator(fac)`` is ``None``, and second-order derivatives,
            linearise the residual at the root instead). ``k > 0``: when this solve built a
            Jacobian (at one of its iterates), that factorisation preconditions iterative
            refinement with exact products ``J v`` / ``J^T w`` of the residual linearised at the
            root, for at most ``k``
            corrections, until the correction is below ``1e-12`` of the solution (max-norm) and
            contracting; otherwise (or when it does not converge) the fresh factorisation is
            built after all. Same gradients to round-off (measured 6e-11 relative). Not the
            default because it did not pay where measured (``benchmarks/gradients.py``, DER 41
            nodes, 100 backward-Euler steps, process CPU at load ~10: gradient 0.77 s vs 0.64 s
            with 0, compile 111 s vs 61 s: the refinement's ``J^T w`` products, a reverse pass
            of the residual, cost more than the coloured Jacobian they replace, and the fresh
            fallback is compiled as well).
        fallback: ``None`` or ``"levenberg_marquardt"``: when Newton fails, restart from the
            initial guess with Levenberg-Marquardt on ``|F|^2`` (dense ``jacfwd`` Jacobian, for
            small systems such as shooting problems; at most max(4 max_steps, 200) iterations)
            and polish its result with Newton. The
            counts in the result then include the failed attempt.
        batch_uniform: under ``jax.vmap``, take each decision of the iteration once for the whole
            batch (:func:`batch_max`): the next update is a fresh Jacobian for every member when any
            member needs one, else a chord step when any member still iterates; the fallback runs
            (for the failed members only) when any member failed. ``lax.switch``/``lax.cond`` then
            stay branches under ``vmap`` instead of becoming a ``select`` that evaluates every
            branch (every chord step paid for a Jacobian, every step for the fallback). A member
            may so take a fresh Jacobian where alone it would have taken a chord step: batched
            results agree with single runs to the solver tolerance, not bit for bit. Without
            ``vmap`` it changes nothing.
    """

    rtol: float = 1e-9
    atol: float = 1e-12
    max_steps: int = eqx.field(static=True, default=50)
    linear_solver: AbstractJacobianSolver | None = None
    max_backtracks: int = eqx.field(static=True, default=12)
    reuse_jacobian: bool = eqx.field(static=True, default=False)
    max_contraction: float = 0.9
    chord_budget: float = 12.0
    chord_restart: int = eqx.field(static=True, default=15)
    free_steps: int = eqx.field(static=True, default=0)
    fallback: str | None = eqx.field(static=True, default=None)
    tangent_refinement: int = eqx.field(static=True, default=0)
    batch_uniform: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if self.fallback not in (None, "levenberg_marquardt"):
            raise ValueError(f"NewtonSolver.fallback must be None or 'levenberg_marquardt', got {self.fallback!r}")
        if self.max_steps < 1:
            raise ValueError(f"NewtonSolver.max_steps must be >= 1, got {self.max_steps}")
        if not isinstance(self.tangent_refinement, int) or self.tangent_refinement < 0:
            raise ValueError(f"NewtonSolver.tangent_refinement must be an int >= 0, got {self.tangent_refinement!r}")
        if self.chord_restart < 1:
            raise ValueError(f"NewtonSolver.chord_restart must be >= 1, got {self.chord_restart}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and not (value >= 0):
                raise ValueError(f"NewtonSolver.{name} must be >= 0, got {value}")
        mc = self.max_contraction
        if isinstance(mc, (int, float)) and not (0 < mc < 1):
            raise ValueError(f"NewtonSolver.max_contraction must be in (0, 1), got {mc}")


class NewtonResult(eqx.Module):
    """Outcome of :func:`newton_solve`.

    Attributes:
        value: the solution, same pytree structure as ``x0``.
        converged: bool scalar, True when the tolerance was met with finite values.
        iterations: int scalar, number of Newton or chord updates taken.
        jacobians: int scalar, number of Jacobians built and factorised.
        residual_norm: max-norm of ``fn`` at ``value``.
        error_estimate: max over unknowns of ``|corr_i| / (atol + rtol |x_i|)`` (<= 1 when converged).
        factorization: the last factorisation (flat unknowns), for reuse by a following solve.
        aux: with ``newton_solve(..., has_aux=True)``, the auxiliary output of the residual
            function at ``value`` (differentiable); ``None`` otherwise.
    """

    value: object
    converged: jax.Array
    iterations: jax.Array
    jacobians: jax.Array
    residual_norm: jax.Array
    error_estimate: jax.Array
    factorization: object = None
    aux: object = None


@jax.custom_batching.custom_vmap
def batch_max(x):
    """``x`` itself; under ``jax.vmap`` its maximum over the batch, unbatched (one value for every
    member). For booleans: "any member". Used to make a decision once per batch, so that the
    ``lax.switch``/``lax.cond`` it drives is not turned into a ``select`` of all branches."""
    return x


@batch_max.def_vmap
def _batch_max_rule(axis_size, in_batched, x):
    del axis_size
    # batch_max again on the reduced value: under nested vmaps the outer levels reduce it too
    return (batch_max(jnp.max(x, axis=0)) if in_batched[0] else x), False


@jax.custom_batching.custom_vmap
def _unless_stopped(stopped, old, new):
    """``new``; under ``jax.vmap``, ``old`` for the members that ``stopped`` (a pytree select).
    Why a custom rule: a batch-uniform branch (:func:`batch_max`) runs for every member, so the
    members that had stopped must keep their own values; without ``vmap`` the branch taken IS the
    member's own (``stopped`` implies ``new == old``), and a plain ``jnp.where`` over the carried
    factorisation cost a DER cantilever ~20% of its run time."""
    return new


@_unless_stopped.def_vmap
def _unless_stopped_rule(axis_size, in_batched, stopped, old, new):
    stopped_batched, old_batched, new_batched = in_batched
    if not stopped_batched:  # one decision for all members: the branch taken is everyone's own
        return new, new_batched

    def select(o, o_b, n, n_b):
        o = o if o_b else jnp.broadcast_to(o, (axis_size,) + jnp.shape(o))
        n = n if n_b else jnp.broadcast_to(n, (axis_size,) + jnp.shape(n))
        return jnp.where(stopped.reshape((axis_size,) + (1,) * (jnp.ndim(n) - 1)), o, n)

    out = jax.tree_util.tree_map(select, old, old_batched, new, new_batched)
    return out, jax.tree_util.tree_map(lambda _: True, out)


def _scaled_rms(err, x, solver):
    return jnp.sqrt(jnp.mean((err / (solver.atol + solver.rtol * jnp.abs(x))) ** 2))


def _scaled_max(err, x, solver):
    return jnp.max(jnp.abs(err) / (solver.atol + solver.rtol * jnp.abs(x)))


def placeholder_factorization(solver: NewtonSolver, x_flat):
    """A factorisation with the right structure (of the identity) to start a carried one."""
    ls = DenseJacobianSolver() if solver.linear_solver is None else solver.linear_solver
    return ls.factor(ls.linearize(lambda x: x, x_flat))


def _newton_loop(f, x0, solver: NewtonSolver, fac0, have_fac0, step_limit=None, jacobian=None, aux0=(),
                 want_root=False):
    """Damped Newton/chord iteration on flat vectors.

    ``f(x) -> (F, aux)``, ``aux0`` zeros shaped like ``aux`` (the carry's start). Returns ``(x,
    (converged, iterations, jacobians, |F|_inf, err, fac), aux)``, ``aux`` that of the last
    evaluation, which is at ``x``. Written so that the
    residual ``f`` and its linearisation each appear once in the traced program (compile time
    grows with every copy): each pass first line-searches along the current direction (the first
    pass, with ``dx = 0``, just evaluates ``f(x0)``), then tests convergence with the simplified
    Newton correction, then picks the next direction (chord or fresh Jacobian). ``step_limit(x,
    dx)``, when given, caps the line search's first trial step (see :func:`newton_solve`).
    ``jacobian(x)``, when given, builds the operator of a fresh Jacobian instead of
    ``ls.linearize(f, x)``.

    ``want_root=True`` (static; only where the solve is differentiated): the pass that ends the
    loop also builds the Jacobian at the final ``x`` (by the same branch that builds every fresh
    Jacobian, so the program holds one copy of it) and returns its factorisation as a fourth
    output, for the implicit-differentiation tangent solves. Everything else (iterates, counts,
    the returned ``fac``, batch decisions under ``vmap``) is what ``want_root=False`` gives.
    """
    ls = solver.linear_solver
    dtype = x0.dtype
    f_res = lambda x: f(x)[0]  # noqa: E731  (the residual alone: Jacobians)

    def cond(state):
        return ~state["done"]

    def body(state):
        x, dx, fac, have_fac = state["x"], state["dx"], state["fac"], state["have_fac"]
        first = state["it"] == 0
        dx_norm = _scaled_rms(dx, x, solver)

        # The first `free_steps` updates are full Newton steps unless they produce non-finite
        # values: for rods, a linearised update of a rotating edge stretches it, so |F| (and the
        # simplified correction) jump after a perfectly good step and any monotonicity test
        # crawls with tiny steps (measured: 50+ iterations instead of 10 for a rod swinging under
        # gravity). After that, the affine-invariant monotonicity test of Deuflhard applies: the
        # simplified Newton correction J^{-1} F(x1) must be smaller than the step that led there.
        free = state["it"] <= solver.free_steps
        r0_norm = jnp.sqrt(jnp.mean(state["r"] ** 2))
        limit = None if step_limit is None else step_limit(x, dx)
        alpha_max = jnp.asarray(1.0, dtype) if limit is None else jnp.clip(limit, 1e-12, 1.0)

        def ls_cond(c):
            alpha, x1, r1, _, err, k = c
            e_norm = _scaled_rms(err, x, solver)
            finite = jnp.isfinite(e_norm) & jnp.all(jnp.isfinite(r1))
            decrease = jnp.sqrt(jnp.mean(r1**2)) <= (1.0 - 0.25 * alpha) * r0_norm
            ok = first | (finite & (free | decrease | (e_norm <= (1.0 - 0.25 * alpha) * dx_norm)))
            return (k == 0) | ((~ok) & (k <= solver.max_backtracks))

        def ls_body(c):
            alpha, _, _, _, _, k = c
            alpha = jnp.where(k == 0, alpha_max, 0.5 * alpha)
            x1 = x + alpha * dx
            r1, aux1 = f(x1)
            return alpha, x1, r1, aux1, ls.solve(fac, -r1), k + 1

        # the line search runs at least once, so aux1 is always that of x1 (a restart below
        # rewinds x1 but never ends the loop: the next pass evaluates f again)
        alpha, x1, r1, aux1, err, _ = jax.lax.while_loop(
            ls_cond, ls_body, (jnp.asarray(1.0, dtype), x, state["r"], state["aux"], dx, jnp.asarray(0))
        )
        scaled = jnp.where(have_fac, _scaled_max(err, x1, solver), jnp.inf)
        finite = jnp.all(jnp.isfinite(r1)) & jnp.all(jnp.isfinite(x1)) & jnp.all(jnp.isfinite(err))
        converged = finite & have_fac & (scaled <= 1.0)
        r_first = jnp.where(first, r1, state["r_first"])
        if solver.reuse_jacobian:
            restart = (
                ~converged & ~state["restarted"] & (~finite | (state["it"] - state["start"] >= solver.chord_restart))
            )
            x1 = jnp.where(restart, x0, x1)
            r1 = jnp.where(restart, r_first, r1)
            restarted = state["restarted"] | restart
            start = jnp.where(restart, state["it"], state["start"])
        else:
            restart, restarted, start = jnp.asarray(False), state["restarted"], state["start"]
        done = ~restart & (converged | ~finite | (state["it"] - start >= solver.max_steps))

        if solver.reuse_jacobian:
            contraction = _scaled_rms(err, x1, solver) / jnp.maximum(_scaled_rms(alpha * dx, x1, solver), 1e-300)
            # chord while it contracts and is predicted to converge within `chord_budget` more
            # steps: a chord step costs a residual and a back-substitution, a Jacobian ~15 of them
            remaining = jnp.log(jnp.maximum(scaled, 1.0)) / -jnp.log(jnp.minimum(contraction, 0.999))
            chord = (
                have_fac
                & ~restarted
                & (first | ((alpha == 1.0) & (contraction <= solver.max_contraction) & (remaining <= solver.chord_budget)))
            )
        else:
            chord = jnp.asarray(False)

        # with want_root, the branches also carry the factorisation at the root (rfac)
        keep = (state["rfac"],) if want_root else ()

        def fresh(_):
            new_fac = ls.factor(ls.linearize(f_res, x1) if jacobian is None else jacobian(x1))
            if not want_root:
                return ls.solve(new_fac, -r1), new_fac, jnp.asarray(1)
            # the pass that ends the loop builds the Jacobian at the final x for the tangent
            # solves only: the returned factorisation and the count stay the loop's own
            fac_out = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fac, new_fac)
            return ls.solve(new_fac, -r1), fac_out, jnp.where(done, 0, 1), new_fac

        def reuse(_):
            return (err, fac, jnp.asarray(0), *keep)

        def stop(_):
            return (jnp.zeros_like(dx), fac, jnp.asarray(0), *keep)

        branch = jnp.where(done, 0, jnp.where(chord, 1, 2))
        # with want_root, a member that stops builds its Jacobian at the root (the fresh branch)
        taken_branch = jnp.where(done, 2, branch) if want_root else branch
        if solver.batch_uniform:
            # one branch for the whole batch (vmap): a fresh Jacobian if any member needs one; a
            # member that stopped keeps its factorisation (its loop ends here either way)
            taken = jax.lax.switch(batch_max(taken_branch), (stop, reuse, fresh), None)
            if want_root:
                # the fresh branch taken only for members at their root: the others keep the
                # chord step the forward program takes (no member of a want_root pass stops
                # without the fresh branch, which keeps a stopped member's factorisation itself)
                out = _unless_stopped((branch == 1) & (batch_max(branch) < 2), reuse(None), taken)
            else:
                out = _unless_stopped(branch == 0, stop(None), taken)
        else:
            out = jax.lax.switch(taken_branch, (stop, reuse, fresh), None)
        dx1, fac1, nj = out[:3]
        return dict(
            x=x1, dx=dx1, r=r1, aux=aux1, fac=fac1, have_fac=have_fac | (nj > 0), it=state["it"] + 1,
            jac=state["jac"] + nj, done=done, converged=converged, err=scaled, r_first=r_first,
            restarted=restarted, start=start, **({"rfac": out[3]} if want_root else {}),
        )

    init = dict(
        x=x0, dx=jnp.zeros_like(x0), r=jnp.zeros_like(x0), aux=aux0, fac=fac0, have_fac=jnp.asarray(have_fac0),
        it=jnp.asarray(0), jac=jnp.asarray(0), done=jnp.asarray(False), converged=jnp.asarray(False),
        err=jnp.asarray(jnp.inf, dtype), r_first=jnp.zeros_like(x0), restarted=jnp.asarray(False),
        start=jnp.asarray(0), **({"rfac": fac0} if want_root else {}),
    )
    out = jax.lax.while_loop(cond, body, init)
    # the first pass only evaluates f(x0): updates taken = passes - 1
    stats = (out["converged"], out["it"] - 1, out["jac"], jnp.max(jnp.abs(out["r"])), out["err"], out["fac"])
    if want_root:
        return out["x"], stats, out["aux"], out["rfac"]
    return out["x"], stats, out["aux"]


def _zeros_like_output(f, x):
    """Zeros shaped like ``f(x)`` (traced, not evaluated): placeholders of loop carries."""
    return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(f, x))


def _levenberg_marquardt(f, x0, max_steps):
    """Levenberg-Marquardt on ``|f(x)|^2`` with adaptive damping (Till et al.'s solver: damping
    halved before each step, doubled until the sum of squares decreases). Returns ``(x, steps)``;
    stops when no decrease is possible, the step is negligible, or after ``max_steps``."""
    n = x0.shape[0]
    eye = jnp.eye(n, dtype=x0.dtype)

    def cond(st):
        return ~st[4]

    def body(st):
        x, r, lam, it, _ = st
        J = jax.jacfwd(f)(x)
        A, g = J.T @ J, J.T @ r
        ss = r @ r

        def try_cond(c):
            lam, _, r1, k = c
            return (k == 0) | (~(jnp.sum(r1**2) < ss) & (k < 40))

        def try_body(c):
            lam, _, _, k = c
            lam = jnp.where(k == 0, 0.5 * lam, 2.0 * lam)
            dx = jnp.linalg.solve(A + lam * eye, -g)
            return lam, dx, f(x + dx), k + 1

        lam, dx, r1, _ = jax.lax.while_loop(try_cond, try_body, (lam, jnp.zeros_like(x), r, 0))
        ok = jnp.all(jnp.isfinite(r1)) & (jnp.sum(r1**2) < ss)
        x1 = jnp.where(ok, x + dx, x)
        r1 = jnp.where(ok, r1, r)
        small = jnp.max(jnp.abs(dx) / (1.0 + jnp.abs(x))) < 1e-13
        done = ~ok | small | (jnp.sum(r1**2) < 1e-24) | (it + 1 >= max_steps)
        return x1, r1, lam, it + 1, done

    r0 = f(x0)
    x, _, _, it, _ = jax.lax.while_loop(
        cond, body, (x0, r0, jnp.asarray(1e-2, x0.dtype), jnp.asarray(0), ~jnp.all(jnp.isfinite(r0)))
    )
    return x, it


def _with_rescue(g, jac_g, guess, solver, factorization, have_factorization, limit, aux0=(), want_root=False):
    """:func:`_newton_loop` from ``guess``; where it fails, Levenberg-Marquardt from ``guess`` and a
    Newton polish of its result (``NewtonSolver.fallback``). Returns what :func:`_newton_loop`
    does (with ``want_root``, the factorisation at the final root too), the counts including the
    failed attempt.

    The two Newton runs are two passes of ONE loop (a ``lax.while_loop`` of at most two passes
    whose second pass starts from the Levenberg-Marquardt point), so the residual and its
    Jacobian appear once in the program instead of twice (measured: the static shooting solve of
    ``test_levenberg_marquardt_fallback_rescues_a_hard_static_solve``, 9131 -> 6951 HLO
    instructions before optimisation, same iterates and counts). Under ``jax.vmap`` the
    second pass runs while any member failed; the members that converged in the first keep
    their results (the batched ``while_loop`` freezes them), as before with a ``select``; the
    Levenberg-Marquardt branch is taken once for the batch (:func:`batch_max`), so it stays a
    branch instead of a ``select`` evaluated in every solve.
    """
    dt = guess.dtype
    n_lm = max(4 * solver.max_steps, 200)

    def cond(c):
        return ~c[-1]

    def body(c):
        rescue, _, it0, jac0 = c[:4]

        def lm(_):
            x_lm, lm_it = _levenberg_marquardt(lambda x: g(x)[0], guess, n_lm)
            return x_lm, lm_it.astype(dt)

        x_start, lm_it = jax.lax.cond(batch_max(rescue), lm, lambda _: (guess, jnp.zeros((), dt)), None)
        # the polish starts from the caller's factorisation flagged invalid (only its structure
        # is used), not the failed pass's, which may hold NaN that a masked update would still
        # carry into the polish and stop it at once
        have = jnp.where(rescue, False, have_factorization)
        x, (conv, it, jac, rnorm, err, fac), aux, *rfac = _newton_loop(
            g, x_start, solver, factorization, have, limit, jac_g, aux0, want_root
        )
        it, jac = it0 + lm_it + it.astype(dt), jac0 + lm_it + jac.astype(dt)
        return (jnp.asarray(True), x, it, jac, rnorm, err, fac, aux, *rfac, conv, conv | rescue)

    zero, inf = jnp.zeros((), dt), jnp.asarray(jnp.inf, dt)
    c0 = (jnp.asarray(False), guess, zero, zero, inf, inf, factorization, aux0,
          *((factorization,) if want_root else ()), jnp.asarray(False), jnp.asarray(False))
    _, x, it, jac, rnorm, err, fac, aux, *rfac, conv, _ = jax.lax.while_loop(cond, body, c0)
    return (x, (conv, it, jac, rnorm, err, fac), aux, *rfac)


def newton_solve(
    fn, x0, args=None, solver: NewtonSolver = NewtonSolver(), *, factorization=None, have_factorization=False,
    step_limit=None, jacobian=None, has_aux=False,
) -> NewtonResult:
    """Solve ``fn(x, args) = 0`` for ``x`` by Newton's method, differentiably.

    Args:
        fn: residual function ``(x, args) -> r`` with ``r`` of the same pytree structure/size as ``x``.
        x0: initial guess (pytree of float arrays).
        args: parameters (pytree); derivatives of the solution with respect to them, and to any
            array ``fn`` closes over, come from the implicit function theorem.
        solver: :class:`NewtonSolver` configuration.
        factorization: a factorisation from an earlier solve of a similar system (see
            ``NewtonResult.factorization``), used for chord steps when ``solver.reuse_jacobian``.
        have_factorization: bool (may be traced): whether ``factorization`` is valid.
        step_limit: optional ``(x, dx) -> alpha_max`` on the pytrees ``x0`` is shaped like: the
            largest fraction in (0, 1] of the Newton update ``dx`` at ``x`` the line search tries
            first (e.g. to keep friction from overshooting through sticking), or ``None`` (no
            limit, decided while tracing). It shortens steps only, so it changes the number of
            iterations, never the solution.
        jacobian: optional ``(x, args) -> operator``: the Jacobian of ``fn`` at ``x`` in the form
            ``solver.linear_solver.linearize`` returns (e.g. a model's assembled element
            Hessians), used for the Newton iterations instead of ``linearize``. It must be the
            exact Jacobian: Newton's iterations and the implicit differentiation's tangent
            solves factor it (the solution and its tolerance do not depend on it).
        has_aux: ``fn`` returns ``(r, aux)``, ``aux`` a pytree of float arrays computed along
            with the residual; ``NewtonResult.aux`` is then ``aux`` at the solution, from the
            residual evaluation that accepted it, so that a caller needing it (e.g. a shooting
            model's state grid) does not evaluate ``fn`` once more there: one copy of ``fn``
            fewer in the program and one evaluation fewer per solve. Its derivatives follow the
            solution's (a JVP of ``fn`` at the root, traced only when differentiated).

    Returns:
        :class:`NewtonResult`. The solver never raises inside ``jit``: check ``converged``.
    """
    if solver.linear_solver is None:
        solver = eqx.tree_at(lambda s: s.linear_solver, solver, DenseJacobianSolver(), is_leaf=lambda x: x is None)
    flat0, unravel = ravel_pytree(x0)

    def f(flat):  # (flat residual, aux); aux () without has_aux (nothing carried)
        out = fn(unravel(flat), args)
        r, aux = out if has_aux else (out, ())
        return ravel_pytree(r)[0], aux

    ls = solver.linear_solver
    limit = None if step_limit is None else (lambda x, dx: step_limit(unravel(x), unravel(dx)))
    jac_fn = None if jacobian is None else (lambda x: jacobian(unravel(x), args))
    if factorization is None:
        factorization = placeholder_factorization(solver, flat0)
        have_factorization = False

    def solve(g, jac_g, guess, want_root=False):
        aux0 = _zeros_like_output(g, guess)[1] if has_aux else ()  # traced only with an aux
        if solver.fallback != "levenberg_marquardt":
            x, (conv, it, jac, rnorm, err, fac), fn_aux, *rfac = _newton_loop(
                g, guess, solver, factorization, have_factorization, limit, jac_g, aux0, want_root
            )
        else:
            x, (conv, it, jac, rnorm, err, fac), fn_aux, *rfac = _with_rescue(
                g, jac_g, guess, solver, factorization, have_factorization, limit, aux0, want_root
            )
        # a custom_jvp needs float0 tangents for integer aux outputs: pass
        # floats, including integer leaves of the factorisation (LU pivots), cast back below
        dt = x.dtype
        fac = jax.tree_util.tree_map(lambda a: a.astype(dt) if not jnp.issubdtype(a.dtype, jnp.floating) else a, fac)
        # rfac (want_root: the factorisation at the root) stays inside the tangent rule as it is
        return (x, (conv.astype(dt), it.astype(dt), jac.astype(dt), rnorm, err, fac), fn_aux, *rfac)

    if solver.tangent_refinement > 0:
        # the carried factorisation (aux[-1], integer leaves cast to float for the custom_jvp)
        # preconditions the tangent/adjoint solves at the root
        fac_dtypes = [a.dtype for a in jax.tree_util.tree_leaves(factorization)]

        def precondition(aux):
            leaves, tree = jax.tree_util.tree_flatten(aux[-1])
            fac = jax.tree_util.tree_unflatten(tree, [a.astype(d) for a, d in zip(leaves, fac_dtypes)])
            # only a Jacobian built in this solve (at one of its iterates, close to the root)
            # contracts fast enough; one carried from earlier steps goes straight to the fresh
            # factorisation (measured, DER 41 nodes: refining with those too made the gradient
            # 26% slower than the fresh factorisation alone)
            return fac, aux[2] > 0.5

        refine = (precondition, solver.tangent_refinement)
    else:
        refine = None
    # the tangent rule takes the Jacobian at the root from the Newton loop (want_root) when the
    # linear solver can give the operator back from a factorisation; not with refinement, whose
    # point is to do without a Jacobian at the root
    root_jacobian = refine is None and len(_AD_TRACERS) == 2 and ls.operator(factorization) is not None
    flat, aux, fn_aux = _implicit_root(f, flat0, solve, ls, refine, jac_fn, root_jacobian)
    converged, iterations, jacobians, rnorm, err, fac = jax.lax.stop_gradient(aux)
    fac = jax.tree_util.tree_map(lambda a, ref: a.astype(ref.dtype), fac, factorization)
    return NewtonResult(
        unravel(flat), converged > 0.5, iterations.astype(jnp.int32), jacobians.astype(jnp.int32), rnorm, err, fac,
        fn_aux if has_aux else None,
    )


# iterative refinement of the tangent/adjoint solves: accepted when the last correction is below
# this fraction of the solution (max-norm) and was at most half the one before (so the error left,
# about correction * rho / (1 - rho), is below it too); a direct solve is good to ~cond * 1e-16
TANGENT_RTOL = 1e-12


def _refined_solve(apply, precond_solve, fresh_solve, b, max_steps, usable=True):
    """``x`` with ``apply(x) = b`` (``apply`` linear, exact): iterative refinement preconditioned
    by the (approximate) inverse ``precond_solve``, then ``fresh_solve(b)`` (an exact direct solve)
    when ``max_steps`` corrections did not reach :data:`TANGENT_RTOL`. Under ``vmap`` the fallback
    is taken once for the batch (:func:`batch_max`), never evaluated as a ``select``. ``usable``
    (may be traced) False: no refinement, the fresh solve at once."""
    x0 = precond_solve(b)
    big = jnp.asarray(jnp.inf, b.dtype)

    def cond(c):
        x, d_norm, prev_norm, k = c
        ok = (d_norm <= TANGENT_RTOL * jnp.max(jnp.abs(x))) & (d_norm <= 0.5 * prev_norm)
        # stop when accepted, out of steps, not finite, or diverging (no point going on); the
        # first pass (k == 0, sizes still infinite) always runs
        going = ~ok & (k < max_steps) & jnp.isfinite(d_norm) & (d_norm <= 2.0 * prev_norm)
        return usable & ((k == 0) | going)

    def body(c):
        x, d_norm, _, k = c
        d = precond_solve(b - apply(x))
        return x + d, jnp.max(jnp.abs(d)), d_norm, k + 1

    # first correction on x0 (its own "previous" size is infinite: it must still contract below)
    x, d_norm, prev_norm, _ = jax.lax.while_loop(cond, body, (x0, big, big, jnp.asarray(0)))
    ok = jnp.isfinite(d_norm) & (d_norm <= TANGENT_RTOL * jnp.max(jnp.abs(x))) & (d_norm <= 0.5 * prev_norm)
    ok = ok & jnp.all(jnp.isfinite(x)) & usable
    return jax.lax.cond(batch_max(~ok), lambda _: fresh_solve(b), lambda _: x, None)


def _tangent_solve(ls, g, y, refine=None, op=None):
    """``x`` with ``g(x) = y`` for the linear ``g`` (the residual linearised at the root), through
    ``ls``'s factorisation; transposable, so reverse mode works. ``refine = (fac, usable, max_steps)``:
    iterative refinement preconditioned by ``fac`` (see ``NewtonSolver.tangent_refinement``),
    falling back to the fresh factorisation. ``op``: the operator of ``g`` when already known
    (e.g. assembled by the model), instead of ``ls.linearize(g)``."""

    def operator(b):
        return ls.linearize(g, b, linear=True) if op is None else op

    if refine is None:
        fac = ls.factor(operator(y))
        return jax.lax.custom_linear_solve(
            g, y, solve=lambda _, b: ls.solve(fac, b), transpose_solve=lambda _, b: ls.solve_transpose(fac, b)
        )
    pre, usable, max_steps = refine

    def fresh(b):
        return ls.solve(ls.factor(operator(b)), b)

    def fresh_transpose(b):
        return ls.solve_transpose(ls.factor(operator(b)), b)

    return jax.lax.custom_linear_solve(
        g,
        y,
        solve=lambda mv, b: _refined_solve(mv, lambda r: ls.solve(pre, r), fresh, b, max_steps, usable),
        transpose_solve=lambda vm, b: _refined_solve(
            vm, lambda r: ls.solve_transpose(pre, r), fresh_transpose, b, max_steps, usable
        ),
    )


def _implicit_root(f, guess, solve, ls, refine=None, jacobian=None, root_jacobian=False):
    """``solve(f, jacobian, guess) -> (x, aux, fn_aux)`` with ``dx`` from the implicit function theorem on ``f(x) = 0``
    (tangent system solved with the linear solver ``ls``).

    What ``jax.lax.custom_root(..., has_aux=True)`` does, except that the tangent system (the
    linearisation of ``f`` at the root and its solve) is traced only when something is
    differentiated: ``custom_root`` traces it eagerly into every program, even a forward
    simulation (measured: a DER static load step traced in 5.9 s with it, 2.2 s without).
    Derivatives flow through the arrays ``f`` closes over (hoisted by :func:`_closure_convert`);
    those only ``solve`` closes over (e.g. a carried factorisation) get none, as in ``custom_root``.
    ``aux`` must be floating point (its tangent is zero). ``f(x) -> (F, fn_aux)``: ``fn_aux`` is
    what ``f`` computes along with the residual at the returned ``x`` (its tangent: the JVP of
    ``f`` at the root, in ``x`` and what ``f`` closes over). ``refine = (precondition, max_steps)``:
    the tangent system is solved by iterative refinement preconditioned by the factorisation
    ``precondition(aux)`` (see :func:`_tangent_solve`) instead of a fresh factorisation.
    ``jacobian(x)``: the operator of the Jacobian at ``x`` (instead of ``ls.linearize``).

    ``f`` and ``jacobian`` are traced once each, here: ``solve`` receives them as replays of
    their jaxprs (the tangent rule needs those jaxprs anyway), so the Newton loop, its line search
    and its fallback do not run the Python functions and their transformations again (measured,
    process CPU of tracing: DER cantilever a1, 21 nodes, time-loop program 3.1 -> 2.1 s, its
    element-Hessian Jacobian no longer traced twice; cantilever-static's load increment 1.35 ->
    0.94 s, its residual traced once instead of three times; the compiled programs are the same).

    ``root_jacobian``: ``solve(f, jacobian, guess, True) -> (x, aux, fn_aux, fac)`` also returns
    the factorisation of the Jacobian at ``x`` (built by the Newton loop's own Jacobian branch,
    :func:`_newton_loop`'s ``want_root``), and ``ls.operator(fac)`` the operator it factorises:
    the tangent rule then solves with that factorisation and takes its matvecs (and their
    transposes, for reverse mode) from that operator, instead of linearising ``f`` at ``x`` once
    more (``jax.linearize``, a second Jacobian of the linearisation and, in reverse mode, the
    transposed linearisation of ``f`` in the program). That variant of ``solve`` is traced only
    in the tangent rule, so forward programs do not change. Derivatives of second order (the
    tangent rule itself differentiated) take the linearisation path: the loop's Jacobian has no
    derivatives.
    """
    f_conv, f_consts = _closure_convert(f, guess)
    if jacobian is None:
        jac_conv, jac_consts, jac_replay = None, [], None
    else:
        jac_conv, jac_consts = _closure_convert(jacobian, guess)
        jac_replay = lambda x: jac_conv(x, *jac_consts)  # noqa: E731
    f_replay = lambda x: f_conv(x, *f_consts)  # noqa: E731
    solve_conv, solve_consts = _closure_convert(lambda g: solve(f_replay, jac_replay, g), guess)
    if root_jacobian:
        # traced when (and each time) the tangent rule is: the same closure as solve_conv, its
        # arrays matched to solve_consts (None: a closed-over array solve_conv does not have)
        def root_solve():
            return _closure_convert_onto(lambda g: solve(f_replay, jac_replay, g, True), guess, solve_consts)
    else:
        root_solve = None
    # arrays of the linear solver (e.g. a colouring) are arguments too: a custom rule must not
    # close over the caller's tracers
    ls_dyn, ls_static = eqx.partition(ls, eqx.is_array)
    ls_leaves, ls_tree = jax.tree_util.tree_flatten(ls_dyn)
    sizes = (len(f_consts), len(ls_leaves), len(jac_consts))
    return _root(
        f_conv, solve_conv, (ls_static, ls_tree, refine, jac_conv, root_solve), sizes, guess, *f_consts, *ls_leaves,
        *jac_consts, *solve_consts,
    )


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3))
def _root(f_conv, solve_conv, ls_parts, sizes, guess, *consts):
    return solve_conv(guess, *consts[sum(sizes):])


@_root.defjvp
def _root_jvp(f_conv, solve_conv, ls_parts, sizes, primals, tangents):
    guess, *consts = primals
    n_f, n_ls, n_jac = sizes
    f_consts, f_dots = consts[:n_f], tangents[1 : 1 + n_f]
    ls_static, ls_tree, refine, jac_conv, root_solve = ls_parts
    ls = eqx.combine(jax.tree_util.tree_unflatten(ls_tree, consts[n_f : n_f + n_ls]), ls_static)
    # the Newton loop's own Jacobian at the root (see _implicit_root), unless this rule is itself
    # differentiated (second order: that Jacobian would have no derivatives)
    root_conv = None
    if root_solve is not None and not any(isinstance(p, _AD_TRACERS) for p in primals):
        root_conv = root_solve()
    if root_conv is not None:
        x, aux, fn_aux, fac = root_conv(guess, *consts[sum(sizes):])
    else:
        x, aux, fn_aux = _root(f_conv, solve_conv, ls_parts, sizes, guess, *consts)
    # F(x(p), p) = 0  =>  J dx = -dF/dp . dp
    _, rhs = jax.jvp(lambda *c: f_conv(x, *c)[0], tuple(f_consts), tuple(f_dots))
    if root_conv is not None:
        op = ls.operator(fac)
        dx = jax.lax.custom_linear_solve(
            lambda v: ls.matvec(op, v), -rhs,
            solve=lambda _, b: ls.solve(fac, b), transpose_solve=lambda _, b: ls.solve_transpose(fac, b),
        )
    else:
        _, f_lin = jax.linearize(lambda z: f_conv(z, *f_consts)[0], x)
        if refine is not None:
            precondition, max_steps = refine
            refine = (*precondition(aux), max_steps)
        op = None if jac_conv is None else jac_conv(x, *consts[n_f + n_ls : n_f + n_ls + n_jac])
        dx = _tangent_solve(ls, f_lin, -rhs, refine, op)
    if jax.tree_util.tree_leaves(fn_aux):
        _, aux_dot = jax.jvp(lambda z, *c: f_conv(z, *c)[1], (x, *f_consts), (dx, *f_dots))
    else:
        aux_dot = fn_aux
    return (x, aux, fn_aux), (dx, jax.tree_util.tree_map(jnp.zeros_like, aux), aux_dot)


# tracers of a differentiation: a tangent rule that receives them as primals is differentiated itself
# (JAX's own tracer classes, private: where they cannot be found, every solve takes the
# linearisation path, which is right at any order, rather than risk a second derivative without
# the Jacobian's own derivatives)
try:
    from jax._src.interpreters import ad as _ad

    _AD_TRACERS = tuple(t for t in (getattr(_ad, "JVPTracer", None), getattr(_ad, "LinearizeTracer", None)) if t is not None)
except ImportError:  # pragma: no cover
    _AD_TRACERS = ()


def _closure_convert_onto(fun, x, consts):
    """``converted`` with ``converted(x, *consts) == fun(x)``, where ``consts`` are the tracers a
    :func:`_closure_convert` of a function with the same closure hoisted (matched by identity:
    ``fun`` may be traced after the trace those tracers belong to has ended, it never evaluates
    them). ``None`` when ``fun`` closes over a tracer not among ``consts``."""
    closed, out_shape = jax.make_jaxpr(fun, return_shape=True)(x)
    jaxpr, out_tree = closed.jaxpr, jax.tree_util.tree_structure(out_shape)
    position = {id(c): i for i, c in enumerate(consts)}
    slots = []
    for c in closed.consts:
        if isinstance(c, jax.core.Tracer):
            if id(c) not in position:
                return None
            slots.append(position[id(c)])
        else:
            slots.append(None)
    fixed = [None if j is not None else c for c, j in zip(closed.consts, slots)]

    def converted(x, *hoisted):
        cs = [c if j is None else hoisted[j] for c, j in zip(fixed, slots)]
        out = jax.extend.core.jaxpr_as_fun(jax.extend.core.ClosedJaxpr(jaxpr, cs))(x)
        return jax.tree_util.tree_unflatten(out_tree, out)

    return converted


def _closure_convert(fun, x):
    """``(converted, consts)`` with ``converted(x, *consts) == fun(x)`` for one array ``x``: every
    tracer ``fun`` closes over becomes an explicit argument (a closed-over tracer of the caller's
    trace must not be evaluated inside a custom rule; ``jax.closure_convert`` keeps integer
    tracers in the closure). Concrete arrays stay in the closure: they reach the compiler as
    constants, as they would without the conversion."""
    closed, out_shape = jax.make_jaxpr(fun, return_shape=True)(x)
    jaxpr, out_tree = closed.jaxpr, jax.tree_util.tree_structure(out_shape)
    is_tracer = [isinstance(c, jax.core.Tracer) for c in closed.consts]
    fixed = [c for c, t in zip(closed.consts, is_tracer) if not t]

    def converted(x, *hoisted):
        it_h, it_f = iter(hoisted), iter(fixed)
        consts = [next(it_h) if t else next(it_f) for t in is_tracer]
        out = jax.extend.core.jaxpr_as_fun(jax.extend.core.ClosedJaxpr(jaxpr, consts))(x)
        return jax.tree_util.tree_unflatten(out_tree, out)

    return converted, [c for c, t in zip(closed.consts, is_tracer) if t]
