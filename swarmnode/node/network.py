"""NetworkService: whether peers can dial this node, and what the node does about it.

Every `network.reachability_check_interval_s` (every 10 s until a peer answers) the node asks up
to three peers, public ones first, to dial it back (swarm/relaying/routed_transport.py answers). Then:
- public: it relays for nodes behind NAT (`network.relay_service`) and gives out the address
  peers reached it at;
- private: it keeps `network.relays` reservations on public peers (swarm/relaying/relay_keeper.py)
  and names them in its record (peers then send their requests through them), and it gives out
  no address of its own.
  It stays a DHT server: hivemind fixes client mode when the DHT node is made, and a node
  that turns client after joining finds itself in its peers' answers (an assertion in
  hivemind's store); `network.client_mode: true` makes it a client from the start.
`network.reachability: public|private` skips the check (an operator's port forward, a known NAT).
"""
from __future__ import annotations

import asyncio
import logging
import random
from typing import Callable

from swarmnode.config.model import NodeConfig
from swarmnode.home import NodeHome
from swarmnode.protocol import relay_messages
from swarmnode.protocol.generated.peer_record_pb2 import (
    REACHABILITY_PRIVATE,
    REACHABILITY_PUBLIC,
    REACHABILITY_UNKNOWN,
)
from swarmnode.swarm.peers import PeerEntry, short_id
from swarmnode.swarm.relaying.reachability import (
    BY_NAME,
    NAMES,
    DialBackAnswer,
    Verdict,
    decide,
    listening_ports,
    usable_multiaddrs,
)
from swarmnode.swarm.relaying.relay_keeper import RelayKeeper, renewal_delay
from swarmnode.swarm.relaying.routed_transport import PeerRoutes, RoutedTransport
from swarmnode.swarm.transports.base import PeerPenalty, RecordPolicy, RequestFailed, Transport

log = logging.getLogger(__name__)

PROBE_PEERS = 3
UNKNOWN_RETRY_S = 10.0
PROBE_TIMEOUT_S = 10.0


class NetworkService:
    def __init__(self, config: NodeConfig, peer_id: str, transport: RoutedTransport,
                 peers: Callable[[], list[PeerEntry]], initial_peer_ids: list[str]):
        self.config = config
        self.peer_id = peer_id
        self.transport = transport
        self._peers = peers
        self._initial = initial_peer_ids
        forced = config.network.reachability
        self.forced = forced != "auto"
        self.verdict = Verdict(BY_NAME[forced] if self.forced else REACHABILITY_UNKNOWN, "", None)
        self.listen_maddrs: list[str] = []
        self.answers: list[DialBackAnswer] = []
        self.checks = 0
        self.last_check_at: float | None = None
        self._rng = random.Random()
        self.relay_keeper = RelayKeeper(transport, peer_id, peers, initial_peer_ids, self._rng)

    @property
    def reachability(self) -> int:
        return self.verdict.reachability

    def relays(self) -> tuple[str, ...]:
        """What this node's record names: its relays, while it cannot be dialled."""
        if self.reachability != REACHABILITY_PRIVATE:
            return ()
        return self.relay_keeper.named()

    def usable_multiaddrs(self) -> list[str]:
        return usable_multiaddrs(self.listen_maddrs, self.verdict, self.config.network.announce_maddrs,
                                 self.peer_id)

    async def start(self) -> None:
        """Learn the addresses the started transport listens on."""
        self.listen_maddrs = await self.transport.multiaddrs()

    # -- the loops ---------------------------------------------------------------------------

    async def run(self, clock: Callable[[], float]) -> None:
        """Check reachability now and then; keep relay reservations while private."""
        self._apply(self.verdict, quiet=not self.forced)
        tasks = [asyncio.create_task(self._reserve_loop())]
        try:
            while True:
                if not self.forced:
                    answers = await self._probe()
                    if answers:
                        self.answers, self.checks, self.last_check_at = answers, self.checks + 1, clock()
                        self._apply(decide(answers))
                known = self.verdict.reachability != REACHABILITY_UNKNOWN
                await asyncio.sleep(self.config.network.reachability_check_interval_s if known else UNKNOWN_RETRY_S)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _probe_candidates(self) -> list[str]:
        """Up to three peers of the table to ask: public ones first, initial peers before others
        alike. A peer behind NAT answers too where it holds a direct connection to this node
        (it dialled this node); reached through a relay, it cannot see this node's address and
        its answer is left out."""
        entries = [e for e in self._peers() if e.peer_id != self.peer_id]
        self._rng.shuffle(entries)
        order = {REACHABILITY_PUBLIC: 0, REACHABILITY_UNKNOWN: 2, REACHABILITY_PRIVATE: 4}
        ranked = [(order.get(e.record.reachability, 3) - (e.peer_id in self._initial), e.peer_id) for e in entries]
        return list(dict.fromkeys(peer for _, peer in sorted(ranked, key=lambda r: r[0])))[:PROBE_PEERS]

    async def _probe(self) -> list[DialBackAnswer]:
        ports = listening_ports(self.listen_maddrs)
        if not ports:
            return []
        asked = self._probe_candidates()
        replies = await asyncio.gather(*(self._ask(peer, ports) for peer in asked))
        return [r for r in replies if r is not None]

    async def _ask(self, peer: str, ports: list[int]) -> DialBackAnswer | None:
        try:
            raw = await self.transport.request(peer, relay_messages.DIALBACK_PROTOCOL,
                                               relay_messages.dialback_request(ports), PROBE_TIMEOUT_S)
        except RequestFailed:
            return None
        parsed = relay_messages.parse_dialback_response(raw, ports)
        if parsed is None or not parsed[0]:  # no answer, or the peer could not see where this node is
            return None
        return DialBackAnswer(peer, parsed[0], tuple(parsed[1]))

    def _apply(self, verdict: Verdict, quiet: bool = False) -> None:
        changed = verdict.reachability != self.verdict.reachability
        self.verdict = verdict
        public = verdict.reachability == REACHABILITY_PUBLIC
        self.transport.offer_relaying(public and self.config.network.relay_service)
        if changed or not quiet:
            log.info("%s", describe(verdict, self.usable_multiaddrs(), self.listen_maddrs))

    async def _reserve_loop(self) -> None:
        """While private, hold `network.relays` reservations, renewed at a third of their life."""
        while True:
            wanted = self.config.network.relays if self.reachability == REACHABILITY_PRIVATE else 0
            if wanted == 0:
                self.relay_keeper.release()
                await asyncio.sleep(1.0)
                continue
            kept = await self.relay_keeper.keep(wanted, on_new=_say_reserved)
            await asyncio.sleep(renewal_delay(kept.granted))

    def snapshot(self) -> dict:
        return {
            "transport": self.config.network.transport,
            "reachability": NAMES[self.reachability],
            "reachability_source": "config" if self.forced else "dial-back",
            "observed_ip": self.verdict.observed_ip or None,
            "checks": self.checks,
            "last_check_at": self.last_check_at,
            "answers": [{"peer": short_id(a.responder), "observed_ip": a.observed_ip, "open_ports": list(a.open_ports)}
                        for a in self.answers],
            "relays": list(self.relays()),
            "relays_skipped": self.relay_keeper.skipped(),
            "listen_multiaddrs": list(self.listen_maddrs),
            **self.transport.snapshot(),
        }


