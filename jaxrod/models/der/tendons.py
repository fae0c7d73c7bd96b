"""Tendons on a discrete elastic rod: the routed cable as a polyline through the material frames.

The same :class:`~jaxrod.models.cosserat.tendons.Tendon` (routing ``r(s)``, tension
``tau(t)``) as on the shooting model. The channel point of edge ``k`` is its midpoint plus
``r1 m1 + r2 m2 + r3 t`` (material directors of the edge, ``r`` evaluated at the midpoint's arc
length); the tendon runs through these points in order and is anchored at the tip node, offset with
the last edge's frame. A frictionless cable at constant tension ``tau`` does work ``-tau dl`` when
its length ``l`` inside the rod changes, so its loads on the rod are the exact gradient
``-tau dl/dq`` of the discrete length (distributed pull at every kink plus the anchor load),
obtained by autodiff.

Arc length ``s`` is measured from the midpoint of edge 0, the clamp point of
:meth:`~jaxrod.models.der.DERRod.cantilever`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .frames import ReferenceFrames, edges, material_directors, transport_directors


def midpoint_arclengths(rest_lengths):
    """``(s_mid (N-1,), s_tip)`` [m]: rest arc lengths of the edge midpoints and of the last node,
    from the midpoint of edge 0."""
    s_mid = jnp.cumsum(rest_lengths) - 0.5 * rest_lengths - 0.5 * rest_lengths[0]
    return s_mid, s_mid[-1] + 0.5 * rest_lengths[-1]


def tendon_length(q, frames: ReferenceFrames, rest_lengths, routing):
    """Length [m] of the tendon polyline at configuration ``q (N, 4)`` (see module docstring)."""
    x = q[:, :3]
    _, _, t = edges(x)
    d1, d2 = transport_directors(frames.d1, frames.tangent, t)
    m1, m2 = material_directors(d1, d2, q[:-1, 3])
    s_mid, s_tip = midpoint_arclengths(rest_lengths)
    s_all = jnp.concatenate([s_mid, s_tip[None]])
    r = jax.vmap(routing)(s_all)  # (N, 3) offsets in (m1, m2, t)
    frame_of = jnp.concatenate([jnp.arange(x.shape[0] - 1), jnp.array([x.shape[0] - 2])])
    base = jnp.concatenate([0.5 * (x[1:] + x[:-1]), x[-1:]])
    P = base + r[:, 0:1] * m1[frame_of] + r[:, 1:2] * m2[frame_of] + r[:, 2:3] * t[frame_of]
    seg = P[1:] - P[:-1]
    return jnp.sum(jnp.sqrt(jnp.sum(seg * seg, axis=1)))
