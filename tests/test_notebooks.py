"""Execute every ``notebooks/*.ipynb`` top to bottom (a temporary copy, in a temporary working
directory) and fail on any cell error. The kernel shares the tests' persistent compilation cache.

The heaviest notebooks run from files of their own (``OWN_FILE``): ``pytest -n 2 --dist
loadfile`` gives each file to one worker, so one file holding every notebook would be the run's
critical path (cold, all four notebooks in one file: 15.5 min wall on the loaded 2-core machine)."""

import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import GC_THRESHOLDS

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# notebook -> the test file that executes it instead of this one
OWN_FILE = {
    "der_quickstart.ipynb": "test_notebooks_der_quickstart.py",
    "pcs_newmark.ipynb": "test_notebooks_pcs_newmark.py",
    "hybrid_systems.ipynb": "test_notebooks_hybrid_systems.py",
    "continuum_robots.ipynb": "test_notebooks_continuum_robots.py",
    "snake.ipynb": "test_notebooks_snake.py",
}
HERE = [p for p in NOTEBOOKS if p.name not in OWN_FILE]


def test_notebooks_exist():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"
    for name, test_file in OWN_FILE.items():
        assert (NOTEBOOK_DIR / name).exists(), f"{name} (OWN_FILE) not found in {NOTEBOOK_DIR}"
        test_file = Path(__file__).with_name(test_file)
        assert test_file.exists() and name in test_file.read_text(), f"{test_file} must execute {name}"


@pytest.mark.slow
@pytest.mark.parametrize("path", HERE, ids=[p.name for p in HERE])
def test_notebook_executes(path, tmp_path, monkeypatch):
    execute_notebook(path, tmp_path, monkeypatch)


def execute_notebook(path, tmp_path, monkeypatch):
    """Run the notebook at ``path`` in a fresh kernel; fail the calling test on any cell error."""
    # the kernel inherits the environment: CPU, and JAXROD_CACHE_DIR (the tests' cache, conftest.py)
    monkeypatch.setenv("JAX_PLATFORMS", os.environ.get("JAX_PLATFORMS", "cpu"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # the kernel imports the jaxrod of this checkout, whatever (or wherever) is pip-installed
    root = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))

    copy = tmp_path / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    for cell in nb.cells:  # the committed notebook carries no outputs
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks with outputs cleared"
    # the kernel's garbage collector tuned as the tests' own (conftest.GC_THRESHOLDS)
    gc_lines = [] if not GC_THRESHOLDS else [
        f"--IPKernelApp.exec_lines=__import__('gc').freeze(); __import__('gc').set_threshold({GC_THRESHOLDS})"
    ]
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
        extra_arguments=gc_lines,
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:  # show the failing cell's error, not the kernel's log
        msg = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
        pytest.fail(f"{path.name}: a cell raised:\n{msg}", pytrace=False)
    finally:
        nbformat.write(nb, tmp_path / f"executed-{path.name}")
    errors = [
        out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
