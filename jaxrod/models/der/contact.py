"""Implicit contact (DisMech's IMC) and smooth Coulomb friction for rods (spec sections 4.1-4.4).

Contact is an *energy* added to the elastic energy, so its forces and their Jacobian enter the
Newton solve of every implicit step (and its implicit differentiation) like any elastic force;
friction is a velocity-dependent force evaluated with the implicit step's velocity (for backward
Euler ``(q - q_n)/dt``, for implicit midpoint ``(q_{n+1} - q_n)/dt``: DisMech's choice in both
cases) and the normal force of the contact energy at the same configuration.

Pure functions (reusable by any model that has node positions; a future multi-rod model
concatenates the edges of all its rods and builds its own admissible-pair list):

* :func:`imc_energy` / :func:`imc_energy_derivative`: the IMC energy ``E_c(D)`` [m^2] of one
  contact (spec 4.1) and ``dE_c/dD`` [m]; a contact of stiffness ``k_c`` [N/m] stores
  ``k_c E_c`` [J] and pushes with the normal force ``f_n = -k_c dE_c/dD`` [N] >= 0.
* :func:`segment_distance`: minimum distance between two segments and the closest-point
  parameters (Lumelsky/Ericson with clamping; parallel segments handled; differentiable).
* :func:`stick_slip_factor`, :func:`smooth_coulomb_friction`,
  :func:`anisotropic_coulomb_friction`: the smooth Coulomb law ``F = -mu gamma(|u|) f_n u/|u|``,
  ``gamma = tanh(K2 |u|/2)``, ``K2 = 15/nu`` (spec 4.3), written so that it is smooth (and zero)
  at ``u = 0`` for autodiff.
* :func:`admissible_pairs`, :func:`candidate_pairs`: the broad phase for edge-edge contact.
* :func:`edge_contact_energy`, :func:`edge_contact_friction`: narrow phase over a candidate list;
  ``edge_nodes`` maps edges to their end nodes for a rod network (default: one rod).

Interaction modules (equinox, array leaves differentiable, e.g. ``mu``):

* :class:`FloorContact`: a plane ``n . x = offset`` (any orientation) against every node.
* :class:`RodRodContact`: edge-edge contact; in a :class:`~jaxrod.models.der.DERModel` (one rod)
  this is self-contact, edges ``|i - j| < exclude_neighbours`` excluded.

Units: SI throughout (m, N, m/s).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...validation import check_finite, check_int, check_nonnegative, check_positive, check_scalar, check_shape, is_traced

#: Smoothing constant of the IMC energy, ``K1 = IMC_SHARPNESS / delta`` (DisMech: 15).
IMC_SHARPNESS = 15.0
#: Smoothing constant of the stick-slip factor, ``K2 = FRICTION_SHARPNESS / nu`` (DisMech: 15).
FRICTION_SHARPNESS = 15.0

_TINY = 1e-30


# ---------------------------------------------------------------------------------------------
# pure functions: energy, distance, friction
# ---------------------------------------------------------------------------------------------
def imc_energy(D, C, delta):
    """IMC contact energy ``E_c(D)`` [m^2] (DisMech Eq. 10), elementwise.

    ``(C - D)^2`` for ``D <= C - delta``; ``(softplus(K1 (C - D))/K1)^2`` for
    ``C - delta < D < C + delta``; 0 for ``D >= C + delta``; ``K1 = 15/delta``. The branches
    match in value and slope to ~e^-15 at ``D = C - delta`` and the energy is ~1e-13 delta^2 at
    ``D = C + delta``. ``D`` may be negative (signed floor distance): the quadratic branch goes on.

    Args:
        D: distance between the centerlines (or centerline to plane) [m].
        C: distance at contact [m] (``h`` floor, ``2h`` self-contact, ``h1 + h2`` two rods).
        delta: contact tolerance [m] > 0.
    """
    k1 = IMC_SHARPNESS / delta
    x = C - D
    smooth = (jax.nn.softplus(k1 * x) / k1) ** 2
    return jnp.where(x >= delta, x * x, jnp.where(x > -delta, smooth, 0.0))


def imc_energy_derivative(D, C, delta):
    """``dE_c/dD`` [m] of :func:`imc_energy` (<= 0: the energy grows as ``D`` shrinks)."""
    k1 = IMC_SHARPNESS / delta
    x = C - D
    smooth = -2.0 * jax.nn.softplus(k1 * x) / k1 * jax.nn.sigmoid(k1 * x)
    return jnp.where(x >= delta, -2.0 * x, jnp.where(x > -delta, smooth, 0.0))


def _safe_norm(v, axis=-1):
    """``|v|`` with a zero (not NaN) derivative at ``v = 0``."""
    s = jnp.sum(v * v, axis=axis)
    ok = s > _TINY
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, s, 1.0)), 0.0)


def _safe_normalize(v):
    """``v / |v|`` over the last axis, 0 where ``|v| = 0`` (no NaN in any derivative)."""
    s = jnp.sum(v * v, axis=-1, keepdims=True)
    ok = s > _TINY
    return jnp.where(ok, v / jnp.sqrt(jnp.where(ok, s, 1.0)), 0.0)


def segment_closest_parameters(p1, q1, p2, q2, parallel_tol=1e-10):
    """Closest-point parameters ``(s, t)`` in ``[0, 1]`` of segments ``p1 q1`` and ``p2 q2``.

    Lumelsky's algorithm in Ericson's form (the one DisMech uses): the unconstrained minimiser
    of the line-line distance, clamped to the segments, then re-projected. Nearly parallel
    segments (``sin^2 angle <= parallel_tol``) take ``s = 0`` and project, which is exact for
    parallel segments (the minimum is then not unique; its value is). Works on batches
    ``(..., 3)``; differentiable (piecewise: the clamped branches have zero derivative, which
    is the exact derivative of the minimiser there).
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = jnp.sum(d1 * d1, axis=-1)
    e = jnp.sum(d2 * d2, axis=-1)
    b = jnp.sum(d1 * d2, axis=-1)
    c = jnp.sum(d1 * r, axis=-1)
    f = jnp.sum(d2 * r, axis=-1)
    denom = a * e - b * b
    par = denom <= parallel_tol * a * e
    s = jnp.where(par, 0.0, jnp.clip((b * f - c * e) / jnp.where(par, 1.0, denom), 0.0, 1.0))
    tn = b * s + f
    s = jnp.where(tn < 0.0, jnp.clip(-c / a, 0.0, 1.0), jnp.where(tn > e, jnp.clip((b - c) / a, 0.0, 1.0), s))
    t = jnp.clip(tn / e, 0.0, 1.0)
    return s, t


