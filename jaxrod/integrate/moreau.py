"""Moreau midpoint time stepping for set-valued (non-smooth) contact: :class:`MoreauStepper`.

The scheme of Transeth, Leine, Glocker and Pettersen (IEEE T-RO 24(2), 2008, Section VII;
``/work/shared/specs/seed002_snake.md`` section 5), written once over the small model interface
:class:`AbstractMoreauModel` (the rigid-body implementation is
:class:`~jaxrod.system.contact.ContactSystem`). One step from ``(q_A, u_A)`` at ``t_A``:

1. midpoint ``q_M = q_A + dt/2 F(q_A) u_A`` (:meth:`AbstractMoreauModel.advance`), ``t_M = t_A + dt/2``;
2. at the midpoint: contact gaps ``g_N(q_M)``, the contact Jacobians ``W`` (normal, two tangential
   directions of the friction frame, two rolling directions), the joint Jacobian ``W_J`` with the
   rheonomic term ``dg_J/dt``, the smooth forces ``h(q_M, u_A, t_M)`` (gravity, gyroscopic,
   springs, dampers, controllers) and ``M^{-1}``;
3. active set ``{a : g_N,a(q_M) <= active_margin}`` (the paper: margin 0; contacts not active carry
   no impulse);
4. the discrete equality of measures ``M (u_E - u_A) = h dt + W P + W_J P_J``, the joints on
   velocity level ``W_J^T u_E + dg_J/dt = 0`` and the contact laws in prox form on the end
   velocity (below), solved by a projected fixed-point iteration (a ``lax.while_loop``);
5. end position ``q_E = q_M + dt/2 F(q_M) u_E``, then the constraint-violation correction:
   normalised quaternions, then the joints projected back onto ``g_J = 0`` by
   ``projection_iterations`` Gauss-Newton steps ``dq = -M^{-1} W_J G^{-1} g_J(q_E)`` in the kinetic
   metric, with the midpoint ``W_J`` and factor of ``G`` (a chord iteration: no new Jacobian). The
   paper's own projection (link 1 fixed, orientations then translations along the chain) is
   chain-specific; this one serves any joint graph (a model may bring its own instead:
   :meth:`AbstractMoreauModel.correct`, e.g. the snake's
   :class:`~jaxrod.scenes.snake.ChainProjection`). Velocities are not projected and unilateral
   penetration is not corrected (the paper).

Contact laws (per active contact ``a``; impulses ``P = (P_N, P_T1, P_T2, P_V1, P_V2)`` [N s], the
last two a rolling-friction torque impulse divided by the sphere radius, as the paper's
``gamma_V`` is a velocity):

* Signorini + Newton impact: ``P_N = prox_{R+}(P_N - r_N xi_N)``, ``xi_N = gamma_N,E + e
  gamma_N,A`` where ``gamma_N,A < -restitution_velocity`` (else ``e = 0``). With ``e = 0`` this is the
  paper's completely inelastic law; with ``e > 0`` it is the Newton law of Moreau-type schemes
  (a dropped ball rebounds to ``e^2 h`` up to ``O(dt)``);
* spatial anisotropic Coulomb: ``P_T = prox_{C_T}(P_T - r_T gamma_T,E)``, ``C_T`` the ellipse with
  semi-axes ``mu_along P_N``, ``mu_across P_N`` in the friction frame (its first axis the
  principal direction), sized by the new ``P_N`` (the spec's choice for a garbled line);
* rolling friction: ``P_V = prox_{C_V}(P_V - r_V gamma_V,E)``, ``C_V`` the disk ``mu_V P_N``.

Joints and contacts in one problem (the paper's Schur complement). For every contact impulse
``P`` the joint impulses solve ``G P_J = -(W_J^T u_free + dg_J/dt + W_J^T M^{-1} W P)`` with
``G = W_J^T M^{-1} W_J`` factored once per step (Cholesky; rows the model marks redundant are
replaced by ``P_J = 0``). Since ``u_E`` is then an affine function of ``P``, the stepper forms
once per step ``u_E = u_0 + Y P`` and the Delassus matrix ``D = W^T Y`` (``(5 n_c)^2``, dense:
meant for tens of contacts) and iterates on ``gamma = W^T u_0 + D P``. The iterates are exactly
the paper's "modified Newton" iterates, where ``P_J`` is recomputed from each ``S^(k)``.

Every choice the paper leaves open is a field of :class:`MoreauOptions` (defaults in brackets):

* ``method`` [``'gauss_seidel'``]: ``'jacobi'`` is the paper's simultaneous update (87-89);
  ``'gauss_seidel'`` updates contact after contact (the active ones) with the latest impulses (on
  the frictionless normal problem, a convex quadratic programme, projected Gauss-Seidel converges for
  ``relaxation`` in ``(0, 2)``; Jacobi with ``relaxation / D_kk`` can oscillate when contacts
  share a body, and the paper's small absolute r-factors converge slowly);
* ``r_factors`` [``'scaled'``]: ``'absolute'`` uses ``r = (r_N, r_T, r_V)`` [kg] for every contact
  (the paper: ``(0.1, 0.01, 0.05)``, tuned for its 0.68 kg links); ``'scaled'`` uses
  ``r_k = relaxation / D_kk`` per contact and per component (the spec's note 5.5). With unequal
  ``r`` on the two tangential components the prox is taken in the metric ``R^{-1}``, ``R =
  diag(r_T1, r_T2)`` (``-gamma in N_C(P) <=> P = prox^R_C(P - R gamma)`` for any SPD ``R``: the
  same fixed point), which is the Euclidean projection of ``R^{-1/2}(P - R gamma)`` on the
  ellipse of semi-axes ``mu P_N / sqrt(r)``, mapped back. Why per component: along a link of a
  chain the contact moves the whole chain (``D_T1T1`` small), across it only the link (on the
  snake's first steps the gain over one ``r`` per contact was small); why scaled at all: nothing
  to tune per robot (absolute r-factors depend on its masses);
* ``friction_prox`` [``'euclidean'``]: the paper's Euclidean projection on the ellipse (a
  scalar Newton root, ``ellipse_iterations`` steps from a lower bound); ``'scaled'`` the
  closed form ``S proj_disk(S^{-1} P - r S gamma)``, ``S = diag(mu_along, mu_across)`` (the same
  fixed point, other iterates; spec note 8.3);
* ``criterion`` [``'energy'``]: ``'impulses'`` is the paper's (93), stop when ``|dP_N| + |dP_T| +
  |dP_V| <= atol + rtol |P|`` [N s]. ``'energy'`` stops when ``sqrt(dP^T D dP) <= atol + rtol
  sqrt(P^T D P)`` (``dP^T D dP`` is twice the kinetic energy of the velocity change a sweep makes):
  when there are more contact unknowns than free velocities (the snake: 22 contacts, 110 impulse
  components, 26 degrees of freedom) the impulses are not unique and may drift along the
  combinations that move nothing, which (93) counts and this norm does not.
  [``rtol = 1e-6`` (the spec's suggestion), ``atol = 1e-14``], at most ``max_iterations`` [5000]
  sweeps; a step that does not converge is reported (``converged`` False) and
  :func:`jaxrod.simulate` raises. The iteration converges linearly and slowly when friction
  sticks on many coupled contacts (the snake's first steps: up to ~1700 sweeps at ``rtol = 1e-6``,
  over 3000 at ``1e-10``; a few to tens once warm-started);
* warm start [on]: an active contact starts from its impulses of the last step it was active
  (contacts never active: zero);
* ``restitution_velocity`` [0 m/s]: approach speeds below it impact plastically (a resting
  contact with ``e > 0`` then does not chatter);
* ``projection_iterations`` [2]: chord Gauss-Newton steps of the joint projection (0: none);
* ``active_margin`` [0 m]: the active set is ``g_N(q_M) <= active_margin`` (0: the paper's
  "midpoint" test); a contact active while still open may approach by what closes it at the end
  of the step (``xi_N`` above gets ``+ 2 max(g_N(q_M), 0) / dt``, the spec's note 8.4(c)): contact
  is taken up before touching, which makes touch-down continuous in the state. It does not stop a
  landing body from sinking: the step that closes the gap leaves it approaching, and the next
  midpoint is inside (measured on a ball landing at 2 m/s, dt = 1 ms: 0.85 mm with a 5 mm margin,
  1.13 mm without). A signed ``2 g_N(q_M) / dt`` (position-level Signorini on the predicted end
  gap) was tried and rejected: it returns the approach speed as a rebound the step after;
* ``friction_bound`` [``'new'``]: the friction and rolling sets of a sweep are sized by
  ``P_N^(k+1)`` (the spec's reading of a garbled line) or ``P_N^(k)`` (``'old'``); same fixed point;
* ``forces_at`` [``'midpoint'``]: where the smooth forces (and controllers, ``tau_C``) are
  evaluated: ``(q_M, u_A, t_M)`` or ``(q_A, u_A, t_A)`` (``'start'``) (the paper's ``h_M =
  h(u_A)``; its evaluation point of ``tau_C`` is not stated). They are explicit: a stiff PD loop
  needs ``dt`` below about ``2 / omega_n``, less with damping (:func:`pd_stable_dt`; the snake's
  pitch loop, 800 N m/rad on half a link's inertia, 9.63e-4 or, turned, 2.35e-4 kg m^2: 1.3 or
  0.56 ms; sidewinding blows up at 1 ms): :func:`jaxrod.simulate` warns
  (:class:`StabilityWarning`) where the model's ``check_dt`` says so, and the linear-implicit
  forces below remove the limit;
* linear-implicit forces (:meth:`AbstractMoreauModel.implicit_forces`; the snake's
  ``CardanPD(implicit=True)``): forces a model marks stiff are not taken at ``(q_F, u_A)`` but
  linearised at the END of the step, ``f(q_E, u_E) ~ f0 + K_u (u_E - u_A) + K_q (q_E - q_F)`` with
  ``f0 = f(q_F, u_A, t_F)``, ``K_u = df/du``, ``K_q = df/dq`` (per unit velocity-shaped
  displacement, :meth:`AbstractMoreauModel.displace`, both by forward differentiation) and ``q_E -
  q_F = dt/2 u_E`` (midpoint; ``'start'``: ``dt/2 (u_A + u_E)``). The velocity update then has the
  mass matrix ``M - dt (K_u + dt/2 K_q)`` (factored by LU once per step; the joint Schur
  complement by LU too, as it is no longer symmetric). On a linear PD loop ``m x'' = -k x - c x'``
  one step is ``v_E = (v_A - dt k x_M / m) / (1 + dt c / m + dt^2 k / (2 m))``: stable for every
  ``dt`` (the explicit loop needs ``dt`` below about ``2 / omega_n``, less with damping), first
  order in the PD forces like the scheme itself;
* ``normalize_midpoint`` [False]: the paper normalises only ``q_E``;
* ``compliance`` [0]: constraint-force mixing ``gamma_k += c D_kk P_k`` (rigid contact at 0),
  for problems whose rigid solution is not unique (:class:`MoreauOptions`).

Derivatives: the contact solve is differentiated by the implicit function theorem at its fixed
point (:func:`solve_contact_problem`, a ``custom_jvp``; reverse mode through the transposed
tangent solve), regularised by ``implicit_regularization`` where the impulses are not unique;
everything else in the step is differentiated directly, so ``jax.grad`` of a run's outcome works
(measured on the block of ``tests/test_contact.py``: d(stop distance)/d(mu) through 300 steps
equals central differences to 1e-6 and the closed form to O(dt)).
"""

