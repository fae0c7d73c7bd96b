"""Soft limb: the held-out tip (tag 109) with nothing derived from it in the fit (issue 22, item 4).

Usage::

    nice -n 10 python benchmarks/soft_limb_tip_free.py            # all 170 frames, ~3-5 min on 2 cores;
                                                                   # writes benchmarks/results/soft_limb_tip_free.json
    python benchmarks/soft_limb_tip_free.py --frames 0:170:20 --no-write   # quick look

Three alignments of the same data, each fitted with the tip out of the loss and out of the
base-angle fit (:func:`jaxrod.cases.soft_limb.run_real2sim`), in one process (one compiled program):

* ``tip_free_rod_end`` (the default of ``jaxrod calibrate soft-limb``): the pixel scale from tags
  101-108 (mean 101 -> 108 polyline set to the nominal 7/8 x 0.15 m), tags 102-108 at their
  measured cumulative polyline lengths, tag 109 at the rod end (known geometry). Also the all-tags
  fit in this alignment (its tip error is an in-sample residual).
* ``tip_free_last_interval``: same scale and tags 102-108; tag 109 one measured 107 -> 108 interval
  beyond tag 108 (the assumption of the own-length chord baseline).
* ``all_tags``: the original alignment (tag 109 sets the scale and the arc lengths: its "held-out"
  tip is out of the loss only). Also its all-tags fit.

Beside each: the model-free chord extrapolations in the same alignment on the same frames
(:func:`jaxrod.cases.real_data_baselines.tip_extrapolation_baselines`; each row says whether it uses
tag 109) and :func:`jaxrod.cases.soft_limb.tip_error_diagnostics`. Nothing here is tuned on the tip.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_sha  # noqa: E402
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

RESULT = os.path.join(ROOT, "benchmarks", "results", "soft_limb_tip_free.json")

#: (name, alignment, tip_arclength, also the all-tags in-sample fit)
RUNS = (
    ("tip_free_rod_end", "tip-free", "rod-end", True),
    ("tip_free_last_interval", "tip-free", "last-interval", False),
    ("all_tags", "all-tags", "rod-end", True),
)


def run_one(name, alignment, tip_arclength, in_sample, frames=None, n_nodes=49):
    from jaxrod.cases import soft_limb as sl

    w0, c0 = time.perf_counter(), time.process_time()
    res = sl.run_real2sim(None, frames=frames, n_nodes=n_nodes, alignment=alignment,
                          tip_arclength=tip_arclength, hold_out=(109,), in_sample_fit=in_sample,
                          progress=False)
    summ = sl.summarize_real2sim(res)
    held = res["fits"]["held_out"]
    ev = held["evaluation"]
    out = {
        "alignment": alignment,
        "tip_arclength": res["alignment"].tip_arclength,
        "alignment_uses_tag_109": res["alignment"].uses_tip,
        "scale_mm_per_px": summ["scale_mm_per_px"],
        "scale_definition": summ["scale_definition"],
        "provenance": summ["provenance"],
        "tag_arclength_mm": summ["tag_arclength_mm"],
        "frames": summ["frames_fitted"],
        "held_out": {
            "what": ("tag 109 out of the loss, the base-angle fit, the scale and the tag arc lengths: "
                     "prediction" if not res["alignment"].uses_tip else
                     "tag 109 out of the loss and the base-angle fit only (it sets the scale and the "
                     "tag arc lengths): not a clean prediction"),
            "beta_deg": held["base_fit"]["beta_deg"],
            "tip_mean_mm": float(held["fit"].tip_error_mm.mean()),
            "tip_max_mm": float(held["fit"].tip_error_mm.max()),
            "fitted_tags_mean_mm": float(ev.in_sample.mean),
            "frames_not_converged": int((~held["fit"].converged).sum()),
            "diagnostics": sl.tip_error_diagnostics(held["problem"], held["fit"], res["targets"]),
        },
        "tip_baselines": summ["tip_baselines"],
    }
    if "all_tags" in res["fits"]:
        f = res["fits"]["all_tags"]["fit"]
        out["all_tags_fit"] = {"what": "tags 102-109 in the loss: in-sample residuals",
                               "tip_mean_mm": float(f.tip_error_mm.mean()),
                               "tip_max_mm": float(f.tip_error_mm.max())}
    out["wall_s"] = time.perf_counter() - w0
    out["cpu_s"] = time.process_time() - c0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", default=None, help="subset of the valid frames (default: all)")
    ap.add_argument("--nodes", type=int, default=49, help="DER nodes (default %(default)s)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--out", default=RESULT, help="JSON written (default %(default)s)")
    args = ap.parse_args(argv)
    if args.frames is not None and not args.no_write and args.out == RESULT:
        ap.error("--frames: a subset run would overwrite the recorded full run; add --no-write or --out PATH")
    cmd = "python benchmarks/soft_limb_tip_free.py" + (f" --frames {args.frames}" if args.frames else "") + (
        f" --nodes {args.nodes}" if args.nodes != 49 else "")
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load0 = os.getloadavg()
    runs = {}
    for name, alignment, tip, in_sample in RUNS:
        print(f"[{name}] fitting ...", flush=True)
        r = run_one(name, alignment, tip, in_sample, args.frames, args.nodes)
        runs[name] = r
        h = r["held_out"]
        print(f"[{name}] scale {r['scale_mm_per_px']:.5f} mm/px, tag 109 at {r['tag_arclength_mm'][-1]:.2f} mm; "
              f"held-out tip mean {h['tip_mean_mm']:.3f} mm, max {h['tip_max_mm']:.3f} mm ({h['what']}); "
              f"fitted tags {h['fitted_tags_mean_mm']:.3f} mm; {r['wall_s']:.0f} s wall", flush=True)
        for b in r["tip_baselines"]:
            print(f"    baseline {b['key']:20s} mean {b['mean_mm']:.3f} max {b['max_mm']:.3f} mm "
                  f"({'USES tag 109' if b['uses_tip'] else 'tip-free'})", flush=True)
        d = h["diagnostics"]
        print(f"    tip error along the model's end tangent {d['along_mean_mm']:+.3f} mm, normal "
              f"{d['normal_mean_mm']:+.3f} mm (|.| {d['normal_abs_mean_mm']:.3f}); gap floor "
              f"{d['gap_floor_mm']:.3f} mm; 107->108 chord measured - model {d['end_chord_angle_deg_mean']:+.2f} "
              f"+- {d['end_chord_angle_deg_std']:.2f} deg", flush=True)
    result = {
        "date_utc": started,
        "git_commit": git_sha(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_1_5_15_at_start": [round(x, 2) for x in load0],
        "load_average_1_5_15_at_end": [round(x, 2) for x in os.getloadavg()],
        "command": cmd,
        "metric": "distance between simulated and measured tag 109 [mm], mean and max over the frames",
        "data": "shared/data/dismech-soft-limb/soft_limb_data.csv (GPL-3.0, not in the repository)",
        "runs": runs,
    }
    if not args.no_write:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
