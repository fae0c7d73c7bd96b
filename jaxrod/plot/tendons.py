"""Tendon paths of a tendon-driven rod run (:func:`tendon_paths`): NumPy, no drawing. Its own
module because both :mod:`jaxrod.plot.rods` (which draws them on the rod) and
:mod:`jaxrod.plot.robots` (the robot figures) use it, and ``robots`` imports ``rods``."""

from __future__ import annotations

import numpy as np

__all__ = ["tendon_paths"]


def tendon_paths(traj, model):
    """``[(T, n_k, 3)]`` world paths [m] of the tendons of a shooting (Cosserat) ``model`` over
    ``traj``: at each grid node ``s_j`` up to the tendon's termination, ``p(s_j) + r_1 d_1 + r_2
    d_2 + r_3 d_3`` with the routing offset ``r(s_j)`` in the node's frame (``traj.frames``, rows
    ``d1, d2, d3``). An empty list when the model has no tendons or the trajectory no frames at
    its nodes (DER and PCS trajectories: not drawn)."""
    import jax

    tendons = getattr(model, "tendons", ())
    pos = np.asarray(traj.positions, dtype=float)
    frames = None if traj.frames is None else np.asarray(traj.frames, dtype=float)
    if not tendons or frames is None or frames.shape[:2] != pos.shape[:2] or not hasattr(model, "grid"):
        return []
    s = np.asarray(model.grid(), dtype=float)
    paths = []
    for td, end in zip(tendons, model._termination_nodes()):
        r = np.asarray(jax.vmap(td.routing)(s[: end + 1]))  # (n, 3) offsets in the local frames
        paths.append(pos[:, : end + 1] + np.einsum("tnij,ni->tnj", frames[:, : end + 1], r))
    return paths
