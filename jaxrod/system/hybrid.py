"""Rods attached to rigid bodies (and to the world): :class:`HybridSystem`, :class:`RodPin`,
:class:`RodClamp`.

A :class:`HybridSystem` is one implicit model made of rods (:class:`~jaxrod.DERModel`, a
:class:`~jaxrod.models.der.model.DERNetwork` for pins, or a PCS rod
:class:`~jaxrod.models.pcs.PCSModel` attached by a segment end), rigid bodies and joints (the
:class:`~jaxrod.system.MultibodySystem` of those bodies) and *attachments* that tie rod nodes or
edges to a body or to the world. It runs through the unchanged :func:`jaxrod.simulate`, its
implicit schemes and implicit differentiation.

Coordinates. Every element keeps its own coordinates and the attachments are holonomic
constraints with one Lagrange multiplier per row, exactly as the joints of
:class:`~jaxrod.system.MultibodySystem` (same sign, same integrated multipliers ``mu`` whose stage
velocity ``lambda = v_mu`` is the constraint force, same :meth:`end_of_step_residual`). The flat
unknown vector is ``q = [rod_0 q (N_0 x 4, flattened), ..., rod_k q, bodies (6 n_b + joint rows),
mu (attachment rows)]`` and the residual is ``[r_rod + G_rod^T lambda, r_body + G_body^T lambda,
g]``: the rod and body rows are the unchanged residuals of :class:`~jaxrod.DERModel` and
:class:`~jaxrod.system.MultibodySystem` plus the attachment forces, the last rows the attachment
constraints ``g`` (``g(q_{n+1})`` after every step, so attachments hold to the Newton tolerance).
Energy: ``G^T lambda`` is the gradient of ``lambda . g`` with ``lambda`` constant along the step
and ``g = 0`` at both ends, so with :class:`~jaxrod.integrate.schemes.AverageVectorField` the
attachments do no work over a step and the system's energy is conserved as for bodies alone.

Attachments (``g = 0`` in the configuration the system is built in: the body-frame copies below
are taken from the initial rod and body poses):

=================  =====  ==========================================================================
attachment          rows  constraint (``x_b``, ``R`` the body's position and rotation; world:
                          ``x_b = 0``, ``R = I``)
=================  =====  ==========================================================================
:class:`RodPin`        3  ``x_i - (x_b + R r)``: node ``i`` stays at a body point (a ball joint)
:class:`RodClamp`      7  ``x_e - (x_b + R r_0)``, ``x_{e+1} - (x_b + R r_1)``: both nodes of edge
                          ``e`` ride with the body; ``m1_e . (R b_2)``: the edge's material
                          director ``m1`` stays normal to the body-fixed copy ``b_2`` of its
                          initial ``m2`` (the twist follows the body)
PCS :class:`RodPin`    3  ``p_k - (x_b + R r)``: segment end ``k`` (forward kinematics) at a body
                          point
PCS :class:`RodClamp`  6  ``p_k - (x_b + R r)`` and ``vee(skew(E))``, ``E = (R C)^T R_k``: the
                          segment-end frame ``R_k`` follows the body-fixed copy ``C`` of its
                          initial frame (``vee(skew(E))`` is the sine of the rotation error, with
                          derivative ``I`` at ``E = I``, so the rows stay independent)
=================  =====  ==========================================================================

A rod kind enters through what the system asks of it (``_point_pose``: position and frame at an
attachment point, from the rod's own kinematics): DER nodes are rows of ``q``, PCS segment ends
come from :meth:`~jaxrod.models.pcs.PCSModel.segment_end_poses`. The PCS base (segment end 0) is
clamped at the model's base pose and is refused as an attachment point.

Why the welded end is written this way. A DER clamp (``DERModel(clamped_edges=...)``) prescribes
both nodes of the clamped edge and its twist angle: the clamp acts at the edge's midpoint and the
clamped edge is rigid (:meth:`~jaxrod.models.der.DERRod.cantilever` centres it on the clamp
point). :class:`RodClamp` is the same clamp carried by a body: its 6 node rows are linear in the
rod coordinates (``G_rod`` is an identity block), position and tangent of the end follow from them
(no separate, nonlinear tangent rows), and the edge length they fix is the one the DER clamp fixes
too. The twist row uses the rod's own material director, i.e. the same time-parallel-transported
reference frame (carried in ``aux``) as the rod's energy, so it is a smooth function of ``q``
within a step and needs no special reference frame (a :class:`~jaxrod.models.der.ClampMotion`
pins the clamped edge's reference director because its angle is given as data; here the angle is
an unknown). The 7 rows are independent (the twist row's derivative with respect to the edge's
twist angle is ``m2 . R b_2 = 1`` when it holds), so a clamp never makes the Newton matrix
singular; two attachments on the same node would, and are refused.

Multipliers (:meth:`HybridSystem.multipliers`, :meth:`HybridSystem.attachment_rows`): the rows of
an attachment are the force [N] (world frame) that the rod exerts on the body at node ``i`` (pin)
or at nodes ``e``, ``e + 1`` (clamp rows 0-2, 3-5), ``-lambda`` on the rod; the clamp's last row is
a torque-like multiplier [N m] about the edge. A PCS clamp's rows 0-2 are the force [N] (world
frame) the rod exerts on the body at the segment end, rows 3-5 its torque [N m] about that point in
the welded frame (the columns of ``R_k``).

Jacobian structure. ``[[K_rod, 0, G_rod^T], [0, K_body, G_body^T], [G_rod, G_body, 0]]``: each rod
block is banded (half-bandwidth 10), each attachment couples 2 nodes of one rod (8 columns) to one
body (6 columns). :meth:`HybridSystem.default_linear_solver` uses that structure
(:func:`hybrid_layout`): rods cut into chunks of :data:`DER_NODE_REACH` nodes, bodies, joints and
attachment rows ordered by BFS levels of their coupling graph, which makes the Newton matrix block
tridiagonal (``3 m`` JVPs, block LU): ``O(size)`` per Newton iteration for chains of rods and
bodies (a 10-rod, 10-block chain of 600 unknowns: blocks of 15). Small systems (under
:data:`~jaxrod.system.structure.DENSE_BELOW` unknowns), graphs so wide that block LU costs more
than dense LU (many rods on one body) and rods that are not banded (a
:class:`~jaxrod.models.der.model.DERNetwork`, a rod with self-contact) use the dense solver.

Schemes: as :class:`~jaxrod.system.MultibodySystem` (``AverageVectorField`` default,
``ImplicitMidpoint``, ``BackwardEuler``, ``NewmarkBeta(start='rest')``; not schemes that solve for
an initial acceleration, not :func:`~jaxrod.solve_static`). A static equilibrium is the limit of
:class:`~jaxrod.integrate.schemes.BackwardEuler` steps much longer than the slowest period (each step
leaves a fraction ``(omega dt)^-2`` of the distance to it; the tests use 4 steps at
``omega dt ~ 100``).

Measured (``tests/test_system_hybrid.py``; DER rods of 4-5 edges): a steel cantilever carrying a
tip body of 12.7 rod masses oscillates with the spring-mass period ``2 pi sqrt((M + 33/140 m)
L^3 / 3 EI)`` to -0.16 % (after the midpoint rule's ``(omega dt)^2 / 12``), and about the static
deflection of beam theory to -0.58 % (tip load plus self-weight) and -0.16 % (body centre 0.2 L
beyond the tip: load and moment); the welds hold to 1e-16 m. Rod pendulums (pinned to the world;
clamped to a hub on a :class:`~jaxrod.system.Revolute` joint) match the lumped rods' compound
pendulum to 1.4e-4. A three-rod Stewart-Gough plate matches the discrete fixed-guided lateral
stiffness to 5e-4, the axial ``3 EA / (L - dl)`` to 1e-12 and the yaw stiffness (rod torsion
through the twist rows plus bending) to 2e-3; its clamp multipliers balance the load to 1e-6.

Not done: PCS bases on moving bodies (the PCS model clamps its base itself), clamps on
:class:`~jaxrod.models.der.model.DERNetwork` edges (pins on network nodes are implemented but
not yet covered by a test), a structured solver for networks, velocity-level projection of the
initial state.

Initial velocities are not projected: give attached rod nodes the velocity of the body point they
ride on, or the first step jumps to satisfy the constraint at its end.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from ..integrate.base import jit_when_eager
from ..geometry import normalize, parallel_transport
from ..integrate.implicit import AbstractImplicitModel, State
from ..models.der.hessian import elastic_hessians, element_elastic_force, element_slots
from ..models.der.model import DERModel
from ..models.der.model import DERNetwork
from ..models.pcs.model import PCSModel
from ..models.pcs.kinematics import forward_kinematics
from ..solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver
from ..solvers.ordering import level_layout
from ..validation import one_or_many
from .multibody import MultibodySystem
from .structure import DENSE_BELOW, layout_linear_solver, multibody_graph

#: The DER stencil: a node's residual rows depend on the nodes at most 2 away (bending at node
#: ``i`` involves nodes ``i - 1, i, i + 1`` and the twists of edges ``i - 1, i``, stored with nodes
#: ``i - 1, i``); ``DER_BANDWIDTH = 4 * 2 + 2`` follows from it. Chunks of this many nodes then
#: couple only to the chunks beside them.
DER_NODE_REACH = 2


class AbstractRodAttachment(eqx.Module):
    """Ties rod ``rod`` (an index into :attr:`HybridSystem.rods`) to ``body`` (a body name, or
    ``None`` / ``'world'`` for the fixed world frame). All fields are static."""

    rod: int = eqx.field(static=True)
    body: str | None = eqx.field(static=True)

    n_constraints: ClassVar[int]

    def __check_init__(self):
        owner = type(self).__name__
        if isinstance(self.rod, bool) or not isinstance(self.rod, (int, np.integer)) or self.rod < 0:
            raise ValueError(f"{owner}.rod must be an index >= 0 into HybridSystem.rods, got {self.rod!r}")
        if self.body is not None and (not isinstance(self.body, str) or not self.body):
            raise ValueError(f"{owner}.body must be a body name, or None / 'world', got {self.body!r}")


class RodPin(AbstractRodAttachment):
    """Node ``node`` of rod ``rod`` shares a point with ``body`` (or the world): position only, a
    ball joint (3 rows). ``node`` may be negative (from the end); on a
    :class:`~jaxrod.models.der.model.DERNetwork` it is a global node id; on a
    :class:`~jaxrod.models.pcs.PCSModel` it is a segment end ``1..n`` (``-1``: the tip; ``0``, the
    base, is clamped by the model itself)."""

    node: int = eqx.field(static=True)
    n_constraints: ClassVar[int] = 3

    def __init__(self, rod, node, body=None):
        self.rod, self.node, self.body = rod, node, body


class RodClamp(AbstractRodAttachment):
    """Edge ``edge`` of DER rod ``rod`` welded to ``body`` (or the world): both of its nodes and
    its material frame follow the body (7 rows). As with ``DERModel(clamped_edges=...)`` the
    clamp point is the edge's midpoint; ``edge=0`` is the start of the rod, ``edge=-1`` its end.

    On a :class:`~jaxrod.models.pcs.PCSModel` ``edge`` names a segment end ``1..n`` (``-1``: the
    tip) whose frame is welded to the body: position and rotation (6 rows). The PCS base (``0``)
    is clamped at the model's base pose and cannot be attached."""

    edge: int = eqx.field(static=True)
    n_constraints: ClassVar[int] = 7

    def __init__(self, rod, edge, body=None):
        self.rod, self.edge, self.body = rod, edge, body


