"""A hostile peer process attacks a node of an honest two-node swarm; the node keeps training,
stays within its bounds, names every rejection, and keeps hearing its honest peer. Once per
transport kind (network.transport: hivemind, libp2p): the daemons and the hostile peer run the
same kind, and the same assertions hold for both.

node0 (the victim) and node1 (honest) train the bundled policy and share rollouts (SAPO 4/4);
`python -m swarmnode.testing.hostile.peer` joins through node0 with real identities and real p2pd and runs
every attack class of swarmnode/testing/hostile/attacks.py against it: first the payload attacks and the
cheap floods, one fresh identity each, then a flood of 2000 fresh identities. Throughout:

- node0 stays alive, its training phase stays "training" and its steps grow during every attack;
- node0 keeps serving node1 (node1 accepts node0's groups through the attacks, request flood included);
- groups from node1 keep being accepted during every attack, per step node0 takes (node1's standing is never lost,
  never ignored, and no rejection is ever counted against it);
- each attack's rejection reasons are counted (messages.rejected) and attributed to the hostile
  identities of that attack (or "unverified" for DHT values whose binding was never checked);
- per-peer state stays under the configured bounds (limits: max_peers 64, max_tracked_senders 64)
  and the daemon's RSS (with p2pd) grows by less than RSS_GROWTH_BOUND_MIB more than node1's.

RSS_GROWTH_BOUND_MIB: measured on this 2-core machine, node0 (daemon + p2pd) sits at ~550 MiB once
it trains, and grows by itself: +19 MiB over 145 s of a clean run (allocator warm-up, SQLite
caches, the experience buffer filling). Under this test's attacks it grew by 28-35 MiB over its
~100 s; under scripts/experiments/hostile_harness.py (every attack, 20000 identities) by 26 MiB over 6 min
(peak +40). Everything a hostile peer can make it hold is capped by config: 64 peers, 64 sender
standings, 64 values per DHT key over the 8 keys in reach, 8192 cached verdicts (a digest and a
checked record, < 2 KiB each: < 16 MiB), fetch responses of at most 2 MiB (8 at once: 16 MiB).
So +64 MiB leaves room for the caps, and is below what unbounded tables would take by the end
of a longer flood (a peer entry, a standing and two cached values per identity, an estimated
5-10 KiB: 100-200 MiB at the harness's 20000). On libp2p (no p2pd: the daemon alone) node0 sat
at ~540 MiB and grew by 35-37 MiB over the run.
A node's growth is the median of its RSS samples over the last TAIL_S seconds less their median
over the baseline, and the bound is on node0's growth less node1's: node1 runs the same code
through the same warm-up, unattacked. The peak of a noisy series against the peak of an 8 s one
(as this test measured first) counted transient allocations: node0's samples jump by 20-40 MiB
and back within a second, and two clean-clone runs failed at +69 and +72 by peaks whose
sustained growth was lower.

On libp2p the hostile peer's personas run py-libp2p (swarmnode/testing/hostile/persona_transport.py):
its direct stores are one Kademlia PUT_VALUE per value, and the floods also push each value on
the swarm's GossipSub topic, since that is how values reach a libp2p node's reads. The whole
attack list runs on both kinds: on libp2p it takes ~1.5 times as long (its identity flood stores
~100 identities/s where hivemind's store RPC takes ~1700/s).
"""
from __future__ import annotations

import json
import statistics
import time

import pytest

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.hostile.attacks import ALL, EXPECTED
from swarmnode.testing.hostile.victim import Monitor, hostile_command, rates, run_hostile, sample, write_honest_config
from tests.integration.conftest import status_json, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

RSS_GROWTH_BOUND_MIB = 64.0
TAIL_S = 6.0
BASELINE_S = 8.0
ATTACK_SECONDS = 4.0  # each attack's most time (floods take all of it)
FLOOD_IDENTITIES = 2000
# Payload attacks and cheap floods first, the identity flood after (it evicts per-sender state by
# design, so attribution is checked before it). `stall` (fetch answers that never come) is here
# too: a slow peer must not hold up fetches from honest ones.
PHASE1 = [a for a in ALL if a != "identity_flood"] + ["stall"]
PHASE2 = ["identity_flood"]
HOSTILE_TIMEOUT_S = 240
# node0's steps per second during any attack: at least this share of what they were before.
# The hostile process itself takes CPU on the test machine (the request flood alone costs node0
# ~25% of its steps on 2 cores), so this asks for "still training", not for "unaffected": that
# comparison is scripts/experiments/hostile_harness.py's (table and --reward-curve).
MIN_THROUGHPUT_SHARE = 0.25
# Groups node0 accepts from node1 per step it takes, during any attack: at least this share of
# the figure before. node0 pulls groups as its steps need them (SAPO 4/4: ~3.9 of node1's per
# step), so groups per second fall with whatever CPU the hostile process takes (a libp2p run on a
# clean clone measured 0.22 of the baseline during the announce flood, and 0.49 when rerun),
# while groups per step stayed at 0.88-1.03 of the baseline through every attack: it says
# "still heard" without timing the machine. An attack that silenced node1 takes it toward 0.
MIN_HEARD_SHARE = 0.5


