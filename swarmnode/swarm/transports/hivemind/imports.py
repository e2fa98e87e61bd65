"""Importing hivemind's DHT and p2p without torch, for a node without a model.

hivemind's package `__init__` files import all of hivemind: `hivemind` pulls in the averager,
MoE and optimizer, `hivemind.dht` the DHT process class, `hivemind.utils` its shared-memory
futures and tensor descriptors, and each of those imports torch (a few hundred MiB of resident
memory). The transport needs none of them: DHTNode, P2P and their helpers import no torch. So a
node without a model (a bootstrap node) registers those three packages before anything imports
hivemind, as packages whose names are imported on first use instead of eagerly: every
`from hivemind.X import Y` still works (Y is imported when it is asked for), and what does need
torch (hivemind.DHT, hivemind.utils.MPFuture...) still gets it, only later.

The names each package exports are read from its own `__init__.py` (its `from ... import`
lines and constants), so the lazy packages export exactly what the real ones would.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

# Parents first: finding a subpackage's spec reads its parent's __path__.
LAZY_PACKAGES = ("hivemind", "hivemind.dht", "hivemind.utils")


def defer_hivemind_imports() -> bool:
    """Register hivemind's packages as lazy ones; False (and nothing done) when hivemind, or
    part of it, is imported already."""
    if any(name in sys.modules for name in LAZY_PACKAGES):
        return False
    for name in LAZY_PACKAGES:
        sys.modules[name] = lazy_package(name)
    return True


def lazy_package(name: str) -> types.ModuleType:
    """The package `name` with its submodules importable and its `__init__`'s exports imported
    on first access, its `__init__` never executed."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    source = Path(spec.origin).read_text(encoding="utf-8")
    exports, constants = package_exports(source, name)
    package = types.ModuleType(name, ast.get_docstring(ast.parse(source)))
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__path__ = list(spec.submodule_search_locations)
    package.__package__ = name
    package.__dict__.update(constants)

    def __getattr__(attr: str) -> Any:
        if attr not in exports:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        module_name, member = exports[attr]
        module = importlib.import_module(module_name)
        if member is None:
            value = module
        elif module is package:  # `from . import submodule`
            value = importlib.import_module(f"{name}.{member}")
        elif hasattr(module, member):
            value = getattr(module, member)
        else:  # `from pkg import submodule`
            value = importlib.import_module(f"{module_name}.{member}")
        setattr(package, attr, value)
        return value

    package.__getattr__ = __getattr__  # type: ignore[attr-defined]  # PEP 562
    return package


def package_exports(source: str, package: str) -> tuple[dict[str, tuple[str, str | None]], dict[str, Any]]:
    """What an `__init__.py` binds at its top level: {name: (module, member or None for the module
    itself)} for its imports, and {name: value} for its constant assignments (`__version__`)."""
    exports: dict[str, tuple[str, str | None]] = {}
    constants: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module
            assert module is not None
            for alias in node.names:
                exports[alias.asname or alias.name] = (module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:  # `import a.b` binds `a`, which is no export of this package
                    exports[alias.asname] = (alias.name, None)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value.value
    return exports, constants
