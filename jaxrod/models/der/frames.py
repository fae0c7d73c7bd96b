"""Discrete-elastic-rod kinematics: edges, reference and material frames, reference twist,
curvature binormals and material curvatures (Bergou et al. 2010; DisMech spec sections 1.2-1.6).

Conventions: ``N`` nodes, ``N-1`` edges, ``N-2`` interior nodes (the bending/twisting stencils)
for one rod; a network of rods (:class:`~jaxrod.models.der.DERNetwork`) has ``M`` nodes, ``E``
edges and ``S`` stencils described by a :class:`~jaxrod.models.der.topology.NetworkTopology`
(``topo``). :func:`kinematics` is the one stencil kinematics of both; the ``network_*`` frame
functions reduce to the single-rod ones on a chain (one limb, no joints).
Reference frames are carried from step to step by *time-parallel transport*: at every Newton
iterate the director ``d1`` is the old converged director transported from the old tangent to the
current one. Because :func:`jaxrod.geometry.parallel_transport` is smooth, forces obtained by
autodiff of the energy through these functions are the exact gradient of a well-defined discrete
energy (DisMech instead freezes the frames at each iterate; the two differ by O(|t - t_old|^2)).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...geometry import dot, normalize, parallel_transport, signed_angle


class ReferenceFrames(eqx.Module):
    """Reference data carried between time steps (not differentiated with respect to q).

    Attributes:
        d1: ``(N-1, 3)`` first reference director of each edge (unit, normal to the tangent).
        tangent: ``(N-1, 3)`` unit edge tangents at which ``d1`` was computed.
        ref_twist: ``(N-2,)`` reference twist [rad] at interior nodes.
    """

    d1: jax.Array
    tangent: jax.Array
    ref_twist: jax.Array


def edges(pos):
    """Edge vectors ``(N-1, 3)``, lengths ``(N-1,)`` [m] and unit tangents ``(N-1, 3)``."""
    e = pos[1:] - pos[:-1]
    length = jnp.linalg.norm(e, axis=-1)
    return e, length, e / length[:, None]


def first_director(t0):
    """DisMech's initial director: ``t0 x (0,0,-1)``, or ``t0 x (0,1,0)`` if ``t0`` is vertical."""
    a = jnp.cross(t0, jnp.array([0.0, 0.0, -1.0]))
    b = jnp.cross(t0, jnp.array([0.0, 1.0, 0.0]))
    return normalize(jnp.where(jnp.linalg.norm(a) < 1e-6, b, a))


def space_parallel_frames(tangent, d1_first=None):
    """Reference directors by space-parallel transport along the rod, ``(N-1, 3)``.

    Args:
        tangent: ``(N-1, 3)`` unit tangents.
        d1_first: ``(3,)`` director of edge 0 (default :func:`first_director`).
    """
    d0 = first_director(tangent[0]) if d1_first is None else d1_first

    def step(d, ab):
        a, b = ab
        d = parallel_transport(d, a, b)
        return d, d

    _, rest = jax.lax.scan(step, d0, (tangent[:-1], tangent[1:]))
    return jnp.concatenate([d0[None], rest])


def transport_directors(d1_old, t_old, t):
    """Time-parallel transport of the directors to new tangents ``t``; returns ``(d1, d2)``.

    Transport is an exact rotation, so unit directors normal to ``t_old`` stay unit and normal
    to ``t``; round-off drift is removed once per step in :func:`update_frames`, not here in the
    hot energy evaluation."""
    d1 = parallel_transport(d1_old, t_old, t)
    return d1, jnp.cross(t, d1)


def reference_twist(d1, t, ref_twist_old):
    """Reference twist ``(N-2,)`` [rad]: the old value plus the signed angle between the
    space-parallel transport of ``d1^{i-1}`` onto edge ``i`` (rotated by the old value) and ``d1^i``.
    Incremental, so it never wraps by 2 pi."""
    u = parallel_transport(d1[:-1], t[:-1], t[1:])
    phi = signed_angle(u, d1[1:], t[1:]) - ref_twist_old
    # same as rotating u by the old twist first; wrapping keeps the increment in (-pi, pi]
    return ref_twist_old + jnp.arctan2(jnp.sin(phi), jnp.cos(phi))