from __future__ import annotations

import abc
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from .base import AbstractStepper
from .results import Trajectory

#: impulse components of one contact: normal, two tangential, two rolling
N_COMPONENTS = 5
METHODS = ("gauss_seidel", "jacobi")
R_FACTORS = ("scaled", "absolute")
FRICTION_PROX = ("euclidean", "scaled")
CRITERIA = ("energy", "impulses")


def _static_choice(owner, name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{owner}.{name} must be one of {list(allowed)}, got {value!r}")


def _check_number(owner, name, value, unit, lower=0.0, strict=False, upper=None):
    if isinstance(value, jax.core.Tracer):
        return
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.{name} must be a number [{unit}], got {value!r}") from None
    bad = not jnp.isfinite(x) or (x <= lower if strict else x < lower) or (upper is not None and x > upper)
    if bad:
        rng = f"{'>' if strict else '>='} {lower:g}" + (f" and <= {upper:g}" if upper is not None else "")
        raise ValueError(f"{owner}.{name} must be a finite number {rng} [{unit}], got {x!r}")


class MoreauOptions(eqx.Module):
    """Options of the Moreau stepper and of its contact solver (module docstring, which gives
    the paper's values and the defaults).

    Attributes:
        method: ``'gauss_seidel'`` or ``'jacobi'`` (the paper's) (static).
        r_factors: ``'scaled'`` (``relaxation / D_kk``) or ``'absolute'`` (``r``) (static).
        friction_prox: ``'euclidean'`` (the paper's) or ``'scaled'`` (static).
        r: ``(3,)`` the absolute r-factors ``(r_N, r_T, r_V)`` [kg], > 0 (paper: 0.1, 0.01, 0.05).
        relaxation: ``beta`` of the scaled r-factors, in ``(0, 2)``.
        rtol, atol: stopping tolerance on the change per sweep [-], [N s] (``'impulses'``) or
            [sqrt(kg) m/s] (``'energy'``).
        max_iterations: most sweeps per step (static).
        ellipse_iterations: Newton steps of the Euclidean ellipse projection (static).
        restitution_velocity: approach speed [m/s] below which impacts are plastic, >= 0.
        projection_iterations: Gauss-Newton steps projecting the joints after a step (static).
        criterion: ``'energy'`` or ``'impulses'`` (the paper's (93)) (static; module docstring).
        friction_bound: ``'new'`` (``P_N^(k+1)``) or ``'old'`` (``P_N^(k)``) sizes the friction sets
            in a sweep (static).
        forces_at: ``'midpoint'`` ``h(q_M, u_A, t_M)`` or ``'start'`` ``h(q_A, u_A, t_A)`` (static).
        normalize_midpoint: normalise the quaternions of ``q_M`` (static; the paper: no).
        active_margin: contacts with ``g_N(q_M) <= active_margin`` [m], >= 0, are active; an
            open one may approach by what closes it, ``xi_N = gamma_N + e gamma_N,A + 2
            max(g_N(q_M), 0) / dt`` (the paper: 0).
        implicit_regularization: ``eps`` >= 0, the relative shift of the implicit-differentiation
            system of the contact solve (:func:`solve_contact_problem`; only derivatives use it).
        compliance: ``c`` >= 0, constraint-force mixing relative to the Delassus diagonal: every
            contact velocity gets ``+ c D_kk P_k`` (0: the paper's rigid contact). With redundant
            contacts (the snake: two spheres per link, more normal rows than vertical degrees of
            freedom) rigid Coulomb contact can have a continuum of solutions with different
            velocities, and the one the iteration finds depends on its start (measured on a
            4-link snake step: three exact fixed points, residual 1e-16, with sliding velocities
            differing by 5-100 %); ``c > 0`` makes the problem strongly monotone where friction
            is small, so the solution, and its derivative, are unique (a sinking speed of ``c D_kk
            P_N``, e.g. ~1e-8 m/s for a resting link at ``c = 1e-6``).
    """

    method: str = eqx.field(static=True, default="gauss_seidel")
    r_factors: str = eqx.field(static=True, default="scaled")
    friction_prox: str = eqx.field(static=True, default="euclidean")
    r: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=(0.1, 0.01, 0.05))
    relaxation: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=1.0)
    rtol: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=1e-6)
    atol: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=1e-14)
    max_iterations: int = eqx.field(static=True, default=5000)
    ellipse_iterations: int = eqx.field(static=True, default=12)
    restitution_velocity: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=0.0)
    projection_iterations: int = eqx.field(static=True, default=2)
    criterion: str = eqx.field(static=True, default="energy")
    friction_bound: str = eqx.field(static=True, default="new")
    forces_at: str = eqx.field(static=True, default="midpoint")
    normalize_midpoint: bool = eqx.field(static=True, default=False)
    active_margin: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=0.0)
    implicit_regularization: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=1e-10)
    compliance: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, jnp.float64), default=0.0)

    def __check_init__(self):
        o = "MoreauOptions"
        _static_choice(o, "method", self.method, METHODS)
        _static_choice(o, "r_factors", self.r_factors, R_FACTORS)
        _static_choice(o, "friction_prox", self.friction_prox, FRICTION_PROX)
        _static_choice(o, "criterion", self.criterion, CRITERIA)
        _static_choice(o, "friction_bound", self.friction_bound, ("new", "old"))
        _static_choice(o, "forces_at", self.forces_at, ("midpoint", "start"))
        _static_choice(o, "normalize_midpoint", self.normalize_midpoint, (False, True))
        _check_number(o, "active_margin", self.active_margin, "m")
        _check_number(o, "implicit_regularization", self.implicit_regularization, "-")
        _check_number(o, "compliance", self.compliance, "-")
        if not isinstance(self.r, jax.core.Tracer):
            if self.r.shape != (3,) or not bool(jnp.all(self.r > 0)) or not bool(jnp.all(jnp.isfinite(self.r))):
                raise ValueError(f"{o}.r must be 3 finite numbers > 0 (r_N, r_T, r_V) [kg], got {self.r.tolist()!r}")
        _check_number(o, "relaxation", self.relaxation, "-", 0.0, strict=True, upper=2.0)
        _check_number(o, "rtol", self.rtol, "-")
        _check_number(o, "atol", self.atol, "N s")
        _check_number(o, "restitution_velocity", self.restitution_velocity, "m/s")
        for name in ("max_iterations", "ellipse_iterations", "projection_iterations"):
            v = getattr(self, name)
            lo = 0 if name == "projection_iterations" else 1
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{o}.{name} must be an integer >= {lo}, got {v!r}")


