"""Analysis of models and results.

* :mod:`jaxrod.analysis.oscillation`: host-side NumPy helpers on sampled signals (oscillation
  period, frequency, amplitude, decay, zero crossings, relative error).
* :mod:`jaxrod.analysis.modal`: linear modal analysis of any implicit model
  (:func:`jaxrod.analysis.modal`, also ``jaxrod.modal``, and :class:`ModalResult`).
"""

from .modal import ModalResult, modal
from .oscillation import (
    decay_time_constant,
    oscillation_amplitude,
    oscillation_frequency,
    oscillation_period,
    relative_error,
    zero_crossings,
)

__all__ = [
    "ModalResult",
    "decay_time_constant",
    "modal",
    "oscillation_amplitude",
    "oscillation_frequency",
    "oscillation_period",
    "relative_error",
    "zero_crossings",
]
