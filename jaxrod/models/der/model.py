"""The DER model: :class:`DERNetwork` (several rods, "limbs", joined by elastic joints, as one
implicit model), :class:`DERModel` (the one-limb network built from one rod) and
:func:`first_mode_velocity`.

What lives here: :class:`DERNetwork`, an
:class:`~jaxrod.integrate.AbstractImplicitModel` with natural-curvature actuation, clamp motions,
tendons and pressure chambers (DisMech spec sections 1.8, 5.1 and 5.2). It is the one DER model:
:class:`~jaxrod.models.der.DERModel` is the one-limb network built from one rod, and both evaluate
their energies with the one stencil kinematics :func:`~jaxrod.models.der.frames.kinematics`.
:mod:`~jaxrod.models.der.topology` holds :class:`Joint` (which limb ends are merged into which
node) and the host-side topology builder (global node/edge numbering and bending/twisting
*stencils*); :mod:`~jaxrod.models.der.frames` the reference frames over arbitrary stencils.

Layout
------
Global nodes are numbered limb by limb in limb order, skipping limb ends that are merged into a
joint (those take the joint node's number); global edges are numbered limb by limb (edge ``k`` of
limb ``l`` is ``edge_offset[l] + k`` and keeps the limb's direction). The state ``q`` is
``(R, 4)`` with ``R = max(M, E)`` (``M`` nodes, ``E`` edges): row ``i`` columns 0-2 hold the
position of node ``i`` [m] and column 3 the twist angle of edge ``i`` [rad]; rows ``>= M``
(positions) and ``>= E`` (twist) are padding DOFs, always fixed. A single limb therefore has
exactly :class:`~jaxrod.models.der.DERModel`'s layout, and two limbs joined end to end have the
layout of the continuous rod.

Stencils
--------
A stencil is a triplet of nodes ``(a, b, c)`` with edges ``e = (a -> b)`` and ``f = (b -> c)``
*as seen by the stencil*; ``sign_e``/``sign_f`` are -1 where the global edge points the other way.
A flipped edge's oriented frame is ``(d1, -d2, -t)`` with twist angle ``-theta``, i.e. its material
frame is ``(m1, -m2, -t)``: the same physical frame rotated by pi about ``m1``. Time-parallel
transport is invariant under flipping both tangents, so one reference director per global edge
serves every stencil that uses it. Stencils are ordered: first every interior node of every limb
(limb order; the usual DER stencil, signs +1), then the joint stencils (joint order).

The two edges of a joint stencil carry reference frames from different limbs, so their material
frames may be at any angle ``alpha`` about the joint at rest (pi for two limbs meeting head to
head). DER's curvature averages the two edges' material directors, which only makes sense when
they are nearly aligned (at ``alpha = pi`` the bending stiffness would vanish), so each joint
stencil sees edge ``f`` through its material frame rotated back by the constant rest angle
``alpha`` (``NetworkTopology.stencil_twist_offset``). DisMech achieves the same by giving every
joint stencil its own space-parallel pair of reference frames; the two differ by a constant
rotation of the curvature vector, which leaves the isotropic bending energy unchanged. The rest
twist of a joint stencil is therefore 0.

Joint rule (DisMech 5.2) and the choices made here
--------------------------------------------------
At a joint node every unordered pair of incident edges gets a bending/twisting stencil, oriented
with the first edge into the joint and the second out of it, Voronoi length ``(l_e + l_f)/2``,
natural curvature and twist taken from the rest configuration (so the rest shape is stress free).
Differences from the DisMech code, on purpose:

* **No double counting.** DisMech keeps the host limb's own stencil at an interior joint node and
  *also* adds the joint pair (previous, next) of the host: that pair is counted twice. Here every
  unordered pair of edges meeting at a node is counted exactly once (the host pair is the limb's
  stencil, which keeps its actuation), so a joint between two collinear limbs is exactly the
  continuous rod (tested).
* **Stiffness of a pair.** DisMech uses limb 0's EI and GJ for every joint pair. Here a pair of
  edges from the same limb uses that limb's EI/GJ, and a pair from two limbs uses the series
  (length-weighted harmonic) mean ``V / (l_e/(2 EI_e) + l_f/(2 EI_f))``: the Voronoi region is
  half of each edge and the bending moment is continuous across the node, so the two halves act
  as springs in series. Equal limbs give exactly their EI.
* **Masses.** A node's mass is the sum of half the masses of its incident edges (DisMech's joint
  rule, which also gives DERModel's masses on a single limb); the twist inertia of an edge is
  ``rho A l h^2 / 2`` (edge based). Damping and distributed forces use the node Voronoi length,
  the sum of half the incident rest lengths (every node is damped, including limb ends).

Natural curvature (actuation)
-----------------------------
Stored natural curvatures are DisMech's *integrated* values ``kappa_bar = 2 tan(phi_bar / 2)``
per stencil and material direction (dimensionless), ``phi_bar`` the natural turning angle [rad]
between the stencil's two edges. A limb with uniform curvature ``kappa`` [1/m] has
``phi_bar_i = kappa V_i`` (DisMech's controller spreads a limb angle uniformly over its edges),
see :func:`integrated_curvature` and :meth:`DERNetwork.with_limb_curvature`; its equilibrium is
the polygon inscribed in the circle of radius ``l / (2 sin(kappa l / 2)) = 1/kappa (1 + O(kappa l)^2)``
for equal edges ``l``. Limb stencils take their values from each limb's
``DERRod.natural_curvature``/``natural_twist`` leaves, joint stencils from
``DERNetwork.joint_natural_curvature``/``joint_natural_twist``; all are differentiable. A static
``natural_curvature_fn(t, kappa_bar) -> (S, 2)`` (and ``natural_twist_fn(t, tau_bar) -> (S,)``)
maps the stored values to the ones used at time ``t`` [s], e.g. a ramp ``min(t / T, 1) * kappa_bar``,
so gradients flow through the stored arrays.

Jacobian: one limb without joints (a chain, ``NetworkTopology.chain``) keeps the banded O(N)
solve (:class:`~jaxrod.solvers.jacobian.BandedJacobianSolver`, half-bandwidth
:data:`DER_BANDWIDTH`, 21 coloured JVPs). Joints couple nodes far apart in the numbering, so the
Jacobian of a network is not banded. Its
sparsity pattern is known from the stencils (:func:`jacobian_pattern`), so the default
:class:`~jaxrod.solvers.jacobian.ColouredJacobianSolver` builds it from one JVP per colour of a greedy column colouring
(:func:`~jaxrod.solvers.jacobian.colour_columns`) and factors it densely (LU: fine up to a few thousand DOFs). Measured on a
440-DOF network (test zoo, 2 shared CPU cores): 35 colours, Jacobian 11 ms against 250 ms for
``jax.jacfwd`` (440 JVPs). With rod-rod contact (pairs not known in advance) the default is
:class:`~jaxrod.solvers.jacobian.DenseJacobianSolver`.

Contact (optional ``contacts``, reusing :mod:`jaxrod.models.der.contact`)
------------------------------------------------------------------------
* :class:`~jaxrod.models.der.contact.FloorContact`: every node, joint nodes included (DisMech
  leaves joint nodes out of floor contact), with the node radius = the largest radius of the incident
  edges. Anisotropic friction takes the node's rod direction as the sum of its incident edge
  tangents (at a joint node this is only a rough direction).
* :class:`~jaxrod.models.der.contact.RodRodContact`: edge-edge contact between edges at least
  ``exclude_neighbours`` apart in the *edge graph* of the network (so edges meeting at a joint
  never interact), contact distance ``h_i + h_j``; ``self_contact=False`` keeps only pairs from
  different limbs. Candidate pairs are refreshed after every converged step (broad phase
  O(P) for P admissible pairs) and carried in :class:`ContactAux`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...integrate.base import jit_when_eager
from ...signals import interp_linear
from ...solvers.jacobian import BandedJacobianSolver, ColouredJacobianSolver, DenseJacobianSolver
from ...validation import (
    check_finite,
    check_finite_scalar,
    check_int_sequence,
    check_polyline,
    check_positive,
    check_shape,
    check_type,
    is_traced,
    one_or_many,
)
from ...integrate.implicit import AbstractImplicitModel, State
from .contact import (
    CandidatePairs,
    FloorContact,
    RodRodContact,
    candidate_pairs,
    edge_contact_energy,
    edge_contact_friction,
    segment_distance,
)
from .energies import stretching_energy, twisting_energy
from .hessian import chain_stage_jacobian
from .frames import (
    ReferenceFrames,
    edge_tangents,
    kinematics,
    network_initial_frames,
    network_update_frames,
    material_directors,
    transport_directors,
)
from .actuation import anchor_arclengths, node_arclengths, routing_offsets, weighted_tendon_length
from .motion import MIN_AXIS_COSINE, ClampMotion
from .rod import DERRod
from .topology import (
    Joint,
    NetworkTopology,
    _build_topology,
    _check_edge_lengths,
    _edge_graph_pairs,
    _limb_global,
    jacobian_pattern,
)

#: Half-bandwidth of a one-limb network's Jacobian in the flattened ``(N, 4)`` layout: every
#: bending/twisting stencil couples 11 consecutive entries.
DER_BANDWIDTH = 10

__all__ = [
    "DER_BANDWIDTH",
    "DERModel",
    "DERNetwork",
    "Joint",
    "ContactAux",
    "NetworkTopology",
    "first_mode_velocity",
    "integrated_curvature",
    "jacobian_pattern",
]


def integrated_curvature(kappa, voronoi):
    """DisMech's integrated natural curvature ``2 tan(kappa V / 2)`` (dimensionless) of a node
    with Voronoi length ``voronoi`` [m] on an arc of curvature ``kappa`` [1/m] (broadcasting)."""
    return 2.0 * jnp.tan(0.5 * jnp.asarray(kappa) * jnp.asarray(voronoi))


class ContactAux(eqx.Module):
    """Reference data of a :class:`DERNetwork` with rod-rod contact: the reference frames and
    the candidate edge pairs (global edge ids) for the next step."""

    frames: ReferenceFrames
    pairs: CandidatePairs


def _frames(aux):
    return aux.frames if isinstance(aux, ContactAux) else aux


def _pad_rows(f, M, R, chain):
    """``(R, 4)`` generalised forces from nodal forces ``f`` ``(M, 3)`` (zero twist and padding)."""
    if chain:  # one op, not a scatter (the single rod's program); several limbs keep their scatter
        return jnp.pad(f, ((0, R - M), (0, 1)))
    return jnp.zeros((R, 4), dtype=f.dtype).at[:M, :3].set(f)


def _concat(arrays):
    """``jnp.concatenate`` that returns a single array as it is (no op in the program)."""
    return arrays[0] if len(arrays) == 1 else jnp.concatenate(arrays)


class _StaticFn(eqx.Module):
    """A plain callable held as static data (a new function recompiles); ``eqx.Module`` callables
    are stored as they are instead, so that their array leaves are traced."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, *args):
        return self.fn(*args)