class StabilityWarning(UserWarning):
    """A step ``dt`` beyond the stability limit of a model's explicit forces (e.g. a stiff PD
    loop, :meth:`jaxrod.scenes.snake.CardanPD.check_dt`): the run may blow up with every contact
    solve converged."""


def pd_step_matrix(dt, mass, stiffness, damping, implicit=False):
    """``(2, 2)`` amplification matrix of one Moreau midpoint step of the linear loop ``mass x'' =
    -stiffness x - damping x'`` on ``(x, v)`` (numpy, float64): explicit (the force at ``(x_M,
    v_A)``) or linear-implicit (at ``(x_M + dt/2 v_E, v_E)``, module docstring).

    Args: ``dt`` [s], ``mass`` [kg or kg m^2], ``stiffness`` [N/m or N m/rad], ``damping`` [N s/m or
    N m s/rad], all > 0 numbers. Returns ``T`` with ``(x_E, v_E) = T (x_A, v_A)``.
    """
    import numpy as np

    a, b = dt * stiffness / mass, dt * damping / mass
    if implicit:  # v_E (1 + b + dt a / 2) = v_A - a x_M, x_M = x_A + dt/2 v_A
        den = 1.0 + b + 0.5 * dt * a
        vx, vv = -a / den, (1.0 - 0.5 * dt * a) / den
    else:  # v_E = v_A - a x_M - b v_A
        vx, vv = -a, 1.0 - b - 0.5 * dt * a
    # x_E = x_M + dt/2 v_E
    return np.array([[1.0 + 0.5 * dt * vx, 0.5 * dt + 0.5 * dt * vv], [vx, vv]])


