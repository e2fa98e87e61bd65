"""policy/precision.py: a bf16 model's float32 output layer."""
import torch

from swarmnode.policy import load_policy
from swarmnode.policy.precision import use_fp32_logits


def test_fp32_logits_of_a_bf16_model_are_the_float32_head_of_its_hidden_states(tiny_dir):
    import copy

    model = load_policy(str(tiny_dir), dtype="bfloat16").model
    ids = torch.tensor([[5, 6, 7, 8]])
    hidden = model.model(input_ids=ids).last_hidden_state
    assert model(input_ids=ids).logits.dtype == torch.bfloat16
    assert use_fp32_logits(model) and not use_fp32_logits(load_policy(str(tiny_dir)).model)  # float32: left alone
    logits = copy.deepcopy(model)(input_ids=ids).logits  # a copy (the generator's) keeps the float32 head
    assert logits.dtype == torch.float32
    assert torch.allclose(logits, hidden.float() @ model.lm_head.weight.float().T, atol=1e-5)
