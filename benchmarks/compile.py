"""Compilation report: how many XLA programs each built-in scene and example model file compiles,
how long XLA takes for them, and what a user waits for on a first (cold) and a second (warm) run.

For each target (every scene of ``jaxrod scenes``, every ``jaxrod/modelfile/examples/*.toml``) it
runs ``jaxrod simulate TARGET --duration 3*dt`` (3 time steps, so the figures are almost all
compilation and set-up; static scenes run as they are) in a fresh subprocess, twice:

- **cold**: an empty persistent compilation cache (a new temporary ``JAXROD_CACHE_DIR``), so every
  program is compiled, as on a user's first run; this run fills that cache (writing an entry
  costs milliseconds: the figures match a run with ``JAXROD_CACHE_DIR=off`` within noise, which
  ``--strict-cold`` measures instead, at the price of a third run);
- **warm**: a second process with the cache the cold run filled (programs that compile in under
  ``jaxrod.config.MIN_COMPILE_TIME_SECS`` are not cached and compile again).

Columns: *programs* and *XLA compile s*: programs handed to XLA in the cold run and the sum of
their XLA compile times (JAX's ``/jax/core/compile/backend_compile_duration`` events, see
``jaxrod/compile_log.py``; tracing and lowering to StableHLO are not included); *CPU s*: user +
system CPU time of the whole process (``getrusage(RUSAGE_CHILDREN)``; includes ~1-2 s of Python
and JAX imports); *wall s*: its wall-clock time; *warm programs*: programs compiled again in the
warm run (cache hits not counted); *load*: the 1-minute load average when the cold run started.

Usage::

    nice -n 10 python benchmarks/compile.py                       # everything (~15-40 min)
    python benchmarks/compile.py --only cantilever-a1 --no-warm   # one target, cold only
    python benchmarks/compile.py --json benchmarks/results/compile.json
    python benchmarks/compile.py --tree /path/to/other/checkout  # measure another checkout's jaxrod
    python benchmarks/compile.py --calibrate                      # also `jaxrod calibrate stiff-flop --max-iters 1`
    python benchmarks/compile.py --report benchmarks/results/compile_before.json  # table of a saved run

Each run's stderr tail is kept in the JSON when the command fails (status != 0).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, cpu_name, git_commit, load_average, note, out, table  # noqa: E402

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_compile_child.py")
N_STEPS = 3


def scenes(tree):
    """``[(name, dt or None)]`` from ``jaxrod scenes`` of the checkout at ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    text = subprocess.run([sys.executable, "-m", "jaxrod", "scenes"], env=env, capture_output=True, text=True,
                          check=True, cwd=tree).stdout
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name = line.split()[0]
        m = re.search(r"\[dt = ([0-9.eE+-]+) s", line)
        rows.append((name, float(m.group(1)) if m else None))
    return rows


def examples(tree):
    """``[(file name, path, dt or None)]`` of the example model files of ``tree``."""
    rows = []
    for path in sorted(glob.glob(os.path.join(tree, "jaxrod", "modelfile", "examples", "*.toml"))):
        with open(path, "rb") as f:
            data = tomllib.load(f)
        dt = None
        for sec in ("simulation", "simulate"):
            if isinstance(data.get(sec), dict) and "dt" in data[sec]:
                dt = float(data[sec]["dt"])
        rows.append((os.path.basename(path), path, dt))
    return rows


def run_once(tree, argv, cache, timeout):
    """One fresh process running ``jaxrod ARGV``: (rc, cpu_s, wall_s, compilations, stderr tail)."""
    env = dict(os.environ, PYTHONPATH=tree, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               JAXROD_CACHE_DIR=cache)
    env.pop("JAXROD_LOG_COMPILES", None)
    with tempfile.TemporaryDirectory(prefix="jaxrod-compile-bench-") as tmp:
        result = os.path.join(tmp, "result.json")
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, CHILD, result, *argv], env=env, cwd=tmp, capture_output=True,
                               text=True, timeout=timeout)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = "timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        comps = []
        if os.path.exists(result):
            with open(result) as f:
                comps = json.load(f)["compilations"]
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return rc, cpu, wall, comps, "\n".join(err.strip().splitlines()[-8:])


def summarize(comps):
    compiled = [(n, s) for n, s, cached in comps if not cached]
    top = {}
    for n, s in compiled:
        t = top.setdefault(n, [0, 0.0])
        t[0] += 1
        t[1] += s
    top = sorted(top.items(), key=lambda kv: -kv[1][1])[:5]
    return {
        "programs": len(compiled),
        "xla_compile_s": round(sum(s for _, s in compiled), 2),
        "cache_hits": sum(1 for c in comps if c[2]),
        "top": [{"name": n, "count": c, "seconds": round(s, 2)} for n, (c, s) in top],
    }


def measure(tree, label, argv, args):
    row = {"target": label, "argv": argv, "load_1min": None}
    cache = tempfile.mkdtemp(prefix="jaxrod-compile-cache-")
    try:
        if args.strict_cold:
            row["load_1min"] = load_average()[0] if load_average() else None
            rc, cpu, wall, comps, err = run_once(tree, argv, "off", args.timeout)
            row["cold"] = dict(rc=rc, cpu_s=round(cpu, 1), wall_s=round(wall, 1), **summarize(comps))
            if rc != 0:
                row["cold"]["stderr_tail"] = err
            if not args.no_warm:
                run_once(tree, argv, cache, args.timeout)  # fill the cache
        else:
            row["load_1min"] = load_average()[0] if load_average() else None
            rc, cpu, wall, comps, err = run_once(tree, argv, cache, args.timeout)
            row["cold"] = dict(rc=rc, cpu_s=round(cpu, 1), wall_s=round(wall, 1), **summarize(comps))
            if rc != 0:
                row["cold"]["stderr_tail"] = err
        if not args.no_warm:
            rc, cpu, wall, comps, err = run_once(tree, argv, cache, args.timeout)
            row["warm"] = dict(rc=rc, cpu_s=round(cpu, 1), wall_s=round(wall, 1), **summarize(comps))
            if rc != 0:
                row["warm"]["stderr_tail"] = err
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return row


