"""Load a NodeConfig from YAML, apply overrides, and turn every mistake into one readable line."""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
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


def _self_and_parents(dotted: str) -> list[str]:
    """"a.b.c" -> ["a.b.c", "a.b", "a"]: a value set for a section sets every field in it."""
    parts = dotted.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def _dotted_keys(data: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Every dotted key a YAML mapping sets a value for (a section is no value: its fields are)."""
    keys = set()
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        keys |= _dotted_keys(value, f"{dotted}.") if isinstance(value, Mapping) else {dotted}
    return keys


@dataclass(frozen=True)
class ValueSources:
    """Where each config value came from (flag > environment > file > default), so that an error
    line names the place to fix it."""

    file: Path | None = None
    file_keys: frozenset[str] = frozenset()
    env_vars: Mapping[str, str] = field(default_factory=dict)  # dotted key -> SWARMNODE__... variable
    flags: Mapping[str, str] = field(default_factory=dict)  # dotted key -> the flag that set it

    def kind(self, dotted: str) -> str:
        """"flag", "environment", "file" or "default"."""
        for key in _self_and_parents(dotted):
            if key in self.flags:
                return "flag"
            if key in self.env_vars:
                return "environment"
            if key in self.file_keys:
                return "file"
        return "default"

    def of(self, dotted: str) -> str:
        """The place a value came from, in words: `--status-port`, `environment variable
        SWARMNODE__STATUS__PORT`, `status.port in c.yaml` or `the default status.port`."""
        kind = self.kind(dotted)
        keys = _self_and_parents(dotted)
        if kind == "flag":
            return next(self.flags[k] for k in keys if k in self.flags)
        if kind == "environment":
            return f"environment variable {next(self.env_vars[k] for k in keys if k in self.env_vars)}"
        if kind == "file":
            return f"{dotted} in {self.file}"
        return f"the default {dotted}"

    def fix(self, dotted: str) -> str:
        """Where to change the value: the flag, the variable, or the config file."""
        kind = self.kind(dotted)
        if kind in ("flag", "environment"):
            return f"change {self.of(dotted)}"
        return f"set {dotted} in {self.file}" if self.file is not None else f"set {dotted} in the config file"

    def described(self) -> str:
        """The whole config's origin in words, for the log's start line: the file (or "defaults")
        and the flags and environment variables that changed it."""
        origin = str(self.file) if self.file is not None else "defaults"
        changed = sorted(set(self.flags.values())) + sorted(set(self.env_vars.values()))
        return f"{origin} with {', '.join(changed)}" if changed else origin

    def with_flag(self, dotted: str, flag: str) -> "ValueSources":
        """These sources with `dotted` set by `flag` (a flag applied after loading)."""
        return ValueSources(self.file, self.file_keys, self.env_vars, {**self.flags, dotted: flag})


def describe_validation_error(error: ValidationError, source: str, sources: ValueSources | None = None) -> str:
    """One line for the first error: where, which field, what is wrong, how to fix it."""
    first = error.errors()[0]
    loc = tuple(first["loc"])
    field = ".".join(str(p) for p in loc) or "(top level)"
    kind = sources.kind(field) if sources is not None and loc else "file"
    if kind in ("flag", "environment"):  # the value did not come from the file: name where it did
        source = sources.of(field)  # type: ignore[union-attr]
    if first["type"] == "extra_forbidden":
        known = _field_names(NodeConfig, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"known fields here: {', '.join(known)}"
        return f"config error in {source}: unknown field '{field}'; {hint}"
    given = first.get("input")
    shown = "" if isinstance(given, (dict, list)) else f" (got {given!r})"
    msg = first["msg"].removeprefix("Value error, ")
    where = f"{field}: " if loc else ""  # a check across sections names its fields in its message
    fix = f"fix it in {source} or see configs/default.yaml" if kind not in ("flag", "environment") else f"change {source}"
    return f"config error in {source}: {where}{msg}{shown}; {fix}"


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


def env_variable_names(environ: Mapping[str, str]) -> dict[str, str]:
    """dotted key -> the SWARMNODE__SECTION__FIELD variable that sets it."""
    return {key[len(ENV_PREFIX):].lower().replace("__", "."): key
            for key in environ if key.startswith(ENV_PREFIX) and len(key) > len(ENV_PREFIX)}


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Overrides from SWARMNODE__SECTION__FIELD=value variables (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for dotted, key in env_variable_names(environ).items():
        raw = environ[key]
        try:
            out[dotted] = yaml.safe_load(raw)
        except yaml.YAMLError:
            out[dotted] = raw
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config error: file not found: {path}; check the path")
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
    flags: Mapping[str, str] | None = None,
) -> NodeConfig:
    """Defaults < YAML file < SWARMNODE__* environment < `overrides` (dotted keys, e.g. CLI flags;
    `flags` names the flag behind each, for error lines)."""
    return load_config_with_sources(path, overrides, environ, flags)[0]


def load_config_with_sources(
    path: Path | None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> tuple[NodeConfig, ValueSources]:
    """load_config, and where each value came from (ValueSources)."""
    environ = os.environ if environ is None else environ
    data = read_yaml(path) if path is not None else {}
    overrides = dict(overrides or {})
    flag_names = {k: (flags or {}).get(k, f"the override {k}") for k in overrides}
    sources = ValueSources(path, frozenset(_dotted_keys(data)), env_variable_names(environ), flag_names)
    source = str(path) if path is not None else "defaults"
    layered = {**env_overrides(environ), **overrides}
    for dotted, value in layered.items():
        _set_dotted(data, dotted, value)
    try:
        return NodeConfig.model_validate(data), sources
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, source, sources)) from None
