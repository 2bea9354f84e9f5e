"""The syntax stage's steps, each reading and writing files (the workflow scripts call these).

parse -> features -> encoder -> profiles -> attribution, then the cross-domain table and
figures. Each step validates its input and names the file (and row) of anything malformed;
every sentence or user that is set aside is counted in the step's JSON report.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from personalir.common.io import atomic_path, read_json, write_json, write_parquet, write_text
from personalir.common.seeding import derive_seed
from personalir.syntax.features import SPLITS, assign_splits, fit_vocabulary, vectorize
from personalir.syntax.rules import (
    STATUSES,
    ParseCache,
    ParseResult,
    ParseSettings,
    load_pipeline,
    looks_non_english,
    parse_texts,
    pipeline_fingerprint,
    text_key,
)

log = logging.getLogger("personalir.syntax")


class StageInputError(ValueError):
    """An input file is missing a column, has a null or a wrong value (file and row named)."""


def _require(table: pa.Table, path: str | Path, columns: dict[str, tuple]) -> None:
    """Check columns exist, have an accepted type and hold no nulls."""
    for name, types in columns.items():
        if name not in table.column_names:
            raise StageInputError(
                f"{path}: missing column {name!r} (has: {', '.join(table.column_names)})"
            )
        col = table.column(name)
        if not any(t(col.type) if callable(t) else col.type == t for t in types):
            raise StageInputError(f"{path}: column {name!r} has type {col.type}")
        if col.null_count:
            row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise StageInputError(f"{path}: row {row}: column {name!r} is null")


_STR = (pa.types.is_string, pa.types.is_large_string)
_INT = (pa.types.is_integer,)
_BOOL = (pa.types.is_boolean,)


def read_user_sentences(path: str | Path) -> pd.DataFrame:
    table = pq.read_table(path)
    _require(
        table,
        path,
        {"sentence_id": _STR, "user_id": _STR, "position": _INT, "parent_asin": _STR, "text": _STR},
    )
    df = table.select(["sentence_id", "user_id", "position", "parent_asin", "text"]).to_pandas()
    dup = df["sentence_id"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise StageInputError(f"{path}: row {row}: duplicate sentence_id {df.sentence_id[row]!r}")
    return df


def read_reviewers(path: str | Path) -> pd.DataFrame:
    table = pq.read_table(path)
    _require(table, path, {"parent_asin": _STR, "user_id": _STR, "selected_user": _BOOL})
    return table.select(["parent_asin", "user_id", "selected_user"]).to_pandas()


# ============================================================================ parse
PARSED_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("position", pa.int32()),
        ("status", pa.string()),
        ("detail", pa.string()),
        ("n_tokens", pa.int32()),
        ("rules", pa.list_(pa.string())),
    ]
)


def parse_sentences(
    sentences: pd.DataFrame,
    settings: ParseSettings,
    *,
    cache_dir: str | Path | None = None,
    nlp=None,
) -> tuple[pa.Table, dict]:
    """Rules of every sentence plus a report; statuses account for every input row."""
    t0 = time.perf_counter()
    texts = [str(t).strip() for t in sentences["text"]]
    results: list[ParseResult | None] = [None] * len(texts)
    to_parse: list[int] = []
    for i, text in enumerate(texts):
        if not text:
            results[i] = ParseResult("empty")
        elif settings.non_english == "drop" and looks_non_english(text):
            results[i] = ParseResult("non_english", detail="language check")
        else:
            to_parse.append(i)
    nlp = nlp if nlp is not None else load_pipeline(settings)
    cache = ParseCache(cache_dir, pipeline_fingerprint(nlp, settings)) if cache_dir else None
    keys = {i: text_key(texts[i]) for i in to_parse}
    cached = cache.load(set(keys.values())) if cache else {}
    hits = [i for i in to_parse if keys[i] in cached]
    for i in hits:
        results[i] = cached[keys[i]]
    # Each distinct text is parsed once (sample worlds and real reviews repeat sentences).
    misses: dict[str, int] = {}
    for i in to_parse:
        if keys[i] not in cached:
            misses.setdefault(keys[i], i)
    miss_keys = list(misses)
    t_parse = time.perf_counter()
    parsed = parse_texts([texts[misses[k]] for k in miss_keys], settings, nlp=nlp)
    parse_seconds = time.perf_counter() - t_parse
    by_key = dict(zip(miss_keys, parsed, strict=True))
    for i in to_parse:
        if results[i] is None:
            results[i] = by_key[keys[i]]
    if cache is not None:
        cache.add(miss_keys, parsed)
    if settings.non_english == "keep":
        for i in to_parse:
            if looks_non_english(texts[i]):
                results[i].detail = results[i].detail or "non-English (kept)"
    status_counts = Counter(r.status for r in results)
    table = pa.table(
        {
            "sentence_id": sentences["sentence_id"].astype(str).tolist(),
            "user_id": sentences["user_id"].astype(str).tolist(),
            "position": sentences["position"].astype("int32").tolist(),
            "status": [r.status for r in results],
            "detail": [r.detail for r in results],
            "n_tokens": [r.n_tokens for r in results],
            "rules": [r.rules if r.status == "ok" else [] for r in results],
        },
        schema=PARSED_SCHEMA,
    )
    n_kept_foreign = sum(1 for r in results if r.detail == "non-English (kept)")
    report = {
        "sentences": len(texts),
        "status": {s: int(status_counts.get(s, 0)) for s in STATUSES},
        "non_english_kept": n_kept_foreign,
        "parsed_now": len(miss_keys),
        "from_cache": len(hits),
        "duplicate_texts_reused": len(to_parse) - len(hits) - len(miss_keys),
        "parse_seconds": round(parse_seconds, 3),
        "sentences_per_second": round(len(miss_keys) / parse_seconds, 1) if miss_keys else None,
        "total_seconds": round(time.perf_counter() - t0, 3),
        "pipeline": settings.pipeline,
        "pipeline_version": nlp.meta.get("version"),
        "pipes": list(nlp.pipe_names),
        "n_process": settings.n_process,
        "batch_size": settings.batch_size,
        "parse_errors": [
            {"sentence_id": sid, "detail": r.detail}
            for sid, r in zip(sentences["sentence_id"], results, strict=True)
            if r.status == "parse_error"
        ][:100],
    }
    assert sum(report["status"].values()) == len(texts), report
    return table, report


def run_parse(sentences_path, out_path, report_path, settings: ParseSettings, cache_dir=None):
    sentences = read_user_sentences(sentences_path)
    table, report = parse_sentences(sentences, settings, cache_dir=cache_dir)
    report["input"] = str(sentences_path)
    write_parquet(out_path, table)
    write_json(report_path, report)
    log.info("parsed %d sentences: %s", report["sentences"], report["status"])
    return report


# ============================================================================ features
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
        pq.read_table(parsed_path), read_user_sentences(sentences_path), params, seed
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


# ============================================================================ encoder
def _labels(index: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    users = sorted(index["user_id"].unique())
    code = {u: i for i, u in enumerate(users)}
    return index["user_id"].map(code).to_numpy(np.int64), users


def product_user_labels(reviewers: pd.DataFrame, users: list[str]) -> dict[str, list[int]]:
    """Products -> labels of the modelled users who reviewed them."""
    code = {u: i for i, u in enumerate(users)}
    out: dict[str, set[int]] = defaultdict(set)
    for product, user in zip(reviewers["parent_asin"], reviewers["user_id"], strict=True):
        if user in code:
            out[str(product)].add(code[user])
    return {p: sorted(v) for p, v in sorted(out.items())}


EMBEDDING_SCHEMA_FIELDS = [
    ("sentence_id", pa.string()),
    ("user_id", pa.string()),
    ("split", pa.string()),
]


def run_encoder(
    vectors_path,
    index_path,
    vocab_path,
    reviewers_path,
    out: dict,
    params: dict,
    seed: int,
    threads: int = 1,
) -> dict:
    import torch

    from personalir.syntax.encoder import EncoderSettings, train_encoder

    torch.set_num_threads(max(1, threads))
    x = load_csr(vectors_path)
    index = pq.read_table(index_path).to_pandas()
    vocab = pq.read_table(vocab_path).column("rule").to_pylist()
    if x.shape != (len(index), len(vocab)):
        raise StageInputError(
            f"{vectors_path}: shape {x.shape} does not match {len(index)} "
            f"indexed sentences x {len(vocab)} rules"
        )
    labels, users = _labels(index)
    product_users = product_user_labels(read_reviewers(reviewers_path), users)
    settings = EncoderSettings.from_config(params)
    t0 = time.perf_counter()
    enc = train_encoder(
        x,
        labels,
        index["split"].to_numpy(),
        index["parent_asin"].to_numpy(),
        product_users,
        settings,
        seed=derive_seed(seed, "syntax-encoder"),
        log=log,
    )
    seconds = time.perf_counter() - t0
    enc.save(out["weights"], out["meta"], vocab)
    z = enc.encode(x)
    dim = z.shape[1]
    emb = pa.table(
        {
            "sentence_id": index["sentence_id"].tolist(),
            "user_id": index["user_id"].tolist(),
            "split": index["split"].tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(z.reshape(-1), pa.float32()), dim
            ),
        }
    )
    write_parquet(out["embeddings"], emb)
    curve = pd.DataFrame(enc.history)
    with atomic_path(out["curve"], suffix=".csv") as tmp:
        curve.to_csv(tmp, index=False, float_format="%.6f")
    n_cohorts = sum(1 for v in product_users.values() if len(v) >= 2)
    report = {
        "best_epoch": enc.best_epoch,
        "stopped_early": enc.stopped_early,
        "epochs_run": len(enc.history) - 1,
        "seconds": round(seconds, 2),
        "cohort_products": n_cohorts,
        "users": len(users),
        "dim": dim,
        "svd_dim": int(enc.svd.components.shape[0]),
    }
    log.info("encoder: %s", report)
    return report


def read_embeddings(path) -> tuple[pd.DataFrame, np.ndarray]:
    table = pq.read_table(path)
    _require(
        table,
        path,
        {
            "sentence_id": _STR,
            "user_id": _STR,
            "split": _STR,
            "embedding": (pa.types.is_fixed_size_list,),
        },
    )
    col = table.column("embedding").combine_chunks()
    z = col.values.to_numpy().reshape(len(col), col.type.list_size).astype(np.float64)
    return table.drop(["embedding"]).to_pandas(), z


# ============================================================================ profiles
def fit_profiles(meta: pd.DataFrame, z: np.ndarray, params: dict) -> tuple[pa.Table, dict]:
    """Rank-one + diagonal profile of every user, by MLE and by the eigenpair heuristic,
    with acceptance thresholds from the ``calib`` quantile of the squared distance."""
    from personalir.syntax.gaussian import (
        acceptance_threshold,
        fit_eigenpair_heuristic,
        fit_factor_analysis_many,
        gaussian_loglik,
        reference_distance_sq,
    )

    q = params["threshold_quantile"]
    floor = params["var_floor"]
    rows: dict[str, list] = defaultdict(list)
    summary: dict[str, list] = defaultdict(list)
    not_converged = 0
    split = meta["split"].to_numpy()
    groups = meta.groupby("user_id", sort=True).indices
    parts = {user: tuple(idx[split[idx] == s] for s in SPLITS) for user, idx in groups.items()}
    mles, infos = fit_factor_analysis_many(
        [z[p[0]] for p in parts.values()],
        1,
        var_floor=floor,
        max_iter=params["em_max_iter"],
        tol=params["em_tol"],
    )
    for (user, (tr, ca, te)), mle, info in zip(parts.items(), mles, infos, strict=True):
        not_converged += not info["converged"]
        heur = fit_eigenpair_heuristic(z[tr], var_floor=floor)
        rows["user_id"].append(user)
        rows["n_train"].append(len(tr))
        rows["n_calib"].append(len(ca))
        rows["mean"].append(mle.mean.astype(np.float32))
        for tag, model, dist in (
            ("mle", mle, mle.mahalanobis_sq),
            ("eigenpair", heur, lambda x, m=heur: reference_distance_sq(m, x)),
        ):
            lam, v = model.rank_one_parts()
            thr = acceptance_threshold(dist(z[ca]), q)
            rows[f"{tag}_lambda"].append(lam)
            rows[f"{tag}_direction"].append(v.astype(np.float32))
            rows[f"{tag}_noise_var"].append(model.noise_var.astype(np.float32))
            rows[f"{tag}_threshold"].append(thr)
            n_tr = len(tr)
            summary[f"{tag}_train_loglik"].append(
                gaussian_loglik(model.mean, model.covariance(), z[tr]) / n_tr
            )
            summary[f"{tag}_test_loglik"].append(
                gaussian_loglik(model.mean, model.covariance(), z[te]) / len(te)
            )
            summary[f"{tag}_test_accept"].append(float((dist(z[te]) <= thr).mean()))
        rows["em_iterations"].append(info["n_iter"])
    dim = z.shape[1]

    def vec(name):
        return pa.FixedSizeListArray.from_arrays(
            pa.array(np.concatenate(rows[name]) if rows[name] else [], pa.float32()), dim
        )

    table = pa.table(
        {
            "user_id": pa.array(rows["user_id"], pa.string()),
            "n_train": pa.array(rows["n_train"], pa.int32()),
            "n_calib": pa.array(rows["n_calib"], pa.int32()),
            "mean": vec("mean"),
            **{
                f"{t}_{c}": (
                    vec(f"{t}_{c}")
                    if c in ("direction", "noise_var")
                    else pa.array(rows[f"{t}_{c}"], pa.float64())
                )
                for t in ("mle", "eigenpair")
                for c in ("lambda", "direction", "noise_var", "threshold")
            },
            "em_iterations": pa.array(rows["em_iterations"], pa.int32()),
        }
    )
    report = {
        "users": len(rows["user_id"]),
        "threshold_quantile": q,
        "em_not_converged": int(not_converged),
        "distance": {
            "mle": "Mahalanobis of lambda v v^T + diag(sigma^2)",
            "eigenpair": "reference code: (v.d)^2/lambda + sum r^2/sigma^2",
        },
        **{f"mean_{k}": float(np.mean(v)) for k, v in sorted(summary.items())},
        "users_mle_train_loglik_ge_eigenpair": int(
            np.sum(
                np.asarray(summary["mle_train_loglik"])
                >= np.asarray(summary["eigenpair_train_loglik"]) - 1e-9
            )
        ),
    }
    return table, report


def run_profiles(embeddings_path, out: dict, params: dict) -> dict:
    meta, z = read_embeddings(embeddings_path)
    table, report = fit_profiles(meta, z, params)
    write_parquet(out["profiles"], table)
    write_json(out["report"], report)
    log.info("profiles: %s", report)
    return report


# ============================================================================ attribution
def model_params(params: dict) -> dict:
    return {
        "var_floor": params["var_floor"],
        "k": params["knn_k"],
        "em_max_iter": params["em_max_iter"],
        "em_tol": params["em_tol"],
    }


def evaluate_attribution(
    meta: pd.DataFrame, z: np.ndarray, reviewers: pd.DataFrame, params: dict, seed: int
) -> dict:
    from personalir.syntax.models import PROFILE_MODELS, build_model
    from personalir.syntax.protocols import (
        FPR_GRID,
        MEASURES,
        bootstrap_ci,
        competitor_sets,
        evaluate_model,
        make_plan,
    )

    users = sorted(meta["user_id"].unique())
    code = {u: i for i, u in enumerate(users)}
    label = meta["user_id"].map(code).to_numpy(np.int64)
    split = meta["split"].to_numpy()
    train, test = split == "train", split == "test"
    comps = competitor_sets(product_user_labels(reviewers, users), len(users))
    test_ids = meta["sentence_id"].to_numpy()[test]
    eval_seed = derive_seed(seed, "syntax-attribution")
    plan = make_plan(
        label[test], test_ids, comps, eval_seed, max_competitors=params["max_competitors"]
    )
    rows, user_rows, roc_rows = [], [], []
    for name in params["models"]:
        t0 = time.perf_counter()
        model = build_model(name, model_params(params)).fit(z[train], label[train])
        res = evaluate_model(model, z[test], plan)
        row = {"model": name, "label": PROFILE_MODELS.get(name).label}
        for m in MEASURES:
            vals = np.array([res["per_user"][m][int(u)] for u in plan.evaluated])
            finite = vals[np.isfinite(vals)]
            row[m] = float(finite.mean()) if finite.size else float("nan")
            lo, hi = bootstrap_ci(
                finite, n_boot=params["bootstrap"], level=0.95, seed=derive_seed(eval_seed, name, m)
            )
            row[f"{m}_ci_low"], row[f"{m}_ci_high"] = lo, hi
        row["users"] = len(plan.evaluated)
        row["seconds"] = round(time.perf_counter() - t0, 3)
        rows.append(row)
        for u in plan.evaluated:
            user_rows.append(
                {
                    "model": name,
                    "user_id": users[int(u)],
                    **{m: res["per_user"][m][int(u)] for m in MEASURES},
                    "n_test": len(plan.test_rows_by_user[int(u)]),
                    "n_competitors": len(plan.competitors[int(u)]),
                }
            )
        for fpr, tpr in zip(FPR_GRID, res["roc"], strict=True):
            roc_rows.append({"model": name, "fpr": round(float(fpr), 4), "tpr": float(tpr)})
    report = {
        "users": len(users),
        "users_evaluated": len(plan.evaluated),
        "users_without_competitor": [users[int(u)] for u in plan.skipped_no_competitor],
        "users_without_test_sentences": [users[int(u)] for u in plan.skipped_no_test],
        "test_sentences": int(test.sum()),
        "max_competitors": params["max_competitors"],
        "users_with_competitors_subsampled": int(plan.n_subsampled),
        "mean_competitors": float(np.mean([len(plan.competitors[int(u)]) for u in plan.evaluated]))
        if len(plan.evaluated)
        else float("nan"),
    }
    return {
        "summary": pd.DataFrame(rows),
        "users": pd.DataFrame(user_rows),
        "roc": pd.DataFrame(roc_rows),
        "report": report,
    }


def run_attribution(
    embeddings_path, reviewers_path, out: dict, params: dict, seed: int, domain: str
) -> dict:
    meta, z = read_embeddings(embeddings_path)
    res = evaluate_attribution(meta, z, read_reviewers(reviewers_path), params, seed)
    summary = res["summary"]
    summary.insert(0, "domain", domain)
    with atomic_path(out["summary"], suffix=".csv") as tmp:
        summary.to_csv(tmp, index=False, float_format="%.6f")
    write_parquet(out["users"], res["users"])
    with atomic_path(out["roc"], suffix=".csv") as tmp:
        res["roc"].to_csv(tmp, index=False, float_format="%.6f")
    write_json(out["report"], res["report"])
    log.info(
        "attribution %s:\n%s",
        domain,
        summary[["model", "balanced", "auroc", "full_profile"]].to_string(index=False),
    )
    return res["report"]


# ============================================================================ table
def attribution_table(summaries: list[pd.DataFrame], domains: list[str]) -> pd.DataFrame:
    """Long table of every domain plus the equal-weight average over domains."""
    from personalir.syntax.protocols import MEASURES

    df = pd.concat(summaries, ignore_index=True)
    missing = sorted(set(domains) - set(df["domain"]))
    if missing:
        raise StageInputError(f"attribution results missing for domains {missing}")
    order = list(dict.fromkeys(df["model"]))
    avg = df.groupby("model", sort=False)[list(MEASURES)].mean().reindex(order).reset_index()
    avg.insert(0, "domain", "Average")
    avg["label"] = df.drop_duplicates("model").set_index("model").loc[order, "label"].to_numpy()
    avg["users"] = df.groupby("model", sort=False)["users"].sum().reindex(order).to_numpy()
    return pd.concat([df, avg], ignore_index=True)


def attribution_latex(table: pd.DataFrame, *, config_label: str, domains: list[str]) -> str:
    """Table: one row per model, balanced / AUROC / full-profile per domain and the average."""
    from personalir.common.latex import escape

    cols = [*domains, "Average"]
    models = list(dict.fromkeys(table["model"]))
    labels = table.drop_duplicates("model").set_index("model")["label"]
    best = {}
    for d in cols:
        sub = table[table["domain"] == d].set_index("model")
        for m in ("balanced", "auroc", "full_profile"):
            best[(d, m)] = sub[m].max()
    short = {"Baby_Products": "Baby", "Musical_Instruments": "Music", "Video_Games": "Games"}
    head1 = " & ".join(rf"\multicolumn{{3}}{{c}}{{{escape(short.get(d, d))}}}" for d in cols)
    rules = "".join(rf"\cmidrule(lr){{{2 + 3 * i}-{4 + 3 * i}}}" for i in range(len(cols)))
    head2 = " & ".join(["Bal.", "AUROC", "Full"] * len(cols))
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{User attribution from syntactic profiles: balanced attribution (\%, chance "
        rf"50), user AUROC and full-profile attribution (\%, chance 50) on held-out sentences, "
        rf"competitors drawn from reviewers of the same products. Configuration: "
        rf"\texttt{{{escape(config_label)}}}.}}",
        r"\label{tab:syntax-attribution}",
        r"\resizebox{\linewidth}{!}{%",
        rf"\begin{{tabular}}{{l{'rrr' * len(cols)}}}",
        r"\toprule",
        rf"Profile & {head1} \\",
        rules,
        rf" & {head2} \\",
        r"\midrule",
    ]
    for model in models:
        cells = [escape(labels[model])]
        for d in cols:
            row = table[(table["domain"] == d) & (table["model"] == model)].iloc[0]
            for m, fmt in (("balanced", "{:.2f}"), ("auroc", "{:.4f}"), ("full_profile", "{:.2f}")):
                value = row[m] * (100 if m != "auroc" else 1)
                cell = fmt.format(value)
                if np.isclose(row[m], best[(d, m)]):
                    cell = rf"\textbf{{{cell}}}"
                cells.append(cell)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{table}", ""]
    return "\n".join(lines)


def stats_latex(stats: pd.DataFrame, *, config_label: str) -> str:
    from personalir.common.latex import dataframe_to_latex

    return dataframe_to_latex(
        stats,
        caption=(
            "Syntactic rules per domain: sentences parsed and set aside, users "
            "modelled and the rule vocabulary. Configuration: " + config_label + "."
        ),
        label="tab:syntax-stats",
        floatfmt=".0f",
    )


def run_table(
    domains: list[str],
    summaries: list,
    parse_reports: list,
    feature_reports: list,
    out: dict,
    config_label: str,
) -> pd.DataFrame:
    table = attribution_table([pd.read_csv(p) for p in summaries], domains)
    with atomic_path(out["csv"], suffix=".csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.6f")
    tex = attribution_latex(table, config_label=config_label, domains=domains)
    for key in ("tex", "paper_tex"):
        write_text(out[key], tex)
    stats = []
    for d, pr, fr in zip(domains, parse_reports, feature_reports, strict=True):
        p, f = read_json(pr), read_json(fr)
        stats.append(
            {
                "Domain": d,
                "Sentences": p["sentences"],
                "Parsed": p["status"]["ok"],
                "Set aside": p["sentences"] - p["status"]["ok"],
                "Users": f["users_out"],
                "Users set aside": f["users_in"] - f["users_out"],
                "Rules": f["vocabulary_size"],
            }
        )
    stats_df = pd.DataFrame(stats)
    with atomic_path(out["stats_csv"], suffix=".csv") as tmp:
        stats_df.to_csv(tmp, index=False)
    stats_tex = stats_latex(stats_df, config_label=config_label)
    for key in ("stats_tex", "paper_stats_tex"):
        write_text(out[key], stats_tex)
    return table
