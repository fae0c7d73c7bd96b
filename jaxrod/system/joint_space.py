"""Tree-structured rigid-body systems in joint coordinates (:class:`JointSpaceSystem`).

``JointSpaceSystem(system)`` takes a :class:`~jaxrod.system.MultibodySystem` whose joints form a
tree (every body hangs from the world through exactly one chain of joints, or floats freely) and
integrates it in JOINT coordinates with an explicit scheme (:mod:`jaxrod.integrate.explicit`,
default :class:`~jaxrod.integrate.explicit.RK4`)::

    traj = jaxrod.simulate(JointSpaceSystem(system), dt=5e-3, duration=1.0)      # RK4
    traj = jaxrod.simulate(JointSpaceSystem(system), dt=1e-3, duration=1.0, scheme="semi_implicit_euler")

It is the same mechanism as the maximal-coordinate model (bodies, joints, their springs, dampers,
inputs and limits, force elements, gravity and loads are read from ``system``), with the
joints holding exactly by construction and no Newton solve. The maximal-coordinate model stays
the reference and the only choice for closed loops (a four-bar, a Stewart platform), prescribed
motion and stiff systems; those are refused here with an error saying so.

Coordinates. Each joint becomes one or more nodes of a kinematic tree with a primitive motion in
its joint frame (columns ``axis, u, w`` as in :mod:`jaxrod.system.joints`):

=================  ====================================================  ==================
joint              nodes                                                 ``q`` / ``v``
=================  ====================================================  ==================
``Revolute``       rotation about the axis                               angle [rad] / rate
``Prismatic``      translation along the axis                            travel [m] / rate
``Spherical``      rotation by a unit quaternion                         ``(w, x, y, z)`` /
                                                                         angular velocity in
                                                                         the joint frame
``Universal``      rotation about ``axis1``, then about ``axis2`` (a     2 angles
                   massless cross-pin node between them)
``Planar``         translations along ``u`` and ``w`` (the plane's       2 travels + 1 angle
                   axes in body 1), then a rotation about the normal
``Fixed``          none (a rigid offset)                                 -
no joint           3 world translations + a quaternion (a free body)     3 + 4 / 3 + 3
=================  ====================================================  ==================

All coordinates are zero (identity quaternions) at the assembly configuration of ``system``.
``q`` holds the scalar coordinates first (in node order), then the quaternions; ``v`` the joint
velocities in node order (3 per ball). Revolute angles are not wrapped (a spring acts on the
unwrapped angle; the maximal model wraps to ``(-pi, pi]``).

Dynamics (Featherstone, spatial vectors in the world frame about the origin): forward
kinematics composes the nodes' relative transforms by pointer doubling (``ceil(log2 depth)``
rounds of one batched gather and product over all nodes, so the program does not grow with the
number of links and a chain of 100 links needs 7 rounds, not 100 sequential steps); the motion
axes ``S`` give the node velocities ``V = A S qd`` (``A`` the static ancestor matrix); the bias
forces ``C(q, qd)`` come from the recursive Newton-Euler algorithm written with the same
ancestor sums (accelerations ``A (V x S) qd`` plus the base acceleration ``-g``, forces
``I a + V x* I V - f_ext`` summed over descendants); the joint-space mass matrix by the
composite-rigid-body algorithm (``M_de = S_d . Ic_k S_e`` for ``d`` an ancestor of ``e``, ``Ic``
the descendant sums of the spatial inertias); then ``qdd = M^-1 (Q - C)`` by Cholesky. Every
step is dense ``(n, n)`` algebra on the nodes: ``O(n^2)`` work for the sums and ``O(n^3)`` for
the factorisation, in a few large operations (on XLA-CPU the per-operation cost, not the
arithmetic, dominates up to ~100 links).

Forces: gravity, the bodies' constant ``force``/``torque``, ``system.loads(t)`` and the force
elements (springs, dampers, inputs; their body wrenches by automatic differentiation of their
virtual work, the same function the maximal model uses) enter as external spatial forces; the
Revolute/Prismatic spring-dampers, inputs and limits act directly on their coordinate.

Validated (``tests/test_joint_coordinates.py``): against the maximal-coordinate model, body
positions and frames of a double pendulum, a 10-link chain and a 3-D tree (ball, cardan, planar,
spring-damped slider, damped and driven hinge, a spring element, body loads, a free spinning
body) agree to 1e-8 with the Richardson-extrapolated implicit runs after 0.1-0.2 s, and the two
models' energy functions agree on the same state; RK4 converges at 4th order (error ratio 16.2
per halving), semi-implicit Euler at 1st; a compound pendulum follows the small-angle solution;
a free body falls exactly and keeps its angular momentum; gradients through a run match finite
differences. ``benchmarks/chain_joint.py``: on revolute chains and the double pendulum the RK4
trajectories equal MuJoCo 4's RK4 to 1e-14 m at 1.6-2.8x its CPU time per step.
"""

