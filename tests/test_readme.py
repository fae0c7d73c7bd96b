"""README.md, benchmarks/README.md and the documentation pages (docs/) against the code: the test
count, the scenes and calibration cases they name, the shipped model-file examples they list, and
the repository files they cite. A page that drifts from the code fails here rather than misleading
a reader (tests/test_docs.py builds the site itself)."""

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _text(path):
    return path.read_text(encoding="utf-8")


def test_readme_test_count_matches_the_collected_suite(request):
    full = getattr(request.config, "_jaxrod_full_suite", None)
    if not full:
        pytest.skip("the count is checked only when the whole suite is collected (no file, -k or -m selection)")
    m = re.search(r"the (\d+) tests took", _text(ROOT / "README.md"))
    assert m, "README.md no longer states the suite's test count as 'the N tests took'"
    assert int(m.group(1)) == full, (
        f"README.md says {m.group(1)} tests, the suite collects {full}: update the count (and the time)")


def test_scenes_and_cases_named_in_the_readmes_exist():
    from jaxrod.scenes.registry import REGISTRY

    cases = {"weight-release", "soft-limb", "stiff-flop"}
    examples = {p.name for p in (ROOT / "jaxrod" / "modelfile" / "examples").iterdir()}  # .toml, .urdf, .xml
    bad = []
    for path in READMES:
        for verb, name in re.findall(r"jaxrod (simulate|calibrate) ([A-Za-z0-9_./<>-]+)", _text(path)):
            if name.startswith("<") or name.upper() == name or name in ("model.toml", "path/to/model.toml"):
                continue  # placeholders
            ok = (name in cases) if verb == "calibrate" else (name in REGISTRY or Path(name).name in examples)
            if not ok:
                bad.append(f"{path.relative_to(ROOT)}: jaxrod {verb} {name}")
    assert not bad, "names the code does not know:\n" + "\n".join(bad)


def test_docs_list_every_shipped_model_file_example():
    text = _text(ROOT / "docs" / "modelfiles.md")
    i = text.index("shipped examples in `jaxrod/modelfile/examples/`")
    listed = set(re.findall(r"`([a-z0-9_]+)`", text[i:text.index("```", i)]))
    shipped = {p.stem for p in (ROOT / "jaxrod" / "modelfile" / "examples").glob("*.toml")}
    assert shipped <= listed, f"docs/modelfiles.md does not list the examples {sorted(shipped - listed)}"


def test_files_cited_by_the_readmes_exist():
    bad, n = [], 0
    for path in READMES:
        for cited in set(re.findall(r"(?<![\w/.])((?:jaxrod|tests|benchmarks|calibration|notebooks)/[\w/.-]+\.(?:py|json|toml|ipynb|md))",
                                    _text(path))):
            n += 1
            if not (ROOT / cited).exists():
                bad.append(f"{path.relative_to(ROOT)}: {cited}")
    assert n > 20, f"only {n} file citations found: the pattern no longer matches the pages"
    assert not bad, "cited files that do not exist:\n" + "\n".join(sorted(bad))


def test_readme_is_short_and_keeps_the_ci_command():
    """README is the front page (<= 200 lines: one paragraph, a figure, the two commands, a feature
    table with links, where to read on); everything else lives in docs/. .ci/run extracts the test
    command from it with this sed pattern."""
    text = _text(ROOT / "README.md")
    assert len(text.splitlines()) <= 200, f"README.md has {len(text.splitlines())} lines: move text to docs/"
    cmds = re.findall(r"^    \$ (python3 -m pytest.*)$", text, flags=re.M)
    assert cmds and cmds[0].startswith("python3 -m pytest"), "README.md lost the test command that .ci/run runs"
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).exists(), f"README.md links to a missing page: {link}"


def test_docs_list_every_scene():
    """docs/cli.md lists every built-in scene (the table `jaxrod scenes` prints)."""
    from jaxrod.scenes.registry import REGISTRY

    text = _text(ROOT / "docs" / "cli.md")
    missing = sorted(name for name in REGISTRY if f"| `{name}` |" not in text)
    assert not missing, f"docs/cli.md does not list the scenes {missing}"


