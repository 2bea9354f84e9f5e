"""Rules ttp_backbone and ttp_sft: prepare the TTP backbone once, then LoRA-fine-tune it.

:func:`prepare` saves the backbone with ``<think>``, ``</think>`` and ``<embed>`` added, so that
SFT and the runs start from the same weights; :func:`run_sft` trains the adapter on every
example set's teacher targets (:mod:`personalir.ttp.training.sft` holds the loop and checkpoints).
Torch and the model code are imported inside the steps, so importing this module is cheap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from personalir.common.causal_lm import stable_adapter_config
from personalir.common.device import to_device, ttp_device
from personalir.common.io import read_json, write_json
from personalir.ttp.inputs.data import ItemCorpus, merge_corpora, read_examples
from personalir.ttp.model.backbone import (
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.training.selection import (
    EmbedderScorer,
    RewriteScorer,
    SelectionSettings,
    ValidationScorer,
    choose,
    selection_record,
)
from personalir.ttp.training.sft_data import build_rows, sft_settings, ttp_encoder


def prepare(
    *, ttp: Mapping, seed: int, out_dir: str | Path, model_cache: str | None = None, log=print
) -> dict:

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


def validation_scorer(
    examples_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    ttp: Mapping,
    sft_settings,
    seed: int,
    *,
    rewriter: bool = False,
    embedder: bool = False,
):
    """The validation examples of every example set with their set's items
    (:class:`personalir.ttp.training.selection.ValidationScorer`; for a rewriter the
    :class:`~personalir.ttp.training.selection.RewriteScorer`, whose rewrites the dense baselines'
    base bi-encoder retrieves with; for the LLM embedder the
    :class:`~personalir.ttp.training.selection.EmbedderScorer`: no history, no generation)."""

    if len(examples_paths) != len(items_paths):
        raise ValueError("one items file per examples file is needed for model selection")
    sets = [
        (read_examples(e), ItemCorpus.read(i))
        for e, i in zip(examples_paths, items_paths, strict=True)
    ]
    settings = SelectionSettings.from_config(ttp)
    if rewriter:
        return RewriteScorer(
            sets,
            settings,
            sft_settings,
            seed=seed,
            dense_model=ttp["dense"]["model"],
            device=ttp_device(ttp),
        )
    if embedder:
        return EmbedderScorer(sets, settings, sft_settings, seed=seed)
    return ValidationScorer(sets, settings, sft_settings, seed=seed)


def select_candidate(
    candidates: Sequence[dict], load, scorer, encoder, unit: str, log=print
) -> dict:
    """Score each candidate (``load(candidate)`` puts its weights in place) on the
    validation split, leave the chosen one's weights in place; the selection record."""

    if not scorer.examples:
        chosen = candidates[-1] if candidates else None
        if chosen is not None:
            load(chosen)
        record = selection_record([], chosen, scorer, unit)
        record["note"] = f"no validation examples: the last {unit} is kept"
        log(record["note"])
        return record
    scored = []
    for cand in candidates:
        load(cand)
        value = scorer.score(encoder)
        scored.append({unit: cand[unit], "validation": value})
        log(
            f"{unit} {cand[unit]}: validation {scorer.settings.measure} "
            f"{value[scorer.settings.measure]:.4f} ({value['seconds']:.1f}s)"
        )
    best = choose(scored, scorer.settings.measure)
    load(next(c for c in candidates if c[unit] == best[unit]))
    log(f"kept {unit} {best[unit]} of {len(candidates)}")
    return selection_record(scored, best, scorer, unit)


def embedder_record(record: Mapping) -> dict:
    """An SFT record as the LLM embedder trains on it: no history, the query in the
    rewrite's place (nothing for the token loss to learn; its weight is 0)."""
    return {**record, "selected_history": [], "rewrite": record["query"]}


