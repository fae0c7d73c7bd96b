"""Which XLA programs a piece of code compiles, how long each took, and why.

jaxrod runs are often dominated by XLA compilation. This module measures it, from JAX's own
monitoring events (:mod:`jax.monitoring`), so that a regression (a program compiled twice, a
value that became static) is visible in a log or assertable in a test::

    from jaxrod import compile_log

    with compile_log.record() as log:
        f(x)
    log.count      # programs XLA compiled inside the block (persistent-cache hits excluded)
    log.seconds    # their total XLA compile time [s]
    log.events     # [(program name, seconds), ...] in order, e.g. [("jit(f)", 0.012)]
    log.cache_hits # [(program name, seconds to load), ...] read from the persistent cache
    log.compilations  # all of them as Compilation(name, seconds, cached, cause, repeat)
    log.uncacheable   # module names JAX compiled but would not write to the persistent cache

What is counted, and how (jax 0.10):

- :data:`BACKEND_COMPILE_EVENT` (``/jax/core/compile/backend_compile_duration``): JAX reports
  the duration of each hand-over of a lowered program to XLA, with the program name as the
  ``fun_name`` keyword (``jit(<function name>)``). Programs found in JAX's in-memory caches are
  not handed over and not reported: a second call with the same shapes records nothing.
- :data:`CACHE_HIT_EVENT` (``/jax/compilation_cache/cache_hits``): reported *inside* that
  bracket when the executable came from the persistent compilation cache (``JAXROD_CACHE_DIR``).
  Such an entry is a cache hit, not a compilation: it is listed in ``cache_hits``, not in
  ``events``/``count``/``seconds``.
- Causes: with ``explain=True`` (the default of :func:`record`) JAX's ``jax_explain_cache_misses``
  is turned on while recording, and the "TRACING CACHE MISS" explanations JAX logs (logger
  :data:`EXPLAIN_LOGGER`) are captured instead of printed, and attached to the compilation that
  follows as a one-line ``cause`` (``"first call of f"``, or what differs from the closest
  earlier call: ``"f: different input types: * at x, now f64[4] and before f64[3]"``). A cause
  is attached only when JAX's explanation names the compiled function: JAX explains only
  functions defined outside JAX itself, and not those jitted through another wrapper (then the
  explanations it logs are for functions traced inside the program), so some compilations carry
  none; ``repeat`` (> 0: a program of that name was compiled before) still flags a recompilation.
- Not cacheable (also with ``explain=True``): JAX does not write a program holding a host callback
  to the persistent cache, and says so on its compiler logger; the module name (``jit_f``) is
  listed in ``uncacheable``. In jaxrod that is ``simulate``/``solve_static`` under ``jit`` with
  ``throw=True``: see :mod:`jaxrod.config` (``throw=False`` or ``JAXROD_TRACED_ERRORS=nan``).

Turning the log on for a whole run: the environment variable ``JAXROD_LOG_COMPILES=1`` (read when
``jaxrod`` is imported, see :mod:`jaxrod.config`) or ``jaxrod simulate ... --log-compiles`` print
one line per compilation on stderr and a summary line at exit (:func:`log_to_stderr`).

This module imports only JAX and the standard library, so that benchmark scripts can load it by
file path into a process running another checkout of jaxrod.
"""

from __future__ import annotations

import atexit
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax

__all__ = [
    "BACKEND_COMPILE_EVENT",
    "CACHE_HIT_EVENT",
    "EXPLAIN_LOGGER",
    "Compilation",
    "CompileLog",
    "log_to_stderr",
    "record",
]

#: JAX's duration event for one XLA compilation (keyword ``fun_name``: the program name)
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: JAX's event for a program loaded from the persistent compilation cache
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
#: the logger on which JAX writes its "TRACING CACHE MISS" explanations
EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
#: the logger on which JAX writes persistent-cache misses when explanations are on
_COMPILER_LOGGER = "jax._src.compiler"


@dataclass(frozen=True)
class Compilation:
    """One program handed to XLA: ``name`` (e.g. ``"jit(step)"``), ``seconds`` (wall time of the
    XLA compile or of the cache read), ``cached`` (loaded from the persistent cache rather than
    compiled) and ``cause`` (JAX's explanation of the tracing-cache miss, one line, or ``None``)."""

    name: str
    seconds: float
    cached: bool = False
    cause: str | None = None
    #: how many programs of the same name were handed to XLA before this one while a
    #: :func:`record` block was open: > 0 means a recompilation (new shapes or static values, a
    #: cleared cache) or another function of the same name
    repeat: int = 0


