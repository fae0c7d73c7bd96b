"""Fluidic soft finger of Till, Aloi & Rucker (2019) sec. 5.3 (figs. 18-19, spec 7.3): air against
water, on the Cosserat shooting model (scenes ``fluidic-finger`` and ``fluidic-finger-water``).

Usage::

    python benchmarks/robots_fluidic.py                 # both fluids, prints rows() as a table
    python benchmarks/robots_fluidic.py --plot f.png    # + tip x and pressure vs time, both fluids

Each fluid: 50 RK4 points, BDF-alpha -0.3, dt = 0.01 s, 2 s ramp (air: moles to 2e-4 mol; water:
volume to 2.65e-6 m^3) then 2.5 s free (450 steps), E = 20 kPa and d = 0.010286 m (spec 7.3 [D]
corrections), no gravity, no physical damping. The time loop is compiled by a first call and then
timed on a second, identical call (compile excluded); CPU time is process time (all threads).

Measured quantities: the tip's transverse (x) position; the "limit cycle" amplitude is half the
peak-to-peak range of tip x over the free phase (t > 2 s); the chamber gauge pressure is read
from the tip's axial strain, ``P = EA (v3(L) - 1) / A`` (exact here: at a free tip without
damping the cap force P A is the only axial load), checked against the solved pressure unknown
of the final state.
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse

import numpy as np

import jaxrod
from jaxrod.scenes import get_scene
from jaxrod.scenes.fluidic import FINGER
from robots import timed_twice  # benchmarks/ is on sys.path (script directory)

PAPER_RT = {"air": "about 28", "water": "26-32"}


def run(fluid: str, n_points: int = 50):
    """``(times, tip x [m], pressure [Pa], row dict)`` of one fluid's run."""
    scene = get_scene("fluidic-finger" if fluid == "air" else "fluidic-finger-water", n_points=n_points)
    m = scene.model
    kw = dict(dt=scene.dt, duration=scene.duration, scheme=scene.scheme)
    state0, _ = jaxrod.models.cosserat.solve_static_cosserat(m)
    def once():
        tr = jaxrod.simulate(m, state0=state0, **kw)
        tr.positions.block_until_ready()
        return tr

    traj, first, wall, cpu = timed_twice(once)
    times = np.asarray(traj.times)
    tip_x = np.asarray(traj.tip[:, 0])
    ch = m.chambers[0]
    P = float(m.rod.K_se[2]) * (np.asarray(traj.v[:, -1, 8]) - 1.0) / float(ch.area)
    P_final = float(m.chamber_pressures(traj.final.base_loads, times[-1])[0])
    free = times > FINGER["ramp_s"] + 1e-9
    amp = 0.5 * (tip_x[free].max() - tip_x[free].min())
    sim = float(times[-1] - times[0])
    row = {
        "robot": f"fluidic finger ({fluid}), {n_points} RK4 points",
        "sim_s": sim, "wall_s": wall, "cpu_s": cpu, "real_time_ratio": sim / wall,
        "paper_ratio": PAPER_RT[fluid], "compile": "excluded", "first_call_wall_s": first,
        "load_average": os.getloadavg()[0],
        "tip_x_amplitude_free_m": amp, "tip_x_mean_free_m": float(tip_x[free].mean()),
        "pressure_final_pa": P_final, "pressure_from_strain_final_pa": float(P[-1]),
        "pressure_amplitude_free_pa": 0.5 * float(P[free].max() - P[free].min()),
        "newton_iterations_per_step": float(np.mean(np.asarray(traj.stats.iterations))),
    }
    return times, tip_x, P, row


def rows(n_points: int = 50, plot: str | None = None):
    """One row per fluid, then the air/water amplitude ratio (paper: about 2)."""
    out, series = [], {}
    for fluid in ("air", "water"):
        t, x, P, row = run(fluid, n_points)
        series[fluid] = (t, x, P)
        out.append(row)
    ratio = out[0]["tip_x_amplitude_free_m"] / out[1]["tip_x_amplitude_free_m"]
    for r in out:
        r["air_water_amplitude_ratio"] = ratio
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
        for fluid, (t, x, P) in series.items():
            a1.plot(t, 1e3 * x, label=fluid)
            a2.plot(t, 1e-3 * P, label=fluid)
        a1.set_ylabel("tip x [mm]")
        a2.set_ylabel("gauge pressure [kPa]")
        a2.set_xlabel("t [s]")
        a1.legend()
        a1.set_title(f"fluidic finger (Till et al. fig. 19): air/water tip amplitude {ratio:.2f}")
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-points", type=int, default=50)
    ap.add_argument("--plot", help="save tip x and pressure vs time (PNG)")
    args = ap.parse_args()
    for r in rows(args.n_points, args.plot):
        print(" | ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
