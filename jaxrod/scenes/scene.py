"""The :class:`Scene` record: a ready-to-run problem, from the scene registry
(:func:`jaxrod.scenes.get_scene`) or from a model file (:func:`jaxrod.load_model`).

Importing this module imports no JAX: a model file is read and checked before the simulator is
loaded (the default scheme is made when a scene is built).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Scene:
    """A ready-to-run problem: a model with its run settings, reference values and, for a model
    file, its path and outputs.

    Attributes:
        name: registry name, or a model file's ``[model] name`` (default: the file name).
        description: one line for people.
        model: the model (e.g. :class:`~jaxrod.models.der.DERModel`,
            :class:`~jaxrod.system.MultibodySystem`, ``HybridSystem``).
        dt: default time step [s] (ignored for static scenes); ``n_steps``: ``duration / dt``.
        duration: default simulated time [s] (0 for static scenes).
        scheme: default time scheme (a :class:`~jaxrod.integrate.schemes.DifferenceFormula` for
            shooting models); not given: implicit midpoint (nothing for a static scene); ``None``:
            the model's own stepping (a Moreau contact system takes no scheme).
        static: True when the scene is a static equilibrium problem.
        load_steps: load increments for static scenes.
        reference: dict of reference values (units in the key names).
        state0: initial state when it is not the model's default (e.g. a strain offset).
        solver: :class:`~jaxrod.solvers.newton.NewtonSolver` the scene needs when the default does
            not fit (e.g. fresh Jacobians through contact impacts); ``None``: the default.
        path: the model file it was read from (``None``: a registry scene).
        kind: ``"scene"`` (a built-in scene, from the registry or named by a model file),
            ``"rod"`` (a rod model of a file), ``"system"`` (rigid bodies and joints) or
            ``"hybrid"`` (rods attached to bodies, ``jaxrod.system.hybrid``).
        save_every: save one frame every this many steps.
        quantities: names of :data:`~jaxrod.scenes.report.QUANTITIES` a run reports
            (:meth:`summary`; empty for a registry scene, whose report is the command line's).
        plot, animate: figure / GIF file names of a model file's ``[output]`` (or ``None``).
        body_names: names of the rigid bodies, in the order of the model's arrays.
        modal_modes: a model file's ``[analysis] modal = true``: the number of modes ``jaxrod
            simulate`` prints before the run; ``None``: no modal analysis.
    """

    name: str
    description: str
    model: object
    dt: float = 0.0
    duration: float = 0.0
    scheme: object = "default"
    static: bool = False
    load_steps: int = 1
    reference: dict = field(default_factory=dict)
    state0: object = None
    solver: object = None
    path: str | None = None
    kind: str = "scene"
    save_every: int = 1
    quantities: tuple = ()
    plot: str | None = None
    animate: str | None = None
    body_names: tuple = ()
    modal_modes: int | None = None

    def __post_init__(self):
        # "default" (not None) marks "not given": None is a scheme choice of its own, the model's
        # (a Moreau contact system, which takes no scheme)
        if isinstance(self.scheme, str) and self.scheme == "default":
            if self.static:
                self.scheme = None
            else:
                from ..integrate.schemes import ImplicitMidpoint

                self.scheme = ImplicitMidpoint()

    @property
    def n_steps(self) -> int:
        """``duration / dt`` rounded to a whole number of steps."""
        return int(round(self.duration / self.dt))

    def simulate(self, *, n_steps=None, progress=False, **options):
        """Run the model with the scene's settings: :func:`jaxrod.simulate` (``n_steps``
        overrides ``duration / dt``; ``options`` go to ``simulate``), or for a static scene
        :func:`jaxrod.solve_static`, returning ``(state, newton_result)``."""
        if self.static:
            from ..integrate import solve_static

            return solve_static(self.model, load_steps=self.load_steps, progress=progress, **options)
        from ..integrate import simulate

        n = self.n_steps if n_steps is None else n_steps
        options.setdefault("save_every", self.save_every if n % self.save_every == 0 else 1)
        for key in ("dt", "scheme", "state0", "solver"):  # the scene's, unless given here
            options.setdefault(key, getattr(self, key))
        return simulate(self.model, n_steps=n, progress=progress, **options)

    def summary(self, traj):
        """The ``quantities`` of a trajectory, one string each."""
        from .report import summary_lines

        return summary_lines(self, traj)
