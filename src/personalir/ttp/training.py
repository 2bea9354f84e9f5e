"""Rules ttp_backbone and ttp_sft: prepare the TTP backbone once, then LoRA-fine-tune it.

:func:`prepare` saves the backbone with ``<think>``, ``</think>`` and ``<emb>`` added, so that
SFT and the runs start from the same weights; :func:`run_sft` trains the adapter on every
example set's teacher targets (:mod:`personalir.ttp.sft` holds the loop and checkpoints).
Torch and the model code are imported inside the steps, so importing this module is cheap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from personalir.common.io import write_json
from personalir.ttp.data import item_fields, merge_corpora


def prepare(
    *, ttp: Mapping, seed: int, out_dir: str | Path, model_cache: str | None = None, log=print
) -> dict:
    from personalir.ttp.model import BackboneConfig, prepare_backbone, save_backbone

    t0 = time.perf_counter()
    model, tok, info = prepare_backbone(
        BackboneConfig.from_config(ttp["backbone"]), seed, model_cache=model_cache
    )
    save_backbone(model, tok, info, out_dir)
    log(
        f"prepared {info.description}: {info.parameters} parameters in "
        f"{time.perf_counter() - t0:.1f}s"
    )
    return {"backbone": info.description, "seconds": round(time.perf_counter() - t0, 3)}


def run_sft(
    *,
    backbone: str | Path,
    sft_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    ttp: Mapping,
    seed: int,
    out_dir: str | Path,
    report_out: str | Path,
    threads: int,
    log=print,
) -> dict:
    import torch

    from personalir.ttp.model import LoraSettings, TTPEncoder, attach_lora, load_backbone
    from personalir.ttp.sft import SFTSettings, build_rows, train

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    corpus = merge_corpora(items_paths)
    records = []
    for p in sft_paths:
        with open(p, encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    model, tok, info = load_backbone(backbone, ttp["backbone"]["dtype"])
    # The SFT's own seed (LoRA initialisation, batch order), for seed studies that keep the
    # world and the examples fixed; null: the workflow seed.
    if ttp["sft"].get("seed") is not None:
        seed = int(ttp["sft"]["seed"])
    peft_model = attach_lora(model, tok, LoraSettings.from_config(ttp["lora"]), seed=seed)
    settings = SFTSettings.from_config(
        {
            **ttp["sft"],
            "item_fields": item_fields(ttp),
            "max_features": ttp["items"]["max_features"],
        }
    )
    encoder = TTPEncoder(
        peft_model,
        tok,
        max_query_tokens=settings.max_query_tokens,
        max_item_tokens=settings.max_item_tokens,
    )
    rows = build_rows(records, corpus, encoder, settings)
    t1 = time.perf_counter()
    report = train(peft_model, encoder, rows, settings, out_dir, seed=seed, log=log)
    report.update(
        backbone=info.description,
        seed=seed,
        records=len(records),
        neutral_records=sum(r["rewrite_kind"] == "neutral" for r in records),
        mean_query_tokens=float(np.mean([len(r.query_ids) for r in rows])),
        mean_item_tokens=float(np.mean([len(r.item_ids) for r in rows])),
        seconds_setup=round(t1 - t0, 3),
    )
    write_json(report_out, report)
    log(json.dumps({k: v for k, v in report.items() if k != "settings"}))
    return report
