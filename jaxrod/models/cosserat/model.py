"""The Cosserat / Kirchhoff rod as an arc-length boundary-value problem per time step
(Till, Aloi & Rucker 2019): :class:`CosseratModel`.

Every time derivative is replaced by an implicit difference formula ``y_t = c0 y + y^h``
(:class:`~jaxrod.integrate.schemes.DifferenceFormula`), which leaves, at each time step, an ODE in the
reference arc length ``s`` for the state

    ``y = [p (3), h (4), n (3), m (3), q (3), w (3)]``  (19 per grid node)

(position [m], non-unit orientation quaternion, internal force [N] and moment [N m], local linear
[m/s] and angular [1/s] velocity), with the strains ``v``, ``u`` solved algebraically from the
constitutive law (eq. 6). The *grid variables* whose time derivatives appear are
``w = [q, w, v, u]`` (12 per evaluation point); their histories ``w^h`` are the only memory of the
past. The RK4 sweep evaluates the ODE at three off-node stage points per interval as well, and each
stage point keeps its own history (see :meth:`CosseratModel.integrate`), so that the numerical
damping is that of the time scheme at every grid size.

Shooting: the unknown base force and moment ``G = [n(0), m(0)]`` (scaled by ``EI/L^2`` and
``EI/L``) are guessed, the ODE is integrated from base to tip (explicit Euler or classic RK4, in
``jax.lax.scan``, with jumps at point loads) and the distal boundary condition is the residual
(with ``segments > 1``, multiple shooting: the states at segment starts are unknowns too, the
segments are integrated in parallel with ``jax.vmap`` and continuity joins them):

    ``n(L) = F_tip + m_tip (g - a_tip)``,  ``m(L) = M_tip - R (J_tip w_t + w x J_tip w)``.

Static equilibrium is the same system with ``c0 = 0`` and zero history (infinite time step).
``frame="global"`` integrates ``n, m`` in the global frame (eq. 7), ``frame="local"`` their local
components (sec. 1.5 of the spec); ``kirchhoff=True`` is the unshearable, inextensible reduction
(eq. 11, ``v = v*``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...geometry import quat_to_rotation
from ...validation import check_finite, check_int, check_nonnegative, check_positive, check_shape, is_traced, one_or_many
from ...actuation.chambers import check_chambers
from ...actuation.tendons import check_tendons, section_radius_default
from ...signals import Constant
from . import actuation as _actuation
from .actuation import friction_load, path_tangent, routing_table, tendon_coefficients, termination_loads
from .loads import PointLoad
from .rod import CosseratRod

Y_SIZE = 19
W_SIZE = 12
#: RK4 stage nodes: stage ``i`` evaluates the rhs at ``y + RK4_NODES[i] ds k_{i-1}``, ``s + RK4_NODES[i] ds``.
#: With tendons the sweep loops over the stages (``lax.scan`` of one rhs) instead of inlining four
#: rhs calls per interval: every sweep copy in a program (residual, Jacobian, re-integration) is a
#: quarter of the size, bit-identical results. Measured (2026-11-27, tendon-robot-step, 50 points,
#: process CPU pinned to one core): first ``simulate`` 41.3 -> 19.1 s, 40 steps 0.144 -> 0.130 s
#: (the tendon rhs is large: the loop costs less than the code it replaces). Not without tendons:
#: the Till benchmark's plain rod rhs is small, its 200 steps ran 0.62 -> 0.97-1.07 s (loop
#: overhead), for a first call 12.6 -> 7.6 s.
RK4_NODES = np.array([0.0, 0.5, 0.5, 1.0])


def _cross(a, b):
    return jnp.stack([
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ])


def _mv(R, x):
    """``R @ x`` as fused elementwise work (XLA CPU runs tiny ``dot`` ops slowly)."""
    return R[:, 0] * x[0] + R[:, 1] * x[1] + R[:, 2] * x[2]


def _mtv(R, x):
    """``R.T @ x`` (see :func:`_mv`)."""
    return R[0] * x[0] + R[1] * x[1] + R[2] * x[2]


def _quat_body_rate(h, u):
    """``h_s = h (x) (0, u) / 2`` (eq. 9)."""
    h1, h2, h3, h4 = h[0], h[1], h[2], h[3]
    return 0.5 * jnp.stack([
        -u[0] * h2 - u[1] * h3 - u[2] * h4,
        u[0] * h1 + u[2] * h3 - u[1] * h4,
        u[1] * h1 - u[2] * h2 + u[0] * h4,
        u[2] * h1 + u[1] * h2 - u[0] * h3,
    ])


class StepConstants(eqx.Module):
    """Quantities fixed during one time step's shooting iterations (computed once per step)."""

    c0: jax.Array
    inv_se: jax.Array
    inv_bt: jax.Array
    K_se: jax.Array
    K_bt: jax.Array
    B_se: jax.Array
    B_bt: jax.Array
    v_star: jax.Array
    u_star: jax.Array
    rhoA: jax.Array
    rhoJ: jax.Array
    drag: jax.Array
    f_ext: jax.Array
    l_ext: jax.Array
    #: ``(n_chambers,)`` gauge pressures [Pa] of the current shooting iterate (set by ``integrate``)
    pressures: jax.Array | None = None


