"""README.md, benchmarks/README.md and the documentation pages (docs/) against the code: the test
count, the scenes and calibration cases they name, the shipped model-file examples they list, and
the repository files they cite. A page that drifts from the code fails here rather than misleading
a reader (tests/test_docs.py builds the site itself)."""

import re
from pathlib import Path

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
