"""Linear modal analysis of any implicit model (TMTDyn spec section 4.7).

The equation of motion of an :class:`~jaxrod.integrate.AbstractImplicitModel` is its residual
``r(q, v, a, t) = 0``. Linearised about a configuration ``q0`` at rest (``v = a = 0``), on the free
DOFs (those not in ``model.fixed_mask()``):

    M dq'' + C dq' + K dq = 0,   M = dr/da,  C = dr/dv,  K = dr/dq   (all at q0, v = a = 0),

with exact forward-mode Jacobians (``jax.jacfwd``), so ``K`` includes the geometric stiffness of
the loads and prestress at ``q0`` (gravity sag, an axial load). The undamped modes solve the
generalised eigenproblem ``K phi = omega^2 M phi``; modal mass, stiffness and damping are the
projections ``m_i = phi_i^T M phi_i``, ``k_i = phi_i^T K phi_i``, ``c_i = phi_i^T C phi_i`` and the
damping ratio is ``zeta_i = c_i / (2 sqrt(k_i m_i))``. This is exact for undamped and
proportionally damped systems (``C = a M + b K``); otherwise the modal ``C`` has off-diagonal
terms that the ratios ignore, and :attr:`ModalResult.damping_coupling` says how large they are.
The paper's ``eta = V_w / (omega M_w)`` is ``2 zeta`` (spec 4.7 note).

Numerics (float64): ``M = L L^T`` (Cholesky), ``A = L^{-1} K L^{-T}``, ``A y = omega^2 y``,
``phi = L^{-T} y``. When ``K`` is symmetric to round-off (every model whose forces derive from an
energy: DER, DER networks, PCS) ``A`` is symmetrised and solved with ``eigh``, which is
differentiable (eigenvalue derivatives exist for distinct and repeated eigenvalues alike, mode
shape derivatives only for distinct ones). A clearly unsymmetric ``K`` (follower loads,
friction) goes to the general eigen-solver ``jnp.linalg.eig`` (CPU only), whose real parts are
returned.

Cost: the matrices are dense ``(F, F)``, built from ``3F`` forward-mode directional derivatives of
the residual in one vectorised pass, and the eigen-solve is ``O(F^3)``: fine to a few thousand free
DOFs (a 1000-node DER rod has ~4000). The lowest frequencies carry an absolute error of round-off
times the largest eigenvalue (a PCS rod's stiff shear and axial modes: ~1e-8 relative on
``omega_1``).

Constrained systems (models with Lagrange multipliers, ``model.multiplier_mask()``: joints of
:class:`~jaxrod.system.MultibodySystem`). At rest the constraint forces ``lambda = v_mu`` of the
residual vanish, so the static multipliers ``lambda0`` are solved first (least squares on the
dynamics rows); ``K`` is then taken with ``lambda0`` in place, so it contains the geometric
stiffness of the constraint forces (all of a pendulum's restoring stiffness). The modes live on
the linearised constraint manifold ``G dq = 0``: coordinates are partitioned into dependent and
independent ones (column-pivoted QR of ``G``; redundant constraint rows, e.g. two coaxial hinges,
are detected by the rank and dropped) and ``M``, ``C``, ``K`` are reduced with ``dq = T dq_i``.
Mode shapes are returned in the full coordinates (zero on the multipliers); ``free_dofs`` lists
the non-multiplier free DOFs and the ``*_matrix`` attributes are on those, before the reduction.

Massless DOFs. A DOF whose row and column of ``M`` vanish (a quasi-static coordinate) makes ``M``
singular; such DOFs are condensed out statically (Guyan: ``dq_s = -K_ss^{-1} K_sm dq_m``, exact
for the undamped problem, ``C`` projected with the same map) and appear in the mode shapes
through that map. Detecting them needs concrete values: inside ``jax.grad``/``jit`` the mass
matrix is assumed non-singular (DER, DER networks and PCS always are).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..integrate.implicit import AbstractImplicitModel, State
from ..validation import check_int, is_traced

__all__ = ["ModalResult", "modal"]

#: relative size ``max|K - K^T| / max|K|`` below which K is treated as symmetric (round-off)
SYMMETRY_TOL = 1e-8
#: a free DOF is massless when its row and column of M are below this fraction of max|M|
MASSLESS_TOL = 1e-14

_SUPPORTED = (
    "jaxrod.DERModel, jaxrod.models.der.model.DERNetwork, jaxrod.models.pcs.PCSModel or any other "
    "AbstractImplicitModel (a residual r(q, v, a, t, aux) with fixed_mask, observe)"
)


class ModalResult(eqx.Module):
    """Natural modes of a model linearised about a state at rest, sorted by ascending frequency.

    ``n`` is the number of modes returned, ``F`` the number of free DOFs (``q`` entries not in
    ``model.fixed_mask()``), ``N`` the number of observed nodes.

    Attributes:
        omega: ``(n,)`` natural angular frequencies [rad/s] of the undamped problem. A negative
            value ``-s`` marks an unstable direction (``K`` not positive there: eigenvalue
            ``-s^2``, growth rate ``s`` [1/s]); rigid-body modes give ``|omega|`` at round-off.
        eigenvalues: ``(n,)`` ``omega^2`` [1/s^2] with sign (``K phi = lambda M phi``).
        mode_shapes: ``(n, *q.shape)`` mode shapes in the model's coordinates (units of each DOF:
            m, rad, ...; zero on fixed DOFs), each scaled so that its largest node displacement is
            1 m (the largest component of that displacement positive), or, for a mode that moves
            no node (torsion of a straight DER rod), so that its largest entry is +1. Within a
            repeated frequency (the two bending planes of a round rod) the split into modes is
            arbitrary.
        displacements: ``(n, N, 3)`` the same modes as node displacements [m] per unit mode
            amplitude: the linearised ``observe(q)["positions"]`` applied to ``mode_shapes``.
        positions: ``(N, 3)`` node positions [m] of the linearisation state (``observe``).
        modal_mass: ``(n,)`` ``phi^T M phi`` [kg for a displacement-scaled mode: the mass that,
            moving with the largest node displacement, has the mode's kinetic energy; kg m^2 for a
            twist-scaled mode].
        modal_stiffness: ``(n,)`` ``phi^T K phi`` (= ``omega^2 modal_mass``).
        modal_damping: ``(n,)`` ``phi^T C phi``.
        damping_ratio: ``(n,)`` ``zeta = c / (2 sqrt(|k| m))`` (dimensionless; 0 without damping).
        damping_coupling: largest off-diagonal ``|D_ij|`` of the modal damping matrix of the
            returned modes, mass-normalised (``D_ij = C_ij / sqrt(m_i m_j)``, ``D_ii = 2 zeta_i
            omega_i``), relative to the largest ``D_ii``: 0 for proportional damping; near 1 means
            the damping ratios (and the undamped modes) do not describe the damped motion.
        mass_matrix, damping_matrix, stiffness_matrix: ``(F, F)`` linearised ``M``, ``C``, ``K``
            on the free DOFs (before condensing massless DOFs).
        free_dofs: ``(F,)`` indices of the free DOFs in ``q.reshape(-1)`` (without Lagrange
            multipliers for a constrained model).
        massless_dofs: ``(S,)`` indices (into the free DOFs) condensed out as massless.
        stiffness_asymmetry: ``max|K - K^T| / max|K|`` measured.
        equilibrium_residual: max-norm of the residual ``r(q0, 0, 0, t)`` on the free DOFs (units
            of the residual, N for DER): ~0 at an equilibrium; a large value means ``q0`` is not
            one and the linearisation ignores that constant force.
        state: the :class:`~jaxrod.integrate.State` linearised about (velocity set to zero).
    """

    omega: jax.Array
    eigenvalues: jax.Array
    mode_shapes: jax.Array
    displacements: jax.Array
    positions: jax.Array
    modal_mass: jax.Array
    modal_stiffness: jax.Array
    modal_damping: jax.Array
    damping_ratio: jax.Array
    damping_coupling: jax.Array
    mass_matrix: jax.Array
    damping_matrix: jax.Array
    stiffness_matrix: jax.Array
    free_dofs: jax.Array
    massless_dofs: jax.Array
    stiffness_asymmetry: jax.Array
    equilibrium_residual: jax.Array
    state: State

    @property
    def frequency_hz(self):
        """``(n,)`` natural frequencies ``omega / (2 pi)`` [Hz]."""
        return self.omega / (2.0 * jnp.pi)

    @property
    def n_modes(self) -> int:
        return int(self.omega.shape[0])


def modal(model, state=None, *, n_modes=None, t=0.0, symmetry_tol=SYMMETRY_TOL) -> ModalResult:
    """Natural frequencies, mode shapes and modal mass/stiffness/damping of ``model``.

    Linearises the model's residual about ``state`` at rest (``v = a = 0``) on its free DOFs and
    solves ``K phi = omega^2 M phi`` (see the module docstring for the maths and numerics).

    Args:
        model: an :class:`~jaxrod.integrate.AbstractImplicitModel` (DER rod, DER network, PCS).
        state: the :class:`~jaxrod.integrate.State` to linearise about. Default ``None``: the
            model's static equilibrium under its loads at time ``t``,
            ``jaxrod.solve_static(model, t=t)`` (raises :class:`~jaxrod.ConvergenceError` if it
            fails). A given state's velocity is ignored; its ``aux`` (e.g. DER reference frames)
            is used as is, and its fixed DOFs keep their values.
        n_modes: number of lowest modes returned, an integer in ``[1, F - S]`` (free DOFs minus
            massless ones); default: all of them.
        t: time [s] of the linearisation (loads and prescribed DOFs are evaluated at ``t``).
        symmetry_tol: relative asymmetry of ``K`` up to which it is symmetrised and ``eigh`` is
            used (default ``1e-8``); above it the general eigen-solver is used (outside ``jit`` /
            ``grad`` only: a traced call raises instead).

    Returns:
        :class:`ModalResult`. Differentiable with respect to the model's array leaves (frequencies
        by ``eigh``'s eigenvalue derivative; the default equilibrium by implicit differentiation).

    Raises:
        TypeError: ``model`` is not an implicit model (e.g. the shooting
            :class:`~jaxrod.CosseratModel`, whose unknowns are boundary values, not a
            configuration: use a DER or PCS model of the same rod), or ``state`` is not a
            :class:`~jaxrod.State`.
        ValueError: ``state.q`` has the wrong shape or non-finite entries; ``n_modes`` is out of
            range; the model has no free DOF; ``M`` is not positive definite on the DOFs with mass;
            ``K`` is unsymmetric inside a traced call.
    """
    if not isinstance(model, AbstractImplicitModel):
        raise TypeError(
            f"modal(): model must be an implicit model ({_SUPPORTED}); got {type(model).__name__}. "
            "Shooting models (CosseratModel) have no configuration vector to linearise: build the same "
            "rod as a DER or PCS model"
        )
    if state is None:
        from ..integrate import ConvergenceError, solve_static

        try:
            state, _ = solve_static(model, t=t)
        except ConvergenceError as e:
            # the solver's advice names solve_static's options, which modal() does not take
            from ..integrate.implicit import _static_advice

            msg = str(e).replace("; " + _static_advice(model, 1), "")  # solve_static's own advice
            how = ("e.g. state, _ = jaxrod.solve_static(model, t=t, load_steps=10)" if hasattr(model, "with_load_factor")
                   else "e.g. with jaxrod.solve_static(model, t=t, state0=...) from a closer start; a coordinate "
                        "that nothing holds (a joint with no spring or limit along gravity) has no equilibrium")
            raise ConvergenceError(
                f"modal(): the default state, the static equilibrium at t = {t}, was not found ({msg}); solve it "
                f"yourself ({how}) and pass modal(model, state)",
                step=e.step, time=e.time, residual=e.residual, members=e.members, failures=e.failures,
            ) from None
    elif not isinstance(state, State):
        raise TypeError(f"modal(): state must be a jaxrod.State or None, got {type(state).__name__}")
    q_ref = model.initial_state().q if not is_traced(model) else None
    q = jnp.asarray(state.q, dtype=float)
    if q_ref is not None and tuple(q.shape) != tuple(q_ref.shape):
        raise ValueError(f"modal(): state.q must have the model's shape {tuple(q_ref.shape)}, got {tuple(q.shape)}")
    if not is_traced(q):
        bad = np.argwhere(~np.isfinite(np.asarray(q)))
        if bad.size:
            raise ValueError(
                f"modal(): state.q must be finite; non-finite entries at indices {bad[:5].tolist()} "
                "(a diverged simulation or a failed static solve)"
            )
    try:
        # the mask is static configuration; built with jnp ops it would be staged inside jit
        with jax.ensure_compile_time_eval():
            mask = np.asarray(model.fixed_mask(), dtype=bool).reshape(-1)
    except jax.errors.TracerArrayConversionError as e:  # pragma: no cover - a model with a traced mask
        raise ValueError("modal(): model.fixed_mask() must not depend on traced values") from e
    if mask.size != q.size:
        raise ValueError(f"modal(): model.fixed_mask() has {mask.size} entries but state.q has {q.size}")
    free = np.flatnonzero(~mask)
    if free.size == 0:
        raise ValueError("modal(): the model has no free DOF (every entry of fixed_mask() is True)")

    mult = _multiplier_mask(model, q.size)
    t_arr = jnp.asarray(t, dtype=float)
    if mult is not None and np.any(mult[free]):
        mu_idx = free[mult[free]]
        free = free[~mult[free]]
        if free.size == 0:
            raise ValueError("modal(): the model has no free DOF besides its Lagrange multipliers")
        lin = _linearise_constrained(model, q, state.aux, t_arr, free, mu_idx)
    else:
        lin = _linearise(model, q, state.aux, t_arr, jnp.asarray(free))
        lin["T"] = None
    M, C, K = lin["M"], lin["C"], lin["K"]
    traced = is_traced(M) or is_traced(K)
    massless = np.zeros(0, dtype=int) if is_traced(M) else _massless(np.asarray(M))
    n_dof = M.shape[0]  # free DOFs, or the independent motions of a constrained model
    what = f"{free.size} free DOFs" if lin["T"] is None else f"{n_dof} independent motions"
    n_avail = n_dof - massless.size
    if n_avail == 0:
        raise ValueError(f"modal(): all {what} of the model are massless (dr/da vanishes): there is no mode")
    if n_modes is None:
        n = n_avail
    else:
        n = check_int("n_modes", n_modes, min=1)
        if n > n_avail:
            extra = f" minus {massless.size} massless" if massless.size else ""
            raise ValueError(
                f"modal(): n_modes must be in [1, {n_avail}] (the model's {what}{extra}), got {n_modes}"
            )
    asym = lin["asymmetry"]
    if traced:
        general = False
        K = eqx.error_if(
            K, asym > symmetry_tol,
            f"modal(): K is unsymmetric beyond symmetry_tol={symmetry_tol} inside a traced call; call modal() "
            "outside jit/grad to use the general eigen-solver",
        )
    else:
        general = bool(float(asym) > symmetry_tol)
    if not is_traced(M):
        keep = np.setdiff1d(np.arange(n_dof), massless)
        Mm = np.asarray(M)[np.ix_(keep, keep)]
        if not np.all(np.isfinite(Mm)) or np.any(np.linalg.eigvalsh(0.5 * (Mm + Mm.T)) <= 0):
            raise ValueError(
                "modal(): the mass matrix dr/da is not positive definite on the DOFs with mass (min eigenvalue "
                f"{np.linalg.eigvalsh(0.5 * (Mm + Mm.T)).min():.3e}); a model needs a symmetric positive "
                "definite inertia on its non-massless free DOFs"
            )
    eig = _eigen(M, C, K, lin["J"], jnp.asarray(massless), n, general)
    phi = eig["phi"] if lin["T"] is None else eig["phi"] @ lin["T"].T  # back from the independent coordinates
    shapes = jnp.zeros((n, q.size), dtype=q.dtype).at[:, free].set(phi).reshape((n, *q.shape))
    return ModalResult(
        omega=eig["omega"],
        eigenvalues=eig["lam"],
        mode_shapes=shapes,
        displacements=eig["disp"],
        positions=lin["x0"],
        modal_mass=eig["m"],
        modal_stiffness=eig["k"],
        modal_damping=eig["c"],
        damping_ratio=eig["zeta"],
        damping_coupling=eig["coupling"],
        mass_matrix=lin.get("M_full", lin["M"]),
        damping_matrix=lin.get("C_full", C),
        stiffness_matrix=lin.get("K_full", lin["K"]),
        free_dofs=jnp.asarray(free),
        massless_dofs=jnp.asarray(massless),
        stiffness_asymmetry=asym,
        equilibrium_residual=lin["r0"],
        state=State(q, jnp.zeros_like(q), state.aux),
    )


def _multiplier_mask(model, size):
    """Flat boolean mask of the model's Lagrange-multiplier coordinates, or ``None``."""
    fn = getattr(model, "multiplier_mask", None)
    if fn is None:
        return None
    with jax.ensure_compile_time_eval():
        m = fn()
    if m is None:
        return None
    m = np.asarray(m, dtype=bool).reshape(-1)
    if m.size != size:
        raise ValueError(f"modal(): model.multiplier_mask() has {m.size} entries but state.q has {size}")
    return m


