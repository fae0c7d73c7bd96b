"""Jacobian strategies for Newton solves: build ``J = df/dx``, factor it, solve with it.

A strategy is a small :class:`equinox.Module` (its configuration is static) with the protocol::

    op  = solver.linearize(f, x)      # f: (n,) -> (n,), x: (n,)  ->  operator pytree holding J
    fac = solver.factor(op)           # reusable for many right-hand sides
    y   = solver.solve(fac, b)        # J y = b,    (n,) -> (n,)
    y   = solver.solve_transpose(fac, b)  # J^T y = b
    d   = solver.diagonal(op)         # (n,) diagonal of J
    w   = solver.matvec(op, v)        # J @ v
    op  = solver.operator(fac)        # the operator fac factorises (None: not kept)

* :class:`DenseJacobianSolver`: ``jax.jacfwd`` (n JVPs) and dense LU. Cheapest for small n.
* :class:`BandedJacobianSolver`: ``lower + upper + 1`` JVPs by column colouring, block-tridiagonal
  storage and block LU (:mod:`jaxrod.solvers.linear`); O(n) for fixed bandwidth.
* :class:`BlockTridiagonalJacobianSolver`: ``3 m`` JVPs for a matrix that is block tridiagonal
  with blocks of size ``m`` (a chain of coupled groups of unknowns), same storage and block LU.
* :class:`ColouredJacobianSolver`: any known sparsity pattern, one JVP per colour of a greedy
  column colouring (:func:`colour_columns`), stored and factored densely (a DER network).
* :class:`PermutedJacobianSolver`: any of the above applied to a reordered (and padded) copy of
  the unknowns, e.g. a multibody system laid out body by body (:mod:`jaxrod.system.structure`).

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
    "BlockTridiagonalJacobianSolver",
    "ColouredJacobianSolver",
    "DenseJacobianSolver",
    "PermutedJacobianSolver",
    "DenseLU",
    "assemble_band",
    "band_assembly_plan",
    "colour_columns",
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
        """``J @ v``; ``(n,) -> (n,)``; linear in ``v`` and transposable (``jax.linear_transpose``)."""

    def operator(self, fac):
        """The operator ``fac = self.factor(op)`` factorises, or ``None`` when ``fac`` does not
        keep it. With it, implicit differentiation of a Newton solve reuses the loop's Jacobian at
        the root (:func:`jaxrod.solvers.newton.newton_solve`) instead of linearising again."""
        return None


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

    def operator(self, fac):
        return fac.matrix


def _band_gather_indices(n: int, lower: int, upper: int, m: int, colours: int | None = None):
    """Trace-time gather plan from the colour-compressed Jacobian to block-tridiagonal blocks.

    With ``c = min(colours, n)`` colours (default ``lower + upper + 1``: any ``c`` consecutive
    columns may share a row; ``3 m`` when only the three blocks around the diagonal are nonzero), ``C[k, i] = J[i, j]`` for the unique in-band
    column ``j`` of row ``i`` with ``j % c == k``. Returns ``idx (3, nb, m, m)`` into
    ``concat(C.ravel(), [0])`` (out-of-band / out-of-range entries point at the trailing zero)
    and ``eye (nb, m, m)``, the identity on padding rows, for the diagonal blocks.
    """
    c = min(lower + upper + 1 if colours is None else colours, n)
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


def _coloured_blocks(f, x, linear, plan) -> BlockTridiagonal:
    """Block-tridiagonal Jacobian of ``f`` at ``x`` from one JVP per colour of ``plan``
    (:func:`_band_gather_indices`), all in one ``vmap``."""
    c, idx, pad_eye = plan
    n = x.shape[-1]
    seeds = jnp.asarray(np.arange(n)[None, :] % c == np.arange(c)[:, None], x.dtype)
    if linear:
        compressed = jax.vmap(f)(seeds)  # (c, n)
    else:
        compressed = jax.vmap(lambda s: jax.jvp(f, (x,), (s,))[1])(seeds)  # (c, n)
    flat = jnp.concatenate([compressed.reshape(-1), jnp.zeros((1,), compressed.dtype)])
    blocks = flat[idx]
    return BlockTridiagonal(blocks[0], blocks[1] + jnp.asarray(pad_eye, compressed.dtype), blocks[2], n)


class _BlockTridiagonalOps(AbstractJacobianSolver):
    """Factor, solves, diagonal and matvec of a :class:`BlockTridiagonal` operator."""

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

    def operator(self, fac: BlockTridiagonalFactorization) -> BlockTridiagonal:
        return fac.matrix


def band_assembly_plan(rows, cols, n: int, m: int):
    """Trace-time plan to scatter-add entries ``(rows[k], cols[k])`` of an ``(n, n)`` matrix into
    :class:`~jaxrod.solvers.linear.BlockTridiagonal` storage with blocks of size ``m``: flat indices
    ``(nnz,)`` into ``concat(lower, diag, upper).ravel()`` and the padding identity ``(nb, m, m)``.
    Raises ``ValueError`` for an entry outside the three block diagonals."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    nb = -(-n // m)
    kb, jb = rows // m, cols // m
    d = jb - kb
    if rows.size and (np.abs(d).max() > 1 or rows.min() < 0 or cols.min() < 0 or max(rows.max(), cols.max()) >= n):
        raise ValueError(f"band_assembly_plan: entries outside the block tridiagonal of block size {m} (n = {n})")
    idx = (((d + 1) * nb + kb) * m + rows % m) * m + cols % m
    i = np.arange(nb)[:, None, None] * m + np.arange(m)[None, :, None]
    pad_eye = ((i >= n) & (np.arange(m)[None, :, None] == np.arange(m)[None, None, :])).astype(np.float64)
    return idx.astype(np.int32), pad_eye * np.ones((nb, m, m))


