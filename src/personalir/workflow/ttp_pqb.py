"""Helpers of rules/ttp_pqb.smk (TTP on PQB): which domains, methods, example sets and runs
the configuration asks for, checked when the workflow loads."""

from __future__ import annotations

from collections.abc import Mapping

from personalir.ttp.evaluation.names import MODES, parse_set_name, set_name
from personalir.workflow.ttp import example_sets, method_class


def pqb_domains(config: Mapping) -> list[str]:
    """The domains TTP is evaluated on PQB in (``ttp.pqb.domains``; null: the domains TTP
    trains on for the sample world, every configured domain otherwise); none when TTP or
    ``ttp.pqb`` is off or lists no method."""
    ttp = config["ttp"]
    pqb = ttp.get("pqb") or {}
    if not ttp.get("enabled", True) or not pqb.get("methods"):
        return []
    chosen = pqb.get("domains")
    if chosen is None:
        return example_sets(config) if ttp["source"] == "sample_world" else list(config["domains"])
    unknown = sorted(set(chosen) - set(config["domains"]))
    if unknown:
        raise ValueError(
            f"ttp.pqb.domains {unknown} are not among the configured domains {config['domains']}"
        )
    return [d for d in config["domains"] if d in chosen]


def pqb_methods(config: Mapping) -> list[str]:
    """``ttp.pqb.methods``, each of which must be an evaluated method (``ttp.methods``) that
    needs no per-set artefact of another rule (the rewriter's rewrites, an embedding store)."""
    if not pqb_domains(config):
        return []
    methods = list(config["ttp"]["pqb"]["methods"])
    unknown = [m for m in methods if m not in config["ttp"]["methods"]]
    if unknown:
        raise ValueError(
            f"ttp.pqb.methods {unknown} are not in ttp.methods: add them there or remove them"
        )
    per_set = [
        m
        for m in methods
        if method_class(m).needs_rewrites or "ttp_store" in method_class(m).model_roles
    ]
    if per_set:
        raise ValueError(
            f"ttp.pqb.methods {per_set} read per-set rewrites or an embedding store, which "
            "the PQB sets do not build: remove them"
        )
    return methods


def pqb_sets(config: Mapping) -> list[str]:
    """Every TTP-on-PQB example set: ``PQB-<domain>`` and ``PQB-<domain>-nohistory``."""

    return [set_name(d, mode) for d in pqb_domains(config) for mode in MODES]


def pqb_example_inputs(config: Mapping, pqb_set: str) -> dict[str, str]:
    """Inputs of ``ttp_pqb_examples``: the domain's benchmark and data tables, and TTP's
    examples of that domain where TTP trains on it (to count overlapping searches)."""

    domain, _ = parse_set_name(pqb_set)
    res = config["results_dir"]
    out = {
        "benchmark": f"{res}/queries/{domain}/benchmark.jsonl",
        "reviews": f"{res}/data/{domain}/reviews.parquet",
        "products": f"{res}/data/{domain}/products.parquet",
        "meta": f"{res}/data/{domain}/meta.parquet",
    }
    if domain in example_sets(config):
        out["train_examples"] = f"{res}/ttp/{domain}/examples.jsonl"
    return out


def pqb_run_specs(config: Mapping) -> list[tuple[str, str, str]]:
    """(set, method, run path) of every TTP-on-PQB run: a history-reading method on both
    sets of a domain, a query-only method on the history set only."""

    res = config["results_dir"]
    specs = []
    for domain in pqb_domains(config):
        for method in pqb_methods(config):
            modes = ("history", "no_history") if method_class(method).uses_history else ("history",)
            for mode in modes:
                s = set_name(domain, mode)
                specs.append((s, method, f"{res}/ttp/{s}/runs/{method}.trec"))
    return specs
