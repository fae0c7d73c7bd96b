"""The snake robot "Aiko" of Transeth, Leine, Glocker and Pettersen (IEEE T-RO 24(2), 2008):
``n`` rigid links joined by cardan (universal) joints, two contact spheres per link on a ground
with set-valued (anisotropic) Coulomb friction, PD joint controllers tracking a serpenoid gait,
integrated by Moreau midpoint time stepping. Spec: ``/work/shared/specs/seed002_snake.md``.

* :func:`snake_model`: the :class:`~jaxrod.system.contact.ContactSystem` (parameters of the spec,
  section 2.5; gains 6.2; gait 6.3; curved or straight start 6.6).
* :class:`SerpenoidGait`, :class:`CardanPD`: the motion pattern generator (eqs. 70-71) and the
  joint controllers (eqs. 65-69) with the actuator torques of eq. 62 (the spec's reconstruction).
* scene ``snake-undulation-ortho``: lateral undulation with orthotropic friction
  ``mu_along = 0.1``, ``mu_across = 0.5`` (paper section VIII-B; the paper's claim: the snake
  moves steadily forward, toward the link-1 end; with isotropic friction it moves slowly backward).
* scene ``snake-undulation-iso``: the lateral-undulation experiment, isotropic ``mu = 0.2``,
  ``A_h = 40 deg`` (section VIII-D: slowly backward, in the wave's direction).
* scene ``snake-sidewinding``: sidewinding with the soft start on isotropic ``mu = 0.2`` from the
  straight posture (section VIII-E: almost straight, about 1-1.4 m in 15 s, most of the body
  lifted). Measured (``benchmarks/snake_paper.py``, dt 0.5 ms, 15 s): link 6 -1.32 m along x,
  +0.03 m across; 2.4 of 22 spheres touching on average; link 6 never slides back more than 6 mm
  after the start-up. ``dt = 1 ms`` fails (NaN impulses at t = 1.8 s): use 0.5 ms or less, or the
  linear-implicit PD (``implicit_pd=True``, stable at any step; ``benchmarks/snake.py``).

The scenes' ``reference["track_body"]`` is link 6 (index 5), whose path ``jaxrod simulate ...
--plot`` draws from above (:func:`jaxrod.plot.plot_contact_trajectory`).

Conventions (spec 2.2-2.7): body ``x`` axis along the link toward link ``i + 1``; the joint
between links ``i`` and ``i + 1`` turns about ``e_z`` of link ``i`` (yaw, ``alpha_h``) and ``e_y``
of link ``i + 1`` (pitch, ``alpha_v``); ``R_i^T R_{i+1} = R_z(alpha_h) R_y(alpha_v)``. Link 1 is the
head and lies at the ``+x`` end, so forward locomotion is toward ``+x``.

Choices and deviations (the spec's open items, section 5.5): link inertia ``diag(Theta_3, Theta_1,
Theta_1)`` (the physical ordering; ``inertia_order='printed'`` gives the paper's printed
``(Theta_1, Theta_1, Theta_3)``); rolling friction ``mu_V = 0`` by default (not in the paper);
continuous references (``SerpenoidGait(hold=0.1)`` emulates Aiko's 10 Hz references);
``u(0) = 0``; the joint projection is by default the mass-weighted one of the Moreau stepper
(``projection='chain'``: the paper's, link 1 fixed, :class:`ChainProjection`); the contact
solver defaults to Gauss-Seidel with scaled r-factors (``options=MoreauOptions(method='jacobi',
r_factors='absolute')`` is the paper's, ``r = (0.1, 0.01, 0.05)`` kg).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..system import MultibodySystem, RigidBody, Universal
from ..system.contact import ContactSystem, SphereContact
from ..validation import check_int
from .scene import Scene

#: Aiko (spec 2.5): links, length [m], contact-sphere radius [m], total mass [kg], sphere-centre
#: offset from the link centre [m], inertias [kg m^2] (axial Theta_3, transverse Theta_1)
AIKO = {"n_links": 11, "link_length": 0.122, "radius": 0.0525, "total_mass": 7.5, "sphere_offset": 0.0393,
        "inertia_axial": 2.35e-4, "inertia_transverse": 9.63e-4}
#: PD gains (spec 6.2): K_p [N m/rad], K_d [N m s/rad]
GAINS = {"kp_h": 40.0, "kd_h": 0.2, "kp_v": 800.0, "kd_v": 0.2}
G = 9.81


def _f(x):
    return jnp.asarray(x, dtype=jnp.float64)


def _check_nonnegative(name, value, unit, strict=False, upper=None):
    """A finite number ``>= 0`` (``> 0`` if ``strict``; ``<= upper``), or a ValueError naming it."""
    if isinstance(value, jax.core.Tracer):
        return
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number [{unit}], got {value!r}") from None
    if not np.isfinite(x) or (x <= 0 if strict else x < 0) or (upper is not None and x > upper):
        rng = ("> 0" if strict else ">= 0") + (f" and <= {upper:g}" if upper is not None else "")
        raise ValueError(f"{name} must be a finite number {rng} [{unit}], got {x!r}")


def _soft_start_time(amplitude, omega, phase, threshold):
    """First time ``t >= 0`` [s] at which ``|amplitude sin(omega t + phase)| < threshold`` (the soft
    start of spec 6.5), per joint; ``0`` when ``threshold <= 0`` (no soft start) or already below at
    ``t = 0``; ``inf`` when never (``omega = 0`` and above).

    Closed form: with ``a = asin(min(threshold / |amplitude|, 1))`` the band ``|sin theta| < s`` is
    entered, going forward in ``theta``, at ``theta = k pi - a``; ``|sin|`` is even, so a negative
    ``omega`` is the mirror image (``phase -> -phase``)."""
    A = jnp.abs(amplitude)
    s = jnp.clip(threshold / jnp.where(A > 0, A, 1.0), 0.0, 1.0)
    a = jnp.arcsin(s)
    below = (A == 0) | (jnp.abs(amplitude * jnp.sin(phase)) < threshold)
    w = jnp.abs(omega)
    theta = jnp.where(omega >= 0, phase, -phase)
    t_on = jnp.mod(-a - theta, jnp.pi) / jnp.where(w > 0, w, 1.0)
    t_on = jnp.where(w > 0, t_on, jnp.inf)
    return jnp.where((threshold <= 0) | below, 0.0, t_on)


class SerpenoidGait(eqx.Module):
    """The motion pattern generator (paper eqs. 70-71), for joints ``i = 1 .. n - 1``:
    ``alpha_h,r = A_h sin(omega_h t + (i - 1) delta_h) + phi_h`` and ``alpha_v,r = A_v sin(omega_v t
    + (i - 1) delta_v + delta) + phi_v`` [rad], with their analytic rates [rad/s].

    Soft start (paper section VIII-E, spec 6.5; ``soft_start > 0`` [rad], the paper's sidewinding
    uses 3 deg): each joint's horizontal reference is held at 0 (rate 0) until, for the first time,
    ``|A_h sin(omega_h t + (i - 1) delta_h)| < soft_start``, then follows eq. 70 (it switches on
    where the sine is small, so the jump is below ``soft_start``); the vertical references likewise
    with their own sine. Joint 1's horizontal reference starts at once (``sin 0 = 0``). The offsets
    ``phi`` are held at 0 too. The switch times are closed-form (:func:`_soft_start_time`), so the
    gait stays a pure function of ``t``.

    Attributes (array leaves): ``amplitude_h``, ``omega_h`` [rad/s], ``delta_h``, ``offset_h``,
    ``amplitude_v``, ``omega_v``, ``delta_v``, ``delta``, ``offset_v`` [rad]; ``hold`` [s] the
    zero-order hold of the references (0: continuous); ``soft_start`` [rad] (0: none).

    Constructors of the paper's gaits: :meth:`lateral_undulation`, :meth:`sidewinding`.
    """

    amplitude_h: jax.Array = eqx.field(converter=_f, default=np.radians(30.0))
    omega_h: jax.Array = eqx.field(converter=_f, default=np.radians(80.0))
    delta_h: jax.Array = eqx.field(converter=_f, default=np.radians(-50.0))
    offset_h: jax.Array = eqx.field(converter=_f, default=0.0)
    amplitude_v: jax.Array = eqx.field(converter=_f, default=0.0)
    omega_v: jax.Array = eqx.field(converter=_f, default=0.0)
    delta_v: jax.Array = eqx.field(converter=_f, default=0.0)
    delta: jax.Array = eqx.field(converter=_f, default=0.0)
    offset_v: jax.Array = eqx.field(converter=_f, default=0.0)
    hold: jax.Array = eqx.field(converter=_f, default=0.0)
    soft_start: jax.Array = eqx.field(converter=_f, default=0.0)

    def __check_init__(self):
        for name in ("amplitude_h", "omega_h", "delta_h", "offset_h", "amplitude_v", "omega_v", "delta_v", "delta",
                     "offset_v", "hold", "soft_start"):
            v = getattr(self, name)
            if isinstance(v, jax.core.Tracer):
                continue
            if v.shape != () or not bool(jnp.isfinite(v)) or (name in ("hold", "soft_start") and float(v) < 0):
                allowed = "a finite number >= 0" if name in ("hold", "soft_start") else "a finite number"
                unit = {"hold": "s", "omega_h": "rad/s", "omega_v": "rad/s"}.get(name, "rad")
                raise ValueError(f"SerpenoidGait.{name} must be {allowed} [{unit}], got {np.asarray(v).tolist()!r}")

    @classmethod
    def lateral_undulation(cls, amplitude_deg=30.0, **kw):
        """The paper's lateral undulation (section VIII-B/D): ``A_h`` [deg] (30 on orthotropic
        friction, 40 in the isotropic experiment), ``omega_h = 80 deg/s``, ``delta_h = -50 deg``, no
        vertical wave. Keyword arguments override any field (radians)."""
        return cls(**{"amplitude_h": np.radians(amplitude_deg), **kw})

    @classmethod
    def sidewinding(cls, **kw):
        """The paper's sidewinding (section VIII-E, spec 6.4): ``A_h = 30 deg``, ``A_v = 10 deg``,
        ``omega_h = omega_v = 80 deg/s``, ``delta_h = delta_v = -50 deg``, ``delta = 90 deg``, soft
        start 3 deg. Keyword arguments override any field (radians)."""
        w, d = np.radians(80.0), np.radians(-50.0)
        base = dict(amplitude_h=np.radians(30.0), omega_h=w, delta_h=d, amplitude_v=np.radians(10.0), omega_v=w,
                    delta_v=d, delta=np.radians(90.0), soft_start=np.radians(3.0))
        return cls(**{**base, **kw})

    def start_times(self, n_joints):
        """``(t_h, t_v)`` ``(n_joints,)`` [s]: when each joint's horizontal and vertical references
        switch on (all 0 without a soft start)."""
        k = jnp.arange(n_joints)
        return (_soft_start_time(self.amplitude_h, self.omega_h, k * self.delta_h, self.soft_start),
                _soft_start_time(self.amplitude_v, self.omega_v, k * self.delta_v + self.delta, self.soft_start))

    def __call__(self, t, n_joints):
        """``(alpha_h, alpha_v, rate_h, rate_v)``, each ``(n_joints,)``, at time ``t`` [s]; with
        ``hold > 0`` [s] the references (and their rates) are held between samples every ``hold``
        seconds (Aiko got its references at 10 Hz: ``hold = 0.1``; 0, the default: continuous).
        Before a joint's soft-start time (:meth:`start_times`) its reference and rate are 0."""
        t = jnp.where(self.hold > 0, jnp.floor(t / jnp.where(self.hold > 0, self.hold, 1.0)) * self.hold, t)
        k = jnp.arange(n_joints)
        ph = self.omega_h * t + k * self.delta_h
        pv = self.omega_v * t + k * self.delta_v + self.delta
        on_h, on_v = (t >= s for s in self.start_times(n_joints))
        return (jnp.where(on_h, self.amplitude_h * jnp.sin(ph) + self.offset_h, 0.0),
                jnp.where(on_v, self.amplitude_v * jnp.sin(pv) + self.offset_v, 0.0),
                jnp.where(on_h, self.amplitude_h * self.omega_h * jnp.cos(ph), 0.0),
                jnp.where(on_v, self.amplitude_v * self.omega_v * jnp.cos(pv), 0.0))


