"""Jacobian strategies for Newton solves: build ``J = df/dx``, factor it, solve with it.

A strategy is a small :class:`equinox.Module` (its configuration is static) with the protocol::

    op  = solver.linearize(f, x)      # f: (n,) -> (n,), x: (n,)  ->  operator pytree holding J
    fac = solver.factor(op)           # reusable for many right-hand sides
    y   = solver.solve(fac, b)        # J y = b,    (n,) -> (n,)
    y   = solver.solve_transpose(fac, b)  # J^T y = b
    d   = solver.diagonal(op)         # (n,) diagonal of J
    w   = solver.matvec(op, v)        # J @ v

* :class:`DenseJacobianSolver`: ``jax.jacfwd`` (n JVPs) and dense LU. Cheapest for small n.
* :class:`BandedJacobianSolver`: ``lower + upper + 1`` JVPs by column colouring, block-tridiagonal
  storage and block LU (:mod:`jaxrod.solvers.linear`); O(n) for fixed bandwidth.

All methods work under ``jit`` and ``vmap``; ``solve`` and ``solve_transpose`` are
differentiable in forward and reverse mode with respect to ``b`` and to the operator.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.scipy.linalg import lu_factor, lu_solve

from jaxrod.solvers.linear import (
    BlockTridiagonal,
    BlockTridiagonalFactorization,
    block_tridiagonal_factor,
    block_tridiagonal_solve,
    block_tridiagonal_solve_transpose,
)

__all__ = [
    "AbstractJacobianSolver",
    "BandedJacobianSolver",
    "DenseJacobianSolver",
    "DenseLU",
]


class AbstractJacobianSolver(eqx.Module):
    """Strategy for "build the Jacobian of ``f`` at ``x``, factor it, solve with it"."""

    @abc.abstractmethod
    def linearize(self, f, x, *, linear: bool = False):
        """Operator holding ``J = df/dx (x)``; ``f: (n,) -> (n,)``, ``x: (n,)``.

        ``linear=True`` declares ``f`` linear (e.g. an already linearised residual inside an
        implicit-differentiation solve): columns are then ``f(seed)`` directly, without the
        forward-mode pass that would also recompute ``f(x)``.
        """

    @abc.abstractmethod
    def factor(self, op):
        """Factorisation of ``op``, reusable for many right-hand sides."""

    @abc.abstractmethod
    def solve(self, fac, b) -> Array:
        """``J^{-1} b``; ``(n,) -> (n,)``."""

    @abc.abstractmethod
    def solve_transpose(self, fac, b) -> Array:
        """``J^{-T} b``; ``(n,) -> (n,)``."""

    @abc.abstractmethod
    def diagonal(self, op) -> Array:
        """Diagonal of ``J``, ``(n,)``."""

    @abc.abstractmethod
    def matvec(self, op, v) -> Array:
        """``J @ v``; ``(n,) -> (n,)``."""


class DenseLU(eqx.Module):
    """Dense LU of ``matrix (n, n)``: ``lu (n, n)`` and LAPACK row ``pivots (n,)``."""

    matrix: Array
    lu: Array
    pivots: Array


class DenseJacobianSolver(AbstractJacobianSolver):
    """Dense Jacobian (``jax.jacfwd``, n JVPs) with partial-pivoting LU.

    The operator is the ``(n, n)`` Jacobian array; the factorisation a :class:`DenseLU`.
    """

    def linearize(self, f, x, *, linear: bool = False):
        if linear:
            return jax.vmap(f, out_axes=1)(jnp.eye(x.shape[-1], dtype=x.dtype))
        return jax.jacfwd(f)(x)

    def factor(self, op):
        lu, piv = lu_factor(op)
        return DenseLU(op, lu, piv)

    def _solve(self, fac, b, trans):
        a = fac.matrix

        def mv(v):
            return a @ v if trans == 0 else a.T @ v

        return jax.lax.custom_linear_solve(
            mv,
            b,
            solve=lambda _, r: lu_solve((fac.lu, fac.pivots), r, trans=trans),
            transpose_solve=lambda _, r: lu_solve((fac.lu, fac.pivots), r, trans=1 - trans),
        )

    def solve(self, fac, b):
        return self._solve(fac, b, 0)

    def solve_transpose(self, fac, b):
        return self._solve(fac, b, 1)

    def diagonal(self, op):
        return jnp.diagonal(op, axis1=-2, axis2=-1)

    def matvec(self, op, v):
        return op @ v


def _band_gather_indices(n: int, lower: int, upper: int, m: int):
    """Trace-time gather plan from the colour-compressed Jacobian to block-tridiagonal blocks.

    With ``c = min(lower + upper + 1, n)`` colours, ``C[k, i] = J[i, j]`` for the unique in-band
    column ``j`` of row ``i`` with ``j % c == k``. Returns ``idx (3, nb, m, m)`` into
    ``concat(C.ravel(), [0])`` (out-of-band / out-of-range entries point at the trailing zero)
    and ``eye (nb, m, m)``, the identity on padding rows, for the diagonal blocks.
    """
    c = min(lower + upper + 1, n)
    nb = -(-n // m)
    kb = np.arange(nb)[:, None, None]
    r = np.arange(m)[None, :, None]
    s = np.arange(m)[None, None, :]
    i = kb * m + r
    idx = []
    for d in (-1, 0, 1):
        j = (kb + d) * m + s
        valid = (i < n) & (j >= 0) & (j < n) & (j - i <= upper) & (i - j <= lower)
        idx.append(np.where(valid, (j % c) * n + i, c * n))
    pad_eye = ((i >= n) & (r == s)).astype(np.float64) * np.ones((nb, m, m))
    return c, np.stack(idx).astype(np.int32), pad_eye


class BandedJacobianSolver(AbstractJacobianSolver):
    """Banded Jacobian via column colouring, stored and factored block-tridiagonally.

    ``J[i, j] == 0`` for ``i - j > lower`` or ``j - i > upper`` is assumed, not checked: entries
    outside the band are silently aliased into in-band ones by the colouring.

    Attributes:
        lower: number of sub-diagonals.
        upper: number of super-diagonals.
        block_size: block size ``m``; default ``max(lower, upper, 1)``, the fastest measured
            (``benchmarks/linear_solvers.py``). Must be at least ``max(lower, upper)``.
    """

    lower: int = eqx.field(static=True)
    upper: int = eqx.field(static=True)
    block_size: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.lower < 0 or self.upper < 0:
            raise ValueError(f"bandwidths must be >= 0, got lower={self.lower}, upper={self.upper}")
        if self.block_size is not None and self.block_size < max(self.lower, self.upper, 1):
            raise ValueError(
                f"block_size={self.block_size} < max(lower, upper) = {max(self.lower, self.upper)}"
            )

    def _block_size(self, n: int) -> int:
        m = self.block_size if self.block_size is not None else max(self.lower, self.upper, 1)
        return max(1, min(m, n))

    def linearize(self, f, x, *, linear: bool = False) -> BlockTridiagonal:
        """``(n,) -> BlockTridiagonal`` using ``min(lower + upper + 1, n)`` JVPs (one ``vmap``);
        ``linear=True``: ``f`` is linear and is applied to the seeds directly."""
        n = x.shape[-1]
        m = self._block_size(n)
        c, idx, pad_eye = _band_gather_indices(n, self.lower, self.upper, m)
        seeds = jnp.asarray(np.arange(n)[None, :] % c == np.arange(c)[:, None], x.dtype)
        if linear:
            compressed = jax.vmap(f)(seeds)  # (c, n)
        else:
            compressed = jax.vmap(lambda s: jax.jvp(f, (x,), (s,))[1])(seeds)  # (c, n)
        flat = jnp.concatenate([compressed.reshape(-1), jnp.zeros((1,), compressed.dtype)])
        blocks = flat[idx]
        return BlockTridiagonal(
            blocks[0], blocks[1] + jnp.asarray(pad_eye, compressed.dtype), blocks[2], n
        )

    def factor(self, op: BlockTridiagonal) -> BlockTridiagonalFactorization:
        return block_tridiagonal_factor(op)

    def solve(self, fac: BlockTridiagonalFactorization, b) -> Array:
        return block_tridiagonal_solve(fac, b)

    def solve_transpose(self, fac: BlockTridiagonalFactorization, b) -> Array:
        return block_tridiagonal_solve_transpose(fac, b)

    def diagonal(self, op: BlockTridiagonal) -> Array:
        return op.diagonal()

    def matvec(self, op: BlockTridiagonal, v) -> Array:
        return op.matvec(v)
