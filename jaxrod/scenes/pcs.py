"""Scenes of Ishigaki, Ayusawa & Yamamoto (RA-L 2024) for the PCS model (Newmark-beta).

* ``pcs-silicone``: silicone-rubber cantilever sagging under gravity (paper sec. V-B): L 0.9 m,
  3 segments, E 110 kPa, shear viscosity 300 Pa s, nu 0.5, rho 1080 kg/m^3. The paper gives no
  cross-section; we use a 5 cm x 2 cm rectangle (thin side vertical, so gravity bends it about the
  easy axis), the spec's recommendation, whose explicit-Euler stability limit (6.8e-4 s) falls in the
  window the paper implies. Rod along +x, gravity -z, released straight at rest; dt 4 ms, 10 s.
* ``pcs-cfrp``: CFRP leaf-spring prosthesis stand-in (sec. V-C): E 61.635 GPa, viscosity 20.5 MPa s,
  nu 0.3, rho 1810 kg/m^3, 6 segments, base = the ground-contact tip. The paper's geometry comes
  from another paper and is not given: we use L 0.5 m, 6 cm x 1.2 cm (0.652 kg, the paper's
  prosthesis is 655 g) and a J-shaped rest curvature about y; initial strain offset +0.01 on the
  linear and +1.0 on the angular components of every segment, relaxing for 10 s at dt 1 ms.
  Clearly a stand-in: compare shapes and timings qualitatively only. Scheme: Newmark average
  acceleration as in the paper, started from ``a0 = 0`` (``NewmarkBeta(start="rest")``). The
  consistent start (solve the equation of motion for ``a0``) fails here at the first step: the
  offset gives ``|a0|`` ~ 1.6e10 (RMS; a physical spike lasting ~``m/c``, nanoseconds; the paper's
  Fig. 9 shows a huge first-step acceleration for explicit Euler), the trapezoid rule carries it as
  an undamped +-a0 alternation in the acceleration and Newton, started from the predictor
  ``q + dt v + dt^2 a / 2``, diverges at every step (measured at dt 1e-3 and 1e-4 s, 20 steps, none
  converged). From ``a0 = 0`` every step converges in 3-4 Newton updates at dt 1e-3 s.
"""

from __future__ import annotations

import numpy as np

from ..integrate.base import State
from ..models.pcs import PCSModel, PCSRod
from ..integrate.schemes import NewmarkBeta
from .scene import Scene


def pcs_silicone(*, n_segments: int = 3, width: float = 0.05, thickness: float = 0.02,
                 dt: float | None = None, duration: float | None = None):
    """The paper's experiment 1 (see module docstring)."""
    rod = PCSRod.rectangular(0.9, n_segments, width, thickness, youngs_modulus=110e3, density=1080.0,
                             poisson_ratio=0.5, viscosity=300.0)
    model = PCSModel(rod, gravity=(0.0, 0.0, -9.81))
    return Scene(
        "pcs-silicone",
        f"PCS silicone cantilever sagging under gravity: L = 0.9 m, {n_segments} segments, "
        f"{100 * width:g} x {100 * thickness:g} cm",
        model,
        dt=0.004 if dt is None else dt,
        duration=10.0 if duration is None else duration,
        scheme=NewmarkBeta(),
        reference={"paper_wall_s": {"E1": 790.0, "E2": 7.9, "I1": 5.6, "I2": 2.6, "I-A": 1.4}, "tip_axis": 2},
    )


#: J-shaped rest curvature about local y [rad/m] of the CFRP stand-in, base (ground) to top.
CFRP_REST_KY = (6.0, 4.0, 1.0, 0.0, 0.0, 0.0)


def pcs_cfrp(*, dt: float | None = None, duration: float | None = None):
    """The paper's experiment 2 with a stand-in geometry (see module docstring)."""
    n = 6
    rest = np.tile(np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]), (n, 1))
    rest[:, 1] = CFRP_REST_KY
    rod = PCSRod.rectangular(0.5, n, 0.06, 0.012, youngs_modulus=61.635e9, density=1810.0, poisson_ratio=0.3,
                             viscosity=20.5e6, rest_strain=rest)
    # base frame: rod axis (local x) vertical, up
    Rb = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    model = PCSModel(rod, gravity=(0.0, 0.0, -9.81), base_rotation=Rb)
    q0 = np.tile(np.array([1.0, 1.0, 1.0, 0.01, 0.01, 0.01]), n)
    return Scene(
        "pcs-cfrp",
        "PCS CFRP leaf-spring stand-in (6 segments, 0.65 kg) relaxing from a strain offset",
        model,
        dt=1e-3 if dt is None else dt,
        duration=10.0 if duration is None else duration,
        scheme=NewmarkBeta(start="rest"),
        state0=State(np.asarray(q0), np.zeros(6 * n), None),
        reference={"paper_wall_s": {"C1": 60.0}, "tip_axis": 0},
    )
