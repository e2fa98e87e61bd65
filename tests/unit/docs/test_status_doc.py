"""docs/status.md documents every key of the status document."""
from pathlib import Path

from swarmnode.status.snapshot import SUMMARIES_KEYS
from tests.unit.status.helpers import status


DOC = (Path(__file__).parents[3] / "docs" / "status.md").read_text(encoding="utf-8")


def test_docs_cover_every_status_key():
    top = [k for k in status() if f"| `{k}` |" not in DOC]
    assert top == []
    section = DOC[DOC.index("`summaries` (every key"):]
    assert [k for k in SUMMARIES_KEYS if f"| `{k}` |" not in section] == []
    peer_rows = DOC[DOC.index("Each entry of `peers`"):DOC.index("Rejection reasons")]
    assert "| `base_fingerprint` |" in peer_rows
