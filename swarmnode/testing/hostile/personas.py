"""The hostile peer's parts: personas (`Persona`: one identity with its own transport, its
PeerRecord and announcements), the served `Outbox`, and `HostilePeer`, which starts a persona per
attack against one victim. The process that runs them is peer.py; the attacks import these."""
from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from swarmnode.identity import NodeIdentity, SigningKey, create_p2p_identity
from swarmnode.identity.keys import load_p2p_identity
from swarmnode.protocol import PeerRecordFields, build_peer_record
from swarmnode.protocol.codec import MessageKind, open_envelope
from swarmnode.protocol.generated import peer_record_pb2, rollout_batch_pb2
from swarmnode.protocol.rollout_messages import build_rollout_announcement, check_rollout_announcement
from swarmnode.swarm.gossip.rollout_bookkeeping import (
    MAX_BATCHES_PER_FETCH,
    MAX_ROLLOUT_FETCH_RESPONSE_BYTES,
    ROLLOUT_PROTOCOL,
    parse_rollout_fetch_response,
    rollout_fetch_request,
)
from swarmnode.swarm.gossip.summary_outbox import SUMMARY_PROTOCOL
from swarmnode.swarm.transports.base import RequestFailed
from swarmnode.swarm.windows import window_index, windows_to_read
from swarmnode.testing.hostile.keys import peer_records_key, rollouts_key, summaries_key
from swarmnode.testing.hostile.groups import Crafter
from swarmnode.testing.hostile.persona_transport import (
    LIBP2P_MESH_WAIT_S,
    open_persona_transport,
    push,
    store_direct,
)

log = logging.getLogger("hostile")

RECORD_TTL_S = 8.0  # like configs/local.yaml's records.ttl_s
ANNOUNCE_TTL_S = 8.0
RECORD_INTERVAL_S = 2.0
ANNOUNCE_INTERVAL_S = 1.0


