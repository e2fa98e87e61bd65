"""An error as one line, for the one-line failures users read."""
from __future__ import annotations


def first_line(error: BaseException) -> str:
    """An error's first non-empty line; a first line that ends in a colon (load_state_dict's
    "Error(s) in loading state_dict for X:") with the next one; the error's type when it has no text."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]
