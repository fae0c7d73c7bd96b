"""Parallel continuum robot: the 6-DOF continuum Stewart-Gough platform of Till, Aloi & Rucker
(2019, sec. 5.1; spec ``seed000_till_cosserat.md`` sec. 7.1): :class:`StewartGough`.

Six identical Cosserat legs leave a fixed base plate through holes (pose known, axis ``+z``,
``R_i(0) = I``) and are clamped to one rigid end-effector plate (mass ``m_e``, body inertia
``J_e``, centre ``p_e``, orientation ``R_e = exp(k^)``). The control is each leg's length
``L_i(t)`` (:class:`LegLengths`, a piecewise-linear array-leaf profile). Per time step the 42
unknowns ``G = {p_e, k, n_i(0), m_i(0)}`` solve the 42 residuals (spec eqs. 13-16):

    ``E^F = F_e + m_e g - sum n_i(L_i) - m_e a_e``
    ``E^M = M_e - sum [m_i(L_i) + (R_e r_i) x n_i(L_i)] - R_e J_e R_e^T w_t,e - w_e x R_e J_e R_e^T w_e``
    ``E^p_i = p_e + R_e r_i - p_i(L_i)``,   ``E^R_i = (R_e^T R_i(L_i) - R_i(L_i)^T R_e)^v / 2``

with one Newton solve (exact ``jax.jacfwd`` Jacobian through the six vmapped arc-length
integrations, :func:`~jaxrod.solvers.newton.newton_solve`). The plate's time derivatives use the
same implicit formula as the rods (spec 7.1): ``v_e = c0 p_e + p_e^h``, ``a_e = c0 v_e + v_e^h``,
``w_e^ = skew[(c0 R_e + R_e^h) R_e^T]``, ``w_t,e = c0 w_e + w_e^h`` and the extension rate
``L_t,i = c0 L_i + L_i^h`` (so the plate history carries ``p, v, R (9), w, L``). Statics is the
same residual with ``c0 = 0`` and zero history (the infinite time step).

Legs of changing length. Each leg is a :class:`~jaxrod.models.cosserat.CosseratModel` integrated
over a fixed grid of ``n_points`` in the normalised arc length ``sigma = s * ell / L_i``
(``ell``: the template rod's reference length), as the authors' code does (``N`` points over
``[0, L_i]``): with the stretch ``lambda_i = L_i / ell`` every ``s``-derivative becomes
``d/dsigma = lambda_i d/ds``, which is exactly the original ODE with the stiffnesses divided by
``lambda_i``, the reference strains, inertias, drag and distributed loads multiplied by it and
the strain variables ``v, u`` reported multiplied by it (:class:`_Leg`). Histories are kept per
grid index in true units, like the authors' code; material that passes through the base hole
enters with ``q_i(0) = (0, 0, L_t,i)``, ``w_i(0) = 0`` (spec 7.1 [REPO]). The convective change
of which material sits at a grid index is neglected (as there).

Inverse kinematics (:func:`solve_inverse_static`): the same static residual with the six
lengths as unknowns in place of the plate pose.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ...geometry import rotation_matrix, unskew
from ...integrate.base import AbstractStepper
from ...integrate.loop import _f
from ...integrate.results import ConvergenceError, Trajectory, newton_stats
from ...solvers.jacobian import DenseJacobianSolver
from ...solvers.newton import NewtonResult, NewtonSolver, newton_solve, placeholder_factorization
from ...integrate.schemes import DifferenceFormula
from ...validation import check_finite, check_nonnegative, check_positive, check_shape, is_traced
from ...signals import Constant
from .model import CosseratModel, StepConstants
from .rod import CosseratRod

N_LEGS = 6

#: Dynamic steps: chord iterations with the Jacobian carried over from the previous step. A
#: Jacobian costs ~19 residuals here (200 Euler points: 5.3 vs 0.28 ms CPU), so chord steps are
#: kept while they contract at all (0.97, budget 40): measured 3.5 s instead of 4.7 s CPU for the
#: 600 steps of the paper's run (7.1 iterations and 0.74 Jacobians per step instead of 5.6, 1.11).
DEFAULT_SOLVER = NewtonSolver(
    rtol=1e-10, atol=1e-10, max_steps=60, linear_solver=DenseJacobianSolver(), reuse_jacobian=True,
    max_contraction=0.97, chord_budget=40.0, chord_restart=50,
)
#: Static solves (from :meth:`StewartGough.initial_guess` or a nearby solution; a
#: Levenberg-Marquardt fallback would double the compile time).
DEFAULT_STATIC_SOLVER = NewtonSolver(rtol=1e-11, atol=1e-11, max_steps=60, linear_solver=DenseJacobianSolver())
#: Inverse statics along a path (:func:`solve_inverse_static`): the static tolerances, with chord
#: steps on the factorisation carried from pose to pose (nearby poses, nearly the same Jacobian).
DEFAULT_PATH_SOLVER = NewtonSolver(rtol=1e-11, atol=1e-11, max_steps=60, linear_solver=DenseJacobianSolver(),
                                   reuse_jacobian=True)

#: Till et al. sec. 5.1 / the authors' public code (spec 7.1 parameter table).
PAPER = {
    "youngs_modulus_pa": 207e9, "shear_modulus_pa": 207e9 / 2.6, "radius_m": 1e-3, "density_kg_m3": 8000.0,
    "pattern_radius_m": 0.087, "major_angle_deg": 100.0, "plate_mass_kg": 0.0921,
    "plate_inertia_kg_m2": (1.91e-4, 1.91e-4, 3.81e-4), "dt_s": 1.0 / 120.0, "alpha": -0.2, "n_points": 200,
    "start_m": (0.0, 0.0, 0.5), "end_m": (-0.2, 0.0, 0.5), "actuated_frames": 300, "free_frames": 300,
}


def stewart_gough_pattern(radius=0.087, major_angle_deg=100.0):
    """``(base_points (6, 3), plate_points (6, 3))`` [m]: the hexagonal Stewart-Gough hole pattern
    of radius ``radius`` [m] with major angle ``major_angle_deg`` (minor angle 120 deg minus it)
    on the base, and the swapped pattern (major and minor exchanged) on the plate, as in the
    authors' code: base holes at -10, 10, 110, 130, 230, 250 deg and plate holes at -50, 50, 70,
    170, 190, 290 deg for 100 deg. Both patterns are symmetric about the x-z plane."""
    a1 = np.deg2rad(float(major_angle_deg))
    if not (0.0 < a1 < np.deg2rad(120.0)):
        raise ValueError(f"major_angle_deg must be in (0, 120) deg, got {major_angle_deg}")
    check_positive("radius", radius, "m")
    a2 = np.deg2rad(120.0) - a1
    i = np.arange(N_LEGS)
    pair = (i + 1) - (i + 1) % 2  # 0, 2, 2, 4, 4, 6
    even = i - i % 2  # 0, 0, 2, 2, 4, 4
    tb = (-a2 + pair * a2 + even * a1) / 2
    tp = (-a1 + pair * a1 + even * a2) / 2
    ring = lambda th: float(radius) * np.stack([np.cos(th), np.sin(th), np.zeros_like(th)], axis=1)
    return ring(tb), ring(tp)


class LegLengths(eqx.Module):
    """Leg lengths [m] as a piecewise-linear function of time, held constant outside
    ``[times[0], times[-1]]``.

    Attributes:
        times: ``(K,)`` increasing sample times [s].
        values: ``(K, 6)`` leg lengths [m] at those times.
    """

    times: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    values: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))

    def __check_init__(self):
        check_shape("LegLengths.times", self.times, (None,))
        check_shape("LegLengths.values", self.values, (np.shape(self.times)[0], N_LEGS))
        check_finite("LegLengths.times", self.times)
        check_positive("LegLengths.values", self.values, "m")
        if not is_traced(self.times) and np.any(np.diff(np.asarray(self.times)) <= 0):
            raise ValueError(f"LegLengths.times must be strictly increasing [s], got {np.asarray(self.times).tolist()}")

    @classmethod
    def constant(cls, lengths):
        """Fixed lengths ``(6,)`` [m]."""
        return cls(jnp.zeros(1), jnp.asarray(lengths, dtype=float)[None])

    def __call__(self, t):
        """``(6,)`` lengths [m] at time ``t`` [s]."""
        return jax.vmap(lambda v: jnp.interp(t, self.times, v), in_axes=1)(self.values)


class _Leg(CosseratModel):
    """One leg on the normalised grid (see the module docstring): ``stretch = L_i / ell`` and
    ``rate = L_t,i`` [m/s] (material entering through the base hole)."""

    stretch: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=1.0)
    rate: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=0.0)

    def base_state(self, t):
        p, h, q, w = super().base_state(t)
        return p, h, q.at[2].set(self.rate), w

    def step_constants(self, c0, load_factor=1.0) -> StepConstants:
        P = super().step_constants(c0, load_factor)
        lam = self.stretch
        # d/dsigma = lam d/ds: stiffness / lam, everything per reference length * lam
        return dataclasses.replace(
            P, inv_se=lam * P.inv_se, inv_bt=lam * P.inv_bt, K_se=P.K_se / lam, K_bt=P.K_bt / lam,
            B_se=P.B_se / lam, B_bt=P.B_bt / lam, v_star=lam * P.v_star, u_star=lam * P.u_star,
            rhoA=lam * P.rhoA, rhoJ=lam * P.rhoJ, drag=lam * P.drag, f_ext=lam * P.f_ext, l_ext=lam * P.l_ext,
        )


def _strain_units(w, factor):
    """``[q, w, v, u]`` grids with ``v, u`` multiplied by ``factor`` (broadcast over the grid)."""
    return w.at[..., 6:12].multiply(factor)


class ParallelState(eqx.Module):
    """State of the robot at one instant.

    Attributes:
        unknowns: ``((6,) plate [p_e / ell, k], (6, 6) scaled base loads [n_i(0), m_i(0)])``.
        legs: ``(6, N, 19)`` leg state grids ``[p, h, n, m, q, w]`` (``n, m`` global).
        grid_variables: ``((6, N, 12), (6, N-1, n_stages, 12), plate dict)``: the variables whose
            time derivatives enter, in true units (``v, u`` per unit length), and the plate's
            ``p, v, R, w, L``.
        carrier: history carrier of the difference formula (``None`` before the first step).
    """

    unknowns: tuple
    legs: jax.Array
    grid_variables: tuple
    carrier: object = None

    @property
    def plate_position(self):
        return self.grid_variables[2]["p"]

    @property
    def plate_rotation(self):
        return self.grid_variables[2]["R"]

    @property
    def lengths(self):
        return self.grid_variables[2]["L"]


class ParallelTrajectory(Trajectory):
    """:class:`~jaxrod.integrate.Trajectory` of a :class:`StewartGough` run.

    ``positions (T, 6 N + 1, 3)``: the six leg centrelines (leg by leg) and, last, the plate
    centre (so ``tip`` is ``p_e``); ``q (T, 6, N, 19)`` the leg state grids; ``frames``,
    ``twist``, ``v`` are ``None``. Extra fields: ``plate_position (T, 3)`` [m],
    ``plate_rotation (T, 3, 3)``, ``lengths (T, 6)`` [m] (NaN after a failed step).
    """

    plate_position: jax.Array | None = None
    plate_rotation: jax.Array | None = None
    lengths: jax.Array | None = None

    @property
    def tip_force(self):
        """``(T, 6, 3)`` internal force at each leg's plate end, ``n_i(L_i)`` [N] (global)."""
        return self.q[:, :, -1, 7:10]

    @property
    def tip_moment(self):
        """``(T, 6, 3)`` internal moment at each leg's plate end, ``m_i(L_i)`` [N m] (global)."""
        return self.q[:, :, -1, 10:13]

    @property
    def tilt(self):
        """``(T,)`` angle [rad] between the plate normal and ``+z``."""
        return jnp.arccos(jnp.clip(self.plate_rotation[:, 2, 2], -1.0, 1.0))