def cardan_angles(R, omega):
    """Joint angles and rates of a chain (spec 6.1, eqs. 65-67).

    Args:
        R: ``(n, 3, 3)`` link rotations (body -> world).
        omega: ``(n, 3)`` body-frame angular velocities [rad/s].
    Returns:
        ``(alpha_h, alpha_v, omega_h, omega_v)``, each ``(n - 1,)`` [rad], [rad/s]:
        ``R_i^T R_{i+1} = R_z(alpha_h) R_y(alpha_v)``; ``omega_J = omega_{i+1} - R_rel^T omega_i``
        (in frame ``i + 1``), ``omega_h = omega_J,z``, ``omega_v = omega_J,y``.
    """
    Rrel = jnp.einsum("nji,njk->nik", R[:-1], R[1:])
    ah = jnp.arctan2(Rrel[:, 1, 0], Rrel[:, 0, 0])
    av = -jnp.arcsin(jnp.clip(Rrel[:, 2, 0], -1.0, 1.0))
    wJ = omega[1:] - jnp.einsum("nji,nj->ni", Rrel, omega[:-1])
    return ah, av, wJ[:, 2], wJ[:, 1]


class CardanPD(eqx.Module):
    """PD controllers of the cardan joints (eqs. 68-69) and their torques on the links (eq. 62,
    the spec's reconstruction): ``tau_h = K_ph (alpha_h - alpha_h,r) + K_dh (omega_h - rate_h,r)``
    (likewise ``tau_v``); joint ``i`` applies ``+tau_h e_z^{B_i} + tau_v e_y^{B_{i+1}}`` to link ``i``
    and the opposite to link ``i + 1`` (a positive torque turns link ``i`` positively, which
    lowers ``alpha``: stabilising). A :class:`~jaxrod.system.contact.ContactSystem` controller.

    Attributes: ``kp_h``, ``kp_v`` [N m/rad], ``kd_h``, ``kd_v`` [N m s/rad], ``gait``
    (:class:`SerpenoidGait`), ``implicit`` (static, default False): treat the PD torques
    linear-implicitly in the Moreau step (linearised in the end velocity and end position,
    :mod:`jaxrod.integrate.moreau`, "linear-implicit forces"). The paper's gains make the pitch
    loop stiff (``kp_v = 800 N m/rad`` on link inertias of 2.35e-4 to 9.63e-4 kg m^2: ``omega_n``
    ~1300-2600 rad/s); explicit, a step above about 0.56 ms may blow up (:meth:`check_dt` warns);
    linear-implicit, the loop is stable at any step (the scheme stays first order).
    """

    kp_h: jax.Array = eqx.field(converter=_f, default=GAINS["kp_h"])
    kd_h: jax.Array = eqx.field(converter=_f, default=GAINS["kd_h"])
    kp_v: jax.Array = eqx.field(converter=_f, default=GAINS["kp_v"])
    kd_v: jax.Array = eqx.field(converter=_f, default=GAINS["kd_v"])
    gait: SerpenoidGait = SerpenoidGait()
    implicit: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        for name in ("kp_h", "kd_h", "kp_v", "kd_v"):
            v = getattr(self, name)
            if isinstance(v, jax.core.Tracer):
                continue
            if v.shape != () or not bool(jnp.isfinite(v)) or float(v) < 0:
                unit = "N m/rad" if name.startswith("kp") else "N m s/rad"
                raise ValueError(f"CardanPD.{name} must be a finite number >= 0 [{unit}], "
                                 f"got {np.asarray(v).tolist()!r}")
        if self.implicit not in (False, True):
            raise ValueError(f"CardanPD.implicit must be True or False, got {self.implicit!r}")

    def stable_dt(self, system):
        """``(dt_max [s], loop name)``: the explicit step's stability limit of the stiffer PD loop,
        estimated on one joint between two free links (relative-angle inertia: half the smallest
        principal inertia of the links, ``system.inertias()``) by
        :func:`~jaxrod.integrate.moreau.pd_stable_dt`; conservative on the snake (a joint in a
        chain on the ground sees more inertia). ``(inf, None)`` for traced gains."""
        from ..integrate.moreau import pd_stable_dt

        try:
            gains = {n: float(getattr(self, n)) for n in ("kp_h", "kd_h", "kp_v", "kd_v")}
            inertia = float(np.min(np.linalg.eigvalsh(np.asarray(system.inertias()))))
        except (TypeError, jax.errors.ConcretizationTypeError):
            return float("inf"), None
        best = (float("inf"), None)
        for loop in ("v", "h"):
            kp, kd = gains[f"kp_{loop}"], gains[f"kd_{loop}"]
            if kp > 0:
                best = min(best, (pd_stable_dt(0.5 * inertia, kp, kd), loop), key=lambda b: b[0])
        return best

    def check_dt(self, dt, system):
        """Warn (:class:`~jaxrod.integrate.moreau.StabilityWarning`, naming ``dt`` and the gain)
        when the explicit PD loops are unstable at ``dt`` [s] by :meth:`stable_dt` (nothing when
        ``implicit``). Called by :func:`jaxrod.simulate` through the contact system."""
        import warnings

        from ..integrate.moreau import StabilityWarning

        if self.implicit:
            return
        limit, loop = self.stable_dt(system)
        if dt > limit:
            inertia = float(np.min(np.linalg.eigvalsh(np.asarray(system.inertias()))))
            warnings.warn(StabilityWarning(
                f"CardanPD: dt = {dt:g} s is above the explicit PD loop's stability limit ~{limit:.3g} s "
                f"(kp_{loop} = {float(getattr(self, 'kp_' + loop)):g} N m/rad, kd_{loop} = "
                f"{float(getattr(self, 'kd_' + loop)):g} N m s/rad on half the smallest link inertia "
                f"{inertia:.3g} kg m^2): the run may blow up with every contact solve converged. Use "
                f"CardanPD(implicit=True) (linear-implicit PD, stable at any dt) or dt <= {limit:.3g} s"),
                stacklevel=8)

    def torques(self, R, omega, t):
        """``(tau_h, tau_v)`` ``(n - 1,)`` [N m]."""
        ah, av, wh, wv = cardan_angles(R, omega)
        rh, rv, dh, dv = self.gait(t, ah.shape[0])
        return self.kp_h * (ah - rh) + self.kd_h * (wh - dh), self.kp_v * (av - rv) + self.kd_v * (wv - dv)

    def __call__(self, x, R, v, omega, t):
        th, tv = self.torques(R, omega, t)
        Rrel = jnp.einsum("nji,njk->nik", R[:-1], R[1:])
        z = jnp.zeros_like(th)
        eh = jnp.stack([z, z, th], -1)  # tau_h e_z^{B_i}, in frame i
        ev = jnp.stack([z, tv, z], -1)  # tau_v e_y^{B_{i+1}}, in frame i+1
        on_i = eh + jnp.einsum("nij,nj->ni", Rrel, ev)
        on_next = -jnp.einsum("nji,nj->ni", Rrel, eh) - ev
        tau = jnp.zeros_like(x).at[:-1].add(on_i).at[1:].add(on_next)
        return jnp.zeros_like(x), tau