def say(message: str) -> None:
    print(f"[hostile {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- identities ----------------------------------------------------------------------------------


def throwaway_identity() -> NodeIdentity:
    """A valid identity with no p2pd behind it (node key + libp2p key, binding signable)."""
    return NodeIdentity(SigningKey.generate(), SigningKey.generate(), p2p_identity_path=Path("/nonexistent"))


def record_fields(swarm: str, multiaddrs: tuple[str, ...], model_fingerprint: str,
                  base_fingerprint: str = "") -> PeerRecordFields:
    return PeerRecordFields(
        software_version="0.1.0", swarm=swarm, multiaddrs=multiaddrs, model_fingerprint=model_fingerprint,
        device=peer_record_pb2.DeviceInfo(kind="cpu", cpu_cores=2), capability=peer_record_pb2.Capability(),
        state=peer_record_pb2.NODE_STATE_RUNNING, client_mode=False, base_fingerprint=base_fingerprint,
    )


# -- personas ------------------------------------------------------------------------------------


ServeFn = Callable[[int, int, str], Any]  # (after_batch_id, max_batches, remote peer id) -> response bytes
SummaryFn = Callable[[bytes, str], Any]  # (request bytes, remote peer id) -> response bytes


class Persona:
    """One identity with its own transport (p2pd and a hivemind DHT node, or a py-libp2p host):
    publishes a PeerRecord, announces a batch-id range, and answers ROLLOUT_PROTOCOL requests
    with whatever `serve_fn` returns."""

    def __init__(self, name: str, workdir: Path, swarm: str, window_s: float, model_fingerprint: str,
                 base_fingerprint: str = "", transport_kind: str = "hivemind"):
        self.name = name
        key_path = workdir / f"{name}.p2p.key"
        create_p2p_identity(key_path)
        self.identity = NodeIdentity(SigningKey.generate(), load_p2p_identity(key_path), key_path)
        self.swarm = swarm
        self.window_s = window_s
        self.model_fingerprint = model_fingerprint
        self.base_fingerprint = base_fingerprint  # in its PeerRecord: "" unless summary attacks run
        self.transport_kind = transport_kind
        self.transport = open_persona_transport(transport_kind, key_path, swarm)
        self._mesh_wait_s = LIBP2P_MESH_WAIT_S
        self.serve_fn: ServeFn | None = None
        self.announce_range: tuple[int, int] | None = None
        self.summary_fn: SummaryFn | None = None  # answers SUMMARY_PROTOCOL requests (None: "not held")
        self.summary_announcement: Callable[[float, int], bytes] | None = None  # (now, window) -> DHT value
        self.publish_record = True
        self.sent: Counter = Counter()  # what this persona sent, by kind
        self.requests_by_peer: Counter = Counter()
        self.multiaddrs: list[str] = []
        self._tasks: list[asyncio.Task] = []

    @property
    def peer_id(self) -> str:
        return self.identity.peer_id

    def now(self) -> float:
        return self.transport.dht_time()

    def window(self) -> int:
        return window_index(self.now(), self.window_s)

    async def start(self, join_maddr: str) -> None:
        await self.transport.start()
        await self.transport.serve(ROLLOUT_PROTOCOL, self._answer)
        await self.transport.serve(SUMMARY_PROTOCOL, self._answer_summary)
        await self.transport.join(join_maddr, 10.0)
        self.multiaddrs = await self.transport.multiaddrs()
        self._tasks = [asyncio.create_task(self._record_loop()), asyncio.create_task(self._announce_loop()),
                       asyncio.create_task(self._summary_announce_loop())]

    async def stop(self) -> None:
        """Stop its loops and p2pd (again: a no-op)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.transport.stop()

    # -- serving -----------------------------------------------------------------------------------

    def respond(self, envelopes: list[bytes]) -> bytes:
        self.sent["batch_envelopes"] += len(envelopes)
        self.sent["fetch_responses"] += 1
        return rollout_batch_pb2.RolloutFetchResponse(envelopes=envelopes).SerializeToString()

    async def _answer(self, request: bytes, remote: str) -> bytes:
        self.requests_by_peer[remote] += 1
        try:
            parsed = rollout_batch_pb2.RolloutFetchRequest.FromString(request)
            after, max_batches = parsed.after_batch_id, parsed.max_batches
        except Exception:  # noqa: BLE001 - whatever it asked, answer something
            after, max_batches = 0, MAX_BATCHES_PER_FETCH
        fn = self.serve_fn
        if fn is None:
            return self.respond([])
        out = fn(after, max_batches, remote)
        if inspect.isawaitable(out):
            out = await out
        return out

    async def _answer_summary(self, request: bytes, remote: str) -> bytes:
        self.requests_by_peer[remote] += 1
        fn = self.summary_fn
        if fn is None:
            return b""  # an empty SummaryFetchResponse: "not held"
        out = fn(request, remote)
        if inspect.isawaitable(out):
            out = await out
        self.sent["fetch_responses"] += 1
        return out

    # -- DHT -----------------------------------------------------------------------------------------

    async def store(self, key: str, subkey: str, value: bytes, expiration: float) -> bool:
        """A store through the DHT (the k nearest nodes, this persona's own included)."""
        self.sent["dht_stores"] += 1
        try:
            return await self.transport.store(key, subkey, value, expiration)
        except Exception as e:  # noqa: BLE001 - a refused or failed store is an outcome, not an error
            log.debug("store failed: %r", e)
            return False

    async def store_direct(self, peer_id: str, items: list[tuple[str, str, bytes, float]]) -> list[bool] | None:
        """Many (key, subkey, value, expiration) items stored straight into `peer_id`'s DHT node
        (one store RPC on hivemind, one PUT_VALUE each on libp2p); returns the remote's verdict
        per item (None: no answer). See persona_transport.py for what a verdict means per kind."""
        self.sent["dht_stores"] += len(items)
        self.sent["dht_store_rpcs"] += 1 if self.transport_kind == "hivemind" else len(items)
        try:
            return await store_direct(self.transport_kind, self.transport, peer_id, items)
        except Exception as e:  # noqa: BLE001
            log.debug("direct store failed: %r", e)
            return None

    async def push(self, peer_id: str, items: list[tuple[str, str, bytes, float]]) -> None:
        """libp2p: the items published on the swarm's GossipSub topic too, so that they reach the
        victim's reads as a direct store does on hivemind (persona_transport.py says why)."""
        # Only the first push waits for the victim to join this persona's mesh: one that
        # graylists the persona never will, and a flood must not wait on every push.
        wait_s, self._mesh_wait_s = self._mesh_wait_s, 0.0
        try:
            pushed = await push(self.transport_kind, self.transport, peer_id, items, wait_s)
        except Exception as e:  # noqa: BLE001 - a failed push is an outcome, not an error
            log.debug("push failed: %r", e)
            return
        self.sent["pushes"] += pushed or 0

    def peer_record(self, identity: NodeIdentity | None = None, ttl_s: float = RECORD_TTL_S, now: float | None = None) -> bytes:
        identity = identity or self.identity
        now = self.now() if now is None else now
        return build_peer_record(identity, record_fields(self.swarm, tuple(self.multiaddrs) or ("/ip4/127.0.0.1/tcp/1",),
                                                         self.model_fingerprint, self.base_fingerprint), now, ttl_s)

    def announcement(self, first: int, last: int, identity: NodeIdentity | None = None, ttl_s: float = ANNOUNCE_TTL_S,
                     now: float | None = None, window: int | None = None) -> bytes:
        now = self.now() if now is None else now
        return build_rollout_announcement(identity or self.identity, window=window_index(now, self.window_s) if window is None else window,
                                          first_batch_id=first, last_batch_id=last, model_fingerprint=self.model_fingerprint,
                                  now=now, ttl_s=ttl_s)

    async def _record_loop(self) -> None:
        while True:
            if self.publish_record:
                now = self.now()
                await self.store(peer_records_key(self.swarm, window_index(now, self.window_s)), self.peer_id,
                                 self.peer_record(now=now), now + RECORD_TTL_S)
            await asyncio.sleep(RECORD_INTERVAL_S)

    async def _announce_loop(self) -> None:
        while True:
            if self.announce_range is not None:
                now = self.now()
                first, last = self.announce_range
                await self.store(rollouts_key(self.swarm, window_index(now, self.window_s)), self.peer_id,
                                 self.announcement(first, last, now=now), now + ANNOUNCE_TTL_S)
            await asyncio.sleep(ANNOUNCE_INTERVAL_S)

    async def announce_summary(self) -> None:
        """Store the current summary announcement (if any) under this window's summaries key."""
        make = self.summary_announcement
        if make is not None:
            now = self.now()
            window = window_index(now, self.window_s)
            await self.store(summaries_key(self.swarm, window, self.base_fingerprint), self.peer_id, make(now, window), now + ANNOUNCE_TTL_S)

    async def _summary_announce_loop(self) -> None:
        while True:
            await self.announce_summary()
            await asyncio.sleep(ANNOUNCE_INTERVAL_S)

    # -- reading the swarm -----------------------------------------------------------------------------

    async def announcements(self) -> dict[str, Any]:
        """peer id -> the newest valid announcement (CheckedRolloutAnnouncement) in the current and previous windows."""
        newest: dict[str, Any] = {}
        for window in windows_to_read(self.window()):
            try:
                values = await self.transport.get(rollouts_key(self.swarm, window))
            except Exception:  # noqa: BLE001
                continue
            for v in values:
                try:
                    a = check_rollout_announcement(v.value, subkey=v.subkey, now=self.now())
                except Exception:  # noqa: BLE001 - not ours to judge
                    continue
                held = newest.get(a.peer_id)
                if held is None or a.announcement.last_batch_id > held.announcement.last_batch_id:
                    newest[a.peer_id] = a
        return newest

    async def fetch_latest(self, peer_id: str, count: int = 1) -> list[bytes]:
        """The `count` newest batch envelopes `peer_id` serves (read from its announcement), or []."""
        a = (await self.announcements()).get(peer_id)
        after = max(0, a.announcement.last_batch_id - count) if a is not None else 0
        self.sent["requests"] += 1
        try:
            response = await self.transport.request(peer_id, ROLLOUT_PROTOCOL, rollout_fetch_request(after, count), 5.0)
        except RequestFailed:
            return []
        return parse_rollout_fetch_response(response) or []


class Outbox:
    """Crafted (batch id, envelope) pairs served like an honest outbox: ids above the request's
    cursor (not yet delivered first), oldest first, within the fetch caps. `replay` serves
    everything whatever is asked."""

    def __init__(self, persona: Persona, items: list[tuple[int, bytes]], replay: bool = False):
        self.persona = persona
        self.items = sorted(items, key=lambda x: x[0])
        self.replay = replay
        self.delivered: set[int] = set()
        self.responses = 0

    def add(self, batch_id: int, envelope: bytes) -> None:
        self.items.append((batch_id, envelope))
        self.items.sort(key=lambda x: x[0])

    def __call__(self, after: int, max_batches: int, remote: str) -> bytes:
        cap = min(max_batches or MAX_BATCHES_PER_FETCH, MAX_BATCHES_PER_FETCH)
        if self.replay:
            candidates = self.items
        else:
            # What the victim has not seen yet goes first: a batch it rejects before reading its
            # id leaves its cursor where it was, and would otherwise be all it ever gets.
            newer = [(i, e) for i, e in self.items if i > after]
            candidates = [(i, e) for i, e in newer if i not in self.delivered] or newer
        out, size = [], 0
        for batch_id, envelope in candidates:
            if len(out) >= cap or size + len(envelope) > MAX_ROLLOUT_FETCH_RESPONSE_BYTES:
                break
            out.append(envelope)
            size += len(envelope)
            self.delivered.add(batch_id)
        self.responses += 1
        return self.persona.respond(out)

    @property
    def all_delivered(self) -> bool:
        return all(batch_id in self.delivered for batch_id, _ in self.items)


# -- the peer ------------------------------------------------------------------------------------


class HostilePeer:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.victim_maddr = args.initial_peer
        self.victim_id = args.initial_peer.rsplit("/p2p/", 1)[-1]
        self.swarm = args.swarm
        self.window_s = args.window_s
        self.workdir = Path(tempfile.mkdtemp(prefix="hostile-"))
        self.crafter = Crafter()
        self.base_fingerprint = ""  # what personas' PeerRecords name (set when summary attacks run)
        self.main: Persona | None = None
        self.personas: list[Persona] = []  # every persona started, stopped at the end whatever happened
        self._count = 0

    def persona(self, name: str) -> Persona:
        self._count += 1
        return Persona(f"{self._count:02d}-{name}", self.workdir, self.swarm, self.window_s, self.crafter.model_fingerprint,
                       self.base_fingerprint, self.args.transport)

    async def new_persona(self, name: str) -> Persona:
        p = self.persona(name)
        self.personas.append(p)
        try:
            await p.start(self.victim_maddr)
        except BaseException:
            await p.stop()
            raise
        return p

    async def start(self) -> None:
        self.main = await self.new_persona("main")

    async def stop(self) -> None:
        for p in self.personas:
            await p.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    async def victim_version(self, persona: Persona) -> int | None:
        """The victim's current policy version, read from its newest served batch."""
        for envelope in await persona.fetch_latest(self.victim_id, 1):
            try:
                return int(open_envelope(envelope, MessageKind.ROLLOUT_BATCH).message.policy_version)
            except Exception:  # noqa: BLE001
                continue
        return None
