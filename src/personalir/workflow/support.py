"""Helpers the Snakemake rule modules use (kept out of the Snakefiles, which stay glue)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence

from personalir.common.config import REPO_ROOT
from personalir.retrieval.base import RETRIEVERS
from personalir.retrieval.hybrid import FusedDenseSparseRetriever


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


def benchmark_path(root: str, stage: str, rule: str, *wildcards: str) -> str:
    """``<root>/<stage>/<rule>[.{w1}.{w2}].tsv``: a rule's Snakemake benchmark file, one per
    job (its wildcards in the name)."""
    suffix = "".join(f".{{{w}}}" for w in wildcards)
    return f"{root}/{stage}/{rule}{suffix}.tsv"


class MissingInput(ValueError):
    """A configured target needs a raw file that the configuration does not provide."""


# What the product catalogue (the meta file) feeds: a config switch per stage that needs it.
CATALOGUE_STAGES = (
    ("queries.enabled", "query generation (PQB)"),
    ("retrieval.enabled", "retrieval"),
    ("ttp.enabled", "TTP (with ttp.source: sample_world)"),
    ("paper.build_pdf", "the paper PDF"),
    ("validation.enabled", "validation (it judges the PQB queries)"),
)


def raw_file(config: Mapping, domain: str, table: str) -> str:
    """The raw ``reviews`` or ``meta`` file of a domain; ``MissingInput`` names what is missing."""
    results_dir = config["results_dir"]
    source = config["data"]["source"]
    if source == "sample":
        base = results_path(results_dir, "sample_world", domain)
        return f"{base}/{domain}.jsonl" if table == "reviews" else f"{base}/meta_{domain}.jsonl"
    if source == "download":
        base = results_path(results_dir, "download", domain)
        name = f"{domain}.jsonl.gz" if table == "reviews" else f"meta_{domain}.jsonl.gz"
        return f"{base}/{name}"
    path, problem = local_raw_file(config["data"], domain, table)
    if path is None:
        if table == "meta":
            raise MissingInput(catalogue_message(domain, problem))
        raise MissingInput(
            f"no review file for {domain}: {problem}; set data.local.reviews: <file> "
            "(or data.local_dir: <folder>)"
        )
    return path


def local_raw_file(data: Mapping, domain: str, table: str) -> tuple[str | None, str]:
    """``(path, "")`` of a local raw file, or ``(None, why it is missing)``.

    ``data.local.<table>`` (``{domain}`` is replaced) wins over ``data.local_dir``; a meta
    file that is neither set nor in ``local_dir`` means the domain has no catalogue.
    """
    from pathlib import Path

    key = "reviews" if table == "reviews" else "meta"
    explicit = (data.get("local") or {}).get(key)
    if explicit:
        path = Path(explicit.format(domain=domain))
        if not path.is_file():
            return None, f"data.local.{key} is {path}, which does not exist"
        return str(path), ""
    local_dir = data.get("local_dir")
    if not local_dir:
        return None, f"neither data.local.{key} nor data.local_dir is set"
    folder = Path(local_dir)
    stem = domain if table == "reviews" else f"meta_{domain}"
    names = [f"{stem}.jsonl", f"{stem}.jsonl.gz"]
    hits = [folder / n for n in names if (folder / n).is_file()]
    if len(hits) > 1:
        raise ValueError(f"{folder}: both {names[0]} and {names[1]} exist for {domain}; keep one")
    if not hits:
        return None, f"data.local_dir {folder} holds neither {names[0]} nor {names[1]}"
    return str(hits[0]), ""


def catalogue_message(domain: str, problem: str) -> str:
    stages = ", ".join(f"{label} ({key})" for key, label in CATALOGUE_STAGES)
    return (
        f"no product catalogue (meta file) for {domain}: {problem}. Product documents need it, "
        f"and so do {stages}, the dataset statistics and error sampling with "
        "errors.sampling_eval.text_source: product_titles. Set data.local.meta: <meta file>, "
        "or run without them (config/real_reviews.yaml turns them off)"
    )


def has_catalogue(config: Mapping, domain: str) -> bool:
    if config["data"]["source"] != "local":
        return True
    return local_raw_file(config["data"], domain, "meta")[0] is not None


def config_conflicts(config: Mapping) -> list[str]:
    """Why the configuration cannot run, checked when the workflow starts (so a run stops
    before its first job instead of inside one): settings that need a product catalogue some
    domain lacks. Empty when it can run."""
    return catalogue_conflicts(config)


def catalogue_conflicts(config: Mapping) -> list[str]:
    """Enabled settings that need a product catalogue some domain lacks, each with its fix."""
    missing = [d for d in config["domains"] if not has_catalogue(config, d)]
    if not missing:
        return []
    problems = []
    for key, label in CATALOGUE_STAGES:
        section, name = key.split(".")
        if not config[section][name]:
            continue
        if key == "ttp.enabled" and config["ttp"]["source"] != "sample_world":
            continue
        problems.append(f"{label} is on: set {key}: false")
    if config["errors"]["sampling_eval"]["text_source"] == "product_titles":
        problems.append(
            "error sampling injects into product titles (errors.sampling_eval.text_source: "
            "product_titles): set errors.sampling_eval.text_source: corrected_sentences to use "
            "the users' own sentences that the correction left unchanged"
        )
    if not problems:
        return []
    _, why = local_raw_file(config["data"], missing[0], "meta")
    return [
        f"no product catalogue (meta file) for {', '.join(missing)} ({why}), which these "
        "settings need; set data.local.meta: <meta file>, or (in a --configfile):\n    - "
        + "\n    - ".join(problems)
    ]


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
        # an unknown type stops the workflow at start, naming the retriever
        kind = (defs[name] or {}).get("type")
        if kind is not None and kind not in RETRIEVERS:
            raise ValueError(
                f"retrieval.retrievers.{name}: unknown type {kind!r} "
                f"(registered: {', '.join(RETRIEVERS.names())})"
            )
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


# --- the interpreter the rules run ------------------------------------------------------------
def path_with_interpreter_first(path: str, executable: str) -> str:
    """PATH with the directory of ``executable`` (the interpreter running Snakemake) first.

    Rules run ``python`` from PATH: with it first, ``.venv/bin/snakemake ...`` runs every job in
    the venv without activating it, locally and in the jobs a cluster executor starts with the
    same interpreter; a conda env (``--sdm conda``) activates in front of it.
    """
    first = os.path.dirname(executable)
    rest = [entry for entry in path.split(os.pathsep) if entry and entry != first]
    return os.pathsep.join([first, *rest])


def put_interpreter_first_on_path() -> None:
    """Set this process's PATH (which the rules' shells inherit) to
    :func:`path_with_interpreter_first` of the running interpreter."""
    os.environ["PATH"] = path_with_interpreter_first(os.environ.get("PATH", ""), sys.executable)


# --- software environments (envs/*.yaml, `--software-deployment-method conda`) ----------------
# Stages whose envs/<stage>.yaml (torch's CPU build) has a CUDA twin, envs/<stage>-cuda.yaml (the
# same pins, torch's CUDA build), each with the test of whether a configuration runs that
# stage's models where a GPU may be: the device setting that its GPU rules follow is `cuda`,
# `cuda:<n>` or `auto` (`auto` too, since only the CUDA build ever sees a GPU). A setting
# decides, not the machine: Snakemake builds the envs on the host it runs on (a cluster's login
# node), not on the GPU nodes, and no pip environment marker tells a GPU machine apart.
def wants_cuda(device) -> bool:
    """Whether a torch device setting may use a GPU: `cuda`, `cuda:<n>` or `auto`."""
    return str(device) == "auto" or str(device).startswith("cuda")


CUDA_ENV_STAGES = {
    "errors": lambda c: (
        "gector" in c["errors"]["gec"]["backends"]
        and wants_cuda(c["errors"]["gec"]["gector"]["device"])
    ),
    "queries": lambda c: wants_cuda(c["queries"]["lm"]["device"]),
    "retrieval": lambda c: wants_cuda(c["retrieval"]["device"]),
    "ttp": lambda c: wants_cuda(c["ttp"]["device"]),
}
ENV_DIR = "../envs"  # as a rule's `conda:` names it: relative to rules/


def conda_env(config: Mapping, name: str) -> str:
    """The env file for a rule of stage ``name`` (its ``conda:`` directive), relative to rules/:
    ``../envs/<name>-cuda.yaml`` where the configuration runs the stage's models on a GPU
    (``CUDA_ENV_STAGES``), else ``../envs/<name>.yaml``. Rules declaring a ``gpu`` resource
    name their env with it (``conda: workflow_support.conda_env(config, "ttp")``)."""
    if not (REPO_ROOT / "envs" / f"{name}.yaml").is_file():
        raise ValueError(f"conda_env: no environment envs/{name}.yaml")
    wants = CUDA_ENV_STAGES.get(name)
    return f"{ENV_DIR}/{name}-cuda.yaml" if wants and wants(config) else f"{ENV_DIR}/{name}.yaml"


# --- compute and presentation ----------------------------------------------------------------
# Presentation steps render what compute steps wrote (tables, figures, the PDF, the provenance
# record); they may read table/figure modules, compute steps never do, so restyling a figure
# re-runs only presentation steps (tests/unit/test_presentation.py checks it on dvc.yaml).
# Rule names ending in _table(s) or _figure(s), or a paper-numbered _table8 / _figure8.
PRESENTATION_RULE_NAME = r"_(tables?|figures?)\d*"
PRESENTATION_RULE_FILES = ("report.smk",)
PRESENTATION_RULES = ("provenance",)
# Module names: tables.py, figures.py, or a paper-numbered figure8.py / table5.py.
PRESENTATION_MODULE_NAME = r"(tables|figures|table\d+|figure\d+)\.py"


def is_presentation_rule(name: str, snakefile: str = "") -> bool:
    """Tables, figures, the report stage's rules (statistics table, PDF) and provenance."""
    import re

    return (
        re.search(PRESENTATION_RULE_NAME + "$", name) is not None
        or name in PRESENTATION_RULES
        or snakefile.rsplit("/", 1)[-1] in PRESENTATION_RULE_FILES
    )


def is_presentation_module(path: str) -> bool:
    """``src/personalir/<stage>/{tables,figures}.py`` (or a paper-numbered ``figure8.py``),
    ``common/latex.py``, ``report/`` and the TTP stage's ``paper/`` room."""
    import re

    parts = path.split("/")
    if parts[:2] != ["src", "personalir"] or not path.endswith(".py"):
        return False
    inner = parts[2:]
    return (
        re.fullmatch(PRESENTATION_MODULE_NAME, inner[-1]) is not None
        or inner == ["common", "latex.py"]
        or (inner[0] == "report" and inner[-1] != "__init__.py")
        or (inner[:2] == ["ttp", "paper"] and inner[-1] != "__init__.py")
    )
