"""Geometry helpers shared by every rod model.

Vectors are the last axis of an array, so every function broadcasts over leading axes
(``(..., 3)``). All functions are smooth where the underlying geometry is smooth: in
particular :func:`parallel_transport` has no branch at ``a == b``, so it can be differentiated
through at the reference configuration (the DER time-parallel transport relies on that).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np


def skew(v):
    """Skew-symmetric matrix ``[v]_x`` with ``[v]_x @ w == cross(v, w)``; ``(..., 3) -> (..., 3, 3)``."""
    z = jnp.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return jnp.stack(
        [
            jnp.stack([z, -w, y], axis=-1),
            jnp.stack([w, z, -x], axis=-1),
            jnp.stack([-y, x, z], axis=-1),
        ],
        axis=-2,
    )


def unskew(m):
    """Inverse of :func:`skew` (uses the antisymmetric part); ``(..., 3, 3) -> (..., 3)``."""
    return 0.5 * jnp.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
        axis=-1,
    )


def dot(a, b):
    """Dot product over the last axis, keeping nothing: ``(..., 3), (..., 3) -> (...)``."""
    return jnp.sum(a * b, axis=-1)


def normalize(v):
    """``v / |v|`` over the last axis."""
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def parallel_transport(v, a, b):
    """Parallel-transport ``v`` from unit tangent ``a`` to unit tangent ``b``.

    This is the rotation about ``a x b`` that takes ``a`` to ``b`` (the minimal rotation),
    written without normalising ``a x b`` so that it is smooth (and exactly the identity)
    at ``a == b``:  ``R v = (a.b) v + c x v + c (c.v) / (1 + a.b)`` with ``c = a x b``.
    Singular only for ``a == -b`` (a fold-back, where no minimal rotation exists).

    Args:
        v: ``(..., 3)`` vector(s) to transport.
        a: ``(..., 3)`` unit vector(s), from.
        b: ``(..., 3)`` unit vector(s), to.
    Returns:
        ``(..., 3)`` transported vector(s).
    """
    c = jnp.cross(a, b)
    d = dot(a, b)[..., None]
    return d * v + jnp.cross(c, v) + c * dot(c, v)[..., None] / (1.0 + d)


def rotate_about_axis(v, axis, angle):
    """Rotate ``v`` by ``angle`` [rad] about the unit ``axis`` (Rodrigues); broadcasts."""
    c = jnp.cos(angle)[..., None]
    s = jnp.sin(angle)[..., None]
    return c * v + s * jnp.cross(axis, v) + (1.0 - c) * axis * dot(axis, v)[..., None]


def signed_angle(u, v, n):
    """Signed angle [rad] from ``u`` to ``v`` about ``n`` (in ``(-pi, pi]``); smooth at 0.

    ``atan2((u x v).n, u.v)`` for ``u, v`` perpendicular to the unit vector ``n``.
    """
    return jnp.arctan2(dot(jnp.cross(u, v), n), dot(u, v))


# ---------------------------------------------------------------------------------------------
# Rotations, quaternions and SE(3).
#
# Conventions: rotation vectors ("axis-angle") are ``theta * unit_axis``; rotation matrices act on
# column vectors (``R @ v``); quaternions are scalar-first ``(w, x, y, z)``; twists are
# ``xi = (omega, v)`` with the angular part first. Everything broadcasts over leading axes.
#
# Functions of ``theta`` such as ``sin(theta) / theta`` are evaluated from ``theta**2`` (never
# ``|w|``, whose gradient is NaN at 0) and switch to a Taylor series below ``_SERIES_T2``. The
# exact branch is fed a dummy ``theta**2`` when unused (the "double where"), because
# ``jnp.where`` still back-propagates ``0 * inf = NaN`` through the branch it discards.
# ---------------------------------------------------------------------------------------------

# theta**2 below which the series are used. Large enough that the closed forms never suffer the
# cancellation in e.g. (theta - sin theta) / theta**3 (relative error ~1e-15 at theta = 0.5),
# small enough that 8 terms of each series are exact to ~1e-19.
_SERIES_T2 = 0.25
_N_TERMS = 8

# Taylor coefficients in t2 = theta**2 of sin(t)/t, (1 - cos t)/t^2, (t - sin t)/t^3, cos(t/2)
# and sin(t/2)/t.
_SIN_OVER = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(_N_TERMS))
_ONE_MINUS_COS = tuple((-1) ** k / math.factorial(2 * k + 2) for k in range(_N_TERMS))
_T_MINUS_SIN = tuple((-1) ** k / math.factorial(2 * k + 3) for k in range(_N_TERMS))
_COS_HALF = tuple((-1) ** k / (4**k * math.factorial(2 * k)) for k in range(_N_TERMS))
_SIN_HALF_OVER = tuple(
    0.5 * (-1) ** k / (4**k * math.factorial(2 * k + 1)) for k in range(_N_TERMS)
)
# (1 - (t/2) cot(t/2)) / t^2 = sum_k |B_{2k+2}| / (2k+2)! t^{2k}  (Bernoulli numbers); the series
# converges for t < 2 pi, i.e. geometrically with ratio <= 0.25 / (4 pi^2) below _SERIES_T2.
_BERNOULLI = (1 / 6, 1 / 30, 1 / 42, 1 / 30, 5 / 66, 691 / 2730, 7 / 6, 3617 / 510, 43867 / 798)
_VINV_COEF = tuple(b / math.factorial(2 * k + 2) for k, b in enumerate(_BERNOULLI))
# arcsin(s) / s = sum_k C(2k, k) / (4^k (2k+1)) s^{2k}; used by rotation_log for s^2 < 1e-2.
_ASIN_OVER = tuple(math.comb(2 * k, k) / (4**k * (2 * k + 1)) for k in range(_N_TERMS + 1))
_ASIN_S2 = 1e-2


def _horner(x, coeffs):
    out = jnp.full_like(x, coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * x + c
    return out


def _series_or_exact(t2, coeffs, exact, threshold=_SERIES_T2):
    """``exact(t2)`` for ``t2 >= threshold``, its Taylor series in ``t2`` below; NaN-free grads."""
    return _many_series_or_exact(t2, (coeffs,), lambda s: (exact(s),), threshold)[0]


def _many_series_or_exact(t2, coeffs, exact, threshold=_SERIES_T2):
    """Several functions of ``t2`` at once: ``coeffs`` holds one Taylor coefficient tuple per
    function (all of one length), ``exact(s)`` returns their closed forms as a tuple; returns a
    tuple. The series run as ONE Horner chain on a trailing axis of the functions, so a program
    holds one chain (and its derivatives) instead of one per function: the series dominate the
    traced size of ``se3_exp`` (the PCS kinematics hold it, and its derivatives, at every
    quadrature point). Each entry is computed by the same operations as a chain
    of its own, so the values are bitwise those of separate chains; derivatives agree with them to
    round-off (measured <= 8e-16 relative: the cotangents of the functions are summed in another
    order), and stay exact at ``t2 = 0``. Used by :func:`se3_exp` (three series, the PCS
    kinematics at every quadrature point): pcs-silicone's time-loop program 8173 -> 7625 lines
    before optimisation, its run time unchanged."""
    small = t2 < threshold
    t2_series = jnp.where(small, t2, 0.0)  # keeps the unused polynomial from overflowing
    t2_exact = jnp.where(small, 1.0, t2)  # keeps the unused closed form away from 0 / 0
    if len(coeffs) == 1:
        series = (_horner(t2_series, coeffs[0]),)
    else:
        # (n_terms, n_functions): row k holds every function's coefficient of t2**k
        table = np.asarray(coeffs).T
        shape = t2.shape + table.shape[1:]
        x = jnp.broadcast_to(t2_series[..., None], shape)
        chain = jnp.broadcast_to(jnp.asarray(table[-1], x.dtype), shape)
        for c in table[-2::-1]:
            chain = chain * x + jnp.broadcast_to(jnp.asarray(c, x.dtype), shape)
        series = tuple(chain[..., i] for i in range(len(coeffs)))
    return tuple(jnp.where(small, s, e) for s, e in zip(series, exact(t2_exact)))


def _rodrigues_exact(s, with_third=False):
    """Closed forms of ``sin(t)/t``, ``(1 - cos t)/t^2`` and (``with_third``) ``(t - sin t)/t^3``
    at ``s = t^2 > 0``, sharing ``t`` and ``sin t`` (traced once, not once per function)."""
    t = jnp.sqrt(s)
    sin_t = jnp.sin(t)
    # 2 sin^2(t/2) / t^2 rather than (1 - cos t) / t^2: no cancellation.
    out = (sin_t / t, 2.0 * (jnp.sin(0.5 * t) ** 2) / s)
    return out + ((t - sin_t) / (s * t),) if with_third else out


def _outer(a, b):
    return a[..., :, None] * b[..., None, :]


def _eye_like(v, n=3):
    return jnp.broadcast_to(jnp.eye(n, dtype=v.dtype), v.shape[:-1] + (n, n))


def rotation_matrix(axis_angle):
    """Exponential map so(3) -> SO(3): ``exp(skew(w))`` (Rodrigues' formula).

    ``R = I + sin(t)/t [w]_x + (1 - cos t)/t^2 [w]_x^2`` with ``t = |w|``; the coefficients use
    their Taylor series for small ``t``, so the value and all derivatives are finite and correct
    at exactly ``w = 0`` (where ``dR/dw_i = skew(e_i)``).

    Args:
        axis_angle: ``(..., 3)`` rotation vector ``w = angle * unit_axis`` (right-hand rule).
    Returns:
        ``(..., 3, 3)`` rotation matrix.
    """
    w = jnp.asarray(axis_angle)
    t2 = dot(w, w)
    # two chains of their own, not one shared (as se3_exp): a shared chain made a rigid pendulum's
    # time step 6% slower (slices of the (..., 2) chain and their pads in the Jacobian)
    a = _series_or_exact(t2, _SIN_OVER, lambda s: jnp.sin(jnp.sqrt(s)) / jnp.sqrt(s))[..., None, None]
    b = _series_or_exact(t2, _ONE_MINUS_COS, lambda s: 2.0 * (jnp.sin(0.5 * jnp.sqrt(s)) ** 2) / s)[..., None, None]
    # [w]_x^2 = w w^T - |w|^2 I
    k2 = _outer(w, w) - t2[..., None, None] * _eye_like(w)
    return _eye_like(w) + a * skew(w) + b * k2


def rotation_log(R):
    """Logarithm SO(3) -> so(3): the rotation vector ``w`` with ``rotation_matrix(w) == R``.

    Returns the vector with angle in ``[0, pi]``. ``R`` is assumed orthonormal with det 1 (its
    antisymmetric part gives ``sin(t) n``, its symmetric part ``cos(t)`` and, near ``t = pi``,
    the axis). Three branches:

    * ``t`` small (``sin^2 t < 1e-2``, ``cos t > 0``): ``arcsin(s)/s * unskew(R)`` as a series in
      ``s^2``, so the value and derivative are exact at ``R = I`` (``d log / d w = I`` there);
    * ``cos t >= -1/2``: ``atan2(s, c) / s * unskew(R)``;
    * ``cos t < -1/2``: the axis is taken from the largest column of ``sym(R) - c I =
      (1 - c) n n^T``, which stays accurate up to ``t = pi`` (where ``sin t`` carries no
      information). At exactly ``t = pi`` the sign of the result is arbitrary (both are valid
      logs) and the result is not differentiable there (``w`` and ``-w`` are both logs);
      near ``pi`` derivatives are correct but grow as ``1 / sin t`` in off-manifold directions.

    Args:
        R: ``(..., 3, 3)`` rotation matrix.
    Returns:
        ``(..., 3)`` rotation vector.
    """
    R = jnp.asarray(R)
    v = unskew(R)  # sin(t) n
    s2 = dot(v, v)
    c = 0.5 * (jnp.trace(R, axis1=-2, axis2=-1) - 1.0)
    small = (s2 < _ASIN_S2) & (c > 0.0)
    near_pi = c < -0.5
    general = ~small & ~near_pi

    s_gen = jnp.sqrt(jnp.where(general, s2, 1.0))
    f_gen = jnp.arctan2(s_gen, c) / s_gen
    f_small = _horner(jnp.where(small, s2, 0.0), _ASIN_OVER)
    w_regular = jnp.where(small, f_small, f_gen)[..., None] * v

    sym = 0.5 * (R + jnp.swapaxes(R, -1, -2)) - c[..., None, None] * _eye_like(v)
    j = jnp.argmax(jnp.diagonal(sym, axis1=-2, axis2=-1), axis=-1)
    col = jnp.einsum("...ij,...j->...i", sym, jax.nn.one_hot(j, 3, dtype=R.dtype))
    n = col / jnp.sqrt(jnp.where(near_pi, dot(col, col), 1.0))[..., None]
    # The sign of n is arbitrary, but sin t = n . v is signed with it, so atan2 returns -t when n
    # is -axis: the product is the same either way (and needs no square root, so it is smooth).
    w_pi = jnp.arctan2(dot(n, v), c)[..., None] * n
    return jnp.where(near_pi[..., None], w_pi, w_regular)


def rotation_from_two_vectors(a, b):
    """Minimal rotation matrix taking unit ``a`` to unit ``b`` (rotation about ``a x b``).

    ``R = (a.b) I + [c]_x + c c^T / (1 + a.b)`` with ``c = a x b``, so that
    ``R @ v == parallel_transport(v, a, b)``; smooth (and exactly ``I``) at ``a == b``,
    singular at ``a == -b``.

    Args:
        a: ``(..., 3)`` unit vector(s), from.
        b: ``(..., 3)`` unit vector(s), to.
    Returns:
        ``(..., 3, 3)`` rotation matrix.
    """
    c = jnp.cross(a, b)
    d = dot(a, b)[..., None, None]
    return d * _eye_like(c) + skew(c) + _outer(c, c) / (1.0 + d)


# ----------------------------------- quaternions (w, x, y, z) -----------------------------------


def quat_multiply(p, q):
    """Hamilton product ``p ⊗ q`` of scalar-first quaternions; ``(..., 4), (..., 4) -> (..., 4)``.

    ``quat_to_rotation(p ⊗ q) == quat_to_rotation(p) @ quat_to_rotation(q)``.
    """
    pw, pv = p[..., :1], p[..., 1:]
    qw, qv = q[..., :1], q[..., 1:]
    w = pw * qw - dot(pv, qv)[..., None]
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([w, v], axis=-1)


def quat_conjugate(q):
    """Conjugate ``(w, -x, -y, -z)`` (inverse of a unit quaternion); ``(..., 4) -> (..., 4)``."""
    return jnp.concatenate([q[..., :1], -q[..., 1:]], axis=-1)


def quat_to_rotation(q):
    """Rotation matrix of the scalar-first quaternion ``q = (w, x, y, z)``, which need NOT be unit.

    ``R = I + 2 / (q.q) * [[-(y²+z²), xy - wz, xz + wy], [xy + wz, -(x²+z²), yz - wx],
    [xz - wy, yz + wx, -(x²+y²)]]`` (the form used by Till et al.'s Cosserat-rod code): it is
    invariant under ``q -> s q`` and always a proper rotation, so integrated quaternions need no
    renormalisation. Singular only at ``q = 0``.

    Args:
        q: ``(..., 4)`` quaternion.
    Returns:
        ``(..., 3, 3)`` rotation matrix.
    """
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    m = jnp.stack(
        [
            jnp.stack([-(y * y + z * z), x * y - w * z, x * z + w * y], axis=-1),
            jnp.stack([x * y + w * z, -(x * x + z * z), y * z - w * x], axis=-1),
            jnp.stack([x * z - w * y, y * z + w * x, -(x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )
    return _eye_like(q[..., 1:]) + (2.0 / dot(q, q))[..., None, None] * m


def rotation_to_quat(R):
    """Unit scalar-first quaternion of a rotation matrix, with ``w >= 0``.

    Shepperd's method without branches: each row of the symmetric matrix ``4 q q^T`` is
    computable from ``R``; the row with the largest diagonal entry (``4 q_i^2 >= 1``) is
    normalised, which is accurate for every rotation, including the half-turns where ``w = 0``.
    The sign is then fixed so that ``w >= 0`` (at ``w = 0`` either sign may come back).

    Args:
        R: ``(..., 3, 3)`` rotation matrix.
    Returns:
        ``(..., 4)`` unit quaternion ``(w, x, y, z)``.
    """
    R = jnp.asarray(R)
    tr = jnp.trace(R, axis1=-2, axis2=-1)
    d0, d1, d2 = (1.0 + 2.0 * R[..., i, i] - tr for i in range(3))
    a = 2.0 * unskew(R)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    sym = R + jnp.swapaxes(R, -1, -2)
    s01, s02, s12 = sym[..., 0, 1], sym[..., 0, 2], sym[..., 1, 2]
    rows = jnp.stack(  # 4 q q^T
        [
            jnp.stack([1.0 + tr, a0, a1, a2], axis=-1),
            jnp.stack([a0, d0, s01, s02], axis=-1),
            jnp.stack([a1, s01, d1, s12], axis=-1),
            jnp.stack([a2, s02, s12, d2], axis=-1),
        ],
        axis=-2,
    )
    j = jnp.argmax(jnp.diagonal(rows, axis1=-2, axis2=-1), axis=-1)
    row = jnp.einsum("...ij,...j->...i", rows, jax.nn.one_hot(j, 4, dtype=R.dtype))
    q = row / jnp.linalg.norm(row, axis=-1, keepdims=True)
    return jnp.where(q[..., :1] < 0.0, -q, q)


def quat_from_axis_angle(axis_angle):
    """Unit quaternion ``(cos(t/2), sin(t/2) n)`` of the rotation vector ``w = t n``.

    Same rotation as :func:`rotation_matrix` (``w`` is one ``(..., 3)`` rotation vector, not an
    axis plus an angle); smooth, with finite derivatives at ``w = 0``. Returns ``(..., 4)``.
    """
    w = jnp.asarray(axis_angle)
    t2 = dot(w, w)
    cos_half = _series_or_exact(t2, _COS_HALF, lambda s: jnp.cos(0.5 * jnp.sqrt(s)))
    sin_half_over = _series_or_exact(
        t2, _SIN_HALF_OVER, lambda s: jnp.sin(0.5 * jnp.sqrt(s)) / jnp.sqrt(s)
    )
    return jnp.concatenate([cos_half[..., None], sin_half_over[..., None] * w], axis=-1)


def quat_rotate(q, v):
    """Rotate ``v`` by the quaternion ``q`` (need not be unit): ``quat_to_rotation(q) @ v``.

    Args:
        q: ``(..., 4)`` scalar-first quaternion.
        v: ``(..., 3)`` vector(s).
    Returns:
        ``(..., 3)``.
    """
    w, u = q[..., :1], q[..., 1:]
    uv = jnp.cross(u, v)
    return v + (2.0 / dot(q, q))[..., None] * (w * uv + jnp.cross(u, uv))


def quat_derivative(q, omega_body):
    """Time derivative ``dq/dt = 1/2 q ⊗ (0, omega)``, ``omega`` the BODY-frame angular velocity.

    Matches ``dR/dt = R [omega]_x`` with ``R = quat_to_rotation(q)``.

    Args:
        q: ``(..., 4)`` scalar-first quaternion.
        omega_body: ``(..., 3)`` angular velocity in the body (material) frame.
    Returns:
        ``(..., 4)``.
    """
    w, u = q[..., :1], q[..., 1:]
    dw = -dot(u, omega_body)[..., None]
    du = w * omega_body + jnp.cross(u, omega_body)
    return 0.5 * jnp.concatenate([dw, du], axis=-1)


# ------------------------------------------- SE(3) ---------------------------------------------
# Twists are xi = (omega, v) in R^6, ANGULAR FIRST; hat(xi) = [[skew(omega), v], [0, 0]].
# Homogeneous transforms are (..., 4, 4) with the last row (0, 0, 0, 1).


def _se3_from_rp(R, p):
    top = jnp.concatenate([R, p[..., :, None]], axis=-1)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0], dtype=R.dtype), R.shape[:-2] + (1, 4))
    return jnp.concatenate([top, bottom], axis=-2)


def se3_hat(xi):
    """``(..., 6) -> (..., 4, 4)``: ``[[skew(omega), v], [0, 0]]`` for ``xi = (omega, v)``."""
    xi = jnp.asarray(xi)
    top = jnp.concatenate([skew(xi[..., :3]), xi[..., 3:, None]], axis=-1)
    return jnp.concatenate([top, jnp.zeros_like(top[..., :1, :])], axis=-2)


def se3_vee(X):
    """Inverse of :func:`se3_hat` (uses the antisymmetric part); ``(..., 4, 4) -> (..., 6)``."""
    return jnp.concatenate([unskew(X[..., :3, :3]), X[..., :3, 3]], axis=-1)


def se3_exp(xi):
    """Exponential map se(3) -> SE(3) in closed form: ``expm(se3_hat(xi))``.

    ``R = rotation_matrix(omega)``, ``p = V v`` with
    ``V = I + (1 - cos t)/t^2 [omega]_x + (t - sin t)/t^3 [omega]_x^2``, ``t = |omega|``; the
    coefficients switch to their Taylor series near ``t = 0``, so the value and jacobian are
    finite and exact at ``xi = 0`` (``d exp / d xi_i = se3_hat(e_i)`` there).

    Args:
        xi: ``(..., 6)`` twist ``(omega, v)``, angular part first.
    Returns:
        ``(..., 4, 4)`` homogeneous transform.
    """
    xi = jnp.asarray(xi)
    w, v = xi[..., :3], xi[..., 3:]
    t2 = dot(w, w)
    a, b, c = (f[..., None, None] for f in _many_series_or_exact(
        t2, (_SIN_OVER, _ONE_MINUS_COS, _T_MINUS_SIN), lambda s: _rodrigues_exact(s, with_third=True)))
    eye = _eye_like(w)
    k = skew(w)
    k2 = _outer(w, w) - t2[..., None, None] * eye
    R = eye + a * k + b * k2
    V = eye + b * k + c * k2
    return _se3_from_rp(R, jnp.einsum("...ij,...j->...i", V, v))


def se3_log(T):
    """Logarithm SE(3) -> se(3): the twist ``xi = (omega, v)`` with ``se3_exp(xi) == T``.

    ``omega = rotation_log(R)`` (angle in ``[0, pi]``; see its notes near ``pi``) and
    ``v = V^{-1} p`` with ``V^{-1} = I - [omega]_x / 2 + (1 - (t/2) cot(t/2)) / t^2 [omega]_x^2``
    (series near ``t = 0``).

    Args:
        T: ``(..., 4, 4)`` homogeneous transform.
    Returns:
        ``(..., 6)`` twist, angular part first.
    """
    T = jnp.asarray(T)
    w = rotation_log(T[..., :3, :3])
    p = T[..., :3, 3]
    t2 = dot(w, w)

    def exact(s):
        half = 0.5 * jnp.sqrt(s)
        return (1.0 - half / jnp.tan(half)) / s

    d = _series_or_exact(t2, _VINV_COEF, exact)[..., None, None]
    eye = _eye_like(w)
    k2 = _outer(w, w) - t2[..., None, None] * eye
    v_inv = eye - 0.5 * skew(w) + d * k2
    return jnp.concatenate([w, jnp.einsum("...ij,...j->...i", v_inv, p)], axis=-1)


def se3_inverse(T):
    """Inverse of a homogeneous transform: ``[[R^T, -R^T p], [0, 1]]``; ``(..., 4, 4)``."""
    Rt = jnp.swapaxes(T[..., :3, :3], -1, -2)
    return _se3_from_rp(Rt, -jnp.einsum("...ij,...j->...i", Rt, T[..., :3, 3]))


def se3_adjoint(T):
    """Adjoint ``Ad_T`` (6x6) with ``se3_hat(Ad_T xi) == T se3_hat(xi) T^{-1}``.

    For twists ordered ``(omega, v)``: ``Ad_T = [[R, 0], [[p]_x R, R]]``.

    Args:
        T: ``(..., 4, 4)`` homogeneous transform.
    Returns:
        ``(..., 6, 6)``.
    """
    R = T[..., :3, :3]
    pR = skew(T[..., :3, 3]) @ R
    top = jnp.concatenate([R, jnp.zeros_like(R)], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([pR, R], axis=-1)], axis=-2)


def _ad_gather():
    """``(index (6, 6), sign (6, 6))`` with ``ad(x)[i, j] = sign[i, j] x[index[i, j]]``: ``ad`` has
    at most one component of ``x`` per entry (``[omega]_x`` on the diagonal blocks, ``[v]_x``
    lower left), so one gather and one product build it, instead of the slices, negations and
    stacks of two skew matrices (the PCS recursion forms ``ad`` at every quadrature point and in every
    Jacobian column: its traced and compiled size counts; the values are the same)."""
    index, sign = np.zeros((6, 6), int), np.zeros((6, 6))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):  # skew(v)[i, j] = -v[k], skew(v)[j, i] = v[k]
        for r, c, off in ((0, 0, 0), (3, 3, 0), (3, 0, 3)):
            index[r + i, c + j], sign[r + i, c + j] = off + k, -1.0
            index[r + j, c + i], sign[r + j, c + i] = off + k, 1.0
    return index, sign


_AD_INDEX, _AD_SIGN = _ad_gather()


def se3_ad(xi):
    """Little adjoint ``ad_xi`` (6x6) with ``ad_xi eta = vee([hat xi, hat eta])``.

    For twists ordered ``(omega, v)``: ``ad_xi = [[[omega]_x, 0], [[v]_x, [omega]_x]]``.

    Args:
        xi: ``(..., 6)`` twist.
    Returns:
        ``(..., 6, 6)``.
    """
    return jnp.asarray(xi)[..., _AD_INDEX] * _AD_SIGN

