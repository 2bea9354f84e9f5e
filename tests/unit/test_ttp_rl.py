"""TTP part 2: the RL reward terms (golden values), dynamic positive selection, the frozen and
unfrozen scorers, and a GRPO step on TRL with a tiny random Qwen2 (gradient reaches LoRA,
the frozen SFT adapter does not move, the saved adapter loads like the SFT one)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from personalir.ttp.model.backbone import (
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_adapter,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import query_prompt
from personalir.ttp.training import grpo, rl
from personalir.ttp.training.rewards import (
    ORIGINAL,
    RewardSettings,
    format_reward,
    length_reward,
    retrieval_rewards,
    select_positives,
)
from tests.fixtures.models import build_tiny_causal_lm

# ------------------------------------------------------------------------------ rewards


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>red guitar capo</think><embed>", 0.0),
        ("<think> spaced  words </think><embed>", 0.0),
        ("<think></think><embed>", -1.0),  # empty rewrite
        ("<think>   </think><embed>", -1.0),  # blank rewrite
        ("<think>capo</think>", -1.0),  # no embedding token
        ("<think>capo</think><embed> more", -1.0),  # text after the embedding token
        ("<think>capo</think> <embed>", 0.0),  # white space before <embed> (reference regex)
        ("<think>capo</think>x<embed>", -1.0),  # text between </think> and <embed>
        ("capo</think><embed>", -1.0),  # no opening tag
        ("<think>a<think>b</think><embed>", -1.0),  # a special token inside
        ("<think>a<embed>b</think><embed>", -1.0),
        ("<think>a</think><embed><embed>", -1.0),
    ],
)
def test_format_reward_cases(text, expected):
    assert format_reward(text) == expected


def test_length_penalty():
    assert length_reward(70, 64) == -6.0
    assert length_reward(64, 64) == 0.0
    assert length_reward(3, 64) == 0.0


def test_total_reward_weights():
    s = RewardSettings()
    assert s.weights == (0.5, 0.5, 2.0)
    assert np.allclose(s.total([-1, 0], [-2, 0], [0.5, -0.25]), [-0.5, -0.5])


def _unit(*v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_retrieval_reward_golden_values_and_clipping():
    items = np.stack([_unit(1, 0), _unit(0, 1)])
    # row 0: positive item 0; the rewrite moves towards it
    # row 1: positive item 0; rewrite exactly the item, original exactly the negative
    # row 2: positive item 1; the rewrite moves away from it
    roll = np.stack([_unit(0.8, 0.6), _unit(1, 0), _unit(0.8, 0.6)])
    orig = np.stack([_unit(0.6, 0.8), _unit(0, 1), _unit(0.6, 0.8)])
    positives = [0, 0, 1]
    same = np.array([[True, False], [True, False], [False, True]])
    plain = RewardSettings(score_temperature=1.0)  # scores = cosines
    out = retrieval_rewards(roll, orig, items, positives, same, plain)
    # row 0: dS_pos = 0.8 - 0.6 = 0.2; margin 0.8-0.6=0.2 vs 0.6-0.8=-0.2 -> 0.4; 2*0.2+0.4
    assert out["d_pos"][0] == pytest.approx(0.2)
    assert out["d_margin"][0] == pytest.approx(0.4)
    assert out["reward"][0] == pytest.approx(0.8)
    # row 1: dS_pos = 1, dS_margin = 1 - (-1) = 2 -> raw 4, clipped to 1
    assert out["raw"][1] == pytest.approx(4.0)
    assert out["reward"][1] == pytest.approx(1.0)
    # row 2: dS_pos = 0.6 - 0.8 = -0.2, margin -0.2 - 0.2 = -0.4 -> -0.8
    assert out["reward"][2] == pytest.approx(-0.8)
    alpha0 = RewardSettings(alpha=0, score_temperature=1.0)
    assert retrieval_rewards(roll, orig, items, positives, same, alpha0)["reward"][0] == (
        pytest.approx(0.4)
    )
    beta0 = RewardSettings(beta=0, score_temperature=1.0)
    out_b = retrieval_rewards(roll, orig, items, positives, same, beta0)
    assert out_b["reward"][0] == pytest.approx(0.4)
    assert out_b["reward"][2] == pytest.approx(-0.4)
    # default: scores are cosine / 0.02, so row 0's raw reward is 0.8 / 0.02 = 40 -> clip 1
    warm = retrieval_rewards(roll, orig, items, positives, same, RewardSettings())
    assert warm["d_pos"][0] == pytest.approx(10.0)
    assert warm["raw"][0] == pytest.approx(40.0)
    assert list(warm["reward"]) == pytest.approx([1.0, 1.0, -1.0])
    small = retrieval_rewards(
        np.stack([_unit(1.0, 0.0)]),
        np.stack([_unit(1.0, 0.004)]),
        items[:2],
        [0],
        np.array([[True, False]]),
        RewardSettings(),
    )
    # a gain of 8e-6 in cosine on the positive and ~0.004 on the margin, / 0.02
    assert small["reward"][0] == pytest.approx(
        (2 * (1 - 1 / np.hypot(1, 0.004)) + (1 - (1 - 0.004) / np.hypot(1, 0.004))) / 0.02
    )


def test_a_row_without_a_negative_has_no_margin_gain():
    items = np.stack([_unit(1, 0)])  # the batch's prompts all bought this product
    roll, orig = np.stack([_unit(1, 0.1)]), np.stack([_unit(1, 0.3)])
    out = retrieval_rewards(
        roll, orig, items, [0], np.array([[True]]), RewardSettings(score_temperature=1.0)
    )
    assert bool(out["no_negative"][0]) and out["d_margin"][0] == 0.0
    assert out["reward"][0] == pytest.approx(2 * (_unit(1, 0.1)[0] - _unit(1, 0.3)[0]))


def test_dynamic_selection_best_rollout_or_the_original_query():
    totals = [0.1, 0.5, -0.2, 0.5, -0.5, -0.1, -0.3, -0.9, 0.0, -1.0, -2.0, -3.0]
    # group 0: best 0.5 (first of the tie); group 1: all negative -> original; group 2: 0.0
    assert select_positives(totals, 4) == [1, ORIGINAL, 0]
    assert select_positives([float("nan"), -0.1], 2) == [ORIGINAL]
    with pytest.raises(ValueError, match="groups"):
        select_positives([1, 2, 3], 2)


def test_random_selection_is_seeded_and_in_range():
    totals = np.zeros(40)
    a = select_positives(totals, 4, "random", np.random.default_rng(3))
    b = select_positives(totals, 4, "random", np.random.default_rng(3))
    assert a == b and all(0 <= i < 4 for i in a) and len(set(a)) > 1
    with pytest.raises(ValueError, match="rng"):
        select_positives(totals, 4, "random")


def test_variant_settings_merge_reward_overrides():
    rl = {
        "selection": "dynamic",
        "reward": {"alpha": 2.0, "beta": 1.0},
        "variants": {
            "full": {},
            "no_margin_gain": {"reward": {"beta": 0}},
            "r": {"selection": "random"},
        },
    }
    assert grpo.variant_settings(rl, "no_margin_gain")["reward"] == {"alpha": 2.0, "beta": 0}
    assert grpo.variant_settings(rl, "r")["selection"] == "random"
    assert "variants" not in grpo.variant_settings(rl, "full")
    with pytest.raises(ValueError, match="unknown RL variant"):
        grpo.variant_settings(rl, "nope")


def test_rl_records_are_the_top_share_by_gain():
    recs = [{"example_id": f"e{i}", "gain": g} for i, g in enumerate([0.1, None, 0.5, 0.3, 0.0])]
    assert [r["example_id"] for r in grpo.rl_records(recs, 0.4)] == ["e2", "e3"]
    assert len(grpo.rl_records(recs, 0.01)) == 2  # never fewer than two prompts


# ------------------------------------------------------------------- tiny model, TRL step


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A prepared tiny Qwen2 backbone and an "SFT" adapter whose LoRA and token rows are
    not the identity (so frozen-vs-trained differences are visible)."""
    root = tmp_path_factory.mktemp("tiny_rl")
    src = build_tiny_causal_lm(root / "src", architecture="qwen2", tie_word_embeddings=True)
    model, tok, info = prepare_backbone(BackboneConfig(model=str(src)), 5)
    save_backbone(model, tok, info, root / "backbone")
    model, tok, _ = load_backbone(root / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=1)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for _name, p in peft_model.named_parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
    peft_model.save_pretrained(root / "sft")
    return root


