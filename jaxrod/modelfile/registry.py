"""The element types a model file may name, as tables: one entry per joint type and rod model.

A new joint class becomes available to model files by adding one :class:`JointType` line to
:data:`JOINT_TYPES` (its class and the keys it reads, each with its SI unit); the loader, the
validation and the joint table of docs/modelfiles.md (checked by tests/test_readme.py) come from
these tables. Nothing here imports JAX: the classes are named by ``"module:Class"`` and imported
when a model is built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from .values import REQUIRED

__all__ = ["FORCE_TYPES", "JOINT_TYPES", "JointType", "Key", "ROD_MODELS"]


@dataclass(frozen=True)
class Key:
    """One key of an element table.

    Attributes:
        kind: ``"vector3"`` (3 numbers), ``"axis"`` (3 numbers, not all zero), ``"number"``,
            ``"nonnegative"`` (>= 0), ``"positive"`` (> 0), ``"choice"`` (one of ``choices``),
            ``"input"`` (a time signal, linear between samples: motor torques and forces) or
            ``"motion"`` (a time signal through a C2 cubic spline: prescribed motions; see
            :meth:`~jaxrod.modelfile.values.Table.signal`).
        unit: SI unit (``""`` for dimensionless), shown in messages.
        default: value when absent (``REQUIRED``: must be given).
        doc: one line for docs/modelfiles.md / ``--help``.
    """

    kind: str
    unit: str
    default: object = REQUIRED
    doc: str = ""
    choices: tuple = ()

    def read(self, table, name):
        """Read key ``name`` of ``table`` (a :class:`~jaxrod.modelfile.values.Table`)."""
        if self.kind in ("input", "motion"):
            signal = table.signal(name, self.unit, self.default)
            if signal is not None:
                signal.kind = self.kind
            return signal
        if self.kind == "choice":
            return table.string(name, self.default, choices=self.choices)
        if self.kind == "vector3":
            return table.vector(name, 3, self.unit, self.default)
        if self.kind == "axis":
            return table.vector(name, 3, self.unit, self.default, nonzero=True)
        return table.number(name, self.unit, self.default, positive=self.kind == "positive",
                            nonnegative=self.kind == "nonnegative")


_POINT = Key("vector3", "m", doc="joint point in the world frame at the initial configuration")
_AXIS = Key("axis", "", doc="joint axis in the world frame at the initial configuration (any length)")


@dataclass(frozen=True)
class JointType:
    """A joint class usable in ``[joints.NAME]`` / ``[constraints.NAME]`` tables.

    Attributes:
        target: ``"module:Class"``; the class is called as ``Class(body1, body2, **keys)``.
        keys: key name -> :class:`Key` (the class's keyword arguments).
        doc: one line.
    """

    target: str
    keys: dict = field(default_factory=dict)
    doc: str = ""

    def load(self):
        module, name = self.target.split(":")
        return getattr(importlib.import_module(module), name)


#: ``type = "..."`` of a joint or constraint table -> its :class:`JointType`.
def _limits(unit, stiffness_unit, damping_unit):
    """Travel/angle limits of a coordinate joint (penalty stops, see jaxrod.system.joints)."""
    return {
        "lower": Key("number", unit, -float("inf"), "lower limit of the joint coordinate"),
        "upper": Key("number", unit, float("inf"), "upper limit of the joint coordinate"),
        "limit_stiffness": Key("nonnegative", stiffness_unit, 0.0, "stiffness of the limit stops (> 0 with limits)"),
        "limit_damping": Key("nonnegative", damping_unit, 0.0, "damping while a stop is penetrated"),
    }


JOINT_TYPES = {
    "spherical": JointType("jaxrod.system.joints:Spherical", {"point": _POINT}, "ball joint (3 rows)"),
    "revolute": JointType(
        "jaxrod.system.joints:Revolute",
        {
            "point": _POINT,
            "axis": _AXIS,
            "stiffness": Key("nonnegative", "N m/rad", 0.0, "rotational spring"),
            "damping": Key("nonnegative", "N m s/rad", 0.0, "rotational damper"),
            "rest_angle": Key("number", "rad", 0.0, "spring rest angle"),
            "torque": Key("input", "N m", None, "motor torque on body 2 (a time signal)"),
            **_limits("rad", "N m/rad", "N m s/rad"),
        },
        "hinge about axis (5 rows), optional spring-damper and angle limits",
    ),
    "prismatic": JointType(
        "jaxrod.system.joints:Prismatic",
        {
            "point": _POINT,
            "axis": _AXIS,
            "stiffness": Key("nonnegative", "N/m", 0.0, "axial spring"),
            "damping": Key("nonnegative", "N s/m", 0.0, "axial damper"),
            "rest_length": Key("number", "m", 0.0, "spring rest travel"),
            "force": Key("input", "N", None, "actuator force on body 2 (a time signal)"),
            **_limits("m", "N/m", "N s/m"),
        },
        "slider along axis (5 rows), optional spring-damper and travel limits",
    ),
    "universal": JointType(
        "jaxrod.system.joints:Universal",
        {"point": _POINT, "axis1": _AXIS, "axis2": _AXIS},
        "cardan joint (4 rows): cross-pin axes axis1 (in body 1) and axis2 (in body 2), perpendicular",
    ),
    "planar": JointType("jaxrod.system.joints:Planar", {"point": _POINT, "axis": _AXIS},
                        "body 2 slides in the plane normal to axis and turns about it (3 rows)"),
    "fixed": JointType("jaxrod.system.joints:Fixed", {"point": _POINT}, "weld (6 rows)"),
    "planar_pin": JointType("jaxrod.system.joints:PlanarPin", {"point": _POINT, "axis": _AXIS},
                            "in-plane part of a revolute joint (2 rows): closes planar loops"),
    "prescribed_angle": JointType(
        "jaxrod.system.joints:PrescribedAngle",
        {"point": Key("vector3", "m", [0.0, 0.0, 0.0], "not used (any point)"), "axis": _AXIS,
         "trajectory": Key("motion", "rad", doc="angle of body 2 relative to body 1 (zero at assembly)")},
        "drives the relative rotation about axis (1 row; with a revolute joint: a servo)"),
    "prescribed_displacement": JointType(
        "jaxrod.system.joints:PrescribedDisplacement",
        {"point": _POINT, "axis": _AXIS,
         "trajectory": Key("motion", "m", doc="displacement of body 2's copy of point along axis (zero at assembly)")},
        "drives a point along axis (1 row)"),
}

_MODE = Key("choice", "", "both", "'both', 'tension' (ropes) or 'compression' (stops)",
            ("both", "tension", "compression"))
_TWO_POINTS = {
    "point1": Key("vector3", "m", doc="attachment on body 1 (world frame at assembly)"),
    "point2": Key("vector3", "m", doc="attachment on body 2 (world frame at assembly)"),
    "rest_length": Key("nonnegative", "m", None, "rest length (default: the initial distance)"),
    "mode": _MODE,
    "smoothing": Key("nonnegative", "m", 0.0, "width of the smooth switch of a unilateral element (0: exact)"),
}
_POWER_LAW = {
    "exponent": Key("positive", "", 1.0, "power p of the damping law"),
    "velocity_scale": Key("positive", "", 1e-3, "regularisation speed of the power law"),
}

#: ``type = "..."`` of a ``[forces.NAME]`` table -> its :class:`JointType` (force elements of
#: :mod:`jaxrod.system.forces`)
FORCE_TYPES = {
    "spring": JointType("jaxrod.system.forces:Spring",
                        {**_TWO_POINTS, "stiffness": Key("nonnegative", "N/m", 0.0, "linear stiffness")},
                        "spring between two points"),
    "damper": JointType("jaxrod.system.forces:Damper",
                        {**_TWO_POINTS, "damping": Key("nonnegative", "", 0.0, "damping coefficient [N (s/m)^p]"),
                         **_POWER_LAW,
                         "direction": Key("choice", "", "axial", "'axial' (along the line) or 'full' (relative "
                                                                  "velocity)", ("axial", "full"))},
                        "damper between two points"),
    "torsion_spring": JointType("jaxrod.system.forces:TorsionSpring",
                                {"axis": _AXIS, "stiffness": Key("nonnegative", "N m/rad", 0.0, "stiffness"),
                                 "rest_angle": Key("number", "rad", 0.0, "rest angle")},
                                "rotational spring about axis"),
    "torsion_damper": JointType("jaxrod.system.forces:TorsionDamper",
                                {"axis": _AXIS, "damping": Key("nonnegative", "", 0.0, "damping [N m (s/rad)^p]"),
                                 **_POWER_LAW},
                                "rotational damper about axis"),
    "pd_controller": JointType("jaxrod.system.forces:PDController",
                               {"axis": _AXIS, "gain": Key("nonnegative", "N m/rad", 0.0, "proportional gain"),
                                "damping": Key("nonnegative", "N m s/rad", 0.0, "derivative gain"),
                                "target": Key("number", "rad", 0.0, "target angle"),
                                "target_rate": Key("number", "rad/s", 0.0, "target rate")},
                               "PD control torque about axis"),
    "joint_torque": JointType("jaxrod.system.forces:JointTorque",
                              {"axis": _AXIS, "torque": Key("input", "N m", doc="torque on body 2 (a time signal)")},
                              "torque input about axis (a time signal)"),
}

#: ``model = "..."`` of a rod table -> the function of :mod:`jaxrod.modelfile.rods` reading it.
ROD_MODELS = {
    "der": "read_der",
    "pcs": "read_pcs",
}
