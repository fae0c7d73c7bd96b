"""Figures and animations of rod trajectories and static shapes (matplotlib, Agg backend).

The functions build :class:`matplotlib.figure.Figure` objects on an Agg canvas directly, without
``pyplot``: nothing is shown, no global backend is switched and no figure is kept alive by
pyplot's figure manager, so they are safe on headless machines, in tests and in loops. In a
notebook, display the returned figure with ``IPython.display.display(fig)`` (after
``%matplotlib inline``) or open the saved file.

* :func:`plot_trajectory`: tip displacement vs time [mm] (a network: centroid displacement and
  lowest node height [mm]) and the initial/final centerline.
* :func:`plot_static`: a static centerline (x-z projection and 3-D view).
* :func:`animate_trajectory`: a GIF of the centerline in the x-z plane, the x-y plane, both side
  by side, or a 3-D view.
* :func:`node_chains`: how the nodes of a model connect, as polylines (node id sequences).

Positions are in metres; shapes are drawn in metres, displacements and heights in millimetres.

Displacement scale. A 1 m rod vibrating by 1 cm looks motionless at equal aspect, so the drawn
*shapes* (not the time-series panels, which stay in true units) are ``reference + factor *
(shape - reference)``, with the reference the initial frame of a trajectory or the
``reference_positions`` of a static shape. ``exaggeration="auto"`` (the default) picks the factor
by :func:`displacement_scale`'s rule: 1 when the largest displacement already reaches 10 % of the
body's extent, else the largest round factor (1, 2, 5, 10, 20, 50, ...) that keeps the largest
drawn displacement within 25 % of it (so it is drawn at 10-25 %); 1 for a model with a floor
contact (a magnified shape would sink into the floor). A number > 0 forces a factor (1: true
scale). Whenever the factor is not 1 it is written on the figure ("displacement x 20":
in the shape panels' titles of a figure, in the title of every GIF frame); the figures carry it
as ``fig.exaggeration``.

Connectivity. By default the rows of ``positions (.., N, 3)`` are one rod, drawn as one polyline
through nodes ``0 .. N-1``. A multi-rod network (:class:`~jaxrod.models.der.model.DERNetwork`)
numbers its nodes limb by limb with joint nodes shared, so that polyline would join unrelated
nodes; pass ``model=`` (each limb becomes its own polyline, ``model.topology.limb_nodes``) or
``edges=`` (an ``(E, 2)`` array of node ids, split into maximal chains by :func:`node_chains`).
All polylines of a shape are drawn as *one* line artist with NaN rows between them, so a frame of
a GIF costs the same whatever the number of limbs.

Floors. When ``model.contacts`` holds a :class:`~jaxrod.models.der.contact.FloorContact`, its
plane is drawn in every 2-D view that looks along the plane (the view's hidden axis lies in the
plane, e.g. a floor ``z = c`` in the x-z and y-z views, not in the x-y view) as a grey line with
a hatched band on the solid side, and as a translucent patch in 3-D views; the axis limits then
also cover the floor under the structure.
"""

from __future__ import annotations

import math
import os
import textwrap
from numbers import Real

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["animate_trajectory", "displacement_scale", "node_chains", "plot_modes", "plot_static", "plot_trajectory"]

# 2-D views: (horizontal axis, vertical axis) column indices of positions
_VIEW_AXES = {"xz": (0, 2), "xy": (0, 1), "yz": (1, 2)}
_VIEWS = ("auto", "xz", "xy", "yz", "xz+xy", "3d")


def _new_figure(figsize):
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path, dpi=110):
    if path is not None:
        d = os.path.dirname(os.fspath(path))
        if d:
            os.makedirs(d, exist_ok=True)
        fig.savefig(path, dpi=dpi)


def _limits(points, margin=0.05):
    """Axis limits ``(lo, hi)`` per column of ``points (..., k)`` with a relative margin (NaN rows
    ignored)."""
    p = np.asarray(points, dtype=float).reshape(-1, points.shape[-1])
    lo, hi = np.nanmin(p, axis=0), np.nanmax(p, axis=0)
    span = max(float(np.max(hi - lo)), 1e-12)
    return lo - margin * span, hi + margin * span


def _fit_aspect(lo, hi, ratio):
    """Grow the smaller of the two spans of ``lo, hi (2,)`` so that width / height = ``ratio``."""
    c, w, h = 0.5 * (lo + hi), hi[0] - lo[0], hi[1] - lo[1]
    w, h = max(w, h * ratio), max(h, w / ratio)
    return c - 0.5 * np.array([w, h]), c + 0.5 * np.array([w, h])


def _wrap(text, width_in, fontsize):
    """``text`` broken into lines that fit ``width_in`` inches at ``fontsize`` points (a scene's
    description is longer than a figure is wide; a suptitle is clipped, not wrapped)."""
    # 0.55 em: a generous mean glyph width of DejaVu Sans, so a wrapped line never overflows
    return textwrap.fill(text, max(20, int(width_in * 72 / (0.55 * fontsize))))


# ---- displacement scale ---------------------------------------------------------------------

#: automatic scale: factor 1 once the largest displacement reaches this fraction of the extent
_AUTO_VISIBLE = 0.1
#: ... else the largest round factor that keeps the drawn displacement within this fraction
_AUTO_TARGET = 0.25
#: displacements below this fraction of the extent are round-off, not motion: factor 1
_AUTO_NOISE = 1e-9


def _check_exaggeration(exaggeration):
    """``"auto"`` or the factor as a float; a clear error for anything else."""
    if isinstance(exaggeration, str) and exaggeration == "auto":
        return "auto"
    if (isinstance(exaggeration, Real) and not isinstance(exaggeration, bool) and math.isfinite(exaggeration)
            and exaggeration > 0):
        return float(exaggeration)
    raise ValueError(f"exaggeration must be 'auto' or a finite number > 0 (1: true scale), got {exaggeration!r}")


