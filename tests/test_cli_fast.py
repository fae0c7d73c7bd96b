"""An instant command line: ``--help``, argument errors, unknown scenes and ``jaxrod scenes`` import
no model package, no simulator, no case study and no plotting library (checked on ``sys.modules``
of a fresh interpreter, not by timing); ``import jaxrod`` stays as light as ``import jax`` while
every public name still resolves on first use."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import jaxrod

# modules whose import is what made --help take 25-50 s on a busy machine
HEAVY = ("jaxrod.models", "jaxrod.integrate", "jaxrod.cases.soft_limb", "jaxrod.cases.weight_release",
         "jaxrod.calibrate", "jaxrod.plot", "matplotlib", "optax", "equinox")


def _fresh(code):
    """Run ``code`` in a new interpreter; the JSON object it prints last."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


CASES = [
    (["--help"], 0, "out", "simulate"),
    (["calibrate", "soft-limb", "--help"], 0, "out", "--baseline"),
    (["calibrate", "weight-release", "--help"], 0, "out", "--fine"),
    (["simulate", "cantilever-a1", "--dt", "-1"], 2, "err", "--dt: must be a finite number > 0"),
    (["simulate", "cantilever-a1", "--scheme", "rk4"], 2, "err", "--scheme"),
    (["calibrate", "weight-release", "--no-such-option"], 2, "err", "--no-such-option"),
    (["simulate", "no-such-scene"], 2, "err", "available: cantilever-static, cantilever-a1"),
    (["scenes"], 0, "out", "network-gripper"),
]


@pytest.fixture(scope="module")
def cli_runs():
    """Every argv of :data:`CASES` through ``jaxrod.cli.main`` in one new interpreter, in order, with
    the modules loaded after each (one interpreter: each start costs about ``import jax``)."""
    result, _ = _fresh(f"""
        import contextlib, io, json, sys
        import jaxrod.cli
        runs = []
        for argv in {[c[0] for c in CASES]!r}:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = jaxrod.cli.main(argv)
            runs.append({{"rc": rc, "out": out.getvalue(), "err": err.getvalue(), "modules": sorted(sys.modules)}})
        print(json.dumps(runs))
    """)
    return result


def _heavy(modules):
    return sorted(m for m in modules if m.startswith(HEAVY))


@pytest.mark.parametrize("i", range(len(CASES)), ids=[" ".join(c[0]) for c in CASES])
def test_answers_without_importing_the_simulator(cli_runs, i):
    argv, rc, stream, fragment = CASES[i]
    r = cli_runs[i]
    assert r["rc"] == rc, r["err"]
    assert fragment in r[stream]
    assert _heavy(r["modules"]) == []
    # the scene modules (and the models behind them) load only when a scene is built
    assert not any(m.startswith("jaxrod.scenes.") and m != "jaxrod.scenes.registry" for m in r["modules"])


def test_scenes_lists_the_registry(cli_runs):
    """One line per scene: name, static description, [static | dt = .. s, T = .. s]."""
    from jaxrod.scenes.registry import REGISTRY

    lines = cli_runs[[c[0] for c in CASES].index(["scenes"])]["out"].strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list(REGISTRY)
    by_name = dict(zip(REGISTRY, lines))
    assert by_name["cantilever-static"].endswith("[static]")
    assert by_name["cantilever-a1"].endswith("[dt = 0.5 s, T = 100 s]")
    assert REGISTRY["network-gripper"].description in by_name["network-gripper"]


def test_python_m_jaxrod_help_is_the_entry_point():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-m", "jaxrod", "--help"], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: jaxrod")


def test_import_jaxrod_is_light_and_every_public_name_resolves():
    result, _ = _fresh("""
        import json, sys, types
        import jax
        import jaxrod
        light = sorted(m for m in sys.modules if m.startswith("jaxrod"))
        x64 = bool(jax.config.jax_enable_x64)
        # importing the integration package first (as the CLI does) leaves jaxrod.simulate the function
        from jaxrod.integrate import solve_static
        sim_is_function = isinstance(jaxrod.simulate, types.FunctionType)
        from jaxrod import DERModel, NewtonSolver, scenes
        names = {n: type(getattr(jaxrod, n)).__name__ for n in jaxrod.__all__}
        print(json.dumps({"light": light, "x64": x64, "sim_is_function": sim_is_function, "names": names,
                          "dir": sorted(set(jaxrod.__all__) - set(dir(jaxrod)))}))
    """)
    assert result["light"] == ["jaxrod", "jaxrod._lazy", "jaxrod.config"]  # config: the compilation cache, set at import
    assert result["x64"]
    assert result["sim_is_function"]
    assert result["names"]["geometry"] == result["names"]["scenes"] == "module"
    assert result["names"]["simulate"] == "function"
    assert result["dir"] == []
    # the same objects as the defining modules (in this process, where everything is imported)
    from jaxrod.models.der import DERModel
    from jaxrod.integrate.schemes import BDF2

    assert jaxrod.DERModel is DERModel and jaxrod.BDF2 is BDF2 and callable(jaxrod.simulate)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        jaxrod.no_such_name  # noqa: B018