class StewartGough(eqx.Module):
    """Continuum Stewart-Gough platform (see the module docstring).

    Attributes:
        leg: template :class:`~jaxrod.models.cosserat.CosseratModel` of one leg: its rod's
            ``length`` is the reference length ``ell`` [m] (scales of the unknowns; the actual
            lengths come from ``lengths``), ``n_points``, ``integrator``, ``gravity`` (``(3,)``
            [m/s^2], also acting on the plate), damping and drag. Its base pose and tip loads
            are ignored.
        base_points: ``(6, 3)`` hole positions in the base plate [m] (legs leave along ``+z``).
        plate_points: ``(6, 3)`` attachment offsets ``r_i`` in the plate frame [m].
        plate_mass: [kg]; plate_inertia: ``(3,)`` principal body inertia ``J_e`` [kg m^2].
        lengths: :class:`LegLengths`, the control ``L_i(t)``.
        plate_force, plate_moment: ``(3,)`` external ``F_e`` [N], ``M_e`` [N m] at the plate
            centre (global), times ``load_profile(t)`` (e.g. ``ReleasedAt(0)`` for a push that
            shapes the initial state and is released).
    """

    leg: CosseratModel
    base_points: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    plate_points: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    plate_mass: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    plate_inertia: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float))
    lengths: LegLengths
    plate_force: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    plate_moment: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    load_profile: eqx.Module = Constant()

    def __check_init__(self):
        if not isinstance(self.leg, CosseratModel):
            raise TypeError(f"leg must be a CosseratModel, got {type(self.leg).__name__}")
        if self.leg.tendons or self.leg.point_loads or getattr(self.leg, "chambers", ()) or int(self.leg.segments) != 1:
            # their loads would need the same stretch scaling as the distributed loads (not done)
            raise ValueError("leg must be a plain rod: no tendons, point loads or chambers, segments = 1; got "
                             f"{len(self.leg.tendons)} tendons, {len(self.leg.point_loads)} point loads, "
                             f"segments = {self.leg.segments}")
        check_shape("base_points", self.base_points, (N_LEGS, 3))
        check_shape("plate_points", self.plate_points, (N_LEGS, 3))
        check_finite("base_points", self.base_points)
        check_finite("plate_points", self.plate_points)
        check_positive("plate_mass", self.plate_mass, "kg")
        check_shape("plate_inertia", self.plate_inertia, (3,))
        check_nonnegative("plate_inertia", self.plate_inertia, "kg m^2")
        check_shape("plate_force", self.plate_force, (3,))
        check_shape("plate_moment", self.plate_moment, (3,))
        check_finite("plate_force", self.plate_force)
        check_finite("plate_moment", self.plate_moment)
        if not isinstance(self.lengths, LegLengths):
            raise TypeError(f"lengths must be LegLengths, got {type(self.lengths).__name__}")

    @classmethod
    def paper(cls, lengths, *, n_points: int = 200, integrator: str = "euler", kirchhoff: bool = False,
              reference_length: float = 0.5, **kw) -> StewartGough:
        """The robot of Till et al. sec. 5.1 (:data:`PAPER`): steel legs E 207 GPa, G = E/2.6,
        r 1 mm, rho 8000; hole pattern radius 87 mm, major angle 100 deg; acrylic plate 92.1 g,
        ``J = diag(1.91, 1.91, 3.81) 10^-4 kg m^2``; gravity ``-9.81 e_z``; no damping.
        ``lengths``: :class:`LegLengths` (or ``(6,)`` fixed lengths [m]); ``n_points``,
        ``integrator``, ``kirchhoff``: the legs' grid (see :class:`CosseratModel`)."""
        p = PAPER
        rod = CosseratRod.circular(reference_length, p["radius_m"], youngs_modulus=p["youngs_modulus_pa"],
                                   shear_modulus=p["shear_modulus_pa"], density=p["density_kg_m3"])
        leg = _Leg(rod, n_points=n_points, integrator=integrator, kirchhoff=kirchhoff, gravity=(0.0, 0.0, -9.81))
        base, plate = stewart_gough_pattern(p["pattern_radius_m"], p["major_angle_deg"])
        if not isinstance(lengths, LegLengths):
            lengths = LegLengths.constant(lengths)
        return cls(leg, base, plate, p["plate_mass_kg"], p["plate_inertia_kg_m2"], lengths, **kw)

    # ---- scales and layout ------------------------------------------------------------------
    def stepper(self, scheme=None, solver=None, *, fallback=False):
        """The :class:`ParallelStepper` that :func:`jaxrod.simulate` runs (``fallback`` ignored);
        see :func:`parallel_stepper` for the defaults."""
        return parallel_stepper(self, scheme, solver)

    @property
    def reference_length(self) -> float:
        return self.leg.rod.length

    @property
    def n_points(self) -> int:
        return int(self.leg.n_points)

    @property
    def n_unknowns(self) -> int:
        return 6 + 6 * N_LEGS

    @property
    def topology(self):
        """Drawing connectivity (:func:`jaxrod.plot.node_chains`): each leg's nodes, the plate
        hexagon through the leg ends, and the plate centre (the last node)."""
        n = self.n_points
        legs = [np.arange(i * n, (i + 1) * n) for i in range(N_LEGS)]
        ends = [int(c[-1]) for c in legs]
        order = np.argsort(np.arctan2(np.asarray(self.plate_points)[:, 1], np.asarray(self.plate_points)[:, 0]))
        hexagon = np.array([ends[k] for k in order] + [ends[order[0]]])
        return SimpleNamespace(limb_nodes=tuple(legs) + (hexagon, np.array([N_LEGS * n])))

    @property
    def n_nodes(self) -> int:
        """Rows of ``ParallelTrajectory.positions``: ``6 n_points`` leg nodes and the plate centre."""
        return N_LEGS * self.n_points + 1

    def _template(self) -> _Leg:
        leg = self.leg
        if not isinstance(leg, _Leg):
            leg = _Leg(**{f.name: getattr(leg, f.name) for f in dataclasses.fields(leg)})
        return leg

    def initial_guess(self, plate_position=None, lengths=None):
        """Unknowns for a first static solve: ``((plate (6,), loads (6, 6)), lengths / ell (6,))``.

        The plate at ``plate_position`` (default: over the base centroid at the mean leg length
        of ``lengths``, itself by default the plate height above the base), level; the base loads
        of linear guided beams: each leg bent into the S-curve that moves its end by the lateral
        offset ``d_i`` to its plate hole with both ends vertical (``n = 12 EI d / L^3``,
        ``m(0) = L/2 e3 x n``) and carrying a sixth of the plate weight plus its own. (From zero
        loads the first Newton step over-bends the legs into non-finite values.)
        """
        ell = self.reference_length
        mean_base = jnp.mean(self.base_points, axis=0)
        if plate_position is None:
            L0 = self.lengths(self.lengths.times[0]) if lengths is None else jnp.asarray(lengths, dtype=float)
            plate_position = mean_base + jnp.array([0.0, 0.0, 1.0]) * jnp.mean(L0)
        plate_position = jnp.asarray(plate_position, dtype=float)
        if lengths is None:
            lengths = jnp.full(N_LEGS, plate_position[2] - mean_base[2])
        L = jnp.asarray(lengths, dtype=float)
        d = (plate_position + self.plate_points - self.base_points) * jnp.array([1.0, 1.0, 0.0])
        EI = self.leg.rod.bending_stiffness
        g = self.leg.gravity
        weight = self.plate_mass * g / N_LEGS + self.leg.rod.mass_per_length * g * L[:, None]
        n = 12.0 * EI * d / L[:, None] ** 3 + weight
        m = 0.5 * L[:, None] * jnp.cross(jnp.array([0.0, 0.0, 1.0]), n)
        fs, ms = self.leg.load_scales()
        loads = jnp.concatenate([n / fs, m / ms], axis=1)
        return (jnp.concatenate([plate_position / ell, jnp.zeros(3)]), loads), L / ell

    def zero_history(self):
        """Zero histories of the leg grids and the plate (statics)."""
        wh, wst = self.leg.zero_history()
        rep = lambda a: jnp.broadcast_to(a, (N_LEGS, *a.shape))
        plate = {"p": jnp.zeros(3), "v": jnp.zeros(3), "R": jnp.zeros((3, 3)), "w": jnp.zeros(3),
                 "L": jnp.zeros(N_LEGS)}
        return rep(wh), rep(wst), plate

    # ---- one instant --------------------------------------------------------------------------
    def evaluate(self, plate_pose, leg_loads, L, t, c0, hist):
        """Integrate the legs and form the residual at one instant.

        Args:
            plate_pose: ``(p_e (3,) [m], R_e (3, 3))``.
            leg_loads: ``(6, 6)`` scaled base loads ``[n_i(0) / F_s, m_i(0) / M_s]``
                (``F_s = EI / ell^2``, ``M_s = EI / ell``).
            L: ``(6,)`` leg lengths [m].
            t: time [s]; c0: difference coefficient [1/s] (0: statics); hist: histories
                ``(legs (6, N, 12), stages (6, N-1, n_stages, 12), plate dict)`` (true units).
        Returns:
            ``(residual ((6,), (6, 6)), legs y (6, N, 19), grid_variables)``; the residual is
            ``[E^F / F_s, E^M / M_s]`` and per leg ``[E^p_i / ell, E^R_i]``.
        """
        p, R = plate_pose
        ell = self.reference_length
        fs, ms = self.leg.load_scales()
        wh, wsth, ph = hist
        # plate rates from the implicit formula (all zero in statics: c0 = 0, zero history)
        v = c0 * p + ph["p"]
        a = c0 * v + ph["v"]
        Rdot = c0 * R + ph["R"]
        w = unskew(Rdot @ R.T)
        wt = c0 * w + ph["w"]
        Lt = c0 * L + ph["L"]
        template = self._template()

        def one_leg(bp, lam, rate, G, whi, wsti):
            leg = eqx.tree_at(lambda m: (m.base_position, m.stretch, m.rate), template, (bp, lam, rate))
            P = leg.step_constants(c0)
            y, (wn, wst), (nL, mL, RL), _ = leg.integrate(
                G, t, P, (_strain_units(whi, lam), _strain_units(wsti, lam))
            )
            return y, _strain_units(wn, 1.0 / lam), _strain_units(wst, 1.0 / lam), nL, mL, RL

        lam = L / ell
        y, wn, wst, nL, mL, RL = jax.vmap(one_leg)(self.base_points, lam, Lt, leg_loads, wh, wsth)
        s = self.load_profile(t)
        g = self.leg.gravity
        Jg = (R * self.plate_inertia) @ R.T
        arms = self.plate_points @ R.T  # R_e r_i
        EF = s * self.plate_force + self.plate_mass * (g - a) - jnp.sum(nL, axis=0)
        EM = (s * self.plate_moment - jnp.sum(mL + jnp.cross(arms, nL), axis=0)
              - Jg @ wt - jnp.cross(w, Jg @ w))
        Ep = (p + arms - y[:, -1, 0:3]) / ell
        ER = jax.vmap(lambda Ri: unskew(R.T @ Ri))(RL)
        residual = (jnp.concatenate([EF / fs, EM / ms]), jnp.concatenate([Ep, ER], axis=1))
        plate = {"p": p, "v": v, "R": R, "w": w, "L": L}
        return residual, y, (wn, wst, plate)

    def _forward(self, x, t, c0, hist):
        plate, loads = x
        pose = (plate[:3] * self.reference_length, rotation_matrix(plate[3:]))
        return self.evaluate(pose, loads, self.lengths(t), t, c0, hist)

    def residual(self, x, t, c0, hist):
        """Scaled residual of the forward problem (unknowns ``x = (plate (6,), loads (6, 6))``)."""
        return self._forward(x, t, c0, hist)[0]

    def static_residual(self, x, t=0.0):
        """Forward static residual (the infinite time step) at the lengths of time ``t``."""
        return self.residual(x, t, 0.0, self.zero_history())

    def residual_and_grids(self, x, t, c0, hist):
        """``(residual, (legs y, grid variables))`` (:meth:`evaluate`), for
        ``newton_solve(..., has_aux=True)``: the solve hands back the legs of its solution, so no
        leg sweep follows it."""
        r, y, gv = self._forward(x, t, c0, hist)
        return r, (y, gv)

    def state_from(self, x, t, c0, hist, carrier=None) -> ParallelState:
        _, y, gv = self._forward(x, t, c0, hist)
        return ParallelState(x, y, gv, carrier)