from __future__ import annotations


import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..geometry import quat_from_axis_angle, quat_multiply, quat_to_rotation, rotation_matrix
from ..integrate.base import State, jit_when_eager
from ..integrate.explicit import AbstractExplicitModel
from .joints import Fixed, Planar, Prismatic, Revolute, Spherical, Universal
from .multibody import MultibodySystem

#: node kinds (static): revolute, prismatic, ball (quaternion), fixed offset
_REV, _PRI, _BALL, _FIX = "R", "P", "B", "F"
_SUPPORTED = (Revolute, Prismatic, Spherical, Universal, Planar, Fixed)
# cyclic permutations: local x -> world y, local x -> world z (a joint motion always acts along local x)
_CYC_Y = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
_CYC_Z = _CYC_Y.T


def _skew(v):
    z = jnp.zeros_like(v[..., 0])
    return jnp.stack([jnp.stack([z, -v[..., 2], v[..., 1]], -1), jnp.stack([v[..., 2], z, -v[..., 0]], -1),
                      jnp.stack([-v[..., 1], v[..., 0], z], -1)], -2)


def _mm(a, b):
    """Batched ``(..., 3, 3) @ (..., 3, 3)`` as a broadcast product and sum: XLA fuses it with the
    elementwise work around it (a batched ``dot`` of 3x3 blocks is a separate, slower kernel on CPU)."""
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def _mv(a, x):
    """Batched ``(..., 3, 3) @ (..., 3)`` (as :func:`_mm`)."""
    return jnp.sum(a * x[..., None, :], axis=-1)


def _compose(X, Y):
    """Composition ``X o Y`` of poses stored as ``(..., 3, 4)`` ``[R | p]``."""
    lin = jnp.sum(X[..., :, :3, None] * Y[..., None, :, :], axis=-2)
    return lin + jnp.concatenate([jnp.zeros_like(X[..., :3]), X[..., 3:]], -1)


def _take(x, idx):
    """``x[idx]`` for a static index array, or ``x`` itself when ``idx`` is ``0, 1, ..., len(x) - 1``
    (a chain of hinges: every node one coordinate, every body its own node), saving a gather."""
    idx = np.asarray(idx, dtype=int)
    if idx.shape == (x.shape[0],) and np.array_equal(idx, np.arange(x.shape[0])):
        return x
    return x[idx]


def _rot_x(a):
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.stack([jnp.stack([o, z, z], -1), jnp.stack([z, c, -s], -1), jnp.stack([z, s, c], -1)], -2)


def _cross_motion(V, S):
    """Spatial motion cross product ``V x S`` (rows ``(omega, v_O)``), batched ``(..., 6)``."""
    w, v = V[..., :3], V[..., 3:]
    return jnp.concatenate([jnp.cross(w, S[..., :3]), jnp.cross(w, S[..., 3:]) + jnp.cross(v, S[..., :3])], -1)


def _cross_force(V, F):
    """Spatial force cross product ``V x* F`` (force rows ``(moment about O, force)``), ``(..., 6)``."""
    w, v = V[..., :3], V[..., 3:]
    return jnp.concatenate([jnp.cross(w, F[..., :3]) + jnp.cross(v, F[..., 3:]), jnp.cross(w, F[..., 3:])], -1)


def _dexpinv(x, v):
    """``J_r(x)^-1 v`` for the right-trivialised exponential of SO(3): the rate of ``x`` in
    ``R = R0 exp(x)`` when the body-frame angular velocity is ``v``; ``(..., 3)``."""
    t2 = jnp.sum(x * x, -1, keepdims=True)
    small = t2 < 1e-4
    ts = jnp.where(small, 1.0, t2)
    t = jnp.sqrt(ts)
    exact = 1.0 / ts - (1.0 + jnp.cos(t)) / (2.0 * t * jnp.sin(t))
    series = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    c = jnp.where(small, series, exact)
    xv = jnp.cross(x, v)
    return v + 0.5 * xv + c * jnp.cross(x, xv)


def _joint_energy(j, s, t):
    """Spring + limit energy minus the input's work [J] of a Revolute/Prismatic joint ``j`` at
    its coordinate ``s`` (the terms of :meth:`~jaxrod.system.joints._CoordinateJoint.potential`)."""
    fn = getattr(j, j._input)
    e = 0.5 * j.stiffness * (s - getattr(j, j._rest)) ** 2 + 0.5 * j.limit_stiffness * j._penetration(s) ** 2
    return e - (fn(t) * s if fn is not None else 0.0)


class _Node:
    """Host-side description of one node of the kinematic tree (assembly only)."""

    def __init__(self, parent, kind, A_R, A_p, B_R, B_p, body=-1, joint=-1, sub=0):
        self.parent, self.kind, self.body, self.joint, self.sub = parent, kind, body, joint, sub
        self.A_R, self.A_p, self.B_R, self.B_p = A_R, A_p, B_R, B_p


