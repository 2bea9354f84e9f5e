"""Helpers the Snakemake rule modules use (kept out of the Snakefiles, which stay glue)."""

from __future__ import annotations

import json
from collections.abc import Mapping


def params_json(config: Mapping, *keys: str) -> str:
    """A config section as compact JSON, handed to a workflow script (and a rerun trigger)."""
    node = config
    for key in keys:
        node = node[key]
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


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
