"""Block-tridiagonal linear algebra: the O(n) factor/solve behind every banded Newton step.

A banded matrix with ``lower`` sub- and ``upper`` super-diagonals is stored as a block-tridiagonal
matrix with square blocks of size ``m >= max(lower, upper)``: then every in-band entry lies in a
diagonal block or in one of the two adjacent off-diagonal blocks. ``n`` is padded up to
``nb * m`` with identity rows/columns so that all blocks have the same shape and the factorisation
is a single ``lax.scan``.

Layout (``nb`` blocks of size ``m``, padded size ``N = nb * m``)::

    lower_blocks[k] = A[k, k-1]   (lower_blocks[0] is ignored; must be finite)
    diag_blocks[k]  = A[k, k]
    upper_blocks[k] = A[k, k+1]   (upper_blocks[nb-1] is ignored; must be finite)

The factorisation is block LU without inter-block pivoting (block Thomas)::

    D'_0 = D_0,   D'_k = D_k - L_k D'_{k-1}^{-1} U_{k-1}
    A = (I + sub(G)) blockdiag(D') (I + super(H)),   G_k = L_k D'_{k-1}^{-1},  H_k = D'_k^{-1} U_k

Each pivot block ``D'_k`` is inverted with LAPACK (partial pivoting inside the block). This is
stable for the matrices Newton steps on rods produce (block diagonally dominant or symmetric
positive definite); it is not a general-purpose solver for arbitrary banded matrices.

Solves are exposed through ``jax.lax.custom_linear_solve``: derivatives with respect to the
right-hand side use the transposed solve of the same factorisation, and derivatives with respect
to the matrix go through ``BlockTridiagonal.matvec`` (implicit differentiation), never through the
factorisation's scan.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

__all__ = [
    "BlockTridiagonal",
    "BlockTridiagonalFactorization",
    "block_tridiagonal_factor",
    "block_tridiagonal_solve",
    "block_tridiagonal_solve_transpose",
]

# Scan unrolling of the factor and of the two substitution sweeps. Measured on XLA:CPU (see
# benchmarks/linear_solvers.py): unrolling changes time per block by less than the noise, but
# multiplies compile time, so it stays at 1.
FACTOR_UNROLL = 1
SOLVE_UNROLL = 1


def _mv(a, v):
    """Batched small matvec ``(..., m, m), (..., m) -> (..., m)``."""
    return jnp.einsum("...ij,...j->...i", a, v)


def _mm(a, b):
    return jnp.einsum("...ij,...jk->...ik", a, b)


def _t(a):
    return jnp.swapaxes(a, -1, -2)


def _shift_down(x):
    """Prepend one zero block along axis 0: ``(nb-1, ...) -> (nb, ...)``."""
    return jnp.pad(x, [(1, 0)] + [(0, 0)] * (x.ndim - 1))


def _shift_up(x):
    """Append one zero block along axis 0: ``(nb-1, ...) -> (nb, ...)``."""
    return jnp.pad(x, [(0, 1)] + [(0, 0)] * (x.ndim - 1))


def _mtv(a, v):
    """Batched small transposed matvec ``a^T v``."""
    return jnp.einsum("...ji,...j->...i", a, v)


class BlockTridiagonal(eqx.Module):
    """Square block-tridiagonal matrix of logical size ``n`` (padded with identity to ``nb * m``).

    Attributes:
        lower_blocks: ``(nb, m, m)``; ``lower_blocks[k]`` is block ``(k, k-1)``; entry 0 is
            ignored (it must be finite; constructors here set it to zero).
        diag_blocks: ``(nb, m, m)``; block ``(k, k)``. Padding rows/cols hold the identity.
        upper_blocks: ``(nb, m, m)``; ``upper_blocks[k]`` is block ``(k, k+1)``; the last entry
            is ignored (must be finite).
        n: logical size (static); ``(nb - 1) * m < n <= nb * m``.
    """

    lower_blocks: Array
    diag_blocks: Array
    upper_blocks: Array
    n: int = eqx.field(static=True)

    @property
    def block_size(self) -> int:
        return self.diag_blocks.shape[-1]

    @property
    def num_blocks(self) -> int:
        return self.diag_blocks.shape[-3]

    @classmethod
    def from_dense(cls, a, block_size: int) -> BlockTridiagonal:
        """Block-tridiagonal part of a dense ``(n, n)`` matrix; entries outside it are dropped."""
        a = jnp.asarray(a)
        n = a.shape[-1]
        m = int(block_size)
        nb = -(-n // m)
        pad = nb * m - n
        ap = jnp.pad(a, ((0, pad), (0, pad)))
        ap = ap + jnp.diag(jnp.asarray(np.arange(nb * m) >= n, a.dtype))
        blocks = ap.reshape(nb, m, nb, m).transpose(0, 2, 1, 3)  # (row blk, col blk, m, m)
        k = np.arange(nb)
        zero = jnp.zeros((1, m, m), a.dtype)
        lower = jnp.concatenate([zero, blocks[k[1:], k[1:] - 1]], axis=0)
        upper = jnp.concatenate([blocks[k[:-1], k[:-1] + 1], zero], axis=0)
        return cls(lower, blocks[k, k], upper, n)

    def to_dense(self) -> Array:
        """Dense ``(n, n)`` matrix (for tests and small problems)."""
        nb, m = self.num_blocks, self.block_size
        dt = self.diag_blocks.dtype
        full = jnp.zeros((nb, nb, m, m), dt)
        k = np.arange(nb)
        full = full.at[k, k].set(self.diag_blocks)
        if nb > 1:
            full = full.at[k[1:], k[1:] - 1].set(self.lower_blocks[1:])
            full = full.at[k[:-1], k[:-1] + 1].set(self.upper_blocks[:-1])
        return full.transpose(0, 2, 1, 3).reshape(nb * m, nb * m)[: self.n, : self.n]

    def _pad(self, v):
        nb, m = self.num_blocks, self.block_size
        return jnp.pad(v, (0, nb * m - self.n)).reshape(nb, m)

    def matvec(self, v) -> Array:
        """``A @ v``; ``(n,) -> (n,)``."""
        vb = self._pad(v)
        # Shift with pad rather than .at[].add: XLA:CPU lowers the latter to a scatter.
        y = _mv(self.diag_blocks, vb)
        y = y + _shift_down(_mv(self.lower_blocks[1:], vb[:-1]))
        y = y + _shift_up(_mv(self.upper_blocks[:-1], vb[1:]))
        return y.reshape(-1)[: self.n]

    def rmatvec(self, v) -> Array:
        """``A^T @ v``; ``(n,) -> (n,)``."""
        return self.transpose().matvec(v)

    def transpose(self) -> BlockTridiagonal:
        """``A^T`` in the same layout.

        ``(A^T)[k, k-1] = A[k-1, k]^T`` and ``(A^T)[k, k+1] = A[k+1, k]^T``.
        """
        lower = _shift_down(_t(self.upper_blocks[:-1]))
        upper = _shift_up(_t(self.lower_blocks[1:]))
        return BlockTridiagonal(lower, _t(self.diag_blocks), upper, self.n)

    def diagonal(self) -> Array:
        """Main diagonal, ``(n,)``."""
        return jnp.diagonal(self.diag_blocks, axis1=-2, axis2=-1).reshape(-1)[: self.n]


class BlockTridiagonalFactorization(eqx.Module):
    """Block LU factors of a :class:`BlockTridiagonal` ``A`` (see module docstring).

    Attributes:
        matrix: the factored matrix (kept for the matvec that defines derivatives of solves).
        diag_inv: ``(nb, m, m)``, ``D'_k^{-1}``.
        lower_mult: ``(nb, m, m)``, ``G_k = L_k D'_{k-1}^{-1}`` (``G_0 = 0``).
        upper_mult: ``(nb, m, m)``, ``H_k = D'_k^{-1} U_k`` (``H_{nb-1} = 0``).
    """

    matrix: BlockTridiagonal
    diag_inv: Array
    lower_mult: Array
    upper_mult: Array


def block_tridiagonal_factor(matrix: BlockTridiagonal) -> BlockTridiagonalFactorization:
    """Block LU (block Thomas) of ``matrix``; O(nb m^3) work in one ``lax.scan`` over blocks."""
    L, D, U = matrix.lower_blocks, matrix.diag_blocks, matrix.upper_blocks
    m = matrix.block_size
    # The ignored corner blocks L_0 and U_{nb-1} only ever meet a zero carry (h_prev at k = 0 here,
    # the zero start of the back substitution for H_{nb-1}), so they are not masked: zeroing them
    # costs a copy of L and U, measured at 10-15% of the factor at n = 6400.

    def step(h_prev, ldu):
        lk, dk, uk = ldu
        # LAPACK inverse (getrf with partial pivoting inside the block). Measured per block at
        # m = 10 on XLA:CPU: inv 4.1-4.3 us, getrf on [D'|U|I] + one trsm 3.8-4.4 us,
        # lu_factor + lu_solve 4.3-5.2 us, hand-written Gauss-Jordan 4.7 us unpivoted and
        # 13-15 us pivoted (one XLA op per pivot step). Per-op dispatch dominates at this size.
        dinv = jnp.linalg.inv(dk - lk @ h_prev)
        h = dinv @ uk
        return h, (dinv, h)

    _, (dinv, H) = jax.lax.scan(step, jnp.zeros((m, m), D.dtype), (L, D, U), unroll=FACTOR_UNROLL)
    # G depends on D'^{-1} of the previous block only, so it is one batched product, off the
    # sequential path.
    G = _shift_down(_mm(L[1:], dinv[:-1]))
    return BlockTridiagonalFactorization(matrix, dinv, G, H)


def _bidiagonal_sweep(mult, rhs, reverse):
    """Unit block-bidiagonal solve ``y_k = rhs_k - mult_k y_prev``.

    Shapes: ``mult (nb, m, m)``, ``rhs (nb, m)`` -> ``(nb, m)``.

    ``mult_k`` couples block k to the block solved just before it (k-1 forward, k+1 with
    ``reverse``); the first block solved must have ``mult == 0``.
    """

    def step(y_prev, mr):
        mk, rk = mr
        y = rk - mk @ y_prev
        return y, y

    init = jnp.zeros_like(rhs[0])
    _, y = jax.lax.scan(step, init, (mult, rhs), reverse=reverse, unroll=SOLVE_UNROLL)
    return y


def _bidiagonal_sweep_transposed(mult, rhs, reverse):
    """``y_k = rhs_k - mult_prev^T y_prev``; shapes as in :func:`_bidiagonal_sweep`.

    This is the transpose of the system of :func:`_bidiagonal_sweep` run in the opposite
    direction. Carrying ``mult_prev`` through the scan avoids materialising
    shifted, transposed copies of ``mult`` (measured ~30% of a solve at n = 6400)."""

    def step(carry, mr):
        y_prev, m_prev = carry
        mk, rk = mr
        y = rk - m_prev.T @ y_prev
        return (y, mk), y

    init = (jnp.zeros_like(rhs[0]), jnp.zeros_like(mult[0]))
    _, y = jax.lax.scan(step, init, (mult, rhs), reverse=reverse, unroll=SOLVE_UNROLL)
    return y


def _solve_padded(fac: BlockTridiagonalFactorization, rb):
    """``A x = b`` on padded blocks ``rb (nb, m) -> (nb, m)``."""
    z = _bidiagonal_sweep(fac.lower_mult, rb, reverse=False)
    return _bidiagonal_sweep(fac.upper_mult, _mv(fac.diag_inv, z), reverse=True)


def _solve_transpose_padded(fac: BlockTridiagonalFactorization, rb):
    """``A^T x = b`` from the same factors: ``A^T = (I + super(H))^T D'^T (I + sub(G))^T``.

    ``(I + super(H))^T`` is unit lower bidiagonal with block ``(k, k-1) = H_{k-1}^T``;
    ``(I + sub(G))^T`` is unit upper bidiagonal with block ``(k, k+1) = G_{k+1}^T``.
    """
    w = _bidiagonal_sweep_transposed(fac.upper_mult, rb, reverse=False)
    return _bidiagonal_sweep_transposed(fac.lower_mult, _mtv(fac.diag_inv, w), reverse=True)


def _unpadded(fac, padded_solver):
    a = fac.matrix
    return lambda r: padded_solver(fac, a._pad(r)).reshape(-1)[: a.n]


def block_tridiagonal_solve(fac: BlockTridiagonalFactorization, b) -> Array:
    """Solve ``A x = b``, ``(n,) -> (n,)``, given ``fac = block_tridiagonal_factor(A)``.

    Differentiable (forward and reverse) with respect to ``b`` and to ``fac.matrix``.
    """
    a = fac.matrix
    return jax.lax.custom_linear_solve(
        a.matvec,
        b,
        solve=lambda _, r: _unpadded(fac, _solve_padded)(r),
        transpose_solve=lambda _, r: _unpadded(fac, _solve_transpose_padded)(r),
    )


def block_tridiagonal_solve_transpose(fac: BlockTridiagonalFactorization, b) -> Array:
    """Solve ``A^T x = b`` from the factorisation of ``A``; ``(n,) -> (n,)``. Differentiable like
    :func:`block_tridiagonal_solve`."""
    a = fac.matrix
    return jax.lax.custom_linear_solve(
        a.rmatvec,
        b,
        solve=lambda _, r: _unpadded(fac, _solve_transpose_padded)(r),
        transpose_solve=lambda _, r: _unpadded(fac, _solve_padded)(r),
    )