def _round_factor(ratio):
    """The largest of 1, 2, 5, 10, 20, 50, ... that is <= ``ratio`` (>= 1)."""
    # the 1e-12 keeps an exact power of ten (log10 rounding just below it) in its own decade
    k = math.floor(math.log10(ratio) + 1e-12)
    return next(m * 10.0**k for m in (5, 2, 1) if m * 10.0**k <= ratio * (1 + 1e-12))


def _scale_of(exaggeration, reference, shapes, floors=()):
    """The factor for drawing ``shapes (..., n, 3)`` against ``reference (n, 3)`` (NaN rows, the
    separators between chains, ignored); ``exaggeration`` already checked."""
    if exaggeration != "auto":
        return exaggeration
    if floors:
        # the floor is drawn where it is: a magnified shape would sink into it
        return 1.0
    ref = reference[np.all(np.isfinite(reference), axis=-1)]
    extent = float(np.max(np.ptp(ref, axis=0))) if len(ref) else 0.0
    d = np.linalg.norm(shapes - reference, axis=-1)
    disp = float(np.nanmax(d)) if np.any(np.isfinite(d)) else 0.0
    if not extent > 0 or disp <= _AUTO_NOISE * extent or disp >= _AUTO_VISIBLE * extent:
        return 1.0
    return _round_factor(_AUTO_TARGET * extent / disp)


def _scale_note(factor):
    """What the figures write about the scale ("" at true scale)."""
    return "" if factor == 1 else f"displacement x {factor:g}"


def _shape_title(text, factor):
    """A shape panel's title with the scale appended when it is not 1."""
    return f"{text}, {_scale_note(factor)}" if factor != 1 else text