def pd_stable_dt(mass, stiffness, damping):
    """Largest ``dt`` [s] at which the EXPLICIT Moreau step of ``mass x'' = -stiffness x - damping
    x'`` has spectral radius <= 1 (:func:`pd_step_matrix`; bisection, relative 1e-9); ``2 /
    omega_n`` without damping, less with it."""
    import numpy as np

    def ok(dt):
        return np.max(np.abs(np.linalg.eigvals(pd_step_matrix(dt, mass, stiffness, damping)))) <= 1.0 + 1e-12

    lo, hi = 0.0, 2.0 / np.sqrt(stiffness / mass)
    while ok(hi):  # (damping never raises the limit above 2 / omega_n here, but be safe)
        lo, hi = hi, 2.0 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


# ---- prox operators -------------------------------------------------------------------------------
def prox_disk(x, radius):
    """Euclidean projection of ``x`` ``(2,)`` on the disk ``|y| <= radius`` (``radius >= 0``)."""
    n = jnp.sqrt(jnp.sum(x * x) + 1e-300)
    return x * jnp.minimum(1.0, radius / n)


def prox_ellipse(x, semi_axes, iterations=12):
    """Euclidean projection of ``x`` ``(2,)`` on the ellipse ``sum (y_k / a_k)^2 <= 1``.

    ``semi_axes`` ``(2,)`` ``a_k >= 0``. Outside points project to ``y_k = x_k a_k^2 / (a_k^2 + t)``
    with ``t > 0`` the root of ``f(t) = sum (a_k x_k / (a_k^2 + t))^2 - 1``; ``f`` is convex and
    decreasing, so Newton from the lower bound ``t0 = max_k (a_k |x_k| - a_k^2)`` (one term alone
    is 1 there, so ``f(t0) >= 0``) increases monotonically to the root (exact at ``t0`` for a disk;
    the root is below ``|(a_1 x_1, a_2 x_2)|``, so the bracket is tight). Measured against 200
    steps on 20 000 random points per axis ratio: 12 steps agree to 1e-8 of ``a_max`` up to ratio
    1000 (the earlier bound ``a_min |x| - a_max^2`` needed far more beyond ratio 5). Degenerate axes: ``a = 0``
    gives 0; one zero axis, the segment along the other.
    """
    a = jnp.asarray(semi_axes)
    amax, amin = jnp.max(a), jnp.min(a)
    s = jnp.where(amax > 0, amax, 1.0)
    # degenerate ellipses take the other branches below; give them unit axes here so that the
    # unused branch stays finite (a NaN there would poison reverse-mode derivatives)
    degenerate = amin <= 1e-12 * amax
    xs, as_ = x / s, jnp.where(degenerate, jnp.ones_like(a), a / s)  # scaled: as_ in [0, 1]
    ratio2 = jnp.where(as_ > 0, (xs / jnp.where(as_ > 0, as_, 1.0)) ** 2, jnp.where(xs != 0, jnp.inf, 0.0))
    inside = jnp.sum(ratio2) <= 1.0
    a2 = as_ * as_
    # f(t0) >= 0: the largest single term alone is 1 at t = a_k |x_k| - a_k^2
    t0 = jnp.maximum(0.0, jnp.max(as_ * jnp.abs(xs) - a2)) + 1e-300

    def newton(_, t):
        d = a2 + t
        f = jnp.sum(a2 * xs * xs / (d * d)) - 1.0
        fp = -2.0 * jnp.sum(a2 * xs * xs / (d * d * d))
        return jnp.maximum(t - f / jnp.where(fp < 0, fp, -1.0), t)

    t = jax.lax.fori_loop(0, iterations, newton, t0)
    y_out = xs * a2 / (a2 + t)
    y = jnp.where(inside, xs, y_out) * s
    # one axis degenerate (a_min ~ 0): the segment along the other axis
    seg = jnp.where(a > 0, jnp.clip(x, -a, a), 0.0)
    y = jnp.where(degenerate, seg, y)
    return jnp.where(amax > 0, y, jnp.zeros_like(x))


