"""Teacher rewrites for SFT: K candidates per example, scored by rewrite gain, one target kept.

A teacher turns (query, selected history) into ``k`` candidate rewrites. Registered in
:data:`TEACHERS`:

``history_attributes``  (the embedded default) a deterministic rule-based rewriter: it ranks
                        the values of configured attribute keys (Brand, Color, the domain's
                        style key, ...) among the selected history items by count, then by
                        recency, and appends combinations of the top values to the query
                        ("guitar capo" -> "Northwind guitar capo"). It reads only what a
                        model sees (the history items' attributes), never the target. It is a
                        stand-in for an LLM teacher, named as such in every output.
``openai``              any OpenAI-compatible chat-completions endpoint (vLLM, TGI, ...;
                        the paper used Qwen3-32B), the teacher prompt below, ``n = k`` samples.
``hf_local``            a local Hugging Face causal LM with the same prompt, ``k`` samples.

Target selection (:func:`select_targets`): every candidate's rewrite gain is
``s(rewrite, target) - s(query, target)`` under the relevance model; candidates with
non-positive gain are dropped, and one target is drawn uniformly from the top 3 by gain.
Examples with no positive candidate can serve as *neutral* samples (target = the query
itself) so that the model also learns when not to rewrite: ``neutral_share`` of the final
set at most, drawn at random from them; the rest are dropped and counted.

:func:`run_teacher` is the rule ``ttp_teacher``: the candidates, the targets and a report with
the teacher's honest quality (:func:`teacher_quality`) and the step's timings.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from personalir.common.causal_lm import load_causal_lm
from personalir.common.device import ttp_device
from personalir.common.io import write_json, write_jsonl
from personalir.common.models import resolve_model
from personalir.common.registry import Registry
from personalir.common.seeding import derive_seed
from personalir.common.urls import check_key_transport
from personalir.ttp.inputs.data import Example, Item, ItemCorpus, item_fields, read_examples
from personalir.ttp.inputs.relevance import RelevanceModel, build_relevance

TEACHER_SYSTEM = "You are a shopping search assistant who personalises product searches."
TEACHER_PROMPT = (
    'A user searched an online store for: "{query}".\n'
    "Products the user bought before (oldest first):\n{history}\n"
    "Think about which brand, colour, style or other attributes this user most likely wants, "
    "then rewrite the search query so that a product search engine returns the product this "
    "user will buy. Keep the user's intent; add only what the history supports. Answer with "
    "the rewritten query only, on one line."
)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S)
_PREFIX = re.compile(r"^(rewritten query|rewrite|query|answer)\s*[:\-]\s*", re.I)


@dataclass(frozen=True)
class TeacherRequest:
    query: str
    history: tuple[Item, ...]  # the selected history, chronological


def teacher_messages(req: TeacherRequest, item_fields: Sequence[str]) -> list[dict]:
    lines = "\n".join(f"{i}. {it.text(item_fields)}" for i, it in enumerate(req.history, 1))
    return [
        {"role": "system", "content": TEACHER_SYSTEM},
        {"role": "user", "content": TEACHER_PROMPT.format(query=req.query, history=lines or "-")},
    ]


def parse_rewrite(text: str) -> str:
    """The rewrite in a teacher's answer: thinking removed, first line, prefixes stripped."""
    text = _THINK_BLOCK.sub("", text or "")
    if "</think>" in text:  # an unclosed thinking block: keep what follows it
        text = text.split("</think>")[-1]
    for line in text.splitlines():
        line = _PREFIX.sub("", line.strip()).strip().strip("\"'` ").strip()
        if line:
            return re.sub(r"\s+", " ", line)
    return ""


class Teacher:
    name = "teacher"

    def candidates(self, requests: Sequence[TeacherRequest], k: int) -> list[list[str]]:
        raise NotImplementedError


TEACHERS: Registry[type[Teacher]] = Registry("TTP teacher")


