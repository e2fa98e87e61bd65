"""The output layer's precision: `use_fp32_logits` (config `model.fp32_logits`).

Shared by the `hf` generation backend and the trainer: both must compute log-probs the same way.
"""
from __future__ import annotations

import types

import torch


def _fp32_linear_forward(self, hidden: torch.Tensor) -> torch.Tensor:
    # The weight is upcast per call (gradients flow back to the low-precision parameter), so
    # a tied embedding keeps one parameter and the checkpoint is unchanged.
    bias = None if self.bias is None else self.bias.float()
    return torch.nn.functional.linear(hidden.float(), self.weight.float(), bias)


def use_fp32_logits(model) -> bool:
    """Compute the output layer (logits) in float32 when the model's weights are bf16 / fp16.

    The logits of a bf16 head carry ~3 significant digits, so a log-prob read from them is off
    by up to ~|logit| / 256; the generator and the trainer must agree on log-probs (the
    behaviour / proximal weights are their ratios). Off by default (config model.fp32_logits):
    on the models measured (docs/experiments/gpu.md) the gap comes from the bf16 hidden states and
    this left it unchanged, while its float32 matmul costs most with a large vocabulary.
    Patches the head of this instance only (a deepcopy keeps it); returns whether it did (not
    for float32 models or non-Linear heads).
    """
    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear) or head.weight.dtype == torch.float32:
        return False
    head.forward = types.MethodType(_fp32_linear_forward, head)
    return True
