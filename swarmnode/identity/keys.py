"""Key files of a node home: the Ed25519 node signing key and the libp2p identity.

Two keys, two jobs:
- the *node key* signs every swarmnode message; it may be encrypted with a passphrase
  (env SWARMNODE_KEY_PASSPHRASE), since only this process reads it;
- the *libp2p identity* is what p2pd loads to get its peer id; p2pd cannot decrypt, so it is
  stored unencrypted (mode 0600). It is also Ed25519, so the peer id embeds its public key and
  anyone can check a binding signature made with it (see `bind_signing_key`).

Neither file is ever overwritten: creation uses O_EXCL.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import base58
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PASSPHRASE_ENV = "SWARMNODE_KEY_PASSPHRASE"
BINDING_DOMAIN = b"swarmnode/v1/bind\x00"

# libp2p key encodings (libp2p spec "peer-ids"): protobuf {Type=Ed25519(1), Data=...}.
# The message is fixed-size for Ed25519, so its bytes are a constant prefix plus the key.
_LIBP2P_ED25519_PRIVATE_PREFIX = b"\x08\x01\x12\x40"  # Data = 32-byte seed || 32-byte public key
_LIBP2P_ED25519_PUBLIC_PREFIX = b"\x08\x01\x12\x20"  # Data = 32-byte public key
# A peer id of a key whose encoding is <= 42 bytes is the identity multihash (code 0x00) of it.
_IDENTITY_MULTIHASH_PREFIX = b"\x00\x24"


class KeyFileError(Exception):
    """A key file is missing, unreadable, malformed, too open or needs a passphrase."""


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def peer_id_from_ed25519(public_key: bytes) -> str:
    """The libp2p peer id (base58, "12D3KooW...") of a 32-byte Ed25519 public key."""
    if len(public_key) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    multihash = _IDENTITY_MULTIHASH_PREFIX + _LIBP2P_ED25519_PUBLIC_PREFIX + public_key
    return base58.b58encode(multihash).decode("ascii")


def ed25519_from_peer_id(peer_id: str) -> bytes | None:
    """The Ed25519 public key embedded in a peer id, or None if it embeds no Ed25519 key."""
    try:
        raw = base58.b58decode(peer_id.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return None
    prefix = _IDENTITY_MULTIHASH_PREFIX + _LIBP2P_ED25519_PUBLIC_PREFIX
    if len(raw) != len(prefix) + 32 or not raw.startswith(prefix):
        return None
    return raw[len(prefix):]


def verify_ed25519(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """True iff `signature` is a valid Ed25519 signature of `message` under `public_key`."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def binding_message(peer_id: str, signing_public_key: bytes) -> bytes:
    return BINDING_DOMAIN + peer_id.encode("utf-8") + b"\x00" + signing_public_key


def verify_binding(peer_id: str, signing_public_key: bytes, binding: bytes) -> bool:
    """Check that the libp2p key behind `peer_id` signed `signing_public_key`."""
    p2p_public = ed25519_from_peer_id(peer_id)
    if p2p_public is None:
        return False
    return verify_ed25519(p2p_public, binding, binding_message(peer_id, signing_public_key))


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key with the operations the node needs."""

    private: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> "SigningKey":
        return cls(Ed25519PrivateKey.generate())

    @property
    def public_bytes(self) -> bytes:
        return _raw_public(self.private.public_key())

    @property
    def seed_bytes(self) -> bytes:
        """The 32-byte private seed (what a libp2p library builds its key pair from)."""
        return self.private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                          serialization.NoEncryption())

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)


@dataclass(frozen=True)
class NodeIdentity:
    """Everything a node signs with: its node key, its libp2p key and the binding of the two."""

    signing_key: SigningKey
    p2p_key: SigningKey
    p2p_identity_path: Path

    @property
    def peer_id(self) -> str:
        return peer_id_from_ed25519(self.p2p_key.public_bytes)

    @property
    def public_key(self) -> bytes:
        return self.signing_key.public_bytes

    def bind_signing_key(self) -> bytes:
        """The libp2p key's signature over the node signing key (goes into the PeerRecord)."""
        return self.p2p_key.sign(binding_message(self.peer_id, self.public_key))

    def sign(self, message: bytes) -> bytes:
        return self.signing_key.sign(message)


