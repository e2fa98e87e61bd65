"""The sizes of a package's modules and functions in lines (generated code left out), and which
pass the style limits: a function over 60 lines, a module over 500. Used by
scripts/dev/code_sizes.py and tests/unit/test_code_sizes.py."""
from __future__ import annotations

import ast
from pathlib import Path

FUNCTION_LINES = 60
MODULE_LINES = 500


def sizes(package: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """([(lines, module)], [(lines, module:function)]), largest first."""
    modules, functions = [], []
    for path in sorted(package.rglob("*.py")):
        if "generated" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(package.parent))
        modules.append((len(text.splitlines()), name))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{name}:{node.name}"))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def over_limits(package: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The modules over MODULE_LINES and the functions over FUNCTION_LINES, largest first."""
    modules, functions = sizes(package)
    return [m for m in modules if m[0] > MODULE_LINES], [f for f in functions if f[0] > FUNCTION_LINES]