def _prox_contact(x, P_old, r, gamma, mu, mu_v, friction_prox, ellipse_iterations, friction_bound="new"):
    """New impulses ``(5,)`` of one contact from ``x = P_old - r gamma`` (sets sized by the new
    ``P_N``, or by the old one with ``friction_bound='old'``)."""
    pn_new = jnp.maximum(x[0], 0.0)
    pn = pn_new if friction_bound == "new" else jnp.maximum(P_old[0], 0.0)
    if friction_prox == "euclidean":
        # prox in the metric R^-1, R = diag(r_T1, r_T2): z = R^-1/2 y maps the ellipse to the
        # ellipse of semi-axes a / sqrt(r) (the Euclidean projection when r_T1 = r_T2)
        sq = jnp.sqrt(r[1:3])
        pt = sq * prox_ellipse(x[1:3] / sq, mu * pn / sq, ellipse_iterations)
    else:  # S proj_disk(S^-1 P - r' S gamma): the metric R = r' S^2, r' = min_k r_Tk / mu_k^2 so
        # that no component steps further than its own r_Tk
        ratio = jnp.where(mu > 0, r[1:3] / jnp.where(mu > 0, mu * mu, 1.0), jnp.inf)
        rs = jnp.where(jnp.isfinite(jnp.min(ratio)), jnp.min(ratio), 0.0)
        z = jnp.where(mu > 0, P_old[1:3] / jnp.where(mu > 0, mu, 1.0), 0.0) - rs * mu * gamma[1:3]
        pt = mu * prox_disk(z, pn)
    sv = jnp.sqrt(r[3:5])
    # without rolling friction (mu_V = 0, the scenes' default) the disk is a point: P_V = 0, which
    # the projection also returns (exactly), at the cost of its Newton loop in every sweep
    pv = jax.lax.cond(mu_v > 0, lambda: sv * prox_ellipse(x[3:5] / sv, mu_v * pn / sv, ellipse_iterations),
                      lambda: jnp.zeros_like(x[3:5]))
    return jnp.concatenate([pn_new[None], pt, pv])


class ContactProblem(eqx.Module):
    """The velocity-level contact problem of one step, ``gamma = b + D P`` (``(n_c, 5)``), with
    the contact parameters. ``offset`` adds the restitution term to the normal velocity."""

    b: jax.Array  # (n_c, 5) [m/s]
    D: jax.Array  # (n_c, 5, n_c, 5) [1/kg]
    offset: jax.Array  # (n_c, 5) [m/s]
    active: jax.Array  # (n_c,) bool
    mu: jax.Array  # (n_c, 2)
    mu_v: jax.Array  # (n_c,)


def _r_factors(problem, options):
    nc = problem.b.shape[0]
    if options.r_factors == "absolute":
        r = options.r
        return jnp.broadcast_to(jnp.stack([r[0], r[1], r[1], r[2], r[2]]), (nc, N_COMPONENTS))
    diag = jnp.einsum("aiai->ai", problem.D)
    return options.relaxation / jnp.maximum(diag, 1e-300)


def _change(P_new, P):
    d = P_new - P
    return (jnp.sqrt(jnp.sum(d[:, 0] ** 2)) + jnp.sqrt(jnp.sum(d[:, 1:3] ** 2))
            + jnp.sqrt(jnp.sum(d[:, 3:5] ** 2)))


def _gamma(problem, P):
    """``(n_c, 5)`` end velocities ``b + offset + D P`` [m/s] of the impulses ``P``."""
    return problem.b + problem.offset + jnp.einsum("aibj,bj->ai", problem.D, P)


def _jacobi_map(problem, P, r, options):
    """One simultaneous (Jacobi) sweep ``F(P) = prox(P - r gamma(P))`` (zero on inactive contacts):
    the converged impulses are its fixed point ``P = F(P)`` for any positive ``r``."""
    g = _gamma(problem, P)
    prox = jax.vmap(lambda x, p, rr, gg, mu, mv: _prox_contact(x, p, rr, gg, mu, mv, options.friction_prox,
                                                              options.ellipse_iterations, options.friction_bound))
    return jnp.where(problem.active[:, None], prox(P - r * g, P, r, g, problem.mu, problem.mu_v), 0.0)


def solve_contact_problem(problem: ContactProblem, P0, options: MoreauOptions):
    """The converged impulses of the contact problem, differentiable: the forward pass is
    :func:`iterate_contact_problem`; derivatives (``jax.jvp``, ``jax.grad``) come from the implicit
    function theorem at the fixed point ``P = F(P; problem)`` of the prox map (:func:`_jacobi_map`),
    never from the iterations:

    ``(I - dF/dP + eps I) dP = dF/dproblem . dproblem``

    with ``F`` taken with the r-factors ``r_k = 1 / D_kk`` (any ``r > 0`` has the same fixed point;
    these make ``I - dF/dP`` of order one, so ``eps`` = ``MoreauOptions.implicit_regularization``
    is relative), solved densely (LU; ``(5 n_c)^2``). Where friction sticks, ``I - dF/dP = R D`` is
    singular when the contact impulses are not unique (more sticking rows than free velocities:
    the resting snake, a box on four corners); the shift ``eps`` picks the solution nearest zero in
    the ``R^-1`` norm, and since ``D x = 0`` exactly when ``Y x = 0`` (``D = W^T Y``, module
    docstring) the derivatives of the end VELOCITIES (and so of every later state) are the exact
    ones, up to ``O(eps)``; the derivatives of the individual impulses along the indeterminate
    combinations are not meaningful (they are of order ``1 / eps``). The warm start ``P0`` gets no
    derivative (the solution does not depend on it). The derivative is the classical one where the
    contact modes (open / stick / slip) do not change under the perturbation, and a generalised
    (one-sided, piecewise) one at mode switches, as the prox map's own derivative is there.

    Args / Returns: as :func:`iterate_contact_problem`.
    """
    arrays, static = eqx.partition(options, eqx.is_array)
    P, aux = _solve_implicit(static, problem, P0, arrays)
    aux = jax.lax.stop_gradient(aux)
    return P, aux[0].astype(jnp.int32), aux[1], aux[2] > 0.5


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _solve_implicit(static, problem, P0, option_arrays):
    """``(P, aux)``, ``aux = (sweeps, change, converged)`` as floats (a custom rule's outputs
    must be floating point to carry a zero tangent)."""
    P, k, err, ok = iterate_contact_problem(problem, P0, eqx.combine(option_arrays, static))
    return P, jnp.stack([k.astype(P.dtype), err.astype(P.dtype), ok.astype(P.dtype)])


