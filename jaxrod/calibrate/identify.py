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

Lack of fit. The standard errors above are only as good as two assumptions: the model can
reproduce the data up to the noise, and the noise is independent with the stated ``sigma``. When
the residuals are given, the report checks both (:class:`FitDiagnostics`):

* scale: ``chi2/dof = sum r^2 / ((m - n) sigma^2)`` against its 99.8% range for a correct model
  (``chi2`` quantiles by the Wilson-Hilferty approximation; about ``1 +- 3 sqrt(2 / dof)``), when
  ``noise`` (the stated sigma) is given; an estimated sigma makes it 1 by construction;
* structure: lag-1 autocorrelation of the residuals and a Wald-Wolfowitz runs test on their
  signs, both within each residual series (``groups``: e.g. one series per marker and axis, in
  time order), as z-scores (about N(0, 1) for independent noise);
* robust (sandwich) standard errors, ``(J^T J)^-1 (sum_l w_l J^T diag(r) S_l diag(r) J) (J^T J)^-1``
  with Newey-West weights over ``hac_lags`` lags within each series (heteroscedasticity and
  autocorrelation consistent; ``hac_lags=0`` is White's HC estimator), scaled by ``m / (m - n)``.

A scale outside its range or a |z| above ``z_threshold`` (default 3) sets ``lack_of_fit`` and
the report says, instead of presenting confident error bars, that the model misses the data by
more than the noise, so every error bar (naive or robust) is a lower bound: neither can contain
the bias of a misspecified model. Example (issue 12's review): on the weight release with a
coarse fit model the naive relative error of the drag C was 0.46% while C was 35% off; the
residuals were 4x the noise (chi2/dof ~16) and structured, which these checks flag.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

__all__ = [
    "FitDiagnostics",
    "IdentifiabilityReport",
    "IdentifiabilityWarning",
    "LackOfFitWarning",
    "identify",
    "identify_from_jacobian",
]


class IdentifiabilityWarning(UserWarning):
    """Some parameters cannot be told apart by the data (see :class:`IdentifiabilityReport`)."""


class LackOfFitWarning(UserWarning):
    """The residuals are larger than the stated noise or structured: the model misses the data
    and the standard errors understate the uncertainty (see :class:`FitDiagnostics`)."""


@dataclass
class FitDiagnostics:
    """Lack-of-fit checks of a least-squares fit (see the module docstring).

    Attributes:
        n_residuals, dof: ``m`` measured residuals and ``m - n`` degrees of freedom.
        residual_scale: ``sqrt(sum r^2 / dof)`` [residual units].
        stated_noise: the stated sigma [residual units] or ``None`` (then ``chi2_dof`` is ``None``).
        chi2_dof: ``residual_scale^2 / stated_noise^2``.
        chi2_dof_range: ``(low, high)``, its 99.8% range for a correct model with that noise.
        lag1_autocorrelation: pooled within the series; ``lag1_z``: times ``sqrt(pairs)``.
        runs_z: z-score of the number of sign runs within the series (negative: too few runs,
            i.e. residuals of one sign cluster together).
        hac_lags: lags of the Newey-West sandwich.
        robust_std_errors: ``(n,)`` sandwich standard errors in physical units.
        lack_of_fit: any check failed.
        messages: one line per failed check.
    """

    n_residuals: int
    dof: int
    residual_scale: float
    stated_noise: float | None
    chi2_dof: float | None
    chi2_dof_range: tuple
    lag1_autocorrelation: float
    lag1_z: float
    runs_z: float
    hac_lags: int
    robust_std_errors: np.ndarray
    lack_of_fit: bool
    messages: list = field(default_factory=list)
    z_threshold: float = 3.0

    def summary(self) -> str:
        if self.chi2_dof is None:
            scale = (
                f"residual scale {self.residual_scale:.4g} (no stated noise: not checked; an "
                "estimated sigma makes chi2/dof 1 by construction)"
            )
        else:
            lo, hi = self.chi2_dof_range
            scale = (
                f"residual scale {self.residual_scale:.4g} vs stated noise {self.stated_noise:.4g}: "
                f"chi2/dof {self.chi2_dof:.3g} (expected {lo:.3g}-{hi:.3g} for a correct model)"
            )
        return "\n".join([
            f"  lack of fit: {scale}",
            f"  residual structure: lag-1 autocorrelation {self.lag1_autocorrelation:+.3f} "
            f"(z {self.lag1_z:+.1f}), runs test z {self.runs_z:+.1f} (|z| <= {self.z_threshold:g} "
            "expected for independent noise)",
        ])


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
        noise_stated: whether ``noise`` was given (then checked against the residuals).
        diagnostics: :class:`FitDiagnostics` (``None`` when no residuals were given).
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
    diagnostics: FitDiagnostics | None = None
    noise_stated: bool = False

    @property
    def identifiable(self) -> bool:
        """``True`` when no identifiability problem was flagged (see :attr:`lack_of_fit` for
        whether the error bars can be trusted)."""
        return not self.warnings

    @property
    def lack_of_fit(self) -> bool:
        """``True`` when the residuals are too large for the stated noise or structured: the
        standard errors then understate the uncertainty (``False`` without residuals)."""
        return self.diagnostics is not None and self.diagnostics.lack_of_fit

    @property
    def robust_std_errors(self):
        """``(n,)`` sandwich standard errors [physical units] (``None`` without residuals)."""
        return None if self.diagnostics is None else self.diagnostics.robust_std_errors

    def is_flagged(self, a: str, b: str) -> bool:
        """Whether the pair ``(a, b)`` is flagged as highly correlated."""
        return any({a, b} == {x, y} for x, y, _ in self.flagged_pairs)

    def summary(self) -> str:
        n = len(self.labels)
        w = max(8, *(len(s) for s in self.labels))
        lines = [
            (
                f"identifiability (Gauss-Newton / Fisher, {self.n_residuals} residuals, noise sigma "
                f"{self.noise:.4g} residual units "
                f"({'stated' if self.noise_stated else 'estimated from the residuals'}), "
                f"condition number {self.condition_number:.3g}):"
            ),
            f"  {'parameter':<{w}s} {'value':>12s} {'std error':>12s} {'rel.':>9s}"
            + (f" {'robust':>12s} {'rel.':>9s}" if self.diagnostics is not None else ""),
        ]
        rob = self.robust_std_errors
        for i in range(n):
            row = (
                f"  {self.labels[i]:<{w}s} {self.values[i]:12.6g} {self.std_errors[i]:12.4g} "
                f"{100 * self.relative_std_errors[i]:8.3g}%"
            )
            if rob is not None:
                rel = rob[i] / abs(self.values[i]) if self.values[i] else np.nan
                row += f" {rob[i]:12.4g} {100 * rel:8.3g}%"
            lines.append(row)
        lines.append(
            "  (std error: Gauss-Newton with the noise above, valid if the model fits to within the "
            "noise" + ("; robust: sandwich from the residuals)" if rob is not None else ")")
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
        if self.diagnostics is not None:
            lines.append(self.diagnostics.summary())
            lines.extend(f"  WARNING (lack of fit): {m}" for m in self.diagnostics.messages)
            if self.lack_of_fit:
                lines.append(
                    "  WARNING (lack of fit): the model does not reproduce the data to within the "
                    "noise, so the standard errors above are lower bounds (neither column contains "
                    "the bias of a misspecified model): do not read them as the accuracy of the values"
                )
        return "\n".join(lines)


def _pct(x) -> str:
    return f"{100 * x:.3g}%" if np.isfinite(x) else "inf"


def _chi2_dof_range(dof: int, z: float = 3.09) -> tuple:
    """``(low, high)`` quantiles of ``chi2(dof) / dof`` at ``Phi(-z)``, ``Phi(z)`` (99.8% for
    z = 3.09), by the Wilson-Hilferty cube approximation (within ~1% of the exact quantiles
    for dof >= 3)."""
    a = 2.0 / (9.0 * dof)
    lo = max(1.0 - a - z * math.sqrt(a), 0.0) ** 3
    hi = (1.0 - a + z * math.sqrt(a)) ** 3
    return lo, hi


def _series_order(groups, m):
    """Indices sorting the residuals into their series (stable: time order kept) and the sorted
    group labels."""
    g = np.zeros(m, int) if groups is None else np.asarray(groups).reshape(-1)
    order = np.argsort(g, kind="stable")
    return order, g[order]


def _structure(rr, gs):
    """Lag-1 autocorrelation (pooled within series) with its z-score, and the runs-test z-score of
    the residual signs within series (zeros dropped). ``rr``, ``gs``: residuals and labels in
    series order."""
    same = gs[1:] == gs[:-1]
    den = float(np.sum(rr**2))
    pairs = int(np.sum(same))
    rho = float(np.sum((rr[1:] * rr[:-1])[same]) / den) if den > 0 and pairs else 0.0
    z_ac = rho * math.sqrt(pairs) if pairs else 0.0
    runs = mu = var = 0.0
    for g in np.unique(gs):
        sg = np.sign(rr[gs == g])
        sg = sg[sg != 0]
        n1, n2 = float(np.sum(sg > 0)), float(np.sum(sg < 0))
        n = n1 + n2
        if n < 2 or n1 == 0 or n2 == 0:
            continue
        runs += 1.0 + float(np.sum(sg[1:] != sg[:-1]))
        mu_g = 2.0 * n1 * n2 / n + 1.0
        mu += mu_g
        var += (mu_g - 1.0) * (mu_g - 2.0) / (n - 1.0)
    z_runs = (runs - mu) / math.sqrt(var) if var > 0 else 0.0
    return rho, z_ac, z_runs


def _sandwich(G, gs, bread, lags, m, n):
    """Newey-West sandwich ``bread @ meat @ bread`` from the score rows ``G = J * r`` (series order)."""
    meat = G.T @ G
    for lag in range(1, lags + 1):
        ok = gs[lag:] == gs[:-lag]
        if not np.any(ok):
            break
        S = G[lag:][ok].T @ G[:-lag][ok]
        meat = meat + (1.0 - lag / (lags + 1.0)) * (S + S.T)
    return bread @ meat @ bread * (m / max(m - n, 1))


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
    groups=None,
    hac_lags=None,
    z_threshold: float = 3.0,
) -> IdentifiabilityReport:
    """Identifiability from a residual Jacobian, with lack-of-fit diagnostics when ``r`` is given.

    Arguments:
        J: ``(m, n)`` ``d r / d theta`` in unconstrained coordinates (rows of unmeasured entries
            are ignored via ``mask``).
        r: ``(m,)`` residuals at the estimate (for the noise estimate; needed unless ``noise`` is given).
        mask: ``(m,)`` bool, measured entries.
        labels: ``(n,)`` parameter names.
        values: ``(n,)`` physical values.
        derivative: ``(n,)`` ``d value / d theta`` (1 when ``J`` is already in physical units).
        units: ``"log"``, ``"physical"`` or ``"unconstrained"``, the units of the reported Fisher matrix.
        noise: the stated measurement noise, standard deviation in residual units: used for the
            standard errors and checked against the residuals (chi2/dof); estimated from ``r``
            if ``None`` (then the scale is not checked).
        corr_threshold: pairs with ``|correlation|`` above it are flagged.
        cond_threshold: a condition number above it is flagged.
        warn: issue an :class:`IdentifiabilityWarning` for flagged findings and a
            :class:`LackOfFitWarning` when the fit is poor.
        groups: ``(m,)`` labels of the residual series (e.g. marker x axis), each in time order,
            for the structure tests and the sandwich; default one series in the given order.
        hac_lags: Newey-West lags of the sandwich (default ``floor(4 (L / 100)^(2/9))`` with
            ``L`` the mean series length; 0: White's heteroscedasticity-only estimator).
        z_threshold: |z| above which the autocorrelation or runs test flags structure.
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
    stated = noise is not None
    rr = None
    if r is not None:
        rr = np.asarray(r, dtype=float).reshape(-1)
        if rr.shape != (m_all,):
            raise ValueError(f"r must have {m_all} entries (rows of J), got {rr.shape}")
        rr = rr[mask]
        if not np.all(np.isfinite(rr)):
            raise ValueError("the residuals r contain NaN or inf at measured entries")
    if groups is not None:
        groups = np.asarray(groups).reshape(-1)
        if groups.shape != (m_all,):
            raise ValueError(f"groups must have {m_all} entries (rows of J), got {groups.shape}")
        groups = groups[mask]
    if noise is None:
        if rr is None:
            raise ValueError("give the residuals r (for the noise estimate) or noise=")
        noise = float(np.sqrt(np.sum(rr**2) / max(m - n, 1)))
    noise = float(noise)
    if not (math.isfinite(noise) and noise > 0):
        raise ValueError(f"noise must be a finite number > 0 (residual units), got {noise}")

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

    diag = None
    if rr is not None:
        diag = _diagnostics(
            rr, groups, J_u, F, idx, to_phys, scale_ok, noise if stated else None,
            m, n, hac_lags, float(z_threshold),
        )

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
        diagnostics=diag,
        noise_stated=stated,
    )
    if warn and msgs:
        warnings.warn("; ".join(msgs), IdentifiabilityWarning, stacklevel=2)
    if warn and diag is not None and diag.lack_of_fit:
        warnings.warn(
            "lack of fit: " + "; ".join(diag.messages) + ": the standard errors are lower bounds",
            LackOfFitWarning,
            stacklevel=2,
        )
    return rep


def _diagnostics(rr, groups, J_u, F, idx, to_phys, scale_ok, stated, m, n, hac_lags, zt):
    """:class:`FitDiagnostics` of the measured residuals ``rr`` (see the module docstring)."""
    dof = max(m - n, 1)
    scale = float(np.sqrt(np.sum(rr**2) / dof))
    order, gs = _series_order(groups, m)
    r_s = rr[order]
    rho, z_ac, z_runs = _structure(r_s, gs)
    if hac_lags is None:
        n_series = max(len(np.unique(gs)), 1)
        hac_lags = int(math.floor(4.0 * (m / n_series / 100.0) ** (2.0 / 9.0)))
    if isinstance(hac_lags, bool) or int(hac_lags) != hac_lags or hac_lags < 0:
        raise ValueError(f"hac_lags must be an integer >= 0, got {hac_lags!r}")
    hac_lags = int(hac_lags)
    robust = np.full(n, np.inf)
    if idx.size:
        Fi = F[np.ix_(idx, idx)]
        bread = np.linalg.pinv(0.5 * (Fi + Fi.T), rcond=1e-15)
        G = J_u[order][:, idx] * r_s[:, None]
        cov = _sandwich(G, gs, bread, hac_lags, m, n)
        robust[idx] = np.sqrt(np.abs(np.diag(cov))) * to_phys[idx]
    robust[~scale_ok] = np.inf
    msgs = []
    chi2 = None
    rng = (np.nan, np.nan)
    if stated is not None:
        chi2 = (scale / stated) ** 2
        rng = _chi2_dof_range(dof)
        if chi2 > rng[1]:
            msgs.append(
                f"the residuals are {math.sqrt(chi2):.3g}x the stated noise (chi2/dof {chi2:.3g} > "
                f"{rng[1]:.3g}): the model misses the data, or the noise is understated"
            )
        elif chi2 < rng[0]:
            msgs.append(
                f"the residuals are only {math.sqrt(chi2):.3g}x the stated noise (chi2/dof "
                f"{chi2:.3g} < {rng[0]:.3g}): the noise is overstated or the data were over-fitted"
            )
    if abs(z_ac) > zt:
        msgs.append(
            f"the residuals are correlated from one sample to the next (lag-1 autocorrelation "
            f"{rho:+.3f}, z {z_ac:+.1f}): systematic misfit, not independent noise"
        )
    if z_runs < -zt:
        msgs.append(
            f"the residual signs come in long runs (runs test z {z_runs:+.1f}): systematic misfit"
        )
    return FitDiagnostics(
        n_residuals=int(m),
        dof=int(dof),
        residual_scale=scale,
        stated_noise=stated,
        chi2_dof=chi2,
        chi2_dof_range=rng,
        lag1_autocorrelation=rho,
        lag1_z=z_ac,
        runs_z=z_runs,
        hac_lags=hac_lags,
        robust_std_errors=robust,
        lack_of_fit=bool(msgs),
        messages=msgs,
        z_threshold=zt,
    )


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
    groups=None,
    hac_lags=None,
    z_threshold: float = 3.0,
) -> IdentifiabilityReport:
    """Identifiability of ``objective``'s parameters at ``at``, with lack-of-fit diagnostics.

    Arguments:
        objective: a :class:`~jaxrod.calibrate.fit.Objective` with residuals (its compiled
            forward-mode program is reused: no new compilation after a forward-mode fit).
        at: a :class:`~jaxrod.calibrate.fit.FitReport`, a dict of physical values, an unconstrained
            vector, or ``None`` (the parameters' initial values).
        data: data pytree (default ``objective.data``).
        units, noise, corr_threshold, cond_threshold, warn, groups, hac_lags, z_threshold: see
            :func:`identify_from_jacobian` (``noise``: the stated noise in residual units, checked
            against the residuals; ``groups``: one label per residual entry).
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
        groups=groups,
        hac_lags=hac_lags,
        z_threshold=z_threshold,
    )
