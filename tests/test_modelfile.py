"""Model files (jaxrod.modelfile): every shipped example loads and runs, files give the same models
and trajectories as the same systems built in Python, and every bad-file case is reported with
the file, the table and the key. The validation tests compile nothing."""

import json
import os
import subprocess
import sys
import textwrap

import equinox as eqx
import jax
import numpy as np
import pytest

import jaxrod
from jaxrod.modelfile import EXAMPLES_DIR, ModelFileError, example_names, load_model
from jaxrod.modelfile.topology import find_loop
from jaxrod.system import MultibodySystem, PlanarPin, Revolute, RigidBody

G = 9.81


def _ry(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _same_tree(a, b, tol=1e-12):
    """Same structure, static fields and array leaves (to ``tol``, absolute)."""
    la, ta = jax.tree_util.tree_flatten(eqx.filter(a, eqx.is_array))
    lb, tb = jax.tree_util.tree_flatten(eqx.filter(b, eqx.is_array))
    assert ta == tb
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=tol)


# ----------------------------------------------------------------------- examples vs Python
def _python_pendulum():
    """The system of examples/pendulum.toml written in Python (1 kg, 0.5 m, I = 0.02, 30 deg)."""
    th = np.radians(30.0)
    # the file's 16-digit literal of R_y(30 deg) (0, 0, -0.5): the same numbers, the same program
    position = [-0.25, 0.0, -0.4330127018922193]
    np.testing.assert_allclose(position, _ry(th) @ [0.0, 0.0, -0.5], rtol=0, atol=1e-16)
    body = RigidBody("bob", 1.0, [0.02, 0.02, 0.02], position=position,
                     orientation=[np.cos(th / 2), 0.0, np.sin(th / 2), 0.0])
    return MultibodySystem([body], [Revolute(None, "bob", point=[0.0, 0.0, 0.0], axis=[0.0, 1.0, 0.0])],
                           gravity=[0.0, 0.0, -G])


def test_pendulum_file_gives_the_python_trajectory():
    """Same model leaves and, over 40 steps, the same trajectory to 1e-12 (one compiled program:
    equal structures share it); after half a small-amplitude period the bob has swung through."""
    loaded = load_model("pendulum.toml")
    assert loaded.kind == "system" and loaded.body_names == ("bob",) and loaded.dt == 0.005
    model = _python_pendulum()
    _same_tree(loaded.model, model)
    t_file = loaded.simulate(n_steps=40)
    t_py = jaxrod.simulate(model, dt=0.005, n_steps=40, scheme=jaxrod.AverageVectorField())
    np.testing.assert_allclose(np.asarray(t_file.positions), np.asarray(t_py.positions), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(t_file.v), np.asarray(t_py.v), rtol=0, atol=1e-12)
    # released at rest at -30 deg (x < 0): after 0.2 s (T/7) it has moved towards the vertical
    x = np.asarray(t_file.positions)[:, 0, 0]
    assert x[0] == pytest.approx(-0.25, abs=1e-15) and -0.25 < x[-1] < -0.1


def test_der_and_pcs_files_build_the_scene_models():
    """The declarative rod files give exactly the models of the scene builders (no compile)."""
    from jaxrod.scenes.der import cantilever_static, dynamic_cantilever
    from jaxrod.scenes.pcs import pcs_silicone

    a1 = load_model(EXAMPLES_DIR / "cantilever_a1.toml")
    scene = dynamic_cantilever("a1", n_nodes=21)
    _same_tree(a1.model, scene.model)
    assert (a1.dt, a1.duration, type(a1.scheme)) == (scene.dt, scene.duration, type(scene.scheme))
    static = load_model("cantilever_static.toml")
    _same_tree(static.model, cantilever_static(21).model)
    assert static.static and static.load_steps == 1
    pcs = load_model("pcs_silicone.toml")
    ref = pcs_silicone()
    _same_tree(pcs.model, ref.model)
    assert type(pcs.scheme) is type(ref.scheme) and pcs.dt == ref.dt