def _linearise_constrained(model, q, aux, t, free, mu_idx):
    """``M, C, K`` of a constrained model on its INDEPENDENT coordinates (the linearised motions
    that keep the constraints), by coordinate partitioning.

    At rest the model's constraint forces ``lambda = v_mu`` are zero, so the static multipliers
    are solved first: ``lambda0 = argmin |r_y(q0, 0, 0) + B lambda|`` with ``B = dr_y/dv_mu``
    (``= G^T``, ``G = dg/dq_y`` the constraint Jacobian). ``K = d r_y / d q_y`` at
    ``v_mu = lambda0`` then includes the geometric stiffness ``d(G^T lambda0)/dq`` of the
    constraint forces (a pendulum's whole restoring stiffness), i.e. it is the Hessian of the
    Lagrangian. The linearised constraints ``G dq = 0`` are solved for ``r`` dependent coordinates
    (chosen by column-pivoted QR; ``r`` = the rank of ``G``, so redundant constraint rows are
    dropped): ``dq = T dq_i`` and the reduced matrices are ``T^T M T``, ``T^T C T``, ``T^T K T``.
    Pivots and rank are chosen on concrete values (inside ``jax.grad`` the constraints are assumed
    independent and the pivots come from a host callback); ``T`` itself is differentiable.
    """
    free_j, mu_j = jnp.asarray(free), jnp.asarray(mu_idx)
    n_y, n_mu = free.size, mu_idx.size
    # one program for both linearisations (at v = 0, then at the static multipliers)
    r, J = _linearisation(model, q, jnp.zeros(n_mu, q.dtype), aux, t, free_j, mu_j)
    G = J[n_y:, :n_y]
    if is_traced(G):
        rows = np.arange(n_mu)

        def pivots(g):
            import scipy.linalg

            return scipy.linalg.qr(np.asarray(g), pivoting=True, mode="r")[1][: g.shape[0]].astype(np.int32)

        # pivots are discrete: no derivative flows through their choice
        dep = jax.pure_callback(pivots, jax.ShapeDtypeStruct((n_mu,), jnp.int32), jax.lax.stop_gradient(G))
    else:
        import scipy.linalg

        Gn = np.asarray(G)
        scale = max(np.abs(Gn).max(), 1e-300)
        # independent constraint rows (pivoted QR of G^T), then dependent coordinates among them
        _, Rr, prow = scipy.linalg.qr(Gn.T, pivoting=True, mode="economic")
        rank = int(np.sum(np.abs(np.diag(Rr)) > 1e-10 * scale)) if Rr.size else 0
        rows = np.sort(prow[:rank])
        if rank == 0:
            dep = np.zeros(0, dtype=np.int32)
        else:
            dep = scipy.linalg.qr(Gn[rows], pivoting=True, mode="r")[1][:rank].astype(np.int32)
        if rank >= n_y:
            raise ValueError(
                f"modal(): the constraints leave no motion ({rank} independent constraint rows on {n_y} "
                "coordinates): the system is a structure, not a mechanism"
            )
    rows_j = jnp.asarray(rows)
    v_mu = _static_multipliers(r, J, rows_j, n_y)
    r2, J2 = _linearisation(model, q, v_mu, aux, t, free_j, mu_j)
    out = _reduce(J2, G[rows_j], jnp.asarray(dep), n_y)
    x0, Jp = _position_jacobian(model, q, aux, free_j)
    out.update(J=Jp @ out["T"], x0=x0, r0=jnp.max(jnp.abs(r2[:n_y])))
    return out


