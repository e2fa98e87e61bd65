"""policy/hf_backend.py: the cached decode loop against model.generate and teacher forcing, and the decode
strategy's choice."""
import pytest
import torch

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import AUTO_TRIALS, HFGenerator, bucket_size, decode_candidates, fastest, static_shape
from tests.helpers import teacher_forced_logprobs


def test_loop_matches_generate_on_greedy_and_logprobs_match_teacher_forcing(tiny_dir):
    policy = load_policy(str(tiny_dir))
    prompts = ["1+2=", "34+5+67=", "9="]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=8)
    loop = HFGenerator(policy.model, policy.tokenizer, decode="loop").generate(prompts, 1, greedy)
    gen = HFGenerator(policy.model, policy.tokenizer, decode="generate").generate(prompts, 1, greedy)
    bucketed = HFGenerator(policy.model, policy.tokenizer, decode="bucketed").generate(prompts, 1, greedy)
    assert [g.completions[0].token_ids for g in loop] == [g.completions[0].token_ids for g in gen]
    assert [g.completions[0].token_ids for g in loop] == [g.completions[0].token_ids for g in bucketed]

    sampled = HFGenerator(policy.model, policy.tokenizer).generate(prompts, 4, SamplingParams(temperature=0.8, max_new_tokens=8, seed=1))
    for group in sampled:
        assert len(group.completions) == 4
        for c in group.completions:
            assert len(c.token_ids) == len(c.logprobs) > 0 and c.finish_reason in ("stop", "length")
            # Behaviour log-probs equal a teacher-forced forward pass over prompt + completion.
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 0.8)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)


def test_seeded_sampling_is_reproducible(tiny_dir):
    policy = load_policy(str(tiny_dir))
    generator = HFGenerator(policy.model, policy.tokenizer)
    params = SamplingParams(temperature=1.0, max_new_tokens=6, seed=3)
    first = generator.generate(["5+5="], 3, params)
    again = generator.generate(["5+5="], 3, params)
    assert [c.token_ids for c in first[0].completions] == [c.token_ids for c in again[0].completions]


def test_bucket_size_by_hand():
    assert [bucket_size(n, 48) for n in (1, 2, 3, 5, 16, 17, 33, 48)] == [1, 2, 4, 8, 16, 32, 48, 48]
    assert decode_candidates("auto", torch.device("cpu")) == ("loop",)
    assert decode_candidates("auto", torch.device("cuda", 0)) == ("loop", "generate")  # static: opt-in until measured
    assert decode_candidates("bucketed", torch.device("cuda")) == ("bucketed",)
    with pytest.raises(ValueError, match="model.decode"):
        decode_candidates("fast", torch.device("cpu"))
    assert fastest({"loop": [5.0, 9.0], "generate": [8.0, 8.5]}) == "loop"  # the best trial counts
    assert fastest({"loop": [], "generate": [1.0]}) == "generate"


def test_auto_decode_tries_each_candidate_then_keeps_the_fastest(tiny_dir):
    policy = load_policy(str(tiny_dir))
    generator = HFGenerator(policy.model, policy.tokenizer)
    generator.decode_rates = {"loop": [], "generate": []}  # a GPU's candidates, on this CPU
    params = SamplingParams(temperature=1.0, max_new_tokens=4, seed=0)
    ran = []
    for _ in range(2 * AUTO_TRIALS + 2):
        ran.append(generator.decode)
        assert len(generator.generate(["1+2=", "3+4="], 2, params)) == 2
    assert ran[: 2 * AUTO_TRIALS] == ["loop", "generate"] * AUTO_TRIALS  # taking turns
    assert [len(r) for r in generator.decode_rates.values()] == [AUTO_TRIALS, AUTO_TRIALS] and not generator.on_trial
    assert ran[2 * AUTO_TRIALS:] == [fastest(generator.decode_rates)] * 2


@pytest.mark.parametrize("decode", ["loop", "bucketed"])
def test_rows_that_end_early_leave_the_batch_and_the_rest_stay_exact(tiny_dir, decode):
    """Shared prefill + dropping finished rows: every sample still gets teacher-forced log-probs."""
    policy = load_policy(str(tiny_dir))
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=5)
    prompts = ["1+2=", "34+5+67=", "9=", "12+30="]
    first = HFGenerator(policy.model, policy.tokenizer, decode=decode).generate(prompts, 6, params)
    counts: dict[int, int] = {}
    for c in (c for g in first for c in g.completions):
        for t in c.token_ids:
            counts[t] = counts.get(t, 0) + 1
    # Make the most sampled token the end token, so that rows end at many different steps.
    policy.tokenizer.eos_token_id = max(counts, key=counts.get)
    groups = HFGenerator(policy.model, policy.tokenizer, decode=decode).generate(prompts, 6, params)
    lengths = {len(c.token_ids) for g in groups for c in g.completions}
    assert len(lengths) >= 3 and max(lengths) == 8  # some rows ended early, others ran on
    for group in groups:
        for c in group.completions:
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 1.0)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)


