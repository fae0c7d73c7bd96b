"""Tendons on a PCS rod: the routed cable's length from the segment strains, its loads ``-tau dl/dq``.

The same :class:`~jaxrod.models.cosserat.tendons.Tendon` (routing ``r(s)``, tension
``tau(t)``, termination ``s_t``) as on the shooting and DER models. The routing gives the channel
offset in the Cosserat section frame ``(d1, d2, d3 = axis)``; the PCS section frame has the rod
axis first, so ``r = (r1, r2, r3)`` sits at ``r3 x + r1 y + r2 z`` in the PCS local frame (``d1``
is local ``y``, ``d2`` local ``z``).

The channel point ``p + R r`` moves along the rod at the rate ``|d/ds (p + R r)| = |eps + kappa x
r + r_s|`` (local frame, ``xi = [kappa; eps]``: the Cosserat ``|v + u x r + r_s|``), so the tendon
length inside the rod, from the base to ``s_t``, is a sum over the segments of integrals of their
own constant strain only:

    ``l(q) = sum_i int_{[s_i, s_i+1] cap [0, s_t]} |eps_i + kappa_i x r(s) + r_s(s)| ds``,

by Gauss-Legendre quadrature (exact for a straight routing, whose integrand is constant in a
segment). A frictionless, massless cable at constant tension ``tau`` has the potential ``tau l``,
so its generalised force is ``-tau dl/dq`` (autodiff): the distributed tendon loads and the
termination load of spec 7.2 in one exact gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def pcs_offset(r):
    """Cosserat-frame offset ``(..., 3)`` ``(d1, d2, axis)`` -> PCS local frame ``(axis, y, z)``."""
    return jnp.stack([r[..., 2], r[..., 0], r[..., 1]], axis=-1)


def _quadrature(length: float, n_segments: int, end: float, n_quad: int):
    """Static Gauss-Legendre rule over ``[0, end]`` split at the segment ends: ``(segment index
    (K,), arc length s (K,) [m], weight (K,) [m])``."""
    x, w = np.polynomial.legendre.leggauss(int(n_quad))
    seg, s, wt = [], [], []
    h = length / n_segments
    for i in range(n_segments):
        a, b = i * h, min((i + 1) * h, end)
        if b <= a:
            break
        seg.append(np.full(x.size, i))
        s.append(a + 0.5 * (b - a) * (x + 1.0))
        wt.append(0.5 * (b - a) * w)
    return np.concatenate(seg), np.concatenate(s), np.concatenate(wt)


def tendon_length(xis, length: float, routing, termination=None, n_quad: int = 4):
    """Length [m] of a tendon inside a PCS rod of ``length`` [m] with segment strains
    ``xis (n, 6)`` (equal segments), from the base to ``termination`` [m] (``None``: the tip)."""
    n = xis.shape[0]
    end = length if termination is None else float(termination)
    seg, s, w = _quadrature(float(length), n, end, n_quad)
    r, r_s = jax.vmap(lambda x: jax.jvp(routing, (x,), (jnp.ones_like(x),)))(jnp.asarray(s, dtype=xis.dtype))
    r, r_s = pcs_offset(r), pcs_offset(r_s)
    xi = xis[seg]
    rate = xi[:, 3:] + jnp.cross(xi[:, :3], r) + r_s
    return jnp.sum(jnp.asarray(w, dtype=xis.dtype) * jnp.linalg.norm(rate, axis=-1))


def tendon_forces(model, q, t):
    """``(n m,)`` generalised forces ``-tau(t) dl/dq`` [N, N m] of ``model.tendons`` at coordinates
    ``q`` and time ``t`` [s], scaled by the model's ``load_factor``."""

    def potential(q):
        xis = model.strains(q)
        return sum(
            td.tension_at(t) * tendon_length(xis, model.rod.length, td.routing, td.termination, model.n_quad)
            for td in model.tendons
        )

    return -model.load_factor * jax.grad(potential)(q)
