"""The GPU check (``scripts/gpu_check.sh``): the paper configuration's GPU code paths run on a
device and on a reference device over the same small inputs, their outputs compared within
stated tolerances, their throughput recorded.

Checks (each the project's own code path on a tiny stand-in model, :mod:`.standins`):

============================  =================================================  ===============
check                         what runs                                           compared
============================  =================================================  ===============
``retrieval_dense``           dense bi-encoder (BGE-base / GTE / MiniLM path)     every score
``retrieval_splade``          SPLADE MLM encoding and sparse scoring              every score
``retrieval_colbert``         Stanford ColBERT checkpoint, MaxSim                 every score
``retrieval_bge_m3``          BGE-M3 dense + sparse + multi-vector hybrid         every score
``rerank_llm_yesno``          Qwen3-Reranker path (yes/no log-odds)               head scores
``rerank_llm_prompt``         Llama-3.1 grading-prompt path                       head scores
``ttp_sft``                   TTP SFT optimizer steps (``ttp.training.sft``)      step losses
``ttp_generate_embed``        greedy ``<think>..</think><embed>`` + embedding     texts, vectors
``ttp_grpo``                  one GRPO step (TRL) + its deterministic parts       losses, logps
============================  =================================================  ===============

The paper's precision is kept on the GPU: BGE-M3 in float16 and the LLM rerankers in
bfloat16 (``dtype: auto``) there, float32 on the CPU; the tolerances below say how close that
must come. ``--device cpu`` runs every check on the CPU twice (a self-test of the check
itself: every difference must be zero or within float noise). Exit status 1 when a check
fails; the JSON file has every number either way.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from personalir.common.io import write_json
from personalir.rehearsal import gpu_check_ttp
from personalir.rehearsal import tiny_models as tm
from personalir.rehearsal.gpu_check_base import (
    BFLOAT16,
    DOMAIN,
    FLOAT16,
    FLOAT32,
    SEED,
    Check,
    Inputs,
    build_inputs,
    compare_scores,
    timed,
)
from personalir.retrieval.base import RunSettings, load_builtin_retrievers
from personalir.retrieval.corpus import corpus_from_texts

# --------------------------------------------------------------------------- retrieval
RETRIEVERS = {
    # check -> (registry type, stand-in builder, tolerance on the GPU)
    "retrieval_dense": ("dense", tm.save_bert_encoder, FLOAT32),
    "retrieval_splade": ("splade", tm.save_splade, FLOAT32),
    "retrieval_colbert": ("colbert", tm.save_stanford_colbert, FLOAT32),
    "retrieval_bge_m3": ("bge_m3", tm.save_bge_m3, FLOAT16),
}
RERANKERS = {
    "rerank_llm_yesno": ("llm_yesno", "qwen3", BFLOAT16),
    "rerank_llm_prompt": ("llm_prompt", "llama", BFLOAT16),
}
# The paper's reranking depth and document length (config/paper.yaml retrieval.retrievers).
RERANK_TOP_K = 15
RERANK_DOC_TOKENS = 512


def _settings(device: str) -> RunSettings:
    # The paper's batch size (retrieval.batch_size: 64); one chunk holds the small corpus.
    return RunSettings(device=device, batch_size=64, threads=1)


def retrieval_run(inputs: Inputs, kind: str, model: Path, device: str) -> tuple[dict, int]:
    """Scores of every (query, document) of the ranking, and the texts encoded."""
    registry = load_builtin_retrievers()
    retriever = registry.get(kind)(model=str(model), settings=_settings(device))
    retriever.index(corpus_from_texts(inputs.doc_ids, inputs.texts))
    run = retriever.rank(inputs.queries, len(inputs.doc_ids))
    scores = {(q, d): s for q, docs in run.items() for d, s in docs}
    return scores, len(inputs.texts) + len(inputs.queries)


def rerank_run(inputs: Inputs, kind: str, model: Path, device: str) -> tuple[dict, int]:
    registry = load_builtin_retrievers()
    params = {"top_k": RERANK_TOP_K, "max_doc_tokens": RERANK_DOC_TOKENS, "dtype": "auto"}
    retriever = registry.get(kind)(model=str(model), settings=_settings(device), params=params)
    first = {
        q.query_id: inputs.doc_ids[i % len(inputs.doc_ids) :] + inputs.doc_ids[: i % 7]
        for i, q in enumerate(inputs.queries)
    }
    retriever.set_first_stage(first)
    retriever.index(corpus_from_texts(inputs.doc_ids, inputs.texts))
    scores = {}
    for q in inputs.queries:
        head = first[q.query_id][:RERANK_TOP_K]
        for d, s in zip(head, retriever.scores(q.text, head), strict=True):
            scores[(q.query_id, d)] = float(s)
    return scores, len(scores)


def retrieval_checks(inputs: Inputs, device: str) -> list[Check]:
    checks = []
    for name, (kind, builder, gpu_tol) in RETRIEVERS.items():
        model = builder(inputs.root / name, inputs.words)
        tol = gpu_tol if device.startswith("cuda") else FLOAT32
        checks.append(
            Check(
                name,
                "texts",
                tol,
                lambda d, kind=kind, model=model: retrieval_run(inputs, kind, model, d),
                lambda got, ref, tol=tol: compare_scores(got, ref, tol),
            )
        )
    for name, (kind, arch, gpu_tol) in RERANKERS.items():
        model = tm.save_causal_lm(inputs.root / name, inputs.words, arch=arch)
        tol = gpu_tol if device.startswith("cuda") else FLOAT32
        checks.append(
            Check(
                name,
                "pairs",
                tol,
                lambda d, kind=kind, model=model: rerank_run(inputs, kind, model, d),
                lambda got, ref, tol=tol: compare_scores(got, ref, tol),
            )
        )
    return checks


def environment(device: str, reference: str) -> dict:
    import torch

    facts = {
        "device": device,
        "reference": reference,
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    if device.startswith("cuda"):
        facts["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return facts


def run_checks(
    device: str, reference: str, work: Path, *, only: list[str] | None, small: dict
) -> dict:
    started = time.perf_counter()
    if device.startswith("cuda"):
        import torch

        torch.zeros(1, device=device)  # the CUDA context starts here, outside every timing
    inputs = build_inputs(work, small["docs"], small["queries"])
    checks = retrieval_checks(inputs, device) + gpu_check_ttp.ttp_checks(inputs.root, device)
    if only:
        unknown = sorted(set(only) - {c.name for c in checks})
        if unknown:
            raise SystemExit(f"--only: unknown checks {unknown}")
        checks = [c for c in checks if c.name in only]
    results = []
    for check in checks:
        print(f"[gpu_check] {check.name}: {reference} ...", flush=True)
        ref_out, ref_facts = timed(check, reference)
        print(f"[gpu_check] {check.name}: {device} ...", flush=True)
        dev_out, dev_facts = timed(check, device)
        verdict = check.compare(dev_out, ref_out)
        results.append(
            {
                "check": check.name,
                "tolerance": {
                    "atol": check.tolerance.atol,
                    "rtol": check.tolerance.rtol,
                    "why": check.tolerance.why,
                },
                **verdict,
                "reference_run": ref_facts,
                "device_run": dev_facts,
            }
        )
        print(f"[gpu_check] {check.name}: {'ok' if verdict['passed'] else 'FAILED'}", flush=True)
    return {
        "environment": environment(device, reference),
        "inputs": {**small, "domain": DOMAIN, "seed": SEED},
        "checks": results,
        "passed": all(r["passed"] for r in results),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="the device checked (cuda, cuda:<n>, cpu)")
    ap.add_argument("--reference", default="cpu", help="the device it is compared with")
    ap.add_argument("--out", required=True, help="the JSON record")
    ap.add_argument("--work", required=True, help="a folder for the stand-in models")
    ap.add_argument("--docs", type=int, default=256, help="documents of the small corpus")
    ap.add_argument("--queries", type=int, default=16, help="queries")
    ap.add_argument("--only", nargs="*", help="run only these checks")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    report = run_checks(
        args.device,
        args.reference,
        work,
        only=args.only,
        small={"docs": args.docs, "queries": args.queries},
    )
    write_json(args.out, report, keep_timings=True)
    print(json.dumps({r["check"]: r["passed"] for r in report["checks"]}, indent=1))
    print(f"[gpu_check] {'passed' if report['passed'] else 'FAILED'} in {report['seconds']} s")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
