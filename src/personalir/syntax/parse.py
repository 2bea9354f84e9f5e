"""Rule step syntax_parse: user sentences -> the structural rules of every sentence.

Every input row gets a status (``ok``, ``empty``, ``non_english``, ``parse_error``,
``no_rules``), so the report accounts for each sentence that is set aside. Each distinct text
is parsed once and, with a cache folder, reused across runs; the rule extraction itself lives
in :mod:`personalir.syntax.rules`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa

from personalir.common.artifacts import read_user_sentences
from personalir.common.io import write_json, write_parquet
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