def _tree_nodes(system):
    """The nodes of ``system`` (parents before children) from its joints; raises on loops and on
    joints that have no joint-coordinate form."""
    nb = system.n_bodies
    joints = system.joints
    names = [b.name for b in system.bodies]
    owner = {}  # body index -> the joint index that attaches it (as body2)
    for k, (j, (i1, i2)) in enumerate(zip(joints, system.body_index)):
        if not isinstance(j, _SUPPORTED):
            raise ValueError(
                f"JointSpaceSystem: joints[{k}] is a {type(j).__name__}, which has no joint-coordinate form here "
                f"(supported: {', '.join(c.__name__ for c in _SUPPORTED)}); simulate the MultibodySystem itself "
                "(maximal coordinates) instead"
            )
        if i2 in owner:
            raise ValueError(
                f"JointSpaceSystem: body {names[i2]!r} is body2 of joints[{owner[i2]}] and joints[{k}]: the joints "
                "form a closed kinematic loop, or one of them is written from child to parent (body1 must be the "
                "side nearer the world: swap its body1 and body2). Joint coordinates need a tree; for a loop simulate "
                "the MultibodySystem itself (maximal coordinates, which handle loops) instead"
            )
        owner[i2] = k
    # depth-first from the world: a joint's body1 must be reached before its body2
    children = {}
    for k, (i1, i2) in enumerate(system.body_index):
        children.setdefault(i1, []).append(k)
    order, seen, stack = [], set(), [-1] + [i for i in range(nb) if i not in owner]
    roots = set(stack)
    while stack:
        b = stack.pop(0)
        if b in seen:
            continue
        seen.add(b)
        order.append(b)
        for k in children.get(b, []):
            i2 = system.body_index[k][1]
            if i2 in seen:
                raise ValueError(f"JointSpaceSystem: joints[{k}] closes a kinematic loop at body {names[i2]!r}; "
                                 "simulate the MultibodySystem itself (maximal coordinates) instead")
            stack.insert(0, i2)
    missing = [names[i] for i in range(nb) if i not in seen]
    if missing:
        raise ValueError(f"JointSpaceSystem: bodies {missing} are not reachable from the world or a free body "
                         "(their joints form a closed loop); simulate the MultibodySystem itself instead")
    anchors, frames = np.asarray(system.anchors), np.asarray(system.joint_frames)
    nodes, node_of_body = [], {-1: -1}
    I3, z3 = np.eye(3), np.zeros(3)
    for b in order:
        if b == -1:
            continue
        if b in roots:  # a free body: world translations x, y, z, then a ball at its centre of mass
            x0 = np.asarray(system.bodies[b].position, float)
            R0 = np.asarray(system.bodies[b].rotation(), float)
            nodes.append(_Node(-1, _PRI, I3, x0, I3, z3, sub=0))
            nodes.append(_Node(len(nodes) - 1, _PRI, _CYC_Y, z3, _CYC_Y.T, z3, sub=1))
            nodes.append(_Node(len(nodes) - 1, _PRI, _CYC_Z, z3, _CYC_Z.T, z3, sub=2))
            nodes.append(_Node(len(nodes) - 1, _BALL, I3, z3, R0, z3, body=b, sub=3))
            node_of_body[b] = len(nodes) - 1
            continue
        k = owner[b]
        j, i1 = joints[k], system.body_index[k][0]
        parent = node_of_body[i1]
        F1, r1 = frames[k, 0], anchors[k, 0]
        F2, r2 = frames[k, 1], anchors[k, 1]
        BR = F2.T
        if isinstance(j, Universal):
            nodes.append(_Node(parent, _REV, F1, r1, I3, z3, joint=k, sub=0))
            nodes.append(_Node(len(nodes) - 1, _REV, _CYC_Y, z3, _CYC_Y.T @ BR, -_CYC_Y.T @ BR @ r2,
                               body=b, joint=k, sub=1))
        elif isinstance(j, Planar):  # slide along u and w (fixed in body 1), then turn about the normal
            nodes.append(_Node(parent, _PRI, F1 @ _CYC_Y, r1, _CYC_Y.T, z3, joint=k, sub=0))
            nodes.append(_Node(len(nodes) - 1, _PRI, _CYC_Z, z3, _CYC_Z.T, z3, joint=k, sub=1))
            nodes.append(_Node(len(nodes) - 1, _REV, I3, z3, BR, -BR @ r2, body=b, joint=k, sub=2))
        else:
            kind = {Revolute: _REV, Prismatic: _PRI, Spherical: _BALL, Fixed: _FIX}[type(j)]
            nodes.append(_Node(parent, kind, F1, r1, BR, -BR @ r2, body=b, joint=k))
        node_of_body[b] = len(nodes) - 1
    return nodes, node_of_body