def _prompts(tok, n=4):
    return {
        f"e{i}": query_prompt(tok, [f"item {i} red", f"item {i + 1} blue"], f"query {i}")
        for i in range(n)
    }


def _records(n=4):
    return [{"example_id": f"e{i}", "query": f"query {i}", "target": f"p{i % 3}"} for i in range(n)]


def test_load_policy_equals_the_sft_adapter(tiny):
    policy, tok, _ = rl.load_policy(str(tiny / "backbone"), str(tiny / "sft"))
    ref_model, _, _ = load_backbone(tiny / "backbone")
    ref_model = load_adapter(ref_model, tiny / "sft")
    ids = tok("hello <think>red</think><embed>", add_special_tokens=False, return_tensors="pt")
    with torch.no_grad():
        want = ref_model(**ids).logits
        got = policy(**ids).logits
        from trl.trainer.utils import use_adapter

        with use_adapter(policy, grpo.FROZEN_ADAPTER):
            frozen = policy(**ids).logits
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(frozen, want, atol=1e-5)
    assert not any(
        p.requires_grad for n, p in policy.named_parameters() if grpo.FROZEN_ADAPTER in n
    )


def test_grouped_logps_equal_scoring_each_row_alone(tiny):
    policy, tok, _ = rl.load_policy(str(tiny / "backbone"), str(tiny / "sft"))
    enc = TTPEncoder(policy, tok)
    prompts = [tok(t, add_special_tokens=False)["input_ids"] for t in ("a red capo", "b")]
    comps = [[5, 6, 7], [8, 9], [10, 11, 12], [13]]
    rows = [prompts[0], prompts[0], prompts[1], prompts[1]]
    p_ids, p_mask = enc.pad_left(rows)
    width = max(len(c) for c in comps)
    c_ids = torch.full((4, width), tok.pad_token_id)
    c_mask = torch.zeros((4, width), dtype=torch.long)
    for i, c in enumerate(comps):
        c_ids[i, : len(c)] = torch.tensor(c)
        c_mask[i, : len(c)] = 1
    ids, mask = torch.cat([p_ids, c_ids], 1), torch.cat([p_mask, c_mask], 1)
    with torch.no_grad():
        got, ent = grpo.grouped_completion_logps(
            enc.decoder, enc.lm_head, ids, mask, width, 0.7, True
        )
        for i, (p, c) in enumerate(zip(rows, comps, strict=True)):
            full = torch.tensor([p + c])
            logits = policy(input_ids=full).logits[0, len(p) - 1 : -1].float() / 0.7
            want = torch.log_softmax(logits, -1).gather(-1, torch.tensor(c)[:, None])[:, 0]
            assert torch.allclose(got[i, : len(c)], want, atol=1e-4)
    assert ent.shape == got.shape and bool((ent[c_mask.bool()] > 0).all())


