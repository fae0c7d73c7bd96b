"""What XLA:CPU's flags cost and buy for one scene: a fresh process's first ``simulate`` (compile
included, compilation cache off) against the run time of the compiled program, per flag setting.

Settings (``JAXROD_XLA_FLAGS`` of the child process):

- ``default``: jaxrod's default (:data:`jaxrod.config.DEFAULT_XLA_FLAGS`, fusion emitters off);
- ``O1``: the default plus ``--xla_backend_optimization_level=1``;
- ``O0``: the default plus ``--xla_backend_optimization_level=0`` (the test suite's flags);
- ``xla``: XLA's own defaults (``JAXROD_XLA_FLAGS=""``).

Each setting runs ``--repeats`` times, interleaved (default O1 O0 xla default O1 O0 xla ...), each
in a fresh subprocess with ``JAXROD_CACHE_DIR=off``: the scene's first ``simulate`` of 3 steps
(tracing, compilation and the steps: what a user's first run waits for), then ``--steps`` steps
three times with the program compiled (min and median). Times are the child's process CPU
(user + system), not wall: the host is shared. ``--pin CPU`` runs the children under
``taskset -c CPU``.

Usage::

    python benchmarks/xla_opt_level.py                          # cantilever-a1, 200 steps, 2 repeats
    python benchmarks/xla_opt_level.py --scene till-benchmark --steps 200 --pin 1 --json NAME.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone

BASE = "--xla_cpu_use_fusion_emitters=false"
SETTINGS = {
    "default": None,  # jaxrod's own default: leave JAXROD_XLA_FLAGS unset
    "O1": f"{BASE} --xla_backend_optimization_level=1",
    "O0": f"{BASE} --xla_backend_optimization_level=0",
    "xla": "",
}

CHILD = r"""
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import numpy as np
import jax, jaxrod
from jaxrod.scenes import get_scene
name, n = sys.argv[1], int(sys.argv[2])
sc = get_scene(name)
kw = dict(dt=sc.dt) if sc.scheme is None else dict(dt=sc.dt, scheme=sc.scheme)
if sc.state0 is not None:
    kw["state0"] = sc.state0
t0 = cpu()
jax.block_until_ready(jaxrod.simulate(sc.model, n_steps=3, save_every=1, **kw).q)
first = cpu() - t0
runs = []
for _ in range(3):
    t0 = cpu()
    tr = jaxrod.simulate(sc.model, n_steps=n, save_every=n, **kw)
    jax.block_until_ready(tr.q)
    runs.append(cpu() - t0)
q = np.asarray(tr.q).ravel()
print("RESULT " + json.dumps({"first_cpu_s": first, "runs_cpu_s": runs, "q_last_norm": float(np.linalg.norm(q))}))
"""


def run_child(scene, steps, flags, pin):
    env = dict(os.environ, JAXROD_CACHE_DIR="off")
    if flags is None:
        env.pop("JAXROD_XLA_FLAGS", None)
    else:
        env["JAXROD_XLA_FLAGS"] = flags
    cmd = [sys.executable, "-c", CHILD, scene, str(steps)]
    if pin is not None:
        cmd = ["taskset", "-c", str(pin)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"child failed ({scene}, flags {flags!r}): {out.stderr[-2000:]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="cantilever-a1")
    ap.add_argument("--steps", type=int, default=200, help="steps of the timed runs (compile excluded)")
    ap.add_argument("--repeats", type=int, default=2, help="fresh processes per setting, interleaved")
    ap.add_argument("--settings", default="default,O1,O0,xla", help="comma-separated subset of " + ",".join(SETTINGS))
    ap.add_argument("--pin", type=int, default=None, help="run the children under taskset -c PIN")
    ap.add_argument("--json", default=None, help="also write the rows to this path")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.settings.split(",") if s.strip()]
    bad = [s for s in names if s not in SETTINGS]
    if bad:
        ap.error(f"--settings: unknown {bad}; allowed: {', '.join(SETTINGS)}")
    if args.steps < 1 or args.repeats < 1:
        ap.error(f"--steps ({args.steps}) and --repeats ({args.repeats}) must be >= 1")
    load0 = os.getloadavg()
    rows = {s: [] for s in names}
    for r in range(args.repeats):
        for s in names:
            res = run_child(args.scene, args.steps, SETTINGS[s], args.pin)
            rows[s].append(res)
            print(f"  repeat {r + 1}, {s}: first run {res['first_cpu_s']:.1f} s CPU, {args.steps} steps "
                  f"{min(res['runs_cpu_s']):.3f} s CPU (min of 3)", flush=True)
    load1 = os.getloadavg()
    print(f"\n{args.scene}: process CPU of a fresh process, cache off; load {load0[0]:.1f} -> {load1[0]:.1f}\n")
    print(f"| setting | JAXROD_XLA_FLAGS | first run (3 steps, compile included) [s CPU] | {args.steps} steps, compiled, min of 3 [s CPU] |")
    print("|---|---|---|---|")
    for s in names:
        firsts = " / ".join(f"{x['first_cpu_s']:.1f}" for x in rows[s])
        runs = " / ".join(f"{min(x['runs_cpu_s']):.3f}" for x in rows[s])
        flags = "(unset)" if SETTINGS[s] is None else f"`{SETTINGS[s]}`"
        print(f"| {s} | {flags} | {firsts} | {runs} |")
    norms = {s: [x["q_last_norm"] for x in rows[s]] for s in names}
    spread = max(max(v) for v in norms.values()) - min(min(v) for v in norms.values())
    print(f"\nfinal |q| across all runs: spread {spread:.2e} (the same trajectory at every setting)")
    if args.json:
        record = {
            "what": "first simulate (3 steps, compile included, cache off) and compiled run time per XLA flag setting, process CPU, fresh process per run, settings interleaved",
            "command": "python benchmarks/xla_opt_level.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "scene": args.scene, "steps": args.steps, "pin": args.pin,
            "load_average_start_end": [load0[0], load1[0]],
            "settings": {s: SETTINGS[s] for s in names},
            "rows": rows,
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