def element_types_table(types=None):
    """The markdown table of model-file element types docs/modelfiles.md carries, from the
    registry (``jaxrod.modelfile.registry.JOINT_TYPES`` or ``FORCE_TYPES``: the loader and its
    validation read the same)."""
    from jaxrod.modelfile.registry import JOINT_TYPES
    from jaxrod.modelfile.values import REQUIRED

    def default(k):
        if k.default is REQUIRED:
            return "required"
        if k.default is None:
            return "optional"
        if isinstance(k.default, (int, float)):
            return f"default {k.default:g}"
        return f"default {k.default!r}".replace("'", '"')

    def key(name, k):
        unit = f" [{k.unit}]" if k.unit else ""
        kind = " (time signal)" if k.kind in ("input", "motion") else ""
        return f"`{name}`{unit}{kind} ({default(k)}): {k.doc}"

    rows = ["| `type` | class | what | keys |", "|---|---|---|---|"]
    for name, t in (JOINT_TYPES if types is None else types).items():
        rows.append(f"| `{name}` | `{t.target.replace(':', '.')}` | {t.doc} | "
                    + "<br>".join(key(n, k) for n, k in t.keys.items()) + " |")
    return "\n".join(rows)


joint_types_table = element_types_table


def test_docs_joint_types_table_is_the_registry():
    from jaxrod.modelfile.registry import FORCE_TYPES

    text = _text(ROOT / "docs" / "modelfiles.md")
    assert element_types_table() in text, (
        "docs/modelfiles.md's joint-type table differs from jaxrod.modelfile.registry.JOINT_TYPES; "
        "paste tests.test_readme.element_types_table() into it")
    assert element_types_table(FORCE_TYPES) in text, (
        "docs/modelfiles.md's force-element table differs from jaxrod.modelfile.registry.FORCE_TYPES; "
        "paste tests.test_readme.element_types_table(FORCE_TYPES) into it")


# --- published numbers pinned to their recorded runs (issue 22 item 5; benchmarks/results/AUDIT.md) ---

RESULTS = ROOT / "benchmarks" / "results"


def _flat(text):
    """Text with every run of whitespace (line breaks included) made one space."""
    return re.sub(r"\s+", " ", text)


def _json(name):
    import json

    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _section(name):
    text = _text(ROOT / "benchmarks" / "README.md")
    return text[text.index(f"<!-- --8<-- [start:{name}] -->"):text.index(f"<!-- --8<-- [end:{name}] -->")]


def _table_rows(text):
    """Cells of the markdown table rows in ``text`` (header and rule rows dropped)."""
    out, previous = [], ""
    for line in text.splitlines():
        # a body row: a table line after a table line (the header has none before it), not the rule
        if line.startswith("|") and previous.startswith("|") and not set(line) <= set("|-: "):
            out.append([c.strip() for c in line.strip().strip("|").split("|")])
        previous = line if line.startswith("|") else ""
    return out


def _num(cell):
    return float(re.search(r"-?\d+(?:\.\d+)?", cell.replace("*", "")).group())


def test_benchmarks_readme_script_table_lists_every_script():
    """Every runnable script in benchmarks/ has a row (or is named in one: the robots_* parts of
    robots.py) in the script table of benchmarks/README.md, and every script the table names exists."""
    intro = _section("intro")
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    missing = sorted(s for s in scripts if f"`{s}`" not in intro)
    assert not missing, f"benchmarks/README.md's script table does not list {missing}"
    named = {m for m in re.findall(r"^\| `([\w]+\.py)` \|", intro, flags=re.M)}
    assert named and named <= scripts, f"the script table lists scripts that do not exist: {sorted(named - scripts)}"


def test_readme_lists_the_shipped_notebooks():
    text = _text(ROOT / "README.md")
    listed = set(re.findall(r"`notebooks/([\w]+\.ipynb)`", text))
    shipped = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert listed == shipped, f"README.md lists notebooks {sorted(listed)}, notebooks/ has {sorted(shipped)}"


def test_readme_default_example_is_the_scene():
    """'the DisMech dynamic cantilever a1 (201 nodes, 200 implicit-midpoint steps of 0.5 s)'."""
    import importlib
    import inspect

    from jaxrod.scenes.registry import REGISTRY

    for page in (ROOT / "README.md", ROOT / "docs" / "install.md"):
        m = re.search(r"cantilever a1 \((\d+) nodes, (\d+) implicit-midpoint steps of ([\d.]+) s\)", _flat(_text(page)))
        assert m, f"{page.name} no longer describes the default example as 'cantilever a1 (N nodes, K ... steps of dt s)'"
        info = REGISTRY["cantilever-a1"]
        builder = getattr(importlib.import_module(info.module, "jaxrod.scenes"), info.builder)
        n_nodes = inspect.signature(builder).parameters["n_nodes"].default
        assert (int(m.group(1)), float(m.group(3))) == (n_nodes, info.dt), (page.name, n_nodes, info.dt)
        assert int(m.group(2)) == round(info.duration / info.dt), (page.name, info.duration, info.dt)


