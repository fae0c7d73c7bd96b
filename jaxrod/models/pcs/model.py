"""Piecewise-constant-strain (PCS) rod dynamics (Ishigaki, Ayusawa & Yamamoto, RA-L 2024): the
recursive inverse dynamics (:func:`inverse_dynamics`) and the implicit model (:class:`PCSModel`)
that plugs into :func:`jaxrod.simulate` (Newmark-beta, backward Euler, ...) and
:func:`jaxrod.solve_static`. The rod itself (:class:`~jaxrod.models.pcs.rod.PCSRod`) and its tip
body are in :mod:`jaxrod.models.pcs.rod`.

Generalised coordinates ``q (n m,)``: the active strain modes of every segment, ``xi_i = B q_i +
xi*_i`` (:class:`~jaxrod.models.pcs.kinematics.StrainBasis`; all six modes by default, as in the
paper). The equation of motion is the residual of eq. (25),

    ``h(q, qd, qdd) = B^T [ ID(xi, xidot, xiddot) + K (xi - xi*) + D xidot ] = 0``,

with ``ID`` the PCS recursive Newton-Euler inverse dynamics (eqs. 11, 14, 16-18 with Gauss-Legendre
quadrature; gravity by the base-acceleration trick), ``K = blkdiag(ell_i Sigma)``,
``Sigma = diag(G Jx, E Jy, E Jz, E A, G A, G A)`` and ``D = blkdiag(ell_i Upsilon)``,
``Upsilon = mu diag(Jx, 3 Jy, 3 Jz, 3 A, A, A)`` (Renda / SoRoSim convention, spec sec. 3.5).
Its Jacobians come from ``jax.jacfwd`` through the recursion, or (``PCSModel(jacobian="cmtm")``)
from the paper's CMTM analytic gradients in :mod:`jaxrod.models.pcs.cmtm`.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...integrate.base import jit_when_eager
from ...solvers.jacobian import DenseJacobianSolver
from ...validation import (
    one_or_many,
    check_finite,
    check_finite_scalar,
    check_int,
    check_nonnegative,
    check_positive,
    check_scalar,
    check_shape,
    is_traced,
)
from ...integrate.implicit import AbstractImplicitModel, State
from .actuation import chamber_forces
from .cmtm import cmtm_generalized_forces
from .loads import PointWrench, check_point_wrenches, shift_wrench
from .nonlinear import NonlinearOptions
from .actuation import tendon_forces as pcs_tendon_forces
from .rod import PCSRod, TipBody
from .kinematics import (
    XI_STRAIGHT,
    StrainBasis,
    _gauss_legendre,
    _mv,
    ad,
    compose_frames,
    exp_se3,
    expA_inv,
    forward_kinematics,
    propagate_velocities,
    segment_frames,
    segment_operators,
    tangent_C,
    twists_from_operators,
)


def inverse_dynamics(
    rod: PCSRod, xis, xidots, xiddots, *, gravity_body=None, tip_wrench=None, tip_inertia=None, n_quad=4,
    point_wrenches=(),
):
    """PCS recursive Newton-Euler inverse dynamics (spec sec. 3.6): generalised forces ``(n, 6)``.

    Args:
        rod: :class:`PCSRod`.
        xis, xidots, xiddots: ``(n, 6)`` strains, rates, accelerations.
        gravity_body: ``(3,)`` gravity in the base frame [m/s^2] (enters as base acceleration).
        tip_wrench: ``(6,)`` external ``[moment; force]`` on the tip, in the tip frame [N m, N].
        tip_inertia: ``(6, 6)`` spatial inertia of a rigid body welded to the tip, about the tip
            frame origin (:attr:`TipBody.screw_inertia`); its inertial and gravity wrench
            ``M etadot - ad(eta)^T M eta`` loads the tip.
        n_quad: Gauss-Legendre points per segment.
        point_wrenches: ``(i, x, W)`` triples: an external ``[moment; force]`` ``W (6,)`` [N m, N]
            on segment ``i`` (static) at local coordinate ``0 < x <= ell_i`` [m], components in
            the section frame there, about the centreline; it enters the segment's sums as a
            quadrature node of weight 1 does (at the tip, ``tip_wrench`` is the same load).
    """
    dt = xis.dtype
    lengths = rod.segment_lengths.astype(dt)
    ops = segment_operators(xis, xidots, _quadrature_and_ends(lengths, n_quad))
    return _inverse_dynamics(rod, ops, xis, xidots, xiddots, gravity_body, tip_wrench, tip_inertia, n_quad,
                             point_wrenches)


def _quadrature_and_ends(lengths, n_quad):
    """``(n, n_quad + 1)`` local coordinates [m]: the Gauss-Legendre nodes of every segment, then
    its end ``ell_i`` (where :func:`_inverse_dynamics` reads the segment-end operators)."""
    nodes, _ = _gauss_legendre(n_quad)
    return lengths[:, None] * jnp.asarray(np.append(nodes, 1.0), lengths.dtype)[None, :]


def _inverse_dynamics(rod, ops, xis, xidots, xiddots, gravity_body, tip_wrench, tip_inertia, n_quad, point_wrenches):
    """:func:`inverse_dynamics` from the operators ``ops`` (:func:`segment_operators` at
    :func:`_quadrature_and_ends`): one batch of exponentials and tangent operators serves the
    velocity recursion (segment ends), the quadrature (nodes) and the force recursion (ends)."""
    dt = xis.dtype
    lengths = rod.segment_lengths.astype(dt)
    Mdiag = rod.screw_inertia
    g = jnp.zeros(3, dt) if gravity_body is None else gravity_body
    etadot_base = jnp.concatenate([jnp.zeros(3, dt), -g])
    xiddots = jnp.zeros_like(xis) if xiddots is None else xiddots
    Ai_end, C_end = ops.Ai[:, -1], ops.C[:, -1]
    eta, etadot = propagate_velocities(Ai_end, C_end, ops.Cd[:, -1], xidots, xiddots, jnp.zeros(6, dt), etadot_base)
    _, weights = _gauss_legendre(n_quad)
    wq = lengths[:, None] * jnp.asarray(weights, dt)[None, :]
    Ai_q, C_q = ops.Ai[:, :-1], ops.C[:, :-1]

    def tile(a):
        return jnp.broadcast_to(a[:, None, :], (a.shape[0], wq.shape[1], 6))

    eta_q, etadot_q = twists_from_operators(Ai_q, C_q, ops.Cd[:, :-1], tile(eta[:-1]), tile(etadot[:-1]),
                                            tile(xidots), tile(xiddots))
    Meta = Mdiag * eta_q
    F = Mdiag * etadot_q - jnp.einsum("...ji,...j->...i", ad(eta_q), Meta)  # M etadot - ad(eta)^T M eta
    f_loc = jnp.einsum("nqji,nqj,nq->ni", Ai_q, F, wq)  # sum_g w A^-T F
    tau_loc = jnp.einsum("nqji,nqj,nq->ni", C_q, F, wq)
    for i, xp, W in point_wrenches:  # an external load is -F
        f_loc = f_loc.at[i].add(-(expA_inv(xis[i], xp).T @ W))
        tau_loc = tau_loc.at[i].add(-(tangent_C(xis[i], xp).T @ W))
    f_tip = jnp.zeros(6, dt) if tip_wrench is None else -tip_wrench
    if tip_inertia is not None:  # the same Newton-Euler wrench as the rod's own sections
        f_tip = f_tip + tip_inertia @ etadot[-1] - ad(eta[-1]).T @ (tip_inertia @ eta[-1])

    def step(f_next, seg):
        fl, tl, A_e, C_e = seg  # eqs. (17), (18) solved for f_i, tau_i
        return fl + A_e.T @ f_next, tl + C_e.T @ f_next

    _, tau = jax.lax.scan(step, f_tip, (f_loc, tau_loc, Ai_end, C_end), reverse=True)
    return tau


class PCSModel(AbstractImplicitModel):
    """A PCS rod clamped at its base (frame {1}), as an implicit model for :func:`jaxrod.simulate`.

    Attributes:
        rod: :class:`PCSRod`.
        basis: :class:`~jaxrod.models.pcs.kinematics.StrainBasis` of the active modes (default all six).
        gravity: ``(3,)`` world gravity [m/s^2].
        base_rotation: ``(3, 3)`` orientation of the base frame (rod axis = its first column);
            base_position ``(3,)`` [m].
        tip_wrench: ``(6,)`` ``[moment; force]`` on the tip in the world frame [N m, N] (dead load).
        n_quad: Gauss-Legendre points per segment (static).
        points_per_segment: centreline samples per segment in the saved ``positions`` (static).
        jacobian: ``"autodiff"`` (default) or ``"cmtm"`` (static): how forward-mode derivatives of
            :meth:`generalized_forces` with respect to ``q, v, a`` (hence the dense Newton
            Jacobian) are computed: ``jax.jvp`` through the recursion, or the analytic CMTM
            gradients of :mod:`jaxrod.models.pcs.cmtm` (same values to round-off).
        tip_body: optional :class:`TipBody` welded to the tip (its inertia and weight; autodiff
            Jacobian only).
        chambers: tuple of pressure-controlled :class:`~jaxrod.actuation.chambers.Chamber`
            (offset ``(r_y, r_z)``; :mod:`jaxrod.models.pcs.actuation`): their generalised forces,
            scaled by ``load_factor``, enter :meth:`residual` at time ``t``.
        tendons: tuple of :class:`~jaxrod.actuation.tendons.Tendon` (arc length from the
            base, offsets in the Cosserat section frame ``(d1, d2) = (local y, local z)``):
            generalised forces ``-tau(t) dl/dq`` of each cable's length ``l``
            (:mod:`jaxrod.models.pcs.actuation`), scaled by ``load_factor``.
        section_radius: radius [m] holding the tendon channels and the chambers (``None``: the
            equivalent radius ``sqrt(area / pi)`` of the backbone); checked at construction.
        point_wrenches: tuple of :class:`~jaxrod.models.pcs.loads.PointWrench`: time-varying
            wrenches at body-fixed points (world or body frame), scaled by ``load_factor``
            (autodiff Jacobian only).
        tip_offset: ``(3,)`` a body-fixed point in the tip frame [m] (a tool or sensor), or
            ``None``: :meth:`tip_point` is its world position and :meth:`observe` appends it to
            ``positions`` (so ``Trajectory.tip`` is that point; not for a rod of a
            :class:`~jaxrod.system.HybridSystem`, which lays out the centreline samples only).
        nonlinear: :class:`~jaxrod.models.pcs.nonlinear.NonlinearOptions` (TMTDyn's stretch
            update, growing chambers, power-law damping) or ``None``: the linear model.
    """

    trace_residual_once = True  # see jaxrod.integrate.implicit: the recursion is slow to trace

    rod: PCSRod
    basis: StrainBasis = eqx.field(default_factory=StrainBasis.full)
    gravity: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    base_rotation: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default_factory=lambda: np.eye(3))
    base_position: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_wrench: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0,) * 6)
    load_factor: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=1.0)
    n_quad: int = eqx.field(static=True, default=4)
    points_per_segment: int = eqx.field(static=True, default=8)
    jacobian: str = eqx.field(static=True, default="autodiff")
    tip_body: TipBody | None = None
    chambers: tuple = eqx.field(converter=one_or_many, default=())
    tendons: tuple = eqx.field(converter=one_or_many, default=())
    section_radius: jax.Array | None = None
    point_wrenches: tuple = eqx.field(converter=one_or_many, default=())
    tip_offset: jax.Array | None = eqx.field(
        converter=lambda x: None if x is None else jnp.asarray(x, dtype=float), default=None)
    nonlinear: NonlinearOptions | None = None

    def __check_init__(self):
        if not isinstance(self.rod, PCSRod):
            raise TypeError(f"rod must be a PCSRod, got {type(self.rod).__name__}")
        check_shape("base_position", self.base_position, (3,))
        check_finite("base_position", self.base_position)
        check_finite_scalar("load_factor", self.load_factor)
        if self.section_radius is not None:
            check_finite_scalar("section_radius", self.section_radius, "m")
            check_positive("section_radius", self.section_radius, "m")
        check_int("n_quad", self.n_quad, min=1)
        check_int("points_per_segment", self.points_per_segment, min=1)
        check_shape("gravity", self.gravity, (3,))
        check_shape("tip_wrench", self.tip_wrench, (6,))
        check_shape("base_rotation", self.base_rotation, (3, 3))
        check_finite("gravity", self.gravity)
        check_finite("tip_wrench", self.tip_wrench)
        if int(self.n_quad) < 1:
            raise ValueError(f"n_quad must be >= 1, got {self.n_quad}")
        if self.jacobian not in ("autodiff", "cmtm"):
            raise ValueError(f"jacobian must be 'autodiff' or 'cmtm', got {self.jacobian!r}")
        if self.tip_body is not None and not isinstance(self.tip_body, TipBody):
            raise TypeError(f"tip_body must be a TipBody or None, got {type(self.tip_body).__name__}")
        if self.tip_body is not None and self.jacobian == "cmtm":
            raise ValueError("tip_body is supported with jacobian='autodiff' only (the CMTM gradients omit it)")
        check_point_wrenches(self.point_wrenches, self.rod.length)
        if self.point_wrenches and self.jacobian == "cmtm":
            raise ValueError("point_wrenches are supported with jacobian='autodiff' only (the CMTM gradients omit them)")
        if self.tip_offset is not None:
            check_shape("tip_offset", self.tip_offset, (3,))
            check_finite("tip_offset", self.tip_offset)
        if self.nonlinear is not None:
            if not isinstance(self.nonlinear, NonlinearOptions):
                raise TypeError(f"nonlinear must be a NonlinearOptions or None, got {type(self.nonlinear).__name__}")
            if self.nonlinear.active and self.tendons:
                raise ValueError("nonlinear: the nonlinear options support chambers, not tendons")
        if not isinstance(self.chambers, tuple):
            raise TypeError(f"chambers must be a tuple of Chamber, got {type(self.chambers).__name__}")
        if not is_traced(self.base_rotation):
            R = np.asarray(self.base_rotation)
            if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
                raise ValueError("base_rotation must be a rotation matrix")
        if self.chambers or self.tendons:
            from ...actuation.tendons import section_radius_default

            radius = section_radius_default(self.rod) if self.section_radius is None else self.section_radius
        if self.chambers:
            from ...actuation.chambers import check_chambers

            check_chambers(self.chambers, radius, pressure_only="PCS")
        if self.tendons:
            from ...actuation.tendons import check_tendons, check_tension_controlled

            check_tension_controlled(self.tendons, "PCS")
            grid = np.linspace(0.0, self.rod.length, 4 * int(self.rod.n_segments) + 1)
            check_tendons(self.tendons, self.rod.length, radius, grid)

    # ---- coordinates -----------------------------------------------------------------------------
    @property
    def n_modes(self) -> int:
        return int(self.basis.n_modes)

    def strains(self, q):
        """``(n, 6)`` strains ``xi_i = B q_i + xi*_i`` from flat coordinates ``q (n m,)`` (``q = 0``:
        the rest shape; ``basis.xi_ref`` is not used)."""
        n = int(self.rod.n_segments)
        return self.basis.strain_rate(q.reshape(n, self.n_modes)) + self.rod.rest_strain

    def segment_end_poses(self, q):
        """World poses of the segment ends (frames ``{1}..{n+1}``) at coordinates ``q (n m,)``:
        ``(R (n + 1, 3, 3), p (n + 1, 3) [m])``; index 0 is the clamped base, ``n`` the tip; the
        columns of ``R`` are the cross-section axes (rod axis first). Attachments to rigid bodies
        (:class:`jaxrod.system.HybridSystem`) read these."""
        return segment_frames(self.strains(q), self.rod.segment_lengths, (self.base_rotation, self.base_position))

    def strain_rates(self, v):
        return self.basis.strain_rate(v.reshape(int(self.rod.n_segments), self.n_modes))

    def tip_point(self, q):
        """``(3,)`` world position [m] of the tip point ``tip_offset`` (the tip itself when
        ``None``) at coordinates ``q (n m,)``."""
        R, p = self.segment_end_poses(q)
        return p[-1] if self.tip_offset is None else p[-1] + R[-1] @ self.tip_offset

    def with_load_factor(self, s):
        """The same model with gravity, tip wrench, point wrenches, chamber pressures and tendon
        tensions scaled by ``s`` (static continuation)."""
        return eqx.tree_at(lambda m: m.load_factor, self, jnp.asarray(s, dtype=float))

    # ---- physics -----------------------------------------------------------------------------------
    def generalized_forces(self, q, v, a, t=None):
        """``(n m,)`` inverse-dynamics forces ``B^T ID(q, qd, qdd)`` (gravity and tip wrench
        included; the point wrenches at time ``t`` [s] when it is given)."""
        if self.jacobian == "cmtm":
            return cmtm_generalized_forces(self, q, v, a)
        return self._generalized_forces_autodiff(q, v, a, t)

    def _generalized_forces_autodiff(self, q, v, a, t=None):
        xis, xid, xidd = self.strains(q), self.strain_rates(v), self.strain_rates(a)
        Rb = self.base_rotation
        g_body = self.load_factor * (Rb.T @ self.gravity)
        lengths = self.rod.segment_lengths
        ops = segment_operators(xis, xid, _quadrature_and_ends(lengths, self.n_quad))
        # the dead tip wrench is given in the world frame: rotate it into the tip frame (the
        # segment frames from the segment-end exponentials of ops: no second exponential)
        R_frames, _ = compose_frames(ops.R[:, -1], ops.p[:, -1], (Rb, self.base_position))
        Rt = R_frames[-1]
        w, tip_body_frame, inside = self._point_loads(xis, R_frames, t)
        w = self.load_factor * w
        tip = jnp.concatenate([Rt.T @ w[:3], Rt.T @ w[3:]])
        if tip_body_frame is not None:
            tip = tip + self.load_factor * tip_body_frame
        M_tip = None if self.tip_body is None else self.tip_body.screw_inertia
        tau = _inverse_dynamics(
            self.rod, ops, xis, xid, xidd, g_body, tip, M_tip, self.n_quad,
            [(i, x, self.load_factor * W) for i, x, W in inside],
        )
        return (tau @ self.basis.B).reshape(-1)

    def _point_loads(self, xis, R_frames, t):
        """The point wrenches at time ``t`` (none when ``t`` is ``None``) sorted for the
        recursion: ``(world tip wrench (6,) about the tip, tip tip wrench in the tip frame (6,) or
        None, [(segment, x, section-frame wrench (6,))])``, with the model's ``tip_wrench``
        included in the first (see :mod:`jaxrod.models.pcs.loads`)."""
        w, body, inside = self.tip_wrench, None, []
        if t is None:
            return w, body, inside
        n = int(self.rod.n_segments)
        ell = self.rod.segment_lengths
        for pw in self.point_wrenches:
            i, x = pw.locate(self.rod.length, n)
            W = pw.value(t)
            if i == n - 1 and x is None:  # at the tip: the recursion's boundary wrench
                R = R_frames[-1]
                if pw.frame == "world":
                    w = w + shift_wrench(W, R @ pw.offset)
                else:
                    W = shift_wrench(W, pw.offset)
                    body = W if body is None else body + W
                continue
            x = ell[i] if x is None else x
            Rl, _ = exp_se3(xis[i], x)
            R = R_frames[i] @ Rl
            if pw.frame == "world":
                W = shift_wrench(W, R @ pw.offset)
                W = jnp.concatenate([R.T @ W[:3], R.T @ W[3:]])
            else:
                W = shift_wrench(W, pw.offset)
            inside.append((i, x, W))
        return w, body, inside

    def internal_forces(self, q, v):
        """``(n m,)`` elastic + viscous forces ``B^T [K (xi - xi*) + D xidot]``."""
        ell = self.rod.length / int(self.rod.n_segments)
        xis, xid = self.strains(q), self.strain_rates(v)
        w = ell * (self.rod.stiffness_density * (xis - self.rod.rest_strain) + self.rod.damping_density * xid)
        return (w @ self.basis.B).reshape(-1)

    def residual(self, q, v, a, t, aux):
        if self.nonlinear is not None and self.nonlinear.active:
            return self.nonlinear.residual(self, q, v, a, t)
        r = self.generalized_forces(q, v, a, t) + self.internal_forces(q, v)
        if self.chambers:
            Q = chamber_forces(self.chambers, t, self.rod.segment_lengths)
            r = r - self.load_factor * (Q @ self.basis.B).reshape(-1)
        if self.tendons:
            r = r - pcs_tendon_forces(self, q, t)
        return r

    def mass_matrix(self, q):
        """``(n m, n m)`` generalised inertia ``d h / d qdd``."""
        z = jnp.zeros_like(q)
        return jax.jacfwd(lambda a: self.generalized_forces(q, z, a))(z)

    def energy(self, q, v):
        """Kinetic + elastic + gravitational energy [J] (Gauss quadrature of the kinetic and
        gravity densities; elastic energy exact for constant strains)."""
        rod = self.rod
        xis, xid = self.strains(q), self.strain_rates(v)
        lengths = rod.segment_lengths
        n_quad = max(int(self.n_quad), 4)
        _, weights = _gauss_legendre(n_quad)
        # one batch of operators at the nodes and segment ends serves velocities and positions
        ops = segment_operators(xis, xid, _quadrature_and_ends(lengths, n_quad))
        zero = jnp.zeros(6, xis.dtype)
        eta, _ = propagate_velocities(ops.Ai[:, -1], ops.C[:, -1], ops.Cd[:, -1], xid, jnp.zeros_like(xid), zero, zero)
        eta_q = _mv(ops.Ai[:, :-1], eta[:-1, None]) + _mv(ops.C[:, :-1], xid[:, None])  # eq. (11)
        wq = lengths[:, None] * jnp.asarray(weights)[None, :]
        kinetic = 0.5 * jnp.sum(wq[..., None] * rod.screw_inertia * eta_q**2)
        elastic = 0.5 * jnp.sum(lengths[:, None] * rod.stiffness_density * (xis - rod.rest_strain) ** 2)
        R_frames, p_frames = compose_frames(ops.R[:, -1], ops.p[:, -1], (self.base_rotation, self.base_position))
        p = p_frames[:-1, None] + _mv(R_frames[:-1, None], ops.p[:, :-1])
        gravity = -rod.density * rod.area * jnp.sum(wq * (p @ (self.load_factor * self.gravity)))
        if self.tip_body is not None:
            eta_tip = eta[-1]
            kinetic = kinetic + 0.5 * eta_tip @ (self.tip_body.screw_inertia @ eta_tip)
            R_tip, p_tip = R_frames, p_frames
            com = p_tip[-1] + R_tip[-1] @ self.tip_body.com
            gravity = gravity - self.tip_body.mass * com @ (self.load_factor * self.gravity)
        return kinetic + elastic + gravity

    # ---- AbstractImplicitModel plumbing ------------------------------------------------------------
    def fixed_mask(self):
        return jnp.zeros(int(self.rod.n_segments) * self.n_modes, bool)

    def prescribed(self, t):
        return jnp.zeros(int(self.rod.n_segments) * self.n_modes)

    def default_linear_solver(self):
        return DenseJacobianSolver()

    @jit_when_eager
    def initial_state(self):
        q0 = jnp.zeros(int(self.rod.n_segments) * self.n_modes)
        return State(q0, jnp.zeros_like(q0), None)

    @jit_when_eager
    def observe(self, q, v, aux):
        """``positions``: ``(n k + 1, 3)`` centreline samples [m] (``k = points_per_segment``),
        then the tip point when ``tip_offset`` is set (``Trajectory.tip``)."""
        poses = forward_kinematics(
            self.strains(q), self.rod.segment_lengths, (self.base_rotation, self.base_position),
            int(self.points_per_segment),
        )
        if self.tip_offset is None:
            return {"positions": poses.p}
        tip = poses.p_frames[-1] + poses.R_frames[-1] @ self.tip_offset
        return {"positions": jnp.concatenate([poses.p, tip[None]], axis=0)}
