"""How confusable the sample world's catalogue is: a cheap proxy of the robustness tables.

For every domain it builds the sample world twice, family-free (``family_share: 0``) and with
the configured ``sample.confusability``, derives the product table exactly as the data stage
does (``core_terms``, ``eligible``) and takes the query-target pool as the query stage does
(eligible, five core terms, at least ``queries.min_reviewers`` reviewers; every synthetic user
writes enough sentences to be a selected reviewer). Each pool product's five core terms,
joined, are a BM25 query (the workflow's ``bm25`` retriever: bm25s, Lucene variant, k1 1.5,
b 0.75) over the whole catalogue. Printed per domain and catalogue:

- ``pool``: query-target candidates; ``products`` and ``reviews``: the world's size (cost);
- ``R@1`` / ``R@10`` / ``R@20``: share of pool targets ranked first / in the top 10 / 20,
  over the whole pool and (``R@1 sampled``) over the query stage's seeded sample;
- ``>=4 of 5``: mean number of other products that share at least four of the target's five
  core terms (a term is shared when it is one of their attribute values or a phrase of their
  document), and the share of targets that have at least one such product.

    python benchmarks/bench_confusability.py [--config config/config.yaml] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from personalir.common.config import load_config  # noqa: E402
from personalir.data.products import ProductRules, build_product_table  # noqa: E402
from personalir.data.sample_world import build_world, meta_record  # noqa: E402
from personalir.data.sample_world.confusability import OFF, ConfusabilityParams  # noqa: E402
from personalir.queries.candidates import sample_products  # noqa: E402
from personalir.retrieval.base import QueryText  # noqa: E402
from personalir.retrieval.corpus import corpus_from_texts  # noqa: E402
from personalir.retrieval.lexical import BM25Retriever  # noqa: E402


def _shares(term: str, values: set[str], document: str) -> bool:
    t = term.lower()
    return t in values or re.search(rf"(?<!\w){re.escape(t)}(?!\w)", document) is not None


def measure(config: dict, domain: str, knobs: ConfusabilityParams) -> dict:
    sample, data, queries = config["sample"], config["data"], config["queries"]
    world = build_world(
        domain,
        seed=config["seed"],
        scale=sample["scale"],
        n_products=sample["n_products"],
        n_users=sample["n_users"],
        min_sentences_per_user=sample["min_sentences_per_user"],
        confusability=knobs,
    )
    meta = pa.Table.from_pylist([meta_record(p) for p in world.products])
    rules = ProductRules.from_config(data["products"])
    table, _ = build_product_table(meta, rules)
    products = table.to_pandas()
    reviewers = pd.DataFrame(
        sorted({(r.parent_asin, r.user_id) for r in world.reviews}),
        columns=["parent_asin", "user_id"],
    ).assign(selected_user=True)
    n_terms = data["products"]["n_core_terms"]
    params = {"products_per_domain": None, "min_reviewers": queries["min_reviewers"]}
    pool, _ = sample_products(products, reviewers, params, config["seed"], domain, n_terms)
    params["products_per_domain"] = queries["products_per_domain"]
    sampled, _ = sample_products(products, reviewers, params, config["seed"], domain, n_terms)

    by_asin = products.set_index("parent_asin")
    retriever = BM25Retriever()
    retriever.index(corpus_from_texts(list(products["parent_asin"]), list(products["document"])))
    queries_ = [QueryText(a, " ".join(by_asin.at[a, "core_terms"])) for a in pool]
    ranking = retriever.rank(queries_, depth=20)
    rank = {}
    for a in pool:
        ids = [d for d, _ in ranking[a]]
        rank[a] = ids.index(a) + 1 if a in ids else None

    values = [{v.lower() for v in vs} for vs in products["attribute_values"]]
    docs = [d.lower() for d in products["document"]]
    asins = list(products["parent_asin"])
    confusers = []
    for a in pool:
        terms = list(by_asin.at[a, "core_terms"])
        n = 0
        for i, other in enumerate(asins):
            if other != a and sum(_shares(t, values[i], docs[i]) for t in terms) >= 4:
                n += 1
        confusers.append(n)

    def at(k: int, among) -> float:
        return float(np.mean([rank[a] is not None and rank[a] <= k for a in among]))

    return {
        "domain": domain,
        "family_share": knobs.family_share,
        "products": len(world.products),
        "reviews": len(world.reviews),
        "pool": len(pool),
        "R@1": at(1, pool),
        "R@10": at(10, pool),
        "R@20": at(20, pool),
        "R@1 sampled": at(1, sampled),
        "confusers>=4": float(np.mean(confusers)),
        "with_confuser": float(np.mean([c > 0 for c in confusers])),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    config = load_config(args.config)
    configured = ConfusabilityParams.from_config(config["sample"]["confusability"])
    catalogues = {"family-free": OFF, "configured": configured}
    rows = [
        {"catalogue": name, **measure(config, domain, knobs)}
        for domain in config["domains"]
        for name, knobs in catalogues.items()
    ]
    cols = ["products", "reviews", "pool", "R@1", "R@10", "R@20", "R@1 sampled"]
    cols += ["confusers>=4", "with_confuser"]
    print(f"{'domain':<20} {'catalogue':<12} " + " ".join(f"{c:>12}" for c in cols))
    for r in rows:
        cells = [f"{r[c]:>12}" if isinstance(r[c], int) else f"{r[c]:>12.3f}" for c in cols]
        print(f"{r['domain']:<20} {r['catalogue']:<12} " + " ".join(cells))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
