"""The query stage's steps, each reading and writing files (the workflow scripts call these).

lm (once) -> candidates (per domain) -> select (per domain) -> tables (all domains).

``lm``          LoRA fine-tuning of the instruction model on the seed set; the seed queries'
                perplexity under the base model (the fluency bound's calibration).
``candidates``  products sampled, candidates from every backend, the validity filters
                (lexical, contradiction, duplicate, semantic, fluency).
``select``      candidates in the style space, user matching, syntactic pairs, error pairs by
                constrained injection, attribution checks; the benchmark JSONL, its
                released-format export and the domain's filter report.
``tables``      the datasheet (the paper's Table 1 columns), the filter report and the
                identifiability check across domains, CSV + LaTeX.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from personalir.common.io import atomic_path, read_json, write_json, write_parquet, write_text
from personalir.common.seeding import derive_seed, rng
from personalir.queries.benchmark_format import write_benchmark, write_released
from personalir.queries.filters import (
    VALID,
    FilterContext,
    ProductInfo,
    apply_filters,
    filter_counts,
)
from personalir.queries.terms import AttributeVocabulary, product_type

log = logging.getLogger("personalir.queries")

USER_PREFIX = "<|im_start|>user\n"


class StageInputError(ValueError):
    """An input file lacks a column or value the stage needs (file named)."""


def _require(df: pd.DataFrame, path, columns) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise StageInputError(f"{path}: missing column(s) {missing} (has {list(df.columns)})")


def set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(max(int(threads), 1))


def scoring_prefix(tokenizer) -> str:
    """The opening of a user turn in the model's chat template (queries are scored as what a
    user types); empty for a tokenizer without a chat template."""
    if not getattr(tokenizer, "chat_template", None):
        return ""
    marker = "\x00QUERY\x00"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": marker}], tokenize=False, add_generation_prompt=False
    )
    head = text.split(marker, 1)[0]
    # Drop a default system turn the template may insert before the user turn.
    for opener in ("<|im_start|>user\n", "<|start_header_id|>user<|end_header_id|>\n\n"):
        if opener in head:
            return opener
    return head


# ============================================================================ lm
def run_lm(
    seeds_path, params: dict, seed: int, out: dict, threads: int = 1, model_cache=None
) -> dict:
    """Fine-tune the LoRA adapter on the seed set; calibrate the fluency bound on the seeds."""
    from personalir.queries.lm import (
        LoraSettings,
        load_causal_lm,
        perplexities,
        resolve_model,
        train_lora,
    )
    from personalir.queries.seeds import load_seeds

    set_threads(threads)
    lm = params["lm"]
    seeds = load_seeds(seeds_path)
    t0 = time.perf_counter()
    ref = resolve_model(lm["model"], allow_download=lm["allow_download"])
    model, tok = load_causal_lm(ref, device=lm["device"], cache_dir=model_cache)
    load_s = time.perf_counter() - t0
    prefix = scoring_prefix(tok)
    t1 = time.perf_counter()
    seed_ppl = perplexities(model, tok, [s["query"] for s in seeds], prefix=prefix)
    ppl_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    model, history = train_lora(
        model, tok, seeds, LoraSettings.from_config(lm["lora"]), seed=derive_seed(seed, "lora")
    )
    train_s = time.perf_counter() - t2
    out_dir = Path(out["adapter"]).parent
    with tempfile.TemporaryDirectory(dir=out_dir.parent if out_dir.parent.exists() else None) as td:
        model.save_pretrained(td)
        for name in ("adapter_model.safetensors", "adapter_config.json"):
            target = out["adapter"] if name.endswith(".safetensors") else out["adapter_config"]
            with atomic_path(target, suffix=Path(name).suffix) as tmp:
                shutil.copyfile(Path(td) / name, tmp)
    fl = params["filters"]["fluency"]
    bound = fl["max_perplexity"]
    if bound is None:
        bound = float(np.quantile(np.asarray(seed_ppl), fl["seed_quantile"]))
    report = {
        "model": lm["model"],
        "model_path": ref.path,
        "gguf_file": ref.gguf_file,
        "seeds": len(seeds),
        "seeds_by_domain": dict(sorted(Counter(s["domain"] for s in seeds).items())),
        "lora": lm["lora"],
        "history": history,
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
        "seconds": {
            "load": round(load_s, 2),
            "seed_perplexity": round(ppl_s, 2),
            "train": round(train_s, 2),
        },
        "fluency": {
            "scoring_prefix": prefix,
            "seed_perplexity_quantiles": {
                str(q): float(np.quantile(seed_ppl, q)) for q in (0.5, 0.9, 0.95, 1.0)
            },
            "max_perplexity": bound,
            "bound_from": "config"
            if fl["max_perplexity"] is not None
            else f"seed quantile {fl['seed_quantile']}",
        },
        "threads": threads,
    }
    write_json(out["report"], report)
    log.info(
        "LoRA: loss %.3f -> %.3f in %.1f s; fluency bound %.1f",
        report["first_loss"],
        report["last_loss"],
        train_s,
        bound,
    )
    return report


def load_generator(params: dict, adapter_dir, model_cache=None) -> tuple[object, object]:
    """The base model with the seed-set adapter (or without, when ``adapter_dir`` is None)."""
    from peft import PeftModel

    from personalir.queries.lm import load_causal_lm, resolve_model

    lm = params["lm"]
    ref = resolve_model(lm["model"], allow_download=lm["allow_download"])
    base, tok = load_causal_lm(ref, device=lm["device"], cache_dir=model_cache)
    if adapter_dir is None:
        return base, tok
    return PeftModel.from_pretrained(base, str(adapter_dir)).eval(), tok


def base_perplexity(model, tok, batch_size: int = 32):
    """Perplexity under the base model: the adapter (if any) is switched off while scoring."""
    import contextlib

    from personalir.queries.lm import perplexities

    prefix = scoring_prefix(tok)

    def score(texts: list[str]) -> list[float]:
        off = getattr(model, "disable_adapter", None)
        with off() if off is not None else contextlib.nullcontext():
            return perplexities(model, tok, texts, prefix=prefix, batch_size=batch_size)

    return score


def fluency_settings(filters: dict, lm_report: dict) -> dict:
    """The filters section with the fluency bound resolved (config, or the seed quantile)."""
    fl = filters["fluency"]
    if fl["at_selection"] and "fluency" in filters["eager"]:
        raise ValueError(
            "queries.filters: fluency is both eager and at_selection; choose one "
            "(leave it out of `eager` to score at selection)"
        )
    bound = lm_report["fluency"]["max_perplexity"]
    return {**filters, "fluency": {**fl, "max_perplexity": bound}}


# ============================================================================ candidates
def read_products(path) -> pd.DataFrame:
    df = pq.read_table(path).to_pandas()
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
    from personalir.queries.backends import BACKENDS

    t0 = time.perf_counter()
    chosen, sample_report = sample_products(products, reviewers, params, seed, domain, n_core_terms)
    infos = product_infos(products[products["parent_asin"].isin(chosen)])
    ordered = [infos[a] for a in chosen]
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
    vocab = AttributeVocabulary.from_products(
        products["attribute_keys"].map(list), products["attribute_values"].map(list)
    )
    ctx = FilterContext(infos, vocab, params["filters"], perplexity=perplexity)
    eager = params["filters"]["eager"]
    t_f = time.perf_counter()
    cands = apply_filters(cands, ctx, eager)
    report = {
        "domain": domain,
        "sample": sample_report,
        "backends": backend_stats,
        "filters_applied": eager,
        "counts": filter_counts(cands, eager),
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
    set_threads(threads)
    products = read_products(products_path)
    reviewers = pq.read_table(reviewers_path).to_pandas()
    _require(reviewers, reviewers_path, ["parent_asin", "user_id", "selected_user"])
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


# ============================================================================ select
def read_candidates(path) -> pd.DataFrame:
    df = pq.read_table(path).to_pandas()
    _require(df, path, [f.name for f in CANDIDATE_SCHEMA])
    return df


def product_reviewers(reviewers: pd.DataFrame, users_with_profiles) -> dict[str, list[str]]:
    sel = reviewers[reviewers["selected_user"]]
    out: dict[str, set[str]] = defaultdict(set)
    for p, u in zip(sel["parent_asin"].astype(str), sel["user_id"].astype(str), strict=True):
        if u in users_with_profiles:
            out[p].add(u)
    return {p: sorted(us) for p, us in out.items()}


class StoredPerplexity:
    """Perplexities the candidates step already computed (fluency applied eagerly); with the
    fluency filter off, every text scores 0 so the selection never rejects on fluency."""

    def __init__(self, known: dict[str, float], *, enforce: bool):
        self.known = known
        self.enforce = enforce
        self.calls = 0
        self.seconds = 0.0
        self.load_seconds = 0.0

    def __call__(self, texts: list[str]) -> list[float]:
        if not self.enforce:
            return [0.0] * len(texts)
        return [float(self.known[t]) for t in texts]


class LazyPerplexity:
    """The base model (no adapter), loaded on the first text to score."""

    def __init__(self, params: dict, batch_size: int = 32, model_cache=None):
        self.model_cache = model_cache
        self.params = params
        self.batch_size = batch_size
        self.model = None
        self.calls = 0
        self.texts = 0
        self.seconds = 0.0
        self.load_seconds = 0.0

    def __call__(self, texts: list[str]) -> list[float]:
        from personalir.queries.lm import load_causal_lm, perplexities, resolve_model

        if self.model is None:
            t0 = time.perf_counter()
            lm = self.params["lm"]
            ref = resolve_model(lm["model"], allow_download=lm["allow_download"])
            self.model, self.tok = load_causal_lm(
                ref, device=lm["device"], cache_dir=self.model_cache
            )
            self.prefix = scoring_prefix(self.tok)
            self.load_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = perplexities(
            self.model, self.tok, texts, prefix=self.prefix, batch_size=self.batch_size
        )
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.texts += len(texts)
        return out


def select_domain(
    domain: str,
    cands: pd.DataFrame,
    products: pd.DataFrame,
    reviewers: pd.DataFrame,
    style,  # matching.StyleEncoder
    profiles: dict,
    error_profiles,  # errors.profiles.ProfileSet
    injector,  # errors.inject.Injector
    params: dict,
    seed: int,
    *,
    max_perplexity: float,
    perplexity,  # texts -> perplexities (base model)
    n_edits: int,
    knn=None,
) -> tuple[list[dict], dict, pd.DataFrame]:
    """Benchmark records of one domain, the selection report and the per-pair table."""
    from personalir.queries.pairs import FluencyCache, attribution_checks, select_product_pairs

    t0 = time.perf_counter()
    infos = product_infos(products[products["parent_asin"].isin(set(cands["product"]))])
    valid = cands[cands["status"] == VALID].reset_index(drop=True)
    z, has_rules = (
        style.encode(valid["text"].tolist())
        if len(valid)
        else (np.zeros((0, 1)), np.zeros(0, bool))
    )
    encode_s = time.perf_counter() - t0
    match = params["matching"]
    by_product = product_reviewers(reviewers, set(profiles))
    fluency = FluencyCache(perplexity, max_perplexity)
    pair_cfg = params["pairs"]
    records: list[dict] = []
    product_reports = {}
    pair_rows = []
    unmatched = Counter()
    used_by_backend = Counter()
    error_counts = Counter()
    for asin in sorted(set(valid["product"])):
        rows = np.flatnonzero((valid["product"] == asin).to_numpy() & has_rules)
        unmatched["no_style_rules"] += int(
            ((valid["product"] == asin).to_numpy() & ~has_rules).sum()
        )
        users = by_product.get(asin, [])
        sel = select_product_pairs(
            asin,
            users,
            profiles,
            valid["candidate_id"].to_numpy()[rows].tolist(),
            valid["text"].to_numpy()[rows].tolist(),
            z[rows],
            per_product=pair_cfg["per_product"],
            distance=pair_cfg["distance"],
            fluency=fluency,
            min_distance=pair_cfg["min_distance"],
        )
        product_reports[asin] = sel.report
        if len(users) >= 2:
            norm = (
                np.stack([profiles[u].distance_sq(z[rows]) / profiles[u].threshold for u in users])
                if len(rows)
                else np.zeros((0, 0))
            )
            unmatched["not_accepted_by_any_reviewer"] += (
                int((~(norm <= 1).any(0)).sum()) if len(rows) else 0
            )
        else:
            unmatched["product_without_two_profiled_reviewers"] += len(rows)
        info = infos[asin]
        for k, pair in enumerate(sel.pairs):
            pair_id = f"{domain}:{asin}:syn{k}"
            za = z[rows[pair["sides"]["a"]["candidate_index"]]]
            zb = z[rows[pair["sides"]["b"]["candidate_index"]]]
            checks = attribution_checks(pair, profiles, za, zb, knn=knn)
            pair_rows.append(
                {
                    "domain": domain,
                    "pair_id": pair_id,
                    "product": asin,
                    "distance": pair["distance"],
                    **checks,
                    "user_a": pair["sides"]["a"]["user_id"],
                    "user_b": pair["sides"]["b"]["user_id"],
                }
            )
            for role, other in (("a", "b"), ("b", "a")):
                side = pair["sides"][role]
                cand = valid.iloc[rows[side["candidate_index"]]]
                used_by_backend[cand["backend"]] += 1
                qid = f"{pair_id}:{role}"
                prov = {
                    "candidate_id": side["candidate_id"],
                    "backend": cand["backend"],
                    "generation": json.loads(cand["detail"]),
                    "partner_user_id": pair["sides"][other]["user_id"],
                    "gaussian_distance": {"name": pair_cfg["distance"], "value": pair["distance"]},
                    "gate": match["gate"],
                    "profile_fit": match["fit"],
                    "d2_own": side["d2_own"],
                    "d2_partner": side["d2_other"],
                    "threshold_own": side["threshold_own"],
                    "threshold_partner": side["threshold_other"],
                    "margin": side["margin"],
                    "similarity": float(cand["similarity"]),
                    "perplexity": side["perplexity"],
                    "attributed_to_own_user": bool(checks[f"loglik_{role}_own"]),
                }
                records.append(
                    _record(
                        domain,
                        asin,
                        side["user_id"],
                        pair_id,
                        "syntactic",
                        role,
                        side["text"],
                        info.core_terms,
                        qid,
                        prov,
                    )
                )
                # The within-user error pair of this query.
                user = side["user_id"]
                if user not in error_profiles.users:
                    error_counts["no_error_profile"] += 1
                    continue
                eprof = error_profiles.users[user]
                inj_seed = derive_seed(seed, "queries", "error", domain, asin, user)
                res = injector.inject(
                    side["text"], info.core_terms, eprof, n_edits=n_edits, seed=inj_seed
                )
                if not res.edits or res.text == side["text"]:
                    error_counts["no_valid_edit"] += 1
                    continue
                error_counts["pairs"] += 1
                error_counts[f"profile_{eprof.status}"] += 1
                if res.shortfall:
                    error_counts["fewer_edits_than_requested"] += 1
                err_id = f"{domain}:{asin}:err{k}{role}"
                edits = res.to_json()["edits"]
                records.append(
                    _record(
                        domain,
                        asin,
                        user,
                        err_id,
                        "writing_error",
                        "clean",
                        side["text"],
                        info.core_terms,
                        f"{err_id}:clean",
                        {"source_query_id": qid},
                    )
                )
                records.append(
                    _record(
                        domain,
                        asin,
                        user,
                        err_id,
                        "writing_error",
                        "error",
                        res.text,
                        info.core_terms,
                        f"{err_id}:error",
                        {
                            "source_query_id": qid,
                            "edits": edits,
                            "requested": res.requested,
                            "applied": len(res.edits),
                            "shortfall": res.shortfall,
                            "profile_status": eprof.status,
                            "seed": inj_seed,
                        },
                    )
                )
    pairs_df = pd.DataFrame(pair_rows)
    fl_by_backend = Counter()
    backend_of = dict(zip(valid["text"], valid["backend"], strict=False))
    for text in fluency.removed:
        fl_by_backend[backend_of.get(text, "?")] += 1
    scored_by_backend = Counter(backend_of.get(t, "?") for t in fluency.values)
    n_pairs = len(pairs_df)
    ident = {}
    if n_pairs:
        for col in [c for c in pairs_df.columns if c.startswith(("loglik_", "knn_"))]:
            ident[col] = float(pairs_df[col].mean())
    report = {
        "domain": domain,
        "valid_candidates": int(len(valid)),
        "products_with_valid_candidates": int(valid["product"].nunique()),
        "products_with_pairs": int(sum(1 for r in product_reports.values() if r["pairs"])),
        "syntactic_pairs": n_pairs,
        "writing_error_pairs": int(error_counts["pairs"]),
        "writing_error": dict(sorted(error_counts.items())),
        "matching": {
            "gate": match["gate"],
            "fit": match["fit"],
            **{k: int(v) for k, v in sorted(unmatched.items())},
        },
        "fluency": {
            "at_selection": bool(params["filters"]["fluency"]["at_selection"]),
            "max_perplexity": max_perplexity,
            "evaluated_by_backend": dict(sorted(scored_by_backend.items())),
            "removed_by_backend": dict(sorted(fl_by_backend.items())),
            "model_calls": getattr(perplexity, "calls", None),
            "seconds": round(getattr(perplexity, "seconds", 0.0), 2),
            "load_seconds": round(getattr(perplexity, "load_seconds", 0.0), 2),
        },
        "used_in_pairs_by_backend": dict(sorted(used_by_backend.items())),
        "gaussian_distance": {
            "name": pair_cfg["distance"],
            **(
                {
                    "min": float(pairs_df["distance"].min()),
                    "median": float(pairs_df["distance"].median()),
                    "max": float(pairs_df["distance"].max()),
                }
                if n_pairs
                else {}
            ),
        },
        "identifiability": ident,
        "seconds": {"encode": round(encode_s, 2), "total": round(time.perf_counter() - t0, 2)},
        "products": product_reports,
    }
    return records, report, pairs_df


def _record(domain, asin, user, pair_id, kind, role, text, core_terms, qid, prov) -> dict:
    return {
        "query_id": qid,
        "domain": domain,
        "product": asin,
        "user_id": user,
        "pair_id": pair_id,
        "kind": kind,
        "role": role,
        "text": text,
        "core_terms": list(core_terms),
        "provenance": prov,
    }


def domain_filter_report(cand_report: dict, sel_report: dict) -> dict:
    """Every candidate of the domain accounted for, per backend, from generation to pairs.

    ``generated = removed by each eager filter + valid``; with fluency scored at selection,
    ``fluency_at_selection`` candidates of the valid ones were scored and
    ``removed_fluency_at_selection`` of those removed there."""
    out = {}
    fl = sel_report["fluency"]
    lazy = fl["at_selection"]
    for backend, c in cand_report["counts"].items():
        row = dict(c)
        if lazy:
            row["fluency_at_selection"] = int(fl["evaluated_by_backend"].get(backend, 0))
            row["removed_fluency_at_selection"] = int(fl["removed_by_backend"].get(backend, 0))
        row["used_in_pairs"] = int(sel_report["used_in_pairs_by_backend"].get(backend, 0))
        out[backend] = row
    return {
        "domain": cand_report["domain"],
        "filters": cand_report["filters_applied"] + (["fluency (at selection)"] if lazy else []),
        "fluency_bound": fl["max_perplexity"],
        "by_backend": out,
        "matching": sel_report["matching"],
    }


def run_select(
    domain,
    paths: dict,
    params: dict,
    syntax_parse: dict,
    errors: dict,
    seed: int,
    out: dict,
    threads: int = 1,
    model_cache=None,
) -> dict:
    from personalir.common.artifacts import read_embeddings
    from personalir.errors.inject import Constraints, Injector
    from personalir.errors.profiles import ProfileSet
    from personalir.queries.matching import StyleEncoder, load_user_profiles
    from personalir.queries.pairs import HeldOutKNN

    set_threads(threads)
    cands = read_candidates(paths["candidates"])
    products = read_products(paths["products"])
    reviewers = pq.read_table(paths["reviewers"]).to_pandas()
    _require(reviewers, paths["reviewers"], ["parent_asin", "user_id", "selected_user"])
    match = params["matching"]
    profiles = load_user_profiles(
        paths["profiles"],
        fit=match["fit"],
        gate=match["gate"],
        chi2_quantile=match["chi2_quantile"],
    )
    style = StyleEncoder(paths["encoder_weights"], paths["encoder_meta"], syntax_parse)
    meta, z_all = read_embeddings(paths["embeddings"])
    knn = HeldOutKNN(meta, z_all, k=params["identifiability"]["knn_k"])
    error_profiles = ProfileSet.from_json(read_json(paths["error_profiles"]))
    inj_cfg = errors["injection"]
    core_policy = params["writing_error"]["core_terms"] or inj_cfg["core_terms"]
    injector = Injector(
        constraints=Constraints.from_config(inj_cfg),
        reuse_misspelling_prob=inj_cfg["reuse_misspelling_prob"],
        core_terms=core_policy,
        context_fields=error_profiles.params.context_fields,
        spacy_model=errors["edits"]["spacy_model"],
    )
    filters = fluency_settings(params["filters"], read_json(paths["lm_report"]))
    bound = filters["fluency"]["max_perplexity"]
    if filters["fluency"]["at_selection"]:
        perplexity = LazyPerplexity(params, model_cache=model_cache)
    else:  # scored with the other filters (or not at all): no model needed here
        known = dict(zip(cands["text"], cands["perplexity"], strict=False))
        perplexity = StoredPerplexity(known, enforce="fluency" in filters["eager"])
    records, report, pairs_df = select_domain(
        domain,
        cands,
        products,
        reviewers,
        style,
        profiles,
        error_profiles,
        injector,
        params,
        seed,
        max_perplexity=bound,
        perplexity=perplexity,
        n_edits=inj_cfg["n_edits"],
        knn=knn,
    )
    report["writing_error"]["core_terms_policy"] = core_policy
    n = write_benchmark(out["benchmark"], records)
    write_released(out["released"], records)
    with atomic_path(out["pairs"], suffix=".csv") as tmp:
        pairs_df.to_csv(tmp, index=False, float_format="%.6f")
    write_json(out["report"], report)
    write_json(
        out["filter_report"], domain_filter_report(read_json(paths["candidates_report"]), report)
    )
    log.info(
        "select %s: %d records, %d syntactic pairs, %d error pairs, identifiability %s",
        domain,
        n,
        report["syntactic_pairs"],
        report["writing_error_pairs"],
        report["identifiability"],
    )
    return report


# ============================================================================ tables
def datasheet_frame(domains, benchmarks, syntax_profiles, syntax_embeddings) -> pd.DataFrame:
    """The paper's Table 1 columns per domain and in total.

    Syntactic queries: distinct (product, user, text) syntactic queries; writing-error queries:
    error variants; total: their sum; user profiles: users with a syntactic profile; sentences:
    the review sentences those profiles were built from (the syntax stage's usable sentences).
    """
    from personalir.queries.benchmark_format import read_benchmark

    rows = []
    for d, bpath, ppath, epath in zip(
        domains, benchmarks, syntax_profiles, syntax_embeddings, strict=True
    ):
        recs = read_benchmark(bpath)
        syn = {(r["product"], r["user_id"], r["text"]) for r in recs if r["kind"] == "syntactic"}
        err = [r for r in recs if r["kind"] == "writing_error" and r["role"] == "error"]
        rows.append(
            {
                "Domain": d.replace("_", " "),
                "Products": len({r["product"] for r in recs}),
                "Syntactic": len(syn),
                "Writing-error": len(err),
                "Total queries": len(syn) + len(err),
                "User profiles": pq.read_metadata(ppath).num_rows,
                "Sentences": pq.read_metadata(epath).num_rows,
            }
        )
    df = pd.DataFrame(rows)
    total = {"Domain": "Total", **{c: int(df[c].sum()) for c in df.columns[1:]}}
    return pd.concat([df, pd.DataFrame([total])], ignore_index=True)


def filter_frame(domains, filter_reports) -> pd.DataFrame:
    """One row per domain and backend; columns in pipeline order."""
    rows = []
    for d, path in zip(domains, filter_reports, strict=True):
        rep = read_json(path)
        for backend, c in sorted(rep["by_backend"].items()):
            row = {"Domain": d.replace("_", " "), "Backend": backend, "Generated": c["generated"]}
            for name in rep["filters"]:
                key = "removed_" + name.split(" ")[0]
                if name.endswith("(at selection)"):
                    row["Fluency scored at selection"] = c["fluency_at_selection"]
                    key = "removed_fluency_at_selection"
                row["-" + name.capitalize()] = c[key]
            row["Valid"] = c["valid"]
            row["In pairs"] = c["used_in_pairs"]
            rows.append(row)
    return pd.DataFrame(rows)


def identifiability_frame(domains, select_reports) -> pd.DataFrame:
    rows = []
    for d, path in zip(domains, select_reports, strict=True):
        rep = read_json(path)
        ident = rep["identifiability"]
        rows.append(
            {
                "Domain": d.replace("_", " "),
                "Syntactic pairs": rep["syntactic_pairs"],
                "Both own (profile)": ident.get("loglik_both", float("nan")),
                "Assignment (profile)": ident.get("loglik_assignment", float("nan")),
                "Both own (held-out kNN)": ident.get("knn_both", float("nan")),
                "Median distance": rep["gaussian_distance"].get("median", float("nan")),
            }
        )
    df = pd.DataFrame(rows)
    pairs = df["Syntactic pairs"].to_numpy()
    avg = {"Domain": "All (pair-weighted)", "Syntactic pairs": int(pairs.sum())}
    for c in df.columns[2:]:
        vals = df[c].to_numpy(dtype=float)
        ok = np.isfinite(vals)
        avg[c] = (
            float((vals[ok] * pairs[ok]).sum() / pairs[ok].sum())
            if pairs[ok].sum()
            else float("nan")
        )
    return pd.concat([df, pd.DataFrame([avg])], ignore_index=True)


class IdentifiabilityCheckError(RuntimeError):
    """The share of pairs attributed to their own users is below ``min_share``."""


def run_tables(domains, inputs: dict, out: dict, params: dict, config_label: str) -> dict:
    from personalir.common.latex import dataframe_to_latex

    distance = params["pairs"]["distance"]
    sheet = datasheet_frame(
        domains, inputs["benchmarks"], inputs["syntax_profiles"], inputs["syntax_embeddings"]
    )
    filters = filter_frame(domains, inputs["filter_reports"])
    ident = identifiability_frame(domains, inputs["select_reports"])
    for key, df in (
        ("datasheet_csv", sheet),
        ("filters_csv", filters),
        ("identifiability_csv", ident),
    ):
        with atomic_path(out[key], suffix=".csv") as tmp:
            df.to_csv(tmp, index=False, float_format="%.4f")
    write_text(
        out["datasheet_tex"],
        dataframe_to_latex(
            sheet,
            caption=(
                "PQB benchmark statistics per domain: syntactic and writing-error "
                "queries, user profiles and the review sentences they were built from. "
                f"Configuration: \\texttt{{{config_label}}}."
            ),
            label="tab:pqb-datasheet",
            midrule_before=[len(sheet) - 1],
        ),
    )
    write_text(
        out["filters_tex"],
        dataframe_to_latex(
            filters,
            caption=(
                "Candidate queries per generation backend, how many each validity filter "
                "removed (in order, a candidate counted at the first it fails) and how many "
                "entered a pair. Configuration: "
                f"\\texttt{{{config_label}}}."
            ),
            label="tab:pqb-filters",
            floatfmt=".0f",
        ),
    )
    ident_tex = ident.copy()
    for c in ("Both own (profile)", "Assignment (profile)", "Both own (held-out kNN)"):
        ident_tex[c] = 100 * ident_tex[c]
    write_text(
        out["identifiability_tex"],
        dataframe_to_latex(
            ident_tex,
            caption=(
                "Personal signal is identifiable: share (\\%) of syntactic pairs "
                "whose two queries are attributed to their own users by the "
                "rank-one + diagonal profiles' log-density (both queries; the better "
                "assignment of the two) and by the held-out sentences' k-NN; median "
                f"{distance} distance of the paired users' Gaussians. "
                f"Configuration: \\texttt{{{config_label}}}."
            ),
            label="tab:pqb-identifiability",
            floatfmt=".1f",
            midrule_before=[len(ident_tex) - 1],
        ),
    )
    check = params["identifiability"]
    share = float(ident.iloc[-1]["Both own (profile)"])
    if check["check"] and not share > check["min_share"]:
        raise IdentifiabilityCheckError(
            f"identifiability check FAILED: {share:.3f} of syntactic pairs have both queries "
            f"attributed to their own users (needs > {check['min_share']})"
        )
    log.info("identifiability check OK: %.3f > %s", share, check["min_share"])
    return {"datasheet": sheet.to_dict("records"), "identifiability": ident.to_dict("records")}
