"""Model-free baselines beside our fitted models on the two measured data sets (issue 22, item 1).

Usage::

    python benchmarks/baselines.py            # print both tables, write benchmarks/results/baselines.json
    python benchmarks/baselines.py --no-write # print only

What is computed (:mod:`jaxrod.cases.real_data_baselines`; NumPy only, a few seconds): on
STIFF-FLOP, the rest tip, the mean training tip and the pressure-only linear map ``tip = W [p, 1]``,
fitted on the samples of our fit (NoLoad 0-29 s) and scored with TMTDyn's metric on every window of
README's table, the whole Load recordings and Load2 after TMTDyn's window; on the soft limb, the
chord extrapolations of the tip tag (109) and, on a frame split, the constant and linear maps.
"Our model" is the number README reports today (quoted, not re-run); TMTDyn's and DisMech's
published numbers are not comparable (other windows, inputs, preprocessing; see README).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from jaxrod.cases import real_data_baselines as rb  # noqa: E402

RESULT = os.path.join(ROOT, "benchmarks", "results", "baselines.json")


def _git_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the tables only")
    ap.add_argument("--out", default=RESULT, help=f"JSON written (default {os.path.relpath(RESULT, ROOT)})")
    args = ap.parse_args(argv)
    result = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "command": "python benchmarks/baselines.py",
        "metric": "mean over samples of the Euclidean tip distance, mm",
    }
    try:
        sfb = rb.stiff_flop_baselines()
    except FileNotFoundError as exc:
        print(f"STIFF-FLOP skipped: {exc}", file=sys.stderr)
        sfb = None
    if sfb is not None:
        print("## STIFF-FLOP (training: NoLoad 0-29 s, 581 samples; mm, TMTDyn's metric)\n")
        print(rb.format_stiff_flop(sfb))
        print(f"\nour model: {rb.STIFF_FLOP_MODEL_SOURCE}; 'lower': our model vs the better fitted baseline\n")
        result["stiff_flop"] = dict(sfb, model_source=rb.STIFF_FLOP_MODEL_SOURCE)
    try:
        slb = rb.soft_limb_baselines()
    except FileNotFoundError as exc:
        print(f"soft limb skipped: {exc}", file=sys.stderr)
        slb = None
    if slb is not None:
        print("## Soft limb, tip tag 109 (mm, mean tip distance, README's alignment)\n")
        print(rb.format_soft_limb(slb))
        print(f"\nour model: {rb.LIMB_MODEL_SOURCE}\n")
        result["soft_limb"] = dict(slb, model_source=rb.LIMB_MODEL_SOURCE)
    if sfb is None and slb is None:
        return 2
    if not args.no_write:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