@_solve_implicit.defjvp
def _solve_implicit_jvp(static, primals, tangents):
    problem, P0, option_arrays = primals
    options = eqx.combine(option_arrays, static)
    P, aux = _solve_implicit(static, problem, P0, option_arrays)
    diag = jnp.einsum("aiai->ai", problem.D)
    usable = problem.active[:, None] & (diag > 0)
    r = jnp.where(usable, 1.0 / jnp.where(usable, diag, 1.0), 1.0)
    # differentiate through the floating-point leaves of the problem only (not the active mask)
    floats, rest = eqx.partition(problem, eqx.is_inexact_array)
    dfloats, _ = eqx.partition(tangents[0], eqx.is_inexact_array)

    def F(P_, fl):
        return _jacobi_map(eqx.combine(fl, rest), P_, r, options)

    _, rhs = jax.jvp(lambda fl: F(P, fl), (floats,), (dfloats,))
    n = P.size
    J = jax.jacfwd(lambda z: F(z.reshape(P.shape), floats).ravel())(P.ravel())
    eye = jnp.eye(n, dtype=P.dtype)
    A = eye - J + options.implicit_regularization * eye
    lu = jsl.lu_factor(A)
    dP = jax.lax.custom_linear_solve(
        lambda x: A @ x, rhs.ravel(), solve=lambda _, b: jsl.lu_solve(lu, b),
        transpose_solve=lambda _, b: jsl.lu_solve(lu, b, trans=1)).reshape(P.shape)
    return (P, aux), (dP, jnp.zeros_like(aux))


def iterate_contact_problem(problem: ContactProblem, P0, options: MoreauOptions):
    """Projected fixed-point iteration on the prox equations (module docstring); not
    differentiable (a ``lax.while_loop``; :func:`solve_contact_problem` is).

    Args:
        problem: :class:`ContactProblem`.
        P0: ``(n_c, 5)`` start impulses [N s] (warm start; zeroed on inactive contacts).
        options: :class:`MoreauOptions`.
    Returns:
        ``(P (n_c, 5) [N s], iterations, change of the last sweep, converged)``; the change in
        [N s] (``'impulses'``) or [sqrt(kg) m/s] (``'energy'``).
    """
    r = _r_factors(problem, options)
    P0 = jnp.where(problem.active[:, None], P0, 0.0)

    if options.method == "jacobi":
        def sweep(P):
            return _jacobi_map(problem, P, r, options)
    else:
        # only the active contacts, in index order: an inactive one has zero rows and columns in D
        # (W is masked) and keeps P = 0, so visiting it changes nothing (the same iterates; runs
        # equal to round-off, 1e-14 m) and skipping it saves its prox (sidewinding: 4 of 22 spheres
        # touch; the warm 0.75 s run of tests/test_snake.py 4.96 -> 2.77 s CPU)
        order = jnp.argsort(~problem.active, stable=True)
        n_active = jnp.sum(problem.active)

        def sweep(P):
            def one(i, P):
                a = order[i]
                g = problem.b[a] + problem.offset[a] + jnp.einsum("ibj,bj->i", problem.D[a], P)
                new = _prox_contact(P[a] - r[a] * g, P[a], r[a], g, problem.mu[a], problem.mu_v[a],
                                    options.friction_prox, options.ellipse_iterations, options.friction_bound)
                return P.at[a].set(new)

            return jax.lax.fori_loop(0, n_active, one, P)

    if options.criterion == "energy":
        # sqrt(dP^T D dP): twice the kinetic energy of the velocity change, blind to the impulse
        # combinations that move nothing (redundant contacts on a mechanism)
        def size(dP):
            return jnp.sqrt(jnp.maximum(jnp.einsum("ai,aibj,bj->", dP, problem.D, dP), 0.0) + 1e-300)

        def tol(P):
            return options.atol + options.rtol * size(P)

        def change(P_new, P):
            return size(P_new - P)
    else:
        def tol(P):
            return options.atol + options.rtol * jnp.sqrt(jnp.sum(P * P))

        change = _change

    def cond(c):
        k, P, err = c
        return (k == 0) | ((k < options.max_iterations) & (err > tol(P)) & jnp.isfinite(err))

    def body(c):
        k, P, _ = c
        P_new = sweep(P)
        return k + 1, P_new, change(P_new, P)

    inf = jnp.asarray(jnp.inf, P0.dtype)
    k, P, err = jax.lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), P0, inf))
    converged = (err <= tol(P)) & jnp.all(jnp.isfinite(P))
    return P, k, err, converged


# ---- the model interface ---------------------------------------------------------------------------
class MoreauState(eqx.Module):
    """State of a Moreau model (a restart point).

    Attributes:
        q: coordinates (model-specific shape; rigid bodies ``(n_bodies, 7)``: position [m] and
            scalar-first quaternion).
        u: velocities (rigid bodies ``(n_bodies, 6)``: world velocity [m/s], body-frame angular
            velocity [rad/s]).
        impulses: ``(n_c, 5)`` warm-start store [N s] (each contact's impulses of the last step
            it was active).
    """

    q: jax.Array
    u: jax.Array
    impulses: jax.Array


