"""Write ``cosserat_shooting.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_cosserat_shooting.py`` after editing the cells below; the notebook is
executed by ``tests/test_notebooks.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# Cosserat rods by shooting: Till, Aloi & Rucker (2019)

This notebook walks through jaxrod's Cosserat/Kirchhoff *shooting* model, a JAX port of
J. Till, V. Aloi and C. Rucker, "Real-Time Dynamics of Soft and Continuum Robots based on
Cosserat-Rod Models" (IJRR 2019).

**Implicit in time.** The Cosserat rod is a PDE system in arc length $s$ and time $t$: the state
$y(s, t) = [p, h, n, m, q, \\omega]$ (position, orientation quaternion, internal force and moment,
linear and angular velocity) and the strains $v, u$ have derivatives in both variables. Every time
derivative is replaced by an implicit difference formula (Till et al. eq. 5)

$$ y_t \\approx c_0\\, y + y^h, \\qquad y^h = c_1 y_{i-1} + c_2 y_{i-2} + d_1 (y_t)_{i-1}, $$

where only $c_0 y$ involves the unknown current step and the *history* $y^h$ is known from
past steps (backward Euler: $c_0 = 1/\\delta t$; BDF2: $c_0 = 1.5/\\delta t$; the BDF-$\\alpha$ family
interpolates between BDF2 ($\\alpha = 0$) and the trapezoid rule ($\\alpha = -1/2$)).

**Shooting in space.** With $y_t$ eliminated, each time step is an *ordinary* differential equation
in $s$: a two-point boundary-value problem, clamped pose at the base and a force/moment balance at
the free tip. It is solved by shooting: guess the six unknown base loads $(n(0), m(0))$,
integrate the arc-length ODE to the tip (here explicit Euler on a 40-point grid), and drive the six
tip residuals to zero with Newton's method. `jaxrod` runs the whole time loop as one compiled
`lax.scan`, and differentiates through every shooting solve by the implicit function theorem.

**Statics** is the limit $\\delta t \\to \\infty$: $c_0 \\to 0$ and the history vanishes, leaving
the classical static Cosserat equations; `jaxrod.solve_static` solves exactly that with the same
shooting machinery.

Grids are kept small so that the notebook runs in about a minute and a half on a CPU; most of
that time is XLA compilation. Each new model structure (grid size, integrator, Kirchhoff or not)
or run length compiles once; new parameter values and new difference-formula coefficients reuse
the compiled program."""
    ),
    new_code_cell(
        """%matplotlib inline
import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxrod  # turns on float64
from jaxrod.scenes import get_scene
from jaxrod.integrate.schemes import DifferenceFormula as D

print("jaxrod", jaxrod.__version__, "| jax", jax.__version__, "| devices:", jax.devices())"""
    ),
    new_markdown_cell(
        """## 1. The benchmark and its static equilibrium

Till et al.'s numerical benchmark (sec. 3): a spring-steel cantilever (E = 207 GPa,
G = 79 GPa, radius 1 mm, L = 0.4 m, rho = 8000 kg/m^3) clamped at the origin along $+z$, under
gravity along $-x$ and a 0.5 N tip force along $-x$. The rod starts at rest in static equilibrium
and the tip load is released at $t = 0$. The paper uses 150 grid points; we use 40 with the
explicit Euler integrator to keep compilation short."""
    ),
    new_code_cell(
        """sc = get_scene("till-benchmark", n_points=40, integrator="euler")
rod = sc.model.rod
print(sc.description)
EI, rhoA, L = float(rod.bending_stiffness), float(rod.mass_per_length), 0.4
print(f"EI = {EI:.5f} N m^2, rho A = {rhoA:.5f} kg/m, first bending mode {sc.reference['first_mode_hz']:.3f} Hz")

state0, res = jaxrod.solve_static(sc.model)
tip0 = np.asarray(state0.positions[-1])
print(f"static shooting solve: {int(res.iterations)} Newton iterations, converged: {bool(res.converged)}")
print("static tip position [m]:", np.round(tip0, 6))"""
    ),
    new_markdown_cell(
        """Linear (Euler-Bernoulli) theory for a cantilever gives a tip deflection
$P L^3 / (3 EI)$ under the tip load plus $\\rho A g L^4 / (8 EI)$ of self-weight sag. The tip
moves by about 16% of the rod length, so geometric nonlinearity (the rod shortens in $z$ and
the load's lever arm shrinks) makes the true deflection slightly smaller. The 40-point Euler
grid adds an O(ds) discretisation error of its own, small here: a 150-point RK4 grid moves the
tip by only 0.15 mm."""
    ),
    new_code_cell(
        """P, g = 0.5, 9.81
linear = P * L**3 / (3 * EI) + rhoA * g * L**4 / (8 * EI)
shooting = -tip0[0]
print(f"tip deflection: shooting {1e3 * shooting:.2f} mm, linear theory {1e3 * linear:.2f} mm "
      f"({1e3 * P * L**3 / (3 * EI):.2f} mm tip load + {1e3 * rhoA * g * L**4 / (8 * EI):.2f} mm sag)")
print(f"relative difference {100 * (shooting / linear - 1):+.2f}%, deflection / L = {shooting / L:.3f}, "
      f"axial shortening {1e3 * (L - tip0[2]):.2f} mm")"""
    ),
    new_markdown_cell(
        """## 2. Release the load: four time schemes, one compiled program

`DifferenceFormula` keeps its coefficients as array leaves, so backward Euler, BDF2, BDF-$\\alpha$
and the trapezoid rule all run through the same compiled program: only the first simulation
compiles. Each run is 200 steps of 5 ms (1 s, about 9 periods of the 8.9 Hz first mode),
starting from the static state computed above."""
    ),
    new_code_cell(
        """schemes = {
    "backward Euler": D.backward_euler(),
    "BDF2": D.bdf2(),
    "BDF-alpha -0.2": D.bdf_alpha(-0.2),
    "trapezoid": D.trapezoid(),
}
trajs = {}
for name, scheme in schemes.items():
    trajs[name] = jaxrod.simulate(sc.model, dt=0.005, n_steps=200, scheme=scheme, state0=state0)
    its = np.asarray(trajs[name].stats.iterations)
    print(f"{name:15s} Newton iterations/step: mean {its.mean():.2f}, max {its.max()}; "
          f"final tip x = {1e3 * float(trajs[name].tip[-1, 0]):+7.2f} mm")

fig, ax = plt.subplots(figsize=(8, 4))
for name, traj in trajs.items():
    ax.plot(np.asarray(traj.times), 1e3 * np.asarray(traj.tip[:, 0]), label=name, lw=1.2)
ax.set_xlabel("t [s]")
ax.set_ylabel("tip x displacement [mm]")
ax.set_title("Till benchmark: 0.5 N tip load released at t = 0 (dt = 5 ms)")
ax.legend()
plt.show()"""
    ),
    new_markdown_cell(
        """## 3. Numerical damping

The benchmark has no physical damping, so any loss of the total energy (Till et al. sec. 3)

$$ E = \\int_0^L \\tfrac12 (u-u^*)^T K_{bt} (u-u^*) + \\tfrac12 (v-v^*)^T K_{se} (v-v^*)
      + \\tfrac12 \\rho A\\, q^T q + \\tfrac12 \\omega^T \\rho J \\omega - \\rho A\\, g^T p \\; ds $$

is numerical. The energy includes gravity, so it decays towards the energy $E_{eq}$ of the
unloaded equilibrium, not to zero. We fit $\\log(E - E_{eq}) = a - 2t/\\tau$ over $t \\ge 0.2$ s;
$\\tau$ is the decay time constant of the oscillation amplitude. For backward Euler the excess energy
reaches the accuracy floor of the discrete energy (about $10^{-5}$ of the initial value, from the
coarse Euler grid and the trapezoid-rule energy quadrature) within 0.6 s, so only samples above
$10^{-4}$ of the initial excess enter the fit."""
    ),
    new_code_cell(
        """eq_model = eqx.tree_at(lambda m: m.tip_force, sc.model, jnp.zeros(3))  # same structure: no recompile
st, _ = jaxrod.solve_static(eq_model)
E_eq = float(eq_model.energy(st.y, st.w))
print(f"E_eq = {E_eq:.6e} J")

paper = {"backward Euler": "0.13 s", "BDF2": "3.86 s", "BDF-alpha -0.2": "7.57 s", "trapezoid": "no decay"}
energy = {}
print(f"{'scheme':15s} {'tau (fit)':>12s} {'Till et al. Table 3 (Euler)':>28s}")
for name, traj in trajs.items():
    t = np.asarray(traj.times)
    dE = np.asarray(jax.vmap(sc.model.energy)(traj.q, traj.v)) - E_eq
    energy[name] = (t, dE)
    fit = (t >= 0.2) & (dE > 1e-4 * dE[0])
    slope = np.polyfit(t[fit], np.log(dE[fit]), 1)[0]
    tau = -2.0 / slope
    tau_txt = f"{tau:.3g} s" if 0 < tau < 1e3 else "no decay"
    print(f"{name:15s} {tau_txt:>12s} {paper[name]:>28s}")

fig, ax = plt.subplots(figsize=(8, 4))
for name, (t, dE) in energy.items():
    ax.plot(t, np.log10(np.where(dE > 0, dE, np.nan)), label=name, lw=1.2)  # gaps: E below E_eq
ax.set_xlabel("t [s]")
ax.set_ylabel("log10(E - E_eq)  [J]")
ax.set_title("Energy decay: numerical damping of each scheme")
ax.legend()
plt.show()"""
    ),
    new_markdown_cell(
        """The fitted constants follow the paper's Table 3: backward Euler kills the oscillation within a
few periods, BDF2 and BDF-$\\alpha$ with $\\alpha = -0.2$ lose about 6% and 3% of the energy per
0.11 s period at this 5 ms step (both shrink roughly as $\\delta t^3$), and the trapezoid rule shows
no discernible damping. They are set by the scheme and the
time step (a single 8.9 Hz oscillator stepped by each scheme gives nearly the same numbers), not by
the spatial grid, which is why the coarse 40-point grid reproduces them."""
    ),
    new_markdown_cell(
        """## 4. Kirchhoff versus Cosserat

The Kirchhoff rod drops shear and extension ($v \\equiv e_3$): the internal force becomes a
Lagrange multiplier and the shooting ODE loses its stiffest modes. For a slender steel rod
(shear stiffness $GA \\approx 2.5 \\cdot 10^5$ N versus bending stiffness $EI/L^2 \\approx 1$ N) the
difference is tiny. `kirchhoff` is a static model field, so this compiles a new program; with
`state0=None` the simulation starts from its own static equilibrium."""
    ),
    new_code_cell(
        """sc_k = get_scene("till-benchmark", n_points=40, integrator="euler", kirchhoff=True)
traj_k = jaxrod.simulate(sc_k.model, dt=0.005, n_steps=200, scheme=D.bdf2())
traj_c = trajs["BDF2"]
for label, tr in (("Cosserat", traj_c), ("Kirchhoff", traj_k)):
    print(f"{label:9s} tip at t=0: {np.round(1e3 * np.asarray(tr.tip[0]), 4)} mm, "
          f"at t=1 s: {np.round(1e3 * np.asarray(tr.tip[-1]), 4)} mm")
diff = np.abs(np.asarray(traj_k.tip - traj_c.tip)).max()
print(f"largest tip-position difference over the run: {1e6 * diff:.2f} um "
      f"({100 * diff / abs(float(traj_c.tip[0, 0])):.3f}% of the initial deflection)")"""
    ),
    new_markdown_cell(
        """## 5. Gradients through the shooting solves

Everything above is a JAX function of the model's array leaves. As an example we differentiate
the mean squared tip x displacement of the BDF2 run with respect to Young's modulus E (the shear
modulus is a separate leaf and stays at 79 GPa). The initial state depends on E too, so it must be
recomputed inside the loss: `simulate(..., state0=None)` solves the static problem itself
(`jaxrod.solve_static` also works under `jax.grad`). Each shooting solve is differentiated by the
implicit function theorem, never by unrolling its Newton iterations.

A central finite difference with relative step $10^{-6}$ checks the result. The loss uses the same
200 steps as section 2, so the finite-difference runs reuse the compiled forward programs (the
compile time of a `scan` does not depend on its length); only the gradient is a new program, and
compiling it is most of this cell's time. With a single parameter we use forward mode
(`jax.jvp`), which compiles in about half the time of reverse mode (`jax.grad`, same value);
reverse mode pays off when there are many parameters (see `tests/test_cosserat.py`)."""
    ),
    new_code_cell(
        """def model_with_E(E):
    return eqx.tree_at(lambda m: m.rod.youngs_modulus, sc.model, jnp.asarray(E, dtype=float))

def loss(E):
    \"\"\"Mean squared tip x displacement [m^2] over 1 s (BDF2, 200 steps) from the static state at this E.\"\"\"
    # fallback=False: under jax.jvp the solver's Levenberg-Marquardt fallback would otherwise be
    # compiled into every step (about twice the compile time); a failed step fails the run instead
    traj = jaxrod.simulate(model_with_E(E), dt=0.005, n_steps=200, scheme=D.bdf2(), fallback=False)
    return jnp.mean(traj.tip[:, 0] ** 2)

E0 = float(rod.youngs_modulus)
value, grad = jax.jvp(loss, (E0,), (1.0,))
h = 1e-6 * E0
fd = (loss(E0 + h) - loss(E0 - h)) / (2 * h)
rel = abs(float(grad) / float(fd) - 1)
print(f"loss at E = {E0:.3g} Pa: {float(value):.6e} m^2")
print(f"dloss/dE  jax.jvp:           {float(grad):.8e} m^2/Pa")
print(f"          central difference: {float(fd):.8e} m^2/Pa")
print(f"relative difference {rel:.1e};  E dloss/dE = {E0 * float(grad):.4e} m^2 (a stiffer rod deflects less)")
assert rel < 1e-4"""
    ),
    new_markdown_cell(
        """## Next steps

* `get_scene("till-impulse")` is the paper's sec. 4 validation experiment: a 0.517 m, 1.42 mm
  spring-steel rod hit near its base by a 5 N, 16 ms hat-shaped force (RK4, 100 points,
  BDF-$\\alpha$ $-0.4$). It is not run here because its RK4 program takes too long to compile for
  this notebook; from a shell, `python -m jaxrod simulate till-impulse --plot impulse.png` runs it
  and plots the tip response.
* `get_scene("till-weight-release")` is the companion calibration experiment (a 20 g weight
  released from the tip).
* `jaxrod scenes` lists every built-in problem; the same simulations run from the command line with
  `jaxrod simulate <scene>`."""
    ),
]


def build(path=None):
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path) if path else Path(__file__).with_name("cosserat_shooting.ipynb")
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print(build())
