"""Till et al. (2019) weight-release calibration of EI, density and drag C from a tip trajectory.

Usage::

    python calibration/weight_release.py --out out/weight_release            # quick, SYNTHETIC (~1-2 min)
    python calibration/weight_release.py --fine --out out/wr_fine             # slow study (~10 min)
    python calibration/weight_release.py --data tip.csv --length-scale 1e-3  # a measured track

Without ``--data`` the tip track is SYNTHETIC. By default it comes from the fit model itself (Euler,
10 points, dt 4 ms) at the Table 5 values (EI 0.0380 N m^2, rho 7602 kg/m^3, C 2.1 g/m^2) with
0.1 mm noise: the run checks the optimiser and the identifiability, not the model's accuracy.
``--fine`` simulates the data with a finer model (RK4, 100 points, 1 kHz) and fits RK4 40 points
at dt 1 ms. The fit starts 30% off; the last 25% of the record is held out of the fit
(``--hold-out``) and its tip error is printed beside the in-sample one; the identifiability
report checks the residuals against the stated noise (lack of fit). A measured CSV has columns
``t, tip_x, tip_z`` (seconds; metres unless ``--length-scale``), ``t = 0`` at the release, ``x``
vertical (up) and ``z`` along the undeformed rod; see ``jaxrod.calibrate.data``.

All options: ``--help``; the work is done by :mod:`jaxrod.cases.weight_release` (its
docstring lists measured results, including the drag bias of coarse fit models).
"""

import sys

from jaxrod.cases.weight_release import main

if __name__ == "__main__":
    sys.exit(main())
