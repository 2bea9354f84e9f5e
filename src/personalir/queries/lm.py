"""The candidate-generation language model: LoRA fine-tuning, sampling, perplexity.

The model (config ``queries.lm.model``) is resolved by :mod:`personalir.common.models` and
loaded by :func:`personalir.common.causal_lm.load_causal_lm`, like every other stage's.

Sampling shares the prompt: a product's prompt is run once, its key/value cache is repeated for
the ``n`` candidates, and the candidates are decoded together with temperature and nucleus
(top-p) sampling from one seeded ``torch.Generator``. That is the same distribution as
``generate(num_return_sequences=n)`` without paying the prompt ``n`` times, which on CPU is
most of the cost of short queries. Several products' prompts can share one batch
(:func:`sample_prompts`, left-padded, each product drawing from its own generator): on CPU a
batch of a few products' candidates costs little more per step than one product's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SYSTEM_PROMPT = "Write one product search query that uses every attribute value exactly once."


def attribute_prompt(product_type: str, attributes: Sequence[tuple[str, str]]) -> str:
    """The user turn: the product type and its core attributes, one per line."""
    lines = [f"Product: {product_type}"] + [f"{k}: {v}" for k, v in attributes]
    return "\n".join(lines)


def chat_prompt(tokenizer, product_type: str, attributes: Sequence[tuple[str, str]]) -> str:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": attribute_prompt(product_type, attributes)},
    ]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def end_token_ids(tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    for special in ("<|im_end|>", "<|endoftext|>"):
        tid = tokenizer.convert_tokens_to_ids(special)
        if isinstance(tid, int) and tid >= 0 and tid != tokenizer.unk_token_id:
            ids.add(tid)
    return {i for i in ids if i is not None}


# ---------------------------------------------------------------------------- LoRA
@dataclass(frozen=True)
class LoraSettings:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")
    last_layers: int | None = None  # adapt only the top layers (cheaper backward); None: all
    steps: int = 12
    batch_size: int = 8
    lr: float = 1e-3

    @classmethod
    def from_config(cls, section: dict) -> LoraSettings:
        return cls(
            section["r"],
            section["alpha"],
            section["dropout"],
            tuple(section["target_modules"]),
            section["last_layers"],
            section["steps"],
            section["batch_size"],
            section["lr"],
        )


def training_examples(tokenizer, seeds: Sequence[dict]) -> list[tuple[list[int], int]]:
    """``(token ids, prompt length)`` per seed: the loss is on the query and its end token."""
    out = []
    for s in seeds:
        prompt = chat_prompt(tokenizer, s["product_type"], [tuple(a) for a in s["attributes"]])
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        end = "<|im_end|>" if "<|im_end|>" in prompt else (tokenizer.eos_token or "")
        q_ids = tokenizer(s["query"] + end, add_special_tokens=False)["input_ids"]
        out.append((p_ids + q_ids, len(p_ids)))
    return out


def train_lora(model, tokenizer, seeds: Sequence[dict], settings: LoraSettings, *, seed: int):
    """Wrap ``model`` with a LoRA adapter and fit it on the seed set; returns (model, history).

    ``steps`` optimiser steps of ``batch_size`` examples, drawn by a seeded permutation that
    restarts each epoch; the base weights stay frozen.
    """
    import numpy as np
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed % 2**63)
    layers = None
    if settings.last_layers is not None:
        n_layers = int(model.config.num_hidden_layers)
        layers = list(range(max(n_layers - settings.last_layers, 0), n_layers))
    config = LoraConfig(
        layers_to_transform=layers,
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, config)
    examples = training_examples(tokenizer, seeds)
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=settings.lr, weight_decay=0.0
    )
    gen = np.random.default_rng(seed)
    order: list[int] = []
    history = []
    pad = tokenizer.pad_token_id
    model.train()
    for step in range(1, settings.steps + 1):
        batch = []
        while len(batch) < settings.batch_size:
            if not order:
                order = list(gen.permutation(len(examples)))
            batch.append(examples[int(order.pop())])
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (seq, p_len) in enumerate(batch):
            ids[i, : len(seq)] = torch.tensor(seq)
            labels[i, p_len : len(seq)] = torch.tensor(seq[p_len:])
            mask[i, : len(seq)] = 1
        dev = model.device
        loss = model(input_ids=ids.to(dev), attention_mask=mask.to(dev), labels=labels.to(dev)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append({"step": step, "loss": float(loss.detach())})
    model.eval()
    return model, history


# ---------------------------------------------------------------------------- sampling
@dataclass(frozen=True)
class SamplingSettings:
    temperature: float = 0.7
    top_p: float = 0.95
    max_new_tokens: int = 40


def _top_p_filter(logits, top_p: float, k: int = 128):
    """Nucleus (top-p) filtering: keep the smallest prefix of the tokens sorted by logit whose
    probability mass reaches ``top_p``; the rest get ``-inf``. Rows whose nucleus lies within
    their ``k`` largest logits (nearly all, at the usual temperatures) are filtered from
    ``topk`` alone; the others by a full sort (:func:`_top_p_sorted`)."""
    import torch

    k = min(int(k), logits.shape[-1])
    vals, idx = torch.topk(logits, k, dim=-1)
    probs = torch.exp(vals - torch.logsumexp(logits, dim=-1, keepdim=True))
    cum = probs.cumsum(dim=-1)
    out = torch.full_like(logits, float("-inf"))
    out.scatter_(-1, idx, vals.masked_fill(cum - probs > top_p, float("-inf")))
    wide = cum[:, -1] <= top_p  # the nucleus may reach past the k-th token
    if bool(wide.any()):
        out[wide] = _top_p_sorted(logits[wide], top_p)
    return out


def _top_p_sorted(logits, top_p: float):
    import torch

    sorted_logits, idx = torch.sort(logits, descending=True, dim=-1)
    probs = torch.softmax(sorted_logits, dim=-1)
    cum = probs.cumsum(dim=-1)
    remove = cum - probs > top_p  # keep the smallest prefix whose mass reaches top_p
    sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, idx, sorted_logits)


def sample_shared_prompt(
    model,
    tokenizer,
    prompt: str,
    n: int,
    settings: SamplingSettings,
    generator,
    logits_processor=None,
) -> list[dict]:
    """``n`` sampled continuations of ``prompt`` (see the module docstring).

    Returns per candidate ``{"text", "n_tokens", "finished"}``: ``finished`` is false when the
    candidate hit ``max_new_tokens`` before an end token (it is kept, the filters judge it).
    ``logits_processor``: a transformers-style ``(input_ids, scores) -> scores`` hook applied
    before temperature and top-p, as ``generate`` applies one (constrained decoding,
    :mod:`personalir.queries.constrained`).
    """
    return sample_prompts(model, tokenizer, [prompt], n, settings, [generator], logits_processor)[0]


def sample_prompts(
    model,
    tokenizer,
    prompts: Sequence[str],
    n: int,
    settings: SamplingSettings,
    generators: Sequence,
    logits_processor=None,
) -> list[list[dict]]:
    """``n`` continuations of each prompt, all decoded in one batch.

    The prompts are left-padded and run once; each prompt's key/value cache is repeated for
    its ``n`` rows (rows ``k*n .. k*n+n-1`` belong to prompt ``k``), and positions follow each
    prompt's own length, so padding changes nothing but the batch. Prompt ``k``'s tokens are
    drawn from ``generators[k]`` alone: a product's candidates depend on its own seed, not on
    which products share its batch (up to floating-point rounding of the batched matrix
    products). ``logits_processor`` sees the whole batch (``input_ids`` = the padded prompts
    followed by the tokens written so far). Returns, per prompt, the list
    :func:`sample_shared_prompt` returns.
    """
    import torch

    if len(generators) != len(prompts):
        raise ValueError(f"{len(generators)} generators for {len(prompts)} prompts")
    dev = model.device
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    width = max(len(e) for e in encoded)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for k, e in enumerate(encoded):
        ids[k, width - len(e) :] = torch.tensor(e)
        mask[k, width - len(e) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    ends = torch.tensor(sorted(end_token_ids(tokenizer)), device=dev)
    rows = len(prompts) * n
    with torch.no_grad():
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        cache = out.past_key_values
        cache.batch_repeat_interleave(n)
        logits = out.logits[:, -1, :].float().repeat_interleave(n, dim=0)
        prompt_ids = ids.repeat_interleave(n, dim=0)
        attn = mask.repeat_interleave(n, dim=0)
        position = positions[:, -1].repeat_interleave(n, dim=0)
        tokens = torch.zeros((rows, 0), dtype=torch.long, device=dev)
        done = torch.zeros(rows, dtype=torch.bool, device=dev)
        length = torch.zeros(rows, dtype=torch.long, device=dev)
        for _ in range(settings.max_new_tokens):
            if logits_processor is not None:
                logits = logits_processor(torch.cat([prompt_ids, tokens], dim=1), logits)
            scaled = logits / max(settings.temperature, 1e-6)
            probs = torch.softmax(_top_p_filter(scaled, settings.top_p), dim=-1)
            nxt = torch.cat(
                [
                    torch.multinomial(probs[k * n : (k + 1) * n], 1, generator=g)
                    for k, g in enumerate(generators)
                ]
            ).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, int(ends[0])), nxt)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            length += (~done).long()
            done |= torch.isin(nxt, ends)
            if bool(done.all()):
                break
            attn = torch.cat([attn, attn.new_ones((rows, 1))], dim=1)
            position = position + 1
            out = model(
                input_ids=nxt[:, None],
                past_key_values=cache,
                attention_mask=attn,
                position_ids=position[:, None],
                use_cache=True,
            )
            cache = out.past_key_values
            logits = out.logits[:, -1, :].float()
    end_set = set(ends.tolist())
    results: list[list[dict]] = [[] for _ in prompts]
    flat = zip(tokens.cpu().tolist(), length.cpu().tolist(), done.cpu().tolist(), strict=True)
    for i, (row, n_tok, fin) in enumerate(flat):
        kept = [t for t in row[:n_tok] if t not in end_set]
        text = tokenizer.decode(kept, skip_special_tokens=True)
        results[i // n].append(
            {"text": text.strip(), "n_tokens": int(n_tok), "finished": bool(fin)}
        )
    return results


# ---------------------------------------------------------------------------- perplexity
def perplexities(
    model, tokenizer, texts: Sequence[str], *, prefix: str = "", batch_size: int = 32
) -> list[float]:
    """Per-text perplexity ``exp(mean NLL)`` over the text's own tokens, each text read after
    ``prefix`` (e.g. the chat template's opening of a user turn, so a query is scored as what a
    user would type). Texts are batched by length; padding is on the right and masked."""
    import torch

    pre = tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    if not pre:
        start = tokenizer.bos_token_id
        if start is None:
            start = tokenizer.eos_token_id
        pre = [start] if start is not None else []
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (len(encoded[i]), i))
    out = [math.inf] * len(texts)
    pad = tokenizer.pad_token_id
    n_pre = len(pre)
    with torch.no_grad():
        for b in range(0, len(order), batch_size):
            rows = [i for i in order[b : b + batch_size] if encoded[i]]
            if not rows:
                continue
            width = n_pre + max(len(encoded[i]) for i in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for j, i in enumerate(rows):
                seq = pre + encoded[i]
                ids[j, : len(seq)] = torch.tensor(seq)
                mask[j, : len(seq)] = 1
            ids, mask = ids.to(model.device), mask.to(model.device)
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            nll = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), ids[:, 1:], reduction="none"
            )
            scored = mask[:, 1:].clone().float()
            scored[:, : max(n_pre - 1, 0)] = 0.0  # the prefix itself is not scored
            mean = (nll * scored).sum(1) / scored.sum(1).clamp(min=1)
            for j, i in enumerate(rows):
                out[i] = float(torch.exp(mean[j].cpu()))
    return out