class ChainProjection(eqx.Module):
    """The paper's constraint-violation correction of the snake (section VII-C, the spec's 5.3
    concrete version), a :class:`~jaxrod.system.contact.ContactSystem` ``corrector``: link 1 is
    kept; along the chain, link ``i + 1`` is turned about its own axis so that its pitch axis
    ``e_y`` is normal to the yaw axis ``e_z`` of link ``i`` (``e_y <- +-normalize(e_z^i x e_x^{i+1})``,
    the sign nearest the old one; ``e_x`` kept), then translated so that the joint points meet
    (``r_{i+1} = r_i + L/2 (e_x^i + e_x^{i+1})``). A ``lax.scan`` over the joints.

    Unlike the mass-weighted projection it moves the centre of mass, an ``O(dt)`` bias: 1 s of
    the LU gait went 11.4 cm with it and 10.45 cm without at dt = 1 ms, 10.49 and 10.45 cm at the
    paper's 0.25 ms (measured; not in the tests).

    Attributes: ``link_length`` [m] (joint-to-joint length ``L`` of every link).
    """

    link_length: jax.Array = eqx.field(converter=_f, default=AIKO["link_length"])

    def __call__(self, x, R, t=0.0):
        half = 0.5 * self.link_length

        def one(prev, cur):
            xp, Rp = prev
            xc, Rc = cur
            ex, ey_old = Rc[:, 0], Rc[:, 1]
            ey = jnp.cross(Rp[:, 2], ex)
            ey = ey / jnp.linalg.norm(ey)
            ey = jnp.where(ey @ ey_old < 0, -ey, ey)
            Rn = jnp.stack([ex, ey, jnp.cross(ex, ey)], axis=1)
            xn = xp + half * (Rp[:, 0] + ex)
            return (xn, Rn), (xn, Rn)

        _, (xs, Rs) = jax.lax.scan(one, (x[0], R[0]), (x[1:], R[1:]))
        return jnp.concatenate([x[:1], xs]), jnp.concatenate([R[:1], Rs])


