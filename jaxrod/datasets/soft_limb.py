"""The DisMech soft-limb recording (``soft_limb_data.csv``): finding it, reading and validating it,
and selecting the frames to fit (the real2sim case study is :mod:`jaxrod.cases.soft_limb`).

The data (published with DisMech, GPL-3.0) is never copied into jaxrod: it is found by
:func:`find_data_path` (``$JAXROD_SOFT_LIMB_DATA`` or ``shared/data/dismech-soft-limb/`` next to the
repository or the working directory). It holds, at ~5 Hz, the image coordinates [px] of 9
AprilTags along the robot (101-104 on limb 1, 105 at the joint, 106-109 on limb 2; image y points
down). A tag is *missing* in a row when both coordinates are 0 (the tracker's "not detected") or
either is empty/NaN; only frames with all 9 tags are fitted.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .shared import find_shared_file

__all__ = [
    "DATA_ENV",
    "DATA_RELPATH",
    "DATA_SOURCE",
    "DEFAULT_DATA_PATH",
    "TAG_IDS",
    "TIME_COLUMN",
    "SoftLimbData",
    "find_data_path",
    "read_soft_limb_csv",
    "resolve_data_path",
    "select_frames",
]

#: Environment variable that may name the measured CSV (checked first by
#: :func:`find_data_path`).
DATA_ENV = "JAXROD_SOFT_LIMB_DATA"
#: Where the data sits below a ``shared/`` folder next to (or above) the repository or the cwd.
DATA_RELPATH = Path("shared") / "data" / "dismech-soft-limb" / "soft_limb_data.csv"

DATA_SOURCE = (
    "soft_limb_data.csv is published with DisMech: github.com/StructuresComp/dismech-rods, "
    "cpp_examples/real2sim_case/, GPL-3.0, not distributed with jaxrod"
)


def find_data_path():
    """The measured CSV, or ``None`` when none is found.

    Looked for, in order: the file named by ``$JAXROD_SOFT_LIMB_DATA``; ``shared/data/dismech-soft-limb/
    soft_limb_data.csv`` below the repository root or any of its ancestors (so ``../shared/data``
    next to a checkout); the same below the current directory or any of its ancestors."""
    return find_shared_file(DATA_ENV, DATA_RELPATH)


def resolve_data_path(path=None) -> Path:
    """``path`` if given, else :func:`find_data_path`; a one-line ``FileNotFoundError`` saying where
    to get the data when there is none."""
    if path is not None:
        path = Path(os.fspath(path))
        if path.is_dir() and (path / DATA_RELPATH.name).is_file():
            return path / DATA_RELPATH.name  # the directory holding the file
        if path.is_dir():
            raise FileNotFoundError(
                f"soft-limb data: {path} is a directory without {DATA_RELPATH.name} (pass --data PATH to the file; {DATA_SOURCE})"
            )
        if not path.is_file():
            raise FileNotFoundError(
                f"soft-limb data not found: {path} (pass --data PATH to soft_limb_data.csv; {DATA_SOURCE})"
            )
        return path
    found = find_data_path()
    if found is None:
        env = os.environ.get(DATA_ENV)
        where = f"${DATA_ENV}={env} is not a file" if env else (
            f"no {DATA_RELPATH} next to the repository or the current directory and ${DATA_ENV} unset"
        )
        raise FileNotFoundError(
            f"soft-limb data not found: {where}; pass --data PATH to soft_limb_data.csv ({DATA_SOURCE})"
        )
    return found


#: The measured data found at import (``None`` when absent); see :func:`find_data_path`.
DEFAULT_DATA_PATH = find_data_path()

TAG_IDS = tuple(range(101, 110))
TIME_COLUMN = "Test time"


@dataclass(frozen=True)
class SoftLimbData:
    """Validated contents of a soft-limb CSV.

    Attributes:
        path: the file read.
        times: ``(T,)`` ``Test time`` [s] of every row (empty trailing rows dropped).
        tags_px: ``(T, 9, 2)`` tag image coordinates (x, y) [px], NaN where the tag is missing.
        columns: every column by header name, ``(T,)`` float arrays (NaN for empty cells).
    """

    path: str
    times: np.ndarray
    tags_px: np.ndarray
    columns: dict = field(repr=False)

    @property
    def tag_present(self) -> np.ndarray:
        """``(T, 9)`` bool: tag detected in that row."""
        return np.all(np.isfinite(self.tags_px), axis=-1)

    @property
    def valid(self) -> np.ndarray:
        """``(T,)`` bool: all 9 tags present (the frames that are fitted)."""
        return np.all(self.tag_present, axis=-1)

    @property
    def valid_indices(self) -> np.ndarray:
        return np.flatnonzero(self.valid)


def _tag_columns():
    return [f"tagid_{c}_{i}" for i in TAG_IDS for c in ("x", "y")]


def read_soft_limb_csv(path) -> SoftLimbData:
    """Read and validate a soft-limb CSV (plain ``csv`` parsing; nothing is unpickled).

    Rules: the header must contain ``Test time`` and ``tagid_x_101 ... tagid_y_109``; every row must
    have as many cells as the header; trailing rows whose cells are all empty are dropped (an empty
    row before the end is an error); every non-empty cell must be a number; ``Test time`` must be
    present, finite and non-decreasing, and strictly increasing over the valid frames. A tag whose
    two coordinates are both 0 (not detected) or either empty/NaN is missing (NaN in ``tags_px``);
    at least one row must have all 9 tags.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: with the row number (1-based, header = row 1) and the reason.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"soft-limb data file not found: {path}")
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise ValueError(f"{path}: empty file (no header)")
    header = [h.strip() for h in rows[0]]
    needed = [TIME_COLUMN, *_tag_columns()]
    absent = [c for c in needed if c not in header]
    if absent:
        raise ValueError(
            f"{path}: header lacks column(s) {absent[:4]}{' ...' if len(absent) > 4 else ''}"
        )
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: duplicate column names in the header")
    body = rows[1:]
    while body and all(not c.strip() for c in body[-1]):
        body.pop()
    if not body:
        raise ValueError(f"{path}: no data rows")
    ncol = len(header)
    values = np.empty((len(body), ncol))
    for r, row in enumerate(body):
        line = r + 2
        if len(row) != ncol:
            raise ValueError(
                f"{path}: row {line} has {len(row)} columns, the header has {ncol}"
            )
        if all(not c.strip() for c in row):
            raise ValueError(
                f"{path}: row {line} is empty (only trailing empty rows are allowed)"
            )
        for c, cell in enumerate(row):
            cell = cell.strip()
            if not cell:
                values[r, c] = np.nan
                continue
            try:
                values[r, c] = float(cell)
            except ValueError:
                raise ValueError(
                    f"{path}: row {line}, column {header[c]!r}: not a number: {cell!r}"
                ) from None
    cols = {h: values[:, i] for i, h in enumerate(header)}
    t = cols[TIME_COLUMN]
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise ValueError(
            f"{path}: row {bad[0] + 2}: {TIME_COLUMN!r} is missing or not finite"
        )
    back = np.flatnonzero(np.diff(t) < 0)
    if back.size:
        i = back[0]
        raise ValueError(
            f"{path}: time is not monotonic: row {i + 3} has {TIME_COLUMN} = {t[i + 1]} s after {t[i]} s (row {i + 2})"
        )
    xy = np.stack(
        [
            np.stack([cols[f"tagid_x_{i}"], cols[f"tagid_y_{i}"]], axis=-1)
            for i in TAG_IDS
        ],
        axis=1,
    )
    missing = np.any(~np.isfinite(xy), axis=-1) | np.all(xy == 0.0, axis=-1)
    xy = np.where(missing[..., None], np.nan, xy)
    valid = ~np.any(missing, axis=1)
    if not valid.any():
        raise ValueError(
            f"{path}: no row has all 9 tags {TAG_IDS[0]}-{TAG_IDS[-1]} (all frames missing)"
        )
    tv = t[valid]
    dup = np.flatnonzero(np.diff(tv) <= 0)
    if dup.size:
        rows_v = np.flatnonzero(valid)
        raise ValueError(
            f"{path}: rows {rows_v[dup[0]] + 2} and {rows_v[dup[0] + 1] + 2} have the same time {tv[dup[0]]} s"
        )
    return SoftLimbData(path=path, times=t, tags_px=xy, columns=cols)


