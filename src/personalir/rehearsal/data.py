"""Stand-in data for the TTP paper's released sets, at their released sizes: a sample-world
domain drawn at the set's item and user counts, its search log, written in the set's published
format (PersonalWAB's JSON files, KuaiSearch's lite JSONL files) by the same writer the
embedded default's Table 5 fixtures use (:mod:`personalir.ttp.inputs.public_fixture`).

The sizes come from ``config/rehearsal_data.yaml`` (each with its source); the files are
synthetic, only their formats and volumes are the released sets'. The rule
``rehearsal_data`` (rules/rehearsal.smk) runs :func:`write_standin_set` once per set.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from personalir.data.sample_world import SearchLogParams, build_world, write_search_log
from personalir.data.sample_world.files import write_world
from personalir.ttp.inputs.public_fixture import write_fixture

SET_KEYS = ("format", "domain", "n_products", "n_users", "test_share", "source")


def check_sets(sets: Mapping, where: str) -> None:
    """Every set names exactly :data:`SET_KEYS`; raise naming the file and the set otherwise."""
    if not isinstance(sets, Mapping) or not sets:
        raise ValueError(f"{where}: `sets` must map set names to their sizes")
    for name, spec in sets.items():
        keys = set(spec) if isinstance(spec, Mapping) else set()
        if keys != set(SET_KEYS):
            raise ValueError(
                f"{where}: set {name!r} must give exactly {list(SET_KEYS)}; "
                f"missing {sorted(set(SET_KEYS) - keys)}, unknown {sorted(keys - set(SET_KEYS))}"
            )


def write_standin_set(
    spec: Mapping,
    *,
    seed: int,
    search_log: Mapping,
    out_dir: str | Path,
    min_sentences_per_user: int,
) -> dict:
    """Draw the world of ``spec`` (domain, n_products, n_users), write its search log and the
    set's files in ``spec['format']`` into ``out_dir``; return the counts written."""
    out = Path(out_dir)
    work = out / ".world"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    world = build_world(
        spec["domain"],
        seed=seed,
        n_products=int(spec["n_products"]),
        n_users=int(spec["n_users"]),
        min_sentences_per_user=min_sentences_per_user,
    )
    drawn = time.monotonic() - started
    counts = write_world(
        world,
        reviews=work / "reviews.jsonl",
        meta=work / "meta.jsonl",
        truth=work / "planted_truth.json",
    )
    log_report = write_search_log(
        world,
        SearchLogParams.from_config(dict(search_log)),
        seed,
        log_path=work / "search_log.jsonl",
        report_path=work / "search_log.report.json",
    )
    written = write_fixture(
        spec["format"],
        reviews=work / "reviews.jsonl",
        meta=work / "meta.jsonl",
        search_log=work / "search_log.jsonl",
        out_dir=out,
        domain=spec["domain"],
        seed=seed,
        test_share=float(spec["test_share"]),
    )
    shutil.rmtree(work)
    return {
        "synthetic": True,
        "note": "sample-world stand-in at the released set's volume; not the released data",
        "requested": dict(spec),
        "world": counts,
        "searches": log_report,
        "written": written,
        "seconds": {"draw": round(drawn, 1), "total": round(time.monotonic() - started, 1)},
    }
