"""The discrete elastic rod: rest geometry, cross-section and material (:class:`DERRod`), with
constructors for straight rods, helices and arbitrary polylines.

The rest configuration is the polyline the rod is built from (rest lengths, Voronoi lengths,
natural curvature and twist all come from it), unless a natural curvature is given explicitly.
Cross-section: solid circle of radius ``h``: ``A = pi h^2``, ``I = pi h^4/4``, ``J = pi h^4/2``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import (
    check_finite,
    check_int,
    check_positive,
    check_range,
    check_scalar,
    check_shape,
    is_traced,
)
from .frames import curvature_binormal, edges, initial_frames, material_curvatures


class DERRod(eqx.Module):
    """One discrete elastic rod (array leaves are differentiable parameters).

    Attributes:
        rest_positions: ``(N, 3)`` rest (and default initial) node positions [m].
        natural_curvature: ``(N-2, 2)`` natural material curvatures (integrated, dimensionless).
        natural_twist: ``(N-2,)`` natural twist [rad].
        youngs_modulus: E [Pa].
        shear_modulus: G [Pa].
        density: rho [kg/m^3].
        radius: cross-section radius h [m].
    """

    rest_positions: jax.Array
    natural_curvature: jax.Array
    natural_twist: jax.Array
    youngs_modulus: jax.Array
    shear_modulus: jax.Array
    density: jax.Array
    radius: jax.Array

    def __check_init__(self):
        for name in ("youngs_modulus", "shear_modulus", "density", "radius"):
            check_scalar(name, getattr(self, name))  # one material and cross-section per rod
        pos = self.rest_positions
        check_shape("rest_positions", pos, (None, 3))
        n = pos.shape[0]
        if n < 3:
            raise ValueError(f"a DER rod needs at least 3 nodes (n_nodes >= 3), got {n}")
        check_shape("natural_curvature", self.natural_curvature, (n - 2, 2))
        check_shape("natural_twist", self.natural_twist, (n - 2,))
        check_finite("rest_positions", pos)
        check_finite("natural_curvature", self.natural_curvature)
        check_finite("natural_twist", self.natural_twist)
        check_positive("youngs_modulus", self.youngs_modulus, "Pa")
        check_positive("shear_modulus", self.shear_modulus, "Pa")
        check_positive("density", self.density, "kg/m^3")
        check_positive("radius", self.radius, "m")
        _check_edges(pos)

    # ---- derived quantities (cheap; recomputed inside jit) -------------------------------
    @property
    def n_nodes(self) -> int:
        return self.rest_positions.shape[0]

    @property
    def rest_lengths(self):
        """``(N-1,)`` rest edge lengths [m]."""
        return edges(self.rest_positions)[1]

    @property
    def voronoi_lengths(self):
        """``(N,)`` rest Voronoi lengths [m]: half of each adjacent rest edge."""
        lr = self.rest_lengths
        z = jnp.zeros(1, dtype=lr.dtype)
        return 0.5 * (jnp.concatenate([z, lr]) + jnp.concatenate([lr, z]))

    @property
    def length(self):
        """Rest contour length [m]."""
        return jnp.sum(self.rest_lengths)

    @property
    def area(self):
        return jnp.pi * self.radius**2

    @property
    def EA(self):
        """Axial stiffness [N]."""
        return self.youngs_modulus * self.area

    @property
    def EI(self):
        """Bending stiffness [N m^2]."""
        return self.youngs_modulus * jnp.pi * self.radius**4 / 4.0

    @property
    def GJ(self):
        """Torsional stiffness [N m^2]."""
        return self.shear_modulus * jnp.pi * self.radius**4 / 2.0

    def node_masses(self):
        """``(N,)`` lumped node masses [kg] ``rho A V_i``."""
        return self.density * self.area * self.voronoi_lengths

    def edge_twist_inertia(self):
        """``(N-1,)`` twist inertia of each edge [kg m^2] ``rho A l_bar h^2 / 2``."""
        return self.density * self.area * self.rest_lengths * self.radius**2 / 2.0

    def with_natural_curvature(self, kappa_bar):
        """Copy with natural curvature ``(N-2, 2)`` replaced."""
        check_shape("natural_curvature", kappa_bar, (self.n_nodes - 2, 2))
        check_finite("natural_curvature", kappa_bar)
        return eqx.tree_at(lambda r: r.natural_curvature, self, jnp.asarray(kappa_bar, dtype=float))

    # ---- constructors ------------------------------------------------------------------
    @classmethod
    def from_polyline(
        cls,
        points,
        *,
        youngs_modulus,
        density,
        radius,
        poisson_ratio=0.5,
        shear_modulus=None,
        natural_curvature=None,
        natural_twist=None,
    ) -> DERRod:
        """Rod whose rest shape is the polyline ``points`` ``(N, 3)`` [m].

        Args:
            youngs_modulus: E [Pa] > 0.
            density: rho [kg/m^3] > 0.
            radius: h [m] > 0.
            poisson_ratio: nu in (-1, 0.5] (G = E / (2 (1 + nu))); ignored if ``shear_modulus`` given.
            shear_modulus: G [Pa] > 0, overrides ``poisson_ratio``.
            natural_curvature: ``(N-2, 2)``; default: the curvature of the polyline itself.
            natural_twist: ``(N-2,)`` [rad]; default 0.
        """
        pts = jnp.asarray(points, dtype=float)
        check_shape("points", pts, (None, 3))
        if pts.shape[0] < 3:
            raise ValueError(f"a DER rod needs at least 3 nodes (n_nodes >= 3), got {pts.shape[0]}")
        check_finite("points", pts)
        _check_edges(pts)
        check_positive("youngs_modulus", youngs_modulus, "Pa")
        if shear_modulus is None:
            check_range("poisson_ratio", poisson_ratio, -1.0, 0.5, lo_open=True)
            shear_modulus = jnp.asarray(youngs_modulus, float) / (2.0 * (1.0 + jnp.asarray(poisson_ratio, float)))
        n = pts.shape[0]
        if natural_curvature is None:
            frames = initial_frames(pts)
            kb = curvature_binormal(frames.tangent)
            # theta = 0 at rest: material directors equal the reference ones
            d2 = jnp.cross(frames.tangent, frames.d1)
            natural_curvature = material_curvatures(kb, frames.d1, d2)
        if natural_twist is None:
            natural_twist = jnp.zeros(n - 2)
        return cls(
            rest_positions=pts,
            natural_curvature=jnp.asarray(natural_curvature, dtype=float),
            natural_twist=jnp.asarray(natural_twist, dtype=float),
            youngs_modulus=jnp.asarray(youngs_modulus, dtype=float),
            shear_modulus=jnp.asarray(shear_modulus, dtype=float),
            density=jnp.asarray(density, dtype=float),
            radius=jnp.asarray(radius, dtype=float),
        )

    @classmethod
    def straight(cls, n_nodes: int, length, *, start=(0.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0), **material):
        """Straight rod of ``n_nodes`` equally spaced nodes and ``length`` [m] from ``start`` along
        ``direction``; ``material`` as in :meth:`from_polyline`."""
        n_nodes = check_int("n_nodes", n_nodes)
        if int(n_nodes) < 3:
            raise ValueError(f"a DER rod needs at least 3 nodes (n_nodes >= 3), got {n_nodes}")
        check_positive("length", length, "m")
        d = np.asarray(direction, dtype=float)
        if d.shape != (3,) or not np.linalg.norm(d) > 0:
            raise ValueError(f"direction must be a non-zero 3-vector, got {direction}")
        d = d / np.linalg.norm(d)
        s = np.linspace(0.0, float(length), int(n_nodes))
        pts = np.asarray(start, dtype=float)[None, :] + s[:, None] * d[None, :]
        return cls.from_polyline(pts, **material)

    @classmethod
    def helix(
        cls,
        n_nodes: int,
        *,
        helix_radius,
        pitch,
        contour_length,
        start=(0.0, 0.0, 0.0),
        handedness: int = 1,
        **material,
    ) -> DERRod:
        """Helix about the -z axis: node ``k`` at ``(R cos phi, s R sin phi, -p phi / (2 pi))`` shifted so
        the first node is at ``start``; ``n_nodes`` nodes over ``contour_length`` [m].

        Args:
            helix_radius: R [m] > 0.
            pitch: rise per turn p [m] > 0.
            contour_length: arc length of the helix [m] > 0.
            handedness: +1 right-handed (descending), -1 left-handed.
        """
        n_nodes = check_int("n_nodes", n_nodes)
        if handedness not in (1, -1):
            raise ValueError(f"handedness must be +1 (right-handed) or -1 (left-handed), got {handedness!r}")
        check_positive("helix_radius", helix_radius, "m")
        check_positive("pitch", pitch, "m")
        check_positive("contour_length", contour_length, "m")
        if int(n_nodes) < 3:
            raise ValueError(f"a DER rod needs at least 3 nodes (n_nodes >= 3), got {n_nodes}")
        pts = helix_points(int(n_nodes), helix_radius, pitch, contour_length, handedness)
        pts = pts - pts[0] + np.asarray(start, dtype=float)
        return cls.from_polyline(pts, **material)


def _check_edges(pos):
    if is_traced(pos):
        return
    lengths = np.linalg.norm(np.diff(np.asarray(pos), axis=0), axis=1)
    if np.any(lengths <= 1e-12):
        raise ValueError(
            f"rod points have zero-length edges at indices {np.flatnonzero(lengths <= 1e-12)[:5].tolist()} "
            "(consecutive nodes must differ)"
        )
    t = np.diff(np.asarray(pos), axis=0) / lengths[:, None]
    back = np.flatnonzero(np.sum(t[:-1] * t[1:], axis=1) < -1 + 1e-9)
    if back.size:
        raise ValueError(f"rod points fold back on themselves (180 degree turn) at nodes {(back + 1)[:5].tolist()}")


def helix_points(n_nodes, helix_radius, pitch, contour_length, handedness=1):
    """``(n_nodes, 3)`` points of a helix about the z axis descending from ``(R, 0, 0)``."""
    r, p = float(helix_radius), float(pitch)
    turn = np.sqrt((2 * np.pi * r) ** 2 + p**2)
    phi = np.linspace(0.0, 2 * np.pi * float(contour_length) / turn, n_nodes)
    return np.stack([r * np.cos(phi), handedness * r * np.sin(phi), -p * phi / (2 * np.pi)], axis=1)
