"""Plots and GIFs of multi-rod networks and contact scenes (:mod:`jaxrod.plot`).

No simulation runs here: trajectories are fake objects with ``times`` and ``positions`` built from
a small network's rest shape plus distinct random offsets (so every drawn point can be mapped back
to its node id), and the tests read the line data of the figures' artists.

* The model's connectivity gives one polyline per limb, each exactly the limb's node sequence;
  an edge list alone splits into maximal chains that use every edge once; no drawn segment joins
  two nodes that are not an edge (plot_trajectory and every GIF view).
* A single rod (no model, a model without topology, or its own chain as ``edges``) draws exactly
  the rows of ``positions`` as before, and keeps the tip-displacement panel.
* The network panel shows the node centroid displacement and the lowest node's height above the
  floor [mm]; the floor trace lies on the plane (also a tilted one) and is left out of views that
  look at the plane face on.
"""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

import jaxrod
from jaxrod import plot
from jaxrod.models.der.contact import FloorContact
from jaxrod.models.der.model import DERNetwork, Joint

MAT = {"youngs_modulus": 1e6, "density": 1000.0, "radius": 0.005}
FLOOR_Z = -0.05


def _line(a, b, n=4):
    pts = np.linspace(np.asarray(a, float), np.asarray(b, float), n)
    return jaxrod.DERRod.from_polyline(pts, rest="straight", **MAT)


@pytest.fixture(scope="module")
def network():
    """Body (limb 0) down to a hub; arms +x (1) and -y (2) out of the hub; a leg (3) down from the
    +x arm's tip (a joint of degree 2); limb 4 runs *into* the hub (attached by its last node)."""
    hub = (0.0, 0.0, 0.2)
    limbs = [
        _line((0.0, 0.0, 0.3), hub),
        _line(hub, (0.1, 0.0, 0.2)),
        _line(hub, (0.0, -0.1, 0.2)),
        _line((0.1, 0.0, 0.2), (0.1, 0.0, 0.1)),
        _line((-0.1, 0.0, 0.2), hub),
    ]
    joints = [
        Joint(host=(0, -1), attached=[(1, 0), (2, 0), (4, -1)]),
        Joint(host=(1, -1), attached=[(3, 0)]),
    ]
    return DERNetwork(limbs, joints, contacts=(FloorContact(offset=FLOOR_Z),))


