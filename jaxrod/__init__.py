"""jaxrod: differentiable simulation of slender elastic rods and soft robots in JAX.

Importing jaxrod turns on float64 (``jax_enable_x64``): rod problems mix stiffnesses that differ
by seven orders of magnitude, and float32 Newton solves stall long before they converge.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
