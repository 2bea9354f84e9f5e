"""Rule queries_lm: the query generator, fine-tuned on the seed set, and its fluency bound.

A LoRA adapter on the instruction model learns the seed set's attribute -> query mapping; the
seed queries' perplexity under the base model calibrates the fluency filter's bound (unless the
config fixes it). The later steps load the generator and score fluency with the helpers here,
always with the adapter off, so the bound and the scores come from the same model.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np

from personalir.common.causal_lm import load_causal_lm, stable_adapter_config
from personalir.common.io import atomic_dir, atomic_path, write_json
from personalir.common.models import resolve_model
from personalir.common.seeding import derive_seed
from personalir.queries.lm import LoraSettings, perplexities, train_lora
from personalir.queries.seeds import load_seeds

log = logging.getLogger("personalir.queries")

USER_PREFIX = "<|im_start|>user\n"


def set_threads(threads: int) -> None:
    """Torch's intra-op threads for this step (at least one)."""
    import torch

    torch.set_num_threads(max(int(threads), 1))


def scoring_prefix(tokenizer) -> str:
    """The opening of a user turn in the model's chat template (queries are scored as what a
    user types); empty for a tokenizer without a chat template."""
    if not getattr(tokenizer, "chat_template", None):
        return ""
    marker = "\x00QUERY\x00"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": marker}], tokenize=False, add_generation_prompt=False
    )
    head = text.split(marker, 1)[0]
    # Drop a default system turn the template may insert before the user turn.
    for opener in ("<|im_start|>user\n", "<|start_header_id|>user<|end_header_id|>\n\n"):
        if opener in head:
            return opener
    return head


def shuffled_texts(texts: list[str], seed: int) -> list[str]:
    """Each text with its words in a seeded random order different from the original (texts
    of one word, or of identical words, stay as they are): the disfluent counterpart of a
    fluent text with the same tokens."""
    gen = np.random.default_rng(seed)
    out = []
    for t in texts:
        w = t.split()
        order = list(range(len(w)))
        if len(set(w)) > 1:
            while order == list(range(len(w))) or [w[i] for i in order] == w:
                order = [int(i) for i in gen.permutation(len(w))]
        out.append(" ".join(w[i] for i in order))
    return out


def youden_bound(keep: list[float], remove: list[float]) -> tuple[float, float]:
    """The perplexity bound ``b`` (keep ``x <= b``) maximising Youden's J = share of ``keep``
    kept - share of ``remove`` kept, among the observed values; ties take the smallest bound.
    Returns ``(b, J)``."""
    pos, neg = np.sort(np.asarray(keep, float)), np.sort(np.asarray(remove, float))
    best, best_j = float(pos[-1]), -np.inf
    for b in np.unique(np.concatenate([pos, neg])):
        j = np.searchsorted(pos, b, "right") / len(pos) - np.searchsorted(neg, b, "right") / len(
            neg
        )
        if j > best_j + 1e-12:
            best, best_j = float(b), float(j)
    return best, best_j


def fluency_bound(fl: dict, seed_ppl: list[float], shuffled_ppl: list[float] | None):
    """The fluency filter's bound and how it was set (config, a seed quantile, or the seed
    queries against their word-shuffled versions, :func:`youden_bound`)."""
    if fl["max_perplexity"] is not None:
        return float(fl["max_perplexity"]), {"bound_from": "config"}
    if shuffled_ppl is None:
        q = fl["seed_quantile"]
        return float(np.quantile(np.asarray(seed_ppl), q)), {"bound_from": f"seed quantile {q}"}
    bound, j = youden_bound(seed_ppl, shuffled_ppl)
    seeds, shuf = np.asarray(seed_ppl), np.asarray(shuffled_ppl)
    auc = float(
        np.mean(seeds[:, None] < shuf[None, :]) + 0.5 * np.mean(seeds[:, None] == shuf[None, :])
    )
    return bound, {
        "bound_from": "seed queries vs their word-shuffled versions (Youden's J)",
        "youden_j": round(j, 4),
        "seeds_kept": float(np.mean(seeds <= bound)),
        "shuffled_kept": float(np.mean(shuf <= bound)),
        "auc_seed_below_shuffled": round(auc, 4),
        "shuffled_perplexity_quantiles": {
            str(q): float(np.quantile(shuf, q)) for q in (0.5, 0.9, 0.95, 1.0)
        },
    }


