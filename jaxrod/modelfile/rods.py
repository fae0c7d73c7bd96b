"""``[rods.NAME]`` tables: a DER rod, a PCS rod, or any built-in scene by name.

Each reader checks its table (pure Python) and returns a :class:`RodSpec` whose ``build`` calls the
model's own constructors (``DERRod.cantilever`` / ``from_polyline``, ``DERModel``,
``PCSRod.circular`` / ``rectangular``, ``PCSModel``) or the scene's builder from
:mod:`jaxrod.scenes.registry`: a model file is another way to call them, not a second
implementation.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from .errors import closest
from .registry import ROD_MODELS
from .values import Table

__all__ = ["RodSpec", "read_rod"]

_CLAMPS = {"start": (0,), "end": (-1,), "both": (0, -1), "none": ()}


@dataclass
class RodSpec:
    """A checked rod table.

    Attributes:
        name: the table name.
        where: its location in the file (``"rods.beam"``).
        kind: ``"der"``, ``"pcs"`` or ``"scene"``.
        build: ``build(gravity, loads) -> Scene`` with ``gravity`` a 3-list or ``None`` and
            ``loads`` a list of ``(node, force, torque)`` (node an int index or ``"tip"``).
        n_nodes: number of nodes that loads may index (``None``: only ``"tip"``).
        uses_gravity: whether ``[world].gravity`` applies (a scene sets its own).
    """

    name: str
    where: str
    kind: str
    build: Callable
    n_nodes: int | None = None
    uses_gravity: bool = True
    settings: dict = field(default_factory=dict)


def _material(t: Table):
    return dict(
        youngs_modulus=t.number("youngs_modulus", "Pa", positive=True),
        density=t.number("density", "kg/m^3", positive=True),
        poisson_ratio=t.number("poisson_ratio", "", 0.5, between=(-0.999, 0.5)),
    )


def read_der(name, t: Table) -> RodSpec:
    """A discrete elastic rod: a straight rod (``length``, ``n_nodes``, ``start``, ``direction``,
    clamped at ``clamp`` with its clamped edges centred on the clamp points, as
    :meth:`DERRod.cantilever`) or a polyline (``points``, ``rest``); circular section ``radius``."""
    material = _material(t)
    material["radius"] = t.number("radius", "m", positive=True)
    clamp = t.string("clamp", "start", choices=tuple(_CLAMPS))
    damping = t.number("damping", "N s/m^2", 0.0, nonnegative=True)
    if "points" in t:
        points = t.points("points", "m", minimum=3)
        rest = t.string("rest", "stress_free", choices=("stress_free", "straight"))
        n, length, start, direction = len(points), None, None, None
    else:
        n = t.integer("n_nodes", minimum=4 if clamp == "both" else 3)
        length = t.number("length", "m", positive=True)
        start = t.vector("start", 3, "m", [0.0, 0.0, 0.0])
        direction = t.vector("direction", 3, "", [1.0, 0.0, 0.0], nonzero=True)
        points, rest = None, "straight"
    v = t.table("initial_velocity", None)
    mode = None
    if v is not None:
        v.string("shape", choices=("first_bending_mode",))
        mode = (v.number("tip_speed", "m/s"), v.vector("direction", 3, "", [0.0, 0.0, 1.0], nonzero=True))
        v.finish()
        if points is not None or clamp != "start":
            raise v.error("shape", "the first bending mode needs a straight rod (length, n_nodes) with clamp = 'start'")

    def build(gravity, loads):
        import numpy as np

        from ..models.der import DERModel, DERRod, first_mode_velocity
        from ..scenes.scene import Scene

        if points is None:
            ends = "both" if clamp == "both" else "start"
            if clamp == "none":
                rod = DERRod.straight(n, length, start=start, direction=direction, **material)
            else:
                rod = DERRod.cantilever(n, length, clamped_ends=ends, start=start, direction=direction, **material)
        else:
            rod = DERRod.from_polyline(np.asarray(points), rest=rest, **material)
        forces = None
        if loads:
            forces = np.zeros((rod.n_nodes, 3))
            for node, f, _ in loads:
                forces[-1 if node == "tip" else node] += f
        v0 = None
        if mode is not None:
            d = np.asarray(direction) / np.linalg.norm(direction)
            # distance from the clamp point along the axis: the ghost half-edge behind it is at rest
            s = np.clip((np.asarray(rod.rest_positions) - start) @ d, 0.0, None)
            v0 = first_mode_velocity(rod, mode[0], mode[1], s=s, length=length)
        model = DERModel(rod, clamped_edges=_CLAMPS[clamp], gravity=gravity or (0.0, 0.0, 0.0), damping=damping,
                         point_forces=forces, v0=v0)
        return Scene(name, f"DER rod {name!r}, {rod.n_nodes} nodes", model)

    return RodSpec(name, t.where, "der", build, n_nodes=n)


def read_pcs(name, t: Table) -> RodSpec:
    """A piecewise-constant-strain rod clamped at its base (``PCSRod.circular`` / ``rectangular``,
    ``PCSModel``): the rod axis is the first column of ``base_rotation``."""
    length = t.number("length", "m", positive=True)
    n = t.integer("n_segments", minimum=1)
    section = t.string("section", choices=("circular", "rectangular"))
    if section == "circular":
        dims = (t.number("radius", "m", positive=True),)
    else:
        dims = (t.number("width", "m", positive=True), t.number("thickness", "m", positive=True))
    material = _material(t)
    material["viscosity"] = t.number("viscosity", "Pa s", 0.0, nonnegative=True)
    rest = t.matrix("rest_strain", n, 6, "", None)
    base_position = t.vector("base_position", 3, "m", [0.0, 0.0, 0.0])
    base_rotation = t.matrix("base_rotation", 3, 3, "", [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])

    def build(gravity, loads):
        import numpy as np

        from ..models.pcs import PCSModel, PCSRod
        from ..scenes.scene import Scene

        make = PCSRod.circular if section == "circular" else PCSRod.rectangular
        rod = make(length, n, *dims, rest_strain=None if rest is None else np.asarray(rest), **material)
        wrench = np.zeros(6)  # [moment; force]
        for _, f, tau in loads:
            wrench += np.concatenate([tau, f])
        model = PCSModel(rod, gravity=gravity or (0.0, 0.0, 0.0), base_rotation=np.asarray(base_rotation),
                         base_position=np.asarray(base_position), tip_wrench=wrench)
        return Scene(name, f"PCS rod {name!r}, {n} segments", model)

    return RodSpec(name, t.where, "pcs", build, n_nodes=None)


def read_scene(name, t: Table) -> RodSpec:
    """A built-in scene (``jaxrod scenes``) with keyword overrides of its builder (the run
    settings ``dt``/``duration`` go in ``[simulation]``)."""
    from ..scenes.registry import REGISTRY

    scene = t.string("scene", choices=tuple(REGISTRY))
    info = REGISTRY[scene]
    params = inspect.signature(info.load()).parameters
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    allowed = [p for p, v in params.items() if v.kind in named and p not in info.fixed and p not in ("dt", "duration")]
    # a builder with **kw passes further keywords on (the snake scenes: to snake_model), which checks them
    open_ended = any(v.kind == inspect.Parameter.VAR_KEYWORD for v in params.values())
    overrides = {}
    for key in t.keys():
        if key == "scene":
            continue
        if key in ("dt", "duration"):
            raise t.error(key, "set the time step and duration in [simulation] (dt, duration)")
        if key not in allowed and not open_ended:
            raise t.error(key, f"not an option of scene {scene!r}{closest(key, allowed)}; its options: "
                               f"{', '.join(allowed) or 'none'}")
        overrides[key] = t.raw(key)

    def build(gravity, loads):
        if loads:
            raise t.error("scene", "[[loads]] on a built-in scene are not supported (the scene sets its loads)")
        try:
            return info.build(**overrides)
        except (TypeError, ValueError) as e:
            raise t.error(None, f"scene {scene!r} rejected the options {overrides}: {e}") from None

    return RodSpec(name, t.where, "scene", build, uses_gravity=False,
                   settings={"dt": info.dt, "duration": info.duration, "static": info.static})


def read_rod(name, t: Table) -> RodSpec:
    """Dispatch on ``scene`` / ``model`` (see :data:`~jaxrod.modelfile.registry.ROD_MODELS`)."""
    if "scene" in t:
        if "model" in t:
            raise t.error("model", "give either 'scene' (a built-in scene) or 'model' (a rod described here), not both")
        return read_scene(name, t)
    model = t.string("model", choices=tuple(ROD_MODELS))
    spec = globals()[ROD_MODELS[model]](name, t)
    t.finish()
    return spec
