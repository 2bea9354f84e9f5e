"""Contrastive fine-tuning of a sentence-transformers bi-encoder (the dense baselines' models).

The query-only dense baseline, the History-Aware baseline and Decoupled-Stage's retriever
are the same recipe on different query texts (the query; the query with its history; the
frozen rewriter's rewrite, :mod:`personalir.ttp.training.decoupled`): in-batch InfoNCE
(multiple-negatives ranking) between a query text and its purchased item's text, both through
the same encoder, ``scale = 1 / temperature``.
Batches are epoch-wise permutations seeded by ``(seed, "dense_ft", variant, epoch)``;
an item that is the target of two rows of a batch is no negative for either.

:func:`fine_tune_dense` is the rule ``ttp_dense_ft``: one variant's training pairs from every
example set, fine-tuned and saved with its report; the epoch kept is the one best on the
validation split (``ttp.selection``, as for TTP's SFT).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from personalir.common.device import ttp_device
from personalir.common.hf_files import stable_tokenizer_config
from personalir.common.io import write_json
from personalir.common.models import resolve_model
from personalir.common.seeding import derive_seed
from personalir.ttp.inputs.data import ItemCorpus, item_fields, merge_corpora, read_examples
from personalir.ttp.model.search import MEASURES, exact_search, per_query_measures
from personalir.ttp.training.decoupled import read_rewrites
from personalir.ttp.training.distill import distillation_loss
from personalir.ttp.training.selection import SelectionSettings, candidate_pool


@dataclass(frozen=True)
class DenseFTSettings:
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 3e-5
    temperature: float = 0.05
    max_length: int = 128
    warmup_ratio: float = 0.1

    @classmethod
    def from_config(cls, section: dict) -> DenseFTSettings:
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})


def fine_tune(
    model_name: str,
    queries: Sequence[str],
    items: Sequence[str],
    item_ids: Sequence[str],
    settings: DenseFTSettings,
    out_dir: str | Path,
    *,
    seed: int,
    variant: str,
    validation: Sequence[tuple] = (),
    measure: str = "MRR@100",
    rewrites: Sequence[str] | None = None,
    terms: Sequence[str] | None = None,
    device: str = "cpu",
    log=print,
) -> dict:
    """Fine-tune and save; with ``validation`` (per example set: validation examples, their
    query texts, the pool's item ids and texts) the epoch that ranks the validation targets
    best by ``measure`` is kept (the earlier among equals), as for TTP's SFT.

    ``terms`` (with ``rewrites``, one intent-enhanced text per query): train with the
    distilled student's objective instead
    (:func:`personalir.ttp.training.distill.distillation_loss`,
    equal weights); validation still ranks with the query texts alone. ``device``: where
    the bi-encoder trains (``ttp.device``, resolved)."""
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer

    if not (len(queries) == len(items) == len(item_ids)) or not queries:
        raise ValueError("queries, items and item ids must be aligned and non-empty")
    if terms is not None and (rewrites is None or len(rewrites) != len(queries)):
        raise ValueError("the student's terms need one rewrite text per query")
    torch.manual_seed(derive_seed(seed, "dense_ft_torch", variant) % (2**63))
    model = SentenceTransformer(resolve_model(model_name).path, device=device)
    model.max_seq_length = settings.max_length
    model.train()
    per_epoch = math.ceil(len(queries) / settings.batch_size)
    steps = max(1, int(math.ceil(settings.epochs * per_epoch)))
    warmup = int(round(settings.warmup_ratio * steps))
    opt = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            (s + 1) / warmup
            if warmup and s < warmup
            else max(0.0, (steps - s) / max(1, steps - warmup))
        ),
    )

    def embed(texts):
        feats = model.tokenize(list(texts))
        if device != "cpu":
            feats = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in feats.items()}
        return F.normalize(model(feats)["sentence_embedding"], dim=-1)

    def validate() -> dict:
        import pandas as pd

        model.eval()
        frames = []
        with torch.no_grad():
            for examples, texts, pool_ids, pool_texts in validation:
                q = model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True)
                d = model.encode(list(pool_texts), convert_to_numpy=True, normalize_embeddings=True)
                ranking = exact_search([e.example_id for e in examples], q, pool_ids, d, 100)
                run = {k: [i for i, _ in v] for k, v in ranking.items()}
                frames.append(per_query_measures(examples, run, variant))
        model.train()
        frame = pd.concat(frames, ignore_index=True)
        return {m: round(float(frame[m].mean()), 6) for m in MEASURES}

    candidates, best_state, best = [], None, None
    losses, t0 = [], time.perf_counter()
    for step in range(steps):
        epoch, k = divmod(step, per_epoch)
        perm = np.random.default_rng(derive_seed(seed, "dense_ft", variant, epoch)).permutation(
            len(queries)
        )
        rows = perm[k * settings.batch_size : (k + 1) * settings.batch_size].tolist()
        q = embed([queries[i] for i in rows])
        d = embed([items[i] for i in rows])
        ids = [item_ids[i] for i in rows]
        if terms is None:
            sims = q @ d.T / settings.temperature
            same = torch.tensor([[a == b for b in ids] for a in ids], device=sims.device)
            eye = torch.eye(len(rows), dtype=torch.bool, device=sims.device)
            sims = sims.masked_fill(same & ~eye, float("-inf"))
            loss = F.cross_entropy(sims, torch.arange(len(rows), device=sims.device))
        else:
            uses_qr = any(t in ("qr_p", "q_qr") for t in terms)
            qr = embed([rewrites[i] for i in rows]) if uses_qr else None
            loss, _ = distillation_loss(
                q, qr, d, terms=terms, temperature=settings.temperature, item_ids=ids
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if (step + 1) % 20 == 0 or step + 1 == steps:
            log(f"[{variant}] step {step + 1}/{steps} loss {losses[-1]:.4f}")
        if validation and ((step + 1) % per_epoch == 0 or step + 1 == steps):
            value = validate()
            epoch = round((step + 1) / per_epoch, 6)
            candidates.append({"epoch": epoch, "validation": value})
            log(f"[{variant}] epoch {epoch}: validation {measure} {value[measure]:.4f}")
            if best is None or value[measure] > best["validation"][measure]:
                best = candidates[-1]
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    stable_tokenizer_config(out_dir)
    return {
        "variant": variant,
        "base_model": model_name,
        "steps": steps,
        "examples": len(queries),
        "seconds": round(time.perf_counter() - t0, 3),
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "selection": {
            "unit": "epoch",
            "measure": measure,
            "validation_examples": sum(len(v[0]) for v in validation),
            "candidates": candidates,
            "chosen": best["epoch"] if best else None,
            "note": (
                "the epoch best on the validation split is kept"
                if best
                else "no validation examples: the last epoch is kept"
            ),
        },
    }


def _query_only(query, history_texts, rewrite, max_length):
    return query


def fine_tune_dense(
    *,
    variant: str,
    examples_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    ttp: Mapping,
    seed: int,
    out_dir: str | Path,
    report_out: str | Path,
    threads: int,
    query_text: Callable[[str, Sequence[str], str | None, int], str] = _query_only,
    uses_history: bool = False,
    needs_rewrites: bool = False,
    rewrites_paths: Sequence[str | Path] = (),
    log=print,
) -> dict:
    """One method's bi-encoder (``variant``: the method's name): trained on
    ``query_text(query, history texts, rewrite, max_length)`` of each training example, the
    method's own text (its class's ``query_text``; the history's texts when ``uses_history``,
    the rewriter's rewrite of every training and validation example from ``rewrites_paths``,
    one per example set, when ``needs_rewrites``)."""
    import torch

    torch.set_num_threads(threads)
    corpus = merge_corpora(items_paths)
    fields, maxf = item_fields(ttp), int(ttp["items"]["max_features"])
    max_length = int(ttp["dense"]["max_length"])

    rewrites: dict[str, str] = {}
    if needs_rewrites:
        if len(rewrites_paths) != len(examples_paths):
            raise ValueError(f"{variant}: one rewrites file per examples file is needed")
        for path in rewrites_paths:
            rewrites.update(read_rewrites(path))
    elif rewrites_paths:
        raise ValueError(f"{variant}: reads no rewrites (its method needs none)")

    def text_of(ex):
        rewrite = None
        if needs_rewrites:
            if ex.example_id not in rewrites:
                raise ValueError(f"{variant}: no rewrite of example {ex.example_id!r}")
            rewrite = rewrites[ex.example_id]
        hist = (
            [corpus[i].text(fields, maxf) for i in ex.selected_history or []]
            if uses_history
            else []
        )
        return query_text(ex.query, hist, rewrite, max_length)

    selection = SelectionSettings.from_config(ttp)
    queries, items, ids, validation = [], [], [], []
    for p, items_path in zip(examples_paths, items_paths, strict=True):
        examples = read_examples(p)
        for ex in examples:
            if ex.split != "train":
                continue
            queries.append(text_of(ex))
            items.append(corpus[ex.target].text(fields, maxf))
            ids.append(ex.target)
        validation.extend(
            validation_pool(examples, items_path, text_of, selection.pool_size, seed, fields, maxf)
        )
    report = fine_tune(
        ttp["dense"]["model"],
        queries,
        items,
        ids,
        DenseFTSettings.from_config(ttp["dense"]),
        out_dir,
        seed=seed,
        variant=variant,
        validation=validation,
        measure=selection.measure,
        device=ttp_device(ttp),
        log=log,
    )
    write_json(report_out, report)
    log(json.dumps(report))
    return report


def validation_pool(examples, items_path, query_text, pool_size, seed, fields, max_features):
    """``[(valid examples, their query texts, candidate item ids, candidate texts)]`` of one
    example set for epoch selection (empty when the set has no validation searches):
    ``query_text(example)`` is the text the model under selection embeds."""

    valid = [ex for ex in examples if ex.split == "valid"]
    if not valid:
        return []
    set_corpus = ItemCorpus.read(items_path)
    pool = candidate_pool(valid, set_corpus, pool_size, seed)
    texts = [set_corpus[i].text(fields, max_features) for i in pool]
    return [(valid, [query_text(ex) for ex in valid], pool, texts)]
