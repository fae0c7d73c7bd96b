"""Write ``hybrid_systems.ipynb`` (outputs cleared) next to this script.

Run ``python notebooks/build_hybrid_systems.py`` after editing the cells below; the notebook is
executed by ``tests/test_notebooks.py``.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        """# Hybrid rigid-continuum systems (after TMTDyn, Sadati et al.)

TMTDyn derives the equations of motion of rigid bodies, joints and rods from a text description
with symbolic algebra. jaxrod does the same with automatic differentiation: bodies and joints are
`equinox` modules, their residual goes through the same implicit schemes, Newton solver and
implicit differentiation as the rod models, and every result can be differentiated.

This notebook: a pendulum swinging at large amplitude against the elliptic-integral period; the
linear modes of a double pendulum against the closed form; a four-bar linkage read from a
model file; a rod carrying a rigid body (static sag and frequency against beam theory); a URDF arm
carrying a soft rod, exported for ParaView. Problems are
small: most of the time is XLA compilation."""
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
from jaxrod.system import MultibodySystem, Revolute, RigidBody

G = 9.81


def ellipk(k):
    \"\"\"Complete elliptic integral of the first kind, K(k) = pi / (2 AGM(1, sqrt(1 - k^2))).\"\"\"
    a, b = 1.0, np.sqrt(1.0 - k * k)
    for _ in range(40):
        a, b = 0.5 * (a + b), np.sqrt(a * b)
    return np.pi / (2.0 * a)"""
    ),
    new_markdown_cell(
        """## 1. A pendulum at large amplitude

A slender link (0.4 m, 0.7 kg) hinged at its end, released at rest at 2 rad. Its period is
$T = 4\\sqrt{I_p/(m g d)}\\,K(\\sin(\\theta_0/2))$, 29 % longer than the small-amplitude one. The
energy-conserving average-vector-field scheme (the default for systems) keeps the amplitude."""
    ),
    new_code_cell(
        """m, length, theta0 = 0.7, 0.4, 2.0
d, I_p = length / 2, m * length**2 / 3
c, s = np.cos(theta0), np.sin(theta0)
link = RigidBody("link", m, [m * length**2 / 12] * 2 + [1e-4], position=[-d * s, 0.0, -d * c],
                 orientation=[np.cos(theta0 / 2), 0.0, -np.sin(theta0 / 2), 0.0])
hinge = Revolute(None, "link", point=[0, 0, 0], axis=[0, 1, 0])
pendulum = MultibodySystem([link], [hinge], gravity=[0, 0, -G])

T_exact = 4 * np.sqrt(I_p / (m * G * d)) * ellipk(np.sin(theta0 / 2))
t0 = time.perf_counter()
traj = jaxrod.simulate(pendulum, dt=T_exact / 200, n_steps=500, solver=jaxrod.NewtonSolver(rtol=0.0, atol=1e-12))
x = np.asarray(traj.positions)[:, 0]
print(f"500 steps in {time.perf_counter() - t0:.1f} s including compilation")

theta = np.arctan2(-x[:, 0], -x[:, 2])
t = np.asarray(traj.times)
k = np.flatnonzero(np.sign(theta[1:]) != np.sign(theta[:-1]))
crossings = t[k] - theta[k] * (t[k + 1] - t[k]) / (theta[k + 1] - theta[k])
T_sim = crossings[2] - crossings[0]
print(f"period: simulated {T_sim:.5f} s, elliptic integral {T_exact:.5f} s "
      f"(rel. diff {abs(T_sim / T_exact - 1):.1e}); small-amplitude {2 * np.pi * np.sqrt(I_p / (m * G * d)):.5f} s")
assert abs(T_sim / T_exact - 1) < 1e-3

plt.figure(figsize=(7, 2.8))
plt.plot(t, theta)
plt.xlabel("t [s]"); plt.ylabel("angle [rad]"); plt.title("pendulum released at 2 rad")
plt.show()"""
    ),
    new_markdown_cell(
        """## 2. Linear modes of a double pendulum

`jaxrod.modal` linearises any model. For a jointed system it first solves the static joint
forces (their geometric stiffness is the whole restoring stiffness of a pendulum) and then keeps
only the motions the joints allow. Closed form for two slender links in absolute angles:
$M = \\begin{pmatrix} m_1 l_1^2/3 + m_2 l_1^2 & m_2 l_1 l_2/2 \\\\ m_2 l_1 l_2/2 & m_2 l_2^2/3\\end{pmatrix}$,
$K = g\\,\\mathrm{diag}(m_1 l_1/2 + m_2 l_1,\\; m_2 l_2/2)$."""
    ),
    new_code_cell(
        """m1, l1, m2, l2 = 1.0, 0.5, 0.6, 0.3
y = [0.0, 1.0, 0.0]
upper = RigidBody("upper", m1, [m1 * l1**2 / 12] * 2 + [1e-4], position=[0, 0, -l1 / 2])
lower = RigidBody("lower", m2, [m2 * l2**2 / 12] * 2 + [1e-4], position=[0, 0, -l1 - l2 / 2])
double = MultibodySystem([upper, lower], [Revolute(None, "upper", point=[0, 0, 0], axis=y),
                                          Revolute("upper", "lower", point=[0, 0, -l1], axis=y)],
                         gravity=[0, 0, -G])
modes = jaxrod.modal(double, double.initial_state())

M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, m2 * l1 * l2 / 2], [m2 * l1 * l2 / 2, m2 * l2**2 / 3]])
K = G * np.diag([m1 * l1 / 2 + m2 * l1, m2 * l2 / 2])
closed = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, K)).real))
print("jaxrod.modal  [rad/s]:", np.asarray(modes.omega))
print("closed form   [rad/s]:", closed)
assert np.allclose(np.asarray(modes.omega), closed, rtol=1e-9)
for i, shape in enumerate(np.asarray(modes.displacements)):
    print(f"mode {i + 1}: centre displacements x/z [m]", np.round(shape[:, [0, 2]], 3).tolist())"""
    ),
    new_markdown_cell(
        """## 3. A model file

Systems can be written as TOML files (TMTDyn's text interface, in a standard format): bodies,
joints, constraints closing loops, springs, rods, attachments, loads and run settings, with SI
units (or strings such as `"270 mm"`). `jaxrod.load_model` checks the file and names the file,
table and key of any problem; `jaxrod simulate four_bar` runs the same file from the command
line. Here the shipped four-bar linkage (a crank driven by a constant torque) runs for 0.5 s and
we check that its loop stays closed."""
    ),
    new_code_cell(
        """from importlib.resources import files

four_bar = jaxrod.load_model("four_bar")
print(four_bar.description, "|", four_bar.model.n_bodies, "bodies,", four_bar.model.n_constraints, "constraint rows")
text = (files("jaxrod.modelfile") / "examples" / "four_bar.toml").read_text()
print(text[text.index("[joints.coupler_rocker]"):])  # the last hinge, and the constraint closing the loop

traj = jaxrod.simulate(four_bar.model, dt=0.004, n_steps=125, solver=jaxrod.NewtonSolver(rtol=0.0, atol=1e-12))
x = np.asarray(traj.positions)               # (frames, bodies, 3) centres of mass
R = np.swapaxes(np.asarray(traj.frames), -1, -2)  # body -> world rotations
rocker_tip = x[:, 2] + R[:, 2] @ np.array([0.25, 0.0, 0.0])   # rocker end at the coupler
coupler_tip = x[:, 1] + R[:, 1] @ np.array([0.3, 0.0, 0.0])
print(f"loop closure error over the run: {np.max(np.linalg.norm(rocker_tip - coupler_tip, axis=1)):.1e} m")
assert np.max(np.linalg.norm(rocker_tip - coupler_tip, axis=1)) < 1e-9"""
    ),
    new_markdown_cell(
        """## 4. A rod carrying a rigid body

`HybridSystem` attaches discrete-elastic-rod edges to bodies (`RodClamp`: welded, 7 rows) or
nodes (`RodPin`: 3 rows), with the same Lagrange-multiplier machinery as the joints. A steel
cantilever (0.5 m, r = 1 cm, 5 edges) clamped to the world carries a 2 kg body welded to its tip.
`jaxrod.solve_static` gives the sag under gravity (the attachment multipliers of the solution are
the clamp forces) and `jaxrod.modal` the vertical frequency, against beam theory and the
spring-mass formula $\omega = \sqrt{3EI / ((M + \tfrac{33}{140} m) L^3)}$."""
    ),
    new_code_cell(
        """from jaxrod.system import HybridSystem, RodClamp

E, rho, r, L, M = 2e11, 1000.0, 0.01, 0.5, 2.0
rod = jaxrod.DERRod.cantilever(6, L, clamped_ends="both", youngs_modulus=E, density=rho, radius=r)
tip = RigidBody("tip", M, [1e-6] * 3, position=[L, 0.0, 0.0])
beam = HybridSystem([jaxrod.DERModel(rod)], [tip], attachments=[RodClamp(0, 0), RodClamp(0, -1, "tip")],
                    gravity=(0.0, 0.0, -G))

state, _ = jaxrod.solve_static(beam)
EI, w = E * np.pi * r**4 / 4, rho * np.pi * r**2
sag = -float(beam.body_positions(beam.observe(state.q, state.v, state.aux)["positions"])[0, 2])
sag_beam = M * G * L**3 / (3 * EI) + w * G * L**4 / (8 * EI)
_, _, clamp_forces = beam.split(state.q)
rows = beam.attachment_rows()
print(f"tip sag {sag * 1e3:.4f} mm, beam theory {sag_beam * 1e3:.4f} mm ({sag / sag_beam - 1:+.2%}, 5 DER edges)")
print(f"vertical force of the rod on the body: {float(clamp_forces[rows[1]][2] + clamp_forces[rows[1]][5]):.6f} N "
      f"(its weight {M * G:.6f} N)")

modes = jaxrod.modal(beam, state, n_modes=2)
omega_sm = np.sqrt(3 * EI / L**3 / (M + 33 / 140 * w * L))
print("lowest frequencies [rad/s]:", np.asarray(modes.omega), "| spring-mass", round(omega_sm, 3))
assert abs(float(modes.omega[0]) / omega_sm - 1) < 5e-3"""
    ),
    new_markdown_cell(
        """## A URDF arm carrying a soft rod, exported for ParaView

Rigid robots come as URDF (or MuJoCo's MJCF): `jaxrod.load_robot("arm.urdf")` builds the
`MultibodySystem` (links welded by fixed joints merged into one body), and a model file's
`[include]` table brings the links in by name so that rods, loads and attachments can refer to
them. `arm3_with_rod.toml` includes `arm3.urdf` (a yaw hinge, a shoulder hinge, a prismatic
wrist, a welded tool) and clamps a soft DER rod to the tool. The check: the clamped edge rides with
the tool (its distance to the tool's centre of mass stays what it was), and the ParaView file
holds the simulated positions."""
    ),
    new_code_cell(
        """import tempfile
from pathlib import Path

import meshio

from jaxrod.export import export_paraview

arm = jaxrod.load_model("arm3_with_rod.toml")
print(arm.description, "| bodies from the URDF:", arm.body_names)
traj = arm.simulate(n_steps=60)
pos = np.asarray(traj.positions)                   # rod nodes first, then the bodies
gap = np.linalg.norm(pos[:, 0] - pos[:, -1], axis=1)  # rod's first node to link3 (+ tool)
print(f"tool moved {np.linalg.norm(pos[-1, -1] - pos[0, -1]) * 1e3:.1f} mm in {float(traj.times[-1]):.2f} s; "
      f"clamp distance {gap[0] * 1e3:.3f} mm, drift {np.abs(gap - gap[0]).max():.1e} m")
assert np.abs(gap - gap[0]).max() < 1e-9

folder = Path(tempfile.mkdtemp())
pvd = export_paraview(traj, folder / "arm.pvd", arm.model, every=20)
frames = sorted((folder / "arm_frames").glob("*.vtu"))
last = meshio.read(frames[-1])
print(pvd.name, "with", len(frames), "frames; open it in ParaView")
assert np.allclose(np.sort(last.points, axis=0), np.sort(pos[-1], axis=0), atol=1e-12)

fig, ax = plt.subplots(figsize=(4, 4))
for k in range(0, len(pos), 15):
    ax.plot(pos[k, :7, 0], pos[k, :7, 2], "-o", ms=2, color=plt.cm.viridis(k / len(pos)))
    ax.plot(pos[k, -3:, 0], pos[k, -3:, 2], "s", color="k", ms=4)
ax.set_xlabel("x [m]"); ax.set_ylabel("z [m]"); ax.set_aspect("equal"); ax.set_title("arm3 + rod, side view")
plt.show()"""
    ),
]


def build(path=None):
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path) if path else Path(__file__).with_name("hybrid_systems.ipynb")
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    print(build())
