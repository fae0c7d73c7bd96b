"""DisMech soft-limb real2sim on the measured AprilTag data (issue 5, item 4).

Fits the natural curvature of each of the two limbs for every frame of the recording, with exact
gradients of the simulated static shape (implicit differentiation of jaxrod's Newton solve) and
L-BFGS (optax), warm-started from the previous frame; then runs DisMech's own scheme (Algorithm 1:
forward finite differences, step 0.1 halved when the loss increases, L1 loss on the limb
curvatures) on the same frames, model and equilibrium solver, and prints both side by side.

The data file is GPL-3.0 and stays outside this repository: pass its path with ``--data``
(default ``../shared/data/dismech-soft-limb/soft_limb_data.csv`` next to the repository).
Modelling choices are documented in :mod:`jaxrod.cases.soft_limb`.

Examples::

    python calibration/real2sim_soft_limb.py --out results/soft_limb
    python calibration/real2sim_soft_limb.py --frames 0:170:20 --no-baseline
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
