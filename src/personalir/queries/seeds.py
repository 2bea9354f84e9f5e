"""The seed set: attribute -> query examples that teach the language model the task.

``seed_queries.jsonl`` (shipped with the package) holds about a hundred hand-written examples,
a third per domain: a product type, five ``[key, value]`` attributes (the brand first) and a
query that names every value exactly once, in varied sentence shapes (noun phrases, requests,
questions, imperatives, relative clauses). The products and brands are invented, so no seed
leaks a benchmark product. :func:`load_seeds` checks every example with the same lexical rule
as the candidate filter (:func:`personalir.queries.terms.count_terms`).
"""

from __future__ import annotations

import json
from pathlib import Path

from personalir.queries.terms import count_terms

SEED_PATH = Path(__file__).with_name("seed_queries.jsonl")


class SeedError(ValueError):
    """A seed example is malformed or its query breaks the core-term rule."""


def load_seeds(path: str | Path = SEED_PATH, domains: list[str] | None = None) -> list[dict]:
    """Seed examples (all domains, or those in ``domains``), validated."""
    path = Path(path)
    seeds, ids = [], set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SeedError(f"{where}: invalid JSON: {exc}") from None
        for key in ("id", "domain", "product_type", "attributes", "query"):
            if key not in rec:
                raise SeedError(f"{where}: missing {key!r}")
        if rec["id"] in ids:
            raise SeedError(f"{where}: duplicate id {rec['id']!r}")
        ids.add(rec["id"])
        attrs = rec["attributes"]
        if len(attrs) != 5 or not all(isinstance(a, list) and len(a) == 2 for a in attrs):
            raise SeedError(f"{where}: needs five [key, value] attributes")
        values = [v for _, v in attrs]
        counts = count_terms(rec["query"], values)
        wrong = {v: n for v, n in counts.items() if n != 1}
        if wrong:
            raise SeedError(f"{where}: query must name every value once, got {wrong}")
        if domains is None or rec["domain"] in domains:
            seeds.append(rec)
    if not seeds:
        raise SeedError(f"{path}: no seed examples for domains {domains}")
    return seeds
