"""A hivemind RecordValidator that applies a swarmnode RecordPolicy (imports hivemind: load lazily)."""
from __future__ import annotations

from hivemind.dht.protocol import DHTProtocol
from hivemind.dht.routing import DHTID
from hivemind.dht.validation import DHTRecord, RecordValidatorBase
from hivemind.utils import get_dht_time
from hivemind.utils.serializer import MSGPackSerializer

from swarmnode.swarm.peers import Verdicts
from swarmnode.swarm.transports.base import RecordPolicy

_UNDECODABLE = object()
# Verdicts kept while the policy's keys stay the same (a window): a read merges the same entries
# from each of a key's holders, and the next read finds most of them again, so most entries
# this node validates it has validated before.
VERDICTS_KEPT = 16384


def _loads(data: bytes) -> object:
    try:
        return MSGPackSerializer.loads(data)
    except Exception:  # noqa: BLE001 - any bytes may arrive; the policy rejects what it cannot use
        return _UNDECODABLE


class PolicyValidator(RecordValidatorBase):
    """Maps hivemind's hashed keys back to the swarm's key names and asks the policy: a known
    key by a table of hashes, a shard's key by hashing the few names the value may sit under."""

    def __init__(self, policy: RecordPolicy):
        self._policy = policy
        self._names: dict[bytes, str] = {}
        self._names_for: tuple[str, ...] = ()
        self._verdicts = Verdicts(VERDICTS_KEPT)
        self.judged = 0  # values validated: stored onto this node by peers, or brought back by reads
        self.decided = 0  # of those, the ones judged afresh (the rest had a verdict kept)

    def _key_names(self, now: float) -> dict[bytes, str]:
        """Hashed key -> key name for the policy's current keys (re-hashed only when they change;
        the verdicts kept go with them: a key may be known no longer)."""
        keys = tuple(self._policy.known_keys(now))
        if keys != self._names_for:
            self._names = {DHTID.generate(source=key).to_bytes(): key for key in keys}
            self._names_for = keys
            self._verdicts = Verdicts(VERDICTS_KEPT)
        return self._names

    def validate(self, record: DHTRecord) -> bool:
        self.judged += 1
        now = get_dht_time()
        names = self._key_names(now)
        # Everything a verdict depends on besides the clock.
        digest = Verdicts.digest(record.key, record.subkey, record.value, record.expiration_time)
        seen, verdict = self._verdicts.get(digest)
        if not seen:
            self.decided += 1
            verdict = self._judge(record, names, now)
            self._verdicts.put(digest, verdict)
        return bool(verdict)

    def _judge(self, record: DHTRecord, names: dict[bytes, str], now: float) -> bool:
        value = _loads(record.value)
        subkey = None if record.subkey == DHTProtocol.IS_REGULAR_VALUE else _loads(record.subkey)
        key = names.get(record.key)
        if key is None:
            key = self._shard_key_name(record, subkey, value, now)
        if key is None:
            self._policy.refuse_unknown_key(record.key, value)
            return False
        return self._policy.admit(key, subkey, value, record.expiration_time, now)

    def _shard_key_name(self, record: DHTRecord, subkey: object, value: object, now: float) -> str | None:
        """The shard key, among those the value itself may sit under, whose hash is the record's."""
        for name in self._policy.candidate_keys(subkey, value, record.expiration_time, now):
            if DHTID.generate(source=name).to_bytes() == record.key:
                return name
        return None
