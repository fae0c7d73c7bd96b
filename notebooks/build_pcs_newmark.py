"""Write ``pcs_newmark.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_pcs_newmark.py`` after editing the cells below; the notebook is
executed by ``tests/test_notebooks.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# PCS rods with implicit Newmark-beta (Ishigaki, Ayusawa & Yamamoto 2024)

The piecewise-constant-strain (PCS) model splits a rod into a few segments of constant strain
$\\xi_i = [\\kappa_i; \\varepsilon_i]$ (curvature/torsion and stretch/shear, angular part first).
The generalised coordinates are the strains, the equation of motion
$M(q)\\ddot q + b(q, \\dot q) + K (q - q_0) + D\\dot q = 0$ comes from a recursive Newton-Euler
inverse dynamics, and jaxrod integrates it with the implicit Newmark-beta scheme (average
acceleration) through the same Newton solver as every other model. The Jacobians of the
Newmark residual come from `jax.jacfwd` through the recursion (the paper derives them by hand with
the CMTM; numerical differences were not good enough for it to converge).

This notebook runs the paper's silicone cantilever (0.9 m, 3 segments, E = 110 kPa) sagging under
gravity, compares Newmark at 4 ms with explicit Euler at 0.4 ms, checks a one-segment cantilever
against the constant-curvature beam formula, and differentiates a trajectory loss."""
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
from jaxrod.models.pcs import PCSModel, PCSRod
from jaxrod.models.pcs.explicit import simulate_explicit
from jaxrod.scenes import get_scene

sc = get_scene("pcs-silicone")
model = sc.model
print(sc.description)
print("generalised coordinates:", model.initial_state().q.shape[0], "(3 segments x 6 strain modes)")"""
    ),
    new_markdown_cell("""## 1. One second of sagging: implicit Newmark (4 ms) vs explicit Euler (0.4 ms)"""),
    new_code_cell(
        # tests/test_pcs_dynamics.py runs this scene with this solver: the notebook's kernel finds
        # the compiled time loop in the tests' cache (about 6 s of compilation less per test run)
        """solver = jaxrod.NewtonSolver(rtol=1e-9, atol=1e-9, max_steps=30)
t0 = time.perf_counter()
traj = jaxrod.simulate(model, dt=0.004, n_steps=250, scheme=jaxrod.NewmarkBeta(), solver=solver, save_every=5)
jax.block_until_ready(traj.positions)
print(f"Newmark: 250 steps, {float(np.mean(traj.stats.iterations)):.2f} Newton its/step, "
      f"{time.perf_counter() - t0:.1f} s including compilation")

t0 = time.perf_counter()
q_exp, _ = simulate_explicit(model, dt=4e-4, n_steps=2500, save_every=50)
jax.block_until_ready(q_exp)
print(f"explicit Euler: 2500 steps, {time.perf_counter() - t0:.1f} s including compilation")

t_imp = np.asarray(traj.times)
t_exp = np.arange(q_exp.shape[0]) * 4e-4 * 50
fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
ax[0].plot(t_imp, np.asarray(traj.q)[:, 1], label="Newmark 4 ms")
ax[0].plot(t_exp, np.asarray(q_exp)[:, 1], "--", label="explicit 0.4 ms")
ax[0].set_xlabel("t [s]"); ax[0].set_ylabel("root-segment bending $\\\\kappa_y$ [1/m]"); ax[0].legend()
for k in range(0, traj.positions.shape[0], 10):
    p = np.asarray(traj.positions[k])
    ax[1].plot(p[:, 0], p[:, 2], color=plt.cm.viridis(k / traj.positions.shape[0]))
ax[1].set_aspect("equal"); ax[1].set_xlabel("x [m]"); ax[1].set_ylabel("z [m]"); ax[1].set_title("centreline")
plt.show()
diff = np.max(np.abs(np.interp(t_exp, t_imp, np.asarray(traj.q)[:, 1]) - np.asarray(q_exp)[:, 1]))
print(f"max difference of the root bending strain: {diff:.3e} 1/m (range {np.ptp(np.asarray(q_exp)[:, 1]):.3f})")"""
    ),
    new_markdown_cell(
        """## 2. One segment against beam theory

A single constant-curvature segment under a tip load $P$ minimises
$\\tfrac12 EI\\kappa^2 L - P\\,\\kappa L^2/2$, so $\\kappa = PL/(2EI)$ and the tip deflection is
$PL^3/(4EI)$ (plus the shear compliance $PL/(GA)$): 25 % less than Euler-Bernoulli's $PL^3/(3EI)$.
With $n$ segments the error falls as $1/(4n^2)$."""
    ),
    new_code_cell(
        """E, r, L = 1e7, 0.01, 1.0
EI, GA = E * np.pi * r**4 / 4, E / 3 * np.pi * r**2
P = 0.005 * EI / L**2
for n in (1, 2):
    m = PCSModel(PCSRod.circular(L, n, r, youngs_modulus=E, density=1000.0), tip_wrench=(0, 0, 0, 0, 0, -P))
    st, _ = jaxrod.solve_static(m)
    d = -float(m.observe(st.q, st.v, None)["positions"][-1, 2])
    pred = P * L**3 / (3 * EI) * (1 - 1 / (4 * n**2)) + P * L / GA
    print(f"n = {n}: deflection {d:.6e} m, PCS theory {pred:.6e} m, Euler-Bernoulli {P * L**3 / (3 * EI):.6e} m")"""
    ),
    new_markdown_cell(
        """## 3. Gradient of a trajectory loss with respect to Young's modulus

Forward mode through 250 Newmark steps (each Newton solve differentiated implicitly), checked
against a central finite difference. The loss reuses the compiled 250-step program of section 1
(only array values change)."""
    ),
    new_code_cell(
        """def loss(E_):
    E_ = jnp.asarray(E_, dtype=float)  # an array leaf: new values reuse the compiled program
    m = eqx.tree_at(lambda m: (m.rod.youngs_modulus, m.rod.shear_modulus), model, (E_, E_ / 3.0))
    # fallback=False: under jax.jvp the backward-Euler retry would be compiled into every step
    tr = jaxrod.simulate(m, dt=0.004, n_steps=250, scheme=jaxrod.NewmarkBeta(), solver=solver, save_every=5,
                         fallback=False)
    return jnp.mean(tr.tip[:, 2] ** 2)

E0 = 110e3
value, dldE = jax.jvp(loss, (E0,), (1.0,))
h = 1e-5 * E0
fd = (loss(E0 + h) - loss(E0 - h)) / (2 * h)
print(f"loss {float(value):.6e} m^2, d loss/dE: jvp {float(dldE):.8e}, central difference {float(fd):.8e}, "
      f"rel. diff {abs(float(dldE) / float(fd) - 1):.1e}")
assert abs(float(dldE) / float(fd) - 1) < 1e-4"""
    ),
]


def build(path=None):
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path) if path else Path(__file__).with_name("pcs_newmark.ipynb")
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print(build())
