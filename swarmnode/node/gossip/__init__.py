"""Gossip between peers on the node's event loop: rollout batches and gradient summaries, each a
payload kind on one per-peer scaffold.

The scaffold, shared by every payload kind:
- standings.py   PeerStandings: one standing per peer (ledger, strikes by `blame`, saved
                 standings and summary trust, rejection rows), injected into every kind;
                 StandingCounters
- fetcher.py     PeerFetcher: a task per peer, at most limits.max_concurrent_fetches at once,
                 back-off of failing or idle peers, the per-peer accept rate
- server.py      PeerServer: answers one protocol within the per-peer serve rate; Waiters: held
                 long-polls
- announcements.py  Announcer: this node's announcement in the DHT, under its KeySpread's keys
                 (every other peer's newest: node/dht_reads.py)

The payload kinds (what to announce, which peers to ask, what to ask, how to check, where the
result goes):
- rollouts.py         RolloutGossip: this node's rollout batches out, peers' into training;
                      RolloutCounters and rollout_status_counters (status `rollouts` counters)
- rollout_batches.py  RolloutReceiver: a peer's fetched batches checked and handed to training
                      (worker thread), counted in a FetchTally
- summaries.py        SummaryGossip: gradient summaries out, same-base peers' into the outer loop
                      (through SummaryOuterLoop, the outer loop's narrow interface);
                      SummaryCounters, JudgedCounts
"""
from swarmnode.node.gossip.rollouts import RolloutGossip
from swarmnode.node.gossip.standings import PeerStandings
from swarmnode.node.gossip.summaries import SummaryGossip

__all__ = ["PeerStandings", "RolloutGossip", "SummaryGossip"]
