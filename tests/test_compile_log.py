"""jaxrod.compile_log: XLA compilations recorded from JAX's monitoring events, with their program
names and cache-miss causes; JAXROD_LOG_COMPILES=1 and ``--log-compiles`` print them. Tiny jitted
functions only (each compiles in ~0.05 s); three short subprocesses."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jaxrod.config
from jaxrod import compile_log


@pytest.fixture
def no_persistent_cache():
    """The tests' persistent cache off while a test runs (a tiny program written there by an
    earlier run would come back as a cache hit, not a compilation); restored afterwards."""
    before = jaxrod.config.cache_dir()
    jaxrod.config.set_cache_dir(None)
    yield
    jaxrod.config.set_cache_dir(before)


def _fresh_function():
    def scaled_sine(x):
        return jax.numpy.sin(x) * 2.0

    return jax.jit(scaled_sine)


def test_one_compile_recorded_then_none_then_new_shape_with_cause(no_persistent_cache):
    f = _fresh_function()
    x3, x4 = np.ones(3), np.ones(4)
    with compile_log.record() as log:
        f(x3).block_until_ready()
    assert [name for name, _ in log.events] == ["jit(scaled_sine)"]
    assert log.count == 1 and log.seconds == log.events[0][1] > 0
    assert log.cache_hits == []
    assert "first call of scaled_sine" in log.compilations[0].cause

    with compile_log.record() as again:  # same shapes: JAX's in-memory cache, no compilation
        f(x3).block_until_ready()
    assert again.count == 0 and again.events == [] and again.seconds == 0

    with compile_log.record() as outer:
        with compile_log.record() as inner:  # nested blocks both see it
            f(x4).block_until_ready()
    assert [n for n, _ in inner.events] == [n for n, _ in outer.events] == ["jit(scaled_sine)"]
    cause = inner.compilations[0].cause
    assert inner.compilations[0].repeat == log.compilations[0].repeat + 1
    assert "#" in compile_log.format_compilation(inner.compilations[0])
    assert "f64[4]" in cause and "f64[3]" in cause, cause
    assert "1 program, " in inner.summary()


def test_no_recording_outside_the_block(no_persistent_cache):
    f = _fresh_function()
    explain_before = jax.config.jax_explain_cache_misses
    with compile_log.record() as log:
        assert jax.config.jax_explain_cache_misses
    f(np.ones(5)).block_until_ready()
    assert log.count == 0
    assert jax.config.jax_explain_cache_misses == explain_before  # restored on exit


def _run(code, **env):
    full = dict(os.environ, JAX_PLATFORMS="cpu", **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, env=full)


def test_persistent_cache_hit_counted_apart(tmp_path):
    # a fresh process: clearing JAX's in-memory caches here would cost the other tests' programs
    proc = _run(f"""
        import jax, numpy as np, jaxrod.config
        from jaxrod import compile_log
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jaxrod.config.set_cache_dir({str(tmp_path)!r})
        f = jax.jit(lambda x: x * 3.0 + 1.0)
        with compile_log.record() as first:
            f(np.ones(3)).block_until_ready()
        jax.clear_caches()
        with compile_log.record() as second:
            f(np.ones(3)).block_until_ready()
        print(first.count, len(first.cache_hits), second.count, len(second.cache_hits))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "0", "0", "1"], proc.stdout


def test_env_var_prints_each_compilation_and_a_summary():
    proc = _run("""
        import jax, numpy as np, jaxrod
        def tripled(x): return x * 3.0
        jax.jit(tripled)(np.ones(3)).block_until_ready()
    """, JAXROD_LOG_COMPILES="1", JAXROD_CACHE_DIR="off")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(line.startswith("compile: jit(tripled) compiled in ") and "first call of tripled" in line
               for line in lines), proc.stderr
    assert lines[-1].startswith("compile log: ") and " s XLA compile time" in lines[-1], proc.stderr
    assert "TRACING CACHE MISS" not in proc.stderr  # JAX's multi-line explanations are folded in


def test_cli_flag_listed_and_accepted(capsys):
    from jaxrod.cli import main

    assert main(["simulate", "--help"]) == 0
    assert "--log-compiles" in capsys.readouterr().out
    assert main(["calibrate", "stiff-flop", "--help"]) == 0
    assert "--log-compiles" in capsys.readouterr().out
    # accepted before anything is built: an unknown scene still exits with the usual error, and the
    # log's summary line is printed at exit
    proc = _run("""
        import sys
        from jaxrod.cli import main
        sys.exit(main(["simulate", "no-such-scene", "--log-compiles"]))
    """, JAXROD_CACHE_DIR="off")
    assert proc.returncode == 2, proc.stderr
    assert "error: " in proc.stderr and "compile log: " in proc.stderr.splitlines()[-1], proc.stderr


def test_a_program_with_a_host_callback_is_listed_as_not_cacheable(tmp_path):
    """JAX does not write a program holding a host callback to the persistent cache (jaxrod's
    ``simulate(..., throw=True)`` under ``jit``); the log names it, and only it."""
    before = jaxrod.config.cache_dir()
    jaxrod.config.set_cache_dir(tmp_path)
    try:
        def with_callback(x):
            y = jax.pure_callback(lambda v: np.asarray(v) + 1.0, jax.ShapeDtypeStruct((3,), x.dtype), x)
            return y * 2.0

        def without(x):
            return x * 3.0

        with compile_log.record() as log:
            jax.jit(with_callback)(np.ones(3)).block_until_ready()
            jax.jit(without)(np.ones(3)).block_until_ready()
        assert log.uncacheable == ["jit_with_callback"]
        assert "not written to the persistent cache" in compile_log.format_uncacheable("jit_with_callback")
        # the other program went to the cache: a cleared in-memory cache loads it from disk
        jax.clear_caches()
        with compile_log.record() as again:
            jax.jit(without)(np.ones(3)).block_until_ready()
        assert again.count == 0 and [n for n, _ in again.cache_hits] == ["jit(without)"]
    finally:
        jaxrod.config.set_cache_dir(before)
