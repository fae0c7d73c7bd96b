"""Set-valued (non-smooth) contact of rigid bodies: spheres on planes and boxes, with Signorini normal
contact, spatial anisotropic Coulomb friction, rolling friction and Newton impacts, integrated by
Moreau midpoint time stepping (:class:`~jaxrod.integrate.moreau.MoreauStepper`).

A :class:`ContactSystem` wraps a :class:`~jaxrod.system.MultibodySystem` (its bodies, joints,
gravity, loads, springs, dampers and force elements: everything that makes its smooth forces and
its bilateral constraints) and adds body-fixed contact spheres (:class:`SphereContact`) that may
touch fixed obstacles: planes (:class:`Plane`, default the ground ``z = 0``) and boxes
(:class:`Box`). ``jaxrod.simulate(ContactSystem(...), dt=..., n_steps=...)`` runs it and returns
a :class:`~jaxrod.integrate.moreau.ContactTrajectory`.

Coordinates (the paper's non-minimal absolute coordinates, Transeth et al. 2008, eqs. 4-8):
``q`` ``(n_bodies, 7)`` = centre-of-mass position [m] and scalar-first unit quaternion;
``u`` ``(n_bodies, 6)`` = world velocity [m/s] and BODY-frame angular velocity [rad/s]. The mass
matrix ``blockdiag(m I, J_body)`` is constant. Joints are the :class:`~jaxrod.system.MultibodySystem`
joints, taken on velocity level: ``W_J^T u = d/ds g_J(x + s v, R exp(s omega), t)`` by forward
differentiation of the joint constraints, so every joint type of :mod:`jaxrod.system.joints`
(including prescribed motion) works unchanged. Their impulses are eliminated exactly in every sweep
of the contact solver (the paper's Schur complement, see :mod:`jaxrod.integrate.moreau`).

Contact geometry, for a sphere of radius ``r`` whose centre is ``c = x + R s`` and a plane through
``p0`` with unit normal ``n``: gap ``g_N = n . (c - p0) - r``; the contact point is ``C = c - r n``
(the lowest point of the sphere, moving over its surface) and the relative velocities are those
of the BODY-FIXED point coinciding with ``C`` (the paper's remark after eq. 15): for a direction
``e``, ``e . v_C = [e; R^T (rho x e)] . u_b`` with ``rho = C - x``. Friction frame: ``t1`` the
projection on the plane of the sphere's body-fixed principal ``direction`` (the paper's ``e_x^Pi``,
the horizontal projection of the link axis), ``t2 = n x t1`` (if the direction is normal to the
plane, any tangent). Rolling velocity ``gamma_V,k = t_k . (r n x omega_world)`` (paper eq. 33).
Boxes: the normal ``n`` is the direction from the closest point of the box to the sphere centre
and the gap that distance minus ``r`` (inside the box: the nearest face, negative gap); the normal
turns continuously round edges and corners. Every sphere may touch every obstacle: contacts are
numbered planes first (``sphere * n_planes + plane``), then boxes (``n_spheres * n_planes + sphere *
n_boxes + box``); :meth:`ContactSystem.contact_index` does the arithmetic.

Gradients: ``jax.grad``/``jax.jvp`` through a run work; each step's contact solve is
differentiated implicitly at its converged fixed point
(:func:`~jaxrod.integrate.moreau.solve_contact_problem`), not through its iterations. Where the
rigid Coulomb problem has many solutions with different velocities (redundant contacts that slide,
e.g. the snake's two spheres per link), no derivative is defined and the run's result depends on
the solver's path; ``MoreauOptions(compliance=...)`` makes it unique.

What is not here: sphere-sphere and body-body contact, moving obstacles, other shapes, position
correction of penetration (as the paper).
"""

from __future__ import annotations

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import (quat_derivative, quat_from_axis_angle, quat_multiply, quat_to_rotation, rotation_matrix,
                        rotation_to_quat)
from ..integrate.moreau import AbstractMoreauModel, MoreauOptions, MoreauState
from ..validation import one_or_many
from .bodies import _f64
from .multibody import BodyFrames, MultibodySystem


