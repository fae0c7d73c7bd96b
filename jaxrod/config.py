"""Process-wide settings applied when ``jaxrod`` is imported: JAX's persistent compilation cache
and the XLA slow-compile banner.

**Compilation cache.** jaxrod programs (a 200-step implicit rod simulation, a gradient through it)
take tens of seconds to minutes to compile and milliseconds to seconds to run. JAX can keep
compiled programs on disk, so that a second process running the same problem shape (the same
scene, node count and scheme; a plain ``simulate`` call's number of steps, and values passed as
arrays, such as ``dt``, do not matter) loads them instead of compiling. jaxrod turns this cache on by default, for the library,
the ``jaxrod`` command and notebooks alike, in the user's cache directory:

- Linux and other Unix: ``$XDG_CACHE_HOME/jaxrod/jax-cache`` (``~/.cache/jaxrod/jax-cache``);
- macOS: ``~/Library/Caches/jaxrod/jax-cache``;
- Windows: ``%LOCALAPPDATA%\\jaxrod\\jax-cache``.

Entries are keyed by the program, the JAX/jaxlib version and the machine, so a stale entry is
never used; the directory only grows (delete it at any time to reclaim the space). To move or
disable it:

- environment variable ``JAXROD_CACHE_DIR``: a directory (created if missing), or ``off``
  (also ``0``, ``none``, ``false``, ``no`` or empty) to disable the cache;
- Python: :func:`set_cache_dir` (a path, or ``None`` to disable) and :func:`cache_dir` (the
  active directory, or ``None``).

jaxrod leaves JAX's cache alone when the user configured it already: ``JAX_COMPILATION_CACHE_DIR``
or ``JAX_ENABLE_COMPILATION_CACHE`` set in the environment, or ``jax_compilation_cache_dir`` set
(or ``jax_enable_compilation_cache`` turned off) through ``jax.config`` before ``import jaxrod``.
The cache is trusted code: do not point it at a directory that others can write. When the
directory cannot be created or written (a read-only home, a path through a file), jaxrod warns once
and runs without the cache; importing jaxrod never fails because of it.

jaxrod lowers JAX's threshold for writing an entry from 1 s of compile time to
:data:`MIN_COMPILE_TIME_SECS`, so that the small programs a run starts with (initial state,
observation) are cached along with the long time-stepping program;
``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` in the environment takes precedence.

**The "Very slow compile?" banner.** XLA starts an alarm when it generates code for a program
that, after two minutes, logs a red "Very slow compile?  If you want to file a bug, run with envvar
XLA_FLAGS=--xla_dump_to=/tmp/foo ..." banner from C++. A first run of a large rod program can take
that long on a small machine, which is expected (and cached afterwards), not a bug. The banner is
an ordinary C++ error log: there is no switch for it alone, only the process-wide minimum log level
of XLA's C++ logging. jaxrod raises that level to FATAL *only while XLA compiles a program* (between
JAX's "backend compile" start and end events) and restores it afterwards, so errors logged while
programs run are still printed; a failed compilation is raised as a Python exception either way.
Setting ``TF_CPP_MIN_LOG_LEVEL`` to another value than JAX's default ``1``, or ``jax_logging_level``,
turns this off (your level is left alone), as does :func:`set_quiet_compiles` ``(False)``.

**XLA flags for faster compilation on CPU.** Before JAX starts its CPU backend, jaxrod adds
:data:`DEFAULT_XLA_FLAGS` (``--xla_cpu_use_fusion_emitters=false``) to ``XLA_FLAGS``: XLA:CPU
then emits its fused loops the older way, which compiles jaxrod's programs about a third faster
and runs them up to ~15% slower. Measured (2026-11-27, first ``simulate`` in a fresh process with
the cache off, process CPU, 3 steps, then 200 steps compile excluded; shared 2-core machine at load
8-10, two runs each): cantilever-a1 first run 19.1-20.2 -> 11.6-12.4 s, 200 steps 1.02-1.12 ->
1.17-1.24 s; till-benchmark 17.9-19.1 -> 12.7 s, 0.58 -> 0.66 s; pcs-silicone 21.9 -> 14.5 s,
0.17 -> 0.18 s. On this hardware jaxrod's first runs are dominated by compilation (a calibration
compiles for longer than it runs), so this is the default; for long simulations set
``JAXROD_XLA_FLAGS`` to ``""`` (XLA's own defaults, the fastest code) or to flags of your own
(they replace jaxrod's). A flag already in ``XLA_FLAGS`` is left as it is, and nothing changes
when JAX's backend was started before ``import jaxrod`` (flags are read once, at that start).

**Compile log.** With the environment variable ``JAXROD_LOG_COMPILES`` set to ``1`` (also ``true``,
``yes``, ``on``), importing jaxrod starts :func:`jaxrod.compile_log.log_to_stderr`: one line on stderr
per XLA compilation (program name, seconds, JAX's explanation of the cache miss) and a summary line
at exit. ``jaxrod simulate ... --log-compiles`` does the same for one command.

**Failures inside compiled programs, and the cache.** ``simulate``/``solve_static`` called under
``jax.jit``, ``jax.vmap`` or ``jax.grad`` with ``throw=True`` (the default) report a failed Newton
solve by a host callback in the program, which raises :class:`~jaxrod.ConvergenceError` with the
step, time and residual. JAX never writes a program that holds a host callback to the persistent
cache, so such a program (a user's jitted loss around ``simulate``, its gradient) is compiled again
in every new process: the forward-mode loss of ``notebooks/der_quickstart.ipynb`` (21-node DER
cantilever, 26 steps) took 27-32 s of XLA time in each fresh process, its first six cells 38 s of
process CPU with the cache warm; with ``JAXROD_TRACED_ERRORS=nan`` the second process read it from
the cache and the same cells took 12.6 s of CPU (2026-11-28, 2-core machine, load 3-6). Two ways
out, both giving cacheable programs:

- ``throw=False`` in that call: the frames after a failed step come back NaN, and
  ``traj.stats.converged`` / ``traj.valid`` say where it failed;
- the environment variable ``JAXROD_TRACED_ERRORS=nan`` (or :func:`set_traced_errors` ``("nan")``)
  for every call: with ``throw=True`` a failed run's arrays (positions, ``q``, ``v``, frames; a
  static solve's state) come back all NaN, so no result of it can be mistaken for a good one, but
  without the message. Default ``raise`` (the callback). The mode is read when a program is
  traced: change it before the first call of a jitted function.

The compile log (below) flags each program that was not cached for this reason.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import warnings

import jax

__all__ = [
    "CACHE_ENV_VAR",
    "DEFAULT_XLA_FLAGS",
    "XLA_FLAGS_ENV_VAR",
    "LOG_COMPILES_ENV_VAR",
    "MIN_COMPILE_TIME_SECS",
    "TRACED_ERRORS_ENV_VAR",
    "apply_defaults",
    "cache_dir",
    "default_cache_dir",
    "quiet_compiles",
    "set_cache_dir",
    "set_quiet_compiles",
    "set_traced_errors",
    "traced_errors",
]

CACHE_ENV_VAR = "JAXROD_CACHE_DIR"
XLA_FLAGS_ENV_VAR = "JAXROD_XLA_FLAGS"
#: XLA flags jaxrod adds on import (module docstring): faster compilation, slightly slower runs
DEFAULT_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false"
LOG_COMPILES_ENV_VAR = "JAXROD_LOG_COMPILES"
TRACED_ERRORS_ENV_VAR = "JAXROD_TRACED_ERRORS"
_TRACED_ERROR_MODES = ("raise", "nan")
_traced_errors: str | None = None  # set_traced_errors(); None: the environment variable, else "raise"

#: Programs that took at least this long to compile are written to the cache [s]. Measured on the
#: default example (``jaxrod simulate cantilever-a1``, busy 2-core machine): one time-stepping
#: program (67-95 s) and 78 small ones (array set-up, analysis: 0.01-0.24 s, 3.8 s in all, 2.6 s
#: of it in the 28 that take >= 0.05 s). JAX's 1 s default would cache only the first; reading an
#: entry takes a few ms, so caching much below 0.05 s gains nothing.
MIN_COMPILE_TIME_SECS = 0.05

_OFF_VALUES = ("", "off", "0", "none", "false", "no")
_ALLOWED = "a writable directory path, or 'off' (also 0, none, false, no or empty) to disable the cache"

_warned = False


def default_cache_dir() -> str:
    """The platform's per-user cache directory for jaxrod's compiled programs (see the module
    docstring); not created here."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxrod", "jax-cache")


