"""Joiner: joining the swarm through the initial peers, and joining again when every peer is gone.

Its `state` (status `join`) also says whether the node is joining or running (Node.state).
"""
from __future__ import annotations

import asyncio
import logging
import random
import time

from swarmnode.config import NodeConfig
from swarmnode.node.peer_log import describe_mismatch
from swarmnode.status.snapshot import JoinState
from swarmnode.swarm.peers import PeerTable, RecordIntake, peer_id_of, short_address
from swarmnode.swarm.transports.base import JoinError, Transport
from swarmnode.utils.backoff import backoff_delay, jittered

log = logging.getLogger("swarmnode")
JOIN_DIAL_TIMEOUT_S = 10.0
JOINED_LINE = "joined the swarm through "
JOIN_WARN_FIRST = 3  # attempts that each get their warning (one sees the retries and their backoff)...
JOIN_WARN_EVERY_S = 60.0  # ...then a failing initial peer's unchanged reason at most this often


class Joiner:
    """Dials the initial peers (`run`) and says once whether the join took (`check_initial_peers`,
    after each read of the peer records). A node without initial peers is joined from the start."""

    def __init__(self, config: NodeConfig, transport: Transport, table: PeerTable, intake: RecordIntake):
        self.config = config
        self.transport = transport
        self.table = table
        self.intake = intake
        initial = config.swarm.initial_peers
        self.state = JoinState(tuple(initial), joined=not initial, attempts=0, last_error=None)
        self._said: set[str] = set()  # one-time lines already logged
        self._reached: str | None = None  # the initial peer the join went through last
        self._had_peers = False  # the peer table held someone since the last join
        self._warned: dict[str, tuple[str, float, int]] = {}  # initial peer -> (reason, when, attempt) last warned

    @property
    def joined(self) -> bool:
        return self.state.joined

    async def run(self) -> None:
        """Join through the initial peers (in random order, with jittered backoff); join again
        when the routing table or the peer table empties (every peer gone, or a partition)."""
        net = self.config.network
        rng = random.Random()
        while True:
            if self.state.joined and not self.lost_every_peer():
                await asyncio.sleep(net.join_backoff_max_s)
                await self.reach_absent_initial_peers()
                continue
            if self.state.joined:
                self._join_again()
            attempt = self.state.attempts + 1
            delay = jittered(backoff_delay(attempt, net.join_backoff_initial_s, net.join_backoff_max_s), rng.random())
            errors = await self._attempt(attempt, rng)
            if errors is None:
                continue
            self.state = JoinState(self.state.initial_peers, False, attempt, errors[-1][1] if errors else None)
            self._say_failed(attempt, errors, delay)
            await asyncio.sleep(delay)

    def _say_failed(self, attempt: int, errors: list[tuple[str, str]], delay: float) -> None:
        """A failed attempt's reasons: a warning per initial peer (the advice once) on the first
        JOIN_WARN_FIRST attempts, then when its reason changes or JOIN_WARN_EVERY_S passed since
        its last one (while an initial peer is down, a retry every few seconds would fill the
        log); debug lines in between."""
        advice = ("; check the address and port, that the peer is running, and that a firewall "
                  "lets this node reach it") if attempt == 1 else ""
        now = time.monotonic()
        for maddr, reason in errors:
            if reason.startswith("initial peer "):  # another swarm, window or version: said once already
                continue
            last = self._warned.get(maddr)
            if attempt > JOIN_WARN_FIRST and last is not None and last[0] == reason and now - last[1] < JOIN_WARN_EVERY_S:
                log.debug("join attempt %d: %s %s; retrying in %.1fs", attempt, short_address(maddr), reason, delay)
                continue
            since = f" ({attempt - last[2]} attempts since the last warning)" if last is not None else ""
            self._warned[maddr] = (reason, now, attempt)
            log.warning("join attempt %d: %s %s%s; retrying in %.1fs%s",
                        attempt, short_address(maddr), reason, advice, delay, since)

    def _join_again(self) -> None:
        """Every peer is gone: join from scratch, attempts counted from 1 again and the next join told again."""
        log.warning("lost every peer; joining again through the initial peers")
        self.state = JoinState(self.state.initial_peers, False, 0, "lost every peer")
        self._warned.clear()
        self._said = {line for line in self._said if not line.startswith(JOINED_LINE)}

    async def _attempt(self, attempt: int, rng: random.Random) -> list[tuple[str, str]] | None:
        """Dial the initial peers in random order until one can be joined through: None then (the
        node is joined), else (address, why) of each that failed."""
        errors = []
        initial_peers = self.config.swarm.initial_peers
        for maddr in rng.sample(initial_peers, len(initial_peers)):
            try:
                await self.transport.join(maddr, JOIN_DIAL_TIMEOUT_S)
            except JoinError as e:
                errors.append((maddr, str(e)))
                log.debug("join attempt %d: initial peer %s failed: %s", attempt, maddr, e)
                continue
            if (mismatch := self.mismatch_of(maddr)) is not None:
                errors.append((maddr, mismatch))  # said once already (check_initial_peers)
                continue
            if not self.state.joined:
                log.info("reached initial peer %s; waiting for its peer record", maddr)
            self._reached = maddr
            self.state = JoinState(self.state.initial_peers, True, attempt, None)
            self._had_peers = False
            return None
        return errors

    async def reach_absent_initial_peers(self) -> None:
        """Dial again the initial peers whose record is not in the peer table. A bootstrap node
        that restarted knows nobody: unless the swarm's nodes reach it, the nodes that join through
        it next would stay apart from the swarm. Still down is the common case: debug lines only."""
        for maddr in self.config.swarm.initial_peers:
            if peer_id_of(maddr) in self.table:
                continue
            try:
                await self.transport.join(maddr, JOIN_DIAL_TIMEOUT_S)
            except JoinError as e:
                log.debug("initial peer %s is still out of reach: %s", maddr, e)

    def lost_every_peer(self) -> bool:
        """The DHT routing table is empty, or the peer table emptied after it had peers."""
        if self.transport.routing_table_size() == 0:
            return True
        if len(self.table) > 0:
            self._had_peers = True
            return False
        return self._had_peers

    def mismatch_of(self, maddr: str) -> str | None:
        """Why the initial peer at `maddr` cannot be joined through (it publishes records of
        another swarm or protocol version), or None; once the peer is in the table it is None."""
        peer_id = peer_id_of(maddr)
        origin = self.intake.origin_of(peer_id)
        if origin is None or peer_id in self.table:
            return None
        return describe_mismatch(origin, self.config.swarm.name, self.intake.versions.spoken, self.config.swarm.window_s)

    def check_initial_peers(self) -> None:
        """Say once that the join took (an initial peer's record is in the table, or any peer's
        after the join went through one) or why it did not (it is of another swarm, window or
        protocol version: then do not claim the join either)."""
        for maddr in self.config.swarm.initial_peers:
            if peer_id_of(maddr) in self.table:
                self._say_joined(maddr)
            mismatch = self.mismatch_of(maddr)
            if mismatch is None:
                continue
            if mismatch not in self._said:
                self._said.add(mismatch)
                log.error("%s", mismatch)
            if self.state.joined and len(self.table) == 0:
                self.state = JoinState(self.state.initial_peers, False, self.state.attempts, mismatch)
        if self.state.joined and self._reached is not None and len(self.table) > 0:
            self._say_joined(self._reached)

    def _say_joined(self, maddr: str) -> None:
        """Log once that the node joined the swarm (through the first initial peer it is told of)."""
        if not any(line.startswith(JOINED_LINE) for line in self._said):
            line = f"{JOINED_LINE}{maddr}"
            self._said.add(line)
            log.info("%s", line)
