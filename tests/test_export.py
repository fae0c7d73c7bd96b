"""ParaView export (``jaxrod.export.export_paraview``): every frame read back with meshio equals
the trajectory it came from (points, polylines, labels, radius, frames, times), for a single rod,
a network, a rigid-body system and a hybrid system. The trajectories are made by hand (the export
is NumPy on a finished run, so nothing here needs a simulation); ``tests/test_cli.py`` checks
``jaxrod simulate ... --export`` on a real run."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import jaxrod
from jaxrod.export import export_paraview
from jaxrod.integrate import Trajectory
from jaxrod.system import MultibodySystem, Revolute, RigidBody

meshio = pytest.importorskip("meshio")
RNG = np.random.default_rng(0)


def _rotations(shape):
    """Random rotation matrices ``shape + (3, 3)`` (rows: d1, d2, d3)."""
    q, _ = np.linalg.qr(RNG.standard_normal(shape + (3, 3)))
    return q


def _traj(n_rows, n_frames, times=(0.0, 0.1, 0.2), valid=None):
    T = len(times)
    return Trajectory(
        times=np.asarray(times), positions=RNG.standard_normal((T, n_rows, 3)),
        frames=None if n_frames is None else _rotations((T, n_frames)), twist=None, q=np.zeros((T, 1)),
        v=np.zeros((T, 1)), stats=None, final=None, dt=0.1, valid=None if valid is None else np.asarray(valid),
    )


def _read(pvd):
    root = ET.parse(pvd).getroot()
    sets = root.find("Collection").findall("DataSet")
    return [(float(d.get("timestep")), meshio.read(pvd.parent / d.get("file"))) for d in sets]


def _lines(mesh):
    return np.concatenate([c.data for c in mesh.cells if c.type == "line"]) if any(
        c.type == "line" for c in mesh.cells) else np.zeros((0, 2), int)


def test_single_der_rod_round_trip(tmp_path):
    rod = jaxrod.DERRod.cantilever(5, 0.5, youngs_modulus=1e6, density=1000.0, radius=0.01)
    model = jaxrod.DERModel(rod)
    traj = _traj(5, 4)  # DER: frames on the 4 edges
    frames = _read(export_paraview(traj, tmp_path / "rod.pvd", model))
    assert [t for t, _ in frames] == [0.0, 0.1, 0.2]
    for k, (_, mesh) in enumerate(frames):
        np.testing.assert_array_equal(mesh.points, traj.positions[k])
        np.testing.assert_array_equal(_lines(mesh), [[0, 1], [1, 2], [2, 3], [3, 4]])
        np.testing.assert_array_equal(mesh.point_data["node"], np.arange(5))
        np.testing.assert_array_equal(mesh.point_data["rod"], 0)
        np.testing.assert_array_equal(mesh.point_data["radius"], 0.01)
        edge = [0, 1, 2, 3, 3]  # each edge's frame at its first node; the tip repeats the last edge
        for j, name in enumerate(("d1", "d2", "d3")):
            np.testing.assert_array_equal(mesh.point_data[name], traj.frames[k, edge, j])


def test_frames_after_a_failed_step_are_skipped_and_every_thins(tmp_path):
    traj = _traj(4, None, times=(0.0, 0.1, 0.2, 0.3), valid=(True, True, False, False))
    got = _read(export_paraview(traj, tmp_path / "r.pvd"))
    assert [t for t, _ in got] == [0.0, 0.1]
    traj = _traj(4, None, times=(0.0, 0.1, 0.2, 0.3, 0.4))
    got = _read(export_paraview(traj, tmp_path / "s.pvd", every=2))
    assert [t for t, _ in got] == [0.0, 0.2, 0.4]
    np.testing.assert_array_equal(got[1][1].points, traj.positions[2])
    assert "d1" not in got[0][1].point_data  # no frames given, none written


def test_network_limbs_are_separate_polylines_sharing_the_joint(tmp_path):
    class Topology:  # what node_chains reads of a DERNetwork: each limb's node rows
        limb_nodes = (np.array([0, 1, 2]), np.array([2, 3, 4]), np.array([2, 5]))

    class Network:
        topology = Topology()

    traj = _traj(6, None)
    (_, mesh), *_ = _read(export_paraview(traj, tmp_path / "net.pvd", Network()))
    # the joint node 2 appears once per limb, at the same place; no line joins two limbs
    np.testing.assert_array_equal(mesh.point_data["node"], [0, 1, 2, 2, 3, 4, 2, 5])
    np.testing.assert_array_equal(mesh.point_data["rod"], [0, 0, 0, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(mesh.points, traj.positions[0][[0, 1, 2, 2, 3, 4, 2, 5]])
    np.testing.assert_array_equal(_lines(mesh), [[0, 1], [1, 2], [3, 4], [4, 5], [6, 7]])


def test_hybrid_rods_and_bodies_with_their_frames(tmp_path, small_hybrid):
    traj = _traj(4 + 4 + 2, 3 + 3 + 2)  # 2 DER rods of 4 nodes (3 edges each), then 2 bodies
    (_, mesh), *_ = _read(export_paraview(traj, tmp_path / "hyb.pvd", small_hybrid))
    np.testing.assert_array_equal(mesh.points, traj.positions[0])
    np.testing.assert_array_equal(mesh.point_data["rod"], [0] * 4 + [1] * 4 + [-1, -1])
    np.testing.assert_array_equal(mesh.point_data["body"], [-1] * 8 + [0, 1])
    np.testing.assert_array_equal(_lines(mesh), [[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [6, 7]])
    np.testing.assert_array_equal([c.data.ravel() for c in mesh.cells if c.type == "vertex"][0], [8, 9])
    rows = [0, 1, 2, 2, 3, 4, 5, 5, 6, 7]  # rod 0 edges 0-2, rod 1 edges 3-5, bodies 6-7
    np.testing.assert_array_equal(mesh.point_data["d3"], traj.frames[0, rows, 2])
    np.testing.assert_array_equal(mesh.point_data["radius"][:8], 4e-3)
    assert np.all(np.isnan(mesh.point_data["radius"][8:]))


def test_multibody_bodies_as_points_with_axes(tmp_path):
    bodies = [RigidBody("a", 1.0, [1e-3] * 3, position=(0.0, 0.0, -0.5)),
              RigidBody("b", 1.0, [1e-3] * 3, position=(0.0, 0.0, -1.0))]
    system = MultibodySystem(bodies, [Revolute(None, "a", point=(0, 0, 0), axis=(0, 1, 0)),
                                      Revolute("a", "b", point=(0, 0, -0.75), axis=(0, 1, 0))])
    traj = _traj(2, 2)
    (_, mesh), *_ = _read(export_paraview(traj, tmp_path / "mb.pvd", system))
    assert [c.type for c in mesh.cells] == ["vertex"]
    np.testing.assert_array_equal(mesh.point_data["body"], [0, 1])
    np.testing.assert_array_equal(mesh.point_data["d1"], traj.frames[0, :, 0])


def test_bad_input_names_the_parameter(tmp_path):
    traj = _traj(3, None)
    with pytest.raises(ValueError, match=r"path must end in \.pvd"):
        export_paraview(traj, tmp_path / "x.vtu")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_paraview(traj, tmp_path / "missing" / "x.pvd")
    with pytest.raises(ValueError, match="every must be an integer >= 1, got 0"):
        export_paraview(traj, tmp_path / "x.pvd", every=0)
    with pytest.raises(ValueError, match="no valid frame"):
        export_paraview(_traj(3, None, valid=(False, False, False)), tmp_path / "x.pvd")