class CompileLog:
    """The compilations seen while a :func:`record` block was open (see the module docstring).
    ``on_compile``, if given, is called with each :class:`Compilation` as it happens."""

    def __init__(self, on_compile: Callable[[Compilation], None] | None = None,
                 on_uncacheable: Callable[[str], None] | None = None):
        self.compilations: list[Compilation] = []
        #: module names (e.g. ``"jit_loss"``) that JAX compiled but did not write to the
        #: persistent cache because they hold a host callback
        self.uncacheable: list[str] = []
        self.on_compile = on_compile
        self.on_uncacheable = on_uncacheable
        self._lock = threading.Lock()

    def _add_uncacheable(self, module: str) -> None:
        with self._lock:
            self.uncacheable.append(module)
        if self.on_uncacheable is not None:
            self.on_uncacheable(module)

    def _add(self, c: Compilation) -> None:
        with self._lock:
            self.compilations.append(c)
        if self.on_compile is not None:
            self.on_compile(c)

    @property
    def events(self) -> list[tuple[str, float]]:
        """``(program name, XLA compile seconds)`` per real compilation, in order."""
        return [(c.name, c.seconds) for c in self.compilations if not c.cached]

    @property
    def count(self) -> int:
        """Number of programs XLA compiled (persistent-cache hits not counted)."""
        return len(self.events)

    @property
    def seconds(self) -> float:
        """Total XLA compile time of those programs [s]."""
        return sum(s for _, s in self.events)

    @property
    def cache_hits(self) -> list[tuple[str, float]]:
        """``(program name, seconds)`` per program loaded from the persistent cache."""
        return [(c.name, c.seconds) for c in self.compilations if c.cached]

    def summary(self) -> str:
        """One line: ``"compile log: N programs, X s XLA compile time[, K persistent-cache hits]"``."""
        s = f"compile log: {self.count} program{'s' if self.count != 1 else ''}, {self.seconds:.2f} s XLA compile time"
        if self.cache_hits:
            s += f", {len(self.cache_hits)} loaded from the persistent cache"
        return s


# --- the process-wide listeners, installed once ---------------------------------------------

_lock = threading.Lock()
_active: list[CompileLog] = []
_explaining = 0  # open record(explain=True) blocks
_explain_was_on = False
_installed = False
_seen: dict[str, int] = {}  # program name -> times handed to XLA in this process
_local = threading.local()  # per thread: .hit (a cache hit inside the open bracket), .causes


def _on_event(event: str, **kwargs) -> None:
    if event == CACHE_HIT_EVENT:
        _local.hit = True


def _on_duration(event: str, duration: float, **kwargs) -> None:
    if event != BACKEND_COMPILE_EVENT:
        return
    cached = getattr(_local, "hit", False)
    _local.hit = False
    causes = getattr(_local, "causes", None) or []
    _local.causes = []
    with _lock:
        targets = list(_active)
    if not targets:
        return
    name = str(kwargs.get("fun_name", "?"))
    with _lock:
        repeat = _seen.get(name, 0)
        _seen[name] = repeat + 1
    c = Compilation(name=name, seconds=float(duration), cached=cached, cause=_pick_cause(name, causes),
                    repeat=repeat)
    for log in targets:
        log._add(c)


