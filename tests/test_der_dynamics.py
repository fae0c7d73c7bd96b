"""DER dynamics against theory and against another code path.

* a1 cantilever geometry (shortened run, coarser mesh): first-mode frequency within 1% of
  Euler-Bernoulli; implicit midpoint keeps the amplitude (decay < 1% over 5 periods); implicit
  Euler damps it by its analytical factor (1 + (omega dt)^2)^(-1/2) per step, within 5%.
* b1 helix geometry (fewer nodes, with viscous damping): the damped end state equals the static
  equilibrium computed by the static solver (a different code path) to 1e-6 m.
"""

import numpy as np
import pytest

import jaxrod
from jaxrod.analysis import oscillation_period
from jaxrod.scenes import dynamic_cantilever, helix

# 21 nodes: the cantilever-a1 of tests/test_cli.py and of the quickstart notebook, so the midpoint
# time loop is compiled once for the three (the same program: the step count and dt are arrays).
# Measured at 21 nodes: period +0.17 %, first amplitude +0.10 %, midpoint decay -0.04 %, backward
# Euler's factor -0.01 % (2026-11-27)
N_NODES = 21
PERIODS = 5


@pytest.fixture(scope="module")
def cantilever():
    scene = dynamic_cantilever("a1", n_nodes=N_NODES)
    T = PERIODS * scene.reference["period_s"]
    runs = {}
    for name, scheme in [("midpoint", jaxrod.ImplicitMidpoint()), ("euler", jaxrod.BackwardEuler())]:
        traj = jaxrod.simulate(scene.model, dt=0.25, duration=T, scheme=scheme)
        runs[name] = (np.asarray(traj.times), np.asarray(traj.tip[:, 2]))
    return scene, runs


def test_first_mode_frequency_matches_euler_bernoulli(cantilever):
    scene, runs = cantilever
    t, z = runs["midpoint"]
    period = oscillation_period(t, z)
    assert abs(period / scene.reference["period_s"] - 1) < 0.01


def test_implicit_midpoint_keeps_amplitude(cantilever):
    scene, runs = cantilever
    t, z = runs["midpoint"]
    P = scene.reference["period_s"]
    first = np.max(np.abs(z[t < P]))
    last = np.max(np.abs(z[t > (PERIODS - 1) * P]))
    assert abs(first / scene.reference["tip_amplitude_m"] - 1) < 0.01
    assert abs(last / first - 1) < 0.01


def test_backward_euler_damps_numerically(cantilever):
    scene, runs = cantilever
    t, z = runs["euler"]
    P = scene.reference["period_s"]
    i1 = np.argmax(np.abs(z) * (t < P))
    i2 = np.argmax(np.abs(z) * (t > (PERIODS - 1) * P))
    # backward Euler multiplies a linear mode's amplitude by |1/(1 - i omega dt)| = (1 + (omega dt)^2)^(-1/2)
    # every step; omega from the undamped (midpoint) run's measured period
    omega = 2 * np.pi / oscillation_period(*runs["midpoint"])
    dt = t[1] - t[0]
    predicted = (1 + (omega * dt) ** 2) ** (-(t[i2] - t[i1]) / (2 * dt))
    measured = abs(z[i2] / z[i1])
    assert predicted < 0.3  # the damping is strong enough to measure
    assert abs(measured / predicted - 1) < 0.05, (measured, predicted)


@pytest.mark.slow
def test_damped_helix_settles_on_static_equilibrium():
    scene = helix("b1", n_helix=30, damping=2.0)
    model = scene.model
    traj = jaxrod.simulate(model, dt=0.01, duration=6.0, scheme=jaxrod.BackwardEuler(), save_every=50)
    static_state, result = jaxrod.solve_static(model, load_steps=4)
    assert bool(result.converged)
    dyn = np.asarray(traj.positions[-1])
    sta = np.asarray(static_state.q[:, :3])
    # the helix really deforms under gravity (so the comparison means something)
    assert np.max(np.abs(sta - np.asarray(model.q0[:, :3]))) > 1e-3
    assert np.max(np.abs(dyn - sta)) < 1e-6, np.max(np.abs(dyn - sta))
