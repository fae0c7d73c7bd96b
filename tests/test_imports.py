"""The import structure of the package, read statically (``ast``: nothing is imported or compiled).

* no import cycles: not among the module-level imports, and not once the imports deferred into
  functions are counted too (a deferred import hides a cycle, it does not remove it), apart from
  the lead's :data:`KNOWN_LEAD_CYCLE`; a cycle found is printed as a chain
  ``a (line) -> b (line) -> ... -> a``;
* ``jaxrod/actuation/`` (actuator definitions, below every model) imports no ``jaxrod.models``;
* ``jaxrod.cases`` is the top floor: nothing under ``jaxrod/`` imports it but ``jaxrod/cli.py``
  (and the case modules themselves); the ``calibration/`` scripts are outside the package.

Imports under ``if TYPE_CHECKING:`` are not counted (they never run). ``from pkg import name``
depends on ``pkg.name`` when that is a submodule, else on ``pkg`` (its ``__init__``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxrod"

#: Cycles tolerated (sets of modules a strongly connected component may lie inside): none. The
#: time loop's rewrite (issue 21) removed the last ones: ``integrate/`` now imports downwards only
#: (base -> results, implicit -> base/loop/results, run -> all), and the shooting stepper names
#: ``CosseratModel`` for annotations only.
KNOWN_LEAD_CYCLE: set = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


FILES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {m: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for m, p in FILES.items()}


def _target(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if FILES[module].name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, *, deferred: bool):
    """``[(imported jaxrod module, line)]`` of ``module``: module-level imports (class bodies,
    ``if``/``try``/``with`` blocks included), and with ``deferred`` those inside functions too."""
    out = []

    def visit(body):
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if deferred:
                    visit(st.body)
                continue
            if isinstance(st, ast.If) and "TYPE_CHECKING" in ast.unparse(st.test):
                visit(st.orelse)
                continue
            if isinstance(st, ast.Import):
                out.extend((a.name, st.lineno) for a in st.names)
            elif isinstance(st, ast.ImportFrom):
                target = _target(module, st)
                for a in st.names:
                    sub = f"{target}.{a.name}"
                    out.append((sub if sub in FILES else target, st.lineno))
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(st, field, None)
                if isinstance(block, list) and block and isinstance(block[0], (ast.stmt, ast.excepthandler)):
                    visit(block)

    visit(TREES[module].body)
    return [(t, line) for t, line in out if t == "jaxrod" or t.startswith("jaxrod.")]


def _graph(*, deferred: bool) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}`` over the package's own modules."""
    graph = {}
    for m in FILES:
        edges = {}
        for target, line in _imports(m, deferred=deferred):
            if target in FILES and target != m:
                edges.setdefault(target, line)
        graph[m] = edges
    return graph


def _components(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _chain(graph, comp) -> str:
    """One cycle through the component, as ``a (line) -> b (line) -> ... -> a``."""
    start = min(comp)
    # breadth-first from start back to start inside the component: a shortest cycle
    parent, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    path = path[::-1] + [start]
                    return " -> ".join(
                        f"{a} (line {graph[a][b]})" for a, b in zip(path, path[1:])
                    ) + f" -> {start}"
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return ", ".join(sorted(comp))


def _report(graph, comps) -> str:
    return "\n".join(f"  {_chain(graph, c)}" for c in comps)


def test_module_level_imports_have_no_cycle():
    graph = _graph(deferred=False)
    comps = _components(graph)
    assert not comps, "import cycles among module-level imports:\n" + _report(graph, comps)


def test_no_cycle_even_through_deferred_imports():
    graph = _graph(deferred=True)
    comps = [c for c in _components(graph) if not any(c <= known for known in KNOWN_LEAD_CYCLE)]
    assert not comps, "import cycles (imports inside functions counted):\n" + _report(graph, comps)


def test_known_lead_cycle_names_existing_modules():
    """The allowance names real modules (a rename must not silently widen it to nothing)."""
    missing = sorted(m for known in KNOWN_LEAD_CYCLE for m in known if m not in FILES)
    assert not missing, f"KNOWN_LEAD_CYCLE names modules that do not exist: {missing}"


def _all_imports(module):
    return _imports(module, deferred=True)


def test_actuation_imports_no_model():
    bad = [
        f"{FILES[m].relative_to(PACKAGE.parent)}:{line} imports {t}"
        for m in FILES
        if m == "jaxrod.actuation" or m.startswith("jaxrod.actuation.")
        for t, line in _all_imports(m)
        if t == "jaxrod.models" or t.startswith("jaxrod.models.")
    ]
    assert not bad, "jaxrod/actuation/ must sit below the models:\n  " + "\n  ".join(bad)


def _is_cases(name: str) -> bool:
    return name == "jaxrod.cases" or name.startswith("jaxrod.cases.")


def test_only_the_cli_imports_cases():
    bad = []
    for m in FILES:
        if m == "jaxrod.cli" or _is_cases(m):
            continue
        where = FILES[m].relative_to(PACKAGE.parent)
        bad += [f"{where}:{line} imports {t}" for t, line in _all_imports(m) if _is_cases(t)]
        # lazy tables and importlib calls name modules in strings
        bad += [
            f"{where}:{node.lineno} names {node.value!r}"
            for node in ast.walk(TREES[m])
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (_is_cases(node.value) or node.value == ".cases" or node.value.startswith(".cases."))
        ]
    assert not bad, "jaxrod.cases is the top floor (only jaxrod/cli.py imports it):\n  " + "\n  ".join(bad)


def test_the_checks_see_the_package():
    """Guard against a vacuous pass: the graph holds the package and a known deferred import."""
    assert "jaxrod.cli" in FILES and "jaxrod.actuation.tendons" in FILES
    assert any(_is_cases(t) for t, _ in _all_imports("jaxrod.cli"))
    assert "jaxrod.models.cosserat.stepper" in _graph(deferred=True)["jaxrod.models.cosserat.model"]