def segment_distance(p1, q1, p2, q2):
    """Minimum distance between segments ``p1 q1`` and ``p2 q2`` (``(..., 3)`` each) [m].

    Returns ``(D, s, t, diff)``: the distance ``(...)``, the closest-point parameters and the
    vector ``diff`` ``(..., 3)`` from the closest point of segment 2 to that of segment 1. This is
    the point-point / point-edge / edge-edge classification of DisMech in one formula: ``D`` is
    the distance between the two closest points, whose parameters are clamped where the minimum
    is at an end point. Its gradient is exact (the envelope theorem: ``dD/ds = 0`` at an interior
    minimum, ``ds/dx = 0`` on a clamped one) and so is its Hessian wherever the contact type does
    not change.
    """
    s, t = segment_closest_parameters(p1, q1, p2, q2)
    diff = (p1 + s[..., None] * (q1 - p1)) - (p2 + t[..., None] * (q2 - p2))
    return _safe_norm(diff), s, t, diff


def _tanh_ratio(s, k):
    """``tanh(k sqrt(s)) / sqrt(s)`` for ``s >= 0``, smooth at ``s = 0`` (series there)."""
    y2 = k * k * s
    small = y2 < 1e-4
    r = jnp.sqrt(jnp.where(small, 1.0, s))
    exact = jnp.tanh(k * r) / r
    series = k * (1.0 - y2 / 3.0 + 2.0 * y2 * y2 / 15.0)
    return jnp.where(small, series, exact)


def stick_slip_factor(speed, nu):
    """DisMech's ``gamma = 2/(1 + exp(-K2 |u|)) - 1 = tanh(K2 |u|/2)``, ``K2 = 15/nu``; in [0, 1).

    ``nu`` [m/s] is the slip tolerance: ``gamma > 0.9995`` for ``|u| > nu``. (DisMech's code sets
    ``gamma = 1`` above ``nu``; the difference is below 6e-7, and the smooth form is used here.)
    """
    return jnp.tanh(0.5 * FRICTION_SHARPNESS / nu * speed)


def smooth_coulomb_friction(u, normal_force, mu, nu):
    """Isotropic smooth Coulomb friction ``-mu gamma(|u|) f_n u/|u|`` [N], ``(..., 3)``.

    Args:
        u: ``(..., 3)`` tangential (sliding) velocity [m/s]; 0 gives 0 (smoothly).
        normal_force: ``(...)`` normal force magnitude ``f_n`` [N] >= 0.
        mu: friction coefficient >= 0.
        nu: slip tolerance [m/s] > 0.
    """
    k = 0.5 * FRICTION_SHARPNESS / nu
    g = _tanh_ratio(jnp.sum(u * u, axis=-1), k)  # gamma / |u|
    return -(mu * normal_force * g)[..., None] * u


