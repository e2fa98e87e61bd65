"""The largest modules and functions of the swarmnode package (lines, generated code left out),
and how many pass the style limits (a function over 60 lines, a module over 500).

    .venv/bin/python scripts/dev/code_sizes.py [--most 10] [--root DIR]
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--most", type=int, default=10, help="rows of each list")
    parser.add_argument("--root", type=Path, default=ROOT, help="a checkout (default: this one)")
    args = parser.parse_args()
    modules, functions = sizes(args.root / "swarmnode")
    print("largest modules:", ", ".join(f"{m} {n}" for n, m in modules[:args.most]))
    print("largest functions:", ", ".join(f"{f} {n}" for n, f in functions[:args.most]))
    print(f"functions over 60 lines: {sum(n > 60 for n, _ in functions)}; modules over 500: {sum(n > 500 for n, _ in modules)}")


if __name__ == "__main__":
    main()
