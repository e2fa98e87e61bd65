from __future__ import annotations

import pytest

from swarmnode.identity import NodeIdentity, SigningKey


@pytest.fixture
def make_identity(tmp_path):
    """An in-memory NodeIdentity (signing key + libp2p key), no files needed."""

    def make() -> NodeIdentity:
        return NodeIdentity(SigningKey.generate(), SigningKey.generate(), tmp_path / "unused.key")

    return make
