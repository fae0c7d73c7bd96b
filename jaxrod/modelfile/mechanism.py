"""``[bodies.NAME]``, ``[joints.NAME]``, ``[constraints.NAME]`` and ``[[loads]]`` on bodies: read,
checked (pure Python) and turned into a :class:`~jaxrod.system.MultibodySystem`."""

from __future__ import annotations

import math

from .errors import closest
from .registry import FORCE_TYPES, JOINT_TYPES
from .topology import WORLD, find_loop
from .values import REQUIRED, Table

__all__ = ["read_body", "read_joint", "check_loops", "build_system", "build_signal"]

_ZERO3 = [0.0, 0.0, 0.0]


def read_body(name, t: Table) -> dict:
    """Keyword arguments of :class:`~jaxrod.system.RigidBody` from a ``[bodies.NAME]`` table."""
    if name == WORLD:
        raise t.error(None, "'world' is reserved for the ground; name the body otherwise")
    body = {"name": name, "mass": t.number("mass", "kg", positive=True)}
    raw = t.raw("inertia", None)
    if isinstance(raw, list) and raw and isinstance(raw[0], list):
        body["inertia"] = t.matrix("inertia", 3, 3, "kg m^2")
    else:
        body["inertia"] = t.vector("inertia", 3, "kg m^2")
        if min(body["inertia"]) <= 0:
            raise t.error("inertia", f"expected 3 positive principal moments in kg m^2, got {raw!r}")
    body["position"] = t.vector("position", 3, "m", _ZERO3)
    rot = t.table("rotation", None)
    if rot is not None:
        if "orientation" in t:
            raise t.error("rotation", "give either 'orientation' (a quaternion) or 'rotation' (axis, angle), not both")
        axis = rot.vector("axis", 3, "", nonzero=True)
        angle = rot.number("angle", "rad")
        rot.finish()
        n = math.sqrt(sum(a * a for a in axis))
        body["orientation"] = [math.cos(angle / 2)] + [math.sin(angle / 2) * a / n for a in axis]
    else:
        body["orientation"] = t.vector("orientation", 4, "", [1.0, 0.0, 0.0, 0.0], nonzero=True)
    body["velocity"] = t.vector("velocity", 3, "m/s", _ZERO3)
    body["angular_velocity"] = t.vector("angular_velocity", 3, "rad/s", _ZERO3)
    body["force"] = t.vector("force", 3, "N", _ZERO3)
    body["torque"] = t.vector("torque", 3, "N m", _ZERO3)
    t.finish()
    return body


def _body_name(t: Table, key, bodies, default, allow_world):
    name = t.string(key, default)
    if name == WORLD:
        if not allow_world:
            raise t.error(key, "must name a body, not the world (put the world in body1)")
        return name
    if name not in bodies:
        listed = ", ".join(bodies) or "none"
        raise t.error(key, f"names no body: {name!r}{closest(name, bodies)}; bodies: {listed}"
                           + (" (or 'world')" if allow_world else ""))
    return name


def read_joint(name, t: Table, bodies, types=None) -> dict:
    """``{"type", "body1", "body2", "keys", "where"}`` from a ``[joints.NAME]`` table (or, with
    ``types=FORCE_TYPES``, a ``[forces.NAME]`` table)."""
    types = JOINT_TYPES if types is None else types
    kind = t.string("type", choices=tuple(types))
    spec = types[kind]
    b1 = _body_name(t, "body1", bodies, WORLD, True)
    b2 = _body_name(t, "body2", bodies, REQUIRED, False)
    if b1 == b2:
        raise t.error("body2", f"the joint connects {b2!r} to itself; body1 and body2 must differ")
    keys = {k: key.read(t, k) for k, key in spec.keys.items()}
    t.finish()
    return {"name": name, "type": kind, "body1": b1, "body2": b2, "keys": keys, "where": t.where, "path": t.path}