def select_frames(data: SoftLimbData, frames=None) -> np.ndarray:
    """Row indices of the valid frames to fit.

    ``frames``: ``None`` (all valid frames); an int ``n`` (the first ``n``); a string ``"a:b[:c]"``
    (a slice of the valid frames) or ``"i,j,k"`` (positions among the valid frames); or a sequence
    of such positions.
    """
    valid = data.valid_indices
    if frames is None:
        return valid
    if isinstance(frames, (int, np.integer)):
        if frames < 1:
            raise ValueError(f"frames must be >= 1, got {frames}")
        return valid[: int(frames)]
    if isinstance(frames, str):
        s = frames.strip()
        if ":" in s:
            parts = [int(p) if p.strip() else None for p in s.split(":")]
            sel = valid[slice(*parts)]
        elif "," in s:
            sel = valid[[int(p) for p in s.split(",")]]
        else:
            return select_frames(data, int(s))
    else:
        sel = valid[np.asarray(list(frames), dtype=int)]
    if sel.size == 0:
        raise ValueError(
            f"frame selection {frames!r} is empty ({valid.size} valid frames)"
        )
    return sel


# ---- pixel -> metre alignment -------------------------------------------------------------------
LIMB_LENGTH = 0.075  # [m], each of the two limbs (DisMech's geometry)

