"""Systems built from models: rigid bodies, joints, constraints and rods attached to bodies.

* :mod:`jaxrod.system.bodies`, :mod:`jaxrod.system.joints`, :mod:`jaxrod.system.multibody`:
  rigid bodies joined by joints (Lagrange multipliers), an implicit model
  (:class:`~jaxrod.system.multibody.MultibodySystem`) for :func:`jaxrod.simulate`.
* :mod:`jaxrod.system.contact`: set-valued contact (spheres on planes and boxes, Signorini,
  anisotropic Coulomb friction, impacts) of a system, integrated by Moreau time stepping
  (:class:`~jaxrod.system.contact.ContactSystem`).
* modal analysis of a system (any implicit model) is :func:`jaxrod.modal`
  (:mod:`jaxrod.analysis.modal`).
"""

from ..signals import SampledTrajectory
from .bodies import RigidBody
from .joints import AbstractJoint, Fixed, PlanarPin, Revolute, Spherical
from .forces import AbstractForce, Damper, ForceSet, JointTorque, PDController, PointForce, Spring, TorsionDamper, TorsionSpring  # noqa: E501,I001
from .joints import Planar, PrescribedAngle, PrescribedDisplacement, Prismatic, Universal
from .multibody import BodyFrames, MultibodySystem
from .multibody import RedundantConstraintWarning

__all__ = [
    "AbstractJoint",
    "BodyFrames",
    "Fixed",
    "MultibodySystem",
    "Planar",
    "PlanarPin",
    "PrescribedAngle",
    "PrescribedDisplacement",
    "Prismatic",
    "RedundantConstraintWarning",
    "Revolute",
    "RigidBody",
    "SampledTrajectory",
    "Spherical",
    "Universal",
]
__all__ += ["AbstractForce", "Damper", "ForceSet", "JointTorque", "PDController", "PointForce", "Spring", "TorsionDamper", "TorsionSpring"]  # noqa: E501
from .hybrid import HybridSystem, RodClamp, RodPin  # noqa: E402  rods attached to bodies (issue 14 item 2)
__all__ += ["HybridSystem", "RodClamp", "RodPin"]
from .contact import Box, ContactSystem, Plane, SphereContact  # noqa: E402  set-valued contact (issue 23)
__all__ += ["Box", "ContactSystem", "Plane", "SphereContact"]
from .joint_space import JointSpaceSystem  # noqa: E402  tree systems in joint coordinates (issue 24 item 2)
__all__ += ["JointSpaceSystem"]
