"""jaxrod: differentiable simulation of slender elastic rods and soft robots in JAX.

Importing jaxrod turns on float64 (``jax_enable_x64``): rod problems mix stiffnesses that differ
by seven orders of magnitude, and float32 Newton solves stall long before they converge.
"""

from ._lazy import lazy_attributes as _lazy_attributes
from typing import TYPE_CHECKING

import jax

jax.config.update("jax_enable_x64", True)
from . import config as _config; _config.apply_defaults()  # noqa: E402,E702  (compilation cache on; see jaxrod.config)

__version__ = "0.1.0"


# public name -> module that defines it; imported on first use (PEP 562 ``__getattr__``) so that
# ``import jaxrod`` costs about ``import jax`` and the command line answers ``--help`` at once
_LAZY = {
    "AbstractStepper": ".integrate",
    "ImplicitStepper": ".integrate",
    "DERNetwork": ".models.der",
    "FloorContact": ".models.der",
    "RodRodContact": ".models.der",
    "StewartGough": ".models.cosserat",
    "LegLengths": ".models.cosserat",
    "PCSModel": ".models.pcs",
    "PCSRod": ".models.pcs",
    "TipBody": ".models.pcs",
    "PointWrench": ".models.pcs",
    "Material": ".models.section",
    "CrossSection": ".models.section",
    "NonlinearOptions": ".models.pcs",
    "StrainBasis": ".models.pcs",
    "ClampedRodModel": ".models.tmtdyn",
    "EBAModel": ".models.tmtdyn",
    "ROMModel": ".models.tmtdyn",
    "RodSection": ".models.tmtdyn",
    "RigidBody": ".system",
    "MultibodySystem": ".system",
    "JointSpaceSystem": ".system",
    "RK4": ".integrate.explicit",
    "SemiImplicitEuler": ".integrate.explicit",
    "HybridSystem": ".system",
    "RodClamp": ".system",
    "RodPin": ".system",
    "Fixed": ".system",
    "Planar": ".system",
    "PlanarPin": ".system",
    "PrescribedAngle": ".system",
    "PrescribedDisplacement": ".system",
    "Prismatic": ".system",
    "Revolute": ".system",
    "Spherical": ".system",
    "Universal": ".system",
    "ContactSystem": ".system",
    "SphereContact": ".system",
    "Plane": ".system",
    "Box": ".system",
    "MoreauOptions": ".integrate",
    "Damper": ".system",
    "JointTorque": ".system",
    "PDController": ".system",
    "PointForce": ".system",
    "Spring": ".system",
    "TorsionDamper": ".system",
    "TorsionSpring": ".system",
    "Tendon": ".actuation",
    "StraightRouting": ".actuation",
    "HelicalRouting": ".actuation",
    "SampledRouting": ".actuation",
    "FunctionRouting": ".actuation",
    "Chamber": ".actuation",
    "Constant": ".signals",
    "ReleasedAt": ".signals",
    "Hat": ".signals",
    "Samples": ".signals",
    "SampledTrajectory": ".signals",
    "LinearRamp": ".signals",
    "AbstractImplicitModel": ".integrate",
    "State": ".integrate",
    "CosseratModel": ".models.cosserat",
    "CosseratRod": ".models.cosserat",
    "CosseratState": ".models.cosserat",
    "PointLoad": ".models.cosserat",
    "ClampMotion": ".models.der",
    "DERModel": ".models.der",
    "DERRod": ".models.der",
    "SampledMotion": ".models.der",
    "first_mode_velocity": ".models.der",
    "ConvergenceError": ".integrate",
    "FallbackWarning": ".integrate",
    "convergence_errors": ".integrate",
    "SolverStats": ".integrate",
    "Trajectory": ".integrate",
    "implicit_step": ".integrate",
    "simulate": ".integrate",
    "simulate_adaptive": ".integrate",
    "solve_static": ".integrate",
    "BandedJacobianSolver": ".solvers.jacobian",
    "DenseJacobianSolver": ".solvers.jacobian",
    "NewtonResult": ".solvers.newton",
    "NewtonSolver": ".solvers.newton",
    "newton_solve": ".solvers.newton",
    "load_model": ".modelfile",
    "load_robot": ".modelfile",
    "ModalResult": ".analysis",
    "modal": ".analysis",
    "BDF2": ".integrate.schemes",
    "AverageVectorField": ".integrate.schemes",
    "BackwardEuler": ".integrate.schemes",
    "BDFAlpha": ".integrate.schemes",
    "DifferenceFormula": ".integrate.schemes",
    "ImplicitMidpoint": ".integrate.schemes",
    "NewmarkBeta": ".integrate.schemes",
    "Trapezoid": ".integrate.schemes",
    "scheme_from_name": ".integrate.schemes",
}
#: public submodules, imported on first use (``jaxrod.scenes``, ``jaxrod.geometry``); any other
#: submodule (``jaxrod.plot``, ``jaxrod.calibrate``...) is imported explicitly as usual
_SUBMODULES = ("geometry", "scenes")

