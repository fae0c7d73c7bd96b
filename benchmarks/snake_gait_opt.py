"""A small gait optimiser for the snake robot (Transeth et al. 2008) with optax: the serpenoid
lateral-undulation parameters (amplitude A_h, joint phase offset delta_h, frequency omega_h) that
maximise the forward (+x) travel of the centre of mass over a short horizon, on orthotropic
friction (0.1 along / 0.5 across), by gradient ascent through the whole Moreau run (each step's
contact solve differentiated implicitly at its fixed point).

The optimised model uses ``MoreauOptions(compliance=1e-2)`` (``--compliance``): rigid Coulomb
contact on two spheres per link can have many solutions with different velocities when it slides,
and then no derivative; the compliance makes the solution, and the gradient, unique (its
indeterminate directions converge at a rate ~ 1 - c per sweep, so a small c costs many sweeps). The
result is checked by forward runs of the rigid (paper's) model, initial against optimised gait,
over the horizon and over a whole gait period of the initial gait (4.5 s).

Start: the paper's LU gait (A_h = 30 deg, delta_h = -50 deg, omega_h = 80 deg/s) and its curved start
posture, which stays the start posture of every gait tried (a new gait's references jump at t = 0 and
the PD controllers follow): the question asked is which gait goes farthest from this posture.

    nice -n 10 python benchmarks/snake_gait_opt.py [--links 11] [--horizon 1.0] [--iterations 8] [--no-write]

Writes ``results/snake_gait_opt.json`` (learning curve, gaits, check runs).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _common import cpu_name, git_sha, load_average, out, table, write_result

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.integrate.moreau import MoreauOptions  # noqa: E402
from jaxrod.scenes.snake import SerpenoidGait, snake_model  # noqa: E402

DT = 5e-4  # 1 ms steps blow up on some gaits (the sidewinding scene fails at 1.8 s with them)
#: parameter bounds [rad], [rad], [rad/s]
LOWER = np.radians([5.0, -120.0, 20.0])
UPPER = np.radians([60.0, -10.0, 160.0])


def gait_of(theta):
    a, d, w = theta[0], theta[1], theta[2]
    return SerpenoidGait(amplitude_h=a, delta_h=d, omega_h=w)


def travel(model, theta, n_steps):
    """Centre-of-mass x displacement [m] after ``n_steps`` with the gait ``theta``."""
    m = eqx.tree_at(lambda c: c.controller.gait, model, gait_of(theta))
    tr = jaxrod.simulate(m, dt=DT, n_steps=n_steps, save_every=n_steps)
    return jnp.mean(tr.positions[-1, :, 0] - tr.positions[0, :, 0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=11)
    ap.add_argument("--horizon", type=float, default=1.0, help="optimised horizon [s]")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.05, help="Adam step [rad, rad, rad/s]")
    ap.add_argument("--compliance", type=float, default=1e-2, help="MoreauOptions.compliance of the optimised model")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    out(f"{cpu_name()}, load {load_average()}, {args.links} links, horizon {args.horizon:g} s at dt {DT * 1e3:g} ms")
    n = int(round(args.horizon / DT))
    theta0 = jnp.asarray(np.radians([30.0, -50.0, 80.0]))
    soft = snake_model(args.links, gait=gait_of(theta0),
                       options=MoreauOptions(compliance=args.compliance, rtol=1e-6, max_iterations=20000))
    value_and_grad = jax.jit(jax.value_and_grad(lambda th: travel(soft, th, n)))
    opt = optax.adam(args.lr)
    state = opt.init(theta0)
    theta, curve = theta0, []
    c0, t0 = time.process_time(), time.perf_counter()
    for k in range(args.iterations + 1):
        v, g = value_and_grad(theta)
        if not (np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g)))):
            out(f"  {k:2d}: the run or its gradient is not finite at {np.degrees(np.asarray(theta)).round(2)}; stopping")
            break
        curve.append({"iteration": k, "travel_m": float(v), "theta": np.asarray(theta).tolist(),
                      "grad": np.asarray(g).tolist(), "cpu_s": time.process_time() - c0,
                      "wall_s": time.perf_counter() - t0})
        out(f"  {k:2d}: travel {float(v):+.4f} m, A_h {np.degrees(float(theta[0])):6.2f} deg, delta_h "
            f"{np.degrees(float(theta[1])):7.2f} deg, omega_h {np.degrees(float(theta[2])):6.2f} deg/s, "
            f"grad {np.asarray(g).round(4).tolist()}  ({time.perf_counter() - t0:.0f} s)")
        if k == args.iterations:
            break
        upd, state = opt.update(-g, state, theta)  # ascent
        theta = jnp.clip(optax.apply_updates(theta, upd), LOWER, UPPER)
    best = max(curve, key=lambda c: c["travel_m"])
    theta_best = jnp.asarray(best["theta"])
    rigid = snake_model(args.links, gait=gait_of(theta0),
                        options=MoreauOptions(rtol=1e-6, max_iterations=20000))
    rows, checks = [], {}
    for horizon in (args.horizon, 4.5):
        steps = int(round(horizon / DT))
        for name, th in (("initial", theta0), ("optimised", theta_best)):
            d = float(travel(rigid, th, steps))
            checks[f"{name} {horizon:g} s"] = d
            rows.append([name, f"{horizon:g}", f"{d:+.4f}"])
    out("")
    out(table(["gait (rigid contact)", "horizon [s]", "CoM x travel [m]"], rows))
    result = {"commit": git_sha(), "cpu": cpu_name(), "links": args.links, "horizon_s": args.horizon, "dt": DT,
              "lr": args.lr, "compliance": args.compliance, "curve": curve, "best": best, "checks_rigid": checks,
              "optimiser_cpu_s": curve[-1]["cpu_s"], "load_end": load_average()}
    if not args.no_write:
        write_result("snake_gait_opt.json", result)


if __name__ == "__main__":
    main()
