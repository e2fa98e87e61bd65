from __future__ import annotations

import pytest

from swarmnode.identity import NodeIdentity, SigningKey


@pytest.fixture
def make_identity(tmp_path):
    """An in-memory NodeIdentity (signing key + libp2p key), no files needed."""

    def make() -> NodeIdentity:
        return NodeIdentity(SigningKey.generate(), SigningKey.generate(), tmp_path / "unused.key")

    return make


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` run where a GPU is present and are skipped, with the reason, elsewhere."""
    marked = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not marked:
        return
    import torch  # only when a cuda test was collected: most runs never pay for the import here

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in marked:
        item.add_marker(skip)
