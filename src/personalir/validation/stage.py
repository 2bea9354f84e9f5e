"""The validation stage's steps, one function per rule (the workflow scripts only parse
arguments): items -> judge -> annotation exports -> human labels and agreement -> tables.
See docs/validation.md for the protocol."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from personalir.common.io import read_parquet, write_json, write_jsonl, write_text
from personalir.common.seeding import derive_seed
from personalir.validation import agreement as agreement_mod
from personalir.validation import human as human_mod
from personalir.validation import items as items_mod
from personalir.validation import simulate
from personalir.validation.dimensions import DIMENSIONS
from personalir.validation.judge import JudgeSettings, NeedsCall, ResponseCache, judge_items
from personalir.validation.launch import local_server

log = logging.getLogger("personalir.validation")
#: How reports name the local server's endpoint (its port is chosen per run).
LOCAL_URL = "http://127.0.0.1:<port>/v1"


def read_jsonl(path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_no}: not a JSON line ({exc.msg})") from None
    return out


def csv_text(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, lineterminator="\n", float_format="%.6f")


# --- items ---------------------------------------------------------------------------------
def make_items(
    *,
    domains,
    benchmarks,
    sentences,
    edits,
    params: dict,
    seed: int,
    items_out,
    human_items_out,
    key_out,
    report_out,
) -> dict:
    """Blinded items (judge set and human sample), their hidden key, and a report."""
    pairs, per_domain_sentences, per_domain_errors = [], {}, {}
    for domain, bench, sent, edit in zip(domains, benchmarks, sentences, edits, strict=True):
        rows = read_jsonl(bench)
        pairs.extend(items_mod.pairs_of(rows))
        per_domain_sentences[domain] = items_mod.user_sentences(read_parquet(sent))
        per_domain_errors[domain] = items_mod.user_errors(read_parquet(edit))
    sample_cfg, judge_cfg = params["sample"], params["judge"]
    stage_seed = derive_seed(seed, "validation")
    chosen, strata = items_mod.stratified_sample(pairs, sample_cfg["size"], stage_seed, domains)
    items, key = items_mod.build_items(
        pairs,
        per_domain_sentences,
        per_domain_errors,
        human_sample=chosen,
        include_all=judge_cfg["scope"] == "all",
        history_sentences=sample_cfg["history_sentences"],
        max_user_errors=sample_cfg["max_user_errors"],
        seed=stage_seed,
        dimensions=judge_cfg["dimensions"],
    )
    human = [it for it, k in zip(items, key, strict=True) if k["human_sample"]]
    write_jsonl(items_out, items)
    write_jsonl(human_items_out, human)
    write_jsonl(key_out, key)
    no_history = sum(
        1
        for it in human
        if it["kind"] == "syntactic" and not (it["user_a_sentences"] and it["user_b_sentences"])
    )
    no_errors = sum(1 for it in human if it["kind"] == "writing_error" and not it["user_errors"])
    report = {
        "pairs": len(pairs),
        "requested_sample": sample_cfg["size"],
        "human_sample": len(human),
        "judged_items": len(items),
        "scope": judge_cfg["scope"],
        "strata": strata,
        "questions": sum(len(it["dimensions"]) for it in items),
        "items_without_history": no_history,
        "items_without_user_errors": no_errors,
        "dimensions": {n: DIMENSIONS.get(n).prompt_version for n in judge_cfg["dimensions"]},
    }
    write_json(report_out, report)
    return report


# --- judge ---------------------------------------------------------------------------------
def judge_settings(judge_cfg: dict, *, seed: int, base_url: str, model: str):

    label = judge_cfg["label"] or model.removeprefix("packaged:")
    if judge_cfg["server"] == "local":
        label = f"{label} (local server)"
    return JudgeSettings(
        base_url=base_url,
        model=model,
        label=label,
        api_key_env=judge_cfg["api_key_env"],
        temperature=judge_cfg["temperature"],
        top_p=judge_cfg["top_p"],
        max_tokens=judge_cfg["max_tokens"],
        seed=derive_seed(seed, "validation-judge") % (2**31),
        structured_output=judge_cfg["structured_output"],
        timeout_s=judge_cfg["timeout_s"],
        max_concurrency=judge_cfg["max_concurrency"],
        max_retries=judge_cfg["max_retries"],
        parse_retries=judge_cfg["parse_retries"],
        retry_temperature=judge_cfg["retry_temperature"],
        extra=judge_cfg["extra_body"],
    )


def run_judge(
    *,
    items_path,
    judge_cfg: dict,
    seed: int,
    threads: int,
    cache_path,
    model_cache,
    server_log,
    judgements_out,
    report_out,
) -> dict:
    """Ask the judge every question of the items; start the local server when configured."""

    items = read_jsonl(items_path)
    cache = ResponseCache(cache_path) if cache_path else None
    local = judge_cfg["server"] == "local"
    if not local and (not judge_cfg["base_url"] or not judge_cfg["model"]):
        raise ValueError(
            "validation.judge.server is remote: set validation.judge.base_url and "
            "validation.judge.model"
        )
    model = judge_cfg["model"] or judge_cfg["local_model"]
    try:
        judged = None
        if local and cache is not None:
            # Every answer cached: no server to start (a rerun costs nothing).
            offline = judge_settings(judge_cfg, seed=seed, base_url=LOCAL_URL, model=model)
            try:
                judged = judge_items(items, offline, cache, offline=True, progress=False)
                settings = offline
            except NeedsCall:
                judged = None
        if judged is None and local:
            with local_server(
                judge_cfg["local_model"],
                threads=threads,
                model_cache=model_cache or None,
                startup_timeout=judge_cfg["startup_timeout"],
                log_path=server_log,
                served_name=model,
            ) as srv:
                settings = judge_settings(judge_cfg, seed=seed, base_url=srv.base_url, model=model)
                judged = judge_items(items, settings, cache)
        elif judged is None:
            settings = judge_settings(
                judge_cfg, seed=seed, base_url=judge_cfg["base_url"], model=model
            )
            judged = judge_items(items, settings, cache)
    finally:
        if cache is not None:
            cache.close()
    judgements, report = judged
    if local:  # the port changes from run to run
        report["base_url"] = LOCAL_URL
        report["settings"]["base_url"] = LOCAL_URL
    report["server"] = judge_cfg["server"]
    write_text(judgements_out, csv_text(pd.DataFrame(judgements)))
    write_json(report_out, report)
    return report


# --- annotation exports --------------------------------------------------------------------
def export_annotation(
    *,
    human_items_path,
    human_cfg: dict,
    dimensions,
    seed: int,
    tasks_out,
    config_out,
    csv_out,
    guide_out,
    assignment_out,
) -> None:

    items = read_jsonl(human_items_path)
    dims = [DIMENSIONS.get(n) for n in dimensions]
    assignment = human_mod.assign_annotators(
        items,
        human_cfg["annotators"],
        primaries=human_cfg["primaries"],
        seed=derive_seed(seed, "validation-assignment"),
    )
    human_mod.export_label_studio(items, dims, tasks_out, config_out)
    human_mod.export_csv(items, assignment, csv_out)
    write_text(
        guide_out,
        human_mod.annotator_guide(
            dims, primaries=human_cfg["primaries"], n_annotators=len(human_cfg["annotators"])
        ),
    )
    write_text(assignment_out, csv_text(assignment))


# --- human labels and agreement ------------------------------------------------------------
def human_labels(
    *,
    human_items_path,
    assignment_path,
    judgements_path,
    human_cfg: dict,
    agreement_cfg: dict,
    dimensions,
    seed: int,
    simulated_out,
    annotations_out,
    labels_out,
    adjudication_out,
    agreement_out,
    report_out,
) -> dict:
    """Import (or simulate, then import) the annotations; adjudicate; agreement."""

    items = read_jsonl(human_items_path)
    dims = [DIMENSIONS.get(n) for n in dimensions]
    assignment = pd.read_csv(assignment_path, dtype=str)
    source = human_cfg["source"]
    files = list(human_cfg["files"])
    if source == "simulated":
        judgements = pd.read_csv(judgements_path, dtype=str, keep_default_na=False)
        judgements = judgements[judgements["status"] == "ok"][["item_id", "dimension", "label"]]
        sim = human_cfg["simulated"]
        frame = simulate.simulate_annotations(
            items,
            judgements,
            assignment,
            dims,
            annotators=human_cfg["annotators"],
            bias_sd=sim["bias_sd"],
            noise_sd=sim["noise_sd"],
            nominal_agreement=sim["nominal_agreement"],
            seed=derive_seed(seed, "validation-simulated-annotators"),
        )
        simulate.write_annotations_csv(frame, simulated_out)
        files = [str(simulated_out)]
    else:
        write_text(simulated_out, "")  # nothing simulated: an empty placeholder
    imported = []
    for path in files:
        imported.append(
            human_mod.import_annotations(
                path, items, dims, assignment, annotator_ids=human_cfg["annotator_ids"]
            )
        )
    columns = ["item_id", "dimension", "annotator", "label", "source"]
    annotations = (
        pd.concat(imported, ignore_index=True) if imported else pd.DataFrame(columns=columns)
    )
    if source == "simulated":
        annotations["source"] = annotations["source"].map(
            lambda s: s.replace(str(simulated_out), Path(simulated_out).name)
        )
    write_text(annotations_out, csv_text(annotations))
    labels = human_mod.adjudicate(annotations, assignment, dims, items=items)
    write_text(labels_out, csv_text(labels))
    to_adjudicate = human_mod.adjudication_rows(items, assignment, labels, adjudication_out)
    rows = []
    for dim in dims:
        result = agreement_mod.agreement(
            annotations,
            assignment,
            dim,
            n_boot=agreement_cfg["bootstrap"],
            seed=derive_seed(seed, "validation-agreement", dim.name),
            ci=agreement_cfg["ci"],
        )
        rows.append({"dimension": dim.name, **result})
    agreement = pd.DataFrame(rows)
    write_text(agreement_out, csv_text(agreement))
    status = labels["status"].value_counts().to_dict() if len(labels) else {}
    report = {
        "source": source,
        "files": [Path(f).name for f in files],
        "annotations": int(len(annotations)),
        "annotators": human_cfg["annotators"],
        "primaries": human_cfg["primaries"],
        "items": len(items),
        "label_status": {k: int(v) for k, v in sorted(status.items())},
        "skipped_empty_rows": int(sum(f.attrs.get("skipped_empty", 0) for f in imported)),
        "awaiting_adjudication": to_adjudicate,
    }
    write_json(report_out, report)
    return report
