"""Hostile peers for swarmnode: real processes with valid, signed identities that speak the real
protocol (the victim swarm's transport on 127.0.0.1: hivemind's DHT + p2pd, or py-libp2p's
Kademlia + GossipSub; the rollout and summary request streams) and attack one node.

Two kinds of attacker live here:

- the hostile peer process, `python -m swarmnode.testing.hostile.peer --help` (malformed,
  forged, replayed and flooding messages);
- the dishonest daemon, `python -m swarmnode.testing.hostile.dishonest run ...`: the real
  `swarmnode run` with only its published gradient summaries bent (SWARMNODE_BEND).

Which file holds what:

- `peer.py`: the peer process (`run`, `main`): runs the chosen attacks, writes the result JSON;
- `personas.py`: `HostilePeer`, its personas (`Persona`: one identity + transport each) and the
  served `Outbox`, which the attacks are given;
- `keys.py`: the DHT keys of the small test swarm (the one shard of 0 bits of each window);
- `persona_transport.py`: a persona's transport by kind (`--transport hivemind|libp2p`, each
  library imported only in its own branch) and its direct stores into the victim;
- `groups.py`: the batch crafter (`Crafter`): real task items, token ids and true log-probs;
- `crafting.py`: what the attacks share: the attack registry (`attack`, `Expectation`), crafted
  batches, raw envelopes/records/announcements that the builders would refuse to make;
- `attacks.py`: one small coroutine per payload attack class (`ATTACKS`), what each should cost
  the victim (`EXPECTED`: the rejection reasons its status must count), the sets `ALL` and
  `MIXED`, and `expand` for `--attack` specs;
- `floods.py`: the flood attacks (many messages, many identities) and the stalling peer;
- `summary_attacks.py`: the gradient-summary attacks (`--attack summaries`, `SummaryServer`);
- `summary_crafting.py`: honest summaries from the real compressor, then corrupted
  (`CORRUPTIONS`, `corrupted`; pure, no I/O);
- `dishonest.py`: the dishonest daemon (`Bender`, `parse_bend`, the bends sign_flip, random,
  alie, turncoat (after TURN_AFTER summaries or, turncoat:k@s, after s seconds), collude,
  replay, echo (a victim's own summaries sent back, SWARMNODE_ECHO_HOME));
- `victim.py`: the honest side (config, status sampling, RSS, running the hostile peer as a child
  process), shared by tests/integration/test_hostile_peer_cannot_stop_training.py and
  scripts/experiments/hostile_harness.py.
"""
