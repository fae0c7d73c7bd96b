"""Implicit time-difference schemes shared by all models.

Every scheme here discretises a second-order system ``r(q, q', q'', t) = 0`` (for a rod:
``M q'' - F(q, q', t) = 0``) with the end-of-step configuration ``q_{n+1}`` as the only unknown:

* :meth:`AbstractScheme.stage` maps ``q_{n+1}`` and the history to the point where the residual
  is evaluated, ``(q*, v*, a*, c)`` with ``t* = t_n + c dt``;
* :meth:`AbstractScheme.advance` builds the next history once ``q_{n+1}`` has converged;
* :meth:`AbstractScheme.predict` is the Newton initial guess.

So one Newton machinery serves every scheme, and a new scheme is a small Module. Schemes:

* :class:`BackwardEuler`   first order, strongly damping (L-stable).
* :class:`ImplicitMidpoint` second order, symplectic, no numerical damping.
* :class:`AverageVectorField` second order, energy conserving also for nonlinear rods (the
  midpoint's kinematics with the forces averaged over the step).
* :class:`BDFAlpha`        Till et al.'s BDF-alpha family ``x'_n = c0 x_n + c1 x_{n-1} + c2 x_{n-2} + d1 x'_{n-1}``;
  ``alpha = 0`` is BDF2, ``alpha = -0.5`` the trapezoid rule (see :func:`BDF2`, :func:`Trapezoid`).
* :class:`NewmarkBeta`     Newmark's family (average acceleration by default: beta 1/4, gamma 1/2).

Energy on nonlinear rods (``tests/test_long_run_energy.py``; 11-node DER cantilever swinging 10 %
of its length, ``T`` its first bending period): midpoint, trapezoid and Newmark average acceleration
conserve energy exactly only for linear systems; at ``dt = T/20`` they pump it into the unresolved
axial modes (after 10 periods: x1.14, x5.4, x2150; Newton fails from step 322, 233, 184), at
``dt = T/40`` they stay within 0.3 %, 0.04 %, 0.04 % for 60 periods. :class:`AverageVectorField`
stays within 1.1e-5 at ``T/20`` for 60 periods, at about the cost of midpoint.

First-order *implicit difference formulas* (Till et al. eq. 5) for models that discretise time
derivatives of individual fields rather than a second-order system in ``q`` (the Cosserat shooting
model differentiates velocities and strains on its arc-length grid):
``y'_i = c0 y_i + y^h_i`` with the history ``y^h_i = sum_k c_k y_{i-k} + d1 y'_{i-1}``. One Module,
:class:`DifferenceFormula`, holds the coefficients as array leaves (so backward Euler, BDF2, BDF3,
the trapezoid rule and BDF-alpha for any alpha all share one compiled program); build them with
:meth:`DifferenceFormula.backward_euler`, ``.bdf2``, ``.bdf3``, ``.trapezoid``, ``.bdf_alpha``.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class AbstractScheme(eqx.Module):
    """Interface of an implicit one-unknown time-stepping scheme (see module docstring)."""

    #: True when the scheme needs the initial acceleration (the caller then solves for it).
    needs_acceleration = False

    @abc.abstractmethod
    def init(self, q0, v0, a0, dt):
        """History at ``t0`` from position, velocity and acceleration (pytrees of equal structure)."""

    @abc.abstractmethod
    def stage(self, q_next, hist, dt):
        """``(q*, v*, a*, c)``: where the residual is evaluated, ``t* = t_n + c dt``."""

    @abc.abstractmethod
    def advance(self, q_next, hist, dt):
        """History after accepting ``q_next``."""

    def predict(self, hist, dt):
        """Initial Newton guess for ``q_{n+1}``."""
        q, v = hist[0], hist[1]
        return q + dt * v

    def current(self, hist):
        """``(q_n, v_n)`` stored in the history."""
        return hist[0], hist[1]

    def residual(self, model, q_next, hist, t, dt, aux):
        """The step's residual for ``q_{n+1}`` (step from ``t`` [s]): ``model.residual`` at the
        stage point. Schemes that average the residual over several points override this."""
        qs, vs, acc, c = self.stage(q_next, hist, dt)
        return model.residual(qs, vs, acc, t + c * dt, aux)

    def has_residual_points(self) -> bool:
        """Whether :meth:`residual_points` describes :meth:`residual` (static): true for the
        schemes that evaluate the model at their stage point, or average it over points."""
        return type(self).residual is AbstractScheme.residual

    def residual_points(self, q_next, hist, t, dt):
        """The step's residual as ``sum_k w_k model.residual(q_k, v_k, a_k, t_k)``: ``(w (K,),
        q (K, ...), v (K, ...), a (K, ...), t (K,))``, each point affine in ``q_next`` (so a
        model can assemble the step's Jacobian from its own stiffness, damping and mass, see
        :meth:`jaxrod.integrate.implicit.AbstractImplicitModel.stage_jacobian`). Only where
        :meth:`has_residual_points`."""
        qs, vs, acc, c = self.stage(q_next, hist, dt)
        one = jnp.ones((1,), jnp.result_type(q_next))
        return one, qs[None], vs[None], acc[None], (t + c * dt) * one


class BackwardEuler(AbstractScheme):
    """Backward (implicit) Euler: ``v_{n+1} = (q_{n+1} - q_n)/dt``, ``a = (v_{n+1} - v_n)/dt``.

    First order and L-stable: damps oscillations numerically (DisMech's default for demos).
    The history keeps the last acceleration only for the Newton predictor.
    """

    def init(self, q0, v0, a0, dt):
        return (q0, v0, a0)

    def stage(self, q_next, hist, dt):
        q, v, _ = hist
        v1 = (q_next - q) / dt
        return q_next, v1, (v1 - v) / dt, 1.0

    def advance(self, q_next, hist, dt):
        q, v, _ = hist
        v1 = (q_next - q) / dt
        return (q_next, v1, (v1 - v) / dt)

    def predict(self, hist, dt):
        q, v, a = hist
        return q + dt * v + dt * dt * a

    def difference_formula(self) -> DifferenceFormula:
        """The same scheme as a first-order :class:`DifferenceFormula` (for shooting models)."""
        return DifferenceFormula.backward_euler()


class _MidpointKinematics(AbstractScheme):
    """Kinematics shared by :class:`ImplicitMidpoint` and :class:`AverageVectorField`:
    ``q_{n+1} = q_n + dt (v_n + v_{n+1})/2``, stage velocity ``(v_n + v_{n+1})/2``, acceleration
    ``(v_{n+1} - v_n)/dt``; the history ``(q, v, a)`` keeps ``a`` only for the Newton predictor."""

    def init(self, q0, v0, a0, dt):
        return (q0, v0, a0)

    def stage(self, q_next, hist, dt):
        q, v, _ = hist
        v1 = 2.0 * (q_next - q) / dt - v
        return 0.5 * (q + q_next), 0.5 * (v + v1), (v1 - v) / dt, 0.5

    def advance(self, q_next, hist, dt):
        q, v, _ = hist
        v1 = 2.0 * (q_next - q) / dt - v
        return (q_next, v1, (v1 - v) / dt)

    def predict(self, hist, dt):
        q, v, a = hist
        return q + dt * v + 0.5 * dt * dt * a


class ImplicitMidpoint(_MidpointKinematics):
    """Implicit midpoint rule: forces at ``(q_n + q_{n+1})/2``, ``q_{n+1} = q_n + dt (v_n + v_{n+1})/2``.

    Second order and symplectic: no numerical damping of oscillations (DisMech's validation
    scheme; algebraically identical to its half-step backward Euler plus extrapolation).

    Not stable on geometrically nonlinear rods at large steps: with stiff unresolved (axial) modes
    energy is pumped into them although every step converges (11-node DER cantilever, 10 %
    amplitude: +14 % energy after 10 bending periods at ``dt = T/20``, x34 after 15; within 0.3 %
    over 60 periods at ``T/40``). :class:`AverageVectorField` (the default of
    :func:`jaxrod.simulate`) conserves energy there.
    The history keeps the last acceleration only for the Newton predictor.
    """



class AverageVectorField(_MidpointKinematics):
    """Energy-conserving midpoint: the average vector field (discrete-gradient) method.

    The same kinematics as :class:`ImplicitMidpoint` (``q_{n+1} = q_n + dt (v_n + v_{n+1})/2``,
    velocity ``(v_n + v_{n+1})/2``, acceleration ``(v_{n+1} - v_n)/dt``), but the residual is
    averaged over the straight segment from ``q_n`` to ``q_{n+1}`` instead of taken at its midpoint:
    ``M (v_{n+1} - v_n)/dt = int_0^1 F(q_n + s (q_{n+1} - q_n)) ds``, the integral by
    ``n_points``-point Gauss-Legendre quadrature. For a conservative force ``F = -grad E`` the
    integral is exactly ``-(E(q_{n+1}) - E(q_n)) / |q_{n+1} - q_n|^2 (q_{n+1} - q_n)`` along the
    step, so ``K + E`` is conserved to the quadrature error (zero for polynomial energies of degree
    up to ``2 n_points``), whatever the step size; viscous forces then only dissipate.

    Why not the plain midpoint rule on rods: it is symplectic, but in geometrically nonlinear
    elastodynamics with stiff modes (axial stretching of a bending rod, ``omega dt >> 1``) it is not
    stable: energy flows into the unresolved stiff modes and the run blows up (Simo & Tarnow 1992,
    Gonzalez & Simo 1996). Measured on an 11-node DER cantilever swinging 10 % of its length at
    ``dt = T/20`` (``T`` the first bending period; ``tests/test_long_run_energy.py``): midpoint
    energy +14 % after 10 periods, x34 after 15 (every step converged), trapezoid and Newmark
    average acceleration blow up earlier; this scheme stays within 1.1e-5 for 60 periods with the
    default Newton tolerance 1e-9 (3.3e-6 at 1e-12), and within 6.4e-6 when the rod also whirls
    and twists, so that the reference frames are transported every step. On linear problems it *is* implicit midpoint
    (the force is affine, its segment average is its midpoint value). Second order,
    time-reversible. The ``n_points`` residuals are one batched (``vmap``) evaluation: on the
    11-node rod it compiled and ran as fast as midpoint (2400 steps: 37 s vs 34 s CPU with
    compilation, 4.5 s vs 4.4 s without; a Python loop over the points took 61 s and 8.8 s).

    Attributes:
        n_points: Gauss-Legendre points on the segment (static; 2 is exact for quartic energies).
    """

    n_points: int = eqx.field(static=True, default=2)

    def __check_init__(self):
        if isinstance(self.n_points, bool) or not isinstance(self.n_points, (int, np.integer)) or self.n_points < 1:
            raise ValueError(f"AverageVectorField.n_points must be an integer >= 1, got {self.n_points!r}")

    def points(self):
        """Gauss-Legendre nodes on ``[0, 1]`` (fractions of the step) and their weights (sum 1)."""
        x, w = np.polynomial.legendre.leggauss(self.n_points)
        return 0.5 * (x + 1.0), 0.5 * w

    def residual(self, model, q_next, hist, t, dt, aux):
        _, vs, acc, _ = self.stage(q_next, hist, dt)
        return self.averaged_residual(model, hist[0], q_next, vs, acc, t, dt, aux, self.points()[0])

    def has_residual_points(self) -> bool:
        return True

    def residual_points(self, q_next, hist, t, dt):
        _, vs, acc, _ = self.stage(q_next, hist, dt)
        return self.averaged_points(hist[0], q_next, vs, acc, t, dt, self.points()[0])

    def averaged_points(self, q, q_next, vs, acc, t, dt, s):
        """The points and weights of :meth:`averaged_residual` (see
        :meth:`AbstractScheme.residual_points`)."""
        w = jnp.asarray(self.points()[1], dtype=jnp.result_type(q))
        s = jnp.asarray(s, dtype=jnp.result_type(q))
        K = w.shape[0]
        s = jnp.broadcast_to(s, (K,))
        qk = q[None] + s.reshape((K,) + (1,) * q.ndim) * (q_next - q)[None]
        rep = lambda x: jnp.broadcast_to(x[None], (K,) + x.shape)  # noqa: E731
        return w, qk, rep(vs), rep(acc), t + s * dt

    def averaged_residual(self, model, q, q_next, vs, acc, t, dt, aux, s):
        """``sum_k w_k model.residual(q + s_k (q_next - q), vs, acc, t + s_k dt)``: with every
        ``s_k = 1`` (and backward Euler's ``vs``, ``acc``) this is backward Euler's residual, which
        is how the fallback shares this one traced evaluation."""
        w = jnp.asarray(self.points()[1], dtype=jnp.result_type(q))
        s = jnp.asarray(s, dtype=jnp.result_type(q))
        dq = q_next - q
        # one batched residual over the points: compiles like a single evaluation
        rk = jax.vmap(lambda sk: model.residual(q + sk * dq, vs, acc, t + sk * dt, aux))(s)
        return jnp.tensordot(w, rk, axes=1)


class BDFAlpha(AbstractScheme):
    """Till et al.'s BDF-alpha scheme applied to both q -> v and v -> a.

    ``x'_n = c0 x_n + c1 x_{n-1} + c2 x_{n-2} + d1 x'_{n-1}`` with
    ``c0 = (1.5 + alpha)/(dt (1 + alpha))``, ``c1 = -2/dt``, ``c2 = (0.5 + alpha)/(dt (1 + alpha))``,
    ``d1 = alpha/(1 + alpha)``. ``alpha = 0`` gives BDF2, ``alpha = -0.5`` the trapezoid rule;
    the paper recommends ``alpha`` in ``[-0.5, 0]`` (less damping as alpha -> -0.5).

    Start-up: the fictitious states before ``t0`` are Taylor-extrapolated from ``(q0, v0, a0)``
    (``q_{-1} = q0 - dt v0 + dt^2 a0 / 2``, ``v_{-1} = v0 - dt a0``), which keeps the scheme
    second order from the first step and is exact for a system at rest.
    """

    alpha: float = 0.0
    needs_acceleration = True

    def __check_init__(self):
        if not (-0.5 <= float(self.alpha) <= 0.0):
            raise ValueError(
                f"BDFAlpha.alpha must lie in [-0.5, 0] (stable range of Till et al.), got {self.alpha}"
            )

    def coefficients(self, dt):
        """``(c0, c1, c2, d1)`` for time step ``dt`` [s]."""
        g0, g1, g2, _, d1 = _bdf_alpha_gammas(self.alpha)
        return g0 / dt, g1 / dt, g2 / dt, d1

    def difference_formula(self) -> DifferenceFormula:
        """The same scheme as a first-order :class:`DifferenceFormula` (for shooting models)."""
        return DifferenceFormula.bdf_alpha(self.alpha)

    def init(self, q0, v0, a0, dt):
        # history: (q_n, v_n, q_{n-1}, v_{n-1}, a_n)
        return (q0, v0, q0 - dt * v0 + 0.5 * dt * dt * a0, v0 - dt * a0, a0)

    def stage(self, q_next, hist, dt):
        q, v, qm, vm, a = hist
        c0, c1, c2, d1 = self.coefficients(dt)
        v1 = c0 * q_next + c1 * q + c2 * qm + d1 * v
        a1 = c0 * v1 + c1 * v + c2 * vm + d1 * a
        return q_next, v1, a1, 1.0

    def advance(self, q_next, hist, dt):
        q, v, _, _, _ = hist
        _, v1, a1, _ = self.stage(q_next, hist, dt)
        return (q_next, v1, q, v, a1)


def BDF2() -> BDFAlpha:
    """Second-order backward differentiation formula (``BDFAlpha(0)``)."""
    return BDFAlpha(0.0)


def Trapezoid() -> BDFAlpha:
    """Trapezoid rule (``BDFAlpha(-0.5)``): energy preserving for linear systems only.

    Like implicit midpoint it pumps energy into unresolved stiff modes of nonlinear rods (11-node
    DER cantilever at 10 % amplitude, ``dt = T/20``: x5.4 after 10 bending periods, first Newton
    failure at step 233; within 0.04 % over 60 periods at ``T/40``)."""
    return BDFAlpha(-0.5)


def _bdf_alpha_gammas(alpha):
    """Dimensionless ``(c0, c1, c2, c3) dt`` and ``d1`` of BDF-alpha (Till et al. sec. 2.2)."""
    a = alpha
    return (1.5 + a) / (1 + a), -2.0, (0.5 + a) / (1 + a), 0.0, a / (1 + a)


class DifferenceFormula(eqx.Module):
    """Implicit first-derivative formula ``y'_i = c0 y_i + c1 y_{i-1} + c2 y_{i-2} + c3 y_{i-3} + d1 y'_{i-1}``
    (Till, Aloi & Rucker 2019, eq. 5), with ``c_k = gamma_k / dt``.

    The current value enters only through ``c0 y_i``; everything else is the *history*
    ``y^h_i``, computed once per step (:meth:`history`) and reused by every shooting iteration.
    Works on any pytree ``y`` (e.g. a grid of velocities and strains).

    Attributes:
        gammas: ``(4,)`` dimensionless ``(c0, c1, c2, c3) * dt``.
        d1: coefficient of the previous derivative (dimensionless).

    Build with the named constructors; ``c0 + c1 + c2 + c3 = 0`` and
    ``-(c1 + 2 c2 + 3 c3) dt + d1 = 1`` (exact for constants and linear functions) are checked.
    """

    gammas: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=jnp.float64))
    d1: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=jnp.float64))

    def __check_init__(self):
        g = self.gammas
        if isinstance(g, jax.core.Tracer) or isinstance(self.d1, jax.core.Tracer):
            return
        g = np.asarray(g, float)
        d1 = float(np.asarray(self.d1))
        if g.shape != (4,):
            raise ValueError(f"DifferenceFormula.gammas must have shape (4,), got {g.shape}")
        if not (np.all(np.isfinite(g)) and np.isfinite(d1)) or g[0] <= 0:
            raise ValueError(f"DifferenceFormula needs finite coefficients with c0 > 0, got {g}, d1={d1}")
        if abs(g.sum()) > 1e-12 or abs(-(g[1] + 2 * g[2] + 3 * g[3]) + d1 - 1) > 1e-12:
            raise ValueError(f"DifferenceFormula coefficients {g}, d1={d1} are not consistent (first order)")

    # --- named constructors -------------------------------------------------------------
    @classmethod
    def backward_euler(cls) -> DifferenceFormula:
        """``y' = (y_i - y_{i-1})/dt``: first order, strongly damping (paper's tau = 0.13 s at 5 ms)."""
        return cls(jnp.array([1.0, -1.0, 0.0, 0.0]), jnp.asarray(0.0))

    @classmethod
    def bdf_alpha(cls, alpha) -> DifferenceFormula:
        """BDF-alpha of Alberdi Celaya & Anza (2013) as used by Till et al.; ``alpha`` in ``[-0.5, 0]``
        interpolates between the trapezoid rule (-0.5, no damping) and BDF2 (0)."""
        if not isinstance(alpha, jax.core.Tracer):
            a = float(alpha)
            if not (np.isfinite(a) and -0.5 <= a <= 0.0):
                raise ValueError(f"BDF-alpha needs alpha in [-0.5, 0] (Till et al. sec. 2.2), got {alpha}")
        g0, g1, g2, g3, d1 = _bdf_alpha_gammas(jnp.asarray(alpha, dtype=jnp.result_type(float)))
        return cls(jnp.stack([g0, jnp.asarray(g1, g0.dtype), g2, jnp.asarray(g3, g0.dtype)]), d1)

    @classmethod
    def bdf2(cls) -> DifferenceFormula:
        """Second-order BDF (``bdf_alpha(0)``), the paper's recommended default."""
        return cls.bdf_alpha(0.0)

    @classmethod
    def trapezoid(cls) -> DifferenceFormula:
        """Trapezoid rule (``bdf_alpha(-0.5)``): second order, no numerical damping, marginally stable."""
        return cls.bdf_alpha(-0.5)

    @classmethod
    def bdf3(cls) -> DifferenceFormula:
        """Third-order BDF; not A-stable (unstable for the 8.9 Hz benchmark below ~35 ms steps)."""
        return cls(jnp.array([11.0 / 6.0, -3.0, 1.5, -1.0 / 3.0]), jnp.asarray(0.0))

    def describe(self) -> str:
        """Human-readable name (host-side): ``backward Euler``, ``BDF2``, ``BDF3``, ``trapezoid``,
        ``BDF-alpha(a)``, or the coefficients."""
        g, d1 = np.asarray(self.gammas, float), float(np.asarray(self.d1))
        if np.allclose(g, [1, -1, 0, 0]) and d1 == 0:
            return "backward Euler"
        if np.allclose(g, [11 / 6, -3, 1.5, -1 / 3]) and d1 == 0:
            return "BDF3"
        if g[3] == 0 and g[1] == -2 and d1 > -1:
            a = d1 / (1 - d1)  # d1 = a / (1 + a)
            if np.allclose(g, [*_bdf_alpha_gammas(a)[:4]]):
                return "BDF2" if a == 0 else f"BDF-alpha({a:.4g})"
        if np.allclose(g, [2, -2, 0, 0]) and d1 == -1:
            return "trapezoid"
        return f"difference formula c*dt = {tuple(round(float(x), 6) for x in g)}, d1 = {d1:.6g}"

    # --- use --------------------------------------------------------------------------------
    def c0(self, dt):
        """Coefficient of the current value [1/s]."""
        return self.gammas[0] / dt

    def init(self, y0, ydot0=None):
        """History carrier at rest history: ``y_{-1} = y_{-2} = y_0`` and ``y'_0 = ydot0`` (default 0).

        The carrier is ``(y_i, y_{i-1}, y_{i-2}, y'_i)`` after step ``i``.
        """
        d0 = jax.tree_util.tree_map(jnp.zeros_like, y0) if ydot0 is None else ydot0
        return (y0, y0, y0, d0)

    def history(self, carrier, dt):
        """``y^h`` for the next step (the part of ``y'`` not proportional to the new value)."""
        y1, y2, y3, d = carrier
        g = self.gammas / dt
        return jax.tree_util.tree_map(lambda a, b, c, e: g[1] * a + g[2] * b + g[3] * c + self.d1 * e, y1, y2, y3, d)

    def derivative(self, y, yh, dt):
        """``y' = c0 y + y^h``."""
        c0 = self.c0(dt)
        return jax.tree_util.tree_map(lambda a, b: c0 * a + b, y, yh)

    def advance(self, carrier, y_new, yh, dt):
        """Carrier after accepting ``y_new`` (computed with history ``yh``)."""
        y1, y2, _, _ = carrier
        return (y_new, y1, y2, self.derivative(y_new, yh, dt))


class NewmarkBeta(AbstractScheme):
    """Newmark-beta: ``q_{n+1} = q_n + dt v_n + dt^2 ((1/2 - beta) a_n + beta a_{n+1})``,
    ``v_{n+1} = v_n + dt ((1 - gamma) a_n + gamma a_{n+1})``.

    Default: average acceleration (``beta = 1/4``, ``gamma = 1/2``), unconditionally stable and
    energy conserving for linear systems.

    ``start`` chooses the initial acceleration ``a_0``:

    * ``"consistent"`` (default): solve the equation of motion ``r(q0, v0, a0, t0) = 0`` for ``a0``.
    * ``"rest"``: ``a0 = 0``. For very stiff, viscous rods released far from equilibrium (the PCS
      CFRP scene) the consistent ``a0`` is a physical spike lasting ~``m/c`` (nanoseconds):
      carried into a millisecond step it puts ``dt a0 / 2`` into the velocity and Newton diverges;
      starting from ``a0 = 0`` lets the first step find the smooth acceleration itself.
    """

    beta: float = 0.25
    gamma: float = 0.5
    start: str = eqx.field(static=True, default="consistent")

    def __check_init__(self):
        if not (0.0 < float(self.beta) <= 0.5):
            raise ValueError(f"NewmarkBeta.beta must be in (0, 0.5], got {self.beta}")
        if not (0.0 <= float(self.gamma) <= 1.0):
            raise ValueError(f"NewmarkBeta.gamma must be in [0, 1], got {self.gamma}")
        if self.start not in ("consistent", "rest"):
            raise ValueError(f"NewmarkBeta.start must be 'consistent' or 'rest', got {self.start!r}")

    @property
    def needs_acceleration(self):
        return self.start == "consistent"

    def init(self, q0, v0, a0, dt):
        return (q0, v0, a0)

    def stage(self, q_next, hist, dt):
        q, v, a = hist
        a1 = (q_next - q - dt * v - dt * dt * (0.5 - self.beta) * a) / (self.beta * dt * dt)
        v1 = v + dt * ((1.0 - self.gamma) * a + self.gamma * a1)
        return q_next, v1, a1, 1.0

    def advance(self, q_next, hist, dt):
        _, v1, a1, _ = self.stage(q_next, hist, dt)
        return (q_next, v1, a1)

    def predict(self, hist, dt):
        q, v, a = hist
        return q + dt * v + 0.5 * dt * dt * a


SCHEMES = {
    "backward_euler": BackwardEuler,
    "implicit_midpoint": ImplicitMidpoint,
    "average_vector_field": AverageVectorField,
    "bdf2": BDF2,
    "trapezoid": Trapezoid,
    "newmark": NewmarkBeta,
}


def scheme_from_name(name: str) -> AbstractScheme:
    """Scheme by name (``backward_euler``, ``implicit_midpoint``, ``bdf2``, ``trapezoid``, ``newmark``)."""
    try:
        return SCHEMES[name]()
    except KeyError:
        raise ValueError(f"unknown time scheme {name!r}; choose one of {sorted(SCHEMES)}") from None


def _describe(value) -> str:
    return f"{value!r} ({type(value).__name__})"


def resolve_scheme(scheme, *, name: str = "scheme"):
    """A time-scheme instance from ``scheme``: ``None`` (kept: the caller's default), an
    :class:`AbstractScheme` instance, or a name such as
    ``"backward_euler"`` (see :func:`scheme_from_name`)."""
    from .explicit import EXPLICIT_SCHEMES, AbstractExplicitScheme  # explicit schemes: their models check them

    if scheme is None or isinstance(scheme, (AbstractScheme, DifferenceFormula, AbstractExplicitScheme)):
        return scheme
    if isinstance(scheme, str) and scheme in EXPLICIT_SCHEMES:
        return EXPLICIT_SCHEMES[scheme]()
    if isinstance(scheme, str):
        return scheme_from_name(scheme)
    if isinstance(scheme, type) and issubclass(scheme, (AbstractScheme, DifferenceFormula)):
        raise TypeError(f"{name} must be a scheme instance, e.g. {scheme.__name__}(), got the class {scheme.__name__}")
    raise TypeError(
        f"{name} must be a time scheme (e.g. jaxrod.BackwardEuler()) or one of the names {sorted(SCHEMES)}, "
        f"got {_describe(scheme)}"
    )
