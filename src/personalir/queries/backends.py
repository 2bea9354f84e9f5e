"""Candidate-generation backends: one interface, registered by name (config ``queries.backends``).

``lm``       the instruction model fine-tuned with LoRA on the seed set (:mod:`.lm`), sampled
             with the paper's settings (temperature, top-p, short outputs), optionally under
             the core-value constraint (``constrained``, :mod:`.constrained`); rounds of
             ``candidates_per_round`` per product are drawn until ``min_valid`` candidates pass
             the lexical check or ``max_rounds`` is reached ("regenerate until enough
             survive"); ``products_per_batch`` products are decoded in one batch;
             ``products`` (null: all) limits which sampled products get LM candidates.
``grammar``  the construction grammar (:mod:`.grammar`): the core terms in many sentence
             shapes, for syntactic diversity the small model cannot afford on CPU.

Every candidate is a dict ``{product, backend, round, text, detail}``; ``detail`` says how it
was made (LM: tokens, whether it ended by itself; grammar: template and attribute order).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from personalir.common.registry import Registry
from personalir.common.seeding import derive_seed, rng
from personalir.queries.filters import ProductInfo
from personalir.queries.grammar import grammar_candidates
from personalir.queries.lm import SamplingSettings, chat_prompt, sample_prompts
from personalir.queries.terms import count_terms

BACKENDS: Registry[type[CandidateBackend]] = Registry("candidate backend")
log = logging.getLogger("personalir.queries")


class CandidateBackend:
    name = "backend"

    def __init__(self, settings: dict, *, seed: int, domain: str, **resources):
        self.settings = settings
        self.seed = seed
        self.domain = domain
        self.resources = resources
        self.stats: dict = {}

    def generate(self, products: Sequence[ProductInfo]) -> list[dict]:
        raise NotImplementedError


@BACKENDS.register("grammar")
class GrammarBackend(CandidateBackend):
    name = "grammar"

    def generate(self, products):

        t0 = time.perf_counter()
        out = []
        n = self.settings["candidates_per_product"]
        for info in products:
            keys = [k for k, _ in info.core_attributes]
            gen = rng(self.seed, "queries", "grammar", self.domain, info.asin)
            for c in grammar_candidates(keys, info.core_terms, info.head, n, gen):
                out.append({"product": info.asin, "backend": self.name, "round": 1, **c})
        self.stats = {"seconds": round(time.perf_counter() - t0, 3), "products": len(products)}
        return out


@BACKENDS.register("lm")
class LanguageModelBackend(CandidateBackend):
    """Needs ``model`` and ``tokenizer`` (with the LoRA adapter loaded) in ``resources``; with
    ``constrained`` also ``vocabulary`` (the domain's :class:`.terms.AttributeVocabulary`) and
    ``contradiction_keys`` (the contradiction filter's ``keys``)."""

    name = "lm"

    def generate(self, products):
        import torch

        s = self.settings
        model, tok = self.resources["model"], self.resources["tokenizer"]
        sampling = SamplingSettings(s["temperature"], s["top_p"], s["max_new_tokens"])
        chosen = list(products)
        if s["products"] is not None and s["products"] < len(chosen):
            pick = rng(self.seed, "queries", "lm-products", self.domain).choice(
                len(chosen), size=s["products"], replace=False
            )
            chosen = [chosen[i] for i in sorted(pick)]
        constrain = self._constraint_builder(tok) if s.get("constrained") else None
        prompts = {i.asin: chat_prompt(tok, i.head, i.core_attributes) for i in chosen}
        specs = {i.asin: constrain(i) for i in chosen} if constrain else {}
        made: dict[str, list[dict]] = {i.asin: [] for i in chosen}
        n_ok = dict.fromkeys(made, 0)
        rounds_used = dict.fromkeys(made, 0)
        tokens, seconds, automata = 0, 0.0, []
        per_batch = max(int(s.get("products_per_batch") or 1), 1)
        n = s["candidates_per_round"]
        for rnd in range(1, s["max_rounds"] + 1):
            todo = [
                i
                for i in chosen
                if rnd == 1 or s["min_valid"] is None or n_ok[i.asin] < s["min_valid"]
            ]
            for b in range(0, len(todo), per_batch):
                group = todo[b : b + per_batch]
                gens = [
                    torch.Generator(device=model.device).manual_seed(
                        derive_seed(self.seed, "queries", "lm", self.domain, i.asin, rnd) % 2**63
                    )
                    for i in group
                ]
                t0 = time.perf_counter()
                texts = [prompts[i.asin] for i in group]
                hook = (
                    self._processor([specs[i.asin] for i in group], n, texts, tok)
                    if specs
                    else None
                )
                res = sample_prompts(model, tok, texts, n, sampling, gens, hook)
                seconds += time.perf_counter() - t0
                if hook is not None:
                    automata.append(hook.report())
                for info, rows in zip(group, res, strict=True):
                    rounds_used[info.asin] = rnd
                    for r in rows:
                        tokens += r["n_tokens"]
                        counts = count_terms(r["text"], info.core_terms).values()
                        n_ok[info.asin] += all(
                            c == self.resources.get("frequency", 1) for c in counts
                        )
                        made[info.asin].append(
                            {
                                "product": info.asin,
                                "backend": self.name,
                                "round": rnd,
                                "text": r["text"],
                                "detail": {"n_tokens": r["n_tokens"], "finished": r["finished"]},
                            }
                        )
        for info in chosen:
            log.info(
                "lm %s: %d rounds, %d lexically valid",
                info.asin,
                rounds_used[info.asin],
                n_ok[info.asin],
            )
        out = [c for i in chosen for c in made[i.asin]]  # product by product, round by round
        self.stats = {
            "products": len(chosen),
            "products_per_batch": per_batch,
            "candidates": len(out),
            "generated_tokens": tokens,
            "sampling_seconds": round(seconds, 3),
            "candidates_per_second": round(len(out) / seconds, 3) if seconds else None,
            "tokens_per_second": round(tokens / seconds, 2) if seconds else None,
            "rounds_per_product": [rounds_used[i.asin] for i in chosen],
        }
        if constrain:  # (unconstrained reports keep their keys)
            from personalir.queries.constrained import merge_reports

            self.stats["constrained"] = True
            self.stats["constraint"] = merge_reports(automata)
        return out

    def _constraint_builder(self, tok):
        """``ProductInfo -> ValueConstraint`` over one token table of ``tok``."""
        from personalir.queries.constrained import TokenTable, product_constraint

        if self.resources.get("frequency", 1) != 1:
            raise ValueError(
                "queries.lm.constrained writes each core value once: it needs "
                f"queries.filters.lexical.frequency = 1 (is {self.resources['frequency']})"
            )
        if "vocabulary" not in self.resources:
            raise ValueError("queries.lm.constrained needs the domain's attribute vocabulary")
        t0 = time.perf_counter()
        table = self._table = TokenTable.from_tokenizer(tok)
        seconds = time.perf_counter() - t0
        log.info("constrained decoding: token table of %d in %.1f s", len(table), seconds)
        vocab, keys = self.resources["vocabulary"], self.resources.get("contradiction_keys")
        return lambda info: product_constraint(table, info, vocab, keys)

    def _processor(self, specs, n, prompts, tok):
        """One hook for a batch: prompt ``k``'s constraint on its ``n`` rows; the prompts are
        left-padded to the longest."""
        from personalir.queries.constrained import CoreValueProcessor

        width = max(len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts)
        rows = [spec for spec in specs for _ in range(n)]
        return CoreValueProcessor(
            self._table, rows, self.settings["max_new_tokens"], prompt_length=width
        )
