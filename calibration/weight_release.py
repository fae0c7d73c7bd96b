"""Till et al. (2019) weight-release calibration of EI, density and drag C from a tip trajectory.

Usage::

    python calibration/weight_release.py --out out/weight_release            # SYNTHETIC data
    python calibration/weight_release.py --data tip.csv --length-scale 1e-3  # a measured track

Without ``--data`` the tip track is SYNTHETIC: simulated by jaxrod's own finer Cosserat model at
the Table 5 values (EI 0.0380 N m^2, rho 7602 kg/m^3, C 2.1 g/m^2) with 0.1 mm noise at 1 kHz;
the fit then starts 30% off and the recovered values are printed with their errors. A measured CSV
has columns ``t, tip_x, tip_z`` (seconds; metres unless ``--length-scale``), ``t = 0`` at the
release, ``x`` vertical (up) and ``z`` along the undeformed rod; see ``jaxrod.calibrate.data``.
A quick demonstration (~1.5 min; data from the small fit model itself, so nothing but the noise
limits the recovery)::

    python calibration/weight_release.py --data-model same --integrator euler --n-points 10 --dt 0.004

All options: ``--help``; the work is done by :mod:`jaxrod.cases.weight_release` (its
docstring lists measured results, including the drag bias of coarse fit models).
"""

import sys

from jaxrod.cases.weight_release import main

if __name__ == "__main__":
    sys.exit(main())
