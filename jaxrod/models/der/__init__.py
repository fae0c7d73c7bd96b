"""Discrete elastic rods (DisMech/Bergou et al.): frames.py (kinematics), energies.py,
rod.py (:class:`DERRod`), contact.py (IMC contact and smooth Coulomb friction:
:class:`FloorContact`, :class:`RodRodContact`), dynamics.py (:class:`DERModel`),
network.py (:class:`DERNetwork`: several rods joined by elastic joints)."""

from .contact import FloorContact, RodRodContact
from .dynamics import DER_BANDWIDTH, ContactAux, DERModel, first_mode_velocity
from .frames import ReferenceFrames
from .network import DERNetwork, Joint, LinearRamp
from .rod import DERRod, helix_points

__all__ = [
    "DER_BANDWIDTH",
    "ContactAux",
    "DERModel",
    "DERNetwork",
    "DERRod",
    "FloorContact",
    "Joint",
    "LinearRamp",
    "ReferenceFrames",
    "RodRodContact",
    "first_mode_velocity",
    "helix_points",
]