class AbstractMoreauModel(eqx.Module):
    """What :class:`MoreauStepper` asks of a model. ``q`` and ``u`` are arrays of model-chosen
    shapes; ``u`` flattens to the ``n_dof`` generalised velocities the Jacobians act on.

    ``stepper(scheme=None, solver=None, fallback=...)`` returns ``MoreauStepper(self)``.
    """

    options: eqx.AbstractVar[MoreauOptions]

    def stepper(self, scheme=None, solver=None, *, fallback=False):
        if scheme is not None and scheme != "moreau":
            raise ValueError(f"{type(self).__name__} is integrated by Moreau time stepping: scheme must be None or "
                             f"'moreau', got {scheme!r} (set options=MoreauOptions(...) on the model instead)")
        if solver is not None:
            raise ValueError(f"{type(self).__name__}: solver must be None (the contact solver is configured by "
                             f"the model's options=MoreauOptions(...)), got {solver!r}")
        return MoreauStepper(self)

    @property
    @abc.abstractmethod
    def n_bilateral(self) -> int:
        """Number of joint constraint rows ``n_J``."""

    @abc.abstractmethod
    def initial_state(self):
        """The initial :class:`MoreauState`."""

    @abc.abstractmethod
    def advance(self, q, u, h):
        """``q + h F(q) u`` (explicit, kinematic map at ``q``) for a time ``h`` [s]."""

    @abc.abstractmethod
    def normalize(self, q):
        """``q`` with its redundant coordinates made consistent again (unit quaternions)."""

    def correct(self, q, t):
        """The model's own position correction of a normalised end position at time ``t`` [s],
        or ``None`` (default) for the generic joint projection of the stepper."""
        return None

    @abc.abstractmethod
    def constraint_values(self, q, t):
        """``(n_J,)`` joint constraint values ``g_J(q, t)``."""

    @abc.abstractmethod
    def displace(self, q, du):
        """``q`` moved by the velocity-shaped increment ``du`` (a unit-time motion)."""

    @abc.abstractmethod
    def inverse_mass(self, q, X):
        """``M^{-1} X`` for ``X`` ``(n_dof, k)``."""

    @abc.abstractmethod
    def smooth_forces(self, q, u, t):
        """``(n_dof,)`` generalised smooth forces ``h`` (gravity, gyroscopic, applied, controllers)."""

    @abc.abstractmethod
    def bilateral(self, q, t):
        """``(W_J (n_dof, n_J), dg_J/dt (n_J,), keep (n_J,))``: joint Jacobian, rheonomic rate and
        a 0/1 mask of the independent rows."""

    @abc.abstractmethod
    def unilateral(self, q):
        """``(gaps (n_c,) [m], W (n_dof, n_c, 5), mu (n_c, 2), mu_v (n_c,), restitution (n_c,))``."""

    @abc.abstractmethod
    def observe_state(self, q, u):
        """Frame entries of a state: at least ``positions``."""

    def implicit_forces(self, q, u, t):
        """``None`` (default) or the ``(n_dof,)`` generalised forces the stepper treats
        linear-implicitly (stiff controllers, e.g. :class:`~jaxrod.scenes.snake.CardanPD` with
        ``implicit=True``), NOT included in :meth:`smooth_forces`. They are linearised in the end
        velocity and the end position of the step (module docstring, "Linear-implicit forces")."""
        return None

    def check_dt(self, dt):
        """Warn (or raise) when ``dt`` [s] is beyond what the model's explicit forces can take
        (default: nothing). Called by :func:`jaxrod.simulate` with a concrete ``dt``."""
        return None


class ContactTrajectory(Trajectory):
    """:class:`~jaxrod.integrate.Trajectory` of a Moreau run. Extra fields, per saved frame (the
    step that ended there; zeros in the initial frame): ``impulses`` ``(T, n_c, 5)`` contact
    impulses ``(P_N, P_T1, P_T2, P_V1, P_V2)`` [N s] (divide by ``dt`` for mean forces),
    ``joint_impulses`` ``(T, n_J)``, ``gaps`` ``(T, n_c)`` [m] at the end of the step, ``active``
    ``(T, n_c)`` the contacts active in the step."""

    impulses: jax.Array | None = None
    joint_impulses: jax.Array | None = None
    gaps: jax.Array | None = None
    active: jax.Array | None = None


