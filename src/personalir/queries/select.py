"""Rule queries_select: one domain's benchmark from its valid candidates.

The valid candidates are encoded in the syntax stage's style space; each product's profiled
reviewers are paired across users at maximum Gaussian distance, each side taking its own most
distinctive fluent candidate (:mod:`personalir.queries.pairs`); every syntactic query gets the
within-user writing-error variant that the errors stage's constrained injection makes with its
user's error profile. Writes the benchmark JSONL, its released-format export, the per-pair
table, the selection report and the domain's filter report (every candidate accounted for,
from generation to pairs).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from personalir.common.artifacts import read_embeddings, read_reviewers
from personalir.common.causal_lm import load_causal_lm
from personalir.common.io import atomic_path, read_json, write_json
from personalir.common.models import resolve_model
from personalir.common.seeding import derive_seed
from personalir.errors.inject import Constraints, Injector
from personalir.errors.profiles import ProfileSet
from personalir.queries.benchmark_format import write_benchmark, write_released
from personalir.queries.candidates import product_infos, read_candidates, read_products
from personalir.queries.filters import VALID, ProductInfo
from personalir.queries.generator import fluency_settings, scoring_prefix, set_threads
from personalir.queries.lm import perplexities
from personalir.queries.matching import StyleEncoder, load_user_profiles
from personalir.queries.pairs import (
    FluencyCache,
    HeldOutKNN,
    attribution_checks,
    select_product_pairs,
)

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


@dataclass
class _DomainSelection:
    """One domain's selection: its inputs, and what it accumulates product by product."""

    domain: str
    valid: pd.DataFrame  # the valid candidates, in candidate order
    z: np.ndarray  # their style vectors
    has_rules: np.ndarray  # whether a candidate has any style rule (else it cannot be matched)
    profiles: dict  # user -> matching.UserProfile
    error_profiles: object  # errors.profiles.ProfileSet
    injector: object  # errors.inject.Injector
    match: dict  # params["matching"]
    pair_cfg: dict  # params["pairs"]
    seed: int
    n_edits: int
    knn: object
    fluency: FluencyCache
    records: list[dict] = field(default_factory=list)
    product_reports: dict = field(default_factory=dict)
    pair_rows: list[dict] = field(default_factory=list)
    unmatched: Counter = field(default_factory=Counter)
    used_by_backend: Counter = field(default_factory=Counter)
    error_counts: Counter = field(default_factory=Counter)

    def add_product(self, asin: str, users: list[str], infos: dict[str, ProductInfo]) -> None:
        """The product's syntactic pairs among its profiled ``users``, with their error pairs."""
        valid, z, has_rules = self.valid, self.z, self.has_rules
        rows = np.flatnonzero((valid["product"] == asin).to_numpy() & has_rules)
        self.unmatched["no_style_rules"] += int(
            ((valid["product"] == asin).to_numpy() & ~has_rules).sum()
        )
        sel = select_product_pairs(
            asin,
            users,
            self.profiles,
            valid["candidate_id"].to_numpy()[rows].tolist(),
            valid["text"].to_numpy()[rows].tolist(),
            z[rows],
            per_product=self.pair_cfg["per_product"],
            distance=self.pair_cfg["distance"],
            fluency=self.fluency,
            min_distance=self.pair_cfg["min_distance"],
            preference=self._preference(rows),
        )
        self.product_reports[asin] = sel.report
        self._count_unmatched(users, rows)
        info = infos[asin]
        for k, pair in enumerate(sel.pairs):
            self._add_pair(asin, info, k, pair, rows)

    def _preference(self, rows: np.ndarray) -> list[int]:
        """Each candidate's rank in ``pairs.prefer_backends`` (other backends rank last)."""
        prefer = list(self.pair_cfg.get("prefer_backends") or [])
        last = len(prefer)
        backends = self.valid["backend"].to_numpy()[rows]
        return [prefer.index(b) if b in prefer else last for b in backends]

    def _count_unmatched(self, users: list[str], rows: np.ndarray) -> None:
        """Candidates with style rules that no reviewer of their product accepts."""
        profiles, z = self.profiles, self.z
        if len(users) >= 2:
            norm = (
                np.stack([profiles[u].distance_sq(z[rows]) / profiles[u].threshold for u in users])
                if len(rows)
                else np.zeros((0, 0))
            )
            self.unmatched["not_accepted_by_any_reviewer"] += (
                int((~(norm <= 1).any(0)).sum()) if len(rows) else 0
            )
        else:
            self.unmatched["product_without_two_profiled_reviewers"] += len(rows)

    def _add_pair(self, asin: str, info: ProductInfo, k: int, pair: dict, rows) -> None:
        """The pair's table row, then per side its syntactic query and that query's error pair."""
        z = self.z
        pair_id = f"{self.domain}:{asin}:syn{k}"
        za = z[rows[pair["sides"]["a"]["candidate_index"]]]
        zb = z[rows[pair["sides"]["b"]["candidate_index"]]]
        checks = attribution_checks(pair, self.profiles, za, zb, knn=self.knn)
        self.pair_rows.append(
            {
                "domain": self.domain,
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
            qid = self._add_syntactic_query(asin, info, pair_id, pair, role, other, rows, checks)
            self._add_error_pair(asin, info, k, role, side, qid)

    def _add_syntactic_query(
        self, asin, info: ProductInfo, pair_id: str, pair: dict, role, other, rows, checks
    ) -> str:
        """The ``role`` side's query record with its provenance; returns its query id."""
        match, pair_cfg = self.match, self.pair_cfg
        side = pair["sides"][role]
        cand = self.valid.iloc[rows[side["candidate_index"]]]
        self.used_by_backend[cand["backend"]] += 1
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
        self.records.append(
            _record(
                self.domain,
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
        return qid

    def _add_error_pair(self, asin, info: ProductInfo, k: int, role, side: dict, qid) -> None:
        """The within-user error pair of syntactic query ``qid`` (clean, then error variant)."""
        domain, error_counts = self.domain, self.error_counts
        user = side["user_id"]
        if user not in self.error_profiles.users:
            error_counts["no_error_profile"] += 1
            return
        eprof = self.error_profiles.users[user]
        inj_seed = derive_seed(self.seed, "queries", "error", domain, asin, user)
        res = self.injector.inject(
            side["text"], info.core_terms, eprof, n_edits=self.n_edits, seed=inj_seed
        )
        if not res.edits or res.text == side["text"]:
            error_counts["no_valid_edit"] += 1
            return
        error_counts["pairs"] += 1
        error_counts[f"profile_{eprof.status}"] += 1
        if res.shortfall:
            error_counts["fewer_edits_than_requested"] += 1
        err_id = f"{domain}:{asin}:err{k}{role}"
        edits = res.to_json()["edits"]
        self.records.append(
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
        self.records.append(
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

    def fluency_by_backend(self) -> tuple[Counter, Counter]:
        """Per backend: candidates scored for fluency at selection, and those it removed."""
        fl_by_backend = Counter()
        backend_of = dict(zip(self.valid["text"], self.valid["backend"], strict=False))
        for text in self.fluency.removed:
            fl_by_backend[backend_of.get(text, "?")] += 1
        scored_by_backend = Counter(backend_of.get(t, "?") for t in self.fluency.values)
        return scored_by_backend, fl_by_backend

    def report(
        self,
        pairs_df: pd.DataFrame,
        params: dict,
        *,
        max_perplexity: float,
        perplexity,
        encode_s: float,
        t0: float,
    ) -> dict:
        """The selection report (``t0``: when the selection started)."""
        valid, match, pair_cfg = self.valid, self.match, self.pair_cfg
        product_reports, error_counts = self.product_reports, self.error_counts
        scored_by_backend, fl_by_backend = self.fluency_by_backend()
        n_pairs = len(pairs_df)
        ident = {}
        if n_pairs:
            for col in [c for c in pairs_df.columns if c.startswith(("loglik_", "knn_"))]:
                ident[col] = float(pairs_df[col].mean())
        return {
            "domain": self.domain,
            "valid_candidates": int(len(valid)),
            "products_with_valid_candidates": int(valid["product"].nunique()),
            "products_with_pairs": int(sum(1 for r in product_reports.values() if r["pairs"])),
            "syntactic_pairs": n_pairs,
            "writing_error_pairs": int(error_counts["pairs"]),
            "writing_error": dict(sorted(error_counts.items())),
            "matching": {
                "gate": match["gate"],
                "fit": match["fit"],
                **{k: int(v) for k, v in sorted(self.unmatched.items())},
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
            "used_in_pairs_by_backend": dict(sorted(self.used_by_backend.items())),
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
    selection = _DomainSelection(
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
