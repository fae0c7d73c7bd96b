"""Trajectories out to ParaView (and anything else that reads VTK): a ``.pvd`` time series of
``.vtu`` files written with ``meshio`` (the ``export`` extra: ``pip install "jaxrod[export]"``).

What each frame holds:

- **rods** as polylines (``line`` cells between consecutive nodes of each rod or network limb),
  point data ``rod`` (which rod or limb), ``node`` (its row in ``Trajectory.positions``) and, when
  known, ``radius`` [m] (ParaView's *Tube* filter with *Vary Radius* draws the rod's thickness);
- **rigid bodies** as ``vertex`` cells at their centres of mass, point data ``body`` (index);
- **frames** as point data ``d1``, ``d2``, ``d3`` (the rows of ``Trajectory.frames``: material
  directors of a rod, body axes of a body), for ParaView's *Glyph* filter. Frames that live on
  DER edges are written at each edge's first node (a rod's last node repeats its last edge's);
  network limbs get frames only when the model gives one per position row.

Points carry ``-1`` in ``rod``/``body``/``node`` where the label does not apply. Frames computed
after a failed step (``Trajectory.valid`` False: NaN) are skipped, and the ``.pvd`` lists only the
frames written.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

__all__ = ["export_paraview"]


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
    from .plot.rods import node_chains
    from .system import HybridSystem, MultibodySystem

    if isinstance(model, HybridSystem):  # rods first, then bodies (HybridSystem.observe)
        off = np.asarray(model._offsets())
        rods = []
        for i, m in enumerate(model.rods):
            n = int(off[i + 1] - off[i])
            rods.append((np.arange(off[i], off[i + 1]), _radius(m), n - 1 if isinstance(m, DERModel) else n))
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


def export_paraview(traj, path, model=None, *, every: int = 1) -> Path:
    """Write ``traj`` as a ParaView time series: ``path`` (``.pvd``) indexes one ``.vtu`` per saved
    frame, written to the folder ``<stem>_frames`` beside it.

    Args:
        traj: a :class:`~jaxrod.integrate.Trajectory` (unbatched).
        path: the ``.pvd`` file to write [str or Path]; its folder must exist.
        model: the simulated model, for the geometry the positions alone do not tell: a network's
            limbs, a hybrid system's rods and bodies, a multibody system's bodies (without it the
            positions are one rod, nodes in row order), and the rod radius.
        every: write every ``every``-th saved frame (1: all).

    Returns:
        the ``.pvd`` path. Times in the ``.pvd`` are the trajectory's [s].
    """
    meshio = _meshio()
    path = Path(path)
    if path.suffix != ".pvd":
        raise ValueError(f"path must end in .pvd (a ParaView time series), got {str(path)!r}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"path: folder {str(path.parent)!r} does not exist")
    if not (isinstance(every, (int, np.integer)) and every >= 1):
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    pos = np.asarray(traj.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3:
        raise ValueError(f"traj.positions must be (T, N, 3) (an unbatched trajectory), got shape {pos.shape}")
    times = np.asarray(traj.times, dtype=float)
    valid = np.ones(len(times), bool) if traj.valid is None else np.asarray(traj.valid, bool)
    n_rows = pos.shape[1]
    rods, bodies = _rod_parts(model, n_rows)
    frames = None if traj.frames is None else np.asarray(traj.frames, dtype=float)
    fidx = None
    if frames is not None and frames.ndim == 4 and frames.shape[-2:] == (3, 3):
        fidx = _frame_index(frames.shape[1], n_rows, rods, bodies)

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
    point_data = {"rod": rod_id.astype(np.int32), "body": body_id.astype(np.int32), "node": node.astype(np.int32)}
    if any(rad is not None for _, rad, _ in rods):
        radius = np.concatenate(
            [np.broadcast_to(np.nan if rad is None else rad, (len(r),)) for r, rad, _ in rods]
            + [np.full(len(bodies), np.nan)]
        )
        point_data["radius"] = radius.astype(float)

    folder = path.with_name(f"{path.stem}_frames")
    folder.mkdir(exist_ok=True)
    collection = ET.Element("Collection")
    written = 0
    for k in range(0, len(times), every):
        if not valid[k]:
            continue
        data = dict(point_data)
        if fidx is not None:
            f = frames[k, fidx]
            data.update(d1=f[:, 0], d2=f[:, 1], d3=f[:, 2])
        name = folder / f"{path.stem}_{k:06d}.vtu"
        meshio.write(str(name), meshio.Mesh(pos[k, rows], blocks, point_data=data))
        ET.SubElement(collection, "DataSet", timestep=repr(float(times[k])), part="0",
                      file=os.path.relpath(name, path.parent))
        written += 1
    if written == 0:
        raise ValueError("no valid frame to export: every saved frame follows a failed step")
    root = ET.Element("VTKFile", type="Collection", version="0.1")
    root.append(collection)
    ET.indent(root)
    path.write_text(ET.tostring(root, encoding="unicode") + "\n")
    return path
