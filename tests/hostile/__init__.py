"""A hostile peer for swarmnode: a real process with valid, signed identities that speaks the real
protocol (hivemind DHT + p2pd on 127.0.0.1, ROLLOUT_PROTOCOL and SUMMARY_PROTOCOL streams) and attacks one node.

- `tests.hostile.peer`: the peer process (`python -m tests.hostile.peer --help`), its personas
  (one identity + p2pd each) and the batch crafter;
- `tests.hostile.attacks`: one small coroutine per attack class, and what each should cost the
  victim (the rejection reasons its status must count);
- `tests.hostile.summary_attacks`: the gradient-summary attacks (`--attack summaries`), built on
  `tests.hostile.summary_crafting` (honest summaries from the real compressor, then corrupted);
- `tests.hostile.victim`: the honest side (config, status sampling, RSS), shared by
  tests/integration/test_hostile_peer.py and scripts/experiments/hostile_harness.py.
"""