@TEACHERS.register("history_attributes")
class HistoryAttributeTeacher(Teacher):
    """Rule-based, history-aware rewriter (see the module docstring)."""

    name = "history_attributes (rule-based, reads history attributes)"

    def __init__(
        self,
        attribute_keys: Sequence[str] = ("Brand", "Color", "Style"),
        style_keys: Sequence[str] = ("Style", "Style Name", "Hardware Platform"),
        **_: object,
    ):
        self.attribute_keys = tuple(attribute_keys)
        self.style_keys = tuple(style_keys)

    def ranked_values(self, history: Sequence[Item], key: str, query: str = "") -> list[str]:
        """Values of ``key`` among the history items, best first.

        An item counts ``1 + 2 * (share of the query's words in its title)``, so items about
        the same kind of product as the query weigh most (as a reader of the history would
        weigh them); ties go to the more recent value, then alphabetical order."""
        keys = self.style_keys if key == "Style" else (key,)
        words = set(re.findall(r"[a-z0-9]+", query.lower()))
        score: Counter = Counter()
        last: dict[str, int] = {}
        for pos, item in enumerate(history):
            title = set(re.findall(r"[a-z0-9]+", item.title.lower()))
            weight = 1.0 + (2.0 * len(words & title) / len(words) if words else 0.0)
            for k in keys:
                value = item.attribute(k)
                if value:
                    score[value] += weight
                    last[value] = pos
                    break
        return sorted(score, key=lambda v: (-score[v], -last[v], v))

    def candidates(self, requests: Sequence[TeacherRequest], k: int) -> list[list[str]]:
        out = []
        for req in requests:
            top = {
                key: self.ranked_values(req.history, key, req.query) for key in self.attribute_keys
            }

            def first(key: str, rank: int = 0, top=top) -> str | None:
                values = top.get(key) or []
                return values[rank] if len(values) > rank else None

            # (key, rank) combinations, most plausible first; brands lead the query.
            combos = [
                (("Brand", 0),),
                (("Brand", 0), ("Color", 0)),
                (("Brand", 0), ("Style", 0)),
                (("Color", 0),),
                (("Style", 0),),
                (("Brand", 1),),
                (("Brand", 0), ("Color", 0), ("Style", 0)),
            ]
            seen, cands = {req.query.lower()}, []
            for combo in combos:
                values = [(key, first(key, rank)) for key, rank in combo]
                if any(v is None or v.lower() in req.query.lower() for _, v in values):
                    continue
                lead = [v for key, v in values if key == "Brand"]
                rest = [v for key, v in values if key != "Brand"]
                text = " ".join([*lead, req.query, *rest])
                if text.lower() not in seen:
                    seen.add(text.lower())
                    cands.append(text)
                if len(cands) == k:
                    break
            out.append(cands)
        return out


