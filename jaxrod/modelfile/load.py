""":func:`load_model`: a TOML model file -> :class:`~jaxrod.scenes.scene.Scene` (model, initial state,
run settings, the file's path and outputs: the record the scene registry's builders return).

Two phases: every table is read and checked first (pure Python, :mod:`~jaxrod.modelfile.values`),
so a bad file is reported before JAX is imported; then the model is built with the library's own
constructors. Top-level tables: ``[model]``, ``[world]``, ``[bodies.*]``, ``[joints.*]``,
``[constraints.*]``, ``[[loads]]``, ``[rods.*]``, ``[[attachments]]``, ``[simulation]``,
``[output]`` (see docs/modelfiles.md for every key and its unit).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from .errors import ModelFileError, closest
from .mechanism import build_hybrid, build_system, check_loops, read_body, read_joint
from ..scenes.report import QUANTITIES, default_quantities
from ..scenes.scene import Scene
from .registry import FORCE_TYPES
from .rods import read_rod
from .values import Table

__all__ = ["EXAMPLES_DIR", "example_names", "load_model", "load_robot", "resolve"]

#: suffixes of robot description files (URDF, MJCF) that :func:`load_model` hands to :func:`load_robot`
ROBOT_SUFFIXES = (".urdf", ".xml", ".mjcf")

#: the shipped example files (``jaxrod simulate pendulum.toml`` finds them by name)
EXAMPLES_DIR = Path(__file__).with_name("examples")

_SCHEMES = ("average_vector_field", "implicit_midpoint", "backward_euler", "bdf2", "trapezoid", "newmark",
            "newmark_from_rest", "bdf_alpha")


def example_names():
    """Names of the shipped example files, sorted."""
    return sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))


def resolve(path) -> Path:
    """``path`` if it exists, else the shipped example of that name (``.toml`` optional)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        raise ModelFileError(path, "", "is a directory, not a model file (give a .toml file in it)")
    for name in (p.name, p.name + ".toml"):
        if p.parent == Path(".") and (EXAMPLES_DIR / name).is_file():
            return EXAMPLES_DIR / name
    raise ModelFileError(path, "", f"no such file (shipped examples: {', '.join(example_names())})")


#: the top-level tables of a model file
TOP_LEVEL_TABLES = ("model", "include", "world", "bodies", "joints", "constraints", "forces", "rods", "loads",
                    "attachments", "simulation", "analysis", "output")