def _vector(owner, name, value, unit, nonzero=False):
    if isinstance(value, jax.core.Tracer):
        return _f64(value)
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.{name} must be 3 finite numbers [{unit}], got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)) or (nonzero and np.linalg.norm(v) < 1e-12):
        what = "a finite non-zero 3-vector" if nonzero else "3 finite numbers"
        raise ValueError(f"{owner}.{name} must be {what} [{unit}], got {np.asarray(value).tolist()!r}")
    return _f64(value)


def _scalar(owner, name, value, unit, lower=0.0, strict=False, upper=None):
    if isinstance(value, jax.core.Tracer):
        return _f64(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.{name} must be a number [{unit}], got {value!r}") from None
    if not np.isfinite(x) or (x <= lower if strict else x < lower) or (upper is not None and x > upper):
        rng = f"{'>' if strict else '>='} {lower:g}" + (f" and <= {upper:g}" if upper is not None else "")
        raise ValueError(f"{owner}.{name} must be a finite number {rng} [{unit}], got {value!r}")
    return _f64(value)


class Plane(eqx.Module):
    """A fixed plane obstacle (the half-space behind it is solid).

    Attributes:
        point: ``(3,)`` a point of the plane, world frame [m] (default the origin).
        normal: ``(3,)`` outward normal (into the free space), any non-zero length; stored unit.
    """

    point: jax.Array
    normal: jax.Array

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)):
        self.point = _vector("Plane", "point", point, "m")
        n = _vector("Plane", "normal", normal, "-", nonzero=True)
        self.normal = n / jnp.linalg.norm(n)


class Box(eqx.Module):
    """A fixed box obstacle (solid).

    Attributes:
        centre: ``(3,)`` box centre, world frame [m].
        half_extents: ``(3,)`` half side lengths along the box axes [m], each > 0.
        orientation: ``(4,)`` scalar-first quaternion of the box axes (box -> world; default the
            world axes); any non-zero quaternion, stored unit.
    """

    centre: jax.Array
    half_extents: jax.Array
    orientation: jax.Array

    def __init__(self, centre, half_extents, orientation=(1.0, 0.0, 0.0, 0.0)):
        self.centre = _vector("Box", "centre", centre, "m")
        h = _vector("Box", "half_extents", half_extents, "m")
        if not isinstance(h, jax.core.Tracer) and not bool(jnp.all(h > 0)):
            raise ValueError(f"Box.half_extents must be 3 numbers > 0 [m], got {np.asarray(half_extents).tolist()!r}")
        self.half_extents = h
        o = np.asarray(orientation, float) if not isinstance(orientation, jax.core.Tracer) else None
        if o is not None and (o.shape != (4,) or not np.all(np.isfinite(o)) or np.linalg.norm(o) < 1e-12):
            raise ValueError(f"Box.orientation must be a finite non-zero quaternion (w, x, y, z), got "
                             f"{np.asarray(orientation).tolist()!r}")
        q = _f64(orientation)
        self.orientation = q / jnp.linalg.norm(q)


def _plane_geometry(c, r, point, normal):
    """``(gap [m], unit normal)`` of a sphere (centre ``c``, radius ``r``) and a plane."""
    return normal @ (c - point) - r, normal


def _box_geometry(c, r, centre, half, quat):
    """``(gap [m], unit normal)`` of a sphere and a box: from the closest point of the box (the
    nearest face when the centre is inside)."""
    R = quat_to_rotation(quat)
    p = R.T @ (c - centre)
    q = jnp.clip(p, -half, half)
    d = p - q
    dist = jnp.sqrt(jnp.sum(d * d) + 1e-300)
    depth = half - jnp.abs(p)  # inside: distance to each face
    k = jnp.argmin(depth)
    face = jnp.where(jnp.arange(3) == k, jnp.where(p[k] >= 0, 1.0, -1.0), 0.0)
    inside = jnp.all(jnp.abs(p) <= half)
    n_box = jnp.where(inside, face, d / dist)
    gap = jnp.where(inside, -depth[k], dist) - r
    return gap, R @ n_box