def assemble_band(values, plan, n: int) -> BlockTridiagonal:
    """:class:`~jaxrod.solvers.linear.BlockTridiagonal` from entry ``values`` ``(nnz,)`` summed at
    the positions of ``plan`` (:func:`band_assembly_plan`); repeated entries add up."""
    idx, pad_eye = plan
    nb, m = pad_eye.shape[0], pad_eye.shape[-1]
    flat = jnp.zeros((3 * nb * m * m,), values.dtype).at[idx].add(values, indices_are_sorted=False)
    blocks = flat.reshape(3, nb, m, m)
    return BlockTridiagonal(blocks[0], blocks[1] + jnp.asarray(pad_eye, values.dtype), blocks[2], n)


class BandedJacobianSolver(_BlockTridiagonalOps):
    """Banded Jacobian via column colouring, stored and factored block-tridiagonally.

    ``J[i, j] == 0`` for ``i - j > lower`` or ``j - i > upper`` is assumed, not checked: entries
    outside the band are silently aliased into in-band ones by the colouring.

    Attributes:
        lower: number of sub-diagonals.
        upper: number of super-diagonals.
        block_size: block size ``m``; default ``max(lower, upper, 1)``, the fastest measured
            (``benchmarks/linear_solvers.py``). Must be at least ``max(lower, upper)``.
        model_jacobian: in an implicit time step, use the Jacobian the model assembles itself
            when it can (``model.stage_jacobian``: a DER rod's element-local Hessians, see
            ``jaxrod.models.der.hessian``) instead of the coloured JVPs; ``False``: always the
            coloured JVPs. Other uses (static solves, implicit differentiation) colour.
    """

    lower: int = eqx.field(static=True)
    upper: int = eqx.field(static=True)
    block_size: int | None = eqx.field(static=True, default=None)
    model_jacobian: bool = eqx.field(static=True, default=True)

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
        return _coloured_blocks(f, x, linear, _band_gather_indices(n, self.lower, self.upper, self._block_size(n)))


class BlockTridiagonalJacobianSolver(_BlockTridiagonalOps):
    """Jacobian that is block tridiagonal with square blocks of ``block_size`` rows: row block
    ``k`` depends only on column blocks ``k - 1, k, k + 1``. Built from ``3 block_size`` JVPs
    (column ``j`` in colour ``j mod 3 block_size``), whatever ``n``; stored and factored like
    :class:`BandedJacobianSolver` (block LU without pivoting between blocks: each leading block
    principal submatrix must be nonsingular). The band holding the same matrix has half-bandwidth
    ``2 m - 1``: :class:`BandedJacobianSolver` would need ``4 m - 1`` JVPs and blocks of size
    ``2 m - 1`` (8 times the work per block, half as many blocks).

    Entries outside the three block diagonals are assumed zero, not checked (they alias).
    """

    block_size: int = eqx.field(static=True)

    def __check_init__(self):
        if not isinstance(self.block_size, int) or self.block_size < 1:
            raise ValueError(f"BlockTridiagonalJacobianSolver.block_size must be an int >= 1, got {self.block_size!r}")

    def linearize(self, f, x, *, linear: bool = False) -> BlockTridiagonal:
        n = x.shape[-1]
        m = min(self.block_size, n)
        return _coloured_blocks(f, x, linear, _band_gather_indices(n, 2 * m - 1, 2 * m - 1, m, colours=3 * m))


