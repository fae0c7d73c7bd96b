"""Topology of a DER network, built once on the host: :class:`Joint` (which limb ends merge into
which node), :class:`NetworkTopology` (global node and edge numbering, the bending/twisting
stencils) and the index helpers of :class:`~jaxrod.models.der.DERNetwork` (the Jacobian's
sparsity pattern, the edge pairs far enough apart for rod-rod contact). Layout, stencil and joint
conventions: see :mod:`jaxrod.models.der.model`.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import numpy as np

from ...validation import is_traced

__all__ = ["Joint", "NetworkTopology", "jacobian_pattern"]


@dataclasses.dataclass(frozen=True)
class Joint:
    """An elastic joint: limb ends merged into a node of a host limb (DisMech's
    ``createJoint(limb, node)`` plus ``addToJoint(joint, limb, 0 or -1)``).

    Attributes:
        host: ``(limb, node)``: the joint node; any node of the host limb (negative from the end).
        attached: ``((limb, end), ...)`` limb ends merged into the joint node; ``end`` is ``0`` or
            ``-1`` (the last node; its positive index is accepted too). At least one.
    """

    host: tuple
    attached: tuple

    def __init__(self, host, attached):
        object.__setattr__(self, "host", _pair("Joint.host", host))
        att = tuple(attached)
        if len(att) == 2 and all(isinstance(a, (int, np.integer)) for a in att):
            att = (att,)  # a single (limb, end) pair
        object.__setattr__(
            self, "attached", tuple(_pair("Joint.attached", a) for a in att)
        )


def _check_edge_lengths(q0, topo):
    """Every edge of ``q0`` must have non-zero length (a zero-length edge has no tangent)."""
    if is_traced(q0):
        return
    en, x = np.asarray(topo.edge_nodes), np.asarray(q0)[:, :3]
    short = np.flatnonzero(np.linalg.norm(x[en[:, 1]] - x[en[:, 0]], axis=1) <= 1e-12)
    if short.size:
        raise ValueError(
            f"q0 (node positions) has coincident nodes: zero-length edges {short[:5].tolist()} "
            "(global edge numbering); the two nodes of every edge must differ"
        )


def _pair(name, p):
    try:
        a, b = p
        out = (int(a), int(b))
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a (limb, index) pair of integers, got {p!r}"
        ) from None
    if out != (a, b):
        raise ValueError(f"{name} must be a (limb, index) pair of integers, got {p!r}")
    return out


class NetworkTopology(eqx.Module):
    """Index arrays of a network (built once on the host; integer leaves are not differentiated).

    Attributes:
        edge_nodes: ``(E, 2)`` global node ids ``(from, to)`` of each edge.
        stencil_nodes: ``(S, 3)`` nodes ``(a, b, c)`` of each stencil (``b`` the shared node).
        stencil_edges: ``(S, 2)`` global edges ``(e, f)`` of each stencil.
        stencil_signs: ``(S, 2)`` +1 / -1: orientation of ``e``, ``f`` relative to ``a -> b -> c``.
        stencil_same_limb: ``(S,)`` True when both edges belong to the same limb.
        stencil_twist_offset: ``(S,)`` [rad] constant angle subtracted from the twist angle of
            edge ``f``: the rest angle between the two edges' material frames across the stencil
            (0 on limb stencils; see :func:`~jaxrod.models.der.frames.kinematics`).
        limb_nodes: per limb, the global node id of each of its nodes (static).
        limb_edge_offsets: per limb, the global id of its edge 0 (static).
        limb_stencil_offsets: per limb, the index of its first interior stencil (static).
        node_source: per global node, its row in the limbs' stacked rest positions (the host's
            node for a joint) (static).
        n_nodes, n_edges, n_limb_stencils: M, E, and the number of limb (non-joint) stencils.
        chain: one limb and no joints (static): node ``i`` is the limb's node ``i``, stencil ``i``
            is nodes ``i, i+1, i+2``, so :func:`~jaxrod.models.der.frames.kinematics` gathers
            with slices and the Jacobian is banded.
    """

    edge_nodes: jax.Array
    stencil_nodes: jax.Array
    stencil_edges: jax.Array
    stencil_signs: jax.Array
    stencil_same_limb: jax.Array
    stencil_twist_offset: jax.Array
    limb_nodes: tuple = eqx.field(static=True)
    limb_edge_offsets: tuple = eqx.field(static=True)
    limb_stencil_offsets: tuple = eqx.field(static=True)
    node_source: tuple = eqx.field(static=True)
    n_nodes: int = eqx.field(static=True)
    n_edges: int = eqx.field(static=True)
    n_limb_stencils: int = eqx.field(static=True)
    chain: bool = eqx.field(static=True, default=False)

    @property
    def n_stencils(self) -> int:
        return int(self.stencil_edges.shape[0])

    @property
    def n_rows(self) -> int:
        """``R = max(M, E)``: rows of the state ``q``."""
        return max(self.n_nodes, self.n_edges)


def _build_topology(limb_sizes, joints, rest_positions):
    """Validate joints; build the :class:`NetworkTopology` and the merged-node map.

    ``rest_positions``: list of numpy ``(N_l, 3)`` arrays (for coincidence and fold-back checks).
    """
    n_limbs = len(limb_sizes)

    def check_limb(name, limb):
        if not (0 <= limb < n_limbs):
            raise ValueError(
                f"{name}: limb {limb} does not exist (the network has limbs 0..{n_limbs - 1})"
            )

    merged = {}  # (limb, node) -> (host limb, host node)
    hosts = {}
    for j, joint in enumerate(joints):
        if not isinstance(joint, Joint):
            raise TypeError(f"joints[{j}] must be a Joint, got {type(joint).__name__}")
        hl, hn = joint.host
        check_limb(f"joints[{j}].host", hl)
        n = limb_sizes[hl]
        if not (-n <= hn < n):
            raise ValueError(
                f"joints[{j}].host: node {hn} does not exist on limb {hl} (valid: 0..{n - 1} or negative from the end)"
            )
        hn %= n
        if (hl, hn) in hosts:
            raise ValueError(
                f"joints[{j}].host: node {hn} of limb {hl} already hosts joint {hosts[(hl, hn)]}; "
                "attach every limb to that one joint"
            )
        hosts[(hl, hn)] = j
        if not joint.attached:
            raise ValueError(
                f"joints[{j}] attaches no limb end (give attached=[(limb, 0 or -1), ...])"
            )
        for al, an in joint.attached:
            check_limb(f"joints[{j}].attached", al)
            na = limb_sizes[al]
            if an not in (0, -1, na - 1):
                raise ValueError(
                    f"joints[{j}].attached: node {an} of limb {al} is not an end; only the first (0) or "
                    f"last (-1 or {na - 1}) node of a limb can be attached to a joint"
                )
            an %= na
            if (al, an) == (hl, hn):
                raise ValueError(
                    f"joints[{j}] attaches node {an} of limb {al} to itself"
                )
            if (al, an) in merged:
                raise ValueError(
                    f"joints[{j}].attached: node {an} of limb {al} is attached to more than one joint"
                )
            merged[(al, an)] = (hl, hn, j)
    for (al, an), (_, _, j) in merged.items():
        if (al, an) in hosts:
            raise ValueError(
                f"joints[{j}].attached: node {an} of limb {al} hosts joint {hosts[(al, an)]} and cannot "
                "also be merged into another joint"
            )
    # global node numbering
    ids = [[-1] * n for n in limb_sizes]
    m = 0
    for l, n in enumerate(limb_sizes):
        for k in range(n):
            if (l, k) not in merged:
                ids[l][k] = m
                m += 1
    for (al, an), (hl, hn, _) in merged.items():
        ids[al][an] = ids[hl][hn]
    # positions must coincide
    for (al, an), (hl, hn, j) in merged.items():
        pa, ph = rest_positions[al][an], rest_positions[hl][hn]
        scale = max(float(np.max(np.abs(p))) for p in rest_positions) + 1e-3
        if np.linalg.norm(pa - ph) > 1e-9 * scale:
            raise ValueError(
                f"joints[{j}]: node {an} of limb {al} at {pa.tolist()} does not coincide with the joint node "
                f"{hn} of limb {hl} at {ph.tolist()} (distance {np.linalg.norm(pa - ph):.3g} m)"
            )
    # edges
    edge_nodes, edge_limb, offsets = [], [], []
    for l, n in enumerate(limb_sizes):
        offsets.append(len(edge_nodes))
        for k in range(n - 1):
            edge_nodes.append((ids[l][k], ids[l][k + 1]))
            edge_limb.append(l)
    edge_nodes = np.asarray(edge_nodes, dtype=np.int64)
    edge_limb = np.asarray(edge_limb)
    # stencils: limb interior nodes
    sn, se, ss, stencil_offsets = [], [], [], []
    for l, n in enumerate(limb_sizes):
        stencil_offsets.append(len(sn))
        for k in range(1, n - 1):
            sn.append((ids[l][k - 1], ids[l][k], ids[l][k + 1]))
            se.append((offsets[l] + k - 1, offsets[l] + k))
            ss.append((1.0, 1.0))
    n_limb_stencils = len(sn)
    # stencils: joints, every unordered pair of incident edges not already a limb stencil
    node_pos = np.zeros((m, 3))
    node_source = [0] * m
    start = 0
    for l, n in enumerate(limb_sizes):
        for k in range(n):
            if (l, k) not in merged:
                if joints:  # rest positions (possibly traced without joints) only check joints
                    node_pos[ids[l][k]] = rest_positions[l][k]
                node_source[ids[l][k]] = start + k
        start += n
    for j, joint in enumerate(joints):
        hl, hn = joint.host[0], joint.host[1] % limb_sizes[joint.host[0]]
        J = ids[hl][hn]
        inc = [
            int(g)
            for g in np.flatnonzero((edge_nodes[:, 0] == J) | (edge_nodes[:, 1] == J))
        ]
        host_pair = set()
        if 0 < hn < limb_sizes[hl] - 1:
            host_pair = {offsets[hl] + hn - 1, offsets[hl] + hn}
        # incoming edges first, so that as many pairs as possible keep the global orientation
        inc.sort(key=lambda g: (edge_nodes[g, 1] != J, g))
        for i1 in range(len(inc)):
            for i2 in range(i1 + 1, len(inc)):
                e, f = inc[i1], inc[i2]
                if {e, f} == host_pair:
                    continue
                s_e = 1.0 if edge_nodes[e, 1] == J else -1.0
                s_f = 1.0 if edge_nodes[f, 0] == J else -1.0
                a = edge_nodes[e, 0] if s_e > 0 else edge_nodes[e, 1]
                c = edge_nodes[f, 1] if s_f > 0 else edge_nodes[f, 0]
                te = node_pos[J] - node_pos[a]
                tf = node_pos[c] - node_pos[J]
                te, tf = te / np.linalg.norm(te), tf / np.linalg.norm(tf)
                if 1.0 + te @ tf < 1e-9:
                    raise ValueError(
                        f"joints[{j}]: edges {e} and {f} (global numbering) leave the joint in the same "
                        "direction (a 180 degree fold-back); DER bending is singular there"
                    )
                sn.append((int(a), J, int(c)))
                se.append((e, f))
                ss.append((s_e, s_f))
    sn = np.asarray(sn, dtype=np.int64).reshape(-1, 3)
    se = np.asarray(se, dtype=np.int64).reshape(-1, 2)
    ss = np.asarray(ss, dtype=float).reshape(-1, 2)
    same = edge_limb[se[:, 0]] == edge_limb[se[:, 1]] if se.size else np.zeros(0, bool)
    topo = NetworkTopology(
        # device_put, not jnp.asarray/jnp.zeros: those compile a small program per shape
        edge_nodes=jax.device_put(np.asarray(edge_nodes)),
        stencil_nodes=jax.device_put(sn),
        stencil_edges=jax.device_put(se),
        stencil_signs=jax.device_put(ss),
        stencil_same_limb=jax.device_put(np.asarray(same)),
        stencil_twist_offset=jax.device_put(np.zeros(sn.shape[0])),
        limb_nodes=tuple(tuple(r) for r in ids),
        limb_edge_offsets=tuple(offsets),
        limb_stencil_offsets=tuple(stencil_offsets),
        node_source=tuple(node_source),
        n_nodes=m,
        n_edges=int(edge_nodes.shape[0]),
        n_limb_stencils=n_limb_stencils,
        chain=n_limbs == 1 and not joints,
    )
    return topo, merged


def _limb_global(topo, name, spec, what):
    """``(limb, index)`` -> (limb, index mod size) with a clear error."""
    limb, idx = _pair(name, spec)
    n_limbs = len(topo.limb_nodes)
    if not (0 <= limb < n_limbs):
        raise ValueError(
            f"{name}: limb {limb} does not exist (the network has limbs 0..{n_limbs - 1})"
        )
    n = len(topo.limb_nodes[limb]) - (1 if what == "edge" else 0)
    if not (-n <= idx < n):
        raise ValueError(
            f"{name}: {what} {idx} does not exist on limb {limb} (valid: 0..{n - 1} or negative from the end)"
        )
    return limb, idx % n


def jacobian_pattern(topo: NetworkTopology):
    """Host ``(rows, cols)`` int arrays of the structurally non-zero entries of the Jacobian of a
    network residual in the flattened ``(R, 4)`` layout (``4 row + column``): every pair of DOFs of
    one bending/twisting stencil (11 DOFs) or one edge (6 position DOFs), and the diagonal."""
    n = 4 * topo.n_rows
    sn, se = np.asarray(topo.stencil_nodes), np.asarray(topo.stencil_edges)
    en = np.asarray(topo.edge_nodes)
    xyz = np.arange(3)
    groups = [
        np.concatenate(
            [(4 * sn[:, k : k + 1] + xyz) for k in range(3)] + [4 * se + 3], axis=1
        ),
        np.concatenate([4 * en[:, 0:1] + xyz, 4 * en[:, 1:2] + xyz], axis=1),
    ]
    rows = [np.arange(n)]
    cols = [np.arange(n)]
    for g in groups:
        if g.size:
            rows.append(np.repeat(g, g.shape[1], axis=1).ravel())
            cols.append(np.tile(g, (1, g.shape[1])).ravel())
    flat = np.unique(np.concatenate(rows) * n + np.concatenate(cols))
    return flat // n, flat % n


def _edge_graph_pairs(edge_nodes, edge_limb, exclude, different_limbs):
    """Host ``(first, second)`` int32 arrays of edge pairs ``i < j`` at least ``exclude`` apart
    in the edge graph (edges sharing a node are 1 apart); optionally from different limbs only."""
    n_edges = edge_nodes.shape[0]
    by_node = {}
    for e, (a, b) in enumerate(edge_nodes):
        by_node.setdefault(int(a), []).append(e)
        by_node.setdefault(int(b), []).append(e)
    near = np.zeros((n_edges, n_edges), dtype=bool)
    for e0 in range(n_edges):
        frontier, seen = {e0}, {e0}
        for _ in range(exclude - 1):
            nxt = set()
            for e in frontier:
                for node in edge_nodes[e]:
                    nxt.update(by_node[int(node)])
            frontier = nxt - seen
            seen |= nxt
        near[e0, list(seen)] = True
    i, j = np.triu_indices(n_edges, k=1)
    keep = ~near[i, j]
    if different_limbs:
        keep &= edge_limb[i] != edge_limb[j]
    return i[keep].astype(np.int32), j[keep].astype(np.int32)
