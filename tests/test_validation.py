"""Bad input raises clear errors naming the parameter, its value and what is allowed; checks run
on concrete values before anything compiles and are skipped for traced values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrod
from jaxrod import DERModel, DERRod
from jaxrod.scenes import get_scene

GOOD = dict(youngs_modulus=1e6, density=1000.0, radius=0.01)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"youngs_modulus": -1.0}, r"youngs_modulus must be > 0 Pa"),
        ({"youngs_modulus": 0.0}, r"youngs_modulus must be > 0 Pa"),
        ({"density": 0.0}, r"density must be > 0 kg/m\^3"),
        ({"radius": -0.01}, r"radius must be > 0 m"),
        ({"youngs_modulus": float("nan")}, r"youngs_modulus must be finite"),
        ({"density": float("inf")}, r"density must be finite"),
        ({"poisson_ratio": 0.7}, r"poisson_ratio must be finite and in \(-1.0, 0.5\]"),
        ({"shear_modulus": -5.0}, r"shear_modulus must be > 0 Pa"),
    ],
)
def test_bad_material(kw, match):
    with pytest.raises(ValueError, match=match):
        DERRod.straight(5, 1.0, **{**GOOD, **kw})


def test_bad_geometry():
    with pytest.raises(ValueError, match=r"at least 3 nodes \(n_nodes >= 3\), got 2"):
        DERRod.straight(2, 1.0, **GOOD)
    with pytest.raises(ValueError, match=r"length must be > 0 m"):
        DERRod.straight(5, -1.0, **GOOD)
    with pytest.raises(ValueError, match=r"points must have shape \(any, 3\), got \(4, 2\)"):
        DERRod.from_polyline(np.zeros((4, 2)), **GOOD)
    with pytest.raises(ValueError, match=r"points must be finite"):
        DERRod.from_polyline(np.array([[0, 0, 0], [1, 0, 0], [np.nan, 0, 0]]), **GOOD)
    with pytest.raises(ValueError, match=r"zero-length edges at indices \[1\]"):
        DERRod.from_polyline(np.array([[0, 0, 0], [1, 0, 0], [1, 0, 0], [2, 0, 0]]), **GOOD)
    with pytest.raises(ValueError, match=r"helix_radius must be > 0 m"):
        DERRod.helix(10, helix_radius=0.0, pitch=0.05, contour_length=0.5, **GOOD)
    rod = DERRod.straight(5, 1.0, **GOOD)
    with pytest.raises(ValueError, match=r"natural_curvature must have shape \(3, 2\), got \(5, 2\)"):
        DERRod.from_polyline(np.asarray(rod.rest_positions), natural_curvature=np.zeros((5, 2)), **GOOD)


def test_bad_model_inputs():
    rod = DERRod.straight(5, 1.0, **GOOD)
    with pytest.raises(ValueError, match=r"clamped_edges: edge index 4 does not exist \(valid: 0..3"):
        DERModel(rod, clamped_edges=(4,))
    with pytest.raises(ValueError, match=r"fixed_nodes: node index 7 does not exist \(valid: 0..4"):
        DERModel(rod, fixed_nodes=(0, 7))
    with pytest.raises(ValueError, match=r"point_forces must have shape \(5, 3\), got \(4, 3\)"):
        DERModel(rod, point_forces=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"gravity must have shape \(3,\)"):
        DERModel(rod, gravity=(0.0, -9.8))
    with pytest.raises(ValueError, match=r"damping must be >= 0"):
        DERModel(rod, damping=-1.0)
    with pytest.raises(ValueError, match=r"point_forces must be finite"):
        DERModel(rod, point_forces=np.full((5, 3), np.nan))
    with pytest.raises(ValueError, match=r"v0 must have shape \(5, 4\)"):
        DERModel(rod, v0=np.zeros((5, 3)))


def test_bad_run_settings():
    model = DERModel(DERRod.straight(5, 1.0, **GOOD), clamped_edges=(0,))
    with pytest.raises(ValueError, match=r"dt must be a finite number > 0, got -0.1"):
        jaxrod.simulate(model, dt=-0.1, n_steps=2)
    with pytest.raises(ValueError, match=r"give either n_steps or duration"):
        jaxrod.simulate(model, dt=0.1)
    with pytest.raises(ValueError, match=r"load_steps must be >= 1"):
        jaxrod.solve_static(model, load_steps=0)
    with pytest.raises(ValueError, match=r"unknown scene 'nope'; available: "):
        get_scene("nope")
    with pytest.raises(ValueError, match=r"unknown time scheme 'rk4'"):
        jaxrod.scheme_from_name("rk4")
    with pytest.raises(ValueError, match=r"max_steps must be >= 1"):
        jaxrod.NewtonSolver(max_steps=0)
    with pytest.raises(ValueError, match=r"chord_restart must be >= 1"):
        jaxrod.NewtonSolver(chord_restart=0)


def test_unconverged_static_solve_is_reported():
    scene = get_scene("cantilever-static", n_nodes=11, load_parameter=5.0)
    solver = jaxrod.NewtonSolver(linear_solver=None, max_steps=2)
    with pytest.raises(jaxrod.ConvergenceError, match=r"static equilibrium did not converge: residual max-norm"):
        jaxrod.solve_static(scene.model, solver=solver, load_steps=1)


# ---------------------------------------------------------------------------------------------
# issue 12: the bad inputs an outside review found accepted or answered obscurely. Every error
# names the parameter, its value and what is allowed; all are raised before anything compiles.
# ---------------------------------------------------------------------------------------------
from jaxrod.calibrate import Objective, Parameter, ParamSet, fit, load_markers  # noqa: E402
from jaxrod.models.der.contact import FloorContact, RodRodContact  # noqa: E402
from jaxrod.models.pcs.model import PCSModel, PCSRod  # noqa: E402
from jaxrod.integrate.schemes import resolve_scheme  # noqa: E402
from jaxrod.validation import check_int, check_int_sequence  # noqa: E402

PCS_GOOD = dict(youngs_modulus=1e6, density=1000.0)


@pytest.fixture(scope="module")
def der_model():
    return DERModel(DERRod.straight(5, 1.0, **GOOD), clamped_edges=(0,))


def test_integers_are_checked_as_integers_not_truncated(der_model):
    rod = DERRod.straight(5, 1.0, **GOOD)
    with pytest.raises(TypeError, match=r"n_nodes must be an integer, got 3\.7 \(float\)"):
        DERRod.straight(3.7, 1.0, **GOOD)
    with pytest.raises(TypeError, match=r"n_nodes must be an integer, got 12\.0 \(float\)"):
        DERRod.helix(12.0, helix_radius=0.02, pitch=0.05, contour_length=0.5, **GOOD)
    with pytest.raises(TypeError, match=r"clamped_edges\[0\] must be an integer, got 1\.5 \(float\)"):
        DERModel(rod, clamped_edges=(1.5,))
    with pytest.raises(TypeError, match=r"fixed_nodes\[1\] must be an integer, got 2\.0"):
        DERModel(rod, fixed_nodes=(0, 2.0))
    with pytest.raises(TypeError, match=r"n_steps must be an integer >= 1, got 2\.7 \(float\)"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2.7)
    with pytest.raises(TypeError, match=r"save_every must be an integer >= 1, got 2\.0 \(float\)"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, save_every=2.0)
    with pytest.raises(TypeError, match=r"load_steps must be an integer >= 1, got 1\.5"):
        jaxrod.solve_static(der_model, load_steps=1.5)
    with pytest.raises(TypeError, match=r"n_segments must be an integer >= 1, got 2\.5 \(float\)"):
        PCSRod.circular(0.1, 2.5, 0.01, **PCS_GOOD)
    from jaxrod.models.pcs.explicit import simulate_explicit

    pcs_model = PCSModel(PCSRod.circular(0.1, 2, 0.01, **PCS_GOOD))
    with pytest.raises(TypeError, match=r"n_steps must be an integer >= 1, got 10\.0 \(float\)"):
        simulate_explicit(pcs_model, dt=1e-4, n_steps=10.0)
    with pytest.raises(TypeError, match=r"exclude_neighbours must be an integer, got 3\.5"):
        RodRodContact(exclude_neighbours=3.5)
    # scene builders: resolutions are integers too
    for name, kw in (("cantilever-static", {"n_nodes": 3.7}), ("helix-b1", {"n_helix": 30.0}),
                     ("rod-coiling", {"n_nodes": 21.5}), ("network-spider", {"n_nodes": 5.5}),
                     ("network-two-limb", {"n_nodes": 6.5})):
        key = next(iter(kw))
        with pytest.raises(TypeError, match=rf"{key} must be an integer >= \d, got {kw[key]} \(float\)"):
            get_scene(name, **kw)
    # integer types of every kind are accepted (NumPy scalars and arrays of indices too); bools are not
    assert DERRod.straight(np.int64(4), 1.0, **GOOD).n_nodes == 4
    assert DERModel(rod, clamped_edges=np.array([0, -1])).fixed_edges == (0, 3)
    assert check_int("n", np.array(3)) == 3 and check_int_sequence("idx", np.int32(2)) == (2,)
    assert check_int("n", jnp.asarray(5)) == 5
    with pytest.raises(TypeError, match=r"n must be an integer, got Array\(5\."):
        check_int("n", jnp.asarray(5.0))
    with pytest.raises(TypeError, match=r"n_steps must be an integer, got True \(bool\)"):
        check_int("n_steps", True)


def test_wrong_shapes_are_refused():
    with pytest.raises(ValueError, match=r"radius must be a scalar \(one value\), got shape \(2,\) \(\[0\.01, 0\.02\]\)"):
        DERRod.straight(5, 1.0, youngs_modulus=1e6, density=1000.0, radius=[0.01, 0.02])
    with pytest.raises(ValueError, match=r"youngs_modulus must be a scalar \(one value\), got shape \(5,\)"):
        DERRod.straight(5, 1.0, youngs_modulus=np.full(5, 1e6), density=1000.0, radius=0.01)
    with pytest.raises(ValueError, match=r"youngs_modulus must be a scalar \(one value\), got shape \(5,\)"):
        PCSRod.circular(0.1, 2, 0.01, youngs_modulus=np.full(5, 1e6), density=1000.0)
    with pytest.raises(ValueError, match=r"radius \[m\] must be a scalar \(one value\), got shape \(2,\)"):
        PCSRod.circular(0.1, 2, [0.01, 0.02], **PCS_GOOD)
    with pytest.raises(ValueError, match=r"youngs_modulus must be a scalar \(one value\), got shape \(5,\)"):
        jaxrod.CosseratRod.circular(1.0, 0.01, youngs_modulus=np.full(5, 1e6), density=1000.0)
    with pytest.raises(ValueError, match=r"stiffness must be a scalar \(one value\), got shape \(3,\)"):
        FloorContact(stiffness=[1e4, 1e4, 1e4])
    with pytest.raises(ValueError, match=r"stiffness must be a scalar \(one value\), got shape \(3,\)"):
        RodRodContact(stiffness=[1e4, 1e4, 1e4])
    with pytest.raises(ValueError, match=r"offset \[m\] must be a scalar"):
        FloorContact(offset=(0.0, 0.0))


def test_nan_is_refused(der_model):
    rod = DERRod.straight(5, 1.0, **GOOD)
    with pytest.raises(ValueError, match=r"t0 \[s\] must be a finite number, got nan"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, t0=float("nan"))
    with pytest.raises(ValueError, match=r"load_factor must be a finite number, got nan"):
        DERModel(rod, load_factor=float("nan"))
    prod = PCSRod.circular(0.1, 2, 0.01, **PCS_GOOD)
    with pytest.raises(ValueError, match=r"base_position must be finite; non-finite entries at indices \[\[0\]\]"):
        PCSModel(prod, base_position=(np.nan, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"load_factor must be a finite number, got inf"):
        PCSModel(prod, load_factor=np.inf)
    # with_natural_curvature copies with eqx.tree_at, which skips __check_init__: checked itself
    with pytest.raises(ValueError, match=r"natural_curvature must be finite"):
        rod.with_natural_curvature(np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match=r"natural_curvature must have shape \(3, 2\), got \(4, 2\)"):
        rod.with_natural_curvature(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"natural_curvature must be finite"):
        DERRod.from_polyline(np.asarray(rod.rest_positions), natural_curvature=np.full((3, 2), np.nan), **GOOD)


def test_input_that_would_be_ignored_is_refused(der_model):
    with pytest.raises(ValueError, match=r"n_steps = 2 and duration = 5\.0 s disagree at dt = 0\.1 s"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, duration=5.0)
    with pytest.raises(ValueError, match=r"duration = 0\.01 s is less than half a step"):
        jaxrod.simulate(der_model, dt=0.1, duration=0.01)
    params = ParamSet([Parameter("E", 1e6), Parameter("rho", 1e3, fixed=True)])
    objective = Objective(lambda v, d: jnp.zeros(1), params)
    with pytest.raises(ValueError, match=r"start gives unknown parameter names \['typo'\]; known parameters: \['E', 'rho'\]"):
        fit(objective, start={"typo": 1.0}, verbose=False)
    with pytest.raises(ValueError, match=r"new values for the fixed parameters \['rho'\]"):
        fit(objective, start={"E": 2e6, "rho": 2e3}, verbose=False)
    assert objective.n_evaluations == 0  # refused before any evaluation


def test_degenerate_states_are_refused():
    rod = DERRod.straight(5, 1.0, **GOOD)
    with pytest.raises(ValueError, match=r"q0 \(node positions\) has coincident consecutive nodes \(zero-length edges at indices \[0, 1, 2, 3\]\)"):
        DERModel(rod, q0=np.zeros((5, 4)))
    folded = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0.5, 0, 0, 0], [1.5, 0, 0, 0], [2.5, 0, 0, 0]], float)
    with pytest.raises(ValueError, match=r"q0 \(node positions\) folds back on itself \(180 degree turn\) at nodes \[1, 2\]"):
        DERModel(rod, q0=folded)
    with pytest.raises(ValueError, match=r"rest_strain\[:, 3\] \(axial rest stretch, 1 for an unstretched segment\) must be > 0; segments \[0, 1\]"):
        PCSRod.circular(0.1, 2, 0.01, **PCS_GOOD, rest_strain=np.zeros((2, 6)))
    prod = PCSRod.circular(0.1, 2, 0.01, **PCS_GOOD)
    with pytest.raises(ValueError, match=r"points_per_segment must be >= 1, got 0"):
        PCSModel(prod, points_per_segment=0)
    with pytest.raises(ValueError, match=r"handedness must be \+1 \(right-handed\) or -1 \(left-handed\), got 2"):
        DERRod.helix(10, helix_radius=0.02, pitch=0.05, contour_length=0.5, handedness=2, **GOOD)


def test_network_degenerate_state_and_nan_load_factor_are_refused():
    from jaxrod.models.der.model import DERNetwork, Joint

    a = DERRod.straight(4, 0.3, **GOOD)
    b = DERRod.straight(4, 0.3, start=(0.3, 0.0, 0.0), **GOOD)
    joints = [Joint(host=(0, -1), attached=[(1, 0)])]
    with pytest.raises(ValueError, match=r"load_factor must be a finite number, got nan"):
        DERNetwork([a, b], joints, load_factor=float("nan"))
    net = DERNetwork([a, b], joints)
    q0 = np.asarray(net.q0).copy()
    q0[2, :3] = q0[1, :3]  # nodes 1 and 2 of limb 0 coincide: edge 1 has zero length
    with pytest.raises(ValueError, match=r"q0 \(node positions\) has coincident nodes: zero-length edges \[1\]"):
        DERNetwork([a, b], joints, q0=q0)


def test_obscure_errors_become_clear(der_model, tmp_path):
    # a scheme given by name is accepted (the CLI's names); other things are refused by name
    assert isinstance(resolve_scheme("backward_euler"), jaxrod.BackwardEuler)
    with pytest.raises(ValueError, match=r"unknown time scheme 'backwards_euler'; choose one of \[.*'backward_euler'"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, scheme="backwards_euler")
    with pytest.raises(TypeError, match=r"scheme must be a scheme instance, e\.g\. BackwardEuler\(\), got the class"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, scheme=jaxrod.BackwardEuler)
    with pytest.raises(TypeError, match=r"scheme must be a time scheme .* got 5 \(int\)"):
        jaxrod.simulate(der_model, dt=0.1, n_steps=2, scheme=5)
    with pytest.raises(TypeError, match=r"ParamSet parameters\[0\] must be a Parameter .* got 'E' \(str\)"):
        ParamSet(["E"])
    with pytest.raises(TypeError, match=r"ParamSet takes a sequence of Parameter objects, got 'E'"):
        ParamSet("E")
    # a binary file given to the CSV marker loader
    binary = tmp_path / "markers.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"markers\.csv: not a text CSV file \(byte 128 is not UTF-8 text\)"):
        load_markers(binary)
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"t,a_x\n0,\x001\n")
    with pytest.raises(ValueError, match=r"nul\.csv: not a text CSV file \(NUL byte on line 2\)"):
        load_markers(nul)
    # NPZ members whose .npy header asks for 8 TiB (numpy: MemoryError) or is 20 kB long
    # (numpy: ValueError suggesting allow_pickle): one clear ValueError naming the file
    huge_shape = _npz_with_member(tmp_path / "huge_shape.npz", _npy_header("(1099511627776,)"))
    with pytest.raises(ValueError, match=r"huge_shape\.npz: not a readable \.npz file \(an array header asks for more memory"):
        load_markers(huge_shape)
    huge_header = _npz_with_member(tmp_path / "huge_header.npz", _npy_header("(1,)", pad=20000, version=2) + bytes(8))
    with pytest.raises(ValueError, match=r"huge_header\.npz: not a readable \.npz file \(an array header is invalid or too large"):
        load_markers(huge_header)


def _npy_header(shape: str, pad: int = 0, version: int = 1) -> bytes:
    """Raw ``.npy`` bytes: magic, version, header length, a float64 header for ``shape`` (no data)."""
    import struct

    h = ("{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }" + " " * pad).encode("latin1")
    size = 10 if version == 1 else 12
    h += b" " * ((64 - (size + len(h) + 1) % 64) % 64) + b"\n"
    length = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h


def _npz_with_member(path, npy: bytes):
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("t.npy", npy)
        z.writestr("positions.npy", npy)
    return path


def test_checks_skip_traced_values_and_do_not_break_tracing():
    """Value checks are skipped for tracers (shapes still checked): building a model inside jit
    works, and its arrays stay differentiable."""

    @jax.jit
    def tip_mass(radius, load_factor):
        rod = DERRod.straight(5, 1.0, youngs_modulus=1e6, density=1000.0, radius=radius)
        model = DERModel(rod, clamped_edges=(0,), load_factor=load_factor)
        return model.load_factor * rod.node_masses()[-1]

    r = 0.01
    expected = 1000.0 * np.pi * r**2 * 0.125  # tip Voronoi length: half an edge of 0.25 m
    assert float(tip_mass(r, 2.0)) == pytest.approx(2 * expected, rel=1e-12)
    with pytest.raises(ValueError, match=r"radius must be a scalar"):
        jax.jit(lambda r: DERRod.straight(5, 1.0, youngs_modulus=1e6, density=1000.0, radius=r))(jnp.ones(2))
