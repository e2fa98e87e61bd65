"""swarm/penalties.py: the penalties the transport reads, 0 until the standings judge."""
from swarmnode.swarm.penalties import PeerPenalties


class Standings:
    def gossip_penalty(self, peer, now):
        return {"liar": 4.0}.get(peer, 0.0) + now


def test_penalties_are_zero_until_judged_then_the_judges_at_the_clocks_time():
    penalties = PeerPenalties(clock=lambda: 0.5)
    assert penalties.penalty("liar") == 0.0
    penalties.judged_by(Standings())
    assert penalties.penalty("liar") == 4.5 and penalties.penalty("honest") == 0.5