def _frames(aux):
    # a DERModel with self-contact carries its frames inside a ContactAux
    return getattr(aux, "frames", aux)


def _rod_nodes(model):
    return model.n_nodes if isinstance(model, DERNetwork) else model.rod.n_nodes


# ---- what HybridSystem asks of a rod model: its coordinates' shape, its attachment points and what
# it saves. DER rods attach at nodes (q rows); PCS rods at the segment ends of their forward
# kinematics (point 0 is the base the PCS model clamps itself).
def _q_shape(model):
    if isinstance(model, PCSModel):
        return (int(model.rod.n_segments) * model.n_modes,)
    return model.q0.shape


def _n_points(model):
    """Number of attachment points: DER nodes, or PCS segment ends ``0..n``."""
    return int(model.rod.n_segments) + 1 if isinstance(model, PCSModel) else _rod_nodes(model)


def _point_pose(model, q, k):
    """Attachment point ``k`` from the rod's own kinematics: position ``(3,)`` [m] and rotation
    ``(3, 3)`` (columns: cross-section axes, rod axis first), or ``None`` for a DER node (no frame)."""
    if isinstance(model, PCSModel):
        R, p = model.segment_end_poses(q)
        return p[k], R[k]
    return q[k, :3], None


def _n_observed(model):
    if isinstance(model, PCSModel):
        return int(model.rod.n_segments) * int(model.points_per_segment) + 1
    return _rod_nodes(model)