class CosseratModel(eqx.Module):
    """A cantilevered Cosserat (or Kirchhoff) rod solved by shooting in arc length.

    The rod is clamped at ``s = 0`` with pose ``(base_position, base_quaternion)`` (its axis is
    the local ``d3`` axis, ``+z`` for the identity quaternion) or a prescribed motion
    ``base_motion(t) -> (p [m], h)``; the tip is free, loaded by ``tip_force``/``tip_moment``
    (global frame, times ``tip_profile(t)``) and optionally carries a rigid body of mass
    ``tip_mass`` [kg] and body-frame inertia ``tip_inertia`` [kg m^2] centred at the tip.

    Attributes:
        rod: :class:`CosseratRod` (material, cross-section, reference strains).
        n_points: number of arc-length grid points (>= 2), including both ends.
        integrator: ``"rk4"`` (classic Runge-Kutta, O(ds^4)) or ``"euler"`` (explicit, O(ds)).
        kirchhoff: True for the unshearable, inextensible Kirchhoff rod.
        frame: ``"global"`` or ``"local"`` components for the internal force and moment.
        gravity: ``(3,)`` [m/s^2].
        distributed_force: ``(3,)`` extra force per reference length, global [N/m].
        distributed_moment: ``(3,)`` moment per reference length, global [N m/m].
        tip_force, tip_moment: ``(3,)`` global [N], [N m]; ``tip_profile`` scales both in time.
        tip_mass: [kg] (0: none); tip_inertia: ``(3,)`` principal inertia about the body's centre
            of mass in the tip frame [kg m^2]; tip_com: ``(3,)`` centre of mass of the tip body
            in the tip frame [m] (0: at the tip); tip_mass_profile: dimensionless ``profile(t)``
            scaling mass and inertia (e.g. :class:`~jaxrod.signals.Samples` ``[1, 1, 0, 0]`` to release a
            grasped object; array leaves, no recompile). The body couples through the distal
            boundary condition after the tendon termination jumps (spec 7.2).
        point_loads: tuple of :class:`~jaxrod.models.cosserat.loads.PointLoad`.
        base_position: ``(3,)`` [m]; base_quaternion: ``(4,)`` scalar-first.
        base_motion: optional ``t -> (p (3,), h (4,))``; base velocities come from its derivative.
        tendons: tuple of :class:`~jaxrod.actuation.tendons.Tendon` (spec 7.2): distributed
            loads along each tendon's channel (the implicit ``v_s``/``u_s`` form, a 6x6 solve per
            evaluation point; 3x3 for Kirchhoff) and the anchoring point load at its termination.
            With tendons the grid variables gain ``[v_s, u_s]`` (18 per point) for their history.
            Tendons under displacement control or with friction (:attr:`Tendon.needs_length`)
            add their unstretched length from the motor ``S`` and their tension ``T`` (which
            friction changes along ``s``) to the integrated state and ``[S, T]`` per such tendon to
            the grid variables,
            and one shooting unknown each (displacement control: the scaled tension
            ``tau / (EI/L^2)``; tension control with friction: ``S(s_t) / L``), after the others.
            They need ``segments = 1``.
        section_radius: radius [m] of the section that holds the tendon channels (e.g. spacer
            disks), checked against every routing; default ``sqrt(area / pi)`` of the backbone.
        segments: number of multiple-shooting segments (``1 .. n_points - 1``; segments hold
            ``ceil((n_points - 1) / segments)`` grid intervals, the last one possibly fewer). With
            ``1`` (simple shooting) the unknowns are the 6 base loads; with ``K > 1`` the state
            (19 values) at the start of each further segment is guessed too and continuity is
            enforced at the joints. That bounds the growth of errors over one segment: hard steps
            (the impulse near the base, small dt, long rods) converge where simple shooting fails,
            at ~(6 + 19 (K - 1)) / 6 times the cost of a Jacobian.
        chambers: tuple of :class:`~jaxrod.actuation.chambers.Chamber` (spec 7.3): eq. 18
            distributed loads and the cap wrench at the tip; each volume- or moles-controlled
            chamber adds its pressure to the shooting unknowns (after the segment states) and its
            volume residual to the residual. Checked against ``section_radius`` too.
    """

    rod: CosseratRod
    n_points: int = eqx.field(static=True, default=100)
    integrator: str = eqx.field(static=True, default="rk4")
    kirchhoff: bool = eqx.field(static=True, default=False)
    frame: str = eqx.field(static=True, default="global")
    gravity: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    distributed_force: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    distributed_moment: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_force: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_moment: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_profile: eqx.Module = Constant()
    tip_mass: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=0.0)
    tip_inertia: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_com: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    tip_mass_profile: eqx.Module = Constant()
    point_loads: tuple = eqx.field(converter=one_or_many, default=())
    base_position: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(0.0, 0.0, 0.0))
    base_quaternion: jax.Array = eqx.field(converter=lambda x: jnp.asarray(x, dtype=float), default=(1.0, 0.0, 0.0, 0.0))
    base_motion: Callable | None = eqx.field(static=True, default=None)
    segments: int = eqx.field(static=True, default=1)
    tendons: tuple = eqx.field(converter=one_or_many, default=())
    section_radius: jax.Array | None = eqx.field(
        converter=lambda x: None if x is None else jnp.asarray(x, dtype=float), default=None
    )
    chambers: tuple = eqx.field(converter=one_or_many, default=())

    def __check_init__(self):
        if not isinstance(self.rod, CosseratRod):
            raise TypeError(f"rod must be a CosseratRod, got {type(self.rod).__name__}")
        check_int("n_points", self.n_points)
        check_int("segments", self.segments)
        if int(self.n_points) < 2:
            raise ValueError(f"n_points must be >= 2 (both rod ends are grid points), got {self.n_points}")
        if self.integrator not in ("rk4", "euler"):
            raise ValueError(f"integrator must be 'rk4' or 'euler', got {self.integrator!r}")
        if self.frame not in ("global", "local"):
            raise ValueError(f"frame must be 'global' or 'local', got {self.frame!r}")
        for name in ("gravity", "distributed_force", "distributed_moment", "tip_force", "tip_moment",
                     "tip_inertia", "tip_com", "base_position"):
            check_shape(name, getattr(self, name), (3,))
            check_finite(name, getattr(self, name))
        check_shape("base_quaternion", self.base_quaternion, (4,))
        check_finite("base_quaternion", self.base_quaternion)
        if not is_traced(self.base_quaternion) and np.linalg.norm(np.asarray(self.base_quaternion)) < 1e-12:
            raise ValueError("base_quaternion must be non-zero")
        check_nonnegative("tip_mass", self.tip_mass, "kg")
        check_nonnegative("tip_inertia", self.tip_inertia, "kg m^2")
        for pl in self.point_loads:
            if not isinstance(pl, PointLoad):
                raise TypeError(f"point_loads must hold PointLoad objects, got {type(pl).__name__}")
            if not (0.0 < pl.s < self.rod.length):
                raise ValueError(
                    f"PointLoad.s = {pl.s} m must lie strictly inside the rod (0, {self.rod.length}); "
                    "use tip_force/tip_moment at the tip"
                )
        K = int(self.segments)
        if K < 1 or K > int(self.n_points) - 1:
            raise ValueError(
                f"segments must be in [1, n_points - 1 = {int(self.n_points) - 1}], got segments={self.segments}"
            )
        grid = self.grid()  # raises if point loads cannot get distinct grid nodes
        if self.section_radius is not None:
            check_positive("section_radius", self.section_radius, "m")
        if self.tendons:
            radius = section_radius_default(self.rod) if self.section_radius is None else self.section_radius
            check_positive("section_radius", radius, "m")
            check_tendons(self.tendons, self.rod.length, radius, grid)
            if self._length_tendons() and K != 1:
                raise ValueError(
                    f"segments = {K}: tendons under displacement control or with friction need segments = 1 "
                    "(their integrated length is a state of the single shooting sweep)"
                )
        if self.chambers:
            radius = section_radius_default(self.rod) if self.section_radius is None else self.section_radius
            check_chambers(self.chambers, radius)

    # ---- grid ------------------------------------------------------------------------------------
    def grid(self) -> np.ndarray:
        """``(n_points,)`` reference arc lengths [m]: uniform, with the node nearest each point
        load and each interior tendon termination moved onto it (piecewise integration across
        the jump)."""
        L, n = self.rod.length, int(self.n_points)
        s = np.linspace(0.0, L, n)
        used = set()
        where = [("point load", pl.s) for pl in self.point_loads]
        ends = sorted({td.termination for td in self.tendons if td.termination is not None})
        where += [("tendon termination", e) for e in ends if 0.0 < e < L]
        for what, sk in where:
            k = int(np.clip(np.round(sk / L * (n - 1)), 1, n - 2)) if n > 2 else -1
            if k < 1 or k in used:
                raise ValueError(
                    f"{what} at s = {sk} m needs its own interior grid node; increase n_points "
                    f"(now {n}) so that point loads and tendon terminations are at least one grid spacing apart"
                )
            used.add(k)
            s[k] = sk
        return s

    def _termination_nodes(self) -> list:
        """Grid node of each tendon's termination (``n_points - 1`` for the tip)."""
        s, L = self.grid(), self.rod.length
        return [int(np.argmin(np.abs(s - (L if td.termination is None else td.termination)))) for td in self.tendons]

    @property
    def w_size(self) -> int:
        """Grid variables per evaluation point: ``[q, w, v, u]`` (12), plus ``[v_s, u_s]`` with
        tendons, plus ``[S (n_len), tau (n_len)]`` for the tendons of :meth:`_length_tendons`."""
        return W_SIZE + (6 if self.tendons else 0) + 2 * len(self._length_tendons())

    def _length_tendons(self) -> tuple:
        """Indices of the tendons whose length is integrated (displacement control or friction)."""
        return tuple(i for i, td in enumerate(self.tendons) if td.needs_length)

    def _rest_length(self, td):
        """Unstretched length [m] of ``td`` from motor to anchor at zero displacement."""
        if td.rest_length is not None:
            return td.rest_length
        return td.extra_length + (self.rod.length if td.termination is None else td.termination)

    def _tendon_unknowns(self, x, t, load_factor=1.0):
        """``(taus (n_tendons,), S_end (n_len,))``: the tensions [N] at time ``t`` (the unknowns of
        displacement-controlled tendons, from the tail of ``x``) and the unstretched motor-to-anchor
        length [m] of each length tendon (prescribed ``rest_length + z(t)`` under displacement
        control, else an unknown)."""
        taus = load_factor * jnp.stack([td.tension_at(t) for td in self.tendons])
        idx = self._length_tendons()
        if not idx:
            return taus, jnp.zeros(0)
        fs, _ = self.load_scales()
        xs = x[x.shape[0] - len(idx):]
        ends = []
        for k, i in enumerate(idx):
            td = self.tendons[i]
            if td.control == "displacement":
                taus = taus.at[i].set(xs[k] * fs)
                ends.append(self._rest_length(td) + td.displacement_at(t))
            else:
                ends.append(xs[k] * self.rod.length)
        return taus, jnp.stack(ends)

    def tendon_histories(self, times, v):
        """``(tensions (T, n_tendons) [N], displacements (T, n_tendons) [m])`` over a trajectory's
        ``times (T,)`` and grid variables ``v (T, N, w_size)``: prescribed values, or the solved
        tensions of displacement-controlled tendons (read from their grid variable at the base);
        displacement NaN for tension-controlled tendons."""
        times = jnp.asarray(times)
        tens = jnp.stack([td.tension_at(times) for td in self.tendons], axis=-1)
        disp = jnp.stack([td.displacement_at(times) if td.control == "displacement" else jnp.full_like(times, jnp.nan)
                          for td in self.tendons], axis=-1)
        idx = self._length_tendons()
        for k, i in enumerate(idx):
            if self.tendons[i].control == "displacement":
                tens = tens.at[:, i].set(v[:, 0, W_SIZE + 6 + len(idx) + k])
        return tens, disp

    def tendon_tensions(self, state, t=0.0):
        """``(n_tendons,)`` tensions [N] of a solved :class:`~.stepper.CosseratState` at ``t`` [s]
        (solved ones under displacement control); over a trajectory: :meth:`tendon_histories`."""
        return self._tendon_unknowns(state.base_loads, t)[0]

    def _load_nodes(self):
        s = self.grid()
        return [int(np.argmin(np.abs(s - pl.s))) for pl in self.point_loads]

    # ---- scales ------------------------------------------------------------------------------------
    def load_scales(self):
        """``(force [N], moment [N m])`` scales of the shooting unknowns: ``EI/L^2``, ``EI/L``."""
        EI, L = self.rod.bending_stiffness, self.rod.length
        return EI / L**2, EI / L

    # ---- boundary data ------------------------------------------------------------------------------
    def base_state(self, t):
        """``(p0, h0, q0, w0)`` at time ``t``: pose and local velocities of the clamped base."""
        if self.base_motion is None:
            z = jnp.zeros(3)
            return self.base_position, self.base_quaternion, z, z
        t = jnp.asarray(t, dtype=float)
        (p, h), (pt, ht) = jax.jvp(self.base_motion, (t,), (jnp.ones_like(t),))
        p, h, pt, ht = (jnp.asarray(x, dtype=float) for x in (p, h, pt, ht))
        hh = jnp.dot(h, h)
        R = quat_to_rotation(h)
        # w = 2 vec(conj(h) (x) h_t) / |h|^2 for a quaternion of constant norm
        hw, hv = h[0], h[1:]
        htw, htv = ht[0], ht[1:]
        w = 2.0 * (hw * htv - htw * hv - _cross(hv, htv)) / hh
        return p, h, R.T @ pt, w

    def step_constants(self, c0, load_factor=1.0) -> StepConstants:
        """Per-step constants for difference coefficient ``c0`` [1/s] (0 for statics)."""
        rod = self.rod
        K_se, K_bt = rod.K_se, rod.K_bt
        B_se, B_bt = rod.damping_se, rod.damping_bt
        rhoA = rod.mass_per_length
        return StepConstants(
            c0=jnp.asarray(c0, dtype=float),
            inv_se=1.0 / (K_se + c0 * B_se),
            inv_bt=1.0 / (K_bt + c0 * B_bt),
            K_se=K_se, K_bt=K_bt, B_se=B_se, B_bt=B_bt,
            v_star=rod.v_star, u_star=rod.u_star,
            rhoA=rhoA, rhoJ=rod.density * rod.second_moments, drag=rod.drag,
            f_ext=load_factor * (rhoA * self.gravity + self.distributed_force),
            l_ext=load_factor * self.distributed_moment,
        )

    # ---- the ODE in arc length ----------------------------------------------------------------------
    def _strains(self, y, wh, P: StepConstants):
        """``(R, nb, mb, v, vt, u, ut)`` at one point from its state and history (eq. 6)."""
        h, n, m = y[3:7], y[7:10], y[10:13]
        vh, uh = wh[6:9], wh[9:12]
        R = quat_to_rotation(h)
        local = self.frame == "local"
        nb = n if local else _mtv(R, n)
        mb = m if local else _mtv(R, m)
        if self.kirchhoff:
            v = P.v_star
            vt = jnp.zeros(3)
        else:
            v = P.inv_se * (nb + P.K_se * P.v_star - P.B_se * vh)
            vt = P.c0 * v + vh
        u = P.inv_bt * (mb + P.K_bt * P.u_star - P.B_bt * uh)
        return R, nb, mb, v, vt, u, P.c0 * u + uh

    def rhs(self, y, wh, P: StepConstants, s=0.0, taus=None, lengths=None, routes=None):
        """``(y_s (19,), w (w_size,))``: arc-length derivative of the state and the grid variables
        ``[q, w, v, u]`` (with tendons ``[q, w, v, u, v_s, u_s]``) at one point, given its history
        ``wh`` of the same layout (eq. 7/11; with tendons eq. 17 and its Kirchhoff variant).
        ``s``: reference arc length [m] and ``taus (n_tendons,)``: the tensions [N] acting there
        (0 past a tendon's termination); both only used with tendons. With length tendons
        (:meth:`_length_tendons`) ``y`` carries their lengths ``S (n_len,)`` and tensions
        ``T (n_len,)`` after the 19 state values (``T`` changes along ``s`` by the friction the
        tendon feels, ``T_s = f . t``, so that friction loads are balanced at the anchor, which
        is pulled by ``T(s_t)``), ``y_s`` their rates, and ``lengths = (active (n_tendons,),
        S_end_t (n_len,))`` gives which tendons run here and ``d/dt S(s_t)``. ``routes``: the
        tendons' ``(r, r_s, r_ss)`` at ``s`` (:func:`~.actuation.routing_table`, each ``(n_tendons,
        3)``), which the sweep evaluates once for all its points; ``None``: evaluated here.

        Rotations are applied as elementwise sums (:func:`_mv`), not ``dot``: XLA on CPU runs
        tiny matrix products as separate slow kernels (measured 1.8x faster Jacobians).
        """
        q, w = y[13:16], y[16:19]
        qh, wh_ = wh[0:3], wh[3:6]
        c0 = P.c0
        local = self.frame == "local"
        R, nb, mb, v, vt, u, ut = self._strains(y, wh, P)
        n = y[7:10]
        qt = c0 * q + qh
        wt = c0 * w + wh_
        force_b = P.rhoA * (_cross(w, q) + qt) + P.drag * q * jnp.abs(q)
        moment_b = _cross(w, P.rhoJ * w) + P.rhoJ * wt
        ps = _mv(R, v)
        if local:
            ns = -_cross(u, nb) + force_b - _mtv(R, P.f_ext)
            ms = -_cross(u, mb) - _cross(v, nb) + moment_b - _mtv(R, P.l_ext)
        else:
            ns = _mv(R, force_b) - P.f_ext
            ms = _mv(R, moment_b) - _cross(ps, n) - P.l_ext
        grid_vars = [q, w, v, u]
        extra_rates = []
        if self.chambers:  # before the tendon solve, whose n_s, m_s hold every load free of v_s, u_s
            fp, lp = _actuation.pressure_loads(self.chambers, P.pressures, u, v)
            ns, ms = (ns + fp, ms + lp) if local else (ns + _mv(R, fp), ms + _mv(R, lp))
        if self.tendons:
            if routes is None:
                routes = routing_table([td.routing for td in self.tendons], s)
            idx = self._length_tendons()
            friction = None
            if idx:
                active, S_end_t = lengths
                n_len = len(idx)
                S, T = y[Y_SIZE:Y_SIZE + n_len], y[Y_SIZE + n_len:Y_SIZE + 2 * n_len]
                taus = taus.at[jnp.asarray(idx)].set(active[jnp.asarray(idx)] * T)
                friction = (jnp.zeros(3), jnp.zeros(3))
                S_s, T_s = [], []
                for k, i in enumerate(idx):
                    td = self.tendons[i]
                    p, pn = path_tangent(routes[0][i], routes[1][i], u, v)
                    S_s.append(active[i] * pn / (1.0 + td.compliance * T[k]))
                    if td.friction is None:
                        T_s.append(jnp.zeros(()))
                        continue
                    # nu = d/dt [S(s_t) - S(s)]: the time scheme's derivative of this point's own length
                    nu = S_end_t[k] - (c0 * S[k] + wh[W_SIZE + 6 + k])
                    f, l_ = friction_load(routes[0][i], p, pn, u, taus[i], td.friction, nu)
                    friction = (friction[0] + f, friction[1] + l_)
                    T_s.append(jnp.dot(f, p) / pn)
                extra_rates = S_s + T_s
            ns, ms, vs, us = self._tendon_loads(ns, ms, R, nb, mb, v, u, wh, P, routes, taus, friction)
            grid_vars += [vs, us]
            if idx:
                grid_vars += [S, T]
        qs = vt - _cross(u, q) + _cross(w, v)
        ws = ut - _cross(u, w)
        hs = _quat_body_rate(y[3:7], u)
        return jnp.concatenate([ps, hs, ns, ms, qs, ws, jnp.stack(extra_rates) if extra_rates else jnp.zeros(0)]), \
            jnp.concatenate(grid_vars)

    def _tendon_loads(self, ns, ms, R, nb, mb, v, u, wh, P: StepConstants, routes, taus, friction=None):
        """Add the distributed tendon loads to ``n_s``, ``m_s`` (frame of the state): solves
        ``Phi [v_s; u_s] = [nb_s0 - a - B_se v_s^h; mb_s0 - b - B_bt u_s^h]`` (spec 7.2, eq. 17),
        where ``nb_s0``, ``mb_s0`` are the derivatives of the local internal loads without the
        tendons, so that ``nb_s = (K_se + c0 B_se) v_s + B_se v_s^h`` (the differentiated
        constitutive law) holds with the tendon loads included. ``routes``: the tendons' ``(r, r_s,
        r_ss)`` at this point. ``friction``: local friction
        force and moment per length (independent of ``v_s``, ``u_s``), added to ``a`` and ``b``.
        Returns ``(ns, ms, v_s, u_s)``."""
        local = self.frame == "local"
        a, b, A, G, H = tendon_coefficients(routes, taus, u, v)
        if friction is not None:
            a, b = a + friction[0], b + friction[1]
        nbs0 = ns if local else _mtv(R, ns) - _cross(u, nb)
        mbs0 = ms if local else _mtv(R, ms) - _cross(u, mb)
        vhs, uhs = wh[12:15], wh[15:18]
        if self.kirchhoff:  # v = v* fixed: only u_s is solved for (3x3)
            vs = jnp.zeros(3)
            us = jnp.linalg.solve(jnp.diag(P.K_bt + P.c0 * P.B_bt) + H, mbs0 - b - P.B_bt * uhs)
        else:
            Phi = jnp.block([[jnp.diag(P.K_se + P.c0 * P.B_se) + A, G],
                             [G.T, jnp.diag(P.K_bt + P.c0 * P.B_bt) + H]])
            rhs6 = jnp.concatenate([nbs0 - a - P.B_se * vhs, mbs0 - b - P.B_bt * uhs])
            # Phi is symmetric positive definite: [A G; G^T H] = [I, -r^]^T A [I, -r^] per tendon
            x = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(Phi), rhs6)
            vs, us = x[:3], x[3:]
        fb = a + A @ vs + G @ us
        lb = b + G.T @ vs + H @ us
        if local:
            return ns - fb, ms - lb, vs, us
        return ns - _mv(R, fb), ms - _mv(R, lb), vs, us

    def _tendon_inputs(self, tau, wh, n_int):
        """Per grid interval, for tensions ``tau (n_t,)``: ``(taus (n_int, n_t), anchors (n_int,
        n_t), wh_minus (n_int, w), active (n_int, n_t))``: the tensions loading the interval (0
        past a termination), 1 for the tendons anchored at its first node, the history of the base
        side of that node (RK4 stage 4 of the previous interval, which lies at the same arc
        length; Euler: the previous node), from which the anchoring load takes the strains
        ``u(s_t^-)``, ``v(s_t^-)``, and 1 where a tendon runs. Empty arrays without tendons."""
        wh_nodes, wh_stages = wh
        if not self.tendons:
            z = jnp.zeros((n_int, 0))
            return z, z, z, z
        ends = np.array(self._termination_nodes())
        active = np.arange(n_int)[:, None] < ends[None, :]
        anchored = (np.arange(n_int)[:, None] == ends[None, :]) & (ends[None, :] < n_int)
        prev = wh_stages[:, 2] if self.integrator == "rk4" else wh_nodes[:-1]
        wh_minus = jnp.concatenate([wh_nodes[:1], prev[:-1]])
        active = jnp.asarray(active, float)
        return active * tau, jnp.asarray(anchored, float), wh_minus, active

    def _jumps(self, t, load_factor):
        """``(N, 6)`` jumps of ``[n, m]`` (global) at grid nodes from point loads at time ``t``."""
        jumps = jnp.zeros((int(self.n_points), 6))
        for k, pl in zip(self._load_nodes(), self.point_loads):
            a = load_factor * pl.profile(t)
            jumps = jumps.at[k].add(-a * jnp.concatenate([pl.force, pl.moment]))
        return jumps

    # ---- shooting unknowns ---------------------------------------------------------------------------
    @property
    def n_unknowns(self) -> int:
        """Size of the shooting unknown: 6 base loads + 19 per interior segment start + 1 per
        chamber with solved pressure + 1 per tendon of :meth:`_length_tendons` (in this order)."""
        return 6 + Y_SIZE * (int(self.segments) - 1) + self._n_pressure_unknowns + len(self._length_tendons())

    @property
    def _n_pressure_unknowns(self) -> int:
        return sum(ch.unknown for ch in self.chambers)

    def chamber_pressures(self, x, t, load_factor=1.0):
        """``(n_chambers,)`` gauge pressures [Pa] for shooting unknowns ``x`` at time ``t`` [s]."""
        k, end = self._n_pressure_unknowns, x.shape[0] - len(self._length_tendons())
        return _actuation.chamber_pressures(self.chambers, x[end - k:end], t, load_factor, self.load_scales()[0])

    def _segment_intervals(self) -> int:
        """Grid intervals per shooting segment (the last one may hold fewer real intervals)."""
        return -(-(int(self.n_points) - 1) // int(self.segments))

    def _segment_starts(self) -> np.ndarray:
        return np.arange(int(self.segments)) * self._segment_intervals()

    def state_scale(self):
        """``(19,)`` scales of ``[p, h, n, m, q, w]`` in the multiple-shooting unknowns."""
        L = self.rod.length
        fs, ms_ = self.load_scales()
        one = jnp.ones(3)
        return jnp.concatenate([L * one, jnp.ones(4), fs * one, ms_ * one, one, one / L])

    def unknowns_from_grid(self, y, G):
        """Shooting unknowns from scaled base loads ``G (6,)`` and a state grid ``y (N, 19)``
        (``n``, ``m`` global; e.g. the previous step's) for the interior segment starts; solved
        chamber pressures start at zero gauge, or at ``G[6:]`` when given; then the unknowns of
        the length tendons: displacement control ``Tendon.tension / (EI/L^2)`` (the user's guess),
        tension control with friction ``rest_length / L``."""
        if self._n_pressure_unknowns and G.shape[0] == 6:
            G = jnp.concatenate([G, jnp.zeros(self._n_pressure_unknowns)])
        if int(self.segments) == 1:
            if not self._length_tendons():
                return G
            fs, _ = self.load_scales()
            tds = [self.tendons[i] for i in self._length_tendons()]
            extra = [td.tension / fs if td.control == "displacement" else self._rest_length(td) / self.rod.length
                     for td in tds]
            return jnp.concatenate([G, jnp.stack(extra)])
        ys = y[self._segment_starts()[1:]]
        if self.frame == "local":
            Rt = jnp.swapaxes(quat_to_rotation(ys[:, 3:7]), -1, -2)
            ys = ys.at[:, 7:10].set(jnp.einsum("nij,nj->ni", Rt, ys[:, 7:10]))
            ys = ys.at[:, 10:13].set(jnp.einsum("nij,nj->ni", Rt, ys[:, 10:13]))
        return jnp.concatenate([G[:6], (ys / self.state_scale()).ravel(), G[6:]])

    def rest_grid(self, t=0.0):
        """``(N, 19)`` straight rest configuration from the base pose at ``t`` (no loads, at rest):
        the initial guess of a static multiple-shooting solve."""
        p0, h0, _, _ = self.base_state(t)
        R0 = quat_to_rotation(h0)
        s = jnp.asarray(self.grid())
        n = int(self.n_points)
        p = p0 + s[:, None] * (R0 @ self.rod.v_star)[None]
        return jnp.concatenate([p, jnp.broadcast_to(h0, (n, 4)), jnp.zeros((n, 12))], axis=1)

    @property
    def n_stages(self) -> int:
        """Off-node evaluation points per grid interval: 3 for RK4 (stages 2-4), 0 for Euler."""
        return 3 if self.integrator == "rk4" else 0

    def zero_history(self):
        """Zero history ``(wh_nodes (N, 12), wh_stages (N-1, n_stages, 12))`` (statics, rest)."""
        n = int(self.n_points)
        return jnp.zeros((n, self.w_size)), jnp.zeros((n - 1, self.n_stages, self.w_size))

    def integrate(self, x, t, P: StepConstants, wh, load_factor=1.0, *, roll_stages=False):
        """See :meth:`_integrate` (same arguments and results). Called through one cached jitted
        function, so that the many places a step traces the sweep (residual, Jacobian, line
        search, implicit-differentiation tangent, the static solve) reuse one traced program
        instead of re-tracing it: tracing, not XLA, was most of a first run's cost.
        ``roll_stages``: evaluate the RK4 stages as a loop over one rhs (:data:`RK4_NODES`; same
        results, a program a quarter the size, slower for a plain rod; always so with tendons)."""
        return _integrate_jit(self, x, jnp.asarray(t, dtype=float), P, wh, jnp.asarray(load_factor, dtype=float),
                              bool(roll_stages))

    def _integrate(self, x, t, P: StepConstants, wh, load_factor=1.0, roll_stages=False):
        """Integrate from the base (and, with ``segments > 1``, from each guessed segment start)
        with shooting unknowns ``x`` at time ``t``.

        ``wh = (wh_nodes (N, 12), wh_stages (N-1, n_stages, 12))`` is the history of the grid
        variables ``[q, w, v, u]`` at the grid nodes and at every off-node RK4 stage point
        (stages 2, 3 at ``s_j + ds/2`` and stage 4 at ``s_{j+1}``, each with its own state).
        Every evaluation point thus has its own time history, formed from its own past values:
        the time derivative ``c0 w + w^h`` at a stage is consistent with the stage's state.
        (Interpolating the node histories to the stages instead, as in the paper's listing,
        mixes the stage value now with node values in the past: an ``O(c0 ds^2)`` error in
        ``q_t``, ``w_t`` that acts as grid-dependent negative numerical damping; measured tip
        energy growth x3.6 in 2 s at 10 points with the trapezoid rule.)

        Returns ``(y (N, 19), (w_nodes (N, 12), w_stages (N-1, n_stages, 12)), (n_L, m_L, R_L),
        continuity (segments-1, 19))``; ``y`` has ``n, m`` in the global frame; ``continuity`` is
        the scaled mismatch at segment joints.
        """
        wh_nodes, wh_stages = wh
        fs, ms_ = self.load_scales()
        if self.chambers:
            P = dataclasses.replace(P, pressures=self.chamber_pressures(x, t, load_factor))
        G = x[:6]
        p0, h0, q0, w0 = self.base_state(t)
        n0, m0 = G[:3] * fs, G[3:6] * ms_
        local = self.frame == "local"
        if local:
            R0 = quat_to_rotation(h0)
            n0, m0 = R0.T @ n0, R0.T @ m0
        y0 = jnp.concatenate([p0, h0, n0, m0, q0, w0])
        n_int = int(self.n_points) - 1
        tau_all, S_end = self._tendon_unknowns(x, t, load_factor) if self.tendons else (jnp.zeros(0), None)
        tendon = self._tendon_inputs(tau_all, wh, n_int)
        idx = self._length_tendons()
        lengths = None
        if idx:  # their lengths from the motor ride along in the state (segments = 1)
            cols = W_SIZE + 6 + np.arange(len(idx))
            S_end_t = P.c0 * S_end + wh_nodes[np.array(self._termination_nodes())[list(idx)], cols]
            tds = [self.tendons[i] for i in idx]
            S0 = jnp.stack([td.extra_length / (1.0 + td.compliance * tau_all[i]) for i, td in zip(idx, tds)])
            y0 = jnp.concatenate([y0, S0, tau_all[jnp.asarray(idx)]])
        K = int(self.segments)
        scale = self.state_scale()
        starts = jnp.concatenate([y0[None], x[6:6 + Y_SIZE * (K - 1)].reshape(K - 1, Y_SIZE) * scale]) if K > 1 else y0[None]
        s = jnp.asarray(self.grid())
        ds = jnp.diff(s)
        jumps = self._jumps(t, load_factor)
        rk4 = self.integrator == "rk4"
        routings = [td.routing for td in self.tendons]
        interior_ends = bool(self.tendons) and min(self._termination_nodes()) < n_int
        # RK4_NODES: where the rhs is large enough to pay the loop (tendons), or on request (the
        # static solves, which run once: a smaller program matters more than its speed there)
        roll_stages = bool(roll_stages) or bool(self.tendons)

        def anchor(y, whm, routes, taus):
            """``y`` with the point loads of the tendons anchored here (tensions ``taus``, routings
            ``routes`` here), from the strains on the base side (state ``y`` before the jump,
            history ``whm``)."""
            R, _, _, v, _, u, _ = self._strains(y, whm, P)
            F, Mo = termination_loads(routes, taus, u, v)
            if not local:
                F, Mo = _mv(R, F), _mv(R, Mo)
            return y.at[7:13].add(-jnp.concatenate([F, Mo]))

        def apply_jump(y, jump):
            if not self.point_loads:
                return y
            Fj, Mj = jump[:3], jump[3:]
            if local:
                R = quat_to_rotation(y[3:7])
                Fj, Mj = R.T @ Fj, R.T @ Mj
            return y.at[7:13].add(jnp.concatenate([Fj, Mj]))

        lengths_ = (S_end_t,) if idx else None

        def tensions_here(y):
            """All tensions at the current point (length tendons carry theirs in ``y``)."""
            if not idx:
                return tau_all
            return tau_all.at[jnp.asarray(idx)].set(y[Y_SIZE + len(idx):Y_SIZE + 2 * len(idx)])

        def body(y, xs):
            d, wa, wst, jump, sj, taus, flags, whm, act, rts = xs
            rt0 = None if rts is None else tuple(a[0] for a in rts)  # the routings at sj
            if interior_ends:
                y = anchor(y, whm, rt0, flags * tensions_here(y))
            y = apply_jump(y, jump)
            lg = None if lengths_ is None else (act, *lengths_)
            if rk4 and roll_stages:
                # the four stages as a loop over one traced rhs (RK4_NODES), same arithmetic
                def stage(k_prev, xs_s):
                    wh_s, a, rt_s = xs_s
                    k, z_ = self.rhs(y + a * d * k_prev, wh_s, P, sj + a * d, taus, lg, rt_s)
                    return k, (k, z_)

                _, (ks, zs4) = jax.lax.scan(stage, jnp.zeros_like(y),
                                            (jnp.concatenate([wa[None], wst]), RK4_NODES, rts))
                k1, k2, k3, k4 = ks[0], ks[1], ks[2], ks[3]
                y1 = y + d * (k1 + 2.0 * (k2 + k3) + k4) / 6.0
                z, zst = zs4[0], zs4[1:]
            elif rk4:
                k1, z = self.rhs(y, wa, P, sj, taus, lg)
                k2, z2 = self.rhs(y + 0.5 * d * k1, wst[0], P, sj + 0.5 * d, taus, lg)
                k3, z3 = self.rhs(y + 0.5 * d * k2, wst[1], P, sj + 0.5 * d, taus, lg)
                k4, z4 = self.rhs(y + d * k3, wst[2], P, sj + d, taus, lg)
                y1 = y + d * (k1 + 2.0 * (k2 + k3) + k4) / 6.0
                zst = jnp.stack([z2, z3, z4])
            else:
                k1, z = self.rhs(y, wa, P, sj, taus, lg, rt0)
                y1 = y + d * k1
                zst = jnp.zeros((0, self.w_size), y.dtype)
            return y1, (y, z, zst)

        per_seg = self._segment_intervals()
        pad = K * per_seg - n_int
        whs = (wh_nodes[:-1], wh_stages)
        jmp = jumps[:-1]
        s_start = s[:-1]
        if pad:  # zero-length intervals at the end of the last segment are exact no-ops (y1 = y)
            ds = jnp.concatenate([ds, jnp.zeros(pad, ds.dtype)])
            whs = tuple(jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]) for a in whs)
            jmp = jnp.concatenate([jmp, jnp.zeros((pad, 6), jmp.dtype)])
            s_start = jnp.concatenate([s_start, jnp.full(pad, s[-1])])
            tendon = tuple(jnp.concatenate([a, jnp.zeros((pad, *a.shape[1:]), a.dtype)]) for a in tendon)
        per_interval = (ds, *whs, jmp, s_start, *tendon)
        # with rolled stages and one segment, the tip's grid variables zN come from one more
        # interval of length 0 whose first stage is the tip (its own history, the last interval's
        # tensions): the sweep then holds one rhs copy instead of two (tendon-robot-step's first
        # run 19.1 -> 14.3 s CPU; results equal to round-off, 2e-14 relative after 3 steps). Not
        # for inlined RK4 (the Till benchmark compiled no faster and ran 6-10% slower) nor Euler
        # (stewart-gough: no measurable change); y1 = y there, the stages after the first unused
        tip_in_scan = bool(self.tendons) and K == 1
        if tip_in_scan:
            taus_, anchored_, whm_, act_ = tendon
            tip_row = (jnp.zeros(1, ds.dtype), wh_nodes[-1:], wh_stages[-1:], jnp.zeros((1, 6), jmp.dtype), s[-1:],
                       taus_[-1:], jnp.zeros_like(anchored_[-1:]), whm_[-1:], act_[-1:])
            per_interval = tuple(jnp.concatenate([a, b]) for a, b in zip(per_interval, tip_row))
        n_rows = per_seg + (1 if tip_in_scan else 0)
        tip_routes = None
        if self.tendons:
            # the routings at every evaluation point of the sweep (each interval's start and,
            # with RK4, its stage points s_j + RK4_NODES ds_j: the same arithmetic as in the loop),
            # evaluated once here: the loop body holds no routing code (routing_table)
            d_all, s_all = per_interval[0], per_interval[4]
            s_eval = s_all[:, None] + RK4_NODES[None, :] * d_all[:, None] if rk4 else s_all[:, None]
            per_interval = (*per_interval, routing_table(routings, s_eval))
            tip_routes = routing_table(routings, s[-1])
        else:
            per_interval = (*per_interval, None)
        chunked = jax.tree_util.tree_map(lambda a: a.reshape(K, n_rows, *a.shape[1:]), per_interval)
        ends, (ys, zs, zst) = jax.vmap(lambda y0_, xs: jax.lax.scan(body, y0_, xs))(starts, chunked)
        continuity = (ends[:-1, :Y_SIZE] - starts[1:, :Y_SIZE]) / scale
        yN = ys[-1, -1] if tip_in_scan else ends[-1]
        if self.tendons:  # tendons anchored at the tip: n(L+) = n(L-) - F (after zN: L- side)
            if tip_in_scan:
                zN = zs[-1, -1]
            else:
                lg = None if lengths_ is None else (tendon[3][n_int - 1], *lengths_)
                _, zN = self.rhs(yN, wh_nodes[-1], P, s[-1], tendon[0][n_int - 1], lg, tip_routes)
            tip_taus = tensions_here(yN) * jnp.asarray(np.array(self._termination_nodes()) == n_int, dtype=float)
            yN = anchor(yN, wh_nodes[-1], tip_routes, tip_taus)
        else:
            _, zN = self.rhs(yN, wh_nodes[-1], P)
        if self.chambers:  # caps at the distal end: n^b(L) = n^b(L-) - sum P A e3 (zN: L- side)
            Fc, Mc = _actuation.cap_wrench(self.chambers, P.pressures)
            if not local:
                RL = quat_to_rotation(yN[3:7])
                Fc, Mc = _mv(RL, Fc), _mv(RL, Mc)
            yN = yN.at[7:13].add(-jnp.concatenate([Fc, Mc]))
        yN = yN[:Y_SIZE]
        y = jnp.concatenate([ys[..., :Y_SIZE].reshape(-1, Y_SIZE)[:n_int], yN[None]])
        w = jnp.concatenate([zs.reshape(-1, self.w_size)[:n_int], zN[None]])
        w_stages = zst.reshape(K * n_rows, self.n_stages, self.w_size)[:n_int]
        RN = quat_to_rotation(yN[3:7])
        nL, mL = yN[7:10], yN[10:13]
        if local:
            R = quat_to_rotation(y[:, 3:7])
            y = y.at[:, 7:10].set(jnp.einsum("nij,nj->ni", R, y[:, 7:10]))
            y = y.at[:, 10:13].set(jnp.einsum("nij,nj->ni", R, y[:, 10:13]))
            nL, mL = RN @ nL, RN @ mL
        return y, (w, w_stages), (nL, mL, RN), continuity

    def tip_residual(self, yN_loads, wN, whN, t, P: StepConstants, load_factor=1.0):
        """Scaled distal boundary-condition mismatch ``(6,)`` (zero at the solution)."""
        nL, mL, RN = yN_loads
        fs, ms_ = self.load_scales()
        a = load_factor * self.tip_profile(t)
        q, w = wN[0:3], wN[3:6]
        qt = P.c0 * q + whN[0:3]
        wt = P.c0 * w + whN[3:6]
        held = self.tip_mass_profile(t)
        mass, J = held * self.tip_mass, held * self.tip_inertia
        c = RN @ self.tip_com
        om, al = RN @ w, RN @ wt  # global angular velocity and acceleration
        acc = RN @ (qt + _cross(w, q)) + _cross(al, c) + _cross(om, _cross(om, c))  # of the body's centre
        pull = mass * (load_factor * self.gravity - acc)  # gravity minus inertia of the body [N]
        n_tip = a * self.tip_force + pull
        m_tip = a * self.tip_moment - RN @ (J * wt + _cross(w, J * w)) + _cross(c, pull)
        return jnp.concatenate([(nL - n_tip) / fs, (mL - m_tip) / ms_])

    def shooting_residual(self, x, t, P: StepConstants, wh, load_factor=1.0, *, roll_stages=False, with_grid=False):
        """Scaled residual ``(n_unknowns,)``: segment-joint continuity, the tip condition, the
        volume residual of each chamber with solved pressure, then per length tendon the length
        mismatch ``(S(s_t) - S_end) / L`` (:meth:`_tendon_unknowns`). ``with_grid``: return
        ``(residual, (y, (w, w_stages)))`` with the sweep's grids (:meth:`integrate`), for
        ``newton_solve(..., has_aux=True)``: the solve hands back the grids of its solution, no
        sweep after it."""
        y, (w, w_stages), yN, continuity = self.integrate(x, t, P, wh, load_factor, roll_stages=roll_stages)
        tip = self.tip_residual(yN, w[-1], wh[0][-1], t, P, load_factor)
        res = [continuity.ravel(), tip]
        if self._n_pressure_unknowns:
            pressures = self.chamber_pressures(x, t, load_factor)
            res.append(_actuation.volume_residuals(self.chambers, self.chamber_volumes(w, w_stages), pressures, t,
                                                  load_factor, self.rod.length))
        idx = self._length_tendons()
        if idx:
            _, S_end = self._tendon_unknowns(x, t, load_factor)
            S_at = w[np.array(self._termination_nodes())[list(idx)], W_SIZE + 6 + np.arange(len(idx))]
            res.append((S_at - S_end) / self.rod.length)
        res = jnp.concatenate(res)
        return (res, (y, (w, w_stages))) if with_grid else res

    # ---- outputs ------------------------------------------------------------------------------------
    def chamber_volumes(self, w, w_stages):
        """``(n_chambers,)`` chamber volumes ``int A |v + u x r| ds`` [m^3] of a state's grid
        variables ``w (N, w_size)``, ``w_stages (N-1, n_stages, w_size)`` (the integrator's quadrature)."""
        ds = jnp.diff(jnp.asarray(self.grid()))
        return _actuation.chamber_volumes(self.chambers, w[:, 6:12], w_stages[..., 6:12], ds)

    def stepper(self, scheme=None, solver=None, *, fallback=False, extrapolation=1):
        """The :class:`~jaxrod.models.cosserat.stepper.ShootingStepper` that :func:`jaxrod.simulate`
        runs: ``scheme`` a :class:`~jaxrod.integrate.schemes.DifferenceFormula` (default BDF2),
        ``solver`` the shooting Newton solver (default
        :data:`~jaxrod.models.cosserat.stepper.DEFAULT_SOLVER`). ``fallback``: compile the
        solver's Levenberg-Marquardt fallback into every step (otherwise it runs only as a retry
        of a failed step; see :func:`~jaxrod.models.cosserat.stepper.cosserat_stepper`).
        ``extrapolation``: 1 (linear, default) or 2 (quadratic) initial guess of each step."""
        from .stepper import cosserat_stepper

        return cosserat_stepper(self, scheme, solver, fallback=fallback, extrapolation=extrapolation)

    def frames(self, y):
        """``(N, 3, 3)`` material frames at the grid nodes, rows ``(d1, d2, d3)`` (``d3``: axis)."""
        return jnp.swapaxes(quat_to_rotation(y[:, 3:7]), -1, -2)

    def energy(self, y, w):
        """Total mechanical energy [J] (spec sec. 5.2): strain + kinetic - gravity work,
        trapezoid rule over the grid. ``y (N, 19)``, ``w (N, 12)``."""
        rod = self.rod
        v, u, q, om = w[:, 6:9], w[:, 9:12], w[:, 0:3], w[:, 3:6]
        dens = (
            0.5 * jnp.sum(rod.K_bt * (u - rod.u_star) ** 2, axis=-1)
            + (0.0 if self.kirchhoff else 0.5 * jnp.sum(rod.K_se * (v - rod.v_star) ** 2, axis=-1))
            + 0.5 * rod.mass_per_length * jnp.sum(q**2, axis=-1)
            + 0.5 * jnp.sum(rod.density * rod.second_moments * om**2, axis=-1)
            - rod.mass_per_length * (y[:, 0:3] @ self.gravity)
        )
        s = jnp.asarray(self.grid())
        return jnp.sum(0.5 * (dens[1:] + dens[:-1]) * jnp.diff(s))


@eqx.filter_jit
def _integrate_jit(model, x, t, P, wh, load_factor, roll_stages):
    return model._integrate(x, t, P, wh, load_factor, roll_stages)
