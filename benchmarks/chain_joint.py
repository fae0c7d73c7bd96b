"""Rigid chains in joint coordinates (``JointSpaceSystem``, RK4) against MuJoCo's RK4, side by side.

Problems (issue 24, the MuJoCo peer comparison):

* the revolute chain of ``benchmarks/hybrid.py`` (``pendulum_chain``: n links of 0.3 m, 0.5 kg,
  principal inertias ``(0.01 i, i, i)``, ``i = m L^2 / 12``, hinges about y, released at rest
  0.7 rad off the vertical, gravity 9.81), n = 10, 30, 100, 1 s at dt = 5 ms; accuracy: the tip
  (free end of the last link) every 50 ms against MuJoCo RK4 at dt / 10;
* the double pendulum (two uniform 1 m, 1 kg rods, upper link horizontal, lower hanging), 20 s
  at dt = 1 and 10 ms; accuracy: the largest energy error over the run.

MuJoCo runs in a subprocess (``--mujoco-python``, default: this interpreter when it imports
``mujoco``; e.g. a venv of its own made as ``/work/shared/peers/mujoco/README.md`` says), on the
same MJCF models as ``/work/shared/peers/mujoco/chain_mujoco.py`` (generated here), timed by
``mj_step(m, d, nstep)`` inside the subprocess (process CPU of its C loop only; the start of the
subprocess is not timed). jaxrod: ``jax.jit`` of ``jaxrod.simulate(JointSpaceSystem(system),
...)`` (compile timed separately and excluded), then repeated calls. The two are interleaved:
for every case, ``--rounds`` rounds of (jaxrod, MuJoCo) measurements; each measurement repeats its
run until ~0.3 s of CPU; medians are reported with process CPU and wall time and the load average.

``--maximal`` also times the maximal-coordinate model (implicit average vector field, structured
Newton: ``simulate``'s defaults) on the same chains, interleaved, with its tip error.

``--euler`` also times ``SemiImplicitEuler`` against MuJoCo's ``Euler`` (semi-implicit Euler;
with no joint damping the two integrate identically) at the same dt.

Usage:  python benchmarks/chain_joint.py [--sizes 10,30,100] [--rounds 3] [--no-dp] [--maximal] [--euler]
        [--mujoco-python PATH] [--json benchmarks/results/chain_joint.json]
"""

from __future__ import annotations

import os
os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags, not jaxrod's faster-compile ones (docs/speed.md)

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAXROD_CACHE_DIR", "off")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.system import JointSpaceSystem, MultibodySystem, Revolute, RigidBody  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_sha, load_average  # noqa: E402
from hybrid import LINK_LENGTH, LINK_MASS, TILT, pendulum_chain  # noqa: E402

# The MuJoCo side: a script run by the MuJoCo interpreter, reading one JSON request on stdin.
MUJOCO_WORKER = r'''
import json, sys, time
import numpy as np
import mujoco

def chain_xml(n, dt, integ, L, m):
    i = m * L**2 / 12
    body = ""
    for k in reversed(range(n)):
        site = f'<site name="tip" pos="0 0 {-L}"/>' if k == n - 1 else ""
        body = (f'<body name="link{k}" pos="0 0 {0 if k == 0 else -L}">'
                f'<joint name="j{k}" type="hinge" axis="0 1 0" pos="0 0 0"/>'
                f'<inertial pos="0 0 {-L / 2}" mass="{m}" diaginertia="{i!r} {i!r} {0.01 * i!r}"/>'
                f"{site}{body}</body>")
    return (f'<mujoco model="chain{n}"><option timestep="{dt!r}" integrator="{integ}" gravity="0 0 -9.81">'
            f'<flag contact="disable" energy="enable"/></option><worldbody>{body}</worldbody></mujoco>')

def run(req):
    n, dt, integ = req["n"], req["dt"], req["integrator"]
    m = mujoco.MjModel.from_xml_string(chain_xml(n, dt, integ, req["L"], req["m"]))
    d = mujoco.MjData(m)
    qpos0 = np.array(req["qpos0"])
    sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "tip")
    steps = int(round(req["duration"] / dt))
    per = int(round(req["sample_dt"] / dt))
    out = {"mujoco": mujoco.__version__}
    if req.get("trajectory"):
        d.qpos[:] = qpos0
        mujoco.mj_forward(m, d)
        tips, E = [d.site_xpos[sid].copy()], [float(d.energy[0] + d.energy[1])]
        for _ in range(steps // per):
            mujoco.mj_step(m, d, nstep=per)
            mujoco.mj_forward(m, d)
            tips.append(d.site_xpos[sid].copy())
            E.append(float(d.energy[0] + d.energy[1]))
        out["tip"] = np.array(tips).tolist()
        out["energy"] = E
    if req.get("timing"):
        reps = 1
        while True:  # repeat the run until ~target CPU seconds
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(reps):
                mujoco.mj_resetData(m, d)
                d.qpos[:] = qpos0
                mujoco.mj_step(m, d, nstep=steps)
            c, w = time.process_time() - c0, time.perf_counter() - w0
            if c >= req["target_cpu"] or reps >= 100000:
                break
            reps = max(reps * 2, int(reps * req["target_cpu"] / max(c, 1e-6)) + 1)
        out["cpu_us_per_step"] = 1e6 * c / (reps * steps)
        out["wall_us_per_step"] = 1e6 * w / (reps * steps)
    return out

for line in sys.stdin:
    if line.strip():
        print(json.dumps(run(json.loads(line))), flush=True)
'''


