"""The ``jaxrod`` command line, run in-process through :func:`jaxrod.cli.main` (one small dynamic
run and one static solve, each compiled once per module) plus one ``python -m jaxrod`` subprocess."""

import contextlib
import importlib
import inspect
import io
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

import jaxrod
from jaxrod import scenes
from jaxrod.cli import main


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _number(pattern, text):
    m = re.search(pattern, text)
    assert m, f"pattern {pattern!r} not found in output:\n{text}"
    return float(m.group(1))


@pytest.fixture(scope="module")
def a1_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    png, gif = d / "a.png", d / "a.gif"
    argv = ["simulate", "cantilever-a1", "--n-nodes", "21", "--duration", "13", "--dt", "0.5",
            "--plot", str(png), "--animate", str(gif), "--export", str(d / "a.pvd"), "--no-progress"]
    rc, out, err = run_cli(argv)
    return rc, out, err, png, gif


def test_simulate_dynamic_cantilever(a1_run):
    rc, out, err, png, gif = a1_run
    assert rc == 0, err
    assert "cantilever-a1" in out and "26 steps" in out
    assert "step " not in err  # --no-progress
    # the README's stated accuracy for a1 (dt 0.5 s): period +0.51 % (frequency -0.51 %), amplitude
    # -0.00 % at 201 nodes; measured here at 21 nodes over one period: -0.554 % and -0.104 %
    freq_err = _number(r"first-mode frequency.*rel\. error\s*([-+0-9.eE]+)%", out)
    assert abs(freq_err) < 0.6
    # the measured frequency itself, against an independent Euler-Bernoulli value and the implicit
    # midpoint's dispersion at this step, omega_h = (2/dt) atan(omega dt/2) (-0.515 %): the spatial
    # and measurement errors left over are below 0.1 %
    E, h, rho, L, dt = 1e5, 0.02, 500.0, 1.0, 0.5
    omega_eb = 1.8751040687119611**2 * math.sqrt(E * math.pi * h**4 / 4 / (rho * math.pi * h**2 * L**4))
    omega = _number(r"first-mode frequency\s+([0-9.eE+-]+) rad/s", out)
    assert omega == pytest.approx(omega_eb, rel=0.006)
    assert omega == pytest.approx(2 / dt * math.atan(omega_eb * dt / 2), rel=1e-3)
    amp_err = _number(r"tip amplitude.*rel\. error\s*([-+0-9.eE]+)%", out)
    assert abs(amp_err) < 0.25
    assert _number(r"Newton\s+([0-9.]+) iterations/step", out) >= 1.0


def test_simulate_exports_the_run_for_paraview(a1_run):
    meshio = pytest.importorskip("meshio")
    rc, out, _, png, _ = a1_run
    assert rc == 0
    pvd = png.with_name("a.pvd")
    assert f"export    {pvd} (27 frames" in out
    sets = ET.parse(pvd).getroot().find("Collection").findall("DataSet")
    times = [float(s.get("timestep")) for s in sets]
    np.testing.assert_allclose(times, 0.5 * np.arange(27), rtol=0, atol=1e-12)
    last = meshio.read(pvd.parent / sets[-1].get("file"))
    # the exported tip at t = 13 s is the run's final tip, as printed to 6 decimals
    tip = [float(x) for x in re.search(r"final tip position \[m\]\s+\(([^)]+)\)", out).group(1).split(",")]
    np.testing.assert_allclose(last.points[-1], tip, atol=5e-7)
    assert len(last.points) == 21 and last.cells[0].type == "line" and len(last.cells[0].data) == 20
    np.testing.assert_allclose(last.point_data["radius"], 0.02)
    # material frames: orthonormal directors at every node
    d1, d2, d3 = (last.point_data[k] for k in ("d1", "d2", "d3"))
    np.testing.assert_allclose(np.einsum("ij,ij->i", d1, d2), 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(np.cross(d1, d2) - d3, axis=1), 0, atol=1e-12)