def _say_reserved(relay: str) -> None:
    log.info("relay reservation on %s: peers reach this node through it", short_id(relay))


def describe(verdict: Verdict, usable: list[str], listen: list[str]) -> str:
    """One line: whether others can dial this node, and what to give them."""
    if verdict.reachability == REACHABILITY_PUBLIC:
        return f"reachable from outside ({verdict.observed_ip}): others can join through {', '.join(usable)}"
    if verdict.reachability == REACHABILITY_PRIVATE:
        ports = ", ".join(str(p) for p in listening_ports(listen)) or "its port"
        seen = f" (peers see it at {verdict.observed_ip})" if verdict.observed_ip else ""
        return (f"peers cannot dial this node{seen}: it is behind NAT or a firewall; peers reach it through "
                f"relays, and it cannot be joined through; to change that, forward TCP {ports} and set "
                "network.announce_maddrs")
    return "reachability unknown until a peer answers a dial-back check"


def make_transport(config: NodeConfig, home: NodeHome, policy: RecordPolicy, routes: PeerRoutes,
                   penalties: PeerPenalty | None = None) -> RoutedTransport:
    """The configured transport (hivemind's DHT and p2pd, or py-libp2p), with relaying for nodes
    behind NAT on top, reaching peers the way `routes` (their records) says. `penalties` (this
    node's own strikes against a peer) feed libp2p's GossipSub peer scores."""
    net, limits = config.network, config.limits
    inner: Transport
    if net.transport == "libp2p":
        if net.libp2p_host == "process":
            from swarmnode.swarm.transports.libp2p.process_transport import LibP2PProcessTransport as LibP2PTransport
        else:
            from swarmnode.swarm.transports.libp2p.transport import LibP2PTransport

        inner = LibP2PTransport(identity_path=home.p2p_identity, host_maddrs=net.host_maddrs,
                                announce_maddrs=net.announce_maddrs, client_mode=net.client_mode,
                                startup_timeout_s=net.p2pd_startup_timeout_s, policy=policy,
                                swarm=config.swarm.name, penalties=penalties,
                                relay_slots=net.relay_capacity if net.relay_service else 0)
    else:
        from swarmnode.swarm.transports.hivemind.transport import HivemindTransport

        inner = HivemindTransport(
            identity_path=home.p2p_identity,
            host_maddrs=net.host_maddrs,
            announce_maddrs=net.announce_maddrs,
            client_mode=net.client_mode,
            startup_timeout_s=net.p2pd_startup_timeout_s,
            use_relay=net.use_relay,
            auto_nat=net.auto_nat,
            wait_timeout_s=net.dht_wait_timeout_s,
            policy=policy,
        )
    return RoutedTransport(inner, routes=routes, relay_capacity=net.relay_capacity, reservation_ttl_s=60.0,
                           relay_timeout_cap_s=60.0, max_forwards=net.relay_max_forwards,
                           requests_per_s=limits.serve_requests_per_s * 4, burst=limits.serve_burst * 4,
                           max_tracked_peers=limits.max_tracked_senders)
