"""Real2sim of the DisMech two-limb soft manipulator on its measured AprilTag data.

The data (``soft_limb_data.csv``, published with DisMech, GPL-3.0) is never copied into jaxrod:
every function takes its path (default: found by :func:`jaxrod.datasets.soft_limb.find_data_path`:
``$JAXROD_SOFT_LIMB_DATA`` or ``shared/data/dismech-soft-limb/`` next to the repository or the
working directory). It
holds, at ~5 Hz, the image coordinates [px] of 9 AprilTags along the robot (101-104 on limb 1,
105 at the joint, 106-109 on limb 2; image y points down).

Pipeline (each step a function here):

1. :func:`jaxrod.datasets.soft_limb.read_soft_limb_csv`: CSV reader with validation (column
   count, numbers, monotonic time, missing tags). A tag is *missing* in a row when both coordinates are 0 (the tracker's "not
   detected") or either is empty/NaN; only frames with all 9 tags are fitted.
2. :func:`derive_alignment`: pixel -> metre scale and tag arc lengths. No scale is given with the
   data. Default (``alignment="tip-free"``): nothing from the tip tag 109; the mean 101 -> 108
   polyline length over the valid frames is set to the nominal arc length of tag 108 (7/8 of the
   modelled 2 x 0.075 m: DisMech's equal tag spacing), tags 102-108 sit at their mean cumulative
   polyline length times that scale (``spacing="measured"``; the tags are not equally spaced in
   the image) or at the nominal spacing (``"uniform"``), and tag 109 at the rod end
   (``tip_arclength="rod-end"``) or one 107 -> 108 interval beyond tag 108 (``"last-interval"``).
   The original definition (``alignment="all-tags"``) sets the mean 101 -> 109 polyline to the rod
   length, so tag 109 sets the scale and the arc lengths. Frames are placed with tag 101 (the clamped base; it moves < 0.1 px)
   at the origin, image x to model x and image -y to model z (gravity -z).
3. :class:`SoftLimbProblem`: one DER rod of ``n_nodes`` (odd) equal edges, 0.15 m, the joint at
   the middle node, circular section r = 0.01 m, E = 1.793 MPa, nu = 0.5, rho = 1240 kg/m^3,
   gravity 9.8 m/s^2, clamped base edge (DisMech's values). Actuation: a uniform natural
   curvature per limb, ``theta = (kappa_1, kappa_2)`` [1/m], applied as the in-plane material
   curvature ``kappa_bar_i = 2 tan(kappa h / 2)`` of each interior node (component 1 of the
   ``(N-2, 2)`` natural curvature: for a rod in the x-z plane DER's first director is +-y, so
   component 1 is the in-plane one; the joint node gets the mean of the two limbs). The rod is
   built along +x; the base direction is the global angle ``beta`` (from +x towards +z, in the
   image plane): the simulated shape is rotated by ``beta`` and gravity is applied in the rod's
   frame rotated by ``gamma - beta``, where ``gamma`` is an optional camera roll (the angle between
   image "down" and true gravity, default 0).
4. Static equilibria per frame (the SMA actuation is slow; DisMech also treats frames as
   quasi-static) with :func:`jaxrod.solve_static`, warm-started from the previous equilibrium;
   gradients by implicit differentiation (``jax.value_and_grad`` through the Newton solve).
5. :func:`fit_recording`: per frame, L-BFGS (``optax.scale_by_lbfgs`` directions, Armijo
   backtracking on the host) on the weighted mean squared distance of the tags in the loss
   [mm^2], warm-started from the previous frame in the curvatures (linear extrapolation of the
   last two), in the solver's initial configuration and in the L-BFGS curvature memory.
   :func:`fit_base_angle` fits the global ``beta`` (and optionally ``gamma``) once, on a few
   frames, by variable projection (exact envelope gradient).
6. Held-out evaluation (:mod:`jaxrod.calibrate.evaluate`): the *held-out* fit leaves the tip tag
   (109) out of the loss and out of the base-angle fit and, with the tip-free alignment, out of the
   scale and the tag arc lengths, so its tip error is a prediction (with ``"all-tags"`` it is not
   a clean one), scored beside model-free chord extrapolations in the same alignment
   (:func:`jaxrod.cases.real_data_baselines.tip_extrapolation_baselines`); the
   *all-tags* fit (tags 102-109) gives the in-sample residuals. Both are reported side by side
   (:func:`evaluate_fit`); neither is comparable with DisMech's published 2.9 mm
   (:data:`DISMECH_NOT_COMPARABLE`).
7. :func:`dismech_baseline` (on request; slow): DisMech's Algorithm 1 (seed 001, Section 6;
   ``calibrator.py``): L1 loss on the two limb curvatures computed from tag triplets, forward
   finite differences (eps 0.005), gradient descent with step 0.1 halved whenever the loss
   increases, tolerance 2.5e-3, in DisMech's variable ``kbar = 2 tan(phi / 2)`` per limb. Its
   simulation is DisMech's (a damped 3-s dynamic run from the straight rod) or our warm-started
   static solve. The speed-up of our fit over it with DisMech's dynamic F comes from static
   solves vs 300-step dynamic runs, not from exact gradients: with the static F, DisMech's FD
   scheme takes about as long as our exact-gradient fit (issue 12's review: 16.4 s and 32.6 s on
   25 frames in one process); ``--baseline both`` measures all three side by side.
8. Tip errors [mm] (distance between the simulated and measured tag 109), :func:`plot_real2sim`.

:func:`run_real2sim` chains all of it; ``calibration/real2sim_soft_limb.py`` is the command line.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from dataclasses import dataclass

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxrod

from ..progress import ANNOUNCE_S, activity, eta, say
from ..calibrate.evaluate import Split, evaluate, point_errors, split_markers

from ..datasets.soft_limb import (  # noqa: F401  (alignment names re-exported)
    ALIGNMENTS,
    LIMB_LENGTH,
    NOMINAL_TAG_SPACING,
    TAG_IDS,
    TIP_ARCLENGTHS,
    Alignment,
    derive_alignment,
    read_soft_limb_csv,
    resolve_data_path,
    select_frames,
)

# the command-line options import nothing heavy (the CLI parser uses them)
from .cli_args import SOFT_LIMB_DESCRIPTION as DESCRIPTION  # noqa: F401  (re-exported)
from .cli_args import add_soft_limb_arguments as add_arguments  # noqa: F401  (re-exported)

__all__ = [
    "ALIGNMENTS",
    "Alignment",
    "NOMINAL_TAG_SPACING",
    "TIP_ARCLENGTHS",
    "FitResult",
    "SoftLimbProblem",
    "curvature_to_dismech_kbar",
    "DISMECH_NOT_COMPARABLE",
    "derive_alignment",
    "dismech_baseline",
    "evaluate_fit",
    "dismech_kbar_to_curvature",
    "fit_base_angle",
    "fit_recording",
    "format_summary",
    "limb_curvatures_from_tags",
    "plot_real2sim",
    "results_table",
    "run_real2sim",
    "summarize_real2sim",
    "tip_error_diagnostics",
    "write_results_csv",
]

RADIUS = 0.01  # [m]
YOUNGS_MODULUS = 1.793e6  # [Pa]
POISSON_RATIO = 0.5
DENSITY = 1240.0  # [kg/m^3]
GRAVITY = 9.8  # [m/s^2] (DisMech's value)


# ---------------------------------------------------------------------------------------------
# 1. data: jaxrod.datasets.soft_limb (read_soft_limb_csv, select_frames, resolve_data_path)
# ---------------------------------------------------------------------------------------------
# 2. alignment
# ---------------------------------------------------------------------------------------------
# Alignment, derive_alignment, ALIGNMENTS, TIP_ARCLENGTHS, NOMINAL_TAG_SPACING: jaxrod.datasets.soft_limb
# (pure data processing, shared with the model-free baselines)


def limb_curvatures_from_tags(points) -> np.ndarray:
    """DisMech's ComputeCurvature: ``(..., 9, 2)`` planar points -> ``(..., 2)`` limb curvatures,
    the mean of the discrete curvature binormals ``2 (t0 x t1) / (1 + t0 . t1)`` over tag triplets
    (0,1,2), (1,2,3), (2,3,4) (limb 1) and (4,5,6), (5,6,7), (6,7,8) (limb 2). Scale-free (numpy)."""
    p = np.asarray(points, dtype=float)
    e = p[..., 1:, :] - p[..., :-1, :]
    t = e / np.linalg.norm(e, axis=-1, keepdims=True)
    t0, t1 = t[..., :-1, :], t[..., 1:, :]
    cross = t0[..., 0] * t1[..., 1] - t0[..., 1] * t1[..., 0]
    kb = 2.0 * cross / (1.0 + np.sum(t0 * t1, axis=-1))  # (..., 7) at tags 1..7
    return np.stack(
        [np.mean(kb[..., 0:3], axis=-1), np.mean(kb[..., 3:6], axis=-1)], axis=-1
    )


# ---------------------------------------------------------------------------------------------
# 3./4. model and equilibrium
# ---------------------------------------------------------------------------------------------
def _natural_curvature(theta, n_nodes, length):
    """``(N-2, 2)`` natural curvature of uniform limb curvatures ``theta`` [1/m] (joint = middle node)."""
    h = length / (n_nodes - 1)
    joint = (n_nodes - 1) // 2
    nodes = jnp.arange(1, n_nodes - 1)
    kap = jnp.where(
        nodes < joint,
        theta[0],
        jnp.where(nodes > joint, theta[1], 0.5 * (theta[0] + theta[1])),
    )
    return (
        jnp.zeros((n_nodes - 2, 2), dtype=kap.dtype)
        .at[:, 1]
        .set(2.0 * jnp.tan(0.5 * kap * h))
    )


def _model(rod, theta, nuis, length):
    beta, gamma = nuis[0], nuis[1]
    g = GRAVITY * jnp.stack(
        [jnp.sin(gamma - beta), jnp.zeros_like(beta), -jnp.cos(gamma - beta)]
    )
    kb = _natural_curvature(theta, rod.n_nodes, length)
    return jaxrod.DERModel(
        rod.with_natural_curvature(kb), clamped_edges=(0,), gravity=g
    )


def _tags_from_q(q, nuis, idx, frac):
    """Tag positions ``(9, 2)`` in the image-aligned (x, z) plane from the rod state ``q``."""
    x, z = q[:, 0], q[:, 2]
    px = (1.0 - frac) * x[idx] + frac * x[idx + 1]
    pz = (1.0 - frac) * z[idx] + frac * z[idx + 1]
    c, s = jnp.cos(nuis[0]), jnp.sin(nuis[0])
    return jnp.stack([c * px - s * pz, s * px + c * pz], axis=-1)


def _centerline(q, nuis):
    c, s = jnp.cos(nuis[0]), jnp.sin(nuis[0])
    x, z = q[:, 0], q[:, 2]
    return jnp.stack([c * x - s * z, s * x + c * z], axis=-1)


def _equilibrium(rod, theta, nuis, q, aux, solver, length):
    model = _model(rod, theta, nuis, length)
    state0 = jaxrod.State(q, jnp.zeros_like(q), aux)
    return jaxrod.solve_static(model, state0=state0, solver=solver, throw=False)


@eqx.filter_jit
def _loss_and_grad(
    rod, theta, nuis, q, aux, target, weights, idx, frac, solver, length
):
    """Weighted mean squared tag error [mm^2], its gradient wrt ``theta`` and ``nuis`` (exact:
    implicit differentiation of the static solve), and the equilibrium."""

    def loss(theta, nuis):
        st, res = _equilibrium(rod, theta, nuis, q, aux, solver, length)
        pred = _tags_from_q(st.q, nuis, idx, frac)
        d2 = jnp.sum((pred - target) ** 2, axis=-1) * 1e6
        value = jnp.sum(weights * d2) / jnp.sum(weights)
        return value, (st.q, st.aux, res.converged, res.iterations, pred)

    (value, out), (g_theta, g_nuis) = jax.value_and_grad(
        loss, argnums=(0, 1), has_aux=True
    )(theta, nuis)
    return value, g_theta, g_nuis, out


@eqx.filter_jit
def _tag_positions(rod, theta, nuis, q, aux, idx, frac, solver, length):
    """Forward only (the finite-difference baseline): tags ``(9, 2)`` and the equilibrium."""
    st, res = _equilibrium(rod, theta, nuis, q, aux, solver, length)
    return _tags_from_q(st.q, nuis, idx, frac), (
        st.q,
        st.aux,
        res.converged,
        res.iterations,
    )


#: DisMech's simulation F of Algorithm 1: a damped backward-Euler run from the straight rod
#: (seed 001 Section 6.2: dt 1e-2 s for 3 s, eta = 7), whose last configuration is the "static" shape.
DISMECH_DT = 1e-2
DISMECH_STEPS = 300
DISMECH_DAMPING = 7.0


@eqx.filter_jit
def _tag_positions_dynamic(rod, theta, nuis, idx, frac, length, dt, n_steps, damping):
    """DisMech's F: tags ``(9, 2)`` after a damped dynamic run from the straight rod."""
    model = _model(rod, theta, nuis, length)
    model = eqx.tree_at(lambda m: m.damping, model, jnp.asarray(damping, dtype=float))
    traj = jaxrod.simulate(
        model,
        dt=dt,
        n_steps=n_steps,
        save_every=n_steps,
        scheme=jaxrod.BackwardEuler(),
        throw=False,
    )
    q = traj.q[-1]
    return _tags_from_q(q, nuis, idx, frac), (
        q,
        jnp.all(traj.stats.converged),
        jnp.sum(traj.stats.iterations),
    )


