"""Actuation of a discrete elastic rod: tendons, the routed cable as a polyline through the
material frames, and pressure chambers as the same code path (the definitions,
:class:`~jaxrod.actuation.tendons.Tendon` and :class:`~jaxrod.actuation.chambers.Chamber`, are in
:mod:`jaxrod.actuation`).

The same :class:`~jaxrod.actuation.tendons.Tendon` (routing ``r(s)``, tension
``tau(t)``, termination ``s_t``) as on the shooting model. The channel point of edge ``k`` is its
midpoint plus ``r1 m1 + r2 m2 + r3 t`` (material directors of the edge, ``r`` evaluated at the
midpoint's arc length); the tendon runs through the channel points of the midpoints before ``s_t``
and ends at its anchor: the centreline point at rest arc length ``s_t`` (on the edge holding it,
interpolated between its nodes) plus the offset ``r(s_t)`` in the frames of the two edges whose
midpoints bracket ``s_t``, blended linearly in ``s`` (the last edge's frame beyond its midpoint:
the tip anchor, ``s_t`` = the last node, is the same construction). The blend moves the anchor's
moment continuously from edge to edge as ``s_t`` moves; with the frame of the holding edge alone
the moment jump would sit at that edge's midpoint, an O(h) error in the jump's position (measured
first order without the blend, second order with it).

A frictionless cable at constant tension ``tau`` does work ``-tau dl`` when its length ``l``
inside the rod changes, so its loads on the rod are the exact gradient ``-tau dl/dq`` of the
discrete length (distributed pull at every kink plus the anchor load), obtained by autodiff.

A pressure chamber along the rod (``DERModel(chambers=...)``) of cap area ``A`` holds the volume
``A l`` of its channel polyline (a straight routing at its offset, to the tip): the pressure does
the work ``P A dl``, and the chamber is the same code path with ``tau = -P A``.

Arc length ``s`` is measured from the midpoint of edge 0, the clamp point of
:meth:`~jaxrod.models.der.DERRod.cantilever`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .frames import ReferenceFrames, edges, material_directors, transport_directors


def node_arclengths(rest_lengths):
    """``(N,)`` rest arc lengths [m] of the nodes from the midpoint of edge 0 (node 0 at
    ``-l_0 / 2``)."""
    return jnp.concatenate([jnp.zeros(1), jnp.cumsum(rest_lengths)]) - 0.5 * rest_lengths[0]


def tendon_length(q, frames: ReferenceFrames, rest_lengths, routing, termination=None):
    """Length [m] of the tendon polyline at configuration ``q (N, 4)`` from the channel point of
    edge 0 to the anchor at rest arc length ``termination`` [m] (``None``: the tip node); see the
    module docstring."""
    x = q[:, :3]
    _, _, t = edges(x)
    d1, d2 = transport_directors(frames.d1, frames.tangent, t)
    m1, m2 = material_directors(d1, d2, q[:-1, 3])
    s_node = node_arclengths(rest_lengths)
    s_end = s_node[-1] if termination is None else jnp.asarray(termination, dtype=x.dtype)
    s_mid = 0.5 * (s_node[1:] + s_node[:-1])
    k = jnp.clip(jnp.searchsorted(s_node, s_end) - 1, 0, x.shape[0] - 2)  # edge holding the anchor
    f = (s_end - s_node[k]) / rest_lengths[k]
    j = jnp.clip(jnp.searchsorted(s_mid, s_end) - 1, 0, x.shape[0] - 3)  # edges j, j+1 bracket s_t
    w = jnp.clip((s_end - s_mid[j]) / (s_mid[j + 1] - s_mid[j]), 0.0, 1.0)
    r = jax.vmap(routing)(jnp.concatenate([s_mid, s_end[None]]))  # (N, 3) offsets in (m1, m2, t)

    def in_frame(rv, e):
        return rv[..., 0:1] * m1[e] + rv[..., 1:2] * m2[e] + rv[..., 2:3] * t[e]

    edge = jnp.arange(x.shape[0] - 1)
    anchor = x[k] + f * (x[k + 1] - x[k]) + (1.0 - w) * in_frame(r[-1], j) + w * in_frame(r[-1], j + 1)
    P = jnp.concatenate([0.5 * (x[1:] + x[:-1]) + in_frame(r[:-1], edge), anchor[None]])
    # channel points at or beyond the anchor collapse onto it; their zero-length segments are
    # masked with a safe square root (the plain norm's derivative at 0 is NaN)
    live = s_mid < s_end
    P = jnp.where(jnp.concatenate([live, jnp.ones(1, bool)])[:, None], P, P[-1])
    seg = P[1:] - P[:-1]
    sq = jnp.sum(seg * seg, axis=1)
    return jnp.sum(jnp.where(live, jnp.sqrt(jnp.where(live, sq, 1.0)), 0.0))
