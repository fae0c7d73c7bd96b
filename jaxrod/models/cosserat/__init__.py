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
    "Constant", "Hat", "PointLoad", "ReleasedAt", "CosseratModel", "CosseratRod", "CosseratState",
    "DEFAULT_SOLVER", "DEFAULT_STATIC_SOLVER", "shooting_step", "simulate_cosserat", "solve_static_cosserat",
]
