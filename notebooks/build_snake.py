"""Write ``snake.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_snake.py`` after editing the cells below; the notebook is executed by
``tests/test_notebooks_snake.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# The snake robot Aiko on set-valued contact (after Transeth, Leine, Glocker, Pettersen 2008)

Rigid links on cardan joints, two contact spheres per link, Signorini contact and spatial
anisotropic Coulomb friction written as prox equations, Moreau midpoint time stepping, PD joint
controllers tracking a serpenoid gait (`jaxrod.scenes.snake`, `jaxrod.system.contact`,
`jaxrod.integrate.moreau`).

This notebook: contact basics on one ball (impact with restitution, against Newton's law); the
three gaits of the paper from short runs, next to the 15 s paths recorded by
`benchmarks/snake_paper.py`; why the PD loop is taken linear-implicitly at 1 ms; and the gait
optimiser's result (`benchmarks/snake_gait_opt.py`, gradients through the run). Runs are short
and reuse the tests' compiled programs (11 links, dt = 1 ms), so most of the time is compilation."""
    ),
    new_code_cell(
        """%matplotlib inline
import json
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import jaxrod
from jaxrod.integrate.moreau import MoreauOptions, StabilityWarning, pd_stable_dt, pd_step_matrix
from jaxrod.scenes.snake import AIKO, SerpenoidGait, snake_model, snake_sidewinding
from jaxrod.system import MultibodySystem, RigidBody
from jaxrod.system.contact import ContactSystem, SphereContact

G = 9.81
RESULTS = Path(jaxrod.__file__).resolve().parents[1] / "benchmarks" / "results"
cpu0 = time.process_time()"""
    ),
    new_markdown_cell(
        """## Contact basics: a ball dropped on the ground

A 0.1 m ball dropped from a 0.2 m gap with restitution `e = 0.5`: contact at `sqrt(2 h / g)`,
rebound to `e^2 h` (Newton's impact law in the prox form; the Moreau scheme's error is O(dt)).
With `e = 0` (the paper's) the ball stops at impact."""
    ),
    new_code_cell(
        """def ball(e, h=0.2, r=0.1, m=2.0):
    body = RigidBody("ball", m, np.full(3, 0.4 * m * r * r), position=(0.0, 0.0, r + h))
    return ContactSystem(MultibodySystem([body], gravity=(0, 0, -G)),
                         SphereContact("ball", (0.0, 0.0, r + h), r, mu=0.3, restitution=e),
                         options=MoreauOptions(rtol=1e-12))

dt, h = 1e-3, 0.2
fig, ax = plt.subplots(figsize=(6, 3))
for e in (0.0, 0.5):
    tr = jaxrod.simulate(ball(e), dt=dt, n_steps=600)
    gap = np.asarray(tr.gaps[:, 0])
    k = int(np.argmax(np.asarray(tr.active[:, 0])))
    apex = gap[k + 5:].max()
    print(f"e = {e}: contact at {k * dt:.3f} s (sqrt(2h/g) = {np.sqrt(2 * h / G):.3f} s), "
          f"rebound apex {apex:.4f} m (e^2 h = {e * e * h:.4f} m)")
    assert abs(k * dt - np.sqrt(2 * h / G)) <= 1.5 * dt
    if e > 0:
        assert abs(apex - e * e * h) < 0.03 * e * e * h
    else:  # stops at impact
        assert np.max(np.abs(np.asarray(tr.v[k:, 0]))) < 1e-12
    ax.plot(np.asarray(tr.times), gap, label=f"e = {e}")
ax.set_xlabel("t [s]"); ax.set_ylabel("gap [m]"); ax.legend(); plt.show()"""
    ),
    new_markdown_cell(
        """## The PD loop is stiff: linear-implicit PD

The paper's pitch gain (800 N m/rad) on a link's inertia makes `omega_n` of order 1300-2600 rad/s.
The Moreau step takes the PD torques explicitly by default (the paper's scheme), so it needs `dt`
below about 0.56 ms on Aiko (`CardanPD.stable_dt`, on half the smallest link inertia);
`jaxrod.simulate` warns above it. `implicit_pd=True` linearises the PD torques in the end velocity
and position of the step: on a linear loop, the amplification per step below."""
    ),
    new_code_cell(
        """m_eff = AIKO["inertia_transverse"] / 2  # two free links on one joint: half a link's inertia
print("explicit limit on two free links:", f"{pd_stable_dt(m_eff, 800.0, 0.2) * 1e3:.3f} ms")
for dt in (0.25e-3, 1e-3, 2e-3, 5e-3):
    rho = [np.max(np.abs(np.linalg.eigvals(pd_step_matrix(dt, m_eff, 800.0, 0.2, imp)))) for imp in (False, True)]
    print(f"dt = {dt * 1e3:4.2f} ms: spectral radius explicit {rho[0]:6.3f}, linear-implicit {rho[1]:.3f}")
assert np.max(np.abs(np.linalg.eigvals(pd_step_matrix(2e-3, m_eff, 800.0, 0.2, False)))) > 1
assert np.max(np.abs(np.linalg.eigvals(pd_step_matrix(5e-3, m_eff, 800.0, 0.2, True)))) < 1
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    snake_model(11).check_dt(1e-3)
print(caught[0].message)
assert issubclass(caught[0].category, StabilityWarning)"""
    ),
    new_markdown_cell(
        """## Three gaits, 0.5 s each (linear-implicit PD, dt = 1 ms)

Lateral undulation on orthotropic friction (0.1 along, 0.5 across) moves forward (toward the head,
+x); on isotropic 0.2 with the experiment's 40 deg amplitude it drifts slowly backward;
sidewinding (soft start, straight start along y) lifts most of the body and moves sideways along
-x. Link 6 is the paper's measured link."""
    ),
    new_code_cell(
        """runs = {
    "LU ortho 0.1/0.5": snake_model(11, mu_along=0.1, mu_across=0.5, implicit_pd=True),
    "LU iso 0.2, 40 deg": snake_model(11, mu_along=0.2, mu_across=0.2,
                                      gait=SerpenoidGait.lateral_undulation(40.0), implicit_pd=True),
    "sidewinding 0.2": snake_sidewinding(implicit_pd=True).model,
}
short = {}
for name, model in runs.items():
    tr = jaxrod.simulate(model, dt=1e-3, n_steps=500, save_every=10)
    com = np.asarray(tr.positions).mean(1)
    short[name] = dict(link6=np.asarray(tr.positions[:, 5]), com=com[-1] - com[0],
                       touching=np.asarray(tr.active[-20:]).sum(1).mean())
    print(f"{name:20s} centre of mass dx = {short[name]['com'][0]:+.4f} m, dy = {short[name]['com'][1]:+.4f} m, "
          f"spheres touching at the end {short[name]['touching']:.1f} of 22")
assert short["LU ortho 0.1/0.5"]["com"][0] > 0.03          # forward
assert -0.02 < short["LU iso 0.2, 40 deg"]["com"][0] < 0.0   # slowly backward
assert short["sidewinding 0.2"]["com"][0] < -0.005           # sideways, along -x
assert short["sidewinding 0.2"]["touching"] <= 6             # most of the body lifted

fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
for ax, (name, r) in zip(axes, short.items()):
    ax.plot(r["link6"][:, 0], r["link6"][:, 1], "-")
    ax.set_title(name + ", 0.5 s"); ax.set_xlabel("x [m]"); ax.set_ylabel("y [m]"); ax.set_aspect("equal", "datalim")
plt.tight_layout(); plt.show()"""
    ),
    new_markdown_cell(
        """## The 15 s paths (recorded by `benchmarks/snake_paper.py`, dt = 0.5 ms, explicit PD)

The paper's figures survive only as tick labels: forward along +x on orthotropic friction (Fig. 6's
axis reaches 0.5 m), slowly backward on isotropic 0.2 (0.1-0.2 m), sidewinding almost straight
along x (Fig. 10's axis spans 1.4 m)."""
    ),
    new_code_cell(
        """paper = json.loads((RESULTS / "snake_paper.json").read_text())
fig, ax = plt.subplots(figsize=(7, 4))
end = {}
for name, r in paper["runs"].items():
    p6 = np.asarray(r["link6"])
    end[name] = p6[-1] - p6[0]
    ax.plot(p6[:, 0] - p6[0, 0], p6[:, 1] - p6[0, 1], label=name)
    print(f"{name:28s} link 6 after {paper['duration']:g} s: dx = {end[name][0]:+.3f} m, dy = {end[name][1]:+.3f} m")
ax.set_xlabel("x [m]"); ax.set_ylabel("y [m]"); ax.set_aspect("equal", "datalim"); ax.legend(fontsize=7); plt.show()
assert end["LU-ortho (0.1/0.5, 30 deg)"][0] > 0.5
assert -0.3 < end["LU-iso (0.2, 40 deg)"][0] < -0.05
assert -1.6 < end["sidewinding (0.2)"][0] < -1.0 and abs(end["sidewinding (0.2)"][1]) < 0.1"""
    ),
    new_markdown_cell(
        """## Gradients and a gait optimiser (`benchmarks/snake_gait_opt.py`)

Adam on `(A_h, delta_h, omega_h)` of lateral undulation on orthotropic friction, maximising the
centre of mass's +x travel in 1 s, with `jax.value_and_grad` through 2000 Moreau steps (each contact
solve differentiated implicitly at its fixed point; `compliance = 1e-2` makes the contact solution
unique so that the derivative exists). The optimum is re-simulated in the rigid (paper's) model.
The run takes minutes, so this cell reads its recorded result; `tests/test_snake.py` checks a
gradient of the travelled distance against central differences."""
    ),
    new_code_cell(
        """opt = json.loads((RESULTS / "snake_gait_opt.json").read_text())
it = [c["iteration"] for c in opt["curve"]]
travel = [c["travel_m"] for c in opt["curve"]]
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(it, travel, "o-"); ax.set_xlabel("Adam iteration"); ax.set_ylabel("travel in 1 s [m] (compliant model)")
plt.show()
first, best = opt["curve"][0], opt["best"]
print("gait (A_h, delta_h, omega_h) [deg, deg, deg/s]: before", np.degrees(first["theta"]).round(2),
      "after", np.degrees(best["theta"]).round(2))
rigid = opt["checks_rigid"]
print("rigid model, 1 s: {:.4f} -> {:.4f} m; 4.5 s: {:.4f} -> {:.4f} m".format(
    rigid["initial 1 s"], rigid["optimised 1 s"], rigid["initial 4.5 s"], rigid["optimised 4.5 s"]))
assert best["travel_m"] > 1.2 * first["travel_m"]
assert rigid["optimised 1 s"] > 1.2 * rigid["initial 1 s"] and rigid["optimised 4.5 s"] > 1.2 * rigid["initial 4.5 s"]
print(f"notebook CPU {time.process_time() - cpu0:.1f} s")"""
    ),
]


def build(path=None):
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path) if path else Path(__file__).with_name("snake.ipynb")
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print(build())