class MuJoCo:
    """A MuJoCo subprocess answering one JSON request per line (kept alive between requests)."""

    def __init__(self, python):
        self.proc = subprocess.Popen([python, "-c", MUJOCO_WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})

    def __call__(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the MuJoCo subprocess ended without an answer")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def mujoco_python(requested):
    """The interpreter that runs MuJoCo, or None when none is found."""
    cands = [requested] if requested else [sys.executable, "/work/venv-mujoco/bin/python"]
    for py in cands:
        if py and os.path.exists(py):
            if subprocess.run([py, "-c", "import mujoco"], capture_output=True).returncode == 0:
                return py
    return None


def double_pendulum(L=1.0, m=1.0):
    """Two uniform rods (hinges about y), upper link horizontal toward +x, lower hanging: the
    ``n = 2`` chain with the links' own angles (MuJoCo qpos = (-pi/2, +pi/2))."""
    i = m * L**2 / 12
    e1, e2 = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, -1.0])
    q1 = [1.0, 0.0, 0.0, 0.0]  # body x along e1
    q2 = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]  # pi/2 about y maps x to (0, 0, -1) = e2
    bodies = [RigidBody("upper", m, [0.01 * i, i, i], position=0.5 * L * e1, orientation=q1),
              RigidBody("lower", m, [0.01 * i, i, i], position=L * e1 + 0.5 * L * e2, orientation=q2)]
    joints = [Revolute(None, "upper", point=(0, 0, 0), axis=(0, 1, 0)),
              Revolute("upper", "lower", point=L * e1, axis=(0, 1, 0))]
    return MultibodySystem(bodies, joints, gravity=[0.0, 0.0, -9.81])


def time_jaxrod(fn, arg, steps, target_cpu=0.3):
    reps = 1
    while True:
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(reps):
            out = fn(arg)
        jax.block_until_ready(out)
        c, w = time.process_time() - c0, time.perf_counter() - w0
        if c >= target_cpu or reps >= 10000:
            return 1e6 * c / (reps * steps), 1e6 * w / (reps * steps)
        reps = max(reps * 2, int(reps * target_cpu / max(c, 1e-6)) + 1)


def compiled_run(js, dt, steps, save_every, scheme="rk4"):
    def run(model):
        tr = jaxrod.simulate(model, dt=dt, n_steps=steps, save_every=save_every, scheme=scheme, throw=False)
        return tr.positions, tr.frames, tr.q, tr.v, tr.valid

    w0, c0 = time.perf_counter(), time.process_time()
    fn = jax.jit(run).lower(js).compile()
    return fn, (time.perf_counter() - w0, time.process_time() - c0)


def med(xs):
    return float(np.median(xs))


def timing(res, name, digits):
    """``'12.3 us/step CPU (45.6 wall)'``: the medians of ``res``'s lists for ``name``."""
    cpu, wall = med(res[f"{name}_cpu_us_per_step"]), med(res[f"{name}_wall_us_per_step"])
    return f"{cpu:.{digits}f} us/step CPU ({wall:.{digits}f} wall)"


def maximal_run(system, dt, steps, save_every):
    """The maximal-coordinate model (implicit AVF, structured Newton: ``simulate``'s defaults)."""
    def run(model):
        tr = jaxrod.simulate(model, dt=dt, n_steps=steps, save_every=save_every, throw=False)
        return tr.positions, tr.frames

    w0, c0 = time.perf_counter(), time.process_time()
    fn = jax.jit(run).lower(system).compile()
    return fn, (time.perf_counter() - w0, time.process_time() - c0)