#: Anisotropic friction laws of :func:`anisotropic_coulomb_friction` and :class:`FloorContact`.
FRICTION_LAWS = ("projected", "ellipse", "componentwise")


def axial_coefficient(u_axial, mu_forward, mu_backward, nu):
    """Friction coefficient along the rod for an axial slip ``u_axial`` [m/s] (``(...)``, signed
    along the tangent): ``mu_forward`` for ``u_axial > 0`` (sliding toward the tangent, the
    direction of increasing node index), ``mu_backward`` for ``u_axial < 0``, blended smoothly as
    ``(mu_f + mu_b)/2 + (mu_f - mu_b)/2 tanh(K2 u_axial / 2)`` (the stick-slip factor's width,
    ``K2 = 15/nu``) so the law stays differentiable at zero axial slip."""
    s = jnp.tanh(0.5 * FRICTION_SHARPNESS / nu * u_axial)
    return 0.5 * (mu_forward + mu_backward) + 0.5 * (mu_forward - mu_backward) * s


def anisotropic_coulomb_friction(u, normal_force, tangent, mu_axial, mu_lateral, nu, *, law="projected",
                                 mu_backward=None):
    """Smooth anisotropic Coulomb friction [N] ``(..., 3)`` of a contact sliding with velocity ``u``
    ``(..., 3)`` [m/s] (tangential to the surface) on a rod with unit ``tangent`` ``(..., 3)``:
    coefficient ``mu_a`` along the tangent and ``mu_lateral`` across it. Write ``u_a = u . t``,
    ``u_par = u_a t``, ``u_perp = u - u_par``, ``f_n`` the normal force [N] and
    ``gamma = tanh(K2 s / 2)``, ``K2 = 15/nu`` (:func:`stick_slip_factor`). Laws (``law``, static):

    * ``"projected"`` (default; the original law): ``F = -gamma(|u|) f_n (mu_a u_par + mu_l u_perp)/|u|``:
      the isotropic law's unit slip direction with its two components scaled (PyElastica 1.0's
      ``RodPlaneContactWithAnisotropicFriction`` kinetic law, ``-f_n (mu_a (u_hat . t) t +
      mu_side (u_hat . r) r)``, with forward/backward ``mu_a``; PyElastica adds the surface
      speed of the rod's spin to the sideways slip, this law does not). Not on the friction
      ellipse's normal: sliding at 45 deg with ``(mu_a, mu_l) = (0.1, 0.5)`` the force is
      ``atan(5) = 78.69`` deg from the axis and dissipates ``(0.1 + 0.5)/2 = 0.300 f_n |u|``.
    * ``"ellipse"``: maximum dissipation on the ellipse ``(F_a/mu_a)^2 + (F_perp/mu_l)^2 <= f_n^2``
      (Transeth et al. 2008's spatial anisotropic Coulomb law, in the plane):
      ``F = -gamma(s) f_n (mu_a^2 u_par + mu_l^2 u_perp)/(mu_max s)`` with
      ``s = sqrt(mu_a^2 u_a^2 + mu_l^2 |u_perp|^2)/mu_max``, ``mu_max = max(mu_a, mu_l)``; sliding
      it is ``-f_n M u/sqrt(u^T M u)``, ``M = diag(mu_a^2, mu_l^2)``: at 45 deg with (0.1, 0.5)
      the force is ``atan(25) = 87.71`` deg from the axis and dissipates
      ``sqrt((0.01 + 0.25)/2) = 0.3606 f_n |u|``. The slip tolerance is ``nu`` across the rod when
      ``mu_l >= mu_a`` and ``nu mu_max/mu_a`` along it.
    * ``"componentwise"``: each component its own (smoothed) Coulomb law, a box-shaped
      friction set:
      ``F = -f_n (mu_a tanh(K2 u_a/2) t + mu_l gamma(|u_perp|) u_perp/|u_perp|)``; sliding at 45 deg
      with (0.1, 0.5): 78.69 deg, ``(0.1 + 0.5)/sqrt(2) = 0.4243 f_n |u|``.

    ``mu_backward`` (default: ``mu_axial``) gives a forward/backward asymmetry: ``mu_a`` is
    :func:`axial_coefficient` of ``u_a`` (``mu_axial`` sliding toward ``+tangent``, ``mu_backward``
    toward ``-tangent``). ``tangent = 0`` makes every law isotropic with ``mu_lateral``;
    ``mu_axial = mu_lateral`` (no asymmetry) gives :func:`smooth_coulomb_friction` for
    ``"projected"`` and ``"ellipse"``.

    Args:
        u: ``(..., 3)`` sliding velocity [m/s]; normal_force: ``(...)`` [N] >= 0;
        tangent: ``(..., 3)`` unit (or zero) rod direction; mu_axial, mu_lateral, mu_backward:
        coefficients >= 0; nu: slip tolerance [m/s] > 0; law: one of ``FRICTION_LAWS``.

    Raises:
        ValueError: ``law`` not one of ``FRICTION_LAWS``.
    """
    if law not in FRICTION_LAWS:
        raise ValueError(f"friction law must be one of {FRICTION_LAWS}, got {law!r}")
    k = 0.5 * FRICTION_SHARPNESS / nu
    ua = jnp.sum(u * tangent, axis=-1, keepdims=True)
    u_par = ua * tangent
    u_perp = u - u_par
    mu_a = mu_axial if mu_backward is None else axial_coefficient(ua, mu_axial, mu_backward, nu)
    fn = normal_force[..., None] if jnp.ndim(normal_force) else normal_force
    if law == "projected":
        g = _tanh_ratio(jnp.sum(u * u, axis=-1), k)[..., None]
        return -fn * g * (mu_a * u_par + mu_lateral * u_perp)
    if law == "componentwise":
        g = _tanh_ratio(jnp.sum(u_perp * u_perp, axis=-1), k)[..., None]
        return -fn * (mu_a * jnp.tanh(k * ua) * tangent + mu_lateral * g * u_perp)
    mu_max = jnp.maximum(mu_a, mu_lateral)
    mu_max = jnp.where(mu_max > 0, mu_max, 1.0)  # all zero: M u = 0 below
    mu_a2, mu_l2 = mu_a * mu_a, mu_lateral * mu_lateral
    s2 = (mu_a2 * ua * ua + mu_l2 * jnp.sum(u_perp * u_perp, axis=-1, keepdims=True)) / (mu_max * mu_max)
    g = _tanh_ratio(s2[..., 0], k)[..., None]  # gamma(s) / s
    return -fn * g * (mu_a2 * u_par + mu_l2 * u_perp) / mu_max


