"""Swarm transports (hivemind, py-libp2p), peer table and record intake. Knows nothing about models.

- transport.py: Transport, the interface the node talks to (DHT store/get, requests to peers),
  StoredValue, JoinError, TransportStartError, RequestFailed
- hivemind_transport.py: HivemindTransport, the Transport on hivemind's DHT and p2pd
- libp2p_transport.py: LibP2PTransport, the Transport on py-libp2p (Kademlia, GossipSub push,
  streams), its trio side in py_libp2p/ (TrioThread, Libp2pNode); network.transport picks one
- routed_transport.py: RoutedTransport, the transport wrapped with relaying for nodes behind
  NAT (reserve / forward / deliver), dial-back checks and a direct ping; relay_book.py its
  state without I/O (Reservations, route, FailureLog); reachability.py: decide (public /
  private / unknown from peers' dial-back answers) and usable_multiaddrs (what to give out)
- hivemind_validator.py: PolicyValidator, the DHT-side check of every stored value
- peers.py: PeerTable (who is in the swarm), RecordIntake (checks every DHT value and counts
  verdicts), PeerEntry, MessageStats
- rollout_bookkeeping.py: the rollout gossip's state, no I/O: RolloutOutbox (batches served),
  SenderLedger / PeerStanding (cursors and strikes per sender), HeldRequests (long-polls), the
  fetch request and response bytes, and when to fetch (skip_fetch, announcements_due, fetch_wanted)
- summary_outbox.py: SummaryOutbox (sealed summaries served by id) and its request and response bytes
- ratelimit.py: PeerRateLimiter and TokenBucket (per-peer rate limits)
- lru_map.py: LRUMap, per-peer state with a size bound
- windows.py: window_index and the DHT key of each window (peer_records_key, rollouts_key, ...)
- backoff.py: backoff_delay and jittered, retry delays for joining
"""
from swarmnode.swarm.peers import MessageStats, PeerEntry, PeerTable, RecordIntake
from swarmnode.swarm.transport import JoinError, StoredValue, Transport, TransportStartError

__all__ = ["JoinError", "MessageStats", "PeerEntry", "PeerTable", "RecordIntake", "StoredValue", "Transport", "TransportStartError"]