def test_readme_counts_match_the_code():
    """'seven joint types' (the model files' joint types less the two prescribed drives) and 'three
    anisotropic laws' (FRICTION_LAWS)."""
    from jaxrod.modelfile.registry import JOINT_TYPES
    from jaxrod.models.der.contact import FRICTION_LAWS

    words = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
    text = _text(ROOT / "README.md")
    joints = re.search(r"(\w+) joint types", text).group(1)
    assert words[joints] == len([t for t in JOINT_TYPES if not t.startswith("prescribed")]), joints
    laws = re.search(r"(\w+) anisotropic laws", text).group(1)
    assert words[laws] == len(FRICTION_LAWS), laws


def test_readme_speed_ratios_are_the_recorded_runs():
    """The ratios README's feature table and known limits quote, recomputed from the JSON they cite."""
    readme = _flat(_text(ROOT / "README.md"))
    index = _flat(_text(ROOT / "docs" / "index.md"))

    chains = _json("chain_joint.json")["chains"]
    lo, hi = map(float, re.search(r"at ([\d.]+)-([\d.]+)x MuJoCo's process CPU per step", readme).groups())
    ratios = [c["cpu_ratio"] for c in chains.values()]
    assert (lo, hi) == (round(min(ratios), 1), round(max(ratios), 1)), ratios

    gaits = _json("snake_mujoco.json")["gaits"]
    cpu, dist = [], {"side": [], "LU-o": []}
    for name, g in gaits.items():
        jax_cpu = {0.0005: g["jaxrod"]["cpu_per_sim_s"], 0.00025: g["jaxrod_dt0.00025"]["cpu_per_sim_s"]}
        for run in g.values():
            if run.get("side") == "mujoco" and run.get("geom") == "capsule" and run["dt"] in jax_cpu:
                cpu.append(jax_cpu[run["dt"]] / run["cpu_per_sim_s"])
                if name[:4] in dist:
                    dist[name[:4]].append(abs(np.hypot(*run["com_dxdy_m"]) / np.hypot(*g["jaxrod"]["com_dxdy_m"]) - 1))
    m = re.search(r"within (\d+)% \(sidewinding\) and (\d+)% \(orthotropic undulation\) at 0.25-0.5 ms steps, "
                  r"not the isotropic drift, ([\d.]+)-(\d+)x MuJoCo's process CPU at equal step", readme)
    assert m, "README.md's MuJoCo snake sentence changed: update this test"
    assert int(m.group(1)) == np.ceil(100 * max(dist["side"])), dist
    assert int(m.group(2)) == np.ceil(100 * max(dist["LU-o"])), dist
    assert (float(m.group(3)), int(m.group(4))) == (round(min(cpu), 1), round(max(cpu))), cpu

    grads = {c["case"]: c["ratio"]["refactor"] for c in _json("gradients.json")["cases"]}
    der, hybrid = map(float, re.search(r"([\d.]+)x \(DER\) to ([\d.]+)x \(hybrid\)", readme).groups())
    assert (der, hybrid) == (round(grads["der"], 1), round(grads["hybrid"], 1)), grads

    batch = _json("cosserat_batch.json")
    seg2 = round(batch["single"]["new-seg2"]["cpu_min"] / batch["cpp_seconds"], 1)
    plain = round(batch["single"]["new"]["cpu_min"] / batch["cpp_seconds"], 1)
    for page, text in (("README.md", readme), ("docs/index.md", index)):
        m = re.search(r"([\d.]+)x \(`segments=2`\) to ([\d.]+)x \(default\) the process CPU of Till's C\+\+", text)
        assert m, f"{page}: the Cosserat vs Till's C++ sentence changed: update this test"
        assert (float(m.group(1)), float(m.group(2))) == (seg2, plain), (page, seg2, plain)


