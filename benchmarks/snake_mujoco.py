"""The Aiko snake of Transeth et al. (2008) in MuJoCo beside jaxrod (issue 23, item 7): the same
snake as an MJCF generated from jaxrod's scene model, the paper's gaits for 15 s on both sides,
direction and distance of each gait, CPU per simulated second, and an incline check of stiction.

The MJCF (:func:`snake_mjcf`) is written from the jaxrod :class:`~jaxrod.system.contact.ContactSystem`
of the scene (``jaxrod.scenes.snake``), not from retyped numbers:

* 11 bodies nested link 1 -> link 11; link 1 carries a free joint; each further link two hinges
  at the joint point ``(-L/2, 0, 0)``: ``h`` about ``z`` then ``v`` about ``y``, so that
  ``R_i^T R_{i+1} = R_z(qpos_h) R_y(qpos_v)``: the hinge coordinates ARE jaxrod's cardan angles
  ``alpha_h, alpha_v`` (``cardan_angles``), and the hinge axes are ``e_z`` of link ``i`` and ``e_y``
  of link ``i + 1``, the axes about which ``CardanPD`` applies its torques. Masses and diagonal
  inertias from the jaxrod bodies (explicit ``<inertial>``); ``L`` from the joint points.
* contact: per link ONE capsule whose two end spheres are the link's two jaxrod contact spheres
  (same body-fixed centres ``(+-L_GS, 0, 0)``, same radius). MuJoCo's capsule-plane collider makes
  one contact per end sphere, at the sphere's lowest point, so on the flat ground the contact
  points are the paper's. Only explicit ``<pair>`` capsule/floor contacts exist (every geom has
  ``contype = conaffinity = 0``): no link-link contact, as in the paper and in jaxrod.
* friction: ``condim 3``, ``cone="elliptic"``, ``<pair friction="mu_along mu_across ...">``.
  MuJoCo's elliptic cone is ``(f_1/mu_1)^2 + (f_2/mu_2)^2 <= f_n^2`` in the CONTACT frame, and for
  capsule-plane contacts that frame's first tangent is the horizontal projection of the capsule
  axis (checked here and in tests/test_snake_mujoco.py): exactly the paper's friction frame
  ``Pi_i`` (``e_x^Pi`` the horizontal projection of the link axis, shared by both spheres of the
  link). So MuJoCo CAN express the paper's body-fixed orthotropic ellipse on flat ground with
  capsules. What it cannot express: (1) hard set-valued contact: MuJoCo's contacts are soft
  (``solref``/``solimp`` regularisation), the normal penetrates by ~1 mm under the weight and a
  sticking contact under a tangential load creeps (this script's incline case measures it); (2)
  the same with spheres: sphere-plane contact frames are fixed in the WORLD (tangent 1 = world
  ``y`` here), so per-sphere anisotropy would be world-fixed, not body-fixed (the
  sphere-geom row of the orthotropic gait shows the consequence); (3) MuJoCo's friction
  solution minimises its convex (regularised Gauss) problem over the elliptic cone: a sliding
  contact's force lies on the ellipse along the maximum-dissipation direction (the paper's law;
  :func:`friction_law_check` measures it within 0.5 deg), but below the cone the force grows with
  slip velocity (no exact stick: creep), and sliding contacts are pushed apart (a normal-force
  spike and lift-off when a sled is launched at 1 m/s), unlike Coulomb complementarity; (4) the
  paper's rolling friction (jaxrod's default ``mu_V = 0``: not used, ``condim 3``; MuJoCo's
  ``condim 6`` couples rolling torques with sliding in one cone). Impacts: MuJoCo has no
  restitution coefficient (soft contacts, ``solref`` damping ratio 1: ~inelastic).
* control: the PD law of ``CardanPD`` (gains read from the scene's controller) as ONE MuJoCo
  ``general`` actuator per hinge, ``gain kp``, ``bias (0, -kp, -kd)``, ``ctrl = alpha_r + (kd/kp)
  rate_r``: force ``= kp (alpha_r - alpha) + kd (rate_r - alpha_dot)``, jaxrod's law with the
  sign of a generalised force. Difference: jaxrod's yaw rate is ``omega_J . e_z^{B_{i+1}} = cos
  (alpha_v) alpha_h_dot``, MuJoCo's hinge rate ``alpha_h_dot`` (1.5 % of the 0.2 N m s damping
  at ``alpha_v = 10 deg``; 0 for undulation). The references ``(alpha_r, rate_r)`` are jaxrod's
  ``SerpenoidGait`` (soft start included), evaluated once for every step time and set as
  ``d.ctrl`` before each ``mj_step`` (a Python loop; its own cost is measured and reported).
  MuJoCo evaluates the actuators at the step's start time, jaxrod at the midpoint.
* integrator ``implicitfast`` (the actuator damping implicit), ``dt`` 0.25 ms (the paper's); the
  initial state is jaxrod's (link 1's pose, the cardan angles of the curved or straight start),
  at rest, the snake ``sink`` = 1e-9 m into the ground as jaxrod's.

Contact settings compared: ``default`` (MuJoCo's ``solref 0.02 1``, ``solimp 0.9 0.95 0.001``,
``impratio 1``) and ``stiff`` (``solref 0.002 1``, ``impratio 10``: 10x stiffer contact, 10x
stiffer friction than normal; still soft).

jaxrod side: the scenes' models (``snake_model`` / ``snake_sidewinding``, Moreau midpoint, set-valued
Signorini contact and the paper's ellipse friction law, exact stick), with ``MoreauOptions(rtol=1e-6,
max_iterations=5000)`` at dt 0.5 ms as ``benchmarks/snake_paper.py`` (the scenes' dt; 0.25 ms
doubles the cost). Compile excluded: a 0.05 s run of the same structure first.

Runs are interleaved per gait (MuJoCo default, jaxrod, MuJoCo stiff, MuJoCo at the extra steps,
jaxrod at the paper's 0.25 ms for ``--jr-fine-duration`` s), each timed by process CPU
(``time.process_time``) and wall time, with ``os.getloadavg()`` before and after. Then the incline
(:func:`incline`) and the sled (:func:`friction_law_check`). About 10 min wall at load 11.

    python benchmarks/snake_mujoco.py [--duration 15] [--mj-dt 2.5e-4] [--jr-dt 5e-4] [--only TEXT]
                                      [--mj-dts-extra 5e-4,1e-3] [--jr-fine-duration 3] [--no-write]

Writes ``benchmarks/results/snake_mujoco.json`` (link 6 and centroid every 0.1 s on every side).
"""