@TEACHERS.register("openai")
class OpenAICompatibleTeacher(Teacher):
    """Chat completions from an OpenAI-compatible HTTP endpoint (``n = k`` samples)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_tokens: int = 256,
        timeout_s: float = 120.0,
        retries: int = 3,
        item_fields: Sequence[str] = ("title", "main_category"),
        **_: object,
    ):
        import os

        self.url = base_url.rstrip("/") + "/chat/completions"
        if urllib.parse.urlsplit(self.url).scheme.lower() not in ("http", "https"):
            raise ValueError(f"teacher base_url must be an http(s) URL, got {base_url!r}")
        self.model = model
        self.name = f"openai:{model}"
        self.api_key = os.environ.get(api_key_env, "") if api_key_env else ""
        if self.api_key:
            check_key_transport(self.url, "ttp.teacher.base_url")
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.timeout_s, self.retries = timeout_s, retries
        self.item_fields = tuple(item_fields)

    def _post(self, payload: dict) -> dict:
        data = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        delay = 1.0
        for attempt in range(self.retries + 1):
            try:
                req = urllib.request.Request(self.url, data=data, headers=headers)
                # The scheme is http(s): checked in __init__.
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # nosec B310
                    return json.loads(resp.read().decode())
            except (urllib.error.URLError, TimeoutError) as exc:
                if attempt == self.retries:
                    raise RuntimeError(f"teacher endpoint {self.url} failed: {exc}") from exc
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def candidates(self, requests: Sequence[TeacherRequest], k: int) -> list[list[str]]:
        out = []
        for req in requests:
            body = self._post(
                {
                    "model": self.model,
                    "messages": teacher_messages(req, self.item_fields),
                    "n": k,
                    "temperature": self.temperature,
                    "top_p": self.top_p,
                    "max_tokens": self.max_tokens,
                }
            )
            texts = [parse_rewrite(c["message"]["content"]) for c in body.get("choices", [])]
            out.append(list(dict.fromkeys(t for t in texts if t))[:k])
        return out


@TEACHERS.register("hf_local")
class HFLocalTeacher(Teacher):
    """A local Hugging Face causal LM, sampled ``k`` times per request with the same prompt."""

    def __init__(
        self,
        model: str,
        temperature: float = 0.7,
        top_p: float = 0.95,
        max_new_tokens: int = 32,
        batch_size: int = 8,
        seed: int = 0,
        allow_download: bool = False,
        item_fields: Sequence[str] = ("title", "main_category"),
        device: str = "cpu",
        **_: object,
    ):

        ref = resolve_model(model, allow_download=allow_download)
        self.model, self.tokenizer = load_causal_lm(ref, device=device)
        self.device = device
        self.tokenizer.padding_side = "left"
        self.name = f"hf_local:{model}"
        self.temperature, self.top_p = temperature, top_p
        self.max_new_tokens, self.batch_size, self.seed = max_new_tokens, batch_size, seed
        self.item_fields = tuple(item_fields)

    def candidates(self, requests: Sequence[TeacherRequest], k: int) -> list[list[str]]:
        import torch

        torch.manual_seed(self.seed)
        out = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            prompts = [
                self.tokenizer.apply_chat_template(
                    teacher_messages(r, self.item_fields),
                    tokenize=False,
                    add_generation_prompt=True,
                )
                for r in batch
            ]
            enc = self.tokenizer(
                prompts, return_tensors="pt", padding=True, add_special_tokens=False
            )
            if self.device != "cpu":
                enc = enc.to(self.model.device)
            with torch.no_grad():
                gen = self.model.generate(
                    **enc,
                    do_sample=True,
                    temperature=self.temperature,
                    top_p=self.top_p,
                    max_new_tokens=self.max_new_tokens,
                    num_return_sequences=k,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            texts = self.tokenizer.batch_decode(
                gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
            )
            for i in range(len(batch)):
                cands = [parse_rewrite(t) for t in texts[i * k : (i + 1) * k]]
                out.append(list(dict.fromkeys(c for c in cands if c)))
        return out


def build_teacher(section: dict, seed: int, device: str = "cpu") -> Teacher:
    """The teacher of the config section; a local model (``hf_local``) on ``device``."""
    kind = section["type"]
    kwargs = {k: v for k, v in section.items() if k != "type" and v is not None}
    if kind == "hf_local":
        kwargs.setdefault("seed", seed)
        if device != "cpu":
            kwargs["device"] = device
    return TEACHERS.get(kind)(**kwargs)


def requests_for(examples: Sequence[Example], corpus: ItemCorpus) -> list[TeacherRequest]:
    reqs = []
    for ex in examples:
        if ex.selected_history is None:
            raise ValueError(f"{ex.example_id}: history selection has not been run")
        reqs.append(TeacherRequest(ex.query, tuple(corpus[i] for i in ex.selected_history)))
    return reqs


def select_targets(
    examples: Sequence[Example],
    candidates: Sequence[Sequence[str]],
    corpus: ItemCorpus,
    relevance: RelevanceModel,
    *,
    item_fields: Sequence[str],
    neutral_share: float,
    top: int = 3,
    seed: int,
) -> tuple[list[dict], dict]:
    """SFT records (example + ``rewrite``, ``rewrite_kind``, ``gain``, scored candidates)."""
    queries, texts, owner = [], [], []
    for k, (ex, cands) in enumerate(zip(examples, candidates, strict=True)):
        target_text = corpus[ex.target].text(item_fields)
        for text in [ex.query, *cands]:
            queries.append(text)
            texts.append(target_text)
            owner.append(k)
    scores = relevance.score(queries, texts) if queries else np.zeros(0)
    rewrites, neutral_pool, pos = [], [], 0
    per_label: dict[str, Counter] = {}
    for ex, cands in zip(examples, candidates, strict=True):
        base = float(scores[pos])
        gains = [float(s) - base for s in scores[pos + 1 : pos + 1 + len(cands)]]
        pos += 1 + len(cands)
        scored = [{"text": c, "gain": round(g, 6)} for c, g in zip(cands, gains, strict=True)]
        positive = sorted((i for i, g in enumerate(gains) if g > 0), key=lambda i: (-gains[i], i))[
            :top
        ]
        stats = per_label.setdefault(ex.label, Counter())
        stats["examples"] += 1
        rec = ex.to_record()
        rec["candidates"] = scored
        rec["query_score"] = round(base, 6)
        if positive:
            rng = np.random.default_rng(derive_seed(seed, "teacher_target", ex.example_id))
            chosen = positive[int(rng.integers(len(positive)))]
            rec.update(rewrite=cands[chosen], rewrite_kind="rewrite", gain=gains[chosen])
            rewrites.append(rec)
            stats["positive"] += 1
        else:
            rec.update(rewrite=ex.query, rewrite_kind="neutral", gain=0.0)
            neutral_pool.append(rec)
    n_neutral = 0
    if neutral_share > 0 and neutral_pool:
        wanted = int(round(neutral_share * len(rewrites) / max(1e-9, 1.0 - neutral_share)))
        n_neutral = min(len(neutral_pool), wanted)
    rng = np.random.default_rng(derive_seed(seed, "teacher_neutral"))
    picked = sorted(rng.choice(len(neutral_pool), size=n_neutral, replace=False).tolist())
    neutrals = [neutral_pool[i] for i in picked]
    records = sorted(rewrites + neutrals, key=lambda r: r["example_id"])
    gains = np.array([r["gain"] for r in rewrites]) if rewrites else np.zeros(0)
    report = {
        "examples": len(examples),
        "with_positive_candidate": len(rewrites),
        "positive_rate": len(rewrites) / len(examples) if examples else float("nan"),
        "neutral_kept": n_neutral,
        "dropped": len(neutral_pool) - n_neutral,
        "sft_records": len(records),
        "mean_candidates": float(np.mean([len(c) for c in candidates])) if candidates else 0.0,
        "mean_selected_gain": float(gains.mean()) if gains.size else float("nan"),
        "median_selected_gain": float(np.median(gains)) if gains.size else float("nan"),
        "per_label": {
            lab: {"examples": c["examples"], "positive": c["positive"]}
            for lab, c in sorted(per_label.items())
        },
    }
    return records, report


def teacher_quality(
    examples: Sequence[Example],
    candidates: Sequence[Sequence[str]],
    corpus: ItemCorpus,
    relevance,
    fields: Sequence[str],
    k: int = 10,
) -> dict:
    """Recall@k under the relevance model of the raw query vs the teacher's first candidate
    (chosen without seeing the target), per label: the teacher's honest quality."""
    if not hasattr(relevance, "embed"):
        return {"note": "needs a dense relevance model"}
    ids = corpus.ids
    items = relevance.embed(corpus.texts(fields))
    pos = {i: n for n, i in enumerate(ids)}
    first = [c[0] if c else ex.query for ex, c in zip(examples, candidates, strict=True)]
    out: dict[str, dict] = {}
    for name, texts in (("query", [ex.query for ex in examples]), ("teacher_first", first)):
        sims = relevance.embed(list(texts)) @ items.T
        hits: dict[str, list[int]] = {}
        for row, ex in zip(sims, examples, strict=True):
            top = np.argsort(-row, kind="stable")[:k]
            hits.setdefault(ex.label, []).append(int(pos[ex.target] in top))
            hits.setdefault("All", []).append(int(pos[ex.target] in top))
        out[name] = {lab: round(float(np.mean(v)), 4) for lab, v in sorted(hits.items())}
    return {f"recall@{k}": out, "examples": len(examples)}


