"""The paper-scale path on a tiny random Qwen2: special tokens, mean init, untied head, LoRA
on every projection, <embed> pooling, the SFT loss (token CE + InfoNCE), resumable training."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus
from personalir.ttp.model.backbone import (
    LORA_TARGETS,
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_adapter,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.model.encoder import TTPEncoder, shared_prefix_length
from personalir.ttp.model.prompts import (
    embedding_token,
    parse_generated,
    query_prompt,
    special_tokens,
    target_text,
    use_embedding_token,
)
from personalir.ttp.training.sft import (
    TTPLossModule,
    batch_order,
    collate,
    latest_checkpoint,
    train,
)
from personalir.ttp.training.sft_data import SFTDataError, SFTSettings, build_prompt, build_rows
from tests.fixtures.models import build_tiny_causal_lm


@pytest.fixture(scope="module")
def backbone_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_qwen2")
    src = build_tiny_causal_lm(root / "src", architecture="qwen2", tie_word_embeddings=True)
    model, tok, info = prepare_backbone(BackboneConfig(model=str(src), init_noise_std=0.01), 7)
    save_backbone(model, tok, info, root / "backbone")
    return root


def test_special_tokens_mean_init_and_untied_head(backbone_dir):
    src = backbone_dir / "src"
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(src)
    old = base.get_input_embeddings().weight.detach()
    model, tok, info = load_backbone(backbone_dir / "backbone")
    assert info.architecture == "Qwen2ForCausalLM"
    ids = tok.convert_tokens_to_ids(list(special_tokens()))
    assert ids == list(range(old.shape[0], old.shape[0] + 3))
    emb = model.get_input_embeddings().weight.detach()
    for tid in ids:
        # mean row + noise of 1% of each dimension's spread
        dev = (emb[tid] - old.mean(0)).abs() / old.std(0)
        assert float(dev.max()) < 0.06
    assert not torch.equal(emb[ids[0]], emb[ids[1]])
    assert not model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() != emb.data_ptr()
    assert torch.allclose(model.lm_head.weight[: old.shape[0]], old)
    assert tok.padding_side == "left"


def test_gguf_backbone_is_read_through_the_shared_dequantised_copy(backbone_dir, monkeypatch):
    """A GGUF model (the packaged SmolLM2) loads through ``load_causal_lm`` with the workflow's
    model cache; the prepared backbone equals the one prepared from the plain checkpoint."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import personalir.common.models as models
    import personalir.ttp.model.backbone as backbone

    src = backbone_dir / "src"
    calls = []

    def fake_resolve(name, allow_download=False):
        return models.ModelRef(name, str(src), gguf_file="model.gguf")

    def fake_load(ref, *, dtype="float32", device="cpu", cache_dir=None):
        calls.append((ref.gguf_file, cache_dir))
        return AutoModelForCausalLM.from_pretrained(src).eval(), AutoTokenizer.from_pretrained(src)

    monkeypatch.setattr(backbone, "resolve_model", fake_resolve)
    monkeypatch.setattr(backbone, "load_causal_lm", fake_load)
    cfg = BackboneConfig(model="packaged:tiny", init_noise_std=0.01)
    model, tok, _ = prepare_backbone(cfg, 7, model_cache="/cache")
    assert calls == [("model.gguf", "/cache")]
    plain, _, _ = load_backbone(backbone_dir / "backbone")
    for (name, a), (_, b) in zip(
        model.state_dict().items(), plain.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    assert tok.padding_side == "left"


def test_lora_on_every_projection_and_only_new_token_rows(backbone_dir):
    model, tok, _ = load_backbone(backbone_dir / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=0)
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    for proj in LORA_TARGETS:
        assert any(f".{proj}.lora_A" in n for n in trainable), proj
    assert any("embed_tokens" in n and "trainable_tokens" in n for n in trainable)
    assert any("lm_head" in n and "trainable_tokens" in n for n in trainable)
    assert all("lora_" in n or "trainable_tokens" in n for n in trainable)


def test_lora_initialisation_is_seeded(backbone_dir):
    def lora_a(seed):
        model, tok, _ = load_backbone(backbone_dir / "backbone")
        torch.rand(7)  # whatever ran before must not matter
        peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=seed)
        return [p.detach().clone() for n, p in peft_model.named_parameters() if "lora_A" in n]

    first, again, other = lora_a(3), lora_a(3), lora_a(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def _encoder(backbone_dir, r=4):
    model, tok, _ = load_backbone(backbone_dir / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=r, alpha=2 * r, dropout=0.0), seed=0)
    return peft_model, TTPEncoder(
        peft_model, tok, max_query_tokens=400, max_item_tokens=40, batch_size=3
    )


