"""STIFF-FLOP (TMTDyn validation E1) on the measured recordings: fit E and the Kelvin-Voigt
viscosity (G/E fixed at 1/3 unless ``--fit-shear``) of the actuated PCS module on NoLoad 0-29 s with exact gradients through the
simulation, then report static and dynamic tip errors in-sample and held out (NoLoad 29-54 s,
Load1, Load2) beside the constant-shape baseline and TMTDyn's published figures.

The data (BSD-4-Clause, Copyright (c) 2019 S.M.Hadi Sadati) stay outside this repository: they are
read from ``$JAXROD_STIFF_FLOP_DATA`` or ``shared/data/stiff-flop/`` next to the repository or the
current directory. Recordings: :mod:`jaxrod.datasets.stiff_flop`; model: :mod:`jaxrod.scenes.stiff_flop`;
split: :mod:`jaxrod.cases.stiff_flop_calibration`.

Examples::

    python calibration/stiff_flop.py --out results/stiff_flop
    python calibration/stiff_flop.py --no-fit --out results/stiff_flop_eval   # stored FITTED values
"""

from __future__ import annotations

import os
import sys

# use the checkout this script lives in, whatever an editable install points at
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from jaxrod.cases.stiff_flop_calibration import main

if __name__ == "__main__":
    sys.exit(main())
