"""Systems built from models: rigid bodies, joints, constraints, model files and modal analysis.

* :mod:`jaxrod.system.bodies`, :mod:`jaxrod.system.joints`, :mod:`jaxrod.system.multibody`:
  rigid bodies joined by joints (Lagrange multipliers), an implicit model
  (:class:`~jaxrod.system.multibody.MultibodySystem`) for :func:`jaxrod.simulate`.
* :mod:`jaxrod.system.modal`: linear modal analysis of any implicit model
  (:func:`~jaxrod.system.modal.modal`, :class:`~jaxrod.system.modal.ModalResult`).
"""

from .bodies import RigidBody
from .joints import AbstractJoint, Fixed, PlanarPin, Revolute, Spherical
from .forces import AbstractForce, Damper, ForceSet, JointTorque, PDController, PointForce, Spring, TorsionDamper, TorsionSpring  # noqa: E501,I001
from .joints import Planar, PrescribedAngle, PrescribedDisplacement, Prismatic, SampledTrajectory, Universal
from .modal import ModalResult, modal
from .multibody import BodyFrames, MultibodySystem
from .multibody import RedundantConstraintWarning

__all__ = [
    "AbstractJoint",
    "BodyFrames",
    "Fixed",
    "ModalResult",
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
    "modal",
]
__all__ += ["AbstractForce", "Damper", "ForceSet", "JointTorque", "PDController", "PointForce", "Spring", "TorsionDamper", "TorsionSpring"]  # noqa: E501
from .hybrid import HybridSystem, RodClamp, RodPin  # noqa: E402  rods attached to bodies (issue 14 item 2)
__all__ += ["HybridSystem", "RodClamp", "RodPin"]