def displacement_scale(shapes, reference, exaggeration="auto", *, model=None, edges=None):
    """The factor the plots multiply displacements by when they draw shapes.

    Drawn shapes are ``reference + factor * (shape - reference)``. With ``exaggeration="auto"``
    the rule is: with ``D`` the largest node displacement ``|shape - reference|`` over all shapes
    and ``L`` the body's extent (the largest side of the reference shape's bounding box), the
    factor is 1 when ``D >= 0.1 L`` (the motion shows at true scale) or ``D <= 1e-9 L`` (nothing
    moves but round-off), else the largest round factor 1, 2, 5, 10, 20, 50, ... with
    ``factor * D <= 0.25 L``; the drawn displacement is then between 10 % and 25 % of ``L``. A
    1 m cantilever vibrating by 1 cm gets 20. A model with a floor contact gets 1: the floor is
    drawn where it is, and a magnified shape would sink into it.

    Args:
        shapes: ``(..., N, 3)`` positions [m]: a trajectory's ``(T, N, 3)`` (all frames count) or
            one shape ``(N, 3)``.
        reference: ``(N, 3)`` positions [m] the displacements are measured from (a trajectory's
            first frame, a rest shape).
        exaggeration: ``"auto"`` (the rule above) or a finite number > 0, returned as given.
        model, edges: connectivity as in :func:`node_chains`: only the rows on the drawn lines
            count (not a network's padding rows).

    Returns:
        the factor (a float >= 1 for ``"auto"``).
    """
    exaggeration = _check_exaggeration(exaggeration)
    shapes = np.asarray(shapes, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if shapes.ndim < 2 or shapes.shape[-1] != 3 or reference.shape != shapes.shape[-2:]:
        raise ValueError(f"need shapes (..., N, 3) and reference (N, 3), got {shapes.shape} and {reference.shape}")
    gathered = _gather(node_chains(model, edges, reference.shape[0]), reference.shape[0])
    return _scale_of(exaggeration, _polyline(reference, gathered), _polyline(shapes, gathered), _floors(model))


# ---- connectivity ---------------------------------------------------------------------------


def _edge_chains(edges, n_nodes=None):
    """Split an ``(E, 2)`` edge list into maximal chains (paths whose interior nodes have degree 2).

    Edges are taken in their given order and each chain is grown forward from the edge's ``to``
    node and backward from its ``from`` node through degree-2 nodes, so an edge list numbered
    limb by limb (as in a network) yields chains in that order and direction. Every edge is used
    exactly once; a closed loop comes back to its first node.
    """
    e = np.asarray(edges)
    if e.ndim != 2 or e.shape[1] != 2 or (e.size and not np.issubdtype(e.dtype, np.integer)):
        raise ValueError(f"edges must be an (E, 2) integer array of node ids, got shape {e.shape} dtype {e.dtype}")
    e = e.astype(np.int64)
    if e.size and e.min() < 0:
        raise ValueError(f"edges: node ids must be >= 0, got {int(e.min())}")
    if n_nodes is not None and e.size and e.max() >= n_nodes:
        raise ValueError(f"edges: node id {int(e.max())} does not exist (positions have {n_nodes} nodes)")
    if np.any(e[:, 0] == e[:, 1]):
        k = int(np.flatnonzero(e[:, 0] == e[:, 1])[0])
        raise ValueError(f"edges[{k}] = {e[k].tolist()} joins a node to itself")
    m = int(e.max()) + 1 if e.size else 0
    deg = np.bincount(e.ravel(), minlength=m)
    incident = [[] for _ in range(m)]
    for k, (a, b) in enumerate(e):
        incident[a].append(k)
        incident[b].append(k)
    used = np.zeros(len(e), dtype=bool)

    def grow(node, prev_edge):
        # follow the one other edge at a degree-2 node until a branch point, an end or a used edge
        out = []
        while deg[node] == 2:
            k = incident[node][0] if incident[node][1] == prev_edge else incident[node][1]
            if used[k]:
                break
            used[k] = True
            node = int(e[k, 1] if e[k, 0] == node else e[k, 0])
            out.append(node)
            prev_edge = k
        return out

    chains = []
    for k in range(len(e)):
        if used[k]:
            continue
        used[k] = True
        a, b = int(e[k, 0]), int(e[k, 1])
        fwd = grow(b, k)
        back = grow(a, k)
        chains.append(np.asarray(back[::-1] + [a, b] + fwd, dtype=np.int64))
    return chains


def node_chains(model=None, edges=None, n_nodes=None):
    """How nodes connect, as polylines: a list of ``(n_k,)`` int arrays of node ids, or ``None``.

    Args:
        model: a model; a network (anything with ``topology.limb_nodes``, e.g.
            :class:`~jaxrod.models.der.model.DERNetwork`) gives one chain per limb, in limb
            order, with each limb's node sequence (joint nodes appear in every limb they belong
            to). Any other model (a single rod, a one-limb network) gives ``None``.
        edges: ``(E, 2)`` node ids ``(from, to)`` of each edge (e.g.
            ``model.topology.edge_nodes``); split into maximal chains (paths through nodes of
            degree 2, see :func:`_edge_chains`), so a chain never joins two nodes that are not an
            edge. Takes precedence over ``model``.
        n_nodes: number of position rows, to check ``edges`` against.

    Returns:
        ``None`` (the default single rod: one polyline through all rows in order) or the chains.
    """
    if edges is not None:
        return _edge_chains(edges, n_nodes)
    topo = getattr(model, "topology", None)
    limbs = getattr(topo, "limb_nodes", None)
    if limbs is None or getattr(topo, "chain", False):  # a chain (a DERModel, a one-limb network) is the single rod
        return None
    chains = [np.asarray(l, dtype=np.int64) for l in limbs]
    if n_nodes is not None and max(int(c.max()) for c in chains) >= n_nodes:
        raise ValueError(
            f"model has {max(int(c.max()) for c in chains) + 1} nodes but positions have {n_nodes} rows"
        )
    return chains


def _is_network(chains, n):
    """True unless the chains are the default single rod ``0 .. n-1``."""
    return chains is not None and not (len(chains) == 1 and np.array_equal(chains[0], np.arange(n)))


def _gather(chains, n):
    """``(index, mask)``: rows of positions to draw, with NaN separator rows where ``mask``.

    ``None`` chains mean the default rod: all ``n`` rows in order and no separator, so the drawn
    data is exactly ``positions`` (single-rod output unchanged)."""
    if chains is None:
        return np.arange(n), None
    idx, sep = [], []
    for i, c in enumerate(chains):
        if i:
            idx.append(np.zeros(1, np.int64))
            sep.append(np.ones(1, bool))
        idx.append(np.asarray(c, np.int64))
        sep.append(np.zeros(len(c), bool))
    return np.concatenate(idx), np.concatenate(sep)


def _polyline(p, gathered):
    """Rows of ``p (..., N, k)`` along the chains, NaN between chains: ``(..., n_drawn, k)``."""
    idx, sep = gathered
    if sep is None:
        return p
    out = p[..., idx, :].astype(float, copy=True)
    out[..., sep, :] = np.nan
    return out


# ---- floors ---------------------------------------------------------------------------------


def _floors(model):
    """``[(normal (3,), offset)]`` of the model's floor contacts (planes ``n . x = offset`` [m])."""
    contacts = getattr(model, "contacts", None)
    if contacts is None or len(contacts) == 0:
        return []
    from ..models.der.contact import FloorContact

    return [
        (np.asarray(c.normal, dtype=float), float(c.offset)) for c in contacts if isinstance(c, FloorContact)
    ]


def _floor_feet(points, floors):
    """Projections onto each floor plane of the points ``(..., 3)`` (NaN rows dropped): ``(K, 3)``."""
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    p = p[np.all(np.isfinite(p), axis=1)]
    return [p - (p @ n - d)[:, None] * n[None, :] for n, d in floors]


def _visible_floors(floors, axes, tol=1e-6):
    """Floors whose plane contains the hidden axis of a 2-D view with columns ``axes``: seen edge-on."""
    hidden = ({0, 1, 2} - set(axes)).pop()
    return [(n, d) for n, d in floors if abs(n[hidden]) < tol]


def _clip_halfplane(poly, a, b):
    """The part of the polygon ``poly (k, 2)`` with ``a . p <= b`` (one Sutherland-Hodgman pass)."""
    out = []
    for i in range(len(poly)):
        p, q = poly[i], poly[(i + 1) % len(poly)]
        fp, fq = a @ p - b, a @ q - b
        if fp <= 0:
            out.append(p)
        if fp * fq < 0:
            out.append(p + fp / (fp - fq) * (q - p))
    return np.array(out).reshape(-1, 2)


def _draw_floors_2d(ax, floors, axes, lo, hi):
    """Grey trace of each visible floor across the box ``lo, hi (2,)`` and a hatched band on the
    solid side (opposite the normal)."""
    box = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
    for n, d in _visible_floors(floors, axes):
        a = n[list(axes)]
        solid = _clip_halfplane(box, a, d)
        if len(solid) >= 3:
            ax.fill(solid[:, 0], solid[:, 1], facecolor="0.85", edgecolor="none", hatch="//", zorder=0)
        # the trace: the edges of the solid polygon that lie on the plane
        on = solid[np.abs(solid @ a - d) <= 1e-9 * max(1.0, float(np.max(np.abs(box))))]
        if len(on) >= 2:
            ax.plot(on[:, 0], on[:, 1], color="0.4", lw=1.5, zorder=1, label="floor")


def _plane_in_box(n, d, lo, hi):
    """Polygon ``(k, 3)`` where the plane ``n . x = d`` cuts the box ``lo, hi (3,)`` (or empty)."""
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pts = []
    for i in range(8):
        for j in range(i + 1, 8):
            if np.count_nonzero(corners[i] != corners[j]) != 1:
                continue  # not a box edge
            fi, fj = corners[i] @ n - d, corners[j] @ n - d
            if fi == 0:
                pts.append(corners[i])
            if fi * fj < 0:
                pts.append(corners[i] + fi / (fi - fj) * (corners[j] - corners[i]))
    if len(pts) < 3:
        return np.zeros((0, 3))
    pts = np.unique(np.round(np.array(pts), 12), axis=0)
    c = pts.mean(axis=0)
    u = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    ang = np.arctan2((pts - c) @ v, (pts - c) @ u)
    return pts[np.argsort(ang)]


def _draw_floors_3d(ax, floors, lo, hi):
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    for n, d in floors:
        poly = _plane_in_box(n, d, lo, hi)
        if len(poly) >= 3:
            ax.add_collection3d(Poly3DCollection([poly], facecolor="0.6", alpha=0.25, edgecolor="0.4"))


# ---- static panels --------------------------------------------------------------------------


def _shape_xz(ax, curves, labels, styles, title=None, floors=()):
    for c, lab, st in zip(curves, labels, styles):
        ax.plot(c[:, 0], c[:, 2], st, label=lab, lw=1.8, ms=3)
    if floors and _visible_floors(floors, (0, 2)):
        # fixed limits: the curves and the floor under them, equal aspect
        pts = [c[:, [0, 2]] for c in curves] + [f[:, [0, 2]] for f in _floor_feet(np.concatenate(curves), floors)]
        lo, hi = _limits(np.concatenate(pts), margin=0.08)
        # the equal aspect will widen the shorter of the two spans up to the longer one (and more
        # in a tall or wide panel): draw the floor over a square box 6x the longer span (the axes
        # clip it) so that its band still reaches the edges of a long, flat rod's view
        c, r = 0.5 * (lo + hi), 3.0 * float(np.max(hi - lo))
        _draw_floors_2d(ax, floors, (0, 2), c - r, c + r)
        # auto=None: the limits are set but stay adjustable, so the equal aspect can widen them
        ax.set_xlim(lo[0], hi[0], auto=None)
        ax.set_ylim(lo[1], hi[1], auto=None)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")


def _cube(points):
    """``(lo, hi)`` of the cube [m] around the finite points ``(..., 3)`` (equal 3-D aspect)."""
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    lo, hi = np.nanmin(p, axis=0), np.nanmax(p, axis=0)
    mid, half = 0.5 * (lo + hi), 0.5 * max(float(np.max(hi - lo)), 1e-12)
    return mid - half, mid + half


def _setup_3d(ax, lo, hi, title="3-D view"):
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_zlim(lo[2], hi[2])
    ax.set_box_aspect((1, 1, 1), zoom=0.75)
    ax.set_xlabel("x [m]", fontsize=8)
    ax.set_ylabel("y [m]", fontsize=8)
    ax.set_zlabel("z [m]", fontsize=8)
    ax.tick_params(labelsize=6)
    # a small panel: at most 4 ticks a side (3 intervals), or labels like 0.025 run into each other
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(3))
    ax.set_title(title, fontsize=10)


