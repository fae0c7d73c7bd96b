"""The STIFF-FLOP pneumatic module's measured recordings (TMTDyn validation E1): reading, the
paper's parameters, evaluation times and the error metric.

The data (``NoLoad.csv``, ``Load1.csv``, ``Load2.csv``, converted from TMTDyn's ``exp/*.mat``;
BSD-4-Clause, Copyright (c) 2019 S.M.Hadi Sadati) are never copied into jaxrod: they are read
from ``$JAXROD_STIFF_FLOP_DATA`` (a directory) or ``shared/data/stiff-flop/`` next to the
repository or the working directory. Their README (frames, preprocessing, caveats) is the
reference for every column used here; any copy must keep ``LICENSE.BSD-4-Clause.txt`` with it.

What lives here (the actuated model: :mod:`jaxrod.scenes.stiff_flop`; its calibration:
:mod:`jaxrod.cases.stiff_flop_calibration`):

* :func:`read_recording` -> :class:`Recording` (validated arrays, SI units),
* :data:`PARAMETERS` (paper Table 2 and the derived section/chamber values),
* :data:`STATIC_TIMES` / :data:`DYNAMIC_WINDOWS` (the repository's evaluation times),
* :func:`smooth_moving_average` (TMTDyn's MATLAB ``smooth(x, 10)`` on pressures and tip loads),
* :func:`tip_error` (TMTDyn's metric: mean tip distance [m] and the same divided by 64.5 mm),
* :func:`constant_shape_error` (the error of predicting the rest tip: the baseline any model must
  beat).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .shared import find_shared_file

__all__ = [
    "DATA_ENV",
    "DATA_SOURCE",
    "DYNAMIC_WINDOWS",
    "PARAMETERS",
    "RECORDINGS",
    "STATIC_TIMES",
    "TIP_LENGTH",
    "Recording",
    "constant_shape_error",
    "find_data_dir",
    "read_recording",
    "smooth_moving_average",
    "trailing_moving_average",
    "tip_error",
]

DATA_ENV = "JAXROD_STIFF_FLOP_DATA"
DATA_RELDIR = Path("shared") / "data" / "stiff-flop"
DATA_SOURCE = (
    "the STIFF-FLOP recordings come from github.com/smhadisadati/TMTDyn (exp/*.mat, BSD-4-Clause, "
    "Copyright (c) 2019 S.M.Hadi Sadati), converted to CSV in shared/data/stiff-flop/; not distributed with jaxrod"
)
RECORDINGS = ("NoLoad", "Load1", "Load2")
SAMPLE_DT = 0.05  # [s], all three files
#: tip length used to normalise errors (paper: l_m2 + l_m3 = 50 + 14.5 mm) [m]
TIP_LENGTH = 0.0645

#: Paper Table 2 (M measured, D data sheet, C calibrated) and derived values, SI units.
PARAMETERS = {
    "lumen_radius": 4.5e-3,  # r_a1 [m] (M)
    "outer_radius": 12.5e-3,  # r_a2 [m] (M)
    "chamber_radius": 2.5e-3,  # r_p [m] (M)
    "chamber_offset": 8.5e-3,  # r_p0 [m], radial position of the chambers (M)
    "length": 50e-3,  # l_m2 [m], the soft part (M)
    "sensor_length": 14.5e-3,  # l_m3 [m], tip F/T sensor and mount (M)
    "mass": 28e-3,  # m_2 [kg] (M)
    "sensor_mass": 13.47e-3,  # m_3 [kg] (M)
    "sensor_radius": 7.5e-3,  # r_f [m] (repository)
    "braid_angle_deg": 87.0,  # gamma (M)
    "density": 1820.0,  # [kg/m^3] (D)
    "youngs_modulus": 205e3,  # E [Pa] (C), G = E/3
    "damping_power": 2.0,  # nu, power-law damping index (C)
    # chamber pair centre angles [deg] about the z axis, pair 0 on +y; the two chambers of a pair
    # sit at +-20.3 deg from it (README "Robot parameters")
    "pair_angles_deg": (90.0, -30.0, 210.0),
    "pair_half_spread_deg": 20.3,
    "gravity": (0.0, 0.0, 9.81),  # base frame: z from base to tip, the module hangs
}
#: elastomer cross-section a_c = pi (r_a2^2 - r_a1^2 - 6 r_p^2) [m^2] (3.094e-4)
PARAMETERS["section_area"] = np.pi * (
    PARAMETERS["outer_radius"] ** 2 - PARAMETERS["lumen_radius"] ** 2 - 6 * PARAMETERS["chamber_radius"] ** 2
)
#: one chamber's cap area a_p = pi r_p^2 [m^2] (1.96 N per bar)
PARAMETERS["chamber_area"] = np.pi * PARAMETERS["chamber_radius"] ** 2

#: Static evaluation times [s] (repository ``t_exp_equil`` at HEAD d4b5ef0b).
STATIC_TIMES = {
    "NoLoad": (8.7, 15.15, 21.7, 26.2, 31.1, 35.1, 39.2, 44.6, 50.9),
    "Load1": (8.9, 15.7, 18.1, 26.7, 30.0, 33.0, 36.3, 42.4, 44.8, 52.4, 55.0),
    "Load2": (7.6, 9.7, 17.3, 19.6, 30.0, 32.9, 39.0),
}
#: Dynamic evaluation windows ``(start, end)`` [s] (repository ``t_exp`` at HEAD).
DYNAMIC_WINDOWS = {"NoLoad": (7.0, 54.0), "Load1": (5.0, 33.0), "Load2": (5.0, 9.7)}


@dataclass(frozen=True)
class Recording:
    """One STIFF-FLOP recording, ``T`` rows at 20 Hz, base frame (z from base to tip), SI units.

    Attributes:
        name: ``"NoLoad"``, ``"Load1"`` or ``"Load2"`` (or the file's stem).
        path: the file read.
        times: ``(T,)`` [s], from 0 in steps of 0.05 s.
        pressures: ``(T, 3)`` gauge pressures of chamber pairs 0, 1, 2 [Pa] (unsmoothed).
        tip: ``(T, 3)`` tip position [m], ``(0, 0, 0.0645)`` at t = 0 (README preprocessing).
        tip_quat: ``(T, 4)`` tip rotation since t = 0, scalar first.
        tip_force: ``(T, 3)`` external force on the tip [N], base frame, or ``None`` (NoLoad).
        tip_moment: ``(T, 3)`` external moment at the tip sensor [N m], or ``None``.
    """

    name: str
    path: Path
    times: np.ndarray
    pressures: np.ndarray
    tip: np.ndarray
    tip_quat: np.ndarray
    tip_force: np.ndarray | None
    tip_moment: np.ndarray | None

    def rows(self, times) -> np.ndarray:
        """Row indices of the samples at ``times`` [s] (``round(t / 0.05)``, as the README says);
        ``ValueError`` naming the first time outside the recording."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        k = np.rint(t / SAMPLE_DT).astype(int)
        bad = np.flatnonzero((k < 0) | (k >= self.times.size))
        if bad.size:
            raise ValueError(
                f"{self.name}: time {t[bad[0]]} s is outside the recording (0 to {self.times[-1]:.2f} s)"
            )
        return k

    def window(self, start, end) -> np.ndarray:
        """Row indices with ``start <= t <= end`` [s]."""
        return np.flatnonzero((self.times >= start - 1e-9) & (self.times <= end + 1e-9))


def find_data_dir() -> Path | None:
    """The directory holding the three CSV files, or ``None``: ``$JAXROD_STIFF_FLOP_DATA``, else
    ``shared/data/stiff-flop/`` next to the repository or the working directory."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env) if (Path(env) / "NoLoad.csv").is_file() else None
    found = find_shared_file(None, DATA_RELDIR / "NoLoad.csv")
    return found.parent if found is not None else None


def _resolve(name_or_path) -> tuple[str, Path]:
    if name_or_path in RECORDINGS:
        d = find_data_dir()
        if d is None:
            env = os.environ.get(DATA_ENV)
            where = f"${DATA_ENV}={env} holds no NoLoad.csv" if env else (
                f"no {DATA_RELDIR}/ next to the repository or the current directory and ${DATA_ENV} unset"
            )
            raise FileNotFoundError(f"STIFF-FLOP data not found: {where} ({DATA_SOURCE})")
        return name_or_path, d / f"{name_or_path}.csv"
    path = Path(os.fspath(name_or_path))
    if path.is_dir():
        raise FileNotFoundError(
            f"STIFF-FLOP recording: {path} is a directory (give one of {RECORDINGS} or a CSV path; "
            f"${DATA_ENV} names the directory of the three files)"
        )
    if not path.is_file():
        raise FileNotFoundError(
            f"STIFF-FLOP recording not found: {path} (give one of {RECORDINGS} or a CSV path; {DATA_SOURCE})"
        )
    return path.stem, path


def read_recording(name_or_path) -> Recording:
    """Read one recording (``"NoLoad"``, ``"Load1"``, ``"Load2"`` or a CSV path) and validate it:
    the columns named in the data README, finite numbers, uniform 0.05 s sampling from 0.

    Raises:
        FileNotFoundError: the data are not found (the message says where they were looked for).
        ValueError: a missing column, a non-number (file, line and column named), non-uniform time.
    """
    name, path = _resolve(name_or_path)
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            raise ValueError(f"{path}: empty file")
        rows = []
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(f"{path}:{line}: {len(row)} values, the header has {len(header)}")
            try:
                rows.append([float(x) for x in row])
            except ValueError:
                col = next(h for h, x in zip(header, row) if not _is_number(x))
                raise ValueError(f"{path}:{line}: column {col!r} is not a number") from None
    if not rows:
        raise ValueError(f"{path}: no data rows after the header (a truncated file? see the data README)")
    data = np.asarray(rows, dtype=float)
    col = {h: i for i, h in enumerate(header)}

    def take(names, required=True):
        missing = [n for n in names if n not in col]
        if missing:
            if required:
                raise ValueError(f"{path}: missing column(s) {missing} (see the data README)")
            return None
        return data[:, [col[n] for n in names]]

    times = take(["time_s"])[:, 0]
    pressures = take(["p0_Pa", "p1_Pa", "p2_Pa"])
    tip = take(["tip_x_m", "tip_y_m", "tip_z_m"])
    quat = take(["tip_qw", "tip_qx", "tip_qy", "tip_qz"])
    force = take(["f_x_N", "f_y_N", "f_z_N"], required=False)
    moment = take(["m_x_Nm", "m_y_Nm", "m_z_Nm"], required=False)
    if not np.all(np.isfinite(data)):
        r, c = np.argwhere(~np.isfinite(data))[0]
        raise ValueError(f"{path}:{r + 2}: column {header[c]!r} is not finite")
    if times.size < 2 or abs(times[0]) > 1e-9 or np.max(np.abs(np.diff(times) - SAMPLE_DT)) > 1e-6:
        raise ValueError(f"{path}: time_s must start at 0 and step by {SAMPLE_DT} s (the README's sampling)")
    return Recording(name, path, times, pressures, tip, quat, force, moment)


def _is_number(x) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def smooth_moving_average(x, span=10) -> np.ndarray:
    """MATLAB ``smooth(x, span, 'moving')`` along axis 0: a centred moving average over ``span``
    samples, lowered by one when even (so 9 for TMTDyn's 10), the window shrunk symmetrically
    near both ends (1, 3, 5, ... samples), as TMTDyn smooths pressures and tip loads."""
    x = np.asarray(x, dtype=float)
    if int(span) != span or span < 1:
        raise ValueError(f"smooth_moving_average: span must be a positive integer, got {span!r}")
    w = int(span) - (1 - int(span) % 2)  # odd
    h = w // 2
    n = x.shape[0]
    c = np.concatenate([np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0)])
    out = np.empty_like(x)
    for i in range(n):  # host-side preprocessing of ~1000 rows, not a hot path
        r = min(h, i, n - 1 - i)
        out[i] = (c[i + r + 1] - c[i - r]) / (2 * r + 1)
    return out



def trailing_moving_average(x, span=9) -> np.ndarray:
    """Causal moving average along axis 0: the mean of sample ``i`` and the ``span - 1`` before it
    (fewer at the start), so a smoothed input never depends on a later sample (the centred
    :func:`smooth_moving_average` gives a model a 0.2 s preview of every step at 20 Hz). It lags
    by ``(span - 1) / 2`` samples instead."""
    x = np.asarray(x, dtype=float)
    if int(span) != span or span < 1:
        raise ValueError(f"trailing_moving_average: span must be a positive integer, got {span!r}")
    c = np.concatenate([np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0)])
    i = np.arange(x.shape[0])
    lo = np.maximum(i + 1 - int(span), 0)
    return (c[i + 1] - c[lo]) / (i + 1 - lo).reshape(-1, *([1] * (x.ndim - 1)))

def tip_error(simulated, measured) -> tuple[float, float]:
    """TMTDyn's error: the mean over samples of ``|tip_sim - tip_exp|`` [m], and the same as a
    fraction of :data:`TIP_LENGTH` (0.0645 m). Both arrays ``(K, 3)`` [m]."""
    simulated, measured = np.asarray(simulated, float), np.asarray(measured, float)
    if simulated.shape != measured.shape or simulated.ndim != 2 or simulated.shape[1] != 3:
        raise ValueError(
            f"tip_error: simulated and measured must both be (K, 3), got {simulated.shape} and {measured.shape}"
        )
    e = float(np.mean(np.linalg.norm(simulated - measured, axis=1)))
    return e, e / TIP_LENGTH


def constant_shape_error(rec: Recording, rows) -> tuple[float, float]:
    """:func:`tip_error` of a model that never moves (the tip stays at its t = 0 position) over
    ``rows``: the baseline a fitted model's held-out error is compared with."""
    rows = np.asarray(rows)
    return tip_error(np.broadcast_to(rec.tip[0], (rows.size, 3)), rec.tip[rows])
