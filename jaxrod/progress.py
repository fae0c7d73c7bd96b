"""Progress messages for the long phases of a run: compiling, static solves, time loops, fits.

A cold run spends most of its first minutes compiling XLA programs, during which nothing else
would be printed. This module keeps the progress stream (stderr unless a caller passes another)
talking, so that a user never waits more than about :data:`HEARTBEAT_S` seconds without a line:

* :func:`activity`: a context manager for a phase that may be slow. Its background thread prints
  ``"  ... still <what>: 20 s"`` whenever the progress stream has been quiet for ``interval``
  seconds (lines printed by :func:`say` count as output). Only the innermost active phase speaks.
* :func:`compile_ahead` / :func:`announced`: compile a jitted function ahead of time for the
  given arguments (``jitted.lower(*args).compile()``, which fills JAX's in-memory cache, so the
  following ordinary call runs at once and the compile time is measured apart from the run).
  ``"compiling <what> (or loading it from the compilation cache when this shape ran before)"``
  is printed as soon as the
  compilation has taken :data:`ANNOUNCE_S` seconds (a program already compiled in this process
  takes about a millisecond and prints nothing), the heartbeat while it lasts, and at the end
  ``"compiled <what> in 41.3 s"`` or, when JAX's persistent compilation cache supplied the
  executable, ``"loaded <what> from the compilation cache in 0.8 s"``. A compilation that lasts
  longer than :data:`SLOW_COMPILE_NOTE_S` explains once that XLA's own "Very slow compile?"
  banner, which may follow, is expected (only when :mod:`jaxrod.config` does not hide it).
* :func:`say` prints a progress line; :func:`eta` formats an estimate of the time left.

Everything here is host-side Python: callers pass ``enabled=False`` when progress is off or when
their arguments are JAX tracers (under ``jit``/``vmap``/``grad``), and nothing is printed then.
Ahead-of-time compilation produces the same executable as the ordinary call; measured on the
21-node a1 cantilever, the time loop runs as fast as before (see the issue-13 note).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from .config import quiet_compiles

__all__ = ["ANNOUNCE_S", "HEARTBEAT_S", "activity", "announced", "compile_ahead", "eta", "say"]

#: seconds of silence after which a running phase prints a heartbeat line
HEARTBEAT_S = 9.0
#: a compilation that lasts longer than this [s] is announced (quicker ones print nothing)
ANNOUNCE_S = 0.5
#: after this long [s] a compile heartbeat explains XLA's "Very slow compile?" banner (once)
SLOW_COMPILE_NOTE_S = 90.0

_lock = threading.Lock()
_last_output = [time.monotonic()]  # when the last progress line was printed
_active: list = []  # stack of running phases; only the innermost one prints heartbeats


def say(message: str, stream=None) -> None:
    """Print one progress line to ``stream`` (default: the current ``sys.stderr``) and flush it."""
    print(message, file=sys.stderr if stream is None else stream, flush=True)
    with _lock:
        _last_output[0] = time.monotonic()


def eta(done: float, total: float, elapsed: float) -> str:
    """``"ETA 12 s"`` for a phase ``done``/``total`` complete after ``elapsed`` seconds, assuming
    the rest proceeds at the same rate; ``""`` when nothing is done yet or all is done."""
    if done <= 0 or done >= total:
        return ""
    left = elapsed * (total - done) / done
    return f"ETA {_fmt_seconds(left)}"


def _fmt_seconds(s: float) -> str:
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


class _Phase:
    def __init__(self, what, stream, interval, announce, delay):
        self.what, self.stream, self.interval = what, stream, float(interval)
        self.announce, self.delay = announce, float(delay)
        self.start = time.monotonic()
        self.announced = False
        self._stop = threading.Event()
        self._thread = None

    @property
    def elapsed(self) -> float:
        """Seconds since the phase started."""
        return time.monotonic() - self.start

    def _describe(self):
        return self.what() if callable(self.what) else self.what

    def _run(self):
        tick = min(0.25, self.interval / 4, self.delay / 2 if self.delay > 0 else 0.25)
        while not self._stop.wait(tick):
            now = time.monotonic()
            with _lock:
                innermost = bool(_active) and _active[-1] is self
                quiet = now - max(_last_output[0], self.start)
            if self._stop.is_set() or not innermost:
                continue
            if self.announce and not self.announced:
                if now - self.start >= self.delay:
                    self.announced = True
                    say(self.announce, self.stream)
                continue
            if quiet >= self.interval:
                say(f"  ... still {self._describe()}: {_fmt_seconds(now - self.start)}", self.stream)

    def __enter__(self):
        with _lock:
            _active.append(self)
        if self.announce and self.delay <= 0:
            self.announced = True
            say(self.announce, self.stream)
        self._thread = threading.Thread(target=self._run, name="jaxrod-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        with _lock:
            _active.remove(self)
        return False


@contextlib.contextmanager
def activity(what, *, enabled: bool = True, stream=None, interval: float | None = None,
             announce: str | None = None, delay: float = 0.0):
    """Context manager around a phase that may be slow: heartbeat lines while it runs.

    Args:
        what: the phase as it continues the word "still", e.g. ``"solving static equilibrium"``;
            a string or a function returning one (called at each heartbeat, e.g. to show an
            iteration count).
        enabled: ``False``: print nothing (progress off, or traced arguments).
        stream: where to print (default: ``sys.stderr`` at entry).
        interval: seconds of silence on the progress stream before a heartbeat line (default
            :data:`HEARTBEAT_S`).
        announce: a line to print when the phase starts (after ``delay`` seconds if it is still
            running then; never if it ends sooner).

    Yields an object with ``elapsed`` (seconds) and ``announced`` (whether ``announce`` was
    printed), or ``None`` when disabled.
    """
    if not enabled:
        yield None
        return
    stream = sys.stderr if stream is None else stream
    with _Phase(what, stream, HEARTBEAT_S if interval is None else interval, announce, delay) as phase:
        yield phase


class _CompileEvents:
    """Counts of JAX's compilation events (``jax.monitoring``); listeners are registered once."""

    lock = threading.Lock()
    counts: dict = {}
    registered = False

    @classmethod
    def snapshot(cls) -> dict:
        import jax

        with cls.lock:
            if not cls.registered:
                jax.monitoring.register_event_listener(cls._event)
                jax.monitoring.register_event_duration_secs_listener(cls._duration)
                cls.registered = True
            return dict(cls.counts)

    @classmethod
    def _event(cls, event, *args, **kwargs):
        with cls.lock:
            cls.counts[event] = cls.counts.get(event, 0) + 1

    @classmethod
    def _duration(cls, event, duration, *args, **kwargs):
        with cls.lock:
            cls.counts[event] = cls.counts.get(event, 0) + 1
            cls.counts[event + ":s"] = cls.counts.get(event + ":s", 0.0) + float(duration)


