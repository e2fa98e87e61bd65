"""The scheduler in a real heterogeneous swarm: a slowed node plans smaller batches of its own
and fills them with a fast peer's groups, and the fast peer still trains on the slow node's groups.

Two real daemons share rollouts with the scheduler on (balanced selection); node1 runs
--slowdown 6. The window is short and Q_min high, so a step must stay short: the slow node,
measuring ~6x the seconds per group, must plan fewer own groups per step than the fast one.
The assertions are relative (one node against the other), never absolute speeds.
"""
import sqlite3

import pytest

from swarmnode.node.local_swarm import LocalSwarm
from tests.integration.conftest import status_json, wait_until

SLOWDOWN = 6.0


@pytest.fixture
def scheduler_config(tmp_path, local_config):
    path = tmp_path / "scheduler.yaml"
    text = local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
    assert "window_s: 10" in text
    text = text.replace("window_s: 10", "window_s: 4")
    path.write_text(
        text
        + "\ntraining:\n  local_rollouts: 8\n  external_rollouts: 8\n  external_selection: balanced\n"
          "  samples_per_prompt: 4\n  eval_every: 1000\n  eval_size: 4\n  checkpoint_every: 1000\n  threads: 1\n"
          "\nrollouts:\n  share: true\n  announce_interval_s: 1\n  fetch_interval_s: 0.5\n"
          "\nsummaries:\n  enabled: false\n"
          "\nscheduler:\n  enabled: true\n  min_steps_per_window: 16\n  max_steps_per_window: 64\n"
    )
    return path


def last_local_groups(home_root, n=3):
    with sqlite3.connect(home_root / "metrics.sqlite") as db:
        rows = db.execute("SELECT value FROM metrics WHERE name = 'local_groups' ORDER BY version DESC LIMIT ?", (n,)).fetchall()
    return [int(r[0]) for r in rows]


def test_a_slow_node_plans_less_own_work_and_peers_still_train_on_it(tmp_path, scheduler_config):
    swarm = LocalSwarm(tmp_path / "swarm", 2, scheduler_config,
                       node_args=lambda i: ["--slowdown", str(SLOWDOWN)] if i == 1 else [])
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = [status_json(h)["peer_id"] for h in homes]

        seen = {}

        def planned_and_shared():
            statuses = [status_json(h) for h in homes]
            training = [s["training"] for s in statuses]
            seen["last"] = [{k: t.get(k) for k in ("plan", "steps", "external_trained", "external_trained_by_sender")}
                            for t in training]
            plans = [t["plan"] for t in training]
            if any(p is None or p["steps_per_window"] is None for p in plans):
                return None  # still measuring
            if plans[1]["local_rollouts"] >= plans[0]["local_rollouts"]:
                return None  # the first estimates are noisy: wait for a plan from a few batches
            if not (training[0]["external_trained_by_sender"] or {}).get(ids[1]):
                return None  # the fast node has not trained on a slow group yet
            recent = last_local_groups(homes[1].root)
            if (training[1]["external_trained"] or 0) < 8 or len(recent) < 3:
                return None
            if min(recent) >= 8:
                return None  # a new plan reaches the trainer with its next batch, not the step under way
            return statuses

        try:
            statuses = wait_until(planned_and_shared, timeout=180, interval=2.0,
                                  what="the slow node to plan smaller batches and both to train on each other's groups")
        except AssertionError as e:
            raise AssertionError(f"{e}; last seen {seen.get('last')}") from None

    slow, fast = statuses[1]["training"], statuses[0]["training"]
    assert slow["plan"]["local_rollouts"] < fast["plan"]["local_rollouts"]
    assert slow["plan"]["local_rollouts"] < 8, slow["plan"]  # less work than configured: the window is short
    assert slow["plan"]["reason"].startswith(("slow", "slower")), slow["plan"]
    # The plan reached the trainer: its last steps took fewer than the configured 8 own groups.
    assert min(last_local_groups(homes[1].root)) < 8
    # Peers' groups fill the slow node's steps; its own few groups still reach the fast node's steps.
    assert slow["staleness_external"] and sum(slow["staleness_external"].values()) == slow["external_trained"]
    assert fast["external_trained_by_sender"][ids[1]] > 0
    assert slow["groups_generated"] > 0
    # Status shows the supply each plan was made with, and how stale each peer's groups were here.
    [supply] = [r for r in fast["peer_supply"] if r["peer_id"] == ids[1]]
    assert supply["trained"] > 0 and supply["mean_staleness"] is not None