def _as_module(name, fn):
    if fn is None or isinstance(fn, eqx.Module):
        return fn
    if not callable(fn):
        raise ValueError(f"{name} must be callable (a function or an eqx.Module), got {type(fn).__name__}")
    return _StaticFn(fn)


def _limb_records(name, records, sizes):
    """``(items, limbs)`` from ``records``: one record or a sequence of them, each an item or a
    ``(limb, item)`` pair (a bare item belongs to limb 0 of a one-limb network)."""
    if _is_limb_pair(records):
        records = (records,)
    items, limbs = [], []
    for k, r in enumerate(one_or_many(records)):
        if _is_limb_pair(r):
            limb, item = int(r[0]), r[1]
            if not 0 <= limb < len(sizes):
                raise ValueError(f"{name}[{k}]: limb {limb} does not exist (the network has limbs 0..{len(sizes) - 1})")
        elif len(sizes) == 1:
            limb, item = 0, r
        else:
            raise ValueError(f"{name}[{k}]: give a (limb, record) pair on a network of {len(sizes)} limbs")
        items.append(item)
        limbs.append(limb)
    return tuple(items), tuple(limbs)


def _is_limb_pair(r):
    return (
        isinstance(r, tuple)
        and len(r) == 2
        and isinstance(r[0], (int, np.integer))
        and not isinstance(r[0], (bool, np.bool_))
    )


def _check_clamps(clamps, limbs, sizes):
    """Every clamp a :class:`ClampMotion` on an existing edge, at most one per edge."""
    seen = {}
    for k, (c, l) in enumerate(zip(clamps, limbs, strict=True)):
        if not isinstance(c, ClampMotion):
            raise ValueError(f"clamps[{k}] must be a ClampMotion, got {type(c).__name__}")
        e = c.edge_index(sizes[l] - 1)
        if (l, e) in seen:
            raise ValueError(f"clamps[{seen[l, e]}] and clamps[{k}] both hold edge {e}; give one pose per edge")
        seen[l, e] = k


def _by_limb(items, limbs):
    """``{limb: (items on it, in order)}``, validated together (their messages count within a limb)."""
    out = {}
    for item, limb in zip(items, limbs, strict=True):
        out.setdefault(limb, []).append(item)
    return {limb: tuple(group) for limb, group in out.items()}


def _check_der_tendons(tendons, tendon_limbs, limbs, section_radius):
    """Tension-controlled tendons that fit their limbs."""
    from ...actuation.tendons import check_tendons, check_tension_controlled

    check_tension_controlled(tendons, "DER")
    for l, group in _by_limb(tendons, tendon_limbs).items():
        rod = limbs[l]
        if is_traced(rod.rest_lengths):
            continue
        s_node = np.asarray(node_arclengths(rod.rest_lengths))
        radius = rod.radius if section_radius is None else section_radius
        check_tendons(group, float(s_node[-1]), radius, np.append(0.5 * (s_node[1:] + s_node[:-1]), s_node[-1]))


def _check_der_chambers(chambers, chamber_limbs, limbs, section_radius):
    from ...actuation.chambers import check_chambers

    for l, group in _by_limb(chambers, chamber_limbs).items():
        check_chambers(group, limbs[l].radius if section_radius is None else section_radius, pressure_only="DER")