class SoftLimbProblem:
    """The rod model, the tag positions along it and the compiled evaluations.

    Args:
        alignment: :class:`Alignment` (tag arc lengths, rod length).
        n_nodes: odd number of DER nodes (the joint is the middle node); DisMech uses 49 (2 x 25 - 1).
        beta: base direction angle [rad] in the image-aligned x-z plane (from +x towards +z).
        gamma: camera roll [rad] (gravity direction relative to image "down").
        rtol, atol: Newton tolerances of the equilibrium solves [m, rad].
    """

    def __init__(
        self,
        alignment: Alignment,
        n_nodes=49,
        beta=0.0,
        gamma=0.0,
        rtol=1e-10,
        atol=1e-12,
        max_steps=60,
    ):
        n_nodes = int(n_nodes)
        if n_nodes < 5 or n_nodes % 2 == 0:
            raise ValueError(
                f"n_nodes must be odd and >= 5 (the joint is the middle node), got {n_nodes}"
            )
        self.alignment = alignment
        self.length = float(alignment.length)
        self.n_nodes = n_nodes
        self.rod = jaxrod.DERRod.straight(
            n_nodes,
            self.length,
            youngs_modulus=YOUNGS_MODULUS,
            density=DENSITY,
            radius=RADIUS,
            poisson_ratio=POISSON_RATIO,
        )
        h = self.length / (n_nodes - 1)
        s = np.asarray(alignment.tag_arclength, dtype=float)
        idx = np.clip(np.floor(s / h + 1e-9).astype(int), 0, n_nodes - 2)
        self.idx = jnp.asarray(idx)
        self.frac = jnp.asarray(s / h - idx)
        self.nuis = jnp.asarray([float(beta), float(gamma)])
        self.solver = jaxrod.NewtonSolver(
            linear_solver=None, max_steps=int(max_steps), rtol=rtol, atol=atol
        )
        #: per-tag weights of the loss: the 8 free tags (tag 101 is the clamped origin)
        self.weights = jnp.asarray([0.0] + [1.0] * (len(TAG_IDS) - 1))

    def with_nuisance(self, beta, gamma=0.0) -> SoftLimbProblem:
        new = object.__new__(SoftLimbProblem)
        new.__dict__.update(self.__dict__)
        new.nuis = jnp.asarray([float(beta), float(gamma)])
        return new

    def with_weights(self, weights) -> SoftLimbProblem:
        """A copy whose loss uses the per-tag ``weights`` ``(9,)`` (0: held out of the loss; an
        array argument of the compiled program, so no recompilation)."""
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(TAG_IDS),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be ({len(TAG_IDS)},) finite, >= 0, not all 0; got {weights!r}")
        new = object.__new__(SoftLimbProblem)
        new.__dict__.update(self.__dict__)
        new.weights = jnp.asarray(w)
        return new

    @property
    def beta(self) -> float:
        return float(self.nuis[0])

    @property
    def gamma(self) -> float:
        return float(self.nuis[1])

    def initial_state(self):
        """Straight rod along +x (the solver's first initial configuration): ``(q, aux)``."""
        st = _model(self.rod, jnp.zeros(2), self.nuis, self.length).initial_state()
        return st.q, st.aux

    def loss_and_grad(self, theta, target, state, weights=None, nuis=None):
        """``(loss [mm^2], dloss/dtheta, dloss/dnuis, (q, aux, converged, newton_its, tags))``.

        ``target``: ``(9, 2)`` measured tags [m]; ``state``: ``(q, aux)`` initial configuration of
        the Newton solve; ``weights``: ``(9,)`` per-tag weights (default: the 8 free tags).
        """
        q, aux = state
        return _loss_and_grad(
            self.rod,
            jnp.asarray(theta, dtype=float),
            self.nuis if nuis is None else jnp.asarray(nuis, dtype=float),
            q,
            aux,
            jnp.asarray(target, dtype=float),
            self.weights if weights is None else jnp.asarray(weights, dtype=float),
            self.idx,
            self.frac,
            self.solver,
            self.length,
        )

    def tag_positions(self, theta, state):
        """``((9, 2) tags [m], (q, aux, converged, newton_its))`` at curvatures ``theta``."""
        q, aux = state
        return _tag_positions(
            self.rod,
            jnp.asarray(theta, dtype=float),
            self.nuis,
            q,
            aux,
            self.idx,
            self.frac,
            self.solver,
            self.length,
        )

    def tag_positions_dynamic(
        self, theta, dt=DISMECH_DT, n_steps=DISMECH_STEPS, damping=DISMECH_DAMPING
    ):
        """DisMech's F: ``((9, 2) tags [m], (q, converged, newton_its))`` at the end of a damped
        backward-Euler run (``n_steps`` of ``dt`` [s], damping ``eta`` [N s/m^2]) from the straight rod."""
        return _tag_positions_dynamic(
            self.rod,
            jnp.asarray(theta, dtype=float),
            self.nuis,
            self.idx,
            self.frac,
            self.length,
            float(dt),
            int(n_steps),
            float(damping),
        )

    def centerline(self, q) -> np.ndarray:
        """``(N, 2)`` rod centerline in the image-aligned (x, z) plane [m]."""
        return np.asarray(_centerline(jnp.asarray(q), self.nuis))