def _fake_traj(x0, n_times=7, seed=0):
    """``times (T,)`` [s] and ``positions (T, N, 3)`` [m]: ``x0`` sinking by 1 cm per step with
    distinct random offsets (every node at every time has its own coordinates)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 0.6, n_times)
    pos = x0[None] + 1e-3 * rng.standard_normal((n_times,) + x0.shape)
    pos[..., 2] -= 0.1 * t[:, None]
    return SimpleNamespace(times=t, positions=pos)


@pytest.fixture(scope="module")
def net_traj(network):
    x0 = np.asarray(network.initial_state().q)[: network.n_nodes, :3]
    return _fake_traj(x0)


def _pieces(xyz):
    """Split ``(n, k)`` drawn points at NaN rows into polylines."""
    bad = np.any(np.isnan(xyz), axis=1)
    cuts = np.flatnonzero(bad)
    out, start = [], 0
    for c in list(cuts) + [len(xyz)]:
        if c > start:
            out.append(xyz[start:c])
        start = c + 1
    assert not np.any(bad[np.r_[0, -1]]), "a polyline starts or ends with a separator"
    assert not np.any(bad[1:] & bad[:-1]), "empty polyline between separators"
    return out


def _node_ids(points, frame, cols):
    """Node id of each drawn point (matching columns ``cols`` of ``frame (N, 3)`` exactly)."""
    d = np.abs(points[:, None, :] - frame[None, :, cols]).max(axis=-1)
    ids = np.argmin(d, axis=1)
    assert np.all(d[np.arange(len(points)), ids] == 0.0), "a drawn point is no node"
    return ids


def _assert_only_edges(pieces, frame, cols, edges):
    """Every segment of every piece joins the two nodes of an edge; every edge is drawn."""
    edge_set = {frozenset(map(int, e)) for e in edges}
    drawn = set()
    for p in pieces:
        ids = _node_ids(p, frame, cols)
        for a, b in itertools.pairwise(ids):
            assert frozenset((int(a), int(b))) in edge_set, f"segment {a}-{b} is not an edge"
            drawn.add(frozenset((int(a), int(b))))
    assert drawn == edge_set


# ---- connectivity -----------------------------------------------------------------------------


def test_model_chains_are_the_limbs(network):
    chains = plot.node_chains(network, n_nodes=network.n_nodes)
    assert len(chains) == 5
    for limb, c in enumerate(chains):
        np.testing.assert_array_equal(c, network.limb_node_indices(limb))
    # limb 4 is numbered into the hub: the chain keeps that direction
    assert chains[4][-1] == chains[0][-1] == 3


def test_edge_chains_are_maximal_and_exact(network):
    edges = np.asarray(network.topology.edge_nodes)
    chains = plot.node_chains(edges=edges)
    # the hub (node 3) ends chains; the arm-leg joint (node 6) has degree 2 and joins them
    expected = [[0, 1, 2, 3], [3, 4, 5, 6, 10, 11, 12], [3, 7, 8, 9], [13, 14, 15, 3]]
    assert [c.tolist() for c in chains] == expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_chains_of_shuffled_flipped_edges(network, seed):
    rng = np.random.default_rng(seed)
    edges = np.asarray(network.topology.edge_nodes)[rng.permutation(network.n_edges)]
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip, ::-1]
    chains = plot.node_chains(edges=edges)
    deg = np.bincount(edges.ravel())
    used = [frozenset((int(a), int(b))) for c in chains for a, b in itertools.pairwise(c)]
    assert sorted(map(sorted, used)) == sorted(map(sorted, map(frozenset, edges.tolist())))
    for c in chains:
        assert np.all(deg[c[1:-1]] == 2)  # interior nodes only where the path cannot branch
        assert deg[c[0]] != 2 and deg[c[-1]] != 2  # maximal: no loops in this network


def test_edge_chains_of_a_loop_and_bad_edges():
    (c,) = plot.node_chains(edges=np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
    assert c.tolist() == [0, 1, 2, 3, 0]
    with pytest.raises(ValueError, match="does not exist"):
        plot.node_chains(edges=np.array([[0, 1], [1, 5]]), n_nodes=4)
    with pytest.raises(ValueError, match="itself"):
        plot.node_chains(edges=np.array([[0, 1], [1, 1]]))
    with pytest.raises(ValueError, match=r"\(E, 2\)"):
        plot.node_chains(edges=np.array([0, 1, 2]))


# ---- plot_trajectory --------------------------------------------------------------------------


def _axes_titled(fig, title):
    (ax,) = [a for a in fig.axes if a.get_title() == title]
    return ax


def _line_labelled(ax, label):
    (ln,) = [ln for ln in ax.lines if ln.get_label() == label]
    return ln


def test_plot_trajectory_draws_each_limb(network, net_traj, tmp_path):
    fig = plot.plot_trajectory(net_traj, tmp_path / "n.png", model=network)
    assert (tmp_path / "n.png").stat().st_size > 0
    ax = _axes_titled(fig, "centerline, x-z projection")
    pos = net_traj.positions
    final = _line_labelled(ax, f"t = {net_traj.times[-1]:.3g} s").get_xydata()
    pieces = _pieces(final)
    limbs = [network.limb_node_indices(k) for k in range(5)]
    assert len(pieces) == len(limbs)
    for p, ids in zip(pieces, limbs):
        np.testing.assert_array_equal(p, pos[-1][ids][:, [0, 2]])
    _assert_only_edges(pieces, pos[-1], [0, 2], np.asarray(network.topology.edge_nodes))
    # the 3-D view draws the same polylines
    (ax3,) = [a for a in fig.axes if a.name == "3d"]
    x, y, z = ax3.lines[1].get_data_3d()
    _assert_only_edges(_pieces(np.stack([x, y, z], 1)), pos[-1], [0, 1, 2], np.asarray(network.topology.edge_nodes))


def test_network_panel_centroid_and_lowest_node(network, net_traj):
    fig = plot.plot_trajectory(net_traj, model=network)
    pos, t = net_traj.positions, net_traj.times
    ax_c = fig.axes[0]
    assert "centroid" in ax_c.get_ylabel()
    c = pos.mean(axis=1)
    for k, name in enumerate("xyz"):
        x, u = _line_labelled(ax_c, f"$u_{name}$").get_data()
        np.testing.assert_array_equal(x, t)
        np.testing.assert_allclose(u, (c[:, k] - c[0, k]) * 1e3, rtol=0, atol=1e-12)
    ax_h = fig.axes[1]
    assert "above floor [mm]" in ax_h.get_ylabel()
    _, h = _line_labelled(ax_h, "floor").get_data()
    np.testing.assert_allclose(h, (pos[..., 2].min(axis=1) - FLOOR_Z) * 1e3, rtol=0, atol=1e-12)
    # no tip panel for a network
    assert not any("tip" in a.get_ylabel() for a in fig.axes)


def test_floor_line_lies_on_the_plane(network, net_traj):
    fig = plot.plot_trajectory(net_traj, model=network)
    fig.canvas.draw()
    ax = _axes_titled(fig, "centerline, x-z projection")
    x, z = _line_labelled(ax, "floor").get_data()
    np.testing.assert_allclose(z, FLOOR_Z, rtol=0, atol=1e-15)
    lo, hi = ax.get_xlim()
    assert x.min() <= lo and x.max() >= hi  # across the whole panel
    assert ax.get_ylim()[0] < FLOOR_Z  # the floor is inside the view


def test_single_rod_line_data_unchanged(tmp_path):
    n = 9
    x0 = np.stack([np.linspace(0, 0.4, n), np.zeros(n), np.zeros(n)], axis=1)
    tr = _fake_traj(x0, seed=3)
    tr.positions[..., 1] = 0.0  # a planar (x-z) rod
    pos = tr.positions
    figs = [
        plot.plot_trajectory(tr),
        plot.plot_trajectory(tr, model=SimpleNamespace()),  # a model without topology: one rod
        plot.plot_trajectory(tr, edges=np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)),
    ]
    for fig in figs:
        ax_t = fig.axes[0]
        assert ax_t.get_ylabel() == "tip displacement [mm]"
        np.testing.assert_allclose(ax_t.lines[2].get_ydata(), (pos[:, -1, 2] - pos[0, -1, 2]) * 1e3, atol=1e-12)
        ax = _axes_titled(fig, "centerline, x-z projection")
        np.testing.assert_array_equal(ax.lines[0].get_xydata(), pos[0][:, [0, 2]])
        np.testing.assert_array_equal(ax.lines[1].get_xydata(), pos[-1][:, [0, 2]])
        assert len(ax.lines) == 2  # no floor without a model that has one
    anim = plot.rods._animation(tr, max_frames=4)
    ax = anim.fig.axes[0]
    assert len(anim.fig.axes) == 1  # planar rod: the x-z view, as before
    xlo, xhi = plot.rods._fit_aspect(*plot.rods._limits(pos[..., [0, 2]]), 1.45)
    np.testing.assert_allclose(ax.get_xlim(), (xlo[0], xhi[0]))
    np.testing.assert_allclose(ax.get_ylim(), (xlo[1], xhi[1]))
    line, tip = anim.animated[:2]
    for i in anim.idx:
        anim.set_frame(i)
        np.testing.assert_array_equal(line.get_xydata(), pos[i][:, [0, 2]])
        np.testing.assert_array_equal(tip.get_xydata(), pos[i, -1:][:, [0, 2]])
    assert anim.idx.tolist() == [0, 2, 4, 6]


# ---- animations -------------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["auto", "xz", "xy", "yz", "3d"])
def test_animation_views_draw_only_edges(network, net_traj, view):
    anim = plot.rods._animation(net_traj, max_frames=3, model=network, view=view)
    edges = np.asarray(network.topology.edge_nodes)
    pos = net_traj.positions
    if view == "auto":
        # the network spans y (arm along -y): x-z and x-y side by side
        assert [a.get_xlabel() + a.get_ylabel() for a in anim.fig.axes] == ["x [m]z [m]", "x [m]y [m]"]
    movers = anim.animated[:-1]
    assert all(m.get_label() == "network" for m in movers)  # no tip marker for a network
    for i in anim.idx:
        anim.set_frame(i)
        for m in movers:
            if view == "3d":
                pts, cols = np.stack(m.get_data_3d(), axis=1), [0, 1, 2]
            else:
                ax = m.axes
                cols = ["xyz".index(ax.get_xlabel()[0]), "xyz".index(ax.get_ylabel()[0])]
                pts = m.get_xydata()
                # fixed limits contain every node
                assert ax.get_xlim()[0] <= np.nanmin(pts[:, 0]) and np.nanmax(pts[:, 0]) <= ax.get_xlim()[1]
                assert ax.get_ylim()[0] <= np.nanmin(pts[:, 1]) and np.nanmax(pts[:, 1]) <= ax.get_ylim()[1]
            _assert_only_edges(_pieces(pts), pos[i], cols, edges)


def test_animation_floor_only_where_seen_edge_on(network, net_traj):
    anim = plot.rods._animation(net_traj, max_frames=2, model=network, view="xz+xy")
    ax_xz, ax_xy = anim.fig.axes
    _, z = _line_labelled(ax_xz, "floor").get_data()
    np.testing.assert_allclose(z, FLOOR_Z, rtol=0, atol=1e-15)
    assert ax_xz.get_ylim()[0] < FLOOR_Z
    assert not [ln for ln in ax_xy.lines if ln.get_label() == "floor"]


def test_tilted_floor_trace():
    n = np.array([1.0, 0.0, 1.0]) / np.sqrt(2.0)
    model = SimpleNamespace(contacts=(FloorContact(normal=n, offset=-0.02),))
    x0 = np.stack([np.linspace(0, 0.2, 6), np.zeros(6), np.full(6, 0.1)], axis=1)
    anim = plot.rods._animation(_fake_traj(x0), max_frames=2, model=model, view="xz")
    x, z = _line_labelled(anim.fig.axes[0], "floor").get_data()
    assert len(x) >= 2
    np.testing.assert_allclose(n[0] * x + n[2] * z, -0.02, rtol=0, atol=1e-12)
    for view in ("xy", "yz"):  # the plane is not seen edge-on there
        anim = plot.rods._animation(_fake_traj(x0), max_frames=2, model=model, view=view)
        assert not [ln for ln in anim.fig.axes[0].lines if ln.get_label() == "floor"]


def test_gif_of_network(network, net_traj, tmp_path):
    path = tmp_path / "n.gif"
    assert plot.animate_trajectory(net_traj, path, max_frames=5, model=network, view="xz+xy", dpi=50) == path
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == 5
        assert im.size == (525, 200)  # two panels side by side: 10.5 x 4 in at 50 dpi
        im.seek(0)
        first = np.asarray(im.convert("RGB")).copy()
        im.seek(4)
        last = np.asarray(im.convert("RGB"))
    assert np.any(first != last)  # the network moved
    with pytest.raises(ValueError, match="view"):
        plot.animate_trajectory(net_traj, tmp_path / "x.gif", model=network, view="side")
