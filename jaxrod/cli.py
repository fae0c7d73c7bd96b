"""Command-line interface: ``jaxrod`` (or ``python -m jaxrod``).

Examples::

    jaxrod scenes
    jaxrod simulate cantilever-a1 --n-nodes 21 --duration 26 --plot a1.png --animate a1.gif
    jaxrod simulate cantilever-a2 --scheme bdf2 --dt 0.02 --no-progress
    jaxrod simulate helix-b1 --n-nodes 50 --duration 1
    jaxrod simulate cantilever-static --n-nodes 41 --plot static.png
    jaxrod simulate till-benchmark --integrator euler --scheme bdf_alpha --alpha -0.2 --plot till.png
    jaxrod simulate till-impulse --kirchhoff --dt 0.004
    jaxrod simulate path/to/model.toml --plot model.png    # a model file (see jaxrod.modelfile)
    jaxrod simulate pendulum.toml                          # a shipped example model file, by name
    jaxrod simulate cantilever-a1 --log-compiles           # one stderr line per XLA compilation
    jaxrod calibrate weight-release --out results/wr
    jaxrod calibrate soft-limb --out results/limb          # data found at run time, or --data PATH
    jaxrod calibrate stiff-flop --out results/stiff_flop   # STIFF-FLOP data (shared/data/stiff-flop)

``--log-compiles`` (or ``JAXROD_LOG_COMPILES=1``) lists every XLA compilation on stderr as it
happens (program name, seconds, JAX's cause when it explains the cache miss) and a summary line at
exit (:mod:`jaxrod.compile_log`).

``simulate`` prints a header, progress lines on stderr while running (unless ``--no-progress``)
and a summary: wall time (compile + run), Newton iterations per step, the final tip position and,
where the scene has reference values, the measured first-mode frequency and tip amplitude (dynamic
cantilevers) or tip deflection (static cantilever) against the analytic ones.

Errors (unknown scene, invalid values, missing or malformed files, out of memory, a Newton
solve that does not converge) print one ``error: ...`` line on stderr and exit with status 2; an
unexpected internal error prints one line too (status 1; ``JAXROD_TRACEBACK=1`` shows the
traceback). Time steps recovered by the backward-Euler fallback are reported as one ``warning:``
line.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

__all__ = ["main"]

SCHEMES = ("backward_euler", "implicit_midpoint", "average_vector_field", "bdf2", "trapezoid", "newmark", "bdf3", "bdf_alpha")
#: schemes of the shooting (Cosserat) scenes, as first-order difference formulas
SHOOTING_SCHEMES = ("backward_euler", "bdf2", "bdf3", "trapezoid", "bdf_alpha")


class CLIError(Exception):
    """A user error: reported as one ``error:`` line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise CLIError(f"{message} (see '{self.prog} --help')")


