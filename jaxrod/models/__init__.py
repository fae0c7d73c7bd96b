"""Rod models. Each model package has the same shape and implements
:class:`jaxrod.models.base.AbstractImplicitModel`; no model imports another."""
