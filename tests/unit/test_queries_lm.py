"""The generation code path on a tiny randomly initialised Qwen2 (the paper's Qwen2.5 family):
chat prompts, LoRA on the seed set, shared-prompt sampling, perplexity. The packaged SmolLM2
runs the same code in the workflow; here only shapes, determinism and equivalences matter."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from personalir.common.causal_lm import load_causal_lm  # noqa: E402
from personalir.common.models import ModelNotAvailableError, resolve_model  # noqa: E402
from personalir.queries import lm  # noqa: E402
from personalir.queries.seeds import load_seeds  # noqa: E402
from tests.fixtures.models import build_seed_qwen2  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    seeds = load_seeds()
    path = build_seed_qwen2(tmp_path_factory.mktemp("tiny_qwen2"))
    ref = resolve_model(str(path))
    model, tok = load_causal_lm(ref)
    return {"path": path, "model": model, "tok": tok, "seeds": seeds}


def test_resolve_model_errors_name_the_model(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(ModelNotAvailableError, match="unknown packaged model") as err:
        resolve_model("packaged:nothing")
    assert "packaged:SmolLM2-135M-Instruct" in str(err.value)  # the known ones are listed
    with pytest.raises(ModelNotAvailableError, match="no model configured"):
        resolve_model("")
    with pytest.raises(ModelNotAvailableError, match="allow_download"):
        resolve_model("no-such-org/no-such-model-xyz")


def test_prompt_and_training_examples(tiny):
    tok = tiny["tok"]
    prompt = lm.chat_prompt(tok, "stroller", [("Brand", "Nestwell"), ("Color", "Gray")])
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "Product: stroller\nBrand: Nestwell\nColor: Gray" in prompt
    ex = lm.training_examples(tok, tiny["seeds"][:3])
    for (ids, p_len), seed in zip(ex, tiny["seeds"][:3], strict=True):
        target = tok.decode(ids[p_len:])
        assert target.replace(" ", "").startswith(seed["query"].replace(" ", "")[:10])
        assert ids[-1] == tok.convert_tokens_to_ids("<|im_end|>")


def test_shared_prompt_sampling_is_seeded_and_matches_full_recompute(tiny):
    model, tok = tiny["model"], tiny["tok"]
    prompt = lm.chat_prompt(tok, "stroller", [("Brand", "Nestwell"), ("Color", "Gray")])
    settings = lm.SamplingSettings(temperature=0.7, top_p=0.95, max_new_tokens=6)
    a = lm.sample_shared_prompt(model, tok, prompt, 5, settings, torch.Generator().manual_seed(1))
    b = lm.sample_shared_prompt(model, tok, prompt, 5, settings, torch.Generator().manual_seed(1))
    assert a == b and len(a) == 5
    assert all(0 < r["n_tokens"] <= 6 for r in a)
    # The cached, repeated prompt gives the same next-token logits as a full forward pass.
    ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        cache.batch_repeat_interleave(3)
        nxt = torch.tensor([[5], [6], [7]])
        step = model(input_ids=nxt, past_key_values=cache, use_cache=True).logits[:, -1]
        full = model(input_ids=torch.cat([ids.repeat(3, 1), nxt], dim=1)).logits[:, -1]
    assert torch.allclose(step, full, atol=1e-5)


def test_batched_prompts_match_each_prompt_sampled_alone(tiny):
    """Left-padded prompts of different lengths in one batch: each product's candidates are
    those it gets on its own from the same generator (positions follow each prompt)."""
    model, tok = tiny["model"], tiny["tok"]
    prompts = [
        lm.chat_prompt(tok, "stroller", [("Brand", "Nestwell"), ("Color", "Gray")]),
        lm.chat_prompt(
            tok,
            "high chair",
            [
                ("Brand", "Tumbletot"),
                ("Material", "Wood"),
                ("Color", "Natural"),
                ("Style Name", "Convertible"),
            ],
        ),
        lm.chat_prompt(tok, "crib sheet", [("Brand", "Dreamlet")]),
    ]
    widths = {len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts}
    assert len(widths) == 3  # the batch really is padded
    settings = lm.SamplingSettings(temperature=0.9, top_p=0.95, max_new_tokens=8)
    together = lm.sample_prompts(
        model, tok, prompts, 4, settings, [torch.Generator().manual_seed(10 + k) for k in range(3)]
    )
    alone = [
        lm.sample_shared_prompt(model, tok, p, 4, settings, torch.Generator().manual_seed(10 + k))
        for k, p in enumerate(prompts)
    ]
    assert [len(r) for r in together] == [4, 4, 4]
    assert together == alone
    with pytest.raises(ValueError, match="2 generators for 3 prompts"):
        lm.sample_prompts(model, tok, prompts, 4, settings, [torch.Generator()] * 2)


def test_top_p_keeps_the_smallest_prefix_reaching_the_mass():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(lm._top_p_filter(logits, 0.7))
    assert kept.tolist() == [[True, True, False, False]]
    assert torch.isfinite(lm._top_p_filter(logits, 0.01)).sum() == 1


def test_perplexity_golden_and_batch_independent(tiny):
    model, tok = tiny["model"], tiny["tok"]
    texts = ["looking for clear glass baby bottles", "nestwell gray stroller", "gray"]
    together = lm.perplexities(model, tok, texts, prefix="<|im_start|>user\n", batch_size=8)
    alone = [lm.perplexities(model, tok, [t], prefix="<|im_start|>user\n")[0] for t in texts]
    assert together == pytest.approx(alone, rel=1e-4)
    # Golden: exp of the mean NLL of the text's tokens after the prefix, computed by hand.
    pre = tok("<|im_start|>user\n", add_special_tokens=False)["input_ids"]
    ids = pre + tok(texts[1], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0], -1)
    nll = [-float(logp[i - 1, ids[i]]) for i in range(len(pre), len(ids))]
    assert together[1] == pytest.approx(math.exp(sum(nll) / len(nll)), rel=1e-4)


def test_lora_training_lowers_the_loss_and_saves(tiny, tmp_path):
    base, tok = load_causal_lm(resolve_model(str(tiny["path"])))
    settings = lm.LoraSettings(
        r=4, alpha=8, dropout=0.0, last_layers=1, steps=15, batch_size=4, lr=5e-2
    )
    model, hist = lm.train_lora(base, tok, tiny["seeds"][:8], settings, seed=3)
    assert len(hist) == 15
    assert sum(h["loss"] for h in hist[-3:]) < sum(h["loss"] for h in hist[:3])
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n and "layers.1." in n for n in trainable)
    model.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").exists()


def test_sampling_in_bfloat16_gives_float32_logits_to_the_hooks(tiny):
    """queries.lm.sampling_dtype: a bfloat16 copy samples; hooks see float32 scores."""
    import copy

    model = copy.deepcopy(tiny["model"]).to(torch.bfloat16)
    tok = tiny["tok"]
    seen = []

    def hook(input_ids, scores):
        seen.append(scores.dtype)
        return scores

    prompt = lm.chat_prompt(tok, "stroller", [("Brand", "Nestwell")])
    settings = lm.SamplingSettings(temperature=0.7, top_p=0.95, max_new_tokens=4)
    out = lm.sample_prompts(
        model, tok, [prompt], 3, settings, [torch.Generator().manual_seed(0)], hook
    )
    assert len(out[0]) == 3 and seen and set(seen) == {torch.float32}


def test_top_p_fast_path_equals_the_full_sort():
    """The top-k fast path keeps exactly the tokens the full sort keeps, peaked rows and flat
    rows (which fall back to the sort) alike, -inf entries included."""
    gen = torch.Generator().manual_seed(0)
    for scale in (0.5, 3.0, 8.0):
        x = torch.randn(12, 3000, generator=gen) * scale
        x[:3, 50:] = float("-inf")
        fast = lm._top_p_filter(x, 0.9, k=64)
        full = lm._top_p_sorted(x, 0.9)
        assert torch.equal(torch.isfinite(fast), torch.isfinite(full))
        assert torch.equal(fast[torch.isfinite(fast)], full[torch.isfinite(full)])
