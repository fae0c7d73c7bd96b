"""Typed reading of one TOML table, with messages that name the file, the table and the key.

:class:`Table` wraps a parsed TOML table: each ``number``/``vector``/``string``... call reads one
key, checks its type, shape and range and converts units; :meth:`Table.finish` then rejects every
key that was not read (suggesting the closest valid one). Pure Python: nothing here imports JAX,
so a bad file is reported in the time it takes to parse it.

Units: every number is SI (the unit each key expects is stated in its messages and in docs/modelfiles.md).
A number may also be written as a string with a unit, ``"270 mm"``, ``"5 g"``, ``"30 deg"``; the
unit must measure the same quantity as the key's SI unit (:data:`UNITS`).
"""

from __future__ import annotations

import math
import re

from .errors import ModelFileError, closest

__all__ = ["REQUIRED", "Signal", "Table", "UNITS"]

#: SI unit of a key -> accepted unit strings and their factor to that SI unit.
UNITS = {
    "m": {"m": 1.0, "cm": 1e-2, "mm": 1e-3, "um": 1e-6},
    "kg": {"kg": 1.0, "g": 1e-3},
    "s": {"s": 1.0, "ms": 1e-3, "us": 1e-6},
    "Pa": {"Pa": 1.0, "kPa": 1e3, "MPa": 1e6, "GPa": 1e9},
    "rad": {"rad": 1.0, "deg": math.pi / 180},
    "N": {"N": 1.0, "mN": 1e-3, "kN": 1e3},
    "kg/m^3": {"kg/m^3": 1.0, "g/cm^3": 1e3},
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S+)\s*$")


class _Required:
    def __repr__(self):
        return "REQUIRED"


#: default meaning "the key must be given"
REQUIRED = _Required()


def _type_name(v):
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)


class Signal:
    """A time signal read from a model file: samples ``times`` [s] and ``values`` (the key's
    unit), from an inline table or a CSV file; built into a JAX signal when the model is built
    (:func:`~jaxrod.modelfile.mechanism.build_signal`)."""

    def __init__(self, times, values, source):
        self.times, self.values, self.source = list(times), list(values), source

    def __repr__(self):
        return f"Signal({len(self.times)} samples from {self.source})"