class DERNetwork(AbstractImplicitModel):
    """Several discrete elastic rods joined by elastic joints, with loads, boundary conditions and
    natural-curvature actuation (see the module docstring for layout, joint rule and units).

    Build with ``DERNetwork(limbs, joints, ...)`` (or :meth:`build`, the same).

    Attributes:
        limbs: tuple of :class:`~jaxrod.models.der.DERRod` (each with its own geometry, E, G, rho,
            h, natural curvature ``(N_l-2, 2)`` and twist ``(N_l-2,)``; differentiable).
        joints: tuple of :class:`Joint` (static).
        topology: :class:`NetworkTopology` index arrays.
        joint_natural_curvature: ``(S_j, 2)`` natural curvature of the joint stencils
            (integrated, dimensionless; default from the rest shape).
        joint_natural_twist: ``(S_j,)`` natural twist of the joint stencils [rad].
        gravity: ``(3,)`` [m/s^2].
        damping: viscous damping eta [N s/m^2]: force ``-eta V_i v_i`` on node ``i``.
        point_forces: ``(M, 3)`` constant nodal forces [N] (global node numbering).
        distributed_force: ``(3,)`` force per unit rest length [N/m], lumped on nodes.
        q0, v0: ``(R, 4)`` initial configuration and velocity.
        fixed_nodes, fixed_edges: global ids of nodes (positions) / edges (twist) prescribed.
        force_fn: optional static ``f(t) -> (M, 3)`` time-dependent nodal forces [N].
        motion: optional plain callable ``m(t) -> (R, 4)``: prescribed values of the fixed DOFs at
            time ``t`` (only entries of fixed DOFs are used; twist angles relative to the moving
            reference frame); default: the fixed DOFs keep their values from ``q0``. A static
            field: every new function recompiles. Pass data instead (``motion=SampledMotion(times,
            values)`` or any ``eqx.Module`` callable): it is stored in ``motion_data``.
        motion_data: the ``eqx.Module`` given as ``motion`` (traced: one compiled program serves
            every trial), or ``None``.
        natural_curvature_fn: optional ``f(t, kappa_bar (S, 2)) -> (S, 2)``: natural curvature
            used at time ``t`` [s] from the stored one (actuation). An ``eqx.Module`` callable
            (e.g. :class:`~jaxrod.models.der.waves.CurvatureWave`,
            :class:`~jaxrod.signals.LinearRamp`) is stored as it is: its array leaves are traced,
            so new parameters never recompile and are differentiable; a plain function is held
            as static data (every new function recompiles).
        natural_twist_fn: optional ``f(t, tau_bar (S,)) -> (S,)`` likewise for the twist.
        load_factor: scales gravity, point, distributed and ``force_fn`` loads and the tendon
            and chamber loads (not the natural-curvature actuation).
        clamps: tuple of :class:`~jaxrod.models.der.ClampMotion`: measured clamp poses (clamp
            point and absolute material-frame orientation per sample time) of clamped edges, on
            the limbs ``clamp_limbs`` (static). Each fixes its edge's two nodes and twist; these
            values override ``motion``/``q0``. With ``q0=None`` the clamped edges' twist angles
            start at the clamps' first orientation; a given ``q0`` must agree with the first pose.
            See :mod:`jaxrod.models.der.motion`.
        tendons: tuple of :class:`~jaxrod.actuation.tendons.Tendon` along the limbs
            ``tendon_limbs`` (static), anchored at their termination (``None``: the limb's last
            node; :mod:`jaxrod.models.der.actuation`): loads ``-tau(t) dl/dq`` of each routed
            cable's length ``l``, arc length from the midpoint of the limb's edge 0.
        chambers: tuple of pressure-controlled chambers along the whole of the limbs
            ``chamber_limbs`` (static) (:class:`~jaxrod.actuation.chambers.Chamber`: offset
            ``(2,)`` [m] in the ``(m1, m2)`` section plane, cap ``area`` A [m^2], gauge pressure
            ``pressure_at(t)`` [Pa]). A chamber's volume is ``A l``, ``l`` the length of its
            channel polyline (a straight tendon's, to the limb's end), so the pressure's work
            gives the generalised force ``+P A dl/dq``: the tendon force with ``tau = -P A``
            (spec 7.3: cap force ``P A`` and moment ``P A r x e3`` at the end, the distributed
            loads of eq. 18).
        contacts: tuple of :class:`~jaxrod.models.der.contact.FloorContact` /
            :class:`~jaxrod.models.der.contact.RodRodContact` (at most one of the latter).
        contact_first, contact_second: ``(P,)`` admissible edge pairs of the rod-rod contact.
        n_contact_candidates: static size of the candidate list.
        jacobian_solver: the default linear solver, built once on the host (its colouring needs
            the concrete topology).
    """

    limbs: tuple
    topology: NetworkTopology
    joint_natural_curvature: jax.Array
    joint_natural_twist: jax.Array
    gravity: jax.Array
    damping: jax.Array
    point_forces: jax.Array
    distributed_force: jax.Array
    q0: jax.Array
    v0: jax.Array
    contacts: tuple = ()
    contact_first: jax.Array | None = None
    contact_second: jax.Array | None = None
    n_contact_candidates: int = eqx.field(static=True, default=0)
    jacobian_solver: AbstractJacobianSolver | None = None
    joints: tuple = eqx.field(static=True, default=())
    fixed_nodes: tuple = eqx.field(static=True, default=())
    fixed_edges: tuple = eqx.field(static=True, default=())
    force_fn: Callable | None = eqx.field(static=True, default=None)
    motion: Callable | None = eqx.field(static=True, default=None)
    natural_curvature_fn: eqx.Module | None = None
    natural_twist_fn: eqx.Module | None = None
    load_factor: jax.Array = 1.0
    motion_data: eqx.Module | None = None
    clamps: tuple = ()
    clamp_limbs: tuple = eqx.field(static=True, default=())
    tendons: tuple = ()
    tendon_limbs: tuple = eqx.field(static=True, default=())
    chambers: tuple = ()
    chamber_limbs: tuple = eqx.field(static=True, default=())

    def __init__(
        self,
        limbs: Sequence[DERRod],
        joints: Sequence[Joint] = (),
        *,
        gravity=(0.0, 0.0, 0.0),
        damping=0.0,
        point_loads: Mapping | None = None,
        point_forces=None,
        distributed_force=(0.0, 0.0, 0.0),
        force_fn=None,
        clamped_edges=(),
        fixed_nodes=(),
        fixed_edges=(),
        motion=None,
        q0=None,
        v0=None,
        natural_curvature_fn=None,
        natural_twist_fn=None,
        joint_natural_curvature=None,
        joint_natural_twist=None,
        contacts=(),
        load_factor=1.0,
        clamps=(),
        tendons=(),
        chambers=(),
        section_radius=None,
    ):
        """Build a network.

        Args:
            limbs: sequence of :class:`DERRod` (>= 1; each >= 3 nodes, checked by DERRod).
            joints: sequence of :class:`Joint`; attached limb ends must coincide with the host node.
            gravity: ``(3,)`` [m/s^2].
            damping: eta [N s/m^2] >= 0.
            point_loads: ``{(limb, node): (fx, fy, fz)}`` nodal forces [N] (added to ``point_forces``).
            point_forces: ``(M, 3)`` nodal forces [N] in global numbering.
            distributed_force: ``(3,)`` [N/m].
            force_fn: static ``f(t) -> (M, 3)`` [N].
            clamped_edges: ``[(limb, edge), ...]``: fixes both nodes and the twist of each edge.
            fixed_nodes: ``[(limb, node), ...]`` positions prescribed (pinned).
            fixed_edges: ``[(limb, edge), ...]`` twist angles prescribed.
            motion: ``m(t) -> (R, 4)``: a plain function (static) or an ``eqx.Module`` (traced,
                e.g. :class:`~jaxrod.signals.SampledMotion`); default: fixed DOFs keep their
                ``q0`` values.
            q0: ``(R, 4)``; default the rest configuration.
            v0: ``(R, 4)``; default at rest.
            natural_curvature_fn: actuation map of the natural curvature (see the class docstring).
            natural_twist_fn: actuation map of the natural twist (see the class docstring).
            joint_natural_curvature: ``(S_j, 2)``; default: curvature of the rest shape.
            joint_natural_twist: ``(S_j,)`` [rad]; default: twist of the rest shape.
            contacts: ``FloorContact`` / ``RodRodContact`` records (see the module docstring).
            load_factor: scale of the external loads (see the class docstring).
            clamps: :class:`~jaxrod.models.der.ClampMotion` records, each as ``(limb, clamp)``
                (a bare clamp on a one-limb network); ``clamp.edge`` counts along its limb.
            tendons: :class:`~jaxrod.actuation.tendons.Tendon` records as ``(limb, tendon)``
                (a bare tendon on a one-limb network).
            chambers: :class:`~jaxrod.actuation.chambers.Chamber` records as ``(limb, chamber)``
                (a bare chamber on a one-limb network).
            section_radius: radius [m] holding the tendon channels and the chambers (default:
                each limb's radius).

        Raises:
            ValueError: missing limbs/nodes/edges in joints or boundary conditions, an interior
                node attached to a joint, non-coincident joint nodes, fold-backs at a joint,
                bad shapes or non-finite values, negative damping, wrong contact records or an
                initial overlap deeper than a contact's ``delta``.
            TypeError: a limb that is not a DERRod, a joint that is not a Joint, a contact that is
                not a FloorContact or RodRodContact.
        """
        check_finite_scalar("load_factor", load_factor)
        if section_radius is not None:
            check_finite_scalar("section_radius", section_radius, "m")
            check_positive("section_radius", section_radius, "m")
        limbs = tuple(limbs)
        if not limbs:
            raise ValueError("a DERNetwork needs at least one limb")
        for i, limb in enumerate(limbs):
            if not isinstance(limb, DERRod):
                raise TypeError(
                    f"limbs[{i}] must be a DERRod (build it with DERRod.from_polyline / straight), "
                    f"got {type(limb).__name__}"
                )
        joints = tuple(joints)
        traced = any(is_traced(limb.rest_positions) for limb in limbs)
        if traced and joints:
            raise ValueError(
                "DERNetwork: limb rest positions must be concrete where limbs are joined (the joints "
                "are built and checked on the host)"
            )
        # without joints the topology needs only the limb sizes (a rod may be built under jit)
        rest = [None if traced else np.asarray(limb.rest_positions) for limb in limbs]
        topo, _ = _build_topology([limb.n_nodes for limb in limbs], joints, rest)
        self.limbs = limbs
        self.joints = joints
        if joints:
            # rest angle between the material frames across each joint stencil (theta = 0 at
            # rest), and the rest curvature/twist of the joint stencils (one compiled call, not
            # ~100 eager ops)
            pts = jnp.concatenate([jnp.asarray(limb.rest_positions, dtype=float) for limb in limbs])
            offset, kappa_rest, tau_rest = _joint_rest_data(pts, topo)
            topo = eqx.tree_at(lambda t: t.stencil_twist_offset, topo, offset)
        else:
            kappa_rest, tau_rest = np.zeros((0, 2)), np.zeros(0)
        self.topology = topo
        M, R = topo.n_nodes, topo.n_rows
        self.gravity = jnp.asarray(gravity, dtype=float)
        check_shape("gravity", self.gravity, (3,))
        check_finite("gravity", self.gravity)
        self.damping = jnp.asarray(damping, dtype=float)
        if not is_traced(self.damping):
            check_finite("damping", self.damping)
            if np.any(np.asarray(self.damping) < 0):
                raise ValueError(f"damping must be >= 0 N s/m^2, got {damping}")
        pf = (
            np.zeros((M, 3))
            if point_forces is None
            else jnp.asarray(point_forces, dtype=float)
        )
        check_shape("point_forces", pf, (M, 3))
        for spec, force in (point_loads or {}).items():
            limb, node = _limb_global(topo, "point_loads", spec, "node")
            force = jnp.asarray(force, dtype=float)
            check_shape(f"point_loads[{spec}]", force, (3,))
            pf = jnp.asarray(pf).at[topo.limb_nodes[limb][node]].add(force)
        check_finite("point_forces", pf)
        self.point_forces = jnp.asarray(pf, dtype=float)
        self.distributed_force = jnp.asarray(distributed_force, dtype=float)
        check_shape("distributed_force", self.distributed_force, (3,))
        check_finite("distributed_force", self.distributed_force)
        self.force_fn = force_fn
        if isinstance(motion, eqx.Module):
            self.motion, self.motion_data = None, motion
        elif motion is None or callable(motion):
            self.motion, self.motion_data = motion, None
        else:
            raise ValueError(
                "motion must be a callable t -> (R, 4) or an eqx.Module (e.g. SampledMotion), "
                f"got {type(motion).__name__}"
            )
        self.natural_curvature_fn = _as_module("natural_curvature_fn", natural_curvature_fn)
        self.natural_twist_fn = _as_module("natural_twist_fn", natural_twist_fn)
        sizes = [limb.n_nodes for limb in limbs]
        self.clamps, self.clamp_limbs = _limb_records("clamps", clamps, sizes)
        _check_clamps(self.clamps, self.clamp_limbs, sizes)
        self.tendons, self.tendon_limbs = _limb_records("tendons", tendons, sizes)
        _check_der_tendons(self.tendons, self.tendon_limbs, limbs, section_radius)
        self.chambers, self.chamber_limbs = _limb_records("chambers", chambers, sizes)
        _check_der_chambers(self.chambers, self.chamber_limbs, limbs, section_radius)
        default_q0 = q0 is None
        if q0 is None and traced:
            q0 = jnp.zeros((R, 4)).at[:M, :3].set(self._rest_node_positions())
        elif q0 is None:  # NumPy throughout: under a transformation jnp.asarray gives a tracer
            q0 = np.zeros((R, 4))
            pts = np.concatenate([np.asarray(limb.rest_positions) for limb in limbs])
            q0[:M, :3] = pts[np.asarray(topo.node_source, dtype=np.int64)]
        self.q0 = jnp.asarray(q0, dtype=float)
        check_shape("q0", self.q0, (R, 4))
        check_finite("q0", self.q0)
        _check_edge_lengths(self.q0, topo)
        self.v0 = jnp.asarray(np.zeros((R, 4))) if v0 is None else jnp.asarray(v0, dtype=float)
        check_shape("v0", self.v0, (R, 4))
        check_finite("v0", self.v0)
        nodes, tw = set(), set()
        for spec in clamped_edges:
            limb, e = _limb_global(topo, "clamped_edges", spec, "edge")
            g = topo.limb_edge_offsets[limb] + e
            nodes |= {topo.limb_nodes[limb][e], topo.limb_nodes[limb][e + 1]}
            tw.add(g)
        for spec in fixed_nodes:
            limb, k = _limb_global(topo, "fixed_nodes", spec, "node")
            nodes.add(topo.limb_nodes[limb][k])
        for spec in fixed_edges:
            limb, e = _limb_global(topo, "fixed_edges", spec, "edge")
            tw.add(topo.limb_edge_offsets[limb] + e)
        for g, a, b, _, _ in self._clamp_edges():
            nodes |= {a, b}
            tw.add(g)
        self.fixed_nodes = tuple(sorted(nodes))
        self.fixed_edges = tuple(sorted(tw))
        if self.clamps:
            self.q0 = self._clamp_start(default_q0)
        self.load_factor = jnp.asarray(load_factor, dtype=float)
        n_joint = topo.n_stencils - topo.n_limb_stencils
        if joint_natural_curvature is None:
            joint_natural_curvature = kappa_rest
        if joint_natural_twist is None:
            joint_natural_twist = tau_rest
        self.joint_natural_curvature = jnp.asarray(joint_natural_curvature, dtype=float)
        self.joint_natural_twist = jnp.asarray(joint_natural_twist, dtype=float)
        check_shape(
            "joint_natural_curvature", self.joint_natural_curvature, (n_joint, 2)
        )
        check_shape("joint_natural_twist", self.joint_natural_twist, (n_joint,))
        check_finite("joint_natural_curvature", self.joint_natural_curvature)
        check_finite("joint_natural_twist", self.joint_natural_twist)
        self._set_contacts(contacts)
        if self._rod_contact is not None:
            self.jacobian_solver = DenseJacobianSolver()
        elif topo.chain:
            # one limb: the stencils couple 11 consecutive entries, an O(N) banded solve from 21
            # coloured JVPs (the general colouring would store and factor the matrix densely)
            self.jacobian_solver = BandedJacobianSolver(lower=DER_BANDWIDTH, upper=DER_BANDWIDTH)
        else:
            rows, cols = jacobian_pattern(topo)
            self.jacobian_solver = ColouredJacobianSolver.from_pattern(
                rows, cols, 4 * topo.n_rows
            )

    @classmethod
    def build(cls, limbs, joints=(), **kwargs) -> DERNetwork:
        """DisMech-style alias of the constructor: ``DERNetwork.build(limbs=[...], joints=[...], ...)``."""
        return cls(limbs, joints, **kwargs)

    # ---- index helpers (host side) -----------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        """M, the number of global nodes."""
        return self.topology.n_nodes

    @property
    def n_edges(self) -> int:
        """E, the number of global edges."""
        return self.topology.n_edges

    @property
    def n_stencils(self) -> int:
        """S, the number of bending/twisting stencils (limb interior nodes + joint pairs)."""
        return self.topology.n_stencils

    def node_index(self, limb: int, node: int) -> int:
        """Global id of node ``node`` (negative from the end) of limb ``limb``."""
        limb, node = _limb_global(self.topology, "node_index", (limb, node), "node")
        return self.topology.limb_nodes[limb][node]

    def edge_index(self, limb: int, edge: int) -> int:
        """Global id of edge ``edge`` (negative from the end) of limb ``limb``."""
        limb, edge = _limb_global(self.topology, "edge_index", (limb, edge), "edge")
        return self.topology.limb_edge_offsets[limb] + edge

    def limb_node_indices(self, limb: int) -> np.ndarray:
        """``(N_l,)`` global node ids of limb ``limb`` (index ``positions[..., ids, :]``)."""
        _limb_global(self.topology, "limb_node_indices", (limb, 0), "node")
        return np.asarray(self.topology.limb_nodes[limb])

    def limb_stencil_indices(self, limb: int) -> np.ndarray:
        """``(N_l - 2,)`` indices of limb ``limb``'s interior stencils in the global stencil order."""
        _limb_global(self.topology, "limb_stencil_indices", (limb, 0), "node")
        start = self.topology.limb_stencil_offsets[limb]
        return np.arange(start, start + self.limbs[limb].n_nodes - 2)

    def joint_stencil_indices(self) -> np.ndarray:
        """``(S_j,)`` indices of the joint stencils in the global stencil order."""
        return np.arange(self.topology.n_limb_stencils, self.topology.n_stencils)

    # ---- per-edge / per-stencil parameters (traced; differentiable in the limbs) --------------
    def _per_edge(self, fn):
        """``(E,)`` per-edge values of a limb property ``fn(limb)`` (scalar per limb)."""
        if len(self.limbs) == 1:
            return jnp.broadcast_to(jnp.asarray(fn(self.limbs[0]), dtype=float), (self.n_edges,))
        return jnp.concatenate(
            [
                jnp.broadcast_to(
                    jnp.asarray(fn(limb), dtype=float), (limb.n_nodes - 1,)
                )
                for limb in self.limbs
            ]
        )

    def rest_lengths(self):
        """``(E,)`` rest edge lengths [m]."""
        return _concat([limb.rest_lengths for limb in self.limbs])

    def _rest_node_positions(self):
        return self._node_positions(self.topology)

    def _node_positions(self, topo):
        src = np.asarray(topo.node_source, dtype=np.int64)
        if not any(is_traced(limb.rest_positions) for limb in self.limbs):
            # NumPy for concrete limbs: eager jnp indexing compiles a program per shape
            return jnp.asarray(np.concatenate([np.asarray(limb.rest_positions) for limb in self.limbs])[src])
        pts = jnp.concatenate([limb.rest_positions for limb in self.limbs])
        return pts[src]

    def rest_node_positions(self):
        """``(M, 3)`` rest positions of the global nodes [m]."""
        return self._rest_node_positions()

    @property
    def natural_curvature(self):
        """``(S, 2)`` stored natural curvature of all stencils (limb stencils then joints)."""
        if self.topology.chain:
            return self.limbs[0].natural_curvature
        return jnp.concatenate([limb.natural_curvature for limb in self.limbs] + [self.joint_natural_curvature])

    @property
    def natural_twist(self):
        """``(S,)`` stored natural twist [rad] of all stencils."""
        if self.topology.chain:
            return self.limbs[0].natural_twist
        return jnp.concatenate([limb.natural_twist for limb in self.limbs] + [self.joint_natural_twist])

    def natural_curvature_at(self, t):
        """``(S, 2)`` natural curvature used at time ``t`` [s] (after ``natural_curvature_fn``)."""
        kb = self.natural_curvature
        if self.natural_curvature_fn is not None:
            kb = jnp.asarray(self.natural_curvature_fn(t, kb), dtype=float)
        return kb

    def natural_twist_at(self, t):
        """``(S,)`` natural twist [rad] used at time ``t`` [s] (after ``natural_twist_fn``)."""
        tb = self.natural_twist
        if self.natural_twist_fn is not None:
            tb = jnp.asarray(self.natural_twist_fn(t, tb), dtype=float)
        return tb

    def stencil_parameters(self):
        """Per stencil: Voronoi length ``(S,)`` [m], EI ``(S,)`` [N m^2], GJ ``(S,)`` [N m^2]
        (series mean across limbs, see the module docstring); scalars EI, GJ on a chain."""
        if self.topology.chain:  # the same values without the per-stencil gathers
            limb = self.limbs[0]
            return limb.voronoi_lengths[1:-1], limb.EI, limb.GJ
        lr = self.rest_lengths()
        se = self.topology.stencil_edges
        la, lb = lr[se[:, 0]], lr[se[:, 1]]
        vor = 0.5 * (la + lb)
        same = self.topology.stencil_same_limb

        def mean(k_edge):
            ka, kb = k_edge[se[:, 0]], k_edge[se[:, 1]]
            return jnp.where(same, ka, vor / (0.5 * la / ka + 0.5 * lb / kb))

        return (
            vor,
            mean(self._per_edge(lambda r: r.EI)),
            mean(self._per_edge(lambda r: r.GJ)),
        )

    def node_voronoi(self):
        """``(M,)`` node Voronoi lengths [m]: half of every incident rest edge."""
        if self.topology.chain:
            return self.limbs[0].voronoi_lengths
        half = 0.5 * self.rest_lengths()
        en = self.topology.edge_nodes
        return jnp.zeros(self.n_nodes).at[en[:, 0]].add(half).at[en[:, 1]].add(half)

    def node_masses(self):
        """``(M,)`` lumped node masses [kg]: half the mass of every incident edge."""
        if self.topology.chain:  # the rod's own ``rho A V_i``: the same value, rounded the same way
            return self.limbs[0].node_masses()
        half = 0.5 * self._per_edge(lambda r: r.density * r.area) * self.rest_lengths()
        en = self.topology.edge_nodes
        return jnp.zeros(self.n_nodes).at[en[:, 0]].add(half).at[en[:, 1]].add(half)

    def edge_twist_inertia(self):
        """``(E,)`` twist inertia [kg m^2] ``rho A l h^2 / 2`` of each edge."""
        if self.topology.chain:  # the rod's own values, rounded the same way
            return self.limbs[0].edge_twist_inertia()
        return self._per_edge(lambda r: r.density * r.area * r.radius**2 / 2.0) * self.rest_lengths()

    # ---- actuation helpers -------------------------------------------------------------------
    def with_limb_natural_curvature(self, limb: int, kappa_bar) -> DERNetwork:
        """Copy with limb ``limb``'s natural curvature ``(N_l-2, 2)`` (integrated) replaced."""
        _limb_global(self.topology, "with_limb_natural_curvature", (limb, 0), "node")
        new = self.limbs[limb].with_natural_curvature(kappa_bar)
        check_shape(
            "kappa_bar", new.natural_curvature, (self.limbs[limb].n_nodes - 2, 2)
        )
        return eqx.tree_at(lambda m: m.limbs[limb], self, new)

    def with_limb_curvature(self, limb: int, kappa) -> DERNetwork:
        """Copy with a uniform natural curvature ``kappa`` ``(2,)`` [1/m] (material directions 1
        and 2) on limb ``limb``: per interior node ``2 tan(kappa_k V_i / 2)``."""
        _limb_global(self.topology, "with_limb_curvature", (limb, 0), "node")
        kappa = jnp.broadcast_to(jnp.asarray(kappa, dtype=float), (2,))
        vor = self.limbs[limb].voronoi_lengths[1:-1]
        return self.with_limb_natural_curvature(
            limb, integrated_curvature(kappa[None, :], vor[:, None])
        )

    # ---- AbstractImplicitModel ----------------------------------------------------------------
    def fixed_mask(self):
        M, E, R = self.n_nodes, self.n_edges, self.topology.n_rows
        m = np.zeros((R, 4), dtype=bool)
        m[list(self.fixed_nodes), :3] = True
        m[list(self.fixed_edges), 3] = True
        m[M:, :3] = True  # padding
        m[E:, 3] = True
        return jnp.asarray(m)

    def prescribed(self, t):
        if self.motion_data is not None:
            q = jnp.asarray(self.motion_data(t), dtype=float)
        elif self.motion is not None:
            q = jnp.asarray(self.motion(t), dtype=float)
        else:
            q = self.q0
        if not self.clamps:
            return q
        ref = network_initial_frames(self.q0, self.topology)
        for c, (g, a, b, _, _), (nodes, theta) in zip(
            self.clamps, self._clamp_edges(), self._clamp_samples(ref), strict=True
        ):
            x = interp_linear(c.times, nodes, t)
            rows = slice(a, a + 2) if b == a + 1 else np.array([a, b])
            q = q.at[rows, :3].set(x).at[g, 3].set(interp_linear(c.times, theta, t))
        return q

    # ---- clamps (ClampMotion) ---------------------------------------------------------------
    def _clamp_edges(self):
        """Per clamp: ``(global edge, its first node, its second node, limb edge, limb)``."""
        topo, out = self.topology, []
        for c, l in zip(self.clamps, self.clamp_limbs, strict=True):
            e = c.edge_index(len(topo.limb_nodes[l]) - 1)
            out.append((topo.limb_edge_offsets[l] + e, topo.limb_nodes[l][e], topo.limb_nodes[l][e + 1], e, l))
        return out

    def _clamp_samples(self, ref):
        """Per clamp: ``(T, 2, 3)`` node positions [m] and ``(T,)`` twist angles [rad] at its
        sample times, the angles offset by whole turns to continue ``q0``'s angle."""
        out = []
        for c, (g, _, _, e, l) in zip(self.clamps, self._clamp_edges(), strict=True):
            ang = c.sample_angles(ref.d1[g], ref.tangent[g])
            turns = jnp.round((self.q0[g, 3] - ang[0]) / (2 * jnp.pi))
            out.append((c.node_positions(self.limbs[l].rest_lengths[e]), ang + 2 * jnp.pi * turns))
        return out

    def _clamp_start(self, default_q0):
        """``q0`` with the clamped edges' twist set from the clamps' first orientation (when ``q0``
        was not given); checks that ``q0`` agrees with every clamp's first pose."""
        q0 = self.q0
        ref = network_initial_frames(q0, self.topology)
        for k, (c, (g, a, b, e, l)) in enumerate(zip(self.clamps, self._clamp_edges(), strict=True)):
            ang = c.sample_angles(ref.d1[g], ref.tangent[g])
            if default_q0:
                q0 = q0.at[g, 3].set(ang[0])
            rest_length = self.limbs[l].rest_lengths[e]
            if any(is_traced(x) for x in (q0, c.orientations, c.positions, rest_length)):
                continue
            axis_cos = np.asarray(c.orientations[:, :, 2] @ ref.tangent[g])
            if axis_cos.min() < MIN_AXIS_COSINE:
                j = int(np.argmin(axis_cos))
                raise ValueError(
                    f"clamps[{k}] (edge {e}): the clamp axis at sample {j} is "
                    f"{np.degrees(np.arccos(np.clip(axis_cos[j], -1, 1))):.1f} deg from its direction at q0; "
                    f"clamped edges may turn at most {np.degrees(np.arccos(MIN_AXIS_COSINE)):.0f} deg away "
                    "from their initial direction (the reference frame is the minimal rotation from it)"
                )
            nodes = np.asarray(c.node_positions(rest_length)[0])
            gap = np.abs(nodes - np.asarray(q0[np.array([a, b]), :3])).max()
            tol = 1e-6 * float(np.asarray(rest_length))
            if gap > tol:
                raise ValueError(
                    f"clamps[{k}] (edge {e}): the first pose puts the edge's nodes {gap:.3g} m away from "
                    f"q0 (nodes {a}, {b}); q0 must start in the first clamp pose (node positions "
                    "ClampMotion.node_positions(rest_length)[0]: the clamp point is the edge's midpoint)"
                )
            dth = float(np.asarray(q0[g, 3] - ang[0]))
            dth = (dth + np.pi) % (2 * np.pi) - np.pi
            if abs(dth) > 1e-6:
                raise ValueError(
                    f"clamps[{k}] (edge {e}): q0's twist angle of the edge differs from the clamp's first "
                    f"orientation by {dth:.3g} rad; set q0[{g}, 3] = {float(ang[0]):.6g} or leave q0=None"
                )
        return q0

    def _pin_clamp_frames(self, frames):
        """Reference frames with every clamped edge's director and tangent reset to those at
        ``q0``: the edge's reference director is then always the minimal rotation of its director
        at ``q0`` to its current tangent (see :mod:`~jaxrod.models.der.motion`), so a clamp's
        absolute orientation fixes its twist angle from the time alone."""
        if not self.clamps:
            return frames
        ref = network_initial_frames(self.q0, self.topology)
        idx = jnp.asarray([g for g, *_ in self._clamp_edges()])
        return ReferenceFrames(
            frames.d1.at[idx].set(ref.d1[idx]), frames.tangent.at[idx].set(ref.tangent[idx]), frames.ref_twist
        )

    def init_aux(self, q):
        frames = self._pin_clamp_frames(network_initial_frames(q, self.topology))
        if self._rod_contact is None:
            return frames
        return ContactAux(frames, self._candidates(q))

    def update_aux(self, q, aux):
        frames = self._pin_clamp_frames(network_update_frames(q, _frames(aux), self.topology))
        if self._rod_contact is None:
            return frames
        return ContactAux(frames, self._candidates(q))

    def default_linear_solver(self):
        """:class:`ColouredJacobianSolver` for the stencil pattern; dense ``jacfwd`` with rod-rod
        contact (its pairs couple arbitrary edges)."""
        return self.jacobian_solver

    @jit_when_eager
    def initial_state(self) -> State:
        return State(self.q0, self.v0, self.init_aux(self.q0))

    @jit_when_eager
    def observe(self, q, v, aux):
        """``positions`` ``(M, 3)``, material ``frames`` ``(E, 3, 3)`` (rows m1, m2, t, global
        edge orientation) and edge ``twist`` ``(E,)``."""
        M, E = self.n_nodes, self.n_edges
        aux = _frames(aux)
        t = edge_tangents(q, self.topology)
        d1, d2 = transport_directors(aux.d1, aux.tangent, t)
        m1, m2 = material_directors(d1, d2, q[:E, 3])
        return {
            "positions": q[:M, :3],
            "frames": jnp.stack([m1, m2, t], axis=-2),
            "twist": q[:E, 3],
        }

    # ---- physics ----------------------------------------------------------------------------
    def mass(self):
        """``(R, 4)`` lumped masses [kg] on positions, twist inertias [kg m^2]; 1 on padding."""
        M, E, R = self.n_nodes, self.n_edges, self.topology.n_rows
        if self.topology.chain:  # padding by concatenation, as the single rod always had it
            m = jnp.concatenate([self.node_masses(), jnp.ones(R - M)])
            inertia = jnp.concatenate([self.edge_twist_inertia(), jnp.ones(R - E)])
        else:  # (the same values; kept as it was: XLA at -O0 rounds the two programs differently)
            m = jnp.ones(R).at[:M].set(self.node_masses())
            inertia = jnp.ones(R).at[:E].set(self.edge_twist_inertia())
        return jnp.concatenate(
            [jnp.repeat(m[:, None], 3, axis=1), inertia[:, None]], axis=1
        )

    def elastic_energy(self, q, aux: ReferenceFrames, t=0.0):
        """Total elastic energy [J] of configuration ``q`` ``(R, 4)`` at time ``t`` [s] (the
        natural curvature and twist may depend on time)."""
        kin = kinematics(q, _frames(aux), self.topology)
        vor, EI, GJ = self.stencil_parameters()
        EA = self._per_edge(lambda r: r.EA)
        kb = self.natural_curvature_at(t)
        d1 = kin.kappa1 - kb[:, 0]
        d2 = kin.kappa2 - kb[:, 1]
        bend = 0.5 * jnp.sum((EI * d1 * d1 + EI * d2 * d2) / vor)
        return (
            stretching_energy(kin, self.rest_lengths(), EA)
            + bend
            + twisting_energy(kin, self.natural_twist_at(t), vor, GJ)
        )

    def external_forces(self, q, v, t):
        """``(R, 4)`` generalised external forces [N, N m]: gravity, loads, viscous damping."""
        M, R = self.n_nodes, self.topology.n_rows
        vor = self.node_voronoi()
        f = self.load_factor * (
            self.node_masses()[:, None] * self.gravity[None, :]
            + self.point_forces
            + vor[:, None] * self.distributed_force[None, :]
        )
        if self.force_fn is not None:
            f = f + self.load_factor * jnp.asarray(self.force_fn(t), dtype=float)
        f = f - self.damping * vor[:, None] * v[:M, :3]
        return _pad_rows(f, M, R, self.topology.chain)

    def tendon_forces(self, q, t, aux):
        """``(R, 4)`` generalised forces of the tendons, ``-tau(t) dl/dq``, and of the chambers,
        ``+P(t) A dl/dq`` (zero without either), scaled by ``load_factor``: one gradient of the
        pull-weighted total length ``sum_k tau_k l_k`` (a chamber's pull ``tau = -P A``), each
        limb's tendons one vectorised polyline
        (:func:`~jaxrod.models.der.actuation.weighted_tendon_length`)."""
        from ...actuation.tendons import StraightRouting

        pulls = [
            (limb, td.routing, td.termination, td.tension_at(t))
            for td, limb in zip(self.tendons, self.tendon_limbs, strict=True)
        ] + [
            (limb, StraightRouting(ch.offset), None, -ch.area * ch.pressure_at(t))
            for ch, limb in zip(self.chambers, self.chamber_limbs, strict=True)
        ]
        frames = _frames(aux)
        by_limb = {}
        for limb, routing, termination, pull in pulls:
            by_limb.setdefault(limb, []).append((routing, termination, pull))
        per_limb = []  # (limb, rest lengths, offsets (K, N, 3), anchors (K,), pulls (K,))
        for limb, group in by_limb.items():
            rest = self.limbs[limb].rest_lengths
            routings, terminations, tau = zip(*group)
            per_limb.append((limb, rest, routing_offsets(routings, rest, terminations),
                             anchor_arclengths(rest, terminations), jnp.stack([jnp.asarray(p) for p in tau])))

        def total(x):
            out = 0.0
            for limb, rest, offsets, anchors, tau in per_limb:
                ql, fl = (x, frames) if self.topology.chain else self._limb_state(x, frames, limb)
                out = out + weighted_tendon_length(ql, fl, rest, offsets, anchors, tau)
            return out

        return -self.load_factor * jax.grad(total)(q)

    def _limb_state(self, q, frames, limb):
        """Limb ``limb``'s own ``(N_l, 4)`` state and :class:`ReferenceFrames` (edges
        ``(N_l-1, 3)``) from the network's ``q`` and ``frames``."""
        nodes = np.asarray(self.topology.limb_nodes[limb])
        e0, n = self.topology.limb_edge_offsets[limb], nodes.size
        twist = jnp.concatenate([q[e0 : e0 + n - 1, 3:], jnp.zeros((1, 1), q.dtype)])
        limb_frames = ReferenceFrames(frames.d1[e0 : e0 + n - 1], frames.tangent[e0 : e0 + n - 1], frames.ref_twist)
        return jnp.concatenate([q[nodes, :3], twist], axis=1), limb_frames

    def _residual_without_elastic(self, q, v, a, t, aux):
        """:meth:`residual` less the elastic forces (inertia, loads, damping, contact, friction,
        tendons): the part of the Jacobian :meth:`stage_jacobian` takes from JVPs."""
        tendons = self.tendon_forces(q, t, aux) if self.tendons or self.chambers else 0.0
        r = self.mass() * a - self.external_forces(q, v, t) - tendons
        if self.contacts:
            r = r + jax.grad(self.contact_energy)(q, aux) - self.friction_forces(q, v, aux)
        return r

    def supports_stage_jacobian(self, linear_solver) -> bool:
        """A one-limb network (chain) without rod-rod contact assembles the exact Jacobian of its
        time steps from element-local Hessians (``jaxrod.models.der.hessian``) for a
        :class:`~jaxrod.solvers.jacobian.BandedJacobianSolver` of at least :data:`DER_BANDWIDTH`
        with ``model_jacobian`` (the default)."""
        return (
            isinstance(linear_solver, BandedJacobianSolver)
            and linear_solver.model_jacobian
            and min(linear_solver.lower, linear_solver.upper) >= DER_BANDWIDTH
            and self.topology.chain
            and self._rod_contact is None
        )

    def stage_jacobian(self, points, slopes, aux, fixed, linear_solver):
        """Exact Jacobian of a time step from element-local Hessians (see
        :meth:`supports_stage_jacobian` and
        :meth:`jaxrod.integrate.implicit.AbstractImplicitModel.stage_jacobian`)."""
        node_local = not (self.tendons or self.chambers) and not any(
            isinstance(c, FloorContact) and c.anisotropic for c in self.contacts
        )
        n = 4 * self.topology.n_rows
        return chain_stage_jacobian(
            self, lambda q, v, a, t: self._residual_without_elastic(q, v, a, t, aux), points, slopes,
            _frames(aux), fixed, linear_solver._block_size(n), 4 if node_local else 2 * DER_BANDWIDTH + 1,
            DER_BANDWIDTH,
        )

    def residual(self, q, v, a, t, aux):
        # a checkpoint: reverse mode through a time step recomputes the residual's linearisation
        # instead of carrying its intermediates out of the Newton solve's tangent rule (measured,
        # tests/test_der_gradients.py's loss gradient: a smaller program, the same numbers)
        return eqx.filter_checkpoint(type(self)._residual, prevent_cse=False)(self, q, v, a, t, aux)

    def _residual(self, q, v, a, t, aux):
        if not self.contacts:
            return self.contact_free_residual(q, v, a, t, aux, jax.grad(self.elastic_energy)(q, aux, t))
        tendons = self.tendon_forces(q, t, aux) if self.tendons or self.chambers else 0.0
        grad_e = jax.grad(self.potential_energy)(q, aux, t)
        return (
            self.mass() * a
            + grad_e
            - self.external_forces(q, v, t)
            - self.friction_forces(q, v, aux)
            - tendons
        )

    def contact_free_residual(self, q, v, a, t, aux, elastic_force):
        """:meth:`residual` of a network without contacts, given its elastic forces
        ``elastic_force`` ``(M, 4)`` (``grad E`` at ``q``): callers that differentiate them their own
        way (:class:`jaxrod.system.HybridSystem`, through the element-local Hessians) share the
        rest of the residual."""
        tendons = self.tendon_forces(q, t, aux) if self.tendons or self.chambers else 0.0
        return self.mass() * a + elastic_force - self.external_forces(q, v, t) - tendons

    # ---- contact ------------------------------------------------------------------------------
    @property
    def _rod_contact(self):
        for c in self.contacts:
            if isinstance(c, RodRodContact):
                return c
        return None

    def node_radius(self):
        """``(M,)`` contact radius of each node [m]: the largest radius of its incident edges."""
        if self.topology.chain:  # one rod: its radius at every node (traced or not)
            return jnp.broadcast_to(jnp.asarray(self.limbs[0].radius, dtype=float), (self.n_nodes,))
        en = self.topology.edge_nodes
        if not is_traced(en) and not any(is_traced(limb.radius) for limb in self.limbs):
            r = np.concatenate([np.broadcast_to(np.asarray(limb.radius, float), (limb.n_nodes - 1,)) for limb in self.limbs])
            out = np.zeros(self.n_nodes)
            np.maximum.at(out, np.asarray(en[:, 0]), r)
            np.maximum.at(out, np.asarray(en[:, 1]), r)
            return jnp.asarray(out)
        r = self._per_edge(lambda rod: rod.radius)
        return jnp.zeros(self.n_nodes).at[en[:, 0]].max(r).at[en[:, 1]].max(r)

    def _candidates(self, q):
        c = self._rod_contact
        r = self._per_edge(lambda rod: rod.radius)
        cutoff = (
            2.0 * jnp.max(r)
            + c.delta
            + (2.0 * jnp.max(r) if c.margin is None else c.margin)
        )
        x = q[: self.n_nodes, :3]
        en = self.topology.edge_nodes
        return candidate_pairs(
            x[en[:, 0]],
            x[en[:, 1]],
            self.contact_first,
            self.contact_second,
            cutoff,
            self.n_contact_candidates,
        )

    def contact_energy(self, q, aux):
        """Total IMC contact energy [J] (floors and rod-rod) of configuration ``q`` ``(R, 4)``."""
        x = q[: self.n_nodes, :3]
        e = jnp.zeros((), dtype=q.dtype)
        for c in self.contacts:
            if isinstance(c, RodRodContact):
                r = self._per_edge(lambda rod: rod.radius)
                C = r[aux.pairs.first] + r[aux.pairs.second]
                e = e + edge_contact_energy(
                    x, aux.pairs, C, c.delta, c.stiffness, self.topology.edge_nodes
                )
            else:
                e = e + c.energy(x, self.node_radius())
        return e

    def potential_energy(self, q, aux, t=0.0):
        """Elastic plus contact energy [J]."""
        if not self.contacts:
            return self.elastic_energy(q, aux, t)
        return self.elastic_energy(q, aux, t) + self.contact_energy(q, aux)

    def friction_forces(self, q, v, aux):
        """``(R, 4)`` smooth Coulomb friction forces [N] of all contacts at ``q``, velocity ``v``."""
        M, R = self.n_nodes, self.topology.n_rows
        x, vx = q[:M, :3], v[:M, :3]
        f = jnp.zeros_like(x)
        for c in self.contacts:
            if isinstance(c, RodRodContact):
                r = self._per_edge(lambda rod: rod.radius)
                C = r[aux.pairs.first] + r[aux.pairs.second]
                f = f + edge_contact_friction(
                    x,
                    vx,
                    aux.pairs,
                    C,
                    c.delta,
                    c.stiffness,
                    c.mu,
                    c.nu,
                    self.topology.edge_nodes,
                )
            elif not c.anisotropic or self.topology.chain:  # a chain: the floor's own rod directions
                f = f + c.friction(x, vx, self.node_radius())
            else:  # rod direction at a node: sum of the incident edge tangents, in the plane
                en = self.topology.edge_nodes
                te = edge_tangents(q, self.topology)
                tn = jnp.zeros_like(x).at[en[:, 0]].add(te).at[en[:, 1]].add(te)
                n = c.normal
                tn = tn - jnp.sum(tn * n, axis=-1, keepdims=True) * n
                tn = tn / jnp.maximum(
                    jnp.linalg.norm(tn, axis=-1, keepdims=True), 1e-30
                )
                u = vx - jnp.sum(vx * n, axis=-1, keepdims=True) * n
                fn = c.normal_forces(x, self.node_radius())
                f = f + c.anisotropic_friction(u, fn, tn)
        return _pad_rows(f, M, R, self.topology.chain)

    def has_newton_step_limit(self) -> bool:
        """True with a floor contact (its friction limits the Newton step)."""
        return any(isinstance(c, FloorContact) for c in self.contacts)

    def newton_step_limit(self, q, v, dq, dv, aux):
        """Step fraction keeping floor friction from overshooting through sticking
        (:meth:`~jaxrod.models.der.contact.FloorContact.step_limit`); ``None`` without floors."""
        floors = [c for c in self.contacts if isinstance(c, FloorContact)]
        if not floors:
            return None
        M = self.n_nodes
        x, r = q[:M, :3], self.node_radius()
        return jnp.min(jnp.stack([c.step_limit(x, v[:M, :3], dv[:M, :3], r) for c in floors]))

    def _set_contacts(self, contacts):
        if isinstance(contacts, (FloorContact, RodRodContact)):
            contacts = (contacts,)
        contacts = tuple(contacts)
        rod_contacts = []
        for k, c in enumerate(contacts):
            if not isinstance(c, (FloorContact, RodRodContact)):
                raise TypeError(
                    f"contacts[{k}] must be a FloorContact or RodRodContact, got {type(c).__name__}"
                )
            if isinstance(c, RodRodContact):
                rod_contacts.append(c)
        if len(rod_contacts) > 1:
            raise ValueError(
                f"at most one RodRodContact per DERNetwork, got {len(rod_contacts)}"
            )
        self.contacts = contacts
        self.contact_first = self.contact_second = None
        self.n_contact_candidates = 0
        topo = self.topology
        if rod_contacts:
            c = rod_contacts[0]
            edge_limb = np.concatenate(
                [np.full(limb.n_nodes - 1, i) for i, limb in enumerate(self.limbs)]
            )
            first, second = _edge_graph_pairs(
                np.asarray(topo.edge_nodes),
                edge_limb,
                c.exclude_neighbours,
                not c.self_contact,
            )
            if first.size == 0:
                raise ValueError(
                    "RodRodContact: no edge pair of the network is at least "
                    f"{c.exclude_neighbours} edges apart{'' if c.self_contact else ' across limbs'}"
                )
            k = 4 * topo.n_edges if c.max_candidates is None else c.max_candidates
            self.contact_first, self.contact_second = (
                jnp.asarray(first),
                jnp.asarray(second),
            )
            self.n_contact_candidates = max(1, min(int(k), int(first.size)))
        if is_traced(self.q0) or any(is_traced(limb.radius) for limb in self.limbs):
            return
        x = jnp.asarray(self.q0)[: topo.n_nodes, :3]
        for k, c in enumerate(contacts):
            if is_traced(c.delta):
                continue
            delta = float(np.asarray(c.delta))
            if isinstance(c, FloorContact):
                c.check_initial_overlap(x, self.node_radius(), index=k, body="structure")
            else:
                en = np.asarray(topo.edge_nodes)
                f, g = np.asarray(self.contact_first), np.asarray(self.contact_second)
                D = np.asarray(
                    segment_distance(
                        x[en[f, 0]], x[en[f, 1]], x[en[g, 0]], x[en[g, 1]]
                    )[0]
                )
                r = np.asarray(self._per_edge(lambda rod: rod.radius))
                bad = np.flatnonzero(D < r[f] + r[g] - delta)
                if bad.size:
                    pairs = list(
                        zip(f[bad][:5].tolist(), g[bad][:5].tolist(), strict=True)
                    )
                    raise ValueError(
                        f"initial overlap: edge pairs {pairs} (global edge ids) are closer than h_i + h_j - delta "
                        f"(min distance {D.min():.3g} m); rod-rod contact needs a non-overlapping start"
                    )

    def with_load_factor(self, s):
        """Copy with all external loads (gravity, point, distributed, ``force_fn``) scaled by ``s``."""
        return eqx.tree_at(lambda m: m.load_factor, self, jnp.asarray(s, dtype=float))

    def total_energy(self, q, v, aux, t=0.0):
        """Kinetic + elastic (+ contact) energy [J] (potential of gravity and loads not included)."""
        return 0.5 * jnp.sum(
            self.mass() * v * v * ~self.fixed_mask()
        ) + self.potential_energy(q, aux, t)

    def limb_positions(self, positions, limb: int):
        """``(..., N_l, 3)`` positions of limb ``limb``'s nodes from ``(..., M, 3)`` positions."""
        return positions[..., self.limb_node_indices(limb), :]