def interleaved(res, rounds, fn, arg, steps, mj, common, others=(), mujoco_others=()):
    """``rounds`` rounds of (jaxrod, each of ``others`` = (name, fn, arg), MuJoCo RK4, each MuJoCo
    integrator of ``mujoco_others``) timings, stored in ``res`` as lists of CPU / wall
    microseconds per step, and the median CPU ratio of jaxrod to MuJoCo RK4."""
    mujoco = ("RK4",) + tuple(mujoco_others) if mj is not None else ()
    rows = {"jaxrod": [], **{name: [] for name, _, _ in others}, "mujoco_rk4": [],
            **{f"mujoco_{i.lower()}": [] for i in mujoco}}
    for _ in range(rounds):
        rows["jaxrod"].append(time_jaxrod(fn, arg, steps))
        for name, f, x in others:
            rows[name].append(time_jaxrod(f, x, steps))
        for integ in mujoco:
            r = mj(integrator=integ, timing=True, **common)
            rows[f"mujoco_{integ.lower()}"].append((r["cpu_us_per_step"], r["wall_us_per_step"]))
    for name, xs in rows.items():
        if xs:
            res[f"{name}_cpu_us_per_step"] = [c for c, _ in xs]
            res[f"{name}_wall_us_per_step"] = [w for _, w in xs]
    if rows["mujoco_rk4"]:
        res["cpu_ratio"] = med(res["jaxrod_cpu_us_per_step"]) / med(res["mujoco_rk4_cpu_us_per_step"])
    res["load_after"] = load_average()


def chain_case(n, mj, rounds, maximal=False, euler=False):
    dt, T, sample = 0.005, 1.0, 0.05
    steps, se = int(round(T / dt)), int(round(sample / dt))
    js = JointSpaceSystem(pendulum_chain(n))
    fn, comp = compiled_run(js, dt, steps, se)
    pos, frames, q, v, valid = jax.block_until_ready(fn(js))
    tip = np.asarray(pos)[:, -1] + 0.5 * LINK_LENGTH * np.asarray(frames)[:, -1, 0, :]
    # our own dt/10 run (cross-check of the reference)
    fn10, _ = compiled_run(js, dt / 10, 10 * steps, 10 * se)
    p10, f10 = (np.asarray(x) for x in jax.block_until_ready(fn10(js))[:2])
    tip10 = p10[:, -1] + 0.5 * LINK_LENGTH * f10[:, -1, 0, :]
    res = {"n": n, "dt": dt, "steps": steps, "compile_wall_s": comp[0], "compile_cpu_s": comp[1],
           "n_v": js.n_v, "tip_jaxrod": tip.tolist()}
    qpos0 = [-TILT] + [0.0] * (n - 1)
    common = dict(n=n, L=LINK_LENGTH, m=LINK_MASS, qpos0=qpos0, duration=T, sample_dt=sample, target_cpu=0.3)
    if mj is not None:
        ref = np.array(mj(dt=dt / 10, integrator="RK4", trajectory=True, **common)["tip"])
        mj_rk4 = mj(dt=dt, integrator="RK4", trajectory=True, **common)
        res["tip_reference"] = ref.tolist()
        res["err_jaxrod_m"] = float(np.max(np.linalg.norm(tip - ref, axis=1)))
        res["err_mujoco_rk4_m"] = float(np.max(np.linalg.norm(np.array(mj_rk4["tip"]) - ref, axis=1)))
        res["jaxrod_dt10_vs_mujoco_dt10_m"] = float(np.max(np.linalg.norm(tip10 - ref, axis=1)))
        res["jaxrod_vs_mujoco_rk4_same_dt_m"] = float(np.max(np.linalg.norm(tip - np.array(mj_rk4["tip"]), axis=1)))
    res["err_jaxrod_vs_own_dt10_m"] = float(np.max(np.linalg.norm(tip - tip10, axis=1)))
    if maximal:
        system = pendulum_chain(n)
        fnm, compm = maximal_run(system, dt, steps, se)
        pm, fm = (np.asarray(x) for x in jax.block_until_ready(fnm(system)))
        tipm = pm[:, -1] + 0.5 * LINK_LENGTH * fm[:, -1, 0, :]
        res["maximal_compile_cpu_s"], res["maximal_compile_wall_s"] = compm[1], compm[0]
        res["err_maximal_m"] = float(np.max(np.linalg.norm(tipm - (ref if mj is not None else tip10), axis=1)))
    others = (("maximal", fnm, system),) if maximal else ()
    if euler:  # the one-evaluation scheme against MuJoCo's Euler (semi-implicit; no damping here)
        fne, _ = compiled_run(js, dt, steps, se, scheme="semi_implicit_euler")
        pe, fe = (np.asarray(x) for x in jax.block_until_ready(fne(js))[:2])
        tipe = pe[:, -1] + 0.5 * LINK_LENGTH * fe[:, -1, 0, :]
        others = others + (("euler", fne, js),)
        if mj is not None:
            mje = np.array(mj(dt=dt, integrator="Euler", trajectory=True, **common)["tip"])
            res["err_euler_m"] = float(np.max(np.linalg.norm(tipe - ref, axis=1)))
            res["err_mujoco_euler_m"] = float(np.max(np.linalg.norm(mje - ref, axis=1)))
            res["euler_vs_mujoco_euler_same_dt_m"] = float(np.max(np.linalg.norm(tipe - mje, axis=1)))
    interleaved(res, rounds, fn, js, steps, mj, dict(common, dt=dt), others, ("Euler",) if euler else ())
    line = f"chain n={n}: compile {comp[1]:.1f} s CPU / {comp[0]:.1f} s wall; jaxrod RK4 {timing(res, 'jaxrod', 1)}"
    if mj is not None:
        line += (f", MuJoCo RK4 {timing(res, 'mujoco_rk4', 1)}, ratio {res['cpu_ratio']:.2f}; tip err vs ref: "
                 f"jaxrod {res['err_jaxrod_m']:.2e} m, MuJoCo {res['err_mujoco_rk4_m']:.2e} m; jaxrod vs MuJoCo "
                 f"at the same dt {res['jaxrod_vs_mujoco_rk4_same_dt_m']:.1e} m")
    if maximal:
        line += f"; maximal AVF {timing(res, 'maximal', 1)}, tip err {res['err_maximal_m']:.2e} m"
    if euler:
        line += f"; jaxrod semi-implicit Euler {timing(res, 'euler', 1)}"
        if mj is not None:
            line += (f", MuJoCo Euler {timing(res, 'mujoco_euler', 1)}; tip err {res['err_euler_m']:.2e} / "
                     f"{res['err_mujoco_euler_m']:.2e} m, apart {res['euler_vs_mujoco_euler_same_dt_m']:.1e} m")
    print(line + f"; load {load_average()}", flush=True)
    return res


