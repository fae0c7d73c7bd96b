"""The light half of the case studies: settings, presets and command-line options.

``jaxrod --help`` and every argument error of ``jaxrod calibrate`` need the options of
:mod:`jaxrod.cases.weight_release` and :mod:`jaxrod.cases.soft_limb` but none of their machinery
(JAX programs, optax, matplotlib): this module imports only the standard library and the data
locations of :mod:`jaxrod.datasets.soft_limb` (NumPy), and the case
modules re-export what is defined here (``weight_release.add_arguments``,
``weight_release.WeightReleaseSettings``, ``soft_limb.add_arguments``, ``soft_limb.DESCRIPTION``).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from ..datasets.soft_limb import DATA_ENV, DATA_RELPATH

__all__ = [
    "CLI_HOLD_OUT",
    "FINE",
    "QUICK",
    "SOFT_LIMB_DESCRIPTION",
    "WeightReleaseSettings",
    "add_soft_limb_arguments",
    "add_weight_release_arguments",
]


# ---- weight release (jaxrod.cases.weight_release) ------------------------------------------------
@dataclass
class WeightReleaseSettings:
    """Settings of :func:`jaxrod.cases.weight_release.run` (SI units).

    Fit model: ``n_points`` arc-length grid points, ``integrator`` (``"rk4"``/``"euler"``),
    ``segments`` (multiple shooting), time step ``dt`` [s], simulated ``duration`` [s], BDF-alpha
    ``alpha``; ``lm_fallback`` adds the Levenberg-Marquardt fallback to the shooting solver
    (more robust, ~2x compile time).

    Synthetic data: ``data_model="fine"`` simulates ``data_n_points`` / ``data_integrator`` /
    ``data_segments`` at ``1 / camera_rate`` [s]; ``data_model="same"`` uses the fit model itself
    at its own ``dt`` (camera rate ``1/dt``; cheap, but then discretisation error cannot bias the
    fit). ``noise`` [m] standard deviation on each measured coordinate, ``seed``.

    Fit: ``start`` factors on the true/Table 5 values, ``method``, ``max_iters`` per stage,
    ``windows`` (fractions of ``duration`` fitted in successive stages), ``scale`` [m] residual
    scale (default: the noise level), ``robust`` loss, ``fit_E`` (fit E [Pa] instead of EI),
    ``block`` [s]: residuals are summed over blocks of this length before the loss
    (:func:`~jaxrod.calibrate.losses.block_residuals`; 0 = every frame on its own). The default
    27 ms is one period of the second bending mode (37.4 Hz), which the block sums remove; the
    first mode (6 Hz: amplitude, frequency, decay) passes at 95%.

    Evaluation: ``hold_out`` (fraction in [0, 1)) of the record at its end is never fitted (every
    stage's window is a fraction of the rest); the tip error there is a prediction, reported
    beside the in-sample error (:func:`jaxrod.calibrate.evaluate.split_windows`).
    """

    n_points: int = 40
    integrator: str = "rk4"
    segments: int = 3
    dt: float = 0.001
    duration: float = 0.6
    alpha: float = -0.4
    lm_fallback: bool = False
    data_model: str = "fine"
    data_n_points: int = 100
    data_integrator: str = "rk4"
    data_segments: int = 3
    camera_rate: float = 1000.0
    noise: float = 1e-4
    seed: int = 0
    start: dict = field(default_factory=lambda: {"EI": 1.3, "rho": 0.7, "C": 1.3})
    method: str = "lbfgs"
    max_iters: int = 60
    windows: tuple = (0.5, 1.0)
    gtol: float = 1e-7
    ftol: float = 1e-10
    scale: float | None = None
    robust: str = "l2"
    fit_E: bool = False
    mass: float = 0.020
    block: float = 0.027
    hold_out: float = 0.0

    def __post_init__(self):
        if self.data_model not in ("fine", "same"):
            raise ValueError(
                f"data_model must be 'fine' or 'same', got {self.data_model!r}"
            )
        for name in ("dt", "duration", "camera_rate", "mass"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v}")
        if not (math.isfinite(self.hold_out) and 0.0 <= self.hold_out < 1.0):
            raise ValueError(
                f"hold_out must be a fraction in [0, 1) of the record, got {self.hold_out}"
            )
        if not (math.isfinite(self.block) and self.block >= 0):
            raise ValueError(f"block must be a finite number >= 0 s, got {self.block}")
        if self.noise < 0:
            raise ValueError(f"noise must be >= 0 m, got {self.noise}")
        w = tuple(float(x) for x in self.windows)
        if (
            not w
            or any(not (0 < x <= 1) for x in w)
            or list(w) != sorted(w)
            or w[-1] != 1.0
        ):
            raise ValueError(
                f"windows must be increasing fractions in (0, 1] ending with 1, got {self.windows}"
            )
        self.windows = w
        missing = {"EI", "rho", "C"} - set(self.start)
        if missing:
            raise ValueError(f"start needs factors for {sorted(missing)}")

    @property
    def n_steps(self) -> int:
        return round(self.duration / self.dt)

    @property
    def residual_scale(self) -> float:
        return float(
            self.scale
            if self.scale is not None
            else (self.noise if self.noise > 0 else 1e-4)
        )

    def describe_fit_model(self) -> str:
        return (
            f"Cosserat {self.integrator}, {self.n_points} points, {self.segments} segment(s), "
            f"BDF-alpha({self.alpha:g}) dt = {1e3 * self.dt:g} ms, {self.duration:g} s"
        )


#: Command-line presets: the default run finishes in about a minute (synthetic data from the fit
#: model itself: it checks the optimiser and the identifiability, not the model's accuracy);
#: ``--fine`` is the slow study (data from a finer model, ~10 min on 2 cores).
QUICK = {"n_points": 10, "integrator": "euler", "dt": 0.004, "data_model": "same"}
FINE = {"n_points": 40, "integrator": "rk4", "dt": 0.001, "data_model": "fine"}
#: Fraction of the record held out (never fitted) by the command line.
CLI_HOLD_OUT = 0.25


def add_weight_release_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the weight-release options to ``p`` (used by the script and ``jaxrod calibrate``;
    ``jaxrod.cases.weight_release.add_arguments``)."""
    d = WeightReleaseSettings()
    p.add_argument(
        "--data",
        metavar="FILE",
        help="measured tip track (CSV/NPZ, see jaxrod.calibrate.data); "
        "default: SYNTHETIC data from our own finer model",
    )
    p.add_argument(
        "--marker", default="0", help="tip marker name or index in --data (default 0)"
    )
    p.add_argument(
        "--length-scale",
        type=float,
        default=1.0,
        help="metres per length unit of --data (1e-3 for mm)",
    )
    p.add_argument(
        "--out", metavar="DIR", help="write the figure, data CSV and JSON result here"
    )
    p.add_argument(
        "--fine",
        action="store_true",
        help=f"the slow study (~10 min): SYNTHETIC data from a finer model (RK4, {d.data_n_points} points, "
        f"1 kHz) fitted by {FINE['n_points']} points RK4 at dt {FINE['dt']} s; default: the quick run "
        f"({QUICK['n_points']} points {QUICK['integrator']}, dt {QUICK['dt']} s, data from the fit model itself)",
    )
    p.add_argument(
        "--n-points",
        type=int,
        default=None,
        help=f"fit-model grid points (default {QUICK['n_points']}; --fine {FINE['n_points']})",
    )
    p.add_argument("--integrator", choices=("rk4", "euler"), default=None,
                   help=f"default {QUICK['integrator']}; --fine {FINE['integrator']}")
    p.add_argument(
        "--segments",
        type=int,
        default=d.segments,
        help="shooting segments of the fit model",
    )
    p.add_argument(
        "--dt",
        type=float,
        default=None,
        help=f"fit-model time step [s] (default {QUICK['dt']}; --fine {FINE['dt']})",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=d.duration,
        help=f"fitted time span [s] (default {d.duration})",
    )
    p.add_argument(
        "--data-model",
        choices=("fine", "same"),
        default=None,
        help="synthetic data from a finer model or from the fit model itself (default same; --fine: fine)",
    )
    p.add_argument("--data-n-points", type=int, default=d.data_n_points)
    p.add_argument(
        "--camera-rate",
        type=float,
        default=d.camera_rate,
        help="synthetic frame rate [Hz]",
    )
    p.add_argument(
        "--noise",
        type=float,
        default=d.noise,
        help="noise standard deviation per axis [m] (default 1e-4): added to synthetic data; with --data "
        "the stated measurement noise, checked against the residuals by the lack-of-fit test",
    )
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--start",
        type=float,
        nargs=3,
        metavar=("EI", "RHO", "C"),
        default=(d.start["EI"], d.start["rho"], d.start["C"]),
        help="start values as factors of Table 5 (default 1.3 0.7 1.3)",
    )
    p.add_argument("--method", choices=("lbfgs", "adam"), default=d.method)
    p.add_argument("--max-iters", type=int, default=d.max_iters, help="per stage")
    p.add_argument(
        "--windows",
        type=float,
        nargs="+",
        default=list(d.windows),
        help="fractions of the fitted span in successive stages (default 0.5 1)",
    )
    p.add_argument(
        "--hold-out",
        type=float,
        default=CLI_HOLD_OUT,
        help="fraction of the record at its end never fitted, scored as a prediction "
        f"(default {CLI_HOLD_OUT}; 0: everything fitted, only in-sample figures)",
    )
    p.add_argument("--robust", choices=("l2", "huber", "cauchy"), default=d.robust)
    p.add_argument(
        "--block",
        type=float,
        default=d.block,
        help="sum residuals over blocks of this many seconds (default 0.027: one period of the "
        "second bending mode; 0: no blocks)",
    )
    p.add_argument(
        "--fit-E", action="store_true", help="fit Young's modulus E instead of EI"
    )
    p.add_argument(
        "--lm-fallback",
        action="store_true",
        help="Levenberg-Marquardt fallback in the shooting solver",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--print-every", type=int, default=1)
    p.add_argument("--no-plot", action="store_true")
    return p


# ---- soft limb (jaxrod.cases.soft_limb) ---------------------------------------------------------

SOFT_LIMB_DESCRIPTION = (
    "Real2sim of the DisMech two-limb soft robot: per-frame limb natural curvatures from measured "
    "AprilTags (exact gradients + L-BFGS), scored with the tip tag held out (of the loss, the base-angle "
    "fit and, by default, the pixel scale and tag arc lengths: --alignment tip-free) beside model-free "
    "chord baselines and the in-sample residuals of an all-tags fit; DisMech's finite-difference scheme "
    "on request (--baseline)."
)


def add_soft_limb_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the soft-limb options to an ``argparse`` parser (used by the script and ``jaxrod calibrate``;
    ``jaxrod.cases.soft_limb.add_arguments``)."""
    p.add_argument(
        "--data",
        default=None,
        help=f"path of soft_limb_data.csv (default: ${DATA_ENV}, else {DATA_RELPATH} next to the "
        "repository or the current directory; the GPL-3.0 data is not distributed with jaxrod)",
    )
    p.add_argument(
        "--frames",
        default=None,
        help="subset of the valid frames: N (the first N), a:b[:c] (a slice) or i,j,k (positions); default all",
    )
    p.add_argument(
        "--out",
        default=None,
        help="directory for real2sim_soft_limb.png, _frames.csv and _summary.json",
    )
    p.add_argument(
        "--hold-out",
        default="109",
        help="tag ids held out of the loss and scored as predictions, comma separated, or 'none' "
        "(default: %(default)s, the tip)",
    )
    p.add_argument(
        "--no-in-sample",
        action="store_true",
        help="skip the all-tags fit (whose tip error is an in-sample residual)",
    )
    p.add_argument(
        "--baseline",
        choices=("dynamic", "static", "both"),
        default=None,
        help="also run DisMech's finite-difference scheme (slow: ~7 min for all frames with 'dynamic'): "
        "its simulation F is DisMech's damped dynamic run (3 s, backward Euler) from the straight rod, "
        "the same warm-started static solve as our fit, or both (default: not run)",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=49,
        help="DER nodes, odd (DisMech: 2 x 25 - 1 = 49)",
    )
    p.add_argument(
        "--spacing",
        choices=("measured", "uniform"),
        default="measured",
        help="tag arc lengths",
    )
    p.add_argument(
        "--alignment",
        choices=("tip-free", "all-tags"),
        default="tip-free",
        help="what sets the pixel scale and the tag arc lengths: 'tip-free' (default; tags 101-108 "
        "and the nominal geometry, nothing from the tip tag 109, so its held-out error is a "
        "prediction) or 'all-tags' (the original definition: tag 109 sets them, so the 'held-out' "
        "tip is out of the loss only)",
    )
    p.add_argument(
        "--tip-arclength",
        choices=("rod-end", "last-interval"),
        default="rod-end",
        help="tip-free alignment: tag 109 at the rod end (default; known geometry) or one measured "
        "107->108 interval beyond tag 108",
    )
    p.add_argument(
        "--base-angle",
        default=None,
        help="base direction [deg] from image +x towards image up, or 'chord' (mean first tag chord); "
        "default: fitted once",
    )
    p.add_argument(
        "--camera-roll",
        action="store_true",
        help="also fit a global camera roll (gravity vs image down)",
    )
    p.add_argument(
        "--base-frames",
        type=int,
        default=12,
        help="frames used to fit the base angle once",
    )
    p.add_argument(
        "--baseline-max-iter",
        type=int,
        default=500,
        help="cap of baseline iterations per frame",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


STIFF_FLOP_DESCRIPTION = (
    "STIFF-FLOP (TMTDyn E1) on the measured recordings: fit E and the viscosity of a PCS model "
    "driven by the measured pressures on NoLoad 0-29 s, report held-out tip errors (NoLoad 29-54 s, "
    "Load1, Load2) beside the constant-shape baseline and TMTDyn's published 3-12.5 mm (not comparable: TMTDyn calibrated by hand on the experiments it reports, whole recordings)"
)


def add_stiff_flop_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the STIFF-FLOP calibration options (``jaxrod.cases.stiff_flop_calibration``)."""
    p.add_argument("--out", default=None, help="directory for stiff_flop_*.png and stiff_flop_summary.json")
    p.add_argument("--segments", type=int, default=3, help="PCS segments (default %(default)s)")
    p.add_argument("--max-iters", type=int, default=25, help="L-BFGS iterations (default %(default)s)")
    p.add_argument("--fit-gain", action="store_true", help="also fit a gain on the pressures (nearly "
                   "degenerate with E: bending goes as P A / (E J))")
    p.add_argument("--fit-shear", action="store_true", help="also fit G/E (weakly identified by these data)")
    p.add_argument("--smoothing", choices=("centred", "trailing"), default="centred",
                   help="input smoothing: TMTDyn's centred 9-sample mean (default; a 0.2 s preview of every "
                        "step) or a causal trailing mean of the last 9 samples")
    p.add_argument("--whole-recordings", action="store_true",
                   help="also score the whole Load1 (0-55.4 s) and Load2 (0-39.7 s) recordings")
    p.add_argument("--no-fit", action="store_true", help="evaluate the stored fitted values (FITTED) only")
    p.add_argument("--stretch", choices=("off", "tmtdyn", "neo-hookean"), default="off",
                   help="model option: stretch update of the stiffness and chamber arms (TMTDyn's rule or "
                        "an incompressible neo-Hookean one; default off)")
    p.add_argument("--fit-chamber-growth", action="store_true",
                   help="model option: chamber cap area a_p (1 + beta P), beta fitted")
    p.add_argument("--fit-chamber-gains", action="store_true",
                   help="model option: one pressure gain per chamber pair (chambers made or reinforced "
                        "unequally): two ratios fitted, their geometric mean held at 1 (E carries a common gain)")
    p.add_argument("--damping-power", type=float, default=None,
                   help="model option: power-law damping exponent nu >= 1, fixed (TMTDyn: 2; default linear)")
    return p