@eqx.filter_jit
def _joint_rest_data(points, topo: NetworkTopology):
    """From the limbs' stacked rest points: the stencil twist offsets ``(S,)`` (the rest reference
    twist of the joint stencils, 0 on limb stencils) and the rest curvature ``(S_j, 2)`` and twist
    ``(S_j,)`` of the joint stencils (theta = 0)."""
    q = (
        jnp.zeros((topo.n_rows, 4))
        .at[: topo.n_nodes, :3]
        .set(points[np.asarray(topo.node_source)])
    )
    frames = network_initial_frames(q, topo)
    topo = eqx.tree_at(lambda t: t.stencil_twist_offset, topo, frames.ref_twist)
    kin = kinematics(q, frames, topo)
    s = slice(topo.n_limb_stencils, topo.n_stencils)
    return (
        frames.ref_twist,
        jnp.stack([kin.kappa1[s], kin.kappa2[s]], axis=-1),
        kin.twist[s],
    )


# --- the single rod: a constructor of the one-limb network ---------------------------------


def _index_tuple(name, idx, n, what):
    out = check_int_sequence(name, idx)
    for i in out:
        if not (-n <= i < n):
            raise ValueError(f"{name}: {what} index {i} does not exist (valid: 0..{n - 1} or negative from the end)")
    return tuple(sorted({i % n for i in out}))


