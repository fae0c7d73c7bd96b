"""Compiler options for the few test programs that *run* long rather than compile long.

The suite compiles with XLA's backend optimisation level 0 (``tests/conftest.py``): most test
programs run for milliseconds, and level 0 takes about a third off their compile time. A time loop
of hundreds of Newton steps is the exception: at level 0 it runs about 3x slower (the 3-finger
gripper of ``test_der_gripper.py``, 100 contact steps: 25 s CPU per run at level 0, 7.7 s at
level 1 or 2, its compile 4 -> 18 s). :func:`jit_long_run` compiles such a program at XLA's
default level, for that program only (``jax.jit``'s ``compiler_options``; every other program
keeps the suite's flags). Results are the same to round-off.
"""

import equinox as eqx

#: ``jax.jit(..., compiler_options=...)`` of a long-running test program: XLA:CPU's default
#: backend optimisation level (the suite's ``--xla_cpu_use_fusion_emitters=false`` stays).
LONG_RUN_OPTIONS = {"xla_backend_optimization_level": 2}


def jit_long_run(fun):
    """``eqx.filter_jit(fun)`` compiled with :data:`LONG_RUN_OPTIONS`."""
    return eqx.filter_jit(fun, compiler_options=LONG_RUN_OPTIONS)