@eqx.filter_jit
def _linearisation(model, q, v_mu, aux, t, free, mu):
    """The residual and its Jacobian at ``q``, ``v`` = ``v_mu`` on the multiplier coordinates ``mu``
    (0 elsewhere), ``a = 0``: rows ``r[free]``, ``r[mu]``; columns ``dq[free]``, ``dv[free]``,
    ``dv[mu]``, ``da[free]``. One program serves the unconstrained linearisation (``mu`` empty) and
    both stages of the constrained one (``v_mu = 0``, then the static multipliers)."""
    shape, nf, nm = q.shape, free.shape[0], mu.shape[0]
    q_flat = q.reshape(-1)
    zero = jnp.zeros_like(q_flat)
    v_base = zero.at[mu].set(v_mu)
    rows = jnp.concatenate([free, mu])

    def r(z):
        dq, dvf, dvm, da = z[:nf], z[nf:2 * nf], z[2 * nf:2 * nf + nm], z[2 * nf + nm:]
        rr = model.residual(q_flat.at[free].add(dq).reshape(shape),
                            v_base.at[free].add(dvf).at[mu].add(dvm).reshape(shape),
                            zero.at[free].set(da).reshape(shape), t, aux).reshape(-1)[rows]
        return rr, rr

    jac, r0 = jax.jacfwd(r, has_aux=True)(jnp.zeros(3 * nf + nm, q.dtype))
    return r0, jac


