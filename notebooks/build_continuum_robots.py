"""Write ``continuum_robots.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_continuum_robots.py`` after editing the cells below; the notebook is
executed by ``tests/test_notebooks_continuum_robots.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# Actuated continuum robots: tendons, pressure chambers, measured data

Till, Aloi & Rucker (2019) drive Cosserat rods with tendons and fluid chambers; TMTDyn (Sadati et
al. 2020) validates a pneumatic STIFF-FLOP module against recordings. In jaxrod an actuator is a
small `equinox` module (routing, offset, area, a tension/pressure/volume/moles control whose values
are array leaves) that the rod models take as a field: the same `Tendon` runs on the Cosserat
shooting model, the discrete elastic rod (DER) and the piecewise-constant-strain rod (PCS), and
every result is differentiable.

This notebook: one tendon on the three models against the closed-form arc; the soft finger of Till
et al. filled with water (volume control) and with air (moles control) against the closed forms and
the paper's numbers; the STIFF-FLOP module with its fitted parameters on a window of the
measured data that the fit did not see. Problems are small: most of the time is XLA
compilation. The dynamic robots (tendon object transfer, the fluidic finger's limit cycle, the
continuum Stewart-Gough platform) are scenes: `jaxrod simulate tendon-object-transfer --plot f.png`,
`fluidic-finger`, `stewart-gough`."""
    ),
    new_code_cell(
        """%matplotlib inline
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxrod
from jaxrod.models.cosserat import (Chamber, CosseratModel, CosseratRod, StraightRouting, Tendon,
                                    solve_static_cosserat)
from jaxrod.models.der import DERModel, DERRod
from jaxrod.models.pcs import PCSModel, PCSRod"""
    ),
    new_markdown_cell(
        """## 1. One tendon, three rod models

A steel rod (L = 0.2 m, radius 1 mm) with one straight tendon at r = 5 mm from its axis, pulled
with tension tau. Cutting rod and tendon anywhere shows that the backbone carries the force
`-tau t` and the moment `tau r`, so the rod bends into a circular arc of curvature
`tau r / EI` (and shortens by `tau / EA`), at any load. The Cosserat model integrates the tendon's
distributed loads along the shooting (Till's implicit `v_s, u_s` form); DER and PCS take the
cable's loads as the gradient of `tau * l(q)`, the work of a frictionless cable of length `l`.
PCS is exact for a straight tendon (constant strain); DER converges at second order in the edge
length; Cosserat at the order of its integrator (RK4)."""
    ),
    new_code_cell(
        """L, RADIUS, OFFSET, DISK = 0.2, 1e-3, 5e-3, 0.01
tendon = (Tendon(StraightRouting((OFFSET, 0.0)), tension=0.0),)
cos = CosseratModel(CosseratRod.circular(L, RADIUS, youngs_modulus=207e9, density=8000.0),
                    n_points=9, tendons=tendon, section_radius=DISK)
der = DERModel(DERRod.cantilever(13, L, radius=RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3),
               clamped_edges=(0,), section_radius=DISK, tendons=tendon)
pcs = PCSModel(PCSRod.circular(L, 4, RADIUS, youngs_modulus=207e9, density=8000.0, poisson_ratio=0.3),
               section_radius=DISK, tendons=tendon)
tension = lambda m, tau: eqx.tree_at(lambda m: m.tendons[0].tension, m, tau)


@jax.jit
def shapes(tau):
    \"\"\"Centrelines (Cosserat in its frame: axis z, bending toward +x; DER/PCS: axis x, toward +y).\"\"\"
    y = solve_static_cosserat(tension(cos, tau))[0].y
    qd = jaxrod.solve_static(tension(der, tau))[0].q
    mp = tension(pcs, tau)
    qp = jaxrod.solve_static(mp)[0].q
    return y[:, :3], qd[:, :3], mp.segment_end_poses(qp)[1]


EI, EA = float(cos.rod.K_bt[1]), float(cos.rod.K_se[2])
fig, ax = plt.subplots(figsize=(6, 4))
for tau in (10.0, 40.0):
    t0 = time.perf_counter()
    yc, xd, xp = (np.asarray(a) for a in shapes(jnp.asarray(tau)))
    u2, v3 = tau * OFFSET / EI, 1.0 - tau / EA
    s = np.linspace(0, L, 100)
    arc = np.stack([v3 * (1 - np.cos(u2 * s)) / u2, v3 * np.sin(u2 * s) / u2], 1)  # (sideways, along)
    tip = arc[-1]
    err = {"Cosserat": np.hypot(yc[-1, 0] - tip[0], yc[-1, 2] - tip[1]),
           "DER": np.hypot(xd[-1, 1] - tip[0], xd[-1, 0] - tip[1]),
           "PCS": np.hypot(xp[-1, 1] - tip[0], xp[-1, 0] - tip[1])}
    print(f"tau = {tau:4.0f} N: tip deflection {1e3 * tip[0]:.2f} mm; tip error vs the arc: "
          + ", ".join(f"{k} {v / tip[0]:.1e}" for k, v in err.items())
          + f" of the deflection ({time.perf_counter() - t0:.1f} s incl. compile on the first call)")
    ax.plot(1e3 * arc[:, 1], 1e3 * arc[:, 0], "k-", lw=3, alpha=0.3, label="closed-form arc" if tau == 10 else None)
    ax.plot(1e3 * yc[:, 2], 1e3 * yc[:, 0], "o", mfc="none", label=f"Cosserat, {tau:.0f} N")
    ax.plot(1e3 * xd[:, 0], 1e3 * xd[:, 1], ".-", label=f"DER, {tau:.0f} N")
    ax.plot(1e3 * xp[:, 0], 1e3 * xp[:, 1], "s", label=f"PCS segment ends, {tau:.0f} N")
ax.set_xlabel("along the base axis [mm]"); ax.set_ylabel("sideways [mm]"); ax.set_aspect("equal")
ax.legend(fontsize=7); ax.set_title("one straight tendon at 5 mm, three models");"""
    ),
    new_markdown_cell(
        """## 2. A soft finger filled with water, then with air

Till et al.'s finger (L = 0.1 m, outer radius 15 mm, one chamber of radius 2.5 mm). Two of the
paper's printed values are typos (spec 7.3): E = 20 kPa (printed 20 MPa, which could not bend it)
and the chamber 10.29 mm from the centroid of the hollow section. With the pressure P the rod's
resultants are the cap force `P A` and moment `P A d`: uniform stretch `v3 = 1 + P A / EA` and
curvature `u2 = P A d / EI`, chamber volume `V = A L (v3 + d u2)`. Water: the volume is the
control and P an extra shooting unknown; air: the amount of gas n is the control and P solves
`(P + P_atm) V = n R T`. The paper: mean elongation strain 0.12 at V = 2.65e-6 m^3; the air case
at n = 2e-4 mol "equivalent at steady state"."""
    ),
    new_code_cell(
        """from jaxrod.scenes.fluidic import FINGER, finger_rod

rod, d, area = finger_rod()
EI, EA = float(rod.K_bt[1]), float(rod.K_se[2])
RT, PATM = 8.314 * FINGER["temperature_k"], FINGER["p_atm_pa"]


def finger(**control):
    return CosseratModel(rod, n_points=10, chambers=(Chamber((-d, 0.0), area, **control),),
                         section_radius=FINGER["outer_radius_m"])


for label, m in (("water", finger(volume=FINGER["volume_m3"])), ("air", finger(moles=FINGER["moles_mol"]))):
    st, _ = solve_static_cosserat(m)
    P = float(m.chamber_pressures(st.base_loads, 0.0)[0])
    w = np.asarray(st.w)  # columns 6:9 the strains v, 9:12 the curvatures u
    v3, u2 = w[:, 8].mean(), w[:, 10].mean()
    # closed forms (derived above, not by the model)
    if label == "water":
        P_ref = (FINGER["volume_m3"] / (area * FINGER["length_m"]) - 1) / (area / EA + area * d**2 / EI)
    else:  # (P + P_atm) A L (1 + P k) = n R T with k = A / EA + A d^2 / EI: a quadratic in P
        k, V0 = area / EA + area * d**2 / EI, area * FINGER["length_m"]
        P_ref = max(np.roots([V0 * k, V0 * (1 + PATM * k), V0 * PATM - FINGER["moles_mol"] * RT]))
    print(f"{label:5s}: P = {P / 1e3:6.2f} kPa (closed form {P_ref / 1e3:6.2f}), mean elongation strain "
          f"{v3 - 1:.4f} (closed form {P * area / EA:.4f}; paper 0.12), curvature {u2:.2f} 1/m "
          f"(closed form {P * area * d / EI:.2f}), bend {np.degrees(u2 * FINGER['length_m']):.0f} deg")"""
    ),
    new_markdown_cell(
        """## 3. STIFF-FLOP on data the fit did not see

The pneumatic module of TMTDyn's first validation: PCS rod with Table 2's section, six chambers in
three pairs driven by the *measured* pressures (smoothed as TMTDyn does), hanging, the tip force
sensor as a rigid body. Young's modulus and the viscosity were fitted (`jaxrod calibrate
stiff-flop`) on NoLoad 0-29 s only; here the module runs NoLoad 29-36 s, which the fit did not see
(pressures up to 0.74 bar on pair 2, then release and pair 1). TMTDyn's metric is the mean tip
distance, also in % of the 64.5 mm tip length; the baseline is a tip that never moves. The data
are read from `shared/data/stiff-flop` (BSD-4-Clause, Copyright (c) 2019 S.M.Hadi Sadati); the cell
says so and stops if they are not there."""
    ),
    new_code_cell(
        """from jaxrod.datasets import stiff_flop as sf
from jaxrod.scenes import stiff_flop as sm

if sf.find_data_dir() is None:
    print("STIFF-FLOP data not found (shared/data/stiff-flop): skipping this section")
else:
    rec = sf.read_recording("NoLoad")
    times, p, _ = sm.recording_inputs(rec)
    t0, steps = 29.0, 140
    values = {k: jnp.asarray(v) for k, v in sm.FITTED.items()}
    tip, valid = jax.jit(lambda v: sm.predict_tip(v, times, p, None, t0=t0, n_steps=steps, n_segments=3))(values)
    tip = np.asarray(tip)
    rows = rec.window(t0, t0 + steps * sf.SAMPLE_DT)[: steps + 1]
    err, base = sf.tip_error(tip, rec.tip[rows])[0], sf.constant_shape_error(rec, rows)[0]
    print(f"held-out NoLoad {t0:.0f}-{t0 + steps * sf.SAMPLE_DT:.0f} s (all steps converged: {bool(np.all(valid))}): "
          f"model {1e3 * err:.2f} mm = {100 * err / sf.TIP_LENGTH:.1f} %, constant shape {1e3 * base:.2f} mm "
          f"= {100 * base / sf.TIP_LENGTH:.1f} %")
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.5))
    tt = rec.times[rows]
    for i, c in enumerate("xyz"):
        axs[0].plot(tt, 1e3 * rec.tip[rows, i], color=f"C{i}", label=f"measured {c}")
        axs[0].plot(tt, 1e3 * tip[:, i], "--", color=f"C{i}", label=f"simulated {c}")
    axs[0].set_xlabel("t [s]"); axs[0].set_ylabel("tip [mm]"); axs[0].legend(fontsize=7, ncol=2)
    axs[1].plot(1e3 * rec.tip[rows, 0], 1e3 * rec.tip[rows, 1], "k-", label="measured")
    axs[1].plot(1e3 * tip[:, 0], 1e3 * tip[:, 1], "r--", label="simulated (fitted E, viscosity)")
    axs[1].set_aspect("equal"); axs[1].set_xlabel("x [mm]"); axs[1].set_ylabel("y [mm]")
    axs[1].legend(fontsize=7); axs[1].set_title("tip path, top view");"""
    ),
]


def main():
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path = Path(__file__).with_name("continuum_robots.ipynb")
    nbformat.write(nb, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
