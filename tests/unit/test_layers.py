"""The layering swarmnode/__init__.py states holds: each subpackage imports only from the
subpackages listed before it (lower layers) and from itself. The order is read from that
docstring, so the map and the code cannot drift apart. swarmnode.testing (test support) may
import anything; nothing in the node may import it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import swarmnode

PACKAGE = Path(swarmnode.__file__).parent


def stated_layers() -> list[str]:
    """['identity', 'config', 'home', ...] from the '- name/:' / '- name.py:' lines of the docstring."""
    return [m.group(1) for m in re.finditer(r"^- (\w+)(?:/|\.py):", swarmnode.__doc__ or "", re.M)]


def part_of(module: str) -> str | None:
    """'swarmnode.node.gossip.rollouts' -> 'node'; a module outside swarmnode -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "swarmnode" and len(parts) > 1 else None


def imported_parts(path: Path) -> set[str]:
    """Every swarmnode subpackage a file imports, at any depth (lazy imports in functions count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(filter(None, (part_of(a.name) for a in node.names)))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            part = part_of(node.module)
            if part is not None:
                found.add(part)
            elif node.module == "swarmnode":
                found.update(a.name for a in node.names if a.name != "__version__")
    return found


def test_every_subpackage_is_placed_in_the_stated_layers():
    layers = stated_layers()
    present = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert present - {"testing", "configs"} <= set(layers), f"not in swarmnode/__init__.py's map: {present - set(layers)}"


def test_imports_run_only_down_the_layers():
    layers = stated_layers()
    rank = {name: i for i, name in enumerate(layers)}
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if own in ("__init__", "__main__", "testing"):
            continue
        for part in imported_parts(path):
            if part == "testing":
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports swarmnode.testing")
            elif part in rank and own in rank and rank[part] > rank[own]:
                upward.append(f"{path.relative_to(PACKAGE.parent)} ({own}) imports {part}, a higher layer")
    assert not upward, "\n".join(upward)
