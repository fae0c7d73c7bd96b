"""Readers of the measured data sets jaxrod is validated and calibrated on (never copied into
jaxrod; their licences stay with them). Host-side NumPy, no model imports.

* :mod:`jaxrod.datasets.shared`: finding a data file (an environment variable, else
  ``shared/data/...`` next to the repository or the working directory).
* :mod:`jaxrod.datasets.stiff_flop`: the STIFF-FLOP module's recordings (TMTDyn), their paper
  parameters, evaluation times and error metric.
* :mod:`jaxrod.datasets.soft_limb`: the DisMech soft-limb AprilTag CSV.

Submodules are imported explicitly (``from jaxrod.datasets import stiff_flop``).
"""
