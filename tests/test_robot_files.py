"""URDF and MJCF robots in (jaxrod.modelfile.urdf / mjcf / robot_tree, jaxrod.load_robot).

The checks: a robot file gives the same trajectory as the same system written by hand in TOML
(1e-10: the same physics in other body frames, so only round-off differs); MuJoCo's own simulation
of the MJCF agrees with ours to the integrators' accuracy, the tolerance taken from dt-halving;
bad files are one-line errors naming the element."""

import warnings

import numpy as np
import pytest

import jaxrod
from jaxrod.modelfile import ModelFileError, load_model
from jaxrod.modelfile.load import EXAMPLES_DIR, load_robot
from jaxrod.modelfile.robot_tree import RobotFileWarning
from jaxrod.solvers.newton import NewtonSolver

TIGHT = NewtonSolver(rtol=0.0, atol=1e-12)
DP_START = {"shoulder": 2.0, "elbow": -3.0}  # double_pendulum.toml's initial angles


def _run(model, dt, n_steps):
    traj = jaxrod.simulate(model, dt=dt, n_steps=n_steps, solver=TIGHT)
    return np.asarray(traj.positions)


@pytest.fixture(scope="module")
def toml_double_pendulum():
    return _run(load_model("double_pendulum.toml").model, 0.002, 100)


@pytest.mark.parametrize("name", ["double_pendulum.urdf", "double_pendulum.xml"])
def test_robot_file_double_pendulum_matches_toml(name, toml_double_pendulum):
    """Links given with their inertia along z (upper) and in a pitched inertial frame (lower),
    initial angles as joint positions: the same bodies and joints as double_pendulum.toml, whose
    links' body x axes run along the links."""
    if name.endswith(".xml"):
        pytest.importorskip("mujoco")
    robot = load_robot(EXAMPLES_DIR / name, joint_positions=DP_START)
    toml = load_model("double_pendulum.toml").model
    for a, b in zip(robot.model.bodies, toml.bodies):
        assert a.name == b.name and float(a.mass) == float(b.mass)
        np.testing.assert_allclose(a.position, b.position, atol=1e-14)
        np.testing.assert_allclose(np.linalg.eigvalsh(a.inertia), np.linalg.eigvalsh(b.inertia), rtol=1e-12)
    got = _run(robot.model, 0.002, 100)
    assert np.abs(toml_double_pendulum[-1] - toml_double_pendulum[0]).max() > 0.1  # it moved
    np.testing.assert_allclose(got, toml_double_pendulum, rtol=0, atol=1e-10)


ARM3_BY_HAND = """
# arm3.urdf written out by hand: COMs, world-frame inertias (the roll of the shoulder frame swaps
# the forearm's y and z moments), the tool merged into link3 by the parallel-axis theorem
# (m 0.3 + 0.2, COM 0.67 m; Ixx = 3e-4 + 0.3 * 0.02^2 + 1e-4 + 0.2 * 0.03^2 = 7e-4).
[world]
gravity = [2.0, 1.0, -9.81]
[bodies.link1]
mass = 1.0
inertia = [0.01, 0.01, 0.002]
position = [0.0, 0.0, 0.2]
[bodies.link2]
mass = 0.8
inertia = [0.006, 0.006, 0.0008]
position = [0.0, 0.0, 0.45]
[bodies.link3]
mass = 0.5
inertia = [0.0007, 0.0007, 0.0002]
position = [0.0, 0.0, 0.67]
[joints.yaw]
type = "revolute"
body2 = "link1"
point = [0.0, 0.0, 0.1]
axis = [0.0, 0.0, 1.0]
damping = 0.05
[joints.shoulder]
type = "revolute"
body1 = "link1"
body2 = "link2"
point = [0.0, 0.0, 0.3]
axis = [0.0, -1.0, 0.0]
[joints.wrist]
type = "prismatic"
body1 = "link2"
body2 = "link3"
point = [0.0, 0.0, 0.6]
axis = [0.0, 0.0, 1.0]
[simulation]
dt = 0.002
duration = 0.1
"""