def _observe_rod(model, q, v, aux):
    """``positions (N, 3)`` and ``frames (N - 1, 3, 3)`` (rows ``m1, m2, tangent``) of one rod. A PCS
    model saves no frames of its own: its cross-section axes ``(y, z, x)`` at the first ``N - 1``
    sample points play the DER edge frames' part."""
    obs = model.observe(q, v, aux)
    if not isinstance(model, PCSModel):
        return obs["positions"], obs["frames"]
    poses = forward_kinematics(model.strains(q), model.rod.segment_lengths,
                               (model.base_rotation, model.base_position), int(model.points_per_segment))
    R = poses.R[:-1]
    return obs["positions"], jnp.stack([R[..., 1], R[..., 2], R[..., 0]], axis=-2)


# ---- the DER rods' elastic forces, differentiated through their element-local Hessians
def _local_hessian_rod(model):
    """Whether :func:`_rod_residual` takes ``model``'s elastic forces from :func:`_elastic_force`:
    a one-limb DER chain without contact (with contact its residual differentiates the elastic
    plus the contact energy in one gradient)."""
    return isinstance(model, DERNetwork) and model.topology.chain and not model.contacts


def _is_zero(tangents):
    leaves = jax.tree_util.tree_leaves(tangents, is_leaf=lambda d: isinstance(d, SymbolicZero))
    return all(isinstance(d, SymbolicZero) for d in leaves)


def _local_jvp(fn, primals, tangents):
    """``jax.jvp(fn, primals, tangents)[1]`` seeding only the leaves whose tangent is not a
    symbolic zero (the others are closed over, so no zero tangents are traced)."""
    leaves, tree = jax.tree_util.tree_flatten(primals)
    dleaves = jax.tree_util.tree_structure(primals).flatten_up_to(tangents)
    live = [i for i, d in enumerate(dleaves) if not isinstance(d, SymbolicZero)]

    def of_live(*xs):
        full = list(leaves)
        for i, x in zip(live, xs):
            full[i] = x
        return fn(*jax.tree_util.tree_unflatten(tree, full))

    return jax.jvp(of_live, tuple(leaves[i] for i in live), tuple(dleaves[i] for i in live))[1]


def _elastic_force(model, q, frames, t):
    """``grad E(q)`` ``(N, 4)`` of a :func:`_local_hessian_rod` rod, the value its own residual
    takes, whose derivative is taken element by element.

    In ``q`` alone (the Newton Jacobian of a hybrid step differentiates only ``q``) it is the
    product with the rod's element-local Hessians
    (:func:`~jaxrod.models.der.hessian.elastic_hessians`, evaluated once per Newton Jacobian and
    applied to every coloured JVP's tangent) instead of forward mode through the gradient's
    reverse pass. Measured (2026-11-28, process CPU, two 4-edge rods, two bodies, a joint): 200
    steps run in 176-219 instead of 264-272 ms; the time-loop program's XLA compile 13.0-13.5
    instead of 14.2-15.6 s, its tracing and lowering 1.6 s longer (the Hessians' traced passes),
    and with the DER helper's leaner stencil Hessians (in progress) XLA 7.8 instead of 9.3-9.8 s,
    tracing 0.45 s longer.

    A tangent in the model's parameters, the reference frames or ``t`` as well (implicit
    differentiation of a step, e.g. forward mode through a simulation) is the JVP of
    :func:`~jaxrod.models.der.hessian.element_elastic_force`: every stencil's and edge's own
    gradient differentiated locally and scatter-added, instead of the JVP of the assembled
    ``grad E`` (forward over the reverse pass of the whole rod's kinematics, with its gathers and
    pads). The value stays ``grad E`` (bitwise); the derivative agrees to round-off."""
    dyn, static = eqx.partition(model, eqx.is_inexact_array)

    def plain(dyn, q, frames, t):
        return jax.grad(eqx.combine(dyn, static).elastic_energy)(q, frames, t)

    def local(dyn, q, frames, t):
        return element_elastic_force(eqx.combine(dyn, static), q, frames, t)

    force = jax.custom_jvp(plain)

    def force_jvp(primals, tangents):
        dyn, q, frames, t = primals
        out = plain(dyn, q, frames, t)
        if _is_zero(tangents):
            return out, jnp.zeros_like(out)
        if not _is_zero((tangents[0], tangents[2], tangents[3])):
            return out, _local_jvp(local, primals, tangents)
        Hs, He = elastic_hessians(eqx.combine(dyn, static), q, frames, t)
        s_idx, e_idx = element_slots(q.shape[0])
        dq = tangents[1].reshape(-1)
        flat = jnp.zeros(dq.shape, out.dtype).at[s_idx].add(jnp.einsum("sij,sj->si", Hs, dq[s_idx]))
        flat = flat.at[e_idx].add(jnp.einsum("sij,sj->si", He, dq[e_idx]))
        return out, flat.reshape(out.shape)

    force.defjvp(force_jvp, symbolic_zeros=True)
    return force(dyn, q, frames, jnp.asarray(t, q.dtype))