class PermutedJacobianSolver(AbstractJacobianSolver):
    """``inner`` applied to the unknowns in another order, with padding unknowns added.

    The model's residual and state layout stay as they are; this solver sees the residual
    ``g(y) = P f(P^T y) + (I - P P^T) y`` of ``y`` (``(N,)``, ``N >= n``), where ``P`` puts
    unknown ``i`` at position ``slots[i]`` and every position no unknown occupies is a padding
    unknown with the identity row (so groups of unknowns can be aligned to uniform blocks). Then
    ``dg/dy = P J P^T + (I - P P^T)``: solves, transposed solves (implicit differentiation), the
    diagonal and matvecs of ``J`` are those of ``inner`` permuted back.

    Attributes:
        slots: ``(n,)`` distinct positions in ``[0, N)`` (an int array).
        padding: ``(N,)`` 1.0 where no unknown sits, 0.0 elsewhere.
        inner: the solver of the reordered problem (e.g. :class:`BlockTridiagonalJacobianSolver`).
    """

    slots: Array
    padding: Array
    inner: AbstractJacobianSolver

    def __init__(self, slots, size: int, inner: AbstractJacobianSolver):
        s = np.asarray(slots)
        if s.ndim != 1 or not np.issubdtype(s.dtype, np.integer) or len(np.unique(s)) != s.size:
            raise ValueError(f"PermutedJacobianSolver.slots must be distinct integers, got {s!r}")
        if s.size and (s.min() < 0 or s.max() >= size):
            raise ValueError(f"PermutedJacobianSolver.slots must lie in [0, size={size}), got [{s.min()}, {s.max()}]")
        pad = np.ones(size)
        pad[s] = 0.0
        self.slots, self.padding, self.inner = jnp.asarray(s, jnp.int32), jnp.asarray(pad), inner

    def _scatter(self, v):
        # slots are distinct: a scatter with unique indices is transposable (implicit
        # differentiation transposes matvec in reverse mode)
        return jnp.zeros(self.padding.shape, v.dtype).at[self.slots].set(v, unique_indices=True)

    def linearize(self, f, x, *, linear: bool = False):
        def g(y):
            return self._scatter(f(y[self.slots])) + self.padding.astype(y.dtype) * y

        return self.inner.linearize(g, self._scatter(x), linear=linear)

    def factor(self, op):
        return self.inner.factor(op)

    def solve(self, fac, b) -> Array:
        return self.inner.solve(fac, self._scatter(b))[self.slots]

    def solve_transpose(self, fac, b) -> Array:
        return self.inner.solve_transpose(fac, self._scatter(b))[self.slots]

    def diagonal(self, op) -> Array:
        return self.inner.diagonal(op)[self.slots]

    def matvec(self, op, v) -> Array:
        return self.inner.matvec(op, self._scatter(v))[self.slots]

    def operator(self, fac):
        return self.inner.operator(fac)


def colour_columns(rows, cols, n):
    """Greedy colouring of the ``n`` columns of a sparse pattern so that no two columns of one
    colour share a row (then one JVP per colour recovers every entry). Returns ``(n,)`` colours."""
    col_rows = [[] for _ in range(n)]
    row_cols = [[] for _ in range(n)]
    for r, c in zip(rows.tolist(), cols.tolist()):
        col_rows[c].append(r)
        row_cols[r].append(c)
    colour = np.full(n, -1, dtype=np.int64)
    for c in range(n):
        used = {colour[k] for r in col_rows[c] for k in row_cols[r] if colour[k] >= 0}
        k = 0
        while k in used:
            k += 1
        colour[c] = k
    return colour


class ColouredJacobianSolver(AbstractJacobianSolver):
    """Jacobian with a known sparsity pattern from one JVP per column colour, stored and factored
    densely (partial-pivoting LU, as :class:`~jaxrod.solvers.jacobian.DenseJacobianSolver`).

    Entries outside the pattern are assumed zero, not checked (a wrong pattern aliases them).

    Attributes:
        seeds: ``(c, n)`` 0/1 seed vectors, one per colour.
        rows, cols: ``(nnz,)`` pattern entries.
        entry_colour: ``(nnz,)`` colour of each entry's column.
    """

    seeds: jax.Array
    rows: jax.Array
    cols: jax.Array
    entry_colour: jax.Array

    @classmethod
    def from_pattern(cls, rows, cols, n: int) -> ColouredJacobianSolver:
        colour = colour_columns(np.asarray(rows), np.asarray(cols), n)
        seeds = (colour[None, :] == np.arange(colour.max() + 1)[:, None]).astype(float)
        return cls(
            jnp.asarray(seeds),
            jnp.asarray(rows),
            jnp.asarray(cols),
            jnp.asarray(colour[cols]),
        )

    @property
    def n_colours(self) -> int:
        return int(self.seeds.shape[0])

    def linearize(self, f, x, *, linear: bool = False):
        seeds = self.seeds.astype(x.dtype)
        if linear:
            comp = jax.vmap(f)(seeds)
        else:
            comp = jax.vmap(lambda s: jax.jvp(f, (x,), (s,))[1])(seeds)  # (c, n)
        n = x.shape[-1]
        return (
            jnp.zeros((n, n), comp.dtype)
            .at[self.rows, self.cols]
            .set(comp[self.entry_colour, self.rows])
        )

    def factor(self, op):
        return DenseJacobianSolver().factor(op)

    def solve(self, fac, b):
        return DenseJacobianSolver().solve(fac, b)

    def solve_transpose(self, fac, b):
        return DenseJacobianSolver().solve_transpose(fac, b)

    def diagonal(self, op):
        return jnp.diagonal(op, axis1=-2, axis2=-1)

    def matvec(self, op, v):
        return op @ v

    def operator(self, fac):
        return fac.matrix
