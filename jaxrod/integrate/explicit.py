"""Explicit time steppers for models written as second-order ODEs on a manifold (rigid bodies in
joint coordinates, :class:`~jaxrod.system.joint_space.JointSpaceSystem`).

A model for these schemes (:class:`AbstractExplicitModel`) gives its accelerations
``a(q, v, t)`` and a local chart of its configuration space: ``displace(q0, x)`` is the point
``q0 (+) x`` reached from ``q0`` by the tangent vector ``x`` (plain addition for angles and
travels, ``Q0 exp(x)`` for a unit quaternion), and ``chart_rate(x, v)`` the rate ``dx/dt`` of
the chart coordinate that moves with velocity ``v`` (``dexp^-1``, the identity for a flat
coordinate). Each step integrates ``x' = chart_rate(x, v), v' = a(q0 (+) x, v, t)`` from
``x = 0`` in the chart at the step's start point (Runge-Kutta-Munthe-Kaas), so the classical
fourth-order scheme keeps its order on rotation groups and the quaternions stay unit.

Schemes:

* :class:`RK4`: the classical 4-stage Runge-Kutta method, 4 acceleration evaluations per step,
  4th order (MuJoCo's ``RK4`` integrator for the same equations; on the double pendulum and
  the revolute chains of ``benchmarks/chain_joint.py`` the two agree to the round-off).
* :class:`SemiImplicitEuler`: ``v1 = v0 + dt a(q0, v0, t)``, ``q1 = q0 (+) dt v1`` (symplectic
  Euler; MuJoCo's default ``Euler`` without its implicit damping), one evaluation, 1st order.

Neither scheme has a Newton solve: the per-step statistics report ``converged`` = every entry
of the new state finite, zero iterations. They suit non-stiff systems (rigid bodies, soft joint
springs); stiff springs, stops or rods want the implicit schemes of
:mod:`jaxrod.integrate.implicit` (a stiffness ``k`` on an inertia ``m`` needs ``dt <~ 2.8
sqrt(m / k)`` for RK4).
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax.numpy as jnp

from .base import AbstractStepper, State


class AbstractExplicitScheme(eqx.Module):
    """An explicit one-step scheme for :class:`AbstractExplicitModel` (no Newton solve)."""

    @abc.abstractmethod
    def advance(self, model, q, v, t, dt):
        """``(q1, v1)`` after one step of ``dt`` [s] from ``(q, v)`` at time ``t`` [s]."""


class RK4(AbstractExplicitScheme):
    """Classical fourth-order Runge-Kutta in the chart at the step's start (module docstring)."""

    def advance(self, model, q, v, t, dt):
        def f(x, w, tt):
            return model.chart_rate(x, w), model.acceleration(model.displace(q, x), w, tt)

        h = dt
        x0 = jnp.zeros_like(v)
        k1x, k1v = v, model.acceleration(q, v, t)
        k2x, k2v = f(0.5 * h * k1x, v + 0.5 * h * k1v, t + 0.5 * h)
        k3x, k3v = f(0.5 * h * k2x, v + 0.5 * h * k2v, t + 0.5 * h)
        k4x, k4v = f(x0 + h * k3x, v + h * k3v, t + h)
        x1 = (h / 6.0) * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        v1 = v + (h / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        return model.displace(q, x1), v1


class SemiImplicitEuler(AbstractExplicitScheme):
    """Symplectic (semi-implicit) Euler: new velocity first, then the position with it."""

    def advance(self, model, q, v, t, dt):
        v1 = v + dt * model.acceleration(q, v, t)
        return model.displace(q, dt * v1), v1


EXPLICIT_SCHEMES = {"rk4": RK4, "semi_implicit_euler": SemiImplicitEuler}


class AbstractExplicitModel(eqx.Module):
    """A model integrated by the explicit schemes of this module (module docstring)."""

    def stepper(self, scheme=None, solver=None, *, fallback: bool = False):
        """:class:`ExplicitStepper` for ``scheme`` (default :class:`RK4`; a name from
        ``EXPLICIT_SCHEMES`` is accepted). ``solver`` must be ``None`` (nothing to solve);
        ``fallback`` is ignored (an explicit step cannot fail to converge)."""
        if isinstance(scheme, str) and scheme in EXPLICIT_SCHEMES:
            scheme = EXPLICIT_SCHEMES[scheme]()
        scheme = RK4() if scheme is None else scheme
        if not isinstance(scheme, AbstractExplicitScheme):
            raise ValueError(
                f"{type(self).__name__} is integrated by an explicit scheme: scheme must be None, RK4(), "
                f"SemiImplicitEuler() or one of the names {sorted(EXPLICIT_SCHEMES)}, got {scheme!r} "
                "(implicit schemes need the maximal-coordinate model, e.g. the MultibodySystem itself)"
            )
        if solver is not None:
            raise ValueError(f"{type(self).__name__}: solver must be None (an explicit scheme solves nothing), "
                             f"got {solver!r}")
        return ExplicitStepper(self, scheme)

    @abc.abstractmethod
    def acceleration(self, q, v, t):
        """Accelerations ``dv/dt`` (shape of ``v``) at ``(q, v)`` and time ``t`` [s]."""

    @abc.abstractmethod
    def displace(self, q, x):
        """The configuration ``q (+) x`` (shape of ``q``) for a tangent vector ``x`` (shape of ``v``)."""

    def chart_rate(self, x, v):
        """``dx/dt`` of the chart coordinate ``x`` at velocity ``v`` (default: ``v``, a flat chart)."""
        return v

    @abc.abstractmethod
    def initial_state(self):
        """The :class:`~jaxrod.integrate.State` a run starts from by default."""

    @abc.abstractmethod
    def observe_state(self, q, v):
        """The saved frame (a dict with at least ``positions`` ``(N, 3)`` [m]) of ``(q, v)``."""


class ExplicitStepper(AbstractStepper):
    """:class:`~jaxrod.integrate.base.AbstractStepper` of an :class:`AbstractExplicitModel`:
    carry ``(q, v)``, stats ``(finite, 0, 0, 0.0, 0.0, 0)``."""

    model: AbstractExplicitModel
    scheme: AbstractExplicitScheme

    cheap_steps = True
    failure = ("the explicit step", "(no residual: the new state was not finite)",
               "The explicit scheme is unstable at this dt: use a smaller dt, or an implicit scheme "
               "on the maximal-coordinate model for stiff springs and stops")

    def init(self, state, t0, dt):
        return (jnp.asarray(state.q), jnp.asarray(state.v))

    def start_state(self, state0, t0, *, throw=True, progress=False):
        return self.model.initial_state() if state0 is None else state0

    def describe(self):
        return f"{type(self.model).__name__}, explicit {type(self.scheme).__name__}"

    def step(self, carry, t, dt):
        q, v = carry
        q1, v1 = self.scheme.advance(self.model, q, v, t, dt)
        ok = jnp.all(jnp.isfinite(q1)) & jnp.all(jnp.isfinite(v1))
        z = jnp.asarray(0, jnp.int32)
        return (q1, v1), (ok, z, z, jnp.asarray(0.0), jnp.asarray(0.0), z)

    def observe(self, carry):
        q, v = carry
        return {"q": q, "v": v, **self.model.observe_state(q, v)}

    def final(self, carry):
        q, v = carry
        return State(q, v, None)

    def solve_static(self, *, state0=None, t=0.0, solver=None, load_steps=1, throw=True, progress=False):
        raise NotImplementedError(
            f"{type(self.model).__name__} has no static solve (an explicit model has no residual to solve): "
            "solve the statics of the implicit model it wraps, e.g. jaxrod.solve_static(joint_space.system)"
        )
