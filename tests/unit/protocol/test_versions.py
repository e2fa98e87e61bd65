"""protocol/versions.py: the version two ranges talk in, and the line that says who should upgrade."""
from swarmnode.protocol.versions import common_version, describe_incompatible, who_should_upgrade


def test_overlapping_ranges_talk_in_the_highest_version_both_speak():
    assert common_version((1, 1), (1, 1)) == 1
    assert common_version((1, 3), (2, 5)) == 3
    assert common_version((2, 5), (1, 3)) == 3
    assert common_version((1, 4), (2, 2)) == 2
    assert common_version((3, 3), (1, 3)) == 3  # touching at one version is enough


def test_ranges_that_do_not_overlap_have_no_version_and_name_the_older_side():
    assert common_version((1, 1), (2, 3)) is None and common_version((2, 3), (1, 1)) is None
    assert who_should_upgrade((1, 1), (2, 3)) == "this node"
    assert who_should_upgrade((2, 3), (1, 1)) == "peer"
    assert who_should_upgrade((1, 2), (2, 3)) is None


def test_the_line_names_both_ranges_and_the_side_that_should_upgrade():
    assert describe_incompatible("peer X", (2, 3), (1, 1)) == (
        "peer X speaks protocol versions 2–3, this node 1–1: upgrade swarmnode on this node to join it")
    assert describe_incompatible("peer X", (1, 1), (2, 3)) == (
        "peer X speaks protocol versions 1–1, this node 2–3: that peer runs an older swarmnode and should upgrade")
    assert describe_incompatible("peer X", (1, 2), (2, 3)).endswith(": they talk in version 2")
