"""The retriever interface: registry, config entries, top-k, BM25 scores, model errors."""

import math

import numpy as np
import pytest

from personalir.common.models import ModelNotAvailableError, resolve_model
from personalir.retrieval.base import (
    QueryText,
    RetrieverConfigError,
    RetrieverSpec,
    RunSettings,
    TopKAccumulator,
    load_builtin_retrievers,
    top_k,
)
from personalir.retrieval.corpus import corpus_from_texts
from personalir.retrieval.hybrid import minmax_rows
from personalir.retrieval.lexical import BM25Retriever
from personalir.retrieval.rerank import select_pairs

CORPUS = corpus_from_texts(
    ["dA", "dB", "dC"], ["red guitar strings", "blue guitar", "drum sticks kit"]
)


def test_builtin_types_cover_the_six_families():
    registry = load_builtin_retrievers()
    families = {registry.get(n).family for n in registry.names()}
    assert {
        "lexical",
        "learned_sparse",
        "dense",
        "hybrid",
        "late_interaction",
        "llm_reranker",
    } <= families
    assert {"bm25", "splade", "dense", "bge_m3", "colbert", "llm_yesno", "llm_prompt"} <= set(
        registry.names()
    )


def test_top_k_breaks_ties_by_position():
    scores = np.array([1.0, 3.0, 3.0, 0.5, 3.0])
    assert top_k(scores, 2).tolist() == [1, 2]
    assert top_k(scores, 10).tolist() == [1, 2, 4, 0, 3]
    with pytest.raises(ValueError, match="NaN"):
        top_k(np.array([1.0, np.nan]), 1)


def test_accumulator_equals_one_pass_top_k():
    gen = np.random.default_rng(0)
    scores = np.round(gen.normal(size=(4, 37)), 1)  # rounding creates ties
    acc = TopKAccumulator(4, 10)
    for start in range(0, 37, 8):
        acc.add(scores[:, start : start + 8], start)
    for i in range(4):
        assert acc.index[i].tolist() == top_k(scores[i], 10).tolist()


def test_bm25_golden_scores():
    # Lucene BM25, k1 = 1.5, b = 0.75, N = 3, avgdl = 8/3, no stopwords.
    # idf(guitar) = ln(1 + (3 - 2 + .5)/(2 + .5)) = ln 1.6; idf(strings) = ln(1 + 2.5/1.5).
    # dA (3 tokens): tf part 1 / (1 + 1.5 (.25 + .75 * 3/(8/3))) = 1 / 2.640625
    # dB (2 tokens): 1 / (1 + 1.5 (.25 + .75 * 2/(8/3))) = 1 / 2.21875; dC: no shared term.
    bm25 = BM25Retriever(params={"stopwords": None})
    bm25.index(CORPUS)
    run = bm25.rank([QueryText("q", "guitar strings")], 200)["q"]
    expected_a = (math.log(1.6) + math.log(1 + 2.5 / 1.5)) / 2.640625
    expected_b = math.log(1.6) / 2.21875
    assert [d for d, _ in run] == ["dA", "dB"]  # dC shares no term: not retrieved
    assert run[0][1] == pytest.approx(expected_a, rel=1e-5)
    assert run[1][1] == pytest.approx(expected_b, rel=1e-5)


def test_bm25_stemming_and_stopwords_from_config():
    corpus = corpus_from_texts(["d1", "d2"], ["the guitars", "a drum"])
    plain = BM25Retriever(params={"stemmer": None})
    plain.index(corpus)
    assert plain.rank([QueryText("q", "guitar")], 10)["q"] == []
    stemmed = BM25Retriever(params={"stemmer": "english"})
    stemmed.index(corpus)
    assert [d for d, _ in stemmed.rank([QueryText("q", "guitar")], 10)["q"]] == ["d1"]
    # "the" is an English stopword: the query has no term left.
    assert stemmed.rank([QueryText("q", "the")], 10)["q"] == []
    with pytest.raises(RetrieverConfigError, match="unknown stemmer"):
        BM25Retriever(params={"stemmer": "klingon"}).index(corpus)


def test_spec_errors_name_the_problem():
    settings = RunSettings()
    with pytest.raises(RetrieverConfigError, match="exactly one of 'type'"):
        RetrieverSpec.from_config("x", {"model": "m"})
    with pytest.raises(RetrieverConfigError, match="unknown retriever type 'nope'"):
        RetrieverSpec.from_config("x", {"type": "nope"}).build(settings)
    with pytest.raises(RetrieverConfigError, match=r"unknown parameter\(s\) \['k3'\]"):
        RetrieverSpec.from_config("x", {"type": "bm25", "params": {"k3": 1}}).build(settings)
    with pytest.raises(RetrieverConfigError, match="cannot import module"):
        RetrieverSpec.from_config("x", {"class": "no_such_pkg.mod:C"}).build(settings)
    with pytest.raises(RetrieverConfigError, match="lacks"):
        RetrieverSpec.from_config("x", {"class": "collections:OrderedDict"}).build(settings)


def test_class_path_retriever():
    spec = RetrieverSpec.from_config(
        "mine", {"class": "personalir.retrieval.examples:TermOverlapRetriever"}
    )
    retriever = spec.build(RunSettings())
    retriever.index(CORPUS)
    run = retriever.rank([QueryText("q", "blue guitar")], 200)["q"]
    # Jaccard of token sets: dB {blue, guitar} = 1; dA {red, guitar, strings} 1/4; dC 0.
    assert run == [("dB", 1.0), ("dA", 0.25), ("dC", 0.0)]


def test_missing_models_name_the_model_and_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotAvailableError) as err:
        resolve_model("thenlper/gte-base", allow_download=False)
    assert "'thenlper/gte-base'" in str(err.value) and "hf download thenlper/gte-base" in str(
        err.value
    )
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        resolve_model(str(tmp_path / "nowhere"))
    with pytest.raises(ModelNotAvailableError, match="unknown packaged model"):
        resolve_model("packaged:gpt-5")
    assert resolve_model("packaged:splade-tiny").path.endswith("model")


def test_unreadable_model_cache_is_reported_not_hidden(monkeypatch, tmp_path):
    """A plain cache miss reads as "not in the cache"; any other failure of the cache lookup
    (permissions, a broken snapshot) is named in the error instead of being swallowed."""
    import huggingface_hub

    def broken(repo_id, **kw):
        raise PermissionError(f"[Errno 13] Permission denied: '{tmp_path}/models--x'")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", broken)
    with pytest.raises(ModelNotAvailableError) as err:
        resolve_model("thenlper/gte-base", allow_download=False)
    assert "reading the local cache failed: PermissionError: [Errno 13]" in str(err.value)
    monkeypatch.undo()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotAvailableError) as err:
        resolve_model("thenlper/gte-base", allow_download=False)
    assert "reading the local cache failed" not in str(err.value)


def test_rerank_pair_sample_is_seeded_and_whole_pairs():
    queries = [
        QueryText(f"{p}:{r}", "t", "D", p, "syntactic" if p.startswith("s") else "writing_error")
        for p in ("s1", "s2", "s3", "e1", "e2")
        for r in ("x", "y")
    ]
    a = select_pairs(queries, 1, seed=5)
    assert a == select_pairs(queries, 1, seed=5)
    assert len(a) == 4 and len({q.pair_id for q in a}) == 2
    assert {q.kind for q in a} == {"syntactic", "writing_error"}
    assert select_pairs(queries, None, seed=5) == queries


def test_minmax_rows():
    out = minmax_rows(np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0]]))
    assert out.tolist() == [[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]]
