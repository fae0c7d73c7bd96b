"""Case studies built on the general tools of :mod:`jaxrod.calibrate` (not part of the library API).

* :mod:`~jaxrod.cases.weight_release`: Till et al. (2019) weight-release calibration of EI, rho
  and the drag coefficient C from a tip trace (synthetic data unless a measured file is given);
* :mod:`~jaxrod.cases.soft_limb`: real2sim of the DisMech two-limb soft manipulator on its
  measured AprilTag data (per-frame limb curvatures, held-out tip evaluation, DisMech's
  finite-difference scheme as an optional baseline);
* :mod:`~jaxrod.cases.stiff_flop_calibration`: the STIFF-FLOP module's fit on its recordings.

All are also ``jaxrod calibrate weight-release | soft-limb | stiff-flop`` and the scripts in
``calibration/``. The top floor: only :mod:`jaxrod.cli` and the ``calibration/`` scripts import
this package (the data readers are :mod:`jaxrod.datasets`, the models :mod:`jaxrod.scenes`).
Modules are imported on demand (``from jaxrod.cases import soft_limb``) so that importing
:mod:`jaxrod` does not pay for them.
"""