def material_directors(d1, d2, theta):
    """Material directors ``(m1, m2)``, each ``(N-1, 3)``, rotated by ``theta`` ``(N-1,)`` [rad]."""
    c, s = jnp.cos(theta)[:, None], jnp.sin(theta)[:, None]
    return c * d1 + s * d2, -s * d1 + c * d2


def curvature_binormal(t):
    """``(kappa b)_i = 2 t^{i-1} x t^i / (1 + t^{i-1} . t^i)`` at interior nodes, ``(N-2, 3)``."""
    return 2.0 * jnp.cross(t[:-1], t[1:]) / (1.0 + dot(t[:-1], t[1:]))[:, None]


def material_curvatures(kb, m1, m2):
    """Integrated material curvatures ``(N-2, 2)`` (dimensionless): ``kappa_1 = kb.(m2^{i-1}+m2^i)/2``,
    ``kappa_2 = -kb.(m1^{i-1}+m1^i)/2``."""
    k1 = 0.5 * dot(kb, m2[:-1] + m2[1:])
    k2 = -0.5 * dot(kb, m1[:-1] + m1[1:])
    return jnp.stack([k1, k2], axis=-1)


# ---- hot path: vectors as tuples of component arrays ----------------------------------------
# dot and cross on (M, 3) arrays reduce over a length-3 axis; every reduction (and every slice of
# a stacked array, whose gradient is a pad) becomes a separate XLA kernel. With vectors held as
# (x, y, z) tuples of (M,) arrays the energy and its derivatives are pure element-wise
# arithmetic that XLA fuses into a few kernels: compile time and run time both drop severalfold.


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _lin(ca, a, cb, b):
    return tuple(ca * ai + cb * bi for ai, bi in zip(a, b))


def _transport(v, a, b):
    c = _cross(a, b)
    d = _dot(a, b)
    cv = _cross(c, v)
    k = _dot(c, v) / (1.0 + d)
    return tuple(d * vi + cvi + k * ci for vi, cvi, ci in zip(v, cv, c))


class Kinematics(eqx.Module):
    """Everything the energies need at one configuration (``S`` stencils, ``E`` edges)."""

    lengths: jax.Array  # (E,)
    kappa1: jax.Array  # (S,) material curvature about m1 (integrated, dimensionless)
    kappa2: jax.Array  # (S,) material curvature about m2
    twist: jax.Array  # (S,) tau = theta_f - theta_e + beta
    ref_twist: jax.Array  # (S,)


def _vec(a):
    return (a[:, 0], a[:, 1], a[:, 2])