def initial_headings(n_links, gait: SerpenoidGait, posture="curved"):
    """``(n_links,)`` link headings [rad] (angle of the body x axis from world x): ``psi_{i+1} =
    psi_i + alpha_h,r,i(0)`` for the curved start (spec 6.6), all equal for ``'straight'``; mean
    ``pi`` (link 1 at the ``+x`` end)."""
    if posture == "straight":
        return np.full(n_links, np.pi)
    ah = np.asarray(gait(0.0, n_links - 1)[0])
    psi = np.concatenate([[0.0], np.cumsum(ah)])
    return psi - psi.mean() + np.pi


def snake_model(n_links=AIKO["n_links"], *, mu_along=0.1, mu_across=0.5, gait=None, gains=None,
                posture="curved", heading=0.0, inertia_order="physical", rolling_friction=0.0,
                options=None, sink=1e-9, projection="mass", implicit_pd=False, geometry=None, restitution=0.0):
    """The snake as a :class:`~jaxrod.system.contact.ContactSystem` on the ground ``z = 0``.

    Args:
        n_links: number of links (>= 2; Aiko: 11).
        mu_along, mu_across: Coulomb coefficients along / across the links (paper: 0.1 / 0.5
            orthotropic, 0.2 / 0.2 on particle board).
        gait: :class:`SerpenoidGait` (default: lateral undulation, ``A_h = 30 deg``, ``omega = 80
            deg/s``, ``delta_h = -50 deg``), or a dict of its fields (radians, rad/s, s; the
            missing ones take :class:`SerpenoidGait`'s defaults), as a model file gives it.
        gains: dict overriding :data:`GAINS`.
        posture: ``'curved'`` (joint angles at the gait's ``t = 0`` values) or ``'straight'``.
        heading: extra rotation of the whole start posture about ``z`` [rad].
        inertia_order: ``'physical'`` ``diag(Theta_3, Theta_1, Theta_1)`` or ``'printed'``.
        rolling_friction: ``mu_V`` of every sphere.
        options: :class:`~jaxrod.integrate.moreau.MoreauOptions`.
        sink: the start posture is lowered by this much [m] so that every sphere is in contact
            at the first step (a gap of exactly 0 can round to +1e-18).
        projection: ``'mass'`` (the stepper's mass-weighted joint projection) or ``'chain'``
            (the paper's: :class:`ChainProjection`, link 1 fixed).
        geometry: dict overriding the per-link values of :data:`AIKO`: ``link_length`` [m],
            ``radius`` [m] (contact spheres), ``sphere_offset`` [m] (sphere centres from the link
            centre), ``total_mass`` [kg] (of the 11-link Aiko: each link ``total_mass / 11``),
            ``inertia_axial``, ``inertia_transverse`` [kg m^2]; each finite and > 0, a sphere no
            longer than its link (``2 radius <= link_length``) and its centre on the link
            (``sphere_offset <= link_length / 2``).
        restitution: Newton restitution ``e`` of every sphere, in ``[0, 1]`` (the paper: 0).
        implicit_pd: ``CardanPD(implicit=...)``: the PD torques linear-implicit in the Moreau
            step (stable at any ``dt``; default False, the paper's explicit controller, which
            :func:`jaxrod.simulate` warns about above ~0.56 ms).
    """
    n = check_int("snake_model.n_links", n_links, min=2)
    if posture not in ("curved", "straight"):
        raise ValueError(f"snake_model.posture must be 'curved' or 'straight', got {posture!r}")
    if projection not in ("mass", "chain"):
        raise ValueError(f"snake_model.projection must be 'mass' or 'chain', got {projection!r}")
    if inertia_order not in ("physical", "printed"):
        raise ValueError(f"snake_model.inertia_order must be 'physical' or 'printed', got {inertia_order!r}")
    gait = SerpenoidGait() if gait is None else gait
    if isinstance(gait, dict):
        fields = [f.name for f in dataclasses.fields(SerpenoidGait)]
        unknown = sorted(set(gait) - set(fields))
        if unknown:
            raise ValueError(f"snake_model.gait: unknown keys {unknown}; allowed {fields}")
        gait = SerpenoidGait(**gait)
    if not isinstance(gait, SerpenoidGait):
        raise ValueError(f"snake_model.gait must be a SerpenoidGait or a dict of its fields, got {type(gait).__name__}")
    gains = {**GAINS, **(gains or {})}
    bad = sorted(set(gains) - set(GAINS))
    if bad:
        raise ValueError(f"snake_model.gains: unknown keys {bad}; allowed {sorted(GAINS)}")
    for name, value in (("mu_along", mu_along), ("mu_across", mu_across), ("rolling_friction", rolling_friction)):
        _check_nonnegative(f"snake_model.{name}", value, "-")
    _check_nonnegative("snake_model.restitution", restitution, "-", upper=1.0)
    geo = {k: v for k, v in AIKO.items() if k != "n_links"}
    unknown = sorted(set(geometry or {}) - set(geo))
    if unknown:
        raise ValueError(f"snake_model.geometry: unknown keys {unknown}; allowed {sorted(geo)}")
    geo.update(geometry or {})
    for name, value in geo.items():
        unit = "kg" if name == "total_mass" else ("kg m^2" if name.startswith("inertia") else "m")
        _check_nonnegative(f"snake_model.geometry['{name}']", value, unit, strict=True)
    L, r, Lgs = float(geo["link_length"]), float(geo["radius"]), float(geo["sphere_offset"])
    if 2.0 * r > L:
        raise ValueError(f"snake_model.geometry: a contact sphere larger than its link: 2 radius = {2 * r:g} m > "
                         f"link_length = {L:g} m (radius {r:g} m)")
    if Lgs > 0.5 * L:
        raise ValueError(f"snake_model.geometry: sphere_offset = {Lgs:g} m puts the sphere centres beyond the link "
                         f"ends (link_length / 2 = {0.5 * L:g} m)")
    m = float(geo["total_mass"]) / AIKO["n_links"]
    Ia, It = float(geo["inertia_axial"]), float(geo["inertia_transverse"])
    inertia = (Ia, It, It) if inertia_order == "physical" else (It, It, Ia)
    psi = initial_headings(n, gait, posture) + heading
    ex = np.stack([np.cos(psi), np.sin(psi), np.zeros(n)], 1)
    ey = np.stack([-np.sin(psi), np.cos(psi), np.zeros(n)], 1)
    centres = np.zeros((n, 3))
    for i in range(1, n):
        centres[i] = centres[i - 1] + 0.5 * L * (ex[i - 1] + ex[i])
    centres -= centres.mean(0)
    centres[:, 2] = r - sink
    bodies, joints, spheres = [], [], []
    for i in range(n):
        q = (np.cos(psi[i] / 2), 0.0, 0.0, np.sin(psi[i] / 2))
        bodies.append(RigidBody(f"link{i + 1}", m, inertia, position=centres[i], orientation=q))
        for s in (1.0, -1.0):
            spheres.append(SphereContact(f"link{i + 1}", centres[i] + s * Lgs * ex[i], r, mu_along=mu_along,
                                         mu_across=mu_across, direction=ex[i], rolling_friction=rolling_friction,
                                         restitution=restitution))
    for i in range(n - 1):
        joints.append(Universal(f"link{i + 1}", f"link{i + 2}", centres[i] + 0.5 * L * ex[i],
                                axis1=(0.0, 0.0, 1.0), axis2=ey[i + 1]))
    system = MultibodySystem(bodies, joints, gravity=(0.0, 0.0, -G))
    if implicit_pd not in (False, True):
        raise ValueError(f"snake_model.implicit_pd must be True or False, got {implicit_pd!r}")
    controller = CardanPD(gains["kp_h"], gains["kd_h"], gains["kp_v"], gains["kd_v"], gait, implicit=implicit_pd)
    corrector = ChainProjection(L) if projection == "chain" else None
    return ContactSystem(system, spheres, controller=controller, options=options, corrector=corrector)


