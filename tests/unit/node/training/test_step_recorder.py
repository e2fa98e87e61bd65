"""node/training/step_recorder.py's bookkeeping: the outer step's cadence, when the held-out evaluation
is due, and what one recorded step leaves in metrics, status and checkpoints."""
import queue
import sqlite3

import torch

from swarmnode.node.training.step_recorder import HeldoutEvaluation, OuterSteps, StepRecorder
from swarmnode.node.training.status import TrainingStatus
from swarmnode.scheduler import Plan, SpeedMeter
from swarmnode.store.checkpoints import BackgroundCheckpointer, latest_checkpoint, load_checkpoint
from swarmnode.store.metrics import MetricsStore
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.trainer import StepResult, Trainer, TrainerConfig


def tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))


def step(version: int, groups: int, trained: bool = True, reward: float = 0.5) -> StepResult:
    return StepResult(version=version, trained=trained, loss=0.1, reward_mean=reward, groups=groups, groups_used=groups,
                      completion_tokens=10 * groups, seconds=0.01, stats={}, local_reward_mean=reward,
                      local_groups=groups)


def status() -> TrainingStatus:
    return TrainingStatus("tiny", 1.0, SpeedMeter())


def status_plan() -> Plan:
    return Plan(4, 0, 0.0, None, "test")


def load_saved(checkpoints: BackgroundCheckpointer):
    model = tiny_model()
    return load_checkpoint(latest_checkpoint(checkpoints.root), model, Trainer(model, 0, TrainerConfig()).optimizer)


