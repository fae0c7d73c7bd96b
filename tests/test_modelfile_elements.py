"""Model-file force elements ([forces.NAME]), time-signal keys (joint inputs and prescribed
motions from numbers, inline samples or CSV files), [analysis] modal and `jaxrod modal`.

Checked against closed forms (a torsion-spring pendulum's frequency, the angle under a ramped
torque, a prescribed angle at its samples) and against the same system built in Python."""

import re

import numpy as np
import pytest

import jaxrod
from jaxrod.modelfile import ModelFileError, load_model
from jaxrod.solvers.newton import NewtonSolver
from jaxrod.system import Damper, MultibodySystem, Revolute, RigidBody, Spring

# bob of 1 kg on a hinge about z through the origin, centre 0.5 m out: I about the hinge
# I_cm + m r^2 = 0.01 + 0.25 = 0.26 kg m^2; no gravity
BOB = """
[bodies.bob]
mass = 1.0
inertia = [0.01, 0.01, 0.01]
position = [0.5, 0.0, 0.0]
"""
HINGE = """
[joints.hinge]
type = "revolute"
body2 = "bob"
point = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
"""
I_HINGE = 0.26


def _write(tmp_path, text, name="model.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _angle(traj):
    p = np.asarray(traj.positions)[:, 0]
    return np.unwrap(np.arctan2(p[:, 1], p[:, 0]))


def test_modal_of_a_torsion_spring_pendulum(tmp_path, capsys):
    """`[forces]` torsion spring k = 2 N m/rad: omega = sqrt(k / I) (closed form), printed by
    `jaxrod modal` and by `jaxrod simulate` of a file with [analysis] modal = true."""
    from jaxrod.cli import main

    path = _write(tmp_path, BOB + HINGE + """
[forces.spring]
type = "torsion_spring"
body2 = "bob"
axis = [0.0, 0.0, 1.0]
stiffness = 2.0
[analysis]
modal = true
n_modes = 1
[simulation]
dt = 0.01
duration = 0.02
""")
    expected = np.sqrt(2.0 / I_HINGE)
    assert main(["modal", str(path)]) == 0
    out = capsys.readouterr().out
    omega = float(re.search(r"^\s+1\s+(\S+)", out, re.M).group(1))
    assert abs(omega / expected - 1) < 1e-5  # printed to 6 significant digits
    assert main(["simulate", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+1\s+2\.7735\d*\s", out, re.M) and "position  bob" in out


def test_csv_torque_ramp_matches_closed_form(tmp_path):
    """A hinge torque read from a CSV file, tau = 2 t N m up to 0.5 s: theta = t^3 / (3 I)
    (linear interpolation between the samples is exact for a ramp). AVF at dt = 5 ms is
    second-order accurate: the error at 0.5 s is below 1e-5 rad of theta = 0.16 rad."""
    (tmp_path / "drive.csv").write_text("time,tau\n0.0,0.0\n0.5,1.0\n")
    path = _write(tmp_path, BOB + HINGE + """torque = { csv = "drive.csv", time = "time", value = "tau" }
[simulation]
dt = 0.005
duration = 0.5
""")
    loaded = load_model(path)
    traj = loaded.simulate(solver=NewtonSolver(rtol=0.0, atol=1e-12))
    t = np.asarray(traj.times)
    np.testing.assert_allclose(_angle(traj), t**3 / (3 * I_HINGE), atol=1e-5)
    assert _angle(traj)[-1] > 0.15


def test_prescribed_angle_follows_inline_samples(tmp_path):
    """`prescribed_angle` constraint with inline samples (a C2 spline): the hinge angle passes
    through every sample to the Newton tolerance."""
    path = _write(tmp_path, BOB + HINGE + """
[constraints.servo]
type = "prescribed_angle"
body2 = "bob"
axis = [0.0, 0.0, 1.0]
trajectory = { times = [0.0, 0.1, 0.2, 0.3], values = [0.0, "10 deg", "-5 deg", 0.0] }
[simulation]
dt = 0.01
duration = 0.3
""")
    traj = load_model(path).simulate(solver=NewtonSolver(rtol=0.0, atol=1e-12))
    theta = _angle(traj)
    np.testing.assert_allclose(theta[[0, 10, 20, 30]], np.radians([0.0, 10.0, -5.0, 0.0]), atol=1e-10)


def test_spring_and_damper_from_file_equal_the_python_system(tmp_path):
    """A spring (default rest length: the initial distance, so pre-stretched only by the offset
    below) and an axial damper to the world, from [forces] tables, give the trajectory of the
    same system built in Python, to round-off."""
    path = _write(tmp_path, BOB + """
[world]
gravity = [0.0, -9.81, 0.0]
[forces.spring]
type = "spring"
body2 = "bob"
point1 = [0.5, 0.3, 0.0]
point2 = [0.5, 0.0, 0.0]
stiffness = 40.0
rest_length = 0.2
[forces.damper]
type = "damper"
body2 = "bob"
point1 = [0.5, 0.3, 0.0]
point2 = [0.5, 0.0, 0.0]
damping = 0.5
[simulation]
dt = 0.01
duration = 0.4
""")
    loaded = load_model(path)
    bob = RigidBody("bob", 1.0, [0.01, 0.01, 0.01], position=[0.5, 0.0, 0.0])
    python = MultibodySystem([bob], [], gravity=(0.0, -9.81, 0.0), forces=[
        Spring(None, "bob", point1=[0.5, 0.3, 0.0], point2=[0.5, 0.0, 0.0], stiffness=40.0, rest_length=0.2),
        Damper(None, "bob", point1=[0.5, 0.3, 0.0], point2=[0.5, 0.0, 0.0], damping=0.5)])
    solver = NewtonSolver(rtol=0.0, atol=1e-12)
    a = np.asarray(loaded.simulate(solver=solver).positions)
    b = np.asarray(jaxrod.simulate(python, dt=0.01, n_steps=40, scheme=loaded.scheme, solver=solver).positions)
    assert np.abs(a[-1] - a[0]).max() > 0.01
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("extra, message", [
    ('torque = { times = [0.0, 0.0], values = [1.0, 2.0] }', r"joints.hinge.torque.times: expected >= 1 finite, strictly increasing"),
    ('torque = { times = [0.0, 1.0], values = [1.0] }', r"joints.hinge.torque.values: expected 2 values"),
    ('torque = { csv = "drive.csv", time = "t", value = "torq" }', r"joints.hinge.torque.value: no column 'torq' .*did you mean 'torque'"),
    ('torque = { csv = "nowhere.csv" }', r"joints.hinge.torque.csv: cannot read"),
    ('torque = "fast"', r"joints.hinge.torque: expected a number in N m"),
])
def test_bad_signals_are_one_clear_line(tmp_path, extra, message):
    (tmp_path / "drive.csv").write_text("t,torque\n0,1\n1,2\n")
    path = _write(tmp_path, BOB + HINGE + extra + "\n[simulation]\ndt = 0.01\nduration = 0.1\n")
    with pytest.raises(ModelFileError, match=message) as e:
        load_model(path)
    assert "\n" not in str(e.value)


def test_bad_force_tables(tmp_path):
    path = _write(tmp_path, BOB + HINGE + '[forces.s]\ntype = "sprng"\nbody2 = "bob"\n'
                  "[simulation]\ndt = 0.01\nduration = 0.1\n")
    with pytest.raises(ModelFileError, match=r"forces.s.type: .*'spring'"):
        load_model(path)
    path = _write(tmp_path, BOB + HINGE + '[forces.s]\ntype = "damper"\nbody2 = "bob"\npoint1 = [0, 0, 0]\n'
                  'point2 = [1, 0, 0]\ndirection = "sideways"\n[simulation]\ndt = 0.01\nduration = 0.1\n')
    with pytest.raises(ModelFileError, match=r"forces.s.direction: .*'axial', 'full'"):
        load_model(path)
    with pytest.raises(ModelFileError, match=r"analysis.modes: unknown key.*n_modes"):
        load_model(_write(tmp_path, BOB + HINGE + "[analysis]\nmodes = 3\n[simulation]\ndt = 0.01\nduration = 0.1\n"))


def test_modal_of_the_shipped_pendulum_finds_its_equilibrium(capsys):
    """`jaxrod modal pendulum.toml`: the static solve starts at the released pose (30 deg), finds
    the hanging equilibrium (a multibody static solve starts from the least-squares multipliers;
    from zero ones its Newton matrix is singular) and the frequency sqrt(m g r / I_hinge) =
    sqrt(9.81 * 0.5 / 0.27) of the physical pendulum (closed form)."""
    from jaxrod.cli import main

    assert main(["modal", "pendulum.toml"]) == 0
    out = capsys.readouterr().out
    omega = float(re.search(r"^\s+1\s+(\S+)", out, re.M).group(1))
    assert abs(omega / np.sqrt(9.81 * 0.5 / 0.27) - 1) < 2e-6 and "(unstable)" not in out
    assert not re.search(r"^\s+2\s", out, re.M)  # one degree of freedom: one mode, not an error
