"""Discrete elastic rods (DisMech/Bergou et al.): frames.py (kinematics), energies.py,
rod.py (:class:`DERRod`), contact.py (IMC contact and smooth Coulomb friction:
:class:`FloorContact`, :class:`RodRodContact`), dynamics.py (:class:`DERModel`)."""

from .contact import FloorContact, RodRodContact
from .dynamics import DER_BANDWIDTH, ContactAux, DERModel, first_mode_velocity
from .frames import ReferenceFrames
from .rod import DERRod, helix_points

__all__ = [
    "DER_BANDWIDTH",
    "ContactAux",
    "DERModel",
    "DERRod",
    "FloorContact",
    "ReferenceFrames",
    "RodRodContact",
    "first_mode_velocity",
    "helix_points",
]
