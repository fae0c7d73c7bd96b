"""``jaxrod.plot.plot_contact_trajectory`` and ``animate_contact_trajectory`` (the snake scenes'
``--plot`` / ``--animate``): each body is drawn through its contact-sphere centres (a snake link
between its two spheres, placed from the body pose), the tracked body's path is the one drawn in
the top view and against time, and the GIF has one frame per saved time. The trajectory is made by
hand from a 3-link snake's start pose moved rigidly (drawing needs no simulation)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from jaxrod.geometry import quat_to_rotation  # noqa: E402
from jaxrod.integrate.moreau import ContactTrajectory  # noqa: E402
from jaxrod.plot import animate_contact_trajectory, plot_contact_trajectory  # noqa: E402
from jaxrod.scenes.snake import AIKO, snake_model  # noqa: E402


def _run(T=7):
    cs = snake_model(3, posture="straight", heading=0.3)
    q0 = np.asarray(cs.initial_state().q)
    shift = np.stack([0.05 * np.arange(T), -0.02 * np.arange(T), np.zeros(T)], 1)
    q = np.repeat(q0[None], T, 0)
    q[:, :, :3] += shift[:, None, :]
    active = np.zeros((T, 6), bool)
    active[:, :3] = True
    traj = ContactTrajectory(times=0.5 * np.arange(T), positions=q[:, :, :3], frames=None, twist=None, q=q,
                             v=np.zeros((T, 3, 6)), stats=None, final=None, dt=0.5, active=active,
                             impulses=np.zeros((T, 6, 5)), gaps=np.zeros((T, 6)))
    return cs, q, traj


def test_contact_figure_draws_links_between_their_spheres_and_the_tracked_path(tmp_path):
    cs, q, traj = _run()
    fig = plot_contact_trajectory(traj, tmp_path / "s.png", model=cs, track=1, snapshots=3)
    assert (tmp_path / "s.png").stat().st_size > 10_000
    top, series, contacts = fig.axes
    R = np.asarray(quat_to_rotation(q[:, :, 3:]))
    ex = R[..., 0]
    lines = top.lines
    for j, k in enumerate((0, 3, 6)):  # 3 snapshots: the links' sphere centres, front then rear
        x, y = np.asarray(lines[j].get_xdata()), np.asarray(lines[j].get_ydata())
        want = np.stack([q[k, :, :3] + AIKO["sphere_offset"] * ex[k], q[k, :, :3] - AIKO["sphere_offset"] * ex[k]],
                        1).reshape(-1, 3)
        np.testing.assert_allclose(x, want[:, 0], atol=1e-12)
        np.testing.assert_allclose(y, want[:, 1], atol=1e-12)
    np.testing.assert_allclose(lines[3].get_xdata(), q[:, 1, 0])  # link 2's path
    np.testing.assert_allclose(lines[3].get_ydata(), q[:, 1, 1])
    assert series.lines[0].get_label() == "link2 x - x(0)"  # the body's name in the model
    np.testing.assert_allclose(series.lines[0].get_ydata(), 0.05 * np.arange(7), atol=1e-12)
    np.testing.assert_allclose(series.lines[1].get_ydata(), -0.02 * np.arange(7), atol=1e-12)
    np.testing.assert_array_equal(contacts.lines[0].get_ydata(), np.full(6, 3))


def test_contact_gif_has_a_frame_per_saved_time_and_moves(tmp_path):
    cs, q, traj = _run(T=5)
    path = animate_contact_trajectory(traj, tmp_path / "s.gif", model=cs, track=None)
    with Image.open(path) as im:
        assert im.n_frames == 5
        im.seek(0)
        first = np.asarray(im.convert("RGB"), float)
        im.seek(4)
        last = np.asarray(im.convert("RGB"), float)
    assert np.abs(first - last).mean() > 0.5  # the links moved


def test_contact_figure_refuses_a_track_index_outside_the_bodies(tmp_path):
    import pytest

    cs, _, traj = _run(T=3)
    with pytest.raises(ValueError, match=r"track must be a body index in \[0, 3\), got 3"):
        plot_contact_trajectory(traj, tmp_path / "x.png", model=cs, track=3)
