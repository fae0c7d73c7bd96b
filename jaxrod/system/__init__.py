"""Multibody systems: rigid bodies, joints and constraints (see :mod:`jaxrod.system.multibody`)."""

from .bodies import RigidBody
from .joints import AbstractJoint, Fixed, PlanarPin, Revolute, Spherical
from .multibody import BodyFrames, MultibodySystem

__all__ = [
    "AbstractJoint",
    "BodyFrames",
    "Fixed",
    "MultibodySystem",
    "PlanarPin",
    "Revolute",
    "RigidBody",
    "Spherical",
]
