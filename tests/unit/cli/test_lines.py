"""cli/lines.py: an address line is never wrapped or cut by rich, unless folded for a live view."""
from rich.console import Console

from swarmnode.cli.lines import address_line

MADDR = "/ip4/203.0.113.7/tcp/7100/p2p/12D3KooWJ5J4kFbN1xq1nY7wQbSG5E2fX6aQdVnBq8pT6tWZkqfU"


def test_an_address_line_is_neither_wrapped_nor_cut_with_an_ellipsis():
    line = address_line(MADDR)
    assert line.plain == MADDR and line.no_wrap and line.overflow == "ignore"


def test_a_folded_address_line_breaks_at_the_width_and_loses_nothing():
    console = Console(width=40, color_system=None)
    folded = console.render_lines(address_line(MADDR, fold=True), console.options, pad=False)
    assert len(folded) > 1 and "".join(s.text for line in folded for s in line) == MADDR
