"""Execute every ``notebooks/*.ipynb`` top to bottom (a temporary copy, in a temporary working
directory) and fail on any cell error. The kernel shares the tests' persistent compilation cache."""

import os
import re
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_notebooks_exist():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    # the kernel inherits the environment: CPU, and JAXROD_CACHE_DIR (the tests' cache, conftest.py)
    monkeypatch.setenv("JAX_PLATFORMS", os.environ.get("JAX_PLATFORMS", "cpu"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    copy = tmp_path / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    for cell in nb.cells:  # the committed notebook carries no outputs
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks with outputs cleared"
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
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
