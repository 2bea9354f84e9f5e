"""Splits, rule vocabulary, sparse vectors and the accounting of set-aside sentences/users."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from personalir.syntax.features import (
    assign_splits,
    build_features,
    fit_vocabulary,
    load_csr,
    save_csr,
    vectorize,
)
from personalir.syntax.parse import PARSED_SCHEMA


def test_splits_have_exact_sizes_and_do_not_depend_on_other_users():
    users = ["a"] * 10 + ["b"] * 31
    labels = assign_splits(users, calib=0.2, test=0.2, seed=5)
    a, b = labels[:10], labels[10:]
    assert (a == "test").sum() == 2 and (a == "calib").sum() == 2 and (a == "train").sum() == 6
    # round(6.2) = 6 test and calib sentences of 31.
    assert (b == "test").sum() == 6 and (b == "calib").sum() == 6 and (b == "train").sum() == 19
    alone = assign_splits(["a"] * 10, calib=0.2, test=0.2, seed=5)
    assert list(alone) == list(a)
    assert list(assign_splits(users, calib=0.2, test=0.2, seed=6)) != list(labels)


def test_vocabulary_min_df_counts_sentences_not_occurrences():
    rules = [["D3|a", "D3|a", "P3|b"], ["P3|b", "D4|c"], ["P3|b"]]
    vocab, df = fit_vocabulary(rules, min_df=2)
    assert vocab == ["P3|b"] and df == [3]
    vocab, df = fit_vocabulary(rules, min_df=1)
    assert vocab == ["P3|b", "D3|a", "D4|c"] and df == [3, 1, 1]


def test_vectors_saturate_counts():
    x = vectorize([["r1", "r1", "r1", "r2", "oov"], []], ["r1", "r2"])
    # count/(1+count): 3 -> 0.75, 1 -> 0.5; the out-of-vocabulary rule is not counted.
    np.testing.assert_allclose(x.toarray(), [[0.75, 0.5], [0.0, 0.0]])


def test_csr_round_trip(tmp_path):
    x = vectorize([["a", "b"], ["b"], []], ["a", "b"])
    save_csr(tmp_path / "x.npz", x)
    y = load_csr(tmp_path / "x.npz")
    assert (x != y).nnz == 0 and y.shape == (3, 2)


def _parsed(rows):
    return pa.table(
        {
            "sentence_id": [r[0] for r in rows],
            "user_id": [r[0].split(":")[0] for r in rows],
            "position": [int(r[0].split(":")[1]) for r in rows],
            "status": [r[1] for r in rows],
            "detail": [""] * len(rows),
            "n_tokens": [3] * len(rows),
            "rules": [r[2] for r in rows],
        },
        schema=PARSED_SCHEMA,
    )


def test_build_features_accounts_for_every_sentence_and_user():
    rows = []
    for u in ("a", "b"):
        for i in range(10):
            rows.append((f"{u}:{i}", "ok", ["D3|common", f"P3|{u}{i % 3}"]))
    rows += [("c:0", "ok", ["D3|common"]), ("c:1", "parse_error", []), ("c:2", "empty", [])]
    rows += [("a:10", "non_english", [])]
    parsed = _parsed(rows)
    sentences = pd.DataFrame(
        {
            "sentence_id": parsed.column("sentence_id").to_pylist(),
            "parent_asin": ["P"] * parsed.num_rows,
        }
    )
    params = {"min_df": 2, "min_sentences_per_user": 5, "split": {"calib": 0.2, "test": 0.2}}
    res = build_features(parsed, sentences, params, seed=1)
    rep = res["report"]
    assert rep["sentences_in"] == 24
    assert rep["dropped_parse_error"] == 1 and rep["dropped_empty"] == 1
    assert rep["dropped_non_english"] == 1
    assert rep["users_too_few_parsed_sentences"] == 1 and "c" in rep["users_dropped"]
    assert rep["dropped_sentences_of_users_with_too_few"] == 1
    assert rep["sentences_out"] == 20 and rep["users_out"] == 2
    assert res["x"].shape == (20, rep["vocabulary_size"])
    assert set(res["index"].column("split").to_pylist()) == {"train", "calib", "test"}


def test_build_features_rejects_misaligned_inputs():
    parsed = _parsed([("a:0", "ok", ["D3|x"])])
    with pytest.raises(ValueError, match="same sentences"):
        build_features(
            parsed,
            pd.DataFrame({"sentence_id": ["b:0"], "parent_asin": ["P"]}),
            {"min_df": 1, "min_sentences_per_user": 1, "split": {"calib": 0.2, "test": 0.2}},
            seed=1,
        )