@eqx.filter_jit
def _static_multipliers(r, J, rows, n_y):
    """``v_mu`` with the least-squares static multipliers ``argmin |r_y + B lambda|`` on the
    independent constraint rows (0 on the others); ``B = d r_y / d v_mu``."""
    n_mu = J.shape[0] - n_y
    B = J[:n_y, 2 * n_y:2 * n_y + n_mu][:, rows]
    lam0 = jnp.linalg.solve(B.T @ B, -B.T @ r[:n_y])
    return jnp.zeros(n_mu, J.dtype).at[rows].set(lam0)


@eqx.filter_jit
def _reduce(J, G, dep, n_y):
    """``M, C, K`` of the free rows (full and reduced on the independent coordinates by
    ``dq = T dq_i``, the linearised constraints ``G dq = 0`` solved for the ``dep`` coordinates)."""
    n_mu = J.shape[0] - n_y
    K, C, M = J[:n_y, :n_y], J[:n_y, n_y:2 * n_y], J[:n_y, 2 * n_y + n_mu:]
    n_i = n_y - dep.shape[0]
    is_dep = jnp.zeros(n_y, bool).at[dep].set(True)
    ind = jnp.nonzero(~is_dep, size=n_i)[0]
    T = jnp.zeros((n_y, n_i), J.dtype).at[ind, jnp.arange(n_i)].set(1.0)
    T = T.at[dep].set(-jnp.linalg.solve(G[:, dep], G[:, ind]))
    Kr = T.T @ K @ T
    kmax = jnp.max(jnp.abs(Kr))
    asym = jnp.max(jnp.abs(Kr - Kr.T)) / jnp.where(kmax > 0, kmax, 1.0)
    return {"M": T.T @ M @ T, "C": T.T @ C @ T, "K": Kr, "T": T, "M_full": M, "C_full": C, "K_full": K,
            "asymmetry": asym}


