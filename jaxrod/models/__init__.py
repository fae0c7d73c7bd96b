"""Rod models. Each model package has the same shape and implements
:class:`jaxrod.integrate.AbstractImplicitModel`; no model imports another."""