def test_simulate_exports_xdmf_with_strains(a1_run, tmp_path):
    """The same run (its program compiled by ``a1_run``) as an XDMF time series: read back with
    meshio, the last step's points are the printed final tip; the DER rod's stretch and
    curvatures are there."""
    meshio = pytest.importorskip("meshio")
    xdmf = tmp_path / "a.xdmf"
    rc, out, err = run_cli(["simulate", "cantilever-a1", "--n-nodes", "21", "--duration", "13", "--dt", "0.5",
                            "--export", str(xdmf), "--no-progress"])
    assert rc == 0, err
    assert f"export    {xdmf} (27 frames; open it in ParaView" in out
    with meshio.xdmf.TimeSeriesReader(str(xdmf)) as reader:
        points, cells = reader.read_points_cells()
        t, pd, cd = reader.read_data(reader.num_steps - 1)
    assert reader.num_steps == 27 and t == pytest.approx(13.0)
    tip = [float(x) for x in re.search(r"final tip position \[m\]\s+\(([^)]+)\)", out).group(1).split(",")]
    np.testing.assert_allclose((points + pd["displacement"])[-1], tip, atol=5e-7)
    assert np.max(np.abs(cd["stretch"][0])) < 1e-3  # a bending cantilever hardly stretches
    kappa = pd["curvature"]  # (21, 3) [1/m] at the nodes: bending about d1/d2, no twist
    assert np.all(np.isfinite(kappa)) and np.max(np.abs(kappa[:, :2])) > 1e-4


def test_simulate_writes_valid_png_and_gif(a1_run):
    rc, out, _, png, gif = a1_run
    assert rc == 0
    # a 1 cm tip motion of the 1 m rod: drawn x 20 (the largest round factor keeping it <= 25 cm)
    assert f"plot      {png} (shapes: displacement x 20)" in out
    assert f"animation {gif} (shapes: displacement x 20)" in out
    with Image.open(png) as im:
        assert im.format == "PNG"
        assert im.size[0] > 300 and im.size[1] > 200
    with Image.open(gif) as im:
        assert im.format == "GIF"
        assert getattr(im, "n_frames", 1) == 27  # 26 steps + the initial frame, all <= max_frames


def test_simulate_static_cantilever_matches_beam_theory(tmp_path):
    png = tmp_path / "s.png"
    rc, out, err = run_cli(["simulate", "cantilever-static", "--n-nodes", "21", "--plot", str(png)])
    assert rc == 0, err
    # P L^3 / 3EI from the scene builder's own parameters (not from scene.reference)
    p = {k: v.default for k, v in inspect.signature(scenes.cantilever_static).parameters.items()}
    EI = p["youngs_modulus"] * math.pi * p["radius"] ** 4 / 4
    P = p["load_parameter"] * EI / p["length"] ** 2
    delta = P * p["length"] ** 3 / (3 * EI)
    measured = _number(r"tip deflection\s+([0-9.eE+-]+) m", out)
    assert measured == pytest.approx(delta, rel=0.02)
    assert abs(_number(r"tip deflection.*rel\. error\s*([-+0-9.eE]+)%", out)) < 2.0
    assert f"plot      {png} (shapes: displacement x 20)" in out  # the 1 cm deflection, drawn as 20 cm
    with Image.open(png) as im:
        assert im.format == "PNG"


def _assert_one_line_error(rc, err, *fragments):
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in lines[0]


