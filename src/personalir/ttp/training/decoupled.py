"""Decoupled-Stage's first stage: the frozen rewriter's rewrites of every example.

The paper's Decoupled-Stage baseline fine-tunes a rewriter on the same SFT data as TTP, freezes
it, and trains a separate retriever on the queries it rewrites. Here:

1. rule ``ttp_rewriter``: :func:`personalir.ttp.training.jobs.run_sft` with ``rewriter=True``, the
   TTP SFT recipe (same backbone, LoRA, teacher targets, seed, batch order) with the token loss
   alone; its epoch is chosen on the validation split by how well the dense baselines' base
   bi-encoder retrieves with its validation rewrites;
2. rule ``ttp_rewrites`` (:func:`write_rewrites`): the frozen rewriter writes
   ``<think>rewrite</think>`` for every example of a set (train, valid and test; greedy,
   under the target grammar, as the TTP run decodes), one JSON per set;
3. rule ``ttp_dense_ft`` with variant ``decoupled``: the bi-encoder fine-tuned on (rewrite,
   purchased item) pairs of the training examples, its epoch chosen on the validation
   examples' rewrites (:mod:`personalir.ttp.training.dense_ft`);
4. the ``decoupled`` method's run: the test examples' rewrites as the queries of that
   retriever (:class:`personalir.ttp.methods.generative.DecoupledStage`).

The rewrites file holds the same ``rewrites`` mapping as a TTP run's info (example id ->
``generated``, ``rewrite``, ``well_formed``), plus each example's split.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from personalir.common.device import ttp_device
from personalir.common.io import read_json, write_json
from personalir.ttp.inputs.data import ItemCorpus, read_examples
from personalir.ttp.model.backbone import load_adapter, load_backbone
from personalir.ttp.model.prompts import parse_generated
from personalir.ttp.training.sft_data import build_prompt, sft_settings, ttp_encoder


def write_rewrites(
    *,
    backbone: str | Path,
    adapter: str | Path,
    examples_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    threads: int,
    out: str | Path,
    log=print,
) -> dict:
    """Rule ttp_rewrites: the frozen rewriter's rewrite of every example of one set."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    examples = read_examples(examples_path)
    if not examples:
        raise ValueError(f"{examples_path}: no examples to rewrite")
    corpus = ItemCorpus.read(items_path)
    model, tok, info = load_backbone(backbone, ttp["backbone"]["dtype"])
    model = load_adapter(model, adapter, device=ttp_device(ttp))  # loaded on the CPU, moved
    settings = sft_settings(ttp)
    encoder = ttp_encoder(model, tok, settings, ttp)
    prompts = [build_prompt(ex, corpus, tok, settings) for ex in examples]
    generated, _, flags = encoder.generate_and_embed(
        prompts, int(ttp["inference"]["max_new_tokens"])
    )
    rewrites = {}
    for ex, g, well in zip(examples, generated, flags, strict=True):
        rewrite = parse_generated(g)[0]
        rewrites[ex.example_id] = {
            "split": ex.split,
            "generated": g,
            "rewrite": rewrite,
            "well_formed": bool(well),
            "kept_query": " ".join(ex.query.split()).lower() == rewrite.lower(),
        }
    per_split = Counter(ex.split for ex in examples)
    result = {
        "rewriter": str(adapter),
        "backbone": info.description,
        "examples": len(examples),
        "per_split": dict(sorted(per_split.items())),
        "well_formed_share": round(float(np.mean(flags)), 6),
        "kept_query_share": round(float(np.mean([r["kept_query"] for r in rewrites.values()])), 6),
        "rewrites": rewrites,
    }
    write_json(out, result)
    log(
        f"rewrote {len(examples)} examples ({dict(per_split)}) in "
        f"{time.perf_counter() - t0:.1f}s; well formed {result['well_formed_share']:.3f}, "
        f"query kept {result['kept_query_share']:.3f}"
    )
    return result


def read_rewrites(path: str | Path) -> dict[str, str]:
    """Example id -> rewrite, from a rewrites file or a TTP run's info."""
    data = read_json(path)
    if "rewrites" not in data:
        raise ValueError(f"{path}: no 'rewrites' mapping (not a rewrites file or a run's info)")
    return {k: v["rewrite"] for k, v in data["rewrites"].items()}
