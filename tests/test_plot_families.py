"""Every model family's figure and GIF show every part (issue 25 item 3), read back from the drawn
artists: rigid bodies as boxes from their inertia posed by their frames, joints at their points,
a hybrid system's rods and attachments (:mod:`jaxrod.plot.scene3d` in ``plot_bodies`` /
``animate_bodies``), the Stewart-Gough legs and plate (``plot_plate_trajectory``), a tendon
robot's tendons on its backbone (``tendon_paths`` in ``plot_trajectory`` / ``animate_trajectory``).
Networks are covered by ``test_plot_network.py``, single rods by the CLI tests.

No simulation runs: the trajectories are made by hand (drawing needs none), the models are built
but never compiled; the whole file takes a few seconds of CPU."""

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402
from PIL import Image  # noqa: E402

from jaxrod.integrate import Trajectory  # noqa: E402
from jaxrod.plot import animate_bodies, animate_trajectory, plot_bodies, plot_plate_trajectory  # noqa: E402
from jaxrod.plot import plot_trajectory, tendon_paths  # noqa: E402
from jaxrod.plot.scene3d import inertia_box  # noqa: E402
from jaxrod.system import MultibodySystem, Revolute, RigidBody  # noqa: E402


def _rot_y(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _traj(times, positions, frames=None, valid=None):
    T = len(times)
    return Trajectory(times=np.asarray(times, float), positions=np.asarray(positions, float), frames=frames,
                      twist=None, q=np.zeros((T, 1)), v=np.zeros((T, 1)), stats=None, final=None, dt=0.1,
                      valid=valid)


def _gif_frames(path):
    with Image.open(path) as im:
        out = []
        for k in range(im.n_frames):
            im.seek(k)
            out.append(np.asarray(im.convert("RGB"), dtype=np.int16))
    return out


def _assert_frames_differ(frames):
    for a, b in zip(frames[:-1], frames[1:]):
        assert np.abs(a - b).sum() > 0


# ---- rigid bodies ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def double_pendulum():
    """Two slender links (a long x axis) on revolute joints about y; a hand-made swing: the links
    turn about y by angles a1(t), a2(t) and their centres follow."""
    inertia = [1e-4, 3.4e-3, 3.4e-3]  # about the link's own x axis tiny: a slender box
    bodies = [RigidBody("upper", 1.0, inertia, position=(0.1, 0.0, 0.0)),
              RigidBody("lower", 1.0, inertia, position=(0.3, 0.0, 0.0))]
    joints = [Revolute(None, "upper", point=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0)),
              Revolute("upper", "lower", point=(0.2, 0.0, 0.0), axis=(0.0, 1.0, 0.0))]
    system = MultibodySystem(bodies, joints)
    T = 6
    a1, a2 = np.linspace(0.0, 0.6, T), np.linspace(0.0, 1.2, T)
    R1, R2 = np.stack([_rot_y(a) for a in a1]), np.stack([_rot_y(a) for a in a2])
    elbow = R1 @ np.array([0.2, 0.0, 0.0])
    x = np.stack([R1 @ np.array([0.1, 0.0, 0.0]), elbow + R2 @ np.array([0.1, 0.0, 0.0])], axis=1)
    frames = np.swapaxes(np.stack([R1, R2], axis=1), -1, -2)  # rows: the body axes
    return system, _traj(0.1 * np.arange(T), x, frames), elbow


def test_inertia_box_recovers_a_box_and_clips_degenerate_sides():
    m, (a, b, c) = 2.0, (0.3, 0.2, 0.1)
    inertia = m / 3.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    half, axes = inertia_box(m, inertia)
    np.testing.assert_allclose(sorted(half), sorted((a, b, c)), rtol=1e-12)
    np.testing.assert_allclose(np.abs(axes), np.eye(3)[:, np.argsort(np.argsort(inertia))], atol=1e-12)
    half, _ = inertia_box(1.0, [0.0, 1.0, 1.0], min_half=0.05)  # a rod: no thickness
    assert min(half) == 0.05