from __future__ import annotations

import os

os.environ.setdefault("JAXROD_XLA_FLAGS", "")  # run speed with XLA's default flags (docs/speed.md)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_name, git_sha, load_average, out, table  # noqa: E402

#: MuJoCo contact settings compared (solref, solimp, impratio)
CONTACT = {
    "default": {"solref": (0.02, 1.0), "solimp": (0.9, 0.95, 0.001), "impratio": 1.0},
    "stiff": {"solref": (0.002, 1.0), "solimp": (0.9, 0.95, 0.001), "impratio": 10.0},
}
TRACK = 5  # link 6, the paper's measured link


def _quat_to_R(q):
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def snake_spec(cs):
    """What the MJCF needs, read from a jaxrod snake ``ContactSystem`` (numpy; no compilation).

    Returns a dict: ``mass`` ``(n,)``, ``inertia`` ``(n, 3)`` (diagonal, body frame), ``x0``
    ``(n, 3)``, ``R0`` ``(n, 3, 3)``, ``half_length`` (``L/2`` from the joint points),
    ``sphere_local`` ``(n, 2, 3)`` (body frame), ``radius``, ``mu`` ``(2,)`` (along, across),
    ``direction_local`` ``(n, 2, 3)``, ``alpha0`` ``(n - 1, 2)`` (cardan angles of the start),
    ``gravity``, ``gains`` (kp_h, kd_h, kp_v, kd_v), ``gait`` (the ``SerpenoidGait``)."""
    sysm = cs.system
    bodies = sysm.bodies
    n = len(bodies)
    names = [b.name for b in bodies]
    mass = np.array([float(b.mass) for b in bodies])
    I = np.array([np.asarray(b.inertia) for b in bodies])
    if np.max(np.abs(I - np.array([np.diag(np.diag(a)) for a in I]))) > 0:
        raise ValueError("snake_spec: the link inertias must be diagonal in the body frame")
    x0 = np.array([np.asarray(b.position) for b in bodies])
    R0 = np.array([_quat_to_R(np.asarray(b.orientation)) for b in bodies])
    sb = np.asarray(cs.sphere_body)
    if not all(np.sum(sb == i) == 2 for i in range(n)):
        raise ValueError("snake_spec: every link must carry exactly two contact spheres")
    sphere_local = np.array([np.asarray(cs.sphere_centre)[sb == i] for i in range(n)])
    direction_local = np.array([np.asarray(cs.sphere_direction)[sb == i] for i in range(n)])
    radius = np.unique(np.asarray(cs.radius))
    mu = np.unique(np.asarray(cs.mu), axis=0)
    if radius.size != 1 or mu.shape[0] != 1:
        raise ValueError(f"snake_spec: one radius and one (mu_along, mu_across) for all spheres, got {radius}, {mu}")
    halves = []
    for j in sysm.joints:
        i1, i2 = names.index(j.body1), names.index(j.body2)
        if i2 != i1 + 1:
            raise ValueError("snake_spec: joints must chain link i to link i + 1")
        p = np.asarray(j.point)
        halves += [R0[i1].T @ (p - x0[i1]), -(R0[i2].T @ (p - x0[i2]))]
    halves = np.array(halves)
    half = float(np.mean(halves[:, 0]))
    if np.max(np.abs(halves - [half, 0.0, 0.0])) > 1e-12:
        raise ValueError("snake_spec: the joint points must lie on the link axes at +-L/2")
    from jaxrod.scenes.snake import cardan_angles
    ah, av, _, _ = cardan_angles(R0, np.zeros((n, 3)))
    ctl = cs.controller
    return {"n": n, "mass": mass, "inertia": np.array([np.diag(a) for a in I]), "x0": x0, "R0": R0,
            "half_length": half, "sphere_local": sphere_local, "radius": float(radius[0]), "mu": mu[0],
            "direction_local": direction_local, "alpha0": np.stack([np.asarray(ah), np.asarray(av)], 1),
            "gravity": np.asarray(sysm.gravity, float),
            "gains": {k: float(getattr(ctl, k)) for k in ("kp_h", "kd_h", "kp_v", "kd_v")}, "gait": ctl.gait}