def cache_dir() -> str | None:
    """The directory JAX's persistent compilation cache currently uses, or ``None`` when the cache
    is off. Reports JAX's own setting, so it also shows a directory the user gave JAX directly."""
    if not jax.config.jax_enable_compilation_cache:
        return None
    return jax.config.jax_compilation_cache_dir or None


def _is_off(value: str) -> bool:
    return value.strip().lower() in _OFF_VALUES


def _prepare(path: str) -> str:
    """``path`` made absolute, created and checked writable; raises ``OSError`` otherwise."""
    path = os.path.abspath(os.path.expanduser(path))
    os.makedirs(path, exist_ok=True)
    # os.access() says yes to root on a read-only mount: write a probe file instead
    fd, probe = tempfile.mkstemp(prefix=".jaxrod-probe-", dir=path)
    os.close(fd)
    os.remove(probe)
    return path


def _use(path: str | None) -> None:
    # JAX opens its cache once, at the first compilation: reset it so that a change made after
    # something was compiled (a notebook calling set_cache_dir) takes effect for the next program
    from jax.experimental.compilation_cache import compilation_cache

    jax.config.update("jax_compilation_cache_dir", path)
    compilation_cache.reset_cache()


def set_cache_dir(path: str | os.PathLike | None) -> str | None:
    """Use ``path`` for JAX's persistent compilation cache from the next compilation on (created
    if missing), or turn the cache off with ``None``. Overrides ``JAXROD_CACHE_DIR`` and any earlier
    setting, JAX's own included. Programs already compiled in this process stay in memory as they
    are.

    Returns the absolute directory in use (or ``None``). Raises ``ValueError`` when ``path`` cannot
    be created or written, ``TypeError`` when it is not a path or ``None``.
    """
    if path is None:
        _use(None)
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"set_cache_dir: path must be a directory path (str or os.PathLike) or None, got {path!r}")
    try:
        resolved = _prepare(os.fspath(path))
    except OSError as e:
        raise ValueError(
            f"set_cache_dir: path={os.fspath(path)!r} cannot be used as the compilation cache ({e}); "
            f"pass a writable directory, or None to disable the cache"
        ) from None
    jax.config.update("jax_enable_compilation_cache", True)
    _use(resolved)
    return resolved