@eqx.filter_jit
def _position_jacobian(model, q, aux, free):
    """Node positions ``(N, 3)`` [m] at ``q`` and their Jacobian ``(N*3, F)`` on the free DOFs."""
    shape = q.shape
    q_flat = q.reshape(-1)

    def positions(dq):
        x = model.observe(q_flat.at[free].add(dq).reshape(shape), jnp.zeros_like(q), aux)["positions"].reshape(-1)
        return x, x

    J, x = jax.jacfwd(positions, has_aux=True)(jnp.zeros(free.shape[0], q.dtype))
    return x.reshape(-1, 3), J


def _massless(M):
    """Indices of free DOFs whose row and column of ``M`` vanish (relative to max|M|)."""
    scale = np.abs(M).max()
    if not np.isfinite(scale) or scale == 0.0:
        return np.arange(M.shape[0]) if scale == 0.0 else np.zeros(0, dtype=int)
    small = (np.abs(M).max(axis=1) <= MASSLESS_TOL * scale) & (np.abs(M).max(axis=0) <= MASSLESS_TOL * scale)
    return np.flatnonzero(small)


def _linearise(model, q, aux, t, free):
    """Dense ``M, C, K`` ``(F, F)`` on the free DOFs, the position Jacobian ``(N*3, F)`` and the
    residual at rest (the programs of the constrained path, with no multipliers)."""
    r, J = _linearisation(model, q, jnp.zeros(0, q.dtype), aux, t, free, jnp.zeros(0, free.dtype))
    out = _unconstrained(J)
    x0, Jp = _position_jacobian(model, q, aux, free)
    out.update(J=Jp, x0=x0, r0=jnp.max(jnp.abs(r)))
    return out