def _v(a):
    return " ".join(repr(float(x)) for x in np.ravel(a))


def snake_mjcf(spec, dt=2.5e-4, contact="default", integrator="implicitfast", gravity=None, mu=None):
    """The MJCF string of the snake (module docstring). ``contact``: a key of :data:`CONTACT` or a
    dict like its values; ``gravity``/``mu`` override the spec's (the incline case)."""
    c = CONTACT[contact] if isinstance(contact, str) else contact
    g = spec["gravity"] if gravity is None else np.asarray(gravity, float)
    mu = spec["mu"] if mu is None else np.asarray(mu, float)
    n, half, r = spec["n"], spec["half_length"], spec["radius"]
    gains = spec["gains"]
    body = ""
    for i in reversed(range(n)):
        s = spec["sphere_local"][i]
        geom = (f'<geom name="cap{i + 1}" type="capsule" fromto="{_v(s[0])} {_v(s[1])}" size="{r!r}" '
                f'contype="0" conaffinity="0" mass="0"/>')
        inertial = f'<inertial pos="0 0 0" mass="{_v(spec["mass"][i])}" diaginertia="{_v(spec["inertia"][i])}"/>'
        if i == 0:
            joints, pos = '<freejoint name="root"/>', ""
        else:
            joints = (f'<joint name="h{i}" type="hinge" axis="0 0 1" pos="{-half!r} 0 0"/>'
                      f'<joint name="v{i}" type="hinge" axis="0 1 0" pos="{-half!r} 0 0"/>')
            pos = f' pos="{2 * half!r} 0 0"'
        body = f'<body name="link{i + 1}"{pos}>{joints}{inertial}{geom}{body}</body>'
    pairs = "".join(
        f'<pair geom1="cap{i + 1}" geom2="floor" condim="3" friction="{_v(mu)} 0.005 0.0001 0.0001" '
        f'solref="{_v(c["solref"])}" solimp="{_v(c["solimp"])}"/>' for i in range(n))
    acts = "".join(
        f'<general name="a{k}{i}" joint="{k}{i}" gaintype="fixed" biastype="affine" '
        f'gainprm="{gains["kp_" + k]!r}" biasprm="0 {-gains["kp_" + k]!r} {-gains["kd_" + k]!r}"/>'
        for i in range(1, n) for k in ("h", "v"))
    return (f'<mujoco model="aiko_snake"><compiler angle="radian"/>'
            f'<option timestep="{dt!r}" integrator="{integrator}" cone="elliptic" impratio="{_v(c["impratio"])}" '
            f'gravity="{_v(g)}"/>'
            f'<worldbody><geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="0"/>{body}</worldbody>'
            f"<contact>{pairs}</contact><actuator>{acts}</actuator></mujoco>")


def initial_qpos(m, spec):
    """qpos of jaxrod's start: link 1's pose (free joint) and the cardan angles."""
    import mujoco
    q = np.zeros(m.nq)
    q[:3] = spec["x0"][0]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, spec["R0"][0].ravel())
    q[3:7] = quat
    for i in range(1, spec["n"]):
        q[m.jnt_qposadr[m.joint(f"h{i}").id]] = spec["alpha0"][i - 1, 0]
        q[m.jnt_qposadr[m.joint(f"v{i}").id]] = spec["alpha0"][i - 1, 1]
    return q


