"""Actuator definitions usable by every rod model, below the models (the shooting model integrates
tendon loads inside its ODE, so the definitions must sit below every model). No model imports here:
the loads each model derives from them are in its own ``actuation.py``
(:mod:`jaxrod.models.cosserat.actuation`, :mod:`jaxrod.models.der.actuation`,
:mod:`jaxrod.models.pcs.actuation`).

* :mod:`jaxrod.actuation.tendons`: :class:`Routing` (:class:`StraightRouting`,
  :class:`HelicalRouting`, :class:`SampledRouting`, :class:`FunctionRouting`) and :class:`Tendon`;
* :mod:`jaxrod.actuation.chambers`: :class:`Chamber` (pressure, volume or moles control).
"""

from .chambers import Chamber
from .tendons import FunctionRouting, HelicalRouting, Routing, SampledRouting, StraightRouting, Tendon

__all__ = [
    "Chamber",
    "FunctionRouting",
    "HelicalRouting",
    "Routing",
    "SampledRouting",
    "StraightRouting",
    "Tendon",
]
