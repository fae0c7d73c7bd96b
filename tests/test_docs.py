"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a broken link
or anchor, a page missing from the nav, a snippet of benchmarks/README.md that is gone, or an API
name mkdocstrings cannot find fails here. The build reads the sources statically (griffe) and
renders the notebooks without executing them, so it imports neither jaxrod nor jax."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]'; the dev extra has it)")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout[-4000:]}\n{run.stderr[-8000:]}"
    api = (site / "api" / "simulate" / "index.html").read_text(encoding="utf-8")
    assert "jaxrod.simulate" in api and "Trajectory" in api  # mkdocstrings rendered the docstrings
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        assert (site / "notebooks" / nb.stem / "index.html").exists(), nb.name
    # the benchmark tables are included from benchmarks/README.md, the snippet markers removed
    dismech = (site / "papers" / "dismech" / "index.html").read_text(encoding="utf-8")
    assert "Measured results, der_dismech.py" in dismech and "[start:" not in dismech


def _public_names():
    tree = ast.parse((ROOT / "jaxrod" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("jaxrod/__init__.py has no __all__")


def test_api_reference_documents_every_public_name():
    """Every ``jaxrod.X`` of ``__all__`` has its ``::: jaxrod.X`` entry in docs/api/ (submodules as
    modules), and every entry names a public name: a new export shows up in the reference."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "api").glob("*.md"))
    documented = set(re.findall(r"^::: jaxrod\.(\w+)", text, flags=re.M))
    public = _public_names()
    assert public - documented == set(), f"not in the API reference: {sorted(public - documented)}"
    extra = documented - public - {"calibrate", "export", "config"}
    assert not extra, f"API entries that are not public names: {sorted(extra)}"


def test_nav_lists_every_page():
    """mkdocs reports pages missing from the nav only as INFO: every docs/*.md is in mkdocs.yml."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    missing = sorted(p for p in pages if p not in nav)
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"
