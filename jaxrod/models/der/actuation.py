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
discrete length (distributed pull at every kink plus the anchor load), obtained by autodiff. All
the tendons of a rod are one such gradient: of the pull-weighted total length
``sum_k tau_k l_k`` (:func:`weighted_tendon_length`), the polylines stacked along a leading tendon
axis and evaluated together (one vectorised polyline, the frames computed once), the anchor's
edge and bracketing frames picked by one-hot weights instead of gathers; so the program does
not grow with the number of tendons.

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


def routing_offsets(routings, rest_lengths, terminations):
    """``(K, N, 3)`` offsets [m] of ``K`` routings in the material frames ``(m1, m2, t)``: at the
    rest arc lengths of the ``N-1`` edge midpoints, then at the anchor's ``terminations[k]`` [m]
    (``None``: the tip node). Built-in routings of one type and leaf shapes are evaluated together
    (their leaves stacked, one vectorised call); other :class:`~jaxrod.actuation.tendons.Routing`
    subclasses one by one, as ``jax.vmap(routing)(s)``."""
    from ...actuation.tendons import HelicalRouting, SampledRouting, StraightRouting

    s_node = node_arclengths(rest_lengths)
    s_mid = 0.5 * (s_node[1:] + s_node[:-1])
    s_end = _anchor_list(s_node, terminations)

    groups = {}  # {key: [routing indices]}: the built-in routings by type and leaf shapes
    for i, routing in enumerate(routings):
        if type(routing) in (StraightRouting, HelicalRouting, SampledRouting):
            leaves, treedef = jax.tree_util.tree_flatten(routing)
            key = (treedef, tuple(jnp.shape(leaf) for leaf in leaves))
        else:  # a user routing is called as given (its parameters unbatched)
            key = ("own", i)
        groups.setdefault(key, []).append(i)
    out = [None] * len(routings)
    for idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = jax.vmap(routings[idx[0]])(jnp.concatenate([s_mid, s_end[idx[0]][None]]))
            continue
        stacked = jax.tree_util.tree_map(
            lambda *ls: jnp.stack([jnp.asarray(leaf) for leaf in ls]), *[routings[i] for i in idx]
        )
        s = jnp.stack([jnp.concatenate([s_mid, s_end[i][None]]) for i in idx])
        r = jax.vmap(lambda rt, ss: jax.vmap(rt)(ss))(stacked, s)  # (len(idx), N, 3)
        for n, i in enumerate(idx):
            out[i] = r[n]
    return jnp.stack(out)


def _anchor_list(s_node, terminations):
    return [s_node[-1] if s is None else jnp.asarray(s, dtype=s_node.dtype) for s in terminations]


def anchor_arclengths(rest_lengths, terminations):
    """``(K,)`` rest arc lengths [m] of the anchors: ``terminations[k]`` [m], ``None`` the tip node."""
    return jnp.stack(_anchor_list(node_arclengths(rest_lengths), terminations))


def _one_hot(i, n, dtype):
    return (jnp.arange(n) == i).astype(dtype)


