"""Discrete elastic rods (DisMech/Bergou et al.): frames.py (kinematics), energies.py,
rod.py (:class:`DERRod`), dynamics.py (:class:`DERModel`)."""

from .dynamics import DER_BANDWIDTH, DERModel, first_mode_velocity
from .frames import ReferenceFrames
from .rod import DERRod, helix_points

__all__ = ["DER_BANDWIDTH", "DERModel", "DERRod", "ReferenceFrames", "first_mode_velocity", "helix_points"]