@pytest.mark.slow
def test_tmtdyn_example_files_build_the_scene_models():
    """sleeve_pendulum.toml and stiff_flop_passive.toml give exactly the scene builders' models
    (the sleeve's build simulates its pendulum: one compile, shared with tests/test_sleeve.py
    through the persistent cache)."""
    from jaxrod.scenes.sleeve import sleeve_pendulum
    from jaxrod.scenes.stiff_flop import stiff_flop_passive

    sleeve = load_model("sleeve_pendulum.toml")
    # array leaves only: the clamp motion holds a new (equal) static interpolant per build
    la = jax.tree_util.tree_leaves(eqx.filter(sleeve.model, eqx.is_array))
    lb = jax.tree_util.tree_leaves(eqx.filter(sleeve_pendulum(dt=0.005, duration=3.0).model, eqx.is_array))
    assert len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))
    module = load_model("stiff_flop_passive.toml")
    _same_tree(module.model, stiff_flop_passive().model)
    assert (sleeve.dt, sleeve.duration, module.dt, module.duration) == (0.005, 3.0, 0.002, 1.0)


@pytest.fixture(scope="module")
def four_bar_run():
    loaded = load_model("four_bar.toml")
    return loaded, loaded.simulate(n_steps=50)


def test_four_bar_file_closes_its_loop(four_bar_run):
    """The [constraints] planar pin closes the loop: 17 independent rows, every step converges and
    all joints (the loop closure included) hold to the Newton tolerance over 50 steps."""
    loaded, traj = four_bar_run
    assert loaded.model.n_constraints == 5 * 3 + 2
    g = np.asarray(loaded.model.constraint_values(traj.positions, traj.frames))
    assert np.max(np.abs(g)) < 1e-9
    # the crank centre stays on its circle of radius 0.1 m about the pivot
    r = np.linalg.norm(np.asarray(traj.positions)[:, 0], axis=-1)
    np.testing.assert_allclose(r, 0.1, atol=1e-9)


def test_four_bar_figure_draws_each_joint_where_both_its_bodies_put_it(four_bar_run, tmp_path):
    """The 3-D view of the run (jaxrod.plot.plot_bodies): three boxes, and every joint drawn from
    both of its sides (body poses and anchors) at one point, at every saved time: the drawing reads
    the poses and anchors the way the joints constrain them."""
    import matplotlib

    matplotlib.use("Agg")
    from jaxrod.plot import plot_bodies

    loaded, traj = four_bar_run
    fig = plot_bodies(traj, loaded.body_names, tmp_path / "fb.png", model=loaded.model)
    scene = fig.scene3d
    assert len(scene.boxes) == 3
    for k in range(0, len(traj.times), 10):
        pts = scene.joint_points(k)
        assert len(pts) == 2 * len(loaded.model.body_index)  # both sides of every joint
        d = np.linalg.norm(pts[:, None] - pts[None], axis=-1) + np.eye(len(pts))
        assert np.max(np.min(d, axis=1)) < 1e-8
    drawn = np.stack(scene.joint_marks.get_data_3d(), axis=1)  # the figure shows the last time
    np.testing.assert_allclose(drawn, scene.joint_points(len(traj.times) - 1))


def test_double_pendulum_file_keeps_its_energy():
    loaded = load_model("double_pendulum.toml")
    traj = loaded.simulate(n_steps=100)
    e = np.asarray(loaded.model.energy(traj.positions, traj.frames, traj.v))
    assert np.max(np.abs(e - e[0])) < 1e-8 * 0.5 * G * 0.4
    assert "max |E - E0|" in loaded.summary(traj)[1]


RUNS = {  # example -> steps of a smoke run
    "cantilever_a1.toml": 2, "till_benchmark.toml": 2, "helix_b1.toml": 2, "network_two_limb.toml": 2,
}


