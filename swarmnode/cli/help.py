"""Help pages that read well at 80 columns: a flag shows no value placeholder, and an option
with a value shows a plain one (PATH, INTEGER), never typer's internal `<bool>` or `<list[str]>`."""
from __future__ import annotations

import inspect
import re

import typer.core

INTERNAL_TYPE = re.compile(r"^<(?:list\[)?([a-z]+)(?: range)?\]?>$")


def plain_metavar(param) -> str | None:
    """The placeholder a help page shows for `param`: "" for a flag, NAME for typer's `<name>`."""
    if getattr(param, "is_flag", False):
        return ""
    shown = param.display_type(None) if hasattr(param, "display_type") else None
    match = INTERNAL_TYPE.match(shown or "")
    return {"str": "TEXT", "int": "INTEGER"}.get(match.group(1), match.group(1).upper()) if match else None


def reflowed(text: str | None) -> str | None:
    """A docstring with each paragraph on one line, for the help page to wrap at the terminal's
    width (typer keeps a later paragraph's source line breaks, and breaks it mid-sentence)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def _set_plain_metavars(command, ctx) -> None:
    command.help = reflowed(command.help)
    for param in command.get_params(ctx):
        if param.metavar is None and param.param_type_name == "option":
            param.metavar = plain_metavar(param)


class HelpCommand(typer.core.TyperCommand):
    """A command whose help page shows plain placeholders."""

    def format_help(self, ctx, formatter) -> None:
        _set_plain_metavars(self, ctx)
        super().format_help(ctx, formatter)


class HelpGroup(typer.core.TyperGroup):
    """A group (`swarmnode`, `swarmnode swarm`) whose help page shows plain placeholders."""

    def format_help(self, ctx, formatter) -> None:
        _set_plain_metavars(self, ctx)
        super().format_help(ctx, formatter)