def run_teacher(
    *,
    examples_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    seed: int,
    sft_out: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:
    t0 = time.perf_counter()
    corpus = ItemCorpus.read(items_path)
    train = [e for e in read_examples(examples_path) if e.split == "train"]
    tcfg = dict(ttp["teacher"])
    settings = {k: tcfg.pop(k) for k in ("k", "top", "neutral_share")}
    teacher = build_teacher({**tcfg, "item_fields": list(item_fields(ttp))}, seed, ttp_device(ttp))
    candidates = teacher.candidates(requests_for(train, corpus), int(settings["k"]))
    t1 = time.perf_counter()
    relevance = build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp))
    records, report = select_targets(
        train,
        candidates,
        corpus,
        relevance,
        item_fields=item_fields(ttp),
        neutral_share=float(settings["neutral_share"]),
        top=int(settings["top"]),
        seed=seed,
    )
    t2 = time.perf_counter()
    report["teacher"] = teacher.name
    report["relevance_model"] = relevance.name
    report["quality"] = teacher_quality(train, candidates, corpus, relevance, item_fields(ttp))
    report["seconds"] = {"candidates": round(t1 - t0, 3), "gains": round(t2 - t1, 3)}
    write_jsonl(sft_out, records)
    write_json(report_out, report)
    log(json.dumps(report))
    return report