def test_emb_pooling_is_normalised_and_independent_of_padding(backbone_dir):
    _, enc = _encoder(backbone_dir)
    prompt = query_prompt(enc.tokenizer, ["title: red capo"], "capo")
    alone = enc.encode_queries([prompt], ["red capo"])
    batch = enc.encode_queries([prompt, prompt + " and a much longer tail"], ["red capo", "x"])
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.allclose(alone[0], batch[0], atol=1e-5)
    ids, n_target = enc.query_ids(prompt, target_text("red capo"))
    assert ids[-1] == enc.emb_id and n_target == len(enc._ids(target_text("red capo")))
    items = enc.encode_items(["title: a very long item " * 10, "title: b"])
    assert items.shape == (2, 32)
    with pytest.raises(ValueError, match="<embed>"):
        enc.pool(torch.zeros(1, 2, 32), torch.tensor([[1, 2]]))


def test_grammar_allows_emb_only_after_think_close(backbone_dir):
    _, enc = _encoder(backbone_dir)
    open_id, close_id = enc.think_ids
    logits = torch.zeros(3, len(enc.tokenizer))
    logits[:, enc.emb_id] = 5.0  # the model would end at once
    logits[:, close_id] = 4.0
    logits[:, open_id] = 3.0
    logits[:, 65] = 1.0
    nxt = enc.grammar_next(logits, [[], [65], [65, close_id]]).tolist()
    assert nxt == [65, close_id, enc.emb_id]


def test_parse_generated():
    assert parse_generated("<think>Kestrel  capo</think><embed>") == ("Kestrel capo", True)
    assert parse_generated("Kestrel capo<embed>") == ("Kestrel capo", False)


def _world():
    corpus = ItemCorpus(
        {
            f"I{i}": Item(f"I{i}", f"{brand} {noun}", "Music", attributes=(("Brand", brand),))
            for i, (brand, noun) in enumerate(
                [
                    ("Kestrel", "capo"),
                    ("Bolt", "capo"),
                    ("Kestrel", "strap"),
                    ("Zed", "strap"),
                    ("Bolt", "sticks"),
                    ("Zed", "sticks"),
                ]
            )
        }
    )
    records = []
    for k in range(8):
        target = f"I{k % 6}"
        ex = Example(
            f"e{k}",
            "t",
            "d",
            "u",
            corpus[target].title.split()[1],
            target,
            "Broad",
            "train",
            [HistoryEntry(f"I{(k + 1) % 6}", 1)],
            selected_history=[f"I{(k + 1) % 6}"],
        )
        rec = ex.to_record()
        rec.update(rewrite=corpus[target].title, rewrite_kind="rewrite", gain=0.1)
        records.append(rec)
    return corpus, records


def test_loss_is_token_ce_plus_infonce_and_backpropagates(backbone_dir):
    peft_model, enc = _encoder(backbone_dir)
    corpus, records = _world()
    settings = SFTSettings(
        item_fields=("title",),
        max_item_tokens=40,
        max_query_tokens=400,
        token_weight=0.5,
        contrastive_weight=1.0,
        temperature=0.02,
    )
    rows = build_rows(records, corpus, enc, settings)
    module = TTPLossModule(peft_model, enc, settings)
    total, tok, nce = module(*collate(rows[:4], enc))
    assert torch.isclose(total, 0.5 * tok + nce, atol=1e-4)
    # InfoNCE over 4 in-batch items is about log(4) at random initialisation
    assert 0.2 < float(nce) < 10
    total.backward()
    grads = [p.grad for n, p in peft_model.named_parameters() if "lora_B" in n]
    assert any(g is not None and float(g.abs().sum()) > 0 for g in grads)


