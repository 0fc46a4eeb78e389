"""Fail on import cycles inside the `moscopt` package (run in CI).

    python scripts/check_imports.py

Counts the imports a module makes when it is imported: module-level `import` / `from ... import`
statements, not those inside functions (deferred on purpose, to keep `moscopt --help` fast) nor
those under `if TYPE_CHECKING:`. `from moscopt.a import b` is an edge to `moscopt.a.b` when that
is a module, else to `moscopt.a` (as import-linter counts them: the implicit import of a parent
package's `__init__` is not an edge). Prints every cycle (a strongly connected component) and
exits 1. `--deferred` also counts imports inside functions (cycles of the design, not of loading).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "moscopt"
DEFERRED = "--deferred" in sys.argv


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(tree: ast.Module, name: str, is_package: bool, modules: set[str]) -> set[str]:
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if DEFERRED and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(node.body)
                continue
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, name, is_package)
                if base is None:
                    continue
                for alias in node.names:  # a submodule, else a name defined in `base`
                    sub = f"{base}.{alias.name}"
                    out.add(sub if sub in modules else base)

    visit(tree.body)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(node: ast.ImportFrom, name: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    parts = name.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    base = ".".join(parts[:keep])
    return f"{base}.{node.module}" if node.module else base


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = top_level_imports(tree, name, path.name == "__init__.py", set(modules))
        edges[name] = {t for t in targets if t in modules and t != name}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(10_000)

    def connect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def main() -> int:
    edges = graph()
    found = cycles(edges)
    for component in found:
        print("import cycle: " + " <-> ".join(component))
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(found)} cycles")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
