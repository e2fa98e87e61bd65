"""Node identity: the Ed25519 signing key, the libp2p identity, and the binding between them.

- keys.py: SigningKey, NodeIdentity (signs messages and the binding), load_identity,
  create_node_key / create_p2p_identity (key files, optionally passphrase-protected),
  peer_id_from_ed25519 / ed25519_from_peer_id, verify_ed25519, verify_binding
"""
from swarmnode.identity.keys import (
    PASSPHRASE_ENV,
    KeyFileError,
    NodeIdentity,
    SigningKey,
    create_node_key,
    create_p2p_identity,
    ed25519_from_peer_id,
    load_identity,
    peer_id_from_ed25519,
    verify_binding,
    verify_ed25519,
)

__all__ = [
    "PASSPHRASE_ENV",
    "KeyFileError",
    "NodeIdentity",
    "SigningKey",
    "create_node_key",
    "create_p2p_identity",
    "ed25519_from_peer_id",
    "load_identity",
    "peer_id_from_ed25519",
    "verify_binding",
    "verify_ed25519",
]