def _positive_float(name):
    def conv(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(v) or v <= 0:
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
        return v

    return conv


def _exaggeration(text):
    """``--exaggerate``: ``auto`` or a finite factor > 0 (1: true scale)."""
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number > 0 (1: true scale), got {text!r}")
    return v


def _int_at_least(name, lo):
    def conv(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
        return v

    return conv


def _build_parser():
    p = _Parser(prog="jaxrod", description="Differentiable elastic-rod simulation in JAX.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    sub.add_parser("scenes", help="list the built-in scenes", description="List the built-in scenes.")

    s = sub.add_parser(
        "simulate",
        help="run a scene and report accuracy against its reference values",
        description="Run a built-in scene (see 'jaxrod scenes') and summarise the result.",
    )
    s.add_argument("scene", help="scene name, e.g. cantilever-a1, or a model file (.toml): a path or the name "
                                 "of a shipped example, e.g. pendulum.toml")
    s.add_argument("--n-nodes", type=_int_at_least("--n-nodes", 3), metavar="N",
                   help="resolution: nodes of a cantilever, helix nodes of a helix scene, grid points of a till-* or fluidic-* scene, segments of a pcs-* scene")
    s.add_argument("--dt", type=_positive_float("--dt"), metavar="DT", help="time step [s]")
    s.add_argument("--duration", type=_positive_float("--duration"), metavar="T", help="simulated time [s]")
    s.add_argument("--scheme", choices=SCHEMES,
                   help="time scheme (default: the scene's; Till scenes take backward_euler, bdf2, bdf3, "
                        "trapezoid, bdf_alpha)")
    s.add_argument("--alpha", type=float, metavar="A", help="BDF-alpha coefficient in [-0.5, 0] (with --scheme bdf_alpha)")
    s.add_argument("--integrator", choices=("euler", "rk4"), help="Till scenes: spatial integrator (default rk4)")
    s.add_argument("--kirchhoff", action="store_true", help="Till scenes: Kirchhoff rod (no shear/extension)")
    s.add_argument("--save-every", type=_int_at_least("--save-every", 1), default=1, metavar="K",
                   help="save one frame every K steps (must divide the number of steps)")
    s.add_argument("--load-parameter", type=_positive_float("--load-parameter"), metavar="PL2_EI",
                   help="cantilever-static only: tip load as P L^2 / EI (default 0.03)")
    s.add_argument("--plot", metavar="FILE", help="save a summary figure (PNG, PDF, SVG...)")
    s.add_argument("--animate", metavar="FILE", help="save a GIF animation (dynamic scenes only)")
    s.add_argument("--export", metavar="FILE.pvd|FILE.xdmf",
                   help="write the run for ParaView: a .pvd time series of .vtu frames, or an .xdmf time series "
                        "(rods as polylines with radius and strains, bodies as points, frames as vectors; needs "
                        "meshio, the 'export' extra)")
    s.add_argument("--exaggerate", type=_exaggeration, default="auto", metavar="auto|FACTOR",
                   help="draw shapes in --plot/--animate with displacements multiplied by FACTOR (1: true "
                        "scale); auto (default): a round factor that makes a small motion visible, stated on "
                        "the figure")
    s.add_argument("--recording", metavar="NAME",
                   help="stiff-flop only: the measured recording that drives it: NoLoad (default), Load1, Load2 or "
                        "a CSV path in the recordings' format")
    s.add_argument("--no-progress", action="store_true", help="do not print progress lines while running")
    _add_log_compiles(s)

    m = sub.add_parser(
        "modal",
        help="natural frequencies and mode shapes of a model file about its static equilibrium",
        description="Linear modal analysis (jaxrod.modal) of a model file (.toml, .urdf, MJCF .xml): the "
                    "static equilibrium under its loads, then the lowest natural frequencies and mode shapes.",
    )
    m.add_argument("scene", metavar="FILE", help="a model file: a path or the name of a shipped example")
    m.add_argument("--n-modes", type=_int_at_least("--n-modes", 1), metavar="N",
                   help="number of modes (default: the file's [analysis] n_modes, else 6)")
    m.add_argument("--plot", metavar="FILE", help="save the mode shapes (PNG, PDF, SVG...)")
    _add_log_compiles(m)

    # the options only: the case modules (JAX programs, optax, matplotlib) load when a case runs
    from .cases.cli_args import SOFT_LIMB_DESCRIPTION, add_soft_limb_arguments, add_weight_release_arguments
    from .cases.cli_args import STIFF_FLOP_DESCRIPTION, add_stiff_flop_arguments

    c = sub.add_parser(
        "calibrate",
        help="fit model parameters to measured (or synthetic) data",
        description="Calibration cases: 'weight-release' (Till et al.: EI, rho, drag from a tip trace; "
        "synthetic data unless --data is given) and 'soft-limb' (DisMech real2sim: limb natural "
        "curvatures per frame from the measured AprilTag data).",
    )
    cases = c.add_subparsers(dest="case", metavar="CASE")
    cases.required = True
    wr = cases.add_parser("weight-release", help="EI, density and drag of the Till et al. steel rod",
                          description="Till et al. (2019) weight-release calibration: fit EI, density and the drag "
                          "coefficient C of a steel cantilever from its tip trajectory (synthetic unless --data).")
    add_weight_release_arguments(wr)
    sl = cases.add_parser("soft-limb", help="real2sim of the DisMech soft limb (measured data)",
                          description=SOFT_LIMB_DESCRIPTION)
    add_soft_limb_arguments(sl)
    sfl = cases.add_parser("stiff-flop", help="STIFF-FLOP module: E and damping from the measured TMTDyn data (G/E fixed at 1/3 unless --fit-shear)",
                           description=STIFF_FLOP_DESCRIPTION)
    add_stiff_flop_arguments(sfl)
    for case in (wr, sl, sfl):
        _add_log_compiles(case)
    return p


def _add_log_compiles(parser):
    parser.add_argument("--log-compiles", action="store_true",
                        help="print one line per XLA compilation on stderr (program, seconds, cause) and a "
                             "summary at the end (also: JAXROD_LOG_COMPILES=1)")


# ---------------------------------------------------------------------------------------------
#: scenes of the shooting (Cosserat) model: sized by n_points, first-order difference formulas
_SHOOTING_SCENES = ("till", "fluidic", "tendon", "stewart-gough")


def _is_shooting(scene_name: str) -> bool:
    """Scenes of the Cosserat shooting model (``--integrator``, ``--kirchhoff``, its schemes)."""
    return scene_name.startswith(_SHOOTING_SCENES)


def _size_parameter(scene_name: str) -> str:
    if _is_shooting(scene_name):
        return "n_points"
    if scene_name.startswith("pcs"):
        return "n_segments"
    return "n_helix" if scene_name.startswith("helix") else "n_nodes"


def _scene_info(name):
    """The registry entry of scene ``name`` (builds and imports nothing); CLIError if unknown."""
    from .scenes.registry import REGISTRY

    if name not in REGISTRY:
        raise CLIError(f"unknown scene {name!r}; available: {', '.join(REGISTRY)} (or a model file: path/to/model.toml)")
    return REGISTRY[name]


def _make_scene(args):
    info = _scene_info(args.scene)
    overrides = {}
    if args.n_nodes is not None:
        overrides[_size_parameter(args.scene)] = args.n_nodes
    static_name = args.scene == "cantilever-static"
    if args.load_parameter is not None:
        if not static_name:
            raise CLIError("--load-parameter applies to cantilever-static only")
        overrides["load_parameter"] = args.load_parameter
    if not static_name:
        for key in ("dt", "duration"):
            if getattr(args, key) is not None:
                overrides[key] = getattr(args, key)
    if args.recording is not None:
        if args.scene != "stiff-flop":
            raise CLIError("--recording applies to the stiff-flop scene only")
        overrides["recording"] = args.recording
    shooting = _is_shooting(args.scene)
    if args.integrator is not None or args.kirchhoff:
        if not shooting:
            raise CLIError("--integrator and --kirchhoff apply to the till-*, tendon-* and fluidic-* (Cosserat) scenes only")
        if args.integrator is not None:
            overrides["integrator"] = args.integrator
        overrides["kirchhoff"] = bool(args.kirchhoff)
    return info.build(**overrides)


def _scheme(args, shooting):
    from .integrate.schemes import DifferenceFormula, scheme_from_name

    if args.alpha is not None and args.scheme != "bdf_alpha":
        raise CLIError("--alpha needs --scheme bdf_alpha")
    if args.scheme is None:
        return None
    if shooting:
        if args.scheme not in SHOOTING_SCHEMES:
            raise CLIError(f"scheme {args.scheme} does not apply to shooting scenes; use one of {', '.join(SHOOTING_SCHEMES)}")
        if args.scheme == "bdf_alpha":
            if args.alpha is None:
                raise CLIError("--scheme bdf_alpha needs --alpha")
            return DifferenceFormula.bdf_alpha(args.alpha)
        return getattr(DifferenceFormula, args.scheme)()
    if args.scheme in ("bdf3", "bdf_alpha"):
        if args.scheme == "bdf3":
            raise CLIError("bdf3 is available for the till-* (shooting) scenes only")
        from .integrate.schemes import BDFAlpha

        if args.alpha is None:
            raise CLIError("--scheme bdf_alpha needs --alpha")
        return BDFAlpha(args.alpha)
    return scheme_from_name(args.scheme)


def _scheme_name(scheme):
    from .integrate.schemes import DifferenceFormula

    if isinstance(scheme, DifferenceFormula):
        return scheme.describe()
    if scheme is None:
        return "the model's own"
    return type(scheme).__name__


def _n_nodes(model):
    if hasattr(model, "n_points"):
        return int(model.n_points)
    if hasattr(model, "points_per_segment"):
        return int(model.rod.n_segments) * int(model.points_per_segment) + 1
    rod = getattr(model, "rod", None)
    if rod is not None:
        return rod.n_nodes
    return model.initial_state().q.shape[0]


def _fmt_vec(v):
    return "(" + ", ".join(f"{float(x):+.6f}" for x in v) + ")"


def _cmd_scenes(out):
    # from the registry: listing builds no scene (building them all took minutes)
    from .scenes.registry import REGISTRY

    width = max(len(n) for n in REGISTRY)
    for name, info in REGISTRY.items():
        print(f"{name:<{width}}  {info.description}  [{info.settings()}]", file=out)
    return 0


def _is_model_file(name):
    """A path ending in .toml, an existing file, or the name of a shipped example model file
    (checked on disk: nothing is imported)."""
    examples = os.path.join(os.path.dirname(__file__), "modelfile", "examples")
    return (name.endswith((".toml", ".urdf")) or os.path.isfile(name) or os.path.isfile(os.path.join(examples, name + ".toml"))
            or (name.endswith(".xml") and os.path.isfile(os.path.join(examples, name)))
            or (os.sep in name and os.path.isdir(name)))  # a path to a directory: reported as one


def _note_rounding(duration, dt, n_steps, out):
    """A ``note`` line when ``duration`` is not a whole number of steps ``dt`` (it is rounded)."""
    if abs(n_steps * dt - duration) > 1e-9 * max(abs(duration), dt):
        print(f"note      duration {duration:g} s is not a whole number of steps of dt = {dt:g} s "
              f"({duration / dt:.6g}): rounded to {n_steps} steps = {n_steps * dt:g} s", file=out, flush=True)


def _load_model_file(args):
    """The :class:`~jaxrod.scenes.scene.Scene` of the model file ``args.scene`` with the command-line
    overrides that apply to a file (--dt, --duration, --save-every, --plot, --animate)."""
    import dataclasses

    from .modelfile import load_model

    scene_only = {"--n-nodes": args.n_nodes, "--load-parameter": args.load_parameter, "--integrator": args.integrator,
                  "--recording": args.recording,
                  "--kirchhoff": args.kirchhoff or None, "--scheme": args.scheme, "--alpha": args.alpha}
    given = [k for k, v in scene_only.items() if v is not None]
    if given:
        raise CLIError(f"{', '.join(given)} apply to built-in scenes; a model file sets them in its tables "
                       "([simulation] scheme, alpha; the rod's resolution)")
    loaded = load_model(args.scene)
    changes = {k: getattr(args, k) for k in ("dt", "duration") if getattr(args, k) is not None}
    if changes and loaded.static:
        raise CLIError(f"--dt/--duration do not apply: {loaded.path} is a static problem")
    loaded = dataclasses.replace(loaded, **changes)
    args.save_every = loaded.save_every if args.save_every == 1 else args.save_every
    args.plot, args.animate = args.plot or loaded.plot, args.animate or loaded.animate
    return loaded


def _print_modes(loaded, n_modes, out, plot=None, exact=False):
    """Static equilibrium of ``loaded`` under its loads, then its lowest ``n_modes`` modes (at
    most as many as the model has, unless ``exact``: then more is an error): one line each
    (omega [rad/s], f [Hz], modal mass, damping ratio)."""
    import numpy as np

    from .analysis import modal

    try:
        result = modal(loaded.model, n_modes=n_modes if exact else None)
    except ValueError as e:
        msg = str(e).split("\n")[0]
        if "n_modes" in msg:
            raise CLIError(f"--n-modes {n_modes}: {msg}") from None
        raise
    omega = np.asarray(result.omega)[:n_modes]
    print(f"modal     {len(omega)} lowest modes about the static equilibrium (residual "
          f"{float(result.equilibrium_residual):.1e})", file=out)
    print("mode   omega [rad/s]        f [Hz]   modal mass   damping ratio", file=out)
    for i, w in enumerate(omega):
        print(f"{i + 1:>4}  {w:>14.6g}  {w / (2 * np.pi):>12.6g}  {float(result.modal_mass[i]):>11.4g}  "
              f"{float(result.damping_ratio[i]):>14.4g}" + ("  (unstable)" if w < 0 else ""), file=out)
    out.flush()
    if plot:
        from .plot import plot_modes

        plot_modes(result, plot, modes=len(omega), title=f"{loaded.name}: lowest modes", model=loaded.model)
        print(f"plot      {plot}", file=out, flush=True)
    return result


def _cmd_modal(args, out):
    """``jaxrod modal FILE``: the modes of a model file."""
    if not _is_model_file(args.scene):
        raise CLIError(f"{args.scene}: jaxrod modal takes a model file (.toml, .urdf or MJCF .xml); for a built-in "
                       "scene use jaxrod.modal(scene.model) in Python")
    from .modelfile import load_model

    loaded = load_model(args.scene)
    if loaded.kind == "scene" and type(loaded.model).__name__ == "CosseratModel":
        raise CLIError(f"{args.scene}: a shooting (Cosserat) model has no modal analysis; use a DER or PCS rod")
    n = args.n_modes or loaded.modal_modes or 6
    print(f"model     {loaded.name}: {loaded.description}", file=out, flush=True)
    _print_modes(loaded, n, out, args.plot, exact=args.n_modes is not None)
    return 0


def _check_export_path(args):
    """Refuse a bad ``--export`` before anything is compiled."""
    if not args.export:
        return
    import os

    if not args.export.endswith((".pvd", ".xdmf")):
        raise CLIError(f"--export {args.export}: the file must end in .pvd or .xdmf (a ParaView time series)")
    folder = os.path.dirname(os.path.abspath(args.export))
    if not os.path.isdir(folder):
        raise CLIError(f"--export {args.export}: folder {folder} does not exist")
    import importlib.util

    if importlib.util.find_spec("meshio") is None:
        raise CLIError('--export needs meshio: pip install "jaxrod[export]" (or pip install meshio)')


def _export(args, traj, model, out):
    if not args.export:
        return
    from .export import export_trajectory
    from .progress import activity

    with activity(f"writing {args.export} ({len(traj.times)} frames)", enabled=not args.no_progress):
        path = export_trajectory(traj, args.export, model)
    where = (f" in {path.stem}_frames/; open the .pvd in ParaView" if path.suffix == ".pvd" else
             "; open it in ParaView, Warp By Vector with 'displacement' moves the points")
    print(f"export    {path} ({len(traj.times)} frames{where})", file=out, flush=True)


def _cmd_simulate(args, out, err):
    """``jaxrod simulate``: a registry scene or a model file, both a :class:`~jaxrod.scenes.scene.Scene`,
    run by one path. Rigid bodies (a file of kind ``system`` or ``hybrid``) report their bodies and
    the file's ``[output] quantities``; rods their tip (or a network's centroid) and references."""
    # a model file is checked before the simulator is imported: a bad file answers at once
    scene = _load_model_file(args) if _is_model_file(args.scene) else None
    bodies = scene is not None and scene.kind in ("system", "hybrid")
    import numpy as np

    from . import analysis
    from .integrate import simulate, solve_static
    scene = _make_scene(args) if scene is None else scene
    model = scene.model
    if bodies:
        if scene.static:
            raise CLIError(f"{scene.path}: a static solve of rigid bodies is not supported; remove [simulation] static")
        print(f"model     {scene.name}: {scene.description}", file=out)
        print(f"bodies    {len(scene.body_names)} ({', '.join(scene.body_names)})", file=out)
    else:
        n = _n_nodes(model)
        print(f"scene     {scene.name}: {scene.description}", file=out)
        if scene.modal_modes:
            _print_modes(scene, scene.modal_modes, out)

    if scene.static:
        if args.animate or args.export:
            raise CLIError(f"--{'animate' if args.animate else 'export'} needs a dynamic scene; {scene.name} is static")
        ignored = [f"--{k.replace('_', '-')}" for k in ("dt", "duration", "scheme") if getattr(args, k) is not None]
        if args.save_every != 1:
            ignored.append("--save-every")
        if ignored:
            print(f"note: {', '.join(ignored)} ignored for a static scene", file=err)
        print(f"nodes     {n}", file=out)
        print(f"solve     static equilibrium, {scene.load_steps} load step(s)", file=out, flush=True)
        t0 = time.perf_counter()
        state, res = solve_static(model, load_steps=scene.load_steps, progress=not args.no_progress)
        q = np.asarray(state.q)
        wall = time.perf_counter() - t0
        q0 = np.asarray(model.initial_state().q)
        tip, tip0 = q[-1, :3], q0[-1, :3]
        print(f"wall time {wall:.2f} s (compile + run)", file=out)
        print(f"Newton    {int(res.iterations)} iterations (last load step), residual {float(res.residual_norm):.2e}",
              file=out)
        print(f"final tip position [m]  {_fmt_vec(tip)}", file=out)
        deflection = float(tip0[2] - tip[2])
        ref = scene.reference.get("tip_deflection_small_m")
        if ref is not None:
            span = float(np.max(np.linalg.norm(q0[:, :3] - q0[0, :3], axis=1)))
            if ref <= 0.05 * span:
                err_rel = analysis.relative_error(deflection, ref)
                print(f"tip deflection  {deflection:.6e} m  (P L^3/3EI = {ref:.6e} m, rel. error {100 * err_rel:+.3f}%)",
                      file=out)
            else:
                print(f"tip deflection  {deflection:.6e} m  (large deflection: the linear value "
                      f"P L^3/3EI = {ref:.4e} m does not apply)", file=out)
        else:
            print(f"tip deflection  {deflection:.6e} m", file=out)
        if args.plot:
            from .plot import plot_static
            from .progress import activity

            # the model: a network's limbs are drawn as separate lines, a floor contact as the floor
            with activity(f"drawing {args.plot}", enabled=not args.no_progress):
                fig = plot_static(q[:, :3], args.plot, title=scene.description, reference_positions=q0[:, :3],
                                  model=model, exaggeration=args.exaggerate)
            print(f"plot      {args.plot} (shapes: displacement x {fig.exaggeration:g})", file=out)
        return 0

    _check_export_path(args)
    scheme = _scheme(args, _is_shooting(scene.name))
    scheme = scene.scheme if scheme is None else scheme
    dt, duration = float(scene.dt), float(scene.duration)
    n_steps = int(round(duration / dt))
    if n_steps < 1:
        raise CLIError(f"duration {duration:g} s is shorter than one step of dt = {dt:g} s")
    if n_steps % args.save_every:
        raise CLIError(f"--save-every {args.save_every} must divide the number of steps ({n_steps})")
    if not bodies:
        print(f"nodes     {n}", file=out)
    print(f"time      dt = {dt:g} s, duration = {n_steps * dt:g} s, {n_steps} steps, "
          f"scheme {_scheme_name(scheme)}, saving every {args.save_every}", file=out, flush=True)
    _note_rounding(duration, dt, n_steps, out)
    if bodies and scene.modal_modes:
        _print_modes(scene, scene.modal_modes, out)

    t0 = time.perf_counter()
    import warnings

    from .integrate import FallbackWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FallbackWarning)
        traj = simulate(model, dt=dt, n_steps=n_steps, scheme=scheme, save_every=args.save_every,
                        progress=not args.no_progress, state0=scene.state0, solver=scene.solver)
    for w in caught:  # one line each (a recovered step is worth knowing, not a traceback)
        print(f"warning: {' '.join(str(w.message).split())}", file=err)
    times = np.asarray(traj.times)
    tip_all = np.asarray(traj.tip)
    wall = time.perf_counter() - t0
    its = np.asarray(traj.stats.iterations)
    print(f"wall time {wall:.2f} s (compile + run)", file=out)
    print(f"Newton    {its.mean():.2f} iterations/step (max {int(its.max())}), "
          f"max residual {float(np.max(np.asarray(traj.stats.residual_norm))):.2e}", file=out)
    if bodies:
        for line in scene.summary(traj):
            print(line, file=out)
        return _write_body_figures(args, traj, scene, out)
    ref = scene.reference
    if getattr(traj, "impulses", None) is not None:  # set-valued contact (Moreau): bodies on obstacles
        pos = np.asarray(traj.positions)
        centroid = pos.mean(axis=1)
        print(f"final centroid [m]      {_fmt_vec(centroid[-1])}  at t = {times[-1]:g} s "
              f"(moved {_fmt_vec(centroid[-1] - centroid[0])})", file=out)
        print(f"contacts                {int(np.asarray(traj.active[-1]).sum())} of {traj.active.shape[-1]} active "
              f"at the end, lowest gap {float(np.min(np.asarray(traj.gaps))):+.3e} m over the run "
              "(iterations above: contact-solver sweeps)", file=out)
        return _write_figures(args, traj, model, scene, out)
    if hasattr(model, "topology") and not getattr(model.topology, "chain", False):
        # a network has no tip: report where the structure went and how low it reached (a DERModel,
        # the one-limb network, is a chain and has one)
        pos = np.asarray(traj.positions)[:, : model.n_nodes]
        centroid = pos.mean(axis=1)
        print(f"final centroid [m]      {_fmt_vec(centroid[-1])}  at t = {times[-1]:g} s "
              f"(moved {1e3 * np.linalg.norm(centroid[-1] - centroid[0]):.2f} mm)", file=out)
        print(f"lowest node z [m]       {pos[..., 2].min():+.6f} over the run, {pos[-1, :, 2].min():+.6f} at the end",
              file=out)
        return _write_figures(args, traj, model, scene, out)
    print(f"final tip position [m]  {_fmt_vec(tip_all[-1])}  at t = {times[-1]:g} s", file=out)

    axis = int(ref.get("tip_axis", 2))
    uz = tip_all[:, axis] - tip_all[0, axis]
    if "omega_rad_s" in ref:
        omega_ref = float(ref["omega_rad_s"])
        omega = analysis.oscillation_frequency(times, uz, direction="up")
        if math.isfinite(omega):
            e = analysis.relative_error(omega, omega_ref)
            print(f"first-mode frequency  {omega:.6f} rad/s  (Euler-Bernoulli {omega_ref:.6f} rad/s, "
                  f"rel. error {100 * e:+.3f}%)", file=out)
        else:
            print(f"first-mode frequency  n/a: fewer than two upward zero crossings of the tip z-displacement; "
                  f"simulate longer than one period ({2 * math.pi / omega_ref:.4g} s)", file=out)
        if "tip_amplitude_m" in ref:
            amp, amp_ref = analysis.oscillation_amplitude(uz), float(ref["tip_amplitude_m"])
            e = analysis.relative_error(amp, amp_ref)
            print(f"tip amplitude         {amp:.6e} m  (reference {amp_ref:.6e} m, rel. error {100 * e:+.3f}%)",
                  file=out)
    else:
        mean = float(np.mean(uz))
        amp = analysis.oscillation_amplitude(uz)
        period = analysis.oscillation_period(times, uz, level=mean, direction="up")
        ptxt = f"{period:.4g} s" if math.isfinite(period) else "n/a (record shorter than a period)"
        print(f"tip {'xyz'[axis]}-displacement    mean {mean:+.4e} m, half range {amp:.4e} m, period about the mean {ptxt}",
              file=out)

    return _write_figures(args, traj, model, scene, out)


def _write_body_figures(args, traj, scene, out):
    """``--plot``/``--animate``/``--export`` of a model file of rigid bodies (and rods)."""
    from .progress import activity

    out.flush()
    if args.plot:
        from .plot import plot_bodies

        with activity(f"drawing {args.plot}", enabled=not args.no_progress):
            plot_bodies(traj, scene.body_names, args.plot, title=scene.description, model=scene.model)
        print(f"plot      {args.plot}", file=out, flush=True)
    if args.animate:
        from .plot import animate_bodies

        with activity(f"writing the animation {args.animate} ({len(traj.times)} frames)", enabled=not args.no_progress):
            animate_bodies(traj, scene.body_names, args.animate, title=scene.name, model=scene.model)
        print(f"animation {args.animate} (3-D and x-z, true scale)", file=out, flush=True)
    _export(args, traj, scene.model, out)
    return 0


def _write_figures(args, traj, model, scene, out):
    from .progress import activity

    report = not args.no_progress
    out.flush()  # the summary first, also when stdout is a pipe
    if getattr(traj, "impulses", None) is not None:  # set-valued contact: bodies from above, a tracked path
        return _write_contact_figures(args, traj, model, scene, out)
    if args.plot or args.animate:
        from .plot import animate_trajectory, displacement_scale, plot_trajectory

        # one factor for the figure and the GIF; the model: a network's limbs are drawn as
        # separate lines, a floor contact as the floor
        pos = traj.positions
        scale = displacement_scale(pos, pos[0], args.exaggerate, model=model)
    if args.plot and getattr(traj, "plate_position", None) is not None:  # parallel robot: the plate
        from .plot import plot_plate_trajectory

        with activity(f"drawing {args.plot}", enabled=report):
            plot_plate_trajectory(traj, args.plot, title=scene.description,
                                  actuated_s=scene.reference.get("actuated_s"))
        print(f"plot      {args.plot} (plate position, tilt and path, true scale)", file=out, flush=True)
    elif args.plot:
        with activity(f"drawing {args.plot}", enabled=report):
            plot_trajectory(traj, args.plot, title=scene.description, model=model, exaggeration=scale)
        print(f"plot      {args.plot} (shapes: displacement x {scale:g})", file=out, flush=True)
        if getattr(model, "tendons", ()) and hasattr(model, "tendon_histories"):
            from .plot import plot_tendon_robot

            with activity("drawing the tendon inputs", enabled=report):
                extra = plot_tendon_robot(traj, model, args.plot, title=scene.description)
            print(f"plot      {extra} (tip path, tensions, motor displacements)", file=out, flush=True)
    if args.animate:
        with activity(f"writing the animation {args.animate} ({len(traj.times)} frames)", enabled=report):
            animate_trajectory(traj, args.animate, title=scene.name, model=model, exaggeration=scale)
        print(f"animation {args.animate} (shapes: displacement x {scale:g})", file=out, flush=True)
    _export(args, traj, model, out)
    return 0


def _write_contact_figures(args, traj, model, scene, out):
    """``--plot``/``--animate`` of a set-valued contact run: top view with the path of the scene's
    ``reference["track_body"]`` (the snake: link 6), and a top + side view GIF."""
    from .progress import activity

    report = not args.no_progress
    track = scene.reference.get("track_body")
    what = "the centroid" if track is None else model.system.bodies[track].name
    if args.plot:
        from .plot import plot_contact_trajectory

        with activity(f"drawing {args.plot}", enabled=report):
            plot_contact_trajectory(traj, args.plot, title=scene.description, model=model, track=track)
        print(f"plot      {args.plot} (top view, path of {what}, contacts touching; true scale)", file=out, flush=True)
    if args.animate:
        from .plot import animate_contact_trajectory

        with activity(f"writing the animation {args.animate} ({len(traj.times)} frames)", enabled=report):
            animate_contact_trajectory(traj, args.animate, title=scene.name, model=model, track=track)
        print(f"animation {args.animate} (top view true scale, side view)", file=out, flush=True)
    _export(args, traj, model, out)
    return 0


def _cmd_calibrate(args, out):
    from .cases import soft_limb, weight_release

    if args.case == "weight-release":
        weight_release.run_from_args(args, out=out)
    elif args.case == "stiff-flop":
        from .cases import stiff_flop_calibration

        try:
            stiff_flop_calibration.run_from_args(args, out=out)
        except FileNotFoundError as e:
            raise CLIError(str(e)) from None
    else:
        from .datasets.soft_limb import resolve_data_path

        try:
            args.data = str(resolve_data_path(args.data))
        except FileNotFoundError as e:
            raise CLIError(str(e)) from None
        soft_limb.run_from_args(args)
    return 0


def main(argv=None) -> int:
    """Entry point of the ``jaxrod`` command; returns the exit status (0 success, 2 error)."""
    out, err = sys.stdout, sys.stderr
    parser = _build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help
            return int(e.code or 0)
        if args.command == "scenes":
            return _cmd_scenes(out)
        if getattr(args, "log_compiles", False):
            from . import compile_log

            compile_log.log_to_stderr()
        if args.command == "simulate" and not _is_model_file(args.scene):
            _scene_info(args.scene)  # a misspelt name is reported before the simulator is imported
        if args.command == "calibrate":
            return _cmd_calibrate(args, out)
        if args.command == "modal":
            return _cmd_modal(args, out)
        return _cmd_simulate(args, out, err)
    except CLIError as e:
        print(f"error: {e}", file=err)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=err)
        return 130
    except Exception as e:
        # a ConvergenceError can only come from an imported jaxrod.integrate: do not import it here
        sim = sys.modules.get("jaxrod.integrate.results")
        user_errors = (ValueError, OSError, EOFError) + ((sim.ConvergenceError,) if sim is not None else ())
        msg = " ".join(str(e).split()) or type(e).__name__
        if isinstance(e, user_errors):
            # user-facing errors from the library (bad values, unreadable or malformed files)
            print(f"error: {msg}", file=err)
            return 2
        if isinstance(e, MemoryError):
            # e.g. a data file whose header claims a gigantic array
            print(f"error: out of memory ({msg}); is the input file what it claims to be?", file=err)
            return 2
        if os.environ.get("JAXROD_TRACEBACK"):
            raise
        # anything else is a bug of ours: still one line, the traceback on request
        print(f"error: internal error {type(e).__name__}: {msg} (set JAXROD_TRACEBACK=1 for the traceback)",
              file=err)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
