"""URDF robots in: :func:`read_urdf` parses a URDF file into a :class:`~.robot_tree.RobotTree`.

Read with the standard library's ``xml.etree.ElementTree`` (URDF is a small XML schema; no extra
dependency). What is read, per the URDF specification (wiki.ros.org/urdf/XML):

* ``<link>``: ``<inertial>`` (``<origin xyz rpy>``, ``<mass value>``, ``<inertia ixx ixy ixz iyy
  iyz izz>`` in the inertial frame); ``<visual>``/``<collision>`` are ignored (no contact).
* ``<joint type>``: ``revolute``, ``continuous`` (-> :class:`~jaxrod.system.Revolute`),
  ``prismatic`` (-> :class:`~jaxrod.system.Prismatic`), ``fixed`` (the links are merged into one
  rigid body), ``floating`` (no joint: the child is a free body), ``planar`` (->
  :class:`~jaxrod.system.Planar`, normal = axis); ``<parent link>``, ``<child link>``, ``<origin
  xyz rpy>`` (the child frame in the parent frame at zero joint position), ``<axis xyz>`` (in the
  joint frame; default ``1 0 0``), ``<limit lower upper>`` (penalty stops when
  ``limit_stiffness > 0``, otherwise a :class:`~.robot_tree.RobotFileWarning`), ``<dynamics
  damping>`` (-> ``damping``; ``friction`` is not modelled: a warning). ``<mimic>`` is refused.
* ``rpy``: fixed-axis roll, pitch, yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

The root link (the one no joint has as child) is welded to the world (``fixed_base=True``, a
robot arm bolted down) or is a free body (``fixed_base=False``). The initial configuration is the
zero joint position, or ``joint_positions`` (rad or m by joint name); jaxrod's joint coordinates
are measured from it (limits are shifted accordingly).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .errors import ModelFileError, closest
from .robot_tree import RobotFileWarning, RobotJoint, RobotLink, RobotTree, limit_keys
from .topology import WORLD

__all__ = ["read_urdf", "URDF_JOINT_TYPES", "rpy_matrix"]

#: URDF joint type -> jaxrod joint type (model-file name)
URDF_JOINT_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
                    "floating": "free", "planar": "planar"}


def rpy_matrix(rpy):
    """``(3, 3)`` rotation of URDF's ``rpy`` (roll about x, then pitch about y, then yaw about z,
    all about the fixed axes): ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1.0]])
    ry = np.array([[cp, 0, sp], [0, 1.0, 0], [-sp, 0, cp]])
    rx = np.array([[1.0, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


def axis_rotation(axis, angle):
    """``(3, 3)`` rotation by ``angle`` [rad] about the unit vector ``axis`` (Rodrigues)."""
    k = np.asarray(axis, float)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


class _Reader:
    def __init__(self, path):
        self.path = str(path)

    def error(self, where, problem):
        return ModelFileError(self.path, where, problem)

    def floats(self, element, attr, n, where, default=None):
        raw = element.get(attr) if element is not None else None
        if raw is None:
            if default is None:
                raise self.error(where, f"missing attribute {attr}=\"...\" ({n} numbers)")
            return np.asarray(default, float)
        try:
            values = np.asarray([float(x) for x in raw.split()], float)
        except ValueError:
            raise self.error(where, f"{attr}=\"{raw}\": expected {n} numbers") from None
        if values.shape != (n,) or not np.all(np.isfinite(values)):
            raise self.error(where, f"{attr}=\"{raw}\": expected {n} finite numbers")
        return values

    def origin(self, element, where):
        o = element.find("origin") if element is not None else None
        return (self.floats(o, "xyz", 3, f"{where}.origin", (0, 0, 0)),
                rpy_matrix(self.floats(o, "rpy", 3, f"{where}.origin", (0, 0, 0))))


def _parse(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ModelFileError(path, "", f"not valid XML: {e}") from None
    except OSError as e:
        raise ModelFileError(path, "", f"cannot read the file: {e}") from None
    if root.tag != "robot":
        raise ModelFileError(path, "", f"not a URDF file: the root element is <{root.tag}>, expected <robot>")
    return root


def read_urdf(path, *, fixed_base=True, joint_positions=None, limit_stiffness=0.0, limit_damping=0.0) -> RobotTree:
    """The :class:`~.robot_tree.RobotTree` of the URDF file ``path`` (see the module docstring).

    Arguments:
        fixed_base: weld the root link to the world (``True``) or let it move freely.
        joint_positions: ``{joint name: position}`` [rad or m] of the initial configuration
            (default: all zero).
        limit_stiffness, limit_damping: stiffness [N m/rad or N/m] and damping of the penalty
            stops that enforce ``<limit lower upper>`` (0: limits are not enforced, with a
            warning).

    Raises:
        ModelFileError: naming the file and the element: bad XML, a missing or unknown link, an
            unknown or unsupported joint type, a link with two parents, a loop, bad numbers.
    """
    path = str(path)
    rd = _Reader(path)
    root = _parse(path)
    raw_links = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise rd.error("link", "a <link> without a name")
        if name in raw_links:
            raise rd.error(f"link {name!r}", "defined twice")
        raw_links[name] = el
    if not raw_links:
        raise rd.error("", "no <link> elements")
    raw_joints, parent_of = [], {}
    for el in root.findall("joint"):
        name = el.get("name") or "?"
        where = f"joint {name!r}"
        kind = el.get("type")
        if kind not in URDF_JOINT_TYPES:
            raise rd.error(f"{where}.type", f"unknown joint type {kind!r}{closest(kind, URDF_JOINT_TYPES)}; "
                                            f"URDF joint types: {', '.join(URDF_JOINT_TYPES)}")
        if el.find("mimic") is not None:
            raise rd.error(where, "<mimic> joints are not supported (couple the joints with a constraint instead)")
        links = {}
        for side in ("parent", "child"):
            e = el.find(side)
            link = e.get("link") if e is not None else None
            if link not in raw_links:
                raise rd.error(f"{where}.{side}", f"names no link: {link!r}{closest(link, raw_links)}")
            links[side] = link
        if links["child"] in parent_of:
            raise rd.error(f"{where}.child", f"link {links['child']!r} is already the child of joint "
                                             f"{parent_of[links['child']][0]!r}: a URDF is a tree (close loops "
                                             "with a [constraints] table of a model file that includes it)")
        if links["parent"] == links["child"]:
            raise rd.error(where, f"connects link {links['child']!r} to itself")
        parent_of[links["child"]] = (name, links["parent"], kind, el)
        raw_joints.append(name)
    roots = [n for n in raw_links if n not in parent_of]
    if len(roots) != 1:
        # every link has a parent: the joints form a loop
        raise rd.error("", f"expected one root link (a link no joint has as child), found "
                           f"{len(roots)}: {roots or 'none (the joints form a loop)'}")
    positions = dict(joint_positions or {})
    unknown = [k for k in positions if k not in raw_joints]
    if unknown:
        raise ValueError(f"joint_positions names no joint of {path}: {unknown}; joints: {raw_joints}")

    # breadth-first from the root: world poses of every link frame
    pose = {roots[0]: (np.zeros(3), np.eye(3))}
    joints = [RobotJoint(roots[0] + "_base", "fixed" if fixed_base else "free", WORLD, roots[0],
                         np.zeros(3), np.array([1.0, 0, 0]), where=f"link {roots[0]!r}")]
    children = {}
    for child, (jname, parent, kind, el) in parent_of.items():
        children.setdefault(parent, []).append(child)
    queue = [roots[0]]
    while queue:
        parent = queue.pop(0)
        p_pos, p_rot = pose[parent]
        for child in children.get(parent, []):
            jname, _, kind, el = parent_of[child]
            where = f"joint {jname!r}"
            xyz, rot = rd.origin(el, where)
            j_pos, j_rot = p_pos + p_rot @ xyz, p_rot @ rot
            axis = rd.floats(el.find("axis"), "xyz", 3, f"{where}.axis", (1, 0, 0))
            if kind != "fixed" and kind != "floating" and np.linalg.norm(axis) < 1e-12:
                raise rd.error(f"{where}.axis", f"xyz=\"{el.find('axis').get('xyz')}\" is zero; give a direction")
            axis = axis / max(np.linalg.norm(axis), 1e-300)
            q0 = float(positions.get(jname, 0.0))
            if kind in ("revolute", "continuous"):
                c_pos, c_rot = j_pos, j_rot @ axis_rotation(axis, q0)
            elif kind == "prismatic":
                c_pos, c_rot = j_pos + j_rot @ axis * q0, j_rot
            else:
                if q0:
                    raise ValueError(f"joint_positions[{jname!r}] = {q0}: a {kind} joint has no single coordinate")
                c_pos, c_rot = j_pos, j_rot
            pose[child] = (c_pos, c_rot)
            joints.append(RobotJoint(jname, URDF_JOINT_TYPES[kind], parent, child, j_pos, j_rot @ axis,
                                     _joint_keys(rd, jname, kind, el, q0, limit_stiffness, limit_damping), where))
            queue.append(child)
    detached = [n for n in raw_links if n not in pose]
    if detached:
        raise rd.error("", f"links {detached} are not connected to the root link {roots[0]!r}: their joints form a "
                           "loop (a URDF is a tree)")
    links = {n: _link(rd, n, el, *pose[n]) for n, el in raw_links.items()}
    return RobotTree(path, links, joints)


def _joint_keys(rd, name, kind, el, q0, limit_stiffness, limit_damping):
    where = f"joint {name!r}"
    keys = {}
    dyn = el.find("dynamics")
    if dyn is not None and kind not in ("fixed", "floating"):
        damping = float(rd.floats(dyn, "damping", 1, f"{where}.dynamics", (0,))[0])
        if damping < 0:
            raise rd.error(f"{where}.dynamics", f"damping=\"{dyn.get('damping')}\" must be >= 0")
        if kind != "planar":
            keys["damping"] = damping
        friction = float(rd.floats(dyn, "friction", 1, f"{where}.dynamics", (0,))[0])
        if friction:
            warnings.warn(f"{rd.path}: joint {name!r} has dynamics friction = {friction} that jaxrod does not model "
                          "(Coulomb joint friction); it is ignored", RobotFileWarning, stacklevel=4)
    lim = el.find("limit")
    if kind in ("revolute", "prismatic") and lim is not None:
        lower = lim.get("lower")
        upper = lim.get("upper")
        lower = None if lower is None else float(rd.floats(lim, "lower", 1, f"{where}.limit")[0])
        upper = None if upper is None else float(rd.floats(lim, "upper", 1, f"{where}.limit")[0])
        if lower is not None and upper is not None and lower > upper:
            raise rd.error(f"{where}.limit", f"lower = {lower} > upper = {upper}")
        keys.update(limit_keys(name, lower, upper, q0, limit_stiffness, limit_damping,
                               "rad" if kind == "revolute" else "m", rd.path))
    return keys


def _link(rd, name, el, pos, rot):
    where = f"link {name!r}"
    inertial = el.find("inertial")
    if inertial is None:
        return RobotLink(name, 0.0, pos.copy(), np.zeros((3, 3)), where)
    xyz, r_inertial = rd.origin(inertial, f"{where}.inertial")
    mass_el = inertial.find("mass")
    mass = float(rd.floats(mass_el, "value", 1, f"{where}.inertial.mass")[0]) if mass_el is not None else 0.0
    if mass < 0:
        raise rd.error(f"{where}.inertial.mass", f"value=\"{mass_el.get('value')}\" must be >= 0 [kg]")
    i_el = inertial.find("inertia")
    if i_el is None:
        inertia = np.zeros((3, 3))
    else:
        c = {k: float(rd.floats(i_el, k, 1, f"{where}.inertial.inertia")[0])
             for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        inertia = np.array([[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]],
                            [c["ixz"], c["iyz"], c["izz"]]])
    r_world = rot @ r_inertial
    return RobotLink(name, mass, pos + rot @ xyz, r_world @ inertia @ r_world.T, where)
