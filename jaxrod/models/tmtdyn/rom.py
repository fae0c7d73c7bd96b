"""TMTDyn's reduced-order rod model (ROM, spec 3.4 and 5.5): the backbone position and the vector
part of the orientation quaternion are polynomials in the arc length, their coefficients are the
generalised coordinates.

Kinematics (spec Eq. 10-11, with ``u = s / L`` so that every coefficient is dimensionless;
TMTDyn's coefficients with dimensional ``s`` are ``C_{k,i} = q_{k,i} / L^i``)::

    rho(s)   = L * sum_i q[0:3, i-1] u^(i+1) + (0, 0, s)          [m]
    Q_rho(s) = sum_i q[3:6, i-1] u^i,   Q = (sqrt(1 - |Q_rho|^2), Q_rho)   (unit quaternion)

so ``rho(0) = 0``, ``Q(0) = 1`` and ``rho'(0) = e_z``: the base is clamped, and the shear and axial
strains vanish at ``s = 0`` (a property of the basis, spec 3.4 NOTE). Strains (spec Eq. 13, with
the rotation by ``Q^{-1}`` that the paper's Eq. 16 gets wrong, spec 15 item 7)::

    xi   = Q^-1 rho' Q - e_z        (shear x, shear y, axial)
    zeta = 2 vec(Q^-1 Q')           (bend x, bend y, twist)

The dynamics is TMTDyn's (spec 5.5; inertia ``rho A`` and the slice inertia ``rho J`` per unit
length as rigid slices at the quadrature points, with the gyroscopic term; strain energy
``1/2 chi^T K chi`` and dissipation ``1/2 chidot^T mu chidot`` per unit length), integrated
over ``[0, L]`` by Gauss-Legendre quadrature (the paper uses a 50-point trapezoid). Every term,
including the strain Jacobian ``T_b`` the paper prints (Eq. 38, with the
Eq. 16 sign error), comes from automatic differentiation.

Limits: rotations must stay below pi everywhere (``|Q_rho| < 1``; beyond it ``sqrt`` returns NaN and
Newton reports a failed step); the monomial basis is ill-conditioned beyond ``order`` ~ 8; the rest
shape is straight (``chi_0 = 0``).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...integrate.base import jit_when_eager
from ...geometry import quat_conjugate, quat_rotate
from ...validation import check_int
from ...integrate.base import State
from .section import ClampedRodModel, body_rate, unit_quaternion

_EZ = np.array([0.0, 0.0, 1.0])


class ROMModel(ClampedRodModel):
    """TMTDyn ROM of a rod clamped at the origin along world z (see module docstring).

    Coordinates ``q`` ``(6, order)`` (dimensionless): rows ``[rho_x, rho_y, rho_z, Q_x, Q_y,
    Q_z]``, column ``i - 1`` multiplies ``(s/L)^i`` (times ``L (s/L)`` for the position rows).
    ``q = 0`` is the straight, unstretched rod.

    Attributes (besides :class:`~jaxrod.models.tmtdyn.section.ClampedRodModel`'s ``section``,
    ``gravity`` [m/s^2], ``tip_force`` [N], ``load_factor``):
        order: polynomial order ``n_r`` >= 1 (static): ``6 n_r`` coordinates.
        damping: ``(6,)`` ``(mu_xi (3) [N s], mu_zeta (3) [N m^2 s])``: viscous coefficients per
            unit length on the strain rates ``xidot, zetadot`` (TMTDyn's ``mu_xi|zeta``).
        n_quad: Gauss-Legendre points on ``[0, L]`` (static; default ``2 order + 4``).
        n_points: centreline samples in the saved ``positions`` (static, >= 2).
    """

    order: int = eqx.field(static=True, default=2)
    n_quad: int | None = eqx.field(static=True, default=None)
    n_points: int = eqx.field(static=True, default=16)

    def __check_init__(self):
        check_int("ROMModel.order", self.order, min=1)
        if self.n_quad is not None:
            check_int("ROMModel.n_quad", self.n_quad, min=1)
        check_int("ROMModel.n_points", self.n_points, min=2)

    # ---- kinematics ---------------------------------------------------------------------------
    def _quadrature(self):
        n = 2 * int(self.order) + 4 if self.n_quad is None else int(self.n_quad)
        x, w = np.polynomial.legendre.leggauss(n)
        L = self.section.length
        return jnp.asarray(0.5 * L * (x + 1.0)), jnp.asarray(0.5 * L * w)

    def _basis(self, s):
        """``(u^i, d(u^i)/ds, d(L u^(i+1))/ds)`` for ``i = 1..order``, ``u = s/L``: ``(3, order)``."""
        L = self.section.length
        i = jnp.arange(1, int(self.order) + 1, dtype=jnp.result_type(s, float))
        u = s / L
        return u**i, i * u ** (i - 1) / L, (i + 1) * u**i

    def pose(self, q, s):
        """Backbone position ``(3,)`` [m] and unit quaternion ``(4,)`` (local -> world, scalar
        first) at arc length ``s`` [m] (a scalar); ``q`` ``(6, order)``."""
        p, _, _ = self._basis(s)
        return self._position(q, s, p) + s * _EZ, unit_quaternion(q[3:] @ p)

    def _position(self, c, s, p):
        """``L u sum_i c[0:3, i-1] u^i`` [m]: the position polynomial of coefficients ``c`` without
        the straight-rod term (velocities use it with ``c = v``)."""
        return s * (c[:3] @ p)

    def strains(self, q, s):
        """``(6,)`` strains ``chi = (xi, zeta)`` at ``s`` [m]: shear x, shear y, axial (1) and
        bending x, bending y, twist [1/m], local frame: ``xi = Q^-1 rho' - e_z``,
        ``(0, zeta) = 2 Q^-1 Q'`` (spec Eq. 13), with the polynomial derivatives in closed form."""
        p, dp, drho_basis = self._basis(s)
        Q = unit_quaternion(q[3:] @ p)
        drho = q[:3] @ drho_basis + _EZ
        return jnp.concatenate([quat_rotate(quat_conjugate(Q), drho) - _EZ, body_rate(Q, q[3:] @ dp)])

    def deformation(self, q):
        """``(n_quad, 6)`` :meth:`strains` at the quadrature points."""
        return jax.vmap(lambda si: self.strains(q, si))(self._quadrature()[0])

    def stiffness_weights(self):
        return self._quadrature()[1][:, None] * self.section.stiffness_density

    def damping_weights(self):
        return self._quadrature()[1][:, None] * self.damping

    def tip_position(self, q):
        return self.pose(q, jnp.asarray(self.section.length, dtype=q.dtype))[0]

    # ---- inertia ------------------------------------------------------------------------------
    def velocities(self, q, v):
        """Slice velocities at the quadrature points: ``rhodot`` and the body angular velocity
        ``omega = 2 vec(Q^-1 Qdot)`` (spec Eq. 1), both linear in ``v``."""

        def at(si):
            p, _, _ = self._basis(si)
            return self._position(v, si, p), body_rate(unit_quaternion(q[3:] @ p), v[3:] @ p)

        return jax.vmap(at)(self._quadrature()[0])

    def masses(self):
        """``(n_quad,)`` quadrature weights times ``rho A`` [kg]: the slices the inertia is summed over."""
        return self._quadrature()[1] * self.section.mass_per_length

    def inertias(self):
        return self._quadrature()[1][:, None] * self.section.rotary_inertia_density

    def positions(self, q):
        return jax.vmap(lambda si: self.pose(q, si)[0])(self._quadrature()[0])

    # ---- plumbing -----------------------------------------------------------------------------
    def initial_state(self):
        q0 = jnp.zeros((6, int(self.order)))
        return State(q0, jnp.zeros_like(q0), None)

    @jit_when_eager
    def observe(self, q, v, aux):
        s = jnp.linspace(0.0, self.section.length, int(self.n_points), dtype=q.dtype)
        return {"positions": jax.vmap(lambda si: self.pose(q, si)[0])(s)}