class _ExplainCapture(logging.Filter):
    """On JAX's explanation loggers while a record(explain=True) block is open: keep the
    tracing-cache-miss explanations for the next compilation and drop them (and the persistent
    cache-miss lines that ``jax_explain_cache_misses`` also turns on) from the normal log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _explaining <= 0:
            return True
        msg = record.getMessage()
        if msg.startswith("TRACING CACHE MISS"):
            causes = getattr(_local, "causes", None)
            if causes is None:
                causes = _local.causes = []
            causes.append(msg)
            del causes[:-50]  # traces that never compile (inner functions) must not pile up
            return False
        callback = _HOST_CALLBACK.match(msg)
        if callback:
            with _lock:
                targets = list(_active)
            for log in targets:
                log._add_uncacheable(callback.group(1))
            return False
        if msg.startswith(("PERSISTENT COMPILATION CACHE MISS", "Not writing persistent cache entry",
                           "Not writing cache entry", "Writing ")) and record.levelno == logging.WARNING:
            return False
        return True


_capture = _ExplainCapture()
# jax/_src/compiler.py's _cache_write (jax 0.10)
_HOST_CALLBACK = re.compile(r"Not writing persistent cache entry for '([^']+)' because it uses host callbacks")


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    jax.monitoring.register_event_listener(_on_event)
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    logging.getLogger(EXPLAIN_LOGGER).addFilter(_capture)
    logging.getLogger(_COMPILER_LOGGER).addFilter(_capture)


_FOR = re.compile(r"^\s+for (\S+)", re.M)
_NEVER = re.compile(r"never seen function:\s+(\S+)")


def _explained_name(msg: str) -> str | None:
    m = _NEVER.search(msg) or _FOR.search(msg)
    return m.group(1) if m else None


def _one_line(msg: str) -> str:
    """A TRACING CACHE MISS explanation in one line."""
    fname = _explained_name(msg) or "?"
    if "never seen function" in msg:
        return f"first call of {fname}" + (" (re-defined function? same line as another)" if "re-defined" in msg else "")
    lines = msg.splitlines()
    try:
        i = next(k for k, line in enumerate(lines) if "closest previous key" in line)
        detail = " ".join(" ".join(lines[i + 1:]).split())
    except StopIteration:
        detail = " ".join(" ".join(lines[1:]).split())
    return f"{fname}: {detail}" if detail else fname


def _pick_cause(program: str, causes: list[str]) -> str | None:
    """The explanation that belongs to ``program`` among those logged since the last compile: the
    last one naming the same function, else ``None``."""
    if not causes:
        return None
    m = re.fullmatch(r"(?:jit|pmap)\((.*)\)|(?:jit|pmap)_(.*)", program)
    base = (m.group(1) or m.group(2)) if m else program
    for msg in reversed(causes):
        if _explained_name(msg) == base:
            return _one_line(msg)
    # no explanation names this program (e.g. a function wrapped by another library's jit): the
    # explanations logged meanwhile belong to functions traced inside it, not to its cache miss
    return None


class record:
    """Context manager recording the XLA compilations made inside it (any thread) into a
    :class:`CompileLog`, which ``with`` returns. Blocks nest: an inner and an outer block both see
    the inner block's compilations.

    Args:
        explain: capture JAX's cache-miss explanations as each compilation's ``cause`` (turns on
            ``jax_explain_cache_misses`` while the block is open; restored afterwards).
        on_compile: called with each :class:`Compilation` as it happens (e.g. to print it).
        on_uncacheable: called with the module name of each program JAX compiled but did not write
            to the persistent cache because it holds a host callback (needs ``explain=True``).
    """

    def __init__(self, explain: bool = True, on_compile: Callable[[Compilation], None] | None = None,
                 on_uncacheable: Callable[[str], None] | None = None):
        self.explain = explain
        self.log = CompileLog(on_compile, on_uncacheable)

    def __enter__(self) -> CompileLog:
        global _explaining, _explain_was_on
        _install()
        with _lock:
            _active.append(self.log)
            if self.explain:
                if _explaining == 0:
                    _explain_was_on = bool(jax.config.jax_explain_cache_misses)
                    jax.config.update("jax_explain_cache_misses", True)
                _explaining += 1
        return self.log

    def __exit__(self, *exc) -> None:
        global _explaining
        with _lock:
            if self.log in _active:
                _active.remove(self.log)
            if self.explain:
                _explaining -= 1
                if _explaining == 0 and not _explain_was_on:
                    jax.config.update("jax_explain_cache_misses", False)


def format_compilation(c: Compilation) -> str:
    """The line :func:`log_to_stderr` prints for one compilation."""
    what = "loaded from cache" if c.cached else "compiled"
    line = f"compile: {c.name} {what} in {c.seconds:.2f} s"
    notes = [c.cause] if c.cause else []
    if c.repeat:
        notes.append(f"#{c.repeat + 1} of this name")
    return line + (f" ({'; '.join(notes)})" if notes else "")


def format_uncacheable(module: str) -> str:
    """The line :func:`log_to_stderr` prints for a program JAX would not cache."""
    return (f"compile: {module} not written to the persistent cache: it holds a host callback (in jaxrod: simulate "
            "or solve_static under jit with throw=True; pass throw=False or set JAXROD_TRACED_ERRORS=nan to cache it)")


_stderr_log: CompileLog | None = None


def log_to_stderr(stream=None) -> CompileLog:
    """Print one line per compilation from now on (``compile: NAME compiled in X s (cause)``) and
    a summary line when the process exits; returns the process-wide :class:`CompileLog`. Calling
    it again returns the same log. ``stream`` defaults to the current ``sys.stderr``."""
    global _stderr_log
    if _stderr_log is not None:
        return _stderr_log

    def out(line: str) -> None:
        print(line, file=sys.stderr if stream is None else stream, flush=True)

    rec = record(explain=True, on_compile=lambda c: out(format_compilation(c)),
                 on_uncacheable=lambda m: out(format_uncacheable(m)))
    _stderr_log = rec.__enter__()
    t0 = time.monotonic()

    def at_exit() -> None:
        out(f"{_stderr_log.summary()} (process wall {time.monotonic() - t0:.1f} s since the log started)")

    atexit.register(at_exit)
    return _stderr_log