# ---------------------------------------------------------------------------------------------
# 5. fitting with exact gradients
# ---------------------------------------------------------------------------------------------
@dataclass
class FitResult:
    """Per-frame results of a fit of the whole (selected) recording.

    Attributes:
        method: description.
        rows: ``(F,)`` CSV row indices (0-based, header excluded) of the frames.
        times: ``(F,)`` [s].
        theta: ``(F, 2)`` limb curvatures [1/m].
        tip_error_mm: ``(F,)`` distance between simulated and measured tag 109 [mm].
        rms_error_mm: ``(F,)`` RMS distance over the tags in the loss [mm] (in-sample).
        iterations: ``(F,)`` optimiser iterations.
        evaluations: ``(F,)`` equilibrium solves (each with its gradient for the exact-gradient fit).
        newton_iterations: ``(F,)`` Newton iterations over all solves of the frame.
        converged: ``(F,)`` bool: the frame met its stopping test.
        wall_s: wall time of the loop [s] (compilation excluded, see ``compile_s``).
        compile_s: time of the first (compiling) call [s].
        tags: ``(F, 9, 2)`` simulated tags [m]; ``q``: ``(F, N, 4)`` equilibria.
    """

    method: str
    rows: np.ndarray
    times: np.ndarray
    theta: np.ndarray
    tip_error_mm: np.ndarray
    rms_error_mm: np.ndarray
    iterations: np.ndarray
    evaluations: np.ndarray
    newton_iterations: np.ndarray
    converged: np.ndarray
    wall_s: float
    compile_s: float
    tags: np.ndarray
    q: np.ndarray

    @property
    def limb_angles_deg(self) -> np.ndarray:
        """``(F, 2)`` total turning angle of each limb [deg] (kappa x 0.075 m)."""
        return np.degrees(self.theta * LIMB_LENGTH)

    def summary(self) -> dict:
        return {
            "method": self.method,
            "frames": len(self.rows),
            "mean_tip_error_mm": float(np.mean(self.tip_error_mm)),
            "max_tip_error_mm": float(np.max(self.tip_error_mm)),
            "mean_rms_tag_error_mm": float(np.mean(self.rms_error_mm)),
            "iterations": int(np.sum(self.iterations)),
            "evaluations": int(np.sum(self.evaluations)),
            "newton_iterations": int(np.sum(self.newton_iterations)),
            "frames_not_converged": int(np.sum(~self.converged)),
            "wall_s": float(self.wall_s),
            "compile_s": float(self.compile_s),
        }


_lbfgs = optax.scale_by_lbfgs(memory_size=8)
_lbfgs_update = jax.jit(_lbfgs.update)


def _minimize(
    fun, x0, opt_state=None, max_iter=50, ftol=1e-7, xtol=1e-6, gtol=0.0, first_step=0.5
):
    """Host-side L-BFGS (optax ``scale_by_lbfgs`` directions) with Armijo backtracking.

    ``fun(x) -> (f, g, ok)``; a point with ``ok == False`` (solve failed) is rejected like an
    increase. Stops when the relative decrease is below ``ftol``, the step below ``xtol``, the
    gradient norm below ``gtol``, or after ``max_iter`` iterations. ``opt_state`` (a previous
    L-BFGS state) warm-starts the curvature memory: its iteration counter is reset, so the first
    update adds no secant pair spanning two problems and the stored pairs give the first step.

    Returns ``(x, f, opt_state, iterations, evaluations, stopped_by_test)``.
    """
    x = np.asarray(x0, dtype=float)
    f, g, ok = fun(x)
    nev = 1
    if not ok:
        raise RuntimeError("the equilibrium solve failed at the initial point")
    if opt_state is None:
        opt_state = _lbfgs.init(jnp.asarray(x))
    else:
        opt_state = opt_state._replace(count=jnp.zeros_like(opt_state.count))
    fresh = int(opt_state.count) == 0 and not bool(
        np.any(np.asarray(opt_state.weights_memory) != 0)
    )
    if np.linalg.norm(g) <= gtol:
        return x, f, opt_state, 0, nev, True
    for it in range(1, max_iter + 1):
        d, opt_state = _lbfgs_update(jnp.asarray(g), opt_state, jnp.asarray(x))
        d = np.asarray(d)
        slope = float(g @ d)
        if not slope > 0:  # not a descent direction: restart with the gradient
            opt_state = _lbfgs.init(jnp.asarray(x))
            d, slope, fresh = g.copy(), float(g @ g), True
        if fresh:
            d = d * min(1.0, first_step / max(np.linalg.norm(d), 1e-300))
            fresh = False
        step = 1.0
        while True:
            x1 = x - step * d
            f1, g1, ok1 = fun(x1)
            nev += 1
            if ok1 and f1 <= f - 1e-4 * step * slope:
                break
            step *= 0.5
            if step < 1e-6:
                return x, f, opt_state, it, nev, False
        dx = np.linalg.norm(x1 - x)
        df = f - f1
        x, f, g = x1, f1, g1
        if df <= ftol * max(f, 1e-12) or dx <= xtol or np.linalg.norm(g) <= gtol:
            return x, f, opt_state, it, nev, True
    return x, f, opt_state, max_iter, nev, False


def _errors(pred, target, weights):
    """Tip error and RMS over the tags in the loss (``weights > 0``) [mm]."""
    d = np.linalg.norm(np.asarray(pred) - np.asarray(target), axis=-1) * 1e3  # (9,) mm
    fitted = np.asarray(weights) > 0
    return float(d[-1]), float(np.sqrt(np.mean(d[fitted] ** 2)))


def _fit_frame(
    problem, target, theta, state, opt_state, *, max_iter, ftol, xtol, gtol=0.0
):
    """One frame: L-BFGS from ``theta`` and the Newton initial configuration ``state``.

    Returns a dict: ``theta``, ``loss``, ``g_nuis`` (gradient wrt the global angles at the
    optimum), ``out`` (equilibrium q, aux, converged, Newton its, tags), ``opt_state``,
    ``iterations``, ``solves``, ``newton``, ``ok``."""
    target = jnp.asarray(target)
    cache = {}
    cur = {"state": state, "newton": 0}

    def fun(th):
        value, g, gn, out = problem.loss_and_grad(th, target, cur["state"])
        ok = bool(out[2]) and bool(np.isfinite(float(value)))
        cur["newton"] += int(out[3])
        if ok:
            cache[tuple(np.asarray(th))] = (gn, out)
            # the next solve starts from the latest equilibrium
            cur["state"] = (out[0], out[1])
        return float(value), np.asarray(g), ok

    theta, f, opt_state, it, nev, ok = _minimize(
        fun, theta, opt_state, max_iter=max_iter, ftol=ftol, xtol=xtol, gtol=gtol
    )
    gn, out = cache[tuple(np.asarray(theta))]
    return {
        "theta": np.asarray(theta),
        "loss": f,
        "g_nuis": np.asarray(gn),
        "out": out,
        "opt_state": opt_state,
        "iterations": it,
        "solves": nev,
        "newton": cur["newton"],
        "ok": ok,
    }


def _compile(problem, target, state, progress=False):
    t0 = time.perf_counter()
    # announced only when it takes a while (a program compiled before in this process does not)
    with activity("compiling the fit program", enabled=progress, stream=sys.stdout, delay=ANNOUNCE_S,
                  announce="  compiling the fit program (loss and gradient through the static solve; "
                  "first run of this shape; cached afterwards)"):
        jax.block_until_ready(problem.loss_and_grad(np.zeros(2), target, state))
        x = jnp.zeros(2)
        jax.block_until_ready(_lbfgs_update(x, _lbfgs.init(x), x))
    return time.perf_counter() - t0


