"""Progress messages (jaxrod.progress): heartbeats during slow phases, compile announcements
before the first step, one line per static load step, and silence when progress is off."""

import io
import re
import time

import numpy as np
import pytest

from jaxrod import progress


def test_heartbeat_fires_while_a_phase_is_quiet():
    out = io.StringIO()
    with progress.activity("waiting for the test", stream=out, interval=0.15, announce="waiting starts"):
        time.sleep(0.8)
    lines = out.getvalue().splitlines()
    assert lines[0] == "waiting starts"
    beats = [ln for ln in lines[1:] if ln.startswith("  ... still waiting for the test: ")]
    assert len(beats) >= 3, lines
    assert len(beats) == len(lines) - 1


def test_heartbeat_stays_quiet_while_lines_are_printed():
    # progress lines count as output: no heartbeat while they come faster than the interval
    out = io.StringIO()
    with progress.activity("busy", stream=out, interval=0.4):
        for k in range(8):
            progress.say(f"line {k}", out)
            time.sleep(0.1)
    assert "still busy" not in out.getvalue()


def test_only_the_innermost_phase_speaks():
    out = io.StringIO()
    with progress.activity("outer", stream=out, interval=0.15):
        with progress.activity("inner", stream=out, interval=0.15):
            time.sleep(0.6)
    text = out.getvalue()
    assert "still inner" in text and "still outer" not in text


def test_delayed_announcement_only_for_slow_phases():
    out = io.StringIO()
    with progress.activity("fast", stream=out, announce="fast starts", delay=0.5) as phase:
        pass
    assert out.getvalue() == "" and not phase.announced
    with progress.activity("slow", stream=out, announce="slow starts", delay=0.1) as phase:
        time.sleep(0.4)
    assert out.getvalue() == "slow starts\n" and phase.announced


def test_disabled_activity_prints_nothing():
    out = io.StringIO()
    with progress.activity("nothing", stream=out, interval=0.05, announce="no", enabled=False) as phase:
        time.sleep(0.2)
    assert phase is None and out.getvalue() == ""


def test_eta():
    assert progress.eta(1, 4, 10.0) == "ETA 30 s"
    assert progress.eta(2, 4, 600.0) == "ETA 10.0 min"
    assert progress.eta(0, 4, 1.0) == "" and progress.eta(4, 4, 1.0) == ""


def test_compile_ahead_announces_then_the_call_only_runs(monkeypatch):
    import jax
    import jax.numpy as jnp

    monkeypatch.setattr(progress, "ANNOUNCE_S", 0.0)
    f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x)) * 3.0)
    x = jnp.arange(7.0)
    out = io.StringIO()
    wall = progress.compile_ahead(f, x, what="a test program", stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("compiling a test program (or loading it from the compilation cache when this shape "
                        "ran before)")
    assert re.fullmatch(r"(compiled a test program|loaded a test program from the compilation cache) in [0-9.]+ s",
                        lines[-1])
    assert wall is not None and wall >= 0
    # the ordinary call reuses the executable: no compilation event
    events = []
    jax.monitoring.register_event_duration_secs_listener(lambda e, d, **k: events.append(e))
    np.testing.assert_allclose(f(x), np.cumsum(np.sin(np.arange(7.0))) * 3.0)
    assert "/jax/core/compile/backend_compile_duration" not in events
    # compiled before in this process: nothing to announce with the default delay
    monkeypatch.setattr(progress, "ANNOUNCE_S", 0.5)
    out = io.StringIO()
    assert progress.compile_ahead(f, x, what="a test program", stream=out) is None
    assert out.getvalue() == ""


def test_slow_compile_heartbeats_explain_the_xla_banner_once(monkeypatch):
    class SlowToCompile:  # stands in for a jitted function: lower(...).compile() takes a while
        def lower(self, *args):
            return self

        def compile(self):
            time.sleep(0.8)

    monkeypatch.setattr(progress, "ANNOUNCE_S", 0.0)
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.12)
    monkeypatch.setattr(progress, "SLOW_COMPILE_NOTE_S", 0.3)
    monkeypatch.setattr(progress, "quiet_compiles", lambda: False)  # the banner shown (user's choice)
    out = io.StringIO()
    progress.compile_ahead(SlowToCompile(), 1, what="a slow program", stream=out)
    lines = out.getvalue().splitlines()
    beats = [ln for ln in lines if ln.startswith("  ... still compiling a slow program")]
    assert len(beats) >= 3, lines
    assert sum("Very slow compile?" in ln for ln in beats) == 1
    assert "Very slow compile?" not in beats[0]  # not before SLOW_COMPILE_NOTE_S
    m = re.fullmatch(r"compiled a slow program in ([0-9.]+) s", lines[-1])
    assert m and float(m.group(1)) >= 0.75, lines[-1]


