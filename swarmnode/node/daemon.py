"""The node daemon: one event loop that owns the transport, the record loops and the status server."""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import time
from typing import TYPE_CHECKING, Any, Callable

from swarmnode import __version__
from swarmnode.config import NodeConfig
from swarmnode.home import DaemonLock, NodeHome, read_runtime, remove_runtime, write_runtime
from swarmnode.identity import NodeIdentity
from swarmnode.node.capability import cpu_device, detect_device, matmul_gflops
from swarmnode.node.leftovers import describe_children, kill_leftover_children
from swarmnode.node.network import NetworkService
from swarmnode.node.logs import FILE_ONLY, RecordedRun, log_start, progress_loop
from swarmnode.node.joining import Joiner
from swarmnode.node.peer_log import PeerLog
from swarmnode.node.storage import maintain_stores, storage_status
from swarmnode.protocol import Capability, PeerRecordFields, build_peer_record
from swarmnode.protocol.codec import VersionedSigner
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.limits import CAPABILITY_CAPS
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions
from swarmnode.status.server import StatusServer
from swarmnode.status.snapshot import (
    ClockSection,
    JoinState,
    MachineSection,
    NodeSection,
    SwarmSection,
    WorkSections,
    build_status,
    state_name,
)
from swarmnode.swarm.penalties import PeerPenalties
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake, peer_id_of
from swarmnode.swarm.gossip.rollout_bookkeeping import ROLLOUT_LIMIT_KEYS
from swarmnode.swarm.relaying.routed_transport import PeerRoutes, RoutedTransport
from swarmnode.swarm.transports.base import PeerPenalty, RecordPolicy
from swarmnode.node.dht_reads import read_spread
from swarmnode.swarm.key_layout import KeyLayout
from swarmnode.swarm.windows import peer_records_key, peer_records_shard_key, window_index

if TYPE_CHECKING:  # a node without a model never imports training (torch, transformers)
    from swarmnode.node.gossip import PeerStandings, RolloutGossip, SummaryGossip
    from swarmnode.node.training.service import TrainingService
    from swarmnode.summaries import OuterResult

log = logging.getLogger("swarmnode")