def check_loops(path, joints, constraints=()):
    """Raise when the ``[joints]`` form a closed loop (see :mod:`jaxrod.modelfile.topology`), or
    when a revolute ``[constraints]`` entry closes a loop of revolute joints with parallel axes
    (a planar loop: its closure has 3 redundant rows, the Newton matrix is singular)."""
    from .errors import ModelFileError

    loop = find_loop([(j["name"], j["body1"], j["body2"]) for j in joints])
    if loop is not None:
        name, cycle, _ = loop
        raise ModelFileError(
            path, f"joints.{name}",
            f"closes the kinematic loop {cycle}. Joints must form a tree from the world (each adds one "
            f"body to the kinematic chain); close a loop with a constraint: move this table to "
            f"[constraints.{name}] (for a planar loop use type = \"planar_pin\" there: a revolute joint "
            "closing a planar loop adds 3 redundant rows and a singular Newton matrix)",
        )
    by_name = {j["name"]: j for j in joints}
    for c in constraints:
        loop = find_loop([(j["name"], j["body1"], j["body2"]) for j in joints] + [(c["name"], c["body1"], c["body2"])])
        if c["type"] != "revolute" or loop is None:
            continue
        members = [by_name[n] for n in loop[2][:-1]]
        if all(j["type"] in ("revolute", "planar_pin") and _parallel(j["keys"]["axis"], c["keys"]["axis"])
               for j in members):
            raise ModelFileError(
                path, f"constraints.{c['name']}.type",
                f"\"revolute\" closes the planar loop {loop[1]} (all hinge axes parallel): the in-plane loop "
                "already fixes the out-of-plane rows, so 3 of its 5 rows are redundant and the Newton matrix "
                "is singular; use type = \"planar_pin\" (the 2 in-plane rows)",
            )


def _parallel(a, b, tol=1e-9):
    cross = (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
    return math.sqrt(sum(x * x for x in cross)) <= tol * math.sqrt(sum(x * x for x in a) * sum(x * x for x in b))


def build_signal(signal, kind, target):
    """The JAX signal of a :class:`~jaxrod.modelfile.values.Signal`: an ``"input"`` is linear
    between samples (:class:`~jaxrod.signals.Samples`), a ``"motion"`` a C2 cubic spline
    (:class:`~jaxrod.signals.SampledTrajectory`, so prescribed velocities and accelerations are
    continuous; one sample: a constant); for a :class:`~jaxrod.system.JointTorque` (``target``)
    it is wrapped to take ``(t, angle, rate)``."""
    from ..signals import OfTime, SampledTrajectory, Samples

    times, values = signal.times, signal.values
    if kind == "motion":
        if len(times) == 1:
            times, values = [times[0], times[0] + 1.0], values * 2
        fn = SampledTrajectory(times, values)
    else:
        fn = Samples(times, values)
    return OfTime(fn) if target.endswith(":JointTorque") else fn


def _build_elements(elements, types):
    from .errors import ModelFileError
    from .values import Signal

    built = []
    for j in elements:
        spec = types[j["type"]]
        cls = spec.load()
        keys = {k: build_signal(v, spec.keys[k].kind, spec.target) if isinstance(v, Signal) else v
                for k, v in j["keys"].items()}
        try:
            built.append(cls(None if j["body1"] == WORLD else j["body1"], j["body2"], **keys))
        except ValueError as e:
            raise ModelFileError(j["path"], j["where"], str(e)) from None
    return built


def _build_parts(bodies, joints):
    """``(RigidBody list, joint list)``; a constructor's ``ValueError`` comes back as a
    :class:`~jaxrod.modelfile.errors.ModelFileError` naming the table."""
    from ..system import RigidBody
    from .errors import ModelFileError

    built_bodies = []
    for b in bodies:
        try:
            built_bodies.append(RigidBody(**{k: v for k, v in b.items() if k not in ("where", "path")}))
        except ValueError as e:
            raise ModelFileError(b["path"], b["where"], str(e)) from None
    return built_bodies, _build_elements(joints, JOINT_TYPES)


def build_system(bodies, joints, gravity, forces=()):
    """The :class:`~jaxrod.system.MultibodySystem` of the checked tables (``forces``: read
    ``[forces.NAME]`` tables)."""
    from ..system import MultibodySystem

    return MultibodySystem(*_build_parts(bodies, joints), gravity=gravity or _ZERO3,
                           forces=_build_elements(forces, FORCE_TYPES))


def build_hybrid(path, bodies, joints, rods, rod_loads, attachments, gravity):
    """The ``HybridSystem`` (``jaxrod.system.hybrid``) of DER rods attached to bodies or the world;
    "not yet supported" where that coupling layer is not installed."""
    from .errors import ModelFileError

    first = attachments[0]["table"]
    try:
        from ..system.hybrid import HybridSystem, RodClamp, RodPin
    except ImportError:
        raise first.error(None, "rod-to-body attachments are not yet supported by this jaxrod (the coupling layer "
                                "jaxrod.system.hybrid is missing); the table itself is valid") from None
    names = list(rods)
    models = [rods[n].build(gravity, rod_loads.get(n, [])).model for n in names]
    built = []
    for a in attachments:
        body = None if a["body"] == WORLD else a["body"]
        make = RodClamp if a["type"] == "clamp" else RodPin
        built.append(make(names.index(a["rod"]), a["index"], body))
    b, j = _build_parts(bodies, joints)
    try:
        return HybridSystem(models, b, j, built, gravity=gravity or _ZERO3)
    except ValueError as e:
        raise ModelFileError(path, "attachments", str(e)) from None