class Table:
    """One TOML table at dotted location ``where`` of file ``path``.

    Every reader takes the key, what it must be, and ``default`` (``REQUIRED``: the key must be
    present). Values come back as Python floats, lists of floats, strings, ints or :class:`Table`.
    """

    def __init__(self, path, where, data):
        self.path, self.where, self.used = str(path), where, set()
        if not isinstance(data, dict):
            raise ModelFileError(path, where, f"expected a table, got {_type_name(data)} {data!r}")
        self.data = data

    # ---- plumbing --------------------------------------------------------------------------------
    def at(self, key):
        return f"{self.where}.{key}" if self.where else str(key)

    def error(self, key, problem):
        return ModelFileError(self.path, self.at(key) if key is not None else self.where, problem)

    def __contains__(self, key):
        return key in self.data

    def keys(self):
        return list(self.data)

    def _get(self, key, default, what):
        self.used.add(key)
        if key in self.data:
            return self.data[key], True
        if default is REQUIRED:
            raise self.error(key, f"missing required key: expected {what}")
        return default, False

    def finish(self, allowed=None):
        """Reject the keys not read (nor in ``allowed``), suggesting the closest valid key."""
        valid = set(self.used) | set(allowed or ())
        for key in self.data:
            if key not in valid:
                raise self.error(key, f"unknown key{closest(key, valid)}; valid keys here: {', '.join(sorted(valid))}")

    # ---- scalars ------------------------------------------------------------------------------------
    def _to_float(self, key, v, unit, what):
        if isinstance(v, str) and unit is not None:
            m = _QUANTITY.match(v)
            scale = UNITS.get(unit, {unit: 1.0})
            if not m or m.group(2) not in scale:
                raise self.error(key, f"expected {what}, got {v!r} (units accepted here: {', '.join(scale)})")
            return float(m.group(1)) * scale[m.group(2)]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(key, f"expected {what}, got {_type_name(v)} {v!r}")
        return float(v)

    def number(self, key, unit, default=REQUIRED, *, positive=False, nonnegative=False, between=None):
        """A finite number [``unit``] (``positive``: > 0; ``nonnegative``: >= 0; ``between=(lo, hi)``)."""
        kind = "a positive number" if positive else "a number >= 0" if nonnegative else "a number"
        if between is not None:
            kind = f"a number in [{between[0]}, {between[1]}]"
        what = f"{kind} in {unit}" if unit else kind
        v, given = self._get(key, default, what)
        if not given:
            return v
        x = self._to_float(key, v, unit, what)
        bad = (not math.isfinite(x) or (positive and x <= 0) or (nonnegative and x < 0)
               or (between is not None and not between[0] <= x <= between[1]))
        if bad:
            raise self.error(key, f"expected {what}, got {v!r}")
        return x

    def signal(self, key, unit, default=REQUIRED):
        """A time signal: a number (constant), ``{ times = [...], values = [...] }`` (times [s],
        strictly increasing; values in ``unit``, unit strings allowed) or ``{ csv = "FILE",
        time = "COLUMN", value = "COLUMN" }`` (a CSV file with a header row, relative to the model
        file; times in s, values in ``unit``). Returns a :class:`Signal` (or ``default``)."""
        what = (f"a number in {unit or '(no unit)'}, {{ times = [...], values = [...] }} or "
                "{ csv = \"FILE\", time = \"COLUMN\", value = \"COLUMN\" }")
        v, given = self._get(key, default, what)
        if not given:
            return v
        if not isinstance(v, dict):
            return Signal([0.0], [self._to_float(key, v, unit, what)], "a constant")
        sub = Table(self.path, self.at(key), v)
        if "csv" in sub:
            times, values, source = self._csv_signal(sub, unit)
        else:
            times = [sub._to_float("times", x, "s", "a time in s") for x in sub._list("times")]
            values = [sub._to_float("values", x, unit, f"a number in {unit}") for x in sub._list("values")]
            source = "inline samples"
            if len(values) != len(times):
                raise sub.error("values", f"expected {len(times)} values (one per time), got {len(values)}")
        sub.finish()
        if not times or any(b <= a for a, b in zip(times, times[1:])) or not all(map(math.isfinite, times + values)):
            raise sub.error("times", f"expected >= 1 finite, strictly increasing times [s] with finite values, from "
                                     f"{source}")
        return Signal(times, values, source)

    def _list(self, key):
        v, _ = self._get(key, REQUIRED, "an array of numbers")
        if not isinstance(v, list):
            raise self.error(key, f"expected an array of numbers, got {_type_name(v)} {v!r}")
        return v

    def _csv_signal(self, sub, unit):
        import csv
        from pathlib import Path

        name = sub.string("csv")
        file = Path(self.path).parent / name
        tcol, vcol = sub.string("time", "t"), sub.string("value", "value")
        try:
            with open(file, newline="") as f:
                rows = list(csv.DictReader(f))
        except OSError as e:
            raise sub.error("csv", f"cannot read {str(file)!r}: {e.strerror or e}") from None
        if not rows:
            raise sub.error("csv", f"{str(file)!r} has no data rows (a header row, then one row per sample)")
        for col, key in ((tcol, "time"), (vcol, "value")):
            if col not in rows[0]:
                raise sub.error(key, f"no column {col!r} in {str(file)!r}{closest(col, rows[0])}; columns: "
                                     f"{', '.join(rows[0])}")
        out = ([], [])
        for i, row in enumerate(rows, start=2):
            for col, dest in ((tcol, out[0]), (vcol, out[1])):
                try:
                    dest.append(float(row[col]))
                except (TypeError, ValueError):
                    raise sub.error("csv", f"{str(file)!r} line {i}, column {col!r}: expected a number, got "
                                           f"{row[col]!r}") from None
        return out[0], out[1], f"{name} ({vcol} vs {tcol})"  # SI: s and the key's unit

    def integer(self, key, default=REQUIRED, *, minimum=None):
        what = "an integer" + (f" >= {minimum}" if minimum is not None else "")
        v, given = self._get(key, default, what)
        if not given:
            return v
        if isinstance(v, bool) or not isinstance(v, int) or (minimum is not None and v < minimum):
            raise self.error(key, f"expected {what}, got {v!r}")
        return v

    def boolean(self, key, default=REQUIRED):
        v, given = self._get(key, default, "true or false")
        if given and not isinstance(v, bool):
            raise self.error(key, f"expected true or false, got {v!r}")
        return v

    def string(self, key, default=REQUIRED, *, choices=None):
        what = f"one of {', '.join(repr(c) for c in choices)}" if choices else "a string"
        v, given = self._get(key, default, what)
        if not given:
            return v
        if not isinstance(v, str) or (choices is not None and v not in choices):
            hint = closest(v, choices) if choices and isinstance(v, str) else ""
            raise self.error(key, f"expected {what}, got {v!r}{hint}")
        return v

    # ---- arrays ---------------------------------------------------------------------------------
    def vector(self, key, size, unit, default=REQUIRED, *, nonzero=False):
        """``size`` finite numbers [``unit``] (a list; each may carry a unit string)."""
        what = f"{size} numbers" + (f" in {unit}" if unit else "") + (", not all zero" if nonzero else "")
        v, given = self._get(key, default, what)
        if not given:
            return v
        if not isinstance(v, list) or len(v) != size:
            shape = f"{len(v)} values" if isinstance(v, list) else f"{_type_name(v)} {v!r}"
            raise self.error(key, f"expected {what}, got {shape}")
        x = [self._to_float(key, e, unit, what) for e in v]
        if not all(math.isfinite(e) for e in x) or (nonzero and not any(x)):
            raise self.error(key, f"expected {what}, got {v!r}")
        return x

    def matrix(self, key, rows, cols, unit, default=REQUIRED):
        """A ``rows x cols`` array (list of rows) of finite numbers [``unit``]."""
        what = f"a {rows} x {cols} array (a list of {rows} rows of {cols} numbers)" + (f" in {unit}" if unit else "")
        v, given = self._get(key, default, what)
        if not given:
            return v
        if not isinstance(v, list) or len(v) != rows or not all(isinstance(r, list) and len(r) == cols for r in v):
            raise self.error(key, f"expected {what}, got {v!r}")
        out = [[self._to_float(key, e, unit, what) for e in r] for r in v]
        if not all(math.isfinite(e) for r in out for e in r):
            raise self.error(key, f"expected {what}, got {v!r}")
        return out

    def points(self, key, unit, default=REQUIRED, *, minimum=2):
        """A list of at least ``minimum`` 3-D points [``unit``]."""
        what = f"a list of at least {minimum} points [x, y, z] in {unit}"
        v, given = self._get(key, default, what)
        if not given:
            return v
        if not isinstance(v, list) or len(v) < minimum or not all(isinstance(p, list) and len(p) == 3 for p in v):
            raise self.error(key, f"expected {what}, got {v!r}"[:400])
        out = [[self._to_float(key, e, unit, what) for e in p] for p in v]
        if not all(math.isfinite(e) for p in out for e in p):
            raise self.error(key, f"expected {what} (finite)")
        return out

    # ---- nesting --------------------------------------------------------------------------------
    def table(self, key, default=REQUIRED):
        """Sub-table ``key`` as a :class:`Table` (``default`` ``None``: absent -> ``None``)."""
        v, given = self._get(key, default, "a table")
        if not given:
            return v if v is None else Table(self.path, self.at(key), v)
        return Table(self.path, self.at(key), v)

    def tables(self):
        """The named sub-tables ``[where.NAME]`` in file order: ``[(name, Table)]``."""
        out = []
        for name, v in self.data.items():
            self.used.add(name)
            out.append((name, Table(self.path, self.at(name), v)))
        return out

    def raw(self, key, default=REQUIRED):
        """The value as parsed (for keys another builder validates, e.g. a scene's overrides)."""
        return self._get(key, default, "a value")[0]