@eqx.filter_jit
def _unconstrained(J):
    nf = J.shape[0]
    K, C, M = J[:, :nf], J[:, nf:2 * nf], J[:, 2 * nf:]
    kmax = jnp.max(jnp.abs(K))
    asym = jnp.max(jnp.abs(K - K.T)) / jnp.where(kmax > 0, kmax, 1.0)
    return {"M": M, "C": C, "K": K, "asymmetry": asym}


def _mode_scale(phi, J):
    """``(n,)`` scale of each mode ``phi`` ``(F, n)``: its largest node displacement [m] (so a mode of
    a round rod is scaled the same whichever direction ``eigh`` picks within a repeated pair), or,
    for a mode that moves no node (torsion), its largest ``|entry|``; signed so that the largest
    component of that displacement (entry) is positive."""
    n = phi.shape[1]
    d = (J @ phi).reshape(-1, 3, n)
    norms = jnp.linalg.norm(d, axis=1)  # (N, n)
    node = jnp.argmax(norms, axis=0)
    dn = d[node, :, jnp.arange(n)]  # (n, 3)
    d_scale = norms[node, jnp.arange(n)] * jnp.sign(dn[jnp.arange(n), jnp.argmax(jnp.abs(dn), axis=1)])
    peak = phi[jnp.argmax(jnp.abs(phi), axis=0), jnp.arange(n)]
    moves = jnp.abs(d_scale) > 1e-6 * jnp.abs(peak)
    return jnp.where(moves, d_scale, peak)


