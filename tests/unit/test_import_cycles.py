"""No import cycle among swarmnode's modules.

The graph: one node per module (a package is its `__init__.py`); an edge for each import a module
makes, at module level or inside a function (a lazy import is still a dependency), absolute or
relative. `import a.b` and `from a import b` point at module `a.b` when it is one, `from a.b import
name` at `a.b`. The parent packages that Python initialises on the way are not edges: so a
package's `__init__` may import its own submodules to re-export them, and a submodule may import a
sibling, but a submodule that imports its package's `__init__` (`from swarmnode.x import name`)
while that `__init__` imports it is a cycle. Generated code (protocol/generated/) is left out.
"""
from __future__ import annotations

import ast
from pathlib import Path

import swarmnode

PACKAGE = Path(swarmnode.__file__).parent


def module_name(path: Path) -> str:
    """swarmnode/node/daemon.py -> 'swarmnode.node.daemon'; swarmnode/cli/__init__.py -> 'swarmnode.cli'."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def swarmnode_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "generated" not in p.parts}


def absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ImportFrom names, with a relative one resolved against `module`."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The swarmnode modules that `module` imports, anywhere in its file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = absolute(node, module, path.name == "__init__.py")
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {name for name in found if name in known and name != module}


def import_graph() -> dict[str, set[str]]:
    modules = swarmnode_modules()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_relative_imports_resolve_against_the_module():
    node = ast.parse("from .peers import short_id").body[0]
    assert absolute(node, "swarmnode.swarm.windows", False) == "swarmnode.swarm.peers"
    assert absolute(node, "swarmnode.swarm", True) == "swarmnode.swarm.peers"


def test_swarmnode_modules_import_no_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles among swarmnode modules:\n" + "\n".join(" <-> ".join(c) for c in found)