def _shape_3d(ax, curves, styles, floors=(), title="3-D view"):
    for c, st in zip(curves, styles):
        ax.plot(c[:, 0], c[:, 1], c[:, 2], st, lw=1.5)
    allp = np.concatenate(curves, axis=0)
    if floors:
        allp = np.concatenate([allp] + _floor_feet(allp, floors))
    lo, hi = _cube(allp)
    if floors:
        _draw_floors_3d(ax, floors, lo, hi)
    _setup_3d(ax, lo, hi, title)


def _check_traj(traj):
    times = np.asarray(traj.times, dtype=float)
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3 or pos.shape[0] != times.shape[0]:
        raise ValueError(f"expected positions (T, N, 3) matching times (T,), got {pos.shape} and {times.shape}")
    return times, pos


def _legend_outside(ax, fontsize):
    """The legend right of the axes: a time series (an oscillation) leaves no free corner."""
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.3, handlelength=1.5)


def _network_panels(fig, cell, times, pos, chains, floors):
    """Centroid displacement and lowest-node height [mm] vs time [s] of a network (two stacked
    axes in the gridspec ``cell``)."""
    used = np.unique(np.concatenate(chains))
    p = pos[:, used, :]
    # node average, not mass weighted: positions carry no masses and every limb is resolved
    # by its nodes, so this is the shape's geometric centre
    c = p.mean(axis=1)
    disp_mm = (c - c[0]) * 1e3
    sub = cell.subgridspec(2, 1)
    ax_c = fig.add_subplot(sub[0])
    for k, (name, col) in enumerate(zip("xyz", ("C0", "C1", "C2"))):
        ax_c.plot(times, disp_mm[:, k], color=col, lw=1.5, label=f"$u_{name}$")
    ax_c.set_ylabel("centroid\ndisplacement [mm]", fontsize=9)
    ax_c.set_title(f"network: node centroid from t = {times[0]:.3g} s, lowest node", fontsize=10)
    ax_c.grid(True, alpha=0.3)
    _legend_outside(ax_c, fontsize=7)
    ax_c.tick_params(labelbottom=False)
    ax_h = fig.add_subplot(sub[1], sharex=ax_c)
    if floors:
        # centreline distance of the lowest node from each floor plane (touching at the rod radius)
        for j, (n, d) in enumerate(floors):
            h_mm = (np.min(p @ n, axis=1) - d) * 1e3
            ax_h.plot(times, h_mm, color="k" if j == 0 else f"C{3 + j}", lw=1.5,
                      label="floor" if len(floors) == 1 else f"floor {j}")
        ax_h.axhline(0.0, color="0.4", lw=1.0, ls="--")
        ax_h.set_ylabel("lowest node\nabove floor [mm]", fontsize=9)
        if len(floors) > 1:
            _legend_outside(ax_h, fontsize=7)
    else:
        ax_h.plot(times, np.min(p[..., 2], axis=1) * 1e3, color="k", lw=1.5)
        ax_h.set_ylabel("lowest node\nz [mm]", fontsize=9)
    ax_h.set_xlabel("time [s]")
    ax_h.grid(True, alpha=0.3)
    return ax_c, ax_h


