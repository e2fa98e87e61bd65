"""Every module is in its package's map: for each package under swarmnode/ (protocol/generated/
and the bundled assets excepted), every .py module and every subpackage is named in that
package's `__init__.py` docstring, as `name.py` or `name/` (backquoted or not)."""
from __future__ import annotations

import re
from pathlib import Path

import swarmnode

PACKAGE = Path(swarmnode.__file__).parent
EXCEPTED = ("generated", "assets")


def packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py")
                  if not set(p.relative_to(PACKAGE).parts) & set(EXCEPTED))


def parts_of(package: Path) -> list[str]:
    """'name.py' for each module and 'name/' for each subpackage of `package`."""
    modules = [f"{p.name}" for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    subpackages = [f"{p.name}/" for p in package.iterdir()
                   if p.is_dir() and (p / "__init__.py").exists() and p.name not in EXCEPTED]
    return sorted(modules + subpackages)


def missing_from_map(package: Path) -> list[str]:
    docstring = (package / "__init__.py").read_text(encoding="utf-8")
    doc = re.match(r'\s*(?:[rRuU]?"""(.*?)"""|[rRuU]?\'\'\'(.*?)\'\'\')', docstring, re.S)
    text = (doc.group(1) or doc.group(2) or "") if doc else ""
    return [name for name in parts_of(package) if not re.search(rf"(?<![\w/.]){re.escape(name)}", text)]


def test_every_module_and_subpackage_is_in_its_package_map():
    missing = {str(p.relative_to(PACKAGE.parent)): m for p in packages() if (m := missing_from_map(p))}
    assert not missing, "\n".join(f"{pkg}/__init__.py's map lacks: {', '.join(names)}" for pkg, names in missing.items())
