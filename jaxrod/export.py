"""Trajectories out to ParaView (and anything else that reads VTK or XDMF): a ``.pvd`` time series
of ``.vtu`` files (:func:`export_paraview`) or an XDMF time series (:func:`export_xdmf`), written
with ``meshio`` (the ``export`` extra: ``pip install "jaxrod[export]"``); :func:`export_trajectory`
picks one by the file's suffix.

What each frame holds:

- **rods** as polylines (``line`` cells between consecutive nodes of each rod or network limb),
  point data ``rod`` (which rod or limb), ``node`` (its row in ``Trajectory.positions``) and, when
  known, ``radius`` [m] (ParaView's *Tube* filter with *Vary Radius* draws the rod's thickness);
- **rigid bodies** as ``vertex`` cells at their centres of mass, point data ``body`` (index);
- **frames** as point data ``d1``, ``d2``, ``d3`` (the rows of ``Trajectory.frames``: material
  directors of a rod, body axes of a body), for ParaView's *Glyph* filter. Frames that live on
  DER edges are written at each edge's first node (a rod's last node repeats its last edge's);
  network limbs get frames only when the model gives one per position row.

- **strains** of the rods, computed from their geometry and frames (:func:`export_xdmf` lists
  them): ``stretch`` per edge, ``curvature`` [1/m], a PCS rod's strains ``pcs_strain``.

Points carry ``-1`` in ``rod``/``body``/``node`` where the label does not apply. Frames computed
after a failed step (``Trajectory.valid`` False: NaN) are skipped, and the ``.pvd`` lists only the
frames written.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

__all__ = ["export_paraview", "export_trajectory", "export_xdmf"]


def _meshio():
    try:
        import meshio
    except ImportError as e:  # an optional extra: say how to get it
        raise ImportError('export_paraview needs meshio: pip install "jaxrod[export]" (or pip install meshio)') from e
    return meshio


def _rod_parts(model, n_rows):
    """``([(node_rows, radius or None, frame_rows or None), ...], body_rows)``: one entry per rod
    or limb; ``frame_rows``: how many rows of ``Trajectory.frames`` the rod holds (``N - 1`` on DER
    edges, ``N`` at nodes), ``None`` where unknown (network limbs)."""
    from .models.der import DERModel
    from .models.pcs import PCSModel
    from .plot.rods import node_chains
    from .system import HybridSystem, MultibodySystem

    if isinstance(model, HybridSystem):  # rods first, then bodies (HybridSystem.observe)
        off = np.asarray(model._offsets())
        rods = []
        for i, m in enumerate(model.rods):
            n = int(off[i + 1] - off[i])
            # DER rods save frames on their edges, PCS rods their cross-section axes at the first
            # N - 1 sample points (HybridSystem.observe)
            rods.append((np.arange(off[i], off[i + 1]), _radius(m), n - 1 if isinstance(m, (DERModel, PCSModel)) else n))
        return rods, np.arange(off[-1], n_rows)
    if isinstance(model, MultibodySystem):
        return [], np.arange(n_rows)
    chains = node_chains(model=model, n_nodes=n_rows)
    radius = _radius(model)
    if chains is None:
        return [(np.arange(n_rows), radius, None)], np.arange(0)
    return [(np.asarray(c), radius, None) for c in chains], np.arange(0)


def _radius(model):
    rod = getattr(model, "rod", None)
    r = getattr(rod, "radius", None)
    if r is None:
        return None
    r = np.asarray(r, dtype=float)
    return float(r) if r.ndim == 0 else r


def _frame_index(n_frame_rows, n_rows, rods, bodies):
    """For each point (rods' nodes in order, then bodies) the row of ``Trajectory.frames`` to
    write there, or ``None`` when the frames cannot be placed."""
    if len(rods) == 1 and len(bodies) == 0 and rods[0][2] is None:  # a single rod: nodes or edges
        n = len(rods[0][0])
        if n_frame_rows == n:
            return np.arange(n)
        if n_frame_rows == n - 1:
            return np.minimum(np.arange(n), n - 2)
        return None
    if any(fr is None for _, _, fr in rods):
        # network limbs: only frames given per position row can be placed
        return np.concatenate([r for r, _, _ in rods] + [bodies]) if n_frame_rows == n_rows else None
    idx, start = [], 0
    for r, _, fr in rods:
        n = len(r)
        idx.append(start + (np.arange(n) if fr == n else np.minimum(np.arange(n), n - 2)))
        start += fr
    idx.append(start + np.arange(len(bodies)))
    return np.concatenate(idx) if start + len(bodies) == n_frame_rows else None


def _rotation_log(R):
    """``(..., 3)`` rotation vectors [rad] of rotation matrices ``R`` ``(..., 3, 3)`` (the
    matrix logarithm; accurate away from half turns)."""
    w = 0.5 * np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    s = np.linalg.norm(w, axis=-1)
    c = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)
    theta = np.arctan2(s, c)
    scale = np.where(s > 1e-12, theta / np.where(s > 1e-12, s, 1.0), 1.0)
    return w * scale[..., None]


def _rod_fields(pos, frames, rows, frame_rows, rest):
    """Strains of one rod at every saved time, from its geometry: ``stretch`` ``(T, N - 1)`` per
    edge (``|e| / rest - 1``), and ``curvature`` ``(T, N - 1, 3)`` [1/m] per edge (nodal frames
    of a shooting model: the rotation from node ``j`` to ``j + 1`` in node ``j``'s frame over the
    rest edge length, components along ``d1, d2, d3``: bending, bending, twist) or ``(T, N, 3)``
    per node (DER edge frames: from edge ``j - 1`` to ``j`` over the rest Voronoi length; zero at
    the two end nodes). ``frames`` ``(T, n_frames, 3, 3)`` or ``None``; ``frame_rows``: this rod's
    rows of it (or ``None``)."""
    p = pos[:, rows]
    e = np.linalg.norm(np.diff(p, axis=1), axis=-1)
    out = {"stretch": (e / rest - 1.0, "cell")}
    if frames is None or frame_rows is None:
        return out
    F = frames[:, frame_rows]
    rel = _rotation_log(F[:, :-1] @ np.swapaxes(F[:, 1:], -1, -2))  # R_j^T R_{j+1} = F_j F_{j+1}^T
    if F.shape[1] == len(rows):  # nodal frames: one value per edge
        out["curvature"] = (rel / rest[:, None], "cell")
    elif F.shape[1] == len(rows) - 1:  # edge frames: one value per interior node
        k = np.zeros(p.shape[:2] + (3,))
        k[:, 1:-1] = rel / (0.5 * (rest[:-1] + rest[1:]))[:, None]
        out["curvature"] = (k, "point")
    return out


def _rest_lengths(model, rows, pos0):
    """Rest edge lengths [m] of a rod (``model.rod.rest_lengths`` of a DER rod; otherwise the
    edges of the first saved frame)."""
    rod = getattr(model, "rod", None)
    rest = getattr(rod, "rest_lengths", None) if rod is not None and hasattr(rod, "rest_positions") else None
    if rest is not None and np.shape(rest) == (len(rows) - 1,):
        return np.asarray(rest, float)
    return np.linalg.norm(np.diff(pos0[rows], axis=0), axis=-1)


def _pcs_strains(model, q):
    """``(T, n_segments, 6)`` PCS strains ``xi`` of saved coordinates ``q`` ``(T, n m)``, or
    ``None`` when ``model`` is not a PCS model."""
    from .models.pcs import PCSModel

    if not isinstance(model, PCSModel):
        return None
    import jax

    return np.asarray(jax.vmap(model.strains)(np.asarray(q)))


def _prepare(traj, model, every):
    """Everything both writers need: ``(times, kept frame indices, points per frame (T, P, 3),
    blocks, static point data, per-frame point data {name: (T, P, ...)}, per-frame cell data
    {name: (T, n_cells_total, ...)})``."""
    if not (isinstance(every, (int, np.integer)) and every >= 1):
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3:
        raise ValueError(f"traj.positions must be (T, N, 3) (an unbatched trajectory), got shape {pos.shape}")
    times = np.asarray(traj.times, dtype=float)
    valid = np.ones(len(times), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    keep = [k for k in range(0, len(times), every) if valid[k]]
    if not keep:
        raise ValueError("no valid frame to export: every saved frame follows a failed step")
    n_rows = pos.shape[1]
    rods, bodies = _rod_parts(model, n_rows)
    frames = None if traj.frames is None else np.asarray(traj.frames, dtype=float)
    if frames is not None and not (frames.ndim == 4 and frames.shape[-2:] == (3, 3)):
        frames = None
    fidx = None if frames is None else _frame_index(frames.shape[1], n_rows, rods, bodies)

    # rows -> points: rods (a network's joint nodes once per limb they belong to), then bodies
    rows = np.concatenate([r for r, _, _ in rods] + [bodies]).astype(np.int64)
    rod_id = np.concatenate([np.full(len(r), i) for i, (r, _, _) in enumerate(rods)] + [np.full(len(bodies), -1)])
    body_id = np.concatenate([np.full(len(rows) - len(bodies), -1), np.arange(len(bodies))])
    node = np.where(rod_id >= 0, rows, -1)
    cells, start = [], 0
    for r, _, _ in rods:
        k = np.arange(start, start + len(r))
        cells.append(np.stack([k[:-1], k[1:]], axis=1))
        start += len(r)
    blocks = []
    if cells:
        blocks.append(("line", np.concatenate(cells).astype(np.int64)))
    if len(bodies):
        blocks.append(("vertex", np.arange(start, start + len(bodies), dtype=np.int64)[:, None]))
    if not blocks:
        raise ValueError("nothing to export: the trajectory has no rod nodes and no bodies")
    static = {"rod": rod_id.astype(np.int32), "body": body_id.astype(np.int32), "node": node.astype(np.int32)}
    if any(rad is not None for _, rad, _ in rods):
        radius = np.concatenate(
            [np.broadcast_to(np.nan if rad is None else rad, (len(r),)) for r, rad, _ in rods]
            + [np.full(len(bodies), np.nan)]
        )
        static["radius"] = radius.astype(float)
    keep = np.asarray(keep)
    point_series, cell_series = {}, {}
    if fidx is not None:
        f = frames[keep][:, fidx]
        point_series.update(d1=f[..., 0, :], d2=f[..., 1, :], d3=f[..., 2, :])
    # strains: per rod from its geometry (and frames), the PCS strains from the coordinates
    single = len(rods) == 1 and len(bodies) == 0
    frame_start, per_rod = 0, []
    for r, _, fr in rods:
        n_fr = fr if fr is not None else (frames.shape[1] if single and frames is not None else None)
        frows = None
        if frames is not None and n_fr in (len(r), len(r) - 1) and frame_start + n_fr <= frames.shape[1]:
            frows = np.arange(frame_start, frame_start + n_fr)
        if fr is not None:
            frame_start += fr
        rod_model = model.rods[len(per_rod)] if _is_hybrid(model) else model
        rest = _rest_lengths(rod_model, r, pos[0])
        per_rod.append(_rod_fields(pos[keep], None if frames is None else frames[keep], r, frows, rest))
    n_points = len(rows)
    for name in ("stretch", "curvature"):
        if not any(name in d for d in per_rod):
            continue
        where = {d[name][1] for d in per_rod if name in d}
        for loc in sorted(where):
            width = () if name == "stretch" else (3,)
            if loc == "cell":
                arr = np.full((len(keep), start - len(rods)) + width, np.nan)
                c0 = 0
                for (r, _, _), d in zip(rods, per_rod):
                    if name in d and d[name][1] == "cell":
                        arr[:, c0 : c0 + len(r) - 1] = d[name][0]
                    c0 += len(r) - 1
                cell_series[name] = arr
            else:
                arr = np.full((len(keep), n_points) + width, np.nan)
                p0 = 0
                for (r, _, _), d in zip(rods, per_rod):
                    if name in d and d[name][1] == "point":
                        arr[:, p0 : p0 + len(r)] = d[name][0]
                    p0 += len(r)
                point_series[name] = arr
    xi = _pcs_strains(model, np.asarray(traj.q)[keep]) if single else None
    if xi is not None:
        n_cells = start - 1
        seg = np.minimum(np.arange(n_cells) // int(model.points_per_segment), xi.shape[1] - 1)
        cell_series["pcs_strain"] = xi[:, seg]
    return (times, keep, pos[keep][:, rows], blocks, static, point_series, cell_series)


def _is_hybrid(model):
    from .system import HybridSystem

    return isinstance(model, HybridSystem)


def _cell_blocks(blocks, values):
    """meshio's per-block cell data of ``values`` ``(n_line_cells, ...)``: the line block gets
    them, a vertex block (bodies) NaN."""
    out = []
    for kind, cells in blocks:
        if kind == "line":
            out.append(values)
        else:
            out.append(np.full((len(cells),) + values.shape[1:], np.nan))
    return out


def _check_path(path, suffix, what):
    """``Path(path)``; ``ValueError`` unless it ends in ``suffix``, ``FileNotFoundError`` when
    its folder does not exist."""
    path = Path(path)
    if path.suffix != suffix:
        raise ValueError(f"path must end in {suffix} ({what}), got {str(path)!r}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"path: folder {str(path.parent)!r} does not exist")
    return path


def export_paraview(traj, path, model=None, *, every: int = 1) -> Path:
    """Write ``traj`` as a ParaView time series: ``path`` (``.pvd``) indexes one ``.vtu`` per saved
    frame, written to the folder ``<stem>_frames`` beside it.

    Args:
        traj: a :class:`~jaxrod.integrate.Trajectory` (unbatched).
        path: the ``.pvd`` file to write [str or Path]; its folder must exist.
        model: the simulated model, for the geometry the positions alone do not tell: a network's
            limbs, a hybrid system's rods and bodies, a multibody system's bodies (without it the
            positions are one rod, nodes in row order), the rod radius and rest lengths.
        every: write every ``every``-th saved frame (1: all).

    Returns:
        the ``.pvd`` path. Times in the ``.pvd`` are the trajectory's [s].

    Besides the labels, radius and frames (module docstring) each frame holds the rods' strains
    (:func:`export_xdmf` lists them).
    """
    meshio = _meshio()
    path = _check_path(path, ".pvd", "a ParaView time series")
    times, keep, points, blocks, static, point_series, cell_series = _prepare(traj, model, every)
    folder = path.with_name(f"{path.stem}_frames")
    folder.mkdir(exist_ok=True)
    collection = ET.Element("Collection")
    for j, k in enumerate(keep):
        data = dict(static)
        data.update({name: v[j] for name, v in point_series.items()})
        cell_data = {name: _cell_blocks(blocks, v[j]) for name, v in cell_series.items()}
        name = folder / f"{path.stem}_{k:06d}.vtu"
        meshio.write(str(name), meshio.Mesh(points[j], blocks, point_data=data, cell_data=cell_data))
        ET.SubElement(collection, "DataSet", timestep=repr(float(times[k])), part="0",
                      file=os.path.relpath(name, path.parent))
    root = ET.Element("VTKFile", type="Collection", version="0.1")
    root.append(collection)
    ET.indent(root)
    path.write_text(ET.tostring(root, encoding="unicode") + "\n")
    return path


def export_xdmf(traj, path, model=None, *, every: int = 1, data_format: str | None = None) -> Path:
    """Write ``traj`` as an XDMF time series (meshio's ``TimeSeriesWriter``; ParaView, VisIt and
    Blender importers read it): one mesh, the points at the first written frame, and per time
    step the point data ``displacement`` [m] from there (ParaView: *Warp By Vector* with
    ``displacement`` moves the points to where they are at that time), the frames ``d1, d2, d3``
    and the strains, with the static labels of :func:`export_paraview` (``rod``, ``body``,
    ``node``, ``radius``) at every step.

    Strains (from each rod's geometry and frames): cell data ``stretch`` (``|e| /
    rest - 1`` per edge; the rest lengths of a DER rod, else the first saved frame's);
    ``curvature`` [1/m] (components along ``d1, d2, d3``: two bendings and twist) as cell data
    for rods with frames at their nodes (shooting/Cosserat models) or point data at the interior
    nodes for rods with frames on edges (DER, PCS inside a hybrid system); ``pcs_strain``
    ``(6,)`` cell data for a single PCS rod (its strains ``xi``, angular first [1/m], then
    linear [-], of the segment the cell lies in).

    Bodies (a multibody or hybrid system) are zero-length ``line`` cells ``(i, i)`` after the
    rods' edges, with NaN cell data (meshio's XDMF writer fails on a mixed line + vertex mesh);
    their ``body`` point label and frames tell them apart.

    Args:
        traj, model, every: as :func:`export_paraview`.
        path: the ``.xdmf`` file to write; its folder must exist. With the HDF5 data format the
            arrays go to ``<stem>.h5`` beside it.
        data_format: ``"HDF"`` (needs ``h5py``), ``"XML"`` (the arrays inline, text) or ``None``:
            HDF when ``h5py`` is installed, else XML.

    Returns:
        the ``.xdmf`` path.
    """
    meshio = _meshio()
    path = _check_path(path, ".xdmf", "an XDMF time series")
    if data_format is None:
        import importlib.util

        data_format = "HDF" if importlib.util.find_spec("h5py") is not None else "XML"
    if data_format not in ("HDF", "XML"):
        raise ValueError(f"data_format must be 'HDF', 'XML' or None, got {data_format!r}")
    times, keep, points, blocks, static, point_series, cell_series = _prepare(traj, model, every)
    if len(blocks) > 1:
        # meshio's XDMF writer (5.3) fails on a mixed line + vertex topology: one block of lines,
        # the bodies as zero-length lines (i, i) after the rods' (their cell data NaN)
        lines = dict(blocks).get("line", np.zeros((0, 2), np.int64))
        body_cells = np.repeat(dict(blocks)["vertex"], 2, axis=1)
        blocks = [("line", np.concatenate([lines, body_cells]))]
        cell_series = {name: np.concatenate([v, np.full((len(v), len(body_cells)) + v.shape[2:], np.nan)], axis=1)
                       for name, v in cell_series.items()}
    cwd = os.getcwd()
    try:  # meshio names the .h5 file relative to the working directory: write from the folder
        os.chdir(path.parent)
        with meshio.xdmf.TimeSeriesWriter(path.name, data_format=data_format) as writer:
            writer.write_points_cells(points[0], blocks)
            for j, k in enumerate(keep):
                data = {name: np.asarray(v, float) for name, v in static.items()}
                data["displacement"] = points[j] - points[0]
                data.update({name: v[j] for name, v in point_series.items()})
                cell_data = {name: _cell_blocks(blocks, v[j]) for name, v in cell_series.items()}
                writer.write_data(float(times[k]), point_data=data, cell_data=cell_data)
    finally:
        os.chdir(cwd)
    return path


def export_trajectory(traj, path, model=None, *, every: int = 1) -> Path:
    """Write ``traj`` for ParaView by the suffix of ``path``: ``.pvd`` (:func:`export_paraview`)
    or ``.xdmf`` (:func:`export_xdmf`). Returns the path written."""
    suffix = Path(path).suffix
    if suffix == ".pvd":
        return export_paraview(traj, path, model, every=every)
    if suffix == ".xdmf":
        return export_xdmf(traj, path, model, every=every)
    raise ValueError(f"path must end in .pvd or .xdmf, got {str(path)!r}")
