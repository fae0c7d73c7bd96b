"""griffe extension for the API reference: the docstrings cross-reference with Sphinx roles
(``:class:`~jaxrod.integrate.Trajectory```, ``:mod:`jaxrod.progress```), which Markdown would show
as raw text. Each role becomes inline code of its target, shortened to the last name after ``~``
as Sphinx shows it. The docstrings themselves are left as they are."""

import re

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|obj|exc):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)
