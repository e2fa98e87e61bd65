"""Builders shared by the trainer tests."""
from swarmnode.policy import SamplingParams
from swarmnode.tasks import TaskRef
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.loop import RolloutConfig
from swarmnode.trainer.rollout_export import groups_to_batch

REF = TaskRef("sum2", 0, 0)

# The runners' rollout settings: 4 prompts x 4 samples, staleness 1, 4 new tokens, seeded.
CONFIG = RolloutConfig(prompts_per_step=4, samples_per_prompt=4, max_staleness=1,
                       sampling=SamplingParams(temperature=1.0, max_new_tokens=4, seed=0))


def group(version=0, source="local", rewards=(1.0, 0.0), completions=None, prompt=(1, 2, 3), logprobs=-0.5):
    """A scored group of sum2 item 0 with one completion per reward (behaviour logprobs `logprobs`, or None)."""
    if completions is None:
        completions = [(5 + i, 6) for i in range(len(rewards))]
    return ScoredGroup(
        ref=REF, prompt_token_ids=list(prompt), completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=None if logprobs is None else [[logprobs] * len(c) for c in completions],
        rewards=list(rewards), policy_version=version, source=source,
    )


def uneven_group(version=0, source="local", rewards=(1.0, 0.0), completions=((5, 6), (7,)), prompt=(1, 2, 3)):
    """A scored group of sum2 item 0 whose completions differ in length (2 and 1 tokens by default),
    behaviour logprobs -0.5 per token."""
    return ScoredGroup(
        ref=REF, prompt_token_ids=list(prompt), completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=[[-0.5] * len(c) for c in completions], rewards=list(rewards),
        policy_version=version, source=source,
    )


def raise_the_quota_after_the_first_step(runner, timeout: float) -> tuple[bool, list[int]]:
    """Run 5 steps at I = 1, the plan raising I to 4 after the first; (hung, local groups per step).
    With max_staleness 1, 4 > (1 + 1) x 1: more than the batches already admitted hold."""
    import threading

    from swarmnode.trainer.loop import Quotas

    runner.set_quotas(Quotas(1, 0, 0.0))
    taken = []

    def on_step(result, dropped):
        taken.append(result.local_groups)
        runner.set_quotas(Quotas(4, 0, 0.0))

    done = threading.Thread(target=lambda: runner.run(steps=5, on_step=on_step), daemon=True)
    done.start()
    done.join(timeout=timeout)
    hung = done.is_alive()
    runner.stop()
    return hung, taken


# The wire side of peers' groups: the bundled byte tokenizer's ids and groups_to_batch with fixed fields.
NOW = 1000.0
EOS = 256  # the bundled byte tokenizer: ids 0..255 are bytes, 256 EOS, 257 PAD


def byte_ids(text):
    return list(text.encode("utf-8"))


def scored(item, completions, *, texts=None, version=5, logprobs=None, reported=None, prompt=None):
    return ScoredGroup(
        ref=item.ref, prompt_token_ids=[1, 2], completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=logprobs if logprobs is not None else [[-0.5] * len(c) for c in completions],
        rewards=list(reported or [1.0] * len(completions)), policy_version=version,
        texts=list(texts or []), prompt=item.question if prompt is None else prompt,
    )


def to_batch(groups, fingerprint, temperature=1.0, eos_ids=frozenset({EOS}), base="base-a"):
    return groups_to_batch(groups, window=4, batch_id=9, model_fingerprint=fingerprint, tokenizer_fingerprint="tok",
                           now=NOW, temperature=temperature, top_p=0.95, eos_ids=set(eos_ids), base_fingerprint=base)


def generator_used_each_version_exactly(model_name: str, device: str = "cpu", dtype: str = "float32",
                                        steps: int = 4, atol: float = 1e-4) -> int:
    """Train `steps` steps with the generator in its own process and check, for every group it
    made, that its behaviour log-probs equal a teacher-forced pass of the trainer's weights of
    that group's policy version: the child used exactly that version. Returns groups checked."""
    import copy

    import torch

    from swarmnode.policy import load_policy
    from swarmnode.trainer.process_loop import ProcessAsyncRunner
    from swarmnode.trainer.trainer import Trainer, TrainerConfig
    from tests.helpers import teacher_forced_logprobs

    policy = load_policy(model_name, device=device, dtype=dtype)
    trainer = Trainer(policy.model, policy.tokenizer.pad_token_id, TrainerConfig(lr=1e-3))
    weights = {0: copy.deepcopy(trainer.model.state_dict())}
    made = []
    runner = ProcessAsyncRunner(model_name, trainer, CONFIG, dtype=dtype, on_generated=made.extend,
                                after_step=lambda result: weights.setdefault(trainer.version, copy.deepcopy(trainer.model.state_dict())))
    assert len(runner.run(steps=steps)) == steps
    model = copy.deepcopy(trainer.model).eval()
    checked = 0
    with torch.no_grad():
        for group in made:
            if group.policy_version not in weights:
                continue  # made after the last step was taken
            model.load_state_dict(weights[group.policy_version])
            for ids, logprobs in zip(group.completion_token_ids, group.behavior_logprobs):
                expected = teacher_forced_logprobs(model, list(group.prompt_token_ids), list(ids), CONFIG.sampling.temperature)
                assert torch.allclose(expected, torch.tensor(logprobs), atol=atol), (group.policy_version, expected, logprobs)
            checked += 1
    assert len({g.policy_version for g in made if g.policy_version in weights}) >= 2  # more than the first weights
    return checked
