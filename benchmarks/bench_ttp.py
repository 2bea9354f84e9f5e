"""TTP stage throughput on CPU at the configured (default: sample) sizes.

Measures, on the stage's own outputs (run the workflow first, or pass --results):

* SFT: steps/s and tokens/s of ``--steps`` LoRA steps of the configured model and batch,
  on the SFT records of the first example set (a fresh adapter; nothing is saved);
* item encoding: items/s of ``item text<embed>`` embeddings;
* query encoding: queries/s of generate-then-embed in one KV-cached pass (what the TTP
  retriever runs), and of the embedding pass alone (prompt + a given rewrite);
* the stage's share of an end-to-end run: from a Snakemake log (``--snakemake-log``, e.g.
  ``.snakemake/log/<time>.snakemake.log`` of a cold ``make run``), the wall time of every
  job, the jobs of the TTP stage (rules ``ttp_*``) summed, against the run's wall time.

    python benchmarks/bench_ttp.py --json benchmarks/out/ttp.json \
        --snakemake-log .snakemake/log/2026-11-30T001200.snakemake.log
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from personalir.common.config import REPO_ROOT, load_schema, validate_config
from personalir.common.io import write_json

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
_RULE = re.compile(r"^(?:local)?rule (\w+):")
_JOBID = re.compile(r"^\s+jobid: (\d+)")
_DONE = re.compile(r"^Finished job(?:id)?:? (\d+)")


def job_times(log_text: str) -> dict:
    """Per-job (rule, start, end) from a Snakemake log; the run's first and last stamp."""
    stamp, rule, jobs, first, last = None, None, {}, None, None
    for line in log_text.splitlines():
        m = _STAMP.match(line)
        if m:
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
            last = stamp
            continue
        m = _RULE.match(line)
        if m:
            rule = m.group(1)
            continue
        m = _JOBID.match(line)
        if m and rule:
            jobs[m.group(1)] = {"rule": rule, "start": stamp}
            rule = None
            continue
        m = _DONE.match(line)
        if m and m.group(1) in jobs:
            jobs[m.group(1)]["end"] = stamp
    return {"jobs": jobs, "first": first, "last": last}


def stage_share(log_path: Path) -> dict:
    parsed = job_times(log_path.read_text(encoding="utf-8", errors="replace"))
    per_rule: dict[str, float] = {}
    for job in parsed["jobs"].values():
        if job.get("end") and job.get("start"):
            secs = (job["end"] - job["start"]).total_seconds()
            per_rule[job["rule"]] = per_rule.get(job["rule"], 0.0) + secs
    total_job = sum(per_rule.values())
    ttp = sum(v for k, v in per_rule.items() if k.startswith("ttp_"))
    wall = (parsed["last"] - parsed["first"]).total_seconds() if parsed["first"] else 0.0
    return {
        "log": str(log_path),
        "run_wall_s": wall,
        "job_seconds_total": total_job,
        "ttp_job_seconds": ttp,
        "ttp_share_of_job_seconds": ttp / total_job if total_job else None,
        "per_rule_seconds": dict(sorted(per_rule.items(), key=lambda kv: -kv[1])),
    }


def smollm2_teacher_quality(set_dir: Path, ttp: dict, seed: int, n: int) -> dict:
    """SmolLM2-135M-Instruct prompted as the teacher on ``n`` training examples: the share of
    examples with a positive-gain candidate and the Recall@10 of its first candidate, beside
    the embedded rule-based teacher on the same examples."""
    from personalir.ttp.inputs.data import ItemCorpus, read_examples
    from personalir.ttp.inputs.relevance import build_relevance
    from personalir.ttp.training.teacher import (
        HFLocalTeacher,
        HistoryAttributeTeacher,
        requests_for,
        select_targets,
        teacher_quality,
    )

    corpus = ItemCorpus.read(set_dir / "items.parquet")
    train = [e for e in read_examples(set_dir / "examples.jsonl") if e.split == "train"][:n]
    fields = tuple(ttp["items"]["fields"])
    relevance = build_relevance(dict(ttp["history"]["relevance"]))
    out = {}
    for name, teacher in (
        ("history_attributes", HistoryAttributeTeacher()),
        ("hf_local:SmolLM2-135M-Instruct", None),
    ):
        t0 = time.perf_counter()
        if teacher is None:
            teacher = HFLocalTeacher(
                model="packaged:SmolLM2-135M-Instruct",
                max_new_tokens=24,
                batch_size=4,
                seed=seed,
                item_fields=fields,
            )
        cands = teacher.candidates(requests_for(train, corpus), int(ttp["teacher"]["k"]))
        _, report = select_targets(
            train, cands, corpus, relevance, item_fields=fields, neutral_share=0.0, seed=seed
        )
        out[name] = {
            "examples": len(train),
            "positive_rate": report["positive_rate"],
            "mean_selected_gain": report["mean_selected_gain"],
            "quality": teacher_quality(train, cands, corpus, relevance, fields),
            "seconds": round(time.perf_counter() - t0, 2),
            "sample_candidates": cands[:3],
        }
    return out


