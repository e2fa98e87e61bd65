"""The export of this node's ScoredGroups to peers: its groups as one RolloutBatch (pure). The
way in, a peer's batch into ScoredGroups, is trainer/intake.py's RolloutIntake."""
from __future__ import annotations

from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.trainer.experience import ScoredGroup


def groups_to_batch(groups: list[ScoredGroup], *, window: int, batch_id: int, model_fingerprint: str,
                    tokenizer_fingerprint: str, now: float, temperature: float, top_p: float,
                    eos_ids: set[int], base_fingerprint: str = "") -> rollout_batch_pb2.RolloutBatch:
    """This node's local groups as one RolloutBatch (policy version: the oldest group's)."""
    batch = rollout_batch_pb2.RolloutBatch(
        window=window, policy_version=min(g.policy_version for g in groups), model_fingerprint=model_fingerprint,
        tokenizer_fingerprint=tokenizer_fingerprint, created_at=now, batch_id=batch_id, temperature=temperature, top_p=top_p,
        base_fingerprint=base_fingerprint,
    )
    for g in groups:
        wire = batch.groups.add(prompt=g.prompt)
        wire.task.task, wire.task.seed, wire.task.index = g.ref.task, g.ref.seed, g.ref.index
        for i in range(g.size):
            wire.completions.add(
                text=g.texts[i] if i < len(g.texts) else "", token_ids=g.completion_token_ids[i],
                logprobs=g.behavior_logprobs[i] if g.behavior_logprobs is not None else [],
                reported_reward=g.rewards[i],
                # finish_completion keeps the EOS it stopped on in token_ids.
                finish_reason="stop" if g.completion_token_ids[i][-1:] and g.completion_token_ids[i][-1] in eos_ids else "length",
            )
    return batch