def _snake_scene(name, description, model, dt, duration, n_links):
    return Scene(name=name, description=description, model=model, dt=dt, duration=duration, scheme=None,
                 reference={"tip_axis": 0, "weight_N": AIKO["total_mass"] / AIKO["n_links"] * n_links * G,
                            "track_body": min(5, n_links - 1)})


def snake_undulation(n_links=AIKO["n_links"], mu_along=0.1, mu_across=0.5, dt=5e-4, duration=15.0, **kw):
    """Scene ``snake-undulation-ortho``: Aiko's lateral undulation with orthotropic friction (paper
    section VIII-B: ``A_h = 30 deg``, ``omega = 80 deg/s``, ``delta_h = -50 deg``, curved start,
    15 s). The paper's step is 0.25 ms; the default here is 0.5 ms (the PD pitch loop is explicit
    in the scheme: ``dt`` below ``2 / omega_n``; on the pitch gain 800 N m/rad acting on a link's
    transverse inertia with its lever, about 1e-3 kg m^2, that is ~1.5 ms, but where a link is
    turned (``alpha_h != 0``) part of the pitch torque turns it about its own axis, ``Theta_3 =
    2.35e-4 kg m^2``: ~1.1 ms. 1 ms runs of this scene from the curved start are stable and give
    the same forward motion as 0.5 ms to 0.1 mm over 1 s; sidewinding, and undulation from the
    straight start, blew up at 1 ms, silently in the latter, every contact solve converged: keep
    0.5 ms or less, or pass ``implicit_pd=True``; :func:`jaxrod.simulate` warns above the explicit
    loop's estimated limit, 0.556 ms). ``reference["track_body"]`` is link 6
    (index 5), the paper's measured link, whose path the figures draw."""
    model = snake_model(n_links, mu_along=mu_along, mu_across=mu_across, **kw)
    return _snake_scene(
        "snake-undulation-ortho",
        f"Aiko snake robot ({n_links} links), lateral undulation, friction mu = {mu_along:g} along / "
        f"{mu_across:g} across (Transeth et al. 2008)", model, dt, duration, n_links)