def test_unknown_scene():
    rc, out, err = run_cli(["simulate", "no-such-scene"])
    _assert_one_line_error(rc, err, "no-such-scene", "cantilever-a1")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["simulate", "cantilever-a1", "--dt", "0"], "--dt"),
        (["simulate", "cantilever-a1", "--duration", "-1"], "--duration"),
        (["simulate", "cantilever-a1", "--dt", "nan"], "--dt"),
        (["simulate", "cantilever-a1", "--n-nodes", "2"], "--n-nodes"),
        (["simulate", "cantilever-a1", "--scheme", "euler"], "--scheme"),
        (["simulate", "cantilever-a1", "--n-nodes", "5", "--duration", "1", "--save-every", "3"], "--save-every"),
        (["simulate", "cantilever-static", "--n-nodes", "5", "--animate", "x.gif"], "static"),
        (["simulate", "cantilever-static", "--n-nodes", "5", "--export", "x.pvd"], "static"),
        (["simulate", "cantilever-a1", "--n-nodes", "5", "--export", "run.vtu"], "must end in .pvd"),
        (["simulate", "cantilever-a1", "--n-nodes", "5", "--export", "no/such/dir/run.pvd"], "does not exist"),
        (["simulate", "till-benchmark", "--scheme", "implicit_midpoint"], "shooting"),
        (["simulate", "till-benchmark", "--scheme", "bdf_alpha"], "--alpha"),
        (["simulate", "till-benchmark", "--scheme", "bdf_alpha", "--alpha", "0.3"], "alpha in [-0.5, 0]"),
        (["simulate", "till-benchmark", "--alpha", "-0.2"], "--scheme bdf_alpha"),
        (["simulate", "cantilever-a1", "--kirchhoff"], "till-*"),
        ([], "COMMAND"),
    ],
)
def test_bad_values_exit_2(argv, fragment):
    rc, _, err = run_cli(argv)
    _assert_one_line_error(rc, err, fragment)


def test_convergence_error_is_reported_not_raised(monkeypatch):
    sim_module = importlib.import_module("jaxrod.integrate")  # imported on first use by the CLI

    def failing(*args, **kwargs):
        raise jaxrod.ConvergenceError("static equilibrium did not converge:\n residual 1e3")

    monkeypatch.setattr(sim_module, "solve_static", failing)
    rc, _, err = run_cli(["simulate", "cantilever-static", "--n-nodes", "5"])
    _assert_one_line_error(rc, err, "did not converge")


def test_simulate_convergence_error_and_internal_errors_are_one_line(monkeypatch):
    sim_module = importlib.import_module("jaxrod.integrate")  # imported on first use by the CLI

    def failing(*args, **kwargs):
        raise jaxrod.ConvergenceError("Newton did not converge at step 7 (t = 3.5 s):\n residual 1e3", step=7,
                                      time=3.5, residual=1e3)

    monkeypatch.setattr(sim_module, "simulate", failing)
    rc, _, err = run_cli(["simulate", "cantilever-a1", "--n-nodes", "5", "--no-progress"])
    _assert_one_line_error(rc, err, "step 7 (t = 3.5 s)")

    def bug(*args, **kwargs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(sim_module, "simulate", bug)
    rc, _, err = run_cli(["simulate", "cantilever-a1", "--n-nodes", "5", "--no-progress"])
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("error: internal error TypeError: unsupported operand") and "JAXROD_TRACEBACK" in lines[0]


def _npy(shape):
    import numpy as np

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buf.getvalue() + bytes(64)


def test_unreadable_data_files_are_one_line_errors(tmp_path):
    """A .npz whose header claims a 73 TiB array (MemoryError inside numpy), a binary file named
    .csv (UnicodeDecodeError) and a missing file: one error line each, naming the file, no traceback."""
    import zipfile

    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(huge, "w") as z:
        z.writestr("t.npy", _npy((10**13,)))
        z.writestr("positions.npy", _npy((10**13, 1, 3)))
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 20)
    base = ["calibrate", "weight-release", "--quiet", "--no-plot", "--data"]
    rc, _, err = run_cli(base + [str(huge)])
    _assert_one_line_error(rc, err, "huge.npz", "more memory than is available")
    rc, _, err = run_cli(base + [str(binary)])
    _assert_one_line_error(rc, err, "binary.csv", "not a text CSV file")
    rc, _, err = run_cli(base + [str(tmp_path / "missing.csv")])
    _assert_one_line_error(rc, err, "missing.csv")


def test_python_m_jaxrod_scenes():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrod", "scenes"], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr
    for name in scenes.SCENES:
        assert name in proc.stdout
    assert len(proc.stdout.strip().splitlines()) == len(scenes.SCENES)


