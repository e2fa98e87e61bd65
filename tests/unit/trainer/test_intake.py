"""trainer/intake.py RolloutIntake: a peer's batch into external groups (same model: tokens kept
and rescored; another model: re-tokenised from text; every bad group rejected on its own)."""
import pytest

from swarmnode.protocol.codec import RejectReason
from swarmnode.protocol.rollout_messages import open_rollout_batch, seal_rollout_batch
from swarmnode.tasks import TaskRef, get_task
from swarmnode.trainer.intake import RolloutIntake
from tests.unit.trainer.helpers import EOS, byte_ids, scored, to_batch


@pytest.fixture(scope="module")
def policy():
    from swarmnode.policy import load_policy

    return load_policy("bundled:tiny-policy")


def make_intake(policy, tasks=("sum2", "sum3"), temperature=1.0, foreign_tokens=64, base="base-a"):
    """An intake for a node generating at most 8 tokens (`foreign_tokens` for another model's re-tokenised text)."""
    return RolloutIntake(policy.tokenizer, model_fingerprint=policy.fingerprint, tasks=list(tasks), temperature=temperature,
                         max_completion_tokens=8, max_foreign_completion_tokens=foreign_tokens, base_fingerprint=base)


@pytest.fixture
def intake(policy):
    return make_intake(policy)


def test_bundled_tokenizer_and_task_items_by_hand(policy):
    tok = policy.tokenizer
    assert len(tok) == 258 and tok.eos_token_id == EOS
    assert tok("74", add_special_tokens=False)["input_ids"] == [55, 52] == byte_ids("74")
    item = get_task("sum2").item(7, 0)
    assert (item.question, item.answer) == ("28+46=", "74")


def test_same_model_batch_keeps_tokens_and_rescores(intake, policy, make_identity):
    a = make_identity()
    item = get_task("sum2").item(7, 0)  # "28+46=" -> "74"
    right, wrong = byte_ids("74") + [EOS], byte_ids("75") + [EOS]
    # The peer claims reward 1 for both, and even writes "74" in both text fields.
    g = scored(item, [right, wrong], texts=["74", "74"], logprobs=[[-0.5, -0.25, -1.0], [-0.125, -2.0, -0.75]],
               reported=[1.0, 1.0], version=5)
    data = seal_rollout_batch(a, to_batch([g], policy.fingerprint))
    batch, _ = open_rollout_batch(data, served_by=a.peer_id, public_key=a.public_key)
    result = intake.accept(batch, sender=a.peer_id, current_version=12)
    assert result.same_model and result.rejected == []
    (got,) = result.groups
    assert got.completion_token_ids == [right, wrong]
    assert got.behavior_logprobs == [[-0.5, -0.25, -1.0], [-0.125, -2.0, -0.75]]
    assert got.rewards == [1.0, 0.0]  # the tokens say "75": the node's verifier gives 0
    assert got.texts == ["74", "75"]
    # Stamped with this node's version at receipt: the sender's counter (5) means nothing here.
    assert got.policy_version == 12 and got.source == a.peer_id and not got.is_local
    assert got.ref == TaskRef("sum2", 7, 0) and got.prompt == "28+46="
    assert got.prompt_token_ids == byte_ids("28+46=")  # the bundled chat template is verbatim


def test_foreign_model_batch_is_retokenised_from_text(intake):
    item = get_task("sum2").item(7, 0)
    # Another model's ids (out of this vocabulary) and its own EOS (50256).
    g = scored(item, [[9999, 123, 50256], [4242, 77], [5, 6, 50256]],
               texts=["74", "75", "thinking...\n<answer>74</answer>"], reported=[0.0, 1.0, 0.0], version=40)
    result = intake.accept(to_batch([g], "another-model", eos_ids={50256}), sender="peerB", current_version=12)
    assert not result.same_model and result.rejected == []
    (got,) = result.groups
    assert got.behavior_logprobs is None
    assert got.completion_token_ids == [
        byte_ids("74") + [EOS],  # finished with "stop": this node's EOS appended
        byte_ids("75"),  # "length": no EOS
        byte_ids("thinking...\n<answer>74</answer>") + [EOS],
    ]
    assert got.rewards == [1.0, 0.0, 1.0]
    assert got.policy_version == 12  # re-scored under the current policy: fresh when received
    assert got.source == "peerB"