def _backbone(folder: Path, ttp: dict, seed: int):
    """The workflow's prepared backbone, or (its weights being a temporary output, deleted
    after the run) the same preparation done here."""
    from personalir.ttp.model.backbone import BackboneConfig, load_backbone, prepare_backbone

    if (folder / "model.safetensors").exists():
        return load_backbone(folder, ttp["backbone"]["dtype"])
    return prepare_backbone(BackboneConfig.from_config(ttp["backbone"]), seed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=str(REPO_ROOT / "results"))
    ap.add_argument("--configfile", default=str(REPO_ROOT / "config" / "config.yaml"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--adapter",
        default=None,
        help="query encoding with this SFT adapter (e.g. results/ttp/sft/adapter) instead of "
        "the fresh one (a trained adapter writes rewrites of the trained length)",
    )
    ap.add_argument("--queries", type=int, default=32)
    ap.add_argument("--snakemake-log", default=None)
    ap.add_argument(
        "--teacher-sample",
        type=int,
        default=0,
        help="also measure SmolLM2-135M-Instruct as an hf_local teacher on N training examples",
    )
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch
    import yaml

    from personalir.ttp.inputs.data import ItemCorpus, read_examples
    from personalir.ttp.model.backbone import LoraSettings, attach_lora
    from personalir.ttp.model.encoder import TTPEncoder
    from personalir.ttp.training.sft import TTPLossModule, batch_order, batch_tokens, collate
    from personalir.ttp.training.sft_data import SFTSettings, build_prompt, build_rows

    torch.set_num_threads(args.threads)
    config = validate_config(yaml.safe_load(Path(args.configfile).read_text()), load_schema())
    ttp = config["ttp"]
    res = Path(args.results) / "ttp"
    sets = sorted(p.parent.name for p in res.glob("*/sft.jsonl"))
    if not sets:
        print(f"no SFT records under {res}: run the workflow first", file=sys.stderr)
        return 2
    corpus = ItemCorpus.read(res / sets[0] / "items.parquet")
    records = [
        json.loads(line)
        for line in (res / sets[0] / "sft.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    seed = config["seed"]
    model, tok, info = _backbone(res / "backbone", ttp, seed)
    peft_model = attach_lora(model, tok, LoraSettings.from_config(ttp["lora"]), seed=seed)
    settings = SFTSettings.from_config(
        {
            **ttp["sft"],
            "item_fields": ttp["items"]["fields"],
            "max_features": ttp["items"]["max_features"],
        }
    )
    enc = TTPEncoder(
        peft_model,
        tok,
        max_query_tokens=settings.max_query_tokens,
        max_item_tokens=settings.max_item_tokens,
        batch_size=ttp["inference"]["batch_size"],
    )
    rows = build_rows(records, corpus, enc, settings)
    module = TTPLossModule(peft_model, enc, settings)
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-4)
    module.train()
    tokens, t0 = 0, None
    for step in range(args.steps + 1):  # step 0 warms up
        if step == 1:
            t0, tokens = time.perf_counter(), 0
        batch = collate(
            [rows[i] for i in batch_order(len(rows), settings.batch_size, 0, step)], enc
        )
        loss, _, _ = module(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tokens += batch_tokens(batch)
    sft_s = time.perf_counter() - t0

    if args.adapter:
        from personalir.ttp.model.backbone import load_adapter

        base, _, _ = _backbone(res / "backbone", ttp, seed)
        enc = TTPEncoder(
            load_adapter(base, args.adapter),
            tok,
            max_query_tokens=settings.max_query_tokens,
            max_item_tokens=settings.max_item_tokens,
            batch_size=ttp["inference"]["batch_size"],
        )
    item_texts = corpus.texts(settings.item_fields, settings.max_features)
    t = time.perf_counter()
    enc.encode_items(item_texts)
    items_s = time.perf_counter() - t
    test = [e for e in read_examples(res / sets[0] / "examples.jsonl") if e.split == "test"]
    test = test[: args.queries]
    prompts = [build_prompt(e, corpus, tok, settings) for e in test]
    t = time.perf_counter()
    generated, _, well_formed = enc.generate_and_embed(prompts, ttp["inference"]["max_new_tokens"])
    t_gen = time.perf_counter() - t
    from personalir.ttp.model.prompts import parse_generated

    t = time.perf_counter()
    enc.encode_queries(prompts, [parse_generated(g)[0] for g in generated])
    t_enc = time.perf_counter() - t
    out = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor(),
            "threads": args.threads,
            "torch": torch.__version__,
        },
        "backbone": info.description,
        "adapter_for_queries": args.adapter or "fresh (untrained)",
        "sft": {
            "steps": args.steps,
            "batch_size": settings.batch_size,
            "steps_per_s": args.steps / sft_s,
            "tokens_per_s": tokens / sft_s,
            "mean_tokens_per_step": tokens / args.steps,
        },
        "item_encoding": {"items": len(item_texts), "items_per_s": len(item_texts) / items_s},
        "query_encoding": {
            "queries": len(prompts),
            "generate_and_embed_queries_per_s": len(prompts) / t_gen,
            "embed_only_queries_per_s": len(prompts) / t_enc,
            "max_new_tokens": ttp["inference"]["max_new_tokens"],
            "well_formed_share": float(np.mean(well_formed)) if well_formed else None,
        },
    }
    if args.snakemake_log:
        out["stage_share"] = stage_share(Path(args.snakemake_log))
    if args.teacher_sample:
        out["smollm2_teacher"] = smollm2_teacher_quality(
            res / sets[0], ttp, config["seed"], args.teacher_sample
        )
    print(json.dumps(out, indent=2))
    if args.json:
        write_json(args.json, out, keep_timings=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
