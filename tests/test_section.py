"""Material and CrossSection (jaxrod.models.section): the section constants against their
formulas, the one Poisson default, the four rod classes built from them against their keyword
constructors (same leaves: the axis conventions map d1, d2 onto each model's local axes), and the
input checks."""

import math

import jax
import numpy as np
import pytest

from jaxrod.models.cosserat import CosseratRod
from jaxrod.models.der import DERRod
from jaxrod.models.pcs import PCSRod
from jaxrod.models.section import CrossSection, Material
from jaxrod.models.tmtdyn import RodSection

E, RHO, R, L = 2.0e6, 1100.0, 0.004, 0.3


def _same(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-14, atol=0)


def test_material_and_section_constants():
    assert float(Material(E, RHO).shear_modulus) == pytest.approx(E / 3, rel=1e-15)  # nu = 0.5 by default
    assert float(Material(E, RHO, poisson_ratio=0.3).shear_modulus) == pytest.approx(E / 2.6, rel=1e-15)
    assert float(Material(E, RHO, shear_modulus=5e5).shear_modulus) == 5e5
    c = CrossSection.circular(R)
    i = math.pi * R**4 / 4
    np.testing.assert_allclose([float(c.area), *np.asarray(c.second_moments), float(c.polar_moment), float(c.radius)],
                               [math.pi * R**2, i, i, 2 * i, R], rtol=1e-14)
    w, t = 0.02, 0.003
    r = CrossSection.rectangular(w, t)
    np.testing.assert_allclose([float(r.area), *np.asarray(r.second_moments), float(r.polar_moment)],
                               [w * t, w * t**3 / 12, t * w**3 / 12, w * t**3 / 12 + t * w**3 / 12], rtol=1e-14)
    assert r.radius is None
    np.testing.assert_allclose(np.asarray(r.moments_axis_first()), [w * t * (t**2 + w**2) / 12, w * t**3 / 12,
                                                                    t * w**3 / 12], rtol=1e-14)


def test_rod_classes_from_section_match_their_keyword_constructors():
    mat, circ = Material(E, RHO), CrossSection.circular(R)
    _same(PCSRod.from_section(L, 3, mat, circ, viscosity=5.0),
          PCSRod.circular(L, 3, R, youngs_modulus=E, density=RHO, viscosity=5.0))
    w, t = 0.02, 0.003
    _same(PCSRod.from_section(L, 2, Material(E, RHO, poisson_ratio=0.3), CrossSection.rectangular(w, t)),
          PCSRod.rectangular(L, 2, w, t, youngs_modulus=E, density=RHO, poisson_ratio=0.3))
    _same(CosseratRod.from_section(L, Material(E, RHO, poisson_ratio=0.3), circ, drag=0.2, damping_bt=(1e-3, 2e-3, 0)),
          CosseratRod.circular(L, R, youngs_modulus=E, density=RHO, drag=0.2, damping_bt=(1e-3, 2e-3, 0)))
    _same(RodSection.from_section(L, mat, circ), RodSection.circular(L, R, youngs_modulus=E, density=RHO))
    _same(DERRod.straight(7, L, material=mat, section=circ), DERRod.straight(7, L, youngs_modulus=E, density=RHO, radius=R))
    # the rectangle's axes: I_1 (about d1) is Cosserat's and TMTDyn's Ixx, PCS's Jy
    rect = CrossSection.rectangular(w, t)
    assert float(CosseratRod.from_section(L, mat, rect).second_moments[0]) == pytest.approx(w * t**3 / 12, rel=1e-14)
    assert float(RodSection.from_section(L, mat, rect).second_moments[2]) == pytest.approx(float(rect.polar_moment))
    assert float(PCSRod.from_section(L, 1, mat, rect).second_moments[1]) == pytest.approx(w * t**3 / 12, rel=1e-14)


def test_section_checks():
    with pytest.raises(ValueError, match="not both"):
        Material(E, RHO, poisson_ratio=0.3, shear_modulus=1e6)
    with pytest.raises(ValueError, match="poisson_ratio"):
        Material(E, RHO, poisson_ratio=0.7)
    with pytest.raises(ValueError, match="youngs_modulus"):
        Material(-E, RHO)
    with pytest.raises(ValueError, match="density"):
        Material(E, 0.0)
    with pytest.raises(ValueError, match="radius"):
        CrossSection.circular(-1.0)
    with pytest.raises(ValueError, match="thickness"):
        CrossSection.rectangular(0.01, 0.0)
    with pytest.raises(TypeError, match="material must be a Material"):
        PCSRod.from_section(L, 2, CrossSection.circular(R), CrossSection.circular(R))
    with pytest.raises(TypeError, match="section must be a CrossSection"):
        RodSection.from_section(L, Material(E, RHO), R)
    with pytest.raises(ValueError, match="section must be circular"):
        DERRod.straight(5, L, material=Material(E, RHO), section=CrossSection.rectangular(0.01, 0.002))
    with pytest.raises(TypeError, match="not both"):
        DERRod.straight(5, L, material=Material(E, RHO), section=CrossSection.circular(R), radius=R)
    with pytest.raises(TypeError, match="radius is required"):
        DERRod.straight(5, L, youngs_modulus=E, density=RHO)