class DERModel(DERNetwork):
    """A discrete elastic rod with loads and boundary conditions: the one-limb
    :class:`~jaxrod.models.der.model.DERNetwork` (same state layout, physics and attributes),
    built from one :class:`DERRod` with indices along that rod.

    Attributes (besides the network's, of which the ones below are the single-rod reading):
        rod: the :class:`DERRod` (geometry, material, natural curvature); ``limbs[0]``.
        gravity: ``(3,)`` gravitational acceleration [m/s^2].
        damping: viscous damping coefficient eta [N s/m^2]: force ``-eta V_i v_i`` on node ``i``.
        point_forces: ``(N, 3)`` constant forces on nodes [N].
        distributed_force: ``(3,)`` force per unit rest length [N/m], lumped on nodes.
        force_fn: optional ``f(t) -> (N, 3)`` time-dependent nodal forces [N] (static callable).
        q0: ``(N, 4)`` initial configuration (default: rest shape, zero twist).
        v0: ``(N, 4)`` initial velocity [m/s, rad/s].
        fixed_nodes: indices of nodes whose positions are prescribed.
        fixed_edges: indices of edges whose twist angle is prescribed.
        motion: optional plain callable ``m(t) -> (N, 4)`` prescribed values at time ``t`` (only
            entries of fixed DOFs are used; twist angles relative to the moving reference frame);
            default: the fixed DOFs keep their values from ``q0``. A static field: every new
            function recompiles. Pass data instead (``motion=SampledMotion(times, values)`` or
            any ``eqx.Module`` callable): it is stored in ``motion_data`` as array leaves.
        motion_data: the ``eqx.Module`` given as ``motion`` (traced: one compiled program serves
            every trial), or ``None``.
        clamps: tuple of :class:`~jaxrod.models.der.ClampMotion`: measured clamp poses (clamp
            point and absolute material-frame orientation per sample time) of clamped edges. Each
            fixes its edge's two nodes and twist; these values override ``motion``/``q0``. With
            ``q0=None`` the clamped edges' twist angles start at the clamps' first orientation;
            a given ``q0`` must agree with the first pose. See :mod:`jaxrod.models.der.motion`.
        contacts: tuple of :class:`~jaxrod.models.der.contact.FloorContact` (any number) and at
            most one :class:`~jaxrod.models.der.contact.RodRodContact` (self-contact). Their
            energies join the elastic energy (:meth:`contact_energy`), their friction forces
            (:meth:`friction_forces`) join the external forces in :meth:`residual`, with the
            implicit step's velocity. With self-contact, ``aux`` is a :class:`ContactAux` (frames
            plus the candidate pairs, refreshed after every step) and the default linear solver is
            dense. ``()`` (default): exactly the contact-free model.
        tendons: tuple of :class:`~jaxrod.actuation.tendons.Tendon` anchored at their
            termination (``None``: the tip; :mod:`jaxrod.models.der.actuation`): loads
            ``-tau(t) dl/dq`` of each routed cable's length ``l``, scaled by ``load_factor``; arc
            length from the midpoint of edge 0.
        chambers: tuple of pressure-controlled chambers along the whole rod
            (:class:`~jaxrod.actuation.chambers.Chamber`: offset ``(2,)`` [m] in the
            ``(m1, m2)`` section plane, cap ``area`` A [m^2], gauge pressure
            ``pressure_at(t)`` [Pa] at time ``t`` [s]). A chamber's volume is
            ``A l``, ``l`` the length of its channel polyline (a straight tendon's, to the tip), so
            the pressure's work gives the generalised force ``+P A dl/dq``: the tendon force with
            ``tau = -P A`` (spec 7.3: cap force ``P A`` and moment ``P A r x e3`` at the tip, the
            distributed loads of eq. 18).
        natural_curvature_fn: optional ``eqx.Module`` callable ``f(t, kappa_bar (N-2, 2)) ->
            (N-2, 2)``: the natural curvature used at time ``t`` [s] from the stored
            ``rod.natural_curvature`` (curvature actuation, e.g.
            :class:`~jaxrod.models.der.waves.CurvatureWave` or :class:`~jaxrod.signals.LinearRamp`).
            Its array leaves are traced: new wave parameters never recompile and are
            differentiable. ``None`` (default): the stored natural curvature at all times.

    Raises:
        ValueError: on invalid inputs, and when ``q0`` already penetrates a floor or the rod itself
            by more than the contact tolerance ``delta`` (the IMC energy would then push with
            a force of order ``k_c C``; start the rod on or above the surface instead). Contacts
            within ``delta`` of the surface at ``q0`` are accepted.
    """

    def __init__(
        self,
        rod: DERRod,
        *,
        gravity=(0.0, 0.0, 0.0),
        damping=0.0,
        point_forces=None,
        distributed_force=(0.0, 0.0, 0.0),
        force_fn=None,
        clamped_edges=(),
        fixed_nodes=(),
        fixed_edges=(),
        motion=None,
        q0=None,
        v0=None,
        load_factor=1.0,
        contacts=(),
        clamps=(),
        tendons=(),
        chambers=(),
        section_radius=None,
        natural_curvature_fn=None,
    ):
        """Build a model; see the class docstring. ``clamped_edges=(i,)`` fixes nodes ``i, i+1`` and
        the twist of edge ``i`` (a clamped end); negative indices count from the end. The clamp acts
        at the clamped edge's midpoint: build the rod with :meth:`DERRod.cantilever` to put it at
        the end of the free length (clamping edge 0 of ``DERRod.straight(n, L)`` shortens the
        beam by ``dl/2``: a tip load deflects it 14.5% less than ``P L^3 / (3 EI)`` at 11 nodes)."""
        check_type("rod", rod, DERRod, "DERRod (e.g. DERRod.straight(...))")
        n = rod.n_nodes
        if q0 is not None:
            check_shape("q0", q0, (n, 4))
            check_polyline("q0 (node positions)", q0)
        # the single rod's index and contact messages (the network's name (limb, index) pairs)
        ce = _index_tuple("clamped_edges", clamped_edges, n - 1, "edge")
        nodes = _index_tuple("fixed_nodes", fixed_nodes, n, "node")
        tw = _index_tuple("fixed_edges", fixed_edges, n - 1, "edge")
        _check_contacts(contacts, rod, q0)
        if natural_curvature_fn is not None and not (
            isinstance(natural_curvature_fn, eqx.Module) and callable(natural_curvature_fn)
        ):
            raise ValueError(
                "natural_curvature_fn must be a callable eqx.Module f(t, kappa_bar) -> (N-2, 2) "
                f"(e.g. CurvatureWave or LinearRamp), got {type(natural_curvature_fn).__name__}"
            )
        super().__init__(
            (rod,),
            gravity=gravity,
            damping=damping,
            point_forces=point_forces,
            distributed_force=distributed_force,
            force_fn=force_fn,
            clamped_edges=[(0, e) for e in ce],
            fixed_nodes=[(0, i) for i in nodes],
            fixed_edges=[(0, e) for e in tw],
            motion=motion,
            q0=q0,
            v0=v0,
            natural_curvature_fn=natural_curvature_fn,
            contacts=contacts,
            load_factor=load_factor,
            clamps=clamps,
            tendons=tendons,
            chambers=chambers,
            section_radius=section_radius,
        )

    @property
    def rod(self) -> DERRod:
        """The rod: the network's only limb."""
        return self.limbs[0]


