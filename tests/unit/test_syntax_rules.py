"""Rule extraction, the language check, batched/multi-process parsing and the parse cache."""

from __future__ import annotations

import pandas as pd
import pytest
from spacy.tokens import Doc
from spacy.vocab import Vocab

from personalir.common.artifacts import StageInputError, read_user_sentences
from personalir.syntax.parse import parse_sentences
from personalir.syntax.rules import (
    ParseCache,
    ParseResult,
    ParseSettings,
    load_pipeline,
    looks_non_english,
    parse_texts,
    pipeline_fingerprint,
    rules_of_doc,
    text_key,
)


def _doc(words, pos, deps, heads):
    return Doc(Vocab(), words=words, pos=pos, deps=deps, heads=heads)


def test_rules_of_a_hand_built_parse():
    # "I love this strap ." with love as root; heads are absolute token indices.
    doc = _doc(
        ["I", "love", "this", "strap", "."],
        ["PRON", "VERB", "DET", "NOUN", "PUNCT"],
        ["nsubj", "ROOT", "det", "dobj", "punct"],
        [1, 1, 3, 1, 1],
    )
    rules = rules_of_doc(doc)
    # Golden values worked out by hand from the definitions in personalir.syntax.rules.
    assert sorted(r for r in rules if r.startswith("D3")) == sorted(
        ["D3|VERB|nsubj|PRON", "D3|NOUN|det|DET", "D3|VERB|dobj|NOUN", "D3|VERB|punct|PUNCT"]
    )
    assert [r for r in rules if r.startswith("D4")] == ["D4|VERB|NOUN|det|DET"]
    assert [r for r in rules if r.startswith("P3")] == [
        "P3|PRON|VERB|DET",
        "P3|VERB|DET|NOUN",
        "P3|DET|NOUN|PUNCT",
    ]
    assert len(rules) == 8


def test_rule_kinds_select_families_and_single_token_has_none():
    doc = _doc(["Works", "well"], ["VERB", "ADV"], ["ROOT", "advmod"], [0, 0])
    assert rules_of_doc(doc, ("D3",)) == ["D3|VERB|advmod|ADV"]
    assert rules_of_doc(doc, ("P3",)) == []
    assert rules_of_doc(_doc(["Wow"], ["INTJ"], ["ROOT"], [0])) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I love this guitar strap.", False),
        ("Great strings, good price", False),
        ("I bought it at the Casa del Sol store in La Jolla.", False),
        ("Muy buenas cuerdas, el precio es excelente.", True),
        ("Ce produit est très bien, je le recommande.", True),
        ("Das ist ein sehr gutes Produkt und ich bin zufrieden.", True),
        ("Это отличная гитара.", True),
        ("これは素晴らしいギターです。", True),
        ("1234 5678", False),
    ],
)
def test_language_check(text, expected):
    assert looks_non_english(text) is expected


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline(ParseSettings())


def test_parse_with_the_packaged_pipeline(nlp):
    (res,) = parse_texts(["I love this guitar strap."], ParseSettings(), nlp=nlp)
    assert res.status == "ok" and res.n_tokens == 6
    # en_core_web_sm 3.8.0 parses this as nsubj/ROOT/det/compound/dobj/punct.
    assert "D3|VERB|nsubj|PRON" in res.rules and "D4|VERB|NOUN|compound|NOUN" in res.rules


def test_multiprocess_parse_equals_single_process(nlp):
    texts = [f"The strap number {i} is very comfortable." for i in range(12)] + ["Wow"]
    one = parse_texts(texts, ParseSettings(batch_size=4), nlp=nlp)
    two = parse_texts(texts, ParseSettings(batch_size=4, n_process=2), nlp=nlp)
    assert [(r.status, r.rules) for r in one] == [(r.status, r.rules) for r in two]
    assert one[-1].status == "no_rules"


class _FailingPipeline:
    """Stands in for a pipeline that raises on one sentence (isolated per sentence)."""

    def __init__(self, nlp):
        self.nlp = nlp

    def pipe(self, texts, batch_size):
        if any("BOOM" in t for t in texts):
            raise RuntimeError("batch failed")
        return self.nlp.pipe(texts, batch_size=batch_size)

    def __call__(self, text):
        if "BOOM" in text:
            raise RuntimeError("cannot parse")
        return self.nlp(text)

    @property
    def meta(self):
        return self.nlp.meta

    @property
    def pipe_names(self):
        return self.nlp.pipe_names


def _sentences(texts):
    return pd.DataFrame(
        {
            "sentence_id": [f"u:{i}" for i in range(len(texts))],
            "user_id": ["u"] * len(texts),
            "position": list(range(len(texts))),
            "parent_asin": ["P"] * len(texts),
            "text": texts,
        }
    )


def test_every_sentence_gets_a_status(nlp, tmp_path):
    texts = [
        "The strap is comfortable.",
        "   ",
        "El precio es muy bueno y la calidad también.",
        "This BOOM breaks the parser.",
        "Wow",
        "The strap is comfortable.",
    ]
    table, report = parse_sentences(
        _sentences(texts), ParseSettings(), nlp=_FailingPipeline(nlp), cache_dir=tmp_path
    )
    assert table.column("status").to_pylist() == [
        "ok",
        "empty",
        "non_english",
        "parse_error",
        "no_rules",
        "ok",
    ]
    assert report["status"] == {
        "ok": 2,
        "empty": 1,
        "non_english": 1,
        "parse_error": 1,
        "no_rules": 1,
    }
    assert report["parse_errors"][0]["sentence_id"] == "u:3"
    assert "cannot parse" in report["parse_errors"][0]["detail"]
    assert report["duplicate_texts_reused"] == 1
    # Second run: every parsed sentence (3, one text twice) comes from the cache; the parse
    # error is not cached, so it is retried.
    _, again = parse_sentences(
        _sentences(texts), ParseSettings(), nlp=_FailingPipeline(nlp), cache_dir=tmp_path
    )
    assert again["from_cache"] == 3 and again["parsed_now"] == 1


def test_keep_non_english_parses_and_flags(nlp):
    table, report = parse_sentences(
        _sentences(["El precio es muy bueno y la calidad también."]),
        ParseSettings(non_english="keep"),
        nlp=nlp,
    )
    assert table.column("status").to_pylist() == ["ok"]
    assert report["non_english_kept"] == 1


def test_cache_is_keyed_by_pipeline_fingerprint(nlp, tmp_path):
    settings = ParseSettings()
    fp = pipeline_fingerprint(nlp, settings)
    assert fp != pipeline_fingerprint(nlp, ParseSettings(rule_kinds=("D3",)))
    cache = ParseCache(tmp_path, fp)
    cache.add([text_key("a b c")], [ParseResult("ok", ["D3|X|y|Z"], 3)])
    assert cache.load()[text_key("a b c")].rules == ["D3|X|y|Z"]
    assert ParseCache(tmp_path, "other").load() == {}


def test_bad_input_names_file_and_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"sentence_id": ["a:0"], "user_id": ["a"]}), path)
    with pytest.raises(StageInputError, match="missing column 'position'"):
        read_user_sentences(path)
    pq.write_table(
        pa.table(
            {
                "sentence_id": ["a:0", "a:1"],
                "user_id": ["a", "a"],
                "position": [0, 1],
                "parent_asin": ["P", "P"],
                "text": ["fine text here", None],
            }
        ),
        path,
    )
    with pytest.raises(StageInputError, match=r"s\.parquet: row 1: column 'text' is null"):
        read_user_sentences(path)
