"""Execute ``notebooks/snake.ipynb`` from a file of its own, so that ``pytest -n 2 --dist loadfile``
can run it next to the other notebooks (see ``test_notebooks.py``). It asserts its key numbers
(ball rebound, PD amplification, the three gaits' directions, the recorded 15 s paths and gait
optimisation)."""

import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from test_notebooks import NOTEBOOK_DIR, execute_notebook  # noqa: E402  (tests/ is on sys.path)


@pytest.mark.slow
def test_notebook_executes(tmp_path, monkeypatch):
    execute_notebook(NOTEBOOK_DIR / "snake.ipynb", tmp_path, monkeypatch)
