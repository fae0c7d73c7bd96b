"""Cosserat and Kirchhoff rods by implicit time discretisation and shooting in arc length
(Till, Aloi & Rucker 2019): rod parameters, loads, the arc-length ODE model, time loop."""

from .loads import Constant, Hat, PointLoad, ReleasedAt
from .model import CosseratModel
from .rod import CosseratRod
from .simulate import (
    DEFAULT_SOLVER,
    DEFAULT_STATIC_SOLVER,
    CosseratState,
    shooting_step,
    simulate_cosserat,
    solve_static_cosserat,
)

__all__ = [
    "DEFAULT_SOLVER",
    "DEFAULT_STATIC_SOLVER",
    "Constant",
    "CosseratModel",
    "CosseratRod",
    "CosseratState",
    "Hat",
    "PointLoad",
    "ReleasedAt",
    "shooting_step",
    "simulate_cosserat",
    "solve_static_cosserat",
]