def _rod_residual(model, q, v, a, t, aux):
    """``model.residual(q, v, a, t, aux)``; for a :func:`_local_hessian_rod` the DER residual with
    the elastic forces of :func:`_elastic_force` (the same value, bitwise)."""
    if not _local_hessian_rod(model):
        return model.residual(q, v, a, t, aux)
    return model.contact_free_residual(q, v, a, t, aux, _elastic_force(model, q, aux, t))


def _structure_groups(models, per_model=()):
    """Indices of ``models`` grouped by identical structure: same type, pytree structure, static
    (non-array) leaves, array shapes and dtypes, and the same for their per-model arguments
    (decided at trace time, so a model edited with ``eqx.tree_at`` is grouped as it now is)."""
    def key(i):
        dyn, static = eqx.partition(models[i], eqx.is_array)
        args = tuple(a[i] for a in per_model)
        shapes = tuple((tuple(jnp.shape(x)), jnp.result_type(x)) for x in jax.tree_util.tree_leaves((dyn, args)))
        return (type(models[i]), jax.tree_util.tree_structure((dyn, static, args)), shapes), static

    groups = []  # [(key, static, [indices])]
    for i in range(len(models)):
        k, static = key(i)
        for gk, gs, idx in groups:
            if gk == k and eqx.tree_equal(gs, static) is True:
                idx.append(i)
                break
        else:
            groups.append((k, static, [i]))
    return [idx for _, _, idx in groups]


@eqx.filter_jit
def _anchors(rods, bodies, pins, clamps, welds):
    """Body-frame copies of the attached points ``(P, 3)``, of the clamped edges' node pairs
    ``(C, 2, 3)`` and their m2 ``(C, 3)``, of the welded points ``(W, 3)`` and frames ``(W, 3, 3)``,
    at assembly; one compiled program rather than dozens of op-by-op dispatches (a system is often
    built several times in one session)."""
    x0 = [b.position for b in bodies] + [jnp.zeros(3)]
    R0 = [b.rotation() for b in bodies] + [jnp.eye(3)]
    q0 = [m.initial_state().q for m in rods]
    pa = [R0[b].T @ (_point_pose(rods[r], q0[r], i)[0] - x0[b]) for r, i, b in pins]
    ca, cn = [], []
    for r, e, b in clamps:
        m = rods[r]
        m2 = m.observe(m.q0, m.v0, m.init_aux(m.q0))["frames"][e, 1]
        ca.append(jnp.stack([R0[b].T @ (m.q0[e + j, :3] - x0[b]) for j in (0, 1)]))
        cn.append(R0[b].T @ m2)
    wa, wr = [], []
    for r, i, b in welds:
        p, R = _point_pose(rods[r], q0[r], i)
        wa.append(R0[b].T @ (p - x0[b]))
        wr.append(R0[b].T @ R)
    return (jnp.stack(pa) if pa else jnp.zeros((0, 3)), jnp.stack(ca) if ca else jnp.zeros((0, 2, 3)),
            jnp.stack(cn) if cn else jnp.zeros((0, 3)), jnp.stack(wa) if wa else jnp.zeros((0, 3)),
            jnp.stack(wr) if wr else jnp.zeros((0, 3, 3)))