def test_token_only_loss_never_encodes_the_items(backbone_dir):
    """Decoupled-Stage's rewriter: contrastive weight 0 gives the token CE alone, the same CE
    as the full loss's, and no item forward pass."""
    peft_model, enc = _encoder(backbone_dir)
    corpus, records = _world()
    common = {"item_fields": ("title",), "max_item_tokens": 40, "max_query_tokens": 400}
    full = SFTSettings(**common, token_weight=0.5, contrastive_weight=1.0)
    only = SFTSettings(**common, token_weight=1.0, contrastive_weight=0.0)
    rows = build_rows(records, corpus, enc, full)
    batch = collate(rows[:4], enc)
    _, tok_full, _ = TTPLossModule(peft_model, enc, full)(*batch)
    calls = []
    hidden = enc.hidden
    enc.hidden = lambda *a, **k: calls.append(a[0].shape) or hidden(*a, **k)
    try:
        total, tok, nce = TTPLossModule(peft_model, enc, only)(*batch)
    finally:
        enc.hidden = hidden
    assert len(calls) == 1 and calls[0] == batch[0].shape  # the queries only
    assert torch.isclose(total, tok) and float(nce) == 0.0
    assert torch.isclose(tok, tok_full, atol=1e-6)
    total.backward()
    grads = [p.grad for n, p in peft_model.named_parameters() if "lora_B" in n]
    assert any(g is not None and float(g.abs().sum()) > 0 for g in grads)
    peft_model.zero_grad(set_to_none=True)


def test_shared_prefix_is_computed_once_and_changes_nothing(backbone_dir):
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 5]]) == 2
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2  # each row keeps a token
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5]], keep=[3, 1]) == 1
    peft_model, enc = _encoder(backbone_dir)
    corpus, records = _world()
    settings = SFTSettings(item_fields=("title",), max_item_tokens=40, max_query_tokens=400)
    rows = build_rows(records, corpus, enc, settings)
    shared = collate(rows[:4], enc)
    q_prefix = shared[6]
    assert q_prefix is not None and q_prefix.shape[1] >= 8
    # the prefix stops before the prompt token that predicts the first target token
    assert all(q_prefix.shape[1] <= len(r.query_ids) - r.n_target - 1 for r in rows[:4])
    plain_enc = TTPEncoder(
        peft_model, enc.tokenizer, max_query_tokens=400, max_item_tokens=40, min_shared_prefix=0
    )
    plain = collate(rows[:4], plain_enc)
    assert plain[6] is None and plain[7] is None
    module = TTPLossModule(peft_model, enc, settings)
    with torch.no_grad():
        a = module(*shared)
        b = TTPLossModule(peft_model, plain_enc, settings)(*plain)
    for x, y in zip(a, b, strict=True):
        assert torch.isclose(x, y, atol=1e-4), (a, b)
    # inference: embeddings of a batch with a shared prefix equal one-row-at-a-time ones
    seqs = [r.query_ids for r in rows[:4]]
    assert np.allclose(enc.encode_ids(seqs), plain_enc.encode_ids(seqs), atol=1e-5)


def test_rows_refuse_records_without_history_selection(backbone_dir):
    _, enc = _encoder(backbone_dir)
    corpus, records = _world()
    records[0]["selected_history"] = None
    with pytest.raises(SFTDataError, match="no selected_history"):
        build_rows(records, corpus, enc, SFTSettings(item_fields=("title",)))
    records[0]["selected_history"] = []
    ex = Example.from_record(records[0])
    assert "(none)" in build_prompt(ex, corpus, enc.tokenizer, SFTSettings())


def test_batch_order_is_a_seeded_epoch_permutation():
    first = [batch_order(10, 4, 3, s) for s in range(3)]
    assert sorted(sum(first, [])) == list(range(10))
    assert batch_order(10, 4, 3, 1) == first[1]
    assert batch_order(10, 4, 4, 0) != first[0] or batch_order(10, 4, 4, 1) != first[1]


