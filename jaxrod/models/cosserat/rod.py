"""Cosserat-rod material and cross-section (:class:`CosseratRod`) for the shooting model.

Constitutive law (Till, Aloi & Rucker 2019, eq. 4), all matrices diagonal in the local frame
``(d1, d2, d3)`` with ``d3`` the rod axis:

* shear/extension ``n^b = K_se (v - v*) + B_se v_t``, ``K_se = diag(G A, G A, E A)`` [N];
* bending/torsion ``m^b = K_bt (u - u*) + B_bt u_t``, ``K_bt = diag(E Ixx, E Iyy, G Izz)`` [N m^2];
* square-law air drag ``f_drag = -R C (q * |q|)`` with ``C = diag(c1, c2, c3)`` [kg/m^2].
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..section import CrossSection, check_section_args
from ...validation import (
    as_floats,
    check_finite,
    check_nonnegative,
    check_positive,
    check_scalar,
    check_shape,
    is_traced,
)


class CosseratRod(eqx.Module):
    """A straight-or-precurved Cosserat rod (array leaves are differentiable parameters).

    Attributes:
        length: reference (undeformed) length L [m] (static: it sets the arc-length grid).
        area: cross-section area A [m^2].
        second_moments: ``(3,)`` second area moments ``(Ixx, Iyy, Izz)`` [m^4] (``Izz`` polar).
        youngs_modulus: E [Pa].
        shear_modulus: G [Pa].
        density: rho [kg/m^3].
        drag: ``(3,)`` square-law drag coefficients C (local frame) [kg/m^2].
        damping_se: ``(3,)`` Kelvin-Voigt shear/extension damping B_se [N s].
        damping_bt: ``(3,)`` Kelvin-Voigt bending/torsion damping B_bt [N m^2 s].
        v_star: ``(3,)`` reference shear/extension strain (``e3`` for an unstretched rod).
        u_star: ``(3,)`` reference (natural) curvature and twist [1/m].
    """

    length: float = eqx.field(static=True)
    area: jax.Array
    second_moments: jax.Array
    youngs_modulus: jax.Array
    shear_modulus: jax.Array
    density: jax.Array
    drag: jax.Array
    damping_se: jax.Array
    damping_bt: jax.Array
    v_star: jax.Array
    u_star: jax.Array

    def __check_init__(self):
        for name in ("area", "youngs_modulus", "shear_modulus", "density"):
            check_scalar(name, getattr(self, name))  # uniform rod: one value each
        L = self.length
        if not (np.isfinite(L) and L > 0):
            raise ValueError(f"length must be a finite number > 0 m, got {L}")
        check_positive("area", self.area, "m^2")
        check_shape("second_moments", self.second_moments, (3,))
        check_positive("second_moments", self.second_moments, "m^4")
        check_positive("youngs_modulus", self.youngs_modulus, "Pa")
        check_positive("shear_modulus", self.shear_modulus, "Pa")
        check_positive("density", self.density, "kg/m^3")
        for name, unit in (("drag", "kg/m^2"), ("damping_se", "N s"), ("damping_bt", "N m^2 s")):
            check_shape(name, getattr(self, name), (3,))
            check_nonnegative(name, getattr(self, name), unit)
        check_shape("v_star", self.v_star, (3,))
        check_shape("u_star", self.u_star, (3,))
        check_finite("v_star", self.v_star)
        check_finite("u_star", self.u_star)
        if not is_traced(self.v_star) and np.asarray(self.v_star)[2] <= 0:
            raise ValueError(f"v_star[2] (reference axial stretch) must be > 0, got {self.v_star}")

    @classmethod
    def circular(
        cls,
        length: float,
        radius: float,
        *,
        youngs_modulus: float,
        density: float,
        shear_modulus: float | None = None,
        poisson_ratio: float = 0.3,
        drag=0.0,
        damping_se=0.0,
        damping_bt=0.0,
        u_star=(0.0, 0.0, 0.0),
    ) -> CosseratRod:
        """Solid circular cross-section of ``radius`` [m]: ``A = pi r^2``, ``I = pi r^4/4``, ``Izz = 2 I``.

        ``shear_modulus`` defaults to ``E / (2 (1 + poisson_ratio))``; ``drag`` [kg/m^2] and the
        damping coefficients may be scalars (isotropic) or ``(3,)``.
        """
        check_positive("length", length, "m")
        check_positive("radius", radius, "m")
        check_positive("youngs_modulus", youngs_modulus, "Pa")
        check_positive("density", density, "kg/m^3")
        if shear_modulus is None:
            if not (-1.0 < poisson_ratio <= 0.5):
                raise ValueError(f"poisson_ratio must be in (-1, 0.5], got {poisson_ratio}")
            shear_modulus = youngs_modulus / (2.0 * (1.0 + poisson_ratio))
        section = CrossSection.circular(radius)
        return cls._build(length, section.area, section.moments_axis_last(), youngs_modulus, shear_modulus, density,
                          drag, damping_se, damping_bt, u_star)

    @classmethod
    def from_section(cls, length: float, material, section, *, drag=0.0, damping_se=0.0, damping_bt=0.0,
                     u_star=(0.0, 0.0, 0.0)) -> CosseratRod:
        """A rod of a :class:`~jaxrod.models.section.Material` and a
        :class:`~jaxrod.models.section.CrossSection` (axis local z, section axes ``d1, d2`` =
        local x, y: ``second_moments = (I_1, I_2, J)``); the other arguments as :meth:`circular`."""
        check_section_args(material, section)
        check_positive("length", length, "m")
        return cls._build(length, section.area, section.moments_axis_last(), material.youngs_modulus,
                          material.shear_modulus, material.density, drag, damping_se, damping_bt, u_star)

    @classmethod
    def _build(cls, length, area, moments, E, G, rho, drag, damping_se, damping_bt, u_star):
        def vec(name, x, unit):  # a scalar (isotropic) or (3,)
            if not is_traced(x) and np.shape(as_floats(name, x, unit)) not in ((), (3,)):
                raise ValueError(f"{name} [{unit}] must be a scalar or 3 numbers (local frame), got shape {np.shape(x)}")
            return jnp.broadcast_to(jnp.asarray(x, dtype=float), (3,))

        return cls(
            length=float(length),
            area=area,
            second_moments=moments,
            youngs_modulus=jnp.asarray(E, dtype=float),
            shear_modulus=jnp.asarray(G, dtype=float),
            density=jnp.asarray(rho, dtype=float),
            drag=vec("drag", drag, "kg/m^2"),
            damping_se=vec("damping_se", damping_se, "N s"),
            damping_bt=vec("damping_bt", damping_bt, "N m^2 s"),
            v_star=jnp.array([0.0, 0.0, 1.0]),
            u_star=jnp.asarray(u_star, dtype=float),
        )

    # ---- derived quantities ------------------------------------------------------------------
    @property
    def K_se(self):
        """``(3,)`` diagonal shear/extension stiffness ``(GA, GA, EA)`` [N]."""
        G, E, A = self.shear_modulus, self.youngs_modulus, self.area
        return jnp.stack([G * A, G * A, E * A])

    @property
    def K_bt(self):
        """``(3,)`` diagonal bending/torsion stiffness ``(E Ixx, E Iyy, G Izz)`` [N m^2]."""
        E, G, J = self.youngs_modulus, self.shear_modulus, self.second_moments
        return jnp.stack([E * J[0], E * J[1], G * J[2]])

    @property
    def bending_stiffness(self):
        """Mean bending stiffness ``E (Ixx + Iyy)/2`` [N m^2]."""
        return self.youngs_modulus * 0.5 * (self.second_moments[0] + self.second_moments[1])

    @property
    def mass_per_length(self):
        """``rho A`` [kg/m]."""
        return self.density * self.area