def test_urdf_arm_matches_hand_written_toml(tmp_path):
    """Offsets, a rolled joint frame, a damped yaw, a prismatic joint, a welded tool (merged) and a
    massless welded frame; gravity tilted so that every joint moves."""
    path = tmp_path / "arm3_by_hand.toml"
    path.write_text(ARM3_BY_HAND)
    by_hand = load_model(path).model
    with pytest.warns(RobotFileWarning, match="shoulder.*not enforced"):
        robot = load_robot(EXAMPLES_DIR / "arm3.urdf", gravity=(2.0, 1.0, -9.81)).model
    assert [b.name for b in robot.bodies] == ["link1", "link2", "link3"]
    expected = _run(by_hand, 0.002, 50)
    got = _run(robot, 0.002, 50)
    assert np.abs(expected[-1] - expected[0]).max() > 1e-3
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)


def test_mjcf_matches_mujoco_to_integrator_accuracy():
    """MuJoCo (RK4, its own model of the file) and jaxrod (average vector field, 2nd order) on the
    chaotic double pendulum for 0.3 s at dt and dt/2: their difference is explained by the two
    integrators' errors, each estimated by Richardson from the dt-halving (ours: 4/3 of the
    change, RK4's: 16/15), and shrinks 4x as dt halves."""
    mujoco = pytest.importorskip("mujoco")
    path = str(EXAMPLES_DIR / "double_pendulum.xml")
    duration, out = 0.3, {}
    model = load_robot(path, joint_positions=DP_START).model
    for dt in (0.002, 0.001, 0.0005):
        n = int(round(duration / dt))
        m = mujoco.MjModel.from_xml_path(path)
        m.opt.timestep = dt
        d = mujoco.MjData(m)
        d.qpos[:] = [DP_START["shoulder"], DP_START["elbow"]]
        for _ in range(n):
            mujoco.mj_step(m, d)
        out[dt] = (_run(model, dt, n)[-1], d.xipos[1:].copy())
    for dt in (0.002, 0.001):
        ours_err = 4 / 3 * np.abs(out[dt][0] - out[dt / 2][0]).max()
        mj_err = 16 / 15 * np.abs(out[dt][1] - out[dt / 2][1]).max()
        diff = np.abs(out[dt][0] - out[dt][1]).max()
        assert diff <= 1.2 * (ours_err + mj_err), (dt, diff, ours_err, mj_err)
        assert diff >= 0.8 * (ours_err - mj_err)  # the estimate is not vacuous: it is our error
    ratio = np.abs(out[0.002][0] - out[0.002][1]).max() / np.abs(out[0.001][0] - out[0.001][1]).max()
    assert 3.5 < ratio < 4.5


def test_limits_and_joint_positions_from_urdf():
    """Limits are measured from the initial configuration (jaxrod's joint coordinates are zero
    there) and enforced only with a stop stiffness; damping is read."""
    robot = load_robot(EXAMPLES_DIR / "arm3.urdf", joint_positions={"shoulder": 0.5, "wrist": 0.02},
                       limit_stiffness=100.0, limit_damping=2.0).model
    yaw, shoulder, wrist = robot.joints
    assert float(yaw.damping) == 0.05 and np.isinf(float(yaw.lower))
    assert (float(shoulder.lower), float(shoulder.upper)) == (-2.5, 1.5)
    assert float(shoulder.limit_stiffness) == 100.0 and float(shoulder.limit_damping) == 2.0
    np.testing.assert_allclose([float(wrist.lower), float(wrist.upper)], [-0.02, 0.08], atol=1e-15)
    # the forearm turned by 0.5 rad about world -y at the shoulder (0, 0, 0.3): COM 0.15 m out
    np.testing.assert_allclose(robot.bodies[1].position, [-0.15 * np.sin(0.5), 0.0, 0.3 + 0.15 * np.cos(0.5)],
                               atol=1e-14)


def test_toml_includes_urdf_and_hangs_a_rod():
    loaded = load_model("arm3_with_rod.toml")
    assert loaded.kind == "hybrid" and loaded.body_names == ("link1", "link2", "link3")
    yaw, shoulder, wrist = loaded.model.multibody.joints
    assert float(shoulder.limit_stiffness) == float(wrist.limit_stiffness) == 2000.0
    assert (float(shoulder.lower), float(shoulder.upper)) == (-2.0, 2.0) and float(yaw.damping) == 0.05
    np.testing.assert_allclose(loaded.model.multibody.bodies[2].position, [0.0, 0.0, 0.67], atol=1e-15)