def snake_undulation_iso(n_links=AIKO["n_links"], mu=0.2, amplitude_deg=40.0, dt=5e-4, duration=15.0, **kw):
    """Scene ``snake-undulation-iso``: the paper's lateral-undulation experiment on particle board
    (section VIII-D): isotropic Coulomb friction ``mu = 0.2``, ``A_h = 40 deg``, ``omega = 80 deg/s``,
    ``delta_h = -50 deg``, curved start, 15 s. The paper: the snake (model and Aiko) moves slowly
    backward, in the direction of the travelling wave (``-x`` here), of order 0.1-0.2 m in 15 s."""
    gait = kw.pop("gait", None) or SerpenoidGait.lateral_undulation(amplitude_deg)
    model = snake_model(n_links, mu_along=mu, mu_across=mu, gait=gait, **kw)
    return _snake_scene(
        "snake-undulation-iso",
        f"Aiko snake robot ({n_links} links), lateral undulation, A_h = {amplitude_deg:g} deg, isotropic friction "
        f"mu = {mu:g} (Transeth et al. 2008)", model, dt, duration, n_links)


def snake_sidewinding(n_links=AIKO["n_links"], mu=0.2, dt=5e-4, duration=15.0, heading=np.pi / 2, **kw):
    """Scene ``snake-sidewinding``: the paper's sidewinding (section VIII-E, spec 6.4-6.6):
    :meth:`SerpenoidGait.sidewinding` (``A_h = 30 deg``, ``A_v = 10 deg``, ``delta = 90 deg``, soft
    start 3 deg) from the straight posture on isotropic ``mu = 0.2``, 15 s. The paper does not state
    the start direction; the body starts along ``y`` here (``heading = pi/2`` turns the default
    straight posture, link 1 at ``+x``, by 90 deg: link 1 at ``+y``), so that the mostly sideways
    travel is along ``x`` as in the paper's Fig. 10 (link 6's ``x`` spans 1.4 m there)."""
    gait = kw.pop("gait", None) or SerpenoidGait.sidewinding()
    kw.setdefault("posture", "straight")
    model = snake_model(n_links, mu_along=mu, mu_across=mu, gait=gait, heading=heading, **kw)
    return _snake_scene(
        "snake-sidewinding",
        f"Aiko snake robot ({n_links} links), sidewinding, isotropic friction mu = {mu:g} (Transeth et al. 2008)",
        model, dt, duration, n_links)