class MoreauStepper(AbstractStepper):
    """:class:`~jaxrod.integrate.base.AbstractStepper` of an :class:`AbstractMoreauModel`
    (module docstring). Carry: ``(q, u, stored impulses, impulses of the step, joint impulses,
    active)``; the stats are ``(converged, sweeps, 0, last change [N s], 0, 0)``."""

    model: AbstractMoreauModel
    #: what a failed step's ConvergenceError names and advises (see results._failure_report)
    failure = ("the contact (prox) iteration", "last impulse change [N s]",
               "Try a smaller dt, more MoreauOptions.max_iterations or a looser MoreauOptions.rtol")

    def init(self, state, t0, dt):
        nc = state.impulses.shape[0]
        nj = self.model.n_bilateral
        return (state.q, state.u, state.impulses, jnp.zeros_like(state.impulses),
                jnp.zeros(nj, state.q.dtype), jnp.zeros(nc, bool))

    def start_state(self, state0, t0, *, throw=True, progress=False):
        return self.model.initial_state() if state0 is None else state0

    def describe(self):
        o = self.model.options
        return f"{type(self.model).__name__}, Moreau midpoint, {o.method}"

    def check_dt(self, dt):
        return self.model.check_dt(dt)

    def step(self, carry, t, dt):
        m, o = self.model, self.model.options
        qA, uA, store = carry[:3]
        shape = uA.shape
        u_a = jnp.ravel(uA)
        qM = m.advance(qA, uA, 0.5 * dt)
        if o.normalize_midpoint:
            qM = m.normalize(qM)
        tM = t + 0.5 * dt
        gaps, W, mu, mu_v, e = m.unilateral(qM)
        nd, nc = W.shape[0], W.shape[1]
        active = gaps <= o.active_margin
        W = W * active[None, :, None]
        Wf = W.reshape(nd, nc * N_COMPONENTS)
        qF, tF = (qM, tM) if o.forces_at == "midpoint" else (qA, t)
        h = jnp.ravel(m.smooth_forces(qF, uA, tF))
        f_imp = m.implicit_forces(qF, uA, tF)
        if f_imp is None:
            def minv(X):
                return m.inverse_mass(qM, X)
        else:
            # linear-implicit forces f(q_E, u_E) ~ f0 + K_u (u_E - u_A) + K_q (q_E - q_F), with
            # q_E - q_F = c_A u_A + c_E u_E (midpoint: q_E = q_M + dt/2 u_E): the mass matrix
            # becomes M - dt (K_u + c_E K_q) and the force f0 + (c_A + c_E) K_q u_A
            c_A, c_E = (0.0, 0.5 * dt) if o.forces_at == "midpoint" else (0.5 * dt, 0.5 * dt)
            nd0 = u_a.shape[0]

            def fu(uu):
                return jnp.ravel(m.implicit_forces(qF, uu.reshape(shape), tF))

            def fq(du):
                return jnp.ravel(m.implicit_forces(m.displace(qF, du.reshape(shape)), uA, tF))

            K_u = jax.jacfwd(fu)(u_a)
            K_q = jax.jacfwd(fq)(jnp.zeros_like(u_a))
            h = h + jnp.ravel(f_imp) + (c_A + c_E) * (K_q @ u_a)
            stiff = dt * (K_u + c_E * K_q)
            lu_m = jsl.lu_factor(jnp.eye(nd0, dtype=u_a.dtype) - m.inverse_mass(qM, stiff))

            def minv(X):  # (M - dt (K_u + c_E K_q))^-1 X
                return jsl.lu_solve(lu_m, m.inverse_mass(qM, X))
        WJ, gt, keep = m.bilateral(qM, tM)
        nj = WJ.shape[1]
        u_free = u_a + minv((h * dt)[:, None])[:, 0]
        B = minv(Wf)
        if nj:
            A = minv(WJ)
            G = WJ.T @ A
            G = keep[:, None] * keep[None, :] * G + jnp.diag(1.0 - keep)
            if f_imp is None:  # symmetric positive definite
                cho = jsl.cho_factor(G)

                def gsolve(b):
                    return jsl.cho_solve(cho, b)
            else:  # the linear-implicit mass matrix is not symmetric in general
                lu_g = jsl.lu_factor(G)

                def gsolve(b):
                    return jsl.lu_solve(lu_g, b)
            Y = B - A @ gsolve(keep[:, None] * (WJ.T @ B))
            rhs0 = keep * (WJ.T @ u_free + gt)
            u0 = u_free - A @ gsolve(rhs0)
        else:
            Y, u0 = B, u_free
        b = (Wf.T @ u0).reshape(nc, N_COMPONENTS)
        D = Wf.T @ Y
        # constraint-force mixing: gamma_k += compliance D_kk P_k (0: the paper's rigid contact)
        D = (D + o.compliance * jnp.diag(jnp.diag(D))).reshape(nc, N_COMPONENTS, nc, N_COMPONENTS)
        gamma_A = (Wf.T @ u_a).reshape(nc, N_COMPONENTS)[:, 0]
        e_eff = jnp.where(gamma_A < -o.restitution_velocity, e, 0.0)
        offset = jnp.zeros((nc, N_COMPONENTS), u_a.dtype).at[:, 0].set(
            e_eff * gamma_A + 2.0 * jnp.maximum(gaps, 0.0) / dt)
        problem = ContactProblem(b, D, offset, active, mu, mu_v)
        P, its, err, ok = solve_contact_problem(problem, store, o)
        Pf = jnp.ravel(P)
        u_e = u0 + Y @ Pf
        if nj:
            PJ = -gsolve(keep * (WJ.T @ u_free + gt + WJ.T @ (B @ Pf)))
        else:
            PJ = jnp.zeros((0,), u_a.dtype)
        uE = u_e.reshape(shape)
        qE = m.normalize(m.advance(qM, uE, 0.5 * dt))
        own = m.correct(qE, t + dt)
        if own is not None:  # the model's own correction (e.g. the paper's chain projection)
            qE = own
        elif nj and o.projection_iterations:
            # joint projection, chord Gauss-Newton with the step's midpoint Jacobian and factor:
            # dq = -M^-1 W_J G^-1 g_J(q_E) (the smallest move in the kinetic metric)
            def project(_, q):
                g = m.constraint_values(q, t + dt)
                return m.displace(q, (-(A @ gsolve(keep * g))).reshape(shape))

            qE = jax.lax.fori_loop(0, o.projection_iterations, project, qE)
        store = jnp.where(active[:, None], P, store)
        stats = (ok, its, jnp.asarray(0, jnp.int32), err, jnp.asarray(0.0), jnp.asarray(0, jnp.int32))
        return (qE, uE, store, P, PJ, active), stats

    def observe(self, carry):
        q, u, _, P, PJ, active = carry
        gaps = self.model.unilateral(q)[0]
        return {"q": q, "v": u, **self.model.observe_state(q, u), "impulses": P, "joint_impulses": PJ,
                "gaps": gaps, "active": active}

    def final(self, carry):
        q, u, store = carry[:3]
        return MoreauState(q, u, store)

    def trajectory(self, times, frames, stats, final, dt, valid):
        return ContactTrajectory(
            times=times, positions=frames["positions"], frames=frames.get("frames"), twist=None, q=frames["q"],
            v=frames["v"], stats=stats, final=final, dt=dt, valid=valid, impulses=frames["impulses"],
            joint_impulses=frames["joint_impulses"], gaps=frames["gaps"], active=frames["active"],
        )
