"""Cosserat and Kirchhoff rods by implicit time discretisation and shooting in arc length
(Till, Aloi & Rucker 2019): rod parameters, loads, tendons, the arc-length ODE model, time loop."""

from ...actuation.chambers import Chamber
from ...actuation.tendons import FunctionRouting, HelicalRouting, Routing, SampledRouting, StraightRouting, Tendon
from ...signals import Constant, Hat, ReleasedAt, Samples
from .loads import PointLoad
from .model import CosseratModel
from .parallel import (
    LegLengths,
    ParallelState,
    ParallelTrajectory,
    StewartGough,
    solve_inverse_static,
    solve_static_parallel,
)
from .rod import CosseratRod
from .stepper import (
    DEFAULT_SOLVER,
    DEFAULT_STATIC_SOLVER,
    CosseratState,
    shooting_step,
    solve_static_cosserat,
)

__all__ = [
    "DEFAULT_SOLVER",
    "DEFAULT_STATIC_SOLVER",
    "Chamber",
    "Constant",
    "CosseratModel",
    "CosseratRod",
    "CosseratState",
    "Hat",
    "PointLoad",
    "ReleasedAt",
    "Samples",
    "Routing",
    "StraightRouting",
    "HelicalRouting",
    "LegLengths",
    "ParallelState",
    "ParallelTrajectory",
    "StewartGough",
    "solve_inverse_static",
    "solve_static_parallel",
    "SampledRouting",
    "FunctionRouting",
    "Tendon",
    "shooting_step",
    "solve_static_cosserat",
]