#: which information may set the pixel scale and the tag arc lengths (:func:`derive_alignment`)
ALIGNMENTS = ("tip-free", "all-tags")
#: where the tip tag (109) sits on the rod in the tip-free alignment
TIP_ARCLENGTHS = ("rod-end", "last-interval")
#: nominal tag spacing [m]: DisMech's geometry puts the 9 tags at equal arc-length intervals over
#: the 0.15 m rod (6 edges of its 25-node limbs per interval; tag 101 at the clamp, 105 at the
#: joint, 109 at the tip): 0.15 / 8 = 18.75 mm. Known geometry, not measured.
NOMINAL_TAG_SPACING = 2 * LIMB_LENGTH / (len(TAG_IDS) - 1)


@dataclass(frozen=True)
class Alignment:
    """Pixel -> metre mapping.

    Attributes:
        scale: [m/px], ``reference_length / path_length_px``.
        tag_arclength: ``(9,)`` arc length of each tag along the rod [m] (tag 101 at 0).
        length: modelled rod length [m].
        path_length_px: mean polyline length [px] from tag 101 to the reference tag over the frames
            used (``reference_tag``: 109 for ``"all-tags"``, 108 for ``"tip-free"``).
        path_length_std_px: its standard deviation [px].
        spacing: ``"measured"`` or ``"uniform"``.
        alignment: ``"all-tags"`` (tag 109 sets the scale and the arc lengths) or ``"tip-free"``
            (nothing derived from tag 109 enters).
        reference_tag: the tag whose polyline distance from 101 is set to ``reference_length``.
        reference_length: [m] the known arc length that fixes the scale.
        tip_arclength: ``"measured"`` (all-tags), ``"rod-end"`` or ``"last-interval"`` (tip-free).
        provenance: ``{quantity: what it is computed from}`` (human-readable).
    """

    scale: float
    tag_arclength: np.ndarray
    length: float
    path_length_px: float
    path_length_std_px: float
    spacing: str
    alignment: str = "all-tags"
    reference_tag: int = TAG_IDS[-1]
    reference_length: float = 2 * LIMB_LENGTH
    tip_arclength: str = "measured"
    provenance: dict = field(default_factory=dict, compare=False)

    @property
    def uses_tip(self) -> bool:
        """Whether tag 109's pixels enter the scale or the tag arc lengths."""
        return self.alignment != "tip-free"

    def to_metres(self, tags_px) -> np.ndarray:
        """``(..., 9, 2)`` pixels -> ``(..., 9, 2)`` model-plane (x, z) [m], tag 101 at the origin
        (each tag's point depends on its own pixels and tag 101's only)."""
        p = np.asarray(tags_px, dtype=float)
        rel = p - p[..., :1, :]
        return self.scale * np.stack([rel[..., 0], -rel[..., 1]], axis=-1)


