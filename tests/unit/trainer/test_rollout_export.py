"""trainer/rollout_export.py: groups_to_batch, this node's scored groups as one RolloutBatch for peers."""
import pytest

from swarmnode.tasks import get_task
from tests.unit.trainer.helpers import EOS, NOW, byte_ids, scored, to_batch


def test_groups_to_batch_fields(make_identity):
    item = get_task("sum2").item(7, 0)
    g1 = scored(item, [byte_ids("74") + [EOS], byte_ids("7")], texts=["74", "7"], version=6,
                logprobs=[[-0.5, -0.25, -1.0], [-2.0]], reported=[1.0, 0.0])
    g2 = scored(get_task("sum3").item(7, 1), [byte_ids("1")], texts=[], version=4)
    batch = to_batch([g1, g2], "fp")
    assert (batch.window, batch.batch_id, batch.policy_version, batch.model_fingerprint) == (4, 9, 4, "fp")
    assert (batch.tokenizer_fingerprint, batch.created_at, batch.temperature) == ("tok", NOW, 1.0)
    assert batch.top_p == pytest.approx(0.95)
    first, second = batch.groups
    assert (first.task.task, first.task.seed, first.task.index, first.prompt) == ("sum2", 7, 0, "28+46=")
    assert [list(c.token_ids) for c in first.completions] == [[55, 52, EOS], [55]]
    assert [list(c.logprobs) for c in first.completions] == [[-0.5, -0.25, -1.0], [-2.0]]
    assert [c.finish_reason for c in first.completions] == ["stop", "length"]
    assert [c.reported_reward for c in first.completions] == [1.0, 0.0]
    assert [c.text for c in first.completions] == ["74", "7"]
    assert second.task.task == "sum3" and [c.text for c in second.completions] == [""]  # no texts kept