def reference_ctrl(spec, m, times):
    """``(len(times), m.nu)`` ctrl = alpha_r + (kd/kp) rate_r of jaxrod's gait at ``times``, in the
    actuator order of the MJCF."""
    gait = spec["gait"]
    nj = spec["n"] - 1
    ah, av, dh, dv = (np.asarray(a) for a in gait(np.asarray(times)[:, None], nj))
    gk = spec["gains"]
    h = ah + gk["kd_h"] / gk["kp_h"] * dh
    v = av + gk["kd_v"] / gk["kp_v"] * dv
    out_ = np.empty((len(times), m.nu))
    for i in range(1, spec["n"]):
        out_[:, m.actuator(f"ah{i}").id] = h[:, i - 1]
        out_[:, m.actuator(f"av{i}").id] = v[:, i - 1]
    return out_


# ---- runs ----------------------------------------------------------------------------------------
def _load():
    return [round(x, 2) for x in load_average()]


def run_mujoco(spec, duration, dt, contact="default", gravity=None, mu=None, sample=0.1, geom="capsule"):
    """One MuJoCo run from jaxrod's start state: link 6 and centroid (mean of the link centres =
    centre of mass, equal masses) every ``sample`` s, contacts touching, deepest penetration,
    process CPU and wall of the stepping loop (``d.ctrl`` set from the precomputed reference
    before every ``mj_step``)."""
    import mujoco
    xml = snake_mjcf(spec, dt=dt, contact=contact, gravity=gravity, mu=mu)
    if geom == "sphere":  # two sphere geoms instead of the capsule: world-fixed contact frames
        xml = _sphere_variant(xml, spec)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = initial_qpos(m, spec)
    mujoco.mj_forward(m, d)
    n_steps, per = int(round(duration / dt)), int(round(sample / dt))
    ctrl = reference_ctrl(spec, m, np.arange(n_steps) * dt)
    link6, com, ncon, pen = [d.xpos[TRACK + 1].copy()], [d.xpos[1:].mean(0)], [], 0.0
    load0 = _load()
    c0, w0 = time.process_time(), time.perf_counter()
    for k in range(n_steps):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        if (k + 1) % per == 0:
            link6.append(d.xpos[TRACK + 1].copy())
            com.append(d.xpos[1:].mean(0))
            ncon.append(d.ncon)
            if d.ncon:
                pen = min(pen, float(d.contact.dist[:d.ncon].min()))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    c0 = time.process_time()  # the Python side of the loop alone (ctrl set, step counter), not stepping
    for k in range(n_steps):
        d.ctrl[:] = ctrl[k]
        if (k + 1) % per == 0:
            pass
    loop = time.process_time() - c0
    return {"side": "mujoco", "dt": dt, "python_loop_cpu_s": loop,
            "contact": contact if isinstance(contact, str) else "custom", "geom": geom,
            "cpu_s": cpu, "wall_s": wall, "cpu_per_sim_s": cpu / duration, "load_before": load0, "load_after": _load(),
            "link6": np.array(link6), "com": np.array(com), "touching_mean": float(np.mean(ncon)) if ncon else 0.0,
            "deepest_penetration_m": -pen, "finite": bool(np.all(np.isfinite(d.qpos))),
            "unstable_warnings": int(d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number),
            "sample_dt": sample}


def _sphere_variant(xml, spec):
    """Replace each capsule by two sphere geoms at the same centres (and the pairs accordingly)."""
    import re
    r = spec["radius"]
    for i in range(spec["n"]):
        s = spec["sphere_local"][i]
        cap = re.search(f'<geom name="cap{i + 1}"[^>]*/>', xml).group(0)
        sph = "".join(f'<geom name="s{i + 1}{k}" type="sphere" pos="{_v(s[k])}" size="{r!r}" contype="0" '
                      f'conaffinity="0" mass="0"/>' for k in (0, 1))
        xml = xml.replace(cap, sph)
        pair = re.search(f'<pair geom1="cap{i + 1}"[^>]*/>', xml).group(0)
        xml = xml.replace(pair, pair.replace(f'cap{i + 1}"', f's{i + 1}0"') + pair.replace(f'cap{i + 1}"', f's{i + 1}1"'))
    return xml