_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
_CACHE_HIT = "/jax/compilation_cache/cache_hits"


def compile_ahead(jitted, *args, what: str, enabled: bool = True, stream=None, **kwargs) -> float | None:
    """Compile ``jitted`` (a ``jax.jit``/``eqx.filter_jit`` function) for ``args``/``kwargs``
    ahead of the call, with the compile messages described in the module docstring.

    Lowering fills JAX's in-memory caches: the caller then calls ``jitted(*args, **kwargs)`` as
    usual, and that call only runs. Returns the compile wall time [s] when a compilation was
    announced, else ``None``. With ``enabled=False`` nothing is compiled or printed.
    """
    if not enabled:
        return None
    before = _CompileEvents.snapshot()
    start = time.monotonic()
    noted = []

    def doing():
        # XLA's own alarm fires after about two minutes of compiling: explain it once, before
        if not noted and time.monotonic() - start >= SLOW_COMPILE_NOTE_S and not quiet_compiles():
            noted.append(True)
            return (f"compiling {what} (if XLA prints a 'Very slow compile?' banner: expected for this "
                    f"program, not an error)")
        return f"compiling {what}"

    with activity(doing, stream=stream, delay=ANNOUNCE_S,
                  announce=f"compiling {what} (or loading it from the compilation cache when this shape ran "
                           f"before)") as phase:
        jitted.lower(*args, **kwargs).compile()
    after = _CompileEvents.snapshot()
    if not phase.announced:
        return None
    wall = phase.elapsed
    # tracing may compile a few tiny eager programs too small for the disk cache: the big one came
    # from the cache when there were hits and XLA compiled for less than half of the wall time
    compile_s = after.get(_BACKEND_COMPILE + ":s", 0.0) - before.get(_BACKEND_COMPILE + ":s", 0.0)
    hits = after.get(_CACHE_HIT, 0) - before.get(_CACHE_HIT, 0)
    if hits and compile_s < 0.5 * wall:
        say(f"loaded {what} from the compilation cache in {wall:.1f} s", stream)
    else:
        say(f"compiled {what} in {wall:.1f} s", stream)
    return wall


def announced(jitted, what: str, *, enabled: bool = True, stream=None):
    """``jitted`` whose first call is preceded by :func:`compile_ahead` (messages, heartbeat);
    every call then goes through ``jitted`` itself. ``enabled=False`` returns ``jitted``."""
    if not enabled:
        return jitted
    pending = [True]

    def call(*args, **kwargs):
        if pending[0]:
            pending[0] = False
            compile_ahead(jitted, *args, what=what, stream=stream, **kwargs)
        return jitted(*args, **kwargs)

    return call
