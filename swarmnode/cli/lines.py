"""Rich lines shared by the headline and the full view (no I/O)."""
from __future__ import annotations

from rich.text import Text


def address_line(maddr: str, fold: bool = False) -> Text:
    """A multiaddr on its own line, whole: never wrapped at a word or cut with an ellipsis by
    rich (`fold`: broken at the width, for a live view that cannot let the terminal wrap)."""
    return Text(maddr, no_wrap=not fold, overflow="fold" if fold else "ignore")
