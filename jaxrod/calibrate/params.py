"""Named parameter sets with transforms to an unconstrained vector (what optimisers see).

A :class:`Parameter` is a named physical quantity (scalar or array, SI units) with

* a :class:`Transform` from an unconstrained value ``u`` (any real) to the physical value ``p``:
  :class:`Identity` (``p = scale u``), :class:`Log` (``p = scale exp(u)``, strictly positive) or
  :class:`Bounded` (``p = lo + (hi - lo) sigmoid(u)``, inside ``(lo, hi)``);
* ``fixed=True`` to keep it at its value (it then has no entry in the vector);
* ``where``: a function ``model -> leaf`` (or a tuple of leaves) naming where it lives in a model,
  as in :func:`equinox.tree_at`, and optionally ``to_leaf(value, model) -> leaf value`` (default:
  the value broadcast to the leaf's shape), e.g. a bending stiffness ``EI`` [N m^2] written as
  ``youngs_modulus = EI / I``.

A :class:`ParamSet` packs the free parameters into one flat vector ``theta`` and back::

    ps = ParamSet([
        Parameter("EI", 0.05, Log(), where=lambda m: m.rod.youngs_modulus,
                  to_leaf=lambda EI, m: EI / m.rod.second_moments[0], unit="N m^2"),
        Parameter("C", 2e-3, Log(), where=lambda m: m.rod.drag, unit="kg/m^2"),
    ])
    theta = ps.to_vector()              # (n_free,) unconstrained
    values = ps.from_vector(theta)      # {"EI": ..., "C": ...} physical (fixed ones included)
    model = ps.apply(model0, values)    # eqx.tree_at on every ``where``

Everything is differentiable with JAX; ``to_vector`` / ``from_vector`` are exact inverses up to
rounding (a :class:`Bounded` value saturates at ``lo``/``hi`` for ``|u|`` above ~37).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Bounded", "Identity", "Log", "ParamSet", "Parameter", "Transform"]


class Transform(eqx.Module):
    """Map between an unconstrained value ``u`` and a physical value ``p`` (elementwise)."""

    @abc.abstractmethod
    def forward(self, u):
        """``p(u)``."""

    @abc.abstractmethod
    def inverse(self, p):
        """``u(p)``; raises ``ValueError`` (eagerly) for values outside the domain."""

    def derivative(self, u):
        """``dp/du`` (elementwise), used to convert sensitivities to physical units."""
        u = jnp.asarray(u, dtype=float)
        return jax.vmap(jax.grad(lambda x: self.forward(x)))(u.ravel()).reshape(u.shape)

    def describe(self) -> str:
        return type(self).__name__.lower()


class Identity(Transform):
    """``p = scale * u`` (no constraint; ``scale`` [units of p] sets the optimiser's step size)."""

    scale: float = 1.0

    def __check_init__(self):
        if not (np.isfinite(self.scale) and self.scale > 0):
            raise ValueError(
                f"Identity.scale must be a finite number > 0, got {self.scale}"
            )

    def forward(self, u):
        return self.scale * jnp.asarray(u, dtype=float)

    def inverse(self, p):
        p = jnp.asarray(p, dtype=float)
        _check_finite("value", p)
        return p / self.scale

    def derivative(self, u):
        return jnp.full(jnp.shape(u), self.scale, dtype=float)

    def describe(self) -> str:
        return "identity" if self.scale == 1.0 else f"identity (scale {self.scale:g})"


class Log(Transform):
    """``p = scale * exp(u)``: strictly positive values; ``u`` is a relative (log) change."""

    scale: float = 1.0

    def __check_init__(self):
        if not (np.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"Log.scale must be a finite number > 0, got {self.scale}")

    def forward(self, u):
        return self.scale * jnp.exp(jnp.asarray(u, dtype=float))

    def inverse(self, p):
        p = jnp.asarray(p, dtype=float)
        if not _traced(p) and not np.all(np.asarray(p) > 0):
            raise ValueError(
                f"a Log-transformed parameter must be > 0, got {np.asarray(p)}"
            )
        return jnp.log(p / self.scale)

    def derivative(self, u):
        return self.forward(u)

    def describe(self) -> str:
        return "log"


class Bounded(Transform):
    """``p = lo + (hi - lo) * sigmoid(u)``: values in the open interval ``(lo, hi)``."""

    lo: float
    hi: float

    def __check_init__(self):
        if not (np.isfinite(self.lo) and np.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(
                f"Bounded needs finite lo < hi, got lo={self.lo}, hi={self.hi}"
            )

    def forward(self, u):
        return self.lo + (self.hi - self.lo) * jax.nn.sigmoid(
            jnp.asarray(u, dtype=float)
        )

    def inverse(self, p):
        p = jnp.asarray(p, dtype=float)
        if not _traced(p):
            a = np.asarray(p)
            if not np.all((a > self.lo) & (a < self.hi)):
                raise ValueError(
                    f"a Bounded({self.lo:g}, {self.hi:g}) parameter must lie strictly inside "
                    f"({self.lo:g}, {self.hi:g}), got {a}"
                )
        x = (p - self.lo) / (self.hi - self.lo)
        return jnp.log(x) - jnp.log1p(-x)

    def derivative(self, u):
        s = jax.nn.sigmoid(jnp.asarray(u, dtype=float))
        return (self.hi - self.lo) * s * (1.0 - s)

    def describe(self) -> str:
        return f"bounded ({self.lo:g}, {self.hi:g})"


def _traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_finite(name, p):
    if not _traced(p) and not np.all(np.isfinite(np.asarray(p))):
        raise ValueError(f"{name} must be finite, got {np.asarray(p)}")


@dataclass(frozen=True)
class Parameter:
    """One named parameter.

    Attributes:
        name: unique name (used in reports and as the key of value dicts).
        value: initial (or fixed) physical value, scalar or array, in ``unit``.
        transform: :class:`Transform` (default :class:`Log`: positive).
        where: ``model -> leaf`` (or tuple of leaves) for :meth:`ParamSet.apply`; ``None`` when
            the parameter is not written into a model (used by the residual function directly).
        to_leaf: ``(value, model) -> leaf value`` (same structure as ``where``); default: the value
            broadcast to the leaf's shape.
        fixed: keep the value; the parameter then has no entry in the unconstrained vector.
        unit: unit string for reports, e.g. ``"N m^2"``.
    """

    name: str
    value: object
    transform: Transform = field(default_factory=Log)
    where: Callable | None = None
    to_leaf: Callable | None = None
    fixed: bool = False
    unit: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(
                f"Parameter.name must be a non-empty string, got {self.name!r}"
            )
        if not isinstance(self.transform, Transform):
            raise TypeError(
                f"Parameter {self.name!r}: transform must be a Transform, got {type(self.transform).__name__}"
            )
        v = np.asarray(self.value, dtype=float)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"Parameter {self.name!r}: value must be finite, got {v}")
        if not self.fixed:
            self.transform.inverse(v)  # raises if outside the transform's domain

    @property
    def shape(self) -> tuple:
        return np.shape(self.value)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=int))