def _parse(path: Path):
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ModelFileError(path, "", f"TOML syntax error: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelFileError(path, "", f"cannot read the file: {e}") from None
    return Table(path, "", data)


def _array_of_tables(root: Table, key):
    raw = root.raw(key, [])
    if not isinstance(raw, list):
        raise root.error(key, f"expected an array of tables ([[{key}]] blocks), got {raw!r}")
    return [Table(root.path, f"{key}[{i}]", item) for i, item in enumerate(raw)]


def _read_loads(root, bodies, rods):
    """``[[loads]]``: constant forces/torques on a body (added to its own) or on a rod node."""
    on_bodies, on_rods = {}, {}
    for t in _array_of_tables(root, "loads"):
        force = t.vector("force", 3, "N", [0.0, 0.0, 0.0])
        torque = t.vector("torque", 3, "N m", [0.0, 0.0, 0.0])
        if ("body" in t) == ("rod" in t):
            raise t.error(None, "a load names exactly one of 'body' or 'rod'")
        if "body" in t:
            name = t.string("body")
            if name not in bodies:
                raise t.error("body", f"names no body: {name!r}{closest(name, bodies)}; bodies: {', '.join(bodies) or 'none'}")
            on_bodies.setdefault(name, []).append((force, torque))
        else:
            name = t.string("rod")
            if name not in rods:
                raise t.error("rod", f"names no rod: {name!r}{closest(name, rods)}; rods: {', '.join(rods) or 'none'}")
            spec = rods[name]
            node = t.raw("node", "tip")
            if spec.n_nodes is None and node != "tip":
                raise t.error("node", f"a {spec.kind} rod takes loads at its tip only: node = \"tip\", got {node!r}")
            if spec.n_nodes is not None and node != "tip" and (
                    isinstance(node, bool) or not isinstance(node, int) or not -spec.n_nodes <= node < spec.n_nodes):
                raise t.error("node", f"expected \"tip\" or a node index in [{-spec.n_nodes}, {spec.n_nodes - 1}], got {node!r}")
            if spec.kind == "der" and any(torque):
                raise t.error("torque", "a DER rod takes nodal forces only (torque = [0, 0, 0])")
            on_rods.setdefault(name, []).append((node, force, torque))
        t.finish()
    return on_bodies, on_rods


def _read_attachments(root, bodies, rods):
    """``[[attachments]]``: a rod node pinned (``type = "pin"``, ``node``) or a rod edge clamped
    (``type = "clamp"``, ``edge``) to a body or the world; indices or ``"start"`` / ``"end"``."""
    out = []
    for t in _array_of_tables(root, "attachments"):
        kind = t.string("type", choices=("clamp", "pin"))
        rod, body = t.string("rod"), t.string("body")
        if rod not in rods:
            raise t.error("rod", f"names no rod: {rod!r}{closest(rod, rods)}; rods: {', '.join(rods) or 'none'}")
        if body != "world" and body not in bodies:
            raise t.error("body", f"names no body: {body!r}{closest(body, bodies)}; bodies: "
                                  f"{', '.join(bodies) or 'none'} (or 'world')")
        spec = rods[rod]
        if spec.kind != "der":
            raise t.error("rod", f"attachments take DER rods (model = \"der\"); {spec.where} is a {spec.kind} rod")
        key = "edge" if kind == "clamp" else "node"
        count = spec.n_nodes - 1 if kind == "clamp" else spec.n_nodes
        index = t.raw(key)
        if index in ("start", "end"):
            index = 0 if index == "start" else count - 1
        elif isinstance(index, bool) or not isinstance(index, int) or not -count <= index < count:
            raise t.error(key, f"expected \"start\", \"end\" or an index in [{-count}, {count - 1}] "
                               f"({spec.where} has {count} {key}s), got {index!r}")
        t.finish()
        out.append({"type": kind, "rod": rod, "body": body, "index": index % count, "table": t})
    return out


def _read_simulation(root, rod_settings, kind):
    t = root.table("simulation", {})
    static = t.boolean("static", bool(rod_settings.get("static", False)))
    out = {"static": static, "load_steps": t.integer("load_steps", 1, minimum=1)}
    if static:
        t.finish()
        return out
    dt_default = rod_settings.get("dt")
    out["dt"] = t.number("dt", "s", dt_default if dt_default is not None else _req(), positive=True)
    dur = rod_settings.get("duration")
    out["duration"] = t.number("duration", "s", dur if dur is not None else _req(), positive=True)
    out["scheme"] = t.string("scheme", None, choices=_SCHEMES)
    out["alpha"] = t.number("alpha", "", None, between=(-0.5, 0.0))
    if (out["alpha"] is None) != (out["scheme"] != "bdf_alpha"):
        raise t.error("alpha", "alpha (in [-0.5, 0]) goes with scheme = \"bdf_alpha\", and only with it")
    n = out["duration"] / out["dt"]
    if round(n) < 1 or abs(n - round(n)) > 1e-9 * max(1.0, n):
        raise t.error("duration", f"must be a whole number of steps of dt = {out['dt']:g} s, got "
                                  f"{out['duration']:g} s ({n:g} steps)")
    out["save_every"] = t.integer("save_every", 1, minimum=1)
    if round(n) % out["save_every"]:
        raise t.error("save_every", f"must divide the number of steps ({round(n)}), got {out['save_every']}")
    newton = t.table("newton", None)
    out["newton"] = None
    if newton is not None:
        out["newton"] = {k: newton.number(k, "", None, nonnegative=True) for k in ("rtol", "atol")}
        out["newton"]["max_steps"] = newton.integer("max_steps", None, minimum=1)
        newton.finish()
    t.finish()
    return out


def _read_analysis(root):
    """``[analysis]``: ``modal = true`` (print the lowest ``n_modes`` natural frequencies about the
    static equilibrium before a run, as ``jaxrod modal FILE`` does)."""
    t = root.table("analysis", None)
    if t is None:
        return None
    modal = t.boolean("modal", False)
    n = t.integer("n_modes", 6, minimum=1)
    t.finish()
    return n if modal else None


def _req():
    from .values import REQUIRED

    return REQUIRED


def _read_output(root, kind):
    t = root.table("output", {})
    valid = [q for q, (kinds, _) in QUANTITIES.items() if ("rod" if kind == "scene" else kind) in kinds]
    raw = t.raw("quantities", list(default_quantities("rod" if kind == "scene" else kind)))
    if not isinstance(raw, list) or not all(isinstance(q, str) for q in raw):
        raise t.error("quantities", f"expected a list of names from {valid}, got {raw!r}")
    for q in raw:
        if q not in valid:
            raise t.error("quantities", f"unknown quantity {q!r}{closest(q, valid)} for this model; choose from {valid}")
    out = {"quantities": tuple(raw), "plot": t.string("plot", None), "animate": t.string("animate", None)}
    t.finish()
    return out


def _scheme(sim, default, where):
    from ..integrate.schemes import BDFAlpha, DifferenceFormula, NewmarkBeta, scheme_from_name

    name = sim["scheme"]
    if name is None:
        return default
    if isinstance(default, DifferenceFormula):  # a shooting (Cosserat) model: first-order formulas
        if name == "bdf_alpha":
            return DifferenceFormula.bdf_alpha(sim["alpha"])
        if name not in ("backward_euler", "bdf2", "trapezoid"):
            raise where.error("scheme", f"a shooting (Cosserat) scene takes backward_euler, bdf2, trapezoid or "
                                        f"bdf_alpha, got {name!r}")
        return getattr(DifferenceFormula, name)()
    if name == "bdf_alpha":
        return BDFAlpha(sim["alpha"])
    if name == "newmark_from_rest":
        return NewmarkBeta(start="rest")
    return scheme_from_name(name)


def _read_include(root, path):
    """``[include]``: the bodies and joints of a URDF (``urdf = "arm.urdf"``) or MJCF (``mjcf =
    "arm.xml"``) file, relative to the model file; options ``fixed_base`` (URDF),
    ``joint_positions`` (a table of joint name -> rad or m), ``limit_stiffness``,
    ``limit_damping``. The links become bodies named as in the robot file, so the model file's
    joints, loads and attachments name them."""
    from .robot_tree import to_tables

    t = root.table("include", None)
    if t is None:
        return [], []
    if ("urdf" in t) == ("mjcf" in t):
        raise t.error(None, "give exactly one of urdf = \"FILE.urdf\" or mjcf = \"FILE.xml\"")
    fmt = "urdf" if "urdf" in t else "mjcf"
    target = Path(path).parent / t.string(fmt)
    if not target.is_file():
        raise t.error(fmt, f"no such file: {target}")
    options = {}
    if fmt == "urdf":
        options["fixed_base"] = t.boolean("fixed_base", True)
    jp = t.table("joint_positions", None)
    if jp is not None:
        options["joint_positions"] = {k: jp.number(k, "") for k in jp.keys()}
        jp.finish()
    options["limit_stiffness"] = t.number("limit_stiffness", "", 0.0, nonnegative=True)
    options["limit_damping"] = t.number("limit_damping", "", 0.0, nonnegative=True)
    t.finish()
    try:
        tree = _read_tree(target, fmt, options)
    except ValueError as e:
        if isinstance(e, ModelFileError):
            raise
        raise t.error("joint_positions", str(e)) from None
    return to_tables(tree)


def _read_tree(path, fmt, options):
    if fmt == "urdf":
        from .urdf import read_urdf

        return read_urdf(path, **options)
    from .mjcf import read_mjcf

    return read_mjcf(path, **options)


def load_robot(path, *, fixed_base=None, joint_positions=None, gravity=None, limit_stiffness=0.0,
               limit_damping=0.0, dt=None, duration=1.0) -> Scene:
    """A URDF (``.urdf``) or MJCF (``.xml``) robot as a :class:`~jaxrod.scenes.scene.Scene` of kind
    ``"system"``
    (a :class:`~jaxrod.system.MultibodySystem`; see :mod:`jaxrod.modelfile.urdf` and
    :mod:`jaxrod.modelfile.mjcf` for what is read). ``jaxrod simulate arm.urdf`` and
    :func:`load_model` call it with the defaults.

    Arguments:
        fixed_base: URDF only: weld the root link to the world (default ``True``).
        joint_positions: ``{joint name: position}`` [rad or m] of the initial configuration.
        gravity: ``(3,)`` [m/s^2]; default: MJCF's ``<option gravity>``, for URDF
            ``(0, 0, -9.81)`` (ROS's z-up convention).
        limit_stiffness, limit_damping: penalty stops enforcing the file's joint limits (0: the
            limits are not enforced, with a warning).
        dt: time step [s]; default: MJCF's ``<option timestep>``, 1 ms for URDF.
        duration: simulated time of a run [s].

    Links welded by fixed joints are merged into one body; each body's frame is its principal
    inertia frame at its centre of mass.
    """
    from ..integrate.schemes import AverageVectorField
    from .mechanism import build_system
    from .robot_tree import to_tables

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ROBOT_SUFFIXES:
        raise ModelFileError(path, "", f"unknown robot file type {suffix!r}: expected .urdf or an MJCF .xml")
    if not path.is_file():
        raise ModelFileError(path, "", "no such file")
    fmt = "urdf" if suffix == ".urdf" else "mjcf"
    options = {"joint_positions": joint_positions, "limit_stiffness": limit_stiffness, "limit_damping": limit_damping}
    if fixed_base is not None:
        if fmt == "mjcf":
            raise ValueError("fixed_base applies to URDF files; in MJCF a body moves freely when it has a "
                             "<freejoint/>")
        options["fixed_base"] = fixed_base
    tree = _read_tree(path, fmt, options)
    bodies, joints = to_tables(tree)
    if not bodies:
        raise ModelFileError(path, "", "has no moving link (every link is welded to the world)")
    if gravity is None:
        gravity = tree.gravity if tree.gravity is not None else (0.0, 0.0, -9.81)
    dt = dt if dt is not None else (tree.timestep or 1e-3)
    for value, label in ((dt, "dt"), (duration, "duration")):
        if not value > 0:
            raise ValueError(f"{label} must be > 0 [s], got {value!r}")
    model = build_system(bodies, joints, list(gravity))
    return Scene(path=str(path), name=path.stem, description=f"{fmt.upper()} robot {path.name}", kind="system",
                 model=model, dt=float(dt), duration=float(duration), scheme=AverageVectorField(),
                 quantities=tuple(default_quantities("system")), body_names=tuple(b["name"] for b in bodies))


def load_model(path) -> Scene:
    """Read, check and build the model file ``path`` (a path, or the name of a shipped example):
    a :class:`~jaxrod.scenes.scene.Scene`, the record of the scene registry, with the file's
    ``path``, ``kind`` and outputs (``save_every``, ``quantities``, ``plot``, ``animate``,
    ``body_names``, ``modal_modes``); ``scene.simulate()`` runs it with the file's settings.

    Raises:
        ModelFileError: (a ``ValueError``) naming the file, the table and the key: TOML syntax
            (with line and column), unknown keys (with the closest valid key), missing keys, wrong
            types, shapes, signs or units, joints naming missing bodies, joints closing a loop.
    """
    path = resolve(path)
    if path.suffix.lower() in ROBOT_SUFFIXES:
        return load_robot(path)
    root = _parse(path)
    # a misspelt table ([bodys.bob], [simulaton]) is reported as itself, before its absence is
    for key in root.keys():
        if key not in TOP_LEVEL_TABLES:
            raise root.error(key, f"unknown table [{key}]{closest(key, TOP_LEVEL_TABLES)}; the tables of a model "
                                  f"file are {', '.join(TOP_LEVEL_TABLES)}")
    meta = root.table("model", {})
    name = meta.string("name", path.stem)
    description = meta.string("description", name)
    meta.finish()
    world = root.table("world", {})
    gravity = world.vector("gravity", 3, "m/s^2", None)
    world.finish()

    bodies, joints = _read_include(root, path)
    bodies += [dict(read_body(n, t), where=t.where, path=str(path)) for n, t in root.table("bodies", {}).tables()]
    body_names = [b["name"] for b in bodies]
    if len(set(body_names)) < len(body_names):
        twice = sorted({n for n in body_names if body_names.count(n) > 1})
        raise root.error("bodies", f"bodies named twice: {twice} (a [bodies] table repeats a link of the included "
                                   "robot file)")
    joints += [read_joint(n, t, body_names) for n, t in root.table("joints", {}).tables()]
    constraints = [read_joint(n, t, body_names) for n, t in root.table("constraints", {}).tables()]
    forces = [read_joint(n, t, body_names, FORCE_TYPES) for n, t in root.table("forces", {}).tables()]
    check_loops(path, joints, constraints)
    rods = {n: read_rod(n, t) for n, t in root.table("rods", {}).tables()}
    body_loads, rod_loads = _read_loads(root, body_names, rods)

    if not bodies and not rods:
        raise root.error(None, "the file describes no model: add [bodies.NAME] (rigid bodies) or [rods.NAME]")
    attachments = _read_attachments(root, body_names, rods)
    if forces and rods:
        raise root.error("forces", "force elements ([forces]) act between rigid bodies of a file without rods; "
                                   "in a file with rods, use joint springs/dampers/inputs ([joints]) or [[loads]]")
    analysis = _read_analysis(root)
    if bodies and rods and not attachments:
        raise root.error("rods", "a file with both rigid bodies and rods couples them by [[attachments]] "
                                 "(type = \"clamp\" or \"pin\", rod, body, edge or node); none given")
    if len(rods) > 1 and not attachments:
        raise root.error("rods", f"several rods ({', '.join(rods)}) must be coupled by [[attachments]]; a rod "
                                 "network: scene = \"network-...\"")
    rod = next(iter(rods.values()), None)
    kind = "hybrid" if attachments else "system" if bodies else ("scene" if rod.kind == "scene" else "rod")
    if rod is not None and not rod.uses_gravity and gravity is not None:
        raise world.error("gravity", f"{rod.where} is a built-in scene, which sets its own gravity; remove [world].gravity")
    sim = _read_simulation(root, rod.settings if rod is not None else {}, kind)
    sim_table = Table(path, "simulation", root.data.get("simulation", {}))
    output = _read_output(root, kind)
    root.finish()

    # ---- build (imports JAX and the model packages) ------------------------------------------
    from ..solvers.newton import NewtonSolver
    from ..integrate.schemes import AverageVectorField

    reference, state0, scheme_default = {}, None, AverageVectorField()
    for b in bodies:
        for f, tau in body_loads.get(b["name"], ()):
            b["force"] = [x + y for x, y in zip(b["force"], f)]
            b["torque"] = [x + y for x, y in zip(b["torque"], tau)]
    if kind == "system":
        model = build_system(bodies, joints + constraints, gravity, forces)
    elif kind == "hybrid":
        model = build_hybrid(path, bodies, joints + constraints, rods, rod_loads, attachments, gravity)
    else:
        scene = rod.build(gravity, rod_loads.get(rod.name, []))
        model, state0, reference = scene.model, scene.state0, scene.reference
        if kind == "scene":
            scheme_default = scene.scheme
            description = description if meta.data.get("description") else scene.description
    solver = None
    if sim.get("newton"):
        solver = NewtonSolver(**{k: v for k, v in sim["newton"].items() if v is not None})
    return Scene(
        path=str(path), name=name, description=description, kind=kind, model=model, state0=state0,
        dt=sim.get("dt", 0.0), duration=sim.get("duration", 0.0),
        scheme=None if sim["static"] else _scheme(sim, scheme_default, sim_table), solver=solver, static=sim["static"],
        load_steps=sim["load_steps"], save_every=sim.get("save_every", 1), quantities=output["quantities"],
        plot=output["plot"], animate=output["animate"], body_names=tuple(body_names), reference=reference,
        modal_modes=analysis,
    )
