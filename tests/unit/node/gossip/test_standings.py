"""node/gossip/standings.py: a peer's GossipSub penalty from this node's strikes and rejections, and
the status `rollouts` rejections by reason (rollouts' only)."""
from swarmnode.config import NodeConfig
from swarmnode.node.gossip.standings import REJECTIONS_PENALTY_CAP, PeerStandings
from swarmnode.protocol import RejectReason
from swarmnode.swarm.peers import MessageStats
from swarmnode.swarm.gossip.rollout_bookkeeping import IGNORED_PENALTY

NOW = 1000.0


def test_gossip_penalty_adds_rejections_up_to_a_cap_to_the_strikes(tmp_path):
    config = NodeConfig.model_validate({"rollouts": {"strike_limit": 3, "strike_window_s": 10, "ignore_s": 60}})
    stats = MessageStats()
    standings = PeerStandings.open(config, stats, tmp_path, lambda: NOW)
    try:
        assert standings.gossip_penalty("honest", NOW) == 0.0
        stats.reject(RejectReason.BAD_SIGNATURE, "liar")
        stats.reject(RejectReason.MALFORMED, "liar")
        assert standings.gossip_penalty("liar", NOW) == 2.0  # two rejected records, no strikes
        standings.ledger.record("liar", accepted=0, rejected=2, now=NOW)
        assert standings.gossip_penalty("liar", NOW) == 4.0  # + two strikes in the window
        for _ in range(100):
            stats.reject(RejectReason.MALFORMED, "flooder")
        assert standings.gossip_penalty("flooder", NOW) == REJECTIONS_PENALTY_CAP
        standings.ledger.record("liar", accepted=0, rejected=4, now=NOW + 1)  # over the limit: ignored
        assert standings.gossip_penalty("liar", NOW + 2) == IGNORED_PENALTY + 2.0
    finally:
        standings.close()


def test_only_rollout_rejections_count_in_the_rollouts_counters_by_reason(tmp_path):
    stats = MessageStats()
    standings = PeerStandings.open(NodeConfig(), stats, tmp_path, lambda: NOW)
    try:
        standings.blame("peer", 1, [(RejectReason.PROMPT_MISMATCH, "a"), (RejectReason.TOO_LONG, "b"),
                                    (RejectReason.PROMPT_MISMATCH, "c")])
        standings.blame("peer", None, [(RejectReason.HARMFUL_SUMMARY, "summary")], 6, kind="gradient_summary")
        assert standings.counters.groups_rejected_by_reason() == {"prompt_mismatch": 2, "too_long": 1}
        assert stats.rejected_by_sender["peer"] == {"prompt_mismatch": 2, "too_long": 1, "harmful_summary": 1}
    finally:
        standings.close()