def _check_traced_errors(mode, source: str) -> str:
    value = mode.strip().lower() if isinstance(mode, str) else mode
    if value not in _TRACED_ERROR_MODES:
        raise ValueError(f"{source} = {mode!r}: allowed are 'raise' (a host callback raises ConvergenceError; the "
                         "program is not written to the compilation cache) or 'nan' (a failed run's arrays come "
                         "back NaN; the program can be cached)")
    return value


def traced_errors() -> str:
    """How ``simulate``/``solve_static`` with ``throw=True`` report a failure from inside a compiled
    program (under ``jit``/``vmap``/``grad``): ``"raise"`` (a host callback raises
    :class:`~jaxrod.ConvergenceError`) or ``"nan"`` (the failed run's arrays come back NaN; no host
    callback, so the program can be written to the persistent cache). See the module docstring.
    :func:`set_traced_errors`, else ``JAXROD_TRACED_ERRORS``, else ``"raise"``."""
    if _traced_errors is not None:
        return _traced_errors
    env = os.environ.get(TRACED_ERRORS_ENV_VAR)
    if env is None or not env.strip():
        return "raise"
    return _check_traced_errors(env, TRACED_ERRORS_ENV_VAR)


def set_traced_errors(mode: str | None) -> str:
    """Set :func:`traced_errors` to ``"raise"`` or ``"nan"`` for programs traced from now on (a
    jitted function already traced keeps its mode), or ``None`` to go back to
    ``JAXROD_TRACED_ERRORS``/the default. Returns the mode now in effect; ``ValueError`` naming the
    allowed values otherwise."""
    global _traced_errors
    _traced_errors = None if mode is None else _check_traced_errors(mode, "set_traced_errors: mode")
    return traced_errors()


def _user_configured_jax_cache() -> bool:
    return (
        "JAX_COMPILATION_CACHE_DIR" in os.environ
        or "JAX_ENABLE_COMPILATION_CACHE" in os.environ
        or jax.config.jax_compilation_cache_dir is not None
        or not jax.config.jax_enable_compilation_cache
    )


def _warn_once(message: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    # point at the user's `import jaxrod`, not at this module (warnings skips importlib's frames)
    level, frame, here = 2, sys._getframe(1), os.path.dirname(os.path.abspath(__file__))
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def _apply_cache_default() -> None:
    if _user_configured_jax_cache():
        return
    raw = os.environ.get(CACHE_ENV_VAR)
    if raw is not None and _is_off(raw):
        return
    target = default_cache_dir() if raw is None else raw
    try:
        path = _prepare(target)
    except OSError as e:
        where = f"{CACHE_ENV_VAR}={raw!r}" if raw is not None else f"the default cache directory {target!r}"
        _warn_once(
            f"jaxrod: {where} cannot be used as the compilation cache ({e}); running without it, so "
            f"every process compiles its programs again. Set {CACHE_ENV_VAR} to {_ALLOWED}."
        )
        return
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_TIME_SECS)
    _use(path)


# --- the slow-compile banner -----------------------------------------------------------------

