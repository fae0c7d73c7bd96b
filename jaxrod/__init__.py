"""jaxrod: differentiable simulation of slender elastic rods and soft robots in JAX.

Importing jaxrod turns on float64 (``jax_enable_x64``): rod problems mix stiffnesses that differ
by seven orders of magnitude, and float32 Newton solves stall long before they converge.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"

from . import geometry, scenes  # noqa: E402
from .models.base import AbstractImplicitModel, State  # noqa: E402
from .models.der import DERModel, DERRod, first_mode_velocity  # noqa: E402
from .simulate import ConvergenceError, SolverStats, Trajectory, implicit_step, simulate, solve_static  # noqa: E402
from .solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver  # noqa: E402
from .solvers.newton import NewtonResult, NewtonSolver, newton_solve  # noqa: E402
from .timestepping import (  # noqa: E402
    BDF2,
    BackwardEuler,
    BDFAlpha,
    ImplicitMidpoint,
    NewmarkBeta,
    Trapezoid,
    scheme_from_name,
)

__all__ = [
    "AbstractImplicitModel", "State", "DERModel", "DERRod", "first_mode_velocity", "ConvergenceError",
    "SolverStats", "Trajectory", "implicit_step", "simulate", "solve_static", "BandedJacobianSolver",
    "DenseJacobianSolver", "NewtonResult", "NewtonSolver", "newton_solve", "BDF2", "BackwardEuler",
    "BDFAlpha", "ImplicitMidpoint", "NewmarkBeta", "Trapezoid", "scheme_from_name", "geometry", "scenes",
]
