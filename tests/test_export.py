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


# ---- XDMF time series and strains ------------------------------------------------------------------
def _read_xdmf(path):
    """``(points of the mesh, cells, [(t, point_data, cell_data)])`` read back with meshio."""
    with meshio.xdmf.TimeSeriesReader(str(path)) as reader:
        points, cells = reader.read_points_cells()
        steps = [reader.read_data(k) for k in range(reader.num_steps)]
    return points, cells, steps


def _arc(kappa, n, L):
    """A circular arc of curvature ``kappa`` [1/m] in the x-z plane (d1 = -y: the curvature about d1 is -kappa): nodes
    ``(n, 3)`` and nodal frames ``(n, 3, 3)`` (rows d1, d2, d3: d3 the tangent)."""
    s = np.linspace(0.0, L, n)
    a = kappa * s
    pos = np.stack([(1 - np.cos(a)) / kappa, np.zeros(n), np.sin(a) / kappa], axis=1)
    d3 = np.stack([np.sin(a), np.zeros(n), np.cos(a)], axis=1)
    d1 = np.broadcast_to([0.0, -1.0, 0.0], (n, 3))
    return pos, np.stack([d1, np.cross(d3, d1), d3], axis=1)


def test_xdmf_round_trip_single_der_rod_with_strains(tmp_path):
    rod = jaxrod.DERRod.cantilever(5, 0.5, youngs_modulus=1e6, density=1000.0, radius=0.01)
    model = jaxrod.DERModel(rod)
    traj = _traj(5, 4)
    path = jaxrod.export.export_xdmf(traj, tmp_path / "rod.xdmf", model, data_format="XML")
    points, cells, steps = _read_xdmf(path)
    assert [c.type for c in cells] == ["line"]
    np.testing.assert_array_equal(cells[0].data, [[0, 1], [1, 2], [2, 3], [3, 4]])
    assert [t for t, _, _ in steps] == [0.0, 0.1, 0.2]
    edge = [0, 1, 2, 3, 3]
    for k, (_, pd, cd) in enumerate(steps):
        # the moving points: the mesh's (the first frame's) plus the displacement
        np.testing.assert_allclose(points + pd["displacement"], traj.positions[k], atol=1e-14)
        np.testing.assert_array_equal(pd["radius"], 0.01)
        np.testing.assert_array_equal(pd["d2"], traj.frames[k, edge, 1])
        e = np.linalg.norm(np.diff(traj.positions[k], axis=0), axis=1)
        rest = np.asarray(rod.rest_lengths)  # 0.5 / 3.5 m: the clamped edge reaches behind the base
        np.testing.assert_allclose(cd["stretch"][0], e / rest - 1.0, rtol=1e-12)
        assert np.all(pd["curvature"][[0, -1]] == 0) and np.all(np.isfinite(pd["curvature"]))


def test_cosserat_arc_curvature_and_pvd_cell_data(tmp_path):
    """A circular arc with frames at its nodes (a shooting model's): the curvature cell data is
    -kappa about d1 on every edge, twist and the other bending zero; no stretch."""
    kappa, n, L = 2.0, 9, 0.4
    pos, frames = _arc(kappa, n, L)
    traj = Trajectory(times=np.array([0.0, 0.1]), positions=np.stack([pos, pos]), frames=np.stack([frames, frames]),
                      twist=None, q=np.zeros((2, 1)), v=np.zeros((2, 1)), stats=None, final=None, dt=0.1)
    for path in (jaxrod.export.export_xdmf(traj, tmp_path / "arc.xdmf", data_format="XML"),
                 export_paraview(traj, tmp_path / "arc.pvd")):
        if path.suffix == ".xdmf":
            cd = _read_xdmf(path)[2][1][2]
        else:
            cd = _read(path)[1][1].cell_data
        # the tangent turns from +z toward +x: a rotation by kappa ds about +y = -d1 between nodes,
        # over the chord length 2 sin(kappa ds / 2) / kappa: curvature (-kappa, 0, 0) up to that ratio
        ds = L / (n - 1)
        chord = 2 * np.sin(kappa * ds / 2) / kappa
        np.testing.assert_allclose(cd["curvature"][0], np.tile([-kappa * ds / chord, 0.0, 0.0], (n - 1, 1)),
                                   atol=1e-12)
        # rest lengths of a rod without them: the first frame's edges (the chord: no stretch)
        np.testing.assert_allclose(cd["stretch"][0], 0.0, atol=1e-12)


def test_xdmf_hybrid_bodies_as_vertices(tmp_path, small_hybrid):
    traj = _traj(4 + 4 + 2, 3 + 3 + 2)
    points, cells, steps = _read_xdmf(jaxrod.export.export_xdmf(traj, tmp_path / "h.xdmf", small_hybrid,
                                                                 data_format="XML"))
    # the rods' 6 edges, then the bodies as zero-length lines (meshio cannot write a mixed mesh)
    assert [c.type for c in cells] == ["line"]
    np.testing.assert_array_equal(cells[0].data[6:], [[8, 8], [9, 9]])
    for k, (_, pd, cd) in enumerate(steps):
        np.testing.assert_allclose(points + pd["displacement"], traj.positions[k], atol=1e-14)
        np.testing.assert_array_equal(pd["body"], [-1] * 8 + [0, 1])
        stretch = cd["stretch"][0]
        assert np.all(np.isfinite(stretch[:6])) and np.all(np.isnan(stretch[6:]))
        np.testing.assert_array_equal(pd["d1"][8:], traj.frames[k, 6:, 0])


def test_pcs_strains_as_cell_data(tmp_path):
    from jaxrod.models.pcs import PCSModel, PCSRod

    model = PCSModel(PCSRod.circular(0.2, 2, 0.01, youngs_modulus=1e6, density=1000.0, poisson_ratio=0.5),
                     points_per_segment=3)
    n_q = 2 * model.n_modes
    q = np.stack([np.zeros(n_q), 0.1 * np.arange(1, n_q + 1)])
    traj = Trajectory(times=np.array([0.0, 0.1]), positions=RNG.standard_normal((2, 7, 3)), frames=None, twist=None,
                      q=q, v=np.zeros_like(q), stats=None, final=None, dt=0.1)
    _, _, steps = _read_xdmf(jaxrod.export.export_xdmf(traj, tmp_path / "p.xdmf", model, data_format="XML"))
    xi = np.asarray(model.strains(q[1]))  # (2 segments, 6)
    np.testing.assert_allclose(steps[1][2]["pcs_strain"][0], xi[[0, 0, 0, 1, 1, 1]], rtol=1e-12)


def test_export_trajectory_picks_the_format_by_suffix(tmp_path):
    traj = _traj(3, None)
    assert jaxrod.export.export_trajectory(traj, tmp_path / "a.pvd").suffix == ".pvd"
    assert jaxrod.export.export_trajectory(traj, tmp_path / "a.xdmf").exists()
    with pytest.raises(ValueError, match=r"must end in \.pvd or \.xdmf"):
        jaxrod.export.export_trajectory(traj, tmp_path / "a.vtu")
    with pytest.raises(ValueError, match="data_format must be"):
        jaxrod.export.export_xdmf(traj, tmp_path / "a.xdmf", data_format="Binary")
