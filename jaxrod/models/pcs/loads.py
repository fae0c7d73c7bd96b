"""External loads of a PCS rod besides gravity and the dead tip wrench: :class:`PointWrench`, a
time-varying wrench at a body-fixed point (a measured load on a tip sensor, a tool, a follower
force), and the helpers that carry it to the centreline section it is fixed to.

A point ``offset`` ``d`` [m] from the centreline section at arc length ``s`` (section frame
``R``, rod axis = local x) is at ``p(s) + R d`` in the world. A world-frame force ``f`` and moment
``m`` there are, about the section origin, the moment ``m + (R d) x f`` and the force ``f``; in
the section frame ``R^T`` of those. A body-frame (follower) wrench ``[m_b; f_b]`` is, about the
section origin, ``[m_b + d x f_b; f_b]``. The PCS inverse dynamics takes the result at the
section (:func:`jaxrod.models.pcs.model.inverse_dynamics`, ``point_wrenches``): at the tip it is
the recursion's boundary wrench, inside a segment it enters that segment's sums as a point
quadrature node does.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from ...validation import check_finite, check_shape

__all__ = ["PointWrench", "shift_wrench"]


def _as_wrench(x):
    return x if callable(x) else jnp.asarray(x, dtype=float)


class PointWrench(eqx.Module):
    """A wrench ``[moment; force]`` [N m, N] that follows a time signal, applied at a body-fixed
    point of a PCS rod (module docstring): ``offset`` [m] from the centreline at arc length ``s``
    [m] from the base, in that section's frame (local x = rod axis), so the point turns with the
    section.

    Attributes:
        wrench: a ``(6,)`` array (constant) or a signal ``t -> (6,)`` (e.g.
            :class:`~jaxrod.signals.SampledMotion` of ``(T, 6)`` samples), ``[moment; force]``.
        offset: ``(3,)`` the point in the section frame [m] (default: on the centreline).
        s: arc length from the base [m] (static), ``0 < s <= L``; ``None``: the tip. A point on a
            segment boundary belongs to the segment that ends there.
        frame: ``"world"`` (a dead load: components fixed in the world) or ``"body"`` (a follower
            load: components in the section frame, turning with it) (static).

    Like gravity and the tip wrench, it is scaled by the model's ``load_factor``.
    """

    wrench: object = eqx.field(converter=_as_wrench)
    offset: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    s: float | None = eqx.field(static=True, default=None)
    frame: str = eqx.field(static=True, default="world")

    def __check_init__(self):
        if callable(self.wrench):
            shape = jax.eval_shape(self.wrench, jnp.zeros(())).shape
            if shape != (6,):
                raise ValueError(f"PointWrench.wrench: the signal must return a (6,) [moment; force] "
                                 f"[N m, N] at a time t, got shape {shape}")
        else:
            check_shape("PointWrench.wrench", self.wrench, (6,))
            check_finite("PointWrench.wrench", self.wrench)
        check_shape("PointWrench.offset", self.offset, (3,))
        check_finite("PointWrench.offset", self.offset)
        if self.s is not None and not (isinstance(self.s, (int, float)) and math.isfinite(self.s) and self.s > 0):
            raise ValueError(f"PointWrench.s must be None (the tip) or a finite arc length > 0 m, got {self.s!r}")
        if self.frame not in ("world", "body"):
            raise ValueError(f"PointWrench.frame must be 'world' or 'body', got {self.frame!r}")

    def value(self, t):
        """``(6,)`` ``[moment; force]`` [N m, N] at time ``t`` [s]."""
        return self.wrench(t) if callable(self.wrench) else self.wrench

    def locate(self, length: float, n_segments: int):
        """``(segment index, local coordinate x [m] or None at the segment's end)`` of the point on
        a rod of ``length`` [m] and ``n_segments`` equal segments (static)."""
        n = int(n_segments)
        if self.s is None:
            return n - 1, None
        ell = length / n
        i = min(max(math.ceil(self.s / ell * (1 - 1e-12)) - 1, 0), n - 1)
        x = self.s - i * ell
        return i, (None if abs(x - ell) <= 1e-12 * length else x)


def shift_wrench(w, lever):
    """``[m + lever x f; f]``: the wrench ``w = [m; f]`` moved from the point ``lever`` [m] to the
    origin (the same components frame)."""
    return jnp.concatenate([w[:3] + jnp.cross(lever, w[3:]), w[3:]])


def check_point_wrenches(point_wrenches, length):
    """Types and arc lengths of a model's ``point_wrenches`` (names the bad entry)."""
    for k, pw in enumerate(point_wrenches):
        if not isinstance(pw, PointWrench):
            raise TypeError(f"point_wrenches[{k}] must be a PointWrench, got {type(pw).__name__}")
        if pw.s is not None and pw.s > length * (1 + 1e-12):
            raise ValueError(f"point_wrenches[{k}].s = {pw.s} m is beyond the rod's length {length} m")