def test_static_shape_by_hand():
    assert [static_shape(n, 5)[0] for n in (1, 8, 9, 64, 65, 512)] == [8, 8, 16, 64, 128, 512]
    assert [static_shape(8, n)[1] for n in (1, 32, 33, 70)] == [32, 32, 64, 96]


def test_static_decode_samples_what_generate_samples(tiny_dir, caplog):
    """Same seed, fp32, a batch already at a row bucket (8 rows): the static KV cache (prompts
    left-padded to 32 tokens) gives generate()'s tokens and log-probs. A batch that is padded
    with extra rows (9 -> 16) draws other random numbers, so there: log-probs that equal teacher
    forcing. One log line per new shape."""
    policy = load_policy(str(tiny_dir))
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=7)
    prompts = ["1+2=", "34+5+67="]
    dynamic = HFGenerator(policy.model, policy.tokenizer, decode="generate").generate(prompts, 4, params)
    static_generator = HFGenerator(policy.model, policy.tokenizer, decode="static")
    with caplog.at_level("INFO", logger="swarmnode.generation"):
        static = static_generator.generate(prompts, 4, params)
        padded = static_generator.generate(prompts + ["9="], 3, params)
        static_generator.generate(prompts, 6, params)  # 12 rows: the 16-row shape again
    assert list(static_generator.static_shapes) == [(8, 32 + 8), (16, 32 + 8)]  # rows x (prompt + new tokens)
    shapes = [r.message for r in caplog.records if r.name == "swarmnode.generation"]
    assert len(shapes) == 2 and all(m.startswith("static decode: the first batch of ") for m in shapes)
    for d, s in zip(dynamic, static):
        assert [c.token_ids for c in d.completions] == [c.token_ids for c in s.completions]
        for a, b in zip(d.completions, s.completions):
            assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)
    assert [len(g.completions) for g in padded] == [3, 3, 3]
    for group in padded:
        for c in group.completions:
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 1.0)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)


def test_a_failing_static_decode_falls_back_to_the_loop_once(tiny_dir, caplog, monkeypatch):
    policy = load_policy(str(tiny_dir))
    generator = HFGenerator(policy.model, policy.tokenizer, decode="static")

    def broken(*args, **kwargs):
        raise RuntimeError("capture failed\nwith details")

    monkeypatch.setattr(generator, "_decode_static", broken)
    params = SamplingParams(temperature=1.0, max_new_tokens=4, seed=0)
    with caplog.at_level("WARNING", logger="swarmnode.generation"):
        for _ in range(3):
            assert len(generator.generate(["1+2=", "3+4="], 2, params)) == 2
    assert generator.decode == "loop" and "static" not in generator.decode_rates
    said = [r.message for r in caplog.records if r.name == "swarmnode.generation"]
    assert said == ["static decode failed (RuntimeError: capture failed); decoding with the loop from now on"]


@pytest.mark.parametrize("decode", ["loop", "generate", "static"])
def test_every_decode_draws_from_the_nodes_distribution_whatever_the_models_generation_config(tiny_dir, decode):
    """The first token of 2048 samples, temperature 1.5, top-p 0.9: its frequencies match
    softmax(top_p_filter(logits / 1.5, 0.9)): total variation under 0.2, where 2048 draws from
    this near-uniform distribution (~230 tokens) land at ~0.13 and a draw from only three tokens
    at ~0.99. The model carries a hub-style generation_config (temperature 0.3, top-k 3, top-p
    0.05, repetition penalty 1.5) that generate() must not apply. Behaviour log-probs are
    log softmax(logits / 1.5)."""
    from transformers import GenerationConfig

    from swarmnode.policy.prompts import format_prompt
    from swarmnode.policy.sampling import sampling_distribution

    policy = load_policy(str(tiny_dir))
    hub_config = GenerationConfig(do_sample=True, temperature=0.3, top_k=3, top_p=0.05, repetition_penalty=1.5,
                                  eos_token_id=policy.tokenizer.eos_token_id, pad_token_id=policy.tokenizer.pad_token_id)
    policy.model.generation_config = hub_config
    prompt = "12+7="
    ids = policy.tokenizer(format_prompt(policy.tokenizer, prompt), add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([ids])).logits[:, -1]
    logprobs, draw_from = sampling_distribution(logits, 1.5, 0.9)
    want = torch.softmax(draw_from, -1)[0]
    assert int((want > 0).sum()) > 20  # a wide distribution: a top-3 draw could not pass

    params = SamplingParams(temperature=1.5, top_p=0.9, max_new_tokens=1, seed=11)
    generator = HFGenerator(policy.model, policy.tokenizer, decode=decode)
    completions = generator.generate([prompt], 2048, params)[0].completions
    first = torch.tensor([c.token_ids[0] for c in completions])
    got = torch.bincount(first, minlength=want.numel()).float() / len(first)
    assert 0.5 * float((got - want).abs().sum()) < 0.2
    assert torch.allclose(torch.tensor([c.logprobs[0] for c in completions]), logprobs[0, first], atol=1e-5)
    assert policy.model.generation_config is hub_config  # given back after the call