def test_every_example_is_covered():
    # pcs_silicone.toml and cantilever_static.toml are covered by
    # test_der_and_pcs_files_build_the_scene_models: the same model, scheme and dt as the scene,
    # whose Newmark runs test_pcs_dynamics.py checks (a smoke run here took 131 s in a cold CI run);
    # arm3_with_rod.toml is loaded by tests/test_robot_files.py and run by the hybrid notebook
    covered = set(RUNS) | {"pendulum.toml", "double_pendulum.toml", "four_bar.toml", "cantilever_static.toml",
                           "pcs_silicone.toml",
                           "pendulum_with_rod.toml", "sleeve_pendulum.toml", "stiff_flop_passive.toml",
                           "arm3_with_rod.toml",
                           "snake_undulation.toml"}  # tests/test_snake.py: the scene's snake, step for step
    assert set(example_names()) == covered


#: examples that name a built-in scene (their builders are tested in test_scenes.py; these are
#: their only runs there, the most expensive compiles of this file)
SCENE_FILES = ("helix_b1.toml", "network_two_limb.toml", "till_benchmark.toml")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SCENE_FILES else n
                                  for n in sorted(RUNS)])
def test_rod_examples_run(name):
    """A few steps of each rod example: every step converges, positions stay finite and the rod
    starts where the file puts it."""
    loaded = load_model(name)
    traj = loaded.simulate(n_steps=RUNS[name])
    assert bool(np.all(np.asarray(traj.valid)))
    pos = np.asarray(traj.positions)
    assert np.all(np.isfinite(pos)) and pos.shape[0] == RUNS[name] + 1


@pytest.mark.slow
def test_hybrid_example_runs_where_the_coupling_exists():
    """pendulum_with_rod.toml: the rod's clamped first edge rides with the bob (node 0 stays at the
    bob's centre, node 1 0.05 m below it in the bob's frame) while the torque swings the bob;
    without jaxrod.system.hybrid the file is refused as "not yet supported"."""
    try:
        import jaxrod.system.hybrid  # noqa: F401
    except ImportError:
        with pytest.raises(ModelFileError, match=r"pendulum_with_rod\.toml: attachments\[0\]: .*not yet supported"):
            load_model("pendulum_with_rod.toml")
        return
    loaded = load_model("pendulum_with_rod.toml")
    traj = loaded.simulate(n_steps=40)
    pos = np.asarray(traj.positions)
    bob = pos[:, -1]
    assert np.max(np.abs(pos[:, 0] - bob)) < 1e-8
    np.testing.assert_allclose(np.linalg.norm(pos[:, 1] - bob, axis=-1), 0.05, atol=1e-8)
    assert np.linalg.norm(bob[-1] - bob[0]) > 1e-3  # the bob swings


def test_static_cantilever_file_matches_euler_bernoulli():
    loaded = load_model("cantilever_static.toml")
    state, res = loaded.simulate()
    q = np.asarray(state.q)
    deflection = -q[-1, 2]
    # P L^3 / 3 EI = 1 cm (0.03 L / 3); DER at 21 nodes within 1 %
    assert deflection == pytest.approx(0.01, rel=1e-2)


# ----------------------------------------------------------------------- bad files
PENDULUM = """
[world]
gravity = [0.0, 0.0, -9.81]

[bodies.bob]
mass = 1.0
inertia = [0.02, 0.02, 0.02]
position = [0.0, 0.0, -0.5]

[joints.hinge]
type = "revolute"
body2 = "bob"
point = [0.0, 0.0, 0.0]
axis = [0.0, 1.0, 0.0]

[simulation]
dt = 0.01
duration = 1.0
"""


ROD = ('[rods.r]\nmodel = "der"\nclamp = "none"\nn_nodes = 5\nlength = 0.5\nstart = [0.0, 0.0, -0.5]\n'
       'radius = 0.01\nyoungs_modulus = 1e6\ndensity = 1000.0\n')