def test_training_resumes_to_the_same_weights(backbone_dir, tmp_path):
    from safetensors.torch import load_file

    corpus, records = _world()
    settings = SFTSettings(
        batch_size=4,
        max_steps=4,
        epochs=10,
        learning_rate=5e-3,
        item_fields=("title",),
        max_item_tokens=40,
        max_query_tokens=400,
        checkpoint_every=2,
        keep_checkpoints=2,
    )

    def run(out, stop_after=None):
        torch.manual_seed(0)
        peft_model, enc = _encoder(backbone_dir)
        rows = build_rows(records, corpus, enc, settings)
        return train(
            peft_model, enc, rows, settings, out, seed=1, stop_after=stop_after, log=lambda *_: None
        )

    full = run(tmp_path / "full")
    assert full["finished"] and full["completed_steps"] == 4
    part = run(tmp_path / "resumed", stop_after=2)
    assert not part["finished"] and latest_checkpoint(tmp_path / "resumed" / "checkpoints")
    rest = run(tmp_path / "resumed")
    assert rest["resumed_from_step_this_run"] == 2 and rest["finished"]
    a = load_file(tmp_path / "full" / "adapter" / "adapter_model.safetensors")
    b = load_file(tmp_path / "resumed" / "adapter" / "adapter_model.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k
    # Another run (here: another learning rate) never resumes these checkpoints.
    settings = dataclasses.replace(settings, learning_rate=1e-3)
    other = run(tmp_path / "resumed", stop_after=1)
    assert other["resumed_from_step_this_run"] == 0 and other["completed_steps"] == 1
    settings = dataclasses.replace(settings, learning_rate=5e-3)
    loss_full = json.loads((tmp_path / "full" / "loss.json").read_text())
    loss_res = json.loads((tmp_path / "resumed" / "loss.json").read_text())
    assert [h["loss"] for h in loss_full] == pytest.approx([h["loss"] for h in loss_res], abs=1e-5)
    # the saved adapter loads back and generates
    model, tok, _ = load_backbone(backbone_dir / "backbone")
    enc = TTPEncoder(load_adapter(model, tmp_path / "full" / "adapter"), tok, batch_size=2)
    out = enc.generate([query_prompt(tok, [], "capo")] * 2, 4)
    assert len(out) == 2
    assert embedding_token() == "<embed>" and "<embed>" in tok.get_vocab()


def test_generate_and_embed_equals_encoding_the_generated_sequence(backbone_dir):
    _, enc = _encoder(backbone_dir)
    tok = enc.tokenizer
    prompts = [query_prompt(tok, ["title: red capo"], "capo"), query_prompt(tok, [], "strap")]
    texts, embs, flags = enc.generate_and_embed(prompts, 5)
    assert len(texts) == 2 and embs.shape == (2, 32) and len(flags) == 2
    assert all(t.startswith("<think>") and t.endswith("</think><embed>") for t in texts)
    close_id = enc.think_ids[1]
    for prompt, ids, emb in zip(prompts, enc.last_generated_ids, embs, strict=True):
        assert ids[-1] == enc.emb_id
        # the grammar: a non-empty rewrite, one </think>, then <embed> and nothing else
        assert ids[0] != close_id and ids.count(close_id) == 1 and ids[-2] == close_id
        assert ids.count(enc.emb_id) == 1
        ref = enc.encode_ids([enc.prompt_ids(prompt) + ids])[0]
        assert np.allclose(ref, emb, atol=1e-5)


def test_the_embedding_token_is_configurable_and_travels_with_the_backbone(tmp_path):
    """``backbone.embedding_token: <emb>`` (the reference code's name): the backbone is
    prepared with it, loading the backbone makes it the process's token, and prompts,
    targets, parsing and the format reward all use it."""
    from personalir.ttp.training.rewards import format_reward

    src = build_tiny_causal_lm(tmp_path / "src", architecture="qwen2", tie_word_embeddings=True)
    try:
        model, tok, info = prepare_backbone(
            BackboneConfig(model=str(src), embedding_token="<emb>"), 7
        )
        save_backbone(model, tok, info, tmp_path / "bb")
        assert sorted(info.special_token_ids, key=info.special_token_ids.get) == [
            "<think>",
            "</think>",
            "<emb>",
        ]
        use_embedding_token("<embed>")
        model, tok, _ = load_backbone(tmp_path / "bb")
        assert embedding_token() == "<emb>" and "<embed>" not in tok.get_vocab()
        assert target_text("red capo") == "<think>red capo</think><emb>"
        assert parse_generated("<think>red capo</think><emb>") == ("red capo", True)
        assert format_reward("<think>red capo</think><emb>") == 0.0
        assert format_reward("<think>red capo</think><embed>") == -1.0
        enc = TTPEncoder(model, tok)
        assert enc.emb_id == tok.convert_tokens_to_ids("<emb>")
        with pytest.raises(ValueError, match="must look like"):
            use_embedding_token("emb")
        with pytest.raises(ValueError, match="must differ"):
            use_embedding_token("<think>")
    finally:
        use_embedding_token("<embed>")
