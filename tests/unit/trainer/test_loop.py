"""trainer/loop.py: the prompt stream, the sync and async runners (staleness bound, quotas,
training.slowdown's pause)."""
import copy
import itertools
import math
import threading
import time

import pytest

from swarmnode.policy import load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream, run_sync, slowdown_pause_s
from swarmnode.trainer.trainer import Trainer, TrainerConfig
from tests.helpers import save_random_tiny_policy
from tests.unit.trainer.helpers import CONFIG, raise_the_quota_after_the_first_step


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return load_policy(str(save_random_tiny_policy(tmp_path_factory.mktemp("tiny"))))


def parts(policy):
    trainer_model = copy.deepcopy(policy.model)
    trainer = Trainer(trainer_model, policy.tokenizer.pad_token_id, TrainerConfig(lr=1e-3))
    generator = HFGenerator(copy.deepcopy(policy.model), policy.tokenizer)
    return generator, trainer


def test_prompt_stream_alternates_tasks_and_is_regenerable():
    items = list(itertools.islice(prompt_stream(("sum2", "sum3"), seed=5), 4))
    assert [(i.ref.task, i.ref.index) for i in items] == [("sum2", 0), ("sum3", 0), ("sum2", 1), ("sum3", 1)]


def test_sync_run_syncs_weights_each_step(policy):
    generator, trainer = parts(policy)
    results = run_sync(generator, trainer, prompt_stream(CONFIG.tasks, 1000), CONFIG, steps=3)
    assert len(results) == 3
    assert generator.policy_version == trainer.version


def test_async_run_respects_staleness_bound(policy):
    generator, trainer = parts(policy)
    runner = AsyncRunner(generator, trainer, prompt_stream(CONFIG.tasks, 1000), CONFIG)
    seen = []
    results = runner.run(steps=4, on_step=lambda r, dropped: seen.append(dropped))
    assert len(results) == 4 and len(seen) == 4
    assert set(runner.buffer.stats.staleness) <= {0, 1}  # never more than max_staleness behind
    assert sum(runner.buffer.stats.staleness.values()) == 4 * CONFIG.prompts_per_step


def test_prompt_stream_skips_held_out_questions():
    from swarmnode.trainer.evaluate import heldout_items, questions_of

    held_out = heldout_items(("sum2",), size_per_task=200)
    exclude = questions_of(held_out)
    stream = list(itertools.islice(prompt_stream(("sum2",), seed=1000, exclude=exclude), 2000))
    assert len(stream) == 2000
    assert not {("sum2", i.question) for i in stream} & exclude


def test_async_runner_with_a_slowdown_pauses_in_proportion_and_measures_the_pause(policy):
    """slowdown 3: each batch and step takes 3x its compute, and the timings handed out include it."""
    import time

    generator, trainer = parts(policy)
    computed, timings = [], []
    generate = generator.generate

    def timed_generate(*args, **kwargs):
        start = time.perf_counter()
        out = generate(*args, **kwargs)
        computed.append(time.perf_counter() - start)
        return out

    generator.generate = timed_generate
    runner = AsyncRunner(generator, trainer, prompt_stream(CONFIG.tasks, 1000), CONFIG, slowdown=3.0,
                         on_generate_timing=lambda tokens, seconds, groups: timings.append((tokens, seconds)))
    results = runner.run(steps=3)
    assert all(r.pause_seconds >= 2 * r.seconds * 0.99 for r in results)
    # Every batch but the last (whose pause the end of the run may cut short) took >= 3x its generation.
    assert len(timings) >= 3 and all(t > 0 for t, _ in timings)
    assert all(seconds >= 3 * c * 0.99 for (_, seconds), c in list(zip(timings, computed))[:-1])
    assert runner.generate_seconds == pytest.approx(sum(s for _, s in timings))


def test_async_runner_follows_new_quotas_from_the_next_batch_and_step(policy):
    from swarmnode.trainer.loop import Quotas

    generator, trainer = parts(policy)
    sizes = []
    runner = AsyncRunner(generator, trainer, prompt_stream(CONFIG.tasks, 1000), CONFIG,
                         on_generate_timing=lambda tokens, seconds, groups: sizes.append(groups))
    assert runner.quotas == Quotas(4, 0, 0.0) and runner.idle_shares()["trainer_idle_share"] is None

    def on_step(result, dropped):
        sizes.append(("step", result.local_groups))
        if len(results_so_far) == 0:
            runner.set_quotas(Quotas(2, 0, 0.0))  # the scheduler's next plan
        results_so_far.append(result)

    results_so_far = []
    runner.run(steps=5, on_step=on_step)
    steps = [s[1] for s in sizes if isinstance(s, tuple)]
    batches = [s for s in sizes if not isinstance(s, tuple)]
    assert steps[0] == 4 and steps[-1] == 2  # the trainer takes the new I
    assert batches[0] == 4 and batches[-1] == 2  # the generator makes batches of the new I
    assert runner.trainer_wait_s > 0  # the first step at least waits for the first batch
    assert runner.idle_shares()["trainer_idle_share"] > 0
    assert sum(runner.buffer.stats.staleness_local.values()) == sum(steps)
    assert not runner.buffer.stats.staleness_external


def test_raising_the_quota_past_the_admitted_batches_does_not_deadlock(policy):
    """With max_staleness 1, two batches of the old I are admitted ahead of the trainer; a
    plan that raises I to more than twice that must not leave the trainer waiting for groups
    the generator will not make before the step ends (each step takes one batch, whatever
    its size)."""
    generator, trainer = parts(policy)
    runner = AsyncRunner(generator, trainer, prompt_stream(CONFIG.tasks, 1000), CONFIG)
    hung, taken = raise_the_quota_after_the_first_step(runner, timeout=120)
    assert not hung, "the trainer waited for groups that were never generated"
    assert taken[0] == 1 and taken[-1] == 4 and len(taken) == 5


def test_slowdown_pause_by_hand():
    assert slowdown_pause_s(0.5, 3.0) == 1.0  # 0.5 s of work + 1 s of pause = 3 x 0.5 s
    assert slowdown_pause_s(2.0, 1.5) == 1.0
    assert slowdown_pause_s(0.5, 1.0) == 0.0
    for compute in (0.0, -1.0, math.nan, math.inf):
        assert slowdown_pause_s(compute, 4.0) == 0.0


def test_a_runners_pause_lasts_and_a_stop_ends_it():
    runner = AsyncRunner(None, None, iter(()), RolloutConfig(), slowdown=3.0)
    start = time.perf_counter()
    slept = runner._pause(0.05)
    assert slept >= 0.099 and time.perf_counter() - start >= 0.099  # (3 - 1) x 0.05 s
    assert AsyncRunner(None, None, iter(()), RolloutConfig())._pause(10.0) == 0.0  # slowdown 1: none
    long = AsyncRunner(None, None, iter(()), RolloutConfig(), slowdown=1000.0)
    threading.Timer(0.1, long.stop).start()
    start = time.perf_counter()
    long._pause(1.0)  # would pause 999 s: shutdown must not wait for it
    assert time.perf_counter() - start < 30