def test_compiled_static_decode_samples_what_the_uncompiled_one_does_and_builds_few_graphs(tiny_dir):
    """On a GPU transformers compiles the static decode's step; here torch.compile is forced on
    the CPU with dynamo's eager backend (the same tracing and guards, no code generation). Same
    seed, same tokens as uncompiled. Seven batches (six shapes) of 8 to 128 rows and three prompt-length
    buckets build at most 3 graphs (the first shape, then rows and cache length turn dynamic),
    far under torch's recompile limit of 8."""
    import torch._dynamo
    from torch._dynamo.utils import counters
    from transformers import CompileConfig

    policy = load_policy(str(tiny_dir))
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=5)
    want = HFGenerator(policy.model, policy.tokenizer, decode="static").generate(["1+2=", "3+4="], 4, params)
    compiled = HFGenerator(policy.model, policy.tokenizer, decode="static")
    forced = CompileConfig(backend="eager", mode=None)
    forced._compile_all_devices = True  # transformers' own switch for compiling off a GPU
    uncompiled_generate = compiled._generate
    compiled._generate = lambda *args, **kwargs: uncompiled_generate(*args, compile_config=forced, **kwargs)
    torch._dynamo.reset()
    counters.clear()
    try:
        got = compiled.generate(["1+2=", "3+4="], 4, params)
        assert [[c.token_ids for c in g.completions] for g in got] == [[c.token_ids for c in g.completions] for g in want]
        assert counters["stats"]["unique_graphs"] == 1
        long_prompt = "+".join(str(i) for i in range(20)) + "="
        longer_prompt = "+".join(str(i) for i in range(40)) + "="
        for prompts, samples in [(["1+2="] * 4, 4), ([long_prompt] * 2, 4), ([longer_prompt] * 8, 4),
                                 (["1+2="] * 2, 4), ([long_prompt] * 16, 4), (["9="] * 32, 4)]:
            assert len(compiled.generate(prompts, samples, params)) == len(prompts)
        assert compiled.decode == "static" and len(compiled.static_shapes) == 6  # (8, 40) came twice
        assert counters["stats"]["unique_graphs"] <= 3
    finally:
        torch._dynamo.reset()


def test_node_sampling_keeps_one_logprob_per_token_one_step_behind():
    """By hand: 3 decoding steps over 2 rows. Each call draws from softmax(top_p_filter(logits /
    T)) and the token of the call before is scored with log softmax(logits / T) of its own step;
    the last step's token is scored at the end. A step run and taken back (transformers'
    deferred stop check) is dropped; too few steps is an error."""
    from swarmnode.policy.hf_backend import NodeSampling
    from swarmnode.policy.sampling import sampling_distribution

    steps = [torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]]) * (k + 1) for k in range(4)]
    tokens = torch.tensor([[0, 1, 2], [2, 2, 0]])
    want = torch.stack([torch.log_softmax(steps[k] / 0.5, -1).gather(-1, tokens[:, k:k + 1]).squeeze(-1)
                        for k in range(3)], dim=1)
    for calls in (3, 4):  # 4: one step more, taken back
        sampling = NodeSampling(temperature=0.5, top_p=0.9)
        for k in range(calls):
            draw_from = sampling(tokens[:, :k], steps[k])  # input_ids end with the last step's token
            assert torch.equal(draw_from, sampling_distribution(steps[k], 0.5, 0.9)[1])
        assert torch.allclose(sampling.logprobs(tokens), want)
    short = NodeSampling(temperature=0.5, top_p=0.9)
    short(tokens[:, :0], steps[0])
    with pytest.raises(RuntimeError, match="made 3 tokens in 1 logits steps"):
        short.logprobs(tokens)


@pytest.mark.parametrize("decode", ["generate", "static"])
def test_generate_paths_log_probs_equal_teacher_forcing_when_every_row_ends_early(decode):
    """Temperature 0.7, top-p 0.9, up to 24 new tokens: the bundled (trained) policy ends every
    answer within a few tokens, rows end at different steps and generate() stops before
    max_new_tokens; each kept token's behaviour log-prob is log softmax(logits / 0.7) of a
    teacher-forced forward pass."""
    from swarmnode.policy.loading import BUNDLED_TINY

    policy = load_policy(BUNDLED_TINY)
    params = SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=24, seed=3)
    groups = HFGenerator(policy.model, policy.tokenizer, decode=decode).generate(["1+2=", "34+5+67="], 4, params)
    lengths = [len(c.token_ids) for g in groups for c in g.completions]
    assert max(lengths) < params.max_new_tokens and min(lengths) < max(lengths)
    assert all(c.finish_reason == "stop" for g in groups for c in g.completions)
    for group in groups:
        for c in group.completions:
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 0.7)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)
