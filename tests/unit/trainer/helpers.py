"""Builders shared by the trainer tests."""
from swarmnode.tasks import TaskRef
from swarmnode.trainer.experience import ScoredGroup

REF = TaskRef("sum2", 0, 0)


def group(version=0, source="local", rewards=(1.0, 0.0), completions=None, prompt=(1, 2, 3), logprobs=-0.5):
    """A scored group of sum2 item 0 with one completion per reward (behaviour logprobs `logprobs`, or None)."""
    if completions is None:
        completions = [(5 + i, 6) for i in range(len(rewards))]
    return ScoredGroup(
        ref=REF, prompt_token_ids=list(prompt), completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=None if logprobs is None else [[logprobs] * len(c) for c in completions],
        rewards=list(rewards), policy_version=version, source=source,
    )