class HybridSystem(AbstractImplicitModel):
    """DER rods, rigid bodies and joints coupled by attachments (see the module docstring).

    Arguments:
        rods: sequence of :class:`~jaxrod.DERModel` (pins and clamps),
            :class:`~jaxrod.models.der.model.DERNetwork` (pins) or
            :class:`~jaxrod.models.pcs.PCSModel` (pins and clamps at segment ends ``1..n``) with
            their own material, loads, damping and boundary conditions (their fixed nodes, and
            the PCS base, stay prescribed; an attachment may not use them).
        bodies: sequence of :class:`~jaxrod.system.RigidBody` (may be empty).
        joints: joints between the bodies (:mod:`jaxrod.system.joints`).
        attachments: sequence of :class:`RodPin` / :class:`RodClamp`.
        gravity: ``(3,)`` gravitational acceleration [m/s^2] for bodies and rods. A rod built with
            zero gravity gets this one; a rod with another non-zero gravity is refused.
        loads: body loads, as in :class:`~jaxrod.system.MultibodySystem`.

    Raises:
        ValueError: naming the argument, its value and what is allowed, for an unknown body, a rod
            or node/edge index out of range, a clamp on a network, an attachment on a node the
            rod itself fixes (or on a PCS base), a node attached twice, or inconsistent gravity.

    Observed (:meth:`observe`; split a :class:`~jaxrod.integrate.Trajectory` with
    :meth:`rod_positions`, :meth:`body_positions`, :meth:`body_frames`): ``positions`` are all rod
    nodes (rod by rod) followed by the body centres of mass ``(sum N_i + n_bodies, 3)`` [m];
    ``frames`` the rods' edge material frames then the body frames (rows: the body axes).
    """

    rods: tuple
    multibody: MultibodySystem | None
    attachments: tuple = eqx.field(static=True)
    pin_anchors: jax.Array
    clamp_anchors: jax.Array
    clamp_normals: jax.Array
    weld_anchors: jax.Array
    weld_rotations: jax.Array
    pin_index: tuple = eqx.field(static=True)
    clamp_index: tuple = eqx.field(static=True)
    weld_index: tuple = eqx.field(static=True)

    def __init__(self, rods, bodies=(), joints=(), attachments=(), gravity=(0.0, 0.0, 0.0), loads=None):
        rods, bodies, attachments = one_or_many(rods), one_or_many(bodies), one_or_many(attachments)
        joints = one_or_many(joints)
        g = np.asarray(gravity, float) if not isinstance(gravity, jax.core.Tracer) else None
        if g is not None and (g.shape != (3,) or not np.all(np.isfinite(g))):
            raise ValueError(f"HybridSystem.gravity must be 3 finite numbers [m/s^2], got {np.asarray(gravity).tolist()!r}")
        if not rods:
            raise ValueError("HybridSystem.rods must contain at least one rod model, got none (use MultibodySystem)")
        out = []
        for k, m in enumerate(rods):
            if not isinstance(m, (DERModel, DERNetwork, PCSModel)):
                raise ValueError(
                    f"HybridSystem.rods[{k}] must be a jaxrod.DERModel, DERNetwork or PCSModel, got {type(m).__name__}"
                )
            mg = np.asarray(m.gravity) if not isinstance(m.gravity, jax.core.Tracer) else None
            if g is not None and mg is not None and np.any(mg != 0) and not np.allclose(mg, g):
                raise ValueError(
                    f"HybridSystem.rods[{k}].gravity = {mg.tolist()} differs from HybridSystem.gravity = {g.tolist()}; "
                    "build the rod with zero gravity (the system's applies to it) or with the same gravity"
                )
            out.append(eqx.tree_at(lambda mm: mm.gravity, m, jnp.asarray(gravity, dtype=jnp.float64)))
        self.rods = tuple(out)
        self.multibody = MultibodySystem(bodies, joints, gravity=gravity, loads=loads) if bodies else None
        if joints and not bodies:
            raise ValueError("HybridSystem.joints given without bodies: joints connect RigidBody instances")
        names = [b.name for b in bodies]
        body_id = {n: i for i, n in enumerate(names)}
        pins, clamps, welds, used = [], [], [], {}
        if not attachments:
            # as the model-file loader: uncoupled rods and bodies are not a hybrid system
            raise ValueError(
                "HybridSystem.attachments is empty: the rods must be coupled to the bodies or the world by "
                "RodClamp / RodPin attachments; none given (a rod alone: simulate its DERModel/PCSModel; "
                "bodies alone: MultibodySystem)"
            )
        for k, a in enumerate(attachments):
            owner = f"HybridSystem.attachments[{k}] ({type(a).__name__})"
            if not isinstance(a, AbstractRodAttachment):
                raise ValueError(f"HybridSystem.attachments[{k}] must be a RodPin or RodClamp, got {type(a).__name__}")
            if a.rod >= len(rods):
                raise ValueError(f"{owner}.rod = {a.rod} is out of range: there are {len(rods)} rods (0..{len(rods) - 1})")
            if a.body in (None, "world"):
                b = -1
            elif a.body in body_id:
                b = body_id[a.body]
            else:
                raise ValueError(f"{owner}.body = {a.body!r} names no body; bodies are {names} (or None / 'world')")
            model = self.rods[a.rod]
            n = _n_points(model)
            if isinstance(model, PCSModel):
                name, value = ("node", a.node) if isinstance(a, RodPin) else ("edge", a.edge)
                i = _index(owner, name, value, n, f"rods[{a.rod}] is a PCSModel of {n - 1} segments, ends 0..{n - 1}")
                if i == 0:
                    raise ValueError(
                        f"{owner}.{name} = {value} is the base (segment end 0) of rods[{a.rod}], a PCSModel: its base "
                        f"is clamped at base_position / base_rotation by the model and cannot ride on a body; attach a "
                        f"segment end 1..{n - 1} (-1: the tip), or build the rod from its other end"
                    )
                nodes = (i,)
                (pins if isinstance(a, RodPin) else welds).append((a.rod, i, b))
            elif isinstance(a, RodPin):
                nodes = (_index(owner, "node", a.node, n, f"rods[{a.rod}] has {n} nodes"),)
                pins.append((a.rod, nodes[0], b))
            else:
                if not model.topology.chain:  # a DERModel is the one-limb (chain) network
                    raise ValueError(
                        f"{owner}: rods[{a.rod}] is a DERNetwork; clamps need a single DERModel rod (pin a network node "
                        "with RodPin)"
                    )
                e = _index(owner, "edge", a.edge, n - 1, f"rods[{a.rod}] has {n - 1} edges")
                if e in model.fixed_edges:
                    raise ValueError(f"{owner}: the twist of edge {e} of rods[{a.rod}] is already fixed by the rod's "
                                     "own boundary conditions (fixed_edges / clamped_edges); attach a free edge")
                nodes = (e, e + 1)
                clamps.append((a.rod, e, b))
            for i in nodes:
                if i in getattr(model, "fixed_nodes", ()):
                    raise ValueError(
                        f"{owner}: node {i} of rods[{a.rod}] is already fixed by the rod's own boundary conditions "
                        f"(fixed_nodes / clamped_edges = {model.fixed_nodes}); attach a free node or drop the rod's clamp"
                    )
                if (a.rod, i) in used:
                    raise ValueError(
                        f"{owner}: node {i} of rods[{a.rod}] is already attached by attachments[{used[a.rod, i]}]; "
                        "a node may carry one attachment (two would be redundant constraints)"
                    )
                used[a.rod, i] = k
        self.attachments, self.pin_index, self.clamp_index = attachments, tuple(pins), tuple(clamps)
        self.weld_index = tuple(welds)
        (self.pin_anchors, self.clamp_anchors, self.clamp_normals, self.weld_anchors,
         self.weld_rotations) = _anchors(list(self.rods), list(bodies), tuple(pins), tuple(clamps), tuple(welds))

    # ---- sizes and packing ------------------------------------------------------------------------
    @property
    def rod_sizes(self) -> tuple:
        """Length of each rod's flattened ``q``."""
        return tuple(int(np.prod(_q_shape(m))) for m in self.rods)

    @property
    def n_bodies(self) -> int:
        return 0 if self.multibody is None else self.multibody.n_bodies

    @property
    def n_attachment_rows(self) -> int:
        return 3 * len(self.pin_index) + 7 * len(self.clamp_index) + 6 * len(self.weld_index)

    @property
    def n_coordinates(self) -> int:
        """Length of ``q``: rods, then bodies with their joint multipliers, then attachment multipliers."""
        mb = 0 if self.multibody is None else self.multibody.n_coordinates
        return sum(self.rod_sizes) + mb + self.n_attachment_rows

    def split(self, q):
        """Flat ``q`` -> ``(rod qs (tuple, each shaped like that rod's q), body block (flat),
        attachment multipliers (n_attachment_rows,))``."""
        parts, start = [], 0
        for m, s in zip(self.rods, self.rod_sizes):
            parts.append(q[start : start + s].reshape(_q_shape(m)))
            start += s
        n_att = self.n_attachment_rows
        return tuple(parts), q[start : q.shape[0] - n_att], q[q.shape[0] - n_att :]

    def join(self, rod_qs, body, mu):
        return jnp.concatenate([jnp.ravel(x) for x in rod_qs] + [jnp.ravel(body), jnp.ravel(mu)])

    def attachment_rows(self) -> tuple:
        """Per attachment (in the order given), the ``slice`` of its rows in the multiplier block
        (pins first, then DER clamps, then PCS clamps, each in the order given)."""
        rows, p, c = [], 0, 3 * len(self.pin_index)
        w = c + 7 * len(self.clamp_index)
        for a in self.attachments:
            if isinstance(a, RodPin):
                rows.append(slice(p, p + 3))
                p += 3
            elif isinstance(self.rods[a.rod], PCSModel):
                rows.append(slice(w, w + 6))
                w += 6
            else:
                rows.append(slice(c, c + 7))
                c += 7
        return tuple(rows)

    # ---- attachments ------------------------------------------------------------------------------
    def _body_poses(self, body, aux_mb):
        """``(x (n_b + 1, 3), R (n_b + 1, 3, 3))`` with the world appended (index -1)."""
        if self.multibody is None:
            return jnp.zeros((1, 3)), jnp.eye(3)[None]
        x, psi, _ = self.multibody.unpack(body)
        R = self.multibody.rotations(psi, aux_mb)
        return jnp.concatenate([x, jnp.zeros((1, 3), x.dtype)]), jnp.concatenate([R, jnp.eye(3, dtype=R.dtype)[None]])

    def attachment_constraints(self, rod_qs, body, aux):
        """``(n_attachment_rows,)`` all attachment constraint values (zero when they hold)."""
        x, R = self._body_poses(body, aux[-1])
        rows = []
        if self.pin_index:
            r, i, b = (np.asarray(v) for v in zip(*self.pin_index))
            P = jnp.stack([_point_pose(self.rods[rr], rod_qs[rr], ii)[0] for rr, ii in zip(r, i)])
            rows.append(jnp.ravel(P - x[b] - jnp.einsum("nij,nj->ni", R[b], self.pin_anchors)))
        if self.clamp_index:
            r, e, b = (np.asarray(v) for v in zip(*self.clamp_index))
            Q0 = jnp.stack([rod_qs[rr][ee] for rr, ee in zip(r, e)])
            X1 = jnp.stack([rod_qs[rr][ee + 1, :3] for rr, ee in zip(r, e)])
            d_old = jnp.stack([_frames(aux[rr]).d1[ee] for rr, ee in zip(r, e)])
            t_old = jnp.stack([_frames(aux[rr]).tangent[ee] for rr, ee in zip(r, e)])
            X0, theta = Q0[:, :3], Q0[:, 3]
            B = x[b][:, None] + jnp.einsum("nij,nkj->nki", R[b], self.clamp_anchors)
            t = normalize(X1 - X0)
            # the rod's own material director of the edge (same transport as its energy)
            d1 = parallel_transport(d_old, t_old, t)
            m1 = jnp.cos(theta)[:, None] * d1 + jnp.sin(theta)[:, None] * jnp.cross(t, d1)
            tw = jnp.sum(m1 * jnp.einsum("nij,nj->ni", R[b], self.clamp_normals), axis=-1)
            rows.append(jnp.concatenate([(X0 - B[:, 0]), (X1 - B[:, 1]), tw[:, None]], axis=1).ravel())
        if self.weld_index:
            r, i, b = (np.asarray(v) for v in zip(*self.weld_index))
            P, Rt = (jnp.stack(v) for v in zip(*(_point_pose(self.rods[rr], rod_qs[rr], ii) for rr, ii in zip(r, i))))
            # E = (R_b C)^T R_tip is I when the weld holds; the skew part of E is its rotation
            # error, smooth through zero with derivative I there
            E = jnp.einsum("njk,nij,nil->nkl", self.weld_rotations, R[b], Rt)
            err = 0.5 * jnp.stack([E[:, 2, 1] - E[:, 1, 2], E[:, 0, 2] - E[:, 2, 0], E[:, 1, 0] - E[:, 0, 1]], axis=1)
            gap = P - x[b] - jnp.einsum("nij,nj->ni", R[b], self.weld_anchors)
            rows.append(jnp.concatenate([gap, err], axis=1).ravel())
        return jnp.concatenate(rows) if rows else jnp.zeros((0,))

    # ---- residual -----------------------------------------------------------------------------------
    def _map_rods(self, fn, *per_rod):
        """``[fn(rods[i], *(a[i] for a in per_rod))]``, with rods of identical structure (model
        type, static configuration, array shapes: e.g. the legs of a platform) evaluated by one
        ``jax.vmap`` over their stacked arrays, so the program holds one traced copy of the rod
        per group instead of one per rod (compile time no longer grows with their number)."""
        out = [None] * len(self.rods)
        for group in _structure_groups(self.rods, per_rod):
            if len(group) == 1:
                i = group[0]
                out[i] = fn(self.rods[i], *(a[i] for a in per_rod))
                continue
            parts = [eqx.partition(self.rods[i], eqx.is_array) for i in group]
            static = parts[0][1]
            stack = lambda *xs: jnp.stack(xs)  # noqa: E731
            dyn = jax.tree_util.tree_map(stack, *[d for d, _ in parts])
            args = [jax.tree_util.tree_map(stack, *[a[i] for i in group]) for a in per_rod]
            res = jax.vmap(lambda d, *aa: fn(eqx.combine(d, static), *aa))(dyn, *args)
            for k, i in enumerate(group):
                out[i] = jax.tree_util.tree_map(lambda x, k=k: x[k], res)
        return out

    def residual(self, q, v, a, t, aux):
        rq, bq, _ = self.split(q)
        rv, bv, lam = self.split(v)
        ra, ba, _ = self.split(a)
        r = self._map_rods(lambda m, qi, vi, ai, ax: _rod_residual(m, qi, vi, ai, t, ax), rq, rv, ra, aux[:-1])
        rb = bq[:0] if self.multibody is None else self.multibody.residual(bq, bv, ba, t, aux[-1])
        return self._coupled(q, r, rb, lam, None, aux)

    def _coupled(self, q, r_rods, r_body, lam, g, aux):
        """``[r_rod + G_rod^T lam, r_body + G_body^T lam, g]`` (the attachment forces added);
        ``g=None``: the attachment constraints at ``q``, taken from the VJP's primal output (one
        traced evaluation of the constraints instead of two: every Newton program holds the
        residual several times, so this is compile time saved in each)."""
        rq, bq, _ = self.split(q)
        g_q, pull = jax.vjp(lambda rr, bb: self.attachment_constraints(rr, bb, aux), rq, bq)
        gr, gb = pull(lam)
        return self.join([x + y for x, y in zip(r_rods, gr)], r_body + gb, g_q if g is None else g)

    def static_residual(self, q, t, aux):
        """Static equilibrium (:func:`jaxrod.solve_static`): the attachment multipliers of ``q``
        (and the joints' in the body block) ARE the constraint forces, as in
        :meth:`jaxrod.system.MultibodySystem.static_residual`."""
        rq, bq, mu = self.split(q)
        # a DER rod's static residual is its residual at rest (the default static_residual)
        r = self._map_rods(lambda m, qi, ax: _rod_residual(m, qi, jnp.zeros_like(qi), jnp.zeros_like(qi), t, ax)
                           if _local_hessian_rod(m) else m.static_residual(qi, t, ax), rq, aux[:-1])
        rb = bq[:0] if self.multibody is None else self.multibody.static_residual(bq, t, aux[-1])
        return self._coupled(q, r, rb, mu, None, aux)

    def acceleration_residual(self, q, v, a, t, aux):
        """Consistent initial acceleration (schemes with ``needs_acceleration``): the attachment
        block of ``a`` is the attachment forces and its rows require the attachments' second time
        derivative along ``q + s v + s^2 a / 2`` to vanish (as the joints do)."""
        rq, bq, _ = self.split(q)
        rv, bv, _ = self.split(v)
        ra, ba, lam = self.split(a)
        r = self._map_rods(lambda m, qi, vi, ai, ax: m.acceleration_residual(qi, vi, ai, t, ax), rq, rv, ra, aux[:-1])
        rb = bq[:0] if self.multibody is None else self.multibody.acceleration_residual(bq, bv, ba, t, aux[-1])

        def g_along(s):
            qq = q + s * v + 0.5 * s * s * a
            rr, bb, _ = self.split(qq)
            return self.attachment_constraints(rr, bb, aux)

        g2 = jax.jacfwd(jax.jacfwd(g_along))(jnp.zeros((), q.dtype))
        return self._coupled(q, r, rb, lam, g2, aux)

    def multiplier_mask(self):
        """True on the joints' and the attachments' multipliers (see
        :meth:`~jaxrod.integrate.AbstractImplicitModel.multiplier_mask`)."""
        rods = [np.zeros(s, bool) for s in self.rod_sizes]
        body = np.zeros(0, bool) if self.multibody is None else np.asarray(self.multibody.multiplier_mask())
        return np.concatenate(rods + [body, np.ones(self.n_attachment_rows, bool)])

    def end_of_step_residual(self, q_next, r, t, aux):
        rq, bq, _ = self.split(q_next)
        rr, rb, _ = self.split(r)
        rr = [m.end_of_step_residual(qi, ri, t, ax) for m, qi, ri, ax in zip(self.rods, rq, rr, aux[:-1])]
        if self.multibody is not None:
            rb = self.multibody.end_of_step_residual(bq, rb, t, aux[-1])
        return self.join(rr, rb, self.attachment_constraints(rq, bq, aux))

    # ---- AbstractImplicitModel plumbing --------------------------------------------------------------
    def _body_part(self, fn, default):
        return default if self.multibody is None else fn(self.multibody)

    def fixed_mask(self):
        return self.join([m.fixed_mask() for m in self.rods],
                         self._body_part(lambda mb: mb.fixed_mask(), jnp.zeros(0, bool)),
                         jnp.zeros(self.n_attachment_rows, bool))

    def prescribed(self, t):
        return self.join([m.prescribed(t) for m in self.rods],
                         self._body_part(lambda mb: mb.prescribed(t), jnp.zeros(0)),
                         jnp.zeros(self.n_attachment_rows))

    def init_aux(self, q):
        rq, bq, _ = self.split(q)
        return tuple(self._map_rods(lambda m, qi: m.init_aux(qi), rq)) + (
            self._body_part(lambda mb: mb.init_aux(bq), None),)

    def update_aux(self, q, aux):
        rq, bq, _ = self.split(q)
        return tuple(self._map_rods(lambda m, qi, ax: m.update_aux(qi, ax), rq, aux[:-1])) + (
            self._body_part(lambda mb: mb.update_aux(bq, aux[-1]), None),)

    def default_linear_solver(self):
        """Block-tridiagonal in the :func:`hybrid_layout` order; dense for small or wide systems
        and for rods that are not banded (see :func:`hybrid_linear_solver`)."""
        return hybrid_linear_solver(self)

    @jit_when_eager
    def initial_state(self):
        b0 = self._body_part(lambda mb: mb.initial_state(), None)
        zb = jnp.zeros(0)
        s0 = [m.initial_state() for m in self.rods]
        q0 = self.join([s.q for s in s0], zb if b0 is None else b0.q, jnp.zeros(self.n_attachment_rows))
        v0 = self.join([s.v for s in s0], zb if b0 is None else b0.v, jnp.zeros(self.n_attachment_rows))
        return State(q0, v0, self.init_aux(q0))

    @jit_when_eager
    def observe(self, q, v, aux):
        rq, bq, _ = self.split(q)
        rv, bv, _ = self.split(v)
        obs = self._map_rods(_observe_rod, rq, rv, aux[:-1])
        pos = [o[0] for o in obs]
        frames = [o[1] for o in obs]
        if self.multibody is not None:
            ob = self.multibody.observe(bq, bv, aux[-1])
            pos.append(ob["positions"])
            frames.append(ob["frames"])
        return {"positions": jnp.concatenate(pos), "frames": jnp.concatenate(frames)}

    # ---- reading results ------------------------------------------------------------------------------
    def _offsets(self):
        return np.concatenate([[0], np.cumsum([_n_observed(m) for m in self.rods])])

    def rod_positions(self, positions, i):
        """Node positions [m] ``(..., N_i, 3)`` of rod ``i`` from observed ``positions``
        (``Trajectory.positions``, ``(..., sum N + n_bodies, 3)``)."""
        off = self._offsets()
        return positions[..., off[i] : off[i + 1], :]

    def body_positions(self, positions):
        """Body centres of mass [m] ``(..., n_bodies, 3)`` from observed ``positions``."""
        return positions[..., self._offsets()[-1] :, :]

    def body_frames(self, frames):
        """Body frames ``(..., n_bodies, 3, 3)`` (rows: body axes in the world frame) from observed
        ``frames`` (``Trajectory.frames``)."""
        return frames[..., frames.shape[-3] - self.n_bodies :, :, :]

    def multipliers(self, q, dt):
        """Mean attachment forces over each step ``(T - 1, n_attachment_rows)`` [N; N m for a
        clamp's last row] from ``q`` ``(T, n_coordinates)`` saved at every step of size ``dt``
        [s]: ``(mu_{n+1} - mu_n) / dt``; the force the rod exerts on the body (module docstring).
        Select an attachment's rows with :meth:`attachment_rows`."""
        mu = jnp.asarray(q)[..., self.n_coordinates - self.n_attachment_rows :]
        return jnp.diff(mu, axis=-2) / dt


