"""Boundary motion given as data: sampled prescribed values (:class:`~jaxrod.signals.SampledMotion`,
in :mod:`jaxrod.signals`) and measured clamp poses with absolute orientations (:class:`ClampMotion`),
for rods driven by measured motion (e.g. a cable held by two robot grippers).

Both are equinox Modules whose times, positions and orientations are *array leaves*: a
:class:`~jaxrod.models.der.DERModel` holding them compiles once per structure (number of nodes,
clamped edges, number of samples) and every new trial or parameter value reuses that program
(swap data with ``eqx.tree_at`` or build the model inside a ``jit``/``vmap``-ed function). A plain
Python callable ``motion(t)`` is static instead: every new function recompiles.

Values between samples are interpolated linearly in time; before the first and after the last
sample the end values are held. Resample trials to a common number of samples to share one
compiled program.

Clamp orientation. A clamp holds one edge; its pose is the clamp point ``p`` (the *midpoint* of
the clamped edge, where a DER clamp acts) and a rotation matrix ``R`` whose columns are the
material frame ``(m1, m2, t)`` of the clamped edge in world coordinates (``t`` the edge tangent,
from node ``e`` to node ``e + 1``). The edge's nodes are then ``p -+ (l_e / 2) t`` with ``l_e``
its rest length, and its twist angle is the angle, about ``t``, from the model's reference
director to ``m1``. For a clamped edge the model uses as reference director the minimal rotation
of its reference director at ``q0`` from the tangent at ``q0`` to the current tangent (a function
of the tangent alone, so the angle is a function of time alone); this is regular while the clamp
axis stays within 180 degrees of its direction at ``q0`` (checked: within ~155 degrees).
Sample angles are unwrapped in time, so a clamp may turn about its axis by any number of turns.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...signals import _check_times
from ...validation import check_finite, check_shape, is_traced
from .frames import initial_frames

__all__ = ["ClampMotion", "clamp_frame", "quaternion_to_matrix"]

#: smallest allowed cosine between a clamp's axis and its axis at q0 (~155 degrees)
MIN_AXIS_COSINE = -0.9


def quaternion_to_matrix(q):
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)`` given scalar first
    ``(w, x, y, z)`` (normalised here)."""
    q = jnp.asarray(q, dtype=float)
    q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def clamp_frame(q0, edge):
    """``(3, 3)`` material frame of edge ``edge`` of a DER configuration ``q0`` ``(N, 4)`` as the
    columns ``(m1, m2, t)``, with the model's reference frames at ``q0`` (space-parallel from
    node 0): the orientation a :class:`ClampMotion` of that edge has at ``q0``. ``edge`` may be
    negative (``-1``: the last edge)."""
    q0 = jnp.asarray(q0, dtype=float)
    n_edges = q0.shape[0] - 1
    if not -n_edges <= int(edge) < n_edges:
        raise ValueError(f"edge {edge} does not exist (valid: 0..{n_edges - 1} or negative from the end)")
    edge = int(edge) % n_edges  # q0 has a padding row: -1 must mean the last edge, not that row
    f = initial_frames(q0[:, :3])
    t, d1 = f.tangent[edge], f.d1[edge]
    d2 = jnp.cross(t, d1)
    c, s = jnp.cos(q0[edge, 3]), jnp.sin(q0[edge, 3])
    return jnp.stack([c * d1 + s * d2, -s * d1 + c * d2, t], axis=1)


