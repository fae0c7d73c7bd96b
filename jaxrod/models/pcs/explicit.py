"""Explicit (forward / semi-implicit Euler) time stepping of a :class:`~.dynamics.PCSModel`, the
paper's baseline (sec. V: "Euler integral"): ``qdd = M(q)^-1 (tau_int - b(q, qd))`` per step, with
``M`` and ``b`` from the inverse dynamics (``M`` by ``jax.jacfwd`` over the accelerations, the
"unit vector method" in one batched pass). No iteration; stable only for tiny steps on stiff rods.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from ...validation import check_int
from .model import PCSModel


def explicit_acceleration(model: PCSModel, q, v):
    """``qdd = M^-1 (-(K (xi - xi*) + D xid) - b)`` at ``(q, v)``; ``(n m,)``."""
    zero = jnp.zeros_like(q)
    b = model.generalized_forces(q, v, zero)
    M = jax.jacfwd(lambda a: model.generalized_forces(q, zero, a))(zero)
    return jnp.linalg.solve(M, -(b + model.internal_forces(q, v)))


@eqx.filter_jit
def _run(model, q0, v0, dt, n_saves, save_every, semi_implicit):
    def step(carry, _):
        q, v = carry
        a = explicit_acceleration(model, q, v)
        if semi_implicit:
            v1 = v + dt * a
            return (q + dt * v1, v1), None
        return (q + dt * v, v + dt * a), None

    def save(carry, _):
        carry, _ = jax.lax.scan(step, carry, None, length=save_every)
        return carry, carry

    _, (qs, vs) = jax.lax.scan(save, (q0, v0), None, length=n_saves)
    return qs, vs


def simulate_explicit(model: PCSModel, *, dt, n_steps: int, state0=None, save_every: int = 1,
                      semi_implicit: bool = False):
    """Integrate with forward Euler (``semi_implicit=False``, the paper's baseline) or symplectic
    Euler. Returns ``(q (T, n m), v (T, n m))`` at ``t = k save_every dt``, ``k = 0..``; non-finite
    values mean the run diverged (no error is raised: divergence is the expected outcome at large
    steps, and the benchmark measures it)."""
    if not isinstance(dt, jax.core.Tracer) and not (float(dt) > 0):
        raise ValueError(f"dt must be > 0, got {dt}")
    n_steps, save_every = check_int("n_steps", n_steps, min=1), check_int("save_every", save_every, min=1)
    if n_steps % save_every:
        raise ValueError(f"need n_steps >= 1 divisible by save_every >= 1, got {n_steps}, {save_every}")
    state = model.initial_state() if state0 is None else state0
    q0, v0 = jnp.asarray(state.q, dtype=float), jnp.asarray(state.v, dtype=float)
    qs, vs = _run(model, q0, v0, jnp.asarray(dt, dtype=float), n_steps // save_every, int(save_every),
                  bool(semi_implicit))
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([v0[None], vs])