def test_readme_compile_times_are_the_recorded_run():
    """The default example's cold first run and the per-shape compile range, from
    benchmarks/results/compile_2026-11-27.json (the file the sentences cite)."""
    rows = {r["target"]: r["cold"] for r in _json("compile_2026-11-27.json")["rows"]}
    a1 = rows["cantilever-a1"]
    walls = [r["wall_s"] for r in rows.values()]
    for page in (ROOT / "README.md", ROOT / "docs" / "install.md"):
        text = _flat(_text(page))
        m = re.search(r"cold first run \(3 steps, no figures\): (\d+) s wall, (\d+) s process CPU, (\d+) s of it XLA", text)
        assert m and "compile_2026-11-27.json" in text, f"{page.name}: the default example's compile sentence changed"
        assert tuple(map(int, m.groups())) == (round(a1["wall_s"]), round(a1["cpu_s"]), round(a1["xla_compile_s"])), a1
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        m = re.search(r"(\d+)-(\d+) s wall per new problem shape", _flat(_text(page)))
        assert m and tuple(map(int, m.groups())) == (round(min(walls)), round(max(walls))), (page.name, walls)


def test_benchmarks_readme_tables_are_the_recorded_runs():
    """Tables of benchmarks/README.md that cite a JSON, column by column against it."""
    # compile-now: programs, XLA compile, cold CPU and wall, warm CPU and programs per target
    rows = {r["target"]: r for r in _json("compile_2026-11-27.json")["rows"]}
    table = _table_rows(_section("compile-now"))
    assert len(table) == len(rows)
    for cells in table:
        r = rows[cells[0]]
        got = [_num(c) for c in cells[1:7]]
        want = [r["cold"]["programs"], r["cold"]["xla_compile_s"], r["cold"]["cpu_s"], r["cold"]["wall_s"],
                r["warm"]["cpu_s"], r["warm"]["programs"]]
        assert got[0] == want[0] and got[5] == want[5], (cells[0], got, want)
        assert abs(got[1] - want[1]) <= 0.051 and all(abs(g - w) <= 0.51 for g, w in zip(got[2:5], want[2:5])), (
            cells[0], got, want)

    # robots: the CPU column is the JSON's cpu_s of the rows that ran
    cpu_json = sorted(r["cpu_s"] for r in _json("robots.json")["rows"] if "cpu_s" in r)
    cpu_table = sorted(_num(c[3]) for c in _table_rows(_section("robots")))
    assert len(cpu_json) == len(cpu_table)
    assert all(abs(t - j) <= max(0.006, 0.002 * j) for t, j in zip(cpu_table, cpu_json)), (cpu_table, cpu_json)

    # chain-joint: the CPU ratio column (chains, then the double pendulum)
    d = _json("chain_joint.json")
    want = [d["chains"][k]["cpu_ratio"] for k in ("10", "30", "100")] + [
        d["double_pendulum"][k]["cpu_ratio"] for k in ("0.001", "0.01")]
    got = [_num(r[3]) for r in _table_rows(_section("chain-joint"))]
    assert got == [round(w, 2) for w in want], (got, want)

    # gradients: the refactor and refine ratios
    cases = _json("gradients.json")["cases"]
    table = _table_rows(_section("gradients"))
    assert len(table) == len(cases)
    for cells, c in zip(table, cases):
        assert abs(_num(cells[3]) - c["ratio"]["refactor"]) <= 0.006, (cells[0], c["ratio"])
        assert abs(_num(cells[5]) - c["ratio"]["refine"]) <= 0.06, (cells[0], c["ratio"])

    # cosserat-batch: one rod's minimum CPU per solver and its ratio to the C++ figure
    batch = _json("cosserat_batch.json")
    single = _table_rows(_section("cosserat-batch"))[:3]
    for cells, key in zip(single, ("old", "new", "new-seg2")):
        assert _num(cells[1]) == round(batch["single"][key]["cpu_min"], 3), (key, cells[1])
        assert _num(cells[2]) == round(batch["single"][key]["cpu_min"] / batch["cpp_seconds"], 1), (key, cells[2])


