"""testing/other_version.py: the versions a test's node of another version speaks, from its env var."""
import pytest

from swarmnode.protocol import codec
from swarmnode.testing.other_version import parse_versions


def test_versions_are_read_as_lowest_colon_highest():
    assert parse_versions("2:3") == (2, 3)
    assert parse_versions("4") == (4, 4)
    for bad in ("", "x", "3:2", "0:1", "1:1001", "2:y"):
        with pytest.raises(ValueError, match="SWARMNODE_TEST_PROTOCOL"):
            parse_versions(bad)


def test_the_cli_is_given_them_and_writes_the_lowest(monkeypatch):
    from swarmnode.cli import app as cli_app
    from swarmnode.testing import other_version

    given = {}
    monkeypatch.setattr(cli_app, "main", lambda argv, versions: given.update(argv=argv, versions=versions) or 0)
    monkeypatch.setenv(other_version.ENV, "3:4")
    assert other_version.main(["run"]) == 0
    versions = given["versions"]
    assert versions.written == 3 and versions.spoken == (3, 4)
    assert codec.PROTOCOL_VERSION == 2 and codec.SUPPORTED_PROTOCOL_VERSIONS == (2, 2)  # nothing global changed