def run_lm(
    seeds_path, params: dict, seed: int, out: dict, threads: int = 1, model_cache=None
) -> dict:
    """Fine-tune the LoRA adapter on the seed set; calibrate the fluency bound on the seeds."""

    set_threads(threads)
    lm = params["lm"]
    seeds = load_seeds(seeds_path)
    t0 = time.perf_counter()
    ref = resolve_model(lm["model"], allow_download=lm["allow_download"])
    log.info("generator %s from %s", lm["model"], ref.path)
    model, tok = load_causal_lm(ref, device=lm["device"], cache_dir=model_cache)
    load_s = time.perf_counter() - t0
    prefix = scoring_prefix(tok)
    t1 = time.perf_counter()
    seed_ppl = perplexities(model, tok, [s["query"] for s in seeds], prefix=prefix)
    fl = params["filters"]["fluency"]
    shuffled = shuffled_ppl = None
    if fl["max_perplexity"] is None and fl.get("calibration", "seed_quantile") == "shuffled_seeds":
        shuffled = shuffled_texts([s["query"] for s in seeds], derive_seed(seed, "fluency-shuffle"))
        shuffled_ppl = perplexities(model, tok, shuffled, prefix=prefix)
    ppl_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    model, history = train_lora(
        model, tok, seeds, LoraSettings.from_config(lm["lora"]), seed=derive_seed(seed, "lora")
    )
    train_s = time.perf_counter() - t2
    td = atomic_dir(out["adapter"])
    try:
        model.save_pretrained(td)
        stable_adapter_config(td)
        for name in ("adapter_model.safetensors", "adapter_config.json"):
            target = out["adapter"] if name.endswith(".safetensors") else out["adapter_config"]
            with atomic_path(target, suffix=Path(name).suffix) as tmp:
                shutil.copyfile(td / name, tmp)
    finally:
        shutil.rmtree(td, ignore_errors=True)
    bound, calibration = fluency_bound(fl, seed_ppl, shuffled_ppl)
    report = {
        "model": lm["model"],
        # the hub commit (None for a packaged model); where the files lie is a host fact
        # that the rule's log keeps
        "model_revision": ref.revision,
        "gguf_file": ref.gguf_file,
        "seeds": len(seeds),
        "seeds_by_domain": dict(sorted(Counter(s["domain"] for s in seeds).items())),
        "lora": lm["lora"],
        "history": history,
        "first_loss": history[0]["loss"] if history else None,
        "last_loss": history[-1]["loss"] if history else None,
        "seconds": {
            "load": round(load_s, 2),
            "seed_perplexity": round(ppl_s, 2),
            "train": round(train_s, 2),
        },
        "fluency": {
            "scoring_prefix": prefix,
            "seed_perplexity_quantiles": {
                str(q): float(np.quantile(seed_ppl, q)) for q in (0.5, 0.9, 0.95, 1.0)
            },
            "max_perplexity": bound,
            **calibration,
            "shuffled_examples": [
                {"text": t, "perplexity": float(p)}
                for t, p in zip((shuffled or [])[:3], (shuffled_ppl or [])[:3], strict=True)
            ],
        },
        "threads": threads,
    }
    write_json(out["report"], report)
    log.info(
        "LoRA: loss %.3f -> %.3f in %.1f s; fluency bound %.1f",
        report["first_loss"],
        report["last_loss"],
        train_s,
        bound,
    )
    return report


def load_generator(params: dict, adapter_dir, model_cache=None) -> tuple[object, object]:
    """The base model with the seed-set adapter (or without, when ``adapter_dir`` is None)."""
    from peft import PeftModel

    lm = params["lm"]
    ref = resolve_model(lm["model"], allow_download=lm["allow_download"])
    base, tok = load_causal_lm(ref, device=lm["device"], cache_dir=model_cache)
    if adapter_dir is not None:
        base = PeftModel.from_pretrained(base, str(adapter_dir)).eval()
    dtype = lm.get("sampling_dtype", "float32")
    if dtype != "float32":  # (an eager fluency filter then scores with this model too)
        import torch

        base = base.to(getattr(torch, dtype))
    return base, tok


def base_perplexity(model, tok, batch_size: int = 32):
    """Perplexity under the base model: the adapter (if any) is switched off while scoring."""
    import contextlib

    prefix = scoring_prefix(tok)

    def score(texts: list[str]) -> list[float]:
        off = getattr(model, "disable_adapter", None)
        with off() if off is not None else contextlib.nullcontext():
            return perplexities(model, tok, texts, prefix=prefix, batch_size=batch_size)

    return score


def fluency_settings(filters: dict, lm_report: dict) -> dict:
    """The filters section with the fluency bound resolved (config, or the seed quantile)."""
    fl = filters["fluency"]
    if fl["at_selection"] and "fluency" in filters["eager"]:
        raise ValueError(
            "queries.filters: fluency is both eager and at_selection; choose one "
            "(leave it out of `eager` to score at selection)"
        )
    bound = lm_report["fluency"]["max_perplexity"]
    return {**filters, "fluency": {**fl, "max_perplexity": bound}}
