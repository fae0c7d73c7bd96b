"""``jaxrod.plot.plot_bodies`` and ``animate_bodies`` on a hybrid system: the bodies' paths come from
the body rows of the trajectory (after the rods' nodes, not the first rows), every rod is drawn at
the snapshot times, and the GIF has one frame per saved time, each showing the rods and bodies
where they are. The trajectory is made by hand (drawing needs no simulation)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from jaxrod.integrate import Trajectory  # noqa: E402
from jaxrod.plot import animate_bodies, plot_bodies  # noqa: E402
from PIL import Image  # noqa: E402


def test_hybrid_figure_draws_rods_and_the_right_body_rows(tmp_path, small_hybrid):
    system = small_hybrid
    T = 11
    pos = np.random.default_rng(1).standard_normal((T, 10, 3))  # rods: rows 0-3 and 4-7; bodies: 8, 9
    traj = Trajectory(times=0.1 * np.arange(T), positions=pos, frames=None, twist=None, q=np.zeros((T, 1)),
                      v=np.zeros((T, 1)), stats=None, final=None, dt=0.1)
    fig = plot_bodies(traj, ["hub", "arm"], tmp_path / "h.png", model=system, snapshots=3)
    assert (tmp_path / "h.png").stat().st_size > 10_000
    ax0 = fig.axes[0]
    lines = [(np.asarray(l.get_xdata()), np.asarray(l.get_ydata())) for l in ax0.lines]
    # 2 rods x 3 snapshots (t = 0, 0.5, 1.0 s), then each body's path and start dot
    shots = [0, 5, 10]
    for i, rows in enumerate((slice(0, 4), slice(4, 8))):
        for j, k in enumerate(shots):
            x, z = lines[3 * i + j]
            np.testing.assert_array_equal(x, pos[k, rows, 0])
            np.testing.assert_array_equal(z, pos[k, rows, 2])
    for b, row in enumerate((8, 9)):
        x, z = lines[6 + 2 * b]
        np.testing.assert_array_equal(x, pos[:, row, 0])
        np.testing.assert_array_equal(z, pos[:, row, 2])


def test_hybrid_gif_moves_rods_and_bodies(tmp_path, small_hybrid):
    system = small_hybrid
    T = 6
    base = np.zeros((10, 3))
    base[:4, 0] = base[4:8, 0] = np.linspace(0.0, 0.3, 4)  # two straight rods along x
    base[8], base[9] = (0.0, 0.0, 0.0), (0.0, 0.0, -0.15)  # hub and arm
    # everything sinks 2 cm per frame; frame k's drawing must differ from frame k-1's
    pos = np.stack([base + [0.0, 0.0, -0.02 * k] for k in range(T)])
    traj = Trajectory(times=0.1 * np.arange(T), positions=pos, frames=None, twist=None, q=np.zeros((T, 1)),
                      v=np.zeros((T, 1)), stats=None, final=None, dt=0.1,
                      valid=np.array([True] * 5 + [False]))  # the last frame follows a failed step
    path = animate_bodies(traj, ["hub", "arm"], tmp_path / "h.gif", model=system)
    with Image.open(path) as im:
        assert im.n_frames == 5  # the invalid frame is not drawn
        rows = []
        for k in range(im.n_frames):
            im.seek(k)
            rgb = np.asarray(im.convert("RGB"), dtype=float)
            # the rods are drawn in tab:purple (148, 103, 189): their pixels move down frame by frame
            rod = np.all(np.abs(rgb - [148, 103, 189]) < 30, axis=-1)
            assert rod.sum() > 50
            rows.append(np.nonzero(rod)[0].mean())
    assert np.all(np.diff(rows) > 2), rows
