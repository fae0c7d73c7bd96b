"""Systems built from models: rigid bodies, joints, constraints, model files and modal analysis.

* :mod:`jaxrod.system.modal`: linear modal analysis of any implicit model
  (:func:`~jaxrod.system.modal.modal`, :class:`~jaxrod.system.modal.ModalResult`).
"""

from .modal import ModalResult, modal

__all__ = ["ModalResult", "modal"]
