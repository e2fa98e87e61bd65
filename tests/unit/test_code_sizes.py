"""The style limits hold: no function of swarmnode over 60 lines, no module over 500 (generated
code excepted), measured as scripts/dev/code_sizes.py measures them."""
from __future__ import annotations

from pathlib import Path

import swarmnode
from swarmnode.testing.code_sizes import FUNCTION_LINES, MODULE_LINES, over_limits, sizes

PACKAGE = Path(swarmnode.__file__).parent


def test_sizes_count_lines_of_modules_and_functions(tmp_path):
    package = tmp_path / "pkg"
    (package / "generated").mkdir(parents=True)
    (package / "a.py").write_text("def f():\n    return 1\n\n\nasync def g():\n    pass\n")
    (package / "generated" / "b_pb2.py").write_text("x = 1\n" * 900)
    assert sizes(package) == ([(6, "pkg/a.py")], [(2, "pkg/a.py:g"), (2, "pkg/a.py:f")])


def test_no_function_or_module_is_over_the_limits():
    modules, functions = over_limits(PACKAGE)
    lines = [f"module {name}: {n} lines (> {MODULE_LINES})" for n, name in modules]
    lines += [f"function {name}: {n} lines (> {FUNCTION_LINES})" for n, name in functions]
    assert not lines, "over the size limits:\n" + "\n".join(lines)
