"""Held-out evaluation: train/test splits and error reports that keep in-sample and held-out apart.

A calibration's residual on the data it was fitted to (*in-sample*) says how well the optimiser
matched those data; it does not say how well the calibrated model predicts anything else. Every
number we publish comes from a split: some frames, time windows, markers or trials are left out
of the loss and the fitted model is scored on them (*held-out*).

* :class:`Split`: a partition of ``n`` items (frames, markers, trials) into ``train`` and
  ``test`` index sets (disjoint, covering, both non-empty unless built with ``allow_empty_test``);
* :func:`split_frames` (every k-th frame, or a seeded random fraction), :func:`split_windows`
  (frames inside time windows, or the last fraction of the record), :func:`split_markers`
  (named or indexed markers), :func:`split_trials` (whole trials);
* :func:`point_errors`: ``(F, M)`` Euclidean distances between predicted and measured points;
* :func:`evaluate` -> :class:`EvaluationReport`: per-marker and per-frame errors and the mean,
  RMS and max of each block of the (row split) x (marker split) table, printed side by side with
  what each block is ("in-sample", "held-out markers", "held-out frames", ...).

Numpy only (evaluation runs after a fit, on its outputs): nothing here is traced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ErrorStats",
    "EvaluationReport",
    "Split",
    "evaluate",
    "point_errors",
    "split_frames",
    "split_markers",
    "split_trials",
    "split_windows",
]


def _count(name, n, minimum=1) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


@dataclass(frozen=True)
class Split:
    """Partition of ``n`` items (``axis``: ``"frames"``, ``"markers"`` or ``"trials"``) into a
    training set (in the loss) and a test set (held out of the loss, scored afterwards).

    Attributes:
        axis: what the items are.
        n: number of items.
        train, test: sorted ``int`` indices, disjoint, together ``0 .. n-1``.
        description: how the split was made (printed in reports).
    """

    axis: str
    n: int
    train: np.ndarray
    test: np.ndarray
    description: str = ""

    def __post_init__(self):
        n = _count("n", self.n)
        tr = np.unique(np.asarray(self.train, dtype=int).reshape(-1))
        te = np.unique(np.asarray(self.test, dtype=int).reshape(-1))
        if tr.size and (tr[0] < 0 or tr[-1] >= n) or te.size and (te[0] < 0 or te[-1] >= n):
            raise ValueError(f"split indices must lie in 0..{n - 1}")
        if np.intersect1d(tr, te).size:
            raise ValueError(
                f"train and test overlap at {np.intersect1d(tr, te)[:5].tolist()}"
            )
        if tr.size + te.size != n:
            raise ValueError(
                f"train ({tr.size}) and test ({te.size}) must cover all {n} {self.axis}"
            )
        if tr.size == 0:
            raise ValueError(f"the split leaves no {self.axis} to train on")
        object.__setattr__(self, "train", tr)
        object.__setattr__(self, "test", te)

    @classmethod
    def all_train(cls, n, axis="frames") -> Split:
        """No held-out items (every item in the loss)."""
        n = _count("n", n)
        return cls(axis, n, np.arange(n), np.zeros(0, int), f"all {n} {axis} fitted")

    @property
    def train_mask(self) -> np.ndarray:
        """``(n,)`` bool, ``True`` for training items."""
        m = np.zeros(self.n, bool)
        m[self.train] = True
        return m

    @property
    def test_mask(self) -> np.ndarray:
        """``(n,)`` bool, ``True`` for held-out items."""
        return ~self.train_mask


def split_frames(n, *, every=None, fraction=None, offset=0, seed=0) -> Split:
    """Hold out frames of a record of ``n`` frames.

    Give exactly one of:
        every: int >= 2: frames ``offset, offset + every, ...`` are held out (interleaved: tests
            interpolation between fitted frames).
        fraction: in (0, 1): that fraction of the frames (rounded, at least 1), chosen at random
            with ``seed``.
    """
    n = _count("n", n, 2)
    if (every is None) == (fraction is None):
        raise ValueError("give exactly one of every= and fraction=")
    if every is not None:
        every = _count("every", every, 2)
        offset = _count("offset", offset, 0)
        if offset >= n:
            raise ValueError(f"offset must be < n = {n}, got {offset}")
        test = np.arange(offset, n, every)
        desc = f"every {every}th frame held out (from frame {offset}): {test.size} of {n}"
    else:
        f = float(fraction)
        if not (np.isfinite(f) and 0.0 < f < 1.0):
            raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
        k = min(max(1, round(f * n)), n - 1)
        test = np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))
        desc = f"{k} of {n} frames held out at random (seed {seed})"
    return Split("frames", n, np.setdiff1d(np.arange(n), test), test, desc)


def split_windows(times, *, windows=None, last=None) -> Split:
    """Hold out the frames whose time lies in given windows (tests prediction of unseen motion).

    Arguments:
        times: ``(n,)`` frame times [s], finite and non-decreasing.
        windows: sequence of ``(start, stop)`` [s]: frames with ``start <= t < stop`` are held out; or
        last: in (0, 1): the frames after ``t0 + (1 - last) (t_end - t0)`` are held out
            (extrapolation in time).
    """
    t = np.asarray(times, dtype=float).reshape(-1)
    if t.size < 2:
        raise ValueError(f"times needs at least 2 frames, got {t.size}")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ValueError("times must be finite and non-decreasing")
    if (windows is None) == (last is None):
        raise ValueError("give exactly one of windows= and last=")
    if windows is not None:
        w = np.asarray(windows, dtype=float)
        if w.ndim != 2 or w.shape[1] != 2 or w.shape[0] == 0:
            raise ValueError(f"windows must be a sequence of (start, stop) pairs, got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w[:, 1] <= w[:, 0]):
            raise ValueError(f"each window needs finite start < stop, got {w.tolist()}")
        held = np.any((t[:, None] >= w[None, :, 0]) & (t[:, None] < w[None, :, 1]), axis=1)
        desc = "frames in " + ", ".join(f"[{a:g}, {b:g}) s" for a, b in w) + " held out"
    else:
        f = float(last)
        if not (np.isfinite(f) and 0.0 < f < 1.0):
            raise ValueError(f"last must be in (0, 1), got {last!r}")
        cut = t[0] + (1.0 - f) * (t[-1] - t[0])
        held = t > cut + 1e-12 * (t[-1] - t[0])  # a frame exactly at the cut is fitted
        desc = f"frames after t = {cut:.4g} s held out (last {100 * f:g}% of the record)"
    test = np.flatnonzero(held)
    if test.size == 0:
        raise ValueError(f"no frame falls in the held-out window(s) ({desc})")
    return Split("frames", t.size, np.flatnonzero(~held), test, f"{desc}: {test.size} of {t.size}")


def _hold_out(axis, n, hold_out, names) -> Split:
    n = _count(f"number of {axis}", n)
    if isinstance(hold_out, (str, int, np.integer)):
        hold_out = [hold_out]
    hold_out = list(hold_out)
    if not hold_out:
        raise ValueError(f"hold_out names no {axis}")
    names = None if names is None else [str(s) for s in names]
    if names is not None and len(names) != n:
        raise ValueError(f"names has {len(names)} entries for {n} {axis}")
    idx = []
    for h in hold_out:
        if isinstance(h, str):
            if names is None or h not in names:
                raise ValueError(f"unknown {axis[:-1]} {h!r}; known: {names}")
            idx.append(names.index(h))
        elif isinstance(h, (int, np.integer)) and not isinstance(h, bool):
            if not -n <= h < n:
                raise ValueError(f"{axis[:-1]} index {h} out of range for {n} {axis}")
            idx.append(int(h) % n)
        else:
            raise TypeError(f"hold_out entries must be names or integer indices, got {h!r}")
    if len(set(idx)) != len(idx):
        raise ValueError(f"hold_out lists a {axis[:-1]} twice: {hold_out}")
    if len(idx) >= n:
        raise ValueError(f"hold_out {hold_out} leaves no {axis} to train on")
    test = np.sort(np.asarray(idx))
    label = [names[i] for i in test] if names is not None else test.tolist()
    return Split(axis, n, np.setdiff1d(np.arange(n), test), test, f"{axis} {label} held out")


def split_markers(n_markers, hold_out, *, names=None) -> Split:
    """Hold out markers (by index or, with ``names``, by name) from the loss: the fit never sees
    them, and their errors measure how well the calibrated shape predicts unseen points."""
    return _hold_out("markers", n_markers, hold_out, names)


def split_trials(n_trials, hold_out, *, names=None) -> Split:
    """Hold out whole trials (experiments): the parameters are fitted on the others."""
    return _hold_out("trials", n_trials, hold_out, names)


def point_errors(predicted, measured, mask=None) -> np.ndarray:
    """Euclidean distances ``(F, M)`` between predicted and measured points ``(F, M, D)`` (same
    units as the inputs); ``mask`` ``(F, M)`` bool (``False``: not measured -> NaN)."""
    p = np.asarray(predicted, dtype=float)
    m = np.asarray(measured, dtype=float)
    if p.shape != m.shape or p.ndim != 3:
        raise ValueError(
            f"predicted and measured must both have shape (F, M, D), got {p.shape} and {m.shape}"
        )
    e = np.linalg.norm(p - m, axis=-1)
    if mask is not None:
        mask = np.asarray(mask, bool)
        if mask.shape != e.shape:
            raise ValueError(f"mask must have shape {e.shape}, got {mask.shape}")
        e = np.where(mask, e, np.nan)
    return e


@dataclass(frozen=True)
class ErrorStats:
    """Mean, RMS and max of a set of (non-negative) errors, in ``units``; ``n`` values (NaN when empty)."""

    n: int
    mean: float
    rms: float
    max: float
    units: str = ""

    @classmethod
    def of(cls, errors, units="") -> ErrorStats:
        e = np.asarray(errors, dtype=float).reshape(-1)
        e = e[np.isfinite(e)]
        if e.size == 0:
            return cls(0, np.nan, np.nan, np.nan, units)
        return cls(int(e.size), float(e.mean()), float(np.sqrt(np.mean(e**2))), float(e.max()), units)

    def as_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "rms": self.rms, "max": self.max, "units": self.units}


@dataclass
class EvaluationReport:
    """In-sample and held-out errors of a fit, side by side.

    Attributes:
        errors: ``(R, M)`` errors (rows: frames or trials, columns: markers; NaN = not measured) in
            ``units``.
        rows, markers: the :class:`Split` of each axis.
        units: of ``errors`` (e.g. ``"mm"``).
        quantity: what an error is (e.g. ``"distance between simulated and measured tag"``).
        blocks: ``{label: ErrorStats}``: ``"in-sample"`` (training rows x training markers: the
            fitted data), ``"held-out markers"`` (training rows, markers never in the loss),
            ``"held-out <rows>"`` (rows never in the loss, training markers) and ``"held-out
            <rows> and markers"``; only non-empty blocks.
        per_marker: ``(M,)`` mean error of each marker over the training rows (for a held-out
            marker this is its held-out error); ``per_marker_held_out_rows`` over the held-out rows
            (NaN when no row is held out).
        per_row: ``(R,)`` mean error of each row over its training markers; ``per_row_held_out``
            over the held-out markers (NaN when there are none).
        marker_names: ``(M,)`` labels.
        notes: extra lines printed under the table (e.g. what a figure is not comparable with).
    """

    errors: np.ndarray
    rows: Split
    markers: Split
    units: str
    quantity: str
    blocks: dict
    per_marker: np.ndarray
    per_marker_held_out_rows: np.ndarray
    per_row: np.ndarray
    per_row_held_out: np.ndarray
    marker_names: list
    notes: list = field(default_factory=list)

    @property
    def in_sample(self) -> ErrorStats:
        return self.blocks["in-sample"]

    @property
    def held_out(self) -> dict:
        """``{label: ErrorStats}`` of the held-out blocks (empty when nothing was held out)."""
        return {k: v for k, v in self.blocks.items() if k != "in-sample"}

    def summary(self) -> str:
        u = f" [{self.units}]" if self.units else ""
        lines = [
            f"evaluation: {self.quantity}{u}",
            f"  {self.rows.axis}: {self.rows.description}",
            f"  markers: {self.markers.description}",
        ]
        w = max(len(k) for k in self.blocks) + 2
        lines.append(f"  {'':<{w}s}{'n':>7s}{'mean':>10s}{'RMS':>10s}{'max':>10s}")
        for k, s in self.blocks.items():
            what = "  (fitted data: how well the optimiser matched it)" if k == "in-sample" else \
                "  (never in the loss: prediction)"
            lines.append(f"  {k:<{w}s}{s.n:7d}{s.mean:10.4g}{s.rms:10.4g}{s.max:10.4g}{what}")
        if not self.held_out:
            lines.append("  nothing held out: these are in-sample residuals, not prediction errors")
        if self.markers.test.size:
            names = [self.marker_names[i] for i in self.markers.test]
            vals = ", ".join(
                f"{n} {v:.4g}" for n, v in zip(names, self.per_marker[self.markers.test])
            )
            lines.append(f"  held-out markers, mean over the fitted {self.rows.axis}: {vals}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """JSON-ready summary (statistics per block, per marker and per row, the splits; NaN -> None)."""
        return {
            "quantity": self.quantity,
            "units": self.units,
            "rows": {"axis": self.rows.axis, "description": self.rows.description,
                     "test": self.rows.test.tolist()},
            "markers": {"description": self.markers.description,
                        "test": [self.marker_names[i] for i in self.markers.test]},
            "blocks": {k: v.as_dict() for k, v in self.blocks.items()},
            "per_marker": dict(zip(self.marker_names, _json_floats(self.per_marker))),
            "per_marker_held_out_rows": dict(
                zip(self.marker_names, _json_floats(self.per_marker_held_out_rows))
            ),
            "per_row": _json_floats(self.per_row),
            "per_row_held_out_markers": _json_floats(self.per_row_held_out),
            "notes": list(self.notes),
        }


def _json_floats(a) -> list:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(a, dtype=float)]


def _nanmean(a, axis):
    a = np.asarray(a, dtype=float)
    n = np.sum(np.isfinite(a), axis=axis)
    s = np.nansum(a, axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def evaluate(
    errors,
    *,
    rows: Split | None = None,
    markers: Split | None = None,
    units: str = "",
    quantity: str = "error",
    marker_names: Sequence | None = None,
    notes: Sequence[str] = (),
) -> EvaluationReport:
    """Score a fit's errors ``(R, M)`` (NaN = not measured; e.g. from :func:`point_errors`) by
    the splits used in the fit: ``rows`` (frames or trials; default: all fitted) and ``markers``
    (default: all fitted). The fit must have used exactly the training sets: this function only
    sorts the errors into in-sample and held-out blocks, it cannot check what the loss contained.
    """
    e = np.asarray(errors, dtype=float)
    if e.ndim == 1:
        e = e[:, None]
    if e.ndim != 2:
        raise ValueError(f"errors must have shape (rows, markers), got {e.shape}")
    if np.any(e[np.isfinite(e)] < 0):
        raise ValueError("errors must be non-negative distances or magnitudes")
    R, M = e.shape
    rows = Split.all_train(R, "frames") if rows is None else rows
    markers = Split.all_train(M, "markers") if markers is None else markers
    if rows.n != R:
        raise ValueError(f"the row split is over {rows.n} {rows.axis}, errors have {R} rows")
    if markers.n != M:
        raise ValueError(f"the marker split is over {markers.n} markers, errors have {M} columns")
    names = [str(i) for i in range(M)] if marker_names is None else [str(s) for s in marker_names]
    if len(names) != M:
        raise ValueError(f"marker_names has {len(names)} entries for {M} markers")
    rt, re_, mt, me = rows.train, rows.test, markers.train, markers.test
    ax = rows.axis
    cand = {
        "in-sample": e[np.ix_(rt, mt)],
        "held-out markers": e[np.ix_(rt, me)],
        f"held-out {ax}": e[np.ix_(re_, mt)],
        f"held-out {ax} and markers": e[np.ix_(re_, me)],
    }
    blocks = {k: ErrorStats.of(v, units) for k, v in cand.items() if v.size}
    blocks = {k: s for k, s in blocks.items() if s.n or k == "in-sample"}
    per_row = _nanmean(e[:, mt], axis=1)
    per_row_ho = _nanmean(e[:, me], axis=1) if me.size else np.full(R, np.nan)
    return EvaluationReport(
        errors=e,
        rows=rows,
        markers=markers,
        units=units,
        quantity=quantity,
        blocks=blocks,
        per_marker=_nanmean(e[rt], axis=0),
        per_marker_held_out_rows=_nanmean(e[re_], axis=0) if re_.size else np.full(M, np.nan),
        per_row=per_row,
        per_row_held_out=per_row_ho,
        marker_names=names,
        notes=list(notes),
    )