@eqx.filter_jit
def _eigen(M, C, K, J, massless, n, general):
    nf = M.shape[0]
    if massless.shape[0]:
        # Guyan condensation: massless DOFs follow the others statically, dq_s = -K_ss^{-1} K_sm dq_m
        keep = jnp.setdiff1d(jnp.arange(nf), massless, size=nf - massless.shape[0])
        Ksm = K[jnp.ix_(massless, keep)]
        Kss = K[jnp.ix_(massless, massless)]
        T = jnp.zeros((nf, keep.shape[0]), dtype=M.dtype)
        T = T.at[keep, jnp.arange(keep.shape[0])].set(1.0).at[massless].set(-jnp.linalg.solve(Kss, Ksm))
    else:
        T = None
    Mr, Kr = (M, K) if T is None else (T.T @ M @ T, T.T @ K @ T)
    L = jnp.linalg.cholesky(0.5 * (Mr + Mr.T))
    Linv_K = jax.scipy.linalg.solve_triangular(L, Kr, lower=True)
    A = jax.scipy.linalg.solve_triangular(L, Linv_K.T, lower=True).T  # L^{-1} K L^{-T}
    if general:
        lam_c, Y_c = jnp.linalg.eig(A)
        order = jnp.argsort(lam_c.real)[:n]
        lam_c, Y_c = lam_c[order], Y_c[:, order]
        # rotate each complex eigenvector so its largest entry is real before taking the real part
        big = jnp.take_along_axis(Y_c, jnp.argmax(jnp.abs(Y_c), axis=0)[None], axis=0)
        lam, Y = lam_c.real, (Y_c * (jnp.abs(big) / big)).real
    else:
        lam, Y = jnp.linalg.eigh(0.5 * (A + A.T))
        lam, Y = lam[:n], Y[:, :n]
    phi = jax.scipy.linalg.solve_triangular(L.T, Y, lower=False)
    if T is not None:
        phi = T @ phi
    phi = phi / _mode_scale(phi, J)[None, :]
    m = jnp.einsum("in,ij,jn->n", phi, M, phi)
    k = jnp.einsum("in,ij,jn->n", phi, K, phi)
    if not general:
        # the Rayleigh quotient of each mode on the unscaled M, K: stationary at an eigenvector, so
        # its error is second order in the eigenvector's, where eigh's own eigenvalue carries
        # round-off of the whole spectrum of L^-1 K L^-T (eps * lam_max: a near-massless rod's modes
        # shifted a stiff body's by 1.4e-5 relative, and split a round rod's degenerate pair)
        # phi held fixed: the derivative is then eigh's eigenvalue derivative phi^T (dK - lam dM) phi / m
        # (no eigenvector derivative, which is singular within a degenerate pair)
        ps = jax.lax.stop_gradient(phi)
        lam = jnp.einsum("in,ij,jn->n", ps, K, ps) / jnp.einsum("in,ij,jn->n", ps, M, ps)
    Cm = phi.T @ C @ phi
    c = jnp.diag(Cm)
    zeta = c / (2.0 * jnp.sqrt(jnp.abs(k) * m))
    # coupling in mass-normalised modes (entries in 1/s, diagonal 2 zeta omega), relative to the
    # largest modal damping rate: scale-free, and round-off on undamped modes stays at round-off
    D = jnp.abs(Cm) / jnp.sqrt(jnp.outer(m, m))
    dmax = jnp.max(jnp.diag(D))
    ratio = D * (1.0 - jnp.eye(n)) / jnp.where(dmax > 0, dmax, 1.0)
    omega = jnp.sign(lam) * jnp.sqrt(jnp.abs(lam))
    disp = (J @ phi).T.reshape(n, -1, 3)
    return {"omega": omega, "lam": lam, "phi": phi.T, "disp": disp, "m": m, "k": k, "c": c, "zeta": zeta,
            "coupling": jnp.max(ratio) if n > 1 else jnp.zeros((), dtype=M.dtype)}
