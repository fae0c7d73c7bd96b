"""The discrete elastic rod: rest geometry, cross-section and material (:class:`DERRod`), with
constructors for straight rods, helices and arbitrary polylines.

Rest lengths and Voronoi lengths come from the polyline the rod is built from; its natural
curvature is chosen explicitly (:meth:`DERRod.from_polyline` ``rest=``): the polyline itself
(stress-free), straight, or a given array. A measured shape is usually *not* stress-free (a cable
sagging under gravity), so there is no default.

Clamps act at the midpoint of the clamped edge (the first bending stencil's Voronoi region starts
there). :meth:`DERRod.cantilever` places the nodes so that the clamp points are exactly the ends
of the free length; clamping edge 0 of :meth:`DERRod.straight` instead gives a beam ``dl/2``
shorter (a tip load deflects it 14.5% less than ``P L^3 / (3 EI)`` at 11 nodes).
Cross-section: solid circle of radius ``h``: ``A = pi h^2``, ``I = pi h^4/4``, ``J = pi h^4/2``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import (
    as_floats,
    check_finite,
    check_int,
    check_positive,
    check_range,
    check_scalar,
    check_shape,
    is_traced,
)
from .frames import curvature_binormal, edges, initial_frames, material_curvatures


def _from_section(material, section, *given):
    """``(E, G, rho, radius)`` of a :class:`~jaxrod.models.section.Material` and a circular
    :class:`~jaxrod.models.section.CrossSection` (DER rods are circular)."""
    from ..section import check_section_args

    check_section_args(material, section)
    if any(x is not None for x in given):
        raise TypeError("DERRod: give material= and section=, or youngs_modulus, shear_modulus, density and "
                        "radius, not both")
    if section.radius is None:
        raise ValueError("DERRod: section must be circular (CrossSection.circular): DER rods have a radius")
    return material.youngs_modulus, material.shear_modulus, material.density, section.radius


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
        youngs_modulus=None,
        density=None,
        radius=None,
        rest=None,
        poisson_ratio=0.5,
        shear_modulus=None,
        natural_curvature=None,
        natural_twist=None,
        material=None,
        section=None,
    ) -> DERRod:
        """Rod with node positions ``points`` ``(N, 3)`` [m] (rest lengths from them) and a rest
        shape chosen by ``rest``.

        Args:
            rest: the rest (stress-free) shape; required, there is no default:

                * ``"stress_free"``: the polyline itself (its curvature is the natural curvature);
                  right for a rod manufactured in this shape, wrong for a measured shape that is
                  already deformed (a cable sagging under gravity);
                * ``"straight"``: zero natural curvature (a straight rod that ``points`` shows bent);
                * an ``(N-2, 2)`` array: the natural material curvatures (integrated,
                  dimensionless) in the material frames of ``points`` with zero twist.

                ``natural_curvature=`` (an array) is accepted in place of ``rest=``.
            youngs_modulus: E [Pa] > 0.
            density: rho [kg/m^3] > 0.
            radius: h [m] > 0.
            poisson_ratio: nu in (-1, 0.5] (G = E / (2 (1 + nu))); ignored if ``shear_modulus`` given.
            shear_modulus: G [Pa] > 0, overrides ``poisson_ratio``.
            natural_curvature: ``(N-2, 2)``, same as ``rest=natural_curvature``.
            natural_twist: ``(N-2,)`` [rad]; default 0.
            material, section: a :class:`~jaxrod.models.section.Material` and a circular
                :class:`~jaxrod.models.section.CrossSection`, in place of the four material and
                section keywords.

        Raises:
            ValueError: when neither ``rest`` nor ``natural_curvature`` is given, when both are,
                or when ``rest`` is none of the choices above.
        """
        if material is not None or section is not None:
            youngs_modulus, shear_modulus, density, radius = _from_section(
                material, section, youngs_modulus, shear_modulus, density, radius)
        for name, x in (("youngs_modulus", youngs_modulus), ("density", density), ("radius", radius)):
            if x is None:
                raise TypeError(f"DERRod: {name} is required (or material= and section=)")
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
        natural_curvature = _rest_curvature(rest, natural_curvature, n)
        if natural_curvature is None:  # rest="stress_free"
            # one compiled call for concrete points (eagerly, ~30 small programs per rod shape)
            natural_curvature = _stress_free_curvature(pts) if is_traced(pts) else _stress_free_curvature_jit(pts)
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
        ``direction``; ``material`` as in :meth:`from_polyline` (``rest`` defaults to
        ``"straight"``: the rod is its own rest shape).

        Clamping an end edge of this rod (``DERModel(rod, clamped_edges=(0,))``) clamps it at the
        edge's midpoint, ``dl/2`` inside the rod: the free length is ``length - dl/2`` and a tip
        load deflects the tip 14.5% less than Euler-Bernoulli's ``P L^3 / (3 EI)`` at 11 nodes.
        Use :meth:`cantilever` for a rod whose clamp sits at ``start``.
        """
        n_nodes = check_int("n_nodes", n_nodes)
        if int(n_nodes) < 3:
            raise ValueError(f"a DER rod needs at least 3 nodes (n_nodes >= 3), got {n_nodes}")
        check_positive("length", length, "m")
        d = np.asarray(direction, dtype=float)
        if d.shape != (3,) or not np.linalg.norm(d) > 0:
            raise ValueError(f"direction must be a non-zero 3-vector, got {direction}")
        d = d / np.linalg.norm(d)
        check_shape("start", as_floats("start", start, "m"), (3,))
        s = np.linspace(0.0, float(length), int(n_nodes))
        pts = np.asarray(start, dtype=float)[None, :] + s[:, None] * d[None, :]
        return cls.from_polyline(pts, **_with_default_rest(material, "straight"))

    @classmethod
    def cantilever(
        cls,
        n_nodes: int,
        length,
        *,
        clamped_ends: str = "start",
        start=(0.0, 0.0, 0.0),
        direction=(1.0, 0.0, 0.0),
        **material,
    ) -> DERRod:
        """Straight rod whose clamped end edges are centred on the clamp points, so that the free
        length between the clamp(s) and the free end (or between the two clamps) is ``length`` [m].

        A DER clamp acts at the midpoint of the clamped edge (the first bending stencil's Voronoi
        region starts there), so the clamped edge straddles the clamp point: half of it is a
        ghost behind the clamp. Clamp it with ``DERModel(rod, clamped_edges=(0,))`` (and ``-1``
        for ``clamped_ends="both"``) or with :class:`~jaxrod.models.der.ClampMotion` poses at
        the clamp points.

        Args:
            n_nodes: number of nodes (an integer >= 3; >= 4 for ``"both"``).
            length: free length L [m] > 0.
            clamped_ends: ``"start"`` (a cantilever clamped at ``start``: node spacing
                ``L / (n_nodes - 1.5)``, node 0 at ``start - dl/2 direction``, the free tip at
                ``start + L direction``) or ``"both"`` (clamped at ``start`` and at
                ``start + L direction``: spacing ``L / (n_nodes - 2)``, both end nodes ``dl/2``
                beyond the clamp points).
            start: ``(3,)`` first clamp point [m].
            direction: ``(3,)`` non-zero axis direction.
            material: as in :meth:`from_polyline` (``rest`` defaults to ``"straight"``).
        """
        pts = clamped_straight_points(n_nodes, length, clamped_ends=clamped_ends, start=start, direction=direction)
        return cls.from_polyline(pts, **_with_default_rest(material, "straight"))

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
        check_shape("start", as_floats("start", start, "m"), (3,))
        pts = pts - pts[0] + np.asarray(start, dtype=float)
        return cls.from_polyline(pts, **_with_default_rest(material, "stress_free"))