class Node:
    """A running node. `run()` returns when a stop is requested (SIGINT/SIGTERM or `request_stop`)."""

    def __init__(
        self,
        config: NodeConfig,
        identity: NodeIdentity,
        home: NodeHome,
        make_transport: Callable[[RecordPolicy, PeerRoutes, PeerPenalty], RoutedTransport],
        config_source: str = "defaults",  # for the log's start line (ValueSources.described)
        protocol_versions: ProtocolVersions = THIS_RELEASE,  # what it speaks and writes
        role: str = "node",  # "bootstrap" for `swarmnode bootstrap` (status `role`)
    ):
        self.config = config
        self.role = role
        self.config_source = config_source
        self.identity = identity
        self.protocol_versions = protocol_versions
        self.sealer = VersionedSigner(identity, protocol_versions)  # seals its records and gossip in them
        self.home = home
        limits = config.limits
        self.table = PeerTable(identity.peer_id, capacity=limits.max_peers)
        self.peer_log = PeerLog(capacity=limits.max_peers, initial_peers=config.swarm.initial_peers,
                                versions=protocol_versions.spoken)
        self.stats = MessageStats(max_senders=limits.max_tracked_senders)
        # Where records and announcements go in the DHT: shards, or one key per window (version 1).
        self.layout = KeyLayout.of(identity.peer_id, protocol_versions)
        self.record_keys = self.layout.spread(functools.partial(peer_records_key, config.swarm.name),
                                              functools.partial(peer_records_shard_key, config.swarm.name))
        self.intake = RecordIntake(self.table, self.stats, config.swarm.name, config.swarm.window_s,
                                   max_ttl_s=limits.max_record_ttl_s, max_values_per_key=limits.max_values_per_key,
                                   versions=protocol_versions)
        # Built before the transport, which reads it from its own thread; the standings judge.
        self.penalties = PeerPenalties()
        self.transport = make_transport(self.intake, self.table, self.penalties)
        initial_ids = [peer_id_of(m) for m in config.swarm.initial_peers]
        self.network = NetworkService(config, identity.peer_id, self.transport, self.table.entries, initial_ids)
        self.joiner = Joiner(config, self.transport, self.table, self.intake)
        self.training: TrainingService | None = None
        self.standings: PeerStandings | None = None
        self.gossip: RolloutGossip | None = None
        self.summaries: SummaryGossip | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop `run` runs on
        if config.model.name_or_path:
            self._build_training()
        self._phase = peer_record_pb2.NODE_STATE_STARTING  # then RUNNING (joining until joined), STOPPING
        self.started_at = time.time()
        self.device = peer_record_pb2.DeviceInfo()
        self.capability = Capability()
        self._stop = asyncio.Event()
        self.fatal: str | None = None  # why the daemon stopped on its own (exit code 1), if it did
        self.training_failure: str | None = None  # why training ended on an error, if it did
        self.last_maintenance: dict[str, Any] | None = None

    def _build_training(self) -> None:
        """Training and the gossip that feeds it, for a node with a model (imported only here)."""
        from swarmnode.node.gossip import PeerStandings, RolloutGossip, SummaryGossip
        from swarmnode.node.training.service import TrainingListeners, TrainingService

        config, identity = self.config, self.sealer
        listeners = TrainingListeners(on_implausible=self._blame_implausible, on_outer_step=self._take_verdicts,
                                      on_fatal=self._training_failed)
        self.standings = PeerStandings.open(config, self.stats, self.home.root, self.transport.dht_time,
                                            self.penalties)
        saved_trust = self.standings.load_trust() if config.summaries.enabled else []
        self.training = TrainingService(config, self.home.root, quality=self._sender_quality, listeners=listeners,
                                        saved_trust=saved_trust)
        self.gossip = RolloutGossip(config, identity, self.transport, self.training, self.intake, self.standings,
                                    layout=self.layout)
        if config.summaries.enabled:
            self.summaries = SummaryGossip(config, identity, self.transport, self.training, self.training.outer_access,
                                           self.intake, self.standings, layout=self.layout)

    # -- lifecycle -----------------------------------------------------------------------------

    def request_stop(self, fatal: str | None = None) -> None:
        """Stop the node; with `fatal`, a one-line reason it cannot go on (the process exits with 1)."""
        if fatal is not None and self.fatal is None:
            self.fatal = fatal
            log.error("stopping: %s", fatal)
        self._stop.set()

    # -- what the trainer thread tells the node (TrainingListeners) ------------------------------

    def _blame_implausible(self, senders: dict[str, int]) -> None:
        if self.standings is not None:
            self.standings.blame_implausible(senders)

    def _take_verdicts(self, result: OuterResult) -> None:
        if self.summaries is not None:
            self.summaries.take_verdicts(result)

    def _training_failed(self, reason: str) -> None:
        """Training ended on an error (trainer thread): stop the node with exit code 1, or, with
        training.keep_serving, serve the swarm on without training."""
        assert self._loop is not None  # training starts only inside `run`
        self.training_failure = reason
        if self.config.training.keep_serving:
            log.error("training failed: %s; serving the swarm without training (training.keep_serving)", reason)
        else:
            self._loop.call_soon_threadsafe(self.request_stop, f"training failed: {reason}")

    @property
    def state(self) -> int:
        """The PeerRecord state: starting, joining or running (the Joiner says which), stopping."""
        if self._phase == peer_record_pb2.NODE_STATE_RUNNING and not self.joiner.joined:
            return peer_record_pb2.NODE_STATE_JOINING
        return self._phase

    @property
    def join(self) -> JoinState:
        """Status `join`: the initial peers and how joining through them goes."""
        return self.joiner.state

    @property
    def state_label(self) -> str:
        """status `state`: the PeerRecord state, or `failed` (training failed, the node stops) or
        `serving` (training failed, training.keep_serving keeps the node in the swarm)."""
        if self.fatal is not None:
            return "failed"
        if self.training_failure is not None and self.config.training.keep_serving:
            return "serving"
        return state_name(self.state)

    async def run(self) -> None:
        lock = DaemonLock(self.home)
        lock.acquire()
        try:
            with RecordedRun(self.home, lambda: self.fatal) as previous:
                log_start(__version__, self.config_source, self.home.root, previous)
                stale = read_runtime(self.home)
                if stale:
                    killed = kill_leftover_children(stale)
                    if killed:
                        log.info("cleaned up leftovers of a previous run of this home: killed pids %s", killed)
                await self._run_locked()
        finally:
            remove_runtime(self.home)
            lock.release()

    async def _run_locked(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        status = StatusServer(self.snapshot, self.config.status.host, self.config.status.port, self.config.status.prometheus)
        try:
            await self.transport.start()
            if self.transport.peer_id != self.identity.peer_id:
                raise RuntimeError("p2pd runs another identity than the home's libp2p key")
            await self.network.start()
            status_url = await status.start()
            children, sockets = describe_children(self.transport.child_processes())
            write_runtime(self.home, {
                "pid": os.getpid(),
                "peer_id": self.identity.peer_id,
                "status_url": status_url,
                "multiaddrs": self.network.listen_maddrs,
                "children": children,
                "sockets": sockets,
                "started_at": self.started_at,
            })
            self._announce(status_url)
            # A node without a model computes nothing: it names its CPU and leaves torch unloaded.
            self.device = detect_device() if self.training is not None else cpu_device()
            if self.gossip is not None:
                await self.gossip.start()
            if self.summaries is not None:
                await self.summaries.start()
            if self.training is not None:
                self.training.start()
            self._phase = peer_record_pb2.NODE_STATE_RUNNING
            async with asyncio.TaskGroup() as tasks:
                self._create_loops(tasks)
                await self._stop.wait()
                raise _Stopping
        except* _Stopping:
            pass
        finally:
            await self._shut_down(status)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    async def _shut_down(self, status: StatusServer) -> None:
        """Stop training (after its step and last checkpoint), the stores, the status server and
        the transport, in that order; the log's last line says how long each took, so a stop
        that is slow names its part."""
        self._phase = peer_record_pb2.NODE_STATE_STOPPING
        log.info("shutting down")
        began = time.monotonic()
        if self.training is not None:
            await asyncio.to_thread(self.training.stop)
        trained = time.monotonic()
        if self.gossip is not None:
            self.gossip.close()
        if self.standings is not None:
            self.standings.close()
        await status.stop()
        closed = time.monotonic()
        await self.transport.stop()
        ended = time.monotonic()
        log.info("stopped in %.1f s (training %.1f s, stores and status %.1f s, transport %.1f s)", ended - began,
                 trained - began, closed - trained, ended - closed)

    def _create_loops(self, tasks: asyncio.TaskGroup) -> None:
        """Every loop of the running node, owned by `tasks` (cancelled with it on shutdown)."""
        if self.training is not None:
            tasks.create_task(self._measure_capability())
        tasks.create_task(self._publish_loop())
        tasks.create_task(self._poll_loop())
        tasks.create_task(self.network.run(self.transport.dht_time))
        tasks.create_task(progress_loop(self.snapshot, self.config.logging.summary_interval_s))
        if self.config.swarm.initial_peers:
            tasks.create_task(self.joiner.run())
        if self.gossip is not None:
            tasks.create_task(self.gossip.share_loop())
            tasks.create_task(self.gossip.announce_loop())
            tasks.create_task(self.gossip.fetch_loop())
        if self.summaries is not None:
            tasks.create_task(self.summaries.publish_loop())
            tasks.create_task(self.summaries.announce_loop())
            tasks.create_task(self.summaries.fetch_loop())
        if self.gossip is not None and self.training is not None:
            tasks.create_task(self._maintain_storage())
        if self.training is not None:
            from swarmnode.node.scheduling import plan_loop

            tasks.create_task(plan_loop(self.config, self.training, self.table.entries, self.transport.dht_time))

    def _announce(self, status_url: str) -> None:
        lines = [f"swarmnode {__version__} node {self.identity.peer_id} in swarm '{self.config.swarm.name}'"]
        addresses = self.network.usable_multiaddrs()
        lines.append("join this node with any of (e.g. --initial-peer ADDR):" if addresses else
                     "no address to join this node through (network.reachability is private)")
        lines += [f"  {m}" for m in addresses]
        if not self.network.forced:
            lines.append("  (unchecked until peers dial it back: `swarmnode status` shows the result)")
        lines.append(f"status: {status_url}/status  (swarmnode status --home {self.home.root})")
        lines.append(f"log: {self.home.node_log}  (swarmnode logs -f --home {self.home.root})")
        for line in lines:
            print(line, flush=True)
        log.info("node %s in swarm '%s' at %s; status %s", self.identity.peer_id, self.config.swarm.name,
                 ", ".join(addresses), status_url, extra=FILE_ONLY)  # the banner, for the log file

    # -- loops ---------------------------------------------------------------------------------

    async def _measure_capability(self) -> None:
        gflops = await asyncio.to_thread(matmul_gflops, self.device.kind)
        self.capability.matmul_gflops = gflops
        log.info("measured %.1f GFLOP/s (fp32 matmul) on %s", gflops, self.device.kind)

    def _current_capability(self) -> Capability:
        """The matmul figure measured at start and, once the node trains, the smoothed speeds of
        its real work (0 until measured), each held under the cap peers check it against."""
        capability = Capability()
        capability.CopyFrom(self.capability)
        if self.training is not None:
            for name, value in self.training.speed.snapshot().items():
                setattr(capability, name, min(value or 0.0, CAPABILITY_CAPS[name]))
        return capability

    def _record_fields(self) -> PeerRecordFields:
        return PeerRecordFields(
            software_version=__version__,
            swarm=self.config.swarm.name,
            multiaddrs=tuple(self.network.usable_multiaddrs()),
            model_fingerprint=self.model_fingerprint,
            base_fingerprint=self.training.base_fingerprint if self.training is not None else "",
            device=self.device,
            capability=self._current_capability(),
            state=self.state,
            client_mode=self.config.network.client_mode,
            reachability=self.network.reachability,
            relays=self.network.relays(),
            window_s=self.config.swarm.window_s,
        )

    async def _publish_loop(self) -> None:
        cfg = self.config.records
        while True:
            now = self.transport.dht_time()
            value = build_peer_record(self.sealer, self._record_fields(), now, cfg.ttl_s)
            try:
                for key in self.record_keys.write_keys(window_index(now, self.config.swarm.window_s)):
                    await self.transport.store(key, self.identity.peer_id, value, now + cfg.ttl_s)
            except Exception as e:  # noqa: BLE001 - a failed store is retried next interval
                log.warning("publishing the peer record failed (%s); retrying in %gs", e, cfg.publish_interval_s)
            await asyncio.sleep(cfg.publish_interval_s)

    async def _poll_loop(self) -> None:
        cfg = self.config.records
        while True:
            if (problem := self.transport.failure()) is not None:
                self.request_stop(fatal=problem)  # no network: do not look healthy without one
                return
            await self._read_records()
            expired = self.table.expire(self.transport.dht_time())
            now = self.transport.dht_time()
            self.peer_log.update(self.table.entries(), expired, self.training.base_fingerprint if self.training else "",
                                 self.intake.incompatible_peers(now), self.intake.other_window_peers(now),
                                 self.config.swarm.window_s)
            if self.config.swarm.initial_peers:
                self.joiner.check_initial_peers()
            if self.training is not None and self.training.base_fingerprint:
                # Read by the trainer thread: summaries go out only while someone can merge them.
                self.training.inputs.set_same_base_peers(
                    len(self.table.with_base(self.training.base_fingerprint, self.transport.dht_time())))
            await asyncio.sleep(cfg.poll_interval_s)

    async def _read_records(self) -> None:
        """Peers' records from this window's and the last one's keys (shards) into the table."""
        try:
            reading_window, found = await read_spread(self.transport, self.record_keys, self.config.swarm.window_s)
        except Exception as e:  # noqa: BLE001 - a failed read is retried next interval
            log.warning("reading peer records failed (%s)", e)
            return
        self.intake.refuse_misplaced(found.misplaced)
        self.intake.ingest(found.values, self.transport.dht_time())
        self.record_keys.observe(found.peers_per_shard, reading_window)

    async def _maintain_storage(self) -> None:
        """Retention and WAL checkpoints of the home's SQLite stores, every maintenance_interval_s,
        on a worker thread (a pass over a large store takes seconds)."""
        assert self.gossip is not None and self.training is not None
        cfg = self.config.storage
        while True:
            await asyncio.sleep(cfg.maintenance_interval_s)
            try:
                self.last_maintenance = await asyncio.to_thread(
                    maintain_stores, self.gossip.store, self.training.metrics, cfg, time.time())
            except Exception as e:  # noqa: BLE001 - a failed pass (disk full, locked) is retried next interval
                log.warning("storage maintenance failed (%s: %s); retrying in %gs", type(e).__name__, e,
                            cfg.maintenance_interval_s)

    # -- status --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        now = self.transport.dht_time()
        node = NodeSection(
            peer_id=self.identity.peer_id, swarm=self.config.swarm.name, software_version=__version__,
            protocol_version=self.protocol_versions.written,
            protocol_versions=self.protocol_versions.spoken,
            state=self.state_label, started_at=self.started_at, role=self.role)
        clock = ClockSection(now, window_index(now, self.config.swarm.window_s), self.config.swarm.window_s)
        swarm = SwarmSection(
            multiaddrs=self.network.usable_multiaddrs(), client_mode=self.config.network.client_mode,
            routing_table_size=self.transport.routing_table_size(), join=self.join, peers=self.table.entries(),
            stats=self.stats, incompatible_peers=self.intake.incompatible_peers(now),
            other_window_peers=self.intake.other_window_peers(now))
        machine = MachineSection(self.device, self._current_capability(), self.model_fingerprint)
        return build_status(node, clock, swarm, machine, self._work_sections())

    def _work_sections(self) -> WorkSections:
        """The parts each owner makes: training, gossip, storage, limits, network."""
        training, gossip = self.training, self.gossip
        return WorkSections(
            training=training.snapshot() if training is not None else None,
            rollouts=gossip.snapshot() if gossip is not None else None,
            storage=storage_status(gossip.store if gossip is not None else None,
                                   training.metrics if training is not None else None,
                                   training.checkpoints if training is not None else None,
                                   self.last_maintenance),
            limits=self._limits_snapshot(),
            summaries=self.summaries.snapshot() if self.summaries is not None else None,
            network=self.network.snapshot(),
        )

    def _limits_snapshot(self) -> dict[str, int]:
        """Per-peer state held and how often each bound was hit (docs/security.md)."""
        counts = {"peers": len(self.table), "peers_evicted": self.table.evicted,
                  "values_over_key_cap": self.intake.values_over_key_cap,
                  "rejection_senders_evicted": self.stats.senders_evicted}
        if self.gossip is not None:
            counts.update(self.gossip.limits_snapshot())
        else:  # a node without a model gossips no rollouts: the same keys, nothing counted
            counts.update(dict.fromkeys(ROLLOUT_LIMIT_KEYS, 0))
        return counts

    def _sender_quality(self) -> dict[str, float]:
        if self.standings is None:
            return {}
        return {peer: info["quality"] for peer, info in self.standings.ledger.snapshot(self.transport.dht_time()).items()}

    @property
    def model_fingerprint(self) -> str:
        return self.training.fingerprint if self.training is not None else ""


class _Stopping(Exception):
    """Raised inside the task group to cancel every loop on shutdown."""
