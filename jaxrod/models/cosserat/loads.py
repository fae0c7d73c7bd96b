"""Point loads at interior arc lengths of the shooting rod.

A load is a constant vector (a differentiable array leaf) times a dimensionless time profile
``profile(t)`` (:mod:`jaxrod.signals`: :class:`~jaxrod.signals.Constant`,
:class:`~jaxrod.signals.ReleasedAt`, :class:`~jaxrod.signals.Hat`, :class:`~jaxrod.signals.Samples`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...signals import Constant
from ...validation import check_finite, check_shape


class PointLoad(eqx.Module):
    """Force [N] and moment [N m] (global frame) applied at reference arc length ``s`` [m],
    ``0 < s < L``, scaled by ``profile(t)``. Integrated piecewise: the internal force and moment
    jump by ``-force`` and ``-moment`` at ``s`` (a grid node is moved onto ``s``)."""

    s: float = eqx.field(static=True)
    force: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    moment: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    profile: eqx.Module = Constant()

    def __check_init__(self):
        if not np.isfinite(self.s):
            raise ValueError(f"PointLoad.s must be finite, got {self.s}")
        check_shape("PointLoad.force", self.force, (3,))
        check_shape("PointLoad.moment", self.moment, (3,))
        check_finite("PointLoad.force", self.force)
        check_finite("PointLoad.moment", self.moment)
