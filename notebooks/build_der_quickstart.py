"""Write ``der_quickstart.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_der_quickstart.py`` after editing the cells below; the notebook is
executed by ``tests/test_notebooks.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# jaxrod quickstart: a discrete elastic rod cantilever

This notebook builds a small discrete-elastic-rod (DER) cantilever, integrates it in time with
`jaxrod.simulate` (one compiled XLA program), plots the result with `jaxrod.plot`, checks the
first-mode frequency against Euler-Bernoulli beam theory, and differentiates a tip-position
loss with respect to Young's modulus (forward mode, `jax.jvp`).

The problem is deliberately small (21 nodes, 26 implicit-midpoint steps) so that the whole
notebook takes 75-90 s of CPU time with nothing cached (2-core machine, measured 2026-11-27), most of it XLA compilation; far less once its programs are cached."""
    ),
    new_code_cell(
        """%matplotlib inline
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from IPython.display import display

import jaxrod  # turns on float64
from jaxrod import analysis, plot

print("jaxrod", jaxrod.__version__, "| jax", jax.__version__, "| devices:", jax.devices())"""
    ),
    new_markdown_cell(
        """## 1. The model

`jaxrod.scenes` holds ready-made problems. `cantilever-a1` is DisMech's dynamic cantilever
(Table II, case a1): a 1 m rod of radius 2 cm, E = 0.1 MPa, rho = 500 kg/m^3, clamped at x = 0,
no gravity, started with the first bending mode's velocity profile (5 mm/s at the tip, along +z).
We override the resolution and the run length: one period is about 12.6 s."""
    ),
    new_code_cell(
        """scene = jaxrod.scenes.get_scene("cantilever-a1", n_nodes=21, dt=0.5, duration=13.0)
model = scene.model
rod = model.rod
print(scene.description)
print(f"nodes {rod.n_nodes}, E = {float(rod.youngs_modulus):g} Pa, EI = {float(rod.EI):.4g} N m^2, "
      f"mass = {float(rod.node_masses().sum()):.4f} kg")
print(f"dt = {scene.dt} s, duration = {scene.duration} s, scheme = {type(scene.scheme).__name__}")
print(f"Euler-Bernoulli first mode: omega = {scene.reference['omega_rad_s']:.5f} rad/s, "
      f"period = {scene.reference['period_s']:.3f} s")"""
    ),
    new_markdown_cell(
        """The same kind of rod can be built by hand: `DERRod.straight` makes a straight rod and
`DERModel` adds boundary conditions and loads (here: clamp edge 0, first-mode initial velocity).
A DER clamp acts at the *midpoint* of the clamped edge, so `DERRod.cantilever` (used here and
by the scene) centres edge 0 on the wall: the free length is exactly 1 m. Clamping edge 0 of
`DERRod.straight(21, 1.0)` instead would make the beam half an edge shorter (a tip load then
deflects the tip about 1.5 dl/L too little: 14.5% at 11 nodes)."""
    ),
    new_code_cell(
        """rod_by_hand = jaxrod.DERRod.cantilever(
    21, 1.0, youngs_modulus=1e5, density=500.0, radius=0.02, poisson_ratio=0.5
)
x = np.asarray(rod_by_hand.rest_positions[:, 0])  # node 0 sits half an edge behind the wall at x = 0
v0 = jaxrod.first_mode_velocity(rod_by_hand, 5e-3, s=np.clip(x, 0.0, None), length=1.0)
model_by_hand = jaxrod.DERModel(rod_by_hand, clamped_edges=(0,), v0=v0)
print("fixed nodes:", model_by_hand.fixed_nodes, "| fixed edge twists:", model_by_hand.fixed_edges)
print("initial tip velocity [m/s]:", np.asarray(model_by_hand.v0[-1, :3]))"""
    ),
    new_markdown_cell(
        """## 2. Simulate

`jaxrod.simulate` compiles the whole time loop (a `lax.scan` of Newton solves) the first time it
sees a model structure and step count; later calls with new parameter values reuse the compiled
program."""
    ),
    new_code_cell(
        """t0 = time.perf_counter()
traj = jaxrod.simulate(model, dt=scene.dt, duration=scene.duration, scheme=scene.scheme)
jax.block_until_ready(traj.positions)
t_first = time.perf_counter() - t0

t0 = time.perf_counter()
traj = jaxrod.simulate(model, dt=scene.dt, duration=scene.duration, scheme=scene.scheme)
jax.block_until_ready(traj.positions)
t_second = time.perf_counter() - t0

n_steps = len(traj.times) - 1
its = np.asarray(traj.stats.iterations)
print(f"first call (compile + run): {t_first:6.2f} s")
print(f"second call (run only):     {t_second:6.3f} s  = {1e3 * t_second / n_steps:.2f} ms/step")
print(f"{n_steps} steps, Newton iterations/step: mean {its.mean():.2f}, max {its.max()}, "
      f"all converged: {bool(np.all(traj.stats.converged))}")
print("final tip position [m]:", np.asarray(traj.tip[-1]))"""
    ),
    new_markdown_cell(
        """## 3. Plot

`plot.plot_trajectory` shows the tip displacement [mm] and the initial/final centerline. The
vibration is only ~1 cm on a 1 m rod, so the shapes are drawn with the displacement magnified by
a round factor, written in the panel titles (`exaggeration="auto"`, here 20); the second figure
draws the true shapes (`exaggeration=1`)."""
    ),
    new_code_cell(
        """display(plot.plot_trajectory(traj, title=scene.description))
display(plot.plot_trajectory(traj, title="same, true scale", exaggeration=1))"""
    ),
    new_markdown_cell(
        """## 4. Compare with Euler-Bernoulli

A clamped-free beam vibrates in its first mode at
$\\omega_1 = (\\beta_1 L)^2 \\sqrt{EI / (\\rho A L^4)}$ with $\\beta_1 L = 1.8751$, and a tip started
at speed $v_0$ swings with amplitude $v_0 / \\omega_1$. The period is measured from the upward zero
crossings of the tip z-displacement (linear interpolation between saved steps)."""
    ),
    new_code_cell(
        """E, h, rho, L = float(rod.youngs_modulus), float(rod.radius), float(rod.density), 1.0
omega_eb = 1.8751040687119611**2 * np.sqrt((E * np.pi * h**4 / 4) / (rho * np.pi * h**2 * L**4))

times = np.asarray(traj.times)
uz = np.asarray(traj.tip[:, 2] - traj.tip[0, 2])
omega = analysis.oscillation_frequency(times, uz)
amp = analysis.oscillation_amplitude(uz)
print(f"upward zero crossings at t = {np.round(analysis.zero_crossings(times, uz), 3)} s")
print(f"omega: simulated {omega:.5f} rad/s, Euler-Bernoulli {omega_eb:.5f} rad/s, "
      f"error {100 * analysis.relative_error(omega, omega_eb):+.2f}%")
print(f"tip amplitude: simulated {1e3 * amp:.4f} mm, v0/omega {1e3 * 5e-3 / omega_eb:.4f} mm, "
      f"error {100 * analysis.relative_error(amp, 5e-3 / omega_eb):+.2f}%")
assert abs(omega / omega_eb - 1) < 0.02"""
    ),
    new_markdown_cell(
        """## 5. Differentiate through the simulation

Everything above is a JAX function of the model's arrays, so JAX differentiates through it
exactly: each Newton solve by the implicit function theorem, the time loop step by step. For one
parameter, forward mode (`jax.jvp`) is the cheap choice: one tangent carried alongside the
simulation. With many parameters, `jax.grad` (reverse mode) gives all the derivatives in one
backward pass through the same machinery.

As a tiny system-identification example, we generate a "measured" tip trajectory with
E = 0.12 MPa and take the derivative of the mean squared tip mismatch with respect to E at
E = 0.1 MPa (the shear modulus follows E with Poisson ratio 0.5). A central finite difference
checks the result. One compiled program makes the measurement, the derivative and both
finite-difference runs: only array values change between the calls."""
    ),
    new_code_cell(
        """def model_with_E(E):
    E = jnp.asarray(E, dtype=float)  # an array leaf, not a Python float: new values do not recompile
    return eqx.tree_at(lambda m: (m.rod.youngs_modulus, m.rod.shear_modulus), model, (E, E / 3.0))

def tip_uz(E):
    # fallback=False: under differentiation the backward-Euler retry would be compiled into every
    # step (a smaller program; a step that fails makes the run fail instead of being retried)
    tr = jaxrod.simulate(model_with_E(E), dt=scene.dt, duration=scene.duration, scheme=scene.scheme,
                         fallback=False)
    return tr.tip[:, 2] - tr.tip[0, 2]

def loss(E, measured):
    \"\"\"Mean squared tip z mismatch [m^2], and the tip z history [m].\"\"\"
    uz = tip_uz(E)
    return jnp.mean((uz - measured) ** 2), uz

@jax.jit
def loss_and_derivative(E, measured):
    \"\"\"loss [m^2], dloss/dE [m^2/Pa] (one forward-mode tangent, dE = 1) and the tip z history [m].\"\"\"
    (value, uz), (dvalue, _) = jax.jvp(lambda E: loss(E, measured), (E,), (jnp.ones_like(E),))
    return value, dvalue, uz

t0 = time.perf_counter()
_, _, measured = loss_and_derivative(jnp.asarray(1.2e5), jnp.zeros(n_steps + 1))
print(f"measurement made in {time.perf_counter() - t0:.1f} s (incl. compilation)")

E0 = jnp.asarray(1.0e5)
value, dloss_dE, _ = loss_and_derivative(E0, measured)
print(f"loss = {float(value):.4e} m^2, dloss/dE = {float(dloss_dE):.4e} m^2/Pa")

dE = 1e-4 * E0
fd = (loss_and_derivative(E0 + dE, measured)[0] - loss_and_derivative(E0 - dE, measured)[0]) / (2 * dE)
print(f"central difference:          {float(fd):.4e} m^2/Pa, "
      f"relative difference {abs(float(dloss_dE) / float(fd) - 1):.1e}")
assert float(dloss_dE) < 0  # a stiffer rod moves towards the measurement
assert abs(float(dloss_dE) / float(fd) - 1) < 1e-3"""
    ),
    new_markdown_cell(
        """## 6. A cable driven by measured gripper motion, calibrated over several trials

A common calibration experiment: a cable held at both ends by two robot grippers whose poses
(position and orientation per camera frame) are recorded, with markers tracked along the cable.
`ClampMotion` takes a gripper's poses as *arrays* (traced, not static), so one compiled program
serves every trial and every parameter value; `ClampMotion.from_gripper` turns measured gripper
rotations into absolute orientations of the clamped edge (the cable turns with the gripper).
`DERRod.cantilever(..., clamped_ends="both")` puts the two clamp points exactly 0.5 m apart.
Backward Euler is the scheme to use on such dissipative, driven runs (implicit midpoint does not
damp the unresolved twist and axial modes).

Three synthetic trials (different lifts, tilts and twists) are stacked on a leading axis and
`jax.vmap`-ed inside one residual function; trial 3 is held out of the fit by a mask (masked
residuals are exactly 0), so the same compiled program reports its prediction error."""
    ),
    new_code_cell(
        """from jaxrod import ClampMotion, DERModel, DERRod
from jaxrod.calibrate import Log, Objective, Parameter, ParamSet, fit, predict_markers
from jaxrod.models.der import clamp_frame

N, L = 9, 0.5                                   # a 0.5 m cable between two grippers
cable = DERRod.cantilever(N, L, clamped_ends="both", youngs_modulus=1e7, density=1000.0, radius=5e-3)
q0 = jnp.concatenate([cable.rest_positions, jnp.zeros((N, 1))], axis=1)
frames = (clamp_frame(q0, 0), clamp_frame(q0, N - 2))   # the cable's frame in each gripper at t = 0
grid = cable.rest_positions[:, 0]               # arc length of each node from gripper A [m]

def driven_model(values, trial):
    \"\"\"The cable driven by one trial's gripper poses; values: {"E": Pa, "eta": N s/m^2}.\"\"\"
    clamps = (
        ClampMotion.from_gripper(0, trial["times"], trial["pos_a"], trial["rot_a"], frames[0]),
        ClampMotion.from_gripper(-1, trial["times"], trial["pos_b"], trial["rot_b"], frames[1]),
    )
    rod = eqx.tree_at(lambda r: r.youngs_modulus, cable, values["E"])
    return DERModel(rod, clamps=clamps, gravity=(0.0, 0.0, -9.81), damping=values["eta"])

def predict(values, trial):                     # (frames, markers, 3) [m]
    traj = jaxrod.simulate(driven_model(values, trial), dt=0.02, n_steps=25, scheme=jaxrod.BackwardEuler())
    return predict_markers(traj, trial["marker_times"], trial["arc_lengths"], grid=grid)

def residuals(values, data):                    # all trials at once (arrays stacked on axis 0)
    pred = jax.vmap(predict, in_axes=(None, 0))(values, data)
    r = (pred - data["markers"]) / 1e-3         # 1 mm measurement scale
    mask = jnp.broadcast_to(data["use"][:, None, None, None], r.shape)
    return jnp.where(mask, r, 0.0).ravel(), mask.ravel()

params = ParamSet([Parameter("E", 1e7, Log(), unit="Pa"), Parameter("eta", 1.0, Log(), unit="N s/m^2")])"""
    ),
    new_code_cell(
        """def rot(axis, angle):                          # rotation matrix about a unit axis
    K = np.cross(np.eye(3), np.asarray(axis, float))
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K

times = np.linspace(0.0, 0.5, 11)               # gripper poses and camera frames [s]
ramp = np.clip(times / 0.3, 0, 1) ** 2 * (3 - 2 * np.clip(times / 0.3, 0, 1))

def trial(lift, tilt, twist):
    return {
        "times": times,
        "pos_a": np.zeros((times.size, 3)),
        "rot_a": np.stack([rot([0, 1, 0], 0.5 * tilt * u) for u in ramp]),
        "pos_b": np.stack([[L, 0.0, lift * u] for u in ramp]),
        "rot_b": np.stack([rot([0, 1, 0], -tilt * u) @ rot([1, 0, 0], twist * u) for u in ramp]),
        "marker_times": times[1:],
        "arc_lengths": np.array([0.125, 0.25, 0.375]),
        "markers": np.zeros((times.size - 1, 3, 3)),
    }

trials = [trial(0.04, 0.3, 0.5), trial(-0.03, -0.4, -1.0), trial(0.02, 0.5, 0.8)]
data = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *trials)
data["use"] = jnp.array([True, True, True])
truth = {"E": 1.5e7, "eta": 2.0}
obj = Objective(residuals, params, data=data)
# synthetic measurements: residuals against all-zero markers are the predictions in mm (this also
# compiles the program that the fit reuses); add 0.2 mm of noise
r, _ = obj.residuals(params.to_vector(truth))
shape = data["markers"].shape
data["markers"] = 1e-3 * r.reshape(shape) + 2e-4 * np.random.default_rng(0).normal(size=shape)
print(f"data made in {obj.compile_time:.1f} s (incl. compilation)")

train = dict(data, use=jnp.array([True, True, False]))   # trial 3 held out
report = fit(obj, data=train, method="lbfgs", max_iters=40, verbose=False)
print(report.summary(true_values=truth))

def rms_mm(use):
    r, m = obj.residuals(params.to_vector(report.values), dict(data, use=use))
    return float(np.sqrt(np.mean(r[m] ** 2)))
print(f"marker RMS error: in-sample (trials 1-2) {rms_mm(jnp.array([True, True, False])):.3f} mm, "
      f"held-out (trial 3) {rms_mm(jnp.array([False, False, True])):.3f} mm (noise 0.2 mm)")
assert abs(report.values["E"] / truth["E"] - 1) < 0.05"""
    ),
    new_markdown_cell(
        """## Next steps

* The same runs from the command line: `jaxrod simulate cantilever-a1 --n-nodes 21 --duration 13
  --dt 0.5 --plot a1.png --animate a1.gif`; `jaxrod scenes` lists the built-in problems.
* `jaxrod.plot.animate_trajectory(traj, "a1.gif")` writes an animation (magnified as the figure).
* `jax.vmap` over `model_with_E` runs a batch of moduli in one compiled program."""
    ),
]


def build(path=None):
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path) if path else Path(__file__).with_name("der_quickstart.ipynb")
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print(build())
