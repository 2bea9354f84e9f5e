"""GRPO throughput of the TTP RL stage on CPU at the configured (default: sample) sizes.

Measures, on the stage's own outputs (the prepared backbone and the SFT adapter with its
weights: run ``snakemake --notemp results/ttp/sft/adapter/adapter_model.safetensors`` first):

* GRPO: steps/s of ``--steps`` steps of the configured ``ttp.rl`` settings on the RL prompts
  (nothing is saved), rollout tokens/s (completion tokens sampled per second of training);
* reward scoring: items/s of the frozen scorer's query embeddings (rollout + original);
* log-probability scoring: the shared-prompt pass against TRL's own (one forward per row),
  median of ``--repeats`` on the same batch, and their ratio.

    python benchmarks/bench_ttp_rl.py --steps 3 --json benchmarks/out/ttp_rl.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from personalir.common.config import REPO_ROOT, load_config
from personalir.common.io import write_json


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(REPO_ROOT / "config" / "config.yaml"))
    ap.add_argument("--results", default=None, help="results folder (default: the config's)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    from personalir.ttp.inputs.data import merge_corpora
    from personalir.ttp.training import grpo, rl
    from personalir.ttp.training.sft_data import ttp_encoder

    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    ttp = cfg["ttp"]
    res = Path(args.results or REPO_ROOT / cfg["results_dir"])
    sets = sorted(p.parent.name for p in (res / "ttp").glob("*/sft.jsonl"))
    if not (res / "ttp/sft/adapter/adapter_model.safetensors").exists() or not sets:
        print("needs the SFT adapter's weights and the SFT records (see the docstring)")
        return 2
    records = []
    for s in sets:
        records += [json.loads(x) for x in (res / "ttp" / s / "sft.jsonl").open()]
    corpus = merge_corpora([res / "ttp" / s / "items.parquet" for s in sets])
    section = grpo.variant_settings(ttp["rl"], "full")
    settings = grpo.GRPOSettings.from_config({**section, "max_steps": args.steps})
    model, tok, info = rl.load_policy(str(res / "ttp/backbone"), str(res / "ttp/sft/adapter"))
    chosen, sft, prompts, items = rl.rl_inputs(records, corpus, tok, ttp, settings.data_share)
    enc = ttp_encoder(model, tok, sft, ttp)  # as the rule's GRPO builds it
    out: dict = {
        "machine": {"cpu": platform.processor() or platform.machine(), "threads": args.threads},
        "backbone": info.description,
        "settings": {
            k: section[k] for k in ("group_size", "prompts_per_step", "max_completion_tokens")
        },
    }

    # reward scoring: frozen-scorer query embeddings of rollouts
    scorer = grpo.RetrievalScorer(model, enc, items, grpo.FROZEN_ADAPTER)
    batch = chosen[: settings.prompts_per_step] * settings.group_size
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        scorer.queries([prompts[r["example_id"]] for r in batch], [r["query"] for r in batch])
        times.append(time.perf_counter() - t0)
    out["reward_scoring_items_per_s"] = round(len(batch) / statistics.median(times), 2)

    # GRPO steps
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        trainer, summary = rl.train_grpo(
            model,
            tok,
            rl.build_dataset(chosen, prompts),
            items,
            settings,
            tmp,
            encoder=enc,
            seed=int(cfg["seed"]),
            resume=False,
            log=lambda *a: None,
        )
        wall = time.perf_counter() - t0
    hist = [h for h in trainer.state.log_history if "loss" in h and "step" in h]
    tokens = sum(h["completions/mean_length"] for h in hist) * len(batch)
    out["grpo"] = {
        "steps": len(hist),
        "seconds": round(wall, 2),
        "steps_per_s": round(len(hist) / wall, 4),
        "median_step_s": round(statistics.median(h["step_time"] for h in hist), 2),
        "rollout_tokens_per_s": round(tokens / wall, 2),
    }

    # shared-prompt log-probabilities vs one forward per row (TRL's path)
    ids_rows = [enc.prompt_ids(prompts[r["example_id"]]) for r in batch]
    comp = [[enc.think_ids[1], enc.emb_id]] * len(batch)
    p_ids, p_mask = enc.pad_left(ids_rows)
    c_ids = torch.tensor(comp)
    ids = torch.cat([p_ids, c_ids], 1)
    mask = torch.cat([p_mask, torch.ones_like(c_ids)], 1)
    shared, full = [], []
    with torch.no_grad():
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            grpo.grouped_completion_logps(enc.decoder, enc.lm_head, ids, mask, 2)
            shared.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            model(input_ids=ids, attention_mask=mask)
            full.append(time.perf_counter() - t0)
    out["logps"] = {
        "rows": len(batch),
        "shared_prompt_s": round(statistics.median(shared), 3),
        "per_row_s": round(statistics.median(full), 3),
        "speedup": round(statistics.median(full) / statistics.median(shared), 2),
    }
    print(json.dumps(out, indent=1))
    if args.json:
        write_json(args.json, out, keep_timings=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