_LINK = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'


def _urdf(tmp_path, body, name="bad.urdf"):
    path = tmp_path / name
    path.write_text(f'<robot name="r"><link name="base"/>{body}</robot>')
    return path


def _joint(name, kind, parent, child, extra=""):
    return f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>{extra}</joint>'


@pytest.mark.parametrize("body, message", [
    ('<link name="mesh"><visual><geometry><mesh filename="m.stl"/></geometry></visual></link>'
     + _joint("j", "revolute", "base", "mesh"),
     r"link 'mesh': has no mass or inertia but moves \(joint 'j', revolute\).*mesh-only"),
    (_LINK.format("a") + _joint("j", "ball", "base", "a"),
     r"joint 'j'.type: unknown joint type 'ball'; URDF joint types: revolute, continuous"),
    (_LINK.format("a") + _LINK.format("b") + _joint("j1", "revolute", "base", "a") + _joint("j2", "revolute", "a", "b")
     + _joint("j3", "revolute", "base", "b"),
     r"joint 'j3'.child: link 'b' is already the child of joint 'j2': a URDF is a tree"),
    (_LINK.format("a") + _LINK.format("b") + _joint("j1", "revolute", "a", "b") + _joint("j2", "revolute", "b", "a"),
     r"links \[.a., .b.\] are not connected to the root link .base.: their joints form a loop"),
    (_LINK.format("a") + _joint("j", "revolute", "base", "arm"), r"joint 'j'.child: names no link: 'arm'"),
    (_LINK.format("a") + _joint("j", "revolute", "base", "a", '<axis xyz="0 0 0"/>'), r"joint 'j'.axis: .*is zero"),
    (_LINK.format("a") + _joint("j", "revolute", "base", "a", '<mimic joint="k"/>'), r"<mimic> joints are not supported"),
    ('<link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="x"/>'
     '</inertial></link>' + _joint("j", "revolute", "base", "a"), r"link 'a'.inertial.inertia: izz=\"x\""),
])
def test_bad_urdf_is_one_clear_line(tmp_path, body, message):
    with pytest.raises(ModelFileError, match=message) as e:
        load_robot(_urdf(tmp_path, body))
    assert "\n" not in str(e.value) and "bad.urdf" in str(e.value)


def test_bad_robot_files_and_options(tmp_path):
    bad_xml = tmp_path / "broken.urdf"
    bad_xml.write_text("<robot><link name='a'></robot>")
    with pytest.raises(ModelFileError, match="not valid XML: mismatched tag: line 1"):
        load_robot(bad_xml)
    with pytest.raises(ModelFileError, match="no such file"):
        load_robot(tmp_path / "missing.urdf")
    with pytest.raises(ValueError, match=r"joint_positions names no joint .*\['elbw'\]"):
        load_robot(EXAMPLES_DIR / "double_pendulum.urdf", joint_positions={"elbw": 1.0})
    friction = _urdf(tmp_path, _LINK.format("a") + _joint("j", "continuous", "base", "a",
                                                          '<dynamics damping="0.1" friction="0.3"/>'), "friction.urdf")
    with pytest.warns(RobotFileWarning, match="friction = 0.3 that jaxrod does not model"):
        load_robot(friction)
    toml = tmp_path / "clash.toml"
    toml.write_text(f'[include]\nurdf = "{EXAMPLES_DIR / "double_pendulum.urdf"}"\n'
                    '[bodies.upper]\nmass = 1.0\ninertia = [1.0, 1.0, 1.0]\n[simulation]\ndt = 0.01\nduration = 0.1\n')
    with pytest.raises(ModelFileError, match=r"bodies named twice: \['upper'\]"):
        load_model(toml)
    toml.write_text('[include]\nurdf = "nowhere.urdf"\n')
    with pytest.raises(ModelFileError, match=r"include.urdf: no such file: .*nowhere.urdf"):
        load_model(toml)


def test_cli_simulates_a_urdf(capsys):
    from jaxrod.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the double pendulum file reads without warnings
        code = main(["simulate", str(EXAMPLES_DIR / "double_pendulum.urdf"), "--dt", "0.002", "--duration", "0.01"])
    out = capsys.readouterr().out
    assert code == 0 and "position  upper" in out and "position  lower" in out
