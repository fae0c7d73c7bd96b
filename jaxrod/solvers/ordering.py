"""Build-time (numpy) orderings that make a system's Jacobian block tridiagonal.

A system is described by its coupling graph: **nodes** (groups of unknowns whose residual rows
depend on each other and on neighbouring nodes only: a rigid body's 6 coordinates, a rod node)
joined by **edges** (a joint or a force element between two bodies), plus **attached** groups (a
joint's Lagrange multipliers) whose rows and columns touch only the nodes they name.

:func:`level_layout` orders the nodes by breadth-first levels from a pseudo-peripheral node (the
level sets of Cuthill-McKee): edges then join only the same or consecutive levels. A unit is one
level's nodes followed by the attached groups whose last node lies in that level, so every unit
couples only to the units just before and after it, and consecutive units are packed into blocks
of one uniform size (positions no unknown fills are padding): the Jacobian, reordered, is block
tridiagonal, and a :class:`~jaxrod.solvers.jacobian.PermutedJacobianSolver` around a
:class:`~jaxrod.solvers.jacobian.BlockTridiagonalJacobianSolver` builds it with ``3 m`` JVPs and
factors it in ``O(n_blocks m^3)``. A chain has one body per level (cost linear in its length); a
closed loop two; a tree as many as its widest generation (a wide tree gives big blocks: callers
compare the cost with a dense solve, :func:`prefer_dense`).

Placing each attached group after all its nodes keeps the block LU (no pivoting between blocks)
well defined for saddle-point systems: every leading block principal submatrix is the system of
a sub-mechanism whose constraints all act on bodies it contains, nonsingular when the full one is
(mass blocks nonsingular, constraint rows independent).
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["Layout", "level_layout", "prefer_dense"]


class Layout(tuple):
    """``(slots, size, block_size)``: unknown ``i`` goes to position ``slots[i]`` of a padded
    vector of length ``size = n_blocks * block_size``."""

    __slots__ = ()

    def __new__(cls, slots, size, block_size):
        return super().__new__(cls, (slots, size, block_size))

    slots = property(lambda self: self[0])
    size = property(lambda self: self[1])
    block_size = property(lambda self: self[2])

    @property
    def n_blocks(self) -> int:
        return self.size // self.block_size


def _bfs(adj, roots, seen):
    """Levels ``{node: level}`` of the component of ``roots`` (an int or a list: all at level 0;
    Cuthill-McKee order: neighbours by increasing degree), visiting only nodes not in ``seen``."""
    roots = [roots] if isinstance(roots, (int, np.integer)) else list(roots)
    level = dict.fromkeys(roots, 0)
    order, queue = list(roots), deque(roots)
    while queue:
        v = queue.popleft()
        for w in sorted(adj[v] - seen - level.keys(), key=lambda u: (len(adj[u]), u)):
            level[w] = level[v] + 1
            order.append(w)
            queue.append(w)
    return order, level


def _peripheral_pair(adj, start, seen):
    """Both ends of a pseudo-diameter of ``start``'s component (George and Liu's iteration)."""
    root, ecc = start, -1
    while True:
        order, level = _bfs(adj, root, seen)
        far = max(level.values())
        if far <= ecc:
            return root, prev
        ecc, prev = far, root
        root = min((v for v in order if level[v] == far), key=lambda u: (len(adj[u]), u))


def level_layout(n: int, nodes, edges=(), attached=(), roots=()) -> Layout:
    """Block-tridiagonal layout of ``n`` unknowns (see the module docstring).

    Arguments:
        n: number of unknowns.
        nodes: sequence of int arrays, the unknowns of each node.
        edges: ``(a, b)`` node index pairs that couple (``a == b`` is ignored), besides those
            implied by ``attached``.
        attached: ``(unknowns, node_ids)`` pairs: a group of unknowns coupled only to the
            listed nodes (and to itself), which it couples to each other; ``node_ids`` may be
            empty (placed with the first unit).
        roots: node ids; a component holding some of them is laid out from all of them at level
            0 instead of from an end of its pseudo-diameter. Rooting at the grounded nodes (those
            tied to the world) makes every leading block principal submatrix a sub-system tied
            to the world, nonsingular even without mass blocks (static Jacobians); it may make
            levels wider.

    Every unknown must belong to exactly one node or attached group. Of the two ends of each
    component's pseudo-diameter, the start giving the smaller blocks (then fewer padded
    positions) is kept.
    """
    k = len(nodes)
    nodes = [np.asarray(v, dtype=np.int64).ravel() for v in nodes]
    attached = [(np.asarray(u, dtype=np.int64).ravel(), tuple(int(i) for i in ids)) for u, ids in attached]
    owner = np.concatenate([v for v in nodes] + [u for u, _ in attached] + [np.zeros(0, np.int64)])
    if owner.size != n or not np.array_equal(np.sort(owner), np.arange(n)):
        raise ValueError(
            f"level_layout: nodes and attached groups must cover the {n} unknowns exactly once, "
            f"got {owner.size} entries ({len(np.unique(owner))} distinct)"
        )
    for u, ids in attached:
        bad = [i for i in ids if not 0 <= i < k]
        if bad:
            raise ValueError(f"level_layout: attached group names nodes {bad} outside [0, {k})")
    adj = [set() for _ in range(k)]
    # an attached group couples its nodes to each other (a joint's forces act on both bodies)
    implied = [(a, b) for _, ids in attached for a in ids for b in ids]
    for a, b in list(edges) + implied:
        a, b = int(a), int(b)
        if not (0 <= a < k and 0 <= b < k):
            raise ValueError(f"level_layout: edge ({a}, {b}) names a node outside [0, {k})")
        if a != b:
            adj[a].add(b)
            adj[b].add(a)

    # components, each laid out from the better end of its pseudo-diameter
    seen, comps = set(), []
    for s in range(k):
        if s in seen:
            continue
        reach = _bfs(adj, s, seen)[1] if len(roots) else {}
        grounded = [r for r in dict.fromkeys(int(r) for r in roots) if r in reach]
        if grounded:
            comps.append([_bfs(adj, grounded, seen)])
        else:
            ends = _peripheral_pair(adj, s, seen)
            comps.append([_bfs(adj, r, seen) for r in dict.fromkeys(ends)])
        seen |= comps[-1][0][1].keys()
    comp_of = np.empty(k, np.int64)
    for c, options in enumerate(comps):
        comp_of[list(options[0][1])] = c
    # attached groups with no node go with the first unit
    by_comp = [[] for _ in comps] if comps else [[]]
    for u, ids in attached:
        by_comp[comp_of[ids[0]] if ids else 0].append((u, ids))

    def units_of(option, groups):
        order, level = option
        units = [[] for _ in range(max(level.values()) + 1)]
        for v in order:
            units[level[v]].append(nodes[v])
        for u, ids in groups:
            units[max((level[i] for i in ids), default=0)].append(u)
        return [np.concatenate(g) if g else np.zeros(0, np.int64) for g in units]

    def cost(units):
        sizes = [u.size for u in units]
        m = max(max(sizes, default=0), 1)
        nb, fill = 1, 0
        for s in sizes:
            if fill + s > m:
                nb, fill = nb + 1, 0
            fill += s
        return m, nb * m

    units = []
    for options, groups in zip(comps, by_comp):
        units += min((units_of(opt, groups) for opt in options), key=cost)
    if not comps:
        units = [np.concatenate([u for u, _ in attached])] if attached else []
    m, size = cost(units)
    slots = np.empty(n, np.int64)
    block, fill = 0, 0
    for u in units:
        if fill + u.size > m:
            block, fill = block + 1, 0
        slots[u] = block * m + fill + np.arange(u.size)
        fill += u.size
    return Layout(slots, size, m)


def prefer_dense(n: int, layout: Layout, dense_below: int) -> bool:
    """Whether a dense Jacobian is the better choice: fewer than ``dense_below`` unknowns, or at
    most two blocks (no structure left), or block LU work ``n_blocks m^3`` above the dense
    ``n^3 / 3`` (a flop count, not a measured crossover)."""
    m, nb = layout.block_size, layout.n_blocks
    return n < dense_below or nb <= 2 or nb * m**3 > n**3 / 3
