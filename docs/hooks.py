"""mkdocs hook: the notebooks in ``notebooks/`` (outside ``docs/``) become pages ``notebooks/NAME/``,
rendered by mkdocs-jupyter without executing them, so they live in one place in the repository."""

from pathlib import Path

import mkdocs.plugins
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter's on_files wraps them as notebook pages
def on_files(files, config):
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        files.append(File(f"notebooks/{nb.name}", src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