def dp_case(dt, mj, rounds):
    T = 20.0
    steps = int(round(T / dt))
    se = int(round(0.1 / dt))
    js = JointSpaceSystem(double_pendulum())
    fn, comp = compiled_run(js, dt, steps, se)
    pos, frames, q, v, valid = jax.block_until_ready(fn(js))
    E = np.asarray(js.energy(q, v))
    res = {"dt": dt, "steps": steps, "compile_cpu_s": comp[1], "compile_wall_s": comp[0],
           "energy_err_max_J": float(np.max(np.abs(E - E[0]))), "energy_jaxrod": E.tolist()}
    common = dict(n=2, L=1.0, m=1.0, qpos0=[-np.pi / 2, np.pi / 2], duration=T, sample_dt=0.1, target_cpu=0.3)
    if mj is not None:
        r = mj(dt=dt, integrator="RK4", trajectory=True, **common)
        Em = np.array(r["energy"])
        res["mujoco_energy_err_max_J"] = float(np.max(np.abs(Em - Em[0])))
        res["energy0_jaxrod_J"], res["energy0_mujoco_J"] = float(E[0]), float(Em[0])
    interleaved(res, rounds, fn, js, steps, mj, dict(common, dt=dt))
    line = f"double pendulum dt {dt}: jaxrod RK4 {timing(res, 'jaxrod', 2)}, energy err {res['energy_err_max_J']:.2e} J"
    if mj is not None:
        line += (f"; MuJoCo RK4 {timing(res, 'mujoco_rk4', 2)}, energy err {res['mujoco_energy_err_max_J']:.2e} J; "
                 f"ratio {res['cpu_ratio']:.2f}")
    print(line + f"; load {load_average()}", flush=True)
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10,30,100")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-dp", action="store_true", help="skip the double pendulum")
    p.add_argument("--euler", action="store_true",
                   help="also time SemiImplicitEuler against MuJoCo's Euler on the chains (same dt)")
    p.add_argument("--maximal", action="store_true",
                   help="also time the maximal-coordinate model (implicit AVF, the default of simulate) on the chains")
    p.add_argument("--mujoco-python", default=None)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    py = mujoco_python(a.mujoco_python)
    mj = MuJoCo(py) if py else None
    out = {"git": git_sha(), "jax": jax.__version__, "python_mujoco": py, "load_start": load_average(),
           "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "chains": {}, "double_pendulum": {}}
    if mj is not None:
        out["mujoco"] = mj(n=1, dt=0.01, integrator="RK4", L=0.3, m=0.5, qpos0=[0.0], duration=0.01, sample_dt=0.01,
                           target_cpu=0.0)["mujoco"]
    found = out.get("mujoco", "not found: jaxrod only")
    print(f"jax {jax.__version__}, MuJoCo {found}, load {load_average()}", flush=True)
    try:
        for n in [int(s) for s in a.sizes.split(",") if s]:
            out["chains"][str(n)] = chain_case(n, mj, a.rounds, a.maximal, a.euler)
        if not a.no_dp:
            for dt in (1e-3, 1e-2):
                out["double_pendulum"][str(dt)] = dp_case(dt, mj, a.rounds)
    finally:
        if mj is not None:
            mj.close()
    out["load_end"] = load_average()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"load at end {load_average()}")


if __name__ == "__main__":
    main()