# ---------------------------------------------------------------------------------------------
# files


def _write_new(path: Path, data: bytes) -> None:
    """Create `path` with mode 0600; never overwrite an existing file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_private_mode(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise KeyFileError(
            f"key file {path} is readable by other users (mode {mode:o}); fix it with: chmod 600 {path}"
        )


def create_node_key(path: Path, passphrase: str | None) -> bool:
    """Write a new node signing key to `path` unless one exists. Returns True if it wrote one."""
    if path.exists():
        return False
    key = SigningKey.generate()
    encryption = (
        serialization.BestAvailableEncryption(passphrase.encode("utf-8"))
        if passphrase
        else serialization.NoEncryption()
    )
    pem = key.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    _write_new(path, pem)
    return True


def _replace_hint(path: Path) -> str:
    """The next step for a key file that cannot be used."""
    return (f"restore it from a backup, or move it aside and run `swarmnode init --home {path.parent}` for a new one "
            "(the node then has a new identity)")


def load_node_key(path: Path, passphrase: str | None) -> SigningKey:
    if not path.is_file():
        raise KeyFileError(f"node key {path} not found; create a node home with: swarmnode init")
    data = path.read_bytes()
    encrypted = b"ENCRYPTED" in data.split(b"\n", 1)[0]
    if not encrypted:
        _check_private_mode(path)
    if encrypted and not passphrase:
        raise KeyFileError(f"node key {path} is encrypted; set {PASSPHRASE_ENV} to its passphrase")
    try:
        key = serialization.load_pem_private_key(data, password=passphrase.encode("utf-8") if encrypted else None)
    except (ValueError, TypeError) as e:
        first = str(e).split(". ")[0].strip().rstrip(".") or type(e).__name__  # cryptography adds a paragraph
        if encrypted:
            raise KeyFileError(f"cannot read node key {path}: {first} (wrong {PASSPHRASE_ENV}?)") from None
        raise KeyFileError(f"cannot read node key {path}: {first} (the file is damaged); {_replace_hint(path)}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"node key {path} is not an Ed25519 key; {_replace_hint(path)}")
    return SigningKey(key)


def create_p2p_identity(path: Path) -> bool:
    """Write a new libp2p Ed25519 identity in the format p2pd loads, unless one exists."""
    if path.exists():
        return False
    key = SigningKey.generate()
    seed = key.private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    _write_new(path, _LIBP2P_ED25519_PRIVATE_PREFIX + seed + key.public_bytes)
    return True


def load_p2p_identity(path: Path) -> SigningKey:
    if not path.is_file():
        raise KeyFileError(f"libp2p identity {path} not found; create a node home with: swarmnode init")
    _check_private_mode(path)
    data = path.read_bytes()
    if len(data) != 4 + 64 or not data.startswith(_LIBP2P_ED25519_PRIVATE_PREFIX):
        raise KeyFileError(f"libp2p identity {path} is not an Ed25519 libp2p private key; {_replace_hint(path)}")
    key = SigningKey(Ed25519PrivateKey.from_private_bytes(data[4:36]))
    if key.public_bytes != data[36:]:
        raise KeyFileError(f"libp2p identity {path} is damaged (public half does not match); {_replace_hint(path)}")
    return key


def load_identity(node_key_path: Path, p2p_identity_path: Path) -> NodeIdentity:
    passphrase = os.environ.get(PASSPHRASE_ENV) or None
    return NodeIdentity(
        signing_key=load_node_key(node_key_path, passphrase),
        p2p_key=load_p2p_identity(p2p_identity_path),
        p2p_identity_path=p2p_identity_path,
    )