# ---- statics ---------------------------------------------------------------------------------
@eqx.filter_jit
def _static_jit(robot: StewartGough, t, guess, solver):
    res = newton_solve(lambda x, _: robot.residual_and_grids(x, t, 0.0, robot.zero_history()), guess, None, solver,
                       has_aux=True)
    y, gv = res.aux  # the legs of the sweep that accepted the solution
    return ParallelState(res.value, y, gv, None), eqx.tree_at(lambda r: r.aux, res, None)


@eqx.filter_jit
def _state_jit(robot: StewartGough, x, t):
    return robot.state_from(x, t, 0.0, robot.zero_history())


def static_state_from(robot: StewartGough, x, t: float = 0.0) -> ParallelState:
    """The :class:`ParallelState` at rest for unknowns ``x = (plate (6,), loads (6, 6))`` already
    solved (e.g. a pose and the base loads of :func:`solve_inverse_static` with the lengths it
    found): one evaluation of the legs, no Newton solve. The residual is not checked here."""
    return _state_jit(robot, x, _f(t))


def _check_converged(res, what, throw):
    if throw and not bool(res.converged):
        raise ConvergenceError(
            f"{what} did not converge: scaled residual {float(res.residual_norm):.3e} after "
            f"{int(res.iterations)} iterations; give a better guess (e.g. from inverse kinematics)"
        )


