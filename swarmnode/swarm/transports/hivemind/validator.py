"""A hivemind RecordValidator that applies a swarmnode RecordPolicy (imports hivemind: load lazily)."""
from __future__ import annotations

from hivemind.dht.protocol import DHTProtocol
from hivemind.dht.routing import DHTID
from hivemind.dht.validation import DHTRecord, RecordValidatorBase
from hivemind.utils import get_dht_time
from hivemind.utils.serializer import MSGPackSerializer

from swarmnode.swarm.transports.base import RecordPolicy

_UNDECODABLE = object()


def _loads(data: bytes) -> object:
    try:
        return MSGPackSerializer.loads(data)
    except Exception:  # noqa: BLE001 - any bytes may arrive; the policy rejects what it cannot use
        return _UNDECODABLE


class PolicyValidator(RecordValidatorBase):
    """Maps hivemind's hashed keys back to the swarm's key names and asks the policy."""

    def __init__(self, policy: RecordPolicy):
        self._policy = policy
        self._names: dict[bytes, str] = {}
        self._names_for: tuple[str, ...] = ()

    def _key_names(self, now: float) -> dict[bytes, str]:
        """Hashed key -> key name for the policy's current keys (re-hashed only when they change)."""
        keys = tuple(self._policy.known_keys(now))
        if keys != self._names_for:
            self._names = {DHTID.generate(source=key).to_bytes(): key for key in keys}
            self._names_for = keys
        return self._names

    def validate(self, record: DHTRecord) -> bool:
        now = get_dht_time()
        names = self._key_names(now)
        value = _loads(record.value)
        key = names.get(record.key)
        if key is None:
            self._policy.refuse_unknown_key(record.key, value)
            return False
        subkey = None if record.subkey == DHTProtocol.IS_REGULAR_VALUE else _loads(record.subkey)
        return self._policy.admit(key, subkey, value, record.expiration_time, now)
