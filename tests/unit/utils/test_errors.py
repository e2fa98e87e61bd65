"""utils/errors.py: an error as one line."""
from swarmnode.utils.errors import first_line


def test_first_line_keeps_what_follows_a_trailing_colon():
    assert first_line(RuntimeError("Error(s) in loading state_dict for X:\n\tsize mismatch for a: ...\n\tb")) == \
        "Error(s) in loading state_dict for X: size mismatch for a: ..."
    assert first_line(ValueError("bad\nmore")) == "bad" and first_line(KeyError()) == "KeyError"