def run_sft(
    *,
    backbone: str | Path,
    sft_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    examples_paths: Sequence[str | Path],
    ttp: Mapping,
    seed: int,
    out_dir: str | Path,
    report_out: str | Path,
    threads: int,
    rewriter: bool = False,
    embedder: bool = False,
    log=print,
) -> dict:
    """Rule ttp_sft (with ``rewriter``, ``ttp_rewriter``; with ``embedder``,
    ``ttp_embedder``): LoRA SFT on every set's teacher targets, the epoch kept chosen on the
    validation split.

    ``rewriter`` trains Decoupled-Stage's first stage: the same recipe, data, seed and
    schedule with the token loss alone (``L = CE``, ``ttp.decoupled.epochs`` as the epoch
    ceiling), its epochs scored by how well the base dense model retrieves with the
    validation rewrites (:class:`~personalir.ttp.training.selection.RewriteScorer`).

    ``embedder`` trains the LLM-embedding baseline (the paper's Qwen-Embedding row) on the
    same backbone, examples, seed and schedule without generation: every record's history is
    dropped and its query takes the rewrite's place (``<think>query</think><embed>``, which
    the run writes itself, nothing generated), InfoNCE alone (``L = NCE``); epochs scored by
    :class:`~personalir.ttp.training.selection.EmbedderScorer`."""
    if rewriter and embedder:
        raise ValueError("train either the rewriter or the embedder, not both")
    import torch

    from personalir.ttp.training.sft import epoch_candidates, load_trainable, train

    device = ttp_device(ttp)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    corpus = merge_corpora(items_paths)
    records = []
    for p in sft_paths:
        with open(p, encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    if embedder:
        records = [embedder_record(r) for r in records]
    model, tok, info = load_backbone(backbone, ttp["backbone"]["dtype"])
    # The SFT's own seed (LoRA initialisation, batch order), for seed studies that keep the
    # world and the examples fixed; null: the workflow seed.
    if ttp["sft"].get("seed") is not None:
        seed = int(ttp["sft"]["seed"])
    peft_model = attach_lora(model, tok, LoraSettings.from_config(ttp["lora"]), seed=seed)
    # LoRA is initialised on the CPU (the same weights whatever the device), then moved.
    peft_model = to_device(peft_model, device)
    overrides = {}
    if rewriter:
        overrides = {"token_weight": 1.0, "contrastive_weight": 0.0}  # nosec B105  # weights
        if ttp["decoupled"]["epochs"] is not None:
            overrides["epochs"] = ttp["decoupled"]["epochs"]
    if embedder:
        overrides = {"token_weight": 0.0, "contrastive_weight": 1.0}  # nosec B105  # weights
    settings = sft_settings(ttp, **overrides)
    encoder = ttp_encoder(peft_model, tok, settings)
    rows = build_rows(records, corpus, encoder, settings)
    t1 = time.perf_counter()
    report = train(peft_model, encoder, rows, settings, out_dir, seed=seed, log=log)
    t2 = time.perf_counter()
    if report["finished"]:
        scorer = validation_scorer(
            examples_paths, items_paths, ttp, settings, seed, rewriter=rewriter, embedder=embedder
        )
        eval_encoder = ttp_encoder(peft_model, tok, settings, ttp)
        candidates = epoch_candidates(Path(out_dir) / "checkpoints", report["run_key"])
        report["selection"] = select_candidate(
            candidates,
            lambda c: load_trainable(peft_model, c["path"]),
            scorer,
            eval_encoder,
            "epoch",
            log=log,
        )
        peft_model.save_pretrained(Path(out_dir) / "adapter")
        stable_adapter_config(Path(out_dir) / "adapter")
        report["seconds_selection"] = round(time.perf_counter() - t2, 3)
    report.update(
        role=(
            "rewriter (Decoupled-Stage, token loss only)"
            if rewriter
            else "embedder (LLM embedding: no history, no generation, InfoNCE only)"
            if embedder
            else "ttp"
        ),
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


def run_grpo(
    *,
    backbone: str | Path,
    sft_adapter: str | Path,
    sft_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    examples_paths: Sequence[str | Path],
    ttp: Mapping,
    variant: str,
    seed: int,
    out_dir: str | Path,
    report_out: str | Path,
    log_out: str | Path,
    threads: int,
    selection_from: str | Path | None = None,
    log=print,
) -> dict:
    """Rule ttp_rl: GRPO of one variant from the SFT adapter (:mod:`personalir.ttp.training.grpo`).

    Without ``selection_from`` the variant chooses its step count on the validation split
    (every step's weights are a candidate, :mod:`personalir.ttp.training.selection`); with it (the
    report of the variant that chose, ``full``), the variant trains that many steps of the
    same schedule, so every ablation gets the full system's training budget.

    Writes ``out_dir/adapter/`` (the RL adapter, loadable like the SFT one), the per-step
    log of TRL's metrics (reward components, KL, losses, selection) and a report.
    Checkpoints live in ``out_dir/checkpoints``; a rerun with the same run key resumes from
    the latest, one with another key discards them."""
    import shutil

    import torch

    from personalir.ttp.training import grpo, rl
    from personalir.ttp.training.sft import load_trainable

    device = ttp_device(ttp)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    section = grpo.variant_settings(ttp["rl"], variant)
    settings = grpo.GRPOSettings.from_config(section)
    seed = int(ttp["sft"].get("seed") or seed)
    corpus = merge_corpora(items_paths)
    records = []
    for p in sft_paths:
        with open(p, encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    model, tok, info = rl.load_policy(
        str(backbone), str(sft_adapter), ttp["backbone"]["dtype"], device=device
    )
    chosen, sft, prompts, item_texts = rl.rl_inputs(records, corpus, tok, ttp, settings.data_share)
    encoder = ttp_encoder(model, tok, sft, ttp)
    out_dir = Path(out_dir)
    ckpt = out_dir / "checkpoints"
    stop_at = None
    if selection_from is not None:
        stop_at = int(read_json(selection_from)["selection"]["chosen"])
    key = grpo_run_key({**section, "stop_at": stop_at}, chosen, seed, sft_adapter)
    key_file = ckpt / "run_key.txt"
    if ckpt.exists() and (not key_file.exists() or key_file.read_text().strip() != key):
        shutil.rmtree(ckpt)
        log(f"discarded checkpoints of another run in {ckpt}")
    ckpt.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key + "\n")
    t1 = time.perf_counter()
    trainer, summary = rl.train_grpo(
        model,
        tok,
        rl.build_dataset(chosen, prompts),
        item_texts,
        settings,
        str(ckpt),
        encoder=encoder,
        seed=seed,
        stop_at=stop_at,
        candidates_dir=None if stop_at is not None else ckpt / "candidates",
        log=log,
    )
    t2 = time.perf_counter()
    if stop_at is None:
        scorer = validation_scorer(examples_paths, items_paths, ttp, sft, seed)
        selection = select_candidate(
            rl.step_candidates(ckpt / "candidates"),
            lambda c: load_trainable(model, c["path"]),
            scorer,
            encoder,
            "step",
            log=log,
        )
    else:
        selection = {
            "unit": "step",
            "chosen": stop_at,
            "from": str(selection_from),
            "note": "trained for the step count the selecting variant chose on validation",
        }
    t3 = time.perf_counter()
    rl.save_rl_adapter(trainer.model, sft_adapter, out_dir / "adapter")
    history = [h for h in trainer.state.log_history if "loss" in h and "step" in h]
    write_json(log_out, history)
    n_completion = sum(h.get("completions/mean_length", 0.0) for h in history)
    report = {
        "variant": variant,
        "backbone": info.description,
        "seed": seed,
        "settings": section,
        "records": len(records),
        "rl_prompts": len(chosen),
        "rl_prompt_ids": [r["example_id"] for r in chosen],
        **summary,
        "seconds_setup": round(t1 - t0, 3),
        "seconds_train": round(t2 - t1, 3),
        "seconds_selection": round(t3 - t2, 3),
        "selection": selection,
        "steps_per_s": round(summary["completed_steps"] / max(t2 - t1, 1e-9), 4),
        "rollout_tokens_per_s": round(
            n_completion * settings.prompts_per_step * settings.group_size / max(t2 - t1, 1e-9), 2
        ),
        "final": {k: history[-1][k] for k in ("reward", "kl") if history and k in history[-1]},
    }
    write_json(report_out, report)
    log(json.dumps({k: v for k, v in report.items() if k not in ("settings", "selections")}))
    # The run is complete: its checkpoints only serve an interrupted run, and a later rerun
    # (forced, or after a code change) must train from the start, not from the last step.
    shutil.rmtree(ckpt, ignore_errors=True)
    return report


def grpo_run_key(section: Mapping, records: Sequence[dict], seed: int, sft_adapter) -> str:
    """What decides an RL run: its settings, seed, prompts, the SFT adapter and the code."""
    import hashlib

    h = hashlib.sha256()
    h.update(json.dumps({"settings": section, "seed": seed}, sort_keys=True).encode())
    for r in records:
        h.update(r["example_id"].encode() + b"\0")
    h.update((Path(sft_adapter) / "adapter_model.safetensors").read_bytes())
    ttp = Path(__file__).parents[1]
    for code in (
        "training/grpo.py",
        "training/rewards.py",
        "model/backbone.py",
        "model/encoder.py",
        "model/prompts.py",
    ):
        h.update((ttp / code).read_bytes())
    return h.hexdigest()[:16]
