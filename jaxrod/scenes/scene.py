"""The :class:`Scene` record shared by every scene builder."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..integrate.schemes import ImplicitMidpoint


@dataclass
class Scene:
    """A ready-to-run problem.

    Attributes:
        name: registry name.
        description: one line for people.
        model: the model (e.g. :class:`~jaxrod.models.der.DERModel`).
        dt: default time step [s] (ignored for static scenes).
        duration: default simulated time [s] (0 for static scenes).
        scheme: default time scheme (a :class:`~jaxrod.integrate.schemes.DifferenceFormula` for
            shooting models).
        static: True when the scene is a static equilibrium problem.
        load_steps: load increments for static scenes.
        reference: dict of reference values (units in the key names).
        state0: initial state when it is not the model's default (e.g. a strain offset).
        solver: :class:`~jaxrod.solvers.newton.NewtonSolver` the scene needs when the default does
            not fit (e.g. fresh Jacobians through contact impacts); ``None``: the default.
    """

    name: str
    description: str
    model: object
    dt: float = 0.0
    duration: float = 0.0
    scheme: object = field(default_factory=ImplicitMidpoint)
    static: bool = False
    load_steps: int = 1
    reference: dict = field(default_factory=dict)
    state0: object = None
    solver: object = None
