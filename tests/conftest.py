"""Shared test configuration: float64, a compilation cache of the tests' own, and small shared
problems (module/session-scoped so each compiled program is built once).

The tests keep their compiled programs apart from the user's (``jaxrod.config``'s default
directory): ``JAXROD_CACHE_DIR`` is set, before jaxrod is imported, to ``$JAXROD_TEST_CACHE`` or
``~/.cache/jaxrod/jax-test-cache``. It is inherited by the subprocesses the tests start (CLI,
notebooks), so they share that cache. ``JAXROD_TEST_CACHE=off`` runs the suite without a cache
(cold-start timings)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["JAXROD_CACHE_DIR"] = os.environ.get(
    "JAXROD_TEST_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "jaxrod", "jax-test-cache")
)

import jax  # noqa: E402
import pytest  # noqa: E402

import jaxrod  # noqa: E402,F401  (turns on float64 and the cache)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's in-memory compiled programs after each test module: an xdist worker runs many
    modules and otherwise holds every executable it ever built (8+ GB per worker seen on a full
    run; CI has 24 GiB for two). A later module needing the same program loads it from the
    persistent cache."""
    yield
    import gc

    jax.clear_caches()
    gc.collect()
