"""Every module jaxrod imports is declared in pyproject.toml: third-party imports at the top of a
module are runtime dependencies; an import of an optional extra (meshio, mujoco) happens inside a
function, so `pip install jaxrod` without extras imports every public module."""

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# import name -> distribution name, where they differ
DISTRIBUTION = {"PIL": "pillow", "mpl_toolkits": "matplotlib", "yaml": "pyyaml"}


def _names(spec_list):
    out = set()
    for spec in spec_list:
        name = spec.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        out.add(name.strip().lower().replace("_", "-"))
    return out


def _imports():
    """``{(module name, top_level: bool, file)}`` of every absolute import in jaxrod/."""
    found = set()
    for path in (ROOT / "jaxrod").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.add((name.split(".")[0], id(node) in top, str(path.relative_to(ROOT))))
    return found


def test_every_import_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _names(project["dependencies"])
    extras = {k: _names(v) for k, v in project["optional-dependencies"].items() if k not in ("dev", "docs", "peers")}
    optional = set().union(*extras.values())
    undeclared, eager_optional = [], []
    for name, top_level, where in sorted(_imports()):
        if name in sys.stdlib_module_names or name in ("jaxrod", "__future__"):
            continue
        dist = DISTRIBUTION.get(name, name).lower().replace("_", "-")
        if dist in runtime:
            continue
        if dist in optional:
            if top_level:
                eager_optional.append(f"{where}: import {name} (extra {dist}) at module level")
            continue
        undeclared.append(f"{where}: {name}")
    assert not undeclared, "imports not declared in pyproject.toml [project] dependencies:\n" + "\n".join(undeclared)
    assert not eager_optional, "optional extras imported at module level:\n" + "\n".join(eager_optional)
