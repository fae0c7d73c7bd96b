"""Material and cross-section of a rod, shared by every rod model: :class:`Material` (E, G or the
Poisson ratio nu, rho) and :class:`CrossSection` (circular, rectangular; A, I_1, I_2, J).

Conventions (one for all models):

* **Poisson ratio**: ``Material`` defaults to ``nu = 0.5`` (incompressible elastomers, TMTDyn's
  ``G = E/3``) when neither ``shear_modulus`` nor ``poisson_ratio`` is given, and
  ``G = E / (2 (1 + nu))``. (The older keyword constructors keep their own defaults:
  ``CosseratRod.circular`` 0.3, the others 0.5.)
* **Section axes**: ``d1``, ``d2`` are the two section axes (the rod axis is ``d3``); ``I_1 =
  int x_2^2 dA`` is the second moment about ``d1``, ``I_2 = int x_1^2 dA`` about ``d2``, ``J``
  the polar moment ``I_1 + I_2`` (the torsion constant the rod classes take; for a rectangle it
  overestimates Saint-Venant's torsional stiffness). ``CrossSection.rectangular(width,
  thickness)``: ``width`` along ``d1``, ``thickness`` along ``d2``, so ``I_1 = w t^3 / 12``.

Per model, the section axes are (``from_section`` of each rod class maps them):

* :class:`~jaxrod.models.pcs.PCSRod` (axis local x): ``d1, d2`` = local y, z;
  ``second_moments = (J, I_1, I_2)``;
* :class:`~jaxrod.models.cosserat.CosseratRod` and :class:`~jaxrod.models.tmtdyn.RodSection`
  (axis local z): ``d1, d2`` = local x, y; ``second_moments = (I_1, I_2, J)``;
* :class:`~jaxrod.models.der.DERRod`: circular sections only (radius ``r``).
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from ..validation import check_finite_scalar, check_positive, check_range, check_scalar

__all__ = ["CrossSection", "Material"]

_f = lambda x: jnp.asarray(x, dtype=float)  # noqa: E731


class Material(eqx.Module):
    """A linear elastic material (array leaves: differentiable).

    Attributes:
        youngs_modulus: E [Pa] > 0.
        shear_modulus: G [Pa] > 0 (from ``poisson_ratio`` when not given).
        density: rho [kg/m^3] > 0.

    Build it as ``Material(E, rho)`` (nu = 0.5), ``Material(E, rho, poisson_ratio=nu)`` with nu in
    (-1, 0.5], or ``Material(E, rho, shear_modulus=G)``; giving both is an error.
    """

    youngs_modulus: jax.Array
    shear_modulus: jax.Array
    density: jax.Array

    def __init__(self, youngs_modulus, density, *, poisson_ratio=None, shear_modulus=None):
        if poisson_ratio is not None and shear_modulus is not None:
            raise ValueError("Material: give shear_modulus or poisson_ratio, not both "
                             f"(got shear_modulus={shear_modulus!r}, poisson_ratio={poisson_ratio!r})")
        check_scalar("youngs_modulus", youngs_modulus, "Pa")
        check_positive("youngs_modulus", youngs_modulus, "Pa")
        check_scalar("density", density, "kg/m^3")
        check_positive("density", density, "kg/m^3")
        E = _f(youngs_modulus)
        if shear_modulus is None:
            nu = 0.5 if poisson_ratio is None else poisson_ratio
            check_range("poisson_ratio", nu, -1.0, 0.5, lo_open=True)
            shear_modulus = E / (2.0 * (1.0 + _f(nu)))
        else:
            check_scalar("shear_modulus", shear_modulus, "Pa")
            check_positive("shear_modulus", shear_modulus, "Pa")
        self.youngs_modulus, self.shear_modulus, self.density = E, _f(shear_modulus), _f(density)


class CrossSection(eqx.Module):
    """A uniform cross-section (module docstring for the axes).

    Attributes:
        area: A [m^2].
        second_moments: ``(I_1, I_2)`` [m^4] about the section axes ``d1`` and ``d2``.
        polar_moment: J [m^4] (``I_1 + I_2``).
        radius: the radius [m] of a circular section, ``None`` otherwise (static kind).
    """

    area: jax.Array
    second_moments: jax.Array
    polar_moment: jax.Array
    radius: jax.Array | None = None

    @classmethod
    def circular(cls, radius) -> CrossSection:
        """Solid circle of ``radius`` [m]: ``A = pi r^2``, ``I_1 = I_2 = pi r^4 / 4``, ``J = 2 I``."""
        check_finite_scalar("radius", radius, "m")
        check_positive("radius", radius, "m")
        r = _f(radius)
        i = math.pi * r**4 / 4
        return cls(math.pi * r**2, jnp.stack([i, i]), 2 * i, r)

    @classmethod
    def rectangular(cls, width, thickness) -> CrossSection:
        """Solid rectangle, ``width`` [m] along ``d1`` and ``thickness`` [m] along ``d2``:
        ``A = w t``, ``I_1 = w t^3 / 12`` (bending about ``d1``: the easy axis when ``t < w``),
        ``I_2 = t w^3 / 12``, ``J = I_1 + I_2``."""
        for name, x in (("width", width), ("thickness", thickness)):
            check_finite_scalar(name, x, "m")
            check_positive(name, x, "m")
        w, t = _f(width), _f(thickness)
        i1, i2 = w * t**3 / 12, t * w**3 / 12
        return cls(w * t, jnp.stack([i1, i2]), i1 + i2)

    def moments_axis_first(self):
        """``(3,)`` ``(J, I_1, I_2)`` [m^4]: the rod axis first (PCS, local x along the rod)."""
        return jnp.stack([self.polar_moment, self.second_moments[0], self.second_moments[1]])

    def moments_axis_last(self):
        """``(3,)`` ``(I_1, I_2, J)`` [m^4]: the rod axis last (Cosserat, TMTDyn: local z)."""
        return jnp.stack([self.second_moments[0], self.second_moments[1], self.polar_moment])


def check_section_args(material, section):
    """Types of a ``from_section`` call's ``material`` and ``section`` (names the bad one)."""
    if not isinstance(material, Material):
        raise TypeError(f"material must be a Material, got {type(material).__name__}")
    if not isinstance(section, CrossSection):
        raise TypeError(f"section must be a CrossSection, got {type(section).__name__}")
