"""EntryValidator: Kademlia's check of every value under "/swarmnode/..." against this node's
RecordPolicy (swarmnode.swarm.transports.base), and the same check for an entry pushed on a
topic. Values are DhtEntry bytes (swarmnode.protocol.libp2p_messages)."""
from __future__ import annotations

import time

from libp2p.records.validator import Validator

from swarmnode.protocol import libp2p_messages
from swarmnode.swarm.transports.base import RecordPolicy


class EntryValidator(Validator):
    """Kademlia's check of a value under "/swarmnode/...": a well-formed entry for exactly this
    key and subkey that the node's RecordPolicy admits. Of two, the one expiring later wins."""

    def __init__(self, policy: RecordPolicy | None):
        self._policy = policy

    def validate(self, key: str, value: bytes) -> None:
        if self.check(key, value) is None:
            raise ValueError("refused by this node's record policy")

    def check(self, dht_key: str, value: bytes) -> libp2p_messages.DhtEntry | None:
        """The entry in `value` if it is one for exactly `dht_key` that check_entry passes."""
        entry = libp2p_messages.decode_entry(value)
        if entry is None or libp2p_messages.split_dht_key(dht_key) != (entry.key, entry.subkey):
            return None
        return self.check_entry(entry)

    def check_entry(self, entry: libp2p_messages.DhtEntry) -> libp2p_messages.DhtEntry | None:
        """`entry` if it has not expired and the RecordPolicy admits it (counting what it refuses)."""
        now = time.time()
        if entry.expiration <= now:
            return None
        if self._policy is None:
            return entry
        if not self._policy.knows_key(entry.key, now):
            self._policy.refuse_unknown_key(entry.key.encode(), entry.value)
            return None
        return entry if self._policy.admit(entry.key, entry.subkey, entry.value, entry.expiration, now) else None

    def select(self, key: str, values: list[bytes]) -> int:
        def expiration(value: bytes) -> float:
            entry = libp2p_messages.decode_entry(value)
            return entry.expiration if entry is not None else float("-inf")

        return max(range(len(values)), key=lambda i: expiration(values[i]))


def expired(value: bytes, now: float) -> bool:
    """Whether DhtEntry bytes `value` have expired by `now` (or are no entry at all)."""
    entry = libp2p_messages.decode_entry(value)
    return entry is None or entry.expiration <= now
