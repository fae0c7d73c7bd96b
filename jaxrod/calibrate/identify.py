"""Identifiability from the Gauss-Newton (Fisher) matrix of a least-squares fit.

Near a fit, residuals ``r(theta) ~ r0 + J dtheta`` with ``J = d r / d theta`` (one forward-mode
``jax.jacfwd``, see :meth:`~jaxrod.calibrate.fit.Objective.residuals_and_jacobian`). With
independent measurement errors of standard deviation ``sigma`` (in residual units) the estimate's
covariance is ``sigma^2 (J^T J)^-1``; ``sigma`` is estimated from the residuals,
``sigma^2 = sum r^2 / (m - n)`` over the ``m`` measured entries, unless it is given.

Reported (:class:`IdentifiabilityReport`):

* the Fisher matrix ``J^T J`` in the requested units: ``"log"`` (per relative change, ``d r / d
  log p``; default), ``"physical"`` (``d r / d p``) or ``"unconstrained"`` (``d r / d theta``);
* standard errors in physical units and relative to the values;
* the correlation matrix of the estimates (the same in every unit system);
* the condition number of the Fisher matrix scaled to unit diagonal (unit free: it is large only
  when some combination of parameters barely changes the residuals; for two parameters it is
  ``(1 + |c|) / (1 - |c|)`` with ``c`` their correlation) and the direction of least information;
* flags: pairs with ``|correlation| > corr_threshold`` (default 0.95), a condition number above
  ``cond_threshold`` (default 1e4), and parameters the residuals do not depend on at all.

Example: a static cantilever shape under its own weight depends on ``rho A g / EI`` only, so EI
and rho are perfectly correlated: the report flags the pair and names the blind direction
``(d log EI, d log rho) = (+0.707, +0.707)`` (scaling both together changes nothing). Adding the
shape under a known tip weight separates them. Note that a high correlation is not the same as a
large error: in the weight-release tip trace EI and rho are correlated at ~0.997 (the frequency
fixes EI / rho much better than the initial deflection fixes EI), so the 0.95 rule flags them,
yet both are determined to ~0.03%; read the standard errors alongside the correlations.

The matrix is the plain least-squares Gauss-Newton matrix; for a robust (Huber/Cauchy) fit it
describes the inliers only approximately.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

__all__ = [
    "IdentifiabilityReport",
    "IdentifiabilityWarning",
    "identify",
    "identify_from_jacobian",
]


class IdentifiabilityWarning(UserWarning):
    """Some parameters cannot be told apart by the data (see :class:`IdentifiabilityReport`)."""


@dataclass
class IdentifiabilityReport:
    """Identifiability of a fit (see the module docstring).

    Attributes:
        labels: ``(n,)`` names of the free parameter entries.
        values: ``(n,)`` physical values.
        units: ``"log"``, ``"physical"`` or ``"unconstrained"`` (of ``fisher``).
        fisher: ``(n, n)`` ``J^T J`` in ``units`` (residual units squared per unit).
        std_errors: ``(n,)`` standard errors in physical units (``inf`` where not identifiable).
        relative_std_errors: ``(n,)`` ``std_errors / |values|``.
        correlation: ``(n, n)`` correlation matrix of the estimates.
        condition_number: of the unit-diagonal Fisher matrix.
        noise: standard deviation of the residuals used (estimated unless given), residual units.
        n_residuals: number of measured residuals ``m``.
        flagged_pairs: ``[(label_a, label_b, correlation)]`` with ``|correlation| > corr_threshold``.
        weakest_direction: ``{label: coefficient}`` unit vector (in ``log`` units where possible) of
            the least-informed combination, given when the condition number exceeds the threshold.
        insensitive: labels of parameters the residuals do not depend on.
        warnings: human-readable findings (empty when everything is identifiable).
    """

    labels: list
    values: np.ndarray
    units: str
    fisher: np.ndarray
    std_errors: np.ndarray
    relative_std_errors: np.ndarray
    correlation: np.ndarray
    condition_number: float
    noise: float
    n_residuals: int
    flagged_pairs: list = field(default_factory=list)
    weakest_direction: dict | None = None
    insensitive: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    corr_threshold: float = 0.95
    cond_threshold: float = 1e4

    @property
    def identifiable(self) -> bool:
        """``True`` when nothing was flagged."""
        return not self.warnings

    def is_flagged(self, a: str, b: str) -> bool:
        """Whether the pair ``(a, b)`` is flagged as highly correlated."""
        return any({a, b} == {x, y} for x, y, _ in self.flagged_pairs)

    def summary(self) -> str:
        n = len(self.labels)
        w = max(8, *(len(s) for s in self.labels))
        lines = [
            (
                f"identifiability (Gauss-Newton / Fisher, {self.n_residuals} residuals, noise sigma "
                f"{self.noise:.4g} residual units, condition number {self.condition_number:.3g}):"
            ),
            f"  {'parameter':<{w}s} {'value':>12s} {'std error':>12s} {'rel.':>9s}",
        ]
        for i in range(n):
            lines.append(
                f"  {self.labels[i]:<{w}s} {self.values[i]:12.6g} {self.std_errors[i]:12.4g} "
                f"{100 * self.relative_std_errors[i]:8.3g}%"
            )
        if n > 1:
            lines.append("  correlation:")
            lines.append("  " + " " * w + "".join(f" {s[:9]:>9s}" for s in self.labels))
            for i in range(n):
                lines.append(
                    f"  {self.labels[i]:<{w}s}"
                    + "".join(f" {self.correlation[i, j]:+9.4f}" for j in range(n))
                )
        if self.warnings:
            lines.extend(f"  WARNING: {m}" for m in self.warnings)
        else:
            lines.append(
                f"  all parameters identifiable (|corr| <= {self.corr_threshold:g}, "
                f"condition number <= {self.cond_threshold:g})"
            )
        return "\n".join(lines)


def _pct(x) -> str:
    return f"{100 * x:.3g}%" if np.isfinite(x) else "inf"


def identify_from_jacobian(
    J,
    r=None,
    mask=None,
    *,
    labels=None,
    values=None,
    derivative=None,
    units: str = "log",
    noise=None,
    corr_threshold: float = 0.95,
    cond_threshold: float = 1e4,
    warn: bool = True,
) -> IdentifiabilityReport:
    """Identifiability from a residual Jacobian.

    Arguments:
        J: ``(m, n)`` ``d r / d theta`` in unconstrained coordinates (rows of unmeasured entries
            are ignored via ``mask``).
        r: ``(m,)`` residuals at the estimate (for the noise estimate; needed unless ``noise`` is given).
        mask: ``(m,)`` bool, measured entries.
        labels, values: ``(n,)`` names and physical values.
        derivative: ``(n,)`` ``d value / d theta`` (1 when ``J`` is already in physical units).
        units: ``"log"``, ``"physical"`` or ``"unconstrained"``, the units of the reported Fisher matrix.
        noise: residual standard deviation (residual units); estimated from ``r`` if ``None``.
        corr_threshold, cond_threshold: flagging thresholds.
        warn: issue an :class:`IdentifiabilityWarning` for flagged findings.
    """
    J = np.asarray(J, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"J must have shape (m, n), got {J.shape}")
    m_all, n = J.shape
    mask = np.ones(m_all, bool) if mask is None else np.asarray(mask, bool).reshape(-1)
    if mask.shape != (m_all,):
        raise ValueError(f"mask must have shape ({m_all},), got {mask.shape}")
    J = J[mask]
    m = J.shape[0]
    labels = [f"theta[{i}]" for i in range(n)] if labels is None else list(labels)
    values = (
        np.full(n, np.nan)
        if values is None
        else np.asarray(values, dtype=float).reshape(-1)
    )
    dp = (
        np.ones(n)
        if derivative is None
        else np.asarray(derivative, dtype=float).reshape(-1)
    )
    if len(labels) != n or values.shape != (n,) or dp.shape != (n,):
        raise ValueError(
            f"labels, values and derivative need {n} entries (columns of J)"
        )
    if units not in ("log", "physical", "unconstrained"):
        raise ValueError(
            f"units must be 'log', 'physical' or 'unconstrained', got {units!r}"
        )
    if noise is None:
        if r is None:
            raise ValueError("give the residuals r (for the noise estimate) or noise=")
        rr = np.asarray(r, dtype=float).reshape(-1)[mask]
        dof = max(m - n, 1)
        noise = float(np.sqrt(np.sum(rr**2) / dof))
    noise = float(noise)

    # sensitivities in physical units: dr/dp = dr/dtheta / (dp/dtheta)
    with np.errstate(divide="ignore", invalid="ignore"):
        J_phys = J / dp[None, :]
    if units == "unconstrained":
        J_u, to_phys = J, dp  # d p = dp * d theta
    elif units == "physical":
        J_u, to_phys = J_phys, np.ones(n)
    else:
        if np.any(values == 0) or not np.all(np.isfinite(values)):
            raise ValueError(
                "units='log' needs finite non-zero values; use units='physical'"
            )
        # d p = |p| d log p
        J_u, to_phys = J_phys * np.abs(values)[None, :], np.abs(values)
    F = J_u.T @ J_u

    d = np.diag(F).copy()
    scale_ok = d > 1e-300 * max(1.0, float(np.max(d)) if d.size else 1.0)
    insensitive = [labels[i] for i in range(n) if not scale_ok[i]]
    idx = np.flatnonzero(scale_ok)
    corr = np.full((n, n), np.nan)
    cov_u = np.full((n, n), np.nan)
    cond = np.inf if insensitive else 1.0
    weakest = None
    if idx.size:
        s = np.sqrt(d[idx])
        Fn = F[np.ix_(idx, idx)] / np.outer(s, s)
        lam, V = np.linalg.eigh(0.5 * (Fn + Fn.T))
        lam_max = float(lam[-1])
        lam_floor = lam_max * 1e-15
        cond_i = lam_max / max(float(lam[0]), lam_floor) if lam_max > 0 else np.inf
        cond = max(cond, cond_i) if not insensitive else np.inf
        Fn_inv = (V / np.maximum(lam, lam_floor)) @ V.T
        cov_u[np.ix_(idx, idx)] = noise**2 * Fn_inv / np.outer(s, s)
        ci = Fn_inv / np.sqrt(np.outer(np.diag(Fn_inv), np.diag(Fn_inv)))
        corr[np.ix_(idx, idx)] = np.clip(ci, -1.0, 1.0)
        if cond_i > cond_threshold:
            v = V[:, 0] / s  # back to the (unscaled) units of F
            v = v / np.linalg.norm(v)
            if v[np.argmax(np.abs(v))] < 0:
                v = -v
            weakest = {labels[i]: float(c) for i, c in zip(idx, v)}
    var_u = np.diag(cov_u)
    se = np.where(np.isfinite(var_u), np.sqrt(np.abs(var_u)), np.inf) * to_phys
    se[~scale_ok] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = se / np.abs(values)

    rel_i = np.asarray(rel, dtype=float)
    pairs, msgs = [], []
    for i in range(n):
        for j in range(i + 1, n):
            c = corr[i, j]
            if np.isfinite(c) and abs(c) > corr_threshold:
                pairs.append((labels[i], labels[j], float(c)))
                msgs.append(
                    f"{labels[i]} and {labels[j]} are highly correlated (corr {c:+.4f}, |corr| > "
                    f"{corr_threshold:g}): the data determine mainly a combination of them "
                    f"(relative std errors {_pct(rel_i[i])} and {_pct(rel_i[j])})"
                )
    if insensitive:
        msgs.append(
            f"the residuals do not depend on {insensitive}: these parameters are not identifiable"
        )
    if np.isfinite(cond) and cond > cond_threshold:
        pre = "d log " if units == "log" else "d "
        names = ", ".join(f"{pre}{k}" for k in (weakest or {}))
        coefs = ", ".join(f"{c:+.3f}" for c in (weakest or {}).values())
        msgs.append(
            f"condition number {cond:.3g} > {cond_threshold:g}: the data barely constrain "
            f"moves along ({names}) = ({coefs})"
        )
    rep = IdentifiabilityReport(
        labels=labels,
        values=values,
        units=units,
        fisher=F,
        std_errors=se,
        relative_std_errors=rel,
        correlation=corr,
        condition_number=float(cond),
        noise=noise,
        n_residuals=int(m),
        flagged_pairs=pairs,
        weakest_direction=weakest,
        insensitive=insensitive,
        warnings=msgs,
        corr_threshold=corr_threshold,
        cond_threshold=cond_threshold,
    )
    if warn and msgs:
        warnings.warn("; ".join(msgs), IdentifiabilityWarning, stacklevel=2)
    return rep


def identify(
    objective,
    at=None,
    *,
    data=None,
    units: str = "log",
    noise=None,
    corr_threshold: float = 0.95,
    cond_threshold: float = 1e4,
    warn: bool = True,
) -> IdentifiabilityReport:
    """Identifiability of ``objective``'s parameters at ``at``.

    Arguments:
        objective: a :class:`~jaxrod.calibrate.fit.Objective` with residuals (its compiled
            forward-mode program is reused: no new compilation after a forward-mode fit).
        at: a :class:`~jaxrod.calibrate.fit.FitReport`, a dict of physical values, an unconstrained
            vector, or ``None`` (the parameters' initial values).
        data: data pytree (default ``objective.data``).
        units, noise, corr_threshold, cond_threshold, warn: see :func:`identify_from_jacobian`.
    """
    ps = objective.params
    if at is None:
        theta = np.asarray(ps.to_vector())
    elif hasattr(at, "theta"):
        theta = np.asarray(at.theta)
    elif isinstance(at, Mapping):
        vals = ps.initial_values()
        vals.update({k: jnp.asarray(v, dtype=float) for k, v in at.items()})
        theta = np.asarray(ps.to_vector(vals))
    else:
        theta = np.asarray(at, dtype=float)
    r, mask, J = objective.residuals_and_jacobian(theta, data)
    values = ps.flat_values(ps.from_vector(jnp.asarray(theta)))
    return identify_from_jacobian(
        J,
        r,
        mask,
        labels=ps.labels(),
        values=values,
        derivative=np.asarray(ps.derivative(theta)),
        units=units,
        noise=noise,
        corr_threshold=corr_threshold,
        cond_threshold=cond_threshold,
        warn=warn,
    )