def derive_alignment(
    data: SoftLimbData,
    length=2 * LIMB_LENGTH,
    spacing="measured",
    rows=None,
    alignment="all-tags",
    tip_arclength="rod-end",
) -> Alignment:
    """Pixel scale and tag arc lengths from the valid frames (``rows``: a subset).

    ``alignment="all-tags"`` (the original definition; tag 109 is used): the mean 101 -> 109
    polyline length [px] is set to the rod ``length``; with ``spacing="measured"`` each tag's arc
    length is its mean cumulative polyline length times the scale (so tag 109 sits at its measured
    mean distance, which is ``length``).

    ``alignment="tip-free"`` (nothing from tag 109): the mean 101 -> 108 polyline length [px] (the
    fitted tags only) is set to the nominal arc length of tag 108, ``7 x length / 8`` (DisMech's
    equal tag spacing, :data:`NOMINAL_TAG_SPACING`); tags 102-108 get their mean cumulative
    polyline length times that scale (``"measured"``) or the nominal ``i x length / 8``
    (``"uniform"``); tag 109's arc length is an assumption, not a measurement:
    ``tip_arclength="rod-end"`` (the known geometry: the tip tag at the end of the rod,
    ``length``, i.e. one nominal spacing beyond tag 108) or ``"last-interval"`` (one more interval
    as long as the measured 107 -> 108 one, the assumption of the own-length chord baseline).
    """
    if spacing not in ("measured", "uniform"):
        raise ValueError(f"spacing must be 'measured' or 'uniform', got {spacing!r}")
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {alignment!r}")
    if tip_arclength not in TIP_ARCLENGTHS:
        raise ValueError(f"tip_arclength must be one of {TIP_ARCLENGTHS}, got {tip_arclength!r}")
    if alignment == "all-tags" and tip_arclength != "rod-end":
        raise ValueError(
            f"tip_arclength={tip_arclength!r} applies to alignment='tip-free' only (with 'all-tags' "
            "tag 109's arc length is measured)"
        )
    length = float(length)
    if not (math.isfinite(length) and length > 0):
        raise ValueError(f"length must be a positive length in m, got {length!r}")
    rows = data.valid_indices if rows is None else np.asarray(rows)
    n = len(TAG_IDS)
    nominal = np.linspace(0.0, length, n)
    if alignment == "all-tags":
        seg = np.linalg.norm(np.diff(data.tags_px[rows], axis=1), axis=-1)  # (F, 8)
        total = seg.sum(axis=1)
        scale = length / float(total.mean())
        if spacing == "measured":
            s = np.concatenate([[0.0], np.cumsum(seg.mean(axis=0))]) * scale
        else:
            s = nominal
        prov = {
            "scale": f"mean polyline 101->109 over {len(rows)} frames [px] set to the rod length "
            f"{length:g} m (uses tag 109)",
            "tag_arclength": "mean cumulative polyline 101->...->109 x scale (uses tag 109)"
            if spacing == "measured" else "nominal i x length / 8 (no tag data)",
            "tag 109 arc length": f"{'measured mean, = rod length' if spacing == 'measured' else 'nominal'}"
            " (uses tag 109 through the scale)",
        }
        return Alignment(scale, s, length, float(total.mean()), float(total.std()), spacing,
                         "all-tags", TAG_IDS[-1], length, "measured", prov)
    # tip-free: only the pixels of tags 101-108 are read
    px = data.tags_px[rows][:, : n - 1]
    seg = np.linalg.norm(np.diff(px, axis=1), axis=-1)  # (F, 7): 101->102 ... 107->108
    total = seg.sum(axis=1)
    ref_len = float(nominal[n - 2])
    scale = ref_len / float(total.mean())
    if spacing == "measured":
        s = np.concatenate([[0.0], np.cumsum(seg.mean(axis=0))]) * scale  # (8,) tags 101-108
    else:
        s = nominal[: n - 1].copy()
    s109 = length if tip_arclength == "rod-end" else s[-1] + (s[-1] - s[-2])
    s = np.append(s, s109)
    if s109 > length + 1e-12:
        raise ValueError(
            f"tip_arclength={tip_arclength!r} puts tag 109 at {s109 * 1e3:.2f} mm, beyond the rod "
            f"(length {length * 1e3:.2f} mm)"
        )
    prov = {
        "scale": f"mean polyline 101->108 over {len(rows)} frames [px] set to the nominal arc length "
        f"of tag 108, 7/8 x {length:g} m (tags 101-108 and DisMech's equal tag spacing; no tag 109)",
        "tag_arclength 102-108": "mean cumulative polyline 101->...->108 x scale (tags 101-108)"
        if spacing == "measured" else "nominal i x length / 8 (no tag data)",
        "tag 109 arc length": (
            f"rod end, {length:g} m (known geometry: the tip tag at the tip; no tag 109 data)"
            if tip_arclength == "rod-end"
            else "tag 108 + the 107->108 arc interval (tags 107-108; no tag 109 data)"
        ),
    }
    return Alignment(scale, s, length, float(total.mean()), float(total.std()), spacing,
                     "tip-free", TAG_IDS[-2], ref_len, tip_arclength, prov)
