"""Actuated continuum robots (issue 15): real-time ratio per robot next to the paper's figure.

Usage::

    python benchmarks/robots.py                       # every robot below
    python benchmarks/robots.py --only tendon,fluidic

Each robot has its own script ``benchmarks/robots_<topic>.py`` (runnable alone) with a function
``rows()`` returning one dict per measured configuration; this script runs them one after the other
in one process (so they share the host's load at nearly the same time) and prints one table.

Columns: simulated seconds, wall and process-CPU seconds of the timed run (compile excluded unless
the row says otherwise: the first call compiles, the timed call reuses the compiled program),
real-time ratio = simulated s / wall s (> 1 is faster than real time; the paper's ratios are
wall-clock on its hardware: Till et al. an Intel i7 with three threads for the parallel robot),
the paper's ratio, and the 1-minute load average when the row was measured (the 2-core host is
shared: CPU time is the steadier figure).

Robots (paper figures, spec seed000 section 7 and seed004 section 9):

| topic | robot | paper |
|---|---|---|
| ``parallel`` | continuum Stewart-Gough platform, 6 legs x 200 points, dt 1/120 s | 7-8 (three threads) |
| ``tendon`` | 4-tendon object transfer, 200 points, dt 1/60 s; 1-tendon step robot | > 3.5 |
| ``fluidic`` | soft finger, air and incompressible fluid, 50 points, dt 0.01 s | 26-32 (water), ~28 (air) |
| ``stiff_flop`` | STIFF-FLOP module on the measured pressures: fit time, held-out tip errors | TMTDyn: < 1 s CPU per frame; 3-12.5 mm |
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# the compile columns measure compilation: no persistent cache unless JAXROD_CACHE_DIR asks for one
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse
import importlib
import sys
import time
from pathlib import Path

TOPICS = ("parallel", "tendon", "fluidic", "stiff_flop")


def timed_twice(run):
    """Call ``run()`` twice (it must block until its result is ready): ``(result of the second
    call, wall [s] of the first call (compilation included), wall [s] and process CPU [s] of the
    second call (the compiled program only))``."""
    w0 = time.perf_counter()
    run()
    first = time.perf_counter() - w0
    c0, w0 = time.process_time(), time.perf_counter()
    out = run()
    return out, first, time.perf_counter() - w0, time.process_time() - c0


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def print_table(rows):
    """Print ``rows`` (list of dicts) as one markdown table over the union of their keys."""
    if not rows:
        print("(no rows)")
        return
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(_fmt(r.get(k, "")) for k in keys) + " |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(TOPICS), help=f"comma-separated subset of {TOPICS}")
    ap.add_argument("--json", metavar="NAME", default=None,
                    help="also write the rows to benchmarks/results/NAME (date, commit, machine, load)")
    args = ap.parse_args(argv)
    topics = [t.strip() for t in args.only.split(",") if t.strip()]
    bad = [t for t in topics if t not in TOPICS]
    if bad:
        ap.error(f"--only: unknown topic(s) {bad}; allowed: {', '.join(TOPICS)}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    rows = []
    for topic in topics:
        name = f"robots_{topic}"
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            print(f"[robots] {name}.py not found: skipped", file=sys.stderr)
            continue
        t0 = time.perf_counter()
        print(f"[robots] {topic} ...", file=sys.stderr, flush=True)
        got = mod.rows()
        for r in got:
            rows.append({"topic": topic, **r})
        print(f"[robots] {topic}: {len(got)} rows in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average (1 min) at end: {os.getloadavg()[0]:.1f}")
    print_table(rows)
    if args.json:
        from _common import cpu_name, git_sha, load_average, write_result

        write_result(args.json, {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_sha(), "machine": cpu_name(),
            "load_average_at_end": load_average(), "xla_flags": os.environ.get("JAXROD_XLA_FLAGS"),
            "topics": topics, "rows": rows,
        })


if __name__ == "__main__":
    main()
