"""What the TMTDyn reduced rods share: the rod's section and material (:class:`RodSection`), the
inertial forces of rigid mass elements in TMT form by automatic differentiation
(:func:`tmt_inertial_forces`), the quaternion helpers and the plumbing of a clamped rod with dead loads
(:class:`ClampedRodModel`).

Conventions (TMTDyn's, spec 2.2 and 5.1): the rod axis is the LOCAL z axis; deformation
coordinates are ordered ``[shear x, shear y, axial z, bend x, bend y, twist z]`` and the
stiffness is diagonal in them (Hooke, spec 5.1): per unit length ``[G A, G A, E A, E Jx, E Jy,
G Jz]``, per element of length ``l`` the same divided by ``l``.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...geometry import quat_conjugate, quat_multiply
from ...solvers.jacobian import DenseJacobianSolver
from ...validation import check_finite, check_finite_scalar, check_positive, check_scalar, check_shape
from ...integrate.implicit import AbstractImplicitModel, State


class RodSection(eqx.Module):
    """Section and material of a straight rod of length ``length`` along its local z axis.

    Attributes:
        length: rod length L [m] (static: it fixes the discretisation).
        area: cross-section area A [m^2].
        second_moments: ``(3,)`` ``(Jx, Jy, Jz)`` [m^4]: bending about local x and y, ``Jz``
            the polar (torsion) moment (TMTDyn's ``J``, spec 5.1).
        youngs_modulus: E [Pa]; shear_modulus: G [Pa]; density: rho [kg/m^3].
    """

    length: float = eqx.field(static=True)
    area: jax.Array
    second_moments: jax.Array
    youngs_modulus: jax.Array
    shear_modulus: jax.Array
    density: jax.Array

    def __check_init__(self):
        if not (isinstance(self.length, float) and np.isfinite(self.length) and self.length > 0):
            raise ValueError(f"RodSection.length must be a finite number > 0 [m], got {self.length!r}")
        for name, unit in (("area", "m^2"), ("youngs_modulus", "Pa"), ("shear_modulus", "Pa"),
                           ("density", "kg/m^3")):
            check_scalar(f"RodSection.{name}", getattr(self, name), unit)
            check_positive(f"RodSection.{name}", getattr(self, name), unit)
        check_shape("RodSection.second_moments", self.second_moments, (3,))
        check_positive("RodSection.second_moments", self.second_moments, "m^4")

    @classmethod
    def from_section(cls, length, material, section) -> RodSection:
        """A rod of a :class:`~jaxrod.models.section.Material` and a
        :class:`~jaxrod.models.section.CrossSection` (axis local z, section axes ``d1, d2`` =
        local x, y: ``second_moments = (I_1, I_2, J)``)."""
        from ..section import check_section_args

        check_section_args(material, section)
        check_finite_scalar("length", length, "m")
        return cls(float(length), section.area, section.moments_axis_last(), material.youngs_modulus,
                   material.shear_modulus, material.density)

    @classmethod
    def circular(cls, length, radius, *, youngs_modulus, density, poisson_ratio=0.5) -> RodSection:
        """Solid circular section of ``radius`` [m]; ``G = E / (2 (1 + poisson_ratio))`` (TMTDyn:
        incompressible, ``G = E/3``)."""
        check_finite_scalar("radius", radius, "m")
        check_positive("radius", radius, "m")
        check_finite_scalar("length", length, "m")
        if not (-1.0 < float(poisson_ratio) <= 0.5):
            raise ValueError(f"poisson_ratio must be in (-1, 0.5], got {poisson_ratio}")
        r = float(radius)
        j = np.pi * r**4 / 4
        E = jnp.asarray(youngs_modulus, dtype=float)
        return cls(float(length), jnp.asarray(np.pi * r**2), jnp.asarray([j, j, 2 * j]), E,
                   E / (2.0 * (1.0 + float(poisson_ratio))), jnp.asarray(density, dtype=float))

    @property
    def stiffness_density(self):
        """``(6,)`` ``[G A, G A, E A, E Jx, E Jy, G Jz]`` [N, N m^2]: the diagonal Hooke law on
        ``[shear, shear, axial, bend, bend, twist]`` strains per unit length."""
        E, G, A, J = self.youngs_modulus, self.shear_modulus, self.area, self.second_moments
        return jnp.stack([G * A, G * A, E * A, E * J[0], E * J[1], G * J[2]])

    @property
    def mass_per_length(self):
        """rho A [kg/m]."""
        return self.density * self.area

    @property
    def rotary_inertia_density(self):
        """``(3,)`` rho ``(Jx, Jy, Jz)`` [kg m]: inertia of a slice per unit length, body frame."""
        return self.density * self.second_moments


def tmt_inertial_forces(velocities, masses, inertias, q, v, a):
    """Generalised inertial forces of rigid mass elements, TMT form (spec 4.2, Eq. 19) with the
    gyroscopic term (spec 4.9)::

        sum_k T_k^T [m_k  xdd_k ;  I_k omegadot_k + omega_k x I_k omega_k]

    where ``(xdot_k, omega_k) = T_k(q) v`` are the elements' velocities: this equals Lagrange's
    ``d/dt dT/dv - dT/dq`` for ``T = 1/2 sum (m |xdot|^2 + omega . I omega)`` in any coordinates
    (TMTDyn drops ``omega x I omega``; here it is kept, so energy is conserved in 3D).

    Args:
        velocities: ``(q, v) -> (xdot (k, 3) [m/s], omega (k, 3) [rad/s] in the element frame)``,
            linear in ``v``.
        masses: ``(k,)`` [kg]; inertias: ``(k, 3)`` principal inertias in the element frame [kg m^2].
        q, v, a: coordinates, velocities, accelerations (one shape).
    Returns:
        Array shaped like ``q``.
    """
    (xd, om), (xdd, omd) = jax.jvp(velocities, (q, v), (v, a))  # d/dt of (T v) along the motion
    Iom = inertias * om
    load = (masses[:, None] * xdd, inertias * omd + jnp.cross(om, Iom))
    return jax.vjp(lambda vv: velocities(q, vv), v)[1](load)[0]  # T^T (velocities are linear in v)


def unit_quaternion(qv):
    """Unit quaternion ``(sqrt(1 - |qv|^2), qv)`` ``(..., 4)`` from its vector part ``qv`` ``(..., 3)``
    (TMTDyn's 3-parameter rotation states, spec 14.3): rotations below pi. Beyond a half turn
    (``|qv| > 1``) the result is NaN, so Newton's finiteness check rejects such an iterate."""
    return jnp.concatenate([jnp.sqrt(1.0 - jnp.sum(qv * qv, axis=-1, keepdims=True)), qv], axis=-1)


def body_rate(Q, dqv):
    """``2 vec(Q^-1 dQ)`` ``(3,)`` for a unit quaternion ``Q`` ``(4,)`` whose vector part changes by
    ``dqv`` ``(3,)`` (the scalar part follows from ``|Q| = 1``): the body angular velocity for a
    time derivative, the body curvature for an arc-length derivative (spec Eq. 1, 13)."""
    dQ = jnp.concatenate([(-jnp.dot(Q[1:], dqv) / Q[0])[None], dqv])
    return 2.0 * quat_multiply(quat_conjugate(Q), dQ)[1:]


def _vec3(x):
    return jnp.asarray(x, dtype=float)


class ClampedRodModel(AbstractImplicitModel):
    """A rod clamped at the origin with its axis along world z, with gravity and a dead tip force.

    Subclasses define their mass elements (velocities, masses, inertias), the elastic and
    dissipation energies and the tip position; this class turns them into the implicit-model
    interface of :func:`jaxrod.simulate`: ``residual = inertial forces (TMT) + T_b^T (K chi +
    mu chidot) + d(load potential)/dq``.

    Attributes:
        section: :class:`RodSection`.
        damping: ``(6,)`` viscous coefficients on the rates of the deformation coordinates
            (TMTDyn's ``mu_eps|xi`` (3) and ``mu_alpha|zeta`` (3), exponent ``nu = 1``); units
            are the subclass's.
        gravity: ``(3,)`` world gravity [m/s^2].
        tip_force: ``(3,)`` dead force on the tip, world frame [N].
        load_factor: scale of gravity and tip force (static continuation, ``solve_static``).
    """

    section: RodSection
    damping: jax.Array = eqx.field(converter=_vec3, default=(0.0,) * 6)
    gravity: jax.Array = eqx.field(converter=_vec3, default=(0.0, 0.0, 0.0))
    tip_force: jax.Array = eqx.field(converter=_vec3, default=(0.0, 0.0, 0.0))
    load_factor: jax.Array = eqx.field(converter=_vec3, default=1.0)

    def __check_init__(self):
        name = type(self).__name__
        if not isinstance(self.section, RodSection):
            raise TypeError(f"{name}.section must be a RodSection, got {type(self.section).__name__}")
        check_shape(f"{name}.damping", self.damping, (6,))
        if not isinstance(self.damping, jax.core.Tracer) and np.any(~(np.asarray(self.damping) >= 0)):
            raise ValueError(f"{name}.damping must be 6 finite numbers >= 0, got {np.asarray(self.damping).tolist()}")
        for field in ("gravity", "tip_force"):
            check_shape(f"{name}.{field}", getattr(self, field), (3,))
            check_finite(f"{name}.{field}", getattr(self, field))
        check_finite_scalar(f"{name}.load_factor", self.load_factor)

    # ---- what a subclass provides -------------------------------------------------------------
    @abc.abstractmethod
    def velocities(self, q, v):
        """Velocities of the mass elements: ``(xdot (k, 3) [m/s] world, omega (k, 3) [rad/s] element
        frame)``, linear in ``v``."""

    @abc.abstractmethod
    def masses(self):
        """``(k,)`` masses of the elements [kg]."""

    @abc.abstractmethod
    def inertias(self):
        """``(k, 3)`` principal inertias of the elements about their centres, element frame [kg m^2]."""

    @abc.abstractmethod
    def deformation(self, q):
        """``(k, 6)`` deformation coordinates ``chi`` of the elastic elements (zero at rest):
        ``[shear x, shear y, axial, bend x, bend y, twist]``, local frames."""

    @abc.abstractmethod
    def stiffness_weights(self):
        """``(k, 6)`` diagonal stiffness of each element on ``chi`` (energy ``1/2 sum K chi^2``)."""

    @abc.abstractmethod
    def damping_weights(self):
        """``(k, 6)`` diagonal viscous coefficients of each element on ``chidot``."""

    @abc.abstractmethod
    def positions(self, q):
        """``(k, 3)`` world positions of the mass elements [m] (gravity acts there)."""

    @abc.abstractmethod
    def tip_position(self, q):
        """``(3,)`` tip position in the world frame [m]."""

    # ---- the implicit model -------------------------------------------------------------------
    def potential_energy(self, q):
        """Elastic + gravity + dead tip-load energy [J] (loads scaled by ``load_factor``)."""
        return self.elastic_energy(q) + self.load_energy(q)

    def elastic_energy(self, q):
        """Strain energy ``1/2 sum K chi^2`` [J]."""
        return 0.5 * jnp.sum(self.stiffness_weights() * self.deformation(q) ** 2)

    def dissipation(self, q, v):
        """Rayleigh dissipation function ``1/2 sum mu chidot^2`` [W] (half the dissipated power)."""
        rate = jax.jvp(self.deformation, (q,), (v,))[1]
        return 0.5 * jnp.sum(self.damping_weights() * rate**2)

    def load_energy(self, q):
        """Potential of gravity and the dead tip force [J] (scaled by ``load_factor``)."""
        gravity = -jnp.sum(self.masses() * (self.positions(q) @ self.gravity))
        return self.load_factor * (gravity - jnp.dot(self.tip_force, self.tip_position(q)))

    def internal_forces(self, q, v):
        """Elastic + viscous generalised forces ``T_b^T (K chi + mu T_b v)`` (spec Eq. 36, 38),
        one reverse pass for both."""
        chi, pullback = jax.vjp(self.deformation, q)
        rate = jax.jvp(self.deformation, (q,), (v,))[1]
        return pullback(self.stiffness_weights() * chi + self.damping_weights() * rate)[0]

    def kinetic_energy(self, q, v):
        """Kinetic energy [J]."""
        xd, om = self.velocities(q, v)
        return 0.5 * (jnp.sum(self.masses() * jnp.sum(xd**2, axis=-1)) + jnp.sum(self.inertias() * om**2))

    def residual(self, q, v, a, t, aux):
        return (tmt_inertial_forces(self.velocities, self.masses(), self.inertias(), q, v, a)
                + self.internal_forces(q, v) + jax.grad(self.load_energy)(q))

    def mass_matrix(self, q):
        """``(q.size, q.size)`` generalised inertia ``dr/da`` at ``q``."""
        z = jnp.zeros_like(q)
        return jax.jacfwd(lambda a: self.residual(q, z, a, 0.0, None).reshape(-1))(z).reshape(q.size, q.size)

    def energy(self, q, v):
        """Kinetic + potential energy [J] (conserved without damping)."""
        return self.kinetic_energy(q, v) + self.potential_energy(q)

    def with_load_factor(self, s):
        """The same model with gravity and tip force scaled by ``s`` (static continuation)."""
        return eqx.tree_at(lambda m: m.load_factor, self, jnp.asarray(s, dtype=float))

    def fixed_mask(self):
        return jnp.zeros(self.initial_state().q.shape, bool)

    def prescribed(self, t):
        return jnp.zeros(self.initial_state().q.shape)

    def default_linear_solver(self):
        return DenseJacobianSolver()