def solve_static_parallel(robot: StewartGough, *, t: float = 0.0, guess=None, solver: NewtonSolver | None = None,
                          throw: bool = True) -> tuple[ParallelState, NewtonResult]:
    """Forward statics: the plate pose and leg loads at the leg lengths of time ``t`` [s].

    ``guess``: unknowns ``(plate (6,), loads (6, 6))`` (e.g. ``ParallelState.unknowns`` of a
    nearby solution); default :meth:`StewartGough.initial_guess`. Returns ``(state, result)``.
    """
    solver = DEFAULT_STATIC_SOLVER if solver is None else solver
    if guess is None:
        guess = robot.initial_guess()[0]
    state, res = _static_jit(robot, _f(t), guess, solver)
    _check_converged(res, "static solve of the parallel robot", throw)
    return state, res


def _ik_residual(robot: StewartGough, x, p, R):
    lengths, loads = x
    return robot.evaluate((p, R), loads, lengths * robot.reference_length, 0.0, 0.0, robot.zero_history())[0]


@eqx.filter_jit
def _ik_path_jit(robot, positions, rotations, guess, solver):
    def body(carry, pr):
        x, x_prev, k, fac, have_fac = carry
        # secant predictor from the second solved pose on: near the end of the paper's path the
        # lengths of legs 3, 4 steepen (Euler legs: towards a fold of the branch, which 100
        # Euler points reach at x ~ -0.185 m and 20 at -0.129 m)
        w = jnp.where(k >= 2, 1.0, 0.0)
        start = jax.tree_util.tree_map(lambda a, b: a + w * (a - b), x, x_prev)
        res = newton_solve(lambda z, _: _ik_residual(robot, z, *pr), start, None, solver,
                           factorization=fac, have_factorization=have_fac)
        if solver.reuse_jacobian:  # the next pose starts with chord steps on this factorisation
            fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
        return (res.value, x, k + 1, fac, have_fac), (res.value, res.converged, res.residual_norm)

    fac0 = placeholder_factorization(solver, ravel_pytree(guess)[0]) if solver.reuse_jacobian else None
    init = (guess, guess, jnp.asarray(0), fac0, jnp.asarray(False))
    _, (xs, conv, rn) = jax.lax.scan(body, init, (positions, rotations))
    return xs, conv, rn


