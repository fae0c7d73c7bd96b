"""Solvers: structured Jacobians and the linear algebra behind implicit time steps.

* :mod:`jaxrod.solvers.linear`: block-tridiagonal storage, O(n) block LU factor and solves.
* :mod:`jaxrod.solvers.jacobian`: Jacobian strategies (dense, banded by column colouring).
* :mod:`jaxrod.solvers.newton`: damped Newton/chord iteration with implicit differentiation.
"""

from jaxrod.solvers.jacobian import (
    AbstractJacobianSolver,
    BandedJacobianSolver,
    BlockTridiagonalJacobianSolver,
    DenseJacobianSolver,
    DenseLU,
    PermutedJacobianSolver,
)
from jaxrod.solvers.linear import (
    BlockTridiagonal,
    BlockTridiagonalFactorization,
    block_tridiagonal_factor,
    block_tridiagonal_solve,
    block_tridiagonal_solve_transpose,
)
from jaxrod.solvers.newton import NewtonResult, NewtonSolver, newton_solve

__all__ = [
    "AbstractJacobianSolver",
    "BandedJacobianSolver",
    "BlockTridiagonal",
    "BlockTridiagonalFactorization",
    "BlockTridiagonalJacobianSolver",
    "DenseJacobianSolver",
    "DenseLU",
    "NewtonResult",
    "NewtonSolver",
    "PermutedJacobianSolver",
    "block_tridiagonal_factor",
    "block_tridiagonal_solve",
    "block_tridiagonal_solve_transpose",
    "newton_solve",
]