# JAX records a scalar (the start time) under this name when it hands a program to XLA and the
# duration when XLA returns (error or not): the bracket of one backend compilation
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_FATAL = 3  # absl::LogSeverity::kFatal
# `import jax` sets TF_CPP_MIN_LOG_LEVEL=1 (WARNING) unless the user set it: that value is JAX's
# default, any other one is the user's choice (and absl's level, which is restored after a compile)
_JAX_DEFAULT_LEVEL = "1"

_quiet = True
_listening = False
_lock = threading.Lock()
_open_compiles = 0
_lowered = False


def _user_sets_cpp_log_level() -> bool:
    return (
        os.environ.get("TF_CPP_MIN_LOG_LEVEL", _JAX_DEFAULT_LEVEL) != _JAX_DEFAULT_LEVEL
        or getattr(jax.config, "jax_logging_level", None) not in (None, "NOTSET")
    )


def _absl_setter():
    # jaxlib's binding of absl::SetMinLogLevel (what jax_logging_level uses); None if absent
    try:
        from jax._src.lib import utils
    except ImportError:
        return None
    return getattr(utils, "absl_set_min_log_level", None)


def _set_cpp_min_log_level(level: int) -> None:
    _absl_setter()(level)


def _on_compile_start(event: str, value: float, **kwargs) -> None:
    global _open_compiles, _lowered
    if event != _COMPILE_EVENT:
        return
    with _lock:
        _open_compiles += 1
        if _open_compiles == 1 and _quiet and not _user_sets_cpp_log_level():
            _set_cpp_min_log_level(_FATAL)
            _lowered = True


def _on_compile_end(event: str, duration: float, **kwargs) -> None:
    global _open_compiles, _lowered
    if event != _COMPILE_EVENT:
        return
    with _lock:
        _open_compiles = max(0, _open_compiles - 1)
        if _open_compiles == 0 and _lowered:
            _lowered = False
            if not _user_sets_cpp_log_level():
                _set_cpp_min_log_level(int(_JAX_DEFAULT_LEVEL))


def set_quiet_compiles(enabled: bool) -> None:
    """Hide (``True``, the default) or show XLA's C++ log lines, its "Very slow compile?" banner
    among them, while a program compiles (see the module docstring)."""
    global _quiet
    if not isinstance(enabled, bool):
        raise TypeError(f"set_quiet_compiles: enabled must be True or False, got {enabled!r}")
    _quiet = enabled


def quiet_compiles() -> bool:
    """Whether XLA's slow-compile banner is being hidden during compiles (on by default; off with
    :func:`set_quiet_compiles` ``(False)``, a user's own C++ log level, or a JAX without the hooks)."""
    return _quiet and _listening and not _user_sets_cpp_log_level()


def _install_compile_listeners() -> None:
    global _listening
    # an older JAX without these hooks simply shows the banner
    if _listening or _absl_setter() is None or not hasattr(jax.monitoring, "register_scalar_listener"):
        return
    _listening = True
    jax.monitoring.register_scalar_listener(_on_compile_start)
    jax.monitoring.register_event_duration_secs_listener(_on_compile_end)


def apply_defaults() -> None:
    """Apply jaxrod's defaults (called by ``import jaxrod``): the persistent compilation cache
    from ``JAXROD_CACHE_DIR`` or the platform default, unless JAX's cache was configured by the
    user; the slow-compile banner hidden while programs compile; the compile log on stderr when
    ``JAXROD_LOG_COMPILES=1``. Never raises: a cache directory
    that cannot be used is reported by one ``RuntimeWarning``."""
    _apply_xla_flags()
    _apply_cache_default()
    _install_compile_listeners()
    _apply_log_compiles()


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge._backends)
    except Exception:  # a JAX without that private name: assume started, change nothing
        return True


def _apply_xla_flags() -> None:
    """Add ``JAXROD_XLA_FLAGS`` (default :data:`DEFAULT_XLA_FLAGS`) to ``XLA_FLAGS`` before the
    backend starts; flags the user already set (by name) win."""
    wanted = os.environ.get(XLA_FLAGS_ENV_VAR, DEFAULT_XLA_FLAGS).split()
    if not wanted or _backend_started():
        return
    current = os.environ.get("XLA_FLAGS", "")
    named = {f.split("=")[0] for f in current.split()}
    extra = [f for f in wanted if f.split("=")[0] not in named]
    if extra:
        os.environ["XLA_FLAGS"] = " ".join([current, *extra]).strip()


def _apply_log_compiles() -> None:
    if os.environ.get(LOG_COMPILES_ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on"):
        from . import compile_log

        compile_log.log_to_stderr()
