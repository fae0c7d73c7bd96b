"""The scene registry: what each built-in scene is, without building it.

Every scene is listed here with its name, a one-line description, whether it is static, its default
time step and duration, and the module and function that build it. Nothing here imports a model:
``jaxrod scenes``, ``--help`` and a misspelt scene name answer in the time of ``import jax``, and a
scene's module (JAX, equinox, the model package) is imported only when the scene is built.

The static fields are checked against what each builder returns by ``tests/test_scene_registry.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["REGISTRY", "SCENES", "SceneInfo", "get_scene", "scene_info"]


@dataclass(frozen=True)
class SceneInfo:
    """A built-in scene, described without building it.

    Attributes:
        name: registry name (``jaxrod simulate NAME``).
        description: one line for people (static text; the built scene's own description may add
            values computed from the overrides).
        module: module of the builder, relative to :mod:`jaxrod.scenes` (e.g. ``".der"``).
        builder: name of the builder function in ``module``.
        static: True for a static equilibrium problem.
        dt: default time step [s] (``None`` for static scenes).
        duration: default simulated time [s] (``None`` for static scenes).
        fixed: keyword arguments that select this scene from a shared builder (e.g. ``case="a1"``).
    """

    name: str
    description: str
    module: str
    builder: str
    static: bool = False
    dt: float | None = None
    duration: float | None = None
    fixed: dict = field(default_factory=dict)

    def load(self) -> Callable:
        """The builder function (imports its module, and with it the model package)."""
        return getattr(importlib.import_module(self.module, __package__), self.builder)

    def build(self, **overrides):
        """Build the :class:`~jaxrod.scenes.scene.Scene` with keyword ``overrides`` of the builder's
        defaults."""
        return self.load()(**self.fixed, **overrides)

    def settings(self) -> str:
        """``"static"`` or ``"dt = .. s, T = .. s"``: the defaults, for listings."""
        return "static" if self.static else f"dt = {self.dt:g} s, T = {self.duration:g} s"


# In the order ``jaxrod scenes`` lists them.
_INFOS = (
    SceneInfo("cantilever-static", "tip-loaded cantilever, static equilibrium (P L^2/EI = 0.03 by default)",
              ".der", "cantilever_static", static=True),
    SceneInfo("cantilever-a1", "DisMech dynamic cantilever a1: E = 0.1 MPa, first-mode free vibration",
              ".der", "dynamic_cantilever", dt=0.5, duration=100.0, fixed={"case": "a1"}),
    SceneInfo("cantilever-a2", "DisMech dynamic cantilever a2: E = 10 MPa, first-mode free vibration",
              ".der", "dynamic_cantilever", dt=0.05, duration=20.0, fixed={"case": "a2"}),
    SceneInfo("helix-b1", "DisMech helix b1: E = 10 MPa, h = 5 mm, hanging under gravity",
              ".der", "helix", dt=3e-3, duration=10.0, fixed={"case": "b1"}),
    SceneInfo("helix-b2", "DisMech helix b2: E = 1 GPa, h = 1 mm, hanging under gravity",
              ".der", "helix", dt=3e-3, duration=2.0, fixed={"case": "b2"}),
    SceneInfo("till-benchmark", "Till et al. benchmark: steel cantilever, 0.5 N tip load released (Cosserat)",
              ".till", "till_benchmark", dt=5e-3, duration=1.0),
    SceneInfo("till-weight-release", "Till et al. weight release: 1.42 mm steel rod, 20 g tip weight released",
              ".till", "till_weight_release", dt=2e-3, duration=2.0),
    SceneInfo("till-impulse", "Till et al. impulse: 5 N hat force over 16 ms near the base of a steel rod",
              ".till", "till_impulse", dt=2e-3, duration=1.0),
    SceneInfo("tendon-robot-step", "Till et al. single-tendon robot: ramped motor displacement step and back (Cosserat)",
              ".tendon", "tendon_robot_step", dt=0.05, duration=25.0),
    SceneInfo("tendon-object-transfer", "Till et al. 4-tendon robot: 1 g object picked, carried, released (Cosserat)",
              ".tendon", "tendon_object_transfer", dt=1.0 / 60.0, duration=5.0),
    SceneInfo("fluidic-finger", "Till et al. soft finger inflated with air (moles ramped over 2 s, then free), E = 20 kPa",
              ".fluidic", "fluidic_finger", dt=0.01, duration=4.5, fixed={"fluid": "air"}),
    SceneInfo("fluidic-finger-water", "Till et al. soft finger filled with water (volume ramped over 2 s, then free)",
              ".fluidic", "fluidic_finger", dt=0.01, duration=4.5, fixed={"fluid": "water"}),
    SceneInfo("pcs-silicone", "PCS silicone cantilever sagging under gravity (Ishigaki et al.)",
              ".pcs", "pcs_silicone", dt=4e-3, duration=10.0),
    SceneInfo("pcs-cfrp", "PCS CFRP leaf-spring stand-in relaxing from a strain offset (Ishigaki et al.)",
              ".pcs", "pcs_cfrp", dt=1e-3, duration=10.0),
    SceneInfo("friction-validation", "DisMech friction validation: 1 kg rod pushed along a frictional floor",
              ".contact", "friction_validation", dt=5e-3, duration=1.5),
    SceneInfo("rod-drop", "rod dropped tilted onto a frictional floor",
              ".contact", "rod_drop", dt=2e-3, duration=1.0),
    SceneInfo("rod-coiling", "soft rod lowered onto a frictional floor lays down in coils (Jawed et al.)",
              ".contact", "rod_coiling", dt=5e-3, duration=7.0),
    SceneInfo("network-spider", "DisMech spider (9 limbs, 5 joints) dropped on a floor",
              ".network", "spider", dt=2.5e-3, duration=2.0),
    SceneInfo("network-two-limb", "two-limb soft finger, natural curvature ramped in",
              ".network", "two_limb_actuated", dt=0.01, duration=3.0),
    SceneInfo("network-gripper", "DisMech active entanglement gripper: five curling fingers with contact",
              ".network", "gripper", dt=2.5e-3, duration=15.0),
    SceneInfo("sleeve-pendulum", "TMTDyn fabric sleeve (3 x 5 DER grid) on a damped pendulum released from 85 deg",
              ".sleeve", "sleeve_pendulum", dt=5e-3, duration=5.0),
    SceneInfo("stiff-flop-passive", "TMTDyn's STIFF-FLOP module, passive: PCS cantilever bending under its weight",
              ".stiff_flop", "stiff_flop_passive", dt=2e-3, duration=1.0),
    SceneInfo("stiff-flop", "TMTDyn's STIFF-FLOP module driven by the measured pressures (data: shared/data/stiff-flop)",
              ".stiff_flop", "stiff_flop_actuated", dt=0.05, duration=54.65),
    SceneInfo("snake-undulation-ortho", "Aiko snake robot, lateral undulation on orthotropic Coulomb friction (Transeth et al.)",
              ".snake", "snake_undulation", dt=5e-4, duration=15.0),
    SceneInfo("snake-undulation-iso", "Aiko snake robot, lateral undulation on isotropic friction 0.2 (drifts backward)",
              ".snake", "snake_undulation_iso", dt=5e-4, duration=15.0),
    SceneInfo("snake-sidewinding", "Aiko snake robot, sidewinding with soft start on isotropic friction 0.2",
              ".snake", "snake_sidewinding", dt=5e-4, duration=15.0),
    SceneInfo("der-snake", "continuum snake on DER: curvature wave, anisotropic floor friction (PyElastica's example)",
              ".der_snake", "der_snake", dt=1e-3, duration=10.0),
    SceneInfo("stewart-gough", "Till et al. continuum Stewart-Gough platform: plate driven along a line, then free",
              ".stewart_gough", "stewart_gough", dt=1.0 / 120.0, duration=5.0),
)

#: Every built-in scene by name, in listing order.
REGISTRY: dict[str, SceneInfo] = {info.name: info for info in _INFOS}

#: Scene name -> builder callable (``SCENES[name](**overrides)`` builds it; nothing is built or
#: imported before the call).
SCENES: dict[str, Callable] = {name: info.build for name, info in REGISTRY.items()}


def scene_info(name: str) -> SceneInfo:
    """The registry entry of ``name``; ``ValueError`` naming the available scenes otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown scene {name!r}; available: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def get_scene(name: str, **overrides):
    """Build the scene ``name`` (see :data:`SCENES`) with keyword overrides."""
    return scene_info(name).build(**overrides)