def test_benchmarks_readme_compile_and_snake_tables_are_the_recorded_runs():
    """compile-before (per target: programs, XLA s, cold CPU and wall), compile-after (before -> after
    pairs from the two JSON), compile-2026-11-28 (both trees, and the run-time table), der-snake (forward distance of every run) and snake-robot (the paper's
    runs: sweeps mean / max) against the JSON they cite."""
    def key(r):
        return [r["cold"]["programs"], round(r["cold"]["xla_compile_s"], 1), round(r["cold"]["cpu_s"])]

    before = {r["target"]: r for r in _json("compile_before.json")["rows"] if "cold" in r}
    after = {r["target"]: r for r in _json("compile_after.json")["rows"]}
    n = 0
    for cells in _table_rows(_section("compile-before")):
        if cells[0] in before:
            n += 1
            assert [_num(c) for c in cells[1:4]] + [_num(cells[4])] == key(before[cells[0]]) + [
                round(before[cells[0]]["cold"]["wall_s"])], cells
    assert n >= 10, f"only {n} compile-before rows matched a target of compile_before.json"
    rows = [c for c in _table_rows(_section("compile-after")) if "->" in c[1]]
    assert len(rows) == len(after)
    for cells in rows:
        pairs = [[_num(x) for x in c.split("->")] for c in cells[1:5]]
        b, a = before[cells[0]], after[cells[0]]
        assert [p[0] for p in pairs] == key(b) + [round(b["warm"]["cpu_s"])], cells
        assert [p[1] for p in pairs] == key(a) + [round(a["warm"]["cpu_s"])], cells

    forward = sorted({round(r["forward_m"], 4) for r in _json("der_snake.json")["runs"]})
    assert sorted(_num(c[2]) for c in _table_rows(_section("der-snake"))) == forward

    runs = _json("snake_paper.json")["runs"]
    runs = runs.values() if isinstance(runs, dict) else runs
    want = sorted((round(r["sweeps_mean"], 1), r["sweeps_max"]) for r in runs)
    table = _table_rows(_section("snake-robot").split("**Contact solvers**")[0])
    assert sorted(tuple(_num(x) for x in c[5].split("/")) for c in table) == want
    _check_compile_table_of_2026_11_28()
    _check_tables_of_2026_11_28c()


def test_sleeve_real_time_is_the_recorded_run():
    """docs/papers/tmtdyn-stiff-flop.md's sleeve real-time sentence against
    benchmarks/results/sleeve_realtime.json (written by benchmarks/sleeve_realtime.py --json)."""
    d = _json("sleeve_realtime.json")
    text = _flat(_text(ROOT / "docs" / "papers" / "tmtdyn-stiff-flop.md"))
    m = re.search(r"\((\d+) steps, (\d+) unknowns\) in ([\d.]+) s of process CPU, ([\d.]+) simulated seconds per "
                  r"CPU second .*?, ([\d.]+) s wall .*? (\d+) s CPU \((\d+) s wall\)", text)
    assert m, "the sleeve real-time sentence of docs/papers/tmtdyn-stiff-flop.md changed: update this test"
    assert (int(m.group(1)), int(m.group(2))) == (d["steps"], d["unknowns"])
    assert float(m.group(3)) == round(d["run_cpu_s_median"], 2)
    assert float(m.group(4)) == round(d["real_time_ratio_cpu"], 1)
    assert float(m.group(5)) == round(d["run_wall_s_median"], 2)
    assert (int(m.group(6)), int(m.group(7))) == (round(d["compile_cpu_s"]), round(d["compile_wall_s"]))


def test_contact_scenes_table_is_the_recorded_run():
    """benchmarks/README.md's recorded contact-scenes table (the first table of the section) against
    benchmarks/results/contact_scenes.json."""
    rows = _json("contact_scenes.json")["rows"]
    section = _section("contact")
    table = _table_rows(section[:section.index("Earlier run")])
    assert [c[0] for c in table] == [r["scene"] for r in rows]
    for cells, r in zip(table, rows):
        cpu, wall = (float(x) for x in re.findall(r"[\d.]+", cells[3]))
        assert (cpu, wall) == (round(r["compile_cpu_s"], 1), round(r["compile_wall_s"], 1)), cells
        cpu, wall = (float(x) for x in re.findall(r"[\d.]+", cells[4]))
        assert (cpu, wall) == (round(r["ms_per_step_cpu"], 1), round(r["ms_per_step_wall"], 1)), cells
        assert cells[5] == f"{r['newton_mean']:.2f} / {r['newton_max']}", cells


def test_multibody_recorded_table_is_the_recorded_run():
    """The recorded chain table of benchmarks/README.md's multibody section and the 100-link figures
    docs/choosing.md quotes, against benchmarks/results/hybrid_chains.json."""
    d = _json("hybrid_chains.json")
    rows = [dict(zip(d["header"], r)) for r in d["rows"]]
    section = _section("multibody")
    table = _table_rows(section[:section.index("CPU per step within")])
    assert len(table) == len(rows)
    for cells, r in zip(table, rows):
        assert [cells[0], cells[2]] == [str(r["bodies"]), r["solver"]], cells
        assert cells[4].split(" ")[0] == r["CPU ms/step"].split(" ")[0], (cells, r["CPU ms/step"])
        assert cells[5] == r["Newton it/step"] and cells[7] == r["CPU ms/iteration"], cells
    by = {(r["bodies"], r["solver"]): float(r["CPU ms/step"].split(" ")[0]) for r in rows}
    m = re.search(r"100 links: ([\d.]+) ms of CPU per step against (\d+) ms dense", _text(ROOT / "docs" / "choosing.md"))
    assert m and (float(m.group(1)), int(m.group(2))) == (round(by[(100, "structured")], 1), round(by[(100, "dense")]))