def run_attacks(tmp_path, name: str, maddr: str, attacks: list[str], transport: str) -> dict:
    out = tmp_path / f"{name}.json"
    command = hostile_command(maddr, ",".join(attacks), out, seconds=ATTACK_SECONDS, identities=FLOOD_IDENTITIES,
                              transport=transport)
    result, log_tail = run_hostile(command, out, tmp_path / f"{name}.log", HOSTILE_TIMEOUT_S)
    assert set(result["attacks"]) == set(attacks), log_tail
    return result


def check_attack_windows(monitor: Monitor, result: dict, baseline: dict, problems: list[str]) -> None:
    """During every attack: node0 alive and training, node1's standing kept, node0's steps at no less
    than MIN_THROUGHPUT_SHARE of the baseline rate and the groups it accepts from node1 per step at
    no less than MIN_HEARD_SHARE of the baseline's."""
    for name, attack in result["attacks"].items():
        window = monitor.between(attack["started_at"], attack["ended_at"] + 1.0)
        if len(window) < 2:
            problems.append(f"{name}: too few status samples ({len(window)})")
            continue
        if not all(s.alive and s.phase == "training" for s in window):
            problems.append(f"{name}: node0 stopped training: {[(s.alive, s.phase) for s in window]}")
        if window[-1].steps <= window[0].steps:
            problems.append(f"{name}: node0 took no training step during the attack")
        accepted = [s.honest_accepted for s in window]
        if accepted != sorted(accepted):
            problems.append(f"{name}: node1's standing on node0 was reset (groups accepted, by its standing: {accepted})")
        check_rates(name, rates(window), baseline, problems)


def check_rates(when: str, hit: dict, baseline: dict, problems: list[str]) -> None:
    """node0 still trains (steps per second) and still hears node1 (its groups per step)."""
    for key, share, what in (("steps_per_s", MIN_THROUGHPUT_SHARE, "node0's steps per second"),
                             ("honest_groups_per_step", MIN_HEARD_SHARE, "groups accepted from node1 per step")):
        if not hit[key] or hit[key] < share * baseline[key]:
            problems.append(f"{when}: {what} fell from {baseline[key]} before the attacks to {hit[key]} "
                            f"(bound: {share} of before; all figures: {hit})")


def rss_growth(samples: list, started: float) -> float:
    """MiB: the median RSS over the last TAIL_S seconds less the median before `started`."""
    rss = [(s.t, s.rss_mib) for s in samples if s.rss_mib is not None]
    before = [r for t, r in rss if t < started]
    tail = [r for t, r in rss if t >= rss[-1][0] - TAIL_S]
    return statistics.median(tail) - statistics.median(before)


def check_attribution(status: dict, results: list[dict], honest_id: str, problems: list[str]) -> None:
    rejected, by_sender = status["messages"]["rejected"], status["messages"]["rejected_by_sender"]
    if honest_id in by_sender:
        problems.append(f"rejections counted against the honest node1: {by_sender[honest_id]}")
    hostile = {pid for r in results for a in r["attacks"].values() for pid in a["peer_ids"]} | {"unverified"}
    blamed = set(by_sender) - hostile - {honest_id}
    if blamed:
        problems.append(f"rejections counted against peers that are not hostile: { {b: by_sender[b] for b in blamed} }")
    for result in results:
        for name, attack in result["attacks"].items():
            expect = EXPECTED[name.split("#")[0]]
            mine: dict[str, int] = {}
            for pid in attack["peer_ids"] + ["unverified"]:
                for reason, n in by_sender.get(pid, {}).items():
                    mine[reason] = mine.get(reason, 0) + n
            missing = [r for r in expect.all_of if not mine.get(r)]
            if missing:
                problems.append(f"{name}: node0 counted no {missing} against it (it counted {mine}; all: {rejected})")
            if expect.any_of and not any(mine.get(r) for r in expect.any_of):
                problems.append(f"{name}: node0 counted none of {expect.any_of} against it (it counted {mine})")


