"""Rule queries_select: one domain's benchmark from its valid candidates.

The valid candidates are encoded in the syntax stage's style space; each product's profiled
reviewers are paired across users at maximum Gaussian distance, each side taking its own most
distinctive fluent candidate (:mod:`personalir.queries.pairs`); every syntactic query gets the
within-user writing-error variant that the errors stage's constrained injection makes with its
user's error profile. Writes the benchmark JSONL, its released-format export, the per-pair
table, the selection report and the domain's filter report (every candidate accounted for,
from generation to pairs). The per-product work and the report are
:class:`~personalir.queries.selection.DomainSelection`'s.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from personalir.common.artifacts import read_embeddings, read_reviewers
from personalir.common.causal_lm import load_causal_lm
from personalir.common.io import atomic_path, read_json, write_json
from personalir.common.models import resolve_model
from personalir.errors.inject import Constraints, Injector
from personalir.errors.profiles import ProfileSet
from personalir.queries.benchmark_format import write_benchmark, write_released
from personalir.queries.candidates import product_infos, read_candidates, read_products
from personalir.queries.filters import VALID
from personalir.queries.generator import fluency_settings, scoring_prefix, set_threads
from personalir.queries.lm import perplexities
from personalir.queries.matching import StyleEncoder, load_user_profiles
from personalir.queries.pairs import FluencyCache, HeldOutKNN
from personalir.queries.selection import DomainSelection

log = logging.getLogger("personalir.queries")


def product_reviewers(reviewers: pd.DataFrame, users_with_profiles) -> dict[str, list[str]]:
    """Each product's selected reviewers that have a syntactic profile, sorted."""
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
    t0 = time.perf_counter()
    infos = product_infos(products[products["parent_asin"].isin(set(cands["product"]))])
    valid = cands[cands["status"] == VALID].reset_index(drop=True)
    z, has_rules = (
        style.encode(valid["text"].tolist())
        if len(valid)
        else (np.zeros((0, 1)), np.zeros(0, bool))
    )
    encode_s = time.perf_counter() - t0
    by_product = product_reviewers(reviewers, set(profiles))
    selection = DomainSelection(
        domain=domain,
        valid=valid,
        z=z,
        has_rules=has_rules,
        profiles=profiles,
        error_profiles=error_profiles,
        injector=injector,
        match=params["matching"],
        pair_cfg=params["pairs"],
        seed=seed,
        n_edits=n_edits,
        knn=knn,
        fluency=FluencyCache(perplexity, max_perplexity),
    )
    for asin in sorted(set(valid["product"])):
        selection.add_product(asin, by_product.get(asin, []), infos)
    pairs_df = pd.DataFrame(selection.pair_rows)
    report = selection.report(
        pairs_df,
        params,
        max_perplexity=max_perplexity,
        perplexity=perplexity,
        encode_s=encode_s,
        t0=t0,
    )
    return selection.records, report, pairs_df


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
    """Select one domain's benchmark; write it, its release, the pairs and both reports."""

    set_threads(threads)
    cands = read_candidates(paths["candidates"])
    products = read_products(paths["products"])
    reviewers = read_reviewers(paths["reviewers"])
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
