"""TMTDyn's EBA rod (spec 5.4): rigid lumped nodes with ABSOLUTE poses joined by Euler-Bernoulli
beam elements.

Nodes ``i = 1..n`` sit at ``s_i = i L / n`` (node 0 is the clamped base, pose ``(0, I)``); each
carries the mass of one element, ``m = rho A l`` with ``l = L / n``, as a cylinder attached at its
centre (spec 5.1: principal inertia ``rho J l + m l^2/12 (1, 1, 0)``). With TMTDyn's lumping
(``lumping="element"``) the tip node carries a full element, i.e. every element's mass sits at its
distal end: a first-order error (frequencies about 10 % low at ``n = 8`` with the midpoint frame).
``lumping="trapezoid"`` gives the tip node half of it (mass and inertia), second order.

Coordinates ``q`` ``(n, 6)``: per node the world position ``x`` [m] and the vector part ``Q_rho``
of its unit orientation quaternion, ``Q = (sqrt(1 - |Q_rho|^2), Q_rho)``: TMTDyn's EBA states
(spec 5.4), valid for node rotations below pi. Why not the pose variables of
:class:`jaxrod.system.MultibodySystem` (``x`` plus a rotation vector re-centred every step, with
velocity = body angular velocity, no singularity): that chart's velocity is not ``dq/dt`` and its
rows are Euler's equations premultiplied by the ``T^T`` of the system residual, machinery that
lives in ``system/`` (models may not import it) and that this model would have to duplicate; a
fixed chart keeps ``v = dq/dt`` and the TMT residual shared with the ROM
(:func:`~jaxrod.models.tmtdyn.section.tmt_inertial_forces`, one code path for both), at half the
compile cost of a rotation-vector chart (measured: the exponential map's series branches double
the traced Jacobian). At ``q_0`` the node mass matrix is ``diag(m, m, m, 4 I)`` (``omega = 2
dQ_rho/dt`` there). The beam law :func:`beam_deformation` is a pure function of two poses, ready
for a system force element between rigid bodies.

Beam ``e`` between node ``a = e - 1`` and ``b = e`` (spec Eq. 36, inverse discretised VC)::

    eps_e   = R_f^T (x_b - x_a) - (0, 0, l)       alpha_e = 2 vec(Q_a^-1 Q_b) = 2 sin(phi/2) axis
    energy  = 1/2 chi^T K chi,   K = diag(G A, G A, E A, E Jx, E Jy, G Jz) / l,  chi = (eps, alpha)

with the chord measured in ``R_f = R_a`` (``beam_frame="node"``, TMTDyn) or in the mid-frame
``R_f = R_a`` turned by ``phi/2`` (``beam_frame="midpoint"``). ``alpha`` is the paper's rotation
measure: the exact rotation vector to first order, saturating as ``phi -> pi`` (so each element
must bend by well under pi, which a useful discretisation does anyway).

EBR and PCS. TMTDyn's EBR (spec 5.3: states ``(eps_i, alpha_i)`` relative to the previous node,
``x_{i+1} = x_i + R_i (eps_nom + eps_i)``, ``Q_{i+1} = Q_i [1, alpha_i/2]`` normalised) is this
model with ``beam_frame="node"`` in other coordinates: the same masses and springs, and ``chi_e``
are the EBR states (exactly for ``eps``; ``alpha`` up to third order in the element rotation,
EBR's quaternion giving ``2 tan(phi/2)`` where Eq. 36 gives ``2 sin(phi/2)``). It is NOT the
same as jaxrod's PCS rod with ``n`` segments at finite ``n``: PCS has the same stiffness in
its strain coordinates (``K_PCS = l^2 K_EBR`` with ``eps = l (nu - e_z)``, ``alpha = l kappa``),
but it distributes the mass and bends each segment along an arc, so its
chord leaves the segment at half the segment's rotation. The midpoint beam frame reproduces that
chord: ``beam_frame="midpoint"`` equals PCS's linearised kinematics and stiffness exactly (tip
deflection under an end load ``P``: ``P L^3/(E J) (1/3 - 1/(12 n^2)) + P L/(G A)``, PCS and
midpoint alike), while ``"node"`` (= EBR) gives ``P L^3/(E J) (n-1) n (2n-1)/(6 n^3) + P L/(G A)``
(first-order convergence). ``tests/test_reduced_rods.py`` checks all three formulas.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...integrate.base import jit_when_eager
from ...geometry import quat_conjugate, quat_multiply, quat_rotate, quat_to_rotation
from ...validation import check_int
from ...integrate.base import State
from .section import ClampedRodModel, body_rate, unit_quaternion

_EZ = np.array([0.0, 0.0, 1.0])
BEAM_FRAMES = ("node", "midpoint")
LUMPINGS = ("element", "trapezoid")


def beam_deformation(x_a, Q_a, x_b, Q_b, rest_length, beam_frame="node"):
    """Deformation coordinates ``chi = (eps (3) [m], alpha (3) [rad])`` of a straight beam of
    ``rest_length`` [m] from node ``a`` (position ``x_a (3,)``, unit quaternion ``Q_a (4,)``, its
    local z along the beam) to node ``b``; zero when ``b`` sits at ``x_a + R_a (0, 0, l)`` with
    ``Q_b = Q_a``.

    ``alpha = 2 vec(Q_a^-1 Q_b) = 2 sin(phi/2) axis`` (spec Eq. 36) for a relative rotation by
    ``phi``: the rotation vector to first order, valid for ``|phi| < pi`` per element.
    ``beam_frame``: ``"node"`` (chord in ``Q_a``, TMTDyn Eq. 36) or ``"midpoint"`` (chord in
    ``Q_a`` turned by ``phi/2``: ``Q_a (1 + Q_rel)``, normalised by :func:`quat_rotate`).
    """
    if beam_frame not in BEAM_FRAMES:
        raise ValueError(f"beam_deformation(): beam_frame must be one of {BEAM_FRAMES}, got {beam_frame!r}")
    Q_rel = quat_multiply(quat_conjugate(Q_a), Q_b)
    Q_f = Q_a if beam_frame == "node" else quat_multiply(Q_a, Q_rel + jnp.array([1.0, 0.0, 0.0, 0.0]))
    eps = quat_rotate(quat_conjugate(Q_f), x_b - x_a) - rest_length * _EZ
    return jnp.concatenate([eps, 2.0 * Q_rel[1:]])


class EBAModel(ClampedRodModel):
    """TMTDyn EBA rod clamped at the origin along world z (see module docstring).

    Coordinates ``q`` ``(n_nodes, 6)``: node positions [m] (rest: ``(0, 0, i L / n)``) and the
    vector parts ``Q_rho`` of the node quaternions (rest: 0).

    Attributes (besides :class:`~jaxrod.models.tmtdyn.section.ClampedRodModel`'s ``section``,
    ``gravity`` [m/s^2], ``tip_force`` [N], ``load_factor``):
        n_nodes: number of nodes = beam elements ``n_d`` >= 1 (static): ``6 n_d`` coordinates.
        damping: ``(6,)`` ``(mu_eps (3) [N s/m], mu_alpha (3) [N m s/rad])``: viscous
            coefficients per element on ``epsdot, alphadot`` (TMTDyn's ``mu_eps|alpha``).
        beam_frame: ``"node"`` (TMTDyn, = EBR) or ``"midpoint"`` (= PCS linearised), static.
        lumping: ``"element"`` (TMTDyn: every node one element's mass) or ``"trapezoid"`` (the
            tip node half of it), static. TMTDyn's model is the default. Measured (r/L = 0.005,
            first three bending frequencies vs Euler-Bernoulli): TMTDyn's at 8/16 nodes
            +0.48/-1.86/-7.96 % and +0.12/-0.44/-1.97 % (two first-order errors that cancel at
            leading order; its static tip deflection is first order, -18 % at 8 nodes);
            ``beam_frame="midpoint", lumping="trapezoid"`` -0.72/-2.44/-3.88 % and
            -0.19/-0.66/-1.10 % (second order; statics -0.39 % at 8 nodes).
    """

    n_nodes: int = eqx.field(static=True, default=8)
    beam_frame: str = eqx.field(static=True, default="node")
    lumping: str = eqx.field(static=True, default="element")

    def __check_init__(self):
        check_int("EBAModel.n_nodes", self.n_nodes, min=1)
        if self.beam_frame not in BEAM_FRAMES:
            raise ValueError(f"EBAModel.beam_frame must be one of {BEAM_FRAMES}, got {self.beam_frame!r}")
        if self.lumping not in LUMPINGS:
            raise ValueError(f"EBAModel.lumping must be one of {LUMPINGS}, got {self.lumping!r}")

    @property
    def element_length(self) -> float:
        return self.section.length / int(self.n_nodes)

    def node_mass(self):
        """Mass of one element [kg] (every node's, the tip's with ``lumping="element"``)."""
        return self.section.mass_per_length * self.element_length

    def node_inertia(self):
        """``(3,)`` principal inertia of every node about its centre, local frame [kg m^2]."""
        l = self.element_length
        return self.section.rotary_inertia_density * l + self.node_mass() * l**2 / 12.0 * jnp.array([1.0, 1.0, 0.0])

    # ---- kinematics ---------------------------------------------------------------------------
    def _chain(self, q):
        """Poses of base and nodes: ``(n+1, 3)`` positions and ``(n+1, 4)`` unit quaternions."""
        x = jnp.concatenate([jnp.zeros((1, 3), q.dtype), q[:, :3]])
        Q = jnp.concatenate([jnp.array([[1.0, 0.0, 0.0, 0.0]], q.dtype), unit_quaternion(q[:, 3:])])
        return x, Q

    def deformation(self, q):
        """``(n_nodes, 6)`` deformation coordinates ``chi_e = (eps, alpha)`` of every beam."""
        x, Q = self._chain(q)
        return jax.vmap(lambda xa, Qa, xb, Qb: beam_deformation(xa, Qa, xb, Qb, self.element_length, self.beam_frame))(
            x[:-1], Q[:-1], x[1:], Q[1:]
        )

    def tip_position(self, q):
        return q[-1, :3]

    # ---- energies -----------------------------------------------------------------------------
    def velocities(self, q, v):
        return v[:, :3], jax.vmap(body_rate)(unit_quaternion(q[:, 3:]), v[:, 3:])  # body angular velocities

    def _lumping_weights(self):
        w = np.ones(int(self.n_nodes))
        if self.lumping == "trapezoid":
            w[-1] = 0.5
        return jnp.asarray(w)

    def masses(self):
        return self._lumping_weights() * self.node_mass()

    def inertias(self):
        return self._lumping_weights()[:, None] * self.node_inertia()

    def positions(self, q):
        return q[:, :3]

    def stiffness_weights(self):
        return jnp.broadcast_to(self.section.stiffness_density / self.element_length, (int(self.n_nodes), 6))

    def damping_weights(self):
        return jnp.broadcast_to(self.damping, (int(self.n_nodes), 6))

    # ---- plumbing -----------------------------------------------------------------------------
    def initial_state(self):
        n = int(self.n_nodes)
        z = self.element_length * np.arange(1, n + 1)
        q0 = jnp.asarray(np.concatenate([np.zeros((n, 2)), z[:, None], np.zeros((n, 3))], axis=1))
        return State(q0, jnp.zeros_like(q0), None)

    @jit_when_eager
    def observe(self, q, v, aux):
        x, Q = self._chain(q)
        # rows of each frame are its axes in the world frame, as the other models save them
        return {"positions": x, "frames": jnp.swapaxes(quat_to_rotation(Q[1:]), -1, -2)}