class ParamSet:
    """An ordered set of :class:`Parameter` s and the flat unconstrained vector of the free ones.

    Arguments:
        parameters: sequence of :class:`Parameter` (unique names).

    Raises:
        ValueError: duplicate names or no free parameter.
    """

    def __init__(self, parameters: Sequence[Parameter]):
        if isinstance(parameters, (str, Parameter)) or not isinstance(parameters, Iterable):
            raise TypeError(f"ParamSet takes a sequence of Parameter objects, got {parameters!r}")
        parameters = tuple(parameters)
        for k, p in enumerate(parameters):
            if not isinstance(p, Parameter):
                raise TypeError(
                    f"ParamSet parameters[{k}] must be a Parameter (e.g. Parameter('E', 1e6)), "
                    f"got {p!r} ({type(p).__name__})"
                )
        names = [p.name for p in parameters]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"ParamSet: duplicate parameter names {dup}")
        if not any(not p.fixed for p in parameters):
            raise ValueError("ParamSet: every parameter is fixed; nothing to fit")
        self.parameters = parameters

    # ---- bookkeeping ------------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """All parameter names (fixed ones included)."""
        return tuple(p.name for p in self.parameters)

    @property
    def free(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if not p.fixed)

    @property
    def size(self) -> int:
        """Length of the unconstrained vector."""
        return sum(p.size for p in self.free)

    def labels(self) -> list[str]:
        """One label per entry of the unconstrained vector (``name`` or ``name[i]``)."""
        out = []
        for p in self.free:
            if p.shape == ():
                out.append(p.name)
            else:
                out.extend(
                    f"{p.name}[{','.join(map(str, idx))}]"
                    for idx in np.ndindex(*p.shape)
                )
        return out

    def __getitem__(self, name) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(f"no parameter named {name!r}; have {list(self.names)}")

    def initial_values(self) -> dict:
        return {p.name: jnp.asarray(p.value, dtype=float) for p in self.parameters}

    def with_values(self, values: Mapping) -> ParamSet:
        """A copy with new initial values (``{name: value}``, others unchanged)."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise KeyError(
                f"unknown parameter names {sorted(unknown)}; have {list(self.names)}"
            )
        new = []
        for p in self.parameters:
            if p.name in values:
                p = Parameter(
                    p.name,
                    np.asarray(values[p.name], dtype=float),
                    p.transform,
                    p.where,
                    p.to_leaf,
                    p.fixed,
                    p.unit,
                )
            new.append(p)
        return ParamSet(new)

    # ---- vector <-> values ------------------------------------------------------------------------
    def to_vector(self, values: Mapping | None = None):
        """``(size,)`` unconstrained vector of the free parameters at ``values`` (default: the
        initial values); raises ``ValueError`` for a value outside its transform's domain."""
        values = self.initial_values() if values is None else values
        parts = []
        for p in self.free:
            v = jnp.asarray(values[p.name], dtype=float)
            if v.shape != p.shape:
                raise ValueError(
                    f"parameter {p.name!r} must have shape {p.shape}, got {v.shape}"
                )
            parts.append(jnp.ravel(p.transform.inverse(v)))
        return jnp.concatenate(parts)

    def from_vector(self, theta) -> dict:
        """``{name: physical value}`` for all parameters from the unconstrained ``theta (size,)``."""
        theta = jnp.asarray(theta, dtype=float)
        if theta.shape != (self.size,):
            raise ValueError(f"theta must have shape ({self.size},), got {theta.shape}")
        out, k = {}, 0
        for p in self.parameters:
            if p.fixed:
                out[p.name] = jnp.asarray(p.value, dtype=float)
                continue
            out[p.name] = p.transform.forward(theta[k : k + p.size].reshape(p.shape))
            k += p.size
        return out

    def derivative(self, theta):
        """``(size,)`` elementwise ``d value / d theta`` (for converting sensitivities)."""
        theta = jnp.asarray(theta, dtype=float)
        parts, k = [], 0
        for p in self.free:
            parts.append(
                jnp.ravel(
                    p.transform.derivative(theta[k : k + p.size].reshape(p.shape))
                )
            )
            k += p.size
        return jnp.concatenate(parts)

    def flat_values(self, values: Mapping) -> np.ndarray:
        """``(size,)`` physical values of the free parameters (same order as :meth:`labels`)."""
        return np.concatenate(
            [np.ravel(np.asarray(values[p.name], dtype=float)) for p in self.free]
        )

    # ---- models ---------------------------------------------------------------------------------
    def apply(self, model, values: Mapping):
        """``model`` with every parameter that has a ``where`` written in (``eqx.tree_at``)."""
        for p in self.parameters:
            if p.where is None:
                continue
            v = jnp.asarray(values[p.name], dtype=float)
            leaf = p.where(model)
            if p.to_leaf is not None:
                new = p.to_leaf(v, model)
            elif isinstance(leaf, tuple):
                new = tuple(
                    jnp.broadcast_to(v, jnp.shape(x)).astype(float) for x in leaf
                )
            else:
                new = jnp.broadcast_to(v, jnp.shape(leaf)).astype(float)
            model = eqx.tree_at(p.where, model, new)
        return model

    def describe(self, values: Mapping | None = None) -> str:
        """A small table: name, value, unit, transform."""
        values = self.initial_values() if values is None else values
        lines = []
        for p in self.parameters:
            v = np.asarray(values[p.name])
            vs = f"{float(v):.6g}" if v.shape == () else np.array2string(v, precision=4)
            tr = "fixed" if p.fixed else p.transform.describe()
            lines.append(f"  {p.name:<12s} {vs:>14s} {p.unit:<10s} {tr}")
        return "\n".join(lines)
