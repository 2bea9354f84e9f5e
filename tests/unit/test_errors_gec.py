"""GEC backends, the chain and its persistent cache."""

from __future__ import annotations

import json

import pytest

from personalir.errors.cache import CorrectionCache, sentence_key
from personalir.errors.gec import (
    GEC_BACKENDS,
    GECBackend,
    QuireBackend,
    SymSpellBackend,
    apply_spans,
    build_backends,
    correct_corpus,
    quire_prefilter,
)

SYMSPELL = {
    "max_edit_distance": 2,
    "min_word_length": 2,
    "min_suggestion_count": 1,
    "min_corpus_support": 0,
    "domain_min_users": 3,
    "domain_typo_ratio": 20,
}


def test_registry_names():
    assert GEC_BACKENDS.names() == ["gector", "quire", "symspell"]


def test_symspell_corrects_non_words_only():
    b = SymSpellBackend(SYMSPELL)
    b.prepare([])
    out = b.correct(
        ["This guitsr is grat and teh USB cable fits the 5mm jack.", "I don't know, it's fine."]
    )
    assert out == [
        "This guitar is great and the USB cable fits the 5mm jack.",
        "I don't know, it's fine.",
    ]
    assert b.correct(["Guitsr strings"]) == ["Guitar strings"]  # case kept


def test_symspell_domain_vocabulary_and_common_typos():
    corpus = [
        (f"u{i}", "My humbucker sounds great and teh the the the the the the") for i in range(4)
    ] + [("u9", "the " * 200)]
    b = SymSpellBackend(SYMSPELL)
    b.prepare(corpus)
    assert "humbucker" in b.domain_words  # written by 4 users, no frequent word next to it
    assert "teh" not in b.domain_words  # 4 users, but "the" is far more frequent
    assert b.correct(["my humbucker and teh pickup"]) == ["my humbucker and the pickup"]
    assert b.counters["domain_forms_judged_typos"] >= 1


def test_apply_spans():
    assert apply_spans("Its a test .", [(0, 3, "It's"), (10, 12, "")]) == "It's a test"


def test_quire_prefilter():
    assert quire_prefilter("Its a great amp.")
    assert quire_prefilter("I dont like it.")
    assert quire_prefilter("The the strap broke.")  # doubled word
    assert not quire_prefilter("The strap broke after a week.")
    assert not quire_prefilter("I went to the shop.")  # to -> too is never trusted


def test_quire_batched_equals_package_predict():
    """With the package's gates the batched tagger gives exactly quire's own predictions."""
    from quire_grammar import model as qm

    b = QuireBackend({"batch_size": 3, "prefilter": "none", "gates": "package"})
    sents = [
        "Their is a problem with the strap.",
        "This amp is better then my old one.",
        "He have three guitars.",
        "The sound was great.",
        "Your going to love it.",
        "",
    ]
    spans = b.predict_batch(sents)
    for s, got in zip(sents, spans, strict=True):
        want = [(c.start, c.end, c.suggestions[0]) for c in qm.predict(s) if c.suggestions]
        assert sorted(got) == sorted(want), s
    assert b.correct(sents[:2]) == [
        "There is a problem with the strap.",
        "This amp is better than my old one.",
    ]


def test_quire_relaxed_gates_keep_confident_its():
    relaxed = QuireBackend({"batch_size": 8, "prefilter": "none", "gates": "relaxed_confusables"})
    package = QuireBackend({"batch_size": 8, "prefilter": "none", "gates": "package"})
    s = "Its surprisingly loud for a small amp."
    assert package.correct([s]) == [s]  # the package gate drops it
    assert relaxed.correct([s]) == ["It's surprisingly loud for a small amp."]
    assert relaxed.fingerprint() != package.fingerprint()


class Upper(GECBackend):
    """A cacheable toy backend that counts its calls."""

    name = "upper"
    cacheable = True

    def __init__(self):
        super().__init__({})
        self.calls = 0

    def wants(self, sentence):
        return not sentence.startswith("skip")

    def fingerprint(self):
        return "upper-v1"

    def correct(self, sentences):
        self.calls += len(sentences)
        return [s.upper() for s in sentences]


def test_chain_dedupes_caches_and_reports(tmp_path):
    corpus = [("u1", "a b"), ("u2", "a b"), ("u1", "skip me"), ("u3", "c")]
    b = Upper()
    out, changed, runs = correct_corpus([b], corpus, cache_root=tmp_path, chunk_size=1)
    assert out == ["A B", "A B", "skip me", "C"]
    assert changed == [["upper"], ["upper"], [], ["upper"]]
    assert b.calls == 2  # two distinct wanted sentences
    assert runs[0].skipped == 1 and runs[0].computed == 2 and runs[0].cache_hits == 0
    b2 = Upper()
    out2, _, runs2 = correct_corpus([b2], corpus, cache_root=tmp_path)
    assert out2 == out and b2.calls == 0 and runs2[0].cache_hits == 2
    manifest = json.loads((tmp_path / "upper-upper-v1" / "manifest.json").read_text())
    assert manifest["backend"] == "upper"