def plot_trajectory(traj, path=None, title=None, *, exaggeration="auto", dpi=110, model=None, edges=None):
    """Summary figure of a :class:`~jaxrod.Trajectory`.

    Panels: (1) tip displacement ``tip(t) - tip(0)`` components x, y, z [mm] vs time [s]; for a
    network (``model``/``edges`` giving more than one chain) the tip, the last global node, means
    nothing, so instead: the displacement of the node centroid (unweighted mean of the nodes)
    x, y, z [mm] and, below it, the height of the lowest node [mm] vs time [s]: its centreline
    distance from the floor plane when the model has a floor contact (contact starts at the rod
    radius), else its z coordinate; these are always in true units. (2) The initial (dashed) and
    final (solid) centerline projected on the x-z plane [m], equal aspect, with the floor trace,
    and, when another frame moved further from the initial shape than the final one (by 1.5x;
    a vibration whose last frame passes near the start), that frame too (dash-dot); (3) a small
    3-D view of the same shapes. Shapes are drawn with their displacement from the initial shape
    multiplied by the scale factor (see :func:`displacement_scale`), written in both panels'
    titles when it is not 1.

    Args:
        traj: a :class:`~jaxrod.Trajectory` (or any object with ``times (T,)`` and
            ``positions (T, N, 3)``).
        path: if given, the figure is also saved there (format from the extension).
        title: figure title (wrapped to the figure's width).
        exaggeration: ``"auto"`` (a round factor that makes a small motion visible, 1 for a large
            one: :func:`displacement_scale`) or a number > 0 (1: the true shapes).
        model: the simulated model, for its connectivity (a network's limbs, see
            :func:`node_chains`) and floor contacts; ``None``: one rod, no floor.
        edges: ``(E, 2)`` node ids of the edges, overrides the model's connectivity.

    Returns:
        the :class:`matplotlib.figure.Figure`; ``fig.exaggeration`` is the factor used (float).
    """
    exaggeration = _check_exaggeration(exaggeration)
    times, pos = _check_traj(traj)
    chains = node_chains(model, edges, pos.shape[1])
    floors = _floors(model)
    draw = _polyline(pos, _gather(chains, pos.shape[1]))
    factor = _scale_of(exaggeration, draw[0], draw, floors)

    fig = _new_figure((13, 4.2))
    fig.exaggeration = factor
    gs = fig.add_gridspec(1, 3, width_ratios=[1.25, 1.25, 0.8])
    if _is_network(chains, pos.shape[1]):
        _network_panels(fig, gs[0], times, pos, chains, floors)
    else:
        tip = pos[:, -1, :]
        disp_mm = (tip - tip[0]) * 1e3
        ax_t = fig.add_subplot(gs[0])
        for k, (name, col) in enumerate(zip("xyz", ("C0", "C1", "C2"))):
            ax_t.plot(times, disp_mm[:, k], color=col, lw=1.5, label=f"$u_{name}$")
        ax_t.set_xlabel("time [s]")
        ax_t.set_ylabel("tip displacement [mm]")
        ax_t.set_title(f"tip displacement from t = {times[0]:.3g} s", fontsize=10)
        ax_t.grid(True, alpha=0.3)
        _legend_outside(ax_t, fontsize=8)

    # the frame furthest from the start: a vibration's last frame may be near its first
    reach = np.nanmax(np.linalg.norm(draw - draw[:1], axis=-1), axis=-1) if draw.shape[1] else np.zeros(len(times))
    far = int(np.argmax(reach))
    frames = [0, len(times) - 1] + ([far] if 0 < far < len(times) - 1 and reach[far] > 1.5 * reach[-1] else [])
    # factor 1 draws the positions themselves (pos0 + (pos - pos0) differs by round-off)
    curves = [draw[i] if factor == 1 else draw[0] + factor * (draw[i] - draw[0]) for i in frames]
    labels = [f"t = {times[i]:.3g} s" for i in frames]
    styles = ["k--", "C3-", "C0-."][: len(frames)]
    if len(frames) == 3:
        labels[2] += " (furthest)"
    ax_s = fig.add_subplot(gs[1])
    _shape_xz(ax_s, curves, labels, styles, _shape_title("centerline, x-z projection", factor), floors)
    ax_3 = fig.add_subplot(gs[2], projection="3d")
    _shape_3d(ax_3, curves, styles, floors, title=_shape_title("3-D view", factor))
    fig.tendon_lines = []
    for k, tp in enumerate(_tendon_draw(traj, model, factor)):  # a tendon robot: its tendons on it
        for j, i in enumerate(frames[:2]):
            style = dict(color=f"C{(k + 4) % 10}", lw=1.0, ls=":" if j == 0 else "-")
            fig.tendon_lines.append(ax_s.plot(tp[i, :, 0], tp[i, :, 2], label=f"tendon {k}" if j else None,
                                              **style)[0])
            fig.tendon_lines.append(ax_3.plot(tp[i, :, 0], tp[i, :, 1], tp[i, :, 2], **style)[0])
    if fig.tendon_lines:
        ax_s.legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(_wrap(title, fig.get_figwidth(), 11), fontsize=11)
    _save(fig, path, dpi)
    return fig


def _tendon_draw(traj, model, factor):
    """The tendon paths of ``model`` over ``traj`` (:func:`~jaxrod.plot.tendons.tendon_paths`),
    with their displacement from the initial path multiplied by ``factor``."""
    if not getattr(model, "tendons", ()):
        return []
    from .tendons import tendon_paths

    return [tp if factor == 1 else tp[:1] + factor * (tp - tp[:1]) for tp in tendon_paths(traj, model)]


