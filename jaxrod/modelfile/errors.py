"""The one error a model file raises: :class:`ModelFileError`, naming the file, table and key."""

from __future__ import annotations

import difflib

__all__ = ["ModelFileError", "closest"]


class ModelFileError(ValueError):
    """An invalid model file. The message reads ``FILE: TABLE.KEY: problem``.

    Attributes:
        path: the file (``str``).
        where: dotted location in the file (``"bodies.link1.mass"``), ``""`` for the whole file.
        problem: what is wrong and what is allowed.
    """

    def __init__(self, path, where, problem):
        self.path, self.where, self.problem = str(path), where, problem
        super().__init__(f"{self.path}: {where}: {problem}" if where else f"{self.path}: {problem}")


def closest(word, choices):
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
