"""Fail when the package's floor plan breaks (run in CI, beside check_imports.py --deferred).

    python scripts/check_architecture.py

The rules (docs/development.md):
1. the engine (`moscopt.optimizer`) imports none of the add-ons, not even inside a function:
   `moscopt.extensions.*` and the familiarity router (`moscopt.routing.engine` and what it
   builds on); they plug in through `moscopt.optimizer.engine.extension.Extension`. What
   both need, the embedders, lives apart in `moscopt.embedding`;
2. only the application layer constructs a `Trainer` (`moscopt/app/workspace.py`), an engine
   `Context` (there and in the trainer) or a `Stream`;
3. the package root holds at most `ROOT_MODULES` modules;
4. no module is longer than `MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "moscopt"
MAX_LINES = 400
ROOT_MODULES = 6
ENGINE = "moscopt.optimizer"
ADD_ONS = (
    "moscopt.extensions",
    "moscopt.routing.engine",
    "moscopt.routing.familiarity",
    "moscopt.routing.router",
    "moscopt.routing.features",
    "moscopt.app",
)
CONSTRUCTORS = {
    "Trainer": {"moscopt/app/workspace.py"},
    "Context": {"moscopt/app/workspace.py", "moscopt/optimizer/engine/trainer.py"},
    "Stream": {"moscopt/app/workspace.py"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.Module) -> set[str]:
    """Every absolute module an import statement names, anywhere in the file."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def constructed(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name in CONSTRUCTORS:
                names.add(name)
    return names


def problems() -> list[str]:
    found: list[str] = []
    root = [p.name for p in PACKAGE.glob("*.py")]
    if len(root) > ROOT_MODULES:
        found.append(f"the package root holds {len(root)} modules (at most {ROOT_MODULES})")
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_LINES:
            found.append(f"{rel}: {lines} lines (at most {MAX_LINES})")
        tree = ast.parse(text, rel)
        name = module_name(path)
        if name == ENGINE or name.startswith(ENGINE + "."):
            for target in sorted(imported(tree)):
                if any(target == a or target.startswith(a + ".") for a in ADD_ONS):
                    found.append(f"{rel}: the engine imports the add-on {target}")
        for cls in sorted(constructed(tree)):
            if rel not in CONSTRUCTORS[cls] and not _defines(tree, cls):
                found.append(f"{rel}: constructs a {cls} (only {sorted(CONSTRUCTORS[cls])})")
    return found


def _defines(tree: ast.Module, cls: str) -> bool:
    """A module that defines a class of that name (e.g. study's own `_Context`) is not it."""
    return any(isinstance(n, ast.ClassDef) and n.name == cls for n in ast.walk(tree))


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    print(f"architecture: {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
