"""jaxrod: differentiable simulation of slender elastic rods and soft robots in JAX.

Importing jaxrod turns on float64 (``jax_enable_x64``): rod problems mix stiffnesses that differ
by seven orders of magnitude, and float32 Newton solves stall long before they converge.
"""

import jax

jax.config.update("jax_enable_x64", True)
from . import config as _config; _config.apply_defaults()  # noqa: E402,E702  (compilation cache on; see jaxrod.config)

__version__ = "0.1.0"

from . import geometry, scenes
from .models.base import AbstractImplicitModel, State
from .models.cosserat import CosseratModel, CosseratRod, CosseratState, PointLoad
from .models.der import ClampMotion, DERModel, DERRod, SampledMotion, first_mode_velocity
from .simulate import (
    ConvergenceError,
    FallbackWarning,
    convergence_errors,
    SolverStats,
    Trajectory,
    implicit_step,
    simulate,
    simulate_adaptive,
    solve_static,
)
from .solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver
from .solvers.newton import NewtonResult, NewtonSolver, newton_solve
from .timestepping import (
    BDF2,
    AverageVectorField,
    BackwardEuler,
    BDFAlpha,
    DifferenceFormula,
    ImplicitMidpoint,
    NewmarkBeta,
    Trapezoid,
    scheme_from_name,
)

__all__ = [
    "BDF2",
    "AbstractImplicitModel",
    "AverageVectorField",
    "BDFAlpha",
    "BackwardEuler",
    "BandedJacobianSolver",
    "ClampMotion",
    "ConvergenceError",
    "CosseratModel",
    "CosseratRod",
    "CosseratState",
    "DERModel",
    "DERRod",
    "DenseJacobianSolver",
    "DifferenceFormula",
    "FallbackWarning",
    "ImplicitMidpoint",
    "NewmarkBeta",
    "NewtonResult",
    "NewtonSolver",
    "PointLoad",
    "SampledMotion",
    "SolverStats",
    "State",
    "Trajectory",
    "Trapezoid",
    "convergence_errors",
    "first_mode_velocity",
    "geometry",
    "implicit_step",
    "newton_solve",
    "scenes",
    "scheme_from_name",
    "simulate",
    "simulate_adaptive",
    "solve_static",
]