def test_cache_segments_are_atomic_and_compacted(tmp_path):
    cache = CorrectionCache(tmp_path, "b", "f" * 64, max_segments=3)
    for i in range(5):
        cache.put_many([(f"s{i}", f"S{i}")])
        assert cache.flush() == 1
    segs = sorted(cache.dir.glob("seg-*.parquet"))
    assert len(segs) <= 3
    assert not list(cache.dir.glob(".*"))  # no temporary files left behind
    fresh = CorrectionCache(tmp_path, "b", "f" * 64)
    assert [fresh.get(f"s{i}") for i in range(5)] == [f"S{i}" for i in range(5)]
    assert fresh.get("unknown") is None
    assert sentence_key("x") == sentence_key("x") != sentence_key("y")


def test_build_backends_rejects_unknown_and_checks_quire_options():
    with pytest.raises(KeyError, match="unknown GEC backend"):
        build_backends({"backends": ["nope"]})
    with pytest.raises(Exception, match="prefilter"):
        QuireBackend({"batch_size": 1, "prefilter": "maybe", "gates": "package"})


def test_symspell_suggestions_need_corpus_support():
    b = SymSpellBackend({**SYMSPELL, "min_corpus_support": 1})
    b.prepare(
        [
            ("u1", "My guitar and my Xenyx mixer."),
            ("u2", "A guitar."),
            ("u3", "The guitsr is here."),
        ]
    )
    # "kenya" is nobody's word in this domain; inner capitals mark a brand name
    assert b.correct(["xenyx guitsr", "PreSonsu"]) == ["xenyx guitar", "PreSonsu"]


def _segment(cache):
    (seg,) = sorted(cache.dir.glob("seg-*.parquet"))
    return seg


@pytest.mark.parametrize("damage", ["bit_flip", "truncated", "swapped", "garbage"])
def test_a_damaged_cache_never_serves_a_wrong_correction(tmp_path, damage):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = CorrectionCache(tmp_path, "b", "f" * 64)
    pairs = [(f"sentence {i}", f"Sentence {i}.") for i in range(20)]
    cache.put_many(pairs)
    cache.flush()
    seg = _segment(cache)
    if damage == "bit_flip":  # one character of one output changed, the file still valid
        table = pq.read_table(seg).to_pydict()
        table["output"][3] = table["output"][3][:-1] + "!"
        pq.write_table(pa.table(table), seg)
    elif damage == "swapped":  # two outputs exchanged between their keys
        table = pq.read_table(seg).to_pydict()
        table["output"][0], table["output"][1] = table["output"][1], table["output"][0]
        pq.write_table(pa.table(table), seg)
    elif damage == "truncated":
        seg.write_bytes(seg.read_bytes()[:200])
    else:
        seg.write_bytes(b"\x00" * 64)
    fresh = CorrectionCache(tmp_path, "b", "f" * 64)
    want = dict(pairs)
    for sentence, _ in pairs:
        got = fresh.get(sentence)
        assert got is None or got == want[sentence], sentence  # a miss, never a wrong hit
    info = fresh.describe()
    if damage in ("bit_flip", "swapped"):
        assert info["dropped_rows"] == (1 if damage == "bit_flip" else 2)
        assert len(fresh) == 20 - info["dropped_rows"]
    else:
        assert info["unreadable_segments"] == 1 and len(fresh) == 0
    # correcting the dropped sentences again repairs the cache
    fresh.put_many([(s, o) for s, o in pairs if fresh.get(s) is None])
    fresh.flush()
    again = CorrectionCache(tmp_path, "b", "f" * 64)
    assert [again.get(s) for s, _ in pairs] == [o for _, o in pairs]


def test_an_old_segment_without_checks_is_verified_by_its_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from personalir.errors.cache import _segment_digest

    items = {sentence_key("a"): "A.", sentence_key("b"): "B."}
    root = tmp_path / "b-ffffffffffffffff"
    root.mkdir()
    keys = sorted(items)
    good = root / f"seg-{_segment_digest(items)}.parquet"
    pq.write_table(pa.table({"key": keys, "output": [items[k] for k in keys]}), good)
    assert CorrectionCache(tmp_path, "b", "f" * 64).get("a") == "A."
    bad = dict(items)
    bad[sentence_key("a")] = "B."  # content no longer matches the name
    pq.write_table(pa.table({"key": keys, "output": [bad[k] for k in keys]}), good)
    cache = CorrectionCache(tmp_path, "b", "f" * 64)
    assert cache.get("a") is None and cache.describe()["dropped_rows"] == 2


def test_quire_session_asks_for_exact_int8_products():
    """Without VNNI, onnxruntime's default int8 kernels saturate and the corrections would
    depend on the CPU; the session asks for exact products."""
    from personalir.errors.gec.quire import QUANT_PRECISION

    b = QuireBackend({"batch_size": 8, "prefilter": "none", "gates": "package"})
    opts = b.model.session.get_session_options()
    assert opts.get_session_config_entry(QUANT_PRECISION) == "1"
