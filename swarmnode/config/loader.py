"""Load a NodeConfig from YAML, apply overrides, and turn every mistake into one readable line."""
from __future__ import annotations

import difflib
import os
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from swarmnode.config.model import NodeConfig

ENV_PREFIX = "SWARMNODE__"  # SWARMNODE__NETWORK__CLIENT_MODE=true sets network.client_mode


class ConfigError(Exception):
    """A config problem, worded as one line naming the field and the fix."""


def default_config_text() -> str:
    """configs/default.yaml as shipped with the package."""
    return resources.files("swarmnode.configs").joinpath("default.yaml").read_text(encoding="utf-8")


def bundled_config_path(name: str) -> Path:
    """Path of a config shipped in configs/ (e.g. "local.yaml")."""
    return Path(str(resources.files("swarmnode.configs").joinpath(name)))


def _field_names(model: type[BaseModel], path: tuple[Any, ...]) -> list[str]:
    """Names of the fields valid at `path` (for "did you mean" hints)."""
    for part in path:
        field = model.model_fields.get(str(part))
        if field is None or not isinstance(field.annotation, type) or not issubclass(field.annotation, BaseModel):
            return []
        model = field.annotation
    return list(model.model_fields)


def describe_validation_error(error: ValidationError, source: str) -> str:
    """One line for the first error: where, which field, what is wrong, how to fix it."""
    first = error.errors()[0]
    loc = tuple(first["loc"])
    field = ".".join(str(p) for p in loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        known = _field_names(NodeConfig, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"known fields here: {', '.join(known)}"
        return f"config error in {source}: unknown field '{field}'; {hint}"
    given = first.get("input")
    shown = "" if isinstance(given, (dict, list)) else f" (got {given!r})"
    msg = first["msg"].removeprefix("Value error, ")
    where = f"{field}: " if loc else ""  # a check across sections names its fields in its message
    return f"config error in {source}: {where}{msg}{shown}; fix it in {source} or see configs/default.yaml"


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    node = data
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Overrides from SWARMNODE__SECTION__FIELD=value variables (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for key, raw in environ.items():
        if key.startswith(ENV_PREFIX) and len(key) > len(ENV_PREFIX):
            dotted = key[len(ENV_PREFIX):].lower().replace("__", ".")
            try:
                out[dotted] = yaml.safe_load(raw)
            except yaml.YAMLError:
                out[dotted] = raw
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config error: file not found: {path} (create a home with `swarmnode init` or pass --config FILE)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"config error in {path}{where}: not valid YAML ({problem})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config error: cannot read {path}: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config error in {path}: the top level must be a mapping of sections (swarm:, network:, ...)")
    return data


def load_config(
    path: Path | None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> NodeConfig:
    """Defaults < YAML file < SWARMNODE__* environment < `overrides` (dotted keys, e.g. CLI flags)."""
    data = read_yaml(path) if path is not None else {}
    source = str(path) if path is not None else "defaults"
    layered = {**env_overrides(os.environ if environ is None else environ), **(overrides or {})}
    for dotted, value in layered.items():
        _set_dotted(data, dotted, value)
    try:
        return NodeConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, source)) from None
