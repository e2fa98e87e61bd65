"""Dishonest same-base peers against a real node: every summary well-formed, signed, finite, of
the right base, names and shapes, under the norm bound, and still a lie.

node0 (the victim) and node1 (honest) train the bundled policy and exchange summaries every 4
steps. Beside them run the project's own daemon with one thing bent, its published summaries
(swarmnode/testing/hostile/dishonest.py, `python -m swarmnode.testing.hostile.dishonest run ...`): a real identity, real
p2pd, real training, the real protocol. All attacks run at once against node0 (one swarm, so
the suite pays for one): sign flip at 1x and at 8x, a random direction at 4x, an ALIE-style bias, a
turncoat that flips at 3x after 75 s of earning trust, two colluders pushing one fixed direction
at 4x, a peer that replays one honest summary forever and one that echoes node0's own summaries
back. node0 takes partners_per_step = 4 of their
summaries per outer step.

node0 must end with finite weights and not below where it started (a collapse check: merged
plainly, one 8x flipper took a node from 13% to 3% over 240 s); every dishonest peer's summaries
must be judged, those of the steady liars skipped or down-weighted (a random one, colluders and
the echo never earning trust), counted under their reason (low_trust; repeated_summary strikes
for the replayer) and attributed to the identity that sent them; the turncoat must be judged on
what it sent after turning but need not be skipped: at this size its flipped summaries are as weak
evidence as its honest ones (docs/security.md, "Small batches carry little evidence"); node1
is never struck. These bookkeeping assertions are what fail for an unprotected node: with
summaries.robust_merge off (measured 2026-11-25) every dishonest peer was merged every time and
the replayer never struck, while node0's accuracy only stalled (7.8% -> 8.9%) in this short run.

Not compared with a lone node: at 240 steps of 4 x 4 samples, run-to-run RL variance swamps the
effect (the mean of the last 3 evaluations: a lone node ended at 12.0%, 14.6% and 19.5% in three
runs, an honest pair's node0 at 13.0%, node0 here at 11.5% and 11.7%). What each attack costs an honest node against a
learning baseline is measured by scripts/experiments/byzantine_experiment.py (500 steps, 2 seeds).
"""
from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
import yaml
from safetensors.torch import load_file

from swarmnode.config import bundled_config_path
from swarmnode.node.local_swarm import LocalSwarm
from tests.integration.conftest import status_json, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STEPS = 240  # node0's local steps
EVAL_SIZE = 64  # held-out items per task
# Random directions at 8x mostly exceed node0's norm bound (their error feedback grows them): at
# 4x they pass it and are judged.
# The turncoat is honest for its first 75 s (the victim trains ~200 s here), then flips at 3x;
# the echo sends node0's own summaries back as its own.
DISHONEST = {2: "sign_flip:8", 3: "random:4", 4: "alie:1", 5: "turncoat:3@75", 6: "collude:4", 7: "collude:4",
             8: "replay", 9: "sign_flip:1", 10: "echo"}
# Evaluation noise (128 items, the mean of the last 3 evaluations) allowed below node0's start.
COLLAPSE_SLACK = 0.03
DATA_SEED = 1000


def write_config(path, max_steps: int):
    config = yaml.safe_load(bundled_config_path("local.yaml").read_text(encoding="utf-8"))
    config["model"] = {"name_or_path": "bundled:tiny-policy"}
    config["training"] = {"local_rollouts": 4, "external_rollouts": 0, "samples_per_prompt": 4, "eval_every": 40,
                          "eval_size": EVAL_SIZE, "checkpoint_every": 40, "threads": 1, "max_steps": max_steps,
                          "data_seed": DATA_SEED}
    config["summaries"] = {"every_steps": 4, "partners_per_step": 4, "fetch_interval_s": 0.5,
                           "announce_interval_s": 1}
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def final_accuracy(home_root) -> tuple[float, list[float]]:
    """The mean of the last 3 held-out evaluations, and every evaluation."""
    with sqlite3.connect(str(home_root / "metrics.sqlite")) as conn:
        values = [v for (v,) in conn.execute("SELECT value FROM metrics WHERE name = 'heldout_accuracy/mean' "
                                             "ORDER BY rowid")]
    return sum(values[-3:]) / len(values[-3:]), values


def finished(home, steps: int) -> bool:
    t = status_json(home)["training"]
    return t["phase"] == "done" and t["steps"] >= steps


