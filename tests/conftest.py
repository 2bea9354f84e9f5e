"""Shared fixtures.

``small_world``: one domain of the synthetic sample world, small, run through the data stage
in-process (generator -> ingest -> product documents -> user sentences). Session-scoped so
every stage's tests can build on it cheaply.
"""

from __future__ import annotations

import os
from pathlib import Path

from personalir.common.numerics import pin_cpu_isa

# Before torch, MKL or OpenBLAS load: the CPU kernels the workflow's jobs use (Snakefile).
pin_cpu_isa()

import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SMALL_WORLD = {
    "domain": "Musical_Instruments",
    "seed": 7,
    "n_products": 80,
    "n_users": 40,
    "min_sentences_per_user": 50,
}


@pytest.fixture(scope="session")
def small_world(tmp_path_factory) -> dict[str, Path]:
    from personalir.common.config import validate_config
    from personalir.common.io import write_parquet
    from personalir.data.ingest import ingest_meta, ingest_reviews
    from personalir.data.products import ProductRules, build_product_table
    from personalir.data.sample_world import generate_domain
    from personalir.data.sentences import SentenceRules, build_user_sentences

    cfg = validate_config({})["data"]
    root = tmp_path_factory.mktemp("small_world")
    domain = SMALL_WORLD["domain"]
    raw = root / "raw"
    generate_domain(
        raw,
        domain,
        seed=SMALL_WORLD["seed"],
        n_products=SMALL_WORLD["n_products"],
        n_users=SMALL_WORLD["n_users"],
        min_sentences_per_user=SMALL_WORLD["min_sentences_per_user"],
    )
    data = root / "data"
    paths = {
        "domain": domain,
        "raw_reviews": raw / f"{domain}.jsonl",
        "raw_meta": raw / f"meta_{domain}.jsonl",
        "truth": raw / "planted_truth.json",
        "reviews": data / "reviews.parquet",
        "meta": data / "meta.parquet",
        "products": data / "products.parquet",
        "sentences": data / "user_sentences.parquet",
        "users": data / "users.parquet",
        "reviewers": data / "product_reviewers.parquet",
    }
    ingest_reviews(paths["raw_reviews"], paths["reviews"], policy="strict")
    ingest_meta(paths["raw_meta"], paths["meta"], policy="strict")
    products, _ = build_product_table(
        pq.read_table(paths["meta"]), ProductRules.from_config(cfg["products"])
    )
    write_parquet(paths["products"], products)
    out = build_user_sentences(
        pq.read_table(paths["reviews"]), SentenceRules.from_config(cfg["sentences"])
    )
    for name in ("sentences", "users", "reviewers"):
        write_parquet(paths[name], out[name])
    return paths
