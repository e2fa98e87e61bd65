"""Which attention kernels a forward pass may use: `attention_backends`.

Shared by the `hf` generation backend (decode steps) and the trainer (forward and backward),
both configured by `model.cudnn_attention`.
"""
from __future__ import annotations

import contextlib

import torch


def attention_backends(device: torch.device, cudnn: bool):
    """A context in which scaled_dot_product_attention may use cuDNN's kernel, or not (a GPU only).

    cuDNN's attention builds a plan per new shape, which costs more CPU than the call when
    shapes change (decode steps, micro-batches and chunks of new widths). Without it SDPA takes
    flash or memory-efficient attention (docs/experiments/gpu.md has the figures).
    """
    if cudnn or device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
