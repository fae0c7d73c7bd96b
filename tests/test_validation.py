"""Bad input raises clear errors naming the parameter and the allowed range."""

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
