"""LLM rerankers over a first stage's top candidates (PQB: BM25's top 15).

``llm_yesno`` (the Qwen3-Reranker formulation): the prompt

    <|im_start|>system\\nJudge whether the Document meets the requirements based on the Query
    and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>
    \\n<|im_start|>user\\n<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {doc}
    <|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n

and the score ``logit(yes) - logit(no)`` of the next token (the log-odds of Qwen3-Reranker's
``P(yes) = softmax([no, yes])[1]``, same order). Paper scale: ``Qwen/Qwen3-Reranker-8B``.

``llm_prompt`` (a general instruction-tuned LLM prompted to grade relevance, as in
"fine-grained relevance labels", Zhuang et al. 2024): the model's chat template with a
system and a user message asking for a grade 0-3; the score is the expected grade
``sum_g g * p(g)`` with p the next-token distribution renormalised over the grade tokens.
Paper scale: ``meta-llama/Llama-3.1-8B-Instruct``.

Both take the packaged SmolLM2-135M-Instruct by default (its ChatML tokens match the Qwen
template). The top ``top_k`` documents of the first-stage run are reordered by the LLM score
(ties keep the first-stage order); positions after ``top_k`` keep the first-stage order, so
the run still reaches the depth. Written scores stay strictly decreasing: the tail continues
below the lowest LLM score in unit steps.

Cost control (CPU): documents are cut to ``max_doc_tokens``; the prompt part shared by all
candidates of a query (system prompt, instruction, query) is encoded once and its key/value
cache reused for every candidate (``prefix_cache``); ``max_pairs_per_kind`` evaluates a seeded
sample of pairs per kind and domain (the same sample for every reranker), all if null.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

from personalir.common.causal_lm import load_causal_lm
from personalir.common.models import resolve_model
from personalir.common.seeding import rng
from personalir.retrieval.base import (
    RETRIEVERS,
    QueryText,
    Ranking,
    Retriever,
    RetrieverConfigError,
    chunks,
)
from personalir.retrieval.corpus import Corpus
from personalir.retrieval.torchutil import resolve_dtype, setup_torch

QWEN3_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_INSTRUCTION = "Given a shopping query, judge whether the product matches the query"

GRADE_SYSTEM = "You are a search quality rater for an online shop."
GRADE_QUESTION = (
    "How well does the product match the query? Answer with one number: 0 = not relevant, "
    "1 = somewhat relevant, 2 = relevant, 3 = a perfect match."
)
_DOC = "\x00DOCUMENT\x00"


def select_pairs(
    queries: Sequence[QueryText], max_pairs_per_kind: int | None, seed: int
) -> list[QueryText]:
    """All queries, or those of a seeded sample of pairs per (domain, kind)."""
    if not max_pairs_per_kind:
        return list(queries)
    groups: dict[tuple[str, str], list[str]] = {}
    for q in queries:
        ids = groups.setdefault((q.domain, q.kind), [])
        if q.pair_id not in ids:
            ids.append(q.pair_id)
    keep: set[str] = set()
    for (domain, kind), pair_ids in sorted(groups.items()):
        pair_ids = sorted(pair_ids)
        if len(pair_ids) <= max_pairs_per_kind:
            keep.update(pair_ids)
            continue
        pick = rng(seed, "retrieval", "rerank_sample", domain, kind).choice(
            len(pair_ids), size=max_pairs_per_kind, replace=False
        )
        keep.update(pair_ids[i] for i in sorted(pick))
    return [q for q in queries if q.pair_id in keep]


class CausalLMScorer:
    """Next-token logits of selected tokens after ``prefix + continuation`` prompts."""

    def __init__(self, model: str, settings, *, dtype: str | None):
        torch = setup_torch(settings)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        ref = resolve_model(model, allow_download=settings.allow_download)
        self.device = settings.torch_device()
        if ref.gguf_file:
            # Dequantised to float32, or read from the shared dequantised copy.
            self.model, self.tokenizer = load_causal_lm(
                ref, device=self.device, cache_dir=settings.model_cache
            )
        else:
            # ref.path is a local folder (resolve_model), not a hub id.
            self.tokenizer = AutoTokenizer.from_pretrained(ref.path)  # nosec B615
            lm = AutoModelForCausalLM.from_pretrained(  # nosec B615
                ref.path, dtype=resolve_dtype(dtype, self.device)
            )
            self.model = lm.eval().to(self.device)
        self.torch = torch
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id or 0

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def single_token(self, word: str) -> int:
        ids = self.encode(word)
        if len(ids) != 1:
            raise RetrieverConfigError(
                f"the answer {word!r} is {len(ids)} tokens for this tokenizer; "
                "the reranker needs it to be one token"
            )
        return ids[0]

    def _logits(
        self, prefix: list[int], conts: list[list[int]], token_ids: list[int], use_cache: bool
    ) -> np.ndarray:
        torch = self.torch
        n = len(conts)
        width = max(len(c) for c in conts)
        p = len(prefix)
        # Continuations are left-padded, so every row ends at the last position; padding
        # sits between prefix and continuation, masked, with positions that skip it.
        ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, c in enumerate(conts):
            ids[i, width - len(c) :] = torch.tensor(c, dtype=torch.long)
            mask[i, width - len(c) :] = 1
        pos = (p + (mask.cumsum(dim=1) - 1)).clamp(min=p)
        if use_cache:
            cache = copy.deepcopy(self._prefix_cache)
            cache.batch_repeat_interleave(n)
            out = self.model(
                input_ids=ids.to(self.device),
                attention_mask=torch.cat([torch.ones((n, p), dtype=torch.long), mask], 1).to(
                    self.device
                ),
                position_ids=pos.to(self.device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        else:
            full = torch.cat([torch.tensor(prefix, dtype=torch.long).expand(n, p), ids], 1)
            full_mask = torch.cat([torch.ones((n, p), dtype=torch.long), mask], 1)
            full_pos = torch.cat([torch.arange(p).expand(n, p), pos], 1)
            out = self.model(
                input_ids=full.to(self.device),
                attention_mask=full_mask.to(self.device),
                position_ids=full_pos.to(self.device),
                logits_to_keep=1,
            )
        return out.logits[:, -1, token_ids].float().cpu().numpy()

    def logits(
        self,
        prefix: list[int],
        conts: list[list[int]],
        token_ids: list[int],
        *,
        batch_size: int,
        prefix_cache: bool,
    ) -> np.ndarray:
        """(continuations x tokens) next-token logits after ``prefix + continuation``."""
        torch = self.torch
        with torch.inference_mode():
            if prefix_cache:
                out = self.model(
                    input_ids=torch.tensor([prefix], dtype=torch.long, device=self.device),
                    use_cache=True,
                )
                self._prefix_cache = out.past_key_values
            blocks = [
                self._logits(prefix, conts[sl], token_ids, prefix_cache)
                for sl in chunks(len(conts), batch_size)
            ]
        return np.concatenate(blocks, axis=0)


class LLMReranker(Retriever):
    family = "llm_reranker"
    needs_first_stage = True
    default_model = "packaged:SmolLM2-135M-Instruct"
    default_params = {
        "first_stage": "bm25",
        "top_k": 15,
        "max_doc_tokens": 128,
        "max_pairs_per_kind": None,
        "batch_size": 16,
        "prefix_cache": True,
        "dtype": "auto",
    }

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.texts = dict(zip(corpus.doc_ids, corpus.texts, strict=True))
        if getattr(self, "scorer", None) is None:  # loaded once, reused for every domain
            self.scorer = CausalLMScorer(self.model, self.settings, dtype=self.params["dtype"])
            self.prepare()

    def prepare(self) -> None:
        """Resolve the answer tokens (subclasses)."""

    def set_first_stage(self, run: Mapping[str, Sequence[str]]) -> None:
        self.first_stage = run

    def select_queries(self, queries: Sequence[QueryText]) -> list[QueryText]:
        return select_pairs(queries, self.params["max_pairs_per_kind"], self.settings.seed)

    def doc_tokens(self, doc_id: str) -> list[int]:
        ids = self.scorer.encode(" " + self.texts[doc_id])
        limit = self.params["max_doc_tokens"]
        return ids[:limit] if limit else ids

    def prompt(self, query: str) -> tuple[list[int], str]:  # pragma: no cover - interface
        """Token ids of the shared prefix, and the text that follows each document."""
        raise NotImplementedError

    def continuation(self, doc_id: str, suffix: list[int]) -> list[int]:
        return self.doc_tokens(doc_id) + suffix

    def score(self, logits: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def scores(self, query: str, doc_ids: Sequence[str]) -> np.ndarray:
        prefix, suffix_text = self.prompt(query)
        suffix = self.scorer.encode(suffix_text)
        conts = [self.continuation(d, suffix) for d in doc_ids]
        logits = self.scorer.logits(
            prefix,
            conts,
            self.answer_ids,
            batch_size=int(self.params["batch_size"]),
            prefix_cache=bool(self.params["prefix_cache"]),
        )
        return self.score(logits)

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        if not hasattr(self, "first_stage"):
            raise RetrieverConfigError(f"{type(self).__name__} needs a first-stage run")
        out: Ranking = {}
        k = int(self.params["top_k"])
        for q in queries:
            first = list(self.first_stage.get(q.query_id, []))[:depth]
            head, tail = first[:k], first[k:]
            if not head:
                out[q.query_id] = []
                continue
            s = self.scores(q.text, head)
            order = np.lexsort((np.arange(len(head)), -s))
            ranked = [(head[i], float(s[i])) for i in order]
            floor = float(s.min())
            ranked += [(d, floor - (j + 1)) for j, d in enumerate(tail)]
            out[q.query_id] = ranked
        return out


@RETRIEVERS.register("llm_yesno")
class YesNoReranker(LLMReranker):
    default_params = {**LLMReranker.default_params, "instruction": DEFAULT_INSTRUCTION}

    def prepare(self) -> None:
        self.answer_ids = [self.scorer.single_token("yes"), self.scorer.single_token("no")]
        self._doc_marker = self.scorer.encode("<Document>:")

    def prompt(self, query: str) -> tuple[list[int], str]:
        text = f"{QWEN3_PREFIX}<Instruct>: {self.params['instruction']}\n<Query>: {query}\n"
        return self.scorer.encode(text), QWEN3_SUFFIX

    def continuation(self, doc_id: str, suffix: list[int]) -> list[int]:
        return self._doc_marker + self.doc_tokens(doc_id) + suffix

    def score(self, logits: np.ndarray) -> np.ndarray:
        return logits[:, 0] - logits[:, 1]


@RETRIEVERS.register("llm_prompt")
class RelevanceGradeReranker(LLMReranker):
    default_params = {
        **LLMReranker.default_params,
        "system": GRADE_SYSTEM,
        "question": GRADE_QUESTION,
        "grades": ["0", "1", "2", "3"],
    }

    def prepare(self) -> None:
        self.answer_ids = [self.scorer.single_token(g) for g in self.params["grades"]]
        self.values = np.arange(len(self.answer_ids), dtype=np.float64)

    def prompt(self, query: str) -> tuple[list[int], str]:
        user = f"Query: {query}\nProduct:{_DOC}\n\n{self.params['question']}"
        messages = [
            {"role": "system", "content": self.params["system"]},
            {"role": "user", "content": user},
        ]
        tok = self.scorer.tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        else:  # a base model: a plain transcript
            text = f"System: {self.params['system']}\nUser: {user}\nAssistant:"
        before, after = text.split(_DOC)
        return self.scorer.encode(before), after

    def score(self, logits: np.ndarray) -> np.ndarray:
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        return p @ self.values
