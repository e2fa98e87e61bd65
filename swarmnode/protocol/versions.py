"""Which wire-protocol version two nodes talk in, and what to say when they have none in common.

A node speaks a range of versions (its ProtocolVersions, THIS_RELEASE unless a test's node of
another version is given others; published in its PeerRecord). Two nodes whose ranges overlap talk in the highest version both speak; two whose
ranges do not overlap skip each other, and the log says which side should upgrade.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VersionRange = tuple[int, int]  # (lowest, highest), both included


@dataclass(frozen=True)
class ProtocolVersions:
    """The wire-protocol versions a node speaks, both included. It writes its messages in the
    lowest, as a newer node does while older ones are around."""

    lowest: int
    highest: int

    @property
    def written(self) -> int:
        return self.lowest

    @property
    def spoken(self) -> VersionRange:
        return (self.lowest, self.highest)

    def speaks(self, version: int) -> bool:
        return self.lowest <= version <= self.highest


# What this release speaks and writes (swarmnode/testing/other_version.py runs a node of others).
THIS_RELEASE = ProtocolVersions(2, 2)


def common_version(ours: VersionRange, theirs: VersionRange) -> int | None:
    """The highest version both ranges hold, or None when they do not overlap."""
    highest = min(ours[1], theirs[1])
    return highest if highest >= max(ours[0], theirs[0]) else None


def who_should_upgrade(ours: VersionRange, theirs: VersionRange) -> Literal["this node", "peer"] | None:
    """The side that runs the older swarmnode when the ranges do not overlap, else None."""
    if theirs[0] > ours[1]:
        return "this node"
    if theirs[1] < ours[0]:
        return "peer"
    return None


def _span(versions: VersionRange) -> str:
    return f"{versions[0]}–{versions[1]}"


def describe_incompatible(who: str, theirs: VersionRange, ours: VersionRange) -> str:
    """One line naming both ranges and the side that should upgrade, e.g. "peer 12D3KooW…abcdef
    speaks protocol versions 2–3, this node 1–1: upgrade swarmnode on this node to join it"."""
    head = f"{who} speaks protocol versions {_span(theirs)}, this node {_span(ours)}"
    upgrade = who_should_upgrade(ours, theirs)
    if upgrade == "this node":
        return f"{head}: upgrade swarmnode on this node to join it"
    if upgrade == "peer":
        return f"{head}: that peer runs an older swarmnode and should upgrade"
    return f"{head}: they talk in version {common_version(ours, theirs)}"
