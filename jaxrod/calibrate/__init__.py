"""Calibration: fit model parameters to measured data with exact gradients.

* :mod:`~jaxrod.calibrate.params`: named parameters with transforms (log, bounds, fixed) packed into
  an unconstrained vector, written into models with ``eqx.tree_at``;
* :mod:`~jaxrod.calibrate.data`: marker tracks from CSV/NPZ files (validated; never unpickled);
* :mod:`~jaxrod.calibrate.losses`: residuals and (robust) losses of a Trajectory against markers;
* :mod:`~jaxrod.calibrate.fit`: :class:`Objective` (compiled once), :func:`fit` (optax L-BFGS or
  Adam, early stopping, progress lines) and :class:`FitReport`;
* :mod:`~jaxrod.calibrate.identify`: Gauss-Newton identifiability (standard errors, correlations,
  flags for parameters the data cannot tell apart);
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
from .fit import FitReport, Objective, fit
from .identify import (
    IdentifiabilityReport,
    IdentifiabilityWarning,
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
    "FitReport",
    "IdentifiabilityReport",
    "IdentifiabilityWarning",
    "Identity",
    "Log",
    "MarkerTracks",
    "Objective",
    "ParamSet",
    "Parameter",
    "Transform",
    "block_index",
    "block_residuals",
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
    "predict_markers",
    "robust_loss",
    "save_markers_csv",
    "tip_loss",
    "tip_residuals",
]