def fmt_row(r):
    c, w = r.get("cold"), r.get("warm")
    if c is None:
        return [r["target"]] + ["n/a"] * 8
    flag = "" if c["rc"] == 0 else f" (exit {c['rc']})"
    warm = [f"{w['cpu_s']:.0f}", f"{w['wall_s']:.0f}", str(w["programs"])] if w else ["-", "-", "-"]
    load = f"{r['load_1min']:.1f}" if r.get("load_1min") is not None else "n/a"
    return [r["target"] + flag, c["programs"], f"{c['xla_compile_s']:.1f}", f"{c['cpu_s']:.0f}", f"{c['wall_s']:.0f}",
            *warm, load]


def note_for(r):
    """The note column: why a row is missing, or the cold run's in-run cache hits."""
    if r.get("why"):
        return r["why"]
    parts = [r["note"]] if r.get("note") else []
    hits = (r.get("cold") or {}).get("cache_hits", 0)
    if hits:
        parts.append(f"+{hits} identical program{'s' if hits != 1 else ''} read back from the cache this run filled")
    return "; ".join(parts)


HEADER = ["scene / file", "programs", "XLA compile s", "cold CPU s", "cold wall s", "warm CPU s", "warm wall s",
          "warm programs", "load"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", action="append", metavar="NAME",
                   help="measure only this scene or example file (repeatable; 'calibrate-stiff-flop' for the calibration)")
    p.add_argument("--json", metavar="PATH", help="write the rows and the run's context to PATH")
    p.add_argument("--no-warm", action="store_true", help="cold runs only")
    p.add_argument("--strict-cold", action="store_true",
                   help="cold run with JAXROD_CACHE_DIR=off and a separate run to fill the cache for the warm one")
    p.add_argument("--tree", default=ROOT, help="checkout whose jaxrod is measured (default: this one)")
    p.add_argument("--calibrate", action="store_true",
                   help="also time `jaxrod calibrate stiff-flop --max-iters 1` (several minutes of CPU)")
    p.add_argument("--timeout", type=float, default=1200, help="seconds per run before it is stopped (default 1200)")
    p.add_argument("--report", metavar="JSON", help="print the table of a saved --json file and exit (no runs)")
    args = p.parse_args(argv)
    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        out(table(HEADER + ["note"], [fmt_row(r) + [note_for(r)] for r in saved["rows"]]))
        return 0
    tree = os.path.abspath(args.tree)

    targets = []
    for name, dt in scenes(tree):
        extra = ["--duration", repr(N_STEPS * dt)] if dt else []
        targets.append((name, ["simulate", name, *extra]))
    for fname, path, dt in examples(tree):
        extra = ["--duration", repr(N_STEPS * dt)] if dt else []
        targets.append((f"examples/{fname}", ["simulate", path, *extra]))
    calib = ("calibrate-stiff-flop", ["calibrate", "stiff-flop", "--max-iters", "1"])
    if args.only:
        wanted = set(args.only)
        known = {t[0] for t in targets} | {t[0].split("/", 1)[-1] for t in targets} | {calib[0]}
        if wanted - known:
            p.error(f"unknown target(s): {', '.join(sorted(wanted - known))}")
        targets = [t for t in targets if t[0] in wanted or t[0].split("/", 1)[-1] in wanted]
        if calib[0] in wanted:
            args.calibrate = True

    h, subject, dirty = git_commit(tree)
    ctx = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": h, "subject": subject, "dirty": dirty, "tree": tree,
        "machine": cpu_name(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
        "load_at_start": load_average(), "steps": N_STEPS,
        "cold": "JAXROD_CACHE_DIR=off" if args.strict_cold else "empty temporary cache (filled by this run)",
    }
    out(f"# jaxrod compile report: {ctx['date']}, commit {h} {subject or ''}{' (dirty)' if dirty else ''}")
    out(f"- machine: {ctx['machine']}, {ctx['cpus']} CPUs; load at start {ctx['load_at_start']}; cold: {ctx['cold']}")
    out()
    rows = []

    def dump():
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({**ctx, "load_at_end": load_average(), "rows": rows}, f, indent=1)

    for label, targv in targets:
        note(f"[compile.py] {label}: jaxrod {' '.join(targv)}")
        r = measure(tree, label, targv, args)
        rows.append(r)
        note(f"[compile.py]   {fmt_row(r)}  top: {r['cold']['top'][:3]}")
        dump()
    if args.calibrate:
        note(f"[compile.py] {calib[0]}: jaxrod {' '.join(calib[1])}")
        r = measure(tree, calib[0], calib[1], args)
        r["note"] = "whole command with one L-BFGS iteration (its first evaluation, one iteration, the evaluation table)"
        rows.append(r)
    elif not args.only:
        rows.append({"target": "calibrate stiff-flop", "why": (
            "not measured: the CLI cannot stop after the first evaluation; `--max-iters 1` still runs an "
            "iteration and the evaluation table (minutes of CPU); run with --calibrate")})
    dump()
    out(table(HEADER + ["note"], [fmt_row(r) + [note_for(r)] for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
