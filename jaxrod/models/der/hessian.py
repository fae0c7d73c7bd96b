"""Exact Newton Jacobians of a one-limb DER rod from element-local Hessians.

The elastic energy of a rod is a sum over elements: stretching over edges (a function of the
edge vector, 3 DOFs) and bending plus twisting over stencils (a function of the stencil's two edge
vectors and two twist angles, 8 DOFs, placed on 11 consecutive entries of the flattened ``(N, 4)``
state). Each stencil's Hessian with respect to its own DOFs is one second-order forward pass per
entry of its upper triangle, batched over all stencils at once (36 passes of one output each,
:func:`batched_hessian`; the coloured banded Jacobian needs 21 passes over the whole rod); each
edge's is written out (:func:`_edge_hessians`). The band of
the global Jacobian is their scatter-added sum. The stencil energy is the same function the residual
differentiates (:func:`~jaxrod.models.der.frames.stencil_strains`, with the reference frames
time-parallel transported from the last converged step), so the Jacobian is exact to round-off.

Everything else in the residual (inertia, damping, gravity and loads, floor contact and friction,
tendons and chambers) is differentiated by JVPs of that remainder alone: 4 colours when it acts
node by node (one node's 4 entries), the 21 band colours otherwise (tendons, chambers, anisotropic
floor friction, whose rod directions couple neighbouring nodes).

Used by :meth:`jaxrod.models.der.DERNetwork.stage_jacobian` in every implicit time step of a
chain without rod-rod contact (``BandedJacobianSolver.model_jacobian``, the default).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ...solvers.jacobian import assemble_band, band_assembly_plan
from .frames import _vec, stencil_strains

# stencil DOFs (x_a, theta_e, x_b, theta_f, x_c) -> (e = x_b - x_a, theta_e, f = x_c - x_b, theta_f)
_A = np.zeros((8, 11))
for _c in range(3):
    _A[_c, 4 + _c], _A[_c, _c] = 1.0, -1.0
    _A[4 + _c, 8 + _c], _A[4 + _c, 4 + _c] = 1.0, -1.0
_A[3, 3] = _A[7, 7] = 1.0
# an edge's 6 position DOFs (x_i, x_{i+1}) -> e = x_{i+1} - x_i
_B = np.concatenate([-np.eye(3), np.eye(3)], axis=1)
_EDGE_SLOTS = np.array([0, 1, 2, 4, 5, 6])


def _stencil_energy(z, old_a, old_b, ref_twist, kappa_bar, tau_bar, vor, EI, GJ):
    """Bending plus twisting energy [J] of each stencil, ``(S,)``, with DOFs ``z`` (8 arrays
    ``(S,)``: ``e``, ``theta_e``, ``f``, ``theta_f``), written as in
    :meth:`~jaxrod.models.der.DERNetwork.elastic_energy` and
    :func:`~jaxrod.models.der.energies.twisting_energy` (before their sums)."""
    k1, k2, twist, _ = stencil_strains(z[0:3], z[3], z[4:7], z[7], old_a, old_b, ref_twist)
    d1 = k1 - kappa_bar[:, 0]
    d2 = k2 - kappa_bar[:, 1]
    bend = 0.5 * ((EI * d1 * d1 + EI * d2 * d2) / vor)
    return bend + 0.5 * (GJ * (twist - tau_bar) ** 2 / vor)


def _edge_hessians(e, rest_lengths, EA):
    """``(E, 3, 3)`` Hessians of the stretching energy ``1/2 EA (|e|/l - 1)^2 l`` of each edge
    (:func:`~jaxrod.models.der.energies.stretching_energy`) in its edge vector ``e`` ``(E, 3)``:
    ``EA/l t t^T + EA (1/l - 1/|e|) (I - t t^T)``, ``t = e/|e|`` (the derivative of the force
    ``EA (|e|/l - 1) t``). Written out, not differentiated: 200 edges compile in 0.06 s instead
    of 0.29 s (the autodiff form's linearised reverse pass and its 3 tangent passes) and run in
    13 instead of 15 us (process CPU, one core, 2026-11-27); the two agree to 2e-16."""
    n = jnp.sqrt(jnp.sum(e * e, axis=1))
    t = e / n[:, None]
    tt = t[:, :, None] * t[:, None, :]
    a = (EA / rest_lengths)[:, None, None]
    b = (EA * (1.0 / rest_lengths - 1.0 / n))[:, None, None]
    return a * tt + b * (jnp.eye(3, dtype=e.dtype) - tt)


def batched_hessian(energy, z):
    """``(k, k, S)`` Hessians ``H[r, c, s]`` of ``energy(z) = (E_s(z[:][s]))_s`` ``(S,)`` for ``z``
    a tuple of ``k`` arrays ``(S,)`` (local DOF ``r`` of every element) when elements do not
    interact: one second-order forward pass (a JVP of a JVP) per entry ``r <= c``, seeding DOFs
    ``r`` and ``c`` in every element at once, looped over the ``k (k + 1) / 2`` entries.

    Each pass has one output, the entry, so XLA compiles the loop body as one kernel: the
    forward-over-reverse form (the gradient linearised, one tangent pass per column) has ``k``
    outputs, and XLA:CPU copies the pass's shared arithmetic into every one of them (8 copies of
    ~1400 HLO lines for a DER stencil). The a1 cantilever's 199 stencil Hessians (frames as
    arguments, as in a step) compile in 2.1 instead of 6.6-6.9 s and run in 0.84 instead of
    2.7 ms (lowering + XLA, process CPU on one core, jaxrod's flags, 2026-11-28; with XLA's
    fusion emitters on: 3.5 instead of 11.8 s, 0.81 instead of 1.34 ms); the two agree to
    3e-16 relative. Batching the passes as columns of one ``(S, k)`` array or by ``vmap``
    instead made XLA:CPU's fusion emitters recompute the shared expressions per entry (1.7 s
    instead of 0.9 ms per call, earlier measurement)."""
    k, S = len(z), z[0].shape[0]
    rows, cols = np.triu_indices(k)
    z = tuple(z)

    def entry(rc):
        r, c = rc
        u = tuple(jnp.broadcast_to((r == j).astype(z[0].dtype), (S,)) for j in range(k))
        v = tuple(jnp.broadcast_to((c == j).astype(z[0].dtype), (S,)) for j in range(k))
        return jax.jvp(lambda x: jax.jvp(energy, (x,), (u,))[1], (z,), (v,))[1]

    vals = jax.lax.map(entry, (jnp.asarray(rows), jnp.asarray(cols)))  # (k (k + 1) / 2, S)
    pair = np.zeros((k, k), dtype=np.int32)
    pair[rows, cols] = pair[cols, rows] = np.arange(rows.size)
    return vals[pair]


def _stencil_inputs(model, q, frames, t):
    """The stencils' DOFs ``z`` (8 arrays ``(S,)``, see :func:`_stencil_energy`) of a chain's ``q``
    ``(N, 4)``, the other arguments of :func:`_stencil_energy` and the node positions ``(N, 3)``."""
    vor, EI, GJ = model.stencil_parameters()
    x, th = q[:, :3], q[:, 3]
    ea, eb = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    z = (ea[:, 0], ea[:, 1], ea[:, 2], th[:-2], eb[:, 0], eb[:, 1], eb[:, 2], th[1:-1])
    old_a = (_vec(frames.d1[:-1]), _vec(frames.tangent[:-1]))
    old_b = (_vec(frames.d1[1:]), _vec(frames.tangent[1:]))
    kappa_bar, tau_bar = model.natural_curvature_at(t), model.natural_twist_at(t)
    return z, (old_a, old_b, frames.ref_twist, kappa_bar, tau_bar, vor, EI, GJ), x


def elastic_hessians(model, q, frames, t):
    """Element Hessians of a chain's elastic energy at ``q`` ``(N, 4)``: stencils ``(S, 11, 11)``
    on flat entries ``4 i .. 4 i + 10`` and edges ``(E, 6, 6)`` on the positions of nodes ``i,
    i + 1`` (flat ``4 i + (0, 1, 2, 4, 5, 6)``)."""
    z, args, x = _stencil_inputs(model, q, frames, t)
    Hz = batched_hessian(lambda z: _stencil_energy(z, *args), z)
    A = jnp.asarray(_A, q.dtype)
    Hs = jnp.einsum("ai,abs,bj->sij", A, Hz, A)
    EA = model._per_edge(lambda r: r.EA)
    rest = model.rest_lengths()
    e = x[1:] - x[:-1]
    He = _edge_hessians(e, rest, EA)
    B = jnp.asarray(_B, q.dtype)
    return Hs, jnp.einsum("ai,sab,bj->sij", B, He, B)


@functools.lru_cache(maxsize=32)
def element_slots(n_nodes: int):
    """Flat entries (of ``q.reshape(-1)``, ``(4 N,)``) of each stencil's 11 DOFs ``(S, 11)`` and of
    each edge's 6 position DOFs ``(E, 6)``: the layout of :func:`elastic_hessians` and
    :func:`element_elastic_force`."""
    stencils = 4 * np.arange(n_nodes - 2)[:, None] + np.arange(11)[None, :]
    edges = 4 * np.arange(n_nodes - 1)[:, None] + _EDGE_SLOTS[None, :]
    return stencils.astype(np.int32), edges.astype(np.int32)


def element_elastic_force(model, q, frames, t):
    """``grad E(q)`` ``(N, 4)`` of a chain (:meth:`~jaxrod.models.der.DERNetwork.elastic_energy`)
    assembled element by element: each stencil's gradient in its own 8 DOFs (reverse mode through
    :func:`_stencil_energy` alone, every stencil at once) and each edge's stretching force
    ``EA (|e|/l - 1) e/|e|``, scatter-added onto :func:`element_slots`.

    Equal to ``jax.grad(model.elastic_energy)`` to round-off, not bitwise (the sums run in another
    order). Its use is its derivative: a JVP in ``q``, the frames, ``t`` and the model's parameters
    is element-local (no forward pass through the assembled gradient's gathers and pads), which
    :class:`jaxrod.system.HybridSystem` takes as the derivative of its DER rods' elastic forces."""
    z, args, x = _stencil_inputs(model, q, frames, t)
    gz = jax.grad(lambda z: jnp.sum(_stencil_energy(z, *args)))(z)
    gs = jnp.stack(gz, axis=1) @ jnp.asarray(_A, q.dtype)  # (S, 11)
    EA = model._per_edge(lambda r: r.EA)
    rest = model.rest_lengths()
    e = x[1:] - x[:-1]
    n = jnp.sqrt(jnp.sum(e * e, axis=1))
    fe = (EA * (n / rest - 1.0) / n)[:, None] * e
    ge = fe @ jnp.asarray(_B, q.dtype)  # (E, 6)
    s_idx, e_idx = element_slots(q.shape[0])
    flat = jnp.zeros(q.size, gs.dtype).at[s_idx].add(gs).at[e_idx].add(ge)
    return flat.reshape(q.shape)


@functools.lru_cache(maxsize=32)
def _plan(n_nodes: int, block_size: int, rest_colours: int, bandwidth: int):
    """Static entry lists ``(rows, cols)`` of the stencil, edge, remainder and diagonal groups, the
    remainder's gather into its compressed JVPs, and the scatter plan into the band storage."""
    N, n = n_nodes, 4 * n_nodes
    i = np.arange(N - 2)[:, None, None] * 4
    r = np.arange(11)
    s_rows = np.broadcast_to(i + r[None, :, None], (N - 2, 11, 11)).ravel()
    s_cols = np.broadcast_to(i + r[None, None, :], (N - 2, 11, 11)).ravel()
    j = np.arange(N - 1)[:, None, None] * 4
    e_rows = np.broadcast_to(j + _EDGE_SLOTS[None, :, None], (N - 1, 6, 6)).ravel()
    e_cols = np.broadcast_to(j + _EDGE_SLOTS[None, None, :], (N - 1, 6, 6)).ravel()
    if rest_colours == 4:  # node-local: the 4 x 4 block of each node
        k = np.arange(N)[:, None, None] * 4
        a = np.arange(4)
        r_rows = np.broadcast_to(k + a[None, :, None], (N, 4, 4)).ravel()
        r_cols = np.broadcast_to(k + a[None, None, :], (N, 4, 4)).ravel()
    else:
        rr, cc = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        inband = np.abs(rr - cc) <= bandwidth
        r_rows, r_cols = rr[inband], cc[inband]
    r_gather = (r_cols % rest_colours) * n + r_rows  # into the (colours, n) compressed JVPs
    d = np.arange(n)
    rows = np.concatenate([s_rows, e_rows, r_rows, d])
    cols = np.concatenate([s_cols, e_cols, r_cols, d])
    sizes = (s_rows.size, e_rows.size, r_rows.size, n)
    return rows, cols, r_gather.astype(np.int32), sizes, band_assembly_plan(rows, cols, n, block_size)


def chain_stage_jacobian(model, rest_residual, points, slopes, aux, fixed, block_size, rest_colours, bandwidth):
    """The Jacobian of an implicit step's residual in ``q_next`` as a
    :class:`~jaxrod.solvers.linear.BlockTridiagonal` (see
    :meth:`jaxrod.integrate.implicit.AbstractImplicitModel.stage_jacobian` for ``points``,
    ``slopes``, ``fixed``): ``sum_k w_k (K_k diag(cq_k) + (the remainder's JVPs))`` on free rows
    and columns, the identity on fixed rows. ``rest_residual(q, v, a, t)`` is the residual without
    the elastic forces."""
    w, qk, vk, ak, tk = points
    cq, cv, ca = slopes
    N = qk.shape[1]
    n = 4 * N
    rows, cols, r_gather, sizes, plan = _plan(N, block_size, rest_colours, bandwidth)
    ns, ne = sizes[0], sizes[1]
    seeds = jnp.asarray(np.arange(n)[None, :] % rest_colours == np.arange(rest_colours)[:, None], qk.dtype)

    def one_point(q, v, a, t, cq, cv, ca):
        Hs, He = elastic_hessians(model, q, aux, t)
        cqf = cq.reshape(-1)
        elastic = jnp.concatenate([Hs.reshape(-1) * cqf[cols[:ns]], He.reshape(-1) * cqf[cols[ns : ns + ne]]])

        def rest(s):
            s = s.reshape(q.shape)
            return jax.jvp(lambda x, y, z: rest_residual(x, y, z, t), (q, v, a), (cq * s, cv * s, ca * s))[1].reshape(-1)

        compressed = jax.vmap(rest)(seeds)  # (colours, n)
        return jnp.concatenate([elastic, compressed.reshape(-1)[r_gather]])

    vals = jnp.tensordot(w, jax.vmap(one_point)(qk, vk, ak, tk, cq, cv, ca), axes=1)
    free = (~fixed).reshape(-1).astype(vals.dtype)
    m = sizes[0] + sizes[1] + sizes[2]
    vals = vals * free[rows[:m]] * free[cols[:m]]
    values = jnp.concatenate([vals, fixed.reshape(-1).astype(vals.dtype)])
    return assemble_band(values, plan, n)
