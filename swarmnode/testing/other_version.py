"""A node of another wire-protocol version: the project's own daemon, speaking other versions.

    SWARMNODE_TEST_PROTOCOL=2:3 python -m swarmnode.testing.other_version run --home H --config C ...

runs `swarmnode` unchanged except that it speaks protocol versions 2 to 3 (written in its
PeerRecord) and writes every message in version 2 (the lowest it speaks, as a newer node does
while older ones are around). Everything else is the real node: identity, p2pd, DHT, training,
gossip. It is how a test puts two versions in one swarm without a second copy of the code
(tests/integration/test_nodes_of_two_protocol_versions_share_one_swarm.py).
SWARMNODE_TEST_PROTOCOL is `<lowest>:<highest>` (or one version), within the readable versions.
"""
from __future__ import annotations

import os
import sys

from swarmnode.protocol import codec
from swarmnode.protocol.versions import ProtocolVersions

ENV = "SWARMNODE_TEST_PROTOCOL"


def parse_versions(text: str) -> tuple[int, int]:
    """'2:3' -> (2, 3); '2' -> (2, 2). Raises ValueError naming the value and ENV."""
    lowest, _, highest = text.partition(":")
    try:
        versions = (int(lowest), int(highest or lowest))
    except ValueError:
        raise ValueError(f"{ENV}={text!r}: expected <lowest>:<highest>, e.g. 2:3") from None
    first, last = codec.READABLE_PROTOCOL_VERSIONS
    if not first <= versions[0] <= versions[1] <= last:
        raise ValueError(f"{ENV}={text!r}: need {first} <= lowest <= highest <= {last}")
    return versions


def main(argv: list[str]) -> int:
    """`swarmnode <argv>` whose node speaks the versions ENV names (handed to the CLI, which hands
    them to the node: nothing else in the process changes)."""
    text = os.environ.get(ENV, "")
    try:
        versions = ProtocolVersions(*parse_versions(text))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from swarmnode.cli.app import main as cli_main

    print(f"[other_version] this node speaks protocol versions {versions.lowest}-{versions.highest}", flush=True)
    return cli_main(argv, versions=versions)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