def run_jaxrod(cs, duration, dt, sample=0.1):
    """One jaxrod run of the scene model: a short run of the same structure first (compile or
    cache load, timed apart), then the timed run."""
    import jaxrod
    save = int(round(sample / dt))
    c0, w0 = time.process_time(), time.perf_counter()
    jaxrod.simulate(cs, dt=dt, n_steps=save, save_every=save)
    warm = (time.process_time() - c0, time.perf_counter() - w0)
    load0 = _load()
    c0, w0 = time.process_time(), time.perf_counter()
    tr = jaxrod.simulate(cs, dt=dt, duration=duration, save_every=save)
    p = np.asarray(tr.positions)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"side": "jaxrod", "dt": dt, "cpu_s": cpu, "wall_s": wall, "cpu_per_sim_s": cpu / duration,
            "warm_cpu_s": warm[0], "warm_wall_s": warm[1], "load_before": load0, "load_after": _load(),
            "link6": p[:, TRACK], "com": p.mean(1), "touching_mean": float(np.asarray(tr.active[1:]).sum(1).mean()),
            "deepest_penetration_m": float(max(0.0, -np.min(np.asarray(tr.gaps)))),
            "sweeps_mean": float(np.mean(np.asarray(tr.stats.iterations))), "sample_dt": sample,
            "finite": bool(np.all(np.isfinite(p)))}


def displacement(r, what):
    a = r[what]
    return a[-1, :2] - a[0, :2]


def angle_between(a, b):
    c = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def gaits(opts):
    """(name, jaxrod scene model) of the paper's three gaits (the registered scenes)."""
    from jaxrod.scenes.snake import snake_sidewinding, snake_undulation, snake_undulation_iso
    return (("LU-ortho (0.1/0.5, 30 deg)", snake_undulation(options=opts).model),
            ("LU-iso (0.2, 40 deg)", snake_undulation_iso(options=opts).model),
            ("sidewinding (0.2)", snake_sidewinding(options=opts).model))


def incline_models(opts, tilt_deg, mu):
    """The incline check (gravity tilted by ``tilt_deg`` about the world y axis, downhill +x; the
    same as a tilted ground): a single Aiko link and the resting straight snake, both lying along
    x (downhill along the links' axes), on isotropic ``mu``, the snake's PD holding straight
    references (zero amplitudes). (Lying across the slope, the links ROLL down: with the paper's
    rolling friction ``mu_V = 0``, jaxrod's default, nothing resists rolling; 0.19 m in 0.5 s on
    both sides, a = g sin(theta) / (1 + Theta_3 / (m r^2)).)"""
    import equinox as eqx
    from jaxrod.scenes.snake import SerpenoidGait, snake_model
    from jaxrod.system import MultibodySystem, RigidBody
    from jaxrod.system.contact import ContactSystem, SphereContact
    th = np.radians(tilt_deg)
    g = float(np.linalg.norm(snake_model(2).system.gravity))
    grav = g * np.array([np.sin(th), 0.0, -np.cos(th)])
    snake = snake_model(11, mu_along=mu, mu_across=mu, gait=SerpenoidGait(amplitude_h=0.0), posture="straight",
                        options=opts)
    snake = eqx.tree_at(lambda c: c.system.gravity, snake, grav)
    sp = snake_spec(snake)
    b0 = snake.system.bodies[0]
    z = float(b0.position[2])
    body = RigidBody("link1", float(b0.mass), np.asarray(b0.inertia), position=(0.0, 0.0, z))
    spheres = [SphereContact("link1", np.array([0.0, 0.0, z]) + c, sp["radius"], mu=mu) for c in sp["sphere_local"][0]]
    link = ContactSystem(MultibodySystem([body], gravity=grav), spheres, options=opts)
    return link, snake, grav


