"""DER static equilibria against closed forms: small-load cantilever (Euler-Bernoulli) and the
large-deflection elastica (planar BVP solved independently with scipy in this file)."""

import numpy as np
import pytest
from scipy.integrate import solve_bvp

import jaxrod
from jaxrod.scenes import cantilever_static

N_NODES = 41
LOAD_STEPS = 8  # same for every case so all share one compiled program


def elastica_tip(alpha):
    """Tip (x/L, deflection/L) of an inextensible cantilever under a dead tip load with
    alpha = P L^2 / EI: theta'' = -alpha cos(theta), theta(0) = 0, theta'(1) = 0."""
    s = np.linspace(0.0, 1.0, 401)

    def rhs(s, y):  # y = (theta, theta', x, z)
        return np.vstack([y[1], -alpha * np.cos(y[0]), np.cos(y[0]), np.sin(y[0])])

    def bc(ya, yb):
        return np.array([ya[0], yb[1], ya[2], ya[3]])

    guess = np.zeros((4, s.size))
    guess[2] = s
    sol = solve_bvp(rhs, bc, s, guess, tol=1e-10, max_nodes=100000)
    assert sol.success
    return sol.y[2, -1], sol.y[3, -1]


def _solve(alpha):
    scene = cantilever_static(N_NODES, load_parameter=alpha)
    state, result = jaxrod.solve_static(scene.model, load_steps=LOAD_STEPS)
    assert bool(result.converged)
    return scene, np.asarray(state.q[:, :3])


def test_elastica_reference_matches_published_table():
    # Bisshopp & Drucker values (BENCHMARKS.md G) validate the reference solver itself
    x, z = elastica_tip(5.0)
    assert abs(x - 0.612372) < 2e-6 and abs(z - 0.713792) < 2e-6


def test_small_load_tip_deflection_matches_euler_bernoulli():
    scene, pos = _solve(0.03)
    deflection = -pos[-1, 2]
    expected = scene.reference["tip_deflection_small_m"]
    assert abs(deflection / expected - 1) < 0.01, deflection / expected


@pytest.mark.parametrize("alpha", [1.0, 5.0])
def test_large_deflection_matches_elastica(alpha):
    _, pos = _solve(alpha)
    x_ref, z_ref = elastica_tip(alpha)
    L = 1.0
    assert abs(pos[-1, 0] - x_ref * L) < 0.005 * L
    assert abs(-pos[-1, 2] - z_ref * L) < 0.005 * z_ref * L
    # the shape is planar: no out-of-plane motion
    assert np.max(np.abs(pos[:, 1])) < 1e-12
