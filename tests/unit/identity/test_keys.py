import os
import stat

import base58
import pytest

from swarmnode.home import init_home
from swarmnode.identity import (
    PASSPHRASE_ENV,
    KeyFileError,
    create_node_key,
    ed25519_from_peer_id,
    load_identity,
    peer_id_from_ed25519,
    verify_binding,
)
from swarmnode.identity.keys import load_node_key, load_p2p_identity


def test_peer_id_is_identity_multihash_of_libp2p_public_key():
    key = bytes(range(32))
    peer_id = peer_id_from_ed25519(key)
    # libp2p spec: identity multihash (0x00, len 36) of protobuf {Type: Ed25519, Data: key}
    assert base58.b58decode(peer_id) == b"\x00\x24" + b"\x08\x01\x12\x20" + key
    assert peer_id.startswith("12D3KooW")
    assert ed25519_from_peer_id(peer_id) == key


@pytest.mark.parametrize("bad", ["", "not-base58-0OIl", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N"])
def test_peer_id_without_ed25519_key_yields_none(bad):
    assert ed25519_from_peer_id(bad) is None


def test_binding_verifies_only_for_the_bound_key(make_identity):
    a, b = make_identity(), make_identity()
    assert verify_binding(a.peer_id, a.public_key, a.bind_signing_key())
    assert not verify_binding(a.peer_id, b.public_key, a.bind_signing_key())
    assert not verify_binding(b.peer_id, a.public_key, a.bind_signing_key())


def test_init_creates_private_files_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)
    home = tmp_path / "home"
    first = init_home(home)
    assert len(first.created) == 3
    for path in (first.home.node_key, first.home.p2p_identity):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    before = (first.home.node_key.read_bytes(), first.home.p2p_identity.read_bytes())
    second = init_home(home)
    assert second.created == () and len(second.kept) == 3
    assert (first.home.node_key.read_bytes(), first.home.p2p_identity.read_bytes()) == before
    identity = load_identity(first.home.node_key, first.home.p2p_identity)
    assert identity.peer_id == load_identity(first.home.node_key, first.home.p2p_identity).peer_id


def test_passphrase_encrypts_node_key(tmp_path):
    path = tmp_path / "node_key.pem"
    assert create_node_key(path, "correct horse")
    assert b"ENCRYPTED" in path.read_bytes()
    key = load_node_key(path, "correct horse")
    with pytest.raises(KeyFileError, match=PASSPHRASE_ENV):
        load_node_key(path, None)
    with pytest.raises(KeyFileError, match="wrong"):
        load_node_key(path, "wrong passphrase")
    assert len(key.public_bytes) == 32


def test_world_readable_unencrypted_key_is_refused(tmp_path):
    path = tmp_path / "node_key.pem"
    create_node_key(path, None)
    os.chmod(path, 0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_node_key(path, None)


def test_damaged_p2p_identity_is_refused(tmp_path):
    path = tmp_path / "p2p.key"
    path.write_bytes(b"\x08\x01\x12\x40" + b"\x00" * 64)
    os.chmod(path, 0o600)
    with pytest.raises(KeyFileError, match="damaged"):
        load_p2p_identity(path)
    path.write_bytes(b"garbage")
    with pytest.raises(KeyFileError, match="not an Ed25519"):
        load_p2p_identity(path)


def test_a_damaged_key_file_gets_a_next_step(tmp_path):
    from swarmnode.identity.keys import create_node_key, create_p2p_identity, load_node_key, load_p2p_identity

    node_key, p2p = tmp_path / "node_key.pem", tmp_path / "p2p_identity.key"
    create_node_key(node_key, None)
    create_p2p_identity(p2p)
    node_key.write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    data = p2p.read_bytes()  # flip the last byte: writing a fixed byte left it intact 1 time in 256
    p2p.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    for load in (lambda: load_node_key(node_key, None), lambda: load_p2p_identity(p2p)):
        with pytest.raises(KeyFileError) as info:
            load()
        assert f"swarmnode init --home {tmp_path}" in str(info.value) and "\n" not in str(info.value)
