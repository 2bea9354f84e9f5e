"""Helpers of the TTP rule modules for Table 5's public sets (PersonalWAB, KuaiSearch): which
sets the configuration evaluates, where their files are, and which runs and cells they need."""

from __future__ import annotations

from collections.abc import Mapping

from personalir.ttp.evaluation.names import PUBLIC_MEASURES
from personalir.workflow.ttp import example_sets


def public_sets(config: Mapping) -> dict[str, dict]:
    """``ttp.public.sets`` (Table 5 column -> ``{format, dir, fixture_domain}``), checked:
    exactly one of ``dir`` and ``fixture_domain``, a fixture domain among ``domains``, no name
    shared with a training set, every method in ``ttp.methods``."""
    ttp = config["ttp"]
    sets = {
        k: {"dir": None, "fixture_domain": None, **v}
        for k, v in (ttp.get("public") or {}).get("sets", {}).items()
    }
    if not sets or not ttp.get("enabled", True):
        return {}
    for name, spec in sets.items():
        where = f"ttp.public.sets.{name}"
        if bool(spec.get("dir")) == bool(spec.get("fixture_domain")):
            raise ValueError(f"{where}: give exactly one of dir and fixture_domain")
        domain = spec.get("fixture_domain")
        if domain and domain not in config["domains"]:
            raise ValueError(
                f"{where}.fixture_domain {domain!r} is not a configured domain "
                f"{config['domains']}: name one of them (an overlay cannot empty ttp.public.sets)"
            )
        if name in example_sets(config):
            raise ValueError(f"{where}: the name {name!r} is already a training example set")
    unknown = [m for m in ttp["public"]["methods"] if m not in ttp["methods"]]
    if unknown:
        raise ValueError(
            f"ttp.public.methods {unknown} are not in ttp.methods: add them there or remove "
            "them from ttp.public.methods"
        )
    return sets


def public_sets_of(config: Mapping, fmt: str) -> list[str]:
    return [k for k, v in public_sets(config).items() if v["format"] == fmt]


def public_fixture_inputs(config: Mapping, name: str) -> dict[str, str]:
    """The sample-world files a fixture-scale public set is written from."""
    domain = public_sets(config)[name]["fixture_domain"]
    root = f"{config['results_dir']}/sample_world/{domain}"
    return {
        "reviews": f"{root}/{domain}.jsonl",
        "meta": f"{root}/meta_{domain}.jsonl",
        "search_log": f"{root}/search_log.jsonl",
    }


# Files a fixture-scale set's format writes, relative to its folder.
PUBLIC_FIXTURE_FILES = {
    "personalwab": ("all_products.json", "user_history.json", "user_instructions.json"),
    "kuaisearch": (
        "items_lite/train.jsonl",
        "recall_lite/train.jsonl",
        "recall_lite/test.jsonl",
    ),
}


def public_fixture_dir(results_dir: str, name: str) -> str:
    return f"{results_dir}/ttp/public/{name}/files"


def public_data_dir(config: Mapping, name: str) -> str:
    spec = public_sets(config)[name]
    return spec["dir"] or public_fixture_dir(config["results_dir"], name)


def public_source_inputs(config: Mapping, name: str) -> dict[str, list[str]]:
    """Inputs of ``ttp_public_examples``: a fixture's files (a configured folder is read as is)."""
    spec = public_sets(config)[name]
    if spec["dir"]:
        return {}
    folder = public_fixture_dir(config["results_dir"], name)
    return {"files": [f"{folder}/{f}" for f in PUBLIC_FIXTURE_FILES[spec["format"]]]}


def public_cells(config: Mapping, paper_path: str) -> dict[str, list[str]]:
    """Set -> the measures Table 5 shows for it: the paper's columns for a set it reports
    (``table5.columns`` of the paper-results file), else all three."""
    import yaml

    with open(paper_path, encoding="utf-8") as fh:
        columns = ((yaml.safe_load(fh) or {}).get("table5") or {}).get("columns") or {}
    return {s: list(columns.get(s) or PUBLIC_MEASURES) for s in public_sets(config)}


def public_run_specs(config: Mapping) -> list[tuple[str, str, str]]:
    res = config["results_dir"]
    return [
        (s, m, f"{res}/ttp/{s}/runs/{m}.trec")
        for s in public_sets(config)
        for m in config["ttp"]["public"]["methods"]
    ]