def fit_recording(
    problem: SoftLimbProblem,
    targets,
    *,
    rows=None,
    times=None,
    theta0=(0.0, 0.0),
    max_iter=50,
    ftol=1e-5,
    xtol=1e-3,
    carry_memory=True,
    predictor=True,
    progress=False,
) -> FitResult:
    """Fit ``(kappa_1, kappa_2)`` [1/m] to every frame of ``targets`` ``(F, 9, 2)`` [m] in order,
    each warm-started from the previous frame (curvatures, Newton initial configuration and, with
    ``carry_memory``, the L-BFGS memory). Gradients are exact (implicit differentiation).

    Each frame starts from the previous frame's curvatures, linearly extrapolated from the last
    two frames with ``predictor`` (falling back to the previous ones if that solve fails).
    Stopping test per frame: relative decrease of the loss below ``ftol`` or a step below ``xtol``
    [1/m]; at most ``max_iter`` L-BFGS iterations."""
    targets = np.asarray(targets, dtype=float)
    F = targets.shape[0]
    state = problem.initial_state()
    theta = np.asarray(theta0, dtype=float)
    compile_s = _compile(problem, targets[0], state, progress)  # not timed as part of the fit

    out_theta, tip, rms, its, nevs, nits, conv, tags, qs = ([] for _ in range(9))
    opt_state = None
    wall0 = time.perf_counter()
    with activity(lambda: f"fitting frame {len(out_theta) + 1}/{F}", enabled=progress, stream=sys.stdout):
        for k in range(F):
            kw = {"max_iter": max_iter, "ftol": ftol, "xtol": xtol}
            mem = opt_state if carry_memory else None
            start = theta
            if predictor and k >= 2:  # linear extrapolation of the last two frames
                start = 2.0 * out_theta[-1] - out_theta[-2]
            try:
                r = _fit_frame(problem, targets[k], start, state, mem, **kw)
            except RuntimeError:  # the equilibrium solve failed at the extrapolated start
                r = _fit_frame(problem, targets[k], theta, state, mem, **kw)
            theta, opt_state, out = r["theta"], r["opt_state"], r["out"]
            state = (out[0], out[1])  # warm start of the next frame's Newton solves
            pred = np.asarray(out[4])
            e_tip, e_rms = _errors(pred, targets[k], problem.weights)
            out_theta.append(theta.copy())
            tip.append(e_tip)
            rms.append(e_rms)
            its.append(r["iterations"])
            nevs.append(r["solves"])
            nits.append(r["newton"])
            conv.append(r["ok"])
            tags.append(pred)
            qs.append(np.asarray(out[0]))
            if progress and (k % max(1, F // 20) == 0 or k == F - 1):
                say(
                    f"  [exact-grad] frame {k + 1:4d}/{F}  kappa = ({theta[0]:7.3f}, {theta[1]:7.3f}) 1/m  "
                    f"tip err {e_tip:6.3f} mm  fitted-tag rms {e_rms:6.3f} mm  its {r['iterations']:2d}  solves {r['solves']:2d}  "
                    f"wall {time.perf_counter() - wall0:7.2f} s  {eta(k + 1, F, time.perf_counter() - wall0)}",
                    sys.stdout,
                )
    wall = time.perf_counter() - wall0
    n_tags = int(np.sum(np.asarray(problem.weights) > 0))
    return _fit_result(
        f"exact gradients (implicit diff.) + L-BFGS, L2 on {n_tags} tags", F, rows, times, wall, compile_s,
        theta=out_theta, tip=tip, rms=rms, its=its, nevs=nevs, nits=nits, conv=conv, tags=tags, qs=qs,
    )



def _fit_result(method, F, rows, times, wall, compile_s, *, theta, tip, rms, its, nevs, nits, conv, tags, qs):
    """A :class:`FitResult` from the per-frame lists a fitting loop collects."""
    return FitResult(
        method=method,
        rows=np.arange(F) if rows is None else np.asarray(rows),
        times=np.full(F, np.nan) if times is None else np.asarray(times),
        theta=np.asarray(theta),
        tip_error_mm=np.asarray(tip),
        rms_error_mm=np.asarray(rms),
        iterations=np.asarray(its),
        evaluations=np.asarray(nevs),
        newton_iterations=np.asarray(nits),
        converged=np.asarray(conv),
        wall_s=wall,
        compile_s=compile_s,
        tags=np.asarray(tags),
        q=np.asarray(qs),
    )


def fit_base_angle(
    problem: SoftLimbProblem,
    targets,
    *,
    fit_roll=False,
    beta0=None,
    max_iter=30,
    progress=False,
):
    """Fit the global base angle ``beta`` (and the camera roll ``gamma`` if ``fit_roll``) once on
    the frames ``targets`` ``(K, 9, 2)`` [m], by variable projection: minimise
    ``f(beta) = mean_k min_theta loss_k(theta, beta)`` with L-BFGS, the inner per-frame fits
    warm-started from the previous outer iterate, and the exact gradient
    ``df/dbeta = mean_k dloss_k/dbeta`` at the inner optima (envelope theorem).
    ``beta0`` default: mean direction of the first tag chord (101 -> 102).

    Returns ``(beta, gamma, info)``, ``info``: loss [mm^2], iterations, solves, wall time
    (compilation excluded) and compile time [s]."""
    targets = np.asarray(targets, dtype=float)
    K = targets.shape[0]
    if beta0 is None:
        d = targets[:, 1] - targets[:, 0]
        beta0 = float(np.mean(np.arctan2(d[:, 1], d[:, 0])))
    n_n = 2 if fit_roll else 1
    thetas = np.zeros((K, 2))
    states = [problem.initial_state()] * K
    mem = [None] * K
    counts = {"solves": 0}
    compile_s = _compile(problem, targets[0], states[0], progress)  # not timed as part of the fit
    t0 = time.perf_counter()

    def fun(x):
        prob = problem.with_nuisance(x[0], x[1] if fit_roll else 0.0)
        total, grad, ok = 0.0, np.zeros(n_n), True
        for k in range(K):
            r = _fit_frame(
                prob,
                targets[k],
                thetas[k],
                states[k],
                mem[k],
                max_iter=50,
                ftol=1e-9,
                xtol=1e-5,
                gtol=1e-4,
            )
            counts["solves"] += r["solves"]
            ok = ok and bool(r["out"][2])
            total += r["loss"] / K
            grad += r["g_nuis"][:n_n] / K
            thetas[k], mem[k] = r["theta"], r["opt_state"]
            states[k] = (r["out"][0], r["out"][1])
        return total, grad, ok

    x0 = np.asarray([beta0, 0.0][:n_n])
    with activity(f"fitting the base angle on {K} frames", enabled=progress, stream=sys.stdout):
        x, f, _, it, _, _ = _minimize(
            fun, x0, max_iter=max_iter, ftol=1e-10, xtol=1e-5, first_step=0.02
        )
    beta = float(x[0])
    gamma = float(x[1]) if fit_roll else 0.0
    info = {
        "loss_mm2": f,
        "iterations": it,
        "solves": counts["solves"],
        "wall_s": time.perf_counter() - t0,
        "compile_s": compile_s,
        "frames": K,
    }
    if progress:
        print(
            f"  base angle fit on {K} frames: beta = {math.degrees(beta):.3f} deg"
            + (
                f", camera roll gamma = {math.degrees(gamma):.3f} deg"
                if fit_roll
                else ""
            )
            + f" (start {math.degrees(beta0):.3f} deg), mean tag MSE {f:.4f} mm^2, {it} iterations, "
            f"{counts['solves']} solves, {info['wall_s']:.1f} s (+ {compile_s:.1f} s compiling/loading)",
            flush=True,
        )
    return beta, gamma, info


# ---------------------------------------------------------------------------------------------
# 6. DisMech's finite-difference scheme (baseline)
# ---------------------------------------------------------------------------------------------
def dismech_kbar_to_curvature(kbar):
    """DisMech's limb actuation variable ``kbar = 2 tan(phi / 2)`` (``phi``: total natural turning
    angle of a limb, spread uniformly over its nodes by DisMech's open-loop controller) ->
    our uniform limb curvature [1/m] (``phi = kappa x 0.075 m``)."""
    return 2.0 * np.arctan(0.5 * np.asarray(kbar, dtype=float)) / LIMB_LENGTH


def curvature_to_dismech_kbar(theta):
    """Inverse of :func:`dismech_kbar_to_curvature`."""
    return 2.0 * np.tan(0.5 * np.asarray(theta, dtype=float) * LIMB_LENGTH)


def dismech_baseline(
    problem: SoftLimbProblem,
    targets,
    *,
    rows=None,
    times=None,
    kbar0=(-0.52, 0.0),
    alpha0=0.1,
    eps=0.005,
    tol=2.5e-3,
    max_iter=500,
    sim="static",
    progress=False,
) -> FitResult:
    """DisMech's Algorithm 1 (seed 001 Section 6) on the same model and equilibrium solver.

    Per frame: target limb curvatures ``kappa*`` from the measured tag triplets
    (:func:`limb_curvatures_from_tags`); unknowns ``kbar = 2 tan(phi / 2)`` per limb, DisMech's
    actuation variable (``phi``: the limb's natural turning angle; initial ``kbar0`` = [-0.52, 0]
    as in DisMech's ``calibrator.py``, the paper says [0, 0]; then the previous frame's solution); loss ``lambda = |kappa*_1 - kappa_1| + |kappa*_2 - kappa_2|`` (L1) with the simulated
    curvatures from the simulated tags; stop when ``lambda < tol``; otherwise halve ``alpha``
    (reset to ``alpha0`` each frame) if ``lambda`` went up, take forward differences with ``eps``
    (2 more solves) and step ``kbar -= alpha grad``. Deviations, both needed to terminate: at most
    ``max_iter`` iterations per frame (DisMech: none), and a step whose equilibrium solve fails is
    undone with ``alpha`` halved (DisMech's dynamic run always returns a shape).

    ``sim``: the simulation ``F``. ``"dynamic"``: DisMech's, a damped backward-Euler run from the
    straight rod (:meth:`SoftLimbProblem.tag_positions_dynamic`, 300 steps of 0.01 s, eta = 7),
    whose end is the equilibrium up to the residual motion; ``"static"``: the same warm-started
    equilibrium solve as :func:`fit_recording`, which isolates the optimisation scheme.
    """
    if sim not in ("static", "dynamic"):
        raise ValueError(f"sim must be 'static' or 'dynamic', got {sim!r}")
    targets = np.asarray(targets, dtype=float)
    F = targets.shape[0]
    kappa_star = limb_curvatures_from_tags(targets)
    state = problem.initial_state()
    kbar = np.asarray(kbar0, dtype=float)

    def simulate(theta, state):
        if sim == "static":
            return problem.tag_positions(theta, state)
        pred, (q, conv, its) = problem.tag_positions_dynamic(theta)
        return pred, (q, state[1], conv, its)

    t0 = time.perf_counter()
    jax.block_until_ready(simulate(dismech_kbar_to_curvature(kbar), state))
    compile_s = time.perf_counter() - t0

    out_theta, tip, rms, its, nevs, nits, conv, tags, qs = ([] for _ in range(9))
    wall0 = time.perf_counter()
    for k in range(F):
        newton = 0
        nev = 0

        def run_f(kb, kstar=kappa_star[k]):
            nonlocal state, newton, nev
            pred, out = simulate(dismech_kbar_to_curvature(kb), state)
            nev += 1
            newton += int(out[3])
            ok = bool(out[2]) and bool(np.all(np.isfinite(np.asarray(pred))))
            if not ok:
                return np.inf, None
            state = (out[0], out[1])
            lam = float(
                np.sum(np.abs(kstar - limb_curvatures_from_tags(np.asarray(pred))))
            )
            return lam, (pred, out[0])

        alpha, lam_prev = float(alpha0), np.inf
        good = None  # (kbar, grad) of the last point with a successful solve
        it, converged = 0, False
        while True:
            lam, res = run_f(kbar)
            if res is None:  # failed solve: undo the step with half the step size
                if good is None:
                    raise RuntimeError(
                        f"frame {k}: equilibrium solve failed at the initial kbar {kbar}"
                    )
                alpha *= 0.5
                kbar = good[0] - alpha * good[1]
                it += 1
                if it >= max_iter:
                    break
                continue
            last, kbar_last = res, kbar.copy()
            if lam < tol:
                converged = True
                break
            if it >= max_iter:
                break
            if lam > lam_prev:
                alpha *= 0.5
            lam_prev = lam
            grad = np.zeros(2)
            for i in range(2):
                kb = kbar.copy()
                kb[i] += eps
                lam_i, res_i = run_f(kb)
                grad[i] = (lam_i - lam) / eps if res_i is not None else 0.0
            good = (kbar.copy(), grad)
            kbar = kbar - alpha * grad
            it += 1
        kbar = kbar_last  # the last point whose solve succeeded (differs only after a failed last step)
        pred, q = last
        e_tip, e_rms = _errors(pred, targets[k], problem.weights)
        theta = dismech_kbar_to_curvature(kbar)
        out_theta.append(theta)
        tip.append(e_tip)
        rms.append(e_rms)
        its.append(it)
        nevs.append(nev)
        nits.append(newton)
        conv.append(converged)
        tags.append(np.asarray(pred))
        qs.append(np.asarray(q))
        if progress and (k % max(1, F // 20) == 0 or k == F - 1):
            print(
                f"  [DisMech FD] frame {k + 1:4d}/{F}  kappa = ({theta[0]:7.3f}, {theta[1]:7.3f}) 1/m  "
                f"tip err {e_tip:6.3f} mm  lambda {lam:.2e}  its {it:3d}  solves {nev:4d}  "
                f"wall {time.perf_counter() - wall0:7.2f} s",
                flush=True,
            )
    wall = time.perf_counter() - wall0
    return _fit_result(
        f"DisMech Algorithm 1 ({sim} F): forward FD, step 0.1 halved on increase, L1 on limb curvatures", F, rows, times, wall, compile_s,
        theta=out_theta, tip=tip, rms=rms, its=its, nevs=nevs, nits=nits, conv=conv, tags=tags, qs=qs,
    )


# ---------------------------------------------------------------------------------------------
# 7. driver, tables and figures
# ---------------------------------------------------------------------------------------------
#: What DisMech's published 2.9 mm is, and why it is not comparable with our figures.
DISMECH_NOT_COMPARABLE = (
    "DisMech's published 2.9 mm (seed 001) is a different quantity: limb curvatures fitted from "
    "tag triplets and replayed in a dynamic run, with an unstated pixel scale, on different "
    "frames; it is not comparable with the figures above (the review of issue 12 found that "
    "DisMech's own fitted curvatures give 7.3 mm under our metric; --baseline dynamic measures it)"
)


def _tag_names():
    return [str(i) for i in TAG_IDS]


def _parse_hold_out(hold_out):
    """Tag ids held out of the loss -> sorted tuple (``()`` for none)."""
    if hold_out is None or (isinstance(hold_out, str) and hold_out.strip().lower() in ("", "none")):
        return ()
    if isinstance(hold_out, (int, np.integer, str)):
        hold_out = [hold_out]
    ids = []
    for h in hold_out:
        parts = h.split(",") if isinstance(h, str) else [h]
        for p in parts:
            try:
                ids.append(int(p))
            except (TypeError, ValueError):
                raise ValueError(f"hold_out: not a tag id: {p!r} (tags {TAG_IDS[1]}-{TAG_IDS[-1]})") from None
    bad = [i for i in ids if i not in TAG_IDS[1:]]
    if bad:
        raise ValueError(
            f"hold_out: tag(s) {bad} cannot be held out (free tags are {TAG_IDS[1]}-{TAG_IDS[-1]}; "
            f"{TAG_IDS[0]} is the clamped origin)"
        )
    if len(set(ids)) >= len(TAG_IDS) - 2:
        raise ValueError(f"hold_out {sorted(set(ids))} leaves fewer than 2 tags in the loss")
    return tuple(sorted(set(ids)))


def evaluate_fit(fit: FitResult, targets, hold_out=(), notes=()):
    """:class:`~jaxrod.calibrate.evaluate.EvaluationReport` of a fit: distances [mm] of the free
    tags 102-109 (tag 101 is the clamped origin, zero by construction), with the tags in
    ``hold_out`` (ids) as the held-out markers (they must have been out of the fit's loss)."""
    err = point_errors(fit.tags, targets)[:, 1:] * 1e3
    names = _tag_names()[1:]
    markers = (
        split_markers(len(names), [str(t) for t in hold_out], names=names)
        if hold_out
        else Split.all_train(len(names), "markers")
    )
    rows = Split.all_train(err.shape[0], "frames")
    return evaluate(
        err,
        rows=rows,
        markers=markers,
        units="mm",
        quantity="distance between simulated and measured tag (tags 102-109)",
        marker_names=names,
        notes=notes,
    )


def _fit_one(problem, targets, rows, times, *, base_angle, fit_roll, base_frames, progress, label):
    """Base angle (fitted once or given) and the per-frame fit of ``problem`` (its weights)."""
    if base_angle is None:
        pick = np.unique(
            np.linspace(0, len(rows) - 1, min(int(base_frames), len(rows))).round().astype(int)
        )
        if progress:
            print(f"  [{label}] fitting the base angle on {len(pick)} frames", flush=True)
        beta, gamma, base_info = fit_base_angle(
            problem, targets[pick], fit_roll=fit_roll, progress=progress
        )
        base_info["how"] = "fitted" + (" with camera roll" if fit_roll else "")
    else:
        if base_angle == "chord":
            d = targets[:, 1] - targets[:, 0]
            beta = float(np.mean(np.arctan2(d[:, 1], d[:, 0])))
            how = "first tag chord (not fitted)"
        else:
            beta, how = math.radians(float(base_angle)), "given (not fitted)"
        gamma = 0.0
        base_info = {"how": how, "loss_mm2": float("nan"), "iterations": 0, "solves": 0,
                     "wall_s": 0.0, "compile_s": 0.0, "frames": 0}
        if progress:
            print(f"  base angle beta = {math.degrees(beta):.3f} deg: {how}", flush=True)
    problem = problem.with_nuisance(beta, gamma)
    fit = fit_recording(problem, targets, rows=rows, times=times, progress=progress)
    base_info = dict(base_info, beta_deg=math.degrees(beta), gamma_deg=math.degrees(gamma),
                     fit_roll=fit_roll)
    return problem, base_info, fit


def run_real2sim(
    data_path=None,
    *,
    frames=None,
    n_nodes=49,
    spacing="measured",
    alignment="tip-free",
    tip_arclength="rod-end",
    base_angle=None,
    fit_roll=False,
    base_frames=12,
    hold_out=(109,),
    in_sample_fit=True,
    baseline=None,
    baseline_max_iter=500,
    progress=True,
) -> dict:
    """Read, align, and fit every selected frame (exact gradients), scored by held-out evaluation.

    Two fits share one compiled program (the per-tag weights are an array argument):

    * the *held-out* fit: the tags ``hold_out`` (default the tip, 109) are left out of the loss
      and of the base-angle fit; their errors are predictions (never fitted);
    * with ``in_sample_fit``, the *all-tags* fit (tags 102-109 in the loss, the tip included):
      its tip error is an in-sample residual, shown beside the held-out one, never instead of it.

    Args:
        data_path: the CSV; ``None``: found by :func:`~jaxrod.datasets.soft_limb.find_data_path` (a clear
            ``FileNotFoundError`` when absent).
        frames: see :func:`~jaxrod.datasets.soft_limb.select_frames`.
        n_nodes: odd number of DER nodes.
        spacing: tag arc lengths, ``"measured"`` or ``"uniform"`` (:func:`derive_alignment`).
        alignment: ``"tip-free"`` (default: the scale and the tag arc lengths come from tags
            101-108 and the nominal geometry only, so the held-out tip is a prediction) or
            ``"all-tags"`` (the original definition: tag 109 sets the scale and the arc lengths,
            so a "held-out" tip is out of the loss only). See :func:`derive_alignment`.
        tip_arclength: where tag 109 sits on the rod in the tip-free alignment, ``"rod-end"``
            (default) or ``"last-interval"``.
        base_angle: ``None``: fit ``beta`` once per fit (:func:`fit_base_angle`, on ``base_frames``
            frames spread over the selection, with the camera roll too if ``fit_roll``); ``"chord"``:
            the mean direction of the first tag chord, not fitted; or a fixed angle [deg].
        hold_out: tag ids (102-109) held out of the loss, or ``()``/``None`` (no held-out fit).
        baseline: ``None`` (default: it is slow), ``"dynamic"`` (DisMech's F), ``"static"`` or
            ``"both"`` (see :func:`dismech_baseline`; run with the all-tags base angle).

    Returns a dict with ``data``, ``rows``, ``times``, ``targets`` ``(F, 9, 2)`` [m],
    ``alignment``, ``hold_out`` (ids), ``compile_s`` (the first call of the compiled fit program,
    compile included), ``fits``: ``{"held_out" | "all_tags": {"problem", "base_fit", "fit",
    "evaluation"}}``, ``fit`` (the held-out fit's :class:`FitResult`, else the all-tags one),
    ``problem``, ``baselines`` (``{sim: FitResult}``) and ``baseline`` (the first or ``None``).
    """
    if baseline not in (None, False, "dynamic", "static", "both"):
        raise ValueError(
            f"baseline must be None, 'dynamic', 'static' or 'both', got {baseline!r}"
        )
    hold_out = _parse_hold_out(hold_out)
    if not hold_out and not in_sample_fit:
        raise ValueError("nothing to fit: no held-out tags and in_sample_fit=False")
    data = read_soft_limb_csv(resolve_data_path(data_path))
    rows = select_frames(data, frames)
    alignment = derive_alignment(data, length=2 * LIMB_LENGTH, spacing=spacing,
                                 alignment=alignment, tip_arclength=tip_arclength)
    targets = alignment.to_metres(data.tags_px[rows])
    times = data.times[rows]
    if progress:
        nv = int(data.valid.sum())
        print(
            f"data: {data.path}\n  {len(data.times)} rows, {nv} with all 9 tags, fitting {len(rows)}; "
            f"{alignment.alignment} alignment: tag path 101->{alignment.reference_tag} = "
            f"{alignment.path_length_px:.1f} +- {alignment.path_length_std_px:.1f} px "
            f"set to {alignment.reference_length:.5f} m: scale {alignment.scale * 1e3:.5f} mm/px "
            f"({1 / alignment.scale:.1f} px/m); tag spacing: {spacing}; tag 109 at "
            f"{alignment.tag_arclength[-1] * 1e3:.2f} mm ({alignment.tip_arclength})",
            flush=True,
        )
    problem0 = SoftLimbProblem(alignment, n_nodes=n_nodes)
    t0 = time.perf_counter()
    c0 = time.process_time()
    compile_s = _compile(problem0, targets[0], problem0.initial_state(), progress)
    if progress:
        print(f"  compiled the fit program: {compile_s:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU", flush=True)
    kw = dict(base_angle=base_angle, fit_roll=fit_roll, base_frames=base_frames, progress=progress)
    fits = {}
    if hold_out:
        w = np.asarray(problem0.weights).copy()
        w[[TAG_IDS.index(t) for t in hold_out]] = 0.0
        if progress:
            print(f"held-out fit: tags {list(hold_out)} out of the loss", flush=True)
        prob, base, fit = _fit_one(problem0.with_weights(w), targets, rows, times,
                                   label="held-out", **kw)
        fits["held_out"] = {"problem": prob, "base_fit": base, "fit": fit,
                            "evaluation": evaluate_fit(fit, targets, hold_out,
                                                       notes=[DISMECH_NOT_COMPARABLE])}
    if in_sample_fit:
        if progress:
            print("all-tags fit: tags 102-109 in the loss (tip errors are in-sample residuals)",
                  flush=True)
        prob, base, fit = _fit_one(problem0, targets, rows, times, label="all tags", **kw)
        fits["all_tags"] = {"problem": prob, "base_fit": base, "fit": fit,
                            "evaluation": evaluate_fit(fit, targets, (),
                                                       notes=[DISMECH_NOT_COMPARABLE])}
    total_s = time.perf_counter() - t0
    total_cpu_s = time.process_time() - c0
    ref = fits.get("all_tags", fits.get("held_out"))
    sims = [] if not baseline else [baseline]
    if baseline == "both":
        sims = ["dynamic", "static"]
    baselines = {
        sim: dismech_baseline(
            ref["problem"],
            targets,
            rows=rows,
            times=times,
            max_iter=baseline_max_iter,
            sim=sim,
            progress=progress,
        )
        for sim in sims
    }
    primary = fits.get("held_out", ref)
    return {
        "data": data,
        "rows": rows,
        "times": times,
        "targets": targets,
        "alignment": alignment,
        "hold_out": hold_out,
        "compile_s": compile_s,
        "ours_total_s": total_s,
        "ours_total_cpu_s": total_cpu_s,
        "fits": fits,
        "problem": primary["problem"],
        "base_fit": primary["base_fit"],
        "fit": primary["fit"],
        "baselines": baselines,
        "baseline": next(iter(baselines.values()), None),
    }


def _tip_errors_best_rotation(pred, targets):
    """Tip errors [mm] after the one rigid rotation about the base that best aligns all simulated
    tags ``(F, 9, 2)`` with the measured ones (2-D Procrustes, least squares over all frames and
    tags); a generous re-alignment for a fit whose loss ignores the base angle (gravity is not
    re-applied in the rotated direction)."""
    p = np.asarray(pred).reshape(-1, 2)
    m = np.asarray(targets).reshape(-1, 2)
    ang = np.arctan2(
        np.sum(p[:, 0] * m[:, 1] - p[:, 1] * m[:, 0]),
        np.sum(p[:, 0] * m[:, 0] + p[:, 1] * m[:, 1]),
    )
    c, s = np.cos(ang), np.sin(ang)
    tip = np.asarray(pred)[:, -1]
    rot = np.stack(
        [c * tip[:, 0] - s * tip[:, 1], s * tip[:, 0] + c * tip[:, 1]], axis=-1
    )
    return np.linalg.norm(rot - np.asarray(targets)[:, -1], axis=-1) * 1e3


def tip_error_diagnostics(problem: SoftLimbProblem, fit: FitResult, targets) -> dict:
    """Where a fit's tip (tag 109) error comes from [mm, deg], for reading, not for fitting.

    * ``along_mean_mm`` / ``normal_mean_mm`` / ``normal_abs_mean_mm``: the predicted-minus-measured
      tip split along the model's end tangent (last edge) and normal to it (+: counter-clockwise in
      the image-aligned plane), means over the frames (uses tag 109: evaluation only);
    * ``gap_floor_mm``: mean | model arc gap ``s_109 - s_108`` - measured |108 -> 109| |, the error
      a prediction placed that far beyond the measured tag 108 cannot go below (uses tag 109);
    * ``end_chord_angle_deg_mean`` / ``_std``: measured minus simulated direction of the 107 -> 108
      chord (both tags fitted: an in-sample check of the end tangent, no tag 109);
    * ``tip_segment_self_weight_sag_mm``: ``w a^4 / (8 EI)`` of the unfitted rod beyond tag 108
      (length ``a``) under its own weight ``w = rho g A``, the gravity effect on the tip segment alone
      (closed form, the model's E, radius, density)."""
    T = np.asarray(targets, dtype=float)
    pred = np.asarray(fit.tags)
    cl = np.stack([problem.centerline(q) for q in fit.q])
    tan = cl[:, -1] - cl[:, -2]
    tan /= np.linalg.norm(tan, axis=1, keepdims=True)
    nrm = np.stack([-tan[:, 1], tan[:, 0]], axis=1)
    e = (pred[:, 8] - T[:, 8]) * 1e3
    s = np.asarray(problem.alignment.tag_arclength)
    gap = s[8] - s[7]
    meas_gap = np.linalg.norm(T[:, 8] - T[:, 7], axis=1)

    def chord_angle(x):
        c = x[:, 7] - x[:, 6]
        return np.arctan2(c[:, 1], c[:, 0])

    dang = np.degrees(np.angle(np.exp(1j * (chord_angle(T) - chord_angle(pred)))))
    area = math.pi * RADIUS**2
    ei = YOUNGS_MODULUS * math.pi * RADIUS**4 / 4.0
    a = problem.length - s[7]
    return {
        "along_mean_mm": float(np.mean(np.sum(e * tan, axis=1))),
        "normal_mean_mm": float(np.mean(np.sum(e * nrm, axis=1))),
        "normal_abs_mean_mm": float(np.mean(np.abs(np.sum(e * nrm, axis=1)))),
        "model_gap_mm": float(gap * 1e3),
        "measured_gap_mean_mm": float(np.mean(meas_gap) * 1e3),
        "gap_floor_mm": float(np.mean(np.abs(gap - meas_gap)) * 1e3),
        "end_chord_angle_deg_mean": float(np.mean(dang)),
        "end_chord_angle_deg_std": float(np.std(dang)),
        "tag_108_error_mean_mm": float(np.mean(np.linalg.norm(pred[:, 7] - T[:, 7], axis=1)) * 1e3),
        "tip_segment_length_mm": float(a * 1e3),
        "tip_segment_self_weight_sag_mm": float(DENSITY * GRAVITY * area * a**4 / (8.0 * ei) * 1e3),
    }


def summarize_real2sim(result: dict) -> dict:
    """JSON-ready summary of :func:`run_real2sim`: data, alignment, each fit with its evaluation
    (in-sample vs held-out), timings (compile included and excluded) and the baselines."""
    from .real_data_baselines import tip_extrapolation_baselines

    al = result["alignment"]
    out = {
        "data": str(result["data"].path),
        "rows_total": len(result["data"].times),
        "rows_valid": int(result["data"].valid.sum()),
        "frames_fitted": len(result["rows"]),
        "scale_mm_per_px": al.scale * 1e3,
        "scale_definition": (
            f"mean tag polyline 101->{al.reference_tag} = {al.path_length_px:.2f} +- "
            f"{al.path_length_std_px:.2f} px set to {al.reference_length:.5f} m"
        ),
        "alignment": al.alignment,
        "alignment_uses_tag_109": al.uses_tip,
        "tip_arclength_rule": al.tip_arclength,
        "provenance": dict(al.provenance),
        "tag_spacing": al.spacing,
        "tag_arclength_mm": [round(float(v) * 1e3, 3) for v in al.tag_arclength],
        "n_nodes": int(result["problem"].n_nodes),
        "held_out_tags": list(result["hold_out"]),
        "compile_s": result["compile_s"],
        "ours_total_s": result["ours_total_s"],
        "ours_total_cpu_s": result["ours_total_cpu_s"],
        "dismech_published_2_9_mm": DISMECH_NOT_COMPARABLE,
    }
    for name, f in result["fits"].items():
        out[f"fit_{name}"] = dict(
            f["fit"].summary(), base_fit=f["base_fit"], evaluation=f["evaluation"].as_dict()
        )
    # model-free tip predictions in the same alignment, on the same frames (what the held-out tip
    # must beat); each row says whether it uses tag 109
    out["tip_baselines"] = tip_extrapolation_baselines(result["targets"], al)
    ours_loop = sum(f["fit"].wall_s for f in result["fits"].values())
    for sim, b in result.get("baselines", {}).items():
        out[f"baseline_{sim}"] = dict(
            b.summary(),
            mean_tip_error_mm_own_rotation=float(
                np.mean(_tip_errors_best_rotation(b.tags, result["targets"]))
            ),
            speedup_fit_loops=b.wall_s / ours_loop,
            speedup_incl_compile_and_base_fits=(b.wall_s + b.compile_s) / result["ours_total_s"],
        )
    return out


def format_summary(summary: dict) -> str:
    """Human-readable lines of :func:`summarize_real2sim`: every figure says whether it is
    in-sample (fitted) or held-out (predicted), and every time whether compilation is included."""
    uses_tip = summary.get("alignment_uses_tag_109", True)
    lines = [
        f"frames fitted: {summary['frames_fitted']} (of {summary['rows_valid']} valid rows, {summary['rows_total']} rows)",
        (
            f"{summary.get('alignment', 'all-tags')} alignment: scale {summary['scale_mm_per_px']:.5f} mm/px "
            f"({summary['scale_definition']}); tag spacing {summary['tag_spacing']}; tag 109 at "
            f"{summary['tag_arclength_mm'][-1]:.2f} mm ({summary.get('tip_arclength_rule', 'measured')}); "
            f"rod of {summary['n_nodes']} nodes"
        ),
    ]
    for k, v in summary.get("provenance", {}).items():
        lines.append(f"  {k}: {v}")
    ho_how = ("out of the loss, the base-angle fit, the scale and the tag arc lengths" if not uses_tip
              else "out of the loss and the base-angle fit only: tag 109 still sets the scale and the "
                   "tag arc lengths, so its error is not a clean prediction")
    titles = {
        "held_out": f"held-out fit (tags {summary['held_out_tags']} {ho_how})",
        "all_tags": "all-tags fit (tags 102-109 in the loss: every figure is in-sample)",
    }
    timing = []
    for name in ("held_out", "all_tags"):
        f = summary.get(f"fit_{name}")
        if f is None:
            continue
        b = f["base_fit"]
        line = f"{titles[name]}: base angle beta = {b['beta_deg']:.3f} deg ({b['how']})"
        if b["fit_roll"]:
            line += f", camera roll gamma = {b['gamma_deg']:.3f} deg"
        lines.append(line)
        ev = f["evaluation"]
        for k, st in ev["blocks"].items():
            kind = "fitted" if k == "in-sample" else "never in the loss: prediction"
            lines.append(
                f"  {k:<17s} tag error [mm]: mean {st['mean']:.3f}  RMS {st['rms']:.3f}  max {st['max']:.3f}  "
                f"(n {st['n']}; {kind})"
            )
        tip = ev["per_marker"]["109"]
        if "109" not in ev["markers"]["test"]:
            tip_kind = "in the loss: in-sample residual"
        elif uses_tip:
            tip_kind = "out of the loss, but it sets the scale: not a clean prediction"
        else:
            tip_kind = "held out, tip-free alignment: prediction"
        lines.append(
            f"  tip (109) error [mm]: mean {tip:.3f}, max {f['max_tip_error_mm']:.3f} ({tip_kind}); "
            f"{f['iterations']} L-BFGS iterations, {f['evaluations']} solves, "
            f"{f['frames_not_converged']} frames not converged"
        )
        timing.append(
            f"{name.replace('_', '-')}: base-angle fit {b['wall_s']:.1f} s + per-frame fit {f['wall_s']:.1f} s"
        )
    lines.append(
        f"time (ours): compile {summary['compile_s']:.1f} s (first call of the fit program, once); "
        + "; ".join(timing)
        + f"; total incl. compile {summary['ours_total_s']:.1f} s wall, {summary['ours_total_cpu_s']:.1f} s CPU"
    )
    for b in summary.get("tip_baselines", []):
        lines.append(
            f"tip baseline (no model, same frames and alignment): {b['baseline']}: mean {b['mean_mm']:.3f} mm, "
            f"max {b['max_mm']:.3f} mm ({'USES tag 109' if b['uses_tip'] else 'tip-free'}: {b['information']})"
        )
    lines.append(f"note: {summary['dismech_published_2_9_mm']}")
    for key, b in summary.items():
        if not key.startswith("baseline_"):
            continue
        sim = key[9:]
        lines.append(
            f"DisMech's FD scheme (Algorithm 1, {sim} F; loss: L1 on limb curvatures, so every tag is "
            f"out of its loss): tip error mean {b['mean_tip_error_mm']:.3f} mm, max {b['max_tip_error_mm']:.3f} mm "
            f"under our metric ({b['mean_tip_error_mm_own_rotation']:.3f} mm after its own best rigid rotation), "
            f"{b['evaluations']} simulations, {b['frames_not_converged']} frames not converged; "
            f"{b['wall_s']:.1f} s loop + {b['compile_s']:.1f} s compile"
        )
        why = ("static solves vs its 300-step dynamic runs, not exact gradients"
               if sim == "dynamic" else "the optimisation scheme alone (same static solver)")
        lines.append(
            f"  speed-up of ours vs it: {b['speedup_fit_loops']:.1f}x (fit loops only, compile excluded), "
            f"{b['speedup_incl_compile_and_base_fits']:.1f}x (compile and our base-angle fits included); "
            f"this measures {why}"
        )
    return "\n".join(lines)


def results_table(fit: FitResult, baseline: FitResult | None = None, tip_held_out=False):
    """``(header, rows)`` of the per-frame table (CSV-ready); ``csv_line`` is the frame's line in
    the data file (the header is line 1), ``fd_*`` the baseline's columns. The tip column is
    ``tip_error_held_out_mm`` (a prediction) when the tip was out of the fit's loss, else
    ``tip_error_in_sample_mm``; ``fitted_tag_rms_error_mm`` is over the tags in the loss."""
    header = [
        "csv_line",
        "time_s",
        "kappa1_per_m",
        "kappa2_per_m",
        "phi1_deg",
        "phi2_deg",
        "tip_error_held_out_mm" if tip_held_out else "tip_error_in_sample_mm",
        "fitted_tag_rms_error_mm",
        "iterations",
        "solves",
        "newton_iterations",
    ]
    if baseline is not None:
        header += [
            "fd_kappa1_per_m",
            "fd_kappa2_per_m",
            "fd_tip_error_mm",
            "fd_tag_rms_error_mm",
            "fd_iterations",
            "fd_solves",
            "fd_converged",
        ]
    out = []
    for i in range(len(fit.rows)):
        r = [
            int(fit.rows[i]) + 2,
            fit.times[i],
            *fit.theta[i],
            *fit.limb_angles_deg[i],
            fit.tip_error_mm[i],
            fit.rms_error_mm[i],
            int(fit.iterations[i]),
            int(fit.evaluations[i]),
            int(fit.newton_iterations[i]),
        ]
        if baseline is not None:
            r += [
                *baseline.theta[i],
                baseline.tip_error_mm[i],
                baseline.rms_error_mm[i],
                int(baseline.iterations[i]),
                int(baseline.evaluations[i]),
                int(baseline.converged[i]),
            ]
        out.append(r)
    return header, out


def write_results_csv(path, fit: FitResult, baseline: FitResult | None = None, tip_held_out=False):
    header, rows = results_table(fit, baseline, tip_held_out)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in r])


def plot_real2sim(result: dict, path=None, n_shapes=6, dpi=110):
    """Figure: measured tags vs fitted centerlines (the held-out fit) for ``n_shapes`` frames, tip
    error vs time (held out and in-sample, labelled as such; the baseline's if run), and the
    fitted limb angles vs time. Saved to ``path`` if given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fit, base = result["fit"], result["baseline"]
    targets, problem = result["targets"], result["problem"]
    t = result["times"]
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax0, ax1, ax2 = fig.subplots(1, 3, width_ratios=[1.25, 1, 1])
    pick = np.unique(
        np.linspace(0, len(t) - 1, min(n_shapes, len(t))).round().astype(int)
    )
    colors = [f"C{i}" for i in range(10)]
    for j, k in enumerate(pick):
        c = colors[j % 10]
        line = problem.centerline(fit.q[k]) * 1e3
        ax0.plot(
            line[:, 0], line[:, 1], "-", color=c, lw=1.6, label=f"t = {t[k]:.1f} s"
        )
        if base is not None:
            bl = problem.centerline(base.q[k]) * 1e3
            ax0.plot(bl[:, 0], bl[:, 1], ":", color=c, lw=1.2)
        ax0.plot(
            targets[k, :, 0] * 1e3,
            targets[k, :, 1] * 1e3,
            "o",
            color=c,
            ms=4,
            mfc="none",
        )
    ax0.set_aspect("equal")
    ax0.set_xlabel("x [mm]")
    ax0.set_ylabel("z [mm] (image up)")
    ho = result.get("hold_out", ())
    ax0.set_title(
        "tags (o) vs fit (-)"
        + (f", tags {list(ho)} held out" if ho else "")
        + (", DisMech FD (:)" if base is not None else "")
    )
    ax0.legend(fontsize=7, loc="lower left")
    fits = result.get("fits", {})
    if "held_out" in fits:
        f = fits["held_out"]["fit"]
        how = ("prediction (tip-free alignment)" if not result["alignment"].uses_tip
               else "out of the loss, sets the scale")
        ax1.plot(t, f.tip_error_mm, "-", lw=1.2,
                 label=f"tip held out: {how} (mean {f.tip_error_mm.mean():.2f} mm)")
    if "all_tags" in fits:
        f = fits["all_tags"]["fit"]
        ax1.plot(t, f.tip_error_mm, "-", lw=1.0, alpha=0.8,
                 label=f"tip in the loss: in-sample residual (mean {f.tip_error_mm.mean():.2f} mm)")
    if base is not None:
        ax1.plot(
            t,
            base.tip_error_mm,
            ":",
            lw=1.0,
            label=f"DisMech FD scheme, our metric (mean {base.tip_error_mm.mean():.2f} mm)",
        )
    # no line for DisMech's published 2.9 mm: a different quantity, not comparable (see the summary)
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("tip error [mm]")
    ax1.legend(fontsize=7)
    ax1.set_title("tip (tag 109) error per frame")
    ang = fit.limb_angles_deg
    ax2.plot(t, ang[:, 0], "-", color="C0", label="limb 1 (ours)")
    ax2.plot(t, ang[:, 1], "-", color="C1", label="limb 2 (ours)")
    if base is not None:
        b = base.limb_angles_deg
        ax2.plot(t, b[:, 0], ":", color="C0", label="limb 1 (DisMech FD)")
        ax2.plot(t, b[:, 1], ":", color="C1", label="limb 2 (DisMech FD)")
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("natural turning angle kappa x 0.075 m [deg]")
    ax2.legend(fontsize=7)
    ax2.set_title("fitted actuation" + (" (tip held out)" if ho else ""))
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=dpi)
    return fig


# ---- command line (options: jaxrod.cases.cli_args) ----


def run_from_args(args):
    """Fit, print and write the outputs for parsed :func:`add_arguments` options; returns
    ``(result, summary)`` (see :func:`run_real2sim` and :func:`summarize_real2sim`)."""
    result = run_real2sim(
        resolve_data_path(args.data),
        frames=args.frames,
        n_nodes=args.nodes,
        spacing=args.spacing,
        alignment=args.alignment,
        tip_arclength=args.tip_arclength,
        base_angle=args.base_angle
        if args.base_angle in (None, "chord")
        else float(args.base_angle),
        fit_roll=args.camera_roll,
        base_frames=args.base_frames,
        hold_out=args.hold_out,
        in_sample_fit=not args.no_in_sample,
        baseline=args.baseline,
        baseline_max_iter=args.baseline_max_iter,
        progress=not args.quiet,
    )
    summary = summarize_real2sim(result)
    print(format_summary(summary))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        fig_path = os.path.join(args.out, "real2sim_soft_limb.png")
        csv_path = os.path.join(args.out, "real2sim_soft_limb_frames.csv")
        json_path = os.path.join(args.out, "real2sim_soft_limb_summary.json")
        plot_real2sim(result, fig_path)
        # per-frame, the held-out fit (else the all-tags one), with the first baseline
        write_results_csv(csv_path, result["fit"], result["baseline"],
                          tip_held_out=TAG_IDS[-1] in result["hold_out"])
        with open(json_path, "w") as fh:
            json.dump(summary, fh, indent=2)
        print(f"wrote {fig_path}, {csv_path}, {json_path}")
    return result, summary