def friction_step_limit(u, du, normal_force, nu):
    """Largest fraction ``alpha`` in (0, 1] of a Newton update to take so that no frictional contact
    overshoots through sticking: the Newton step that changes the tangential velocities ``u``
    ``(N, 3)`` [m/s] by ``du`` (same shape) is cut so that a sliding node whose slip would reverse
    direction and end beyond the slip tolerance ``nu`` [m/s] stops where its slip speed is least
    (``alpha_i = -u.du/|du|^2``). Only nodes with a normal force ``> 1e-6`` of the largest count.

    Why: the friction force ``-mu f_n gamma(|u|) u/|u|`` is a smoothed sign function, flat while
    sliding and very steep (``15/nu``) near zero slip. Newton linearises it where it is flat, so a
    node that should stick is thrown to full slip the other way and back again; a residual line
    search then creeps (measured on the spider's floor impact: 25 Newton iterations, 36 inside
    :func:`~jaxrod.solvers.newton.newton_solve`; with this limit 6). The limit only shortens
    steps, so the converged solution is unchanged.
    """
    udu = jnp.sum(u * du, axis=-1)
    u1 = u + du
    active = normal_force > 1e-6 * jnp.max(normal_force)
    reverses = (jnp.sum(u * u1, axis=-1) < 0) & (jnp.sum(u1 * u1, axis=-1) > nu * nu) & active
    alpha = jnp.clip(-udu / jnp.maximum(jnp.sum(du * du, axis=-1), _TINY), 0.0, 1.0)
    return jnp.min(jnp.where(reverses, alpha, 1.0), initial=1.0)


# ---------------------------------------------------------------------------------------------
# broad and narrow phase for edge-edge contact
# ---------------------------------------------------------------------------------------------
class CandidatePairs(eqx.Module):
    """A fixed-size list of edge pairs that may touch during the next step.

    Attributes:
        first, second: ``(K,)`` int edge indices (edge ``i`` joins nodes ``i`` and ``i + 1``).
        active: ``(K,)`` bool; False for padding entries whose bounding test failed.
    """

    first: jax.Array
    second: jax.Array
    active: jax.Array


def admissible_pairs(n_edges: int, exclude_neighbours: int = 3):
    """Host-side ``(first, second)`` int arrays of all edge pairs ``i < j`` of one rod with
    ``j - i >= exclude_neighbours`` (DisMech excludes ``|i - j| < 3``): ``P ~ n_edges^2 / 2``."""
    i, j = np.triu_indices(int(n_edges), k=int(exclude_neighbours))
    return i.astype(np.int32), j.astype(np.int32)


