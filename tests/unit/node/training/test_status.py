"""node/training/status.py: what the training service reports, and the Prometheus counters built
on it across a crash and restart that resumes from an older checkpoint."""
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from swarmnode.node.training.status import TrainingStatus
from swarmnode.scheduler import Plan, SpeedMeter
from swarmnode.status.prometheus import make_registry
from swarmnode.summaries import OuterResult
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.trainer import StepResult
from tests.unit.status.helpers import SUMMARIES, training_status

PLAN = Plan(4, 0, 0.0, None, "test")
OUTER = OuterResult(tensors=None, partners=[], seconds=0.0, cpu_seconds=0.0, norm=None)


def step(trained: bool) -> StepResult:
    return StepResult(version=1, trained=trained, loss=0.0, reward_mean=0.0, groups=2, groups_used=2 * trained,
                      completion_tokens=20, seconds=0.01, stats={})


def test_steps_without_reward_spread_are_counted_in_all_and_in_a_row():
    status, buffer = TrainingStatus("tiny", 1.0, SpeedMeter()), ExperienceBuffer(max_staleness=1)
    for steps, trained in enumerate((False, False, True, False, False, False), start=1):
        status.stepped(step(trained), steps, buffer, groups_generated=steps)
        if steps == 3:
            assert status.snapshot(PLAN, None)["steps_without_spread_in_a_row"] == 0
    training = status.snapshot(PLAN, None)
    assert training["steps_without_spread"] == 5 and training["steps_without_spread_in_a_row"] == 3


def run(status: TrainingStatus, first: int, last: int, outer_every: int = 2) -> None:
    """Local steps `first`..`last` (the checkpoint's numbering), an outer step every `outer_every`."""
    buffer = ExperienceBuffer(max_staleness=1)
    for steps in range(first, last + 1):
        status.stepped(step(True), steps, buffer, groups_generated=steps)
        if steps % outer_every == 0:
            status.outer_stepped(steps // outer_every, OUTER)


def scrape(status: TrainingStatus) -> dict[str, float]:
    """The unlabelled samples /metrics serves for this status (summaries as gossip/summaries.py maps them)."""
    outer = status.outer_snapshot()
    summaries = {**SUMMARIES, "outer_steps": outer["outer_steps"], "outer_steps_this_run": outer["outer_steps_this_run"]}
    doc = training_status(training=status.snapshot(PLAN, None), summaries=summaries)
    text = generate_latest(make_registry(lambda: doc)).decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels}


def increase(values: list[float]) -> float:
    """What Prometheus's increase() adds up over these scrapes: a drop is a reset (from 0)."""
    return sum(b - a if b >= a else b for a, b in zip(values, values[1:]))


def test_a_restart_from_an_older_checkpoint_counts_each_step_once():
    first = TrainingStatus("tiny", 1.0, SpeedMeter())
    first.training(version=0, steps=0)
    scrapes = [scrape(first)]
    run(first, 1, 7)  # 7 steps, 3 outer steps; the last checkpoint was at step 4 (2 outer steps), then a crash
    scrapes.append(scrape(first))
    second = TrainingStatus("tiny", 1.0, SpeedMeter())
    second.training(version=4, steps=4, outer_steps=2)  # resumed: steps 5.. are taken again
    scrapes.append(scrape(second))
    run(second, 5, 9)  # 5 steps, 2 outer steps (at 6 and 8)
    scrapes.append(scrape(second))
    steps = [s["swarmnode_training_steps_total"] for s in scrapes]
    outer = [s["swarmnode_summaries_outer_steps_total"] for s in scrapes]
    assert steps == [0, 7, 0, 5] and increase(steps) == 7 + 5  # every step this node took, each once
    assert outer == [0, 3, 0, 2] and increase(outer) == 3 + 2
    # The counts across restarts are gauges, and continue the checkpoint's from the start.
    assert [s["swarmnode_training_steps_across_restarts"] for s in scrapes] == [0, 7, 4, 9]
    assert [s["swarmnode_summaries_outer_steps_across_restarts"] for s in scrapes] == [0, 3, 2, 4]
    assert second.snapshot(PLAN, None)["steps_this_run"] == 5


def test_steps_without_spread_start_from_0_in_each_process():
    status = TrainingStatus("tiny", 1.0, SpeedMeter())
    status.training(version=40, steps=40)
    assert status.snapshot(PLAN, None)["steps_without_spread"] is None  # not measured yet: no series
    status.stepped(step(False), 41, ExperienceBuffer(max_staleness=1), groups_generated=1)
    assert scrape(status)["swarmnode_training_steps_without_spread_total"] == 1


def test_peer_supply_rows_join_the_plans_inputs_with_what_was_trained_and_how_stale():
    from swarmnode.node.training.status import peer_supply_rows
    from swarmnode.scheduler import PeerSupply

    supplies = (PeerSupply("slow", 0.5, 0.2), PeerSupply("liar", 1e9, 0.4), PeerSupply("new", 3.0, None))
    rows = peer_supply_rows(supplies, {"slow": 10, "gone": 4}, {"slow": 1.25, "gone": 9.0})
    assert [r["peer_id"] for r in rows] == ["liar", "slow", "new"]  # most counted on first
    assert rows[0] == {"peer_id": "liar", "claimed_groups_per_s": 1e9, "observed_groups_per_s": 0.4,
                       "planned_groups_per_s": 0.4, "trained": 0, "mean_staleness": None}
    assert (rows[1]["planned_groups_per_s"], rows[1]["trained"], rows[1]["mean_staleness"]) == (0.2, 10, 1.25)
    assert rows[2]["planned_groups_per_s"] == 0.0  # a claim alone brings nothing
    assert len(peer_supply_rows(supplies, {}, {}, limit=2)) == 2


def test_the_status_shows_the_supply_the_plan_was_made_with():
    from swarmnode.scheduler import PeerSupply

    status, buffer = TrainingStatus("tiny", 1.0, SpeedMeter()), ExperienceBuffer(max_staleness=1)
    status.stepped(step(True), 1, buffer, groups_generated=1)
    plan = Plan(4, 4, 0.0, None, "test", supplies=(PeerSupply("p", None, 0.5),))
    [row] = status.snapshot(plan, None)["peer_supply"]
    assert row["peer_id"] == "p" and row["planned_groups_per_s"] == 0.5
