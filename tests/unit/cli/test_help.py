"""cli/help.py: every help page reads well at 80 columns: no line wider, no typer-internal
placeholder (`<bool>`, `<list[str]>`, `<int range>`), each command's description on one line."""
import re

import pytest
from typer.testing import CliRunner

from swarmnode.cli.app import app
from swarmnode.cli.help import reflowed

COMMANDS = [[], ["version"], ["init"], ["run"], ["bootstrap"], ["status"], ["peers"], ["logs"], ["swarm"], ["swarm", "local"], ["bench"],
            ["bench", "async"], ["reset-training"]]


def help_page(args: list[str]) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80", "LINES": "24"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "swarmnode")
def test_help_fits_80_columns_without_internal_placeholders(args):
    page = help_page(args)
    assert max(len(line) for line in page.splitlines()) <= 80
    assert not re.search(r"<(bool|list|int|float|str|path|text)", page), page


@pytest.mark.parametrize("group", [[], ["swarm"], ["bench"]], ids=lambda a: " ".join(a) or "swarmnode")
def test_each_command_is_described_on_one_line(group):
    page = help_page(group)
    commands = [row for row in page[page.index("Commands"):].splitlines() if row.startswith("│")]  # every panel's rows
    # a described command's row starts with its name; a wrapped description would add a row without one
    assert all(re.match(r"^│ [a-z-]+ +\S", row) for row in commands if row.strip("│ ")), commands


def test_run_help_is_short_and_groups_rare_options():
    page = help_page(["run"])
    assert len(page.splitlines()) <= 32
    assert "Rarely needed" in page and page.index("--initial-peer") < page.index("Rarely needed") < page.index("--slowdown")
    assert "MULTIADDR" in page and "PORT" in page


def test_swarm_local_help_is_not_broken_mid_sentence():
    page = " ".join(help_page(["swarm", "local"]).split())
    assert "At the end the last status of every node goes to <root>/summary.json" in page


def test_reflowed_joins_each_paragraph():
    assert reflowed("One line.\n\n    Two\n    lines.\n") == "One line.\n\nTwo lines."
