"""Multibody systems of rigid bodies and joints as an implicit model (:class:`MultibodySystem`).

Coordinates: MAXIMAL coordinates (every body has its own 6 coordinates) plus one Lagrange
multiplier per constraint row. Why: every joint couples only the two bodies it names, so the
Jacobian of a chain or network is block-sparse with the topology of the mechanism (structure that
later banded/sparse solvers and rod-body couplings can exploit), closed loops (four-bar, Stewart
plate) need no special treatment, and bodies, joints and rods attached to bodies all use the same
pose variables. Reduced joint coordinates would give smaller systems for trees but a dense
configuration-dependent mass matrix and no loops.

The unknown vector ``q`` (flat, length ``6 n_bodies + n_constraints``) is
``[x (n_bodies, 3), psi (n_bodies, 3), mu (n_constraints,)]``:

* ``x`` [m]: centre-of-mass positions in the world frame; ``v_x`` their velocities.
* ``psi`` [rad]: rotation coordinates whose rate IS the body-frame angular velocity
  (``v_psi = omega``). The orientation is ``R = R_ref exp(psi - psi_ref)`` with the reference pair
  ``(R_ref, psi_ref)`` the orientation and ``psi`` of the last converged step, carried in ``aux``
  (as DER carries its reference frames). The chart is re-centred every step, so ``psi`` may grow
  without bound and there is no singularity (only one step's rotation must stay below ``2 pi``);
  the residual is a smooth function of ``q`` (Newton and implicit differentiation are exact), and
  the unit norm of the quaternion stored in ``aux`` is not an unknown (its update is a product of
  unit quaternions, renormalised). With the midpoint kinematics a step rotates each body by
  ``R_{n+1} = R_n exp(dt (omega_n + omega_{n+1}) / 2)``.
* ``mu`` [N s, or N m s for angular rows]: integrated multipliers; the constraint force used in the
  equations of motion is ``lambda = v_mu`` (the stage velocity of ``mu``), which for backward
  Euler, implicit midpoint and the average vector field is ``(mu_{n+1} - mu_n) / dt``: the mean
  constraint force over the step, constant along the step.

Residual rows. Translation: ``m a - m g - f = -G_x^T lambda``; rotation (body frame, multiplied by
the transpose of the right Jacobian ``T`` of ``exp`` so that every generalised force is a plain
gradient in ``psi``): ``T^T (J alpha + omega x J omega - tau) + dV/dpsi + G_psi^T lambda = 0``;
multiplier rows: the constraints ``g(q) = 0``. The scheme evaluates the dynamics rows at its stage
point; :meth:`MultibodySystem.end_of_step_residual` overwrites the constraint rows with
``g(q_{n+1})``, so the joints hold to the Newton tolerance after every step.

Energy: with the midpoint kinematics ``psi_{n+1} - psi_n = dt omega*`` and ``T(s dpsi) dpsi =
dpsi``, so the work of the rotation rows along the step is ``dt omega* . (J alpha*)``, the exact
change of kinetic energy; with :class:`~jaxrod.integrate.schemes.AverageVectorField` (forces averaged
along the step, ``lambda`` constant along it, ``g = 0`` at both ends) kinetic + potential energy
is conserved up to the quadrature error of the potentials, whatever the step;
:class:`~jaxrod.integrate.schemes.ImplicitMidpoint` conserves it exactly for a free body (a quadratic
invariant; on a free body the two schemes agreed to 1e-12), not exactly with joints or potentials.
Measured (``tests/test_system_multibody.py``, AVF): free bodies, energy and ``|L|`` to 1.5e-9
relative over 1000 steps (Newton tolerance), the direction of the world angular momentum drifts
at ``O(dt^2)`` (2.4e-4 at ``|omega| dt = 0.05`` after 8 spin periods, 6.1e-5 at half the step);
a chaotic double pendulum keeps its energy to 1e-8 of ``m g L`` over 2000 steps.

Velocities: only positions are constrained. The midpoint velocity ``v_{n+1} = 2 (q_{n+1} - q_n)/dt
- v_n`` keeps an undamped ``(-1)^n`` component normal to the constraints, excited by the
transients (a chord of a curved path is not tangent to it), and each step's multiplier the
matching ``+-2 m v_perp / dt``: measured on a pendulum settled after a swing at ``dt = T/60``,
``6e-7`` m/s and ``+-4.7e-5`` N on ``m g = 9.81`` N; the mean of two consecutive multipliers was
exact to ``1e-15``. Energies are unaffected at this level; a velocity-level projection (a second
multiplier set) would remove the mode if rod couplings or contacts need clean velocities.

Newton tolerance: ``psi`` and ``mu`` grow during a run (``psi`` by ``omega t``, ``mu`` by
``lambda t``), so a relative tolerance on them loosens as time goes on; for long runs pass
``NewtonSolver(rtol=0.0, atol=1e-12)`` (measured on a free spinning body, 1000 steps: energy error
1.5e-9 relative, against 1e-5 with the default ``rtol = atol = 1e-9``).

Schemes: every scheme whose stage velocity is an affine function of ``q_{n+1}`` with a non-zero
coefficient: ``AverageVectorField`` (default), ``ImplicitMidpoint``, ``BackwardEuler``,
``NewmarkBeta`` and ``BDFAlpha`` (``BDF2``, ``Trapezoid``). The schemes that start from a
consistent acceleration (``NewmarkBeta()``, ``BDF2``, ``Trapezoid``) solve
:meth:`MultibodySystem.acceleration_residual`: the ``mu`` block of the unknown acceleration is
read as the constraint forces and the constraint rows require ``d^2 g / dt^2 = 0`` (the index-1
form; the multiplier rows of the step residual do not involve the acceleration). Their history
then carries those forces where the rates of ``lambda`` would be, which is harmless: ``lambda``
never enters through its rate.

Statics: :func:`~jaxrod.solve_static` solves :meth:`MultibodySystem.static_residual`, in which
the multiplier coordinates ``mu`` themselves are the constraint forces (at rest the rates
vanish); the returned ``q`` carries the reactions in its ``mu`` block (a later simulation only
uses the rates of ``mu``, so it can start from that state).

Redundant constraints (a planar loop of 3D revolute joints, two coaxial hinges on one body): the
rows implied by earlier ones at the assembly configuration are found when the system is built
(``redundant='drop'``, the default, with a :class:`RedundantConstraintWarning` naming them;
``'error'`` raises instead). A dropped row's multiplier row reads ``mu = 0`` and its constraint
leaves the equations of motion, so the Newton matrix stays regular; the reactions are carried by
the rows kept (the minimal set, not a least-squares split: a statically indeterminate split of
forces between redundant joints is not determined by rigid bodies). The dropped rows still hold
(they are implied by the others) and are reported by :meth:`MultibodySystem.constraint_values`.
Redundancy is decided at the assembly configuration; a mechanism that passes through a singular
configuration (a four-bar's dead point) changes rank there and is not handled.

:func:`jaxrod.modal` handles the joints (it solves the static multipliers first and reduces the
modes to the motions the joints allow; see :mod:`jaxrod.analysis.modal`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..integrate.base import jit_when_eager
from ..geometry import quat_from_axis_angle, quat_multiply, quat_to_rotation, rotation_matrix, unskew
from ..integrate.implicit import AbstractImplicitModel, State
from .bodies import RigidBody
from .forces import ForceSet
from ..validation import one_or_many
from .joints import AbstractJoint, PrescribedAngle, PrescribedDisplacement, _group_joints
from .structure import multibody_linear_solver


class RedundantConstraintWarning(UserWarning):
    """A :class:`MultibodySystem` dropped constraint rows implied by others (see ``redundant``)."""


class BodyFrames(eqx.Module):
    """Reference orientations carried between steps (the ``aux`` of :class:`MultibodySystem`).

    Attributes:
        quat: ``(n_bodies, 4)`` unit quaternions of the orientations at the last converged step.
        psi: ``(n_bodies, 3)`` the rotation coordinates ``psi`` [rad] of that step.
    """

    quat: jax.Array
    psi: jax.Array


class MultibodySystem(AbstractImplicitModel):
    """Rigid bodies connected by joints, integrated by :func:`jaxrod.simulate` (see module docstring).

    Arguments:
        bodies: sequence of :class:`~jaxrod.system.RigidBody` with unique names.
        joints: sequence of joints (:mod:`jaxrod.system.joints`) naming those bodies. Joints of
            one type (and static configuration) are stacked into one Module of :attr:`groups`
            and evaluated by one ``vmap``: compile time does not grow with their number.
        gravity: ``(3,)`` gravitational acceleration [m/s^2] (default none).
        loads: ``None`` or a function ``t [s] -> (forces (n_bodies, 3) [N], torques (n_bodies, 3)
            [N m])``, world frame, forces at the centres of mass, added to the bodies' constant
            ``force``/``torque`` (static: a new function compiles a new program).
        forces: sequence of force elements (:mod:`jaxrod.system.forces`: springs, dampers,
            inputs, controllers), held in :attr:`forces` (a :class:`~jaxrod.system.forces.ForceSet`,
            grouped by type like the joints): springs add their energy, dampers and inputs their
            generalised forces (virtual work at the stage point).
        redundant: ``'drop'`` (default) or ``'error'``: what to do with constraint rows implied
            by earlier joints (module docstring); :attr:`redundant_rows` lists those dropped.

    Attributes (besides the arguments): ``anchors`` ``(n_joints, 2, 3)`` the joint point in the
    frames of body 1 and body 2 [m] (world coordinates for the world side); ``joint_frames``
    ``(n_joints, 2, 3, 3)`` the joint frame (columns ``axis, u, w``) in those frames;
    ``body_index`` static ``((i1, i2), ...)`` with ``-1`` for the world; ``redundant_rows``
    static tuple of the dropped constraint rows (indices into the multiplier block).

    Observed (:meth:`observe`, saved in :class:`~jaxrod.integrate.Trajectory`): ``positions``
    ``(n_bodies, 3)`` centres of mass [m]; ``frames`` ``(n_bodies, 3, 3)`` whose ROWS are the body
    axes in the world frame (``R^T``).
    """

    bodies: tuple
    gravity: jax.Array
    anchors: jax.Array
    joint_frames: jax.Array
    body_index: tuple = eqx.field(static=True)
    loads: Callable | None = eqx.field(static=True)
    groups: tuple
    group_members: tuple = eqx.field(static=True)
    joint_bodies: tuple = eqx.field(static=True)
    forces: ForceSet
    redundant_rows: tuple = eqx.field(static=True)

    def __init__(self, bodies, joints=(), gravity=(0.0, 0.0, 0.0), loads=None, forces=(), redundant="drop"):
        bodies, joints = one_or_many(bodies), one_or_many(joints)
        if not bodies:
            raise ValueError("MultibodySystem.bodies must contain at least one RigidBody, got none")
        for b in bodies:
            if not isinstance(b, RigidBody):
                raise ValueError(f"MultibodySystem.bodies must be RigidBody instances, got {type(b).__name__}")
        names = [b.name for b in bodies]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"MultibodySystem.bodies: body names must be unique, repeated: {dup}")
        index = {n: i for i, n in enumerate(names)}
        pairs = []
        for k, j in enumerate(joints):
            if not isinstance(j, AbstractJoint):
                raise ValueError(f"MultibodySystem.joints[{k}] must be a joint, got {type(j).__name__}")
            ids = []
            for side in ("body1", "body2"):
                name = getattr(j, side)
                if name in (None, "world"):
                    ids.append(-1)
                elif name in index:
                    ids.append(index[name])
                else:
                    raise ValueError(
                        f"MultibodySystem.joints[{k}] ({type(j).__name__}).{side} = {name!r} names no body; "
                        f"bodies are {names} (or None / 'world' for body1)"
                    )
            pairs.append(tuple(ids))
        g = np.asarray(gravity, float) if not isinstance(gravity, jax.core.Tracer) else None
        if g is not None and (g.shape != (3,) or not np.all(np.isfinite(g))):
            raise ValueError(
                f"MultibodySystem.gravity must be 3 finite numbers [m/s^2], got {np.asarray(gravity).tolist()!r}"
            )
        if redundant not in ("drop", "error"):
            raise ValueError(f"MultibodySystem.redundant must be 'drop' or 'error', got {redundant!r}")
        if loads is not None and not callable(loads):
            raise ValueError(f"MultibodySystem.loads must be None or a function t -> (forces, torques), got {loads!r}")
        self.bodies, self.body_index, self.loads = bodies, tuple(pairs), loads
        self.joint_bodies = tuple((j.body1, j.body2) for j in joints)
        self.gravity = jnp.asarray(gravity, dtype=jnp.float64)
        anchors, frames = [], []
        for j, (i1, i2) in zip(joints, pairs):
            E = jnp.asarray(j.frame())
            a, f = [], []
            for i in (i1, i2):
                if i < 0:
                    a.append(j.point)
                    f.append(E)
                else:
                    R = bodies[i].rotation()
                    a.append(R.T @ (j.point - bodies[i].position))
                    f.append(R.T @ E)
            anchors.append(jnp.stack(a))
            frames.append(jnp.stack(f))
        self.anchors = jnp.stack(anchors) if anchors else jnp.zeros((0, 2, 3))
        self.joint_frames = jnp.stack(frames) if frames else jnp.zeros((0, 2, 3, 3))
        self.groups, self.group_members = _group_joints(joints)
        self.forces = ForceSet(forces, bodies)
        self.redundant_rows = ()
        self.redundant_rows = self._find_redundant_rows(redundant)

    # ---- sizes and packing ------------------------------------------------------------------------
    @property
    def n_bodies(self) -> int:
        return len(self.bodies)

    @property
    def joints(self) -> tuple:
        """The joints, in the order given (rebuilt from :attr:`groups`, which hold the parameters:
        differentiate with respect to ``groups``, or rebuild the system from new joints)."""
        out = [None] * len(self.joint_bodies)
        for g, members in zip(self.groups, self.group_members):
            for k, i in enumerate(members):
                one = jax.tree_util.tree_map(lambda x: x[k] if eqx.is_array(x) else x, g)
                out[i] = dataclasses.replace(one, body1=self.joint_bodies[i][0], body2=self.joint_bodies[i][1])
        return tuple(out)

    @property
    def n_constraints(self) -> int:
        return sum(type(g).n_constraints * len(m) for g, m in zip(self.groups, self.group_members))

    @property
    def n_coordinates(self) -> int:
        """Length of ``q``: ``6 n_bodies + n_constraints``."""
        return 6 * self.n_bodies + self.n_constraints

    def _find_redundant_rows(self, mode):
        """Constraint rows implied by earlier ones at the assembly configuration (static tuple of
        row indices): joints are taken in the order given, and a row whose Jacobian is (to 1e-8
        relative) a combination of the rows kept so far is redundant. Only a closed loop in the
        joint graph (the world a node) can make rows redundant, so trees skip the check, whose
        dense elimination costs ``O(n_constraints^2 n_bodies)``. Skipped (nothing dropped) when
        the bodies or joints are traced."""
        nb = self.n_bodies
        parent = list(range(nb + 1))

        def root(i):
            while parent[i] != i:
                i = parent[i]
            return i

        loop = False
        for i1, i2 in self.body_index:
            a, b = root(i1 if i1 >= 0 else nb), root(i2)
            loop |= a == b
            parent[a] = b
        leaves = jax.tree_util.tree_leaves((self.bodies, self.anchors, self.joint_frames, self.groups))
        if not loop or any(isinstance(v, jax.core.Tracer) for v in leaves):
            return ()
        x0 = jnp.stack([b.position for b in self.bodies])
        aux = BodyFrames(jnp.stack([b.orientation for b in self.bodies]), jnp.zeros((nb, 3)))
        # compiled: evaluated op by op, the vmapped joint groups cost seconds per group
        G = np.asarray(_constraint_jacobian(self, jnp.concatenate([x0, jnp.zeros((nb, 3))]), aux)).reshape(
            self.n_constraints, 6 * nb)
        basis, dropped = np.zeros((0, 6 * nb)), []
        # prescribed motions (drives) last: a drive implied by the other joints fights them and
        # must not be dropped silently (the body would not follow it)
        drives = {i for g, m in zip(self.groups, self.group_members)
                  if isinstance(g, (PrescribedDisplacement, PrescribedAngle)) for i in m}
        all_rows = self.constraint_rows()
        order = [i for i in range(len(all_rows)) if i not in drives] + sorted(drives)
        for i in order:
            rows = all_rows[i]
            for k in range(rows.start, rows.stop):
                r = G[k]
                perp = r - basis.T @ (basis @ r)
                perp = perp - basis.T @ (basis @ perp)  # twice: Gram-Schmidt loses orthogonality once
                if np.linalg.norm(perp) > 1e-8 * max(np.linalg.norm(r), 1e-300):
                    basis = np.vstack([basis, perp / np.linalg.norm(perp)])
                elif i in drives:
                    j = self.joints[i]
                    kind = "axis" if isinstance(j, PrescribedDisplacement) else "rotation axis"
                    raise ValueError(
                        f"MultibodySystem: joints[{i}] ({type(j).__name__}, body1={j.body1!r}, body2={j.body2!r}, "
                        f"{kind} {np.asarray(j.axis).round(6).tolist()}) prescribes a motion the other joints "
                        "already forbid (its row is implied by theirs), so the body could not follow it; "
                        "prescribe a direction the joints leave free, or remove the joint that locks it"
                    )
                else:
                    dropped.append(k)
        dropped.sort()
        if dropped:
            where = self.describe_rows(dropped)
            if mode == "error":
                raise ValueError(
                    f"MultibodySystem: {len(dropped)} redundant constraint rows (implied by the joints before "
                    f"them): {where}; remove them (e.g. close a planar loop with PlanarPin) or pass "
                    "redundant='drop' to drop them"
                )
            warnings.warn(
                f"MultibodySystem: {len(dropped)} redundant constraint rows dropped (their multipliers are "
                f"zero; the rows kept carry the reactions): {where}",
                RedundantConstraintWarning, stacklevel=3,
            )
        return tuple(dropped)

    def describe_rows(self, rows):
        """``'joints[3] (Revolute) rows [3, 4]; ...'`` for constraint row indices ``rows``."""
        parts = []
        for i, sl in enumerate(self.constraint_rows()):
            mine = [k - sl.start for k in rows if sl.start <= k < sl.stop]
            if mine:
                name = type(self.groups[[i in m for m in self.group_members].index(True)]).__name__
                parts.append(f"joints[{i}] ({name}) rows {mine}")
        return "; ".join(parts)

    def unpack(self, q):
        """``q`` (flat) -> ``(x (n_bodies, 3), psi (n_bodies, 3), mu (n_constraints,))``."""
        nb = self.n_bodies
        return q[: 3 * nb].reshape(nb, 3), q[3 * nb : 6 * nb].reshape(nb, 3), q[6 * nb :]

    def pack(self, x, psi, mu):
        return jnp.concatenate([jnp.ravel(x), jnp.ravel(psi), jnp.ravel(mu)])

    def masses(self):
        """``(n_bodies,)`` masses [kg]."""
        return jnp.stack([b.mass for b in self.bodies])

    def inertias(self):
        """``(n_bodies, 3, 3)`` body-frame inertia tensors [kg m^2]."""
        return jnp.stack([b.inertia for b in self.bodies])

    def rotations(self, psi, aux):
        """``(n_bodies, 3, 3)`` orientations ``R_ref exp(psi - psi_ref)`` (body -> world)."""
        return quat_to_rotation(aux.quat) @ rotation_matrix(psi - aux.psi)

    # ---- mechanics ----------------------------------------------------------------------------------
    def _joint_points(self, x, R, members):
        """``(P1, P2, F1, F2)`` of the joints ``members`` (static indices), each stacked
        ``(n, 3)`` / ``(n, 3, 3)``, world frame (see :mod:`jaxrod.system.joints`)."""
        idx = np.asarray(members, dtype=int)
        ends = np.asarray(self.body_index, dtype=int).reshape(-1, 2)[idx]
        # the world is an extra body at the origin with the identity rotation (index -1)
        x_ext = jnp.concatenate([x, jnp.zeros((1, 3), x.dtype)])
        R_ext = jnp.concatenate([R, jnp.eye(3, dtype=R.dtype)[None]])
        r, E = self.anchors[idx], self.joint_frames[idx]
        P = x_ext[ends] + jnp.einsum("nsij,nsj->nsi", R_ext[ends], r)
        F = R_ext[ends] @ E
        return P[:, 0], P[:, 1], F[:, 0], F[:, 1]

    def _each_group(self, fn, x, R, only=None):
        """``[vmap(fn)(joints, P1, P2, F1, F2, ends) for each group of like joints]`` (one traced
        evaluation per joint type, whatever the number of joints); ``only(joint type)`` False
        skips a group."""
        out = []
        for joints, members in zip(self.groups, self.group_members):
            if only is not None and not only(type(joints)):
                continue
            pts = self._joint_points(x, R, members)
            ends = jnp.asarray(np.asarray(self.body_index, dtype=int).reshape(-1, 2)[np.asarray(members, dtype=int)])
            out.append(eqx.filter_vmap(fn)(joints, *pts, ends))
        return out

    def constraints(self, x, R, t=0.0):
        """``(n_constraints,)`` all joint constraint values at time ``t`` [s] (zero when every
        joint holds), grouped by joint type in the order of :attr:`group_members`."""
        rows = self._each_group(lambda j, P1, P2, F1, F2, e: j.constraint(P1, P2, F1, F2, t), x, R)
        return jnp.concatenate([jnp.ravel(c) for c in rows]) if rows else jnp.zeros((0,), x.dtype)

    def joint_potential(self, x, R, t):
        """Energy of the joint springs minus the work of the joint input torques [J]."""
        return self._constraints_and_potential(x, R, t)[1]

    def _constraints_and_potential(self, x, R, t):
        """``(constraints(x, R, t), joint_potential(x, R, t))`` from one pass over the joint groups
        (one set of joint points and one ``vmap`` per group: the residual needs both, and every
        Newton program holds the residual several times)."""
        out = self._each_group(
            lambda j, P1, P2, F1, F2, _: (j.constraint(P1, P2, F1, F2, t), j.potential(P1, P2, F1, F2, t)), x, R)
        g = jnp.concatenate([jnp.ravel(c) for c, _ in out]) if out else jnp.zeros((0,), x.dtype)
        return g, sum((jnp.sum(e) for _, e in out), jnp.zeros((), x.dtype))

    def _dissipation(self, x, R, xd, omega):
        # world-frame velocities, the world (index -1) at rest at the origin
        w = jnp.concatenate([jnp.einsum("bij,bj->bi", R, omega), jnp.zeros((1, 3), omega.dtype)])
        u = jnp.concatenate([xd, jnp.zeros((1, 3), xd.dtype)])
        c = jnp.concatenate([x, jnp.zeros((1, 3), x.dtype)])

        def one(j, P1, P2, F1, F2, ends):
            v1 = u[ends[0]] + jnp.cross(w[ends[0]], P1 - c[ends[0]])
            v2 = u[ends[1]] + jnp.cross(w[ends[1]], P2 - c[ends[1]])
            return j.dissipation(P1, P2, F1, F2, v1, v2, w[ends[0]], w[ends[1]])

        # joint types without dampers (the base class's zero dissipation) are not traced
        e = self._each_group(one, x, R, only=lambda kind: kind.dissipation is not AbstractJoint.dissipation)
        return sum((jnp.sum(v) for v in e), jnp.zeros((), x.dtype))

    def applied(self, t):
        """World-frame ``(forces, torques)``, each ``(n_bodies, 3)`` [N], [N m], at time ``t`` [s]."""
        f = jnp.stack([b.force for b in self.bodies])
        tau = jnp.stack([b.torque for b in self.bodies])
        if self.loads is not None:
            df, dtau = self.loads(t)
            f, tau = f + df, tau + dtau
        return f, tau

    def _equations(self, q, xd, omega, xdd, alpha, lam, t, aux):
        """``(r_dyn, g)``: the ``6 n_bodies`` dynamics rows with constraint forces ``lam``
        ``(n_constraints,)`` (rows of redundant constraints carry none) and the constraint values
        ``g(q, t)``. The public residuals differ only in where ``lam`` comes from."""
        x, psi, _ = self.unpack(q)
        R = self.rotations(psi, aux)
        m, J = self.masses(), self.inertias()
        f_app, tau_app = self.applied(t)
        f_damp, tau_damp = jax.grad(self._dissipation, argnums=(2, 3))(x, R, xd, omega)
        # inertial minus applied forces, held fixed while the configuration is varied below
        f_lin = m[:, None] * (xdd - self.gravity) - f_app + f_damp
        Jw = jnp.einsum("bij,bj->bi", J, omega)
        tau = jnp.einsum("bij,bj->bi", J, alpha) + jnp.cross(omega, Jw) - jnp.einsum("bji,bj->bi", R, tau_app)
        tau = tau + tau_damp
        force_work = self.forces.work(x, R, xd, omega, t)
        keep = self._kept_rows()

        def virtual_work(qq):
            # the rotation rows: d/dpsi of tau . (body-frame rotation away from R) = T^T tau
            xx, pp, _ = self.unpack(qq)
            RR = self.rotations(pp, aux)
            dtheta = unskew(jnp.einsum("bji,bjk->bik", R, RR))
            g, potential = self._constraints_and_potential(xx, RR, t)
            joints = potential + (lam * keep) @ g
            return jnp.sum(f_lin * xx) + jnp.sum(tau * dtheta) + joints + force_work(xx, RR), g

        # g comes back as the value at qq = q: one traced constraint evaluation serves both uses
        r, g = jax.grad(virtual_work, has_aux=True)(q)
        return r[: 6 * self.n_bodies], g

    def _kept_rows(self):
        """``(n_constraints,)`` 1.0 for independent rows, 0.0 for the redundant rows dropped at
        assembly (their multiplier rows read ``mu = 0`` instead of ``g = 0``)."""
        keep = np.ones(self.n_constraints)
        keep[list(self.redundant_rows)] = 0.0
        return jnp.asarray(keep)

    def _with_constraint_rows(self, r_dyn, g, mu):
        return jnp.concatenate([r_dyn, jnp.where(self._kept_rows() > 0, g, mu)])

    def residual(self, q, v, a, t, aux):
        xd, omega, lam = self.unpack(v)
        xdd, alpha, _ = self.unpack(a)
        r_dyn, g = self._equations(q, xd, omega, xdd, alpha, lam, t, aux)
        # multiplier rows: the constraints at the stage point (end_of_step_residual moves them to q_{n+1})
        return self._with_constraint_rows(r_dyn, g, self.unpack(q)[2])

    def end_of_step_residual(self, q_next, r, t, aux):
        x, psi, mu = self.unpack(q_next)
        rows = self._with_constraint_rows(r[: 6 * self.n_bodies], self.constraints(x, self.rotations(psi, aux), t), mu)
        return r.at[6 * self.n_bodies :].set(rows[6 * self.n_bodies :])

    def static_residual(self, q, t, aux):
        """Static equilibrium: the multiplier coordinates ``mu`` ARE the constraint forces (at
        rest their rates vanish), so after :func:`jaxrod.solve_static` the ``mu`` block of ``q``
        holds the reactions (units and signs as :meth:`multipliers`)."""
        z = jnp.zeros((self.n_bodies, 3), q.dtype)
        mu = self.unpack(q)[2]
        r_dyn, g = self._equations(q, z, z, z, z, mu, t, aux)
        return self._with_constraint_rows(r_dyn, g, mu)

    def static_start(self, q, t, aux):
        """The start of a static solve: ``q`` with the multipliers that balance the applied
        loads best in the least-squares sense at ``q``'s configuration. Why: at ``mu = 0`` the
        moment rows of :meth:`static_residual` do not depend on the orientations (their
        configuration dependence is ``mu`` times the constraints' curvature), so a mechanism that
        finds its equilibrium by turning (a pendulum) has a singular Newton matrix there."""
        z = jnp.zeros((self.n_bodies, 3), q.dtype)
        x, psi, mu = self.unpack(q)

        def r_dyn(m):
            return self._equations(q, z, z, z, z, m, t, aux)[0].reshape(-1)

        r0 = r_dyn(jnp.zeros_like(mu))
        G = jax.jacfwd(r_dyn)(mu)  # affine in mu: exact
        mu0 = jnp.linalg.lstsq(G, -r0)[0]
        return self.pack(x, psi, jnp.where(jnp.asarray(self._kept_rows()), mu0, 0.0))

    def acceleration_residual(self, q, v, a, t, aux):
        """The consistent initial acceleration (schemes with ``needs_acceleration``): the ``mu``
        block of ``a`` is taken as the constraint forces and the constraint rows require the
        constraints' second time derivative to vanish, ``d^2/ds^2 g(q + s v + s^2 a / 2, t + s)
        = 0`` at ``s = 0`` (the rotation rows: ``psi'' = alpha`` at the reference chart)."""
        xd, omega, _ = self.unpack(v)
        xdd, alpha, lam = self.unpack(a)
        r_dyn, _ = self._equations(q, xd, omega, xdd, alpha, lam, t, aux)

        def g_along(s):
            x, psi, _ = self.unpack(q + s * v + 0.5 * s * s * a)
            return self.constraints(x, self.rotations(psi, aux), t + s)

        g2 = jax.jacfwd(jax.jacfwd(g_along))(jnp.zeros((), q.dtype))
        return self._with_constraint_rows(r_dyn, g2, lam)

    # ---- diagnostics (from observed data) ------------------------------------------------------------
    @staticmethod
    def _rotations_from_frames(frames):
        return jnp.swapaxes(frames, -1, -2)

    def energy(self, positions, frames, v, t=0.0):
        """Kinetic + gravitational + joint-spring + force-element spring energy [J] (minus the
        work of joint input torques) from observed ``positions`` ``(n_bodies, 3)``, ``frames`` ``(n_bodies, 3, 3)``
        and velocities ``v`` (flat, like ``q``); batched over leading axes of all three."""
        return jnp.vectorize(
            lambda x, F, vv: self._energy(x, self._rotations_from_frames(F), vv, t), signature="(b,i),(b,i,j),(n)->()"
        )(positions, frames, v)

    def _energy(self, x, R, v, t):
        xd, omega, _ = self.unpack(v)
        m, J = self.masses(), self.inertias()
        kin = 0.5 * jnp.sum(m * jnp.sum(xd**2, -1)) + 0.5 * jnp.sum(omega * jnp.einsum("bij,bj->bi", J, omega))
        return kin - jnp.sum(m * (x @ self.gravity)) + self.joint_potential(x, R, t) + self.forces.potential(x, R)

    def angular_momentum(self, positions, frames, v):
        """World-frame angular momentum about the origin [kg m^2/s]; batched like :meth:`energy`."""
        def one(x, F, vv):
            R = self._rotations_from_frames(F)
            xd, omega, _ = self.unpack(vv)
            spin = jnp.einsum("bij,bjk,bk->bi", R, self.inertias(), omega)
            return jnp.sum(self.masses()[:, None] * jnp.cross(x, xd) + spin, axis=0)

        return jnp.vectorize(one, signature="(b,i),(b,i,j),(n)->(i)")(positions, frames, v)

    def constraint_values(self, positions, frames, t=0.0):
        """``(..., n_constraints)`` joint constraint values from observed data at time ``t`` [s]
        (a scalar, or an array broadcast against the leading axes, e.g. ``Trajectory.times``)."""
        return jnp.vectorize(
            lambda x, F, tt: self.constraints(x, self._rotations_from_frames(F), tt),
            signature="(b,i),(b,i,j),()->(c)",
        )(positions, frames, jnp.asarray(t))

    def constraint_rows(self):
        """Per joint (in the order given), the ``slice`` of its rows in the constraint/multiplier
        block (``constraints(...)[rows]``, ``mu[rows]``)."""
        rows, start = [None] * len(self.joint_bodies), 0
        for g, members in zip(self.groups, self.group_members):
            k = type(g).n_constraints
            for i in members:
                rows[i] = slice(start, start + k)
                start += k
        return tuple(rows)

    def multipliers(self, q, dt):
        """Mean constraint forces over each step, ``(T - 1, n_constraints)``, from coordinates ``q``
        ``(T, n_coordinates)`` saved at EVERY step of size ``dt`` [s] (``Trajectory.q`` with
        ``save_every=1``): ``lambda = (mu_{n+1} - mu_n) / dt`` (the multiplier the step used with
        midpoint kinematics and backward Euler). For every joint the first three rows of a
        :class:`Spherical`, :class:`Revolute` or :class:`Fixed` joint are the force [N] the joint
        exerts on body 2 (world frame; ``-lambda`` on body 1); the remaining rows are the
        multipliers of the orientation constraints [N m]. With midpoint kinematics each value
        carries an alternating ``(-1)^n`` part (module docstring): average consecutive steps.
        Prescribed-motion rows: the force [N] / torque [N m] on body 2 along / about the axis;
        other joints: see their docstrings; dropped redundant rows: zero."""
        mu = jnp.asarray(q)[..., 6 * self.n_bodies :]
        return jnp.diff(mu, axis=-2) / dt

    # ---- AbstractImplicitModel plumbing --------------------------------------------------------------
    def fixed_mask(self):
        return jnp.zeros(self.n_coordinates, bool)

    def prescribed(self, t):
        return jnp.zeros(self.n_coordinates)

    def init_aux(self, q):
        _, psi, _ = self.unpack(q)
        return BodyFrames(jnp.stack([b.orientation for b in self.bodies]), psi)

    def update_aux(self, q, aux):
        _, psi, _ = self.unpack(q)
        quat = quat_multiply(aux.quat, quat_from_axis_angle(psi - aux.psi))
        return BodyFrames(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True), psi)

    def multiplier_mask(self):
        """``(n_coordinates,)`` True on the integrated multipliers ``mu`` (see
        :meth:`~jaxrod.integrate.AbstractImplicitModel.multiplier_mask`)."""
        return np.arange(self.n_coordinates) >= 6 * self.n_bodies

    def default_linear_solver(self):
        # block tridiagonal in a body-by-body order (O(n) per Newton iteration); dense when small
        return multibody_linear_solver(self)

    @jit_when_eager
    def initial_state(self):
        x0 = jnp.stack([b.position for b in self.bodies])
        v0 = self.pack(jnp.stack([b.velocity for b in self.bodies]),
                       jnp.stack([b.angular_velocity for b in self.bodies]), jnp.zeros(self.n_constraints))
        q0 = self.pack(x0, jnp.zeros_like(x0), jnp.zeros(self.n_constraints))
        return State(q0, v0, self.init_aux(q0))

    @jit_when_eager
    def observe(self, q, v, aux):
        x, psi, _ = self.unpack(q)
        return {"positions": x, "frames": jnp.swapaxes(self.rotations(psi, aux), -1, -2)}


@eqx.filter_jit
def _constraint_jacobian(system, y, aux):
    # compiled once per system structure (a jitted lambda made at each assembly recompiled every
    # time); evaluated op by op, the vmapped joint groups cost seconds per group
    nb = system.n_bodies
    return jax.jacfwd(lambda y: system.constraints(y[:nb], system.rotations(y[nb:], aux), 0.0))(y)
