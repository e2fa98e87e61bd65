"""The largest modules and functions of the swarmnode package (lines, generated code left out),
and how many pass the style limits (a function over 60 lines, a module over 500).

    .venv/bin/python scripts/dev/code_sizes.py [--most 10] [--root DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from swarmnode.testing.code_sizes import FUNCTION_LINES, MODULE_LINES, sizes

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--most", type=int, default=10, help="rows of each list")
    parser.add_argument("--root", type=Path, default=ROOT, help="a checkout (default: this one)")
    args = parser.parse_args()
    modules, functions = sizes(args.root / "swarmnode")
    print("largest modules:", ", ".join(f"{m} {n}" for n, m in modules[:args.most]))
    print("largest functions:", ", ".join(f"{f} {n}" for n, f in functions[:args.most]))
    print(f"functions over {FUNCTION_LINES} lines: {sum(n > FUNCTION_LINES for n, _ in functions)}; "
          f"modules over {MODULE_LINES}: {sum(n > MODULE_LINES for n, _ in modules)}")


if __name__ == "__main__":
    main()
