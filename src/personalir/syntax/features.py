"""Rule step syntax_features: per-user splits, the rule vocabulary and sparse sentence vectors.

:func:`build_features` keeps the parsed sentences of users with enough of them, splits each
user's sentences, fits the vocabulary and vectorises; every sentence and user it sets aside is
counted in the report.

Splits are per user: a seeded permutation of the user's usable sentences puts
``round(n * test)`` of them in ``test``, ``round(n * calib)`` in ``calib`` and the rest in
``train``. ``train`` fits the rule vocabulary, the SVD, the encoder and every profile; ``calib``
early-stops the encoder and sets the acceptance thresholds; ``test`` is used only by the
attribution evaluation. The vocabulary is fitted on ``train`` only (the reference code used
every sentence; the difference is a few rare rules, and no held-out sentence shapes a feature).
A sentence's feature for a rule is ``count / (1 + count)`` (reference code), so a rule repeated
in one sentence saturates instead of dominating.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

from personalir.common.artifacts import StageInputError, read_user_sentences
from personalir.common.io import atomic_path, read_parquet_table, write_json, write_parquet
from personalir.common.seeding import derive_seed, rng

log = logging.getLogger("personalir.syntax")

SPLITS = ("train", "calib", "test")


def assign_splits(user_ids: Sequence[str], *, calib: float, test: float, seed: int) -> np.ndarray:
    """Split label of each sentence (array of ``"train"|"calib"|"test"``), per user."""
    user_ids = np.asarray(user_ids, dtype=object)
    labels = np.empty(len(user_ids), dtype=object)
    order = np.argsort(user_ids, kind="stable")
    bounds = np.flatnonzero(np.r_[True, user_ids[order][1:] != user_ids[order][:-1], True])
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        rows = order[start:stop]
        n = len(rows)
        perm = rows[rng(seed, "split", user_ids[rows[0]]).permutation(n)]
        n_test = int(round(n * test))
        n_calib = int(round(n * calib))
        labels[perm[:n_test]] = "test"
        labels[perm[n_test : n_test + n_calib]] = "calib"
        labels[perm[n_test + n_calib :]] = "train"
    return labels


def fit_vocabulary(rule_lists: Sequence[Sequence[str]], min_df: int) -> tuple[list[str], list[int]]:
    """Rules present in at least ``min_df`` sentences, sorted by (-df, rule); and their df."""
    df: Counter = Counter()
    for rules in rule_lists:
        df.update(set(rules))
    kept = sorted(((-c, r) for r, c in df.items() if c >= min_df))
    return [r for _, r in kept], [-c for c, _ in kept]


def vectorize(rule_lists: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> sp.csr_matrix:
    """Sparse ``count/(1+count)`` matrix (sentences x vocabulary); out-of-vocabulary rules drop."""
    index = {r: i for i, r in enumerate(vocabulary)}
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for rules in rule_lists:
        counts = Counter(index[r] for r in rules if r in index)
        for col in sorted(counts):
            c = counts[col]
            indices.append(col)
            data.append(c / (1.0 + c))
        indptr.append(len(indices))
    return sp.csr_matrix(
        (
            np.asarray(data, dtype=np.float32),
            np.asarray(indices, dtype=np.int32),
            np.asarray(indptr, dtype=np.int64),
        ),
        shape=(len(rule_lists), len(vocabulary)),
    )


SENTENCE_INDEX_SCHEMA = pa.schema(
    [
        ("row", pa.int32()),
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("parent_asin", pa.string()),
        ("split", pa.string()),
    ]
)


def build_features(parsed: pa.Table, sentences: pd.DataFrame, params: dict, seed: int) -> dict:
    """Select usable sentences and users, split, fit the vocabulary, vectorise."""
    p = parsed.to_pandas()
    if (
        len(p) != len(sentences)
        or not (
            p["sentence_id"].to_numpy() == sentences["sentence_id"].astype(str).to_numpy()
        ).all()
    ):
        raise StageInputError(
            "parsed rules and user sentences do not list the same sentences "
            "in the same order; re-run the parse step"
        )
    p["parent_asin"] = sentences["parent_asin"].astype(str).to_numpy()
    counts: Counter = Counter()
    counts["sentences_in"] = len(p)
    for status, n in p["status"].value_counts().items():
        if status != "ok":
            counts[f"dropped_{status}"] = int(n)
    ok = p[p["status"] == "ok"].copy()
    min_n = params["min_sentences_per_user"]
    per_user = ok.groupby("user_id").size()
    all_users = sorted(set(p["user_id"]))
    too_few = sorted(set(all_users) - set(per_user[per_user >= min_n].index))
    counts["users_in"] = len(all_users)
    counts["users_too_few_parsed_sentences"] = len(too_few)
    dropped_users = {
        u: f"fewer than {min_n} parsed sentences ({int(per_user.get(u, 0))})" for u in too_few
    }
    n_before = len(ok)
    ok = ok[~ok["user_id"].isin(too_few)].reset_index(drop=True)
    counts["dropped_sentences_of_users_with_too_few"] = n_before - len(ok)
    split_cfg = params["split"]
    ok["split"] = assign_splits(
        ok["user_id"].to_numpy(),
        calib=split_cfg["calib"],
        test=split_cfg["test"],
        seed=derive_seed(seed, "syntax-split"),
    )
    train_rules = ok.loc[ok["split"] == "train", "rules"].tolist()
    vocab, df = fit_vocabulary(train_rules, params["min_df"])
    if not vocab:
        raise StageInputError(
            f"empty rule vocabulary (min_df={params['min_df']}, "
            f"{len(train_rules)} training sentences)"
        )
    x = vectorize(ok["rules"].tolist(), vocab)
    nonzero = np.diff(x.indptr) > 0
    counts["dropped_no_vocabulary_rule"] = int((~nonzero).sum())
    ok = ok[nonzero].reset_index(drop=True)
    x = x[np.flatnonzero(nonzero)]
    # A user must keep at least one sentence in each split after the drops above.
    split_counts = ok.groupby(["user_id", "split"]).size().unstack(fill_value=0)
    for s in SPLITS:
        if s not in split_counts:
            split_counts[s] = 0
    empty_split = split_counts.index[(split_counts[list(SPLITS)] == 0).any(axis=1)].tolist()
    for u in empty_split:
        dropped_users[u] = "a split became empty after dropping sentences without rules"
    counts["users_empty_split"] = len(empty_split)
    keep = ~ok["user_id"].isin(empty_split).to_numpy()
    counts["dropped_sentences_of_users_with_empty_split"] = int((~keep).sum())
    ok = ok[keep].reset_index(drop=True)
    x = x[np.flatnonzero(keep)]
    counts["sentences_out"] = len(ok)
    counts["users_out"] = int(ok["user_id"].nunique())
    for s in SPLITS:
        counts[f"sentences_{s}"] = int((ok["split"] == s).sum())
    dropped_total = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    assert counts["sentences_in"] == counts["sentences_out"] + dropped_total, counts
    index = pa.table(
        {
            "row": np.arange(len(ok), dtype=np.int32),
            "sentence_id": ok["sentence_id"].tolist(),
            "user_id": ok["user_id"].tolist(),
            "parent_asin": ok["parent_asin"].tolist(),
            "split": ok["split"].tolist(),
        },
        schema=SENTENCE_INDEX_SCHEMA,
    )
    kinds = [r.split("|", 1)[0] for r in vocab]
    vocab_table = pa.table({"rule": vocab, "kind": kinds, "df_train": df})
    report = {
        **{k: int(v) for k, v in sorted(counts.items())},
        "vocabulary_size": len(vocab),
        "vocabulary_by_kind": dict(sorted(Counter(kinds).items())),
        "min_df": params["min_df"],
        "users_dropped": dict(sorted(dropped_users.items())),
    }
    return {"x": x, "index": index, "vocab": vocab_table, "report": report}


def save_csr(path, x: sp.csr_matrix) -> None:
    """CSR as NPZ of plain arrays (``data``, ``indices``, ``indptr``, ``shape``; no pickles)."""
    with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(
            fh,
            data=x.data,
            indices=x.indices,
            indptr=x.indptr,
            shape=np.asarray(x.shape, dtype=np.int64),
        )


def load_csr(path) -> sp.csr_matrix:
    with np.load(path, allow_pickle=False) as z:
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))


def run_features(parsed_path, sentences_path, out: dict, params: dict, seed: int) -> dict:
    res = build_features(
        read_parquet_table(parsed_path), read_user_sentences(sentences_path), params, seed
    )
    save_csr(out["vectors"], res["x"])
    write_parquet(out["index"], res["index"])
    write_parquet(out["vocab"], res["vocab"])
    write_json(out["report"], res["report"])
    log.info(
        "features: %d sentences of %d users, vocabulary %d",
        res["report"]["sentences_out"],
        res["report"]["users_out"],
        res["report"]["vocabulary_size"],
    )
    return res["report"]