def tendon_lengths(q, frames: ReferenceFrames, rest_lengths, offsets, anchors):
    """``(K,)`` lengths [m] of ``K`` tendon polylines at configuration ``q (N, 4)``, each from the
    channel point of edge 0 to its anchor at rest arc length ``anchors[k]`` [m] (``(K,)``), its
    routing given by ``offsets (K, N, 3)`` [m] (:func:`routing_offsets`); see the module docstring.
    The frames are computed once; the polylines are one vectorised evaluation (no gathers: the
    anchor's edge and bracketing frames are one-hot weighted sums)."""
    n = jnp.shape(q)[0]
    if jnp.ndim(offsets) != 3 or jnp.shape(offsets)[1:] != (n, 3) or jnp.shape(anchors) != jnp.shape(offsets)[:1]:
        raise ValueError(
            f"tendon_lengths needs offsets (K, N, 3) and anchors (K,) for q (N, 4) = {jnp.shape(q)}, "
            f"got offsets {jnp.shape(offsets)} and anchors {jnp.shape(anchors)}"
        )
    x = q[:, :3]
    _, _, t = edges(x)
    d1, d2 = transport_directors(frames.d1, frames.tangent, t)
    m1, m2 = material_directors(d1, d2, q[:-1, 3])
    n_e = x.shape[0] - 1
    s_node = node_arclengths(rest_lengths)
    s_mid = 0.5 * (s_node[1:] + s_node[:-1])
    mid = 0.5 * (x[1:] + x[:-1])

    def in_frame(rv, a1, a2, at):
        return rv[..., 0:1] * a1 + rv[..., 1:2] * a2 + rv[..., 2:3] * at

    def one(r, s_end):
        # edge k holding the anchor and edges j, j+1 whose midpoints bracket it: the indices of
        # jnp.searchsorted (side "left": the count of smaller entries), as one-hot weights
        k = jnp.clip(jnp.sum(s_node < s_end) - 1, 0, n_e - 1)
        j = jnp.clip(jnp.sum(s_mid < s_end) - 1, 0, n_e - 2)
        hk, hj, hj1 = _one_hot(k, n_e, x.dtype), _one_hot(j, n_e, x.dtype), _one_hot(j + 1, n_e, x.dtype)
        f = (s_end - hk @ s_node[:-1]) / (hk @ rest_lengths)
        w = jnp.clip((s_end - hj @ s_mid) / (hj1 @ s_mid - hj @ s_mid), 0.0, 1.0)
        xk, xk1 = hk @ x[:-1], hk @ x[1:]
        anchor = (
            xk + f * (xk1 - xk)
            + (1.0 - w) * in_frame(r[-1], hj @ m1, hj @ m2, hj @ t)
            + w * in_frame(r[-1], hj1 @ m1, hj1 @ m2, hj1 @ t)
        )
        P = jnp.concatenate([mid + in_frame(r[:-1], m1, m2, t), anchor[None]])
        # channel points at or beyond the anchor collapse onto it; their zero-length segments are
        # masked with a safe square root (the plain norm's derivative at 0 is NaN)
        live = s_mid < s_end
        P = jnp.where(jnp.concatenate([live, jnp.ones(1, bool)])[:, None], P, P[-1])
        seg = P[1:] - P[:-1]
        sq = jnp.sum(seg * seg, axis=1)
        return jnp.sum(jnp.where(live, jnp.sqrt(jnp.where(live, sq, 1.0)), 0.0))

    return jax.vmap(one)(offsets, anchors)


def weighted_tendon_length(q, frames: ReferenceFrames, rest_lengths, offsets, anchors, pulls):
    """Pull-weighted total length ``sum_k pulls[k] l_k`` [m times the unit of ``pulls``; N m for
    tensions in N] of the tendons of :func:`tendon_lengths` (``offsets (K, N, 3)`` [m], ``anchors
    (K,)`` [m], ``pulls (K,)``). Its gradient ``d/dq`` ``(N, 4)`` is, negated, the generalised force
    of all of them: a tension ``tau`` does the work ``-tau dl``."""
    if jnp.shape(pulls) != jnp.shape(anchors):
        raise ValueError(
            f"weighted_tendon_length needs one pull per tendon: pulls {jnp.shape(pulls)}, anchors {jnp.shape(anchors)}"
        )
    return jnp.sum(pulls * tendon_lengths(q, frames, rest_lengths, offsets, anchors))


def tendon_length(q, frames: ReferenceFrames, rest_lengths, routing, termination=None):
    """Length [m] of the tendon polyline at configuration ``q (N, 4)`` from the channel point of
    edge 0 to the anchor at rest arc length ``termination`` [m] (``None``: the tip node); see the
    module docstring."""
    offsets = routing_offsets((routing,), rest_lengths, (termination,))
    return tendon_lengths(q, frames, rest_lengths, offsets, anchor_arclengths(rest_lengths, (termination,)))[0]