def metric_values(path, name: str) -> list[tuple[int, float]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version, value FROM metrics WHERE name = ? ORDER BY rowid", (name,)).fetchall()


def test_outer_steps_run_every_h_local_steps_and_count_the_samples_trained_since_the_last():
    model = tiny_model()
    outer = OuterLoop(model, OuterConfig(every_steps=2, compression=CompressionConfig(density=0.5, bits=8, chunk_size=4)))
    out, state, verdicts = queue.Queue(maxsize=4), status(), []
    peers = [1]
    steps = OuterSteps(outer, summaries_out=out, status=state, same_base_peers=lambda: peers[0],
                       on_outer_step=verdicts.append, samples_per_prompt=4)
    groups = [3, 5, 2, 4, 1, 1]
    ran = []
    for local_step, g in enumerate(groups, start=1):
        with torch.no_grad():
            model[0].weight.add_(0.01)  # the inner step moved the weights
        if local_step == 5:
            peers[0] = 0  # no same-base peer: the outer step runs but publishes nothing
        ran.append(steps.after_step(step(local_step, g), local_step, version=local_step) is not None)
    assert ran == [False, True, False, True, False, True]
    assert outer.outer_steps == 3 and state.outer_snapshot()["outer_steps"] == 3
    summaries = [out.get_nowait() for _ in range(out.qsize())]
    assert [(s.step_start, s.step_end, s.base_version, s.num_samples) for s in summaries] == [
        (0, 2, 2, (3 + 5) * 4), (2, 4, 4, (2 + 4) * 4)]
    assert steps.samples_since_outer == 0  # the unpublished outer step still starts a new count
    assert verdicts == []  # no peer's summary was judged


def test_only_steps_that_trained_add_their_gradient_to_the_outer_steps_evidence():
    model = tiny_model()
    outer = OuterLoop(model, OuterConfig(every_steps=3, compression=CompressionConfig(density=0.5, bits=8, chunk_size=4)))
    steps = OuterSteps(outer, summaries_out=queue.Queue(maxsize=4), status=status(), same_base_peers=lambda: 0,
                       on_outer_step=lambda result: None, samples_per_prompt=4)
    for p in model.parameters():
        p.grad = torch.ones_like(p)  # what the trainer's backward left
    steps.after_step(step(1, 2), 1, version=1)
    steps.after_step(step(1, 2, trained=False), 2, version=1)  # no backward ran: .grad is last step's
    assert outer.gradients_added == 1
    steps.after_step(step(2, 2), 3, version=2)  # the outer step: D = 2 x ones
    assert outer.gradients_added == 0
    assert all(torch.equal(d, torch.full_like(d, 2.0)) for d in outer.direction.values())


def test_heldout_evaluation_is_due_by_version_or_by_seconds_since_the_last_one_ended(tmp_path):
    now = [100.0]
    measured = []

    def measure():
        measured.append(now[0])
        now[0] += 30.0  # the evaluation itself takes 30 s
        return {"mean": 0.25, "sum2": 0.5, "sum3": 0.0}

    metrics, state = MetricsStore(tmp_path / "metrics.sqlite"), status()
    evaluation = HeldoutEvaluation(measure, every_versions=5, every_seconds=20.0, metrics=metrics, status=state,
                                   clock=lambda: now[0])
    try:
        assert evaluation.due(5) and evaluation.due(10) and not evaluation.due(3)
        now[0] += 19.0
        assert not evaluation.due(3)
        now[0] += 1.0
        assert evaluation.due(3)  # 20 s since the last
        evaluation.run(3)
        assert not evaluation.due(4)  # timed from its end, not its start: a long evaluation does not repeat at once
        assert state.snapshot(status_plan(), None)["heldout_accuracy"] == 0.25
        assert metric_values(tmp_path / "metrics.sqlite", "heldout_accuracy/sum2") == [(3, 0.5)]
        never_by_time = HeldoutEvaluation(measure, every_versions=5, every_seconds=0.0, metrics=metrics, status=state,
                                          clock=lambda: now[0])
        now[0] += 1e6
        assert not never_by_time.due(4) and never_by_time.due(5)
    finally:
        metrics.close()


def test_the_recorder_counts_steps_evaluates_checkpoints_and_runs_the_outer_step_before_the_count(tmp_path):
    model = tiny_model()
    trainer = Trainer(model, pad_id=0, config=TrainerConfig())
    metrics, state, speed = MetricsStore(tmp_path / "metrics.sqlite"), status(), SpeedMeter()
    checkpoints = BackgroundCheckpointer(tmp_path / "checkpoints")
    evaluated = []

    def measure():
        evaluated.append(trainer.version)
        return {"mean": 0.5}

    evaluation = HeldoutEvaluation(measure, every_versions=3, every_seconds=0.0, metrics=metrics, status=state)
    outer = OuterLoop(model, OuterConfig(every_steps=2, compression=CompressionConfig(density=0.5, bits=8, chunk_size=4)))
    out = queue.Queue(maxsize=4)
    outer_steps = OuterSteps(outer, summaries_out=out, status=state, same_base_peers=lambda: 1,
                             on_outer_step=lambda result: None, samples_per_prompt=2)
    blamed = []
    recorder = StepRecorder(trainer=trainer, buffer=ExperienceBuffer(max_staleness=1), evaluation=evaluation,
                            outer_steps=outer_steps, checkpoints=checkpoints, checkpoint_every=2,
                            max_checkpoint_failures=3, metrics=metrics, status=state, speed=speed,
                            on_implausible=blamed.append, samples_per_prompt=2, steps=10, stream_offset=100)
    try:
        recorder.start()
        assert evaluated == [0] and state.snapshot(status_plan(), None)["phase"] == "training"
        for version in (1, 2, 3, 4):
            result = step(version, groups=3, trained=version != 4)
            if version == 3:
                result.implausible = {"peer": 2}
            if version == 2:
                result.pause_seconds = 0.5  # training.slowdown's pause, filled in by the runner
            trainer.version = version  # what Trainer.step does
            recorder.after_step(result)  # before the weights go out: step 10 + version of 10 + version
            recorder.record(result, dropped=0, items_generated=4 * version)
        assert recorder.steps == 14
        # local steps 11..14: the outer step after 12 and 14, each with two steps' samples
        assert [(s.step_start, s.step_end, s.num_samples) for s in (out.get_nowait(), out.get_nowait())] == [
            (10, 12, 12), (12, 14, 12)]
        assert evaluated == [0, 3]  # version 3 is due; version 4 trained nothing
        assert blamed == [{"peer": 2}]
        assert [v for v, _ in metric_values(tmp_path / "metrics.sqlite", "step")] == [1, 2, 3, 4]
        assert [s for _, s in metric_values(tmp_path / "metrics.sqlite", "step")] == [11, 12, 13, 14]
        snapshot = state.snapshot(status_plan(), None)
        assert (snapshot["steps"], snapshot["policy_version"], snapshot["groups_generated"]) == (14, 4, 16)
        assert snapshot["steps_this_run"] == 4  # from the 10 the run started at
        assert (state.outer_snapshot()["outer_steps"], state.outer_snapshot()["outer_steps_this_run"]) == (2, 2)
        # each step that trained, 0.01 s and the 0.5 s pause of version 2, counted in the step-time histogram
        step_times = snapshot["step_seconds_histogram"]
        assert (step_times["count"], step_times["sum"]) == (3, 0.53)  # version 4 trained nothing
        assert (step_times["buckets"]["0.1"], step_times["buckets"]["0.5"], step_times["buckets"]["1"]) == (2, 2, 3)
        assert state.version == 4
        checkpoints.wait()
        saved = load_saved(checkpoints)
        assert (saved.version, saved.steps, saved.stream_position) == (2, 12, 108)  # version 4 trained nothing
        assert saved.extra["outer"]["outer_steps"] == 1  # saved at version 2, after the first outer step
        recorder.finish(items_generated=20)
        assert evaluated == [0, 3, 4]
        saved = load_saved(checkpoints)  # finish waited for the write
        assert (saved.version, saved.steps, saved.stream_position) == (4, 14, 120)
    finally:
        metrics.close()


def test_a_resumed_outer_loop_shows_its_outer_steps_from_the_start(tmp_path):
    """status.summaries.outer_steps is the checkpoint's count as soon as training begins (not 0
    until the first outer step), and outer_steps_this_run counts from 0."""
    model = tiny_model()
    trainer = Trainer(model, pad_id=0, config=TrainerConfig())
    metrics, state = MetricsStore(tmp_path / "metrics.sqlite"), status()
    outer = OuterLoop(model, OuterConfig(every_steps=2, compression=CompressionConfig(density=0.5, bits=8, chunk_size=4)))
    outer.outer_steps = 7  # what OuterLoop.load restores from the checkpoint
    outer_steps = OuterSteps(outer, summaries_out=queue.Queue(maxsize=4), status=state, same_base_peers=lambda: 0,
                             on_outer_step=lambda result: None, samples_per_prompt=2)
    evaluation = HeldoutEvaluation(lambda: {"mean": 0.5}, every_versions=3, every_seconds=0.0, metrics=metrics,
                                   status=state)
    recorder = StepRecorder(trainer=trainer, buffer=ExperienceBuffer(max_staleness=1), evaluation=evaluation,
                            outer_steps=outer_steps, checkpoints=BackgroundCheckpointer(tmp_path / "checkpoints"),
                            checkpoint_every=100, max_checkpoint_failures=3, metrics=metrics, status=state,
                            speed=SpeedMeter(), on_implausible=lambda counts: None, samples_per_prompt=2, steps=14,
                            stream_offset=0)
    try:
        recorder.start()
        assert (state.outer_snapshot()["outer_steps"], state.outer_snapshot()["outer_steps_this_run"]) == (7, 0)
        training = state.snapshot(status_plan(), None)
        assert (training["steps"], training["steps_this_run"]) == (14, 0)
    finally:
        metrics.close()
