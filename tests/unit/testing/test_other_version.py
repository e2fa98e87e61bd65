"""testing/other_version.py: the versions a test's node of another version speaks, from its env var."""
import pytest

from swarmnode.protocol import codec
from swarmnode.testing.other_version import install, parse_versions


def test_versions_are_read_as_lowest_colon_highest():
    assert parse_versions("2:3") == (2, 3)
    assert parse_versions("4") == (4, 4)
    for bad in ("", "x", "3:2", "0:1", "1:1001", "2:y"):
        with pytest.raises(ValueError, match="SWARMNODE_TEST_PROTOCOL"):
            parse_versions(bad)


def test_install_makes_this_process_speak_them_and_write_the_lowest(monkeypatch):
    monkeypatch.setattr(codec, "PROTOCOL_VERSION", codec.PROTOCOL_VERSION)
    monkeypatch.setattr(codec, "SUPPORTED_PROTOCOL_VERSIONS", codec.SUPPORTED_PROTOCOL_VERSIONS)
    install((2, 3))
    assert codec.PROTOCOL_VERSION == 2 and codec.SUPPORTED_PROTOCOL_VERSIONS == (2, 3)