def _check_contacts(contacts, rod, q0):
    """Raises on wrong contact types, several self-contacts, a rod too short for self-contact, or
    an initial penetration deeper than ``delta`` (with the single rod's messages)."""
    if isinstance(contacts, (FloorContact, RodRodContact)):
        contacts = (contacts,)
    contacts = tuple(contacts)
    n_self = 0
    for k, c in enumerate(contacts):
        if not isinstance(c, (FloorContact, RodRodContact)):
            raise ValueError(f"contacts[{k}] must be a FloorContact or RodRodContact, got {type(c).__name__}")
        if isinstance(c, RodRodContact):
            n_self += 1
            if not c.self_contact:
                raise ValueError(
                    "a DERModel is one rod: RodRodContact(self_contact=False) needs a multi-rod model; "
                    "use self_contact=True"
                )
            if c.pairs(rod.n_nodes)[0].size == 0:
                raise ValueError(
                    f"self-contact needs edges at least {c.exclude_neighbours} apart: a rod of {rod.n_nodes} "
                    "nodes has none"
                )
    if n_self > 1:
        raise ValueError(f"at most one RodRodContact per DERModel, got {n_self}")
    if q0 is None:
        q0 = rod.rest_positions
    if is_traced(q0) or is_traced(rod.radius):
        return
    x = np.asarray(q0)[:, :3]
    h = float(np.asarray(rod.radius))
    for k, c in enumerate(contacts):
        if is_traced(c.delta):
            continue
        delta = float(np.asarray(c.delta))
        if isinstance(c, FloorContact):
            c.check_initial_overlap(x, h, index=k, body="rod")
        else:
            D, first, second = c.min_distances(x)
            bad = np.flatnonzero(D < 2 * h - delta)
            if bad.size:
                pairs = list(zip(first[bad][:5].tolist(), second[bad][:5].tolist(), strict=True))
                raise ValueError(
                    f"initial overlap: edge pairs {pairs} of the rod are closer than 2h - delta = "
                    f"{2 * h - delta:.3g} m (min distance {D.min():.3g} m); self-contact needs a "
                    "non-overlapping start"
                )


