"""PyElastica's continuum snake, side by side: jaxrod's ``der-snake`` scene and PyElastica's
``examples/ContinuumSnakeCase/continuum_snake.py`` set up with the same parameters.

Both sides: rod 0.35 m, 50 elements (51 DER nodes), radius 3.85 mm, 1000 kg/m^3, E 1 MPa,
G = E/1.5, gravity 9.80665 m/s^2, muscle wave (B-spline torques 3.4, 3.3, 4.2, 2.6, 3.6, 3.5 mN m,
one wave per body length, period 2 s, ramped in over one period), kinetic friction 0.892 forward,
1.338 backward, 1.784 sideways, no static friction.

Friction law on each side, named:
* PyElastica: ``RodPlaneContactWithAnisotropicFriction`` (1.0's contact that replaced the
  example's ``AnisotropicFrictionalPlane`` forcing; per element):
  ``-f_n (mu_a (u_hat . t) t + mu_side (u_hat . r) r)``, ``u_hat`` the unit slip, ``mu_a`` forward
  or backward by the sign of the axial slip, the sideways slip including the surface speed of the
  rod's spin; slip tolerance 1e-8 m/s; linear spring plane (k = 1 N/m, nu = 1e-6); position
  Verlet at dt = 0.1 ms; analytical linear damper 2e-3 /s.
* jaxrod: IMC floor (k 100 N/m, delta 0.5 mm) per node, ``law="projected"`` (the same formula,
  smoothed over nu = 1 mm/s, no spin term), forward/backward via ``mu_backward``, backward Euler
  at dt = 1 ms; also the ``"ellipse"`` and ``"componentwise"`` laws and isotropic friction on the
  same snake (other physics: listed to show how much the law matters).

Measured: centre-of-mass displacement along the initial axis (forward) and across it over the
run, the mean forward speed over the last two periods, and CPU seconds per simulated second
(process CPU; compile/JIT excluded: each side runs once to warm up, jaxrod a run of the same
length, PyElastica 1000 steps). Runs interleave jaxrod / PyElastica. PyElastica runs in its own
virtual environment (``--elastica-python``, default ``/work/venv-elastica-snake/bin/python``;
``python -m venv DIR && DIR/bin/pip install pyelastica``), in a subprocess.

    python benchmarks/der_snake.py [--periods 4] [--repeats 2] [--json benchmarks/results/der_snake.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

PARAMS = {"n_elem": 50, "length": 0.35, "radius": 0.35 * 0.011, "density": 1000.0, "E": 1e6,
          "period": 2.0, "wave_length": 1.0, "torques": [3.4e-3, 3.3e-3, 4.2e-3, 2.6e-3, 3.6e-3, 3.5e-3],
          "g": 9.80665, "froude": 0.1, "damping": 2e-3, "dt": 1e-4}


# ------------------------------------------------------------------------------------------------
# PyElastica child (runs under the peer's venv: imports numpy and elastica only)
# ------------------------------------------------------------------------------------------------
def elastica_child(final_time, sample_dt, frozen_spin=False):
    import numpy as np
    import elastica as ea

    p = PARAMS

    class Sim(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping, ea.CallBacks, ea.Contact):
        pass

    def build():
        sim = Sim()
        up, axis = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
        rod = ea.CosseratRod.straight_rod(p["n_elem"], np.zeros(3), axis, up, p["length"], p["radius"],
                                          p["density"], youngs_modulus=p["E"], shear_modulus=p["E"] / 1.5)
        sim.append(rod)
        if frozen_spin:  # diagnostic: an axial moment of inertia 1e6 x larger (no spin);
            # measured: the same speed (0.0276 m/s over the last 2 of 4 periods), so the spin term
            # does not explain a difference
            rod.inv_mass_second_moment_of_inertia[2, 2, :] *= 1e-6
        sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=-p["g"] * up)
        sim.add_forcing_to(rod).using(
            ea.MuscleTorques, base_length=p["length"], b_coeff=np.array(p["torques"]), period=p["period"],
            wave_number=2.0 * np.pi / p["wave_length"], phase_shift=0.0, rest_lengths=rod.rest_lengths,
            ramp_up_time=p["period"], direction=up, with_spline=True)
        mu = p["length"] / (p["period"] ** 2 * p["g"] * p["froude"])
        # PyElastica 1.0: the example's AnisotropicFrictionalPlane forcing became a rod-plane contact
        plane = ea.Plane(plane_origin=np.array([0.0, -p["radius"], 0.0]), plane_normal=up)
        sim.append(plane)
        sim.detect_contact_between(rod, plane).using(
            ea.RodPlaneContactWithAnisotropicFriction, k=1.0, nu=1e-6, slip_velocity_tol=1e-8,
            static_mu_array=np.zeros(3), kinetic_mu_array=np.array([mu, 1.5 * mu, 2.0 * mu]))
        sim.dampen(rod).using(ea.AnalyticalLinearDamper, damping_constant=p["damping"], time_step=p["dt"])
        samples = []
        every = max(1, int(round(sample_dt / p["dt"])))

        class Record(ea.CallBackBaseClass):
            def make_callback(self, system, time, current_step):
                if current_step % every == 0:
                    samples.append([float(time)] + system.compute_position_center_of_mass().tolist())

        sim.collect_diagnostics(rod).using(Record)
        sim.finalize()
        return sim, samples

    sim, _ = build()  # warm-up: numba compiles (or loads its cache)
    ea.integrate(ea.PositionVerlet(), sim, 1000 * p["dt"], 1000, progress_bar=False)
    sim, samples = build()
    n = int(round(final_time / p["dt"]))
    c0, w0 = time.process_time(), time.perf_counter()
    ea.integrate(ea.PositionVerlet(), sim, n * p["dt"], n, progress_bar=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    s = np.asarray(samples)
    # PyElastica frame (lateral x, up y, forward z) -> ours (forward x, lateral y, up z)
    com = np.stack([s[:, 3], s[:, 1], s[:, 2]], axis=1)
    import importlib.metadata
    return {"times": s[:, 0].tolist(), "com": com.tolist(), "cpu_s": cpu, "wall_s": wall, "steps": n,
            "version": importlib.metadata.version("pyelastica")}


# ------------------------------------------------------------------------------------------------
# jaxrod side
# ------------------------------------------------------------------------------------------------
def jaxrod_run(law, final_time, sample_dt, dt, isotropic=False):
    import jax
    import numpy as np

    import jaxrod
    from jaxrod.scenes.der_snake import der_snake

    kw = {"backward_ratio": 1.0, "lateral_ratio": 1.0} if isotropic else {}
    sc = der_snake(law=law, dt=dt, **kw)
    n, every = int(round(final_time / dt)), int(round(sample_dt / dt))

    def run():
        tr = jaxrod.simulate(sc.model, dt=dt, n_steps=n, save_every=every, scheme=sc.scheme)
        jax.block_until_ready(tr.positions)
        return tr

    c0, w0 = time.process_time(), time.perf_counter()
    run()
    first_cpu, first_wall = time.process_time() - c0, time.perf_counter() - w0
    c0, w0 = time.process_time(), time.perf_counter()
    tr = run()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    x = np.asarray(tr.positions)
    w = np.ones(x.shape[1])
    w[[0, -1]] = 0.5
    com = np.einsum("n,tnk->tk", w / w.sum(), x)
    return {"times": np.asarray(tr.times).tolist(), "com": com.tolist(), "cpu_s": cpu, "wall_s": wall,
            "first_call_cpu_s": first_cpu, "first_call_wall_s": first_wall, "steps": n,
            "newton_iterations_mean": float(np.asarray(tr.stats.iterations).mean()),
            "converged": bool(np.asarray(tr.stats.converged).all())}


def summary(r, period, final_time):
    import numpy as np

    t, c = np.asarray(r["times"]), np.asarray(r["com"])
    d = c - c[0]
    i0 = int(np.argmin(np.abs(t - (final_time - 2 * period))))
    speed = (d[-1, 0] - d[i0, 0]) / (t[-1] - t[i0])
    return {"forward_m": float(d[-1, 0]), "lateral_m": float(d[-1, 1]), "forward_speed_m_s": float(speed),
            "cpu_per_sim_s": r["cpu_s"] / final_time}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--periods", type=float, default=4.0, help="simulated time in periods (2 s each)")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved timed runs per side")
    ap.add_argument("--dt", type=float, default=1e-3, help="jaxrod time step [s]")
    ap.add_argument("--elastica-python", default="/work/venv-elastica-snake/bin/python")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--elastica-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--frozen-spin", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    final_time = args.periods * PARAMS["period"]
    if args.elastica_child:
        print(json.dumps(elastica_child(final_time, 0.1, args.frozen_spin)))
        return

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import cpu_name, git_describe, load_average, out, table

    results = {"params": PARAMS, "final_time_s": final_time, "jaxrod_dt_s": args.dt, "cpu": cpu_name(),
               "commit": git_describe(), "xla_flags": os.environ.get("JAXROD_XLA_FLAGS"), "runs": []}
    for k in range(args.repeats):
        for side in ("jaxrod", "pyelastica"):
            load = load_average()
            if side == "jaxrod":
                r = jaxrod_run("projected", final_time, 0.1, args.dt)
            else:
                ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                w0 = time.perf_counter()
                p = subprocess.run([args.elastica_python, os.path.abspath(__file__), "--elastica-child",
                                    "--periods", str(args.periods)], capture_output=True, text=True, check=True)
                ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["process_cpu_s"] = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
                r["process_wall_s"] = time.perf_counter() - w0
            r.update(side=side, repeat=k,
                     law="projected" if side == "jaxrod" else "RodPlaneContactWithAnisotropicFriction",
                     load=load, **summary(r, PARAMS["period"], final_time))
            results["runs"].append(r)
            out(f"{side:10s} run {k}: forward {r['forward_m']:.4f} m, speed {r['forward_speed_m_s']:.4f} m/s, "
                f"CPU {r['cpu_per_sim_s']:.3f} s per simulated s (load {load})")
    for law, iso in (("ellipse", False), ("componentwise", False), ("projected", True)):
        load = load_average()
        r = jaxrod_run(law, final_time, 0.1, args.dt, isotropic=iso)
        r.update(side="jaxrod", law=law + (" isotropic" if iso else ""), repeat=0, load=load,
                 **summary(r, PARAMS["period"], final_time))
        results["runs"].append(r)

    rows = []
    for r in results["runs"]:
        rows.append([r["side"], r["law"], r["repeat"], f"{r['forward_m']:.4f}", f"{r['lateral_m']:.4f}",
                     f"{r['forward_speed_m_s']:.4f}", f"{r['cpu_per_sim_s']:.3f}", f"{r['wall_s'] / final_time:.3f}",
                     r["load"][0] if r["load"] else "-"])
    out()
    out(f"Continuum snake, {final_time:g} s simulated ({args.periods:g} periods), {results['cpu']}, {results['commit']}")
    out(table(["side", "friction law", "run", "forward [m]", "lateral [m]", "speed, last 2 periods [m/s]",
               "CPU s / sim s", "wall s / sim s", "load"], rows))
    if args.json:
        for r in results["runs"]:  # keep the file small: samples every 0.5 s
            r["times"], r["com"] = r["times"][::5], r["com"][::5]
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
