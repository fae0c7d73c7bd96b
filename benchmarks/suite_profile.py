"""Where the test suite's time goes: a summary of a profiled run.

Usage::

    JAXROD_TEST_CACHE=/tmp/empty JAXROD_TEST_PROFILE=/tmp/prof python3 -m pytest -q -n 2 --dist loadfile
    python benchmarks/suite_profile.py /tmp/prof [--top 40] [--json out.json]

``tests/conftest.py`` writes, with ``JAXROD_TEST_PROFILE=DIR``, one JSON line per test (per xdist
worker file): wall and CPU seconds of the test (setup, call and teardown, so a module fixture's
cost lands on the first test that uses it), CPU of finished subprocesses, the load average, and
every compilation event JAX reported: ``jaxpr_trace_duration`` (tracing),
``jaxpr_to_mlir_module_duration`` (lowering), ``backend_compile_duration`` (XLA, or the read of a
persistent-cache entry when ``cached``). This script prints, per test file, wall/CPU and the three
compile phases summed, then the longest single compilations with their tests.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(d: Path) -> list[dict]:
    recs = []
    for f in sorted(d.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            r["worker"] = f.stem
            recs.append(r)
    return recs


def per_file(recs):
    out = defaultdict(lambda: defaultdict(float))
    for r in recs:
        f = out[r["test"].split("::")[0]]
        f["tests"] += 1
        f["wall"] += r["wall"]
        f["cpu"] += r["cpu"]
        f["child_cpu"] += r["child_cpu"]
        for ev, name, sec, cached in r["events"]:
            key = {"jaxpr_trace_duration": "trace", "jaxpr_to_mlir_module_duration": "lower"}.get(ev)
            if key is None:
                key = "cache_read" if cached else "xla"
                f["programs" if not cached else "hits"] += 1
            f[key] += sec
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", type=Path, default=None, help="also write the per-file table as JSON")
    a = ap.parse_args(argv)
    recs = load(a.dir)
    files = per_file(recs)
    tot = defaultdict(float)
    for f in files.values():
        for k, v in f.items():
            tot[k] += v
    print(f"{len(recs)} tests, {len(files)} files; summed test wall {tot['wall']:.0f} s, CPU {tot['cpu']:.0f} s "
          f"(+ subprocesses {tot['child_cpu']:.0f} s); XLA compile {tot['xla']:.0f} s in {tot['programs']:.0f} programs, "
          f"lowering {tot['lower']:.0f} s, tracing {tot['trace']:.0f} s, cache reads {tot['cache_read']:.0f} s "
          f"({tot['hits']:.0f})\n")
    print("| file | tests | wall s | CPU s | subprocess CPU s | XLA s | programs | lower s | trace s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, f in sorted(files.items(), key=lambda kv: -kv[1]["wall"]):
        print(f"| {name} | {f['tests']:.0f} | {f['wall']:.1f} | {f['cpu']:.1f} | {f['child_cpu']:.1f} | {f['xla']:.1f} | "
              f"{f['programs']:.0f} | {f['lower']:.1f} | {f['trace']:.1f} |")
    print(f"\nLongest {a.top} XLA compilations:\n")
    print("| seconds | program | test |")
    print("|---|---|---|")
    comp = [(sec, name, r["test"]) for r in recs for ev, name, sec, cached in r["events"]
            if ev == "backend_compile_duration" and not cached]
    for sec, name, test in sorted(comp, reverse=True)[: a.top]:
        print(f"| {sec:.1f} | {name} | {test} |")
    if a.json:
        a.json.write_text(json.dumps({k: dict(v) for k, v in files.items()}, indent=1))


if __name__ == "__main__":
    main()