def solve_inverse_static(robot: StewartGough, plate_positions, plate_rotations=None, *, guess=None,
                         solver: NewtonSolver | None = None, throw: bool = True):
    """Inverse kinematics by statics: leg lengths that hold the plate at each pose.

    Args:
        plate_positions: ``(K, 3)`` plate centres [m] (solved in order, each from the previous).
        plate_rotations: ``(K, 3, 3)`` (default level, ``I``).
        guess: ``(lengths / ell (6,), loads (6, 6))`` for the first pose; default
            :meth:`StewartGough.initial_guess` (legs as long as the pose is high, guided-beam loads).
        solver: default :data:`DEFAULT_PATH_SOLVER` (chord steps on the factorisation carried
            from pose to pose when ``reuse_jacobian``).
    Returns:
        ``(lengths (K, 6) [m], loads (K, 6, 6) scaled base loads, converged (K,))``.
    """
    solver = DEFAULT_PATH_SOLVER if solver is None else solver
    P = jnp.asarray(plate_positions, dtype=float)
    check_shape("plate_positions", P, (None, 3))
    Rs = jnp.broadcast_to(jnp.eye(3), (P.shape[0], 3, 3)) if plate_rotations is None else jnp.asarray(plate_rotations)
    if guess is None:
        plate_guess, lengths = robot.initial_guess(P[0])
        guess = (lengths, plate_guess[1])
    (lengths, loads), conv, rn = _ik_path_jit(robot, P, Rs, guess, solver)
    if throw and not bool(jnp.all(conv)):
        k = int(np.argmin(np.asarray(conv)))
        raise ConvergenceError(f"inverse kinematics failed at pose {k} ({np.asarray(P[k]).tolist()} m): "
                               f"scaled residual {float(rn[k]):.3e}")
    return lengths * robot.reference_length, loads, conv