def test_multibody_figure_draws_posed_boxes_and_joints(tmp_path, double_pendulum):
    system, traj, elbow = double_pendulum
    fig = plot_bodies(traj, ["upper", "lower"], tmp_path / "dp.png", model=system)
    assert (tmp_path / "dp.png").stat().st_size > 10_000
    scene = fig.scene3d
    ax3 = scene.ax
    assert ax3.name == "3d"
    boxes = [c for c in ax3.collections if isinstance(c, Poly3DCollection)]
    assert boxes == scene.boxes and len(boxes) == 2
    x, R = np.asarray(traj.positions), np.swapaxes(np.asarray(traj.frames), -1, -2)
    for i, box in enumerate(scene.boxes):
        corners = np.concatenate(scene._box_faces(5, i))  # the drawn faces at the last time
        np.testing.assert_allclose(corners.mean(axis=0), x[-1, i], atol=1e-12)  # centred on the body
        local = (corners - x[-1, i]) @ R[-1, i]  # back in the body frame: the box's half sizes
        # half sizes from m (b^2 + c^2) / 3 = I: a^2 = 3 (I2 + I3 - I1) / 2m along the link, sqrt(1.5e-4) across
        np.testing.assert_allclose(np.abs(local).max(axis=0), [0.01005 ** 0.5, 1.5e-4 ** 0.5, 1.5e-4 ** 0.5], rtol=1e-9)
    # the joints: the hinge at the origin (both the world side and the upper link's), the elbow twice
    pts = np.stack(scene.joint_marks.get_data_3d(), axis=1)
    for p in (np.zeros(3), elbow[-1]):
        assert np.min(np.linalg.norm(pts - p, axis=1)) < 1e-12
    assert len(pts) == 4
    # the body paths are drawn up to the last time
    np.testing.assert_allclose(np.stack(scene.trail_lines[1].get_data_3d(), axis=1), x[:, 1])


def test_multibody_gif_moves_the_boxes(tmp_path, double_pendulum):
    system, traj, _ = double_pendulum
    path = animate_bodies(traj, ["upper", "lower"], tmp_path / "dp.gif", model=system)
    frames = _gif_frames(path)
    assert len(frames) == 6
    _assert_frames_differ(frames)


def test_contact_system_draws_links_and_contact_spheres(tmp_path, double_pendulum):
    """A contact system (the snake's kind: links with contact spheres) is drawn by the same code:
    each sphere rides on its link, at its offset in the link's frame."""
    from jaxrod.system.contact import ContactSystem, SphereContact

    system, traj, _ = double_pendulum
    spheres = [SphereContact("upper", (0.15, 0.0, 0.0), 0.02, mu=0.3),
               SphereContact("lower", (0.25, 0.0, 0.0), 0.02, mu=0.3),
               SphereContact("lower", (0.35, 0.0, 0.0), 0.02, mu=0.3)]
    contact = ContactSystem(system, spheres)
    fig = plot_bodies(traj, ["upper", "lower"], tmp_path / "c.png", model=contact)
    scene = fig.scene3d
    assert len(scene.boxes) == 2
    x, R = np.asarray(traj.positions), np.swapaxes(np.asarray(traj.frames), -1, -2)
    expect = [x[-1, 0] + R[-1, 0] @ [0.05, 0.0, 0.0], x[-1, 1] + R[-1, 1] @ [-0.05, 0.0, 0.0],
              x[-1, 1] + R[-1, 1] @ [0.05, 0.0, 0.0]]
    np.testing.assert_allclose(np.stack(scene.sphere_marks.get_data_3d(), axis=1), expect, atol=1e-12)


def test_hybrid_figure_draws_rods_and_attachments_in_3d(tmp_path, small_hybrid):
    T = 4
    pos = np.random.default_rng(3).standard_normal((T, 10, 3))  # rods: rows 0-3 and 4-7; bodies 8, 9
    frames = np.broadcast_to(np.eye(3), (T, 8, 3, 3)).copy()  # 2 x 3 rod edges, then 2 bodies
    traj = _traj(0.1 * np.arange(T), pos, frames, valid=np.array([True, True, True, False]))
    fig = plot_bodies(traj, ["hub", "arm"], tmp_path / "h.png", model=small_hybrid)
    scene = fig.scene3d
    for line, rows in zip(scene.rod_lines, (slice(0, 4), slice(4, 8))):  # at the last valid time
        np.testing.assert_array_equal(np.stack(line.get_data_3d(), axis=1), pos[2, rows])
    # both rods are clamped to the hub by their first edge: nodes 0, 1 and 4, 5
    np.testing.assert_array_equal(np.stack(scene.attachment_marks.get_data_3d(), axis=1), pos[2, [0, 1, 4, 5]])
    assert len(scene.boxes) == 2 and scene.joint_marks is not None
    path = animate_bodies(traj, ["hub", "arm"], tmp_path / "h.gif", model=small_hybrid)
    gif = _gif_frames(path)
    assert len(gif) == 3  # the frame after the failed step is not drawn
    _assert_frames_differ(gif)