def _write(tmp_path, text, name="bad.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BAD = [
    ("syntax", PENDULUM.replace("mass = 1.0", "mass = = 1.0"), r"bad\.toml: TOML syntax error: .*line 6"),
    ("unknown key", PENDULUM.replace("position", "positon"),
     r"bad\.toml: bodies\.bob\.positon: unknown key \(did you mean 'position'\?\)"),
    ("unknown table", PENDULUM.replace("[world]", "[wrold]"), r"bad\.toml: wrold: unknown table \[wrold\] \(did you mean 'world'\?\)"),
    ("negative mass", PENDULUM.replace("mass = 1.0", "mass = -1"),
     r"bad\.toml: bodies\.bob\.mass: expected a positive number in kg, got -1"),
    ("shape", PENDULUM.replace("position = [0.0, 0.0, -0.5]", "position = [0.0, -0.5]"),
     r"bad\.toml: bodies\.bob\.position: expected 3 numbers in m, got 2 values"),
    ("type", PENDULUM.replace("dt = 0.01", 'dt = "fast"'),
     r"bad\.toml: simulation\.dt: expected a positive number in s, got 'fast' \(units accepted here: s, ms, us\)"),
    ("unit", PENDULUM.replace("position = [0.0, 0.0, -0.5]", 'position = [0.0, 0.0, "-0.5 kg"]'),
     r"bodies\.bob\.position: expected 3 numbers in m, got '-0\.5 kg' \(units accepted here: m, cm, mm, um\)"),
    ("missing body", PENDULUM.replace('body2 = "bob"', 'body2 = "bobb"'),
     r"bad\.toml: joints\.hinge\.body2: names no body: 'bobb' \(did you mean 'bob'\?\); bodies: bob"),
    ("missing key", PENDULUM.replace('type = "revolute"\n', ""),
     r"bad\.toml: joints\.hinge\.type: missing required key: expected one of 'spherical', 'revolute'"),
    ("joint type", PENDULUM.replace('"revolute"', '"revolut"'),
     r"joints\.hinge\.type: expected one of .* got 'revolut' \(did you mean 'revolute'\?\)"),
    ("joint value", PENDULUM.replace("axis = [0.0, 1.0, 0.0]", "axis = [0.0, 0.0, 0.0]"),
     r"joints\.hinge\.axis: expected 3 numbers, not all zero"),
    ("inertia", PENDULUM.replace("[0.02, 0.02, 0.02]", "[0.01, 0.01, 0.05]"),
     r"bad\.toml: bodies\.bob: .*violate the triangle inequality"),
    ("no inertia", PENDULUM.replace("inertia = [0.02, 0.02, 0.02]\n", ""),
     r"bodies\.bob\.inertia: missing required key: expected 3 numbers in kg m\^2"),
    ("steps", PENDULUM.replace("duration = 1.0", "duration = 1.005"),
     r"simulation\.duration: must be a whole number of steps of dt = 0\.01 s"),
    ("empty", "[simulation]\ndt = 0.1\nduration = 1.0\n", r"bad\.toml: the file describes no model"),
    ("world body", PENDULUM.replace("[bodies.bob]", "[bodies.world]"), r"bodies\.world: 'world' is reserved"),
    ("output", PENDULUM + '[output]\nquantities = ["energi"]\n',
     r"output\.quantities: unknown quantity 'energi' \(did you mean 'energy'\?\)"),
    ("attachment body", PENDULUM + ROD + '[[attachments]]\ntype = "pin"\nrod = "r"\nbody = "bo"\nnode = "end"\n',
     r"attachments\[0\]\.body: names no body: 'bo' \(did you mean 'bob'\?\)"),
    ("attachment index", PENDULUM + ROD + '[[attachments]]\ntype = "clamp"\nrod = "r"\nbody = "bob"\nedge = 4\n',
     r"attachments\[0\]\.edge: expected \"start\", \"end\" or an index in \[-4, 3\] \(rods\.r has 4 edges\), got 4"),
    ("no attachments", PENDULUM + ROD, r"bad\.toml: rods: a file with both rigid bodies and rods couples them by "
                                       r"\[\[attachments\]\]"),
    ("load body", PENDULUM + '[[loads]]\nbody = "bobby"\nforce = [1.0, 0.0, 0.0]\n',
     r"loads\[0\]\.body: names no body: 'bobby'"),
    ("rod model", '[rods.r]\nmodel = "dre"\n', r"rods\.r\.model: expected one of 'der', 'pcs', got 'dre' \(did you mean 'der'\?\)"),
    ("rod unit", '[rods.r]\nmodel = "der"\nn_nodes = 5\nlength = 1.0\nradius = "1 kg"\n'
     'youngs_modulus = 1e6\ndensity = 1000.0\n[simulation]\ndt = 0.1\nduration = 1.0\n',
     r"rods\.r\.radius: expected a positive number in m, got '1 kg' \(units accepted here: m, cm, mm, um\)"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_file_messages(tmp_path, case):
    _, text, pattern = case
    with pytest.raises(ModelFileError, match=pattern):
        load_model(_write(tmp_path, text))


def test_attachments_build_a_hybrid_system_or_say_not_yet(tmp_path):
    """A rod pinned to the world at its start and clamped to the body at its end: a hybrid system
    where the coupling layer (jaxrod.system.hybrid) exists, else a "not yet supported" error
    naming the table."""
    text = PENDULUM.replace("[joints.hinge]", "[joints.unused]").split("[joints.unused]")[0] + ROD + (
        '[[attachments]]\ntype = "pin"\nrod = "r"\nbody = "world"\nnode = "start"\n'
        '[[attachments]]\ntype = "clamp"\nrod = "r"\nbody = "bob"\nedge = "end"\n'
        '[simulation]\ndt = 0.01\nduration = 1.0\n')
    path = _write(tmp_path, text)
    try:
        from jaxrod.system.hybrid import HybridSystem
    except ImportError:
        with pytest.raises(ModelFileError, match=r"bad\.toml: attachments\[0\]: rod-to-body attachments are not yet "
                                                 r"supported"):
            load_model(path)
        return
    loaded = load_model(path)
    assert loaded.kind == "hybrid" and isinstance(loaded.model, HybridSystem)
    assert [type(a).__name__ for a in loaded.model.attachments] == ["RodPin", "RodClamp"]
    assert (loaded.model.attachments[0].node, loaded.model.attachments[1].edge) == (0, 3)


def test_closed_loop_of_joints_is_explained(tmp_path):
    """A four-bar written with four [joints] is rejected, naming the joint that closes the loop,
    the loop itself and the fix (move it to [constraints], a planar pin)."""
    text = (EXAMPLES_DIR / "four_bar.toml").read_text().replace("[constraints.rocker_pivot]", "[joints.rocker_pivot]")
    with pytest.raises(ModelFileError, match=(
            r"bad\.toml: joints\.rocker_pivot: closes the kinematic loop world --crank_pivot--> crank "
            r"--crank_coupler--> coupler --coupler_rocker--> rocker --rocker_pivot--> world\. .*"
            r"move this table to \[constraints\.rocker_pivot\] .*planar_pin")):
        load_model(_write(tmp_path, text))


def test_find_loop_on_trees_and_cycles():
    assert find_loop([("a", "world", "1"), ("b", "1", "2"), ("c", "world", "3")]) is None
    name, cycle, members = find_loop([("a", "world", "1"), ("b", "1", "2"), ("c", "2", "1")])
    assert name == "c" and cycle == "2 --b--> 1 --c--> 2" and members == ["b", "c"]


def test_revolute_closing_a_planar_loop_is_refused(tmp_path):
    """The four-bar closed by a revolute constraint (hinges all about y) would give 3 redundant
    rows; the message says so and names the planar pin."""
    text = (EXAMPLES_DIR / "four_bar.toml").read_text().replace('type = "planar_pin"', 'type = "revolute"')
    with pytest.raises(ModelFileError, match=r"bad\.toml: constraints\.rocker_pivot\.type: \"revolute\" closes the "
                                             r"planar loop world --crank_pivot--> .* 3 of its 5 rows are redundant"):
        load_model(_write(tmp_path, text))


def test_units_and_shorthands(tmp_path):
    """"270 mm" is 0.27 m, "30 deg" pi/6; rotation = {axis, angle} builds the quaternion."""
    text = PENDULUM.replace("position = [0.0, 0.0, -0.5]", 'position = [0.0, 0.0, "-270 mm"]\n'
                            'rotation = { axis = [0.0, 2.0, 0.0], angle = "60 deg" }\nforce = ["1 kN", 0, 0]')
    loaded = load_model(_write(tmp_path, text, "ok.toml"))
    body = loaded.model.bodies[0]
    np.testing.assert_allclose(np.asarray(body.position), [0.0, 0.0, -0.27], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(body.orientation), [np.cos(np.pi / 6), 0, np.sin(np.pi / 6), 0], atol=1e-15)
    np.testing.assert_allclose(np.asarray(body.force), [1000.0, 0, 0])


def test_slider_and_cardan_joint_keys(tmp_path):
    """The prismatic/universal/planar entries of the joint registry pass their keys (with units)
    to the joint classes; a limit without stops' stiffness is the joint's own error."""
    rail = ('[joints.rail]\ntype = "prismatic"\nbody2 = "bob"\npoint = [0, 0, 0]\naxis = [0, 0, 1]\n'
            'stiffness = 200.0\nlower = "-50 mm"\nlimit_stiffness = 1e5\n')
    head, sim = PENDULUM[: PENDULUM.index("[joints.")], PENDULUM[PENDULUM.index("[simulation]"):]
    text = head + rail + sim
    joint = load_model(_write(tmp_path, text, "ok.toml")).model.joints[0]
    assert type(joint).__name__ == "Prismatic"
    assert float(joint.stiffness) == 200.0 and float(joint.lower) == -0.05 and float(joint.upper) == np.inf
    with pytest.raises(ModelFileError, match=r"joints\.rail"):
        load_model(_write(tmp_path, text.replace("limit_stiffness = 1e5\n", ""), "nolimit.toml"))
    cardan = ('[joints.cross]\ntype = "universal"\nbody2 = "bob"\npoint = [0, 0, 0]\naxis1 = [1, 0, 0]\n'
              'axis2 = [0, 1, 0]\n')
    joint = load_model(_write(tmp_path, head + cardan + sim, "u.toml")).model.joints[0]
    assert type(joint).__name__ == "Universal"


def test_scene_options_are_checked(tmp_path):
    with pytest.raises(ModelFileError, match=r"rods\.r\.n_point: not an option of scene 'till-benchmark' "
                                             r"\(did you mean 'n_points'\?\)"):
        load_model(_write(tmp_path, '[rods.r]\nscene = "till-benchmark"\nn_point = 11\n'))
    with pytest.raises(ModelFileError, match=r"world\.gravity: rods\.r is a built-in scene, which sets its own gravity"):
        load_model(_write(tmp_path, '[world]\ngravity = [0, 0, -9.81]\n[rods.r]\nscene = "helix-b1"\n'))


def test_missing_file_lists_the_examples():
    with pytest.raises(ModelFileError, match=r"nope\.toml: no such file \(shipped examples: .*pendulum\.toml"):
        load_model("nope.toml")


def test_cli_reports_a_bad_file_without_importing_models(tmp_path):
    """``jaxrod simulate bad.toml``: one error line naming file, table and key, exit status 2, and
    no model package, simulator or equinox imported (a fresh interpreter)."""
    bad = _write(tmp_path, PENDULUM.replace("mass = 1.0", "mass = -1"))
    code = f"""
        import contextlib, io, json, sys
        import jaxrod.cli
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = jaxrod.cli.main(["simulate", {str(bad)!r}])
        heavy = sorted(m for m in sys.modules if m.startswith(("jaxrod.models", "jaxrod.integrate", "jaxrod.system",
                                                               "equinox", "matplotlib")))
        print(json.dumps({{"rc": rc, "err": err.getvalue(), "heavy": heavy}}))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["rc"] == 2 and r["heavy"] == []
    assert r["err"].strip() == f"error: {bad}: bodies.bob.mass: expected a positive number in kg, got -1"


def test_cli_rejects_scene_options_for_a_file(capsys):
    import jaxrod.cli

    assert jaxrod.cli.main(["simulate", "pendulum.toml", "--n-nodes", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --n-nodes apply to built-in scenes; a model file sets them in its tables")
