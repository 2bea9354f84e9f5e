"""Stand-in PQB queries for tests, smoke runs and throughput benchmarks.

NOT the benchmark construction (that is the query stage, ``results/queries``): these queries
are built from a product's core terms with fixed wordings and one character-level typo, so
the retrieval stage can be exercised before, or independently of, the query stage. Each
chosen product gets one syntactic pair (the same core terms in two users' wordings) and one
writing-error pair (a wording and its copy with a typo in one word).
"""

from __future__ import annotations

from collections.abc import Sequence

from personalir.common.seeding import rng

TEMPLATES = (
    "{0} {1} {2}",
    "looking for a {2} {1} from {0}",
    "need {1} by {0} in {2} that also works with {3}",
    "{0} {1} with {3} {2} please",
)


def _typo(text: str, generator) -> str:
    """Swap two inner letters of one word with at least four letters (the text changes)."""
    words = text.split()
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not candidates:
        return text + text[-1]
    i = candidates[int(generator.integers(len(candidates)))]
    w = words[i]
    for _ in range(10):
        j = int(generator.integers(1, len(w) - 2)) if len(w) > 3 else 1
        swapped = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        if swapped != w:
            words[i] = swapped
            return " ".join(words)
    words[i] = w[:-1] + w[-1] * 2
    return " ".join(words)


def toy_benchmark(
    domain: str,
    product_ids: Sequence[str],
    core_terms: Sequence[Sequence[str]],
    *,
    seed: int,
    n_products: int | None = None,
) -> list[dict]:
    """Benchmark records (see :mod:`personalir.queries.benchmark_format`)."""
    gen = rng(seed, "toy_queries", domain)
    eligible = [(p, list(t)) for p, t in zip(product_ids, core_terms, strict=True) if len(t) >= 4]
    eligible.sort()
    if n_products is not None and n_products < len(eligible):
        pick = sorted(gen.choice(len(eligible), size=n_products, replace=False))
        eligible = [eligible[i] for i in pick]
    records = []
    for asin, terms in eligible:
        a, b = gen.choice(len(TEMPLATES), size=2, replace=False)
        text_a = TEMPLATES[a].format(*terms).lower()
        text_b = TEMPLATES[b].format(*terms).lower()
        base = f"{domain}:{asin}"
        for pair_id, kind, role, user, text in (
            (f"{base}:syn", "syntactic", "a", "u1", text_a),
            (f"{base}:syn", "syntactic", "b", "u2", text_b),
            (f"{base}:err", "writing_error", "clean", "u1", text_a),
            (f"{base}:err", "writing_error", "error", "u1", _typo(text_a, gen)),
        ):
            records.append(
                {
                    "query_id": f"{pair_id}:{role}",
                    "domain": domain,
                    "product": asin,
                    "user_id": f"{asin}-{user}",
                    "pair_id": pair_id,
                    "kind": kind,
                    "role": role,
                    "text": text,
                    "core_terms": terms,
                    "provenance": {"source": "toy_queries", "seed": seed},
                }
            )
    return records


def toy_benchmark_from_products(path: str, domain: str, *, seed: int, n_products=None):
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["parent_asin", "core_terms"])
    return toy_benchmark(
        domain,
        table.column("parent_asin").to_pylist(),
        table.column("core_terms").to_pylist(),
        seed=seed,
        n_products=n_products,
    )