def test_scene_like_names_in_the_readmes_are_scenes():
    """A backticked name that looks like a built-in scene (``cantilever-a1``, ``snake-...``: the
    first word of a scene name, then hyphenated words) is a scene of the registry: a renamed or
    removed scene fails here rather than leaving a stale name in a table or a sentence."""
    from jaxrod.scenes.registry import REGISTRY

    not_scenes = {"der-gradients"}  # a branch name
    families = {name.split("-")[0] for name in REGISTRY}
    bad = sorted({f"{path.relative_to(ROOT)}: {name}" for path in READMES
                  for name in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", _text(path))
                  if name.split("-")[0] in families and name not in REGISTRY and name not in not_scenes})
    assert not bad, "scene-like names the registry does not know:\n" + "\n".join(bad)


def test_weight_release_figures_are_the_recorded_run():
    """The quick weight-release figures of benchmarks/README.md's calibration section and
    docs/calibration.md against benchmarks/results/weight_release_quick.json."""
    d = _json("weight_release_quick.json")
    err = {k: 100 * v for k, v in d["relative_errors"].items()}
    blocks = d["evaluation"]["blocks"]
    chi2 = d["identifiability"]["chi2_dof"]
    for page in (ROOT / "benchmarks" / "README.md", ROOT / "docs" / "calibration.md"):
        text = _flat(_text(page))
        m = re.search(r"EI ([+-][\d.]+)%, rho ([+-][\d.]+)%, C ([+-][\d.]+)%", text)
        assert m, f"{page.name}: the weight-release errors sentence changed: update this test"
        assert [float(x) for x in m.groups()] == [round(err[k], 2) for k in ("EI", "rho", "C")], (page.name, err)
        m = re.search(r"tip error (?:mean )?([\d.]+) mm (?:mean )?on the fitted frames \(in-sample\),? and ([\d.]+) mm", text) \
            or re.search(r"tip error mean ([\d.]+) mm on the fitted frames \(in-sample\), ([\d.]+) mm", text)
        assert m, f"{page.name}: the weight-release tip-error sentence changed: update this test"
        assert (float(m.group(1)), float(m.group(2))) == (round(blocks["in-sample"]["mean"], 3),
                                                          round(blocks["held-out frames"]["mean"], 3))
        assert f"chi2/dof {chi2:.2f}" in text, (page.name, chi2)


def test_dismech_scaling_rerun_is_the_recorded_output():
    """The re-run of der_dismech.py's Table 2 quoted in benchmarks/README.md and docs/speed.md
    against its recorded output, benchmarks/results/der_dismech_table2_2026-11-27.md."""
    rows = _table_rows((RESULTS / "der_dismech_table2_2026-11-27.md").read_text(encoding="utf-8"))
    cpu = [_num(r[10]) for r in rows]
    wall = [_num(r[7]) for r in rows]
    assert {r[5] for r in rows} == {"3.65"} and {r[6] for r in rows} == {"0.400"}
    cpu_range = f"{round(min(cpu))}-{round(max(cpu))} us"
    m = re.search(r"process CPU (\d+-\d+ us) per node-step from 25 to 1600 nodes", _flat(_section("dismech")))
    assert m and m.group(1) == cpu_range, (m and m.group(1), cpu_range)
    assert f"wall {round(min(wall))}-{round(max(wall))} us" in _flat(_section("dismech")), wall
    assert f"{cpu_range} of process CPU per node-step" in _flat(_text(ROOT / "docs" / "speed.md")), cpu_range