def _step(tiny, tmp_path, **over):
    policy, tok, _ = rl.load_policy(str(tiny / "backbone"), str(tiny / "sft"))
    prompts = _prompts(tok)
    records = _records()
    items = {f"p{i}": f"product {i} text" for i in range(3)}
    enc = TTPEncoder(policy, tok, max_query_tokens=256, max_item_tokens=16)
    settings = grpo.GRPOSettings(
        group_size=2,
        prompts_per_step=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_tokens=5,
        beta_kl=0.1,
        checkpoint_every=1,
        reward=RewardSettings(length_limit=3),
        **over,
    )
    before = {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" in n}
    trainer, summary = rl.train_grpo(
        policy,
        tok,
        rl.build_dataset(records, prompts),
        items,
        settings,
        str(tmp_path / "ckpt"),
        encoder=enc,
        seed=3,
        log=lambda *a: None,
    )
    return trainer, summary, before


def test_a_grpo_step_trains_lora_and_leaves_the_frozen_scorer_alone(tiny, tmp_path):
    trainer, summary, before = _step(tiny, tmp_path)
    model = trainer.model
    after = dict(model.named_parameters())
    moved = [n for n in before if ".default." in n and not torch.equal(before[n], after[n])]
    assert moved, "the combined loss's gradient must reach the trained LoRA weights"
    frozen = [n for n in before if f".{grpo.FROZEN_ADAPTER}." in n]
    assert frozen and all(torch.equal(before[n], after[n]) for n in frozen)
    ref = rl.adapter_params(model, "ref")
    src = rl.adapter_params(model, grpo.FROZEN_ADAPTER)
    assert ref and all(torch.equal(ref[k], src[k]) for k in ref)  # KL reference = SFT
    hist = [h for h in trainer.state.log_history if "loss" in h]
    for key in (
        "rewards/format/mean",
        "rewards/length/mean",
        "rewards/retrieval/mean",
        "kl",
        "cl_loss",
    ):
        assert key in hist[0], key
    assert summary["selections"][0]["groups"] == 4
    assert summary["scorer_encoded"]["cached"] > 0  # frozen scorer caches items/originals


def test_unfrozen_scorer_uses_the_policy_and_caches_nothing(tiny, tmp_path):
    trainer, summary, _ = _step(tiny, tmp_path, scorer="policy", selection="random")
    assert summary["scorer"] == "policy"
    assert summary["scorer_encoded"]["cached"] == 0


def test_saved_rl_adapter_loads_like_the_sft_adapter(tiny, tmp_path):
    trainer, _, _ = _step(tiny, tmp_path)
    out = rl.save_rl_adapter(trainer.model, tiny / "sft", tmp_path / "rl_adapter")
    assert json.loads((out / "adapter_config.json").read_text()) == json.loads(
        (tiny / "sft" / "adapter_config.json").read_text()
    )
    model, tok, _ = load_backbone(tiny / "backbone")
    loaded = load_adapter(model, out)
    ids = tok("x <think>y</think><embed>", add_special_tokens=False, return_tensors="pt")
    trainer.model.eval()
    with torch.no_grad():
        assert torch.allclose(loaded(**ids).logits, trainer.model(**ids).logits, atol=1e-5)


def test_a_finished_runs_checkpoint_is_not_resumed(tiny, tmp_path):
    """A rerun in the same folder (forced, or after a code change) trains from the start:
    transformers would otherwise train one step past the finished run's last checkpoint."""
    _, first, _ = _step(tiny, tmp_path)
    assert first["completed_steps"] == 1 and first["resumed_from_this_run"] is None
    assert (tmp_path / "ckpt" / "checkpoint-1").is_dir()
    trainer, again, _ = _step(tiny, tmp_path)
    assert again["completed_steps"] == 1 and again["resumed_from_this_run"] is None
    assert [h["step"] for h in trainer.state.log_history if "loss" in h] == [1]
    assert rl._checkpoint_step(tmp_path / "ckpt" / "checkpoint-1") == 1
