"""Canonical problems built only from the public API; used by the CLI, tests, benchmarks and
notebooks. Each builder returns a :class:`Scene`: a model plus the run settings and the
reference values a result is checked against.

* ``cantilever-static``: tip-loaded cantilever, static equilibrium (small or large deflection).
* ``cantilever-a1`` / ``cantilever-a2``: DisMech Table II dynamic cantilevers (first-mode free
  vibration from a 5 mm/s tip velocity), E = 0.1 MPa / 10 MPa.
* ``helix-b1`` / ``helix-b2``: DisMech Table II helix hanging under gravity.
* ``till-benchmark``, ``till-weight-release``, ``till-impulse``: Till et al.'s Cosserat-rod
  scenes (shooting model), see :mod:`jaxrod.scenes.till`.
* ``pcs-silicone``, ``pcs-cfrp``: Ishigaki et al.'s PCS scenes, see :mod:`jaxrod.scenes.pcs`.
* ``network-gripper``: DisMech's active entanglement gripper (five curling fingers with self- and
  finger-finger IMC contact), see :func:`jaxrod.scenes.network.gripper`.
* ``sleeve-pendulum``: TMTDyn's fabric sleeve (a 3 x 5 DER grid) whose clamps follow a damped
  rigid pendulum, see :mod:`jaxrod.scenes.sleeve`; ``stiff-flop-passive``: TMTDyn's STIFF-FLOP
  module as a PCS cantilever under its weight, see :mod:`jaxrod.scenes.stiff_flop`.
* ``snake-undulation-ortho``, ``snake-undulation-iso``, ``snake-sidewinding``: the snake robot
  Aiko of Transeth et al. (2008): 11 rigid links, cardan joints, PD-tracked serpenoid gait,
  set-valued anisotropic Coulomb contact (Moreau time stepping), see :mod:`jaxrod.scenes.snake`.
* ``der-snake``: PyElastica's continuum snake on a DER rod: a travelling wave of natural curvature
  on an anisotropic frictional floor, see :mod:`jaxrod.scenes.der_snake`.
* ``rod-coiling``: a soft rod lowered onto a frictional floor lays down in coils of radius
  ~ the gravito-bending length (Jawed et al., PNAS 2014), see :func:`jaxrod.scenes.contact.rod_coiling`.

Importing this package builds and imports nothing heavy: the names, descriptions and default
settings live in :mod:`jaxrod.scenes.registry`; a builder's module (and the model package behind it)
is imported when the scene is built or when one of its names below is first used
(``jaxrod.scenes.cantilever_static``, ``from jaxrod.scenes import helix``, ``jaxrod.scenes.contact``).
"""

from __future__ import annotations

from .._lazy import lazy_attributes as _lazy_attributes
from typing import TYPE_CHECKING

from .registry import REGISTRY, SCENES, SceneInfo, get_scene, scene_info

# name -> submodule that defines it, imported on first use (PEP 562)
_LAZY = {
    "BETA_L": ".der",
    "cantilever_static": ".der",
    "dismech_helix_points": ".der",
    "dynamic_cantilever": ".der",
    "euler_bernoulli_frequency": ".der",
    "helix": ".der",
    "straddled_cantilever_points": ".der",
    "ImplicitMidpoint": ".der",
    "Scene": ".scene",
}
_SUBMODULES = ("contact", "der", "network", "pcs", "scene", "sleeve", "stiff_flop", "till")

__all__ = [
    "BETA_L",
    "REGISTRY",
    "SCENES",
    "ImplicitMidpoint",
    "Scene",
    "SceneInfo",
    "cantilever_static",
    "contact",
    "der",
    "dismech_helix_points",
    "dynamic_cantilever",
    "euler_bernoulli_frequency",
    "get_scene",
    "helix",
    "network",
    "pcs",
    "scene",
    "scene_info",
    "sleeve",
    "stiff_flop",
    "straddled_cantilever_points",
    "till",
]

if TYPE_CHECKING:  # static analysers see the eager imports
    from . import contact, der, network, pcs, scene, sleeve, stiff_flop, till
    from .der import (
        BETA_L,
        ImplicitMidpoint,
        cantilever_static,
        dismech_helix_points,
        dynamic_cantilever,
        euler_bernoulli_frequency,
        helix,
        straddled_cantilever_points,
    )
    from .scene import Scene


__getattr__, __dir__ = _lazy_attributes(__name__, globals(), _LAZY, _SUBMODULES)