def plot_static(positions, path=None, title=None, *, reference_positions=None, labels=None, exaggeration="auto",
                dpi=110, model=None, edges=None):
    """Figure of a static centerline: x-z projection (equal aspect) and a 3-D view.

    Args:
        positions: ``(N, 3)`` node positions [m] (e.g. ``state.q[:, :3]``; rows not on any chain,
            such as a network's padding rows, are not drawn).
        path: optional file to save the figure to.
        title: figure title (wrapped to the figure's width).
        reference_positions: optional ``(N', 3)`` shape drawn dashed (e.g. the rest shape).
        labels: ``(label, reference_label)`` legend entries.
        exaggeration: the shape is drawn as ``reference + factor * (positions - reference)``:
            ``"auto"`` picks the factor (see :func:`displacement_scale`; 1 without a reference of
            the same shape), a number > 0 forces it (anything but 1 needs such a reference). The
            factor is written in both panels' titles when it is not 1.
        model: the model, for its connectivity (see :func:`node_chains`) and floor contacts.
        edges: ``(E, 2)`` node ids of the edges, overrides the model's connectivity.

    Returns:
        the :class:`matplotlib.figure.Figure`; ``fig.exaggeration`` is the factor used (float).
    """
    exaggeration = _check_exaggeration(exaggeration)
    p = np.asarray(positions, dtype=float)
    if p.ndim != 2 or p.shape[1] < 3:
        raise ValueError(f"positions must be (N, 3), got {p.shape}")
    p = p[:, :3]
    chains = node_chains(model, edges, p.shape[0])
    floors = _floors(model)
    labels = labels or ("equilibrium", "rest")
    drawn = _polyline(p, _gather(chains, p.shape[0]))
    r = None if reference_positions is None else np.asarray(reference_positions, dtype=float)[:, :3]
    if (r is None or r.shape != p.shape) and exaggeration not in ("auto", 1.0):
        have = "none" if r is None else f"shape {r.shape}"
        raise ValueError(f"exaggeration={exaggeration:g} needs reference_positions of the same shape as positions "
                         f"{p.shape} to measure displacements from; got {have}")
    if r is not None:
        r = _polyline(r, _gather(chains, r.shape[0]))
    factor = _scale_of(exaggeration, r, drawn, floors) if r is not None and r.shape == drawn.shape else 1.0
    if factor != 1:
        drawn = r + factor * (drawn - r)
    curves, labs, styles = [drawn], [labels[0]], ["C3-o"]
    if r is not None:
        curves, labs, styles = [r, drawn], [labels[1], labels[0]], ["k--", "C3-o"]
    fig = _new_figure((10, 4.2))
    fig.exaggeration = factor
    gs = fig.add_gridspec(1, 2, width_ratios=[1.5, 1.0])
    _shape_xz(fig.add_subplot(gs[0]), curves, labs, styles, _shape_title("centerline, x-z projection", factor), floors)
    _shape_3d(fig.add_subplot(gs[1], projection="3d"), curves, [s.replace("-o", "-") for s in styles], floors,
              title=_shape_title("3-D view", factor))
    if title:
        fig.suptitle(_wrap(title, fig.get_figwidth(), 11), fontsize=11)
    _save(fig, path, dpi)
    return fig


# ---- animation ------------------------------------------------------------------------------


def _auto_view(pos, tol=1e-2):
    """``"xz"`` for a shape that stays in an x-z plane (y spread <= ``tol`` of the overall span),
    else ``"xz+xy"``."""
    lo, hi = np.nanmin(pos.reshape(-1, 3), axis=0), np.nanmax(pos.reshape(-1, 3), axis=0)
    span = max(float(np.max(hi - lo)), 1e-12)
    return "xz" if hi[1] - lo[1] <= tol * span else "xz+xy"


class _Animation:
    """An animation figure: ``fig``, the saved frame indices ``idx (F,)``, the moving artists
    (``animated``) and ``set_frame(i)``, which puts frame ``i`` (an index into ``traj.times``)
    into them. Kept apart from the GIF writing so that tests can read the drawn line data."""

    def __init__(self, fig, idx, movers, ttl, times, prefix, exaggeration):
        self.fig, self.idx, self.movers, self.ttl = fig, idx, movers, ttl
        self.times, self.prefix, self.exaggeration = times, prefix, exaggeration
        self.animated = [a for a, _ in movers] + [ttl]

    def set_frame(self, i):
        for artist, update in self.movers:
            update(artist, i)
        self.ttl.set_text(self.title(i))

    def freeze(self, dpi):
        """Lay the figure out at ``dpi`` for the longest title (the last frame's), fix that layout
        and return the rendered background without the moving artists (for blitting)."""
        self.ttl.set_text(self.title(len(self.times) - 1))
        self.fig.set_dpi(dpi)
        for a in self.animated:
            a.set_animated(True)
        # twice: the first layout places the labels around each axes' cell, then the equal aspect
        # shrinks the box inside it; the second pass lays out around the shrunk boxes (one pass
        # left the x labels of two side-by-side panels partly below the figure's edge)
        self.fig.canvas.draw()
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")
        return self.fig.canvas.copy_from_bbox(self.fig.bbox)

    def title(self, i):
        """Frame ``i``'s title: the time and, on a second line, the displacement scale."""
        note = _scale_note(self.exaggeration)
        return f"{self.prefix}t = {self.times[i]:.3f} s" + (f"\nshape: {note}" if note else "")