def _index(owner, name, value, n, what):
    """``value`` (an int, negative from the end) as an index in ``0..n-1``, or a clear error."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{owner}.{name} must be an integer, got {value!r}")
    if not -n <= value < n:
        raise ValueError(f"{owner}.{name} = {value} is out of range: {what} (allowed 0..{n - 1}, or -{n}..-1 from the end)")
    return int(value) % n


def hybrid_layout(system: HybridSystem):
    """:class:`~jaxrod.solvers.ordering.Layout` of a :class:`HybridSystem`'s unknowns, or ``None``
    where a rod's Jacobian is not banded (a :class:`~jaxrod.models.der.model.DERNetwork`, whose
    junctions join arbitrary nodes, or a :class:`~jaxrod.DERModel` with self-contact).

    Coupling graph (:func:`~jaxrod.solvers.ordering.level_layout`): each rod cut into chunks of
    :data:`DER_NODE_REACH` consecutive nodes (4 unknowns each), an edge between neighbouring
    chunks; the bodies and joints of :func:`~jaxrod.system.structure.multibody_graph`; each
    attachment's multiplier rows attached to the chunk(s) of its node(s) and to its body (none for
    the world). Levels start from the nodes tied to the world (a world attachment or joint), where
    there are any, else from an end of the graph's pseudo-diameter. A chain of rods and bodies
    then has one chunk or body per BFS level.
    """
    nodes, edges, attached, first_chunk, start = [], [], [], [], 0
    for m, size in zip(system.rods, system.rod_sizes):
        # PCS rods (dense strain blocks) and networks: dense
        if not isinstance(m, DERModel) or not isinstance(m.default_linear_solver(), BandedJacobianSolver):
            return None
        n, c = m.rod.n_nodes, DER_NODE_REACH
        first_chunk.append(len(nodes))
        nodes += [np.arange(start + 4 * a, start + 4 * min(a + c, n)) for a in range(0, n, c)]
        edges += [(i, i + 1) for i in range(first_chunk[-1], len(nodes) - 1)]
        start += size
    first_body = len(nodes)
    if system.multibody is not None:
        bn, be, ba = multibody_graph(system.multibody, offset=start, first_node=first_body)
        nodes, edges, attached = nodes + bn, edges + be, attached + ba
    row, grounded = system.n_coordinates - system.n_attachment_rows, []
    for (r, i, b), k in [(p, 3) for p in system.pin_index] + [((r, e, b), 7) for r, e, b in system.clamp_index]:
        tied = sorted({first_chunk[r] + j // DER_NODE_REACH for j in ((i,) if k == 3 else (i, i + 1))})
        attached.append((np.arange(row, row + k), tied + ([first_body + b] if b >= 0 else [])))
        grounded += tied if b < 0 else []
        row += k
    if system.multibody is not None:
        grounded += [first_body + max(p) for p in system.multibody.body_index if min(p) < 0]
    # from the grounded nodes: block LU then also factors static Jacobians (no mass blocks)
    return level_layout(system.n_coordinates, nodes, edges, attached, roots=grounded)


def hybrid_linear_solver(system: HybridSystem, dense_below: int = DENSE_BELOW):
    """:func:`~jaxrod.system.structure.layout_linear_solver` in the :func:`hybrid_layout` order
    (block tridiagonal, ``O(size)`` per Newton iteration for chains of rods and bodies), or
    :class:`~jaxrod.solvers.jacobian.DenseJacobianSolver` for fewer than ``dense_below`` unknowns,
    for layouts whose block LU costs more than dense LU, and where :func:`hybrid_layout` is
    ``None``."""
    layout = hybrid_layout(system)
    if layout is None:
        return DenseJacobianSolver()
    return layout_linear_solver(system.n_coordinates, layout, dense_below)
