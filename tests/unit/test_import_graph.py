"""The architecture's import rules, read from the source: `db/` never imports `worker/`, and
no two modules import each other, directly or round a loop, at module level (an import inside
a function is a deliberate late binding and does not count)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import PROJECT_ROOT

PACKAGES = ("worker", "db")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for package in PACKAGES
               for p in (PROJECT_ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in tree.body:  # module level only
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_db_never_imports_worker():
    offenders = {name: sorted(t for t in targets if t.startswith("worker"))
                 for name, targets in _graph().items() if name.startswith("db")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    # A package importing its own submodules in __init__ is how a package exposes them.
    real = [c for c in cycles if not all(m.startswith(c[0] + ".") or m == c[0]
                                         for m in c[1:])]
    assert real == []


def _imports_queries_wholesale(node: ast.AST, modules: set[str]) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.startswith("db.queries") for a in node.names)
    if not isinstance(node, ast.ImportFrom) or node.level:
        return False
    names = {a.name for a in node.names}
    return (node.module == "db" and "queries" in names) or (
        node.module == "db.queries" and bool(names & modules))


def test_queries_are_imported_one_way():
    """`from db.queries.<module> import <name>`, never the package or a module object: a reader
    sees at the top of a file which statements it runs."""
    modules = {p.stem for p in (PROJECT_ROOT / "db" / "queries").glob("*.py")}
    offenders = [f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}"
                 for folder in ("worker", "db", "bench", "tests")
                 for path in (PROJECT_ROOT / folder).rglob("*.py")
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if _imports_queries_wholesale(node, modules)]
    assert offenders == []