if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from .actuation import Chamber, FunctionRouting, HelicalRouting, SampledRouting, StraightRouting, Tendon
    from .integrate import AbstractStepper, ImplicitStepper
    from .models.cosserat import LegLengths, StewartGough
    from .models.der import DERNetwork, FloorContact, RodRodContact
    from .models.pcs import NonlinearOptions, PCSModel, PCSRod, PointWrench, StrainBasis, TipBody
    from .models.section import CrossSection, Material
    from .models.tmtdyn import ClampedRodModel, EBAModel, ROMModel, RodSection
    from .signals import Constant, Hat, LinearRamp, ReleasedAt, SampledTrajectory, Samples
    from .system import (
        Damper, Fixed, HybridSystem, JointTorque, MultibodySystem, PDController, Planar, PlanarPin, PointForce,
        PrescribedAngle, PrescribedDisplacement, Prismatic, Revolute, RigidBody, RodClamp, RodPin, Spherical,
        Spring, TorsionDamper, TorsionSpring, Universal,
    )
    from .system import Box, ContactSystem, Plane, SphereContact
    from .system import JointSpaceSystem
    from .integrate.explicit import RK4, SemiImplicitEuler
    from .integrate import MoreauOptions
    from . import geometry, scenes
    from .integrate import AbstractImplicitModel, State
    from .models.cosserat import CosseratModel, CosseratRod, CosseratState, PointLoad
    from .models.der import ClampMotion, DERModel, DERRod, SampledMotion, first_mode_velocity
    from .integrate import (
        ConvergenceError,
        FallbackWarning,
        SolverStats,
        Trajectory,
        convergence_errors,
        implicit_step,
        simulate,
        simulate_adaptive,
        solve_static,
    )
    from .solvers.jacobian import BandedJacobianSolver, DenseJacobianSolver
    from .solvers.newton import NewtonResult, NewtonSolver, newton_solve
    from .modelfile import load_model, load_robot
    from .analysis import ModalResult, modal
    from .integrate.schemes import (
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
    "SphereContact",
    "Plane",
    "MoreauOptions",
    "ContactSystem",
    "Box",
    "AbstractImplicitModel",
    "AbstractStepper",
    "AverageVectorField",
    "BDF2",
    "BDFAlpha",
    "BackwardEuler",
    "BandedJacobianSolver",
    "Chamber",
    "ClampMotion",
    "ClampedRodModel",
    "Constant",
    "ConvergenceError",
    "CrossSection",
    "CosseratModel",
    "CosseratRod",
    "CosseratState",
    "DERModel",
    "DERNetwork",
    "DERRod",
    "Damper",
    "DenseJacobianSolver",
    "DifferenceFormula",
    "EBAModel",
    "FallbackWarning",
    "Fixed",
    "FloorContact",
    "FunctionRouting",
    "Hat",
    "HelicalRouting",
    "HybridSystem",
    "ImplicitMidpoint",
    "ImplicitStepper",
    "JointTorque",
    "LegLengths",
    "LinearRamp",
    "ModalResult",
    "MultibodySystem",
    "JointSpaceSystem",
    "RK4",
    "SemiImplicitEuler",
    "NewmarkBeta",
    "NewtonResult",
    "NewtonSolver",
    "Material",
    "NonlinearOptions",
    "PCSModel",
    "PointWrench",
    "PCSRod",
    "PDController",
    "Planar",
    "PlanarPin",
    "PointForce",
    "PointLoad",
    "PrescribedAngle",
    "PrescribedDisplacement",
    "Prismatic",
    "ROMModel",
    "ReleasedAt",
    "Revolute",
    "RigidBody",
    "RodClamp",
    "RodPin",
    "RodRodContact",
    "RodSection",
    "SampledMotion",
    "SampledRouting",
    "SampledTrajectory",
    "Samples",
    "SolverStats",
    "Spherical",
    "Spring",
    "State",
    "StewartGough",
    "StraightRouting",
    "StrainBasis",
    "Tendon",
    "TipBody",
    "TorsionDamper",
    "TorsionSpring",
    "Trajectory",
    "Trapezoid",
    "Universal",
    "convergence_errors",
    "first_mode_velocity",
    "geometry",
    "implicit_step",
    "load_model",
    "load_robot",
    "modal",
    "newton_solve",
    "scenes",
    "scheme_from_name",
    "simulate",
    "simulate_adaptive",
    "solve_static",
]


__getattr__, __dir__ = _lazy_attributes(__name__, globals(), _LAZY, _SUBMODULES, listed=__all__)

