"""``jaxrod.plot.plot_bodies`` on a hybrid system: the bodies' paths come from the body rows of the
trajectory (after the rods' nodes, not the first rows), and every rod is drawn at the snapshot
times. The trajectory is made by hand (drawing needs no simulation)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import jaxrod  # noqa: E402
from jaxrod.integrate import Trajectory  # noqa: E402
from jaxrod.plot import plot_bodies  # noqa: E402
from jaxrod.system import HybridSystem, Revolute, RigidBody, RodClamp  # noqa: E402


def test_hybrid_figure_draws_rods_and_the_right_body_rows(tmp_path):
    rods = [jaxrod.DERModel(jaxrod.DERRod.cantilever(4, 0.3, clamped_ends="both", start=(0.05, y, 0.0),
                                                     youngs_modulus=2e7, density=1000.0, radius=4e-3))
            for y in (0.0, 0.1)]
    bodies = [RigidBody("hub", 0.2, [1e-4] * 3, position=(0.0, 0.05, 0.0)),
              RigidBody("arm", 0.1, [1e-4] * 3, position=(0.0, 0.05, -0.15))]
    system = HybridSystem(rods, bodies, [Revolute("hub", "arm", point=(0.0, 0.05, -0.05), axis=(0.0, 1.0, 0.0))],
                          [RodClamp(0, 0, "hub"), RodClamp(1, 0, "hub")])
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
