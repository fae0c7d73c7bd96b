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
