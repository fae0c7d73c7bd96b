"""DisMech soft-limb real2sim on the measured AprilTag data (issue 5, item 4).

Fits the natural curvature of each of the two limbs for every frame of the recording, with exact
gradients of the simulated static shape (implicit differentiation of jaxrod's Newton solve) and
L-BFGS (optax), warm-started from the previous frame, twice: with the tip tag held out of the loss
(its error is a prediction) and with all tags (its error is an in-sample residual); both are
printed side by side (jaxrod.calibrate.evaluate). ``--baseline`` also runs DisMech's own scheme
(Algorithm 1: forward finite differences, step 0.1 halved when the loss increases, L1 loss on the
limb curvatures) on the same frames and model (slow).

The data file is GPL-3.0 and stays outside this repository: it is found at run time
(``$JAXROD_SOFT_LIMB_DATA``, or ``shared/data/dismech-soft-limb/soft_limb_data.csv`` next to the
repository or the current directory), or pass ``--data PATH``; a clear error says so when absent.
Modelling choices are documented in :mod:`jaxrod.cases.soft_limb`.

Examples::

    python calibration/real2sim_soft_limb.py --out results/soft_limb
    python calibration/real2sim_soft_limb.py --frames 0:25 --baseline both
    python calibration/real2sim_soft_limb.py --camera-roll --out results/soft_limb_roll
"""

from __future__ import annotations

import argparse
import os
import sys

# use the checkout this script lives in, whatever an editable install points at
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from jaxrod.cases.soft_limb import DESCRIPTION, add_arguments, run_from_args


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(description=DESCRIPTION))


def run(argv=None):
    """Parse ``argv`` and run; returns ``(result, summary)``."""
    return run_from_args(build_parser().parse_args(argv))


def main(argv=None) -> int:
    try:
        run(argv)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