def kinematics(q, frames: ReferenceFrames, topo=None) -> Kinematics:
    """Kinematics of a DER state over its bending/twisting stencils: edge lengths ``(E,)`` and,
    per stencil ``(S,)``, material curvatures, twist ``tau = (theta_f' - alpha) - theta_e' + beta``
    and reference twist ``beta`` (primes: oriented by the stencil signs). The one DER stencil code
    path: a single rod and a network of rods both evaluate their energies here.

    Args:
        q: ``(R, 4)`` state: node positions [m] in columns 0-2, edge twist angles [rad] in column 3.
        frames: :class:`ReferenceFrames`: ``d1``/``tangent`` ``(E, 3)`` per edge, ``ref_twist``
            ``(S,)`` per stencil.
        topo: :class:`~jaxrod.models.der.topology.NetworkTopology`, or ``None`` for one rod of
            ``N = R`` nodes (stencil ``i`` = nodes ``i, i+1, i+2``, edges ``i, i+1``, signs +1).

    Each stencil's 11 DOFs (``x_a, theta_e, x_b, theta_f, x_c``) are gathered once into an
    ``(S, 11)`` array and everything after that is element-wise on ``(S,)`` arrays. Edge quantities
    are recomputed in both stencils that share an edge; that costs less than slicing per-edge
    arrays (whose derivatives are pads that split XLA kernels): 2.7x faster Hessian-vector
    products at 200 nodes. A chain (``topo`` ``None`` or ``topo.chain``) gathers with slices, whose
    derivatives are pads; a general network needs index gathers (scatters in the derivative).
    Measured: slicing columns out of a gathered ``(S, 3, 3)`` or a one-hot product instead makes
    XLA-CPU Hessians 300-1000x slower (1 s vs 1 ms at 11 nodes).

    ``alpha = topo.stencil_twist_offset``: the two edges of a joint stencil carry reference frames
    of different limbs, whose rest angle ``alpha`` across the joint can be anything (pi for two
    limbs meeting head to head). DER's material curvature averages the two edges' material
    directors, which is only meaningful when they are nearly aligned, so edge ``f`` is seen by the
    stencil through its material frame rotated back by ``alpha`` (DisMech gives every joint
    stencil its own space-parallel pair of reference frames; this is the same up to a constant
    rotation, which leaves the isotropic bending energy unchanged).
    """
    # the operations in the order of the two former copies (chain and network): the order in which
    # q's entries are used sets the summation order of their derivatives (round-off)
    chain = topo is None or topo.chain
    if chain:
        X = jnp.concatenate([q[:-2], q[1:-1], q[2:, :3]], axis=1)  # (N-2, 11)
    else:
        sn, se, sg = topo.stencil_nodes, topo.stencil_edges, topo.stencil_signs
        X = jnp.concatenate(
            [q[sn[:, 0], :3], q[se[:, 0], 3:], q[sn[:, 1], :3], q[se[:, 1], 3:], q[sn[:, 2], :3]], axis=1
        )
    xa, xb, xc = (X[:, 0], X[:, 1], X[:, 2]), (X[:, 4], X[:, 5], X[:, 6]), (X[:, 8], X[:, 9], X[:, 10])
    if chain:
        tha, thb = X[:, 3], X[:, 7]
        t_old, d_old = frames.tangent, frames.d1
        old_a = (_vec(d_old[:-1]), _vec(t_old[:-1]))
        old_b = (_vec(d_old[1:]), _vec(t_old[1:]))
    else:
        s_e, s_f = sg[:, 0], sg[:, 1]
        tha, thb = s_e * X[:, 3], s_f * X[:, 7] - topo.stencil_twist_offset
        F = jnp.concatenate(
            [
                frames.d1[se[:, 0]],
                sg[:, 0:1] * frames.tangent[se[:, 0]],
                frames.d1[se[:, 1]],
                sg[:, 1:2] * frames.tangent[se[:, 1]],
            ],
            axis=1,
        )
        old_a = ((F[:, 0], F[:, 1], F[:, 2]), (F[:, 3], F[:, 4], F[:, 5]))
        old_b = ((F[:, 6], F[:, 7], F[:, 8]), (F[:, 9], F[:, 10], F[:, 11]))
    ea = tuple(b - a for a, b in zip(xa, xb))
    eb = tuple(c - b for b, c in zip(xb, xc))
    k1, k2, twist, beta = stencil_strains(ea, tha, eb, thb, old_a, old_b, frames.ref_twist)
    if chain:
        e = q[1:, :3] - q[:-1, :3]
    else:
        en = topo.edge_nodes
        e = q[en[:, 1], :3] - q[en[:, 0], :3]
    lengths = jnp.sqrt(jnp.sum(e * e, axis=1))
    return Kinematics(lengths, k1, k2, twist, beta)


def stencil_strains(ea, tha, eb, thb, old_a, old_b, ref_twist):
    """Material curvatures ``kappa_1, kappa_2``, twist ``tau`` and reference twist ``beta`` of
    stencils from their two edge vectors and (oriented) twist angles: the element-wise core of
    :func:`kinematics`, also differentiated on its own for element-local Hessians
    (``jaxrod.models.der.hessian``).

    Args:
        ea, eb: edge vectors ``e`` and ``f`` as ``(x, y, z)`` tuples of ``(S,)`` arrays [m].
        tha, thb: ``(S,)`` twist angles of the two edges as the stencil sees them [rad].
        old_a, old_b: ``(d1, tangent)`` of each edge at the last converged step, tuples of
            ``(S,)`` component arrays (time-parallel transport starts there).
        ref_twist: ``(S,)`` reference twist at the last converged step [rad].
    """
    ta = tuple(e / jnp.sqrt(_dot(ea, ea)) for e in ea)
    tb = tuple(e / jnp.sqrt(_dot(eb, eb)) for e in eb)
    d1a = _transport(old_a[0], old_a[1], ta)
    d1b = _transport(old_b[0], old_b[1], tb)
    d2a, d2b = _cross(ta, d1a), _cross(tb, d1b)
    # reference twist: angle from the space-transported d1^{i-1} to d1^i, relative to the old value
    u = _transport(d1a, ta, tb)
    phi = jnp.arctan2(_dot(_cross(u, d1b), tb), _dot(u, d1b)) - ref_twist
    beta = ref_twist + jnp.arctan2(jnp.sin(phi), jnp.cos(phi))
    ca, sa, cb, sb = jnp.cos(tha), jnp.sin(tha), jnp.cos(thb), jnp.sin(thb)
    m1 = tuple(a + b for a, b in zip(_lin(ca, d1a, sa, d2a), _lin(cb, d1b, sb, d2b)))
    m2 = tuple(a + b for a, b in zip(_lin(-sa, d1a, ca, d2a), _lin(-sb, d1b, cb, d2b)))
    chi = 1.0 + _dot(ta, tb)
    kb = tuple(2.0 * k / chi for k in _cross(ta, tb))
    k1 = 0.5 * _dot(kb, m2)
    k2 = -0.5 * _dot(kb, m1)
    return k1, k2, thb - tha + beta, beta