def candidate_pairs(starts, ends, first, second, cutoff, k: int) -> CandidatePairs:
    """Broad phase: the ``k`` admissible pairs with the smallest bounding-sphere gap.

    The gap ``|m_i - m_j| - l_i/2 - l_j/2`` (``m`` edge midpoints, ``l`` lengths) is a lower bound
    of the segment distance; pairs whose gap exceeds ``cutoff`` [m] are returned inactive. Cost:
    O(P) distance evaluations plus an O(P log k) ``top_k`` for ``P`` admissible pairs
    (``~E^2/2`` for ``E`` edges of one rod), run once per time step (not per Newton iteration);
    at 1000 edges that is 5e5 pair tests per step. Not differentiated (integer output).

    Args:
        starts, ends: ``(E, 3)`` edge end points [m].
        first, second: ``(P,)`` host int arrays of admissible pairs (:func:`admissible_pairs`).
        cutoff: largest gap [m] kept (contact distance + tolerance + a safety margin covering the
            motion during one step).
        k: size of the list (static), ``<= P``.
    """
    starts, ends = jax.lax.stop_gradient(starts), jax.lax.stop_gradient(ends)
    mid = 0.5 * (starts + ends)
    half = 0.5 * jnp.linalg.norm(ends - starts, axis=-1)
    fi, se = jnp.asarray(first), jnp.asarray(second)
    gap = jnp.linalg.norm(mid[fi] - mid[se], axis=-1) - half[fi] - half[se]
    neg, idx = jax.lax.top_k(-gap, k)
    return CandidatePairs(fi[idx], se[idx], -neg <= cutoff)


def _edge_ends(pairs: CandidatePairs, edge_nodes):
    """Node indices ``(a, b, c, d)`` of the two edges of every pair (``(K,)`` each)."""
    i, j = pairs.first, pairs.second
    if edge_nodes is None:  # one rod: edge k joins nodes k and k + 1
        return i, i + 1, j, j + 1
    en = jnp.asarray(edge_nodes)
    return en[i, 0], en[i, 1], en[j, 0], en[j, 1]


def edge_contact_energy(x, pairs: CandidatePairs, C, delta, stiffness, edge_nodes=None):
    """``k_c sum_pairs E_c(D_ij)`` [J] over the active candidate edge pairs of nodes ``x`` ``(N, 3)``.

    Args:
        x: ``(N, 3)`` node positions [m].
        pairs: the candidate list (edge indices).
        C: contact distance [m], scalar or ``(K,)`` per pair (``h_1 + h_2`` for rods of different radii).
        delta: tolerance [m]; stiffness: ``k_c`` [N/m].
        edge_nodes: ``(E, 2)`` int start/end node of every edge (a rod network); default: one rod,
            edge ``k`` = nodes ``(k, k + 1)``.
    """
    a, b, c, d = _edge_ends(pairs, edge_nodes)
    D, _, _, _ = segment_distance(x[a], x[b], x[c], x[d])
    return stiffness * jnp.sum(jnp.where(pairs.active, imc_energy(D, C, delta), 0.0))


def edge_contact_friction(x, v, pairs: CandidatePairs, C, delta, stiffness, mu, nu, edge_nodes=None):
    """``(N, 3)`` nodal friction forces [N] of edge-edge contacts (spec 4.3, rod-rod).

    For each active pair with closest-point parameters ``(s, t)``: normal force
    ``f_n = -k_c dE_c/dD``, contact-point velocities ``v_1 = (1-s) v_a + s v_b`` and
    ``v_2 = (1-t) v_c + t v_d`` (``v`` ``(N, 3)`` node velocities [m/s]), sliding velocity ``u`` =
    tangential part of ``v_1 - v_2`` (normal: the closest-point direction), friction ``F`` on the
    first edge (``-F`` on the second) split on the nodes with the same weights. DisMech's weights
    ``|f_node| / |f_1s + f_1e|`` from the nodal contact forces are exactly ``1 - s`` and ``s``.
    Arguments as in :func:`edge_contact_energy`; ``mu`` >= 0, ``nu`` [m/s] > 0.
    """
    a, b, c, d = _edge_ends(pairs, edge_nodes)
    D, s, t, diff = segment_distance(x[a], x[b], x[c], x[d])
    fn = jnp.where(pairs.active, -stiffness * imc_energy_derivative(D, C, delta), 0.0)
    n = _safe_normalize(diff)
    s3, t3 = s[:, None], t[:, None]
    v1 = (1.0 - s3) * v[a] + s3 * v[b]
    v2 = (1.0 - t3) * v[c] + t3 * v[d]
    vr = v1 - v2
    u = vr - jnp.sum(vr * n, axis=-1, keepdims=True) * n
    F = smooth_coulomb_friction(u, fn, mu, nu)
    out = jnp.zeros_like(x)
    out = out.at[a].add((1.0 - s3) * F).at[b].add(s3 * F)
    return out.at[c].add(-(1.0 - t3) * F).at[d].add(-t3 * F)