def test_cmtm_jacobian_ratios_are_the_recorded_output():
    """CMTM vs autodiff Newton-Jacobian ratios quoted in docs/choosing.md and benchmarks/README.md's
    pcs section against benchmarks/results/pcs_ishigaki_table4_2026-11-27.md."""
    rows = _table_rows((RESULTS / "pcs_ishigaki_table4_2026-11-27.md").read_text(encoding="utf-8"))
    ratio = {(int(r[0]), r[2]): _num(r[6]) for r in rows}
    m = re.search(r"CMTM analytic Jacobian is ([\d.]+)x cheaper than autodiff at 3 segments, ([\d.]+)x at 12",
                  _text(ROOT / "docs" / "choosing.md"))
    assert m and (float(m.group(1)), float(m.group(2))) == (round(ratio[3, "CMTM Newton"], 1),
                                                            round(ratio[12, "CMTM Newton"], 1)), ratio
    pcs = _flat(_section("pcs"))
    for n in (3, 6, 12):
        assert f"({ratio[n, 'CMTM Newton']:.1f}x)" in pcs, (n, ratio)


def test_development_layout_names_every_module_and_notebook():
    """docs/development.md's layout block: every module of each package it lists (``jaxrod/X/``) is
    named in that package's entry and every file it names exists; the notebooks line names every
    notebook."""
    text = _text(ROOT / "docs" / "development.md")
    start = text.index("```", text.index("## Layout")) + 3
    block = text[start:text.index("```", start)]
    entries, current = {}, None
    for line in block.splitlines():
        head = re.match(r"^(\S+)\s", line)
        if head:
            current = head.group(1)
        if current:
            entries.setdefault(current, []).append(line)
    bad = []
    for name, lines in entries.items():
        if not (name.startswith("jaxrod/") and name.endswith("/")):
            continue
        named = set(re.findall(r"\b([a-z_0-9]+\.py)\b", " ".join(lines)))
        actual = {p.name for p in (ROOT / name).glob("*.py") if p.name != "__init__.py"}
        bad += [f"{name}{f}: not in the layout" for f in sorted(actual - named)]
        bad += [f"{name}{f}: named but missing" for f in sorted(named - actual)]
    notebooks = set(re.findall(r"[a-z_]+", " ".join(entries.get("notebooks/", []))))
    bad += [f"notebooks/{p.name}: not in the layout" for p in (ROOT / "notebooks").glob("*.ipynb")
            if p.stem not in notebooks]
    assert not bad, "docs/development.md's layout is stale:\n" + "\n".join(bad)


def test_friction_rerun_is_the_recorded_output():
    """The friction case-c re-run quoted in benchmarks/README.md against its recorded output."""
    rows = _table_rows((RESULTS / "der_dismech_friction_2026-11-27.md").read_text(encoding="utf-8"))
    rows = [r for r in rows if r[0] == "map"]
    assert len(rows) == 2
    text = _flat(_section("friction"))
    for r, dt in zip(rows, ("5 ms", "10 ms")):
        cpu, wall = _num(r[3]), _num(r[2])
        its, its_max = (x.strip() for x in r[5].split(","))
        err = r[6].split(" ")[0]
        m = re.search(rf"at dt {dt}: ([\d.]+) s (?:process )?CPU \(([\d.]+) s wall\), ([\d.]+) (?:Newton iterations per step )?\(max (\d+)\),? (?:Ek error )?([\d.]+%)", text)
        assert m, f"the friction re-run sentence for dt {dt} changed: update this test"
        assert (float(m.group(1)), float(m.group(2)), m.group(3), m.group(4), m.group(5)) == (
            cpu, wall, its, its_max, err), (dt, m.groups(), r)


def test_snake_cost_table_is_the_recorded_run():
    """benchmarks/README.md's snake cost table (the paper's runs and larger steps) against
    benchmarks/results/snake.json: link 6 displacement, sweeps and CPU per simulated second."""
    runs = _json("snake.json")["paper"]["runs"]
    section = _section("snake")
    table = _table_rows(section[section.index("**The paper's runs"):section.index("The paper reports 78 s")])
    table = [c for c in table if c[1] in ("explicit (paper)", "implicit")]
    assert len(table) == len(runs)
    for cells in table:
        key = f"{cells[0]} | {'explicit' if cells[1].startswith('explicit') else 'implicit'} | {float(cells[2]) / 1e3:g}"
        r = runs[key]
        assert cells[3] == f"{r['link6_dx']:+.3f}, {r['link6_dy']:+.3f}", (key, cells[3])
        assert _num(cells[5]) == round(r["sweeps_mean"], 1), (key, cells[5])
        assert _num(cells[6]) == round(r["cpu_per_sim_s"], 2), (key, cells[6])