# ---- Stewart-Gough ---------------------------------------------------------------------------------
def test_stewart_gough_figure_draws_legs_and_plate(tmp_path):
    from jaxrod.models.cosserat.parallel import StewartGough

    robot = StewartGough.paper((0.5,) * 6, n_points=5)
    base, plate = np.asarray(robot.base_points), np.asarray(robot.plate_points)
    T, n = 4, 5
    s = np.linspace(0.0, 1.0, n)[:, None]
    centre = np.array([[-0.01 * k, 0.0, 0.5] for k in range(T)])
    legs = np.stack([np.concatenate([base[i] + s * (centre[k] + plate[i] - base[i]) for i in range(6)])
                     for k in range(T)])
    pos = np.concatenate([legs, centre[:, None]], axis=1)
    traj = SimpleNamespace(times=0.1 * np.arange(T), positions=pos, plate_position=centre,
                           tilt=np.zeros(T))
    fig = plot_plate_trajectory(traj, tmp_path / "sg.png", title="Stewart-Gough")
    assert (tmp_path / "sg.png").stat().st_size > 10_000
    drawn = fig.robot3d
    assert len(drawn["legs"]) == 6
    for i, line in enumerate(drawn["legs"]):
        np.testing.assert_array_equal(np.stack(line.get_data_3d(), axis=1), pos[-1, i * n:(i + 1) * n])
    # the plate: the hexagon through the six leg ends, in order around the plate centre
    corners = drawn["corners"]
    ends = pos[-1, n - 1: 6 * n: n]
    assert sorted(map(tuple, corners)) == sorted(map(tuple, ends))
    angle = np.unwrap(np.arctan2(corners[:, 1] - centre[-1, 1], corners[:, 0] - centre[-1, 0]))
    assert np.all(np.diff(angle) > 0)
    assert drawn["plate"] in fig.robot3d["legs"][0].axes.collections
    # the GIF: legs, plate hexagon and centre through the robot's topology
    path = animate_trajectory(traj, tmp_path / "sg.gif", model=robot, exaggeration=1)
    gif = _gif_frames(path)
    assert len(gif) == T
    _assert_frames_differ(gif)


# ---- tendon robot ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tendon_robot():
    """A straight 0.2 m Cosserat rod along z with two tendons at 5 mm along d1 (one to the tip, one
    ending half way), and a hand-made run: the rod translates along x, its frames turn about z."""
    from jaxrod.models.cosserat import CosseratModel, CosseratRod, HelicalRouting, SampledRouting, Tendon

    L, n = 0.2, 9
    tendons = (Tendon(HelicalRouting(5e-3, 0.0), tension=0.0),
               Tendon(SampledRouting(L, np.tile([5e-3, 0.0], (5, 1))), tension=0.0, termination=L / 2))
    model = CosseratModel(CosseratRod.circular(L, 1e-3, youngs_modulus=207e9, density=8000.0), n_points=n,
                          tendons=tendons, section_radius=0.01)
    T = 5
    z = np.linspace(0.0, L, n)
    pos = np.stack([np.stack([np.full(n, 0.01 * k), np.zeros(n), z], axis=1) for k in range(T)])
    ang = np.linspace(0.0, 0.5, T)
    Rz = np.stack([np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
                   for a in ang])
    frames = np.broadcast_to(np.swapaxes(Rz, -1, -2)[:, None], (T, n, 3, 3)).copy()  # rows d1, d2, d3
    return model, _traj(0.1 * np.arange(T), pos, frames), Rz


def test_tendon_paths_ride_on_the_backbone(tendon_robot):
    model, traj, Rz = tendon_robot
    full, half = tendon_paths(traj, model)
    assert full.shape == (5, 9, 3) and half.shape == (5, 5, 3)  # the second ends at node 4 (L / 2)
    d1 = Rz[:, :, 0]  # the first frame row: d1 in the world
    np.testing.assert_allclose(full, traj.positions + 5e-3 * d1[:, None], atol=1e-15)
    np.testing.assert_allclose(half, traj.positions[:, :5] + 5e-3 * d1[:, None], atol=1e-15)


def test_tendon_robot_figure_and_gif_show_the_tendons(tmp_path, tendon_robot):
    model, traj, _ = tendon_robot
    fig = plot_trajectory(traj, tmp_path / "t.png", model=model, exaggeration=1)
    paths = tendon_paths(traj, model)
    # per tendon: start and end, in the x-z panel and in 3-D
    assert len(fig.tendon_lines) == 2 * 2 * 2
    x_end, z_end = fig.tendon_lines[2].get_data()  # tendon 0 at the last time, x-z panel
    np.testing.assert_array_equal(x_end, paths[0][-1, :, 0])
    np.testing.assert_array_equal(z_end, paths[0][-1, :, 2])
    np.testing.assert_array_equal(np.stack(fig.tendon_lines[7].get_data_3d(), axis=1), paths[1][-1])
    path = animate_trajectory(traj, tmp_path / "t.gif", model=model, exaggeration=1)
    gif = _gif_frames(path)
    assert len(gif) == 5
    _assert_frames_differ(gif)