@pytest.mark.parametrize("transport", ["hivemind", "libp2p"])
def test_hostile_peer_cannot_stop_training_or_silence_honest_peers(tmp_path, transport):
    config = write_honest_config(tmp_path / "honest.yaml")
    swarm = LocalSwarm(tmp_path / "swarm", 2, config,
                       node_env=lambda i: {"SWARMNODE__TRAINING__DATA_SEED": str(1000 + 1000 * i),
                                           "SWARMNODE__NETWORK__TRANSPORT": transport})
    with swarm:
        swarm.start()
        victim, honest = swarm.nodes
        honest_id = status_json(honest.home)["peer_id"]
        victim_id = status_json(victim.home)["peer_id"]
        maddr = status_json(victim.home)["multiaddrs"][0]

        def served_to_honest() -> int:
            """Groups node1 has accepted from node0: node0 keeps serving its honest peer."""
            return status_json(honest.home)["rollouts"]["senders"].get(victim_id, {}).get("accepted", 0)

        wait_until(lambda: (s := sample(victim.home, honest_id)).honest_accepted > 0 and s.steps > 0, timeout=120,
                   interval=1.0, what="node0 to train and to accept node1's groups")

        with (Monitor(victim.home, honest_id, victim.process, interval=0.5) as monitor,
              Monitor(honest.home, victim_id, honest.process, interval=1.0) as control):
            time.sleep(BASELINE_S)
            baseline = rates(monitor.samples)
            started = time.time()
            served_before = served_to_honest()

            phase1 = run_attacks(tmp_path, "phase1", maddr, PHASE1, transport)
            time.sleep(2.0)
            status1 = status_json(victim.home)
            served_during = served_to_honest() - served_before
            phase2 = run_attacks(tmp_path, "phase2", maddr, PHASE2, transport)
            # The flood's values live on (100 s): node1 must still be heard after it, not only during it.
            time.sleep(6.0)
            after_flood = time.time()
            time.sleep(6.0)
            status2 = status_json(victim.home)
            during = rates(monitor.between(started, time.time()))
        exit_code = victim.process.poll()
        (tmp_path / "samples.json").write_text(json.dumps([s.__dict__ for s in monitor.samples]))
        (tmp_path / "control_samples.json").write_text(json.dumps([s.__dict__ for s in control.samples]))

    problems: list[str] = []
    # -- the node kept working -------------------------------------------------------------------
    if exit_code is not None:
        problems.append(f"node0 died (exit code {exit_code})")
    if status2["training"]["phase"] != "training":
        problems.append(f"node0's training is {status2['training']['phase']!r}")
    check_attack_windows(monitor, phase1, baseline, problems)
    if served_during <= 0:
        problems.append("node1 accepted no groups from node0 while node0 was attacked (request flood included)")
    check_attack_windows(monitor, phase2, baseline, problems)
    tail = monitor.between(after_flood, time.time())
    check_rates("after the identity flood", rates(tail), baseline, problems)
    check_rates("over all the attacks", during, baseline, problems)
    standing = status2["rollouts"]["senders"].get(honest_id, {})
    if not (standing.get("accepted", 0) > 0 and not standing.get("ignored") and standing.get("rejected", 0) == 0):
        problems.append(f"node1's standing on node0 at the end: {standing}")

    # -- it said why it refused what it refused, and whom it blamed --------------------------------
    check_attribution(status1, [phase1], honest_id, problems)
    if honest_id in status2["messages"]["rejected_by_sender"]:
        problems.append(f"after the identity flood, rejections against node1: {status2['messages']['rejected_by_sender'][honest_id]}")

    # -- its memory stayed bounded --------------------------------------------------------------------
    limits1, limits2 = status1.get("limits"), status2.get("limits")
    if limits1 is None or limits2 is None:
        problems.append("the status document has no `limits` object")
    else:
        if not (limits2.get("peers", 1e9) <= 64 and limits2.get("tracked_senders", 1e9) <= 64):
            problems.append(f"per-peer state over its bounds after the identity flood: {limits2}")
        if not limits1.get("serve_refused"):
            problems.append(f"the request flood was not refused: {limits1}")
    grown, control_grown = rss_growth(monitor.samples, started), rss_growth(control.samples, started)
    if grown - control_grown >= RSS_GROWTH_BOUND_MIB:
        problems.append(f"node0's RSS grew by {grown:.0f} MiB, node1's by {control_grown:.0f} "
                        f"(bound: node1's + {RSS_GROWTH_BOUND_MIB:.0f})")
    flood = phase2["attacks"]["identity_flood"]
    if flood["details"]["identities"] != FLOOD_IDENTITIES:
        problems.append(f"the identity flood stored {flood['details']['identities']} identities, not {FLOOD_IDENTITIES}")

    assert not problems, "\n".join(problems) + f"\n(status samples: {tmp_path / 'samples.json'})"