def test_completions_longer_than_this_node_generates_are_rejected_not_truncated(policy):
    intake = make_intake(policy, foreign_tokens=16)
    item = get_task("sum2").item(7, 0)
    # Another model: 16 tokens here (the allowance) pass, 17 do not.
    fits = scored(item, [[1], [2]], texts=["74\n" + "x" * 13, "nope"])
    (got,) = intake.accept(to_batch([fits], "other"), sender="p", current_version=0).groups
    assert got.completion_token_ids[0] == byte_ids("74\n" + "x" * 13) and got.rewards == [1.0, 0.0]
    too_long = scored(item, [[1], [2]], texts=["74\n" + "x" * 14, "nope"])
    result = intake.accept(to_batch([too_long], "other"), sender="p", current_version=0)
    assert result.groups == [] and result.rejected == [(RejectReason.TOO_LONG, "17 tokens here > 16")]
    # A text no tokenisation could fit is refused before it is tokenised (16,384 characters cost nothing).
    huge = scored(item, [[1]], texts=["7" * 16_384])
    assert intake.accept(to_batch([huge], "other"), sender="p", current_version=0).rejected == [
        (RejectReason.TOO_LONG, "16384 characters")]
    # The same model: at most max_new_tokens (8) token ids, EOS included.
    eight, nine = byte_ids("74xxxxx") + [EOS], byte_ids("74xxxxxx") + [EOS]
    assert intake.accept(to_batch([scored(item, [eight])], policy.fingerprint), "p", 0).groups
    result = intake.accept(to_batch([scored(item, [eight, nine])], policy.fingerprint), "p", 0)
    assert result.groups == [] and result.rejected == [(RejectReason.TOO_LONG, "9 tokens > 8")]
    empty = scored(item, [[1]], texts=[""])
    result = intake.accept(to_batch([empty], "other"), sender="p", current_version=0)
    assert result.groups == [] and [r for r, _ in result.rejected] == [RejectReason.INVALID_FIELD]


def test_intake_rejects_bad_groups_one_by_one(intake, policy):
    fp = policy.fingerprint
    good_item, other_item = get_task("sum2").item(7, 0), get_task("sum2").item(7, 1)
    good = scored(good_item, [byte_ids("74") + [EOS]])
    wrong_prompt = scored(good_item, [byte_ids("74")], prompt=other_item.question)
    unknown = scored(get_task("sum2").item(7, 0), [byte_ids("74")])
    unknown.ref = TaskRef("rg:not_here", 0, 0)
    out_of_vocab = scored(good_item, [byte_ids("74") + [258]], texts=["74"])
    short_logprobs = scored(good_item, [byte_ids("74")], logprobs=[[-0.5]])
    batch = to_batch([good, wrong_prompt, unknown, out_of_vocab], fp)
    result = intake.accept(batch, sender="p", current_version=3)
    assert [g.completion_token_ids for g in result.groups] == [[byte_ids("74") + [EOS]]]
    assert [r for r, _ in result.rejected] == [RejectReason.PROMPT_MISMATCH, RejectReason.MODEL_MISMATCH]
    assert result.skipped_other_task == 1
    # Log-probs that do not match the token ids are a model mismatch too (same-model path only).
    assert [r for r, _ in intake.accept(to_batch([short_logprobs], fp), "p", 3).rejected] == [RejectReason.MODEL_MISMATCH]
    # ...and out-of-vocabulary ids are harmless on the foreign path (only the text counts).
    foreign = intake.accept(to_batch([out_of_vocab], "other"), "p", 3)
    assert foreign.rejected == [] and foreign.groups[0].completion_token_ids == [byte_ids("74")]
    assert foreign.groups[0].rewards == [1.0]


def test_a_task_this_node_does_not_train_is_skipped_not_rejected(policy):
    only_sum2 = make_intake(policy, tasks=["sum2"])
    item = get_task("sum3").item(7, 0)
    result = only_sum2.accept(to_batch([scored(item, [byte_ids(item.answer)])], policy.fingerprint), "p", 0)
    assert result.groups == [] and result.rejected == [] and result.skipped_other_task == 1


# The wire carries temperature as a float32: 0.7 arrives as 0.699999988...
def test_same_model_at_a_temperature_not_exact_in_float32(policy):
    intake = make_intake(policy, tasks=["sum2"], temperature=0.7)
    item = get_task("sum2").item(7, 0)
    batch = to_batch([scored(item, [byte_ids("74") + [EOS]])], policy.fingerprint, temperature=0.7)
    assert intake.same_model(batch)


def test_different_temperature_is_not_the_same_model(policy):
    intake = make_intake(policy, tasks=["sum2"])
    item = get_task("sum2").item(7, 0)
    assert intake.same_model(to_batch([scored(item, [[55]])], policy.fingerprint, temperature=1.0))
    assert not intake.same_model(to_batch([scored(item, [[55]])], policy.fingerprint, temperature=0.5))
    assert not intake.same_model(to_batch([scored(item, [[55]])], "other", temperature=1.0))


def test_a_fine_tune_of_the_same_architecture_is_another_model(policy):
    """Same architecture and tokenizer (model fingerprint) but other initial weights: the sender's
    log-probs are not this policy's, so only its text counts (no behaviour log-probs)."""
    intake = make_intake(policy, tasks=["sum2"], base="base-a")
    item = get_task("sum2").item(7, 0)
    group = scored(item, [byte_ids(item.answer) + [EOS]], texts=[item.answer], logprobs=[[-0.01] * 3])
    assert intake.same_model(to_batch([group], policy.fingerprint, base="base-a"))
    other = to_batch([group], policy.fingerprint, base="base-b")
    assert not intake.same_model(other)
    result = intake.accept(other, "peer", current_version=3)
    assert not result.same_model and not result.rejected
    [taken] = result.groups
    assert taken.behavior_logprobs is None
    assert taken.completion_token_ids == [byte_ids(item.answer) + [EOS]] and taken.rewards == [1.0]