# ---------------------------------------------------------------------------------------------
# interaction modules
# ---------------------------------------------------------------------------------------------
def _check_common(stiffness, delta, mu, nu):
    for name, value in (("stiffness", stiffness), ("delta", delta), ("mu", mu), ("nu", nu)):
        check_scalar(name, value)  # one value per contact, broadcast over nodes/pairs
    check_positive("stiffness", stiffness, "N/m")
    check_positive("delta", delta, "m")
    check_nonnegative("mu", mu)
    check_positive("nu", nu, "m/s")


def _arr(x):
    return jnp.asarray(x, dtype=float)


class FloorContact(eqx.Module):
    """IMC contact of every node with the plane ``normal . x = offset`` (the rod lies on the side
    the normal points to), with smooth (optionally anisotropic) Coulomb friction.

    Per node ``i``: signed distance ``D_i = n . x_i - offset``, contact distance ``C = h`` (rod
    radius), energy ``k_c E_c(D_i)`` (:func:`imc_energy`; DisMech's floor uses only the smooth
    branch, which differs from the full IMC by < 1e-6 relative), normal force
    ``f_n = -k_c dE_c/dD``, sliding velocity = the in-plane part of the node velocity.
    With ``mu_lateral`` (or ``mu_backward``) given, ``mu`` acts along the rod (the in-plane
    projection of the node's tangent, the mean of the adjacent edge tangents, pointing toward
    increasing node index) and ``mu_lateral`` across it, combined by the anisotropic ``law``
    (:func:`anisotropic_coulomb_friction`: ``"projected"``, the default, ``"ellipse"``
    (maximum dissipation) or ``"componentwise"``); with ``mu_backward`` the
    coefficient along the rod is ``mu`` sliding toward increasing node index and ``mu_backward``
    the other way.

    Attributes:
        normal: ``(3,)`` unit normal (normalised on construction).
        offset: plane offset [m].
        stiffness: contact stiffness ``k_c`` [N/m] (DisMech's floor: 1e4).
        delta: contact tolerance [m] (the contact acts for ``D < h + delta``).
        mu: friction coefficient (isotropic, or along the rod when ``mu_lateral`` is given).
        mu_lateral: friction coefficient across the rod (equals ``mu`` when isotropic).
        mu_backward: coefficient along the rod sliding toward decreasing node index (equals
            ``mu`` unless given).
        nu: slip tolerance [m/s].
        anisotropic: static flag, True when ``mu_lateral`` or ``mu_backward`` was given.
        law: static, the anisotropic law (one of ``FRICTION_LAWS``; default ``"projected"``).

    Raises:
        ValueError: ``stiffness <= 0``, ``delta <= 0``, ``nu <= 0``, ``mu < 0``, ``mu_lateral < 0``,
            ``mu_backward < 0``, a zero or non-finite normal, ``law`` not in ``FRICTION_LAWS``.
    """

    normal: jax.Array
    offset: jax.Array
    stiffness: jax.Array
    delta: jax.Array
    mu: jax.Array
    mu_lateral: jax.Array
    nu: jax.Array
    mu_backward: jax.Array
    anisotropic: bool = eqx.field(static=True, default=False)
    asymmetric: bool = eqx.field(static=True, default=False)
    law: str = eqx.field(static=True, default="projected")

    def __init__(
        self,
        normal=(0.0, 0.0, 1.0),
        offset=0.0,
        *,
        stiffness=1e4,
        delta=5e-4,
        mu=0.0,
        nu=1e-3,
        mu_lateral=None,
        mu_backward=None,
        law="projected",
    ):
        check_scalar("offset", offset, "m")
        if law not in FRICTION_LAWS:
            raise ValueError(f"FloorContact law must be one of {FRICTION_LAWS}, got {law!r}")
        for name, value in (("mu_lateral", mu_lateral), ("mu_backward", mu_backward)):
            if value is not None:
                check_scalar(name, value)
                check_nonnegative(name, value)
        n = _arr(normal)
        check_shape("normal", n, (3,))
        if not is_traced(n):
            nn = np.asarray(n)
            if not np.all(np.isfinite(nn)) or np.linalg.norm(nn) == 0:
                raise ValueError(f"FloorContact normal must be a finite non-zero 3-vector, got {normal}")
        self.normal = n / jnp.linalg.norm(n)
        self.offset = _arr(offset)
        check_finite("offset", self.offset)
        _check_common(stiffness, delta, mu, nu)
        self.stiffness, self.delta, self.mu, self.nu = _arr(stiffness), _arr(delta), _arr(mu), _arr(nu)
        self.anisotropic = mu_lateral is not None or mu_backward is not None
        self.asymmetric = mu_backward is not None
        self.law = law
        self.mu_lateral = jnp.array(self.mu) if mu_lateral is None else _arr(mu_lateral)
        self.mu_backward = jnp.array(self.mu) if mu_backward is None else _arr(mu_backward)

    def distance(self, x):
        """``(N,)`` signed distance of the nodes ``x`` ``(N, 3)`` to the plane [m]."""
        n = self.normal
        return x[:, 0] * n[0] + x[:, 1] * n[1] + x[:, 2] * n[2] - self.offset

    def penetration(self, x, radius):
        """``(N,)`` depth ``h - D`` by which the rod surface is below the plane [m] (> 0 inside)."""
        return radius - self.distance(x)

    def check_initial_overlap(self, x, radius, *, index=0, body="rod"):
        """Raise ``ValueError`` when a node of ``x`` ``(N, 3)`` starts deeper than ``delta`` inside the
        plane (skipped while any of the values is traced)."""
        if any(is_traced(a) for a in (x, radius, self.delta, self.normal, self.offset)):
            return
        delta = float(np.asarray(self.delta))
        x, n = np.asarray(x), np.asarray(self.normal)  # NumPy: the eager jnp version compiles ~7 programs
        pen = np.asarray(radius) - (x @ n - np.asarray(self.offset))
        bad = np.flatnonzero(pen > delta)
        if bad.size:
            raise ValueError(
                f"initial overlap: nodes {bad[:5].tolist()} penetrate contacts[{index}] (FloorContact) by up to "
                f"{pen.max():.3g} m > delta = {delta:g} m; start the {body} on or above the plane"
            )

    def energy(self, x, radius):
        """Contact energy [J] of nodes ``x`` ``(N, 3)`` for rod radius ``radius`` [m]."""
        return self.stiffness * jnp.sum(imc_energy(self.distance(x), radius, self.delta))

    def normal_forces(self, x, radius):
        """``(N,)`` normal force magnitudes [N] (>= 0) on the nodes."""
        return -self.stiffness * imc_energy_derivative(self.distance(x), radius, self.delta)

    def tangential(self, v):
        """``(N, 3)`` components of ``v`` ``(N, 3)`` in the plane."""
        n = self.normal
        return v - jnp.sum(v * n, axis=-1, keepdims=True) * n

    def step_limit(self, x, v, dv, radius):
        """Newton step fraction that keeps friction from overshooting (:func:`friction_step_limit`)
        for an update changing the node velocities ``v`` by ``dv`` ``(N, 3)`` [m/s] at ``x``."""
        fn = jnp.where(self.mu + self.mu_lateral > 0, self.normal_forces(x, radius), 0.0)  # mu = 0: no cut
        return friction_step_limit(self.tangential(v), self.tangential(dv), fn, self.nu)

    def friction(self, x, v, radius):
        """``(N, 3)`` friction forces [N] on the nodes moving with velocities ``v`` ``(N, 3)``."""
        n = self.normal
        u = v - jnp.sum(v * n, axis=-1, keepdims=True) * n
        fn = self.normal_forces(x, radius)
        if not self.anisotropic:
            return smooth_coulomb_friction(u, fn, self.mu, self.nu)
        e = x[1:] - x[:-1]
        te = _safe_normalize(e)
        z = jnp.zeros((1, 3), x.dtype)
        tn = jnp.concatenate([te, z]) + jnp.concatenate([z, te])
        tn = tn - jnp.sum(tn * n, axis=-1, keepdims=True) * n
        return self.anisotropic_friction(u, fn, _safe_normalize(tn))

    def anisotropic_friction(self, u, normal_force, tangent):
        """``(N, 3)`` friction [N] of this floor's anisotropic law for in-plane slip ``u`` ``(N, 3)``
        [m/s], normal forces ``(N,)`` [N] and unit in-plane rod directions ``tangent`` ``(N, 3)``
        (:func:`anisotropic_coulomb_friction` with ``law``, ``mu``, ``mu_lateral``, ``mu_backward``)."""
        return anisotropic_coulomb_friction(
            u, normal_force, tangent, self.mu, self.mu_lateral, self.nu, law=self.law,
            mu_backward=self.mu_backward if self.asymmetric else None,
        )


