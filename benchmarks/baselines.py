"""Model-free baselines beside our fitted models on the two measured data sets (issue 22, item 1).

Usage::

    python benchmarks/baselines.py            # print both tables, write benchmarks/results/baselines.json
    python benchmarks/baselines.py --no-write # print only
    python benchmarks/baselines.py --paper-model  # first simulate the UNFITTED Table-2 model on the docs table's
                                                  # windows (minutes), written to
                                                  # benchmarks/results/stiff_flop_paper_model.json

What is computed (:mod:`jaxrod.cases.real_data_baselines`; NumPy only, a few seconds): on
STIFF-FLOP, the rest tip, the mean training tip and the pressure-only linear map ``tip = W [p, 1]``,
fitted on the samples of our fit (NoLoad 0-29 s) and scored with TMTDyn's metric on every window of
the table of docs/papers/tmtdyn-stiff-flop.md, the whole Load recordings and Load2 after TMTDyn's
window; on the soft limb, the
chord extrapolations of the tip tag (109) and, on a frame split, the constant and linear maps.
"Our model" is the number the docs pages report today (quoted, not re-run); TMTDyn's and DisMech's
published numbers are not comparable (other windows, inputs, preprocessing; see
docs/papers/tmtdyn-stiff-flop.md and docs/papers/soft-limb.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_sha  # noqa: E402

from jaxrod.cases import real_data_baselines as rb  # noqa: E402

RESULT = os.path.join(ROOT, "benchmarks", "results", "baselines.json")
PAPER = os.path.join(ROOT, "benchmarks", "results", "stiff_flop_paper_model.json")


def run_paper_model(path=PAPER, segments=3):
    """Simulate the unfitted model (paper Table 2: E 205 kPa, G = E/3, our chosen mu 200 Pa s; the
    fit's starting point ``jaxrod.scenes.stiff_flop.INITIAL``) on every window of the docs table (the
    whole Load recordings included) with the
    calibration's own evaluation (``stiff_flop_calibration.evaluate_all``) and store the rows."""
    import time

    from jaxrod.cases import stiff_flop_calibration as cal
    from jaxrod.scenes import stiff_flop as sm

    w, c = time.perf_counter(), time.process_time()
    table, _ = cal.evaluate_all(dict(sm.INITIAL), segments, whole=True)
    out = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_sha(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "command": "python benchmarks/baselines.py --paper-model",
        "values": dict(sm.INITIAL),
        "segments": segments,
        "wall_s": time.perf_counter() - w,
        "cpu_s": time.process_time() - c,
        "table": table,
    }
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {path}")
    return out


def _paper_rows(path=PAPER):
    """``{(kind, recording, window or split): mm}`` of the stored unfitted-model run, or ``{}``."""
    if not os.path.isfile(path):
        return {}
    with open(path) as fh:
        t = json.load(fh)["table"]
    return {_key(r): r["err_mm"] for r in t}


def _key(r):
    """Rows matched by window (dynamic) or by split (static: the labels differ)."""
    return (r["kind"], r["recording"], r["window"] if r["kind"] == "dynamic" else r["split"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the tables only")
    ap.add_argument("--out", default=RESULT, help=f"JSON written (default {os.path.relpath(RESULT, ROOT)})")
    ap.add_argument("--paper-model", action="store_true",
                    help="first simulate the unfitted Table-2 model on the docs table's windows (minutes)")
    args = ap.parse_args(argv)
    if args.paper_model:
        run_paper_model()
    result = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_sha(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "command": "python benchmarks/baselines.py",
        "metric": "mean over samples of the Euclidean tip distance, mm",
    }
    try:
        sfb = rb.stiff_flop_baselines()
        paper = _paper_rows()
        for r in sfb["rows"]:
            r["paper_model_mm"] = paper.get(_key(r))
        sfb["paper_model_source"] = (os.path.relpath(PAPER, ROOT) + " (python benchmarks/baselines.py --paper-model)"
                                     if paper else None)
    except FileNotFoundError as exc:
        print(f"STIFF-FLOP skipped: {exc}", file=sys.stderr)
        sfb = None
    if sfb is not None:
        print("## STIFF-FLOP (training: NoLoad 0-29 s, 581 samples; mm, TMTDyn's metric)\n")
        print(rb.format_stiff_flop(sfb))
        print(f"\nour model: {rb.STIFF_FLOP_MODEL_SOURCE}; 'lower': our model vs the better fitted baseline\n")
        result["stiff_flop"] = dict(sfb, model_source=rb.STIFF_FLOP_MODEL_SOURCE)
        # the same baselines on the causal inputs of `jaxrod calibrate stiff-flop --smoothing trailing`
        sft = rb.stiff_flop_baselines(smoothing="trailing")
        print("## STIFF-FLOP, causal (trailing 9-sample) pressures: the linear map refitted on them\n")
        print("| study | recording | window | split | linear map p->tip, trailing | centred |")
        print("|---|---|---|---|---|---|")
        for a, b in zip(sft["rows"], sfb["rows"]):
            print(f"| {a['kind']} | {a['recording']} | {a['window']} | {a['split']} | {a['linear_map_mm']:.2f} "
                  f"| {b['linear_map_mm']:.2f} |")
        print()
        result["stiff_flop_trailing"] = dict(
            train=sft["train"], W=sft["W"],
            rows=[{k: r[k] for k in ("kind", "recording", "window", "split", "n", "constant_mm", "linear_map_mm")}
                  for r in sft["rows"]])
    try:
        slb = rb.soft_limb_baselines()
    except FileNotFoundError as exc:
        print(f"soft limb skipped: {exc}", file=sys.stderr)
        slb = None
    if slb is not None:
        print("## Soft limb, tip tag 109 (mm, mean tip distance, all-tags alignment: tag 109 sets the scale; "
              "tip-free figures: benchmarks/soft_limb_tip_free.py)\n")
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