class ClampMotion(eqx.Module):
    """Measured pose of a clamp (gripper) holding edge ``edge`` of a DER rod (array leaves).

    Attributes:
        edge: index of the clamped edge (static; negative counts from the end).
        times: ``(T,)`` strictly increasing sample times [s].
        positions: ``(T, 3)`` clamp point [m]: the midpoint of the clamped edge.
        orientations: ``(T, 3, 3)`` rotation matrices whose columns are the edge's material frame
            ``(m1, m2, t)`` [world coordinates]; ``t`` points from node ``edge`` to ``edge + 1``.

    Build from a gripper's measured poses with :meth:`from_gripper`; quaternions convert with
    :func:`quaternion_to_matrix`.
    """

    edge: int = eqx.field(static=True)
    times: jax.Array
    positions: jax.Array
    orientations: jax.Array

    def __init__(self, edge, times, positions, orientations):
        if isinstance(edge, (bool, np.bool_)) or not isinstance(edge, (int, np.integer)):
            raise ValueError(f"edge must be an integer edge index, got {edge!r}")
        self.edge = int(edge)
        self.times = _check_times("times", times)
        T = self.times.shape[0]
        self.positions = jnp.asarray(positions, dtype=float)
        check_shape("positions", self.positions, (T, 3))
        check_finite("positions", self.positions)
        R = jnp.asarray(orientations, dtype=float)
        if R.shape == (T, 4):
            raise ValueError(
                "orientations must be (T, 3, 3) rotation matrices; convert quaternions (w, x, y, z) "
                "with jaxrod.models.der.quaternion_to_matrix"
            )
        check_shape("orientations", R, (T, 3, 3))
        check_finite("orientations", R)
        if not is_traced(R):
            Rn = np.asarray(R)
            err = np.abs(np.einsum("tji,tjk->tik", Rn, Rn) - np.eye(3)).max(axis=(1, 2))
            det = np.linalg.det(Rn)
            bad = np.flatnonzero((err > 1e-6) | (det < 0))
            if bad.size:
                k = int(bad[0])
                raise ValueError(
                    f"orientations[{k}] is not a rotation matrix (|R^T R - I| = {err[k]:.2e}, det = "
                    f"{det[k]:.4f}); samples {bad[:5].tolist()} fail. Columns must be the orthonormal, "
                    "right-handed material frame (m1, m2, t)"
                )
        self.orientations = R

    @classmethod
    def from_gripper(cls, edge, times, positions, rotations, frame0) -> ClampMotion:
        """Clamp poses from a gripper's measured rotations ``(T, 3, 3)`` (any body convention)
        and the rod's material frame ``frame0`` ``(3, 3)`` (columns ``m1, m2, t``) at
        ``times[0]``: the rod turns with the gripper, ``R_k = G_k G_0^T frame0``.
        ``positions`` ``(T, 3)``: the clamp point [m]. ``frame0`` usually is
        ``clamp_frame(q0, edge)`` (the rod's own frame at its initial shape: no initial twist)."""
        G = jnp.asarray(rotations, dtype=float)
        F0 = jnp.asarray(frame0, dtype=float)
        check_shape("frame0", F0, (3, 3))
        return cls(edge, times, positions, jnp.einsum("tij,kj,kl->til", G, G[0], F0))

    def edge_index(self, n_edges: int) -> int:
        e = self.edge
        if not -n_edges <= e < n_edges:
            raise ValueError(f"ClampMotion edge {e} does not exist (valid: 0..{n_edges - 1} or negative from the end)")
        return e % n_edges

    def node_positions(self, rest_length):
        """``(T, 2, 3)`` positions [m] of the clamped edge's two nodes at every sample."""
        t = self.orientations[:, :, 2]
        half = 0.5 * rest_length * t
        return jnp.stack([self.positions - half, self.positions + half], axis=1)

    def sample_angles(self, ref_d1, ref_tangent):
        """``(T,)`` twist angles [rad] of the edge at the samples, unwrapped in time: the angle
        about the clamp axis from the minimal rotation of ``ref_d1`` (from ``ref_tangent`` to
        the axis) to ``m1``."""
        m1, t = self.orientations[:, :, 0], self.orientations[:, :, 2]
        c = jnp.cross(ref_tangent, t)
        d = t @ ref_tangent
        # minimal rotation of ref_d1 from ref_tangent to t (Rodrigues; regular for d > -1)
        u = d[:, None] * ref_d1 + jnp.cross(c, ref_d1) + ((c @ ref_d1) / (1.0 + d))[:, None] * c
        ang = jnp.arctan2(jnp.sum(jnp.cross(u, m1) * t, axis=1), jnp.sum(u * m1, axis=1))
        return jnp.unwrap(ang)
