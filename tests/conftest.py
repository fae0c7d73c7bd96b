"""Shared test configuration: float64, the persistent compilation cache, and small shared
problems (module/session-scoped so each compiled program is built once)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

import jaxrod  # noqa: E402,F401  (turns on float64)

_cache = os.environ.get("JAXROD_TEST_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "jaxrod", "jax-test-cache"))
jax.config.update("jax_compilation_cache_dir", os.path.abspath(_cache))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