class SphereContact(eqx.Module):
    """A contact sphere fixed to a body, with its friction and impact parameters.

    Attributes:
        body: name of the body it is fixed to (static).
        centre: ``(3,)`` sphere centre in the WORLD frame at the initial configuration [m] (as
            joint points are given).
        radius: sphere radius [m], > 0.
        mu_along: Coulomb coefficient along the principal direction [-], >= 0.
        mu_across: Coulomb coefficient across it (in the plane) [-], >= 0. ``mu=`` sets both.
        direction: ``(3,)`` principal friction direction, fixed to the body, WORLD frame at the
            initial configuration (default the body's x axis then).
        rolling_friction: ``mu_V`` [-], >= 0: the rolling-friction impulse is bounded by
            ``mu_V P_N`` (paper eqs. 33-37, 59-60; its value is not in the paper, default 0).
        restitution: Newton coefficient ``e`` in ``[0, 1]`` (the paper: 0).
    """

    body: str = eqx.field(static=True)
    centre: jax.Array
    radius: jax.Array
    mu_along: jax.Array
    mu_across: jax.Array
    direction: jax.Array | None
    rolling_friction: jax.Array
    restitution: jax.Array

    def __init__(self, body, centre, radius, *, mu=None, mu_along=None, mu_across=None, direction=None,
                 rolling_friction=0.0, restitution=0.0):
        o = f"SphereContact({body!r})"
        if not isinstance(body, str) or not body or body == "world":
            raise ValueError(f"SphereContact.body must be a body name, got {body!r}")
        if mu is not None and (mu_along is not None or mu_across is not None):
            raise ValueError(f"{o}: give mu (isotropic) or mu_along/mu_across, not both "
                             f"(got mu={mu!r}, mu_along={mu_along!r}, mu_across={mu_across!r})")
        if mu is not None:
            mu_along = mu_across = mu
        mu_along = 0.0 if mu_along is None else mu_along
        mu_across = mu_along if mu_across is None else mu_across
        self.body = body
        self.centre = _vector(o, "centre", centre, "m")
        self.radius = _scalar(o, "radius", radius, "m", strict=True)
        self.mu_along = _scalar(o, "mu_along", mu_along, "-")
        self.mu_across = _scalar(o, "mu_across", mu_across, "-")
        self.direction = None if direction is None else _vector(o, "direction", direction, "-", nonzero=True)
        self.rolling_friction = _scalar(o, "rolling_friction", rolling_friction, "-")
        self.restitution = _scalar(o, "restitution", restitution, "-", upper=1.0)


