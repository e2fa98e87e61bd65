#!/usr/bin/env python3
"""Build swarmnode's bundled tiny policy (swarmnode/assets/tiny-policy/).

RL on a CPU needs a policy that already speaks the task format (answers, then stops at eos) but
is still weak, so that reward has room to rise within minutes. This trains a ~1M-parameter
Qwen2 from scratch on the default tasks (or --tasks) and keeps the checkpoint whose held-out
greedy accuracy is closest to --target-accuracy (inside [5%, 40%]); accuracy climbs fast, so it
evaluates often.

Run from the repository root:  .venv/bin/python scripts/dev/build_tiny_policy.py
(options: --out DIR, --tasks T1,T2, --minutes M, --seed S, --eval-size N, --target-accuracy A,
--loss all|answer)

The diverse swarm's second start model, a letter-counting specialist that has never seen a sum:
    .venv/bin/python scripts/dev/build_tiny_policy.py --tasks rg:letter_counting \
        --out swarmnode/assets/tiny-letters --minutes 6

and a sums specialist that is weak at sum2 but not at zero (16.8% on sum3, 0.4% on sum2), the
mixed swarm's second start model in scripts/experiments/sapo_sim.py (built to /tmp/tiny-sum3, then copied):
    .venv/bin/python scripts/dev/build_tiny_policy.py --tasks sum3 --out swarmnode/assets/tiny-sum3 \
        --minutes 3 --eval-size 128

--init continues from an existing model, e.g. a sum3 specialist that has seen a little sum2:
    .venv/bin/python scripts/dev/build_tiny_policy.py --init bundled:tiny-sum3 --tasks sum2,sum3 \
        --lr 1e-4 --target-accuracy 0.12 --minutes 2 --eval-size 128 --out /tmp/tiny-sum3-some-sum2
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
from pathlib import Path

import itertools

import torch
from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM

from swarmnode.policy import load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.policy.tokenizer import build_byte_tokenizer
from swarmnode.tasks import DEFAULT_TASKS
from swarmnode.trainer.evaluate import HELDOUT_SEED, greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.loop import prompt_stream

ROOT = Path(__file__).resolve().parents[2]
TRAIN_SEED_BASE = 1000  # training items use seeds >= 1000; the held-out set is seed 0
WINDOW = (0.05, 0.40)  # a saved policy must be this weak, and this strong
STOP_ABOVE = 0.30
MAX_NEW_TOKENS = 6
BATCH_SIZE = 128
LR = 1e-3
EVAL_EVERY = 25  # steps; the accuracy window lasts only some tens of seconds
ARCH = dict(hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256)


def build_model(tokenizer) -> Qwen2ForCausalLM:
    """Untied embeddings, so a trainer's weight reload into vLLM stays correct."""
    config = Qwen2Config(vocab_size=len(tokenizer), tie_word_embeddings=False, rope_theta=10000.0,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, **ARCH)
    return Qwen2ForCausalLM(config)


def generation_config(tokenizer) -> GenerationConfig:
    return GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                            pad_token_id=tokenizer.pad_token_id)


def encode_batch(tokenizer, items, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded question+answer+eos ids, and labels (-100 where no loss is taken)."""
    questions = tokenizer([it.question for it in items], add_special_tokens=False)["input_ids"]
    answers = tokenizer([it.answer for it in items], add_special_tokens=False)["input_ids"]
    rows = [q + a + [tokenizer.eos_token_id] for q, a in zip(questions, answers)]
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    for r, (row, q) in enumerate(zip(rows, questions)):
        ids[r, :len(row)] = torch.tensor(row)
        first = len(q) if loss == "answer" else 1
        labels[r, first:len(row)] = ids[r, first:len(row)]
    return ids, labels


def train_step(model, optimizer, ids, labels) -> float:
    """One next-token step; right padding needs no attention mask under a causal mask."""
    logits = model(input_ids=ids).logits[:, :-1]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def accuracy(model, tokenizer, items) -> dict[str, float]:
    """Held-out greedy accuracy per task, measured the way the node measures it."""
    model.eval()
    per_task = greedy_accuracy(HFGenerator(model, tokenizer), items, MAX_NEW_TOKENS)
    model.train()
    return {task: value for task, value in per_task.items() if task != "mean"}


def mean(per_task: dict[str, float]) -> float:
    return sum(per_task.values()) / len(per_task)


def closer(candidate: float, best: float | None, target: float) -> bool:
    """Whether a checkpoint of mean accuracy `candidate` beats the best kept so far."""
    inside = WINDOW[0] <= candidate <= WINDOW[1]
    return inside and (best is None or abs(candidate - target) < abs(best - target))


def train(model, tokenizer, args, on_eval) -> tuple[dict | None, list[dict]]:
    """Train until accuracy passes STOP_ABOVE or time runs out. Returns the kept checkpoint
    (state dict and its evaluation) and every evaluation."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    eval_set = heldout_items(args.tasks, args.eval_size)
    # sum2 has only 10^4 distinct questions: keep the held-out ones out of training.
    stream = prompt_stream(args.tasks, TRAIN_SEED_BASE + args.seed, exclude=questions_of(eval_set))
    kept, evaluations, step, losses = None, [], 0, []
    start = time.monotonic()
    while time.monotonic() - start < args.minutes * 60:
        items = list(itertools.islice(stream, BATCH_SIZE))
        losses.append(train_step(model, optimizer, *encode_batch(tokenizer, items, args.loss)))
        step += 1
        if step % EVAL_EVERY:
            continue
        per_task = accuracy(model, tokenizer, eval_set)
        record = dict(step=step, seconds=round(time.monotonic() - start, 1), loss=round(sum(losses) / len(losses), 4),
                      accuracy=per_task, mean=mean(per_task))  # exact: k/eval_size, reproducible
        losses = []
        evaluations.append(record)
        if closer(record["mean"], kept and kept["eval"]["mean"], args.target_accuracy):
            kept = dict(state=copy.deepcopy(model.state_dict()), eval=record)
        on_eval(record, kept)
        if record["mean"] > STOP_ABOVE:
            break
    return kept, evaluations


def print_eval(record: dict, kept: dict | None) -> None:
    per_task = " ".join(f"{k}={v:.1%}" for k, v in record["accuracy"].items())
    mark = " *kept" if kept and kept["eval"] is record else ""
    print(f"step {record['step']:5d}  {record['seconds']:6.1f}s  loss {record['loss']:.4f}  "
          f"{per_task}  mean={record['mean']:.1%}{mark}", flush=True)


def check_round_trip(out: Path) -> None:
    """The saved tokenizer, loaded as a consumer would, must give back spaces, newlines and digits."""
    tokenizer = AutoTokenizer.from_pretrained(out)
    text = "23+7+41=71\n  two  spaces\n\n 9 + 0 = 9 \n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text, (text, tokenizer.decode(ids))
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "23+7+41="}], tokenize=False,
                                           add_generation_prompt=True)
    assert prompt == "23+7+41=", prompt


