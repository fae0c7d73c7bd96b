"""jaxrod.config: the persistent compilation cache that ``import jaxrod`` turns on, and the bracket
around XLA compilations that hides the slow-compile banner.

The cache tests run fresh Python processes (the cache is configured at import and JAX opens it
once per process), each importing jaxrod and compiling one tiny function."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

import jaxrod
from jaxrod import config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the child prints what it saw as one JSON line: the active cache dir, JAX's write threshold, and
# how many compilations were answered from the disk cache
_CHILD = textwrap.dedent(
    """
    import json, jax
    hits = []
    jax.monitoring.register_event_listener(
        lambda event, **kw: hits.append(1) if event == "/jax/compilation_cache/cache_hits" else None)
    import jaxrod
    y = jax.jit(lambda x: jax.numpy.sin(x) * 3.0 + x)(jax.numpy.arange(4.0))
    y.block_until_ready()
    print(json.dumps({"dir": jaxrod.config.cache_dir(), "hits": len(hits),
                      "threshold": jax.config.jax_persistent_cache_min_compile_time_secs}))
    """
)


def _run_child(tmp_path, **env_overrides):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_ENABLE_COMPILATION"))}
    env.pop("JAXROD_CACHE_DIR", None)
    env.pop("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", None)
    env.update(
        PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""),
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
        JAX_PLATFORMS="cpu",
    )
    env.update(env_overrides)
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _entries(path):
    return [f for f in os.listdir(path) if f.endswith("-cache")] if os.path.isdir(path) else []


def test_cache_created_then_hit_by_a_second_process(tmp_path):
    target = tmp_path / "nested" / "cache"
    # threshold 0 through JAX's own variable: the tiny program compiles faster than any threshold
    env = dict(JAXROD_CACHE_DIR=str(target), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    first, _ = _run_child(tmp_path, **env)
    assert first["dir"] == str(target)
    assert first["hits"] == 0
    written = _entries(target)
    assert written, "the first process wrote no cache entry"
    second, _ = _run_child(tmp_path, **env)
    assert second["hits"] >= 1
    assert sorted(_entries(target)) == sorted(written), "the second process compiled something again"


def test_default_location_and_threshold(tmp_path):
    if sys.platform in ("win32", "darwin"):
        pytest.skip("the XDG location is the Linux/Unix default")
    out, _ = _run_child(tmp_path)
    assert out["dir"] == str(tmp_path / "xdg" / "jaxrod" / "jax-cache")
    assert out["threshold"] == config.MIN_COMPILE_TIME_SECS < 1.0  # below JAX's own 1 s
    assert os.path.isdir(out["dir"])


def test_off_values():
    assert all(config._is_off(v) for v in ("off", "OFF", "0", "none", "None", "false", "no", "", " "))
    assert not any(config._is_off(v) for v in ("/tmp/x", "cache", "1", "offline"))


@pytest.mark.parametrize("value", ["off", ""])
def test_off_disables_and_creates_nothing(tmp_path, value):
    out, _ = _run_child(tmp_path, JAXROD_CACHE_DIR=value, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    assert out["dir"] is None
    assert out["hits"] == 0
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_unusable_dir_warns_once_and_import_works(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bad = str(blocker / "cache")
    out, err = _run_child(tmp_path, JAXROD_CACHE_DIR=bad)
    assert out["dir"] is None  # no cache, and the jitted function still ran
    assert err.count("cannot be used as the compilation cache") == 1
    assert f"JAXROD_CACHE_DIR={bad!r}" in err and "'off'" in err


def test_user_jax_cache_setting_wins(tmp_path):
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    out, _ = _run_child(tmp_path, JAX_COMPILATION_CACHE_DIR=str(theirs), JAXROD_CACHE_DIR=str(ours))
    assert out["dir"] == str(theirs)
    assert out["threshold"] == 1.0  # JAX's default left alone too
    assert not ours.exists()


def test_set_cache_dir_api(tmp_path):
    before = config.cache_dir()
    try:
        assert config.set_cache_dir(tmp_path / "api") == str(tmp_path / "api")
        assert config.cache_dir() == str(tmp_path / "api") and (tmp_path / "api").is_dir()
        assert config.set_cache_dir(None) is None and config.cache_dir() is None
        blocker = tmp_path / "f"
        blocker.write_text("")
        with pytest.raises(ValueError, match=r"path=.*f/x.*writable directory, or None"):
            config.set_cache_dir(blocker / "x")
        with pytest.raises(TypeError, match="path must be a directory path"):
            config.set_cache_dir(3)
    finally:
        config.set_cache_dir(before)
    assert config.cache_dir() == before


def test_compile_bracket_opens_and_closes(monkeypatch):
    # the banner is hidden between JAX's start and end events of a backend compilation: both must
    # still arrive under the name jaxrod listens to, and the level must be restored afterwards
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", config._JAX_DEFAULT_LEVEL)
    levels = []
    monkeypatch.setattr(config, "_set_cpp_min_log_level", levels.append)
    names = []

    def listener(event, value, **kw):
        if event == config._COMPILE_EVENT:
            names.append(kw.get("fun_name"))

    jax.monitoring.register_scalar_listener(listener)
    try:
        jax.jit(lambda x: x * 1.2345 - 6.789)(jnp.arange(3.0)).block_until_ready()
    finally:
        jax.monitoring.unregister_scalar_listener(listener)
    assert any("lambda" in str(n) for n in names), names
    assert levels[:2] == [config._FATAL, int(config._JAX_DEFAULT_LEVEL)]
    assert config._open_compiles == 0 and not config._lowered
    # with set_quiet_compiles(False) the level is never touched
    levels.clear()
    config.set_quiet_compiles(False)
    try:
        jax.jit(lambda x: x * 2.5 + 0.25)(jnp.arange(3.0)).block_until_ready()
    finally:
        config.set_quiet_compiles(True)
    assert levels == []
    assert jaxrod.config is config


_FLAGS_CHILD = textwrap.dedent(
    """
    import os, sys
    if sys.argv[1] == "started":
        import jax
        jax.numpy.ones(1).block_until_ready()  # the backend starts before jaxrod is imported
    import jaxrod
    print(repr(os.environ.get("XLA_FLAGS")))
    """
)


@pytest.mark.parametrize("env, when, expected", [
    ({}, "fresh", repr(config.DEFAULT_XLA_FLAGS)),
    ({"JAXROD_XLA_FLAGS": ""}, "fresh", "None"),
    ({"JAXROD_XLA_FLAGS": "--xla_backend_optimization_level=1"}, "fresh", "'--xla_backend_optimization_level=1'"),
    ({"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}, "fresh", "'--xla_cpu_use_fusion_emitters=true'"),
    ({"XLA_FLAGS": "--xla_dump_to=/tmp/x"}, "fresh", repr("--xla_dump_to=/tmp/x " + config.DEFAULT_XLA_FLAGS)),
    ({}, "started", "None"),
])
def test_xla_flags_default(env, when, expected):
    """jaxrod's XLA flags join XLA_FLAGS before the backend starts; the user's own flag of the same
    name wins, JAXROD_XLA_FLAGS replaces or (empty) removes them, a started backend is left alone."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAXROD_XLA_FLAGS")}
    child_env.update(PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu",
                     JAXROD_CACHE_DIR="off", **env)
    proc = subprocess.run([sys.executable, "-c", _FLAGS_CHILD, when], env=child_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == expected
