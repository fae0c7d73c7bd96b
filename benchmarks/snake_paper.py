"""The snake robot of Transeth et al. (2008) on the paper's runs, 15 s each: lateral undulation
with orthotropic friction 0.1 / 0.5 and A_h = 30 deg (section VIII-B), isotropic 0.2 with A_h = 40
deg (section VIII-D, the experiment's gait) and with 30 deg, and sidewinding on isotropic 0.2
(section VIII-E, the scene ``snake-sidewinding``: straight start along y, soft start). Prints the
displacement of link 6 (the paper's measured link) and of the centre of mass, the mean speed over
5-15 s, the mean number of spheres touching (of 22), the largest backward slide of link 6 after
the start-up (how far its travel coordinate ever came back from its best, t > 3 s, along the
run's own mean direction), the contact-solver sweeps and the joint drift; writes
``results/snake_paper.json`` (link 6 and centre of mass every 0.1 s).

    nice -n 10 python benchmarks/snake_paper.py [--dt 5e-4] [--duration 15] [--only TEXT] [--no-write]

About 2.5 min for the three lateral-undulation runs on this 2-core host when idle (dt = 0.5 ms), 18 min
when it was loaded; the sidewinding run alone 2 min at load 5.7.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

import argparse
import json
import time

import numpy as np

from _common import out, table

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jaxrod  # noqa: E402
from jaxrod.integrate.moreau import MoreauOptions  # noqa: E402
from jaxrod.scenes.snake import SerpenoidGait, snake_model, snake_sidewinding  # noqa: E402

RUNS = (
    ("LU-ortho (0.1/0.5, 30 deg)", dict(mu_along=0.1, mu_across=0.5)),
    ("LU-iso (0.2, 40 deg)", dict(mu_along=0.2, mu_across=0.2, gait=SerpenoidGait(amplitude_h=np.radians(40.0)))),
    ("LU-iso (0.2, 30 deg)", dict(mu_along=0.2, mu_across=0.2)),
    ("sidewinding (0.2)", None),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dt", type=float, default=5e-4)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--only", metavar="TEXT", help="run only the runs whose name contains TEXT (the others keep "
                    "their recorded results in the JSON)")
    args = ap.parse_args()
    n_steps = int(round(args.duration / args.dt))
    save = max(1, min(int(round(0.1 / args.dt)), n_steps))
    while n_steps % save:
        save -= 1
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "snake_paper.json")
    rows, result = [], {"dt": args.dt, "duration": args.duration, "runs": {}}
    if args.only and os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if (old.get("dt"), old.get("duration")) == (args.dt, args.duration):
            result = old
    for name, kw in RUNS:
        if args.only and args.only not in name:
            continue
        opts = MoreauOptions(rtol=1e-6, max_iterations=5000)
        cs = snake_sidewinding(options=opts).model if kw is None else snake_model(11, options=opts, **kw)
        t0 = time.time()
        tr = jaxrod.simulate(cs, dt=args.dt, duration=args.duration, save_every=save)
        wall = time.time() - t0
        t, p6, com = np.asarray(tr.times), np.asarray(tr.positions[:, 5]), np.asarray(tr.positions).mean(1)
        its = np.asarray(tr.stats.iterations)
        i = min(int(np.searchsorted(t, min(5.0, t[-1] / 3))), len(t) - 2)
        speed = (com[-1] - com[i]) / (t[-1] - t[i])
        drift = float(np.max(np.abs(np.asarray(cs.joint_violation(tr.q)))))
        touching = float(np.asarray(tr.active[1:]).sum(1).mean())
        travel = (com[-1, :2] - com[0, :2]) / max(np.linalg.norm(com[-1, :2] - com[0, :2]), 1e-12)
        s6 = (p6[:, :2] - p6[0, :2]) @ travel
        late = t > 3.0
        back = float(np.max((np.maximum.accumulate(s6) - s6)[late])) if late.any() else float("nan")
        rows.append([name, f"{p6[-1, 0] - p6[0, 0]:+.3f}", f"{p6[-1, 1] - p6[0, 1]:+.3f}",
                     f"{com[-1, 0] - com[0, 0]:+.3f}", f"{com[-1, 1] - com[0, 1]:+.3f}", f"{speed[0]:+.4f}",
                     f"{touching:.1f}", f"{back:.3f}", f"{its.mean():.1f} / {its.max()}", f"{drift:.1e}",
                     f"{float(np.min(tr.gaps)):.1e}", f"{wall:.0f}"])
        result["runs"][name] = {"times": t.tolist(), "link6": p6.round(6).tolist(), "com": com.round(6).tolist(),
                                "sweeps_mean": float(its.mean()), "sweeps_max": int(its.max()),
                                "joint_drift": drift, "wall_s": wall, "spheres_touching_mean": touching,
                                "link6_largest_backslide_m": back}
    out(table(["run", "link 6 dx [m]", "link 6 dy [m]", "CoM dx [m]", "CoM dy [m]", "CoM vx 5-15 s [m/s]",
               "spheres touching (of 22)", "link 6 largest back-slide [m]", "sweeps mean / max", "joint drift",
               "min gap [m]", "wall [s]"], rows))
    if not args.no_write:
        with open(path, "w") as f:
            json.dump(result, f)
        out(f"\nwrote {path}")


if __name__ == "__main__":
    main()
