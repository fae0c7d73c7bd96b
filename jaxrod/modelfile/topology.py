"""The joint graph of a model file: the joints must form a tree (a forest rooted at the world);
a joint that would close a loop belongs in ``[constraints]``.

Why: TMTDyn builds its main kinematic chain from the first joint that reaches each body and treats
every later connection as a compliant element or a constraint (spec section 8.2). Our bodies
have maximal coordinates, so a loop of joints is solvable in principle, but a loop written as
joints hides the designer's choice of which connection closes it, and the obvious choice (a
revolute joint closing a planar loop) adds redundant rows that make the Newton matrix singular.
Asking for the closing element in ``[constraints]`` makes that choice explicit.
"""

from __future__ import annotations

from collections import deque

__all__ = ["find_loop"]

WORLD = "world"


def _path(adjacent, a, b):
    """``(bodies and joint arrows, joint names)`` on the path from ``a`` to ``b`` through the tree
    ``adjacent`` (BFS)."""
    prev = {a: None}
    queue = deque([a])
    while queue:
        n = queue.popleft()
        if n == b:
            break
        for m, joint in adjacent.get(n, ()):
            if m not in prev:
                prev[m] = (n, joint)
                queue.append(m)
    out, names, n = [b], [], b
    while prev[n] is not None:
        n, joint = prev[n]
        out += [f"--{joint}-->", n]
        names.append(joint)
    return out[::-1], names[::-1]


def find_loop(joints):
    """The first joint (in file order) that closes a kinematic loop, and the loop.

    Arguments:
        joints: ``[(joint_name, body1, body2)]`` with ``"world"`` for the ground.

    Returns:
        ``None`` for a forest, else ``(joint_name, cycle, members)``: ``cycle`` a readable string
        ``"world --crank_pivot--> crank --crank_coupler--> ... rocker --rocker_pivot--> world"``,
        ``members`` the names of the joints on the loop, the closing one last.
    """
    root = {}

    def find(x):
        root.setdefault(x, x)
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    adjacent = {}
    for name, b1, b2 in joints:
        r1, r2 = find(b1), find(b2)
        if r1 == r2:
            path, names = _path(adjacent, b1, b2)
            return name, " ".join(path + [f"--{name}-->", b1]), names + [name]
        root[r1] = r2
        adjacent.setdefault(b1, []).append((b2, name))
        adjacent.setdefault(b2, []).append((b1, name))
    return None
