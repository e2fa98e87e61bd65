"""docs/configuration.md documents every config field, names none that does not exist, and is
what scripts/dev/config_doc.py generates from the model (regenerate it with that script)."""
import re
from pathlib import Path

from pydantic import BaseModel

from swarmnode.config.model import NodeConfig

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def model_fields() -> set[str]:
    names = set()
    for section, info in NodeConfig.model_fields.items():
        assert issubclass(info.annotation, BaseModel), f"{section} is not a section"
        names.update(f"{section}.{name}" for name in info.annotation.model_fields)
    return names


def documented_fields() -> set[str]:
    """The dotted names in the first column of the doc's field tables."""
    return set(re.findall(r"^\| `([a-z_]+\.[a-z_0-9]+)` \|", DOC, flags=re.MULTILINE))


def test_every_field_is_documented():
    assert sorted(model_fields() - documented_fields()) == []


def test_the_doc_names_no_field_that_does_not_exist():
    assert sorted(documented_fields() - model_fields()) == []


def test_the_doc_is_what_the_generator_writes():
    config_doc = load_script("scripts/dev/config_doc.py")
    assert DOC == config_doc.render(), "docs/configuration.md is stale: run scripts/dev/config_doc.py"
