"""The structured Newton solver of a :class:`~jaxrod.system.MultibodySystem` (its
``default_linear_solver``).

Coupling graph (:mod:`jaxrod.solvers.ordering`): one node per body (its 6 coordinates ``x, psi``),
an edge per joint between two bodies, each joint's multiplier rows attached to its bodies. A
chain of ``n`` bodies becomes ``n`` blocks of ``6 + rows per joint`` unknowns (the body, then the
joint to its predecessor), a closed loop blocks of two bodies; the Jacobian is built with ``3 m``
JVPs (``m`` the block size, independent of ``n``) and factored by block LU, so a Newton
iteration costs ``O(n)``. Small systems, and systems whose widest BFS level makes blocks so big
that block LU costs more than dense LU (wide trees), use the dense solver (:data:`DENSE_BELOW`,
:func:`~jaxrod.solvers.ordering.prefer_dense`).

Any element that couples two bodies (a joint, a spring between two points) must appear in
:func:`coupled_body_pairs` (joints and force elements do): an entry of the Jacobian outside the block pattern is silently
aliased into another (wrong Newton steps and gradients); ``tests/test_system_sparse.py`` checks
the pattern against the dense Jacobian.
"""

from __future__ import annotations

import numpy as np

from ..solvers.jacobian import BlockTridiagonalJacobianSolver, DenseJacobianSolver, PermutedJacobianSolver
from ..solvers.ordering import level_layout, prefer_dense

#: Systems with fewer unknowns than this use the dense Jacobian. Measured (benchmarks/hybrid.py):
#: structured is already 2.5x cheaper per step at 110 unknowns (10 links); the crossover below
#: that was not measured, so one- and two-body systems (the common small cases) stay dense.
DENSE_BELOW = 60


def coupled_body_pairs(system):
    """``(i, j)`` body index pairs whose residual rows depend on each other's coordinates: those
    of every joint and every force element (:mod:`jaxrod.system.forces`) between two bodies."""
    return [p for p in tuple(system.body_index) + tuple(system.forces.ends) if min(p) >= 0]


def multibody_graph(system, offset: int = 0, first_node: int = 0):
    """Coupling graph of ``system``'s unknowns ``[x, psi, mu]`` for
    :func:`~jaxrod.solvers.ordering.level_layout`: ``(nodes, edges, attached)`` with unknown
    indices shifted by ``offset`` and node ids by ``first_node`` (a system embedded in a bigger
    one, :class:`~jaxrod.system.HybridSystem`)."""
    nb, o = system.n_bodies, offset
    nodes = [np.r_[o + 3 * b : o + 3 * b + 3, o + 3 * nb + 3 * b : o + 3 * nb + 3 * b + 3] for b in range(nb)]
    attached = [
        (np.arange(o + 6 * nb + r.start, o + 6 * nb + r.stop), [first_node + i for i in pair if i >= 0])
        for r, pair in zip(system.constraint_rows(), system.body_index)
    ]
    edges = [(first_node + i, first_node + j) for i, j in coupled_body_pairs(system)]
    return nodes, edges, attached


def multibody_layout(system):
    """:class:`~jaxrod.solvers.ordering.Layout` of ``system``'s unknowns ``[x, psi, mu]``."""
    nodes, edges, attached = multibody_graph(system)
    return level_layout(system.n_coordinates, nodes, edges, attached)


def layout_linear_solver(n: int, layout, dense_below: int = DENSE_BELOW):
    """Block-tridiagonal solver of ``n`` unknowns in the order of ``layout``, or
    :class:`~jaxrod.solvers.jacobian.DenseJacobianSolver` where
    :func:`~jaxrod.solvers.ordering.prefer_dense` says dense is cheaper."""
    if prefer_dense(n, layout, dense_below):
        return DenseJacobianSolver()
    return PermutedJacobianSolver(layout.slots, layout.size, BlockTridiagonalJacobianSolver(layout.block_size))


def multibody_linear_solver(system, dense_below: int = DENSE_BELOW):
    """:func:`layout_linear_solver` in the :func:`multibody_layout` order."""
    return layout_linear_solver(system.n_coordinates, multibody_layout(system), dense_below)