def edge_tangents(q, topo):
    """Unit tangents ``(E, 3)`` of the global edges of state ``q`` ``(R, 4)``."""
    if topo.chain:
        return edges(q[:, :3])[2]
    pos = q[:, :3]
    e = pos[topo.edge_nodes[:, 1]] - pos[topo.edge_nodes[:, 0]]
    return e / jnp.linalg.norm(e, axis=-1)[:, None]


def stencil_reference_twist(d1, t, ref_twist_old, topo):
    """Reference twist ``(S,)`` [rad] per stencil (incremental, with oriented tangents): the old
    value plus the wrapped signed angle from ``P_{t_e' -> t_f'}(d1_e)`` to ``d1_f`` about ``t_f'``."""
    se, sg = topo.stencil_edges, topo.stencil_signs
    ta = sg[:, 0:1] * t[se[:, 0]]
    tb = sg[:, 1:2] * t[se[:, 1]]
    u = parallel_transport(d1[se[:, 0]], ta, tb)
    phi = signed_angle(u, d1[se[:, 1]], tb) - ref_twist_old
    return ref_twist_old + jnp.arctan2(jnp.sin(phi), jnp.cos(phi))


def _limb_edge_slices(topo):
    offs = list(topo.limb_edge_offsets) + [topo.n_edges]
    return [slice(offs[i], offs[i + 1]) for i in range(len(topo.limb_edge_offsets))]


def network_initial_frames(q, topo) -> ReferenceFrames:
    """Reference frames of configuration ``q``: space-parallel along each limb (from DisMech's
    first director on its edge 0), zero reference twist on limb stencils and the actual (wrapped)
    reference twist on joint stencils, whose two edges carry frames from different limbs."""
    if topo.chain:
        return initial_frames(q[:, :3])
    t = edge_tangents(q, topo)
    d1 = jnp.concatenate([space_parallel_frames(t[s]) for s in _limb_edge_slices(topo)])
    zeros = jnp.zeros(topo.n_stencils, dtype=q.dtype)
    beta = stencil_reference_twist(d1, t, zeros, topo)
    is_joint = np.arange(topo.n_stencils) >= topo.n_limb_stencils
    return ReferenceFrames(d1, t, jnp.where(is_joint, beta, 0.0))


def network_update_frames(q, frames: ReferenceFrames, topo) -> ReferenceFrames:
    """Reference frames after a converged step at ``q`` (time-parallel transport per edge)."""
    if topo.chain:
        return update_frames(q, frames)
    t = edge_tangents(q, topo)
    d1, _ = transport_directors(frames.d1, frames.tangent, t)
    d1 = normalize(d1 - dot(d1, t)[:, None] * t)
    return ReferenceFrames(d1, t, stencil_reference_twist(d1, t, frames.ref_twist, topo))


def update_frames(q, frames: ReferenceFrames) -> ReferenceFrames:
    """Reference frames after a converged step at ``q``."""
    _, _, t = edges(q[:, :3])
    d1, _ = transport_directors(frames.d1, frames.tangent, t)
    d1 = normalize(d1 - dot(d1, t)[:, None] * t)
    return ReferenceFrames(d1, t, reference_twist(d1, t, frames.ref_twist))


def initial_frames(pos, d1_first=None) -> ReferenceFrames:
    """Space-parallel reference frames of configuration ``pos`` ``(N, 3)``; zero reference twist."""
    _, _, t = edges(pos)
    d1 = space_parallel_frames(t, d1_first)
    return ReferenceFrames(d1, t, jnp.zeros(pos.shape[0] - 2, dtype=pos.dtype))
