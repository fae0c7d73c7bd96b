"""Figures and animations (matplotlib), drawn by user-facing code only (the command line,
notebooks, scripts); models, scenes and model files never draw.

* :mod:`jaxrod.plot.rods`: rod trajectories, static shapes, GIFs, mode shapes and the displacement
  scale of drawn shapes (:func:`plot_trajectory`, :func:`plot_static`, :func:`animate_trajectory`,
  :func:`plot_modes`, :func:`displacement_scale`, :func:`node_chains`).
* :mod:`jaxrod.plot.robots`: a parallel robot's plate and legs (:func:`plot_plate_trajectory`), a
  tendon robot's tip path, tensions and motor displacements (:func:`plot_tendon_robot`) and its
  tendons' paths (:func:`tendon_paths`, drawn on the rod by :func:`plot_trajectory` and
  :func:`animate_trajectory`).
* :mod:`jaxrod.plot.contact`: a set-valued contact run (the snake robot): bodies from above with
  one body's path, its coordinates and the contacts touching (:func:`plot_contact_trajectory`),
  a top + side view GIF (:func:`animate_contact_trajectory`).
* :mod:`jaxrod.plot.bodies`: a rigid-body or hybrid run from a model file: body paths and the
  rods at a few times, and the system in 3-D (:func:`plot_bodies`), a GIF (:func:`animate_bodies`).
* :mod:`jaxrod.plot.scene3d`: the 3-D drawing of bodies (boxes from their inertia), joints, rods
  and attachments behind them (:class:`~jaxrod.plot.scene3d.Scene3D`).
"""

from .bodies import animate_bodies, plot_bodies
from .contact import animate_contact_trajectory, plot_contact_trajectory
from .robots import plot_plate_trajectory, plot_tendon_robot
from .tendons import tendon_paths
from .rods import animate_trajectory, displacement_scale, node_chains, plot_modes, plot_static, plot_trajectory

__all__ = [
    "animate_bodies",
    "animate_contact_trajectory",
    "animate_trajectory",
    "displacement_scale",
    "node_chains",
    "plot_bodies",
    "plot_contact_trajectory",
    "plot_modes",
    "plot_plate_trajectory",
    "plot_static",
    "plot_tendon_robot",
    "plot_trajectory",
    "tendon_paths",
]