def first_mode_velocity(rod: DERRod, tip_speed, direction=(0.0, 0.0, 1.0), *, s=None, length=None):
    """``(N, 4)`` initial velocity shaped as the first clamped-free Euler-Bernoulli mode
    ``psi_1(s)/psi_1(L)`` times ``tip_speed`` [m/s] along ``direction`` (DisMech's cantilever).

    Args:
        s: ``(N,)`` distance of each node from the clamp [m] (default: rest arc length from node 0).
        length: cantilever length L [m] (default: ``s[-1]``).
    """
    if s is None:
        s = np.concatenate([[0.0], np.cumsum(np.asarray(rod.rest_lengths))])
    s = np.asarray(s, dtype=float)
    L = float(s[-1] if length is None else length)
    bl = 1.8751040687119611
    b = bl / L
    sigma = (np.cosh(bl) + np.cos(bl)) / (np.sinh(bl) + np.sin(bl))

    def psi(x):
        return np.cosh(b * x) - np.cos(b * x) - sigma * (np.sinh(b * x) - np.sin(b * x))

    vel = float(tip_speed) * (psi(s) / psi(L))[:, None] * np.asarray(direction, dtype=float)[None, :]
    return jnp.concatenate([jnp.asarray(vel), jnp.zeros((rod.n_nodes, 1))], axis=1)