class ContactSystem(AbstractMoreauModel):
    """A :class:`~jaxrod.system.MultibodySystem` with set-valued sphere-plane contacts (module
    docstring), integrated by :func:`jaxrod.simulate` with the Moreau stepper.

    Arguments:
        system: the :class:`~jaxrod.system.MultibodySystem` (bodies, joints, gravity, forces).
        spheres: one or more :class:`SphereContact`.
        planes: one or more :class:`Plane` (default the ground ``z = 0``, normal ``+z``; ``()``
            for none).
        boxes: :class:`Box` obstacles (default none).
        controller: ``None`` or a callable ``(x (n_bodies, 3), R (n_bodies, 3, 3), v (n_bodies,
            3), omega (n_bodies, 3), t) -> (forces (n_bodies, 3) [N] world frame at the centres of
            mass, torques (n_bodies, 3) [N m] BODY frame)``, added to the smooth forces (evaluated
            at the midpoint positions, start velocities and midpoint time). An ``equinox.Module``
            keeps its arrays as leaves (new gains reuse the compiled program).
        options: :class:`~jaxrod.integrate.moreau.MoreauOptions`.
        corrector: ``None`` (the stepper's mass-weighted joint projection) or a callable ``(x
            (n_bodies, 3), R (n_bodies, 3, 3), t) -> (x, R)`` that replaces it after each step
            (e.g. :class:`~jaxrod.scenes.snake.ChainProjection`, the paper's).

    Attributes: the arguments, and per sphere ``sphere_body`` (static body indices),
    ``sphere_centre`` ``(n_s, 3)`` [m] and ``sphere_direction`` ``(n_s, 3)`` in the body frames,
    ``radius`` ``(n_s,)`` [m], ``mu`` ``(n_s, 2)`` (along, across), ``mu_v`` ``(n_s,)``,
    ``restitution`` ``(n_s,)``; ``plane_point``, ``plane_normal`` ``(n_p, 3)``.
    """

    system: MultibodySystem
    sphere_body: tuple = eqx.field(static=True)
    sphere_centre: jax.Array
    sphere_direction: jax.Array
    radius: jax.Array
    mu: jax.Array
    mu_v: jax.Array
    restitution: jax.Array
    plane_point: jax.Array
    plane_normal: jax.Array
    box_centre: jax.Array
    box_half: jax.Array
    box_quat: jax.Array
    controller: Callable | None
    options: MoreauOptions
    corrector: Callable | None

    def __init__(self, system, spheres, planes=None, controller=None, options=None, boxes=(), corrector=None):
        if not isinstance(system, MultibodySystem):
            raise ValueError(f"ContactSystem.system must be a MultibodySystem, got {type(system).__name__}")
        spheres = one_or_many(spheres)
        planes = (Plane(),) if planes is None else one_or_many(planes)
        if not spheres:
            raise ValueError("ContactSystem.spheres must contain at least one SphereContact, got none")
        boxes = one_or_many(boxes)
        if not planes and not boxes:
            raise ValueError("ContactSystem needs at least one obstacle (planes or boxes), got none")
        for k, bx in enumerate(boxes):
            if not isinstance(bx, Box):
                raise ValueError(f"ContactSystem.boxes[{k}] must be a Box, got {type(bx).__name__}")
        for k, s in enumerate(spheres):
            if not isinstance(s, SphereContact):
                raise ValueError(f"ContactSystem.spheres[{k}] must be a SphereContact, got {type(s).__name__}")
        for k, p in enumerate(planes):
            if not isinstance(p, Plane):
                raise ValueError(f"ContactSystem.planes[{k}] must be a Plane, got {type(p).__name__}")
        if controller is not None and not callable(controller):
            raise ValueError(f"ContactSystem.controller must be None or a callable (x, R, v, omega, t) -> "
                             f"(forces, torques), got {controller!r}")
        if corrector is not None and not callable(corrector):
            raise ValueError(f"ContactSystem.corrector must be None or a callable (x, R, t) -> (x, R), got {corrector!r}")
        options = MoreauOptions() if options is None else options
        if not isinstance(options, MoreauOptions):
            raise ValueError(f"ContactSystem.options must be a MoreauOptions, got {type(options).__name__}")
        names = [b.name for b in system.bodies]
        idx, centres, dirs = [], [], []
        for k, s in enumerate(spheres):
            if s.body not in names:
                raise ValueError(f"ContactSystem.spheres[{k}].body = {s.body!r} names no body; bodies are {names}")
            b = system.bodies[names.index(s.body)]
            R = b.rotation()
            idx.append(names.index(s.body))
            centres.append(R.T @ (s.centre - b.position))
            dirs.append(jnp.array([1.0, 0.0, 0.0]) if s.direction is None
                        else R.T @ (s.direction / jnp.linalg.norm(s.direction)))
        self.system = system
        self.sphere_body = tuple(idx)
        self.sphere_centre = jnp.stack(centres)
        self.sphere_direction = jnp.stack(dirs)
        self.radius = jnp.stack([s.radius for s in spheres])
        self.mu = jnp.stack([jnp.stack([s.mu_along, s.mu_across]) for s in spheres])
        self.mu_v = jnp.stack([s.rolling_friction for s in spheres])
        self.restitution = jnp.stack([s.restitution for s in spheres])
        self.plane_point = jnp.stack([p.point for p in planes]) if planes else jnp.zeros((0, 3))
        self.plane_normal = jnp.stack([p.normal for p in planes]) if planes else jnp.zeros((0, 3))
        self.box_centre = jnp.stack([b.centre for b in boxes]) if boxes else jnp.zeros((0, 3))
        self.box_half = jnp.stack([b.half_extents for b in boxes]) if boxes else jnp.zeros((0, 3))
        self.box_quat = jnp.stack([b.orientation for b in boxes]) if boxes else jnp.zeros((0, 4))
        self.controller = controller
        self.options = options
        self.corrector = corrector

    # ---- sizes ----------------------------------------------------------------------------------------
    @property
    def n_bodies(self) -> int:
        return self.system.n_bodies

    @property
    def n_contacts(self) -> int:
        """``n_spheres * (n_planes + n_boxes)``."""
        return len(self.sphere_body) * (self.plane_point.shape[0] + self.box_centre.shape[0])

    @property
    def n_bilateral(self) -> int:
        return self.system.n_constraints

    def contact_index(self, sphere: int, obstacle: int = 0) -> int:
        """Index in ``impulses``/``gaps`` of the contact of sphere ``sphere`` with obstacle
        ``obstacle`` (planes numbered first, then boxes)."""
        npl, nbx, ns = self.plane_point.shape[0], self.box_centre.shape[0], len(self.sphere_body)
        if not 0 <= sphere < ns or not 0 <= obstacle < npl + nbx:
            raise ValueError(f"contact_index: sphere must be in [0, {ns}) and obstacle in [0, {npl + nbx}), "
                             f"got {sphere}, {obstacle}")
        if obstacle < npl:
            return sphere * npl + obstacle
        return ns * npl + sphere * nbx + obstacle - npl

    # ---- state --------------------------------------------------------------------------------------
    def initial_state(self):
        bodies = self.system.bodies
        q = jnp.stack([jnp.concatenate([b.position, b.orientation]) for b in bodies])
        u = jnp.stack([jnp.concatenate([b.velocity, b.angular_velocity]) for b in bodies])
        return MoreauState(q, u, jnp.zeros((self.n_contacts, 5)))

    @staticmethod
    def _split(q):
        return q[:, :3], q[:, 3:]

    def advance(self, q, u, h):
        x, quat = self._split(q)
        return jnp.concatenate([x + h * u[:, :3], quat + h * quat_derivative(quat, u[:, 3:])], axis=-1)

    def _jacobian(self, x, R, t):
        """``(n_J, 6 n_bodies)`` ``d g_J / d u`` and ``(n_J,)`` ``d g_J / d t`` at ``(x, R, t)``."""
        nb = self.n_bodies

        def g(du, tt):
            du = du.reshape(nb, 6)
            return self.system.constraints(x + du[:, :3], R @ rotation_matrix(du[:, 3:]), tt)

        z = jnp.zeros(6 * nb, x.dtype)
        gt = jax.jvp(lambda tt: g(z, tt), (jnp.asarray(t, x.dtype),), (jnp.ones((), x.dtype),))[1]
        seeds, columns, pattern = self._joint_colouring()
        if seeds is None:
            return jax.jacfwd(g)(z, t), gt
        # a joint's rows depend on its two bodies only: bodies of one colour (no joint between them)
        # share a tangent, 6 JVPs per colour instead of 6 per body (the snake: 12 for 66), and
        # each entry is read back from its body's colour (the same numbers as jax.jacfwd)
        Jc = jax.vmap(lambda s: jax.jvp(lambda d: g(d, t), (z,), (s,))[1], in_axes=1, out_axes=1)(
            jnp.asarray(seeds, x.dtype))
        return jnp.where(pattern, Jc[:, columns], 0.0), gt

    def _joint_colouring(self):
        """Static column colouring of the joint Jacobian ``(n_J, 6 n_bodies)``: ``(seeds (6 nb, 6
        n_colours), columns (6 nb,) the column of Jc holding each, pattern (n_J, 6 nb) bool)``, or
        ``None``s when it saves nothing (one colour per body, or no joints). Greedy colouring of the
        joint graph: bodies joined by a joint get different colours."""
        sys, nb = self.system, self.n_bodies
        rows = sys.constraint_rows()
        colour = np.full(nb, -1)
        for b in range(nb):
            taken = {colour[j] for pair in sys.body_index if b in pair for j in pair if j >= 0 and j != b}
            colour[b] = min(c for c in range(nb + 1) if c not in taken)
        n_col = int(colour.max()) + 1 if nb else 0
        if not rows or n_col >= nb:
            return None, None, None
        seeds = np.zeros((6 * nb, 6 * n_col))
        columns = np.zeros(6 * nb, int)
        for b in range(nb):
            seeds[6 * b: 6 * b + 6, 6 * colour[b]: 6 * colour[b] + 6] = np.eye(6)
            columns[6 * b: 6 * b + 6] = 6 * colour[b] + np.arange(6)
        pattern = np.zeros((sys.n_constraints, 6 * nb), bool)
        for r, pair in zip(rows, sys.body_index):
            for b in pair:
                if b >= 0:
                    pattern[r, 6 * b: 6 * b + 6] = True
        return seeds, columns, pattern

    def normalize(self, q):
        x, quat = self._split(q)
        return jnp.concatenate([x, quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)], axis=-1)

    def correct(self, q, t):
        if self.corrector is None:
            return None
        x, quat = self._split(q)
        x2, R2 = self.corrector(x, quat_to_rotation(quat), t)
        return jnp.concatenate([x2, rotation_to_quat(R2)], axis=-1)

    def constraint_values(self, q, t):
        x, quat = self._split(q)
        return self.system.constraints(x, quat_to_rotation(quat), t)

    def displace(self, q, du):
        """``x + du[:, :3]``, ``quat (x) exp(du[:, 3:])`` (a body-frame rotation vector), unit."""
        x, quat = self._split(q)
        quat = quat_multiply(quat, quat_from_axis_angle(du[:, 3:]))
        return jnp.concatenate([x + du[:, :3], quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)], axis=-1)

    def inverse_mass(self, q, X):
        nb = self.n_bodies
        Xb = X.reshape(nb, 6, -1)
        m = self.system.masses()
        Jinv = jnp.linalg.inv(self.system.inertias())
        out = jnp.concatenate([Xb[:, :3] / m[:, None, None], jnp.einsum("bij,bjk->bik", Jinv, Xb[:, 3:])], axis=1)
        return out.reshape(X.shape)

    def smooth_forces(self, q, u, t):
        """``(n_bodies, 6)``: forces [N] (world) and torques [N m] (body frame, gyroscopic
        ``-omega x J omega`` included) of the wrapped system (gravity, applied loads, joint springs
        and dampers, force elements) plus the controller, at ``(q, u, t)``."""
        sys = self.system
        nb, nj = sys.n_bodies, sys.n_constraints
        x, quat = self._split(q)
        z = jnp.zeros((nb, 3), q.dtype)
        qq = sys.pack(x, z, jnp.zeros(nj, q.dtype))
        aux = BodyFrames(quat, z)
        r_dyn, _ = sys._equations(qq, u[:, :3], u[:, 3:], z, z, jnp.zeros(nj, q.dtype), t, aux)
        h = -jnp.concatenate([r_dyn[: 3 * nb].reshape(nb, 3), r_dyn[3 * nb :].reshape(nb, 3)], axis=-1)
        if self.controller is not None and not self.implicit_controller:
            h = h + self._controller_forces(q, u, t)
        return h

    @property
    def implicit_controller(self) -> bool:
        """Whether the controller is treated linear-implicitly (its ``implicit`` attribute, e.g.
        ``CardanPD(implicit=True)``; :meth:`implicit_forces`)."""
        return self.controller is not None and bool(getattr(self.controller, "implicit", False))

    def _controller_forces(self, q, u, t):
        x, quat = self._split(q)
        f, tau = self.controller(x, quat_to_rotation(quat), u[:, :3], u[:, 3:], t)
        return jnp.concatenate([f, tau], axis=-1)

    def implicit_forces(self, q, u, t):
        """``(n_bodies, 6)`` the controller's forces [N] (world) and torques [N m] (body frame)
        when it is linear-implicit (:attr:`implicit_controller`; then not in
        :meth:`smooth_forces`), else ``None``."""
        return self._controller_forces(q, u, t) if self.implicit_controller else None

    def check_dt(self, dt):
        """Asks the controller (its ``check_dt(dt, system)``, e.g.
        :meth:`~jaxrod.scenes.snake.CardanPD.check_dt`) whether an explicit loop is stable at
        ``dt`` [s]; it warns otherwise. Nothing to check for a linear-implicit controller."""
        if self.controller is not None and not self.implicit_controller and hasattr(self.controller, "check_dt"):
            self.controller.check_dt(dt, self.system)

    def bilateral(self, q, t):
        x, quat = self._split(q)
        J, gt = self._jacobian(x, quat_to_rotation(quat), t)
        return J.T, gt, self.system._kept_rows()

    def _pairs(self):
        """Static index arrays of the contacts: ``(body, sphere, obstacle)`` per contact, for
        the planes and for the boxes."""
        ns, npl, nbx = len(self.sphere_body), self.plane_point.shape[0], self.box_centre.shape[0]
        body = np.asarray(self.sphere_body, int)
        out = []
        for n_obs in (npl, nbx):
            si = np.repeat(np.arange(ns), n_obs)
            out.append((body[si], si, np.tile(np.arange(n_obs), ns)))
        return out

    def unilateral(self, q):
        x, quat = self._split(q)
        R = quat_to_rotation(quat)
        (pb, ps, pp), (bb, bs, bo) = self._pairs()
        centres = x[np.asarray(self.sphere_body, int)] + jnp.einsum(
            "sij,sj->si", R[np.asarray(self.sphere_body, int)], self.sphere_centre)
        gp, npn = jax.vmap(_plane_geometry)(centres[ps], self.radius[ps], self.plane_point[pp], self.plane_normal[pp])
        gb, nbn = jax.vmap(_box_geometry)(centres[bs], self.radius[bs], self.box_centre[bo], self.box_half[bo],
                                          self.box_quat[bo])
        bi = np.concatenate([pb, bb])
        si = np.concatenate([ps, bs])
        gaps = jnp.concatenate([gp, gb])
        normals = jnp.concatenate([npn, nbn])

        def one(xb, Rb, c, d, r, n):
            rho = c - r * n - xb
            dw = Rb @ d
            dt = dw - (dw @ n) * n
            # fallback tangent when the principal direction is normal to the obstacle
            alt = jnp.cross(n, jnp.eye(3, dtype=n.dtype)[jnp.argmin(jnp.abs(n))])
            ndt = jnp.linalg.norm(dt)
            t1 = jnp.where(ndt > 1e-9, dt / jnp.where(ndt > 1e-9, ndt, 1.0), alt / jnp.linalg.norm(alt))
            t2 = jnp.cross(n, t1)
            cols_v = jnp.stack([n, t1, t2], axis=1)  # (3, 3) translational directions
            ang = Rb.T @ jnp.cross(rho[:, None], cols_v, axis=0)  # R^T (rho x e)
            roll = Rb.T @ jnp.cross(r * jnp.stack([t1, t2], axis=1), n[:, None], axis=0)  # R^T (r t_k x n)
            top = jnp.concatenate([cols_v, jnp.zeros((3, 2), n.dtype)], axis=1)
            bottom = jnp.concatenate([ang, roll], axis=1)
            return jnp.concatenate([top, bottom], axis=0)  # (6, 5)

        W6 = jax.vmap(one)(x[bi], R[bi], centres[si], self.sphere_direction[si], self.radius[si], normals)
        nc = gaps.shape[0]
        W = jnp.zeros((self.n_bodies, 6, nc, 5), q.dtype).at[bi, :, np.arange(nc), :].set(W6)
        return (gaps, W.reshape(6 * self.n_bodies, nc, 5), self.mu[si], self.mu_v[si], self.restitution[si])

    def observe_state(self, q, u):
        x, quat = self._split(q)
        return {"positions": x, "frames": jnp.swapaxes(quat_to_rotation(quat), -1, -2)}

    # ---- diagnostics --------------------------------------------------------------------------------
    def energy(self, q, u):
        """Kinetic + gravitational energy [J] of states ``q`` ``(..., n_bodies, 7)``, ``u``
        ``(..., n_bodies, 6)`` (joint springs and force elements not included)."""
        m, J = self.system.masses(), self.system.inertias()
        kin = 0.5 * jnp.sum(m * jnp.sum(u[..., :3] ** 2, -1), -1)
        rot = 0.5 * jnp.sum(jnp.einsum("...bi,bij,...bj->...b", u[..., 3:], J, u[..., 3:]), -1)
        return kin + rot - jnp.sum(m * (q[..., :3] @ self.system.gravity), -1)

    def joint_violation(self, q, t=0.0):
        """``(..., n_J)`` joint constraint values of states ``q`` ``(..., n_bodies, 7)`` [m or -]."""
        return jnp.vectorize(lambda qq: self.system.constraints(qq[:, :3], quat_to_rotation(qq[:, 3:]), t),
                             signature="(b,s)->(c)")(q)