REST_CHOICES = ("stress_free", "straight")


def _with_default_rest(material, rest):
    if "rest" in material or "natural_curvature" in material:
        return material
    return {**material, "rest": rest}


def _rest_curvature(rest, natural_curvature, n):
    """The natural curvature ``(N-2, 2)`` chosen by ``rest`` / ``natural_curvature``, or ``None``
    for ``rest="stress_free"`` (the polyline's own curvature, computed by the caller)."""
    if natural_curvature is not None:
        if rest is not None:
            raise ValueError(
                "give the rest shape once: rest= or natural_curvature=, not both "
                f"(got rest={rest!r} and a natural_curvature)"
            )
        return natural_curvature
    if rest is None:
        raise ValueError(
            "from_polyline() needs rest=: the rest (stress-free) shape of the rod is not implied by its "
            "points. Choose rest='stress_free' (the polyline is the unloaded shape), rest='straight' "
            "(zero natural curvature, e.g. a straight cable measured sagging), or rest=<(N-2, 2) array> "
            "of natural material curvatures"
        )
    if isinstance(rest, str):
        if rest == "stress_free":
            return None
        if rest == "straight":
            return jnp.zeros((n - 2, 2))
        raise ValueError(f"rest must be one of {REST_CHOICES} or an (N-2, 2) = ({n - 2}, 2) array, got {rest!r}")
    kb = jnp.asarray(rest, dtype=float)
    check_shape("rest", kb, (n - 2, 2))
    return kb


def clamped_straight_points(n_nodes, length, *, clamped_ends="start", start=(0.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0)):
    """``(n_nodes, 3)`` nodes of a straight rod whose clamped end edges are centred on the clamp
    points (see :meth:`DERRod.cantilever`)."""
    n = _check_int_at_least("n_nodes", n_nodes, 3)
    check_positive("length", length, "m")
    d = np.asarray(direction, dtype=float)
    if d.shape != (3,) or not np.all(np.isfinite(d)) or not np.linalg.norm(d) > 0:
        raise ValueError(f"direction must be a finite non-zero 3-vector, got {direction}")
    p0 = np.asarray(start, dtype=float)
    if p0.shape != (3,) or not np.all(np.isfinite(p0)):
        raise ValueError(f"start must be a finite 3-vector [m], got {start}")
    d = d / np.linalg.norm(d)
    if clamped_ends == "start":
        dl = float(length) / (n - 1.5)
    elif clamped_ends == "both":
        if n < 4:
            raise ValueError(f"a rod clamped at both ends needs n_nodes >= 4 (a free node between the clamps), got {n}")
        dl = float(length) / (n - 2)
    else:
        raise ValueError(f"clamped_ends must be 'start' or 'both', got {clamped_ends!r}")
    s = dl * (np.arange(n) - 0.5)
    return p0[None, :] + s[:, None] * d[None, :]


def _check_int_at_least(name, value, lo):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    if int(value) < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}")
    return int(value)


def _stress_free_curvature(pts):
    frames = initial_frames(pts)
    kb = curvature_binormal(frames.tangent)
    # theta = 0 at rest: material directors equal the reference ones
    d2 = jnp.cross(frames.tangent, frames.d1)
    return material_curvatures(kb, frames.d1, d2)


_stress_free_curvature_jit = jax.jit(_stress_free_curvature)


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
