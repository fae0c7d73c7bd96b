"""Helpers shared by the benchmark scripts: printing (``out``, ``note``, ``table``) and the
machine/commit description (``cpu_name``, ``git_describe``, ``load_average``).

Used by compile.py; cosserat_till.py, pcs_ishigaki.py and der_dismech.py import the printing
helpers and ``cpu_name`` from here (their ``git_describe``/``machine_header`` differ in wording and
stay in each script). Scripts run as ``python benchmarks/X.py`` find it on ``sys.path[0]``.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def out(text=""):
    """A line of the report (stdout)."""
    print(text, flush=True)


def note(text):
    """A progress or diagnostic line (stderr)."""
    print(text, file=sys.stderr, flush=True)


def table(header, rows):
    """A markdown table as one string."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def cpu_name():
    """The CPU model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(root=ROOT):
    """``(short hash, subject, dirty)`` of the checkout at ``root``; ``(None, None, False)`` if unknown."""
    try:
        head = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %s"], capture_output=True,
                              check=False, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "jaxrod"], capture_output=True,
                               check=False, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None, False
    if not head:
        return None, None, False
    h, _, subject = head.partition(" ")
    return h, subject, bool(dirty)


def git_sha(root=ROOT) -> str:
    """Full hash of HEAD at ``root``, with ``-dirty`` when tracked files differ; ``"unknown"``
    outside a checkout (recorded in the results JSON of a benchmark run)."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_describe(root=ROOT):
    """``"commit abc1234 subject"`` (+ a note on uncommitted changes in jaxrod/) for headers."""
    h, subject, dirty = git_commit(root)
    if h is None:
        return "unknown commit"
    return f"commit {(h + ' ' + subject)[:72]}" + (" (+ uncommitted changes in jaxrod/)" if dirty else "")


def load_average():
    """``(1, 5, 15)``-minute load averages, or ``None`` where the OS has none."""
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        return None


def write_result(name, result):
    """Write ``result`` (JSON-serialisable) to ``benchmarks/results/NAME`` and say so; returns the path."""
    import json

    path = os.path.join(ROOT, "benchmarks", "results", name)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    out(f"\nwrote {path}")
    return path