def test_simulate_till_benchmark_reports_first_mode(tmp_path):
    """Shooting scene from the command line: the 0.5 N release oscillates near the 8.9 Hz mode."""
    png = tmp_path / "till.png"
    rc, out, err = run_cli(["simulate", "till-benchmark", "--n-nodes", "30", "--integrator", "euler",
                            "--scheme", "bdf_alpha", "--alpha", "-0.4", "--duration", "0.4",
                            "--plot", str(png), "--no-progress"])
    assert rc == 0, err
    assert "80 steps" in out and "tip x-displacement" in out
    period = _number(r"period about the mean\s*([0-9.eE+-]+) s", out)
    assert 1 / period == pytest.approx(scenes.get_scene("till-benchmark").reference["first_mode_hz"], rel=0.05)
    with Image.open(png) as im:
        assert im.size[0] > 100


# ---- jaxrod calibrate ----------------------------------------------------------------------------------
def test_calibrate_reports_missing_and_malformed_data_as_errors(tmp_path, monkeypatch):
    rc, out, err = run_cli(["calibrate", "soft-limb", "--data", str(tmp_path / "missing.csv")])
    assert rc == 2 and "soft-limb data not found" in err and "--data" in err
    # no --data: looked up at run time (no default path baked into the parser)
    monkeypatch.setenv("JAXROD_SOFT_LIMB_DATA", str(tmp_path / "elsewhere.csv"))
    rc, out, err = run_cli(["calibrate", "soft-limb"])
    assert rc == 2 and "JAXROD_SOFT_LIMB_DATA" in err and "is not a file" in err and "Traceback" not in err
    bad = tmp_path / "tip.csv"
    bad.write_text("t,tip_x,tip_z\n0.0,0.1,0.4\n0.002,0.1\n")  # a short row
    rc, out, err = run_cli(["calibrate", "weight-release", "--data", str(bad), "--quiet", "--no-plot"])
    assert rc == 2 and err.startswith("error:") and "Traceback" not in err
    rc, out, err = run_cli(["calibrate", "no-such-case"])
    assert rc == 2 and "invalid choice" in err


@pytest.mark.slow
def test_calibrate_weight_release_recovers_table5_values_from_the_command_line(tmp_path):
    """The default (quick) run: the same compiled program as tests/test_calibrate.py's recovery test
    (Euler, 10 points, dt 4 ms, data from the fit model itself), the last 25% of the record held out."""
    argv = ["calibrate", "weight-release", "--max-iters", "40", "--quiet", "--out", str(tmp_path)]
    rc, out, err = run_cli(argv)
    assert rc == 0, err
    assert "SYNTHETIC" in out and "the data come from the fit model itself" in out
    # held-out frames scored beside the in-sample ones: both near the 0.1 mm x sqrt(2) noise level
    # (the data are the fit model's own, so the prediction is as good as the fit)
    ins = _number(r"\n\s*in-sample\s+\d+\s+([0-9.]+)", out)
    held = _number(r"\n\s*held-out frames\s+\d+\s+([0-9.]+)", out)
    assert 0.08 < ins < 0.2 and 0.08 < held < 0.2, out
    errors = {k: _number(rf"\n\s*{k}\s+\S+\s+\S+\s+\S+\s+([-+0-9.]+)%", out) for k in ("EI", "rho", "C")}
    assert abs(errors["EI"]) < 1 and abs(errors["rho"]) < 1 and abs(errors["C"]) < 5, out
    assert (tmp_path / "weight_release.json").exists()


def test_recording_option_reaches_the_stiff_flop_builder(monkeypatch):
    """`--recording Load1` is handed to the stiff-flop scene's builder (the scene's own tests run
    it); other scenes and model files refuse it, before anything is built."""
    from jaxrod import cli

    seen = {}

    class Info:
        def build(self, **overrides):
            seen.update(overrides)
            raise cli.CLIError("built")

    monkeypatch.setattr(cli, "_scene_info", lambda name: Info())
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["simulate", "stiff-flop", "--recording", "Load1", "--duration", "0.1"]) == 2
    assert seen == {"recording": "Load1", "duration": 0.1} and "built" in err.getvalue()
    monkeypatch.undo()
    for argv in (["simulate", "cantilever-a1", "--recording", "Load1"],
                 ["simulate", "pendulum.toml", "--recording", "Load1"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert main(argv) == 2
        assert "--recording" in err.getvalue()
