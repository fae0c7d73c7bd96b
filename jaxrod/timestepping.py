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
* :class:`BDFAlpha`        Till et al.'s BDF-alpha family ``x'_n = c0 x_n + c1 x_{n-1} + c2 x_{n-2} + d1 x'_{n-1}``;
  ``alpha = 0`` is BDF2, ``alpha = -0.5`` the trapezoid rule (see :func:`BDF2`, :func:`Trapezoid`).
* :class:`NewmarkBeta`     Newmark's family (average acceleration by default: beta 1/4, gamma 1/2).
"""

from __future__ import annotations

import abc

import equinox as eqx


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


class ImplicitMidpoint(AbstractScheme):
    """Implicit midpoint rule: forces at ``(q_n + q_{n+1})/2``, ``q_{n+1} = q_n + dt (v_n + v_{n+1})/2``.

    Second order and symplectic: no numerical damping of oscillations (DisMech's validation
    scheme; algebraically identical to its half-step backward Euler plus extrapolation).
    The history keeps the last acceleration only for the Newton predictor.
    """

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
        a = self.alpha
        return (1.5 + a) / (dt * (1 + a)), -2.0 / dt, (0.5 + a) / (dt * (1 + a)), a / (1 + a)

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
    """Trapezoid rule (``BDFAlpha(-0.5)``): energy preserving for linear systems."""
    return BDFAlpha(-0.5)


class NewmarkBeta(AbstractScheme):
    """Newmark-beta: ``q_{n+1} = q_n + dt v_n + dt^2 ((1/2 - beta) a_n + beta a_{n+1})``,
    ``v_{n+1} = v_n + dt ((1 - gamma) a_n + gamma a_{n+1})``.

    Default: average acceleration (``beta = 1/4``, ``gamma = 1/2``), unconditionally stable and
    energy conserving for linear systems.
    """

    beta: float = 0.25
    gamma: float = 0.5
    needs_acceleration = True

    def __check_init__(self):
        if not (0.0 < float(self.beta) <= 0.5):
            raise ValueError(f"NewmarkBeta.beta must be in (0, 0.5], got {self.beta}")
        if not (0.0 <= float(self.gamma) <= 1.0):
            raise ValueError(f"NewmarkBeta.gamma must be in [0, 1], got {self.gamma}")

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
