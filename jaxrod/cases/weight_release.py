"""Till et al. (2019) sec. 4 weight-release calibration: fit EI (or E), density rho and the
square-law drag coefficient C of a steel cantilever from its tip trajectory.

Setup (scene ``till-weight-release``, spec seed000 sec. 6): a 1.42 mm spring-steel rod, L = 0.408 m,
clamped at the origin pointing along ``+z``, gravity ``-x``; a 20 g weight hanging from the tip
(0.196 N along ``-x``) is cut at ``t = 0`` and the rod vibrates in the x-z plane. The paper fitted
EI, rho, C with ``fsolve`` on four hand-picked features (first peak, first valley, final peak,
frequency); here the whole tip trace is fitted by least squares with exact gradients through every
implicit shooting solve (forward mode: one compiled program returns the residuals and their
Jacobian, reused by the identifiability analysis).

Data:

* measured: a CSV/NPZ marker file (:mod:`jaxrod.calibrate.data`) whose first (or named) marker is
  the tip, in this frame (``x`` vertical, up positive; ``z`` along the undeformed rod; metres, or
  use ``length_scale``), ``t = 0`` at the release. Only the measured axes enter (a planar camera
  gives ``x`` and ``z``).
* synthetic (default): our own Cosserat model at the Table 5 values (EI 0.0380 N m^2,
  rho 7602 kg/m^3, C 2.1 g/m^2), in :class:`WeightReleaseSettings` a finer model than the fit
  model (RK4, 100 points, 3 shooting segments, dt = 1 ms) sampled like the paper's camera (1 kHz)
  with Gaussian noise of 0.1 mm on ``x`` and ``z``. Everything printed or saved from it is
  labelled SYNTHETIC. The command line runs the quick preset :data:`QUICK` by default (data from
  the fit model itself, ~1-2 min) and this finer study with ``--fine`` (18 and 48 min wall in two runs on a loaded 2-core machine).

Evaluation: ``hold_out`` (command line default 0.25) of the record at its end is never fitted;
its tip error is printed beside the in-sample one. The identifiability report compares the
residuals with the stated noise and tests them for structure (lack of fit), with sandwich errors.

The fit starts ~30% off (EI x 1.3, rho x 0.7, C x 1.3) and extends the fitted time window in
stages (default the first half, then all of the trace, by masking later frames: the same compiled
program): with the frequency ~36% off at the start, the first cycles pin the frequency before
the later ones could be matched a cycle off. Residuals are summed over 27 ms blocks (one period
of the second bending mode, see :func:`~jaxrod.calibrate.losses.block_residuals`).

Measured (issue 12; synthetic data from RK4, 100 points, dt 1 ms; fit model RK4, 3 segments,
dt 1 ms, 0.6 s, everything fitted: ``--fine --hold-out 0``; 2-core machine at load ~10): before the
Cosserat fix of issue 12, with 40 points EI -0.07%, rho -0.10%, C +35.5% (with 20 points C +167%,
with 10 points C +700%): the RK4 sweep interpolated the time history at its stage points, a
grid-dependent negative damping that the fitted drag absorbed; `identify` flags such a fit
(residuals 4.2x the stated noise, chi2/dof 18). After the fix (every stage point keeps its own
history): EI -0.007%, rho -0.007%, C +0.125%, 36 iterations, 112 evaluations, 2891 s wall
(524 s CPU) at load 10-15.
With ``data_model="same"`` (data from the fit model itself, no
discretisation mismatch) all three are recovered to the noise level (EI, rho 0.02%, C 0.25% with
Euler 10 points, dt 4 ms: the test settings, ~1.5 min).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass

import jax.numpy as jnp
import numpy as np

from ..progress import activity, say
from ..scenes import get_scene
from ..integrate import simulate
from ..solvers.jacobian import DenseJacobianSolver
from ..solvers.newton import NewtonSolver
from ..integrate.schemes import DifferenceFormula
from ..calibrate.data import MarkerTracks, load_markers, save_markers_csv
from ..calibrate.fit import FitReport, Objective, fit
from ..calibrate.identify import IdentifiabilityReport, identify
from ..calibrate.losses import block_index, block_residuals, tip_residuals
from ..calibrate.params import Log, Parameter, ParamSet

# the settings record and the command-line options import nothing heavy (the CLI parser uses them)
from .cli_args import CLI_HOLD_OUT, FINE, QUICK, WeightReleaseSettings  # noqa: F401  (re-exported)
from .cli_args import add_weight_release_arguments as add_arguments

__all__ = [
    "TABLE5",
    "WeightReleaseResult",
    "WeightReleaseSettings",
    "add_arguments",
    "main",
    "make_objective",
    "objective_data",
    "run",
    "settings_from_args",
    "synthesize",
    "weight_release_model",
]

#: Table 5 values used for the synthetic data (the issue's EI 0.0380 N m^2, rho 7602 kg/m^3,
#: C 2.1 g/m^2; Table 5 lists C = 2.08-2.12 g/m^2 depending on the model).
TABLE5 = {"EI": 0.0380, "rho": 7602.0, "C": 2.1e-3}
UNITS = {"EI": "N m^2", "E": "Pa", "rho": "kg/m^3", "C": "kg/m^2"}
ROD_RADIUS_M = 0.5 * 1.42e-3
SECOND_MOMENT_M4 = math.pi * ROD_RADIUS_M**4 / 4


def weight_release_model(
    n_points=40,
    integrator="rk4",
    segments=3,
    *,
    EI=TABLE5["EI"],
    rho=TABLE5["rho"],
    C=TABLE5["C"],
    mass=0.020,
):
    """The weight-release :class:`~jaxrod.models.cosserat.CosseratModel` with bending stiffness
    ``EI`` [N m^2] (E = EI / I, G = E / 2.6), density ``rho`` [kg/m^3] and isotropic drag ``C``
    [kg/m^2]; the tip weight ``mass`` [kg] is released at ``t = 0``."""
    sc = get_scene(
        "till-weight-release",
        n_points=int(n_points),
        integrator=integrator,
        segments=int(segments),
        mass=float(mass),
    )
    ps = weight_release_params(sc.model, {"EI": EI, "rho": rho, "C": C})
    return ps.apply(sc.model, ps.initial_values())


def weight_release_params(model, start: dict, *, fit_E: bool = False) -> ParamSet:
    """:class:`ParamSet` of EI (or E), rho and C (log transforms) writing into ``model``.

    EI is written as ``E = EI / I`` with ``G`` kept at ``E G0 / E0`` (Poisson ratio unchanged)."""
    E0 = float(model.rod.youngs_modulus)
    g_ratio = float(model.rod.shear_modulus) / E0
    I = float(model.rod.second_moments[0])
    where_E = lambda m: (m.rod.youngs_modulus, m.rod.shear_modulus)
    if fit_E:
        stiff = Parameter(
            "E",
            float(start["EI"]) / I,
            Log(scale=1e11),
            where=where_E,
            to_leaf=lambda E, m: (E, g_ratio * E),
            unit=UNITS["E"],
        )
    else:
        stiff = Parameter(
            "EI",
            float(start["EI"]),
            Log(scale=0.01),
            where=where_E,
            to_leaf=lambda EI, m: (EI / I, g_ratio * EI / I),
            unit=UNITS["EI"],
        )
    return ParamSet(
        [
            stiff,
            Parameter(
                "rho",
                float(start["rho"]),
                Log(scale=1e3),
                where=lambda m: m.rod.density,
                unit=UNITS["rho"],
            ),
            Parameter(
                "C",
                float(start["C"]),
                Log(scale=1e-3),
                where=lambda m: m.rod.drag,
                unit=UNITS["C"],
            ),
        ]
    )


def _solver(lm_fallback: bool) -> NewtonSolver:
    return NewtonSolver(
        rtol=1e-10,
        atol=1e-10,
        max_steps=25,
        linear_solver=DenseJacobianSolver(),
        reuse_jacobian=True,
        fallback="levenberg_marquardt" if lm_fallback else None,
    )


def make_objective(settings: WeightReleaseSettings, tracks: MarkerTracks, *, marker=0):
    """The tip-trace :class:`Objective` of the fit model (data = ``{"tracks", "scale"}``).

    Residuals: ``(simulated tip - measured tip) / scale`` on the measured axes at the data times
    (cubic interpolation in time); NaN when a shooting solve fails (the line search then backs off).
    Returns ``(objective, base model)``.
    """
    s = settings
    model0 = weight_release_model(s.n_points, s.integrator, s.segments, mass=s.mass)
    start = {k: TABLE5[k] * float(s.start[k]) for k in ("EI", "rho", "C")}
    ps = weight_release_params(model0, start, fit_E=s.fit_E)
    scheme = DifferenceFormula.bdf_alpha(s.alpha)
    solver = _solver(s.lm_fallback)
    n_steps, dt = s.n_steps, float(s.dt)
    k = tracks.marker(marker) if isinstance(marker, str) else int(marker)

    def residual_fn(values, data):
        traj = simulate(
            ps.apply(model0, values),
            dt=dt,
            n_steps=n_steps,
            scheme=scheme,
            solver=solver,
            throw=False,
        )
        tr = MarkerTracks(data["times"], data["positions"], data["mask"])
        r, m = tip_residuals(traj, tr, marker=k, scale=data["scale"])
        T = data["times"].shape[0]
        r, m = block_residuals(r.reshape(T, 3), m.reshape(T, 3), index=data["blocks"])
        return jnp.where(jnp.all(traj.stats.converged), r.ravel(), jnp.nan), m.ravel()

    data = objective_data(
        tracks, s.residual_scale, block_frames=block_frames(s, tracks)
    )
    return Objective(residual_fn, ps, data, robust=s.robust), model0


def block_frames(settings: WeightReleaseSettings, tracks: MarkerTracks) -> int:
    """Frames per residual block: ``settings.block`` [s] over the median frame interval."""
    if not settings.block or tracks.n_frames < 2:
        return 1
    dt = float(np.median(np.diff(np.asarray(tracks.times))))
    return max(1, round(settings.block / dt))


def objective_data(
    tracks: MarkerTracks, scale: float, mask=None, *, block_frames: int = 1
) -> dict:
    """The data pytree of :func:`make_objective`: arrays only (``times``, ``positions``, ``mask``,
    ``scale`` [m], ``blocks``: block number of each frame), so new data of the same shape reuse
    the compiled program (``block_frames = 1``: every frame its own block, i.e. no averaging)."""
    return {
        "times": np.asarray(tracks.times, dtype=float),
        "positions": np.asarray(tracks.positions, dtype=float),
        "mask": np.asarray(tracks.mask if mask is None else mask, dtype=bool),
        "scale": np.asarray(scale, dtype=float),
        "blocks": block_index(tracks.n_frames, block_frames),
    }


def _xz_mask(T):
    m = np.zeros((T, 1, 3), bool)
    m[:, :, [0, 2]] = True
    return m


def _predict_with(objective, theta, times):
    """Tip ``(T, 3)`` predictions of the objective's model at ``times`` (x, z; y = 0) through the
    objective's own compiled program: with zero 'measurements' and unit scale the residuals are
    the predictions (no second simulation program to compile)."""
    T = len(times)
    dummy = MarkerTracks.from_arrays(
        times, np.zeros((T, 1, 3)), _xz_mask(T), names=["tip"], source="prediction"
    )
    r, _ = objective.residuals(theta, objective_data(dummy, 1.0))
    return np.asarray(r).reshape(T, 3)


def synthesize(
    settings: WeightReleaseSettings, *, objective=None, verbose=True, stream=None
) -> tuple[MarkerTracks, dict]:
    """SYNTHETIC tip track at the Table 5 values with camera-like noise (see the module docstring).

    Returns ``(tracks, info)`` with ``info`` the generating model, its wall time and the true values.
    """
    s = settings
    stream = sys.stderr if stream is None else stream
    rng = np.random.default_rng(s.seed)
    t0 = time.perf_counter()
    if s.data_model == "same":
        if objective is None:
            raise ValueError(
                "data_model='same' needs the fit objective (its program generates the data)"
            )
        times = np.arange(s.n_steps + 1) * s.dt
        ps = objective.params
        true = {"EI": TABLE5["EI"], "rho": TABLE5["rho"], "C": TABLE5["C"]}
        if s.fit_E:
            true = {
                "E": TABLE5["EI"] / SECOND_MOMENT_M4,
                "rho": true["rho"],
                "C": true["C"],
            }
        if verbose:
            say(f"synthesizing data with the fit model itself ({s.describe_fit_model()}), "
                f"{s.n_steps} steps ...", stream)
        # the first evaluation compiles the fit program (its Jacobian too), which the fit reuses
        with activity("synthesizing data (compiling the fit program, reused by the fit)", enabled=verbose,
                      stream=stream):
            tip = _predict_with(objective, ps.to_vector(true), times)
        desc = f"the fit model itself ({s.describe_fit_model()})"
    else:
        model = weight_release_model(
            s.data_n_points, s.data_integrator, s.data_segments, mass=s.mass
        )
        ddt = 1.0 / s.camera_rate
        n = round(s.duration / ddt)
        if verbose:
            say(
                f"synthesizing data: Cosserat {s.data_integrator}, {s.data_n_points} points, "
                f"{s.data_segments} segment(s), dt = {1e3 * ddt:g} ms, {n} steps ...",
                stream,
            )
        # progress lines (static equilibrium at release, compilation, steps) go to stderr
        traj = simulate(
            model,
            dt=ddt,
            n_steps=n,
            scheme=DifferenceFormula.bdf_alpha(s.alpha),
            solver=_solver(True),
            progress=verbose,
        )
        times = np.asarray(traj.times)
        tip = np.asarray(traj.tip)
        desc = (
            f"Cosserat {s.data_integrator}, {s.data_n_points} points, {s.data_segments} segment(s), "
            f"BDF-alpha({s.alpha:g}) dt = {1e3 * ddt:g} ms"
        )
    wall = time.perf_counter() - t0
    if verbose:
        say(f"synthesized data in {wall:.1f} s", stream)
    T = times.size
    pos = tip.reshape(T, 1, 3) + rng.normal(0.0, s.noise, (T, 1, 3)) * _xz_mask(T)
    source = (
        f"SYNTHETIC: jaxrod {desc} at EI = {TABLE5['EI']} N m^2, rho = {TABLE5['rho']} kg/m^3, "
        f"C = {TABLE5['C']} kg/m^2, noise {1e3 * s.noise:g} mm at {(T - 1) / max(times[-1] - times[0], 1e-300):.0f} Hz"
    )
    tracks = MarkerTracks.from_arrays(
        times,
        pos,
        _xz_mask(T),
        names=["tip"],
        arc_lengths=[0.408],
        synthetic=True,
        source=source,
    )
    return tracks, {"model": desc, "wall_s": wall, "true_values": dict(TABLE5)}


@dataclass
class WeightReleaseResult:
    """Outcome of :func:`run`."""

    settings: WeightReleaseSettings
    tracks: MarkerTracks
    reports: list  # one FitReport per stage
    identifiability: IdentifiabilityReport | None
    true_values: dict | None
    fitted: dict
    relative_errors: dict | None
    iterations: int
    evaluations: int
    fit_wall_s: float
    compile_s: float | None
    data_wall_s: float
    figure: str | None = None
    evaluation: object = None  # jaxrod.calibrate.evaluate.EvaluationReport of the tip errors [mm]

    @property
    def report(self) -> FitReport:
        return self.reports[-1]

    def summary(self) -> str:
        s = self.settings
        syn = self.tracks.synthetic
        lines = [
            (
                "SYNTHETIC DATA (simulated by jaxrod, not a measurement): "
                if syn
                else "data: "
            )
            + self.tracks.source,
            (
                f"fit model: {s.describe_fit_model()}; start EI x{s.start['EI']:g}, rho x{s.start['rho']:g}, "
                f"C x{s.start['C']:g}; {s.method}, windows {list(s.windows)}"
            ),
            f"  {'parameter':<9s} {'start':>12s} {'fitted':>12s}"
            + (
                f" {'true':>12s} {'error':>9s}"
                if self.true_values is not None
                else f" {'Table 5':>12s} {'diff.':>9s}"
            )
            + f" {'std err':>9s} {'robust':>9s}",
        ]
        start = self.reports[0].initial_values
        ref = dict(TABLE5) if self.true_values is None else self.true_values
        se, rob = {}, {}
        ident = self.identifiability
        if ident is not None:
            se = dict(zip(ident.labels, ident.relative_std_errors))
            if ident.robust_std_errors is not None:
                rob = dict(zip(ident.labels, ident.robust_std_errors / np.abs(ident.values)))
        for name, v in self.fitted.items():
            t = ref.get(name)
            if name == "E":
                t = ref["EI"] / SECOND_MOMENT_M4
            row = f"  {name:<9s} {float(start[name]):12.6g} {v:12.6g}"
            if t is not None:
                row += f" {t:12.6g} {100 * (v - t) / t:+8.3f}%"
            if name in se:
                row += f" {100 * se[name]:8.3f}%"
            if name in rob:
                row += f" {100 * rob[name]:8.3f}%"
            lines.append(row + f"  {UNITS.get(name, '')}")
        if ident is not None and ident.lack_of_fit:
            lines.append(
                "  LACK OF FIT: the residuals exceed the stated noise or are structured; the std errors "
                "are lower bounds, not the accuracy of the values (details below)"
            )
        lines.append(
            f"iterations {self.iterations} ({' + '.join(str(r.iterations) for r in self.reports)} over "
            f"{len(self.reports)} stage(s)), objective evaluations {self.evaluations}, final loss "
            f"{self.report.loss:.4g} (residuals in units of {1e3 * s.residual_scale:g} mm)"
        )
        same = syn and s.data_model == "same"
        where = "data synthesis" if same else "fit"
        lines.append(
            f"wall time: fit {self.fit_wall_s:.1f} s"
            + (f", data synthesis {self.data_wall_s:.1f} s" if syn else "")
            + (
                f"; first evaluation of the fit program (compile + run, in the {where}) "
                f"{self.compile_s:.1f} s"
                if self.compile_s
                else ""
            )
        )
        if same:
            lines.append(
                "note: the data come from the fit model itself, so this run checks the optimiser and "
                "the identifiability, not the model's accuracy (--fine: data from a finer model)"
            )
        if self.evaluation is not None:
            lines.append(self.evaluation.summary())
        return "\n".join(lines)


def run(
    settings: WeightReleaseSettings | None = None,
    *,
    data=None,
    marker=0,
    length_scale: float = 1.0,
    out_dir=None,
    verbose: bool = True,
    print_every: int = 1,
    plot: bool = True,
    stream=None,
    identifiability: bool = True,
) -> WeightReleaseResult:
    """Run the weight-release calibration.

    Arguments:
        settings: :class:`WeightReleaseSettings` (default settings if ``None``).
        data: ``None`` for synthetic data, a path to a CSV/NPZ marker file, or :class:`MarkerTracks`.
        marker: tip marker (index or name) in the data.
        length_scale: metres per file length unit for ``data`` files.
        out_dir: folder for the figure, the (synthetic) data CSV and ``weight_release.json``.
        verbose / print_every / stream: progress output (stderr by default).
        identifiability: also compute the Gauss-Newton identifiability report at the fit.
    """
    s = WeightReleaseSettings() if settings is None else settings
    stream = sys.stderr if stream is None else stream
    say = (
        (lambda msg: print(msg, file=stream, flush=True))
        if verbose
        else (lambda msg: None)
    )
    info = {"wall_s": 0.0}
    if data is None:
        if s.data_model == "same":
            # the generating program is the fit program: build the objective on placeholder tracks first
            T = s.n_steps + 1
            placeholder = MarkerTracks.from_arrays(
                np.arange(T) * s.dt,
                np.zeros((T, 1, 3)),
                _xz_mask(T),
                names=["tip"],
                source="placeholder",
            )
            objective, _ = make_objective(s, placeholder, marker=0)
            tracks, info = synthesize(
                s, objective=objective, verbose=verbose, stream=stream
            )
            objective.data = objective_data(
                tracks, s.residual_scale, block_frames=block_frames(s, tracks)
            )
        else:
            tracks, info = synthesize(s, verbose=verbose, stream=stream)
            objective, _ = make_objective(s, tracks, marker=0)
        true_values = dict(TABLE5)
        if s.fit_E:
            true_values = {
                "E": TABLE5["EI"] / SECOND_MOMENT_M4,
                "rho": TABLE5["rho"],
                "C": TABLE5["C"],
            }
    else:
        tracks = (
            data
            if isinstance(data, MarkerTracks)
            else load_markers(data, length_scale=length_scale)
        )
        tracks = tracks.window(0.0, s.duration)
        if float(tracks.times[0]) < 0:
            raise ValueError("data times must start at or after the release (t = 0)")
        objective, _ = make_objective(s, tracks, marker=marker)
        true_values = None
    say(tracks.describe())
    say(f"fit model: {s.describe_fit_model()}")

    base_mask = np.asarray(tracks.mask)
    times = np.asarray(tracks.times)
    reports: list[FitReport] = []
    theta = None
    t_fit = time.perf_counter()
    nb = block_frames(s, tracks)
    if nb > 1:
        say(
            f"residuals summed over blocks of {nb} frames (~{1e3 * s.block:g} ms, low-pass)"
        )
    train_end = (1.0 - s.hold_out) * s.duration
    for w in s.windows:
        cut = w * train_end + 1e-12
        stage_mask = base_mask & (times <= cut)[:, None, None]
        say(
            f"stage: fitting t <= {cut:.3g} s ({int(np.sum(stage_mask))} measured coordinates)"
        )
        rep = fit(
            objective,
            theta,
            method=s.method,
            data=objective_data(tracks, s.residual_scale, stage_mask, block_frames=nb),
            max_iters=s.max_iters,
            gtol=s.gtol,
            ftol=s.ftol,
            print_every=print_every,
            verbose=verbose,
            stream=stream,
        )
        reports.append(rep)
        theta = rep.theta
    fit_wall = time.perf_counter() - t_fit
    fitted = {k: float(v) for k, v in reports[-1].values.items()}
    rel = (
        None
        if true_values is None
        else {k: (fitted[k] - true_values[k]) / true_values[k] for k in fitted}
    )
    final_data = objective_data(tracks, s.residual_scale, stage_mask, block_frames=nb)
    ident = None
    if identifiability:
        # residuals are (frames, 3) row-major: one series per axis, in time order
        stated = s.noise / s.residual_scale if s.noise > 0 else None
        ident = identify(
            objective,
            reports[-1],
            data=final_data,
            noise=stated,
            groups=np.tile(np.arange(3), tracks.n_frames),
            warn=False,
        )
    evaluation = _evaluate(objective, reports[-1].theta, tracks, s, stage_mask)
    res = WeightReleaseResult(
        settings=s,
        tracks=tracks,
        reports=reports,
        identifiability=ident,
        true_values=true_values,
        fitted=fitted,
        relative_errors=rel,
        iterations=sum(r.iterations for r in reports),
        evaluations=sum(r.evaluations for r in reports),
        fit_wall_s=fit_wall,
        compile_s=objective.compile_time,
        data_wall_s=info["wall_s"],
        evaluation=evaluation,
    )
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        if tracks.synthetic:
            save_markers_csv(
                os.path.join(out_dir, "weight_release_synthetic_data.csv"),
                tracks,
                comment=f"SYNTHETIC DATA, not a measurement.\n{tracks.source}\n"
                "columns: t [s], tip_x, tip_z [m]; rod along +z, gravity -x",
            )
        if plot:
            res.figure = _plot(
                res, objective, os.path.join(out_dir, "weight_release_fit.png")
            )
        with open(os.path.join(out_dir, "weight_release.json"), "w") as fh:
            json.dump(_json(res), fh, indent=2)
    return res


def _evaluate(objective, theta, tracks: MarkerTracks, s: WeightReleaseSettings, fitted_mask):
    """Tip errors [mm] (distance in the measured axes) at every frame, split into the fitted
    frames and the held-out end of the record (one evaluation of the compiled program)."""
    from ..calibrate.evaluate import Split, evaluate

    times = np.asarray(tracks.times)
    pred = _predict_with(objective, theta, times)  # (T, 3)
    meas = np.asarray(tracks.positions)[:, 0, :]
    m = np.asarray(tracks.mask)[:, 0, :]
    err = np.sqrt(np.sum(np.where(m, pred - meas, 0.0) ** 2, axis=-1)) * 1e3
    err = np.where(np.any(m, axis=-1), err, np.nan)
    fitted = np.any(np.asarray(fitted_mask)[:, 0, :], axis=-1)
    desc = (
        f"frames after t = {(1 - s.hold_out) * s.duration:.4g} s held out (last {100 * s.hold_out:g}%)"
        if s.hold_out
        else f"all {times.size} frames fitted"
    )
    rows = Split("frames", times.size, np.flatnonzero(fitted), np.flatnonzero(~fitted), desc)
    noise = f"; the data carry {1e3 * s.noise:g} mm noise per axis" if tracks.synthetic else ""
    return evaluate(
        err[:, None],
        rows=rows,
        units="mm",
        quantity="tip distance, fitted model vs data" + noise,
        marker_names=["tip"],
    )


def _plot(res: WeightReleaseResult, objective, path):
    from ..calibrate.plots import plot_fit

    tr = res.tracks
    t = np.asarray(tr.times)
    data = np.asarray(tr.positions)[:, 0, :]
    mask = np.asarray(tr.mask)[:, 0, :]
    axes = [a for a in range(3) if np.any(mask[:, a])]
    fit_pred = _predict_with(objective, res.report.theta, t)
    start_theta = objective.params.to_vector(
        {k: jnp.asarray(v) for k, v in res.reports[0].initial_values.items()}
    )
    start_pred = _predict_with(objective, start_theta, t)
    history = np.concatenate([r.history for r in res.reports])
    return plot_fit(
        path,
        t,
        data[:, axes],
        t,
        fit_pred[:, axes],
        labels=[f"tip {'xyz'[a]}" for a in axes],
        mask=mask[:, axes],
        start=start_pred[:, axes],
        residuals=(data - fit_pred)[:, axes],
        history=history,
        title="Weight release: tip trajectory, fit of EI, rho, C",
        synthetic=tr.synthetic,
    )


def _json(res: WeightReleaseResult) -> dict:
    ident = res.identifiability
    return {
        "synthetic": bool(res.tracks.synthetic),
        "data": res.tracks.source,
        "settings": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(res.settings).items()
        },
        "fitted": res.fitted,
        "true_values": res.true_values,
        "relative_errors": res.relative_errors,
        "iterations": res.iterations,
        "evaluations": res.evaluations,
        "final_loss": res.report.loss,
        "fit_wall_s": res.fit_wall_s,
        "first_evaluation_incl_compile_s": res.compile_s,
        "data_synthesis_wall_s": res.data_wall_s,
        "evaluation": None if res.evaluation is None else res.evaluation.as_dict(),
        "identifiability": None
        if ident is None
        else {
            "labels": ident.labels,
            "relative_std_errors": [float(x) for x in ident.relative_std_errors],
            "correlation": np.asarray(ident.correlation).tolist(),
            "condition_number": ident.condition_number,
            "noise_residual_units": ident.noise,
            "robust_relative_std_errors": None
            if ident.robust_std_errors is None
            else [float(x) for x in ident.robust_std_errors / np.abs(ident.values)],
            "lack_of_fit": ident.lack_of_fit,
            "lack_of_fit_messages": [] if ident.diagnostics is None else ident.diagnostics.messages,
            "chi2_dof": None if ident.diagnostics is None else ident.diagnostics.chi2_dof,
            "warnings": ident.warnings,
        },
    }


# ---- command line (options and presets: jaxrod.cases.cli_args) ----------------------------------------


def settings_from_args(a) -> WeightReleaseSettings:
    preset = FINE if a.fine else QUICK
    pick = lambda k: preset[k] if getattr(a, k) is None else getattr(a, k)  # noqa: E731
    return WeightReleaseSettings(
        n_points=pick("n_points"),
        integrator=pick("integrator"),
        segments=a.segments,
        dt=pick("dt"),
        duration=a.duration,
        lm_fallback=a.lm_fallback,
        data_model=pick("data_model"),
        data_n_points=a.data_n_points,
        camera_rate=a.camera_rate,
        noise=a.noise,
        seed=a.seed,
        start={"EI": a.start[0], "rho": a.start[1], "C": a.start[2]},
        method=a.method,
        max_iters=a.max_iters,
        windows=tuple(a.windows),
        robust=a.robust,
        block=a.block,
        fit_E=a.fit_E,
        hold_out=a.hold_out,
    )


def run_from_args(a, out=None) -> WeightReleaseResult:
    """Run from parsed :func:`add_arguments` options and print the summary to ``out`` (stdout)."""
    out = sys.stdout if out is None else out
    s = settings_from_args(a)
    marker = int(a.marker) if str(a.marker).isdigit() else a.marker
    res = run(
        s,
        data=a.data,
        marker=marker,
        length_scale=a.length_scale,
        out_dir=a.out,
        verbose=not a.quiet,
        print_every=a.print_every,
        plot=not a.no_plot,
    )
    print(res.summary(), file=out)
    if res.identifiability is not None:
        print(res.identifiability.summary(), file=out)
    if res.figure:
        print(f"figure: {res.figure}", file=out)
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="weight_release",
        description="Till et al. weight-release calibration of EI, rho and drag C from a tip trajectory "
        "(synthetic data from our own model unless --data is given).",
    )
    add_arguments(p)
    a = p.parse_args(argv)
    try:
        run_from_args(a)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