# ---- dynamics --------------------------------------------------------------------------------
def parallel_step(robot: StewartGough, formula: DifferenceFormula, solver: NewtonSolver, carrier, x, t_new, dt,
                  factorization=None, have_factorization=False):
    """One implicit step to ``t_new`` [s]: ``(carrier, unknowns, legs y, NewtonResult)``."""
    hist = formula.history(carrier, dt)
    c0 = formula.c0(dt)
    res = newton_solve(lambda z, _: robot.residual_and_grids(z, t_new, c0, hist), x, None, solver,
                       factorization=factorization, have_factorization=have_factorization, has_aux=True)
    y, gv = res.aux  # the legs of the sweep that accepted the solution: no leg sweep after the solve
    res = eqx.tree_at(lambda r: r.aux, res, None)
    return formula.advance(carrier, gv, hist, dt), res.value, y, res


class ParallelStepper(AbstractStepper):
    """:class:`~jaxrod.integrate.base.AbstractStepper` of a :class:`StewartGough` robot: one
    42-unknown Newton solve per step (:func:`parallel_step`), unknowns extrapolated linearly from
    the last two steps (an O(dt^2) predictor).

    Carry: ``(history carrier, unknowns, legs y, factorisation, have_factorisation, previous
    unknowns)``. Frames: ``q`` the legs ``(6, N, 19)``, ``positions`` ``(6 N + 1, 3)`` (legs, then
    the plate centre), ``plate_position`` ``(3,)`` [m], ``plate_rotation`` ``(3, 3)``, ``lengths``
    ``(6,)`` [m].
    """

    robot: StewartGough
    formula: DifferenceFormula
    solver: NewtonSolver

    def init(self, state, t0, dt):
        carrier = self.formula.init(state.grid_variables) if state.carrier is None else state.carrier
        x = state.unknowns
        fac = placeholder_factorization(self.solver, jnp.zeros(self.robot.n_unknowns)) if self.solver.reuse_jacobian else None
        return carrier, x, state.legs, fac, jnp.asarray(False), x

    def step(self, carry, t, dt):
        carrier, x, y, fac, have_fac, x_prev = carry
        guess = jax.tree_util.tree_map(lambda a, b: 2.0 * a - b, x, x_prev)  # O(dt^2) predictor
        carrier, x1, y, res = parallel_step(self.robot, self.formula, self.solver, carrier, guess, t + dt, dt,
                                            fac, have_fac)
        if self.solver.reuse_jacobian:
            fac, have_fac = res.factorization, have_fac | (res.jacobians > 0)
        return (carrier, x1, y, fac, have_fac, x), newton_stats(res)

    def observe(self, carry):
        carrier, _, y = carry[:3]
        plate = carrier[0][2]
        positions = jnp.concatenate([y[..., 0:3].reshape(N_LEGS * self.robot.n_points, 3), plate["p"][None]])
        return {"q": y, "positions": positions, "plate_position": plate["p"], "plate_rotation": plate["R"],
                "lengths": plate["L"]}

    def final(self, carry):
        carrier, x, y = carry[:3]
        return ParallelState(x, y, carrier[0], carrier)

    def describe(self):
        return f"{self.formula.describe()}, {self.robot.n_unknowns} unknowns"

    def start_state(self, state0, t0, *, throw=True, progress=False):
        if state0 is None:
            state0, _ = solve_static_parallel(self.robot, t=t0, throw=throw)
        return state0

    def solve_static(self, *, state0=None, t=0.0, solver=None, load_steps=1, throw=True, progress=False):
        if state0 is not None or int(load_steps) != 1:
            raise ValueError("solve_static(): the parallel robot takes no state0 and load_steps=1 "
                             "(pass guess= to solve_static_parallel)")
        return solve_static_parallel(self.robot, t=t, solver=solver, throw=throw)

    def trajectory(self, times, frames, stats, final, dt, valid):
        return ParallelTrajectory(
            times=times, positions=frames["positions"], frames=None, twist=None, q=frames["q"], v=None,
            stats=stats, final=final, dt=dt, valid=valid, plate_position=frames["plate_position"],
            plate_rotation=frames["plate_rotation"], lengths=frames["lengths"],
        )


def parallel_stepper(robot: StewartGough, scheme=None, solver: NewtonSolver | None = None) -> ParallelStepper:
    """The :class:`ParallelStepper` of ``robot`` (``StewartGough.stepper``): ``scheme`` a
    :class:`~jaxrod.integrate.schemes.DifferenceFormula` (default BDF-alpha(-0.2), the paper's);
    ``solver`` default :data:`DEFAULT_SOLVER`."""
    formula = DifferenceFormula.bdf_alpha(-0.2) if scheme is None else scheme
    if not isinstance(formula, DifferenceFormula):
        if hasattr(formula, "difference_formula"):
            formula = formula.difference_formula()
        else:
            raise TypeError(f"the parallel robot needs a DifferenceFormula scheme, got {type(formula).__name__}")
    return ParallelStepper(robot, formula, DEFAULT_SOLVER if solver is None else solver)
