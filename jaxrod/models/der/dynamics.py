"""The single discrete elastic rod: :class:`DERModel`, a constructor of the one-limb
:class:`~jaxrod.models.der.network.DERNetwork` (one DER code path: the network's stencil
kinematics, energies, contact, clamps, tendons and chambers), and :func:`first_mode_velocity`.

State layout: ``q`` is ``(N, 4)``: columns 0-2 node positions [m], column 3 the twist angle of
edge ``i`` [rad] (row ``N-1`` column 3 is a padding DOF, always fixed). Flattened, this is
DisMech's interleaved ``[x_0, theta^0, x_1, ..., x_{N-1}]`` plus one padding entry, and every
bending/twisting stencil couples 11 consecutive entries, so the Jacobian is banded with 10 sub-
and super-diagonals; it is built from 21 coloured JVPs and solved in O(N).

Contact (:mod:`jaxrod.models.der.contact`): floor contacts keep the band (each acts on one node);
self-contact couples distant nodes, and the model then defaults to a dense Jacobian.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ...validation import check_int_sequence, check_polyline, check_shape, check_type, is_traced
from .contact import FloorContact, RodRodContact
from .network import DERNetwork
from .rod import DERRod

__all__ = ["DERModel", "first_mode_velocity"]


def _index_tuple(name, idx, n, what):
    out = check_int_sequence(name, idx)
    for i in out:
        if not (-n <= i < n):
            raise ValueError(f"{name}: {what} index {i} does not exist (valid: 0..{n - 1} or negative from the end)")
    return tuple(sorted({i % n for i in out}))


class DERModel(DERNetwork):
    """A discrete elastic rod with loads and boundary conditions: the one-limb
    :class:`~jaxrod.models.der.network.DERNetwork` (same state layout, physics and attributes),
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
