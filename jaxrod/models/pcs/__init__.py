"""Piecewise-constant-strain (PCS) rod model (Ishigaki, Ayusawa, Yamamoto, RA-L 2024).

kinematics.py: closed-form segment exponentials ``expA``, the tangent operator ``tangent_C`` and
its time derivative, forward kinematics over segments, body velocities/accelerations (eqs. 11,
14) and an optional reduced strain basis. Twists are angular-first, the rod axis is local x.
rod.py: the rod (:class:`PCSRod`) and its tip body (:class:`TipBody`).
model.py: recursive inverse dynamics and the implicit model
(:class:`PCSModel`) used with :func:`jaxrod.simulate` (Newmark-beta) and :func:`jaxrod.solve_static`.
actuation.py: the generalised forces of pressure chambers (:class:`Chamber`, the shooting model's
class, pressure control) from the work of the pressure on the chamber volume.
loads.py: :class:`PointWrench`, a time-varying wrench at a body-fixed point (world or body frame).
nonlinear.py: TMTDyn's nonlinear options (:class:`NonlinearOptions`: stretch update, growing
chambers, power-law damping).
cmtm.py: the paper's CMTM analytic gradients of the inverse dynamics (d tau / d q, d q_dot, d q_ddot)
and the Newmark Newton matrix; ``PCSModel(jacobian="cmtm")`` uses them for Newton Jacobians.
"""

from ...actuation.chambers import Chamber
from .actuation import chamber_forces
from .cmtm import cmtm_jacobians, inverse_dynamics_gradients, newmark_jacobian
from .loads import PointWrench
from .model import PCSModel, inverse_dynamics
from .nonlinear import NonlinearOptions
from .rod import PCSRod, TipBody
from .kinematics import (
    STRAIN_MODES,
    XI_STRAIGHT,
    PCSPoses,
    StrainBasis,
    ad,
    ad_vee,
    adjoint,
    base_pose,
    coad,
    exp_se3,
    expA,
    expA_inv,
    forward_kinematics,
    homogeneous,
    point_acceleration,
    point_twists,
    point_velocity,
    poses_at,
    segment_frames,
    segment_velocities,
    tangent_C,
    tangent_C_and_dot,
    tangent_C_dot,
    velocities_at,
)

__all__ = [
    "Chamber",
    "TipBody",
    "chamber_forces",
    "STRAIN_MODES",
    "XI_STRAIGHT",
    "NonlinearOptions",
    "PCSModel",
    "PointWrench",
    "PCSPoses",
    "PCSRod",
    "StrainBasis",
    "ad",
    "ad_vee",
    "adjoint",
    "base_pose",
    "cmtm_jacobians",
    "coad",
    "expA",
    "expA_inv",
    "exp_se3",
    "forward_kinematics",
    "homogeneous",
    "inverse_dynamics",
    "inverse_dynamics_gradients",
    "newmark_jacobian",
    "point_acceleration",
    "point_twists",
    "point_velocity",
    "poses_at",
    "segment_frames",
    "segment_velocities",
    "tangent_C",
    "tangent_C_and_dot",
    "tangent_C_dot",
    "velocities_at",
]