class RodRodContact(eqx.Module):
    """IMC edge-edge contact with smooth Coulomb friction (spec 4.1-4.3, rod-rod).

    In a :class:`~jaxrod.models.der.DERModel` (a single rod) this is **self-contact**: edge pairs
    ``(i, j)`` with ``|i - j| >= exclude_neighbours`` interact, contact distance ``C = 2h``.
    Candidate pairs (:func:`candidate_pairs`) are refreshed once per time step from the converged
    configuration and kept fixed during the Newton iterations of the next step, so a pair must
    come within ``cutoff = C + delta + margin`` of each other at the start of a step to be seen:
    keep the relative motion per step below ``margin``. With this contact present the Jacobian is
    dense (the model switches to :class:`~jaxrod.solvers.jacobian.DenseJacobianSolver`).

    Attributes:
        stiffness: ``k_c`` [N/m] (DisMech's gripper: 1e5).
        delta: contact tolerance [m].
        mu: friction coefficient.
        nu: slip tolerance [m/s].
        margin: extra broad-phase distance [m] (static; default ``None``: the contact distance C).
        max_candidates: size of the candidate list (static; default ``None``: ``4 x`` edges,
            capped at the number of admissible pairs). Newton iterations cost O(this).
        exclude_neighbours: edges closer than this in index never interact (static, >= 2).
        self_contact: static; must be True for a single-rod model (kept so a multi-rod model can
            reuse the same record for contact between different rods).

    Raises:
        ValueError: ``stiffness <= 0``, ``delta <= 0``, ``nu <= 0``, ``mu < 0``, ``margin < 0``,
            ``max_candidates < 1``, ``exclude_neighbours < 2``.
    """

    stiffness: jax.Array
    delta: jax.Array
    mu: jax.Array
    nu: jax.Array
    margin: float | None = eqx.field(static=True, default=None)
    max_candidates: int | None = eqx.field(static=True, default=None)
    exclude_neighbours: int = eqx.field(static=True, default=3)
    self_contact: bool = eqx.field(static=True, default=True)

    def __init__(
        self,
        *,
        stiffness=1e5,
        delta=5e-4,
        mu=0.0,
        nu=1e-3,
        margin=None,
        max_candidates=None,
        exclude_neighbours=3,
        self_contact=True,
    ):
        _check_common(stiffness, delta, mu, nu)
        if max_candidates is not None:
            check_int("max_candidates", max_candidates)
        check_int("exclude_neighbours", exclude_neighbours)
        if margin is not None and not (np.isfinite(margin) and margin >= 0):
            raise ValueError(f"RodRodContact margin must be a finite number >= 0 m, got {margin}")
        if max_candidates is not None and int(max_candidates) < 1:
            raise ValueError(f"RodRodContact max_candidates must be >= 1, got {max_candidates}")
        if int(exclude_neighbours) < 2:
            raise ValueError(
                f"RodRodContact exclude_neighbours must be >= 2 (adjacent edges always touch), got {exclude_neighbours}"
            )
        self.stiffness, self.delta, self.mu, self.nu = _arr(stiffness), _arr(delta), _arr(mu), _arr(nu)
        self.margin = None if margin is None else float(margin)
        self.max_candidates = None if max_candidates is None else int(max_candidates)
        self.exclude_neighbours = int(exclude_neighbours)
        self.self_contact = bool(self_contact)

    # --- single rod (self-contact) ---------------------------------------------------------
    def pairs(self, n_nodes: int):
        """Host ``(first, second)`` admissible edge pairs of a rod with ``n_nodes`` nodes."""
        return admissible_pairs(n_nodes - 1, self.exclude_neighbours)

    def n_candidates(self, n_nodes: int) -> int:
        """Static size of the candidate list for a rod with ``n_nodes`` nodes."""
        p = self.pairs(n_nodes)[0].size
        k = 4 * (n_nodes - 1) if self.max_candidates is None else self.max_candidates
        return max(1, min(k, p))

    def cutoff(self, radius):
        """Broad-phase cutoff [m]: ``2h + delta + margin``."""
        C = 2.0 * radius
        return C + self.delta + (C if self.margin is None else self.margin)

    def candidates(self, x, radius) -> CandidatePairs:
        """Candidate list of one rod's nodes ``x`` ``(N, 3)`` (call once per step)."""
        n = x.shape[0]
        first, second = self.pairs(n)
        return candidate_pairs(x[:-1], x[1:], first, second, self.cutoff(radius), self.n_candidates(n))

    def energy(self, x, radius, pairs: CandidatePairs):
        """Self-contact energy [J] over the candidate pairs."""
        return edge_contact_energy(x, pairs, 2.0 * radius, self.delta, self.stiffness)

    def friction(self, x, v, radius, pairs: CandidatePairs):
        """``(N, 3)`` self-contact friction forces [N]."""
        return edge_contact_friction(x, v, pairs, 2.0 * radius, self.delta, self.stiffness, self.mu, self.nu)

    def min_distances(self, x):
        """Host-side helper: ``(P,)`` distances [m] of all admissible pairs of nodes ``x`` and the
        pair arrays (for checks and tests; O(P), not for hot paths)."""
        x = jnp.asarray(x)
        first, second = self.pairs(x.shape[0])
        D, _, _, _ = segment_distance(x[first], x[first + 1], x[second], x[second + 1])
        return np.asarray(D), first, second
