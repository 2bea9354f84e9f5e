"""The errors stage's steps as functions of tables and config sections (no file paths).

The workflow entry points (``workflow_scripts/errors_*.py``) read inputs, call one of these,
and write the results atomically.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from personalir.common.bootstrap import bootstrap_replicates, percentile_interval
from personalir.data.text import count_words
from personalir.errors.edits import extract_edits
from personalir.errors.gec import build_backends, correct_corpus
from personalir.errors.inject import Constraints, Injector
from personalir.errors.profiles import ProfileParams, ProfileSet, build_profiles
from personalir.errors.sampling import clean_texts, evaluate_sampling, split_profiles

log = logging.getLogger(__name__)

CORRECTION_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("position", pa.int32()),
        ("text", pa.string()),
        ("corrected", pa.string()),
        ("changed_by", pa.string()),
    ]
)


def run_correct(
    sentences: pd.DataFrame, gec: dict, *, threads: int, cache_dir: str | Path | None
) -> tuple[pa.Table, dict]:
    """Correct every user sentence with the configured backend chain."""
    t0, c0 = time.perf_counter(), time.process_time()
    sentences = sentences.sort_values(["user_id", "position"], kind="stable")
    backends = build_backends(gec, threads=threads)
    load_s = time.perf_counter() - t0
    corpus = list(zip(sentences["user_id"], sentences["text"], strict=True))
    corrected, changed_by, runs = correct_corpus(
        backends,
        corpus,
        cache_root=cache_dir if gec["cache"] else None,
        chunk_size=gec["chunk_size"],
    )
    table = pa.table(
        {
            "sentence_id": sentences["sentence_id"].tolist(),
            "user_id": sentences["user_id"].tolist(),
            "position": sentences["position"].astype("int32").tolist(),
            "text": sentences["text"].tolist(),
            "corrected": corrected,
            "changed_by": [",".join(c) for c in changed_by],
        },
        schema=CORRECTION_SCHEMA,
    )
    n = len(corpus)
    total_s = time.perf_counter() - t0
    report = {
        "sentences": n,
        "users": int(sentences["user_id"].nunique()),
        "sentences_changed": sum(1 for c in changed_by if c),
        "backends": gec["backends"],
        "load_seconds": round(load_s, 3),
        "seconds": round(total_s, 3),
        "cpu_seconds": round(time.process_time() - c0, 3),
        "sentences_per_second": round(n / total_s, 2) if total_s > 0 else None,
        "runs": [r.as_dict() for r in runs],
    }
    return table, report


def run_edits(
    corrections: pd.DataFrame,
    section: dict,
    *,
    bootstrap: dict | None = None,
    seed: int | None = None,
) -> tuple[pa.Table, pa.Table, dict]:
    """Edits, word contexts and their report; with ``bootstrap`` (errors.statistics.bootstrap:
    samples, confidence, seed) the report adds bootstrap intervals (users resampled) of the
    per-1000-words rates, ``seed`` standing in for a null ``bootstrap.seed``."""
    rows = corrections[["sentence_id", "user_id", "position", "text"]].to_dict("records")
    t0, c0 = time.perf_counter(), time.process_time()
    edits, words, report = extract_edits(
        rows,
        corrected=corrections["corrected"].tolist(),
        model=section["spacy_model"],
        batch_size=section["batch_size"],
    )
    if bootstrap:
        boot_seed = seed if bootstrap.get("seed") is None else bootstrap["seed"]
        if boot_seed is None:
            raise ValueError("edit-rate intervals need a seed (bootstrap.seed or the run's seed)")
        report.update(
            rate_intervals(
                rows,
                edits,
                samples=bootstrap["samples"],
                confidence=bootstrap["confidence"],
                seed=boot_seed,
            )
        )
    report["seconds"] = round(time.perf_counter() - t0, 3)
    report["cpu_seconds"] = round(time.process_time() - c0, 3)
    return edits, words, report


def rate_intervals(
    rows: list[dict], edits: pa.Table, *, samples: int, confidence: float, seed: int
) -> dict:
    """Percentile-bootstrap intervals of the edit rates per 1000 words, users drawn with
    replacement (``personalir.common.bootstrap``). A rate is a ratio of sums (users who write
    more weigh more, as in the point estimate); users without edits are drawn too, so their
    share moves the interval. Empty when ``samples`` is 0 or there are no sentences."""

    if samples <= 0 or not rows:
        return {}
    words: dict[str, int] = {}
    for r in rows:
        words[r["user_id"]] = words.get(r["user_id"], 0) + count_words(r["text"])
    users = sorted(words)
    per_user = pd.DataFrame(
        {
            "user_id": edits.column("user_id").to_pylist(),
            "char_level": [bool(c) for c in edits.column("char_level").to_pylist()],
        }
    )
    all_edits = per_user.groupby("user_id").size()
    char_edits = per_user[per_user["char_level"]].groupby("user_id").size()
    den = np.array([words[u] for u in users], dtype=float) / 1000  # thousands of words
    out = {"rate_interval_confidence": confidence, "rate_interval_samples": samples}
    for name, counts in (("edits", all_edits), ("char_level_edits", char_edits)):
        units = pd.DataFrame(
            {"num": counts.reindex(users, fill_value=0).to_numpy(float), "den": den}
        )
        reps = bootstrap_replicates(units, samples, seed, "errors", "edit-rate", name)
        lo, hi = percentile_interval(reps, confidence)
        out[f"{name}_per_1000_words_ci"] = [round(lo, 3), round(hi, 3)]
    return out


def sentences_per_user(corrections: pd.DataFrame) -> dict[str, int]:
    return {u: int(n) for u, n in corrections.groupby("user_id").size().items()}


def run_profiles(
    edits: pd.DataFrame, words: pd.DataFrame, corrections: pd.DataFrame, section: dict
) -> ProfileSet:
    n_sent = sentences_per_user(corrections)
    return build_profiles(
        edits, words, sorted(n_sent), ProfileParams.from_config(section), n_sentences=n_sent
    )


def profile_summary_frame(profiles: ProfileSet) -> pd.DataFrame:
    """One row per user: status, counts, error rate and mechanism probabilities."""
    rows = []
    for u, p in sorted(profiles.users.items()):
        rows.append(
            {
                "user_id": u,
                "status": p.status,
                "n_sentences": p.n_sentences,
                "n_words": p.n_words,
                "n_edits": p.n_edits,
                "n_char_edits": p.n_char_edits,
                "shrinkage_weight": round(p.shrinkage_weight, 6),
                "error_rate": round(p.error_rate(), 8),
                **{f"p_{m}": round(v, 6) for m, v in p.p_mechanisms().items()},
            }
        )
    return pd.DataFrame(rows)


def make_injector(errors: dict) -> Injector:
    inj = errors["injection"]
    return Injector(
        constraints=Constraints.from_config(inj),
        reuse_misspelling_prob=inj["reuse_misspelling_prob"],
        core_terms=inj["core_terms"],
        context_fields=errors["profiles"]["context_fields"],
        spacy_model=errors["edits"]["spacy_model"],
    )


def run_sampling_eval(
    edits: pd.DataFrame,
    words: pd.DataFrame,
    corrections: pd.DataFrame,
    products: pd.DataFrame | None,
    errors: dict,
    *,
    seed: int,
    domain: str,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    cfg = errors["sampling_eval"]
    params = ProfileParams.from_config(errors["profiles"])
    gen, att = split_profiles(
        edits, words, sentences_per_user(corrections), params, cfg["attribution"]
    )
    texts = clean_texts(cfg["text_source"], products=products, sentences=corrections)
    t0, c0 = time.perf_counter(), time.process_time()
    table, users, info = evaluate_sampling(
        gen,
        att,
        texts,
        make_injector(errors),
        samplers=cfg["samplers"],
        texts_per_user=cfg["texts_per_user"],
        n_edits=cfg["n_edits"],
        n_candidates=cfg["n_candidates"],
        seed=seed,
        domain=domain,
    )
    info["seconds"] = round(time.perf_counter() - t0, 3)
    info["cpu_seconds"] = round(time.process_time() - c0, 3)
    info["config"] = cfg
    return table, users, info
