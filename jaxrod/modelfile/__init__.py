"""Declarative model files: a TOML file describing rigid bodies, joints, constraints, loads, a rod
(any jaxrod model, or a built-in scene), the initial state, the run settings and the outputs.

* :func:`load_model` (also ``jaxrod.load_model``): file -> :class:`~jaxrod.scenes.scene.Scene`, the
  record the scene registry returns, with the file's path and outputs (``.model``, ``.state0``,
  ``.dt``, ``.duration``, ``.scheme``..., ``.path``, ``.kind``, ``.simulate()``, ``.summary()``).
* ``jaxrod simulate path/to/model.toml`` runs one from the command line; the shipped examples
  (:data:`EXAMPLES_DIR`, :func:`example_names`) are found by name: ``jaxrod simulate pendulum.toml``.
* :func:`load_robot` (also ``jaxrod.load_robot``): a URDF or MJCF robot file -> the same
  ``Scene`` (:mod:`~jaxrod.modelfile.urdf`, :mod:`~jaxrod.modelfile.mjcf`); a TOML file
  includes one with ``[include] urdf = "arm.urdf"`` and attaches rods and loads to its links.
* :class:`ModelFileError`: every problem, as ``FILE: TABLE.KEY: what is wrong and what is allowed``.
* :data:`JOINT_TYPES`, :data:`ROD_MODELS`: the element tables (add a joint type there).

Importing this package imports no model package, simulator or equinox: a file is checked (pure
Python) before the model is built, so a bad file is reported at once.
"""

from .errors import ModelFileError
from .load import EXAMPLES_DIR, example_names, load_model, load_robot
from .registry import JOINT_TYPES, ROD_MODELS

__all__ = ["EXAMPLES_DIR", "JOINT_TYPES", "ModelFileError", "ROD_MODELS", "example_names", "load_model", "load_robot"]
