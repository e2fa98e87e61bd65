"""docs/security.md names every rejection reason and every limit a user can set."""
from pathlib import Path

from swarmnode.config.model import LimitsConfig
from swarmnode.protocol import RejectReason

DOC = (Path(__file__).parents[3] / "docs" / "security.md").read_text(encoding="utf-8")


def test_every_rejection_reason_is_documented():
    missing = [r.value for r in RejectReason if f"| `{r.value}` |" not in DOC]
    assert missing == []


def test_every_limit_is_documented():
    missing = [name for name in LimitsConfig.model_fields if f"`limits.{name}`" not in DOC]
    assert missing == []
