"""Rule queries_candidates: one domain's candidate queries, with the eager validity filters.

Products are sampled (eligible, enough selected reviewers, the configured number of core
terms); every configured backend writes candidates for them; the eager filters (lexical,
contradiction, duplicate, semantic, fluency) mark each candidate valid or with the first filter
it failed. Every candidate ever generated is kept (``CANDIDATE_SCHEMA``), so the selection step
and the filter report account for all of them. Also the readers of this stage's inputs that
the selection step shares.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

import pandas as pd
import pyarrow as pa

from personalir.common.artifacts import StageInputError, read_reviewers
from personalir.common.io import read_json, read_parquet_table, write_json, write_parquet
from personalir.common.seeding import derive_seed, rng
from personalir.queries.backends import BACKENDS
from personalir.queries.filters import FilterContext, ProductInfo, apply_filters, filter_counts
from personalir.queries.generator import (
    base_perplexity,
    fluency_settings,
    load_generator,
    set_threads,
)
from personalir.queries.terms import AttributeVocabulary, product_type

log = logging.getLogger("personalir.queries")


def _require(df: pd.DataFrame, path, columns) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StageInputError(f"{path}: missing column(s) {missing} (has {list(df.columns)})")


def read_products(path) -> pd.DataFrame:
    """The data stage's products table, with the columns the query steps read."""
    df = read_parquet_table(path).to_pandas()
    _require(
        df,
        path,
        [
            "parent_asin",
            "title",
            "document",
            "attribute_keys",
            "attribute_values",
            "core_terms",
            "eligible",
        ],
    )
    return df


def product_infos(products: pd.DataFrame) -> dict[str, ProductInfo]:
    """What the backends and filters need of each product, by product id."""
    out = {}
    for r in products.itertuples(index=False):
        values = [str(v) for v in r.attribute_values]
        out[str(r.parent_asin)] = ProductInfo(
            asin=str(r.parent_asin),
            title=str(r.title),
            document=str(r.document),
            core_terms=[str(t) for t in r.core_terms],
            keys=[str(k) for k in r.attribute_keys],
            values=values,
            head=product_type(str(r.title), values),
        )
    return out


def sample_products(
    products: pd.DataFrame,
    reviewers: pd.DataFrame,
    params: dict,
    seed: int,
    domain: str,
    n_core_terms: int,
) -> tuple[list[str], dict]:
    """Eligible products with at least ``min_reviewers`` selected reviewers and exactly
    ``n_core_terms`` core terms; a seeded sample of ``products_per_domain`` of them."""
    counts = reviewers[reviewers["selected_user"]].groupby("parent_asin")["user_id"].nunique()
    elig = products[products["eligible"]]
    ok_terms = elig["core_terms"].map(len) == n_core_terms
    n_rev = elig["parent_asin"].map(counts).fillna(0).astype(int)
    ok = elig[ok_terms & (n_rev >= params["min_reviewers"])]
    pool = sorted(ok["parent_asin"].astype(str))
    n = params["products_per_domain"]
    if n is not None and n < len(pool):
        pick = rng(seed, "queries", "products", domain).choice(len(pool), size=n, replace=False)
        chosen = [pool[i] for i in sorted(pick)]
    else:
        chosen = pool
    report = {
        "products": int(len(products)),
        "eligible": int(products["eligible"].sum()),
        "eligible_wrong_core_term_count": int((~ok_terms).sum()),
        "eligible_too_few_reviewers": int((ok_terms & (n_rev < params["min_reviewers"])).sum()),
        "pool": len(pool),
        "sampled": len(chosen),
    }
    return chosen, report


