"""DER elastic energies (DisMech Eqs. 2-8): stretching, bending and twisting, in joules.

All three are sums over edges or interior nodes written with array operations, so their
gradients (forces) and Hessian-vector products come from JAX autodiff and are exact.
"""

from __future__ import annotations

import jax.numpy as jnp

from .frames import Kinematics


def stretching_energy(kin: Kinematics, rest_lengths, EA):
    """``E_s = 1/2 EA sum_i (|e^i|/|e^i_bar| - 1)^2 |e^i_bar|`` [J]; ``EA`` [N]."""
    strain = kin.lengths / rest_lengths - 1.0
    return 0.5 * jnp.sum(EA * strain**2 * rest_lengths)


def bending_energy(kin: Kinematics, natural_curvature, voronoi_interior, EI):
    """``E_b = 1/2 sum_i EI |kappa_i - kappa_bar_i|^2 / V_i`` [J]; ``EI`` [N m^2] scalar or ``(2,)``
    (one stiffness per material direction); ``natural_curvature`` ``(N-2, 2)``."""
    EI = jnp.broadcast_to(EI, (2,))
    d1 = kin.kappa1 - natural_curvature[:, 0]
    d2 = kin.kappa2 - natural_curvature[:, 1]
    return 0.5 * jnp.sum((EI[0] * d1 * d1 + EI[1] * d2 * d2) / voronoi_interior)


def twisting_energy(kin: Kinematics, natural_twist, voronoi_interior, GJ):
    """``E_t = 1/2 GJ sum_i (tau_i - tau_bar_i)^2 / V_i`` [J]; ``GJ`` [N m^2]."""
    return 0.5 * jnp.sum(GJ * (kin.twist - natural_twist) ** 2 / voronoi_interior)
