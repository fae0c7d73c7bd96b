"""Time integration, written once for every model: the stepper interface (:mod:`.base`), the
implicit stepper (:mod:`.implicit`), the loops (:mod:`.loop`), the results (:mod:`.results`) and the
entry points (:mod:`.run`)."""

from .base import AbstractStepper, State
from .implicit import AbstractImplicitModel, ImplicitStepper, fallback_ladder, implicit_step
from .results import ConvergenceError, FallbackWarning, SolverStats, Trajectory, convergence_errors
from .run import simulate, simulate_adaptive, solve_static
from .moreau import AbstractMoreauModel, ContactTrajectory, MoreauOptions, MoreauState, MoreauStepper
from .explicit import RK4, AbstractExplicitModel, ExplicitStepper, SemiImplicitEuler

__all__ = [
    "AbstractExplicitModel",
    "ExplicitStepper",
    "RK4",
    "SemiImplicitEuler",
    "AbstractMoreauModel",
    "ContactTrajectory",
    "MoreauOptions",
    "MoreauState",
    "MoreauStepper",
    "AbstractImplicitModel",
    "AbstractStepper",
    "ConvergenceError",
    "FallbackWarning",
    "ImplicitStepper",
    "SolverStats",
    "State",
    "Trajectory",
    "convergence_errors",
    "fallback_ladder",
    "implicit_step",
    "simulate",
    "simulate_adaptive",
    "solve_static",
]
