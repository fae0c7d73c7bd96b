"""DER dynamics: the :class:`DERModel` (a rod, its loads and boundary conditions) and its
equation of motion ``M q'' + grad E(q) - F_ext(q, q', t) = 0``.

State layout: ``q`` is ``(N, 4)``: columns 0-2 node positions [m], column 3 the twist angle of
edge ``i`` [rad] (row ``N-1`` column 3 is a padding DOF, always fixed). Flattened, this is
DisMech's interleaved ``[x_0, theta^0, x_1, ..., x_{N-1}]`` plus one padding entry, and every
bending/twisting stencil couples 11 consecutive entries, so the Jacobian is banded with 10 sub-
and super-diagonals; it is built from 21 coloured JVPs and solved in O(N).

Contact (:mod:`jaxrod.models.der.contact`): floor contacts keep the band (each acts on one node);
self-contact couples distant nodes, and the model then defaults to a dense Jacobian.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...integrate.base import jit_when_eager
from ...solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver
from ...validation import (
    one_or_many,
    check_positive,
    check_type,
    check_finite,
    check_finite_scalar,
    check_int_sequence,
    check_polyline,
    check_shape,
    is_traced,
)
from ...integrate.implicit import AbstractImplicitModel, State
from .contact import CandidatePairs, FloorContact, RodRodContact
from .energies import bending_energy, stretching_energy, twisting_energy
from .frames import (
    ReferenceFrames,
    edges,
    initial_frames,
    kinematics,
    material_directors,
    transport_directors,
    update_frames,
)
from ...signals import interp_linear
from .motion import MIN_AXIS_COSINE, ClampMotion
from .rod import DERRod
from .actuation import node_arclengths, tendon_length

#: Half-bandwidth of the DER Jacobian in the flattened (N, 4) layout.
DER_BANDWIDTH = 10


class ContactAux(eqx.Module):
    """Reference data of a :class:`DERModel` with self-contact: the reference frames and the
    candidate edge pairs for the next step (refreshed after every converged step).

    Attributes:
        frames: :class:`~jaxrod.models.der.ReferenceFrames`.
        pairs: :class:`~jaxrod.models.der.contact.CandidatePairs`.
    """

    frames: ReferenceFrames
    pairs: CandidatePairs


def _frames(aux):
    return aux.frames if isinstance(aux, ContactAux) else aux


def _index_tuple(name, idx, n, what):
    out = check_int_sequence(name, idx)
    for i in out:
        if not (-n <= i < n):
            raise ValueError(f"{name}: {what} index {i} does not exist (valid: 0..{n - 1} or negative from the end)")
    return tuple(sorted({i % n for i in out}))


class DERModel(AbstractImplicitModel):
    """A discrete elastic rod with loads and boundary conditions.

    Attributes:
        rod: the :class:`DERRod` (geometry, material, natural curvature).
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
        section_radius: radius [m] holding the tendon channels and the chambers (default: the
            rod radius).
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

    rod: DERRod
    gravity: jax.Array
    damping: jax.Array
    point_forces: jax.Array
    distributed_force: jax.Array
    q0: jax.Array
    v0: jax.Array
    fixed_nodes: tuple = eqx.field(static=True, default=())
    fixed_edges: tuple = eqx.field(static=True, default=())
    force_fn: Callable | None = eqx.field(static=True, default=None)
    motion: Callable | None = eqx.field(static=True, default=None)
    load_factor: jax.Array = 1.0
    contacts: tuple = ()
    motion_data: eqx.Module | None = None
    clamps: tuple = ()
    tendons: tuple = ()
    chambers: tuple = ()
    natural_curvature_fn: eqx.Module | None = None

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
        check_finite_scalar("load_factor", load_factor)
        if section_radius is not None:
            check_finite_scalar("section_radius", section_radius, "m")
            check_positive("section_radius", section_radius, "m")
        if q0 is not None:
            check_shape("q0", q0, (rod.n_nodes, 4))
            check_polyline("q0 (node positions)", q0)
        n = rod.n_nodes
        self.rod = rod
        self.gravity = jnp.asarray(gravity, dtype=float)
        check_shape("gravity", self.gravity, (3,))
        check_finite("gravity", self.gravity)
        self.damping = jnp.asarray(damping, dtype=float)
        if not is_traced(self.damping):
            check_finite("damping", self.damping)
            if np.any(np.asarray(self.damping) < 0):
                raise ValueError(f"damping must be >= 0 N s/m^2, got {damping}")
        self.point_forces = jnp.zeros((n, 3)) if point_forces is None else jnp.asarray(point_forces, dtype=float)
        check_shape("point_forces", self.point_forces, (n, 3))
        check_finite("point_forces", self.point_forces)
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
                "motion must be a callable t -> (N, 4) or an eqx.Module (e.g. SampledMotion), "
                f"got {type(motion).__name__}"
            )
        self.clamps = _check_clamps(clamps, n)
        default_q0 = q0 is None
        if q0 is None:
            q0 = jnp.concatenate([rod.rest_positions, jnp.zeros((n, 1))], axis=1)
        self.q0 = jnp.asarray(q0, dtype=float)
        check_shape("q0", self.q0, (n, 4))
        check_finite("q0", self.q0)
        self.v0 = jnp.zeros((n, 4)) if v0 is None else jnp.asarray(v0, dtype=float)
        check_shape("v0", self.v0, (n, 4))
        check_finite("v0", self.v0)
        ce = _index_tuple("clamped_edges", clamped_edges, n - 1, "edge")
        nodes = set(_index_tuple("fixed_nodes", fixed_nodes, n, "node"))
        tw = set(_index_tuple("fixed_edges", fixed_edges, n - 1, "edge"))
        for e in ce + tuple(c.edge_index(n - 1) for c in self.clamps):
            nodes |= {e, e + 1}
            tw.add(e)
        self.fixed_nodes = tuple(sorted(nodes))
        self.fixed_edges = tuple(sorted(tw))
        self.load_factor = jnp.asarray(load_factor, dtype=float)
        self.contacts = _check_contacts(contacts, rod, self.q0)
        self.tendons = _check_der_tendons(tendons, rod, section_radius)
        self.chambers = _check_der_chambers(chambers, rod, section_radius)
        if self.clamps:
            self.q0 = self._clamp_start(default_q0)
        if natural_curvature_fn is not None and not (
            isinstance(natural_curvature_fn, eqx.Module) and callable(natural_curvature_fn)
        ):
            raise ValueError(
                "natural_curvature_fn must be a callable eqx.Module f(t, kappa_bar) -> (N-2, 2) "
                f"(e.g. CurvatureWave or LinearRamp), got {type(natural_curvature_fn).__name__}"
            )
        self.natural_curvature_fn = natural_curvature_fn

    # ---- AbstractImplicitModel ------------------------------------------------------------
    def fixed_mask(self):
        n = self.rod.n_nodes
        m = np.zeros((n, 4), dtype=bool)
        m[list(self.fixed_nodes), :3] = True
        m[list(self.fixed_edges), 3] = True
        m[n - 1, 3] = True  # padding DOF
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
        ref = initial_frames(self.q0[:, :3])
        for c, (nodes, theta) in zip(self.clamps, self._clamp_samples(ref), strict=True):
            e = c.edge_index(self.rod.n_nodes - 1)
            x = interp_linear(c.times, nodes, t)
            q = q.at[e : e + 2, :3].set(x).at[e, 3].set(interp_linear(c.times, theta, t))
        return q

    def _clamp_samples(self, ref):
        """Per clamp: ``(T, 2, 3)`` node positions [m] and ``(T,)`` twist angles [rad] at its
        sample times, the angles offset by whole turns to continue ``q0``'s angle."""
        out = []
        for c in self.clamps:
            e = c.edge_index(self.rod.n_nodes - 1)
            ang = c.sample_angles(ref.d1[e], ref.tangent[e])
            turns = jnp.round((self.q0[e, 3] - ang[0]) / (2 * jnp.pi))
            out.append((c.node_positions(self.rod.rest_lengths[e]), ang + 2 * jnp.pi * turns))
        return out

    def _clamp_start(self, default_q0):
        """``q0`` with the clamped edges' twist set from the clamps' first orientation (when ``q0``
        was not given); checks that ``q0`` agrees with every clamp's first pose."""
        q0 = self.q0
        ref = initial_frames(q0[:, :3])
        n_edges = self.rod.n_nodes - 1
        for k, c in enumerate(self.clamps):
            e = c.edge_index(n_edges)
            ang = c.sample_angles(ref.d1[e], ref.tangent[e])
            if default_q0:
                q0 = q0.at[e, 3].set(ang[0])
            if any(is_traced(x) for x in (q0, c.orientations, c.positions, self.rod.rest_positions)):
                continue
            axis_cos = np.asarray(c.orientations[:, :, 2] @ ref.tangent[e])
            if axis_cos.min() < MIN_AXIS_COSINE:
                j = int(np.argmin(axis_cos))
                raise ValueError(
                    f"clamps[{k}] (edge {e}): the clamp axis at sample {j} is "
                    f"{np.degrees(np.arccos(np.clip(axis_cos[j], -1, 1))):.1f} deg from its direction at q0; "
                    f"clamped edges may turn at most {np.degrees(np.arccos(MIN_AXIS_COSINE)):.0f} deg away "
                    "from their initial direction (the reference frame is the minimal rotation from it)"
                )
            nodes = np.asarray(c.node_positions(self.rod.rest_lengths[e])[0])
            gap = np.abs(nodes - np.asarray(q0[e : e + 2, :3])).max()
            tol = 1e-6 * float(np.asarray(self.rod.rest_lengths[e]))
            if gap > tol:
                raise ValueError(
                    f"clamps[{k}] (edge {e}): the first pose puts the edge's nodes {gap:.3g} m away from "
                    f"q0 (nodes {e}, {e + 1}); q0 must start in the first clamp pose (node positions "
                    "ClampMotion.node_positions(rest_length)[0]: the clamp point is the edge's midpoint)"
                )
            dth = float(np.asarray(q0[e, 3] - ang[0]))
            dth = (dth + np.pi) % (2 * np.pi) - np.pi
            if abs(dth) > 1e-6:
                raise ValueError(
                    f"clamps[{k}] (edge {e}): q0's twist angle of the edge differs from the clamp's first "
                    f"orientation by {dth:.3g} rad; set q0[{e}, 3] = {float(ang[0]):.6g} or leave q0=None"
                )
        return q0

    def init_aux(self, q):
        frames = self._pin_clamp_frames(initial_frames(q[:, :3]))
        if self._self_contact is None:
            return frames
        return ContactAux(frames, self._self_contact.candidates(q[:, :3], self.rod.radius))

    def update_aux(self, q, aux):
        if self._self_contact is None:
            return self._pin_clamp_frames(update_frames(q, aux))
        frames = self._pin_clamp_frames(update_frames(q, aux.frames))
        return ContactAux(frames, self._self_contact.candidates(q[:, :3], self.rod.radius))

    def _pin_clamp_frames(self, frames):
        """Reference frames with every clamped edge's director and tangent reset to those at
        ``q0``: the edge's reference director is then always the minimal rotation of its director
        at ``q0`` to its current tangent (see :mod:`~jaxrod.models.der.motion`), so a clamp's
        absolute orientation fixes its twist angle from the time alone."""
        if not self.clamps:
            return frames
        ref = initial_frames(self.q0[:, :3])
        idx = jnp.asarray([c.edge_index(self.rod.n_nodes - 1) for c in self.clamps])
        return ReferenceFrames(
            frames.d1.at[idx].set(ref.d1[idx]), frames.tangent.at[idx].set(ref.tangent[idx]), frames.ref_twist
        )

    def default_linear_solver(self):
        """Banded (half-bandwidth 10) without self-contact; dense with it (contacts couple distant
        nodes)."""
        if self._self_contact is not None:
            return DenseJacobianSolver()
        return BandedJacobianSolver(lower=DER_BANDWIDTH, upper=DER_BANDWIDTH)

    @jit_when_eager
    def initial_state(self) -> State:
        return State(self.q0, self.v0, self.init_aux(self.q0))

    @jit_when_eager
    def observe(self, q, v, aux):
        aux = _frames(aux)
        _, _, t = edges(q[:, :3])
        d1, d2 = transport_directors(aux.d1, aux.tangent, t)
        m1, m2 = material_directors(d1, d2, q[:-1, 3])
        return {"positions": q[:, :3], "frames": jnp.stack([m1, m2, t], axis=-2), "twist": q[:-1, 3]}

    # ---- physics ---------------------------------------------------------------------------
    def mass(self):
        """``(N, 4)`` lumped mass [kg] on positions and twist inertia [kg m^2] on angles."""
        rod = self.rod
        m = rod.node_masses()
        inertia = jnp.concatenate([rod.edge_twist_inertia(), jnp.ones(1)])
        return jnp.concatenate([jnp.repeat(m[:, None], 3, axis=1), inertia[:, None]], axis=1)

    def natural_curvature_at(self, t):
        """``(N-2, 2)`` natural curvature used at time ``t`` [s] (after ``natural_curvature_fn``)."""
        kb = self.rod.natural_curvature
        if self.natural_curvature_fn is None:
            return kb
        return jnp.asarray(self.natural_curvature_fn(t, kb), dtype=kb.dtype)

    def elastic_energy(self, q, aux: ReferenceFrames, t=0.0):
        """Total elastic energy [J] of configuration ``q`` ``(N, 4)`` at time ``t`` [s] (the
        natural curvature may depend on time)."""
        rod = self.rod
        kin = kinematics(q, _frames(aux))
        v_int = rod.voronoi_lengths[1:-1]
        return (
            stretching_energy(kin, rod.rest_lengths, rod.EA)
            + bending_energy(kin, self.natural_curvature_at(t), v_int, rod.EI)
            + twisting_energy(kin, rod.natural_twist, v_int, rod.GJ)
        )

    def external_forces(self, q, v, t):
        """``(N, 4)`` generalised external forces [N, N m]: gravity, loads, viscous damping."""
        rod = self.rod
        vor = rod.voronoi_lengths
        f = self.load_factor * (
            rod.node_masses()[:, None] * self.gravity[None, :]
            + self.point_forces
            + vor[:, None] * self.distributed_force[None, :]
        )
        if self.force_fn is not None:
            f = f + self.load_factor * jnp.asarray(self.force_fn(t), dtype=float)
        f = f - self.damping * vor[:, None] * v[:, :3]
        return jnp.concatenate([f, jnp.zeros((q.shape[0], 1), dtype=f.dtype)], axis=1)

    @property
    def _self_contact(self):
        for c in self.contacts:
            if isinstance(c, RodRodContact):
                return c
        return None

    def contact_energy(self, q, aux):
        """Total IMC contact energy [J] (floors and self-contact) of configuration ``q`` ``(N, 4)``."""
        x, h = q[:, :3], self.rod.radius
        e = jnp.zeros((), dtype=q.dtype)
        for c in self.contacts:
            e = e + (c.energy(x, h, aux.pairs) if isinstance(c, RodRodContact) else c.energy(x, h))
        return e

    def potential_energy(self, q, aux, t=0.0):
        """Elastic plus contact energy [J] at time ``t`` [s] (the part of the forces that has a
        potential here; gravity and applied loads are in :meth:`external_forces`)."""
        if not self.contacts:
            return self.elastic_energy(q, aux, t)
        return self.elastic_energy(q, aux, t) + self.contact_energy(q, aux)

    def friction_forces(self, q, v, aux):
        """``(N, 4)`` smooth Coulomb friction forces [N] of all contacts at configuration ``q`` and
        velocity ``v`` (the implicit step's velocity); normal forces from the contact energies."""
        x, vx, h = q[:, :3], v[:, :3], self.rod.radius
        f = jnp.zeros_like(x)
        for c in self.contacts:
            f = f + (c.friction(x, vx, h, aux.pairs) if isinstance(c, RodRodContact) else c.friction(x, vx, h))
        return jnp.concatenate([f, jnp.zeros((q.shape[0], 1), dtype=f.dtype)], axis=1)

    def newton_step_limit(self, q, v, dq, dv, aux):
        """Step fraction keeping floor friction from overshooting through sticking
        (:meth:`~jaxrod.models.der.contact.FloorContact.step_limit`); ``None`` without floors."""
        floors = [c for c in self.contacts if isinstance(c, FloorContact)]
        if not floors:
            return None
        x, h = q[:, :3], self.rod.radius
        return jnp.min(jnp.stack([c.step_limit(x, v[:, :3], dv[:, :3], h) for c in floors]))

    def tendon_forces(self, q, t, aux):
        """``(N, 4)`` generalised forces of the tendons, ``-tau(t) dl/dq``, and of the chambers,
        ``+P(t) A dl/dq`` (zero without either)."""
        from ...actuation.tendons import StraightRouting

        pulls = [(td.routing, td.termination, td.tension_at(t)) for td in self.tendons] + [
            (StraightRouting(ch.offset), None, -ch.area * ch.pressure_at(t)) for ch in self.chambers
        ]
        f = jnp.zeros_like(q)
        for routing, termination, pull in pulls:
            dl = jax.grad(tendon_length)(q, _frames(aux), self.rod.rest_lengths, routing, termination)
            f = f - self.load_factor * pull * dl
        return f

    def residual(self, q, v, a, t, aux):
        tendons = self.tendon_forces(q, t, aux) if self.tendons or self.chambers else 0.0
        if not self.contacts:
            grad_e = jax.grad(self.elastic_energy)(q, aux, t)
            return self.mass() * a + grad_e - self.external_forces(q, v, t) - tendons
        grad_e = jax.grad(self.potential_energy)(q, aux, t)
        return self.mass() * a + grad_e - self.external_forces(q, v, t) - self.friction_forces(q, v, aux) - tendons

    def with_load_factor(self, s):
        """Copy with all external loads (gravity, point, distributed, ``force_fn``) scaled by ``s``."""
        return eqx.tree_at(lambda m: m.load_factor, self, jnp.asarray(s, dtype=float))

    def total_energy(self, q, v, aux):
        """Kinetic + elastic (+ contact) energy [J] (potential of gravity and loads not included)."""
        return 0.5 * jnp.sum(self.mass() * v * v * ~self.fixed_mask()) + self.potential_energy(q, aux)