CANDIDATE_SCHEMA = pa.schema(
    [
        ("candidate_id", pa.string()),
        ("product", pa.string()),
        ("backend", pa.string()),
        ("round", pa.int32()),
        ("text", pa.string()),
        ("detail", pa.string()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("similarity", pa.float64()),
        ("perplexity", pa.float64()),
    ]
)


def removed_examples(cands: pd.DataFrame, names: list[str], k: int = 3) -> dict:
    """Per filter and backend, the first ``k`` candidates it removed (id, text, reason)."""
    out: dict = {}
    for name in names:
        gone = cands[cands["status"] == name]
        per = {}
        for backend, grp in gone.groupby("backend", sort=True):
            per[backend] = [
                {"candidate_id": c, "text": t, "reason": r}
                for c, t, r in zip(
                    grp["candidate_id"][:k], grp["text"][:k], grp["reason"][:k], strict=True
                )
            ]
        out[name] = per
    return out


def read_candidates(path) -> pd.DataFrame:
    """A domain's ``candidates.parquet`` (every column of ``CANDIDATE_SCHEMA``)."""
    df = read_parquet_table(path).to_pandas()
    _require(df, path, [f.name for f in CANDIDATE_SCHEMA])
    return df


def build_candidates(
    domain: str,
    products: pd.DataFrame,
    reviewers: pd.DataFrame,
    params: dict,
    seed: int,
    *,
    n_core_terms: int = 5,
    generator=None,
    perplexity=None,
) -> tuple[pd.DataFrame, dict]:
    """Candidates of every backend for the sampled products, with the eager filters applied.

    ``generator``: ``(model, tokenizer)`` for the ``lm`` backend; ``perplexity``: texts ->
    perplexities for the fluency filter (both loaded by the caller); ``params["filters"]``
    holds the resolved fluency bound (:func:`fluency_settings`)."""

    t0 = time.perf_counter()
    chosen, sample_report = sample_products(products, reviewers, params, seed, domain, n_core_terms)
    infos = product_infos(products[products["parent_asin"].isin(chosen)])
    ordered = [infos[a] for a in chosen]
    vocab = AttributeVocabulary.from_products(
        products["attribute_keys"].map(list), products["attribute_values"].map(list)
    )
    rows, backend_stats = [], {}
    for name in params["backends"]:
        resources = {}
        if name == "lm":
            if generator is None:
                raise ValueError("the lm backend needs a loaded (model, tokenizer)")
            resources = {
                "model": generator[0],
                "tokenizer": generator[1],
                "frequency": params["filters"]["lexical"]["frequency"],
                "vocabulary": vocab,
                "contradiction_keys": params["filters"]["contradiction"]["keys"],
            }
        backend = BACKENDS.get(name)(params[name], seed=seed, domain=domain, **resources)
        made = backend.generate(ordered)
        per_product: Counter = Counter()
        for c in made:
            k = per_product[c["product"]]
            per_product[c["product"]] += 1
            rows.append({**c, "candidate_id": f"{name}:{c['product']}:{k:04d}"})
        backend_stats[name] = backend.stats
    cands = pd.DataFrame(
        rows, columns=["candidate_id", "product", "backend", "round", "text", "detail"]
    )
    cands["detail"] = [json.dumps(d, sort_keys=True) for d in cands["detail"]]
    ctx = FilterContext(
        infos,
        vocab,
        params["filters"],
        perplexity=perplexity,
        seed=derive_seed(seed, "queries", "semantic-calibration", domain),
    )
    eager = params["filters"]["eager"]
    t_f = time.perf_counter()
    cands = apply_filters(cands, ctx, eager)
    report = {
        "domain": domain,
        "sample": sample_report,
        "backends": backend_stats,
        "filters_applied": eager,
        "counts": filter_counts(cands, eager),
        "removed_examples": removed_examples(cands, eager),
        "semantic_calibration": ctx.semantic_calibration,
        "seconds": {
            "filters": round(time.perf_counter() - t_f, 2),
            "total": round(time.perf_counter() - t0, 2),
        },
        "similarity_quantiles": _quantiles(cands["similarity"]),
        "perplexity_quantiles": _quantiles(cands["perplexity"]),
        "fluency_bound": params["filters"]["fluency"]["max_perplexity"],
    }
    return cands, report


def _quantiles(col: pd.Series) -> dict:
    col = col.dropna()
    return {str(q): float(col.quantile(q)) for q in (0.05, 0.5, 0.95)} if len(col) else {}


def run_candidates(
    domain,
    products_path,
    reviewers_path,
    adapter_dir,
    lm_report_path,
    params,
    seed,
    out: dict,
    *,
    n_core_terms: int = 5,
    threads: int = 1,
    model_cache=None,
) -> dict:
    """Generate and filter one domain's candidates; write ``candidates.parquet`` + report."""
    set_threads(threads)
    products = read_products(products_path)
    reviewers = read_reviewers(reviewers_path)
    params = {**params, "filters": fluency_settings(params["filters"], read_json(lm_report_path))}
    use_lm = "lm" in params["backends"]
    need_lm = use_lm or "fluency" in params["filters"]["eager"]
    t0 = time.perf_counter()
    model = (
        load_generator(params, adapter_dir if use_lm else None, model_cache) if need_lm else None
    )
    load_s = time.perf_counter() - t0
    cands, report = build_candidates(
        domain,
        products,
        reviewers,
        params,
        seed,
        n_core_terms=n_core_terms,
        generator=model if use_lm else None,
        perplexity=base_perplexity(*model) if need_lm else None,
    )
    report["seconds"]["load_lm"] = round(load_s, 2)
    report["threads"] = threads
    table = pa.Table.from_pandas(
        cands[[f.name for f in CANDIDATE_SCHEMA]], schema=CANDIDATE_SCHEMA, preserve_index=False
    )
    write_parquet(out["candidates"], table)
    write_json(out["report"], report)
    log.info("candidates %s: %s", domain, report["counts"])
    return report