def test_cli_prints_the_compile_line_before_the_first_step(capsys, monkeypatch):
    from jaxrod.cli import main

    # announce at once: with a warm persistent cache the program may load faster than ANNOUNCE_S
    monkeypatch.setattr(progress, "ANNOUNCE_S", 0.0)
    # 21 nodes: the cantilever-a1 time loop of test_cli.py, test_der_dynamics.py and the quickstart
    # notebook (one compiled program; with the tests' cache it is loaded, not compiled, here)
    rc = main(["simulate", "cantilever-a1", "--n-nodes", "21", "--dt", "0.5", "--duration", "2"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = err.splitlines()
    first_step = next(i for i, ln in enumerate(lines) if ln.startswith("  step "))
    announce = next(i for i, ln in enumerate(lines) if ln.startswith("compiling the time loop ("))
    done = next(i for i, ln in enumerate(lines)
                if re.match(r"(compiled the time loop|loaded the time loop) .* in [0-9.]+ s$", ln))
    assert announce < done < first_step, err
    assert len([ln for ln in lines if ln.startswith("  step ")]) == 4
    assert "wall time" in out


@pytest.fixture(scope="module")
def static_scene():
    from jaxrod import scenes

    # 3 load steps, as the CLI picks for this load (so the CLI test below reuses the program); 21
    # nodes as examples/cantilever_static.toml (tests/test_modelfile.py) and test_cli.py's static
    # run: the load step is one compiled program for all of them (the load is an array)
    return scenes.get_scene("cantilever-static", n_nodes=21, load_parameter=1.5, load_steps=3)


def test_solve_static_progress_prints_each_load_step_and_agrees(static_scene, capsys):
    from jaxrod import solve_static

    model = static_scene.model
    quiet, res_q = solve_static(model, load_steps=3)
    out, err = capsys.readouterr()
    assert out == "" and err == ""  # progress off: silent
    loud, res_l = solve_static(model, load_steps=3, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    steps = [ln for ln in err.splitlines() if ln.lstrip().startswith("load step")]
    assert [int(re.search(r"load step +(\d+)/3", ln).group(1)) for ln in steps] == [1, 2, 3], err
    assert all(" ok " in ln for ln in steps)
    assert err.splitlines()[0] == "static equilibrium: solving, 3 load steps"
    assert re.search(r"static equilibrium: done in [0-9.]+ s", err)
    # the host loop runs the same increments as the compiled scan
    np.testing.assert_allclose(np.asarray(loud.q), np.asarray(quiet.q), rtol=0, atol=1e-12)
    assert bool(res_l.converged) and int(res_l.iterations) == int(res_q.iterations)


def test_cli_without_progress_prints_no_progress_lines(static_scene, capsys):
    from jaxrod.cli import main

    rc = main(["simulate", "cantilever-static", "--n-nodes", "21", "--load-parameter", "1.5", "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == "", err
    assert "tip deflection" in out and "3 load step(s)" in out