def _animation(traj, max_frames=150, *, title=None, exaggeration="auto", model=None, edges=None, view="auto"):
    """Build the figure of :func:`animate_trajectory` (not laid out yet): an :class:`_Animation`."""
    if view not in _VIEWS:
        raise ValueError(f"view must be one of {', '.join(map(repr, _VIEWS))}; got {view!r}")
    times = np.asarray(traj.times, dtype=float)
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3 or pos.shape[0] != times.shape[0]:
        raise ValueError(f"expected positions (T, N, 3) matching times (T,), got {pos.shape} and {times.shape}")
    idx = np.unique(np.round(np.linspace(0, len(times) - 1, min(len(times), int(max_frames)))).astype(int))
    chains = node_chains(model, edges, pos.shape[1])
    network = _is_network(chains, pos.shape[1])
    floors = _floors(model)
    # the drawn rows, NaN between chains (for a single rod exactly pos): computed once, not per frame
    draw = _polyline(pos, _gather(chains, pos.shape[1]))
    factor = _scale_of(_check_exaggeration(exaggeration), draw[0], draw, floors)
    if factor != 1:
        pos = pos[:1] + factor * (pos - pos[:1])
        draw = _polyline(pos, _gather(chains, pos.shape[1]))
    if view == "auto":
        view = _auto_view(draw)
    panels = ["3d"] if view == "3d" else view.split("+")
    # limits cover the floor under the structure too, so the floor shows even before contact
    feet = np.concatenate(_floor_feet(draw, floors)) if floors else np.zeros((0, 3))
    allp = np.concatenate([draw.reshape(-1, 3), feet])
    tendons = [] if network else _tendon_draw(traj, model, factor)

    fig = _new_figure((6, 4) if len(panels) == 1 else (10.5, 4))
    movers = []  # (artist, update(i)) pairs
    ttl_ax = None
    for k, pv in enumerate(panels):
        if pv == "3d":
            ax = fig.add_subplot(1, 1, 1, projection="3d")
            lo, hi = _cube(allp)
            if floors:
                _draw_floors_3d(ax, floors, lo, hi)
            ax.plot(draw[0, :, 0], draw[0, :, 1], draw[0, :, 2], "k--", lw=1, alpha=0.5, label="initial")
            (line,) = ax.plot([], [], [], "C3-o", lw=2, ms=2.5, label="network" if network else "centerline")
            movers.append((line, lambda a, i: a.set_data_3d(draw[i, :, 0], draw[i, :, 1], draw[i, :, 2])))
            _setup_3d(ax, lo, hi, title="")
            for j, tp in enumerate(tendons):
                (tl,) = ax.plot([], [], [], "-", color=f"C{(j + 4) % 10}", lw=1, label=f"tendon {j}")
                movers.append((tl, lambda a, i, tp=tp: a.set_data_3d(tp[i, :, 0], tp[i, :, 1], tp[i, :, 2])))
            if not network:
                (tip,) = ax.plot([], [], [], "C0o", ms=5)
                movers.append((tip, lambda a, i: a.set_data_3d(pos[i, -1:, 0], pos[i, -1:, 1], pos[i, -1:, 2])))
        else:
            a0, a1 = _VIEW_AXES[pv]
            ax = fig.add_subplot(1, len(panels), k + 1)
            lo, hi = _fit_aspect(*_limits(allp[:, [a0, a1]]), 1.45)
            if floors:
                _draw_floors_2d(ax, floors, (a0, a1), lo, hi)
            ax.plot(draw[0, :, a0], draw[0, :, a1], "k--", lw=1, alpha=0.5, label="initial")
            (line,) = ax.plot([], [], "C3-o", lw=2, ms=2.5, label="network" if network else "centerline")
            movers.append((line, lambda a, i, a0=a0, a1=a1: a.set_data(draw[i, :, a0], draw[i, :, a1])))
            for j, tp in enumerate(tendons):
                (tl,) = ax.plot([], [], "-", color=f"C{(j + 4) % 10}", lw=1, label=f"tendon {j}")
                movers.append((tl, lambda a, i, tp=tp, a0=a0, a1=a1: a.set_data(tp[i, :, a0], tp[i, :, a1])))
            if not network:  # a network's last global node is no tip
                (tip,) = ax.plot([], [], "C0o", ms=5)
                movers.append((tip, lambda a, i, a0=a0, a1=a1: a.set_data(pos[i, -1:, a0], pos[i, -1:, a1])))
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
            ax.set_aspect("equal", adjustable="box")
            names = "xyz"
            ax.set_xlabel(f"{names[a0]} [m]")
            ax.set_ylabel(f"{names[a1]} [m]")
            ax.grid(True, alpha=0.3)
        if k == 0:
            # under the panels, not in a corner: the moving shape may pass through any corner
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=8,
                       frameon=False)
            ttl_ax = ax
    prefix = f"{_wrap(title, fig.get_figwidth(), 12)}: " if title else ""
    # one title: over the figure with two panels, over the axes with one
    ttl = fig.suptitle("") if len(panels) > 1 else ttl_ax.set_title("")

    return _Animation(fig, idx, movers, ttl, times, prefix, factor)


