"""The PCS rod and its tip body: cross-section, material, segment lengths and strain bases
(:class:`PCSRod`), a rigid body carried at the tip (:class:`TipBody`). The model that moves them
is :class:`~jaxrod.models.pcs.model.PCSModel`.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ...validation import (
    check_finite,
    check_finite_scalar,
    check_int,
    check_nonnegative,
    check_positive,
    check_scalar,
    check_shape,
    is_traced,
)
from .kinematics import XI_STRAIGHT, StrainBasis

__all__ = ["PCSRod", "TipBody"]


class PCSRod(eqx.Module):
    """Material and cross-section of a PCS rod with ``n_segments`` equal segments.

    Attributes:
        length: total length L [m] (static).
        n_segments: number of constant-strain segments (static, >= 1).
        area: A [m^2]; second_moments: ``(Jx, Jy, Jz)`` [m^4], ``Jx`` polar (rod axis = local x).
        youngs_modulus: E [Pa]; shear_modulus: G [Pa]; density: rho [kg/m^3].
        viscosity: shear viscosity mu [Pa s] (Kelvin-Voigt, spec sec. 3.5).
        rest_strain: ``(n_segments, 6)`` reference strains xi* (straight: ``[0,0,0,1,0,0]``).
    """

    length: float = eqx.field(static=True)
    n_segments: int = eqx.field(static=True)
    area: jax.Array
    second_moments: jax.Array
    youngs_modulus: jax.Array
    shear_modulus: jax.Array
    density: jax.Array
    viscosity: jax.Array
    rest_strain: jax.Array

    def __check_init__(self):
        check_int("n_segments", self.n_segments, min=1)
        for name in ("area", "youngs_modulus", "shear_modulus", "density", "viscosity"):
            check_scalar(name, getattr(self, name))
        if not (np.isfinite(self.length) and self.length > 0):
            raise ValueError(f"length must be a finite number > 0 m, got {self.length}")
        if int(self.n_segments) < 1:
            raise ValueError(f"n_segments must be >= 1, got {self.n_segments}")
        check_positive("area", self.area, "m^2")
        check_shape("second_moments", self.second_moments, (3,))
        check_positive("second_moments", self.second_moments, "m^4")
        check_positive("youngs_modulus", self.youngs_modulus, "Pa")
        check_positive("shear_modulus", self.shear_modulus, "Pa")
        check_positive("density", self.density, "kg/m^3")
        check_nonnegative("viscosity", self.viscosity, "Pa s")
        check_shape("rest_strain", self.rest_strain, (int(self.n_segments), 6))
        check_finite("rest_strain", self.rest_strain)
        if not is_traced(self.rest_strain) and np.any(np.asarray(self.rest_strain)[:, 3] <= 0):
            bad = np.flatnonzero(np.asarray(self.rest_strain)[:, 3] <= 0)[:5].tolist()
            raise ValueError(
                f"rest_strain[:, 3] (axial rest stretch, 1 for an unstretched segment) must be > 0; "
                f"segments {bad} have {np.asarray(self.rest_strain)[bad, 3].tolist()}"
            )

    @classmethod
    def rectangular(
        cls, length, n_segments, width, thickness, *, youngs_modulus, density, poisson_ratio=0.5,
        viscosity=0.0, rest_strain=None,
    ) -> PCSRod:
        """Rectangular section: ``width`` [m] along local y, ``thickness`` [m] along local z
        (``Jy = w t^3/12`` bends about y, the easy axis when ``t < w``; ``Jx = Jy + Jz``)."""
        check_scalar("width", width, "m")
        check_scalar("thickness", thickness, "m")
        check_positive("width", width, "m")
        check_positive("thickness", thickness, "m")
        w, t = float(width), float(thickness)
        jy, jz = w * t**3 / 12, t * w**3 / 12
        return cls._make(length, n_segments, w * t, (jy + jz, jy, jz), youngs_modulus, density, poisson_ratio,
                         viscosity, rest_strain)

    @classmethod
    def circular(
        cls, length, n_segments, radius, *, youngs_modulus, density, poisson_ratio=0.5, viscosity=0.0,
        rest_strain=None,
    ) -> PCSRod:
        """Solid circular section of ``radius`` [m]."""
        check_scalar("radius", radius, "m")
        check_positive("radius", radius, "m")
        r = float(radius)
        j = np.pi * r**4 / 4
        return cls._make(length, n_segments, np.pi * r**2, (2 * j, j, j), youngs_modulus, density, poisson_ratio,
                         viscosity, rest_strain)

    @classmethod
    def from_section(cls, length, n_segments, material, section, *, viscosity=0.0, rest_strain=None) -> PCSRod:
        """A rod of a :class:`~jaxrod.models.section.Material` and a
        :class:`~jaxrod.models.section.CrossSection` (section axes ``d1, d2`` = local y, z:
        ``second_moments = (J, I_1, I_2)``); ``viscosity`` [Pa s], ``rest_strain`` as the class."""
        from ..section import check_section_args

        check_section_args(material, section)
        n = check_int("n_segments", n_segments, min=1)
        check_finite_scalar("length", length, "m")
        xi_ref = np.tile(XI_STRAIGHT, (int(n), 1)) if rest_strain is None else rest_strain
        return cls(
            length=float(length), n_segments=int(n), area=section.area, second_moments=section.moments_axis_first(),
            youngs_modulus=material.youngs_modulus, shear_modulus=material.shear_modulus, density=material.density,
            viscosity=jnp.asarray(viscosity, dtype=float), rest_strain=jnp.asarray(xi_ref, dtype=float),
        )

    @classmethod
    def _make(cls, length, n, area, moments, E, rho, nu, mu, rest_strain):
        n = check_int("n_segments", n, min=1)
        check_finite_scalar("length", length, "m")
        if not (-1.0 < nu <= 0.5):
            raise ValueError(f"poisson_ratio must be in (-1, 0.5], got {nu}")
        check_positive("youngs_modulus", E, "Pa")
        if int(n) < 1:
            raise ValueError(f"n_segments must be >= 1, got {n}")
        xi_ref = np.tile(XI_STRAIGHT, (int(n), 1)) if rest_strain is None else rest_strain
        E = jnp.asarray(E, dtype=float)
        return cls(
            length=float(length), n_segments=int(n), area=jnp.asarray(area, dtype=float),
            second_moments=jnp.asarray(moments, dtype=float), youngs_modulus=E,
            shear_modulus=E / (2.0 * (1.0 + nu)), density=jnp.asarray(rho, dtype=float),
            viscosity=jnp.asarray(mu, dtype=float), rest_strain=jnp.asarray(xi_ref, dtype=float),
        )

    @property
    def segment_lengths(self):
        return jnp.full(int(self.n_segments), self.length / int(self.n_segments))

    @property
    def stiffness_density(self):
        """``(6,)`` Sigma = ``(G Jx, E Jy, E Jz, E A, G A, G A)``."""
        E, G, A, J = self.youngs_modulus, self.shear_modulus, self.area, self.second_moments
        return jnp.stack([G * J[0], E * J[1], E * J[2], E * A, G * A, G * A])

    @property
    def damping_density(self):
        """``(6,)`` Upsilon = ``mu (Jx, 3 Jy, 3 Jz, 3 A, A, A)``."""
        A, J = self.area, self.second_moments
        return self.viscosity * jnp.stack([J[0], 3 * J[1], 3 * J[2], 3 * A, A, A])

    @property
    def screw_inertia(self):
        """``(6,)`` diagonal of the screw inertia density rho diag(Jx, Jy, Jz, A, A, A) [kg m, kg/m]."""
        J = self.second_moments
        return self.density * jnp.stack([J[0], J[1], J[2], self.area, self.area, self.area])


class TipBody(eqx.Module):
    """A rigid body welded to the PCS rod's tip frame (an end effector, a sensor).

    Attributes:
        mass: m [kg] > 0.
        com: ``(3,)`` centre of mass in the tip frame [m] (local x = rod axis).
        inertia: ``(3, 3)`` symmetric positive-definite rotational inertia about the centre of mass,
            tip-frame axes [kg m^2].
    """

    mass: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    com: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    inertia: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))

    def __check_init__(self):
        check_scalar("TipBody.mass", self.mass, "kg")
        check_positive("TipBody.mass", self.mass, "kg")
        check_shape("TipBody.com", self.com, (3,))
        check_finite("TipBody.com", self.com)
        check_shape("TipBody.inertia", self.inertia, (3, 3))
        check_finite("TipBody.inertia", self.inertia)
        if not is_traced(self.inertia):
            J = np.asarray(self.inertia)
            if not np.allclose(J, J.T, rtol=1e-12, atol=1e-15) or np.linalg.eigvalsh(J).min() <= 0:
                raise ValueError(
                    f"TipBody.inertia must be symmetric positive definite [kg m^2], got eigenvalues "
                    f"{np.linalg.eigvalsh(0.5 * (J + J.T)).tolist()}"
                )

    @property
    def screw_inertia(self):
        """``(6, 6)`` spatial inertia about the tip-frame origin, angular first:
        ``[[I_c + m (c.c 1 - c c^T), m [c]x], [-m [c]x, m 1]]`` (kinetic energy ``eta^T M eta / 2``
        for the body twist ``eta = [w; v]`` of the tip frame: the centre of mass moves at ``v + w x c``)."""
        m, c = self.mass, self.com
        cx = jnp.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
        top = jnp.concatenate([self.inertia + m * (c @ c * jnp.eye(3) - jnp.outer(c, c)), m * cx], axis=1)
        bottom = jnp.concatenate([-m * cx, m * jnp.eye(3)], axis=1)
        return jnp.concatenate([top, bottom], axis=0)