def _check_der_tendons(tendons, rod: DERRod, section_radius):
    from ...actuation.tendons import check_tendons, check_tension_controlled

    tendons = one_or_many(tendons)
    check_tension_controlled(tendons, "DER")
    if tendons and not is_traced(rod.rest_lengths):
        s_node = np.asarray(node_arclengths(rod.rest_lengths))
        radius = rod.radius if section_radius is None else section_radius
        check_tendons(tendons, float(s_node[-1]), radius, np.append(0.5 * (s_node[1:] + s_node[:-1]), s_node[-1]))
    return tendons


def _check_der_chambers(chambers, rod: DERRod, section_radius):
    from ...actuation.chambers import check_chambers

    chambers = one_or_many(chambers)
    check_chambers(chambers, rod.radius if section_radius is None else section_radius, pressure_only="DER")
    return chambers


def _check_clamps(clamps, n):
    """Validated tuple of :class:`ClampMotion` (at most one per edge)."""
    if isinstance(clamps, ClampMotion):
        clamps = (clamps,)
    clamps = tuple(clamps)
    seen = {}
    for k, c in enumerate(clamps):
        if not isinstance(c, ClampMotion):
            raise ValueError(f"clamps[{k}] must be a ClampMotion, got {type(c).__name__}")
        e = c.edge_index(n - 1)
        if e in seen:
            raise ValueError(f"clamps[{seen[e]}] and clamps[{k}] both hold edge {e}; give one pose per edge")
        seen[e] = k
    return clamps


def _check_contacts(contacts, rod, q0):
    """Validated tuple of contacts; raises on wrong types, several self-contacts, a rod too short
    for self-contact, or an initial penetration deeper than ``delta``."""
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
    if is_traced(q0) or is_traced(rod.radius):
        return contacts
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
    return contacts


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
