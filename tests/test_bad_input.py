"""Bad input in the newer layers (issue 22, item 6): each case ends in one clear error naming the
parameter and its value, or is accepted correctly. Construction-time checks only: nothing here
runs a simulation (the redundancy check of a closed joint loop compiles one small Jacobian)."""

import io
import math

import numpy as np
import pytest

import jaxrod
from jaxrod import cli
from jaxrod.models.cosserat import (
    CosseratModel, CosseratRod, HelicalRouting, LegLengths, PointLoad, StewartGough, StraightRouting, Tendon,
)
from jaxrod.models.pcs import PCSModel, PCSRod
from jaxrod.system import (
    HybridSystem, MultibodySystem, PrescribedAngle, PrescribedDisplacement, Prismatic, Revolute, RigidBody, RodPin,
)


def _der_rod(**kw):
    return jaxrod.DERRod.straight(5, 0.1, youngs_modulus=1e6, density=1000.0, radius=0.001, **kw)


def _tendon(offset=0.0005):
    return Tendon(StraightRouting((offset, 0.0)), tension=1.0)


def _body():
    return RigidBody("bob", 1.0, (1.0, 1.0, 1.0))


# ---- 1. a prescribed motion the joints forbid is refused, not dropped as a redundant row ----------
def test_prescribed_displacement_across_a_slider_is_refused():
    slider = Prismatic(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))
    drive = PrescribedDisplacement(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0),
                                   trajectory=lambda t: 0.1 * t)
    for redundant in ("drop", "error"):
        with pytest.raises(ValueError, match=r"joints\[1\] \(PrescribedDisplacement, body1=None, body2='bob', "
                                             r"axis \[0\.0, 1\.0, 0\.0\]\) prescribes a motion the other joints "
                                             r"already forbid"):
            MultibodySystem([_body()], [slider, drive], redundant=redundant)


def test_prescribed_motion_listed_first_is_still_refused():
    # the drive before the slider: the slider's row must not be the one dropped
    hinge = Revolute(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    drive = PrescribedAngle(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
                            trajectory=lambda t: 0.1 * t)
    with pytest.raises(ValueError, match=r"joints\[0\] \(PrescribedAngle, .*rotation axis \[1\.0, 0\.0, 0\.0\]\)"):
        MultibodySystem([_body()], [drive, hinge])


def test_prescribed_displacement_along_a_slider_is_kept():
    slider = Prismatic(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))
    drive = PrescribedDisplacement(body1=None, body2="bob", point=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0),
                                   trajectory=lambda t: 0.1 * t)
    assert MultibodySystem([_body()], [slider, drive]).redundant_rows == ()


# ---- 2. calibrate stiff-flop: data and options checked before compiling -----------------------
HEADER = "time_s,p0_Pa,p1_Pa,p2_Pa,tip_x_m,tip_y_m,tip_z_m,tip_qw,tip_qx,tip_qy,tip_qz"