def test_snake_solvers_table_is_the_recorded_run():
    """The contact-solver table of benchmarks/README.md's snake-robot section against
    benchmarks/results/snake_solvers.json (rows in the JSON's order; failed runs shown as '-')."""
    runs = list(_json("snake_solvers.json")["runs"].values())
    section = _section("snake-robot")
    table = _table_rows(section[section.index("**Contact solvers**"):])[:len(runs)]
    assert len(table) == len(runs)
    for cells, r in zip(table, runs):
        if r["failed_step"] is not None:
            assert cells[2] == "-" and "fails" in cells[4], cells
            continue
        assert cells[2] == f"{r['sweeps_mean']:.1f} / {r['sweeps_max']}", (cells, r)
        assert _num(cells[3]) == round(r["cpu_s_per_sim_s"], 2), (cells, r)


def _slash_pairs(cells):
    """The numbers of ``"before / after"`` table cells: ``[[before, after], ...]``."""
    return [[_num(x) for x in c.split("/")] for c in cells]


def _check_compile_table_of_2026_11_28():
    """compile-2026-11-28: programs, cold and warm CPU of both trees per target, and the run-time
    table's minima, against the JSON they cite."""
    old = {r["target"]: r for r in _json("compile_2026-11-28_a319a30.json")["rows"] if "cold" in r}
    new = {r["target"]: r for r in _json("compile_2026-11-28_c84f882.json")["rows"] if "cold" in r}
    section = _section("compile-2026-11-28")
    compile_part, run_part = section.split("**Run time, old vs new**")
    n = 0
    for cells in _table_rows(compile_part):
        b, a = old[cells[0]], new[cells[0]]
        pairs = _slash_pairs(cells[1:4])
        assert pairs[0] == [b["cold"]["programs"], a["cold"]["programs"]], cells
        assert pairs[1] == [round(b["cold"]["cpu_s"]), round(a["cold"]["cpu_s"])], cells
        assert pairs[2] == [round(b["warm"]["cpu_s"]), round(a["warm"]["cpu_s"])], cells
        n += 1
    assert n == 35
    runs = {}
    for r in _json("runtime_old_new_2026-11-28.json")["rows"]:
        if r.get("res"):
            runs.setdefault((r["res"]["scene"], r["tree"]), []).append(min(r["res"]["cpu"]))
    for cells in _table_rows(run_part):
        assert [_num(x) for x in cells[2].split("/")] == [round(x, 3) for x in runs[(cells[0], "old")]], cells
        assert [_num(x) for x in cells[3].split("/")] == [round(x, 3) for x in runs[(cells[0], "new")]], cells


def _check_tables_of_2026_11_28c():
    """compile-2026-11-28c: programs, XLA and cold CPU of both trees per scene, and the gradient
    table's compile and run CPU, against the JSON they cite."""
    old = {r["target"]: r["cold"] for r in _json("compile_2026-11-28c_cc91a06.json")["rows"]}
    new = {r["target"]: r["cold"] for r in _json("compile_2026-11-28c_5a07c4d.json")["rows"]}
    section = _section("compile-2026-11-28c")
    compile_part, grad_part = section.split("Gradients: ")
    n = 0
    for cells in _table_rows(compile_part):
        b, a = old[cells[0]], new[cells[0]]
        pairs = _slash_pairs(cells[1:4])
        assert pairs[0] == [b["programs"], a["programs"]], cells
        assert pairs[1] == [round(b["xla_compile_s"], 1), round(a["xla_compile_s"], 1)], cells
        assert pairs[2] == [round(b["cpu_s"]), round(a["cpu_s"])], cells
        n += 1
    assert n == 9
    gb = {c["label"]: c for c in _json("gradients_2026-11-28c_cc91a06.json")["cases"]}
    gn = {c["label"]: c for c in _json("gradients_2026-11-28c_5a07c4d.json")["cases"]}
    n = 0
    for cells in _table_rows(grad_part):
        b, a = gb[cells[0]], gn[cells[0]]
        got = _slash_pairs(cells[1:6])
        want = [
            [round(c["compile_cpu_s"]["refactor"], 1) for c in (b, a)],
            [round(c["compile_cpu_s"]["refine"], 1) for c in (b, a)],
            [round(c["compile_cpu_s"]["forward"], 1) for c in (b, a)],
            [round(c["forward_cpu_s"], 3) for c in (b, a)],
            [round(c["grad_cpu_s"]["refactor"], 3) for c in (b, a)],
        ]
        assert got == want, cells
        n += 1
    assert n == 4
