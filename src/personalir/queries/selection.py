"""One domain's query selection, product by product: its pairs, their queries and error pairs.

:func:`personalir.queries.select.select_domain` encodes a domain's valid candidates and hands
each product to :class:`DomainSelection`, which pairs the product's profiled reviewers
(:func:`personalir.queries.pairs.select_product_pairs`), records each side's syntactic query
and its within-user writing-error pair, counts what could not be matched, and finally writes
the selection report. Kept apart from the rule's entry point (reading inputs, the perplexity
scorers, writing outputs) so that each reads on its own.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from personalir.common.seeding import derive_seed
from personalir.queries.filters import ProductInfo
from personalir.queries.pairs import FluencyCache, attribution_checks, select_product_pairs


@dataclass
class DomainSelection:
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
            query_record(
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
            query_record(
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
            query_record(
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


def query_record(domain, asin, user, pair_id, kind, role, text, core_terms, qid, prov) -> dict:
    """One benchmark record (benchmark.jsonl's fields, in order)."""
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