def _recordings(directory, rows):
    directory.mkdir(exist_ok=True)
    for name in ("NoLoad", "Load1", "Load2"):
        lines = [HEADER] + [f"{0.05 * k:.2f},0,0,0,0,0,0.0645,1,0,0,0" for k in range(rows)]
        (directory / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return directory


@pytest.fixture
def no_compile(monkeypatch):
    from jaxrod.scenes import stiff_flop as sm

    def boom(*a, **k):
        raise AssertionError("the model was built: input errors must be found before compiling")

    for name in ("predict_tip", "static_tips", "stiff_flop_model"):
        monkeypatch.setattr(sm, name, boom)


def _cli(argv, capsys):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip()
    return rc, err


@pytest.mark.parametrize("rows, message", [
    (0, r"NoLoad\.csv: no data rows after the header"),
    (200, r"NoLoad\.csv: the recording ends at 9\.95 s \(200 rows\) but the calibration needs it up to 54 s "
          r"\(a truncated file\? read from \$JAXROD_STIFF_FLOP_DATA="),
])
def test_stiff_flop_truncated_data(tmp_path, monkeypatch, capsys, no_compile, rows, message):
    monkeypatch.setenv("JAXROD_STIFF_FLOP_DATA", str(_recordings(tmp_path / "data", rows)))
    rc, err = _cli(["calibrate", "stiff-flop", "--no-fit"], capsys)
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("error: ")
    import re

    assert re.search(message, err), err
    assert str(tmp_path / "data") in err  # where it looked


def test_stiff_flop_missing_data_says_where(tmp_path, monkeypatch, capsys, no_compile):
    monkeypatch.setenv("JAXROD_STIFF_FLOP_DATA", str(tmp_path / "nowhere"))
    rc, err = _cli(["calibrate", "stiff-flop"], capsys)
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"$JAXROD_STIFF_FLOP_DATA={tmp_path / 'nowhere'} holds no NoLoad.csv" in err


@pytest.mark.parametrize("option", ["--segments", "--max-iters"])
def test_stiff_flop_bad_options(tmp_path, monkeypatch, capsys, no_compile, option):
    monkeypatch.setenv("JAXROD_STIFF_FLOP_DATA", str(_recordings(tmp_path / "data", 1200)))
    rc, err = _cli(["calibrate", "stiff-flop", option, "0"], capsys)
    assert rc == 2 and err == f"error: {option} must be >= 1, got 0"


# ---- 3. NaN radii and plate loads ----------------------------------------------------------
def test_der_section_radius_nan():
    with pytest.raises(ValueError, match=r"section_radius \[m\] must be a finite number, got nan"):
        jaxrod.DERModel(_der_rod(), tendons=(_tendon(0.05),), section_radius=float("nan"))


def test_pcs_section_radius_nan():
    rod = PCSRod.circular(0.1, 2, 0.001, youngs_modulus=1e6, density=1000.0)
    with pytest.raises(ValueError, match=r"section_radius \[m\] must be a finite number, got nan"):
        PCSModel(rod, tendons=(_tendon(0.05),), section_radius=float("nan"))
    with pytest.raises(ValueError, match=r"section_radius must be > 0 m, got -0.01"):
        PCSModel(rod, section_radius=-0.01)


def test_cosserat_section_radius_nan_with_chambers_only():
    rod = CosseratRod.circular(0.1, 0.01, youngs_modulus=1e6, density=1000.0)
    with pytest.raises(ValueError, match=r"section_radius must be finite .*got nan"):
        CosseratModel(rod, section_radius=float("nan"))


@pytest.mark.parametrize("field", ["plate_force", "plate_moment"])
def test_stewart_gough_nan_plate_load(field):
    with pytest.raises(ValueError, match=rf"{field} must be finite; non-finite entries at indices \[\[0\]\], "
                                         r"got \[nan, 0\.0, 0\.0\]"):
        StewartGough.paper(LegLengths.constant([0.5] * 6), n_points=10, **{field: (float("nan"), 0.0, 0.0)})


# ---- 4. a misspelt table in a model file -------------------------------------------------------
@pytest.mark.parametrize("table, suggestion", [("bodys.bob", "bodies"), ("simulaton", "simulation")])
def test_model_file_unknown_table(tmp_path, table, suggestion):
    from jaxrod.modelfile import ModelFileError, load_model

    path = tmp_path / "m.toml"
    path.write_text(f"[{table}]\nmass = 1.0\n")
    top = table.split(".")[0]
    with pytest.raises(ModelFileError, match=rf"{top}: unknown table \[{top}\] \(did you mean '{suggestion}'\?\)"):
        load_model(path)


# ---- 5. HelicalRouting of the wrong shape -----------------------------------------------------
@pytest.mark.parametrize("field", ["radius", "rate", "phase"])
def test_helical_routing_shapes(field):
    kw = dict(radius=0.01, rate=1.0, phase=0.0)
    kw[field] = (0.01, 0.02)
    with pytest.raises(ValueError, match=rf"HelicalRouting\.{field} must be a scalar \(one value\), got shape \(2,\)"):
        HelicalRouting(**kw)


# ---- 6. modal(): the advice fits modal ---------------------------------------------------------
def test_modal_failed_equilibrium_advice(monkeypatch):
    import jaxrod.integrate as integrate
    from jaxrod.integrate import ConvergenceError

    def fails(model, t=0.0, **kw):
        raise ConvergenceError("static equilibrium did not converge: residual max-norm 1.0e+00, scaled error "
                               "1.0e+00 after 50 iterations; try load_steps > 1")

    monkeypatch.setattr(integrate, "solve_static", fails)
    with pytest.raises(ConvergenceError) as info:
        jaxrod.modal(jaxrod.DERModel(_der_rod(), clamped_edges=(0,)))
    msg = str(info.value)
    assert "try load_steps" not in msg
    assert "jaxrod.solve_static(model, t=t, load_steps=10)" in msg and "modal(model, state)" in msg


def test_static_advice_fits_the_model(monkeypatch):
    """A multibody system cannot take load_steps (no load factor): neither solve_static's nor
    modal()'s advice may name it; they name the usual cause (a free coordinate) and state0."""
    import jaxrod.integrate as integrate
    from jaxrod.integrate import ConvergenceError
    from jaxrod.integrate.implicit import _static_advice

    system = MultibodySystem(_body())
    assert not hasattr(system, "with_load_factor")
    advice = _static_advice(system, 1)
    assert "load_steps >" not in advice and "state0" in advice and "nothing holds" not in advice
    assert _static_advice(jaxrod.DERModel(_der_rod(), clamped_edges=(0,)), 1) == "try load_steps > 1"

    def fails(model, t=0.0, **kw):
        raise ConvergenceError("static equilibrium did not converge: residual max-norm 1.0e+00, scaled error "
                               f"1.0e+00 after 50 iterations; {advice}")

    monkeypatch.setattr(integrate, "solve_static", fails)
    with pytest.raises(ConvergenceError) as info:
        jaxrod.modal(system)
    msg = str(info.value)
    assert "load_steps" not in msg
    assert "state0" in msg and "modal(model, state)" in msg


# ---- 7. unit strings in Python: refused, naming the parameter ----------------------------------
def test_rigid_body_unit_string():
    with pytest.raises(TypeError, match=r"RigidBody\('b'\)\.mass \[kg\] must be a number .*got '1 kg' \(str\); "
                                        r"unit strings such as '1 kg' are read in model files only"):
        RigidBody("b", mass="1 kg", inertia=(1.0, 1.0, 1.0))
    with pytest.raises(TypeError, match=r"RigidBody\('b'\)\.position \[m\] must be a number"):
        RigidBody("b", mass=1.0, inertia=(1.0, 1.0, 1.0), position=("1 m", 0, 0))


# ---- 8. directories, and one object where a list is expected -----------------------------------
def test_model_file_directory(tmp_path, capsys):
    from jaxrod.modelfile import ModelFileError, load_model

    with pytest.raises(ModelFileError, match="is a directory, not a model file"):
        load_model(tmp_path)
    rc, err = _cli(["simulate", str(tmp_path)], capsys)
    assert rc == 2 and err == f"error: {tmp_path}: is a directory, not a model file (give a .toml file in it)"


def test_marker_data_directory(tmp_path):
    from jaxrod.calibrate.data import load_markers

    with pytest.raises(IsADirectoryError, match=r"marker data path = .* is a directory; expected a \.csv or \.npz"):
        load_markers(tmp_path)


def test_soft_limb_data_directory(tmp_path):
    from jaxrod.datasets.soft_limb import resolve_data_path

    with pytest.raises(FileNotFoundError, match=r"is a directory without soft_limb_data\.csv"):
        resolve_data_path(tmp_path)
    (tmp_path / "soft_limb_data.csv").write_text("x\n")
    assert resolve_data_path(tmp_path) == tmp_path / "soft_limb_data.csv"


def test_one_object_for_a_list():
    rod = _der_rod()
    assert len(jaxrod.DERModel(rod, tendons=_tendon()).tendons) == 1
    cos = CosseratRod.circular(0.1, 0.01, youngs_modulus=1e6, density=1000.0)
    m = CosseratModel(cos, tendons=_tendon(0.005), point_loads=PointLoad(0.05, force=(0.0, 0.0, 1.0)))
    assert len(m.tendons) == 1 and len(m.point_loads) == 1
    pcs = PCSRod.circular(0.1, 2, 0.001, youngs_modulus=1e6, density=1000.0)
    assert len(PCSModel(pcs, tendons=_tendon()).tendons) == 1
    assert MultibodySystem(_body()).n_bodies == 1
    assert len(HybridSystem(jaxrod.DERModel(rod), attachments=RodPin(0, 0)).attachments) == 1
    with pytest.raises(TypeError, match=r"tendons must hold Tendon objects, got str at tendons\[0\]"):
        jaxrod.DERModel(rod, tendons="tendon")


# ---- 9. HybridSystem without attachments ------------------------------------------------------
def test_hybrid_without_attachments():
    with pytest.raises(ValueError, match=r"HybridSystem\.attachments is empty"):
        HybridSystem([jaxrod.DERModel(_der_rod())], [_body()])


# ---- 10. --duration rounded to whole steps: said --------------------------------------------
def test_duration_rounding_note():
    out = io.StringIO()
    cli._note_rounding(0.012, 0.005, 2, out)
    assert out.getvalue() == ("note      duration 0.012 s is not a whole number of steps of dt = 0.005 s (2.4): "
                              "rounded to 2 steps = 0.01 s\n")
    out = io.StringIO()
    cli._note_rounding(3.0, 0.005, int(round(3.0 / 0.005)), out)
    assert out.getvalue() == ""


# ---- 11. rod models -----------------------------------------------------------------------------
def test_der_model_rod_type():
    with pytest.raises(TypeError, match=r"rod must be a DERRod .*got 'notarod' \(str\)"):
        jaxrod.DERModel(rod="notarod")


@pytest.mark.parametrize("make", [
    lambda: jaxrod.DERRod.straight(5, 1.0, youngs_modulus="abc", density=1.0, radius=0.01),
    lambda: CosseratRod.circular(1.0, 0.01, youngs_modulus="abc", density=1.0),
])
def test_youngs_modulus_string(make):
    with pytest.raises(TypeError, match=r"youngs_modulus \[Pa\] must be a number .*got 'abc' \(str\)"):
        make()


def test_der_start_two_vector():
    with pytest.raises(ValueError, match=r"start must have shape \(3,\), got \(2,\)"):
        _der_rod(start=(0.0, 0.0))
    with pytest.raises(ValueError, match=r"start must have shape \(3,\), got \(2,\)"):
        jaxrod.DERRod.helix(5, helix_radius=0.1, pitch=0.1, contour_length=1.0, start=(0.0, 0.0),
                            youngs_modulus=1e6, density=1000.0, radius=0.01)


@pytest.mark.parametrize("field, unit", [("drag", "kg/m\\^2"), ("damping_se", "N s"), ("damping_bt", "N m\\^2 s")])
def test_cosserat_drag_shape(field, unit):
    with pytest.raises(ValueError, match=rf"{field} \[{unit}\] must be a scalar or 3 numbers .*got shape \(2,\)"):
        CosseratRod.circular(1.0, 0.01, youngs_modulus=1e6, density=1000.0, **{field: (1.0, 2.0)})
    rod = CosseratRod.circular(1.0, 0.01, youngs_modulus=1e6, density=1000.0, **{field: 0.5})
    assert np.allclose(getattr(rod, field), 0.5) and math.isclose(rod.length, 1.0)
