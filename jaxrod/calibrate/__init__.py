"""Calibration: fit model parameters to measured data with exact gradients.

* :mod:`~jaxrod.calibrate.params`: named parameters with transforms (log, bounds, fixed) packed into
  an unconstrained vector, written into models with ``eqx.tree_at``;
* :mod:`~jaxrod.calibrate.data`: marker tracks from CSV/NPZ files (validated; never unpickled);
* :mod:`~jaxrod.calibrate.losses`: residuals and (robust) losses of a Trajectory against markers;
* :mod:`~jaxrod.calibrate.fit`: :class:`Objective` (compiled once), :func:`fit` (optax L-BFGS or
  Adam, early stopping, progress lines) and :class:`FitReport`;
* :mod:`~jaxrod.calibrate.identify`: Gauss-Newton identifiability (standard errors, correlations,
  flags for parameters the data cannot tell apart);
* :mod:`~jaxrod.calibrate.evaluate`: train/test splits over frames, time windows, markers and
  trials, and :class:`EvaluationReport` (in-sample and held-out errors side by side);
* :mod:`~jaxrod.calibrate.plots`: fit vs data and loss-history figures.

Case studies built on these tools (weight release, soft-limb real2sim) live in :mod:`jaxrod.cases`.
"""

from .data import (
    MarkerTracks,
    load_markers,
    load_markers_csv,
    load_markers_npz,
    save_markers_csv,
)
from .evaluate import (
    ErrorStats,
    EvaluationReport,
    Split,
    evaluate,
    point_errors,
    split_frames,
    split_markers,
    split_trials,
    split_windows,
)
from .fit import FitReport, Objective, fit
from .identify import (
    IdentifiabilityReport,
    IdentifiabilityWarning,
    LackOfFitWarning,
    identify,
    identify_from_jacobian,
)
from .losses import (
    block_index,
    block_residuals,
    interp_arc_length,
    interp_time,
    marker_loss,
    marker_residuals,
    predict_markers,
    robust_loss,
    tip_loss,
    tip_residuals,
)
from .params import Bounded, Identity, Log, Parameter, ParamSet, Transform

__all__ = [
    "Bounded",
    "ErrorStats",
    "EvaluationReport",
    "FitReport",
    "IdentifiabilityReport",
    "IdentifiabilityWarning",
    "LackOfFitWarning",
    "Identity",
    "Log",
    "MarkerTracks",
    "Objective",
    "ParamSet",
    "Parameter",
    "Split",
    "Transform",
    "block_index",
    "block_residuals",
    "evaluate",
    "fit",
    "identify",
    "identify_from_jacobian",
    "interp_arc_length",
    "interp_time",
    "load_markers",
    "load_markers_csv",
    "load_markers_npz",
    "marker_loss",
    "marker_residuals",
    "point_errors",
    "predict_markers",
    "robust_loss",
    "save_markers_csv",
    "split_frames",
    "split_markers",
    "split_trials",
    "split_windows",
    "tip_loss",
    "tip_residuals",
]