def mujoco_single_link(spec, dt, contact, gravity, duration, mu):
    """A single link (the snake's first link, a capsule with the same mass, inertia, spheres) on the
    ground under ``gravity``: its displacement over ``duration``."""
    import mujoco
    one = dict(spec, n=1)
    xml = snake_mjcf(one, dt=dt, contact=contact, gravity=gravity, mu=mu).replace("<actuator></actuator>", "")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:3] = [0.0, 0.0, spec["x0"][0][2]]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    mujoco.mj_forward(m, d)
    x0 = d.xpos[1].copy()
    n = int(round(duration / dt))
    xs = [x0]
    for _ in range(10):
        mujoco.mj_step(m, d, nstep=n // 10)
        xs.append(d.xpos[1].copy())
    return np.array(xs) - x0, float(np.linalg.norm(d.qvel[:3]))


def incline(opts, mj_dt, jr_dt, duration, tilt_deg=10.0, mu=0.2):
    """MuJoCo's creep vs jaxrod's stick on an incline below the friction angle."""
    import jaxrod
    link, snake, grav = incline_models(opts, tilt_deg, mu)
    spec = snake_spec(snake)
    res = {"tilt_deg": tilt_deg, "mu": mu, "duration": duration, "friction_angle_deg": float(np.degrees(np.arctan(mu))),
           "gravity": grav.tolist(), "link": {}, "snake": {}}
    down = grav / np.linalg.norm(grav)
    down[2] = 0.0
    down /= np.linalg.norm(down)
    for cset in CONTACT:
        dx, v = mujoco_single_link(spec, mj_dt, cset, grav, duration, np.array([mu, mu]))
        res["link"][f"mujoco_{cset}"] = {"dt": mj_dt, "downhill_m": float(dx[-1] @ down), "speed_end_m_s": v,
                                         "downhill_every_tenth_m": (dx @ down).round(9).tolist()}
        r = run_mujoco(spec, duration, mj_dt, cset, gravity=grav, mu=np.array([mu, mu]), sample=duration / 10)
        tenth = (r["com"][:, :2] - r["com"][0, :2]) @ down[:2]
        res["snake"][f"mujoco_{cset}"] = {"dt": mj_dt, "downhill_m": float(displacement(r, "com") @ down[:2]),
                                          "downhill_every_tenth_m": tenth.round(9).tolist(), "cpu_s": r["cpu_s"]}
    tr = jaxrod.simulate(link, dt=jr_dt, duration=duration, save_every=int(round(duration / 10 / jr_dt)))
    p = np.asarray(tr.positions[:, 0])
    res["link"]["jaxrod"] = {"dt": jr_dt, "downhill_m": float((p[-1] - p[0]) @ down),
                             "max_abs_displacement_m": float(np.max(np.abs(p - p[0]))),
                             "speed_end_m_s": float(np.linalg.norm(np.asarray(tr.v)[-1, 0, :3]))}
    r = run_jaxrod(snake, duration, jr_dt, sample=duration / 10)
    res["snake"]["jaxrod"] = {"dt": jr_dt, "downhill_m": float(displacement(r, "com") @ down[:2]),
                              "max_abs_displacement_m": float(np.max(np.abs(r["com"] - r["com"][0]))),
                              "cpu_s": r["cpu_s"]}
    return res


def friction_law_check(spec, contact, mu=(0.1, 0.5), speed=1.0, angle_deg=53.13, duration=0.1, dt=2.5e-4):
    """MuJoCo's friction law on a sled: one body on two capsules of the snake link's geometry
    (spheres at ``+-L_GS``, radius ``r``) side by side ``0.2 m`` apart (so that it cannot roll),
    ``(mu_along, mu_across)`` along the capsules, settled, then launched at ``speed`` [m/s] at
    ``angle_deg`` to the capsule axis. After the first step: the friction force's angle from the
    ellipse law's direction ``-(mu_x^2 v_x, mu_y^2 v_y)`` (maximum dissipation, the paper's and
    jaxrod's law; tests/test_contact.py asserts it for jaxrod to 1e-7) and from ``-v`` (isotropic
    Coulomb), ``|f_t| / f_n`` against the ellipse's radius in the force direction, the normal
    force over the weight; over ``duration``: the highest lift of the sled [m] and the fraction of
    steps with no contact. jaxrod's Moreau step keeps ``P_N = m g dt`` on a sliding box to 1e-9
    (tests/test_contact.py)."""
    import mujoco
    c = CONTACT[contact]
    s, r = spec["sphere_local"][0], spec["radius"]
    mass = float(spec["mass"][0]) * 2
    caps = "".join(f'<geom name="c{k}" type="capsule" fromto="{_v(s[0] + [0, y, 0])} {_v(s[1] + [0, y, 0])}" '
                   f'size="{r!r}" contype="0" conaffinity="0" mass="0"/>' for k, y in enumerate((0.1, -0.1)))
    pairs = "".join(f'<pair geom1="c{k}" geom2="floor" condim="3" friction="{_v(mu)} 0.005 0.0001 0.0001" '
                    f'solref="{_v(c["solref"])}" solimp="{_v(c["solimp"])}"/>' for k in range(2))
    I = mass * 0.01
    xml = (f'<mujoco><option timestep="{dt!r}" integrator="implicitfast" cone="elliptic" impratio="{_v(c["impratio"])}" '
           f'gravity="{_v(spec["gravity"])}"/><worldbody><geom name="floor" type="plane" size="0 0 1" contype="0" '
           f'conaffinity="0"/><body name="sled" pos="0 0 {r!r}"><freejoint/><inertial pos="0 0 0" mass="{mass!r}" '
           f'diaginertia="{I!r} {I!r} {I!r}"/>{caps}</body></worldbody><contact>{pairs}</contact></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d, nstep=int(round(0.5 / dt)))  # settle
    z0 = float(d.qpos[2])
    th = np.radians(angle_deg)
    d.qvel[:3] = speed * np.array([np.cos(th), np.sin(th), 0.0])
    weight = mass * float(np.linalg.norm(spec["gravity"]))
    mu = np.asarray(mu, float)
    out_ = {"contact": contact, "mu": mu.tolist(), "speed_m_s": speed, "angle_deg": angle_deg}
    lift, free = 0.0, 0
    n = int(round(duration / dt))
    for k in range(n):
        v = d.qvel[:2].copy()
        mujoco.mj_step(m, d)
        if k == 0:
            F, fn, f = np.zeros(3), 0.0, np.zeros(6)
            for i in range(d.ncon):
                mujoco.mj_contactForce(m, d, i, f)
                fr = d.contact[i].frame.reshape(3, 3)
                F += f[0] * fr[0] + f[1] * fr[1] + f[2] * fr[2]
                fn += f[0]
            law = -(mu * mu * v) / np.hypot(*(mu * v))
            ft = F[:2]
            rad = 1.0 / np.hypot(*(ft / np.linalg.norm(ft) / mu))  # ellipse radius in ft's direction
            out_.update(angle_from_ellipse_law_deg=angle_between(ft, law), angle_from_minus_v_deg=angle_between(ft, -v),
                        law_angle_from_minus_v_deg=angle_between(law, -v),
                        ft_over_fn_on_ellipse=float(np.linalg.norm(ft) / fn / rad), normal_over_weight=fn / weight)
        lift = max(lift, float(d.qpos[2]) - z0)
        free += d.ncon == 0
    out_.update(max_lift_m=lift, steps_without_contact=free / n, duration_s=duration)
    return out_


def _trim(r, every=0.5):
    """JSON-sized copy: x, y of link 6 and the centroid every ``every`` s (1e-5 m)."""
    k = max(1, int(round(every / r["sample_dt"])))
    o = {key: v for key, v in r.items() if key not in ("link6", "com")}
    o["every_s"] = every
    for key in ("link6", "com"):
        o[key + "_xy"] = np.round(r[key][::k, :2], 5).tolist()
        o[key + "_dxdy_m"] = displacement(r, key).round(5).tolist()
    return o


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--jr-duration", type=float, default=None,
                    help="jaxrod run length [s] (default --duration; shorter: CPU only, distances from MuJoCo's full run)")
    ap.add_argument("--mj-dt", type=float, default=2.5e-4)
    ap.add_argument("--mj-dts-extra", default="5e-4,1e-3", help="MuJoCo's larger steps (comma separated; '' skips)")
    ap.add_argument("--jr-fine-duration", type=float, default=3.0,
                    help="also run jaxrod at the paper's dt (--mj-dt) for this long [s], CPU at equal dt (0: skip)")
    ap.add_argument("--jr-dt", type=float, default=5e-4)
    ap.add_argument("--incline-duration", type=float, default=5.0)
    ap.add_argument("--only", metavar="TEXT", help="only the gaits whose name contains TEXT ('none': incline only)")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    import jax
    import mujoco
    from jaxrod.integrate.moreau import MoreauOptions
    opts = MoreauOptions(rtol=1e-6, max_iterations=5000)
    jr_T = a.duration if a.jr_duration is None else a.jr_duration
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "snake_mujoco.json")
    res = {"time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "git": git_sha(), "machine": cpu_name(),
           "cpus": os.cpu_count(), "mujoco": mujoco.__version__, "jax": jax.__version__, "load_start": _load(),
           "duration": a.duration, "jaxrod_duration": jr_T, "mujoco_dt": a.mj_dt, "jaxrod_dt": a.jr_dt,
           "contact_settings": {k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()}
                                for k, v in CONTACT.items()},
           "friction_law": {"jaxrod": "set-valued Signorini + the paper's ellipse (maximum-dissipation) Coulomb law, "
                                      "principal axes the horizontal projection of the link axis; exact stick",
                            "mujoco": "soft contact (solref/solimp), elliptic cone condim 3 with pair friction "
                                      "(mu_along, mu_across) in the capsule-plane contact frame (tangent 1 = horizontal "
                                      "projection of the capsule axis): the same ellipse, regularised (creeps)"},
           "gaits": {}}
    out(f"jaxrod {res['git'][:10]}, MuJoCo {mujoco.__version__}, {res['machine']} x {res['cpus']}, load {res['load_start']}")
    rows, dt_rows = [], []
    for name, cs in gaits(opts):
        if a.only and a.only not in name:
            continue
        spec = snake_spec(cs)
        g = {}
        g["mujoco_default"] = run_mujoco(spec, a.duration, a.mj_dt, "default")
        g["jaxrod"] = run_jaxrod(cs, jr_T, a.jr_dt)
        g["mujoco_stiff"] = run_mujoco(spec, a.duration, a.mj_dt, "stiff")
        for dt_x in [float(x) for x in a.mj_dts_extra.split(",") if x.strip()]:
            for cset in CONTACT:
                g[f"mujoco_{cset}_dt{dt_x:g}"] = run_mujoco(spec, a.duration, dt_x, cset)
        if a.jr_fine_duration > 0:
            g[f"jaxrod_dt{a.mj_dt:g}"] = run_jaxrod(cs, a.jr_fine_duration, a.mj_dt)
        if "ortho" in name:
            g["mujoco_default_spheres"] = run_mujoco(spec, a.duration, a.mj_dt, "default", geom="sphere")
        jr = g["jaxrod"]
        for key, r in g.items():
            d6, dc = displacement(r, "link6"), displacement(r, "com")
            T = a.duration if r["side"] == "mujoco" else (jr_T if key == "jaxrod" else a.jr_fine_duration)
            label = "jaxrod (Moreau, set-valued)" if r["side"] == "jaxrod" else (
                f"MuJoCo {r['contact']}{', spheres (world-fixed anisotropy)' if r['geom'] == 'sphere' else ''}")
            dj = displacement(jr, "com")
            agree = "" if r["side"] == "jaxrod" or T != jr_T else (
                f"{angle_between(dc, dj):.0f} deg, x{np.linalg.norm(dc) / max(np.linalg.norm(dj), 1e-12):.2f}")
            row = [name, label, f"{r['dt'] * 1e3:g}", f"{T:g}", f"{d6[0]:+.3f}", f"{d6[1]:+.3f}", f"{dc[0]:+.3f}",
                   f"{dc[1]:+.3f}", agree, f"{r['touching_mean']:.1f}", f"{r['deepest_penetration_m'] * 1e3:.2f}",
                   f"{r['cpu_per_sim_s']:.3f}", f"{r['wall_s'] / T:.3f}",
                   f"{r['load_before'][0]:.1f}-{r['load_after'][0]:.1f}"]
            (dt_rows if "_dt" in key else rows).append(row)
            if not r["finite"]:
                row[4] = "NaN: " + row[4]
        res["gaits"][name] = {k: _trim(r) for k, r in g.items()}
        out(f"{name}: done, load {_load()}")
    header = ["gait", "side", "dt [ms]", "T [s]", "link 6 dx [m]", "link 6 dy [m]", "centroid dx [m]",
              "centroid dy [m]", "vs jaxrod: angle, distance ratio", "contacts touching (of 22)", "deepest penetration [mm]",
              "CPU per sim s [s]", "wall per sim s [s]", "load (1 min)"]
    if rows:
        out(table(header, rows))
    if dt_rows:
        out("\nMuJoCo at larger steps, jaxrod at the paper's step (CPU; its T may be shorter):\n" + table(header, dt_rows))
    if a.incline_duration > 0:
        inc = incline(opts, a.mj_dt, a.jr_dt, a.incline_duration)
        res["incline"] = inc
        irows = []
        for what in ("link", "snake"):
            for key, r in inc[what].items():
                body = "single link (downhill along its axis)" if what == "link" else "straight snake (downhill along it)"
                irows.append([body, key, f"{r['dt'] * 1e3:g}", f"{r['downhill_m']:+.3e}"])
        out(f"\nIncline {inc['tilt_deg']:g} deg, mu {inc['mu']:g} (friction angle {inc['friction_angle_deg']:.2f} deg: "
            f"should stick), {inc['duration']:g} s:\n" + table(["body", "side", "dt [ms]", "downhill displacement [m]"], irows))
    spec = snake_spec(gaits(opts)[0][1])
    res["friction_law"]["mujoco_sled_check"] = fl = [friction_law_check(spec, cset) for cset in CONTACT]
    out("\nMuJoCo's friction law on a sliding sled (two link capsules, mu 0.1 / 0.5, 1 m/s at 53 deg to the axis):\n"
        + table(["contact", "force from ellipse law [deg]", "force from -v [deg] (law: "
                 f"{fl[0]['law_angle_from_minus_v_deg']:.1f})", "|f_t| / (ellipse radius f_n)", "f_n / weight, 1st step",
                 "highest lift in 0.1 s [mm]", "steps without contact"],
                [[r["contact"], f"{r['angle_from_ellipse_law_deg']:.2f}", f"{r['angle_from_minus_v_deg']:.1f}",
                  f"{r['ft_over_fn_on_ellipse']:.4f}", f"{r['normal_over_weight']:.2f}", f"{r['max_lift_m'] * 1e3:.3f}",
                  f"{r['steps_without_contact']:.0%}"] for r in fl]))
    res["load_end"] = _load()
    if not a.no_write:
        with open(path, "w") as f:
            json.dump(res, f, indent=None, separators=(",", ":"))
        out(f"\nwrote {path}")


if __name__ == "__main__":
    main()
