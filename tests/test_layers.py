"""The package's layers point down: nothing below `xling/cli` imports it, and no module imports itself through
others (every import counted, local and type-checking ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "xling"


def imports() -> dict[str, set[str]]:
    """Module -> the xling modules it imports (`from a import b` counts `a.b` where that is a module)."""
    names = {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
    }
    found = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("xling"):
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        found[module] = {t for t in targets if t in names and t != module}
    return found


def test_nothing_below_the_command_line_imports_it():
    upward = sorted(
        (module, target)
        for module, targets in imports().items()
        for target in targets
        if target.startswith("xling.cli") and not module.startswith("xling.cli") and module != "xling.__main__"
    )
    assert not upward


def test_no_import_cycles():
    graph = imports()

    def inside(a: str, b: str) -> bool:  # a package and its own modules (an __init__ exporting them)
        return a.startswith(b + ".") or b.startswith(a + ".")

    cycles = []

    def visit(module: str, path: list[str], done: set[str]) -> None:
        for target in graph[module]:
            if inside(module, target):
                continue
            if target in path:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in done:
                done.add(target)
                visit(target, [*path, target], done)

    for module in graph:
        visit(module, [module], {module})
    assert not cycles, [" -> ".join(c) for c in cycles[:5]]


def room(module: str) -> str:
    """The room a module is in: its folder under xling/ (`xling.tagging`), or a top-level module itself."""
    return ".".join(module.split(".")[:2])


def test_no_cycles_between_rooms():
    """Folders too: `tagging` importing `trained_tasks` while that imports `tagging` is a circle of rooms even when
    no module imports itself."""
    graph: dict[str, set[str]] = {}
    for module, targets in imports().items():
        for target in targets:
            if "xling" not in (room(module), room(target)) and room(module) != room(target):
                graph.setdefault(room(module), set()).add(room(target))

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            for nxt in graph.get(stack.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    circles = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if reaches(b, a))
    assert not circles, circles
