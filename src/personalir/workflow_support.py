"""Helpers the Snakemake rule modules use (kept out of the Snakefiles, which stay glue)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence


def params_json(
    config: Mapping, *path: str, keys: Sequence[str] | None = None, omit: Sequence[str] = ()
) -> str:
    """The config values a rule reads, as compact JSON for its script (and a rerun trigger).

    The one idiom of every rule's ``params``: ``path`` walks into the config (``"errors",
    "gec"``); ``keys`` keeps only those keys of that section, so a rule lists exactly what it
    reads and re-runs only when one of them changes; ``omit`` drops nested keys it does not
    read, dotted below that section (``"sampling_eval.bootstrap"``).
    """
    node = config
    for key in path:
        node = node[key]
    if keys is not None:
        node = {k: node[k] for k in keys}
    for dotted in omit:
        node = _without(node, dotted.split("."))
    return compact_json(node)


def _without(node: Mapping, parts: list[str]) -> dict:
    head, rest = parts[0], parts[1:]
    if head not in node:
        raise KeyError(f"params_json: no key {head!r} to omit (have: {', '.join(node)})")
    out = dict(node)
    if rest:
        out[head] = _without(node[head], rest)
    else:
        del out[head]
    return out


def compact_json(value) -> str:
    """Values a rule derives from the config (not a config section), in params_json's format."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def results_path(results_dir: str, *parts: str) -> str:
    return "/".join([results_dir, *parts])


def raw_files(config: Mapping, domain: str) -> dict[str, str]:
    """Raw review and meta files of a domain, wherever the configured source keeps them."""
    results_dir = config["results_dir"]
    source = config["data"]["source"]
    if source == "sample":
        base = results_path(results_dir, "sample_world", domain)
        return {"reviews": f"{base}/{domain}.jsonl", "meta": f"{base}/meta_{domain}.jsonl"}
    if source == "download":
        base = results_path(results_dir, "download", domain)
        return {"reviews": f"{base}/{domain}.jsonl.gz", "meta": f"{base}/meta_{domain}.jsonl.gz"}
    from personalir.data.download import locate_local

    found = locate_local(config["data"]["local_dir"], domain)
    return {"reviews": str(found["review"]), "meta": str(found["meta"])}


# --- retrieval stage -----------------------------------------------------------------------


def retrieval_first_stage(retrieval: Mapping, name: str) -> str | None:
    """The first stage a retriever reranks (``params.first_stage``), or None."""
    return (retrieval["retrievers"][name].get("params") or {}).get("first_stage")


def retrieval_encoding_donors(retrieval: Mapping, name: str) -> list[str]:
    """Built retrievers whose cached encodings ``name`` reads (``retrieval.encoding_cache``),
    so the workflow runs ``name`` after them: the dense and sparse runs with the same type
    and model as a ``fused_dense_sparse`` entry's members. Empty for other entries."""
    defs = retrieval["retrievers"]
    entry = defs[name]
    if not retrieval.get("encoding_cache", True) or entry.get("type") != "fused_dense_sparse":
        return []
    from personalir.retrieval.base import RETRIEVERS
    from personalir.retrieval.hybrid import FusedDenseSparseRetriever

    members = set(FusedDenseSparseRetriever.member_encoders(entry.get("params")))

    def identity(other: Mapping) -> tuple[str, str | None]:
        kind = other.get("type")
        cls = RETRIEVERS.get(kind) if kind in RETRIEVERS else None
        return kind, other.get("model") or getattr(cls, "default_model", None)

    built, _ = retrieval_names(retrieval)
    return [n for n in built if n != name and identity(defs[n]) in members]


def retrieval_names(retrieval: Mapping) -> tuple[list[str], list[str]]:
    """Names whose runs the workflow makes: (built retrievers, imported run files), the used
    ones plus the first stages they need."""
    defs, run_files = retrieval["retrievers"], retrieval["run_files"]
    for name in retrieval["use"]:
        if name in defs and name in run_files:
            raise ValueError(f"retrieval: {name!r} is both a retriever and a run file")
        if name not in defs and name not in run_files:
            raise ValueError(
                f"retrieval.use names {name!r}, which is in neither retrieval.retrievers "
                "nor retrieval.run_files"
            )
    pending, built, imported = list(retrieval["use"]), [], []
    while pending:
        name = pending.pop(0)
        if name in built or name in imported:
            continue
        if name in run_files:
            imported.append(name)
            continue
        if name not in defs:
            raise ValueError(f"retrieval: first stage {name!r} is not defined")
        built.append(name)
        first = retrieval_first_stage(retrieval, name)
        if first:
            pending.append(first)
    return built, imported


def name_pattern(names) -> str:
    """A wildcard constraint matching exactly these names (nothing when empty)."""
    import re

    return "|".join(re.escape(n) for n in names) or "(?!x)x"


def retrieval_query_source(config: Mapping, wildcards) -> str:
    """The PQB query file of a domain: this workflow's benchmark or a released file."""
    q = config["retrieval"]["queries"]
    if q["source"] != "benchmark":  # released, released-v0
        if not q["released_path"]:
            raise ValueError(
                f"retrieval.queries.source is {q['source']!r} but released_path is null"
            )
        return q["released_path"].format(domain=wildcards.domain)
    return results_path(config["results_dir"], "queries", wildcards.domain, "benchmark.jsonl")


def retrieval_resource(retrieval: Mapping, name: str, key: str):
    """A retriever's own resource setting, or the stage default."""
    value = retrieval["retrievers"].get(name, {}).get(key)
    return retrieval["resources"][key] if value is None else value


# --- compute and presentation ----------------------------------------------------------------
# Presentation steps render what compute steps wrote (tables, figures, the PDF, the provenance
# record); they may read table/figure modules, compute steps never do, so restyling a figure
# re-runs only presentation steps (tests/unit/test_presentation.py checks it on dvc.yaml).
PRESENTATION_RULE_SUFFIXES = ("_table", "_tables", "_figure", "_figures")
PRESENTATION_RULE_FILES = ("report.smk",)
PRESENTATION_RULES = ("provenance",)


def is_presentation_rule(name: str, snakefile: str = "") -> bool:
    """Tables, figures, the report stage's rules (statistics table, PDF) and provenance."""
    return (
        name.endswith(PRESENTATION_RULE_SUFFIXES)
        or name in PRESENTATION_RULES
        or snakefile.rsplit("/", 1)[-1] in PRESENTATION_RULE_FILES
    )


def is_presentation_module(path: str) -> bool:
    """``src/personalir/<stage>/{tables,figures}.py``, ``common/latex.py`` and ``report/``."""
    parts = path.split("/")
    if parts[:2] != ["src", "personalir"] or not path.endswith(".py"):
        return False
    inner = parts[2:]
    return (
        inner[-1] in ("tables.py", "figures.py")
        or inner == ["common", "latex.py"]
        or (inner[0] == "report" and inner[-1] != "__init__.py")
    )