def build_info(model, args, kept: dict, evaluations: list[dict], seconds: float) -> dict:
    return dict(
        parameters=sum(p.numel() for p in model.parameters()),
        architecture=dict(model_type="qwen2", vocab_size=model.config.vocab_size, tie_word_embeddings=False, **ARCH),
        training=dict(loss=args.loss, batch_size=BATCH_SIZE, lr=args.lr, init=args.init, optimizer="AdamW", eval_every=EVAL_EVERY,
                      steps_saved=kept["eval"]["step"], steps_run=evaluations[-1]["step"], seconds=round(seconds, 1),
                      train_seeds=f">= {TRAIN_SEED_BASE} (seed {TRAIN_SEED_BASE + args.seed})",
                      held_out_questions_excluded=True),
        held_out=dict(tasks=list(args.tasks), seed=HELDOUT_SEED, size_per_task=args.eval_size,
                      max_new_tokens=MAX_NEW_TOKENS, decoding="greedy"),
        accuracy=kept["eval"]["accuracy"], mean_accuracy=kept["eval"]["mean"],
        target_accuracy=args.target_accuracy, evaluations=evaluations, seed=args.seed,
        command=" ".join(["python", *sys.argv]),
        versions=dict(torch=torch.__version__, transformers=__import__("transformers").__version__),
    )


def portable_tokenizer_config(path: Path) -> None:
    """transformers 5 writes tokenizer_class "TokenizersBackend", unknown to transformers 4 (which
    a vLLM install may pin); both versions load "PreTrainedTokenizerFast" from tokenizer.json."""
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    path.write_text(json.dumps(config, indent=2) + "\n")


def save(model, tokenizer, kept: dict, info: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.load_state_dict(kept["state"])
    model.generation_config = generation_config(tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    portable_tokenizer_config(out / "tokenizer_config.json")
    (out / "model.safetensors").chmod(0o644)  # safetensors writes it 0600
    (out / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "swarmnode" / "assets" / "tiny-policy")
    p.add_argument("--tasks", type=lambda text: tuple(t.strip() for t in text.split(",") if t.strip()),
                   default=DEFAULT_TASKS, help="comma-separated task names to train on (default: %(default)s)")
    p.add_argument("--minutes", type=float, default=12.0, help="training time budget")
    p.add_argument("--seed", type=int, default=0, help="seeds torch and the training items")
    p.add_argument("--eval-size", type=int, default=256, help="held-out items per task (seed 0)")
    p.add_argument("--target-accuracy", type=float, default=0.15)
    p.add_argument("--init", default=None, help="start from this model (e.g. bundled:tiny-sum3) instead of from scratch")
    p.add_argument("--lr", type=float, default=LR)
    p.add_argument("--loss", choices=("answer", "all"), default="answer",
                   help="next-token loss on answer tokens (and eos) only, or on all tokens")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    if args.init:  # its own tokenizer too: the byte tokenizer fits only models built by this script
        policy = load_policy(args.init)
        model, tokenizer = policy.model, policy.tokenizer
    else:
        tokenizer = build_byte_tokenizer(model_max_length=ARCH["max_position_embeddings"])
        model = build_model(tokenizer)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters; training up to {args.minutes:g} min", flush=True)
    start = time.monotonic()
    kept, evaluations = train(model, tokenizer, args, print_eval)
    if kept is None:
        print(f"no checkpoint reached {WINDOW[0]:.0%}..{WINDOW[1]:.0%} mean accuracy; nothing saved", file=sys.stderr)
        return 1
    save(model, tokenizer, kept, build_info(model, args, kept, evaluations, time.monotonic() - start), args.out)
    check_round_trip(args.out)
    print(f"saved step {kept['eval']['step']} (mean accuracy {kept['eval']['mean']:.1%}) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