def latest_checkpoint(root):
    return root / "checkpoints" / (root / "checkpoints" / "latest").read_text().strip()


def test_dishonest_peers_are_judged_skipped_and_struck_and_the_victim_still_learns(tmp_path):
    started = time.monotonic()
    victim_config = write_config(tmp_path / "victim.yaml", STEPS)
    size = 2 + len(DISHONEST)

    def env(i: int) -> dict[str, str]:
        out = {"SWARMNODE__TRAINING__DATA_SEED": str(DATA_SEED + 1000 * i)}
        if i > 0:
            out["SWARMNODE__TRAINING__MAX_STEPS"] = "100000"  # the others train on until node0 is done
        if i in DISHONEST:
            out["SWARMNODE_BEND"] = DISHONEST[i]
        if DISHONEST.get(i) == "echo":
            out["SWARMNODE_ECHO_HOME"] = str(tmp_path / "swarm" / "node0")
        return out

    # node0 logs each verdict (DEBUG), naming the sender and when it made the summary.
    swarm = LocalSwarm(tmp_path / "swarm", size, victim_config, node_env=env,
                       node_args=lambda i: ["--log-level", "DEBUG"] if i == 0 else [],
                       node_module=lambda i: "swarmnode.testing.hostile.dishonest" if i in DISHONEST else "swarmnode")
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = {i: status_json(h)["peer_id"] for i, h in enumerate(homes)}
        wait_until(lambda: finished(homes[0], STEPS), timeout=420, interval=2.0, what="node0 to take its steps")
        final = status_json(homes[0])
        (tmp_path / "status.json").write_text(json.dumps(final, indent=1))
        victim_acc, victim_curve = final_accuracy(homes[0].root)
        checkpoint = latest_checkpoint(homes[0].root)
        finite = {f: all(bool(t.isfinite().all()) for t in load_file(str(checkpoint / f)).values())
                  for f in ("model.safetensors", "outer.safetensors")}
        bent = {i: swarm.nodes[i].stdout_path.read_text(errors="replace") for i in DISHONEST}  # its console
        victim_log = (homes[0].root / "logs" / "node.log").read_text(errors="replace")

    elapsed = time.monotonic() - started

    problems: list[str] = []
    summ, by_sender = final["summaries"], final["messages"]["rejected_by_sender"]
    trust = summ["trust"]
    for i, attack in DISHONEST.items():
        if f"every summary bent: {attack}" not in bent[i]:
            problems.append(f"node{i} did not run bent as {attack}")
    if not all(finite.values()):
        problems.append(f"node0's checkpoint holds NaN or Inf: {finite}")
    if victim_acc < victim_curve[0] - COLLAPSE_SLACK:
        problems.append(f"node0 ends at {victim_acc:.3f} held-out, below its start (curve {victim_curve})")
    if not summ["robust_merge"] or not summ["agreement_scale"]:
        problems.append(f"robust merging off or no agreement scale: {summ['robust_merge']}, {summ['agreement_scale']}")

    # The honest peer: judged, never struck. Not asserted: that it was merged. At 4 x 4, H = 4 its
    # evidence is a coin toss, and one run skipped all 10 of its summaries at a newcomer's trust
    # (score -0.03); honest merging is asserted where evidence carries
    # (test_same_base_nodes_merge_summaries) and measured by trust_sim.py.
    honest = trust.get(ids[1], {})
    if not honest.get("judged") or honest.get("harmful") or ids[1] in by_sender:
        problems.append(f"node1 (honest) {honest}, rejections {by_sender.get(ids[1])}")

    # Every dishonest peer judged, under its verified id; what was done with it, by attack.
    for i, attack in DISHONEST.items():
        t, struck = trust.get(ids[i]), by_sender.get(ids[i], {})
        name = f"node{i} ({attack})"
        if (not t or t["judged"] < 2) and struck.get("norm_too_large", 0) >= 2 and (not t or t["trust"] < 0.5):
            # Refused at the norm bound, counted against its id, before any judging: an 8x flip
            # can be over node0's bound on every summary (18 of 18 in one CI run), which is
            # the bound doing its job, not a peer that went unjudged.
            continue
        # Judged twice, or once and skipped: a peer distrusted at its first summary is fetched after
        # the trusted ones (docs/security.md), and where node0 takes its steps fast it may not be
        # fetched again before it is done (one run judged the 1x flipper once, evidence -0.16,
        # trust 0, skipped; node0 judged for 51 s in all). The replayer's strike needs a second.
        if not t or t["judged"] < 1 or (t["judged"] < 2 and not t["skipped"]):
            problems.append(f"{name}: judged {t}, refused {struck}")
            continue
        kind = attack.split(":")[0]
        # Not the turncoat: at 4 x 4, H = 4 its flipped summaries are as weak evidence as its honest
        # ones and go in on their credit (below); one CI run merged all 15 it sent, at trust 1.0.
        # Nor the random peer and the colluders: their direction is no evidence either way, so they
        # are down-weighted (never trusted, below) and skipped only when their score dips (one run
        # merged a colluder's 16 summaries, all at trust 0.19 or less).
        if kind in ("sign_flip", "replay") and not t["skipped"]:  # low_trust / repeated
            problems.append(f"{name}: none of its {t['judged']} summaries skipped: {t}")
        # Not asserted: a flipper's harmful_summary strike. With 4 groups x 4 samples and H = 4
        # honest deltas share little direction, so a flipped one disagrees only weakly: one run
        # struck both flippers, another merged them at partial trust (clipped) and struck
        # neither. The strikes are measured at H = 20 (scripts/experiments/byzantine_experiment.py).
        if kind == "replay" and not struck.get("repeated_summary"):
            problems.append(f"{name}: not struck as repeated_summary: {struck}, {t}")
        if kind == "turncoat":
            # It turned within the run and node0 judged what it sent after (from node0's verdict
            # log, by when the sender made each summary). Not asserted: how many of those were
            # merged. At 4 x 4 and H = 4 an honest summary's evidence is nearly a coin toss, so a
            # flip is no surprise and its flipped summaries go in until the credit of its honest
            # ones runs out (5 of 5 in one of three runs, 0 of 2 and 0 of 4 in the others); the count is
            # measured at 8 x 8, H = 20 by scripts/experiments/byzantine_experiment.py (turncoat:3@90).
            # A turncoat distrusted before it turned (its honest summaries read as disagreeing: a
            # coin toss here) has nothing to cash in, and may not be fetched again before node0
            # is done (trusted peers are fetched first; 0 judged in 40 s after one run's turn).
            turned = re.search(r"turned at ([0-9.]+)", bent[i])
            verdicts = [(float(m.group(1)), m.group(2)) for m in re.finditer(
                rf"judged the summary of {ids[i]} made at ([0-9.]+): .*, (merged|low_trust|against_direction|"
                rf"repeated_summary)$", victim_log, re.MULTILINE)]
            before = [v for made, v in verdicts if turned and made < float(turned.group(1))]
            after = [v for made, v in verdicts if turned and made >= float(turned.group(1))]
            trusted_at_turn = bool(before) and before[-1] == "merged"
            if not turned or (trusted_at_turn and not after):
                problems.append(f"{name}: turned {bool(turned)}, judged {len(after)} summaries made after "
                                f"(its last before: {before[-1:]})")
        # A random direction is no evidence either way: its score hovers near zero, so its
        # summaries go in and out of the skip threshold (merged 6 / skipped 5 in one run, 2 / 14
        # in another; clipped to |own| and weighted by that low trust when merged). It must never
        # earn trust. The replayer must lose it.
        if kind in ("random", "collude", "echo") and t["trust"] >= 0.5:
            problems.append(f"{name}: earned trust: {t}")
        if kind == "replay" and t["trust"] >= 0.15:
            problems.append(f"{name}: still trusted at the end: {t}")
    skipped_total = sum(t["skipped"] for t in trust.values())
    if sum(summ["skipped"].values()) != skipped_total:
        problems.append(f"summaries.skipped {summ['skipped']} is not the peers' {skipped_total}")
    harmful = sum(by_sender.get(ids[i], {}).get(r, 0) for i in DISHONEST for r in ("harmful_summary", "repeated_summary"))
    if summ["harmful"] != harmful:
        problems.append(f"summaries.harmful {summ['harmful']} != strikes counted against the dishonest peers {harmful}")
    assert not problems, "\n".join(problems) + f"\n(node0's status: {tmp_path / 'status.json'}; {elapsed:.0f}s)"
