"""Model selection on the validation split: the split itself, the candidate pool, the choice,
SFT's epoch candidates and GRPO's step candidates (stop-at reproduces a longer run's step)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from personalir.common.models import resolve_model
from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus, user_split
from personalir.ttp.inputs.examples import cap_examples
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.model.backbone import (
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import query_prompt
from personalir.ttp.training import grpo, rl
from personalir.ttp.training.jobs import select_candidate
from personalir.ttp.training.rewards import RewardSettings
from personalir.ttp.training.selection import (
    SelectionSettings,
    ValidationScorer,
    candidate_pool,
    choose,
)
from personalir.ttp.training.sft import epoch_candidates, load_trainable, train
from personalir.ttp.training.sft_data import SFTSettings, build_rows
from tests.fixtures.models import build_tiny_causal_lm


def test_validation_users_come_from_training_users_only():
    users = [f"u{i}" for i in range(400)]
    plain = {u: user_split(3, "d", u, 0.4) for u in users}
    held = {u: user_split(3, "d", u, 0.4, 0.2) for u in users}
    assert {u for u in users if plain[u] == "test"} == {u for u in users if held[u] == "test"}
    valid = [u for u in users if held[u] == "valid"]
    assert all(plain[u] == "train" for u in valid)
    assert 0.12 < len(valid) / len(users) < 0.28
    assert {held[u] for u in users} == {"train", "valid", "test"}
    with pytest.raises(ValueError, match="no training users"):
        user_split(3, "d", "u0", 0.6, 0.4)


def _example(i, split, label="Broad", target=None):
    return Example(f"e{i:03d}", "s", "d", f"u{i}", "capo", target or f"I{i}", label, split, [])


def test_validation_examples_are_not_capped_nor_counted_as_training():
    examples = [_example(i, "valid") for i in range(5)] + [
        _example(10 + i, "train") for i in range(5)
    ]
    out = cap_examples(examples, {"max_test_per_label": 1, "max_train_per_set": 2})
    assert sum(e.split == "valid" for e in out) == 5
    assert sum(e.split == "train" for e in out) == 2


def _corpus(n):
    return ItemCorpus({f"I{i}": Item(f"I{i}", f"item {i}", "M") for i in range(n)})


def test_candidate_pool_keeps_every_target_and_is_seeded():
    corpus = _corpus(50)
    valid = [_example(i, "valid", target=f"I{3 * i}") for i in range(5)]
    pool = candidate_pool(valid, corpus, 12, seed=4)
    assert len(pool) == 12 and {e.target for e in valid} <= set(pool)
    assert pool == candidate_pool(valid, corpus, 12, seed=4)
    assert pool != candidate_pool(valid, corpus, 12, seed=5)
    assert pool == [i for i in corpus.ids if i in set(pool)]  # corpus order
    assert candidate_pool(valid, corpus, None, seed=4) == list(corpus.ids)
    assert candidate_pool(valid, corpus, 500, seed=4) == list(corpus.ids)


def test_choose_keeps_the_best_and_the_earliest_among_equals():
    c = [{"epoch": e, "validation": {"MRR@100": v}} for e, v in ((1, 0.2), (2, 0.5), (3, 0.5))]
    assert choose(c, "MRR@100")["epoch"] == 2
    assert choose(c[:1], "MRR@100")["epoch"] == 1
    with pytest.raises(ValueError):
        choose([], "MRR@100")
    with pytest.raises(ValueError, match="selection.measure"):
        SelectionSettings.from_config({"selection": {"measure": "P@3"}, "inference": {}})


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_sel")
    src = build_tiny_causal_lm(root / "src", architecture="qwen2", tie_word_embeddings=True)
    model, tok, info = prepare_backbone(BackboneConfig(model=str(src)), 5)
    save_backbone(model, tok, info, root / "backbone")
    return root


def _world():
    names = ["red capo", "blue capo", "red strap", "blue strap", "green sticks", "gold sticks"]
    corpus = ItemCorpus({f"I{i}": Item(f"I{i}", n, "Music") for i, n in enumerate(names)})
    examples = []
    for k in range(12):
        target = f"I{k % 6}"
        examples.append(
            Example(
                f"e{k:02d}",
                "t",
                "d",
                f"u{k}",
                corpus[target].title.split()[1],
                target,
                "Broad",
                "train" if k < 8 else "valid",
                [HistoryEntry(f"I{(k + 1) % 6}", 1)],
                selected_history=[f"I{(k + 1) % 6}"],
            )
        )
    return corpus, examples


def test_sft_keeps_the_epoch_that_is_best_on_validation(backbone, tmp_path):
    corpus, examples = _world()
    records = [
        {**e.to_record(), "rewrite": corpus[e.target].title, "rewrite_kind": "rewrite"}
        for e in examples
        if e.split == "train"
    ]
    settings = SFTSettings(
        batch_size=4,
        epochs=3,
        learning_rate=5e-3,
        item_fields=("title",),
        max_item_tokens=16,
        max_query_tokens=200,
        checkpoint_every=2,
    )
    model, tok, _ = load_backbone(backbone / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=0)
    enc = TTPEncoder(peft_model, tok, max_query_tokens=200, max_item_tokens=16, batch_size=8)
    rows = build_rows(records, corpus, enc, settings)
    report = train(peft_model, enc, rows, settings, tmp_path, seed=1, log=lambda *_: None)
    cands = epoch_candidates(tmp_path / "checkpoints", report["run_key"])
    assert [c["epoch"] for c in cands] == [1.0, 2.0, 3.0] and [c["step"] for c in cands] == [
        2,
        4,
        6,
    ]
    assert epoch_candidates(tmp_path / "checkpoints", "another run") == []
    scorer = ValidationScorer(
        [(examples, corpus)], SelectionSettings(pool_size=None, max_new_tokens=3), settings, seed=1
    )
    assert scorer.examples == 4 and scorer.pool_items == 6
    values = iter([0.3, 0.7, 0.7])  # epoch 2 best, epoch 3 ties it: the earlier is kept

    class Fixed:  # a scorer stand-in whose values are known
        settings = scorer.settings
        examples = scorer.examples
        pool_items = scorer.pool_items

        def score(self, encoder):
            real = scorer.score(encoder)  # the real path runs too
            assert set(real) >= {"MRR@100", "Recall@20", "well_formed_share"}
            return {**real, "MRR@100": next(values)}

    record = select_candidate(
        cands, lambda c: load_trainable(peft_model, c["path"]), Fixed(), enc, "epoch", log=print
    )
    assert record["chosen"] == 2.0 and len(record["candidates"]) == 3
    from safetensors.torch import load_file

    want = load_file(str(cands[1]["path"]))
    got = {n: p for n, p in peft_model.named_parameters() if p.requires_grad}
    assert all(torch.equal(got[n], want[n]) for n in want)
    empty = ValidationScorer([(examples[:8], corpus)], scorer.settings, settings, seed=1)
    record = select_candidate(
        cands, lambda c: load_trainable(peft_model, c["path"]), empty, enc, "epoch", log=print
    )
    assert record["chosen"] == 3.0 and "no validation examples" in record["note"]


def _rl_run(backbone_root, sft_dir, out, **kw):
    policy, tok, _ = rl.load_policy(str(backbone_root / "backbone"), str(sft_dir))
    prompts = {f"e{i}": query_prompt(tok, [f"item {i} red"], f"query {i}") for i in range(4)}
    records = [
        {"example_id": f"e{i}", "query": f"query {i}", "target": f"p{i % 3}"} for i in range(4)
    ]
    enc = TTPEncoder(policy, tok, max_query_tokens=256, max_item_tokens=16)
    settings = grpo.GRPOSettings(
        group_size=2,
        prompts_per_step=2,
        max_steps=2,
        learning_rate=1e-2,
        max_completion_tokens=4,
        checkpoint_every=5,
        reward=RewardSettings(length_limit=3),
    )
    trainer, summary = rl.train_grpo(
        policy,
        tok,
        rl.build_dataset(records, prompts),
        {f"p{i}": f"product {i}" for i in range(3)},
        settings,
        str(out),
        encoder=enc,
        seed=3,
        log=lambda *a: None,
        **kw,
    )
    return policy, summary


def test_grpo_step_candidates_and_stop_at_reproduce_the_longer_run(backbone, tmp_path):
    model, tok, _ = load_backbone(backbone / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=1)
    peft_model.save_pretrained(tmp_path / "sft")
    _, long = _rl_run(backbone, tmp_path / "sft", tmp_path / "long", candidates_dir=tmp_path / "c")
    assert long["completed_steps"] == 2
    cands = rl.step_candidates(tmp_path / "c")
    assert [c["step"] for c in cands] == [1, 2]
    short_policy, short = _rl_run(backbone, tmp_path / "sft", tmp_path / "short", stop_at=1)
    assert short["completed_steps"] == 1 and short["stop_at"] == 1
    from safetensors.torch import load_file

    step1 = load_file(str(cands[0]["path"]))
    got = {n: p for n, p in short_policy.named_parameters() if p.requires_grad}
    assert set(got) == set(step1)
    for n in step1:
        assert np.allclose(got[n].detach().numpy(), step1[n].numpy(), atol=1e-6), n
    step2 = load_file(str(cands[1]["path"]))
    assert any(not torch.equal(step1[n], step2[n]) for n in step1)
    load_trainable(short_policy, cands[1]["path"])
    got = {n: p for n, p in short_policy.named_parameters() if p.requires_grad}
    assert all(torch.equal(got[n], step2[n]) for n in step2)


def test_dense_fine_tuning_keeps_the_epoch_best_on_validation(tmp_path):
    from sentence_transformers import SentenceTransformer

    from personalir.ttp.model.search import exact_search, per_query_measures
    from personalir.ttp.training.dense_ft import DenseFTSettings, fine_tune

    corpus, examples = _world()
    train_ex = [e for e in examples if e.split == "train"]
    valid = [e for e in examples if e.split == "valid"]
    pool = list(corpus.ids)
    texts = [corpus[i].title for i in pool]
    validation = [(valid, [e.query for e in valid], pool, texts)]
    report = fine_tune(
        "packaged:all-MiniLM-L6-v2",
        [e.query for e in train_ex],
        [corpus[e.target].title for e in train_ex],
        [e.target for e in train_ex],
        DenseFTSettings(epochs=3, batch_size=4, learning_rate=1e-3, max_length=16),
        tmp_path / "m",
        seed=2,
        variant="dense",
        validation=validation,
        log=lambda *_: None,
    )
    sel = report["selection"]
    assert [c["epoch"] for c in sel["candidates"]] == [1.0, 2.0, 3.0]
    best = choose(sel["candidates"], "MRR@100")
    assert sel["chosen"] == best["epoch"]
    model = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    q = model.encode([e.query for e in valid], normalize_embeddings=True)
    d = model.encode(texts, normalize_embeddings=True)
    ranking = exact_search([e.example_id for e in valid], q, pool, d, 100)
    frame = per_query_measures(valid, {k: [i for i, _ in v] for k, v in ranking.items()}, "x")
    assert float(frame["MRR@100"].mean()) == pytest.approx(best["validation"]["MRR@100"], abs=1e-6)


def test_rewriter_is_scored_by_the_base_bi_encoder_on_its_rewrites(backbone):
    """Decoupled-Stage's rewriter: the validation value is what the fixed bi-encoder
    achieves with the generated rewrites as queries (computed here by hand)."""
    from sentence_transformers import SentenceTransformer

    from personalir.ttp.model.prompts import parse_generated
    from personalir.ttp.model.search import exact_search, per_query_measures
    from personalir.ttp.training.selection import RewriteScorer
    from personalir.ttp.training.sft_data import build_prompt

    corpus, examples = _world()
    settings = SFTSettings(item_fields=("title",), max_item_tokens=16, max_query_tokens=200)
    model, tok, _ = load_backbone(backbone / "backbone")
    enc = TTPEncoder(model, tok, max_query_tokens=200, max_item_tokens=16, batch_size=8)
    sel = SelectionSettings(pool_size=None, max_new_tokens=3)
    minilm = "packaged:all-MiniLM-L6-v2"
    scorer = RewriteScorer([(examples, corpus)], sel, settings, seed=1, dense_model=minilm)
    value = scorer.score(enc)
    valid = [e for e in examples if e.split == "valid"]
    generated, _, _ = enc.generate_and_embed(
        [build_prompt(e, corpus, tok, settings) for e in valid], 3
    )
    rewrites = [parse_generated(g)[0] or e.query for g, e in zip(generated, valid, strict=True)]
    bi = SentenceTransformer(resolve_model(minilm).path, device="cpu")
    q = bi.encode(rewrites, normalize_embeddings=True)
    pool = list(corpus.ids)
    d = bi.encode([corpus[i].title for i in pool], normalize_embeddings=True)
    ranking = exact_search([e.example_id for e in valid], q, pool, d, 100)
    frame = per_query_measures(valid, {k: [i for i, _ in v] for k, v in ranking.items()}, "x")
    assert value["MRR@100"] == pytest.approx(float(frame["MRR@100"].mean()), abs=1e-6)
    # the bi-encoder is fixed: its item encodings are computed once for every candidate
    assert len(scorer._items) == 1
    scorer.score(enc)
    assert len(scorer._items) == 1


def test_decoupled_retriever_trains_on_the_rewrites(tmp_path, monkeypatch):
    from personalir.ttp.inputs.data import write_examples
    from personalir.ttp.training import dense_ft

    corpus, examples = _world()
    corpus.write(tmp_path / "items.parquet")
    write_examples(tmp_path / "examples.jsonl", examples)
    rewrites = {e.example_id: {"rewrite": f"rw {e.query}"} for e in examples}
    rewrites["e01"]["rewrite"] = ""  # an empty rewrite falls back to the query
    (tmp_path / "rewrites.json").write_text(json.dumps({"rewrites": rewrites}))
    seen = {}

    def fake_fine_tune(model, queries, items, ids, settings, out, *, validation, **kw):
        seen.update(queries=list(queries), validation=list(validation[0][1]))
        return {"variant": kw["variant"]}

    monkeypatch.setattr(dense_ft, "fine_tune", fake_fine_tune)
    ttp = {
        "items": {"fields": ["title"], "max_features": 0},
        "dense": {"model": "m", "max_length": 32},
        "selection": {"pool_size": None},
    }
    common = dict(
        examples_paths=[tmp_path / "examples.jsonl"],
        items_paths=[tmp_path / "items.parquet"],
        ttp=ttp,
        seed=1,
        out_dir=tmp_path / "m",
        report_out=tmp_path / "r.json",
        threads=1,
        log=lambda *_: None,
    )
    decoupled = PERSONAL_RETRIEVERS.get("decoupled")
    as_decoupled = dict(
        variant="decoupled", query_text=decoupled.query_text, needs_rewrites=True, **common
    )
    dense_ft.fine_tune_dense(rewrites_paths=[tmp_path / "rewrites.json"], **as_decoupled)
    train = [e for e in examples if e.split == "train"]
    want = ["capo" if e.example_id == "e01" else f"rw {e.query}" for e in train]
    assert seen["queries"] == want
    assert seen["validation"] == [f"rw {e.query}" for e in examples if e.split == "valid"]
    del rewrites["e03"]
    (tmp_path / "rewrites.json").write_text(json.dumps({"rewrites": rewrites}))
    with pytest.raises(ValueError, match="no rewrite of example 'e03'"):
        dense_ft.fine_tune_dense(rewrites_paths=[tmp_path / "rewrites.json"], **as_decoupled)
    with pytest.raises(ValueError, match="one rewrites file per examples file"):
        dense_ft.fine_tune_dense(**as_decoupled)
    with pytest.raises(ValueError, match="reads no rewrites"):
        dense_ft.fine_tune_dense(
            variant="dense", rewrites_paths=[tmp_path / "rewrites.json"], **common
        )


def test_history_aware_trains_on_its_own_query_text(tmp_path, monkeypatch):
    """The training text is the method class's: History-Aware's serialised history, oldest
    item first, then the query (golden strings by hand from _world's titles)."""
    from personalir.ttp.inputs.data import write_examples
    from personalir.ttp.training import dense_ft

    corpus, examples = _world()
    corpus.write(tmp_path / "items.parquet")
    write_examples(tmp_path / "examples.jsonl", examples)
    seen = {}

    def fake_fine_tune(model, queries, items, ids, settings, out, *, validation, **kw):
        seen.update(queries=list(queries))
        return {"variant": kw["variant"]}

    monkeypatch.setattr(dense_ft, "fine_tune", fake_fine_tune)
    ttp = {
        "items": {"fields": ["title"], "max_features": 0},
        "dense": {"model": "m", "max_length": 32},
        "selection": {"pool_size": None},
    }
    cls = PERSONAL_RETRIEVERS.get("history_aware")
    dense_ft.fine_tune_dense(
        variant="history_aware",
        query_text=cls.query_text,
        uses_history=True,
        examples_paths=[tmp_path / "examples.jsonl"],
        items_paths=[tmp_path / "items.parquet"],
        ttp=ttp,
        seed=1,
        out_dir=tmp_path / "m",
        report_out=tmp_path / "r.json",
        threads=1,
        log=lambda *_: None,
    )
    train = [e for e in examples if e.split == "train"]
    want = [
        cls.query_text(
            e.query, [f"title: {corpus[i].title}" for i in e.selected_history or []], None, 32
        )
        for e in train
    ]
    assert seen["queries"] == want
    assert all(q.startswith("history: ") and " [SEP] query: " in q for q in want)


def test_embedder_is_scored_without_history_or_generation(backbone):
    """The LLM-embedding baseline's selection: prompts hold no history, the query is embedded
    in the rewrite's place (nothing generated); equal to the run's own retrieval, by hand."""
    from dataclasses import replace

    from personalir.ttp.methods.base import RetrievalContext
    from personalir.ttp.methods.ttp import LLMEmbedding
    from personalir.ttp.model.search import exact_search, per_query_measures
    from personalir.ttp.training.jobs import embedder_record
    from personalir.ttp.training.selection import EmbedderScorer
    from personalir.ttp.training.sft_data import build_prompt

    corpus, examples = _world()
    settings = SFTSettings(item_fields=("title",), max_item_tokens=16, max_query_tokens=200)
    model, tok, _ = load_backbone(backbone / "backbone")
    enc = TTPEncoder(model, tok, max_query_tokens=200, max_item_tokens=16, batch_size=8)
    scorer = EmbedderScorer(
        [(examples, corpus)], SelectionSettings(pool_size=None), settings, seed=1
    )
    value = scorer.score(enc)
    assert value["well_formed_share"] == 1.0
    valid = [replace(e, selected_history=[]) for e in examples if e.split == "valid"]
    prompts = [build_prompt(e, corpus, tok, settings) for e in valid]
    assert not any("capo" in p and "strap" in p for p in prompts)  # no history item text
    q = enc.encode_queries(prompts, [e.query for e in valid])
    pool = list(corpus.ids)
    d = enc.encode_items([corpus[i].text(("title",)) for i in pool])
    ranking = exact_search([e.example_id for e in valid], q, pool, d, 100)
    frame = per_query_measures(valid, {k: [i for i, _ in v] for k, v in ranking.items()}, "x")
    assert value["MRR@100"] == pytest.approx(float(frame["MRR@100"].mean()), abs=1e-6)
    # the run ranks the same way: the history of a test example is never read
    ctx = RetrievalContext(
        corpus=corpus, item_fields=("title",), models={"ttp_backbone": str(backbone / "backbone")}
    )
    params = {"max_query_tokens": 200, "max_item_tokens": 16, "batch_size": 8}
    run = LLMEmbedding(ctx, params).rank([e for e in examples if e.split == "valid"])
    assert {k: [i for i, _ in v] for k, v in run.items()} == {
        k: [i for i, _ in v] for k, v in ranking.items()
    }
    # its training records: no history, the query in the rewrite's place
    rec = embedder_record({"query": "capo", "rewrite": "a red capo", "selected_history": ["I1"]})
    assert rec["selected_history"] == [] and rec["rewrite"] == "capo"
