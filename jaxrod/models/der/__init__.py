"""Discrete elastic rods (DisMech/Bergou et al.): frames.py (kinematics), energies.py,
rod.py (:class:`DERRod`), contact.py (IMC contact and smooth Coulomb friction:
:class:`FloorContact`, :class:`RodRodContact`), dynamics.py (:class:`DERModel`),
network.py (:class:`DERNetwork`: several rods joined by elastic joints), motion.py (boundary motion
as data: :class:`SampledMotion`, measured clamp poses :class:`ClampMotion`)."""

from .contact import FloorContact, RodRodContact
from .dynamics import DER_BANDWIDTH, ContactAux, DERModel, first_mode_velocity
from .frames import ReferenceFrames
from .motion import ClampMotion, SampledMotion, clamp_frame, quaternion_to_matrix
from .network import DERNetwork, Joint, LinearRamp
from .rod import DERRod, helix_points

__all__ = [
    "DER_BANDWIDTH",
    "ClampMotion",
    "ContactAux",
    "DERModel",
    "DERNetwork",
    "DERRod",
    "FloorContact",
    "Joint",
    "LinearRamp",
    "ReferenceFrames",
    "RodRodContact",
    "SampledMotion",
    "clamp_frame",
    "first_mode_velocity",
    "helix_points",
    "quaternion_to_matrix",
]
