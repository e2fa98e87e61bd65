"""pyproject.toml against the source tree: every subpackage of swarmnode/ is listed (a missing one
is left out of a wheel), and the node never imports an experiment-only dependency (the
`experiments` extra is optional)."""
import ast
import re
import tomllib
from pathlib import Path

import setuptools

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_subpackage_is_listed():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {f"swarmnode.{p}" for p in setuptools.find_packages(ROOT / "swarmnode")} | {"swarmnode"}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - found - {"swarmnode.configs"} == set(), "listed in pyproject.toml but not in swarmnode/"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_node_does_not_import_experiment_only_dependencies():
    extra = {re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower()
             for spec in PYPROJECT["project"]["optional-dependencies"]["experiments"]}
    assert "matplotlib" in extra
    assert "matplotlib" not in {re.split(r"[\s<>=!~;\[]", s, maxsplit=1)[0].lower()
                                for s in PYPROJECT["project"]["dependencies"]}
    offenders = {str(p.relative_to(ROOT)): sorted(imported_modules(p) & extra)
                 for p in sorted((ROOT / "swarmnode").rglob("*.py")) if imported_modules(p) & extra}
    assert offenders == {}