def animate_trajectory(traj, path, fps=20, max_frames=150, *, title=None, exaggeration="auto", dpi=80,
                       model=None, edges=None, view="auto"):
    """Write a GIF of the centerline moving, in one or two projections or a 3-D view.

    Frames are subsampled evenly to at most ``max_frames`` (the first and last saved frames are
    always included); axis limits are fixed from the whole trajectory (and the floor under it)
    and the aspect is equal. The title shows the simulated time. The figure is laid out once and
    only the line data changes per frame (150 frames of a 91-node network: a few seconds).

    Args:
        traj: a :class:`~jaxrod.Trajectory` (``times (T,)``, ``positions (T, N, 3)``).
        path: output ``.gif`` file.
        fps: frames per second of the GIF.
        max_frames: largest number of frames written.
        title: optional prefix of the per-frame title.
        exaggeration: displacements from the initial shape are drawn multiplied by a factor:
            ``"auto"`` picks it from the whole trajectory (see :func:`displacement_scale`; the
            same factor as :func:`plot_trajectory`'s), a number > 0 forces it (1: the true
            shapes). When it is not 1 every frame's title says so ("shape: displacement x 20").
        model: the simulated model, for its connectivity (a network's limbs, see
            :func:`node_chains`) and floor contacts (drawn where seen edge-on, and in 3-D).
        edges: ``(E, 2)`` node ids of the edges, overrides the model's connectivity.
        view: ``"xz"``, ``"xy"``, ``"yz"`` (a projection), ``"xz+xy"`` (both side by side),
            ``"3d"`` (a fixed 3-D view), or ``"auto"``: ``"xz"`` when the whole trajectory stays
            within 1 % of its size of an x-z plane (planar rods: the GIF is as before), else
            ``"xz+xy"`` (motion along y, e.g. spider legs or fingers around a circle, shows).

    Returns:
        ``path``.
    """
    from PIL import Image

    if int(max_frames) < 1 or not fps > 0:
        raise ValueError(f"need max_frames >= 1 and fps > 0, got {max_frames}, {fps}")
    anim = _animation(traj, max_frames, title=title, exaggeration=exaggeration, model=model, edges=edges, view=view)
    # Lay the figure out once and freeze it, render everything that does not move once, then per
    # frame restore that background and draw only the moving artists (blitting): redrawing axes,
    # ticks and labels is what a full savefig per frame pays for (~0.1 s a frame).
    fig, canvas, animated = anim.fig, anim.fig.canvas, anim.animated
    background = anim.freeze(dpi)
    frames = []
    for i in anim.idx:
        canvas.restore_region(background)
        anim.set_frame(i)
        for a in animated:
            fig.draw_artist(a)
        # RGB (not RGBA) quantises better to the GIF palette, as matplotlib's PillowWriter does
        frames.append(
            Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
        )
    d = os.path.dirname(os.fspath(path))
    if d:
        os.makedirs(d, exist_ok=True)
    # One adaptive palette from the first and last frames (between them they show every colour
    # drawn), mapped onto each frame without dithering: Pillow's default quantises every frame
    # separately (median cut, ~30 ms a frame, more than the drawing itself).
    sample = Image.new("RGB", (frames[0].width, 2 * frames[0].height))
    sample.paste(frames[0], (0, 0))
    sample.paste(frames[-1], (0, frames[0].height))
    palette = sample.quantize(colors=255, method=Image.Quantize.MEDIANCUT)
    frames = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    frames[0].save(os.fspath(path), save_all=True, append_images=frames[1:], duration=int(1000 / fps), loop=0)
    return path


# ---- mode shapes ----------------------------------------------------------------------------


def plot_modes(result, path=None, *, modes=6, amplitude=0.15, title=None, dpi=110, model=None, edges=None):
    """Mode shapes of a :class:`~jaxrod.analysis.ModalResult` (:func:`jaxrod.modal`): one 3-D
    panel per mode with the linearisation shape (dashed) and the shape displaced by plus and minus
    the mode (solid and faint), frequency in the panel title.

    Args:
        result: the :class:`~jaxrod.analysis.ModalResult`.
        path: optional file to save the figure to.
        modes: number of lowest modes drawn (an integer >= 1; at most ``result.n_modes``), or a
            sequence of mode indices.
        amplitude: drawn amplitude of each mode's largest node displacement, as a fraction of the
            shape's largest extent (the modes are linear: only their shape is meaningful). A mode
            that moves no node (torsion of a DER rod) is drawn undeformed, labelled as such.
        title: figure title.
        model, edges: connectivity of the nodes (see :func:`node_chains`), for networks.

    Returns:
        the :class:`matplotlib.figure.Figure`.
    """
    n_avail = int(np.asarray(result.omega).shape[0])
    if isinstance(modes, (int, np.integer)) and not isinstance(modes, bool):
        if modes < 1:
            raise ValueError(f"modes must be >= 1 (or a sequence of mode indices), got {modes}")
        idx = list(range(min(int(modes), n_avail)))
    else:
        idx = [int(i) for i in modes]
        bad = [i for i in idx if not 0 <= i < n_avail]
        if not idx or bad:
            raise ValueError(f"modes: indices must be in [0, {n_avail - 1}] (the result's modes), got {list(modes)}")
    if not (np.isfinite(amplitude) and amplitude > 0):
        raise ValueError(f"amplitude must be a finite fraction > 0 of the shape's extent, got {amplitude}")
    x0 = np.asarray(result.positions, dtype=float)
    disp = np.asarray(result.displacements, dtype=float)
    freq = np.asarray(result.omega, dtype=float) / (2 * np.pi)
    gathered = _gather(node_chains(model, edges, x0.shape[0]), x0.shape[0])
    extent = max(float(np.ptp(x0, axis=0).max()), 1e-12)
    ncol = min(3, len(idx))
    nrow = -(-len(idx) // ncol)
    fig = _new_figure((3.6 * ncol, 3.4 * nrow))
    for k, i in enumerate(idx):
        ax = fig.add_subplot(nrow, ncol, k + 1, projection="3d")
        d = disp[i]
        dmax = float(np.linalg.norm(d, axis=1).max())
        moves = dmax > 1e-9 * extent
        s = amplitude * extent / dmax if moves else 0.0
        curves = [_polyline(x0, gathered)]
        if moves:
            curves += [_polyline(x0 + s * d, gathered), _polyline(x0 - s * d, gathered)]
        for c, st, a in zip(curves, ("k--", "C3-", "C3-"), (1.0, 1.0, 0.3)):
            ax.plot(c[:, 0], c[:, 1], c[:, 2], st, lw=1.5, alpha=a)
        lo, hi = _cube(np.concatenate(curves))
        note = "" if moves else "\n(moves no node: twist)"
        _setup_3d(ax, lo, hi, f"mode {i + 1}: {freq[i]:.4g} Hz{note}")
    if title:
        fig.suptitle(title, fontsize=11)
    _save(fig, path, dpi)
    return fig

