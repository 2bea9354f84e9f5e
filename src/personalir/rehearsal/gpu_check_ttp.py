"""The GPU check's TTP part (:mod:`.gpu_check`): SFT steps, greedy generation with the
``<embed>`` embedding, and one GRPO step, each through the TTP stage's own code on a tiny
prepared Qwen2 backbone (the TTP backbone's stand-in), at the paper's lengths.

SFT runs the stage's training loop (``personalir.ttp.training.sft.train``) for a few optimizer
steps on both devices from the same LoRA initialisation (dropout 0, so both are deterministic)
and compares the step losses. Generation compares the greedy texts (all equal) and the
embeddings. GRPO samples its rollouts, so one device's step cannot be compared with the
other's; the step runs on each (throughput, a finite loss, LoRA weights moved, the frozen
scorer unchanged), and its deterministic parts (the completion log-probabilities of fixed
token rows and the contrastive loss) are compared.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from personalir.rehearsal import tiny_models as tm
from personalir.rehearsal.gpu_check_base import FLOAT32, Check, Tolerance
from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus
from personalir.ttp.model.backbone import (
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import query_prompt
from personalir.ttp.training import grpo, rl, sft
from personalir.ttp.training.rewards import RewardSettings
from personalir.ttp.training.sft_data import SFTSettings, build_rows

# The paper's lengths and group size (config/paper.yaml ttp.sft, ttp.rl); batches are small.
SFT_STEPS = 3
SFT = SFTSettings(
    batch_size=8,
    epochs=1.0,
    learning_rate=1e-4,
    max_query_tokens=2048,
    max_item_tokens=256,
    history_item_tokens=128,
    item_fields=("title", "main_category", "features"),
    checkpoint_every=1000,
)
LORA = LoraSettings(r=8, alpha=16, dropout=0.0)
MAX_NEW_TOKENS = 32
GROUP_SIZE = 8
# Losses after a few AdamW steps: float32 everywhere, but each step's update amplifies the
# reduction-order noise of the last.
SFT_TOLERANCE = Tolerance(1e-3, 1e-3, "float32; AdamW steps carry the reduction-order noise")
TEXTS_AND_VECTORS = Tolerance(1e-4, 0.0, "float32 greedy decoding: equal texts, close vectors")


def _corpus_and_records(n: int) -> tuple[ItemCorpus, list[dict]]:
    brands = ["Kestrel", "Bolt", "Zed", "Arcbolt", "Nimbus"]
    nouns = ["capo", "strap", "sticks", "tuner", "cable", "pedal"]
    corpus = ItemCorpus(
        {
            f"I{i}": Item(
                f"I{i}",
                f"{brands[i % 5]} {nouns[i % 6]} model {i}",
                "Musical Instruments",
                features=(f"fits every {nouns[i % 6]}", f"colour {i % 4}"),
                attributes=(("Brand", brands[i % 5]),),
            )
            for i in range(2 * n)
        }
    )
    records = []
    for k in range(n):
        target = f"I{k}"
        history = [f"I{(k + j) % (2 * n)}" for j in (1, 2, 3)]
        ex = Example(
            f"e{k}",
            "gpu_check",
            "Musical_Instruments",
            f"u{k % 4}",
            corpus[target].title.split()[1],
            target,
            "Broad",
            "train",
            [HistoryEntry(h, t) for t, h in enumerate(history)],
            selected_history=history,
        )
        rec = ex.to_record()
        rec.update(rewrite=corpus[target].title, rewrite_kind="rewrite", gain=0.1)
        records.append(rec)
    return corpus, records


def prepare(root: Path) -> Path:
    """A prepared tiny Qwen2 backbone (``<think>``, ``</think>``, ``<embed>`` added)."""
    src = tm.build_tiny_causal_lm(root / "ttp_src", architecture="qwen2")
    model, tok, info = prepare_backbone(BackboneConfig(model=str(src)), 5)
    save_backbone(model, tok, info, root / "ttp_backbone")
    return root / "ttp_backbone"


def _encoder(backbone: Path, device: str):
    model, tok, _ = load_backbone(backbone)
    peft_model = attach_lora(model, tok, LORA, seed=0).to(device)
    return peft_model, TTPEncoder(
        peft_model,
        tok,
        max_query_tokens=SFT.max_query_tokens,
        max_item_tokens=SFT.max_item_tokens,
        batch_size=SFT.batch_size,
    )


def sft_run(backbone: Path, out: Path, device: str) -> tuple[dict, int]:
    """SFT_STEPS optimizer steps of the stage's training loop (one epoch of that many
    batches); the step losses and the tokens trained on."""
    peft_model, enc = _encoder(backbone, device)
    corpus, records = _corpus_and_records(SFT.batch_size * SFT_STEPS)
    rows = build_rows(records, corpus, enc, SFT)
    run_dir = Path(tempfile.mkdtemp(prefix=f"sft_{device.replace(':', '_')}_", dir=out))
    sft.train(peft_model, enc, rows, SFT, run_dir, seed=0, log=lambda *a: None)
    history = json.loads((run_dir / "loss.json").read_text(encoding="utf-8"))
    if device == "cpu":
        peft_model.save_pretrained(out / "ttp_sft_adapter")
    return {"losses": [h["loss"] for h in history]}, sum(h["tokens"] for h in history)


def compare_sft(got: dict, ref: dict) -> dict:
    a, b = np.array(got["losses"]), np.array(ref["losses"])
    worst = SFT_TOLERANCE.worst(a, b)
    return {
        "compared": int(a.size),
        "of": int(b.size),
        "max_abs_diff": float(np.max(np.abs(a - b))),
        "worst_over_tolerance": worst,
        "passed": a.size == b.size == SFT_STEPS and worst <= 1.0,
    }


def _prompts(tok, n: int) -> list[str]:
    corpus, records = _corpus_and_records(n)
    return [
        query_prompt(tok, [corpus[h].title for h in r["selected_history"]], r["query"])
        for r in records
    ]


def generate_run(backbone: Path, device: str) -> tuple[dict, int]:
    _, enc = _encoder(backbone, device)
    texts, vectors, formed = enc.generate_and_embed(_prompts(enc.tokenizer, 16), MAX_NEW_TOKENS)
    tokens = sum(len(enc.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return {"texts": texts, "vectors": np.asarray(vectors), "formed": formed}, tokens


def compare_generate(got: dict, ref: dict) -> dict:
    same = [a == b for a, b in zip(got["texts"], ref["texts"], strict=True)]
    keep = np.array(same)
    worst = TEXTS_AND_VECTORS.worst(got["vectors"][keep], ref["vectors"][keep])
    return {
        "compared": int(keep.sum()),
        "of": len(same),
        "equal_texts": int(keep.sum()),
        "max_abs_diff": float(np.max(np.abs(got["vectors"][keep] - ref["vectors"][keep])))
        if keep.any()
        else None,
        "worst_over_tolerance": worst,
        "passed": all(same) and worst <= 1.0,
    }


def grpo_run(backbone: Path, adapter: Path, out: Path, device: str) -> tuple[dict, int]:
    import torch

    policy, tok, _ = rl.load_policy(str(backbone), str(adapter), device=device)
    enc = TTPEncoder(policy, tok, max_query_tokens=SFT.max_query_tokens, max_item_tokens=64)
    prompts = dict(zip([f"e{i}" for i in range(4)], _prompts(tok, 4), strict=True))
    # deterministic parts: completion log-probabilities of fixed rows, the contrastive loss
    rows = [[5, 6, 7, 8, 9], [5, 6, 10, 11], [5, 6, 7, 8, 12]]
    ids, mask = enc.pad_left(rows)
    with torch.no_grad():
        logps, _ = grpo.grouped_completion_logps(enc.decoder, enc.lm_head, ids, mask, 2)
        nce = grpo.contrastive_loss(
            enc,
            [
                {"query_prompt": p, "rewrite": f"capo {i}", "target": f"p{i}", "item_text": "x"}
                for i, p in enumerate(prompts.values())
            ],
            0.02,
        )
    settings = grpo.GRPOSettings(
        group_size=GROUP_SIZE,
        prompts_per_step=2,
        max_steps=1,
        learning_rate=2e-7,
        max_completion_tokens=MAX_NEW_TOKENS,
        checkpoint_every=1000,
        reward=RewardSettings(),
    )
    before = {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" in n}
    records = [
        {"example_id": e, "query": f"query {e}", "target": f"p{i}"} for i, e in enumerate(prompts)
    ]
    trainer, summary = rl.train_grpo(
        policy,
        tok,
        rl.build_dataset(records, prompts),
        {f"p{i}": f"product {i} text" for i in range(4)},
        settings,
        tempfile.mkdtemp(prefix=f"grpo_{device.replace(':', '_')}_", dir=out),
        encoder=enc,
        seed=3,
        log=lambda *a: None,
    )
    after = dict(trainer.model.named_parameters())
    moved = any(
        ".default." in n and not torch.equal(before[n], after[n].cpu().to(before[n].device))
        for n in before
    )
    frozen_same = all(
        torch.equal(before[n], after[n].to(before[n].device))
        for n in before
        if f".{grpo.FROZEN_ADAPTER}." in n
    )
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    outputs = {
        "logps": logps.float().cpu().numpy(),
        "contrastive": float(nce),
        "step_loss_finite": bool(losses) and all(np.isfinite(losses)),
        "lora_moved": moved,
        "frozen_unchanged": frozen_same,
    }
    return outputs, settings.prompts_per_step * settings.group_size


def compare_grpo(got: dict, ref: dict) -> dict:
    a = np.append(got["logps"].ravel(), got["contrastive"])
    b = np.append(ref["logps"].ravel(), ref["contrastive"])
    worst = FLOAT32.worst(a, b)
    step_ok = got["step_loss_finite"] and got["lora_moved"] and got["frozen_unchanged"]
    return {
        "compared": int(a.size),
        "of": int(b.size),
        "max_abs_diff": float(np.max(np.abs(a - b))),
        "worst_over_tolerance": worst,
        "step": {k: got[k] for k in ("step_loss_finite", "lora_moved", "frozen_unchanged")},
        "passed": bool(step_ok) and worst <= 1.0,
    }


def ttp_checks(root: Path, device: str) -> list[Check]:
    backbone = prepare(root)
    adapter = root / "ttp_sft_adapter"  # written by the SFT check's CPU run
    return [
        Check(
            "ttp_sft", "tokens", SFT_TOLERANCE, lambda d: sft_run(backbone, root, d), compare_sft
        ),
        Check(
            "ttp_generate_embed",
            "tokens",
            TEXTS_AND_VECTORS,
            lambda d: generate_run(backbone, d),
            compare_generate,
        ),
        Check(
            "ttp_grpo",
            "rollouts",
            FLOAT32,
            lambda d: grpo_run(backbone, adapter, root, d),
            compare_grpo,
        ),
    ]
