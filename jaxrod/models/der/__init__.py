"""Discrete elastic rods (DisMech/Bergou et al.): frames.py (the one stencil kinematics and
the reference frames), energies.py, rod.py (:class:`DERRod`), contact.py (IMC contact and smooth
Coulomb friction: :class:`FloorContact`, :class:`RodRodContact`), model.py (:class:`DERNetwork`:
several rods joined by elastic joints, the one DER model; :class:`DERModel`: the one-limb network
built from one rod), actuation.py (tendon and chamber loads), topology.py (:class:`Joint`, the network numbering and
stencils), motion.py (measured clamp poses :class:`ClampMotion`; sampled prescribed values
:class:`~jaxrod.signals.SampledMotion` and the actuation ramp :class:`~jaxrod.signals.LinearRamp`
are in :mod:`jaxrod.signals`), waves.py (:class:`CurvatureWave`: a travelling wave of natural
curvature, a continuum snake's muscles)."""

from ...signals import LinearRamp, SampledMotion
from .contact import FloorContact, RodRodContact
from .model import DER_BANDWIDTH, ContactAux, DERModel, DERNetwork, Joint, first_mode_velocity
from .frames import ReferenceFrames
from .motion import ClampMotion, clamp_frame, quaternion_to_matrix
from .rod import DERRod, helix_points
from .waves import CurvatureWave

__all__ = [
    "DER_BANDWIDTH",
    "ClampMotion",
    "ContactAux",
    "CurvatureWave",
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
