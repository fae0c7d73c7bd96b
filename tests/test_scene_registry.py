"""The scene registry (:mod:`jaxrod.scenes.registry`) against the scenes its builders return.

``jaxrod scenes`` prints the registry's static text and defaults without building anything, so
each entry's name, static flag and default time step and duration must be what the builder itself
returns. The builders run at tiny resolutions (the resolution changes neither the name nor the run
settings); nothing is simulated or compiled.
"""

import pytest

from jaxrod import scenes
from jaxrod.datasets.stiff_flop import find_data_dir as stiff_flop_data_dir
from jaxrod.scenes.registry import REGISTRY

# smallest resolution overrides; ``None``: the builder's defaults are already cheap
_SMALL = {
    "cantilever-static": {"n_nodes": 5},
    "cantilever-a1": {"n_nodes": 5},
    "cantilever-a2": {"n_nodes": 5},
    "helix-b1": {"n_helix": 5},
    "helix-b2": {"n_helix": 5},
    "till-benchmark": {"n_points": 10, "integrator": "euler"},
    "till-weight-release": {"n_points": 10, "integrator": "euler"},
    "till-impulse": {"n_points": 10, "integrator": "euler"},
    "tendon-robot-step": {"n_points": 10, "integrator": "euler"},
    "tendon-object-transfer": {"n_points": 10},
    "fluidic-finger": {"n_points": 10},
    "fluidic-finger-water": {"n_points": 10},
    "pcs-silicone": {"n_segments": 1},
    "pcs-cfrp": {},
    "friction-validation": {"n_nodes": 5},
    "rod-drop": {"n_nodes": 5},
    "rod-coiling": {"n_nodes": 11},
    "network-spider": {"n_nodes": 3},
    "network-two-limb": {"n_nodes": 3},
    "network-gripper": {"n_fingers": 2, "n_nodes": 12, "phi_range_deg": (0.0, 10.0)},
    "sleeve-pendulum": {},  # the builder simulates the pendulum it replays
    "stiff-flop-passive": {"n_segments": 1},
    "stiff-flop": {"n_segments": 1},  # reads shared/data/stiff-flop (skipped without it)
    "snake-undulation-ortho": {"n_links": 3},
    "snake-undulation-iso": {"n_links": 3},
    "snake-sidewinding": {"n_links": 3},
    "der-snake": {"n_nodes": 5},
    "stewart-gough": {"n_points": 16, "actuated_frames": 2, "end": (-0.02, 0.0, 0.5)},
}
# seconds each even when small (settling solves, network assembly): run with the slow tests
_SLOW = {"network-spider", "network-two-limb", "network-gripper", "friction-validation", "sleeve-pendulum",
         "stiff-flop", "stewart-gough"}  # stewart-gough: inverse statics compiled


def test_registry_lists_every_scene_once_with_one_line_of_static_text():
    assert list(scenes.SCENES) == list(REGISTRY) == list(_SMALL)
    for name, info in REGISTRY.items():
        assert info.name == name
        assert info.description and "\n" not in info.description and len(info.description) <= 100
        if info.static:
            assert info.dt is None and info.duration is None
        else:
            assert info.dt > 0 and info.duration >= info.dt


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in _SMALL]
)
def test_registry_matches_the_built_scene(name):
    info = REGISTRY[name]
    if name == "stiff-flop" and stiff_flop_data_dir() is None:
        pytest.skip("STIFF-FLOP data not found (shared/data/stiff-flop)")
    scene = scenes.get_scene(name, **_SMALL[name])
    assert scene.name == name
    assert scene.static == info.static
    if not info.static:
        # rod-coiling's duration is 0.7 L / v: 7 s up to rounding
        assert scene.dt == pytest.approx(info.dt, rel=1e-12)
        assert scene.duration == pytest.approx(info.duration, rel=1e-12)


def test_scenes_mapping_and_lazy_names_keep_working():
    """``SCENES[name](**kw)`` builds (as the old lambdas did), the builders stay importable from
    :mod:`jaxrod.scenes`, and an unknown name lists the available ones."""
    sc = scenes.SCENES["cantilever-a2"](n_nodes=5)
    assert sc.name == "cantilever-a2" and sc.dt == REGISTRY["cantilever-a2"].dt
    from jaxrod.scenes import BETA_L, cantilever_static, dynamic_cantilever, helix, straddled_cantilever_points

    assert callable(cantilever_static) and callable(dynamic_cantilever) and callable(helix)
    assert BETA_L[0] == pytest.approx(1.8751040687, rel=1e-9)
    assert straddled_cantilever_points(5, 1.0).shape == (5, 3)
    assert scenes.contact.rod_drop is REGISTRY["rod-drop"].load()
    with pytest.raises(ValueError, match=r"unknown scene 'nope'; available: .*cantilever-a1"):
        scenes.get_scene("nope")
