"""Candidate-generation backends: one interface, registered by name (config ``queries.backends``).

``lm``       the instruction model fine-tuned with LoRA on the seed set (:mod:`.lm`), sampled
             with the paper's settings (temperature, top-p, short outputs), optionally under
             the core-value constraint (``constrained``, :mod:`.constrained`); rounds of
             ``candidates_per_round`` per product are drawn until ``min_valid`` candidates pass
             the lexical check or ``max_rounds`` is reached ("regenerate until enough
             survive"); at sample scale only ``products`` of the sampled products get LM
             candidates (CPU budget, docs/queries.md).
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
        from personalir.queries.grammar import grammar_candidates

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

        from personalir.queries.lm import SamplingSettings, chat_prompt, sample_shared_prompt

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
        out, tokens, seconds, rounds_used, automata = [], 0, 0.0, [], []
        for info in chosen:
            prompt = chat_prompt(tok, info.head, info.core_attributes)
            spec = constrain(info) if constrain else None
            n_ok = 0
            for rnd in range(1, s["max_rounds"] + 1):
                gen = torch.Generator(device=model.device).manual_seed(
                    derive_seed(self.seed, "queries", "lm", self.domain, info.asin, rnd) % 2**63
                )
                t0 = time.perf_counter()
                hook = self._processor(spec, prompt, tok) if spec else None
                res = sample_shared_prompt(
                    model, tok, prompt, s["candidates_per_round"], sampling, gen, hook
                )
                seconds += time.perf_counter() - t0
                if hook is not None:
                    automata.append(hook.report())
                for r in res:
                    tokens += r["n_tokens"]
                    counts = count_terms(r["text"], info.core_terms).values()
                    ok = all(n == self.resources.get("frequency", 1) for n in counts)
                    n_ok += ok
                    out.append(
                        {
                            "product": info.asin,
                            "backend": self.name,
                            "round": rnd,
                            "text": r["text"],
                            "detail": {"n_tokens": r["n_tokens"], "finished": r["finished"]},
                        }
                    )
                if s["min_valid"] is not None and n_ok >= s["min_valid"]:
                    break
            rounds_used.append(rnd)
            log.info("lm %s: %d rounds, %d lexically valid", info.asin, rnd, n_ok)
        self.stats = {
            "products": len(chosen),
            "candidates": len(out),
            "generated_tokens": tokens,
            "sampling_seconds": round(seconds, 3),
            "candidates_per_second": round(len(out) / seconds, 3) if seconds else None,
            "tokens_per_second": round(tokens / seconds, 2) if seconds else None,
            "rounds_per_product": rounds_used,
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

    def _processor(self, spec, prompt, tok):
        from personalir.queries.constrained import CoreValueProcessor

        width = len(tok(prompt, add_special_tokens=False)["input_ids"])
        return CoreValueProcessor(
            self._table, spec, self.settings["max_new_tokens"], prompt_length=width
        )
