"""The `hf` generation backend: batched sampling with a KV cache on a transformers model.

Two decode paths: a hand-written cached loop (default) and `model.generate`. The loop skips
generate()'s per-step processor machinery, prefills each prompt once for all its samples and
drops a sample from the batch once it has ended; `scripts/bench_generation.py` measures both
on the bundled policy and the README quotes the ratio.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch
from transformers import DynamicCache

from swarmnode.policy.generation import Completion, PromptGeneration, SamplingParams, finish_completion
from swarmnode.policy.sampling import sample_next


def format_prompt(tokenizer, question: str) -> str:
    """The question as the model is prompted with it (its chat template, if it has one)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
        )
    return question


def left_pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), both [B, max_len], rows aligned to the right."""
    # Padded as Python lists and made a tensor once: a tensor per row costs more than the
    # padding itself on small batches.
    width = max(len(r) for r in rows)
    ids = torch.tensor([[pad_id] * (width - len(r)) + list(r) for r in rows], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
    return ids, mask


def left_pad_positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows: 0 at each row's first real token (0 on the padding too)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


class HFGenerator:
    def __init__(self, model, tokenizer, *, policy_version: int = 0, decode: str = "loop"):
        if decode not in ("loop", "generate"):
            raise ValueError("decode is 'loop' or 'generate'")
        self.model = model.eval()
        self.device = next(model.parameters()).device
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        self.decode = decode
        eos = tokenizer.eos_token_id
        eos_ids = [eos] if isinstance(eos, int) else list(eos)
        self.eos_ids = torch.tensor(eos_ids, dtype=torch.long, device=self.device)
        self._eos = set(eos_ids)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else int(self.eos_ids[0])

    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        self.model.load_state_dict(state_dict)
        self.policy_version = version

    def generate(self, prompts: Sequence[str], samples_per_prompt: int, params: SamplingParams) -> list[PromptGeneration]:
        prompt_ids = [self.tokenizer(format_prompt(self.tokenizer, q), add_special_tokens=False)["input_ids"] for q in prompts]
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=self.device).manual_seed(params.seed)
        decode = self._decode_loop if self.decode == "loop" else self._decode_generate
        tokens, logprobs = decode(prompt_ids, samples_per_prompt, params, generator)
        groups = []
        for p, (question, ids) in enumerate(zip(prompts, prompt_ids)):
            group = PromptGeneration(question, ids, policy_version=self.policy_version)
            for r in range(p * samples_per_prompt, (p + 1) * samples_per_prompt):
                group.completions.append(self._completion(tokens[r], logprobs[r], params))
            groups.append(group)
        return groups

    # -- decoding ------------------------------------------------------------------------------

    @torch.inference_mode()
    def _decode_loop(self, prompt_ids, samples, params, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Cached decoding. Returns [B, T] tokens and log-probs, B = len(prompt_ids) * samples.

        Two savings over decoding every row to the end:
        - each prompt is prefilled once and its KV cache repeated for its `samples` rows (the
          rows of a group share the prompt, so a per-row prefill repeats the same work);
        - a row that has sampled an end token leaves the batch: later steps run the model on the
          rows still generating only (short answers finish in 2-4 tokens while a few samples run
          to max_new_tokens).
        Finished positions hold the pad token and log-prob 0, as before.
        """
        input_ids, mask = (t.to(self.device) for t in left_pad(prompt_ids, self.pad_id))
        positions = left_pad_positions(mask)
        out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                         past_key_values=DynamicCache(), use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        if samples > 1:
            cache.batch_repeat_interleave(samples)
        logits = out.logits[:, -1].repeat_interleave(samples, dim=0)
        mask = mask.repeat_interleave(samples, dim=0)
        next_position = positions[:, -1:].repeat_interleave(samples, dim=0) + 1
        rows = len(prompt_ids) * samples
        tokens = torch.full((rows, params.max_new_tokens), self.pad_id, dtype=torch.long, device=self.device)
        logprobs = torch.zeros((rows, params.max_new_tokens), device=self.device)
        running = torch.arange(rows, device=self.device)  # batch position -> row
        width = 0
        for step in range(params.max_new_tokens):
            token, logprob = sample_next(logits, params.temperature, params.top_p, generator)
            tokens[running, step] = token
            logprobs[running, step] = logprob
            width = step + 1
            if step + 1 == params.max_new_tokens:
                break
            finished = torch.isin(token, self.eos_ids)
            if bool(finished.any()):
                keep = (~finished).nonzero().squeeze(1)
                if keep.numel() == 0:
                    break
                running, token, mask, next_position = running[keep], token[keep], mask[keep], next_position[keep]
                cache.batch_select_indices(keep)
            mask = torch.cat([mask, mask.new_ones((len(running), 1))], dim=1)
            out = self.model(input_ids=token[:, None], attention_mask=mask, position_ids=next_position,
                             past_key_values=cache, use_cache=True)
            logits = out.logits[:, -1]
            next_position = next_position + 1
        return tokens[:, :width].cpu(), logprobs[:, :width].cpu()

    @torch.inference_mode()
    def _decode_generate(self, prompt_ids, samples, params, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The same through model.generate (for comparison; seeds the global RNG)."""
        if params.seed is not None:
            torch.manual_seed(params.seed)
        input_ids, mask = (t.to(self.device) for t in left_pad([ids for ids in prompt_ids for _ in range(samples)], self.pad_id))
        greedy = params.temperature <= 0.0
        out = self.model.generate(
            input_ids=input_ids, attention_mask=mask, max_new_tokens=params.max_new_tokens,
            do_sample=not greedy, temperature=None if greedy else params.temperature,
            top_p=None if greedy else params.top_p, top_k=None,
            eos_token_id=self.eos_ids.tolist(), pad_token_id=self.pad_id,
            return_dict_in_generate=True, output_logits=True,
        )
        tokens = out.sequences[:, input_ids.shape[1]:]
        scale = 1.0 if greedy else params.temperature
        logits = torch.stack(out.logits, dim=1).float() / scale
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1)
        return tokens, logprobs

    def _completion(self, tokens: torch.Tensor, logprobs: torch.Tensor, params: SamplingParams) -> Completion:
        return finish_completion(self.tokenizer, self._eos, tokens.tolist(), logprobs.tolist(), params.stop)
