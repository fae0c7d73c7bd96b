"""MJCF (MuJoCo) robots in: :func:`read_mjcf` compiles the file with MuJoCo's own model compiler
and reads the compiled model into a :class:`~.robot_tree.RobotTree`.

Why MuJoCo's compiler rather than our own XML parser: MJCF has defaults classes, ``<include>``,
inertias inferred from geoms (``inertiafromgeom``), angle units, ``fromto``, frames and
``childclass``; the compiled model has resolved all of them into numbers. MuJoCo is an optional
dependency (``pip install jaxrod[mjcf]``).

Read: every body's mass, centre of mass and principal inertia at ``qpos0``
(``xipos``/``ximat``/``body_inertia``); joints ``hinge`` (-> Revolute), ``slide`` (-> Prismatic),
``ball`` (-> Spherical), ``free`` (no joint: a free body); a body without joints is welded to its
parent (merged into it; welded to the world, dropped); ``stiffness`` with ``springref``,
``damping``, ``range`` of limited joints (penalty stops when ``limit_stiffness > 0``, else a
warning); gravity and the timestep of ``<option>``. Not modelled, with a warning: ``armature``,
``frictionloss``. Refused: a body with more than one joint (compose it from bodies with one joint
each), equality constraints, tendons and actuators (ignored geoms, sites and contacts are not
read: jaxrod's systems have no contact here).
"""

from __future__ import annotations

import warnings

import numpy as np

from .errors import ModelFileError
from .robot_tree import RobotFileWarning, RobotJoint, RobotLink, RobotTree, limit_keys
from .topology import WORLD

__all__ = ["read_mjcf"]


def _mujoco(path):
    try:
        import mujoco
    except ImportError:
        raise ModelFileError(path, "", "reading MJCF needs MuJoCo's model compiler: pip install 'jaxrod[mjcf]' "
                                       "(or pip install mujoco)") from None
    return mujoco


def read_mjcf(path, *, joint_positions=None, limit_stiffness=0.0, limit_damping=0.0) -> RobotTree:
    """The :class:`~.robot_tree.RobotTree` of the MJCF file ``path`` (see the module docstring).

    Arguments:
        joint_positions: ``{joint name: position}`` [rad or m] replacing ``qpos0`` of hinge and
            slide joints for the initial configuration.
        limit_stiffness, limit_damping: stiffness and damping of the penalty stops that enforce
            the ``range`` of limited joints (0: not enforced, with a warning).

    Raises:
        ModelFileError: MuJoCo's compiler error (naming the element), or an element jaxrod cannot
            represent.
    """
    path = str(path)
    mj = _mujoco(path)
    try:
        m = mj.MjModel.from_xml_path(path)
    except (ValueError, OSError) as e:
        raise ModelFileError(path, "", f"MuJoCo could not compile it: {str(e).strip()}") from None

    def name(obj, i):
        return mj.mj_id2name(m, obj, i) or f"{'body' if obj == mj.mjtObj.mjOBJ_BODY else 'joint'}{i}"

    for count, what in ((m.neq, "equality constraints"), (m.ntendon, "tendons"), (m.nu, "actuators")):
        if count:
            raise ModelFileError(path, "", f"has {count} {what}, which jaxrod does not read from MJCF yet; remove "
                                           "them (joint inputs and constraints go in a model file that includes this one)")
    d = mj.MjData(m)
    qpos = m.qpos0.copy()
    joint_names = [name(mj.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    for jname, value in dict(joint_positions or {}).items():
        if jname not in joint_names:
            raise ValueError(f"joint_positions names no joint of {path}: {jname!r}; joints: {joint_names}")
        j = joint_names.index(jname)
        if int(m.jnt_type[j]) not in (int(mj.mjtJoint.mjJNT_HINGE), int(mj.mjtJoint.mjJNT_SLIDE)):
            raise ValueError(f"joint_positions[{jname!r}]: only hinge and slide joints have one coordinate")
        qpos[m.jnt_qposadr[j]] = float(value)
    d.qpos[:] = qpos
    mj.mj_kinematics(m, d)

    links, joints = {}, []
    kinds = {int(mj.mjtJoint.mjJNT_HINGE): "revolute", int(mj.mjtJoint.mjJNT_SLIDE): "prismatic",
             int(mj.mjtJoint.mjJNT_BALL): "spherical", int(mj.mjtJoint.mjJNT_FREE): "free"}
    for b in range(1, m.nbody):
        bname = name(mj.mjtObj.mjOBJ_BODY, b)
        where = f"body {bname!r}"
        R = d.ximat[b].reshape(3, 3)
        links[bname] = RobotLink(bname, float(m.body_mass[b]), d.xipos[b].copy(),
                                 R @ np.diag(m.body_inertia[b]) @ R.T, where)
        parent = m.body_parentid[b]
        pname = WORLD if parent == 0 else name(mj.mjtObj.mjOBJ_BODY, parent)
        n = m.body_jntnum[b]
        if n > 1:
            raise ModelFileError(path, where, f"has {n} joints; jaxrod reads one joint per body (split it into "
                                              "bodies with one joint each)")
        if n == 0:
            joints.append(RobotJoint(f"{bname}_weld", "fixed", pname, bname, d.xpos[b].copy(), np.array([1.0, 0, 0]),
                                     where=where))
            continue
        j = m.body_jntadr[b]
        jname, kind = joint_names[j], kinds[int(m.jnt_type[j])]
        jwhere = f"joint {jname!r}"
        dof = m.jnt_dofadr[j]
        for attr, label in ((m.dof_armature, "armature"), (m.dof_frictionloss, "frictionloss")):
            if kind != "free" and np.any(attr[dof:dof + (3 if kind == "spherical" else 1)]):
                warnings.warn(f"{path}: {jwhere} has {label} that jaxrod does not model; it is ignored",
                              RobotFileWarning, stacklevel=2)
        keys = {}
        if kind in ("revolute", "prismatic"):
            q0 = float(qpos[m.jnt_qposadr[j]])
            keys["damping"] = float(m.dof_damping[dof])
            if m.jnt_stiffness[j]:
                keys["stiffness"] = float(m.jnt_stiffness[j])
                keys["rest_angle" if kind == "revolute" else "rest_length"] = float(m.qpos_spring[m.jnt_qposadr[j]]) - q0
            if m.jnt_limited[j]:
                lo, hi = (float(x) for x in m.jnt_range[j])
                keys.update(limit_keys(jname, lo, hi, q0, limit_stiffness, limit_damping,
                                       "rad" if kind == "revolute" else "m", path))
        elif kind == "spherical" and (m.dof_damping[dof] or m.jnt_stiffness[j]):
            warnings.warn(f"{path}: {jwhere} (ball) has damping or stiffness that jaxrod's spherical joint does not "
                          "model; it is ignored", RobotFileWarning, stacklevel=2)
        joints.append(RobotJoint(jname, kind, pname, bname, d.xanchor[j].copy(), d.xaxis[j].copy(), keys, jwhere))
    gravity = tuple(float(g) for g in m.opt.gravity)
    return RobotTree(path, links, joints, gravity=gravity, timestep=float(m.opt.timestep))
