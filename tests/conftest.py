"""Shared test configuration: float64, a compilation cache of the tests' own, and small shared
problems (module/session-scoped so each compiled program is built once).

The tests keep their compiled programs apart from the user's (``jaxrod.config``'s default
directory): ``JAXROD_CACHE_DIR`` is set, before jaxrod is imported, to ``$JAXROD_TEST_CACHE`` or
``~/.cache/jaxrod/jax-test-cache``. It is inherited by the subprocesses the tests start (CLI,
notebooks), so they share that cache. ``JAXROD_TEST_CACHE=off`` runs the suite without a cache
(cold-start timings)."""

import os
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA:CPU without its fusion emitters: programs compile 22-30 % faster (CPU time of the first call:
# DER a1 cantilever 101 nodes 21.4 -> 16.0 s, Till benchmark 15.1 -> 11.8 s) and run 5-8 % slower,
# with the same results (tips equal to the printed digits). The suite is dominated by compilation;
# the library's default (users' runs) is left alone. Inherited by the subprocesses the tests start.
# JAXROD_TEST_XLA_FLAGS="" runs the suite with XLA's defaults.
# And at LLVM optimisation level 0 (2026-11-27, measured on the DER network + contact files, cold:
# XLA compile 228 -> 163 s, their summed test time 333 -> 276 s; run-heavy files 5-15 % slower:
# gripper 71 -> 76 s, long-run energy 47 -> 54 s; results equal to round-off).
# And without XLA's while-loop invariant code motion (2026-11-28): the pass took a fifth of the
# compile of a DER static solve (41 nodes: 2.2 -> 1.7-1.9 s, process CPU); on 15 DER, scene and
# contact files (190 tests, cold, one core each) XLA 145 -> 131 s, their CPU 245 -> 234 s, the
# run-heavy files within noise (gripper 38.1 -> 37.4 s, DER snake 29.1 -> 31.1 s). It only moves
# computations out of loops: the arithmetic, and so the results, are the same.
_FLAG = os.environ.get("JAXROD_TEST_XLA_FLAGS",
                       "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0 "
                       "--xla_disable_hlo_passes=while-loop-invariant-code-motion")
if _FLAG and _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
# Every program goes to the tests' persistent cache, however small: each test module ends with
# jax.clear_caches() (below), so without this the next module recompiles the same tiny programs
# (8411 programs under 0.3 s, 193 s of XLA time, in the cold suite of 2026-11-27).
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ["JAXROD_CACHE_DIR"] = os.environ.get(
    "JAXROD_TEST_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "jaxrod", "jax-test-cache")
)

import jax  # noqa: E402
import pytest  # noqa: E402

import jaxrod  # noqa: E402,F401  (turns on float64 and the cache)

# Python's cyclic garbage collector, tuned for a process that traces thousands of programs: the
# objects of the imports are frozen (never scanned again) and a young collection runs every 10^6
# net allocations instead of 700, so full collections of the ever larger heap of a worker stay
# rare; each test module still ends with gc.collect() (below). Measured (2026-11-28, 15 DER,
# scene and CLI-free files, 190 tests, one core each, cold): 270-276 s CPU -> 250-253 s, tracing
# 32 -> 24 s, peak RSS 1.5-1.8 -> 1.5-1.6 GB; results unchanged (nothing physical depends on it).
# JAXROD_TEST_GC="" keeps Python's defaults; otherwise it is the three thresholds.
GC_THRESHOLDS = os.environ.get("JAXROD_TEST_GC", "1000000,100,1000")
if GC_THRESHOLDS:
    import gc as _gc

    _gc.freeze()
    _gc.set_threshold(*(int(x) for x in GC_THRESHOLDS.split(",")))


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


#: Test files that compiled longest in the last cold CI run (2 cores, empty cache), longest first.
#: ``-n 2 --dist loadfile`` hands files to the workers in collection order (with
#: ``loadscopereorder`` off, see :func:`pytest_configure`), so they are collected first: a long
#: file handed out last would leave the other worker idle while it runs (longest processing time
#: first). The other files follow in their usual (alphabetical) order.
LONGEST_FIRST = (  # the suite of 2026-11-27 (issue 21, opt level 0, empty cache): summed test CPU
    "test_tendons.py",  # 160 s
    "test_system_hybrid.py",  # ~160 s
    "test_pcs_dynamics.py",  # 141 s (52 s after the PCS rewrite, 2026-11-27e)
    "test_cosserat.py",  # 124 s
    "test_notebooks_der_quickstart.py",  # 108 s
    "test_system_hybrid_sparse.py",  # 106 s
    "test_der_contact.py",
    "test_modelfile.py",
    "test_der_network.py",
    "test_system_sparse.py",
    "test_der_gradients.py",
    "test_pressure_cosserat.py",
    "test_der_gripper.py",
    "test_cosserat_numerics.py",
    "test_notebooks_continuum_robots.py",
    "test_notebooks_pcs_newmark.py",
    "test_system_multibody.py",
    "test_system_joints.py",
    "test_notebooks.py",
    "test_der_driven.py",
    "test_snake.py",  # with test_contact.py about 100 s cold (added 2026-11-27, not yet profiled)
    "test_contact.py",
    "test_calibrate.py",
    "test_notebooks_hybrid_systems.py",
)


def pytest_collection_modifyitems(config, items):
    # the whole suite collected (no file, -k or -m selection): tests/test_readme.py checks README's count
    root = config.rootpath
    whole = all(Path(a).resolve() in (root, root / "tests") for a in config.args) if config.args else True
    if whole and not config.option.keyword and not config.option.markexpr:
        config._jaxrod_full_suite = len(items)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay contiguous


def pytest_configure(config):
    # pytest-xdist >= 3.6 sorts the files by their number of tests before handing them out (its
    # ``--loadscope-reorder``, on by default): here that puts files of many cheap tests first and
    # the long compiles wherever their test count falls. Keep the order of LONGEST_FIRST instead.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# --- an opt-in profile of where the suite's time goes ----------------------------------------
# JAXROD_TEST_PROFILE=DIR writes DIR/<worker>.jsonl: one line per test with its wall and CPU time
# (this process and its finished subprocesses) and every compilation event JAX reported during it
# (tracing, lowering, XLA compile; program name; persistent-cache hit or not). Used to decide which
# programs to share between tests; ``python3 benchmarks/suite_profile.py DIR`` summarises it.
_PROFILE_DIR = os.environ.get("JAXROD_TEST_PROFILE")
if _PROFILE_DIR:
    import json
    import resource
    import time

    _events: list = []
    _hit = [False]

    def _prof_event(event, **kw):
        if event == "/jax/compilation_cache/cache_hits":
            _hit[0] = True

    def _prof_duration(event, duration, **kw):
        if not event.startswith("/jax/core/compile/"):
            return
        cached = False
        if event.endswith("backend_compile_duration"):
            cached, _hit[0] = _hit[0], False
        _events.append((event.rsplit("/", 1)[-1], str(kw.get("fun_name", "?")), round(float(duration), 4), cached))

    jax.monitoring.register_event_listener(_prof_event)
    jax.monitoring.register_event_duration_secs_listener(_prof_duration)

    def _cpu():
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        os.makedirs(_PROFILE_DIR, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _events.clear()
        t0, (c0, k0) = time.monotonic(), _cpu()
        yield
        t1, (c1, k1) = time.monotonic(), _cpu()
        rec = {"test": item.nodeid, "wall": round(t1 - t0, 3), "cpu": round(c1 - c0, 3),
               "child_cpu": round(k1 - k0, 3), "load": os.getloadavg()[0], "events": list(_events)}
        with open(os.path.join(_PROFILE_DIR, f"{worker}.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")


@pytest.fixture(scope="session")
def small_hybrid():
    """Two 4-node DER rods clamped (first node) to a hub that carries an arm on a revolute joint:
    the hybrid system of the drawing and export tests (built once; nothing simulated)."""
    from jaxrod.system import HybridSystem, Revolute, RigidBody, RodClamp

    rods = [jaxrod.DERModel(jaxrod.DERRod.cantilever(4, 0.3, clamped_ends="both", start=(0.05, y, 0.0),
                                                     youngs_modulus=2e7, density=1000.0, radius=4e-3))
            for y in (0.0, 0.1)]
    bodies = [RigidBody("hub", 0.2, [1e-4] * 3, position=(0.0, 0.05, 0.0)),
              RigidBody("arm", 0.1, [1e-4] * 3, position=(0.0, 0.05, -0.15))]
    joints = [Revolute("hub", "arm", point=(0.0, 0.05, -0.05), axis=(0.0, 1.0, 0.0))]
    return HybridSystem(rods, bodies, joints, [RodClamp(0, 0, "hub"), RodClamp(1, 0, "hub")])