class JointSpaceSystem(AbstractExplicitModel):
    """A tree-structured :class:`~jaxrod.system.MultibodySystem` in joint coordinates, integrated
    by :func:`jaxrod.simulate` with an explicit scheme (see the module docstring).

    Arguments:
        system: the :class:`~jaxrod.system.MultibodySystem` (its bodies, joints, forces, gravity
            and loads; assembled configuration = zero joint coordinates). Refused, naming the
            joint: closed loops, a body attached as ``body2`` of two joints, a joint whose
            ``body1`` hangs below its ``body2``, and joints without a joint-coordinate form
            (``PlanarPin``, which closes loops, and prescribed motion).

    Differentiable leaves: everything ``system`` holds as arrays and reads at run time (masses,
    inertias, joint springs, dampers, inputs and limits, force elements, gravity, body loads), and
    the node offsets :attr:`A_R`, :attr:`A_p`, :attr:`B_R`, :attr:`B_p` (joint frames and points in
    the body frames). The assembly geometry is read from ``system`` once, when this is built
    (outside ``jax.jit``): a new joint point needs a new ``JointSpaceSystem``.

    State: ``q`` ``(n_q,)`` (scalar coordinates, then ``(n_ball, 4)`` quaternions flattened),
    ``v`` ``(n_v,)``; :attr:`n_q`, :attr:`n_v`. Observed frames (``Trajectory``): ``positions``
    ``(n_bodies, 3)`` centres of mass [m] and ``frames`` ``(n_bodies, 3, 3)`` whose rows are the
    body axes (as the maximal model), plus ``q`` and ``v``.
    """

    system: MultibodySystem
    A_R: jax.Array
    A_p: jax.Array
    B_R: jax.Array
    B_p: jax.Array
    parent: tuple = eqx.field(static=True)
    kinds: str = eqx.field(static=True)
    body_node: tuple = eqx.field(static=True)
    node_body: tuple = eqx.field(static=True)
    node_dof: tuple = eqx.field(static=True)  # first v index of each node (-1 for fixed)
    node_q: tuple = eqx.field(static=True)  # first q index of each node (-1 for fixed)
    node_joint: tuple = eqx.field(static=True)
    rounds: tuple = eqx.field(static=True)  # pointer-doubling ancestor indices per round (n = the world)
    n_q: int = eqx.field(static=True)
    n_v: int = eqx.field(static=True)

    def __init__(self, system):
        if not isinstance(system, MultibodySystem):
            raise ValueError(f"JointSpaceSystem.system must be a MultibodySystem, got {type(system).__name__}")
        if any(isinstance(x, jax.core.Tracer) for x in (system.anchors, system.joint_frames)):
            raise ValueError(
                "JointSpaceSystem(system) reads the assembly geometry (joint points and frames) once, so it must be "
                "built outside jax.jit/grad/vmap: build it first and pass it into the transformed function (its "
                "mass properties, joint parameters, gravity and loads stay differentiable leaves)"
            )
        nodes, node_of_body = _tree_nodes(system)
        if all(nd.kind == _FIX for nd in nodes):
            raise ValueError("JointSpaceSystem: the system has no degrees of freedom (every body is welded by "
                             "Fixed joints); nothing to integrate")
        self.system = system
        n = len(nodes)
        self.A_R = jnp.asarray(np.stack([nd.A_R for nd in nodes]) if n else np.zeros((0, 3, 3)))
        self.A_p = jnp.asarray(np.stack([nd.A_p for nd in nodes]) if n else np.zeros((0, 3)))
        self.B_R = jnp.asarray(np.stack([nd.B_R for nd in nodes]) if n else np.zeros((0, 3, 3)))
        self.B_p = jnp.asarray(np.stack([nd.B_p for nd in nodes]) if n else np.zeros((0, 3)))
        self.parent = tuple(nd.parent for nd in nodes)
        self.kinds = "".join(nd.kind for nd in nodes)
        self.body_node = tuple(node_of_body[b] for b in range(system.n_bodies))
        self.node_body = tuple(nd.body for nd in nodes)
        self.node_joint = tuple((nd.joint, nd.sub) for nd in nodes)
        dof, qi, nv, nq = [], [], 0, 0
        for nd in nodes:  # v: node order; q: scalars first (node order), quaternions after
            if nd.kind == _FIX:
                dof.append(-1)
            else:
                dof.append(nv)
                nv += 3 if nd.kind == _BALL else 1
        n_scalar = sum(nd.kind in (_REV, _PRI) for nd in nodes)
        ball = 0
        for nd in nodes:
            if nd.kind in (_REV, _PRI):
                qi.append(nq)
                nq += 1
            elif nd.kind == _BALL:
                qi.append(n_scalar + 4 * ball)
                ball += 1
            else:
                qi.append(-1)
        self.node_dof, self.node_q, self.n_v, self.n_q = tuple(dof), tuple(qi), nv, n_scalar + 4 * ball
        # pointer doubling: after round r each node's transform is relative to its 2^(r+1)-th ancestor
        anc = np.array([p if p >= 0 else n for p in self.parent] + [n], dtype=int)
        rounds = []
        while np.any(anc[:n] != n):
            rounds.append(tuple(int(a) for a in anc[:n]))
            anc = anc[anc]
        self.rounds = tuple(rounds)

    # ---- static structure ------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    def _idx(self, kind):
        return np.array([i for i, k in enumerate(self.kinds) if k == kind], dtype=int)

    def _ancestors(self):
        """``(n, n)`` float: ``A[i, j] = 1`` when node ``j`` is node ``i`` or one of its ancestors."""
        n = self.n_nodes
        A = np.zeros((n, n))
        for i in range(n):
            j = i
            while j >= 0:
                A[i, j] = 1.0
                j = self.parent[j]
        return A

    def _dof_nodes(self):
        """``(n_v,)`` node of every velocity coordinate."""
        out = []
        for i, k in enumerate(self.kinds):
            out += [i] * (3 if k == _BALL else 1 if k in (_REV, _PRI) else 0)
        return np.array(out, dtype=int)

    # ---- kinematics ------------------------------------------------------------------------------
    def _motion(self, q):
        """Per node, the joint motion ``(Mrot (n, 3, 3), Mtr (n, 3))`` in the joint frame: gathers
        and selects (fusible elementwise work), no scatters."""
        n, dt = self.n_nodes, q.dtype
        kinds = np.array(list(self.kinds)) if n else np.zeros(0, str)
        qi = np.maximum(np.asarray(self.node_q, dtype=int), 0)
        eye = jnp.eye(3, dtype=dt)
        Mrot = jnp.broadcast_to(eye, (n, 3, 3))
        is_rev, is_ball, is_pri = kinds == _REV, kinds == _BALL, kinds == _PRI
        if is_rev.any():
            Mrot = jnp.where(jnp.asarray(is_rev)[:, None, None], _rot_x(_take(q, qi)), Mrot)
        if is_ball.any():
            quats = q[np.minimum(qi[:, None] + np.arange(4), self.n_q - 1)]
            quats = jnp.where(jnp.asarray(is_ball)[:, None], quats, jnp.asarray([1.0, 0.0, 0.0, 0.0], dt))
            Mrot = jnp.where(jnp.asarray(is_ball)[:, None, None], quat_to_rotation(quats), Mrot)
        Mtr = jnp.zeros((n, 3), dt)
        if is_pri.any():
            Mtr = jnp.where(jnp.asarray(is_pri)[:, None], _take(q, qi)[:, None] * eye[0], Mtr)
        return Mrot, Mtr

    def kinematics(self, q):
        """World poses of every node for coordinates ``q`` ``(n_q,)``.

        Returns ``(R, p, W, P)``: node rotations ``(n, 3, 3)`` (body -> world) and origins
        ``(n, 3)`` [m] (a body node's origin is its centre of mass), joint frames ``(n, 3, 3)``
        (columns: motion axis first) and joint points ``(n, 3)`` [m] in the world frame."""
        n = self.n_nodes
        Mrot, Mtr = self._motion(q)
        # poses as (n, 3, 4) [R | p]: one gather and one fused product per composition
        Tj = _compose(jnp.concatenate([self.A_R, self.A_p[..., None]], -1),
                      jnp.concatenate([Mrot, Mtr[..., None]], -1))  # joint frame after the motion, in the parent
        T = _compose(Tj, jnp.concatenate([self.B_R, self.B_p[..., None]], -1))
        identity = jnp.eye(3, 4, dtype=q.dtype)

        def ancestor_pose(anc, T):
            a = np.asarray(anc, dtype=int)
            world = a == n
            Ta = _take(T, np.minimum(a, n - 1))
            return jnp.where(jnp.asarray(world)[:, None, None], identity, Ta) if world.any() else Ta

        for anc in self.rounds:  # pointer doubling (module docstring)
            T = _compose(ancestor_pose(anc, T), T)
        WP = _compose(ancestor_pose([a if a >= 0 else n for a in self.parent], T), Tj)
        return T[..., :3], T[..., 3], WP[..., :3], WP[..., 3]

    def _dof_columns(self):
        """Static ``(node, column, prismatic)`` of every velocity coordinate: the joint-frame
        column that is its axis, and whether it translates."""
        node, col, pri = [], [], []
        for i, k in enumerate(self.kinds):
            m = 3 if k == _BALL else 1 if k in (_REV, _PRI) else 0
            node += [i] * m
            col += list(range(m))
            pri += [k == _PRI] * m
        return np.array(node, dtype=int), np.array(col, dtype=int), np.array(pri, dtype=bool)

    def _axes(self, W, P):
        """``(n_v, 6)`` world motion axes ``S = (omega, v_O)`` of the velocity coordinates."""
        node, col, pri = self._dof_columns()
        a = W[:, :, 0] if np.array_equal(node, np.arange(W.shape[0])) and not col.any() else W[node, :, col]
        S = jnp.concatenate([a, jnp.cross(_take(P, node), a)], -1)
        if pri.any():
            S = jnp.where(jnp.asarray(pri)[:, None], jnp.concatenate([jnp.zeros_like(a), a], -1), S)
        return S

    # ---- inertia and forces ----------------------------------------------------------------------
    def _inertia_parameters(self, R, p):
        """``(n, 13)`` the spatial inertia of every node about the world origin as ``(m, h = m c,
        Jo (9))`` with ``Jo = R J R^T - m [c]x^2`` (zero for the massless nodes): linear in the
        bodies, so the composite inertias are sums of rows."""
        bodies = np.asarray(self.node_body, dtype=int)
        has = bodies >= 0
        bc = np.maximum(bodies, 0)
        m = self.system.masses()[bc]
        J = self.system.inertias()[bc]
        Jw = _mm(_mm(R, J), jnp.swapaxes(R, -1, -2))
        cc = jnp.sum(p * p, -1)
        Jo = Jw + m[:, None, None] * (cc[:, None, None] * jnp.eye(3, dtype=p.dtype) - p[:, :, None] * p[:, None, :])
        out = jnp.concatenate([m[:, None], m[:, None] * p, Jo.reshape(-1, 9)], -1)
        if not has.all():
            out = jnp.where(jnp.asarray(has)[:, None], out, 0.0)
        return out

    @staticmethod
    def _apply_inertia(I, x):
        """Spatial inertias ``I`` ``(..., 13)`` (see :meth:`_inertia_parameters`) times motions
        ``x`` ``(..., 6)``: ``(Jo w + h x v, m v - h x w)``."""
        m, h, Jo = I[..., :1], I[..., 1:4], I[..., 4:].reshape(I.shape[:-1] + (3, 3))
        w, v = x[..., :3], x[..., 3:]
        return jnp.concatenate([_mv(Jo, w) + jnp.cross(h, v), m * v - jnp.cross(h, w)], -1)

    def _external(self, R, p, V, t):
        """``(n, 6)`` external spatial forces about the origin: the bodies' constant force and
        torque, ``system.loads(t)`` and the force elements (gravity is the base acceleration)."""
        sysm, nb = self.system, self.system.n_bodies
        bn = np.asarray(self.body_node, dtype=int)
        Rb, xb, Vb = _take(R, bn), _take(p, bn), _take(V, bn)
        f, tau = sysm.applied(t)
        if sysm.forces.groups:
            omega_w = Vb[:, :3]
            xd = Vb[:, 3:] + jnp.cross(omega_w, xb)
            omega_b = _mv(jnp.swapaxes(Rb, -1, -2), omega_w)
            work = sysm.forces.work(xb, Rb, xd, omega_b, t)
            gx, gth = jax.grad(lambda dx, dth: work(xb + dx, Rb @ rotation_matrix(dth)), argnums=(0, 1))(
                jnp.zeros((nb, 3), p.dtype), jnp.zeros((nb, 3), p.dtype))
            f = f - gx
            tau = tau - _mv(Rb, gth)
        wrench = jnp.concatenate([tau + jnp.cross(xb, f), f], -1)
        bodies = np.asarray(self.node_body, dtype=int)
        out = _take(wrench, np.maximum(bodies, 0))
        return out if (bodies >= 0).all() else jnp.where(jnp.asarray(bodies >= 0)[:, None], out, 0.0)

    def _coordinate_joints(self, q, v):
        """Per group of Revolute/Prismatic joints of ``system``: ``(group, coordinates, rates,
        v indices)``."""
        sysm = self.system
        slot = {jk[0]: i for i, jk in enumerate(self.node_joint) if jk[0] >= 0 and self.kinds[i] in (_REV, _PRI)}
        out = []
        for g, members in zip(sysm.groups, sysm.group_members):
            if isinstance(g, (Revolute, Prismatic)):
                nodes = np.array([slot[k] for k in members], dtype=int)
                d = np.asarray(self.node_dof, dtype=int)[nodes]
                out.append((g, q[np.asarray(self.node_q, dtype=int)[nodes]], None if v is None else v[d], d))
        return out

    def _joint_forces(self, q, v, t):
        """``(n_v,)`` generalised forces of the Revolute/Prismatic springs, dampers, inputs and
        limits on their own coordinates [N m or N] (a gather from the groups' outputs)."""
        parts, index = [], np.full(self.n_v, -1)
        for g, s, sd, d in self._coordinate_joints(q, v):
            def one(j, s, sd):
                in_limit = j._penetration(s) != 0
                c = j.damping + jnp.where(in_limit, j.limit_damping, 0.0)
                return -jax.grad(_joint_energy, argnums=1)(j, s, t) - c * sd

            index[d] = sum(len(x) for x in parts) + np.arange(len(d))
            parts.append(eqx.filter_vmap(one)(g, s, sd))
        if not parts:
            return jnp.zeros(self.n_v, v.dtype)
        out = jnp.concatenate(parts)[np.maximum(index, 0)]
        return out if (index >= 0).all() else jnp.where(jnp.asarray(index >= 0), out, 0.0)

    # ---- dynamics --------------------------------------------------------------------------------
    def _structure(self, dtype):
        """Static matrices: ancestors ``A`` ``(n, n)``, ``Ad = A[:, dof nodes]`` ``(n, n_v)``, the
        upper / strictly-lower masks of the mass matrix ``(n_v, n_v)``, the dof nodes ``(n_v,)``."""
        A = self._ancestors()
        dn = self._dof_nodes()
        rel = A[dn][:, dn].T  # rel[d, e]: node(d) is node(e) or an ancestor of it
        return (jnp.asarray(A, dtype), jnp.asarray(A[:, dn], dtype), jnp.asarray(rel, dtype),
                jnp.asarray(rel.T * (1.0 - rel), dtype), dn)

    def dynamics(self, q, v, t=0.0):
        """``(M (n_v, n_v), tau (n_v,))``: the joint-space mass matrix and the generalised forces
        ``Q - C(q, v)`` (applied minus bias), so that ``M qdd = tau``."""
        A, Ad, upper, lower, dn = self._structure(q.dtype)
        R, p, W, P = self.kinematics(q)
        S = self._axes(W, P)
        V = Ad @ (S * v[:, None])
        a_base = jnp.concatenate([jnp.zeros(3, q.dtype), -self.system.gravity])
        Ab = Ad @ (_cross_motion(_take(V, dn), S) * v[:, None]) + a_base
        I = self._inertia_parameters(R, p)
        f = self._apply_inertia(I, Ab) + _cross_force(V, self._apply_inertia(I, V)) - self._external(R, p, V, t)
        # RNEA: forces summed over the descendants, on the axes; CRBA: the composite inertia of
        # each dof's node (the descendants' sums of both in one product)
        sums = _take(A.T @ jnp.concatenate([f, I], -1), dn)
        C = jnp.sum(S * sums[:, :6], -1)
        Ic = sums[:, 6:]
        K = S @ self._apply_inertia(Ic, S).T  # K[d, e] = S_d . Ic_node(e) S_e
        M = upper * K + lower * K.T
        return M, self._joint_forces(q, v, t) - C

    def acceleration(self, q, v, t):
        """Joint accelerations ``qdd`` ``(n_v,)`` from ``M qdd = Q - C`` (Cholesky)."""
        M, tau = self.dynamics(q, v, t)
        return jsl.cho_solve(jsl.cho_factor(M, lower=True), tau)

    # ---- chart (explicit-scheme interface) -------------------------------------------------------
    def _ball_slices(self):
        ball = self._idx(_BALL)
        qi = np.asarray(self.node_q, dtype=int)[ball]
        di = np.asarray(self.node_dof, dtype=int)[ball]
        return qi[:, None] + np.arange(4), di[:, None] + np.arange(3)

    def _scalar_slices(self):
        sc = np.array([i for i, k in enumerate(self.kinds) if k in (_REV, _PRI)], dtype=int)
        return np.asarray(self.node_q, dtype=int)[sc], np.asarray(self.node_dof, dtype=int)[sc]

    def displace(self, q, x):
        """``q (+) x``: scalar coordinates plus ``x``; quaternions ``Q exp(x_ball)`` (renormalised)."""
        qs, ds = self._scalar_slices()
        qb, db = self._ball_slices()
        if not qb.size and np.array_equal(qs, np.arange(self.n_q)) and np.array_equal(ds, np.arange(self.n_v)):
            return q + x  # scalar coordinates only, in the same order (chains of hinges and sliders)
        out = q.at[qs].add(x[ds]) if qs.size else q
        if qb.size:
            Q = quat_multiply(q[qb], quat_from_axis_angle(x[db]))
            out = out.at[qb].set(Q / jnp.linalg.norm(Q, axis=-1, keepdims=True))
        return out

    def chart_rate(self, x, v):
        """``dx/dt``: ``v`` for scalar coordinates, ``dexp^-1(x) omega`` for the balls."""
        _, db = self._ball_slices()
        if not db.size:
            return v
        return v.at[db].set(_dexpinv(x[db], v[db]))

    # ---- states and observations -----------------------------------------------------------------
    def zero_configuration(self):
        """``(n_q,)`` the assembly configuration (zero coordinates, identity quaternions)."""
        q = np.zeros(self.n_q)
        qb, _ = self._ball_slices()
        q[qb[:, 0]] = 1.0 if qb.size else 0.0
        return jnp.asarray(q)

    @jit_when_eager
    def velocities_from_bodies(self, q, xd, omega_body):
        """Joint velocities ``(n_v,)`` closest, in the kinetic-energy norm, to the body velocities
        ``xd`` ``(n_bodies, 3)`` [m/s] (centres of mass, world) and ``omega_body`` ``(n_bodies, 3)``
        [rad/s] (body frames): ``M v = sum_i J_i^T I_i V_i`` (exact when they are compatible)."""
        R, p, W, P = self.kinematics(q)
        S = self._axes(W, P)
        bn = np.asarray(self.body_node, dtype=int)
        w = _mv(R[bn], omega_body)
        Vt = jnp.zeros((self.n_nodes, 6), q.dtype).at[bn].set(jnp.concatenate([w, xd - jnp.cross(w, p[bn])], -1))
        A, _, _, _, dn = self._structure(q.dtype)
        h = A.T @ self._apply_inertia(self._inertia_parameters(R, p), Vt)
        M, _ = self.dynamics(q, jnp.zeros(self.n_v, q.dtype))
        return jsl.cho_solve(jsl.cho_factor(M, lower=True), jnp.sum(S * h[dn], -1))

    def initial_state(self):
        """:class:`~jaxrod.integrate.State` at the assembly configuration, with the joint
        velocities that best match the bodies' initial velocities (:meth:`velocities_from_bodies`).
        Raises ``ValueError`` when those are not compatible with the joints (mismatch above 1e-9 of
        their scale)."""
        q0 = self.zero_configuration()
        xd = jnp.stack([b.velocity for b in self.system.bodies])
        om = jnp.stack([b.angular_velocity for b in self.system.bodies])
        v0 = self.velocities_from_bodies(q0, xd, om)
        if not any(isinstance(a, jax.core.Tracer) for a in (xd, om, v0)):
            xd2, om2 = self.body_velocities(q0, v0)
            err = float(jnp.max(jnp.abs(jnp.concatenate([xd2 - xd, om2 - om]))))
            scale = 1.0 + float(jnp.max(jnp.abs(jnp.concatenate([xd, om]))))
            if err > 1e-9 * scale:
                raise ValueError(
                    f"JointSpaceSystem: the bodies' initial velocity / angular_velocity are not compatible with the "
                    f"joints (largest mismatch {err:.3g} m/s or rad/s); give compatible body velocities or pass "
                    "state0=jaxrod.integrate.State(q0, v0, None) in joint coordinates"
                )
        return State(q0, v0, None)

    @jit_when_eager
    def body_velocities(self, q, v):
        """``(xd (n_bodies, 3) [m/s], omega (n_bodies, 3) [rad/s])``: centre-of-mass velocities
        (world) and angular velocities in the body frames, as the maximal model's ``v`` holds them."""
        R, p, W, P = self.kinematics(q)
        S = self._axes(W, P)
        V = jnp.asarray(self._ancestors(), q.dtype)[:, self._dof_nodes()] @ (S * v[:, None])
        bn = np.asarray(self.body_node, dtype=int)
        w = V[bn, :3]
        return V[bn, 3:] + jnp.cross(w, p[bn]), jnp.einsum("bji,bj->bi", R[bn], w)

    @jit_when_eager
    def maximal_velocity(self, q, v):
        """The velocity vector of the maximal model (``system``'s layout, multiplier rates zero),
        e.g. for ``system.energy(positions, frames, maximal_velocity(q, v))``."""
        xd, om = self.body_velocities(q, v)
        return self.system.pack(xd, om, jnp.zeros(self.system.n_constraints, q.dtype))

    @jit_when_eager
    def observe_state(self, q, v):
        R, p, _, _ = self.kinematics(q)
        bn = np.asarray(self.body_node, dtype=int)
        return {"positions": _take(p, bn), "frames": jnp.swapaxes(_take(R, bn), -1, -2)}

    def energy(self, q, v, t=0.0):
        """Kinetic + gravitational + spring energy [J] (minus the work of the joint inputs, as
        the maximal model's :meth:`~jaxrod.system.MultibodySystem.energy`) of ``(q, v)``; the
        joint springs on the unwrapped coordinates. Batched over leading axes."""
        return self._energy(jnp.asarray(q), jnp.asarray(v), jnp.asarray(t, dtype=float))

    @jit_when_eager
    def _energy(self, q, v, t):
        def one(q, v):
            M, _ = self.dynamics(q, jnp.zeros_like(v), t)
            R, p, _, _ = self.kinematics(q)
            bn = np.asarray(self.body_node, dtype=int)
            pot = -jnp.sum(self.system.masses() * (p[bn] @ self.system.gravity))
            pot = pot + self.system.forces.potential(p[bn], R[bn])
            Qs = self._joint_potential(q, t)
            return 0.5 * v @ M @ v + pot + Qs

        return jnp.vectorize(one, signature="(a),(b)->()")(q, v)

    def _joint_potential(self, q, t):
        total = jnp.zeros((), q.dtype)
        for g, s, _, _ in self._coordinate_joints(q, None):
            total = total + jnp.sum(eqx.filter_vmap(lambda j, s: _joint_energy(j, s, t))(g, s))
        return total
